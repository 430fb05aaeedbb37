package conform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// LpPoolCase is one geometry and memory layout of an LP pool check. A 1d
// case pools [N, C, W] with window KW and stride SW (H, KH, SH unused).
type LpPoolCase struct {
	OneD           bool
	N, C, H, W     int
	KH, KW, SH, SW int
	CeilMode       bool
	// Layouts of dy, x, y, dx; nil entries are contiguous.
	Layouts [4]func([]int) Layout
	// Only, when set, restricts the case to one dtype.
	Only dtype.DType
}

func (c LpPoolCase) geom(p float64) ref.LpPoolGeom {
	g := ref.LpPoolGeom{N: c.N, C: c.C, H: c.H, W: c.W, KH: c.KH, KW: c.KW, SH: c.SH, SW: c.SW, P: p, CeilMode: c.CeilMode}
	if c.OneD {
		g.H, g.KH, g.SH = 1, 1, 1
	}
	return g
}

func (c LpPoolCase) shapes(g ref.LpPoolGeom) (in, out []int) {
	ho, wo := g.Out()
	if c.OneD {
		return []int{c.N, c.C, c.W}, []int{c.N, c.C, wo}
	}
	return []int{c.N, c.C, c.H, c.W}, []int{c.N, c.C, ho, wo}
}

func (c LpPoolCase) layout(k int, shape []int) Layout {
	if c.Layouts[k] == nil {
		return Contiguous(shape)
	}
	return c.Layouts[k](shape)
}

func (c LpPoolCase) String() string {
	var s string
	if c.OneD {
		s = fmt.Sprintf("1d [%d %d %d] k%d s%d", c.N, c.C, c.W, c.KW, c.SW)
	} else {
		s = fmt.Sprintf("2d [%d %d %d %d] k%dx%d s%dx%d", c.N, c.C, c.H, c.W, c.KH, c.KW, c.SH, c.SW)
	}
	if c.CeilMode {
		s += " ceil"
	}
	for i, f := range c.Layouts {
		if f != nil {
			s += fmt.Sprintf(" %s:%s", [4]string{"dy", "x", "y", "dx"}[i], f([]int{2, 2, 2}).Name)
		}
	}
	return s
}

// PadRows pads the innermost dim to a multiple of 8 elements (16 bytes of
// f16), so rows stay pack-aligned while the tensor is not contiguous.
func PadRows(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		if d == len(shape)-1 {
			s *= (shape[d] + 8) &^ 7
		} else {
			s *= shape[d]
		}
	}
	return Layout{Name: "padrows", Strides: strides, Span: spanOf(shape, strides)}
}

// SwapNC stores dims 0 and 1 swapped (c-major planes), so n and c cannot
// merge into one index.
func SwapNC(shape []int) Layout {
	strides := make([]int, len(shape))
	plane := 1
	for d := len(shape) - 1; d >= 2; d-- {
		strides[d] = plane
		plane *= shape[d]
	}
	strides[0] = plane
	strides[1] = plane * shape[0]
	return Layout{Name: "swapnc", Strides: strides, Span: spanOf(shape, strides)}
}

// LpPoolCases is the suite: every window 1..5 with every stride 1..5
// (overlapping, tiling and gapped windows), ceil mode on and off, odd
// sizes, kernels larger than the input in ceil mode, every layout kind
// (packed, per-cell, padded, transposed, split n/c) and sizes past one
// block step. quick trims it for selftest.
func init() {
	suites = append(suites, Suite{Family: "lppool", Run: runLpPoolSuite, One: oneLpPool})
}

// lpPoolOps are the kernel groups: the p == 1 and p == 2 fast paths and
// the general-p kernel.
var lpPoolOps = []string{"p1", "p2", "general"}

func runLpPoolSuite(e *Env, quick bool) []Result {
	var out []Result
	cases := LpPoolCases(quick)
	for _, op := range lpPoolOps {
		for _, dt := range dtype.All {
			for _, p := range LpPoolPs(op) {
				out = append(out, e.CheckLpPool(p, dt, cases, 42))
			}
		}
	}
	for _, dt := range dtype.All {
		out = append(out, e.CheckLpPoolVectors(dt))
	}
	return out
}

