package ops

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baracuda-go/baracuda/driver"
)

// fakeCompiles stands in for the driver's JIT for the rest of the test:
// compile(name) runs in place of each compile.
func fakeCompiles(t *testing.T, compile func(name string) (*driver.Function, error)) {
	t.Helper()
	saved := compileKernel
	t.Cleanup(func() {
		compileKernel = saved
		loaded.Lock()
		loaded.m = nil
		loaded.Unlock()
	})
	compileKernel = func(_ *driver.Context, _, name string) (*driver.Function, error) { return compile(name) }
}

// TestLoadKernelHoldsNoLockAcrossCompiles: while one kernel's compile is
// in progress, another kernel loads and returns; a second caller of the
// compiling kernel waits for that compile instead of starting its own; a
// failed compile is not remembered.
func TestLoadKernelHoldsNoLockAcrossCompiles(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	compiles := map[string]int{}
	fnA, fnB := new(driver.Function), new(driver.Function)
	fail := true
	fakeCompiles(t, func(name string) (*driver.Function, error) {
		mu.Lock()
		compiles[name]++
		mu.Unlock()
		switch name {
		case "slow":
			close(started)
			<-release
			return fnA, nil
		case "flaky":
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return nil, errors.New("transient")
			}
		}
		return fnB, nil
	})

	var wg sync.WaitGroup
	results := make([]*driver.Function, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				<-started // the second caller comes while the compile runs
			}
			fn, err := loadKernel(nil, "m", "slow")
			if err != nil {
				t.Error(err)
			}
			results[i] = fn
		}()
	}
	<-started
	done := make(chan struct{})
	go func() {
		defer close(done)
		if fn, err := loadKernel(nil, "m", "fast"); err != nil || fn != fnB {
			t.Errorf("fast kernel: %v, %v", fn, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a kernel's load waited for another kernel's compile")
	}
	close(release)
	wg.Wait()
	if results[0] != fnA || results[1] != fnA {
		t.Errorf("both callers of the slow kernel should get its function: %v", results)
	}
	if _, err := loadKernel(nil, "m", "flaky"); err == nil {
		t.Fatal("the failing compile reported no error")
	}
	if fn, err := loadKernel(nil, "m", "flaky"); err != nil || fn != fnB {
		t.Errorf("a failed compile was remembered: %v, %v", fn, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if compiles["slow"] != 1 || compiles["fast"] != 1 || compiles["flaky"] != 2 {
		t.Errorf("compiles %v, want slow 1, fast 1, flaky 2", compiles)
	}
}

// TestPreloadOfLoadedKernelsIsFree: with every ref resolved in the
// context, preload starts nothing and allocates nothing (it runs in every
// warm reduce Run).
func TestPreloadOfLoadedKernelsIsFree(t *testing.T) {
	refs := []*kernelRef{{name: "a"}, {name: "b"}, {name: "c"}}
	for _, k := range refs {
		k.last.Store(&loadedFunction{})
	}
	fakeCompiles(t, func(name string) (*driver.Function, error) {
		t.Errorf("preload compiled %s, which is loaded", name)
		return nil, errors.New("unexpected")
	})
	if n := testing.AllocsPerRun(100, func() { preload(nil, refs[0], nil, refs[1], refs[2]) }); n != 0 {
		t.Errorf("preload of loaded kernels: %v allocations, want 0", n)
	}
}
