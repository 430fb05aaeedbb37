package driver

import (
	"errors"
	"runtime"
	"unsafe"
)

// Context is a device's primary CUDA context. Its methods may be called
// from any goroutine.
//
// The driver tracks one current context per OS thread, and goroutines move
// between threads, so each method locks its goroutine to the thread, makes
// the context current there if it is not, calls the driver and unlocks.
type Context struct {
	dev    *Device
	handle uintptr // CUcontext
}

// Device returns the device the context belongs to.
func (c *Context) Device() *Device { return c.dev }

// bind locks the goroutine to its OS thread and makes c current there. On
// success the caller must call c.unbind(prev); on failure the thread is
// already unlocked.
func (c *Context) bind() (prev uintptr, err error) {
	runtime.LockOSThread()
	prev, err = cuCtxGetCurrent.out()
	if err == nil && prev != c.handle {
		err = cuCtxSetCurrent.do(c.handle)
	}
	if err != nil {
		runtime.UnlockOSThread()
		return 0, err
	}
	return prev, nil
}

// unbind gives the thread back the context another user had made current
// on it, if any, and unlocks the thread.
func (c *Context) unbind(prev uintptr) {
	if prev != 0 && prev != c.handle {
		_ = cuCtxSetCurrent.do(prev) // best effort: that context was current a moment ago
	}
	runtime.UnlockOSThread()
}

// Synchronize waits until all work queued in the context has finished.
func (c *Context) Synchronize() error {
	prev, err := c.bind()
	if err != nil {
		return err
	}
	defer c.unbind(prev)
	return cuCtxSynchronize.do()
}

// MemInfo returns the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total int64, err error) {
	prev, err := c.bind()
	if err != nil {
		return 0, 0, err
	}
	defer c.unbind(prev)
	v := new([2]uintptr)
	if err := cuMemGetInfo.call(uintptr(unsafe.Pointer(&v[0])), uintptr(unsafe.Pointer(&v[1]))); err != nil {
		return 0, 0, err
	}
	return int64(v[0]), int64(v[1]), nil
}

// NewStream creates a stream that does not synchronize with the legacy
// default stream (CU_STREAM_NON_BLOCKING).
func (c *Context) NewStream() (*Stream, error) {
	const nonBlocking = 1
	prev, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer c.unbind(prev)
	h, err := cuStreamCreate.out(nonBlocking)
	if err != nil {
		return nil, err
	}
	return &Stream{ctx: c, handle: h}, nil
}

// WrapStream returns a Stream over handle, a CUstream of this context that
// another library created (a framework's own stream, say), so that Runs
// can be queued on it. The Stream does not own it: Destroy only forgets
// it, and the creator destroys it after the last use. handle 0 (the
// legacy default stream, which synchronizes with every other stream) is
// refused.
func (c *Context) WrapStream(handle uintptr) (*Stream, error) {
	if handle == 0 {
		return nil, errors.New("driver: WrapStream: handle 0 is the legacy default stream; pass a stream the framework created")
	}
	return &Stream{ctx: c, handle: handle, borrowed: true}, nil
}

// NewEvent creates an event that records timing.
func (c *Context) NewEvent() (*Event, error) {
	prev, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer c.unbind(prev)
	h, err := cuEventCreate.out(0)
	if err != nil {
		return nil, err
	}
	return &Event{ctx: c, handle: h}, nil
}
