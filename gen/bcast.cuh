// Broadcasting binary backward: dy has the broadcast shape, a and b have
// shapes of their own that broadcast to it, and da, db (in a's and b's
// shapes) receive the gradient summed over the dims their operand was
// broadcast along. The per-element math is the binary family's functors
// (binary.cuh) in opmath M; every sum accumulates in M, in a fixed order
// that depends only on the launch layout (no atomics), and is rounded to T
// once. The launcher (ops/binary_bcast.go) picks the phases:
//
//   BCAST_TILE: dy is a dense [R, C] and each operand one of the BCAST_*
//   kinds. Block t takes rows [rt*rows, ..) of columns
//   [ct*J*32*N, ..) (rt = t / nct, ct = t % nct, N elements to a 16-byte
//   pack); warp w takes the tile's rows w, w + 8, ...; lane l the
//   packs l, l + 32, ... (J of them) of each row. A BCAST_FULL output is
//   stored as it is computed; a BCAST_ROW one sums a row's packs in each
//   lane, then across the warp; a BCAST_COL one (J = 1) sums a column in
//   each thread, then across the block's warps; a BCAST_SCALAR one sums
//   everything a thread sees, then across the block. A sum is final when
//   one tile covers it (part_* = 0), else the tile's partial goes to the
//   workspace and BCAST_TILE_FINISH adds the partials in tile order.
//
//   BCAST_GEN: one output, any strides and up to 8 dims. A work item is a
//   kept index k (the output's own element) and a chunk of the reduced
//   index range, walked innermost dim first; items run k fastest so that
//   neighbouring threads touch neighbouring output elements. With one
//   chunk the sum is final, else BCAST_GEN_FINISH adds the chunks' partials
//   in chunk order.
#pragma once
#include "binary.cuh"
#include "zconsts.cuh"

