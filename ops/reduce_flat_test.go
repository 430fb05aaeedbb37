package ops

import (
	"math/bits"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// flatSliceModel is the slice of element e of pack q as the flat kernel
// finds it from f (reduce_flat, red_flat_kq, red_flat_em in
// gen/reduce_flat.cuh): bc_div by fmagic[0] for the outer index (fip != 0)
// or the slice itself (fip == 0), then the first slice of the pack and the
// element's offset from it.
func flatSliceModel(f reduceFlat, n, q, e int64) int64 {
	div := func(v int64, i int) int64 {
		u := uint64(v)
		if f.magic[i] != 0 {
			u, _ = bits.Mul64(u, f.magic[i])
		}
		return int64(u >> f.shift[i])
	}
	o := div(q, 0)
	switch {
	case f.ip == 0:
		return o
	case f.ip < 0 && n > 2:
		return o*-f.ip + e&(-f.ip-1)
	default:
		return (o*f.ip+q-div(q, 1)*f.ip)*n + e&(n-1)
	}
}

// flatRowsLoadModel is the element of dy (or y) that red_flat_load puts at
// element e of its pack where fip < 0: the 32-bit words a, b, a, b of the
// I values at the pack's first slice (b is a again for 4 bytes of them).
func flatRowsLoadModel(size, inner, e int64) int64 {
	byteAt := e * size
	word := byteAt / 4
	src := int64(0)
	if inner*size == 8 {
		src = word % 2
	}
	return (src*4 + byteAt%4) / size
}

// TestReduceFlatRows: the layout whose packs hold rows of I slices (I
// divides the pack's N elements and k*I is a multiple of N), its division
// constants, and, for it and the other two layouts, that the kernel's
// index math finds every element's slice (x seen as [O, k, I]: element i
// is in slice (i / (k*I))*I + i mod I).
func TestReduceFlatRows(t *testing.T) {
	for _, c := range []struct {
		dt    dtype.DType
		shape []int
		axis  int
		packs int64
		ip    int64
		div0  int64
	}{
		{dtype.BF16, []int{4194304, 4}, 0, 1 << 21, -4, 1 << 21},
		{dtype.BF16, []int{4096, 2}, 0, 1024, -2, 1024},
		{dtype.F16, []int{3, 6, 4}, 1, 9, -4, 3}, // 3 outer indices, 3 packs each
		{dtype.F32, []int{5, 2, 2}, 1, 5, -2, 1}, // a pack per outer index
		{dtype.F32, []int{2, 1 << 10, 2}, 1, 1024, -2, 512},
		{dtype.BF16, []int{4095, 2}, 0, 0, 0, 0},       // k*I = 8190
		{dtype.BF16, []int{7, 4}, 0, 0, 0, 0},          // k*I = 28
		{dtype.F16, []int{64, 3}, 0, 0, 0, 0},          // I = 3 divides no N
		{dtype.F32, []int{9, 2}, 0, 0, 0, 0},           // k*I = 18
		{dtype.F64, []int{8, 2}, 0, 8, 1, 8},           // I == N: the adjacent-slice layout
		{dtype.BF16, []int{4096, 8}, 0, 4096, 1, 4096}, // I == N
		{dtype.F32, []int{4096, 4}, 0, 4096, 1, 4096},
	} {
		n := int64(16 / c.dt.Size())
		f := flatGeometry(c.shape, c.axis, numel(c.shape), c.dt.Size(), true)
		if f.packs != c.packs || f.ip != c.ip {
			t.Errorf("%s %v axis %d: packs %d ip %d, want %d %d", c.dt, c.shape, c.axis, f.packs, f.ip, c.packs, c.ip)
			continue
		}
		if c.ip < 0 {
			if off := flatGeometry(c.shape, c.axis, numel(c.shape), c.dt.Size(), false); off.packs != 0 {
				t.Errorf("%s %v axis %d: rows off, packs %d", c.dt, c.shape, c.axis, off.packs)
			}
		}
		if f.packs == 0 {
			continue
		}
		if m, sh := divMagic(c.div0); f.magic[0] != m || f.shift[0] != sh {
			t.Errorf("%s %v axis %d: divisor 0 is not %d", c.dt, c.shape, c.axis, c.div0)
		}
		k, inner := int64(c.shape[c.axis]), numel(c.shape[c.axis+1:])
		for q := int64(0); q < f.packs; q++ {
			for e := int64(0); e < n; e++ {
				i := q*n + e
				want := (i/(k*inner))*inner + i%inner
				if got := flatSliceModel(f, n, q, e); got != want {
					t.Fatalf("%s %v axis %d: pack %d element %d in slice %d, want %d", c.dt, c.shape, c.axis, q, e, got, want)
				}
				if f.ip < 0 {
					kq := flatSliceModel(f, n, q, 0)
					if got := kq + flatRowsLoadModel(int64(c.dt.Size()), inner, e); got != want {
						t.Fatalf("%s %v axis %d: pack %d element %d gets dy of slice %d, want %d", c.dt, c.shape, c.axis, q, e, got, want)
					}
				}
			}
		}
	}
}

// TestReduceFlatRowsPlan: the bench's [4194304, 4] along axis 0 takes the
// flat kernel in every dtype (the ops without statistics always, max, min
// and prod as their slices split; var and std too, on their flat path,
// whose packs hold rows of the 4 slices for f16 and bf16 and one row for
// f32: reduce_flat_stats.go), off under reduceFlatRowsEnv=never for the
// 16-bit dtypes, whose packs span rows; unaligned or strided operands
// keep Run off it.
func TestReduceFlatRowsPlan(t *testing.T) {
	for _, env := range []string{"", "never"} {
		t.Setenv(reduceFlatRowsEnv, env)
		for _, op := range ReduceOps() {
			for _, dt := range dtype.All {
				p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: []int{4194304, 4}, Axis: 0, Correction: 1})
				if err != nil {
					t.Fatal(err)
				}
				want := (!op.hasStats() || op.provisional()) && (env == "" || dt.Size() >= 4) ||
					(op == ReduceVar || op == ReduceStd) && (env == "" && dt.Size() == 2 || dt == dtype.F32)
				if got := p.flat.packs > 0; got != want {
					t.Errorf("%s %s %s=%q: flat %v, want %v", op, dt, reduceFlatRowsEnv, env, got, want)
				}
				if !want {
					continue
				}
				if got := p.Kernel().Name; got != "reduce_bw_"+op.String()+"_"+dt.Suffix()+"_flat" {
					t.Errorf("%s %s: kernel %s", op, dt, got)
				}
				if op.provisional() && p.ws < flatFixSize(op, dt, p.slices, p.flat.packs, p.k) {
					t.Errorf("%s %s: workspace %d", op, dt, p.ws)
				}
				a := redArgs(p)
				if !p.dense(&a) {
					t.Errorf("%s %s: contiguous operands do not take the flat kernel", op, dt)
				}
				a.DY.Buf.Addr += 8
				if p.dense(&a) {
					t.Errorf("%s %s: dy 8-byte aligned takes the flat kernel", op, dt)
				}
			}
		}
	}
}

