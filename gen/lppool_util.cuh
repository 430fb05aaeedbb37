// The LP pool kernels' helpers (gen/lppool.cuh): the layout, divisions by
// multiply-high, loads and rounded stores per dtype, the per-p power
// functors, a row's window bounds and factors, the tile's row records and
// the pooled coefficient of a window whose y overflowed.
#pragma once
#include "common.cuh"

// LpPoolLayout, the kernels' last parameter: from the spec (gen/spec_layouts.go).
#include "zlayouts.cuh"
#include "zconsts.cuh"

// lp_div32 is floor(n / d) for 0 <= n < 2^31 and 1 <= d <= 2^30 with one
// multiply-high: magic = ceil(2^(31+l) / d), shift = l - 1 with
// 2^(l-1) < d <= 2^l, or magic = 0 and shift = log2(d) for a power of two.
__device__ __forceinline__ int lp_div32(int n, unsigned magic, int shift) {
	return (int)((magic ? __umulhi((unsigned)n, magic) : (unsigned)n) >> shift);
}

// lp_fdiv is a/b without the call to the IEEE divide's slow path (a call
// makes ptxas save registers around it): div.full.f32, within 2 ulp over the
// full range, and for double a reciprocal refined by Newton steps to within
// an ulp, operands scaled by powers of two away from the range ends.
__device__ __forceinline__ float lp_fdiv(float a, float b) {
	float q;
	asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
	return q;
}
__device__ __forceinline__ double lp_fdiv(double a, double b) {
	const double ab = fabs(b);
	if (ab > 0x1p1000) {
		a *= 0x1p-100;
		b *= 0x1p-100;
	} else if (ab < 0x1p-1000) {
		a *= 0x1p100;
		b *= 0x1p100;
	}
	if (isinf(b)) return a * copysign(0.0, b);  // also NaN for infinite or NaN a
	double r;
	asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(b));
	r = fma(r, fma(-b, r, 1.0), r);
	r = fma(r, fma(-b, r, 1.0), r);
	const double q = a * r;
	const double refined = fma(fma(-b, q, a), r, q);
	return isinf(q) ? q : refined;  // an infinite a: the residual is inf - inf
}

// lp_quot is a/b for a coefficient of storage type T: lp_fdiv, except for
// f16, where b is an f16 value (|b| in [2^-24, 65504], or 0, inf, NaN) and
// a = dy * (K/c) with |a| < 2^77, so that 1/b and the quotient stay normal:
// a times the hardware reciprocal (MUFU, within an ulp), a few float ulps
// from a/b, far inside the f16 rounding of dx.
template <typename T> __device__ __forceinline__ typename OpMath<T>::type lp_quot(typename OpMath<T>::type a, typename OpMath<T>::type b) {
	return lp_fdiv(a, b);
}
template <> __device__ __forceinline__ float lp_quot<__half>(float a, float b) {
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
	return a * r;
}

// lp_round stores an opmath value: from_op, except bf16 before sm_80,
// which rounds to nearest even with integer ops (compute_70 has no bf16
// convert; NaN becomes the canonical 0x7fff, as cvt.rn.bf16.f32 gives).
template <typename T> __device__ __forceinline__ T lp_round(typename OpMath<T>::type v) { return from_op<T>(v); }
#if __CUDA_ARCH__ < 800
template <> __device__ __forceinline__ __nv_bfloat16 lp_round<__nv_bfloat16>(float v) {
	const unsigned u = __float_as_uint(v);
	const unsigned short h = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fff : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	__nv_bfloat16_raw r;
	r.x = h;
	return __nv_bfloat16(r);
}
#endif

// lp_store_pack rounds V opmath values and stores them as one 16-byte
// pack; bf16 on sm_80 rounds two at a time (cvt.rn.bf16x2.f32).
template <typename T, int V>
__device__ __forceinline__ void lp_store_pack(T* p, const typename OpMath<T>::type (&v)[V]) {
	Pack<T> pd;
#pragma unroll
	for (int e = 0; e < V; ++e) pd.v[e] = lp_round<T>(v[e]);
	store_pack(p, pd);
}
#if __CUDA_ARCH__ >= 800
template <>
__device__ __forceinline__ void lp_store_pack<__nv_bfloat16, 8>(__nv_bfloat16* p, const float (&v)[8]) {
	unsigned w[4];
#pragma unroll
	for (int e = 0; e < 4; ++e) {
		const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
		memcpy(&w[e], &h, 4);
	}
	st_global_v4(p, w);
}
#endif

