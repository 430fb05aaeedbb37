package ops

import (
	"errors"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// ReduceBackward.Run: which kernel the operands and the device allow, the
// kernel layout built from the operands' strides, and the launches. The
// plan is in reduce.go, its geometry in reduce_geometry.go.

// dense reports whether Run may take the flat kernel for a: the shape
// allows it and every operand it reads or writes is contiguous and 16-byte
// aligned.
func (p *ReduceBackward) dense(a *ReduceArgs) bool {
	if p.flat.packs == 0 {
		return false
	}
	ts := [4]*Tensor{&a.DY, &a.DX, &a.X, &a.Y}
	n := 2
	if p.desc.Op.needsSaved() {
		n = 4
	}
	for _, t := range ts[:n] {
		if t.Buf.Addr%16 != 0 || !t.isContiguous() {
			return false
		}
	}
	return true
}

// stripOn tells whether Run may take either strip kernel (stripOp,
// reduceStripEnv).
func (p *ReduceBackward) stripOn() bool { return p.stripK != nil || p.stripcK != nil }

// oneBig reports whether x is larger than the L2 cache of ctx's device,
// where the one kernel pays (or reduceOneEnv takes it anyway).
func (p *ReduceBackward) oneBig(ctx *driver.Context) bool {
	l2, _ := ctx.Device().L2CacheSize()
	return p.oneAny || p.numel*int64(p.desc.DType.Size()) > int64(l2)
}

// stripMayFill reports whether a strip kernel's grid can pass Run's test
// on a device of sms multiprocessors (split col slices, and at least a
// block per SM), before either kernel is loaded.
func (p *ReduceBackward) stripMayFill(sms int) bool {
	if p.stripAny {
		return true
	}
	return p.col.nchunks > 1 && (p.stripcK != nil && p.stripc.strips*redStripCluster >= int64(sms) ||
		p.stripK != nil && p.strip.strips >= int64(sms))
}

// stripDense reports whether the operands allow the strip kernel: every
// one contiguous, x and dx 16-byte aligned.
func (p *ReduceBackward) stripDense(a *ReduceArgs) bool {
	for _, t := range [4]*Tensor{&a.X, &a.Y, &a.DY, &a.DX} {
		if !t.isContiguous() {
			return false
		}
	}
	return a.X.Buf.Addr%16 == 0 && a.DX.Buf.Addr%16 == 0
}

// layout builds the kernel layout for args: the slice dims (every dim but
// the axis and size-1 dims) ordered by x's strides, largest first, and
// merged where every operand allows; the row mapping when the axis is x's
// fastest dim, else the col mapping.
func (p *ReduceBackward) layout(a *ReduceArgs, L *reduceLayout) {
	var ts [4]*Tensor // x, y, dy, dx
	if p.desc.Op.needsSaved() {
		ts[0], ts[1] = &a.X, &a.Y
	}
	ts[2], ts[3] = &a.DY, &a.DX
	ref := 3
	if ts[0] != nil {
		ref = 0
	}
	var dim [MaxRank]int64
	var st [4][MaxRank]int64
	n := 0
	for d, sz := range p.shape {
		if d == p.axis || sz == 1 {
			continue
		}
		dim[n] = int64(sz)
		for i, t := range ts {
			if t != nil {
				st[i][n] = p.keptStride(t, d) // for x and dx, strideOf(d)
			}
		}
		// Insertion by ref's stride, largest first (stable for ties).
		for j := n; j > 0 && st[ref][j] > st[ref][j-1]; j-- {
			dim[j], dim[j-1] = dim[j-1], dim[j]
			for i := range st {
				st[i][j], st[i][j-1] = st[i][j-1], st[i][j]
			}
		}
		n++
	}
	m := 0
	for j := 0; j < n; j++ {
		if m > 0 {
			ok := true
			for i := range st {
				if st[i][m-1] != st[i][j]*dim[j] {
					ok = false
					break
				}
			}
			if ok {
				dim[m-1] *= dim[j]
				for i := range st {
					st[i][m-1] = st[i][j]
				}
				continue
			}
		}
		dim[m] = dim[j]
		for i := range st {
			st[i][m] = st[i][j]
		}
		m++
	}
	var kst [4]int64
	for i, t := range ts {
		if t != nil && (i == 0 || i == 3) {
			kst[i] = t.strideOf(p.axis)
		}
	}
	row := p.k > 1 && (m == 0 || kst[ref] <= st[ref][m-1])
	geo, mapping := p.col, int32(redCol)
	if row {
		geo, mapping = p.row, redRow
	}
	*L = reduceLayout{k: p.k, slices: p.slices, chunk: geo.chunk, nchunks: geo.nchunks, tiles: geo.tiles,
		scale: p.scale, mapping: mapping, group: geo.group, srank: int32(m), cvec: 1}
	if row && (ts[0] == nil || kst[0] == 1) && kst[3] == 1 {
		L.vec = 1
	}
	L.kstride = [2]int64{kst[0], kst[3]}
	for j := 0; j < m; j++ {
		L.sdim[j] = dim[j]
		for i := range st {
			L.sstride[i][j] = st[i][j]
		}
	}
	if m > 0 {
		L.vstride = [2]int64{st[1][m-1], st[2][m-1]}
	}
	if !row {
		// One 16-byte access per thread where x and dx allow it, else
		// one 8-byte access (v/2 slices, when that is at least 2), else 1.
		for _, v := range [2]int64{colVec(p.desc.DType, p.desc.Op), colVec(p.desc.DType, p.desc.Op) / 2} {
			if v >= 2 && p.colVectorizable(ts[0], ts[3], &dim, &st, kst, m, v) {
				L.cvec = int32(v)
				break
			}
		}
		w := int64(redBlock/geo.group) * int64(L.cvec)
		L.tiles = ceilDiv(p.slices, w) * geo.nchunks
	}
}

// colVectorizable reports whether col threads can move v adjacent slices
// with one access: x and dx step 1 across the innermost slice dim, whose
// length is a multiple of v, every other step of theirs is a multiple of
// v, and both start aligned to v elements' bytes.
func (p *ReduceBackward) colVectorizable(x, dx *Tensor, dim *[MaxRank]int64, st *[4][MaxRank]int64, kst [4]int64, m int, v int64) bool {
	if m == 0 || dim[m-1]%v != 0 {
		return false
	}
	align := uint64(v) * uint64(p.desc.DType.Size())
	for _, i := range [2]int{0, 3} {
		if i == 0 && x == nil {
			continue
		}
		t := dx
		if i == 0 {
			t = x
		}
		if st[i][m-1] != 1 || kst[i]%v != 0 || uint64(t.Buf.Addr)%align != 0 {
			return false
		}
		for j := 0; j < m-1; j++ {
			if st[i][j]%v != 0 {
				return false
			}
		}
	}
	return true
}

// blocks is the grid a launch of L needs before the resident limit.
func (L *reduceLayout) blocks() int64 {
	if L.phase == redPhaseTotal {
		return ceilDiv(L.slices, redBlock/32) // a warp per slice
	}
	if L.phase == redPhaseFlat {
		// A thread per slice, and the flat kernel's grid for a wide mend
		// (launchSmem caps it).
		return max(ceilDiv(L.slices, redBlock), int64(gridCover(L.flat.packs, redBlock)))
	}
	if L.flat.packs > 0 {
		return int64(gridCover(L.flat.packs, redBlock))
	}
	if L.mapping == redRow {
		return ceilDiv(L.tiles, int64(redBlock/L.group))
	}
	return L.tiles
}

// Run checks args as Check does and queues on s the work that writes dx:
// one or more kernel launches, and for some shapes a memset of part of the
// workspace, chosen by the operands' strides and alignment and by s's
// device. An empty tensor queues nothing. Run returns once the work is
// queued; dx is written, and the workspace free for reuse, when s reaches
// the end of it (Stream.Synchronize, or an event recorded after Run). The
// first Run of a kernel in a context loads it, which compiles its PTX
// unless the driver's JIT cache holds it; Warm does that ahead of time.
//
// Run never allocates device memory, copies from the host or synchronizes,
// so a Run whose kernels are loaded can be captured into a CUDA graph.
// Runs of one plan may be made concurrently, each with its own workspace.
// The error wraps ErrNilStream for a nil s, is one of Check's, or is the
// driver's error from loading or launching a kernel.
func (p *ReduceBackward) Run(s *driver.Stream, a *ReduceArgs) error {
	// Run queues the flat kernel for an op without statistics on dense
	// operands (see dense), and for Max, Min and Prod on dense operands
	// whose slices would be split (a memset of the counts, the flat
	// kernel, then the fix kernel (redPhaseFlat), else the row or col
	// kernel (by the operands' strides), or, when an op with statistics
	// splits its slices into chunks, the one kernel (col, after a memset
	// of its counters) or the stats kernel then the apply kernel twice
	// (the slices' totals, then dx; for max, min and prod the second
	// launch rewrites only the tiles whose provisional dx can be wrong);
	// for an op with statistics on dense operands, the strip kernel in
	// place of those where the plan has it (var and std, and max and min,
	// by default; see stripDefault); the short kernel in place of
	// all of these where the plan has it and the operands allow it (see
	// shortDense); nothing for an empty tensor.
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	if p.multi != nil {
		return p.runMulti(s, a)
	}
	// A kernel is resolved (on first use, JIT-compiled) only where Run may
	// launch it: each test that needs no loaded function comes first.
	if p.shortK != nil && p.shortDense(a) {
		return p.runShort(s, a)
	}
	var L reduceLayout
	ctx := s.Context()
	if p.stripOn() && p.stripDense(a) && p.stripMayFill(deviceSMs(ctx)) {
		var lf *loadedFunction
		g, c := &p.strip, int64(1)
		if p.stripcK != nil {
			lc, err := p.stripcK.resolve(ctx)
			if err != nil && !errors.Is(err, errNoBuild) {
				return err
			}
			if err == nil && lc.smemBlocksPerSM > 0 {
				g, c, lf = &p.stripc, redStripCluster, lc
			}
		}
		if lf == nil && p.stripK != nil {
			l1, err := p.stripK.resolve(ctx)
			if err != nil {
				return err
			}
			if l1.smemBlocksPerSM > 0 {
				lf = l1
			}
		}
		if lf != nil && (p.stripAny || p.col.nchunks > 1 && g.strips*c >= int64(lf.sms)) {
			L = reduceLayout{k: p.k, slices: p.slices, chunk: g.chunk, nchunks: 1, tiles: g.strips * c, scale: p.scale,
				mapping: redCol, group: 1, cvec: g.vr}
			L.flat.ip = g.inner
			L.flat.magic[0], L.flat.shift[0] = g.magic, g.shift
			return p.launchGrid(s, lf, a, &L, g.strips*c, g.smem)
		}
	}
	if p.dense(a) {
		preload(ctx, p.flatK, pick(p.flatFx, p.fixK), pick(p.flatSt, p.apply))
		lf, err := p.flatK.resolve(ctx)
		if err != nil {
			return err
		}
		if p.flatSt {
			return p.runFlatStats(s, lf, a)
		}
		if !p.flatFx {
			L = reduceLayout{k: p.k, slices: p.slices, chunk: p.k, nchunks: 1, scale: p.scale, flat: p.flat}
			return p.launch(s, lf, a, &L)
		}
		// The provisional ops: the counts zeroed, the flat kernel, then
		// red_flat_fix, which finds each slice by the strided layout.
		p.layout(a, &L)
		L.flat = p.flat
		if err := s.MemsetD8Async(a.Workspace.Slice(0, 4*(p.slices+1)), 0); err != nil {
			return err
		}
		return p.launchThen(s, lf, p.fixK, a, &L, redPhaseFlat)
	}
	p.layout(a, &L)
	main := p.colK
	if L.mapping == redRow {
		main = p.rowK
	}
	if p.stats != nil && L.nchunks > 1 {
		// The cluster kernel needs a quarter of a block per SM and
		// resident block (at least one), the one kernel an x larger
		// than L2. The kernels this path may take are loaded together
		// (preload): a first Run compiles them at once.
		tryClu := p.clu.nchunks > 0 && L.mapping == redCol && (p.cluAny || 4*p.clusterTiles(&L) >= int64(deviceSMs(ctx)))
		tryOne := p.one && L.mapping == redCol && p.oneBig(ctx)
		preload(ctx, pick(tryClu, p.cluK), pick(tryOne, p.oneK), p.stats, p.apply)
		if tryClu {
			lf, err := p.cluK.resolve(ctx)
			if err != nil && !errors.Is(err, errNoBuild) {
				return err
			}
			if tiles := p.clusterTiles(&L); err == nil && (p.cluAny || 4*tiles >= int64(lf.sms*lf.blocksPerSM)) {
				return p.runCluster(s, lf, a, &L, tiles)
			}
		}
		if tryOne {
			lf, err := p.oneK.resolve(ctx)
			if err != nil {
				return err
			}
			if g := &p.oneG; int64(lf.sms*lf.smemBlocksPerSM) >= 2*g.nchunks {
				L.tiles = L.tiles / L.nchunks * g.nchunks
				L.chunk, L.nchunks = g.chunk, g.nchunks
				ctr := a.Workspace.Slice(p.oneOff, 4*(1+L.tiles/L.nchunks))
				if err := s.MemsetD8Async(ctr, 0); err != nil {
					return err
				}
				smem := L.chunk * int64(redBlock/L.group) * int64(L.cvec) * int64(p.desc.DType.Size())
				return p.launchSmem(s, lf, a, &L, smem)
			}
		}
		lf, err := p.stats.resolve(ctx)
		if err != nil {
			return err
		}
		if err := p.launchThen(s, lf, p.apply, a, &L, redPhaseTotal); err != nil {
			return err
		}
		L.phase, L.reverse = redPhaseApply, 1
		main = p.apply
	}
	lf, err := main.resolve(ctx)
	if err != nil {
		return err
	}
	return p.launch(s, lf, a, &L)
}

// runFlatStats queues var and std's flat path (reduce_flat_stats.go): the
// flat kernel's statistics pass (redPhaseFlat, a block per tile), then its
// apply pass on the same tiles, last to first (L.reverse, the statistics
// pass's grid), each block combining the partials of its tile's slices
// itself; or, where flatRev is off, the apply kernel's totals
// (redPhaseTotal, on the col layout of the partials), then the apply pass
// a pack per thread (gridCover's grid).
func (p *ReduceBackward) runFlatStats(s *driver.Stream, lf *loadedFunction, a *ReduceArgs) error {
	g := &p.flatG
	L := reduceLayout{k: p.k, slices: p.slices, chunk: g.chunk, nchunks: g.nchunks, tiles: g.tiles, scale: p.scale,
		mapping: redCol, phase: redPhaseFlat, flat: p.flat}
	if err := p.launchGrid(s, lf, a, &L, min(g.tiles, maxGridX), 0); err != nil {
		return err
	}
	if p.flatRev {
		L.phase, L.reverse = redPhaseApply, 1
		return p.launchGrid(s, lf, a, &L, min(g.tiles, maxGridX), 0)
	}
	la, err := p.apply.resolve(s.Context())
	if err != nil {
		return err
	}
	L.phase = redPhaseTotal
	if err := p.launch(s, la, a, &L); err != nil {
		return err
	}
	L.phase = redPhaseApply
	return p.launch(s, lf, a, &L)
}

// pick is k where cond holds, else nil.
func pick(cond bool, k *kernelRef) *kernelRef {
	if cond {
		return k
	}
	return nil
}

// launchThen launches first on L, then next on L in phase (the apply
// kernel's redPhaseTotal after the stats kernel, the fix kernel's
// redPhaseFlat after the flat one).
func (p *ReduceBackward) launchThen(s *driver.Stream, first *loadedFunction, next *kernelRef, a *ReduceArgs, L *reduceLayout, phase int32) error {
	if err := p.launch(s, first, a, L); err != nil {
		return err
	}
	lf, err := next.resolve(s.Context())
	if err != nil {
		return err
	}
	L.phase = phase
	return p.launch(s, lf, a, L)
}

// clusterTiles is the cluster kernel's grid for the col layout L (one
// block per tile).
func (p *ReduceBackward) clusterTiles(L *reduceLayout) int64 {
	return ceilDiv(p.slices, int64(redBlock/p.clu.group)*int64(L.cvec)) * p.clu.nchunks
}

// runCluster launches the cluster kernel on the col layout L: its
// geometry in place of the two passes', one block per tile (tiles, from
// clusterTiles; a cluster's blocks wait for one another, clusters never
// do).
func (p *ReduceBackward) runCluster(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, tiles int64) error {
	g := &p.clu
	L.chunk, L.nchunks, L.group, L.tiles = g.chunk, g.nchunks, g.group, tiles
	return p.launchGrid(s, lf, a, L, L.tiles, 0)
}

func (p *ReduceBackward) launch(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout) error {
	return p.launchSmem(s, lf, a, L, 0)
}

// launchSmem launches with smem bytes of dynamic shared memory (the one
// kernel's: then the grid is what fits with the plan's most).
func (p *ReduceBackward) launchSmem(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, smem int64) error {
	grid := L.blocks()
	per := lf.blocksPerSM
	if smem > 0 {
		per = lf.smemBlocksPerSM
	}
	// Sum and Mean only broadcast dy into dx, a write stream like the binary
	// kernels': a block per block step (gridCover's reasoning) is faster
	// for them on an H100. The kernels that read x keep the grid of
	// resident blocks, which is faster for most of them (the bf16 row
	// kernels most of all), except the f32 row kernels, which take
	// gridCover's grid too. The flat kernel is elementwise: gridCover's
	// grid.
	// With few slices (redFlatLocal) the flat kernel of the provisional
	// ops adds each block's counts to the workspace once, all on a few
	// counters: no more blocks than fit at once.
	capped := L.flat.packs == 0 && (smem > 0 || (p.desc.Op.needsSaved() && (L.mapping != redRow || p.desc.DType != dtype.F32)))
	capped = capped || p.flatFx && L.flat.packs > 0 && L.phase != redPhaseFlat && L.slices <= redFlatLocal
	if limit := int64(lf.sms * per); grid > limit && capped {
		grid = limit
	}
	if L.phase == redPhaseFlat {
		// red_flat_fix: the blocks that fit at once, and at least a thread
		// per slice. Where no slice needs its walk over the packs they
		// return after a look at the counts; where one does, the walk's
		// loads of counts and mask bits wait on memory, and every
		// resident block keeps more of them in flight.
		grid = max(min(grid, int64(lf.sms*lf.blocksPerSM)), ceilDiv(L.slices, redBlock))
	}
	return p.launchGrid(s, lf, a, L, max(min(grid, maxGridX), 1), smem)
}

// launchGrid launches grid blocks of redBlock threads on L with smem bytes
// of dynamic shared memory.
func (p *ReduceBackward) launchGrid(s *driver.Stream, lf *loadedFunction, a *ReduceArgs, L *reduceLayout, grid, smem int64) error {
	args := driver.GetArgs()
	p.pack(args, a, L)
	err := lf.fn.Launch(s, [3]uint32{uint32(grid), 1, 1}, [3]uint32{redBlock, 1, 1}, uint32(smem), args)
	driver.PutArgs(args)
	return err
}

// pack appends the kernel parameters in the order of the spec's reduce ABI:
// x, y (null for Sum and Mean), dy, dx, workspace, layout.
func (p *ReduceBackward) pack(args *driver.Args, a *ReduceArgs, L *reduceLayout) {
	var x, y driver.DevicePtr
	if p.desc.Op.needsSaved() {
		x, y = a.X.Buf.Addr, a.Y.Buf.Addr
	}
	args.Ptr(x)
	args.Ptr(y)
	args.Ptr(a.DY.Buf.Addr)
	args.Ptr(a.DX.Buf.Addr)
	args.Ptr(a.Workspace.Addr)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
