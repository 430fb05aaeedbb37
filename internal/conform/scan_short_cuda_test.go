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
	checkScans(t, env, ops.ScanOps(), dtype.All, "_short", cases, 45)
}

// TestScanShortDefaultGPU runs the cases the default policy takes the short
// mapping for by itself (ScanShortDefaultCases, at least 2^14 slices).
func TestScanShortDefaultGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_SHORT", "")
	env := testEnv(t)
	cases := ScanShortDefaultCases(quick())
	checkScans(t, env, ops.ScanOps(), dtype.All, "_shortdefault", cases, 46)
}
