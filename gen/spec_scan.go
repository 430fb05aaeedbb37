package main

import "github.com/baracuda-go/baracuda/dtype"

// scanFamily: single-axis scan backward (cumsum, cumprod, cummax, cummin,
// logcumsumexp). Two variants share the ABI: "row" for a scan along the
// innermost dim (threads of a block along the axis) and "col" for any
// other (lanes across slices, warps along the axis). Each kernel also runs
// the passes of long axes (L.phase): the row kernels' two forward-state
// passes, the col kernels' ext fix pass for f64 (float dtypes run it in
// the main launch). Layout is ScanLayout (spec_layouts.go).
var scanFamily = Family{
	Name:   "scan",
	Prefix: "scan_bw",
	Header: "scan.cuh",
	Block:  256,
	Params: []Param{
		ptrParam("dy", "const T* __restrict__"),
		ptrParam("x", "const T* __restrict__"),
		ptrParam("y", "const T* __restrict__"),
		ptrParam("dx", "T* __restrict__"),
		ptrParam("ws", "void* __restrict__"),
		{Name: "L", C: "ScanLayout", PTX: "b8", Size: 536, Align: 8},
	},
	DTypes: allDTypes,
	Ops: []Op{
		{Name: "cumsum", Functor: "CumsumBw"},
		{Name: "cumprod", Functor: "CumprodBw"},
		{Name: "cummax", Functor: "CummaxBw"},
		{Name: "cummin", Functor: "CumminBw"},
		{Name: "logcumsumexp", Functor: "LogcumsumexpBw"},
	},
	Variants: []Variant{
		{Name: "row", Template: "scan_backward_row"},
		{Name: "col", Template: "scan_backward_col"},
		// colpair: the col mapping's cummax and cummin with two adjacent
		// slices a lane (32-bit words of two bf16), where the operands
		// allow words (ops/scan_launch.go, pairLayout); compute_80 and up (its
		// bf16x2 instructions).
		{Name: "colpair", Template: "scan_backward_colpair", MinMajor: 8, Ops: []string{"cummax", "cummin"},
			DTypes: []dtype.DType{dtype.BF16}},
		// colstrip: the 16-bit cummax and cummin along an outer axis with
		// one block of 512 threads per strip of 32 slices over the whole
		// axis (no look-back, no workspace), where the strips fill one
		// wave of the GPU and the operands allow 16-byte rows
		// (ops/scan_launch.go, stripLayout, stripFills); compute_80 and up
		// (cp.async): bf16 in the _sm80 build, f16 in _sm80h.
		{Name: "colstrip", Template: "scan_backward_colstrip", MinMajor: 8, Ops: []string{"cummax", "cummin"},
			DTypes: []dtype.DType{dtype.F16, dtype.BF16}, Block: 512},
		// short: an axis of at most 32 elements over many slices, a
		// thread per slice and its whole scan in registers, staged
		// through shared memory where the slices are contiguous along
		// the axis (ops/scan_short.go; no workspace).
		{Name: "short", Template: "scan_backward_short", Block: 128},
		// tall: an outer axis over a few slices of a small contiguous
		// inner extent (2..16), a block per tile of rows through shared
		// memory (ops/scan_tall.go, gen/scan_tall.cuh).
		// Three blocks per SM (80 registers), where ptxas's own choice
		// leaves one or two; logcumsumexp keeps two (its f64 kernel
		// spills at three).
		{Name: "tall", Template: "scan_backward_tall", MinBlocks: 3,
			OpMinBlocks: map[string]int{"logcumsumexp": 2}},
		// tallrow: the tall mapping over SCAN_TALLROW_K contiguous
		// columns as one long row of row vectors, a run of whole rows a
		// thread in registers (ops/scan_tallrow.go, gen/scan_tallrow.cuh).
		// ptxas's own register choice (cumsum f32 at 64 registers, four
		// blocks per SM; at four blocks the 16-bit cumsum kernels spill).
		// Not built for cumsum, cummax and cummin in f32 and f64, where
		// the tall kernel is faster (docs/variants.md).
		{Name: "tallrow", Template: "scan_backward_tallrow", Skip: map[dtype.DType][]string{
			dtype.F32: {"cumsum", "cummax", "cummin"}, dtype.F64: {"cumsum", "cummax", "cummin"}}},
	},
}
