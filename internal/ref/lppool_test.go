package ref

import (
	"math"
	"testing"
)

func TestLpPoolOutputSize(t *testing.T) {
	cases := []struct {
		l, k, s int
		ceil    bool
		want    int
	}{
		{4, 2, 2, false, 2},
		{5, 2, 2, false, 2},
		{5, 2, 2, true, 3},
		{4, 2, 2, true, 2},
		{6, 3, 2, true, 3}, // (6-3+1)/2+1 = 3; window 2 starts at 4 < 6
		{5, 3, 3, true, 2}, // (5-3+2)/3+1 = 2
		{7, 2, 3, true, 3}, // windows at 0, 3, 6; 6 < 7 keeps the third
		{6, 2, 3, true, 2}, // (6-2+2)/3+1 = 3, but (3-1)*3 = 6 >= 6 drops it
		{3, 4, 2, true, 1},
		{3, 4, 2, false, 0},
		{1, 1, 1, false, 1},
		{2, 5, 1, false, -2},
	}
	for _, c := range cases {
		if got := LpPoolOutputSize(c.l, c.k, c.s, c.ceil); got != c.want {
			t.Errorf("LpPoolOutputSize(%d, %d, %d, %v) = %d, want %d", c.l, c.k, c.s, c.ceil, got, c.want)
		}
	}
}

// lossOf is Σ dy * y(x), whose gradient in x is the backward's dx.
// TestLpPoolEdgeCases: the y == 0 select, NaN for negative x with a
// non-integer p, p < 1 at x == 0, and cells in no window.
func TestLpPoolEdgeCases(t *testing.T) {
	nan := math.NaN()
	one := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	g := LpPoolGeom{N: 1, C: 1, H: 1, W: 4, KH: 1, KW: 2, SH: 1, SW: 2, P: 2}
	// A zero window discards even a NaN dy.
	dx := LpPoolBackward(g, []float64{nan, 1}, []float64{0, 0, 3, 4}, []float64{0, 5})
	if dx[0] != 0 || dx[1] != 0 {
		t.Errorf("zero window with NaN dy: dx = %v, want 0 there", dx)
	}
	// Negative x with p = 2.5: x^p is NaN, so y and dx are NaN.
	g.P = 2.5
	x := []float64{-1, 2, 1, 1}
	dx = LpPoolBackward(g, one(2), x, LpPoolForward(g, x))
	if !math.IsNaN(dx[0]) || !math.IsNaN(dx[1]) || math.IsNaN(dx[2]) {
		t.Errorf("p=2.5 with a negative input: dx = %v, want NaN in the first window only", dx)
	}
	// p < 1 at x == 0: x^(p-1) = inf.
	g.P = 0.5
	x = []float64{0, 4, 1, 1}
	dx = LpPoolBackward(g, one(2), x, LpPoolForward(g, x))
	if !math.IsInf(dx[0], 1) {
		t.Errorf("p=0.5 at x=0: dx[0] = %v, want +inf", dx[0])
	}
	// Stride > window: cell 2 of [0,1,2,3,4] (k=2, s=3) is in no window.
	g = LpPoolGeom{N: 1, C: 1, H: 1, W: 5, KH: 1, KW: 2, SH: 1, SW: 3, P: 2}
	x = []float64{1, 2, 7, 3, 4}
	dx = LpPoolBackward(g, one(2), x, LpPoolForward(g, x))
	if dx[2] != 0 {
		t.Errorf("cell in no window: dx[2] = %v, want 0", dx[2])
	}
	// p == 1: x^0 = 1 even at x == 0, dx = dy * K/c.
	g = LpPoolGeom{N: 1, C: 1, H: 1, W: 3, KH: 1, KW: 2, SH: 1, SW: 2, P: 1, CeilMode: true}
	x = []float64{0, 2, -3}
	dx = LpPoolBackward(g, one(2), x, LpPoolForward(g, x))
	if dx[0] != 1 || dx[1] != 1 || dx[2] != 2 {
		t.Errorf("p=1 ceil: dx = %v, want [1 1 2]", dx)
	}
}

