package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
)

// `baracuda bench -nccl` measures NCCL's all-reduce (sum, f32, in place)
// through package nccl over 1 MiB to 1 GiB, on every visible GPU, and
// reports the bus bandwidth as nccl-tests defines it: algorithm bandwidth
// (bytes / time) times 2(n-1)/n for n ranks, the share of the data each
// rank's links carry in a ring all-reduce. bench/torch_nccl.py measures
// torch.distributed's all-reduce over the same sizes the same way.
//
// By default one process drives every GPU (nccl.InitAll, the all-reduces of
// an iteration in one group). With -nccl-procs N it starts N processes of
// itself instead, one GPU each, which join with nccl.InitRank after rank 0
// passes the unique id through a file: the layout of torch.distributed's
// one process per GPU.

// ncclBenchRankCommand is the hidden command each process of -nccl-procs
// runs.
const ncclBenchRankCommand = "nccl-bench-rank"

// Environment of an -nccl-procs child: its rank, the number of ranks and
// the file the unique id travels through.
const (
	envBenchRank   = "BARACUDA_NCCL_BENCH_RANK"
	envBenchNRanks = "BARACUDA_NCCL_BENCH_NRANKS"
	envBenchIDFile = "BARACUDA_NCCL_BENCH_ID_FILE"
)

// ncclBenchSizes are the message sizes in bytes: 1 MiB, 2 MiB, ..., 1 GiB.
func ncclBenchSizes() []int64 {
	var out []int64
	for b := int64(1 << 20); b <= 1<<30; b *= 2 {
		out = append(out, b)
	}
	return out
}

func ncclCaseName(bytes int64) string { return fmt.Sprintf("nccl/allreduce/sum/f32/%d", bytes) }

// ncclResult is one line of -nccl -json.
type ncclResult struct {
	Case      string  `json:"case"`
	Bytes     int64   `json:"bytes"`
	Ranks     int     `json:"ranks"`
	US        float64 `json:"us"`
	AlgBWGBps float64 `json:"algbw_gbps"`
	BusBWGBps float64 `json:"busbw_gbps"`
	Error     string  `json:"error,omitempty"`
}

// ncclRank is one GPU of the benchmark in this process.
type ncclRank struct {
	comm       *nccl.Comm
	stream     *driver.Stream
	start, end *driver.Event
	buf        driver.Buffer
}

func (r *ncclRank) close() {
	ctx := r.comm.Context()
	ctx.Free(r.buf)
	r.start.Destroy()
	r.end.Destroy()
	r.stream.Destroy()
	r.comm.Destroy()
}

// newNCCLRank makes the stream, events and the largest buffer (zeros, so
// the sums stay finite) for comm.
func newNCCLRank(comm *nccl.Comm, maxBytes int64) (*ncclRank, error) {
	ctx := comm.Context()
	r := &ncclRank{comm: comm}
	var err error
	if r.stream, err = ctx.NewStream(); err != nil {
		return nil, err
	}
	if r.start, err = ctx.NewEvent(); err != nil {
		return nil, err
	}
	if r.end, err = ctx.NewEvent(); err != nil {
		return nil, err
	}
	if r.buf, err = ctx.Alloc(maxBytes); err != nil {
		return nil, err
	}
	return r, ctx.Memset8(r.buf, 0)
}

// keepNVLSOff sets NCCL_NVLS_ENABLE=0 unless the user set it: NVLink
// multicast can take a shared host's GPUs out of service when a program
// using it dies.
func keepNVLSOff() {
	if _, ok := os.LookupEnv("NCCL_NVLS_ENABLE"); !ok {
		os.Setenv("NCCL_NVLS_ENABLE", "0")
	}
}

func runNCCLBench(w io.Writer, filter string, iters int, asJSON, list bool, procs int) error {
	sizes := keepMatching(ncclBenchSizes(), ncclCaseName, filter)
	if list {
		for _, b := range sizes {
			fmt.Fprintln(w, ncclCaseName(b))
		}
		return nil
	}
	if len(sizes) == 0 {
		return noMatch(filter, "-nccl")
	}
	keepNVLSOff()
	if procs > 0 {
		return runNCCLProcs(w, filter, iters, asJSON, procs)
	}
	comms, err := nccl.InitAll(nil)
	if err != nil {
		return err
	}
	var ranks []*ncclRank
	defer func() {
		for _, r := range ranks {
			r.close()
		}
	}()
	for _, c := range comms {
		r, err := newNCCLRank(c, sizes[len(sizes)-1])
		if err != nil {
			return err
		}
		ranks = append(ranks, r)
	}
	return ncclBenchLoop(w, ranks, sizes, iters, asJSON, "one process")
}

