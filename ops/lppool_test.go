package ops

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
)

func init() {
	abiPackers["lppool"] = func(a *driver.Args) {
		(&lpPool{}).pack(a, &LpPoolArgs{}, &lpLayout{})
	}
}

func TestLpLayoutSize(t *testing.T) {
	// gen/zlayouts.cuh static_asserts sizeof(LpPoolLayout) == 312.
	if s := unsafe.Sizeof(lpLayout{}); s != 312 {
		t.Fatalf("lpLayout is %d bytes, LpPoolLayout 312", s)
	}
	if f := familyByName("lppool"); f == nil || f.params[len(f.params)-1].size != 312 {
		t.Fatalf("spec's lppool layout parameter is not 312 bytes")
	}
}

func TestLpOutputSizeMatchesRef(t *testing.T) {
	for l := 1; l <= 12; l++ {
		for k := 1; k <= 14; k++ {
			for s := 1; s <= 6; s++ {
				for _, ceil := range []bool{false, true} {
					got := lpOutputSize(int64(l), int64(k), int64(s), ceil)
					if want := ref.LpPoolOutputSize(l, k, s, ceil); got != int64(want) {
						t.Fatalf("lpOutputSize(%d, %d, %d, %v) = %d, ref %d", l, k, s, ceil, got, want)
					}
				}
			}
		}
	}
}

// TestDivMagic checks bc_div's constants against exact division for
// divisors of every size and dividends up to 2^62 - 1.
func TestDivMagic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	divisors := []int64{1, 2, 3, 5, 6, 7, 9, 63, 64, 65, 127, 1000, 4095, 4097, 1<<30 - 1, 1 << 30, 1<<30 + 1,
		1<<31 - 1, 1<<40 + 3, 1<<61 - 1, 1<<62 - 1}
	for i := 0; i < 200; i++ {
		divisors = append(divisors, 1+rng.Int64N(1<<uint(1+rng.IntN(61))))
	}
	lp := func(n int64, m uint64, s int32) int64 {
		q := uint64(n)
		if m != 0 {
			q, _ = bitsMul64(uint64(n), m)
		}
		return int64(q >> uint(s))
	}
	for _, d := range divisors {
		m, s := divMagic(d)
		ns := []int64{0, 1, d - 1, d, d + 1, 2*d - 1, 1<<62 - 1, 1<<62 - 2, (1<<62 - 1) / d * d, (1<<62-1)/d*d - 1}
		for i := 0; i < 200; i++ {
			ns = append(ns, rng.Int64N(1<<62))
		}
		for _, n := range ns {
			if n < 0 || n >= 1<<62 {
				continue
			}
			if got, want := lp(n, m, s), n/d; got != want {
				t.Fatalf("bc_div(%d) by %d (magic %d, shift %d) = %d, want %d", n, d, m, s, got, want)
			}
		}
	}
}

// TestDivMagic32 checks lp_div32's constants for every divisor up to 4096
// and some larger ones, over dividends up to 2^31 - 1.
func TestDivMagic32(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	divisors := []int64{1<<30 - 1, 1 << 30, 1<<29 + 1, 1<<20 + 7, 123456789}
	for d := int64(1); d <= 4096; d++ {
		divisors = append(divisors, d)
	}
	for _, d := range divisors {
		m, s := divMagic32(d)
		ns := []int64{0, 1, d - 1, d, d + 1, 1<<31 - 1, 1<<31 - 2, (1<<31 - 1) / d * d, (1<<31-1)/d*d - 1}
		for i := 0; i < 50; i++ {
			ns = append(ns, rng.Int64N(1<<31))
		}
		for _, n := range ns {
			if n < 0 {
				continue
			}
			q := uint64(n)
			if m != 0 {
				q = uint64(n) * uint64(m) >> 32
			}
			if got := int64(q >> uint(s)); got != n/d {
				t.Fatalf("lp_div32(%d) by %d (magic %d, shift %d) = %d, want %d", n, d, m, s, got, n/d)
			}
		}
	}
}