// lp_load reads y or dy through the read-only cache (neither is written by
// the kernel) and widens it to opmath.
__device__ __forceinline__ float lp_load(const float* p) { return __ldg(p); }
__device__ __forceinline__ double lp_load(const double* p) { return __ldg(p); }
__device__ __forceinline__ float lp_load(const __half* p) {
	return __half2float(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(p))));
}
__device__ __forceinline__ float lp_load(const __nv_bfloat16* p) {
	return __uint_as_float((unsigned)__ldg(reinterpret_cast<const unsigned short*>(p)) << 16);
}

// LpP1: p == 1. y_w^0 = x^0 = 1, so coef_w = dy_w * (K/c_w) and
// dx_i = Σ coef_w (y may be negative; y == 0 still selects 0). A NaN y
// gives (dy_w * (K/c_w))*0: PyTorch's sign(NaN) = 0 scales the window's
// gradient, which is finite for p == 1, so only a NaN or inf dy survives.
struct LpP1 {
	static constexpr int rows = 4;  // input rows a thread of lppool_pack takes (ops/lppool_launch.go rowsPer)
	static constexpr bool pooled = false;
	template <typename T, typename M> __device__ static M coef(M g, M f, M y, M) {
		const M c = g * f;
		return y != y ? c * M(0) : c;
	}
	template <typename M> __device__ static M xpow(M, M) { return M(1); }
};

// LpP2: p == 2. coef_w = dy_w * (K/c_w) / y_w and dx_i = x_i * Σ coef_w.
// The quotient is lp_fdiv's (lp_quot's for f16).
struct LpP2 {
	// 2, not 4: at 4 the bf16 pack kernel holds 64 registers, and 2 rows
	// with more resident blocks are faster for bf16 (f32 runs the same
	// either way).
	static constexpr int rows = 2;
	static constexpr bool pooled = false;
	template <typename T, typename M> __device__ static M coef(M g, M f, M y, M) { return lp_quot<T>(g * f, y); }
	template <typename M> __device__ static M xpow(M x, M) { return x; }
};

// LpGeneral: any finite p > 0. coef_w = dy_w * (K/c_w) * y_w^(1-p) and
// dx_i = x_i^(p-1) * Σ coef_w, with precise pow (pm1 = p - 1 rounded once
// from double): x < 0 with non-integer p - 1 gives NaN, x == 0 with p < 1
// gives inf, as PyTorch. pooled: for p < 1, a window whose y overflowed
// takes its coefficient from the pooled sum (lp_pooled_coef).
struct LpGeneral {
	static constexpr int rows = 2;  // pow needs the registers
	static constexpr bool pooled = true;
	template <typename T, typename M> __device__ static M coef(M g, M f, M y, M pm1) { return (g * f) * bc_pow(y, -pm1); }
	template <typename M> __device__ static M xpow(M x, M pm1) { return bc_pow(x, pm1); }
};

// lp_plane gives the offset of plane nc (= n*C + c) in tensor t (0 x, 1 y,
// 2 dy, 3 dx); merged n and c (channels == 0) address nc * stride_c alone.
__device__ __forceinline__ i64 lp_plane(const LpPoolLayout& L, i64 nc, int t) {
	if (L.channels != 0) {
		const i64 n = bc_div(nc, L.c_magic, L.c_shift);
		return n * L.stride[t][0] + (nc - n * L.channels) * L.stride[t][1];
	}
	return nc * L.stride[t][1];
}

// lp_oh_lo and lp_oh_hi bound the window rows holding input row i:
// oh*sh <= i < oh*sh + kh (empty when lo > hi; lo may be Ho).
__device__ __forceinline__ int lp_oh_lo(const LpPoolLayout& L, int i) {
	return i < L.kh ? 0 : lp_div32(i - L.kh, L.sh_magic, L.sh_shift) + 1;
}
__device__ __forceinline__ int lp_oh_hi(const LpPoolLayout& L, int i) {
	return min(lp_div32(i, L.sh_magic, L.sh_shift), L.Ho - 1);
}

