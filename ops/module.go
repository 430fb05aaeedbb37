package ops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/ptxsplit"
	"github.com/baracuda-go/baracuda/kernels/ptx"
)

// MinComputeMajor and MinComputeMinor are the lowest compute capability the
// embedded PTX (compute_70) runs on.
const (
	MinComputeMajor = 7
	MinComputeMinor = 0
)

// Each kernel is its own PTX module (kernels/ptx), loaded on first use in
// a context and kept for the life of the process: the driver JIT-compiles
// only what is launched, and the primary context outlives any plan. The
// table's lock is never held across a compile: the first caller of a
// kernel compiles it while later callers of that kernel wait for its
// result, and callers of kernels already loaded look nothing up here at
// all (kernelRef keeps the function). Neither does the driver hold a lock
// across a compile where it has the library API (see compileKernel).
var loaded struct {
	sync.Mutex
	m map[kernelKey]*kernelLoad
}

type kernelKey struct {
	ctx    *driver.Context
	module string // family plus build suffix, e.g. "reduce_sm80"
	name   string
}

// kernelLoad is one kernel's load in one context: done closes when fn or
// err is set.
type kernelLoad struct {
	done chan struct{}
	fn   *driver.Function
	err  error
}

// loadKernel returns kernel name of module in ctx, JIT-compiling it on the
// first call. A failed load is forgotten, so that a later call tries again
// (after a transient out-of-memory, say).
func loadKernel(ctx *driver.Context, module, name string) (*driver.Function, error) {
	key := kernelKey{ctx, module, name}
	loaded.Lock()
	l := loaded.m[key]
	if l != nil {
		loaded.Unlock()
		<-l.done
		return l.fn, l.err
	}
	if loaded.m == nil {
		loaded.m = map[kernelKey]*kernelLoad{}
	}
	l = &kernelLoad{done: make(chan struct{})}
	loaded.m[key] = l
	loaded.Unlock()

	l.fn, l.err = compileKernel(ctx, module, name)
	if l.err != nil {
		loaded.Lock()
		delete(loaded.m, key)
		loaded.Unlock()
	}
	close(l.done)
	return l.fn, l.err
}

// compileKernel loads one kernel's module into ctx: the driver
// JIT-compiles its PTX, or takes the machine code from its JIT cache.
// driver.LoadModule loads it as a library where the driver has the
// library API (CUDA 12.0 and later), which compiles without the
// process-wide lock that cuModuleLoadDataEx holds: other goroutines'
// launches and synchronizes go on during a compile, and compiles of
// different kernels overlap (Warm runs several at once). On older drivers
// a compile stalls the process's other launches; Warm, or a JIT cache
// filled beforehand (`baracuda warm`), keeps compiles out of the way
// there. compileKernel is a variable so that a test can stand in for the
// driver.
var compileKernel = func(ctx *driver.Context, module, name string) (*driver.Function, error) {
	src, err := kernelPTX(module, name)
	if err != nil {
		return nil, err
	}
	mod, err := ctx.LoadModule(name, src)
	if err != nil {
		return nil, err
	}
	return mod.Function(name)
}

// loadedFunction is a kernel resolved in one context, with what the
// launcher needs to size grids.
type loadedFunction struct {
	ctx         *driver.Context
	fn          *driver.Function
	sms         int // multiprocessors of the context's device
	blocksPerSM int // resident blocks per SM at the family's block size
	// smemBlocksPerSM is blocksPerSM for launches with the kernelRef's
	// dynamic shared memory (0 when it has none).
	smemBlocksPerSM int
}

// errNoBuild: no module build for the device holds the kernel (a variant
// for a newer GPU); the launcher then takes another kernel.
var errNoBuild = errors.New("ops: no build of this kernel for the device")

