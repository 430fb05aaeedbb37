//go:build cuda

package conform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// Long axes: every scan and reduce op, f32 and bf16, over three slices of
// 10^5 and 10^6 elements along the innermost axis ([3, n]) and along the
// outer one ([n, 3]), scans in both directions, against the float64
// reference.
//
// An element passes within the suites' elementwise ulps of the reference
// rounded to the dtype (DefaultTol's, and for logsumexp |x - y| more, as
// reduceTol), or within an absolute error of
//
//	longAxisC * eps * sqrt(n) * scale
//
// with eps = 2^-23 (the kernels accumulate in f32 for both dtypes) and
// scale the sum of the magnitudes accumulated: for scans the reference's
// |c_k| * Σ_j |g_j| |a_{k+1}...a_j| (ref.ScanBackwardMag); for var and
// std the factor times the mean |x| (the mean's error); for prod |dx|
// (the product of the others over a slice with one zero); the other
// reductions accumulate nothing. n roundings of at most eps/2 each, of
// either sign, add up like a random walk of standard deviation
// eps/2 * sqrt(n/3) * scale, whatever the order of the sum, so
// longAxisC = 4 is about 14 standard deviations: no order of summation
// fails it by chance (the kernels' short sequential runs and trees err far
// less), while an error that grows with n, as a lost or repeated chunk or
// a sequential f32 sum (eps * n) does, exceeds it at these lengths. Each
// case logs its worst error as a multiple of eps * sqrt(n) * scale.
const longAxisC = 4

var longAxisLengths = []int{100_000, 1_000_000}

// longWorst tracks the largest error of a case relative to
// eps * sqrt(n) * scale, and in ulps.
type longWorst struct {
	ratio, ulp     float64
	ratioAt, ulpAt string
	checked        int64
	fails          []string
}

// check compares one element: within ulps of the rounded reference, or
// the accumulation bound.
func (w *longWorst) check(dt dtype.DType, n int, got, want, scale, ulps float64, where func() string) {
	w.checked++
	bound := 0x1p-23 * math.Sqrt(float64(n)) * scale
	ok, ulp := Compare(dt, got, want, Tol{ULP: ulps, Abs: longAxisC * bound})
	if !ok && len(w.fails) < 8 {
		w.fails = append(w.fails, fmt.Sprintf("%s = %v, want %v (%.0f ulp; eps*sqrt(n)*scale = %.3g)", where(), got,
			dtype.Round(dt, want), ulp, bound))
	}
	if ulp > w.ulp && !math.IsInf(ulp, 0) {
		w.ulp, w.ulpAt = ulp, where()
	}
	if err := math.Abs(got - want); bound > 0 && !math.IsNaN(err) && !math.IsInf(err, 0) && err/bound > w.ratio {
		w.ratio, w.ratioAt = err/bound, where()
	}
}

func (w *longWorst) report(t *testing.T) {
	t.Helper()
	t.Logf("%d elements; worst error %.3g x eps*sqrt(n)*scale (limit %d) at %s; worst %.0f ulp at %s",
		w.checked, w.ratio, longAxisC, w.ratioAt, w.ulp, w.ulpAt)
	for _, f := range w.fails {
		t.Error(f)
	}
}

// longShapes are the two layouts of an axis of n elements.
func longShapes(n int) []struct {
	shape []int
	axis  int
} {
	return []struct {
		shape []int
		axis  int
	}{{[]int{3, n}, 1}, {[]int{n, 3}, 0}}
}

// skipLongInQuick leaves the long axes out of the quick set (selftest's,
// and compute-sanitizer's, which runs 10-100x slower).
func skipLongInQuick(t *testing.T) {
	t.Helper()
	if quick() {
		t.Skip("long axes are not in the quick case set (BARACUDA_QUICK=1)")
	}
}

