package ops

import (
	"slices"
	"sync"

	"github.com/baracuda-go/baracuda/driver"
)

// Reductions over several axes (ReduceDesc.Axes with two or more axes).
//
// The plan first coalesces the input shape: size-1 dims drop out, and
// adjacent dims that are both reduced or both kept merge into one group.
// Then:
//   - where one reduced group remains (e.g. the last two dims of
//     [64, 128, 64, 64], or every dim), the plan is a single-axis plan on
//     the coalesced view ([64*128, 64*64] along axis 1): Run views each
//     operand so and runs that plan, with every path and layout the
//     single-axis plan has. An operand whose strides do not merge over a
//     group is an ErrLayout.
//   - otherwise (reduced groups alternate with kept ones, e.g. dims
//     (0, 2, 3) of [32, 256, 56, 56]: [32, 256, 3136] reduced, kept,
//     reduced; or dims (0, 2) of [A, B, C, D]), Run takes the seg kernel
//     (gen/reduce_seg.cuh) on contiguous operands: a block per chunk of a
//     slice, whose elements it finds segment by segment (the innermost
//     reduced group is a contiguous run where the innermost dim is
//     reduced: then it moves 16-byte packs). Ops with statistics launch it
//     twice, a statistics pass into the workspace and an apply pass, which
//     combines each slice's partials in a fixed order; Var and Std on
//     compute capability 9.0 may take its clustered form instead
//     (reduceSegcEnv), which reads x once.

// reduceMulti is a multi-axis plan's own state.
type reduceMulti struct {
	axes  []int   // normalized, ascending
	red   []bool  // per input dim: reduced
	group []int   // per input dim: its coalesced group, -1 for a size-1 dim
	gsize []int64 // coalesced group sizes
	gred  []bool  // coalesced groups: reduced
	n     int64   // elements per slice: the product of the reduced dims
	// One reduced group: the single-axis plan on the coalesced view.
	inner *ReduceBackward
	iaxis int
	// Several: the seg kernel and its layout (phase and vec set by Run).
	segK *kernelRef
	seg  reduceLayout
	// Var and Std where a slice fits in a cluster's shared memory: the
	// clustered seg kernel and its layout (nil where off).
	segcK   *kernelRef
	segc    reduceLayout
	segcAny bool // ... whatever the grid (reduceSegcEnv)
	// Var, std, max and min over [R, C, S] with short segments: the segs
	// kernel and its layout (nil where off; segsPlan).
	segsK *kernelRef
	segs  reduceLayout
}

// The segs kernel (reduce_segs, gen/reduce_segs.cuh): where x is [R, C, S]
// (one kept group between reduced ones, the innermost reduced) with
// segments of S elements, at least a 16-byte pack but no multiple of one
// (a late layer's BatchNorm: S = 7*7), a block per G adjacent slices
// (G*S*size a multiple of 16 bytes) keeps the tile's R rows in shared
// memory (max and min only their flags, x == y: segsKeep): x read once in
// 16-byte packs, where the seg kernel walks such segments element by
// element. Run takes it where x and dx are 16-byte
// aligned and the device gives a block the rows' shared memory.
//
// reduceSegsEnv, read when a plan is made: "never" keeps plans off it. It
// is a kernel developer's knob; users leave it unset.
const reduceSegsEnv = "BARACUDA_REDUCE_SEGS"

// shortSegs reports whether the seg layout L is x seen as [R, C, S] (one
// kept group between reduced ones, the innermost reduced) with segments of
// at least n elements but no multiple of n: the shapes of the segs kernel
// and of the packed walk (segFlat) for packs of n elements.
func shortSegs(L *reduceLayout, n int64) bool {
	return L.srank == 1 && L.kstride[0] == 1 && L.cvec == 1 && L.kstride[1] >= n && L.kstride[1]%n != 0
}

// segsKeep is the shared memory bytes the segs kernel keeps a pack of x
// in (RedSegsKeep in gen/reduce_segs.cuh): max and min keep a byte of
// flags (x == y), var and std the pack itself.
func segsKeep(op ReduceOp) int64 {
	if op == ReduceMax || op == ReduceMin {
		return 1
	}
	return 16
}

