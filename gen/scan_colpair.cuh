#pragma once
// The col mapping with two slices a lane: scan_backward_colpair.
#include "scan_col.cuh"

// ---- col mapping, two slices a lane ------------------------------------------
//
// scan_backward_colpair (variant "colpair", compute_80: bf16 cummax and
// cummin): the ext order of the col mapping (chunked; see the top) with
// each lane holding two adjacent slices, s and s + 1 for an even s, as
// 32-bit words of two 16-bit values. A warp row is 128 bytes of each
// operand (a whole L2 line, where the col kernel's bf16 rows are 64), a
// look-back unit 64 slices, a run SCAN_PAIR_ITEMS elements of each slice
// (-DSCAN_PAIR_ITEMS=... with scripts/ptx-variant.sh to time another):
// half as many tiles as the col kernel's, in the same 80 registers and
// three blocks per SM, and half the loads, stores and address arithmetic
// per element. The launcher takes it where every operand allows words:
// the innermost slice dim of even length and unit stride, every other
// stride even, 4-byte aligned bases (ops/scan_launch.go, pairLayout). The tiles
// publish the same per-slice maps and records as the col kernel's, so
// scan_ext_fix serves both; the forward values move as 8-byte slots of
// the two slices. SCAN_PAIR_ITEMS is 22: on an H100 the fastest run
// length that fits three blocks per SM without spilling (24 spills 40
// bytes; 32 fits two blocks per SM, at 123 registers). Prefetching the
// unit's next tile into L2, or taking the run's own take-overs before the
// look-back's barrier, makes it slower. SCAN_PAIR_ITEMS is defined in
// gen/zconsts.cuh (from gen/spec_consts.go; scanPairItems in ops/zconsts.go).

template <typename Op> struct ExtSign {
	static constexpr int value = 0;
};
template <int E> struct ExtSign<CumExtBw<E> > {
	static constexpr int value = E;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Pair16<T>: a word's low half is slice s (the lower address), its high
// half slice s + 1.
template <typename T> struct Pair16;
template <> struct Pair16<__nv_bfloat16> {
	static __device__ __forceinline__ float lo(unsigned w) { return __uint_as_float(w << 16); }
	static __device__ __forceinline__ float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
	// pack rounds two opmath values to the dtype (nearest even), lo into
	// the low half.
	static __device__ __forceinline__ unsigned pack(float l, float h) {
		unsigned r;
		asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(h), "f"(l));
		return r;
	}
	// ext is the running extremum of both halves at once (E > 0 max, else
	// min), NaN where either value is NaN: ExtremumFwd::fold's result.
	template <int E> static __device__ __forceinline__ unsigned ext(unsigned a, unsigned b) {
		unsigned r;
		if (E > 0) {
			asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
		} else {
			asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
		}
		return r;
	}
	// ident is the forward identity (-inf for max, inf for min) in both halves.
	template <int E> static __device__ __forceinline__ unsigned ident() { return E > 0 ? 0xff80ff80u : 0x7f807f80u; }
};

// pair_fetch reads the valid words of a run as fetch_steps does (q at the
// run's first word in scan order, stepping by step), fill at the others.
template <int N>
__device__ __forceinline__ void pair_fetch(const unsigned* __restrict__ q, i64 step, int cnt, bool rev, unsigned fill,
		unsigned (&w)[N]) {
	if (cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step) w[i] = __ldg(q);
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i, q += step) w[i] = (rev ? i >= N - cnt : i < cnt) ? __ldg(q) : fill;
	}
}

// The forward values of both slices as one 8-byte slot: single-copy
// atomic, so a reader sees both or all ones (slot_bits never makes a half
// all ones).
__device__ __forceinline__ unsigned long long pair_slot_bits(float2 v) {
	return (unsigned long long)slot_bits(v.x) | (unsigned long long)slot_bits(v.y) << 32;
}
__device__ __forceinline__ float2 pair_slot_val(unsigned long long b) {
	return make_float2(__uint_as_float((unsigned)b), __uint_as_float((unsigned)(b >> 32)));
}

