package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
)

func TestResultName(t *testing.T) {
	for code, want := range map[driver.Result]string{
		0:     "CUDA_SUCCESS",
		2:     "CUDA_ERROR_OUT_OF_MEMORY",
		100:   "CUDA_ERROR_NO_DEVICE",
		222:   "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
		700:   "CUDA_ERROR_ILLEGAL_ADDRESS",
		12345: "CUDA_ERROR_12345",
	} {
		if got := code.Name(); got != want {
			t.Errorf("Result(%d).Name() = %q, want %q", code, got, want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	// The driver's message follows the name when a driver is loaded.
	e := &driver.Error{Op: "cuMemAlloc(1073741824 bytes)", Code: 2}
	if got := e.Error(); got != "driver: cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY" &&
		got != "driver: cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory" {
		t.Errorf("Error() = %q", got)
	}

	e = &driver.Error{Op: "cuLaunchKernel", Code: 701, Detail: "kernel binary_bw_mul_f32 grid [528 1 1] block [1024 1 1] smem 0"}
	got := e.Error()
	if !strings.HasPrefix(got, "driver: cuLaunchKernel: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES") ||
		!strings.HasSuffix(got, ": kernel binary_bw_mul_f32 grid [528 1 1] block [1024 1 1] smem 0") {
		t.Errorf("Error() = %q", got)
	}
}

func TestErrorIs(t *testing.T) {
	oom := fmt.Errorf("ops: workspace: %w", &driver.Error{Op: "cuMemAlloc(8 bytes)", Code: 2})
	if !errors.Is(oom, driver.ErrOutOfMemory) {
		t.Errorf("errors.Is(%v, ErrOutOfMemory) = false", oom)
	}
	if errors.Is(oom, driver.ErrNoDriver) {
		t.Errorf("errors.Is(%v, ErrNoDriver) = true", oom)
	}
	other := &driver.Error{Op: "cuMemFree", Code: 1}
	if errors.Is(other, driver.ErrOutOfMemory) {
		t.Errorf("errors.Is(%v, ErrOutOfMemory) = true", other)
	}
	for _, code := range []driver.Result{34, 100} {
		if err := (&driver.Error{Op: "cuInit", Code: code}); !errors.Is(err, driver.ErrNoDriver) {
			t.Errorf("errors.Is(%v, ErrNoDriver) = false", err)
		}
	}
	var e *driver.Error
	if !errors.As(oom, &e) || e.Code != 2 {
		t.Errorf("errors.As(%v, *Error) failed", oom)
	}
}
