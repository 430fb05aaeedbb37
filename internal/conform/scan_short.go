package conform

import (
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// ScanShortLengths are the axis lengths of the short mapping's cases: one
// element, packs of whole slices (2, 4, 8 and 16 elements of 16-bit or
// 32-bit types), lengths that split packs (3, 5, 31), one partial run and
// several runs of 8 (the kernel's run), the longest axis it takes (32).
var ScanShortLengths = []int{1, 2, 3, 4, 5, 8, 16, 31, 32}

// ScanShortCases are the cases of the short mapping (gen/scan_short.cuh),
// which TestScanShortGPU runs with BARACUDA_SCAN_SHORT=always so that every
// axis of at most 32 elements takes it however few slices:
//   - a short innermost axis, [300, k] along axis 1 (two full blocks of 128
//     slices and a partial one), staged through shared memory: contiguous
//     (16-byte chunks), unaligned (element copies), and a rank-3 tensor
//     whose slice dims merge;
//   - the same axis where staging does not apply, so each thread reads its
//     slice in place: padded rows, a transposed layout (axis stride not
//     1), one operand padded among contiguous ones;
//   - a short outer axis, [k, 300] along axis 0 and [3, k, 100] along axis 1
//     (two slice dims that do not merge), contiguous, padded, transposed
//     and mixed;
//   - dx over dy and over x, staged and in place;
//   - every value kind: normal, special (NaN, ±inf, zeros, ties), exact
//     and the non-finite patterns of cumprod and logcumsumexp.
//
// ScanShortDefaultCases holds the ones the default policy takes by itself
// (at least 2^14 slices).
func ScanShortCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, v ScanValues) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: v})
	}
	kinds := []ScanValues{ScanNormal, ScanSpecial, ScanExact, ScanNonFinite}
	mixed := [4]func([]int) Layout{Contiguous, Padded, Contiguous, Contiguous}
	outerMixed := [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}
	for i, k := range ScanShortLengths {
		v := kinds[i%len(kinds)]
		add([]int{300, k}, 1, scanSame(Contiguous), v)
		add([]int{k, 300}, 0, scanSame(Contiguous), kinds[(i+1)%len(kinds)])
		add([]int{300, k}, 1, scanSame(Contiguous), ScanSpecial)
		add([]int{k, 300}, 0, scanSame(Contiguous), ScanSpecial)
		if quick {
			continue
		}
		add([]int{300, k}, 1, scanSame(Unaligned), kinds[(i+2)%len(kinds)])
		add([]int{300, k}, 1, scanSame(Padded), ScanExact)
		add([]int{300, k}, 1, scanSame(Transposed), ScanNormal)
		add([]int{300, k}, 1, mixed, ScanSpecial)
		add([]int{7, 45, k}, 2, scanSame(Contiguous), ScanNonFinite)
		add([]int{k, 300}, 0, scanSame(Padded), ScanExact)
		add([]int{k, 300}, 0, outerMixed, ScanNonFinite)
		add([]int{3, k, 100}, 1, scanSame(Contiguous), v)
		add([]int{3, k, 100}, 1, scanSame(Transposed), ScanSpecial)
	}
	// Shifted by 8 elements: 16-byte aligned chunks for 16-bit types,
	// others not, one slice per block short of a full block.
	add([]int{255, 3}, 1, scanSame(Shifted(8)), ScanNormal)
	cs = append(cs,
		ScanCase{Shape: []int{300, 5}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanSpecial, InPlace: true},
		ScanCase{Shape: []int{300, 16}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanSpecial, OverX: true},
		ScanCase{Shape: []int{300, 31}, Axis: 1, Layouts: scanSame(Padded), Values: ScanNonFinite, OverX: true},
		ScanCase{Shape: []int{20, 300}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial, InPlace: true},
		ScanCase{Shape: []int{17, 300}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanNonFinite, OverX: true},
	)
	return append(cs, ScanShortDefaultCases(quick)...)
}

// ScanShortDefaultCases are short axes over 2^14 slices and more, which the
// default policy takes the short mapping for: both layouts of the sweep
// (k slices along the innermost axis, an outer axis of k rows), a partial
// last block, unaligned.
func ScanShortDefaultCases(quick bool) []ScanCase {
	cs := []ScanCase{
		{Shape: []int{16384, 4}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanSpecial},
		{Shape: []int{4, 16384}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial},
	}
	if !quick {
		cs = append(cs,
			ScanCase{Shape: []int{16411, 3}, Axis: 1, Layouts: scanSame(Unaligned), Values: ScanNormal},
			ScanCase{Shape: []int{2, 8, 8200}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanExact},
			ScanCase{Shape: []int{16400, 32}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanNonFinite,
				DTypes: []dtype.DType{dtype.F32, dtype.BF16, dtype.F64}},
			ScanCase{Shape: []int{32, 16400}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanNormal,
				Ops: []ops.ScanOp{ops.ScanCumprod, ops.ScanCummax}},
		)
	}
	return cs
}

