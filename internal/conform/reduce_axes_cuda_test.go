//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestReduceAxesGPU runs the multi-axis suite (the seg and single paths)
// for every op and dtype.
func TestReduceAxesGPU(t *testing.T) {
	env := testEnv(t)
	cases := ReduceAxesCases(quick())
	for _, op := range ops.ReduceOps() {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix()+"_axes", func(t *testing.T) {
				report(t, env.CheckReduceAxes(op, dt, cases, 41))
			})
		}
	}
}

// TestReduceAxesClusterGPU runs the multi-axis suite for Var and Std with
// the clustered seg kernel forced (Run takes it by itself only where its
// blocks are at least as many as the SMs; on a GPU without clusters the
// plans keep the two passes).
func TestReduceAxesClusterGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_SEGC", "always")
	env := testEnv(t)
	cases := ReduceAxesCases(quick())
	for _, op := range []ops.ReduceOp{ops.ReduceVar, ops.ReduceStd} {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix()+"_segc", func(t *testing.T) {
				report(t, env.CheckReduceAxes(op, dt, cases, 43))
			})
		}
	}
}
