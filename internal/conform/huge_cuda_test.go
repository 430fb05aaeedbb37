//go:build cuda

package conform

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// Tensors of more than 2^31 elements, one test per family, in bf16 (4.3 GB
// a tensor): binary mul over 2^31+33 elements, cumsum and sum and max along
// an axis of 2^31+33, lp_pool1d over [1, 4, 2^29+8]. A plan must either give
// the right values or reject the descriptor with an ops error; a wrong
// value, a launch error or a fault fails. The data are periodic with an odd
// period (hugePeriod), so an index that wraps at 2^31 or 2^32 reads another
// value, and are chosen so that the float64 reference of any position is
// known without the whole tensor on the host: each test checks windows at
// the start, the end and around 2^30, 2^31 and 2^32 bytes and elements,
// and random ones, and guard bands on both sides of every output.
//
// They need about 22 GB of GPU memory (binary mul: five tensors) and run
// only where hugeEnv is 1 (run.sh huge sets it):
//
//	BARACUDA_HUGE=1 ./internal_conform.test -test.run 'TestHuge' -test.v -test.timeout 30m
const hugeEnv = "BARACUDA_HUGE"

const (
	hugeN      = 1<<31 + 33
	hugePeriod = 1_000_003 // odd: no power of two is a multiple of it
	hugeGuard  = 64        // guard elements on each side of an output
	hugeWindow = 64        // elements read per checked window
	hugeChunk  = 1 << 24   // elements per host-to-device copy
)

// hugeEnvOrSkip returns the test environment when hugeEnv is 1.
func hugeEnvOrSkip(t *testing.T) *Env {
	t.Helper()
	if os.Getenv(hugeEnv) != "1" {
		t.Skipf("tensors of more than 2^31 elements need about 22 GB of GPU memory; set %s=1 to run them", hugeEnv)
	}
	return testEnv(t)
}

// hugeBF16 is a bf16 tensor of n elements between guard bands.
type hugeBF16 struct {
	e     *Env
	n     int64
	whole driver.Buffer
}

// bf16Guard is the guard pattern (guardBits) as one element.
const bf16Guard = 0x7fa5

func (e *Env) newHugeBF16(n int64) (*hugeBF16, error) {
	whole, err := e.Ctx.Alloc((n + 2*hugeGuard) * 2)
	if err != nil {
		return nil, fmt.Errorf("allocating %d bf16 elements: %w", n, err)
	}
	h := &hugeBF16{e: e, n: n, whole: whole}
	g := make([]uint16, hugeGuard)
	for i := range g {
		g[i] = bf16Guard
	}
	for _, off := range []int64{0, (hugeGuard + n) * 2} {
		if err := driver.CopyToDevice(e.Ctx, whole.Slice(off, hugeGuard*2), g); err != nil {
			h.free()
			return nil, err
		}
	}
	return h, nil
}

func (h *hugeBF16) free() {
	if h != nil {
		_ = h.e.Ctx.Free(h.whole)
	}
}

func (h *hugeBF16) tensor(shape ...int) ops.Tensor {
	return ops.Tensor{Buf: h.whole.Slice(hugeGuard*2, h.n*2), DType: dtype.BF16, Shape: shape}
}

// fill writes element i = gen(i) chunk by chunk: gen(start, out) fills out
// with elements start, start+1, ...
func (h *hugeBF16) fill(gen func(start int64, out []uint16)) error {
	buf := make([]uint16, hugeChunk)
	for start := int64(0); start < h.n; start += hugeChunk {
		out := buf[:min(hugeChunk, h.n-start)]
		gen(start, out)
		if err := driver.CopyToDevice(h.e.Ctx, h.whole.Slice((hugeGuard+start)*2, int64(len(out))*2), out); err != nil {
			return err
		}
	}
	return nil
}

// periodic is a generator of table[i mod len(table)].
func periodic(table []uint16) func(int64, []uint16) {
	p := int64(len(table))
	return func(start int64, out []uint16) {
		j := start % p
		for i := range out {
			out[i] = table[j]
			if j++; j == p {
				j = 0
			}
		}
	}
}

// read returns elements [start, start+count) and checks the guard bands.
func (h *hugeBF16) read(start, count int64) ([]float64, error) {
	raw := make([]uint16, count)
	if err := driver.CopyFromDevice(h.e.Ctx, raw, h.whole.Slice((hugeGuard+start)*2, count*2)); err != nil {
		return nil, err
	}
	out := make([]float64, count)
	for i, b := range raw {
		out[i] = float64(dtype.BF16ToFloat32(b))
	}
	return out, nil
}

