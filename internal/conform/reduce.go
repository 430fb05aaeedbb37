package conform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

func init() {
	suites = append(suites, Suite{Family: "reduce", Run: runReduceSuite, One: oneReduce})
}

// oneReduce checks one (op, dtype) picked by pick on an inner-axis and an
// outer-axis case with a strided layout.
func oneReduce(e *Env, pick uint64) Result {
	all := ops.ReduceOps()
	op := all[pick%uint64(len(all))]
	dt := dtype.All[(pick/16)%uint64(len(dtype.All))]
	cases := []ReduceCase{
		{Shape: []int{9, 100}, Axis: 1, Correction: 1, Layouts: same4(Contiguous)},
		{Shape: []int{3, 5, 7}, Axis: 0, Correction: 1, Layouts: same4(Transposed)},
	}
	return e.CheckReduce(op, dt, cases, pick)
}

func runReduceSuite(e *Env, quick bool) []Result {
	var out []Result
	cases := ReduceCases(quick)
	for _, op := range ops.ReduceOps() {
		for _, dt := range dtype.All {
			out = append(out, e.CheckReduce(op, dt, cases, 42))
		}
	}
	for _, dt := range dtype.All {
		out = append(out, e.CheckReduceVectors(dt))
	}
	return out
}

// ReduceCase is one shape, axis and memory layout of a reduction check.
type ReduceCase struct {
	Shape []int
	Axis  int
	// Correction for Var and Std.
	Correction float64
	// Layouts of x, y, dy, dx (y and dy are laid out in keepdim shape).
	Layouts [4]func([]int) Layout
	// Data replaces the suite's random slices where set: DataEqual or
	// DataSaturated.
	Data string
}

// The tie-heavy inputs of ReduceTieCases.
const (
	// DataEqual: every element of a slice is the same value (prod: 0).
	DataEqual = "equal"
	// DataSaturated: a clamped input: max (min) is cut at the slice's 90th
	// (10th) percentile, so that at least a tenth of the slice equals y;
	// prod has a zero at every tenth position.
	DataSaturated = "saturated"
)

func (c ReduceCase) String() string {
	s := fmt.Sprintf("%v axis %d", c.Shape, c.Axis)
	if c.Correction != 1 {
		s += fmt.Sprintf(" c=%v", c.Correction)
	}
	for i, f := range c.Layouts {
		s += fmt.Sprintf(" %s:%s", [4]string{"x", "y", "dy", "dx"}[i], f(c.Shape).Name)
	}
	if c.Data != "" {
		s += " data:" + c.Data
	}
	return s
}

// ReduceTieCases are the tie-heavy and long-slice regimes: one slice of
// 2^24, four long rows, four long columns (the flat path) and 2^22 slices
// of four, with every element of a slice equal and with saturated slices,
// contiguous. quick cuts every shape to 2^16 elements.
func ReduceTieCases(quick bool) []ReduceCase {
	long := 1 << 22
	if quick {
		long = 1 << 14
	}
	var cs []ReduceCase
	for _, data := range []string{DataEqual, DataSaturated} {
		for _, s := range []struct {
			shape []int
			axis  int
		}{{[]int{4 * long}, 0}, {[]int{4, long}, 1}, {[]int{long, 4}, 0}, {[]int{long, 4}, 1}} {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous), Data: data})
		}
	}
	return cs
}

// tieSlice rewrites x (one slice, already random) as data asks.
func tieSlice(op, data string, x []float64) {
	switch {
	case data == DataEqual && op == "prod":
		clear(x)
	case data == DataEqual:
		for i := range x {
			x[i] = x[0]
		}
	case data == DataSaturated && op == "prod":
		for j := 3; j < len(x); j += 10 {
			x[j] = 0
		}
	case data == DataSaturated:
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		q := sorted[(len(x)-1)*9/10]
		if op == "min" {
			q = sorted[(len(x)-1)/10]
		}
		for i, v := range x {
			if op == "min" {
				x[i] = max(v, q)
			} else {
				x[i] = min(v, q)
			}
		}
	}
}

func same4(f func([]int) Layout) [4]func([]int) Layout {
	return [4]func([]int) Layout{f, f, f, f}
}