// segsPlan sets up the segs kernel for a plan over several axes with the
// seg layout L (see reduceSegsEnv), where the shape allows it.
func (m *reduceMulti) segsPlan(id planID, desc ReduceDesc, L *reduceLayout) error {
	op := desc.Op
	size := int64(desc.DType.Size())
	if !op.hasStats() || op == ReduceProd || knob(reduceSegsEnv) == "never" || !shortSegs(L, 16/size) {
		return nil
	}
	S, C, R := L.kstride[1], L.sdim[0], L.sstride[1][0]
	g := 16 / gcd64(S*size, 16)
	packs := g * S * size / 16 // a row's
	smem := R * packs * segsKeep(op)
	// Rows that fit redStripSmem may still not fit beside the kernel's
	// static shared memory: the loader then finds no resident block
	// (smemBlocks 0) and segPolicy takes the segc or seg kernel.
	if C%g != 0 || packs > redBlock || smem > redStripSmem {
		return nil
	}
	name, ok := lookupKernel("reduce", op.String(), desc.DType, "segs")
	if !ok {
		return id.errorf(ErrUnsupported, "no segs kernel for %s %s", op, desc.DType)
	}
	m.segsK = newKernelRef("reduce", name)
	m.segsK.smem, m.segsK.smemCap = int(smem), redStripSmem
	m.segs = *L
	m.segs.chunk, m.segs.group, m.segs.tiles = R, int32(g), C/g
	return nil
}

// The clustered seg kernel (reduce_segc, compute capability 9.0, its own
// build): Var and Std on the seg path read x twice in two passes (the
// statistics, then dx); where a slice, cut into redSegCluster chunks,
// fits a chunk in a block's shared memory (redStripSmem), one cluster of
// redSegCluster blocks per slice keeps x in shared memory, combines its
// blocks' partial sums through distributed shared memory and writes dx:
// x is read once. Run takes it where the device has the build and gives
// a block the chunk's shared memory, and the clusters' blocks are at least
// as many as the GPU's SMs. Its sums round in another order than the two
// passes', so its bits differ from a GPU without clusters (each GPU stays
// bit-stable run to run).
//
// reduceSegcEnv, read when a plan is made: "never" keeps plans off it,
// "always" takes it whatever the grid (so that tests reach it with small
// tensors). It is a kernel developer's knob; users leave it unset.
const reduceSegcEnv = "BARACUDA_REDUCE_SEGC"

// redPhaseSegStats is RED_PHASE_SEG_STATS: the seg kernel's statistics pass.
const redPhaseSegStats = 3

// segMaxChunks bounds the chunks a seg slice is cut into (the apply pass
// combines a slice's partials with one warp).
const segMaxChunks = 512

// normalizeAxes validates Axes (and that Axis is 0 alongside it) and
// returns the axes normalized and sorted.
func (id planID) normalizeAxes(desc *ReduceDesc) ([]int, error) {
	if desc.Axis != 0 {
		return nil, id.errorf(ErrParam, "axis %d and axes %v are both set; set Axes alone (Axis must be 0 when Axes is not nil)", desc.Axis, desc.Axes)
	}
	if len(desc.Axes) == 0 {
		return nil, id.errorf(ErrAxis, "axes is empty (not nil): reducing over no axes is not supported (PyTorch's dim=() means every dim in some ops and none in others); list every axis to reduce them all, or leave Axes nil to use Axis")
	}
	out := make([]int, len(desc.Axes))
	for i, a := range desc.Axes {
		n, err := id.normalizeAxis(a, desc.Shape)
		if err != nil {
			return nil, id.errorf(ErrAxis, "axes %v: axis %d is out of range for rank %d, shape %v (rank %d takes -%d..%d)",
				desc.Axes, a, len(desc.Shape), desc.Shape, len(desc.Shape), len(desc.Shape), len(desc.Shape)-1)
		}
		out[i] = n
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, id.errorf(ErrAxis, "axes %v name dim %d twice; each axis may appear once", desc.Axes, out[i])
		}
	}
	return out, nil
}

