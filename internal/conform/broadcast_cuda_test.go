//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func TestBinaryBroadcastGPU(t *testing.T) {
	env := testEnv(t)
	cases := BroadcastCases(quick())
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			t.Run("bcast_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckBinaryBroadcast(op, dt, cases, 41))
			})
		}
	}
}
