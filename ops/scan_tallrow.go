package ops

import "github.com/baracuda-go/baracuda/dtype"

// The tallrow form of the tall mapping (gen/scan_tallrow.cuh,
// scan_backward_tallrow): a tall scan over scanTallRowK contiguous
// columns, e.g. [4194304, 4] along axis 0, taken as one long row whose
// element is the row vector. A thread holds the row mapping's run of
// elements (R rows of all columns, one contiguous piece moved in 16-byte
// packs straight into registers), split into one run per column; a
// block's 256 runs are a tile of 256*R rows, and warp 0 chains all
// columns' tiles at once. The tall kernel stages its tiles through
// shared memory and scans the columns in rounds; tallrow does neither.

// scanTallRowEnv, read when a plan is made, overrides where plans take
// the tallrow form: "never" keeps the tall kernel, "always" takes tallrow
// for every outer axis whose inner extent is scanTallRowK, however short
// the axis or many the slices (the tall mapping's policy otherwise). It
// is a kernel developer's knob (to time or test one kernel against the
// other); users leave it unset.
const scanTallRowEnv = "BARACUDA_SCAN_TALLROW"

// tallRowItems mirrors TallRowItems<T, Op>::R: the rows of a thread's run,
// the row mapping's elements a run (scanItems) over the columns.
func tallRowItems(op ScanOp, dt dtype.DType) int64 {
	row, _ := scanItems(op, dt)
	return row / scanTallRowK
}

// tallRowWanted is the policy: whether a plan takes the tallrow form
// (rowEnv and tallEnv are scanTallRowEnv's and scanTallEnv's values).
// Default: where the tall mapping is wanted (tallWanted) and the inner
// extent is scanTallRowK.
func tallRowWanted(shape []int, axis int, rowEnv, tallEnv string) bool {
	if rowEnv == "never" || tallEnv == "never" {
		return false
	}
	if _, inner := tallShape(shape, axis); inner != scanTallRowK {
		return false
	}
	return rowEnv == "always" || tallWanted(shape, axis, tallEnv)
}

// newScanTallRowGeom is the tallrow kernel's geometry: tiles of
// scanBlock*R rows, a block per tile and batch, slices s = a*K + j, a
// look-back unit per batch (all columns chain in one warp); the tall
// mapping's workspace, fill blocks and forward-state passes (g.tall).
func newScanTallRowGeom(op ScanOp, dt dtype.DType, n, outer int64) scanGeom {
	items := tallRowItems(op, dt)
	g := scanGeom{tall: true, n: n, nslices: outer * scanTallRowK, split: scanWarps, items: int32(items)}
	g.chunks = scanCeil(n, scanBlock*items)
	g.units = outer
	g.grid = g.chunks * outer
	g.chunked(op, dt)
	return g
}

// newTallRow sets the plan's tallrow kernel and geometry where the policy
// takes the tallrow form (numel > 0).
func (p *ScanBackward) newTallRow() {
	if !tallRowWanted(p.shape, p.axis, knob(scanTallRowEnv), knob(scanTallEnv)) {
		return
	}
	name, ok := lookupKernel("scan", p.desc.Op.String(), p.desc.DType, "tallrow")
	if !ok {
		return
	}
	outer, _ := tallShape(p.shape, p.axis)
	g := newScanTallRowGeom(p.desc.Op, p.desc.DType, int64(p.shape[p.axis]), outer)
	if g.grid > maxGridX {
		return
	}
	p.trowG = &g
	p.trowK = newKernelRef("scan", name)
}
