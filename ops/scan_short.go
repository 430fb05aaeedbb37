package ops

import (
	"strconv"

	"github.com/baracuda-go/baracuda/dtype"
)

// The short mapping (gen/scan_short.cuh, scan_backward_short): a thread
// owns whole slices of a short axis and runs their scans in registers, so
// no tiles, look-back or workspace. Three forms, chosen at Run time from
// the operands' layout (shortLaunchFor):
//   - inner: every operand has unit stride along the axis and the slices
//     follow each other (shortStaged): a block stages its slices'
//     contiguous chunk of each operand through shared memory;
//   - outer: every operand has unit stride along the innermost slice dim
//     (shortOuter): a block stages a run of slices of one row of that dim,
//     one contiguous row per element of the axis;
//   - direct: otherwise each thread reads its slice along the axis
//     strides, which along an outer axis is coalesced across consecutive
//     slices.
// The staged forms copy 16-byte packs where the rows are aligned, and
// give a thread several slices (L.split) where the axis is short and the
// dtype narrow, so that each block moves scanShortChunk bytes of each
// operand with its loads in flight together: one slice a thread moves a
// fifth of that for 4 bf16 elements, too little to cover the memory's
// latency at the blocks an SM holds. An axis of at most 4 elements runs
// in runs of 4 (L.items) rather than SCAN_SHORT_ITEMS (8).

// scanShortEnv, read when a plan is made, overrides where a plan takes the
// short mapping: "never" keeps plans off it, "always" takes it for every
// axis of at most scanShortMaxN elements however few slices. It is a
// kernel developer's knob (to time or test one mapping against another);
// users leave it unset.
const scanShortEnv = "BARACUDA_SCAN_SHORT"

// scanShortWideEnv, read when a plan is made, picks the short mapping's
// forms: "never" the first ones (a slice a thread, the inner form staged,
// any other layout direct, runs of 8, slices n | 1 elements apart),
// "always" the wide forms wherever the layout allows them, however few
// slices (no scanShortFill bound on the slices a thread, the outer form
// for rows shorter than a block), a number k (1 to
// scanShortMaxSlicesEnv) the wide forms with at most k slices a thread in
// place of shortSlices's (the shared memory grows with it: past
// scanShortSmemCap every launch is direct). A kernel developer's knob (A/B
// timings, tuning, tests); users leave it unset.
const scanShortWideEnv = "BARACUDA_SCAN_SHORT_WIDE"

const (
	// scanShortMaxN is the longest axis the short mapping takes: a
	// slice's scan stays a few runs of SCAN_SHORT_ITEMS (8) elements in
	// one thread's registers.
	scanShortMaxN = 32
	// scanShortMinSlices is the fewest slices for which the policy takes
	// the short mapping: 2^14 slices are 128 blocks of 128 threads, about
	// one block per SM of an H100 (132), so the grid reaches every SM.
	// Below that both mappings launch a thread per slice in under a wave
	// and the time is the launch's; the col mapping, which serves them
	// already, keeps them.
	scanShortMinSlices = 1 << 14
	// scanShortSmemCap bounds the staged shared memory of a block (the
	// opt-in limit asked of the function); past it the kernel reads its
	// slices in global memory instead.
	scanShortSmemCap = 96 << 10
	// scanShortChunk is the bytes of each operand a wide staged block
	// moves, at most: the slices a thread (shortSlices) grow to it.
	scanShortChunk = 8 << 10
	// scanShortMaxSlices bounds the slices a thread of shortSlices,
	// scanShortMaxSlicesEnv those scanShortWideEnv may ask for.
	scanShortMaxSlices    = 16
	scanShortMaxSlicesEnv = 64
	// scanShortFill is the fewest blocks per SM the wide forms keep
	// (default policy): fewer slices a thread where the tensor is small.
	scanShortFill = 8
)

// The short kernel's forms (L.vec).
const (
	shortDirect = 0
	shortInner  = 1
	shortOuter  = 2
)

// scanShortBlock is the short kernels' block: the spec's Block of the
// variant (gen/spec_scan.go), which newKernelRef gives the plan's kernel
// (TestScanShortPolicy checks that they agree).
const scanShortBlock = 128

// scanShortPicks reports whether a plan of n elements along the axis and
// nslices slices takes the short mapping, given the knob's value env.
func scanShortPicks(n, nslices int64, env string) bool {
	switch {
	case env == "never" || n > scanShortMaxN || n < 1:
		return false
	case scanCeil(nslices, scanShortBlock) > maxGridX:
		return false
	case env == "always":
		return true
	}
	return nslices >= scanShortMinSlices
}

// scanShortSmem is the staged kernel's dynamic shared memory for blocks
// of slices slices, ns elements apart (shortStride; n | 1 in the first
// form), for dy and for x and y where the op reads them.
func scanShortSmem(op ScanOp, dt dtype.DType, ns, slices int64) int64 {
	return op.inputs() * slices * ns * int64(dt.Size())
}

