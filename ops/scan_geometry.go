package ops

import (
	"strconv"

	"github.com/baracuda-go/baracuda/dtype"
)

// How a ScanBackward plan cuts its work, all fixed when the plan is made:
// the row and col mappings, the colpair and colstrip kernels' geometry
// (with their environment overrides), the elements per thread and the
// workspace layout. The plan is in scan.go; Run, the kernel layout and the
// launches in scan_launch.go.

// scanPairEnv set to "never" keeps plans off the colpair kernel (bf16
// cummax and cummin along an outer axis, two slices a lane), so that Run
// takes the col kernel wherever it would have taken colpair. It is a
// kernel developer's knob (to time or test one against the other); users
// leave it unset.
const scanPairEnv = "BARACUDA_SCAN_PAIR"

// scanStripEnv, read when a plan is made, overrides where Run takes the
// colstrip kernel (f16 and bf16 cummax and cummin along an outer axis, one
// block per strip of 32 slices): "never" keeps plans off it, "always" takes it
// wherever the device and the operands allow (any axis length that fits
// its shared memory, however few strips). It is a kernel developer's knob
// (to time or test one kernel against another); users leave it unset.
const scanStripEnv = "BARACUDA_SCAN_STRIP"

// The colstrip kernel (gen/scan_colstrip.cuh, scan_backward_colstrip): blocks of
// scanStripBlock threads, each a strip of scanStripW slices over the whole
// axis in stages of scanStripRows rows, a ring of scanStripDepth stages and
// a bit per element in shared memory. Its elements are 2 bytes (f16, bf16).
// scanStripBlock, scanStripW and scanStripDepth are generated
// (ops/zconsts.go).
const (
	scanStripSegs = scanStripBlock / scanStripW
	scanStripRows = 32 * scanStripSegs
	// scanStripSmemCap is the most shared memory the kernel asks for (a
	// block's most on an H100), which bounds the axis (32256 elements).
	scanStripSmemCap = 227 << 10
)

// scanStripSmem is the colstrip kernel's dynamic shared memory for an axis
// of n elements: the ring of 16-bit stages, the bit words, the segment
// totals and flags, and the carry (the layout of scan_backward_colstrip).
func scanStripSmem(n int64) int64 {
	stages := scanCeil(n, scanStripRows)
	return scanStripDepth*scanStripRows*scanStripW*2 + stages*scanStripSegs*scanStripW*4 +
		2*scanStripSegs*scanStripW*4 + scanStripW*4
}

// Launch geometry. The kernels view the tensors as nslices slices of n
// elements along the axis. Two mappings:
//
//	row  (the axis is the innermost dim and longer than a col tile): split
//	     threads (32..256) share a slice, each owning rowN consecutive
//	     elements (16-byte loads where aligned), 256/split slices per block;
//	col  (otherwise): the lanes of a warp take 32 consecutive slices, so
//	     loads are coalesced across the inner dims, and split warps (1..8)
//	     share the axis, each owning items (<= colN) elements.
//
// A slice longer than one tile (row: 256*rowN, col: 8*colN elements) is cut
// into chunks tiles that chain through the workspace (a decoupled look-back
// in one kernel). With a forward state, the row mapping runs two passes
// first (tile aggregates, then their prefixes); cumprod in the col mapping
// computes it in the main launch, only for the 32-slice groups where a
// NaN y makes dx depend on it (gen/scan_fwd.cuh, scan_fwd_unit), so that
// most inputs need no pass at all. cummax and cummin in the col mapping (ext)
// chain the forward state through the look-back instead, tiles in scan
// order, and a fix pass adds the carry at each tile's last take-over
// (gen/scan.cuh explains why that is the only element it reaches): x is
// read once. With float opmath the fix pass runs in blocks of the main
// launch whose tickets come after every tile's (fixIn); f64 launches it
// after the kernel.
type scanGeom struct {
	row     bool
	tall    bool  // the tall mapping (scan_tall.go, scan_tallrow.go): the row mapping's forward-state passes and workspace
	smem    int64 // tall: the tile's dynamic shared memory, bytes
	split   int32
	items   int32
	pitch   int32 // tall: shared memory elements between two runs of a tile (tallPitch)
	n       int64
	nslices int64
	chunks  int64
	units   int64  // look-back units: slices (row) or 32-slice groups (col)
	ext     bool   // cummax/cummin, col, chunked: the scan-order kernel and its fix pass (the col kernel derives the same from the op and chunks)
	fixIn   bool   // ext, not f64: the fix pass's blocks come after the tiles in the main launch
	grid    int64  // blocks of the main launch (and of the tile-aggregate pass)
	fillers int64  // chunked, no forward-state passes: fill blocks, the first tickets (gen/scan_lookback.cuh, scan_take)
	tmagic  uint64 // chunked col: divMagic of the units (the tickets of a tile row)
	tshift  int32
	ws      scanWorkspace
	// pair is the colpair kernel's geometry, which Run takes where the
	// device has the kernel and the operands allow words (pairLayout):
	// bf16 cummax and cummin in the ext order over an even number of
	// slices; nil elsewhere.
	pair *scanGeom
}

