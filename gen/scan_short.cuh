#pragma once
// The short mapping: scan_backward_short.
#include "scan_colstrip.cuh"

// scan_backward_short (variant "short"): a short axis (the launcher's
// policy: at most 32 elements, ops/scan_short.go) over many slices. Each
// thread owns whole slices and runs their backward scans in registers,
// against scan order in runs of L.items elements (4 or SCAN_SHORT_ITEMS),
// so no thread waits for another: no tiles, look-back or workspace. The
// forward state before a run (a slice longer than one run) is the forward
// combine of the x before it in scan order, read again.
//
// Three forms (L.vec, set by the launcher, ops/scan_short.go):
//   direct (0): a thread per slice reads and writes its slice in global
//     memory along the axis strides. Along an outer axis consecutive
//     threads take consecutive slices, so each access of a warp is
//     coalesced across the inner dims.
//   inner (1): every operand has unit stride along the axis and the
//     slices follow each other, so a block's cs = blockDim.x * L.split
//     slices are one contiguous chunk of each operand: the block copies
//     each operand's chunk into shared memory, the slices L.units (ns)
//     elements apart, each thread scans the slices t, t + blockDim.x, ..
//     there, and dx goes back through the dy buffer.
//   outer (2): every operand has unit stride along the innermost slice
//     dim (of d0 slices), so a block's cs slices of one row of that dim
//     (block b takes the slices b % nch * cs .. of row b / nch, nch =
//     ceil(d0 / cs)) are n rows of contiguous elements, one per element
//     of the axis, each copied into a row of cs elements in shared
//     memory; the threads scan as in the inner form.
// The staged copies move 16-byte packs where every row of an operand
// starts 16-byte aligned, element by element elsewhere; a thread issues
// the packs of SCAN_SHORT_BATCH rounds of every operand before it stores
// any into shared memory, so that a block keeps many bytes in flight.
// L.split slices a thread (1 in the first forms that
// BARACUDA_SCAN_SHORT_WIDE=never keeps) make a block's chunk large enough
// for that with 16-bit types and short axes.
// The odd word stride of an inner slice row (ns elements, see
// ops/scan_short.go's shortStride) keeps a warp's element accesses of one
// column off each other's banks.
// SCAN_SHORT_ITEMS and SCAN_SHORT_ITEMS4 (gen/zconsts.cuh): the run
// lengths, the second for an axis of at most 4 elements.
#define SCAN_SHORT_BATCH 4

// The block is blockDim.x threads; the dynamic shared memory is cs * ns
// elements per staged operand (dy, then x and y where the op reads them),
// none for the direct form.

// ShortPack is 16 bytes as one vector or as elements.
template <typename T> union ShortPack {
	uint4 w;
	T v[16 / sizeof(T)];
	__device__ ShortPack() {}
};

// ShortChunk is where a block's staged elements lie: rows rows of w
// elements in each operand; element e of row k sits in shared memory at
// at(k, e): the outer form's row k of cs elements, or the inner form's
// (one row) element e % n of slice row e / n, ns elements apart.
struct ShortChunk {
	int rows, w, n, ns, cs;
	bool outer;
	__device__ __forceinline__ int at(int k, int e) const {
		if (outer) return k * cs + e;
		const unsigned q = (unsigned)e / (unsigned)n;
		return (int)q * ns + (e - (int)q * n);
	}
};

// short_put stores the pack of elements e .. e + P - 1 of row k into b;
// short_get loads it. The outer form's rows are 16-byte aligned (cs is a
// multiple of 128), so a pack is one 16-byte access there.
template <typename T>
__device__ __forceinline__ void short_put(T* b, const ShortChunk& C, int k, int e, const ShortPack<T>& pk) {
	constexpr int P = 16 / (int)sizeof(T);
	if (C.outer) {
		*reinterpret_cast<uint4*>(b + k * C.cs + e) = pk.w;
		return;
	}
	unsigned q = (unsigned)e / (unsigned)C.n;
	int r = e - (int)q * C.n;
#pragma unroll
	for (int l = 0; l < P; ++l) {
		b[q * C.ns + r] = pk.v[l];
		if (++r == C.n) {
			r = 0;
			++q;
		}
	}
}
template <typename T>
__device__ __forceinline__ void short_get(const T* b, const ShortChunk& C, int k, int e, ShortPack<T>& pk) {
	constexpr int P = 16 / (int)sizeof(T);
	if (C.outer) {
		pk.w = *reinterpret_cast<const uint4*>(b + k * C.cs + e);
		return;
	}
	unsigned q = (unsigned)e / (unsigned)C.n;
	int r = e - (int)q * C.n;
#pragma unroll
	for (int l = 0; l < P; ++l) {
		pk.v[l] = b[q * C.ns + r];
		if (++r == C.n) {
			r = 0;
			++q;
		}
	}
}

// short_rows_aligned: every row of an operand at g, rows gst elements
// apart, starts 16-byte aligned.
template <typename T> __device__ __forceinline__ bool short_rows_aligned(const T* g, i64 gst, const ShortChunk& C) {
	return (reinterpret_cast<unsigned long long>(g) & 15) == 0 && (C.rows == 1 || (gst * (i64)sizeof(T)) % 16 == 0);
}