// bitsMul64 returns the high and low words of a*b (math/bits.Mul64,
// spelled through math/big to keep the check independent of divMagic's
// own use of math/bits).
func bitsMul64(a, b uint64) (hi, lo uint64) {
	p := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	lo = new(big.Int).And(p, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi = new(big.Int).Rsh(p, 64).Uint64()
	return hi, lo
}

func fakeBuf(elems int64, dt dtype.DType) driver.Buffer {
	return driver.Buffer{Addr: 0x10000, Size: elems * int64(dt.Size())}
}

func lp2dArgs(p *LpPool2dBackward) LpPoolArgs {
	d := p.Desc()
	in := []int{d.N, d.C, d.H, d.W}
	out := p.OutputShape()
	nin, nout := numel(in), numel(out)
	return LpPoolArgs{
		DY: NewTensor(fakeBuf(nout, d.DType), d.DType, out...),
		X:  NewTensor(fakeBuf(nin, d.DType), d.DType, in...),
		Y:  NewTensor(fakeBuf(nout, d.DType), d.DType, out...),
		DX: NewTensor(fakeBuf(nin, d.DType), d.DType, in...),
	}
}

func TestLpPoolDescriptorErrors(t *testing.T) {
	ok2 := LpPool2dDesc{DType: dtype.F32, N: 2, C: 3, H: 9, W: 8, KernelH: 3, KernelW: 2, StrideH: 2, StrideW: 2, P: 2}
	cases := []struct {
		name string
		mod  func(*LpPool2dDesc)
		want error
		msg  string
	}{
		{"dtype", func(d *LpPool2dDesc) { d.DType = 0 }, ErrDType, "dtype invalid"},
		{"p zero", func(d *LpPool2dDesc) { d.P = 0 }, ErrParam, "norm p = 0"},
		{"p negative", func(d *LpPool2dDesc) { d.P = -2 }, ErrParam, "norm p = -2"},
		{"p inf", func(d *LpPool2dDesc) { d.P = math.Inf(1) }, ErrParam, "p = inf, max pooling, is not supported"},
		{"p -inf", func(d *LpPool2dDesc) { d.P = math.Inf(-1) }, ErrParam, "norm p = -Inf"},
		{"p nan", func(d *LpPool2dDesc) { d.P = math.NaN() }, ErrParam, "norm p = NaN"},
		{"negative N", func(d *LpPool2dDesc) { d.N = -1 }, ErrShape, "N = -1"},
		{"negative C", func(d *LpPool2dDesc) { d.C = -4 }, ErrShape, "C = -4"},
		{"negative H", func(d *LpPool2dDesc) { d.H = -1 }, ErrShape, "H = -1"},
		{"huge W", func(d *LpPool2dDesc) { d.W = 1<<30 + 1 }, ErrShape, "W = 1073741825"},
		{"zero kernel H", func(d *LpPool2dDesc) { d.KernelH = 0 }, ErrParam, "kernel H = 0"},
		{"negative kernel W", func(d *LpPool2dDesc) { d.KernelW = -1 }, ErrParam, "kernel W = -1"},
		{"zero stride H", func(d *LpPool2dDesc) { d.StrideH = 0 }, ErrParam, "stride H = 0"},
		{"zero stride W", func(d *LpPool2dDesc) { d.StrideW = 0 }, ErrParam, "stride W = 0"},
		{"empty output", func(d *LpPool2dDesc) { d.KernelW = 9 }, ErrShape, "output size 4x0 < 1"},
		{"zero H", func(d *LpPool2dDesc) { d.H = 0 }, ErrShape, "output size"},
		{"too large", func(d *LpPool2dDesc) { d.N, d.C = 1<<40, 1<<20 }, ErrShape, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := ok2
			c.mod(&d)
			_, err := NewLpPool2dBackward(d)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
	if _, err := NewLpPool2dBackward(ok2); err != nil {
		t.Fatal(err)
	}
	// 1d names its fields as 1d.
	cases1 := []struct {
		d    LpPool1dDesc
		want error
		msg  string
	}{
		{LpPool1dDesc{DType: dtype.F16, N: 1, C: 1, L: 3, Kernel: 4, Stride: 1, P: 2}, ErrShape, "output length 0 < 1 for L = 3, kernel 4"},
		{LpPool1dDesc{DType: dtype.F16, N: 1, C: 1, L: 3, Kernel: 0, Stride: 1, P: 2}, ErrParam, "kernel = 0"},
		{LpPool1dDesc{DType: dtype.F16, N: 1, C: 1, L: 3, Kernel: 1, Stride: -1, P: 2}, ErrParam, "stride = -1"},
		{LpPool1dDesc{DType: dtype.F16, N: 1, C: 1, L: -3, Kernel: 1, Stride: 1, P: 2}, ErrShape, "L = -3"},
		{LpPool1dDesc{DType: dtype.F16, N: 1, C: 1, L: 3, Kernel: 1, Stride: 1, P: -0.5}, ErrParam, "norm p = -0.5"},
	}
	for _, c := range cases1 {
		_, err := NewLpPool1dBackward(c.d)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: error %v, want %v containing %q", c.d, err, c.want, c.msg)
		}
	}
}

func TestLpPoolOutputShapeAndKernel(t *testing.T) {
	p1, err := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.BF16, N: 2, C: 3, L: 5, Kernel: 2, Stride: 2, P: 2, CeilMode: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p1.OutputShape(); !shapeEqual(got, []int{2, 3, 3}) {
		t.Errorf("1d ceil output shape %v, want [2 3 3]", got)
	}
	if k := p1.Kernel(); k.Name != "lppool_bw_p2_bf16_pack" || k.Family != "lppool" || k.Op != "p=2" {
		t.Errorf("kernel %+v", k)
	}
	p2, err := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.F64, N: 1, C: 1, H: 7, W: 6, KernelH: 3, KernelW: 2,
		StrideH: 2, StrideW: 3, P: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if got := p2.OutputShape(); !shapeEqual(got, []int{1, 1, 3, 2}) {
		t.Errorf("2d output shape %v, want [1 1 3 2]", got)
	}
	if k := p2.Kernel(); k.Name != "lppool_bw_general_f64_pack" {
		t.Errorf("kernel %s", k.Name)
	}
	p3, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.F32, N: 1, C: 1, L: 4, Kernel: 2, Stride: 2, P: 1})
	if k := p3.Kernel(); k.Name != "lppool_bw_p1_f32_pack" {
		t.Errorf("kernel %s", k.Name)
	}
	if pr := p3.Precision(); pr.Math != "f32" || pr.Accumulator != "f32" || !pr.Deterministic || !pr.BitStable {
		t.Errorf("precision %+v", pr)
	}
	if p3.WorkspaceSize() != 0 || p2.WorkspaceSize() != 0 {
		t.Error("workspace must be 0")
	}
	// OutputShape returns a copy.
	s := p2.OutputShape()
	s[0] = 99
	if p2.OutputShape()[0] != 1 {
		t.Error("OutputShape aliases the plan")
	}
}