// ReduceCases is the suite: every axis position of small shapes in every
// layout kind (row and col mappings, strided slices), rows whose lengths
// leave vector heads and tails or overflow the register cache, the split
// paths (few long slices, along the inner and an outer axis), empty
// tensors, and var/std corrections with N - c <= 0. quick trims it.
func ReduceCases(quick bool) []ReduceCase {
	var cs []ReduceCase
	type sa struct {
		shape []int
		axis  int
	}
	small := []sa{
		{[]int{1}, 0}, {[]int{5}, 0}, {[]int{33}, -1}, {[]int{1025}, 0},
		{[]int{3, 5, 7}, 0}, {[]int{3, 5, 7}, 1}, {[]int{3, 5, 7}, 2},
		{[]int{2, 1, 33}, 1}, {[]int{17, 31}, 0}, {[]int{17, 31}, 1},
		{[]int{4, 3, 2, 5}, 2}, {[]int{2, 3, 1, 2, 3, 1, 2, 2}, 4}, {[]int{2, 3, 1, 2, 3, 1, 2, 2}, -1},
		{[]int{7, 0, 3}, 1}, {[]int{0, 4}, 1}, {[]int{6, 1}, 1},
	}
	if quick {
		small = []sa{{[]int{1}, 0}, {[]int{33}, 0}, {[]int{3, 5, 7}, 1}, {[]int{17, 31}, 0}, {[]int{17, 31}, 1}, {[]int{7, 0, 3}, 1}}
	}
	mixed := [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}
	for _, s := range small {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Padded)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Transposed)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: mixed})
	}
	large := []sa{
		{[]int{9, 1000}, 1},       // row mapping, several rows per block, vector heads
		{[]int{300, 67}, 1},       // odd rows: every alignment of the row start
		{[]int{4, 4099}, 1},       // rows longer than the register cache
		{[]int{3, 20000}, 1},      // row split into chunks (stats + apply)
		{[]int{4000, 5}, 0},       // col split along an outer axis
		{[]int{2048, 3, 2}, 0},    // col split, strided slices
		{[]int{64, 130, 40}, 1},   // col mapping without a split
		{[]int{1<<20 + 3}, 0},     // one long slice, many chunks
		{[]int{2, 3, 5000, 2}, 2}, // col split with two slice dims
		{[]int{1000, 600}, 0},     // col split, five slice blocks, the last one partial
		{[]int{2048, 1024}, 0},    // col split; unaligned: more tiles than blocks fit
	}
	if quick {
		large = []sa{{[]int{300, 67}, 1}, {[]int{3, 20000}, 1}, {[]int{4000, 5}, 0}, {[]int{1000, 600}, 0}}
	}
	for _, s := range large {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned)})
		if !quick && product(s.shape) < 1<<17 {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Transposed)},
				ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: mixed})
		}
	}
	// Operands 8- but not 16-byte aligned: the col mapping's 8-byte
	// accesses, unsplit and split along the axis.
	for _, sh := range []func([]int) Layout{Shifted(2), Shifted(4)} {
		cs = append(cs, ReduceCase{Shape: []int{64, 130, 40}, Axis: 1, Correction: 1, Layouts: same4(sh)},
			ReduceCase{Shape: []int{3000, 16}, Axis: 0, Correction: 1, Layouts: same4(sh)})
	}
	// Corrections: c = 0, N == c, N < c (fractional), N == 1 with c = 1.
	for _, c := range []struct {
		shape []int
		axis  int
		c     float64
	}{{[]int{5, 3}, 0, 0}, {[]int{3, 4}, 1, 4}, {[]int{2, 6}, 1, 7.5}, {[]int{6, 1}, 1, 1}, {[]int{3, 4}, 1, 2.5}} {
		cs = append(cs, ReduceCase{Shape: c.shape, Axis: c.axis, Correction: c.c, Layouts: same4(Contiguous)})
	}
	return cs
}

