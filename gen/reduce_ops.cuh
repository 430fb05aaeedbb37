#pragma once
// The reduce family's math: the launch constants, ReduceLayout, the
// statistics (RedAcc) and per-slice context (RedCtx), each op's formulas
// (RedSum ... RedStd), and the fast quotient for a pack (red_quot, red_elems).
#include "common.cuh"
// RED_BLOCK, RED_CLUSTER_BLOCKS, RED_STRIP_CLUSTER, RED_FLAT_LOCAL: the
// constants shared with the Go launchers, from the spec (gen/spec_consts.go).
#include "zconsts.cuh"

#define RED_SRANK (BC_MAX_RANK - 1)
// RED_FIX_BATCH: rows per lane whose loads red_fix_rows issues together.
#define RED_FIX_BATCH 4
// RedCache is the 16-byte packs of x a row-mapping thread keeps in
// registers between the statistics and the apply step (RED_CACHE_PACKS,
// RED_CACHE_PACKS_F64 for f64; the launcher's rowGeometry sizes its
// groups by the same generated constants).
template <typename T> struct RedCache { static constexpr int packs = sizeof(T) == 8 ? RED_CACHE_PACKS_F64 : RED_CACHE_PACKS; };

enum { RED_ROW = 0, RED_COL = 1 };
enum { RED_FUSED = 0, RED_STATS = 1, RED_APPLY = 2, RED_ONE = 3, RED_CLUSTER = 4 };
// RED_CLUSTER_BLOCKS (gen/zconsts.cuh): blocks per thread block cluster of
// the cluster kernel, which cuts each split slice into that many chunks
// (redCluster in ops/zconsts.go).
// RED_CLUSTER_HMAX (gen/zconsts.cuh): the cluster kernel's threads along k
// per block (the other col kernels take at most 8).
// RED_PHASE_SEG_STATS: the seg kernel's statistics pass (reduce_seg.cuh).
enum { RED_PHASE_APPLY = 0, RED_PHASE_TOTAL = 1, RED_PHASE_FLAT = 2, RED_PHASE_SEG_STATS = 3 };

// ReduceLayout, the kernels' last parameter: from the spec (gen/spec_layouts.go).
#include "zlayouts.cuh"

// RedAcc is a slice's statistics: a = sum or product, z = a count
// (unsigned: a slice of up to 2^32 - 1 elements counts exactly). It is
// also the workspace entry (8 bytes for float opmath, 16 for double).
template <typename M> struct RedAcc {
	M a;
	unsigned z;
};

// RedCtx is what the elementwise step needs of a slice (per-op meaning).
template <typename M> struct RedCtx {
	M p, q;
	int mode;
};

template <typename M> __device__ __forceinline__ RedAcc<M> red_acc(M a, unsigned z) {
	RedAcc<M> r;
	r.a = a;
	r.z = z;
	return r;
}

template <typename M> __device__ __forceinline__ RedCtx<M> red_ctx(M p, M q, int mode) {
	RedCtx<M> c;
	c.p = p;
	c.q = q;
	c.mode = mode;
	return c;
}

// RedNoStats is the base of the ops that need no per-slice statistics.
struct RedNoStats {
	static constexpr bool stats = false, provisional = false, batch = false, mend_mask = false, flat_regrid = false;
	static constexpr int flat_slots = 0;
	template <typename M> __device__ static RedAcc<M> init() { return red_acc(M(0), 0); }
	template <typename M> __device__ static RedAcc<M> assumed() { return red_acc(M(0), 0); }
	template <typename M> __device__ static void accum(RedAcc<M>&, M, M) {}
	template <typename M> __device__ static void combine(RedAcc<M>&, const RedAcc<M>&) {}
	template <typename M> __device__ static bool fix(const RedAcc<M>&) { return true; }
	template <typename M> __device__ static bool fix_chunk(const RedAcc<M>&, const RedAcc<M>&) { return true; }
	template <typename M> __device__ static bool wide(const RedAcc<M>&) { return false; }
};

