package torchvec

import (
	"fmt"
	"math"
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
)

// Expect is the float64 reference of one gradient of a case, computed from
// the case's inputs and saved y, with each element's error scale: the sum
// of the magnitudes that PyTorch's formula rounds on its way to the value
// (at least |value|), against which Tol measures the rounding PyTorch and
// the kernels may differ by.
type Expect struct {
	Name  string
	Ref   []float64
	Scale []float64
}

// Reference computes the case's gradients with internal/ref, in the order
// of Grads.
func (c *Case) Reference() ([]Expect, error) {
	switch c.Family {
	case "binary":
		return c.binaryRef(), nil
	case "reduce":
		return c.reduceRef()
	case "scan":
		return c.scanRef()
	case "lppool":
		return c.lpPoolRef()
	}
	return nil, fmt.Errorf("torchvec: %s: unknown family %q", c.Name, c.Family)
}

// Scalar is the binary op's scalar as the plan takes it: alpha for add and
// sub (PyTorch's default 1 where the file has none), the weight for lerp.
func (c *Case) Scalar() float64 {
	switch c.Op {
	case "add", "sub":
		if c.Params.Alpha == 0 {
			return 1
		}
		return c.Params.Alpha
	case "lerp":
		return c.Params.Weight
	}
	return 0
}

func newExpect(name string, n int) Expect {
	return Expect{Name: name, Ref: make([]float64, n), Scale: make([]float64, n)}
}

func (c *Case) binaryRef() []Expect {
	dy, a, b := c.Tensors["dy"], c.Tensors["a"], c.Tensors["b"]
	da, db := newExpect("da", len(dy)), newExpect("db", len(dy))
	s := c.Scalar()
	for i := range dy {
		da.Ref[i], db.Ref[i] = ref.BinaryBackward(c.Op, dy[i], a[i], b[i], s)
		da.Scale[i], db.Scale[i] = math.Abs(da.Ref[i]), math.Abs(db.Ref[i])
		if c.Op == "pow" {
			// PyTorch rounds e-1 to the dtype, which moves a^(e-1) by
			// |ln a|*|e-1| roundings; a^e*ln a carries |e*ln a| of them
			// from Go's Pow in float64.
			ln := math.Abs(ref.Log(math.Abs(a[i])))
			da.Scale[i] *= 1 + finite(ln*math.Abs(b[i]-1))
			db.Scale[i] *= 1 + finite(ln*math.Abs(b[i]))
		}
	}
	return []Expect{da, db}
}

// finite is v, or 0 where v is not finite: a factor of an error scale
// that an infinite or NaN input makes meaningless.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// saturate is an error scale that overflowed float64 as the largest
// float64 (PyTorch's value carries no digit there), and a NaN one as 0.
func saturate(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 0):
		return math.MaxFloat64
	}
	return v
}

// yUlps is the rounding error of a saved output y of dt in units of
// eps*|y|: 1/2 where y is normal, more where it is subnormal (its ulp the
// smallest subnormal); 0 for 0, inf and NaN. The reference takes y as
// saved, PyTorch some of its formulas from unrounded intermediates.
func yUlps(dt dtype.DType, y float64) float64 {
	a := math.Abs(y)
	if a == 0 || math.IsInf(a, 0) || math.IsNaN(a) {
		return 0
	}
	return max(0.5, minSubnormal(dt)/(2*a*dtype.Epsilon(dt)))
}

// normAxis maps a negative axis to its index.
func normAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