// guardsIntact reports a write outside the tensor.
func (h *hugeBF16) guardsIntact() error {
	g := make([]uint16, hugeGuard)
	for _, side := range []struct {
		off  int64
		name string
	}{{0, "before the start"}, {(hugeGuard + h.n) * 2, "past the end"}} {
		if err := driver.CopyFromDevice(h.e.Ctx, g, h.whole.Slice(side.off, hugeGuard*2)); err != nil {
			return err
		}
		for i, v := range g {
			if v != bf16Guard {
				return fmt.Errorf("the guard band %s was overwritten (element %d of %d: %#04x)", side.name, i, hugeGuard, v)
			}
		}
	}
	return nil
}

// hugeWindows are the starts of the windows a test reads from a tensor of
// n elements: the first and last elements, around 2^30, 2^31 and 2^32
// (elements, and bytes of bf16 and f32), and 32 random ones.
func hugeWindows(n int64) []int64 {
	var w []int64
	add := func(s int64) {
		w = append(w, max(0, min(s, n-hugeWindow)))
	}
	add(0)
	add(n - hugeWindow)
	for _, b := range []int64{1 << 29, 1 << 30, 1 << 31, 1 << 32} {
		add(b - hugeWindow/2)
	}
	rng := rand.New(rand.NewPCG(39, uint64(n)))
	for range 32 {
		add(rng.Int64N(n))
	}
	return w
}

// bf16Table is a table of hugePeriod bf16 values drawn by draw.
func bf16Table(seed uint64, draw func(*rand.Rand) float64) []uint16 {
	rng := rand.New(rand.NewPCG(seed, hugePeriod))
	t := make([]uint16, hugePeriod)
	for i := range t {
		t[i] = dtype.BF16FromFloat32(float32(draw(rng)))
	}
	return t
}

func bf16(b uint16) float64 { return float64(dtype.BF16ToFloat32(b)) }

// hugeRejected reports whether err is a plan's validation error (an
// acceptable answer to a size it does not handle) and logs it.
func hugeRejected(t *testing.T, err error) bool {
	t.Helper()
	var oe *ops.Error
	if errors.As(err, &oe) {
		t.Logf("REJECTED with a clear error (a limit, not a wrong answer): %v", err)
		return true
	}
	return false
}

// hugeCheck compares the windows of out with want(i) exactly (bit for
// bit; NaN against NaN) or within tol ulps, and checks out's guard bands.
func hugeCheck(t *testing.T, name string, out *hugeBF16, ulps float64, want func(i int64) float64) {
	t.Helper()
	fails, checked := 0, 0
	for _, s := range hugeWindows(out.n) {
		got, err := out.read(s, hugeWindow)
		if err != nil {
			t.Fatalf("%s: reading [%d, %d): %v", name, s, s+hugeWindow, err)
		}
		for k, g := range got {
			i := s + int64(k)
			w := want(i)
			checked++
			if ok, ulp := Compare(dtype.BF16, g, w, Tol{ULP: ulps}); !ok {
				if fails++; fails <= 8 {
					t.Errorf("%s[%d] = %v, want %v (%.0f ulp)", name, i, g, dtype.Round(dtype.BF16, w), ulp)
				}
			}
		}
	}
	if err := out.guardsIntact(); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	t.Logf("%s: %d elements checked in %d windows, %d wrong", name, checked, len(hugeWindows(out.n)), fails)
}

// allocAll allocates n-element tensors, all or none.
func (e *Env) allocAll(t *testing.T, sizes ...int64) []*hugeBF16 {
	t.Helper()
	hs := make([]*hugeBF16, len(sizes))
	t.Cleanup(func() {
		for _, h := range hs {
			h.free()
		}
	})
	for i, n := range sizes {
		var err error
		if hs[i], err = e.newHugeBF16(n); err != nil {
			t.Fatal(err)
		}
	}
	return hs
}

// runHuge runs, synchronizes and reports whether the plan rejected the
// operands; any other error fails the test.
func (e *Env) runHuge(t *testing.T, run func() error) (rejected bool) {
	t.Helper()
	if err := run(); err != nil {
		if hugeRejected(t, err) {
			return true
		}
		t.Fatalf("Run: %v", err)
	}
	if err := e.Stream.Synchronize(); err != nil {
		t.Fatalf("synchronize (a fault leaves the context unusable: run the other huge tests on their own): %v", err)
	}
	return false
}