// newReduceMulti makes the plan for two or more axes (validated by
// NewReduceBackward up to the axes).
func newReduceMulti(id planID, desc ReduceDesc, axes []int, numel int64) (*ReduceBackward, error) {
	rank := len(desc.Shape)
	m := &reduceMulti{axes: axes, red: make([]bool, rank), group: make([]int, rank), n: 1}
	for _, a := range axes {
		m.red[a] = true
		m.n *= int64(desc.Shape[a])
	}
	if m.n == 0 && (desc.Op == ReduceMax || desc.Op == ReduceMin) {
		return nil, id.errorf(ErrShape, "the reduced axes %v of shape %v hold no element: %s of an empty set is undefined (PyTorch errors in the forward)",
			axes, desc.Shape, desc.Op)
	}
	if desc.Op.provisional() && m.n > redMaxCounted {
		return nil, id.errorf(ErrShape, "the reduced axes %v of shape %v hold %d elements: %s counts over at most %d elements a slice",
			axes, desc.Shape, m.n, desc.Op, int64(redMaxCounted))
	}
	p := &ReduceBackward{id: id, desc: desc, shape: slices.Clone(desc.Shape), numel: numel, k: m.n, multi: m}
	p.desc.Shape = p.shape
	p.desc.Axes = slices.Clone(desc.Axes)
	p.keep = slices.Clone(desc.Shape)
	p.reduced = []int{}
	for d, sz := range desc.Shape {
		if m.red[d] {
			p.keep[d] = 1
		} else {
			p.reduced = append(p.reduced, sz)
		}
	}
	switch desc.Op {
	case ReduceMean:
		p.scale = meanScale(desc.DType.Size() == 8, m.n)
	case ReduceVar, ReduceStd:
		p.scale = 2 / (float64(m.n) - desc.Correction)
	}
	// Coalesce.
	for d, sz := range desc.Shape {
		if sz == 1 {
			m.group[d] = -1
			continue
		}
		if g := len(m.gsize) - 1; g >= 0 && m.gred[g] == m.red[d] {
			m.gsize[g] *= int64(sz)
			m.group[d] = g
			continue
		}
		m.group[d] = len(m.gsize)
		m.gsize = append(m.gsize, int64(sz))
		m.gred = append(m.gred, m.red[d])
	}
	nred := 0
	for _, r := range m.gred {
		if r {
			nred++
		}
	}
	if nred == 0 {
		// Every reduced dim has size 1: a reduced group of one element.
		m.gsize = append(m.gsize, 1)
		m.gred = append(m.gred, true)
		nred = 1
	}
	if numel > 0 {
		p.slices = numel / m.n
	}
	if nred == 1 {
		ishape := make([]int, len(m.gsize))
		for g, sz := range m.gsize {
			ishape[g] = int(sz)
			if m.gred[g] {
				m.iaxis = g
			}
		}
		inner, err := NewReduceBackward(ReduceDesc{Op: desc.Op, DType: desc.DType, Shape: ishape, Axis: m.iaxis, Correction: desc.Correction})
		if err != nil {
			return nil, err
		}
		m.inner = inner
		p.ws = inner.ws
		return p, nil
	}
	name, ok := lookupKernel("reduce", desc.Op.String(), desc.DType, "seg")
	if !ok {
		return nil, id.errorf(ErrUnsupported, "no seg kernel for %s %s", desc.Op, desc.DType)
	}
	m.segK = newKernelRef("reduce", name)
	if numel == 0 {
		return p, nil
	}
	L := &m.seg
	L.k, L.slices, L.scale = m.n, p.slices, p.scale
	L.chunk, L.nchunks = segGeometry(p.slices, m.n, desc.DType.Size())
	L.tiles = p.slices * L.nchunks
	// Row-major strides of the coalesced groups, then the kept groups and
	// the outer reduced groups outermost first; the innermost reduced group
	// is the segment.
	st := make([]int64, len(m.gsize))
	s := int64(1)
	for g := len(m.gsize) - 1; g >= 0; g-- {
		st[g] = s
		s *= m.gsize[g]
	}
	var rsize, rstride []int64
	for g := range m.gsize {
		if m.gred[g] {
			rsize, rstride = append(rsize, m.gsize[g]), append(rstride, st[g])
			continue
		}
		L.sdim[L.srank], L.sstride[0][L.srank] = m.gsize[g], st[g]
		L.srank++
	}
	last := len(rsize) - 1
	for i := range last {
		L.sstride[1][i], L.sstride[2][i] = rsize[i], rstride[i]
	}
	L.cvec = int32(last)
	L.kstride = [2]int64{rstride[last], rsize[last]}
	// The walks' divisors (bc_div): a segment's packs for the 16-byte
	// walk (fmagic[0], fshift[0]), its elements for the other
	// (fmagic[1], fshift[1]).
	// The packed walk (short segments, no 16-byte walk of the tiles)
	// divides by the slices with fmagic[0] instead.
	if np := int64(16 / desc.DType.Size()); rsize[last]%np == 0 {
		L.flat.magic[0], L.flat.shift[0] = divMagic(rsize[last] / np)
	} else if shortSegs(L, np) {
		L.flat.magic[0], L.flat.shift[0] = divMagic(L.sdim[0])
	}
	L.flat.magic[1], L.flat.shift[1] = divMagic(rsize[last])
	if desc.Op.hasStats() {
		// The tiles' partials, then for max and min flatSlots positions
		// of elements equal to y per tile (reduce_seg).
		p.ws = (L.tiles*redAccSize(desc.DType)+15)&^15 + 8*flatSlots(desc.Op)*L.tiles
	}
	if err := m.segsPlan(id, desc, L); err != nil {
		return nil, err
	}
	if mode := knob(reduceSegcEnv); stripOp(desc.Op) && mode != "never" {
		size := int64(desc.DType.Size())
		np := 16 / size
		chunk := ceilDiv(ceilDiv(m.n, redSegCluster), np) * np
		if smem := chunk * size; smem <= redStripSmem {
			name, ok := lookupKernel("reduce", desc.Op.String(), desc.DType, "segc")
			if !ok {
				return nil, id.errorf(ErrUnsupported, "no segc kernel for %s %s", desc.Op, desc.DType)
			}
			m.segcK = newKernelRef("reduce", name)
			m.segcK.smem, m.segcK.smemCap = int(max(smem, 16)), redStripSmem
			m.segc = *L
			m.segc.chunk, m.segc.nchunks, m.segc.tiles = chunk, redSegCluster, p.slices*redSegCluster
			m.segcAny = mode == "always"
		}
	}
	return p, nil
}

