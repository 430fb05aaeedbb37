package ops

import (
	"fmt"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// bcastPrefetchStep is gen/bcast.cuh's bcast_prefetch_step: the (r, c) of
// the pack q steps after (r, jp) in a tile thread's order of steps (its jn
// packs first + k*step of row r, then of row r + 8, ... below r1), and
// whether there is one.
func bcastPrefetchStep(r int64, jp, q, jn int, r1, first, step int64) (int64, int64, bool) {
	k := jp + q
	if k >= jn {
		if jn == 1 {
			r += int64(k) * bcastWarps
			k = 0
		} else {
			r += int64(k/jn) * bcastWarps
			k %= jn
		}
	}
	return r, first + int64(k)*step, r < r1
}

// bcastAheadModel walks every thread of every tile of L as bcast_tile
// does with L.ahead = D and checks its prefetches: each is an element of
// dy's [R, C] view that the thread itself loads later (so the prefetch
// stays inside the tensors, and no thread prefetches for another), and
// every pack the thread loads but its first is prefetched exactly once,
// before its load. It returns the prefetches made.
func bcastAheadModel(t *testing.T, L *bcastLayout, N int64) int64 {
	t.Helper()
	D := int(L.ahead)
	R, C := L.r, L.c
	flat := R == 1
	lanes, warps := int64(32), int64(bcastWarps)
	if flat {
		lanes, warps = bcastWarps*32, 1
	}
	var made int64
	var seen []bool
	for tile := int64(0); tile < L.nrt*L.nct; tile++ {
		rt, ct := tile/L.nct, tile%L.nct
		r0, r1 := rt*L.rows, min(R, rt*L.rows+L.rows)
		cbase := ct * int64(L.j) * lanes * N
		for w := int64(0); w < warps; w++ {
			for li := int64(0); li < lanes; li++ {
				first, step := cbase+li*N, lanes*N
				jn := 0
				if first < C {
					jn = int(min(int64(L.j), (C-first+step-1)/step))
				}
				rs := r0
				if !flat {
					rs += w
				}
				// The thread's steps in order: step i is row rs + (i/jn)*8,
				// pack first + (i%jn)*step.
				nrows := int64(0)
				if rs < r1 {
					nrows = (r1 - rs + bcastWarps - 1) / bcastWarps
				}
				n := int(nrows) * jn
				seen = seen[:0]
				for range n {
					seen = append(seen, false)
				}
				check := func(r, c int64, ok bool, before int) {
					if !ok {
						return
					}
					made++
					if r < 0 || r >= R || c < 0 || c >= C {
						t.Fatalf("tile %d warp %d lane %d: prefetch (%d, %d) outside [%d, %d]", tile, w, li, r, c, R, C)
					}
					if r < rs || r >= r1 || (r-rs)%bcastWarps != 0 || c < first || (c-first)%step != 0 || (c-first)/step >= int64(jn) {
						t.Fatalf("tile %d warp %d lane %d: prefetch (%d, %d) is not one of its packs", tile, w, li, r, c)
					}
					i := int((r-rs)/bcastWarps)*jn + int((c-first)/step)
					if seen[i] {
						t.Fatalf("tile %d warp %d lane %d: (%d, %d) prefetched twice", tile, w, li, r, c)
					}
					if i <= before {
						t.Fatalf("tile %d warp %d lane %d: (%d, %d) (step %d) prefetched at step %d", tile, w, li, r, c, i, before)
					}
					seen[i] = true
				}
				if jn > 0 {
					for q := 1; q < D; q++ {
						r, c, ok := bcastPrefetchStep(rs, 0, q, jn, r1, first, step)
						check(r, c, ok, 0)
					}
				}
				if D > 0 {
					for i := 0; i < n; i++ {
						r, c, ok := bcastPrefetchStep(rs+int64(i/jn)*bcastWarps, i%jn, D, jn, r1, first, step)
						check(r, c, ok, i)
					}
					for i := 1; i < n; i++ {
						if !seen[i] {
							t.Fatalf("tile %d warp %d lane %d: step %d never prefetched", tile, w, li, i)
						}
					}
				}
			}
		}
	}
	return made
}

// TestBcastAheadModel: the tile kernel's prefetch schedule (L.ahead) over
// the bench's layouts and layouts with tails in the packs, the lanes, the
// warps' rows and the tiles, at several distances and tile counts.
func TestBcastAheadModel(t *testing.T) {
	type tc struct {
		dt        dtype.DType
		shape, bs []int
		tiles     int64
	}
	cases := []tc{
		{dtype.F32, []int{257, 1000}, []int{1000}, bcastTiles},
		{dtype.F32, []int{257, 1000}, []int{257, 1}, bcastTiles},
		{dtype.BF16, []int{257, 1000}, []int{}, bcastTiles},
		{dtype.F32, []int{257, 1000}, []int{1000}, 3},
		{dtype.BF16, []int{257, 1003}, []int{257, 1}, 5},
		{dtype.F64, []int{131, 77}, []int{131, 1}, 2},
		{dtype.F16, []int{1<<16 + 3}, []int{}, 7},
		{dtype.F32, []int{9, 70001}, []int{9, 1}, bcastTiles},
		{dtype.F32, []int{4099, 300}, []int{300}, bcastTiles},
		{dtype.F32, []int{1<<20 + 3}, []int{}, bcastTiles},
		{dtype.BF16, []int{512, 4096}, []int{4096}, bcastTiles},
		{dtype.BF16, []int{512, 4096}, []int{512, 1}, 1},
	}
	if !testing.Short() {
		cases = append(cases,
			tc{dtype.F32, []int{8192, 4096}, []int{4096}, bcastTiles},
			tc{dtype.BF16, []int{8192, 4096}, []int{8192, 1}, bcastTiles},
			tc{dtype.F32, []int{8192, 4096}, []int{}, bcastTiles})
	}
	for _, c := range cases {
		for _, D := range []int32{0, 1, 2, 4, 7, 40} {
			t.Run(fmt.Sprintf("%v_%v_b%v_t%d_D%d", c.dt.Suffix(), c.shape, c.bs, c.tiles, D), func(t *testing.T) {
				t.Setenv(bcastTilesEnv, fmt.Sprint(c.tiles))
				t.Setenv(bcastAheadEnv, fmt.Sprint(D))
				p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: c.dt, Shape: c.shape, BShape: c.bs})
				if err != nil {
					t.Fatal(err)
				}
				if !p.bc.tileOK {
					t.Fatalf("no tile path: %+v", p.bc.tile)
				}
				L := p.bc.tile
				if L.ahead != D {
					t.Fatalf("ahead %d, want %d", L.ahead, D)
				}
				made := bcastAheadModel(t, &L, int64(16/c.dt.Size()))
				if D == 0 && made != 0 {
					t.Fatalf("%d prefetches with the knob at 0", made)
				}
			})
		}
	}
}

