package ops

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// redTensor is a tensor over a made-up device address (Check never touches
// the device); each call gets its own address range so operands are
// disjoint.
var redNextAddr driver.DevicePtr = 0x1000000

func redTensor(dt dtype.DType, shape ...int) Tensor {
	redNextAddr += 0x1000000
	return Tensor{Buf: driver.Buffer{Addr: redNextAddr, Size: numel(shape) * int64(dt.Size())}, DType: dt, Shape: shape}
}

func TestReduceOpNames(t *testing.T) {
	want := []string{"sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"}
	ops := ReduceOps()
	if len(ops) != len(want) {
		t.Fatalf("%d ops, want %d", len(ops), len(want))
	}
	for i, op := range ops {
		if op.String() != want[i] {
			t.Errorf("op %d is %q, want %q", i, op, want[i])
		}
		// The spec instantiates a variant for exactly the ops whose plans
		// refer to it: no kernel a plan needs is missing, and none is
		// compiled that no plan takes.
		want := map[string]bool{"row": true, "col": true, "flat": true,
			"stats": op.hasStats(), "apply": op.hasStats(), "strip": op.hasStats(), "cluster": op.hasStats(),
			"stripc": op.hasStats(), "one": op.hasStats() && !op.provisional(), "fix": op.provisional(), "short": true}
		for _, dt := range dtype.All {
			for v, w := range want {
				if _, ok := lookupKernel("reduce", op.String(), dt, v); ok != w {
					t.Errorf("reduce %s %s %s: in the table %v, want %v", op, dt, v, ok, w)
				}
			}
		}
	}
	if s := ReduceOp(0).String(); s != "ReduceOp(0)" {
		t.Errorf("zero op prints %q", s)
	}
}

func TestNewReduceBackwardErrors(t *testing.T) {
	cases := []struct {
		name string
		desc ReduceDesc
		want error
		msg  string
	}{
		{"unknown op", ReduceDesc{Op: 0, DType: dtype.F32, Shape: []int{4}}, ErrUnsupported, "unknown reduce op 0"},
		{"op past the end", ReduceDesc{Op: ReduceStd + 1, DType: dtype.F32, Shape: []int{4}}, ErrUnsupported, "unknown reduce op"},
		{"bad dtype", ReduceDesc{Op: ReduceSum, DType: 9, Shape: []int{4}}, ErrDType, "dtype(9)"},
		{"rank 0", ReduceDesc{Op: ReduceSum, DType: dtype.F32}, ErrRank, "rank 0"},
		{"rank 9", ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}, ErrRank, "rank 9"},
		{"negative dim", ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{4, -2}}, ErrShape, "dim 1 is -2"},
		{"axis too big", ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{4, 5}, Axis: 2}, ErrAxis, "axis 2 is out of range for rank 2, shape [4 5] (rank 2 takes -2..1)"},
		{"axis too negative", ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{4, 5}, Axis: -3}, ErrAxis, "axis -3"},
		{"overflow", ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1 << 31, 1 << 31, 1 << 2}}, ErrShape, "more than 2^60"},
		{"max-long-slice", ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{1 << 33}}, ErrShape, "counts over at most 4294967295"},
		{"max empty axis", ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{3, 0}, Axis: 1}, ErrShape, "reduced axis 1 of shape [3 0] has length 0"},
		{"min empty axis", ReduceDesc{Op: ReduceMin, DType: dtype.BF16, Shape: []int{0}, Axis: -1}, ErrShape, "has length 0"},
		{"NaN correction", ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{4}, Correction: math.NaN()}, ErrParam, "correction NaN must be finite"},
		{"inf correction", ReduceDesc{Op: ReduceStd, DType: dtype.F32, Shape: []int{4}, Correction: math.Inf(-1)}, ErrParam, "must be finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewReduceBackward(c.desc)
			wantPlanError(t, err, c.want, "ReduceBackward", c.msg)
		})
	}
	// Accepted: empty tensors (not max/min over an empty axis), negative
	// axes, any correction for ops that ignore it.
	for _, d := range []ReduceDesc{
		{Op: ReduceSum, DType: dtype.F32, Shape: []int{3, 0}, Axis: 1},
		{Op: ReduceMax, DType: dtype.F32, Shape: []int{0, 3}, Axis: 1},
		{Op: ReduceVar, DType: dtype.F64, Shape: []int{2, 3}, Axis: -2, Correction: 7.5},
		{Op: ReduceSum, DType: dtype.F16, Shape: []int{2}, Correction: math.NaN()},
	} {
		if _, err := NewReduceBackward(d); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
}

