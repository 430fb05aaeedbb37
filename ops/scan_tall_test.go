package ops

import (
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the tall mapping's plan side (scan_tall.go): the policy and its
// knob, the geometry and workspace, the layout check, and a model of the
// kernel's index math (gen/scan_tall.cuh).

// TestScanTallPolicy: plans take the tall kernel for long outer axes over
// few narrow slices, and BARACUDA_SCAN_TALL overrides (with the tallrow
// kernel off, which would take the 4-column shapes: TestScanTallRowPolicy).
func TestScanTallPolicy(t *testing.T) {
	t.Setenv(scanTallRowEnv, "never")
	cases := []struct {
		shape []int
		axis  int
		want  bool
	}{
		{[]int{4194304, 4}, 0, true},
		{[]int{4096, 2}, 0, true},
		{[]int{4095, 2}, 0, false},       // short axis
		{[]int{100003, 16}, 0, true},     // widest
		{[]int{100003, 17}, 0, false},    // too wide
		{[]int{100003, 1}, 0, false},     // one column: a row of its own
		{[]int{4, 100003, 4}, 1, true},   // batches
		{[]int{16, 100003, 8}, 1, false}, // 128 slices: the col mapping's lanes fill
		{[]int{8, 4096, 8}, 1, true},     // 64 slices
		{[]int{4, 4194304}, 1, false},    // innermost axis: row
		{[]int{5000, 2, 3}, 0, true},     // inner dims of 6
	}
	for _, c := range cases {
		for _, op := range ScanOps() {
			p, err := NewScanBackward(ScanDesc{Op: op, DType: dtype.BF16, Shape: c.shape, Axis: c.axis})
			if err != nil {
				t.Fatal(err)
			}
			got := p.tallK != nil
			if got != c.want {
				t.Errorf("%s %v axis %d: tall %v, want %v", op, c.shape, c.axis, got, c.want)
			}
			name := p.Kernel().Name
			if got != strings.HasSuffix(name, "_tall") {
				t.Errorf("%s %v axis %d: Kernel() %s, tall %v", op, c.shape, c.axis, name, got)
			}
			if got && p.WorkspaceSize() < p.tallG.ws.size {
				t.Errorf("%s %v: WorkspaceSize %d < tall's %d", op, c.shape, p.WorkspaceSize(), p.tallG.ws.size)
			}
		}
	}
	t.Setenv(scanTallEnv, "never")
	if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{4194304, 4}}); p.tallK != nil {
		t.Errorf("%s=never: tall kernel", scanTallEnv)
	}
	t.Setenv(scanTallEnv, "always")
	for _, shape := range [][]int{{33, 4}, {3, 2}, {64, 2, 3}} {
		p, _ := NewScanBackward(ScanDesc{Op: ScanCumprod, DType: dtype.F64, Shape: shape})
		if p.tallK == nil {
			t.Errorf("%s=always %v: no tall kernel", scanTallEnv, shape)
		}
	}
	if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{33, 40}}); p.tallK != nil {
		t.Errorf("%s=always [33 40]: tall kernel for 40 columns", scanTallEnv)
	}
}

