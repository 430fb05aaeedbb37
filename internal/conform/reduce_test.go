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

// TestTieSliceData: the tie inputs hold what ReduceTieCases and
// ReduceTieEdgeCases promise: with a tenth and a half of the slice
// saturated, at least that many elements equal the extreme (prod: zeros
// at every tenth, every other position); one extreme (zero) at each end,
// or at the first or last position alone.
func TestTieSliceData(t *testing.T) {
	const k = 1000
	for _, op := range []string{"max", "min", "prod"} {
		for _, data := range []string{DataEqual, DataSaturated, DataHalf, DataEnds, DataFirst, DataLast} {
			x := make([]float64, k)
			for i := range x {
				x[i] = float64((i*7919)%1009)/100 - 5.005 // distinct, no zero
			}
			tieSlice(op, data, x)
			ext := x[0]
			for _, v := range x {
				if op == "max" && v > ext || op == "min" && v < ext {
					ext = v
				}
			}
			if op == "prod" {
				ext = 0
			}
			var at []int
			for i, v := range x {
				if v == ext {
					at = append(at, i)
				}
			}
			want := map[string]int{DataEqual: k, DataSaturated: k / 10, DataHalf: k / 2, DataEnds: 2, DataFirst: 1, DataLast: 1}[data]
			switch data {
			case DataEnds, DataFirst, DataLast:
				first, last := data != DataLast, data != DataFirst
				if len(at) != want || first && at[0] != 0 || last && at[len(at)-1] != k-1 {
					t.Errorf("%s %s: extremes at %v", op, data, at)
				}
			default:
				if len(at) < want {
					t.Errorf("%s %s: %d elements equal the extreme, want at least %d", op, data, len(at), want)
				}
			}
		}
	}
}
