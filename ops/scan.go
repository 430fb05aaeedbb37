package ops

import (
	"fmt"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Single-axis scan backward (torch.cumsum, cumprod, cummax, cummin,
// logcumsumexp), PyTorch's autograd values (docs/semantics.md, section 4).
//
// Number the elements of a slice along the axis in the order the forward
// scan visited them: k = 0 is the first element of the axis, or its last
// when the forward ran in reverse (Reverse). With g = dy every op is one
// recurrence, run from the end of the slice to its start:
//
//	S_k  = h_k + V_{k+1}                      (V past the end is 0)
//	dx_k = c_k (.) S_k
//	V_k  = a_k (.) S_k
//
// h_k is g_k, or the op's stand-in for it (cumprod: see ScanCumprod). For
// cumsum, cummax, cummin and cumprod (.) is the strong-zero product, a (.)
// b = (a == 0 || b == 0) ? 0 : a*b, which keeps a cut (a_k == 0) exact: an
// inf or NaN from later elements never reaches the elements before it; for
// logcumsumexp it is the plain product (see ScanLogcumsumexp). The factors
// a_k and c_k of each op, as in gen/scan.cuh:
//
//	cumsum        a = c = 1
//	cumprod       a = x_k, c = y_{k-1} (y_{-1} = 1)
//	cummax/min    c = [the forward index moves to k], a = 1 - c
//	logcumsumexp  a = exp(y_{k-1} - y_k), c = exp(x_k - y_k)
//
// Sums accumulate in opmath (f32 for f16, bf16 and f32; f64 for f64), which
// is more accurate than PyTorch's storage-dtype scans, and every dx is
// rounded once.

// ScanOp is a scan whose backward ScanBackward computes.
type ScanOp uint8

const (
	// ScanCumsum: y_k = x_0 + ... + x_k; dx_k = g_k + ... + g_{n-1}, the
	// reverse cumsum of dy. Saves nothing.
	ScanCumsum ScanOp = iota + 1
	// ScanCumprod: y_k = x_0 * ... * x_k; dx_k = y_{k-1} * Σ_{j>=k} g_j *
	// x_{k+1}...x_j (y_{-1} = 1), exact with zeros and without division,
	// so PyTorch's three regions hold: before the first zero z1 the usual
	// value; at z1 the sum cut at the second zero z2; after z1 exactly 0,
	// even where y is NaN. Where x_k is ±inf or NaN and no zero precedes it,
	// dx_k is NaN (PyTorch's division), except along an axis of length 1,
	// where dx = dy.
	//
	// Infinities and NaN fall as in PyTorch's formulas, which sum terms:
	// before z1, dx_k = Σ_{k<=j<z1} y_j g_j / x_k, so dx_k is NaN where
	// the infinite terms y_j g_j (y_j ±inf, or g_j ±inf) have both signs,
	// or one is inf * 0 or NaN, and ±inf (the sign of the terms over the
	// sign of x_k) where they share one sign; at z1, dx = y_{z1-1} Σ_j
	// g_j P_j with P_j the product of the x in (z1, j], likewise NaN or ±inf
	// by the infinite terms g_j P_j, and NaN where some x in (z1, z2) is
	// ±inf or NaN and z2 exists (PyTorch's sum then holds P * 0 past z2).
	// The recurrence takes h_j = g_j |y_j| before z1 where y_j is not
	// finite, h_j = g_j * inf after z1 once the product P is, and h = NaN
	// and a = NaN at z2 in that case; h = g elsewhere. Saves x and y.
	//
	// Where y underflowed to 0 before z1 (x has no zero, the saved y of
	// the dtype is 0), PyTorch's terms y_j g_j are 0, or NaN where g_j is
	// ±inf or NaN, and its dx there is their sum over x_k: so h_j = g_j *
	// |y_j| there too, and before and at z1 dx_k = y_{k-1} * S_k is a plain
	// product. After an underflow dx is 0, or NaN from every element up
	// to an infinite or NaN dy (before z1), however far away; at z1 it is
	// 0, or NaN where its sum is infinite or NaN. Only after z1 is c = 0
	// a strong zero. The products of x factors the kernels carry keep an
	// underflow as the least positive value, so that the NaN crosses
	// them. PyTorch rounds each term y_j g_j to the dtype: a term below
	// the smallest normal, divided by a subnormal x_k, gives PyTorch's
	// value a relative error the library's value (rounded once) does not
	// share. These values hold along every axis: where slices are chained
	// over several tiles, a tile whose y before it is 0 or whose slice ends
	// in NaN reads whether a zero came before it, so a 0 y after an
	// underflow is never taken for one after a zero.
	ScanCumprod
	// ScanCummax: dx_k = the sum of g_j over the j whose forward index is k
	// (a gather: deterministic, no atomics). The index moves to j when x_j is
	// NaN (each NaN takes over) or when the running max is not NaN and x_j >=
	// it: the LAST occurrence wins ties, and a number never replaces a
	// running NaN. Saves x.
	ScanCummax
	// ScanCummin: as ScanCummax with x_j <= the running min.
	ScanCummin
	// ScanLogcumsumexp: y_k = log Σ_{i<=k} exp(x_i); dx_k = exp(x_k - y_k) *
	// T_k with T_k = g_k + exp(y_k - y_{k+1}) T_{k+1}, PyTorch's exp(x_k) *
	// Σ_{j>=k} g_j exp(-y_j) without overflow for large |x| (every exponent
	// is <= 0). A NaN in dy contributes nothing, as in PyTorch's log-space
	// formula. The products are plain, so inf and NaN spread as in that
	// formula:
	//   - a NaN in x makes every dx of the slice NaN;
	//   - dx_k is NaN where x_k is +inf or y_k is -inf (a leading -inf run
	//     of x);
	//   - a ±inf in dy at j >= k makes dx_k NaN where y_j is +inf, where x_k
	//     is -inf or where y_k is +inf, and else ±inf (NaN where both signs
	//     occur), however far apart j and k are: an exp factor that
	//     underflows keeps an infinity (it is the least positive value, not
	//     0), also where x and y are finite but their difference overflows
	//     (values near the ends of the range, whose logs PyTorch adds);
	//   - otherwise an x_k of -inf, or an x_k after a +inf of x, gives 0.
	// c_k is applied as r (r T_k) with r = exp((x_k - y_k)/2), so that a
	// dx below the least subnormal rounds to 0 as PyTorch's exp of the
	// summed logs does (a c_k taken as the least positive value would
	// leave a few subnormals of T_k).
	// A factor spanning a run of a thread or a tile is exp of the y at its
	// ends rather than a product of the elements' factors, so rounding
	// grows with the number of tiles (the axis length over 4096 along the
	// innermost axis, over 8*16 along an outer one), not of elements. Saves
	// x and y.
	ScanLogcumsumexp
)

var scanOpNames = [...]string{ScanCumsum: "cumsum", ScanCumprod: "cumprod", ScanCummax: "cummax",
	ScanCummin: "cummin", ScanLogcumsumexp: "logcumsumexp"}

// String returns the op's lower-case name, e.g. "cumprod", as it appears
// in KernelInfo.Op, kernel names and error messages. An unknown op prints
// as ScanOp(N).
func (op ScanOp) String() string {
	if op >= 1 && int(op) < len(scanOpNames) {
		return scanOpNames[op]
	}
	return fmt.Sprintf("ScanOp(%d)", uint8(op))
}

// ScanOps lists every scan op.
func ScanOps() []ScanOp {
	return []ScanOp{ScanCumsum, ScanCumprod, ScanCummax, ScanCummin, ScanLogcumsumexp}
}

// Saved reports which forward tensors the op's backward reads: x (the
// input) and y (the output).
func (op ScanOp) Saved() (x, y bool) {
	switch op {
	case ScanCumprod, ScanLogcumsumexp:
		return true, true
	case ScanCummax, ScanCummin:
		return true, false
	}
	return false, false
}

// forwardState reports whether the op scans a forward state (cumprod: a
// zero seen, and ±inf or NaN in x after it; cummax/cummin: the running
// extremum) besides the backward recurrence; long axes then need two extra
// passes.
// inputs is the number of tensors a backward scan of op reads: dy, and x
// and y where the op saves them (Saved).
func (op ScanOp) inputs() int64 {
	n := int64(1)
	x, y := op.Saved()
	if x {
		n++
	}
	if y {
		n++
	}
	return n
}

func (op ScanOp) forwardState() bool {
	return op == ScanCumprod || op == ScanCummax || op == ScanCummin
}

// ScanDesc describes a scan backward.
type ScanDesc struct {
	Op    ScanOp
	DType dtype.DType
	// Shape of x, y, dy and dx: rank 1..8, dims >= 0.
	Shape []int
	// Axis is the scanned dim, 0..rank-1; a negative axis counts from the
	// end, as in PyTorch.
	Axis int
	// Reverse: the forward scan ran from the end of the axis to its start
	// (y_k combines x_k..x_{n-1}); the backward mirrors.
	Reverse bool
}

// ScanArgs are the operands of one Run. Every tensor has the plan's shape
// and dtype and may be strided. X and Y are the forward input and output,
// required as ScanOp.Saved says and ignored otherwise. DX is written in
// full (no zeroing needed); it may be the identical tensor as DY or X (in
// place) but must not otherwise overlap them, and must not overlap Y (the
// kernel reads y of neighbouring elements).
type ScanArgs struct {
	DY, X, Y, DX Tensor
	// Workspace is scratch memory of at least WorkspaceSize() bytes,
	// 16-byte aligned, when that is not 0; a Run owns it until the stream
	// reaches the Run's end. It needs no initialization.
	Workspace driver.Buffer
}

// ScanBackward is a validated plan for one scan backward. It is immutable
// and safe for concurrent use (each concurrent Run needs its own workspace).
type ScanBackward struct {
	id     planID
	desc   ScanDesc
	shape  []int
	axis   int
	numel  int64
	geom   scanGeom
	kernel *kernelRef
	pairK  *kernelRef // the colpair kernel where geom.pair is set (and scanPairEnv is not "never")
	// stripK is the colstrip kernel (f16 and bf16 cummax and cummin along
	// an outer axis that fits its shared memory; scanStripEnv not
	// "never"), with its block and its shared memory for this axis;
	// stripAll: scanStripEnv "always".
	stripK   *kernelRef
	stripAll bool
	// short: the plan takes the short mapping (scan_short.go): kernel is
	// the short kernel, every Run launches it, and pairK and stripK are
	// nil. shortOld and shortAll: scanShortWideEnv is "never" or
	// "always"; shortK: the most slices a thread of the wide forms.
	short              bool
	shortOld, shortAll bool
	shortK             int64
	// tallK and tallG are the tall kernel and its geometry where the
	// policy takes the tall mapping (scan_tall.go, tallWanted): Run takes
	// it where the operands allow (tallLayout), the col kernel elsewhere.
	tallK *kernelRef
	tallG *scanGeom
	// trowK and trowG are the tallrow kernel and its geometry where the
	// policy takes the tallrow form (scan_tallrow.go, tallRowWanted): Run
	// takes it where the operands allow (tallLayout), else the tall
	// kernel where it is set, else the col kernel.
	trowK *kernelRef
	trowG *scanGeom
	// carryEnv is scanCarryEnv's value, for scanCarryWanted: whether a
	// chunked tallrow launch takes the carry passes.
	carryEnv string
}

// NewScanBackward validates desc and returns a plan for it. The error wraps
// ErrUnsupported for an unknown op or a shape too large to launch, ErrDType
// for an invalid dtype, ErrRank or ErrShape for a bad shape and ErrAxis for
// an axis out of range.
func NewScanBackward(desc ScanDesc) (*ScanBackward, error) {
	// The plan's kernel is the short, row or col mapping, chosen from the
	// shape; the colpair and colstrip kernels are added where they may
	// apply (never to a short plan).
	id := planID{plan: "ScanBackward", op: desc.Op.String(), dt: desc.DType}
	if desc.Op < ScanCumsum || desc.Op > ScanLogcumsumexp {
		return nil, id.errorf(ErrUnsupported, "unknown scan op %d", uint8(desc.Op))
	}
	if err := id.checkDType(desc.DType); err != nil {
		return nil, err
	}
	if err := id.checkShape("shape", desc.Shape, 1); err != nil {
		return nil, err
	}
	axis, err := id.normalizeAxis(desc.Axis, desc.Shape)
	if err != nil {
		return nil, err
	}
	numel := int64(1)
	for _, d := range desc.Shape {
		if d == 0 {
			numel = 0
			break
		}
	}
	if numel != 0 {
		for _, d := range desc.Shape {
			if numel > (1<<62)/int64(d) {
				return nil, id.errorf(ErrShape, "shape %v has more than 2^62 elements", desc.Shape)
			}
			numel *= int64(d)
		}
	}
	p := &ScanBackward{id: id, desc: desc, shape: append([]int(nil), desc.Shape...), axis: axis, numel: numel}
	p.desc.Shape = p.shape
	variant := "col"
	if numel > 0 {
		p.geom = newScanGeom(desc.Op, desc.DType, p.shape, axis, numel)
		if p.geom.grid > maxGridX {
			return nil, id.errorf(ErrUnsupported, "shape %v along axis %d needs %d blocks, more than a grid holds (%d)",
				desc.Shape, axis, p.geom.grid, maxGridX)
		}
		if p.geom.row {
			variant = "row"
		}
	}
	name, ok := lookupKernel("scan", desc.Op.String(), desc.DType, variant)
	if !ok {
		return nil, id.errorf(ErrUnsupported, "no kernel for %s %s", desc.Op, desc.DType)
	}
	p.kernel = newKernelRef("scan", name)
	if numel > 0 && scanShortPicks(p.geom.n, p.geom.nslices, knob(scanShortEnv)) {
		if sname, ok := lookupKernel("scan", desc.Op.String(), desc.DType, "short"); ok {
			p.setShort(sname)
			return p, nil
		}
	}
	if p.geom.pair != nil && knob(scanPairEnv) != "never" {
		if pname, ok := lookupKernel("scan", desc.Op.String(), desc.DType, "colpair"); ok {
			p.pairK = newKernelRef("scan", pname)
		}
	}
	env := knob(scanStripEnv)
	p.stripAll = env == "always"
	if numel > 0 && !p.geom.row && (p.geom.chunks > 1 || p.stripAll) && env != "never" {
		if sm := scanStripSmem(p.geom.n); sm <= scanStripSmemCap {
			if sname, ok := lookupKernel("scan", desc.Op.String(), desc.DType, "colstrip"); ok {
				p.stripK = newKernelRef("scan", sname)
				p.stripK.smem, p.stripK.smemCap = int(sm), scanStripSmemCap
			}
		}
	}
	if numel > 0 && !p.geom.row {
		p.newTall()
		p.newTallRow()
	}
	p.carryEnv = knob(scanCarryEnv)
	return p, nil
}

// Kernel identifies the plan's main kernel, for logs, diagnostics and
// tests: the short, tallrow, tall, row or col kernel the descriptor selects. It
// depends only on the descriptor, not on the GPU or the operands' layout.
// Where those allow, a Run launches another kernel instead (the col kernel
// in place of "tall" or "tallrow" for operands they cannot serve, tall in
// place of "tallrow" where tall can; for cummax and cummin
// on compute capability 8.0 and up, colstrip (f16, bf16) or colpair (bf16)
// in place of "col"): Launches reports the kernels, grids and passes a Run
// takes on a given device, and Warm loads every kernel a Run of the plan
// may launch.
func (p *ScanBackward) Kernel() KernelInfo {
	name := p.kernel.name
	if p.tallK != nil {
		name = p.tallK.name
	}
	if p.trowK != nil {
		name = p.trowK.name
	}
	return KernelInfo{Name: name, Family: "scan", Op: p.id.op, DType: p.desc.DType, Backend: backend}
}

// Precision reports the plan's numerical guarantees: math in opmath; the
// scans accumulate in opmath.
func (p *ScanBackward) Precision() Precision { return precisionFor(p.desc.DType, true) }

// WorkspaceSize returns the bytes of scratch memory a Run needs in
// ScanArgs.Workspace. It is 0 unless the scanned axis is long: more than 64
// to 256 elements along an outer axis, or 2048 to 8192 along the innermost,
// by op and dtype. Beyond that it grows with the tensor, staying a small
// fraction of dy's size. It depends only on the descriptor, not on the GPU,
// and covers every kernel a Run of the plan may launch.
func (p *ScanBackward) WorkspaceSize() int64 { return p.wsSize() }

// wsSize is the larger of the two geometries' workspaces where the plan
// may take either kernel.
//
// A workspace is 0 unless a slice is longer than one tile, then 16 to 40
// bytes per tile and slice (cumprod along an axis other than the innermost
// adds 4 bytes per 32 slices). A tile is 256 runs along the innermost axis
// and 8 runs along any other; a run is 16 elements (8 for f64), with cumsum
// 32 (16-bit types along the innermost axis and f32/f16/bf16 along others),
// with cummax and cummin 32 (16 for f32 along the innermost axis and f64,
// 20 for bf16 along other axes), and with cumprod bf16 along other axes 15
// (scanItems). Where Run may take the colpair, tall or tallrow kernel (scanPolicy)
// it is the largest of the kernels' needs.
func (p *ScanBackward) wsSize() int64 {
	size := p.geom.ws.size
	if p.geom.pair != nil {
		size = max(size, p.geom.pair.ws.size)
	}
	if p.tallG != nil {
		size = max(size, p.tallG.ws.size)
	}
	if p.trowG != nil {
		size = max(size, p.trowG.ws.size)
	}
	return size
}

// Desc returns the plan's descriptor.
func (p *ScanBackward) Desc() ScanDesc {
	d := p.desc
	d.Shape = append([]int(nil), p.shape...)
	return d
}

// Check validates args against the plan without launching anything.
func (p *ScanBackward) Check(a *ScanArgs) error {
	dt, id := p.desc.DType, p.id
	needX, needY := p.desc.Op.Saved()
	if err := id.checkTensor("dy", &a.DY, roleInput, dt, p.shape); err != nil {
		return err
	}
	if needX {
		if err := id.checkTensor("x", &a.X, roleSaved, dt, p.shape); err != nil {
			return err
		}
	}
	if needY {
		if err := id.checkTensor("y", &a.Y, roleSaved, dt, p.shape); err != nil {
			return err
		}
	}
	if err := id.checkTensor("dx", &a.DX, roleOutput, dt, p.shape); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	size := int64(dt.Size())
	dxLo, dxHi := tensorRange(&a.DX, size)
	if lo, hi := tensorRange(&a.DY, size); lo < dxHi && dxLo < hi && !sameLayout(&a.DX, &a.DY) {
		return id.errorf(ErrLayout, "dx overlaps dy without being the identical tensor (in place)")
	}
	if needX {
		if lo, hi := tensorRange(&a.X, size); lo < dxHi && dxLo < hi && !sameLayout(&a.DX, &a.X) {
			return id.errorf(ErrLayout, "dx overlaps x without being the identical tensor (in place)")
		}
	}
	if needY {
		if lo, hi := tensorRange(&a.Y, size); lo < dxHi && dxLo < hi {
			return id.errorf(ErrLayout, "dx overlaps y; %s reads y of neighbouring elements, so dx needs its own memory", p.desc.Op)
		}
	}
	need := p.wsSize()
	if need == 0 {
		return nil
	}
	w := a.Workspace
	if w.Addr == 0 {
		return id.errorf(ErrMissing, "workspace of %d bytes is required (WorkspaceSize) for %d tiles of %d slices",
			need, p.geom.chunks, p.geom.nslices)
	}
	if w.Size < need {
		return id.errorf(ErrBufferTooSmall, "workspace needs %d bytes (WorkspaceSize) but has %d", need, w.Size)
	}
	if uintptr(w.Addr)%16 != 0 {
		return id.errorf(ErrLayout, "workspace address %#x is not 16-byte aligned", uintptr(w.Addr))
	}
	wLo, wHi := uintptr(w.Addr), uintptr(w.Addr)+uintptr(need)
	ts := [4]*Tensor{&a.DY, &a.X, &a.Y, &a.DX}
	used := [4]bool{true, needX, needY, true}
	for i, t := range ts {
		if lo, hi := tensorRange(t, size); used[i] && lo < wHi && wLo < hi {
			return id.errorf(ErrLayout, "workspace overlaps %s", [4]string{"dy", "x", "y", "dx"}[i])
		}
	}
	return nil
}

// tensorRange is the byte range [lo, hi) a validated, non-empty tensor
// addresses.
func tensorRange(t *Tensor, size int64) (lo, hi uintptr) {
	span := int64(1)
	for d := range t.Shape {
		span += int64(t.Shape[d]-1) * t.strideOf(d)
	}
	return uintptr(t.Buf.Addr), uintptr(t.Buf.Addr) + uintptr(span*size)
}

// sameLayout reports whether a and b address the same elements in the
// same order.
func sameLayout(a, b *Tensor) bool {
	if a.Buf.Addr != b.Buf.Addr {
		return false
	}
	for d := range a.Shape {
		if a.Shape[d] != 1 && a.strideOf(d) != b.strideOf(d) {
			return false
		}
	}
	return true
}
