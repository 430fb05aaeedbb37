package ops

import (
	"github.com/baracuda-go/baracuda/dtype"
)

// How a ReduceBackward plan cuts its work, all fixed when the plan is made:
// the row, col, one, cluster, strip and flat geometries, the policies that
// choose between them (with their environment overrides) and the sizes of
// the workspace they need. The plan is in reduce.go; Run, the kernel layout
// and the launches in reduce_launch.go.

// Geometry. A slice (the k elements reduced into one output) is cut into
// chunks; a (slice, chunk) pair is a tile. The row mapping (the axis is x's
// fastest dim) gives a tile G threads stepping along the axis with 16-byte
// packs; the col mapping (an outer axis) gives a block 256/H threads across
// slices, each taking V adjacent slices (one access: V = 4 of f32, 8 of
// f16/bf16 (4 for ops with statistics), 2 of f64; else V/2 where that is at
// least 2; else 1, by what x and dx allow), by H threads along the axis. The
// chunking depends on the shape and dtype only, so the workspace size is
// known at plan time and results are the same bits on every GPU.
// redBlock, redCachePacks and redCachePacksF64 are generated (ops/zconsts.go).
const (
	// redTargetThreads is the parallelism a launch aims for (about the
	// resident threads of a large GPU); slices are split into chunks only
	// when they give fewer than half of it.
	redTargetThreads = 1 << 18
	// Split chunks keep at least this much work per thread: packs (row) or
	// positions (col).
	redMinRowPacks = 4
	redMinColRows  = 16
	// redMaxElems bounds numel so that offset arithmetic cannot overflow.
	redMaxElems = int64(1) << 60
)

const (
	redRow = 0
	redCol = 1

	redPhaseApply = 0
	redPhaseTotal = 1
	redPhaseFlat  = 2
)

// The flat path of the provisional ops. Max, Min and Prod write a
// provisional dx (their common case: one element equal to y; no zero)
// that is an elementwise map of x with dy and y broadcast, as the ops
// without statistics; where the operands are dense and their slices would
// be split, Run takes the flat kernel for it, which also counts per slice
// (integer atomics into the workspace, zeroed by a memset first) the
// elements that may make it wrong, records the first flatSlots of them and
// writes a mask of the elements a wide mend rewrites; then the fix kernel
// (redPhaseFlat) mends the slices where it is wrong: at the
// recorded elements alone, across the whole grid from the mask (many ties;
// prod with two or more zeros; with few slices, max and min with no
// element equal to y), or by reading the slice again: a warp a slice
// where the slices are many, the whole grid a slice where they are at most
// redFlatLocal (prod with one zero, red_flat_regrid) (gen/reduce_flat_fix.cuh,
// red_flat_fix). Against the stats kernel and red_total
// (or the cluster kernel), which read x as strided tiles and combine
// partials, the flat kernel streams x at the binary kernels' speed on an
// H100. Slices that are not split keep the row and col kernels, which read
// x once in one launch.
const reduceFlatEnv = "BARACUDA_REDUCE_FLAT"

// flatSlots is RedMaxMin::flat_slots (0 for Prod, which rereads a slice
// with one zero anyway: it needs the product of the others).
func flatSlots(op ReduceOp) int64 {
	if op == ReduceMax || op == ReduceMin {
		return 4
	}
	return 0
}

// redFlatLocal (RED_FLAT_LOCAL, generated into ops/zconsts.go and
// gen/zconsts.cuh from gen/spec_consts.go): up to this many slices the flat
// kernel's blocks count in shared memory.

// flatCountsSize is the flat path's counts: a 4-byte count per slice, then
// the wide flag, padded to 16 bytes (red_flat_counts_size).
func flatCountsSize(slices int64) int64 {
	return (4*(slices+1) + 15) &^ 15
}

// flatFixSize is the workspace of the flat path for slices of k
// elements: the counts, then flatSlots 8-byte indices per slice, then at a
// 16-byte boundary for Max and Min the mend mask: one bit per element of x
// in 32-bit words, n words per 32 packs of n elements (red_flat_bits); for
// Prod with at most redFlatLocal slices, the fix kernel's grid-wide redo
// of a slice with one zero (red_flat_regrid_ws): a 4-byte counter and an
// 8-byte position per slice, each part 16-byte aligned, then a partial
// per redRegridUnit positions of every slice.
func flatFixSize(op ReduceOp, dt dtype.DType, slices, packs, k int64) int64 {
	size := (flatCountsSize(slices) + 8*flatSlots(op)*slices + 15) &^ 15
	if op == ReduceMax || op == ReduceMin {
		size += 4 * int64(16/dt.Size()) * ceilDiv(packs, 32)
	}
	if op == ReduceProd && slices <= redFlatLocal {
		size += (4*slices+15)&^15 + (8*slices+15)&^15 + slices*ceilDiv(k, redRegridUnit)*redAccSize(dt)
	}
	return size
}