// ReduceStripCases are shapes the strip kernel can cut (an outer axis whose
// inner extent is a multiple of 16 elements, 64 or 32 bytes of every row
// per strip): long slices (4097 and 3000 positions, 32-byte strips), several
// outer indices, one position, and N - c <= 0; contiguous (the strip
// kernel, where Run may take it), unaligned and padded (the other paths).
func ReduceStripCases(quick bool) []ReduceCase {
	type sc struct {
		shape []int
		axis  int
		c     float64
	}
	shapes := []sc{
		{[]int{4097, 32}, 0, 1}, {[]int{2, 700, 48}, 1, 1}, {[]int{1, 64}, 0, 1}, {[]int{3, 5, 64}, 1, 5},
		{[]int{6, 32}, 0, 7.5}, {[]int{2048, 1024}, 0, 1}, {[]int{3000, 16}, 0, 0}, {[]int{4, 3, 1000, 2, 16}, 2, 1},
	}
	if quick {
		shapes = []sc{{[]int{4097, 32}, 0, 1}, {[]int{2, 700, 48}, 1, 1}, {[]int{1, 64}, 0, 1}, {[]int{6, 32}, 0, 7.5}}
	}
	var cs []ReduceCase
	for _, s := range shapes {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Unaligned)})
		if product(s.shape) < 1<<17 {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Padded)})
		}
	}
	return cs
}

// beyond is a value past the slice's extreme for max (above) or min (below).
func beyond(op string, x []float64) float64 {
	e := x[0]
	for _, v := range x {
		if (op == "max") == (v > e) {
			e = v
		}
	}
	if op == "max" {
		return e + 1
	}
	return e - 1
}

// reduceSlice draws the x values of one slice: mostly moderate random
// values, with each op's edge cases on some slices (ties, NaN, inf, zeros,
// all-equal slices, -inf runs).
func reduceSlice(rng *rand.Rand, op string, x []float64) {
	k := len(x)
	flavor := rng.IntN(10)
	for i := range x {
		switch op {
		case "prod":
			// Near 1 so that long products stay in range.
			x[i] = 1 + rng.NormFloat64()/(4*math.Sqrt(float64(k)))
			if rng.IntN(4) == 0 {
				x[i] = -x[i]
			}
		case "logsumexp":
			x[i] = rng.NormFloat64() * 3
		case "var", "std":
			x[i] = rng.NormFloat64() + 0.5
		default:
			x[i] = rng.NormFloat64() * 2
		}
	}
	at := func() int { return rng.IntN(k) }
	switch op {
	case "max", "min":
		switch flavor {
		case 0, 1: // ties of the extreme among few distinct values
			for i := range x {
				x[i] = float64(rng.IntN(3))
			}
		case 2:
			x[at()] = math.NaN()
		case 3:
			x[at()] = math.Inf(1)
			x[at()] = math.Inf(-1)
		case 4: // two copies of a new extreme, apart: the ties of a split
			// slice lie in few of its chunks
			e := beyond(op, x)
			x[at()], x[at()] = e, e
		case 5: // three copies, two of them adjacent: a split slice
			// has chunks with one and two ties, or all three in one
			e, i := beyond(op, x), at()
			x[i], x[(i+1)%k], x[at()] = e, e, e
		}
	case "prod":
		switch flavor {
		case 0, 1:
			x[at()] = 0
		case 2:
			x[at()], x[at()] = 0, 0
		case 3:
			x[at()] = math.Copysign(0, -1)
		case 4:
			x[at()] = math.NaN()
		case 5: // the ends of the float range (the kernels' fast quotient
			// hands such elements to the exact division)
			x[at()] *= 0x1p126
			x[at()] *= 0x1p-126
		}
	case "norm2":
		switch flavor {
		case 0, 1:
			for i := range x {
				x[i] = 0
			}
		case 2:
			x[at()] = math.Inf(-1)
		case 3:
			x[at()] = math.NaN()
		case 4, 5: // near the ends of the float range, and a zero
			sc := 0x1p120
			if flavor == 5 {
				sc = 0x1p-135
			}
			for i := range x {
				x[i] *= sc
			}
			x[at()] = 0
		}
	case "logsumexp":
		switch flavor {
		case 0:
			for i := range x {
				x[i] = math.Inf(-1)
			}
		case 1:
			x[at()] = math.Inf(1)
		case 2:
			x[at()] = math.Inf(-1)
		case 3:
			for i := range x {
				x[i] += 100
			}
		}
	case "var", "std":
		switch flavor {
		case 0, 1: // zero variance: std's y == 0 select. An integer value,
			// whose sums over any order are exact (up to 2^21 positions in
			// f32), so that the mean is exactly v: with N == c, where the
			// factor is +inf, a mean one bit off turns the NaN of x == mean
			// into ±inf, and which order the kernels sum in is theirs.
			v := math.Round(x[0])
			for i := range x {
				x[i] = v
			}
		case 2:
			x[at()] = math.NaN()
		}
	case "sum", "mean":
		if flavor == 0 {
			x[at()] = math.Inf(1)
		}
	}
}

