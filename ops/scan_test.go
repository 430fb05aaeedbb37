package ops

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

func init() {
	abiPackers["scan"] = func(a *driver.Args) {
		(&ScanBackward{desc: ScanDesc{Op: ScanCumprod}}).pack(a, &ScanArgs{}, &scanLayout{})
	}
}

func TestScanLayoutSize(t *testing.T) {
	if s := unsafe.Sizeof(scanLayout{}); s != 536 {
		t.Fatalf("scanLayout is %d bytes; ScanLayout in gen/scan.cuh is 536", s)
	}
	if o := unsafe.Offsetof(scanLayout{}.sstride); o != 200 {
		t.Errorf("sstride at offset %d, want 200", o)
	}
	if o := unsafe.Offsetof(scanLayout{}.wsFwd); o != 480 {
		t.Errorf("wsFwd at offset %d, want 480", o)
	}
	if o := unsafe.Offsetof(scanLayout{}.wsFix); o != 488 {
		t.Errorf("wsFix at offset %d, want 488", o)
	}
	if o := unsafe.Offsetof(scanLayout{}.wsUnitFlag); o != 496 {
		t.Errorf("wsUnitFlag at offset %d, want 496", o)
	}
}

func TestNewScanBackwardErrors(t *testing.T) {
	cases := []struct {
		name string
		desc ScanDesc
		want error
		msg  string
	}{
		{"unknown op", ScanDesc{Op: 0, DType: dtype.F32, Shape: []int{4}}, ErrUnsupported, "unknown scan op 0"},
		{"op past the end", ScanDesc{Op: ScanLogcumsumexp + 1, DType: dtype.F32, Shape: []int{4}}, ErrUnsupported, "unknown scan op 6"},
		{"bad dtype", ScanDesc{Op: ScanCumsum, DType: 9, Shape: []int{4}}, ErrDType, "dtype dtype(9)"},
		{"rank 0", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{}}, ErrRank, "rank 0"},
		{"rank 9", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}, ErrRank, "rank 9"},
		{"negative dim", ScanDesc{Op: ScanCummax, DType: dtype.F16, Shape: []int{3, -2}}, ErrShape, "dim 1 is -2"},
		{"axis too large", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{3, 4}, Axis: 2}, ErrAxis, "axis 2 is out of range for rank 2"},
		{"axis too small", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{3, 4}, Axis: -3}, ErrAxis, "axis -3"},
		{"too many elements", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1 << 31, 1 << 31, 4}}, ErrShape, "more than 2^62"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewScanBackward(c.desc)
			wantPlanError(t, err, c.want, "ScanBackward", c.msg)
		})
	}
}

func TestScanPlanInfo(t *testing.T) {
	p, err := NewScanBackward(ScanDesc{Op: ScanLogcumsumexp, DType: dtype.BF16, Shape: []int{8, 4096}, Axis: -1, Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Kernel(); k.Name != "scan_bw_logcumsumexp_bf16_row" || k.Family != "scan" || k.Op != "logcumsumexp" || k.DType != dtype.BF16 {
		t.Errorf("Kernel() = %+v", k)
	}
	if pr := p.Precision(); pr.Math != "f32" || pr.Accumulator != "f32" || !pr.Deterministic || !pr.BitStable {
		t.Errorf("Precision() = %+v", pr)
	}
	if d := p.Desc(); d.Axis != -1 || !d.Reverse || len(d.Shape) != 2 || d.Shape[1] != 4096 {
		t.Errorf("Desc() = %+v", d)
	}
	p.Desc().Shape[0] = 99
	if p.shape[0] != 8 {
		t.Error("Desc() shares the plan's shape")
	}
	col, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F64, Shape: []int{4096, 3}})
	if col.Kernel().Name != "scan_bw_cumsum_f64_col" {
		t.Errorf("axis 0 of [4096 3] runs %s", col.Kernel().Name)
	}
	saved := map[ScanOp][2]bool{ScanCumsum: {false, false}, ScanCumprod: {true, true}, ScanCummax: {true, false},
		ScanCummin: {true, false}, ScanLogcumsumexp: {true, true}}
	for _, op := range ScanOps() {
		x, y := op.Saved()
		if [2]bool{x, y} != saved[op] {
			t.Errorf("%s.Saved() = %v, %v", op, x, y)
		}
	}
	if ScanOp(0).String() != "ScanOp(0)" || ScanCummin.String() != "cummin" {
		t.Error("ScanOp.String")
	}
}

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

