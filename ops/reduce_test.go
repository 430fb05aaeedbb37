package ops

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

func init() {
	abiPackers["reduce"] = func(a *driver.Args) {
		(&ReduceBackward{}).pack(a, &ReduceArgs{}, &reduceLayout{})
	}
}

// redTensor is a tensor over a made-up device address (Check never touches
// the device); each call gets its own address range so operands are
// disjoint.
var redNextAddr driver.DevicePtr = 0x1000000

func redTensor(dt dtype.DType, shape ...int) Tensor {
	redNextAddr += 0x1000000
	return Tensor{Buf: driver.Buffer{Addr: redNextAddr, Size: numel(shape) * int64(dt.Size())}, DType: dt, Shape: shape}
}

func TestReduceLayoutMatchesCUDA(t *testing.T) {
	if got := unsafe.Sizeof(reduceLayout{}); got != 432 {
		t.Fatalf("reduceLayout is %d bytes, ReduceLayout in reduce.cuh 432", got)
	}
	f := familyByName("reduce")
	if f == nil {
		t.Fatal("no reduce family in the table")
	}
	last := f.params[len(f.params)-1]
	if last.size != int(unsafe.Sizeof(reduceLayout{})) {
		t.Errorf("spec layout parameter is %d bytes, reduceLayout %d", last.size, unsafe.Sizeof(reduceLayout{}))
	}
	// Field offsets the C struct has (i64 x5, double, int x8, arrays).
	var L reduceLayout
	offs := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"scale", unsafe.Offsetof(L.scale), 40},
		{"mapping", unsafe.Offsetof(L.mapping), 48},
		{"srank", unsafe.Offsetof(L.srank), 64},
		{"cvec", unsafe.Offsetof(L.cvec), 68},
		{"phase", unsafe.Offsetof(L.phase), 72},
		{"sdim", unsafe.Offsetof(L.sdim), 80},
		{"sstride", unsafe.Offsetof(L.sstride), 136},
		{"kstride", unsafe.Offsetof(L.kstride), 360},
		{"vstride", unsafe.Offsetof(L.vstride), 376},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("reduceLayout.%s at offset %d, want %d", o.name, o.got, o.want)
		}
	}
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
		want := map[string]bool{"row": true, "col": true, "flat": !op.hasStats() || op.provisional(),
			"stats": op.hasStats(), "apply": op.hasStats(), "strip": op.hasStats(), "cluster": op.hasStats(),
			"stripc": op.hasStats(), "one": op.hasStats() && !op.provisional()}
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
		{ReduceMax, []int{4096, 4096}, 0, "reduce_bw_max_f32_flat"},
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
		{ReduceStd, []int{3, 1 << 20}, 1, "reduce_bw_std_f32_apply"},
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
		f := flatGeometry(c.shape, c.axis, numel(c.shape), c.dt.Size())
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

