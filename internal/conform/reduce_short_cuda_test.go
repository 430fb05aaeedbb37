//go:build cuda

package conform

import (
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestReduceShortGPU runs every op and dtype on the short mapping's cases:
// "always" with ReduceShortCases under BARACUDA_REDUCE_SHORT=always (the
// plans take the mapping wherever the shape allows it; the strided and
// unaligned layouts fall back to the other paths at Run), and "default"
// with ReduceShortLargeCases, whose plans take it by themselves (checked
// by name). Each case runs with dy and y in the keepdim form, then in the
// reduced form, which must give the same bits, with guard bands around
// every operand.
func TestReduceShortGPU(t *testing.T) {
	env := testEnv(t)
	for _, form := range []string{"always", "default"} {
		t.Run(form, func(t *testing.T) {
			cases := ReduceShortLargeCases(quick())
			if form == "always" {
				t.Setenv("BARACUDA_REDUCE_SHORT", "always")
				cases = ReduceShortCases(quick())
			} else {
				for _, c := range cases {
					p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceProd, DType: dtype.BF16, Shape: c.Shape, Axis: c.Axis})
					if err != nil {
						t.Fatal(err)
					}
					if name := p.Kernel().Name; !strings.HasSuffix(name, "_short") {
						t.Errorf("%v axis %d: plan kernel %s, want the short mapping", c.Shape, c.Axis, name)
					}
				}
			}
			for _, op := range ops.ReduceOps() {
				for _, dt := range dtype.All {
					t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckReduce(op, dt, cases, 47))
					})
				}
			}
		})
	}
}
