package ops

import "github.com/baracuda-go/baracuda/dtype"

// The reduce family's launch policy: which kernels a Run launches, with
// what layouts, grids, shared memory and workspace memsets, for a plan,
// its operands and a device. Run (reduce_launch.go) executes the plan
// reducePolicy returns; Launches reports it.

// reduceStep is one step of a reduce Run: a launch of k, grid blocks of
// redBlock threads with smem bytes of dynamic shared memory, the plan's
// layout with phase and reverse set; or, where k is nil, a memset to 0 of
// the workspace's bytes [off, off+n).
type reduceStep struct {
	k              *kernelRef
	phase, reverse int32
	grid, smem     int64
	off, n         int64
}

func (st reduceStep) kernel() *kernelRef { return st.k }

// reduceLaunchPlan is the work of one Run: the layout the launches pack
// (phase and reverse set per step) and the steps in order.
type reduceLaunchPlan struct {
	L     reduceLayout
	steps [maxSteps]reduceStep
	n     int
}

// launch adds a launch of k with the layout's phase and reverse as they
// are now.
func (pl *reduceLaunchPlan) launch(k *kernelRef, grid, smem int64) {
	pl.steps[pl.n] = reduceStep{k: k, phase: pl.L.phase, reverse: pl.L.reverse, grid: grid, smem: smem}
	pl.n++
}

func (pl *reduceLaunchPlan) memset(off, n int64) {
	pl.steps[pl.n] = reduceStep{off: off, n: n}
	pl.n++
}

