package ops

import (
	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// The short mapping (gen/scan_short.cuh, scan_backward_short): a thread
// owns a whole slice of a short axis and runs its scan in registers, so no
// tiles, look-back or workspace. Where every operand has unit stride along
// the axis and the slices follow each other (shortStaged), a block stages
// its slices' contiguous chunk of each operand through shared memory with
// 16-byte accesses; otherwise each thread reads its slice along the axis
// strides, which along an outer axis is coalesced across consecutive
// slices.

// scanShortEnv, read when a plan is made, overrides where a plan takes the
// short mapping: "never" keeps plans off it, "always" takes it for every
// axis of at most scanShortMaxN elements however few slices. It is a
// kernel developer's knob (to time or test one mapping against another);
// users leave it unset.
const scanShortEnv = "BARACUDA_SCAN_SHORT"

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

// scanShortSmem is the staged kernel's dynamic shared memory for an axis
// of n elements: block slices of n | 1 elements (an odd stride, see
// gen/scan_short.cuh) for dy and for x and y where the op reads them.
func scanShortSmem(op ScanOp, dt dtype.DType, n int64, block int) int64 {
	return op.inputs() * int64(block) * (n | 1) * int64(dt.Size())
}

// shortStaged reports whether the short kernel can stage L's operands: the
// slices merge into one dim (srank 1) and every operand the op uses has
// unit stride along the axis and slices n elements apart, so that any run
// of consecutive slices is one contiguous chunk.
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

// runShort launches the short kernel: a thread per slice, staged where
// shortStaged holds and the block's shared memory fits the device
// (smemBlocksPerSM > 0), else reading the slices in place.
func (p *ScanBackward) runShort(s *driver.Stream, a *ScanArgs, L *scanLayout) error {
	lf, err := p.kernel.resolve(s.Context())
	if err != nil {
		return err
	}
	smem := 0
	L.vec = 0
	if p.kernel.smem > 0 && shortStaged(p.desc.Op, L) && lf.smemBlocksPerSM > 0 {
		L.vec, smem = 1, p.kernel.smem
	}
	block := int64(p.kernel.block)
	return p.launchWith(lf, s, a, L, scanCeil(L.nslices, block), int(block), smem)
}

// setShort makes p a short plan: its kernel, with the staged shared
// memory for its axis where that is at most scanShortSmemCap (0 otherwise:
// Run reads the slices in place).
func (p *ScanBackward) setShort(name string) {
	p.kernel = newKernelRef("scan", name)
	p.short = true
	if sm := scanShortSmem(p.desc.Op, p.desc.DType, p.geom.n, p.kernel.block); sm <= scanShortSmemCap {
		p.kernel.smem, p.kernel.smemCap = int(sm), scanShortSmemCap
	}
}