// oneLpPool checks one (p, dtype) picked by pick on the first quick cases.
func oneLpPool(e *Env, pick uint64) Result {
	var ps []float64
	for _, op := range lpPoolOps {
		ps = append(ps, LpPoolPs(op)...)
	}
	p := ps[pick%uint64(len(ps))]
	dt := dtype.All[(pick/16)%uint64(len(dtype.All))]
	cases := LpPoolCases(true)
	if len(cases) > 3 {
		cases = cases[:3]
	}
	return e.CheckLpPool(p, dt, cases, pick)
}

func LpPoolCases(quick bool) []LpPoolCase {
	var cs []LpPoolCase
	lens := []int{7, 13, 32, 33, 64, 5, 9, 16}
	i := 0
	for k := 1; k <= 5; k++ {
		for s := 1; s <= 5; s++ {
			for _, ceil := range []bool{false, true} {
				if quick && (k+s)%3 != 0 {
					continue
				}
				l := lens[i%len(lens)]
				h := lens[(i+3)%len(lens)]
				i++
				cs = append(cs, LpPoolCase{OneD: true, N: 2, C: 3, W: l, KW: k, SW: s, CeilMode: ceil})
				cs = append(cs, LpPoolCase{N: 2, C: 2, H: h, W: l, KH: k, KW: k, SH: s, SW: s, CeilMode: ceil})
			}
		}
	}
	// Asymmetric windows and strides, a window larger than the input (ceil
	// mode only), single cells.
	cs = append(cs,
		LpPoolCase{N: 1, C: 3, H: 9, W: 17, KH: 3, KW: 2, SH: 2, SW: 1, CeilMode: true},
		LpPoolCase{N: 2, C: 1, H: 8, W: 11, KH: 1, KW: 4, SH: 1, SW: 3},
		LpPoolCase{N: 1, C: 2, H: 11, W: 6, KH: 5, KW: 1, SH: 2, SW: 4, CeilMode: true},
		LpPoolCase{N: 1, C: 1, H: 7, W: 8, KH: 2, KW: 5, SH: 3, SW: 2, CeilMode: true},
		LpPoolCase{OneD: true, N: 1, C: 2, W: 3, KW: 4, SW: 2, CeilMode: true},
		LpPoolCase{N: 1, C: 1, H: 3, W: 3, KH: 4, KW: 5, SH: 2, SW: 3, CeilMode: true},
		LpPoolCase{OneD: true, N: 1, C: 1, W: 1, KW: 1, SW: 1},
		LpPoolCase{N: 1, C: 1, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1},
		LpPoolCase{OneD: true, N: 0, C: 3, W: 8, KW: 2, SW: 2},
		LpPoolCase{N: 2, C: 0, H: 4, W: 4, KH: 2, KW: 2, SH: 2, SW: 2},
	)
	// Layouts: per-cell (unaligned), padded, transposed, pack-aligned but
	// strided rows, split n/c, and mixtures.
	un, pad, tr := Unaligned, Padded, Transposed
	all := func(f func([]int) Layout) [4]func([]int) Layout { return [4]func([]int) Layout{f, f, f, f} }
	layouts := [][4]func([]int) Layout{
		all(un), all(pad), all(tr), all(PadRows), all(SwapNC),
		{tr, PadRows, pad, SwapNC}, {nil, nil, tr, un}, {SwapNC, nil, nil, PadRows},
	}
	if quick {
		layouts = layouts[:5]
	}
	for j, l := range layouts {
		cs = append(cs,
			LpPoolCase{OneD: true, N: 2, C: 3, W: 37 + 8*(j%2), KW: 3, SW: 2, CeilMode: true, Layouts: l},
			LpPoolCase{N: 3, C: 2, H: 9, W: 16, KH: 2 + j%2, KW: 3, SH: 2, SW: 1 + j%3, CeilMode: j%2 == 0, Layouts: l},
		)
	}
	if !quick {
		// Many tiles; W wider than a tile segment of 256 packs or cells;
		// the benchmark geometries at a smaller batch.
		cs = append(cs,
			LpPoolCase{N: 3, C: 50, H: 67, W: 129, KH: 2, KW: 2, SH: 2, SW: 2, CeilMode: true},
			LpPoolCase{N: 2, C: 4, H: 128, W: 128, KH: 3, KW: 3, SH: 2, SW: 2},
			LpPoolCase{N: 2, C: 3, H: 64, W: 64, KH: 2, KW: 2, SH: 2, SW: 2},
			LpPoolCase{OneD: true, N: 4, C: 16, W: 4096, KW: 4, SW: 4},
			LpPoolCase{OneD: true, N: 2, C: 3, W: 5001, KW: 5, SW: 3, CeilMode: true},
			LpPoolCase{OneD: true, N: 1, C: 1, W: 2048 + 8, KW: 2, SW: 1, Layouts: all(PadRows)},
			LpPoolCase{N: 300, C: 1, H: 3, W: 8, KH: 2, KW: 2, SH: 1, SW: 2, Layouts: all(SwapNC)},
			// 3101 window columns touched by any segment: more than an f64
			// tile row holds (2937 beside the phase-2 table, 3065 a wide
			// pass), so f64 runs the wide kernel, 2 passes.
			LpPoolCase{OneD: true, N: 1, C: 1, W: 6200, KW: 3100, SW: 1, Only: dtype.F64},
		)
	}
	return cs
}