// reducePolicy maps a single-axis plan, its operands (a's strides and
// base addresses) and a device to the launches of a Run. It reads the
// device only through dev, so that Launches reports exactly what Run
// does. The first row that applies decides:
//
//	row  plan has         operands     device                          launches
//	1    short or inner   shortDense   -                               short or inner
//	2    strip or stripc  stripDense,  stripc built (9.0) and its      stripc, else strip
//	                      stripMayFill shared memory fits, else strip
//	                                   whose shared memory fits; the
//	                                   strips' blocks >= SMs
//	3    flat             dense        -                               var, std: flatStatsPlan;
//	                                                                   max, min, prod: memset of
//	                                                                   the counts, flat, fix;
//	                                                                   others: flat
//	4    stats, split     col layout   cluster built (9.0), 4 x tiles  cluster
//	     slices                        >= SMs x its resident blocks
//	5    one, split       col layout   x larger than L2, SMs x its     memset of the counters, one
//	     slices                        resident blocks >= 2 x chunks
//	6    stats, split     any          -                               stats, apply (totals),
//	     slices                                                        apply (dx, tiles reversed)
//	7    -                any          -                               row or col, by the layout
//
// The plan's fields come from the descriptor and the knobs, read when it
// is made (NewReduceBackward; the *Any fields lift the device conditions).
// Grids of the kernels that loop are capped at their resident blocks
// (reduceGrid).
func (p *ReduceBackward) reducePolicy(a *ReduceArgs, dev *DeviceFacts) (pl reduceLaunchPlan, err error) {
	L := &pl.L
	if p.shortK != nil && p.shortDense(a) {
		grid := p.shortLayout(L)
		pl.launch(p.shortK, grid, 0)
		return pl, nil
	}
	if p.stripOn() && p.stripDense(a) && p.stripMayFill(dev.SMs) {
		var k *kernelRef
		var kf kernelFacts
		g, c := &p.strip, int64(1)
		if p.stripcK != nil {
			f, err := dev.kernel(p.stripcK)
			if err != nil {
				return pl, err
			}
			if f.built && f.smemBlocks > 0 {
				g, c, k, kf = &p.stripc, redStripCluster, p.stripcK, f
			}
		}
		if k == nil && p.stripK != nil {
			f, err := dev.need(p.stripK)
			if err != nil {
				return pl, err
			}
			if f.smemBlocks > 0 {
				k, kf = p.stripK, f
			}
		}
		if k != nil && (p.stripAny || p.col.nchunks > 1 && g.strips*c >= int64(kf.sms)) {
			*L = reduceLayout{k: p.k, slices: p.slices, chunk: g.chunk, nchunks: 1, tiles: g.strips * c, scale: p.scale,
				mapping: redCol, group: 1, cvec: g.vr}
			L.flat.ip = g.inner
			L.flat.magic[0], L.flat.shift[0] = g.magic, g.shift
			pl.launch(k, g.strips*c, g.smem)
			return pl, nil
		}
	}
	if p.dense(a) {
		dev.preload(p.flatK, pick(p.flatFx, p.fixK), pick(p.flatSt, p.apply))
		kf, err := dev.need(p.flatK)
		if err != nil {
			return pl, err
		}
		switch {
		case p.flatSt:
			err = p.flatStatsPlan(&pl, kf, dev)
		case !p.flatFx:
			*L = reduceLayout{k: p.k, slices: p.slices, chunk: p.k, nchunks: 1, scale: p.scale, flat: p.flat}
			pl.launch(p.flatK, p.reduceGrid(kf, L, 0), 0)
		default:
			// The provisional ops: the counts zeroed, the flat kernel,
			// then red_flat_fix, which finds each slice by the strided
			// layout.
			p.layout(a, L)
			L.flat = p.flat
			pl.memset(0, 4*(p.slices+1))
			pl.launch(p.flatK, p.reduceGrid(kf, L, 0), 0)
			var fx kernelFacts
			if fx, err = dev.need(p.fixK); err == nil {
				L.phase = redPhaseFlat
				pl.launch(p.fixK, p.reduceGrid(fx, L, 0), 0)
			}
		}
		return pl, err
	}
	p.layout(a, L)
	main := p.colK
	if L.mapping == redRow {
		main = p.rowK
	}
	if p.stats != nil && L.nchunks > 1 {
		// The cluster kernel needs a quarter of a block per SM and
		// resident block (at least one), the one kernel an x larger
		// than L2. The kernels this row may take are loaded together.
		tryClu := p.clu.nchunks > 0 && L.mapping == redCol && (p.cluAny || 4*p.clusterTiles(L) >= int64(dev.SMs))
		tryOne := p.one && L.mapping == redCol && p.oneBig(dev.L2Cache)
		dev.preload(pick(tryClu, p.cluK), pick(tryOne, p.oneK), p.stats, p.apply)
		if tryClu {
			kf, err := dev.kernel(p.cluK)
			if err != nil {
				return pl, err
			}
			if tiles := p.clusterTiles(L); kf.built && (p.cluAny || 4*tiles >= int64(kf.sms*kf.blocks)) {
				// Its geometry in place of the two passes', a block per
				// tile (a cluster's blocks wait for one another, clusters
				// never do).
				g := &p.clu
				L.chunk, L.nchunks, L.group, L.tiles = g.chunk, g.nchunks, g.group, tiles
				pl.launch(p.cluK, tiles, 0)
				return pl, nil
			}
		}
		if tryOne {
			kf, err := dev.need(p.oneK)
			if err != nil {
				return pl, err
			}
			if g := &p.oneG; int64(kf.sms*kf.smemBlocks) >= 2*g.nchunks {
				L.tiles = L.tiles / L.nchunks * g.nchunks
				L.chunk, L.nchunks = g.chunk, g.nchunks
				pl.memset(p.oneOff, 4*(1+L.tiles/L.nchunks))
				smem := L.chunk * int64(redBlock/L.group) * int64(L.cvec) * int64(p.desc.DType.Size())
				pl.launch(p.oneK, p.reduceGrid(kf, L, smem), smem)
				return pl, nil
			}
		}
		ks, err := dev.need(p.stats)
		if err != nil {
			return pl, err
		}
		pl.launch(p.stats, p.reduceGrid(ks, L, 0), 0)
		ka, err := dev.need(p.apply)
		if err != nil {
			return pl, err
		}
		L.phase = redPhaseTotal
		pl.launch(p.apply, p.reduceGrid(ka, L, 0), 0)
		L.phase, L.reverse = redPhaseApply, 1
		main = p.apply
	}
	kf, err := dev.need(main)
	if err != nil {
		return pl, err
	}
	pl.launch(main, p.reduceGrid(kf, L, 0), 0)
	return pl, nil
}

