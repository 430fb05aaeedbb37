package ops

import (
	"math/bits"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
)

// ScanBackward.Run: the kernel layout built from the operands' strides,
// the layout conditions of the colstrip and colpair kernels, and the
// execution of the launch plan that scanPolicy (scan_policy.go) chooses.
// The plan is in scan.go, its geometry in scan_geometry.go.

// stripLayout reports whether the colstrip kernel can move the operands
// of L (dy, x, dx) as 16-byte rows of its strips, and if so returns its
// blocks: the innermost merged slice dim is a multiple of 8 with unit
// stride, every other stride (slice dims and axis) a multiple of 8, and
// the bases 16-byte aligned, so that each strip's row is whole 16-byte
// pieces.
func stripLayout(a *ScanArgs, L *scanLayout) (blocks int64, ok bool) {
	r := int(L.srank) - 1
	if r < 0 || L.sdim[r]%8 != 0 {
		return 0, false
	}
	for _, t := range [3]int{0, 1, 3} {
		if L.sstride[t][r] != 1 || L.astride[t]%8 != 0 {
			return 0, false
		}
		for d := 0; d < r; d++ {
			if L.sstride[t][d]%8 != 0 {
				return 0, false
			}
		}
	}
	if a.DY.Buf.Addr%16 != 0 || a.X.Buf.Addr%16 != 0 || a.DX.Buf.Addr%16 != 0 {
		return 0, false
	}
	return L.nslices / L.sdim[r] * scanCeil(L.sdim[r], scanStripW), true
}

// stripFills reports whether blocks of the colstrip kernel, per of them
// resident on each of sms multiprocessors, run in one wave that keeps at
// least three quarters of the resident places busy. A strip's block takes
// about the same time however many run beside it, so its bandwidth grows
// with the blocks of its wave, while the colpair kernel's grows with the
// tensor: on an H100 the strips are faster from about three quarters of a
// wave to a full one and colpair below that; a second wave doubles the
// strips' time, and only a full second wave ties with colpair.
func stripFills(blocks int64, sms, per int) bool {
	slots := int64(sms) * int64(max(per, 1))
	return blocks <= slots && 4*blocks >= 3*slots
}

// setGeom sets L's geometry fields from g (the strides are the args').
func (L *scanLayout) setGeom(g *scanGeom) {
	L.n, L.nslices, L.chunks, L.units = g.n, g.nslices, g.chunks, g.units
	L.split, L.items, L.phase, L.pitch = g.split, g.items, scanMain, g.pitch
	L.wsFlags, L.wsAgg, L.wsIncl, L.wsFwd, L.wsFix, L.wsUnitFlag = g.ws.flags, g.ws.agg, g.ws.incl, g.ws.fwd, g.ws.fix, g.ws.unitFlag
	L.tmagic, L.tshift, L.lsplit = g.tmagic, g.tshift, int32(bits.TrailingZeros32(uint32(g.split)))
	L.fillers, L.wsFill = int32(g.fillers), 0
	if g.fillers > 0 {
		L.wsFill = g.ws.zero
	}
}

// pairLayout reports whether the colpair kernel can move the operands of
// L (dy, x, dx) as 32-bit words of two adjacent slices: the innermost
// merged slice dim has even length and unit stride, every other stride
// (slice dims and axis) is even, and the bases are 4-byte aligned. Then
// every even slice starts a word and its neighbour is the word's other
// half, in every row.
func pairLayout(a *ScanArgs, L *scanLayout) bool {
	r := int(L.srank) - 1
	if r < 0 || L.sdim[r]%2 != 0 {
		return false
	}
	for _, t := range [3]int{0, 1, 3} {
		if L.sstride[t][r] != 1 || L.astride[t]%2 != 0 {
			return false
		}
		for d := 0; d < r; d++ {
			if L.sstride[t][d]%2 != 0 {
				return false
			}
		}
	}
	return a.DY.Buf.Addr%4 == 0 && a.X.Buf.Addr%4 == 0 && a.DX.Buf.Addr%4 == 0
}