func TestLongAxisScanGPU(t *testing.T) {
	skipLongInQuick(t)
	env := testEnv(t)
	for _, op := range ops.ScanOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, n := range longAxisLengths {
				for _, l := range longShapes(n) {
					for _, reverse := range []bool{false, true} {
						dir := "forward"
						if reverse {
							dir = "reverse"
						}
						name := fmt.Sprintf("scan_bw_%s_%s/%v/axis%d/%s", op, dt.Suffix(), l.shape, l.axis, dir)
						t.Run(name, func(t *testing.T) {
							w, err := env.longScan(op, dt, l.shape, l.axis, reverse)
							if err != nil {
								t.Fatal(err)
							}
							w.report(t)
						})
					}
				}
			}
		}
	}
}

// TestLongRowScanGPU: every scan op, f32 and bf16, both directions, over
// the sweep's long rows, [16777216] and [4, 4194304] along the last axis:
// the row kernel's thousands of tiles a slice, whose look-back walks go
// past the maps its shared buffer keeps and whose runs prefetch the tile
// 128 later into L2.
func TestLongRowScanGPU(t *testing.T) {
	skipLongInQuick(t)
	longScans(t, testEnv(t), ops.ScanOps(), []longShape{{[]int{1 << 24}, 0}, {[]int{4, 1 << 22}, 1}})
}

// TestLongScanCarryGPU: every scan op, f32 and bf16, both directions,
// over four long columns ([4194304, 4] along axis 0: the tallrow kernel in
// bf16, the tall kernel in f32), by default (cumsum's and logcumsumexp's
// tallrow launches take the carry passes, 4096 tiles a slice) and with
// BARACUDA_SCAN_CARRY=always (cumprod's, cummax's and cummin's too).
func TestLongScanCarryGPU(t *testing.T) {
	skipLongInQuick(t)
	env := testEnv(t)
	tall := []longShape{{[]int{1 << 22, 4}, 0}}
	t.Run("default", func(t *testing.T) { longScans(t, env, ops.ScanOps(), tall) })
	t.Run("always", func(t *testing.T) {
		t.Setenv("BARACUDA_SCAN_CARRY", "always")
		longScans(t, env, []ops.ScanOp{ops.ScanCumprod, ops.ScanCummax, ops.ScanCummin}, tall)
	})
}

// longShape is a shape and the axis scanned.
type longShape struct {
	shape []int
	axis  int
}

// longScans runs longScan for every op of scanOps, f32 and bf16, each
// shape and both directions, as the subtest
// scan_bw_<op>_<dtype>/<shape>/axis<axis>/<direction>.
func longScans(t *testing.T, env *Env, scanOps []ops.ScanOp, shapes []longShape) {
	for _, op := range scanOps {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, l := range shapes {
				for _, reverse := range []bool{false, true} {
					dir := "forward"
					if reverse {
						dir = "reverse"
					}
					shape, axis := l.shape, l.axis
					t.Run(fmt.Sprintf("scan_bw_%s_%s/%v/axis%d/%s", op, dt.Suffix(), shape, axis, dir), func(t *testing.T) {
						w, err := env.longScan(op, dt, shape, axis, reverse)
						if err != nil {
							t.Fatal(err)
						}
						w.report(t)
					})
				}
			}
		}
	}
}

