// Single-axis reduction backward: given dy and the forward output y (both in
// keepdim form: the input shape with the reduced axis set to 1) and the
// saved input x, write dx = dL/dx in the input shape. Semantics follow
// PyTorch's autograd formulas (docs/semantics.md, section 3). Every functor
// computes in opmath (float for f16/bf16/f32, double for f64); statistics
// accumulate in opmath and each dx is rounded once when stored.
//
// Iteration space. The launcher views the tensors as S slices of length k
// (k = the reduced axis): a slice is addressed by its index s over the
// remaining dims (sdim, merged and ordered by x's strides, outermost first)
// and a position j along the axis (kstride). Each slice is cut into
// nchunks chunks of `chunk` positions; one (slice, chunk) pair is a tile.
// Two mappings of threads to tiles, chosen by the launcher from x's strides:
//
//   row (the axis is x's fastest dim): `group` = G threads (a power of two,
//     1..256) share a tile and step along k, with 16-byte packs where x and
//     dx are contiguous along the axis and equally aligned; 256/G tiles
//     per block, tile t = s*nchunks + chunk.
//   col (an outer axis): a block is W = 256/H threads across slices by H =
//     `group` threads along k (H <= 8); the lanes of a warp take adjacent
//     slices, so they move coalesced across the inner dims, each lane V =
//     cvec adjacent slices (one 8- or 16-byte access) where x and dx are
//     contiguous across them. Tile t = (slice block)*nchunks + chunk.
//
// Ops with per-slice statistics (max/min: the tie count; prod: the zero
// count and the product of the non-zeros; var/std: the sum) reduce them
// once per slice over the threads of the tile (shuffles, then shared
// memory, in a fixed order: deterministic and bit-stable) and apply the
// elementwise formula afterwards, so no work is O(n*k).
//   - nchunks == 1 (the row or col kernel alone, one pass): a row tile
//     whose packs fit in RedCache registers per thread reads x once;
//     otherwise x is streamed for the statistics and again for dx (L1/L2
//     serve the second read of short slices).
//   - nchunks > 1 (few slices, long axis: the stats kernel, then the apply
//     kernel twice): the stats kernel writes each tile's partial statistics
//     to the workspace (row: ws[s*nchunks + c]; col: ws[c*S + s]); the
//     apply kernel's first launch (red_total) combines each slice's partials
//     once into ws[S*nchunks + s] (and finishes the provisional ops), its
//     second applies. That one walks the tiles in reverse (L.reverse) so its
//     first reads hit what the stats kernel left in L2. For var/std along
//     an outer axis the launcher may instead take the one kernel (RED_ONE,
//     red_one_totals): a single launch whose tiles keep x in shared memory
//     while their slice block's partials complete. Ops without statistics
//     need no split pass: the row and col kernels take any nchunks.
// max/min and prod are "provisional": whenever x is streamed for the
// statistics, dx is also written assuming the common case (one maximum; no
// zero), which gives bit-identical results when it holds; the pass that
// knows the statistics rewrites only the slices where it does not hold
// (fix()); on split slices red_total rewrites only the chunks whose
// provisional dx can be wrong (fix_chunk(): for max/min, those holding an
// element equal to y). So those ops read x once in the common case on
// every path. On dense operands whose slices would be split the launcher
// takes the flat kernel for them instead (reduce_flat, red_flat_fix).
#pragma once
#include "common.cuh"

#define RED_BLOCK 256
#define RED_SRANK (BC_MAX_RANK - 1)
// RED_FIX_BATCH: rows per lane whose loads red_total's rewrite issues together.
#define RED_FIX_BATCH 4
// RedCache is the 16-byte packs of x a row-mapping thread keeps in
// registers between the statistics and the apply step: 4 packs (16 values
// of f32, 32 of f16/bf16: 64 bytes in flight per thread), 2 of f64.
template <typename T> struct RedCache { static constexpr int packs = sizeof(T) == 8 ? 2 : 4; };

enum { RED_ROW = 0, RED_COL = 1 };
enum { RED_FUSED = 0, RED_STATS = 1, RED_APPLY = 2, RED_ONE = 3, RED_CLUSTER = 4 };
// RED_CLUSTER_BLOCKS: blocks per thread block cluster of the cluster
// kernel, which cuts each split slice into that many chunks (redCluster in
// the spec).
#define RED_CLUSTER_BLOCKS 2
// RED_CLUSTER_HMAX: the cluster kernel's most threads along k per block
// (the other col kernels take at most 8; the launcher gives it 32).
#define RED_CLUSTER_HMAX 32
enum { RED_PHASE_APPLY = 0, RED_PHASE_TOTAL = 1, RED_PHASE_FLAT = 2 };

// ReduceLayout is passed by value (mirrored by reduceLayout in ops/reduce.go).
struct ReduceLayout {
	i64 k;        // reduced axis length (>= 1)
	i64 slices;   // S = numel / k
	i64 chunk;    // positions per chunk (k when nchunks == 1)
	i64 nchunks;  // chunks per slice
	i64 tiles;    // row: S*nchunks; col: ceil(S/W)*nchunks
	double scale; // mean: 1/N (in opmath); var/std: 2/(N - correction)
	int mapping;  // RED_ROW or RED_COL
	int group;    // row: threads per tile G; col: threads along k H
	int vec;      // row: x and dx step 1 along the axis (packs where aligned)
	int reverse;  // walk the tiles last to first
	int srank;    // slice dims in use, 0..RED_SRANK
	int cvec;     // col: slices per thread: RedColVec<T, Op>, half of it, or 1
	int phase;    // apply kernel: RED_PHASE_TOTAL or RED_PHASE_APPLY
	int pad_;
	i64 sdim[RED_SRANK];          // slice dims, outermost first
	i64 sstride[4][RED_SRANK];    // x, y, dy, dx strides of the slice dims
	i64 kstride[2];               // x, dx strides along the axis
	i64 vstride[2];               // y, dy strides of the innermost slice dim
	// The flat kernel's (x viewed as [O, k, I], all operands dense; the
	// strip kernel takes fip = I and fmagic[0] dividing by its strips per
	// outer index, see reduce_strip):
	i64 fpacks;                   // 16-byte packs of x and dx
	i64 fip;                      // I/N packs across the inner dims, 0 when I == 1
	unsigned long long fmagic[2]; // bc_div by the packs of one outer index, by fip
	int fshift[2];
};
static_assert(sizeof(ReduceLayout) == 432, "ReduceLayout must match ops/reduce.go");

// RedAcc is a slice's statistics: a = sum or product, z = a count. It is
// also the workspace entry (8 bytes for float opmath, 16 for double).
template <typename M> struct RedAcc {
	M a;
	int z;
};

// RedCtx is what the elementwise step needs of a slice (per-op meaning).
template <typename M> struct RedCtx {
	M p, q;
	int mode;
};

template <typename M> __device__ __forceinline__ RedAcc<M> red_acc(M a, int z) {
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
	static constexpr bool stats = false, provisional = false, batch = false, mend_mask = false;
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
	static constexpr bool mend_mask = true;  // see wide
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
	template <typename M> __device__ static bool wide(const RedAcc<M>& a) { return a.z > flat_slots; }
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
};

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
	static constexpr bool mend_mask = false;
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
// [2^-125, 2^125] and |n| is at least 2^-100; anywhere else (zeros,
// subnormals, the ends of the range, inf, NaN) it sets bad and the caller
// redoes the whole pack with exact divisions (red_elems).
__device__ __forceinline__ float red_quot(float n, float d, bool& bad) {
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
	const float q0 = n * r;
	const float q = fmaf(fmaf(-d, q0, n), r, q0);
	const float an = fabsf(n), ad = fabsf(d), aq = fabsf(q);
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
	template <typename M> __device__ static M elem(const RedCtx<M>& c, M x, bool&) { return Op::elem(c, x); }
};
template <typename T> struct RedFast<RedProd, T, true> {
	__device__ static float elem(const RedCtx<float>& c, float x, bool& bad) {
		bad = bad | (c.mode != 0);
		return c.p * red_quot(c.q, x, bad);
	}
};

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

// Offsets of slice s in x, y, dy and dx. Unrolled with constant indices so
// the layout stays in the parameter space.
struct RedOff {
	i64 x, y, dy, dx;
};

__device__ __forceinline__ RedOff red_offsets(i64 s, const ReduceLayout& L) {
	RedOff o = {0, 0, 0, 0};
	i64 rem = s;
#pragma unroll
	for (int d = RED_SRANK - 1; d >= 0; --d) {
		if (d < L.srank) {
			i64 idx = rem;
			if (d > 0) {
				const i64 n = L.sdim[d];
				// 32-bit division where it fits: a 64-bit one is a long
				// instruction sequence, paid per tile.
				const i64 q = ((rem | n) >> 32) == 0 ? (i64)((unsigned)rem / (unsigned)n) : rem / n;
				idx = rem - q * n;
				rem = q;
			}
			o.x += idx * L.sstride[0][d];
			o.y += idx * L.sstride[1][d];
			o.dy += idx * L.sstride[2][d];
			o.dx += idx * L.sstride[3][d];
		}
	}
	return o;
}

