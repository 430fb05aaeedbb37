#pragma once
// The strip kernel for an outer axis: scan_backward_colstrip.
#include "scan_colpair.cuh"

// scan_backward_colstrip (variant "colstrip", compute_80: f16 and bf16
// cummax and cummin along an outer axis): one block owns a strip of SCAN_STRIP_W
// adjacent slices (64-byte rows) over the whole axis, so no block waits for
// another: no ticket, look-back, fix pass or workspace. It walks the axis
// twice, in stages of SCAN_STRIP_ROWS rows that cp.async moves into a ring
// of SCAN_STRIP_DEPTH stages in shared memory with 16-byte copies, the
// next stages' copies in flight while one is worked:
//   1. x in scan order: the running extremum with its NaN rule, kept as one
//      bit per element, t_k (k is where the forward takes over), in shared
//      memory (4 bytes per row of the strip);
//   2. dy against scan order: dx_k = t_k ? g_k + ... + g_{k'-1} : 0, with k'
//      the next take-over after k (V runs through a = 1 - t).
// Each thread of a stage owns 32 consecutive rows of one slice (a bit
// word); the 16 row segments of a stage combine through shared memory. x
// and dy are read once and dx written once, which makes it faster than
// the colpair kernel where it applies. The launcher takes it where the
// strips fill one wave of the GPU (ops/scan_launch.go, stripFills), the axis fits
// the bit words in shared memory, and every operand has unit stride along
// the innermost slice dim with 16-byte aligned rows (stripLayout).
// SCAN_STRIP_W, SCAN_STRIP_THREADS and SCAN_STRIP_DEPTH are defined in
// gen/zconsts.cuh (from gen/spec_consts.go).
#define SCAN_STRIP_SEGS (SCAN_STRIP_THREADS / SCAN_STRIP_W)
#define SCAN_STRIP_ROWS (32 * SCAN_STRIP_SEGS)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// strip_cp copies 16 bytes to shared memory, or writes 16 zero bytes where
// ok is false (src-size 0 reads nothing).
__device__ __forceinline__ void strip_cp(void* s, const void* g, bool ok) {
	const unsigned a = (unsigned)__cvta_generic_to_shared(s);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(a), "l"(g), "r"(ok ? 16 : 0) : "memory");
}
#endif

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_colstrip(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__, T* __restrict__ dx, void* __restrict__, const ScanLayout& L) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	typedef typename OpMath<T>::type M;
	typedef ExtremumFwd<ExtSign<Op>::value> F;
	constexpr int W = SCAN_STRIP_W, Q = SCAN_STRIP_SEGS, R = SCAN_STRIP_ROWS, D = SCAN_STRIP_DEPTH;
	constexpr int CPR = W * (int)sizeof(T) / 16;  // 16-byte chunks per row
	constexpr int LD = R * CPR / SCAN_STRIP_THREADS;
	static_assert(ExtSign<Op>::value != 0 && sizeof(T) == 2, "colstrip serves the 16-bit cummax and cummin");
	static_assert(LD * SCAN_STRIP_THREADS == R * CPR, "a stage is whole copies per thread");
	extern __shared__ __align__(16) unsigned char strip_sm[];
	const i64 n = L.n, stages = (n + R - 1) / R;
	T* ring = reinterpret_cast<T*>(strip_sm);                                    // D x R x W
	unsigned* bits = reinterpret_cast<unsigned*>(strip_sm + D * R * W * sizeof(T));  // stages x Q x W
	M* agg = reinterpret_cast<M*>(bits + stages * Q * W);                          // Q x W
	unsigned* has = reinterpret_cast<unsigned*>(agg + Q * W);                      // Q x W
	M* carry = reinterpret_cast<M*>(has + Q * W);                                  // W
	const int t = threadIdx.x, s = t % W, q = t / W;
	// The strip: slices s0 .. s0 + width - 1 of the innermost slice dim.
	const i64 inner = L.srank > 0 ? L.sdim[L.srank - 1] : 1;
	const i64 spr = (inner + W - 1) / W;
	const i64 o = blockIdx.x / spr, j0 = (blockIdx.x - o * spr) * W;
	const int width = (int)min((i64)W, inner - j0);
	i64 off[4];
	scan_slice_offsets(L, o * inner + j0, off);
	const bool rev = L.reverse != 0;
	// Step i < stages copies x's stage i (scan order), a later step dy's
	// stage 2 * stages - 1 - i; every step commits one group.
	auto issue = [&](i64 i) {
		if (i < 2 * stages) {
			const bool fx = i < stages;
			const T* p = fx ? x + off[1] : dy + off[0];
			const i64 as = fx ? L.astride[1] : L.astride[0];
			const i64 st = fx ? i : 2 * stages - 1 - i;
			T* b = ring + (int)(i % D) * R * W;
#pragma unroll
			for (int l = 0; l < LD; ++l) {
				const int c = t + l * SCAN_STRIP_THREADS, r = c / CPR, ch = c % CPR;
				const i64 k = st * R + r;
				const bool ok = k < n && ch * 16 < width * (int)sizeof(T);
				const i64 row = rev ? n - 1 - k : k;
				strip_cp(b + r * W + ch * (16 / (int)sizeof(T)), ok ? p + row * as + ch * (16 / (int)sizeof(T)) : p, ok);
			}
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	if (t < W) carry[t] = F::template fwd_identity<M>();
#pragma unroll
	for (int i = 0; i < D - 1; ++i) issue(i);
	// 1. x in scan order: each thread folds its 32 rows, the segments'
	// totals give each its state before it, and the thread's walk from that
	// state sets its bits.
	for (i64 st = 0; st < stages; ++st) {
		issue(st + D - 1);
		asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
		__syncthreads();
		const T* buf = ring + (int)(st % D) * R * W;
		const i64 lim = n - st * R - q * 32;  // rows of the thread's segment inside the axis
		M v[32];
		M a = F::template fwd_identity<M>();
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			v[j] = j < lim ? to_op(buf[(q * 32 + j) * W + s]) : F::template fwd_identity<M>();
			a = F::fwd_combine(a, v[j]);
		}
		agg[q * W + s] = a;
		__syncthreads();
		M m = carry[s];
		for (int p = 0; p < q; ++p) m = F::fwd_combine(m, agg[p * W + s]);
		unsigned b = 0;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			const bool tk = F::takes(m, v[j]) && j < lim;
			b |= (unsigned)tk << j;
			m = tk ? v[j] : m;
		}
		bits[(st * Q + q) * W + s] = b;
		__syncthreads();
		if (q == Q - 1) carry[s] = m;
	}
	__syncthreads();
	if (t < W) carry[t] = M(0);
	// 2. dy against scan order: a segment hands the segments before it the
	// sum of its g up to its first take-over (all of them if it has none);
	// a thread starts from what the segments after it (and the stages
	// after this one, carry) hand down, and walks its rows backwards.
	for (i64 i = stages; i < 2 * stages; ++i) {
		const i64 st = 2 * stages - 1 - i;
		issue(i + D - 1);
		asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
		__syncthreads();
		T* buf = ring + (int)(i % D) * R * W;
		const unsigned b = bits[(st * Q + q) * W + s];
		M g[32];
		M head = M(0);
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			g[j] = to_op(buf[(q * 32 + j) * W + s]);  // 0 past the axis (zero-filled copies)
			head += (b & ((2u << j) - 1u)) == 0u ? g[j] : M(0);
		}
		agg[q * W + s] = head;
		has[q * W + s] = b;
		__syncthreads();
		M acc = M(0);
		int p = q + 1;
		for (; p < Q; ++p) {
			acc += agg[p * W + s];
			if (has[p * W + s] != 0u) break;
		}
		if (p == Q) acc += carry[s];
#pragma unroll
		for (int j = 31; j >= 0; --j) {
			acc += g[j];
			const bool tk = (b >> j) & 1u;
			buf[(q * 32 + j) * W + s] = from_op<T>(tk ? acc : M(0));
			acc = tk ? M(0) : acc;
		}
		__syncthreads();
		if (q == 0) carry[s] = acc;
		T* out = dx + off[3];
#pragma unroll
		for (int l = 0; l < LD; ++l) {
			const int c = t + l * SCAN_STRIP_THREADS, r = c / CPR, ch = c % CPR;
			const i64 k = st * R + r;
			if (k < n && ch * 16 < width * (int)sizeof(T)) {
				const i64 row = rev ? n - 1 - k : k;
				*reinterpret_cast<uint4*>(out + row * L.astride[3] + ch * (16 / (int)sizeof(T))) =
						*reinterpret_cast<const uint4*>(buf + r * W + ch * (16 / (int)sizeof(T)));
			}
		}
		__syncthreads();
	}
#endif
}
