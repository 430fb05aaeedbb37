#pragma once
// The short mapping: scan_backward_short.
#include "scan_colstrip.cuh"

// scan_backward_short (variant "short"): a short axis (the launcher's
// policy: at most 32 elements, ops/scan_short.go) over many slices. Each
// thread owns one whole slice and runs its backward scan in registers,
// against scan order in runs of SCAN_SHORT_ITEMS elements, so no thread
// waits for another: no tiles, look-back or workspace. The forward state before a run (a slice longer than one run)
// is the forward combine of the x before it in scan order, read again.
// Two ways to reach the slice:
//   staged (L.vec, set by the launcher where every operand has unit
//     stride along the axis and the slices follow each other, so the
//     block's slices are one contiguous chunk of each operand): the block
//     copies each operand's chunk into shared memory with coalesced
//     16-byte loads (element loads where a chunk is not 16-byte aligned),
//     each thread scans its slice there, and dx goes back through the
//     dy buffer with 16-byte stores. Slices sit ns = n | 1 elements apart
//     in shared memory: an odd stride keeps a warp's element accesses
//     off each other's banks.
//   direct (otherwise): the thread reads and writes its slice in global
//     memory along the axis strides. Along an outer axis consecutive
//     threads take consecutive slices, so each access of a warp is
//     coalesced across the inner dims.
// A run is SCAN_SHORT_ITEMS elements: the common short axes (2 to 8) take
// one run, with few registers (many resident threads), and longer ones a
// few runs, the forward state of each read again from the x before it.
#define SCAN_SHORT_ITEMS 8

// The block is blockDim.x threads, one slice each; the dynamic shared
// memory is blockDim.x * ns elements per staged operand (dy, then x and y
// where the op reads them), none for the direct way.

// ShortPack is 16 bytes as one vector or as elements.
template <typename T> union ShortPack {
	uint4 w;
	T v[16 / sizeof(T)];
	__device__ ShortPack() {}
};

// short_stage copies the m elements of a chunk at g into the slice rows of
// b (element e is element e % n of slice e / n, at row stride ns).
template <typename T>
__device__ __forceinline__ void short_stage(T* b, const T* __restrict__ g, int m, int n, int ns) {
	constexpr int P = 16 / (int)sizeof(T);
	const int nt = blockDim.x;
	int e0 = 0;
	if ((reinterpret_cast<unsigned long long>(g) & 15) == 0) {
		const int nv = m / P;
		for (int i = threadIdx.x; i < nv; i += nt) {
			ShortPack<T> pk;
			pk.w = __ldg(reinterpret_cast<const uint4*>(g) + i);
			unsigned q = (unsigned)(i * P) / (unsigned)n;
			int r = i * P - (int)q * n;
#pragma unroll
			for (int l = 0; l < P; ++l) {
				b[q * ns + r] = pk.v[l];
				if (++r == n) {
					r = 0;
					++q;
				}
			}
		}
		e0 = nv * P;
	}
	for (int e = e0 + threadIdx.x; e < m; e += nt) {
		const unsigned q = (unsigned)e / (unsigned)n;
		b[q * ns + (e - (int)q * n)] = scan_ld(g + e);
	}
}

// short_unstage is short_stage's inverse: the slice rows of b to the m
// elements of the chunk at g.
template <typename T>
__device__ __forceinline__ void short_unstage(T* __restrict__ g, const T* b, int m, int n, int ns) {
	constexpr int P = 16 / (int)sizeof(T);
	const int nt = blockDim.x;
	int e0 = 0;
	if ((reinterpret_cast<unsigned long long>(g) & 15) == 0) {
		const int nv = m / P;
		for (int i = threadIdx.x; i < nv; i += nt) {
			ShortPack<T> pk;
			unsigned q = (unsigned)(i * P) / (unsigned)n;
			int r = i * P - (int)q * n;
#pragma unroll
			for (int l = 0; l < P; ++l) {
				pk.v[l] = b[q * ns + r];
				if (++r == n) {
					r = 0;
					++q;
				}
			}
			reinterpret_cast<uint4*>(g)[i] = pk.w;
		}
		e0 = nv * P;
	}
	for (int e = e0 + threadIdx.x; e < m; e += nt) {
		const unsigned q = (unsigned)e / (unsigned)n;
		g[e] = b[q * ns + (e - (int)q * n)];
	}
}

// short_slice runs the backward scan of one slice of n = L.n elements:
// element k of dy at gp[k * gs], of x at xp[k * xs], of y at yp[k * ys],
// of dx at dp[k * ds] (generic pointers: global or shared memory). Runs go
// against scan order, V carried from one to the next; each run's arrays
// follow ScanRun's col convention (scan order, fill outside [lo, hi)), as
// ScanRun::load would leave them.
template <typename T, typename Op>
__device__ __forceinline__ void short_slice(const T* gp, i64 gs, const T* xp, i64 xs, const T* yp, i64 ys, T* dp,
		i64 ds, const ScanLayout& L, bool rev) {
	typedef typename OpMath<T>::type M;
	constexpr int N = SCAN_SHORT_ITEMS;
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

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_short(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__, const ScanLayout& L) {
	extern __shared__ __align__(16) unsigned char short_sm[];
	const int nt = blockDim.x, t = threadIdx.x;
	const i64 s0 = (i64)blockIdx.x * nt;
	const bool rev = L.reverse != 0;
	if (L.vec != 0) {
		// Staged: the block's slices s0 .. s0 + cs - 1 are the elements
		// s0 * n .. of every operand (srank 1, slice stride n, unit axis
		// stride: the launcher's shortStaged).
		const int n = (int)L.n, ns = n | 1;
		const int cs = (int)min((i64)nt, L.nslices - s0), m = cs * n;
		T* bg = reinterpret_cast<T*>(short_sm);
		T* bx = bg + nt * ns;
		T* by = bx + (Op::needs_x ? nt * ns : 0);
		short_stage(bg, dy + s0 * L.sstride[0][0], m, n, ns);
		if (Op::needs_x) short_stage(bx, x + s0 * L.sstride[1][0], m, n, ns);
		if (Op::needs_y) short_stage(by, y + s0 * L.sstride[2][0], m, n, ns);
		__syncthreads();
		if (t < cs) short_slice<T, Op>(bg + t * ns, 1, bx + t * ns, 1, by + t * ns, 1, bg + t * ns, 1, L, rev);
		__syncthreads();
		short_unstage(dx + s0 * L.sstride[3][0], bg, m, n, ns);
		return;
	}
	const i64 s = s0 + t;
	if (s >= L.nslices) return;
	i64 off[4];
	scan_slice_offsets(L, s, off);
	short_slice<T, Op>(dy + off[0], L.astride[0], x + off[1], L.astride[1], y + off[2], L.astride[2], dx + off[3],
			L.astride[3], L, rev);
}