// TestBcastKnobs: the prefetch distance's and the tile count's knobs.
func TestBcastKnobs(t *testing.T) {
	for _, c := range []struct {
		v    string
		want int32
	}{{"", bcastAhead}, {"never", 0}, {"0", 0}, {"1", 1}, {"64", 64}, {"65", bcastAhead}, {"-1", bcastAhead}, {"x", bcastAhead}} {
		t.Setenv(bcastAheadEnv, c.v)
		if got := bcastAheadSetting(); got != c.want {
			t.Errorf("%s=%q: %d, want %d", bcastAheadEnv, c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    string
		want int64
	}{{"", bcastTiles}, {"1", 1}, {"4096", 4096}, {"0", bcastTiles}, {"2000000", bcastTiles}, {"x", bcastTiles}} {
		t.Setenv(bcastTilesEnv, c.v)
		if got := bcastTilesSetting(); got != c.want {
			t.Errorf("%s=%q: %d, want %d", bcastTilesEnv, c.v, got, c.want)
		}
	}
	// The default plan prefetches; the knob at never keeps the layout as it
	// was (no prefetch) and the tiles as they were.
	t.Setenv(bcastTilesEnv, "")
	t.Setenv(bcastAheadEnv, "never")
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.BF16, Shape: []int{8192, 4096}, BShape: []int{4096}})
	if err != nil {
		t.Fatal(err)
	}
	if L := p.bc.tile; L.ahead != 0 || L.nct != 16 || L.nrt != 128 {
		t.Errorf("never: layout %+v", L)
	}
	t.Setenv(bcastAheadEnv, "")
	p, _ = NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.BF16, Shape: []int{8192, 4096}, BShape: []int{4096}})
	if L := p.bc.tile; L.ahead != bcastAhead {
		t.Errorf("default: layout %+v", L)
	}
}
