package ops

// Launch geometry shared by the families.

// gridStride returns the number of blocks for a grid-stride loop over work
// items: enough to cover the work, at most what the GPU holds resident at
// once (more blocks would only queue behind the first wave).
func gridStride(work int64, block int, lf *loadedFunction) uint32 {
	blocks := (work + int64(block) - 1) / int64(block)
	limit := int64(lf.sms * lf.blocksPerSM)
	if blocks > limit {
		blocks = limit
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
