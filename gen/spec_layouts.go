package main

import "strconv"

// Layout is a kernel family's launch layout: the struct a kernel takes by
// value as its last parameter. The generator writes it twice from this one
// spec: as a C struct in gen/zlayouts.cuh, with static_asserts on its size
// and on every field's offset as computed here by C's rules, and as a Go
// struct in ops/zlayouts.go, whose offsets ops/zlayouts_test.go compares
// with the same numbers.
type Layout struct {
	C, Go  string   // the struct's names, e.g. "ReduceLayout", "reduceLayout"
	Family string   // the family whose kernels take it
	Doc    []string // comment lines after the first, which the generator writes
	Fields []Field
}

// Field is one line of a layout: one or more fields of one type and
// array shape that share a comment.
type Field struct {
	Type    string   // the C element type, a key of cTypes
	C, Go   string   // the fields' names, space separated; Go "_" is padding
	Dims    []Dim    // array dims, outermost first
	Comment string   // one line after the declaration; may be empty
	Note    []string // comment lines above the declaration
	// GoStruct, where set, makes Go a field of this struct type holding
	// Sub, which C declares in place; C has no field of its own then.
	GoStruct string
	GoDoc    []string // the Go struct's doc comment
	Sub      []Field
}

// Dim is an array length as each language spells it.
type Dim struct {
	C, Go string
	N     int
}

// cType is a C element type's Go twin and its size, which is also its
// alignment on the 64-bit targets (NVPTX and the Go hosts).
type cType struct {
	Go   string
	Size int
}

var cTypes = map[string]cType{
	"i64":                {"int64", 8},
	"unsigned long long": {"uint64", 8},
	"double":             {"float64", 8},
	"int":                {"int32", 4},
	"unsigned":           {"uint32", 4},
	"float":              {"float32", 4},
}

var (
	dimRank  = Dim{"BC_MAX_RANK", "MaxRank", 8}         // a tensor's dims
	dimSlice = Dim{"BC_MAX_RANK - 1", "MaxRank - 1", 7} // a slice's dims (RED_SRANK, SCAN_SRANK)
)

func dim(n int) Dim { return Dim{strconv.Itoa(n), strconv.Itoa(n), n} }