func TestReduceDesc(t *testing.T) {
	shape := []int{4, 7, 9}
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.BF16, Shape: shape, Axis: -2, Correction: 1})
	if err != nil {
		t.Fatal(err)
	}
	shape[0] = 99 // the plan keeps its own copy
	d := p.Desc()
	if d.Shape[0] != 4 || d.Axis != -2 || d.Correction != 1 {
		t.Errorf("Desc() = %+v", d)
	}
	d.Shape[1] = 99
	if p.Desc().Shape[1] != 7 {
		t.Error("Desc() shares the plan's shape")
	}
	if k := p.KeepdimShape(); !shapeEqual(k, []int{4, 1, 9}) {
		t.Errorf("KeepdimShape() = %v", k)
	}
	if ki := p.Kernel(); ki.Name != "reduce_bw_var_bf16_col" || ki.Family != "reduce" || ki.Op != "var" {
		t.Errorf("Kernel() = %+v", ki)
	}
	for _, c := range []struct {
		op    ReduceOp
		shape []int
		axis  int
		want  string
	}{
		{ReduceMax, []int{4096, 4096}, 1, "reduce_bw_max_f32_row"},
		{ReduceMax, []int{4096, 4096}, 0, "reduce_bw_max_f32_stripc"},
		{ReduceMax, []int{4096, 4100}, 0, "reduce_bw_max_f32_flat"},
		{ReduceMax, []int{4096, 4095}, 0, "reduce_bw_max_f32_apply"},
		{ReduceProd, []int{3, 1 << 20}, 1, "reduce_bw_prod_f32_flat"},
		{ReduceProd, []int{3, 1<<20 + 1}, 1, "reduce_bw_prod_f32_apply"},
		{ReduceVar, []int{4096, 4096}, 0, "reduce_bw_var_f32_stripc"},
		{ReduceVar, []int{4096, 4095}, 0, "reduce_bw_var_f32_one"},
		{ReduceVar, []int{100000, 3}, 0, "reduce_bw_var_f32_apply"},
		{ReduceSum, []int{4096, 4096}, 0, "reduce_bw_sum_f32_flat"},
		{ReduceSum, []int{4096, 4095}, 0, "reduce_bw_sum_f32_col"},
		{ReduceSum, []int{8, 1}, 0, "reduce_bw_sum_f32_flat"},
		{ReduceSum, []int{7, 1}, 0, "reduce_bw_sum_f32_row"},
		{ReduceLogSumExp, []int{4096, 4096}, 1, "reduce_bw_logsumexp_f32_flat"},
		{ReduceStd, []int{3, 1 << 20}, 1, "reduce_bw_std_f32_flat"},
		{ReduceStd, []int{3, 1<<20 + 2}, 1, "reduce_bw_std_f32_apply"},
	} {
		q, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: dtype.F32, Shape: c.shape, Axis: c.axis})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Kernel().Name; got != c.want {
			t.Errorf("%s %v axis %d: Kernel() %s, want %s", c.op, c.shape, c.axis, got, c.want)
		}
	}
	if pr := p.Precision(); pr.Math != "f32" || pr.Accumulator != "f32" || !pr.Deterministic || !pr.BitStable {
		t.Errorf("Precision() = %+v", pr)
	}
	s, _ := NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F64, Shape: []int{3}})
	if pr := s.Precision(); pr.Math != "f64" || pr.Accumulator != "" {
		t.Errorf("sum Precision() = %+v", pr)
	}
}

