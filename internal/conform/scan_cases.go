package conform

// The scan suite's case lists: shapes, axes and layouts.

import (
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func scanSame(f func([]int) Layout) [4]func([]int) Layout { return [4]func([]int) Layout{f, f, f, f} }

// ScanCases is the suite: scan lengths 1, 2, 31, 32, 33, 1000, 4097 and
// 100000 (tile tails; one, two and 25 chained row tiles), every axis of
// rank-3 tensors (both mappings, chained col tiles over more than one
// look-back group), chained col tiles over whole 32-slice groups, short
// rows packed several per block, rows chained over
// several groups, every layout kind and mixed layouts, in place, empty
// tensors, short axes over 2^14 slices (the short mapping); normal,
// special and exact values. quick trims it for selftest
// and compute-sanitizer.
func ScanCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, v ScanValues) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: v})
	}
	lengths := []int{1, 2, 31, 32, 33, 1000, 4097, 100000}
	if quick {
		lengths = []int{1, 33, 1000, 4097}
	}
	for _, n := range lengths {
		add([]int{n}, 0, scanSame(Contiguous), ScanNormal)
		add([]int{n}, 0, scanSame(Unaligned), ScanExact)
	}
	add([]int{1000}, 0, scanSame(Contiguous), ScanSpecial)
	// bf16 cummax and cummin along an outer axis take the colpair kernel
	// (two slices a lane) where the operands allow 32-bit words: a last
	// 64-slice unit with one pair of slices, and (full set) two slice dims
	// that do not merge and tiles in several waves of blocks on an H100
	// (752 tiles of 176 rows; three blocks per SM).
	add([]int{700, 66}, 0, scanSame(Contiguous), ScanSpecial)
	add([]int{33}, 0, scanSame(Contiguous), ScanSpecial)
	mixed := [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}
	for _, s := range [][]int{{6, 7, 33}, {40, 33, 3}, {2, 300, 70}} {
		for axis := range s {
			add(s, axis, scanSame(Contiguous), ScanNormal)
			if quick {
				continue
			}
			add(s, axis, scanSame(Padded), ScanExact)
			add(s, axis, scanSame(Transposed), ScanNormal)
			add(s, axis, mixed, ScanSpecial)
		}
	}
	add([]int{37, 300}, 1, scanSame(Contiguous), ScanNormal)
	add([]int{100, 7}, 1, scanSame(Contiguous), ScanExact)
	add([]int{64, 100}, 1, scanSame(Padded), ScanSpecial)
	add([]int{1500, 33}, 0, scanSame(Contiguous), ScanNormal)
	// Chained col tiles over whole 32-slice groups, contiguous and not (a
	// partial last tile).
	add([]int{1000, 64}, 0, scanSame(Contiguous), ScanNormal)
	// NaN in x of cumprod: the forward state computed in the main launch
	// (units whose slices end in NaN, tiles that wait for it).
	add([]int{333, 128}, 0, scanSame(Contiguous), ScanSpecial)
	if !quick {
		add([]int{600, 3, 32}, 0, scanSame(Contiguous), ScanExact)
		add([]int{1000, 64}, 0, scanSame(Unaligned), ScanNormal)
		add([]int{1000, 64}, 0, scanSame(Padded), ScanExact)
		add([]int{5000, 33}, 0, scanSame(Contiguous), ScanExact)
		add([]int{5000, 33}, 0, scanSame(Transposed), ScanSpecial)
		add([]int{3, 5000}, 1, scanSame(Contiguous), ScanSpecial)
		add([]int{2, 300000}, 1, scanSame(Contiguous), ScanNormal)
		add([]int{2, 300000}, 1, scanSame(Unaligned), ScanExact)
		add([]int{4, 1, 9000, 1}, 2, scanSame(Contiguous), ScanNormal)
		// Col tiles in several waves of blocks on an H100 for most ops and
		// dtypes (272 to 1040 tiles of 16 look-back units).
		add([]int{4097, 512}, 0, scanSame(Contiguous), ScanNormal)
		add([]int{2, 600, 6}, 1, scanSame(Contiguous), ScanNormal)
		cs = append(cs, ScanCase{Shape: []int{8193, 1024}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanNormal,
			Ops: []ops.ScanOp{ops.ScanCummax, ops.ScanCummin}, DTypes: []dtype.DType{dtype.BF16}})
	}
	// The colstrip kernel (f16 and bf16 cummax and cummin along an outer axis, a
	// block per strip of 32 slices over the whole axis in stages of 512
	// rows; TestScanStripGPU takes it wherever the operands allow): a
	// partial strip and two stages exactly, two slice dims that do not
	// merge (strips of a later outer index) with a partial last stage,
	// axes shorter than a stage, and (full set) 128 strips, which Run
	// takes it for by itself on an H100.
	add([]int{1024, 48}, 0, scanSame(Contiguous), ScanExact)
	add([]int{3, 700, 40}, 1, scanSame(Contiguous), ScanSpecial)
	add([]int{2, 64}, 0, scanSame(Contiguous), ScanSpecial)
	add([]int{31, 32}, 0, scanSame(Contiguous), ScanNormal)
	if !quick {
		cs = append(cs, ScanCase{Shape: []int{600, 4096}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial,
			Ops: []ops.ScanOp{ops.ScanCummax, ops.ScanCummin}, DTypes: []dtype.DType{dtype.F16, dtype.BF16}})
	}
	cs = append(cs, ScanCase{Shape: []int{9, 1000}, Axis: 1, Layouts: scanSame(Contiguous), InPlace: true})
	cs = append(cs, ScanCase{Shape: []int{700, 9}, Axis: 0, Layouts: scanSame(Padded), InPlace: true})
	cs = append(cs, ScanCase{Shape: []int{700, 64}, Axis: 0, Layouts: scanSame(Contiguous), InPlace: true})
	// dx over x with NaN in x of cumprod: the forward state's walk reads x
	// of tiles whose dx may be written already (gen/scan_fwd.cuh,
	// scan_fwd_unit).
	cs = append(cs, ScanCase{Shape: []int{700, 64}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial,
		OverX: true})
	add([]int{0, 5}, 1, scanSame(Contiguous), ScanNormal)
	add([]int{4, 0}, 1, scanSame(Contiguous), ScanNormal)
	// The short mapping as the default policy takes it (2^14 slices of 4
	// along either axis); ScanShortCases has the rest.
	cs = append(cs, ScanShortDefaultCases(true)...)
	cs = append(cs, ScanNonFiniteCases(quick)...)
	return append(cs, ScanUnderflowCases(quick)...)
}