// scanWorkspace is the workspace layout in bytes: a ticket counter at 0,
// a flag per tile and unit (f64 only: the float look-back's values are
// their own flags), a flag per unit (col cumprod only), then per
// tile and slice the tile's map, the
// value after it and its forward prefix (or value, in the ext order);
// float cumsum keeps its map (a sum) and the value after it in one slot
// of the map part, and has no incl part. [0, zero) holds scanNoneByte bytes
// before the tiles run (Run's memset of the ticket counter, [0, 16), then
// the main launch's fill blocks; or the row mapping's first forward-state
// pass): the ticket counter starts at all ones, and the look-back's flags
// (double opmath) and values (float opmath: each its own flag) and the
// unit flags read as not yet written (SCAN_NONE in gen/scan_io.cuh).
type scanWorkspace struct {
	flags, unitFlag, zero, agg, incl, fwd, fix, size int64
}

// scanItems is ScanItems in gen/zscan_items.cuh: elements per thread per
// tile in the row and col kernels. Both come from one table,
// gen/spec_scan_items.go (scanItemsByOp, ops/zscan_items.go), which also
// holds the tall kernel's (tallItems).
func scanItems(op ScanOp, dt dtype.DType) (row, col int64) {
	it := scanItemsByOp[op.String()][dt]
	return it[0], it[1]
}

// scanBlock and scanWarps are generated (ops/zconsts.go). scanCounter
// (ops/zconsts.go) is the workspace's first bytes: the ticket counter (and
// room to keep what follows 16-byte aligned), which Run sets to all ones
// when no forward-state pass does (gen/scan_lookback.cuh, scan_take).

func scanCeil(a, b int64) int64 { return (a + b - 1) / b }

func scanAlign16(v int64) int64 { return (v + 15) &^ 15 }

// scanRowMinEnv, read when a plan is made, sets the axis length above
// which an innermost axis takes the row mapping (by default 8 runs of the
// col mapping's items). It is a kernel developer's knob (to time the two
// mappings on short rows); users leave it unset.
const scanRowMinEnv = "BARACUDA_SCAN_ROWMIN"

// newScanGeom computes the geometry of a non-empty tensor.
func newScanGeom(op ScanOp, dt dtype.DType, shape []int, axis int, elems int64) scanGeom {
	rowN, colN := scanItems(op, dt)
	g := scanGeom{n: int64(shape[axis])}
	g.nslices = elems / g.n
	rowMin := 8 * colN
	if v, err := strconv.ParseInt(knob(scanRowMinEnv), 10, 64); err == nil && v >= 1 {
		rowMin = v
	}
	if numel(shape[axis+1:]) == 1 && g.n > rowMin {
		g.row = true
		g.split = 32
		for g.split < scanBlock && int64(g.split)*rowN < g.n {
			g.split *= 2
		}
		g.items = int32(rowN)
		g.chunks = scanCeil(g.n, int64(g.split)*rowN)
		g.units = g.nslices
		if g.chunks > 1 {
			g.grid = g.chunks * g.nslices
		} else {
			g.grid = scanCeil(g.nslices, int64(scanBlock/g.split))
		}
	} else {
		g.split, g.items, g.chunks = 8, int32(colN), scanCeil(g.n, 8*colN)
		if g.chunks == 1 {
			g.split = 1
			for int64(g.split)*colN < g.n {
				g.split *= 2
			}
			g.items = int32(scanCeil(g.n, int64(g.split)))
		}
		g.units = scanCeil(g.nslices, 32)
		if g.chunks > 1 {
			g.grid = g.chunks * g.units
		} else {
			g.grid = scanCeil(g.units, int64(8/g.split))
		}
	}
	g.chunked(op, dt)
	if g.ext && dt == dtype.BF16 && g.nslices%2 == 0 {
		if p := newScanPairGeom(op, dt, g.n, g.nslices); p.chunks > 1 {
			g.pair = &p
		}
	}
	return g
}

// scanPairItems (ops/zconsts.go, SCAN_PAIR_ITEMS in gen/zconsts.cuh, both
// generated from gen/spec_consts.go): elements per slice per thread per
// tile in the colpair kernel.