// TestReduceFlatStatsGeometry: the statistics pass's tiles (a block each:
// packs [c*chunk, min((c+1)*chunk, P)) of outer index o = t / nchunks)
// cover every pack of x once, every element's partial goes to its own
// slice's entry of chunk c (ws[c*S + o*G + e mod G], inside the partials),
// and the tiles are about redTargetThreads/redBlock where the packs allow.
func TestReduceFlatStatsGeometry(t *testing.T) {
	for _, c := range []struct {
		dt    dtype.DType
		shape []int
		axis  int
		tiles int64
	}{
		{dtype.BF16, []int{4194304, 4}, 0, 1024},
		{dtype.F32, []int{4194304, 2}, 0, 1024},
		{dtype.BF16, []int{3, 4096, 2}, 1, 3},   // 1024 packs an outer index: one tile each
		{dtype.F16, []int{5, 40000, 4}, 1, 100}, // 20000 packs: 20 tiles each
		{dtype.F32, []int{1 << 20}, 0, 256},     // I == 1
		{dtype.F64, []int{7, 6}, 1, 7},          // I == 1, k = 6
		{dtype.F32, []int{4194304, 4}, 0, 1024}, // I == N: a pack is one row of the 4 slices
		{dtype.F64, []int{3, 5000, 2}, 1, 15},   // I == N == 2: 5000 packs an outer index, 5 tiles each
		{dtype.BF16, []int{2, 4096, 8}, 1, 8},   // I == N == 8: 4096 packs an outer index, 4 tiles each
	} {
		n := int64(16 / c.dt.Size())
		f := flatGeometry(c.shape, c.axis, numel(c.shape), c.dt.Size(), true)
		if f.packs == 0 || f.ip > 1 {
			t.Errorf("%s %v: no flat layout for the statistics pass", c.dt, c.shape)
			continue
		}
		k, inner := int64(c.shape[c.axis]), numel(c.shape[c.axis+1:])
		slices := numel(c.shape) / k
		g := flatStatsGeometry(f, slices, k, c.dt.Size())
		if g.tiles != c.tiles {
			t.Errorf("%s %v: %d tiles, want %d", c.dt, c.shape, g.tiles, c.tiles)
		}
		grp := flatStatsGroups(f, n)
		if want := min(inner, n); grp != want || f.ip == 1 && inner != n {
			t.Errorf("%s %v: %d slices a pack (ip %d), want %d", c.dt, c.shape, grp, f.ip, want)
		}
		per := k * grp / n
		seen := make([]bool, f.packs)
		for tile := int64(0); tile < g.tiles; tile++ {
			o, ch := tile/g.nchunks, tile%g.nchunks
			for q := o*per + ch*g.chunk; q < o*per+min(per, (ch+1)*g.chunk); q++ {
				if seen[q] {
					t.Fatalf("%s %v: pack %d in two tiles", c.dt, c.shape, q)
				}
				seen[q] = true
				for e := int64(0); e < n; e++ {
					i := q*n + e
					want := (i/(k*inner))*inner + i%inner
					s := o*grp + e%grp
					if s != want || ch*slices+s >= slices*g.nchunks {
						t.Fatalf("%s %v: pack %d element %d to slice %d chunk %d, want slice %d", c.dt, c.shape, q, e, s, ch, want)
					}
				}
			}
		}
		for q, ok := range seen {
			if !ok {
				t.Fatalf("%s %v: pack %d in no tile", c.dt, c.shape, q)
			}
		}
		// The apply pass's walk (red_flat_apply_tiles): tile tiles-1-b,
		// each thread's packs q0 + j*redBlock for j from its last down,
		// a batch at a time (RedFlatApplyBatch: 4 packs, for 16-bit
		// dtypes 2 or 1 by the build), covers every pack once.
		for _, redFlatBatch := range []int64{1, 2, 4} {
			testFlatApplyWalk(t, c.dt, c.shape, g, per, f.packs, redFlatBatch)
		}
	}
}

