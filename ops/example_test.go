package ops_test

import (
	"errors"
	"fmt"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/ops"
)

// A plan is built once per (op, dtype, shape) and validates every Run's
// tensors before anything is launched. Check needs no GPU.
func ExampleNewBinaryBackward() {
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: ops.F32, Shape: []int{2, 3}})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kernel().Name, plan.Precision().Math)

	// Device memory would come from ctx.Alloc; here a made-up address shows
	// validation alone.
	buf := driver.Buffer{Addr: 0x100000, Size: 6 * 4}
	t := ops.NewTensor(buf, ops.F32, 2, 3)
	args := &ops.BinaryArgs{DY: t, A: t, B: ops.NewTensor(buf, ops.F32, 3, 2), DA: t, DB: t}
	err = plan.Check(args)
	fmt.Println(errors.Is(err, ops.ErrShape))
	fmt.Println(err)
	// Output:
	// binary_bw_mul_f32 f32
	// true
	// ops: BinaryBackward(mul, f32): b shape [3 2] must equal [2 3]: shape mismatch
}

// Reductions take dy and y in keepdim form: the input shape with the
// reduced axis set to 1.
func ExampleNewReduceBackward() {
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceVar, DType: ops.BF16, Shape: []int{4, 7, 9}, Axis: 1, Correction: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kernel().Family, plan.Precision().Accumulator)
	_, err = ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceMax, DType: ops.F32, Shape: []int{3, 0}, Axis: 1})
	fmt.Println(errors.Is(err, ops.ErrShape))
	// Output:
	// reduce f32
	// true
}
