package ops

// The flat path of var and std. Along an outer axis of few slices (x
// seen as [O, k, I] with I dividing a 16-byte pack's elements: 2 or 4 of
// f16/bf16, 2 of f32, or equal to them: 8 of f16/bf16, 4 of f32, 2 of
// f64) the col mapping has fewer slices than threads across a block, so
// most of its threads idle, and the strip kernel needs I a multiple of 16
// or 32 elements; along the innermost axis (I == 1) of few long slices
// the row mapping splits them. On dense operands whose col (or row)
// slices split, Run takes instead the flat kernel's two passes
// (gen/reduce_flat_stats.cuh): its statistics pass, a block per tile of
// consecutive packs of one outer index (flatStatsGeometry), each tile's
// per-slice sums stored as one chunk's partials in the col layout of the
// workspace; then the flat kernel's apply pass, which walks the same tiles
// last to first, each from its end, so that it reads first the x that the
// statistics pass read last and L2 may still hold, each block combining
// the partials of its tile's slices itself (reduceFlatReuseEnv=never: the
// apply kernel's totals, redPhaseTotal as after the stats kernel, then a
// pack per thread over the flat index). x is read twice, as by the stats
// and apply kernels, but in 16-byte packs by every thread.

// reduceFlatStatsEnv, read when a plan is made: "never" keeps var and std
// off the flat path, "always" takes it wherever the shape allows it (I == 1,
// I dividing a pack or I equal to a pack's elements, with k*I a multiple of
// a pack; so that tests reach it with small tensors), "outer" only where
// I > 1 and the slices split; unset, it takes it where the slices split. It
// is a kernel developer's knob; users leave it unset.
const reduceFlatStatsEnv = "BARACUDA_REDUCE_FLAT_STATS"

// reduceFlatReuseEnv, read when a plan is made: "never" gives the flat
// path's apply pass a pack per thread over the flat index, first to last,
// after the apply kernel's totals, instead of the statistics pass's tiles
// last to first with each block's own totals (L.reverse), which it takes
// otherwise. A kernel developer's knob.
const reduceFlatReuseEnv = "BARACUDA_REDUCE_FLAT_REUSE"

// redFlatStatsMinPacks is the fewest packs a thread of a statistics tile
// takes when the tiles are cut finer for parallelism.
const redFlatStatsMinPacks = 4

// flatStatsGroups is G, the slices of one outer index whose rows a pack
// of the flat layout f (ip <= 1) holds, n elements a pack: 1 (I == 1), I
// (ip = -I) or n (ip == 1: I == n); red_flat_groups in
// gen/reduce_flat_stats.cuh.
func flatStatsGroups(f reduceFlat, n int64) int64 {
	switch {
	case f.ip < 0:
		return -f.ip
	case f.ip > 0:
		return n
	}
	return 1
}

// flatStatsGeometry cuts the flat layout f (ip <= 1) of slices slices of k
// elements (size bytes each) into the statistics pass's tiles: nchunks
// chunks of chunk consecutive packs per outer index (P = k*G/N packs of
// it, G from flatStatsGroups), about redTargetThreads/redBlock tiles in
// all, but at least redFlatStatsMinPacks packs a thread.
func flatStatsGeometry(f reduceFlat, slices, k int64, size int) reduceGeom {
	n := int64(16 / size)
	g := flatStatsGroups(f, n)
	packs, outer := k*g/n, slices/g
	c := min(ceilDiv(redTargetThreads/redBlock, outer), ceilDiv(packs, redBlock*redFlatStatsMinPacks))
	c = max(c, 1)
	chunk := ceilDiv(packs, c)
	nchunks := ceilDiv(packs, chunk)
	return reduceGeom{chunk: chunk, nchunks: nchunks, tiles: outer * nchunks}
}

// planFlatStats sets up the flat path of var and std (reduceFlatStatsEnv)
// on the plan's flat layout, or clears the layout where the path is off.
func (p *ReduceBackward) planFlatStats() {
	mode := knob(reduceFlatStatsEnv)
	geo, _ := p.denseGeom()
	on := p.flat.packs > 0 && p.flat.ip <= 1 && mode != "never" &&
		(mode == "always" || geo.nchunks > 1 && (mode != "outer" || p.flat.ip != 0))
	if !on {
		p.flat = reduceFlat{}
		return
	}
	p.flatSt = true
	p.flatRev = knob(reduceFlatReuseEnv) != "never"
	p.flatG = flatStatsGeometry(p.flat, p.slices, p.k, p.desc.DType.Size())
	// The partials, then one total per slice (red_total).
	p.ws = max(p.ws, p.slices*(p.flatG.nchunks+1)*redAccSize(p.desc.DType))
}
