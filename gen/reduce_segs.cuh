#pragma once
// The segs variant (reduce_segs): var, std, max and min over several axes
// whose slices are one kept group between reduced ones, the innermost
// reduced, with short segments: x seen as [R, C, S] (slice c holds the R
// segments of S elements at c), S at least a 16-byte pack's N elements.
// Such segments allow no 16-byte walk of one slice (the seg kernel walks
// them element by element); G adjacent slices do: a row of G*S elements is
// a whole number P of packs when G*S*sizeof(T) is a multiple of 16.
//
// A block per G slices (tile t: slices [t*G, t*G+G)) reads the tile's R
// rows once, keeping them in dynamic shared memory (RedSegsKeep), forms
// each slice's statistics, then writes dx from shared memory: x read once,
// one launch, no workspace. Thread i < Q*P (Q = RED_BLOCK/P row phases)
// owns pack position j = i % P of rows i/P, i/P + Q, ...: a pack lies in at
// most two slices (S >= N), the same two in every row, so the thread keeps
// two partial statistics; slice g's total combines, in a fixed order, the
// partials of the positions it covers over the Q phases (warp g, as
// red_warp_total). The launcher takes it where P <= RED_BLOCK, C is a
// multiple of G, the tile's rows fit the shared memory a block may have,
// and x and dx are 16-byte aligned.
// Layout: the seg layout (k = R*S, slices = C, scale), with chunk = R
// rows, group = G, kstride[1] = S, sstride[2][0] = C*S (the row stride),
// tiles = C/G.
#include "reduce_seg.cuh"

// RedSegsKeep<Op> is what the segs kernel keeps of a pack of x in shared
// memory between the statistics and dx: the pack itself (var, std; 16
// bytes), or, for the ops whose dx needs of x only whether it is flagged
// (Op::mend_mask: max and min, x == y), a byte of flags, bit e for
// element e. The flags take a sixteenth of the shared memory, so several
// blocks share an SM and one block's loads overlap another's stores. The
// launcher sizes the memory by the same rule (segsKeep in
// ops/reduce_multi.go).
template <typename Op, bool Flags = Op::mend_mask> struct RedSegsKeep {
	template <typename T, typename M>
	__device__ static void put(unsigned char* buf, i64 i, const uint4& v, int, M, M) {
		reinterpret_cast<uint4*>(buf)[i] = v;
	}
	template <typename T, typename M>
	__device__ static Pack<T> get(const unsigned char* buf, i64 i, int na, const RedCtx<M>& ka, const RedCtx<M>& kb) {
		const uint4 u = reinterpret_cast<const uint4*>(buf)[i];
		Pack<T> xv, out;
		memcpy(&xv, &u, 16);
#pragma unroll
		for (int e = 0; e < Pack<T>::N; ++e) out.v[e] = from_op<T>(Op::elem(red_ctx_pick(e >= na, ka, kb), to_op(xv.v[e])));
		return out;
	}
};

template <typename Op> struct RedSegsKeep<Op, true> {
	template <typename T, typename M>
	__device__ static void put(unsigned char* buf, i64 i, const uint4& v, int na, M ya, M yb) {
		Pack<T> xv;
		memcpy(&xv, &v, 16);
		unsigned f = 0;
#pragma unroll
		for (int e = 0; e < Pack<T>::N; ++e) f |= (unsigned)red_flag<Op>(to_op(xv.v[e]), e < na ? ya : yb) << e;
		buf[i] = (unsigned char)f;
	}
	template <typename T, typename M>
	__device__ static Pack<T> get(const unsigned char* buf, i64 i, int na, const RedCtx<M>& ka, const RedCtx<M>& kb) {
		const unsigned f = buf[i];
		Pack<T> out;
#pragma unroll
		for (int e = 0; e < Pack<T>::N; ++e) out.v[e] = from_op<T>(Op::elem_flag(red_ctx_pick(e >= na, ka, kb), (f >> e) & 1));
		return out;
	}
};