func loadFunction(ctx *driver.Context, row *kernelRow, block, smem, smemCap int) (*loadedFunction, error) {
	// The base PTX targets compute_70: an older GPU would fail inside the
	// JIT with a bare code, so say what is wrong first.
	major, minor, err := ctx.Device().ComputeCapability()
	if err != nil {
		return nil, err
	}
	if err := driver.CheckComputeCapability(major, minor, MinComputeMajor, MinComputeMinor); err != nil {
		return nil, err
	}
	module := moduleFor(row, major, knob(basePTXEnv) != "")
	if module == "" {
		return &loadedFunction{ctx: ctx}, errNoBuild
	}
	fn, err := loadKernel(ctx, module, row.name)
	if err != nil {
		return nil, err
	}
	sms, err := ctx.Device().SMCount()
	if err != nil {
		return nil, err
	}
	per, err := fn.MaxActiveBlocksPerSM(block, 0)
	if err != nil {
		return nil, err
	}
	if per < 1 {
		per = 1
	}
	lf := &loadedFunction{ctx: ctx, fn: fn, sms: sms, blocksPerSM: per}
	if smem > 0 {
		if smem > 48<<10 {
			// Beyond 48 KiB a function must opt in, up to the device's
			// limit (96 KiB or more from compute capability 7.0 on, 64
			// KiB on 7.5) less the function's static shared memory.
			// Always the same amount for a function, smemCap
			// (maxDynSmem where 0) or that limit: the attribute belongs
			// to the function, which plans share. Where smem is more
			// than the device allows, no block fits (smemBlocksPerSM 0)
			// and the launcher takes another kernel.
			optin, err := ctx.Device().MaxSharedMemPerBlockOptin()
			if err != nil {
				return nil, err
			}
			static, err := fn.StaticSharedMem()
			if err != nil {
				return nil, err
			}
			if smemCap == 0 {
				smemCap = maxDynSmem
			}
			limit := min(optin-static, smemCap)
			if smem > limit {
				return lf, nil
			}
			if err := fn.SetMaxDynamicSharedMem(limit); err != nil {
				return nil, err
			}
		}
		if lf.smemBlocksPerSM, err = fn.MaxActiveBlocksPerSM(block, smem); err != nil {
			return nil, err
		}
	}
	return lf, nil
}

// maxDynSmem is the most dynamic shared memory a launch asks for, unless
// its kernelRef sets smemCap.
const maxDynSmem = 96 << 10

// kernelRef is a plan's handle on one kernel. It remembers the function for
// the last context it ran in, so a warm Run looks nothing up.
type kernelRef struct {
	name  string
	row   *kernelRow // its support-table row: module builds, variant
	block int
	smem  int // dynamic shared memory of the launches that use it, if any
	// smemCap is the function's opt-in limit to set, below the device's
	// (0: maxDynSmem); the same for every plan of the function.
	smemCap int
	last    atomic.Pointer[loadedFunction]
}

// newKernelRef refers to kernel name of family; its table row picks the
// module build it loads from.
func newKernelRef(family, name string) *kernelRef {
	row, f := kernelByName(name), familyByName(family)
	block := f.block
	if row != nil {
		block = row.threads(f)
	}
	return &kernelRef{name: name, row: row, block: block}
}

// resolve returns the kernel's function in ctx, loading its module on
// first use; errNoBuild (remembered, like a success) when no build for the
// device holds it.
func (k *kernelRef) resolve(ctx *driver.Context) (*loadedFunction, error) {
	if lf := k.last.Load(); lf != nil && lf.ctx == ctx {
		if lf.fn == nil {
			return nil, errNoBuild
		}
		return lf, nil
	}
	lf, err := loadFunction(ctx, k.row, k.block, k.smem, k.smemCap)
	if errors.Is(err, errNoBuild) {
		k.last.Store(lf)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	k.last.Store(lf)
	return lf, nil
}

// preload resolves in ctx, each on its own goroutine, those of refs that
// are not resolved there yet, and returns when all are done: a Run whose
// path may launch (or consider) several kernels then waits for the
// longest compile rather than for their sum. It reports nothing: the
// launcher resolves each kernel again where it takes it (a loaded one
// costs nothing) and returns that error. With every ref resolved, as in
// any warm Run, it only reads each ref's last function.
func preload(ctx *driver.Context, refs ...*kernelRef) {
	cold := 0
	for _, k := range refs {
		if k != nil && !k.resolvedIn(ctx) {
			cold++
		}
	}
	if cold < 2 {
		return
	}
	var wg sync.WaitGroup
	for _, k := range refs {
		if k != nil && !k.resolvedIn(ctx) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = k.resolve(ctx)
			}()
		}
	}
	wg.Wait()
}

