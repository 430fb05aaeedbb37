package driver_test

import (
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
)

func TestBufferSlice(t *testing.T) {
	b := driver.Buffer{Addr: 0x10000, Size: 1024}
	for _, tc := range []struct {
		off, n int64
		want   driver.Buffer
	}{
		{0, 1024, b},
		{0, 0, driver.Buffer{Addr: 0x10000}},
		{256, 512, driver.Buffer{Addr: 0x10100, Size: 512}},
		{1024, 0, driver.Buffer{Addr: 0x10400}},
		{1000, 24, driver.Buffer{Addr: 0x10000 + 1000, Size: 24}},
	} {
		if got := b.Slice(tc.off, tc.n); got != tc.want {
			t.Errorf("Slice(%d, %d) = %+v, want %+v", tc.off, tc.n, got, tc.want)
		}
	}

	for _, r := range [][2]int64{{-1, 1}, {0, -1}, {1025, 0}, {1000, 25}, {1, 1 << 62}, {0, 1025}} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "driver: ") {
					t.Errorf("Slice(%d, %d) panicked with %q, want a driver: message", r[0], r[1], msg)
				}
			}()
			b.Slice(r[0], r[1])
		}()
	}
}
