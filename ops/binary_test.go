package ops

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// fakeTensor is a contiguous tensor over a made-up device address: Check
// never touches the device.
func fakeTensor(dt dtype.DType, shape ...int) Tensor {
	return Tensor{Buf: driver.Buffer{Addr: 0x100000, Size: numel(shape) * int64(dt.Size())}, DType: dt, Shape: shape}
}

func TestNewBinaryBackwardErrors(t *testing.T) {
	cases := []struct {
		name string
		desc BinaryDesc
		want error
		msg  string
	}{
		{"unknown op", BinaryDesc{Op: 0, DType: dtype.F32, Shape: []int{4}}, ErrUnsupported, "unknown binary op"},
		{"op past the end", BinaryDesc{Op: BinaryLerp + 1, DType: dtype.F32}, ErrUnsupported, "unknown binary op"},
		{"bad dtype", BinaryDesc{Op: BinaryMul, DType: 0, Shape: []int{4}}, ErrDType, "dtype invalid"},
		{"negative dim", BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{4, -1}}, ErrShape, "dim 1 is -1"},
		{"rank 9", BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}, ErrRank, "rank 9"},
		{"NaN weight", BinaryDesc{Op: BinaryLerp, DType: dtype.F32, Shape: []int{4}, Weight: math.NaN()}, ErrParam, "must be finite"},
		{"inf alpha", BinaryDesc{Op: BinaryAdd, DType: dtype.F32, Shape: []int{4}, Alpha: math.Inf(1)}, ErrParam, "must be finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewBinaryBackward(c.desc)
			wantPlanError(t, err, c.want, "BinaryBackward", c.msg)
		})
	}
}