// LpPoolPs lists the norms checked against each kernel of the family.
func LpPoolPs(op string) []float64 {
	switch op {
	case "p1":
		return []float64{1}
	case "p2":
		return []float64{2}
	}
	return []float64{3, 2.5, 0.75}
}

// lpInputs draws x, with whole windows zeroed (the y == 0 select), zeros
// and negatives (rare for a non-integer p, where they make NaN), a few NaN
// cells (NaN windows, which give 0 for p == 1), for p < 1 whole windows of
// large values (y overflows the dtype while the pooled sum does not: the
// kernel recomputes the sum), and dy, NaN on some zero windows (which the
// select must discard).
func lpInputs(rng *rand.Rand, g ref.LpPoolGeom, dt dtype.DType) (x, y, dy []float64) {
	ho, wo := g.Out()
	x = make([]float64, g.N*g.C*g.H*g.W)
	negOdds := 2
	if g.P != math.Trunc(g.P) {
		negOdds = 24
	}
	for i := range x {
		v := 0.25 + 1.75*rng.Float64()
		if rng.IntN(negOdds) == 0 {
			v = -v
		}
		if rng.IntN(10) == 0 {
			v = 0
		}
		if rng.IntN(64) == 0 {
			v = math.NaN()
		}
		x[i] = dtype.Round(dt, v)
	}
	for nc := 0; nc < g.N*g.C; nc++ {
		for oh := 0; oh < ho; oh++ {
			for ow := 0; ow < wo; ow++ {
				kind := rng.IntN(6)
				if kind > 1 || kind == 1 && g.P >= 1 {
					continue
				}
				for i := oh * g.SH; i < min(oh*g.SH+g.KH, g.H); i++ {
					for j := ow * g.SW; j < min(ow*g.SW+g.KW, g.W); j++ {
						v := 0.0
						if kind == 1 {
							v = dtype.Round(dt, lpLarge(dt)*(0.25+0.25*rng.Float64()))
						}
						x[(nc*g.H+i)*g.W+j] = v
					}
				}
			}
		}
	}
	y = ref.LpPoolForward(g, x)
	dy = make([]float64, len(y))
	for i := range y {
		y[i] = dtype.Round(dt, y[i])
		dy[i] = dtype.Round(dt, rng.NormFloat64())
		if y[i] == 0 && rng.IntN(2) == 0 {
			dy[i] = math.NaN()
		}
	}
	return x, y, dy
}

// lpLarge is the dtype's largest finite value.
func lpLarge(dt dtype.DType) float64 {
	switch dt {
	case dtype.F16:
		return 65504
	case dtype.BF16:
		return 0x1.fep127
	case dtype.F32:
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// LpPoolTol is the tolerance of one dx element: the dtype's elementwise
// ulps, or an absolute error of 64 opmath epsilons times the element's
// magnitude |x^(p-1)| * Σ|coef_w| (ref.LpPoolMagnitude). The bound covers
// the per-window rounding, the sum of up to 25 windows (5x5 windows at
// stride 1) and two pow calls; it matters where the window sum cancels.
func LpPoolTol(dt dtype.DType, magnitude float64) Tol {
	eps := 0x1p-24
	if dt == dtype.F64 {
		eps = 0x1p-53
	}
	return Tol{ULP: DefaultTol(dt).ULP, Abs: 64 * eps * magnitude}
}

// lpPowCond scales an element's tolerance by how much its pow calls
// amplify rounding: x^(p-1) and the window's y^(1-p) (or the pooled sum's
// power) are exp(e*ln b), whose error grows with |e*ln b| in any
// implementation, the reference's as much as the device's (about
// |e*ln b| ulps; the 64 epsilons of LpPoolTol cover a quarter of that). It
// is 1 for ordinary magnitudes and matters for the windows of values near
// the dtype's range that the cases draw for p < 1.
func lpPowCond(p, x, lnY float64) float64 {
	c := math.Abs(p - 1)
	if x != 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
		c *= math.Abs(math.Log(math.Abs(x))) + lnY
	} else {
		c *= lnY
	}
	return math.Max(1, c/4)
}

// maxAbsLog is the largest |ln|v|| over the finite nonzero values of vs.
func maxAbsLog(vs []float64) float64 {
	m := 0.0
	for _, v := range vs {
		if v != 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			m = math.Max(m, math.Abs(math.Log(math.Abs(v))))
		}
	}
	return m
}

