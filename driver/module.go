package driver

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Module is PTX compiled for the device by the driver's JIT: a CUlibrary
// where the driver has the library API (CUDA 12.0 and later), else a
// CUmodule.
type Module struct {
	ctx    *Context
	handle uintptr // CUlibrary, or CUmodule
	lib    bool
	name   string
	// image is a library's PTX until a Function of it resolves: the
	// driver may report a PTX that fails to compile only then, and
	// without its log, which diagnose recovers.
	image []byte
}

// Function is a kernel of a loaded module (CUfunction). It stays valid until
// its module is unloaded.
type Function struct {
	mod    *Module
	handle uintptr // CUfunction
	name   string
}

// jitLogSize is the size of each JIT log buffer: ptxas reports one line per
// error, and 8 KiB holds the first hundred or so.
const jitLogSize = 8 << 10

// CUjit_option values.
const (
	jitInfoLogBuffer       = 3
	jitInfoLogBufferBytes  = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferBytes = 6
)

// jitOptions is the option block of cuModuleLoadDataEx and
// cuLibraryLoadData, in one heap object so that the value array's pointers
// to the log buffers stay valid.
type jitOptions struct {
	keys   [4]uint32  // CUjit_option
	values [4]uintptr // void*: a pointer or an integer, by option
	info   [jitLogSize]byte
	errLog [jitLogSize]byte
}

// newJITOptions returns the options with their log buffers, pinned (the
// values point into the object itself, and the driver holds them during
// the call); the caller unpins it.
func newJITOptions(pin *runtime.Pinner) *jitOptions {
	opts := new(jitOptions)
	opts.keys = [4]uint32{jitInfoLogBuffer, jitInfoLogBufferBytes, jitErrorLogBuffer, jitErrorLogBufferBytes}
	opts.values = [4]uintptr{
		uintptr(unsafe.Pointer(&opts.info[0])), jitLogSize,
		uintptr(unsafe.Pointer(&opts.errLog[0])), jitLogSize,
	}
	pin.Pin(opts)
	return opts
}

// loadModuleData compiles image (NUL-terminated PTX) as a CUmodule of the
// bound context; a failure is reported as op with the JIT error log.
func loadModuleData(image []byte, op string) (uintptr, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	opts := newJITOptions(&pin)
	h := new(uintptr)
	err := cuModuleLoadDataEx.call(uintptr(unsafe.Pointer(h)), uintptr(unsafe.Pointer(&image[0])),
		uintptr(len(opts.keys)), uintptr(unsafe.Pointer(&opts.keys[0])), uintptr(unsafe.Pointer(&opts.values[0])))
	if err != nil {
		return 0, annotate(err, op, logText(opts.errLog[:]))
	}
	return *h, nil
}

