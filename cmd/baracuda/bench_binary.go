package main

import (
	"fmt"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// Binary cases: n = 2^24 elements; add, sub and lerp move dy, da, db (3n),
// the others also read a and b (5n).
func init() {
	const n = 1 << 24
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16, dtype.F64} {
		for _, op := range ops.BinaryOps() {
			elems := int64(5 * n)
			if op == ops.BinaryAdd || op == ops.BinarySub || op == ops.BinaryLerp {
				elems = 3 * n
			}
			benchCases = append(benchCases, benchCase{
				name: fmt.Sprintf("binary/%s/%s/n%d", op, dt.Suffix(), n), op: op.String(), dt: dt, elems: elems,
				setup: func(b *benchEnv) (func() error, error) { return setupBinary(b, op, dt, n) },
			})
		}
	}
}

func setupBinary(b *benchEnv, op ops.BinaryOp, dt dtype.DType, n int) (func() error, error) {
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: op, DType: dt, Shape: []int{n}, Weight: 0.3})
	if err != nil {
		return nil, err
	}
	var t [5]ops.Tensor
	for i := range t {
		gen := b.positive
		switch i {
		case 0:
			gen = b.normal
		case 3, 4:
			gen = nil
		}
		buf, err := b.upload(dt, int64(n), gen)
		if err != nil {
			return nil, err
		}
		t[i] = ops.NewTensor(buf, dt, n)
	}
	args := &ops.BinaryArgs{DY: t[0], A: t[1], B: t[2], DA: t[3], DB: t[4]}
	if err := plan.Check(args); err != nil {
		return nil, err
	}
	return func() error { return plan.Run(b.stream, args) }, nil
}