func TestReduceScale(t *testing.T) {
	cases := []struct {
		op   ReduceOp
		dt   dtype.DType
		k    int
		c    float64
		want float64
	}{
		{ReduceMean, dtype.F32, 3, 0, float64(float32(1) / float32(3))},
		{ReduceMean, dtype.BF16, 3, 0, float64(float32(1) / float32(3))},
		{ReduceMean, dtype.F64, 3, 0, 1.0 / 3},
		{ReduceVar, dtype.F32, 5, 1, 0.5},
		{ReduceStd, dtype.F16, 4, 0, 0.5},
		{ReduceVar, dtype.F32, 2, 2, math.Inf(1)},
		{ReduceVar, dtype.F32, 2, 4, -1},
	}
	for _, c := range cases {
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: []int{c.k}, Correction: c.c})
		if err != nil {
			t.Fatal(err)
		}
		if p.scale != c.want {
			t.Errorf("%s %s k=%d c=%v: scale %v, want %v", c.op, c.dt, c.k, c.c, p.scale, c.want)
		}
	}
}

// redArgs returns valid args for plan p (x and y included).
func redArgs(p *ReduceBackward) ReduceArgs {
	dt := p.desc.DType
	a := ReduceArgs{DY: redTensor(dt, p.keep...), X: redTensor(dt, p.shape...), Y: redTensor(dt, p.keep...),
		DX: redTensor(dt, p.shape...)}
	if p.ws > 0 {
		redNextAddr += 0x1000000
		a.Workspace = driver.Buffer{Addr: redNextAddr, Size: p.ws}
	}
	return a
}

