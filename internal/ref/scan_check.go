package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The scan reference's self-checks: finite differences, PyTorch's own
// backward formulas on random and special inputs, and the committed
// PyTorch vectors.

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

// cumprodBackwardTorch is cumprod_backward for one slice, its masked
// first-order form (which equals the division form on a slice without
// zeros): with z1 the first zero and z2 the second (n where there is
// none), dx_k = Σ_{k<=j<z1} y_j g_j / x_k for k < z1; at z1 the sum over
// the whole slice of P_j G_j, where P is the cumulative product of x with
// every element outside (z1, z2) set to 1 and G is g with every element
// outside [z1, z2) set to 0, times y_{z1-1} (1 at z1 = 0); 0 after z1.
// Past z2, P_j G_j is inf * 0 = NaN where the product up to z2 is
// infinite, and PyTorch keeps it.
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
		for j := 0; j < n; j++ {
			if j > z1 && j < z2 {
				prod *= x[j]
			}
			gj := 0.0
			if j >= z1 && j < z2 {
				gj = g[j]
			}
			sum += prod * gj
		}
		dx[z1] = sum * prefix
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

// sameClass compares a result with PyTorch's: NaN with NaN, an infinity
// with the same infinity, finite values to tol relative (absolute below 1).
func sameClass(got, want, tol float64) bool {
	switch {
	case math.IsNaN(got) || math.IsNaN(want):
		return math.IsNaN(got) && math.IsNaN(want)
	case math.IsInf(got, 0) || math.IsInf(want, 0):
		return got == want
	}
	return closeRel(got, want, tol)
}

// pick returns one of vals with probability 1/odds each, else v.
func pick(rng *rand.Rand, v float64, odds int, vals ...float64) float64 {
	if i := rng.IntN(odds); i < len(vals) {
		return vals[i]
	}
	return v
}

// checkScanPyTorchFormulas compares the recurrence with PyTorch's own
// formulas on random slices, both directions: cumprod with zeros (every
// region), ±inf and NaN in x and ±inf, NaN and 0 in dy; cummax and cummin
// with ties and NaN (exactly); logcumsumexp with -inf runs, NaN, +inf and
// ±1000 (exp underflows) in x and ±inf, NaN and 0 in dy. NaN and the
// infinities must fall where PyTorch's formulas put them.
func checkScanPyTorchFormulas() error {
	rng := rand.New(rand.NewPCG(3, 5))
	inf := math.Inf(1)
	for trial := 0; trial < 4000; trial++ {
		n := 1 + rng.IntN(12)
		reverse := trial%2 == 1
		g := make([]float64, n)
		x := make([]float64, n)
		special := trial%4 >= 2
		for i := range g {
			g[i] = rng.NormFloat64()
			if special {
				g[i] = pick(rng, g[i], 24, inf, -inf, nan, 0)
			}
		}
		for i := range x {
			x[i] = rng.Float64()*3 - 1.5
			if rng.IntN(4) == 0 {
				x[i] = 0
			}
			if special {
				x[i] = pick(rng, x[i], 8, inf, -inf, nan)
			}
		}
		if err := crossCheck("cumprod", g, x, reverse, 1e-9, func(g, x, y []float64) []float64 {
			return cumprodBackwardTorch(g, x, y)
		}); err != nil {
			return err
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
			if err := crossCheck(op, g, x, reverse, 1e-12, func(g, x, _ []float64) []float64 {
				return cumExtBackwardTorch(op, g, x)
			}); err != nil {
				return err
			}
		}
		lead := rng.IntN(3)
		for i := range x {
			x[i] = rng.NormFloat64() * 4
			if i < lead || rng.IntN(8) == 0 {
				x[i] = math.Inf(-1)
			}
			if special {
				x[i] = pick(rng, x[i], 10, inf, nan, 1000, -1000)
			}
		}
		if err := crossCheck("logcumsumexp", g, x, reverse, 1e-9, logcumsumexpBackwardTorch); err != nil {
			return err
		}
	}
	return nil
}

