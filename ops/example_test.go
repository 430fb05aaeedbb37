package ops_test

import (
	"errors"
	"fmt"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
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

// A broadcasting plan takes a's and b's own shapes: here a bias b of [3]
// added to rows of [2, 3], whose gradient sums dy's rows. Its sums need a
// workspace; a shape that does not broadcast is an ErrShape.
func ExampleNewBinaryBackward_broadcast() {
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryAdd, DType: ops.F32, Shape: []int{2, 3},
		AShape: []int{2, 3}, BShape: []int{3}})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kernel().Name, plan.Broadcasting(), plan.Precision().Accumulator)
	_, err = ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryAdd, DType: ops.F32, Shape: []int{2, 3}, BShape: []int{2}})
	fmt.Println(err)
	// Output:
	// bcast_bw_add_f32_tile true f32
	// ops: BinaryBackward(add, f32): BShape [2] does not broadcast to Shape [2 3]: dim 0 is 2, must be 1 or 3: shape mismatch
}

// Reductions take dy and y with the reduced axis kept as 1 or removed
// (PyTorch's keepdim=True and keepdim=False); both name the same memory.
func ExampleNewReduceBackward() {
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceVar, DType: ops.BF16, Shape: []int{4, 7, 9}, Axis: 1, Correction: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kernel().Family, plan.Precision().Accumulator)
	fmt.Println(plan.KeepdimShape(), plan.ReducedShape())
	_, err = ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceMax, DType: ops.F32, Shape: []int{3, 0}, Axis: 1})
	fmt.Println(errors.Is(err, ops.ErrShape))
	// Output:
	// reduce f32
	// [4 1 9] [4 9]
	// true
}

// A reduction over several axes: BatchNorm's variance over dims (0, 2, 3)
// of an NCHW tensor, as x.var((0, 2, 3)); the reduced dims do not form one
// group, so the plan takes the seg path (on compute capability 9.0 its
// clustered form, segc, for var and std). The last two dims form one
// group: that plan is the single-axis plan on the [64*128, 64*64] view.
func ExampleNewReduceBackward_axes() {
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceVar, DType: ops.F32, Shape: []int{32, 256, 56, 56},
		Axes: []int{0, 2, 3}, Correction: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.KeepdimShape(), plan.ReducedShape(), plan.Path(), plan.Kernel().Name)
	plan, err = ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceMean, DType: ops.BF16, Shape: []int{64, 128, 64, 64}, Axes: []int{-2, -1}})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.ReducedShape(), plan.Path())
	_, err = ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceSum, DType: ops.F32, Shape: []int{4, 5}, Axes: []int{1, -1}})
	fmt.Println(errors.Is(err, ops.ErrAxis))
	// Output:
	// [1 256 1 1] [256] seg reduce_bw_var_f32_segc
	// [64 128] single
	// true
}

// A scan plan: cumsum along the last axis of a [2, 1000] tensor, as
// torch.cumsum(x, -1) does forward.
func ExampleNewScanBackward() {
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: ops.ScanCumsum, DType: ops.F16, Shape: []int{2, 1000}, Axis: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Kernel().Family, plan.Precision().Math, plan.Precision().Accumulator)
	// Output:
	// scan f32 f32
}

// An LP pooling plan: the output shape follows PyTorch's lp_pool2d.
func ExampleNewLpPool2dBackward() {
	plan, err := ops.NewLpPool2dBackward(ops.LpPool2dDesc{DType: ops.F32, N: 8, C: 3, H: 32, W: 32,
		KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, P: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.OutputShape())
	// Output:
	// [8 3 15 15]
}

// The whole flow on a GPU: upload bf16 data, run a reduction's backward on
// a stream, read the gradient back. (Compiled, not run: it needs a GPU.)
func Example() {
	if err := driver.Load(); err != nil {
		fmt.Println(err) // driver.ErrNoDriver on a machine without one
		return
	}
	dev, err := driver.GetDevice(0)
	if err != nil {
		panic(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		panic(err)
	}
	stream, err := ctx.NewStream()
	if err != nil {
		panic(err)
	}
	defer stream.Destroy()

	// y = x.sum(dim=1) over x of [64, 512]; the gradient of y is all ones.
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceSum, DType: ops.BF16, Shape: []int{64, 512}, Axis: 1})
	if err != nil {
		panic(err)
	}
	ones := make([]float32, 64)
	for i := range ones {
		ones[i] = 1
	}
	dyBits, err := dtype.To16(dtype.BF16, ones)
	if err != nil {
		panic(err)
	}
	dy, err := ctx.Alloc(64 * 2)
	if err != nil {
		panic(err)
	}
	defer ctx.Free(dy)
	dx, err := ctx.Alloc(64 * 512 * 2)
	if err != nil {
		panic(err)
	}
	defer ctx.Free(dx)
	if err := driver.CopyToDevice(ctx, dy, dyBits); err != nil {
		panic(err)
	}
	args := &ops.ReduceArgs{DY: ops.NewTensor(dy, ops.BF16, 64), DX: ops.NewTensor(dx, ops.BF16, 64, 512)}
	if err := plan.Run(stream, args); err != nil {
		panic(err)
	}
	if err := stream.Synchronize(); err != nil {
		panic(err)
	}
	dxBits := make([]uint16, 64*512)
	if err := driver.CopyFromDevice(ctx, dxBits, dx); err != nil {
		panic(err)
	}
	grad, _ := dtype.From16(dtype.BF16, dxBits)
	fmt.Println(grad[0], grad[len(grad)-1])
}

// Launches tells which kernels a Run takes on a GPU, here an H100 and a
// V100 described by hand (no GPU needed): bf16 cummax along an outer axis
// takes the colstrip kernel where the device has it, the col kernel with
// a memset of its workspace's ticket counter on the V100.
func ExampleScanBackward_Launches() {
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: ops.ScanCummax, DType: ops.BF16, Shape: []int{8192, 4096}, Axis: 0})
	if err != nil {
		panic(err)
	}
	h100 := ops.DeviceFacts{Major: 9, SMs: 132, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 227 << 10, L2Cache: 50 << 20}
	v100 := ops.DeviceFacts{Major: 7, SMs: 80, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 96 << 10, L2Cache: 6 << 20}
	for _, dev := range []ops.DeviceFacts{h100, v100} {
		launches, err := plan.Launches(dev, nil) // nil: contiguous operands
		if err != nil {
			panic(err)
		}
		for _, l := range launches {
			if l.Kernel == "" {
				fmt.Printf("memset %d bytes\n", l.Memset)
				continue
			}
			fmt.Printf("%s grid %d block %d\n", l.Kernel, l.Grid, l.Block)
		}
	}
	// Output:
	// scan_bw_cummax_bf16_colstrip grid 128 block 512
	// memset 16 bytes
	// scan_bw_cummax_bf16_col grid 7296 block 256
}