// The one-pass col split: Var and Std, whose split col slices otherwise
// read x twice (stats, then apply), can run one launch instead, in which
// each tile keeps its part of x in shared memory (at most redOneSmem
// bytes: chunk rows of the block's slices) until its slice block's
// statistics are complete (gen/reduce_col.cuh, red_one_totals). Its tiles wait
// for one another, which costs more than the second read of x where x fits
// in L2 and less where it does not, so Run takes it only for an x larger
// than the L2 cache. Max, Min and Prod read x once anyway (their
// provisional dx), and one launch is slower for them. All nchunks tiles of
// a slice block must fit on the GPU at once: the plan allows at most
// redOneMaxChunks chunks, and Run falls back to the two passes where fewer
// than 2*nchunks blocks fit, or where the device allows a block less
// shared memory than a tile needs (64 KiB on compute capability 7.5).
const (
	redOneSmem      = maxDynSmem
	redOneMaxChunks = 64
)

// reduceOneEnv, read when a plan is made, overrides the L2 rule above: with
// "always" a plan takes the one-pass launch wherever it can (so that tests
// reach it with small tensors), with "never" it never does. It is a kernel
// developer's knob; users leave it unset.
const reduceOneEnv = "BARACUDA_REDUCE_ONE"

// The strip kernel (gen/reduce_kernels.cuh, reduce_strip): an op with statistics
// along an outer axis on dense operands, one block per strip of whole
// slices, which it holds in shared memory (redStripHead bytes of
// statistics and contexts, then vr 16-byte packs of each of the k rows): x
// is read once, and no block waits for another, where var/std's two passes
// read x twice and the one kernel's tiles wait for the rest of their slice
// block. A strip takes 64 bytes of each row where that fits (vr 4), else
// 32 (vr 2); an x whose inner extent is no multiple of the strip's slices,
// or whose strip would be larger than redStripSmem, keeps the other paths,
// as do strided or unaligned operands and a device whose blocks cannot
// have the strip's shared memory.
//
// On compute capability 9.0 and up Run takes its clustered form
// (reduce_stripc, its own build): each strip's rows cut between the
// redStripCluster blocks of a thread block cluster, which combine their
// partial statistics through distributed shared memory, so that a strip
// of 64-byte rows fits where a whole one would not (4096x4096 along axis
// 0: 2048 rows of 64 bytes, 132 KiB with the head, per block).
//
// On an H100 the clustered form is faster than the two passes for var
// and std in f32 and bf16; the one-block form (32-byte rows) is faster
// for bf16 only. Blocks of 32-byte rows sharing an SM (two or four to a
// cluster), or four blocks of 64-byte rows to a cluster, are slower than
// two blocks of 64-byte rows. So by default Run takes it for var and std,
// and for max and min (stripDefault, below): the
// clustered form wherever the device has it, the one-block form elsewhere
// for the 16-bit dtypes only, where the col slices would be split and the
// blocks are at least as many as the GPU's SMs.
// redStripHead, the bytes before the packs, is generated (ops/zconsts.go).
const redStripSmem = 227 << 10 // a block's most shared memory on an H100

// redStripCluster (ops/zconsts.go, RED_STRIP_CLUSTER in gen/zconsts.cuh, both
// generated from gen/spec_consts.go) is the clustered strip kernel's blocks
// per cluster; TestReduceClusterSizesAgree checks it, and redCluster,
// against the embedded PTX.

// stripOp reports whether op is one that the strip kernel was first made
// for (var and std; the seg path's clustered kernel too).
func stripOp(op ReduceOp) bool { return op == ReduceVar || op == ReduceStd }