template <typename M> __device__ __forceinline__ RedAcc<M> red_shfl_xor(const RedAcc<M>& v, int off) {
	return red_acc(__shfl_xor_sync(0xffffffffu, v.a, off), __shfl_xor_sync(0xffffffffu, v.z, off));
}

// red_warp_total combines acc over the 32 lanes of a warp (a fixed xor
// butterfly) and leaves lane 0's result in every lane's acc.
template <typename Op, typename M> __device__ __forceinline__ void red_warp_total(RedAcc<M>& acc) {
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) Op::combine(acc, red_shfl_xor(acc, off));
	acc = red_acc(__shfl_sync(0xffffffffu, acc.a, 0), __shfl_sync(0xffffffffu, acc.z, 0));
}

// red_group_reduce combines v over the G threads of a row tile and returns
// the total to each of them. Every thread of the block must call it
// (inactive ones with Op::init()). The order is fixed by G: an xor
// butterfly within a warp (identical on every lane, since combining is
// commutative), then the warps' totals in index order (sm: 8 entries).
template <typename Op, typename M>
__device__ __forceinline__ RedAcc<M> red_group_reduce(RedAcc<M> v, const ReduceLayout& L, RedAcc<M>* sm) {
	const int tid = threadIdx.x;
	const int G = L.group;
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		if (off < G) Op::combine(v, red_shfl_xor(v, off));
	}
	if (G <= 32) return v;
	if ((tid & 31) == 0) sm[tid >> 5] = v;
	__syncthreads();
	const int wpg = G >> 5;
	const int first = ((tid >> 5) / wpg) * wpg;
	RedAcc<M> t = sm[first];
#pragma unroll
	for (int w = 1; w < RED_BLOCK / 32; ++w) {
		if (w < wpg) Op::combine(t, sm[first + w]);
	}
	__syncthreads();
	return t;
}

// red_steps is how many of positions first, first+step, ... lie below len.
__device__ __forceinline__ i64 red_steps(i64 len, int first, int step) {
	return len > first ? (len - first + step - 1) / step : 0;
}

// red_row_scalars calls f(x pointer, dx pointer) for a row thread's scalar
// positions: [0, send) stepping G, then with vec the tail [body, len).
template <typename T, typename F>
__device__ __forceinline__ void red_row_scalars(const T* xs, T* ds, i64 kx, i64 kd, int lane, int G,
		i64 send, bool vec, i64 body, i64 len, F f) {
	const T* xp = xs + lane * kx;
	T* dp = ds + lane * kd;
	for (i64 n = red_steps(send, lane, G); n > 0; --n, xp += G * kx, dp += G * kd) f(xp, dp);
	if (vec) {
		xp = xs + body + lane;
		dp = ds + body + lane;
		for (i64 n = red_steps(len - body, lane, G); n > 0; --n, xp += G, dp += G) f(xp, dp);
	}
}

// One row-mapping tile for one thread (lane of G). Pass RED_FUSED: the
// whole slice (nchunks == 1); RED_STATS: write the tile's partial
// statistics (and provisional dx); RED_APPLY: combine the partials, apply.
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_row_tile(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, bool active, int lane, RedAcc<typename OpMath<T>::type>* sm) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr bool prov = Op::provisional;
	const int G = L.group;
	i64 s = 0, j0 = 0, len = 0;
	RedOff o = {0, 0, 0, 0};
	M g = M(0), yv = M(0);
	if (active) {
		s = L.nchunks == 1 ? t : t / L.nchunks;
		j0 = (t - s * L.nchunks) * L.chunk;  // chunk t - s*nchunks
		len = min(L.chunk, L.k - j0);
		o = red_offsets(s, L);
		g = to_op(dy[o.dy]);
		if (Op::needs_y) yv = to_op(y[o.y]);
	}
	const i64 kx = L.kstride[0], kd = L.kstride[1];
	const T* xs = Op::needs_x ? x + o.x + j0 * kx : x;
	T* ds = dx + o.dx + j0 * kd;
	// With L.vec, positions [0, head) and [body, len) are scalars and
	// [head, body) is np 16-byte packs of x and dx (equally aligned).
	bool vec = false;
	i64 head = 0, np = 0;
	if (active && L.vec) {
		const unsigned ad = (unsigned)((size_t)ds & 15);
		if (!Op::needs_x || (unsigned)((size_t)xs & 15) == ad) {
			vec = true;
			head = (i64)(((16u - ad) & 15u) / sizeof(T));
			if (head > len) head = len;
			np = (len - head) / N;
		}
	}
	const i64 body = head + np * N;
	const i64 send = vec ? head : len;  // end of the leading scalars
	const T* xp = xs + head;
	T* dp = ds + head;

	RedAcc<M> acc = Op::template init<M>();
	constexpr int CP = RedCache<T>::packs;
	Pack<T> cache[CP];
	const bool cached = Pass == RED_FUSED && Op::stats && vec && np <= (i64)G * CP;
	if (Op::stats && Pass != RED_APPLY && active) {
		if (cached) {
			// All CP loads are issued before any is used: each is
			// unconditional (a lane past np re-reads pack np-1), since
			// ptxas schedules a load under its own branch after the
			// previous pack's arithmetic, leaving one load in flight per
			// thread.
			if (np > 0) {
#pragma unroll
				for (int r = 0; r < CP; ++r) cache[r] = load_pack(xp + min(lane + (i64)r * G, np - 1) * N);
			}
#pragma unroll
			for (int r = 0; r < CP; ++r) {
				if (lane + (i64)r * G < np) {
#pragma unroll
					for (int e = 0; e < N; ++e) Op::accum(acc, to_op(cache[r].v[e]), yv);
				}
			}
			red_row_scalars(xs, ds, kx, kd, lane, G, send, vec, body, len,
				[&](const T* xq, T*) { Op::accum(acc, to_op(*xq), yv); });
		} else {
			const RedCtx<M> pc = Op::template slice<M>(g, yv, Op::template assumed<M>(), L.scale, L.k);
#pragma unroll 4
			for (i64 p = lane; p < np; p += G) {
				const Pack<T> v = load_pack(xp + p * N);
				Pack<T> r;
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M xv = to_op(v.v[e]);
					Op::accum(acc, xv, yv);
					if (prov) r.v[e] = from_op<T>(Op::elem(pc, xv));
				}
				if (prov) store_pack(dp + p * N, r);
			}
			red_row_scalars(xs, ds, kx, kd, lane, G, send, vec, body, len, [&](const T* xq, T* dq) {
				const M xv = to_op(*xq);
				Op::accum(acc, xv, yv);
				if (prov) *dq = from_op<T>(Op::elem(pc, xv));
			});
		}
	}
	RedAcc<M> total = acc;
	if (Op::stats) {
		if (Pass == RED_APPLY) {
			if (active) total = ws[L.slices * L.nchunks + s];  // red_total's
		} else {
			total = red_group_reduce<Op>(acc, L, sm);
		}
	}
	if (Pass == RED_STATS) {
		if (Op::stats && active && lane == 0) ws[t] = total;
		return;
	}
	if (!active) return;
	if (!cached && Op::stats && prov && !Op::fix(total)) return;
	const RedCtx<M> c = Op::template slice<M>(g, yv, total, L.scale, L.k);
	if (cached) {
#pragma unroll
		for (int r = 0; r < CP; ++r) {
			const i64 p = lane + (i64)r * G;
			if (p < np) {
				Pack<T> out;
				red_elems<Op, M>(cache[r].v, out.v, c);
				store_pack(dp + p * N, out);
			}
		}
	} else {
#pragma unroll 4
		for (i64 p = lane; p < np; p += G) {
			Pack<T> v, out;
			if (Op::needs_x) v = load_pack(xp + p * N);
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c, Op::needs_x ? to_op(v.v[e]) : M(0)));
			store_pack(dp + p * N, out);
		}
	}
	red_row_scalars(xs, ds, kx, kd, lane, G, send, vec, body, len, [&](const T* xq, T* dq) {
		*dq = from_op<T>(Op::elem(c, Op::needs_x ? to_op(*xq) : M(0)));
	});
}

// RedColVec is how many adjacent slices a col-mapping thread takes when x
// and dx are contiguous across them: one 16-byte access (4 of f32, 8 of
// f16/bf16, 2 of f64), except 4 of f16/bf16 (8 bytes) for the ops with
// statistics, whose per-slice statistics and context for 8 slices hold so
// many registers that a quarter of the resident blocks would be lost; else half
// of that where it is at least 2 (the launcher's cvec says which), else 1.
// RedColUnroll is the col loops' unroll: 64 bytes of x in flight per thread
// with 16-byte accesses, and with narrower ones too.
template <typename T, typename Op> struct RedColVec {
	static constexpr int n = sizeof(T) == 2 && Op::stats ? 4 : 16 / sizeof(T);
};
template <typename T, int V> struct RedColUnroll { static constexpr int n = V * sizeof(T) >= 16 ? 4 : 8; };


