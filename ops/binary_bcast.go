package ops

import (
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Broadcasting binary backward (BinaryDesc.AShape, BShape): the plan's
// launch geometry and the bcast family's launcher.
//
// Paths (gen/bcast.cuh), each a kernel per (op, dtype):
//   - tile (bcast_bw_<op>_<dtype>_tile): every tensor is contiguous and
//     dy, with dims of size 1 dropped and neighbouring dims merged where a
//     and b are both kept or both broadcast, is at most 2-D: [R, C]. Each
//     operand is then dy's shape (full), a row [C] broadcast along R (its
//     gradient sums columns), a column [R, 1] broadcast along C (it sums
//     rows) or one element (it sums everything), at most one of them [C].
//     Bias [N, C] + [C], x*s with a 0-d s, a row scale [N, D] * [N, 1] and
//     outer products [N, 1] * [1, D] take it: one pass over dy for both
//     outputs, and a small second pass over the workspace where a sum
//     spans several tiles.
//   - general (bcast_bw_<op>_<dtype>_gen): anything else (rank 3 and up
//     after merging, such as [B, T, D] * [B, 1, D]; both operands [C];
//     strided tensors): one pass over dy per wanted output, a thread per
//     kept element and chunk of the reduced elements, indices by division
//     over up to 8 dims; a second pass sums the chunks where there are
//     several.

// bcastTiles is the number of tiles the tile path aims at: enough blocks
// of 256 threads for about two waves on the largest GPUs. It depends only
// on the shape, so the sums' order (and their bits) does too.
const bcastTiles = 2048

// bcastGenItems is the number of work items the general path aims at, and
// bcastMinChunk the fewest reduced elements a chunk of it sums.
const (
	bcastGenItems = bcastTiles * 256
	bcastMinChunk = 32
)

// bcastPlan is a broadcasting plan's geometry, fixed by the shapes.
type bcastPlan struct {
	ap, bp  [MaxRank]int // a's and b's shapes aligned to dy's rank (leading 1s)
	tileOK  bool         // dy merges to [R, C]
	tile    bcastLayout  // its tile phase's layout (vec is set per Run)
	tileWS  int64
	gen     [2]bcastGeom // the general path per output
	genWS   int64
	genOffB int64 // workspace byte offset of db's general partials
	wsBytes int64
}

// bcastGeom is the general path's split of one output: kept and reduced
// element counts and the reduced chunks.
type bcastGeom struct {
	nk, nr, chunk, nchunks int64
}

// broadcastsTo reports whether shape broadcasts to out under PyTorch's
// rules (dims aligned from the end; each is out's or 1), and if not the
// first offending dim of shape.
func broadcastsTo(shape, out []int) (int, bool) {
	if len(shape) > len(out) {
		return 0, false
	}
	off := len(out) - len(shape)
	for d, n := range shape {
		if n != out[off+d] && n != 1 {
			return d, false
		}
	}
	return 0, true
}

// checkBroadcast validates an operand's own shape against dy's.
func (id planID) checkBroadcast(field string, shape, out []int) error {
	if err := id.checkShape(field, shape, 0); err != nil {
		return err
	}
	d, ok := broadcastsTo(shape, out)
	if ok {
		return nil
	}
	if len(shape) > len(out) {
		return id.errorf(ErrShape, "%s %v has rank %d, more than Shape %v (rank %d): it cannot broadcast to it",
			field, shape, len(shape), out, len(out))
	}
	return id.errorf(ErrShape, "%s %v does not broadcast to Shape %v: dim %d is %d, must be 1 or %d",
		field, shape, out, d, shape[d], out[len(out)-len(shape)+d])
}

// aligned returns shape with leading 1s up to rank n.
func aligned(shape []int, n int) [MaxRank]int {
	var s [MaxRank]int
	for d := 0; d < n; d++ {
		s[d] = 1
	}
	copy(s[n-len(shape):n], shape)
	return s
}

// newBcastPlan computes the geometry of a broadcasting plan.
func newBcastPlan(dt dtype.DType, shape, as, bs []int) *bcastPlan {
	n := len(shape)
	bc := &bcastPlan{ap: aligned(as, n), bp: aligned(bs, n)}
	msize := int64(8)
	if dt.OpMath() == "f32" {
		msize = 4
	}
	total := numel(shape)
	// The tile path's [R, C]: dims of dy merged while a's and b's kept or
	// broadcast status holds.
	type group struct {
		size   int64
		ka, kb bool
	}
	var gs []group
	for d := 0; d < n; d++ {
		if shape[d] == 1 {
			continue
		}
		ka, kb := bc.ap[d] == shape[d], bc.bp[d] == shape[d]
		if k := len(gs); k > 0 && gs[k-1].ka == ka && gs[k-1].kb == kb {
			gs[k-1].size *= int64(shape[d])
			continue
		}
		gs = append(gs, group{int64(shape[d]), ka, kb})
	}
	if total > 0 && len(gs) <= 2 {
		L := &bc.tile
		L.r, L.c = 1, 1
		L.kindA, L.kindB = bcastFull, bcastFull
		switch len(gs) {
		case 1:
			L.c = gs[0].size
			L.kindA, L.kindB = bcastKind1(gs[0].ka), bcastKind1(gs[0].kb)
		case 2:
			L.r, L.c = gs[0].size, gs[1].size
			L.kindA, L.kindB = bcastKind2(gs[0].ka, gs[1].ka), bcastKind2(gs[0].kb, gs[1].kb)
		}
		// The tile kernel keeps one set of column sums.
		bc.tileOK = !(L.kindA == bcastCol && L.kindB == bcastCol) && bcastTileGeometry(L, dt)
		if bc.tileOK {
			var sizes [2]int64
			for i, kind := range [2]int32{L.kindA, L.kindB} {
				cnt := int64(0)
				switch {
				case kind == bcastCol && L.nrt > 1:
					cnt = L.nrt * L.c
				case kind == bcastRow && L.nct > 1:
					cnt = L.nct * L.r
				case kind == bcastScalar && L.nrt*L.nct > 1:
					cnt = L.nrt * L.nct
				}
				sizes[i] = cnt * msize
			}
			L.partA, L.partB = boolInt(sizes[0] > 0), boolInt(sizes[1] > 0)
			L.wsB = roundUp(sizes[0], 256)
			bc.tileWS = L.wsB + sizes[1]
		}
	}
	// The general path's split per output.
	var sizes [2]int64
	for i, xs := range [2]*[MaxRank]int{&bc.ap, &bc.bp} {
		g := &bc.gen[i]
		g.nk, g.nr = 1, 1
		for d := 0; d < n; d++ {
			if shape[d] == 1 {
				continue
			}
			if xs[d] == shape[d] {
				g.nk *= int64(shape[d])
			} else {
				g.nr *= int64(shape[d])
			}
		}
		g.chunk, g.nchunks = g.nr, 1
		if g.nk > 0 && g.nr > bcastMinChunk && g.nk < bcastGenItems {
			want := min((bcastGenItems+g.nk-1)/g.nk, (g.nr+bcastMinChunk-1)/bcastMinChunk)
			if want > 1 {
				g.chunk = (g.nr + want - 1) / want
				g.nchunks = (g.nr + g.chunk - 1) / g.chunk
			}
		}
		if g.nchunks > 1 {
			sizes[i] = g.nchunks * g.nk * msize
		}
	}
	bc.genOffB = roundUp(sizes[0], 256)
	bc.genWS = bc.genOffB + sizes[1]
	if sizes[1] == 0 {
		bc.genWS = sizes[0]
	}
	bc.wsBytes = max(bc.tileWS, bc.genWS)
	return bc
}

// bcastKind1 is an operand's kind when dy merges to one dim [C] (R = 1).
func bcastKind1(kept bool) int32 {
	if kept {
		return bcastFull
	}
	return bcastScalar
}

// bcastKind2 is an operand's kind in dy's [R, C].
func bcastKind2(keptR, keptC bool) int32 {
	switch {
	case keptR && keptC:
		return bcastFull
	case keptC:
		return bcastCol
	case keptR:
		return bcastRow
	}
	return bcastScalar
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// bcastTileGeometry sets the tiles of L's [R, C]: a tile is rows (a
// multiple of the 8 warps) by J packs per lane of 32 lanes. With a
// BCAST_COL operand J is 1, so that each thread keeps its own columns'
// sums; otherwise a warp takes as much of a row as leaves bcastTiles
// tiles (all of it when there are that many row groups, or half as many
// with a BCAST_ROW operand, whose sums then need no partials). A single
// row (R = 1: every operand full or one element) is split among the
// block's 256 threads instead, J packs each, into about bcastTiles tiles,
// so that every warp streams dy and a 0-d operand's sum has one partial
// a tile. It reports false when the grid would not fit a launch.
func bcastTileGeometry(L *bcastLayout, dt dtype.DType) bool {
	N := int64(16 / dt.Size())
	packs := (L.c + N - 1) / N
	if L.r == 1 {
		const lanes = bcastWarps * 32
		J := max(1, (packs+bcastTiles*lanes-1)/(bcastTiles*lanes))
		L.j = int32(min(J, 1<<20))
		L.nct = (packs + lanes*int64(L.j) - 1) / (lanes * int64(L.j))
		L.nrt, L.rows = 1, bcastWarps
		L.phase = bcastTile
		return L.nct <= maxGridX
	}
	lanePacks := (packs + 31) / 32 // J that covers a row
	rows8 := (L.r + bcastWarps - 1) / bcastWarps
	// Whole rows need as many row groups as half the tiles; a BCAST_ROW
	// sum then needs no partials.
	whole := int64(bcastTiles)
	if L.kindA == bcastRow || L.kindB == bcastRow {
		whole = bcastTiles / 2
	}
	J := int64(1)
	if L.kindA != bcastCol && L.kindB != bcastCol {
		J = lanePacks
		if rows8 < whole {
			nct := (bcastTiles + rows8 - 1) / rows8
			J = max(1, (lanePacks+nct-1)/nct)
		}
	}
	if J > 1<<20 {
		J = 1 << 20
	}
	L.j = int32(J)
	L.nct = (packs + 32*J - 1) / (32 * J)
	nrt := min(max(1, (bcastTiles+L.nct-1)/L.nct), rows8)
	rows := (L.r + nrt - 1) / nrt
	L.rows = (rows + bcastWarps - 1) / bcastWarps * bcastWarps
	L.nrt = (L.r + L.rows - 1) / L.rows
	L.phase = bcastTile
	return L.nrt*L.nct <= maxGridX
}

// bcastWanted reports which outputs a Run writes.
func bcastWanted(a *BinaryArgs) [2]bool { return [2]bool{a.DA.Present(), a.DB.Present()} }

// runBroadcast queues a broadcasting plan's passes.
func (p *BinaryBackward) runBroadcast(s *driver.Stream, a *BinaryArgs) error {
	bc := p.bc
	want := bcastWanted(a)
	ts := [5]*Tensor{&a.DY, nil, nil, nil, nil}
	if p.desc.Op.needsSaved() {
		ts[1], ts[2] = &a.A, &a.B
	}
	if want[0] {
		ts[3] = &a.DA
	}
	if want[1] {
		ts[4] = &a.DB
	}
	if bc.tileOK {
		contiguous := true
		for _, t := range ts {
			if t != nil && !t.isContiguous() {
				contiguous = false
			}
		}
		if contiguous {
			return p.runTile(s, &ts, want, a.Workspace.Addr)
		}
	}
	for out := 0; out < 2; out++ {
		if !want[out] || bc.gen[out].nk == 0 {
			continue
		}
		if err := p.runGeneral(s, &ts, out, a.Workspace.Addr); err != nil {
			return err
		}
	}
	return nil
}

// runTile queues the tile pass and, where a wanted sum spans tiles, the
// finish pass.
func (p *BinaryBackward) runTile(s *driver.Stream, ts *[5]*Tensor, want [2]bool, ws driver.DevicePtr) error {
	L := p.bc.tile
	N := int64(16 / p.desc.DType.Size())
	// Packs need C to be whole packs and every tensor read or written in
	// packs (dy and the full and [C] operands) 16-byte aligned.
	L.vec = boolInt(L.c%N == 0)
	kinds := [5]int32{bcastFull, L.kindA, L.kindB, L.kindA, L.kindB}
	for i, t := range ts {
		if t != nil && (kinds[i] == bcastFull || kinds[i] == bcastCol) && uintptr(t.Buf.Addr)%16 != 0 {
			L.vec = 0
		}
	}
	if err := p.launchBcast(s, p.kernel, ts, ws, &L, uint32(L.nrt*L.nct)); err != nil {
		return err
	}
	work := int64(0)
	for i, part := range [2]int32{L.partA, L.partB} {
		if !want[i] || part == 0 {
			continue
		}
		// A finish block sums 32 columns or rows (a lane each, its warps
		// splitting the partials), or everything for a 0-d output.
		switch [2]int32{L.kindA, L.kindB}[i] {
		case bcastCol:
			work = max(work, (L.c+31)/32)
		case bcastRow:
			work = max(work, (L.r+31)/32)
		default:
			work = max(work, 1)
		}
	}
	if work == 0 {
		return nil
	}
	L.phase = bcastTileFinish
	return p.launchBcast(s, p.kernel, ts, ws, &L, uint32(min(work, maxGridX)))
}

// runGeneral queues the general pass for one output (0 da, 1 db) and its
// finish pass where the reduced elements are split into chunks.
func (p *BinaryBackward) runGeneral(s *driver.Stream, ts *[5]*Tensor, out int, ws driver.DevicePtr) error {
	g := p.bc.gen[out]
	var L bcastLayout
	L.phase, L.out = bcastGen, int32(out)
	L.nk, L.nr, L.chunk, L.nchunks = g.nk, g.nr, g.chunk, g.nchunks
	L.wsB = p.bc.genOffB
	p.generalDims(ts, out, &L)
	if err := p.launchBcast(s, p.genK, ts, ws, &L, gridCover(g.nk*g.nchunks, p.genK.block)); err != nil {
		return err
	}
	if g.nchunks == 1 {
		return nil
	}
	// A finish block sums 32 kept elements.
	L.phase = bcastGenFinish
	return p.launchBcast(s, p.genK, ts, ws, &L, uint32(min((g.nk+31)/32, maxGridX)))
}

// generalDims fills L's kept and reduced dims and strides for output out:
// dy's dims of size 1 dropped, each other dim kept where the output's
// operand has it and reduced where the operand is broadcast along it, and
// neighbours in each list merged where every tensor's strides allow.
func (p *BinaryBackward) generalDims(ts *[5]*Tensor, out int, L *bcastLayout) {
	bc, shape := p.bc, p.shape
	n := len(shape)
	xs := &bc.ap
	if out == 1 {
		xs = &bc.bp
	}
	// stride of operand t (1 a, 2 b) along dy's dim d: 0 where broadcast
	// or not given.
	opStride := func(t int, own *[MaxRank]int, d int) int64 {
		tp := ts[t]
		if tp == nil || own[d] != shape[d] {
			return 0
		}
		return tp.strideOf(d - (n - len(tp.Shape)))
	}
	for d := 0; d < n; d++ {
		if shape[d] == 1 {
			continue
		}
		size := int64(shape[d])
		st := [4]int64{ts[0].strideOf(d), opStride(1, &bc.ap, d), opStride(2, &bc.bp, d), 0}
		if xs[d] == shape[d] {
			st[3] = opStride(3+out, xs, d)
			L.krank = pushDim(&L.kdim, L.kstride[:], L.krank, st[:], size)
		} else {
			L.rrank = pushDim(&L.rdim, L.rstride[:], L.rrank, st[:3], size)
		}
	}
}

// pushDim adds a dim of the given size, with stride st[t] in tensor t, to
// the rank dims of a list (the kept or the reduced ones): merged into the
// last dim where every tensor's strides allow, else appended. It returns
// the list's new rank.
func pushDim(dims *[MaxRank]int64, strides [][MaxRank]int64, rank int32, st []int64, size int64) int32 {
	k := rank
	if k > 0 && mergeable(strides, k, st, size) {
		k--
		dims[k] *= size
	} else {
		dims[k] = size
		rank++
	}
	for t := range st {
		strides[t][k] = st[t]
	}
	return rank
}

// mergeable reports whether a dim of the given size and strides st merges
// into the previous one (index k-1) of strides: stepping the outer dim
// equals stepping over the whole inner one, for every tensor.
func mergeable(strides [][MaxRank]int64, k int32, st []int64, size int64) bool {
	for t := range st {
		if strides[t][k-1] != st[t]*size {
			return false
		}
	}
	return true
}

func (p *BinaryBackward) launchBcast(s *driver.Stream, k *kernelRef, ts *[5]*Tensor, ws driver.DevicePtr, L *bcastLayout, grid uint32) error {
	lf, err := k.resolve(s.Context())
	if err != nil {
		return err
	}
	args := driver.GetArgs()
	p.packBcast(args, ts, ws, L)
	err = lf.fn.Launch(s, [3]uint32{grid, 1, 1}, [3]uint32{uint32(k.block), 1, 1}, 0, args)
	driver.PutArgs(args)
	return err
}

// packBcast appends the kernel parameters in the order of the spec's
// bcast ABI: dy, a, b, da, db (absent ones as null), ws, scalar, layout.
func (p *BinaryBackward) packBcast(args *driver.Args, ts *[5]*Tensor, ws driver.DevicePtr, L *bcastLayout) {
	for _, t := range ts {
		if t != nil {
			args.Ptr(t.Buf.Addr)
		} else {
			args.Ptr(0)
		}
	}
	args.Ptr(ws)
	args.F64(p.scalar)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