func TestHugeBinaryMulGPU(t *testing.T) {
	env := hugeEnvOrSkip(t)
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: dtype.BF16, Shape: []int{hugeN}})
	if err != nil {
		if hugeRejected(t, err) {
			return
		}
		t.Fatal(err)
	}
	// Values in [-4, 4]: a product of two bf16 values is exact in f32, so
	// each gradient is the exact product rounded once.
	draw := func(r *rand.Rand) float64 { return r.Float64()*8 - 4 }
	tabs := [3][]uint16{bf16Table(1, draw), bf16Table(2, draw), bf16Table(3, draw)}
	bufs := env.allocAll(t, hugeN, hugeN, hugeN, hugeN, hugeN)
	for i, tab := range tabs {
		if err := bufs[i].fill(periodic(tab)); err != nil {
			t.Fatal(err)
		}
	}
	args := ops.BinaryArgs{DY: bufs[0].tensor(hugeN), A: bufs[1].tensor(hugeN), B: bufs[2].tensor(hugeN),
		DA: bufs[3].tensor(hugeN), DB: bufs[4].tensor(hugeN)}
	if env.runHuge(t, func() error { return plan.Run(env.Stream, &args) }) {
		return
	}
	at := func(k int, i int64) float64 { return bf16(tabs[k][i%hugePeriod]) }
	hugeCheck(t, "da", bufs[3], 0, func(i int64) float64 { return at(0, i) * at(2, i) })
	hugeCheck(t, "db", bufs[4], 0, func(i int64) float64 { return at(0, i) * at(1, i) })
}

// walk is a closed walk of hugePeriod steps of -1, 0 or 1 that stays
// within [-100, 100]: w[0] = 0 and the steps of a period sum to 0, so the
// sum of dy_j = step[j mod P] over j < k is w[k mod P], an integer that
// bf16 holds exactly, as f32 does every partial sum.
func walk() (w []int64, step []uint16) {
	rng := rand.New(rand.NewPCG(39, 7))
	w = make([]int64, hugePeriod+1)
	step = make([]uint16, hugePeriod)
	for j := range hugePeriod {
		d := int64(rng.IntN(3) - 1)
		switch {
		case j >= hugePeriod-200: // steer back to 0
			d = -sign(w[j])
		case w[j]+d > 100 || w[j]+d < -100:
			d = -d
		}
		w[j+1] = w[j] + d
		step[j] = dtype.BF16FromFloat32(float32(d))
	}
	return w[:hugePeriod], step
}

func sign(v int64) int64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func TestHugeScanCumsumGPU(t *testing.T) {
	env := hugeEnvOrSkip(t)
	w, step := walk()
	prefix := func(k int64) float64 { return float64(w[k%hugePeriod]) } // Σ_{j<k} dy_j
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			plan, err := ops.NewScanBackward(ops.ScanDesc{Op: ops.ScanCumsum, DType: dtype.BF16, Shape: []int{hugeN},
				Reverse: reverse})
			if err != nil {
				if hugeRejected(t, err) {
					return
				}
				t.Fatal(err)
			}
			bufs := env.allocAll(t, hugeN, hugeN)
			if err := bufs[0].fill(periodic(step)); err != nil {
				t.Fatal(err)
			}
			ws, err := env.Ctx.Alloc(max(plan.WorkspaceSize(), 16))
			if err != nil {
				t.Fatal(err)
			}
			defer env.Ctx.Free(ws)
			args := ops.ScanArgs{DY: bufs[0].tensor(hugeN), DX: bufs[1].tensor(hugeN), Workspace: ws}
			if env.runHuge(t, func() error { return plan.Run(env.Stream, &args) }) {
				return
			}
			// dx_k sums dy over j >= k (forward) or j <= k (reverse).
			want := func(k int64) float64 { return prefix(hugeN) - prefix(k) }
			if reverse {
				want = func(k int64) float64 { return prefix(k + 1) }
			}
			hugeCheck(t, "dx", bufs[1], 0, want)
		})
	}
}