// RedVec is V adjacent elements moved with one access (16, 8 or 4 bytes;
// V == 1 is a plain element).
template <typename T, int V> struct __align__(V * sizeof(T)) RedVec {
	T v[V];
};

template <typename T, int V> __device__ __forceinline__ RedVec<T, V> red_vload(const T* p) {
	RedVec<T, V> r;
	if (sizeof(r) == 16) {
		const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
		memcpy(&r, &u, sizeof(r));
	} else if (sizeof(r) == 8) {
		const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
		memcpy(&r, &u, sizeof(r));
	} else if (sizeof(r) == 4 && V == 2) {
		const unsigned u = __ldg(reinterpret_cast<const unsigned*>(p));
		memcpy(&r, &u, sizeof(r));
	} else {
		r.v[0] = p[0];
	}
	return r;
}

// red_vstore: one store of the V values (f64 as store_pack does).
template <typename T, int V> __device__ __forceinline__ void red_vstore(T* p, const RedVec<T, V>& r) {
	constexpr int B = sizeof(RedVec<T, V>);
	unsigned w[4];
	if (sizeof(T) < 8) pack_words<T, B / 4>(w, r.v);
	if (sizeof(T) == 8 && B == 16) {
		uint4 u;
		memcpy(&u, &r, 16);
		*reinterpret_cast<uint4*>(p) = u;
	} else if (B == 16) {
		st_global_v4(p, w);
	} else if (B == 8 && sizeof(T) < 8) {
		st_global_v2(p, w);
	} else if (B == 4 && V == 2) {
		*reinterpret_cast<unsigned*>(p) = w[0];
	} else {
		p[0] = r.v[0];
	}
}

// The one-pass col split (RED_ONE, the "one" kernel) keeps each thread's
// part of its tile in dynamic shared memory, RedVec entry (row, sl) at
// row*W + sl: chunk*W entries, which the launcher sizes. A thread only
// ever reads back its own entries.
extern __shared__ __align__(16) unsigned char red_dyn[];

template <typename T, int V> __device__ __forceinline__ RedVec<T, V>* red_one_buf() {
	return reinterpret_cast<RedVec<T, V>*>(red_dyn);
}

// red_ldcg reads a workspace entry another block wrote during this launch
// (at L2: a line this SM read earlier may be stale in L1).
template <typename M> __device__ __forceinline__ RedAcc<M> red_ldcg(const RedAcc<M>* p) {
	RedAcc<M> r;
	if (sizeof(RedAcc<M>) == 16) {
		const int4 u = __ldcg(reinterpret_cast<const int4*>(p));
		memcpy(&r, &u, 16);
	} else {
		const int2 u = __ldcg(reinterpret_cast<const int2*>(p));
		memcpy(&r, &u, 8);
	}
	return r;
}

// red_one_counters: after the partials and the totals' place (which the
// one kernel leaves unused), the workspace holds the ticket counter, then
// one arrival counter per slice block (the launcher zeroes them before
// each launch).
template <typename M> __device__ __forceinline__ int* red_one_counters(RedAcc<M>* ws, const ReduceLayout& L) {
	return reinterpret_cast<int*>(ws + L.slices * (L.nchunks + 1));
}

// red_col_fold combines each of the thread's V statistics over the H
// threads of its column of the block (shared memory, h in index order: a
// fixed order) and returns the result to all H of them (H <= HMax). Every
// thread of the block calls it.
template <typename Op, int V, int HMax, typename M>
__device__ __forceinline__ void red_col_fold(RedAcc<M> (&acc)[V], const ReduceLayout& L, int sl, RedAcc<M>* sm) {
	const int H = L.group;
	const int W = RED_BLOCK / H;
#pragma unroll
	for (int v = 0; v < V; ++v) sm[v * RED_BLOCK + threadIdx.x] = acc[v];
	__syncthreads();
#pragma unroll
	for (int v = 0; v < V; ++v) {
		RedAcc<M> tot = sm[v * RED_BLOCK + sl];
#pragma unroll
		for (int h = 1; h < HMax; ++h) {
			if (h < H) Op::combine(tot, sm[v * RED_BLOCK + h * W + sl]);
		}
		acc[v] = tot;
	}
	__syncthreads();
}

// red_one_totals: the tile has stored its partials. It arrives at its
// slice block's counter and waits until every chunk has; then each tile
// of the slice block combines all the partials of its slices itself (thread
// kt folds chunks kt, kt+H, ..., then the H threads in index order: the
// same fixed order in every tile, so they agree bit for bit). acc returns
// the totals of the thread's V slices. Tiles take tickets in order, so a
// tile only waits on tiles that hold tickets, which are running: the
// launcher makes sure that nchunks blocks fit on the GPU at once.
template <typename Op, int V, typename M>
__device__ __forceinline__ void red_one_totals(RedAcc<M> (&acc)[V], RedAcc<M>* __restrict__ ws, const ReduceLayout& L,
		i64 st, i64 s0, bool active, int sl, int kt, RedAcc<M>* sm) {
	const int H = L.group;
	int* arrive = red_one_counters(ws, L) + 1 + st;
	const int nc = (int)L.nchunks;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) {
		atomicAdd(arrive, 1);
		while (*reinterpret_cast<volatile int*>(arrive) < nc) __nanosleep(32);
		__threadfence();
	}
	__syncthreads();
#pragma unroll
	for (int v = 0; v < V; ++v) acc[v] = Op::template init<M>();
	if (active) {
		for (int c = kt; c < nc; c += H) {
#pragma unroll
			for (int v = 0; v < V; ++v) Op::combine(acc[v], red_ldcg(ws + (i64)c * L.slices + s0 + v));
		}
	}
	red_col_fold<Op, V, 8>(acc, L, sl, sm);
}

// The cluster kernel (RED_CLUSTER, compute capability 9.0): a split col
// slice block is cut into RED_CLUSTER_BLOCKS chunks, and its tiles are the
// blocks of one thread block cluster (the kernel declares the cluster
// size, so a plain launch of tiles blocks groups them: block b is chunk
// b % RED_CLUSTER_BLOCKS of slice block b / RED_CLUSTER_BLOCKS, and its rank in the
// cluster). A cluster's blocks run at the same time, so a tile waits only
// for the other chunks of its slice block, all of them running, and the
// partials never leave the SMs: each block publishes its own in shared
// memory, and after a cluster barrier every block reads all of them
// through distributed shared memory and combines them in rank order (the
// same bits in each). No workspace, no second launch.
#if __CUDA_ARCH__ >= 900
// red_dsmem reads the entry at p (this block's shared memory) in the block
// of cluster rank r.
__device__ __forceinline__ unsigned red_dsmem_addr(const void* p, unsigned r) {
	unsigned a;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"((unsigned)__cvta_generic_to_shared(p)), "r"(r));
	return a;
}
__device__ __forceinline__ RedAcc<float> red_dsmem(const RedAcc<float>* p, unsigned r) {
	float a;
	int z;
	asm volatile("ld.shared::cluster.v2.b32 {%0, %1}, [%2];" : "=f"(a), "=r"(z) : "r"(red_dsmem_addr(p, r)) : "memory");
	return red_acc(a, z);
}
__device__ __forceinline__ RedAcc<double> red_dsmem(const RedAcc<double>* p, unsigned r) {
	const unsigned q = red_dsmem_addr(p, r);
	double a;
	int z;
	asm volatile("ld.shared::cluster.f64 %0, [%2];\n\tld.shared::cluster.b32 %1, [%2+8];" : "=d"(a), "=r"(z) : "r"(q) : "memory");
	return red_acc(a, z);
}
// barrier.cluster.arrive releases and .wait acquires (PTX ISA 7.8's only
// forms): what a block's threads stored to shared memory before arriving
// is visible to every thread of the cluster after its wait.
__device__ __forceinline__ void red_cluster_arrive() { asm volatile("barrier.cluster.arrive;" ::: "memory"); }
__device__ __forceinline__ void red_cluster_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
#else
template <typename M> __device__ __forceinline__ RedAcc<M> red_dsmem(const RedAcc<M>* p, unsigned) { return *p; }
__device__ __forceinline__ void red_cluster_arrive() {}
__device__ __forceinline__ void red_cluster_wait() {}
#endif

