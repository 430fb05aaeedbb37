#pragma once
// Memory: slice offsets, the loads and stores of a run (plain, vector,
// word-converted), the L2-coherent loads and stores of the workspace, and
// the slots (a value that is its own flag).
#include "scan_ops.cuh"

// ---- memory -------------------------------------------------------------

// Element offsets of a slice's element 0 in dy, x, y, dx.
__device__ __forceinline__ void scan_slice_offsets(const ScanLayout& L, i64 s, i64 (&off)[4]) {
	if (L.srank <= 1) {
		// One slice dim (or none: s = 0 and the strides are 0), the common
		// case once the launcher has merged neighbours: no division.
#pragma unroll
		for (int t = 0; t < 4; ++t) off[t] = s * L.sstride[t][0];
		return;
	}
#pragma unroll
	for (int t = 0; t < 4; ++t) off[t] = 0;
	unsigned long long rem = (unsigned long long)s;
#pragma unroll
	for (int d = SCAN_SRANK - 1; d >= 0; --d) {
		if (d < L.srank) {
			unsigned long long idx = rem;
			if (d > 0) {
				const unsigned long long q = (unsigned long long)bc_div((i64)rem, L.smagic[d], L.sshift[d]);
				idx = rem - q * (unsigned long long)L.sdim[d];
				rem = q;
			}
#pragma unroll
			for (int t = 0; t < 4; ++t) off[t] += (i64)idx * L.sstride[t][d];
		}
	}
}

// scan_ld is a read-only-cache load of one element (compute_70 has no
// __ldg for bf16, so 16-bit types load their bits).
template <typename T> __device__ __forceinline__ T scan_ld(const T* p) { return __ldg(p); }
template <> __device__ __forceinline__ __half scan_ld(const __half* p) {
	const unsigned short r = __ldg(reinterpret_cast<const unsigned short*>(p));
	__half v;
	memcpy(&v, &r, 2);
	return v;
}
template <> __device__ __forceinline__ __nv_bfloat16 scan_ld(const __nv_bfloat16* p) {
	const unsigned short r = __ldg(reinterpret_cast<const unsigned short*>(p));
	__nv_bfloat16 v;
	memcpy(&v, &r, 2);
	return v;
}

// scan_ld_l2 is scan_ld with a miss fetching the whole 128-byte L2 line
// rather than its 32-byte sectors (ColFetch::l2_128: bf16 on compute_80
// and later; a col warp reads 64 bytes of a row, and the unit beside it,
// in another block at about the same time, the other 64).
template <typename T> __device__ __forceinline__ T scan_ld_l2(const T* p) { return scan_ld(p); }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> __device__ __forceinline__ __nv_bfloat16 scan_ld_l2(const __nv_bfloat16* p) {
	unsigned short r;
	asm("ld.global.nc.L2::128B.u16 %0, [%1];" : "=h"(r) : "l"(p));
	__nv_bfloat16 v;
	memcpy(&v, &r, 2);
	return v;
}
#endif

// load_steps reads N elements from q on, the pointer stepping by step,
// into v, fill where the index is not valid (rev: i >= N - cnt, else i <
// cnt); store_steps writes the valid ones back. A full run (cnt == N)
// needs no per-element test.
template <typename T, int N>
__device__ __forceinline__ void load_steps(const T* __restrict__ q, i64 step, int cnt, bool rev,
		typename OpMath<T>::type (&v)[N], typename OpMath<T>::type fill) {
	if (cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step) v[i] = to_op(scan_ld(q));
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step) {
			v[i] = fill;
			if (rev ? i >= N - cnt : i < cnt) v[i] = to_op(scan_ld(q));
		}
	}
}

// store_steps stores the valid elements of v but index skip (-1: none;
// the ext order's fix blocks store dx there).
template <typename T, int N>
__device__ __forceinline__ void store_steps(T* __restrict__ q, i64 step, int cnt, bool rev,
		const typename OpMath<T>::type (&v)[N], int skip = -1) {
	if (cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step)
			if (i != skip) *q = from_op<T>(v[i]);
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step)
			if ((rev ? i >= N - cnt : i < cnt) && i != skip) *q = from_op<T>(v[i]);
	}
}

// fetch_steps reads the valid elements of N from q on, the pointer
// stepping by step (rev: i >= N - cnt valid, else i < cnt), into r as
// stored, and zero bits at the others; cvt_fill converts them to opmath,
// fill at the others. The two halves of load_steps, apart so that a run's
// loads of every operand issue before any value is used: a conversion
// right after one operand's loads holds the next operand's loads back
// until the first ones return (one memory round trip per operand).
template <typename T> __device__ __forceinline__ T scan_bits0() {
	T v;
	memset(&v, 0, sizeof(T));
	return v;
}

