// Binary elementwise backward: given dy and the saved inputs a, b, write
// da = dL/da and db = dL/db. Every functor computes in opmath (float for
// f16/bf16/f32, double for f64) and the result is rounded once when stored.
// Semantics follow PyTorch's autograd formulas (shared/SEMANTICS.md 2).
#pragma once
#include "common.cuh"

// BinaryLayout is passed by value (mirrored by binaryLayout in ops/binary.go).
// Dims and strides are in elements, innermost last; the launcher merges
// dims so rank is usually 1 or 2.
struct BinaryLayout {
	i64 n;     // number of elements
	int rank;  // 0..BC_MAX_RANK (0 or 1 with mode != 0 for contiguous tensors)
	int mode;  // 0 strided, 1 contiguous, 2 contiguous and every pointer 16-byte aligned
	i64 dim[BC_MAX_RANK];
	i64 stride[5][BC_MAX_RANK];  // dy, a, b, da, db
};
static_assert(sizeof(BinaryLayout) == 400, "BinaryLayout must match ops/binary.go");

// add(a, b, alpha) = a + alpha*b: da = g, db = alpha*g.
struct AddBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename M> __device__ static void apply(M g, M, M, double s, M& da, M& db) {
		da = g;
		db = g * M(s);
	}
};

// sub(a, b, alpha) = a - alpha*b: da = g, db = -g*alpha.
struct SubBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename M> __device__ static void apply(M g, M, M, double s, M& da, M& db) {
		da = g;
		db = -g * M(s);
	}
};

// mul: da = g*b, db = g*a.
struct MulBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		da = g * b;
		db = g * a;
	}
};

// div: da = g/b, db = -g*((a/b)/b) (PyTorch's order).
struct DivBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		da = g / b;
		db = -g * ((a / b) / b);
	}
};

// maximum: the larger side gets g; a tie gives g/2 to each side; when a or
// b is NaN no comparison holds, so both sides get g.
struct MaximumBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M w = (a == b) ? g * M(0.5) : g;
		da = (a < b) ? M(0) : w;
		db = (a > b) ? M(0) : w;
	}
};

// minimum: as maximum with the comparisons swapped.
struct MinimumBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M w = (a == b) ? g * M(0.5) : g;
		da = (a > b) ? M(0) : w;
		db = (a < b) ? M(0) : w;
	}
};

// pow(a, e): da = e == 0 ? 0 : g*(e*a^(e-1)) (0 even for NaN g);
// de = g*(a == 0 && e >= 0 ? 0 : a^e*log(a)), so a == 0, e < 0 gives -inf*g.
struct PowBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M e, double, M& da, M& de) {
		da = (e == M(0)) ? M(0) : g * (e * bc_pow(a, e - M(1)));
		// a^e is computed on its own, not as a^(e-1)*a: the rounding of e-1
		// would carry into de an error of |ln a|*|e-1| ulps.
		M f = (a == M(0) && e >= M(0)) ? M(0) : bc_pow(a, e) * bc_log(a);
		de = g * f;
	}
};

// atan2(a, b): r = 1/(a*a + b*b), da = (g*b)*r, db = (g*(-a))*r. At
// (0, 0) PyTorch 2.11 gives (0, -0): r is taken as 0 there.
struct Atan2Bw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M den = a * a + b * b;
		M r = (den == M(0)) ? M(0) : M(1) / den;
		da = (g * b) * r;
		db = (g * (-a)) * r;
	}
};

// hypot(a, b) = y: da = (g*a)/y, db = (g*b)/y; NaN at (0, 0) as PyTorch.
struct HypotBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M y = bc_hypot(a, b);
		da = (g * a) / y;
		db = (g * b) / y;
	}
};

// lerp(a, b, w) with a scalar weight: da = g*(1-w) with 1-w formed in
// double, db = g*w.
struct LerpBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename M> __device__ static void apply(M g, M, M, double w, M& da, M& db) {
		da = g * M(1.0 - w);
		db = g * M(w);
	}
};

template <typename T, typename Op>
__device__ __forceinline__ void binary_one(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, double s,
		i64 iy, i64 ia, i64 ib, i64 ida, i64 idb) {
	typedef typename OpMath<T>::type M;
	M av = Op::needs_a ? to_op(a[ia]) : M(0);
	M bv = Op::needs_b ? to_op(b[ib]) : M(0);
	M ga, gb;
	Op::apply(to_op(dy[iy]), av, bv, s, ga, gb);
	if (da) da[ida] = from_op<T>(ga);
	if (db) db[idb] = from_op<T>(gb);
}

// binary_backward: grid-stride loop over all elements. da or db may be null
// (that gradient is not wanted); a and b are only read by ops that need them.
template <typename T, typename Op>
__device__ __forceinline__ void binary_backward(const T* __restrict__ dy, const T* __restrict__ a,
		const T* __restrict__ b, T* __restrict__ da, T* __restrict__ db, double s, const BinaryLayout& L) {
	typedef typename OpMath<T>::type M;
	const i64 n = L.n;
	const i64 tid = global_tid();
	const i64 nth = grid_threads();
	if (L.mode == 2) {
		constexpr int N = Pack<T>::N;
		const i64 nv = n / N;
		for (i64 v = tid; v < nv; v += nth) {
			const i64 off = v * N;
			Pack<T> g = load_pack(dy + off);
			Pack<T> pa, pb, ra, rb;
			if (Op::needs_a) pa = load_pack(a + off);
			if (Op::needs_b) pb = load_pack(b + off);
#pragma unroll
			for (int j = 0; j < N; ++j) {
				M ga, gb;
				Op::apply(to_op(g.v[j]), Op::needs_a ? to_op(pa.v[j]) : M(0),
					Op::needs_b ? to_op(pb.v[j]) : M(0), s, ga, gb);
				ra.v[j] = from_op<T>(ga);
				rb.v[j] = from_op<T>(gb);
			}
			if (da) store_pack(da + off, ra);
			if (db) store_pack(db + off, rb);
		}
		for (i64 i = nv * N + tid; i < n; i += nth)
			binary_one<T, Op>(dy, a, b, da, db, s, i, i, i, i, i);
	} else if (L.mode == 1) {
		for (i64 i = tid; i < n; i += nth)
			binary_one<T, Op>(dy, a, b, da, db, s, i, i, i, i, i);
	} else {
		for (i64 i = tid; i < n; i += nth) {
			i64 rem = i;
			i64 o[5] = {0, 0, 0, 0, 0};
			// Unrolled with constant indices so the layout stays in the
			// parameter space instead of a local-memory copy.
#pragma unroll
			for (int d = BC_MAX_RANK - 1; d >= 0; --d) {
				if (d < L.rank) {
					const i64 idx = rem % L.dim[d];
					rem /= L.dim[d];
#pragma unroll
					for (int t = 0; t < 5; ++t) o[t] += idx * L.stride[t][d];
				}
			}
			binary_one<T, Op>(dy, a, b, da, db, s, o[0], o[1], o[2], o[3], o[4]);
		}
	}
}