// Max and min take the strip kernel by default too (stripDefault), before
// their flat path: the strip counts each slice's ties in the pass that
// reads x and writes dx from shared memory once it knows them, so ties
// cost nothing, where the flat path pays for them (an integer atomic per
// tied element of many slices, and a second walk of the grid to mend
// them). On the H100, 4096x4096 along axis 0 (docs/benchmarks.md, "Shapes
// and data"): max f32 takes 67 us on the strip whatever the data, on the
// flat path 58 us on normal data and 518 us with a tenth of every slice at
// its maximum. Prod keeps the flat path: the strip's product is slower on
// normal data (80 us against 57 us in f32, 44 against 37 in bf16) and its
// zeros cost the flat path less than ties (at most 3x).
// reduceStripTiesEnv "never" keeps them on the flat path by default (the
// strip still under reduceStripEnv "auto" or "always"). It is a kernel
// developer's knob; users leave it unset.
const reduceStripTiesEnv = "BARACUDA_REDUCE_STRIP_TIES"

// stripDefault reports whether Run takes the strip kernel by default for
// op (see above).
func stripDefault(op ReduceOp) bool {
	return stripOp(op) || (op == ReduceMax || op == ReduceMin) && knob(reduceStripTiesEnv) != "never"
}

// reduceStripEnv, read when a plan is made, overrides the choice above:
// "never" keeps plans off the strip kernel, "auto" takes it for every op
// with statistics under the default's conditions, "always" wherever the
// shape and operands allow it (so that tests reach it with small
// tensors). It is a kernel developer's knob; users leave it unset.
const reduceStripEnv = "BARACUDA_REDUCE_STRIP"

// reduceStripClusterEnv, read when a plan is made: "never" keeps the strip
// kernel in its one-block form on every device (for f32 and f64 too). It
// is a kernel developer's knob; users leave it unset.
const reduceStripClusterEnv = "BARACUDA_REDUCE_STRIPC"

// reduceStrip is the strip kernel's cut of x seen as [O, k, I]: vr packs
// of each row per strip (0: the shape does not allow the kernel), w = vr*N
// slices per strip, strips = O*I/w blocks; magic and shift divide by I/w.
type reduceStrip struct {
	vr     int32
	shift  int32
	w      int64
	strips int64
	inner  int64
	chunk  int64 // rows per block: k, or ceil(k/redStripCluster) for the clustered kernel
	magic  uint64
	smem   int64 // dynamic shared memory per block, bytes
}

// stripGeometry is the strip kernel's cut for x of shape reduced along
// axis with elements of size bytes (see reduceStrip), with each strip's
// rows cut between c blocks (1, or redStripCluster for the clustered
// kernel).
func stripGeometry(shape []int, axis int, size int, c int64) reduceStrip {
	k, inner := int64(shape[axis]), numel(shape[axis+1:])
	n := int64(16 / size)
	chunk := ceilDiv(k, c)
	for _, vr := range [2]int64{redStripVMax, redStripVMax / 2} {
		w := vr * n
		smem := redStripHead + chunk*vr*16
		if inner%w != 0 || smem > redStripSmem {
			continue
		}
		strips := numel(shape[:axis]) * (inner / w)
		if strips*c > maxGridX {
			continue
		}
		g := reduceStrip{vr: int32(vr), w: w, strips: strips, inner: inner, chunk: chunk, smem: smem}
		g.magic, g.shift = divMagic(inner / w)
		return g
	}
	return reduceStrip{}
}

// The cluster kernel (compute capability 9.0 and up): where the col
// mapping splits the slices of an op with statistics, the redCluster
// chunks of a slice block can run as the blocks of one thread block
// cluster, which combine their partial statistics through distributed
// shared memory (gen/reduce_col.cuh, red_cluster_totals): one launch, no
// workspace traffic, and a tile waits only for the other chunk of its
// slice block, which the cluster runs at the same time. A block takes
// redClusterH threads along the axis (narrow slice blocks, so that there
// are many). On an H100 it is faster than the two passes for prod in f32
// and bf16 and for max and min in f32, slower for max and min in bf16 and
// no faster for var and std; 2 blocks per cluster are faster than 4 or 8.
// So Run takes it only for clusterOps (the 16-bit dtypes share bf16's
// kernel shape; f64 keeps the two passes) and only
// where its grid is at least a quarter of the GPU's resident blocks (one
// block per tile, and only redCluster chunks per slice: few slices are
// better split by the two passes). Dense operands of Max, Min and Prod
// take the flat path before it (see reduceFlatEnv). With fewer
// chunks than the two passes' (up to 64) the sums of prod round in
// another order, so its bits differ from a GPU without clusters (each
// GPU stays bit-stable run to run).
// redCluster and redClusterH are generated (ops/zconsts.go,
// RED_CLUSTER_BLOCKS and RED_CLUSTER_HMAX).

