package ops

// The short mapping (gen/reduce_short.cuh, reduce_short): a single reduced
// axis of at most redShortMaxK positions over many slices, on dense
// operands. The row and col mappings give each slice a group of threads
// whose statistics are combined across lanes, most of them idle or
// exchanging partials when a slice is a handful of elements; here one
// thread holds a whole slice's statistics in registers. Forms, by where the axis is:
//
//   - inner, packed (the axis is x's innermost dim that is not 1: x seen
//     as [S, k], f32, f16 and bf16 and most k: innerPacked in
//     reduce_inner.go): a thread owns whole 16-byte packs of x and dx and
//     the whole slices they hold, with no shared memory;
//   - inner, staged (the other innermost axes): a block copies a chunk of
//     consecutive slices (16 KiB of x, 32 KiB of f64) into shared memory
//     with 16-byte loads, a thread reduces one slice at a time there and
//     writes its dx over its x, and the block stores the chunk with
//     16-byte stores;
//   - outer (x seen as [O, k, I], I > 1 a multiple of shortVec): a thread
//     owns a vector of adjacent slices (16 bytes, 8 of the 16-bit dtypes)
//     and walks its k rows.
//
// The statistics accumulate in position order in opmath and each op's math
// is reduce_ops.cuh's, as on every other path. Run takes it where every
// operand it reads or writes is contiguous and x and dx are 16-byte
// aligned (shortDense); other operands keep the other paths. A plan over
// several axes whose reduced dims coalesce into one group takes it through
// its single-axis plan on the coalesced view.
const (
	// redShortMinSlices is the fewest slices for which the policy takes
	// the mapping by default: fewer slices leave its one thread per slice
	// (or vector) too few threads, where the other mappings put several on
	// each.
	redShortMinSlices = 1 << 16
)

// reduceShortEnv, read when a plan is made, overrides the policy: "never"
// keeps plans off the short mapping, "always" takes it wherever the shape
// allows it (any number of slices, so that tests reach it with small
// tensors). "staged" keeps the default policy but gives every innermost
// axis the staged inner form (the choices before the packed form:
// bf16 and f16 staged, f32 and f64 off the mapping), "staged-always" is
// "always" with the staged inner form. It is a kernel developer's knob;
// users leave it unset.
const reduceShortEnv = "BARACUDA_REDUCE_SHORT"

// redShortAny reports whether mode takes the mapping wherever the shape
// allows it; redShortStaged whether it keeps innermost axes on the staged
// inner form.
func redShortAny(mode string) bool    { return mode == "always" || mode == "staged-always" }
func redShortStaged(mode string) bool { return mode == "staged" || mode == "staged-always" }

// The short mapping's forms (reduceShort.form).
const (
	redShortNone  = 0
	redShortInner = 1 // the kernel's RED_ROW
	redShortOuter = 2 // the kernel's RED_COL
	// redShortPacked is the packed inner form, its own kernel (the
	// "inner" variant, reduce_inner.go).
	redShortPacked = 3
)

// reduceShort is the short mapping's cut of x seen as [O, k, I]: the form,
// and for the outer form the vectors (O*I/N, one per thread, N =
// shortVec), I/N and its bc_div constants.
type reduceShort struct {
	form  int
	packs int64
	ip    int64
	magic uint64
	shift int32
}

// shortGeometry is the short mapping's cut of a shape reduced along axis,
// with elements of size bytes, under the policy mode (reduceShortEnv's
// values, "" for the default): the inner form where the axis is the
// innermost dim that is not 1 (packed where innerPacked takes k and the
// mode is not a staged one), the outer form where the inner extent is a
// multiple of a vector (shortVec); none where k is 0 or longer than
// redShortMaxK, or (but for redShortAny) where the slices are fewer than
// redShortMinSlices.
func shortGeometry(shape []int, axis, size int, mode string) reduceShort {
	if mode == "never" {
		return reduceShort{}
	}
	k, inner := int64(shape[axis]), numel(shape[axis+1:])
	total := numel(shape)
	if k < 1 || k > redShortMaxK || total == 0 {
		return reduceShort{}
	}
	if !redShortAny(mode) && total/k < redShortMinSlices {
		return reduceShort{}
	}
	n := shortVec(size)
	switch {
	case inner == 1 && !redShortStaged(mode) && innerPacked(k, size):
		return reduceShort{form: redShortPacked}
	case inner == 1:
		return reduceShort{form: redShortInner}
	case inner%n == 0:
		g := reduceShort{form: redShortOuter, packs: total / k / n, ip: inner / n}
		g.magic, g.shift = divMagic(g.ip)
		return g
	}
	return reduceShort{}
}

