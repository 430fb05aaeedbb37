package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// benchCase is one line of bench/README.md: a name, the minimal traffic in
// elements (each input read once, each output written once) and a setup
// that uploads inputs once and returns the timed launch.
type benchCase struct {
	name  string
	op    string
	dt    dtype.DType
	data  string // the -shapes set's kind of input data; empty for the other cases
	elems int64  // minimal-traffic model, in elements of dt
	setup func(b *benchEnv) (run func() error, err error)
}

// benchEnv owns the device memory of one case.
type benchEnv struct {
	ctx    *driver.Context
	stream *driver.Stream
	rng    *rand.Rand
	bufs   []driver.Buffer
}

func (b *benchEnv) free() {
	for _, buf := range b.bufs {
		_ = b.ctx.Free(buf)
	}
	b.bufs = nil
}

// upload allocates n elements of dt and fills them with gen() (inputs are
// made on the host once and never timed); a nil gen leaves zeros.
func (b *benchEnv) upload(dt dtype.DType, n int64, gen func() float64) (driver.Buffer, error) {
	if gen == nil {
		buf, err := b.ctx.Alloc(n * int64(dt.Size()))
		if err != nil {
			return buf, err
		}
		b.bufs = append(b.bufs, buf)
		return buf, b.ctx.Memset8(buf, 0)
	}
	return b.uploadValues(dt, b.values(dt, n, gen))
}

// values draws n values from gen, rounded to dt (what the GPU will hold).
func (b *benchEnv) values(dt dtype.DType, n int64, gen func() float64) []float64 {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = gen()
	}
	return dtype.Decode(dt, dtype.Encode(dt, vals))
}

// uploadValues allocates a buffer of dt holding vals.
func (b *benchEnv) uploadValues(dt dtype.DType, vals []float64) (driver.Buffer, error) {
	return b.uploadBytes(dtype.Encode(dt, vals))
}

// uploadBytes allocates a buffer holding enc, elements already encoded.
func (b *benchEnv) uploadBytes(enc []byte) (driver.Buffer, error) {
	buf, err := b.ctx.Alloc(int64(len(enc)))
	if err != nil {
		return buf, err
	}
	b.bufs = append(b.bufs, buf)
	return buf, b.ctx.CopyHtoD(buf, enc)
}

func (b *benchEnv) normal() float64 { return b.rng.NormFloat64() }

// positive is |N(0,1)| + 0.5, the binary cases' inputs.
func (b *benchEnv) positive() float64 {
	v := b.rng.NormFloat64()
	if v < 0 {
		v = -v
	}
	return v + 0.5
}

// nearOne is 1 + 0.001*N(0,1), for products that must neither vanish nor overflow.
func (b *benchEnv) nearOne() float64 { return 1 + 0.001*b.rng.NormFloat64() }

// benchCases is filled by each family's bench file.
var benchCases []benchCase

type benchResult struct {
	Case    string  `json:"case"`
	Op      string  `json:"op"`
	DType   string  `json:"dtype"`
	Data    string  `json:"data,omitempty"`
	US      float64 `json:"us"`
	GBps    float64 `json:"gbps"`
	CopyPct float64 `json:"copy_pct"`
	Error   string  `json:"error,omitempty"`
}

