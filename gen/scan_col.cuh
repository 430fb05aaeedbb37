#pragma once
// The col mapping: scan_backward_col, and scan_ext_fix, the carry pass of
// the ext order that the col and colpair kernels share.
#include "scan_row.cuh"

// FixLd reads a map or record for scan_ext_fix: as a slot in the main
// launch (false until the tile has published it), plainly after it.
template <bool InLaunch> struct FixLd {
	template <typename M> static __device__ __forceinline__ bool map(const Aff<M>* p, Aff<M>& v) {
		v = *p;
		return true;
	}
	template <typename M> static __device__ __forceinline__ bool rec(const FixRec<M>* p, FixRec<M>& r) {
		r = *p;
		return true;
	}
};
template <> struct FixLd<true> {
	static __device__ __forceinline__ bool map(const Aff<float>* p, Aff<float>& v) { return slot_ld(p, v); }
	static __device__ __forceinline__ bool rec(const FixRec<float>* p, FixRec<float>& r) {
		return slot_ld(p, r.v, r.k);
	}
};

// FixSt publishes a tile's map and take-over record for scan_ext_fix:
// as slots for the fix blocks of the same launch (InLaunch), plainly for
// the launch after.
template <bool InLaunch> struct FixSt {
	template <typename M> static __device__ __forceinline__ void map(Aff<M>* p, Aff<M> v) { *p = v; }
	template <typename M> static __device__ __forceinline__ void rec(FixRec<M>* p, M v, int k) {
		*p = FixRec<M>{v, k};
	}
};
template <> struct FixSt<true> {
	static __device__ __forceinline__ void map(Aff<float>* p, Aff<float> v) { slot_st(p, v); }
	static __device__ __forceinline__ void rec(FixRec<float>* p, float v, int k) { slot_st(p, v, k); }
};

// scan_ext_fix: one warp per slice walks its tile maps from the end of
// the slice in scan order, 32 tiles a round (lane j: tile top - j), and
// where a tile has a take-over (a = 0) writes dx at its k* with V after
// the tile added. V after tile top - j is the maps of the tiles after it
// applied to the round's carry: warp_carry_scan composes them (the lanes
// below j are upstream). The records are read only where needed. (A warp
// per slice: a warp for two slices, inline in the main launch, makes the
// compute_70 bf16 kernels spill and halves the fix blocks; a thread per
// slice, walking the tiles in batches of eight, leaves a few blocks each
// waiting for one batch of loads after the other.)
//
// Float opmath runs it in the main launch (InLaunch): the blocks whose
// tickets come after every tile's (fb counts them) wait for the maps and
// records, which the tiles publish as slots, and write dx at every k*,
// which the tile itself leaves out of its store (so nothing orders the two
// writes; with dx over x or dy, the tile's loads there are done before its
// record, which depends on them, is published). A fix block waits only on
// tiles with lower tickets, which are running or done. Double opmath
// (16-byte maps, no slots) runs it as a second launch (SCAN_EXT_FIX)
// after the tiles, which stored dx at k* without the carry, so it writes
// only where V after the tile is not 0.
template <typename T, typename Op, bool InLaunch>
__device__ __forceinline__ void scan_ext_fix(T* __restrict__ dx, const unsigned char* __restrict__ ws,
		const ScanLayout& L, i64 fb) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	const i64 s = fb * SCAN_WARPS + (threadIdx.x >> 5);
	if (s >= L.nslices) return;
	const Aff<M>* agg = reinterpret_cast<const Aff<M>*>(ws + L.ws_agg) + s;
	const FixRec<M>* fix = reinterpret_cast<const FixRec<M>*>(ws + L.ws_fix) + s;
	i64 off[4];
	scan_slice_offsets(L, s, off);
	const bool rev = L.reverse != 0;
	const i64 tile = (i64)L.split * L.items;
	M v = M(0);
	for (i64 top = L.chunks - 1; top >= 0; top -= 32) {
		const i64 c = top - lane;
		Aff<M> m = aff_identity<M>();
		if (c >= 0)
			while (!FixLd<InLaunch>::map(agg + c * L.nslices, m)) __nanosleep(64);
		FixRec<M> rec = FixRec<M>{M(0), 0};
		if (c >= 0 && m.a == M(0))
			while (!FixLd<InLaunch>::rec(fix + c * L.nslices, rec)) __nanosleep(64);
		Aff<M> tot;
		const M after = apply<Op>(warp_carry_scan<Op>(m, lane, true, tot), v);
		if (c >= 0 && m.a == M(0) && (InLaunch || after != M(0))) {
			const i64 q = rev ? L.chunks - 1 - c : c;
			dx[off[3] + (q * tile + rec.k) * L.astride[3]] = from_op<T>(rec.v + after);
		}
		v = apply<Op>(tot, v);
	}
}

