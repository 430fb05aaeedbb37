package main

// The JIT-cache section of 'baracuda info'. baracuda's kernels ship as PTX
// only, so in every process the driver compiles each kernel's PTX to the
// GPU's machine code when it is first loaded (see 'baracuda bench
// -coldstart' for what that costs). The driver keeps the compiled code in an
// on-disk cache keyed by the PTX, the GPU and the driver version, so on a
// host whose cache survives, only the first process pays. The section says
// where that cache is, whether it is on and how full it is, from the
// documented environment variables alone: no driver call, so it works on a
// machine without a GPU.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// The driver's environment variables for its JIT cache (CUDA Programming
// Guide, "CUDA Environment Variables").
const (
	envCacheDisable   = "CUDA_CACHE_DISABLE"   // 1 disables the on-disk cache
	envCachePath      = "CUDA_CACHE_PATH"      // the cache directory
	envCacheMaxSize   = "CUDA_CACHE_MAXSIZE"   // the cache's size limit in bytes
	envForcePTXJIT    = "CUDA_FORCE_PTX_JIT"   // 1: JIT the PTX even where a binary is embedded
	envDisablePTXJIT  = "CUDA_DISABLE_PTX_JIT" // 1: never JIT PTX, use embedded binaries only
	cacheMaxSizeLimit = 4 << 30                // the largest CUDA_CACHE_MAXSIZE the driver documents
)

// jitCacheConfig is the driver's JIT cache as the environment sets it up.
type jitCacheConfig struct {
	Enabled    bool
	Disable    string // CUDA_CACHE_DISABLE as set ("" when unset)
	Dir        string // the cache directory; "" when no default can be derived
	DirFromEnv bool   // Dir is CUDA_CACHE_PATH, not the driver's default
	// MaxSize is CUDA_CACHE_MAXSIZE in bytes; MaxSizeSet reports whether it
	// is set, MaxSizeErr whether it fails to parse as a byte count.
	MaxSize    int64
	MaxSizeSet bool
	MaxSizeRaw string
	MaxSizeErr error
	// ForcePTXJIT and DisablePTXJIT are those variables as set ("" when unset).
	ForcePTXJIT   string
	DisablePTXJIT string
}

// resolveJITCache works out the cache configuration from an environment
// lookup (os.LookupEnv's signature), the operating system (runtime.GOOS's
// spelling) and the user's home directory. It is a pure function of its
// arguments so the rules can be tested anywhere:
//
//   - the cache is on unless CUDA_CACHE_DISABLE is 1;
//   - its directory is CUDA_CACHE_PATH when set and not empty, else the
//     driver's default: %APPDATA%\NVIDIA\ComputeCache on Windows (APPDATA
//     falling back to <home>\AppData\Roaming), $HOME/.nv/ComputeCache
//     elsewhere ("" when home is unknown);
//   - its size limit is CUDA_CACHE_MAXSIZE in bytes when set.
func resolveJITCache(lookup func(string) (string, bool), goos, home string) jitCacheConfig {
	get := func(key string) (string, bool) {
		v, ok := lookup(key)
		return strings.TrimSpace(v), ok
	}
	var c jitCacheConfig
	c.Disable, _ = get(envCacheDisable)
	c.Enabled = c.Disable != "1"
	if dir, ok := get(envCachePath); ok && dir != "" {
		c.Dir, c.DirFromEnv = dir, true
	} else if goos == "windows" {
		appData, _ := get("APPDATA")
		if appData == "" && home != "" {
			appData = joinOSPath(goos, home, "AppData", "Roaming")
		}
		if appData != "" {
			c.Dir = joinOSPath(goos, appData, "NVIDIA", "ComputeCache")
		}
	} else if home != "" {
		c.Dir = joinOSPath(goos, home, ".nv", "ComputeCache")
	}
	if raw, ok := get(envCacheMaxSize); ok {
		c.MaxSizeSet, c.MaxSizeRaw = true, raw
		n, err := strconv.ParseInt(raw, 10, 64)
		switch {
		case err != nil:
			c.MaxSizeErr = fmt.Errorf("%s=%q is not a byte count", envCacheMaxSize, raw)
		case n < 0:
			c.MaxSizeErr = fmt.Errorf("%s=%q is negative", envCacheMaxSize, raw)
		default:
			c.MaxSize = n
		}
	}
	c.ForcePTXJIT, _ = get(envForcePTXJIT)
	c.DisablePTXJIT, _ = get(envDisablePTXJIT)
	return c
}