// red_cluster_totals: the fold has left the block's partials of the
// thread's V slices in acc. Thread kt == 0 of each column publishes them
// in sm (free after the fold); after the cluster barrier acc becomes the
// totals, own keeps the block's partials (for fix_chunk). Every thread
// arrives at the cluster barrier a second time once its reads are done;
// the kernel waits on it before it exits, so that no block's shared
// memory goes while another block may still read it.
template <typename Op, int V, typename M>
__device__ __forceinline__ void red_cluster_totals(RedAcc<M> (&acc)[V], RedAcc<M> (&own)[V], bool active, int sl,
		int kt, RedAcc<M>* sm) {
#pragma unroll
	for (int v = 0; v < V; ++v) {
		own[v] = acc[v];
		if (kt == 0) sm[v * RED_BLOCK + sl] = acc[v];
	}
	red_cluster_arrive();
	red_cluster_wait();
	if (active) {
#pragma unroll
		for (int v = 0; v < V; ++v) {
			RedAcc<M> tot = red_dsmem(sm + v * RED_BLOCK + sl, 0);
#pragma unroll
			for (int r = 1; r < RED_CLUSTER_BLOCKS; ++r) Op::combine(tot, red_dsmem(sm + v * RED_BLOCK + sl, r));
			acc[v] = tot;
		}
	}
	red_cluster_arrive();
}

// One col-mapping tile: a block of W = 256/H threads across slices, each
// taking V adjacent slices (V = L.cvec), by H threads along k. The V
// slices' statistics reduce over the H threads through shared memory
// (sm holds RED_BLOCK * RedColVec<T, Op>::n entries).
template <typename T, typename Op, int Pass, int V>
__device__ __forceinline__ void red_col_tile(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, RedAcc<typename OpMath<T>::type>* sm) {
	typedef typename OpMath<T>::type M;
	constexpr bool prov = Op::provisional && Pass != RED_ONE;
	const int H = L.group;
	const int W = RED_BLOCK / H;
	const int sl = threadIdx.x % W, kt = threadIdx.x / W;
	const i64 st = L.nchunks == 1 ? t : t / L.nchunks;
	const i64 c = t - st * L.nchunks;
	const i64 s0 = (st * W + sl) * V;  // the launcher makes S a multiple of V
	const bool active = s0 < L.slices;
	const i64 j0 = c * L.chunk;
	i64 len = 0;  // (a cluster's last chunks may be empty: len <= 0)
	RedOff o = {0, 0, 0, 0};
	M g[V], yv[V];
#pragma unroll
	for (int v = 0; v < V; ++v) g[v] = yv[v] = M(0);
	if (active) {
		len = min(L.chunk, L.k - j0);
		o = red_offsets(s0, L);
#pragma unroll
		for (int v = 0; v < V; ++v) {
			g[v] = to_op(dy[o.dy + v * L.vstride[1]]);
			if (Op::needs_y) yv[v] = to_op(y[o.y + v * L.vstride[0]]);
		}
	}
	const i64 kx = L.kstride[0], kd = L.kstride[1];
	const T* xs = Op::needs_x ? x + o.x + j0 * kx : x;
	T* ds = dx + o.dx + j0 * kd;

	RedAcc<M> acc[V];
#pragma unroll
	for (int v = 0; v < V; ++v) acc[v] = Op::template init<M>();
	if (Op::stats && Pass != RED_APPLY && active) {
		RedCtx<M> pc[V];
#pragma unroll
		for (int v = 0; v < V; ++v) pc[v] = Op::template slice<M>(g[v], yv[v], Op::template assumed<M>(), L.scale, L.k);
		const T* xp = xs + kt * kx;
		T* dp = ds + kt * kd;
		RedVec<T, V>* bp = red_one_buf<T, V>() + kt * W + sl;
		auto step = [&](const RedVec<T, V>& xv, T* d, RedVec<T, V>* b) {
			RedVec<T, V> r;
#pragma unroll
			for (int v = 0; v < V; ++v) {
				const M xm = to_op(xv.v[v]);
				Op::accum(acc[v], xm, yv[v]);
				if (prov) r.v[v] = from_op<T>(Op::elem(pc[v], xm));
			}
			if (prov) red_vstore<T, V>(d, r);
			if (Pass == RED_ONE) *b = xv;
		};
		i64 n = red_steps(len, kt, H);
		if (Op::batch) {
			// A batch's loads all go out before its arithmetic: in a
			// plain unrolled loop prod's divisions (their slow-path
			// branches) hold the later loads back.
			constexpr int U = RedColUnroll<T, V>::n;
			for (; n >= U; n -= U, xp += U * H * kx, dp += U * H * kd, bp += U * H * W) {
				RedVec<T, V> xb[U];
#pragma unroll
				for (int u = 0; u < U; ++u) xb[u] = red_vload<T, V>(xp + u * H * kx);
#pragma unroll
				for (int u = 0; u < U; ++u) step(xb[u], dp + u * H * kd, bp + u * H * W);
			}
		}
#pragma unroll(RedColUnroll<T, V>::n)
		for (; n > 0; --n, xp += H * kx, dp += H * kd, bp += H * W) step(red_vload<T, V>(xp), dp, bp);
	}
	bool need = true;
	if (Op::stats && Pass == RED_APPLY) {
		if (active) {
#pragma unroll
			for (int v = 0; v < V; ++v) acc[v] = ws[L.slices * L.nchunks + s0 + v];  // red_total's
		}
	} else if (Op::stats) {
		red_col_fold<Op, V, Pass == RED_CLUSTER ? RED_CLUSTER_HMAX : 8>(acc, L, sl, sm);
		RedAcc<M> own[V];
		if (Pass == RED_CLUSTER) red_cluster_totals<Op, V>(acc, own, active, sl, kt, sm);
		if (Pass == RED_STATS || Pass == RED_ONE) {
			if (active && kt == 0) {
#pragma unroll
				for (int v = 0; v < V; ++v) ws[c * L.slices + s0 + v] = acc[v];
			}
			if (Pass == RED_STATS) return;
			red_one_totals<Op, V>(acc, ws, L, st, s0, active, sl, kt, sm);
		}
		if (prov) {
			// Only a chunk whose provisional dx can be wrong is rewritten
			// (red_total's test); with nchunks == 1 that is fix() alone.
			need = false;
#pragma unroll
			for (int v = 0; v < V; ++v) need = need || (Op::fix(acc[v]) && (Pass != RED_CLUSTER || Op::fix_chunk(acc[v], own[v])));
		}
	}
	if (!active || !need) return;
	RedCtx<M> cx[V];
#pragma unroll
	for (int v = 0; v < V; ++v) cx[v] = Op::template slice<M>(g[v], yv[v], acc[v], L.scale, L.k);
	const T* xp = xs + kt * kx;
	T* dp = ds + kt * kd;
	const RedVec<T, V>* bp = red_one_buf<T, V>() + kt * W + sl;
#pragma unroll(RedColUnroll<T, V>::n)
	for (i64 n = red_steps(len, kt, H); n > 0; --n, xp += H * kx, dp += H * kd, bp += H * W) {
		RedVec<T, V> xv, r;
		if (Op::needs_x) xv = Pass == RED_ONE ? *bp : red_vload<T, V>(xp);
#pragma unroll
		for (int v = 0; v < V; ++v) r.v[v] = from_op<T>(Op::elem(cx[v], Op::needs_x ? to_op(xv.v[v]) : M(0)));
		red_vstore<T, V>(dp, r);
	}
}

// red_col_tile_cvec runs col tile t with the slices per thread the
// launcher chose (L.cvec): RedColVec's V, V/2 where that is at least 2, or 1.
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_col_tile_cvec(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, RedAcc<typename OpMath<T>::type>* sm) {
	constexpr int V = RedColVec<T, Op>::n;
	if (L.cvec == V) {
		red_col_tile<T, Op, Pass, V>(x, y, dy, dx, ws, L, t, sm);
	} else if (V > 2 && L.cvec == V / 2) {
		red_col_tile<T, Op, Pass, (V > 2 ? V / 2 : 1)>(x, y, dy, dx, ws, L, t, sm);
	} else {
		red_col_tile<T, Op, Pass, 1>(x, y, dy, dx, ws, L, t, sm);
	}
}

// Walks the col tiles of one pass, with V adjacent slices per thread when
// the launcher allows it.
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_col_pass(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, RedAcc<typename OpMath<T>::type>* sm) {
	// RED_ONE: tiles by ticket, in order (see red_one_totals).
	__shared__ int ticket;
	for (i64 b = blockIdx.x;; b += gridDim.x) {
		if (Pass == RED_ONE) {
			if (threadIdx.x == 0) ticket = atomicAdd(red_one_counters(ws, L), 1);
			__syncthreads();
			b = ticket;
		}
		if (b >= L.tiles) break;
		red_col_tile_cvec<T, Op, Pass>(x, y, dy, dx, ws, L, L.reverse ? L.tiles - 1 - b : b, sm);
	}
}

