package ref

import (
	"math"
	"testing"
)

func TestScanFiniteDifferences(t *testing.T) {
	if err := checkScanFD(); err != nil {
		t.Fatal(err)
	}
}

// TestScanPyTorchFormulas: the recurrence equals PyTorch's cumprod three
// regions, scatter_add at the forward's indices and the two-sided
// log-space logcumsumexp on random slices with zeros, ties, NaN and -inf.
func TestScanPyTorchFormulas(t *testing.T) {
	if err := checkScanPyTorchFormulas(); err != nil {
		t.Fatal(err)
	}
}

func TestScanPyTorchVectors(t *testing.T) {
	if err := checkScanVectors(); err != nil {
		t.Fatal(err)
	}
}

func TestScanForward(t *testing.T) {
	ninf := math.Inf(-1)
	cases := []struct {
		op      string
		x       []float64
		reverse bool
		want    []float64
	}{
		{"cumsum", []float64{1, 2, 3}, false, []float64{1, 3, 6}},
		{"cumsum", []float64{1, 2, 3}, true, []float64{6, 5, 3}},
		{"cumprod", []float64{2, 0, 3}, false, []float64{2, 0, 0}},
		{"cumprod", []float64{2, 3, 4}, true, []float64{24, 12, 4}},
		{"cummax", []float64{1, 3, 2, nan, 5}, false, []float64{1, 3, 3, nan, nan}},
		{"cummin", []float64{3, 1, 2}, true, []float64{1, 1, 2}},
		{"logcumsumexp", []float64{ninf, ninf, 0}, false, []float64{ninf, ninf, 0}},
		{"logcumsumexp", []float64{math.Inf(1), math.Inf(1)}, false, []float64{math.Inf(1), math.Inf(1)}},
		{"logcumsumexp", []float64{0, 0}, false, []float64{0, math.Ln2}},
	}
	for _, c := range cases {
		got := ScanForward(c.op, c.x, c.reverse)
		for i := range got {
			if !sameFloat(got[i], c.want[i]) && math.Abs(got[i]-c.want[i]) > 1e-15 {
				t.Errorf("%s%v reverse=%v = %v, want %v", c.op, c.x, c.reverse, got, c.want)
				break
			}
		}
	}
}

// TestScanCheckCanFail: the finite-difference comparison notices a factor
// that is off by 0.1%, and the PyTorch cross-check notices a first-
// occurrence tie rule.
func TestScanCheckCanFail(t *testing.T) {
	x := []float64{0.5, -1.25, 2}
	w := []float64{0.3, -0.7, 0.9}
	y := ScanForward("cumprod", x, false)
	dx := ScanBackward("cumprod", w, x, y, false)
	fd := centralDiff(func(v float64) float64 {
		ys := ScanForward("cumprod", []float64{v, x[1], x[2]}, false)
		return w[0]*ys[0] + w[1]*ys[1] + w[2]*ys[2]
	}, x[0])
	if !closeRel(dx[0], fd, 1e-5) || closeRel(dx[0]*1.001, fd, 1e-5) {
		t.Fatalf("finite difference %v vs backward %v: the comparison cannot tell a wrong gradient", fd, dx[0])
	}
	g := []float64{1, 1, 1}
	ties := []float64{2, 2, 1}
	got, want := ScanBackward("cummax", g, ties, nil, false), cumExtBackwardTorch("cummax", g, ties)
	if got[0] != 1 || got[1] != 2 || got[2] != 0 || want[0] != 1 || want[1] != 2 {
		t.Fatalf("cummax ties: recurrence %v, scatter %v; want the last occurrence [1 2 0]", got, want)
	}
}

// TestScanBackwardMag: the magnitude bounds |dx| and is exact where every
// term has one sign.
func TestScanBackwardMag(t *testing.T) {
	x := []float64{2, 0.5, -1, 3}
	g := []float64{1, -2, 0.5, 1}
	for _, op := range ScanOps {
		y := ScanForward(op, x, false)
		dx, mag := ScanBackwardMag(op, g, x, y, false)
		for k := range dx {
			if math.Abs(dx[k]) > mag[k]*(1+1e-12) {
				t.Errorf("%s: |dx[%d]| = %v exceeds its magnitude %v", op, k, math.Abs(dx[k]), mag[k])
			}
		}
	}
	dx, mag := ScanBackwardMag("cumsum", []float64{1, 2, 3}, nil, nil, false)
	if dx[0] != 6 || mag[0] != 6 {
		t.Errorf("cumsum of positive dy: dx %v, magnitude %v", dx, mag)
	}
}