// testFlatApplyWalk checks that red_flat_apply_tiles's walk with batch
// packs at a time reaches every one of the packs once.
func testFlatApplyWalk(t *testing.T, dt dtype.DType, shape []int, g reduceGeom, per, packs, redFlatBatch int64) {
	t.Helper()
	seen := make([]bool, packs)
	{
		for b := int64(0); b < g.tiles; b++ {
			tile := g.tiles - 1 - b
			o, ch := tile/g.nchunks, tile%g.nchunks
			q1 := o*per + min(per, (ch+1)*g.chunk)
			for th := int64(0); th < redBlock; th++ {
				q0 := o*per + ch*g.chunk + th
				n := int64(0)
				if q0 < q1 {
					n = (q1 - q0 + redBlock - 1) / redBlock
				}
				for j := n - 1; j >= 0; j -= redFlatBatch {
					for u := int64(0); u < redFlatBatch && j-u >= 0; u++ {
						q := q0 + (j-u)*redBlock
						if q >= q1 || seen[q] {
							t.Fatalf("%s %v batch %d: apply pass reaches pack %d twice or past its tile", dt, shape, redFlatBatch, q)
						}
						seen[q] = true
					}
				}
			}
		}
		for q, ok := range seen {
			if !ok {
				t.Fatalf("%s %v batch %d: the apply pass misses pack %d", dt, shape, redFlatBatch, q)
			}
		}
	}
}

