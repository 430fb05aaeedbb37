//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
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
// split forced (Run takes it by itself only for x larger than L2, and
// never where the cluster or strip kernels run, which are kept off here),
// so that its split cases reach the "one" kernel.
func TestReduceOneGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_ONE", "always")
	t.Setenv("BARACUDA_REDUCE_CLUSTER", "never")
	t.Setenv("BARACUDA_REDUCE_STRIP", "never")
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

// TestReduceStripGPU runs the suite for the ops with statistics, with the
// strip cases, where Run may take the strip kernel wherever the shape and
// the operands allow it (ReduceStripEnv=always; Run takes it by itself
// for var and std only, for split col slices over every SM), so that every
// contiguous case whose inner extent is a multiple of a strip's slices
// reaches it: ties, zeros and NaN slices included. It runs twice: with
// the clustered form where the device has it (compute capability 9.0;
// else the one-block form again), and with the one-block form only
// (ReduceStripClusterEnv=never).
func TestReduceStripGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_STRIP", "always")
	env := testEnv(t)
	cases := append(ReduceCases(quick()), ReduceStripCases(quick())...)
	for _, form := range []string{"cluster", "block"} {
		t.Run(form, func(t *testing.T) {
			if form == "block" {
				t.Setenv("BARACUDA_REDUCE_STRIPC", "never")
			}
			for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd, ops.ReduceVar, ops.ReduceStd} {
				for _, dt := range dtype.All {
					t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckReduce(op, dt, cases, 46))
					})
				}
			}
		})
	}
}

// TestReduceClusterGPU runs the suite for the ops with statistics with the
// cluster kernel forced wherever their col slices split (Run takes it by
// itself only for some ops, and only for grids of at least a quarter of the GPU's resident blocks), so
// that the suite's split col cases reach it (the flat path, which dense
// operands would take first, and the strip kernels, which var and std
// would, are kept off). Without a compute capability 9.0 GPU the plans
// fall back to the two passes, as Run does.
func TestReduceClusterGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_CLUSTER", "always")
	t.Setenv("BARACUDA_REDUCE_FLAT", "never")
	t.Setenv("BARACUDA_REDUCE_STRIP", "never")
	env := testEnv(t)
	cases := ReduceCases(quick())
	for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd, ops.ReduceVar, ops.ReduceStd} {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 44))
			})
		}
	}
}

// TestReduceFlatGPU runs the suite for Max, Min and Prod with the flat
// path forced wherever the operands are dense (Run takes it by itself
// only where their slices would be split), so that every contiguous case
// whose shape allows 16-byte packs reaches the flat kernel and
// red_flat_fix: ties within the recorded slots and beyond them, NaN
// slices, zeros.
func TestReduceFlatGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_FLAT", "always")
	env := testEnv(t)
	cases := ReduceCases(quick())
	for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd} {
		for _, dt := range dtype.All {
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 45))
			})
		}
	}
}

// TestReduceFlatRowsGPU runs ReduceFlatRowsCases for every op and dtype
// (the tie-heavy data for max, min and prod): by default (the ops without
// statistics take the flat kernel on dense operands, max, min and prod
// where their slices split), for max, min and prod with the flat path
// forced (BARACUDA_REDUCE_FLAT=always: the short slices too), and on the
// quick cases with the rows layout off (BARACUDA_REDUCE_FLAT_ROWS=never:
// the row and col kernels). Each case runs twice and must give the same
// bits (runKeepThenReduced), inside NaN guard bands.
func TestReduceFlatRowsGPU(t *testing.T) {
	env := testEnv(t)
	for _, mode := range []struct{ name, flat, rows string }{{"default", "", ""}, {"always", "always", ""}, {"rowsoff", "", "never"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Setenv("BARACUDA_REDUCE_FLAT", mode.flat)
			t.Setenv("BARACUDA_REDUCE_FLAT_ROWS", mode.rows)
			for _, op := range ops.ReduceOps() {
				tied := op == ops.ReduceMax || op == ops.ReduceMin || op == ops.ReduceProd
				if mode.flat == "always" && !tied {
					continue // the knob is the provisional ops'
				}
				cases := ReduceFlatRowsCases(quick() || mode.rows == "never", tied)
				for _, dt := range dtype.All {
					t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckReduce(op, dt, cases, 47))
					})
				}
			}
		})
	}
}

