package ops

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the scan plans' geometry (scan_geometry.go): the mappings,
// tiles and workspace, the colpair and colstrip plans, and the constants
// shared with gen/scan.cuh.

// TestScanGeometry pins the mapping, tile and workspace choices: the bench
// shapes, short and long axes, every op's items.
func TestScanGeometry(t *testing.T) {
	cases := []struct {
		op           ScanOp
		dt           dtype.DType
		shape        []int
		axis         int
		row          bool
		split, items int32
		chunks       int64
		units, grid  int64
		fillers      int64 // fill blocks (chunked, no forward-state passes), in grid too
	}{
		// 4096x4096 along the rows: one row per block, one tile each.
		{ScanCumsum, dtype.F32, []int{4096, 4096}, 1, true, 256, 16, 1, 4096, 4096, 0},
		{ScanCummax, dtype.BF16, []int{4096, 4096}, 1, true, 128, 32, 1, 4096, 2048, 0},
		// Along the columns: 128 groups of 32 columns, tiles of 8*items rows;
		// a fill block per 16 KiB of slots (here 8 bytes per tile and slice).
		{ScanCumsum, dtype.F32, []int{4096, 4096}, 0, false, 8, 32, 16, 128, 32 + 16*128, 32},
		// cummax (ext order, float opmath): the fix pass's blocks after the
		// tiles, a warp per slice. 24 bytes of slots per tile and slice.
		{ScanCummax, dtype.F32, []int{4096, 4096}, 0, false, 8, 32, 16, 128, 96 + 16*128 + 512, 96},
		{ScanLogcumsumexp, dtype.BF16, []int{4096, 4096}, 0, false, 8, 16, 32, 128, 96 + 32*128, 96},
		// At most 128 fill blocks.
		{ScanCumprod, dtype.F64, []int{4096, 4096}, 0, false, 8, 8, 64, 128, 128 + 64*128, 128},
		// Short rows: several slices per block (32 threads each).
		{ScanCumsum, dtype.F32, []int{100, 300}, 1, true, 32, 16, 1, 100, 13, 0},
		{ScanCumprod, dtype.F64, []int{5, 1000}, 1, true, 128, 8, 1, 5, 3, 0},
		// Long rows chain tiles.
		{ScanCumsum, dtype.F32, []int{3, 100000}, 1, true, 256, 16, 25, 3, 1 + 75, 1},
		{ScanCumsum, dtype.F64, []int{100000}, 0, true, 256, 8, 49, 1, 1 + 49, 1},
		// The row mapping's forward-state passes fill the slots themselves.
		{ScanCumprod, dtype.F32, []int{3, 100000}, 1, true, 256, 16, 25, 3, 75, 0},
		// Very short rows go to col: lanes take slices.
		{ScanCumsum, dtype.F32, []int{1000, 7}, 1, false, 1, 7, 1, 32, 4, 0},
		{ScanCumsum, dtype.F32, []int{1000, 64}, 1, false, 2, 32, 1, 32, 8, 0},
		{ScanCumprod, dtype.F32, []int{1000, 64}, 1, false, 4, 16, 1, 32, 16, 0},
		{ScanCummin, dtype.F16, []int{1000, 100}, 1, false, 4, 25, 1, 32, 16, 0},
		// An inner axis of a rank-3 tensor.
		{ScanCumprod, dtype.F32, []int{6, 300, 70}, 1, false, 8, 16, 3, 14, 1 + 42, 1},
		{ScanCumsum, dtype.F32, []int{1}, 0, false, 1, 1, 1, 1, 1, 0},
	}
	for _, c := range cases {
		p, err := NewScanBackward(ScanDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axis: c.axis})
		if err != nil {
			t.Fatal(err)
		}
		g := p.geom
		if g.row != c.row || g.split != c.split || g.items != c.items || g.chunks != c.chunks || g.units != c.units ||
			g.grid != c.grid || g.fillers != c.fillers {
			t.Errorf("%s %s %v axis %d: row=%v split=%d items=%d chunks=%d units=%d grid=%d fillers=%d, want %v %d %d %d %d %d %d",
				c.op, c.dt, c.shape, c.axis, g.row, g.split, g.items, g.chunks, g.units, g.grid, g.fillers,
				c.row, c.split, c.items, c.chunks, c.units, c.grid, c.fillers)
		}
		if tile := int64(g.split) * int64(g.items); tile*g.chunks < g.n || tile*(g.chunks-1) >= g.n {
			t.Errorf("%s %v: %d tiles of %d elements for %d", c.op, c.shape, g.chunks, tile, g.n)
		}
		if (g.chunks > 1) != (p.WorkspaceSize() > 0) {
			t.Errorf("%s %v: %d chunks but a workspace of %d bytes", c.op, c.shape, g.chunks, p.WorkspaceSize())
		}
		// The kernels shift by lsplit (split is a power of two) and split
		// a ticket into tile row and unit with the tile row's magic.
		sa := scanArgs(p)
		var L scanLayout
		p.layout(&sa, &L, &p.geom)
		// The fill blocks' part is every slot (ws.zero); without fill
		// blocks the kernel reads none of it.
		wantFill := int64(0)
		if g.fillers > 0 {
			wantFill = g.ws.zero
		}
		if int64(L.fillers) != g.fillers || L.wsFill != wantFill {
			t.Errorf("%s %v: fillers %d, wsFill %d (zero %d)", c.op, c.shape, L.fillers, L.wsFill, g.ws.zero)
		}
		if g.split&(g.split-1) != 0 || int32(1)<<L.lsplit != g.split {
			t.Errorf("%s %v: split %d, lsplit %d", c.op, c.shape, g.split, L.lsplit)
		}
		if g.chunks > 1 && !g.row {
			if m, sh := divMagic(g.units); L.tmagic != m || L.tshift != sh {
				t.Errorf("%s %v: ticket magic (%d, %d), want divMagic(%d) = (%d, %d)", c.op, c.shape, L.tmagic, L.tshift, g.units, m, sh)
			}
		} else if L.tmagic != 0 || L.tshift != 0 {
			t.Errorf("%s %v: ticket magic (%d, %d) where no kernel uses it", c.op, c.shape, L.tmagic, L.tshift)
		}
	}
	// The workspace of the chained bench case: maps, forward values and
	// (ext) the take-over records of cummax, with no flags (float opmath);
	// Run fills all of it with 0xff (the ext order looks back on the
	// forward values, and the fix blocks wait for maps and records).
	p, _ := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.F32, Shape: []int{4096, 4096}})
	w := p.geom.ws
	if !p.geom.ext || !p.geom.fixIn || w.flags != 16 || w.agg != 16 || w.incl != w.agg+16*4096*8 ||
		w.fwd != w.incl+16*4096*4 || w.fix != w.fwd+16*4096*4 || w.size != w.fix+16*4096*8 || w.zero != w.size {
		t.Errorf("workspace layout %+v (ext %v, fixIn %v)", w, p.geom.ext, p.geom.fixIn)
	}
	// f64 cummax: the fix pass is a second launch, the records unfilled.
	p, _ = NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.F64, Shape: []int{4096, 4096}})
	w = p.geom.ws
	if !p.geom.ext || p.geom.fixIn || w.zero != w.fix || p.geom.grid != p.geom.fillers+p.geom.chunks*p.geom.units {
		t.Errorf("f64 cummax: workspace layout %+v (ext %v, fixIn %v), grid %d", w, p.geom.ext, p.geom.fixIn, p.geom.grid)
	}
	// Float cumsum: one 8-byte slot per tile and slice (sum and value
	// after), no incl part; f64 cumsum keeps the general layout.
	p, _ = NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{4096, 4096}})
	w = p.geom.ws
	if p.geom.chunks != 16 || w.agg != 16 || w.incl != w.agg+16*4096*8 || w.fwd != w.incl || w.zero != w.fwd ||
		w.size != w.fwd {
		t.Errorf("cumsum bf16 workspace layout %+v", w)
	}
	p, _ = NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F64, Shape: []int{100000}})
	w = p.geom.ws
	if w.agg != scanAlign16(16+49*4) || w.incl != w.agg+49*16 || w.fwd != scanAlign16(w.incl+49*8) || w.zero != w.fwd {
		t.Errorf("cumsum f64 workspace layout %+v", w)
	}
	// f64: a flag per tile and unit before the maps (16 bytes each); col
	// cumprod: a flag per unit after them (4 bytes each).
	p, _ = NewScanBackward(ScanDesc{Op: ScanCumprod, DType: dtype.F64, Shape: []int{4096, 4096}})
	w = p.geom.ws
	if p.geom.ext || w.unitFlag != 16+64*128*4 || w.agg != w.unitFlag+128*4 || w.incl != w.agg+64*4096*16 ||
		w.fwd != w.incl+64*4096*8 || w.zero != w.fwd || w.size != w.fwd+64*4096*8 {
		t.Errorf("f64 workspace layout %+v", w)
	}
	// cumprod keeps its forward values (col: computed where asked; row:
	// the forward passes), cummax along rows too; only col cumprod has
	// unit flags.
	for _, d := range []ScanDesc{
		{Op: ScanCumprod, DType: dtype.F32, Shape: []int{4096, 4096}},
		{Op: ScanCumprod, DType: dtype.F32, Shape: []int{3, 100000}, Axis: 1},
		{Op: ScanCummax, DType: dtype.F32, Shape: []int{3, 100000}, Axis: 1},
	} {
		p, _ := NewScanBackward(d)
		flags := int64(0)
		if p.geom.lazyFwd(d.Op) {
			flags = p.geom.units * 4
		}
		if w := p.geom.ws; p.geom.ext || p.geom.chunks < 2 || w.fix != 0 || w.agg != w.unitFlag+flags || w.zero != w.fwd ||
			w.size != scanAlign16(w.fwd+p.geom.chunks*p.geom.nslices*4) || p.geom.lazyFwd(d.Op) == p.geom.row {
			t.Errorf("%s %v: workspace layout %+v (ext %v)", d.Op, d.Shape, w, p.geom.ext)
		}
	}
	if e, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{0, 5000}, Axis: 1}); e.WorkspaceSize() != 0 {
		t.Error("an empty tensor needs a workspace")
	}
}

