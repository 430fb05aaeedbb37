//go:build cuda

package conform

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stressOnes lists the single-kernel checks of every family.
func stressOnes(t *testing.T) []func(*Env, uint64) Result {
	var ones []func(*Env, uint64) Result
	for _, s := range Suites() {
		if s.One == nil {
			t.Fatalf("family %s has no single-kernel check", s.Family)
		}
		ones = append(ones, s.One)
	}
	return ones
}

// TestConcurrentMixedPlans: 32 goroutines run plans of every family at
// once, half on their own streams and half on four shared ones, with every
// result checked against the reference, while another goroutine forces
// garbage collections (argument blocks must stay pinned and alive).
func TestConcurrentMixedPlans(t *testing.T) {
	env := testEnv(t)
	ones := stressOnes(t)
	const workers = 32
	rounds := 40
	if quick() {
		rounds = 2
	}
	shared := make([]*Env, 4)
	for i := range shared {
		e, err := env.WithStream()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		shared[i] = e
	}
	stop := make(chan struct{})
	var gcs atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				gcs.Add(1)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var wg sync.WaitGroup
	var launches atomic.Int64
	errs := make(chan string, workers*4)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			e := shared[w%len(shared)]
			if w%2 == 0 {
				own, err := env.WithStream()
				if err != nil {
					errs <- err.Error()
					return
				}
				defer own.Close()
				e = own
			}
			for r := 0; r < rounds; r++ {
				pick := uint64(w*1000 + r*37)
				res := ones[(w+r)%len(ones)](e, pick)
				launches.Add(int64(res.Cases))
				if !res.OK() {
					errs <- res.Kernel + ": " + res.Fail[0]
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	t.Logf("%d goroutines, %d checked launches, %d forced GCs", workers, launches.Load(), gcs.Load())
}

// TestNoLeaks creates, runs and drops over 10,000 plans and their buffers; free device
// memory and the goroutine count must come back to where they started.
func TestNoLeaks(t *testing.T) {
	env := testEnv(t)
	ones := stressOnes(t)
	// Warm every family once so module loads (kept for the process) are
	// not counted as leaks.
	for i, one := range ones {
		if r := one(env, uint64(i)); !r.OK() {
			t.Fatalf("%s: %s", r.Kernel, r.Fail[0])
		}
	}
	runtime.GC()
	free0, _, err := env.Ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	g0 := runtime.NumGoroutine()
	n := 5000
	if quick() {
		n = 100
	}
	plans := 0
	for i := 0; i < n; i++ {
		r := ones[i%len(ones)](env, uint64(i))
		if !r.OK() {
			t.Fatalf("%s: %s", r.Kernel, r.Fail[0])
		}
		plans += r.Cases
	}
	runtime.GC()
	free1, _, err := env.Ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	g1 := runtime.NumGoroutine()
	t.Logf("%d plans created, run and dropped (each with its own buffers); free memory %d -> %d bytes, goroutines %d -> %d",
		plans, free0, free1, g0, g1)
	// The driver may keep a few MiB of its own bookkeeping; a leak of
	// test buffers would be hundreds of MiB.
	if free0-free1 > 8<<20 {
		t.Errorf("free device memory fell by %d bytes", free0-free1)
	}
	if g1 > g0 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
}