// TestLpPoolNaNWindow: PyTorch's sign(NaN) is 0, and the sign and abs
// backwards multiply a NaN window's gradient by it. For p == 1 the pow
// backwards are x^0 = q^0 = 1, so the window contributes 0 (NaN for a NaN
// or infinite dy); for any other p the gradient is already NaN.
func TestLpPoolNaNWindow(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	// k = 3, s = 2: windows [0, 3) and [2, 5); the first holds the NaN.
	g := LpPoolGeom{N: 1, C: 1, H: 1, W: 5, KH: 1, KW: 3, SH: 1, SW: 2, P: 1}
	x := []float64{1, nan, 2, 4, 1}
	y := LpPoolForward(g, x)
	if !math.IsNaN(y[0]) || y[1] != 7 {
		t.Fatalf("forward %v, want [NaN 7]", y)
	}
	// dx = x^0 * (0 + 0.5 where in the second window): even the NaN cell
	// gets 0, since NaN^0 = 1.
	want := []float64{0, 0, 0.5, 0.5, 0.5}
	if dx := LpPoolBackward(g, []float64{2, 0.5}, x, y); !equalNaN(dx, want) {
		t.Errorf("p=1, NaN window: dx = %v, want %v", dx, want)
	}
	want = []float64{nan, nan, nan, 0.5, 0.5}
	if dx := LpPoolBackward(g, []float64{inf, 0.5}, x, y); !equalNaN(dx, want) {
		t.Errorf("p=1, NaN window, dy = inf: dx = %v, want %v", dx, want)
	}
	// p = 2: the window's q^(1/2-1) is NaN, so its cells are NaN.
	g.P = 2
	x = []float64{1, nan, 3, 4, 0}
	y = LpPoolForward(g, x)
	want = []float64{nan, nan, nan, 4.0 / 5, 0}
	if dx := LpPoolBackward(g, []float64{1, 1}, x, y); !equalNaN(dx, want) {
		t.Errorf("p=2, NaN window: dx = %v, want %v", dx, want)
	}
}

// TestLpPoolOverflowedOutput: for p < 1, y = ((K/c) Σ x^p)^(1/p) overflows
// where the pooled sum q does not; PyTorch's gradient comes from q and is
// finite: dx_i = x_i^(p-1) * dy * (K/c) * q^(1/p-1). For p > 1 an infinite
// y means q itself overflowed, and the window contributes dy*(K/c)*0.
func TestLpPoolOverflowedOutput(t *testing.T) {
	inf := math.Inf(1)
	// p = 1/2, k = s = 2, ceil: windows [6.4e307, 3.6e307] (q = 8e153 +
	// 6e153 = 1.4e154, y = q^2 = 1.96e308 > max) and the partial [1e308]
	// (c = 1: q = 2*1e154, y = 4e308).
	g := LpPoolGeom{N: 1, C: 1, H: 1, W: 3, KH: 1, KW: 2, SH: 1, SW: 2, P: 0.5, CeilMode: true}
	x := []float64{6.4e307, 3.6e307, 1e308}
	y := LpPoolForward(g, x)
	if !math.IsInf(y[0], 1) || !math.IsInf(y[1], 1) {
		t.Fatalf("forward %v, want [+Inf +Inf]", y)
	}
	// dx_0 = (6.4e307)^(-1/2) * q = 1.4e154/8e153, dx_1 = 1.4e154/6e153;
	// dx_2 = (1e308)^(-1/2) * (K/c) * q = 2 * 2e154/1e154 (y = 4x).
	want := []float64{1.75, 7.0 / 3, 4}
	dx := LpPoolBackward(g, []float64{1, 1}, x, y)
	for i := range want {
		if math.Abs(dx[i]-want[i]) > 1e-12*want[i] {
			t.Errorf("p=0.5, y = +inf: dx = %v, want %v", dx, want)
			break
		}
	}
	// p = 2: y = +inf is q = +inf; the window gives 0 (NaN for a NaN dy).
	g = LpPoolGeom{N: 1, C: 1, H: 1, W: 2, KH: 1, KW: 2, SH: 1, SW: 2, P: 2}
	x = []float64{1e200, 3}
	if dx := LpPoolBackward(g, []float64{1}, x, []float64{inf}); dx[0] != 0 || dx[1] != 0 {
		t.Errorf("p=2, y = +inf: dx = %v, want [0 0]", dx)
	}
	if dx := LpPoolBackward(g, []float64{math.NaN()}, x, []float64{inf}); !math.IsNaN(dx[0]) || !math.IsNaN(dx[1]) {
		t.Errorf("p=2, y = +inf, dy = NaN: dx = %v, want NaN", dx)
	}
}

// equalNaN reports whether a and b hold the same values, NaN equal to NaN.
func equalNaN(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}
