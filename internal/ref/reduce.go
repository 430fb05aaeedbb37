package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ReduceOps lists the reduction ops by kernel name.
var ReduceOps = []string{"sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"}

// ReduceForward reduces one slice x (the elements along the axis) to y.
// correction is var's and std's c (divisor N - c, clamped at 0 as
// PyTorch's forward: N - c <= 0 gives inf, or NaN for a zero sum of
// squares); other ops ignore it.
func ReduceForward(op string, x []float64, correction float64) float64 {
	n := float64(len(x))
	switch op {
	case "sum", "mean":
		s := 0.0
		for _, v := range x {
			s += v
		}
		if op == "mean" {
			return s / n
		}
		return s
	case "max", "min":
		if len(x) == 0 {
			return math.NaN()
		}
		y := x[0]
		for _, v := range x {
			switch {
			case math.IsNaN(v):
				return math.NaN()
			case op == "max" && v > y, op == "min" && v < y:
				y = v
			}
		}
		return y
	case "prod":
		p := 1.0
		for _, v := range x {
			p *= v
		}
		return p
	case "norm2":
		s := 0.0
		for _, v := range x {
			s += v * v
		}
		return math.Sqrt(s)
	case "logsumexp":
		// PyTorch's form: the max is replaced by 0 when infinite.
		m := math.Inf(-1)
		for _, v := range x {
			if math.IsNaN(v) {
				return math.NaN()
			}
			m = math.Max(m, v)
		}
		if math.IsInf(m, 0) {
			m = 0
		}
		s := 0.0
		for _, v := range x {
			s += math.Exp(v - m)
		}
		return math.Log(s) + m
	case "var", "std":
		mu := sumAccurate(x) / n
		m2 := 0.0
		for _, v := range x {
			m2 += (v - mu) * (v - mu)
		}
		v := m2 / math.Max(0, n-correction)
		if op == "std" {
			return math.Sqrt(v)
		}
		return v
	}
	panic(fmt.Sprintf("ref: unknown reduce op %q", op))
}

// ReduceBackward writes dx for one slice (len(dx) == len(x)) given the
// upstream gradient g and the saved output y, with the kernel's formulas
// and edge rules (gen/reduce.cuh) in float64.
func ReduceBackward(op string, g float64, x []float64, y, correction float64, dx []float64) {
	n := float64(len(x))
	switch op {
	case "sum":
		for i := range x {
			dx[i] = g
		}
	case "mean":
		inv := 1 / n
		for i := range x {
			dx[i] = g * inv
		}
	case "max", "min":
		count := 0
		for _, v := range x {
			if v == y {
				count++
			}
		}
		p := g / float64(count)
		for i, v := range x {
			mask := 0.0
			if v == y {
				mask = 1
			}
			dx[i] = p * mask
		}
	case "prod":
		zeros, others := 0, 1.0
		for _, v := range x {
			if v == 0 {
				zeros++
			} else {
				others *= v
			}
		}
		for i, v := range x {
			switch {
			case zeros == 0:
				dx[i] = g * (y / v)
			case zeros == 1 && v == 0:
				dx[i] = g * others
			default:
				dx[i] = g * 0
			}
		}
	case "norm2":
		// PyTorch: g * (x/y).masked_fill_(y == 0, 0), so a NaN or
		// infinite g still gives NaN where y == 0.
		for i, v := range x {
			q := 0.0
			if y != 0 {
				q = v / y
			}
			dx[i] = g * q
		}
	case "logsumexp":
		for i, v := range x {
			dx[i] = g * math.Exp(v-y)
		}
	case "var", "std":
		mu := sumAccurate(x) / n
		gs := g
		if op == "std" {
			gs = 0
			if y != 0 {
				gs = g / (y * 2)
			}
		}
		f := (2 / (n - correction)) * gs
		for i, v := range x {
			dx[i] = f * (v - mu)
		}
	default:
		panic(fmt.Sprintf("ref: unknown reduce op %q", op))
	}
}

// sumAccurate is Σx with Neumaier's compensation, so the reference mean is
// correct to about one rounding: the kernels' opmath sums are compared
// against it with a tolerance of their own order only.
func sumAccurate(x []float64) float64 {
	s, c := 0.0, 0.0
	for _, v := range x {
		t := s + v
		if math.Abs(s) >= math.Abs(v) {
			c += (s - t) + v
		} else {
			c += (v - t) + s
		}
		s = t
	}
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	return s + c
}

