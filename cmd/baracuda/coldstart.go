package main

// 'baracuda bench -coldstart': the wall time of the first Run of a plan in a
// fresh process.
//
// The kernels ship as PTX. The first Run of a plan in a process loads the
// PTX of the kernels it launches, and the driver JIT-compiles it to the
// GPU's machine code before the launch; every later Run only launches. On
// a fresh host (a new container, a new VM) that compile dominates the first
// Run, and the ordinary bench, which warms up before it times, never sees it. -coldstart times, for one plan per (family, op,
// dtype), the first Run plus a stream sync with the wall clock, then a
// second one (the warm launch), each case in a child process of its own
// (the hidden coldstart-child command) so that no kernel is loaded yet. The
// children run one at a time, so the JIT has the host's cores to itself.
// Host data generation and uploads are not timed (setup_ms reports them);
// init_ms is driver.Load plus the primary context and a stream.
//
// Two passes:
//
//   - cold: the children run with CUDA_CACHE_DISABLE=1. The driver keeps
//     the machine code it compiles in an on-disk cache and reuses it in
//     later processes; with the cache disabled every child compiles, as a
//     process on a fresh host does. Disabling it also leaves the user's own
//     cache untouched.
//   - warm: the children share a private cache in a temporary directory
//     (CUDA_CACHE_PATH, CUDA_CACHE_DISABLE=0, a 4 GiB CUDA_CACHE_MAXSIZE).
//     One child runs every case to fill it, then each case runs again in a
//     fresh process: what a host pays whose cache survives (see the JIT
//     cache section of 'baracuda info'). The directory is removed at the
//     end.
//
// A child that fails, crashes or runs past coldChildTimeout is reported with
// its error and stderr, and makes the command fail. A full run starts two
// processes per case plus one; -filter narrows it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// coldChildCommand is the hidden command a child runs: main dispatches it
// and the usage text leaves it out.
const coldChildCommand = "coldstart-child"

// coldChildTimeout bounds one child's run of one case; the child that fills
// the warm cache gets it once per kernel family, plus once.
const coldChildTimeout = 120 * time.Second

// coldCacheMaxSize is the warm pass's CUDA_CACHE_MAXSIZE, the largest the
// driver documents, so no compiled kernel is evicted or left out.
const coldCacheMaxSize = "4294967296"

// The shapes of the cases: small enough that a child's setup takes well
// under a second, large enough that each plan takes its usual kernels.
const (
	coldBinaryN        = 1 << 20
	coldRows, coldCols = 1024, 1024
)

// coldLpPool lists the LP-pool ops, each a kernel per dtype: p = 1 and
// p = 2 have kernels of their own, any other p the general one (timed
// with p = 3).
var coldLpPool = []struct {
	op string
	p  float64
}{{"p1", 1}, {"p2", 2}, {"general", 3}}

// coldCase is one plan of the cold-start benchmark.
type coldCase struct {
	name   string
	family string // the kernel family: binary, bcast, reduce, scan or lppool
	op     string
	dt     dtype.DType
	setup  func(b *benchEnv) (run func() error, err error)
}