func TestLpPoolCheckErrors(t *testing.T) {
	plan, err := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.F32, N: 2, C: 3, H: 9, W: 8, KernelH: 3, KernelW: 2,
		StrideH: 2, StrideW: 2, P: 2})
	if err != nil {
		t.Fatal(err)
	}
	good := lp2dArgs(plan)
	if err := plan.Check(&good); err != nil {
		t.Fatalf("good args: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*LpPoolArgs)
		want error
		msg  string
	}{
		{"dy shape", func(a *LpPoolArgs) { a.DY.Shape = []int{2, 3, 4, 5} }, ErrShape,
			"dy shape [2 3 4 5] must equal [N, C, H_out, W_out] = [2 3 4 4]"},
		{"x shape", func(a *LpPoolArgs) { a.X.Shape = []int{2, 3, 9} }, ErrShape,
			"x shape [2 3 9] must equal [N, C, H, W] = [2 3 9 8]"},
		{"y shape", func(a *LpPoolArgs) { a.Y.Shape = []int{3, 2, 4, 4} }, ErrShape, "y shape [3 2 4 4] must equal"},
		{"dx shape", func(a *LpPoolArgs) { a.DX.Shape = []int{2, 3, 8, 9} }, ErrShape, "dx shape [2 3 8 9] must equal [N, C, H, W]"},
		{"missing dy", func(a *LpPoolArgs) { a.DY.Buf = driver.Buffer{} }, ErrMissing, "dy has no buffer"},
		{"missing x", func(a *LpPoolArgs) { a.X = Tensor{} }, ErrMissingSaved, "x is required"},
		{"missing y", func(a *LpPoolArgs) { a.Y.Buf = driver.Buffer{} }, ErrMissingSaved, "y is required"},
		{"missing dx", func(a *LpPoolArgs) { a.DX = Tensor{} }, ErrMissing, "dx has no buffer"},
		{"dtype", func(a *LpPoolArgs) { a.Y.DType = dtype.F16 }, ErrDType, "y dtype f16 must be f32"},
		{"dy too small", func(a *LpPoolArgs) { a.DY.Buf.Size -= 4 }, ErrBufferTooSmall, "dy needs 384 bytes"},
		{"x too small", func(a *LpPoolArgs) { a.X.Buf.Size = 100 }, ErrBufferTooSmall, "x needs 1728 bytes"},
		{"strided dx too small", func(a *LpPoolArgs) { a.DX.Strides = []int{500, 144, 16, 2} }, ErrBufferTooSmall, "dx needs"},
		{"stride rank", func(a *LpPoolArgs) { a.X.Strides = []int{1, 1} }, ErrLayout, "x has 2 strides"},
		{"negative stride", func(a *LpPoolArgs) { a.Y.Strides = []int{48, 16, -4, 1} }, ErrLayout, "strides must be >= 0"},
		{"overlapping dx", func(a *LpPoolArgs) { a.DX.Strides = []int{0, 0, 1, 1} }, ErrLayout, "outputs must not overlap"},
		{"misaligned", func(a *LpPoolArgs) { a.X.Buf.Addr += 2 }, ErrLayout, "not aligned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := lp2dArgs(plan)
			c.mod(&a)
			err := plan.Check(&a)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v containing %q", err, c.want, c.msg)
			}
			if !strings.Contains(err.Error(), "LpPool2dBackward(p=2, f32)") {
				t.Errorf("error %q does not name the plan", err)
			}
		})
	}
	if err := plan.Run(nil, &good); !errors.Is(err, ErrNilStream) {
		t.Errorf("Run(nil stream): %v", err)
	}
	// 1d shapes are rank 3 and say so.
	p1, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.F16, N: 2, C: 1, L: 7, Kernel: 3, Stride: 2, P: 3})
	a := LpPoolArgs{
		DY: NewTensor(fakeBuf(6, dtype.F16), dtype.F16, 2, 1, 3),
		X:  NewTensor(fakeBuf(14, dtype.F16), dtype.F16, 2, 1, 7),
		Y:  NewTensor(fakeBuf(6, dtype.F16), dtype.F16, 2, 1, 3),
		DX: NewTensor(fakeBuf(14, dtype.F16), dtype.F16, 2, 1, 7),
	}
	if err := p1.Check(&a); err != nil {
		t.Fatal(err)
	}
	a.X.Shape = []int{2, 1, 1, 7}
	if err := p1.Check(&a); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "x shape [2 1 1 7] must equal [N, C, L] = [2 1 7]") {
		t.Errorf("1d x rank 4: %v", err)
	}
	a.X.Shape = []int{2, 1, 7}
	a.DY.Shape = []int{2, 1, 4}
	if err := p1.Check(&a); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "[N, C, L_out] = [2 1 3]") {
		t.Errorf("1d dy: %v", err)
	}
	// An empty batch needs no buffers.
	pe, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.F32, N: 0, C: 4, L: 7, Kernel: 3, Stride: 2, P: 2})
	e := LpPoolArgs{DY: Tensor{DType: dtype.F32, Shape: []int{0, 4, 3}}, X: Tensor{DType: dtype.F32, Shape: []int{0, 4, 7}},
		Y: Tensor{DType: dtype.F32, Shape: []int{0, 4, 3}}, DX: Tensor{DType: dtype.F32, Shape: []int{0, 4, 7}}}
	if err := pe.Check(&e); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

