// Command framework is what a Go ML framework does with baracuda-go on its
// first day, written from the README and the package docs alone: it wraps
// the framework's own stream, uploads f32 and bf16 data, builds a plan of
// each family, loads their kernels ahead of time, runs them on that stream
// after the framework's uploads, reads the gradients back and compares
// them with the CPU path (package cpu).
//
//	go run ./examples/framework
//
// It needs an NVIDIA GPU and driver; elsewhere it says why it cannot run.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/baracuda-go/baracuda/cpu"
	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "framework:", err)
		if errors.Is(err, driver.ErrNoDriver) {
			fmt.Fprintln(os.Stderr, "(this example needs an NVIDIA GPU and its driver)")
		}
		os.Exit(1)
	}
}

// gpu holds the framework's device state.
type gpu struct {
	ctx    *driver.Context
	stream *driver.Stream // the framework's stream, wrapped
	bufs   []driver.Buffer
}

// upload copies host values to a new buffer as dt (f32, or bf16 as uint16
// bits), queued on the framework's stream.
func (g *gpu) upload(dt dtype.DType, vals []float64) (driver.Buffer, error) {
	f := make([]float32, len(vals))
	for i, v := range vals {
		f[i] = float32(v)
	}
	buf, err := g.ctx.Alloc(int64(len(vals) * dt.Size()))
	if err != nil {
		return buf, err
	}
	g.bufs = append(g.bufs, buf)
	if dt == dtype.F32 {
		return buf, driver.CopyToDeviceAsync(g.stream, buf, f)
	}
	bits, err := dtype.To16(dt, f)
	if err != nil {
		return buf, err
	}
	return buf, driver.CopyToDeviceAsync(g.stream, buf, bits)
}

// alloc is an output buffer of n elements of dt.
func (g *gpu) alloc(dt dtype.DType, n int) (driver.Buffer, error) {
	buf, err := g.ctx.Alloc(int64(n * dt.Size()))
	g.bufs = append(g.bufs, buf)
	return buf, err
}

// read copies n elements of dt back, after everything queued so far, as
// float64 (dtype.Decode widens f32 and bf16 alike).
func (g *gpu) read(dt dtype.DType, buf driver.Buffer, n int) ([]float64, error) {
	raw := make([]byte, n*dt.Size())
	if err := g.stream.CopyDtoHAsync(raw, buf); err != nil {
		return nil, err
	}
	if err := g.stream.Synchronize(); err != nil {
		return nil, err
	}
	return dtype.Decode(dt, raw), nil
}

// report prints the largest difference from the CPU path, relative to the
// largest CPU value.
func report(name string, got, want []float64) {
	diff, scale := 0.0, 0.0
	for i := range got {
		diff = max(diff, math.Abs(got[i]-want[i]))
		scale = max(scale, math.Abs(want[i]))
	}
	fmt.Printf("%-28s %8d values, largest difference from the CPU path %.2g (relative %.2g)\n", name, len(got), diff, diff/max(scale, 1e-300))
}

// values is n deterministic values of about 1 in size, rounded to dt.
func values(n int, dt dtype.DType, shift float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = dtype.Round(dt, 0.5+math.Abs(math.Sin(float64(i)*0.37+shift)))
	}
	return v
}