// crossCheck runs the recurrence on one slice (in scan order when
// reverse) and compares it with torch, PyTorch's formula for the slice in
// scan order.
func crossCheck(op string, g, x []float64, reverse bool, tol float64, torch func(g, x, y []float64) []float64) error {
	if reverse {
		g, x = flipped(g), flipped(x)
	}
	y := ScanForward(op, x, reverse)
	got := ScanBackward(op, g, x, y, reverse)
	if reverse {
		g, x, y, got = flipped(g), flipped(x), flipped(y), flipped(got)
	}
	want := torch(g, x, y)
	for k := range got {
		if !sameClass(got[k], want[k], tol) {
			return fmt.Errorf("%s x=%v g=%v reverse=%v: dx[%d] = %v, PyTorch's formula %v", op, x, g, reverse, k, got[k], want[k])
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

// ScanDerivedVectors are values worked out by hand from PyTorch's
// formulas (cumprod_backward, logcumsumexp_backward in
// torch/csrc/autograd/FunctionsManual.cpp; docs/semantics.md 4) where the
// infinities and NaN decide them, forward direction:
//   - cumprod without a zero before k: dx_k = Σ_{j>=k} y_j g_j / x_k, so NaN
//     where the infinite terms y_j g_j have both signs (or one is inf * 0),
//     ±inf where they share one; at the first zero z1, y_{z1-1} times
//     Σ_j P_j G_j over the whole slice (P: the cumulative product of x
//     inside (z1, z2), G: dy inside [z1, z2)), NaN past a second zero z2
//     where P is infinite there (inf * 0);
//   - logcumsumexp: exp(x_k + rlcse(log g⁺ - y)_k) - exp(x_k + rlcse(log
//     g⁻ - y)_k): a NaN in x makes every dx NaN, an infinite dy beyond k
//     reaches k at any distance (NaN where y = +inf at it, or where x_k is
//     -inf or y_k is +inf).
var ScanDerivedVectors = []struct {
	Op        string
	X, DY, DX []float64
}{
	{"cumprod", []float64{2, inf(1), inf(-1), 3}, []float64{1, 1, 1, 1}, []float64{nan, nan, nan, inf(-1)}},
	{"cumprod", []float64{2, inf(1), 3}, []float64{1, -1, 1}, []float64{nan, nan, inf(1)}},
	{"cumprod", []float64{2, inf(1), 3}, []float64{1, 1, 0}, []float64{nan, nan, nan}},
	{"cumprod", []float64{-2, inf(1), 3}, []float64{1, 1, 1}, []float64{inf(1), nan, inf(-1)}},
	{"cumprod", []float64{2, nan, 3}, []float64{1, 0, 0}, []float64{nan, nan, nan}},
	{"cumprod", []float64{inf(1), 0, 2, 0}, []float64{1, 1, -0.25, 1}, []float64{nan, inf(1), 0, 0}},
	{"cumprod", []float64{2, 0, inf(1), 0, 5}, []float64{1, 1, 1, 1, 1}, []float64{1, nan, 0, 0, 0}},
	{"cumprod", []float64{2, 0, inf(1), 5}, []float64{1, 1, 1, 1}, []float64{1, inf(1), 0, 0}},
	{"cumprod", []float64{0, inf(1), inf(-1), 3}, []float64{1, 1, 1, 1}, []float64{nan, 0, 0, 0}},
	{"cumprod", []float64{2, 0, nan, 3}, []float64{1, 2, 0, 0}, []float64{1, nan, 0, 0}},
	{"logcumsumexp", []float64{1, inf(-1), 2, nan}, []float64{1, 1, 1, 1}, []float64{nan, nan, nan, nan}},
	{"logcumsumexp", []float64{1, inf(1), nan}, []float64{1, 1, 1}, []float64{nan, nan, nan}},
	{"logcumsumexp", []float64{1, inf(-1), 2}, []float64{1, 1, inf(1)}, []float64{inf(1), nan, inf(1)}},
	{"logcumsumexp", []float64{1, inf(1), 2}, []float64{1, 1, inf(-1)}, []float64{nan, nan, nan}},
	{"logcumsumexp", []float64{0, 1000, 1}, []float64{1, 1, inf(1)}, []float64{inf(1), inf(1), inf(1)}},
	{"logcumsumexp", []float64{1, 2, 3}, []float64{1, inf(1), inf(-1)}, []float64{nan, nan, inf(-1)}},
	{"logcumsumexp", []float64{1, inf(-1), 2}, []float64{1, 1, nan}, []float64{2, 0, 0}},
	{"logcumsumexp", []float64{inf(-1), 1, inf(-1), 2}, []float64{1, 1, 1, inf(1)}, []float64{nan, inf(1), nan, inf(1)}},
	{"logcumsumexp", []float64{inf(-1), inf(-1), 1, inf(-1), nan}, []float64{1, 1, 1, 1, 1}, []float64{nan, nan, nan, nan, nan}},
}

var nan = math.NaN()

func inf(sign int) float64 { return math.Inf(sign) }

// checkScanVectors runs the observed and the derived vectors forward and
// mirrored (reverse over the flipped slice must give the flipped
// gradient): NaN and the infinities exactly, other values to 1e-6.
func checkScanVectors() error {
	for _, v := range append(ScanVectors[:len(ScanVectors):len(ScanVectors)], ScanDerivedVectors...) {
		for _, reverse := range []bool{false, true} {
			x, dy, want := v.X, v.DY, v.DX
			if reverse {
				x, dy, want = flipped(x), flipped(dy), flipped(want)
			}
			y := ScanForward(v.Op, x, reverse)
			got := ScanBackward(v.Op, dy, x, y, reverse)
			for k := range got {
				if !sameClass(got[k], want[k], 1e-6) {
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