// lpKernelName is the entry the plans pick for p, less the _pack or
// _strided variant (the operands' layout picks it).
func lpKernelName(p float64, dt dtype.DType) string {
	op := "general"
	switch p {
	case 1:
		op = "p1"
	case 2:
		op = "p2"
	}
	return "lppool_bw_" + op + "_" + dt.Suffix()
}

// CheckLpPool runs every case, 1d and 2d, for one (p, dtype) and compares
// dx with the reference.
func (e *Env) CheckLpPool(p float64, dt dtype.DType, cases []LpPoolCase, seed uint64) Result {
	res := Result{Kernel: lpKernelName(p, dt)}
	rng := rand.New(rand.NewPCG(seed, math.Float64bits(p)^uint64(dt)))
	for _, c := range cases {
		if c.Only != 0 && c.Only != dt {
			continue
		}
		res.Cases++
		if err := e.runLpPoolCase(c, p, dt, rng, &res); err != nil {
			res.Failf("p=%v %v: %v", p, c, err)
		}
	}
	return res
}

// runLp builds the plan for c and runs it on args.
func (e *Env) runLp(c LpPoolCase, p float64, dt dtype.DType, args *ops.LpPoolArgs) (string, error) {
	if c.OneD {
		plan, err := ops.NewLpPool1dBackward(ops.LpPool1dDesc{DType: dt, N: c.N, C: c.C, L: c.W, Kernel: c.KW,
			Stride: c.SW, P: p, CeilMode: c.CeilMode})
		if err != nil {
			return "", err
		}
		return plan.Kernel().Name, plan.Run(e.Stream, args)
	}
	plan, err := ops.NewLpPool2dBackward(ops.LpPool2dDesc{DType: dt, N: c.N, C: c.C, H: c.H, W: c.W,
		KernelH: c.KH, KernelW: c.KW, StrideH: c.SH, StrideW: c.SW, P: p, CeilMode: c.CeilMode})
	if err != nil {
		return "", err
	}
	return plan.Kernel().Name, plan.Run(e.Stream, args)
}

func (e *Env) runLpPoolCase(c LpPoolCase, p float64, dt dtype.DType, rng *rand.Rand, res *Result) error {
	g := c.geom(p)
	in, out := c.shapes(g)
	x, y, dy := lpInputs(rng, g, dt)
	var os [4]*Operand
	defer func() {
		for _, o := range os {
			o.Free()
		}
	}()
	vals := [4][]float64{dy, x, y, nil}
	shapes := [4][]int{out, in, out, in}
	for k := range os {
		o, err := e.NewOperand(dt, shapes[k], c.layout(k, shapes[k]), vals[k])
		if err != nil {
			return err
		}
		os[k] = o
	}
	args := ops.LpPoolArgs{DY: os[0].Tensor(), X: os[1].Tensor(), Y: os[2].Tensor(), DX: os[3].Tensor()}
	name, err := e.runLp(c, p, dt, &args)
	if err != nil {
		return fmt.Errorf("Run: %w", err)
	}
	if !strings.HasPrefix(name, res.Kernel+"_") {
		return fmt.Errorf("plan picked kernel %s", name)
	}
	if err := e.Stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize: %w", err)
	}
	got, err := os[3].Read()
	if err != nil {
		return fmt.Errorf("dx: %w", err)
	}
	want := ref.LpPoolBackward(g, dy, x, y)
	mag := ref.LpPoolMagnitude(g, dy, x, y)
	lnY := maxAbsLog(y)
	if slices.ContainsFunc(y, func(v float64) bool { return math.IsInf(v, 1) }) {
		// A window whose y overflows takes its pooled sum's power instead
		// (docs/semantics.md, LP pooling), of a sum up to the window's
		// size times the largest value's p-th power.
		lnY = max(lnY, math.Log(lpLarge(dt))+math.Log(float64(max(1, g.KH)*max(1, g.KW))))
	}
	for i := range got {
		ok, ulp := Compare(dt, got[i], want[i], LpPoolTol(dt, mag[i]*lpPowCond(p, x[i], lnY)))
		res.Checked++
		// MaxULP reports elements away from cancellation, where ulps mean
		// something.
		if ulp > res.MaxULP && math.Abs(want[i]) > 0.01*mag[i] {
			res.MaxULP = ulp
		}
		if !ok {
			res.Failf("p=%v %v: dx[%d] = %v, want %v (x=%v, magnitude %.3g, %.0f ulp)", p, c, i, got[i],
				dtype.Round(dt, want[i]), x[i], mag[i], ulp)
		}
	}
	return nil
}