// shortStride is the wide forms' distance of staged slices in shared
// memory for an axis of n elements of size bytes: an odd number of 32-bit
// words for 16-bit types (2 mod 4 elements, at least n), an odd number of
// elements otherwise, so that the lanes of a warp reading one column of
// their slices hit distinct banks.
func shortStride(n int64, size int) int64 {
	if size == 2 {
		return (n+1)/4*4 + 2
	}
	return n | 1
}

// shortSlices is the wide forms' most slices a thread for an axis of n
// elements of dt: as many as keep a block's share of an operand within
// scanShortChunk, 1 to scanShortMaxSlices.
func shortSlices(dt dtype.DType, n int64, block int) int64 {
	k := scanShortChunk / (int64(block) * n * int64(dt.Size()))
	return min(max(k, 1), scanShortMaxSlices)
}

// shortStaged reports whether the short kernel can stage L's operands
// in the inner form: the slices merge into one dim (srank 1) and every
// operand the op uses has unit stride along the axis and slices n
// elements apart, so that any run of consecutive slices is one contiguous
// chunk.
func shortStaged(op ScanOp, L *scanLayout) bool {
	if L.srank != 1 {
		return false
	}
	x, y := op.Saved()
	used := [4]bool{true, x, y, true}
	for t, u := range used {
		if u && (L.astride[t] != 1 || L.sstride[t][0] != L.n) {
			return false
		}
	}
	return true
}

// shortOuterOK reports whether the short kernel can stage L's operands
// in the outer form: every operand the op uses has unit stride along the
// innermost slice dim, so that consecutive slices of one row of it are,
// for each element of the axis, one contiguous row.
func shortOuterOK(op ScanOp, L *scanLayout) bool {
	r := int(L.srank) - 1
	if r < 0 {
		return false
	}
	x, y := op.Saved()
	used := [4]bool{true, x, y, true}
	for t, u := range used {
		if u && L.sstride[t][r] != 1 {
			return false
		}
	}
	return true
}

// shortLaunch is one launch of the short kernel: its grid and dynamic
// shared memory (L's short fields set alongside).
type shortLaunch struct {
	blocks int64
	smem   int
}

// shortLaunchFor sets L's short fields (vec: the form, split: slices a
// thread, items: the run length, units: the staged slice stride) for the
// plan's forms and returns the launch. staged: the plan's shared memory
// fits the device; sms: the device's multiprocessors.
func (p *ScanBackward) shortLaunchFor(L *scanLayout, staged bool, sms int) shortLaunch {
	op, dt, n := p.desc.Op, p.desc.DType, L.n
	block := int64(p.kernel.block)
	L.vec, L.split, L.items, L.units = shortDirect, 1, scanShortItems, 0
	if !p.shortOld && n <= scanShortItems4 {
		L.items = scanShortItems4
	}
	direct := shortLaunch{blocks: scanCeil(L.nslices, block)}
	if !staged {
		return direct
	}
	if p.shortOld {
		if !shortStaged(op, L) {
			return direct
		}
		L.vec, L.units = shortInner, n|1
		return shortLaunch{blocks: direct.blocks, smem: int(scanShortSmem(op, dt, n|1, block))}
	}
	k := p.shortK
	if !p.shortAll {
		k = min(k, max(1, L.nslices/(block*int64(max(sms, 1))*scanShortFill)))
	}
	var blocks int64
	switch {
	case shortStaged(op, L):
		L.vec = shortInner
		blocks = scanCeil(L.nslices, block*k)
	case shortOuterOK(op, L) && (p.shortAll || L.sdim[L.srank-1] >= block):
		d0 := L.sdim[L.srank-1]
		k = min(k, scanCeil(d0, block))
		L.vec = shortOuter
		blocks = L.nslices / d0 * scanCeil(d0, block*k)
	default:
		return direct
	}
	if blocks > maxGridX {
		L.vec = shortDirect
		return direct
	}
	ns := shortStride(n, dt.Size())
	L.split, L.units = int32(k), ns
	return shortLaunch{blocks: blocks, smem: int(scanShortSmem(op, dt, ns, block*k))}
}

// setShort makes p a short plan: its kernel, the forms the knob allows,
// and the shared memory of the largest staged launch (every form's, up to
// the most slices a thread) where that is at most scanShortSmemCap (0
// otherwise: Run reads the slices in place).
func (p *ScanBackward) setShort(name string) {
	p.kernel = newKernelRef("scan", name)
	p.short = true
	env := knob(scanShortWideEnv)
	p.shortOld, p.shortAll = env == "never", env == "always"
	op, dt, n := p.desc.Op, p.desc.DType, p.geom.n
	block := int64(p.kernel.block)
	sm := scanShortSmem(op, dt, n|1, block)
	p.shortK = 1
	if !p.shortOld {
		p.shortK = shortSlices(dt, n, p.kernel.block)
		if v, err := strconv.Atoi(env); err == nil && v >= 1 && v <= scanShortMaxSlicesEnv {
			p.shortK = int64(v)
		}
		sm = max(sm, scanShortSmem(op, dt, shortStride(n, dt.Size()), block*p.shortK))
	}
	if sm <= scanShortSmemCap {
		p.kernel.smem, p.kernel.smemCap = int(sm), scanShortSmemCap
	}
}
