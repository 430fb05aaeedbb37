package main

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// Reduce, scan and LP-pool cases of bench/README.md. The traffic model:
// reduce sum/mean n + m, other reductions 2n + 2m (x, dx; dy, y with
// m = n/k); scans cumsum 2n, cummax/cummin 3n, cumprod/logcumsumexp 4n;
// LP pool 2 n_in + 2 n_out.
func init() {
	const rows, cols = 4096, 4096
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, axis := range []int{1, 0} {
			for _, op := range ops.ReduceOps() {
				n, m := int64(rows*cols), int64(rows)
				elems := 2*n + 2*m
				if op == ops.ReduceSum || op == ops.ReduceMean {
					elems = n + m
				}
				benchCases = append(benchCases, benchCase{
					name: fmt.Sprintf("reduce/%s/%s/%dx%d/axis%d", op, dt.Suffix(), rows, cols, axis), op: op.String(), dt: dt, elems: elems,
					setup: func(b *benchEnv) (func() error, error) { return setupReduce(b, op, dt, []int{rows, cols}, axis) },
				})
			}
			for _, op := range ops.ScanOps() {
				per := map[ops.ScanOp]int64{ops.ScanCumsum: 2, ops.ScanCummax: 3, ops.ScanCummin: 3, ops.ScanCumprod: 4, ops.ScanLogcumsumexp: 4}[op]
				benchCases = append(benchCases, benchCase{
					name: fmt.Sprintf("scan/%s/%s/%dx%d/axis%d", op, dt.Suffix(), rows, cols, axis), op: op.String(), dt: dt, elems: per * rows * cols,
					setup: func(b *benchEnv) (func() error, error) { return setupScan(b, op, dt, []int{rows, cols}, axis) },
				})
			}
		}
		// Several axes: BatchNorm-style statistics over dims (0, 2, 3) (the
		// seg kernel) and the last two dims (one group: the single-axis
		// plan on the [8192, 4096] view).
		for _, mc := range benchAxesShapes {
			for _, op := range []ops.ReduceOp{ops.ReduceSum, ops.ReduceMean, ops.ReduceVar, ops.ReduceMax} {
				n := numel(mc.shape)
				m := numel(keepdimAxes(mc.shape, mc.axes))
				elems := 2*n + 2*m
				if op == ops.ReduceSum || op == ops.ReduceMean {
					elems = n + m
				}
				benchCases = append(benchCases, benchCase{
					name: fmt.Sprintf("reduce/%s/%s/%s/axes%s", op, dt.Suffix(), shapeName(mc.shape), axesName(mc.axes)), op: op.String(), dt: dt, elems: elems,
					setup: func(b *benchEnv) (func() error, error) { return setupReduceAxes(b, op, dt, mc.shape, mc.axes) },
				})
			}
		}
		for _, k := range []int{2, 3} {
			benchCases = append(benchCases, benchCase{
				name: fmt.Sprintf("lppool2d/p2/%s/32x64x128x128/k%ds2", dt.Suffix(), k), op: "lppool2d", dt: dt,
				elems: lppoolElems(32*64, 128, 128, k, 2, 1),
				setup: func(b *benchEnv) (func() error, error) {
					return setupLpPool2d(b, ops.LpPool2dDesc{DType: dt, N: 32, C: 64, H: 128, W: 128,
						KernelH: k, KernelW: k, StrideH: 2, StrideW: 2, P: 2})
				},
			})
		}
		benchCases = append(benchCases, benchCase{
			name: fmt.Sprintf("lppool1d/p2/%s/64x256x4096/k4s4", dt.Suffix()), op: "lppool1d", dt: dt,
			elems: lppoolElems(64*256, 1, 4096, 4, 4, 0),
			setup: func(b *benchEnv) (func() error, error) { return setupLpPool1d(b, dt) },
		})
	}
}

// lppoolElems is 2 n_in + 2 n_out for square windows (k, s) over h x w
// planes; dims2 is 1 for 2d pooling (h pooled too), 0 for 1d.
func lppoolElems(planes, h, w, k, s, dims2 int) int64 {
	ow := (w-k)/s + 1
	oh := h
	if dims2 == 1 {
		oh = (h-k)/s + 1
	}
	return 2*int64(planes*h*w) + 2*int64(planes*oh*ow)
}

func (b *benchEnv) workspace(size int64) (driver.Buffer, error) {
	if size == 0 {
		return driver.Buffer{}, nil
	}
	return b.upload(dtype.F32, (size+3)/4, nil)
}

