package ops

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Single-axis scan backward (torch.cumsum, cumprod, cummax, cummin,
// logcumsumexp), PyTorch's autograd values (docs/semantics.md, section 4).
//
// Number the elements of a slice along the axis in the order the forward
// scan visited them: k = 0 is the first element of the axis, or its last
// when the forward ran in reverse (Reverse). With g = dy every op is one
// recurrence, run from the end of the slice to its start:
//
//	S_k  = g_k + V_{k+1}                      (V past the end is 0)
//	dx_k = c_k == 0 ? 0 : c_k * S_k
//	V_k  = a_k (.) S_k,   a (.) b = (a == 0 || b == 0) ? 0 : a*b
//
// The strong-zero product keeps a cut (a_k == 0) exact: an inf or NaN from
// later elements never reaches the elements before it. The factors a_k and
// c_k of each op, as in gen/scan.cuh:
//
//	cumsum        a = c = 1
//	cumprod       a = x_k, c = y_{k-1} (y_{-1} = 1)
//	cummax/min    c = [the forward index moves to k], a = 1 - c
//	logcumsumexp  a = exp(y_{k-1} - y_k), c = exp(x_k - y_k)
//
// Sums accumulate in opmath (f32 for f16, bf16 and f32; f64 for f64), which
// is more accurate than PyTorch's storage-dtype scans, and every dx is
// rounded once.

// ScanOp is a scan whose backward ScanBackward computes.
type ScanOp uint8

const (
	// ScanCumsum: y_k = x_0 + ... + x_k; dx_k = g_k + ... + g_{n-1}, the
	// reverse cumsum of dy. Saves nothing.
	ScanCumsum ScanOp = iota + 1
	// ScanCumprod: y_k = x_0 * ... * x_k; dx_k = y_{k-1} * Σ_{j>=k} g_j *
	// x_{k+1}...x_j (y_{-1} = 1), exact with zeros and without division,
	// so PyTorch's three regions hold: before the first zero z1 the usual
	// value; at z1 the sum cut at the second zero; after z1 exactly 0, even
	// where y is NaN. Where x_k is ±inf or NaN and no zero precedes it, dx_k
	// is NaN (PyTorch's division), except along an axis of length 1, where
	// dx = dy. Saves x and y.
	ScanCumprod
	// ScanCummax: dx_k = the sum of g_j over the j whose forward index is k
	// (a gather: deterministic, no atomics). The index moves to j when x_j is
	// NaN (each NaN takes over) or when the running max is not NaN and x_j >=
	// it: the LAST occurrence wins ties, and a number never replaces a
	// running NaN. Saves x.
	ScanCummax
	// ScanCummin: as ScanCummax with x_j <= the running min.
	ScanCummin
	// ScanLogcumsumexp: y_k = log Σ_{i<=k} exp(x_i); dx_k = exp(x_k - y_k) *
	// T_k with T_k = g_k + exp(y_k - y_{k+1}) T_{k+1}, PyTorch's exp(x_k) *
	// Σ_{j>=k} g_j exp(-y_j) without overflow for large |x| (every exponent
	// is <= 0). A leading -inf run of x (y = -inf) gives NaN there, as
	// PyTorch; an x_k of -inf after it gives 0; a NaN in dy contributes
	// nothing, as in PyTorch's log-space formula. Saves x and y.
	ScanLogcumsumexp
)

var scanOpNames = [...]string{ScanCumsum: "cumsum", ScanCumprod: "cumprod", ScanCummax: "cummax",
	ScanCummin: "cummin", ScanLogcumsumexp: "logcumsumexp"}

// String returns the op's lower-case name, e.g. "cumprod", as it appears
// in KernelInfo.Op, kernel names and error messages. An unknown op prints
// as ScanOp(N).
func (op ScanOp) String() string {
	if op >= 1 && int(op) < len(scanOpNames) {
		return scanOpNames[op]
	}
	return fmt.Sprintf("ScanOp(%d)", uint8(op))
}

// ScanOps lists every scan op.
func ScanOps() []ScanOp {
	return []ScanOp{ScanCumsum, ScanCumprod, ScanCummax, ScanCummin, ScanLogcumsumexp}
}

// Saved reports which forward tensors the op's backward reads: x (the
// input) and y (the output).
func (op ScanOp) Saved() (x, y bool) {
	switch op {
	case ScanCumprod, ScanLogcumsumexp:
		return true, true
	case ScanCummax, ScanCummin:
		return true, false
	}
	return false, false
}

// forwardState reports whether the op scans a forward state (cumprod: a
// zero seen; cummax/cummin: the running extremum) besides the backward
// recurrence; long axes then need two extra passes.
func (op ScanOp) forwardState() bool {
	return op == ScanCumprod || op == ScanCummax || op == ScanCummin
}

// ScanDesc describes a scan backward.
type ScanDesc struct {
	Op    ScanOp
	DType dtype.DType
	// Shape of x, y, dy and dx: rank 1..8, dims >= 0.
	Shape []int
	// Axis is the scanned dim, 0..rank-1; a negative axis counts from the
	// end, as in PyTorch.
	Axis int
	// Reverse: the forward scan ran from the end of the axis to its start
	// (y_k combines x_k..x_{n-1}); the backward mirrors.
	Reverse bool
}

// ScanArgs are the operands of one Run. Every tensor has the plan's shape
// and dtype and may be strided. X and Y are the forward input and output,
// required as ScanOp.Saved says and ignored otherwise. DX is written in
// full (no zeroing needed); it may be the identical tensor as DY or X (in
// place) but must not otherwise overlap them, and must not overlap Y (the
// kernel reads y of neighbouring elements).
type ScanArgs struct {
	DY, X, Y, DX Tensor
	// Workspace is scratch memory of at least WorkspaceSize() bytes,
	// 16-byte aligned, when that is not 0; a Run owns it until the stream
	// reaches the Run's end. It needs no initialization.
	Workspace driver.Buffer
}

// ScanBackward is a validated plan for one scan backward. It is immutable
// and safe for concurrent use (each concurrent Run needs its own workspace).
type ScanBackward struct {
	id     planID
	desc   ScanDesc
	shape  []int
	axis   int
	numel  int64
	geom   scanGeom
	kernel *kernelRef
	pairK  *kernelRef // the colpair kernel where geom.pair is set (and scanPairEnv is not "never")
	// stripK is the colstrip kernel (f16 and bf16 cummax and cummin along
	// an outer axis that fits its shared memory; scanStripEnv not
	// "never"), with its block and its shared memory for this axis;
	// stripAll: scanStripEnv "always".
	stripK   *kernelRef
	stripAll bool
}

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
const (
	scanStripBlock = 512
	scanStripW     = 32
	scanStripSegs  = scanStripBlock / scanStripW
	scanStripRows  = 32 * scanStripSegs
	scanStripDepth = 3
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
	split   int32
	items   int32
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
// of the map part, and has no incl part. [0, zero) holds 0xff bytes
// before the tiles run (Run's memset of the ticket counter, [0, 16), then
// the main launch's fill blocks; or the row mapping's first forward-state
// pass): the ticket counter starts at all ones, and the look-back's flags
// (double opmath) and values (float opmath: each its own flag) and the
// unit flags read as not yet written (SCAN_NONE in gen/scan_io.cuh).
type scanWorkspace struct {
	flags, unitFlag, zero, agg, incl, fwd, fix, size int64
}

// scanItems mirrors ScanItems in gen/scan_ops.cuh: elements per thread per
// tile in the row and col kernels.
func scanItems(op ScanOp, dt dtype.DType) (row, col int64) {
	size := dt.Size()
	switch op {
	case ScanCumsum:
		switch size {
		case 8:
			return 8, 8
		case 2:
			return 32, 32
		}
		return 16, 32
	case ScanCummax, ScanCummin:
		switch {
		case size == 8:
			return 16, 16
		case dt == dtype.BF16:
			return 32, 20 // dy and x of 32 held at once spill (compute_80 build)
		case size == 2:
			return 32, 32
		}
		return 16, 32
	}
	if size == 8 {
		return 8, 8
	}
	if op == ScanCumprod && dt == dtype.BF16 {
		return 16, 15 // 16 spills within the compute_80 build's 80 registers
	}
	return 16, 16
}

const (
	scanBlock = 256
	scanWarps = scanBlock / 32
)

// scanCounter is the workspace's first bytes: the ticket counter (and
// room to keep what follows 16-byte aligned), which Run sets to all ones
// when no forward-state pass does (gen/scan_lookback.cuh, scan_take).
const scanCounter = 16

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
	if v, err := strconv.ParseInt(os.Getenv(scanRowMinEnv), 10, 64); err == nil && v >= 1 {
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

// scanPairItems mirrors SCAN_PAIR_ITEMS in gen/scan_colpair.cuh: elements per
// slice per thread per tile in the colpair kernel.
const scanPairItems = 22

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
		g.ext = !g.row && (op == ScanCummax || op == ScanCummin)
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
// [scanCounter, ws.zero), to 0xff bytes, so that Run's memset before it covers only the
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

// passes: a chunked row launch of an op with a forward state runs two
// passes before the main launch, the first of which fills the look-back
// slots and resets the ticket counter (gen/scan_fwd.cuh, scan_fill_slots).
func (g *scanGeom) passes(op ScanOp) bool {
	return g.chunks > 1 && g.row && op.forwardState()
}

// lazyFwd: the forward state is computed in the main launch, where dx
// depends on it (cumprod in the col mapping), rather than by two passes
// before it (the row mapping's cumprod; cummax and cummin chain it
// through the look-back).
func (g *scanGeom) lazyFwd(op ScanOp) bool {
	return op == ScanCumprod && !g.row && g.chunks > 1
}

// NewScanBackward validates desc and returns a plan for it. The error wraps
// ErrUnsupported for an unknown op or a shape too large to launch, ErrDType
// for an invalid dtype, ErrRank or ErrShape for a bad shape and ErrAxis for
// an axis out of range.
func NewScanBackward(desc ScanDesc) (*ScanBackward, error) {
	// The plan's kernel is the row or col mapping, chosen from the shape;
	// the colpair and colstrip kernels are added where they may apply.
	id := planID{plan: "ScanBackward", op: desc.Op.String(), dt: desc.DType}
	if desc.Op < ScanCumsum || desc.Op > ScanLogcumsumexp {
		return nil, id.errorf(ErrUnsupported, "unknown scan op %d", uint8(desc.Op))
	}
	if err := id.checkDType(desc.DType); err != nil {
		return nil, err
	}
	if err := id.checkShape("shape", desc.Shape, 1); err != nil {
		return nil, err
	}
	axis, err := id.normalizeAxis(desc.Axis, desc.Shape)
	if err != nil {
		return nil, err
	}
	numel := int64(1)
	for _, d := range desc.Shape {
		if d == 0 {
			numel = 0
			break
		}
	}
	if numel != 0 {
		for _, d := range desc.Shape {
			if numel > (1<<62)/int64(d) {
				return nil, id.errorf(ErrShape, "shape %v has more than 2^62 elements", desc.Shape)
			}
			numel *= int64(d)
		}
	}
	p := &ScanBackward{id: id, desc: desc, shape: append([]int(nil), desc.Shape...), axis: axis, numel: numel}
	p.desc.Shape = p.shape
	variant := "col"
	if numel > 0 {
		p.geom = newScanGeom(desc.Op, desc.DType, p.shape, axis, numel)
		if p.geom.grid > maxGridX {
			return nil, id.errorf(ErrUnsupported, "shape %v along axis %d needs %d blocks, more than a grid holds (%d)",
				desc.Shape, axis, p.geom.grid, maxGridX)
		}
		if p.geom.row {
			variant = "row"
		}
	}
	name, ok := lookupKernel("scan", desc.Op.String(), desc.DType, variant)
	if !ok {
		return nil, id.errorf(ErrUnsupported, "no kernel for %s %s", desc.Op, desc.DType)
	}
	p.kernel = newKernelRef("scan", name)
	if p.geom.pair != nil && os.Getenv(scanPairEnv) != "never" {
		if pname, ok := lookupKernel("scan", desc.Op.String(), desc.DType, "colpair"); ok {
			p.pairK = newKernelRef("scan", pname)
		}
	}
	env := os.Getenv(scanStripEnv)
	p.stripAll = env == "always"
	if numel > 0 && !p.geom.row && (p.geom.chunks > 1 || p.stripAll) && env != "never" {
		if sm := scanStripSmem(p.geom.n); sm <= scanStripSmemCap {
			if sname, ok := lookupKernel("scan", desc.Op.String(), desc.DType, "colstrip"); ok {
				p.stripK = newKernelRef("scan", sname)
				p.stripK.smem, p.stripK.smemCap = int(sm), scanStripSmemCap
			}
		}
	}
	return p, nil
}

// Kernel identifies the kernel a Run launches for contiguous operands where
// no faster kernel applies, for logs, diagnostics and tests. It depends only
// on the descriptor, not on the GPU. For f16 and bf16 cummax and cummin
// along an axis other than the innermost, a Run may launch a faster kernel
// instead, where its device (compute capability 8.0 and up), the operands'
// layout and the tensor's size allow it; Warm loads every kernel a Run of
// the plan may launch.
func (p *ScanBackward) Kernel() KernelInfo {
	// For bf16 cummax and cummin along an axis other than the innermost,
	// cut into tiles, Run takes "colpair" in place of the "col" kernel
	// named here on compute capability 8.0 and up, where the operands
	// allow two slices a lane (the innermost slice dim of even length and
	// unit stride, the other strides even, 4-byte aligned tensors:
	// contiguous operands of an even number of slices do). For f16 and
	// bf16 cummax and cummin along such an axis Run takes "colstrip" ahead
	// of both (a block per strip of 32 slices over the whole axis, no
	// workspace) where the axis has at most 32256 elements, the device has
	// the compute_80 build and the shared memory, the operands allow
	// 16-byte rows (the innermost slice dim a multiple of 8 with unit
	// stride, the other strides multiples of 8, 16-byte aligned tensors)
	// and the strips fill one wave of the GPU to three quarters (99 to 132
	// strips, 3168 to 4224 slices, on an H100's 132 SMs).
	return KernelInfo{Name: p.kernel.name, Family: "scan", Op: p.id.op, DType: p.desc.DType, Backend: backend}
}

// Precision reports the plan's numerical guarantees: math in opmath; the
// scans accumulate in opmath.
func (p *ScanBackward) Precision() Precision { return precisionFor(p.desc.DType, true) }

// WorkspaceSize returns the bytes of scratch memory a Run needs in
// ScanArgs.Workspace. It is 0 unless the scanned axis is long: more than 64
// to 256 elements along an outer axis, or 2048 to 8192 along the innermost,
// by op and dtype. Beyond that it grows with the tensor, staying a small
// fraction of dy's size. It depends only on the descriptor, not on the GPU,
// and covers every kernel a Run of the plan may launch.
func (p *ScanBackward) WorkspaceSize() int64 { return p.wsSize() }

// wsSize is the larger of the two geometries' workspaces where the plan
// may take either kernel.
//
// A workspace is 0 unless a slice is longer than one tile, then 16 to 40
// bytes per tile and slice (cumprod along an axis other than the innermost
// adds 4 bytes per 32 slices). A tile is 256 runs along the innermost axis
// and 8 runs along any other; a run is 16 elements (8 for f64), with cumsum
// 32 (16-bit types along the innermost axis and f32/f16/bf16 along others),
// with cummax and cummin 32 (16 for f32 along the innermost axis and f64,
// 20 for bf16 along other axes), and with cumprod bf16 along other axes 15
// (scanItems). Where Run may take the colpair kernel (see Kernel) it is the
// larger of the two kernels' needs.
func (p *ScanBackward) wsSize() int64 {
	if p.geom.pair != nil {
		return max(p.geom.ws.size, p.geom.pair.ws.size)
	}
	return p.geom.ws.size
}

// Desc returns the plan's descriptor.
func (p *ScanBackward) Desc() ScanDesc {
	d := p.desc
	d.Shape = append([]int(nil), p.shape...)
	return d
}

// Check validates args against the plan without launching anything.
func (p *ScanBackward) Check(a *ScanArgs) error {
	dt, id := p.desc.DType, p.id
	needX, needY := p.desc.Op.Saved()
	if err := id.checkTensor("dy", &a.DY, roleInput, dt, p.shape); err != nil {
		return err
	}
	if needX {
		if err := id.checkTensor("x", &a.X, roleSaved, dt, p.shape); err != nil {
			return err
		}
	}
	if needY {
		if err := id.checkTensor("y", &a.Y, roleSaved, dt, p.shape); err != nil {
			return err
		}
	}
	if err := id.checkTensor("dx", &a.DX, roleOutput, dt, p.shape); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	size := int64(dt.Size())
	dxLo, dxHi := tensorRange(&a.DX, size)
	if lo, hi := tensorRange(&a.DY, size); lo < dxHi && dxLo < hi && !sameLayout(&a.DX, &a.DY) {
		return id.errorf(ErrLayout, "dx overlaps dy without being the identical tensor (in place)")
	}
	if needX {
		if lo, hi := tensorRange(&a.X, size); lo < dxHi && dxLo < hi && !sameLayout(&a.DX, &a.X) {
			return id.errorf(ErrLayout, "dx overlaps x without being the identical tensor (in place)")
		}
	}
	if needY {
		if lo, hi := tensorRange(&a.Y, size); lo < dxHi && dxLo < hi {
			return id.errorf(ErrLayout, "dx overlaps y; %s reads y of neighbouring elements, so dx needs its own memory", p.desc.Op)
		}
	}
	need := p.wsSize()
	if need == 0 {
		return nil
	}
	w := a.Workspace
	if w.Addr == 0 {
		return id.errorf(ErrMissing, "workspace of %d bytes is required (WorkspaceSize) for %d tiles of %d slices",
			need, p.geom.chunks, p.geom.nslices)
	}
	if w.Size < need {
		return id.errorf(ErrBufferTooSmall, "workspace needs %d bytes (WorkspaceSize) but has %d", need, w.Size)
	}
	if uintptr(w.Addr)%16 != 0 {
		return id.errorf(ErrLayout, "workspace address %#x is not 16-byte aligned", uintptr(w.Addr))
	}
	wLo, wHi := uintptr(w.Addr), uintptr(w.Addr)+uintptr(need)
	ts := [4]*Tensor{&a.DY, &a.X, &a.Y, &a.DX}
	used := [4]bool{true, needX, needY, true}
	for i, t := range ts {
		if lo, hi := tensorRange(t, size); used[i] && lo < wHi && wLo < hi {
			return id.errorf(ErrLayout, "workspace overlaps %s", [4]string{"dy", "x", "y", "dx"}[i])
		}
	}
	return nil
}

// tensorRange is the byte range [lo, hi) a validated, non-empty tensor
// addresses.
func tensorRange(t *Tensor, size int64) (lo, hi uintptr) {
	span := int64(1)
	for d := range t.Shape {
		span += int64(t.Shape[d]-1) * t.strideOf(d)
	}
	return uintptr(t.Buf.Addr), uintptr(t.Buf.Addr) + uintptr(span*size)
}

// sameLayout reports whether a and b address the same elements in the
// same order.
func sameLayout(a, b *Tensor) bool {
	if a.Buf.Addr != b.Buf.Addr {
		return false
	}
	for d := range a.Shape {
		if a.Shape[d] != 1 && a.strideOf(d) != b.strideOf(d) {
			return false
		}
	}
	return true
}

// scanLayout mirrors ScanLayout in gen/scan_ops.cuh; it travels by value as
// the kernel's last parameter.
type scanLayout struct {
	n, nslices, chunks, units int64
	srank, reverse, phase     int32
	split, items, vec         int32
	sdim                      [MaxRank - 1]int64
	smagic                    [MaxRank - 1]uint64
	sshift                    [MaxRank]int32
	sstride                   [4][MaxRank - 1]int64 // dy, x, y, dx
	astride                   [4]int64
	wsFlags, wsAgg, wsIncl    int64
	wsFwd, wsFix, wsUnitFlag  int64
	tmagic                    uint64 // bc_div's constants for the tickets of a tile row
	tshift, lsplit            int32  // lsplit: log2(split)
	wsFill                    int64  // the fill blocks' part: [scanCounter, wsFill)
	fillers, _                int32
}

// Kernel phases (SCAN_MAIN, SCAN_FWD_TILES, SCAN_FWD_PREFIX,
// SCAN_EXT_FIX, the last for f64 only). The ext order's main launch is
// SCAN_MAIN: the col kernel knows the order from the op and the tile
// count, and a block whose ticket comes after every tile's from it.
const (
	scanMain      = 0
	scanFwdTiles  = 1
	scanFwdPrefix = 2
	scanExtFix    = 4
)

// setGeom sets L's geometry fields from g (the strides are the args').
func (L *scanLayout) setGeom(g *scanGeom) {
	L.n, L.nslices, L.chunks, L.units = g.n, g.nslices, g.chunks, g.units
	L.split, L.items, L.phase = g.split, g.items, scanMain
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
func (p *ScanBackward) Run(s *driver.Stream, a *ScanArgs) error {
	// With a workspace Run queues, in the row mapping, two forward-state
	// passes for cumprod, cummax and cummin (the first fills the look-back
	// part), otherwise a 16-byte memset of the ticket counter (the main
	// launch's fill blocks fill the rest); then the scan kernel (ext: the
	// scan-order kernel with the fix pass's blocks after its tiles, or
	// with f64 the fix pass as a second launch).
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.numel == 0 {
		return nil
	}
	// Each kernel is resolved (on first use, JIT-compiled) only once Run
	// has chosen it, so a first Run compiles what it launches.
	ctx := s.Context()
	var L scanLayout
	g := &p.geom
	p.layout(a, &L, g)
	if p.stripK != nil {
		// Strips fill a wave only where there are at least three
		// quarters of a block per SM (stripFills): checked before the
		// kernel is loaded.
		if blocks, ok := stripLayout(a, &L); ok && (p.stripAll || 4*blocks >= 3*int64(deviceSMs(ctx))) {
			// colstrip where the device has it, its shared memory fits
			// and the strips fill one wave: no workspace, one launch.
			slf, err := p.stripK.resolve(ctx)
			switch {
			case err == nil && slf.smemBlocksPerSM > 0 && blocks <= maxGridX &&
				(p.stripAll || stripFills(blocks, slf.sms, slf.smemBlocksPerSM)):
				return p.launchWith(slf, s, a, &L, blocks, p.stripK.block, p.stripK.smem)
			case err != nil && !errors.Is(err, errNoBuild):
				return err
			}
		}
	}
	var lf *loadedFunction
	if p.pairK != nil && pairLayout(a, &L) {
		// colpair where the device has it (compute capability 8.0 and up).
		plf, err := p.pairK.resolve(ctx)
		switch {
		case err == nil:
			lf, g = plf, g.pair
			L.setGeom(g)
		case !errors.Is(err, errNoBuild):
			return err
		}
	}
	if lf == nil {
		var err error
		if lf, err = p.kernel.resolve(ctx); err != nil {
			return err
		}
	}
	if g.chunks > 1 {
		// The row mapping's forward-state passes fill the look-back part
		// and reset the ticket counter themselves (gen/scan_fwd.cuh,
		// scan_fill_slots); otherwise the counter is set to all ones here
		// and the main launch's fill blocks fill the rest (scan_take).
		passes := g.passes(p.desc.Op)
		if !passes {
			if err := s.MemsetD8Async(a.Workspace.Slice(0, scanCounter), 0xff); err != nil {
				return err
			}
		}
		if g.ext && !g.fixIn {
			if err := p.launch(lf, s, a, &L, g.grid); err != nil {
				return err
			}
			L.phase = scanExtFix
			return p.launch(lf, s, a, &L, scanCeil(g.nslices, scanWarps))
		}
		if passes {
			L.phase = scanFwdTiles // a block per tile
			if err := p.launch(lf, s, a, &L, g.grid); err != nil {
				return err
			}
			L.phase = scanFwdPrefix // a thread per slice
			if err := p.launch(lf, s, a, &L, scanCeil(g.nslices, scanBlock)); err != nil {
				return err
			}
			L.phase = scanMain
		}
	}
	return p.launch(lf, s, a, &L, g.grid)
}

func (p *ScanBackward) launch(lf *loadedFunction, s *driver.Stream, a *ScanArgs, L *scanLayout, blocks int64) error {
	return p.launchWith(lf, s, a, L, blocks, scanBlock, 0)
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
