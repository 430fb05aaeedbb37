package ops

import (
	"errors"
	"fmt"
	"math"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// LP pool backward (torch.nn.functional.lp_pool1d / lp_pool2d), PyTorch's
// autograd values (docs/semantics.md, section 5). The forward is
//
//	y_w = ((K/c_w) * Σ_{i∈w} x_i^p)^(1/p)
//
// over windows w with no padding, K the window area and c_w its in-bounds
// count (c_w < K only for ceil-mode windows at the right or bottom edge).
// PyTorch computes it as q_w = K * sign(a_w) * relu(|a_w|), y_w = q_w^(1/p),
// with a_w = avg_pool(x^p) (the in-bounds mean), and autograd takes the
// backward through each op: pow's g*(1/p)*q^(1/p-1), the factor K, the
// product's sign(a), relu's select (0 where |a| <= 0), abs's sgn(a),
// avg_pool's 1/c_w and pow's p*x^(p-1) (sign's own gradient is 0). The
// backward computes the same, with g = dy,
//
//	coef_w = 0 if y_w == 0, else g_w * (K/c_w) * y_w^(1-p)
//	dx_i   = x_i^(p-1) * Σ_{w∋i} coef_w
//
// Edge rules:
//   - A window with y_w == 0 contributes 0 even for a NaN or inf g_w
//     (relu's select).
//   - A NaN window (y_w NaN) contributes coef_w*0: PyTorch's sign(NaN) is
//     0, and the sign and abs backwards multiply by it. For p == 1, where
//     pow's backward is q^0 = 1 even for a NaN q, that is 0 unless g_w is
//     NaN or inf; for any other p it is NaN.
//   - For p < 1 a window whose y_w overflowed to +inf while its pooled sum
//     q_w = (K/c_w) * Σ_{i∈w} x_i^p did not takes y_w^(1-p) as
//     q_w^(1/p-1), from q_w recomputed from x, as PyTorch's backward,
//     which works from q_w, does; its gradient is finite. (For p >= 1 an
//     infinite y_w means q_w overflowed: y_w^(1-p) is 0, or 1 for p == 1.)
//   - p == 1 uses x^0 = 1 (also for NaN or infinite x); negative x with a
//     non-integer p gives NaN; x == 0 with p < 1 gives ±inf (NaN with a
//     zero window sum); a cell in no window (stride > window, or past the
//     last window) gets 0*x^(p-1), which is 0 for finite x. p must be
//     finite and > 0.
//
// The kernel gathers: each cell sums the windows that contain it, so the
// result is deterministic, dx is written in full and needs no zeroing, and
// dx may be the identical tensor as x (in place) but must not overlap y or dy.

// LpPool1dDesc describes lp_pool1d's backward over x [N, C, L].
type LpPool1dDesc struct {
	DType    dtype.DType
	N, C, L  int     // batch, channels, input length
	Kernel   int     // window length k >= 1
	Stride   int     // window step s >= 1 (PyTorch's stride=None is s = k)
	P        float64 // norm: finite and > 0
	CeilMode bool    // L_out rounds up; a last window starting at or past L is dropped
}

// LpPool2dDesc describes lp_pool2d's backward over x [N, C, H, W].
type LpPool2dDesc struct {
	DType            dtype.DType
	N, C, H, W       int     // batch, channels, input height and width
	KernelH, KernelW int     // window >= 1 along H and W
	StrideH, StrideW int     // window step >= 1 along H and W
	P                float64 // norm: finite and > 0
	CeilMode         bool    // output sizes round up; a last window starting past the input is dropped
}

// LpPoolArgs are the operands of one Run. Every operand may be strided.
type LpPoolArgs struct {
	DY Tensor // upstream gradient, the output shape
	X  Tensor // saved forward input, the input shape
	Y  Tensor // saved forward output, the output shape
	DX Tensor // written in full: the input shape
}

// lpPool is the plan state shared by the 1d and 2d plans: a 1d pool is the
// 2d pool with H = 1 and a window and stride of 1 along H.
type lpPool struct {
	id       planID
	dt       dtype.DType
	p        float64
	n, c     int64
	h, w     int64
	kh, kw   int64
	sh, sw   int64
	ho, wo   int64
	fCol     float64 // K/c_w of the last window column (1 unless ceil mode cuts it)
	fRow     float64 // of the last window row
	fCorner  float64 // of the last window of both
	rank     int     // 3 (1d) or 4 (2d)
	inShape  []int   // [N C L] or [N C H W]
	outShape []int   // [N C Lout] or [N C Ho Wo]
	inDims   string  // how the input shape is spelled in errors
	outDims  string
	kernels  [3]*kernelRef // by variant: lpPack, lpCell, lpWide
}

// The family's kernel shapes (spec variants), all tiled: 16-byte packs of
// x and dx; a cell per thread (any strides); a cell per thread with the
// window columns in several passes through shared memory.
const (
	lpPack = iota
	lpCell
	lpWide
)

var lpVariants = [3]string{"pack", "cell", "wide"}

// lpMaxDim bounds every spatial size, window and stride so that the
// kernel's 32-bit index arithmetic (cell + 16, window start + window) cannot
// overflow.
const lpMaxDim = 1 << 30

// lpOutputSize is PyTorch's pooling output length without padding:
// floor((l - k + (ceil ? s-1 : 0)) / s) + 1, one less in ceil mode when the
// last window would start at or past l (0 <= l, 1 <= k, s <= lpMaxDim).
func lpOutputSize(l, k, s int64, ceil bool) int64 {
	num := l - k
	if ceil {
		num += s - 1
	}
	q := num / s
	if num%s != 0 && num < 0 {
		q-- // floor, not truncation
	}
	out := q + 1
	if ceil && out > 0 && (out-1)*s >= l {
		out--
	}
	return out
}

func newLpPool(id planID, dt dtype.DType, n, c, h, w, kh, kw, sh, sw int, p float64, ceil bool, rank int) (*lpPool, error) {
	if err := id.checkDType(dt); err != nil {
		return nil, err
	}
	if math.IsNaN(p) || math.IsInf(p, 0) || p <= 0 {
		return nil, id.errorf(ErrParam, "norm p = %v must be finite and > 0 (p = inf, max pooling, is not supported)", p)
	}
	spatial := "H"
	if rank == 3 {
		spatial = "L"
	}
	if n < 0 || c < 0 {
		return nil, id.errorf(ErrShape, "N = %d and C = %d must be >= 0", n, c)
	}
	type dim struct {
		name string
		v    int
	}
	sizes := []dim{{spatial, h}, {"W", w}}
	params := []dim{{"kernel", kh}, {"kernel W", kw}, {"stride", sh}, {"stride W", sw}}
	if rank == 3 {
		sizes = sizes[:1]
		sizes[0].v = w
		params = []dim{{"kernel", kw}, {"stride", sw}}
	} else {
		params[0].name, params[2].name = "kernel H", "stride H"
	}
	for _, d := range sizes {
		if d.v < 0 || d.v > lpMaxDim {
			return nil, id.errorf(ErrShape, "%s = %d must be in [0, %d]", d.name, d.v, lpMaxDim)
		}
	}
	for _, d := range params {
		if d.v < 1 || d.v > lpMaxDim {
			return nil, id.errorf(ErrParam, "%s = %d must be in [1, %d]", d.name, d.v, lpMaxDim)
		}
	}
	pl := &lpPool{id: id, dt: dt, p: p, n: int64(n), c: int64(c), h: int64(h), w: int64(w),
		kh: int64(kh), kw: int64(kw), sh: int64(sh), sw: int64(sw), rank: rank}
	pl.ho = lpOutputSize(pl.h, pl.kh, pl.sh, ceil)
	pl.wo = lpOutputSize(pl.w, pl.kw, pl.sw, ceil)
	if rank == 3 {
		if pl.wo < 1 {
			return nil, id.errorf(ErrShape, "output length %d < 1 for L = %d, kernel %d, stride %d, ceil_mode %v",
				pl.wo, w, kw, sw, ceil)
		}
	} else if pl.ho < 1 || pl.wo < 1 {
		return nil, id.errorf(ErrShape, "output size %dx%d < 1 for H, W = %d, %d, kernel %dx%d, stride %dx%d, ceil_mode %v",
			pl.ho, pl.wo, h, w, kh, kw, sh, sw, ceil)
	}
	// Only the last window row or column can be partial: for ow < W_out-1,
	// ow*s + k <= W.
	area := float64(pl.kh * pl.kw)
	lastH := float64(min(pl.kh, pl.h-(pl.ho-1)*pl.sh))
	lastW := float64(min(pl.kw, pl.w-(pl.wo-1)*pl.sw))
	pl.fCol = area / (float64(pl.kh) * lastW)
	pl.fRow = area / (lastH * float64(pl.kw))
	pl.fCorner = area / (lastH * lastW)
	// numel must fit in int64 (and every byte offset with it).
	total := uint64(1)
	for _, v := range []int64{pl.n, pl.c, pl.h, pl.w} {
		if v == 0 {
			total = 0
			break
		}
		if total > (1<<62)/uint64(v) {
			return nil, id.errorf(ErrShape, "input of %d x %d x %d x %d elements is too large", n, c, h, w)
		}
		total *= uint64(v)
	}
	if rank == 3 {
		pl.inShape = []int{n, c, w}
		pl.outShape = []int{n, c, int(pl.wo)}
		pl.inDims, pl.outDims = "[N, C, L]", "[N, C, L_out]"
	} else {
		pl.inShape = []int{n, c, h, w}
		pl.outShape = []int{n, c, int(pl.ho), int(pl.wo)}
		pl.inDims, pl.outDims = "[N, C, H, W]", "[N, C, H_out, W_out]"
	}
	op := "general"
	switch p {
	case 1:
		op = "p1"
	case 2:
		op = "p2"
	}
	for v, variant := range lpVariants {
		name, ok := lookupKernel("lppool", op, dt, variant)
		if !ok {
			return nil, id.errorf(ErrUnsupported, "no %s kernel for %s %s", variant, op, dt)
		}
		pl.kernels[v] = newKernelRef("lppool", name)
	}
	return pl, nil
}

// lpPlanID names a plan and its norm in errors, e.g. LpPool2dBackward(p=2, f32).
func lpPlanID(plan string, p float64, dt dtype.DType) planID {
	return planID{plan: plan, op: fmt.Sprintf("p=%g", p), dt: dt}
}

// kernelInfo names the pack variant, which dense operands take; other
// layouts run the _cell variant of the same op and dtype, and windows too
// wide for one pass through shared memory the _wide one.
func (pl *lpPool) kernelInfo() KernelInfo {
	return KernelInfo{Name: pl.kernels[lpPack].name, Family: "lppool", Op: pl.id.op, DType: pl.dt, Backend: backend}
}

func (pl *lpPool) outputShape() []int { return append([]int(nil), pl.outShape...) }

// operand runs checkTensor and restates a shape mismatch with the expected
// dims spelled out.
func (pl *lpPool) operand(field string, t *Tensor, role tensorRole, shape []int, dims string) error {
	err := pl.id.checkTensor(field, t, role, pl.dt, shape)
	if err != nil && errors.Is(err, ErrShape) {
		return pl.id.errorf(ErrShape, "%s shape %v must equal %s = %v", field, t.Shape, dims, shape)
	}
	return err
}

func (pl *lpPool) check(a *LpPoolArgs) error {
	if err := pl.operand("dy", &a.DY, roleInput, pl.outShape, pl.outDims); err != nil {
		return err
	}
	if err := pl.operand("x", &a.X, roleSaved, pl.inShape, pl.inDims); err != nil {
		return err
	}
	if err := pl.operand("y", &a.Y, roleSaved, pl.outShape, pl.outDims); err != nil {
		return err
	}
	return pl.operand("dx", &a.DX, roleOutput, pl.inShape, pl.inDims)
}

// LpPool1dBackward is a validated plan for lp_pool1d's backward. It is
// immutable and safe for concurrent use.
type LpPool1dBackward struct {
	pl   *lpPool
	desc LpPool1dDesc
}

// NewLpPool1dBackward validates desc and returns a plan for it, with the
// output length L_out computed as PyTorch's lp_pool1d does (OutputShape).
// The error wraps ErrDType for an invalid dtype, ErrParam for a P that is
// not finite and positive or a window or stride below 1, and ErrShape for
// negative or too large sizes or an empty output.
func NewLpPool1dBackward(desc LpPool1dDesc) (*LpPool1dBackward, error) {
	// The plan takes a kernel for p == 1 or p == 2, where the window's
	// norm needs no pow, or the general one (precise pow).
	id := lpPlanID("LpPool1dBackward", desc.P, desc.DType)
	pl, err := newLpPool(id, desc.DType, desc.N, desc.C, 1, desc.L, 1, desc.Kernel, 1, desc.Stride, desc.P, desc.CeilMode, 3)
	if err != nil {
		return nil, err
	}
	return &LpPool1dBackward{pl: pl, desc: desc}, nil
}

// OutputShape is the forward output's shape [N, C, L_out], the shape of y
// and dy.
func (p *LpPool1dBackward) OutputShape() []int { return p.pl.outputShape() }

// Kernel identifies the kernel a Run launches for contiguous, 16-byte
// aligned operands, for logs, diagnostics and tests. Other layouts, and
// windows whose partial sums do not fit the kernel's shared memory, take
// another kernel of the same op and dtype; Warm loads every kernel a Run of
// the plan may launch.
func (p *LpPool1dBackward) Kernel() KernelInfo { return p.pl.kernelInfo() }

// Precision reports the plan's numerical guarantees: math in opmath; window
// sums accumulate in opmath.
func (p *LpPool1dBackward) Precision() Precision { return precisionFor(p.desc.DType, true) }

// WorkspaceSize is 0: the op needs no scratch memory.
func (p *LpPool1dBackward) WorkspaceSize() int64 { return 0 }

// Desc returns the plan's descriptor.
func (p *LpPool1dBackward) Desc() LpPool1dDesc { return p.desc }

// Check validates args against the plan without launching anything: x and
// dx are [N, C, L], y and dy [N, C, L_out], all of the plan's dtype.
func (p *LpPool1dBackward) Check(a *LpPoolArgs) error { return p.pl.check(a) }

// Run checks args as Check does and queues a kernel on s (several launches
// of it for very large inputs), chosen by the operands' layout. Run returns
// once the work is queued; dx is written when s reaches it
// (Stream.Synchronize, or an event recorded after Run). The first Run of a
// kernel in a context loads it, which compiles its PTX unless the driver's
// JIT cache holds it; Warm does that ahead of time. Run never allocates
// device memory, copies from the host or synchronizes, and may be called
// concurrently. The error wraps ErrNilStream for a nil s, is one of
// Check's, or is the driver's error from loading or launching the kernel.
func (p *LpPool1dBackward) Run(s *driver.Stream, a *LpPoolArgs) error { return p.pl.run(s, a) }

// LpPool2dBackward is a validated plan for lp_pool2d's backward. It is
// immutable and safe for concurrent use.
type LpPool2dBackward struct {
	pl   *lpPool
	desc LpPool2dDesc
}

// NewLpPool2dBackward validates desc and returns a plan for it, with the
// output size H_out x W_out computed as PyTorch's lp_pool2d does
// (OutputShape). The error wraps ErrDType for an invalid dtype, ErrParam
// for a P that is not finite and positive or a window or stride below 1,
// and ErrShape for negative or too large sizes or an empty output.
func NewLpPool2dBackward(desc LpPool2dDesc) (*LpPool2dBackward, error) {
	// The plan takes a kernel for p == 1 or p == 2, where the window's
	// norm needs no pow, or the general one (precise pow).
	id := lpPlanID("LpPool2dBackward", desc.P, desc.DType)
	pl, err := newLpPool(id, desc.DType, desc.N, desc.C, desc.H, desc.W, desc.KernelH, desc.KernelW,
		desc.StrideH, desc.StrideW, desc.P, desc.CeilMode, 4)
	if err != nil {
		return nil, err
	}
	return &LpPool2dBackward{pl: pl, desc: desc}, nil
}

// OutputShape is the forward output's shape [N, C, H_out, W_out], the shape
// of y and dy.
func (p *LpPool2dBackward) OutputShape() []int { return p.pl.outputShape() }

// Kernel identifies the kernel a Run launches for contiguous, 16-byte
// aligned operands, for logs, diagnostics and tests. Other layouts, and
// windows whose partial sums do not fit the kernel's shared memory, take
// another kernel of the same op and dtype; Warm loads every kernel a Run of
// the plan may launch.
func (p *LpPool2dBackward) Kernel() KernelInfo { return p.pl.kernelInfo() }

// Precision reports the plan's numerical guarantees: math in opmath; window
// sums accumulate in opmath.
func (p *LpPool2dBackward) Precision() Precision { return precisionFor(p.desc.DType, true) }

// WorkspaceSize is 0: the op needs no scratch memory.
func (p *LpPool2dBackward) WorkspaceSize() int64 { return 0 }

// Desc returns the plan's descriptor.
func (p *LpPool2dBackward) Desc() LpPool2dDesc { return p.desc }

// Check validates args against the plan without launching anything: x and
// dx are [N, C, H, W], y and dy [N, C, H_out, W_out], all of the plan's dtype.
func (p *LpPool2dBackward) Check(a *LpPoolArgs) error { return p.pl.check(a) }

// Run checks args as Check does and queues a kernel on s (several launches
// of it for very large inputs), chosen by the operands' layout. Run returns
// once the work is queued; dx is written when s reaches it
// (Stream.Synchronize, or an event recorded after Run). The first Run of a
// kernel in a context loads it, which compiles its PTX unless the driver's
// JIT cache holds it; Warm does that ahead of time. Run never allocates
// device memory, copies from the host or synchronizes, and may be called
// concurrently. The error wraps ErrNilStream for a nil s, is one of
// Check's, or is the driver's error from loading or launching the kernel.
func (p *LpPool2dBackward) Run(s *driver.Stream, a *LpPoolArgs) error { return p.pl.run(s, a) }
