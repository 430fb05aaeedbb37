package conform

import (
	"fmt"
	"math"
	"math/rand/v2"

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
	ws, freeWS, err := e.dirtyWorkspace(plan.WorkspaceSize())
	if err != nil {
		return err
	}
	defer freeWS()
	args.Workspace = ws
	// The second run gives dy and y in the reduced form (keepdim=False)
	// over the same memory: the same bits.
	first, err := e.runKeepThenReduced(plan, &args, odx, func() {
		args.DY = withoutAxis(args.DY, axis, plan.ReducedShape())
		if saved {
			args.Y = withoutAxis(args.Y, axis, plan.ReducedShape())
		}
	})
	if err != nil {
		return err
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

// runKeepThenReduced runs plan twice: on args as given (dy and y in the
// keepdim form), then after reduced has set them to the reduced form over
// the same memory. Both runs must write the same dx bits, which it returns.
func (e *Env) runKeepThenReduced(plan *ops.ReduceBackward, args *ops.ReduceArgs, dx *Operand, reduced func()) ([]float64, error) {
	dt := plan.Desc().DType
	var first []float64
	for run := 0; run < 2; run++ {
		if run == 1 {
			reduced()
		}
		if err := plan.Run(e.Stream, args); err != nil {
			return nil, fmt.Errorf("Run (%s path): %w", plan.Path(), err)
		}
		if err := e.Stream.Synchronize(); err != nil {
			return nil, fmt.Errorf("synchronize: %w", err)
		}
		got, err := dx.Read()
		if err != nil {
			return nil, fmt.Errorf("dx: %w", err)
		}
		if run == 1 {
			for i := range got {
				if dtype.Bits(dt, got[i]) != dtype.Bits(dt, first[i]) && !(math.IsNaN(got[i]) && math.IsNaN(first[i])) {
					return nil, fmt.Errorf("second run (reduced form) differs at dx[%d]: %v, then %v", i, first[i], got[i])
				}
			}
			break
		}
		first = got
	}
	return first, nil
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
