#pragma once
// The kernel bodies, one per variant, and the strip kernel (red_strip).
#include "reduce_flat_fix.cuh"

// Kernel bodies, one per variant (all take the family's one parameter list):
//   reduce_flat:  ops without statistics on dense operands, and max, min
//                 and prod where their slices would be split (reduce_flat.cuh);
//   reduce_row:   the row mapping, nchunks == 1 (any nchunks for ops
//                 without statistics);
//   reduce_col:   the col mapping, likewise;
//   reduce_stats: first pass of split slices (ops with statistics), either
//                 mapping: partial statistics to ws, provisional dx;
//   reduce_apply: launched twice after reduce_stats: red_total (the
//                 slices' totals), then dx;
//   reduce_fix:   launched once after reduce_flat for max, min and prod:
//                 mends its provisional dx (red_flat_fix,
//                 reduce_flat_fix.cuh);
//   reduce_one:   var/std's split col slices in one launch (for an x
//                 larger than L2, the launcher's choice): each tile keeps
//                 its x in shared memory until its slice block's totals
//                 are known.
//   reduce_strip: an op with statistics along an outer axis on dense
//                 operands, one block per strip of whole slices held in
//                 shared memory (see below; the launcher's choice).
// reduce_stats, reduce_apply, reduce_one and reduce_strip are empty for
// ops without statistics, reduce_one also for the provisional ones, which
// read x once without it (they are never launched for them).