// lp_factors gives K/c_w in opmath for the windows of a window row: f_in
// for all but the last column, f_end for the last (only the last window
// row, last_row, or column can be partial).
__device__ __forceinline__ void lp_factors(const LpPoolLayout& L, bool last_row, float& f_in, float& f_end) {
	f_in = last_row ? L.f_row32 : 1.0f;
	f_end = last_row ? L.f_corner32 : L.f_col32;
}
__device__ __forceinline__ void lp_factors(const LpPoolLayout& L, bool last_row, double& f_in, double& f_end) {
	f_in = last_row ? L.f_row : 1.0;
	f_end = last_row ? L.f_corner : L.f_col;
}

// lp_windows gives the window columns [ow_lo, ow_hi] that hold a cell of
// [j0, j1]: ow*sw <= j1 and ow*sw + kw > j0.
__device__ __forceinline__ void lp_windows(const LpPoolLayout& L, int j0, int j1, int& ow_lo, int& ow_hi) {
	ow_lo = j0 < L.kw ? 0 : lp_div32(j0 - L.kw, L.sw_magic, L.sw_shift) + 1;
	ow_hi = min(lp_div32(j1, L.sw_magic, L.sw_shift), L.Wo - 1);
}

// lp_opaque makes v unknown to the compiler where it stands (no code).
__device__ __forceinline__ void lp_opaque(int& v) { asm volatile("" : "+r"(v)); }

// lp_prefetch asks for the line holding p to be brought into L2.
__device__ __forceinline__ void lp_prefetch(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Dynamic shared memory of the tiled kernels (see lp_tiled).
extern __shared__ double lp_smem[];

// LpRow is an input row's record, which the prologue fills once per tile
// (LP_ROW_BYTES, gen/zconsts.cuh, from the spec): its x and dx rows, the window rows [oh_lo,
// oh_hi] holding it (empty when oh_lo > oh_hi) and rows oh_lo of its y and
// dy planes; valid is 0 for a row past the input; i is the row's index
// in its plane.
struct __align__(16) LpRow {
	const void* x;
	void* dx;
	const void* y;
	const void* dy;
	int oh_lo, oh_hi, valid, i;
};
static_assert(sizeof(LpRow) == LP_ROW_BYTES, "LpRow must be LP_ROW_BYTES (gen/spec_consts.go), which the launcher sizes shared memory by");

// LpVec is R opmath values moved as one shared-memory access.
template <typename M, int R> struct LpVec { M v[R]; };
template <> struct __align__(8) LpVec<float, 2> { float v[2]; };
template <> struct __align__(16) LpVec<float, 4> { float v[4]; };
template <> struct __align__(16) LpVec<double, 2> { double v[2]; };
template <> struct __align__(16) LpVec<double, 4> { double v[4]; };

// lp_pooled_coef is the coefficient of window (oh, ow) from its pooled sum,
// recomputed from x: dy * (K/c) * q^(1/p-1), q = (K/c) * Σ_{i∈w} x_i^p in
// opmath, the operand of PyTorch's pow(q, 1/p) (f = K/c). For p < 1 the
// kernel takes it where y = +inf: y = q^(1/p) overflowed while q did not,
// and PyTorch's gradient, which comes from q, is finite. row is the record
// of an input row of the window's plane.
template <typename T, typename M>
__device__ __forceinline__ M lp_pooled_coef(const LpPoolLayout& L, const LpRow& row, int oh, int ow, M g, M f, double p) {
	const int r0 = oh * L.sh, c0 = ow * L.sw;
	const int nr = min(L.kh, L.H - r0), nc = min(L.kw, L.W - c0);
	const T* xw = static_cast<const T*>(row.x) + ((i64)(r0 - row.i) * L.stride[0][2] + (i64)c0 * L.stride[0][3]);
	const M ep = M(p), eq = M(lp_fdiv(1.0, p) - 1.0);
	// One pow call site (code size): x^p of each cell, then q^(1/p-1).
	M q = M(0), v;
#pragma unroll 1
	for (int r = 0, c = 0;; ++c) {
		if (c == nc) {
			c = 0;
			++r;
		}
		M b = f * q, e = eq;
		if (r < nr) {
			b = to_op(xw[r * L.stride[0][2] + c * L.stride[0][3]]);
			e = ep;
		}
		v = bc_pow(b, e);
		if (r == nr) break;
		q += v;
	}
	return (g * f) * v;
}

// lp_posinf reports whether v is +inf.
__device__ __forceinline__ bool lp_posinf(float v) { return v == __int_as_float(0x7f800000); }
__device__ __forceinline__ bool lp_posinf(double v) { return v == __longlong_as_double(0x7ff0000000000000ll); }
