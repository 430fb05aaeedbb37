package main

import (
	"bytes"
	"fmt"
)

// Const is an integer constant that the CUDA sources and the Go launchers
// must agree on. The generator writes it twice from this one row: as a
// #define in gen/zconsts.cuh and as a Go const in ops/zconsts.go.
type Const struct {
	Name    string // the CUDA macro, e.g. "RED_BLOCK"
	GoName  string // the Go const in package ops, e.g. "redBlock"
	Value   int
	Comment string // one line, without the name
	// Tunable guards the #define with #ifndef so that a kernel developer
	// can time another value with -D (scripts/ptx-variant.sh's NVCC_EXTRA);
	// the Go const keeps the spec's value.
	Tunable bool
}

// consts are the shared constants: the bcast family's, the reduce
// family's, the scan family's, then the LP pool family's.
var consts = []Const{
	{Name: "BCAST_FULL", GoName: "bcastFull", Value: 1,
		Comment: "a bcast tile operand with dy's [R, C] shape"},
	{Name: "BCAST_COL", GoName: "bcastCol", Value: 2,
		Comment: "a bcast tile operand of shape [C], broadcast along the rows (its gradient sums columns)"},
	{Name: "BCAST_ROW", GoName: "bcastRow", Value: 3,
		Comment: "a bcast tile operand of shape [R, 1], broadcast along the columns (its gradient sums rows)"},
	{Name: "BCAST_SCALAR", GoName: "bcastScalar", Value: 4,
		Comment: "a bcast tile operand of one element (its gradient sums everything)"},
	{Name: "BCAST_TILE", GoName: "bcastTile", Value: 0,
		Comment: "bcast phase: the tile pass over dy as [R, C]"},
	{Name: "BCAST_TILE_FINISH", GoName: "bcastTileFinish", Value: 1,
		Comment: "bcast phase: sum the tile pass's partials"},
	{Name: "BCAST_GEN", GoName: "bcastGen", Value: 2,
		Comment: "bcast phase: the general pass for one output (kept x reduced indices)"},
	{Name: "BCAST_GEN_FINISH", GoName: "bcastGenFinish", Value: 3,
		Comment: "bcast phase: sum the general pass's per-chunk partials"},
	{Name: "BCAST_WARPS", GoName: "bcastWarps", Value: 8,
		Comment: "warps per block of the bcast kernels (256 threads)"},
	{Name: "RED_BLOCK", GoName: "redBlock", Value: 256,
		Comment: "threads per block of the reduce kernels"},
	{Name: "RED_CLUSTER_BLOCKS", GoName: "redCluster", Value: redCluster,
		Comment: "blocks per thread block cluster of the reduce cluster kernel (chunks per split slice)"},
	{Name: "RED_STRIP_CLUSTER", GoName: "redStripCluster", Value: redStripCluster,
		Comment: "blocks per cluster of the clustered strip kernel (reduce_stripc)"},
	{Name: "RED_CACHE_PACKS", GoName: "redCachePacks", Value: 4,
		Comment: "16-byte packs of x a row-mapping thread keeps in registers between the statistics and the apply step (16 values of f32, 32 of f16/bf16: 64 bytes in flight per thread)"},
	{Name: "RED_CACHE_PACKS_F64", GoName: "redCachePacksF64", Value: 2,
		Comment: "RED_CACHE_PACKS for f64"},
	{Name: "RED_STRIP_VMAX", GoName: "redStripVMax", Value: 4,
		Comment: "the most 16-byte packs of each row a strip kernel's strip takes (64 bytes; the launcher takes half where the full width does not fit)"},
	{Name: "RED_CLUSTER_HMAX", GoName: "redClusterH", Value: 32,
		Comment: "threads along k per block of the cluster kernel (the other col kernels take at most 8)"},
	{Name: "RED_SHORT_KMAX", GoName: "redShortMaxK", Value: 16,
		Comment: "the longest axis the short mapping takes (the bound of a thread's unrolled loops over a slice's values or a vector's rows)"},
	{Name: "RED_INNER_PACKS", GoName: "redInnerPacks", Value: 4,
		Comment: "the packs of x a thread of the packed inner form loads in a step before it uses any (64 bytes; fewer where a unit is longer)"},
	{Name: "RED_INNER_VALS", GoName: "redInnerVals", Value: 8,
		Comment: "the most values of dy (and of y) a thread of the packed inner form loads in a step, which bounds the registers of the units of many short slices"},
	{Name: "RED_INNER_UNIT", GoName: "redInnerUnit", Value: 32,
		Comment: "the longest unit (lcm(k, N) elements) the packed inner form takes: 8 packs of f32, 4 of f16 and bf16; units of up to 64 elements spill registers at 4 blocks an SM"},
	{Name: "RED_STRIP_HEAD", GoName: "redStripHead", Value: 4096,
		Comment: "bytes of a strip kernel block's shared memory before its packs of x: the warps' partial statistics and the slices' contexts"},
	{Name: "RED_SEG_CLUSTER", GoName: "redSegCluster", Value: redSegCluster,
		Comment: "blocks per cluster of the clustered seg kernel (reduce_segc): chunks per slice"},
	{Name: "RED_FLAT_LOCAL", GoName: "redFlatLocal", Value: 64,
		Comment: "up to this many slices the flat kernel's blocks count in shared memory"},
	{Name: "RED_REGRID_UNIT", GoName: "redRegridUnit", Value: 4096,
		Comment: "positions per block-sized unit of the fix kernel's grid-wide redo of a few long slices (red_flat_regrid)"},
	{Name: "SCAN_THREADS", GoName: "scanBlock", Value: 256,
		Comment: "threads per block of the scan kernels (all but colstrip)"},
	{Name: "SCAN_WARPS", GoName: "scanWarps", Value: 8,
		Comment: "warps per block of the scan kernels (SCAN_THREADS / 32)"},
	{Name: "SCAN_PAIR_ITEMS", GoName: "scanPairItems", Value: 22, Tunable: true,
		Comment: "elements per slice per thread per tile of the colpair kernel"},
	{Name: "SCAN_STRIP_W", GoName: "scanStripW", Value: 32,
		Comment: "slices per strip of the colstrip kernel (64-byte rows)"},
	{Name: "SCAN_STRIP_THREADS", GoName: "scanStripBlock", Value: 512,
		Comment: "threads per block of the colstrip kernel"},
	{Name: "SCAN_STRIP_DEPTH", GoName: "scanStripDepth", Value: 3,
		Comment: "stages in the colstrip kernel's shared memory ring"},
	{Name: "SCAN_PREFIX_WIDE", GoName: "scanPrefixWide", Value: 256,
		Comment: "from this many tiles a slice on, the row mapping's forward prefix pass takes a block per slice rather than a thread"},
	{Name: "SCAN_TALL_ROUNDS", GoName: "scanTallMaxRounds", Value: 4,
		Comment: "the most rounds of columns a tall tile's warps serve one after another (each round's look-back has its own warp where an op takes two passes)"},
	{Name: "SCAN_TALLROW_K", GoName: "scanTallRowK", Value: 4,
		Comment: "the inner extent (columns) of the rows the tallrow kernel serves: a power of two up to 32, and a thread's run of ScanItems::row elements is whole rows"},
	{Name: "SCAN_SHORT_ITEMS", GoName: "scanShortItems", Value: 8,
		Comment: "the short scan mapping's run length (L.items), elements taken against scan order"},
	{Name: "SCAN_SHORT_ITEMS4", GoName: "scanShortItems4", Value: 4,
		Comment: "the short scan mapping's run length for an axis of at most 4 elements"},
	{Name: "SCAN_NONE_BYTE", GoName: "scanNoneByte", Value: 0xff,
		Comment: "the byte the scan workspace's look-back part holds before a tile writes it (Run's memset, the fill blocks): a flag or 32-bit slot of four such bytes (SCAN_NONE) is not written yet, and the ticket counter starts there"},
	{Name: "SCAN_COUNTER", GoName: "scanCounter", Value: 16,
		Comment: "the scan workspace's first bytes: the ticket counter and room to keep what follows 16-byte aligned"},
	{Name: "SCAN_MAIN", GoName: "scanMain", Value: 0,
		Comment: "scan phase: the main launch, tiles chained through the look-back (the ext order's too)"},
	{Name: "SCAN_FWD_TILES", GoName: "scanFwdTiles", Value: 1,
		Comment: "scan phase: each tile's forward aggregate (row and tall mappings, ops with a forward state)"},
	{Name: "SCAN_FWD_PREFIX", GoName: "scanFwdPrefix", Value: 2,
		Comment: "scan phase: the forward aggregates into exclusive prefixes per slice"},
	{Name: "SCAN_EXT_FIX", GoName: "scanExtFix", Value: 4,
		Comment: "scan phase: the ext order's fix pass as a launch of its own (f64)"},
	{Name: "SCAN_CARRY_MAPS", GoName: "scanCarryMaps", Value: 8,
		Comment: "scan phase: each tile's map to the workspace, no dx (the carry passes of gen/scan_carry.cuh)"},
	{Name: "SCAN_CARRY_PREFIX", GoName: "scanCarryPrefix", Value: 16,
		Comment: "scan phase: a block per slice turns its tiles' maps into the carry into each"},
	{Name: "SCAN_CARRY_APPLY", GoName: "scanCarryApply", Value: 32,
		Comment: "scan phase: the main launch with each tile's carry read from the workspace"},
	{Name: "LP_ROW_BYTES", GoName: "lpRowBytes", Value: 48,
		Comment: "sizeof(LpRow), the LP pool tiles' record of an input row in shared memory (its x, dx, y and dy rows and window bounds)"},
}

