//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// checkScans runs env.CheckScan for every op of scanOps, dtype of dts and
// direction as the subtest scan_bw_<op>_<dtype><suffix>/<direction>, each
// with the given cases and seed.
func checkScans(t *testing.T, env *Env, scanOps []ops.ScanOp, dts []dtype.DType, suffix string, cases []ScanCase, seed uint64) {
	for _, op := range scanOps {
		for _, dt := range dts {
			for _, reverse := range []bool{false, true} {
				dir := "forward"
				if reverse {
					dir = "reverse"
				}
				t.Run("scan_bw_"+op.String()+"_"+dt.Suffix()+suffix+"/"+dir, func(t *testing.T) {
					report(t, env.CheckScan(op, dt, reverse, cases, seed))
				})
			}
		}
	}
}

func TestScanBackwardGPU(t *testing.T) {
	env := testEnv(t)
	cases := ScanCases(quick())
	checkScans(t, env, ops.ScanOps(), dtype.All, "", cases, 42)
}

// TestScanNonFiniteGPU runs the ScanNonFinite cases alone (TestScanBackwardGPU
// runs them too, among the others) for cumprod and logcumsumexp, every
// dtype and direction: ±inf and NaN placed where PyTorch's formulas turn
// them into NaN or a signed infinity at other elements.
func TestScanNonFiniteGPU(t *testing.T) {
	env := testEnv(t)
	cases := ScanNonFiniteCases(quick())
	checkScans(t, env, []ops.ScanOp{ops.ScanCumprod, ops.ScanLogcumsumexp}, dtype.All, "_nonfinite", cases, 44)
}

// TestScanUnderflowGPU runs the ScanUnderflow cases alone (TestScanBackwardGPU
// runs them too) for cumprod, every dtype and direction: y underflows to 0
// in an early tile of the col mapping's chained tiles with ±inf and NaN
// dy and zeros in later ones, where PyTorch has NaN up to the infinite dy
// (the forward state tells the underflow from a zero), and the same data
// on the row mapping.
func TestScanUnderflowGPU(t *testing.T) {
	env := testEnv(t)
	cases := ScanUnderflowCases(quick())
	checkScans(t, env, []ops.ScanOp{ops.ScanCumprod}, dtype.All, "_underflow", cases, 47)
}

// TestScanStripGPU runs the suite for f16 and bf16 cummax and cummin with Run
// taking the colstrip kernel wherever the device and the operands allow
// it (ScanStripEnv=always; by itself Run takes it only where its strips
// fill the GPU).
func TestScanStripGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_STRIP", "always")
	env := testEnv(t)
	cases := ScanCases(quick())
	checkScans(t, env, []ops.ScanOp{ops.ScanCummax, ops.ScanCummin}, []dtype.DType{dtype.F16, dtype.BF16}, "_colstrip", cases, 43)
}

// TestScanTallGPU runs the tall mapping's cases with plans taking the
// tall kernel wherever the shape allows (BARACUDA_SCAN_TALL=always; by
// itself a plan takes it for axes of 4096 and more over at most 64
// slices) and the tallrow kernel nowhere (BARACUDA_SCAN_TALLROW=never, so
// that the tall kernel serves 4 columns too), every op, dtype and
// direction.
func TestScanTallGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_TALL", "always")
	t.Setenv("BARACUDA_SCAN_TALLROW", "never")
	env := testEnv(t)
	cases := ScanTallCases(quick())
	checkScans(t, env, ops.ScanOps(), dtype.All, "_tall", cases, 45)
}

// TestScanTallRowGPU runs the tallrow kernel's cases with plans taking it
// for every outer axis over 4 contiguous columns
// (BARACUDA_SCAN_TALLROW=always; by itself a plan takes it where the tall
// mapping's policy does), every op, dtype and direction; the other
// widths and layouts take the tall or col kernel, as do the (op, dtype)
// pairs the kernel is not built for (f32 and f64 cumsum, cummax, cummin).
func TestScanTallRowGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_TALLROW", "always")
	env := testEnv(t)
	cases := ScanTallRowCases(quick())
	checkScans(t, env, ops.ScanOps(), dtype.All, "_tallrow", cases, 47)
}

// TestScanCarryTallRowGPU runs the tallrow cases with every chunked
// tallrow launch taking the carry passes (BARACUDA_SCAN_CARRY=always; by
// default only cumsum and logcumsumexp take them, from 256 tiles a slice
// over at most 16 slices, which the suite's shapes do not reach), every
// op, dtype and direction: each tile's map to the workspace, each slice's
// prefix of them, and the main launch reading its carry from there, with
// ±inf, NaN, zeros and underflows among the cases.
func TestScanCarryTallRowGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_CARRY", "always")
	t.Setenv("BARACUDA_SCAN_TALLROW", "always")
	checkScans(t, testEnv(t), ops.ScanOps(), dtype.All, "_carrytallrow", ScanTallRowCases(quick()), 50)
}

// TestScanTallDefaultGPU runs the tall cases under the default policy
// (long ones take the tall kernel, the others the col kernel).
func TestScanTallDefaultGPU(t *testing.T) {
	env := testEnv(t)
	cases := ScanTallCases(quick())
	for _, op := range ops.ScanOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			t.Run("scan_bw_"+op.String()+"_"+dt.Suffix()+"_talldefault", func(t *testing.T) {
				report(t, env.CheckScan(op, dt, true, cases, 46))
			})
		}
	}
}

func TestScanVectorsGPU(t *testing.T) {
	env := testEnv(t)
	for _, dt := range dtype.All {
		t.Run(dt.Suffix(), func(t *testing.T) {
			report(t, env.CheckScanVectors(dt))
		})
	}
}

// TestScanRunZeroAllocs: a warm Run that chains tiles (memset, both
// forward-state passes and the scan kernel) allocates nothing on the Go
// heap.
func TestScanRunZeroAllocs(t *testing.T) {
	env := testEnv(t)
	shape := []int{3000, 40}
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: ops.ScanCummax, DType: dtype.F32, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	if plan.WorkspaceSize() == 0 {
		t.Fatal("the case must chain tiles")
	}
	var bufs []driver.Buffer
	defer func() {
		for _, b := range bufs {
			env.Ctx.Free(b)
		}
	}()
	alloc := func(n int64) driver.Buffer {
		b, err := env.Ctx.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Ctx.Memset8(b, 0); err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		return b
	}
	n := int64(shape[0] * shape[1] * 4)
	args := ops.ScanArgs{DY: ops.NewTensor(alloc(n), dtype.F32, shape...), X: ops.NewTensor(alloc(n), dtype.F32, shape...),
		DX: ops.NewTensor(alloc(n), dtype.F32, shape...), Workspace: alloc(plan.WorkspaceSize())}
	if err := plan.Run(env.Stream, &args); err != nil {
		t.Fatal(err)
	}
	var runErr error
	allocs := testing.AllocsPerRun(100, func() {
		if err := plan.Run(env.Stream, &args); err != nil {
			runErr = err
		}
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	if err := env.Stream.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per warm Run, want 0", allocs)
	}
}