// TestScanTallGeometry pins the tiles: warps per column, rows per run
// (the operands' tiles within scanTallSmem), tiles, blocks and units.
func TestScanTallGeometry(t *testing.T) {
	cases := []struct {
		op                  ScanOp
		dt                  dtype.DType
		n, outer, inner     int64
		wc, items           int32
		chunks, units, grid int64
		fillers             int64
	}{
		// [4194304, 4]: 8 warps a column (four rounds), 2048-row tiles
		// where the runs keep 8 rows.
		{ScanCumsum, dtype.F32, 4194304, 1, 4, 8, 8, 2048, 4, 2048 + 4, 4},          // 8 bytes a slot: 4 fill blocks
		{ScanCumprod, dtype.F32, 4194304, 1, 4, 8, 3, 5462, 4, 5462, 0},             // runs of 3 rows: three operands in shared memory
		{ScanLogcumsumexp, dtype.BF16, 4194304, 1, 4, 8, 4, 4096, 4, 4096 + 12, 12}, // 12 bytes a slot
		{ScanCummax, dtype.F64, 4194304, 1, 4, 4, 4, 8192, 2, 8192, 0},              // f64: 4 warps, runs of 4 (8 warps fit runs of 2)
		// Two columns: 8 warps each, two rounds.
		{ScanCumsum, dtype.F16, 100003, 1, 2, 8, 8, 49, 2, 49 + 1, 1},
		// Three columns: 8 warps each, three rounds; runs of 7 rows fit.
		{ScanCummin, dtype.F32, 100003, 1, 3, 8, 7, 56, 3, 56, 0},
		// 16 columns: 2 warps each, four rounds; logcumsumexp takes
		// shorter runs to fit its three operands into shared memory, f64
		// one warp a column (its longest runs, 2 rows, against 2 warps'
		// runs of 1).
		{ScanLogcumsumexp, dtype.F32, 100003, 1, 16, 2, 3, 521, 4, 521 + 7, 7},
		{ScanLogcumsumexp, dtype.F64, 100003, 1, 16, 1, 2, 1563, 2, 1563 + 38, 38},
		{ScanCumsum, dtype.BF16, 100003, 1, 16, 2, 8, 196, 4, 196 + 2, 2},
		// Batches: a block per tile and batch, units per batch and round.
		{ScanCumprod, dtype.F32, 9000, 4, 4, 8, 3, 12, 16, 48, 0},
		{ScanCumsum, dtype.F64, 9000, 3, 7, 4, 4, 18, 12, 54 + 1, 1},
	}
	for _, c := range cases {
		g, _ := newScanTallGeom(c.op, c.dt, c.n, c.outer, c.inner)
		if g.split != c.wc || g.items != c.items || g.chunks != c.chunks || g.units != c.units || g.grid != c.grid ||
			g.fillers != c.fillers {
			t.Errorf("%s %s n=%d %dx%d: wc %d items %d chunks %d units %d grid %d fillers %d, want %d %d %d %d %d %d",
				c.op, c.dt, c.n, c.outer, c.inner, g.split, g.items, g.chunks, g.units, g.grid, g.fillers,
				c.wc, c.items, c.chunks, c.units, c.grid, c.fillers)
		}
		if g.smem > scanTallSmem || g.smem%16 != 0 {
			t.Errorf("%s %s %dx%d: %d bytes of shared memory", c.op, c.dt, c.outer, c.inner, g.smem)
		}
		if g.passes(c.op) != c.op.forwardState() || g.ext || g.lazyFwd(c.op) {
			t.Errorf("%s %s: passes %v ext %v lazy %v", c.op, c.dt, g.passes(c.op), g.ext, g.lazyFwd(c.op))
		}
		// The workspace holds a flag per tile and unit (f64) before the
		// maps, a map and value per tile and slice, and the forward values.
		w := g.ws
		msize := int64(4)
		if c.dt == dtype.F64 {
			msize = 8
			if w.unitFlag < w.flags+g.chunks*g.units*4 {
				t.Errorf("%s %s: flags [%d, %d) overlap the maps at %d", c.op, c.dt, w.flags, w.flags+g.chunks*g.units*4, w.unitFlag)
			}
		}
		if w.incl-w.agg < g.chunks*g.nslices*msize || (c.op.forwardState() && w.size-w.fwd < g.chunks*g.nslices*msize) {
			t.Errorf("%s %s: workspace %+v too small", c.op, c.dt, w)
		}
	}
}

// TestScanTallPitch: the lanes of a warp, reading element o of 32
// consecutive runs, hit 32 distinct banks (4-byte words; 8-byte elements
// by half-warp), for every run length.
func TestScanTallPitch(t *testing.T) {
	for _, size := range []int64{2, 4, 8} {
		for s := int64(2); s <= 128; s++ {
			p := tallPitch(s, size)
			if p < s || p > s+3 {
				t.Fatalf("size %d, runs of %d: pitch %d", size, s, p)
			}
			for o := int64(0); o < s; o++ {
				lanes := int64(32)
				if size == 8 {
					lanes = 16 // a 64-bit access serves a half-warp per pass
				}
				seen := map[int64]int64{}
				for l := int64(0); l < lanes; l++ {
					word := (l*p + o) * size / 4
					bank := word % 32
					if w, ok := seen[bank]; ok && w != word {
						t.Fatalf("size %d, runs of %d (pitch %d), offset %d: lanes share bank %d", size, s, p, o, bank)
					}
					seen[bank] = word
				}
			}
		}
	}
}

