package ops

import (
	"errors"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

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
	col, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F64, Shape: []int{4096, 33}})
	if col.Kernel().Name != "scan_bw_cumsum_f64_col" {
		t.Errorf("axis 0 of [4096 33] runs %s", col.Kernel().Name)
	}
	tall, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F64, Shape: []int{4096, 3}})
	if tall.Kernel().Name != "scan_bw_cumsum_f64_tall" {
		t.Errorf("axis 0 of [4096 3] runs %s", tall.Kernel().Name)
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
