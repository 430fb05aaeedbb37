#pragma once
// Walking the tiles (red_col_pass, red_row_pass), the warp's rewrite of a
// slice for the flat path's mend (red_fix_rows) and the apply kernel's
// first launch for split slices: the totals (red_total).
#include "reduce_col.cuh"

// red_col_tile_cvec runs col tile t with the slices per thread the
// launcher chose (L.cvec): RedColVec's V, V/2 where that is at least 2, or 1.
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_col_tile_cvec(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, RedAcc<typename OpMath<T>::type>* sm) {
	constexpr int V = RedColVec<T, Op>::n;
	if (L.cvec == V) {
		red_col_tile<T, Op, Pass, V>(x, y, dy, dx, ws, L, t, sm);
	} else if (V > 2 && L.cvec == V / 2) {
		red_col_tile<T, Op, Pass, (V > 2 ? V / 2 : 1)>(x, y, dy, dx, ws, L, t, sm);
	} else {
		red_col_tile<T, Op, Pass, 1>(x, y, dy, dx, ws, L, t, sm);
	}
}

// Walks the col tiles of one pass, with V adjacent slices per thread when
// the launcher allows it.
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_col_pass(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, RedAcc<typename OpMath<T>::type>* sm) {
	// RED_ONE: tiles by ticket, in order (see red_one_totals).
	__shared__ int ticket;
	for (i64 b = blockIdx.x;; b += gridDim.x) {
		if (Pass == RED_ONE) {
			if (threadIdx.x == 0) ticket = atomicAdd(red_one_counters(ws, L), 1);
			__syncthreads();
			b = ticket;
		}
		if (b >= L.tiles) break;
		red_col_tile_cvec<T, Op, Pass>(x, y, dy, dx, ws, L, L.reverse ? L.tiles - 1 - b : b, sm);
	}
}

// Walks the row tiles of one pass (256/G tiles per block step).
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_row_pass(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, RedAcc<typename OpMath<T>::type>* sm) {
	const int G = L.group, gpb = RED_BLOCK / G;
	const int lane = threadIdx.x % G, grp = threadIdx.x / G;
	const i64 nb = (L.tiles + gpb - 1) / gpb;
	for (i64 b = blockIdx.x; b < nb; b += gridDim.x) {
		const i64 t = (L.reverse ? nb - 1 - b : b) * gpb + grp;
		red_row_tile<T, Op, Pass>(x, y, dy, dx, ws, L, t, t < L.tiles, lane, sm);
	}
}

// red_fix_rows rewrites dx from x at positions 0..len of one slice (xp,
// dp: its first position; xs, ds: the strides along the axis) with context
// cx, the warp's lanes taking every 32nd position, RED_FIX_BATCH rows per
// lane at a time, all loads of a batch before any store (the rows of a col
// slice are far apart: one load, one round trip; a loop that stores before
// its next load makes a tied slice wait for one round trip after another).
template <typename T, typename Op>
__device__ __forceinline__ void red_fix_rows(const T* __restrict__ xp, T* __restrict__ dp,
		const RedCtx<typename OpMath<T>::type>& cx, i64 len, i64 xs, i64 ds) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	xp += lane * xs;
	dp += lane * ds;
	for (i64 n = red_steps(len, lane, 32); n > 0; n -= RED_FIX_BATCH) {
		M xv[RED_FIX_BATCH];
#pragma unroll
		for (int u = 0; u < RED_FIX_BATCH; ++u) xv[u] = u < n ? to_op(xp[u * 32 * xs]) : M(0);
#pragma unroll
		for (int u = 0; u < RED_FIX_BATCH; ++u) {
			if (u < n) dp[u * 32 * ds] = from_op<T>(Op::elem(cx, xv[u]));
		}
		xp += RED_FIX_BATCH * 32 * xs;
		dp += RED_FIX_BATCH * 32 * ds;
	}
}

// red_total is the apply kernel's first launch (L.phase RED_PHASE_TOTAL):
// a warp per slice combines the slice's nchunks partials from the stats
// kernel (lanes stride the chunks, then a fixed xor butterfly; lane 0's
// result is kept, so the order is fixed by nchunks alone) and stores the
// total after them, at ws[slices*nchunks + s]. For a provisional op the
// stats kernel wrote dx for the common case; the apply kernel's second
// launch then mends it across the whole grid, each tile rewriting its
// chunk only where the total and its own partial say that dx can be wrong
// (fix(), fix_chunk()), so ties and zeros cost no serial work per slice.
// The partials are combined in RedWide's opmath, the total stored in M.
template <typename T, typename Op>
__device__ __forceinline__ void red_total(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef typename RedWide<Op, M>::type A;
	const int lane = threadIdx.x & 31;
	const i64 nw = ((i64)gridDim.x * RED_BLOCK) >> 5;
	const i64 S = L.slices, nc = L.nchunks;
	const bool col = L.mapping == RED_COL;
	for (i64 s = ((i64)blockIdx.x * RED_BLOCK + threadIdx.x) >> 5; s < S; s += nw) {  // warp-uniform
		RedAcc<A> acc = Op::template init<A>();
#pragma unroll 4
		for (i64 c = lane; c < nc; c += 32) Op::combine(acc, red_widen<A>(ws[col ? c * S + s : s * nc + c]));
		red_warp_total<Op>(acc);
		if (lane == 0) RedPut<M>::put(ws[S * nc + s], acc);
	}
}
