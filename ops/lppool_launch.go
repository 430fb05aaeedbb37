package ops

import (
	"math/bits"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// The LP pool plans' Run: the kernel layout built from the operands'
// strides, the variant and tiling it picks, and the launch. The plans are
// in lppool.go.

// lpSmemBytes bounds a tile's shared memory. Most tiles need a few KiB
// (a float per window column per tile row); at the bound 8 blocks of 256
// threads still fit an H100 SM's 228 KiB.
const lpSmemBytes = 24 << 10

// lpRowBytes (ops/zconsts.go, generated) is sizeof(LpRow) in
// gen/lppool_util.cuh: an input row's pointers and window rows, which the
// kernel's prologue computes once per tile.

// lpSmem is the dynamic shared memory of a tile, laid out as lp_tiled in
// gen/lppool.cuh reads it: nwMax+1 opmath sums per input row, rounded up
// to 16 bytes; tr row records; for the pack and cell variants a 4-byte
// phase-2 entry per cell of a segment (tu*cellsPer).
func lpSmem(variant int, tu, tr, cellsPer, nwMax, opSize int64) int64 {
	tab := int64(0)
	if variant != lpWide {
		tab = tu * cellsPer * 4
	}
	return (tr*(nwMax+1)*opSize+15)&^15 + tr*lpRowBytes + tab
}

// lpMaxTileRows bounds a tile's input rows (and row records: 12 KiB).
const lpMaxTileRows = 256

// rowsPer is the kernel's R, the input rows a thread takes: in the pack
// variant 4 for p == 1 and 2 for the others (the functors'
// rows in gen/lppool.cuh; consecutive rows share window rows and setup),
// else 1.
func (pl *lpPool) rowsPer(variant int) int64 {
	switch {
	case variant != lpPack:
		return 1
	case pl.p == 1:
		return 4
	}
	return 2
}

// blockThreads is a tile's block: tr/R thread rows of tu threads, at most
// the kernel's 256.
func (pl *lpPool) blockThreads(variant int, L *lpLayout) uint32 {
	return uint32(int64(L.tu) * (int64(L.tr) / pl.rowsPer(variant)))
}

// divMagic32 returns the constants of lp_div32 in gen/lppool_util.cuh, which
// divides any 0 <= n < 2^31 by 1 <= d <= 2^30 with a 32-bit multiply-high:
// for a power of two (0, log2 d); otherwise (ceil(2^(31+l)/d), l-1) with
// 2^(l-1) < d <= 2^l (the same theorem as divMagic, for 31-bit dividends).
func divMagic32(d int64) (magic uint32, shift int32) {
	u := uint64(d)
	l := bits.Len64(u - 1)
	if u&(u-1) == 0 {
		return 0, int32(l)
	}
	m := (uint64(1)<<(31+l) + u - 1) / u
	return uint32(m), int32(l - 1)
}

// layout fills L for the args' strides and picks the kernel variant and
// its tiling; smem is a tile's dynamic shared memory in bytes.
func (pl *lpPool) layout(a *LpPoolArgs, block int, L *lpLayout) (variant int, smem int) {
	*L = lpLayout{}
	ts := [4]*Tensor{&a.X, &a.Y, &a.DY, &a.DX}
	for t, tp := range ts {
		L.stride[t][0] = tp.strideOf(0)
		L.stride[t][1] = tp.strideOf(1)
		if pl.rank == 4 {
			L.stride[t][2] = tp.strideOf(2)
		}
		L.stride[t][3] = tp.strideOf(pl.rank - 1)
	}
	L.rows = pl.n * pl.c * pl.h
	L.h, L.w, L.ho, L.wo = int32(pl.h), int32(pl.w), int32(pl.ho), int32(pl.wo)
	L.kh, L.kw, L.sh, L.sw = int32(pl.kh), int32(pl.kw), int32(pl.sh), int32(pl.sw)
	L.hMagic, L.hShift = divMagic(pl.h)
	L.swMagic, L.swShift = divMagic32(pl.sw)
	L.shMagic, L.shShift = divMagic32(pl.sh)
	L.fCol, L.fRow, L.fCorner = pl.fCol, pl.fRow, pl.fCorner
	L.fCol32, L.fRow32, L.fCorn32 = float32(pl.fCol), float32(pl.fRow), float32(pl.fCorner)
	// n and c merge into one index nc with stride_c when every tensor
	// allows it; the kernel then skips a division per row.
	merge := pl.n == 1 || pl.c == 1
	if !merge {
		merge = true
		for t := range ts {
			if L.stride[t][0] != pl.c*L.stride[t][1] {
				merge = false
			}
		}
	}
	if merge {
		if pl.c == 1 {
			for t := range ts {
				L.stride[t][1] = L.stride[t][0]
			}
		}
	} else {
		L.channels = pl.c
		L.cMagic, L.cShift = divMagic(pl.c)
	}

	// Tiling: tr rows by a segment of tu units of cellsPer cells along W.
	variant, cellsPer := lpCell, int64(1)
	if v := int64(16 / pl.dt.Size()); pl.packable(a, L, v) {
		variant, cellsPer = lpPack, v
	}
	opSize := int64(4)
	if pl.dt == dtype.F64 {
		opSize = 8
	}
	// A block of tu threads by block/tu thread rows takes R input rows a
	// thread row; a tile row keeps a sum for each window column its
	// segment touches.
	units := pl.w / cellsPer
	tu := min(units, int64(block))
	tr := int64(block) / tu * pl.rowsPer(variant)
	if tr > lpMaxTileRows {
		// Narrow rows: fewer thread rows (a smaller block) rather than
		// more row records.
		tr = lpMaxTileRows
	}
	nwMax := pl.segmentWindows(tu * cellsPer)
	if lpSmem(variant, tu, tr, cellsPer, nwMax, opSize) > lpSmemBytes {
		// Too many window columns for one pass: a cell per thread, and
		// the columns in passes of nwMax if that still does not fit.
		variant, units, cellsPer = lpCell, pl.w, 1
		tu = min(units, int64(block))
		tr = int64(block) / tu
		nwMax = pl.segmentWindows(tu)
		if lpSmem(variant, tu, tr, cellsPer, nwMax, opSize) > lpSmemBytes {
			variant = lpWide
			nwMax = ((lpSmemBytes-tr*lpRowBytes)&^15)/(tr*opSize) - 1
		}
	}
	segs := (units + tu - 1) / tu
	L.segs, L.tu, L.tr, L.nwMax = int32(segs), int32(tu), int32(tr), int32(nwMax)
	L.tuMagic, L.tuShift = divMagic32(tu)
	L.total = (L.rows + tr - 1) / tr * segs
	L.aMagic, L.aShift = divMagic(segs)
	return variant, int(lpSmem(variant, tu, tr, cellsPer, nwMax, opSize))
}

// segmentWindows bounds the window columns that a run of `cells`
// consecutive cells can touch: those ow with ow*sw in an interval of
// cells + kw - 1 positions, at most W_out.
func (pl *lpPool) segmentWindows(cells int64) int64 {
	return min((cells+pl.kw-2)/pl.sw+1, pl.wo)
}

// packable reports whether x and dx rows are dense runs of whole 16-byte
// packs (unit stride along W, W a multiple of the pack, every other stride
// a multiple of it or of a dim of size 1, 16-byte aligned addresses) and y
// and dy rows have unit stride along W.
func (pl *lpPool) packable(a *LpPoolArgs, L *lpLayout, v int64) bool {
	if pl.w%v != 0 {
		return false
	}
	if pl.wo > 1 && (L.stride[1][3] != 1 || L.stride[2][3] != 1) {
		return false
	}
	dims := [3]int64{pl.n, pl.c, pl.h}
	for t, buf := range [4]driver.Buffer{a.X.Buf, {}, {}, a.DX.Buf} {
		if t == 1 || t == 2 {
			continue // y and dy are read per window
		}
		if uintptr(buf.Addr)%16 != 0 || L.stride[t][3] != 1 {
			return false
		}
		for d := 0; d < 3; d++ {
			if dims[d] > 1 && L.stride[t][d]%v != 0 {
				return false
			}
		}
	}
	return true
}

func (pl *lpPool) run(s *driver.Stream, a *LpPoolArgs) error {
	if s == nil {
		return pl.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := pl.check(a); err != nil {
		return err
	}
	if pl.n*pl.c == 0 {
		return nil
	}
	var L lpLayout
	variant, smem := pl.layout(a, pl.kernels[lpPack].block, &L)
	k := pl.kernels[variant]
	threads := pl.blockThreads(variant, &L)
	lf, err := k.resolve(s.Context())
	if err != nil {
		return err
	}
	// A block per tile; a grid holds at most maxGridX blocks, so larger
	// inputs take several launches, each starting at L.base.
	for L.base = 0; L.base < L.total; L.base += maxGridX {
		blocks := min(L.total-L.base, maxGridX)
		args := driver.GetArgs()
		pl.pack(args, a, &L)
		err = lf.fn.Launch(s, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{threads, 1, 1}, uint32(smem), args)
		driver.PutArgs(args)
		if err != nil {
			return err
		}
	}
	return nil
}

// pack appends the kernel parameters in the order of the spec's lppool
// ABI: x, y, dy, dx, p, layout.
func (pl *lpPool) pack(args *driver.Args, a *LpPoolArgs, L *lpLayout) {
	args.Ptr(a.X.Buf.Addr)
	args.Ptr(a.Y.Buf.Addr)
	args.Ptr(a.DY.Buf.Addr)
	args.Ptr(a.DX.Buf.Addr)
	args.F64(pl.p)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
