package main

// lppoolFamily: LP pool 1d/2d backward. One kernel per (p class, dtype)
// serves both plans (1d is 2d with H = 1); the op picks the p == 1 and
// p == 2 fast paths or precise pow for any other p. Layout is LpPoolLayout
// (spec_layouts.go).
var lppoolFamily = Family{
	Name:   "lppool",
	Prefix: "lppool_bw",
	Header: "lppool.cuh",
	Block:  256,
	// At least 3 blocks an SM (80 registers): ptxas 11.8 left alone, or
	// held to 64 registers, makes some kernels spill (f64 pow on sm_70);
	// within 80 the p == 1 and 2 ones take at most 64 (4 blocks an SM).
	MinBlocks: 3,
	Params: []Param{
		ptrParam("x", "const T* __restrict__"),
		ptrParam("y", "const T* __restrict__"),
		ptrParam("dy", "const T* __restrict__"),
		ptrParam("dx", "T* __restrict__"),
		{Name: "p", C: "double", PTX: "f64", Size: 8, Align: 8},
		{Name: "L", C: "LpPoolLayout", PTX: "b8", Size: 312, Align: 8},
	},
	DTypes: allDTypes,
	Ops: []Op{
		{Name: "p1", Functor: "LpP1"},
		{Name: "p2", Functor: "LpP2"},
		{Name: "general", Functor: "LpGeneral"},
	},
	// pack: x and dx as 16-byte packs; cell: a cell per thread, any
	// strides; wide: a cell per thread, window columns in several passes
	// through shared memory (windows too wide for one).
	Variants: []Variant{
		{Name: "pack", Template: "lppool_pack"},
		{Name: "cell", Template: "lppool_cell"},
		{Name: "wide", Template: "lppool_wide"},
	},
}