// Walks the row tiles of one pass (256/G tiles per block step).
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_row_pass(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, RedAcc<typename OpMath<T>::type>* sm) {
	const int G = L.group, gpb = RED_BLOCK / G;
	const int lane = threadIdx.x % G, grp = threadIdx.x / G;
	const i64 nb = (L.tiles + gpb - 1) / gpb;
	for (i64 b = blockIdx.x; b < nb; b += gridDim.x) {
		const i64 t = (L.reverse ? nb - 1 - b : b) * gpb + grp;
		red_row_tile<T, Op, Pass>(x, y, dy, dx, ws, L, t, t < L.tiles, lane, sm);
	}
}

// red_fix_rows rewrites dx from x at positions 0..len of one slice (xp,
// dp: its first position; xs, ds: the strides along the axis) with context
// cx, the warp's lanes taking every 32nd position, RED_FIX_BATCH rows per
// lane at a time, all loads of a batch before any store (the rows of a col
// slice are far apart: one load, one round trip; a loop that stores before
// its next load makes a tied slice wait for one round trip after another).
template <typename T, typename Op>
__device__ __forceinline__ void red_fix_rows(const T* __restrict__ xp, T* __restrict__ dp,
		const RedCtx<typename OpMath<T>::type>& cx, i64 len, i64 xs, i64 ds) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	xp += lane * xs;
	dp += lane * ds;
	for (i64 n = red_steps(len, lane, 32); n > 0; n -= RED_FIX_BATCH) {
		M xv[RED_FIX_BATCH];
#pragma unroll
		for (int u = 0; u < RED_FIX_BATCH; ++u) xv[u] = u < n ? to_op(xp[u * 32 * xs]) : M(0);
#pragma unroll
		for (int u = 0; u < RED_FIX_BATCH; ++u) {
			if (u < n) dp[u * 32 * ds] = from_op<T>(Op::elem(cx, xv[u]));
		}
		xp += RED_FIX_BATCH * 32 * xs;
		dp += RED_FIX_BATCH * 32 * ds;
	}
}

// red_total_fix rewrites the chunks of slice s whose provisional dx is
// wrong (one warp; acc is the slice's total, cx its context; xo, xs and
// dof, ds the slice's offset and stride along the axis in x and dx). It
// is a call, not inlined, so that the common path of red_total (no
// rewrite) stays compact: inlined, the rewrite with its batched loads slows
// the untied slices too. It takes scalars, not the layout, whose address
// would send the kernel parameter through local memory.
template <typename T, typename Op>
__device__ __noinline__ void red_total_fix(const T* __restrict__ x, T* __restrict__ dx,
		const RedAcc<typename OpMath<T>::type>* __restrict__ ws, RedAcc<typename OpMath<T>::type> acc,
		RedCtx<typename OpMath<T>::type> cx, i64 s, i64 S, i64 nc, bool col, i64 k, i64 chunk,
		i64 xo, i64 xs, i64 dof, i64 ds) {
	const int lane = threadIdx.x & 31;
	// The lanes test 32 chunks at a time; the warp rewrites the marked ones.
	for (i64 c0 = 0; c0 < nc; c0 += 32) {
		const i64 c = c0 + lane;
		unsigned m = __ballot_sync(0xffffffffu, c < nc && Op::fix_chunk(acc, ws[col ? c * S + s : s * nc + c]));
		for (; m != 0; m &= m - 1) {
			const i64 j0 = (c0 + __ffs(m) - 1) * chunk;
			red_fix_rows<T, Op>(x + xo + j0 * xs, dx + dof + j0 * ds, cx, min(k, j0 + chunk) - j0, xs, ds);
		}
	}
}

// red_total is the apply kernel's first launch (L.phase RED_PHASE_TOTAL):
// a warp per slice combines the slice's nchunks partials from the stats
// kernel (lanes stride the chunks, then a fixed xor butterfly; lane 0's
// result is kept, so the order is fixed by nchunks alone) and stores the
// total after them, at ws[slices*nchunks + s]. A provisional op is then
// done: the stats kernel wrote dx for the common case, and the warp
// rewrites the chunks of the rare slice where that is wrong (fix(),
// fix_chunk()); the launcher skips the apply launch for it.
template <typename T, typename Op>
__device__ __forceinline__ void red_total(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	const i64 nw = ((i64)gridDim.x * RED_BLOCK) >> 5;
	const i64 S = L.slices, nc = L.nchunks;
	const bool col = L.mapping == RED_COL;
	for (i64 s = ((i64)blockIdx.x * RED_BLOCK + threadIdx.x) >> 5; s < S; s += nw) {  // warp-uniform
		RedAcc<M> acc = Op::template init<M>();
#pragma unroll 4
		for (i64 c = lane; c < nc; c += 32) Op::combine(acc, ws[col ? c * S + s : s * nc + c]);
		red_warp_total<Op>(acc);
		if (lane == 0) ws[S * nc + s] = acc;
		if (!Op::provisional || !Op::fix(acc)) continue;
		const RedOff o = red_offsets(s, L);
		const M yv = Op::needs_y ? to_op(y[o.y]) : M(0);
		const RedCtx<M> cx = Op::template slice<M>(to_op(dy[o.dy]), yv, acc, L.scale, L.k);
		red_total_fix<T, Op>(x, dx, ws, acc, cx, s, S, nc, col, L.k, L.chunk, o.x, L.kstride[0], o.dx, L.kstride[1]);
	}
}

// The flat kernel for the provisional ops (max, min, prod; see
// reduce_flat) leaves in the workspace:
//   - cnt[s], a count per slice of the elements where the provisional dx
//     may be wrong (Op::accum's z of that element alone: max/min an
//     element equal to y, prod a zero), then cnt[S], the wide flag: set
//     when some slice counted more than Op::flat_slots such elements;
//   - at a 16-byte boundary, Op::flat_slots flat indices per slice of such
//     elements (the first ones to arrive; any order);
//   - at a 16-byte boundary, for the ops with Op::mend_mask (max/min), the
//     mend mask: one bit per element of x, the flagged ones, N 32-bit words
//     per 32 packs (red_flat_bits_store).
// RED_FLAT_LOCAL: up to this many slices the flat kernel's blocks count in
// shared memory (red_flat_provisional).
#define RED_FLAT_LOCAL 64

__device__ __forceinline__ i64 red_flat_counts_size(i64 S) { return (4 * (S + 1) + 15) & ~(i64)15; }

__device__ __forceinline__ i64* red_flat_slots(void* ws, i64 S) {
	return reinterpret_cast<i64*>(static_cast<unsigned char*>(ws) + red_flat_counts_size(S));
}

template <typename Op>
__device__ __forceinline__ unsigned* red_flat_bits(void* ws, i64 S) {
	const i64 off = (red_flat_counts_size(S) + 8 * Op::flat_slots * S + 15) & ~(i64)15;
	return reinterpret_cast<unsigned*>(static_cast<unsigned char*>(ws) + off);
}

// red_flag tells whether x is such an element.
template <typename Op, typename M> __device__ __forceinline__ bool red_flag(M x, M y) {
	RedAcc<M> t = Op::template init<M>();
	Op::accum(t, x, y);
	return t.z != 0;
}

// red_flat_count (all 32 lanes of a warp, converged) adds to cnt[s] (the
// workspace's counts, or a block's in shared memory: see
// red_flat_provisional) the
// flagged elements m (bits) of each lane, whose flat indices are q0 + bit,
// with one integer atomic per slice the warp touches (lanes grouped by
// slice with match.any; a lane with m == 0 passes any s), so that a slice
// whose every element ties costs an atomic per warp, not per element. The
// counts are exact and order-free. Each lane then records its indices in
// the slots from the place its prefix over its group gives it, while that
// is under Op::flat_slots; a count that passes Op::flat_slots sets the
// wide flag (where wide is not null). A group's lanes are either contiguous (Single false: a lane's
// pack lies in one slice, and slices follow the lanes in order), so that
// a prefix over the warp gives every group's sums, or each lane flags at
// most one element (Single true: the group's lanes, in any order, are the
// count).
template <typename Op, bool Single>
__device__ __forceinline__ void red_flat_count(int* cnt, i64* slots, int* wide, i64 s, unsigned m, i64 q0) {
	const unsigned full = 0xffffffffu;
	if (__ballot_sync(full, m != 0) == 0) return;
	const int lane = threadIdx.x & 31;
	const unsigned peers = __match_any_sync(full, m != 0 ? s : (i64)-1);
	const int lead = __ffs(peers) - 1;
	int before, total;  // flagged elements of the group: in lanes under this one, in all
	if (Single) {
		before = __popc(peers & ((1u << lane) - 1u));
		total = __popc(peers);
	} else {
		const int c = __popc(m);
		int p = c;  // inclusive prefix of c over the warp
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			const int t = __shfl_up_sync(full, p, d);
			if (lane >= d) p += t;
		}
		const int first = __shfl_sync(full, p - c, lead);
		total = __shfl_sync(full, p, 31 - __clz(peers)) - first;
		before = p - c - first;
	}
	int b = 0;
	if (m != 0 && lane == lead) {
		b = atomicAdd(cnt + s, total);
		if (wide != nullptr && b + total > Op::flat_slots) *static_cast<volatile int*>(wide) = 1;
	}
	b = __shfl_sync(full, b, lead);
	if (Op::flat_slots == 0) return;
	i64* slot = slots + s * Op::flat_slots;
	for (int at = b + before; m != 0 && at < Op::flat_slots; m &= m - 1, ++at) slot[at] = q0 + __ffs(m) - 1;
}