// longScan runs one long-axis scan case (ScanNormal inputs) and compares
// every element with the reference.
func (e *Env) longScan(op ops.ScanOp, dt dtype.DType, shape []int, axis int, reverse bool) (*longWorst, error) {
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Reverse: reverse})
	if err != nil {
		return nil, err
	}
	total := int(product(shape))
	slices := scanSlices(shape, axis)
	rng := rand.New(rand.NewPCG(39, uint64(op)<<16|uint64(dt)<<8|uint64(axis)))
	dy, x, y := make([]float64, total), make([]float64, total), make([]float64, total)
	scanInputs(rng, op, dt, ScanNormal, slices, reverse, dy, x)
	for _, idx := range slices {
		for k, v := range ref.ScanForward(op.String(), gatherIdx(x, idx), reverse) {
			y[idx[k]] = dtype.Round(dt, v)
		}
	}
	var os [4]*Operand
	defer func() {
		for _, o := range os {
			o.Free()
		}
	}()
	for i, vals := range [4][]float64{dy, x, y, nil} {
		if os[i], err = e.NewOperand(dt, shape, Contiguous(shape), vals); err != nil {
			return nil, err
		}
	}
	args := ops.ScanArgs{DY: os[0].Tensor(), X: os[1].Tensor(), Y: os[2].Tensor(), DX: os[3].Tensor()}
	got, err := e.runLong(plan.WorkspaceSize(), func(ws driver.Buffer) error {
		args.Workspace = ws
		return plan.Run(e.Stream, &args)
	}, os[3])
	if err != nil {
		return nil, err
	}
	w := &longWorst{}
	n := shape[axis]
	for s, idx := range slices {
		want, mag := ref.ScanBackwardMag(op.String(), gatherIdx(dy, idx), gatherIdx(x, idx), gatherIdx(y, idx), reverse)
		for k, i := range idx {
			w.check(dt, n, got[i], want[k], mag[k], DefaultTol(dt).ULP, func() string { return fmt.Sprintf("slice %d dx[%d]", s, k) })
		}
	}
	return w, nil
}

// runLong runs a plan with a workspace of ws bytes (garbage-filled) and
// returns dx after checking its guard bands.
func (e *Env) runLong(ws int64, run func(driver.Buffer) error, dx *Operand) ([]float64, error) {
	buf, free, err := e.dirtyWorkspace(ws)
	if err != nil {
		return nil, err
	}
	defer free()
	if err := run(buf); err != nil {
		return nil, fmt.Errorf("Run: %w", err)
	}
	if err := e.Stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("synchronize: %w", err)
	}
	return dx.Read()
}

func TestLongAxisReduceGPU(t *testing.T) {
	skipLongInQuick(t)
	env := testEnv(t)
	for _, op := range ops.ReduceOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, n := range longAxisLengths {
				for _, l := range longShapes(n) {
					name := fmt.Sprintf("reduce_bw_%s_%s/%v/axis%d", op, dt.Suffix(), l.shape, l.axis)
					t.Run(name, func(t *testing.T) {
						w, err := env.longReduce(op, dt, l.shape, l.axis)
						if err != nil {
							t.Fatal(err)
						}
						w.report(t)
					})
				}
			}
		}
	}
}

// longProdPaths: prod over long slices on each path that splits a slice
// and combines its partial products (in double for float opmath,
// RedWide): the row and col statistics passes with their totals (the
// flat path turned off; [10^6, 4] takes 4 adjacent slices a thread), the
// cluster kernel (compute capability 9.0; elsewhere the col passes), and
// the seg kernel (two reduced axes that do not coalesce). The flat path
// and the col passes of [10^6, 3] are TestLongAxisReduceGPU's.
var longProdPaths = []struct {
	name  string
	env   []string // knob, value, ...
	shape []int
	axis  int
	axes  []int
}{
	{"row_stats", []string{"BARACUDA_REDUCE_FLAT", "never"}, []int{3, 1_000_000}, 1, nil},
	{"col_stats_cvec", []string{"BARACUDA_REDUCE_FLAT", "never"}, []int{1_000_000, 4}, 0, nil},
	{"cluster", []string{"BARACUDA_REDUCE_CLUSTER", "always"}, []int{1_000_000, 3}, 0, nil},
	{"seg", nil, []int{1000, 3, 1000}, 0, []int{0, 2}},
}

// TestLongAxisProdPathsGPU runs prod, f32 and bf16, over longProdPaths,
// checked as TestLongAxisReduceGPU's cases.
func TestLongAxisProdPathsGPU(t *testing.T) {
	skipLongInQuick(t)
	env := testEnv(t)
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, c := range longProdPaths {
			t.Run(fmt.Sprintf("reduce_bw_prod_%s/%s/%v", dt.Suffix(), c.name, c.shape), func(t *testing.T) {
				for i := 0; i+1 < len(c.env); i += 2 {
					t.Setenv(c.env[i], c.env[i+1])
				}
				w, err := env.longReduceAxes(ops.ReduceProd, dt, c.shape, c.axis, c.axes)
				if err != nil {
					t.Fatal(err)
				}
				w.report(t)
			})
		}
	}
}