func TestBinaryCheck(t *testing.T) {
	shape := []int{3, 5}
	ok := func() BinaryArgs {
		return BinaryArgs{DY: fakeTensor(dtype.F32, 3, 5), A: fakeTensor(dtype.F32, 3, 5), B: fakeTensor(dtype.F32, 3, 5),
			DA: fakeTensor(dtype.F32, 3, 5), DB: fakeTensor(dtype.F32, 3, 5)}
	}
	mul, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	add, err := NewBinaryBackward(BinaryDesc{Op: BinaryAdd, DType: dtype.F32, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		plan   *BinaryBackward
		mutate func(*BinaryArgs)
		want   error
		msg    string
	}{
		{"valid", mul, func(*BinaryArgs) {}, nil, ""},
		{"add ignores saves", add, func(a *BinaryArgs) { a.A, a.B = Tensor{}, Tensor{} }, nil, ""},
		{"only da", mul, func(a *BinaryArgs) { a.DB = Tensor{} }, nil, ""},
		{"no outputs", mul, func(a *BinaryArgs) { a.DA, a.DB = Tensor{}, Tensor{} }, ErrMissing, "neither da nor db"},
		{"missing a", mul, func(a *BinaryArgs) { a.A = Tensor{} }, ErrMissingSaved, "a is required by mul"},
		{"missing b", mul, func(a *BinaryArgs) { a.B.Buf = driver.Buffer{} }, ErrMissingSaved, "b is required"},
		{"missing dy", mul, func(a *BinaryArgs) { a.DY = Tensor{} }, ErrMissing, "dy has no buffer"},
		{"dtype", mul, func(a *BinaryArgs) { a.B.DType = dtype.F16 }, ErrDType, "b dtype f16 must be f32"},
		{"shape", mul, func(a *BinaryArgs) { a.DA.Shape = []int{5, 3} }, ErrShape, "da shape [5 3] must equal [3 5]"},
		{"rank", mul, func(a *BinaryArgs) { a.DY.Shape = []int{15} }, ErrShape, "dy shape [15] must equal [3 5]"},
		{"short buffer", mul, func(a *BinaryArgs) { a.DB.Buf.Size = 59 }, ErrBufferTooSmall, "db needs 60 bytes"},
		{"strided span", mul, func(a *BinaryArgs) { a.A.Strides = []int{10, 1} }, ErrBufferTooSmall, "a needs 100 bytes"},
		{"stride count", mul, func(a *BinaryArgs) { a.A.Strides = []int{1} }, ErrLayout, "1 strides"},
		{"negative stride", mul, func(a *BinaryArgs) { a.DY.Strides = []int{-5, 1} }, ErrLayout, "must be >= 0"},
		{"misaligned", mul, func(a *BinaryArgs) { a.DY.Buf.Addr += 2 }, ErrLayout, "not aligned"},
		{"output broadcast", mul, func(a *BinaryArgs) { a.DA.Strides = []int{0, 1} }, ErrLayout, "share memory"},
		{"output overlap", mul, func(a *BinaryArgs) { a.DA.Strides = []int{2, 1} }, ErrLayout, "share memory"},
		{"input broadcast ok", mul, func(a *BinaryArgs) { a.A.Strides = []int{0, 1} }, nil, ""},
		{"transposed output ok", mul, func(a *BinaryArgs) { a.DA.Strides = []int{1, 3} }, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := ok()
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
}

func TestBinaryPlanInfo(t *testing.T) {
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryPow, DType: dtype.BF16, Shape: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Kernel(); k.Name != "binary_bw_pow_bf16" || k.Family != "binary" || k.Op != "pow" || k.DType != dtype.BF16 {
		t.Errorf("Kernel() = %+v", k)
	}
	if pr := p.Precision(); pr.Math != "f32" || pr.Accumulator != "" || !pr.Deterministic || !pr.BitStable {
		t.Errorf("Precision() = %+v", pr)
	}
	if p.WorkspaceSize() != 0 {
		t.Error("binary ops need no workspace")
	}
	add, _ := NewBinaryBackward(BinaryDesc{Op: BinaryAdd, DType: dtype.F64, Shape: []int{2}})
	if add.scalar != 1 {
		t.Errorf("Add with zero Alpha uses %v, want PyTorch's default 1", add.scalar)
	}
	lerp, _ := NewBinaryBackward(BinaryDesc{Op: BinaryLerp, DType: dtype.F64, Shape: []int{2}, Weight: 0})
	if lerp.scalar != 0 {
		t.Errorf("Lerp weight 0 became %v", lerp.scalar)
	}
}

func TestCollapse(t *testing.T) {
	contig := func(shape ...int) *Tensor { t := fakeTensor(dtype.F32, shape...); return &t }
	// Contiguous operands of any shape merge into one dim.
	ts := [5]*Tensor{contig(2, 3, 4), contig(2, 3, 4), nil, contig(2, 3, 4), nil}
	v := collapse([]int{2, 3, 4}, &ts)
	if v.rank != 1 || v.dim[0] != 24 || !v.contiguous(&ts) {
		t.Fatalf("contiguous collapse: %+v", v)
	}
	// A transposed operand keeps two dims; size-1 dims vanish.
	tr := fakeTensor(dtype.F32, 3, 1, 4)
	tr.Strides = []int{1, 1, 3}
	ts = [5]*Tensor{contig(3, 1, 4), &tr, nil, nil, nil}
	v = collapse([]int{3, 1, 4}, &ts)
	if v.rank != 2 || v.dim != [MaxRank]int64{3, 4} || v.stride[1][0] != 1 || v.stride[1][1] != 3 || v.stride[0][0] != 4 {
		t.Fatalf("transposed collapse: %+v", v)
	}
	if v.contiguous(&ts) {
		t.Error("transposed view reported contiguous")
	}
	// A padded row stride blocks the merge of that pair only.
	pd := fakeTensor(dtype.F32, 2, 3, 4)
	pd.Strides = []int{15, 5, 1}
	ts = [5]*Tensor{&pd, nil, nil, nil, nil}
	v = collapse([]int{2, 3, 4}, &ts)
	if v.rank != 2 || v.dim[0] != 6 || v.dim[1] != 4 || v.stride[0][0] != 5 {
		t.Fatalf("padded collapse: %+v", v)
	}
}

func TestOverlaps(t *testing.T) {
	cases := []struct {
		shape, strides []int
		want           bool
	}{
		{[]int{3, 4}, []int{4, 1}, false},
		{[]int{3, 4}, []int{1, 3}, false},
		{[]int{3, 4}, []int{5, 1}, false},
		{[]int{3, 4}, []int{2, 1}, true},
		{[]int{3, 4}, []int{0, 1}, true},
		{[]int{1, 4}, []int{0, 1}, false},
		{[]int{2, 2, 2}, []int{1, 2, 4}, false},
		{[]int{2, 2, 2}, []int{1, 1, 4}, true},
	}
	for _, c := range cases {
		tt := Tensor{Shape: c.shape, Strides: c.strides}
		if got := overlaps(&tt); got != c.want {
			t.Errorf("overlaps(%v, %v) = %v, want %v", c.shape, c.strides, got, c.want)
		}
	}
}

func TestGridCover(t *testing.T) {
	cases := []struct {
		work int64
		want uint32
	}{{0, 1}, {1, 1}, {256, 1}, {257, 2}, {1 << 24, 1 << 16}, {1 << 40, maxGridX}}
	for _, c := range cases {
		if got := gridCover(c.work, 256); got != c.want {
			t.Errorf("gridCover(%d) = %d, want %d", c.work, got, c.want)
		}
	}
}

// sentinels are every error a plan may return for bad input.
var sentinels = []error{ErrUnsupported, ErrShape, ErrDType, ErrMissing, ErrMissingSaved, ErrBufferTooSmall,
	ErrLayout, ErrAxis, ErrRank, ErrParam, ErrNilStream}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzBinaryDescriptor: random descriptors, shapes, strides and buffer
// sizes never panic; every error matches a sentinel.
func FuzzBinaryDescriptor(f *testing.F) {
	f.Add(uint8(3), uint8(1), int8(3), int8(5), int8(0), int8(0), int64(64), uint8(0), 0.5)
	f.Add(uint8(10), uint8(3), int8(-1), int8(2), int8(1), int8(1), int64(8), uint8(7), 1.0)
	f.Fuzz(func(t *testing.T, op, dt uint8, d0, d1, s0, s1 int8, size int64, drop uint8, scalar float64) {
		desc := BinaryDesc{Op: BinaryOp(op), DType: dtype.DType(dt), Shape: []int{int(d0), int(d1)}, Alpha: scalar, Weight: scalar}
		p, err := NewBinaryBackward(desc)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("NewBinaryBackward: non-sentinel error %v", err)
			}
			return
		}
		mk := func(i int) Tensor {
			tt := Tensor{Buf: driver.Buffer{Addr: 0x10000, Size: size}, DType: desc.DType, Shape: desc.Shape}
			if s0 != 0 || s1 != 0 {
				tt.Strides = []int{int(s0), int(s1)}
			}
			if drop&(1<<i) != 0 {
				tt = Tensor{}
			}
			return tt
		}
		args := BinaryArgs{DY: mk(0), A: mk(1), B: mk(2), DA: mk(3), DB: mk(4)}
		if err := p.Check(&args); err != nil && !isSentinel(err) {
			t.Fatalf("Check: non-sentinel error %v", err)
		}
	})
}

// wantPlanError fails unless err wraps want and its message starts with
// "ops: <plan>(" and contains msg.
func wantPlanError(t *testing.T, err, want error, plan, msg string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), msg) || !strings.HasPrefix(err.Error(), "ops: "+plan+"(") {
		t.Errorf("message %q lacks %q", err, msg)
	}
}
