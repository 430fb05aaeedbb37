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
	// Equal shapes: the plan is the elementwise one, with no workspace.
	return setupBroadcast(b, op, dt, []int{n}, []int{n})
}
