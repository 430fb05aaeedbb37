package driver

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// fakeLibrary returns a C library that every test machine has, for calling
// through the real purego path without a GPU.
func fakeLibrary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs glibc")
	}
	if _, err := openLibrary("libc.so.6"); err != nil {
		t.Skip("libc.so.6:", err)
	}
	return "libc.so.6"
}

// fakeDriver points the symbols a launch uses at libc functions: sched_yield
// ignores its arguments and returns 0 (CUDA_SUCCESS), getpid returns a
// nonzero code.
func fakeDriver(t *testing.T) (ok, fail uintptr) {
	t.Helper()
	h, err := openLibrary(fakeLibrary(t))
	if err != nil {
		t.Fatal(err)
	}
	ok, fail = lookupSymbol(h, "sched_yield"), lookupSymbol(h, "getpid")
	if ok == 0 || fail == 0 {
		t.Skip("libc lacks sched_yield or getpid")
	}
	isolateLoad(t)
	for _, s := range []*symbol{&cuCtxGetCurrent, &cuCtxSetCurrent, &cuLaunchKernel, &cuStreamSynchronize} {
		s.addr = ok
	}
	return ok, fail
}

func fakeKernel() (*Function, *Stream) {
	ctx := &Context{handle: 1} // never current on the fake, so every launch sets it
	mod := &Module{ctx: ctx, handle: 2, name: "binary"}
	return &Function{mod: mod, handle: 3, name: "binary_bw_mul_f32"}, &Stream{ctx: ctx, handle: 4}
}

func TestLaunchDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	fakeDriver(t)
	f, s := fakeKernel()
	var p [5]DevicePtr
	strides := [50]int64{}
	launch := func() {
		a := GetArgs()
		for _, q := range p {
			a.Ptr(q)
		}
		a.I64(1 << 40)
		a.Bytes(unsafe.Pointer(&strides), 400, 8)
		if err := f.Launch(s, [3]uint32{528, 1, 1}, [3]uint32{256, 1, 1}, 0, a); err != nil {
			t.Fatal(err)
		}
		PutArgs(a)
	}
	for _, sync := range []bool{false, true} {
		syncLaunches = sync
		if n := testing.AllocsPerRun(200, launch); n != 0 {
			t.Errorf("Launch with BARACUDA_SYNC=%v: %v allocations per call, want 0", sync, n)
		}
	}
	syncLaunches = false
}

func TestLaunchErrorNamesKernel(t *testing.T) {
	_, fail := fakeDriver(t)
	f, s := fakeKernel()
	a := GetArgs()
	defer PutArgs(a)

	cuLaunchKernel.addr = fail
	err := f.Launch(s, [3]uint32{528, 1, 1}, [3]uint32{256, 1, 1}, 1024, a)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Launch error = %v, want *Error", err)
	}
	if e.Op != "cuLaunchKernel" || e.Detail != "kernel binary_bw_mul_f32 grid [528 1 1] block [256 1 1] smem 1024" {
		t.Errorf("Launch error Op %q Detail %q", e.Op, e.Detail)
	}

	cuLaunchKernel.addr = cuStreamSynchronize.addr
	cuStreamSynchronize.addr = fail
	syncLaunches = true
	defer func() { syncLaunches = false }()
	err = f.Launch(s, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, a)
	if !errors.As(err, &e) || e.Op != "cuStreamSynchronize" || !strings.HasPrefix(e.Detail, "kernel binary_bw_mul_f32 ") {
		t.Errorf("synchronized Launch error = %v, want cuStreamSynchronize naming the kernel", err)
	}
}

func TestLaunchMissingSymbol(t *testing.T) {
	fakeDriver(t)
	f, s := fakeKernel()
	a := GetArgs()
	defer PutArgs(a)
	cuLaunchKernel.addr = 0
	err := f.Launch(s, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, a)
	if err == nil || !strings.Contains(err.Error(), "symbol cuLaunchKernel not found") || !strings.Contains(err.Error(), "binary_bw_mul_f32") {
		t.Errorf("Launch without cuLaunchKernel: %v", err)
	}
}