// longSlices is the slice view of a reduction over one axis
// (ref.AxisSlices) or several (ref.AxesSlices).
type longSlices interface {
	Count() int
	Len() int
	At(s, j int) int
	Gather(t []float64, s int, buf []float64)
	Scatter(t []float64, s int, buf []float64)
}

// longReduce runs one long-axis reduction (the suite's slice values,
// correction 1) and compares every element with the reference.
func (e *Env) longReduce(op ops.ReduceOp, dt dtype.DType, shape []int, axis int) (*longWorst, error) {
	return e.longReduceAxes(op, dt, shape, axis, nil)
}

// longReduceAxes is longReduce over axes where they are not nil.
func (e *Env) longReduceAxes(op ops.ReduceOp, dt dtype.DType, shape []int, axis int, axes []int) (*longWorst, error) {
	const c = 1.0
	plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Axes: axes, Correction: c})
	if err != nil {
		return nil, err
	}
	name := op.String()
	var v longSlices = ref.NewAxisSlices(shape, axis)
	if axes != nil {
		v = ref.NewAxesSlices(shape, axes)
	}
	k := v.Len()
	rng := rand.New(rand.NewPCG(39, uint64(op)<<16|uint64(dt)<<8|uint64(axis)))
	x := make([]float64, product(shape))
	y, dy := make([]float64, v.Count()), make([]float64, v.Count())
	slice := make([]float64, k)
	for s := range v.Count() {
		reduceSlice(rng, name, slice)
		for j := range slice {
			slice[j] = dtype.Round(dt, slice[j])
		}
		v.Scatter(x, s, slice)
		y[s] = dtype.Round(dt, ref.ReduceForward(name, slice, c))
		dy[s] = dtype.Round(dt, rng.NormFloat64())
	}
	keep := plan.KeepdimShape()
	var os [4]*Operand
	defer func() {
		for _, o := range os {
			o.Free()
		}
	}()
	shapes := [4][]int{shape, keep, keep, shape}
	for i, vals := range [4][]float64{x, y, dy, nil} {
		if os[i], err = e.NewOperand(dt, shapes[i], Contiguous(shapes[i]), vals); err != nil {
			return nil, err
		}
	}
	args := ops.ReduceArgs{X: os[0].Tensor(), Y: os[1].Tensor(), DY: os[2].Tensor(), DX: os[3].Tensor()}
	got, err := e.runLong(plan.WorkspaceSize(), func(ws driver.Buffer) error {
		args.Workspace = ws
		return plan.Run(e.Stream, &args)
	}, os[3])
	if err != nil {
		return nil, err
	}
	w := &longWorst{}
	want := make([]float64, k)
	for s := range v.Count() {
		v.Gather(x, s, slice)
		ref.ReduceBackward(name, dy[s], slice, y[s], c, want)
		// The elementwise ulps of the suite (logsumexp's x - y rounds in
		// opmath first: |x - y| more).
		rt := newReduceTol(name, dt, dy[s], y[s], c, slice)
		meanAbs := 0.0
		for _, xv := range slice {
			meanAbs += math.Abs(xv) / float64(k)
		}
		for j := range want {
			scale := 0.0
			switch name {
			case "var", "std":
				gs := dy[s]
				if name == "std" {
					gs = 0
					if y[s] != 0 {
						gs = dy[s] / (2 * y[s])
					}
				}
				scale = math.Abs(2/(float64(k)-c)*gs) * meanAbs
			case "prod":
				scale = math.Abs(want[j])
			}
			ulps := rt.elem(slice[j], want[j]).ULP
			w.check(dt, k, got[v.At(s, j)], want[j], scale, ulps, func() string {
				return fmt.Sprintf("slice %d dx[%d] (x %v, y %v, dy %v)", s, j, slice[j], y[s], dy[s])
			})
		}
	}
	return w, nil
}