// layout fills L for the args' strides and the geometry g: the slice dims
// (every dim but the axis, size-1 dims dropped, neighbours merged where
// every operand allows) and the strides along the axis.
func (p *ScanBackward) layout(a *ScanArgs, L *scanLayout, g *scanGeom) {
	*L = scanLayout{}
	L.setGeom(g)
	if p.desc.Reverse {
		L.reverse = 1
	}
	needX, needY := p.desc.Op.Saved()
	ts := [4]*Tensor{&a.DY, nil, nil, &a.DX}
	if needX {
		ts[1] = &a.X
	}
	if needY {
		ts[2] = &a.Y
	}
	L.vec = 1
	for t, tp := range ts {
		if tp != nil {
			L.astride[t] = tp.strideOf(p.axis)
			if L.astride[t] != 1 && g.n > 1 {
				L.vec = 0
			}
		}
	}
	r := 0
	for d, n := range p.shape {
		if d == p.axis || n == 1 {
			continue
		}
		L.sdim[r] = int64(n)
		for t, tp := range ts {
			if tp != nil {
				L.sstride[t][r] = tp.strideOf(d)
			}
		}
		if r > 0 {
			merge := true
			for t, tp := range ts {
				if tp != nil && L.sstride[t][r-1] != L.sstride[t][r]*L.sdim[r] {
					merge = false
					break
				}
			}
			if merge {
				L.sdim[r-1] *= L.sdim[r]
				for t := range ts {
					L.sstride[t][r-1] = L.sstride[t][r]
					L.sstride[t][r] = 0
				}
				L.sdim[r] = 0
				continue
			}
		}
		r++
	}
	L.srank = int32(r)
	for d := 0; d < r; d++ {
		L.smagic[d], L.sshift[d] = divMagic(L.sdim[d])
	}
}

// Run checks args as Check does and queues on s the work that writes dx:
// one or more kernel launches, and for long axes a memset of part of the
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
func (p *ScanBackward) Run(s *driver.Stream, a *ScanArgs) error {
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	// The policy loads a kernel when it first reads its facts, and the
	// steps' kernels are resolved before any step is queued, so a first
	// Run compiles what it considers and queues nothing when a load fails.
	ctx := s.Context()
	var L scanLayout
	p.layout(a, &L, &p.geom)
	dev := DeviceFactsOf(ctx)
	pl, err := p.scanPolicy(a, &L, &dev)
	if err != nil {
		return err
	}
	lfs, err := resolveSteps(ctx, pl.steps[:pl.n])
	if err != nil {
		return err
	}
	for i, st := range pl.steps[:pl.n] {
		if st.k == nil {
			err = s.MemsetD8Async(a.Workspace.Slice(0, scanCounter), scanNoneByte)
		} else {
			pl.L.phase = st.phase
			err = p.launchWith(lfs[i], s, a, &pl.L, st.grid, st.block, st.smem)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// launchWith launches blocks of threads threads with smem bytes of dynamic
// shared memory.
func (p *ScanBackward) launchWith(lf *loadedFunction, s *driver.Stream, a *ScanArgs, L *scanLayout, blocks int64, threads, smem int) error {
	args := driver.GetArgs()
	p.pack(args, a, L)
	err := lf.fn.Launch(s, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{uint32(threads), 1, 1}, uint32(smem), args)
	driver.PutArgs(args)
	return err
}

// pack appends the kernel parameters in the order of the spec's scan ABI:
// dy, x, y, dx (unused saves as null), workspace, layout.
func (p *ScanBackward) pack(args *driver.Args, a *ScanArgs, L *scanLayout) {
	needX, needY := p.desc.Op.Saved()
	args.Ptr(a.DY.Buf.Addr)
	if needX {
		args.Ptr(a.X.Buf.Addr)
	} else {
		args.Ptr(0)
	}
	if needY {
		args.Ptr(a.Y.Buf.Addr)
	} else {
		args.Ptr(0)
	}
	args.Ptr(a.DX.Buf.Addr)
	args.Ptr(a.Workspace.Addr)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
