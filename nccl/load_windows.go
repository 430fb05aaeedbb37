//go:build windows

package nccl

// NCCL has no Windows build: Load reports ErrNoNCCL there.
const platformSupported = false

func openLibrary(string) (uintptr, error) { return 0, ErrNoNCCL }

func lookupSymbol(uintptr, string) uintptr { return 0 }
