//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestScanShortGPU runs the short mapping's cases (ScanShortCases) for every
// op, dtype and direction with BARACUDA_SCAN_SHORT=always, so that every axis
// of at most 32 elements takes the short kernel however few slices
// (TestScanShortCasesTakeShort checks the plans' choice without a GPU).
func TestScanShortGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_SHORT", "always")
	env := testEnv(t)
	cases := ScanShortCases(quick())
	for _, op := range ops.ScanOps() {
		for _, dt := range dtype.All {
			for _, reverse := range []bool{false, true} {
				dir := "forward"
				if reverse {
					dir = "reverse"
				}
				t.Run("scan_bw_"+op.String()+"_"+dt.Suffix()+"_short/"+dir, func(t *testing.T) {
					report(t, env.CheckScan(op, dt, reverse, cases, 45))
				})
			}
		}
	}
}

// TestScanShortDefaultGPU runs the cases the default policy takes the short
// mapping for by itself (ScanShortDefaultCases, at least 2^14 slices).
func TestScanShortDefaultGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_SHORT", "")
	env := testEnv(t)
	cases := ScanShortDefaultCases(quick())
	for _, op := range ops.ScanOps() {
		for _, dt := range dtype.All {
			for _, reverse := range []bool{false, true} {
				dir := "forward"
				if reverse {
					dir = "reverse"
				}
				t.Run("scan_bw_"+op.String()+"_"+dt.Suffix()+"_shortdefault/"+dir, func(t *testing.T) {
					report(t, env.CheckScan(op, dt, reverse, cases, 46))
				})
			}
		}
	}
}