// TestScanLayout: slice dims merge where every operand allows, the axis
// strides and the vector flag follow the operands, unused saves are left 0.
func TestScanLayout(t *testing.T) {
	p, err := NewScanBackward(ScanDesc{Op: ScanCumprod, DType: dtype.F32, Shape: []int{2, 3, 4, 5}, Axis: 3})
	if err != nil {
		t.Fatal(err)
	}
	ct := fakeTensor(dtype.F32, 2, 3, 4, 5)
	args := ScanArgs{DY: ct, X: ct, Y: ct, DX: ct}
	var L scanLayout
	p.layout(&args, &L, &p.geom)
	if L.srank != 1 || L.sdim[0] != 24 || L.sstride[0][0] != 5 || L.astride != [4]int64{1, 1, 1, 1} || L.vec != 1 ||
		L.n != 5 || L.nslices != 24 || L.reverse != 0 {
		t.Fatalf("contiguous: %+v", L)
	}
	// A transposed x along the axis: no vector loads; dims 0 and 1 still
	// merge for every operand.
	tx := fakeTensor(dtype.F32, 2, 3, 4, 5)
	tx.Strides = []int{12, 4, 1, 24}
	args.X = tx
	p.layout(&args, &L, &p.geom)
	if L.vec != 0 || L.astride[1] != 24 || L.srank != 1 || L.sstride[1][0] != 1 || L.sstride[0][0] != 5 {
		t.Fatalf("transposed x: %+v", L)
	}
	// An inner axis: the dims around it stay apart; cumsum leaves x, y out.
	q, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{6, 1, 7, 9}, Axis: 2, Reverse: true})
	c2 := fakeTensor(dtype.F32, 6, 1, 7, 9)
	a2 := ScanArgs{DY: c2, X: c2, DX: c2}
	q.layout(&a2, &L, &q.geom)
	if L.srank != 2 || L.sdim[0] != 6 || L.sdim[1] != 9 || L.sstride[3][0] != 63 || L.sstride[3][1] != 1 ||
		L.astride[0] != 9 || L.astride[1] != 0 || L.sstride[1][0] != 0 || L.reverse != 1 {
		t.Fatalf("inner axis: %+v", L)
	}
	if m, s := divMagic(9); L.smagic[1] != m || L.sshift[1] != s {
		t.Errorf("magic of dim 9: %d, %d", L.smagic[1], L.sshift[1])
	}
}

// scanArgs builds contiguous fake operands and, when the plan needs one, a
// workspace after them.
func scanArgs(p *ScanBackward) ScanArgs {
	shape := p.shape
	n := numel(shape) * int64(p.desc.DType.Size())
	mk := func(i int) Tensor {
		return Tensor{Buf: driver.Buffer{Addr: driver.DevicePtr(0x100000 + int64(i)*((n+255)&^255)), Size: n},
			DType: p.desc.DType, Shape: shape}
	}
	a := ScanArgs{DY: mk(0), X: mk(1), Y: mk(2), DX: mk(3)}
	if w := p.WorkspaceSize(); w > 0 {
		a.Workspace = driver.Buffer{Addr: driver.DevicePtr(0x100000 + 4*((n+255)&^255)), Size: w}
	}
	return a
}

