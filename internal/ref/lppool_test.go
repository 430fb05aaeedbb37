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
