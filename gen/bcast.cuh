// Broadcasting binary backward: dy has the broadcast shape, a and b have
// shapes of their own that broadcast to it, and da, db (in a's and b's
// shapes) receive the gradient summed over the dims their operand was
// broadcast along. The per-element math is the binary family's functors
// (binary.cuh) in opmath M; every sum accumulates in M, in a fixed order
// that depends only on the launch layout (no atomics), and is rounded to T
// once. The launcher (ops/binary_bcast.go) picks the phases, the first
// two in the "tile" kernel, the others in the "gen" kernel:
//
//   BCAST_TILE: dy is a dense [R, C] and each operand one of the BCAST_*
//   kinds. Block t takes rows [rt*rows, ..) of columns
//   [ct*J*32*N, ..) (rt = t / nct, ct = t % nct, N elements to a 16-byte
//   pack); warp w takes the tile's rows w, w + 8, ...; lane l the
//   packs l, l + 32, ... (J of them) of each row. With R = 1 the block's
//   256 threads share the one row instead: block t takes columns
//   [t*J*256*N, ..), thread l the packs l, l + 256, ... A BCAST_FULL
//   output is stored as it is computed; a BCAST_ROW one sums a row's
//   packs in each lane, then across the warp; a BCAST_COL one (J = 1)
//   sums a column in each thread, then across the block's warps; a
//   BCAST_SCALAR one sums everything a thread sees, then across the block.
//   A sum is final when one tile covers it (part_* = 0), else the tile's
//   partial goes to the workspace and BCAST_TILE_FINISH adds the partials
//   in tile order (BCAST_SCALAR's in one block).
//
//   BCAST_GEN: one output, any strides and up to 8 dims. A work item is a
//   kept index k (the output's own element) and a chunk of the reduced
//   index range, walked in runs along the innermost reduced dim (each run
//   entered by division over the reduced dims); items run k fastest so that
//   neighbouring threads touch neighbouring output elements. With one
//   chunk the sum is final, else BCAST_GEN_FINISH adds the chunks' partials
//   in chunk order.
#pragma once
#include "binary.cuh"
#include "zconsts.cuh"

// bcast_zero is -0, the identity of IEEE addition (-0 + x is x for every
// x, -0 and NaN included), where every sum starts: a gradient that is one
// term keeps that term's bits, the sign of a zero included. An empty sum
// is +0.
template <typename M> __device__ __forceinline__ M bcast_zero() { return M(-0.0); }

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
	M s = bcast_zero<M>();
	if (threadIdx.x == 0) {
#pragma unroll
		for (int w = 0; w < BCAST_WARPS; ++w) s += sh[w];
	}
	return s;
}

// bcast_load reads the N elements of an operand of the given kind at row
// r and columns [c, c + N) of the [R, C] view: a pack where vec holds,
// else element by element up to lim (the columns left in the row, at
// most N; the rest read as 0 and are never used). A BCAST_ROW or
// BCAST_SCALAR operand has one value for all N, one (read once per row
// by the caller).
template <typename T>
__device__ __forceinline__ Pack<T> bcast_load(const T* __restrict__ p, int kind, T one, i64 r, i64 c, i64 C, bool vec,
		int lim) {
	constexpr int N = Pack<T>::N;
	Pack<T> out;
	if (kind == BCAST_ROW || kind == BCAST_SCALAR) {
#pragma unroll
		for (int j = 0; j < N; ++j) out.v[j] = one;
		return out;
	}
	const i64 off = (kind == BCAST_FULL ? r * C : 0) + c;
	if (vec) return load_pack(p + off);
#pragma unroll
	for (int j = 0; j < N; ++j) out.v[j] = j < lim ? p[off + j] : from_op<T>(typename OpMath<T>::type(0));
	return out;
}

// bcast_one is the value of a BCAST_ROW or BCAST_SCALAR operand at row r
// (unused for the other kinds).
template <typename T>
__device__ __forceinline__ T bcast_one(const T* __restrict__ p, int kind, i64 r) {
	if (kind == BCAST_ROW) return p[r];
	if (kind == BCAST_SCALAR) return p[0];
	return T();
}