// ScanShortWideLengths are the axis lengths of ScanShortWideCases: those
// with several slices a thread in the wide forms (1 to 16 elements; 2 to
// 16 slices a thread by dtype), runs of 4 (1 to 4) and of 8 (5, 16), and
// one past the slices a thread (32).
var ScanShortWideLengths = []int{1, 2, 3, 4, 5, 16, 32}

// ScanShortWideCases are the wide forms' cases (gen/scan_short.cuh,
// ops/scan_short.go), which TestScanShortWideGPU runs with
// BARACUDA_SCAN_SHORT=always and BARACUDA_SCAN_SHORT_WIDE=always, so that
// every staged block takes its most slices a thread (up to 2048 slices a
// block):
//   - the inner form, [4500, k] along axis 1: two or more full blocks and
//     a partial one whose chunk ends inside a 16-byte pack; unaligned
//     (element copies), shifted by 8 elements (16-byte packs for 16-bit
//     types only), in place and over x;
//   - the outer form, [k, 4500] along axis 0: several blocks a row, the
//     last partial and its rows ending inside a pack; rows padded to a
//     multiple of 8 elements (aligned rows, not contiguous), padded by
//     one (element copies), unaligned, one operand transposed among
//     contiguous ones (the direct form), in place and over x;
//     [3, k, 1000] along axis 1: rows of two slice dims that do not
//     merge, shorter than a block's slices; [k, 4, 520] along axis 0,
//     whose slice dims merge;
//   - every value kind.
func ScanShortWideCases(quick bool) []ScanCase {
	var cs []ScanCase
	add := func(shape []int, axis int, l [4]func([]int) Layout, v ScanValues) {
		cs = append(cs, ScanCase{Shape: shape, Axis: axis, Layouts: l, Values: v})
	}
	kinds := []ScanValues{ScanNormal, ScanSpecial, ScanExact, ScanNonFinite}
	mixed := [4]func([]int) Layout{Contiguous, Transposed, Contiguous, Contiguous}
	for i, k := range ScanShortWideLengths {
		v := kinds[i%len(kinds)]
		add([]int{4500, k}, 1, scanSame(Contiguous), v)
		add([]int{k, 4500}, 0, scanSame(Contiguous), kinds[(i+1)%len(kinds)])
		if quick && k != 4 {
			continue
		}
		add([]int{4500, k}, 1, scanSame(Contiguous), ScanSpecial)
		add([]int{k, 4500}, 0, scanSame(Contiguous), ScanSpecial)
		add([]int{4500, k}, 1, scanSame(Unaligned), kinds[(i+2)%len(kinds)])
		add([]int{k, 4500}, 0, scanSame(ScanRowsPadded), kinds[(i+3)%len(kinds)])
		add([]int{k, 4500}, 0, scanSame(Padded), ScanExact)
		add([]int{k, 4500}, 0, scanSame(Unaligned), ScanNonFinite)
		add([]int{3, k, 1000}, 1, scanSame(Contiguous), v)
		if quick {
			continue
		}
		add([]int{4500, k}, 1, scanSame(Shifted(8)), ScanNormal)
		add([]int{k, 4500}, 0, mixed, ScanSpecial)
		add([]int{k, 4, 520}, 0, scanSame(Contiguous), ScanNonFinite)
	}
	cs = append(cs,
		ScanCase{Shape: []int{4500, 4}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanSpecial, InPlace: true},
		ScanCase{Shape: []int{4500, 3}, Axis: 1, Layouts: scanSame(Contiguous), Values: ScanNonFinite, OverX: true},
		ScanCase{Shape: []int{4, 4500}, Axis: 0, Layouts: scanSame(Contiguous), Values: ScanSpecial, InPlace: true},
		ScanCase{Shape: []int{5, 4500}, Axis: 0, Layouts: scanSame(ScanRowsPadded), Values: ScanNonFinite, OverX: true},
	)
	return cs
}

// ScanRowsPadded lays a shape of rank 2 or more out with its innermost
// rows a multiple of 8 elements and at least 8 longer than the dim: each
// row starts 16-byte aligned for every dtype, and no row is contiguous
// with the next.
func ScanRowsPadded(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		if d == len(shape)-1 {
			s = (shape[d]+7)/8*8 + 8
		} else {
			s *= shape[d]
		}
	}
	return Layout{Name: "rowspadded", Strides: strides, Span: spanOf(shape, strides)}
}
