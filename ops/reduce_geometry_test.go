package ops

import (
	"math/bits"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the reduce plans' geometry and policies (reduce_geometry.go):
// the row, col, one, flat, cluster and strip cuts and which a plan takes.

// TestReduceOneGeometry: which split col plans take the one-pass launch,
// with what tiles, shared memory and workspace.
func TestReduceOneGeometry(t *testing.T) {
	for _, c := range []struct {
		op            ReduceOp
		dt            dtype.DType
		shape         []int
		one           bool
		chunk, chunks int64
		smem          int
	}{
		// As few chunks as 96 KiB of x per tile allows: rows of 512 bytes
		// (32 threads across, 4 f32 or 2 f64 slices each) or 256 (4
		// 16-bit slices each).
		{ReduceVar, dtype.F32, []int{4096, 4096}, true, 187, 22, 187 * 512},
		{ReduceVar, dtype.BF16, []int{4096, 4096}, true, 373, 11, 373 * 256},
		{ReduceStd, dtype.F64, []int{4096, 4096}, true, 187, 22, 187 * 512},
		{ReduceStd, dtype.F16, []int{4097, 3}, true, 373, 11, 373 * 256},  // 4 slices per thread at most
		{ReduceVar, dtype.F32, []int{300, 4096}, true, 150, 2, 150 * 512}, // at least 2 chunks
		{ReduceVar, dtype.F32, []int{100000, 3}, false, 129, 776, 0},      // too many chunks
		{ReduceMax, dtype.F32, []int{4096, 4096}, false, 128, 32, 0},      // provisional: x is read once anyway
		{ReduceProd, dtype.F64, []int{4096, 4096}, false, 256, 16, 0},
		{ReduceSum, dtype.F32, []int{4096, 4096}, false, 128, 32, 0}, // no statistics
	} {
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: c.shape})
		if err != nil {
			t.Fatal(err)
		}
		smem := 0
		if p.oneK != nil {
			smem = p.oneK.smem
		}
		geo := p.col // the one kernel's cut, or the two passes'
		if p.one {
			geo = p.oneG
		}
		if p.one != c.one || geo.chunk != c.chunk || geo.nchunks != c.chunks || smem != c.smem {
			t.Errorf("%s %s %v: one %v, chunk %d x %d, smem %d; want %v, %d x %d, %d",
				c.op, c.dt, c.shape, p.one, geo.chunk, geo.nchunks, smem, c.one, c.chunk, c.chunks, c.smem)
		}
		if geo.chunk*(geo.nchunks-1) >= int64(c.shape[0]) || geo.chunk*geo.nchunks < int64(c.shape[0]) {
			t.Errorf("%s %v: %d chunks of %d do not cut %d rows", c.op, c.shape, geo.nchunks, geo.chunk, c.shape[0])
		}
		// The two passes keep their own cut (Run falls back to them).
		if col := colGeometry(p.slices, p.k, colVec(c.dt, c.op)); p.col != col {
			t.Errorf("%s %v: col geometry %+v, want %+v", c.op, c.shape, p.col, col)
		}
		if p.one {
			acc := redAccSize(c.dt)
			w := int64(redBlock / p.col.group)
			if p.oneOff != p.slices*(p.oneG.nchunks+1)*acc || p.ws < p.oneOff+4*(1+ceilDiv(p.slices, w)) || p.ws%16 != 0 ||
				p.ws < p.slices*(p.col.nchunks+1)*acc {
				t.Errorf("%s %v: counters at %d in a workspace of %d", c.op, c.shape, p.oneOff, p.ws)
			}
		}
	}
}