// coldstartCases lists one plan for every (family, op, dtype), reductions
// and scans once along each axis, named
// coldstart/<family>/<op>/<dtype>/<shape>[/<detail>].
func coldstartCases() []coldCase {
	var cases []coldCase
	add := func(family, op string, dt dtype.DType, shape string, setup func(*benchEnv) (func() error, error)) {
		cases = append(cases, coldCase{
			name:   fmt.Sprintf("coldstart/%s/%s/%s/%s", family, op, dt.Suffix(), shape),
			family: family, op: op, dt: dt, setup: setup,
		})
	}
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			add("binary", op.String(), dt, fmt.Sprintf("n%d", coldBinaryN), func(b *benchEnv) (func() error, error) {
				return setupBinary(b, op, dt, coldBinaryN)
			})
		}
	}
	shape := []int{coldRows, coldCols}
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			add("bcast", op.String(), dt, fmt.Sprintf("%dx%d/b%d", coldRows, coldCols, coldCols), func(b *benchEnv) (func() error, error) {
				return setupBroadcast(b, op, dt, shape, []int{coldCols})
			})
		}
	}
	for _, op := range ops.ReduceOps() {
		for _, dt := range dtype.All {
			for _, axis := range []int{1, 0} {
				add("reduce", op.String(), dt, fmt.Sprintf("%dx%d/axis%d", coldRows, coldCols, axis), func(b *benchEnv) (func() error, error) {
					return setupReduce(b, op, dt, shape, axis)
				})
			}
		}
	}
	for _, op := range ops.ScanOps() {
		for _, dt := range dtype.All {
			for _, axis := range []int{1, 0} {
				add("scan", op.String(), dt, fmt.Sprintf("%dx%d/axis%d", coldRows, coldCols, axis), func(b *benchEnv) (func() error, error) {
					return setupScan(b, op, dt, shape, axis)
				})
			}
		}
	}
	for _, lp := range coldLpPool {
		for _, dt := range dtype.All {
			desc := ops.LpPool2dDesc{DType: dt, N: 8, C: 64, H: 64, W: 64,
				KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2, P: lp.p}
			shape := fmt.Sprintf("%dx%dx%dx%d/k%ds%d", desc.N, desc.C, desc.H, desc.W, desc.KernelH, desc.StrideH)
			if lp.op == "general" {
				shape += fmt.Sprintf("/p%g", lp.p)
			}
			add("lppool", lp.op, dt, shape, func(b *benchEnv) (func() error, error) {
				return setupLpPool2d(b, desc)
			})
		}
	}
	return cases
}

// filterColdCases keeps the cases whose name matches filter (matchFilter).
func filterColdCases(cases []coldCase, filter string) []coldCase {
	return keepMatching(cases, func(c coldCase) string { return c.name }, filter)
}

// coldResult is one case's line: the child writes it as JSON, the parent
// adds the pass and prints it.
type coldResult struct {
	Pass     string  `json:"pass,omitempty"` // cold or warm
	Case     string  `json:"case"`
	Family   string  `json:"family"`
	Op       string  `json:"op"`
	DType    string  `json:"dtype"`
	InitMS   float64 `json:"init_ms"`   // driver.Load, primary context and stream
	SetupMS  float64 `json:"setup_ms"`  // plan, host data and uploads (not part of first_ms)
	FirstMS  float64 `json:"first_ms"`  // first Run + stream sync: kernel load and JIT included
	SecondMS float64 `json:"second_ms"` // second Run + stream sync: the warm launch
	Error    string  `json:"error,omitempty"`
}