// layouts are the launch layouts, one per family.
var layouts = []Layout{
	{C: "BinaryLayout", Go: "binaryLayout", Family: "binary",
		Doc: []string{
			"Dims and strides are in elements, innermost last; the launcher merges",
			"dims so rank is usually 1 or 2.",
		},
		Fields: []Field{
			{Type: "i64", C: "n", Go: "n", Comment: "number of elements"},
			{Type: "int", C: "rank", Go: "rank", Comment: "0..BC_MAX_RANK (0 or 1 with mode != 0 for contiguous tensors)"},
			{Type: "int", C: "mode", Go: "mode", Comment: "0 strided, 1 contiguous, 2 contiguous and every pointer 16-byte aligned"},
			{Type: "i64", C: "dim", Go: "dim", Dims: []Dim{dimRank}},
			{Type: "i64", C: "stride", Go: "stride", Dims: []Dim{dim(5), dimRank}, Comment: "dy, a, b, da, db"},
		}},
	{C: "BcastLayout", Go: "bcastLayout", Family: "bcast",
		Doc: []string{
			"The tile phases see dy as a dense [R, C] and each operand as one of the",
			"BCAST_* kinds; the general phases serve one output (out) over dy's",
			"dims split into the output's kept and reduced dims, strides in elements.",
		},
		Fields: []Field{
			{Type: "i64", C: "R C", Go: "r c", Comment: "tile: dy as [R, C]"},
			{Type: "i64", C: "rows", Go: "rows", Comment: "tile: rows per tile, a multiple of BCAST_WARPS"},
			{Type: "i64", C: "nrt nct", Go: "nrt nct", Comment: "tile: tiles along the rows and along the columns"},
			{Type: "i64", C: "ws_a ws_b", Go: "wsA wsB", Comment: "workspace byte offsets of da's and db's partials (opmath)"},
			{Type: "int", C: "phase", Go: "phase", Comment: "BCAST_TILE, BCAST_TILE_FINISH, BCAST_GEN or BCAST_GEN_FINISH"},
			{Type: "int", C: "J", Go: "j", Comment: "tile: packs per lane per row (1 when an operand is BCAST_COL)"},
			{Type: "int", C: "kind_a kind_b", Go: "kindA kindB", Comment: "tile: BCAST_FULL, BCAST_COL, BCAST_ROW or BCAST_SCALAR"},
			{Type: "int", C: "part_a part_b", Go: "partA partB", Comment: "tile: 1 when that output's sums go through partials"},
			{Type: "int", C: "vec", Go: "vec", Comment: "tile: C is a multiple of a pack and every pointer 16-byte aligned"},
			{Type: "int", C: "out", Go: "out", Comment: "general: 0 da, 1 db"},
			{Type: "i64", C: "nk nr", Go: "nk nr", Comment: "general: kept and reduced elements"},
			{Type: "i64", C: "chunk nchunks", Go: "chunk nchunks", Comment: "general: reduced elements per chunk, chunks (1: no partials)"},
			{Type: "int", C: "krank rrank", Go: "krank rrank", Comment: "general: kept and reduced dims in use"},
			{Type: "i64", C: "kdim", Go: "kdim", Dims: []Dim{dimRank}, Comment: "general: kept dims, outermost first"},
			{Type: "i64", C: "rdim", Go: "rdim", Dims: []Dim{dimRank}, Comment: "general: reduced dims, outermost first"},
			{Type: "i64", C: "kstride", Go: "kstride", Dims: []Dim{dim(4), dimRank}, Comment: "general: dy, a, b, output strides of the kept dims"},
			{Type: "i64", C: "rstride", Go: "rstride", Dims: []Dim{dim(3), dimRank}, Comment: "general: dy, a, b strides of the reduced dims"},
		}},
	{C: "LpPoolLayout", Go: "lpLayout", Family: "lppool",
		Fields: []Field{
			{Type: "i64", C: "base", Go: "base", Comment: "first tile of this launch"},
			{Type: "i64", C: "total", Go: "total", Comment: "tiles"},
			{Type: "i64", C: "rows", Go: "rows", Comment: "N*C*H input rows"},
			{Type: "i64", C: "channels", Go: "channels", Comment: "C, to split a row's n*C + c; 0: every tensor addresses nc*stride_c"},
			{Type: "unsigned long long", C: "a_magic h_magic c_magic", Go: "aMagic hMagic cMagic", Comment: "bc_div by segs, by H, by channels"},
			{Type: "i64", C: "stride", Go: "stride", Dims: []Dim{dim(4), dim(4)}, Comment: "x, y, dy, dx: strides of n, c, h, w in elements"},
			{Type: "double", C: "f_col f_row f_corner", Go: "fCol fRow fCorner", Comment: "K/c_w of the last window column, row, and both (1 when full)"},
			{Type: "float", C: "f_col32 f_row32 f_corner32 pad32_", Go: "fCol32 fRow32 fCorn32 _", Comment: "the same rounded to float, for float opmath"},
			{Type: "int", C: "H W Ho Wo", Go: "h w ho wo", Comment: "input and output spatial dims"},
			{Type: "int", C: "kh kw sh sw", Go: "kh kw sh sw"},
			{Type: "int", C: "a_shift h_shift c_shift", Go: "aShift hShift cShift"},
			{Type: "int", C: "segs", Go: "segs", Comment: "segments per row group"},
			{Type: "int", C: "tu", Go: "tu", Comment: "threads (units) per tile row"},
			{Type: "int", C: "tr", Go: "tr", Comment: "rows per tile"},
			{Type: "int", C: "nw_max", Go: "nwMax", Comment: "shared-memory slots of a tile row: window columns per pass"},
			{Type: "int", C: "sw_shift sh_shift tu_shift", Go: "swShift shShift tuShift"},
			{Type: "unsigned", C: "sw_magic sh_magic tu_magic", Go: "swMagic shMagic tuMagic", Comment: "lp_div32 by sw, sh and tu"},
			{Type: "int", C: "pad_", Go: "_"},
		}},
	{C: "ReduceLayout", Go: "reduceLayout", Family: "reduce",
		Fields: []Field{
			{Type: "i64", C: "k", Go: "k", Comment: "reduced axis length (>= 1)"},
			{Type: "i64", C: "slices", Go: "slices", Comment: "S = numel / k"},
			{Type: "i64", C: "chunk", Go: "chunk", Comment: "positions per chunk (k when nchunks == 1)"},
			{Type: "i64", C: "nchunks", Go: "nchunks", Comment: "chunks per slice"},
			{Type: "i64", C: "tiles", Go: "tiles", Comment: "row: S*nchunks; col: ceil(S/W)*nchunks"},
			{Type: "double", C: "scale", Go: "scale", Comment: "mean: 1/N (in opmath); var/std: 2/(N - correction)"},
			{Type: "int", C: "mapping", Go: "mapping", Comment: "RED_ROW or RED_COL"},
			{Type: "int", C: "group", Go: "group", Comment: "row: threads per tile G; col: threads along k H"},
			{Type: "int", C: "vec", Go: "vec", Comment: "row: x and dx step 1 along the axis (packs where aligned)"},
			{Type: "int", C: "reverse", Go: "reverse", Comment: "walk the tiles last to first"},
			{Type: "int", C: "srank", Go: "srank", Comment: "slice dims in use, 0..RED_SRANK"},
			{Type: "int", C: "cvec", Go: "cvec", Comment: "col: slices per thread: RedColVec<T, Op>, half of it, or 1"},
			{Type: "int", C: "phase", Go: "phase", Comment: "apply kernel: RED_PHASE_TOTAL or RED_PHASE_APPLY"},
			{Type: "int", C: "pad_", Go: "_"},
			{Type: "i64", C: "sdim", Go: "sdim", Dims: []Dim{dimSlice}, Comment: "slice dims, outermost first"},
			{Type: "i64", C: "sstride", Go: "sstride", Dims: []Dim{dim(4), dimSlice}, Comment: "x, y, dy, dx strides of the slice dims"},
			{Type: "i64", C: "kstride", Go: "kstride", Dims: []Dim{dim(2)}, Comment: "x, dx strides along the axis"},
			{Type: "i64", C: "vstride", Go: "vstride", Dims: []Dim{dim(2)}, Comment: "y, dy strides of the innermost slice dim"},
			{Go: "flat", GoStruct: "reduceFlat",
				Note: []string{
					"The flat kernel's (x viewed as [O, k, I], all operands dense; the",
					"strip kernel takes fip = I and fmagic[0] dividing by its strips per",
					"outer index, see reduce_strip):",
				},
				GoDoc: []string{
					"reduceFlat is the flat kernel's part of reduceLayout (reduce_flat in",
					"gen/reduce_flat.cuh): x seen as [O, k, I]; packs of 16 bytes. The plan",
					"keeps it (ReduceBackward.flat).",
				},
				Sub: []Field{
					{Type: "i64", C: "fpacks", Go: "packs", Comment: "16-byte packs of x and dx"},
					{Type: "i64", C: "fip", Go: "ip", Comment: "I/N packs across the inner dims, 0 when I == 1, -I when I divides N (rows of I slices)"},
					{Type: "unsigned long long", C: "fmagic", Go: "magic", Dims: []Dim{dim(2)}, Comment: "bc_div by the packs of one outer index, by fip (seg: by a segment's packs, by its elements)"},
					{Type: "int", C: "fshift", Go: "shift", Dims: []Dim{dim(2)}},
				}},
		}},
	{C: "ScanLayout", Go: "scanLayout", Family: "scan",
		Fields: []Field{
			{Type: "i64", C: "n", Go: "n", Comment: "elements along the scan axis (>= 1)"},
			{Type: "i64", C: "nslices", Go: "nslices", Comment: "slices: the product of the other dims"},
			{Type: "i64", C: "chunks", Go: "chunks", Comment: "tiles per slice; > 1 chains tiles through the workspace"},
			{Type: "i64", C: "units", Go: "units", Comment: "look-back units: slices (row) or 32-slice groups (col); short: staged slice stride"},
			{Type: "int", C: "srank", Go: "srank", Comment: "merged slice dims, 0..SCAN_SRANK"},
			{Type: "int", C: "reverse", Go: "reverse", Comment: "the forward scan ran from the end of the axis"},
			{Type: "int", C: "phase", Go: "phase", Comment: "the kernel's phase: SCAN_MAIN, SCAN_FWD_TILES, ... (gen/spec_consts.go)"},
			{Type: "int", C: "split", Go: "split", Comment: "row: threads per slice; col: warps along the axis; short: slices a thread"},
			{Type: "int", C: "items", Go: "items", Comment: "col: elements per thread per tile (row: ScanItems::row); short: run length"},
			{Type: "int", C: "vec", Go: "vec", Comment: "row: every operand has unit stride along the axis; short: the form"},
			{Type: "i64", C: "sdim", Go: "sdim", Dims: []Dim{dimSlice}, Comment: "slice dims, outermost first"},
			{Type: "unsigned long long", C: "smagic", Go: "smagic", Dims: []Dim{dimSlice}, Comment: "division by sdim: see bc_div"},
			{Type: "int", C: "sshift", Go: "sshift", Dims: []Dim{dimRank}, Comment: "SCAN_SRANK + 1 shifts"},
			{Type: "i64", C: "sstride", Go: "sstride", Dims: []Dim{dim(4), dimSlice}, Comment: "dy, x, y, dx strides of the slice dims"},
			{Type: "i64", C: "astride", Go: "astride", Dims: []Dim{dim(4)}, Comment: "dy, x, y, dx strides along the axis"},
			{Type: "i64", C: "ws_flags", Go: "wsFlags", Comment: "workspace byte offsets: tile flags (double opmath),"},
			{Type: "i64", C: "ws_agg", Go: "wsAgg", Comment: "tile maps,"},
			{Type: "i64", C: "ws_incl", Go: "wsIncl", Comment: "values after them,"},
			{Type: "i64", C: "ws_fwd", Go: "wsFwd", Comment: "forward values,"},
			{Type: "i64", C: "ws_fix", Go: "wsFix", Comment: "take-over records (ext order),"},
			{Type: "i64", C: "ws_unitflag", Go: "wsUnitFlag", Comment: "unit flags (col cumprod); the ticket counter is at 0"},
			{Type: "unsigned long long", C: "tmagic", Go: "tmagic",
				Note: []string{
					"A col ticket t names tile row t / units and look-back unit t % units:",
					"bc_div's constants for the units (0 in the row mapping, which divides).",
				}},
			{Type: "int", C: "tshift", Go: "tshift"},
			{Type: "int", C: "lsplit", Go: "lsplit", Comment: "log2(split): split is a power of two"},
			{Type: "i64", C: "ws_fill", Go: "wsFill",
				Note: []string{
					"The fill blocks (see scan_take): the first `fillers` tickets set",
					"[SCAN_COUNTER, ws_fill) of the workspace to SCAN_NONE_BYTE bytes, a share each",
					"(0: the row mapping's forward-state passes fill it).",
				}},
			{Type: "int", C: "fillers", Go: "fillers"},
			{Type: "int", C: "pitch", Go: "pitch", Comment: "tall: shared memory elements between two runs of a tile (ops' tallPitch)"},
		}},
}
