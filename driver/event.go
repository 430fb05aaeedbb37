package driver

import (
	"errors"
	"math"
)

// Event marks a point in a stream's work (CUevent), for timing and waiting.
// Destroy must not race with other use of the event.
type Event struct {
	ctx    *Context
	handle uintptr // CUevent
}

// Record marks the point after all work queued on s so far.
func (e *Event) Record(s *Stream) error {
	if s == nil {
		return errors.New("driver: Event.Record: nil stream")
	}
	if e.handle == 0 || s.handle == 0 {
		return errDestroyed
	}
	prev, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer e.ctx.unbind(prev)
	return cuEventRecord.do(e.handle, s.handle)
}

// Synchronize waits until the work before the last Record has finished.
func (e *Event) Synchronize() error {
	if e.handle == 0 {
		return errDestroyed
	}
	prev, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer e.ctx.unbind(prev)
	return cuEventSynchronize.do(e.handle)
}

// Destroy releases the event. Destroying a destroyed event does nothing.
func (e *Event) Destroy() error {
	if e.handle == 0 {
		return nil
	}
	prev, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer e.ctx.unbind(prev)
	if err := cuEventDestroy.do(e.handle); err != nil {
		return err
	}
	e.handle = 0
	return nil
}

// ElapsedMs returns the milliseconds between two recorded events (about
// half a microsecond resolution). Both must have completed.
func ElapsedMs(start, end *Event) (float32, error) {
	if start.handle == 0 || end.handle == 0 {
		return 0, errDestroyed
	}
	prev, err := start.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer start.ctx.unbind(prev)
	bits, err := cuEventElapsedTime.out(start.handle, end.handle)
	if err != nil {
		return 0, err
	}
	return math.Float32frombits(uint32(bits)), nil
}
