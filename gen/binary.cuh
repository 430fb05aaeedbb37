// Binary elementwise backward: given dy and the saved inputs a, b, write
// da = dL/da and db = dL/db. Every functor computes in opmath M (float for
// f16/bf16/f32, double for f64) and the result is rounded once when stored;
// apply also gets the storage type T, for math that may be cheaper when the
// result is rounded to 16 bits (pow).
// Semantics follow PyTorch's autograd formulas (docs/semantics.md, section 2).
#pragma once
#include "common.cuh"

// BinaryLayout, the kernels' last parameter: from the spec (gen/spec_layouts.go).
#include "zlayouts.cuh"

// add(a, b, alpha) = a + alpha*b: da = g, db = alpha*g.
struct AddBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename T, typename M> __device__ static void apply(M g, M, M, double s, M& da, M& db) {
		da = g;
		db = g * M(s);
	}
};

// sub(a, b, alpha) = a - alpha*b: da = g, db = -g*alpha.
struct SubBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename T, typename M> __device__ static void apply(M g, M, M, double s, M& da, M& db) {
		da = g;
		db = -g * M(s);
	}
};

// mul: da = g*b, db = g*a.
struct MulBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		da = g * b;
		db = g * a;
	}
};

// div: da = g/b, db = -g*((a/b)/b) (PyTorch's order).
struct DivBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		da = g / b;
		db = -g * ((a / b) / b);
	}
};

// maximum: the larger side gets g; a tie gives g/2 to each side; when a or
// b is NaN no comparison holds, so both sides get g.
struct MaximumBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M w = (a == b) ? g * M(0.5) : g;
		da = (a < b) ? M(0) : w;
		db = (a > b) ? M(0) : w;
	}
};

// minimum: as maximum with the comparisons swapped.
struct MinimumBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M w = (a == b) ? g * M(0.5) : g;
		da = (a > b) ? M(0) : w;
		db = (a < b) ? M(0) : w;
	}
};

// PowMath<T, M> gives the transcendental terms of pow's backward in opmath
// M for storage type T: pm1() = a^(e-1) and plog() = a^e*ln(a). This
// generic one (f32, f64) calls the correctly rounded library functions
// once each: P = a^e, and a^(e-1) as P/a wherever that is exact to an
// ulp, i.e. P and P/a are normal numbers (so a is finite and nonzero) and
// e is finite with |e| < 2^(mantissa bits - 1), so that an integer e stays
// an integer in e-1 and the sign of a negative a's power flips with the
// parity. Elsewhere (zeros, infinities, NaN, under- and overflow) a^(e-1)
// comes from pow itself. P/a has e's exact exponent where PyTorch rounds
// e-1 first; the difference is the |ln a|*|e-1| ulps of that rounding,
// which the tests allow for da. a^e is computed on its own, not as
// a^(e-1)*a, since that rounding would carry into de. (A second pow call
// per element would hold pow f64 far below copy bandwidth.)
template <typename M> struct PowLimits;
template <> struct PowLimits<float> {
	static __device__ __forceinline__ float min_normal() { return 0x1p-126f; }
	static __device__ __forceinline__ float max_finite() { return 0x1.fffffep127f; }
	static __device__ __forceinline__ float max_exp() { return 0x1p23f; }
};
template <> struct PowLimits<double> {
	static __device__ __forceinline__ double min_normal() { return 0x1p-1022; }
	static __device__ __forceinline__ double max_finite() { return 0x1.fffffffffffffp1023; }
	static __device__ __forceinline__ double max_exp() { return 0x1p52; }
};
template <typename M> __device__ __forceinline__ bool pow_normal(M v) {
	const M m = v < M(0) ? -v : v;
	return (m >= PowLimits<M>::min_normal()) & (m <= PowLimits<M>::max_finite());
}
template <typename T, typename M, bool = Narrow<T>::value> struct PowMath {
	M pm1_, plog_;
	__device__ __forceinline__ PowMath(M a, M e) {
		const M p = bc_pow(a, e);
		const M q = p / a;
		const M ae = e < M(0) ? -e : e;
		pm1_ = q;
		if (!(pow_normal(p) & pow_normal(q) & (ae < PowLimits<M>::max_exp()))) pm1_ = bc_pow(a, e - M(1));
		plog_ = p * bc_log(a);
	}
	__device__ __forceinline__ M pm1() const { return pm1_; }
	__device__ __forceinline__ M plog() const { return plog_; }
};

