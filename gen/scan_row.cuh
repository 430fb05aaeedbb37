#pragma once
// The row mapping: scan_backward_row.
#include "scan_fwd.cuh"
#include "scan_carry.cuh"

// ---- row mapping ---------------------------------------------------------

// The row look-back keeps the maps of its walk's first SCAN_ROW_KEEP
// steps (32 tiles each) for its fold (window_chain, WalkKeep), and its
// threads prefetch their runs of the tile SCAN_ROW_AHEAD tiles later in
// carry order into L2 before the walk, one prefetch per thread and array
// the run loads (dy; x and y where the op reads them): a tile's walk goes
// back a few hundred tiles, and those loads are under way while it
// waits. Cumsum (packed slots) always does both; SCAN_ROW_FETCH_ALL and
// SCAN_ROW_KEEP_ALL (0 or 1) say whether the other ops' row kernels
// prefetch and keep too, so that either can be built without the other.
// Neither changes a value: the prefetch is a hint, and the kept maps are
// the bits the fold would read from the workspace.
#define SCAN_ROW_KEEP 16
#define SCAN_ROW_AHEAD 128
#ifndef SCAN_ROW_FETCH_ALL
#define SCAN_ROW_FETCH_ALL 1
#endif
#ifndef SCAN_ROW_KEEP_ALL
#define SCAN_ROW_KEEP_ALL 1
#endif

// RowAhead<Op>: whether the op's row kernel prefetches, and how many
// steps its walk keeps. Cumsum prefetches after its run's loads (late);
// the others before theirs, where the addresses cost no registers held
// across the loads (after them, cummax's f32 row kernel takes 76
// registers instead of 64, a block per SM fewer).
template <typename Op> struct RowAhead {
	static constexpr bool fetch = PackedChain<Op>::on || SCAN_ROW_FETCH_ALL != 0;
	static constexpr bool late = PackedChain<Op>::on;
	static constexpr int keep = PackedChain<Op>::on || SCAN_ROW_KEEP_ALL != 0 ? SCAN_ROW_KEEP : 0;
};

