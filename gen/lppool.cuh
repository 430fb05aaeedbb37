// LP pool 1d/2d backward (torch.nn.functional.lp_pool1d/lp_pool2d): given
// the saved input x [N, C, H, W], the saved output y [N, C, Ho, Wo] and dy,
// write dx [N, C, H, W]. A 1d pool is the 2d pool with H = 1, kh = sh = 1.
// Semantics are PyTorch's autograd through its composite forward
// (shared/SEMANTICS.md 5): no padding; window w's in-bounds count c_w
// divides (ceil-mode partial windows are scaled by K/c_w, K = kh*kw);
//
//   coef_w = y_w == 0 ? 0 : dy_w * (K/c_w) * y_w^(1-p)
//   dx_i   = x_i^(p-1) * Σ_{w∋i} coef_w
//
// The select discards a NaN or inf dy of a zero window (PyTorch's relu
// mask); the window sum comes before the x factor as in avg_pool's
// backward, so a cell in no window gets 0*x^(p-1) (0 unless x^(p-1) is NaN
// or inf). Negative x with a non-integer p gives NaN (x^(p-1) is NaN).
//
// Gather formulation: each cell sums the windows that contain it
// (oh*sh <= i < oh*sh + kh, likewise along W), so dx is written exactly once
// per cell, deterministically, with no atomics and no zeroing by the
// caller. A block owns a tile: tr input rows (consecutive in N*C*H order)
// by a segment of tu work units along W, a unit being a 16-byte pack of x
// and dx (lppool_pack) or one cell (lppool_cell, lppool_wide; any strides).
// Phase 1: the tu threads of a tile row compute, for every window column
// ow the segment touches, s[ow] = Σ over the window rows oh holding the
// input row of coef(oh, ow), consecutive threads on consecutive ow (y and dy
// read coalesced), and keep s in shared memory. Phase 2: each thread sums s
// over the window columns holding each of its cells. A coefficient thus
// costs one divide or pow per input row of its window, not one per cell.
// lppool_wide takes the window columns in passes when a tile row's share of
// shared memory cannot hold them all. Row and tile indices are split with
// multiply-high division (lp_div, lp_div32), never a hardware divide.
#pragma once
#include "common.cuh"

// LpPoolLayout is passed by value (mirrored by lpLayout in ops/lppool.go).
struct LpPoolLayout {
	i64 base;                // first tile of this launch
	i64 total;               // tiles
	i64 rows;                // N*C*H input rows
	i64 channels;            // C, to split a row's n*C + c; 0: every tensor addresses nc*stride_c
	unsigned long long a_magic, h_magic, c_magic;  // lp_div by segs, by H, by channels
	i64 stride[4][4];        // x, y, dy, dx: strides of n, c, h, w in elements
	double f_col, f_row, f_corner;  // K/c_w of the last window column, row, and both (1 when full)
	float f_col32, f_row32, f_corner32, pad32_;  // the same rounded to float, for float opmath
	int H, W, Ho, Wo;        // input and output spatial dims
	int kh, kw, sh, sw;
	int a_shift, h_shift, c_shift;
	int segs;                // segments per row group
	int tu;                  // threads (units) per tile row
	int tr;                  // rows per tile
	int nw_max;              // shared-memory slots of a tile row: window columns per pass
	int sw_shift, sh_shift, tu_shift;
	unsigned sw_magic, sh_magic, tu_magic;  // lp_div32 by sw, sh and tu
	int pad_;
};
static_assert(sizeof(LpPoolLayout) == 312, "LpPoolLayout must match ops/lppool.go");

// lp_div is floor(n / d) for 0 <= n < 2^62 without a 64-bit division: the
// launcher gives magic = ceil(2^(62+l) / d) and shift = l - 2 with
// 2^(l-1) < d <= 2^l (Granlund-Montgomery), or magic = 0 and shift =
// log2(d) for a power of two.
__device__ __forceinline__ i64 lp_div(i64 n, unsigned long long magic, int shift) {
	const unsigned long long u = (unsigned long long)n;
	return (i64)((magic ? __umul64hi(u, magic) : u) >> shift);
}

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