// ScanUnderflowCases are cumprod's ScanUnderflow cases: the col mapping
// with chained tiles (axis 0 of [20000, 64]: y underflows in an early
// tile, the events come in later ones; a partial unit and a partial last
// tile; strided and misaligned operands; dx over x, which the forward
// state's reads of x must see before any dx), one col tile, and the same
// data along the innermost axis (the row mapping, chained and not) for
// comparison.
func ScanUnderflowCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, overX bool) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: ScanUnderflow, OverX: overX,
			Ops: []ops.ScanOp{ops.ScanCumprod}})
	}
	add([]int{20000, 64}, 0, scanSame(Contiguous), false)
	add([]int{64, 20000}, 1, scanSame(Contiguous), false)
	add([]int{3000, 40}, 0, scanSame(Contiguous), false)
	add([]int{40, 3000}, 1, scanSame(Contiguous), false)
	add([]int{100, 33}, 0, scanSame(Contiguous), false)
	add([]int{2000, 64}, 0, scanSame(Contiguous), true)
	if !quick {
		add([]int{20000, 64}, 0, scanSame(Unaligned), false)
		add([]int{5, 4000, 7}, 1, [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}, false)
		add([]int{7, 4000, 5}, 1, scanSame(Transposed), false)
		add([]int{30000, 3, 32}, 0, scanSame(Contiguous), false)
	}
	return cs
}

// ScanTallCases are the tall mapping's shapes (an outer axis over few
// slices of 2 to 16 contiguous columns; TestScanTallGPU runs them with
// BARACUDA_SCAN_TALL=always, and Run takes the col kernel where the
// operands do not allow it): for C in {2, 3, 4, 7, 8, 16} axis lengths
// around the tile sizes (128 to 1024 rows by C, op and dtype) and
// several tiles,
// and (full set) 100003 rows; batches [A, n, C] contiguous, with padded
// and misaligned batch strides, inner dims that merge; in place and over
// x; normal, special, exact and non-finite values. Layouts the kernel
// cannot serve (padded rows, transposed) check the fallback.
func ScanTallCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, v ScanValues) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: v})
	}
	lengths := []int{1, 33, 255, 256, 257, 511, 512, 513, 1023, 1025, 5000}
	if quick {
		lengths = []int{257, 513, 5000}
	}
	for _, c := range []int{2, 3, 4, 7, 8, 16} {
		for i, n := range lengths {
			add([]int{n, c}, 0, scanSame(Contiguous), ScanValues(i%3))
		}
		add([]int{3000, c}, 0, scanSame(Unaligned), ScanExact)
		if !quick {
			add([]int{100003, c}, 0, scanSame(Contiguous), ScanValues(c%3))
		}
	}
	add([]int{3, 5000, 4}, 1, scanSame(Contiguous), ScanNormal)
	add([]int{3, 5000, 4}, 1, scanSame(scanBatchPadded), ScanSpecial)
	add([]int{2, 3000, 2, 3}, 1, scanSame(Contiguous), ScanExact)
	add([]int{3000, 2, 3}, 0, [4]func([]int) Layout{Contiguous, Unaligned, Contiguous, scanBatchPadded}, ScanSpecial)
	add([]int{5, 2000, 7}, 1, [4]func([]int) Layout{scanBatchPadded, Contiguous, Unaligned, Contiguous}, ScanNormal)
	add([]int{2000, 4}, 0, scanSame(Padded), ScanNormal)
	add([]int{2000, 4}, 0, [4]func([]int) Layout{Contiguous, Transposed, Contiguous, Contiguous}, ScanSpecial)
	add([]int{3000, 4}, 0, scanSame(Contiguous), ScanNonFinite)
	add([]int{4, 3000, 3}, 1, scanSame(Contiguous), ScanNonFinite)
	if !quick {
		add([]int{100003, 3}, 0, scanSame(Contiguous), ScanNonFinite)
		add([]int{8, 20000, 8}, 1, scanSame(Contiguous), ScanSpecial)
		add([]int{16, 9000, 2}, 1, scanSame(Contiguous), ScanNormal)
	}
	cs = append(cs, ScanCase{Shape: []int{3000, 4}, Axis: 0, Layouts: scanSame(Contiguous), InPlace: true})
	cs = append(cs, ScanCase{Shape: []int{3000, 3}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial,
		OverX: true})
	return cs
}