func run() error {
	if err := driver.Load(); err != nil {
		return err
	}
	dev, err := driver.GetDevice(0)
	if err != nil {
		return err
	}
	ctx, err := dev.Context()
	if err != nil {
		return err
	}
	// The framework owns this stream; the library only borrows it.
	own, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer own.Destroy()
	stream, err := ctx.WrapStream(own.Handle())
	if err != nil {
		return err
	}
	g := &gpu{ctx: ctx, stream: stream}
	defer func() {
		for _, b := range g.bufs {
			ctx.Free(b)
		}
	}()

	// One plan of each family, and their kernels loaded before the first
	// Run (a server does this at start-up).
	mul := ops.BinaryDesc{Op: ops.BinaryMul, DType: ops.F32, Shape: []int{256, 384}}
	sum := ops.ReduceDesc{Op: ops.ReduceSum, DType: ops.BF16, Shape: []int{64, 512}, Axis: 1}
	csum := ops.ScanDesc{Op: ops.ScanCumsum, DType: ops.F32, Shape: []int{32, 1000}, Axis: 1}
	pool := ops.LpPool2dDesc{DType: ops.BF16, N: 2, C: 8, H: 32, W: 32, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2, P: 2}
	pMul, err := ops.NewBinaryBackward(mul)
	if err != nil {
		return err
	}
	pSum, err := ops.NewReduceBackward(sum)
	if err != nil {
		return err
	}
	pScan, err := ops.NewScanBackward(csum)
	if err != nil {
		return err
	}
	pPool, err := ops.NewLpPool2dBackward(pool)
	if err != nil {
		return err
	}
	if err := ops.Warm(ctx, ops.WarmOptions{}, pMul, pSum, pScan, pPool); err != nil {
		return err
	}

	// binary mul, f32: da = dy*b, db = dy*a.
	n := 256 * 384
	a, b, dy := values(n, dtype.F32, 0), values(n, dtype.F32, 1), values(n, dtype.F32, 2)
	ba, err := g.upload(dtype.F32, a)
	if err != nil {
		return err
	}
	bb, err := g.upload(dtype.F32, b)
	if err != nil {
		return err
	}
	bdy, err := g.upload(dtype.F32, dy)
	if err != nil {
		return err
	}
	bda, err := g.alloc(dtype.F32, n)
	if err != nil {
		return err
	}
	bdb, err := g.alloc(dtype.F32, n)
	if err != nil {
		return err
	}
	t := func(buf driver.Buffer, dt dtype.DType, shape ...int) ops.Tensor {
		return ops.NewTensor(buf, dt, shape...)
	}
	if err := pMul.Run(stream, &ops.BinaryArgs{DY: t(bdy, ops.F32, 256, 384), A: t(ba, ops.F32, 256, 384), B: t(bb, ops.F32, 256, 384),
		DA: t(bda, ops.F32, 256, 384), DB: t(bdb, ops.F32, 256, 384)}); err != nil {
		return err
	}
	gotDA, err := g.read(dtype.F32, bda, n)
	if err != nil {
		return err
	}
	wantDA, _, err := cpu.BinaryBackward(mul, dy, a, b)
	if err != nil {
		return err
	}
	report("mul f32 da", gotDA, wantDA)

	// sum over axis 1, bf16, with dy shaped [64] as torch.sum(x, 1) returns it.
	dys := values(64, dtype.BF16, 3)
	bdys, err := g.upload(dtype.BF16, dys)
	if err != nil {
		return err
	}
	bdx, err := g.alloc(dtype.BF16, 64*512)
	if err != nil {
		return err
	}
	if err := pSum.Run(stream, &ops.ReduceArgs{DY: t(bdys, ops.BF16, 64), DX: t(bdx, ops.BF16, 64, 512)}); err != nil {
		return err
	}
	gotDX, err := g.read(dtype.BF16, bdx, 64*512)
	if err != nil {
		return err
	}
	wantDX, err := cpu.ReduceBackward(sum, dys, nil, nil)
	if err != nil {
		return err
	}
	report("sum bf16 dx", gotDX, wantDX)

	// cumsum along axis 1, f32 (saves nothing).
	m := 32 * 1000
	dyc := values(m, dtype.F32, 4)
	bdyc, err := g.upload(dtype.F32, dyc)
	if err != nil {
		return err
	}
	bdxc, err := g.alloc(dtype.F32, m)
	if err != nil {
		return err
	}
	var ws driver.Buffer
	if size := pScan.WorkspaceSize(); size > 0 {
		if ws, err = g.alloc(dtype.F32, int((size+3)/4)); err != nil {
			return err
		}
	}
	if err := pScan.Run(stream, &ops.ScanArgs{DY: t(bdyc, ops.F32, 32, 1000), DX: t(bdxc, ops.F32, 32, 1000), Workspace: ws}); err != nil {
		return err
	}
	gotC, err := g.read(dtype.F32, bdxc, m)
	if err != nil {
		return err
	}
	wantC, err := cpu.ScanBackward(csum, dyc, nil, nil)
	if err != nil {
		return err
	}
	report("cumsum f32 dx", gotC, wantC)

	// lp_pool2d p=2, bf16: x and the saved y come from the CPU forward.
	out := pPool.OutputShape()
	nIn, nOut := 2*8*32*32, out[0]*out[1]*out[2]*out[3]
	x := values(nIn, dtype.BF16, 5)
	y, err := cpu.LpPool2dForward(pool, x)
	if err != nil {
		return err
	}
	for i := range y {
		y[i] = dtype.Round(dtype.BF16, y[i])
	}
	dyp := values(nOut, dtype.BF16, 6)
	bx, err := g.upload(dtype.BF16, x)
	if err != nil {
		return err
	}
	by, err := g.upload(dtype.BF16, y)
	if err != nil {
		return err
	}
	bdyp, err := g.upload(dtype.BF16, dyp)
	if err != nil {
		return err
	}
	bdxp, err := g.alloc(dtype.BF16, nIn)
	if err != nil {
		return err
	}
	if err := pPool.Run(stream, &ops.LpPoolArgs{DY: t(bdyp, ops.BF16, out...), X: t(bx, ops.BF16, 2, 8, 32, 32),
		Y: t(by, ops.BF16, out...), DX: t(bdxp, ops.BF16, 2, 8, 32, 32)}); err != nil {
		return err
	}
	gotP, err := g.read(dtype.BF16, bdxp, nIn)
	if err != nil {
		return err
	}
	wantP, err := cpu.LpPool2dBackward(pool, dyp, x, y)
	if err != nil {
		return err
	}
	report("lp_pool2d p=2 bf16 dx", gotP, wantP)
	return nil
}
