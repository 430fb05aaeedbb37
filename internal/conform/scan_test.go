package conform

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// TestScanNonFiniteCasesDecide: the ScanNonFinite cases of cumprod and
// logcumsumexp give the reference NaN, +inf, -inf and finite values in
// every dtype and direction, and they run the row and the col kernel,
// each with one tile and with chained tiles, so that the GPU run checks
// every class on every path.
func TestScanNonFiniteCasesDecide(t *testing.T) {
	for _, op := range []ops.ScanOp{ops.ScanCumprod, ops.ScanLogcumsumexp} {
		paths := map[string]bool{}
		for _, dt := range dtype.All {
			for _, reverse := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(42, uint64(op)<<16|uint64(dt)<<8))
				var nan, pinf, ninf, fin int
				for _, c := range ScanNonFiniteCases(true) {
					p, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis, Reverse: reverse})
					if err != nil {
						t.Fatal(err)
					}
					name := p.Kernel().Name
					paths[name[strings.LastIndexByte(name, '_'):]+map[bool]string{false: " one tile", true: " chained"}[p.WorkspaceSize() > 0]] = true
					slices, in := scanCaseInputs(rng, op, dt, c, reverse)
					for _, idx := range slices {
						dx := ref.ScanBackward(op.String(), gatherIdx(in[0], idx), gatherIdx(in[1], idx), gatherIdx(in[2], idx), reverse)
						for _, v := range dx {
							switch {
							case math.IsNaN(v):
								nan++
							case math.IsInf(v, 1):
								pinf++
							case math.IsInf(v, -1):
								ninf++
							default:
								fin++
							}
						}
					}
				}
				if nan == 0 || pinf == 0 || ninf == 0 || fin == 0 {
					t.Errorf("%s %s reverse=%v: reference dx has %d NaN, %d +inf, %d -inf, %d finite; want each",
						op, dt, reverse, nan, pinf, ninf, fin)
				}
			}
		}
		for _, want := range []string{"_row one tile", "_row chained", "_col one tile", "_col chained"} {
			if !paths[want] {
				t.Errorf("%s: no ScanNonFinite case runs the %s kernel (%v)", op, want[1:], paths)
			}
		}
	}
}

// TestScanShortCasesTakeShort: with BARACUDA_SCAN_SHORT=always every
// ScanShortCases and ScanShortWideCases plan of a non-empty tensor takes
// the short kernel (so TestScanShortGPU and TestScanShortWideGPU check it), and with the knob unset the default policy
// takes it for every ScanShortDefaultCases plan.
func TestScanShortCasesTakeShort(t *testing.T) {
	check := func(cases []ScanCase) {
		t.Helper()
		for _, c := range cases {
			for _, op := range ops.ScanOps() {
				for _, dt := range dtype.All {
					if !c.runs(op, dt) {
						continue
					}
					p, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis})
					if err != nil {
						t.Fatal(err)
					}
					if name := p.Kernel().Name; !strings.HasSuffix(name, "_short") {
						t.Errorf("%v %s %s: kernel %s, want the short one", c, op, dt, name)
					}
				}
			}
		}
	}
	t.Setenv("BARACUDA_SCAN_SHORT", "always")
	check(ScanShortCases(false))
	check(ScanShortWideCases(false))
	t.Setenv("BARACUDA_SCAN_SHORT", "")
	check(ScanShortDefaultCases(false))
}

// TestScanUnderflowCasesDecide: the ScanUnderflow cases run the col kernel
// with chained tiles and the row kernel for comparison, and in every
// dtype and direction the reference dx of their col cases is NaN both
// where y is a number other than 0 (before the underflow) and more than
// 512 elements past the first 0 y (in a later tile than the one where y
// became 0) of slices that end in a 0 y, not NaN: the values a tile
// taking a 0 y before it as "a zero came" would give as 0 or ±inf.
func TestScanUnderflowCasesDecide(t *testing.T) {
	op := ops.ScanCumprod
	paths := map[string]bool{}
	for _, dt := range dtype.All {
		for _, reverse := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(47, uint64(op)<<16|uint64(dt)<<8))
			var before, later, zeros int
			for _, c := range ScanUnderflowCases(true) {
				p, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis, Reverse: reverse})
				if err != nil {
					t.Fatal(err)
				}
				name := p.Kernel().Name
				path := name[strings.LastIndexByte(name, '_'):] + map[bool]string{false: " one tile", true: " chained"}[p.WorkspaceSize() > 0]
				paths[path] = true
				slices, in := scanCaseInputs(rng, op, dt, c, reverse)
				if path != "_col chained" {
					continue
				}
				for _, idx := range slices {
					n := len(idx)
					x, y := gatherIdx(in[1], idx), gatherIdx(in[2], idx)
					dx := ref.ScanBackward(op.String(), gatherIdx(in[0], idx), x, y, reverse)
					at := func(q int) int {
						if reverse {
							return n - 1 - q
						}
						return q
					}
					if y[at(n-1)] != 0 {
						continue
					}
					zeros++
					pu := -1
					for q := 0; q < n; q++ {
						k := at(q)
						if pu < 0 && y[k] == 0 {
							pu = q
						}
						if math.IsNaN(dx[k]) && y[k] != 0 {
							before++
						}
						if math.IsNaN(dx[k]) && pu >= 0 && q > pu+512 {
							later++
						}
					}
				}
			}
			if before == 0 || later == 0 || zeros == 0 {
				t.Errorf("%s reverse=%v: col chained cases: %d slices end in a 0 y; reference dx NaN %d times before the underflow, %d times later; want each",
					dt, reverse, zeros, before, later)
			}
		}
	}
	for _, want := range []string{"_row chained", "_col chained", "_col one tile"} {
		if !paths[want] {
			t.Errorf("no ScanUnderflow case runs the %s kernel (%v)", want[1:], paths)
		}
	}
}
