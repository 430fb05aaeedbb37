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

// TestScanShortWideGPU runs the wide forms' cases (ScanShortWideCases) and
// the short mapping's (ScanShortCases) with BARACUDA_SCAN_SHORT=always and
// BARACUDA_SCAN_SHORT_WIDE=always: every staged block at its most slices a
// thread, the outer form for rows of any length.
func TestScanShortWideGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_SHORT", "always")
	t.Setenv("BARACUDA_SCAN_SHORT_WIDE", "always")
	env := testEnv(t)
	cases := append(ScanShortWideCases(quick()), ScanShortCases(quick())...)
	checkScans(t, env, ops.ScanOps(), dtype.All, "_shortwide", cases, 47)
}

// TestScanShortFirstGPU runs the short mapping's cases and the wide forms'
// with BARACUDA_SCAN_SHORT_WIDE=never: the first forms (a slice a thread,
// runs of 8, the outer axis read in place), which the knob keeps for A/B
// timings.
func TestScanShortFirstGPU(t *testing.T) {
	t.Setenv("BARACUDA_SCAN_SHORT", "always")
	t.Setenv("BARACUDA_SCAN_SHORT_WIDE", "never")
	env := testEnv(t)
	cases := append(ScanShortCases(quick()), ScanShortWideCases(true)...)
	checkScans(t, env, ops.ScanOps(), dtype.All, "_shortfirst", cases, 48)
}