func TestScanDivMagic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	div := func(n uint64, m uint64, s int32) uint64 {
		if m == 0 {
			return n >> s
		}
		hi, _ := bits.Mul64(n, m)
		return hi >> s
	}
	ds := []int64{1, 2, 3, 5, 7, 8, 12, 100, 4095, 4096, 4097, 1<<31 - 1, 1 << 40, 1<<40 + 1, 1<<62 - 1}
	for i := 0; i < 200; i++ {
		ds = append(ds, 1+rng.Int64N(1<<uint(1+rng.IntN(62))))
	}
	for _, d := range ds {
		m, s := divMagic(d)
		ns := []uint64{0, 1, uint64(d) - 1, uint64(d), uint64(d) + 1, 1<<62 - 1}
		for i := 0; i < 100; i++ {
			ns = append(ns, rng.Uint64N(1<<62))
		}
		for _, n := range ns {
			if n >= 1<<62 {
				continue
			}
			if got := div(n, m, s); got != n/uint64(d) {
				t.Fatalf("%d / %d: magic (%d, %d) gives %d, want %d", n, d, m, s, got, n/uint64(d))
			}
		}
	}
}

// TestScanItemsCoverOps: scanItems, the table gen/spec_scan_items.go generates
// for the kernels and the launcher alike, has positive run lengths for
// every scan op and dtype (an op the table did not name would get none,
// and no tiles).
func TestScanItemsCoverOps(t *testing.T) {
	for _, op := range ScanOps() {
		for _, dt := range dtype.All {
			if row, col := scanItems(op, dt); row < 1 || col < 1 || tallItems(op, dt) < 1 {
				t.Errorf("%s %s: run lengths row %d, col %d, tall %d", op, dt.Suffix(), row, col, tallItems(op, dt))
			}
		}
	}
}

