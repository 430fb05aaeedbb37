package conform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// ScanValues says what a scan case's inputs hold.
type ScanValues uint8

const (
	// ScanNormal: dy ~ N(0,1); x per op: cumprod near 1 with zeros at the
	// start, middle or end of slices (two zeros in some), cummax/cummin
	// small integers (ties), logcumsumexp N(0, 2).
	ScanNormal ScanValues = iota
	// ScanSpecial adds NaN and infinities: NaN and ±inf in x of cummax and
	// cummin, NaN in x of cumprod, leading and interior -inf runs, +inf and
	// ±1000 in x of logcumsumexp, NaN and ±inf in dy.
	ScanSpecial
	// ScanExact: small integers (cumprod: x in {1, -1, 0}), so every sum is
	// exact in opmath and dx must match the reference bit for bit
	// (logcumsumexp, which has no exact inputs, gets ScanNormal's check).
	ScanExact
	// ScanNonFinite places ±inf and NaN where they decide PyTorch's
	// values (docs/semantics.md 4), one pattern a slice: cumprod with ±inf
	// in x and no zero before it (the signs of the infinite terms y_j g_j
	// give ±inf or NaN), an inf before and after the first zero (at the
	// first zero, the NaN from a second zero past an infinite product), NaN
	// in x with zeros in dy, x so small that y underflows to 0 with ±inf or
	// NaN in dy before the first zero (NaN back to the slice's start);
	// logcumsumexp with NaN late in x (every dx NaN), +inf late in x and
	// ±inf in dy, -inf runs with ±inf late in dy, ±1000 in x (exp
	// underflows) with ±inf in dy beyond, values near the ends of the
	// range (differences of x and y that overflow) with ±inf in dy. Other
	// ops get ScanSpecial's values.
	ScanNonFinite
	// ScanUnderflow (cumprod): x of magnitude in [0.5, 0.75) ([0.3, 0.45)
	// for f64), so that y underflows to 0 after a few dozen (f16) to about
	// 700 (f64) elements, with one pattern a slice by its index: after the
	// underflow a ±inf dy (NaN back to the slice's start), a NaN dy then
	// a zero and ±inf dy after it, a zero then ±inf dy (NaN at the zero),
	// ±inf dy then two zeros, finite dy; a real zero before the underflow
	// with ±inf and NaN dy after it (0 after the zero); NaN in x late.
	// Most slices end in a 0 y rather than NaN, so that the col kernel's
	// chunked tiles tell an underflow from a zero by the forward state
	// (gen/scan_fwd.cuh, scan_fwd_unit). Other ops get ScanNormal's values.
	ScanUnderflow
)

// ScanCase is one shape, axis and memory layout of a scan check.
type ScanCase struct {
	Shape []int
	Axis  int
	// Layouts of dy, x, y, dx.
	Layouts [4]func([]int) Layout
	Values  ScanValues
	// InPlace writes dx over dy (the identical tensor); OverX over x.
	InPlace, OverX bool
	// Ops and DTypes, when set, keep the case to those ops and dtypes (a
	// large shape that only one kernel needs).
	Ops    []ops.ScanOp
	DTypes []dtype.DType
}

// runs reports whether the case applies to op and dt.
func (c ScanCase) runs(op ops.ScanOp, dt dtype.DType) bool {
	return (c.Ops == nil || slices.Contains(c.Ops, op)) && (c.DTypes == nil || slices.Contains(c.DTypes, dt))
}

// shared is the operand dx is written over (0: dy, 1: x), or -1.
func (c ScanCase) shared() int {
	switch {
	case c.InPlace:
		return 0
	case c.OverX:
		return 1
	}
	return -1
}

func (c ScanCase) String() string {
	s := fmt.Sprintf("%v axis %d", c.Shape, c.Axis)
	for i, f := range c.Layouts {
		s += fmt.Sprintf(" %s:%s", [4]string{"dy", "x", "y", "dx"}[i], f(c.Shape).Name)
	}
	s += [5]string{"", " special", " exact", " nonfinite", " underflow"}[c.Values]
	if c.InPlace {
		s += " in-place"
	}
	if c.OverX {
		s += " dx-over-x"
	}
	return s
}

