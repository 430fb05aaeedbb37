package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// ReduceOp is a reduction, over one axis or a set of axes, whose backward
// ReduceBackward computes. With g = dy broadcast along the reduced axes, N
// the number of elements of a slice (the axis length, or the product of the
// reduced axes' lengths), x the saved input and y the saved output, the
// gradients are PyTorch's (docs/semantics.md, section 3); a slice is the
// whole reduced set, so ties, zeros and the mean are the set's:
type ReduceOp uint8

const (
	// ReduceSum: y = Σx; dx = g.
	ReduceSum ReduceOp = iota + 1
	// ReduceMean: y = Σx/N; dx = g*(1/N), with 1/N rounded to the math
	// type and multiplied, as PyTorch on CUDA.
	ReduceMean
	// ReduceMax (amax): dx = (g/count)*(x == y), count = the number of
	// elements equal to y in the slice, so ties share g evenly; a NaN in
	// the slice makes y NaN, count 0 and the whole slice's gradient NaN.
	ReduceMax
	// ReduceMin (amin): as ReduceMax for the minimum.
	ReduceMin
	// ReduceProd: y = Πx, exact with zeros per slice and never dividing by
	// zero: no zero in the slice gives dx = g*(y/x); one zero at k gives
	// dx_k = g*Π_{j≠k} x_j and g*0 elsewhere; two or more zeros give g*0
	// everywhere (g*0 is NaN only for a NaN or infinite g, as PyTorch).
	ReduceProd
	// ReduceNorm2: y = sqrt(Σx²); dx = g*(x/y), and 0 where y == 0 (even
	// for a NaN g).
	ReduceNorm2
	// ReduceLogSumExp: y = log Σexp(x); dx = g*exp(x - y). An all -inf
	// slice gives NaN; with y = +inf, +inf elements give NaN and finite ones 0.
	ReduceLogSumExp
	// ReduceVar: y = Σ(x-μ)²/(N-c) with c = Correction; dx =
	// ((2/(N-c))*g)*(x - μ), μ the slice mean accumulated in the math type.
	// N-c <= 0 has no special case: N == c makes the factor +inf (±inf, or
	// NaN where x == μ or g == 0), N < c makes it negative.
	ReduceVar
	// ReduceStd: y = sqrt(var); dx = ReduceVar's formula with g replaced by
	// g/(2y), which is 0 where y == 0 (even for a NaN g).
	ReduceStd
)

var reduceOpNames = [...]string{ReduceSum: "sum", ReduceMean: "mean", ReduceMax: "max", ReduceMin: "min",
	ReduceProd: "prod", ReduceNorm2: "norm2", ReduceLogSumExp: "logsumexp", ReduceVar: "var", ReduceStd: "std"}