// red_flat_bits_store (all 32 lanes, converged) writes the mend bits mb of
// the warp's 32 packs q0..q0+31 (q0 a multiple of 32; N bits a lane, the
// bit of element e of lane l at l*N + e) as N words.
template <int N>
__device__ __forceinline__ void red_flat_bits_store(unsigned* bits, i64 q0, unsigned mb) {
	constexpr int G = 32 / N;  // lanes per word
	const int lane = threadIdx.x & 31;
	unsigned w = mb << ((lane % G) * N);
#pragma unroll
	for (int d = 1; d < G; d <<= 1) w |= __shfl_xor_sync(0xffffffffu, w, d);
	if (lane % G == 0) bits[(q0 >> 5) * N + lane / G] = w;
}

// red_flat_bits_load is lane l's N bits of pack q0 + l (as stored).
template <int N>
__device__ __forceinline__ unsigned red_flat_bits_load(const unsigned* bits, i64 q0) {
	constexpr int G = 32 / N;
	const int lane = threadIdx.x & 31;
	return (bits[(q0 >> 5) * N + lane / G] >> ((lane % G) * N)) & ((1u << N) - 1u);
}

// red_flat_redo rewrites slice s whose count says the provisional dx is
// wrong and which neither the slots nor a wide mend cover (max/min with no
// element equal to y; prod with one zero, which needs the product of the
// others), with one warp: its statistics from x (lane-strided, then an xor
// butterfly and lane 0's total: a fixed order), then every dx. A call, as
// red_total_fix.
template <typename T, typename Op>
__device__ __noinline__ void red_flat_redo(const T* __restrict__ x, T* __restrict__ dx, typename OpMath<T>::type g,
		typename OpMath<T>::type yv, double scale, i64 k, i64 xo, i64 xs, i64 dof, i64 ds) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	RedAcc<M> acc = Op::template init<M>();
#pragma unroll 4
	for (i64 j = lane; j < k; j += 32) Op::accum(acc, to_op(x[xo + j * xs]), yv);
	red_warp_total<Op>(acc);
	red_fix_rows<T, Op>(x + xo, dx + dof, Op::template slice<M>(g, yv, acc, scale, k), k, xs, ds);
}

// red_flat_fix (the apply kernel's RED_PHASE_FLAT, after the flat kernel)
// first walks the slices, a thread per slice (one coalesced load of a
// warp's 32 counts). Where Op::fix says the provisional dx is wrong:
//   - a slice whose flagged elements were all recorded (max/min with
//     2..flat_slots ties: each equals y, so dx there is elem(cx, y), and
//     every other element keeps its g*0, the same bits as (g/count)*0) is
//     mended by its thread at those indices alone;
//   - a wide slice (Op::wide: more ties than slots; prod with two or more
//     zeros) is left to the second walk;
//   - the warp redoes together, one after another, the rest
//     (red_flat_redo).
// Then, where the wide flag is set, the whole grid walks x's packs as the
// flat kernel did and rewrites, in the packs of wide slices, the elements
// the mend mask flags (every element without Op::mend_mask), from the
// count alone: elem(cx, y) where flagged, elem(cx, NaN) elsewhere
// (max/min: (g/count)*0; prod: g*0), without reading x. So ties cost one
// pass over the mask, not over x, and the grid covers long slices.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_fix(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (!Op::provisional) return;
	const int lane = threadIdx.x & 31;
	const int* cnt = static_cast<const int*>(ws);
	const i64 nth = grid_threads();
	for (i64 s0 = global_tid() - lane; s0 < L.slices; s0 += nth) {  // s0: the warp's first slice (warp-uniform)
		const i64 s = s0 + lane;
		RedAcc<M> acc = Op::template assumed<M>();
		bool need = false;
		if (s < L.slices) {
			acc.z = cnt[s];
			need = Op::fix(acc) && !Op::wide(acc);
		}
		const bool slots = need && Op::flat_slots > 0 && acc.z > 0 && acc.z <= Op::flat_slots;
		if (slots) {
			const RedOff o = red_offsets(s, L);
			const M yv = to_op(y[o.y]);
			const RedCtx<M> cx = Op::template slice<M>(to_op(dy[o.dy]), yv, acc, L.scale, L.k);
			const T v = from_op<T>(Op::elem(cx, yv));
			const i64* slot = red_flat_slots(ws, L.slices) + s * Op::flat_slots;
			i64 at[Op::flat_slots > 0 ? Op::flat_slots : 1];
#pragma unroll
			for (int i = 0; i < Op::flat_slots; ++i) at[i] = i < acc.z ? slot[i] : 0;
#pragma unroll
			for (int i = 0; i < Op::flat_slots; ++i) {
				if (i < acc.z) dx[at[i]] = v;
			}
		}
		for (unsigned m = __ballot_sync(0xffffffffu, need && !slots); m != 0; m &= m - 1) {
			const i64 sr = s0 + __ffs(m) - 1;
			const RedOff o = red_offsets(sr, L);
			red_flat_redo<T, Op>(x, dx, to_op(dy[o.dy]), to_op(y[o.y]), L.scale, L.k, o.x, L.kstride[0], o.dx,
					L.kstride[1]);
		}
	}
	if (cnt[L.slices] == 0) return;
	const unsigned* bits = red_flat_bits<Op>(ws, L.slices);
	const M nan = M(NAN);
	for (i64 q0 = global_tid() - lane; q0 < L.fpacks; q0 += nth) {
		const i64 q = q0 + lane;
		const unsigned mb = Op::mend_mask ? red_flat_bits_load<N>(bits, q0) : 0u;
		if (q >= L.fpacks) continue;
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		if (L.fip == 0) {
			if (Op::mend_mask && mb == 0) continue;
			RedAcc<M> acc = Op::template assumed<M>();
			acc.z = cnt[o];
			if (!Op::wide(acc)) continue;
			const M yv = to_op(y[o]);
			const RedCtx<M> cx = Op::template slice<M>(to_op(dy[o]), yv, acc, L.scale, L.k);
			Pack<T> out;
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(cx, (mb >> e) & 1 ? yv : nan));
			store_pack(dx + q * N, out);
		} else {
			// Each element is its own slice kq + e; only those of wide
			// slices are written.
			const i64 kq = (o * L.fip + q - bc_div(q, L.fmagic[1], L.fshift[1]) * L.fip) * N;
#pragma unroll
			for (int e = 0; e < N; ++e) {
				RedAcc<M> acc = Op::template assumed<M>();
				acc.z = cnt[kq + e];
				if (!Op::wide(acc)) continue;
				const M yv = to_op(y[kq + e]);
				const bool flagged = (mb >> e) & 1;
				if (Op::mend_mask && !flagged) continue;
				const RedCtx<M> cx = Op::template slice<M>(to_op(dy[kq + e]), yv, acc, L.scale, L.k);
				dx[q * N + e] = from_op<T>(Op::elem(cx, flagged ? yv : nan));
			}
		}
	}
}