// TestScanPairGeometry: bf16 cummax and cummin in the ext order over an
// even number of slices get the colpair geometry (64-slice units, tiles of
// 8 runs of scanPairItems, fix and fill blocks as the col geometry's), and
// the workspace covers both geometries; other ops, dtypes, odd slice
// counts and single-tile shapes get none.
func TestScanPairGeometry(t *testing.T) {
	for _, op := range []ScanOp{ScanCummax, ScanCummin} {
		p, err := NewScanBackward(ScanDesc{Op: op, DType: dtype.BF16, Shape: []int{4096, 4096}})
		if err != nil {
			t.Fatal(err)
		}
		g := p.geom.pair
		if g == nil {
			t.Fatalf("%s bf16 4096x4096 axis 0: no pair geometry", op)
		}
		if g.units != 64 || g.chunks != 24 || g.split != 8 || g.items != scanPairItems || !g.ext || !g.fixIn {
			t.Errorf("%s pair geometry: %+v", op, *g)
		}
		if want := g.fillers + 24*64 + 4096/scanWarps; g.grid != want {
			t.Errorf("%s pair grid %d, want %d (fillers, tiles, fix blocks)", op, g.grid, want)
		}
		if w := p.WorkspaceSize(); w < g.ws.size || w < p.geom.ws.size {
			t.Errorf("%s workspace %d below a geometry's (%d, %d)", op, w, p.geom.ws.size, g.ws.size)
		}
		if g.ws.fix+24*4096*8 > g.ws.size || g.ws.fwd%16 != 0 || g.ws.incl%16 != 0 {
			t.Errorf("%s pair workspace layout: %+v", op, g.ws)
		}
	}
	for _, c := range []struct {
		op    ScanOp
		dt    dtype.DType
		shape []int
		axis  int
	}{
		{ScanCumsum, dtype.BF16, []int{4096, 4096}, 0},
		{ScanCummax, dtype.F32, []int{4096, 4096}, 0},
		{ScanCummax, dtype.F16, []int{4096, 4096}, 0},
		{ScanCummax, dtype.BF16, []int{4096, 33}, 0}, // odd slice count
		{ScanCummax, dtype.BF16, []int{160, 64}, 0},  // one tile: no ext order
		{ScanCummax, dtype.BF16, []int{170, 64}, 0},  // two col tiles, one pair tile
		{ScanCummax, dtype.BF16, []int{64, 4096}, 1}, // row mapping
	} {
		p, err := NewScanBackward(ScanDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axis: c.axis})
		if err != nil {
			t.Fatal(err)
		}
		if p.geom.pair != nil || p.pairK != nil {
			t.Errorf("%s %s %v axis %d: pair geometry %+v", c.op, c.dt, c.shape, c.axis, *p.geom.pair)
		}
	}
	t.Setenv(scanPairEnv, "never")
	if p, err := NewScanBackward(ScanDesc{Op: ScanCummin, DType: dtype.BF16, Shape: []int{4096, 4096}}); err != nil || p.pairK != nil {
		t.Errorf("%s=never: pair kernel %v (err %v)", scanPairEnv, p.pairK, err)
	}
}

