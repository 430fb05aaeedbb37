package ops

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/baracuda-go/baracuda/driver"
)

// Plan is any backward plan of this package: *BinaryBackward,
// *ReduceBackward, *ScanBackward, *LpPool1dBackward or *LpPool2dBackward.
type Plan interface {
	Kernel() KernelInfo
	Precision() Precision
	WorkspaceSize() int64
	// kernelRefs lists every kernel the plan's Run may launch, whichever
	// operands it is given.
	kernelRefs() []*kernelRef
}

func (p *BinaryBackward) kernelRefs() []*kernelRef {
	if p.genK != nil && p.genK != p.kernel {
		return []*kernelRef{p.kernel, p.genK}
	}
	return []*kernelRef{p.kernel}
}

func (p *ReduceBackward) kernelRefs() []*kernelRef {
	if m := p.multi; m != nil {
		if m.inner != nil {
			return m.inner.kernelRefs()
		}
		return nonNil(m.segK, m.segcK)
	}
	return nonNil(p.rowK, p.colK, p.stats, p.apply, p.oneK, p.cluK, p.flatK, p.fixK, p.stripK, p.stripcK, p.shortK)
}

func (p *ScanBackward) kernelRefs() []*kernelRef {
	return nonNil(p.kernel, p.pairK, p.stripK, p.tallK, p.trowK)
}

func (p *LpPool1dBackward) kernelRefs() []*kernelRef { return nonNil(p.pl.kernels[:]...) }

func (p *LpPool2dBackward) kernelRefs() []*kernelRef { return nonNil(p.pl.kernels[:]...) }

func nonNil(refs ...*kernelRef) []*kernelRef {
	out := make([]*kernelRef, 0, len(refs))
	for _, k := range refs {
		if k != nil {
			out = append(out, k)
		}
	}
	return out
}

// WarmOptions tunes Warm and WarmAll.
type WarmOptions struct {
	// Progress, when set, is called after each kernel is loaded with the
	// kernels done so far and the total.
	Progress func(done, total int)
	// Workers is how many kernels are loaded at once, each by its own
	// goroutine (the driver compiles them in parallel where it has the
	// library API, see driver.Context.LoadModule); 0 means
	// runtime.GOMAXPROCS(0).
	Workers int
	// Shard and Shards, when Shards > 1, make WarmAll load only the
	// kernels whose index in Kernels() is Shard modulo Shards:
	// so that several processes can fill the driver's JIT cache at once
	// (`baracuda warm` does), each with its own share.
	Shard, Shards int
}

// Warm loads into ctx every kernel that any of plans may launch, so that
// no later Run in ctx waits for the driver's JIT compiler: at a server's
// start, say, or before a Run is captured into a CUDA graph (the first
// Run of a kernel loads it, which stream capture does not allow). It
// loads every kernel a plan's Run may choose, whichever operands it is
// later given, so it may load more than one Run uses. A kernel already
// loaded in ctx costs nothing, and Warm is safe to call concurrently with
// Runs and with itself.
//
// Kernels are loaded opt.Workers at a time. A kernel missing from the
// driver's JIT cache takes tens to hundreds of milliseconds to compile, a
// second or two for the largest; Runs of kernels already loaded go on
// meanwhile (on drivers before CUDA 12.0 they wait for each compile, and
// compiles do not overlap: fill the cache ahead of time there, with
// `baracuda warm`).
func Warm(ctx *driver.Context, opt WarmOptions, plans ...Plan) error {
	var names []string
	byName := map[string][]*kernelRef{}
	for _, p := range plans {
		if p == nil {
			return errors.New("ops: Warm: a nil plan")
		}
		for _, k := range p.kernelRefs() {
			if byName[k.name] == nil {
				names = append(names, k.name)
			}
			byName[k.name] = append(byName[k.name], k)
		}
	}
	return warmEach(len(names), opt, func(i int) error {
		for _, k := range byName[names[i]] {
			if _, err := k.resolve(ctx); err != nil && !errors.Is(err, errNoBuild) {
				return err
			}
		}
		return nil
	})
}

// warmEach runs load(0), ..., load(n-1) on opt.Workers goroutines and
// reports progress after each, in order of completion, from one goroutine
// at a time. After the first error no new load starts, and that error is
// returned once the running ones are done.
func warmEach(n int, opt WarmOptions, load func(i int) error) error {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	var (
		next     atomic.Int64
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				err := load(i)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					done++
					if opt.Progress != nil {
						opt.Progress(done, n)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// WarmAll loads into ctx every kernel the library ships that ctx's device
// can run, in the form a Run on that device takes, or with opt.Shards > 1
// its share of them. It is what `baracuda selftest` and `baracuda warm` do;
// a program that knows its plans warms just those with Warm. Like Warm, it
// is safe to call concurrently with Runs. It returns an error for a shard
// out of range, one wrapping driver.ErrUnsupportedDevice for a device
// below MinComputeMajor.MinComputeMinor, or the driver's error from
// loading a kernel.
func WarmAll(ctx *driver.Context, opt WarmOptions) error {
	// Each kernel comes from the build a plan would take it from on this
	// device (moduleFor).
	if opt.Shards > 1 && (opt.Shard < 0 || opt.Shard >= opt.Shards) {
		return fmt.Errorf("ops: WarmAll: shard %d of %d is out of range", opt.Shard, opt.Shards)
	}
	major, minor, err := ctx.Device().ComputeCapability()
	if err != nil {
		return err
	}
	if err := driver.CheckComputeCapability(major, minor, MinComputeMajor, MinComputeMinor); err != nil {
		return err
	}
	jobs := warmJobs(major, knob(basePTXEnv) != "", opt)
	return warmEach(len(jobs), opt, func(i int) error {
		_, err := loadKernel(ctx, jobs[i].module, jobs[i].name)
		return err
	})
}

// warmJob is one kernel WarmAll loads, from the module a plan takes it from.
type warmJob struct{ module, name string }

// warmJobs lists the kernels WarmAll loads on a device of compute
// capability major: every kernel some build holds for it, or opt's shard
// of them.
func warmJobs(major int, baseOnly bool, opt WarmOptions) []warmJob {
	var jobs []warmJob
	for i := range kernelTable {
		if opt.Shards > 1 && i%opt.Shards != opt.Shard {
			continue
		}
		k := &kernelTable[i]
		if m := moduleFor(k, major, baseOnly); m != "" {
			jobs = append(jobs, warmJob{m, k.name})
		}
	}
	return jobs
}