// ---- col mapping -----------------------------------------------------------

__device__ __forceinline__ void prefetch_l2(const void* p) {
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// scan_col_prefetch (ColFetch::prefetch; chunked col mapping, one slice
// dim): warp wr asks L2 for the rows that warp wr of the unit's tile in
// tile row qn will load, one prefetch per 32-byte sector of a row (lane:
// sector lane % S of row lane / S, then 32 / S rows further; unit-stride
// slices put 32 / sizeof(T) lanes in a sector). A prefetch is a hint:
// every address is an element of the operand, and nothing waits for it.
template <typename T, typename Op>
__device__ __forceinline__ void scan_col_prefetch(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, const ScanLayout& L, i64 unit, i64 qn, int wr, int lane) {
	constexpr int LPS = 32 / sizeof(T);  // lanes per sector
	constexpr int S = 32 / LPS;          // sectors per warp row
	const i64 k0 = qn * ((i64)L.split * L.items) + (i64)wr * L.items;
	const i64 s = unit * 32 + (lane % S) * LPS;
	if (s >= L.nslices || k0 >= L.n) return;
	const i64 k1 = k0 + L.items < L.n ? k0 + L.items : L.n;
	const T* const ops[3] = {dy, x, y};
#pragma unroll
	for (int o = 0; o < 3; ++o) {
		if (o == 1 && !Op::needs_x) continue;
		if (o == 2 && !Op::needs_y) continue;
		const T* p = ops[o] + s * L.sstride[o][0];
		const i64 st = L.astride[o];
		for (i64 k = k0 + lane / S; k < k1; k += 32 / S) prefetch_l2(p + k * st);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_col(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef ScanRun<T, Op, ScanItems<T, Op>::col, true> Run;
	__shared__ Aff<M> s_aff[SCAN_WARPS][32];
	__shared__ M s_fwd[SCAN_WARPS][32];
	__shared__ M s_pre[Op::mask_factors ? SCAN_WARPS : 1][32];
	__shared__ M s_vin[32];
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	// Chunked, cummax and cummin always take the ext order and the other
	// ops never do, so each op's col kernel compiles only the phases it
	// runs: without the others' code the bf16 cummax and cummin kernels
	// spill less and run faster. The fix pass of the ext order runs in the
	// main launch with float opmath (fix_in), as a second launch
	// (SCAN_EXT_FIX) with double. Chunked, the tickets come in order: the
	// fill blocks', the tiles', then the fix blocks'.
	constexpr bool fix_in = Op::mask_factors && sizeof(M) == 4;
	if (L.phase == SCAN_EXT_FIX) {
		if (Op::mask_factors && !fix_in) scan_ext_fix<T, Op, false>(dx, ws, L, blockIdx.x);
		return;
	}
	const bool chunked = L.chunks > 1;
	// The ext order (mask ops, chunked): tiles in scan order, see the top.
	const bool ext = Op::mask_factors && chunked;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const int split = L.split;  // warps along the axis: 1..8
	const int cgi = warp >> L.lsplit, wr = warp & (split - 1), w0 = cgi * split;
	const int items = L.items;

	i64 unit, c = 0, q = 0;
	bool ready = true;
	if (chunked) {
		i64 t = scan_take(ws, L.ws_fill, L.fillers);
		if (t < 0) return;
		ready = (t & SCAN_READY) != 0;
		t &= ~SCAN_READY;
		if (fix_in && t >= L.chunks * L.units) {
			// A fix block (ext order): every tile has its ticket.
			scan_ws_wait(ws, L, ready);
			scan_ext_fix<T, Op, fix_in>(dx, ws, L, t - L.chunks * L.units);
			return;
		}
		c = bc_div(t, L.tmagic, L.tshift);
		unit = t - c * L.units;
		q = rev != ext ? c : L.chunks - 1 - c;  // c counts in carry order, or scan order (ext)
	} else {
		unit = (i64)blockIdx.x * (SCAN_WARPS >> L.lsplit) + cgi;
	}
	const i64 s = unit * 32 + lane;
	const bool has = unit < L.units && s < L.nslices;
	const i64 tile = (i64)split * items;
	const i64 tk0 = q * tile;
	const i64 tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
	const i64 k0 = tk0 + (i64)wr * items;
	int cnt = 0;
	if (has && k0 < tk1) cnt = (int)((k0 + items < tk1 ? k0 + items : tk1) - k0);
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	Run r;
	// The unit's next tile in ticket order (ColFetch).
	if (ColFetch<T, Op>::prefetch && chunked && L.srank <= 1 && unit < L.units && c + 1 < L.chunks)
		scan_col_prefetch<T, Op>(dy, x, y, L, unit, rev != ext ? c + 1 : L.chunks - 2 - c, wr, lane);

	// Chunked cumprod: the unit's first tile finds whether the unit needs
	// its forward state, and writes it if so (before it loads its run).
	if (Op::fwd_shortcut && chunked && c == 0) scan_fwd_unit<T, Op>(x, y, ws, L, unit, s, has, ready);
	r.init(k0, cnt, rev);
	r.load(dy, x, y, L, off, false);
	M f = Op::template fwd_identity<M>();
	const bool fast = r.direct_ok();  // as in the row kernel
	if (Op::fwd && (!Direct<Op>::on || __syncthreads_or(!fast))) {
		// Chunked cumprod: the state before the tile, where a NaN y or a 0
		// y before the tile asks, read where the unit computed it (a NaN
		// or 0 y ends a slice of its, so its flag says 2: the exact state,
		// which tells a zero from an underflow; see scan_fwd_unit).
		// Elsewhere a y before the tile that is a number other than 0 says
		// no zero came. The run that starts the tile holds that y (yb);
		// where its unit's flag is not 2 (a y that is not cumprod's) a 0
		// yb is taken as "a zero came", which the run passes on to the
		// other runs with its total (joining "a zero came" twice changes
		// nothing, so an exact state read equal to it may pass it on too).
		const bool tz = Op::fwd_shortcut && chunked && c != L.chunks - 1 && cnt > 0 &&
				(rev ? k0 + cnt == tk1 : k0 == tk0) && r.yb == M(0);
		if (tz) f = Op::template fwd_after_zero<M>();
		if (Op::fwd_shortcut && chunked && __syncthreads_or(tz || (!fast && r.nan_y())))
			f = scan_fwd_wait<Op, M>(ws, L, q, unit, s, has, ready, f);
		const bool pass_z = tz && f == Op::template fwd_after_zero<M>();
		s_fwd[warp][lane] = pass_z ? Op::fwd_combine(f, r.fwd_total()) : r.fwd_total();
		__syncthreads();
		if (ext) {
			// The forward state before the tile (chunked: one column
			// group of split = 8 warps per block), then before each
			// warp's run, which warp 0 leaves in s_pre: each warp reads
			// one value rather than combining its predecessors'.
			if (warp == 0) {
				M tot = s_fwd[0][lane];
				for (int w = 1; w < SCAN_WARPS; ++w) tot = Op::fwd_combine(tot, s_fwd[w][lane]);
				scan_ws_wait(ws, L, ready);
				M p = fwd_lookback<Op, M>(ws, L, c, unit, s, has, tot);
#pragma unroll
				for (int i = 0; i < SCAN_WARPS; ++i) {
					const int w = rev ? SCAN_WARPS - 1 - i : i;
					s_pre[w][lane] = p;
					p = Op::fwd_combine(p, s_fwd[w][lane]);
				}
			}
			__syncthreads();
			f = s_pre[warp][lane];
		} else if (rev) {
			for (int w = split - 1; w > wr; --w) f = Op::fwd_combine(f, s_fwd[w0 + w][lane]);
		} else {
			for (int w = 0; w < wr; ++w) f = Op::fwd_combine(f, s_fwd[w0 + w][lane]);
		}
	}
	// quiet (mask ops): no run of the warp has a take-over, which its
	// forward total tells (Op::takes(f, total) holds exactly when some
	// element of the run takes over): the run skips its take-over tests,
	// composes a plain sum and stores zeros. Deep into a slice most runs
	// are quiet (a new running extremum grows rare).
	// Not in compute_70's bf16 kernels (software conversions, run on
	// Volta only): with the quiet path ptxas 11.8 gives them 80 registers
	// and they spill.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
	constexpr bool quiet_ok = Op::mask_factors && !Narrow<T>::wide;
#else
	constexpr bool quiet_ok = Op::mask_factors;
#endif
	bool quiet = false;
	if (quiet_ok) quiet = __all_sync(0xffffffffu, cnt == 0 || !MaskTake<Op>::take(f, s_fwd[warp][lane]));
	r.quiet = quiet;
	const bool plain = r.setup(fast, f, L);
	if (chunked) SpanEnds<T, Op>::record(r, k0 == tk0, k0 + cnt == tk1, lane);
	s_aff[warp][lane] = r.aggregate(plain);
	__syncthreads();
	M v = M(0);
	if (chunked && warp == 0) {
		const Aff<M> tot = TileMap<T, Op>::template of<M>(
				split, [&](int i) { return s_aff[rev ? i : split - 1 - i][lane]; }, lane);
		if (ext) {
			// The tile's map, for scan_ext_fix.
			if (has) FixSt<fix_in>::map(reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + c * L.nslices + s, tot);
		} else {
			scan_ws_wait(ws, L, ready);
			s_vin[lane] = lookback<Op, M>(ws, L, c, unit, s, has, tot);
		}
	}
	if (chunked && !ext) {
		__syncthreads();
		v = s_vin[lane];
	}
	// V after this warp: the warps upstream of it applied, farthest first;
	// later: one of them has a take-over (a mask op's a = 0).
	bool later = false;
	if (rev) {
		for (int w = 0; w < wr; ++w) {
			v = apply<Op>(s_aff[w0 + w][lane], v);
			later = later | (s_aff[w0 + w][lane].a == M(0));
		}
	} else {
		for (int w = split - 1; w > wr; --w) {
			v = apply<Op>(s_aff[w0 + w][lane], v);
			later = later | (s_aff[w0 + w][lane].a == M(0));
		}
	}
	r.finish(v, plain);
	// With the fix blocks in the launch only they store dx at k* (skip), so
	// no order between their store and the tile's is needed. (This is
	// faster than the tile storing it and publishing its record after a
	// fence.)
	int skip = -1;
	if (ext && has && r.cm != 0u && !later) {
		// This run holds the tile's last take-over k*: record dx there.
		constexpr int N = ScanItems<T, Op>::col;
		const int is = 31 - __clz(r.cm);  // its index in scan order
		M part = M(0);
#pragma unroll
		for (int i = 0; i < N; ++i)
			if (i == is) part = r.g[i];
		const int k = (int)((rev ? k0 + (N - 1 - is) : k0 + is) - tk0);
		FixSt<fix_in>::rec(reinterpret_cast<FixRec<M>*>(ws + L.ws_fix) + c * L.nslices + s, part, k);
		if (fix_in) skip = is;
	}
	scan_slice_offsets(L, has ? s : 0, off);
	if (fix_in && ext && !r.quiet) {
		r.store(dx, L, off, false, skip);
	} else {
		r.store(dx, L, off, false);
	}
}
