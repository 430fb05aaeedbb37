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
// plans take the mapping wherever the shape allows it, the packed inner
// form where it serves k; the strided and unaligned layouts fall back to
// the other paths at Run), "staged" with them under staged-always (the
// staged inner form for every innermost axis), and "default" with
// ReduceShortLargeCases, whose plans take it by themselves (checked by
// name: the short or inner kernel). Each case runs with dy and y in the keepdim form, then in the
// reduced form, which must give the same bits, with guard bands around
// every operand.
func TestReduceShortGPU(t *testing.T) {
	env := testEnv(t)
	for _, form := range []string{"always", "staged", "default"} {
		t.Run(form, func(t *testing.T) {
			cases := ReduceShortLargeCases(quick())
			if form != "default" {
				t.Setenv("BARACUDA_REDUCE_SHORT", map[string]string{"always": "always", "staged": "staged-always"}[form])
				cases = ReduceShortCases(quick())
			} else {
				for _, c := range cases {
					p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceProd, DType: dtype.BF16, Shape: c.Shape, Axis: c.Axis})
					if err != nil {
						t.Fatal(err)
					}
					if name := p.Kernel().Name; !strings.HasSuffix(name, "_short") && !strings.HasSuffix(name, "_inner") {
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
