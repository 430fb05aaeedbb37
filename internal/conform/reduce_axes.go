package conform

// Reductions over several axes (ops.ReduceDesc.Axes): the cases and the
// check against ref.ReduceBackwardAxes.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

func init() {
	suites = append(suites, Suite{Family: "reduce-axes", Run: runReduceAxesSuite, One: oneReduceAxes})
}

// ReduceAxesCase is one shape, set of axes and layout of a multi-axis
// reduction check. dy and y are contiguous; the check runs them in keepdim
// form, then in reduced form over the same memory.
type ReduceAxesCase struct {
	Shape, Axes []int
	Correction  float64
	// Layout of x and dx.
	Layout func([]int) Layout
	// Data as ReduceCase's (DataEqual, DataSaturated): ties across every
	// segment of a slice.
	Data string
}

func (c ReduceAxesCase) String() string {
	s := fmt.Sprintf("%v axes %v", c.Shape, c.Axes)
	if c.Correction != 1 {
		s += fmt.Sprintf(" c=%v", c.Correction)
	}
	s += " " + c.Layout(c.Shape).Name
	if c.Data != "" {
		s += " data:" + c.Data
	}
	return s
}

// OuterPadded is row-major with the outermost dim's stride 3 elements
// longer: the other dims stay mergeable, so a multi-axis plan whose kept or
// reduced group is dim 0 alone views it on its coalesced shape.
func OuterPadded(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		s *= shape[d]
	}
	if len(shape) > 0 {
		strides[0] += 3
	}
	return Layout{Name: "outerpadded", Strides: strides, Span: spanOf(shape, strides)}
}

// ReduceAxesCases is the multi-axis suite: the seg path (reduced groups
// alternating with kept ones: packs and scalars, segments with tails,
// strided segments where the innermost dim is kept, up to four reduced and
// four kept groups, slices split into chunks with a partial last one) and
// the single path (one reduced group after coalescing: inner, outer and
// middle groups, every dim, size-1 dims), the bench shapes scaled down,
// negative and unordered axes, empty tensors, corrections with N - c <= 0
// and tie-heavy data, contiguous and unaligned (no 16-byte packs), and for
// the single path a strided layout that merges over the groups.
func ReduceAxesCases(quick bool) []ReduceAxesCase {
	type sa struct {
		shape, axes []int
	}
	seg := []sa{
		{[]int{4, 16, 28, 28}, []int{0, 2, 3}}, // the bench's [32, 256, 56, 56] scaled down
		{[]int{3, 5, 33}, []int{0, -1}},        // segments of 33: no packs
		{[]int{4, 6, 7, 7}, []int{0, 2, 3}},    // segments of 49: the packed walk of sum, mean, norm2, logsumexp
		{[]int{3, 16, 7, 7}, []int{0, 2, 3}},   // and the segs kernel of var, std, max, min in every dtype
		{[]int{2, 3, 4, 5}, []int{0, 2}},       // innermost dim kept: strided segments
		{[]int{5, 7, 1025}, []int{2, 0}},
		{[]int{2, 3, 2, 3, 2}, []int{0, 2, 4}},
		{[]int{2, 3, 2, 3, 2, 3, 2, 3}, []int{0, 2, 4, 6}},
		{[]int{3, 2, 3, 2, 3, 2, 3, 2}, []int{-1, -3, -5, -7}},
		{[]int{16, 4, 4096}, []int{0, 2}},      // few long slices: chunks
		{[]int{64, 2, 3000}, []int{0, 2}},      // chunks, a partial last one
		{[]int{3, 2, 5, 1, 8}, []int{0, 2, 4}}, // size-1 dims between reduced ones
		{[]int{0, 3, 4}, []int{0, 2}},
	}
	single := []sa{
		{[]int{4, 8, 16, 16}, []int{-2, -1}}, // the bench's [64, 128, 64, 64] scaled down
		{[]int{3, 4, 5}, []int{2, 1}},
		{[]int{2, 3, 4}, []int{0, 1, 2}},
		{[]int{5, 1, 1, 7}, []int{1, 2}},
		{[]int{7, 3, 1, 4}, []int{1, 2}},
		{[]int{6, 5, 9}, []int{0, 1}},
		{[]int{1, 1}, []int{0, 1}},
		{[]int{3, 1, 5, 1, 8}, []int{0, 2, 4}}, // the kept dims have size 1
		{[]int{3, 2, 20000}, []int{1, 2}},
		{[]int{3000, 2, 5}, []int{0, 1}},
		{[]int{2, 0, 4}, []int{1, 2}},
	}
	if quick {
		seg = []sa{{[]int{4, 16, 28, 28}, []int{0, 2, 3}}, {[]int{3, 5, 33}, []int{0, -1}}, {[]int{4, 6, 7, 7}, []int{0, 2, 3}}, {[]int{3, 16, 7, 7}, []int{0, 2, 3}}, {[]int{2, 3, 4, 5}, []int{0, 2}},
			{[]int{2, 3, 2, 3, 2}, []int{0, 2, 4}}, {[]int{64, 2, 3000}, []int{0, 2}}}
		single = []sa{{[]int{4, 8, 16, 16}, []int{-2, -1}}, {[]int{3, 4, 5}, []int{2, 1}}, {[]int{7, 3, 1, 4}, []int{1, 2}}}
	}
	var cs []ReduceAxesCase
	for _, s := range append(seg, single...) {
		cs = append(cs, ReduceAxesCase{Shape: s.shape, Axes: s.axes, Correction: 1, Layout: Contiguous},
			ReduceAxesCase{Shape: s.shape, Axes: s.axes, Correction: 1, Layout: Unaligned})
	}
	for _, s := range single {
		// Where dim 0 is a group of its own, OuterPadded merges.
		ax := normAxes(s.axes, len(s.shape))
		if len(s.shape) == 3 && slices.Contains(ax, 1) == slices.Contains(ax, 2) && slices.Contains(ax, 0) != slices.Contains(ax, 1) {
			cs = append(cs, ReduceAxesCase{Shape: s.shape, Axes: s.axes, Correction: 1, Layout: OuterPadded})
		}
	}
	for _, c := range []struct {
		shape, axes []int
		c           float64
	}{{[]int{3, 4, 5}, []int{0, 2}, 0}, {[]int{2, 3, 2}, []int{0, 2}, 4}, {[]int{2, 3, 3}, []int{0, 2}, 7.5}, {[]int{3, 4, 5}, []int{1, 2}, 20}} {
		cs = append(cs, ReduceAxesCase{Shape: c.shape, Axes: c.axes, Correction: c.c, Layout: Contiguous})
	}
	tie := []sa{{[]int{4, 16, 28, 28}, []int{0, 2, 3}}, {[]int{3, 16, 7, 7}, []int{0, 2, 3}}, {[]int{64, 2, 3000}, []int{0, 2}},
		{[]int{2, 3, 4, 5}, []int{0, 2}}}
	if quick {
		tie = tie[:2]
	}
	for _, data := range []string{DataEqual, DataSaturated} {
		for _, s := range tie {
			cs = append(cs, ReduceAxesCase{Shape: s.shape, Axes: s.axes, Correction: 1, Layout: Contiguous, Data: data})
		}
	}
	return cs
}