// flatStatsPlan adds var and std's flat path (reduce_flat_stats.go): the
// flat kernel's statistics pass (redPhaseFlat, a block per tile), then its
// apply pass on the same tiles, last to first (L.reverse, the statistics
// pass's grid), each block combining the partials of its tile's slices
// itself; or, where flatRev is off, the apply kernel's totals
// (redPhaseTotal, on the col layout of the partials), then the apply pass
// a pack per thread (gridCover's grid). kf are the flat kernel's facts.
func (p *ReduceBackward) flatStatsPlan(pl *reduceLaunchPlan, kf kernelFacts, dev *DeviceFacts) error {
	g := &p.flatG
	L := &pl.L
	*L = reduceLayout{k: p.k, slices: p.slices, chunk: g.chunk, nchunks: g.nchunks, tiles: g.tiles, scale: p.scale,
		mapping: redCol, phase: redPhaseFlat, flat: p.flat}
	pl.launch(p.flatK, min(g.tiles, maxGridX), 0)
	if p.flatRev {
		L.phase, L.reverse = redPhaseApply, 1
		pl.launch(p.flatK, min(g.tiles, maxGridX), 0)
		return nil
	}
	ka, err := dev.need(p.apply)
	if err != nil {
		return err
	}
	L.phase = redPhaseTotal
	pl.launch(p.apply, p.reduceGrid(ka, L, 0), 0)
	L.phase = redPhaseApply
	pl.launch(p.flatK, p.reduceGrid(kf, L, 0), 0)
	return nil
}

// segPolicy is reducePolicy for a plan over several axes that takes the
// seg kernel (Path "seg"): the clustered seg kernel where the plan has it,
// its blocks are at least as many as the SMs (or reduceSegcEnv says
// always), the device has its build (9.0) and gives a block its shared
// memory, one launch; else the seg kernel, its statistics pass first for
// var and std, a grid of at most the resident blocks. Both take 16-byte
// accesses (L.vec) where x and dx allow them; the ops without statistics
// take the packed walk over the whole tensor (L.vec 2) where segFlat
// allows it.
func (p *ReduceBackward) segPolicy(a *ReduceArgs, dev *DeviceFacts) (pl reduceLaunchPlan, err error) {
	m := p.multi
	n := int64(16 / p.desc.DType.Size())
	aligned := a.DX.Buf.Addr%16 == 0 && (!p.desc.Op.needsSaved() || a.X.Buf.Addr%16 == 0)
	vec := int32(0)
	if m.seg.kstride[0] == 1 && m.seg.kstride[1]%n == 0 && aligned {
		vec = 1
	}
	if m.segsK != nil && aligned { // the segs ops read x, so aligned covers it
		if ok, err := pl.smemLaunch(dev, m.segsK, m.segs); ok || err != nil {
			return pl, err
		}
	}
	if m.segcK != nil && (m.segcAny || m.segc.tiles >= int64(dev.SMs)) {
		L := m.segc
		L.vec = vec
		if ok, err := pl.smemLaunch(dev, m.segcK, L); ok || err != nil {
			return pl, err
		}
	}
	kf, err := dev.need(m.segK)
	if err != nil {
		return pl, err
	}
	pl.L = m.seg
	pl.L.vec = vec
	if p.segFlat(n, aligned) {
		// The packed walk (red_seg_flat): x as [R, C, S], a pack a thread.
		pl.L.vec = 2
		pl.L.flat.packs = p.numel / n
		pl.launch(m.segK, min(int64(gridCover(pl.L.flat.packs, redBlock)), int64(kf.sms*kf.blocks)), 0)
		return pl, nil
	}
	grid := max(min(pl.L.tiles, int64(kf.sms*kf.blocks), maxGridX), 1)
	if p.desc.Op.hasStats() {
		pl.L.phase = redPhaseSegStats
		pl.launch(m.segK, grid, 0)
		pl.L.phase = redPhaseApply
	}
	pl.launch(m.segK, grid, 0)
	return pl, nil
}

// smemLaunch plans one launch of k, a block a tile of L with k's dynamic
// shared memory, and reports true where the device has k's build and
// gives a block that memory (else pl is unchanged).
func (pl *reduceLaunchPlan) smemLaunch(dev *DeviceFacts, k *kernelRef, L reduceLayout) (bool, error) {
	kf, err := dev.kernel(k)
	if err != nil || !kf.built || kf.smemBlocks == 0 {
		return false, err
	}
	pl.L = L
	pl.launch(k, L.tiles, int64(k.smem))
	return true, nil
}

// segFlat reports whether a seg plan takes the packed walk (red_seg_flat)
// with packs of n elements: an op without statistics; one kept group
// between reduced ones, the innermost reduced (x as [R, C, S]); segments
// of at least a pack but no multiple of one (a multiple takes the 16-byte
// walk of the tiles); the tensor a whole number of packs; x (where the op
// reads it) and dx 16-byte aligned.
func (p *ReduceBackward) segFlat(n int64, aligned bool) bool {
	return !p.desc.Op.hasStats() && shortSegs(&p.multi.seg, n) && p.numel%n == 0 && aligned
}

