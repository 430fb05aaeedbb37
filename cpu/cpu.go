// Package cpu computes the forward and the backward of every op of package
// ops on the host, in float64, with the same descriptors as the GPU plans:
// so that a framework can check its GPU gradients, or run small models, on
// a machine without a GPU.
//
// The formulas and edge rules (ties, zeros, NaN, infinities) are the
// kernels', which follow PyTorch's autograd; the arithmetic is float64
// throughout, so the results are the float64 truth of the same formulas,
// not the kernels' bits: a kernel in f32, f16 or bf16 computes in f32 and
// rounds once, and agrees with these to within its dtype's rounding (to
// compare, round the inputs to the dtype first with dtype.Round). Tensors
// are contiguous row-major []float64 of the descriptor's shapes; dy and y
// of a reduction have the reduced shape's elements (with the axis, or the
// axes of ReduceDesc.Axes, kept as 1 or removed: the same order). Inputs
// an op does not read may be nil.
//
// It is plain, single-threaded Go that allocates its results: a var
// backward over 2^20 elements takes about 8 ms on one x86-64 core
// (BenchmarkReduceBackward), pow, atan2 and the pooling windows more per
// element. It is a reference and a fallback for small tensors, not a fast
// CPU backend.
package cpu

import (
	"fmt"

	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// numel is the element count of shape.
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// operand checks that a slice has n elements; a nil slice stands for an
// input the op does not read and becomes n zeros when optional.
func operand(fn, name string, v []float64, n int, optional bool) ([]float64, error) {
	if v == nil && optional {
		return make([]float64, n), nil
	}
	if len(v) != n {
		return nil, fmt.Errorf("cpu: %s: %s has %d elements, the shape needs %d", fn, name, len(v), n)
	}
	return v, nil
}

// binaryScalar is the scalar the op takes: alpha for add and sub (0 means
// 1, PyTorch's default), the weight for lerp.
func binaryScalar(d ops.BinaryDesc) float64 {
	switch d.Op {
	case ops.BinaryAdd, ops.BinarySub:
		if d.Alpha == 0 {
			return 1
		}
		return d.Alpha
	case ops.BinaryLerp:
		return d.Weight
	}
	return 0
}

// binaryShapes are a's and b's shapes from a validated descriptor:
// AShape and BShape where set, else Shape.
func binaryShapes(desc ops.BinaryDesc) (as, bs []int) {
	as, bs = desc.AShape, desc.BShape
	if as == nil {
		as = desc.Shape
	}
	if bs == nil {
		bs = desc.Shape
	}
	return as, bs
}

// BinaryForward returns y = op(a, b) elementwise, a and b broadcast to
// desc.Shape where AShape or BShape is set.
func BinaryForward(desc ops.BinaryDesc, a, b []float64) ([]float64, error) {
	if _, err := ops.NewBinaryBackward(desc); err != nil {
		return nil, err
	}
	as, bs := binaryShapes(desc)
	a, err := operand("BinaryForward", "a", a, numel(as), false)
	if err != nil {
		return nil, err
	}
	if b, err = operand("BinaryForward", "b", b, numel(bs), false); err != nil {
		return nil, err
	}
	op, s := desc.Op.String(), binaryScalar(desc)
	ia, ib := ref.BroadcastIndex(as, desc.Shape), ref.BroadcastIndex(bs, desc.Shape)
	y := make([]float64, numel(desc.Shape))
	for i := range y {
		y[i] = ref.BinaryForward(op, a[ia[i]], b[ib[i]], s)
	}
	return y, nil
}

// BinaryBackward returns the gradients of a and b for upstream gradient
// dy. a and b may be nil for add, sub and lerp, which do not read them.
// With AShape or BShape set, da and db have a's and b's shapes and hold
// the gradients summed over the dims each was broadcast along.
func BinaryBackward(desc ops.BinaryDesc, dy, a, b []float64) (da, db []float64, err error) {
	if _, err := ops.NewBinaryBackward(desc); err != nil {
		return nil, nil, err
	}
	as, bs := binaryShapes(desc)
	op, s := desc.Op.String(), binaryScalar(desc)
	optional := !ref.BinaryNeedsSaved(op)
	if dy, err = operand("BinaryBackward", "dy", dy, numel(desc.Shape), false); err != nil {
		return nil, nil, err
	}
	if a, err = operand("BinaryBackward", "a", a, numel(as), optional); err != nil {
		return nil, nil, err
	}
	if b, err = operand("BinaryBackward", "b", b, numel(bs), optional); err != nil {
		return nil, nil, err
	}
	da, db = ref.BinaryBroadcastBackward(op, desc.Shape, as, bs, dy, a, b, s)
	return da, db, nil
}

// normAxis is desc's axis in 0..rank-1 (the constructors have checked it).
func normAxis(axis, rank int) int {
	if axis < 0 {
		return axis + rank
	}
	return axis
}

// sliceView is a tensor seen as the slices of a reduction (ref.AxisSlices,
// ref.AxesSlices).
type sliceView interface {
	Count() int
	Len() int
	Gather(t []float64, s int, buf []float64)
	Scatter(t []float64, s int, buf []float64)
}

// reduceView is desc's slices: over Axes where it is not nil, else along
// Axis (the constructors have checked both).
func reduceView(desc ops.ReduceDesc) sliceView {
	if desc.Axes == nil {
		return ref.NewAxisSlices(desc.Shape, normAxis(desc.Axis, len(desc.Shape)))
	}
	axes := make([]int, len(desc.Axes))
	for i, a := range desc.Axes {
		axes[i] = normAxis(a, len(desc.Shape))
	}
	return ref.NewAxesSlices(desc.Shape, axes)
}

// ReduceForward returns y, one value per slice along the axis (or over the
// axes of desc.Axes), in the order of the reduced shape.
func ReduceForward(desc ops.ReduceDesc, x []float64) ([]float64, error) {
	if _, err := ops.NewReduceBackward(desc); err != nil {
		return nil, err
	}
	x, err := operand("ReduceForward", "x", x, numel(desc.Shape), false)
	if err != nil {
		return nil, err
	}
	v := reduceView(desc)
	y := make([]float64, v.Count())
	buf := make([]float64, v.Len())
	for s := range y {
		v.Gather(x, s, buf)
		y[s] = ref.ReduceForward(desc.Op.String(), buf, desc.Correction)
	}
	return y, nil
}

// ReduceBackward returns dx for upstream gradient dy (one value per slice).
// x and y may be nil for sum and mean, which do not read them.
func ReduceBackward(desc ops.ReduceDesc, dy, x, y []float64) ([]float64, error) {
	if _, err := ops.NewReduceBackward(desc); err != nil {
		return nil, err
	}
	op := desc.Op.String()
	v := reduceView(desc)
	optional := !ref.ReduceNeedsSaved(op)
	dy, err := operand("ReduceBackward", "dy", dy, v.Count(), false)
	if err != nil {
		return nil, err
	}
	if y, err = operand("ReduceBackward", "y", y, v.Count(), optional); err != nil {
		return nil, err
	}
	if x, err = operand("ReduceBackward", "x", x, numel(desc.Shape), optional); err != nil {
		return nil, err
	}
	dx := make([]float64, len(x))
	xs, ds := make([]float64, v.Len()), make([]float64, v.Len())
	for s := range dy {
		v.Gather(x, s, xs)
		ref.ReduceBackward(op, dy[s], xs, y[s], desc.Correction, ds)
		v.Scatter(dx, s, ds)
	}
	return dx, nil
}

// ScanForward returns y, the scan of x along the axis.
func ScanForward(desc ops.ScanDesc, x []float64) ([]float64, error) {
	if _, err := ops.NewScanBackward(desc); err != nil {
		return nil, err
	}
	x, err := operand("ScanForward", "x", x, numel(desc.Shape), false)
	if err != nil {
		return nil, err
	}
	v := ref.NewAxisSlices(desc.Shape, normAxis(desc.Axis, len(desc.Shape)))
	y := make([]float64, len(x))
	buf := make([]float64, v.K)
	for s := 0; s < v.Count(); s++ {
		v.Gather(x, s, buf)
		v.Scatter(y, s, ref.ScanForward(desc.Op.String(), buf, desc.Reverse))
	}
	return y, nil
}

// ScanBackward returns dx for upstream gradient dy. x and y may be nil
// where the op does not read them (ScanOp.Saved).
func ScanBackward(desc ops.ScanDesc, dy, x, y []float64) ([]float64, error) {
	if _, err := ops.NewScanBackward(desc); err != nil {
		return nil, err
	}
	op, n := desc.Op.String(), numel(desc.Shape)
	needX, needY := ref.ScanSaved(op)
	dy, err := operand("ScanBackward", "dy", dy, n, false)
	if err != nil {
		return nil, err
	}
	if x, err = operand("ScanBackward", "x", x, n, !needX); err != nil {
		return nil, err
	}
	if y, err = operand("ScanBackward", "y", y, n, !needY); err != nil {
		return nil, err
	}
	v := ref.NewAxisSlices(desc.Shape, normAxis(desc.Axis, len(desc.Shape)))
	dx := make([]float64, n)
	gs, xs, ys := make([]float64, v.K), make([]float64, v.K), make([]float64, v.K)
	for s := 0; s < v.Count(); s++ {
		v.Gather(dy, s, gs)
		v.Gather(x, s, xs)
		v.Gather(y, s, ys)
		v.Scatter(dx, s, ref.ScanBackward(op, gs, xs, ys, desc.Reverse))
	}
	return dx, nil
}

func pool2dGeom(d ops.LpPool2dDesc) ref.LpPoolGeom {
	return ref.LpPoolGeom{N: d.N, C: d.C, H: d.H, W: d.W, KH: d.KernelH, KW: d.KernelW, SH: d.StrideH, SW: d.StrideW, P: d.P, CeilMode: d.CeilMode}
}

func pool1dGeom(d ops.LpPool1dDesc) ref.LpPoolGeom {
	return ref.LpPoolGeom{N: d.N, C: d.C, H: 1, W: d.L, KH: 1, KW: d.Kernel, SH: 1, SW: d.Stride, P: d.P, CeilMode: d.CeilMode}
}

// lpPool runs the forward (dy nil) or the backward of a pool of geometry g.
func lpPool(fn string, g ref.LpPoolGeom, dy, x, y []float64, backward bool) ([]float64, error) {
	ho, wo := g.Out()
	nIn, nOut := g.N*g.C*g.H*g.W, g.N*g.C*ho*wo
	x, err := operand(fn, "x", x, nIn, false)
	if err != nil {
		return nil, err
	}
	if !backward {
		return ref.LpPoolForward(g, x), nil
	}
	if dy, err = operand(fn, "dy", dy, nOut, false); err != nil {
		return nil, err
	}
	if y, err = operand(fn, "y", y, nOut, false); err != nil {
		return nil, err
	}
	return ref.LpPoolBackward(g, dy, x, y), nil
}

// LpPool2dForward returns y [N, C, Ho, Wo] for x [N, C, H, W].
func LpPool2dForward(desc ops.LpPool2dDesc, x []float64) ([]float64, error) {
	if _, err := ops.NewLpPool2dBackward(desc); err != nil {
		return nil, err
	}
	return lpPool("LpPool2dForward", pool2dGeom(desc), nil, x, nil, false)
}

// LpPool2dBackward returns dx [N, C, H, W] for dy and the saved y
// [N, C, Ho, Wo] and x.
func LpPool2dBackward(desc ops.LpPool2dDesc, dy, x, y []float64) ([]float64, error) {
	if _, err := ops.NewLpPool2dBackward(desc); err != nil {
		return nil, err
	}
	return lpPool("LpPool2dBackward", pool2dGeom(desc), dy, x, y, true)
}

// LpPool1dForward returns y [N, C, Lout] for x [N, C, L].
func LpPool1dForward(desc ops.LpPool1dDesc, x []float64) ([]float64, error) {
	if _, err := ops.NewLpPool1dBackward(desc); err != nil {
		return nil, err
	}
	return lpPool("LpPool1dForward", pool1dGeom(desc), nil, x, nil, false)
}

// LpPool1dBackward returns dx [N, C, L] for dy and the saved y [N, C, Lout]
// and x.
func LpPool1dBackward(desc ops.LpPool1dDesc, dy, x, y []float64) ([]float64, error) {
	if _, err := ops.NewLpPool1dBackward(desc); err != nil {
		return nil, err
	}
	return lpPool("LpPool1dBackward", pool1dGeom(desc), dy, x, y, true)
}