func setupReduce(b *benchEnv, op ops.ReduceOp, dt dtype.DType, shape []int, axis int) (func() error, error) {
	kshape := keepdim(shape, axis)
	gen := b.normal
	if op == ops.ReduceProd {
		gen = b.nearOne // values near 1 (bench/README.md): the product stays finite
	}
	// y is the true forward of the stored x (max/min take their fast path
	// only where exactly one element equals y, as in real use).
	xv := b.values(dt, numel(shape), gen)
	yv := reduceForward(op, xv, shape, axis)
	dy := b.values(dt, numel(kshape), b.normal)
	return reduceRun(b, ops.ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: 1}, kshape,
		dtype.Encode(dt, xv), dtype.Encode(dt, yv), dtype.Encode(dt, dy))
}

// reduceForward is y (one value per slice, in slice order) of x along axis,
// in float64, with var's and std's correction 1 as the plans take it.
func reduceForward(op ops.ReduceOp, xv []float64, shape []int, axis int) []float64 {
	yv := make([]float64, ref.NewAxisSlices(shape, axis).Count())
	reduceForwardTo(op, xv, shape, axis, yv)
	return yv
}

// reduceForwardTo is reduceForward writing y into yv.
func reduceForwardTo(op ops.ReduceOp, xv []float64, shape []int, axis int, yv []float64) {
	forSlices(xv, nil, shape, axis, func(s int, in, _ []float64) {
		yv[s] = ref.ReduceForward(op.String(), in, 1)
	})
}

// reduceRun uploads the encoded x, y and dy (of shape kshape, the
// keepdim form) of the reduce backward desc, a zeroed dx and the
// workspace, and returns the plan's Run.
func reduceRun(b *benchEnv, desc ops.ReduceDesc, kshape []int, xb, yb, dyb []byte) (func() error, error) {
	plan, err := ops.NewReduceBackward(desc)
	if err != nil {
		return nil, err
	}
	dt, shape := desc.DType, desc.Shape
	var t [3]driver.Buffer
	for i, enc := range [][]byte{dyb, xb, yb} {
		if t[i], err = b.uploadBytes(enc); err != nil {
			return nil, err
		}
	}
	dx, err := b.upload(dt, numel(shape), nil)
	if err != nil {
		return nil, err
	}
	ws, err := b.workspace(plan.WorkspaceSize())
	if err != nil {
		return nil, err
	}
	args := &ops.ReduceArgs{DY: ops.NewTensor(t[0], dt, kshape...), X: ops.NewTensor(t[1], dt, shape...),
		Y: ops.NewTensor(t[2], dt, kshape...), DX: ops.NewTensor(dx, dt, shape...), Workspace: ws}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}

func setupScan(b *benchEnv, op ops.ScanOp, dt dtype.DType, shape []int, axis int) (func() error, error) {
	gen := b.normal
	if op == ops.ScanCumprod {
		gen = b.nearOne
	}
	// y is the true forward of the stored x.
	xv := b.values(dt, numel(shape), gen)
	yv := scanForward(op, xv, shape, axis)
	dy := b.values(dt, numel(shape), b.normal)
	return scanRun(b, op, dt, shape, axis, dtype.Encode(dt, xv), dtype.Encode(dt, yv), dtype.Encode(dt, dy))
}

// benchAxesShapes are the multi-axis reduce cases (bench/README.md): the
// statistics of a BatchNorm over an early and a late layer's activations
// (segments of 3136 and of 49 elements, which take the seg kernel's
// 16-byte and its element walk), and of a LayerNorm-like pair of dims.
var benchAxesShapes = []struct{ shape, axes []int }{
	{[]int{32, 256, 56, 56}, []int{0, 2, 3}},
	{[]int{256, 2048, 7, 7}, []int{0, 2, 3}},
	{[]int{64, 128, 64, 64}, []int{2, 3}},
}

// shapeName is shape as case names spell it, e.g. "32x256x56x56".
func shapeName(shape []int) string {
	s := ""
	for i, d := range shape {
		if i > 0 {
			s += "x"
		}
		s += fmt.Sprint(d)
	}
	return s
}

// axesName is axes as case names spell them, e.g. "0,2,3".
func axesName(axes []int) string {
	s := ""
	for i, a := range axes {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(a)
	}
	return s
}

// keepdimAxes is shape with every axis of axes set to 1.
func keepdimAxes(shape, axes []int) []int {
	k := append([]int(nil), shape...)
	for _, a := range axes {
		k[a] = 1
	}
	return k
}

