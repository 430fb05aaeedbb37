package main

import (
	"fmt"

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
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: 1})
	if err != nil {
		return nil, err
	}
	kshape := append([]int(nil), shape...)
	kshape[axis] = 1
	n, m := int64(shape[0]*shape[1]), int64(kshape[0]*kshape[1])
	gen := b.normal
	if op == ops.ReduceProd {
		gen = b.nearOne // values near 1 (bench/README.md): the product stays finite
	}
	// y is the true forward of the stored x (max/min take their fast path
	// only where exactly one element equals y, as in real use).
	xv := b.values(dt, n, gen)
	yv := make([]float64, m)
	forSlices(xv, shape, axis, func(s int, slice []float64) {
		yv[s] = ref.ReduceForward(op.String(), slice, 1)
	})
	x, err := b.uploadValues(dt, xv)
	if err != nil {
		return nil, err
	}
	y, err := b.uploadValues(dt, yv)
	if err != nil {
		return nil, err
	}
	dy, err := b.upload(dt, m, b.normal)
	if err != nil {
		return nil, err
	}
	dx, err := b.upload(dt, n, nil)
	if err != nil {
		return nil, err
	}
	ws, err := b.workspace(plan.WorkspaceSize())
	if err != nil {
		return nil, err
	}
	args := &ops.ReduceArgs{DY: ops.NewTensor(dy, dt, kshape...), X: ops.NewTensor(x, dt, shape...),
		Y: ops.NewTensor(y, dt, kshape...), DX: ops.NewTensor(dx, dt, shape...), Workspace: ws}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}

func setupScan(b *benchEnv, op ops.ScanOp, dt dtype.DType, shape []int, axis int) (func() error, error) {
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: shape, Axis: axis})
	if err != nil {
		return nil, err
	}
	n := int64(shape[0] * shape[1])
	gen := b.normal
	if op == ops.ScanCumprod {
		gen = b.nearOne
	}
	// y is the true forward of the stored x.
	xv := b.values(dt, n, gen)
	yv := make([]float64, n)
	forSlices(xv, shape, axis, func(s int, slice []float64) {
		ys := ref.ScanForward(op.String(), slice, false)
		for j, v := range ys {
			if axis == 1 {
				yv[s*shape[1]+j] = v
			} else {
				yv[j*shape[1]+s] = v
			}
		}
	})
	var t [4]driver.Buffer
	for i, vals := range [][]float64{b.values(dt, n, b.normal), xv, yv} { // dy, x, y
		if t[i], err = b.uploadValues(dt, vals); err != nil {
			return nil, err
		}
	}
	if t[3], err = b.upload(dt, n, nil); err != nil {
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

// forSlices calls f with every slice of a row-major [rows, cols] matrix
// along axis (0 or 1), in slice order.
func forSlices(vals []float64, shape []int, axis int, f func(s int, slice []float64)) {
	rows, cols := shape[0], shape[1]
	if axis == 1 {
		for r := 0; r < rows; r++ {
			f(r, vals[r*cols:(r+1)*cols])
		}
		return
	}
	slice := make([]float64, rows)
	for c := 0; c < cols; c++ {
		for r := range slice {
			slice[r] = vals[r*cols+c]
		}
		f(c, slice)
	}
}