// String returns the op's lower-case name, e.g. "logsumexp", as it appears
// in KernelInfo.Op, kernel names and error messages. An unknown op prints
// as ReduceOp(N).
func (op ReduceOp) String() string {
	if op >= 1 && int(op) < len(reduceOpNames) {
		return reduceOpNames[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", uint8(op))
}

// ReduceOps lists every reduction op.
func ReduceOps() []ReduceOp {
	return []ReduceOp{ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceNorm2,
		ReduceLogSumExp, ReduceVar, ReduceStd}
}

// needsSaved reports whether the op requires the saved x and y (every op
// but Sum and Mean; Var reads only x but takes y like the others).
func (op ReduceOp) needsSaved() bool { return op != ReduceSum && op != ReduceMean }

// hasStats reports whether the backward needs per-slice statistics (the
// tie count, the zero count and product, or the mean).
func (op ReduceOp) hasStats() bool {
	switch op {
	case ReduceMax, ReduceMin, ReduceProd, ReduceVar, ReduceStd:
		return true
	}
	return false
}

// redMaxCounted is the longest slice max, min and prod take: their
// kernels count a slice's ties or zeros in unsigned 32 bits.
const redMaxCounted = 1<<32 - 1

// provisional reports whether the op's stats kernel writes dx for the
// common case (one maximum; no zero), so that on split slices the apply
// kernel's total launch finishes it and its dx launch is skipped
// (Op::provisional in gen/reduce_ops.cuh).
func (op ReduceOp) provisional() bool {
	return op == ReduceMax || op == ReduceMin || op == ReduceProd
}

// ReduceDesc describes a reduction backward over one axis (Axis) or over
// a set of axes (Axes).
type ReduceDesc struct {
	Op    ReduceOp
	DType dtype.DType
	// Shape is the forward input's shape (rank 1..8); x and dx have it. dy
	// and y have it either with the axis set to 1 (keepdim=True) or with
	// the axis removed (keepdim=False, PyTorch's default: torch.sum(x,
	// dim) drops dim); both forms name the same memory.
	Shape []int
	// Axis is the reduced axis, in -rank..rank-1; negative values count
	// from the end as in Python. It is used where Axes is nil, and must be
	// 0 where Axes is not.
	Axis int
	// Axes, where not nil, is the set of reduced axes (PyTorch's dim given
	// as a tuple): any subset, in any order, each in -rank..rank-1 and
	// named once (a duplicate is an ErrAxis). dy and y then have the input
	// shape with every reduced axis set to 1 (keepdim=True) or removed
	// (keepdim=False). One axis is the same plan as Axis. An empty, non-nil
	// Axes is an ErrAxis: PyTorch's dim=() reduces every dim in some ops
	// and none in others, so to reduce every dim list them all. N in the
	// ops' formulas is the number of elements of the reduced set: Mean
	// divides by it, Var and Std take N - Correction, Max and Min split
	// dy among the ties of the whole set, Prod counts its zeros over it.
	// How Run computes it is in reduce_multi.go: the plan coalesces the
	// shape (size-1 dims dropped, adjacent reduced dims merged, adjacent
	// kept dims merged); where the reduced dims form one group it is the
	// single-axis plan on that view (any strides that merge over the
	// groups), else a kernel that reads each slice segment by segment
	// (contiguous operands only).
	Axes []int
	// Correction is Var's and Std's c (the divisor is N - c), used as given:
	// the zero value means c = 0 (the population variance). PyTorch's
	// default is 1, so torch.var(x, dim) corresponds to Correction: 1. It
	// must be finite; other ops ignore it.
	Correction float64
}

// ReduceArgs are the operands of one Run. X and Y (the saved input and the
// saved output) are required by every op except Sum and Mean, which ignore
// them. DY and Y may each take either shape of the forward's output:
// KeepdimShape (the axis kept as 1) or ReducedShape (the axis removed). DX
// must not share memory with DY, X or Y. Workspace must hold
// WorkspaceSize() bytes, 16-byte aligned, when that is not 0; its contents
// need no initialization.
type ReduceArgs struct {
	DY, X, Y  Tensor
	DX        Tensor
	Workspace driver.Buffer
}

// ReduceBackward is a validated plan for one reduction backward. It is
// immutable and safe for concurrent use (concurrent Runs need separate
// workspaces).
type ReduceBackward struct {
	id       planID
	desc     ReduceDesc
	shape    []int // input shape
	keep     []int // keepdim shape
	reduced  []int // the input shape without the axis (keepdim=False)
	axis     int   // normalized
	numel    int64
	k        int64 // reduced axis length
	slices   int64 // numel / k
	scale    float64
	row      reduceGeom
	col      reduceGeom
	ws       int64
	one      bool        // split col slices may take the "one" kernel
	oneAny   bool        // ... whatever the size of x (reduceOneEnv)
	oneG     reduceGeom  // its cut of the col slices (col keeps the two passes')
	oneOff   int64       // byte offset of its counters in the workspace
	rowK     *kernelRef  // one pass, the row mapping
	colK     *kernelRef  // one pass, the col mapping
	stats    *kernelRef  // split slices, first pass (nil without statistics)
	apply    *kernelRef  // split slices, second pass (nil without statistics)
	oneK     *kernelRef  // split col slices in one launch (var and std only; nil otherwise)
	cluK     *kernelRef  // ... as thread block clusters (compute capability 9.0)
	clu      reduceGeom  // its geometry; nchunks == 0 where it does not apply
	cluAny   bool        // ... whatever the grid (reduceClusterEnv)
	flatK    *kernelRef  // dense operands: ops without statistics, and the provisional ones (nil otherwise)
	flat     reduceFlat  // its layout; flat.packs == 0 where the shape or the op's policy does not allow it
	flatFx   bool        // the flat kernel is followed by red_flat_fix (provisional ops)
	flatSt   bool        // var and std take the flat kernel's two passes (reduce_flat_stats.go)
	flatRev  bool        // ... and the apply pass walks the statistics tiles last to first (reduceFlatReuseEnv)
	flatG    reduceGeom  // ... and its statistics pass's tiles
	fixK     *kernelRef  // ... that is, by this kernel (nil but for the provisional ops)
	stripK   *kernelRef  // ops with statistics on dense operands, whole slices per block (nil where off)
	strip    reduceStrip // its cut
	stripAny bool        // ... wherever the shape and operands allow it
	stripcK  *kernelRef  // the strip kernel as thread block clusters (compute capability 9.0; nil where off)
	stripc   reduceStrip // its cut (rows per block in chunk)
	shortK   *kernelRef  // a short axis over many slices on dense operands (nil where off; reduce_short.go)
	short    reduceShort // its cut

	// multi is a plan over two or more axes (reduce_multi.go); nil for one.
	multi *reduceMulti
}

// NewReduceBackward validates desc and returns a plan for it. The error
// wraps ErrUnsupported for an unknown op, ErrDType for an invalid dtype,
// ErrRank or ErrShape for a bad shape (also for Max and Min over an empty
// axis or set of axes, which PyTorch's forward rejects), ErrAxis for an
// axis out of range, a duplicate in Axes or an empty non-nil Axes, and
// ErrParam for a Correction that is not finite or for Axis and Axes both
// set.
func NewReduceBackward(desc ReduceDesc) (*ReduceBackward, error) {
	id := planID{plan: "ReduceBackward", op: desc.Op.String(), dt: desc.DType}
	if desc.Op < ReduceSum || desc.Op > ReduceStd {
		return nil, id.errorf(ErrUnsupported, "unknown reduce op %d", uint8(desc.Op))
	}
	if err := id.checkDType(desc.DType); err != nil {
		return nil, err
	}
	if err := id.checkShape("shape", desc.Shape, 1); err != nil {
		return nil, err
	}
	var axes []int
	if desc.Axes != nil {
		var err error
		if axes, err = id.normalizeAxes(&desc); err != nil {
			return nil, err
		}
		if len(axes) == 1 {
			one := desc
			one.Axis, one.Axes = axes[0], nil
			p, err := NewReduceBackward(one)
			if err != nil {
				return nil, err
			}
			p.desc.Axis, p.desc.Axes = desc.Axis, slices.Clone(desc.Axes)
			return p, nil
		}
	}
	axis, err := id.normalizeAxis(desc.Axis, desc.Shape)
	if err != nil {
		return nil, err
	}
	numel := int64(1)
	for _, d := range desc.Shape {
		if d != 0 && numel > redMaxElems/int64(d) {
			return nil, id.errorf(ErrShape, "shape %v has more than 2^60 elements", desc.Shape)
		}
		numel *= int64(d)
	}
	if axes != nil {
		if (desc.Op == ReduceVar || desc.Op == ReduceStd) && (math.IsNaN(desc.Correction) || math.IsInf(desc.Correction, 0)) {
			return nil, id.errorf(ErrParam, "correction %v must be finite", desc.Correction)
		}
		return newReduceMulti(id, desc, axes, numel)
	}
	k := int64(desc.Shape[axis])
	if k == 0 && (desc.Op == ReduceMax || desc.Op == ReduceMin) {
		return nil, id.errorf(ErrShape, "the reduced axis %d of shape %v has length 0: %s of an empty slice is undefined (PyTorch errors in the forward)",
			axis, desc.Shape, desc.Op)
	}
	if desc.Op.provisional() && k > redMaxCounted {
		// The kernels count ties (max, min) and zeros (prod) per slice in
		// 32 bits.
		return nil, id.errorf(ErrShape, "the reduced axis %d of shape %v has length %d: %s counts over at most %d elements a slice",
			axis, desc.Shape, k, desc.Op, int64(redMaxCounted))
	}
	if (desc.Op == ReduceVar || desc.Op == ReduceStd) && (math.IsNaN(desc.Correction) || math.IsInf(desc.Correction, 0)) {
		return nil, id.errorf(ErrParam, "correction %v must be finite", desc.Correction)
	}
	p := &ReduceBackward{id: id, desc: desc, shape: append([]int(nil), desc.Shape...), axis: axis,
		numel: numel, k: k}
	p.desc.Shape = p.shape
	p.keep = append([]int(nil), desc.Shape...)
	p.keep[axis] = 1
	p.reduced = append(append([]int{}, desc.Shape[:axis]...), desc.Shape[axis+1:]...)
	type kref struct {
		variant string
		ref     **kernelRef
	}
	refs := []kref{{"row", &p.rowK}, {"col", &p.colK}}
	if desc.Op.hasStats() {
		refs = append(refs, kref{"stats", &p.stats}, kref{"apply", &p.apply}, kref{"cluster", &p.cluK})
		if !desc.Op.provisional() {
			refs = append(refs, kref{"one", &p.oneK})
		}
	}
	refs = append(refs, kref{"flat", &p.flatK})
	if desc.Op.provisional() {
		refs = append(refs, kref{"fix", &p.fixK})
	}
	for _, r := range refs {
		name, ok := lookupKernel("reduce", desc.Op.String(), desc.DType, r.variant)
		if !ok {
			return nil, id.errorf(ErrUnsupported, "no %s kernel for %s %s", r.variant, desc.Op, desc.DType)
		}
		*r.ref = newKernelRef("reduce", name)
	}
	switch desc.Op {
	case ReduceMean:
		if desc.DType == dtype.F64 {
			p.scale = 1 / float64(k)
		} else {
			p.scale = float64(float32(1) / float32(k))
		}
	case ReduceVar, ReduceStd:
		p.scale = 2 / (float64(k) - desc.Correction)
	}
	if numel > 0 {
		p.slices = numel / k
		if err := p.planShort(); err != nil {
			return nil, err
		}
		p.row = rowGeometry(p.slices, k, desc.DType.Size())
		p.col = colGeometry(p.slices, k, colVec(desc.DType, desc.Op))
		if p.flatK != nil {
			p.flat = flatGeometry(desc.Shape, axis, numel, desc.DType.Size(), flatRowsOn())
			if desc.Op.provisional() && p.flat.packs > 0 && !p.flatSplit() {
				p.flat = reduceFlat{}
			}
			p.flatFx = desc.Op.provisional() && p.flat.packs > 0
		}
		if desc.Op.hasStats() {
			acc := redAccSize(desc.DType)
			w := int64(redBlock / p.col.group)
			if cm := knob(reduceClusterEnv); p.col.nchunks > 1 && (cm == "always" || cm != "never" && clusterOp(desc.Op, desc.DType)) {
				p.clu = clusterGeometry(p.slices, k, colVec(desc.DType, desc.Op))
				p.cluAny = cm == "always"
			}
			if err := p.planStrip(); err != nil {
				return nil, err
			}
			mode := knob(reduceOneEnv)
			if p.col.nchunks > 1 && !desc.Op.provisional() && mode != "never" {
				v := colVec(desc.DType, desc.Op)
				if geo, ok := oneGeometry(p.col, k, w*v*int64(desc.DType.Size())); ok {
					p.oneG, p.one, p.oneAny = geo, true, mode == "always"
					p.oneK.smem = int(geo.chunk * w * v * int64(desc.DType.Size()))
				}
			}
			entries := int64(0)
			if p.row.nchunks > 1 {
				entries = p.slices * p.row.nchunks
			}
			if p.col.nchunks > 1 {
				entries = max(entries, p.slices*p.col.nchunks)
			}
			if entries > 0 {
				// The partials, then one total per slice (red_total).
				entries += p.slices
			}
			p.ws = entries * acc
			if p.flatFx {
				p.ws = max(p.ws, flatFixSize(desc.Op, desc.DType, p.slices, p.flat.packs, k))
			}
			if !desc.Op.provisional() {
				p.planFlatStats()
			}
			if p.one {
				// Then the ticket and one arrival counter per slice
				// block (as many as with one slice per thread).
				p.oneOff = p.slices * (p.oneG.nchunks + 1) * acc
				p.ws = (max(p.ws, p.oneOff+4*(1+ceilDiv(p.slices, w))) + 15) &^ 15
			}
		}
	}
	if (desc.Op == ReduceVar || desc.Op == ReduceStd) && !p.flatSt {
		p.flatK = nil // Warm loads no kernel that Run never takes
	}
	return p, nil
}

// flatSplit tells whether a provisional op takes the flat path where its
// operands are dense (reduceFlatEnv, else where the mapping that dense
// operands get, row when the axis is innermost, splits the slices); never
// for slices longer than a 32-bit count.
func (p *ReduceBackward) flatSplit() bool {
	if p.k > math.MaxInt32 {
		return false // the counts are 32-bit
	}
	switch knob(reduceFlatEnv) {
	case "never":
		return false
	case "always":
		return true
	}
	geo, _ := p.denseGeom()
	return geo.nchunks > 1
}

// denseGeom is the geometry of the mapping that contiguous operands get:
// row when the reduced axis is innermost (and longer than 1), else col.
func (p *ReduceBackward) denseGeom() (geo reduceGeom, row bool) {
	if p.k > 1 && numel(p.shape[p.axis+1:]) == 1 {
		return p.row, true
	}
	return p.col, false
}

// Kernel identifies the kernel that writes dx when Run is given contiguous
// operands, for logs, diagnostics and tests, from the descriptor alone. A
// Run may launch another kernel, or more, where its operands are strided
// or its device allows a faster one: Launches reports the launches a Run
// makes on a given device; Warm loads every kernel a Run may launch.
func (p *ReduceBackward) Kernel() KernelInfo {
	// The name is the kernel Run takes for contiguous operands (16-byte
	// aligned, as allocations are): "flat" for Sum, Mean, Norm2 and
	// LogSumExp where the shape allows it (see flatGeometry), for Max,
	// Min and Prod where it also allows their slices to be split (then
	// "fix" mends the slices where the flat kernel's provisional dx is
	// wrong), and for Var and Std where their flat path is on (two passes
	// over x, reduce_flat_stats.go: by default few long slices, innermost
	// or with an inner extent that divides or equals a pack); else the "row" variant when the reduced axis is innermost,
	// else "col"; "apply" (after "stats") when an op with statistics
	// splits its slices, but "one" for Var and Std split along an outer
	// axis (Run takes it where x is larger than the GPU's L2 cache, else
	// "stats" and "apply"). Strided operands may take the other mapping.
	// On compute capability 9.0 and up Run may take "cluster" in place of
	// "stats" and "apply" (see clusterOp). Where the plan may take a strip
	// kernel (var, std, max and min, or the ops under
	// reduceStripEnv) and the col slices split ("always": wherever the
	// shape allows it) the name is "stripc", the form Run takes on compute capability 9.0 and up, or
	// "strip" where the plan has only the one-block form; Run takes them
	// where the device has the build and gives a block the strip's shared
	// memory (and, but for "always", the blocks are at least as many as
	// its SMs). A plan over several axes names the single-axis plan's
	// kernel on its coalesced view (Path "single"), or the seg kernel,
	// which writes dx in its apply pass (Path "seg"), but "segc" where the
	// plan has the clustered seg kernel (var and std whose slices fit a
	// cluster's shared memory), the form Run takes on compute capability
	// 9.0 and up where its blocks are at least as many as the GPU's SMs;
	// "segs" where the plan has the segs kernel (var, std, max and min
	// over short segments, see reduceSegsEnv), which Run takes on aligned
	// operands where the device gives a block its shared memory.
	// "short" comes before all of these: a single axis of at most 16
	// positions over at least 2^16 slices (any count under
	// BARACUDA_REDUCE_SHORT=always), innermost or with an inner extent
	// that is a multiple of a vector of 4 slices (16-bit dtypes) or 16
	// bytes, where the default policy finds it faster (shortPays in
	// reduce_short.go); "inner" in its place for an innermost axis in
	// f32, f16 and bf16 where the packed inner form takes its length
	// (innerPacked in reduce_inner.go: f32 all but 9, 11, 13 and 15; f16
	// and bf16 1, 2, 3, 4, 6, 8, 12 and 16).
	if m := p.multi; m != nil {
		if m.inner != nil {
			return m.inner.Kernel()
		}
		ref := m.segK
		if m.segcK != nil {
			ref = m.segcK
		}
		if m.segsK != nil {
			ref = m.segsK
		}
		return KernelInfo{Name: ref.name, Family: "reduce", Op: p.id.op, DType: p.desc.DType, Backend: backend}
	}
	geo, row := p.denseGeom()
	ref := p.colK
	switch {
	case p.shortK != nil:
		ref = p.shortK
	case p.stripcK != nil && !row && (p.stripAny || geo.nchunks > 1):
		ref = p.stripcK
	case p.stripK != nil && !row && (p.stripAny || geo.nchunks > 1):
		ref = p.stripK
	case p.flat.packs > 0:
		ref = p.flatK
	case p.stats != nil && geo.nchunks > 1 && p.one && !row:
		ref = p.oneK
	case p.stats != nil && geo.nchunks > 1:
		ref = p.apply
	case row:
		ref = p.rowK
	}
	return KernelInfo{Name: ref.name, Family: "reduce", Op: p.id.op, DType: p.desc.DType, Backend: backend}
}

// Precision reports the plan's numerical guarantees: math in opmath; Max,
// Min, Prod, Var and Std accumulate their per-slice statistics (tie count,
// product, sum) in opmath too, in a fixed order.
func (p *ReduceBackward) Precision() Precision {
	return precisionFor(p.desc.DType, p.desc.Op.hasStats())
}

// WorkspaceSize returns the bytes of scratch memory Run needs in
// ReduceArgs.Workspace: 0 except for ops with statistics (Max, Min, Prod,
// Var, Std) over few, long slices, and on the seg path of a plan over
// several axes (Path "seg"), whose partial statistics Run keeps there. It
// depends only on the descriptor, not on the GPU.
func (p *ReduceBackward) WorkspaceSize() int64 { return p.ws }

// Desc returns the plan's descriptor.
func (p *ReduceBackward) Desc() ReduceDesc {
	d := p.desc
	d.Shape = append([]int(nil), p.shape...)
	d.Axes = slices.Clone(p.desc.Axes)
	return d
}

// KeepdimShape is a shape dy and y may have: the input shape with the
// reduced axis (or axes) set to 1 (PyTorch's keepdim=True).
func (p *ReduceBackward) KeepdimShape() []int { return append([]int(nil), p.keep...) }

// ReducedShape is the other shape dy and y may have: the input shape
// without the reduced axis or axes (PyTorch's default, keepdim=False;
// where every axis is reduced, a 0-d tensor).
func (p *ReduceBackward) ReducedShape() []int { return append([]int{}, p.reduced...) }
