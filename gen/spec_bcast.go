package main

// bcastFamily: the broadcasting binary backward, where a or b has a shape
// of its own that broadcasts to dy's and its gradient is dy's summed over
// the broadcast dims. Two kernels per (op, dtype): "tile" (the pass over
// dy viewed as [R, C] and the pass that sums its per-tile partials) and
// "gen" (the general pass for one output, kept x reduced indices over up
// to 8 dims, and the pass that sums its per-chunk partials), the phase
// chosen by the layout's phase field. The op functors are the binary
// family's (binary.cuh); plans without broadcasting keep that family's
// kernels. Layout is BcastLayout (spec_layouts.go).
var bcastFamily = Family{
	Name:   "bcast",
	Prefix: "bcast_bw",
	Header: "bcast.cuh",
	Block:  256,
	// One resident block an SM at least for the gen kernels: left alone,
	// ptxas 11.8 squeezes some kernels (div, pow, hypot) to 64 or 80
	// registers with spills. The tile kernels ask for three (80 registers
	// at most), which every op but pow meets without spills: mul takes 64
	// in f32 (four blocks an SM) and 72 in bf16 (three; the _sm80 build asks
	// for four, see builds in spec.go). pow's tile kernel
	// needs up to 106 and keeps one.
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
	DTypes: allDTypes,
	Ops:    binaryFamily.Ops,
	Variants: []Variant{
		{Name: "tile", Template: "bcast_tile_kernel", MinBlocks: 3, OpMinBlocks: map[string]int{"pow": 1}},
		{Name: "gen", Template: "bcast_gen_kernel"},
	},
}
