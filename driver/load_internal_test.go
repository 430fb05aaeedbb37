package driver

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// isolateLoad gives a test a fresh Load and symbol table, and puts the
// process's own back afterwards, so a failed load here does not break GPU
// tests that run in the same binary.
func isolateLoad(t *testing.T) {
	t.Helper()
	var saved [len(symbols)]uintptr
	for i, s := range symbols {
		saved[i] = s.addr
	}
	path, ready := libraryPath, symbolsReady.Load()
	loadOnce, loadErr = sync.Once{}, nil
	t.Cleanup(func() {
		for i, s := range symbols {
			s.addr = saved[i]
		}
		libraryPath = path
		symbolsReady.Store(ready)
		loadOnce, loadErr = sync.Once{}, nil
	})
}

func TestLoadFromMissingLibrary(t *testing.T) {
	isolateLoad(t)
	const path = "/nonexistent/libcuda.so.1"
	err := loadFrom(path)
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("loadFrom(%q) = %v, want an error matching ErrNoDriver", path, err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the path tried", err)
	}
}

func TestLoadWithoutDriver(t *testing.T) {
	isolateLoad(t)
	t.Setenv(envLibrary, "/nonexistent/libcuda.so.1")

	if err := Load(); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Load() = %v, want ErrNoDriver", err)
	}
	if _, err := DeviceCount(); !errors.Is(err, ErrNoDriver) {
		t.Errorf("DeviceCount() error = %v, want ErrNoDriver", err)
	}
	if _, err := GetDevice(0); !errors.Is(err, ErrNoDriver) {
		t.Errorf("GetDevice(0) error = %v, want ErrNoDriver", err)
	}
	if _, err := Version(); !errors.Is(err, ErrNoDriver) {
		t.Errorf("Version() error = %v, want ErrNoDriver", err)
	}
}

func TestLoadFromLibraryWithoutCUDA(t *testing.T) {
	lib := fakeLibrary(t)
	isolateLoad(t)
	err := loadFrom(lib)
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "cuInit") {
		t.Fatalf("loadFrom(%q) = %v, want ErrNoDriver naming cuInit", lib, err)
	}
}

func TestMissingSymbolIsAnError(t *testing.T) {
	isolateLoad(t)
	libraryPath = "libcuda.so.1"
	cuLaunchKernel.addr = 0
	err := cuLaunchKernel.do(1, 2, 3)
	if err == nil || err.Error() != "driver: symbol cuLaunchKernel not found in libcuda.so.1" {
		t.Fatalf("calling a missing symbol: %v", err)
	}
	cuMemAlloc.addr = 0
	if _, err := cuMemAlloc.out(8); err == nil || !strings.Contains(err.Error(), "cuMemAlloc_v2") {
		t.Fatalf("calling a missing symbol: %v", err)
	}
}
