package ops

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

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
// The backward computes, with g = dy,
//
//	coef_w = 0 if y_w == 0, else g_w * (K/c_w) * y_w^(1-p)
//	dx_i   = x_i^(p-1) * Σ_{w∋i} coef_w
//
// Edge rules: a window with y_w == 0 contributes 0 even for a NaN or inf
// g_w (PyTorch's relu select); p == 1 uses x^0 = 1; negative x with a
// non-integer p gives NaN; x == 0 with p < 1 gives ±inf (NaN with a zero
// window sum); a cell in no window (stride > window, or past the last
// window) gets 0*x^(p-1), which is 0 for finite x. p must be finite and > 0.
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

// lpLayout mirrors LpPoolLayout in gen/lppool.cuh; it travels by value as
// the kernel's last parameter.
type lpLayout struct {
	base     int64  // first tile of the launch
	total    int64  // tiles
	rows     int64  // N*C*H input rows
	channels int64  // C when n and c must be split, else 0
	aMagic   uint64 // division by segs, by H, by channels (divMagic)
	hMagic   uint64
	cMagic   uint64
	stride   [4][4]int64 // x, y, dy, dx: strides of n, c, h, w
	fCol     float64     // K/c_w of the last window column, row, and both
	fRow     float64
	fCorner  float64
	fCol32   float32 // the same rounded to float32
	fRow32   float32
	fCorn32  float32
	_        float32
	h, w     int32
	ho, wo   int32
	kh, kw   int32
	sh, sw   int32
	aShift   int32
	hShift   int32
	cShift   int32
	segs     int32 // segments per row group
	tu       int32 // threads (work units) per tile row
	tr       int32 // rows per tile
	nwMax    int32 // shared-memory slots of a tile row (window columns per pass)
	swShift  int32 // divMagic32 of sw, sh and tu
	shShift  int32
	tuShift  int32
	swMagic  uint32
	shMagic  uint32
	tuMagic  uint32
	_        int32
}

// lpSmemBytes bounds a tile's shared memory. Most tiles need a few KiB
// (a float per window column per tile row); at the bound 8 blocks of 256
// threads still fit an H100 SM's 228 KiB.
const lpSmemBytes = 24 << 10

// lpRowBytes is sizeof(LpRow) in gen/lppool.cuh: an input row's pointers
// and window rows, which the kernel's prologue computes once per tile.
const lpRowBytes = 48

// lpSmem is the dynamic shared memory of a tile, laid out as lp_tiled in
// gen/lppool.cuh reads it: nwMax+1 opmath sums per input row, rounded up
// to 16 bytes; tr row records; for the pack and cell variants a 4-byte
// phase-2 entry per cell of a segment (tu*cellsPer).
func lpSmem(variant int, tu, tr, cellsPer, nwMax, opSize int64) int64 {
	tab := int64(0)
	if variant != lpWide {
		tab = tu * cellsPer * 4
	}
	return (tr*(nwMax+1)*opSize+15)&^15 + tr*lpRowBytes + tab
}

// lpMaxTileRows bounds a tile's input rows (and row records: 12 KiB).
const lpMaxTileRows = 256

// rowsPer is the kernel's R, the input rows a thread takes: in the pack
// variant 4 for p == 1 and 2 for the others (the functors'
// rows in gen/lppool.cuh; consecutive rows share window rows and setup),
// else 1.
func (pl *lpPool) rowsPer(variant int) int64 {
	switch {
	case variant != lpPack:
		return 1
	case pl.p == 1:
		return 4
	}
	return 2
}

// blockThreads is a tile's block: tr/R thread rows of tu threads, at most
// the kernel's 256.
func (pl *lpPool) blockThreads(variant int, L *lpLayout) uint32 {
	return uint32(int64(L.tu) * (int64(L.tr) / pl.rowsPer(variant)))
}

// divMagic32 returns the constants of lp_div32 in gen/lppool.cuh, which
// divides any 0 <= n < 2^31 by 1 <= d <= 2^30 with a 32-bit multiply-high:
// for a power of two (0, log2 d); otherwise (ceil(2^(31+l)/d), l-1) with
// 2^(l-1) < d <= 2^l (the same theorem as divMagic, for 31-bit dividends).
func divMagic32(d int64) (magic uint32, shift int32) {
	u := uint64(d)
	l := bits.Len64(u - 1)
	if u&(u-1) == 0 {
		return 0, int32(l)
	}
	m := (uint64(1)<<(31+l) + u - 1) / u
	return uint32(m), int32(l - 1)
}