// Kernel bodies, one per variant (all take the family's one parameter list):
//   reduce_flat:  ops without statistics on dense operands, and max, min
//                 and prod where their slices would be split (below);
//   reduce_row:   the row mapping, nchunks == 1 (any nchunks for ops
//                 without statistics);
//   reduce_col:   the col mapping, likewise;
//   reduce_stats: first pass of split slices (ops with statistics), either
//                 mapping: partial statistics to ws, provisional dx;
//   reduce_apply: launched twice after reduce_stats: red_total (the
//                 slices' totals), then dx; or once after reduce_flat
//                 (red_flat_fix);
//   reduce_one:   var/std's split col slices in one launch (for an x
//                 larger than L2, the launcher's choice): each tile keeps
//                 its x in shared memory until its slice block's totals
//                 are known.
//   reduce_strip: an op with statistics along an outer axis on dense
//                 operands, one block per strip of whole slices held in
//                 shared memory (see below; the launcher's choice).
// reduce_stats, reduce_apply, reduce_one and reduce_strip are empty for
// ops without statistics, reduce_one also for the provisional ones, which
// read x once without it (they are never launched for them).
//
// reduce_flat: without statistics dx = elem(slice(dy, y), x) is a map of x
// with dy and y broadcast along the axis. Where every operand is dense (x
// and dx viewed as [O, k, I], dy and y as [O, I]) the launcher takes this
// kernel, which moves like the binary kernels: one 16-byte pack of x and
// dx per thread over the flat index, a block per 256 packs. A pack lies in
// one slice when I == 1 and k is a multiple of the pack's N (fip == 0: dy
// and y are scalars, fmagic[0] divides by k/N), or in N adjacent slices
// when I is a multiple of N (fip = I/N: dy and y are packs too, fmagic[0]
// divides by k*I/N and fmagic[1] by fip).
// The provisional ops (max, min, prod) take it too where their slices
// would be split (red_flat_provisional): it writes the provisional dx
// (their common case: one element equal to y; no zero), counts per slice
// the elements that may make it wrong (red_flat_count: for max/min an
// element equal to y, for prod a zero) and, for max/min, writes them as
// the mend mask; the apply
// kernel's RED_PHASE_FLAT launch then mends the slices where it is wrong
// (red_flat_fix). Every dx is the same bits whatever the order of the
// atomics. It is empty for var and std, which need the mean first.
// red_flat_count_pack (all 32 lanes, converged) counts the flagged
// elements m of lane's pack q (any q where m == 0) into the block's counts
// in shared memory (local: few slices) or the workspace's. A call: the
// common pass, with nothing flagged, keeps none of its registers.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_count_pack(void* ws, int* bcnt, i64* bslot, bool local, const ReduceLayout& L,
		i64 q, unsigned m) {
	constexpr int N = Pack<T>::N;
	int* gcnt = static_cast<int*>(ws);
	int* cnt = local ? bcnt : gcnt;
	i64* slots = local ? bslot : red_flat_slots(ws, L.slices);
	int* wide = local ? nullptr : gcnt + L.slices;
	const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
	if (L.fip == 0) {
		red_flat_count<Op, false>(cnt, slots, wide, o, m, q * N);
		return;
	}
	// Each element is its own slice kq + e.
	const i64 kq = (o * L.fip + q - bc_div(q, L.fmagic[1], L.fshift[1]) * L.fip) * N;
#pragma unroll
	for (int e = 0; e < N; ++e) red_flat_count<Op, true>(cnt, slots, wide, kq + e, (m >> e) & 1u, q * N + e);
}

