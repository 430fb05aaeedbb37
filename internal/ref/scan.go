package ref

import (
	"fmt"
	"math"
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

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// tinyFactor is what an exp factor of logcumsumexp that underflows
// becomes: the least positive float64, so that it still scales an
// infinity to an infinity (PyTorch's log-space form keeps an infinite dy
// infinite whatever the finite distance), and scales a finite value to
// about 0.
const tinyFactor = 0x1p-1074

// lseExp is exp(p - q) for logcumsumexp's factors: exactly 0 only where p
// is -inf or q is +inf (PyTorch's exp(-inf)), at least tinyFactor where
// both are finite, even where p - q overflows to -inf (x and y near the
// ends of the range: PyTorch adds them in log space, where a finite sum
// of logs stays finite or goes to -inf only with them); NaN where either
// is NaN or p and q are the same infinity.
func lseExp(p, q float64) float64 {
	e := math.Exp(p - q)
	if p > math.Inf(-1) && q < math.Inf(1) && !(e >= tinyFactor) && !math.IsNaN(e) {
		return tinyFactor
	}
	return e
}

// lseFactor is logcumsumexp's factor exp(from - to) between two y values
// (from before to in scan order): lseExp, so 0 where to is +inf and from
// is not (a cut PyTorch makes with exp(-inf): its finite dy beyond count
// nothing, an infinite dy beyond gives NaN), and 1 where both are +inf
// (the elements past the first +inf of x pass the sum of their dy on to
// that cut); NaN where either is NaN or both are -inf.
func lseFactor(from, to float64) float64 {
	if math.IsInf(from, 1) && math.IsInf(to, 1) {
		return 1
	}
	return lseExp(from, to)
}

// lseHalf is logcumsumexp's c_k = exp(x_k - y_k) as the factor r with c =
// r*r that dx_k = (r*S_k)*r applies: r = lseExp of half the distance. A
// product below the least positive value rounds to 0 at either step, as
// PyTorch's exp of the summed logs does, while an infinite S stays
// infinite; an underflowing c taken whole (the least positive value times
// S) would leave a few subnormals where PyTorch has 0.
func lseHalf(x, y float64) float64 {
	return lseExp(x/2, y/2)
}

// ScanBackward returns dx for one slice from dy and the saved x and y (a
// nil slice for a save the op does not read), with exactly the formulas and
// edge rules of gen/scan.cuh in float64. In scan order (k = 0 first; with
// reverse the end of the slice), g = dy:
//
//	S_k = h_k + V_{k+1} (V_n = 0), dx_k = c_k (.) S_k, V_k = a_k (.) S_k
//
// where h_k is g_k or the op's stand-in for it and (.) the op's product,
// per op:
//
//	cumsum        a = c = 1, h = g; plain products
//	cumprod       the strong-zero product (.) for a: a (.) b = 0 where
//	              a or b is 0, else a*b. Before the first zero z1 (and
//	              at it): a = x_k, c = y_{k-1} (1 for k = 0), NaN where x_k
//	              is not finite (n > 1), dx = c*S plain; h = g where y_k
//	              is finite and nonzero, else g*|y_k| (±inf, or NaN where
//	              g is 0 or y_k NaN; 0, or NaN where g is ±inf or NaN, for
//	              a y_k that underflowed to 0), which adds the terms y_j
//	              g_j of PyTorch's sum Σ_{j>=k} y_j g_j that are not
//	              finite nonzero numbers as PyTorch has them; h = g at z1.
//	              So where y underflowed, dx is 0, or NaN where a later dy
//	              before z1 is ±inf or NaN, as PyTorch's 0*dy and 0/x
//	              give. After z1: c = 0 with dx = 0 even where S is inf or
//	              NaN; h = g until an x after z1 is ±inf or NaN, from
//	              there g*inf; a = x_k, at a later zero 0, or NaN with h =
//	              NaN where an x between z1 and it was ±inf or NaN
//	              (PyTorch's sum at z1 then multiplies that infinite
//	              product by the zero dy past the second zero)
//	cummax/min    c = 1 where the forward index moves to k (x_k NaN, or
//	              the running extremum is not NaN and x_k >= it, <= for
//	              cummin), else 0; a = 1 - c; h = g
//	logcumsumexp  plain products (0 * inf is NaN: PyTorch's exp(inf - inf)
//	              where x_k = -inf or y_k = +inf); a = lseFactor(y_{k-1},
//	              y_k), c = r*r applied as dx = (r*S)*r with r =
//	              lseHalf(x_k, y_k); h = g, 0 where g is NaN
func ScanBackward(op string, dy, x, y []float64, reverse bool) []float64 {
	dx, _ := ScanBackwardMag(op, dy, x, y, reverse)
	return dx
}

// ScanBackwardMag is ScanBackward that also returns, per element, the
// magnitude of the sum it computes: |c_k| * Σ_j |h_j| |a_{k+1}...a_j|, the
// scale of its rounding error (the conformance tolerances grow with it).
func ScanBackwardMag(op string, dy, x, y []float64, reverse bool) (dx, mag []float64) {
	n := len(dy)
	a := make([]float64, n)
	c := make([]float64, n)
	h := make([]float64, n)
	// plainC: dx_k = c_k * S_k without the strong zero (cumprod before
	// and at its first zero).
	plainC := make([]bool, n)
	ext := 1
	if op == "cummin" {
		ext = -1
	}
	var f float64 // cummax/cummin: the running extremum before the element
	switch op {
	case "cummax":
		f = math.Inf(-1)
	case "cummin":
		f = math.Inf(1)
	}
	// cumprod: a zero came before the element (z), and an x that is ±inf
	// or NaN came after the first zero and before the element (iz).
	z, iz := false, false
	for i := 0; i < n; i++ {
		k := scanIndex(i, n, reverse)
		g := dy[k]
		h[i] = g
		switch op {
		case "cumsum":
			a[i], c[i] = 1, 1
		case "cumprod":
			xk := x[k]
			a[i] = xk
			switch {
			case n == 1:
				c[i] = 1
			case !z:
				plainC[i] = true
				c[i] = 1
				if i > 0 {
					c[i] = y[scanIndex(i-1, n, reverse)]
				}
				if !finite(xk) {
					c[i] = math.NaN()
				}
				if yk := y[k]; xk != 0 && (!finite(yk) || yk == 0) {
					h[i] = g * math.Abs(yk)
				}
			case xk == 0:
				if iz {
					a[i], h[i] = math.NaN(), math.NaN()
				}
			default:
				if iz || !finite(xk) {
					h[i] = g * math.Inf(1)
				}
			}
			if z && !finite(xk) {
				iz = true
			}
			if xk == 0 {
				z = true
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
				a[i] = lseFactor(y[scanIndex(i-1, n, reverse)], y[k])
			}
			c[i] = lseHalf(x[k], y[k])
			if math.IsNaN(g) {
				h[i] = 0
			}
		default:
			panic(fmt.Sprintf("ref: unknown scan op %q", op))
		}
	}
	plain := op == "logcumsumexp"
	dx = make([]float64, n)
	mag = make([]float64, n)
	v, vabs := 0.0, 0.0
	for i := n - 1; i >= 0; i-- {
		k := scanIndex(i, n, reverse)
		s := h[i] + v
		sabs := math.Abs(h[i]) + vabs
		switch {
		case plain:
			dx[k] = (c[i] * s) * c[i]
			mag[k] = (c[i] * sabs) * c[i]
			v = a[i] * s
			vabs = a[i] * sabs
		default:
			if c[i] != 0 || plainC[i] {
				dx[k] = c[i] * s
				mag[k] = math.Abs(c[i]) * sabs
			}
			v = sz(a[i], s)
			vabs = sz(math.Abs(a[i]), sabs)
		}
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
