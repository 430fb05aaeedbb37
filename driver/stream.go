package driver

import "errors"

// Stream is a queue of device work (CUstream) created by Context.NewStream.
// Work on one stream runs in order; work on different streams may overlap.
// Destroy must not race with other use of the stream.
type Stream struct {
	ctx    *Context
	handle uintptr // CUstream
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
// returns at once. Destroying a destroyed stream does nothing.
func (s *Stream) Destroy() error {
	if s.handle == 0 {
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
