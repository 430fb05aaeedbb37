//go:build cuda

package conform

import (
	"fmt"
	"math"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestScanLookBackGPU runs long scans along the innermost axis, whose many
// tiles per slice chain through the row mapping's look-back with hundreds
// of tiles in flight (walks of many windows, folds longer than the kept
// windows), once with each form of the look-back (BARACUDA_SCAN_LB=old,
// and the default). Each run passes the long-axis check against the
// float64 reference, and the two give the same bits: the fold takes the
// same values in the same order either way.
func TestScanLookBackGPU(t *testing.T) {
	skipLongInQuick(t)
	env := testEnv(t)
	shapes := []struct {
		shape []int
		axis  int
	}{{[]int{1 << 23}, 0}, {[]int{3, 1_000_003}, 1}}
	for _, op := range ops.ScanOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, l := range shapes {
				for _, reverse := range []bool{false, true} {
					dir := "forward"
					if reverse {
						dir = "reverse"
					}
					name := fmt.Sprintf("scan_bw_%s_%s/%v/axis%d/%s", op, dt.Suffix(), l.shape, l.axis, dir)
					t.Run(name, func(t *testing.T) {
						var dx [2][]float64
						for i, mode := range []string{"old", "new"} {
							t.Setenv("BARACUDA_SCAN_LB", mode)
							w, got, err := env.longScanDX(op, dt, l.shape, l.axis, reverse)
							if err != nil {
								t.Fatalf("%s: %v", mode, err)
							}
							t.Logf("look-back %s:", mode)
							w.report(t)
							dx[i] = got
						}
						diffs := 0
						for k := range dx[0] {
							if math.Float64bits(dx[0][k]) != math.Float64bits(dx[1][k]) {
								if diffs < 8 {
									t.Errorf("dx[%d]: %v with the old look-back, %v with the new", k, dx[0][k], dx[1][k])
								}
								diffs++
							}
						}
						if diffs > 0 {
							t.Errorf("%d of %d elements differ between the two look-backs", diffs, len(dx[0]))
						}
					})
				}
			}
		}
	}
}
