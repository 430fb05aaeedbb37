package nccl

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// isolateLoad gives a test a fresh Load and symbol table, and puts the
// process's own back afterwards.
func isolateLoad(t *testing.T) {
	t.Helper()
	var saved [len(symbols)]uintptr
	for i, s := range symbols {
		saved[i] = s.addr
	}
	path, v, ready := libraryPath, version, symbolsReady.Load()
	loadOnce, loadErr = sync.Once{}, nil
	t.Cleanup(func() {
		for i, s := range symbols {
			s.addr = saved[i]
		}
		libraryPath, version = path, v
		symbolsReady.Store(ready)
		loadOnce, loadErr = sync.Once{}, nil
	})
}

func TestLoadMissingLibrary(t *testing.T) {
	isolateLoad(t)
	const bogus = "/nonexistent/libnccl.so.2"
	t.Setenv(EnvLibrary, bogus)
	err := Load()
	if !errors.Is(err, ErrNoNCCL) {
		t.Fatalf("Load() with %s=%s: %v, want an error matching ErrNoNCCL", EnvLibrary, bogus, err)
	}
	if !strings.Contains(err.Error(), bogus) || !strings.Contains(err.Error(), EnvLibrary) {
		t.Errorf("error %q should name the path tried and %s", err, EnvLibrary)
	}
	// Every entry point reports the same error rather than panicking.
	if _, err := NewUniqueID(); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("NewUniqueID: %v, want ErrNoNCCL", err)
	}
	if _, err := InitAll(nil); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("InitAll: %v, want ErrNoNCCL", err)
	}
	if _, err := InitRank(nil, 2, 0, UniqueID{}); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("InitRank: %v, want ErrNoNCCL", err)
	}
	if err := GroupStart(); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("GroupStart: %v, want ErrNoNCCL", err)
	}
	if _, err := Version(); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("Version: %v, want ErrNoNCCL", err)
	}
}

func TestLoadNotNCCL(t *testing.T) {
	isolateLoad(t)
	// A library that exists but is not NCCL: the C library itself.
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6"} {
		if ok, _ := filepath.Glob(p); len(ok) == 1 {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no libc.so.6 at a known path")
	}
	err := loadFrom([]string{libc})
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), "ncclGetVersion") {
		t.Fatalf("loadFrom(%s) = %v, want ErrNoNCCL naming a missing symbol", libc, err)
	}
}

func TestSearchPaths(t *testing.T) {
	env := map[string]string{"VIRTUAL_ENV": "/venv", "HOME": "/home/u", "CONDA_PREFIX": "/conda"}
	var patterns []string
	existing := map[string][]string{
		"/usr/local/cuda-*/lib64/libnccl.so.2":                               {"/usr/local/cuda-12.4/lib64/libnccl.so.2", "/usr/local/cuda-12.9/lib64/libnccl.so.2"},
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2": {"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"},
		"/venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2":      {"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"},
	}
	glob := func(p string) ([]string, error) {
		patterns = append(patterns, p)
		return slices.Clone(existing[p]), nil
	}
	got := searchPaths(func(k string) string { return env[k] }, glob)
	want := []string{
		"libnccl.so.2",
		"/usr/local/cuda-12.9/lib64/libnccl.so.2",
		"/usr/local/cuda-12.4/lib64/libnccl.so.2",
		"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("searchPaths = %q\nwant %q", got, want)
	}
	for _, p := range []string{
		"/usr/lib/*-linux-gnu/libnccl.so.2",
		"/usr/local/cuda/lib64/libnccl.so.2",
		"/home/u/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/usr/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/conda/lib/libnccl.so.2",
	} {
		if !slices.Contains(patterns, p) {
			t.Errorf("searchPaths does not look at %s", p)
		}
	}
	// Without the environment variables, none of their directories.
	patterns = nil
	searchPaths(func(string) string { return "" }, glob)
	for _, p := range patterns {
		if strings.HasPrefix(p, "/venv") || strings.HasPrefix(p, "/conda") || strings.HasPrefix(p, "/home") {
			t.Errorf("searchPaths looks at %s with the variable unset", p)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	for code, want := range map[int]string{21200: "2.12.0", 22703: "2.27.3", 2708: "2.7.8", 22907: "2.29.7"} {
		if got := FormatVersion(code); got != want {
			t.Errorf("FormatVersion(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestResultNames(t *testing.T) {
	if got := InvalidArgument.String(); got != "ncclInvalidArgument" {
		t.Errorf("InvalidArgument.String() = %s", got)
	}
	if got := Result(42).String(); got != "ncclResult(42)" {
		t.Errorf("Result(42).String() = %s", got)
	}
	e := &Error{Op: "ncclAllReduce(f32, sum, count 3)", Code: RemoteError, Detail: "peer gone"}
	if got := e.Error(); !strings.HasPrefix(got, "nccl: ncclAllReduce(f32, sum, count 3): ncclRemoteError") || !strings.HasSuffix(got, ": peer gone") {
		t.Errorf("Error() = %q", got)
	}
}
