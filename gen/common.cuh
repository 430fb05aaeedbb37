// Shared device code for every family: dtype plumbing (storage type <->
// opmath), math overloads for float and double, grid-stride indexing and
// 16-byte vector access.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef long long i64;

#define BC_MAX_RANK 8

// OpMath is the type arithmetic happens in: f16 and bf16 compute in float
// and are rounded once when stored; f32 in float; f64 in double.
template <typename T> struct OpMath { typedef T type; };
template <> struct OpMath<__half> { typedef float type; };
template <> struct OpMath<__nv_bfloat16> { typedef float type; };

// Narrow<T>: T is a 16-bit type, rounded from a float opmath result to 11
// (f16) or 8 (bf16) significant bits, so float math whose relative error is
// far below 2^-12 may stand in for correctly rounded library functions (see
// PowMath in binary.cuh). wide: T spans float's exponent range (bf16), so
// its values may be float subnormals, or integers of 2^23 and more.
template <typename T> struct Narrow { static constexpr bool value = false, wide = false; };
template <> struct Narrow<__half> { static constexpr bool value = true, wide = false; };
template <> struct Narrow<__nv_bfloat16> { static constexpr bool value = true, wide = true; };

__device__ __forceinline__ float to_op(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_op(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_op(float v) { return v; }
__device__ __forceinline__ double to_op(double v) { return v; }

template <typename T> __device__ __forceinline__ T from_op(typename OpMath<T>::type v);
template <> __device__ __forceinline__ __half from_op<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_op<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float from_op<float>(float v) { return v; }
template <> __device__ __forceinline__ double from_op<double>(double v) { return v; }

// Precise (not fast-math) library calls, overloaded so that one functor body
// serves float and double opmath.
__device__ __forceinline__ float bc_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double bc_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float bc_log(float a) { return logf(a); }
__device__ __forceinline__ double bc_log(double a) { return log(a); }
__device__ __forceinline__ float bc_exp(float a) { return expf(a); }
__device__ __forceinline__ double bc_exp(double a) { return exp(a); }
__device__ __forceinline__ float bc_sqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ double bc_sqrt(double a) { return sqrt(a); }
__device__ __forceinline__ float bc_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double bc_hypot(double a, double b) { return hypot(a, b); }
__device__ __forceinline__ float bc_log1p(float a) { return log1pf(a); }
__device__ __forceinline__ double bc_log1p(double a) { return log1p(a); }
__device__ __forceinline__ float bc_fabs(float a) { return fabsf(a); }
__device__ __forceinline__ double bc_fabs(double a) { return fabs(a); }
template <typename M> __device__ __forceinline__ bool bc_isnan(M a) { return a != a; }
template <typename M> __device__ __forceinline__ M bc_inf() { return M(1) / M(0); }
template <typename M> __device__ __forceinline__ M bc_nan() { return M(0) / M(0); }

__device__ __forceinline__ i64 global_tid() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 grid_threads() { return (i64)gridDim.x * blockDim.x; }

// bc_div is floor(n / d) for 0 <= n < 2^62 without a 64-bit division, from
// the launcher's constants (divMagic in ops/launch.go): magic == 0 means
// d = 2^shift; otherwise magic = ceil(2^(62+l) / d) and shift = l - 2 with
// 2^(l-1) < d <= 2^l (Granlund and Montgomery with a 62-bit dividend).
__device__ __forceinline__ i64 bc_div(i64 n, unsigned long long magic, int shift) {
	const unsigned long long u = (unsigned long long)n;
	return (i64)((magic ? __umul64hi(u, magic) : u) >> shift);
}

// Pack is 16 bytes of T, moved with one 128-bit load or store.
template <typename T> struct __align__(16) Pack {
	static constexpr int N = 16 / sizeof(T);
	T v[N];
};

template <typename T> __device__ __forceinline__ Pack<T> load_pack(const T* p) {
	// Read-only cache path; p is 16-byte aligned (the launcher checks).
	uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
	Pack<T> out;
	memcpy(&out, &r, 16);
	return out;
}

// pack_words puts W 32-bit words' worth of T from v into w. 16-bit
// elements are joined in pairs explicitly: left to memcpy, nvcc 11.8 may
// store a pack of them as four 4-byte stores instead of one 16-byte store.
template <typename T, int W> __device__ __forceinline__ void pack_words(unsigned* w, const T* v) {
#pragma unroll
	for (int i = 0; i < W; ++i) {
		if (sizeof(T) == 2) {
			unsigned short lo, hi;
			memcpy(&lo, &v[2 * i], 2);
			memcpy(&hi, &v[2 * i + 1], 2);
			w[i] = (unsigned)lo | ((unsigned)hi << 16);
		} else {
			memcpy(&w[i], reinterpret_cast<const char*>(v) + 4 * i, 4);
		}
	}
}

// st_global_v4 / _v2 store 16 / 8 bytes with one instruction: nvcc 11.8
// splits a uint4 or uint2 store of values built in registers into 4-byte
// stores (a warp then writes each 16-byte pack in four partial passes).
// The asm has no memory clobber, so loads may still be scheduled across
// it; no kernel reads back what it stores this way.
__device__ __forceinline__ void st_global_v4(void* p, const unsigned* w) {
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
}
__device__ __forceinline__ void st_global_v2(void* p, const unsigned* w) {
	asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]));
}

// store_pack: f64 keeps the plain store; the asm form makes it longer
// (more registers in the col kernels) without fewer stores.
template <typename T> __device__ __forceinline__ void store_pack(T* p, const Pack<T>& v) {
	if (sizeof(T) == 8) {
		uint4 r;
		memcpy(&r, &v, 16);
		*reinterpret_cast<uint4*>(p) = r;
	} else {
		unsigned w[4];
		pack_words<T, 4>(w, v.v);
		st_global_v4(p, w);
	}
}
