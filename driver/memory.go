package driver

import (
	"fmt"
	"unsafe"
)

// Alloc allocates bytes of device memory. Zero bytes returns the zero
// Buffer. The memory is not initialized; release it with Free.
func (c *Context) Alloc(bytes int64) (Buffer, error) {
	if bytes < 0 {
		return Buffer{}, fmt.Errorf("driver: Alloc(%d): negative size", bytes)
	}
	if bytes == 0 {
		return Buffer{}, nil
	}
	prev, err := c.bind()
	if err != nil {
		return Buffer{}, err
	}
	defer c.unbind(prev)
	p, err := cuMemAlloc.out(uintptr(bytes))
	if err != nil {
		return Buffer{}, annotate(err, fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), "")
	}
	return Buffer{Addr: DevicePtr(p), Size: bytes}, nil
}

// Free releases memory returned by Alloc. Freeing the zero Buffer does nothing.
func (c *Context) Free(b Buffer) error {
	if b.Addr == 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	return cuMemFree.do(uintptr(b.Addr))
}

// cuStreamLegacy is CU_STREAM_LEGACY, the handle of the legacy default
// stream.
const cuStreamLegacy = 0x1

// waitLegacy waits for the work queued on the legacy default stream, where
// the driver runs the synchronous copies and memsets. Their calls may
// return before the device has finished them (the driver API's
// synchronization rules: a copy from pageable host memory once the data is
// staged, a device-to-device copy or a memset at once), and the streams of
// NewStream do not wait for that stream, so without it a kernel queued
// right after CopyHtoD, CopyDtoD, Memset8 or Memset32 could read the old
// contents or have its writes overwritten by the copy. The caller holds the
// context bound.
func waitLegacy() error {
	return cuStreamSynchronize.do(cuStreamLegacy)
}

// CopyHtoD copies src to the start of dst and waits for the copy.
func (c *Context) CopyHtoD(dst Buffer, src []byte) error {
	if int64(len(src)) > dst.Size {
		return errTooSmall("CopyHtoD", int64(len(src)), dst.Size)
	}
	if len(src) == 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	if err := cuMemcpyHtoD.call(uintptr(dst.Addr), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))); err != nil {
		return err
	}
	return waitLegacy()
}

// CopyDtoH copies len(dst) bytes from the start of src into dst and waits
// for the copy.
func (c *Context) CopyDtoH(dst []byte, src Buffer) error {
	if int64(len(dst)) > src.Size {
		return fmt.Errorf("driver: CopyDtoH: %d bytes requested from a %d-byte buffer", len(dst), src.Size)
	}
	if len(dst) == 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	return cuMemcpyDtoH.call(uintptr(unsafe.Pointer(&dst[0])), uintptr(src.Addr), uintptr(len(dst)))
}

// CopyDtoD copies all of src to the start of dst, which must be at least as
// large, and waits for the copy.
func (c *Context) CopyDtoD(dst, src Buffer) error {
	if src.Size > dst.Size {
		return errTooSmall("CopyDtoD", src.Size, dst.Size)
	}
	if src.Size <= 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	if err := cuMemcpyDtoD.do(uintptr(dst.Addr), uintptr(src.Addr), uintptr(src.Size)); err != nil {
		return err
	}
	return waitLegacy()
}

// Memset8 sets every byte of dst to v and waits for it.
func (c *Context) Memset8(dst Buffer, v uint8) error {
	if dst.Size <= 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	if err := cuMemsetD8.do(uintptr(dst.Addr), uintptr(v), uintptr(dst.Size)); err != nil {
		return err
	}
	return waitLegacy()
}

// Memset32 sets every 32-bit word of dst to v and waits for it. dst.Size
// must be a multiple of 4 (and dst.Addr 4-byte aligned, as the driver
// requires).
func (c *Context) Memset32(dst Buffer, v uint32) error {
	if dst.Size%4 != 0 {
		return fmt.Errorf("driver: Memset32: buffer size %d is not a multiple of 4", dst.Size)
	}
	if dst.Size <= 0 {
		return nil
	}
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	if err := cuMemsetD32.do(uintptr(dst.Addr), uintptr(v), uintptr(dst.Size/4)); err != nil {
		return err
	}
	return waitLegacy()
}

// Element is a host element type that device memory can hold as it is:
// a fixed-size number. f16 and bf16 data is []uint16 (see package dtype
// for the conversions).
type Element interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// CopyToDevice copies the elements of src to the start of dst.
func CopyToDevice[T Element](c *Context, dst Buffer, src []T) error {
	return c.CopyHtoD(dst, asBytes(src))
}

// CopyFromDevice fills dst with elements read from the start of src.
func CopyFromDevice[T Element](c *Context, dst []T, src Buffer) error {
	return c.CopyDtoH(asBytes(dst), src)
}

// asBytes views the memory of s as bytes.
func asBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

func errTooSmall(op string, n, size int64) error {
	return fmt.Errorf("driver: %s: %d bytes do not fit in a %d-byte buffer", op, n, size)
}
