//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/internal/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func TestReduceBackwardGPU(t *testing.T) {
	env := testEnv(t)
	cases := ReduceCases(quick())
	for _, op := range ops.ReduceOps() {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 42))
			})
		}
	}
}

// TestReduceOneGPU runs the suite for Var and Std with the one-pass col
// split forced (Run takes it by itself only for x larger than L2), so that
// its split cases reach the "one" kernel.
func TestReduceOneGPU(t *testing.T) {
	t.Setenv(ops.ReduceOneEnv, "always")
	env := testEnv(t)
	cases := ReduceCases(quick())
	for _, op := range []ops.ReduceOp{ops.ReduceVar, ops.ReduceStd} {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 43))
			})
		}
	}
}

func TestReduceVectorsGPU(t *testing.T) {
	env := testEnv(t)
	for _, dt := range dtype.All {
		t.Run(dt.Suffix(), func(t *testing.T) {
			report(t, env.CheckReduceVectors(dt))
		})
	}
}
