#pragma once
// The flat kernel's pack layouts (red_flat_kq, red_flat_em, red_flat_load)
// and its two passes for var and std (red_flat_stats, red_flat_apply).
#include "reduce_pass.cuh"

// red_flat_kq is the first slice of pack q (of outer index o) where
// fip != 0; element e of the pack is in slice kq + (e & red_flat_em):
//   - fip > 0 (I a multiple of N): N adjacent slices, element e its own;
//   - fip < 0 (I = -fip divides N, 1 < I < N, so never for f64): the pack
//     holds N/I rows of all I slices of o (a pack never crosses an outer
//     index: k*I is a multiple of N), element e in slice e mod I.
template <int N>
__device__ __forceinline__ i64 red_flat_kq(i64 q, i64 o, const ReduceLayout& L) {
	if (N > 2 && L.fip < 0) return o * -L.fip;
	return (o * L.fip + q - bc_div(q, L.fmagic[1], L.fshift[1]) * L.fip) * N;
}

template <int N> __device__ __forceinline__ int red_flat_em(const ReduceLayout& L) {
	return N > 2 && L.fip < 0 ? (int)-L.fip - 1 : N - 1;
}

// red_flat_load is the pack of dy or y (p + kq) that matches x's pack
// where fip != 0: p's own pack where fip > 0; else the I values of slices
// kq.. (4 or 8 bytes, aligned to that: kq = o*I) repeated N/I times, read
// as one or two 32-bit words.
template <typename T>
__device__ __forceinline__ Pack<T> red_flat_load(const T* __restrict__ p, const ReduceLayout& L) {
	if (Pack<T>::N <= 2 || L.fip > 0) return load_pack(p);
	const unsigned* w = reinterpret_cast<const unsigned*>(p);
	const unsigned a = __ldg(w);
	const unsigned b = -L.fip * (i64)sizeof(T) == 8 ? __ldg(w + 1) : a;
	const uint4 r = make_uint4(a, b, a, b);
	Pack<T> out;
	memcpy(&out, &r, 16);
	return out;
}

// red_flat_groups is G, the slices of one outer index whose rows a pack
// holds: 1 where fip == 0 (I == 1), I where fip < 0, N where fip == 1 (I ==
// N: a pack is one row of all N slices, element e in slice e). Element e of
// any pack of outer index o is in slice o*G + (e & (G-1)). The statistics
// pass serves these three layouts only (the launcher's choice).
template <int N> __device__ __forceinline__ int red_flat_groups(const ReduceLayout& L) {
	return L.fip < 0 ? (int)-L.fip : L.fip > 0 ? N : 1;
}

// RED_FLAT_BATCH: the packs of x a thread of the statistics pass loads
// before it adds the first (64 bytes in flight per thread).
#define RED_FLAT_BATCH 4

// RedFlatApplyBatch: the packs of x a thread of the apply pass loads before
// it uses the first: RED_FLAT_BATCH, but for f16/bf16, whose 8 element
// contexts a pack take 16 registers, 2 in the compute capability 8.0
// build and 1 in the 7.0 one (more spill on sm_70 at the flat kernel's 64
// registers, 4 blocks an SM).
#if __CUDA_ARCH__ >= 800
#define RED_FLAT_APPLY_BATCH16 2
#else
#define RED_FLAT_APPLY_BATCH16 1
#endif
template <typename T> struct RedFlatApplyBatch {
	static constexpr int n = sizeof(T) == 2 ? RED_FLAT_APPLY_BATCH16 : RED_FLAT_BATCH;
};

// store_pack_cs is store_pack with the streaming hint (st.global.cs: evict
// first), so that the apply pass's dx pushes x's lines, which it reads
// next, out of L2 last.
template <typename T> __device__ __forceinline__ void store_pack_cs(T* p, const Pack<T>& v) {
	unsigned w[4];
	if (sizeof(T) == 8) {
		memcpy(w, &v, 16);
	} else {
		pack_words<T, 4>(w, v.v);
	}
	asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
}

