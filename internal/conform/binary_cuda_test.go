//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func TestBinaryBackwardGPU(t *testing.T) {
	env := testEnv(t)
	cases := BinaryCases(quick())
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			t.Run("binary_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckBinary(op, dt, cases, 42))
			})
		}
	}
}

func TestBinaryVectorsGPU(t *testing.T) {
	env := testEnv(t)
	for _, dt := range dtype.All {
		t.Run(dt.Suffix(), func(t *testing.T) {
			report(t, env.CheckBinaryVectors(dt))
		})
	}
}