// normAxes is axes normalized for rank, in the order given.
func normAxes(axes []int, rank int) []int {
	out := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += rank
		}
		out[i] = a
	}
	return out
}

func oneReduceAxes(e *Env, pick uint64) Result {
	all := ops.ReduceOps()
	op := all[pick%uint64(len(all))]
	dt := dtype.All[(pick/16)%uint64(len(dtype.All))]
	cases := []ReduceAxesCase{
		{Shape: []int{3, 5, 33}, Axes: []int{0, 2}, Correction: 1, Layout: Contiguous},
		{Shape: []int{3, 4, 5}, Axes: []int{1, 2}, Correction: 1, Layout: Contiguous},
	}
	return e.CheckReduceAxes(op, dt, cases, pick)
}

func runReduceAxesSuite(e *Env, quick bool) []Result {
	var out []Result
	cases := ReduceAxesCases(quick)
	for _, op := range ops.ReduceOps() {
		for _, dt := range dtype.All {
			out = append(out, e.CheckReduceAxes(op, dt, cases, 41))
		}
	}
	return out
}

// CheckReduceAxes runs every case for one (op, dtype) and compares with
// the reference; each case runs twice (dy and y in keepdim form, then in
// reduced form) and must give the same bits.
func (e *Env) CheckReduceAxes(op ops.ReduceOp, dt dtype.DType, cases []ReduceAxesCase, seed uint64) Result {
	name := op.String()
	res := Result{Kernel: "reduce_bw_" + name + "_" + dt.Suffix() + "/axes"}
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(dt)))
	for _, c := range cases {
		res.Cases++
		axes := normAxes(c.Axes, len(c.Shape))
		v := ref.NewAxesSlices(c.Shape, axes)
		plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: c.Shape, Axes: c.Axes, Correction: c.Correction})
		if (op == ops.ReduceMax || op == ops.ReduceMin) && v.K == 0 {
			if err == nil {
				res.Failf("%v: NewReduceBackward accepted %s over an empty set", c, name)
			}
			continue
		}
		if err != nil {
			res.Failf("%v: NewReduceBackward: %v", c, err)
			continue
		}
		if err := e.runReduceAxesCase(plan, c, v, rng, &res); err != nil {
			res.Failf("%v: %v", c, err)
		}
	}
	return res
}