// pair_fwd_lookback is fwd_lookback (ScanChain<true>) for both slices of
// a lane at once: the same walk, values and folds per slice.
template <typename Op>
__device__ __forceinline__ float2 pair_fwd_lookback(unsigned char* ws, const ScanLayout& L, i64 c, i64 s, bool has,
		float2 tot) {
	const float id = Op::template fwd_identity<float>();
	float2 v = make_float2(id, id);
	if (!has) return v;
	volatile unsigned long long* agg = reinterpret_cast<volatile unsigned long long*>(reinterpret_cast<float*>(ws + L.ws_fwd) + s);
	volatile unsigned long long* incl = reinterpret_cast<volatile unsigned long long*>(reinterpret_cast<float*>(ws + L.ws_incl) + s);
	const i64 row = L.nslices >> 1;  // slots of a tile row
	const bool last = c + 1 == L.chunks;  // nobody reads the last tile
	if (c > 0 && !last) agg[c * row] = pair_slot_bits(tot);
	if (c > 0) {
		i64 d = c - 1;
		for (;;) {
			const unsigned long long b = incl[d * row];
			if (b != ~0ULL) {
				v = pair_slot_val(b);
				break;
			}
			if (d > 0 && agg[d * row] != ~0ULL) {
				--d;
			} else {
				__nanosleep(32);
			}
		}
		for (i64 e = d + 1; e < c; ++e) {
			const float2 a = pair_slot_val(agg[e * row]);
			v = make_float2(Op::fwd_combine(v.x, a.x), Op::fwd_combine(v.y, a.y));
		}
	}
	if (!last) incl[c * row] = pair_slot_bits(make_float2(Op::fwd_combine(v.x, tot.x), Op::fwd_combine(v.y, tot.y)));
	return v;
}

// pair_valid: bit i set for the valid indices of a run (see ScanRun).
__device__ __forceinline__ unsigned pair_valid(int cnt, bool rev) {
	const int lo = rev ? SCAN_PAIR_ITEMS - cnt : 0, hi = rev ? SCAN_PAIR_ITEMS : cnt;
	const unsigned below_hi = hi >= 32 ? 0xffffffffu : (1u << hi) - 1u;
	const unsigned below_lo = lo >= 32 ? 0xffffffffu : (1u << lo) - 1u;
	return below_hi & ~below_lo;
}