template <typename T, int N, bool L2W = false>
__device__ __forceinline__ void fetch_steps(const T* __restrict__ q, i64 step, int cnt, bool rev, T (&r)[N]) {
	if (cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step) r[i] = L2W ? scan_ld_l2(q) : scan_ld(q);
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step)
			r[i] = (rev ? i >= N - cnt : i < cnt) ? (L2W ? scan_ld_l2(q) : scan_ld(q)) : scan_bits0<T>();
	}
}

template <typename T, int N>
__device__ __forceinline__ void cvt_fill(const T (&r)[N], int cnt, bool rev, typename OpMath<T>::type (&v)[N],
		typename OpMath<T>::type fill) {
	if (cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i) v[i] = to_op(r[i]);
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i) v[i] = (rev ? i >= N - cnt : i < cnt) ? to_op(r[i]) : fill;
	}
}

// WordCvt<T>::op converts element i of a run held as 32-bit words (a
// 16-byte pack load's registers) to opmath: a bf16 is the high half of a
// float (one shift or mask), an f16 one half-to-float conversion.
template <typename T> struct WordCvt;
template <> struct WordCvt<__nv_bfloat16> {
	template <int NW> static __device__ __forceinline__ float op(const unsigned (&w)[NW], int i) {
		return __uint_as_float((i & 1) ? w[i >> 1] & 0xffff0000u : w[i >> 1] << 16);
	}
};
template <> struct WordCvt<__half> {
	template <int NW> static __device__ __forceinline__ float op(const unsigned (&w)[NW], int i) {
		const unsigned short h = (unsigned short)((i & 1) ? w[i >> 1] >> 16 : w[i >> 1]);
		return __half2float(__ushort_as_half(h));
	}
};
template <> struct WordCvt<float> {
	template <int NW> static __device__ __forceinline__ float op(const unsigned (&w)[NW], int i) {
		return __uint_as_float(w[i]);
	}
};
template <> struct WordCvt<double> {
	template <int NW> static __device__ __forceinline__ double op(const unsigned (&w)[NW], int i) {
		return __hiloint2double((int)w[2 * i + 1], (int)w[2 * i]);
	}
};

// load_run reads cnt <= N elements k0, k0+1, ... of one slice of p (element
// 0 at base, axis stride st) into v in memory order, fill past cnt; with
// vec (unit stride) and a full, 16-byte aligned run it uses 128-bit loads.
template <typename T, int N>
__device__ __forceinline__ void load_run(const T* __restrict__ p, i64 base, i64 st, i64 k0, int cnt, bool vec,
		typename OpMath<T>::type (&v)[N], typename OpMath<T>::type fill) {
	constexpr int P = Pack<T>::N;
	const T* q = p + base + k0 * st;
	if (vec && cnt == N && (reinterpret_cast<unsigned long long>(q) & 15) == 0) {
#pragma unroll
		for (int i = 0; i < N / P; ++i) {
			const Pack<T> pk = load_pack(q + i * P);
#pragma unroll
			for (int e = 0; e < P; ++e) v[i * P + e] = to_op(pk.v[e]);
		}
	} else {
		load_steps<T, N>(q, st, cnt, false, v, fill);
	}
}

template <typename T, int N>
__device__ __forceinline__ void store_run(T* __restrict__ p, i64 base, i64 st, i64 k0, int cnt, bool vec,
		const typename OpMath<T>::type (&v)[N]) {
	constexpr int P = Pack<T>::N;
	T* q = p + base + k0 * st;
	if (vec && cnt == N && (reinterpret_cast<unsigned long long>(q) & 15) == 0) {
#pragma unroll
		for (int i = 0; i < N / P; ++i) {
			Pack<T> pk;
#pragma unroll
			for (int e = 0; e < P; ++e) pk.v[e] = from_op<T>(v[i * P + e]);
			store_pack(q + i * P, pk);
		}
	} else {
		store_steps<T, N>(q, st, cnt, false, v);
	}
}

// load_scan and store_scan move a run like load_run and store_run without
// packs, but in scan order: with rev the pointer steps backwards from the
// run's last element, so no registers need reversing (a flip is a select
// per element when rev is a run-time flag). Index i is element k0 + i, or
// k0 + N-1-i with rev; the valid indices are those of ScanRun::init.
template <typename T, int N>
__device__ __forceinline__ void load_scan(const T* __restrict__ p, i64 base, i64 st, i64 k0, int cnt, bool rev,
		typename OpMath<T>::type (&v)[N], typename OpMath<T>::type fill) {
	load_steps<T, N>(p + base + (k0 + (rev ? N - 1 : 0)) * st, rev ? -st : st, cnt, rev, v, fill);
}

template <typename T, int N>
__device__ __forceinline__ void store_scan(T* __restrict__ p, i64 base, i64 st, i64 k0, int cnt, bool rev,
		const typename OpMath<T>::type (&v)[N], int skip = -1) {
	store_steps<T, N>(p + base + (k0 + (rev ? N - 1 : 0)) * st, rev ? -st : st, cnt, rev, v, skip);
}