// ncclBenchLoop times every size on the ranks of this process and, where
// this process holds rank 0, prints the results.
func ncclBenchLoop(w io.Writer, ranks []*ncclRank, sizes []int64, iters int, asJSON bool, layout string) error {
	nranks := ranks[0].comm.Count()
	report := ranks[0].comm.Rank() == 0
	var tw *tabwriter.Writer
	if report {
		v, _ := nccl.Version()
		name, _ := ranks[0].comm.Context().Device().Name()
		if asJSON {
			line, _ := json.Marshal(map[string]any{"device": name, "ranks": nranks, "layout": layout,
				"nccl": nccl.FormatVersion(v), "nvls_enable": os.Getenv("NCCL_NVLS_ENABLE")})
			fmt.Fprintln(w, string(line))
		} else {
			fmt.Fprintf(w, "NCCL %s all-reduce (sum, f32, in place) over %d x %s, %s; bus bandwidth = bytes/time x 2(n-1)/n\n\n",
				nccl.FormatVersion(v), nranks, name, layout)
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "bytes\tus\talgbw GB/s\tbusbw GB/s\t")
		}
	}
	failed := 0
	for _, bytes := range sizes {
		r := ncclResult{Case: ncclCaseName(bytes), Bytes: bytes, Ranks: nranks}
		us, err := timeAllReduce(ranks, bytes, iters)
		if err != nil {
			r.Error = err.Error()
			failed++
		} else {
			r.US = round2(us)
			alg := float64(bytes) / us / 1e3
			r.AlgBWGBps = round2(alg)
			r.BusBWGBps = round2(alg * 2 * float64(nranks-1) / float64(nranks))
		}
		switch {
		case !report:
		case asJSON:
			line, _ := json.Marshal(r)
			fmt.Fprintln(w, string(line))
		case r.Error != "":
			fmt.Fprintf(tw, "%d\terror: %s\t\t\t\n", r.Bytes, r.Error)
		default:
			fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t\n", r.Bytes, r.US, r.AlgBWGBps, r.BusBWGBps)
		}
		if err != nil && errors.Is(err, errAborted) {
			break
		}
	}
	if tw != nil {
		tw.Flush()
	}
	if failed > 0 {
		return fmt.Errorf("bench -nccl: %d sizes failed", failed)
	}
	return nil
}

// errAborted marks a failure after which the communicator cannot go on.
var errAborted = errors.New("communicator failed")

// allReduceAll queues one in-place all-reduce of bytes on every rank of
// this process, as one group.
func allReduceAll(ranks []*ncclRank, bytes int64) error {
	if err := nccl.GroupStart(); err != nil {
		return err
	}
	n := int(bytes / 4)
	var first error
	for _, r := range ranks {
		b := r.buf.Slice(0, bytes)
		if err := r.comm.AllReduce(b, b, n, dtype.F32, nccl.Sum, r.stream); err != nil && first == nil {
			first = err
		}
	}
	if err := nccl.GroupEnd(); err != nil && first == nil {
		first = err
	}
	return first
}

