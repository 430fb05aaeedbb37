package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// AxesSlices views a row-major tensor as the slices over a set of axes:
// slice s is an index over the kept dims (row-major, the order of dy and y
// in either keepdim form), position j an index over the reduced dims
// (row-major, outermost first). The multi-axis reductions' reference works
// slice by slice on it, as the single-axis one does on AxisSlices.
type AxesSlices struct {
	// K is the elements per slice: the product of the reduced dims.
	K          int
	count      int
	kept, rdim []int // sizes, outermost first
	kst, rst   []int // their row-major strides in the tensor
}

// NewAxesSlices is the view of shape over axes (normalized, each in
// 0..len(shape)-1, in any order, no duplicates).
func NewAxesSlices(shape []int, axes []int) AxesSlices {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	v := AxesSlices{K: 1, count: 1}
	stride := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		stride[d] = s
		s *= shape[d]
	}
	for d, n := range shape {
		if red[d] {
			v.K *= n
			v.rdim, v.rst = append(v.rdim, n), append(v.rst, stride[d])
		} else {
			v.count *= n
			v.kept, v.kst = append(v.kept, n), append(v.kst, stride[d])
		}
	}
	return v
}

// Count is the number of slices.
func (v AxesSlices) Count() int { return v.count }

// Len is the elements per slice, K.
func (v AxesSlices) Len() int { return v.K }

// At is the row-major index of position j of slice s.
func (v AxesSlices) At(s, j int) int {
	i := 0
	for d := len(v.kept) - 1; d >= 0; d-- {
		i += (s % v.kept[d]) * v.kst[d]
		s /= v.kept[d]
	}
	for d := len(v.rdim) - 1; d >= 0; d-- {
		i += (j % v.rdim[d]) * v.rst[d]
		j /= v.rdim[d]
	}
	return i
}

// Gather copies slice s of t into buf (len(buf) == K).
func (v AxesSlices) Gather(t []float64, s int, buf []float64) {
	for j := range buf {
		buf[j] = t[v.At(s, j)]
	}
}

// Scatter copies buf into slice s of t.
func (v AxesSlices) Scatter(t []float64, s int, buf []float64) {
	for j, x := range buf {
		t[v.At(s, j)] = x
	}
}

// ReduceForwardAxes is the forward of op over axes of x (row-major, of
// shape): one output per slice of NewAxesSlices, in the order of dy and y.
func ReduceForwardAxes(op string, shape, axes []int, x []float64, correction float64) []float64 {
	v := NewAxesSlices(shape, axes)
	y := make([]float64, v.Count())
	buf := make([]float64, v.K)
	for s := range y {
		v.Gather(x, s, buf)
		y[s] = ReduceForward(op, buf, correction)
	}
	return y
}

// ReduceBackwardAxes is the backward of op over axes: dx (of shape) from
// dy and y (one value per slice, in either keepdim form's order) and x,
// each slice by ReduceBackward, so the whole reduced set is one slice
// (max and min split g among its ties, var and std take its element
// count, prod counts its zeros).
func ReduceBackwardAxes(op string, shape, axes []int, dy, x, y []float64, correction float64) []float64 {
	v := NewAxesSlices(shape, axes)
	n := v.Count() * v.K
	dx := make([]float64, n)
	buf := make([]float64, v.K)
	out := make([]float64, v.K)
	for s := 0; s < v.Count() && v.K > 0; s++ {
		if x != nil {
			v.Gather(x, s, buf)
		}
		yv := 0.0
		if y != nil {
			yv = y[s]
		}
		ReduceBackward(op, dy[s], buf, yv, correction, out)
		v.Scatter(dx, s, out)
	}
	return dx
}

func init() {
	checks = append(checks, Check{"reduce over several axes, finite differences", checkReduceAxesFD})
}

// checkReduceAxesFD compares ReduceBackwardAxes with central differences of
// L = Σ_s dy_s*y_s (y from ReduceForwardAxes) over dims (0, 2) of
// [3, 4, 5] and dims (1, 3) of [2, 3, 2, 3], for every op, on data away
// from kinks (distinct values for max and min, no zeros for prod).
func checkReduceAxesFD() error {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ shape, axes []int }{{[]int{3, 4, 5}, []int{0, 2}}, {[]int{2, 3, 2, 3}, []int{3, 1}}} {
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		for _, op := range []string{"sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"} {
			x := make([]float64, n)
			for i := range x {
				x[i] = 0.5 + rng.Float64() + float64(i)*1e-3 // distinct, positive
				if rng.IntN(2) == 0 && op != "norm2" {
					x[i] = -x[i]
				}
			}
			y := ReduceForwardAxes(op, c.shape, c.axes, x, 1)
			dy := make([]float64, len(y))
			for s := range dy {
				dy[s] = rng.NormFloat64()
			}
			dx := ReduceBackwardAxes(op, c.shape, c.axes, dy, x, y, 1)
			loss := func() float64 {
				l := 0.0
				for s, v := range ReduceForwardAxes(op, c.shape, c.axes, x, 1) {
					l += dy[s] * v
				}
				return l
			}
			const h = 1e-6
			for i := range x {
				x0 := x[i]
				x[i] = x0 + h
				lp := loss()
				x[i] = x0 - h
				lm := loss()
				x[i] = x0
				fd := (lp - lm) / (2 * h)
				if math.Abs(fd-dx[i]) > 1e-5*(1+math.Abs(fd)) {
					return fmt.Errorf("%s over %v of %v: dx[%d] = %v, finite difference %v", op, c.axes, c.shape, i, dx[i], fd)
				}
			}
		}
	}
	return nil
}