func TestHugeReduceGPU(t *testing.T) {
	env := hugeEnvOrSkip(t)
	const g = 1.5
	one := dtype.BF16FromFloat32(1)
	// sum: dx = g everywhere. max over a slice whose every element equals
	// the maximum: dx = g/count with count = 2^31+33 (more than an int32
	// holds). max with one maximum, at the last element: dx = g there, 0
	// elsewhere.
	lastMax := func(start int64, out []uint16) {
		for i := range out {
			out[i] = 0
			if start+int64(i) == hugeN-1 {
				out[i] = one
			}
		}
	}
	cases := []struct {
		name string
		op   ops.ReduceOp
		x    func(int64, []uint16)
		y    float64
		want func(i int64) float64
	}{
		{"sum", ops.ReduceSum, nil, 0, func(int64) float64 { return g }},
		{"max/all-ties", ops.ReduceMax, periodic([]uint16{one}), 1, func(int64) float64 { return g / hugeN }},
		{"max/last", ops.ReduceMax, lastMax, 1, func(i int64) float64 {
			if i == hugeN-1 {
				return g
			}
			return 0
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: c.op, DType: dtype.BF16, Shape: []int{hugeN}})
			if err != nil {
				if hugeRejected(t, err) {
					return
				}
				t.Fatal(err)
			}
			small := [2]driver.Buffer{}
			for i, v := range []float64{g, c.y} {
				if small[i], err = env.Ctx.Alloc(16); err != nil {
					t.Fatal(err)
				}
				defer env.Ctx.Free(small[i])
				if err := driver.CopyToDevice(env.Ctx, small[i], []uint16{dtype.BF16FromFloat32(float32(v))}); err != nil {
					t.Fatal(err)
				}
			}
			args := ops.ReduceArgs{DY: ops.NewTensor(small[0], dtype.BF16, 1)}
			var dx *hugeBF16
			if c.x != nil {
				bufs := env.allocAll(t, hugeN, hugeN)
				if err := bufs[0].fill(c.x); err != nil {
					t.Fatal(err)
				}
				args.X, args.Y, dx = bufs[0].tensor(hugeN), ops.NewTensor(small[1], dtype.BF16, 1), bufs[1]
			} else {
				dx = env.allocAll(t, hugeN)[0]
			}
			args.DX = dx.tensor(hugeN)
			if ws := plan.WorkspaceSize(); ws > 0 {
				if args.Workspace, err = env.Ctx.Alloc(ws); err != nil {
					t.Fatal(err)
				}
				defer env.Ctx.Free(args.Workspace)
			}
			t.Logf("plan: kernel %s, workspace %d bytes", plan.Kernel().Name, plan.WorkspaceSize())
			if env.runHuge(t, func() error { return plan.Run(env.Stream, &args) }) {
				return
			}
			hugeCheck(t, "dx", dx, 2, c.want)
		})
	}
}

func TestHugeLpPool1dGPU(t *testing.T) {
	env := hugeEnvOrSkip(t)
	// N*C*L = 2^31 + 32; rows of whole 16-byte packs (the pack kernel);
	// windows of 3 every 4 cells, so that every fourth cell, and the last
	// of a row, is in no window.
	const (
		n, ch = 1, 4
		l     = 1<<29 + 8
		k, s  = 3, 4
		p     = 2.0
	)
	plan, err := ops.NewLpPool1dBackward(ops.LpPool1dDesc{DType: dtype.BF16, N: n, C: ch, L: l, Kernel: k, Stride: s, P: p})
	if err != nil {
		if hugeRejected(t, err) {
			return
		}
		t.Fatal(err)
	}
	lo := int64(plan.OutputShape()[2])
	rows := int64(n * ch)
	xs := bf16Table(4, func(r *rand.Rand) float64 { return 0.25 + r.Float64()*4 })
	gs := bf16Table(5, func(r *rand.Rand) float64 { return r.Float64()*4 - 2 })
	x := func(i int64) float64 { return bf16(xs[i%hugePeriod]) }
	// y_w = sqrt(Σ_{i∈w} x_i^2), rounded to bf16: the forward, one window
	// of row r at a time (full windows: K/c_w = 1).
	yOf := func(w int64) float64 {
		r, o := w/lo, w%lo
		sum := 0.0
		for j := o * s; j < o*s+k; j++ {
			v := x(r*l + j)
			sum += v * v
		}
		return dtype.Round(dtype.BF16, math.Sqrt(sum))
	}
	bufs := env.allocAll(t, rows*l, rows*lo, rows*lo, rows*l) // x, y, dy, dx
	steps := []func(int64, []uint16){
		periodic(xs),
		func(start int64, out []uint16) {
			for i := range out {
				out[i] = dtype.BF16FromFloat32(float32(yOf(start + int64(i))))
			}
		},
		periodic(gs),
	}
	for i, f := range steps {
		if err := bufs[i].fill(f); err != nil {
			t.Fatal(err)
		}
	}
	args := ops.LpPoolArgs{X: bufs[0].tensor(n, ch, l), Y: bufs[1].tensor(n, ch, int(lo)), DY: bufs[2].tensor(n, ch, int(lo)),
		DX: bufs[3].tensor(n, ch, l)}
	if env.runHuge(t, func() error { return plan.Run(env.Stream, &args) }) {
		return
	}
	// dx_i = x_i^(p-1) * coef_w for the one window w holding cell i, 0 for
	// a cell in none.
	hugeCheck(t, "dx", bufs[3], 2, func(i int64) float64 {
		r, j := i/l, i%l
		o := j / s
		if o >= lo || j-o*s >= k {
			return 0
		}
		w := r*lo + o
		return math.Pow(x(i), p-1) * ref.LpPoolCoef(bf16(gs[w%hugePeriod]), yOf(w), k, k, p)
	})
}