// short_stage copies the chunk of NO operands (row k of operand o at
// g[o] + k * gst[o]) into their buffers, operand o's at b + o * bs: with
// vec, the whole packs of each row in batches (the loads of a batch, every
// operand's, before its stores), then the rest of each row element by
// element; without, every element so.
template <typename T, int NO>
__device__ __forceinline__ void short_stage(T* b, int bs, const T* const (&g)[NO], const i64 (&gst)[NO],
		const ShortChunk& C, bool vec) {
	constexpr int P = 16 / (int)sizeof(T), B = SCAN_SHORT_BATCH;
	const int nt = blockDim.x;
	const int nvr = vec ? C.w / P : 0, nv = C.rows * nvr;
	for (int i0 = threadIdx.x; i0 < nv; i0 += B * nt) {
		ShortPack<T> pk[NO][B];
#pragma unroll
		for (int u = 0; u < B; ++u) {
			const int i = i0 + u * nt;
			if (i < nv) {
				const int k = (int)((unsigned)i / (unsigned)nvr), v = i - k * nvr;
#pragma unroll
				for (int o = 0; o < NO; ++o) pk[o][u].w = __ldg(reinterpret_cast<const uint4*>(g[o] + k * gst[o]) + v);
			}
		}
#pragma unroll
		for (int u = 0; u < B; ++u) {
			const int i = i0 + u * nt;
			if (i < nv) {
				const int k = (int)((unsigned)i / (unsigned)nvr), v = i - k * nvr;
#pragma unroll
				for (int o = 0; o < NO; ++o) short_put(b + o * bs, C, k, v * P, pk[o][u]);
			}
		}
	}
	const int e0 = nvr * P, tw = C.w - e0, ne = C.rows * tw;
	for (int i = threadIdx.x; i < ne; i += nt) {
		const int k = (int)((unsigned)i / (unsigned)tw), e = e0 + i - k * tw;
#pragma unroll
		for (int o = 0; o < NO; ++o) b[o * bs + C.at(k, e)] = scan_ld(g[o] + k * gst[o] + e);
	}
}

// short_unstage is short_stage's inverse for one operand: the buffer b to
// the chunk at g (rows gst elements apart).
template <typename T>
__device__ __forceinline__ void short_unstage(T* __restrict__ g, i64 gst, const T* b, const ShortChunk& C, bool vec) {
	constexpr int P = 16 / (int)sizeof(T);
	const int nt = blockDim.x;
	const int nvr = vec ? C.w / P : 0, nv = C.rows * nvr;
	for (int i = threadIdx.x; i < nv; i += nt) {
		const int k = (int)((unsigned)i / (unsigned)nvr), v = i - k * nvr;
		ShortPack<T> pk;
		short_get(b, C, k, v * P, pk);
		reinterpret_cast<uint4*>(g + k * gst)[v] = pk.w;
	}
	const int e0 = nvr * P, tw = C.w - e0, ne = C.rows * tw;
	for (int i = threadIdx.x; i < ne; i += nt) {
		const int k = (int)((unsigned)i / (unsigned)tw), e = e0 + i - k * tw;
		g[k * gst + e] = b[C.at(k, e)];
	}
}

// short_slice runs the backward scan of one slice of n = L.n elements in
// runs of N: element k of dy at gp[k * gs], of x at xp[k * xs], of y at
// yp[k * ys], of dx at dp[k * ds] (generic pointers: global or shared
// memory). Runs go against scan order, V carried from one to the next;
// each run's arrays follow ScanRun's col convention (scan order, fill
// outside [lo, hi)), as ScanRun::load would leave them.
template <typename T, typename Op, int N>
__device__ __forceinline__ void short_slice(const T* gp, i64 gs, const T* xp, i64 xs, const T* yp, i64 ys, T* dp,
		i64 ds, const ScanLayout& L, bool rev) {
	typedef typename OpMath<T>::type M;
	typedef ScanRun<T, Op, N, true> Run;
	const int n = (int)L.n;
	const int R = (n + N - 1) / N;
	M v = M(0);
	for (int j0 = 0; j0 < R; ++j0) {
		// Run j holds elements j*N ..; the last run in scan order first.
		const int j = rev ? j0 : R - 1 - j0;
		const int k0 = j * N, cnt = min(N, n - k0);
		Run r;
		r.init(k0, cnt, rev);
		const int kb = rev ? k0 + cnt : k0 - 1;
		const bool hasb = Op::needs_y && kb >= 0 && kb < n;
		r.yb = hasb ? to_op(yp[kb * ys]) : Direct<Op>::on ? M(1) : M(0);
#pragma unroll
		for (int i = 0; i < N; ++i) {
			const bool ok = rev ? i >= N - cnt : i < cnt;
			const int k = rev ? k0 + N - 1 - i : k0 + i;
			r.g[i] = ok ? Op::grad(to_op(gp[k * gs])) : M(0);
			r.xv[i] = Op::needs_x && ok ? to_op(xp[k * xs]) : Op::template x_fill<M>();
			r.yv[i] = Op::needs_y && ok ? to_op(yp[k * ys]) : r.yb;
		}
		// The forward state before the run: the x before it in scan order.
		M f = Op::template fwd_identity<M>();
		if (Op::fwd && R > 1) {
			if (rev) {
				for (int k = n - 1; k >= k0 + cnt; --k) f = Op::fwd_combine(f, Op::fwd_value(to_op(xp[k * xs])));
			} else {
				for (int k = 0; k < k0; ++k) f = Op::fwd_combine(f, Op::fwd_value(to_op(xp[k * xs])));
			}
		}
		const bool fast = r.direct_ok();
		const bool plain = r.setup(fast, f, L);
		const Aff<M> agg = r.aggregate(plain);
		r.finish(v, plain);
		v = apply<Op>(agg, v);
#pragma unroll
		for (int i = 0; i < N; ++i) {
			const bool ok = rev ? i >= N - cnt : i < cnt;
			const int k = rev ? k0 + N - 1 - i : k0 + i;
			if (ok) dp[k * ds] = from_op<T>(r.g[i]);
		}
	}
}