// TestScanStrongZero: a cut keeps later inf and NaN out of earlier elements.
func TestScanStrongZero(t *testing.T) {
	g := []float64{1, 2, math.Inf(1)}
	x := []float64{1, 5, 3}
	if dx := ScanBackward("cummax", g, x, nil, false); dx[0] != 1 || !math.IsInf(dx[1], 1) || dx[2] != 0 {
		t.Errorf("cummax: the inf dy of the last element (index 1) leaked past index 1: %v", dx)
	}
	xp := []float64{3, 0, 2}
	gp := []float64{1, 2, nan}
	if dx := ScanBackward("cumprod", gp, xp, ScanForward("cumprod", xp, false), false); dx[0] != 1 || !math.IsNaN(dx[1]) || dx[2] != 0 {
		t.Errorf("cumprod: NaN dy behind a zero reached the elements before it: %v", dx)
	}
}

// TestScanUnderflowRules: PyTorch's values where cumprod's y underflows
// to 0 with no zero in x (its terms y_j g_j are 0, or NaN for an infinite
// dy, and dx is their sum over x_k), and where logcumsumexp's exponents
// leave the range: a difference of finite x and y that overflows still
// carries an infinite dy (a factor of the least positive value), and a c
// that underflows gives exactly 0, not a few subnormals of T.
func TestScanUnderflowRules(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		op   string
		x, g []float64
		want []float64
	}{
		// y = [1e-200, 0, 0, 0, 0]: NaN up to the infinite dy, 0 after.
		{"cumprod", []float64{1e-200, 1e-200, 2, 0.5, 3}, []float64{1, 2, 3, inf, 4}, []float64{nan, nan, nan, nan, 0}},
		// Finite dy: the underflowed terms add 0.
		{"cumprod", []float64{1e-200, 1e-200, 2, 0.5}, []float64{1, 2, 3, 4}, []float64{1, 0, 0, 0}},
		// A zero after the underflow: NaN before it; at it 0 * (2 + 5*3).
		{"cumprod", []float64{1e-200, 1e-200, 0, 5}, []float64{1, inf, 2, 3}, []float64{nan, nan, 0, 0}},
		// y = [-1.5e308, 1.5e308]: exp(y_0 - y_1) overflows to exp(-inf).
		{"logcumsumexp", []float64{-1.5e308, 1.5e308}, []float64{1, inf}, []float64{inf, inf}},
		// c_1 = exp(-800): 5 * c_1 is below the least subnormal.
		{"logcumsumexp", []float64{100, -700}, []float64{1, 5}, []float64{6, 0}},
	}
	for _, c := range cases {
		y := ScanForward(c.op, c.x, false)
		got := ScanBackward(c.op, c.g, c.x, y, false)
		for i := range got {
			if !sameFloat(got[i], c.want[i]) && math.Abs(got[i]-c.want[i]) > 1e-12*math.Abs(c.want[i]) {
				t.Errorf("%s x=%v dy=%v (y=%v): dx = %v, want %v", c.op, c.x, c.g, y, got, c.want)
				break
			}
		}
	}
}

// TestCumprodUnderflowLongSlice: PyTorch's values for a slice as long as
// several col tiles (the kernels' chained-tile case): x = 0.5 repeated,
// so y rounded to float32 is 0 from element 149 on (2^-150 rounds to
// even, 0); dy 1 but +inf at 300 and -inf at 380, and a zero of x at 350.
// Up to the +inf dy every dx is NaN (its term 0 * inf), before and after
// the underflow; from there to the zero 0; at the zero 0 * (-inf * 2^-30)
// = NaN; after it 0. Both directions (the slice mirrored).
func TestCumprodUnderflowLongSlice(t *testing.T) {
	const n = 400
	for _, reverse := range []bool{false, true} {
		at := func(p int) int {
			if reverse {
				return n - 1 - p
			}
			return p
		}
		x, g := make([]float64, n), make([]float64, n)
		for p := range x {
			x[at(p)], g[at(p)] = 0.5, 1
		}
		g[at(300)], g[at(380)], x[at(350)] = math.Inf(1), math.Inf(-1), 0
		y := ScanForward("cumprod", x, reverse)
		for k := range y {
			y[k] = float64(float32(y[k]))
		}
		if y[at(148)] == 0 || y[at(149)] != 0 {
			t.Fatalf("reverse=%v: y at 148, 149 = %v, %v; want nonzero, 0", reverse, y[at(148)], y[at(149)])
		}
		dx := ScanBackward("cumprod", g, x, y, reverse)
		for p := 0; p < n; p++ {
			want := 0.0
			if p <= 300 || p == 350 {
				want = math.NaN()
			}
			if !sameFloat(dx[at(p)], want) {
				t.Errorf("reverse=%v: dx at scan position %d = %v, want %v", reverse, p, dx[at(p)], want)
			}
		}
	}
}