// TestScanStripPlan: f16 and bf16 cummax and cummin along an outer axis cut into
// tiles get the colstrip kernel with its shared memory for the axis (the
// layout of scan_backward_colstrip), up to the longest axis that fits;
// other ops, dtypes, the row mapping, single-tile axes (unless
// scanStripEnv is "always") and scanStripEnv "never" get none.
func TestScanStripPlan(t *testing.T) {
	for _, c := range []struct {
		n    int
		smem int
	}{
		{4096, 3*512*32*2 + 8*16*32*4 + 2*16*32*4 + 32*4}, // 118912 bytes
		{257, 3*512*32*2 + 1*16*32*4 + 2*16*32*4 + 32*4},  // two col tiles (f16 256 rows, bf16 160), one stage
		{32256, 3*512*32*2 + 63*16*32*4 + 2*16*32*4 + 32*4},
		{32257, 0}, // 64 stages: over scanStripSmemCap
	} {
		for _, k := range []struct {
			op ScanOp
			dt dtype.DType
		}{{ScanCummax, dtype.BF16}, {ScanCummin, dtype.BF16}, {ScanCummax, dtype.F16}, {ScanCummin, dtype.F16}} {
			op := k.op
			p, err := NewScanBackward(ScanDesc{Op: op, DType: k.dt, Shape: []int{c.n, 64}})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.smem == 0 && p.stripK != nil:
				t.Errorf("%s %s axis of %d: colstrip kernel with %d bytes, more than %d", op, k.dt, c.n, p.stripK.smem, scanStripSmemCap)
			case c.smem == 0:
			case p.stripK == nil:
				t.Errorf("%s %s axis of %d: no colstrip kernel", op, k.dt, c.n)
			case p.stripK.smem != c.smem || p.stripK.block != scanStripBlock || p.stripK.smemCap != scanStripSmemCap:
				t.Errorf("%s %s axis of %d: colstrip smem %d block %d cap %d, want %d %d %d", op, k.dt, c.n, p.stripK.smem,
					p.stripK.block, p.stripK.smemCap, c.smem, scanStripBlock, scanStripSmemCap)
			}
		}
	}
	for _, c := range []struct {
		op    ScanOp
		dt    dtype.DType
		shape []int
		axis  int
	}{
		{ScanCumsum, dtype.BF16, []int{4096, 4096}, 0},
		{ScanCummax, dtype.F32, []int{4096, 4096}, 0},
		{ScanCummin, dtype.F64, []int{4096, 4096}, 0},
		{ScanCummax, dtype.BF16, []int{160, 64}, 0},  // one col tile
		{ScanCummax, dtype.BF16, []int{64, 4096}, 1}, // row mapping
	} {
		p, err := NewScanBackward(ScanDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axis: c.axis})
		if err != nil {
			t.Fatal(err)
		}
		if p.stripK != nil {
			t.Errorf("%s %s %v axis %d: colstrip kernel %s", c.op, c.dt, c.shape, c.axis, p.stripK.name)
		}
	}
	t.Setenv(scanStripEnv, "always")
	if p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{2, 64}}); err != nil || p.stripK == nil || !p.stripAll {
		t.Errorf("%s=always, axis of 2: colstrip kernel %v (err %v)", scanStripEnv, p.stripK, err)
	}
	t.Setenv(scanStripEnv, "never")
	if p, err := NewScanBackward(ScanDesc{Op: ScanCummin, DType: dtype.BF16, Shape: []int{4096, 4096}}); err != nil || p.stripK != nil {
		t.Errorf("%s=never: colstrip kernel %v (err %v)", scanStripEnv, p.stripK, err)
	}
}