// TestReduceFlatStatsGPU runs the suite and ReduceFlatRowsCases for var
// and std with their flat path (statistics pass, totals, apply pass)
// forced wherever the shape allows it (BARACUDA_REDUCE_FLAT_STATS=always:
// I == 1 and unsplit slices too, corrections with N - c <= 0 included), so
// that every contiguous case with whole packs reaches it; the others take
// their usual paths. The apply pass walks the statistics tiles last to
// first, and (quick cases) a pack per thread under
// BARACUDA_REDUCE_FLAT_REUSE=never.
func TestReduceFlatStatsGPU(t *testing.T) {
	t.Setenv("BARACUDA_REDUCE_FLAT_STATS", "always")
	env := testEnv(t)
	for _, reuse := range []string{"", "never"} {
		t.Run("reuse="+reuse, func(t *testing.T) {
			t.Setenv("BARACUDA_REDUCE_FLAT_REUSE", reuse)
			cases := append(ReduceCases(quick() || reuse != ""), ReduceFlatRowsCases(quick() || reuse != "", false)...)
			for _, op := range []ops.ReduceOp{ops.ReduceVar, ops.ReduceStd} {
				for _, dt := range dtype.All {
					t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckReduce(op, dt, cases, 48))
					})
				}
			}
		})
	}
}

// TestReduceUnderflowGPU: prod over slices whose products underflow to ±0
// without a zero (ReduceUnderflowCases), where the flat kernel forms
// dx = g*(±0/x) without a division (RedZeroQuot, red_quot), on the default
// paths and with the flat kernel off (the row, col and stats/apply
// kernels, which divide).
func TestReduceUnderflowGPU(t *testing.T) {
	env := testEnv(t)
	cases := ReduceUnderflowCases(quick())
	for _, flat := range []string{"", "never"} {
		t.Run("flat="+flat, func(t *testing.T) {
			t.Setenv("BARACUDA_REDUCE_FLAT", flat)
			for _, dt := range dtype.All {
				t.Run("reduce_bw_prod_"+dt.Suffix(), func(t *testing.T) {
					report(t, env.CheckReduce(ops.ReduceProd, dt, cases, 49))
				})
			}
		})
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

// TestReduceTiesGPU: max, min and prod on the tie-heavy and long-slice
// regimes (ReduceTieCases: every element of a slice equal, a tenth and a
// half of every slice saturated; one slice of 2^24, few long rows and
// columns, many slices of four, 4096x4096 along both axes), which take the
// strip kernel (max and min, 4096x4096 along axis 0), the flat path's wide mend, its
// slots and its redo, and the row and col kernels' per-slice fix. Each
// case runs twice and must give the same bits (CheckReduce); outputs lie
// in guard bands. f16 and f64 take the quick shapes.
func TestReduceTiesGPU(t *testing.T) {
	env := testEnv(t)
	for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd} {
		for _, dt := range dtype.All {
			cases := ReduceTieCases(quick() || dt == dtype.F16 || dt == dtype.F64)
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 46))
			})
		}
	}
}

// TestReduceTieEdgesGPU: max, min and prod with one tie at each end of
// every slice, with the only extreme (prod: the only zero) at the first
// or the last position, and saturated slices on operands off 16-byte
// alignment (ReduceTieEdgeCases), where Run takes the row and col kernels
// and, for split slices, the stats kernel with the apply pass's mend over
// the grid. f16 and f64 take the quick shapes.
func TestReduceTieEdgesGPU(t *testing.T) {
	env := testEnv(t)
	for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd} {
		for _, dt := range dtype.All {
			cases := ReduceTieEdgeCases(quick() || dt == dtype.F16 || dt == dtype.F64)
			t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckReduce(op, dt, cases, 47))
			})
		}
	}
}

// TestReduceTiesPathsGPU: the tie-heavy cases of 4096x4096 along axis 0
// on the paths that the default leaves: max and min on the flat path
// where the strip kernel would serve (BARACUDA_REDUCE_STRIP_TIES=never;
// prod takes it by default), off the cluster kernel (BARACUDA_REDUCE_CLUSTER=never: the stats
// kernel and the apply pass's mend), and on the strip kernel whatever the
// grid (BARACUDA_REDUCE_STRIP=always, so that the quick set's 256x256
// reaches it too), f32 and bf16.
func TestReduceTiesPathsGPU(t *testing.T) {
	for _, knob := range [][2]string{{"BARACUDA_REDUCE_STRIP_TIES", "never"}, {"BARACUDA_REDUCE_CLUSTER", "never"},
		{"BARACUDA_REDUCE_STRIP", "always"}} {
		t.Run(knob[0]+"="+knob[1], func(t *testing.T) {
			t.Setenv(knob[0], knob[1])
			env := testEnv(t)
			cases := ReduceTieSquareCases(quick())
			for _, op := range []ops.ReduceOp{ops.ReduceMax, ops.ReduceMin, ops.ReduceProd} {
				for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
					t.Run("reduce_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckReduce(op, dt, cases, 48))
					})
				}
			}
		})
	}
}