// timeAllReduce runs 5 warm-up all-reduces, then iters back to back
// between events on every rank's stream, and returns the time per
// all-reduce in microseconds: the slowest rank's, agreed on by all ranks
// through an all-reduce (max) of their times.
func timeAllReduce(ranks []*ncclRank, bytes int64, iters int) (float64, error) {
	for i := 0; i < 5; i++ {
		if err := allReduceAll(ranks, bytes); err != nil {
			return 0, err
		}
	}
	for _, r := range ranks {
		if err := r.stream.Synchronize(); err != nil {
			return 0, err
		}
		if err := r.start.Record(r.stream); err != nil {
			return 0, err
		}
	}
	for i := 0; i < iters; i++ {
		if err := allReduceAll(ranks, bytes); err != nil {
			return 0, err
		}
	}
	worst := make([]float64, 1)
	for _, r := range ranks {
		if err := r.end.Record(r.stream); err != nil {
			return 0, err
		}
		if err := r.end.Synchronize(); err != nil {
			return 0, fmt.Errorf("%w: %w", errAborted, err)
		}
		if err := r.comm.AsyncError(); err != nil {
			return 0, fmt.Errorf("%w: %w", errAborted, err)
		}
		ms, err := driver.ElapsedMs(r.start, r.end)
		if err != nil {
			return 0, err
		}
		worst[0] = max(worst[0], float64(ms)*1e3/float64(iters))
	}
	// Every rank of the communicator takes part, so every process learns
	// the slowest time; the first 8 bytes of each buffer carry it.
	for _, r := range ranks {
		if err := driver.CopyToDevice(r.comm.Context(), r.buf, worst); err != nil {
			return 0, err
		}
	}
	if err := nccl.GroupStart(); err != nil {
		return 0, err
	}
	for _, r := range ranks {
		b := r.buf.Slice(0, 8)
		if err := r.comm.AllReduce(b, b, 1, dtype.F64, nccl.Max, r.stream); err != nil {
			nccl.GroupEnd()
			return 0, err
		}
	}
	if err := nccl.GroupEnd(); err != nil {
		return 0, err
	}
	for _, r := range ranks {
		if err := r.stream.Synchronize(); err != nil {
			return 0, err
		}
	}
	if err := driver.CopyFromDevice(ranks[0].comm.Context(), worst, ranks[0].buf); err != nil {
		return 0, err
	}
	// Zeros again, so the next size sums zeros.
	for _, r := range ranks {
		if err := r.comm.Context().Memset8(r.buf.Slice(0, 8), 0); err != nil {
			return 0, err
		}
	}
	return worst[0], nil
}

// runNCCLProcs starts procs processes of this program, rank i on GPU i,
// prints rank 0's output and waits for all of them.
func runNCCLProcs(w io.Writer, filter string, iters int, asJSON bool, procs int) error {
	n, err := driver.DeviceCount()
	if err != nil {
		return err
	}
	if procs > n {
		return usageError{fmt.Errorf("-nccl-procs %d: only %d GPUs are visible", procs, n)}
	}
	dir, err := os.MkdirTemp("", "baracuda-nccl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{ncclBenchRankCommand, "-iters", strconv.Itoa(iters), "-filter", filter}
	if asJSON {
		args = append(args, "-json")
	}
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for r := 0; r < procs; r++ {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), envBenchRank+"="+strconv.Itoa(r), envBenchNRanks+"="+strconv.Itoa(procs),
			envBenchIDFile+"="+filepath.Join(dir, "id"))
		cmd.Stderr = os.Stderr
		if r == 0 {
			cmd.Stdout = w
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runNCCLBenchRank is one process of -nccl-procs.
func runNCCLBenchRank(w io.Writer, args []string) error {
	fs := flag.NewFlagSet(ncclBenchRankCommand, flag.ContinueOnError)
	filter := fs.String("filter", "", "")
	iters := fs.Int("iters", 20, "")
	asJSON := fs.Bool("json", false, "")
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	rank, err1 := strconv.Atoi(os.Getenv(envBenchRank))
	nranks, err2 := strconv.Atoi(os.Getenv(envBenchNRanks))
	idFile := os.Getenv(envBenchIDFile)
	if err1 != nil || err2 != nil || idFile == "" {
		return fmt.Errorf("%s is started by 'baracuda bench -nccl -nccl-procs N', which sets %s, %s and %s",
			ncclBenchRankCommand, envBenchRank, envBenchNRanks, envBenchIDFile)
	}
	sizes := keepMatching(ncclBenchSizes(), ncclCaseName, *filter)
	keepNVLSOff()
	id, err := nccl.ShareUniqueIDFile(rank, idFile, 2*time.Minute)
	if err != nil {
		return err
	}
	ctx, err := openContext(rank)
	if err != nil {
		return err
	}
	comm, err := nccl.InitRank(ctx, nranks, rank, id)
	if err != nil {
		return err
	}
	r, err := newNCCLRank(comm, sizes[len(sizes)-1])
	if err != nil {
		return err
	}
	defer r.close()
	return ncclBenchLoop(w, []*ncclRank{r}, sizes, *iters, *asJSON, fmt.Sprintf("%d processes", nranks))
}
