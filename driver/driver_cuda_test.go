//go:build cuda

package driver_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
)

func gpu(t *testing.T) *driver.Context {
	t.Helper()
	dev, err := driver.GetDevice(0)
	if errors.Is(err, driver.ErrNoDriver) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestDevice(t *testing.T) {
	ctx := gpu(t)
	dev := ctx.Device()
	if again, _ := driver.GetDevice(0); again != dev {
		t.Error("GetDevice(0) returned a different *Device")
	}
	if again, _ := dev.Context(); again != ctx {
		t.Error("Device.Context returned a different *Context")
	}
	v, err := driver.Version()
	name, _ := dev.Name()
	major, minor, _ := dev.ComputeCapability()
	sms, _ := dev.SMCount()
	threads, _ := dev.MaxThreadsPerSM()
	mem, _ := dev.TotalMem()
	l2, _ := dev.L2CacheSize()
	optin, _ := dev.MaxSharedMemPerBlockOptin()
	n, _ := driver.DeviceCount()
	t.Logf("driver CUDA %s, %d devices; %s: sm_%d%d, %d SMs x %d threads, %d MiB, L2 %d KiB, shared memory opt-in %d KiB", driver.FormatCUDAVersion(v), n, name, major, minor, sms, threads, mem>>20, l2>>10, optin>>10)
	if err != nil || v < 11000 || name == "" || major < 5 || sms < 1 || threads < 1 || mem < 1<<30 || l2 < 1<<20 || optin < 48<<10 || n < 1 {
		t.Error("implausible device facts")
	}
	if warp, err := dev.Attribute(10); err != nil || warp != 32 {
		t.Errorf("warp size attribute = %d, %v", warp, err)
	}
	if _, err := dev.Attribute(-5); err == nil {
		t.Error("Attribute(-5) succeeded")
	}
	free, total, err := ctx.MemInfo()
	if err != nil || free <= 0 || total < free {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}
}

func TestMemory(t *testing.T) {
	ctx := gpu(t)
	const n = 1025
	a, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(a)
	b, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(b)

	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) - 0.5
	}
	if err := driver.CopyToDevice(ctx, a, src); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyDtoD(b, a); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := driver.CopyFromDevice(ctx, got, b); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != src[i] {
			t.Fatalf("round trip [%d] = %v, want %v", i, got[i], src[i])
		}
	}

	if err := ctx.Memset32(b, math.Float32bits(7)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Memset8(b.Slice(0, 8), 0); err != nil {
		t.Fatal(err)
	}
	if err := driver.CopyFromDevice(ctx, got, b); err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || got[1] != 0 || got[2] != 7 || got[n-1] != 7 {
		t.Errorf("after memsets: %v %v %v %v", got[0], got[1], got[2], got[n-1])
	}
	if err := ctx.Memset32(b.Slice(0, 6), 0); err == nil {
		t.Error("Memset32 of 6 bytes succeeded")
	}
	if err := ctx.CopyHtoD(a.Slice(0, 4), make([]byte, 5)); err == nil {
		t.Error("copying 5 bytes into 4 succeeded")
	}

	zero, err := ctx.Alloc(0)
	if err != nil || zero != (driver.Buffer{}) {
		t.Errorf("Alloc(0) = %v, %v", zero, err)
	}
	if err := ctx.Free(zero); err != nil {
		t.Error(err)
	}

	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := s.MemsetD8Async(a, 0x3f); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoDAsync(b, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4*n)
	if err := ctx.CopyDtoH(raw, b); err != nil {
		t.Fatal(err)
	}
	if raw[0] != 0x3f || raw[len(raw)-1] != 0x3f {
		t.Errorf("async memset and copy: %#x %#x", raw[0], raw[len(raw)-1])
	}
}

