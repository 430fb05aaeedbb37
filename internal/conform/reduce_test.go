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

// TestReduceFlatRowsCasesReachFlat: the contiguous ReduceFlatRowsCases
// whose inner extent I divides a pack (8 elements of f16/bf16, 4 of f32)
// with k*I a multiple of it are ones sum's plan gives the flat kernel,
// none under BARACUDA_REDUCE_FLAT_ROWS=never, and the others keep their
// paths (I a multiple of a pack: flat; else the row and col kernels), so that
// TestReduceFlatRowsGPU reaches the rows layout and its fallback.
func TestReduceFlatRowsCasesReachFlat(t *testing.T) {
	reached := 0
	for _, rows := range []string{"", "never"} {
		t.Setenv("BARACUDA_REDUCE_FLAT_ROWS", rows)
		for _, c := range ReduceFlatRowsCases(false, true) {
			if c.Layouts[0](c.Shape).Name != Contiguous(c.Shape).Name {
				continue
			}
			for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
				n := 16 / dt.Size()
				k, inner := c.Shape[c.Axis], c.Shape[len(c.Shape)-1]
				rowsLayout := inner < n && n%inner == 0 && k*inner%n == 0
				p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceSum, DType: dt, Shape: c.Shape, Axis: c.Axis})
				if err != nil {
					t.Fatal(err)
				}
				flat := strings.HasSuffix(p.Kernel().Name, "_flat")
				// I a multiple of a pack: the adjacent-slice layout, either way.
				if want := inner%n == 0 || rowsLayout && rows == ""; flat != want {
					t.Errorf("sum %s %s rows=%q: flat kernel %v, want %v", dt, c, rows, flat, want)
				}
				if flat && rowsLayout {
					reached++
				}
			}
		}
	}
	if reached == 0 {
		t.Error("no case reaches the rows layout")
	}
}

// TestReduceFlatStatsCasesReachFlat: under BARACUDA_REDUCE_FLAT_STATS=always
// cases of TestReduceFlatStatsGPU reach var and std's flat path in every
// dtype, among them I == 1, I dividing a pack, I equal to a pack's
// elements and a correction with N - c <= 0; by default long cases do in
// every dtype.
func TestReduceFlatStatsCasesReachFlat(t *testing.T) {
	for _, env := range []string{"always", ""} {
		t.Setenv("BARACUDA_REDUCE_FLAT_STATS", env)
		cases := append(ReduceCases(false), ReduceFlatRowsCases(false, false)...)
		for _, dt := range dtype.All {
			var inner1, rows, full, corr, long int
			for _, c := range cases {
				if c.Layouts[0](c.Shape).Name != Contiguous(c.Shape).Name || product(c.Shape) == 0 {
					continue
				}
				p, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceStd, DType: dt, Shape: c.Shape, Axis: c.Axis,
					Correction: c.Correction})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(p.Kernel().Name, "_flat") {
					continue
				}
				axis := (c.Axis + len(c.Shape)) % len(c.Shape)
				inner := product(c.Shape[axis+1:])
				switch {
				case inner == 1:
					inner1++
				case inner == int64(16/dt.Size()):
					full++
				default:
					rows++
				}
				if float64(c.Shape[axis]) <= c.Correction {
					corr++
				}
				if c.Shape[axis] >= 1<<20 {
					long++
				}
			}
			if env == "always" && (inner1 == 0 || full == 0 || corr == 0 || rows == 0 && dt != dtype.F64) {
				t.Errorf("%s: the flat path takes %d cases of I == 1, %d of rows, %d of I == N, %d with N <= c", dt, inner1, rows, full, corr)
			}
			if env == "" && long == 0 {
				t.Errorf("%s: no long case takes the flat path by default", dt)
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