template <typename T, typename Op>
__device__ __forceinline__ void reduce_row(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ RedAcc<M> sm[RED_BLOCK / 32];
	red_row_pass<T, Op, RED_FUSED>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_col(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ RedAcc<M> sm[Op::stats ? RED_BLOCK * RedColVec<T, Op>::n : 1];
	red_col_pass<T, Op, RED_FUSED>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_stats(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	if (L.mapping == RED_ROW) {
		red_row_pass<T, Op, RED_STATS>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	} else {
		red_col_pass<T, Op, RED_STATS>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_one(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats || Op::provisional) return;
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	red_col_pass<T, Op, RED_ONE>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

// reduce_strip: an op with statistics along an outer axis on dense
// operands (x and dx seen as [O, k, I], dy and y as [O, I]; x and dx
// 16-byte aligned), one block per strip: W = cvec*N adjacent slices (cvec
// 16-byte packs of every row, I a multiple of W) over all k positions. The
// block reads its strip once into dynamic shared memory, RED_STRIP_BATCH
// packs a thread at a time, accumulating each slice's statistics as it goes
// (thread t owns pack t % cvec of every row it loads, and the y of those
// slices where the op compares with it); combines them over the lanes that
// share a pack (an xor butterfly) and then over the warps in index order,
// a fixed order; forms each slice's context (Op::slice, as every other
// path); and writes dx from the packs it holds, each thread its own (the
// fast quotient where the op has one, the exact form for a pack where it
// is out of range, as reduce_flat). So x is read once, with no workspace
// and no block waiting for another, where var/std's two passes read it
// twice, the one kernel's tiles wait for the rest of their slice block,
// and the flat path of max, min and prod needs its atomics and a second
// launch. The launcher takes it where the strip fits in one block's shared
// memory (RED_STRIP_HEAD bytes of statistics and contexts, then k*cvec
// packs). Layout: k, scale, tiles (the strips), cvec, fip = I, fmagic[0]
// and fshift[0] divide by I/W (strips per outer index).
#define RED_STRIP_BATCH 8

// RedStripPair<T, Op>::on: the strip kernel counts ties and writes dx of
// 16-bit max and min two elements an instruction (compute capability 9.0;
// RedPair's compare, add and multiply of 32-bit words of two values): a
// tie adds 1.0 to a 16-bit count (exact: a block holds at most 227 KiB of
// packs, fewer than 64 a thread, and 16-bit counts are exact to 256), and
// dx is the 16-bit g/count times the compare's 1.0 or 0.0, the same bits
// as the opmath product rounded once (g/count is at most |g|, a 16-bit
// value, so its rounding does not overflow).
template <typename T, typename Op> struct RedStripPair { static constexpr bool on = false; };
#if __CUDA_ARCH__ >= 900
template <> struct RedStripPair<__nv_bfloat16, RedMaxMin> { static constexpr bool on = true; };
template <> struct RedStripPair<__half, RedMaxMin> { static constexpr bool on = true; };
#endif

// RedPair<T>: words of two bf16 (two f16 for __half) as bf16x2 (half2).
// Below compute capability 9.0 no strip kernel takes the pair form
// (RedStripPair), and RedPair is a placeholder the compiler drops.
#if __CUDA_ARCH__ >= 900
template <typename T> struct RedPair {
	typedef __nv_bfloat162 V;
	static __device__ __forceinline__ V eq(V a, V b) { return __heq2(a, b); }
	static __device__ __forceinline__ V add(V a, V b) { return __hadd2(a, b); }
	static __device__ __forceinline__ V mul(V a, V b) { return __hmul2(a, b); }
	static __device__ __forceinline__ V from(float a, float b) { return __floats2bfloat162_rn(a, b); }
	static __device__ __forceinline__ float2 to(V a) { return __bfloat1622float2(a); }
};
template <> struct RedPair<__half> {
	typedef __half2 V;
	static __device__ __forceinline__ V eq(V a, V b) { return __heq2(a, b); }
	static __device__ __forceinline__ V add(V a, V b) { return __hadd2(a, b); }
	static __device__ __forceinline__ V mul(V a, V b) { return __hmul2(a, b); }
	static __device__ __forceinline__ V from(float a, float b) { return __floats2half2_rn(a, b); }
	static __device__ __forceinline__ float2 to(V a) { return __half22float2(a); }
};
#else
template <typename T> struct RedPair {
	typedef unsigned V;
	static __device__ __forceinline__ V eq(V a, V) { return a; }
	static __device__ __forceinline__ V add(V a, V) { return a; }
	static __device__ __forceinline__ V mul(V a, V) { return a; }
	static __device__ __forceinline__ V from(float, float) { return 0; }
	static __device__ __forceinline__ float2 to(V) { return make_float2(0.f, 0.f); }
};
#endif

// RED_STRIP_VMAX, RED_STRIP_CLUSTER and RED_STRIP_HEAD (gen/zconsts.cuh,
// with ops/zconsts.go's redStripVMax, redStripCluster and redStripHead):
// the most packs of a row a strip takes, the clustered strip kernel's
// blocks per cluster, and the bytes of shared memory before the packs.
// red_strip is the strip kernel for C == 1 and, for C > 1 (compute
// capability 9.0, a thread block cluster of C blocks per strip), its
// clustered form: block b is part b % C of strip b / C and holds only rows
// [r*chunk, (r+1)*chunk) of it (L.chunk, r its cluster rank); each block
// publishes its partial statistics in shared memory, and after a cluster
// barrier reads all C of them through distributed shared memory and
// combines them in rank order (the same bits in every block). With half
// the rows per block a strip of 64-byte rows fits in shared memory where a
// whole one would not (4096 rows), and the wider rows are the faster ones
// (ops/reduce_geometry.go).
template <typename T, typename Op, int C>
__device__ __forceinline__ void red_strip(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int WMAX = RED_STRIP_VMAX * N;
	static_assert(sizeof(RedAcc<M>) * ((RED_BLOCK / 32) + 1) * WMAX + sizeof(RedCtx<M>) * WMAX <= RED_STRIP_HEAD,
			"the strip's sums and factors must fit in RED_STRIP_HEAD");
	RedAcc<M>* part = reinterpret_cast<RedAcc<M>*>(red_dyn);  // [warp][slice]
	RedAcc<M>* tot = part + (RED_BLOCK / 32) * WMAX;          // [slice]: the block's partial (C > 1)
	RedCtx<M>* cx = reinterpret_cast<RedCtx<M>*>(tot + WMAX);
	uint4* buf = reinterpret_cast<uint4*>(red_dyn + RED_STRIP_HEAD);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int vr = L.cvec;  // 1, 2 or 4
	const int sh = vr == 4 ? 2 : vr == 2 ? 1 : 0;
	const int v = tid & (vr - 1);
	const int W = vr * N;
	const i64 b = C == 1 ? (i64)blockIdx.x : (i64)(blockIdx.x / C);
	const i64 r0 = C == 1 ? 0 : (i64)(blockIdx.x % C) * L.chunk;
	const i64 o = bc_div(b, L.fmagic[0], L.fshift[0]);
	const i64 i0 = b * W - o * L.fip;
	const i64 base = o * L.k * L.fip + r0 * L.fip + i0 + v * N;
	const i64 rows = C == 1 ? L.k : max(min(L.chunk, L.k - r0), (i64)0);
	const int nv = (int)(rows << sh);  // packs in the block's part of the strip
	const i64 s0 = o * L.fip + i0;     // the strip's first slice in dy and y
	RedAcc<M> acc[N];
	M yv[N];
#pragma unroll
	for (int e = 0; e < N; ++e) {
		acc[e] = Op::template init<M>();
		yv[e] = Op::needs_y ? to_op(y[s0 + v * N + e]) : M(0);
	}
	constexpr bool PAIR = RedStripPair<T, Op>::on;
	typedef RedPair<T> P2;
	typename P2::V y2[4], cnt2[4];
	if (PAIR) {
#pragma unroll
		for (int k = 0; k < 4; ++k) {
			memcpy(&y2[k], y + s0 + v * N + 2 * k, 4);
			cnt2[k] = P2::from(0.f, 0.f);
		}
	}
	// Thread t's pack m = m0 + t + RED_BLOCK*i lies in row (m0 >> sh) +
	// (t >> sh) + i*(RED_BLOCK >> sh) of its part: px is its row-0 pack,
	// rstep the elements between the rows of i and i+1.
	const i64 rstep = (i64)(RED_BLOCK >> sh) * L.fip;
	const T* const px = x + base + (i64)(tid >> sh) * L.fip;
	T* const pdx = dx + base + (i64)(tid >> sh) * L.fip;
	// Whole batches without a bound check, then the last, partial one.
	auto batch = [&](int m0, bool whole) {
		uint4 r[RED_STRIP_BATCH];
		const T* const pb = px + (i64)(m0 >> sh) * L.fip;
#pragma unroll
		for (int i = 0; i < RED_STRIP_BATCH; ++i) {
			if (whole || m0 + tid + RED_BLOCK * i < nv) r[i] = __ldg(reinterpret_cast<const uint4*>(pb + i * rstep));
		}
#pragma unroll
		for (int i = 0; i < RED_STRIP_BATCH; ++i) {
			const int m = m0 + tid + RED_BLOCK * i;
			if (whole || m < nv) {
				buf[m] = r[i];
				if (PAIR) {
					typename P2::V w[4];
					memcpy(w, &r[i], 16);
#pragma unroll
					for (int k = 0; k < 4; ++k) cnt2[k] = P2::add(cnt2[k], P2::eq(w[k], y2[k]));
				} else {
					Pack<T> xv;
					memcpy(&xv, &r[i], 16);
#pragma unroll
					for (int e = 0; e < N; ++e) Op::accum(acc[e], to_op(xv.v[e]), yv[e]);
				}
			}
		}
	};
	constexpr int BW = RED_BLOCK * RED_STRIP_BATCH;
	int m0 = 0;
	for (; m0 + BW <= nv; m0 += BW) batch(m0, true);
	if (m0 < nv) batch(m0, false);
	if (PAIR) {
#pragma unroll
		for (int k = 0; k < 4; ++k) {
			const float2 f = P2::to(cnt2[k]);
			acc[2 * k].z += (unsigned)f.x;
			acc[2 * k + 1].z += (unsigned)f.y;
		}
	}
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		if (off >= vr) {
#pragma unroll
			for (int e = 0; e < N; ++e) Op::combine(acc[e], red_shfl_xor(acc[e], off));
		}
	}
	if (lane < vr) {
#pragma unroll
		for (int e = 0; e < N; ++e) part[warp * WMAX + lane * N + e] = acc[e];
	}
	__syncthreads();
	RedAcc<M> t;
	if (tid < W) {
		t = part[tid];
#pragma unroll
		for (int w = 1; w < RED_BLOCK / 32; ++w) Op::combine(t, part[w * WMAX + tid]);
		if (C > 1) tot[tid] = t;
	}
	if (C > 1) {
		red_cluster_arrive();
		red_cluster_wait();
		if (tid < W) {
			t = red_dsmem(tot + tid, 0);
#pragma unroll
			for (int r = 1; r < C; ++r) Op::combine(t, red_dsmem(tot + tid, r));
		}
		red_cluster_arrive();
	}
	if (tid < W) {
		const M ys = Op::needs_y ? to_op(y[s0 + tid]) : M(0);
		cx[tid] = Op::template slice<M>(to_op(dy[s0 + tid]), ys, t, L.scale, L.k);
	}
	__syncthreads();
	RedCtx<M> c[N];
#pragma unroll
	for (int e = 0; e < N; ++e) c[e] = cx[v * N + e];
	typename P2::V p2[4];
	if (PAIR) {
#pragma unroll
		for (int k = 0; k < 4; ++k) p2[k] = P2::from((float)c[2 * k].p, (float)c[2 * k + 1].p);
	}
	T* pd = pdx;
#pragma unroll 4
	for (int m = tid; m < nv; m += RED_BLOCK, pd += rstep) {
		const uint4 u = buf[m];
		if (PAIR) {
			typename P2::V w[4], o[4];
			memcpy(w, &u, 16);
#pragma unroll
			for (int k = 0; k < 4; ++k) o[k] = P2::mul(P2::eq(w[k], y2[k]), p2[k]);
			uint4 ov;
			memcpy(&ov, o, 16);
			*reinterpret_cast<uint4*>(pd) = ov;
			continue;
		}
		Pack<T> xv, out;
		memcpy(&xv, &u, 16);
		bool bad = false;
#pragma unroll
		for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(RedFast<Op, T>::elem(c[e], to_op(xv.v[e]), bad));
		if (bad) {
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c[e], to_op(xv.v[e])));
		}
		store_pack(pd, out);
	}
	// No block's shared memory goes while another block of the cluster may
	// still read its partials.
	if (C > 1) red_cluster_wait();
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_strip(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
	if (!Op::stats) return;
	red_strip<T, Op, 1>(x, y, dy, dx, L);
}

// reduce_stripc: the clustered strip kernel (see red_strip); empty below
// compute capability 9.0 and for ops without statistics (it is only
// launched from the compute_90 build). Layout: the strip kernel's, with
// chunk the rows per block and tiles RED_STRIP_CLUSTER blocks per strip.
template <typename T, typename Op>
__device__ __forceinline__ void reduce_stripc(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
#if __CUDA_ARCH__ >= 900
	if (!Op::stats) return;
	red_strip<T, Op, RED_STRIP_CLUSTER>(x, y, dy, dx, L);
#endif
}

// reduce_cluster: the cluster kernel, one tile per block (see
// red_cluster_totals); empty below compute capability 9.0 and for ops
// without statistics (it is only launched from the compute_90 build).
template <typename T, typename Op>
__device__ __forceinline__ void reduce_cluster(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
#if __CUDA_ARCH__ >= 900
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	constexpr int V = RedColVec<T, Op>::n;
	__shared__ __align__(16) RedAcc<M> sm[RED_BLOCK * V];
	red_col_tile_cvec<T, Op, RED_CLUSTER>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, blockIdx.x, sm);
	red_cluster_wait();
#endif
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_fix(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	red_flat_fix<T, Op>(x, y, dy, dx, ws, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_apply(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	if (L.phase == RED_PHASE_TOTAL) {
		red_total<T, Op>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L);
		return;
	}
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	if (L.mapping == RED_ROW) {
		red_row_pass<T, Op, RED_APPLY>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	} else {
		red_col_pass<T, Op, RED_APPLY>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	}
}