// scanBatchPadded lays a shape out densely but for the outermost dim,
// whose stride is 8 elements more than dense: batches of a tall scan
// that start 16 bytes apart from where a dense layout puts them.
func scanBatchPadded(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		s *= shape[d]
	}
	if len(shape) > 1 {
		strides[0] += 8
	}
	return Layout{Name: "batchpadded", Strides: strides, Span: spanOf(shape, strides)}
}

// ScanNonFiniteCases are the ScanNonFinite cases: one tile and chained
// tiles of both mappings (the row kernel's forward-state passes, the col
// kernel's state in the main launch), an inner axis of a strided rank-3
// tensor, short slices; each slice takes one of the patterns.
func ScanNonFiniteCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: ScanNonFinite})
	}
	add([]int{64, 9}, 1, scanSame(Contiguous))
	add([]int{40, 300}, 1, scanSame(Contiguous))
	add([]int{8, 9000}, 1, scanSame(Contiguous))
	add([]int{300, 33}, 0, scanSame(Contiguous))
	add([]int{3000, 40}, 0, scanSame(Contiguous))
	add([]int{6, 200, 7}, 1, [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded})
	if !quick {
		add([]int{4, 100000}, 1, scanSame(Contiguous))
		add([]int{9000, 64}, 0, scanSame(Unaligned))
	}
	return cs
}

// ScanTallRowCases are the tallrow kernel's shapes (the tall mapping
// over 4 contiguous columns as one row of row vectors; TestScanTallRowGPU
// runs them with BARACUDA_SCAN_TALLROW=always): [n, 4] along axis 0 for
// axis lengths around its tiles (512, 1024 and 2048 rows by op and dtype,
// runs of 2 to 8 rows) and several tiles, with every kind of values
// (ScanSaturated: clamped inputs, ties at every take-over),
// inner dims that merge into 4, batches [A, n, 4] with padded and
// misaligned batch strides, misaligned operands (no packs), in place and
// over x. The other widths (1 to 8, 16) check that plans fall back to
// the tall or col kernel, as do layouts tallrow cannot serve (padded
// rows, transposed).
func ScanTallRowCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, v ScanValues) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: v})
	}
	lengths := []int{1, 2, 3, 255, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 3077, 9000}
	if quick {
		lengths = []int{3, 513, 1025, 2049, 9000}
	}
	for i, n := range lengths {
		add([]int{n, 4}, 0, scanSame(Contiguous), ScanValues(i%6))
	}
	add([]int{9001, 4}, 0, scanSame(Contiguous), ScanSaturated)
	add([]int{4099, 2, 2}, 0, scanSame(Contiguous), ScanExact)
	add([]int{3000, 4}, 0, scanSame(Unaligned), ScanSpecial)
	add([]int{3000, 4}, 0, [4]func([]int) Layout{Contiguous, Unaligned, Contiguous, Contiguous}, ScanNormal)
	add([]int{3, 5000, 4}, 1, scanSame(Contiguous), ScanNormal)
	add([]int{3, 5000, 4}, 1, scanSame(scanBatchPadded), ScanSpecial)
	add([]int{2, 3001, 4}, 1, [4]func([]int) Layout{Contiguous, scanBatchPadded, Unaligned, Contiguous}, ScanExact)
	add([]int{2000, 4}, 0, scanSame(Padded), ScanNormal)
	add([]int{2000, 4}, 0, [4]func([]int) Layout{Contiguous, Transposed, Contiguous, Contiguous}, ScanSpecial)
	for _, c := range []int{1, 2, 3, 5, 6, 7, 8, 16} {
		add([]int{2049, c}, 0, scanSame(Contiguous), ScanValues(c%6))
	}
	if !quick {
		add([]int{100003, 4}, 0, scanSame(Contiguous), ScanNormal)
		add([]int{100003, 4}, 0, scanSame(Contiguous), ScanSpecial)
		add([]int{100003, 4}, 0, scanSame(Contiguous), ScanSaturated)
		add([]int{200000, 4}, 0, scanSame(Contiguous), ScanUnderflow)
		add([]int{9, 20000, 4}, 1, scanSame(Contiguous), ScanExact)
	}
	cs = append(cs, ScanCase{Shape: []int{3000, 4}, Axis: 0, Layouts: scanSame(Contiguous), InPlace: true})
	cs = append(cs, ScanCase{Shape: []int{3001, 4}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial,
		OverX: true})
	return cs
}