// setupReduceAxes is setupReduce over several axes: y is the true forward
// of the stored x over the whole set (var with correction 1).
func setupReduceAxes(b *benchEnv, op ops.ReduceOp, dt dtype.DType, shape, axes []int) (func() error, error) {
	kshape := keepdimAxes(shape, axes)
	xv := b.values(dt, numel(shape), b.normal)
	v := ref.NewAxesSlices(shape, axes)
	yv := make([]float64, v.Count())
	parallel(v.Count(), func(lo, hi int) {
		buf := make([]float64, v.K)
		for s := lo; s < hi; s++ {
			v.Gather(xv, s, buf)
			yv[s] = ref.ReduceForward(op.String(), buf, 1)
		}
	})
	dy := b.values(dt, numel(kshape), b.normal)
	return reduceRun(b, ops.ReduceDesc{Op: op, DType: dt, Shape: shape, Axes: axes, Correction: 1}, kshape,
		dtype.Encode(dt, xv), dtype.Encode(dt, yv), dtype.Encode(dt, dy))
}

// scanForward is y of x scanned along axis, in float64.
func scanForward(op ops.ScanOp, xv []float64, shape []int, axis int) []float64 {
	yv := make([]float64, len(xv))
	scanForwardTo(op, xv, shape, axis, yv)
	return yv
}

// scanForwardTo is scanForward writing y into yv.
func scanForwardTo(op ops.ScanOp, xv []float64, shape []int, axis int, yv []float64) {
	forSlices(xv, yv, shape, axis, func(_ int, in, out []float64) {
		if op != ops.ScanLogcumsumexp || !logcumsumexpTo(in, out) {
			ref.ScanForwardTo(op.String(), in, false, out)
		}
	})
}

// logcumsumexpTo writes the logcumsumexp of x into y and reports true, or
// reports false, writing nothing meaningful, if x holds a NaN or an
// infinity. It is ref.ScanForward's forward to within float64 rounding,
// taken as y_k = m + log(s) with m the running max and s = Σ exp(x_i - m):
// only a compare and an add are on the loop's dependency chain, where
// ref's logaddexp chain waits on an exp and a log1p per element (three
// times slower over the set's 2^24-element slices).
func logcumsumexpTo(x, y []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	if len(x) == 0 {
		return true
	}
	m, s := x[0], 1.0
	y[0] = m
	for k := 1; k < len(x); k++ {
		if v := x[k]; v > m {
			s = s*math.Exp(m-v) + 1
			m = v
		} else {
			s += math.Exp(v - m)
		}
		y[k] = m + math.Log(s)
	}
	return true
}

// scanRun uploads the encoded x, y and dy of a scan backward and a dx, and
// returns the plan's Run.
func scanRun(b *benchEnv, op ops.ScanOp, dt dtype.DType, shape []int, axis int, xb, yb, dyb []byte) (func() error, error) {
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: shape, Axis: axis})
	if err != nil {
		return nil, err
	}
	var t [4]driver.Buffer
	for i, enc := range [][]byte{dyb, xb, yb} {
		if t[i], err = b.uploadBytes(enc); err != nil {
			return nil, err
		}
	}
	if t[3], err = b.upload(dt, numel(shape), nil); err != nil {
		return nil, err
	}
	ws, err := b.workspace(plan.WorkspaceSize())
	if err != nil {
		return nil, err
	}
	args := &ops.ScanArgs{DY: ops.NewTensor(t[0], dt, shape...), X: ops.NewTensor(t[1], dt, shape...),
		Y: ops.NewTensor(t[2], dt, shape...), DX: ops.NewTensor(t[3], dt, shape...), Workspace: ws}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}

// lppoolArgs uploads x, y, dy and an output for input and output shapes.
func (b *benchEnv) lppoolArgs(dt dtype.DType, in, out []int) (*ops.LpPoolArgs, error) {
	nin, nout := int64(1), int64(1)
	for i := range in {
		nin *= int64(in[i])
		nout *= int64(out[i])
	}
	x, err := b.upload(dt, nin, b.normal)
	if err != nil {
		return nil, err
	}
	y, err := b.upload(dt, nout, b.positive)
	if err != nil {
		return nil, err
	}
	dy, err := b.upload(dt, nout, b.normal)
	if err != nil {
		return nil, err
	}
	dx, err := b.upload(dt, nin, nil)
	if err != nil {
		return nil, err
	}
	return &ops.LpPoolArgs{DY: ops.NewTensor(dy, dt, out...), X: ops.NewTensor(x, dt, in...),
		Y: ops.NewTensor(y, dt, out...), DX: ops.NewTensor(dx, dt, in...)}, nil
}

