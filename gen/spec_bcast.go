package main

// bcastFamily: the broadcasting binary backward, where a or b has a shape
// of its own that broadcasts to dy's and its gradient is dy's summed over
// the broadcast dims. One kernel per (op, dtype) serves every phase (the
// layout's phase field): the tile pass over dy viewed as [R, C], the
// general pass (one output, kept x reduced indices over up to 8 dims) and
// the passes that sum either's per-tile or per-chunk partials from the
// workspace in a fixed order. The op functors are the binary family's
// (binary.cuh); plans without broadcasting keep that family's kernels.
// Layout is BcastLayout (spec_layouts.go).
var bcastFamily = Family{
	Name:   "bcast",
	Prefix: "bcast_bw",
	Header: "bcast.cuh",
	Block:  256,
	// One resident block an SM at least: the kernel holds the tile and
	// the general phases, whose register needs add up (to about 100 for
	// f16 and bf16, 64-80 for f32 and f64); left alone, ptxas 11.8
	// squeezes them to 64 or 80 with spills, and held to 80 or 64 (3 or
	// 4 blocks) most ops spill.
	MinBlocks: 1,
	Params: []Param{
		ptrParam("dy", "const T* __restrict__"),
		ptrParam("a", "const T* __restrict__"),
		ptrParam("b", "const T* __restrict__"),
		ptrParam("da", "T* __restrict__"),
		ptrParam("db", "T* __restrict__"),
		ptrParam("ws", "void* __restrict__"),
		{Name: "scalar", C: "double", PTX: "f64", Size: 8, Align: 8},
		{Name: "L", C: "BcastLayout", PTX: "b8", Size: 704, Align: 8},
	},
	DTypes:   allDTypes,
	Ops:      binaryFamily.Ops,
	Variants: []Variant{{Template: "bcast_backward"}},
}