// short_scan is short_slice in runs of L.items: SCAN_SHORT_ITEMS4 (an axis
// of at most 4, one full run, where runs of 8 would spend half their work
// on the fill) or SCAN_SHORT_ITEMS.
template <typename T, typename Op>
__device__ __forceinline__ void short_scan(const T* gp, i64 gs, const T* xp, i64 xs, const T* yp, i64 ys, T* dp,
		i64 ds, const ScanLayout& L, bool rev) {
	if (L.items == SCAN_SHORT_ITEMS4) {
		short_slice<T, Op, SCAN_SHORT_ITEMS4>(gp, gs, xp, xs, yp, ys, dp, ds, L, rev);
	} else {
		short_slice<T, Op, SCAN_SHORT_ITEMS>(gp, gs, xp, xs, yp, ys, dp, ds, L, rev);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_short(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__, const ScanLayout& L) {
	extern __shared__ __align__(16) unsigned char short_sm[];
	const int nt = blockDim.x, t = threadIdx.x;
	const bool rev = L.reverse != 0;
	if (L.vec != 0) {
		const bool outer = L.vec == 2;
		const int n = (int)L.n, ns = (int)L.units, cs = nt * L.split;
		// The block's first slice (off) and its slice count cw: inner,
		// slices b * cs .. (srank 1, slice stride n, unit axis stride:
		// the launcher's shortStaged); outer, see above (shortOuterOK).
		i64 off[4];
		int cw;
		if (outer) {
			const i64 d0 = L.sdim[L.srank - 1], nch = (d0 + cs - 1) / cs;
			const i64 row = (i64)blockIdx.x / nch, j0 = ((i64)blockIdx.x - row * nch) * cs;
			cw = (int)min((i64)cs, d0 - j0);
			scan_slice_offsets(L, row * d0 + j0, off);
		} else {
			const i64 s0 = (i64)blockIdx.x * cs;
			cw = (int)min((i64)cs, L.nslices - s0);
#pragma unroll
			for (int u = 0; u < 4; ++u) off[u] = s0 * L.sstride[u][0];
		}
		const ShortChunk C{outer ? n : 1, outer ? cw : cw * n, n, ns, cs, outer};
		// The operands' buffers: dy, then x and y where the op reads them.
		constexpr int NO = 1 + (Op::needs_x ? 1 : 0) + (Op::needs_y ? 1 : 0);
		const T* g[NO];
		i64 gst[NO];
		g[0] = dy + off[0];
		gst[0] = L.astride[0];
		if (Op::needs_x) {
			g[1] = x + off[1];
			gst[1] = L.astride[1];
		}
		if (Op::needs_y) {
			g[NO - 1] = y + off[2];
			gst[NO - 1] = L.astride[2];
		}
		bool vec = true;
#pragma unroll
		for (int o = 0; o < NO; ++o) vec = vec && short_rows_aligned(g[o], gst[o], C);
		T* bg = reinterpret_cast<T*>(short_sm);
		const int bs = cs * ns;
		short_stage<T, NO>(bg, bs, g, gst, C, vec);
		__syncthreads();
		const T* bx = bg + (Op::needs_x ? bs : 0);
		const T* by = bg + (NO - 1) * bs;
		const i64 st = outer ? cs : 1;
		for (int j = t; j < cw; j += nt) {
			const int js = outer ? j : j * ns;
			short_scan<T, Op>(bg + js, st, bx + js, st, by + js, st, bg + js, st, L, rev);
		}
		__syncthreads();
		T* gd = dx + off[3];
		short_unstage(gd, L.astride[3], bg, C, short_rows_aligned(gd, L.astride[3], C));
		return;
	}
	const i64 s = (i64)blockIdx.x * nt + t;
	if (s >= L.nslices) return;
	i64 off[4];
	scan_slice_offsets(L, s, off);
	short_scan<T, Op>(dy + off[0], L.astride[0], x + off[1], L.astride[1], y + off[2], L.astride[2], dx + off[3],
			L.astride[3], L, rev);
}