// scanSlices returns, for a row-major shape and axis, the logical index of
// element k of every slice: idx[s][k].
func scanSlices(shape []int, axis int) [][]int {
	n := shape[axis]
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	total := int(product(shape))
	if n == 0 || total == 0 {
		return nil
	}
	out := make([][]int, 0, total/n)
	for o := 0; o < total/(n*inner); o++ {
		for i := 0; i < inner; i++ {
			idx := make([]int, n)
			for k := range idx {
				idx[k] = (o*n+k)*inner + i
			}
			out = append(out, idx)
		}
	}
	return out
}

// scanTol is the tolerance of one dx element: exact cases match to 0 ulp;
// otherwise 2 ulp of dt, or an absolute error of 8 * eps * sqrt(n) * mag,
// where eps is the opmath epsilon (2^-23, 2^-52 for f64), n the slice
// length and mag the reference's |c_k| * Σ_j |g_j| |a_{k+1}...a_j|: a scan
// of n terms computed in any order of at most n levels errs by about
// sqrt(n) * eps * mag for random data (n * eps * mag at worst), and the
// kernels' blocked order has far fewer levels (within 16 per thread, 5
// across lanes, 7 across warps, 31 across tiles of a look-back group).
// logcumsumexp's factors that underflow are the least positive value
// (the reference's is float64's), so its dx may differ from the
// reference by a subnormal multiple of that: an absolute floor of 2^-120
// (2^-1000 for f64), far below any value that does not underflow.
func scanTol(op ops.ScanOp, dt dtype.DType, exact bool, n int, mag float64) Tol {
	if exact {
		return Tol{}
	}
	eps := 0x1p-23
	if dt == dtype.F64 {
		eps = 0x1p-52
	}
	abs := 8 * eps * math.Sqrt(float64(n)) * mag
	if op == ops.ScanLogcumsumexp {
		floor := 0x1p-120
		if dt == dtype.F64 {
			floor = 0x1p-1000
		}
		abs = math.Max(abs, floor)
	}
	return Tol{ULP: 2, Abs: abs}
}

// CheckScan runs every case for one (op, dtype, direction) and compares dx
// with the reference. Chained cases run twice on the same workspace, which
// starts as garbage: the second run must reproduce the first bit for bit.
func (e *Env) CheckScan(op ops.ScanOp, dt dtype.DType, reverse bool, cases []ScanCase, seed uint64) Result {
	dir := "forward"
	if reverse {
		dir = "reverse"
	}
	res := Result{Kernel: fmt.Sprintf("scan_bw_%s_%s (%s)", op, dt.Suffix(), dir)}
	rv := uint64(0)
	if reverse {
		rv = 1
	}
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<16|uint64(dt)<<8|rv))
	for _, c := range cases {
		if !c.runs(op, dt) {
			continue
		}
		res.Cases++
		plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis, Reverse: reverse})
		if err != nil {
			res.Failf("%v: NewScanBackward: %v", c, err)
			continue
		}
		slices, in := scanCaseInputs(rng, op, dt, c, reverse)
		if err := e.runScanCase(plan, c, slices, in, &res); err != nil {
			res.Failf("%v: %v", c, err)
		}
	}
	return res
}

// scanCaseInputs builds one case's dy, x and y (the reference forward of x,
// rounded to dt) and the logical indices of its slices.
func scanCaseInputs(rng *rand.Rand, op ops.ScanOp, dt dtype.DType, c ScanCase, reverse bool) ([][]int, [3][]float64) {
	total := int(product(c.Shape))
	dy, x := make([]float64, total), make([]float64, total)
	slices := scanSlices(c.Shape, c.Axis)
	scanInputs(rng, op, dt, c.Values, slices, reverse, dy, x)
	y := make([]float64, total)
	for _, idx := range slices {
		ys := ref.ScanForward(op.String(), gatherIdx(x, idx), reverse)
		for k, i := range idx {
			y[i] = dtype.Round(dt, ys[k])
		}
	}
	return slices, [3][]float64{dy, x, y}
}

func gatherIdx(v []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for k, i := range idx {
		out[k] = v[i]
	}
	return out
}

