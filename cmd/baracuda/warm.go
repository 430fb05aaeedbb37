package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/ops"
)

// `baracuda warm` fills the driver's JIT cache with every kernel for this
// host's GPU, so that no program's first Run waits for the JIT compiler.
// It runs several worker processes (`baracuda jit-worker`, hidden), each
// compiling its share of the kernels into the shared cache: drivers
// without the library API (before CUDA 12.0) compile one kernel at a time
// per process, and newer ones compile in parallel within each worker too.
// A program started afterwards loads each kernel from the cache in a
// fraction of a millisecond.

func runWarm(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("warm", flag.ContinueOnError)
	device := fs.Int("device", 0, "GPU ordinal")
	procs := fs.Int("procs", 0, "worker processes compiling at once (0: one per core, at most 16 and one per GiB of GPU memory)")
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	cfg := processJITCache()
	if !cfg.Enabled {
		return fmt.Errorf("warm: the driver's JIT cache is disabled (%s=%s), so there is nothing to fill", envCacheDisable, cfg.Disable)
	}
	if *procs < 0 {
		return usageError{fmt.Errorf("-procs %d must be at least 1 (or 0 for the default)", *procs)}
	}
	if err := driver.Load(); err != nil {
		return err
	}
	dev, err := driver.GetDevice(*device)
	if err != nil {
		return err
	}
	if *procs == 0 {
		*procs = defaultWarmProcs(dev)
	}
	fmt.Fprintf(w, "filling the JIT cache at %s with %d worker processes\n", cfg.Dir, *procs)
	start := time.Now()
	n, err := fillJITCache(*device, *procs, progressPrinter(w, "compiling kernels", start))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d kernels compiled into the cache in %.1fs\n", n, time.Since(start).Seconds())
	return nil
}

// defaultWarmProcs is one worker per core, at most 16, and at most one per
// GiB of the device's memory: each worker process holds a context of its
// own on the GPU, a few hundred MiB.
func defaultWarmProcs(dev *driver.Device) int {
	n := min(runtime.NumCPU(), 16)
	if mem, err := dev.TotalMem(); err == nil {
		n = min(n, int(max(mem>>30, 1)))
	}
	return n
}

// fillJITCache runs procs jit-worker processes on device, each loading
// its share of every kernel, and reports the kernels loaded so far to
// progress (from one goroutine at a time). It returns how many kernels
// the workers loaded.
func fillJITCache(device, procs int, progress func(done, total int)) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("finding this executable to run the JIT workers: %w", err)
	}
	return runJITWorkers(procs, func(i int) *exec.Cmd {
		return exec.Command(exe, "jit-worker", "-device", strconv.Itoa(device), "-shard", strconv.Itoa(i), "-shards", strconv.Itoa(procs))
	}, progress)
}

// runJITWorkers runs the procs commands worker(i) at once and adds up
// what they report (see runJITWorker).
func runJITWorkers(procs int, worker func(i int) *exec.Cmd, progress func(done, total int)) (int, error) {
	var (
		mu          sync.Mutex
		done, total int
		reported    int // workers that have said their total
		wg          sync.WaitGroup
		errs        = make([]error, procs)
	)
	for i := 0; i < procs; i++ {
		cmd := worker(i)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, fmt.Errorf("starting JIT worker %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A worker writes "total N" first, then one line per kernel
			// it has loaded.
			// Progress is reported once every worker has said its total
			// (or ended), so that the total never grows.
			sc := bufio.NewScanner(out)
			said := false
			for sc.Scan() {
				mu.Lock()
				if n, ok := strings.CutPrefix(sc.Text(), "total "); ok {
					k, _ := strconv.Atoi(n)
					total += k
					said = true
					reported++
				} else {
					done++
				}
				if progress != nil && reported == procs {
					progress(done, total)
				}
				mu.Unlock()
			}
			if !said {
				// A worker with no kernels ends without a word; where it
				// is the last to report, the progress so far is complete.
				mu.Lock()
				reported++
				if progress != nil && reported == procs {
					progress(done, total)
				}
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				errs[i] = fmt.Errorf("JIT worker %d of %d: %v: %s", i, procs, err, strings.TrimSpace(stderr.String()))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// runJITWorker is one worker process of fillJITCache.
func runJITWorker(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("jit-worker", flag.ContinueOnError)
	device := fs.Int("device", 0, "GPU ordinal")
	shard := fs.Int("shard", 0, "this worker's share")
	shards := fs.Int("shards", 1, "workers in all")
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	ctx, err := openContext(*device)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	return ops.WarmAll(ctx, ops.WarmOptions{Shard: *shard, Shards: *shards, Progress: func(done, total int) {
		if done == 1 {
			fmt.Fprintf(bw, "total %d\n", total)
		}
		fmt.Fprintln(bw, "loaded")
		bw.Flush()
	}})
}

// progressPrinter reports progress as selftest and warm show it: on a
// terminal one line that counts up, in a log a line at each tenth.
func progressPrinter(w io.Writer, what string, start time.Time) func(done, total int) {
	tty := w == os.Stdout && isTerminal(os.Stdout)
	step := 0
	return func(done, total int) {
		switch {
		case total <= 0:
		case tty:
			fmt.Fprintf(w, "\r  %s: %d/%d, %.1fs", what, done, total, time.Since(start).Seconds())
			if done == total {
				fmt.Fprintln(w)
			}
		case done*10 >= (step+1)*total || done == total:
			step = done * 10 / total
			fmt.Fprintf(w, "  %s: %d/%d, %.1fs\n", what, done, total, time.Since(start).Seconds())
		}
	}
}