func (c *Case) reduceRef() ([]Expect, error) {
	axis, err := normAxis(c.Params.Axis, len(c.Shape))
	if err != nil {
		return nil, fmt.Errorf("torchvec: %s: %w", c.Name, err)
	}
	keep := slices.Clone(c.Shape)
	keep[axis] = 1
	reduced := slices.Delete(slices.Clone(c.Shape), axis, axis+1)
	if !slices.Equal(c.OutShape, keep) && !slices.Equal(c.OutShape, reduced) {
		return nil, fmt.Errorf("torchvec: %s: out_shape %v is neither %v (keepdim) nor %v", c.Name, c.OutShape, keep, reduced)
	}
	x, y, dy := c.Tensors["x"], c.Tensors["y"], c.Tensors["dy"]
	e := newExpect("dx", len(x))
	v := ref.NewAxisSlices(c.Shape, axis)
	if v.K == 0 {
		return []Expect{e}, nil
	}
	cor := c.Params.Correction
	xs, dxs := make([]float64, v.K), make([]float64, v.K)
	for s := range v.Count() {
		v.Gather(x, s, xs)
		ref.ReduceBackward(c.Op, dy[s], xs, y[s], cor, dxs)
		v.Scatter(e.Ref, s, dxs)
		n := float64(v.K)
		meanAbs := 0.0
		for _, xv := range xs {
			meanAbs += math.Abs(xv) / n
		}
		yu := yUlps(c.DType, y[s])
		for j, d := range dxs {
			sc := math.Abs(d)
			switch c.Op {
			case "prod", "norm2", "std":
				// dx is proportional to y or 1/y.
				sc += math.Abs(d) * yu
			}
			switch c.Op {
			case "prod":
				// PyTorch's products of the others round once per factor.
				sc *= n
			case "logsumexp":
				// x - y rounds before exp: |x - y| roundings of the
				// result, and y's own rounding |y| of them.
				sc *= 2 + finite(math.Abs(xs[j]-y[s])) + yu*finite(math.Abs(y[s]))
			case "var", "std":
				// (factor*g)*(x - mean), with the mean summed and
				// rounded in the dtype: an error of a rounding of
				// |x| + mean |x| times the factor.
				gs := dy[s]
				if c.Op == "std" {
					gs = 0
					if y[s] != 0 {
						gs = dy[s] / (2 * y[s])
					}
				}
				f := 2 / (n - cor) * gs
				sc += finite(math.Abs(f) * (math.Abs(xs[j]) + meanAbs))
			}
			e.Scale[v.At(s, j)] = saturate(sc)
		}
	}
	return []Expect{e}, nil
}

func (c *Case) scanRef() ([]Expect, error) {
	axis, err := normAxis(c.Params.Axis, len(c.Shape))
	if err != nil {
		return nil, fmt.Errorf("torchvec: %s: %w", c.Name, err)
	}
	x, y, dy := c.Tensors["x"], c.Tensors["y"], c.Tensors["dy"]
	e := newExpect("dx", len(x))
	v := ref.NewAxisSlices(c.Shape, axis)
	if v.K == 0 {
		return []Expect{e}, nil
	}
	xs, ys, gs := make([]float64, v.K), make([]float64, v.K), make([]float64, v.K)
	for s := range v.Count() {
		v.Gather(x, s, xs)
		v.Gather(y, s, ys)
		v.Gather(dy, s, gs)
		dx, mag := ref.ScanBackwardMag(c.Op, gs, xs, ys, c.Params.Reverse)
		v.Scatter(e.Ref, s, dx)
		ymax := 0.0
		for _, yv := range ys {
			ymax = math.Max(ymax, finite(math.Abs(yv)))
		}
		var sub []float64
		if c.Op == "cumprod" {
			sub = subnormalTerms(c.DType, xs, ys, gs, c.Params.Reverse)
		}
		for k := range dx {
			// PyTorch's scans (and the reverse cumsum of its backward)
			// carry the running value in the dtype: up to n roundings of
			// the magnitude summed.
			sc := math.Abs(dx[k]) + mag[k]*float64(v.K+2)/8
			switch c.Op {
			case "logcumsumexp":
				// Its log-space form adds exponents of the size of x and
				// y, each rounded, then exponentiates, for the positive
				// and the negative terms of dy apart, and subtracts the
				// two: the roundings scale the magnitude of both (mag),
				// which exceeds |dx| where they cancel.
				sc += mag[k] * (finite(math.Abs(xs[k])) + ymax)
			case "cumprod":
				sc += sub[k]
			}
			e.Scale[v.At(s, k)] = saturate(sc)
		}
	}
	return []Expect{e}, nil
}

