package driver

import (
	"errors"
	"testing"
)

// TestSyncCopiesWaitForLegacyStream: the synchronous copies and memsets
// run on the legacy default stream, which the library's non-blocking
// streams do not wait for, so each ends with cuStreamSynchronize on that
// stream and reports its failure.
func TestSyncCopiesWaitForLegacyStream(t *testing.T) {
	ok, fail := fakeDriver(t)
	for _, s := range []*symbol{&cuMemcpyHtoD, &cuMemcpyDtoD, &cuMemsetD8, &cuMemsetD32} {
		s.addr = ok
	}
	cuStreamSynchronize.addr = fail
	ctx := &Context{handle: 1}
	dst, src := Buffer{Addr: 1 << 20, Size: 64}, Buffer{Addr: 2 << 20, Size: 16}
	calls := []struct {
		name string
		f    func() error
	}{
		{"CopyHtoD", func() error { return ctx.CopyHtoD(dst, make([]byte, 16)) }},
		{"CopyDtoD", func() error { return ctx.CopyDtoD(dst, src) }},
		{"Memset8", func() error { return ctx.Memset8(dst, 0xff) }},
		{"Memset32", func() error { return ctx.Memset32(dst, 7) }},
	}
	for _, c := range calls {
		var e *Error
		if err := c.f(); !errors.As(err, &e) || e.Op != "cuStreamSynchronize" {
			t.Errorf("%s with cuStreamSynchronize failing: error %v, want cuStreamSynchronize's", c.name, err)
		}
	}
	cuStreamSynchronize.addr = ok
	for _, c := range calls {
		if err := c.f(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
