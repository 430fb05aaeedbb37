package main

// binaryFamily: elementwise backward of a two-input op. Layout is
// BinaryLayout (spec_layouts.go).
var binaryFamily = Family{
	Name:   "binary",
	Prefix: "binary_bw",
	Header: "binary.cuh",
	Block:  256,
	Params: []Param{
		ptrParam("dy", "const T* __restrict__"),
		ptrParam("a", "const T* __restrict__"),
		ptrParam("b", "const T* __restrict__"),
		ptrParam("da", "T* __restrict__"),
		ptrParam("db", "T* __restrict__"),
		{Name: "scalar", C: "double", PTX: "f64", Size: 8, Align: 8},
		{Name: "L", C: "BinaryLayout", PTX: "b8", Size: 400, Align: 8},
	},
	DTypes: allDTypes,
	Ops: []Op{
		{Name: "add", Functor: "AddBw"},
		{Name: "sub", Functor: "SubBw"},
		{Name: "mul", Functor: "MulBw"},
		{Name: "div", Functor: "DivBw"},
		{Name: "maximum", Functor: "MaximumBw"},
		{Name: "minimum", Functor: "MinimumBw"},
		{Name: "pow", Functor: "PowBw"},
		{Name: "atan2", Functor: "Atan2Bw"},
		{Name: "hypot", Functor: "HypotBw"},
		{Name: "lerp", Functor: "LerpBw"},
	},
	Variants: []Variant{{Template: "binary_backward"}},
}