// TestLpPoolLayout checks the launcher's view: n/c merging, the variant
// choice, the tiling and the partial-window factors.
func TestLpPoolLayout(t *testing.T) {
	plan, _ := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.F32, N: 2, C: 3, H: 9, W: 8, KernelH: 3, KernelW: 3,
		StrideH: 2, StrideW: 2, P: 2, CeilMode: true})
	a := lp2dArgs(plan)
	var L lpLayout
	v, smem := plan.pl.layout(&a, 256, &L)
	// Packs of 4: 2 units a row, windows 0..3 touched, 256 rows a tile (128
	// thread rows of 2, the cap): 256 row records, 8 cell entries, 5 slots
	// a row.
	if v != lpPack || L.rows != 2*3*9 || L.channels != 0 || L.tu != 2 || L.nwMax != 4 || L.tr != 256 ||
		L.segs != 1 || L.total != 1 || smem != 256*lpRowBytes+8*4+256*5*4 {
		t.Errorf("contiguous: variant %d smem %d layout %+v", v, smem, L)
	}
	if n := plan.pl.blockThreads(v, &L); n != 256 {
		t.Errorf("contiguous: %d threads a block, want 256", n)
	}
	if L.ho != 4 || L.wo != 4 || L.stride[0] != [4]int64{216, 72, 8, 1} || L.stride[1] != [4]int64{48, 16, 4, 1} {
		t.Errorf("dims %dx%d strides %v", L.ho, L.wo, L.stride)
	}
	// Ceil mode: last window row starts at 6 (3 rows), last column at 6
	// (2 of 3 columns): K/c = 9/6 for the column, 1 for the row.
	if L.fCol != 1.5 || L.fRow != 1 || L.fCorner != 1.5 {
		t.Errorf("factors col %v row %v corner %v", L.fCol, L.fRow, L.fCorner)
	}
	// Unaligned x: a cell per thread, 8 a row, 32 rows a tile.
	a.X.Buf.Addr += 4
	v, _ = plan.pl.layout(&a, 256, &L)
	if v != lpCell || L.tu != 8 || L.tr != 32 || L.total != 2 || L.nwMax != 4 || plan.pl.blockThreads(v, &L) != 256 {
		t.Errorf("unaligned: variant %d layout %+v", v, L)
	}
	if m, sh := divMagic(1); L.aMagic != m || L.aShift != sh {
		t.Errorf("segment magic %d/%d", L.aMagic, L.aShift)
	}
	// y planes stored c-major: no merge, packs still.
	a = lp2dArgs(plan)
	a.Y.Strides = []int{16, 32, 4, 1}
	v, _ = plan.pl.layout(&a, 256, &L)
	if L.channels != 3 || v != lpPack {
		t.Errorf("swapped y planes: channels %d variant %d", L.channels, v)
	}
	if m, s := divMagic(3); L.cMagic != m || L.cShift != s {
		t.Errorf("channel magic %d/%d, want %d/%d", L.cMagic, L.cShift, m, s)
	}
	// A padded x row (stride 10 along H) keeps packs only if the pack
	// divides it: 10 % 4 != 0.
	a = lp2dArgs(plan)
	a.X.Strides = []int{300, 100, 10, 1}
	a.X.Buf.Size = 600 * 4
	if v, _ = plan.pl.layout(&a, 256, &L); v != lpCell {
		t.Errorf("x row stride 10: variant %d, want cell", v)
	}
	a.X.Strides = []int{288, 96, 12, 1}
	if v, _ = plan.pl.layout(&a, 256, &L); v != lpPack {
		t.Errorf("x row stride 12: variant %d, want pack", v)
	}
	// 1d, C == 1 merges by taking n's stride for c; rows of 512 packs of 8
	// split into 2 segments of 256, each touching 513 windows.
	p1, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.BF16, N: 5, C: 1, L: 4096, Kernel: 4, Stride: 4, P: 2})
	b := LpPoolArgs{
		DY: Tensor{Buf: fakeBuf(10240, dtype.BF16), DType: dtype.BF16, Shape: []int{5, 1, 1024}, Strides: []int{2048, 7, 2}},
		X:  NewTensor(fakeBuf(5*4096, dtype.BF16), dtype.BF16, 5, 1, 4096),
		Y:  NewTensor(fakeBuf(5*1024, dtype.BF16), dtype.BF16, 5, 1, 1024),
		DX: NewTensor(fakeBuf(5*4096, dtype.BF16), dtype.BF16, 5, 1, 4096),
	}
	if err := p1.Check(&b); err != nil {
		t.Fatal(err)
	}
	b.DY.Strides[2] = 1
	v, smem = p1.pl.layout(&b, 256, &L)
	if L.channels != 0 || L.stride[2] != [4]int64{2048, 2048, 0, 1} || L.stride[0] != [4]int64{4096, 4096, 0, 1} {
		t.Errorf("1d C=1 strides %v", L.stride)
	}
	if v != lpPack || L.rows != 5 || L.h != 1 || L.kh != 1 || L.sh != 1 || L.ho != 1 || L.tu != 256 || L.tr != 2 ||
		L.segs != 2 || L.nwMax != 513 || L.total != 6 || smem != 2*lpRowBytes+2048*4+2*514*4 {
		t.Errorf("1d layout: variant %d smem %d %+v", v, smem, L)
	}
	// dy strided along W: the cell variant, 256 cells a segment.
	b.DY.Strides[2] = 2
	if v, _ = p1.pl.layout(&b, 256, &L); v != lpCell || L.tu != 256 || L.segs != 16 {
		t.Errorf("1d dy strided along W: variant %d %+v", v, L)
	}
	// Windows too wide for one pass even a cell per thread: the wide
	// variant, 6131 window columns a pass (24 KiB less a row record, and a
	// zero slot).
	pd, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.F32, N: 2, C: 1, L: 100000, Kernel: 20000, Stride: 1, P: 3})
	d := LpPoolArgs{
		DY: NewTensor(fakeBuf(2*80001, dtype.F32), dtype.F32, 2, 1, 80001),
		X:  NewTensor(fakeBuf(200000, dtype.F32), dtype.F32, 2, 1, 100000),
		Y:  NewTensor(fakeBuf(2*80001, dtype.F32), dtype.F32, 2, 1, 80001),
		DX: NewTensor(fakeBuf(200000, dtype.F32), dtype.F32, 2, 1, 100000),
	}
	v, smem = pd.pl.layout(&d, 256, &L)
	if v != lpWide || L.tu != 256 || L.tr != 1 || L.nwMax != 6131 || L.segs != 391 || L.total != 782 || smem != 24<<10 {
		t.Errorf("wide window: variant %d smem %d %+v", v, smem, L)
	}
	// Windows that fit once a segment holds 256 cells instead of 256 packs.
	pw, _ := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.BF16, N: 1, C: 1, L: 1 << 16, Kernel: 5000, Stride: 1, P: 2})
	w := LpPoolArgs{
		DY: NewTensor(fakeBuf(60537, dtype.BF16), dtype.BF16, 1, 1, 60537),
		X:  NewTensor(fakeBuf(1<<16, dtype.BF16), dtype.BF16, 1, 1, 1<<16),
		Y:  NewTensor(fakeBuf(60537, dtype.BF16), dtype.BF16, 1, 1, 60537),
		DX: NewTensor(fakeBuf(1<<16, dtype.BF16), dtype.BF16, 1, 1, 1<<16),
	}
	v, smem = pw.pl.layout(&w, 256, &L)
	if v != lpCell || L.tu != 256 || L.tr != 1 || L.nwMax != 256+4999 || L.segs != 256 ||
		smem != lpRowBytes+256*4+(256+5000)*4 {
		t.Errorf("wide window, cell segments: variant %d smem %d %+v", v, smem, L)
	}
}