func TestReduceCheck(t *testing.T) {
	mk := func(d ReduceDesc) *ReduceBackward {
		p, err := NewReduceBackward(d)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	vr := mk(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{4, 7, 9}, Axis: 1, Correction: 1})
	sum := mk(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{4, 7, 9}, Axis: 1})
	split := mk(ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{4096, 64}, Axis: 0})
	if split.WorkspaceSize() == 0 {
		t.Fatal("a max over 4096 rows of 64 columns should need a workspace")
	}
	cases := []struct {
		name   string
		plan   *ReduceBackward
		mutate func(*ReduceArgs)
		want   error
		msg    string
	}{
		{"valid", vr, func(*ReduceArgs) {}, nil, ""},
		{"valid split", split, func(*ReduceArgs) {}, nil, ""},
		{"sum ignores saves", sum, func(a *ReduceArgs) { a.X, a.Y = Tensor{}, Tensor{} }, nil, ""},
		{"strided operands", vr, func(a *ReduceArgs) {
			a.X.Strides, a.X.Buf.Size = []int{1, 4, 28}, 4*252
			a.DY.Strides = []int{9, 100, 1}
			a.DY.Buf.Size = 4 * 36
		}, nil, ""},
		{"nil args", vr, nil, ErrMissing, "args is nil"},
		{"missing dy", vr, func(a *ReduceArgs) { a.DY = Tensor{} }, ErrMissing, "dy has no buffer"},
		{"missing x", vr, func(a *ReduceArgs) { a.X = Tensor{} }, ErrMissingSaved, "x is required by var"},
		{"missing y", vr, func(a *ReduceArgs) { a.Y.Buf = driver.Buffer{} }, ErrMissingSaved, "y is required by var"},
		{"missing dx", vr, func(a *ReduceArgs) { a.DX = Tensor{} }, ErrMissing, "dx has no buffer"},
		{"dtype dy", vr, func(a *ReduceArgs) { a.DY.DType = dtype.F16 }, ErrDType, "dy dtype f16 must be f32"},
		{"dtype x", vr, func(a *ReduceArgs) { a.X.DType = dtype.F64 }, ErrDType, "x dtype f64 must be f32"},
		{"dtype dx", vr, func(a *ReduceArgs) { a.DX.DType = dtype.BF16 }, ErrDType, "dx dtype bf16 must be f32"},
		{"dy not keepdim", vr, func(a *ReduceArgs) { a.DY.Shape = []int{4, 7, 9} }, ErrShape,
			"dy shape [4 7 9] must equal [4 1 9] (the input shape [4 7 9] with axis 1 set to 1, keepdim=True) or [4 9] (axis 1 removed, keepdim=False)"},
		{"dy reduced", vr, func(a *ReduceArgs) { a.DY.Shape = []int{4, 9} }, nil, ""},
		{"dy and y reduced, strided", vr, func(a *ReduceArgs) {
			a.DY.Shape, a.DY.Strides, a.DY.Buf.Size = []int{4, 9}, []int{1, 4}, 4*36
			a.Y.Shape = []int{4, 9}
		}, nil, ""},
		{"dy reduced wrongly", vr, func(a *ReduceArgs) { a.DY.Shape = []int{4, 7} }, ErrShape, "dy shape [4 7] must equal [4 1 9]"},
		{"y reduced, short", vr, func(a *ReduceArgs) { a.Y.Shape, a.Y.Buf.Size = []int{4, 9}, 4*35 }, ErrBufferTooSmall, "y needs 144 bytes"},
		{"y shape", vr, func(a *ReduceArgs) { a.Y.Shape = []int{1, 7, 9} }, ErrShape, "y shape [1 7 9] must equal [4 1 9]"},
		{"x shape", vr, func(a *ReduceArgs) { a.X.Shape = []int{4, 1, 9} }, ErrShape, "x shape [4 1 9] must equal the input shape [4 7 9]"},
		{"dx shape", vr, func(a *ReduceArgs) { a.DX.Shape = []int{4, 9, 7} }, ErrShape, "dx shape [4 9 7] must equal the input shape [4 7 9]"},
		{"short x", vr, func(a *ReduceArgs) { a.X.Buf.Size = 4*252 - 1 }, ErrBufferTooSmall, "x needs 1008 bytes"},
		{"short dy", vr, func(a *ReduceArgs) { a.DY.Buf.Size = 8 }, ErrBufferTooSmall, "dy needs 144 bytes"},
		{"strided span", vr, func(a *ReduceArgs) { a.DX.Strides = []int{100, 10, 1} }, ErrBufferTooSmall, "dx needs"},
		{"stride count", vr, func(a *ReduceArgs) { a.Y.Strides = []int{1} }, ErrLayout, "1 strides"},
		{"negative stride", vr, func(a *ReduceArgs) { a.X.Strides = []int{63, -9, 1} }, ErrLayout, "stride 1 is -9"},
		{"overlapping dx", vr, func(a *ReduceArgs) { a.DX.Strides = []int{9, 1, 1} }, ErrLayout, "make elements share memory"},
		{"misaligned", vr, func(a *ReduceArgs) { a.DX.Buf.Addr += 2 }, ErrLayout, "not aligned"},
		{"dx is x", vr, func(a *ReduceArgs) { a.DX.Buf = a.X.Buf }, ErrLayout, "overlaps x"},
		{"dx meets dy", vr, func(a *ReduceArgs) { a.DY.Buf.Addr = a.DX.Buf.Addr + 64 }, ErrLayout, "overlaps dy"},
		{"dx meets y", vr, func(a *ReduceArgs) { a.Y.Buf.Addr = a.DX.Buf.Addr + 4*251 }, ErrLayout, "overlaps y"},
		{"missing workspace", split, func(a *ReduceArgs) { a.Workspace = driver.Buffer{} }, ErrMissing, "workspace is required"},
		{"short workspace", split, func(a *ReduceArgs) { a.Workspace.Size-- }, ErrBufferTooSmall, "workspace needs"},
		{"misaligned workspace", split, func(a *ReduceArgs) { a.Workspace.Addr += 8 }, ErrLayout, "16-byte aligned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.mutate == nil {
				err = c.plan.Check(nil)
			} else {
				a := redArgs(c.plan)
				c.mutate(&a)
				err = c.plan.Check(&a)
			}
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
		})
	}
	// Empty tensors need no buffers and skip the overlap checks.
	e := mk(ReduceDesc{Op: ReduceProd, DType: dtype.F16, Shape: []int{5, 0}, Axis: 1})
	a := ReduceArgs{DY: Tensor{DType: dtype.F16, Shape: []int{5, 1}}, X: Tensor{DType: dtype.F16, Shape: []int{5, 0}},
		Y: Tensor{DType: dtype.F16, Shape: []int{5, 1}}, DX: Tensor{DType: dtype.F16, Shape: []int{5, 0}}}
	a.DY = redTensor(dtype.F16, 5, 1)
	a.Y = redTensor(dtype.F16, 5, 1)
	if err := e.Check(&a); err != nil {
		t.Errorf("empty: %v", err)
	}
	if e.WorkspaceSize() != 0 {
		t.Errorf("empty: workspace %d", e.WorkspaceSize())
	}
	if err := e.Run(nil, &a); !errors.Is(err, ErrNilStream) {
		t.Errorf("nil stream: %v", err)
	}
}

