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