// meanScale is 1/n as Mean's kernels take it: rounded to float32 but for
// f64 (wide).
func meanScale(wide bool, n int64) float64 {
	if wide {
		return 1 / float64(n)
	}
	return float64(float32(1) / float32(n))
}

// segGeometry cuts the seg kernel's slices (c of them, n elements each, of
// size bytes): enough chunks for about redTargetThreads threads, each
// chunk at least 4 packs per thread and a whole number of 16-byte packs,
// at most segMaxChunks of them.
func segGeometry(c, n int64, size int) (chunk, nchunks int64) {
	np := int64(16 / size)
	nc := ceilDiv(redTargetThreads/redBlock, c)
	nc = min(nc, n/(redBlock*4*np), segMaxChunks)
	nc = max(nc, 1)
	chunk = ceilDiv(ceilDiv(n, nc), np) * np
	return chunk, ceilDiv(n, chunk)
}

// Path tells which form a multi-axis plan takes: "single" (one reduced
// group after coalescing: the single-axis plan on the coalesced view) or
// "seg" (the seg kernel); "" for a plan over one axis.
func (p *ReduceBackward) Path() string {
	switch {
	case p.multi == nil:
		return ""
	case p.multi.inner != nil:
		return "single"
	}
	return "seg"
}

// multiShapeError restates a dy or y shape mismatch for several axes.
func (p *ReduceBackward) multiShapeError(field string, t *Tensor) error {
	return p.id.errorf(ErrShape, "%s shape %v must equal %v (the input shape %v with axes %v set to 1, keepdim=True) or %v (axes %v removed, keepdim=False)",
		field, t.Shape, p.keep, p.shape, p.multi.axes, p.reduced, p.multi.axes)
}

