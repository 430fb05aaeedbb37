package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ScanOps lists the scan ops by kernel name.
var ScanOps = []string{"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}

// ScanForward returns y for one slice x: the inclusive scan in scan order,
// from the start of the slice or, with reverse, from its end. cummax and
// cummin propagate NaN; logcumsumexp combines as PyTorch's CUDA kernel,
// max + log1p(exp(min - max)), keeping an infinity met twice.
func ScanForward(op string, x []float64, reverse bool) []float64 {
	y := make([]float64, len(x))
	ScanForwardTo(op, x, reverse, y)
	return y
}

// ScanForwardTo is ScanForward writing y into a slice of the caller's
// (len(y) == len(x); y must not overlap x).
func ScanForwardTo(op string, x []float64, reverse bool, y []float64) {
	n := len(x)
	var acc float64
	for i := 0; i < n; i++ {
		k := scanIndex(i, n, reverse)
		v := x[k]
		if i == 0 {
			acc = v
		} else {
			switch op {
			case "cumsum":
				acc += v
			case "cumprod":
				acc *= v
			case "cummax":
				acc = extCombine(1, acc, v)
			case "cummin":
				acc = extCombine(-1, acc, v)
			case "logcumsumexp":
				acc = logAddExp(acc, v)
			default:
				panic(fmt.Sprintf("ref: unknown scan op %q", op))
			}
		}
		y[k] = acc
	}
}

// scanIndex is the position along the axis of the i-th element in scan order.
func scanIndex(i, n int, reverse bool) int {
	if reverse {
		return n - 1 - i
	}
	return i
}

// extCombine is the running extremum with a sticky NaN (e > 0 max, else min).
func extCombine(e int, m, v float64) float64 {
	switch {
	case math.IsNaN(m):
		return m
	case math.IsNaN(v):
		return v
	case e > 0 && v > m, e < 0 && v < m:
		return v
	}
	return m
}

func logAddExp(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	lo, hi := math.Min(a, b), math.Max(a, b)
	if lo == hi && math.IsInf(lo, 0) {
		return lo
	}
	return hi + math.Log1p(math.Exp(lo-hi))
}

// sz is the strong-zero product: 0 when either factor is 0, even inf or NaN.
func sz(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a * b
}

// ScanBackward returns dx for one slice from dy and the saved x and y (a
// nil slice for a save the op does not read), with exactly the formulas and
// edge rules of gen/scan.cuh in float64. In scan order (k = 0 first; with
// reverse the end of the slice), g = dy:
//
//	S_k = g_k + V_{k+1} (V_n = 0), dx_k = c_k == 0 ? 0 : c_k*S_k, V_k = a_k (.) S_k
//
// with the strong-zero product (.) and per op
//
//	cumsum        a = 1, c = 1
//	cumprod       a = x_k, c = y_{k-1} (1 for k = 0); c = 0 once a zero of
//	              x came before k; c = NaN where x_k is not finite (n > 1)
//	cummax/min    c = 1 where the forward index moves to k (x_k NaN, or the
//	              running extremum is not NaN and x_k >= it, <= for cummin),
//	              else 0; a = 1 - c
//	logcumsumexp  a = exp(y_{k-1} - y_k) (0 for k = 0), c = exp(x_k - y_k);
//	              a NaN g counts as 0
func ScanBackward(op string, dy, x, y []float64, reverse bool) []float64 {
	dx, _ := ScanBackwardMag(op, dy, x, y, reverse)
	return dx
}

// ScanBackwardMag is ScanBackward that also returns, per element, the
// magnitude of the sum it computes: |c_k| * Σ_j |g_j| |a_{k+1}...a_j|, the
// scale of its rounding error (the conformance tolerances grow with it).
func ScanBackwardMag(op string, dy, x, y []float64, reverse bool) (dx, mag []float64) {
	n := len(dy)
	a := make([]float64, n)
	c := make([]float64, n)
	g := make([]float64, n)
	ext := 1
	if op == "cummin" {
		ext = -1
	}
	var f float64 // forward state before the element
	switch op {
	case "cummax":
		f = math.Inf(-1)
	case "cummin":
		f = math.Inf(1)
	}
	for i := 0; i < n; i++ {
		k := scanIndex(i, n, reverse)
		g[i] = dy[k]
		switch op {
		case "cumsum":
			a[i], c[i] = 1, 1
		case "cumprod":
			a[i] = x[k]
			c[i] = 1
			if i > 0 {
				c[i] = y[scanIndex(i-1, n, reverse)]
			}
			if f != 0 {
				c[i] = 0
			} else if n > 1 && c[i] != 0 && (math.IsInf(x[k], 0) || math.IsNaN(x[k])) {
				c[i] = math.NaN()
			}
			if x[k] == 0 {
				f = 1
			}
		case "cummax", "cummin":
			v := x[k]
			t := math.IsNaN(v) || (!math.IsNaN(f) && (ext > 0 && v >= f || ext < 0 && v <= f))
			if t {
				c[i] = 1
			} else {
				a[i] = 1
			}
			f = extCombine(ext, f, v)
		case "logcumsumexp":
			if i > 0 {
				a[i] = math.Exp(y[scanIndex(i-1, n, reverse)] - y[k])
			}
			c[i] = math.Exp(x[k] - y[k])
			if math.IsNaN(g[i]) {
				g[i] = 0
			}
		default:
			panic(fmt.Sprintf("ref: unknown scan op %q", op))
		}
	}
	dx = make([]float64, n)
	mag = make([]float64, n)
	v, vabs := 0.0, 0.0
	for i := n - 1; i >= 0; i-- {
		k := scanIndex(i, n, reverse)
		s := g[i] + v
		sabs := math.Abs(g[i]) + vabs
		if c[i] != 0 {
			dx[k] = c[i] * s
			mag[k] = math.Abs(c[i]) * sabs
		}
		v = sz(a[i], s)
		vabs = sz(math.Abs(a[i]), sabs)
	}
	return dx, mag
}

// ScanSaved reports which forward tensors the op's backward reads.
func ScanSaved(op string) (x, y bool) {
	switch op {
	case "cumprod", "logcumsumexp":
		return true, true
	case "cummax", "cummin":
		return true, false
	}
	return false, false
}

func init() {
	checks = append(checks,
		Check{"scan finite differences", checkScanFD},
		Check{"scan against PyTorch's formulas", checkScanPyTorchFormulas},
		Check{"scan PyTorch vectors", checkScanVectors})
}

// checkScanFD compares every scan backward, both directions, with central
// differences of Σ w_j y_j(x) at random points: cumprod with zeros too (it
// is a polynomial, smooth at 0), cummax/cummin away from ties.
func checkScanFD() error {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, op := range ScanOps {
		for _, reverse := range []bool{false, true} {
			for trial := 0; trial < 300; trial++ {
				n := 1 + rng.IntN(9)
				x := make([]float64, n)
				w := make([]float64, n)
				for i := range x {
					w[i] = rng.Float64()*2 - 1
					switch op {
					case "cumprod":
						x[i] = rng.Float64()*3 - 1.5
						if rng.IntN(4) == 0 {
							x[i] = 0
						}
					case "cummax", "cummin":
						// Distinct values at least 0.05 apart: no tie within a step.
						x[i] = float64(rng.IntN(200)-100)*0.05 + 0.01*float64(i)/float64(n)
					case "logcumsumexp":
						x[i] = rng.NormFloat64() * 3
					default:
						x[i] = rng.NormFloat64()
					}
				}
				y := ScanForward(op, x, reverse)
				dx := ScanBackward(op, w, x, y, reverse)
				for k := range x {
					fd := centralDiff(func(v float64) float64 {
						xs := append([]float64(nil), x...)
						xs[k] = v
						s := 0.0
						for j, yj := range ScanForward(op, xs, reverse) {
							s += w[j] * yj
						}
						return s
					}, x[k])
					if !closeRel(dx[k], fd, 1e-5) {
						return fmt.Errorf("%s reverse=%v x=%v w=%v: dx[%d] = %v, finite differences %v", op, reverse, x, w, k, dx[k], fd)
					}
				}
			}
		}
	}
	return nil
}

// PyTorch's own formulas (docs/semantics.md 4), for the cross-check.

// cumprodBackwardTorch is cumprod_backward for one slice: the division
// formula without zeros, else the three regions around the first zero z1
// and the second z2.
func cumprodBackwardTorch(g, x, y []float64) []float64 {
	n := len(x)
	dx := make([]float64, n)
	if n == 1 {
		copy(dx, g)
		return dx
	}
	z1, z2 := n, n
	for i, v := range x {
		if v == 0 {
			if z1 == n {
				z1 = i
			} else if z2 == n {
				z2 = i
			}
		}
	}
	// k < z1: reverse_cumsum(y*g masked to [0, z1)) / x_k.
	rc := 0.0
	for k := z1 - 1; k >= 0; k-- {
		rc += y[k] * g[k]
		dx[k] = rc / x[k]
	}
	if z1 < n {
		prefix := 1.0
		if z1 > 0 {
			prefix = y[z1-1]
		}
		sum, prod := 0.0, 1.0
		for j := z1; j < z2; j++ {
			if j > z1 {
				prod *= x[j]
			}
			sum += g[j] * prod
		}
		dx[z1] = prefix * sum
	}
	return dx
}

// logcumsumexpBackwardTorch is PyTorch's two-sided log-space formula with
// the float32 lowest value as the sentinel:
// dx = exp(rlcse(Lp - y) + x) - exp(rlcse(Ln - y) + x).
func logcumsumexpBackwardTorch(g, x, y []float64) []float64 {
	const lowest = -math.MaxFloat32
	n := len(x)
	lp := make([]float64, n)
	ln := make([]float64, n)
	for i, v := range g {
		lp[i], ln[i] = lowest, lowest
		if v > 0 {
			lp[i] = math.Log(v)
		} else if v < 0 {
			ln[i] = math.Log(-v)
		}
		lp[i] -= y[i]
		ln[i] -= y[i]
	}
	// rlcse: reverse logcumsumexp, with ScanForward's combine.
	rp := ScanForward("logcumsumexp", lp, true)
	rn := ScanForward("logcumsumexp", ln, true)
	dx := make([]float64, n)
	for i := range dx {
		dx[i] = math.Exp(rp[i]+x[i]) - math.Exp(rn[i]+x[i])
	}
	return dx
}

// cumExtBackwardTorch scatters g to the forward's indices (last
// occurrence on ties, latest NaN).
func cumExtBackwardTorch(op string, g, x []float64) []float64 {
	dx := make([]float64, len(x))
	idx, m := 0, x[0]
	for j, v := range x {
		if j > 0 {
			switch {
			case math.IsNaN(v):
				idx, m = j, v
			case math.IsNaN(m):
			case op == "cummax" && v >= m, op == "cummin" && v <= m:
				idx, m = j, v
			}
		}
		dx[idx] += g[j]
	}
	return dx
}

// checkScanPyTorchFormulas compares the recurrence with PyTorch's own
// formulas on random slices: cumprod with zeros (every region), cummax and
// cummin with ties and NaN (exactly), logcumsumexp with -inf runs.
func checkScanPyTorchFormulas() error {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(12)
		g := make([]float64, n)
		x := make([]float64, n)
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		for i := range x {
			x[i] = rng.Float64()*3 - 1.5
			if rng.IntN(4) == 0 {
				x[i] = 0
			}
		}
		y := ScanForward("cumprod", x, false)
		got, want := ScanBackward("cumprod", g, x, y, false), cumprodBackwardTorch(g, x, y)
		for k := range got {
			if !closeRel(got[k], want[k], 1e-9) {
				return fmt.Errorf("cumprod x=%v g=%v: dx[%d] = %v, PyTorch's formula %v", x, g, k, got[k], want[k])
			}
		}
		for _, op := range []string{"cummax", "cummin"} {
			for i := range x {
				x[i] = float64(rng.IntN(4))
				switch rng.IntN(10) {
				case 0:
					x[i] = math.NaN()
				case 1:
					x[i] = math.Inf(2*rng.IntN(2) - 1)
				}
			}
			got, want := ScanBackward(op, g, x, nil, false), cumExtBackwardTorch(op, g, x)
			for k := range got {
				if !closeRel(got[k], want[k], 1e-12) {
					return fmt.Errorf("%s x=%v g=%v: dx[%d] = %v, scatter_add %v", op, x, g, k, got[k], want[k])
				}
			}
		}
		lead := rng.IntN(3)
		for i := range x {
			x[i] = rng.NormFloat64() * 4
			if i < lead || rng.IntN(8) == 0 {
				x[i] = math.Inf(-1)
			}
		}
		y = ScanForward("logcumsumexp", x, false)
		got, want = ScanBackward("logcumsumexp", g, x, y, false), logcumsumexpBackwardTorch(g, x, y)
		for k := range got {
			if math.IsNaN(got[k]) != math.IsNaN(want[k]) || !math.IsNaN(got[k]) && math.Abs(got[k]-want[k]) > 1e-9*(1+math.Abs(want[k])) {
				return fmt.Errorf("logcumsumexp x=%v g=%v: dx[%d] = %v, PyTorch's formula %v", x, g, k, got[k], want[k])
			}
		}
	}
	return nil
}