// subnormalTerms is, per element k of one cumprod slice (memory order),
// the error scale of PyTorch's rounding of the terms y_j*g_j of its sum
// Σ_{j>=k} y_j g_j / x_k (j in scan order, before the first zero) that
// fall below the dtype's smallest normal: each rounds to the dtype's
// subnormal grid, an error as large as rounding a value of the smallest
// normal magnitude, which the division by x_k scales by 1/|x_k| (large
// where x is itself subnormal, as where y underflows). The kernels and the
// reference multiply by y before the element instead and round once.
func subnormalTerms(dt dtype.DType, xs, ys, gs []float64, reverse bool) []float64 {
	n := len(xs)
	tiny := minSubnormal(dt) / dtype.Epsilon(dt)
	at := func(i int) int {
		if reverse {
			return n - 1 - i
		}
		return i
	}
	z1 := n // scan-order index of the first zero
	for i := range n {
		if xs[at(i)] == 0 {
			z1 = i
			break
		}
	}
	out := make([]float64, n)
	count := 0.0
	for i := z1 - 1; i >= 0; i-- {
		k := at(i)
		if t := math.Abs(ys[k] * gs[k]); t > 0 && t < tiny {
			count++
		}
		out[k] = finite(count * tiny / math.Abs(xs[k]))
	}
	return out
}

// LpPoolGeom is the case's pooling geometry; a 1d pool is the 2d pool with
// H = 1 and a window and stride of 1 along it.
func (c *Case) LpPoolGeom() (ref.LpPoolGeom, error) {
	p := c.Params
	g := ref.LpPoolGeom{P: p.P, CeilMode: p.CeilMode, H: 1, KH: 1, SH: 1}
	switch {
	case c.Op == "lp_pool1d" && len(c.Shape) == 3 && len(p.Kernel) == 1 && len(p.Stride) == 1:
		g.N, g.C, g.W = c.Shape[0], c.Shape[1], c.Shape[2]
		g.KW, g.SW = p.Kernel[0], p.Stride[0]
	case c.Op == "lp_pool2d" && len(c.Shape) == 4 && len(p.Kernel) == 2 && len(p.Stride) == 2:
		g.N, g.C, g.H, g.W = c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3]
		g.KH, g.KW, g.SH, g.SW = p.Kernel[0], p.Kernel[1], p.Stride[0], p.Stride[1]
	default:
		return g, fmt.Errorf("torchvec: %s: %s with shape %v, kernel %v and stride %v", c.Name, c.Op, c.Shape, p.Kernel, p.Stride)
	}
	if g.KH < 1 || g.KW < 1 || g.SH < 1 || g.SW < 1 {
		return g, fmt.Errorf("torchvec: %s: kernel %v and stride %v must be >= 1", c.Name, p.Kernel, p.Stride)
	}
	ho, wo := g.Out()
	want := []int{g.N, g.C, wo}
	if c.Op == "lp_pool2d" {
		want = []int{g.N, g.C, ho, wo}
	}
	if !slices.Equal(c.OutShape, want) {
		return g, fmt.Errorf("torchvec: %s: PyTorch's output shape %v differs from %v (ref.LpPoolOutputSize)", c.Name, c.OutShape, want)
	}
	return g, nil
}

func (c *Case) lpPoolRef() ([]Expect, error) {
	g, err := c.LpPoolGeom()
	if err != nil {
		return nil, err
	}
	x, y, dy := c.Tensors["x"], c.Tensors["y"], c.Tensors["dy"]
	e := Expect{Name: "dx", Ref: ref.LpPoolBackward(g, dy, x, y), Scale: ref.LpPoolMagnitude(g, dy, x, y)}
	// PyTorch's composite rounds about six times per window term, and
	// takes q^(1/p-1) of the pooled sum where the reference takes
	// y^(1-p) of the rounded output: |p-1| and |1/p-1| roundings more,
	// and |p-1| times y's own rounding, weighted per window (yw).
	yw := make([]float64, len(dy))
	for w := range dy {
		yw[w] = math.Abs(dy[w]) * yUlps(c.DType, y[w])
	}
	magY := ref.LpPoolMagnitude(g, yw, x, y)
	f := 1 + math.Abs(g.P-1) + math.Abs(1/g.P-1)
	for i := range e.Scale {
		e.Scale[i] = saturate(math.Abs(e.Ref[i]) + f*e.Scale[i] + math.Abs(g.P-1)*magY[i])
	}
	return []Expect{e}, nil
}

// axisView is ref.AxisSlices with the inverse of At.
type axisView struct{ ref.AxisSlices }

func refSlices(shape []int, axis int) axisView { return axisView{ref.NewAxisSlices(shape, axis)} }

// locate returns the slice s and position j of row-major index i
// (At(s, j) == i).
func (v axisView) locate(i int) (s, j int) {
	rest := i / v.Inner
	return (rest/v.K)*v.Inner + i%v.Inner, rest % v.K
}