func setupLpPool2d(b *benchEnv, desc ops.LpPool2dDesc) (func() error, error) {
	plan, err := ops.NewLpPool2dBackward(desc)
	if err != nil {
		return nil, err
	}
	args, err := b.lppoolArgs(desc.DType, []int{desc.N, desc.C, desc.H, desc.W}, plan.OutputShape())
	if err != nil {
		return nil, err
	}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}

func setupLpPool1d(b *benchEnv, dt dtype.DType) (func() error, error) {
	plan, err := ops.NewLpPool1dBackward(ops.LpPool1dDesc{DType: dt, N: 64, C: 256, L: 4096, Kernel: 4, Stride: 4, P: 2})
	if err != nil {
		return nil, err
	}
	args, err := b.lppoolArgs(dt, []int{64, 256, 4096}, plan.OutputShape())
	if err != nil {
		return nil, err
	}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}

// numel is the element count of shape.
func numel(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// keepdim is shape with the axis set to 1: the shape of a reduction's y and dy.
func keepdim(shape []int, axis int) []int {
	k := append([]int(nil), shape...)
	k[axis] = 1
	return k
}

// forSlices calls f for every slice s along axis of the row-major tensor
// vals (any rank; the bench uses 1 and 2): in holds the slice's elements,
// and where out (a tensor of vals' shape) is not nil, what f leaves in
// outSlice becomes slice s of out; f must not modify in, and outSlice's
// contents on entry are undefined. The calls run on one goroutine per CPU
// at once, so f must write nothing shared but what belongs to slice s.
// Contiguous slices are passed as views; strided ones are gathered, and
// scattered back, a tile of neighbouring slices at a time, so that memory
// is walked in runs rather than one element per cache line.
func forSlices(vals, out []float64, shape []int, axis int, f func(s int, in, outSlice []float64)) {
	v := ref.NewAxisSlices(shape, axis)
	if v.Inner == 1 {
		parallel(v.Count(), func(lo, hi int) {
			for s := lo; s < hi; s++ {
				var o []float64
				if out != nil {
					o = out[s*v.K : (s+1)*v.K]
				}
				f(s, vals[s*v.K:(s+1)*v.K], o)
			}
		})
		return
	}
	// A tile is up to 64 slices of neighbouring inner index, at most about
	// 2 MiB of float64 unless one slice is longer. In the tile buffers the
	// slices lie ks apart, K padded by 16 so that the 64 elements of one
	// row do not all fall in one cache set when K is a power of two.
	tile := max(1, min(64, v.Inner, (1<<18)/v.K))
	ks := v.K + 16
	perOuter := (v.Inner + tile - 1) / tile
	parallel(v.Outer*perOuter, func(lo, hi int) {
		in := getScratch(tile * ks)
		defer putScratch(in)
		var ob []float64
		if out != nil {
			ob = getScratch(tile * ks)
			defer putScratch(ob)
		}
		for t := lo; t < hi; t++ {
			o, i0 := t/perOuter, t%perOuter*tile
			w := min(tile, v.Inner-i0)
			base := o*v.K*v.Inner + i0
			for j := range v.K {
				for b, x := range vals[base+j*v.Inner : base+j*v.Inner+w] {
					in[b*ks+j] = x
				}
			}
			for b := range w {
				var os []float64
				if out != nil {
					os = ob[b*ks : b*ks+v.K]
				}
				f(o*v.Inner+i0+b, in[b*ks:b*ks+v.K], os)
			}
			if out == nil {
				continue
			}
			for j := range v.K {
				row := out[base+j*v.Inner : base+j*v.Inner+w]
				for b := range row {
					row[b] = ob[b*ks+j]
				}
			}
		}
	})
}

// scratch keeps forSlices' tile buffers between calls: a layout of long
// strided slices needs two of up to 32 MiB per CPU, and fresh pages for
// them cost more than the copying they serve.
var scratch struct {
	sync.Mutex
	free [][]float64
}

// getScratch returns a buffer of n float64 (contents undefined).
func getScratch(n int) []float64 {
	scratch.Lock()
	defer scratch.Unlock()
	for i, b := range scratch.free {
		if cap(b) >= n {
			scratch.free = append(scratch.free[:i], scratch.free[i+1:]...)
			return b[:n]
		}
	}
	return make([]float64, n)
}

// putScratch returns a buffer of getScratch's for reuse.
func putScratch(b []float64) {
	scratch.Lock()
	scratch.free = append(scratch.free, b)
	scratch.Unlock()
}

// parallel splits [0, n) into one run of consecutive indices per CPU and
// calls f on each run at once, returning when all are done.
func parallel(n int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := n*k/w, n*(k+1)/w
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
