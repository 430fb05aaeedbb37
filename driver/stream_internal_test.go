package driver

import (
	"errors"
	"testing"
)

// TestStreamArgumentsWithoutGPU: the checks that need no driver.
func TestStreamArgumentsWithoutGPU(t *testing.T) {
	var c *Context
	if _, err := c.WrapStream(0); err == nil {
		t.Error("WrapStream(0) accepted the legacy default stream")
	}
	s := &Stream{} // destroyed
	if err := s.MemsetD32Async(Buffer{Addr: 4096, Size: 6}, 0); err == nil {
		t.Error("MemsetD32Async took 6 bytes")
	}
	if err := s.MemsetD32Async(Buffer{Addr: 4096, Size: 8}, 0); !errors.Is(err, errDestroyed) {
		t.Errorf("MemsetD32Async on a destroyed stream: %v", err)
	}
	if err := s.CopyHtoDAsync(Buffer{Addr: 4096, Size: 2}, make([]byte, 3)); err == nil {
		t.Error("CopyHtoDAsync copied 3 bytes into 2")
	}
	if err := s.CopyDtoHAsync(make([]byte, 3), Buffer{Addr: 4096, Size: 2}); err == nil {
		t.Error("CopyDtoHAsync read 3 bytes out of 2")
	}
	if err := s.WaitEvent(nil); err == nil {
		t.Error("WaitEvent(nil) gave no error")
	}
	if err := s.WaitEvent(&Event{}); !errors.Is(err, errDestroyed) {
		t.Errorf("WaitEvent on destroyed objects: %v", err)
	}
	w := &Stream{handle: 1, borrowed: true}
	if err := w.Destroy(); err != nil || w.handle != 0 {
		t.Errorf("Destroy of a wrapped stream: %v, handle %d", err, w.handle)
	}
}
