package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// EnvLibrary names the environment variable that overrides the NCCL
// library's path. When it is set, that file is the only one tried.
const EnvLibrary = "BARACUDA_NCCL_LIBRARY"

// libraryName is NCCL's shared library with the ABI major version: the
// unversioned libnccl.so is a development link that many installs lack.
const libraryName = "libnccl.so.2"

// MinVersion is the oldest NCCL this package loads, as NCCL codes it
// (10000*major + 100*minor + patch): 2.12.0.
const MinVersion = 21200

// scalableVersion is the first NCCL with ncclCommInitRankScalable (2.23),
// which InitRank needs on amd64 (see initRankArgs).
const scalableVersion = 22300

var (
	loadOnce sync.Once
	loadErr  error

	// Written once by loadFrom before anything can read them.
	libraryPath string
	version     int

	// symbolsReady tells Result.message, which may run before or during
	// Load, that the symbol table can be read.
	symbolsReady atomic.Bool
)

// Load finds and opens the NCCL library and checks its version. It runs
// once per process; later calls return the first result. Every function
// that needs NCCL calls it, so calling it directly is only needed to find
// out early whether NCCL is there.
//
// The library is the file named by BARACUDA_NCCL_LIBRARY if that is set;
// otherwise the first of SearchPaths that opens. Without one the error
// matches ErrNoNCCL, and an NCCL older than MinVersion gives an error
// matching ErrVersion.
func Load() error {
	loadOnce.Do(func() {
		if p := os.Getenv(EnvLibrary); p != "" {
			loadErr = loadFrom([]string{p})
			return
		}
		loadErr = loadFrom(SearchPaths())
	})
	return loadErr
}

// loadFrom opens the first of paths that loads, resolves the symbol table
// and checks the version. It is separate from Load so tests can exercise
// failures.
func loadFrom(paths []string) error {
	if !platformSupported {
		return fmt.Errorf("%w: NCCL exists for Linux only (not loading %s; %s names another file)",
			ErrNoNCCL, strings.Join(paths, ", "), EnvLibrary)
	}
	var tried []string
	for _, p := range paths {
		if strings.ContainsRune(p, '/') {
			if _, err := os.Stat(p); err != nil {
				tried = append(tried, p+" (not found)")
				continue
			}
		}
		h, err := openLibrary(p)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		if err := resolve(h, p); err != nil {
			return err
		}
		return checkVersion()
	}
	return fmt.Errorf("%w: set %s to the path of %s; tried %s", ErrNoNCCL, EnvLibrary, libraryName, strings.Join(tried, ", "))
}

// resolve fills the symbol table from the library handle h opened from path.
func resolve(h uintptr, path string) error {
	for _, s := range symbols {
		s.addr = lookupSymbol(h, s.name)
		if s.addr == 0 && s.required {
			return fmt.Errorf("%w: %s does not export %s", ErrNoNCCL, path, s.name)
		}
	}
	libraryPath = path
	symbolsReady.Store(true)
	return nil
}

func checkVersion() error {
	v, r := ncclGetVersion.out()
	if r != Success {
		return callError("ncclGetVersion", r, 0)
	}
	version = int(int32(v))
	if version < MinVersion {
		return fmt.Errorf("nccl: %s is NCCL %s; this package needs %s or newer: %w",
			libraryPath, FormatVersion(version), FormatVersion(MinVersion), ErrVersion)
	}
	return nil
}

// Version returns the loaded NCCL's version code (10000*major + 100*minor +
// patch, 22703 for 2.27.3); FormatVersion prints it.
func Version() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	return version, nil
}

// LibraryPath returns the path (or name) of the NCCL library Load opened.
func LibraryPath() (string, error) {
	if err := Load(); err != nil {
		return "", err
	}
	return libraryPath, nil
}

// FormatVersion spells an NCCL version code as "major.minor.patch". Codes
// below 10000 are NCCL's older scheme, 1000*major + 100*minor + patch.
func FormatVersion(code int) string {
	if code < 10000 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}

// SearchPaths lists, in the order Load tries them, where NCCL is looked
// for when BARACUDA_NCCL_LIBRARY is not set:
//
//   - libnccl.so.2 by name, through the dynamic loader's own search
//     (LD_LIBRARY_PATH, the ld.so cache, the system library directories);
//   - the system and CUDA directories: /usr/lib/<arch>-linux-gnu, /usr/lib64,
//     /usr/lib, /usr/local/lib, /usr/local/cuda*/lib64 and
//     /usr/local/cuda*/targets/*/lib;
//   - the nvidia/nccl/lib directory that PyTorch's wheels install
//     (package nvidia-nccl-cu*), in the active virtual environment
//     ($VIRTUAL_ENV), the user's site-packages (~/.local/lib/python3*),
//     /usr/local/lib/python3* and /usr/lib/python3* (site-packages and
//     dist-packages), and a conda environment ($CONDA_PREFIX, /opt/conda);
//   - $CONDA_PREFIX/lib, where conda's nccl package puts it.
//
// Only the files that exist are listed after the first entry.
func SearchPaths() []string {
	return searchPaths(os.Getenv, filepath.Glob)
}

// searchPaths is SearchPaths with the environment and the file system
// passed in, for tests.
func searchPaths(getenv func(string) string, glob func(string) ([]string, error)) []string {
	out := []string{libraryName}
	seen := map[string]bool{libraryName: true}
	add := func(pattern string) {
		matches, err := glob(pattern)
		if err != nil {
			return
		}
		// Newest first where a glob finds several (cuda-12.9 before
		// cuda-12.4, python3.12 before python3.10): a lexical sort
		// descending is close enough for the names these globs match.
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	for _, dir := range []string{
		"/usr/lib/*-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
		"/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64",
		"/usr/local/cuda/targets/*/lib", "/usr/local/cuda-*/targets/*/lib",
	} {
		add(dir + "/" + libraryName)
	}
	const wheel = "nvidia/nccl/lib/" + libraryName
	var roots []string
	if v := getenv("VIRTUAL_ENV"); v != "" {
		roots = append(roots, v+"/lib/python3*/site-packages")
	}
	if h := getenv("HOME"); h != "" {
		roots = append(roots, h+"/.local/lib/python3*/site-packages")
	}
	roots = append(roots,
		"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages", "/usr/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
	)
	if c := getenv("CONDA_PREFIX"); c != "" {
		roots = append(roots, c+"/lib/python3*/site-packages")
	}
	roots = append(roots, "/opt/conda/lib/python3*/site-packages")
	for _, r := range roots {
		add(r + "/" + wheel)
	}
	if c := getenv("CONDA_PREFIX"); c != "" {
		add(c + "/lib/" + libraryName)
	}
	return out
}
