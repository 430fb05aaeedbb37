package ops

import (
	"testing"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of scan's kernel layout and launch choices (scan_launch.go): the
// layout's ABI, the slice dims and strides it builds, and where the
// colpair and colstrip kernels apply.

func init() {
	abiPackers["scan"] = func(a *driver.Args) {
		(&ScanBackward{desc: ScanDesc{Op: ScanCumprod}}).pack(a, &ScanArgs{}, &scanLayout{})
	}
}

func TestScanLayoutSize(t *testing.T) {
	if s := unsafe.Sizeof(scanLayout{}); s != 536 {
		t.Fatalf("scanLayout is %d bytes; ScanLayout in gen/zlayouts.cuh is 536", s)
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