template <typename T, typename Op>
__device__ __forceinline__ void reduce_segs(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (!Op::stats || Op::flat_regrid) return;  // var, std, max, min (prod keeps the seg kernel)
	__shared__ RedAcc<M> part[RED_BLOCK][2];     // each thread's two partials
	__shared__ RedCtx<M> cx[RED_BLOCK / 32];     // the tile's contexts (G <= the warps)
	typedef RedSegsKeep<Op> Keep;
	unsigned char* const buf = red_dyn;
	const int G = L.group;
	const i64 S = L.kstride[1], R = L.chunk, rs = L.sstride[2][0];
	const int P = (int)(G * S / N);  // packs per row
	const int Q = RED_BLOCK / P;     // row phases
	const int tid = threadIdx.x, j = tid % P, q = tid / P;
	const bool on = q < Q;
	const i64 c0 = (i64)blockIdx.x * G;                 // the tile's first slice
	const T* const xt = x + c0 * S + (i64)j * N;        // row 0's pack j
	T* const dxt = dx + c0 * S + (i64)j * N;
	// The pack's slices (tile-local): ga for its first na elements, ga+1
	// for the rest.
	const int ga = (int)((i64)j * N / S);
	const int na = (int)min((i64)(ga + 1) * S - (i64)j * N, (i64)N);
	const int gb = min(ga + 1, G - 1);
	const M ya = Op::needs_y ? to_op(y[c0 + ga]) : M(0), yb = Op::needs_y ? to_op(y[c0 + gb]) : M(0);
	RedAcc<M> acc[2] = {Op::template init<M>(), Op::template init<M>()};
	if (on) {
		constexpr int U = 8;  // rows in flight a thread
		for (i64 r0 = q; r0 < R; r0 += (i64)U * Q) {
			uint4 v[U];
#pragma unroll
			for (int u = 0; u < U; ++u) {
				const i64 r = r0 + (i64)u * Q;
				if (r < R) v[u] = __ldg(reinterpret_cast<const uint4*>(xt + r * rs));
			}
#pragma unroll
			for (int u = 0; u < U; ++u) {
				const i64 r = r0 + (i64)u * Q;
				if (r >= R) continue;
				Keep::template put<T>(buf, r * P + j, v[u], na, ya, yb);
				Pack<T> xv;
				memcpy(&xv, &v[u], 16);
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M xe = to_op(xv.v[e]);
					if (e < na) {
						Op::accum(acc[0], xe, ya);
					} else {
						Op::accum(acc[1], xe, yb);
					}
				}
			}
		}
	}
	part[tid][0] = acc[0];
	part[tid][1] = acc[1];
	__syncthreads();
	// Slice g's total (warp g): the positions from the one holding element
	// g*S to the one holding g*S + S - 1, each over its Q phases (phase
	// first, then position: lane-strided, then the butterfly).
	const int warp = tid >> 5, lane = tid & 31;
	if (warp < G) {
		const int g = warp;
		const int j0 = (int)((i64)g * S / N), j1 = (int)(((i64)g * S + S - 1) / N);
		const int terms = (j1 - j0 + 1) * Q;
		RedAcc<M> t = Op::template init<M>();
		for (int i = lane; i < terms; i += 32) {
			const int jj = j0 + i / Q, qq = i % Q;
			// Position jj's first part is slice g's where g is its first slice.
			const int half = (int)((i64)jj * N / S) == g ? 0 : 1;
			Op::combine(t, part[qq * P + jj][half]);
		}
		red_warp_total<Op>(t);
		if (lane == 0) {
			const i64 c = c0 + g;
			cx[g] = Op::template slice<M>(to_op(dy[c]), Op::needs_y ? to_op(y[c]) : M(0), t, L.scale, L.k);
		}
	}
	__syncthreads();
	if (!on) return;
	const RedCtx<M> ka = cx[ga], kb = cx[gb];
	for (i64 r = q; r < R; r += Q) store_pack(dxt + r * rs, Keep::template get<T>(buf, r * P + j, na, ka, kb));
}