func TestReduceLayout(t *testing.T) {
	mk := func(op ReduceOp, dt dtype.DType, shape []int, axis int) *ReduceBackward {
		p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("contiguous inner axis", func(t *testing.T) {
		p := mk(ReduceMax, dtype.F32, []int{4, 5, 6}, 2)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.vec != 1 || L.srank != 1 || L.sdim[0] != 20 || L.kstride != [2]int64{1, 1} {
			t.Fatalf("layout %+v", L)
		}
		// x and dx step 6 per slice; dy and y 1.
		if L.sstride[0][0] != 6 || L.sstride[3][0] != 6 || L.sstride[1][0] != 1 || L.sstride[2][0] != 1 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("contiguous middle axis", func(t *testing.T) {
		p := mk(ReduceVar, dtype.F32, []int{4, 5, 6}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		// Slices [4, 6] cannot merge for x (6*5 != 6), so two dims remain.
		if L.mapping != redCol || L.srank != 2 || L.sdim[0] != 4 || L.sdim[1] != 6 || L.kstride != [2]int64{6, 6} {
			t.Fatalf("layout %+v", L)
		}
		if L.sstride[0] != [7]int64{30, 1} || L.sstride[2] != [7]int64{6, 1} {
			t.Errorf("strides %v", L.sstride)
		}
		if L.group != 8 || L.slices != 24 || L.k != 5 || L.nchunks != 1 || L.tiles != 1 {
			t.Errorf("geometry %+v", L)
		}
	})
	t.Run("col threads take 4 adjacent slices", func(t *testing.T) {
		p := mk(ReduceMax, dtype.F32, []int{3, 5, 8}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.cvec != 4 || L.srank != 2 || L.tiles != 1 || L.vstride != [2]int64{1, 1} {
			t.Fatalf("layout %+v", L)
		}
		a.DX.Buf.Addr += 8 // dx 8-byte but not 16-byte aligned: 8-byte accesses
		p.layout(&a, &L)
		if L.cvec != 2 {
			t.Errorf("8-byte aligned dx: cvec %d", L.cvec)
		}
		a.DX.Buf.Addr -= 4 // dx only 4-byte aligned
		p.layout(&a, &L)
		if L.cvec != 1 {
			t.Errorf("misaligned dx: cvec %d", L.cvec)
		}
		a = redArgs(p)
		a.DY.Strides = []int{8, 8, 3} // only dy/y strides change: still vectorizable
		a.DY.Buf.Size = 4 * 200
		p.layout(&a, &L)
		if L.cvec != 4 || L.vstride[1] != 3 {
			t.Errorf("strided dy: cvec %d vstride %v", L.cvec, L.vstride)
		}
	})
	t.Run("outer axis merges the rest", func(t *testing.T) {
		p := mk(ReduceSum, dtype.BF16, []int{7, 3, 5}, 0)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.srank != 1 || L.sdim[0] != 15 || L.kstride[1] != 15 || L.kstride[0] != 0 {
			t.Fatalf("layout %+v", L)
		}
	})
	t.Run("transposed x picks the row mapping", func(t *testing.T) {
		p := mk(ReduceNorm2, dtype.F32, []int{6, 4}, 0)
		a := redArgs(p)
		a.X.Strides = []int{1, 6} // column-major: the axis is x's fastest dim
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.vec != 0 || L.kstride != [2]int64{1, 4} {
			t.Fatalf("layout %+v", L)
		}
		if L.srank != 1 || L.sstride[0][0] != 6 || L.sstride[3][0] != 1 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("slice dims ordered by x strides", func(t *testing.T) {
		p := mk(ReduceProd, dtype.F16, []int{2, 3, 4, 5}, 3)
		a := redArgs(p)
		a.X.Strides = []int{5, 10, 30, 1} // dims 0..2 reversed in memory
		a.X.Buf.Size = 2 * 120
		var L reduceLayout
		p.layout(&a, &L)
		// Ordered [4, 3, 2] by x's strides [30, 10, 5]: mergeable for x but
		// not for dx (row-major), so three dims remain.
		if L.mapping != redRow || L.srank != 3 || L.sdim[0] != 4 || L.sdim[1] != 3 || L.sdim[2] != 2 {
			t.Fatalf("layout %+v", L)
		}
		if L.sstride[0][0] != 30 || L.sstride[3][0] != 5 || L.sstride[3][2] != 60 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("size-1 dims and k == 1", func(t *testing.T) {
		p := mk(ReduceMean, dtype.F64, []int{1, 9, 1}, 2)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.srank != 1 || L.sdim[0] != 9 || L.group != 1 || L.k != 1 {
			t.Fatalf("layout %+v", L)
		}
	})
	t.Run("scalar slices", func(t *testing.T) {
		p := mk(ReduceLogSumExp, dtype.F32, []int{1, 1000}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.srank != 0 || L.slices != 1 || L.vec != 1 {
			t.Fatalf("layout %+v", L)
		}
	})
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
			need := flatFixSize(c.op, c.dt, p.slices, p.flat.packs)
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
	if got, want := flatFixSize(ReduceMax, dtype.F32, 4096, 1<<20), int64(16400+4096*4*8+4*4*(1<<15)); got != want {
		t.Errorf("flatFixSize(max, f32, 4096 slices, 2^20 packs) = %d, want %d", got, want)
	}
	if got, want := flatFixSize(ReduceProd, dtype.BF16, 5, 33), int64(32); got != want {
		t.Errorf("flatFixSize(prod, bf16, 5 slices, 33 packs) = %d, want %d", got, want)
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
// them per block), and which plans have which form (var and std by
// default: the clustered form, and the one-block form for the 16-bit
// dtypes; every op with statistics under reduceStripEnv "auto" or
// "always"; none under "never").
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
		{ReduceMax, dtype.BF16, "", false, false, false}, {ReduceStd, dtype.BF16, "never", false, false, false},
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
		{"", ReduceStd, []int{64, 32}, 0, "reduce_bw_std_bf16_col"}, {"", ReduceMax, []int{4096, 4096}, 0, "reduce_bw_max_bf16_flat"},
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

// TestReduceReducedFormLayout: dy and y given without the reduced axis
// (keepdim=False) give the kernels the same layout as the keepdim form of
// the same memory, contiguous or strided, for every axis, down to a rank-1
// input whose dy and y are 0-d.
func TestReduceReducedFormLayout(t *testing.T) {
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{4, 7, 9}, 0}, {[]int{4, 7, 9}, 1}, {[]int{4, 7, 9}, 2}, {[]int{3, 1, 5, 2}, 2}, {[]int{33}, 0}} {
		for _, op := range []ReduceOp{ReduceSum, ReduceMax, ReduceStd} {
			p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dtype.F32, Shape: c.shape, Axis: c.axis, Correction: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ReducedShape(); len(got) != len(c.shape)-1 {
				t.Fatalf("%v axis %d: reduced shape %v", c.shape, c.axis, got)
			}
			for _, strided := range []bool{false, true} {
				kept := redArgs(p)
				red := kept
				red.DY.Shape, red.Y.Shape = p.ReducedShape(), p.ReducedShape()
				if strided {
					// Column-major dy and y, in both forms.
					kept.DY.Strides, red.DY.Strides = colMajor(p.KeepdimShape()), colMajor(p.ReducedShape())
					kept.Y.Strides, red.Y.Strides = kept.DY.Strides, red.DY.Strides
				}
				if err := p.Check(&red); err != nil {
					t.Fatalf("%v axis %d %s strided %v: %v", c.shape, c.axis, op, strided, err)
				}
				var lk, lr reduceLayout
				p.layout(&kept, &lk)
				p.layout(&red, &lr)
				if lk != lr {
					t.Errorf("%v axis %d %s strided %v: layout %+v, keepdim form %+v", c.shape, c.axis, op, strided, lr, lk)
				}
			}
		}
	}
}

// colMajor is the column-major strides of shape.
func colMajor(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for d := range shape {
		st[d] = n
		n *= shape[d]
	}
	return st
}

// TestReduceFlatLocalAgrees: the launcher caps the flat kernel's grid for
// as many slices as the kernel counts in shared memory.
func TestReduceFlatLocalAgrees(t *testing.T) {
	got, ok := cuhDefine(genSource(t, "reduce.cuh"), "RED_FLAT_LOCAL")
	if !ok {
		t.Fatal("gen/reduce.cuh does not define RED_FLAT_LOCAL")
	}
	if got != redFlatLocal {
		t.Errorf("gen/reduce.cuh: RED_FLAT_LOCAL is %d, the launcher assumes %d", got, redFlatLocal)
	}
}
