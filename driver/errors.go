package driver

import (
	"errors"
	"strconv"
	"strings"
	"unsafe"
)

// Result is a CUDA driver status code (CUresult).
type Result int32

// Codes the package gives meaning to; the rest are only printed.
const (
	success           Result = 0
	resultOutOfMemory Result = 2
	resultStubLibrary Result = 34
	resultNoDevice    Result = 100
)

// resultNames spells the common codes when the driver cannot be asked
// (it is not loaded, or is too old to know a code).
var resultNames = map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name returns the symbolic name of r, such as "CUDA_ERROR_OUT_OF_MEMORY",
// asking the loaded driver (cuGetErrorName) so that codes newer than this
// package are named too. Without a driver it falls back to a built-in list
// and then to "CUDA_ERROR_<code>".
func (r Result) Name() string {
	if s := driverString(&cuGetErrorName, r); s != "" {
		return s
	}
	if s, ok := resultNames[r]; ok {
		return s
	}
	return "CUDA_ERROR_" + strconv.Itoa(int(r))
}

// message returns the driver's description of r (cuGetErrorString), or ""
// when no driver is loaded.
func (r Result) message() string {
	return driverString(&cuGetErrorString, r)
}

// driverString calls cuGetErrorName or cuGetErrorString, which store a
// pointer to a static C string.
func driverString(s *symbol, r Result) string {
	if !symbolsReady.Load() || s.addr == 0 {
		return ""
	}
	p := new(*byte)
	if s.call(uintptr(r), uintptr(unsafe.Pointer(p))) != nil || *p == nil {
		return ""
	}
	return cString(*p)
}

// cString copies the NUL-terminated C string at p.
func cString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return strings.Clone(unsafe.String(p, n))
}

// Error is a failed driver call.
type Error struct {
	Op     string // the driver call, with its key argument: "cuMemAlloc(1073741824 bytes)"
	Code   Result // what the driver returned
	Detail string // extra context: the kernel and launch shape, or the JIT log
}

// Error formats as "driver: <Op>: <NAME>: <driver message>[: <Detail>]",
// asking the driver for the name and message at the time it is called.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("driver: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Code.Name())
	if m := e.Code.message(); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is reports whether e is an instance of a sentinel: ErrOutOfMemory for
// CUDA_ERROR_OUT_OF_MEMORY, and ErrNoDriver for CUDA_ERROR_NO_DEVICE and
// CUDA_ERROR_STUB_LIBRARY (a driver is installed but cannot run anything).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOutOfMemory:
		return e.Code == resultOutOfMemory
	case ErrNoDriver:
		return e.Code == resultNoDevice || e.Code == resultStubLibrary
	}
	return false
}

// ErrOutOfMemory matches, with errors.Is, an *Error whose code is
// CUDA_ERROR_OUT_OF_MEMORY.
var ErrOutOfMemory = errors.New("driver: out of device memory")