// red_flat_stats is the statistics pass of var and std on the flat layout
// (L.phase RED_PHASE_FLAT): tile t = o*nchunks + c (L.tiles of them, a
// block each in turn) is the packs [c*chunk, min((c+1)*chunk, P)) of outer
// index o, P = k*G/N of them. Each thread accumulates every element
// position e of its packs (Op::accum, in pack order; RED_FLAT_BATCH loads
// issued before their adds), then folds the positions of one slice
// together (halving: position e + h into e while h >= G, so slice j's
// total ends in position j); each slice's total is combined over the warp
// (red_warp_total) and then over the warps in index order, a fixed order
// (the bits depend on the shape alone), and stored as the partial of chunk
// c, ws[c*S + o*G + j]: the col layout that the apply pass's blocks
// (red_flat_outer_totals) or the apply kernel's totals (red_total,
// L.mapping RED_COL) combine.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_stats(const T* __restrict__ x, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int W = RED_BLOCK / 32;
	__shared__ RedAcc<M> sm[W * N];
	constexpr int U = RED_FLAT_BATCH;
	const int G = red_flat_groups<N>(L);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const i64 P = L.k * G / N;
	for (i64 t = blockIdx.x; t < L.tiles; t += gridDim.x) {
		const i64 o = t / L.nchunks, c = t - o * L.nchunks;
		const i64 q1 = o * P + min(P, (c + 1) * L.chunk);
		RedAcc<M> acc[N];
#pragma unroll
		for (int e = 0; e < N; ++e) acc[e] = Op::template init<M>();
		for (i64 q = o * P + c * L.chunk + threadIdx.x; q < q1; q += U * RED_BLOCK) {
			Pack<T> xv[U];
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (q + u * RED_BLOCK < q1) xv[u] = load_pack(x + (q + u * RED_BLOCK) * N);
			}
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (q + u * RED_BLOCK < q1) {
#pragma unroll
					for (int e = 0; e < N; ++e) Op::accum(acc[e], to_op(xv[u].v[e]), M(0));
				}
			}
		}
#pragma unroll
		for (int h = N / 2; h >= 1; h >>= 1) {
			if (h >= G) {
#pragma unroll
				for (int e = 0; e < h; ++e) Op::combine(acc[e], acc[e + h]);
			}
		}
#pragma unroll
		for (int j = 0; j < N; ++j) {
			if (j < G) {
				red_warp_total<Op>(acc[j]);
				if (lane == 0) sm[warp * N + j] = acc[j];
			}
		}
		__syncthreads();
		if (threadIdx.x < G) {
			RedAcc<M> r = sm[threadIdx.x];
			for (int w = 1; w < W; ++w) Op::combine(r, sm[w * N + threadIdx.x]);
			ws[c * L.slices + o * G + threadIdx.x] = r;
		}
		__syncthreads();
	}
}

// red_flat_outer_totals combines the statistics pass's partials of the G
// slices of outer index o (ws[c*S + o*G + j], c < nchunks) into st[j], j <
// G, with the whole block (sm: W*N entries of scratch): thread t takes
// slice j = t mod G (G divides RED_BLOCK) and its chunks t/G, t/G +
// RED_BLOCK/G, ... in order, then an xor butterfly over the warp's lanes of
// that slice, then the warps in index order: a fixed order, so that every
// block that needs a total forms the same bits.
template <typename Op, typename M, int N>
__device__ __forceinline__ void red_flat_outer_totals(const RedAcc<M>* __restrict__ ws, const ReduceLayout& L, i64 o,
		int G, RedAcc<M>* sm, RedAcc<M>* st) {
	constexpr int W = RED_BLOCK / 32;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int j = threadIdx.x & (G - 1);
	const RedAcc<M>* p = ws + o * G + j;
	RedAcc<M> acc = Op::template init<M>();
#pragma unroll 1
	for (i64 c = threadIdx.x / G; c < L.nchunks; c += RED_BLOCK / G) Op::combine(acc, p[c * L.slices]);
	for (int off = G; off < 32; off <<= 1) Op::combine(acc, red_shfl_xor(acc, off));
	if (lane < G) sm[warp * N + lane] = acc;
	__syncthreads();
	if (threadIdx.x < G) {
		RedAcc<M> r = sm[threadIdx.x];
		for (int w = 1; w < W; ++w) Op::combine(r, sm[w * N + threadIdx.x]);
		st[threadIdx.x] = r;
	}
	__syncthreads();
}