// flip reverses v in place when rev: memory order <-> scan order.
template <typename M, int N> __device__ __forceinline__ void flip(M (&v)[N], bool rev) {
	if (rev) {
#pragma unroll
		for (int i = 0; i < N / 2; ++i) {
			const M t = v[i];
			v[i] = v[N - 1 - i];
			v[N - 1 - i] = t;
		}
	}
}

// st_cg / ld_cg move workspace values through L2 (the tiles that read
// them run on other SMs).
__device__ __forceinline__ void st_cg(Aff<float>* p, Aff<float> v) {
	__stcg(reinterpret_cast<float2*>(p), make_float2(v.a, v.u));
}
__device__ __forceinline__ void st_cg(Aff<double>* p, Aff<double> v) {
	__stcg(reinterpret_cast<double2*>(p), make_double2(v.a, v.u));
}
__device__ __forceinline__ Aff<float> ld_cg(const Aff<float>* p) {
	const float2 r = __ldcg(reinterpret_cast<const float2*>(p));
	return Aff<float>{r.x, r.y};
}
__device__ __forceinline__ Aff<double> ld_cg(const Aff<double>* p) {
	const double2 r = __ldcg(reinterpret_cast<const double2*>(p));
	return Aff<double>{r.x, r.y};
}
__device__ __forceinline__ void st_cg(float* p, float v) { __stcg(p, v); }
__device__ __forceinline__ void st_cg(double* p, double v) { __stcg(p, v); }
__device__ __forceinline__ float ld_cg(const float* p) { return __ldcg(p); }
__device__ __forceinline__ double ld_cg(const double* p) { return __ldcg(p); }

// The look-back part of the workspace holds SCAN_NONE_BYTE bytes
// (gen/zconsts.cuh) before the tiles write it (Run's memset of the ticket
// counter, the fill blocks', see scan_take, or the row mapping's first
// pass): SCAN_NONE is a flag, or a 32-bit slot, that no tile has written
// yet (and the ticket counter's first value).
#define SCAN_NONE (SCAN_NONE_BYTE * 0x01010101u)

__device__ __forceinline__ unsigned ld_flag(const unsigned* p) { return *reinterpret_cast<const volatile unsigned*>(p); }
__device__ __forceinline__ void st_flag(unsigned* p, unsigned v) { *reinterpret_cast<volatile unsigned*>(p) = v; }
// fence_gpu orders this thread's earlier and later memory operations for
// the whole GPU (acquire-release; __threadfence is the slower
// sequentially consistent fence). With the relaxed flag accesses above it
// forms the fence-flag synchronization of the PTX memory model.
__device__ __forceinline__ void fence_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Slots (float opmath): a tile value that is its own flag. A value (4
// bytes) or a map (8 bytes) moves in one volatile access, which the PTX
// memory model makes single-copy atomic, so a reader sees all of it or
// SCAN_NONE, and needs no fence: the value is all it reads. A NaN is
// stored as the canonical 0x7fffffff, so no value is ever all ones.
__device__ __forceinline__ unsigned slot_bits(float v) { return v != v ? 0x7fffffffu : __float_as_uint(v); }
__device__ __forceinline__ void slot_st(float* p, float v) {
	*reinterpret_cast<volatile unsigned*>(p) = slot_bits(v);
}
__device__ __forceinline__ bool slot_ld(const float* p, float& v) {
	const unsigned b = *reinterpret_cast<const volatile unsigned*>(p);
	v = __uint_as_float(b);
	return b != SCAN_NONE;
}
__device__ __forceinline__ void slot_st(Aff<float>* p, Aff<float> v) {
	*reinterpret_cast<volatile unsigned long long*>(p) =
			(unsigned long long)slot_bits(v.a) | (unsigned long long)slot_bits(v.u) << 32;
}
__device__ __forceinline__ bool slot_ld(const Aff<float>* p, Aff<float>& v) {
	const unsigned long long b = *reinterpret_cast<const volatile unsigned long long*>(p);
	v.a = __uint_as_float((unsigned)b);
	v.u = __uint_as_float((unsigned)(b >> 32));
	return b != ~0ULL;
}

// A take-over record as a slot (float opmath, the in-launch fix blocks):
// v with NaN canonical and k, never all ones, in one 8-byte access.
template <typename M> struct FixRec;
__device__ __forceinline__ void slot_st(FixRec<float>* p, float v, int k) {
	*reinterpret_cast<volatile unsigned long long*>(p) =
			(unsigned long long)slot_bits(v) | (unsigned long long)(unsigned)k << 32;
}
__device__ __forceinline__ bool slot_ld(const FixRec<float>* p, float& v, int& k) {
	const unsigned long long b = *reinterpret_cast<const volatile unsigned long long*>(p);
	v = __uint_as_float((unsigned)b);
	k = (int)(unsigned)(b >> 32);
	return b != ~0ULL;
}