func TestScanCheck(t *testing.T) {
	mk := func(op ScanOp, shape ...int) *ScanBackward {
		p, err := NewScanBackward(ScanDesc{Op: op, DType: dtype.F32, Shape: shape, Axis: 0})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	prod := mk(ScanCumprod, 3, 5)
	sum := mk(ScanCumsum, 3, 5)
	lce := mk(ScanLogcumsumexp, 3, 5)
	cmax := mk(ScanCummax, 3, 5)
	long := mk(ScanCummax, 1000, 40)
	if long.WorkspaceSize() == 0 {
		t.Fatal("a 1000-long col axis needs a workspace")
	}
	cases := []struct {
		name   string
		plan   *ScanBackward
		mutate func(*ScanArgs)
		want   error
		msg    string
	}{
		{"valid", prod, func(*ScanArgs) {}, nil, ""},
		{"cumsum ignores saves", sum, func(a *ScanArgs) { a.X, a.Y = Tensor{}, Tensor{} }, nil, ""},
		{"cummax ignores y", cmax, func(a *ScanArgs) { a.Y = Tensor{} }, nil, ""},
		{"missing dy", prod, func(a *ScanArgs) { a.DY = Tensor{} }, ErrMissing, "dy has no buffer"},
		{"missing dx", prod, func(a *ScanArgs) { a.DX = Tensor{} }, ErrMissing, "dx has no buffer"},
		{"missing x", prod, func(a *ScanArgs) { a.X = Tensor{} }, ErrMissingSaved, "x is required by cumprod"},
		{"missing y", lce, func(a *ScanArgs) { a.Y.Buf = driver.Buffer{} }, ErrMissingSaved, "y is required by logcumsumexp"},
		{"missing x cummax", cmax, func(a *ScanArgs) { a.X = Tensor{} }, ErrMissingSaved, "x is required by cummax"},
		{"dtype", prod, func(a *ScanArgs) { a.Y.DType = dtype.BF16 }, ErrDType, "y dtype bf16 must be f32"},
		{"shape", prod, func(a *ScanArgs) { a.DX.Shape = []int{5, 3} }, ErrShape, "dx shape [5 3] must equal [3 5]"},
		{"rank", prod, func(a *ScanArgs) { a.DY.Shape = []int{15} }, ErrShape, "dy shape [15] must equal [3 5]"},
		{"short buffer", prod, func(a *ScanArgs) { a.X.Buf.Size = 59 }, ErrBufferTooSmall, "x needs 60 bytes"},
		{"strided span", prod, func(a *ScanArgs) { a.Y.Strides = []int{10, 1} }, ErrBufferTooSmall, "y needs 100 bytes"},
		{"stride count", prod, func(a *ScanArgs) { a.X.Strides = []int{1} }, ErrLayout, "1 strides"},
		{"negative stride", prod, func(a *ScanArgs) { a.DY.Strides = []int{-5, 1} }, ErrLayout, "must be >= 0"},
		{"misaligned", prod, func(a *ScanArgs) { a.DY.Buf.Addr += 2 }, ErrLayout, "not aligned"},
		{"output broadcast", prod, func(a *ScanArgs) { a.DX.Strides = []int{0, 1} }, ErrLayout, "share memory"},
		{"input broadcast ok", prod, func(a *ScanArgs) { a.X.Strides = []int{0, 1} }, nil, ""},
		{"transposed ok", prod, func(a *ScanArgs) { a.DX.Strides, a.DX.Buf.Size = []int{1, 3}, 60 }, nil, ""},
		{"in place dy", prod, func(a *ScanArgs) { a.DX = a.DY }, nil, ""},
		{"in place x", prod, func(a *ScanArgs) { a.DX = a.X }, nil, ""},
		{"dx overlaps dy", prod, func(a *ScanArgs) { a.DX.Buf = a.DY.Buf; a.DX.Buf.Addr += 8 }, ErrLayout, "dx overlaps dy"},
		{"dx transposes dy", prod, func(a *ScanArgs) { a.DX.Buf = a.DY.Buf; a.DX.Strides = []int{1, 3} }, ErrLayout, "dx overlaps dy"},
		{"dx overlaps x", prod, func(a *ScanArgs) { a.DX.Buf = a.X.Buf; a.DX.Buf.Addr += 4 }, ErrLayout, "dx overlaps x"},
		{"dx is y", prod, func(a *ScanArgs) { a.DX = a.Y }, ErrLayout, "dx overlaps y"},
		{"cumsum dx over unused y", sum, func(a *ScanArgs) { a.DX = a.Y }, nil, ""},
		{"no workspace", long, func(a *ScanArgs) { a.Workspace = driver.Buffer{} }, ErrMissing, "workspace of"},
		{"short workspace", long, func(a *ScanArgs) { a.Workspace.Size-- }, ErrBufferTooSmall, "workspace needs"},
		{"misaligned workspace", long, func(a *ScanArgs) { a.Workspace.Addr += 8 }, ErrLayout, "16-byte aligned"},
		{"workspace over dx", long, func(a *ScanArgs) { a.Workspace.Addr = a.DX.Buf.Addr }, ErrLayout, "workspace overlaps dx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := scanArgs(c.plan)
			c.mutate(&args)
			err := c.plan.Check(&args)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
	// An empty tensor needs no buffers; Run returns at once.
	empty, _ := NewScanBackward(ScanDesc{Op: ScanCumprod, DType: dtype.F32, Shape: []int{4, 0}, Axis: 1})
	ea := ScanArgs{DY: Tensor{DType: dtype.F32, Shape: []int{4, 0}}, X: Tensor{DType: dtype.F32, Shape: []int{4, 0}},
		Y: Tensor{DType: dtype.F32, Shape: []int{4, 0}}, DX: Tensor{DType: dtype.F32, Shape: []int{4, 0}}}
	if err := empty.Check(&ea); err != nil {
		t.Errorf("empty: %v", err)
	}
	if err := empty.Run(nil, &ea); !errors.Is(err, ErrNilStream) {
		t.Errorf("nil stream: %v", err)
	}
}

// FuzzScanDescriptor: random descriptors, strides and buffer sizes never
// panic; every error matches a sentinel.
func FuzzScanDescriptor(f *testing.F) {
	f.Add(uint8(2), uint8(1), int16(3), int16(5), int8(0), false, int8(0), int8(0), int64(64), uint8(0), int64(0))
	f.Add(uint8(3), uint8(4), int16(1000), int16(40), int8(0), true, int8(40), int8(1), int64(1<<20), uint8(2), int64(1<<20))
	f.Add(uint8(5), uint8(3), int16(-1), int16(2), int8(-1), false, int8(1), int8(1), int64(8), uint8(15), int64(8))
	f.Fuzz(func(t *testing.T, op, dt uint8, d0, d1 int16, axis int8, rev bool, s0, s1 int8, size int64, drop uint8, ws int64) {
		desc := ScanDesc{Op: ScanOp(op), DType: dtype.DType(dt), Shape: []int{int(d0), int(d1)}, Axis: int(axis), Reverse: rev}
		p, err := NewScanBackward(desc)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("NewScanBackward: non-sentinel error %v", err)
			}
			return
		}
		mk := func(i int) Tensor {
			tt := Tensor{Buf: driver.Buffer{Addr: driver.DevicePtr(0x10000 * (i + 1)), Size: size}, DType: desc.DType, Shape: desc.Shape}
			if s0 != 0 || s1 != 0 {
				tt.Strides = []int{int(s0), int(s1)}
			}
			if drop&(1<<i) != 0 {
				tt = Tensor{}
			}
			return tt
		}
		args := ScanArgs{DY: mk(0), X: mk(1), Y: mk(2), DX: mk(3), Workspace: driver.Buffer{Addr: 0x1000000, Size: ws}}
		if err := p.Check(&args); err != nil && !isSentinel(err) {
			t.Fatalf("Check: non-sentinel error %v", err)
		}
		var L scanLayout
		if p.Check(&args) == nil && p.numel > 0 {
			p.layout(&args, &L, &p.geom)
		}
	})
}

// TestScanConstantsAgree ties the launcher's constants to the #defines
// and the bf16 run lengths of cumprod, cummax and cummin in gen/scan.cuh:
// a fix pass grid computed for another SCAN_WARPS would leave slices
// without a warp (or run warps past the end), and a col run length that
// differs from the kernel's would cut tiles the kernel does not expect.
func TestScanConstantsAgree(t *testing.T) {
	cuh := genSource(t, "scan.cuh")
	for name, want := range map[string]int{"SCAN_THREADS": scanBlock, "SCAN_WARPS": scanWarps, "SCAN_PAIR_ITEMS": scanPairItems,
		"SCAN_STRIP_W": scanStripW, "SCAN_STRIP_THREADS": scanStripBlock, "SCAN_STRIP_DEPTH": scanStripDepth} {
		got, ok := cuhDefine(cuh, name)
		if !ok {
			t.Errorf("gen/scan.cuh: no #define %s", name)
		} else if got != want {
			t.Errorf("gen/scan.cuh: %s is %d, ops/scan.go assumes %d", name, got, want)
		}
	}
	for spec, ops := range map[string][]ScanOp{"CumprodBw": {ScanCumprod}, "CumExtBw<E> ": {ScanCummax, ScanCummin}} {
		m := regexp.MustCompile(`struct ScanItems<__nv_bfloat16, ` + regexp.QuoteMeta(spec) + `> \{\s*static constexpr int row = (\d+), col = (\d+);`).FindSubmatch(cuh)
		if m == nil {
			t.Errorf("gen/scan.cuh: no ScanItems<__nv_bfloat16, %s>", spec)
			continue
		}
		for _, op := range ops {
			row, col := scanItems(op, dtype.BF16)
			if r, _ := strconv.Atoi(string(m[1])); int64(r) != row {
				t.Errorf("bf16 %s row run: gen/scan.cuh %d, scanItems %d", op, r, row)
			}
			if c, _ := strconv.Atoi(string(m[2])); int64(c) != col {
				t.Errorf("bf16 %s col run: gen/scan.cuh %d, scanItems %d", op, c, col)
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

// laidOut is Run's layout of contiguous operands of p's shape and dtype
// (dy, x and dx in one buffer), after edit.
func laidOut(p *ScanBackward, edit func(a *ScanArgs)) (ScanArgs, scanLayout) {
	ct := fakeTensor(p.desc.DType, p.shape...)
	a := ScanArgs{DY: ct, X: ct, DX: ct}
	edit(&a)
	var L scanLayout
	p.layout(&a, &L, &p.geom)
	return a, L
}

// TestScanPairLayout: pairLayout takes words only where every even slice
// starts one in every row of dy, x and dx.
func TestScanPairLayout(t *testing.T) {
	p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{1000, 6, 8}})
	if err != nil {
		t.Fatal(err)
	}
	if p.pairK == nil {
		t.Fatal("no colpair kernel for bf16 cummax 1000x6x8 axis 0")
	}
	check := func(name string, want bool, edit func(a *ScanArgs)) {
		t.Helper()
		a, L := laidOut(p, edit)
		if got := pairLayout(&a, &L); got != want {
			t.Errorf("%s: pairLayout %v, want %v (%+v)", name, got, want, L)
		}
	}
	check("contiguous", true, func(*ScanArgs) {})
	check("dx 2 bytes off", false, func(a *ScanArgs) { a.DX.Buf.Addr += 2 })
	check("x odd row stride", false, func(a *ScanArgs) { a.X.Strides = []int{49, 8, 1} })
	check("dy padded rows", true, func(a *ScanArgs) { a.DY.Strides = []int{50, 8, 1} })
	// Slice dims that stay apart: the inner one even and contiguous.
	check("padded slice dims", true, func(a *ScanArgs) { a.DY.Strides = []int{60, 10, 1} })
	check("odd outer slice stride", false, func(a *ScanArgs) { a.DY.Strides = []int{70, 9, 1} })
	check("transposed slices", false, func(a *ScanArgs) { a.DX.Strides = []int{48, 1, 6} })
	// y is not an operand of cummax: its layout does not matter.
	check("unused y", true, func(a *ScanArgs) { a.Y = fakeTensor(dtype.BF16, 1000, 6, 8); a.Y.Buf.Addr++ })
	// An odd inner slice dim (merged or not).
	q, err := NewScanBackward(ScanDesc{Op: ScanCummin, DType: dtype.BF16, Shape: []int{1000, 2, 3}, Reverse: true})
	if err != nil || q.pairK == nil {
		t.Fatalf("bf16 cummin 1000x2x3: pair kernel %v (err %v)", q.pairK, err)
	}
	for _, c := range []struct {
		strides []int
		want    bool
	}{{nil, true}, {[]int{8, 4, 1}, false}} {
		a, L := laidOut(q, func(a *ScanArgs) { a.DY.Strides = c.strides })
		if got := pairLayout(&a, &L); got != c.want {
			t.Errorf("1000x2x3 dy strides %v: pairLayout %v, want %v (%+v)", c.strides, got, c.want, L)
		}
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

// TestScanStripLayout: stripLayout takes a layout only where every strip's
// row of dy, x and dx is whole 16-byte pieces, and counts a block per
// strip of 32 slices of the innermost slice dim.
func TestScanStripLayout(t *testing.T) {
	p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{1000, 6, 8}})
	if err != nil {
		t.Fatal(err)
	}
	if p.stripK == nil {
		t.Fatal("no colstrip kernel for bf16 cummax 1000x6x8 axis 0")
	}
	check := func(name string, want bool, blocks int64, edit func(a *ScanArgs)) {
		t.Helper()
		a, L := laidOut(p, edit)
		got, ok := stripLayout(&a, &L)
		if ok != want || (ok && got != blocks) {
			t.Errorf("%s: stripLayout %d, %v, want %d, %v (%+v)", name, got, ok, blocks, want, L)
		}
	}
	check("contiguous: one strip of 48 slices", true, 2, func(*ScanArgs) {})
	check("dx 8 bytes off", false, 0, func(a *ScanArgs) { a.DX.Buf.Addr += 8 })
	check("x row stride not a multiple of 8", false, 0, func(a *ScanArgs) { a.X.Strides = []int{52, 8, 1} })
	check("dy padded rows", true, 2, func(a *ScanArgs) { a.DY.Strides = []int{56, 8, 1} })
	// Slice dims that stay apart: 6 rows of strips of the inner 8 slices.
	check("padded slice dims", true, 6, func(a *ScanArgs) { a.DY.Strides = []int{128, 16, 1} })
	check("outer slice stride not a multiple of 8", false, 0, func(a *ScanArgs) { a.DY.Strides = []int{120, 12, 1} })
	check("transposed slices", false, 0, func(a *ScanArgs) { a.DX.Strides = []int{48, 1, 6} })
	check("unused y", true, 2, func(a *ScanArgs) { a.Y = fakeTensor(dtype.BF16, 1000, 6, 8); a.Y.Buf.Addr++ })
	q, err := NewScanBackward(ScanDesc{Op: ScanCummin, DType: dtype.BF16, Shape: []int{1000, 6, 6}})
	if err != nil || q.stripK == nil {
		t.Fatalf("bf16 cummin 1000x6x6: colstrip kernel %v (err %v)", q.stripK, err)
	}
	a, L := laidOut(q, func(*ScanArgs) {})
	if _, ok := stripLayout(&a, &L); ok {
		t.Errorf("1000x6x6 (36 slices, not a multiple of 8): stripLayout took it (%+v)", L)
	}
	b, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{4096, 4096}})
	if err != nil {
		t.Fatal(err)
	}
	a, L = laidOut(b, func(*ScanArgs) {})
	if n, ok := stripLayout(&a, &L); !ok || n != 128 {
		t.Errorf("4096x4096: stripLayout %d, %v, want 128 blocks", n, ok)
	}
}

// TestScanStripFills: Run takes the colstrip kernel where its blocks run
// in one wave that keeps at least three quarters of the resident places
// busy.
func TestScanStripFills(t *testing.T) {
	for _, c := range []struct {
		blocks   int64
		sms, per int
		want     bool
	}{
		{128, 132, 1, true}, // 4096 slices on an H100
		{104, 132, 1, true},
		{99, 132, 1, true}, // 75%
		{98, 132, 1, false},
		{96, 132, 1, false},
		{132, 132, 1, true},
		{133, 132, 1, false}, // a second wave
		{256, 132, 1, false},
		{160, 80, 2, true},
		{1, 1, 0, true},
	} {
		if got := stripFills(c.blocks, c.sms, c.per); got != c.want {
			t.Errorf("stripFills(%d blocks, %d SMs, %d per SM) = %v, want %v", c.blocks, c.sms, c.per, got, c.want)
		}
	}
}