// lp_round stores an opmath value: from_op, except bf16, which rounds to
// nearest even with integer ops (compute_70 has no bf16 convert; NaN
// becomes the canonical 0x7fff, as __float2bfloat16_rn).
template <typename T> __device__ __forceinline__ T lp_round(typename OpMath<T>::type v) { return from_op<T>(v); }
template <> __device__ __forceinline__ __nv_bfloat16 lp_round<__nv_bfloat16>(float v) {
	const unsigned u = __float_as_uint(v);
	const unsigned short h = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fff : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	__nv_bfloat16_raw r;
	r.x = h;
	return __nv_bfloat16(r);
}

// LpP1: p == 1. y_w^0 = x^0 = 1, so coef_w = dy_w * (K/c_w) and
// dx_i = Σ coef_w (y may be negative; y == 0 still selects 0).
struct LpP1 {
	template <typename M> __device__ static M coef(M g, M f, M, M) { return g * f; }
	template <typename M> __device__ static M xpow(M, M) { return M(1); }
};

// LpP2: p == 2. coef_w = dy_w * (K/c_w) / y_w and dx_i = x_i * Σ coef_w.
struct LpP2 {
	template <typename M> __device__ static M coef(M g, M f, M y, M) { return lp_fdiv(g * f, y); }
	template <typename M> __device__ static M xpow(M x, M) { return x; }
};

// LpGeneral: any finite p > 0. coef_w = dy_w * (K/c_w) * y_w^(1-p) and
// dx_i = x_i^(p-1) * Σ coef_w, with precise pow (pm1 = p - 1 rounded once
// from double): x < 0 with non-integer p - 1 gives NaN, x == 0 with p < 1
// gives inf, as PyTorch.
struct LpGeneral {
	template <typename M> __device__ static M coef(M g, M f, M y, M pm1) { return (g * f) * bc_pow(y, -pm1); }
	template <typename M> __device__ static M xpow(M x, M pm1) { return bc_pow(x, pm1); }
};

// lp_row locates input row `row` (of N*C*H): its x and dx rows, its (n, c)
// planes of y and dy, and the window rows [oh_lo, oh_hi] holding it
// (oh*sh <= i < oh*sh + kh; empty when oh_lo > oh_hi).
template <typename T>
__device__ __forceinline__ void lp_row(const LpPoolLayout& L, i64 row, const T* x, const T* y, const T* dy, T* dx,
		const T*& xr, T*& dxr, const T*& yp, const T*& dyp, int& oh_lo, int& oh_hi) {
	i64 nc;
	int i;
	if (L.H == 1) {
		nc = row;
		i = 0;
	} else {
		nc = lp_div(row, L.h_magic, L.h_shift);
		i = (int)(row - nc * L.H);
	}
	i64 n = 0, c = nc;
	if (L.channels != 0) {
		n = lp_div(nc, L.c_magic, L.c_shift);
		c = nc - n * L.channels;
	}
	xr = x + (n * L.stride[0][0] + c * L.stride[0][1] + i * L.stride[0][2]);
	dxr = dx + (n * L.stride[3][0] + c * L.stride[3][1] + i * L.stride[3][2]);
	yp = y + (n * L.stride[1][0] + c * L.stride[1][1]);
	dyp = dy + (n * L.stride[2][0] + c * L.stride[2][1]);
	oh_lo = i < L.kh ? 0 : lp_div32(i - L.kh, L.sh_magic, L.sh_shift) + 1;
	oh_hi = min(lp_div32(i, L.sh_magic, L.sh_shift), L.Ho - 1);
}

// lp_factors gives K/c_w in opmath for the windows of row oh: f_in for all
// but the last column, f_end for the last (only the last window row or
// column can be partial).
__device__ __forceinline__ void lp_factors(const LpPoolLayout& L, int oh, float& f_in, float& f_end) {
	const bool last_row = oh == L.Ho - 1;
	f_in = last_row ? L.f_row32 : 1.0f;
	f_end = last_row ? L.f_corner32 : L.f_col32;
}
__device__ __forceinline__ void lp_factors(const LpPoolLayout& L, int oh, double& f_in, double& f_end) {
	const bool last_row = oh == L.Ho - 1;
	f_in = last_row ? L.f_row : 1.0;
	f_end = last_row ? L.f_corner : L.f_col;
}