// multiLayout checks that an operand of a multi-axis plan, of the right
// shape, has a layout its kernels take.
func (p *ReduceBackward) multiLayout(field string, t *Tensor, keep bool) error {
	if p.numel == 0 {
		return nil
	}
	if p.multi.inner == nil {
		if !t.isContiguous() {
			return p.id.errorf(ErrLayout, "%s strides %v: a reduction over axes %v of shape %v (reduced dims in more than one group) takes contiguous operands only",
				field, t.Strides, p.multi.axes, p.shape)
		}
		return nil
	}
	var v viewTensor
	if !p.view(t, keep, &v) {
		return p.id.errorf(ErrLayout, "%s strides %v for shape %v do not merge over the groups of adjacent kept and reduced dims (coalesced shape %v); give %s with mergeable strides (e.g. contiguous)",
			field, t.Strides, t.Shape, p.multi.gsize, field)
	}
	return nil
}

// viewTensor is an operand seen on the coalesced shape.
type viewTensor struct {
	shape, strides [MaxRank]int
	rank           int
}

func (v *viewTensor) tensor(t *Tensor) Tensor {
	return Tensor{Buf: t.Buf, DType: t.DType, Shape: v.shape[:v.rank:v.rank], Strides: v.strides[:v.rank:v.rank]}
}

// view sees t (the input shape, or for keep a dy or y in either form) on
// the coalesced shape (reduced groups of size 1 for keep), and reports
// whether t's strides merge over every group.
func (p *ReduceBackward) view(t *Tensor, keep bool, v *viewTensor) bool {
	m := p.multi
	v.rank = len(m.gsize)
	var inner [MaxRank]int // the innermost dim met so far of each group
	for g := range v.rank {
		v.shape[g] = int(m.gsize[g])
		if keep && m.gred[g] {
			v.shape[g] = 1
		}
		v.strides[g], inner[g] = 0, -1
	}
	reducedForm := keep && len(t.Shape) != len(p.shape)
	td := 0 // t's dim of input dim d in the reduced form
	for d, sz := range p.shape {
		own := d
		if reducedForm {
			if m.red[d] {
				continue
			}
			own = td
			td++
		}
		g := m.group[d]
		if g < 0 || keep && m.red[d] {
			continue
		}
		st := int(t.strideOf(own))
		if inner[g] >= 0 && v.strides[g] != st*sz {
			return false
		}
		v.strides[g], inner[g] = st, d
	}
	return true
}

// innerArgs sets in to a's operands viewed on the coalesced shape (v
// holds their shapes and strides), for the single-axis plan.
func (p *ReduceBackward) innerArgs(a, in *ReduceArgs, v *[4]viewTensor) {
	*in = ReduceArgs{Workspace: a.Workspace}
	p.view(&a.DY, true, &v[0])
	p.view(&a.DX, false, &v[1])
	in.DY, in.DX = v[0].tensor(&a.DY), v[1].tensor(&a.DX)
	if p.desc.Op.needsSaved() {
		p.view(&a.X, false, &v[2])
		p.view(&a.Y, true, &v[3])
		in.X, in.Y = v[2].tensor(&a.X), v[3].tensor(&a.Y)
	}
}

// multiViews holds the operands of one Run of the single path seen on the
// coalesced shape.
type multiViews struct {
	v  [4]viewTensor
	in ReduceArgs
}

var multiViewPool = sync.Pool{New: func() any { return new(multiViews) }}

// runInner is Run for a multi-axis plan that takes the single-axis plan
// on the coalesced view (after Check).
func (p *ReduceBackward) runInner(s *driver.Stream, a *ReduceArgs) error {
	// The views come from a pool: on the stack they would escape through
	// the inner Run, an allocation per Run.
	mv := multiViewPool.Get().(*multiViews)
	p.innerArgs(a, &mv.in, &mv.v)
	err := p.multi.inner.Run(s, &mv.in)
	mv.in = ReduceArgs{}
	multiViewPool.Put(mv)
	return err
}
