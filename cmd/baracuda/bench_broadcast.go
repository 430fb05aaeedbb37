package main

import (
	"fmt"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// bcastShapes are the broadcasting binary cases: dy and a of [8192, 4096]
// with b of [4096] (db sums the columns), of [8192, 1] (db sums the rows)
// and 0-d (db sums everything), each named by b's shape.
var bcastShapes = []struct {
	name   string
	bshape []int
}{{"b4096", []int{4096}}, {"b8192x1", []int{8192, 1}}, {"b0d", []int{}}}

// Broadcast cases: mul and add, f32 and bf16. With n elements of dy and m
// of b, mul moves dy, a, b, da and db (3n + 2m), add dy, da and db (2n + m).
func init() {
	shape := []int{8192, 4096}
	n := numel(shape)
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, op := range []ops.BinaryOp{ops.BinaryMul, ops.BinaryAdd} {
			for _, bs := range bcastShapes {
				m := numel(bs.bshape)
				elems := 3*n + 2*m
				if op == ops.BinaryAdd {
					elems = 2*n + m
				}
				benchCases = append(benchCases, benchCase{
					name: fmt.Sprintf("bcast/%s/%s/8192x4096/%s", op, dt.Suffix(), bs.name), op: op.String(), dt: dt, elems: elems,
					setup: func(b *benchEnv) (func() error, error) { return setupBroadcast(b, op, dt, shape, bs.bshape) },
				})
			}
		}
	}
}

// setupBroadcast uploads dy and a of shape and b of bshape, allocates da,
// db and the workspace, and returns the plan's Run.
func setupBroadcast(b *benchEnv, op ops.BinaryOp, dt dtype.DType, shape, bshape []int) (func() error, error) {
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: op, DType: dt, Shape: shape, AShape: shape, BShape: bshape, Weight: 0.3})
	if err != nil {
		return nil, err
	}
	shapes := [5][]int{shape, shape, bshape, shape, bshape}
	var t [5]ops.Tensor
	for i, s := range shapes {
		gen := b.positive
		switch i {
		case 0:
			gen = b.normal
		case 3, 4:
			gen = nil
		}
		buf, err := b.upload(dt, numel(s), gen)
		if err != nil {
			return nil, err
		}
		t[i] = ops.NewTensor(buf, dt, s...)
	}
	ws, err := b.workspace(plan.WorkspaceSize())
	if err != nil {
		return nil, err
	}
	args := &ops.BinaryArgs{DY: t[0], A: t[1], B: t[2], DA: t[3], DB: t[4], Workspace: ws}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}
