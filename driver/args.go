package driver

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

const (
	// argBytes is the room for parameter values: the 4 KiB of kernel
	// parameters every CUDA driver accepts.
	argBytes = 4096
	// maxArgs is the most kernel parameters one Args holds.
	maxArgs = 32
)

// PTX parameter types an Args records.
const (
	ptxU64 = iota
	ptxU32
	ptxF32
	ptxF64
	ptxB8
)

var ptxTypeNames = [...]string{ptxU64: "u64", ptxU32: "u32", ptxF32: "f32", ptxF64: "f64", ptxB8: "b8"}

// ArgKind describes one packed kernel parameter: its PTX type as the
// ".param" line of an .entry spells it ("u64", "u32", "f32", "f64", or "b8"
// for a by-value struct), its size in bytes and its alignment.
type ArgKind struct {
	PTXType     string
	Size, Align int
}

// argKind is ArgKind packed small, so recording it on the launch path is a
// plain store.
type argKind struct {
	ptx   uint8
	align uint8
	size  uint16
}

// Args is the argument block of one kernel launch: values appended in
// parameter order, each at an offset aligned for its type, and the array of
// pointers to them that cuLaunchKernel reads. Get one with GetArgs, fill it,
// launch, and return it with PutArgs; packing and launching do not allocate.
// An Args is used by one goroutine at a time.
//
// Appending more than 32 parameters or 4096 bytes of values panics.
type Args struct {
	buf   [argBytes]byte
	ptrs  [maxArgs]unsafe.Pointer // into buf: the kernelParams array
	kinds [maxArgs]argKind
	n     int
	used  uintptr // bytes of buf in use, padding included

	pin runtime.Pinner // held across a launch; kept here so reusing it is free
}

var argsPool = sync.Pool{New: func() any { return new(Args) }}

// GetArgs returns an empty Args from a pool.
func GetArgs() *Args {
	return argsPool.Get().(*Args)
}

// PutArgs returns a to the pool. a must not be used afterwards.
func PutArgs(a *Args) {
	a.Reset()
	argsPool.Put(a)
}

// Reset empties a for reuse.
func (a *Args) Reset() {
	a.n = 0
	a.used = 0
}

// slot reserves size bytes aligned to align (a power of two) and records
// the parameter. Offsets are aligned in absolute address terms, so each
// value's address is aligned as the driver expects when it reads it.
func (a *Args) slot(size, align uintptr, ptx uint8) unsafe.Pointer {
	if a.n == maxArgs {
		panic("driver: Args: more than 32 kernel parameters")
	}
	base := uintptr(unsafe.Pointer(&a.buf[0]))
	off := (base+a.used+align-1)&^(align-1) - base
	if off+size > argBytes {
		panic(fmt.Sprintf("driver: Args: parameters exceed %d bytes", argBytes))
	}
	p := unsafe.Pointer(&a.buf[off])
	a.ptrs[a.n] = p
	a.kinds[a.n] = argKind{ptx: ptx, align: uint8(align), size: uint16(size)}
	a.n++
	a.used = off + size
	return p
}

// Ptr appends a device pointer (PTX .u64).
func (a *Args) Ptr(p DevicePtr) { *(*uint64)(a.slot(8, 8, ptxU64)) = uint64(p) }

// U32 appends an unsigned 32-bit integer (PTX .u32).
func (a *Args) U32(v uint32) { *(*uint32)(a.slot(4, 4, ptxU32)) = v }

// I32 appends a signed 32-bit integer, which nvcc declares as PTX .u32.
func (a *Args) I32(v int32) { *(*int32)(a.slot(4, 4, ptxU32)) = v }

// U64 appends an unsigned 64-bit integer (PTX .u64).
func (a *Args) U64(v uint64) { *(*uint64)(a.slot(8, 8, ptxU64)) = v }

// I64 appends a signed 64-bit integer, which nvcc declares as PTX .u64.
func (a *Args) I64(v int64) { *(*int64)(a.slot(8, 8, ptxU64)) = v }

// F32 appends a float (PTX .f32).
func (a *Args) F32(v float32) { *(*float32)(a.slot(4, 4, ptxF32)) = v }

// F64 appends a double (PTX .f64).
func (a *Args) F64(v float64) { *(*float64)(a.slot(8, 8, ptxF64)) = v }

// Bytes appends a struct passed by value, declared in PTX as
// ".param .align <align> .b8 name[<size>]": it copies size bytes from p.
// align must be a power of two no larger than 128, and the Go value at p
// must have the C layout the kernel expects.
func (a *Args) Bytes(p unsafe.Pointer, size, align uintptr) {
	if align == 0 || align&(align-1) != 0 || align > 128 {
		panic(fmt.Sprintf("driver: Args.Bytes: alignment %d is not a power of two up to 128", align))
	}
	if size == 0 || size > argBytes {
		panic(fmt.Sprintf("driver: Args.Bytes: size %d out of range", size))
	}
	dst := a.slot(size, align, ptxB8)
	copy(unsafe.Slice((*byte)(dst), size), unsafe.Slice((*byte)(p), size))
}

// Kinds returns what was packed, in parameter order.
func (a *Args) Kinds() []ArgKind {
	out := make([]ArgKind, a.n)
	for i, k := range a.kinds[:a.n] {
		out[i] = ArgKind{PTXType: ptxTypeNames[k.ptx], Size: int(k.size), Align: int(k.align)}
	}
	return out
}
