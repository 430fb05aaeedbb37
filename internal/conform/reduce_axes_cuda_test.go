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