// joinOSPath joins path elements with goos's separator (a backslash on
// Windows), so resolveJITCache gives the target system's spelling whatever
// system the tests run on.
func joinOSPath(goos string, elem ...string) string {
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	out := strings.TrimRight(elem[0], `/\`)
	if out == "" {
		out = elem[0] // a root such as "/"
	}
	for _, e := range elem[1:] {
		if !strings.HasSuffix(out, sep) {
			out += sep
		}
		out += strings.Trim(e, `/\`)
	}
	return out
}

// dirUsage is what a directory tree holds: regular files and their bytes.
type dirUsage struct {
	Files int
	Bytes int64
}

// diskUsage walks dir and adds up its regular files. exists is false (and
// err nil) when dir does not exist; err names the first path that cannot be
// read, with the totals up to there.
func diskUsage(dir string) (u dirUsage, exists bool, err error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return u, false, nil
	}
	if err != nil {
		return u, false, err
	}
	if !st.IsDir() {
		return u, true, fmt.Errorf("%s is not a directory", dir)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		u.Files++
		u.Bytes += info.Size()
		return nil
	})
	return u, true, err
}

// formatBytes spells a byte count with a binary unit: 3.4 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// processJITCache is the JIT cache as this process's environment sets it
// up.
func processJITCache() jitCacheConfig {
	home, _ := os.UserHomeDir()
	return resolveJITCache(os.LookupEnv, runtime.GOOS, home)
}

// printJITCache writes the JIT-cache section of 'baracuda info' for this
// process's environment.
func printJITCache(w io.Writer) { writeJITCache(w, processJITCache()) }

// writeJITCache writes the section for c, reading the cache directory's
// contents from disk.
func writeJITCache(w io.Writer, c jitCacheConfig) {
	fmt.Fprintln(w, "\ndriver JIT cache (machine code compiled from the embedded PTX, reused across processes):")
	if c.Enabled {
		how := envCacheDisable + " unset"
		if c.Disable != "" {
			how = envCacheDisable + "=" + c.Disable
		}
		if c.Disable != "" && c.Disable != "0" {
			how += "; only 1 disables it"
		}
		fmt.Fprintf(w, "  enabled:    yes (%s)\n", how)
	} else {
		fmt.Fprintf(w, "  enabled:    NO (%s=1): every process JIT-compiles every kernel it loads\n", envCacheDisable)
	}
	switch {
	case c.Dir == "":
		fmt.Fprintf(w, "  directory:  unknown (%s unset and no home directory)\n", envCachePath)
	case c.DirFromEnv:
		fmt.Fprintf(w, "  directory:  %s (%s)\n", c.Dir, envCachePath)
	default:
		fmt.Fprintf(w, "  directory:  %s (driver default; %s unset)\n", c.Dir, envCachePath)
	}
	if c.Dir != "" {
		u, exists, err := diskUsage(c.Dir)
		switch {
		case err != nil:
			fmt.Fprintf(w, "  contents:   %d files, %s so far; cannot read it all: %v\n", u.Files, formatBytes(u.Bytes), err)
		case !exists:
			fmt.Fprintln(w, "  contents:   does not exist yet (the driver creates it on its first JIT compile)")
		default:
			fmt.Fprintf(w, "  contents:   %d files, %s\n", u.Files, formatBytes(u.Bytes))
		}
	}
	switch {
	case c.MaxSizeErr != nil:
		fmt.Fprintf(w, "  size limit: %v (the driver's handling of it is undocumented)\n", c.MaxSizeErr)
	case c.MaxSizeSet:
		note := ""
		if c.MaxSize > cacheMaxSizeLimit {
			note = fmt.Sprintf("; above the documented maximum of %s", formatBytes(cacheMaxSizeLimit))
		}
		fmt.Fprintf(w, "  size limit: %d bytes (%s, %s%s)\n", c.MaxSize, formatBytes(c.MaxSize), envCacheMaxSize, note)
	default:
		// The CUDA Programming Guide gives 1 GiB for desktop and server
		// drivers and 256 MiB for embedded ones; older drivers used 256
		// MiB. The binary cannot ask the driver, so it names both.
		fmt.Fprintf(w, "  size limit: driver default (%s unset; 1 GiB on current desktop and server drivers, 256 MiB on embedded ones)\n", envCacheMaxSize)
	}
	if c.ForcePTXJIT != "" {
		fmt.Fprintf(w, "  %s=%s: the driver JIT-compiles the PTX of every module, ignoring embedded machine code\n", envForcePTXJIT, c.ForcePTXJIT)
	}
	if c.DisablePTXJIT == "1" {
		fmt.Fprintf(w, "  %s=1: the driver does not JIT-compile PTX, and baracuda ships PTX only: its kernels cannot load\n", envDisablePTXJIT)
	}
	switch {
	case !c.Enabled:
		fmt.Fprintf(w, "  hint: unset %s (or set it to 0) so the JIT cost is paid once per host, not per process\n", envCacheDisable)
	case c.Dir != "":
		fmt.Fprintf(w, "  hint: in a container, mount a persistent volume at %s (or point %s at one) so the JIT cost is paid once\n", c.Dir, envCachePath)
	default:
		fmt.Fprintf(w, "  hint: set %s to a persistent directory (in a container, a mounted volume) so the JIT cost is paid once\n", envCachePath)
	}
}
