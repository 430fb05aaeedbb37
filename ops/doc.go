// Package ops is the backward pass of four families of ops on NVIDIA GPUs,
// with PyTorch's gradients:
//
//   - binary: the gradients of add, sub, mul, div, maximum, minimum, pow,
//     atan2, hypot and lerp (NewBinaryBackward);
//   - reduce: sum, mean, max, min, prod, norm2, logsumexp, var and std over
//     one axis or a set of axes (NewReduceBackward; ReduceDesc.Axes);
//   - scan: cumsum, cumprod, cummax, cummin and logcumsumexp along one axis
//     (NewScanBackward);
//   - LP pooling, 1d and 2d, any p > 0 (NewLpPool1dBackward,
//     NewLpPool2dBackward).
//
// Every op runs in f32, f16, bf16 and f64; f16 and bf16 compute in f32 and
// round once.
//
// # The flow
//
// A descriptor names the op, the dtype and the shapes; its constructor
// validates it and returns a plan, which is immutable, safe for concurrent
// use and meant to be kept (one per op, dtype and shape). A Run takes the
// plan's tensors, device memory described by Tensor (buffer, dtype, shape,
// strides in elements), checks them and queues the kernels on a stream:
//
//	driver.Load()                                   // opens the NVIDIA driver (driver.ErrNoDriver without one)
//	dev, _ := driver.GetDevice(0)
//	ctx, _ := dev.Context()                         // the device's primary context
//	stream, _ := ctx.NewStream()                    // or ctx.WrapStream(handle) for a framework's own stream
//	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceSum, DType: ops.F32, Shape: []int{64, 512}, Axis: 1})
//	dy, _ := ctx.Alloc(64 * 4)                      // dy: [64] or [64, 1]
//	dx, _ := ctx.Alloc(64 * 512 * 4)
//	driver.CopyToDevice(ctx, dy, hostDY)            // []float32; f16 and bf16 travel as []uint16 (package dtype)
//	err = plan.Run(stream, &ops.ReduceArgs{DY: ops.NewTensor(dy, ops.F32, 64), DX: ops.NewTensor(dx, ops.F32, 64, 512)})
//	stream.Synchronize()
//	driver.CopyFromDevice(ctx, hostDX, dx)
//
// Run never allocates device memory, copies from the host or
// synchronizes; plans that need scratch memory say how much
// (WorkspaceSize) and take it in their args. Errors are values matchable
// with errors.Is (ErrShape, ErrDType, ErrBufferTooSmall, ...), wrapped with
// a message that names the plan, the field and the values.
//
// Which kernels a scan or reduce Run launches depends on the operands'
// layout and on the GPU; Launches reports them for given DeviceFacts
// (DeviceFactsOf a context, or filled by hand for a GPU not at hand).
//
// # The first Run
//
// The kernels are PTX, which the driver compiles for the GPU on a kernel's
// first use in a process and keeps in its JIT cache for later processes.
// Warm loads the kernels of some plans ahead of time (before serving, or
// before capturing Runs into a CUDA graph); WarmAll loads them all.
package ops