// bcast_store writes a BCAST_FULL output's N elements at (r, c).
template <typename T>
__device__ __forceinline__ void bcast_store(T* __restrict__ d, const Pack<T>& v, i64 r, i64 c, i64 C, bool vec, int lim) {
	const i64 off = r * C + c;
	if (vec) {
		store_pack(d + off, v);
	} else {
#pragma unroll
		for (int j = 0; j < Pack<T>::N; ++j)
			if (j < lim) d[off + j] = v.v[j];
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

// bcast_tile_end finishes a tile's BCAST_COL or BCAST_SCALAR output from
// this thread's column sums col or total all (uniform across the block:
// every thread calls it or none does).
template <typename T, int N>
__device__ __forceinline__ void bcast_tile_end(T* __restrict__ d, typename OpMath<T>::type* __restrict__ ws, int kind,
		int part, const typename OpMath<T>::type (&col)[N], typename OpMath<T>::type all,
		typename OpMath<T>::type* sh, i64 rt, i64 tile, i64 cbase, i64 C) {
	typedef typename OpMath<T>::type M;
	if (kind == BCAST_SCALAR) {
		const M s = bcast_block_sum(all, sh);
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
	for (int j = 0; j < N; ++j) sh[warp * 32 * N + lane * N + j] = col[j];
	__syncthreads();
	for (int t = threadIdx.x; t < 32 * N; t += blockDim.x) {
		M s = bcast_zero<M>();
#pragma unroll
		for (int w = 0; w < BCAST_WARPS; ++w) s += sh[w * 32 * N + t];
		const i64 c = cbase + t;
		if (c < C) {
			if (part) ws[rt * C + c] = s;
			else d[c] = from_op<T>(s);
		}
	}
}

// bcast_out takes one output's N values g of the pack at (r, c): a
// BCAST_FULL output stores them, a reduced one adds the first lim of them
// to its running sum (col per column, row or all) in column order. The
// kind is tested once a pack, not once an element. Kind 0 (the output
// not wanted) does nothing.
template <typename T, int N>
__device__ __forceinline__ void bcast_out(T* __restrict__ d, int kind, const typename OpMath<T>::type (&g)[N],
		typename OpMath<T>::type (&col)[N], typename OpMath<T>::type& row, typename OpMath<T>::type& all, i64 r,
		i64 c, i64 C, bool vec, int lim) {
	if (kind == BCAST_FULL) {
		Pack<T> p;
#pragma unroll
		for (int j = 0; j < N; ++j) p.v[j] = from_op<T>(g[j]);
		bcast_store(d, p, r, c, C, vec, lim);
	} else if (kind == BCAST_COL) {
#pragma unroll
		for (int j = 0; j < N; ++j)
			if (j < lim) col[j] += g[j];
	} else if (kind == BCAST_ROW) {
#pragma unroll
		for (int j = 0; j < N; ++j)
			if (j < lim) row += g[j];
	} else if (kind == BCAST_SCALAR) {
#pragma unroll
		for (int j = 0; j < N; ++j)
			if (j < lim) all += g[j];
	}
}

// bcast_tile: see the top of the file. At most one operand is BCAST_COL
// (the launcher sends two to the general path), so one set of column sums
// serves both outputs. A one-row view (R = 1: every operand full or one
// element, such as x*s with a 0-d s) spreads the block's 256 threads
// along the row, each taking packs t, t + 256, ... (J of them), so that
// every warp streams dy rather than one warp a block.
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
	// An output not wanted keeps no sums and stores nothing.
	const int ka = da ? L.kind_a : 0, kb = db ? L.kind_b : 0;
	const bool flat = R == 1;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int lanes = flat ? BCAST_WARPS * 32 : 32, li = flat ? (int)threadIdx.x : lane;
	const i64 tile = blockIdx.x;
	const i64 rt = tile / L.nct, ct = tile - rt * L.nct;
	const i64 r0 = rt * L.rows;
	const i64 r1 = min(R, r0 + L.rows);
	const i64 cbase = ct * (i64)L.J * lanes * N;
	// This thread's packs of a row: c = first + jp*step for jp < jn.
	const i64 first = cbase + (i64)li * N, step = (i64)lanes * N;
	const int jn = first < C ? (int)min((i64)L.J, (C - first + step - 1) / step) : 0;
	M col[N];
#pragma unroll
	for (int j = 0; j < N; ++j) col[j] = bcast_zero<M>();
	M alla = bcast_zero<M>(), allb = bcast_zero<M>();
	for (i64 r = r0 + (flat ? 0 : warp); r < r1; r += BCAST_WARPS) {
		M rowa = bcast_zero<M>(), rowb = bcast_zero<M>();
		const T oa = Op::needs_a ? bcast_one(a, L.kind_a, r) : T();
		const T ob = Op::needs_b ? bcast_one(b, L.kind_b, r) : T();
		for (int jp = 0; jp < jn; ++jp) {
			const i64 c = first + jp * step;
			// The pack's columns in the row, capped at N so that the
			// per-element tests compare 32-bit values.
			const int lim = (int)min(C - c, (i64)N);
			const Pack<T> g = bcast_load(dy, BCAST_FULL, T(), r, c, C, vec, lim);
			Pack<T> pa, pb;
			if (Op::needs_a) pa = bcast_load(a, L.kind_a, oa, r, c, C, vec, lim);
			if (Op::needs_b) pb = bcast_load(b, L.kind_b, ob, r, c, C, vec, lim);
			M ga[N], gb[N];
#pragma unroll
			for (int j = 0; j < N; ++j)
				Op::template apply<T>(to_op(g.v[j]), Op::needs_a ? to_op(pa.v[j]) : M(0),
					Op::needs_b ? to_op(pb.v[j]) : M(0), s, ga[j], gb[j]);
			bcast_out<T, N>(da, ka, ga, col, rowa, alla, r, c, C, vec, lim);
			bcast_out<T, N>(db, kb, gb, col, rowb, allb, r, c, C, vec, lim);
		}
		if (ka == BCAST_ROW) bcast_row_end<T, M>(da, wsa, L.part_a, rowa, r, ct, R);
		if (kb == BCAST_ROW) bcast_row_end<T, M>(db, wsb, L.part_b, rowb, r, ct, R);
	}
	if (ka == BCAST_COL || ka == BCAST_SCALAR)
		bcast_tile_end<T, N>(da, wsa, ka, L.part_a, col, alla, sh, rt, tile, cbase, C);
	if (kb == BCAST_COL || kb == BCAST_SCALAR)
		bcast_tile_end<T, N>(db, wsb, kb, L.part_b, col, allb, sh, rt, tile, cbase, C);
}

// bcast_tile_finish_one sums one output's tile partials: element i of a
// BCAST_COL output (n = C) over the row tiles p, or of a BCAST_ROW output
// (n = R) over the column tiles, from ws[p*n + i]. A block takes 32
// elements at a time, a lane each; warp w adds the partials p = w, w + 8,
// ... in order, and thread i of warp 0 then adds the warps' sums in warp
// order: eight loads in flight per element rather than one. BCAST_SCALAR's
// nrt*nct partials are summed by block 0, each thread a strided share,
// then across the block.
template <typename T>
__device__ __forceinline__ void bcast_tile_finish_one(T* __restrict__ d, const typename OpMath<T>::type* __restrict__ ws,
		int kind, const BcastLayout& L, typename OpMath<T>::type* sh) {
	typedef typename OpMath<T>::type M;
	if (kind == BCAST_SCALAR) {
		if (blockIdx.x != 0) return;
		const i64 n = L.nrt * L.nct;
		M v = bcast_zero<M>();
		for (i64 i = threadIdx.x; i < n; i += blockDim.x) v += ws[i];
		v = bcast_block_sum(v, sh);
		if (threadIdx.x == 0) d[0] = from_op<T>(v);
		return;
	}
	const bool col = kind == BCAST_COL;
	const i64 n = col ? L.C : L.R, parts = col ? L.nrt : L.nct;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (i64 base = (i64)blockIdx.x * 32; base < n; base += (i64)gridDim.x * 32) {
		const i64 i = base + lane;
		M v = bcast_zero<M>();
		if (i < n)
			for (i64 p = warp; p < parts; p += BCAST_WARPS) v += ws[p * n + i];
		__syncthreads();
		sh[warp * 32 + lane] = v;
		__syncthreads();
		if (warp == 0 && i < n) {
			M t = bcast_zero<M>();
#pragma unroll
			for (int w = 0; w < BCAST_WARPS; ++w) t += sh[w * 32 + lane];
			d[i] = from_op<T>(t);
		}
	}
}

template <typename T>
__device__ __forceinline__ void bcast_tile_finish(T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws,
		const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ M sh[BCAST_WARPS * 32];
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

// bcast_reduced_offsets returns, for reduced index r, the offsets of dy,
// a and b (o), and the innermost reduced dim's index there (inner), its
// length (idim) and its strides (is); with no reduced dims, 0, 1 and 0.
__device__ __forceinline__ void bcast_reduced_offsets(const BcastLayout& L, i64 r, i64 (&o)[3], i64& inner, i64& idim,
		i64 (&is)[3]) {
	inner = 0;
	idim = 1;
#pragma unroll
	for (int u = 0; u < 3; ++u) o[u] = is[u] = 0;
#pragma unroll
	for (int d = BC_MAX_RANK - 1; d >= 0; --d) {
		if (d < L.rrank) {
			const i64 idx = r % L.rdim[d];
			r /= L.rdim[d];
#pragma unroll
			for (int u = 0; u < 3; ++u) o[u] += idx * L.rstride[u][d];
			if (d == L.rrank - 1) {
				inner = idx;
				idim = L.rdim[d];
#pragma unroll
				for (int u = 0; u < 3; ++u) is[u] = L.rstride[u][d];
			}
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
		const i64 r1 = min(L.nr, ch * L.chunk + L.chunk);
		M acc = L.nr == 0 ? M(0) : bcast_zero<M>();
		// Runs along the innermost reduced dim, each entered by division.
		for (i64 r = ch * L.chunk; r < r1;) {
			i64 ro[3], is[3], inner, idim;
			bcast_reduced_offsets(L, r, ro, inner, idim, is);
			const i64 run = min(r1 - r, idim - inner);
			i64 oy = ko[0] + ro[0], oa = ko[1] + ro[1], ob = ko[2] + ro[2];
			for (i64 q = 0; q < run; ++q) {
				const M g = to_op(dy[oy]);
				const M av = Op::needs_a ? to_op(a[oa]) : M(0);
				const M bv = Op::needs_b ? to_op(b[ob]) : M(0);
				M ga, gb;
				Op::template apply<T>(g, av, bv, s, ga, gb);
				acc += L.out ? gb : ga;
				oy += is[0];
				oa += is[1];
				ob += is[2];
			}
			r += run;
		}
		if (L.nchunks == 1) out[ko[3]] = from_op<T>(acc);
		else part[ch * L.nk + k] = acc;
	}
}

// bcast_gen_finish sums each kept element's chunk partials: as the tile
// finish does, a block takes 32 kept elements, warp w adds the chunks w,
// w + 8, ... in order and warp 0 adds the warps' sums in warp order.
template <typename T>
__device__ __forceinline__ void bcast_gen_finish(T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws,
		const BcastLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ M sh[BCAST_WARPS * 32];
	T* out = L.out ? db : da;
	const M* part = reinterpret_cast<const M*>(reinterpret_cast<const char*>(ws) + (L.out ? L.ws_b : L.ws_a));
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (i64 base = (i64)blockIdx.x * 32; base < L.nk; base += (i64)gridDim.x * 32) {
		const i64 k = base + lane;
		M v = bcast_zero<M>();
		if (k < L.nk)
			for (i64 ch = warp; ch < L.nchunks; ch += BCAST_WARPS) v += part[ch * L.nk + k];
		__syncthreads();
		sh[warp * 32 + lane] = v;
		__syncthreads();
		if (warp == 0 && k < L.nk) {
			M t = bcast_zero<M>();
#pragma unroll
			for (int w = 0; w < BCAST_WARPS; ++w) t += sh[w * 32 + lane];
			i64 ko[4];
			bcast_kept_offsets(L, k, ko);
			out[ko[3]] = from_op<T>(t);
		}
	}
}

// The two kernels of an (op, dtype): the tile phases and the general ones.
// They are separate kernels so that each gets the registers it needs (the
// general phases' 64-bit index math, kept alongside the tile loop in one
// kernel, would cost the tile pass occupancy).
template <typename T, typename Op>
__device__ __forceinline__ void bcast_tile_kernel(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws, double s,
		const BcastLayout& L) {
	if (L.phase == BCAST_TILE) bcast_tile<T, Op>(dy, a, b, da, db, ws, s, L);
	else bcast_tile_finish<T>(da, db, ws, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void bcast_gen_kernel(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, void* __restrict__ ws, double s,
		const BcastLayout& L) {
	if (L.phase == BCAST_GEN) bcast_gen<T, Op>(dy, a, b, da, db, ws, s, L);
	else bcast_gen_finish<T>(da, db, ws, L);
}
