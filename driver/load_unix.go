//go:build !windows

package driver

import "github.com/ebitengine/purego"

const defaultLibrary = "libcuda.so.1"

func openLibrary(path string) (uintptr, error) {
	// RTLD_GLOBAL lets libraries loaded later (cuBLAS, the CUDA runtime)
	// bind to the same driver instance.
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func lookupSymbol(lib uintptr, name string) uintptr {
	addr, err := purego.Dlsym(lib, name)
	if err != nil {
		return 0
	}
	return addr
}
