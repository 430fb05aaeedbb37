package main

import "github.com/baracuda-go/baracuda/dtype"

// reduceFamily: single-axis reduction backward. Nine variants share the
// ABI: "row" (the axis is x's fastest dim: threads step along it) and "col"
// (an outer axis: threads step across slices) compute a slice's statistics
// and dx in one kernel; few, long slices of an op with statistics are split
// into chunks and take "stats" (partial statistics into the workspace)
// then "apply" (combine, dx), or for var and std along an outer axis "one"
// (the tiles of a slice block keep x in shared memory until their
// statistics are complete). "strip" is an op with statistics along an
// outer axis on dense operands: a block holds whole slices (a strip of
// them) in shared memory, reads x once and waits for no other block.
// "flat" is the ops without statistics, and the provisional ones, on dense
// operands (an elementwise map of x with dy and y broadcast), and var and
// std's statistics and apply passes on dense operands of few slices. "cluster"
// and "stripc" (compute capability 9.0 and up, their own build) run the
// split col slices and the strips of an op with statistics as thread
// block clusters, which combine their partials through distributed shared
// memory. "seg" reduces over several axes whose reduced dims do not
// coalesce into one group (ops/reduce_multi.go). "short" is a short
// axis (at most 16 positions) over many slices on dense operands, each
// slice's statistics in one thread's registers (ops/reduce_short.go), and
// "inner" its packed form for an innermost axis (ops/reduce_inner.go). A variant is instantiated only for the ops it serves (the lists
// below). Layout is ReduceLayout (spec_layouts.go).
// redCluster is the cluster variant's blocks per cluster
// (also RED_CLUSTER_BLOCKS and ops' redCluster, through gen/spec_consts.go): 2, which
// measured faster than 4 and 8 on an H100.
const redCluster = 2

// redStripCluster is the "stripc" variant's blocks per cluster
// (also RED_STRIP_CLUSTER and ops' redStripCluster, through gen/spec_consts.go):
// "stripc" is "strip" with each strip's rows cut between the blocks of
// one thread block cluster (compute capability 9.0 and up, its own
// build), which combine their partial statistics through distributed
// shared memory. ops' TestReduceClusterSizesAgree checks that the PTX's
// cluster sizes (from these constants) and the launcher's agree.
const redStripCluster = 2

// redSegCluster is the "segc" variant's blocks per cluster (also
// RED_SEG_CLUSTER and ops' redSegCluster, through gen/spec_consts.go): 8,
// the most a portable cluster holds, so that a slice of up to 8 times a
// block's shared memory is read once.
const redSegCluster = 8

// The ops each variant is instantiated for; a variant's template is empty
// for the others, which its launcher never takes. redStatsOps are the ops
// with per-slice statistics (the tie count, the zero count and product,
// the mean: hasStats in ops/reduce.go), redMomentOps those whose
// statistics need x read twice (var and std: the "one" kernel keeps x in
// shared memory between the passes), redFlatOps those that "flat" serves
// (every op whose dx is a map of x with dy and y broadcast, the
// provisional ones: max, min and prod, and var and std, a statistics pass
// then an apply pass), redFixOps those whose flat dx is provisional ("fix"
// mends it).
var (
	redStatsOps  = []string{"max", "min", "prod", "var", "std"}
	redMomentOps = []string{"var", "std"}
	redFlatOps   = []string{"sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"}
	redFixOps    = []string{"max", "min", "prod"}
	redSegsOps   = []string{"max", "min", "var", "std"}
)