// runColdstartChild is the hidden coldstart-child command: it runs one case
// (-case NAME) or every case matching -filter (-all) in this process and
// writes one JSON line per case to w.
func runColdstartChild(w io.Writer, args []string) error {
	fs := flag.NewFlagSet(coldChildCommand, flag.ContinueOnError)
	name := fs.String("case", "", "run the case of this exact name")
	all := fs.Bool("all", false, "run every case whose name contains -filter, in this one process")
	filter := fs.String("filter", "", "with -all: run only cases whose name contains this")
	device := fs.Int("device", 0, "GPU ordinal")
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	var cases []coldCase
	switch {
	case *all && *name != "":
		return fmt.Errorf("%s: -case and -all exclude each other", coldChildCommand)
	case *all:
		cases = filterColdCases(coldstartCases(), *filter)
	case *name != "":
		for _, c := range coldstartCases() {
			if c.name == *name {
				cases = append(cases, c)
			}
		}
	default:
		return fmt.Errorf("%s: need -case NAME or -all", coldChildCommand)
	}
	if len(cases) == 0 {
		return fmt.Errorf("%s: no case matches (case %q, filter %q)", coldChildCommand, *name, *filter)
	}
	enc := json.NewEncoder(w)
	start := time.Now()
	ctx, stream, err := coldInit(*device)
	initMS := round2(msSince(start))
	if err != nil {
		for _, c := range cases {
			r := newColdResult(c)
			r.InitMS, r.Error = initMS, "driver init: "+err.Error()
			_ = enc.Encode(r)
		}
		return fmt.Errorf("%s: driver init: %w", coldChildCommand, err)
	}
	defer stream.Destroy()
	if *all {
		// Every kernel first, compiled in parallel (the warm pass's cache
		// fills in seconds rather than one case's compile after another).
		if err := ops.WarmAll(ctx, ops.WarmOptions{}); err != nil {
			return fmt.Errorf("%s: loading every kernel: %w", coldChildCommand, err)
		}
	}
	failed := 0
	for i, c := range cases {
		r := runColdCase(ctx, stream, c)
		if i == 0 {
			r.InitMS = initMS // later cases reuse the context
		}
		if r.Error != "" {
			failed++
		}
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("%s: writing the result of %s: %w", coldChildCommand, c.name, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s: %d of %d cases failed", coldChildCommand, failed, len(cases))
	}
	return nil
}

// coldInit loads the driver and makes the device's primary context current
// with a stream: the fixed cost of a process before its first Run.
func coldInit(device int) (*driver.Context, *driver.Stream, error) {
	ctx, err := openContext(device)
	if err != nil {
		return nil, nil, err
	}
	stream, err := ctx.NewStream()
	if err != nil {
		return nil, nil, err
	}
	return ctx, stream, nil
}

func newColdResult(c coldCase) coldResult {
	return coldResult{Case: c.name, Family: c.family, Op: c.op, DType: c.dt.Suffix()}
}

// runColdCase sets up c's buffers and plan (untimed, but reported as
// setup_ms), then times its first and second Run, each with a stream sync,
// on the wall clock.
func runColdCase(ctx *driver.Context, stream *driver.Stream, c coldCase) coldResult {
	r := newColdResult(c)
	env := &benchEnv{ctx: ctx, stream: stream, rng: rand.New(rand.NewPCG(7, 11))}
	defer env.free()
	start := time.Now()
	run, err := c.setup(env)
	if err == nil {
		err = ctx.Synchronize() // the uploads are done before the clock starts
	}
	if err != nil {
		r.Error = "setup: " + err.Error()
		return r
	}
	r.SetupMS = round2(msSince(start))
	timed := func() (float64, error) {
		start := time.Now()
		if err := run(); err != nil {
			return 0, err
		}
		if err := stream.Synchronize(); err != nil {
			return 0, err
		}
		return round2(msSince(start)), nil
	}
	if r.FirstMS, err = timed(); err != nil {
		r.Error = "first Run: " + err.Error()
		return r
	}
	if r.SecondMS, err = timed(); err != nil {
		r.Error = "second Run: " + err.Error()
	}
	return r
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

// runColdstart is 'baracuda bench -coldstart': the cold pass, then the warm
// pass, each case in a child process of its own.
func runColdstart(w io.Writer, filter string, device int, asJSON, list bool) error {
	cases := filterColdCases(coldstartCases(), filter)
	if len(cases) == 0 {
		return noMatch(filter, "-coldstart")
	}
	if list {
		for _, c := range cases {
			fmt.Fprintln(w, c.name)
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench -coldstart: finding this executable to run the children: %w", err)
	}
	// The parent opens the driver and device once, without a context, so
	// a host without them fails here rather than in every child, and so
	// the header names both (the driver version decides the JIT compiler).
	if err := driver.Load(); err != nil {
		return err
	}
	dev, err := driver.GetDevice(device)
	if err != nil {
		return err
	}
	devName, _ := dev.Name()
	version, _ := driver.Version()
	if asJSON {
		line, _ := json.Marshal(map[string]any{"device": devName, "driver": driver.FormatCUDAVersion(version), "cases": len(cases)})
		fmt.Fprintln(w, string(line))
	} else {
		fmt.Fprintf(w, "device: %s; driver: CUDA %s; %d cases, each in a fresh process\n", devName, driver.FormatCUDAVersion(version), len(cases))
	}
	notePTXDir()
	// Ctrl-C stops the running child and still removes the warm cache.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := &coldRunner{ctx: sigCtx, exe: exe, device: device, progress: isTerminal(os.Stderr), total: 2 * len(cases)}
	emit := func(res coldResult) {
		if asJSON {
			line, _ := json.Marshal(res)
			fmt.Fprintln(w, string(line))
		}
	}
	failed := 0

	base := os.Environ()
	cold := r.pass("cold", withEnv(base, envCacheDisable+"=1"), cases, emit)
	if !asJSON {
		fmt.Fprintf(w, "\ncold: %s=1, the driver compiles every kernel it loads (a fresh host)\n", envCacheDisable)
		writeColdReport(w, cold)
	}
	failed += countColdFailures(cold)
	if err := sigCtx.Err(); err != nil {
		return fmt.Errorf("bench -coldstart: interrupted")
	}

	dir, err := os.MkdirTemp("", "baracuda-jitcache-")
	if err != nil {
		return fmt.Errorf("bench -coldstart: creating the warm pass's cache directory: %w", err)
	}
	defer os.RemoveAll(dir)
	warmEnv := withEnv(base, envCacheDisable+"=0", envCachePath+"="+dir, envCacheMaxSize+"="+coldCacheMaxSize)
	pop := r.populate(warmEnv, cases, filter)
	usage, _, usageErr := diskUsage(dir)
	if usageErr != nil && pop.err == nil {
		pop.err = fmt.Errorf("reading the cache directory %s: %w", dir, usageErr)
	}
	if asJSON {
		line := map[string]any{"pass": "populate", "wall_ms": round2(pop.ms), "cache_files": usage.Files, "cache_bytes": usage.Bytes}
		if pop.err != nil {
			line["error"] = pop.err.Error()
		}
		b, _ := json.Marshal(line)
		fmt.Fprintln(w, string(b))
	}
	if pop.err != nil {
		failed++
		fmt.Fprintf(os.Stderr, "bench -coldstart: filling the warm cache: %v\n", pop.err)
	}
	if usage.Files == 0 {
		fmt.Fprintf(os.Stderr, "bench -coldstart: the driver wrote nothing to the cache directory %s: the warm pass runs with an empty cache\n", dir)
	}
	if err := sigCtx.Err(); err != nil {
		return fmt.Errorf("bench -coldstart: interrupted")
	}
	warm := r.pass("warm", warmEnv, cases, emit)
	if !asJSON {
		fmt.Fprintf(w, "\nwarm: a private JIT cache (%s), filled by one process running every case (%.1f s; %d files, %s), then each case in a fresh process\n",
			envCachePath, pop.ms/1000, usage.Files, formatBytes(usage.Bytes))
		writeColdReport(w, warm)
	}
	failed += countColdFailures(warm)
	if err := sigCtx.Err(); err != nil {
		return fmt.Errorf("bench -coldstart: interrupted")
	}
	if failed > 0 {
		return fmt.Errorf("bench -coldstart: %d child runs failed", failed)
	}
	return nil
}

// coldRunner starts the children one at a time.
type coldRunner struct {
	ctx      context.Context // cancelled by Ctrl-C
	exe      string
	device   int
	progress bool // write [i/n] case to stderr
	done     int
	total    int
}

// pass runs every case in a fresh child with env, calling emit with each
// result as it comes.
func (r *coldRunner) pass(pass string, env []string, cases []coldCase, emit func(coldResult)) []coldResult {
	results := make([]coldResult, 0, len(cases))
	for _, c := range cases {
		if r.ctx.Err() != nil {
			break
		}
		r.done++
		if r.progress {
			fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] %s %s", r.done, r.total, pass, c.name)
		}
		args := []string{coldChildCommand, "-case", c.name, "-device", strconv.Itoa(r.device)}
		got, err := runColdChild(r.ctx, r.exe, env, args, coldChildTimeout)
		res := newColdResult(c)
		if i := indexColdResult(got, c.name); i >= 0 {
			res = got[i]
			if res.Error == "" && err != nil {
				res.Error = err.Error() // a line, then a failure (a crash at exit)
			}
		} else if err != nil {
			res.Error = err.Error()
		} else {
			res.Error = fmt.Sprintf("%s wrote no result for the case", coldChildCommand)
		}
		res.Pass = pass
		results = append(results, res)
		emit(res)
	}
	if r.progress {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	return results
}

// populateResult is how the warm cache was filled.
type populateResult struct {
	ms  float64
	err error
}

// populate fills the warm cache with one child that loads every kernel
// (ops.WarmAll, in parallel), so compiling and caching them, then runs
// every case.
func (r *coldRunner) populate(env []string, cases []coldCase, filter string) populateResult {
	if r.progress {
		fmt.Fprintf(os.Stderr, "\r\033[K[warm] filling the JIT cache: %d cases in one process", len(cases))
	}
	families := map[string]bool{}
	for _, c := range cases {
		families[c.family] = true
	}
	timeout := coldChildTimeout * time.Duration(len(families)+1)
	args := []string{coldChildCommand, "-all", "-filter", filter, "-device", strconv.Itoa(r.device)}
	start := time.Now()
	got, err := runColdChild(r.ctx, r.exe, env, args, timeout)
	ms := msSince(start)
	if r.progress {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		// Name the first failing case: the child's own error only counts them.
		for _, res := range got {
			if res.Error != "" {
				err = fmt.Errorf("%s: %s (%w)", res.Case, res.Error, err)
				break
			}
		}
		return populateResult{ms: ms, err: err}
	}
	if len(got) != len(cases) {
		return populateResult{ms: ms, err: fmt.Errorf("%s -all wrote %d results for %d cases", coldChildCommand, len(got), len(cases))}
	}
	return populateResult{ms: ms}
}

// runColdChild runs this executable with args and env, and parses the JSON
// lines of its stdout. The child is killed once ctx is done or timeout has
// passed; a failure's error carries the child's stderr.
func runColdChild(ctx context.Context, exe string, env, args []string, timeout time.Duration) ([]coldResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A grandchild holding the pipes open must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	results, parseErr := parseColdResults(stdout.Bytes())
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		runErr = fmt.Errorf("killed after %v", timeout)
	case ctx.Err() != nil:
		runErr = fmt.Errorf("interrupted")
	}
	err := runErr
	if err == nil {
		err = parseErr
	}
	if err == nil {
		return results, nil
	}
	msg := fmt.Sprintf("%s %s: %v", coldChildCommand, strings.Join(args[1:], " "), err)
	if s := flattenOutput(stderr.Bytes(), 2000); s != "" {
		msg += "; stderr: " + s
	}
	return results, errors.New(msg)
}

// parseColdResults reads the JSON lines of a child's stdout; other lines
// (anything a library prints) are skipped.
func parseColdResults(out []byte) ([]coldResult, error) {
	var results []coldResult
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var r coldResult
		if err := json.Unmarshal(line, &r); err != nil {
			return results, fmt.Errorf("bad result line %q: %w", line, err)
		}
		results = append(results, r)
	}
	return results, nil
}

func indexColdResult(results []coldResult, name string) int {
	for i, r := range results {
		if r.Case == name {
			return i
		}
	}
	return -1
}

// flattenOutput makes a process's output one line ("/" between its lines)
// of at most max bytes, keeping its head and tail (a Go panic's message
// leads, a library's last word trails).
func flattenOutput(out []byte, max int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " / ")
	if len(s) > max {
		s = s[:max/2] + " ... " + s[len(s)-max/2:]
	}
	return s
}

// withEnv returns base with each KEY=VALUE of kv set, replacing any entry
// of the same key (compared without case on Windows, as its environment is).
func withEnv(base []string, kv ...string) []string {
	keyOf := func(e string) string {
		k, _, _ := strings.Cut(e, "=")
		if runtime.GOOS == "windows" {
			k = strings.ToUpper(k)
		}
		return k
	}
	set := map[string]bool{}
	for _, e := range kv {
		set[keyOf(e)] = true
	}
	out := make([]string, 0, len(base)+len(kv))
	for _, e := range base {
		if !set[keyOf(e)] {
			out = append(out, e)
		}
	}
	return append(out, kv...)
}
