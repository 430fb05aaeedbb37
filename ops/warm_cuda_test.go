//go:build cuda

package ops

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// TestWarmLoadsEveryKernel: after Warm, every kernel a plan may launch is
// resolved in the context, and Progress counted each one once.
func TestWarmLoadsEveryKernel(t *testing.T) {
	ctx := deviceContext(t)
	var plans []Plan
	for _, dt := range dtype.All {
		b, err := NewBinaryBackward(BinaryDesc{Op: BinaryPow, DType: dt, Shape: []int{33}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReduceBackward(ReduceDesc{Op: ReduceStd, DType: dt, Shape: []int{4096, 64}, Axis: 0, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dt, Shape: []int{4096, 64}, Axis: 0})
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLpPool2dBackward(LpPool2dDesc{DType: dt, P: 2, N: 2, C: 3, H: 16, W: 16, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2})
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, b, r, s, l)
	}
	names := map[string]bool{}
	for _, p := range plans {
		for _, k := range p.kernelRefs() {
			names[k.name] = true
		}
	}
	calls, last := 0, 0
	err := Warm(ctx, WarmOptions{Progress: func(done, total int) {
		calls++
		if done != calls || total != len(names) {
			t.Errorf("progress %d/%d after %d calls, want %d kernels", done, total, calls, len(names))
		}
		last = done
	}}, plans...)
	if err != nil {
		t.Fatal(err)
	}
	if last != len(names) {
		t.Errorf("progress ended at %d of %d kernels", last, len(names))
	}
	for _, p := range plans {
		for _, k := range p.kernelRefs() {
			lf := k.last.Load()
			if lf == nil || lf.ctx != ctx {
				t.Errorf("%s: not resolved in the context after Warm", k.name)
			}
		}
	}
}

// TestRunsGoOnDuringCompile: a goroutine whose plan's kernel is loaded
// keeps running it while another goroutine's first Runs compile their
// kernels: no lock, the package's or the driver's, is held across a JIT
// compile. A comment unique to this run is appended to the PTX the test
// compiles, so that the driver's JIT cache cannot supply the code.
func TestRunsGoOnDuringCompile(t *testing.T) {
	ctx := deviceContext(t)
	nonce := fmt.Sprintf("\n// TestRunsGoOnDuringCompile %d\n", time.Now().UnixNano())
	orig := compileKernel
	compileKernel = func(ctx *driver.Context, module, name string) (*driver.Function, error) {
		src, err := kernelPTX(module, name)
		if err != nil {
			return nil, err
		}
		mod, err := ctx.LoadModule(name, append(append([]byte(nil), src...), nonce...))
		if err != nil {
			return nil, err
		}
		return mod.Function(name)
	}
	defer func() { compileKernel = orig }()

	const n = 1 << 12
	args := func(dt dtype.DType) *BinaryArgs {
		var ts [5]Tensor
		for i := range ts {
			buf, err := ctx.Alloc(n * int64(dt.Size()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ctx.Free(buf) })
			if err := ctx.Memset8(buf, 0x3f); err != nil {
				t.Fatal(err)
			}
			ts[i] = Tensor{Buf: buf, DType: dt, Shape: []int{n}}
		}
		return &BinaryArgs{DY: ts[0], A: ts[1], B: ts[2], DA: ts[3], DB: ts[4]}
	}
	plan := func(op BinaryOp, dt dtype.DType) *BinaryBackward {
		p, err := NewBinaryBackward(BinaryDesc{Op: op, DType: dt, Shape: []int{n}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	stream := func() *driver.Stream {
		s, err := ctx.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Destroy() })
		return s
	}

	// The running goroutine's plan, loaded (compiled) before it starts.
	run, runArgs, runStream := plan(BinaryMul, dtype.F32), args(dtype.F32), stream()
	if err := run.Run(runStream, runArgs); err != nil {
		t.Fatal(err)
	}
	if err := runStream.Synchronize(); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var stamps []time.Time
	runErr := make(chan error, 1)
	go func() {
		var err error
		for !stop.Load() && err == nil {
			if err = run.Run(runStream, runArgs); err == nil {
				err = runStream.Synchronize()
			}
			stamps = append(stamps, time.Now())
		}
		runErr <- err
	}()

	// First Runs of f64 plans, one after the other: each compiles its
	// kernel (a few hundred milliseconds each).
	time.Sleep(50 * time.Millisecond)
	compStream := stream()
	var windows [][2]time.Time
	for _, op := range []BinaryOp{BinaryDiv, BinaryPow, BinaryAtan2, BinaryHypot} {
		p, a := plan(op, dtype.F64), args(dtype.F64)
		forget(ctx, p)
		t0 := time.Now()
		if err := p.Run(compStream, a); err != nil {
			t.Fatal(err)
		}
		windows = append(windows, [2]time.Time{t0, time.Now()})
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if err := compStream.Synchronize(); err != nil {
		t.Fatal(err)
	}

	// Per compile: the running goroutine's Runs that ended inside it, and
	// its longest wait between two Runs that overlaps it.
	for i, w := range windows {
		compile := w[1].Sub(w[0])
		runs, longest := 0, time.Duration(0)
		for j := 1; j < len(stamps); j++ {
			if stamps[j].After(w[0]) && stamps[j-1].Before(w[1]) {
				if stamps[j].Before(w[1]) {
					runs++
				}
				longest = max(longest, stamps[j].Sub(stamps[j-1]))
			}
		}
		t.Logf("compile %d: %v; %d Runs of the loaded plan during it, the longest wait %v", i, compile, runs, longest)
		if compile < 50*time.Millisecond {
			t.Errorf("compile %d took %v: too short to tell whether Runs go on (was the JIT cache used?)", i, compile)
			continue
		}
		if runs < 10 || longest > compile/4 {
			t.Errorf("compile %d (%v): the loaded plan ran %d times, its longest wait %v; want Runs to go on during the compile", i, compile, runs, longest)
		}
	}
}

// forget drops p's kernels from the table of kernels loaded in ctx, so
// that its next Run compiles them again (an earlier test may have loaded
// them; the driver keeps the old modules).
func forget(ctx *driver.Context, p Plan) {
	loaded.Lock()
	defer loaded.Unlock()
	for _, k := range p.kernelRefs() {
		for key := range loaded.m {
			if key.ctx == ctx && key.name == k.name {
				delete(loaded.m, key)
			}
		}
	}
}

// TestPreloadCompilesTogether: preload starts the compiles of every
// kernel not yet loaded at once (each compile here waits until all three
// have started) and leaves each resolved in the context.
func TestPreloadCompilesTogether(t *testing.T) {
	ctx := deviceContext(t)
	major, _, err := ctx.Device().ComputeCapability()
	if err != nil {
		t.Fatal(err)
	}
	var refs []*kernelRef
	for i := range kernelTable {
		k := &kernelTable[i]
		m := moduleFor(k, major, false)
		loaded.Lock()
		_, done := loaded.m[kernelKey{ctx, m, k.name}]
		loaded.Unlock()
		if k.family == "reduce" && m != "" && !done {
			refs = append(refs, newKernelRef("reduce", k.name))
		}
		if len(refs) == 3 {
			break
		}
	}
	saved := compileKernel
	t.Cleanup(func() { compileKernel = saved })
	var arrived atomic.Int32
	all := make(chan struct{})
	compileKernel = func(c *driver.Context, module, name string) (*driver.Function, error) {
		if arrived.Add(1) == int32(len(refs)) {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("%s: the other compiles did not start alongside it", name)
		}
		return saved(c, module, name)
	}
	preload(ctx, refs...)
	for _, k := range refs {
		if !k.resolvedIn(ctx) {
			t.Errorf("%s is not resolved after preload", k.name)
		}
		if _, err := k.resolve(ctx); err != nil {
			t.Errorf("%s: %v", k.name, err)
		}
	}
}