// sum: y = Σx. dx = g.
struct RedSum : RedNoStats {
	static constexpr bool needs_x = false, needs_y = false;
	template <typename M> __device__ static RedCtx<M> slice(M g, M, const RedAcc<M>&, double, i64) {
		return red_ctx(g, M(0), 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M) { return c.p; }
};

// mean: y = Σx/N. dx = g*(1/N), with 1/N formed in opmath by the launcher
// (scale) and multiplied, as PyTorch's division by a scalar on CUDA.
struct RedMean : RedNoStats {
	static constexpr bool needs_x = false, needs_y = false;
	template <typename M> __device__ static RedCtx<M> slice(M g, M, const RedAcc<M>&, double scale, i64) {
		return red_ctx(g * M(scale), M(0), 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M) { return c.p; }
};

// amax/amin (one functor: the backward only compares with y):
// dx = (g/count)*mask, mask = (x == y), count = Σmask over the slice (a true
// division). Ties split g evenly; a NaN in the slice makes y NaN, so count
// is 0 and every element gets (g/0)*mask = NaN.
// Provisional: count == 1, where g/1*mask is bit-identical.
struct RedMaxMin {
	static constexpr bool needs_x = true, needs_y = true, stats = true, provisional = true, batch = false;
	// mend_mask: dx needs of x only its flag, x == y (see wide, and the
	// segs kernel's flags: RedSegsKeep).
	static constexpr bool mend_mask = true;
	// flat_regrid: the flat path's few slices need no redo from x (a slice
	// with no element equal to y is rewritten whole without x).
	static constexpr bool flat_regrid = false;
	// flat_slots: positions of elements equal to y the flat kernel records
	// per slice (red_flat_count), so that a slice with that few ties is
	// mended without reading x again.
	static constexpr int flat_slots = 4;
	template <typename M> __device__ static RedAcc<M> init() { return red_acc(M(0), 0); }
	template <typename M> __device__ static RedAcc<M> assumed() { return red_acc(M(0), 1); }
	template <typename M> __device__ static void accum(RedAcc<M>& a, M x, M y) { a.z += (x == y) ? 1 : 0; }
	template <typename M> __device__ static void combine(RedAcc<M>& a, const RedAcc<M>& b) { a.z += b.z; }
	template <typename M> __device__ static bool fix(const RedAcc<M>& a) { return a.z != 1; }
	// The flat path (red_flat_fix) mends a slice with more ties than
	// slots across the whole grid, from the mask of the elements equal to
	// y (mend_mask): each of them gets elem(slice, y), every other element
	// keeps its g*0.
	template <typename M> __device__ static bool wide(const RedAcc<M>& a) { return a.z > (unsigned)flat_slots; }
	// With count >= 2, a chunk holding no element equal to y keeps its
	// provisional g*0, the same bits as (g/count)*0; count 0 (y NaN, or
	// equal to no element) rewrites every chunk.
	template <typename M> __device__ static bool fix_chunk(const RedAcc<M>& tot, const RedAcc<M>& own) {
		return tot.z == 0 || own.z > 0;
	}
	template <typename M> __device__ static RedCtx<M> slice(M g, M y, const RedAcc<M>& a, double, i64) {
		return red_ctx(g / M(a.z), y, 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) {
		return c.p * ((x == c.q) ? M(1) : M(0));
	}
	// elem_flag is elem for an x whose flag (x == y) is f.
	template <typename M> __device__ static M elem_flag(const RedCtx<M>& c, bool f) { return c.p * (f ? M(1) : M(0)); }
};

// red_zero_quot is z/x for z = ±0 and x neither zero nor NaN: a zero
// whose sign is the signs' exclusive or, as IEEE division gives (x may be
// infinite or subnormal).
template <typename M> __device__ __forceinline__ M red_zero_quot(M z, M x) { return x < M(0) ? -z : z; }

// prod: y = Πx. Exact with zeros, per slice, never dividing by zero:
//   no zero:        dx = g*(y/x) with the saved y (PyTorch's order);
//   one zero at k:  dx_k = g*Π_{j!=k} x_j (product of the non-zeros, in
//                   opmath), every other dx = g*0;
//   two or more:    dx = g*0.
// (g*0 is 0 for finite g; NaN for a NaN or infinite g, as PyTorch.)
// Provisional: no zero.
struct RedProd {
	// batch: the col statistics loop issues a batch's loads first (see
	// red_col_tile); for the other ops that form is slower.
	static constexpr bool needs_x = true, needs_y = true, stats = true, provisional = true, batch = true;
	static constexpr bool mend_mask = false;  // see wide
	// flat_regrid: on the flat path a few long slices with one zero are
	// redone by the whole grid (red_flat_regrid), which forms the product
	// of the others.
	static constexpr bool flat_regrid = true;
	static constexpr int flat_slots = 0;
	template <typename M> __device__ static RedAcc<M> init() { return red_acc(M(1), 0); }
	template <typename M> __device__ static RedAcc<M> assumed() { return red_acc(M(1), 0); }
	template <typename M> __device__ static void accum(RedAcc<M>& a, M x, M) {
		if (x == M(0)) {
			++a.z;
		} else {
			a.a *= x;
		}
	}
	template <typename M> __device__ static void combine(RedAcc<M>& a, const RedAcc<M>& b) {
		a.a *= b.a;
		a.z += b.z;
	}
	template <typename M> __device__ static bool fix(const RedAcc<M>& a) { return a.z != 0; }
	template <typename M> __device__ static bool fix_chunk(const RedAcc<M>&, const RedAcc<M>&) { return true; }
	// The flat path (red_flat_fix) rewrites a slice with two or more zeros
	// whole across the grid, every dx g*0 (no mask: the provisional
	// g*(y/x) differs from it wherever x is negative, infinite or NaN).
	template <typename M> __device__ static bool wide(const RedAcc<M>& a) { return a.z >= 2; }
	template <typename M> __device__ static RedCtx<M> slice(M g, M y, const RedAcc<M>& a, double, i64) {
		if (a.z == 0) return red_ctx(g, y, 0);
		const M zero = g * M(0);
		return red_ctx(a.z == 1 ? g * a.a : zero, zero, a.z == 1 ? 1 : 2);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) {
		if (c.mode == 0) return c.p * (c.q / x);
		return (c.mode == 1 && x == M(0)) ? c.p : c.q;
	}
};

// RedZeroQuot<Op>::elem is Op::elem, but for prod y/x for y = ±0 (a
// product that underflows, or one in a slice whose zeros the flat kernel
// does not know yet) takes no division: ±0 by the signs alone
// (red_zero_quot) for x neither zero nor NaN, else NaN (0/0, 0/NaN), the
// same values as the division, whose slow path a zero dividend takes in
// every element of such a slice. The flat kernel takes it (RedFlatFast);
// the others keep Op::elem (the f32 row kernel would take 84 registers
// instead of 78: two blocks an SM instead of three).
// RedZeroQuot<Op>::whole(c) tells whether every element of a slice of
// context c takes that path (prod's y = ±0 with no zero counted).
template <typename Op> struct RedZeroQuot {
	template <typename M> __device__ static bool whole(const RedCtx<M>&) { return false; }
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) { return Op::elem(c, x); }
};
template <> struct RedZeroQuot<RedProd> {
	template <typename M> __device__ static bool whole(const RedCtx<M>& c) { return c.mode == 0 && c.q == M(0); }
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) {
		if (c.mode == 0 && c.q == M(0)) return c.p * (x == x && x != M(0) ? red_zero_quot(c.q, x) : M(NAN));
		return RedProd::elem(c, x);
	}
};

// RedWide<Op, M>::type is the opmath in which the paths that split a
// slice (the col and row statistics passes and their totals, the cluster
// kernel, the seg kernel, the flat path's redo of a few long slices) form
// its statistics:
// double for prod in float opmath, M otherwise. Float partial products of
// factors near 1 drift: a product of two factors on either side of 1 whose
// exact value lies just under a tie of the coarser grid above 1 always
// rounds down, and thread and block partials of a long slice stay near 1
// (the product of the others of a slice of 10^6 factors near 1 came out
// 1.5e-3 to 2.7e-3 low in float). A slice's sequential product leaves 1
// within a few factors and does not drift so. Partials in shared memory
// and in the workspace stay RedAcc<M> (red_narrow, RedPut: one rounding
// each, no products in float); they are combined in the wide type
// (red_widen). On false keeps M (the kernels that take a whole slice per
// tile, whose threads' runs are sequential: see red_col_tile,
// red_row_tile).
template <typename Op, typename M, bool On = true> struct RedWide {
	typedef M type;
};
template <> struct RedWide<RedProd, float, true> {
	typedef double type;
};

// RedConv<To>::conv(a) is a in opmath To; where a is in To already, a
// itself (no copy: an op whose RedWide type is M keeps the code of plain
// reads and assignments).
template <typename To> struct RedConv {
	template <typename From> __device__ __forceinline__ static RedAcc<To> conv(const RedAcc<From>& a) {
		return red_acc(To(a.a), a.z);
	}
	__device__ __forceinline__ static const RedAcc<To>& conv(const RedAcc<To>& a) { return a; }
};
// RedPut<M>::put(d, a) stores a in d, an entry in M (a plain assignment
// where a is in M; red_narrow's reference there gives other code for the
// stores of the row and col folds).
template <typename M> struct RedPut {
	template <typename A> __device__ __forceinline__ static void put(RedAcc<M>& d, const RedAcc<A>& a) {
		d = red_acc(M(a.a), a.z);
	}
	__device__ __forceinline__ static void put(RedAcc<M>& d, RedAcc<M> a) { d = a; }
};
template <typename M, typename W> __device__ __forceinline__ decltype(auto) red_narrow(const RedAcc<W>& a) {
	return RedConv<M>::conv(a);
}
template <typename W, typename M> __device__ __forceinline__ decltype(auto) red_widen(const RedAcc<M>& a) {
	return RedConv<W>::conv(a);
}

// vector 2-norm: y = sqrt(Σx²). dx = g*(x/y) with x/y replaced by 0 where
// y == 0 (PyTorch's masked_fill before the product: g*0, so NaN for a NaN
// or infinite g).
struct RedNorm2 : RedNoStats {
	static constexpr bool needs_x = true, needs_y = true;
	template <typename M> __device__ static RedCtx<M> slice(M g, M y, const RedAcc<M>&, double, i64) {
		return red_ctx(g, y, y == M(0) ? 1 : 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) {
		return c.p * (c.mode ? M(0) : x / c.q);
	}
};

// logsumexp: dx = g*exp(x - y). An all -inf slice (y = -inf) gives NaN;
// with y = +inf the +inf elements give NaN and the finite ones 0.
struct RedLogSumExp : RedNoStats {
	static constexpr bool needs_x = true, needs_y = true;
	template <typename M> __device__ static RedCtx<M> slice(M g, M y, const RedAcc<M>&, double, i64) {
		return red_ctx(g, y, 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) { return c.p * bc_exp(x - c.q); }
};

// var with correction c: dx = ((2/(N-c))*g)*(x - mean), mean = Σx/N
// accumulated in opmath. The factor comes from the launcher in double
// (scale) and has no special case: N == c gives +inf (so ±inf, or NaN where
// x == mean or g == 0), N < c a negative factor.
struct RedVar {
	static constexpr bool needs_x = true, needs_y = false, stats = true, provisional = false, batch = false;
	static constexpr bool mend_mask = false, flat_regrid = false;
	static constexpr int flat_slots = 0;
	template <typename M> __device__ static RedAcc<M> init() { return red_acc(M(0), 0); }
	template <typename M> __device__ static RedAcc<M> assumed() { return red_acc(M(0), 0); }
	template <typename M> __device__ static void accum(RedAcc<M>& a, M x, M) { a.a += x; }
	template <typename M> __device__ static void combine(RedAcc<M>& a, const RedAcc<M>& b) { a.a += b.a; }
	template <typename M> __device__ static bool fix(const RedAcc<M>&) { return true; }
	template <typename M> __device__ static bool fix_chunk(const RedAcc<M>&, const RedAcc<M>&) { return true; }
	template <typename M> __device__ static bool wide(const RedAcc<M>&) { return false; }
	template <typename M> __device__ static RedCtx<M> slice(M g, M, const RedAcc<M>& a, double scale, i64 k) {
		return red_ctx(M(scale) * g, a.a / M(k), 0);
	}
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x) { return c.p * (x - c.q); }
};

// std: y = sqrt(var). dx = var's formula with g replaced by g/(2y), which
// is set to 0 where y == 0 (a select: 0 even for a NaN g).
struct RedStd : RedVar {
	static constexpr bool needs_y = true;
	template <typename M> __device__ static RedCtx<M> slice(M g, M y, const RedAcc<M>& a, double scale, i64 k) {
		const M gs = (y == M(0)) ? M(0) : g / (y * M(2));
		return red_ctx(M(scale) * gs, a.a / M(k), 0);
	}
};

// red_quot(n, d, bad) is n/d without the exact division's slow-path
// branch: a reciprocal estimate (rcp.approx) refined once against the
// residual n - d*q0 (exact by fma), which gives the correctly rounded
// quotient except within about 2^-22 ulp of a rounding boundary (then its
// neighbour). That holds where d and the quotient are normal floats inside
// [2^-125, 2^125] and |n| is at least 2^-100, and with Z also for n = ±0
// with d in that range (the exact ±0: prod's y that underflows); anywhere
// else (zeros, subnormals, the ends of the range, inf, NaN) it sets bad
// and the caller redoes the whole pack with its exact form (red_elems; the
// flat kernel's RedZeroQuot, which takes no division for a zero n). Z
// costs a test in every element, so only the flat kernel's rows of a few
// slices take it (see red_flat_provisional).
template <bool Z = false> __device__ __forceinline__ float red_quot(float n, float d, bool& bad) {
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
	const float q0 = n * r;
	const float q = fmaf(fmaf(-d, q0, n), r, q0);
	const float an = fabsf(n), ad = fabsf(d), aq = fabsf(q);
	if (Z) {
		// A zero n with d in range: n*r is the exact ±0 (r is finite, of
		// d's sign), where the refinement could lose the sign of -0/d.
		const bool zero = n == 0.0f;
		bad = bad |
				!((ad >= 0x1p-125f) & (ad <= 0x1p125f) & (zero | ((an >= 0x1p-100f) & (aq >= 0x1p-125f) & (aq <= 0x1p125f))));
		return zero ? q0 : q;
	}
	bad = bad | !((ad >= 0x1p-125f) & (ad <= 0x1p125f) & (an >= 0x1p-100f) & (aq >= 0x1p-125f) & (aq <= 0x1p125f));
	return q;
}

// RedFast<Op, T>::elem is Op::elem with red_quot in place of its division
// where that is faster: prod's no-zero formula g*(y/x) for f16 and bf16 in
// the cached row path (a slice with a zero takes the exact path). There the
// exact division's branch in every element keeps ptxas from interleaving
// the elements; red_quot has none. The exact division stays for f32 (with
// red_quot ptxas gives its row kernel 83 registers, two blocks per SM
// instead of three), for prod's col statistics loop (slower with red_quot)
// and for norm2 (x/y: the exact division's own fast path is shorter than
// red_quot with its range checks).
template <typename Op, typename T, bool = Narrow<T>::value> struct RedFast {
	template <bool Z = false, typename M> __device__ static M elem(const RedCtx<M>& c, M x, bool&) { return Op::elem(c, x); }
};
template <typename T> struct RedFast<RedProd, T, true> {
	template <bool Z = false> __device__ static float elem(const RedCtx<float>& c, float x, bool& bad) {
		bad = bad | (c.mode != 0);
		return c.p * red_quot<Z>(c.q, x, bad);
	}
};

// RedFlatFast<Op, T>::elem is the flat kernel's fast form: RedFast's for
// f16 and bf16 (red_quot), RedZeroQuot's for the others; its exact form,
// where RedFast sets bad, is RedZeroQuot's.
template <typename Op, typename T, bool = Narrow<T>::value> struct RedFlatFast {
	template <bool Z = false, typename M> __device__ static M elem(const RedCtx<M>& c, M x, bool&) {
		return RedZeroQuot<Op>::elem(c, x);
	}
};
template <typename Op, typename T> struct RedFlatFast<Op, T, true> : RedFast<Op, T> {};

// red_elems sets r[i] = Op::elem(c, xv[i]) for a pack of N values: the
// fast form for all of them, then, only if one of them was out of its
// range, the exact form for the whole pack.
template <typename Op, typename M, typename T, int N>
__device__ __forceinline__ void red_elems(const T (&xv)[N], T (&r)[N], const RedCtx<M>& c) {
	bool bad = false;
#pragma unroll
	for (int i = 0; i < N; ++i) r[i] = from_op<T>(RedFast<Op, T>::elem(c, to_op(xv[i]), bad));
	if (bad) {
#pragma unroll
		for (int i = 0; i < N; ++i) r[i] = from_op<T>(Op::elem(c, to_op(xv[i])));
	}
}
