package ops

import (
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
)

// ReduceBackward.Run: the conditions on the operands' layout, the kernel
// layout built from their strides, and the execution of the launch plan
// that reducePolicy (reduce_policy.go) chooses. The plan is in reduce.go,
// its geometry in reduce_geometry.go.

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

// oneBig reports whether x is larger than an L2 cache of l2 bytes, where
// the one kernel pays (or reduceOneEnv takes it anyway).
func (p *ReduceBackward) oneBig(l2 int) bool {
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
// device (Launches reports them). An empty tensor queues nothing. Run
// returns once the work is queued; dx is written, and the workspace free
// for reuse, when s reaches the end of it (Stream.Synchronize, or an event
// recorded after Run). The first Run of a kernel in a context loads it,
// which compiles its PTX unless the driver's JIT cache holds it; Warm does
// that ahead of time.
//
// Run never allocates device memory, copies from the host or synchronizes,
// so a Run whose kernels are loaded can be captured into a CUDA graph.
// Runs of one plan may be made concurrently, each with its own workspace.
// The error wraps ErrNilStream for a nil s, is one of Check's, or is the
// driver's error from loading or launching a kernel.
func (p *ReduceBackward) Run(s *driver.Stream, a *ReduceArgs) error {
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	if m := p.multi; m != nil && m.inner != nil {
		return p.runInner(s, a)
	}
	// The policy loads a kernel when it first reads its facts (the
	// kernels a row may take at once, see DeviceFacts.preload), and the
	// steps' kernels are resolved before any step is queued.
	ctx := s.Context()
	dev := DeviceFactsOf(ctx)
	var pl reduceLaunchPlan
	var err error
	if p.multi != nil {
		pl, err = p.segPolicy(a, &dev)
	} else {
		pl, err = p.reducePolicy(a, &dev)
	}
	if err != nil {
		return err
	}
	lfs, err := resolveSteps(ctx, pl.steps[:pl.n])
	if err != nil {
		return err
	}
	for i, st := range pl.steps[:pl.n] {
		if st.k == nil {
			err = s.MemsetD8Async(a.Workspace.Slice(st.off, st.n), 0)
		} else {
			pl.L.phase, pl.L.reverse = st.phase, st.reverse
			err = p.launchGrid(s, lfs[i], a, &pl.L, st.grid, st.smem)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pick is k where cond holds, else nil.
func pick(cond bool, k *kernelRef) *kernelRef {
	if cond {
		return k
	}
	return nil
}

// clusterTiles is the cluster kernel's grid for the col layout L (one
// block per tile).
func (p *ReduceBackward) clusterTiles(L *reduceLayout) int64 {
	return ceilDiv(p.slices, int64(redBlock/p.clu.group)*int64(L.cvec)) * p.clu.nchunks
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
