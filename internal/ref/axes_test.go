package ref

import (
	"math"
	"testing"
)

func TestAxesSlicesCoverEachElementOnce(t *testing.T) {
	for _, c := range []struct {
		shape, axes []int
	}{
		{[]int{2, 3, 4}, []int{0, 2}}, {[]int{2, 3, 4}, []int{2, 0}}, {[]int{5}, []int{0}},
		{[]int{3, 1, 4, 2}, []int{1, 3}}, {[]int{2, 3, 4, 5}, []int{0, 1, 2, 3}}, {[]int{4, 5, 6}, []int{1}},
	} {
		v := NewAxesSlices(c.shape, c.axes)
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		if v.Count()*v.K != n {
			t.Fatalf("%v over %v: %d slices of %d, want %d elements", c.shape, c.axes, v.Count(), v.K, n)
		}
		seen := make([]bool, n)
		for s := 0; s < v.Count(); s++ {
			for j := 0; j < v.K; j++ {
				i := v.At(s, j)
				if seen[i] {
					t.Fatalf("%v over %v: index %d twice", c.shape, c.axes, i)
				}
				seen[i] = true
			}
		}
		if len(c.axes) == 1 {
			a := NewAxisSlices(c.shape, c.axes[0])
			for s := 0; s < v.Count(); s++ {
				for j := 0; j < v.K; j++ {
					if v.At(s, j) != a.At(s, j) {
						t.Fatalf("%v over %v: At(%d, %d) = %d, AxisSlices %d", c.shape, c.axes, s, j, v.At(s, j), a.At(s, j))
					}
				}
			}
		}
	}
}

// TestAxesSlicesOrder pins the order of slices and positions: dims (0, 2)
// of [2, 3, 2]: slice s is dim 1, position j = 2*i0 + i2.
func TestAxesSlicesOrder(t *testing.T) {
	v := NewAxesSlices([]int{2, 3, 2}, []int{0, 2})
	for s := 0; s < 3; s++ {
		for j := 0; j < 4; j++ {
			want := (j/2)*6 + s*2 + j%2
			if got := v.At(s, j); got != want {
				t.Fatalf("At(%d, %d) = %d, want %d", s, j, got, want)
			}
		}
	}
}

// TestReduceBackwardAxesTies: amax over dims (0, 2) splits g among the
// ties of the whole set, across segments; a NaN makes its slice NaN.
func TestReduceBackwardAxesTies(t *testing.T) {
	shape, axes := []int{2, 2, 2}, []int{0, 2}
	x := []float64{
		3, 1, // [0, 0, :]
		5, math.NaN(), // [0, 1, :]
		0, 3, // [1, 0, :]
		2, 2, // [1, 1, :]
	}
	y := ReduceForwardAxes("max", shape, axes, x, 0)
	if y[0] != 3 || !math.IsNaN(y[1]) {
		t.Fatalf("y = %v, want [3 NaN]", y)
	}
	dx := ReduceBackwardAxes("max", shape, axes, []float64{1, 1}, x, y, 0)
	want := []float64{0.5, 0, math.NaN(), math.NaN(), 0, 0.5, math.NaN(), math.NaN()}
	for i := range want {
		if dx[i] != want[i] && !(math.IsNaN(dx[i]) && math.IsNaN(want[i])) {
			t.Fatalf("dx = %v, want %v", dx, want)
		}
	}
	// var over the set: N = 4, mean of slice 0 = (3+1+0+3)/4.
	yv := ReduceForwardAxes("var", shape, axes, x, 1)
	dv := ReduceBackwardAxes("var", shape, axes, []float64{1, 1}, x, yv, 1)
	if m := 7.0 / 4; math.Abs(dv[0]-2.0/3*(3-m)) > 1e-15 || math.Abs(dv[4]-2.0/3*(0-m)) > 1e-15 {
		t.Fatalf("var dx = %v", dv)
	}
}
