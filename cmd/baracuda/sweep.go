package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"text/tabwriter"
	"time"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// `baracuda bench -sweep` shows where launch overhead dominates: one op of
// each family over sizes from 2^10 to 2^26 elements, each timed as
// back-to-back calls (host launch included, as a training loop sees them)
// both as eager Runs and as the same Run replayed from a CUDA graph.
// bench/torch_ref.py --sweep times PyTorch's backward over the same cases
// the same way, and bench/compare.py joins the two.

// sweepCase is one op at one size.
type sweepCase struct {
	name  string
	n     int // elements of the op's input
	setup func(b *benchEnv) (func() error, error)
}

// sweepSizes are 2^10, 2^12, ..., 2^26 elements.
func sweepSizes() []int {
	var out []int
	for p := 10; p <= 26; p += 2 {
		out = append(out, 1<<p)
	}
	return out
}

func sweepCases() []sweepCase {
	var cs []sweepCase
	f32 := dtype.F32
	for _, n := range sweepSizes() {
		rows := n / 256
		cs = append(cs,
			sweepCase{fmt.Sprintf("sweep/binary/mul/f32/n%d", n), n, func(b *benchEnv) (func() error, error) {
				return setupBinary(b, ops.BinaryMul, f32, n)
			}},
			sweepCase{fmt.Sprintf("sweep/reduce/sum/f32/%dx256/axis1", rows), n, func(b *benchEnv) (func() error, error) {
				return setupReduce(b, ops.ReduceSum, f32, []int{rows, 256}, 1)
			}},
			sweepCase{fmt.Sprintf("sweep/scan/cumsum/f32/%dx256/axis1", rows), n, func(b *benchEnv) (func() error, error) {
				return setupScan(b, ops.ScanCumsum, f32, []int{rows, 256}, 1)
			}},
			sweepCase{fmt.Sprintf("sweep/lppool2d/p2/f32/1x%dx32x32/k2s2", n/1024), n, func(b *benchEnv) (func() error, error) {
				return setupLpPool2d(b, ops.LpPool2dDesc{DType: f32, N: 1, C: n / 1024, H: 32, W: 32,
					KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2, P: 2})
			}})
	}
	return cs
}

// sweepResult is one line of the sweep's JSON output.
type sweepResult struct {
	Case    string  `json:"case"`
	N       int     `json:"n"`
	EagerUS float64 `json:"eager_us"`
	GraphUS float64 `json:"graph_us"`
	Error   string  `json:"error,omitempty"`
}

// sweepIters is how many back-to-back calls each timing averages.
const sweepIters = 200

func runSweep(w io.Writer, filter string, device int, asJSON, list bool) error {
	cases := keepMatching(sweepCases(), func(c sweepCase) string { return c.name }, filter)
	if len(cases) == 0 {
		return noMatch(filter, "-sweep")
	}
	if list {
		for _, c := range cases {
			fmt.Fprintln(w, c.name)
		}
		return nil
	}
	ctx, err := openContext(device)
	if err != nil {
		return err
	}
	stream, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer stream.Destroy()
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "case\telements\teager us\tgraph us\t")
	}
	failed := 0
	for i, c := range cases {
		if isTerminal(os.Stderr) {
			fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] %s", i+1, len(cases), c.name)
		}
		r := sweepResult{Case: c.name, N: c.n}
		env := &benchEnv{ctx: ctx, stream: stream, rng: rand.New(rand.NewPCG(7, 11))}
		if err := sweepOne(env, c, &r); err != nil {
			r.Error = err.Error()
			failed++
		}
		env.free()
		if asJSON {
			line, _ := json.Marshal(r)
			fmt.Fprintln(w, string(line))
		} else if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\terror: %s\t\t\n", r.Case, r.N, r.Error)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t\n", r.Case, r.N, r.EagerUS, r.GraphUS)
		}
	}
	if isTerminal(os.Stderr) {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if tw != nil {
		tw.Flush()
	}
	if failed > 0 {
		return fmt.Errorf("bench -sweep: %d cases failed", failed)
	}
	return nil
}

// sweepOne times one case eagerly and from a graph of one Run.
func sweepOne(env *benchEnv, c sweepCase, r *sweepResult) error {
	run, err := c.setup(env)
	if err != nil {
		return err
	}
	// The first Run loads the kernels: a capture must not meet a load.
	if err := run(); err != nil {
		return err
	}
	if err := env.stream.Synchronize(); err != nil {
		return err
	}
	if r.EagerUS, err = backToBack(env, run); err != nil {
		return err
	}
	if err := env.stream.BeginCapture(); err != nil {
		return err
	}
	runErr := run()
	g, err := env.stream.EndCapture()
	if runErr != nil {
		return fmt.Errorf("Run during capture: %w", runErr)
	}
	if err != nil {
		return err
	}
	defer g.Destroy()
	r.GraphUS, err = backToBack(env, func() error { return g.Launch(env.stream) })
	return err
}

// backToBack is the wall time of sweepIters calls of fn queued back to back
// and waited for once, per call, in microseconds.
func backToBack(env *benchEnv, fn func() error) (float64, error) {
	for i := 0; i < 3; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	if err := env.stream.Synchronize(); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < sweepIters; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	if err := env.stream.Synchronize(); err != nil {
		return 0, err
	}
	return round2(float64(time.Since(start).Microseconds()) / sweepIters), nil
}