__device__ __forceinline__ unsigned pair_opaque(unsigned m) {
	unsigned r;
	asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(m));
	return r;
}
#endif

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_colpair(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	typedef Pair16<T> P;
	constexpr int E = ExtSign<Op>::value;
	constexpr int N = SCAN_PAIR_ITEMS;
	static_assert(E != 0 && sizeof(T) == 2, "colpair serves the 16-bit cummax and cummin");
	__shared__ float2 s_fwd[SCAN_WARPS][32];
	__shared__ float2 s_pre[SCAN_WARPS][32];
	__shared__ float4 s_aff[SCAN_WARPS][32];  // the two slices' maps: (a, u, a, u)
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const bool rev = L.reverse != 0;
	// Tickets as in the col kernel: fill blocks, tiles, fix blocks.
	i64 t = scan_take(ws, L.ws_fill, L.fillers);
	if (t < 0) return;
	bool ready = (t & SCAN_READY) != 0;
	t &= ~SCAN_READY;
	if (t >= L.chunks * L.units) {
		scan_ws_wait(ws, L, ready);
		scan_ext_fix<T, Op, true>(dx, ws, L, t - L.chunks * L.units);
		return;
	}
	const i64 c = bc_div(t, L.tmagic, L.tshift);  // tile row, in scan order
	const i64 unit = t - c * L.units;
	const i64 q = rev ? L.chunks - 1 - c : c;  // its place along the axis
	const i64 s = unit * 64 + 2 * lane;        // nslices is even
	const bool has = s < L.nslices;
	const i64 tile = (i64)SCAN_WARPS * N;
	const i64 tk0 = q * tile;
	const i64 tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
	const i64 k0 = tk0 + (i64)warp * N;
	int cnt = 0;
	if (has && k0 < tk1) cnt = (int)((k0 + N < tk1 ? k0 + N : tk1) - k0);
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	unsigned gw[N], xw[N];
	{
		// Word strides (the launcher checks that they are even), from the
		// run's first element in scan order.
		const i64 sg = L.astride[0] >> 1, sx = L.astride[1] >> 1;
		const unsigned* qg = reinterpret_cast<const unsigned*>(dy + off[0] + k0 * L.astride[0]);
		const unsigned* qx = reinterpret_cast<const unsigned*>(x + off[1] + k0 * L.astride[1]);
		pair_fetch<N>(qg + (rev ? (N - 1) * sg : 0), rev ? -sg : sg, cnt, rev, 0u, gw);
		pair_fetch<N>(qx + (rev ? (N - 1) * sx : 0), rev ? -sx : sx, cnt, rev, P::template ident<E>(), xw);
	}
	// The run's forward totals, then the state before the tile (warp 0's
	// look-back) and before each warp's run (s_pre), as the col kernel.
	// A tree rather than a chain: the extremum is exact in any order.
	unsigned mt;
	{
		unsigned r[N];
#pragma unroll
		for (int i = 0; i < N; ++i) r[i] = xw[i];
#pragma unroll
		for (int h = 1; h < N; h *= 2)
#pragma unroll
			for (int i = 0; i + h < N; i += 2 * h) r[i] = P::template ext<E>(r[i], r[i + h]);
		mt = r[0];
	}
	const float2 tot = make_float2(P::lo(mt), P::hi(mt));
	s_fwd[warp][lane] = tot;
	__syncthreads();
	if (warp == 0) {
		float2 bt = s_fwd[0][lane];
		for (int w = 1; w < SCAN_WARPS; ++w) {
			const float2 o = s_fwd[w][lane];
			bt = make_float2(Op::fwd_combine(bt.x, o.x), Op::fwd_combine(bt.y, o.y));
		}
		scan_ws_wait(ws, L, ready);
		float2 p = pair_fwd_lookback<Op>(ws, L, c, s, has, bt);
#pragma unroll
		for (int i = 0; i < SCAN_WARPS; ++i) {
			const int w = rev ? SCAN_WARPS - 1 - i : i;
			s_pre[w][lane] = p;
			const float2 o = s_fwd[w][lane];
			p = make_float2(Op::fwd_combine(p.x, o.x), Op::fwd_combine(p.y, o.y));
		}
	}
	__syncthreads();
	float f0 = s_pre[warp][lane].x, f1 = s_pre[warp][lane].y;
	// quiet: no run of the warp has a take-over in either slice.
	const bool quiet = __all_sync(0xffffffffu, cnt == 0 || (!Op::take(f0, tot.x) && !Op::take(f1, tot.y)));
	unsigned cm0 = 0u, cm1 = 0u;  // bit i: c_i (a_i = 1 - c_i), per slice
	float u0 = 0.f, u1 = 0.f;
	if (quiet) {
#pragma unroll
		for (int i = N - 1; i >= 0; --i) {
			u0 = P::lo(gw[i]) + u0;
			u1 = P::hi(gw[i]) + u1;
		}
	} else {
#pragma unroll
		for (int i = 0; i < N; ++i) {
			const float a = P::lo(xw[i]), b = P::hi(xw[i]);
			if (Op::take(f0, a)) cm0 |= 1u << i;
			if (Op::take(f1, b)) cm1 |= 1u << i;
			f0 = Op::fwd_combine(f0, a);
			f1 = Op::fwd_combine(f1, b);
		}
		const unsigned vm = pair_valid(cnt, rev);
		cm0 &= vm;
		cm1 &= vm;
#pragma unroll
		for (int i = N - 1; i >= 0; --i) {
			u0 = (cm0 >> i & 1u) ? 0.f : P::lo(gw[i]) + u0;
			u1 = (cm1 >> i & 1u) ? 0.f : P::hi(gw[i]) + u1;
		}
	}
	s_aff[warp][lane] = make_float4(cm0 == 0u ? 1.f : 0.f, u0, cm1 == 0u ? 1.f : 0.f, u1);
	__syncthreads();
	if (warp == 0 && has) {
		// The tile's maps, for scan_ext_fix.
		Aff<float> m0 = aff_identity<float>(), m1 = aff_identity<float>();
		for (int i = 0; i < SCAN_WARPS; ++i) {
			const float4 a = s_aff[rev ? i : SCAN_WARPS - 1 - i][lane];
			m0 = compose<Op>(Aff<float>{a.x, a.y}, m0);
			m1 = compose<Op>(Aff<float>{a.z, a.w}, m1);
		}
		Aff<float>* agg = reinterpret_cast<Aff<float>*>(ws + L.ws_agg) + c * L.nslices + s;
		slot_st(agg, m0);
		slot_st(agg + 1, m1);
	}
	// V after this warp (V after the tile taken as 0); later: a warp
	// downstream has a take-over.
	float v0 = 0.f, v1 = 0.f;
	bool later0 = false, later1 = false;
	for (int j = 0; j < SCAN_WARPS; ++j) {
		const int w = rev ? j : SCAN_WARPS - 1 - j;
		if (rev ? w >= warp : w <= warp) break;
		const float4 a = s_aff[w][lane];
		v0 = apply<Op>(Aff<float>{a.x, a.y}, v0);
		v1 = apply<Op>(Aff<float>{a.z, a.w}, v1);
		later0 = later0 | (a.x == 0.f);
		later1 = later1 | (a.z == 0.f);
	}
	// dx, packed into gw; the tile's last take-over k* of a slice gets its
	// record and is left out of the store (scan_ext_fix stores it).
	const int is0 = has && cm0 != 0u && !later0 ? 31 - __clz(cm0) : -1;
	const int is1 = has && cm1 != 0u && !later1 ? 31 - __clz(cm1) : -1;
	if (quiet) {
#pragma unroll
		for (int i = 0; i < N; ++i) gw[i] = 0u;
	} else {
		const unsigned b0 = pair_opaque(cm0), b1 = pair_opaque(cm1);
		float p0 = 0.f, p1 = 0.f;
#pragma unroll
		for (int i = N - 1; i >= 0; --i) {
			const float s0 = P::lo(gw[i]) + v0, s1 = P::hi(gw[i]) + v1;
			const bool t0 = (b0 >> i & 1u) != 0u, t1 = (b1 >> i & 1u) != 0u;
			const float d0 = t0 ? s0 : 0.f, d1 = t1 ? s1 : 0.f;
			v0 = t0 ? 0.f : s0;
			v1 = t1 ? 0.f : s1;
			if (i == is0) p0 = d0;
			if (i == is1) p1 = d1;
			gw[i] = P::pack(d0, d1);
		}
		FixRec<float>* fix = reinterpret_cast<FixRec<float>*>(ws + L.ws_fix) + c * L.nslices + s;
		if (is0 >= 0) slot_st(fix, p0, (int)((rev ? k0 + (N - 1 - is0) : k0 + is0) - tk0));
		if (is1 >= 0) slot_st(fix + 1, p1, (int)((rev ? k0 + (N - 1 - is1) : k0 + is1) - tk0));
	}
	scan_slice_offsets(L, has ? s : 0, off);
	const i64 sd = L.astride[3] >> 1;
	unsigned* qd = reinterpret_cast<unsigned*>(dx + off[3] + k0 * L.astride[3]) + (rev ? (N - 1) * sd : 0);
	const i64 step = rev ? -sd : sd;
	if (is0 < 0 && is1 < 0 && cnt == N) {
#pragma unroll
		for (int i = 0; i < N; ++i, qd += step) *qd = gw[i];
	} else {
		const unsigned vm = pair_valid(cnt, rev);
#pragma unroll
		for (int i = 0; i < N; ++i, qd += step) {
			if ((vm >> i & 1u) == 0u) continue;
			if (i == is0 || i == is1) {
				unsigned short* h = reinterpret_cast<unsigned short*>(qd);
				if (i != is0) h[0] = (unsigned short)gw[i];
				if (i != is1) h[1] = (unsigned short)(gw[i] >> 16);
			} else {
				*qd = gw[i];
			}
		}
	}
#endif
}