// LpPoolVectors are the observed PyTorch 2.11 values of lp_pool1d's
// backward (dy = 1; docs/semantics.md 5); y is the pinned forward output.
var LpPoolVectors = []struct {
	P        float64
	K, S     int
	Ceil     bool
	X, Y, DX []float64
}{
	{2, 2, 2, false, []float64{0, 0, 3, 4}, []float64{0, 5}, []float64{0, 0, .6, .8}},
	{2, 2, 2, true, []float64{1, 2, 3, 4, 5}, []float64{2.23607, 5, 7.07107}, []float64{.44721, .89443, .6, .8, 1.41421}},
	{3, 2, 2, false, []float64{-1, 2}, []float64{1.91293}, []float64{0.27328, 1.09310}},
}

// CheckLpPoolVectors runs the pinned vectors for one dtype, with y from
// the reference forward rounded to the dtype (y is a saved input), and
// compares dx with the PyTorch values to the dtype's precision (the
// vectors carry 5 decimals).
func (e *Env) CheckLpPoolVectors(dt dtype.DType) Result {
	res := Result{Kernel: "lppool vectors " + dt.Suffix()}
	for _, v := range LpPoolVectors {
		res.Cases++
		c := LpPoolCase{OneD: true, N: 1, C: 1, W: len(v.X), KW: v.K, SW: v.S, CeilMode: v.Ceil}
		g := c.geom(v.P)
		in, out := c.shapes(g)
		y := ref.LpPoolForward(g, v.X)
		for i := range y {
			if math.Abs(y[i]-v.Y[i]) > 1e-5 {
				res.Failf("p=%v x=%v: reference y[%d] = %v, PyTorch %v", v.P, v.X, i, y[i], v.Y[i])
			}
		}
		dy := make([]float64, len(y))
		for i := range y {
			y[i] = dtype.Round(dt, y[i])
			dy[i] = 1
		}
		var os [4]*Operand
		vals := [4][]float64{dy, v.X, y, nil}
		shapes := [4][]int{out, in, out, in}
		var err error
		for k := range os {
			if os[k], err = e.NewOperand(dt, shapes[k], Contiguous(shapes[k]), vals[k]); err != nil {
				break
			}
		}
		var got []float64
		if err == nil {
			args := ops.LpPoolArgs{DY: os[0].Tensor(), X: os[1].Tensor(), Y: os[2].Tensor(), DX: os[3].Tensor()}
			if _, err = e.runLp(c, v.P, dt, &args); err == nil {
				if err = e.Stream.Synchronize(); err == nil {
					got, err = os[3].Read()
				}
			}
		}
		for _, o := range os {
			o.Free()
		}
		if err != nil {
			res.Failf("p=%v x=%v: %v", v.P, v.X, err)
			continue
		}
		tol := math.Max(1e-5, 4*dtype.Epsilon(dt))
		for i := range got {
			res.Checked++
			if math.Abs(got[i]-v.DX[i]) > tol*math.Max(1, math.Abs(v.DX[i])) {
				res.Failf("p=%v x=%v: dx[%d] = %v, want %v (PyTorch 2.11)", v.P, v.X, i, got[i], v.DX[i])
			}
		}
	}
	return res
}