// reduceTol is the tolerance for one slice: DefaultTol's ulps for the
// elementwise rounding, plus what the problem's conditioning and the
// opmath accumulation over the slice add:
//   - var/std: the mean's error, up to eps*(4*sqrt(N) + 32)*Σ|x|/N (twice
//     the expected error of the tree-shaped order the kernels sum in: short
//     sequential runs per thread, a butterfly, then the chunks; seen on an
//     H100 at 1.4x the single bound for f64; a missing or doubled chunk
//     exceeds it by orders of magnitude), times the factor that multiplies
//     x - mean;
//   - prod: the product of a one-zero slice's non-zeros, whose rounding
//     errors can share a sign (factors near 1), so up to eps*(N + 16)
//     relative (elem adds it scaled by the expected value);
//   - logsumexp: x - y is rounded in opmath before exp, which turns an
//     absolute error of |x - y|*eps into a relative one: |x - y| more ulps
//     (elem adds them).
type reduceTol struct {
	base Tol
	abs  float64 // var/std: absolute allowance for the whole slice
	rel  float64 // prod: relative allowance
	op   string
	y    float64
}

func newReduceTol(op string, dt dtype.DType, g, y, c float64, x []float64) reduceTol {
	t := reduceTol{base: DefaultTol(dt), op: op, y: y}
	eps := 0x1p-23
	if dt == dtype.F64 {
		eps = 0x1p-52
	}
	n := float64(len(x))
	switch op {
	case "var", "std":
		gs := g
		if op == "std" {
			gs = 0
			if y != 0 {
				gs = g / (2 * y)
			}
		}
		sum := 0.0
		for _, v := range x {
			sum += math.Abs(v)
		}
		t.abs = math.Abs(2/(n-c)*gs) * eps * (4*math.Sqrt(n) + 32) * sum / n
	case "prod":
		t.rel = eps * (n + 16)
	}
	if math.IsNaN(t.abs) || math.IsInf(t.abs, 0) {
		t.abs = 0
	}
	return t
}

// elem is the tolerance of one element with input x and expected value want.
func (t reduceTol) elem(x, want float64) Tol {
	tol := t.base
	tol.Abs = t.abs + t.rel*math.Abs(want)
	if t.op == "logsumexp" && !math.IsInf(x-t.y, 0) && !math.IsNaN(x-t.y) {
		tol.ULP += math.Ceil(math.Abs(x - t.y))
	}
	if math.IsNaN(tol.Abs) || math.IsInf(tol.Abs, 0) {
		tol.Abs = 0
	}
	return tol
}

// CheckReduce runs every case for one (op, dtype) and compares with the
// reference; each case runs twice and must give the same bits.
func (e *Env) CheckReduce(op ops.ReduceOp, dt dtype.DType, cases []ReduceCase, seed uint64) Result {
	name := op.String()
	res := Result{Kernel: "reduce_bw_" + name + "_" + dt.Suffix()}
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(dt)))
	for _, c := range cases {
		res.Cases++
		rank := len(c.Shape)
		axis := c.Axis
		if axis < 0 {
			axis += rank
		}
		plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis, Correction: c.Correction})
		if (op == ops.ReduceMax || op == ops.ReduceMin) && c.Shape[axis] == 0 {
			if err == nil {
				res.Failf("%v: NewReduceBackward accepted %s over an empty axis", c, name)
			}
			continue
		}
		if err != nil {
			res.Failf("%v: NewReduceBackward: %v", c, err)
			continue
		}
		if err := e.runReduceCase(plan, c, axis, rng, &res); err != nil {
			res.Failf("%v: %v", c, err)
		}
	}
	return res
}