// bcast_warp_sum is the sum of v over the warp's lanes, the same in every
// lane: an xor butterfly adds the same pairs in the same order each run.
template <typename M> __device__ __forceinline__ M bcast_warp_sum(M v) {
#pragma unroll
	for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

// bcast_block_sum is the sum of v over the block's threads, in thread 0
// (other threads get an unspecified value). Every thread of the block must
// call it; sh holds at least BCAST_WARPS values.
template <typename M> __device__ __forceinline__ M bcast_block_sum(M v, M* sh) {
	v = bcast_warp_sum(v);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
	if (lane == 0) sh[warp] = v;
	__syncthreads();
	M s = M(0);
	if (threadIdx.x == 0) {
#pragma unroll
		for (int w = 0; w < BCAST_WARPS; ++w) s += sh[w];
	}
	return s;
}

// bcast_load reads N values of an operand of the given kind at row r and
// columns [c, c + N) of the [R, C] view: a pack where vec holds, else
// element by element up to lim (the columns left in the row; the rest
// read as 0 and are never used).
template <typename T, int N>
__device__ __forceinline__ void bcast_load(const T* __restrict__ p, int kind, i64 r, i64 c, i64 C, bool vec, i64 lim,
		typename OpMath<T>::type (&out)[N]) {
	typedef typename OpMath<T>::type M;
	if (kind == BCAST_ROW || kind == BCAST_SCALAR) {
		const M v = to_op(p[kind == BCAST_ROW ? r : 0]);
#pragma unroll
		for (int j = 0; j < N; ++j) out[j] = v;
		return;
	}
	const i64 off = (kind == BCAST_FULL ? r * C : 0) + c;
	if (vec) {
		const Pack<T> pk = load_pack(p + off);
#pragma unroll
		for (int j = 0; j < N; ++j) out[j] = to_op(pk.v[j]);
	} else {
#pragma unroll
		for (int j = 0; j < N; ++j) out[j] = j < lim ? to_op(p[off + j]) : M(0);
	}
}

// BcastAcc is one output's running sums in a tile thread.
template <typename M, int N> struct BcastAcc {
	M col[N];  // BCAST_COL: this thread's columns over its rows
	M row;     // BCAST_ROW: the current row's packs
	M all;     // BCAST_SCALAR: everything this thread saw
};

// bcast_take adds (or, for BCAST_FULL, stores) one output's N values.
template <typename T, int N>
__device__ __forceinline__ void bcast_take(T* __restrict__ d, int kind, const typename OpMath<T>::type (&g)[N], i64 r,
		i64 c, i64 C, bool vec, i64 lim, BcastAcc<typename OpMath<T>::type, N>& acc) {
	if (kind == BCAST_FULL) {
		const i64 off = r * C + c;
		if (vec) {
			Pack<T> pk;
#pragma unroll
			for (int j = 0; j < N; ++j) pk.v[j] = from_op<T>(g[j]);
			store_pack(d + off, pk);
		} else {
#pragma unroll
			for (int j = 0; j < N; ++j)
				if (j < lim) d[off + j] = from_op<T>(g[j]);
		}
		return;
	}
#pragma unroll
	for (int j = 0; j < N; ++j) {
		if (vec || j < lim) {
			if (kind == BCAST_COL) acc.col[j] += g[j];
			else if (kind == BCAST_ROW) acc.row += g[j];
			else acc.all += g[j];
		}
	}
}

// bcast_row_end finishes a row of a BCAST_ROW output: the warp's sum goes
// to d[r], or to the tile's partial ws[ct*R + r].
template <typename T, typename M>
__device__ __forceinline__ void bcast_row_end(T* __restrict__ d, M* __restrict__ ws, int part, M v, i64 r, i64 ct,
		i64 R) {
	v = bcast_warp_sum(v);
	if ((threadIdx.x & 31) == 0) {
		if (part) ws[ct * R + r] = v;
		else d[r] = from_op<T>(v);
	}
}

// bcast_tile_end finishes a tile's BCAST_COL or BCAST_SCALAR output
// (uniform across the block: every thread calls it or none does).
template <typename T, int N>
__device__ __forceinline__ void bcast_tile_end(T* __restrict__ d, typename OpMath<T>::type* __restrict__ ws, int kind,
		int part, BcastAcc<typename OpMath<T>::type, N>& acc, typename OpMath<T>::type* sh, i64 rt, i64 tile,
		i64 cbase, i64 C) {
	typedef typename OpMath<T>::type M;
	if (kind == BCAST_SCALAR) {
		const M s = bcast_block_sum(acc.all, sh);
		if (threadIdx.x == 0) {
			if (part) ws[tile] = s;
			else d[0] = from_op<T>(s);
		}
		return;
	}
	// BCAST_COL: sh[w][l*N + j] is warp w's sum of column cbase + l*N + j;
	// thread t adds the warps' sums of column cbase + t in warp order.
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
#pragma unroll
	for (int j = 0; j < N; ++j) sh[warp * 32 * N + lane * N + j] = acc.col[j];
	__syncthreads();
	for (int t = threadIdx.x; t < 32 * N; t += blockDim.x) {
		M s = M(0);
#pragma unroll
		for (int w = 0; w < BCAST_WARPS; ++w) s += sh[w * 32 * N + t];
		const i64 c = cbase + t;
		if (c < C) {
			if (part) ws[rt * C + c] = s;
			else d[c] = from_op<T>(s);
		}
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void bcast_tile(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws, double s,
		const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	__shared__ M sh[BCAST_WARPS * 32 * N];
	M* wsa = reinterpret_cast<M*>(reinterpret_cast<char*>(ws) + L.ws_a);
	M* wsb = reinterpret_cast<M*>(reinterpret_cast<char*>(ws) + L.ws_b);
	const i64 R = L.R, C = L.C;
	const bool vec = L.vec != 0;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const i64 tile = blockIdx.x;
	const i64 rt = tile / L.nct, ct = tile - rt * L.nct;
	const i64 r0 = rt * L.rows;
	const i64 r1 = min(R, r0 + L.rows);
	const i64 cbase = ct * (i64)L.J * 32 * N;
	BcastAcc<M, N> acca, accb;
#pragma unroll
	for (int j = 0; j < N; ++j) acca.col[j] = accb.col[j] = M(0);
	acca.all = accb.all = M(0);
	for (i64 r = r0 + warp; r < r1; r += BCAST_WARPS) {
		acca.row = accb.row = M(0);
		for (int jp = 0; jp < L.J; ++jp) {
			const i64 c = cbase + ((i64)jp * 32 + lane) * N;
			if (c >= C) break;
			const i64 lim = C - c;
			M g[N], av[N], bv[N], ga[N], gb[N];
			bcast_load<T, N>(dy, BCAST_FULL, r, c, C, vec, lim, g);
			if (Op::needs_a) bcast_load<T, N>(a, L.kind_a, r, c, C, vec, lim, av);
			if (Op::needs_b) bcast_load<T, N>(b, L.kind_b, r, c, C, vec, lim, bv);
#pragma unroll
			for (int j = 0; j < N; ++j)
				Op::template apply<T>(g[j], Op::needs_a ? av[j] : M(0), Op::needs_b ? bv[j] : M(0), s, ga[j], gb[j]);
			if (da) bcast_take<T, N>(da, L.kind_a, ga, r, c, C, vec, lim, acca);
			if (db) bcast_take<T, N>(db, L.kind_b, gb, r, c, C, vec, lim, accb);
		}
		if (da && L.kind_a == BCAST_ROW) bcast_row_end<T, M>(da, wsa, L.part_a, acca.row, r, ct, R);
		if (db && L.kind_b == BCAST_ROW) bcast_row_end<T, M>(db, wsb, L.part_b, accb.row, r, ct, R);
	}
	if (da && (L.kind_a == BCAST_COL || L.kind_a == BCAST_SCALAR))
		bcast_tile_end<T, N>(da, wsa, L.kind_a, L.part_a, acca, sh, rt, tile, cbase, C);
	if (db && (L.kind_b == BCAST_COL || L.kind_b == BCAST_SCALAR))
		bcast_tile_end<T, N>(db, wsb, L.kind_b, L.part_b, accb, sh, rt, tile, cbase, C);
}

// bcast_tile_finish_one sums one output's tile partials: a BCAST_COL
// column over the row tiles, a BCAST_ROW row over the column tiles, in
// tile order; BCAST_SCALAR's nrt*nct partials in block 0, each thread a
// strided share, then across the block.
template <typename T>
__device__ __forceinline__ void bcast_tile_finish_one(T* __restrict__ d, const typename OpMath<T>::type* __restrict__ ws,
		int kind, const BcastLayout& L, typename OpMath<T>::type* sh) {
	typedef typename OpMath<T>::type M;
	if (kind == BCAST_SCALAR) {
		if (blockIdx.x != 0) return;
		const i64 n = L.nrt * L.nct;
		M v = M(0);
		for (i64 i = threadIdx.x; i < n; i += blockDim.x) v += ws[i];
		v = bcast_block_sum(v, sh);
		if (threadIdx.x == 0) d[0] = from_op<T>(v);
		return;
	}
	const bool col = kind == BCAST_COL;
	const i64 n = col ? L.C : L.R, parts = col ? L.nrt : L.nct;
	for (i64 i = global_tid(); i < n; i += grid_threads()) {
		M v = M(0);
		for (i64 p = 0; p < parts; ++p) v += ws[p * n + i];
		d[i] = from_op<T>(v);
	}
}

template <typename T>
__device__ __forceinline__ void bcast_tile_finish(T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws,
		const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ M sh[BCAST_WARPS];
	const M* wsa = reinterpret_cast<const M*>(reinterpret_cast<const char*>(ws) + L.ws_a);
	const M* wsb = reinterpret_cast<const M*>(reinterpret_cast<const char*>(ws) + L.ws_b);
	if (da && L.part_a) bcast_tile_finish_one<T>(da, wsa, L.kind_a, L, sh);
	if (db && L.part_b) bcast_tile_finish_one<T>(db, wsb, L.kind_b, L, sh);
}

// bcast_kept_offsets returns, for kept index k, the offsets of dy, a, b
// and the output (o[0..3]), dividing by the kept dims innermost first.
// The loops are unrolled with constant indices so the layout stays in the
// parameter space.
__device__ __forceinline__ void bcast_kept_offsets(const BcastLayout& L, i64 k, i64 (&o)[4]) {
#pragma unroll
	for (int t = 0; t < 4; ++t) o[t] = 0;
#pragma unroll
	for (int d = BC_MAX_RANK - 1; d >= 0; --d) {
		if (d < L.krank) {
			const i64 idx = k % L.kdim[d];
			k /= L.kdim[d];
#pragma unroll
			for (int t = 0; t < 4; ++t) o[t] += idx * L.kstride[t][d];
		}
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void bcast_gen(const T* __restrict__ dy, const T* __restrict__ a, const T* __restrict__ b,
		T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws, double s, const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	T* out = L.out ? db : da;
	M* part = reinterpret_cast<M*>(reinterpret_cast<char*>(ws) + (L.out ? L.ws_b : L.ws_a));
	const i64 items = L.nk * L.nchunks;
	for (i64 t = global_tid(); t < items; t += grid_threads()) {
		const i64 ch = t / L.nk, k = t - ch * L.nk;
		i64 ko[4];
		bcast_kept_offsets(L, k, ko);
		const i64 r0 = ch * L.chunk;
		const i64 r1 = min(L.nr, r0 + L.chunk);
		// The reduced index r0 as digits ri and offsets ro, then stepped
		// like an odometer.
		i64 ri[BC_MAX_RANK], ro[3] = {0, 0, 0};
		i64 rem = r0;
#pragma unroll
		for (int d = BC_MAX_RANK - 1; d >= 0; --d) {
			ri[d] = 0;
			if (d < L.rrank) {
				ri[d] = rem % L.rdim[d];
				rem /= L.rdim[d];
#pragma unroll
				for (int u = 0; u < 3; ++u) ro[u] += ri[d] * L.rstride[u][d];
			}
		}
		M acc = M(0);
		for (i64 r = r0; r < r1; ++r) {
			const M g = to_op(dy[ko[0] + ro[0]]);
			const M av = Op::needs_a ? to_op(a[ko[1] + ro[1]]) : M(0);
			const M bv = Op::needs_b ? to_op(b[ko[2] + ro[2]]) : M(0);
			M ga, gb;
			Op::template apply<T>(g, av, bv, s, ga, gb);
			acc += L.out ? gb : ga;
			bool carry = true;
#pragma unroll
			for (int d = BC_MAX_RANK - 1; d >= 0; --d) {
				if (carry && d < L.rrank) {
					if (++ri[d] < L.rdim[d]) {
#pragma unroll
						for (int u = 0; u < 3; ++u) ro[u] += L.rstride[u][d];
						carry = false;
					} else {
#pragma unroll
						for (int u = 0; u < 3; ++u) ro[u] -= (ri[d] - 1) * L.rstride[u][d];
						ri[d] = 0;
					}
				}
			}
		}
		if (L.nchunks == 1) out[ko[3]] = from_op<T>(acc);
		else part[ch * L.nk + k] = acc;
	}
}

// bcast_gen_finish sums each kept element's chunk partials in chunk order.
template <typename T>
__device__ __forceinline__ void bcast_gen_finish(T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws,
		const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	T* out = L.out ? db : da;
	const M* part = reinterpret_cast<const M*>(reinterpret_cast<const char*>(ws) + (L.out ? L.ws_b : L.ws_a));
	for (i64 k = global_tid(); k < L.nk; k += grid_threads()) {
		M v = M(0);
		for (i64 ch = 0; ch < L.nchunks; ++ch) v += part[ch * L.nk + k];
		i64 ko[4];
		bcast_kept_offsets(L, k, ko);
		out[ko[3]] = from_op<T>(v);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void bcast_backward(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws, double s,
		const BcastLayout& L) {
	switch (L.phase) {
	case BCAST_TILE: bcast_tile<T, Op>(dy, a, b, da, db, ws, s, L); break;
	case BCAST_TILE_FINISH: bcast_tile_finish<T>(da, db, ws, L); break;
	case BCAST_GEN: bcast_gen<T, Op>(dy, a, b, da, db, ws, s, L); break;
	default: bcast_gen_finish<T>(da, db, ws, L); break;
	}
}