func TestReduceGeometry(t *testing.T) {
	cases := []struct {
		name     string
		slices   int64
		k        int64
		size     int
		row, col reduceGeom
	}{
		// 4096x4096 along axis 1 (row) and axis 0 (col): the bench shapes.
		{"4096 f32", 4096, 4096, 4, reduceGeom{256, 4096, 1, 4096}, reduceGeom{8, 128, 32, 1024}},
		{"4096 bf16", 4096, 4096, 2, reduceGeom{128, 4096, 1, 4096}, reduceGeom{8, 128, 32, 512}},
		// A short axis: one thread per row (one pack), 64 threads x 4 slices x 4 rows per col block.
		// (col takes one 16-byte access of slices per thread: 4 f32, 8 bf16, 2 f64.)
		{"k=4", 1000, 4, 4, reduceGeom{1, 4, 1, 1000}, reduceGeom{4, 4, 1, 4}},
		{"k=1", 77, 1, 2, reduceGeom{1, 1, 1, 77}, reduceGeom{1, 1, 1, 1}},
		// One long slice: split into chunks of 4 packs per thread.
		{"vector", 1, 1 << 24, 4, reduceGeom{256, 16384, 1024, 1024}, reduceGeom{8, 1 << 14, 1024, 1024}},
		// Few slices, too short to split.
		{"short rows", 3, 100, 8, reduceGeom{32, 100, 1, 3}, reduceGeom{8, 100, 1, 1}},
	}
	for _, c := range cases {
		if g := rowGeometry(c.slices, c.k, c.size); g != c.row {
			t.Errorf("%s: row %+v, want %+v", c.name, g, c.row)
		}
		if g := colGeometry(c.slices, c.k, int64(16/c.size)); g != c.col {
			t.Errorf("%s: col %+v, want %+v", c.name, g, c.col)
		}
	}
	// Every chunking covers the axis exactly once.
	for _, s := range []int64{1, 2, 7, 100, 511, 512, 4096} {
		for _, k := range []int64{1, 2, 3, 31, 64, 1000, 4097, 1 << 20} {
			for _, size := range []int{2, 4, 8} {
				for _, g := range []reduceGeom{rowGeometry(s, k, size), colGeometry(s, k, 1), colGeometry(s, k, 4)} {
					if g.nchunks < 1 || g.chunk < 1 || (g.nchunks-1)*g.chunk >= k || g.nchunks*g.chunk < k {
						t.Fatalf("slices %d k %d size %d: %+v does not tile the axis", s, k, size, g)
					}
					if g.group < 1 || g.group > 256 || g.group&(g.group-1) != 0 {
						t.Fatalf("slices %d k %d: group %d", s, k, g.group)
					}
				}
			}
		}
	}
}

