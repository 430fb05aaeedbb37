//go:build cuda

package ops_test

import (
	"errors"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/conform"
	"github.com/baracuda-go/baracuda/ops"
)

// binarySetup allocates contiguous f32 operands for a mul backward.
func binarySetup(t testing.TB, n int, strided bool) (*conform.Env, *ops.BinaryBackward, *ops.BinaryArgs) {
	t.Helper()
	env, err := conform.NewEnv(0)
	if err != nil {
		t.Fatalf("GPU environment: %v", err)
	}
	shape := []int{n}
	var strides []int
	span := int64(n)
	if strided {
		shape, strides, span = []int{n / 2, 2}, []int{1, n / 2}, int64(n)
	}
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: dtype.F32, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	var ts [5]ops.Tensor
	for i := range ts {
		buf, err := env.Ctx.Alloc(span * 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.Ctx.Free(buf) })
		if err := env.Ctx.Memset32(buf, 0x3f800000); err != nil {
			t.Fatal(err)
		}
		ts[i] = ops.Tensor{Buf: buf, DType: dtype.F32, Shape: shape, Strides: strides}
	}
	t.Cleanup(func() { env.Close() })
	return env, plan, &ops.BinaryArgs{DY: ts[0], A: ts[1], B: ts[2], DA: ts[3], DB: ts[4]}
}

// TestRunZeroAllocs: a warm Run (validation, argument packing and the
// launch through purego) allocates nothing on the Go heap.
func TestRunZeroAllocs(t *testing.T) {
	for _, strided := range []bool{false, true} {
		env, plan, args := binarySetup(t, 1<<16, strided)
		allocs := warmRunAllocs(t, env.Stream, 200, func() error { return plan.Run(env.Stream, args) })
		t.Logf("%s strided=%v: %.1f allocations per warm Run", plan.Kernel().Name, strided, allocs)
		if allocs != 0 {
			t.Errorf("strided=%v: %.1f allocations per warm Run, want 0", strided, allocs)
		}
	}
}

// warmRunAllocs runs run once, then counts the Go heap allocations of n
// more runs and synchronizes s; an error fails the test.
func warmRunAllocs(t *testing.T, s *driver.Stream, n int, run func() error) float64 {
	t.Helper()
	if err := run(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	allocs := testing.AllocsPerRun(n, func() {
		if err := run(); err != nil {
			runErr = err
		}
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	return allocs
}

// onesBuffer is device memory of max(bytes, 16) bytes holding f32 ones,
// freed when the test ends.
func onesBuffer(t *testing.T, env *conform.Env, bytes int64) driver.Buffer {
	t.Helper()
	buf, err := env.Ctx.Alloc(max(bytes, 16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Ctx.Free(buf) })
	if err := env.Ctx.Memset32(buf, 0x3f800000); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestRunErrors: Run reports bad input and a nil stream as errors, never a
// panic, and launches nothing.
func TestRunErrors(t *testing.T) {
	env, plan, args := binarySetup(t, 1024, false)
	if err := plan.Run(nil, args); !errors.Is(err, ops.ErrNilStream) {
		t.Errorf("nil stream: %v, want ErrNilStream", err)
	}
	bad := *args
	bad.DA.Buf = driver.Buffer{Addr: bad.DA.Buf.Addr, Size: 16}
	if err := plan.Run(env.Stream, &bad); !errors.Is(err, ops.ErrBufferTooSmall) {
		t.Errorf("short da: %v, want ErrBufferTooSmall", err)
	}
}

// BenchmarkRunHost measures the host side of a warm Run: validation,
// packing and cuLaunchKernel. The stream is drained every 1024 launches so
// the queue never blocks the launch call.
func BenchmarkRunHost(b *testing.B) {
	env, plan, args := binarySetup(b, 1024, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := plan.Run(env.Stream, args); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			b.StopTimer()
			if err := env.Stream.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := env.Stream.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// TestBroadcastRunZeroAllocs: a warm Run of a broadcasting plan (the tile
// pass and its finish, or the general pass per output) allocates nothing
// on the Go heap either.
func TestBroadcastRunZeroAllocs(t *testing.T) {
	env, err := conform.NewEnv(0)
	if err != nil {
		t.Fatalf("GPU environment: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	for _, bshape := range [][]int{{256}, {4, 1, 256}} {
		shape := []int{4, 512, 256}
		plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: dtype.F32, Shape: shape, BShape: bshape})
		if err != nil {
			t.Fatal(err)
		}
		alloc := func(n int64) driver.Buffer { return onesBuffer(t, env, n) }
		full, own := int64(4*512*256*4), int64(1)
		for _, d := range bshape {
			own *= int64(d)
		}
		args := &ops.BinaryArgs{
			DY: ops.NewTensor(alloc(full), dtype.F32, shape...), A: ops.NewTensor(alloc(full), dtype.F32, shape...),
			B: ops.NewTensor(alloc(own*4), dtype.F32, bshape...), DA: ops.NewTensor(alloc(full), dtype.F32, shape...),
			DB: ops.NewTensor(alloc(own*4), dtype.F32, bshape...), Workspace: alloc(plan.WorkspaceSize()),
		}
		allocs := warmRunAllocs(t, env.Stream, 100, func() error { return plan.Run(env.Stream, args) })
		if allocs != 0 {
			t.Errorf("%s b%v: %.1f allocations per warm Run, want 0", plan.Kernel().Name, bshape, allocs)
		}
	}
}
