#pragma once
// The short mapping's packed inner form (reduce_inner): an innermost axis
// of a few positions over many slices, each thread owning whole 16-byte
// packs of x and dx and the whole slices they hold, with no shared memory.
#include "reduce_short.cuh"

// RED_INNER_PACKS, RED_INNER_VALS and RED_INNER_UNIT (gen/zconsts.cuh,
// from the spec): the packs of x a thread loads in a step before it uses
// any (fewer where a unit is longer, see RedInner), the most values of dy
// (and of y) it loads in a step, and the longest unit, in elements
// (lcm(k, N); innerPacked in ops/reduce_inner.go).

template <int A, int B> struct RedGcd { static constexpr int v = RedGcd<B, A % B>::v; };
template <int A> struct RedGcd<A, 0> { static constexpr int v = A; };

// RedInner<T, K> is a thread's unit for slices of K elements: U packs of
// x holding Q whole slices (U*N = Q*K = lcm(K, N), N = Pack<T>::N), and
// the units a thread takes in a step, B (innerUnit in ops/reduce_inner.go);
// ok: the packed form takes K (a unit of at most RED_INNER_UNIT elements).
template <typename T, int K> struct RedInner {
	static constexpr int N = Pack<T>::N;
	static constexpr int U = K / RedGcd<K, N>::v, Q = N / RedGcd<K, N>::v;
	static constexpr bool ok = U * N <= RED_INNER_UNIT;
	static constexpr int B0 = RED_INNER_PACKS / U < RED_INNER_VALS / Q ? RED_INNER_PACKS / U : RED_INNER_VALS / Q;
	static constexpr int B = B0 > 0 ? B0 : 1;
};

// RedWord<B> is the unsigned type of B bytes that one load moves.
template <int B> struct RedWord;
template <> struct RedWord<4> { typedef unsigned type; };
template <> struct RedWord<8> { typedef uint2 type; };
template <> struct RedWord<16> { typedef uint4 type; };

// RedVals<T, Q>::load reads a unit's Q consecutive values of dy or y: one
// load where vec (the operand is aligned to Q values: then so is every
// unit's run) and the run is 4 to 16 bytes, else value by value.
template <typename T, int Q, bool W = (Q * sizeof(T) >= 4 && Q * sizeof(T) <= 16)> struct RedVals {
	typedef typename RedWord<Q * sizeof(T)>::type V;
	__device__ static bool aligned(const T* p) { return ((size_t)p % sizeof(V)) == 0; }
	__device__ __forceinline__ static void load(const T* __restrict__ p, bool vec, T (&v)[Q]) {
		if (vec) {
			const V r = __ldg(reinterpret_cast<const V*>(p));
			memcpy(v, &r, sizeof(V));
		} else {
#pragma unroll
			for (int q = 0; q < Q; ++q) v[q] = p[q];
		}
	}
};
template <typename T, int Q> struct RedVals<T, Q, false> {
	__device__ static bool aligned(const T*) { return false; }
	__device__ __forceinline__ static void load(const T* __restrict__ p, bool, T (&v)[Q]) {
#pragma unroll
		for (int q = 0; q < Q; ++q) v[q] = p[q];
	}
};

// red_inner_slice reduces one slice of K values xs (opmath, position
// order) with its dy g and y ys and writes its dx values to out, as every
// other path: Op::accum in position order, Op::slice, Op::elem.
template <typename Op, typename M, int K>
__device__ __forceinline__ void red_inner_slice(const M (&xs)[K], M g, M ys, M (&out)[K], const ReduceLayout& L) {
	RedAcc<M> acc = Op::template init<M>();
	if (Op::needs_x) {
#pragma unroll
		for (int j = 0; j < K; ++j) Op::accum(acc, xs[j], ys);
	}
	const RedCtx<M> c = Op::template slice<M>(g, ys, acc, L.scale, L.k);
#pragma unroll
	for (int j = 0; j < K; ++j) out[j] = Op::elem(c, xs[j]);
}