// TestScanTallIndexModel models the kernel's index math for every row and
// column: tall_load puts element e of a tile at run e/S, offset e%S (pitch
// P); a thread of column j and run r reads row offset ro at r*P + ro*C + j;
// every (row, column) of the axis is read once, by the run that owns it,
// and y before a run (the element before it in scan order) is in the
// tile's image exactly where the kernel looks for it there.
func TestScanTallIndexModel(t *testing.T) {
	for _, c := range []struct {
		n, inner int64
		dt       dtype.DType
	}{{1000, 3, dtype.F32}, {4097, 4, dtype.BF16}, {513, 16, dtype.F64}, {100, 7, dtype.F16}, {2049, 2, dtype.F32}} {
		g, _ := newScanTallGeom(ScanLogcumsumexp, c.dt, c.n, 1, c.inner)
		wc, items, C := int64(g.split), int64(g.items), c.inner
		rows := wc * 32 * items
		S, P := items*C, int64(g.pitch)
		if P != tallPitch(S, int64(c.dt.Size())) {
			t.Fatalf("%v inner %d: the layout's pitch %d, tallPitch %d", c.dt, C, P, tallPitch(S, int64(c.dt.Size())))
		}
		groups := scanWarps / wc
		rounds := scanCeil(C, groups)
		seen := make([]int, c.n*C)
		for q := int64(0); q < g.chunks; q++ {
			tk0 := q * rows
			tk1 := min(tk0+rows, c.n)
			E := (tk1 - tk0) * C
			img := map[int64]int64{} // shared index -> global element
			for e := int64(0); e < E; e++ {
				r := e / S
				idx := r*P + e - r*S
				if _, dup := img[idx]; dup || idx >= 32*wc*P {
					t.Fatalf("%+v tile %d: element %d at %d (taken or past the image)", c, q, e, idx)
				}
				img[idx] = tk0*C + e
			}
			for rd := int64(0); rd < rounds; rd++ {
				for warp := int64(0); warp < scanWarps; warp++ {
					grp, wg := warp/wc, warp%wc
					j := rd*groups + grp
					if j >= C {
						continue
					}
					for lane := int64(0); lane < 32; lane++ {
						run := wg*32 + lane
						k0 := tk0 + run*items
						cnt := max(min(tk1-k0, items), 0)
						for ro := int64(0); ro < cnt; ro++ {
							el, ok := img[run*P+ro*C+j]
							if !ok || el != (k0+ro)*C+j {
								t.Fatalf("%+v: run %d row %d col %d reads %d, want %d", c, run, ro, j, el, (k0+ro)*C+j)
							}
							seen[el]++
						}
						for _, kb := range []int64{k0 - 1, k0 + cnt} { // y before the run, forward and reverse
							if cnt == 0 || kb < tk0 || kb >= tk1 {
								continue
							}
							lr := kb - tk0
							rr := lr / items
							if el := img[rr*P+(lr-rr*items)*C+j]; el != kb*C+j {
								t.Fatalf("%+v: y before run %d (row %d) reads %d", c, run, kb, el)
							}
						}
					}
				}
			}
		}
		for e, v := range seen {
			if v != 1 {
				t.Fatalf("%+v: element %d read %d times", c, e, v)
			}
		}
	}
}

// TestScanTallLayout: tallLayout takes operands whose tiles are contiguous
// chunks, with 16-byte packs only where every tile starts aligned, and
// leaves the others to the col kernel.
func TestScanTallLayout(t *testing.T) {
	p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.F32, Shape: []int{4, 9000, 4}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.tallK == nil {
		t.Fatal("no tall kernel for f32 cummax 4x9000x4 axis 1")
	}
	check := func(name string, wantOK, wantVec bool, edit func(a *ScanArgs)) {
		t.Helper()
		a, L := laidOut(p, edit)
		vec, ok := tallLayout(&a, &L, p.desc.Op, 4, 4, 4)
		if ok != wantOK || (ok && vec != wantVec) {
			t.Errorf("%s: tallLayout %v, %v, want %v, %v (%+v)", name, vec, ok, wantVec, wantOK, L)
		}
	}
	check("contiguous", true, true, func(*ScanArgs) {})
	check("dx 4 bytes off", true, false, func(a *ScanArgs) { a.DX.Buf.Addr += 4 })
	check("padded batches", true, true, func(a *ScanArgs) { a.DY.Strides = []int{36004, 4, 1} })
	check("odd batch stride", true, false, func(a *ScanArgs) { a.X.Strides = []int{36001, 4, 1} })
	check("padded rows", false, false, func(a *ScanArgs) { a.DY.Strides = []int{45000, 5, 1} })
	check("transposed columns", false, false, func(a *ScanArgs) { a.DX.Strides = []int{36000, 1, 9000} })
	// y is not an operand of cummax: its layout does not matter.
	check("unused y", true, true, func(a *ScanArgs) { a.Y = fakeTensor(dtype.F32, 4, 9000, 4); a.Y.Buf.Addr++ })
	q, err := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{8192, 2, 3}})
	if err != nil || q.tallK == nil {
		t.Fatalf("bf16 cumsum 8192x2x3: tall kernel %v (err %v)", q.tallK, err)
	}
	for _, c := range []struct {
		strides []int
		want    bool
	}{{nil, true}, {[]int{6, 4, 1}, false}, {[]int{6, 1, 2}, false}} {
		a, L := laidOut(q, func(a *ScanArgs) { a.DY.Strides = c.strides })
		if _, ok := tallLayout(&a, &L, q.desc.Op, 2, 1, 6); ok != c.want {
			t.Errorf("8192x2x3 dy strides %v: tallLayout %v, want %v (%+v)", c.strides, ok, c.want, L)
		}
	}
}