func (e *Env) runReduceCase(plan *ops.ReduceBackward, c ReduceCase, axis int, rng *rand.Rand, res *Result) error {
	d := plan.Desc()
	dt, name := d.DType, d.Op.String()
	keep := plan.KeepdimShape()
	ix := ref.NewAxisSlices(c.Shape, axis)
	n := int(product(c.Shape))
	m := int(product(keep))
	if ix.K == 0 {
		m = 0
	}
	x := make([]float64, n)
	y := make([]float64, int(product(keep)))
	dy := make([]float64, len(y))
	slice := make([]float64, ix.K)
	for s := 0; s < m; s++ {
		reduceSlice(rng, name, slice)
		if c.Data != "" {
			tieSlice(name, c.Data, slice)
		}
		for j := range slice {
			slice[j] = dtype.Round(dt, slice[j])
			x[ix.At(s, j)] = slice[j]
		}
		y[s] = dtype.Round(dt, ref.ReduceForward(name, slice, c.Correction))
		dy[s] = dtype.Round(dt, rng.NormFloat64())
		if rng.IntN(16) == 0 {
			// Not inf for var/std: times x - mean of a constant slice it
			// gives NaN or ±inf depending on the last bit of the mean.
			dy[s] = [3]float64{0, math.NaN(), math.Inf(-1)}[rng.IntN(2+b2i(name != "var" && name != "std"))]
		}
	}
	for s := m; s < len(dy); s++ { // empty axis: keepdim tensors still have elements
		dy[s] = 1
	}
	saved := ref.ReduceNeedsSaved(name)
	var ox, oy, ody, odx *Operand
	defer func() {
		for _, o := range []*Operand{ox, oy, ody, odx} {
			o.Free()
		}
	}()
	var err error
	if ody, err = e.NewOperand(dt, keep, c.Layouts[2](keep), dy); err != nil {
		return err
	}
	if odx, err = e.NewOperand(dt, c.Shape, c.Layouts[3](c.Shape), nil); err != nil {
		return err
	}
	args := ops.ReduceArgs{DY: ody.Tensor(), DX: odx.Tensor()}
	if saved {
		if ox, err = e.NewOperand(dt, c.Shape, c.Layouts[0](c.Shape), x); err != nil {
			return err
		}
		if oy, err = e.NewOperand(dt, keep, c.Layouts[1](keep), y); err != nil {
			return err
		}
		args.X, args.Y = ox.Tensor(), oy.Tensor()
	}
	if ws := plan.WorkspaceSize(); ws > 0 {
		buf, err := e.Ctx.Alloc(ws)
		if err != nil {
			return err
		}
		defer e.Ctx.Free(buf)
		if err := e.Ctx.Memset8(buf, 0xff); err != nil { // contents must not matter
			return err
		}
		args.Workspace = buf
	}
	var first []float64
	for run := 0; run < 2; run++ {
		if run == 1 {
			// The second run gives dy and y in the reduced form
			// (keepdim=False) over the same memory: the same bits.
			args.DY = withoutAxis(args.DY, axis, plan.ReducedShape())
			if saved {
				args.Y = withoutAxis(args.Y, axis, plan.ReducedShape())
			}
		}
		if err := plan.Run(e.Stream, &args); err != nil {
			return fmt.Errorf("Run: %w", err)
		}
		if err := e.Stream.Synchronize(); err != nil {
			return fmt.Errorf("synchronize: %w", err)
		}
		got, err := odx.Read()
		if err != nil {
			return fmt.Errorf("dx: %w", err)
		}
		if run == 1 {
			for i := range got {
				if dtype.Bits(dt, got[i]) != dtype.Bits(dt, first[i]) && !(math.IsNaN(got[i]) && math.IsNaN(first[i])) {
					return fmt.Errorf("second run differs at dx[%d]: %v, then %v", i, first[i], got[i])
				}
			}
			break
		}
		first = got
	}
	want := make([]float64, ix.K)
	for s := 0; s < m; s++ {
		for j := range slice {
			slice[j] = x[ix.At(s, j)]
		}
		ref.ReduceBackward(name, dy[s], slice, y[s], c.Correction, want)
		tol := newReduceTol(name, dt, dy[s], y[s], c.Correction, slice)
		for j := range want {
			i := ix.At(s, j)
			ok, ulp := Compare(dt, first[i], want[j], tol.elem(slice[j], want[j]))
			res.Checked++
			if ulp > res.MaxULP {
				res.MaxULP = ulp
			}
			if !ok {
				res.Failf("%v: dx[%d] (slice %d, position %d) = %v, want %v (dy=%v y=%v x=%v, %.0f ulp)", c, i, s, j,
					first[i], dtype.Round(dt, want[j]), dy[s], y[s], slice[j], ulp)
			}
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckReduceVectors runs the pinned PyTorch 2.11 vectors (ref.ReduceVectors,
// dy = 1) for one dtype, each row once as a [1, n] tensor reduced along axis
// 1 (row mapping) and once as [n, 1] along axis 0 (col mapping), and checks
// the bits (signed zeros included) against the values rounded to dtype.
func (e *Env) CheckReduceVectors(dt dtype.DType) Result {
	res := Result{Kernel: "reduce vectors " + dt.Suffix()}
	byName := map[string]ops.ReduceOp{}
	for _, op := range ops.ReduceOps() {
		byName[op.String()] = op
	}
	for _, v := range ref.ReduceVectors {
		for r, row := range v.X {
			for _, axis := range []int{1, 0} {
				res.Cases++
				shape := []int{1, len(row)}
				if axis == 0 {
					shape = []int{len(row), 1}
				}
				got, err := e.runReduceVector(byName[v.Op], dt, shape, axis, v.Correction, row)
				if err != nil {
					res.Failf("%s row %d axis %d: %v", v.Op, r, axis, err)
					continue
				}
				for i := range got {
					res.Checked++
					if !vectorMatch(dt, got[i], v.DX[r][i], row) {
						res.Failf("%s(%v) axis %d: dx[%d] = %v, want %v (PyTorch 2.11)", v.Op, row, axis, i, got[i], v.DX[r][i])
					}
				}
			}
		}
	}
	return res
}

func (e *Env) runReduceVector(op ops.ReduceOp, dt dtype.DType, shape []int, axis int, c float64, row []float64) ([]float64, error) {
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: c})
	if err != nil {
		return nil, err
	}
	x := make([]float64, len(row))
	for i := range row {
		x[i] = dtype.Round(dt, row[i])
	}
	y := []float64{dtype.Round(dt, ref.ReduceForward(op.String(), x, c))}
	keep := plan.KeepdimShape()
	var opd [4]*Operand
	defer func() {
		for _, o := range opd {
			o.Free()
		}
	}()
	vals := [4][]float64{x, y, {1}, nil}
	shapes := [4][]int{shape, keep, keep, shape}
	for i := range opd {
		if opd[i], err = e.NewOperand(dt, shapes[i], Contiguous(shapes[i]), vals[i]); err != nil {
			return nil, err
		}
	}
	args := ops.ReduceArgs{X: opd[0].Tensor(), Y: opd[1].Tensor(), DY: opd[2].Tensor(), DX: opd[3].Tensor()}
	if ws := plan.WorkspaceSize(); ws > 0 {
		var buf driver.Buffer
		if buf, err = e.Ctx.Alloc(ws); err != nil {
			return nil, err
		}
		defer e.Ctx.Free(buf)
		args.Workspace = buf
	}
	if err := plan.Run(e.Stream, &args); err != nil {
		return nil, err
	}
	if err := e.Stream.Synchronize(); err != nil {
		return nil, err
	}
	return opd[3].Read()
}

// vectorMatch compares a pinned PyTorch value: NaN and infinities must
// match exactly; finite values may differ by rounding, at most 4 eps of the
// row's largest |x| (the vectors were observed in f32; f64 rounds x - mean
// differently).
func vectorMatch(dt dtype.DType, got, want float64, row []float64) bool {
	w := dtype.Round(dt, want)
	if sameBits(got, w) {
		return true
	}
	if math.IsNaN(w) || math.IsInf(w, 0) || math.IsNaN(got) || math.IsInf(got, 0) {
		return false
	}
	scale := 1.0
	for _, v := range row {
		if a := math.Abs(v); a > scale && !math.IsInf(a, 0) {
			scale = a
		}
	}
	return math.Abs(got-w) <= 4*dtype.Epsilon(dt)*scale
}

// withoutAxis is t, an operand in the keepdim shape, seen with the reduced
// axis removed: the same memory.
func withoutAxis(t ops.Tensor, axis int, reduced []int) ops.Tensor {
	t.Shape = reduced
	if t.Strides != nil {
		t.Strides = append(append([]int{}, t.Strides[:axis]...), t.Strides[axis+1:]...)
	}
	return t
}