// FuzzReduceDescriptor: random descriptors and operands never panic the
// constructor, Check or the layout; every error wraps a sentinel.
func FuzzReduceDescriptor(f *testing.F) {
	f.Add(uint8(3), uint8(1), uint8(2), int8(1), 4, 7, 9, int8(0), int8(0), 1.0, uint8(0))
	f.Add(uint8(8), uint8(4), uint8(3), int8(-1), 0, 5, 2, int8(3), int8(-1), math.NaN(), uint8(7))
	f.Add(uint8(10), uint8(0), uint8(9), int8(9), -1, 1, 1, int8(1), int8(2), 0.0, uint8(255))
	sentinels := []error{ErrUnsupported, ErrShape, ErrDType, ErrMissing, ErrMissingSaved, ErrBufferTooSmall,
		ErrLayout, ErrAxis, ErrRank, ErrParam}
	isSentinel := func(err error) bool {
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return true
			}
		}
		return false
	}
	f.Fuzz(func(t *testing.T, op, dt, rank uint8, axis int8, d0, d1, d2 int, s0, s1 int8, corr float64, mut uint8) {
		shape := make([]int, int(rank%10))
		for i := range shape {
			shape[i] = []int{d0, d1, d2}[i%3] % 70
			if i >= 3 {
				shape[i] = 1 + i%2
			}
		}
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceOp(op % 11), DType: dtype.DType(dt % 6), Shape: shape,
			Axis: int(axis), Correction: corr})
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		a := redArgs(p)
		ts := []*Tensor{&a.DY, &a.X, &a.Y, &a.DX}
		tt := ts[int(mut)%4]
		switch mut >> 2 % 8 {
		case 1:
			tt.Strides = make([]int, len(tt.Shape))
			for i := range tt.Strides {
				tt.Strides[i] = int(s0) + i*int(s1)
			}
		case 2:
			tt.Shape = append([]int(nil), tt.Shape...)
			if len(tt.Shape) > 0 {
				tt.Shape[0] += int(s0)
			}
		case 3:
			tt.Buf.Size += int64(s0)
		case 4:
			tt.Buf.Addr += driver.DevicePtr(s1)
		case 5:
			*tt = Tensor{}
		case 6:
			a.Workspace.Size += int64(s0)
		case 7:
			tt.DType = dtype.DType(s1 % 6)
		}
		if err := p.Check(&a); err != nil {
			if !isSentinel(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if p.numel > 0 {
			var L reduceLayout
			p.layout(&a, &L)
			if L.srank < 0 || L.srank > MaxRank-1 || L.tiles < 1 || L.group < 1 {
				t.Fatalf("layout %+v", L)
			}
		}
	})
}