// layout fills L for the args' strides and picks the kernel variant and
// its tiling; smem is a tile's dynamic shared memory in bytes.
func (pl *lpPool) layout(a *LpPoolArgs, block int, L *lpLayout) (variant int, smem int) {
	*L = lpLayout{}
	ts := [4]*Tensor{&a.X, &a.Y, &a.DY, &a.DX}
	for t, tp := range ts {
		L.stride[t][0] = tp.strideOf(0)
		L.stride[t][1] = tp.strideOf(1)
		if pl.rank == 4 {
			L.stride[t][2] = tp.strideOf(2)
		}
		L.stride[t][3] = tp.strideOf(pl.rank - 1)
	}
	L.rows = pl.n * pl.c * pl.h
	L.h, L.w, L.ho, L.wo = int32(pl.h), int32(pl.w), int32(pl.ho), int32(pl.wo)
	L.kh, L.kw, L.sh, L.sw = int32(pl.kh), int32(pl.kw), int32(pl.sh), int32(pl.sw)
	L.hMagic, L.hShift = divMagic(pl.h)
	L.swMagic, L.swShift = divMagic32(pl.sw)
	L.shMagic, L.shShift = divMagic32(pl.sh)
	L.fCol, L.fRow, L.fCorner = pl.fCol, pl.fRow, pl.fCorner
	L.fCol32, L.fRow32, L.fCorn32 = float32(pl.fCol), float32(pl.fRow), float32(pl.fCorner)
	// n and c merge into one index nc with stride_c when every tensor
	// allows it; the kernel then skips a division per row.
	merge := pl.n == 1 || pl.c == 1
	if !merge {
		merge = true
		for t := range ts {
			if L.stride[t][0] != pl.c*L.stride[t][1] {
				merge = false
			}
		}
	}
	if merge {
		if pl.c == 1 {
			for t := range ts {
				L.stride[t][1] = L.stride[t][0]
			}
		}
	} else {
		L.channels = pl.c
		L.cMagic, L.cShift = divMagic(pl.c)
	}

	// Tiling: tr rows by a segment of tu units of cellsPer cells along W.
	variant, cellsPer := lpCell, int64(1)
	if v := int64(16 / pl.dt.Size()); pl.packable(a, L, v) {
		variant, cellsPer = lpPack, v
	}
	opSize := int64(4)
	if pl.dt == dtype.F64 {
		opSize = 8
	}
	// A block of tu threads by block/tu thread rows takes R input rows a
	// thread row; a tile row keeps a sum for each window column its
	// segment touches.
	units := pl.w / cellsPer
	tu := min(units, int64(block))
	tr := int64(block) / tu * pl.rowsPer(variant)
	if tr > lpMaxTileRows {
		// Narrow rows: fewer thread rows (a smaller block) rather than
		// more row records.
		tr = lpMaxTileRows
	}
	nwMax := pl.segmentWindows(tu * cellsPer)
	if lpSmem(variant, tu, tr, cellsPer, nwMax, opSize) > lpSmemBytes {
		// Too many window columns for one pass: a cell per thread, and
		// the columns in passes of nwMax if that still does not fit.
		variant, units, cellsPer = lpCell, pl.w, 1
		tu = min(units, int64(block))
		tr = int64(block) / tu
		nwMax = pl.segmentWindows(tu)
		if lpSmem(variant, tu, tr, cellsPer, nwMax, opSize) > lpSmemBytes {
			variant = lpWide
			nwMax = ((lpSmemBytes-tr*lpRowBytes)&^15)/(tr*opSize) - 1
		}
	}
	segs := (units + tu - 1) / tu
	L.segs, L.tu, L.tr, L.nwMax = int32(segs), int32(tu), int32(tr), int32(nwMax)
	L.tuMagic, L.tuShift = divMagic32(tu)
	L.total = (L.rows + tr - 1) / tr * segs
	L.aMagic, L.aShift = divMagic(segs)
	return variant, int(lpSmem(variant, tu, tr, cellsPer, nwMax, opSize))
}

// segmentWindows bounds the window columns that a run of `cells`
// consecutive cells can touch: those ow with ow*sw in an interval of
// cells + kw - 1 positions, at most W_out.
func (pl *lpPool) segmentWindows(cells int64) int64 {
	return min((cells+pl.kw-2)/pl.sw+1, pl.wo)
}

// packable reports whether x and dx rows are dense runs of whole 16-byte
// packs (unit stride along W, W a multiple of the pack, every other stride
// a multiple of it or of a dim of size 1, 16-byte aligned addresses) and y
// and dy rows have unit stride along W.
func (pl *lpPool) packable(a *LpPoolArgs, L *lpLayout, v int64) bool {
	if pl.w%v != 0 {
		return false
	}
	if pl.wo > 1 && (L.stride[1][3] != 1 || L.stride[2][3] != 1) {
		return false
	}
	dims := [3]int64{pl.n, pl.c, pl.h}
	for t, buf := range [4]driver.Buffer{a.X.Buf, {}, {}, a.DX.Buf} {
		if t == 1 || t == 2 {
			continue // y and dy are read per window
		}
		if uintptr(buf.Addr)%16 != 0 || L.stride[t][3] != 1 {
			return false
		}
		for d := 0; d < 3; d++ {
			if dims[d] > 1 && L.stride[t][d]%v != 0 {
				return false
			}
		}
	}
	return true
}

func (pl *lpPool) run(s *driver.Stream, a *LpPoolArgs) error {
	if s == nil {
		return pl.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := pl.check(a); err != nil {
		return err
	}
	if pl.n*pl.c == 0 {
		return nil
	}
	var L lpLayout
	variant, smem := pl.layout(a, pl.kernels[lpPack].block, &L)
	k := pl.kernels[variant]
	threads := pl.blockThreads(variant, &L)
	lf, err := k.resolve(s.Context())
	if err != nil {
		return err
	}
	// A block per tile; a grid holds at most maxGridX blocks, so larger
	// inputs take several launches, each starting at L.base.
	for L.base = 0; L.base < L.total; L.base += maxGridX {
		blocks := min(L.total-L.base, maxGridX)
		args := driver.GetArgs()
		pl.pack(args, a, &L)
		err = lf.fn.Launch(s, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{threads, 1, 1}, uint32(smem), args)
		driver.PutArgs(args)
		if err != nil {
			return err
		}
	}
	return nil
}

// pack appends the kernel parameters in the order of the spec's lppool
// ABI: x, y, dy, dx, p, layout.
func (pl *lpPool) pack(args *driver.Args, a *LpPoolArgs, L *lpLayout) {
	args.Ptr(a.X.Buf.Addr)
	args.Ptr(a.Y.Buf.Addr)
	args.Ptr(a.DY.Buf.Addr)
	args.Ptr(a.DX.Buf.Addr)
	args.F64(pl.p)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
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
