//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// TestLpPoolBackwardGPU runs both plans (1d and 2d) through each kernel of
// the family: the p == 1 and p == 2 fast paths and the general-p kernel.
func TestLpPoolBackwardGPU(t *testing.T) {
	env := testEnv(t)
	cases := LpPoolCases(quick())
	for _, op := range lpPoolOps {
		for _, dt := range dtype.All {
			t.Run("lppool_bw_"+op+"_"+dt.Suffix(), func(t *testing.T) {
				for _, p := range LpPoolPs(op) {
					report(t, env.CheckLpPool(p, dt, cases, 42))
				}
			})
		}
	}
}

func TestLpPoolVectorsGPU(t *testing.T) {
	env := testEnv(t)
	for _, dt := range dtype.All {
		t.Run(dt.Suffix(), func(t *testing.T) {
			report(t, env.CheckLpPoolVectors(dt))
		})
	}
}