// maxSteps bounds the launches and memsets of one Run of a plan.
const maxSteps = 5

// launchStep is a step of a Run's launch plan: a kernel launch, or a
// memset where kernel is nil.
type launchStep interface {
	kernel() *kernelRef
}

// resolveSteps resolves the kernels of steps in ctx (nil for a memset)
// before any step is queued, so that a Run whose kernel fails to load
// queues nothing. It is generic rather than over []launchStep so that the
// families' step arrays pass without boxing, keeping a warm Run free of
// heap allocations.
func resolveSteps[S launchStep](ctx *driver.Context, steps []S) (lfs [maxSteps]*loadedFunction, err error) {
	for i, st := range steps {
		if k := st.kernel(); k != nil {
			if lfs[i], err = k.resolve(ctx); err != nil {
				return lfs, err
			}
		}
	}
	return lfs, nil
}

// resolvedIn reports whether k's last resolve was in ctx (a function, or
// errNoBuild).
func (k *kernelRef) resolvedIn(ctx *driver.Context) bool {
	lf := k.last.Load()
	return lf != nil && lf.ctx == ctx
}

// pTXDirEnv names a directory whose <module>.ptx files (whole modules as
// nvcc writes them, e.g. reduce_sm80.ptx) replace the embedded kernels of
// those module builds. It is a kernel developer's knob (time a PTX variant
// built by scripts/ptx-variant.sh without rebuilding the Go binary); a
// module with no file there keeps its embedded kernels. Users leave it
// unset.
const pTXDirEnv = "BARACUDA_PTX_DIR"

// basePTXEnv, when set to anything, makes every kernel load from the base
// (compute_70) build even where a newer build has it: to test the base
// kernels on a new GPU. Users leave it unset.
const basePTXEnv = "BARACUDA_BASE_PTX"

// kernelPTX is the standalone PTX module of one kernel.
func kernelPTX(module, name string) ([]byte, error) {
	if dir := knob(pTXDirEnv); dir != "" {
		m, err := dirModule(dir, module)
		if err != nil {
			return nil, err
		}
		if m != nil {
			text, err := m.Entry(name)
			if err != nil {
				return nil, fmt.Errorf("ops: %s=%s: %s.ptx: %w", pTXDirEnv, dir, module, err)
			}
			return []byte(text), nil
		}
	}
	return ptx.Kernel(module, name)
}

// dirModules caches the modules read from pTXDirEnv's directory, parsed
// once each; a nil module means the directory has no file for it.
var dirModules sync.Map // path -> *dirModuleLoad

type dirModuleLoad struct {
	once sync.Once
	m    *ptxsplit.Module
	err  error
}

func dirModule(dir, module string) (*ptxsplit.Module, error) {
	path := filepath.Join(dir, module+".ptx")
	v, _ := dirModules.LoadOrStore(path, new(dirModuleLoad))
	d := v.(*dirModuleLoad)
	d.once.Do(func() {
		src, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			d.err = fmt.Errorf("ops: %s=%s: %w", pTXDirEnv, dir, err)
			return
		}
		if d.m, err = ptxsplit.Parse(string(src)); err != nil {
			d.err = fmt.Errorf("ops: %s=%s: %s: %w", pTXDirEnv, dir, path, err)
		}
	})
	return d.m, d.err
}