var reduceFamily = Family{
	Name:      "reduce",
	Prefix:    "reduce_bw",
	Header:    "reduce.cuh",
	Block:     256,
	MinBlocks: 1,
	Params: []Param{
		ptrParam("x", "const T* __restrict__"),
		ptrParam("y", "const T* __restrict__"),
		ptrParam("dy", "const T* __restrict__"),
		ptrParam("dx", "T* __restrict__"),
		ptrParam("ws", "void* __restrict__"),
		{Name: "L", C: "ReduceLayout", PTX: "b8", Size: 432, Align: 8},
	},
	DTypes: allDTypes,
	Ops: []Op{
		{Name: "sum", Functor: "RedSum"},
		{Name: "mean", Functor: "RedMean"},
		{Name: "max", Functor: "RedMaxMin"},
		{Name: "min", Functor: "RedMaxMin"},
		{Name: "prod", Functor: "RedProd"},
		{Name: "norm2", Functor: "RedNorm2"},
		{Name: "logsumexp", Functor: "RedLogSumExp"},
		{Name: "var", Functor: "RedVar"},
		{Name: "std", Functor: "RedStd"},
	},
	Variants: []Variant{
		// flat: a pack per thread, streamed like the binary kernels, needs
		// many threads an SM to keep enough loads in flight, which the
		// provisional ops' counting of ties (a rare path) must not take
		// registers from: max and min run 6 blocks an SM (40 registers;
		// under 40 they spill on compute capability 7 and 8), prod 5 (48:
		// its division's exact fallback spills f64 under 48), var and std
		// 4 (64: their statistics and apply passes keep 4 packs of x in
		// flight a thread; 5 blocks, 48 registers, would leave the
		// statistics pass's ~1024 tiles 1.55 waves of an H100's 132 SMs,
		// 4 blocks 1.94).
		{Name: "flat", Template: "reduce_flat", Ops: redFlatOps, OpMinBlocks: map[string]int{"max": 6, "min": 6, "prod": 5, "var": 4, "std": 4}},
		{Name: "row", Template: "reduce_row"},
		{Name: "col", Template: "reduce_col"},
		{Name: "stats", Template: "reduce_stats", Ops: redStatsOps},
		{Name: "apply", Template: "reduce_apply", Ops: redStatsOps},
		// fix: mends the flat kernel's provisional dx. It is apart from
		// apply so that a first Run along an outer axis compiles two small
		// kernels at once rather than the whole of apply.
		{Name: "fix", Template: "reduce_fix", Ops: redFixOps},
		{Name: "one", Template: "reduce_one", Ops: redMomentOps},
		{Name: "strip", Template: "reduce_strip", Ops: redStatsOps},
		{Name: "cluster", Template: "reduce_cluster", MinMajor: 9, Cluster: redCluster, Ops: redStatsOps},
		{Name: "stripc", Template: "reduce_stripc", MinMajor: 9, Cluster: redStripCluster, Ops: redStatsOps},
		// seg: several reduced axes that do not coalesce into one group
		// (reduce_seg.cuh); every op, a statistics pass and an apply pass
		// chosen by the layout's phase, so one entry per (op, dtype). Max
		// and min keep 4 blocks per SM, which their tie slots would take
		// them under.
		{Name: "seg", Template: "reduce_seg", OpMinBlocks: map[string]int{"max": 4, "min": 4}},
		// segc: var and std on the seg path as clusters of redSegCluster
		// blocks, one cluster per slice, which keep x in shared memory
		// (compute capability 9.0, its own build).
		{Name: "segc", Template: "reduce_segc", MinMajor: 9, Cluster: redSegCluster, Ops: redMomentOps},
		// segs: var, std, max and min over [R, C, S] with short segments
		// (reduce_segs.cuh): a block per tile of adjacent slices, its rows
		// in shared memory (var and std one block an SM; max and min keep
		// flags, a sixteenth of that, and fit several).
		{Name: "segs", Template: "reduce_segs", MinBlocks: 1, Ops: redSegsOps},
		// short: a single axis of at most 16 positions over many slices
		// on dense operands (reduce_short.cuh): a thread per slice, or per
		// vector of adjacent slices along an outer axis; every op. Two
		// blocks an SM (128 registers) spill nothing but f64 prod, which
		// keeps one (its other dtypes fit two in their registers anyway);
		// the sm80 build's three would spill every op.
		{Name: "short", Template: "reduce_short", MinBlocks: 2, OpMinBlocks: map[string]int{"prod": 1}},
		// inner: the short mapping's packed inner form (reduce_inner.cuh):
		// a short innermost axis whose units (lcm(k, N) elements) fit
		// RED_INNER_UNIT, a thread owning whole 16-byte packs of x and dx
		// and the slices in them; every op, f32, f16 and bf16 (f64 keeps
		// the staged form).
		// Four blocks an SM (64 registers) keep 64 KiB of x in flight
		// an SM and spill nothing.
		{Name: "inner", Template: "reduce_inner", MinBlocks: 4, DTypes: []dtype.DType{dtype.F32, dtype.F16, dtype.BF16}},
	},
}