// newScanPairGeom is the colpair kernel's geometry (gen/scan_colpair.cuh,
// scan_backward_colpair): the col mapping's ext order with two slices a
// lane, so 64-slice look-back units and runs of scanPairItems.
func newScanPairGeom(op ScanOp, dt dtype.DType, n, nslices int64) scanGeom {
	g := scanGeom{n: n, nslices: nslices, split: 8, items: scanPairItems}
	g.chunks = scanCeil(n, 8*scanPairItems)
	g.units = scanCeil(nslices, 64)
	g.grid = g.chunks * g.units
	g.chunked(op, dt)
	return g
}

// chunked sets the workspace layout, the ext order, the ticket constants
// and the fill and fix blocks of a geometry whose slices are cut into
// tiles (chunks > 1; nothing otherwise).
func (g *scanGeom) chunked(op ScanOp, dt dtype.DType) {
	if g.chunks > 1 {
		if !g.row {
			g.tmagic, g.tshift = divMagic(g.units)
		}
		msize := int64(4)
		if dt == dtype.F64 {
			msize = 8
		}
		g.ext = !g.row && !g.tall && (op == ScanCummax || op == ScanCummin)
		w := &g.ws
		w.flags = scanCounter
		w.unitFlag = w.flags
		if dt == dtype.F64 {
			w.unitFlag = scanAlign16(w.flags + g.chunks*g.units*4)
		}
		w.agg = w.unitFlag
		if g.lazyFwd(op) {
			// A flag per unit: its forward state written, or not needed
			// (gen/scan_fwd.cuh, scan_fwd_unit).
			w.agg = scanAlign16(w.unitFlag + g.units*4)
		}
		mapBytes, inclBytes := 2*msize, msize
		if op == ScanCumsum && dt != dtype.F64 {
			// Packed: a cumsum map is its sum alone, kept with the value
			// after the tile in one 8-byte slot (gen/scan_lookback.cuh, PackedChain).
			mapBytes, inclBytes = 8, 0
		}
		w.incl = scanAlign16(w.agg + g.chunks*g.nslices*mapBytes)
		w.fwd = scanAlign16(w.incl + g.chunks*g.nslices*inclBytes)
		w.size = w.fwd
		w.zero = w.fwd
		if op.forwardState() {
			w.size = scanAlign16(w.fwd + g.chunks*g.nslices*msize)
		}
		if g.ext {
			// The ext order looks back on the forward values (fwd, incl).
			w.zero = w.size
			// A take-over record per tile and slice: dx there and k*.
			w.fix = w.size
			w.size = scanAlign16(w.fix + g.chunks*g.nslices*2*msize)
			if dt != dtype.F64 {
				// The fix blocks wait for the maps and records as slots
				// (gen/scan_col.cuh, scan_ext_fix), so the records are
				// filled too.
				g.fixIn = true
				g.grid += scanCeil(g.nslices, scanWarps) // a warp per slice
				w.zero = w.size
			}
		}
		g.addFillers(op)
	}
}

// scanFillShare is the most bytes of the workspace's slots that one fill
// block sets (16 KiB: four 16-byte stores a thread).
const scanFillShare = 16 << 10

// scanMaxFillers bounds the fill blocks.
const scanMaxFillers = 128

// addFillers gives a chunked launch without forward-state passes its fill
// blocks: the first tickets of the main launch set the slots,
// [scanCounter, ws.zero), to scanNoneByte bytes, so that Run's memset before it covers only the
// ticket counter (16 bytes). A memset of the slots would be a launch of
// its own; the fill blocks' stores overlap the tiles' loads.
func (g *scanGeom) addFillers(op ScanOp) {
	if g.passes(op) {
		return // the forward-state passes fill the slots
	}
	if n := g.ws.zero - scanCounter; n > 0 {
		g.fillers = min(scanCeil(n, scanFillShare), scanMaxFillers)
		g.grid += g.fillers
	}
}

// passes: a chunked row or tall launch of an op with a forward state runs two
// passes before the main launch, the first of which fills the look-back
// slots and resets the ticket counter (gen/scan_fwd.cuh, scan_fill_slots).
func (g *scanGeom) passes(op ScanOp) bool {
	return g.rowChunked() && op.forwardState()
}

// rowChunked: a row or tall geometry whose slices are cut into tiles (the
// launches that take the forward-state passes, or the carry passes).
func (g *scanGeom) rowChunked() bool {
	return g.chunks > 1 && (g.row || g.tall)
}

// lazyFwd: the forward state is computed in the main launch, where dx
// depends on it (cumprod in the col mapping), rather than by two passes
// before it (the row mapping's cumprod; cummax and cummin chain it
// through the look-back).
func (g *scanGeom) lazyFwd(op ScanOp) bool {
	return op == ScanCumprod && !g.row && !g.tall && g.chunks > 1
}
