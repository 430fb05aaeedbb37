package driver

// Binding is a context made current on a locked OS thread by Context.Bind.
// Release undoes it.
type Binding struct {
	ctx  *Context
	prev uintptr
}

// Bind locks the calling goroutine to its OS thread and makes c the
// thread's current context, for calls into other CUDA libraries (NCCL, the
// CUDA runtime, cuBLAS) that work on the current context. The caller must
// call Release on the returned Binding from the same goroutine; on error
// the thread is already unlocked. Bind and Release nest with
// runtime.LockOSThread, and a warm pair does not allocate.
func (c *Context) Bind() (Binding, error) {
	prev, err := c.bind()
	if err != nil {
		return Binding{}, err
	}
	return Binding{ctx: c, prev: prev}, nil
}

// Release gives the thread back the context that was current before Bind,
// if another one was, and unlocks the thread.
func (b Binding) Release() {
	if b.ctx != nil {
		b.ctx.unbind(b.prev)
	}
}
