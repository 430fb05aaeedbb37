package ops

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// ReduceOp is a single-axis reduction whose backward ReduceBackward
// computes. With g = dy broadcast along the reduced axis, N the axis length,
// x the saved input and y the saved output, the gradients are PyTorch's
// (docs/semantics.md, section 3):
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

// provisional reports whether the op's stats kernel writes dx for the
// common case (one maximum; no zero), so that on split slices the apply
// kernel's total launch finishes it and its dx launch is skipped
// (Op::provisional in gen/reduce_ops.cuh).
func (op ReduceOp) provisional() bool {
	return op == ReduceMax || op == ReduceMin || op == ReduceProd
}

// ReduceDesc describes a reduction backward over one axis.
type ReduceDesc struct {
	Op    ReduceOp
	DType dtype.DType
	// Shape is the forward input's shape (rank 1..8); x and dx have it. dy
	// and y have it either with the axis set to 1 (keepdim=True) or with
	// the axis removed (keepdim=False, PyTorch's default: torch.sum(x,
	// dim) drops dim); both forms name the same memory.
	Shape []int
	// Axis is the reduced axis, in -rank..rank-1; negative values count
	// from the end as in Python.
	Axis int
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
	stripK   *kernelRef  // ops with statistics on dense operands, whole slices per block (nil where off)
	strip    reduceStrip // its cut
	stripAny bool        // ... wherever the shape and operands allow it
	stripcK  *kernelRef  // the strip kernel as thread block clusters (compute capability 9.0; nil where off)
	stripc   reduceStrip // its cut (rows per block in chunk)
}

// reduceLayout mirrors ReduceLayout in gen/reduce_ops.cuh; it travels by value
// as the kernels' last parameter.
type reduceLayout struct {
	k, slices, chunk, nchunks, tiles int64
	scale                            float64
	mapping, group, vec, reverse     int32
	srank, cvec                      int32
	phase, _                         int32 // apply kernel: redPhaseApply or redPhaseTotal
	sdim                             [MaxRank - 1]int64
	sstride                          [4][MaxRank - 1]int64 // x, y, dy, dx
	kstride                          [2]int64              // x, dx
	vstride                          [2]int64              // y, dy of the innermost slice dim
	flat                             reduceFlat
}

// reduceFlat is the flat kernel's part of the layout (reduce_flat in
// gen/reduce_flat.cuh): x seen as [O, k, I]; packs of 16 bytes.
type reduceFlat struct {
	packs int64     // of x and dx
	ip    int64     // I/N packs across the inner dims, 0 when I == 1
	magic [2]uint64 // divMagic by the packs of one outer index, by ip
	shift [2]int32
}

