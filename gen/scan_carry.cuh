#pragma once
// The carry passes: the tiles of the tallrow kernel (scan_tallrow.cuh) get
// their carries from two launches before the main one instead of through
// the look-back, so that no block waits on another (a reduce-then-scan):
//
//   SCAN_CARRY_MAPS    the main launch's work up to each tile's map, which
//                      goes to the workspace's map part (tile c in carry
//                      order, slice s: agg[c * nslices + s]); no dx;
//   SCAN_CARRY_PREFIX  a block per slice turns its tiles' maps into the
//                      carry into each tile (V after it), written over the
//                      map's u;
//   SCAN_CARRY_APPLY   the main launch, each tile's carry read from there.
//
// The maps pass reads the operands once more (dy, and x and y where the
// op reads them), and nothing is serial across tiles but the prefix
// pass's walk over a thread's few tiles. A block takes its tile from its
// index, not a ticket, and nothing reads a slot before the launch that
// writes it has ended, so no fill or memset comes before. The
// forward-state passes (cumprod, cummax, cummin) run before the maps pass,
// which needs the forward state as the main launch does.
#include "scan_lookback.cuh"

// MapReadsX<Op>: whether a tile's map depends on x, so that the maps pass
// reads it (carry_reads_x). Logcumsumexp's map takes its factors from y
// and its terms from dy; x gives only c, which dx alone uses.
template <typename Op> struct MapReadsX {
	static constexpr bool on = Op::needs_x;
};
template <> struct MapReadsX<LogcumsumexpBw> {
	static constexpr bool on = false;
};

// carry_reads_x: whether a launch in phase L.phase reads x (an op that
// needs it skips it in the maps pass where its map does not).
template <typename Op> __device__ __forceinline__ bool carry_reads_x(const ScanLayout& L) {
	return Op::needs_x && (MapReadsX<Op>::on || L.phase != SCAN_CARRY_MAPS);
}

// scan_carry_slot serves the carry passes' main-launch forms (L.phase not
// SCAN_MAIN) for tile c of slice s (has: the lane serves a slice), whose
// map is tot: in SCAN_CARRY_MAPS it stores tot where put (one lane of
// those that hold it); in SCAN_CARRY_APPLY it returns the carry the prefix
// pass wrote where has. Elsewhere it returns tot.u, which nothing uses:
// no branch picks a constant, which nvcc 11.8 places differently from one
// run to the next (the committed PTX must regenerate byte for byte).
template <typename M>
__device__ __forceinline__ M scan_carry_slot(unsigned char* ws, const ScanLayout& L, i64 c, i64 s, bool has, bool put,
		Aff<M> tot) {
	Aff<M>* at = reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + c * L.nslices + s;
	if (L.phase == SCAN_CARRY_MAPS) {
		if (put) *at = tot;
		return tot.u;
	}
	return has ? __ldcg(&at->u) : tot.u;
}

// scan_carry is the carry into tile c of slice s (V after the tile, the
// look-back's result), where the tile's map is tot and G lanes hold it:
// the look-back in SCAN_MAIN (G and K are lookback's), else
// scan_carry_slot, lane 0 of each G storing.
template <typename Op, typename M, int G, int K = 0>
__device__ __forceinline__ M scan_carry(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
		Aff<M> tot, bool& ready) {
	if (L.phase != SCAN_MAIN) return scan_carry_slot<M>(ws, L, c, s, has, has && (threadIdx.x & (G - 1)) == 0, tot);
	scan_ws_wait(ws, L, ready);
	return lookback<Op, M, G, K>(ws, L, c, unit, s, has, tot);
}

// scan_carry_tile: the block's tile in the carry passes, from its index:
// tile row q (memory order) of slice group b of B, and c, its place in
// carry order.
__device__ __forceinline__ void scan_carry_tile(const ScanLayout& L, i64 B, i64& c, i64& q, i64& b) {
	q = (i64)blockIdx.x / B;
	b = (i64)blockIdx.x - q * B;
	c = L.reverse != 0 ? q : L.chunks - 1 - q;
}

// scan_carry_prefix (SCAN_CARRY_PREFIX): block s turns the maps of slice
// s's tiles into the carry into each. Thread t takes a contiguous range of
// tiles in carry order and composes their maps; the block scans the
// threads' maps (lower threads are nearer the start of the carry), which
// gives each thread the carry into its range (the composed maps applied to
// 0, the carry into tile 0); the thread then walks its range, writing the
// carry into each tile over its map's u and applying the map. Loads go
// eight at a time. The order of the compositions is fixed by the tile
// count alone, so the carries are the same on every run.
template <typename T, typename Op>
__device__ __forceinline__ void scan_carry_prefix(unsigned char* __restrict__ ws, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ Aff<M> s_tot[SCAN_WARPS];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	Aff<M>* agg = reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + blockIdx.x;
	const i64 ns = L.nslices;
	const i64 per = (L.chunks + SCAN_THREADS - 1) / SCAN_THREADS;
	const i64 i0 = (i64)tid * per;
	const i64 i1 = i0 + per < L.chunks ? i0 + per : L.chunks;
	Aff<M> m = aff_identity<M>();
	for (i64 j = i0; j < i1; j += 8) {
		Aff<M> e[8];
#pragma unroll
		for (int i = 0; i < 8; ++i) e[i] = j + i < i1 ? agg[(j + i) * ns] : aff_identity<M>();
#pragma unroll
		for (int i = 0; i < 8; ++i) m = compose<Op>(e[i], m);
	}
	Aff<M> wt;
	const Aff<M> ex = warp_carry_scan<Op>(m, lane, true, wt);
	if (lane == 0) s_tot[warp] = wt;
	__syncthreads();
	Aff<M> b = aff_identity<M>();
	for (int w = 0; w < warp; ++w) b = compose<Op>(s_tot[w], b);
	M v = apply<Op>(compose<Op>(ex, b), M(0));
	for (i64 j = i0; j < i1; j += 8) {
		Aff<M> e[8];
#pragma unroll
		for (int i = 0; i < 8; ++i) e[i] = j + i < i1 ? agg[(j + i) * ns] : aff_identity<M>();
#pragma unroll
		for (int i = 0; i < 8; ++i) {
			if (j + i < i1) {
				agg[(j + i) * ns].u = v;
				v = apply<Op>(e[i], v);
			}
		}
	}
}