// TestReduceFlatStatsPlan: var and std take the flat path on the
// bench's [4194304, 4] along axis 0 (I divides or equals a pack: f16,
// bf16, f32, and f64 at I = 2) and on few long innermost slices, with a
// workspace for its partials and totals; not where reduceFlatStatsEnv is
// "never", nor for I == 1 under "outer", nor for I a multiple of a pack
// above it; where slices do not split only under "always"; and Warm then
// has no flat kernel to load where it is off.
func TestReduceFlatStatsPlan(t *testing.T) {
	for _, c := range []struct {
		op    ReduceOp
		dt    dtype.DType
		shape []int
		axis  int
		env   string
		want  bool
	}{
		{ReduceVar, dtype.BF16, []int{4194304, 4}, 0, "", true},
		{ReduceStd, dtype.F16, []int{4194304, 2}, 0, "", true},
		{ReduceStd, dtype.F32, []int{4194304, 2}, 0, "", true},
		{ReduceVar, dtype.F32, []int{4194304, 4}, 0, "", true}, // I == N: a pack is a row of the 4 slices
		{ReduceVar, dtype.F64, []int{4194304, 2}, 0, "", true},
		{ReduceStd, dtype.F32, []int{4194304, 4}, 0, "outer", true},
		{ReduceVar, dtype.F32, []int{1048576, 8}, 0, "", false}, // I == 2N
		{ReduceVar, dtype.BF16, []int{4194304, 4}, 0, "never", false},
		{ReduceVar, dtype.BF16, []int{4194303, 4}, 0, "", false}, // k*I no multiple of a pack
		{ReduceVar, dtype.F32, []int{1 << 20}, 0, "", true},      // I == 1, split slices
		{ReduceStd, dtype.BF16, []int{4, 1 << 22}, 1, "", true},
		{ReduceVar, dtype.F32, []int{1 << 20}, 0, "outer", false},
		{ReduceVar, dtype.F32, []int{1 << 20}, 0, "always", true},
		{ReduceVar, dtype.F32, []int{4096, 4096}, 1, "", false}, // slices not split
		{ReduceStd, dtype.BF16, []int{8, 4}, 0, "always", true},
		{ReduceStd, dtype.BF16, []int{8, 4}, 0, "", false}, // slices not split
	} {
		t.Setenv(reduceFlatStatsEnv, c.env)
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axis: c.axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if p.flatSt != c.want || (p.flatK != nil) != c.want || (p.flat.packs > 0) != c.want {
			t.Errorf("%s %s %v %s=%q: flat path %v (kernel %v, packs %d), want %v", c.op, c.dt, c.shape, reduceFlatStatsEnv, c.env,
				p.flatSt, p.flatK != nil, p.flat.packs, c.want)
			continue
		}
		if !c.want {
			continue
		}
		if need := p.slices * (p.flatG.nchunks + 1) * redAccSize(c.dt); p.ws < need {
			t.Errorf("%s %s %v: workspace %d, the flat path needs %d", c.op, c.dt, c.shape, p.ws, need)
		}
		if got := p.Kernel().Name; got != "reduce_bw_"+c.op.String()+"_"+c.dt.Suffix()+"_flat" {
			t.Errorf("%s %s %v: kernel %s", c.op, c.dt, c.shape, got)
		}
		if a := redArgs(p); !p.dense(&a) {
			t.Errorf("%s %s %v: contiguous operands do not take the flat path", c.op, c.dt, c.shape)
		}
	}
}
