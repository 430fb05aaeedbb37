package nccl

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// symbol is one entry point of the NCCL library. Load fills in its address;
// zero means the library does not export it, which is reported when the
// symbol is called.
type symbol struct {
	name     string
	required bool // Load fails without it: the library is not a usable NCCL
	addr     uintptr
}

// The NCCL entry points this package uses.
var (
	ncclGetVersion           = symbol{name: "ncclGetVersion", required: true}
	ncclGetErrorString       = symbol{name: "ncclGetErrorString", required: true}
	ncclGetLastError         = symbol{name: "ncclGetLastError"}
	ncclGetUniqueId          = symbol{name: "ncclGetUniqueId", required: true}
	ncclCommInitRank         = symbol{name: "ncclCommInitRank", required: true}
	ncclCommInitRankScalable = symbol{name: "ncclCommInitRankScalable"}
	ncclCommInitAll          = symbol{name: "ncclCommInitAll", required: true}
	ncclCommDestroy          = symbol{name: "ncclCommDestroy", required: true}
	ncclCommAbort            = symbol{name: "ncclCommAbort", required: true}
	ncclCommGetAsyncError    = symbol{name: "ncclCommGetAsyncError", required: true}
	ncclCommCount            = symbol{name: "ncclCommCount", required: true}
	ncclCommCuDevice         = symbol{name: "ncclCommCuDevice", required: true}
	ncclCommUserRank         = symbol{name: "ncclCommUserRank", required: true}
	ncclGroupStart           = symbol{name: "ncclGroupStart", required: true}
	ncclGroupEnd             = symbol{name: "ncclGroupEnd", required: true}
	ncclAllReduce            = symbol{name: "ncclAllReduce", required: true}
	ncclBroadcast            = symbol{name: "ncclBroadcast", required: true}
	ncclReduce               = symbol{name: "ncclReduce", required: true}
	ncclAllGather            = symbol{name: "ncclAllGather", required: true}
	ncclReduceScatter        = symbol{name: "ncclReduceScatter", required: true}
)

// symbols is the table Load resolves.
var symbols = [...]*symbol{
	&ncclGetVersion, &ncclGetErrorString, &ncclGetLastError, &ncclGetUniqueId,
	&ncclCommInitRank, &ncclCommInitRankScalable, &ncclCommInitAll,
	&ncclCommDestroy, &ncclCommAbort, &ncclCommGetAsyncError,
	&ncclCommCount, &ncclCommCuDevice, &ncclCommUserRank,
	&ncclGroupStart, &ncclGroupEnd,
	&ncclAllReduce, &ncclBroadcast, &ncclReduce, &ncclAllGather, &ncclReduceScatter,
}

// purego.SyscallN takes its arguments as a variadic slice, which escapes:
// a call with a fresh argument list allocates it. Collectives therefore
// pass their arguments in a pooled frame (do, out), which keeps a warm
// collective free of heap allocations. call is for cold paths whose
// arguments point into Go memory.

// frame holds the arguments of one NCCL call and a word NCCL can store a
// result into.
type frame struct {
	args [8]uintptr
	word uintptr
}

var frames = sync.Pool{New: func() any { return new(frame) }}

// invoke calls s with args, which must not be a fresh variadic slice, and
// returns the ncclResult_t.
func (s *symbol) invoke(args []uintptr) Result {
	r, _, _ := purego.SyscallN(s.addr, args...)
	// ncclResult_t is a C enum returned in a 32-bit register; the upper
	// half of r is not defined by the ABI.
	return Result(int32(uint32(r)))
}

// do calls s without allocating. The arguments must be integers, NCCL or
// CUDA handles, device addresses, or addresses of pinned Go memory.
func (s *symbol) do(args ...uintptr) Result {
	if s.addr == 0 {
		return resultMissing
	}
	fr := frames.Get().(*frame)
	n := copy(fr.args[:], args)
	r := s.invoke(fr.args[:n])
	frames.Put(fr)
	return r
}

// out calls s with args followed by the address of a zeroed word (the
// out-parameter NCCL's getters take last) and returns what NCCL stored
// there. A 32-bit int lands in the word's low half on the little-endian
// targets NCCL supports.
func (s *symbol) out(args ...uintptr) (uintptr, Result) {
	if s.addr == 0 {
		return 0, resultMissing
	}
	fr := frames.Get().(*frame)
	fr.word = 0
	n := copy(fr.args[:], args)
	// fr is a heap object, which does not move, and stays reachable
	// through fr until NCCL has written the word.
	fr.args[n] = uintptr(unsafe.Pointer(&fr.word))
	r := s.invoke(fr.args[:n+1])
	w := fr.word
	frames.Put(fr)
	return w, r
}

// call calls s with arguments that may be addresses of Go memory converted
// to uintptr in the call expression: uintptrescapes keeps that memory on
// the heap and alive until call returns. It allocates, so it is for cold
// paths.
//
//go:uintptrescapes
func (s *symbol) call(args ...uintptr) Result {
	if s.addr == 0 {
		return resultMissing
	}
	return s.invoke(args)
}

// str calls s, which returns a const char*, with one integer argument,
// and copies the string. A missing symbol gives "".
func (s *symbol) str(arg uintptr) string {
	if s.addr == 0 {
		return ""
	}
	fr := frames.Get().(*frame)
	fr.args[0] = arg
	r, _, _ := purego.SyscallN(s.addr, fr.args[:1]...)
	frames.Put(fr)
	return cString(r)
}

// cString copies the NUL-terminated C string at p; p == 0 gives "".
func cString(p uintptr) string {
	if p == 0 {
		return ""
	}
	// p points into NCCL's memory, outside Go's heap; reading it through
	// a *byte made from the word's bits keeps vet's pointer check quiet.
	b := *(**byte)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(b), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(b, n))
}
