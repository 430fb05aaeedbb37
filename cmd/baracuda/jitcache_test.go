package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envOf makes an os.LookupEnv from a map.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestResolveJITCache(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        map[string]string
		goos, home string
		want       jitCacheConfig
	}{
		{name: "linux defaults", goos: "linux", home: "/home/u",
			want: jitCacheConfig{Enabled: true, Dir: "/home/u/.nv/ComputeCache"}},
		{name: "home with a trailing slash", goos: "linux", home: "/root/",
			want: jitCacheConfig{Enabled: true, Dir: "/root/.nv/ComputeCache"}},
		{name: "no home", goos: "linux",
			want: jitCacheConfig{Enabled: true}},
		{name: "disabled", goos: "linux", home: "/home/u", env: map[string]string{"CUDA_CACHE_DISABLE": "1"},
			want: jitCacheConfig{Disable: "1", Dir: "/home/u/.nv/ComputeCache"}},
		{name: "enabled explicitly", goos: "linux", home: "/home/u", env: map[string]string{"CUDA_CACHE_DISABLE": "0"},
			want: jitCacheConfig{Enabled: true, Disable: "0", Dir: "/home/u/.nv/ComputeCache"}},
		{name: "only 1 disables", goos: "linux", home: "/home/u", env: map[string]string{"CUDA_CACHE_DISABLE": "true"},
			want: jitCacheConfig{Enabled: true, Disable: "true", Dir: "/home/u/.nv/ComputeCache"}},
		{name: "path and size set", goos: "linux", home: "/home/u",
			env:  map[string]string{"CUDA_CACHE_PATH": "/cache", "CUDA_CACHE_MAXSIZE": "4294967296"},
			want: jitCacheConfig{Enabled: true, Dir: "/cache", DirFromEnv: true, MaxSize: 4294967296, MaxSizeSet: true, MaxSizeRaw: "4294967296"}},
		{name: "empty path is the default", goos: "linux", home: "/home/u", env: map[string]string{"CUDA_CACHE_PATH": ""},
			want: jitCacheConfig{Enabled: true, Dir: "/home/u/.nv/ComputeCache"}},
		{name: "windows APPDATA", goos: "windows", home: `C:\Users\u`, env: map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`},
			want: jitCacheConfig{Enabled: true, Dir: `C:\Users\u\AppData\Roaming\NVIDIA\ComputeCache`}},
		{name: "windows without APPDATA", goos: "windows", home: `C:\Users\u`,
			want: jitCacheConfig{Enabled: true, Dir: `C:\Users\u\AppData\Roaming\NVIDIA\ComputeCache`}},
		{name: "windows path set", goos: "windows", home: `C:\Users\u`, env: map[string]string{"CUDA_CACHE_PATH": `D:\jit`},
			want: jitCacheConfig{Enabled: true, Dir: `D:\jit`, DirFromEnv: true}},
		{name: "PTX JIT variables", goos: "linux", home: "/h", env: map[string]string{"CUDA_FORCE_PTX_JIT": "1", "CUDA_DISABLE_PTX_JIT": "1"},
			want: jitCacheConfig{Enabled: true, Dir: "/h/.nv/ComputeCache", ForcePTXJIT: "1", DisablePTXJIT: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveJITCache(envOf(tc.env), tc.goos, tc.home)
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestResolveJITCacheBadSize(t *testing.T) {
	for _, v := range []string{"1G", "-5", ""} {
		c := resolveJITCache(envOf(map[string]string{"CUDA_CACHE_MAXSIZE": v}), "linux", "/h")
		if !c.MaxSizeSet || c.MaxSizeErr == nil || c.MaxSize != 0 {
			t.Errorf("CUDA_CACHE_MAXSIZE=%q: got %+v, want an error", v, c)
		} else if !strings.Contains(c.MaxSizeErr.Error(), "CUDA_CACHE_MAXSIZE") {
			t.Errorf("CUDA_CACHE_MAXSIZE=%q: error %q does not name the variable", v, c.MaxSizeErr)
		}
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if _, exists, err := diskUsage(filepath.Join(dir, "missing")); exists || err != nil {
		t.Errorf("missing directory: exists %v, err %v", exists, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, size := range map[string]int{"index": 10, "a/x": 100, "a/b/y": 1000} {
		if err := os.WriteFile(filepath.Join(dir, path), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u, exists, err := diskUsage(dir)
	if err != nil || !exists || u != (dirUsage{Files: 3, Bytes: 1110}) {
		t.Errorf("got %+v, exists %v, err %v; want 3 files, 1110 bytes", u, exists, err)
	}
	if _, _, err := diskUsage(filepath.Join(dir, "index")); err == nil {
		t.Error("a file passed as the cache directory gave no error")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 4 << 30: "4.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPrintJITCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_CACHE_PATH", dir)
	t.Setenv("CUDA_CACHE_DISABLE", "1")
	t.Setenv("CUDA_CACHE_MAXSIZE", "1073741824")
	var sb strings.Builder
	printJITCache(&sb)
	out := sb.String()
	for _, want := range []string{"enabled:    NO", dir + " (CUDA_CACHE_PATH)", "1 files, 2.0 KiB", "1073741824 bytes (1.0 GiB, CUDA_CACHE_MAXSIZE)", "hint: unset CUDA_CACHE_DISABLE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Setenv("CUDA_CACHE_DISABLE", "0")
	t.Setenv("CUDA_CACHE_PATH", filepath.Join(dir, "missing"))
	sb.Reset()
	printJITCache(&sb)
	out = sb.String()
	for _, want := range []string{"enabled:    yes (CUDA_CACHE_DISABLE=0)", "does not exist yet", "mount a persistent volume at " + filepath.Join(dir, "missing")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