// clusterOp reports whether Run may take the cluster kernel for op and dt
// (see above).
func clusterOp(op ReduceOp, dt dtype.DType) bool {
	switch op {
	case ReduceProd:
		return dt != dtype.F64
	case ReduceMax, ReduceMin:
		return dt == dtype.F32
	}
	return false
}

// reduceClusterEnv, read when a plan is made, overrides the choice above:
// "never" keeps plans off the cluster kernel, "always" takes it for every
// op with statistics whatever the grid (so that tests reach it with small
// tensors). It is a kernel developer's knob; users leave it unset.
const reduceClusterEnv = "BARACUDA_REDUCE_CLUSTER"

// clusterGeometry is the cluster kernel's cut of split col slices:
// redCluster chunks, redClusterH threads along the axis; tiles assumes v
// slices per thread, as colGeometry's. Zero where its grid would exceed
// a launch's.
func clusterGeometry(slices, k int64, v int64) reduceGeom {
	if ceilDiv(slices, redBlock/redClusterH)*redCluster > maxGridX {
		return reduceGeom{}
	}
	return reduceGeom{group: redClusterH, chunk: ceilDiv(k, redCluster), nchunks: redCluster,
		tiles: ceilDiv(slices, redBlock/redClusterH*v) * redCluster}
}