// Geometry. A slice (the k elements reduced into one output) is cut into
// chunks; a (slice, chunk) pair is a tile. The row mapping (the axis is x's
// fastest dim) gives a tile G threads stepping along the axis with 16-byte
// packs; the col mapping (an outer axis) gives a block 256/H threads across
// slices, each taking V adjacent slices (one access: V = 4 of f32, 8 of
// f16/bf16 (4 for ops with statistics), 2 of f64; else V/2 where that is at
// least 2; else 1, by what x and dx allow), by H threads along the axis. The
// chunking depends on the shape and dtype only, so the workspace size is
// known at plan time and results are the same bits on every GPU.
const (
	redBlock = 256
	// redCachePacks is RedCache in reduce_ops.cuh: 16-byte packs of x per row
	// thread kept in registers (2 for f64), so a row of up to G*4 packs is
	// read once.
	redCachePacks = 4
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
// writes a mask of the elements a wide mend rewrites; then one apply
// launch (redPhaseFlat) mends the slices where it is wrong: at the
// recorded elements alone, across the whole grid from the mask (many ties;
// prod with two or more zeros), or by reading the slice again
// (gen/reduce_flat.cuh, red_flat_fix). Against the stats kernel and red_total
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

// redFlatLocal mirrors RED_FLAT_LOCAL in gen/reduce_flat.cuh: up to this many
// slices the flat kernel's blocks count in shared memory.
const redFlatLocal = 64

// flatCountsSize is the flat path's counts: a 4-byte count per slice, then
// the wide flag, padded to 16 bytes (red_flat_counts_size).
func flatCountsSize(slices int64) int64 {
	return (4*(slices+1) + 15) &^ 15
}

// flatFixSize is the workspace of the flat path: the counts, then
// flatSlots 8-byte indices per slice, then for Max and Min, at a 16-byte
// boundary, the mend mask: one bit per element of x in 32-bit words, n
// words per 32 packs of n elements (red_flat_bits).
func flatFixSize(op ReduceOp, dt dtype.DType, slices, packs int64) int64 {
	size := (flatCountsSize(slices) + 8*flatSlots(op)*slices + 15) &^ 15
	if op == ReduceMax || op == ReduceMin {
		size += 4 * int64(16/dt.Size()) * ceilDiv(packs, 32)
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
// two blocks of 64-byte rows. Max, min and prod are faster on their flat
// path. So by default Run takes it for var and std only (stripOp): the
// clustered form wherever the device has it, the one-block form elsewhere
// for the 16-bit dtypes only, where the col slices would be split and the
// blocks are at least as many as the GPU's SMs.
const (
	redStripHead = 4096      // RED_STRIP_HEAD in reduce_kernels.cuh
	redStripSmem = 227 << 10 // a block's most shared memory on an H100
)

// redStripCluster is the clustered strip kernel's blocks per cluster
// (RED_STRIP_CLUSTER in reduce_kernels.cuh; TestReduceClusterSizesAgree checks it,
// and redCluster, against gen/reduce.cuh and the embedded PTX).
const redStripCluster = 2

// stripOp reports whether Run takes the strip kernel by default for op
// (see above).
func stripOp(op ReduceOp) bool { return op == ReduceVar || op == ReduceStd }

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
	for _, vr := range [2]int64{4, 2} {
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
const (
	redCluster  = 2
	redClusterH = 32
)

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
	cp := int64(redCachePacks)
	if size == 8 {
		cp = 2
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
// multiple of N) or in N adjacent ones (I a multiple of N); else packs is 0.
func flatGeometry(shape []int, axis int, elems int64, size int) reduceFlat {
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
	default:
		return f
	}
	f.packs = elems / n
	return f
}

// dense reports whether Run may take the flat kernel for a: the shape
// allows it and every operand it reads or writes is contiguous and 16-byte
// aligned.
func (p *ReduceBackward) dense(a *ReduceArgs) bool {
	if p.flat.packs == 0 {
		return false
	}
	ts := [4]*Tensor{&a.DY, &a.DX, &a.X, &a.Y}
	n := 2
	if p.desc.Op.needsSaved() {
		n = 4
	}
	for _, t := range ts[:n] {
		if t.Buf.Addr%16 != 0 || !t.isContiguous() {
			return false
		}
	}
	return true
}

// planStrip sets up the strip kernels the plan may take (see stripOp and
// reduceStripEnv) where the shape can be cut into strips: the clustered
// form, and the one-block form for the 16-bit dtypes (for every dtype
// under "auto", "always" or reduceStripClusterEnv=never).
func (p *ReduceBackward) planStrip() error {
	dt := p.desc.DType
	one := dt.Size() == 2 // the one-block form where the clustered one is missing
	switch os.Getenv(reduceStripEnv) {
	case "never":
		return nil
	case "always":
		p.stripAny, one = true, true
	case "auto":
		one = true
	default:
		if !stripOp(p.desc.Op) {
			return nil
		}
	}
	clustered := os.Getenv(reduceStripClusterEnv) != "never"
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

// stripOn tells whether Run may take either strip kernel (stripOp,
// reduceStripEnv).
func (p *ReduceBackward) stripOn() bool { return p.stripK != nil || p.stripcK != nil }

// oneBig reports whether x is larger than the L2 cache of ctx's device,
// where the one kernel pays (or reduceOneEnv takes it anyway).
func (p *ReduceBackward) oneBig(ctx *driver.Context) bool {
	l2, _ := ctx.Device().L2CacheSize()
	return p.oneAny || p.numel*int64(p.desc.DType.Size()) > int64(l2)
}

// stripMayFill reports whether a strip kernel's grid can pass Run's test
// on a device of sms multiprocessors (split col slices, and at least a
// block per SM), before either kernel is loaded.
func (p *ReduceBackward) stripMayFill(sms int) bool {
	if p.stripAny {
		return true
	}
	return p.col.nchunks > 1 && (p.stripcK != nil && p.stripc.strips*redStripCluster >= int64(sms) ||
		p.stripK != nil && p.strip.strips >= int64(sms))
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

// stripDense reports whether the operands allow the strip kernel: every
// one contiguous, x and dx 16-byte aligned.
func (p *ReduceBackward) stripDense(a *ReduceArgs) bool {
	for _, t := range [4]*Tensor{&a.X, &a.Y, &a.DY, &a.DX} {
		if !t.isContiguous() {
			return false
		}
	}
	return a.X.Buf.Addr%16 == 0 && a.DX.Buf.Addr%16 == 0
}

// colVec is RedColVec in reduce_col.cuh: adjacent slices per col thread in one
// 16-byte access, but 8 bytes (4 slices) for f16/bf16 ops with statistics.
func colVec(dt dtype.DType, op ReduceOp) int64 {
	if dt.Size() == 2 && op.hasStats() {
		return 4
	}
	return int64(16 / dt.Size())
}

// redAccSize is the size of one workspace entry (RedAcc<opmath>).
func redAccSize(dt dtype.DType) int64 {
	if dt == dtype.F64 {
		return 16
	}
	return 8
}

// NewReduceBackward validates desc and returns a plan for it. The error
// wraps ErrUnsupported for an unknown op, ErrDType for an invalid dtype,
// ErrRank or ErrShape for a bad shape (also for Max and Min over an empty
// axis, which PyTorch's forward rejects), ErrAxis for an axis out of range
// and ErrParam for a Correction that is not finite.
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
	k := int64(desc.Shape[axis])
	if k == 0 && (desc.Op == ReduceMax || desc.Op == ReduceMin) {
		return nil, id.errorf(ErrShape, "the reduced axis %d of shape %v has length 0: %s of an empty slice is undefined (PyTorch errors in the forward)",
			axis, desc.Shape, desc.Op)
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
	if !desc.Op.hasStats() || desc.Op.provisional() {
		refs = append(refs, kref{"flat", &p.flatK})
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
		p.row = rowGeometry(p.slices, k, desc.DType.Size())
		p.col = colGeometry(p.slices, k, colVec(desc.DType, desc.Op))
		if p.flatK != nil {
			p.flat = flatGeometry(desc.Shape, axis, numel, desc.DType.Size())
			if desc.Op.hasStats() && p.flat.packs > 0 && !p.flatSplit() {
				p.flat = reduceFlat{}
			}
			p.flatFx = desc.Op.hasStats() && p.flat.packs > 0
		}
		if desc.Op.hasStats() {
			acc := redAccSize(desc.DType)
			w := int64(redBlock / p.col.group)
			if cm := os.Getenv(reduceClusterEnv); p.col.nchunks > 1 && (cm == "always" || cm != "never" && clusterOp(desc.Op, desc.DType)) {
				p.clu = clusterGeometry(p.slices, k, colVec(desc.DType, desc.Op))
				p.cluAny = cm == "always"
			}
			if err := p.planStrip(); err != nil {
				return nil, err
			}
			mode := os.Getenv(reduceOneEnv)
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
				p.ws = max(p.ws, flatFixSize(desc.Op, desc.DType, p.slices, p.flat.packs))
			}
			if p.one {
				// Then the ticket and one arrival counter per slice
				// block (as many as with one slice per thread).
				p.oneOff = p.slices * (p.oneG.nchunks + 1) * acc
				p.ws = (max(p.ws, p.oneOff+4*(1+ceilDiv(p.slices, w))) + 15) &^ 15
			}
		}
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
	switch os.Getenv(reduceFlatEnv) {
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
// operands, for logs, diagnostics and tests. It depends only on the
// descriptor, not on the GPU. A Run may launch another kernel, or more than
// one, where its operands are strided or its device allows a faster one
// (by compute capability, multiprocessor count, shared memory and L2 cache
// size); Warm loads every kernel a Run of the plan may launch.
func (p *ReduceBackward) Kernel() KernelInfo {
	// The name is the kernel Run takes for contiguous operands (16-byte
	// aligned, as allocations are): "flat" for Sum, Mean, Norm2 and
	// LogSumExp where the shape allows it (see flatGeometry), and for Max,
	// Min and Prod where it also allows their slices to be split (then
	// "apply" mends the slices where the flat kernel's provisional dx is
	// wrong); else the "row" variant when the reduced axis is innermost,
	// else "col"; "apply" (after "stats") when an op with statistics
	// splits its slices, but "one" for Var and Std split along an outer
	// axis (Run takes it where x is larger than the GPU's L2 cache, else
	// "stats" and "apply"). Strided operands may take the other mapping.
	// On compute capability 9.0 and up Run may take "cluster" in place of
	// "stats" and "apply" (see clusterOp). Where the plan may take a strip
	// kernel (var and std, or the ops under reduceStripEnv) and the col
	// slices split ("always": wherever the shape allows it) the name is
	// "stripc", the form Run takes on compute capability 9.0 and up, or
	// "strip" where the plan has only the one-block form; Run takes them
	// where the device has the build and gives a block the strip's shared
	// memory (and, but for "always", the blocks are at least as many as
	// its SMs).
	geo, row := p.denseGeom()
	ref := p.colK
	switch {
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
// Var, Std) over few, long slices, whose partial statistics Run keeps
// there. It depends only on the descriptor, not on the GPU.
func (p *ReduceBackward) WorkspaceSize() int64 { return p.ws }

// Desc returns the plan's descriptor.
func (p *ReduceBackward) Desc() ReduceDesc {
	d := p.desc
	d.Shape = append([]int(nil), p.shape...)
	return d
}

// KeepdimShape is a shape dy and y may have: the input shape with the
// reduced axis set to 1 (PyTorch's keepdim=True).
func (p *ReduceBackward) KeepdimShape() []int { return append([]int(nil), p.keep...) }

// ReducedShape is the other shape dy and y may have: the input shape
// without the reduced axis (PyTorch's default, keepdim=False; for a rank-1
// input, a 0-d tensor).
func (p *ReduceBackward) ReducedShape() []int { return append([]int{}, p.reduced...) }

// keptStride is the stride of dim d of the input shape in a dy or y given
// in either form (for the reduced form, d is not the axis).
func (p *ReduceBackward) keptStride(t *Tensor, d int) int64 {
	if len(t.Shape) == len(p.shape) || d < p.axis {
		return t.strideOf(d)
	}
	return t.strideOf(d - 1)
}

// operand validates one tensor, restating a shape mismatch with what the
// shape must be.
func (p *ReduceBackward) operand(field string, t *Tensor, role tensorRole, keep bool) error {
	shape := p.shape
	if keep {
		shape = p.keep
		if len(t.Shape) == len(p.reduced) {
			shape = p.reduced
		}
	}
	err := p.id.checkTensor(field, t, role, p.desc.DType, shape)
	if errors.Is(err, ErrShape) {
		if keep {
			return p.id.errorf(ErrShape, "%s shape %v must equal %v (the input shape %v with axis %d set to 1, keepdim=True) or %v (axis %d removed, keepdim=False)",
				field, t.Shape, p.keep, p.shape, p.axis, p.reduced, p.axis)
		}
		return p.id.errorf(ErrShape, "%s shape %v must equal the input shape %v", field, t.Shape, p.shape)
	}
	return err
}

// Check validates args against the plan without launching anything.
func (p *ReduceBackward) Check(a *ReduceArgs) error {
	if a == nil {
		return p.id.errorf(ErrMissing, "args is nil")
	}
	if err := p.operand("dy", &a.DY, roleInput, true); err != nil {
		return err
	}
	saved := p.desc.Op.needsSaved()
	if saved {
		if err := p.operand("x", &a.X, roleSaved, false); err != nil {
			return err
		}
		if err := p.operand("y", &a.Y, roleSaved, true); err != nil {
			return err
		}
	}
	if err := p.operand("dx", &a.DX, roleOutput, false); err != nil {
		return err
	}
	if p.ws > 0 {
		w := a.Workspace
		if w.Addr == 0 {
			return p.id.errorf(ErrMissing, "workspace is required: WorkspaceSize() is %d bytes", p.ws)
		}
		if w.Size < p.ws {
			return p.id.errorf(ErrBufferTooSmall, "workspace needs %d bytes (WorkspaceSize) but has %d", p.ws, w.Size)
		}
		if w.Addr%16 != 0 {
			return p.id.errorf(ErrLayout, "workspace address %#x is not 16-byte aligned", uintptr(w.Addr))
		}
	}
	if p.numel == 0 {
		return nil
	}
	if err := p.disjoint("dy", &a.DY, &a.DX); err != nil {
		return err
	}
	if saved {
		if err := p.disjoint("x", &a.X, &a.DX); err != nil {
			return err
		}
		if err := p.disjoint("y", &a.Y, &a.DX); err != nil {
			return err
		}
	}
	return nil
}

// disjoint fails when dx's memory range meets an input's: dx is written
// while x may still be read (in place is not supported).
func (p *ReduceBackward) disjoint(field string, in, dx *Tensor) error {
	size := int64(p.desc.DType.Size())
	lo1, hi1 := memRange(in, size)
	lo2, hi2 := memRange(dx, size)
	if lo1 < hi2 && lo2 < hi1 {
		return p.id.errorf(ErrLayout, "dx [%#x, %#x) overlaps %s [%#x, %#x); dx must not share memory with an input",
			lo2, hi2, field, lo1, hi1)
	}
	return nil
}

// memRange is the byte range from element 0 to the end of the last element
// a (validated, non-empty) tensor addresses.
func memRange(t *Tensor, size int64) (lo, hi uint64) {
	span := int64(1)
	for d := range t.Shape {
		span += int64(t.Shape[d]-1) * t.strideOf(d)
	}
	lo = uint64(t.Buf.Addr)
	return lo, lo + uint64(span*size)
}

// layout builds the kernel layout for args: the slice dims (every dim but
// the axis and size-1 dims) ordered by x's strides, largest first, and
// merged where every operand allows; the row mapping when the axis is x's
// fastest dim, else the col mapping.
func (p *ReduceBackward) layout(a *ReduceArgs, L *reduceLayout) {
	var ts [4]*Tensor // x, y, dy, dx
	if p.desc.Op.needsSaved() {
		ts[0], ts[1] = &a.X, &a.Y
	}
	ts[2], ts[3] = &a.DY, &a.DX
	ref := 3
	if ts[0] != nil {
		ref = 0
	}
	var dim [MaxRank]int64
	var st [4][MaxRank]int64
	n := 0
	for d, sz := range p.shape {
		if d == p.axis || sz == 1 {
			continue
		}
		dim[n] = int64(sz)
		for i, t := range ts {
			if t != nil {
				st[i][n] = p.keptStride(t, d) // for x and dx, strideOf(d)
			}
		}
		// Insertion by ref's stride, largest first (stable for ties).
		for j := n; j > 0 && st[ref][j] > st[ref][j-1]; j-- {
			dim[j], dim[j-1] = dim[j-1], dim[j]
			for i := range st {
				st[i][j], st[i][j-1] = st[i][j-1], st[i][j]
			}
		}
		n++
	}
	m := 0
	for j := 0; j < n; j++ {
		if m > 0 {
			ok := true
			for i := range st {
				if st[i][m-1] != st[i][j]*dim[j] {
					ok = false
					break
				}
			}
			if ok {
				dim[m-1] *= dim[j]
				for i := range st {
					st[i][m-1] = st[i][j]
				}
				continue
			}
		}
		dim[m] = dim[j]
		for i := range st {
			st[i][m] = st[i][j]
		}
		m++
	}
	var kst [4]int64
	for i, t := range ts {
		if t != nil && (i == 0 || i == 3) {
			kst[i] = t.strideOf(p.axis)
		}
	}
	row := p.k > 1 && (m == 0 || kst[ref] <= st[ref][m-1])
	geo, mapping := p.col, int32(redCol)
	if row {
		geo, mapping = p.row, redRow
	}
	*L = reduceLayout{k: p.k, slices: p.slices, chunk: geo.chunk, nchunks: geo.nchunks, tiles: geo.tiles,
		scale: p.scale, mapping: mapping, group: geo.group, srank: int32(m), cvec: 1}
	if row && (ts[0] == nil || kst[0] == 1) && kst[3] == 1 {
		L.vec = 1
	}
	L.kstride = [2]int64{kst[0], kst[3]}
	for j := 0; j < m; j++ {
		L.sdim[j] = dim[j]
		for i := range st {
			L.sstride[i][j] = st[i][j]
		}
	}
	if m > 0 {
		L.vstride = [2]int64{st[1][m-1], st[2][m-1]}
	}
	if !row {
		// One 16-byte access per thread where x and dx allow it, else
		// one 8-byte access (v/2 slices, when that is at least 2), else 1.
		for _, v := range [2]int64{colVec(p.desc.DType, p.desc.Op), colVec(p.desc.DType, p.desc.Op) / 2} {
			if v >= 2 && p.colVectorizable(ts[0], ts[3], &dim, &st, kst, m, v) {
				L.cvec = int32(v)
				break
			}
		}
		w := int64(redBlock/geo.group) * int64(L.cvec)
		L.tiles = ceilDiv(p.slices, w) * geo.nchunks
	}
}

// colVectorizable reports whether col threads can move v adjacent slices
// with one access: x and dx step 1 across the innermost slice dim, whose
// length is a multiple of v, every other step of theirs is a multiple of
// v, and both start aligned to v elements' bytes.
func (p *ReduceBackward) colVectorizable(x, dx *Tensor, dim *[MaxRank]int64, st *[4][MaxRank]int64, kst [4]int64, m int, v int64) bool {
	if m == 0 || dim[m-1]%v != 0 {
		return false
	}
	align := uint64(v) * uint64(p.desc.DType.Size())
	for _, i := range [2]int{0, 3} {
		if i == 0 && x == nil {
			continue
		}
		t := dx
		if i == 0 {
			t = x
		}
		if st[i][m-1] != 1 || kst[i]%v != 0 || uint64(t.Buf.Addr)%align != 0 {
			return false
		}
		for j := 0; j < m-1; j++ {
			if st[i][j]%v != 0 {
				return false
			}
		}
	}
	return true
}

// blocks is the grid a launch of L needs before the resident limit.
func (L *reduceLayout) blocks() int64 {
	if L.phase == redPhaseTotal {
		return ceilDiv(L.slices, redBlock/32) // a warp per slice
	}
	if L.phase == redPhaseFlat {
		// A thread per slice, and the flat kernel's grid for a wide mend
		// (launchSmem caps it).
		return max(ceilDiv(L.slices, redBlock), int64(gridCover(L.flat.packs, redBlock)))
	}
	if L.flat.packs > 0 {
		return int64(gridCover(L.flat.packs, redBlock))
	}
	if L.mapping == redRow {
		return ceilDiv(L.tiles, int64(redBlock/L.group))
	}
	return L.tiles
}

// Run checks args as Check does and queues on s the work that writes dx:
// one or more kernel launches, and for some shapes a memset of part of the
// workspace, chosen by the operands' strides and alignment and by s's
// device. An empty tensor queues nothing. Run returns once the work is
// queued; dx is written, and the workspace free for reuse, when s reaches
// the end of it (Stream.Synchronize, or an event recorded after Run). The
// first Run of a kernel in a context loads it, which compiles its PTX
// unless the driver's JIT cache holds it; Warm does that ahead of time.
//
// Run never allocates device memory, copies from the host or synchronizes,
// so a Run whose kernels are loaded can be captured into a CUDA graph.
// Runs of one plan may be made concurrently, each with its own workspace.
// The error wraps ErrNilStream for a nil s, is one of Check's, or is the
// driver's error from loading or launching a kernel.
func (p *ReduceBackward) Run(s *driver.Stream, a *ReduceArgs) error {
	// Run queues the flat kernel for an op without statistics on dense
	// operands (see dense), and for Max, Min and Prod on dense operands
	// whose slices would be split (a memset of the counts, the flat
	// kernel, then the apply kernel's redPhaseFlat), else the row or col
	// kernel (by the operands' strides), or, when an op with statistics
	// splits its slices into chunks, the one kernel (col, after a memset
	// of its counters) or the stats kernel then the apply kernel twice
	// (the slices' totals, then dx; max, min and prod need only the
	// first); for an op with statistics on dense operands, the strip
	// kernel in place of those where the plan has it (var and std by
	// default; see stripOp); nothing for an empty tensor.
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	// A kernel is resolved (on first use, JIT-compiled) only where Run may
	// launch it: each test that needs no loaded function comes first.
	var L reduceLayout
	ctx := s.Context()
	if p.stripOn() && p.stripDense(a) && p.stripMayFill(deviceSMs(ctx)) {
		var lf *loadedFunction
		g, c := &p.strip, int64(1)
		if p.stripcK != nil {
			lc, err := p.stripcK.resolve(ctx)
			if err != nil && !errors.Is(err, errNoBuild) {
				return err
			}
			if err == nil && lc.smemBlocksPerSM > 0 {
				g, c, lf = &p.stripc, redStripCluster, lc
			}
		}
		if lf == nil && p.stripK != nil {
			l1, err := p.stripK.resolve(ctx)
			if err != nil {
				return err
			}
			if l1.smemBlocksPerSM > 0 {
				lf = l1
			}
		}
		if lf != nil && (p.stripAny || p.col.nchunks > 1 && g.strips*c >= int64(lf.sms)) {
			L = reduceLayout{k: p.k, slices: p.slices, chunk: g.chunk, nchunks: 1, tiles: g.strips * c, scale: p.scale,
				mapping: redCol, group: 1, cvec: g.vr}
			L.flat.ip = g.inner
			L.flat.magic[0], L.flat.shift[0] = g.magic, g.shift
			return p.launchGrid(s, lf, a, &L, g.strips*c, g.smem)
		}
	}
	if p.dense(a) {
		lf, err := p.flatK.resolve(ctx)
		if err != nil {
			return err
		}
		if !p.flatFx {
			L = reduceLayout{k: p.k, slices: p.slices, chunk: p.k, nchunks: 1, scale: p.scale, flat: p.flat}
			return p.launch(s, lf, a, &L)
		}
		// The provisional ops: the counts zeroed, the flat kernel, then
		// red_flat_fix, which finds each slice by the strided layout.
		p.layout(a, &L)
		L.flat = p.flat
		if err := s.MemsetD8Async(a.Workspace.Slice(0, 4*(p.slices+1)), 0); err != nil {
			return err
		}
		return p.launchThenApply(s, lf, a, &L, redPhaseFlat)
	}
	p.layout(a, &L)
	main := p.colK
	if L.mapping == redRow {
		main = p.rowK
	}
	if p.stats != nil && L.nchunks > 1 {
		// The cluster kernel needs a quarter of a block per SM and
		// resident block (at least one), the one kernel an x larger
		// than L2.
		if p.clu.nchunks > 0 && L.mapping == redCol && (p.cluAny || 4*p.clusterTiles(&L) >= int64(deviceSMs(ctx))) {
			lf, err := p.cluK.resolve(ctx)
			if err != nil && !errors.Is(err, errNoBuild) {
				return err
			}
			if tiles := p.clusterTiles(&L); err == nil && (p.cluAny || 4*tiles >= int64(lf.sms*lf.blocksPerSM)) {
				return p.runCluster(s, lf, a, &L, tiles)
			}
		}
		if p.one && L.mapping == redCol && p.oneBig(ctx) {
			lf, err := p.oneK.resolve(ctx)
			if err != nil {
				return err
			}
			if g := &p.oneG; int64(lf.sms*lf.smemBlocksPerSM) >= 2*g.nchunks {
				L.tiles = L.tiles / L.nchunks * g.nchunks
				L.chunk, L.nchunks = g.chunk, g.nchunks
				ctr := a.Workspace.Slice(p.oneOff, 4*(1+L.tiles/L.nchunks))
				if err := s.MemsetD8Async(ctr, 0); err != nil {
					return err
				}
				smem := L.chunk * int64(redBlock/L.group) * int64(L.cvec) * int64(p.desc.DType.Size())
				return p.launchSmem(s, lf, a, &L, smem)
			}
		}
		lf, err := p.stats.resolve(ctx)
		if err != nil {
			return err
		}
		if err := p.launchThenApply(s, lf, a, &L, redPhaseTotal); err != nil || p.desc.Op.provisional() {
			return err
		}
		L.phase, L.reverse = redPhaseApply, 1
		main = p.apply
	}
	lf, err := main.resolve(ctx)
	if err != nil {
		return err
	}
	return p.launch(s, lf, a, &L)
}

// launchThenApply launches first on L, then the apply kernel on L in
// phase (redPhaseTotal after the stats kernel, redPhaseFlat after the
// flat one).
func (p *ReduceBackward) launchThenApply(s *driver.Stream, first *loadedFunction, a *ReduceArgs, L *reduceLayout, phase int32) error {
	if err := p.launch(s, first, a, L); err != nil {
		return err
	}
	lf, err := p.apply.resolve(s.Context())
	if err != nil {
		return err
	}
	L.phase = phase
	return p.launch(s, lf, a, L)
}

// clusterTiles is the cluster kernel's grid for the col layout L (one
// block per tile).
func (p *ReduceBackward) clusterTiles(L *reduceLayout) int64 {
	return ceilDiv(p.slices, int64(redBlock/p.clu.group)*int64(L.cvec)) * p.clu.nchunks
}

// runCluster launches the cluster kernel on the col layout L: its
// geometry in place of the two passes', one block per tile (tiles, from
// clusterTiles; a cluster's blocks wait for one another, clusters never
// do).
func (p *ReduceBackward) runCluster(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, tiles int64) error {
	g := &p.clu
	L.chunk, L.nchunks, L.group, L.tiles = g.chunk, g.nchunks, g.group, tiles
	return p.launchGrid(s, lf, a, L, L.tiles, 0)
}

func (p *ReduceBackward) launch(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout) error {
	return p.launchSmem(s, lf, a, L, 0)
}

// launchSmem launches with smem bytes of dynamic shared memory (the one
// kernel's: then the grid is what fits with the plan's most).
func (p *ReduceBackward) launchSmem(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, smem int64) error {
	grid := L.blocks()
	per := lf.blocksPerSM
	if smem > 0 {
		per = lf.smemBlocksPerSM
	}
	// Sum and Mean only broadcast dy into dx, a write stream like the binary
	// kernels': a block per block step (gridCover's reasoning) is faster
	// for them on an H100. The kernels that read x keep the grid of
	// resident blocks, which is faster for most of them (the bf16 row
	// kernels most of all), except the f32 row kernels, which take
	// gridCover's grid too. The flat kernel is elementwise: gridCover's
	// grid.
	// With few slices (redFlatLocal) the flat kernel of the provisional
	// ops adds each block's counts to the workspace once, all on a few
	// counters: no more blocks than fit at once.
	capped := L.flat.packs == 0 && (smem > 0 || (p.desc.Op.needsSaved() && (L.mapping != redRow || p.desc.DType != dtype.F32)))
	capped = capped || p.flatFx && L.flat.packs > 0 && L.phase != redPhaseFlat && L.slices <= redFlatLocal
	if limit := int64(lf.sms * per); grid > limit && capped {
		grid = limit
	}
	if L.phase == redPhaseFlat {
		// Most of red_flat_fix's blocks find no wide slice and return:
		// two blocks an SM walk the packs where one is wide, and there is
		// at least a thread per slice.
		grid = max(min(grid, int64(2*lf.sms)), ceilDiv(L.slices, redBlock))
	}
	return p.launchGrid(s, lf, a, L, max(min(grid, maxGridX), 1), smem)
}

// launchGrid launches grid blocks of redBlock threads on L with smem bytes
// of dynamic shared memory.
func (p *ReduceBackward) launchGrid(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, grid, smem int64) error {
	args := driver.GetArgs()
	p.pack(args, a, L)
	err := lf.fn.Launch(s, [3]uint32{uint32(grid), 1, 1}, [3]uint32{redBlock, 1, 1}, uint32(smem), args)
	driver.PutArgs(args)
	return err
}

// pack appends the kernel parameters in the order of the spec's reduce ABI:
// x, y (null for Sum and Mean), dy, dx, workspace, layout.
func (p *ReduceBackward) pack(args *driver.Args, a *ReduceArgs, L *reduceLayout) {
	var x, y driver.DevicePtr
	if p.desc.Op.needsSaved() {
		x, y = a.X.Buf.Addr, a.Y.Buf.Addr
	}
	args.Ptr(x)
	args.Ptr(y)
	args.Ptr(a.DY.Buf.Addr)
	args.Ptr(a.DX.Buf.Addr)
	args.Ptr(a.Workspace.Addr)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