// validateConsts rejects a table with a repeated name or a value that
// does not hold together.
func validateConsts() error {
	seen := map[string]bool{}
	byName := map[string]int{}
	for _, c := range consts {
		if c.Name == "" || c.GoName == "" || c.Comment == "" {
			return fmt.Errorf("const %q: every field but Tunable must be set", c.Name)
		}
		if seen[c.Name] || seen[c.GoName] {
			return fmt.Errorf("const %s (%s) is declared twice", c.Name, c.GoName)
		}
		seen[c.Name], seen[c.GoName] = true, true
		byName[c.Name] = c.Value
	}
	if k := byName["SCAN_TALLROW_K"]; k < 1 || 8%k != 0 {
		return fmt.Errorf("const SCAN_TALLROW_K is %d, not a power of two that divides 8 (the fewest elements of a row run)", k)
	}
	if byName["SCAN_TALL_ROUNDS"] > byName["SCAN_WARPS"] {
		return fmt.Errorf("const SCAN_TALL_ROUNDS is %d, more than SCAN_WARPS %d (a warp chains each round)", byName["SCAN_TALL_ROUNDS"], byName["SCAN_WARPS"])
	}
	if byName["SCAN_WARPS"]*32 != byName["SCAN_THREADS"] {
		return fmt.Errorf("const SCAN_WARPS is %d, SCAN_THREADS / 32 is %d", byName["SCAN_WARPS"], byName["SCAN_THREADS"]/32)
	}
	return nil
}