// shortVec is the outer form's slices per thread (RedShortVec in
// gen/reduce_short.cuh): a 16-byte vector, but 8 bytes (4 slices) of the
// 16-bit dtypes.
func shortVec(size int) int64 {
	if size == 2 {
		return 4
	}
	return int64(16 / size)
}

// shortPays reports whether the default policy takes a form of the short
// mapping for op on elements of size bytes: where it measured faster than
// the row, col and flat mappings it replaces (docs/variants.md). The
// packed inner form streams like the elementwise kernels, for every op
// (each of its loads and stores a coalesced 16-byte access, none waiting
// for a barrier). The staged inner form pays for the 16-bit dtypes only:
// the row and flat mappings give f32 slices of four along the innermost
// axis more than a thread per slice through shared memory does. The
// outer form pays for every op except the 16-bit sum, mean and norm2,
// which the col mapping streams faster.
func shortPays(op ReduceOp, size int, form int) bool {
	switch form {
	case redShortPacked:
		return true
	case redShortInner:
		return size == 2
	}
	return size != 2 || op != ReduceSum && op != ReduceMean && op != ReduceNorm2
}

// planShort sets the plan's short mapping (see shortGeometry and, by
// default, shortPays).
func (p *ReduceBackward) planShort() error {
	mode := knob(reduceShortEnv)
	g := shortGeometry(p.shape, p.axis, p.desc.DType.Size(), mode)
	if g.form == redShortNone || !redShortAny(mode) && !shortPays(p.desc.Op, p.desc.DType.Size(), g.form) {
		return nil
	}
	variant := "short"
	if g.form == redShortPacked {
		variant = "inner"
	}
	name, ok := lookupKernel("reduce", p.desc.Op.String(), p.desc.DType, variant)
	if !ok {
		return p.id.errorf(ErrUnsupported, "no %s kernel for %s %s", variant, p.desc.Op, p.desc.DType)
	}
	p.shortK, p.short = newKernelRef("reduce", name), g
	return nil
}

// shortDense reports whether the operands allow the short kernel: every
// one it reads or writes contiguous (dy and y in either shape), x and dx
// 16-byte aligned.
func (p *ReduceBackward) shortDense(a *ReduceArgs) bool {
	ts := [4]*Tensor{&a.DY, &a.DX, &a.X, &a.Y}
	n := 2
	if p.desc.Op.needsSaved() {
		n = 4
	}
	for _, t := range ts[:n] {
		if !t.isContiguous() {
			return false
		}
	}
	return a.DX.Buf.Addr%16 == 0 && (n == 2 || a.X.Buf.Addr%16 == 0)
}

// shortChunk is the inner form's slices per block step (red_short_inner):
// RED_BLOCK times as many slices per thread as fit RedShortCap's elements
// (16 KiB, or RED_BLOCK*16 elements where that is more).
func shortChunk(k int64, size int) int64 {
	capElems := max(16384, redBlock*redShortMaxK*int64(size)) / int64(size)
	return redBlock * (capElems / (redBlock * k))
}

// shortLayout is the short kernel's layout and grid: the packed inner
// form a block per block step of units (innerGrid), the staged inner form
// walks the slices a chunk (shortChunk) a block at a time, the outer form
// the vectors a thread each.
func (p *ReduceBackward) shortLayout(L *reduceLayout) (grid int64) {
	g := &p.short
	*L = reduceLayout{k: p.k, slices: p.slices, chunk: p.k, nchunks: 1, scale: p.scale, group: 1, cvec: 1}
	switch g.form {
	case redShortPacked:
		L.mapping = redRow
		return innerGrid(p.slices, p.k, p.desc.DType.Size())
	case redShortInner:
		L.mapping = redRow
		return min(ceilDiv(p.slices, shortChunk(p.k, p.desc.DType.Size())), maxGridX)
	}
	L.mapping = redCol
	L.flat.packs, L.flat.ip = g.packs, g.ip
	L.flat.magic[0], L.flat.shift[0] = g.magic, g.shift
	return min(ceilDiv(g.packs, redBlock), maxGridX)
}