// lp_windows gives the window columns [ow_lo, ow_hi] that hold a cell of
// [j0, j1]: ow*sw <= j1 and ow*sw + kw > j0.
__device__ __forceinline__ void lp_windows(const LpPoolLayout& L, int j0, int j1, int& ow_lo, int& ow_hi) {
	ow_lo = j0 < L.kw ? 0 : lp_div32(j0 - L.kw, L.sw_magic, L.sw_shift) + 1;
	ow_hi = min(lp_div32(j1, L.sw_magic, L.sw_shift), L.Wo - 1);
}

// lp_pin makes the compiler compute p where it stands: it would otherwise
// rematerialize the 64-bit address arithmetic at every use.
template <typename P> __device__ __forceinline__ void lp_pin(P*& p) { asm volatile("" : "+l"(p)); }

// lp_prefetch asks for the line holding p to be brought into L2.
__device__ __forceinline__ void lp_prefetch(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Dynamic shared memory of the tiled kernels (tr * nw_max opmath values).
extern __shared__ double lp_smem[];

// lp_phase1 fills s[ow] for the window columns [cb, ce] of a tile row:
// Σ over the window rows oh_lo..oh_hi holding the input row of coef(oh, ow)
// (0 when there are none), window row by window row, B columns a step with
// their y and dy loads issued before any arithmetic.
template <typename T, typename Op, int V, int B>
__device__ __forceinline__ void lp_phase1(const LpPoolLayout& L, const T* yp, const T* dyp, int oh_lo, int oh_hi,
		int cb, int ce, int u, typename OpMath<T>::type* s, typename OpMath<T>::type pm1) {
	typedef typename OpMath<T>::type M;
	if (oh_lo > oh_hi) {
#pragma unroll 1
		for (int ow = cb + u; ow <= ce; ow += L.tu) s[ow] = M(0);
	}
#pragma unroll 1
	for (int oh = oh_lo; oh <= oh_hi; ++oh) {
		const bool first = oh == oh_lo;
		M f_in, f_end;
		lp_factors(L, oh, f_in, f_end);
		const T* yr = yp + oh * L.stride[1][2];
		const T* dyr = dyp + oh * L.stride[2][2];
		lp_pin(yr);
		lp_pin(dyr);
#pragma unroll 1
		for (int ow = cb + u; ow <= ce; ow += B * L.tu) {
			M yv[B], gv[B];
#pragma unroll
			for (int k = 0; k < B; ++k) {
				const int o = ow + k * L.tu;
				yv[k] = M(0);
				gv[k] = M(0);
				if (o <= ce) {
					// The pack variant has y and dy dense along W.
					yv[k] = to_op(V > 1 ? yr[o] : yr[o * L.stride[1][3]]);
					gv[k] = to_op(V > 1 ? dyr[o] : dyr[o * L.stride[2][3]]);
				}
			}
#pragma unroll
			for (int k = 0; k < B; ++k) {
				const int o = ow + k * L.tu;
				if (o <= ce) {
					const M f = o == L.Wo - 1 ? f_end : f_in;
					const M cf = yv[k] == M(0) ? M(0) : Op::coef(gv[k], f, yv[k], pm1);
					s[o] = first ? cf : s[o] + cf;
				}
			}
		}
	}
}

// lp_phase2 adds to acc, for cells j0 .. j0+V-1, s over the window columns
// in [cb, ce] holding each cell, in groups of up to 4 cells (fewer window x
// cell tests than 8 at once).
template <typename M, int V>
__device__ __forceinline__ void lp_phase2(const LpPoolLayout& L, int j0, int cb, int ce, const M* s, M (&acc)[V]) {
	constexpr int G = V < 4 ? V : 4;
#pragma unroll
	for (int g0 = 0; g0 < V; g0 += G) {
		int ow_lo, ow_hi;
		lp_windows(L, j0 + g0, j0 + g0 + G - 1, ow_lo, ow_hi);
		ow_lo = max(ow_lo, cb);
		ow_hi = min(ow_hi, ce);
#pragma unroll 2
		for (int ow = ow_lo; ow <= ow_hi; ++ow) {
			const M cf = s[ow];
			// Cell j0 + g0 + e lies in the window when 0 <= j0 + g0 + e - ow*sw < kw.
			const int d = j0 + g0 - ow * L.sw;
#pragma unroll
			for (int e = 0; e < G; ++e)
				if ((unsigned)(d + e) < (unsigned)L.kw) acc[g0 + e] += cf;
		}
	}
}

// lp_tiled is the tiled kernel with V cells per unit: V = 16/sizeof(T)
// when x and dx rows are dense, 16-byte aligned packs (W % V == 0) and y
// and dy rows have unit stride along W; else 1 with any strides. WIDE:
// the segment's window columns exceed a tile row's nw_max slots of shared
// memory and are taken nw_max at a time, the sums carried in registers.
// Phase 1 batches 4 columns (in double 2, or 1 for WIDE: fewer registers).
template <typename T, typename Op, int V, bool WIDE>
__device__ __forceinline__ void lp_tiled(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	typedef typename OpMath<T>::type M;
	const M pm1 = M(p - 1.0);
	const i64 b = L.base + blockIdx.x;
	const i64 rg = lp_div(b, L.a_magic, L.a_shift);
	const int seg = (int)(b - rg * L.segs);
	const int r = lp_div32((int)threadIdx.x, L.tu_magic, L.tu_shift);
	const int u = (int)threadIdx.x - r * L.tu;
	const i64 row = rg * L.tr + r;
	const bool in_row = r < L.tr && row < L.rows;
	const int c0 = seg * (L.tu * V);
	const int j0 = c0 + u * V;
	const bool active = in_row && j0 < L.W;
	int ow0, ow_end;
	lp_windows(L, c0, min(c0 + L.tu * V, L.W) - 1, ow0, ow_end);
	M* srow = reinterpret_cast<M*>(lp_smem) + r * L.nw_max;
	const T *xr = x, *yp = y, *dyp = dy;
	T* dxr = dx;
	int oh_lo = 0, oh_hi = -1;
	if (in_row) lp_row(L, row, x, y, dy, dx, xr, dxr, yp, dyp, oh_lo, oh_hi);
	// Packs of x are prefetched now and loaded after phase 1, so that their
	// DRAM latency overlaps phase 1 without holding registers across it; a
	// single cell is loaded now (one register instead of its row pointer).
	T xs = T();
	if (active) {
		if (V > 1)
			lp_prefetch(xr + j0);
		else
			xs = xr[j0 * L.stride[0][3]];
	}
	M acc[V];
#pragma unroll
	for (int e = 0; e < V; ++e) acc[e] = M(0);
	constexpr int B = sizeof(M) == 8 ? (WIDE ? 1 : 2) : 4;
	if (!WIDE) {
		if (in_row) lp_phase1<T, Op, V, B>(L, yp, dyp, oh_lo, oh_hi, ow0, ow_end, u, srow - ow0, pm1);
		__syncthreads();
		if (active) lp_phase2<M, V>(L, j0, ow0, ow_end, srow - ow0, acc);
	} else {
#pragma unroll 1
		for (int cb = ow0; cb <= ow_end; cb += L.nw_max) {
			const int ce = min(cb + L.nw_max - 1, ow_end);
			if (in_row) lp_phase1<T, Op, V, B>(L, yp, dyp, oh_lo, oh_hi, cb, ce, u, srow - cb, pm1);
			__syncthreads();
			if (active) lp_phase2<M, V>(L, j0, cb, ce, srow - cb, acc);
			__syncthreads();  // before the next chunk overwrites s
		}
	}
	if (active) {
		if (V > 1) {
			const uint4 xraw = __ldg(reinterpret_cast<const uint4*>(xr + j0));
			Pack<T> px, pd;
			memcpy(&px, &xraw, 16);
#pragma unroll
			for (int e = 0; e < V; ++e) pd.v[e] = lp_round<T>(acc[e] * Op::xpow(to_op(px.v[e]), pm1));
			store_pack(dxr + j0, pd);
		} else {
			dxr[j0 * L.stride[3][3]] = lp_round<T>(acc[0] * Op::xpow(to_op(xs), pm1));
		}
	}
}

// The family's kernel shapes (spec variants pack, cell, wide).
template <typename T, typename Op>
__device__ __forceinline__ void lppool_pack(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, Pack<T>::N, false>(x, y, dy, dx, p, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void lppool_cell(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, 1, false>(x, y, dy, dx, p, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void lppool_wide(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, 1, true>(x, y, dy, dx, p, L);
}