// red_inner_k is the packed form for slices of K elements (x and dx seen as
// [S, K], dy and y as [S]; x and dx 16-byte aligned, the launcher checks).
// The slices are cut into units of Q whole slices, U packs of x each
// (RedInner), units = S/Q of them. Lane l of a warp takes units w + l, w
// + 32 + l, ... w + 32*(B-1) + l in a step (w: the warp's first, stepping
// over the grid), so each load of a pack, and of dy and y, is coalesced
// across the warp: it issues every load of the step (a lane past the end
// re-reads the last unit) before it uses any, then reduces each of its
// slices in registers, storing each dx pack once its last slice is done
// (so the registers of a long unit's packs free as it goes). It returns
// Q: the S % Q slices past the last unit are red_inner_tail's (0 for a K
// it does not take: the launcher never gives it one).
template <typename T, typename Op, int K>
__device__ __forceinline__ int red_inner_k(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef RedInner<T, K> R;
	constexpr int N = R::N, U = R::U, Q = R::Q, B = R::B;
	typedef RedVals<T, Q> Vals;
	if (!R::ok) return 0;
	const i64 units = L.slices / Q;
	const int lane = threadIdx.x & 31;
	const bool gvec = Vals::aligned(dy) && (!Op::needs_y || Vals::aligned(y));
	const i64 step = (i64)gridDim.x * RED_BLOCK * B;
	for (i64 u0 = ((i64)blockIdx.x * RED_BLOCK + (threadIdx.x - lane)) * B + lane; u0 < units; u0 += step) {
		Pack<T> xv[B][U];
		T gv[B][Q], yv[B][Q];
#pragma unroll
		for (int r = 0; r < B; ++r) {
			const i64 u = min(u0 + r * 32, units - 1);
			if (Op::needs_x) {
#pragma unroll
				for (int j = 0; j < U; ++j) xv[r][j] = load_pack(x + (u * U + j) * N);
			}
			Vals::load(dy + u * Q, gvec, gv[r]);
			if (Op::needs_y) Vals::load(y + u * Q, gvec, yv[r]);
		}
#pragma unroll
		for (int r = 0; r < B; ++r) {
			const i64 u = u0 + r * 32;
			if (u < units) {
				Pack<T> out[U];
#pragma unroll
				for (int q = 0; q < Q; ++q) {
					M xs[K], d[K];
#pragma unroll
					for (int j = 0; j < K; ++j) {
						const int e = q * K + j;
						xs[j] = Op::needs_x ? to_op(xv[r][e / N].v[e % N]) : M(0);
					}
					red_inner_slice<Op, M, K>(xs, to_op(gv[r][q]), Op::needs_y ? to_op(yv[r][q]) : M(0), d, L);
#pragma unroll
					for (int j = 0; j < K; ++j) {
						const int e = q * K + j;
						out[e / N].v[e % N] = from_op<T>(d[j]);
					}
#pragma unroll
					for (int j = 0; j < U; ++j) {
						if ((j * N + N - 1) / K == q) store_pack(dx + (u * U + j) * N, out[j]);
					}
				}
			}
		}
	}
	return Q;
}

// red_inner_tail reduces slice s alone with scalar accesses, the same
// math as red_inner_slice (x read again for dx): the slices past the last
// whole unit, fewer than a pack's elements, one body for every k.
template <typename T, typename Op>
__device__ __noinline__ void red_inner_tail(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L, i64 s) {
	typedef typename OpMath<T>::type M;
	const int k = (int)L.k;
	const M ys = Op::needs_y ? to_op(y[s]) : M(0);
	RedAcc<M> acc = Op::template init<M>();
	if (Op::needs_x) {
		for (int j = 0; j < k; ++j) Op::accum(acc, to_op(x[s * k + j]), ys);
	}
	const RedCtx<M> c = Op::template slice<M>(to_op(dy[s]), ys, acc, L.scale, L.k);
	for (int j = 0; j < k; ++j) dx[s * k + j] = from_op<T>(Op::elem(c, Op::needs_x ? to_op(x[s * k + j]) : M(0)));
}

// reduce_inner: the packed form, a body per axis length it takes (the k
// up to RED_SHORT_KMAX whose unit fits RED_INNER_UNIT: 1 to 8, 10, 12, 14
// and 16 of f32, 1, 2, 3, 4, 6, 8, 12 and 16 of f16 and bf16; innerPacked
// in ops/reduce_inner.go; the others keep the staged inner form,
// red_short_inner), all its index math constant; then a thread of the
// last block takes each of the S % Q slices past the last unit
// (red_inner_tail). Layout: k, slices, scale.
template <typename T, typename Op>
__device__ __forceinline__ void reduce_inner(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
	int q = 1;
	switch ((int)L.k) {
	case 1: q = red_inner_k<T, Op, 1>(x, y, dy, dx, L); break;
	case 2: q = red_inner_k<T, Op, 2>(x, y, dy, dx, L); break;
	case 3: q = red_inner_k<T, Op, 3>(x, y, dy, dx, L); break;
	case 4: q = red_inner_k<T, Op, 4>(x, y, dy, dx, L); break;
	case 5: q = red_inner_k<T, Op, 5>(x, y, dy, dx, L); break;
	case 6: q = red_inner_k<T, Op, 6>(x, y, dy, dx, L); break;
	case 7: q = red_inner_k<T, Op, 7>(x, y, dy, dx, L); break;
	case 8: q = red_inner_k<T, Op, 8>(x, y, dy, dx, L); break;
	case 10: q = red_inner_k<T, Op, 10>(x, y, dy, dx, L); break;
	case 12: q = red_inner_k<T, Op, 12>(x, y, dy, dx, L); break;
	case 14: q = red_inner_k<T, Op, 14>(x, y, dy, dx, L); break;
	case 16: q = red_inner_k<T, Op, 16>(x, y, dy, dx, L); break;
	default: return;
	}
	if (q == 0) return;
	const i64 left = L.slices % q;
	if (blockIdx.x == gridDim.x - 1 && threadIdx.x < left) red_inner_tail<T, Op>(x, y, dy, dx, L, L.slices - left + threadIdx.x);
}