// TestReduceFlat: which shapes the flat kernel takes, its division
// constants, and which operands keep Run on the row and col kernels.
func TestReduceFlat(t *testing.T) {
	for _, c := range []struct {
		dt         dtype.DType
		shape      []int
		axis       int
		packs, ip  int64
		div0, div1 int64
	}{
		{dtype.F32, []int{4096, 4096}, 1, 1 << 22, 0, 1024, 0}, // a slice of 1024 packs
		{dtype.F32, []int{4096, 4096}, 0, 1 << 22, 1024, 1 << 22, 1024},
		{dtype.BF16, []int{6, 24, 40}, 1, 6 * 24 * 5, 5, 24 * 5, 5}, // I = 40: 5 packs of 8
		{dtype.F64, []int{3, 6}, 1, 9, 0, 3, 0},
		{dtype.F64, []int{5, 3, 2}, 0, 15, 3, 15, 3},
		{dtype.F32, []int{3, 5}, 1, 0, 0, 0, 0},     // k = 5 is no multiple of 4
		{dtype.F16, []int{4, 5, 12}, 1, 0, 0, 0, 0}, // I = 12 is no multiple of 8
		{dtype.F32, []int{7}, 0, 0, 0, 0, 0},
	} {
		f := flatGeometry(c.shape, c.axis, numel(c.shape), c.dt.Size(), true)
		if f.packs != c.packs || f.ip != c.ip {
			t.Errorf("%s %v axis %d: packs %d ip %d, want %d %d", c.dt, c.shape, c.axis, f.packs, f.ip, c.packs, c.ip)
			continue
		}
		for i, d := range [2]int64{c.div0, c.div1} {
			if d == 0 {
				continue
			}
			if m, sh := divMagic(d); f.magic[i] != m || f.shift[i] != sh {
				t.Errorf("%s %v axis %d: divisor %d is %d, not %d", c.dt, c.shape, c.axis, i, f.magic[i], d)
			}
		}
	}
	for _, op := range ReduceOps() {
		p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dtype.F32, Shape: []int{64, 32}, Axis: 0, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.flatK != nil, !op.hasStats() || op.provisional(); got != want {
			t.Errorf("%s: flat kernel %v, want %v", op, got, want)
		}
		// The provisional ops' slices are not split here: the col kernel.
		a := redArgs(p)
		if got := p.dense(&a); got != !op.hasStats() {
			t.Errorf("%s: dense %v for contiguous operands", op, got)
		}
	}
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceNorm2, DType: dtype.F32, Shape: []int{64, 32}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(a *ReduceArgs){
		"x 8-byte aligned": func(a *ReduceArgs) { a.X.Buf.Addr += 8 },
		"y misaligned":     func(a *ReduceArgs) { a.Y.Buf.Addr += 4 },
		"dy strided":       func(a *ReduceArgs) { a.DY.Strides = []int{2, 1}; a.DY.Buf.Size *= 2 },
		"dx transposed":    func(a *ReduceArgs) { a.DX.Strides = []int{1, 64} },
	} {
		a := redArgs(p)
		f(&a)
		if err := p.Check(&a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.dense(&a) {
			t.Errorf("%s: Run would take the flat kernel", name)
		}
	}
	s, err := NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{64, 32}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := redArgs(s)
	a.X.Buf.Addr, a.Y.Buf.Addr = 3, 5 // Sum reads neither
	if !s.dense(&a) {
		t.Error("sum: x and y decided the flat kernel")
	}
}

// TestReduceFlatPlan: which plans of the provisional ops take the flat
// path (dense operands whose slices the row or col mapping would split, or
// any under reduceFlatEnv=always; none under "never"), and its workspace.
func TestReduceFlatPlan(t *testing.T) {
	for _, c := range []struct {
		op    ReduceOp
		dt    dtype.DType
		shape []int
		axis  int
		env   string
		want  bool
	}{
		{ReduceMax, dtype.F32, []int{4096, 4096}, 0, "", true},
		{ReduceMin, dtype.BF16, []int{4096, 4096}, 0, "", true},
		{ReduceProd, dtype.BF16, []int{4096, 4096}, 0, "", true},
		{ReduceProd, dtype.F64, []int{3, 20000}, 1, "", true},   // row split
		{ReduceMax, dtype.F32, []int{4096, 4096}, 1, "", false}, // one row kernel
		{ReduceMax, dtype.F32, []int{4096, 4095}, 0, "", false}, // no 16-byte packs
		{ReduceVar, dtype.F32, []int{4096, 4096}, 0, "", false},
		{ReduceMax, dtype.F32, []int{4096, 4096}, 0, "never", false},
		{ReduceMax, dtype.F32, []int{64, 32}, 0, "always", true},
		{ReduceStd, dtype.F32, []int{64, 32}, 0, "always", false},
		{ReduceSum, dtype.F32, []int{64, 32}, 0, "never", false},     // the knob is the provisional ops'
		{ReduceMax, dtype.F32, []int{1<<31 + 8}, 0, "always", false}, // longer than a 32-bit count
	} {
		t.Setenv(reduceFlatEnv, c.env)
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axis: c.axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if p.flatFx != c.want {
			t.Errorf("%s %s %v axis %d %s=%q: flat path %v, want %v", c.op, c.dt, c.shape, c.axis, reduceFlatEnv, c.env, p.flatFx, c.want)
		}
		if c.want {
			need := flatFixSize(c.op, c.dt, p.slices, p.flat.packs, p.k)
			if p.ws < need || p.flat.packs == 0 {
				t.Errorf("%s %s %v: workspace %d (flat path needs %d), packs %d", c.op, c.dt, c.shape, p.ws, need, p.flat.packs)
			}
			if a := redArgs(p); !p.dense(&a) {
				t.Errorf("%s %s %v: contiguous operands do not take the flat path", c.op, c.dt, c.shape)
			}
		}
	}
	// Counts and the wide flag (16-byte aligned), slots, then the mask
	// (max and min): 4 f32 elements a pack, a bit each, 4 words per 32
	// packs.
	if got, want := flatFixSize(ReduceMax, dtype.F32, 4096, 1<<20, 1024), int64(16400+4096*4*8+4*4*(1<<15)); got != want {
		t.Errorf("flatFixSize(max, f32, 4096 slices, 2^20 packs) = %d, want %d", got, want)
	}
	if got, want := flatFixSize(ReduceProd, dtype.BF16, 5, 33, 53), int64(32+32+48+5*8); got != want {
		t.Errorf("flatFixSize(prod, bf16, 5 slices, 33 packs of 53) = %d, want %d", got, want)
	}
	// The regrid's partials: ceil(k/redRegridUnit) per slice.
	if got, want := flatFixSize(ReduceProd, dtype.F64, 4, 1<<22, 1<<22), int64(32+16+32+4*1024*16); got != want {
		t.Errorf("flatFixSize(prod, f64, 4 slices of 2^22) = %d, want %d", got, want)
	}
	if got, want := flatFixSize(ReduceProd, dtype.F32, 65, 1<<20, 1<<14), int64(272); got != want {
		t.Errorf("flatFixSize(prod, f32, 65 slices) = %d, want %d (no regrid past redFlatLocal)", got, want)
	}
}

// TestReduceClusterPlan: which plans may take the cluster kernel (the
// split col slices of clusterOp's ops and dtypes, or of every op with
// statistics under reduceClusterEnv=always; none under "never" or without
// a split), and its geometry.
func TestReduceClusterPlan(t *testing.T) {
	plan := func(op ReduceOp, dt dtype.DType, shape []int, axis int) *ReduceBackward {
		t.Helper()
		p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := []int{4096, 4096}
	for _, c := range []struct {
		op   ReduceOp
		dt   dtype.DType
		env  string
		want bool
	}{
		{ReduceProd, dtype.F32, "", true}, {ReduceProd, dtype.BF16, "", true}, {ReduceProd, dtype.F16, "", true},
		{ReduceProd, dtype.F64, "", false}, {ReduceMax, dtype.F32, "", true}, {ReduceMin, dtype.F32, "", true},
		{ReduceMax, dtype.BF16, "", false}, {ReduceVar, dtype.F32, "", false}, {ReduceStd, dtype.BF16, "", false},
		{ReduceVar, dtype.F32, "always", true}, {ReduceMax, dtype.F64, "always", true},
		{ReduceProd, dtype.F32, "never", false}, {ReduceSum, dtype.F32, "always", false},
	} {
		t.Setenv(reduceClusterEnv, c.env)
		p := plan(c.op, c.dt, big, 0)
		if got := p.clu.nchunks > 0; got != c.want {
			t.Errorf("%s %s %s=%q: cluster %v, want %v", c.op, c.dt, reduceClusterEnv, c.env, got, c.want)
		}
		if c.want && (p.clu.nchunks != redCluster || p.clu.chunk != 2048 || p.clu.group != redClusterH || p.clu.tiles%redCluster != 0) {
			t.Errorf("%s %s: cluster geometry %+v", c.op, c.dt, p.clu)
		}
	}
	t.Setenv(reduceClusterEnv, "")
	// Col slices that need no split: no cluster geometry. (A plan has one
	// for the col mapping even where the axis is innermost: operands
	// strided the other way take it.)
	if p := plan(ReduceProd, dtype.F32, []int{64, 1 << 16}, 0); p.clu.nchunks != 0 {
		t.Errorf("unsplit col slices: cluster geometry %+v", p.clu)
	}
}

// TestReduceStripPlan: the strip kernel's cut (64-byte strip rows where
// they fit, else 32; none where the inner extent is no multiple of the
// strip's slices, the axis is innermost, or the strip outgrows
// redStripSmem; with the rows cut between a cluster's blocks, half of
// them per block), and which plans have which form (var, std, max, min
// and prod by default: the clustered form, and the one-block form for the
// 16-bit dtypes; every op with statistics under reduceStripEnv "auto" or
// "always"; none under "never"; max, min and prod not by default under
// reduceStripTiesEnv "never").
func TestReduceStripPlan(t *testing.T) {
	for _, c := range []struct {
		dt          dtype.DType
		shape       []int
		axis        int
		c           int64 // blocks per strip
		vr          int32
		w, strips   int64
		inner, smem int64
		chunk       int64
	}{
		{dtype.BF16, []int{4096, 4096}, 0, 1, 2, 16, 256, 4096, 4096 + 4096*32, 4096},
		{dtype.F32, []int{4096, 4096}, 0, 1, 2, 8, 512, 4096, 4096 + 4096*32, 4096},
		{dtype.BF16, []int{2048, 1024}, 0, 1, 4, 32, 32, 1024, 4096 + 2048*64, 2048},
		{dtype.F64, []int{1000, 600}, 0, 1, 4, 8, 75, 600, 4096 + 1000*64, 1000},
		{dtype.F32, []int{2, 700, 48}, 1, 1, 4, 16, 6, 48, 4096 + 700*64, 700},
		{dtype.F16, []int{3, 3000, 16}, 1, 1, 2, 16, 3, 16, 4096 + 3000*32, 3000},
		{dtype.BF16, []int{1000, 600}, 0, 1, 0, 0, 0, 0, 0, 0}, // 600 is no multiple of 16
		{dtype.F32, []int{4096, 4096}, 1, 1, 0, 0, 0, 0, 0, 0}, // innermost axis
		{dtype.BF16, []int{8000, 64}, 0, 1, 0, 0, 0, 0, 0, 0},  // 8000 rows of 32 bytes outgrow the limit
		{dtype.F32, []int{7000, 64}, 0, 1, 2, 8, 8, 64, 4096 + 7000*32, 7000},
		// Cut between the two blocks of a cluster: 64-byte rows where
		// half the rows fit.
		{dtype.BF16, []int{4096, 4096}, 0, 2, 4, 32, 128, 4096, 4096 + 2048*64, 2048},
		{dtype.F32, []int{4096, 4096}, 0, 2, 4, 16, 256, 4096, 4096 + 2048*64, 2048},
		{dtype.BF16, []int{2048, 1024}, 0, 2, 4, 32, 32, 1024, 4096 + 1024*64, 1024},
		{dtype.F64, []int{1001, 600}, 0, 2, 4, 8, 75, 600, 4096 + 501*64, 501},
		{dtype.BF16, []int{8000, 64}, 0, 2, 2, 16, 4, 64, 4096 + 4000*32, 4000},
		{dtype.BF16, []int{16000, 64}, 0, 2, 0, 0, 0, 0, 0, 0}, // 8000 rows of 32 bytes outgrow the limit
		{dtype.BF16, []int{1, 64}, 0, 2, 4, 32, 2, 64, 4096 + 64, 1},
	} {
		g := stripGeometry(c.shape, c.axis, c.dt.Size(), c.c)
		if g.vr != c.vr || g.w != c.w || g.strips != c.strips || g.inner != c.inner || g.smem != c.smem || g.chunk != c.chunk {
			t.Errorf("%s %v axis %d c %d: strip %+v, want vr %d w %d strips %d inner %d smem %d chunk %d", c.dt, c.shape,
				c.axis, c.c, g, c.vr, c.w, c.strips, c.inner, c.smem, c.chunk)
		}
		if g.vr > 0 {
			for b := int64(0); b < g.strips; b++ {
				q := uint64(b)
				if g.magic != 0 {
					q, _ = bits.Mul64(q, g.magic)
				}
				if q >>= g.shift; int64(q) != b/(g.inner/g.w) {
					t.Errorf("%s %v: the strip divisor gives %d for strip %d", c.dt, c.shape, q, b)
					break
				}
			}
			if g.smem > redStripSmem {
				t.Errorf("%s %v: strip smem %d above %d", c.dt, c.shape, g.smem, redStripSmem)
			}
		}
	}
	for _, c := range []struct {
		op       ReduceOp
		dt       dtype.DType
		env      string
		one, clu bool // the plan has the one-block form, the clustered one
		any_     bool
	}{
		{ReduceVar, dtype.BF16, "", true, true, false}, {ReduceStd, dtype.F32, "", false, true, false},
		{ReduceMax, dtype.BF16, "", true, true, false}, {ReduceStd, dtype.BF16, "never", false, false, false},
		{ReduceMin, dtype.F32, "", false, true, false}, {ReduceProd, dtype.F64, "", false, false, false},
		{ReduceMax, dtype.F32, "never", false, false, false},
		{ReduceVar, dtype.F32, "auto", true, true, false}, {ReduceStd, dtype.BF16, "always", true, true, true},
		{ReduceMax, dtype.F32, "always", true, true, true}, {ReduceProd, dtype.BF16, "auto", true, true, false},
		{ReduceSum, dtype.BF16, "always", false, false, false}, {ReduceNorm2, dtype.F32, "auto", false, false, false},
	} {
		t.Setenv(reduceStripEnv, c.env)
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: []int{4096, 4096}, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if p.stripOn() != (c.one || c.clu) || p.stripAny != c.any_ || (p.stripK != nil) != c.one || (p.stripcK != nil) != c.clu {
			t.Errorf("%s %s %s=%q: strip on %v any %v one-block %v clustered %v, want %v %v", c.op, c.dt, reduceStripEnv, c.env,
				p.stripOn(), p.stripAny, p.stripK != nil, p.stripcK != nil, c.one, c.clu)
			continue
		}
		name := "reduce_bw_" + c.op.String() + "_" + c.dt.Suffix() + "_strip"
		if c.one && (p.stripK.smem != int(p.strip.smem) || p.stripK.smemCap != redStripSmem || p.stripK.name != name || p.strip.chunk != 4096) {
			t.Errorf("%s: strip kernel %q smem %d cap %d chunk %d", c.op, p.stripK.name, p.stripK.smem, p.stripK.smemCap, p.strip.chunk)
		}
		if c.clu && (p.stripcK.smem != int(p.stripc.smem) || p.stripcK.smemCap != redStripSmem || p.stripcK.name != name+"c" || p.stripc.chunk != 2048) {
			t.Errorf("%s: clustered strip kernel %q smem %d chunk %d", c.op, p.stripcK.name, p.stripcK.smem, p.stripc.chunk)
		}
	}
	// reduceStripClusterEnv "never": the one-block form only, f32 too.
	t.Setenv(reduceStripEnv, "")
	t.Setenv(reduceStripClusterEnv, "never")
	if p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{4096, 4096}}); err != nil {
		t.Fatal(err)
	} else if p.stripK == nil || p.stripcK != nil || p.Kernel().Name != "reduce_bw_var_f32_strip" {
		t.Errorf("%s=never: strip kernel %v, clustered %v, Kernel %s; want the first only", reduceStripClusterEnv,
			p.stripK != nil, p.stripcK != nil, p.Kernel().Name)
	}
	t.Setenv(reduceStripClusterEnv, "")
	// Kernel by default and under "auto": the clustered strip where the
	// col slices split.
	for _, c := range []struct {
		env   string
		op    ReduceOp
		shape []int
		axis  int
		want  string
	}{
		{"", ReduceVar, []int{4096, 4096}, 0, "reduce_bw_var_bf16_stripc"}, {"", ReduceVar, []int{4096, 4096}, 1, "reduce_bw_var_bf16_row"},
		{"", ReduceStd, []int{64, 32}, 0, "reduce_bw_std_bf16_col"}, {"", ReduceMax, []int{4096, 4096}, 0, "reduce_bw_max_bf16_stripc"},
		{"auto", ReduceMax, []int{4096, 4096}, 0, "reduce_bw_max_bf16_stripc"}, {"auto", ReduceProd, []int{1000, 600}, 0, "reduce_bw_prod_bf16_flat"},
		{"auto", ReduceMin, []int{64, 32}, 0, "reduce_bw_min_bf16_col"},
	} {
		t.Setenv(reduceStripEnv, c.env)
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: dtype.BF16, Shape: c.shape, Axis: c.axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Kernel().Name; got != c.want {
			t.Errorf("%s %v axis %d under %q: kernel %s, want %s", c.op, c.shape, c.axis, c.env, got, c.want)
		}
	}
	// reduceStripTiesEnv "never": max and min keep their flat path by
	// default (prod has it anyway), and take the strip under "auto".
	t.Setenv(reduceStripTiesEnv, "never")
	for _, c := range []struct {
		env  string
		op   ReduceOp
		want string
	}{
		{"", ReduceMax, "reduce_bw_max_bf16_flat"}, {"", ReduceProd, "reduce_bw_prod_bf16_flat"},
		{"", ReduceVar, "reduce_bw_var_bf16_stripc"}, {"auto", ReduceMin, "reduce_bw_min_bf16_stripc"},
	} {
		t.Setenv(reduceStripEnv, c.env)
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: dtype.BF16, Shape: []int{4096, 4096}, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Kernel().Name; got != c.want {
			t.Errorf("%s=never, %s under %q: kernel %s, want %s", reduceStripTiesEnv, c.op, c.env, got, c.want)
		}
	}
	t.Setenv(reduceStripTiesEnv, "")
	// A shape the strip cannot cut: no strip, whatever the knob.
	t.Setenv(reduceStripEnv, "always")
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.BF16, Shape: []int{1000, 600}, Correction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.stripOn() || p.stripK != nil || p.stripcK != nil {
		t.Errorf("bf16 [1000 600]: strip on %v, want off", p.stripOn())
	}
}

// TestColVecCoversOps: every reduce op and dtype has a col vector width
// (the generated redColVecByOp) of at least 2 slices, a power of two, in
// one access of at most 16 bytes.
func TestColVecCoversOps(t *testing.T) {
	for _, op := range ReduceOps() {
		for _, dt := range dtype.All {
			v := colVec(dt, op)
			if v < 2 || v&(v-1) != 0 || v*int64(dt.Size()) > 16 {
				t.Errorf("%s %s: col vector of %d slices", op, dt.Suffix(), v)
			}
		}
	}
}