// Float constants that fold (bc_inf's 1/0 is a run-time division).
__device__ __forceinline__ float pow_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float pow_nan() { return __int_as_float(0x7fffffff); }

// pow_log2(x) = log2 x for x = |a|, with log2f's values at 0 (-inf), inf
// and NaN. x = 2^k*m with m in [sqrt(1/2), sqrt(2)) is read off the bits,
// f = m - 1 is exact, and log2 m = f*P(f) with P a degree-7 interpolant of
// log2(1+f)/f at Chebyshev nodes. Run over every float m, k + f*P(f) (as
// computed here, with FMA) is within 2^-21.7 of log2 x, relative to it,
// near x = 1 too. Wide: x may be a float subnormal (bf16), scaled by 2^23.
template <bool Wide> __device__ __forceinline__ float pow_log2(float x) {
	const bool tiny = Wide && x < 0x1p-126f;
	if (Wide) x = tiny ? x * 0x1p23f : x;
	const int ix = __float_as_int(x);
	const int ie = (ix - 0x3f3504f3) & 0xff800000;  // k << 23
	const float f = __int_as_float(ix - ie) - 1.0f;
	float p = -0x1.245f38p-3f;
	p = fmaf(p, f, 0x1.dc78f4p-3f);
	p = fmaf(p, f, -0x1.fe823ap-3f);
	p = fmaf(p, f, 0x1.262f0ep-2f);
	p = fmaf(p, f, -0x1.70dedep-2f);
	p = fmaf(p, f, 0x1.ec756ep-2f);
	p = fmaf(p, f, -0x1.71552cp-1f);
	p = fmaf(p, f, 0x1.715476p+0f);
	float k = (float)(ie >> 23);
	if (Wide) k = tiny ? k - 23.0f : k;
	const float L = fmaf(f, p, k);
	// (x - 1)*inf is log2's -inf at 0, inf at inf and NaN at NaN.
	const bool special = (unsigned)(ix - 1) >= 0x7f7fffffu;
	return special ? (x - 1.0f) * pow_inf() : L;
}

// pow_from_log2 is powf(a, y) given L = pow_log2(|a|), with powf's special
// values: y == 0 or a == 1 give 1 (even with a NaN other operand), a == -1
// with y = +-inf gives 1, and a negative base (-0 and -inf included) keeps
// its sign for an odd integer y. Real: a finite negative base with a
// non-integer y gives NaN (plog leaves that to ln a). Wide: T = bf16, so
// y may be an integer >= 2^23.
//
// Conditions use & and |, not && and ||, and the sign is set with integer
// ops: the kernel unrolls 8 elements, and predicates that live across them
// spill.
template <bool Wide, bool Real> __device__ __forceinline__ float pow_from_log2(float a, float y, float L) {
	// y*L is inf*0 or NaN*0 exactly where 1 is wanted.
	const float t = ((y == 0.0f) | (fabsf(a) == 1.0f)) ? 0.0f : y * L;
	// exp2f is ex2.approx.f32; it keeps subnormal results, as powf does
	// (they matter with g = inf, and to bf16).
	float r = exp2f(t);
	// For |y| < 2^23, z = 2^23 + (|y| rounded to an integer), exactly, and
	// the low bit of z is that integer's parity; inf gives z = inf (an even
	// integer), NaN no integer.
	const float ay = fabsf(y);
	float z = ay + 0x1p23f;
	bool yint = z - 0x1p23f == ay;
	if (Wide) {
		// From 2^23 on every float is an integer, with its parity in its
		// low bit below 2^24. From 2^24 on, y = e or y = e - 1 (rounded) of
		// a bf16 e has that bit clear (e is a multiple of 2^17 there, and
		// e - 1 rounds to e): even, as all floats that large are.
		const bool big = ay >= 0x1p23f;
		yint = yint | big;
		z = big ? ay : z;
	}
	const unsigned odd = yint ? (unsigned)__float_as_int(z) << 31 : 0u;
	r = __uint_as_float(__float_as_uint(r) ^ (odd & __float_as_uint(a)));
	if (Real) r = ((a < 0.0f) & (a != -pow_inf()) & !yint) ? pow_nan() : r;
	return r;
}

