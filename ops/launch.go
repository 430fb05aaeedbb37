package ops

import "math/bits"

// Launch geometry shared by the families.

// maxGridX is the most blocks a launch's x dimension holds.
const maxGridX = 1<<31 - 1

// gridCover returns the number of blocks for a grid-stride kernel over work
// items: one block per block of items, so each thread takes one item and
// the GPU starts new blocks as others finish (a grid capped at the resident
// blocks, each looping over several items, is slower on an H100 for every
// binary case: its blocks end unevenly); only beyond maxGridX blocks do the
// threads loop.
func gridCover(work int64, block int) uint32 {
	blocks := (work + int64(block) - 1) / int64(block)
	if blocks > maxGridX {
		blocks = maxGridX
	}
	if blocks < 1 {
		blocks = 1
	}
	return uint32(blocks)
}

// elemView is an elementwise iteration space shared by up to five tensors
// of one shape, with dims of size 1 dropped and adjacent dims merged where
// every tensor allows it. Contiguous tensors collapse to rank <= 1.
type elemView struct {
	n      int64
	rank   int
	dim    [MaxRank]int64
	stride [5][MaxRank]int64
}

// collapse builds the view of shape for the given tensors (nil entries are
// skipped operands: their strides are left 0).
func collapse(shape []int, ts *[5]*Tensor) elemView {
	var v elemView
	v.n = numel(shape)
	for d := range shape {
		if shape[d] == 1 {
			continue
		}
		r := v.rank
		v.dim[r] = int64(shape[d])
		for t, tp := range ts {
			if tp != nil {
				v.stride[t][r] = tp.strideOf(d)
			}
		}
		// Merge into the previous dim when, for every tensor, stepping the
		// outer dim equals stepping over the whole inner one.
		if r > 0 {
			ok := true
			for t, tp := range ts {
				if tp != nil && v.stride[t][r-1] != v.stride[t][r]*v.dim[r] {
					ok = false
					break
				}
			}
			if ok {
				v.dim[r-1] *= v.dim[r]
				for t := range ts {
					v.stride[t][r-1] = v.stride[t][r]
				}
				continue
			}
		}
		v.rank++
	}
	return v
}

// contiguous reports whether every given tensor is one dense run.
func (v *elemView) contiguous(ts *[5]*Tensor) bool {
	if v.rank == 0 {
		return true
	}
	if v.rank > 1 {
		return false
	}
	for t, tp := range ts {
		if tp != nil && v.stride[t][0] != 1 {
			return false
		}
	}
	return true
}

// divMagic returns the constants of bc_div (gen/common.cuh), which divides
// any 0 <= n < 2^62 by d >= 1 with a multiply-high: for a power of two
// (0, log2 d); otherwise (ceil(2^(62+l)/d), l-2) with 2^(l-1) < d <= 2^l.
// Granlund and Montgomery (1994), theorem 4.2: m*d lies in
// [2^(62+l), 2^(62+l) + 2^l], so floor(m*n / 2^(62+l)) = floor(n/d).
func divMagic(d int64) (magic uint64, shift int32) {
	u := uint64(d)
	l := bits.Len64(u - 1) // ceil(log2 d)
	if u&(u-1) == 0 {
		return 0, int32(l)
	}
	// 2^(62+l) as hi:lo, with hi = 2^(l-2) < d so Div64 cannot overflow.
	q, r := bits.Div64(1<<(l-2), 0, u)
	if r != 0 {
		q++
	}
	return q, int32(l - 2)
}