func TestOutOfMemory(t *testing.T) {
	ctx := gpu(t)
	const huge = 1 << 50
	b, err := ctx.Alloc(huge)
	if err == nil {
		ctx.Free(b)
		t.Fatal("allocating 1 PiB succeeded")
	}
	if !errors.Is(err, driver.ErrOutOfMemory) {
		t.Fatalf("Alloc(1 PiB) = %v, want ErrOutOfMemory", err)
	}
	want := "driver: cuMemAlloc(1125899906842624 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func loadScale(t *testing.T, ctx *driver.Context) *driver.Function {
	t.Helper()
	mod, err := ctx.LoadModule("scale", scalePTX)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Unload() })
	fn, err := mod.Function("scale_f32")
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func TestLaunch(t *testing.T) {
	ctx := gpu(t)
	fn := loadScale(t, ctx)
	if fn.Name() != "scale_f32" {
		t.Errorf("Name() = %q", fn.Name())
	}
	if per, err := fn.MaxActiveBlocksPerSM(256, 0); err != nil || per < 1 {
		t.Errorf("MaxActiveBlocksPerSM = %d, %v", per, err)
	}
	if err := fn.SetMaxDynamicSharedMem(64 << 10); err != nil {
		t.Error(err)
	}
	if n, err := fn.StaticSharedMem(); err != nil || n != 0 {
		t.Errorf("StaticSharedMem = %d, %v; scale_f32 declares none", n, err)
	}

	// Several goroutines, each with its own stream, share the context.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ctx.NewStream()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Destroy()
			n := 1000 + 37*g
			host := make([]float32, n)
			for i := range host {
				host[i] = float32(i)
			}
			x, err := ctx.Alloc(int64(4 * n))
			if err != nil {
				t.Error(err)
				return
			}
			defer ctx.Free(x)
			if err := driver.CopyToDevice(ctx, x, host); err != nil {
				t.Error(err)
				return
			}
			for range 3 {
				a := driver.GetArgs()
				a.Ptr(x.Addr)
				a.F32(2)
				a.U64(uint64(n))
				err := fn.Launch(s, [3]uint32{2, 1, 1}, [3]uint32{128, 1, 1}, 0, a)
				driver.PutArgs(a)
				if err != nil {
					t.Error(err)
					return
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Error(err)
				return
			}
			if err := driver.CopyFromDevice(ctx, host, x); err != nil {
				t.Error(err)
				return
			}
			for i, v := range host {
				if v != float32(8*i) {
					t.Errorf("goroutine %d: x[%d] = %v, want %v", g, i, v, 8*i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLaunchDoesNotAllocateOnGPU(t *testing.T) {
	ctx := gpu(t)
	fn := loadScale(t, ctx)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	x, err := ctx.Alloc(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(x)
	start, _ := ctx.NewEvent()
	end, _ := ctx.NewEvent()
	defer start.Destroy()
	defer end.Destroy()

	launch := func() {
		a := driver.GetArgs()
		a.Ptr(x.Addr)
		a.F32(1)
		a.U64(1 << 20)
		if err := fn.Launch(s, [3]uint32{132, 1, 1}, [3]uint32{256, 1, 1}, 0, a); err != nil {
			t.Fatal(err)
		}
		driver.PutArgs(a)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, launch); n != 0 {
		t.Errorf("Launch: %v allocations per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.CopyDtoDAsync(x.Slice(0, 1<<20), x.Slice(1<<20, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := end.Record(s); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CopyDtoDAsync and Event.Record: %v allocations per call, want 0", n)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	ms, err := driver.ElapsedMs(start, end)
	if err != nil || ms <= 0 {
		t.Errorf("ElapsedMs = %v, %v", ms, err)
	}
	t.Logf("%d launches and copies in %.3f ms", 1101+100, ms)
}

func TestModuleErrors(t *testing.T) {
	ctx := gpu(t)

	broken := []byte(".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n\tbogus.instruction %r1;\n\tret;\n}\n")
	bm, err := ctx.LoadModule("broken", broken)
	if err == nil {
		// A library reports it when its kernel is first resolved.
		_, err = bm.Function("k")
	}
	var e *driver.Error
	if !errors.As(err, &e) {
		t.Fatalf("loading broken PTX: %v, want *Error", err)
	}
	if (e.Op != "cuLibraryLoadData(broken)" && e.Op != "cuModuleLoadDataEx(broken)") || !strings.Contains(e.Detail, "error") {
		t.Errorf("Op %q, Detail %q; want the JIT error log", e.Op, e.Detail)
	}
	t.Log(err)

	_, err = ctx.LoadModule("future", []byte(".version 99.0\n.target sm_70\n"))
	if !errors.Is(err, driver.ErrPTXTooNew) {
		t.Errorf("loading PTX ISA 99.0: %v, want ErrPTXTooNew", err)
	}

	mod, err := ctx.LoadModule("scale", scalePTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	_, err = mod.Function("no_such_kernel")
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Errorf("looking up a missing kernel: %v", err)
	}
	t.Log(err)
}

func TestLaunchErrorOnGPU(t *testing.T) {
	ctx := gpu(t)
	fn := loadScale(t, ctx)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	a := driver.GetArgs()
	defer driver.PutArgs(a)
	a.Ptr(0)
	a.F32(1)
	a.U64(0)
	err = fn.Launch(s, [3]uint32{1, 1, 1}, [3]uint32{4096, 1, 1}, 0, a)
	var e *driver.Error
	if !errors.As(err, &e) || e.Op != "cuLaunchKernel" || e.Detail != "kernel scale_f32 grid [1 1 1] block [4096 1 1] smem 0" {
		t.Errorf("launching 4096 threads per block: %v", err)
	}
	t.Log(err)
}

// TestWrappedStream: a stream another library created, wrapped, takes
// asynchronous memsets and copies in both directions; an event on it
// orders work queued on another stream; Destroy leaves the CUstream to
// its owner.
func TestWrappedStream(t *testing.T) {
	ctx := gpu(t)
	if _, err := ctx.WrapStream(0); err == nil {
		t.Error("WrapStream(0) accepted the legacy default stream")
	}
	owner, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Destroy()
	w, err := ctx.WrapStream(owner.Handle())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	buf, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(buf)

	if err := w.MemsetD32Async(buf, 0x01020304); err != nil {
		t.Fatal(err)
	}
	host := make([]uint32, n)
	if err := driver.CopyFromDeviceAsync(w, host, buf); err != nil {
		t.Fatal(err)
	}
	if err := w.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, v := range host {
		if v != 0x01020304 {
			t.Fatalf("word %d is %#x after MemsetD32Async, want 0x01020304", i, v)
		}
	}

	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	if err := driver.CopyToDeviceAsync(w, buf, src); err != nil {
		t.Fatal(err)
	}
	// Another stream reads buf after an event recorded on w: the copy
	// into buf is finished by then, with no host synchronize between.
	other, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Destroy()
	ev, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Destroy()
	if err := ev.Record(w); err != nil {
		t.Fatal(err)
	}
	if err := other.WaitEvent(ev); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := driver.CopyFromDeviceAsync(other, got, buf); err != nil {
		t.Fatal(err)
	}
	if err := other.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != src[i] {
			t.Fatalf("element %d read on the waiting stream is %v, want %v", i, got[i], src[i])
		}
	}

	if err := w.MemsetD32Async(driver.Buffer{Addr: buf.Addr, Size: 6}, 0); err == nil {
		t.Error("MemsetD32Async took 6 bytes")
	}
	if err := w.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := w.Synchronize(); err == nil {
		t.Error("a destroyed wrapped stream still synchronizes")
	}
	if err := owner.Synchronize(); err != nil {
		t.Errorf("the owner's stream after the wrapper's Destroy: %v", err)
	}
}