// ReduceNeedsSaved reports whether the op requires the saved x and y.
func ReduceNeedsSaved(op string) bool { return op != "sum" && op != "mean" }

func init() {
	checks = append(checks,
		Check{"reduce finite differences", checkReduceFD},
		Check{"reduce PyTorch edge cases", checkReduceEdges})
}

// checkReduceFD compares every reduction backward with central differences
// of the forward, element by element, on random slices away from kinks (no
// ties for max/min, no zeros for prod, non-zero norm and std).
func checkReduceFD() error {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, op := range ReduceOps {
		for trial := 0; trial < 200; trial++ {
			n := 1 + rng.IntN(9)
			c := float64(rng.IntN(2))
			if op == "var" || op == "std" {
				n++ // keep N - c > 0
			}
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.Float64()*4 - 2
				if op == "prod" {
					x[i] = math.Copysign(0.5+rng.Float64(), x[i])
				}
			}
			g := rng.Float64()*2 - 1
			y := ReduceForward(op, x, c)
			dx := make([]float64, n)
			ReduceBackward(op, g, x, y, c, dx)
			for i := range x {
				xi := x[i]
				fd := centralDiff(func(v float64) float64 {
					x[i] = v
					r := ReduceForward(op, x, c)
					x[i] = xi
					return r
				}, xi)
				if !closeRel(dx[i], g*fd, 1e-6) {
					return fmt.Errorf("%s(x=%v, c=%v) g=%v: dx[%d] = %v, finite differences %v", op, x, c, g, i, dx[i], g*fd)
				}
			}
		}
	}
	return nil
}

// checkReduceEdges pins the observed PyTorch 2.11 values of the
// reductions (dy = 1, reduced along the last axis) and the structural edge
// rules of docs/semantics.md, section 3.
func checkReduceEdges() error {
	for _, v := range ReduceVectors {
		for r, x := range v.X {
			y := ReduceForward(v.Op, x, v.Correction)
			dx := make([]float64, len(x))
			ReduceBackward(v.Op, 1, x, y, v.Correction, dx)
			for i := range dx {
				if !sameFloat(dx[i], v.DX[r][i]) && !(dx[i] == 0 && v.DX[r][i] == 0) {
					return fmt.Errorf("%s(%v, correction %v) row %d: dx = %v, want %v (PyTorch 2.11)", v.Op, x, v.Correction, r, dx, v.DX[r])
				}
			}
		}
	}
	return nil
}

// ReduceVectors are the pinned PyTorch 2.11 values (dy = 1, each row one
// slice) plus the edge rules of docs/semantics.md 3 they imply.
var ReduceVectors = []struct {
	Op         string
	Correction float64
	X, DX      [][]float64
}{
	{"max", 0, [][]float64{{1, 3, 3, 2}, {1, math.NaN(), 2, 0}},
		[][]float64{{0, 0.5, 0.5, 0}, {math.NaN(), math.NaN(), math.NaN(), math.NaN()}}},
	{"min", 0, [][]float64{{2, 1, 3, 1}, {1, math.NaN(), 2, 0}},
		[][]float64{{0, 0.5, 0, 0.5}, {math.NaN(), math.NaN(), math.NaN(), math.NaN()}}},
	{"prod", 0, [][]float64{{2, 0, 3, 4}, {0, 1, 0, 2}, {1, 2, 3, 4}},
		[][]float64{{0, 24, 0, 0}, {0, 0, 0, 0}, {24, 12, 8, 6}}},
	{"norm2", 0, [][]float64{{0, 0}, {3, 4}}, [][]float64{{0, 0}, {0.6, 0.8}}},
	{"std", 1, [][]float64{{2, 2, 2}, {1, 2, 3}, {5}}, [][]float64{{0, 0, 0}, {-0.5, 0, 0.5}, {math.NaN()}}},
	{"var", 1, [][]float64{{5}}, [][]float64{{math.NaN()}}},
	{"logsumexp", 0, [][]float64{{math.Inf(-1), math.Inf(-1)}, {math.Inf(1), 1}},
		[][]float64{{math.NaN(), math.NaN()}, {math.NaN(), 0}}},
}
