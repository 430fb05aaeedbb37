package driver

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// ErrNoDriver is returned, wrapped, when the CUDA driver library cannot be
// loaded or reports that there is no usable GPU (CUDA_ERROR_NO_DEVICE,
// CUDA_ERROR_STUB_LIBRARY). Tests use it to skip GPU work.
var ErrNoDriver = errors.New("driver: no CUDA driver found")

const (
	// envLibrary overrides the path of the driver library.
	envLibrary = "BARACUDA_LIBCUDA"
	// envSync=1 synchronizes after every launch so that asynchronous
	// faults are reported by the launch of the kernel that caused them.
	envSync = "BARACUDA_SYNC"
)

var (
	loadOnce sync.Once
	loadErr  error

	// Written once by loadFrom before any object exists that could read them.
	libraryPath   string
	driverVersion int
	syncLaunches  bool

	// symbolsReady tells Result.Name, which may run before or during Load,
	// that the symbol table can be read.
	symbolsReady atomic.Bool
)

// Load opens the CUDA driver and initializes it. It runs once per process;
// later calls return the first result. Every function that needs the driver
// calls it, so calling it directly is only needed to test for a GPU early.
//
// The library is libcuda.so.1 (nvcuda.dll on Windows) unless the
// environment variable BARACUDA_LIBCUDA names another path. The unversioned
// libcuda.so is never tried: on many systems it is the toolkit's link-time
// stub, which cannot run anything.
func Load() error {
	loadOnce.Do(func() {
		path := os.Getenv(envLibrary)
		if path == "" {
			path = defaultLibrary
		}
		syncLaunches = os.Getenv(envSync) == "1"
		loadErr = loadFrom(path)
	})
	return loadErr
}

// loadFrom opens the library at path, resolves the symbol table and calls
// cuInit. It is separate from Load so tests can exercise failures.
func loadFrom(path string) error {
	h, err := openLibrary(path)
	if err != nil {
		return fmt.Errorf("%w: cannot load %s: %v", ErrNoDriver, path, err)
	}
	for _, s := range symbols {
		s.addr = lookupSymbol(h, s.export())
		if s.addr == 0 && s.required {
			return fmt.Errorf("%w: %s does not export %s", ErrNoDriver, path, s.export())
		}
	}
	libraryPath = path
	symbolsReady.Store(true)

	if err := cuInit.do(0); err != nil {
		return err
	}
	v, err := cuDriverGetVersion.out()
	if err != nil {
		return err
	}
	driverVersion = int(int32(v))
	return nil
}

// Version returns the CUDA version the driver supports, as 1000*major +
// 10*minor: 13000 for CUDA 13.0. Use FormatCUDAVersion to print it.
func Version() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	return driverVersion, nil
}