// matchFilter reports whether a case name matches a -filter value: it
// contains the value, or one of the |-separated parts of it (an empty
// value or part matches every name).
func matchFilter(name, filter string) bool {
	for _, part := range strings.Split(filter, "|") {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// keepMatching is the items of all whose names (by name) match filter
// (matchFilter), in order.
func keepMatching[T any](all []T, name func(T) string, filter string) []T {
	var out []T
	for _, c := range all {
		if matchFilter(name(c), filter) {
			out = append(out, c)
		}
	}
	return out
}

// noMatch is the usage error of a -filter that matches none of the cases
// of run ("-sweep", "-coldstart", "-nccl"; "" for the default and -shapes
// runs, whose -list takes no run flag).
func noMatch(filter, run string) error {
	if run == "" {
		return usageError{fmt.Errorf("-filter %q matches no case (see -list)", filter)}
	}
	return usageError{fmt.Errorf("-filter %q matches no %s case (see %s -list)", filter, run, run)}
}

func runBench(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	filter := fs.String("filter", "", "run only cases whose name contains this, or any of several separated by |\n"+
		"(e.g. reduce/max/bf16|reduce/var/bf16)")
	asJSON := fs.Bool("json", false, "print one JSON line per case")
	iters := fs.Int("iters", 20, "timed runs per case (the median is reported)")
	device := fs.Int("device", 0, "GPU ordinal")
	list := fs.Bool("list", false, "list the case names and exit")
	coldstart := fs.Bool("coldstart", false, "instead: time the first Run of one plan per (family, op, dtype), each in a fresh\n"+
		"process, where the driver JIT-compiles the kernels' PTX; once with the driver's JIT cache\n"+
		"disabled (CUDA_CACHE_DISABLE=1: what a fresh host pays) and once from a warm private cache.\n"+
		"-filter, -device, -json and -list apply, -iters does not")
	sweep := fs.Bool("sweep", false, "instead: one op of each family over sizes 2^10 to 2^26, each as back-to-back eager\n"+
		"Runs and as the Run replayed from a CUDA graph (host launch included); -filter, -device,\n"+
		"-json and -list apply")
	shapes := fs.Bool("shapes", false, "instead of the default cases: every reduce and scan op, f32 and bf16, over seven\n"+
		"(shape, axis) layouts of 2^24 elements, each with normal, grid (repeated values) and\n"+
		"clamp (saturated) data (bench/README.md, \"Shapes and data\"); -filter, -device, -iters,\n"+
		"-json and -list apply")
	ncclRun := fs.Bool("nccl", false, "instead: NCCL all-reduce (sum, f32, in place) bus bandwidth over 1 MiB to 1 GiB on\n"+
		"every visible GPU, one process driving them all (bench/README.md, \"NCCL all-reduce\");\n"+
		"-filter, -iters, -json and -list apply")
	ncclProcs := fs.Int("nccl-procs", 0, "with -nccl: run N processes of one GPU each, joined by nccl.InitRank\n"+
		"(torch.distributed's layout), instead of one process")
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	var runs []string
	for _, r := range []struct {
		flag string
		on   bool
	}{{"-sweep", *sweep}, {"-coldstart", *coldstart}, {"-shapes", *shapes}, {"-nccl", *ncclRun}} {
		if r.on {
			runs = append(runs, r.flag)
		}
	}
	if len(runs) > 1 {
		return usageError{fmt.Errorf("%s and %s are two different runs: give one", runs[0], runs[1])}
	}
	if *sweep {
		return runSweep(w, *filter, *device, *asJSON, *list)
	}
	if *iters < 1 {
		return usageError{fmt.Errorf("-iters %d: at least one timed run is needed", *iters)}
	}
	if *ncclProcs != 0 && (!*ncclRun || *ncclProcs < 2) {
		return usageError{fmt.Errorf("-nccl-procs %d: give -nccl and at least 2 processes", *ncclProcs)}
	}
	if *ncclRun {
		return runNCCLBench(w, *filter, *iters, *asJSON, *list, *ncclProcs)
	}
	if *coldstart {
		return runColdstart(w, *filter, *device, *asJSON, *list)
	}
	all := benchCases
	if *shapes {
		all = shapesCases()
	}
	cases := keepMatching(all, func(c benchCase) string { return c.name }, *filter)
	if len(cases) == 0 {
		return noMatch(*filter, "")
	}
	if *list {
		for _, c := range cases {
			fmt.Fprintln(w, c.name)
		}
		return nil
	}
	ctx, err := openContext(*device)
	if err != nil {
		return err
	}
	dev := ctx.Device()
	stream, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer stream.Destroy()
	t := &timer{ctx: ctx, stream: stream, iters: *iters}
	defer t.close()
	copyGBps, err := t.copyBandwidth()
	if err != nil {
		return fmt.Errorf("copy bandwidth: %w", err)
	}
	name, _ := dev.Name()
	notePTXDir()
	progress := isTerminal(os.Stderr)
	var tw *tabwriter.Writer
	if *asJSON {
		line, _ := json.Marshal(map[string]any{"device": name, "copy_gbps": round1(copyGBps)})
		fmt.Fprintln(w, string(line))
	} else {
		fmt.Fprintf(w, "device: %s; device-to-device copy: %.0f GB/s (read + write)\n\n", name, copyGBps)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "case\tus\tGB/s\t% copy\t")
	}
	failed := 0
	for i, c := range cases {
		if progress {
			fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] %s", i+1, len(cases), c.name)
		}
		r := benchResult{Case: c.name, Op: c.op, DType: c.dt.Suffix(), Data: c.data}
		us, err := t.timeCase(c)
		if err != nil {
			r.Error = err.Error()
			failed++
		} else {
			r.US = round2(us)
			r.GBps = round1(float64(c.elems) * float64(c.dt.Size()) / us / 1e3)
			r.CopyPct = round1(100 * r.GBps / copyGBps)
		}
		if *asJSON {
			line, _ := json.Marshal(r)
			fmt.Fprintln(w, string(line))
		} else if r.Error != "" {
			fmt.Fprintf(tw, "%s\terror: %s\t\t\t\n", r.Case, r.Error)
		} else {
			fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.0f%%\t\n", r.Case, r.US, r.GBps, r.CopyPct)
		}
	}
	if progress {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if tw != nil {
		tw.Flush()
	}
	if failed > 0 {
		return fmt.Errorf("bench: %d cases failed", failed)
	}
	return nil
}

// timer times launches with CUDA events on one stream.
type timer struct {
	ctx    *driver.Context
	stream *driver.Stream
	iters  int
	flush  driver.Buffer // see flushBytes; freed by close
}

func (t *timer) close() {
	if t.flush.Size != 0 {
		t.ctx.Free(t.flush)
	}
}

// flushBytes is the scratch buffer written before every timed run: five
// times the H100's 50 MB L2, so each run starts with cold caches (as a
// backward pass does, long after its forward wrote the inputs).
const flushBytes = 256 << 20

// median times fn iters times after three warm-up runs and returns the
// median in microseconds. Each run is queued behind a write of the flush
// buffer (about 100 us of GPU work): the host enqueues the start event and
// the launch while the GPU is still busy, so the events bracket the
// kernel's GPU time alone, not the host's launch latency (measured apart
// by BenchmarkRunHost), and no input is left in L2 by the run before.
func (t *timer) median(fn func() error) (float64, error) {
	if t.flush.Size == 0 {
		buf, err := t.ctx.Alloc(flushBytes)
		if err != nil {
			return 0, fmt.Errorf("flush buffer: %w", err)
		}
		t.flush = buf
	}
	start, err := t.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	end, err := t.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	for i := 0; i < 3; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	if err := t.stream.Synchronize(); err != nil {
		return 0, err
	}
	times := make([]float64, 0, t.iters)
	for i := 0; i < t.iters; i++ {
		if err := t.stream.MemsetD8Async(t.flush, uint8(i)); err != nil {
			return 0, err
		}
		if err := start.Record(t.stream); err != nil {
			return 0, err
		}
		if err := fn(); err != nil {
			return 0, err
		}
		if err := end.Record(t.stream); err != nil {
			return 0, err
		}
		if err := end.Synchronize(); err != nil {
			return 0, err
		}
		ms, err := driver.ElapsedMs(start, end)
		if err != nil {
			return 0, err
		}
		times = append(times, float64(ms)*1000)
	}
	sort.Float64s(times)
	return times[len(times)/2], nil
}

func (t *timer) timeCase(c benchCase) (float64, error) {
	env := &benchEnv{ctx: t.ctx, stream: t.stream, rng: rand.New(rand.NewPCG(7, 11))}
	defer env.free()
	run, err := c.setup(env)
	if err != nil {
		return 0, err
	}
	return t.median(run)
}

// copyBandwidth measures a 512 MiB device-to-device copy, counting bytes
// read plus bytes written, in GB/s.
func (t *timer) copyBandwidth() (float64, error) {
	const size = 512 << 20
	src, err := t.ctx.Alloc(size)
	if err != nil {
		return 0, err
	}
	defer t.ctx.Free(src)
	dst, err := t.ctx.Alloc(size)
	if err != nil {
		return 0, err
	}
	defer t.ctx.Free(dst)
	if err := t.ctx.Memset8(src, 1); err != nil {
		return 0, err
	}
	us, err := t.median(func() error { return t.stream.CopyDtoDAsync(dst, src) })
	if err != nil {
		return 0, err
	}
	return 2 * size / us / 1e3, nil
}

// notePTXDir says on stderr when BARACUDA_PTX_DIR (a kernel developer's
// knob: PTX modules read from a directory) replaces embedded kernels, so
// that no figure is taken for the embedded kernels' by mistake.
func notePTXDir() {
	if dir := os.Getenv("BARACUDA_PTX_DIR"); dir != "" {
		fmt.Fprintf(os.Stderr, "bench: kernels from BARACUDA_PTX_DIR=%s where it holds a module, not the embedded PTX\n", dir)
	}
}

// openContext loads the driver and returns the primary context of GPU
// device.
func openContext(device int) (*driver.Context, error) {
	if err := driver.Load(); err != nil {
		return nil, err
	}
	dev, err := driver.GetDevice(device)
	if err != nil {
		return nil, err
	}
	return dev.Context()
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