// TestLpPoolCheckDoesNotAllocate: the warm path (Check and the layout)
// allocates nothing.
func TestLpPoolCheckDoesNotAllocate(t *testing.T) {
	plan, _ := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.BF16, N: 2, C: 3, H: 9, W: 8, KernelH: 3, KernelW: 2,
		StrideH: 2, StrideW: 2, P: 2})
	a := lp2dArgs(plan)
	var L lpLayout
	n := testing.AllocsPerRun(100, func() {
		if err := plan.Check(&a); err != nil {
			t.Fatal(err)
		}
		plan.pl.layout(&a, 256, &L)
		args := driver.GetArgs()
		plan.pl.pack(args, &a, &L)
		driver.PutArgs(args)
	})
	if n != 0 {
		t.Errorf("%v allocations per Check+layout+pack", n)
	}
}

// FuzzLpPoolDescriptor: random descriptors and operand shapes never make
// the constructors or Check panic, and every error wraps a sentinel.
func FuzzLpPoolDescriptor(f *testing.F) {
	f.Add(uint8(1), int16(2), int16(3), int16(9), int16(8), int16(3), int16(2), int16(2), int16(2), 2.0, true, false, int16(0), uint16(0))
	f.Add(uint8(2), int16(1), int16(1), int16(5), int16(5), int16(6), int16(1), int16(1), int16(1), 0.0, false, true, int16(-1), uint16(3))
	f.Fuzz(func(t *testing.T, dt uint8, n, c, h, w, kh, kw, sh, sw int16, p float64, ceil, oneD bool, bump int16, size uint16) {
		sentinels := []error{ErrUnsupported, ErrShape, ErrDType, ErrMissing, ErrMissingSaved, ErrBufferTooSmall,
			ErrLayout, ErrAxis, ErrRank, ErrParam, ErrNilStream}
		valid := func(err error) {
			if err == nil {
				return
			}
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		var in, out []int
		var check func(*LpPoolArgs) error
		if oneD {
			plan, err := NewLpPool1dBackward(LpPool1dDesc{DType: dtype.DType(dt), N: int(n), C: int(c), L: int(w),
				Kernel: int(kw), Stride: int(sw), P: p, CeilMode: ceil})
			valid(err)
			if err != nil {
				return
			}
			in, out, check = []int{int(n), int(c), int(w)}, plan.OutputShape(), plan.Check
		} else {
			plan, err := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.DType(dt), N: int(n), C: int(c), H: int(h), W: int(w),
				KernelH: int(kh), KernelW: int(kw), StrideH: int(sh), StrideW: int(sw), P: p, CeilMode: ceil})
			valid(err)
			if err != nil {
				return
			}
			in, out, check = []int{int(n), int(c), int(h), int(w)}, plan.OutputShape(), plan.Check
		}
		d := dtype.DType(dt)
		mk := func(shape []int, k int) Tensor {
			s := append([]int(nil), shape...)
			if k == int(size%5) && len(s) > 0 {
				s[len(s)-1] += int(bump)
			}
			return NewTensor(driver.Buffer{Addr: 0x10000, Size: int64(size) * int64(d.Size())}, d, s...)
		}
		a := LpPoolArgs{DY: mk(out, 0), X: mk(in, 1), Y: mk(out, 2), DX: mk(in, 3)}
		if size%7 == 0 {
			a.X.Strides = make([]int, len(in))
			for i := range a.X.Strides {
				a.X.Strides[i] = int(bump) + i
			}
		}
		valid(check(&a))
	})
}
