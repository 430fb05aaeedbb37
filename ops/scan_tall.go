package ops

import "github.com/baracuda-go/baracuda/dtype"

// The tall mapping (gen/scan_tall.cuh, scan_backward_tall): a scan along an
// outer axis over few slices whose inner extent C (the product of the dims
// after the axis) is small, e.g. [4194304, 4] along axis 0, or [A, n, C]
// along axis 1 with few batches A. The col mapping gives such shapes a
// few of a warp's 32 lanes; the tall kernel moves tiles of consecutive
// rows, contiguous chunks of rows*C elements, through shared memory with
// coalesced loads and scans each column there, wc warps to a column
// (tallPlan).

// scanTallEnv, read when a plan is made, overrides where plans take the
// tall mapping: "never" keeps them off it, "always" takes it for every
// outer axis with an inner extent in 2..scanTallMaxC, however short the
// axis or many the slices. It is a kernel developer's knob (to time or
// test one mapping against the other); users leave it unset.
const scanTallEnv = "BARACUDA_SCAN_TALL"

const (
	// scanTallMaxC is the widest inner extent the tall mapping serves.
	scanTallMaxC = 16
	// scanTallMinN and scanTallMaxSlices bound the default policy: an axis
	// at least this long (below it the col mapping's few tiles are
	// cheap) over at most this many slices (from about two warps of
	// slices on the col mapping's lanes fill).
	scanTallMinN      = 4096
	scanTallMaxSlices = 64
	// scanTallSmem bounds a tile's dynamic shared memory (every operand
	// the op reads): with the kernel's few hundred static bytes, below the
	// 48 KiB a launch takes without an opt-in.
	scanTallSmem = 46 << 10
)

// tallItems is the most rows of a tall kernel's run (ScanItems::tall, from
// the spec's table with the kernels').
func tallItems(op ScanOp, dt dtype.DType) int64 {
	return scanItemsByOp[op.String()][dt][2]
}

// tallPitch is the shared memory distance P, in elements, between two
// runs of s elements of a tall tile (the kernel reads it from the layout's
// pitch). Lane l reads element l*P + o, so the 32 lanes reading one
// element each of 32 runs hit 32 banks where P in 32-bit words is odd: P
// odd for 4- and 8-byte types, P = 2 mod 4 for 16-bit types.
func tallPitch(s, size int64) int64 {
	if size == 2 {
		return ((s + 1) | 3) - 1
	}
	return s | 1
}

// tallPlan is the tall kernel's tile: wc warps per column (1, 2, 4 or 8)
// and runs of items rows, for an inner extent c. The tiles of a column
// chain one after another through the look-back, and the kernel's time
// follows their count (docs/variants.md, "tall"), so it takes the tile
// with the most rows (wc*32*items): of the warp counts that serve every
// column in at most scanTallMaxRounds rounds (SCAN_TALL_ROUNDS, generated
// from the spec), the one whose longest runs (at most tallItems) that fit
// the operands into scanTallSmem make the most rows, the fewer warps on a
// tie. ok is false where not even one row a run fits.
func tallPlan(op ScanOp, dt dtype.DType, c int64) (wc, items int64, ok bool) {
	for w := int64(1); w <= scanWarps; w *= 2 {
		if w > 1 && scanCeil(c, scanWarps/w) > scanTallMaxRounds {
			break
		}
		it := tallItems(op, dt)
		for it >= 1 && tallSmem(op, dt, w, it, c) > scanTallSmem {
			it--
		}
		if w*it > wc*items {
			wc, items, ok = w, it, true
		}
	}
	return wc, items, ok
}

// tallSmem is a tile's shared memory in bytes: every operand the op reads,
// wc*32 runs of items rows of c columns at tallPitch.
func tallSmem(op ScanOp, dt dtype.DType, wc, items, c int64) int64 {
	size := int64(dt.Size())
	return op.inputs() * 32 * wc * tallPitch(items*c, size) * size
}

// tallShape splits a shape at the axis: outer (the dims before it) and
// inner (after it).
func tallShape(shape []int, axis int) (outer, inner int64) {
	return numel(shape[:axis]), numel(shape[axis+1:])
}

// tallWanted is the policy: whether a plan takes the tall mapping (env
// is scanTallEnv's value).
func tallWanted(shape []int, axis int, env string) bool {
	if env == "never" {
		return false
	}
	outer, inner := tallShape(shape, axis)
	if inner < 2 || inner > scanTallMaxC {
		return false
	}
	if env == "always" {
		return true
	}
	return int64(shape[axis]) >= scanTallMinN && outer*inner <= scanTallMaxSlices
}

// newScanTallGeom is the tall kernel's geometry (tallPlan's tile): a
// look-back unit per batch and round (8/wc columns a round) for the f64
// flags, a block per tile and batch. The workspace and fill blocks are the
// row mapping's (g.tall takes its forward-state passes). ok is false where
// no tile fits.
func newScanTallGeom(op ScanOp, dt dtype.DType, n, outer, inner int64) (g scanGeom, ok bool) {
	wc, items, ok := tallPlan(op, dt, inner)
	if !ok {
		return g, false
	}
	g = scanGeom{tall: true, n: n, nslices: outer * inner, split: int32(wc), items: int32(items),
		pitch: int32(tallPitch(items*inner, int64(dt.Size())))}
	g.chunks = scanCeil(n, wc*32*items)
	groups := scanWarps / wc
	g.units = outer * scanCeil(inner, groups)
	g.grid = g.chunks * outer
	g.smem = scanAlign16(tallSmem(op, dt, wc, items, inner))
	g.chunked(op, dt)
	return g, true
}

// tallLayout reports whether the tall kernel can serve the operands of L
// (the plan's shape split into outer*inner slices): the slice dims merge
// into [outer, inner] or [inner], every operand the op reads and dx has
// unit stride across the inner dims and stride inner along the axis (so
// a tile is one contiguous chunk), whatever the batch stride; vec says
// whether every tile starts 16-byte aligned (the bases, and the batch
// strides in bytes).
func tallLayout(a *ScanArgs, L *scanLayout, op ScanOp, size, outer, inner int64) (vec, ok bool) {
	r := int(L.srank)
	switch {
	case r == 1 && outer == 1 && L.sdim[0] == inner:
	case r == 2 && L.sdim[0] == outer && L.sdim[1] == inner:
	default:
		return false, false
	}
	needX, needY := op.Saved()
	used := [4]bool{true, needX, needY, true}
	ts := [4]*Tensor{&a.DY, &a.X, &a.Y, &a.DX}
	vec = true
	for t := range ts {
		if !used[t] {
			continue
		}
		if L.sstride[t][r-1] != 1 || L.astride[t] != inner {
			return false, false
		}
		if ts[t].Buf.Addr%16 != 0 || (r == 2 && L.sstride[t][0]*size%16 != 0) {
			vec = false
		}
	}
	return vec, true
}

// newTall sets the plan's tall kernel and geometry where the policy
// takes the tall mapping (numel > 0).
func (p *ScanBackward) newTall() {
	if !tallWanted(p.shape, p.axis, knob(scanTallEnv)) {
		return
	}
	name, ok := lookupKernel("scan", p.desc.Op.String(), p.desc.DType, "tall")
	if !ok {
		return
	}
	outer, inner := tallShape(p.shape, p.axis)
	g, ok := newScanTallGeom(p.desc.Op, p.desc.DType, int64(p.shape[p.axis]), outer, inner)
	if !ok || g.grid > maxGridX {
		return
	}
	p.tallG = &g
	p.tallK = newKernelRef("scan", name)
	p.tallK.smem = int(g.smem)
}
