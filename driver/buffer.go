package driver

import "fmt"

// DevicePtr is an address in device memory (CUdeviceptr).
type DevicePtr uintptr

// Buffer is a view of Size bytes of device memory at Addr. It does not own
// the memory: Context.Alloc returns one that Context.Free releases, and
// memory from any other allocator in the process can be wrapped directly.
type Buffer struct {
	Addr DevicePtr
	Size int64
}

// Slice returns the n bytes of b starting at byte off. It panics if the
// range is not inside b.
func (b Buffer) Slice(off, n int64) Buffer {
	if off < 0 || n < 0 || off > b.Size || n > b.Size-off {
		panic(fmt.Sprintf("driver: Buffer.Slice(%d, %d) out of range for a %d-byte buffer", off, n, b.Size))
	}
	return Buffer{Addr: b.Addr + DevicePtr(off), Size: n}
}