// red_flat_apply_tiles is the apply pass where L.reverse is set, launched
// right after the statistics pass (no totals launch): the statistics
// pass's tiles (a block each in turn) walked last to first, and each
// tile's packs last to first (a thread's packs are the ones it summed,
// RedFlatApplyBatch of them loaded at a time), so that the x the statistics
// pass read last, the most likely to be still in L2, is read first; dx is
// stored with the streaming hint. A tile's block first combines the totals
// of its outer index's slices itself (red_flat_outer_totals), then forms
// the tile's N element contexts once (element e of outer index o is in
// slice o*G + (e & (G-1))) from the slices' dy, y and totals (Op::slice;
// Op::elem per element: the same math as the row and col kernels).
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_apply_tiles(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int U = RedFlatApplyBatch<T>::n;
	__shared__ RedAcc<M> sm[(RED_BLOCK / 32) * N];
	__shared__ RedAcc<M> st[N];
	const int G = red_flat_groups<N>(L);
	const i64 P = L.k * G / N;
	for (i64 b = blockIdx.x; b < L.tiles; b += gridDim.x) {
		const i64 t = L.tiles - 1 - b;
		const i64 o = t / L.nchunks, c = t - o * L.nchunks;
		const i64 q0 = o * P + c * L.chunk + threadIdx.x, q1 = o * P + min(P, (c + 1) * L.chunk);
		red_flat_outer_totals<Op, M, N>(ws, L, o, G, sm, st);
		RedCtx<M> cx[N];
#pragma unroll
		for (int e = 0; e < N; ++e) {
			const i64 s = o * G + (e & (G - 1));
			const M yv = Op::needs_y ? to_op(y[s]) : M(0);
			cx[e] = Op::template slice<M>(to_op(dy[s]), yv, st[e & (G - 1)], L.scale, L.k);
		}
		// The thread's packs are q0 + j*RED_BLOCK, j < n.
		const i64 n = q0 < q1 ? (q1 - q0 + RED_BLOCK - 1) / RED_BLOCK : 0;
		for (i64 j = n - 1; j >= 0; j -= U) {
			Pack<T> xv[U];
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (j - u >= 0) xv[u] = load_pack(x + (q0 + (j - u) * RED_BLOCK) * N);
			}
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (j - u >= 0) {
					Pack<T> out;
#pragma unroll
					for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(cx[e], to_op(xv[u].v[e])));
					store_pack_cs(dx + (q0 + (j - u) * RED_BLOCK) * N, out);
				}
			}
		}
	}
}

// red_flat_apply is the apply pass of var and std on the flat layout: the
// tiles' walk above where L.reverse is set, else, after the apply kernel's
// totals (ws[S*nchunks + s], red_total), an elementwise map of x
// as the ops without statistics take it (a pack per thread over the flat
// index), each element's context formed from its slice's dy, y and total
// (Op::slice, Op::elem: the same math as the row and col kernels).
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_apply(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (L.reverse) {
		red_flat_apply_tiles<T, Op>(x, y, dy, dx, ws, L);
		return;
	}
	const RedAcc<M>* tot = ws + L.slices * L.nchunks;
	const i64 nth = grid_threads();
	for (i64 q = global_tid(); q < L.fpacks; q += nth) {
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		const Pack<T> xv = load_pack(x + q * N);
		Pack<T> out;
		if (L.fip == 0) {
			const M yv = Op::needs_y ? to_op(y[o]) : M(0);
			const RedCtx<M> c = Op::template slice<M>(to_op(dy[o]), yv, tot[o], L.scale, L.k);
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c, to_op(xv.v[e])));
		} else {
			const i64 kq = red_flat_kq<N>(q, o, L);
			const int em = red_flat_em<N>(L);
			const Pack<T> gv = red_flat_load(dy + kq, L);
			Pack<T> yp;
			if (Op::needs_y) yp = red_flat_load(y + kq, L);
#pragma unroll
			for (int e = 0; e < N; ++e) {
				const M yv = Op::needs_y ? to_op(yp.v[e]) : M(0);
				const RedCtx<M> c = Op::template slice<M>(to_op(gv.v[e]), yv, tot[kq + (e & em)], L.scale, L.k);
				out.v[e] = from_op<T>(Op::elem(c, to_op(xv.v[e])));
			}
		}
		store_pack(dx + q * N, out);
	}
}