// reduceGrid is the grid of a launch of L (L.blocks) by a kernel with facts
// kf and smem bytes of dynamic shared memory (the one kernel's: then the
// resident blocks are those with the plan's most).
//
// Sum and Mean only broadcast dy into dx, a write stream like the binary
// kernels': a block per block step (gridCover's reasoning) is faster for
// them on an H100. The kernels that read x keep the grid of resident
// blocks, which is faster for most of them (the bf16 row kernels most of
// all), except the f32 row kernels, which take gridCover's grid too. The
// flat kernel is elementwise: gridCover's grid. With few slices
// (redFlatLocal) the flat kernel of the provisional ops adds each block's
// counts to the workspace once, all on a few counters: no more blocks than
// fit at once.
func (p *ReduceBackward) reduceGrid(kf kernelFacts, L *reduceLayout, smem int64) int64 {
	grid := L.blocks()
	per := kf.blocks
	if smem > 0 {
		per = kf.smemBlocks
	}
	capped := L.flat.packs == 0 && (smem > 0 || (p.desc.Op.needsSaved() && (L.mapping != redRow || p.desc.DType != dtype.F32)))
	capped = capped || p.flatFx && L.flat.packs > 0 && L.phase != redPhaseFlat && L.slices <= redFlatLocal
	if limit := int64(kf.sms * per); grid > limit && capped {
		grid = limit
	}
	if L.phase == redPhaseFlat {
		// red_flat_fix: the blocks that fit at once, and at least a thread
		// per slice. Where no slice needs its walk over the packs they
		// return after a look at the counts; where one does, the walk's
		// loads of counts and mask bits wait on memory, and every
		// resident block keeps more of them in flight.
		grid = max(min(grid, int64(kf.sms*kf.blocks)), ceilDiv(L.slices, redBlock))
	}
	return max(min(grid, maxGridX), 1)
}

// Launches reports the steps a Run of the plan takes for the operands a on
// a device with facts dev, in order: the kernel launches, with their
// grids, blocks, shared memory and passes, and the memsets of parts of
// the workspace. It follows the policy Run follows (reducePolicy; a plan
// over several axes, the single-axis plan's on the coalesced view or the
// seg kernel's), so with DeviceFactsOf(ctx) it is exactly what a Run in
// ctx does with a (and like a Run it loads each kernel the choice reads
// in ctx); with facts filled by hand the kernels' occupancy is modelled
// (DeviceFacts). A nil a stands for contiguous operands (dy and y in the
// keepdim shape) at 16-byte aligned addresses. An empty tensor launches
// nothing (nil).
//
// The error is one of Check's for a, or the driver's from loading a
// kernel in the facts' context, or ErrUnsupportedDevice (package driver)
// for facts below compute capability 7.0.
func (p *ReduceBackward) Launches(dev DeviceFacts, a *ReduceArgs) ([]LaunchInfo, error) {
	if a == nil {
		x := Tensor{DType: p.desc.DType, Shape: p.shape}
		k := Tensor{DType: p.desc.DType, Shape: p.keep}
		a = &ReduceArgs{DY: k, X: x, Y: k, DX: x}
	} else if err := p.Check(a); err != nil {
		return nil, err
	}
	return p.launches(&dev, a)
}

// launches is Launches after Check.
func (p *ReduceBackward) launches(dev *DeviceFacts, a *ReduceArgs) ([]LaunchInfo, error) {
	if p.numel == 0 {
		return nil, nil
	}
	var pl reduceLaunchPlan
	var err error
	switch m := p.multi; {
	case m != nil && m.inner != nil:
		var v [4]viewTensor
		var in ReduceArgs
		p.innerArgs(a, &in, &v)
		return m.inner.launches(dev, &in)
	case m != nil:
		pl, err = p.segPolicy(a, dev)
	default:
		pl, err = p.reducePolicy(a, dev)
	}
	if err != nil {
		return nil, err
	}
	out := make([]LaunchInfo, pl.n)
	for i, st := range pl.steps[:pl.n] {
		if st.k == nil {
			out[i] = LaunchInfo{Memset: st.n, MemsetOffset: st.off}
			continue
		}
		out[i] = LaunchInfo{Kernel: st.k.name, Grid: st.grid, Block: redBlock, SharedMem: int(st.smem),
			Phase: int(st.phase), Reverse: st.reverse != 0}
	}
	return out, nil
}