// reduceGeom is one mapping's cut of the slices.
type reduceGeom struct {
	group   int32 // row: threads per tile G; col: threads along the axis H
	chunk   int64 // positions per chunk
	nchunks int64
	tiles   int64
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// pow2Clamp is the smallest power of two >= v, clamped to [1, hi].
func pow2Clamp(v int64, hi int32) int32 {
	p := int32(1)
	for p < hi && int64(p) < v {
		p <<= 1
	}
	return p
}

// rowGeometry: G threads per slice, enough for each to hold at most
// RedCache's packs; long slices over few rows are split so that the launch
// reaches redTargetThreads.
func rowGeometry(slices, k int64, size int) reduceGeom {
	n := int64(16 / size)
	units := ceilDiv(k, n)
	cp := int64(redCachePacks) // RedCache: a row of up to G*cp packs is read once
	if size == 8 {
		cp = redCachePacksF64
	}
	g := pow2Clamp(ceilDiv(units, cp), redBlock)
	geo := reduceGeom{group: g, chunk: k, nchunks: 1, tiles: slices}
	if g == redBlock && slices < redTargetThreads/(2*redBlock) {
		c := ceilDiv(redTargetThreads, slices*redBlock)
		if m := units / (redBlock * redMinRowPacks); c > m {
			c = m
		}
		if c > 1 {
			geo.chunk = ceilDiv(units, c) * n
			geo.nchunks = ceilDiv(k, geo.chunk)
			geo.tiles = slices * geo.nchunks
		}
	}
	return geo
}

// colGeometry: H = min(8, k) threads along the axis, 256/H threads across
// slices taking v slices each; split along the axis when the slice blocks
// are too few. tiles assumes v slices per thread (see colVec).
func colGeometry(slices, k int64, v int64) reduceGeom {
	h := pow2Clamp(k, 8)
	w := int64(redBlock/h) * v
	blocks := ceilDiv(slices, w)
	geo := reduceGeom{group: h, chunk: k, nchunks: 1, tiles: blocks}
	if blocks < redTargetThreads/(2*redBlock) {
		c := ceilDiv(redTargetThreads, blocks*redBlock)
		if m := k / (int64(h) * redMinColRows); c > m {
			c = m
		}
		if c > 1 {
			geo.chunk = ceilDiv(k, c)
			geo.nchunks = ceilDiv(k, geo.chunk)
			geo.tiles = blocks * geo.nchunks
		}
	}
	return geo
}

// oneGeometry fits a split col geometry to the one-pass launch: as few
// chunks as redOneSmem allows, at least 2 (rowBytes: a row of a tile, W
// threads taking v slices), and at most redOneMaxChunks of them. Fewer,
// longer chunks are faster: each tile waits for fewer others and its
// wait is spread over more rows.
func oneGeometry(geo reduceGeom, k, rowBytes int64) (reduceGeom, bool) {
	rows := redOneSmem / rowBytes
	blocks := geo.tiles / geo.nchunks
	geo.nchunks = max(ceilDiv(k, rows), 2)
	geo.chunk = ceilDiv(k, geo.nchunks)
	geo.nchunks = ceilDiv(k, geo.chunk)
	geo.tiles = blocks * geo.nchunks
	return geo, geo.nchunks <= redOneMaxChunks
}

// flatGeometry is the flat kernel's layout for x of shape, reduced along
// axis: a 16-byte pack of N elements must lie in one slice (I == 1, k a
// multiple of N), in N adjacent ones (I a multiple of N), or, with rows,
// hold N/I whole rows of the I slices of one outer index (I divides N and
// k*I is a multiple of N: ip = -I; element e is in slice e mod I); else
// packs is 0.
func flatGeometry(shape []int, axis int, elems int64, size int, rows bool) reduceFlat {
	n := int64(16 / size)
	k, inner := int64(shape[axis]), numel(shape[axis+1:])
	var f reduceFlat
	switch {
	case inner == 1 && k%n == 0:
		f.magic[0], f.shift[0] = divMagic(k / n)
	case inner > 1 && inner%n == 0:
		f.ip = inner / n
		f.magic[0], f.shift[0] = divMagic(k * f.ip)
		f.magic[1], f.shift[1] = divMagic(f.ip)
	case rows && inner > 1 && n%inner == 0 && (k*inner)%n == 0:
		f.ip = -inner
		f.magic[0], f.shift[0] = divMagic(k * inner / n)
	default:
		return f
	}
	f.packs = elems / n
	return f
}

// reduceFlatRowsEnv, read when a plan is made: "never" keeps the flat
// kernel off the layout whose packs hold rows of several slices (an inner
// extent I of 2 or 4 that divides a pack's N elements, fip < 0), so that
// those shapes take the row and col kernels as before. It is a kernel
// developer's knob; users leave it unset.
const reduceFlatRowsEnv = "BARACUDA_REDUCE_FLAT_ROWS"

func flatRowsOn() bool { return knob(reduceFlatRowsEnv) != "never" }

// planStrip sets up the strip kernels the plan may take (see stripOp and
// reduceStripEnv) where the shape can be cut into strips: the clustered
// form, and the one-block form for the 16-bit dtypes (for every dtype
// under "auto", "always" or reduceStripClusterEnv=never).
func (p *ReduceBackward) planStrip() error {
	dt := p.desc.DType
	one := dt.Size() == 2 // the one-block form where the clustered one is missing
	switch knob(reduceStripEnv) {
	case "never":
		return nil
	case "always":
		p.stripAny, one = true, true
	case "auto":
		one = true
	default:
		if !stripDefault(p.desc.Op) {
			return nil
		}
	}
	clustered := knob(reduceStripClusterEnv) != "never"
	if !clustered {
		one = true
	}
	var err error
	if g := stripGeometry(p.shape, p.axis, dt.Size(), 1); one && g.vr > 0 {
		if p.stripK, err = p.stripRef("strip", g); err != nil {
			return err
		}
		p.strip = g
	}
	if g := stripGeometry(p.shape, p.axis, dt.Size(), redStripCluster); clustered && g.vr > 0 {
		if p.stripcK, err = p.stripRef("stripc", g); err != nil {
			return err
		}
		p.stripc = g
	}
	return nil
}

// stripRef is the kernel of variant ("strip" or "stripc") for the plan's
// op and dtype, launched with g's shared memory.
func (p *ReduceBackward) stripRef(variant string, g reduceStrip) (*kernelRef, error) {
	name, ok := lookupKernel("reduce", p.desc.Op.String(), p.desc.DType, variant)
	if !ok {
		return nil, p.id.errorf(ErrUnsupported, "no %s kernel for %s %s", variant, p.desc.Op, p.desc.DType)
	}
	k := newKernelRef("reduce", name)
	k.smem, k.smemCap = int(g.smem), redStripSmem
	return k, nil
}

// colVec is the adjacent slices per col thread where x and dx are
// contiguous across them (redColVecByOp, generated from the spec with the
// kernels' RedColVec).
func colVec(dt dtype.DType, op ReduceOp) int64 {
	return redColVecByOp[op.String()][dt]
}

// redAccSize is the size of one workspace entry (RedAcc<opmath>).
func redAccSize(dt dtype.DType) int64 {
	if dt == dtype.F64 {
		return 16
	}
	return 8
}
