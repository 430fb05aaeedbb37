package nccl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/baracuda-go/baracuda/dtype"
)

// Result is an NCCL status code (ncclResult_t).
type Result int32

// The codes NCCL defines.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8

	// resultMissing stands for a call to a symbol the loaded library does
	// not export; NCCL never returns it.
	resultMissing Result = -1
)

var resultNames = [...]string{
	Success:            "ncclSuccess",
	UnhandledCudaError: "ncclUnhandledCudaError",
	SystemError:        "ncclSystemError",
	InternalError:      "ncclInternalError",
	InvalidArgument:    "ncclInvalidArgument",
	InvalidUsage:       "ncclInvalidUsage",
	RemoteError:        "ncclRemoteError",
	InProgress:         "ncclInProgress",
	Timeout:            "ncclTimeout",
}

// String returns the code's name in nccl.h, such as "ncclInvalidArgument",
// or "ncclResult(<n>)" for a code this package does not know.
func (r Result) String() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	if r == resultMissing {
		return "symbol not exported"
	}
	return "ncclResult(" + strconv.Itoa(int(r)) + ")"
}

// message returns NCCL's description of r (ncclGetErrorString), or "" when
// no library is loaded.
func (r Result) message() string {
	if !symbolsReady.Load() || r == resultMissing {
		return ""
	}
	return ncclGetErrorString.str(uintptr(r))
}

// Error is a failed NCCL call.
type Error struct {
	Op     string // the call with its key arguments: "ncclAllReduce(f32, sum, count 1024)"
	Code   Result // what NCCL returned
	Detail string // NCCL's last error message (ncclGetLastError), taken when the call failed
}

// Error formats as "nccl: <Op>: <code name>: <NCCL's message>[: <Detail>]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("nccl: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Code.String())
	if m := e.Code.message(); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	if e.Detail != "" && e.Detail != e.Code.message() {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// callError turns a failed result into an *Error. It is kept out of the
// collectives so that formatting costs nothing on success; comm is the
// communicator handle for ncclGetLastError, or 0.
//
//go:noinline
func callError(op string, r Result, comm uintptr) error {
	if r == resultMissing {
		return fmt.Errorf("nccl: %s: the NCCL library at %s does not export it", op, libraryPath)
	}
	return &Error{Op: op, Code: r, Detail: lastError(comm)}
}

// lastError returns NCCL's last error message for comm (0: the library's
// last one), where the library provides ncclGetLastError (NCCL 2.13 on).
func lastError(comm uintptr) string {
	return strings.TrimSpace(ncclGetLastError.str(comm))
}

// Sentinel errors. Every error from a bad argument wraps exactly one of
// them, matchable with errors.Is; the message names the call, the field and
// its values.
var (
	// ErrNoNCCL: no NCCL library could be loaded (none found, the file is
	// not NCCL, or the platform has no NCCL).
	ErrNoNCCL = errors.New("nccl: no NCCL library found")
	// ErrVersion: the NCCL library is too old for this package, or for
	// the call.
	ErrVersion = errors.New("NCCL version too old")
	// ErrNilBuffer: a buffer the call reads or writes has address 0.
	ErrNilBuffer = errors.New("nil buffer")
	// ErrBufferTooSmall: a buffer holds fewer bytes than count elements.
	ErrBufferTooSmall = errors.New("buffer too small")
	// ErrOverlap: send and receive buffers overlap in a way NCCL does not
	// define (only the in-place layouts are allowed).
	ErrOverlap = errors.New("buffers overlap")
	// ErrCount: a negative or oversized element count, or a bad number
	// of ranks.
	ErrCount = errors.New("invalid count")
	// ErrRank: a root or rank outside 0..ranks-1.
	ErrRank = errors.New("rank out of range")
	// ErrDType: an element type the collectives do not take.
	ErrDType = errors.New("unsupported dtype")
	// ErrOp: a reduction other than Sum, Prod, Max, Min and Avg.
	ErrOp = errors.New("unsupported reduction")
	// ErrStream: a nil or destroyed stream, or one of another context.
	ErrStream = errors.New("invalid stream")
	// ErrContext: a nil context, or a device list NCCL cannot use.
	ErrContext = errors.New("invalid context or device")
	// ErrUniqueID: bytes that are not a unique id.
	ErrUniqueID = errors.New("invalid unique id")
	// ErrDestroyed: use of a communicator after Destroy or Abort.
	ErrDestroyed = errors.New("communicator destroyed")
)

// ArgError is a call refused before it reached NCCL.
type ArgError struct {
	Call  string      // "AllReduce", "InitRank", ...
	DType dtype.DType // the element type, Invalid where the call has none
	Msg   string      // what is wrong, with the field and its values
	Err   error       // one of the sentinels above
}

// Error formats as "nccl: <Call>(<dtype>): <Msg>: <sentinel>".
func (e *ArgError) Error() string {
	if e.DType == dtype.Invalid {
		return fmt.Sprintf("nccl: %s: %s: %v", e.Call, e.Msg, e.Err)
	}
	return fmt.Sprintf("nccl: %s(%s): %s: %v", e.Call, e.DType, e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *ArgError) Unwrap() error { return e.Err }

func argErrorf(call string, dt dtype.DType, sentinel error, format string, args ...any) error {
	return &ArgError{Call: call, DType: dt, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