// LoadModule JIT-compiles a PTX module; name is used in error messages. It
// first checks the PTX ISA version against the driver (CheckPTXVersion), so
// a driver that is too old gets an error that says so. When compilation
// fails, the *Error's Op is "cuLibraryLoadData(<name>)" (or
// "cuModuleLoadDataEx(<name>)" on drivers before CUDA 12.0) and its Detail
// is the JIT error log; a library may load and report that error from
// the first Function call instead.
//
// Where the driver has the library API, the PTX is loaded as a library
// (cuLibraryLoadData): the driver compiles it without holding the
// process-wide lock that cuModuleLoadDataEx holds for the whole compile,
// so launches and synchronizes on other threads go on meanwhile, and
// several goroutines can compile at once. The machine code is the same
// (not the relocatable code of the driver's linker), and both paths use
// the driver's JIT cache.
func (c *Context) LoadModule(name string, ptx []byte) (*Module, error) {
	if err := CheckPTXVersion(ptx, driverVersion); err != nil {
		return nil, err
	}
	image := make([]byte, len(ptx)+1) // the driver reads PTX as a NUL-terminated string
	copy(image, ptx)
	prev, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer c.unbind(prev)
	if !hasLibraries() {
		h, err := loadModuleData(image, "cuModuleLoadDataEx("+name+")")
		if err != nil {
			return nil, err
		}
		return &Module{ctx: c, handle: h, name: name}, nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	opts := newJITOptions(&pin)
	h := new(uintptr)
	err = cuLibraryLoadData.call(uintptr(unsafe.Pointer(h)), uintptr(unsafe.Pointer(&image[0])),
		uintptr(unsafe.Pointer(&opts.keys[0])), uintptr(unsafe.Pointer(&opts.values[0])), uintptr(len(opts.keys)),
		0, 0, 0)
	if err != nil {
		return nil, annotate(err, "cuLibraryLoadData("+name+")", logText(opts.errLog[:]))
	}
	return &Module{ctx: c, handle: *h, lib: true, name: name, image: image}, nil
}

// hasLibraries reports whether the loaded driver has the library API that
// LoadModule prefers.
func hasLibraries() bool {
	return cuLibraryLoadData.addr != 0 && cuLibraryGetKernel.addr != 0 && cuLibraryUnload.addr != 0 &&
		cuKernelGetFunction.addr != 0
}

// diagnose turns a library's failure to resolve a kernel into the JIT's
// own error where the PTX does not compile: a library can load and fail
// only when a kernel of it is first resolved, without a log. It compiles
// the image as a module (the context is bound) and returns that error, or
// err where the module compiles.
func (m *Module) diagnose(err error) error {
	if m.image == nil {
		return err
	}
	h, jerr := loadModuleData(m.image, "cuLibraryLoadData("+m.name+")")
	if jerr != nil {
		return jerr
	}
	cuModuleUnload.do(h)
	return err
}

// logText returns the text of a NUL-terminated log buffer.
func logText(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// Function looks up a kernel by its entry name.
func (m *Module) Function(name string) (*Function, error) {
	if m.handle == 0 {
		return nil, fmt.Errorf("driver: module %s is unloaded", m.name)
	}
	prev, err := m.ctx.bind()
	if err != nil {
		return nil, err
	}
	defer m.ctx.unbind(prev)
	cname := append([]byte(name), 0)
	h := new(uintptr)
	if m.lib {
		// The library's kernel, then its function in this context (which
		// loads it there).
		k := new(uintptr)
		if err := cuLibraryGetKernel.call(uintptr(unsafe.Pointer(k)), m.handle, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
			return nil, m.diagnose(annotate(err, "cuLibraryGetKernel("+name+")", "module "+m.name))
		}
		if err := cuKernelGetFunction.call(uintptr(unsafe.Pointer(h)), *k); err != nil {
			return nil, m.diagnose(annotate(err, "cuKernelGetFunction("+name+")", "module "+m.name))
		}
		m.image = nil
		return &Function{mod: m, handle: *h, name: name}, nil
	}
	if err := cuModuleGetFunction.call(uintptr(unsafe.Pointer(h)), m.handle, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return nil, annotate(err, "cuModuleGetFunction("+name+")", "module "+m.name)
	}
	return &Function{mod: m, handle: *h, name: name}, nil
}

// Unload releases the module. Its functions must not be used afterwards.
// Unloading an unloaded module does nothing.
func (m *Module) Unload() error {
	if m.handle == 0 {
		return nil
	}
	prev, err := m.ctx.bind()
	if err != nil {
		return err
	}
	defer m.ctx.unbind(prev)
	unload := &cuModuleUnload
	if m.lib {
		unload = &cuLibraryUnload
	}
	if err := unload.do(m.handle); err != nil {
		return err
	}
	m.handle = 0
	return nil
}

// Name returns the kernel's entry name.
func (f *Function) Name() string { return f.name }

// SetMaxDynamicSharedMem allows launches of f to request up to bytes of
// dynamic shared memory, which beyond 48 KiB must be enabled explicitly.
func (f *Function) SetMaxDynamicSharedMem(bytes int) error {
	const maxDynamicSharedSizeBytes = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	prev, err := f.mod.ctx.bind()
	if err != nil {
		return err
	}
	defer f.mod.ctx.unbind(prev)
	if err := cuFuncSetAttribute.do(f.handle, maxDynamicSharedSizeBytes, uintptr(bytes)); err != nil {
		return annotate(err, fmt.Sprintf("cuFuncSetAttribute(%s, max dynamic shared memory %d bytes)", f.name, bytes), "")
	}
	return nil
}

// StaticSharedMem returns the bytes of shared memory f declares statically
// (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES). A launch's dynamic shared memory
// and this together may not exceed the device's per-block opt-in limit.
func (f *Function) StaticSharedMem() (int, error) {
	const sharedSizeBytes = 1 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
	prev, err := f.mod.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer f.mod.ctx.unbind(prev)
	n, err := cuFuncGetAttribute.out(sharedSizeBytes, f.handle)
	if err != nil {
		return 0, annotate(err, fmt.Sprintf("cuFuncGetAttribute(%s, static shared memory)", f.name), "")
	}
	return int(int32(n)), nil
}

// MaxActiveBlocksPerSM returns how many blocks of block threads, each using
// dynSmem bytes of dynamic shared memory, one multiprocessor holds at once.
func (f *Function) MaxActiveBlocksPerSM(block int, dynSmem int) (int, error) {
	prev, err := f.mod.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer f.mod.ctx.unbind(prev)
	n, err := cuOccupancyMaxActiveBlocksPerMultiprocessor.out(f.handle, uintptr(block), uintptr(dynSmem))
	if err != nil {
		return 0, annotate(err, fmt.Sprintf("cuOccupancyMaxActiveBlocksPerMultiprocessor(%s, block %d, smem %d)", f.name, block, dynSmem), "")
	}
	return int(int32(n)), nil
}
