package conform

import (
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestReduceStripCasesReachStrip: under ReduceStripEnv=always every
// contiguous strip case is one the strip kernels cut, clustered and in one
// block (ReduceStripClusterEnv=never), for every op with statistics and
// every dtype, so that TestReduceStripGPU runs it on each form.
func TestReduceStripCasesReachStrip(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_STRIP", "always")
	for _, form := range []struct{ env, suffix string }{{"", "_stripc"}, {"never", "_strip"}} {
		t.Setenv("BARACUDA_REDUCE_STRIPC", form.env)
		for _, c := range ReduceStripCases(false) {
			if c.Layouts[0](c.Shape).Name != Contiguous(c.Shape).Name {
				continue
			}
			for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd, ops.ReduceVar, ops.ReduceStd} {
				for _, dt := range dtype.All {
					p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: dt, Shape: c.Shape, Axis: c.Axis,
						Correction: c.Correction})
					if err != nil {
						t.Fatal(err)
					}
					if name := p.Kernel().Name; !strings.HasSuffix(name, form.suffix) {
						t.Errorf("%s %s %s: kernel %s, want the %s kernel", op, c, dt, name, form.suffix[1:])
					}
				}
			}
		}
	}
}