// ReduceAxesData draws x, y and dy of one case as the single-axis suite
// does (reduceSlice's edge cases per slice, then c.Data's ties), rounded to
// dt: x in row-major order, y and dy one per slice.
func ReduceAxesData(rng *rand.Rand, c ReduceAxesCase, op string, dt dtype.DType, v ref.AxesSlices) (x, y, dy []float64) {
	x = make([]float64, product(c.Shape))
	y = make([]float64, v.Count())
	dy = make([]float64, v.Count())
	slice := make([]float64, v.K)
	for s := range y {
		dy[s] = 1
		if v.K == 0 {
			continue
		}
		reduceSlice(rng, op, slice)
		if c.Data != "" {
			tieSlice(op, c.Data, slice)
		}
		for j := range slice {
			slice[j] = dtype.Round(dt, slice[j])
		}
		v.Scatter(x, s, slice)
		y[s] = dtype.Round(dt, ref.ReduceForward(op, slice, c.Correction))
		dy[s] = dtype.Round(dt, rng.NormFloat64())
		if rng.IntN(16) == 0 {
			dy[s] = [3]float64{0, math.NaN(), math.Inf(-1)}[rng.IntN(2+b2i(op != "var" && op != "std"))]
		}
	}
	return x, y, dy
}

func (e *Env) runReduceAxesCase(plan *ops.ReduceBackward, c ReduceAxesCase, v ref.AxesSlices, rng *rand.Rand, res *Result) error {
	d := plan.Desc()
	dt, name := d.DType, d.Op.String()
	keep := plan.KeepdimShape()
	x, y, dy := ReduceAxesData(rng, c, name, dt, v)
	saved := ref.ReduceNeedsSaved(name)
	var ox, oy, ody, odx *Operand
	defer func() {
		for _, o := range []*Operand{ox, oy, ody, odx} {
			o.Free()
		}
	}()
	var err error
	if ody, err = e.NewOperand(dt, keep, Contiguous(keep), dy); err != nil {
		return err
	}
	if odx, err = e.NewOperand(dt, c.Shape, c.Layout(c.Shape), nil); err != nil {
		return err
	}
	args := ops.ReduceArgs{DY: ody.Tensor(), DX: odx.Tensor()}
	if saved {
		if ox, err = e.NewOperand(dt, c.Shape, c.Layout(c.Shape), x); err != nil {
			return err
		}
		if oy, err = e.NewOperand(dt, keep, Contiguous(keep), y); err != nil {
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
	first, err := e.runKeepThenReduced(plan, &args, odx, func() {
		args.DY.Shape = plan.ReducedShape()
		if saved {
			args.Y.Shape = plan.ReducedShape()
		}
	})
	if err != nil {
		return err
	}
	slice := make([]float64, v.K)
	want := make([]float64, v.K)
	for s := 0; s < v.Count() && v.K > 0; s++ {
		v.Gather(x, s, slice)
		ref.ReduceBackward(name, dy[s], slice, y[s], c.Correction, want)
		tol := newReduceTol(name, dt, dy[s], y[s], c.Correction, slice)
		for j := range want {
			i := v.At(s, j)
			ok, ulp := Compare(dt, first[i], want[j], tol.elem(slice[j], want[j]))
			res.Checked++
			if ulp > res.MaxULP {
				res.MaxULP = ulp
			}
			if !ok {
				res.Failf("%v (%s path): dx[%d] (slice %d, position %d) = %v, want %v (dy=%v y=%v x=%v, %.0f ulp)", c, plan.Path(), i, s, j,
					first[i], dtype.Round(dt, want[j]), dy[s], y[s], slice[j], ulp)
			}
		}
	}
	return nil
}

// reduceAxesPaths counts the cases of cs by the path their plans take
// (for the GPU-free test that the suite reaches both).
func reduceAxesPaths(cs []ReduceAxesCase) (map[string]int, error) {
	paths := map[string]int{}
	for _, c := range cs {
		p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceSum, DType: dtype.F32, Shape: c.Shape, Axes: c.Axes, Correction: c.Correction})
		if err != nil {
			return nil, fmt.Errorf("%v: %w", c, err)
		}
		paths[p.Path()]++
		if slices.Contains(c.Shape, 0) {
			paths["empty"]++
		}
	}
	return paths, nil
}