// row_ahead asks L2 for the thread's run (from element k0 of tile q) in
// the slice's tile SCAN_ROW_AHEAD later in carry order, in every array
// the launch loads (dy, then x and y where it reads them: Op::needs_y,
// and Op::needs_x, or with Carry (the tallrow kernel) carry_reads_x). A
// prefetch is a hint: every address is an element of its operand.
template <typename Op, bool Carry = false, typename T>
__device__ __forceinline__ void row_ahead(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, const ScanLayout& L, const i64 (&off)[4], i64 q, i64 k0, i64 tile) {
	const bool rev = L.reverse != 0;
	const i64 qa = rev ? q + SCAN_ROW_AHEAD : q - SCAN_ROW_AHEAD;
	const i64 ka = k0 + (qa - q) * tile;
	if (qa < 0 || qa >= L.chunks || ka >= L.n) return;
	asm volatile("prefetch.global.L2 [%0];" ::"l"(dy + off[0] + ka * L.astride[0]));
	if (Carry ? carry_reads_x<Op>(L) : Op::needs_x) asm volatile("prefetch.global.L2 [%0];" ::"l"(x + off[1] + ka * L.astride[1]));
	if (Op::needs_y) asm volatile("prefetch.global.L2 [%0];" ::"l"(y + off[2] + ka * L.astride[2]));
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_row(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = ScanItems<T, Op>::row;
	typedef ScanRun<T, Op, N, false> Run;
	__shared__ Aff<M> s_aff[SCAN_WARPS];
	__shared__ M s_fwd[SCAN_WARPS];
	__shared__ M s_vin;
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	if (L.phase == SCAN_FWD_PREFIX) {
		scan_fwd_prefix<T, Op>(ws, L);
		return;
	}
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const int split = L.split;  // threads per slice: 32..256
	const int wpg = split >> 5;  // warps per slice
	const int grp = tid / split, lt = tid % split;
	const int w0 = grp * wpg, wg = warp - w0;
	const bool chunked = L.chunks > 1;
	M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);

	i64 s, c = 0, q = 0;
	bool ready = true;
	if (L.phase == SCAN_FWD_TILES) {
		if (!Op::fwd) return;
		q = (i64)blockIdx.x / L.nslices;
		s = (i64)blockIdx.x - q * L.nslices;
	} else if (chunked) {
		i64 t;
		if (Op::fwd) {
			// The forward-state passes filled the slots (scan_fill_slots)
			// and reset the counter: no fill blocks.
			t = scan_ticket(ws);
		} else {
			t = scan_take(ws, L.ws_fill, L.fillers);
			if (t < 0) return;
			ready = (t & SCAN_READY) != 0;
			t &= ~SCAN_READY;
		}
		c = t / L.nslices;
		s = t - c * L.nslices;
		q = rev ? c : L.chunks - 1 - c;
	} else {
		s = (i64)blockIdx.x * (SCAN_THREADS / split) + grp;
	}
	const bool has = s < L.nslices;
	const i64 tile = (i64)split * N;
	const i64 tk0 = q * tile;
	const i64 tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
	const i64 k0 = tk0 + (i64)lt * N;
	int cnt = 0;
	if (has && k0 < tk1) cnt = (int)(tk1 - k0 < N ? tk1 - k0 : N);
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	const bool vec = L.vec != 0;
	Run r;

	if (L.phase == SCAN_FWD_TILES) {
		// The tile's forward aggregate (one slice per block).
		if (tid == 0) scan_fill_slots<M>(ws, L, q, s, blockIdx.x == 0);
		if (!tile_needs_x<Op>(tile_y_end<T, Op>(y, L, off, rev ? tk0 : tk1 - 1))) cnt = 0;
		r.init(k0, cnt, rev);
		r.load_x(x, L, off, vec);
		// The runs' states combined in scan order (cumprod's are in order).
		M wt;
		warp_fwd_scan<Op>(r.fwd_total(), lane, rev, wt);
		if (lane == 0) s_fwd[warp] = wt;
		__syncthreads();
		if (tid == 0) {
			M f = Op::template fwd_identity<M>();
			for (int i = 0; i < SCAN_WARPS; ++i) f = Op::fwd_combine(f, s_fwd[rev ? SCAN_WARPS - 1 - i : i]);
			fwdbuf[q * L.nslices + s] = f;
		}
		return;
	}

	if (RowAhead<Op>::fetch && !RowAhead<Op>::late && chunked && cnt > 0) row_ahead<Op>(dy, x, y, L, off, q, k0, tile);
	r.init(k0, cnt, rev);
	r.load(dy, x, y, L, off, vec);
	if (RowAhead<Op>::fetch && RowAhead<Op>::late && chunked && cnt > 0) row_ahead<Op>(dy, x, y, L, off, q, k0, tile);
	M f = Op::template fwd_identity<M>();
	const bool fast = r.direct_ok();
	// The forward state only where a run needs it (a direct op's block
	// of direct runs skips it; the test is uniform across the block).
	if (Op::fwd && (!Direct<Op>::on || __syncthreads_or(!fast))) {
		if (chunked && has) f = __ldcg(&fwdbuf[q * L.nslices + s]);
		M wt;
		const M ex = warp_fwd_scan<Op>(r.fwd_total(), lane, rev, wt);
		if (lane == 0) s_fwd[warp] = wt;
		__syncthreads();
		// The warps of the slice before this one in scan order.
		if (rev) {
			for (int w = wpg - 1; w > wg; --w) f = Op::fwd_combine(f, s_fwd[w0 + w]);
		} else {
			for (int w = 0; w < wg; ++w) f = Op::fwd_combine(f, s_fwd[w0 + w]);
		}
		f = Op::fwd_combine(f, ex);
	}
	const bool plain = r.setup(fast, f, L);
	if (chunked) SpanEnds<T, Op>::record(r, k0 == tk0, k0 + cnt == tk1, 0);
	Aff<M> wt;
	const Aff<M> ex = warp_carry_scan<Op>(r.aggregate(plain), lane, rev, wt);
	if (lane == 0) s_aff[warp] = wt;
	__syncthreads();
	M v = M(0);
	if (chunked) {
		if (warp == 0) {
			// The tile's map: the warps composed, upstream first.
			const Aff<M> tot = TileMap<T, Op>::template of<M>(
					SCAN_WARPS, [&](int i) { return s_aff[rev ? i : SCAN_WARPS - 1 - i]; }, 0);
			scan_ws_wait(ws, L, ready);
			const M vin = lookback<Op, M, 32, RowAhead<Op>::keep>(ws, L, c, s, s, has, tot);
			if (lane == 0) s_vin = vin;
		}
		__syncthreads();
		v = s_vin;
	}
	// V after this warp: the warps upstream of it applied, farthest first.
	if (rev) {
		for (int w = 0; w < wg; ++w) v = apply<Op>(s_aff[w0 + w], v);
	} else {
		for (int w = wpg - 1; w > wg; --w) v = apply<Op>(s_aff[w0 + w], v);
	}
	r.finish(apply<Op>(ex, v), plain);
	// The offsets again rather than kept live through the scans (registers).
	scan_slice_offsets(L, has ? s : 0, off);
	r.store(dx, L, off, vec);
}
