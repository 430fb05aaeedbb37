package driver

import (
	"math"
	"strings"
	"testing"
	"unsafe"
)

// offset is where parameter i lives relative to the start of the buffer.
func (a *Args) offset(i int) uintptr {
	return uintptr(a.ptrs[i]) - uintptr(unsafe.Pointer(&a.buf[0]))
}

func TestArgsLayout(t *testing.T) {
	a := new(Args)
	type stride struct {
		dims [3]int64
		rank int32
	} // 28 bytes of data, 32 with padding, as C lays it out
	st := stride{dims: [3]int64{4, 7, 9}, rank: 3}

	a.Ptr(0xdead0000)
	a.U32(7)
	a.F64(1.5)
	a.I32(-1)
	a.F32(2.5)
	a.Bytes(unsafe.Pointer(&st), unsafe.Sizeof(st), unsafe.Alignof(st))
	a.U64(math.MaxUint64)
	a.I64(-2)

	if a.n != 8 {
		t.Fatalf("packed %d parameters, want 8", a.n)
	}
	for i := range a.n {
		k := a.kinds[i]
		if addr := uintptr(a.ptrs[i]); addr%uintptr(k.align) != 0 {
			t.Errorf("parameter %d at %#x is not %d-byte aligned", i, addr, k.align)
		}
		if i > 0 {
			prev := a.offset(i-1) + uintptr(a.kinds[i-1].size)
			if a.offset(i) < prev || a.offset(i)-prev >= uintptr(k.align) {
				t.Errorf("parameter %d at offset %d, previous ends at %d: not packed like a C struct", i, a.offset(i), prev)
			}
		}
	}
	if a.offset(0) != 0 || a.offset(1) != 8 || a.offset(2) != 16 || a.offset(3) != 24 || a.offset(4) != 28 {
		t.Errorf("offsets %d %d %d %d %d, want 0 8 16 24 28", a.offset(0), a.offset(1), a.offset(2), a.offset(3), a.offset(4))
	}

	if got := *(*uint64)(a.ptrs[0]); got != 0xdead0000 {
		t.Errorf("Ptr stored %#x", got)
	}
	if got := *(*uint32)(a.ptrs[1]); got != 7 {
		t.Errorf("U32 stored %d", got)
	}
	if got := *(*float64)(a.ptrs[2]); got != 1.5 {
		t.Errorf("F64 stored %v", got)
	}
	if got := *(*uint32)(a.ptrs[3]); got != math.MaxUint32 {
		t.Errorf("I32(-1) stored %#x", got)
	}
	if got := *(*float32)(a.ptrs[4]); got != 2.5 {
		t.Errorf("F32 stored %v", got)
	}
	if got := *(*stride)(a.ptrs[5]); got != st {
		t.Errorf("Bytes stored %+v, want %+v", got, st)
	}
	if got := *(*uint64)(a.ptrs[6]); got != math.MaxUint64 {
		t.Errorf("U64 stored %#x", got)
	}
	if got := *(*int64)(a.ptrs[7]); got != -2 {
		t.Errorf("I64 stored %d", got)
	}

	want := []ArgKind{
		{"u64", 8, 8}, {"u32", 4, 4}, {"f64", 8, 8}, {"u32", 4, 4}, {"f32", 4, 4},
		{"b8", 32, 8}, {"u64", 8, 8}, {"u64", 8, 8},
	}
	got := a.Kinds()
	if len(got) != len(want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Kinds()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}

	a.Reset()
	if len(a.Kinds()) != 0 {
		t.Errorf("Kinds() after Reset = %v", a.Kinds())
	}
	a.U32(1)
	if a.offset(0) != 0 {
		t.Errorf("first parameter after Reset at offset %d", a.offset(0))
	}
}

func TestArgsAlignsWideStructs(t *testing.T) {
	a := new(Args)
	var v [4]float32
	a.U32(1)
	a.Bytes(unsafe.Pointer(&v), 16, 16)
	if addr := uintptr(a.ptrs[1]); addr%16 != 0 {
		t.Errorf("16-byte aligned struct stored at %#x", addr)
	}
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s did not panic", name)
			return
		}
		if s, _ := r.(string); !strings.HasPrefix(s, "driver: ") {
			t.Errorf("%s panicked with %v, want a \"driver: \" message", name, r)
		}
	}()
	f()
}

func TestArgsCapacity(t *testing.T) {
	mustPanic(t, "33 parameters", func() {
		a := new(Args)
		for range maxArgs + 1 {
			a.U32(0)
		}
	})
	mustPanic(t, "more than 4096 bytes", func() {
		a := new(Args)
		big := make([]byte, 4000)
		a.Bytes(unsafe.Pointer(&big[0]), 4000, 8)
		a.Bytes(unsafe.Pointer(&big[0]), 200, 8)
	})
	mustPanic(t, "alignment 3", func() {
		var x [3]byte
		new(Args).Bytes(unsafe.Pointer(&x), 3, 3)
	})
	mustPanic(t, "size 0", func() {
		var x [3]byte
		new(Args).Bytes(unsafe.Pointer(&x), 0, 1)
	})

	a := new(Args)
	for range maxArgs {
		a.U32(0)
	}
	if len(a.Kinds()) != maxArgs {
		t.Errorf("could not pack %d parameters", maxArgs)
	}
	a.Reset()
	big := make([]byte, argBytes)
	a.Bytes(unsafe.Pointer(&big[0]), argBytes-8, 1) // exactly fills with the next one
	a.Ptr(0)
}

func TestArgsPackingDoesNotAllocate(t *testing.T) {
	var ptrs [5]DevicePtr
	var meta [50]int64 // a 400-byte by-value struct: dims and strides
	a := GetArgs()
	defer PutArgs(a)
	n := testing.AllocsPerRun(1000, func() {
		a.Reset()
		for _, p := range ptrs {
			a.Ptr(p)
		}
		a.F64(0.5)
		a.Bytes(unsafe.Pointer(&meta), unsafe.Sizeof(meta), 8)
	})
	if n != 0 {
		t.Errorf("packing arguments: %v allocations, want 0", n)
	}
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector
	}
	n = testing.AllocsPerRun(1000, func() {
		b := GetArgs()
		b.U32(1)
		PutArgs(b)
	})
	if n != 0 {
		t.Errorf("GetArgs/PutArgs: %v allocations, want 0", n)
	}
}