// ScanVectors are observed PyTorch 2.11 values (H100, f32; runs of
// torch.autograd), forward direction (docs/semantics.md 4).
var ScanVectors = []struct {
	Op        string
	X, DY, DX []float64
}{
	{"cummax", []float64{1, 3, 3, 2, nan, 5}, []float64{1, 1, 1, 1, 1, 1}, []float64{1, 1, 2, 0, 2, 0}},
	{"cummax", []float64{1, nan, 2, nan, 1}, []float64{1, 1, 1, 1, 1}, []float64{1, 2, 0, 2, 0}},
	{"cummax", []float64{inf(-1), inf(-1)}, []float64{1, 1}, []float64{1, 1}},
	{"cummin", []float64{3, 1, 1, 2}, []float64{1, 1, 1, 1}, []float64{1, 1, 2, 0}},
	{"cummin", []float64{0, math.Copysign(0, -1), 0}, []float64{1, 1, 1}, []float64{1, 1, 1}},
	{"cumprod", []float64{2, 0, 3, 0, 5}, []float64{1, 2, 3, 4, 5}, []float64{1, 22, 0, 0, 0}},
	{"cumprod", []float64{nan, 0, 3}, []float64{1, 2, 3}, []float64{nan, nan, 0}},
	{"cumprod", []float64{2, inf(1), 3}, []float64{1, 2, 3}, []float64{inf(1), nan, inf(1)}},
	{"cumprod", []float64{2, inf(1), 0, 3}, []float64{1, 2, 3, 4}, []float64{inf(1), nan, inf(1), 0}},
	{"cumprod", []float64{0, inf(1), 3}, []float64{1, 2, 3}, []float64{inf(1), 0, 0}},
	{"cumprod", []float64{2, 0, 3, nan}, []float64{1, 2, 3, 4}, []float64{1, nan, 0, 0}},
	{"cumprod", []float64{inf(1)}, []float64{2}, []float64{2}},
	{"cumprod", []float64{2, 3, 4}, []float64{1, nan, 1}, []float64{nan, nan, 6}},
	{"cumprod", []float64{2, 0, 4}, []float64{1, 1, nan}, []float64{1, nan, 0}},
	{"logcumsumexp", []float64{100, 200, -300, 50}, []float64{1, -2, 3, .5}, []float64{1, 1.5, 0, 0}},
	{"logcumsumexp", []float64{inf(-1), inf(-1), 1, 2}, []float64{1, 1, 1, 1}, []float64{nan, nan, 1.2689414, 0.7310585}},
	{"logcumsumexp", []float64{inf(-1), inf(-1), 1, 2}, []float64{0, 0, 0, 1}, []float64{nan, nan, 0.26894142, 0.7310585}},
	{"logcumsumexp", []float64{1, inf(1), 2}, []float64{1, 1, 1}, []float64{1, nan, 0}},
	{"logcumsumexp", []float64{1, 2, 3}, []float64{1, nan, 1}, []float64{1.0900306, 0.24472845, 0.66524088}},
	{"logcumsumexp", []float64{1, inf(-1), 3}, []float64{1, 2, 1}, []float64{3.1192031, 0, 0.88079707}},
	{"cumsum", []float64{1, 2, 3}, []float64{1, 2, 3}, []float64{6, 5, 3}},
}

var nan = math.NaN()

func inf(sign int) float64 { return math.Inf(sign) }

// checkScanVectors runs the observed vectors forward and mirrored
// (reverse over the flipped slice must give the flipped gradient).
func checkScanVectors() error {
	for _, v := range ScanVectors {
		for _, reverse := range []bool{false, true} {
			x, dy, want := v.X, v.DY, v.DX
			if reverse {
				x, dy, want = flipped(x), flipped(dy), flipped(want)
			}
			y := ScanForward(v.Op, x, reverse)
			got := ScanBackward(v.Op, dy, x, y, reverse)
			for k := range got {
				if math.IsNaN(got[k]) != math.IsNaN(want[k]) || !math.IsNaN(want[k]) &&
					!(got[k] == want[k] || math.Abs(got[k]-want[k]) <= 1e-6*math.Max(1, math.Abs(want[k]))) {
					return fmt.Errorf("%s reverse=%v x=%v dy=%v: dx = %v, PyTorch %v", v.Op, reverse, x, dy, got, want)
				}
			}
		}
	}
	return nil
}

func flipped(v []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[len(v)-1-i] = v[i]
	}
	return out
}
