package driver

import (
	"errors"
	"fmt"
	"unsafe"
)

// Launch queues f on s over a grid of blocks, with sharedMem bytes of
// dynamic shared memory per block and the parameters packed in a. It
// returns once the launch is queued; errors the kernel causes while running
// surface at a later synchronizing call, unless BARACUDA_SYNC=1 was set when
// the driver was loaded, in which case Launch waits for the kernel and
// reports them itself.
//
// A warm Launch does not allocate.
func (f *Function) Launch(s *Stream, grid, block [3]uint32, sharedMem uint32, a *Args) error {
	if s == nil || a == nil {
		return errors.New("driver: Launch " + f.name + ": nil stream or args")
	}
	if s.handle == 0 {
		return errDestroyed
	}
	// The driver reads a.ptrs and, through them, a.buf: Go memory holding
	// Go pointers, which must be pinned while C code uses it.
	a.pin.Pin(a)
	prev, err := s.ctx.bind()
	if err == nil {
		// a is pinned, so the address of its pointer array may travel as
		// a plain integer.
		err = cuLaunchKernel.do(f.handle,
			uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
			uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
			uintptr(sharedMem), s.handle, uintptr(unsafe.Pointer(&a.ptrs[0])), 0)
		if err == nil && syncLaunches {
			err = cuStreamSynchronize.do(s.handle)
		}
		s.ctx.unbind(prev)
	}
	a.pin.Unpin()
	if err != nil {
		return f.launchError(err, grid, block, sharedMem)
	}
	return nil
}

// launchError names the kernel and launch shape in err. It is kept out of
// Launch so that formatting costs nothing on success.
//
//go:noinline
func (f *Function) launchError(err error, grid, block [3]uint32, sharedMem uint32) error {
	e, ok := err.(*Error)
	if !ok {
		return fmt.Errorf("%w (launching kernel %s)", err, f.name)
	}
	e.Detail = fmt.Sprintf("kernel %s grid [%d %d %d] block [%d %d %d] smem %d",
		f.name, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMem)
	return e
}