func (e *Env) runScanCase(plan *ops.ScanBackward, c ScanCase, slices [][]int, in [3][]float64, res *Result) error {
	desc := plan.Desc()
	dt := desc.DType
	var operands [4]*Operand
	sh := c.shared()
	defer func() {
		for i, o := range operands {
			if i < 3 || sh < 0 {
				o.Free()
			}
		}
	}()
	for i := 0; i < 4; i++ {
		if i == 3 && sh >= 0 {
			operands[3] = operands[sh]
			break
		}
		var vals []float64
		if i < 3 {
			vals = in[i]
		}
		o, err := e.NewOperand(dt, c.Shape, c.Layouts[i](c.Shape), vals)
		if err != nil {
			return err
		}
		operands[i] = o
	}
	args := ops.ScanArgs{DY: operands[0].Tensor(), X: operands[1].Tensor(), Y: operands[2].Tensor(), DX: operands[3].Tensor()}
	var ws *Guarded
	if w := plan.WorkspaceSize(); w > 0 {
		// Guard bands around it; its inside starts as the guard pattern,
		// not zeros.
		g, err := e.NewGuarded(dtype.F32, (w+3)/4)
		if err != nil {
			return err
		}
		defer g.Free()
		ws = g
		args.Workspace = g.Inner()
	}
	runs := 1
	if ws != nil && sh < 0 {
		runs = 2
	}
	var first []float64
	var got []float64
	for r := 0; r < runs; r++ {
		if err := plan.Run(e.Stream, &args); err != nil {
			return fmt.Errorf("Run: %w", err)
		}
		if err := e.Stream.Synchronize(); err != nil {
			return fmt.Errorf("synchronize: %w", err)
		}
		var err error
		if sh >= 0 {
			// The shared operand's unaddressed elements were written with
			// the inputs, so only the guard bands can be checked.
			var mem []float64
			if mem, err = operands[3].G.ReadChecked(nil); err == nil {
				got = Gather(mem, operands[3].offs)
			}
		} else {
			got, err = operands[3].Read()
		}
		if err != nil {
			return fmt.Errorf("dx: %w", err)
		}
		if r == 0 {
			first = got
		}
	}
	if ws != nil {
		if _, err := ws.ReadChecked(nil); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	for i := range got {
		if !sameBits(got[i], first[i]) {
			res.Failf("%v: dx[%d] = %v on the second run, %v on the first: not bit-stable", c, i, got[i], first[i])
			break
		}
	}
	op := desc.Op.String()
	exact := c.Values == ScanExact && desc.Op != ops.ScanLogcumsumexp
	for _, idx := range slices {
		dx, mag := ref.ScanBackwardMag(op, gatherIdx(in[0], idx), gatherIdx(in[1], idx), gatherIdx(in[2], idx), desc.Reverse)
		for k, i := range idx {
			ok, ulp := Compare(dt, got[i], dx[k], scanTol(desc.Op, dt, exact, len(idx), mag[k]))
			res.Checked++
			if ulp > res.MaxULP && !math.IsInf(ulp, 0) {
				res.MaxULP = ulp
			}
			if !ok {
				res.Failf("%v: dx[%d] (element %d of its slice) = %v, want %v (dy=%v x=%v y=%v, %.0f ulp, magnitude %.3g)",
					c, i, k, got[i], dtype.Round(dt, dx[k]), in[0][i], in[1][i], in[2][i], ulp, mag[k])
			}
		}
	}
	return nil
}

func init() {
	suites = append(suites, Suite{Family: "scan", Run: runScanSuite, One: oneScan})
}

// oneScan checks one (op, dtype, direction) chosen by pick on small cases:
// a row scan, a strided col scan and a col scan that chains tiles through
// its own workspace.
func oneScan(e *Env, pick uint64) Result {
	all := ops.ScanOps()
	op := all[pick%uint64(len(all))]
	dt := dtype.All[(pick/8)%uint64(len(dtype.All))]
	cases := []ScanCase{
		{Shape: []int{257}, Layouts: scanSame(Contiguous)},
		{Shape: []int{3, 5, 7}, Axis: 1, Layouts: scanSame(Transposed), Values: ScanSpecial},
		{Shape: []int{300, 33}, Layouts: scanSame(Contiguous), Values: ScanExact},
	}
	return e.CheckScan(op, dt, pick/32%2 == 1, cases, pick)
}

func runScanSuite(e *Env, quick bool) []Result {
	var out []Result
	cases := ScanCases(quick)
	for _, op := range ops.ScanOps() {
		for _, dt := range dtype.All {
			for _, reverse := range []bool{false, true} {
				out = append(out, e.CheckScan(op, dt, reverse, cases, 42))
			}
		}
	}
	for _, dt := range dtype.All {
		out = append(out, e.CheckScanVectors(dt))
	}
	return out
}