// PowMath for f16 and bf16. Their result keeps 11 or 8 significant bits,
// so float terms with a small relative error serve as well as correctly
// rounded ones: one L = log2|a| serves all three terms, and each power is
// 2^(y*L) by ex2.approx, in place of two powf (each with a double-float
// log inside) and a logf.
//
// Error bound, relative: L is within 2^-21.7 of log2|a| (pow_log2), so
// t = y*L after its rounding is within 2^-21.4 of y*log2|a|, and 2^t within
// ln2*|t| times that, plus 2^-22 from ex2.approx (2 ulp, as exp2f
// documents). A power that is a normal float has |t| < 128, so it is within
// ln2*128*2^-21.4 + 2^-22 < 2^-14.9; ln a = L*ln2 is within 2^-21.3, and
// da and de each add two float roundings. The float da and de are so within
// 2^-14.8 of the exact values (for the same e - 1), less than 0.08 ulp of
// f16 (ulp > 2^-11 relative) and 0.01 ulp of bf16: the stored result is the
// correctly rounded one or, within 0.08 ulp of a rounding boundary, the
// adjacent one. (A power that is a float subnormal has an absolute error,
// as powf's has.) A CPU model of this code (ex2 exact, and off by 2^-22
// either way), run over all f16 and all bf16 (a, e) at g = 1 and over 3e8
// random (g, a, e) bit patterns, passes the conformance check (2 ulp from
// float64) wherever the powf version does, except within 2^-18 of the
// overflow threshold (inf against the largest finite value; 2-7 of 2^32
// pairs) and, in bf16, where e*a^(e-1) is a float subnormal with few bits
// in either version. Its f16 results are never 2 ulp off.
template <typename T> struct PowMath<T, float, true> {
	static constexpr bool wide = Narrow<T>::wide;
	// Both are computed up front, without branches: they are cheap, and
	// short-circuiting them costs more in branching than it saves.
	float pm1_, plog_;
	__device__ __forceinline__ PowMath(float a, float e) {
		const float L = pow_log2<wide>(fabsf(a));
		pm1_ = pow_from_log2<wide, true>(a, e - 1.0f, L);
		// logf's values: NaN below 0 (-inf included), -inf at +-0. Where
		// it is NaN, so is plog, so a^e needs no NaN of its own.
		const float ln = (a < 0.0f) ? pow_nan() : L * 0x1.62e430p-1f;
		plog_ = pow_from_log2<wide, false>(a, e, L) * ln;
	}
	__device__ __forceinline__ float pm1() const { return pm1_; }
	__device__ __forceinline__ float plog() const { return plog_; }
};

// pow(a, e): da = e == 0 ? 0 : g*(e*a^(e-1)) (0 even for NaN g);
// de = g*(a == 0 && e >= 0 ? 0 : a^e*log(a)), so a == 0, e < 0 gives -inf*g.
struct PowBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M e, double, M& da, M& de) {
		const PowMath<T, M> pw(a, e);
		da = (e == M(0)) ? M(0) : g * (e * pw.pm1());
		M f = (a == M(0) && e >= M(0)) ? M(0) : pw.plog();
		de = g * f;
	}
};

// atan2(a, b): r = 1/(a*a + b*b), da = (g*b)*r, db = (g*(-a))*r. At
// (0, 0) PyTorch 2.11 gives (0, -0): r is taken as 0 there.
struct Atan2Bw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M den = a * a + b * b;
		M r = (den == M(0)) ? M(0) : M(1) / den;
		da = (g * b) * r;
		db = (g * (-a)) * r;
	}
};

// hypot(a, b) = y: da = (g*a)/y, db = (g*b)/y; NaN at (0, 0) as PyTorch.
struct HypotBw {
	static constexpr bool needs_a = true, needs_b = true;
	template <typename T, typename M> __device__ static void apply(M g, M a, M b, double, M& da, M& db) {
		M y = bc_hypot(a, b);
		da = (g * a) / y;
		db = (g * b) / y;
	}
};

// lerp(a, b, w) with a scalar weight: da = g*(1-w) with 1-w formed in
// double, db = g*w.
struct LerpBw {
	static constexpr bool needs_a = false, needs_b = false;
	template <typename T, typename M> __device__ static void apply(M g, M, M, double w, M& da, M& db) {
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
	Op::template apply<T>(to_op(dy[iy]), av, bv, s, ga, gb);
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
				Op::template apply<T>(to_op(g.v[j]), Op::needs_a ? to_op(pa.v[j]) : M(0),
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
