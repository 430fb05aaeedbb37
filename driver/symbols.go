package driver

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// symbol is one entry point of the driver library. Its address is filled in
// by Load; a zero address means the library does not export it, which is
// reported when the symbol is called.
type symbol struct {
	name     string // CUDA API name, used in error messages
	suffix   string // ABI version suffix of the exported name ("_v2")
	required bool   // Load fails without it: the library is not a CUDA driver
	addr     uintptr
}

func (s *symbol) export() string { return s.name + s.suffix }

// The driver entry points this package uses. The _v2 exports are the 64-bit
// size_t/CUdeviceptr ABI that every driver since CUDA 3.2 provides.
var (
	cuInit             = symbol{name: "cuInit", required: true}
	cuDriverGetVersion = symbol{name: "cuDriverGetVersion", required: true}
	cuGetErrorName     = symbol{name: "cuGetErrorName"}
	cuGetErrorString   = symbol{name: "cuGetErrorString"}

	cuDeviceGet          = symbol{name: "cuDeviceGet"}
	cuDeviceGetCount     = symbol{name: "cuDeviceGetCount"}
	cuDeviceGetName      = symbol{name: "cuDeviceGetName"}
	cuDeviceGetAttribute = symbol{name: "cuDeviceGetAttribute"}
	cuDeviceTotalMem     = symbol{name: "cuDeviceTotalMem", suffix: "_v2"}

	cuDevicePrimaryCtxRetain = symbol{name: "cuDevicePrimaryCtxRetain"}
	cuCtxGetCurrent          = symbol{name: "cuCtxGetCurrent"}
	cuCtxSetCurrent          = symbol{name: "cuCtxSetCurrent"}
	cuCtxSynchronize         = symbol{name: "cuCtxSynchronize"}

	cuMemAlloc        = symbol{name: "cuMemAlloc", suffix: "_v2"}
	cuMemFree         = symbol{name: "cuMemFree", suffix: "_v2"}
	cuMemGetInfo      = symbol{name: "cuMemGetInfo", suffix: "_v2"}
	cuMemcpyHtoD      = symbol{name: "cuMemcpyHtoD", suffix: "_v2"}
	cuMemcpyDtoH      = symbol{name: "cuMemcpyDtoH", suffix: "_v2"}
	cuMemcpyDtoD      = symbol{name: "cuMemcpyDtoD", suffix: "_v2"}
	cuMemcpyDtoDAsync = symbol{name: "cuMemcpyDtoDAsync", suffix: "_v2"}
	cuMemsetD8        = symbol{name: "cuMemsetD8", suffix: "_v2"}
	cuMemsetD32       = symbol{name: "cuMemsetD32", suffix: "_v2"}
	cuMemsetD8Async   = symbol{name: "cuMemsetD8Async"}
	cuMemsetD32Async  = symbol{name: "cuMemsetD32Async"}
	cuMemcpyHtoDAsync = symbol{name: "cuMemcpyHtoDAsync", suffix: "_v2"}
	cuMemcpyDtoHAsync = symbol{name: "cuMemcpyDtoHAsync", suffix: "_v2"}
	cuStreamWaitEvent = symbol{name: "cuStreamWaitEvent"}

	cuStreamBeginCapture        = symbol{name: "cuStreamBeginCapture", suffix: "_v2"}
	cuStreamEndCapture          = symbol{name: "cuStreamEndCapture"}
	cuStreamIsCapturing         = symbol{name: "cuStreamIsCapturing"}
	cuGraphInstantiateWithFlags = symbol{name: "cuGraphInstantiateWithFlags"}
	cuGraphLaunch               = symbol{name: "cuGraphLaunch"}
	cuGraphExecDestroy          = symbol{name: "cuGraphExecDestroy"}
	cuGraphDestroy              = symbol{name: "cuGraphDestroy"}
	cuStreamCreate              = symbol{name: "cuStreamCreate"}
	cuStreamSynchronize         = symbol{name: "cuStreamSynchronize"}
	cuStreamDestroy             = symbol{name: "cuStreamDestroy", suffix: "_v2"}
	cuEventCreate               = symbol{name: "cuEventCreate"}
	cuEventRecord               = symbol{name: "cuEventRecord"}
	cuEventSynchronize          = symbol{name: "cuEventSynchronize"}
	cuEventElapsedTime          = symbol{name: "cuEventElapsedTime"}
	cuEventDestroy              = symbol{name: "cuEventDestroy", suffix: "_v2"}

	cuModuleLoadDataEx                          = symbol{name: "cuModuleLoadDataEx"}
	cuLibraryLoadData                           = symbol{name: "cuLibraryLoadData"}
	cuLibraryGetKernel                          = symbol{name: "cuLibraryGetKernel"}
	cuLibraryUnload                             = symbol{name: "cuLibraryUnload"}
	cuKernelGetFunction                         = symbol{name: "cuKernelGetFunction"}
	cuModuleGetFunction                         = symbol{name: "cuModuleGetFunction"}
	cuModuleUnload                              = symbol{name: "cuModuleUnload"}
	cuFuncSetAttribute                          = symbol{name: "cuFuncSetAttribute"}
	cuFuncGetAttribute                          = symbol{name: "cuFuncGetAttribute"}
	cuOccupancyMaxActiveBlocksPerMultiprocessor = symbol{name: "cuOccupancyMaxActiveBlocksPerMultiprocessor"}
	cuLaunchKernel                              = symbol{name: "cuLaunchKernel"}
)

