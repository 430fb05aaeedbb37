package driver

import (
	"errors"
	"fmt"
	"unsafe"
)

// Stream is a queue of device work (CUstream), created by Context.NewStream
// or borrowed from another library by Context.WrapStream. Work on one
// stream runs in order; work on different streams may overlap. Destroy
// must not race with other use of the stream.
type Stream struct {
	ctx      *Context
	handle   uintptr // CUstream
	borrowed bool    // WrapStream's: its owner destroys it, not Destroy
}

var errDestroyed = errors.New("driver: use of a destroyed stream or event")

// Context returns the context the stream belongs to.
func (s *Stream) Context() *Context { return s.ctx }

// Handle returns the CUstream, for passing to other CUDA libraries.
func (s *Stream) Handle() uintptr { return s.handle }

// Synchronize waits until all work queued on the stream has finished.
func (s *Stream) Synchronize() error {
	if s.handle == 0 {
		return errDestroyed
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuStreamSynchronize.do(s.handle)
}

// Destroy releases the stream once its queued work has finished; it
// returns at once. Destroying a destroyed stream does nothing. A stream
// from WrapStream is only forgotten: its owner destroys the CUstream.
func (s *Stream) Destroy() error {
	if s.handle == 0 {
		return nil
	}
	if s.borrowed {
		s.handle = 0
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	if err := cuStreamDestroy.do(s.handle); err != nil {
		return err
	}
	s.handle = 0
	return nil
}

// CopyDtoDAsync queues a copy of all of src to the start of dst, which must
// be at least as large.
func (s *Stream) CopyDtoDAsync(dst, src Buffer) error {
	if src.Size > dst.Size {
		return errTooSmall("CopyDtoDAsync", src.Size, dst.Size)
	}
	if s.handle == 0 {
		return errDestroyed
	}
	if src.Size <= 0 {
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuMemcpyDtoDAsync.do(uintptr(dst.Addr), uintptr(src.Addr), uintptr(src.Size), s.handle)
}

// MemsetD8Async queues setting every byte of dst to v.
func (s *Stream) MemsetD8Async(dst Buffer, v uint8) error {
	if s.handle == 0 {
		return errDestroyed
	}
	if dst.Size <= 0 {
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuMemsetD8Async.do(uintptr(dst.Addr), uintptr(v), uintptr(dst.Size), s.handle)
}

// MemsetD32Async queues setting every 32-bit word of dst to v; dst.Size
// must be a multiple of 4.
func (s *Stream) MemsetD32Async(dst Buffer, v uint32) error {
	if dst.Size%4 != 0 {
		return fmt.Errorf("driver: MemsetD32Async: %d bytes is not a whole number of 32-bit words", dst.Size)
	}
	if s.handle == 0 {
		return errDestroyed
	}
	if dst.Size <= 0 {
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuMemsetD32Async.do(uintptr(dst.Addr), uintptr(v), uintptr(dst.Size/4), s.handle)
}

// CopyHtoDAsync queues a copy of src to the start of dst. src must stay
// reachable and unchanged until the copy has finished (a Synchronize of
// the stream, or of an event recorded after it).
func (s *Stream) CopyHtoDAsync(dst Buffer, src []byte) error {
	if int64(len(src)) > dst.Size {
		return errTooSmall("CopyHtoDAsync", int64(len(src)), dst.Size)
	}
	if s.handle == 0 {
		return errDestroyed
	}
	if len(src) == 0 {
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuMemcpyHtoDAsync.call(uintptr(dst.Addr), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), s.handle)
}

// CopyDtoHAsync queues a copy of len(dst) bytes from the start of src into
// dst. dst must stay reachable and must not be read until the copy has
// finished (a Synchronize of the stream, or of an event recorded after
// it).
func (s *Stream) CopyDtoHAsync(dst []byte, src Buffer) error {
	if int64(len(dst)) > src.Size {
		return errTooSmall("CopyDtoHAsync", int64(len(dst)), src.Size)
	}
	if s.handle == 0 {
		return errDestroyed
	}
	if len(dst) == 0 {
		return nil
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuMemcpyDtoHAsync.call(uintptr(unsafe.Pointer(&dst[0])), uintptr(src.Addr), uintptr(len(dst)), s.handle)
}

// CopyToDeviceAsync queues a copy of the elements of src to the start of
// dst on s (see Stream.CopyHtoDAsync for how long src must stay).
func CopyToDeviceAsync[T Element](s *Stream, dst Buffer, src []T) error {
	return s.CopyHtoDAsync(dst, asBytes(src))
}

// CopyFromDeviceAsync queues filling dst with elements read from the start
// of src on s (see Stream.CopyDtoHAsync for when dst may be read).
func CopyFromDeviceAsync[T Element](s *Stream, dst []T, src Buffer) error {
	return s.CopyDtoHAsync(asBytes(dst), src)
}

// WaitEvent makes the work queued on s after this call wait until the
// work before e's last Record has finished, on the device, without
// blocking the host: to order a Run after work on another stream, the
// framework's own for example.
func (s *Stream) WaitEvent(e *Event) error {
	if e == nil {
		return errors.New("driver: Stream.WaitEvent: nil event")
	}
	if s.handle == 0 || e.handle == 0 {
		return errDestroyed
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuStreamWaitEvent.do(s.handle, e.handle, 0)
}