// constsHeader is gen/zconsts.cuh: the shared constants as #defines, which
// the hand-written headers include.
func constsHeader() []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by \"go run ./gen\" from the spec table in gen/spec_consts.go; DO NOT EDIT.\n")
	b.WriteString("// The constants the CUDA sources and the Go launchers share (ops/zconsts.go).\n")
	b.WriteString("#pragma once\n")
	for _, c := range consts {
		fmt.Fprintf(&b, "\n// %s: %s.\n", c.Name, c.Comment)
		if c.Tunable {
			fmt.Fprintf(&b, "#ifndef %s\n#define %s %d\n#endif\n", c.Name, c.Name, c.Value)
		} else {
			fmt.Fprintf(&b, "#define %s %d\n", c.Name, c.Value)
		}
	}
	return b.Bytes()
}

// constsGo is ops/zconsts.go: the shared constants as Go consts.
func constsGo() []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by \"go run ./gen\" from the spec table in gen/spec_consts.go; DO NOT EDIT.\n\n")
	b.WriteString("package ops\n\n")
	b.WriteString("// The constants the launchers share with the CUDA sources (gen/zconsts.cuh).\n")
	b.WriteString("const (\n")
	for i, c := range consts {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\t// %s is %s: %s.\n", c.GoName, c.Name, c.Comment)
		fmt.Fprintf(&b, "\t%s = %d\n", c.GoName, c.Value)
	}
	b.WriteString(")\n")
	return b.Bytes()
}