// symbols is the table Load resolves.
var symbols = [...]*symbol{
	&cuInit, &cuDriverGetVersion, &cuGetErrorName, &cuGetErrorString,
	&cuDeviceGet, &cuDeviceGetCount, &cuDeviceGetName, &cuDeviceGetAttribute, &cuDeviceTotalMem,
	&cuDevicePrimaryCtxRetain, &cuCtxGetCurrent, &cuCtxSetCurrent, &cuCtxSynchronize,
	&cuMemAlloc, &cuMemFree, &cuMemGetInfo, &cuMemcpyHtoD, &cuMemcpyDtoH, &cuMemcpyDtoD,
	&cuMemcpyDtoDAsync, &cuMemsetD8, &cuMemsetD32, &cuMemsetD8Async,
	&cuMemsetD32Async, &cuMemcpyHtoDAsync, &cuMemcpyDtoHAsync, &cuStreamWaitEvent,
	&cuStreamBeginCapture, &cuStreamEndCapture, &cuStreamIsCapturing,
	&cuGraphInstantiateWithFlags, &cuGraphLaunch, &cuGraphExecDestroy, &cuGraphDestroy,
	&cuStreamCreate, &cuStreamSynchronize, &cuStreamDestroy,
	&cuEventCreate, &cuEventRecord, &cuEventSynchronize, &cuEventElapsedTime, &cuEventDestroy,
	&cuModuleLoadDataEx, &cuModuleGetFunction, &cuModuleUnload,
	&cuLibraryLoadData, &cuLibraryGetKernel, &cuLibraryUnload, &cuKernelGetFunction,
	&cuFuncSetAttribute, &cuFuncGetAttribute, &cuOccupancyMaxActiveBlocksPerMultiprocessor, &cuLaunchKernel,
}

// Driver calls go through purego.SyscallN, whose variadic argument slice
// escapes: every call with a fresh argument list allocates it. The hot
// paths (launches, stream work, making a context current) therefore pass
// their arguments in a pooled frame instead, through do and out. call is
// for arguments that point into Go memory, which need the compiler's help
// to stay put.

// frame holds the arguments of one driver call, and a word the driver can
// write a result into.
type frame struct {
	args [12]uintptr
	word uintptr
}

var frames = sync.Pool{New: func() any { return new(frame) }}

// invoke calls s with args, which must not be a fresh variadic slice (see
// above), and turns a failing CUresult into an *Error whose Op is the API
// name; callers may refine Op and Detail.
func (s *symbol) invoke(args []uintptr) error {
	if s.addr == 0 {
		return s.missing()
	}
	r, _, _ := purego.SyscallN(s.addr, args...)
	// CUresult is a C enum returned in a 32-bit register; the upper half of
	// r is not defined by the ABI.
	if res := Result(int32(uint32(r))); res != success {
		return &Error{Op: s.name, Code: res}
	}
	return nil
}

// do calls s without allocating. The arguments must be integers, driver
// handles, device addresses, or addresses of Go memory that is pinned:
// nothing else keeps Go memory from moving between here and the call.
func (s *symbol) do(args ...uintptr) error {
	fr := frames.Get().(*frame)
	n := copy(fr.args[:], args)
	err := s.invoke(fr.args[:n])
	frames.Put(fr)
	return err
}

// out calls s with the address of a zeroed word followed by args (as for
// do), and returns what the driver stored in the word. A 32-bit result (an
// int, a float) lands in its low half on the little-endian targets CUDA
// supports.
func (s *symbol) out(args ...uintptr) (uintptr, error) {
	fr := frames.Get().(*frame)
	fr.word = 0
	// fr is a heap object, which does not move, and stays reachable
	// through fr until the driver has written the word.
	fr.args[0] = uintptr(unsafe.Pointer(&fr.word))
	n := 1 + copy(fr.args[1:], args)
	err := s.invoke(fr.args[:n])
	w := fr.word
	frames.Put(fr)
	return w, err
}

// call calls s with arguments that may be addresses of Go memory converted
// to uintptr in the call expression: uintptrescapes keeps that memory on the
// heap and alive until call returns, as it does for purego.SyscallN. It
// allocates the argument slice, so it is for cold paths.
//
//go:uintptrescapes
func (s *symbol) call(args ...uintptr) error {
	return s.invoke(args)
}

func (s *symbol) missing() error {
	return fmt.Errorf("driver: symbol %s not found in %s", s.export(), libraryPath)
}

// annotate sets the operation and context of a driver error produced by
// call. Other errors (a missing symbol) pass through unchanged.
func annotate(err error, op, detail string) error {
	if e, ok := err.(*Error); ok {
		e.Op = op
		e.Detail = detail
	}
	return err
}
