//go:build windows

package driver

import "syscall"

const defaultLibrary = "nvcuda.dll"

func openLibrary(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

func lookupSymbol(lib uintptr, name string) uintptr {
	addr, err := syscall.GetProcAddress(syscall.Handle(lib), name)
	if err != nil {
		return 0
	}
	return addr
}