// The provisional ops (max, min, prod) take it too where their slices
// would be split (red_flat_provisional): it writes the provisional dx
// (their common case: one element equal to y; no zero), counts per slice
// the elements that may make it wrong (red_flat_count: for max/min an
// element equal to y, for prod a zero) and, for max/min, writes them as
// the mend mask; the apply
// kernel's RED_PHASE_FLAT launch then mends the slices where it is wrong
// (red_flat_fix). Every dx is the same bits whatever the order of the
// atomics. It is empty for var and std, which need the mean first.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_provisional(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int SL = Op::flat_slots > 0 ? Op::flat_slots : 1;
	__shared__ int bcnt[RED_FLAT_LOCAL];
	__shared__ i64 bslot[RED_FLAT_LOCAL * SL];
	const RedAcc<M> assumed = Op::template assumed<M>();
	const int lane = threadIdx.x & 31;
	// Few slices: the block counts in shared memory and adds its counts
	// once at the end, so that many ties in one slice do not queue every
	// warp of the grid on one atomic.
	const bool local = L.slices <= RED_FLAT_LOCAL;
	if (local) {
		for (int i = threadIdx.x; i < RED_FLAT_LOCAL; i += blockDim.x) bcnt[i] = 0;
		__syncthreads();
	}
	const i64 nth = grid_threads();
	for (i64 q0 = global_tid() - lane; q0 < L.fpacks; q0 += nth) {  // q0: the warp's first pack (warp-uniform)
		const i64 q = q0 + lane;
		unsigned m = 0;  // per element: red_flag
		if (q < L.fpacks) {
			const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
			const Pack<T> xv = load_pack(x + q * N);
			Pack<T> out;
			if (L.fip == 0) {
				const M yv = to_op(y[o]);
				const RedCtx<M> c = Op::template slice<M>(to_op(dy[o]), yv, assumed, L.scale, L.k);
				red_elems<Op, M, T, N>(xv.v, out.v, c);
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M xe = to_op(xv.v[e]);
					m |= red_flag<Op>(xe, yv) ? 1u << e : 0u;
				}
			} else {
				const i64 kq = (o * L.fip + q - bc_div(q, L.fmagic[1], L.fshift[1]) * L.fip) * N;
				const Pack<T> gv = load_pack(dy + kq), yp = load_pack(y + kq);
				bool bad = false;
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M yv = to_op(yp.v[e]), xe = to_op(xv.v[e]);
					const RedCtx<M> c = Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k);
					out.v[e] = from_op<T>(RedFast<Op, T>::elem(c, xe, bad));
					m |= red_flag<Op>(xe, yv) ? 1u << e : 0u;
				}
				if (bad) {
					// RedFast's quotient was out of its range somewhere:
					// the exact form for the whole pack (as red_elems).
#pragma unroll
					for (int e = 0; e < N; ++e) {
						const M yv = to_op(yp.v[e]);
						out.v[e] = from_op<T>(Op::elem(Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k),
								to_op(xv.v[e])));
					}
				}
			}
			store_pack(dx + q * N, out);
		}
		if (__ballot_sync(0xffffffffu, m != 0) != 0) red_flat_count_pack<T, Op>(ws, bcnt, bslot, local, L, q, m);
		if (Op::mend_mask) red_flat_bits_store<N>(red_flat_bits<Op>(ws, L.slices), q0, m);
	}
	if (local) {
		// The block's counts into the workspace, and its first indices
		// into the slots from the place the global count gives them.
		__syncthreads();
		int* gcnt = static_cast<int*>(ws);
		i64* gslot = red_flat_slots(ws, L.slices);
		for (int t = threadIdx.x; t < L.slices; t += blockDim.x) {
			const int c = bcnt[t];
			if (c == 0) continue;
			const int b = atomicAdd(gcnt + t, c);
			if (b + c > Op::flat_slots) *static_cast<volatile int*>(gcnt + L.slices) = 1;
			for (int i = 0; i < c && b + i < Op::flat_slots; ++i) gslot[t * SL + b + i] = bslot[t * SL + i];
		}
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_flat(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (Op::stats) {
		if (Op::provisional) red_flat_provisional<T, Op>(x, y, dy, dx, ws, L);
		return;
	}
	const RedAcc<M> assumed = Op::template assumed<M>();
	const i64 nth = grid_threads();
	for (i64 q = global_tid(); q < L.fpacks; q += nth) {
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		Pack<T> xv, out;
		if (Op::needs_x) xv = load_pack(x + q * N);
		if (L.fip == 0) {
			const M yv = Op::needs_y ? to_op(y[o]) : M(0);
			const RedCtx<M> c = Op::template slice<M>(to_op(dy[o]), yv, assumed, L.scale, L.k);
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c, Op::needs_x ? to_op(xv.v[e]) : M(0)));
		} else {
			const i64 kq = (o * L.fip + q - bc_div(q, L.fmagic[1], L.fshift[1]) * L.fip) * N;
			const Pack<T> gv = load_pack(dy + kq);
			Pack<T> yp;
			if (Op::needs_y) yp = load_pack(y + kq);
			bool bad = false;
#pragma unroll
			for (int e = 0; e < N; ++e) {
				const M yv = Op::needs_y ? to_op(yp.v[e]) : M(0), xe = Op::needs_x ? to_op(xv.v[e]) : M(0);
				const RedCtx<M> c = Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k);
				out.v[e] = from_op<T>(RedFast<Op, T>::elem(c, xe, bad));
			}
			if (bad) {
				// RedFast's quotient was out of its range somewhere: the
				// exact form for the whole pack (as red_elems).
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M yv = Op::needs_y ? to_op(yp.v[e]) : M(0), xe = Op::needs_x ? to_op(xv.v[e]) : M(0);
					out.v[e] = from_op<T>(Op::elem(Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k), xe));
				}
			}
		}
		store_pack(dx + q * N, out);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_row(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ RedAcc<M> sm[RED_BLOCK / 32];
	red_row_pass<T, Op, RED_FUSED>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_col(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ RedAcc<M> sm[Op::stats ? RED_BLOCK * RedColVec<T, Op>::n : 1];
	red_col_pass<T, Op, RED_FUSED>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_stats(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	if (L.mapping == RED_ROW) {
		red_row_pass<T, Op, RED_STATS>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	} else {
		red_col_pass<T, Op, RED_STATS>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_one(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats || Op::provisional) return;
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	red_col_pass<T, Op, RED_ONE>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
}

// reduce_strip: an op with statistics along an outer axis on dense
// operands (x and dx seen as [O, k, I], dy and y as [O, I]; x and dx
// 16-byte aligned), one block per strip: W = cvec*N adjacent slices (cvec
// 16-byte packs of every row, I a multiple of W) over all k positions. The
// block reads its strip once into dynamic shared memory, RED_STRIP_BATCH
// packs a thread at a time, accumulating each slice's statistics as it goes
// (thread t owns pack t % cvec of every row it loads, and the y of those
// slices where the op compares with it); combines them over the lanes that
// share a pack (an xor butterfly) and then over the warps in index order,
// a fixed order; forms each slice's context (Op::slice, as every other
// path); and writes dx from the packs it holds, each thread its own (the
// fast quotient where the op has one, the exact form for a pack where it
// is out of range, as reduce_flat). So x is read once, with no workspace
// and no block waiting for another, where var/std's two passes read it
// twice, the one kernel's tiles wait for the rest of their slice block,
// and the flat path of max, min and prod needs its atomics and a second
// launch. The launcher takes it where the strip fits in one block's shared
// memory (RED_STRIP_HEAD bytes of statistics and contexts, then k*cvec
// packs). Layout: k, scale, tiles (the strips), cvec, fip = I, fmagic[0]
// and fshift[0] divide by I/W (strips per outer index).
#define RED_STRIP_BATCH 8
#define RED_STRIP_VMAX 4
#define RED_STRIP_HEAD 4096
// RED_STRIP_CLUSTER: blocks per cluster of the clustered strip kernel
// (reduce_stripc; redStripCluster in ops/reduce.go).
#define RED_STRIP_CLUSTER 2
// red_strip is the strip kernel for C == 1 and, for C > 1 (compute
// capability 9.0, a thread block cluster of C blocks per strip), its
// clustered form: block b is part b % C of strip b / C and holds only rows
// [r*chunk, (r+1)*chunk) of it (L.chunk, r its cluster rank); each block
// publishes its partial statistics in shared memory, and after a cluster
// barrier reads all C of them through distributed shared memory and
// combines them in rank order (the same bits in every block). With half
// the rows per block a strip of 64-byte rows fits in shared memory where a
// whole one would not (4096 rows), and the wider rows are the faster ones
// (ops/reduce.go).
template <typename T, typename Op, int C>
__device__ __forceinline__ void red_strip(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int WMAX = RED_STRIP_VMAX * N;
	static_assert(sizeof(RedAcc<M>) * ((RED_BLOCK / 32) + 1) * WMAX + sizeof(RedCtx<M>) * WMAX <= RED_STRIP_HEAD,
			"the strip's sums and factors must fit in RED_STRIP_HEAD");
	RedAcc<M>* part = reinterpret_cast<RedAcc<M>*>(red_dyn);  // [warp][slice]
	RedAcc<M>* tot = part + (RED_BLOCK / 32) * WMAX;          // [slice]: the block's partial (C > 1)
	RedCtx<M>* cx = reinterpret_cast<RedCtx<M>*>(tot + WMAX);
	uint4* buf = reinterpret_cast<uint4*>(red_dyn + RED_STRIP_HEAD);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int vr = L.cvec;  // 1, 2 or 4
	const int sh = vr == 4 ? 2 : vr == 2 ? 1 : 0;
	const int v = tid & (vr - 1);
	const int W = vr * N;
	const i64 b = C == 1 ? (i64)blockIdx.x : (i64)(blockIdx.x / C);
	const i64 r0 = C == 1 ? 0 : (i64)(blockIdx.x % C) * L.chunk;
	const i64 o = bc_div(b, L.fmagic[0], L.fshift[0]);
	const i64 i0 = b * W - o * L.fip;
	const i64 base = o * L.k * L.fip + r0 * L.fip + i0 + v * N;
	const i64 rows = C == 1 ? L.k : max(min(L.chunk, L.k - r0), (i64)0);
	const int nv = (int)(rows << sh);  // packs in the block's part of the strip
	const i64 s0 = o * L.fip + i0;     // the strip's first slice in dy and y
	RedAcc<M> acc[N];
	M yv[N];
#pragma unroll
	for (int e = 0; e < N; ++e) {
		acc[e] = Op::template init<M>();
		yv[e] = Op::needs_y ? to_op(y[s0 + v * N + e]) : M(0);
	}
	for (int m0 = 0; m0 < nv; m0 += RED_BLOCK * RED_STRIP_BATCH) {
		uint4 r[RED_STRIP_BATCH];
#pragma unroll
		for (int i = 0; i < RED_STRIP_BATCH; ++i) {
			const int m = m0 + tid + RED_BLOCK * i;
			if (m < nv) r[i] = __ldg(reinterpret_cast<const uint4*>(x + base + (i64)(m >> sh) * L.fip));
		}
#pragma unroll
		for (int i = 0; i < RED_STRIP_BATCH; ++i) {
			const int m = m0 + tid + RED_BLOCK * i;
			if (m < nv) {
				buf[m] = r[i];
				Pack<T> xv;
				memcpy(&xv, &r[i], 16);
#pragma unroll
				for (int e = 0; e < N; ++e) Op::accum(acc[e], to_op(xv.v[e]), yv[e]);
			}
		}
	}
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		if (off >= vr) {
#pragma unroll
			for (int e = 0; e < N; ++e) Op::combine(acc[e], red_shfl_xor(acc[e], off));
		}
	}
	if (lane < vr) {
#pragma unroll
		for (int e = 0; e < N; ++e) part[warp * WMAX + lane * N + e] = acc[e];
	}
	__syncthreads();
	RedAcc<M> t;
	if (tid < W) {
		t = part[tid];
#pragma unroll
		for (int w = 1; w < RED_BLOCK / 32; ++w) Op::combine(t, part[w * WMAX + tid]);
		if (C > 1) tot[tid] = t;
	}
	if (C > 1) {
		red_cluster_arrive();
		red_cluster_wait();
		if (tid < W) {
			t = red_dsmem(tot + tid, 0);
#pragma unroll
			for (int r = 1; r < C; ++r) Op::combine(t, red_dsmem(tot + tid, r));
		}
		red_cluster_arrive();
	}
	if (tid < W) {
		const M ys = Op::needs_y ? to_op(y[s0 + tid]) : M(0);
		cx[tid] = Op::template slice<M>(to_op(dy[s0 + tid]), ys, t, L.scale, L.k);
	}
	__syncthreads();
	RedCtx<M> c[N];
#pragma unroll
	for (int e = 0; e < N; ++e) c[e] = cx[v * N + e];
#pragma unroll 4
	for (int m = tid; m < nv; m += RED_BLOCK) {
		const uint4 u = buf[m];
		Pack<T> xv, out;
		memcpy(&xv, &u, 16);
		bool bad = false;
#pragma unroll
		for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(RedFast<Op, T>::elem(c[e], to_op(xv.v[e]), bad));
		if (bad) {
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c[e], to_op(xv.v[e])));
		}
		store_pack(dx + base + (i64)(m >> sh) * L.fip, out);
	}
	// No block's shared memory goes while another block of the cluster may
	// still read its partials.
	if (C > 1) red_cluster_wait();
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_strip(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
	if (!Op::stats) return;
	red_strip<T, Op, 1>(x, y, dy, dx, L);
}

// reduce_stripc: the clustered strip kernel (see red_strip); empty below
// compute capability 9.0 and for ops without statistics (it is only
// launched from the compute_90 build). Layout: the strip kernel's, with
// chunk the rows per block and tiles RED_STRIP_CLUSTER blocks per strip.
template <typename T, typename Op>
__device__ __forceinline__ void reduce_stripc(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
#if __CUDA_ARCH__ >= 900
	if (!Op::stats) return;
	red_strip<T, Op, RED_STRIP_CLUSTER>(x, y, dy, dx, L);
#endif
}

// reduce_cluster: the cluster kernel, one tile per block (see
// red_cluster_totals); empty below compute capability 9.0 and for ops
// without statistics (it is only launched from the compute_90 build).
template <typename T, typename Op>
__device__ __forceinline__ void reduce_cluster(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
#if __CUDA_ARCH__ >= 900
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	constexpr int V = RedColVec<T, Op>::n;
	__shared__ __align__(16) RedAcc<M> sm[RED_BLOCK * V];
	red_col_tile_cvec<T, Op, RED_CLUSTER>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, blockIdx.x, sm);
	red_cluster_wait();
#endif
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_apply(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::stats) return;
	if (L.phase == RED_PHASE_TOTAL) {
		red_total<T, Op>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L);
		return;
	}
	if (L.phase == RED_PHASE_FLAT) {
		red_flat_fix<T, Op>(x, y, dy, dx, ws, L);
		return;
	}
	__shared__ RedAcc<M> sm[RED_BLOCK * RedColVec<T, Op>::n];
	if (L.mapping == RED_ROW) {
		red_row_pass<T, Op, RED_APPLY>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	} else {
		red_col_pass<T, Op, RED_APPLY>(x, y, dy, dx, static_cast<RedAcc<M>*>(ws), L, sm);
	}
}
