// Single-axis scan backward: given dy and the saved forward tensors, write
// dx = dL/dx for y = cumsum, cumprod, cummax, cummin or logcumsumexp of x
// along one axis (docs/semantics.md, section 4). Arithmetic is in opmath (float
// for f16/bf16/f32, double for f64), every dx is rounded once when stored.
//
// One recurrence serves every op. Number the elements of a slice in the
// order the forward scan visited them (k = 0 first; for a reverse forward
// scan that is the end of the axis). With g = dy, each op gives every
// element two factors a_k and c_k, and
//
//	S_k  = g_k + V_{k+1}            (V past the last element is 0)
//	dx_k = c_k == 0 ? 0 : c_k * S_k
//	V_k  = a_k (.) S_k              a (.) b = (a == 0 || b == 0) ? 0 : a*b
//
// so the gradient flowing in from later elements reaches element k scaled
// by a_k. The strong-zero product (.) keeps a cut (a == 0) exact: inf or NaN
// from later elements never leak past it. Per op:
//
//	cumsum        a = 1,                c = 1
//	cumprod       a = x_k,              c = y_{k-1} (1 at k = 0)
//	cummax/min    a = t_k ? 0 : 1,      c = t_k ? 1 : 0
//	logcumsumexp  a = exp(y_{k-1}-y_k), c = exp(x_k - y_k)
//
// where t_k says that k is the index the forward picks at k. The element
// map V -> a (.) (g + V) is affine, V -> u + a (.) V with u = a (.) g, and
// two maps compose associatively:
//
//	(a1, u1) after (a2, u2) = (a1 (.) a2, u1 + a1 (.) u2)
//
// which turns the backward pass into a scan: a thread composes the maps of
// its run of elements, the threads of a tile scan their maps (shuffles and
// shared memory, in a fixed order), and the tiles of one slice chain
// through a look-back in the workspace whose result is the sequential
// chain of tile maps: deterministic and bit-stable. Nothing is O(n^2): a
// thread touches its run a constant number of times, a tile's look-back
// folds only the maps of tiles that are still running.
//
// cummax/cummin and cumprod also need a forward state, an exact associative
// scan in the forward direction: the running extremum of x with its NaN
// rule (t_k = x_k is NaN, or the running value before k is not NaN and
// x_k >= it; <= for cummin), and for cumprod whether a zero of x came
// before k (dx_k is then 0, PyTorch's third region, even where y is NaN).
//
// The direction is a run-time flag: a thread loads its run in memory order
// and reverses it in registers when the forward scan ran from the end, so
// every loop below walks scan order.
//
// Mappings (chosen by the launcher from the shape):
//   row  the axis is the innermost dim: `split` threads (32..256) share a
//        slice, each owning a run of ScanItems::row consecutive elements
//        (16-byte packs when the operands are contiguous along the axis and
//        aligned); 256/split slices per block.
//   col  otherwise: the 32 lanes of a warp take 32 consecutive slices
//        (coalesced across the inner dims) and `split` warps (1..8) share
//        the axis, each owning `items` (<= ScanItems::col) consecutive
//        elements.
// A slice longer than one tile (split runs) is cut into `chunks` tiles.
// Blocks take tiles through a ticket counter in carry order (the last tile
// in scan order first) and chain them with the look-back; a tile only waits
// on tiles with lower tickets, which are running or done. With a forward
// state, the row mapping runs two passes first: phase 1 writes each tile's
// forward aggregate, phase 2 turns them into exclusive prefixes per slice.
// The col mapping's cumprod computes the state in the main launch, and
// only for the look-back units whose dx depends on it (scan_fwd_unit).
//
// cummax and cummin in the col mapping take another order (ext),
// which reads x once rather than twice: tiles go in scan order and chain
// the forward state through the look-back, and the carry is left out,
// because it reaches only one element of a tile. With a = 0 at every
// take-over, V after the tile stops at the tile's last take-over k* and
// adds to dx there, and nowhere else. So each tile writes dx with V after
// it taken as 0, and records its map and, where it has a take-over, k*
// with the dx value there; scan_ext_fix then walks each slice's tile maps
// from the end and writes dx at each k* with the carry added: with float
// opmath in blocks of the same launch that come after every tile, with
// double in a second launch (SCAN_EXT_FIX).
#pragma once
#include "common.cuh"

#define SCAN_THREADS 256
#define SCAN_WARPS 8
#define SCAN_SRANK (BC_MAX_RANK - 1)
// SCAN_COUNTER: the workspace's first bytes, the ticket counter and room to
// keep what follows 16-byte aligned (ops/scan.go's scanCounter).
#define SCAN_COUNTER 16

enum { SCAN_MAIN = 0, SCAN_FWD_TILES = 1, SCAN_FWD_PREFIX = 2, SCAN_EXT_FIX = 4 };

// ScanLayout is passed by value (mirrored by scanLayout in ops/scan.go).
struct ScanLayout {
	i64 n;        // elements along the scan axis (>= 1)
	i64 nslices;  // slices: the product of the other dims
	i64 chunks;   // tiles per slice; > 1 chains tiles through the workspace
	i64 units;    // look-back units: slices (row) or 32-slice groups (col)
	int srank;    // merged slice dims, 0..SCAN_SRANK
	int reverse;  // the forward scan ran from the end of the axis
	int phase;    // SCAN_MAIN, SCAN_FWD_TILES, SCAN_FWD_PREFIX or SCAN_EXT_FIX
	int split;    // row: threads per slice; col: warps along the axis
	int items;    // col: elements per thread per tile (row: ScanItems::row)
	int vec;      // row: every operand has unit stride along the axis
	i64 sdim[SCAN_SRANK];        // slice dims, outermost first
	unsigned long long smagic[SCAN_SRANK];  // division by sdim: see bc_div
	int sshift[SCAN_SRANK + 1];
	i64 sstride[4][SCAN_SRANK];  // dy, x, y, dx strides of the slice dims
	i64 astride[4];              // dy, x, y, dx strides along the axis
	i64 ws_flags;    // workspace byte offsets: tile flags (double opmath),
	i64 ws_agg;      // tile maps,
	i64 ws_incl;     // values after them,
	i64 ws_fwd;      // forward values,
	i64 ws_fix;      // take-over records (ext order),
	i64 ws_unitflag; // unit flags (col cumprod); the ticket counter is at 0
	// A col ticket t names tile row t / units and look-back unit t % units:
	// bc_div's constants for the units (0 in the row mapping, which divides).
	unsigned long long tmagic;
	int tshift;
	int lsplit;  // log2(split): split is a power of two
	// The fill blocks (see scan_take): the first `fillers` tickets set
	// [SCAN_COUNTER, ws_fill) of the workspace to 0xff bytes, a share each
	// (0: the row mapping's forward-state passes fill it).
	i64 ws_fill;
	int fillers;
	int pad_;
};
static_assert(sizeof(ScanLayout) == 536, "ScanLayout must match ops/scan.go");

// FixRec is a tile's take-over record (ext order): dx at its last take-over
// k* without the carry, and k* as an offset in the tile.
template <typename M> struct __align__(2 * sizeof(M)) FixRec {
	M v;
	int k;
};

// Elements per thread per tile, at most (a run): 16, 8 for f64, by default;
// more where the registers allow it (cumsum, and cummax/cummin whose
// factors are bits): more bytes in flight per thread and fewer tiles. The
// choice keeps every kernel clear of register spills under ptxas's
// occupancy heuristics (go run ./gen -verify checks it); ops/scan.go's
// scanItems mirrors it.
template <typename T, typename Op> struct ScanItems {
	static constexpr int row = sizeof(T) == 8 ? 8 : 16, col = row;
};

// Aff is the map V -> u + a (.) V.
template <typename M> struct __align__(2 * sizeof(M)) Aff {
	M a, u;
};

// sz is the strong-zero product: 0 when either factor is 0, even inf or NaN.
template <typename M> __device__ __forceinline__ M sz(M a, M b) {
	return (a == M(0) || b == M(0)) ? M(0) : a * b;
}
template <typename M> __device__ __forceinline__ Aff<M> aff_identity() { return Aff<M>{M(1), M(0)}; }
// compose(p, q) is p after q (q is nearer the start of the carry) and
// apply(p, v) is p(v); Op::mul is the op's product a (.) v, the strong-zero
// product or a cheaper form where a is known to be 1 (cumsum) or 0/1
// (cummax, cummin).
template <typename Op, typename M> __device__ __forceinline__ Aff<M> compose(Aff<M> p, Aff<M> q) {
	return Aff<M>{Op::mul(p.a, q.a), p.u + Op::mul(p.a, q.u)};
}
template <typename Op, typename M> __device__ __forceinline__ M apply(Aff<M> p, M v) { return p.u + Op::mul(p.a, v); }

template <typename M> __device__ __forceinline__ bool scan_finite(M v) { return v - v == M(0); }
// Infinity and NaN as constants (common.cuh's bc_inf and bc_nan divide at
// run time, which costs a division routine per call).
template <typename M> __device__ __forceinline__ M scan_inf();
template <> __device__ __forceinline__ float scan_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double scan_inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename M> __device__ __forceinline__ M scan_nan();
template <> __device__ __forceinline__ float scan_nan<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double scan_nan<double>() { return __longlong_as_double(0x7fffffffffffffffLL); }

// ---- ops ----------------------------------------------------------------
//
// prep(x, y, yp, first, single, f, a, c) sets the factors of one element
// from its saved x and y, yp = y of the element before it in scan order
// (first: there is none), single (the axis has length 1) and f, the forward
// state before it. grad(g) is the gradient the op uses for dy.

// StrongZero: the factors are general numbers; a (.) v and dx = c*S keep
// their zeros exact.
struct StrongZero {
	static constexpr bool strong = true;
	template <typename M> __device__ static M mul(M a, M v) { return sz(a, v); }
	template <typename M> __device__ static M scale(M c, M s) { return c == M(0) ? M(0) : c * s; }
};

// NoFwd is the forward state of ops that need none.
struct NoFwd {
	static constexpr bool fwd = false, fwd_shortcut = false, mask_factors = false, strong = false;
	template <typename M> __device__ static M x_fill() { return M(0); }
	template <typename M> __device__ static M fwd_identity() { return M(0); }
	template <typename M> __device__ static M fwd_value(M) { return M(0); }
	template <typename M> __device__ static M fwd_combine(M a, M) { return a; }
	template <typename M, int N> __device__ static M fold(const M (&)[N]) { return M(0); }
};

// fold_values combines the forward values of x[0..N) (in any order: the
// forward combines are exact and commutative).
template <typename Op, typename M, int N> __device__ __forceinline__ M fold_values(const M (&x)[N]) {
	M m = Op::template fwd_identity<M>();
#pragma unroll
	for (int i = 0; i < N; ++i) m = Op::fwd_combine(m, Op::fwd_value(x[i]));
	return m;
}

// cumsum: dx_k = sum_{j>=k} g_j (the reverse cumsum of dy).
struct CumsumBw : NoFwd {
	static constexpr bool needs_x = false, needs_y = false;
	template <typename M> __device__ static M mul(M, M v) { return v; }
	template <typename M> __device__ static M scale(M, M s) { return s; }
	template <typename M> __device__ static M grad(M g) { return g; }
	template <bool Narrow_, typename M> __device__ static void prep(M, M, M, bool, bool, M, M& a, M& c) {
		a = M(1);
		c = M(1);
	}
};

template <typename T> struct ScanItems<T, CumsumBw> {
	static constexpr int row = sizeof(T) == 8 ? 8 : sizeof(T) == 2 ? 32 : 16, col = sizeof(T) == 8 ? 8 : 32;
};

// cumprod: dx_k = y_{k-1} * sum_{j>=k} g_j * x_{k+1}...x_j, exact with zeros
// and without division; PyTorch's three regions follow: before the first
// zero z1 the usual value, at z1 the value with the products cut at the
// second zero, after z1 exactly 0 (the forward state: a zero came before
// k). Where x_k is inf or NaN and no zero came before, dx_k is NaN as
// PyTorch's division gives, unless the axis has length 1 (dx = dy).
struct CumprodBw : StrongZero {
	static constexpr bool needs_x = true, needs_y = true;
	static constexpr bool fwd = true, mask_factors = false;
	// Phase 1 can tell a tile has no zero from y at its last element alone
	// (nonzero, not NaN), and reads x only otherwise.
	static constexpr bool fwd_shortcut = true;
	template <typename M> __device__ static M fwd_identity() { return M(0); }
	template <typename M> __device__ static M x_fill() { return M(1); }
	template <typename M> __device__ static M fwd_value(M x) { return x == M(0) ? M(1) : M(0); }
	template <typename M> __device__ static M fwd_combine(M a, M b) { return a > b ? a : b; }
	template <typename M, int N> __device__ static M fold(const M (&x)[N]) { return fold_values<CumprodBw>(x); }
	template <typename M> __device__ static M grad(M g) { return g; }
	template <bool Narrow_, typename M> __device__ static void prep(M x, M, M yp, bool first, bool single, M f, M& a, M& c) {
		a = x;
		c = first ? M(1) : yp;
		const bool nan = !single & (c != M(0)) & !scan_finite(x);
		c = f != M(0) ? M(0) : nan ? scan_nan<M>() : c;
	}
};

// bf16 cumprod col runs hold 15: at 16 the 80 registers of the compute_80
// build (3 blocks per SM) spill loaded values between the operands' loads,
// each spill store waiting for its load, so the tile makes one round trip
// per operand; at 15 nothing spills, and shorter runs are slower.
// logcumsumexp issues its loads before its spills and keeps 16 (shorter
// runs slow it down).
template <> struct ScanItems<__nv_bfloat16, CumprodBw> {
	static constexpr int row = 16, col = 15;
};

__device__ __forceinline__ float scan_fmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double scan_fmax(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ float scan_fmin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double scan_fmin(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ float scan_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double scan_fma(double a, double b, double c) { return fma(a, b, c); }

// Running extremum with PyTorch's NaN rule: a NaN sticks; E > 0 max, else min.
// The factors are 0 or 1 (a = 1 - c), so a run keeps them as one bit mask.
template <int E> struct ExtremumFwd {
	static constexpr bool fwd = true, fwd_shortcut = false, mask_factors = true, strong = false;
	template <typename M> __device__ static M fwd_identity() { return E > 0 ? -scan_inf<M>() : scan_inf<M>(); }
	template <typename M> __device__ static M x_fill() { return fwd_identity<M>(); }
	template <typename M> __device__ static M fwd_value(M x) { return x; }
	// fwd_combine takes v when it is NaN or reaches m (>= for max, <= for
	// min): a NaN m compares false with a number, so it sticks. Ties take v,
	// the same value (up to the sign of a zero, which no comparison sees).
	// One form without branches: the compiler makes it two compares and a
	// select, the same compares prep's take-over test makes.
	template <typename M> __device__ static bool takes(M m, M v) {
		return bc_isnan(v) | (E > 0 ? v >= m : v <= m);
	}
	template <typename M> __device__ static M fwd_combine(M m, M v) { return takes(m, v) ? v : m; }
	// fold is the forward total of a run: two instructions per element
	// (fmax or fmin, which skip NaN, and an fma that turns s into NaN at
	// an inf or NaN), and the NaN test per element only where s says there
	// may be one.
	template <typename M, int N> __device__ static M fold(const M (&x)[N]) {
		M m = fwd_identity<M>(), s = M(0);
#pragma unroll
		for (int i = 0; i < N; ++i) {
			m = E > 0 ? scan_fmax(m, x[i]) : scan_fmin(m, x[i]);
			s = scan_fma(x[i], M(0), s);
		}
		if (bc_isnan(s)) {
			bool nan = false;
#pragma unroll
			for (int i = 0; i < N; ++i) nan = nan | bc_isnan(x[i]);
			if (nan) m = scan_nan<M>();
		}
		return m;
	}
};

// cummax (E = 1) / cummin (E = -1): dx_k = sum of g_j over the j whose
// forward index is k, a gather (no atomics): t_k holds when x_k is NaN
// (each NaN takes over), or when the running extremum before k is not NaN
// and x_k >= it (<= for cummin: the LAST occurrence wins ties); a running
// NaN is never replaced by a number.
template <int E> struct CumExtBw : ExtremumFwd<E> {
	static constexpr bool needs_x = true, needs_y = false;
	template <typename M> __device__ static M mul(M a, M v) { return a != M(0) ? v : M(0); }
	template <typename M> __device__ static M scale(M c, M s) { return c != M(0) ? s : M(0); }
	template <typename M> __device__ static M grad(M g) { return g; }
	// The factors are the bit t_k = take(f, x_k): c = t, a = 1 - t. x >= f
	// is false for a NaN f, so a running NaN is never replaced by a number.
	// ScanRun keeps the bits (MaskTake) rather than calling prep.
	template <typename M> __device__ static bool take(M f, M x) { return ExtremumFwd<E>::takes(f, x); }
	template <bool Narrow_, typename M> __device__ static void prep(M x, M, M, bool, bool, M f, M& a, M& c) {
		a = take(f, x) ? M(0) : M(1);
		c = M(1) - a;
	}
};
typedef CumExtBw<1> CummaxBw;
typedef CumExtBw<-1> CumminBw;

// MaskTake calls Op::take for the mask ops only (the others have none).
template <typename Op> struct MaskTake {
	template <typename M> __device__ static bool take(M, M) { return false; }
};
template <int E> struct MaskTake<CumExtBw<E> > {
	template <typename M> __device__ static bool take(M f, M x) { return CumExtBw<E>::take(f, x); }
};
// Direct<Op>::on: a run of plain numbers has factors the op reads off its
// operands, a = x and c = y before (cumprod), and needs no forward state
// (ScanRun::direct_ok).
template <typename Op> struct Direct {
	static constexpr bool on = false;
};
template <> struct Direct<CumprodBw> {
	static constexpr bool on = true;
};

template <typename T, int E> struct ScanItems<T, CumExtBw<E> > {
	static constexpr int row = sizeof(T) == 2 ? 32 : 16, col = sizeof(T) == 8 ? 16 : 32;
};
// The bf16 cummax/cummin col runs hold 20 and load dy and x together
// (ScanRun::load): at 32, held at once they spill 306 bytes and run
// slower than one operand after the other (a round trip each); at 20
// nothing spills and both go out at once (longer runs are slower).
template <int E> struct ScanItems<__nv_bfloat16, CumExtBw<E> > {
	static constexpr int row = 32, col = 20;
};

// scan_exp is exp, or for a 16-bit dtype (Narrow) the hardware's 2^x of
// x * log2(e), squared from 2^(x log2(e) / 2): relative error near 2^-20
// for the arguments that matter (|x| < 104; beyond, the result is 0 or inf
// either way), far below the 2^-9 (bf16) or 2^-12 (f16) of the rounding
// to the dtype. The ftz form of ex2 flushes subnormal results, but half
// the exponent keeps every result of x >= -174 normal, and the square (a
// plain multiply) rounds into the subnormals as exp does: three
// instructions, where the non-ftz ex2 tests its argument and scales
// before and after under a predicate (six, and a predicate register).
// -DSCAN_PRECISE_EXP (NVCC_EXTRA of scripts/ptx-variant.sh) builds expf
// instead, to time the two.
template <bool Fast, typename M> __device__ __forceinline__ M scan_exp(M v) { return bc_exp(v); }
template <> __device__ __forceinline__ float scan_exp<true, float>(float v) {
#ifdef SCAN_PRECISE_EXP
	return bc_exp(v);
#else
	float r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v * 0.72134752044448170f));
	return r * r;
#endif
}

// logcumsumexp: dx_k = exp(x_k - y_k) * T_k with T_k = g_k + exp(y_k -
// y_{k+1}) T_{k+1}, PyTorch's exp(x_k) sum_{j>=k} g_j exp(-y_j) without
// overflow: every exponent is <= 0 for the nondecreasing y. A leading -inf
// run (y = -inf) gives NaN, as PyTorch; a NaN in dy contributes nothing, as
// PyTorch's log-space form (which maps it to the lowest value) does. At
// the slice's first element a is exp(yp - y) like anywhere else (yp = 0
// there, any number): V at the first element reaches no dx, and the maps
// it enters (its run's, warp's and tile's) are composed only into values
// for elements before it, of which there are none, so no test is needed.
struct LogcumsumexpBw : NoFwd, StrongZero {
	static constexpr bool needs_x = true, needs_y = true, strong = true;
	template <typename M> __device__ static M grad(M g) { return bc_isnan(g) ? M(0) : g; }
	template <bool Narrow_, typename M> __device__ static void prep(M x, M y, M yp, bool, bool, M, M& a, M& c) {
		a = scan_exp<Narrow_>(yp - y);
		c = scan_exp<Narrow_>(x - y);
	}
};

// ColFetch: how a chunked col kernel helps its loads along, per op, where
// that is faster (bf16 on compute_80 and later):
// - prefetch: each warp first asks L2 for the rows that the same warp of
//   its unit's next tile will load (scan_col_prefetch), so that DRAM works
//   ahead of the tiles: cumsum and cumprod;
// - l2_128: the run's element loads fetch whole 128-byte L2 lines
//   (scan_ld_l2): cummax, cummin and logcumsumexp, for which it is faster
//   than the prefetch.
// No op takes both (both at once are slower than either), and the other
// dtypes take neither (the prefetch slows the f32 kernels down).
template <typename T, typename Op> struct ColFetch {
	static constexpr bool prefetch = false, l2_128 = false;
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct ColFetch<__nv_bfloat16, CumsumBw> {
	static constexpr bool prefetch = true, l2_128 = false;
};
template <> struct ColFetch<__nv_bfloat16, CumprodBw> {
	static constexpr bool prefetch = true, l2_128 = false;
};
template <int E> struct ColFetch<__nv_bfloat16, CumExtBw<E> > {
	static constexpr bool prefetch = false, l2_128 = true;
};
template <> struct ColFetch<__nv_bfloat16, LogcumsumexpBw> {
	static constexpr bool prefetch = false, l2_128 = true;
};
#endif

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

// The look-back part of the workspace holds 0xff bytes before the tiles
// write it (the fill blocks', see scan_take, or the row mapping's first
// pass): SCAN_NONE is a flag, or a 32-bit slot, that no tile has written
// yet (and the ticket counter starts at all ones).
#define SCAN_NONE 0xffffffffu

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

// ---- one thread's run of elements ----------------------------------------

// ScanRun holds a thread's cnt consecutive elements k0.. of one slice.
// After load the arrays are in scan order: index i is element k0 + i, or
// with rev element k0 + N-1-i, and the valid indices are [lo, hi). Col:
// the run belongs to the col mapping (no packs).
template <typename T, typename Op, int N, bool Col>
struct ScanRun {
	typedef typename OpMath<T>::type M;
	M g[N], a[N], c[N];  // a and c unused with Op::mask_factors
	M xv[N], yv[N];
	M yb;          // y of the element before the run in scan order
	unsigned cm;   // Op::mask_factors: bit i is c_i (and a_i = 1 - c_i)
	bool quiet;    // Op::mask_factors: cm is 0 in every lane of the warp (set by the caller)
	i64 k0;
	int cnt, lo, hi;
	bool rev;


	__device__ __forceinline__ void init(i64 k, int n, bool r) {
		quiet = false;
		k0 = k;
		cnt = n;
		rev = r;
		lo = r ? N - n : 0;
		hi = r ? N : n;
	}

	// get loads one operand's run in scan order: the col mapping (vec
	// false) with load_scan, the row mapping with load_run and a flip
	// (load_scan is slower there).
	__device__ __forceinline__ void get(const T* __restrict__ p, i64 base, i64 st, bool vec, M (&v)[N], M fill) {
		if (Col) {
			load_scan<T, N>(p, base, st, k0, cnt, rev, v, fill);
		} else {
			load_run<T, N>(p, base, st, k0, cnt, vec, v, fill);
			flip(v, rev);
		}
	}

	__device__ __forceinline__ void load_x(const T* __restrict__ x, const ScanLayout& L, const i64 (&off)[4], bool vec) {
		get(x, off[1], L.astride[1], vec, xv, Op::template x_fill<M>());
	}

	// fetch and conv are get in two halves (see fetch_steps): fetch loads
	// one operand's run as stored, element by element (the col mapping in
	// scan order, the row mapping in memory order), and conv converts it
	// into scan order, fill past the run.
	__device__ __forceinline__ void fetch(const T* __restrict__ p, i64 base, i64 st, T (&r)[N]) {
		const T* q = p + base + k0 * st;
		if (Col) {
			fetch_steps<T, N, ColFetch<T, Op>::l2_128>(q + (rev ? (N - 1) * st : 0), rev ? -st : st, cnt, rev, r);
		} else {
			fetch_steps<T, N>(q, st, cnt, false, r);
		}
	}

	__device__ __forceinline__ void conv(const T (&r)[N], M (&v)[N], M fill) {
		cvt_fill<T, N>(r, cnt, Col && rev, v, fill);
		if (!Col) flip(v, rev);
	}

	// fetch_packs loads one operand's full run in 16-byte packs (row
	// mapping, unit stride, aligned) as 32-bit words, and conv_packs
	// converts them into scan order: the words keep a 16-bit pair in one
	// register and need no instruction between a load and its use.
	static constexpr int NW = N * (int)sizeof(T) / 4;
	__device__ __forceinline__ void fetch_packs(const T* __restrict__ q, unsigned (&w)[NW]) {
#pragma unroll
		for (int i = 0; i < NW / 4; ++i) {
			const uint4 r = __ldg(reinterpret_cast<const uint4*>(q) + i);
			w[4 * i] = r.x;
			w[4 * i + 1] = r.y;
			w[4 * i + 2] = r.z;
			w[4 * i + 3] = r.w;
		}
	}

	// The flip as two straight conversions: rev is uniform, and selects
	// would hold both orders live at once.
	__device__ __forceinline__ void conv_packs(const unsigned (&w)[NW], M (&v)[N]) {
		if (rev) {
#pragma unroll
			for (int i = 0; i < N; ++i) v[i] = WordCvt<T>::op(w, N - 1 - i);
		} else {
#pragma unroll
			for (int i = 0; i < N; ++i) v[i] = WordCvt<T>::op(w, i);
		}
	}

	static __device__ __forceinline__ bool aligned16(const T* q) {
		return (reinterpret_cast<unsigned long long>(q) & 15) == 0;
	}

	// load reads dy, and x and y where the op needs them. Grouped: every
	// load of the run first (16-byte packs for a full, aligned row run),
	// then the conversions; a conversion right after one operand's loads
	// would wait for them before the next operand's loads issue. One
	// operand after the other (get) elsewhere: cumsum reads dy alone, and
	// the col kernels of cummax and cummin other than bf16 keep runs of 32
	// elements (bf16 takes 20 grouped, see ScanItems: 32 held at once
	// spill). The row kernels keep the grouped element loads as the
	// fallback of the packs: with get there, cummax and cummin f32 along
	// axis 1 are slower. y before the run (yb) also fills y past the run,
	// so that in scan order the element before index i is i - 1 (or yb at
	// i = 0) even where the run starts at lo > 0; where the run starts the
	// slice yb is 0, or 1 for a direct op (its c there).
	__device__ __forceinline__ void load(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
			const ScanLayout& L, const i64 (&off)[4], bool vec) {
		const i64 kb = rev ? k0 + cnt : k0 - 1;
		const bool hasb = Op::needs_y && cnt > 0 && kb >= 0 && kb < L.n;
		const M yb0 = Direct<Op>::on && cnt > 0 ? M(1) : M(0);
		const T* qg = dy + off[0] + k0;
		const T* qx = x + off[1] + k0;
		const T* qy = y + off[2] + k0;
		const bool two = Op::needs_x || Op::needs_y;
		T rb = scan_bits0<T>();
		if (!Col && two && vec && cnt == N && aligned16(qg) && (!Op::needs_x || aligned16(qx)) &&
				(!Op::needs_y || aligned16(qy))) {
			unsigned wg[NW], wx[NW], wy[NW];
			if (hasb) rb = scan_ld(y + off[2] + kb * L.astride[2]);
			fetch_packs(qg, wg);
			if (Op::needs_x) fetch_packs(qx, wx);
			if (Op::needs_y) fetch_packs(qy, wy);
			yb = hasb ? to_op(rb) : yb0;
			conv_packs(wg, g);
			if (Op::needs_x) conv_packs(wx, xv);
			if (Op::needs_y) conv_packs(wy, yv);
		} else if (two && !(Col && Op::mask_factors && !Narrow<T>::wide)) {
			T rg[N], rx[N], ry[N];
			if (hasb) rb = scan_ld(y + off[2] + kb * L.astride[2]);
			fetch(dy, off[0], L.astride[0], rg);
			if (Op::needs_x) fetch(x, off[1], L.astride[1], rx);
			if (Op::needs_y) fetch(y, off[2], L.astride[2], ry);
			yb = hasb ? to_op(rb) : yb0;
			conv(rg, g, M(0));
			if (Op::needs_x) conv(rx, xv, Op::template x_fill<M>());
			if (Op::needs_y) conv(ry, yv, yb);
		} else {
			get(dy, off[0], L.astride[0], vec, g, M(0));
			if (Op::needs_x) load_x(x, L, off, vec);
			if (Op::needs_y) {
				yb = hasb ? to_op(scan_ld(y + off[2] + kb * L.astride[2])) : yb0;
				get(y, off[2], L.astride[2], vec, yv, yb);
			}
		}
#pragma unroll
		for (int i = 0; i < N; ++i) g[i] = Op::grad(g[i]);
	}

	// store writes dx; skip (col, scan order) is an index left out.
	__device__ __forceinline__ void store(T* __restrict__ dx, const ScanLayout& L, const i64 (&off)[4], bool vec,
			int skip = -1) {
		if (Col) {
			store_scan<T, N>(dx, off[3], L.astride[3], k0, cnt, rev, g, skip);
		} else {
			flip(g, rev);
			store_run<T, N>(dx, off[3], L.astride[3], k0, cnt, vec, g);
		}
	}

	// fwd_total combines the forward values of the run (in any order: the
	// forward combines are exact and commutative). Past the run x holds
	// Op::x_fill, whose forward value changes nothing.
	__device__ __forceinline__ M fwd_total() const {
		return Op::template fold<M, N>(xv);
	}

	// y_before is y of the element before index i in scan order (load
	// filled y before lo with yb).
	__device__ __forceinline__ M y_before(int i) const { return i > 0 ? yv[i > 0 ? i - 1 : 0] : yb; }

	// nan_before: y before some element of the run is NaN (cumprod's dx
	// depends on the forward state only there, see scan_fwd_unit).
	__device__ __forceinline__ bool nan_before() const {
		bool nan = false;
#pragma unroll
		for (int i = 0; i < N; ++i) nan = nan | bc_isnan(y_before(i));
		return nan;
	}

	// valid_mask has bit i set for the valid indices [lo, hi).
	__device__ __forceinline__ unsigned valid_mask() const {
		const unsigned below_hi = hi >= 32 ? 0xffffffffu : (1u << hi) - 1u;
		const unsigned below_lo = lo >= 32 ? 0xffffffffu : (1u << lo) - 1u;
		return below_hi & ~below_lo;
	}

	// prep sets a and c of every element, walking in scan order from the
	// forward state f before the run. It has no branches: the factors of
	// every index are computed, and outside [lo, hi) replaced by a = c = 1
	// (a mask op: c = 0), which passes V through and leaves the forward
	// state alone: there x holds Op::x_fill, the forward identity, g is 0
	// and dx is not stored.
	__device__ __forceinline__ void prep(M f, const ScanLayout& L) {
		const bool single = L.n == 1;
		// The slice's first element in scan order is index lo of the run
		// that starts the slice.
		const int ifirst = (rev ? k0 + cnt == L.n : k0 == 0) ? lo : -1;
		const unsigned vm = valid_mask();
		cm = 0;
		if (!Op::mask_factors && !Direct<Op>::on && sizeof(M) == 4 && cnt == N) {
			// A full run (lo = 0, hi = N): every index is valid, and the
			// slice's first element can only be index 0, so the factors
			// need neither the range mask nor a first test per element,
			// which makes logcumsumexp faster. Not where the second loop
			// costs more than it saves: a Direct op, whose full runs
			// mostly skip prep (its row kernel spills with it); f64 (its
			// row kernel spills with it). The bf16 col kernel takes it:
			// with exp in three instructions and no first test in
			// logcumsumexp's prep it spills less with it than without.
			const bool first0 = ifirst == 0;
#pragma unroll
			for (int i = 0; i < N; ++i) {
				Op::template prep<Narrow<T>::value>(xv[i], yv[i], y_before(i), i == 0 && first0, single, f, a[i], c[i]);
				if (Op::fwd) f = Op::fwd_combine(f, Op::fwd_value(xv[i]));
			}
			return;
		}
#pragma unroll
		for (int i = 0; i < N; ++i) {
			const M yp = y_before(i);
			M ai, ci;
			if (Op::mask_factors) {
				if (MaskTake<Op>::take(f, xv[i])) cm |= 1u << i;
			} else {
				Op::template prep<Narrow<T>::value>(xv[i], yv[i], yp, i == ifirst, single, f, ai, ci);
				const bool v = (vm >> i & 1u) != 0;
				a[i] = v ? ai : M(1);
				c[i] = v ? ci : M(1);
			}
			if (Op::fwd) f = Op::fwd_combine(f, Op::fwd_value(xv[i]));
		}
		cm &= vm;
	}

	// plain_pair and plain_done test values for finite and nonzero, two
	// instructions a value: an fma that turns s into NaN at inf or NaN,
	// and a running minimum m of |v| (which skips NaN); s and m start at
	// 0 and inf.
	static __device__ __forceinline__ void plain_pair(M& s, M& m, M u, M v) {
		s = scan_fma(u, M(0), scan_fma(v, M(0), s));
		m = scan_fmin(m, scan_fmin(bc_fabs(u), bc_fabs(v)));
	}
	static __device__ __forceinline__ bool plain_done(M s, M m) { return s == M(0) && m > M(0); }

	// direct_ok: a Direct op's run takes the direct form: every x of the
	// run and every y before one of its elements is finite and nonzero
	// (past the run x holds 1, y holds yb, which is 1 where the run starts
	// the slice: c there). Then no zero came before any element (y before
	// it would be 0 or NaN), so the forward state is not needed, a = x and
	// c = y before: the factors of prep's plain run, without prep. An
	// empty run passes too.
	__device__ __forceinline__ bool direct_ok() const {
		if (!Direct<Op>::on) return false;
		M s = M(0), m = scan_inf<M>();
#pragma unroll
		for (int i = 0; i < N; ++i) plain_pair(s, m, xv[i], y_before(i));
		return cnt == 0 || plain_done(s, m);
	}

	// setup sets the factors, directly where direct_ok passed (fast), and
	// returns whether the run is plain (Op::strong only).
	__device__ __forceinline__ bool setup(bool fast, M f, const ScanLayout& L) {
		if (fast) {
			prep_direct();
		} else if (Op::mask_factors && quiet) {
			cm = 0u;
		} else {
			prep(f, L);
		}
		return Op::strong && (fast || plain_run());
	}

	// prep_direct sets the factors of a run that direct_ok passed: a = x,
	// c = y before; with them the run is plain (plain_run would hold), and
	// aggregate and finish compute what prep's factors give, bit for bit.
	__device__ __forceinline__ void prep_direct() {
#pragma unroll
		for (int i = 0; i < N; ++i) {
			a[i] = xv[i];
			c[i] = y_before(i);
		}
	}

	// plain_run tells whether every a and c of the run is finite and
	// nonzero (outside [lo, hi) both are 1). Then the strong-zero products
	// are plain products (up to the sign of a zero result), which aggregate
	// and finish use: the common case skips the zero tests.
	__device__ __forceinline__ bool plain_run() const {
		M s = M(0), m = scan_inf<M>();
#pragma unroll
		for (int i = 0; i < N; ++i) plain_pair(s, m, a[i], c[i]);
		return plain_done(s, m);
	}

	// bit(m, i) is c_i of a mask op (a_i is its complement) from m = cm.
	static __device__ __forceinline__ bool bit(unsigned m, int i) { return (m & (1u << i)) != 0u; }
	// opaque_cm is cm through an empty asm, so that finish tests its bits
	// afresh: left to share aggregate's tests, the compiler keeps one
	// predicate per element alive across the scans, each in a register.
	// f64 does not use it: there the fresh tests cost more registers
	// (spills in the row kernel) than the kept predicates.
	__device__ __forceinline__ unsigned opaque_cm() const {
		unsigned m;
		asm volatile("mov.b32 %0, %1;" : "=r"(m) : "r"(cm));
		return m;
	}

	// aggregate composes the element maps of the run: V at its first
	// element in scan order as a map of V after its last. Past the run g =
	// 0 and a = 1: those elements pass V through, so no test is needed.
	__device__ __forceinline__ Aff<M> aggregate(bool plain) const {
		Aff<M> acc = aff_identity<M>();
		if (Op::mask_factors) {
			// a is 0 or 1: V at the first element is the sum of g up to
			// the first index with c = 1, and passes V after the run
			// through only when there is none.
			M u = M(0);
			if (quiet) {
#pragma unroll
				for (int i = N - 1; i >= 0; --i) u = g[i] + u;
			} else {
#pragma unroll
				for (int i = N - 1; i >= 0; --i) u = bit(cm, i) ? M(0) : g[i] + u;
			}
			acc = Aff<M>{cm == 0u ? M(1) : M(0), u};
		} else if (Op::strong && plain) {
#pragma unroll
			for (int i = N - 1; i >= 0; --i) acc = Aff<M>{a[i] * acc.a, a[i] * (g[i] + acc.u)};
		} else {
#pragma unroll
			for (int i = N - 1; i >= 0; --i) acc = compose<Op>(Aff<M>{a[i], Op::mul(a[i], g[i])}, acc);
		}
		return acc;
	}

	// finish turns g into dx, given v = V after the run.
	__device__ __forceinline__ void finish(M v, bool plain) {
		if (Op::mask_factors && quiet) {
			// No take-over: V passes every element, and no dx gets any.
#pragma unroll
			for (int i = 0; i < N; ++i) g[i] = M(0);
		} else if (Op::mask_factors) {
			const unsigned m = sizeof(M) == 4 ? opaque_cm() : cm;
#pragma unroll
			for (int i = N - 1; i >= 0; --i) {
				const M s = g[i] + v;
				g[i] = bit(m, i) ? s : M(0);
				v = bit(m, i) ? M(0) : s;
			}
		} else if (Op::strong && plain) {
#pragma unroll
			for (int i = N - 1; i >= 0; --i) {
				const M s = g[i] + v;
				g[i] = c[i] * s;
				v = a[i] * s;
			}
		} else {
#pragma unroll
			for (int i = N - 1; i >= 0; --i) {
				const M s = g[i] + v;
				g[i] = Op::scale(c[i], s);
				v = Op::mul(a[i], s);
			}
		}
	}
};

// ---- scans across threads ------------------------------------------------

// warp_carry_scan: lanes are consecutive runs in memory order; the carry
// comes from the lanes later in scan order (higher lanes; rev: lower).
// Returns the lane's exclusive map (the lanes upstream of it composed) and
// sets total to the warp's map.
template <typename Op, typename M>
__device__ __forceinline__ Aff<M> warp_carry_scan(Aff<M> v, int lane, bool rev, Aff<M>& total) {
	const int dir = rev ? -1 : 1;
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		const int src = lane + dir * off;
		const M oa = __shfl_sync(0xffffffffu, v.a, src & 31);
		const M ou = __shfl_sync(0xffffffffu, v.u, src & 31);
		if (src >= 0 && src < 32) v = compose<Op>(v, Aff<M>{oa, ou});
	}
	const int src = lane + dir;
	const M ea = __shfl_sync(0xffffffffu, v.a, src & 31);
	const M eu = __shfl_sync(0xffffffffu, v.u, src & 31);
	total.a = __shfl_sync(0xffffffffu, v.a, rev ? 31 : 0);
	total.u = __shfl_sync(0xffffffffu, v.u, rev ? 31 : 0);
	return (src >= 0 && src < 32) ? Aff<M>{ea, eu} : aff_identity<M>();
}

// warp_fwd_scan: the exclusive forward combine across lanes (the forward
// state flows from lanes earlier in scan order) and the warp's total.
template <typename Op, typename M>
__device__ __forceinline__ M warp_fwd_scan(M v, int lane, bool rev, M& total) {
	const int dir = rev ? 1 : -1;
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		const int src = lane + dir * off;
		const M o = __shfl_sync(0xffffffffu, v, src & 31);
		if (src >= 0 && src < 32) v = Op::fwd_combine(v, o);
	}
	const int src = lane + dir;
	const M e = __shfl_sync(0xffffffffu, v, src & 31);
	total = __shfl_sync(0xffffffffu, v, rev ? 0 : 31);
	return (src >= 0 && src < 32) ? e : Op::template fwd_identity<M>();
}

// ---- look-back -------------------------------------------------------------

// chain_lookback serves tile c (in ticket order) of one look-back unit:
// lane l of the calling warp serves slice s (valid: has), whose tile values
// are agg[d * nslices] and incl[d * nslices]. Tile d publishes its value
// agg(d) as soon as it has it, then incl(d) = fold(agg(d), incl(d-1)),
// with incl(-1) = v0. The tile walks back from c-1 to the nearest tile
// whose incl is there (waiting for agg on the way) and folds the values in
// between onto that incl in ascending order. That is exactly the
// sequential chain incl(c-1) = fold(agg(c-1), fold(agg(c-2), ...)),
// whichever tile it stops at: the same operations on the same values in
// the same order, so the result is bit-stable however the tiles are timed.
// Returns incl(c-1) and publishes fold(tot, it) unless c is the last tile.
//
// Two forms. With float opmath each slice's values are slots (above):
// every lane walks back on its own and nothing waits on a fence. With
// double opmath a map is 16 bytes, which no access moves at once, so a
// flag per tile and unit (flags[d * units]) says what the unit's values
// are: 1 agg, 2 agg and incl; the warp publishes them behind fences and
// walks back together, 32 tiles per step. (The launcher reserves the
// flags only for double opmath.)
template <bool Slots> struct ScanChain;

template <> struct ScanChain<true> {
	template <typename A, typename M, typename F>
	static __device__ __forceinline__ M run(unsigned*, A* agg, M* incl, const ScanLayout& L, i64 c, bool has, A tot,
			M v0, F fold) {
		M v = v0;
		if (!has) return v;
		const bool last = c + 1 == L.chunks;  // nobody reads the last tile
		if (c > 0 && !last) slot_st(agg + c * L.nslices, tot);
		if (c > 0) {
			// Tile 0 publishes incl alone; every other tile agg first.
			i64 d = c - 1;
			for (;;) {
				M iv;
				if (slot_ld(incl + d * L.nslices, iv)) {
					v = iv;
					break;
				}
				A av;
				if (d > 0 && slot_ld(agg + d * L.nslices, av)) {
					--d;
				} else {
					__nanosleep(32);
				}
			}
			for (i64 e = d + 1; e < c; ++e) {
				A av;
				slot_ld(agg + e * L.nslices, av);
				v = fold(av, v);
			}
		}
		if (!last) slot_st(incl + c * L.nslices, fold(tot, v));
		return v;
	}
};

template <> struct ScanChain<false> {
	template <typename A, typename M, typename F>
	static __device__ __forceinline__ M run(unsigned* flags, A* agg, M* incl, const ScanLayout& L, i64 c, bool has,
			A tot, M v0, F fold) {
		const int lane = threadIdx.x & 31;
		const bool last = c + 1 == L.chunks;
		if (c > 0 && !last) {
			if (has) st_cg(agg + c * L.nslices, tot);
			fence_gpu();
			__syncwarp();
			if (lane == 0) st_flag(flags + c * L.units, 1u);
		}
		// Find the nearest tile d0 < c with flag 2 (d0 = -1: the start,
		// v0), 32 tiles per step: lane j looks at tile top - j.
		i64 top = c - 1, d0 = -1;
		while (top >= 0) {
			const i64 d = top - lane;
			const unsigned f = d >= 0 ? ld_flag(flags + d * L.units) : 2u;
			const unsigned two = __ballot_sync(0xffffffffu, f == 2u);
			const unsigned none = __ballot_sync(0xffffffffu, f == SCAN_NONE);
			const unsigned below = two ? (two & (0u - two)) - 1u : 0xffffffffu;  // lanes before the first 2
			if (none & below) {
				__nanosleep(64);
				continue;  // a tile on the way has not published its value yet
			}
			if (two) {
				d0 = top - (__ffs(two) - 1);
				break;
			}
			top -= 32;
		}
		fence_gpu();
		M v = v0;
		if (has) {
			if (d0 >= 0) v = ld_cg(incl + d0 * L.nslices);
			for (i64 d = d0 + 1; d < c; ++d) v = fold(ld_cg(agg + d * L.nslices), v);
		}
		if (!last) {
			if (has) st_cg(incl + c * L.nslices, fold(tot, v));
			fence_gpu();
			__syncwarp();
			if (lane == 0) st_flag(flags + c * L.units, 2u);
		}
		return v;
	}
};

// chain_lookback runs in warp 0 of a chunked tile: every lane calls it.
template <typename A, typename M, typename F>
__device__ __forceinline__ M chain_lookback(unsigned* flags, A* agg, M* incl, const ScanLayout& L, i64 c, bool has,
		A tot, M v0, F fold) {
	return ScanChain<sizeof(M) == 4>::run(flags, agg, incl, L, c, has, tot, v0, fold);
}

// ApplyFold and FwdFold are chain_lookback's folds: the backward carry
// (tile maps applied to V) and the forward state (exact combines).
template <typename Op> struct ApplyFold {
	template <typename M> __device__ M operator()(Aff<M> a, M v) const { return apply<Op>(a, v); }
};
template <typename Op> struct FwdFold {
	template <typename M> __device__ M operator()(M a, M v) const { return Op::fwd_combine(v, a); }
};

// Packed slots (cumsum, float opmath): every cumsum map has a = 1, so a
// tile's map is its sum u alone, and u and the value after the tile share
// one 8-byte slot: (u, SCAN_NONE) once the tile has its map, (u, incl)
// once it has both. The walk back reads each tile once, the workspace has
// no incl part (ops/scan.go), and the fill before a launch is 8 bytes per
// tile and slice instead of 12. The folds are the slot chain's (fold(agg,
// v) = u + v), in the same order, so the values are the same bits.
template <typename Op> struct PackedChain {
	static constexpr bool on = false;
};
template <> struct PackedChain<CumsumBw> {
	static constexpr bool on = true;
};

__device__ __forceinline__ unsigned long long pslot_ld(const unsigned long long* p) {
	return *reinterpret_cast<const volatile unsigned long long*>(p);
}
__device__ __forceinline__ void pslot_st(unsigned long long* p, float u, float incl, bool has_incl) {
	const unsigned hi = has_incl ? slot_bits(incl) : SCAN_NONE;
	*reinterpret_cast<volatile unsigned long long*>(p) = (unsigned long long)slot_bits(u) | (unsigned long long)hi << 32;
}

template <bool Packed> struct Lookback {
	template <typename Op, typename M>
	static __device__ __forceinline__ M run(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
			Aff<M> tot) {
		return chain_lookback(reinterpret_cast<unsigned*>(ws + L.ws_flags) + unit,
				reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + s, reinterpret_cast<M*>(ws + L.ws_incl) + s, L, c,
				has, tot, M(0), ApplyFold<Op>());
	}
};

template <> struct Lookback<true> {
	template <typename Op, typename M>
	static __device__ __forceinline__ M run(unsigned char* ws, const ScanLayout& L, i64 c, i64, i64 s, bool has,
			Aff<M> tot) {
		unsigned long long* slot = reinterpret_cast<unsigned long long*>(ws + L.ws_agg) + s;
		float v = 0.f;
		if (!has) return v;
		const bool last = c + 1 == L.chunks;  // nobody reads the last tile
		if (c > 0 && !last) pslot_st(slot + c * L.nslices, tot.u, 0.f, false);
		if (c > 0) {
			// As ScanChain<true>: back to the nearest tile with its incl,
			// then its successors' sums in ascending order.
			i64 d = c - 1;
			for (;;) {
				const unsigned long long b = pslot_ld(slot + d * L.nslices);
				if ((unsigned)(b >> 32) != SCAN_NONE) {
					v = __uint_as_float((unsigned)(b >> 32));
					break;
				}
				if (d > 0 && (unsigned)b != SCAN_NONE) {
					--d;
				} else {
					__nanosleep(32);
				}
			}
			for (i64 e = d + 1; e < c; ++e) v = __uint_as_float((unsigned)pslot_ld(slot + e * L.nslices)) + v;
		}
		if (!last) pslot_st(slot + c * L.nslices, tot.u, tot.u + v, true);
		return v;
	}
};

// lookback chains the backward carry: tile c in carry order, tot its map;
// returns V after the tile (V_in).
template <typename Op, typename M>
__device__ __forceinline__ M lookback(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
		Aff<M> tot) {
	return Lookback<PackedChain<Op>::on && sizeof(M) == 4>::template run<Op, M>(ws, L, c, unit, s, has, tot);
}

// fwd_lookback chains the forward state instead (the ext order: tile c in
// scan order, tot its forward total); returns the state before the tile.
template <typename Op, typename M>
__device__ __forceinline__ M fwd_lookback(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
		M tot) {
	return chain_lookback(reinterpret_cast<unsigned*>(ws + L.ws_flags) + unit,
			reinterpret_cast<M*>(ws + L.ws_fwd) + s, reinterpret_cast<M*>(ws + L.ws_incl) + s, L, c, has, tot,
			Op::template fwd_identity<M>(), FwdFold<Op>());
}

// Tickets. The counter at workspace byte 0 starts at all ones (the
// launcher's memset of 16 bytes), so an atomic add's old value plus one
// holds the tickets taken before it in its low SCAN_TK_BITS bits and,
// above them, the fill blocks that are done. The first L.fillers tickets
// are fill blocks: each sets its share of the slots, [SCAN_COUNTER,
// L.ws_fill), to 0xff bytes and then counts itself done behind a fence
// (so the launcher needs no memset of the slots, a launch of its own).
// A thread reads or writes the slots only after it has seen every fill
// block done through an acquire: its block's ticket (scan_take), or
// scan_ws_wait. Fill tickets come before every other, so a tile waits
// only on fill blocks that are running, and a fill block on nothing.
#define SCAN_TK_BITS 40
#define SCAN_TK_MASK ((1ULL << SCAN_TK_BITS) - 1ULL)

// scan_fills_done: the counter's value plus one (n) says every fill block
// is done.
__device__ __forceinline__ bool scan_fills_done(unsigned long long n, int fillers) {
	return (i64)(n >> SCAN_TK_BITS) == (i64)fillers;
}

__device__ __forceinline__ unsigned long long scan_ticket_acquire(unsigned long long* p) {
	unsigned long long r;
	asm volatile("atom.add.acquire.gpu.global.u64 %0, [%1], 1;" : "=l"(r) : "l"(p) : "memory");
	return r + 1ULL;
}

// scan_ticket takes a ticket where no fill blocks come first.
__device__ __forceinline__ i64 scan_ticket(unsigned char* ws) {
	__shared__ unsigned long long t;
	if (threadIdx.x == 0) t = atomicAdd(reinterpret_cast<unsigned long long*>(ws), 1ULL) + 1ULL;  // from all ones
	__syncthreads();
	return (i64)t;
}

// scan_fill_part: fill block b of `fillers` sets its share of the
// workspace's slots, [SCAN_COUNTER, ws_fill), to 0xff bytes (16 a store),
// then counts itself done.
__device__ __forceinline__ void scan_fill_part(unsigned char* __restrict__ ws, i64 ws_fill, int fillers, i64 b) {
	const i64 words = (ws_fill - SCAN_COUNTER) >> 4;
	const i64 per = (words + fillers - 1) / fillers;
	const i64 w1 = b * per + per < words ? b * per + per : words;
	uint4* p = reinterpret_cast<uint4*>(ws + SCAN_COUNTER);
	for (i64 w = b * per + threadIdx.x; w < w1; w += SCAN_THREADS) p[w] = make_uint4(~0u, ~0u, ~0u, ~0u);
	__syncthreads();
	if (threadIdx.x == 0) {
		fence_gpu();
		atomicAdd(reinterpret_cast<unsigned long long*>(ws), 1ULL << SCAN_TK_BITS);
	}
}

// scan_take: thread 0 takes the block's ticket with an acquire, and a fill
// block runs its share. Returns -1 for a fill block; else the ticket
// counted from the first after the fill blocks', with SCAN_READY set
// where every fill block was done by then. Not inlined: inlined, the
// ticket and fill code changes how ptxas allocates registers in the tile
// code after it, and the tiles run slower.
#define SCAN_READY (1LL << 62)
__device__ __noinline__ i64 scan_take(unsigned char* __restrict__ ws, i64 ws_fill, int fillers) {
	__shared__ unsigned long long s_t;
	if (threadIdx.x == 0) s_t = scan_ticket_acquire(reinterpret_cast<unsigned long long*>(ws));
	__syncthreads();
	const unsigned long long v = s_t;
	const i64 t = (i64)(v & SCAN_TK_MASK);
	if (t < fillers) {
		scan_fill_part(ws, ws_fill, fillers, t);
		return -1;
	}
	return (t - fillers) | (scan_fills_done(v, fillers) ? SCAN_READY : 0);
}

// scan_ws_wait: before a thread's first access to the slots, unless ready,
// wait (acquire) until every fill block is done.
__device__ __forceinline__ void scan_ws_wait(const unsigned char* ws, const ScanLayout& L, bool& ready) {
	if (ready) return;
	const unsigned long long* p = reinterpret_cast<const unsigned long long*>(ws);
	for (;;) {
		unsigned long long v;
		asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
		if (scan_fills_done(v + 1ULL, L.fillers)) break;
		__nanosleep(64);
	}
	ready = true;
}

// scan_fwd_prefix (phase 2, row mapping): one thread per slice turns the
// forward aggregates of its tiles into exclusive prefixes in scan order,
// loading eight at a time. (A warp form of phase 2 in the same kernel
// would give the cumprod row kernels more registers and slow them down.)
template <typename T, typename Op>
__device__ __forceinline__ void scan_fwd_prefix(unsigned char* __restrict__ ws, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::fwd) return;
	M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);
	const i64 s = (i64)blockIdx.x * SCAN_THREADS + threadIdx.x;
	if (s >= L.nslices) return;
	const bool rev = L.reverse != 0;
	M f = Op::template fwd_identity<M>();
	for (i64 i0 = 0; i0 < L.chunks; i0 += 8) {
		M e[8];
#pragma unroll
		for (int i = 0; i < 8; ++i) {
			const i64 q = rev ? L.chunks - 1 - (i0 + i) : i0 + i;
			e[i] = M(0);
			if (i0 + i < L.chunks) e[i] = fwdbuf[q * L.nslices + s];
		}
#pragma unroll
		for (int i = 0; i < 8; ++i) {
			const i64 q = rev ? L.chunks - 1 - (i0 + i) : i0 + i;
			if (i0 + i < L.chunks) {
				fwdbuf[q * L.nslices + s] = f;
				f = Op::fwd_combine(f, e[i]);
			}
		}
	}
}

// scan_fill_slots (phase 1, row mapping): the ops with a forward state
// fill the look-back part of the workspace in their first pass rather
// than by a memset before it (one launch fewer): every tile row q and
// slice s sets its map and value slots to SCAN_NONE bytes (with double
// opmath the slice's flag too), and the pass's first thread the ticket
// counter. The main launch runs after phase 2, so it sees every slot
// filled.
template <typename M>
__device__ __forceinline__ void scan_fill_slots(unsigned char* __restrict__ ws, const ScanLayout& L, i64 q, i64 s,
		bool first) {
	if (first) *reinterpret_cast<unsigned long long*>(ws) = ~0ULL;
	const i64 e = q * L.nslices + s;
	if (sizeof(M) == 4) {
		reinterpret_cast<unsigned long long*>(ws + L.ws_agg)[e] = ~0ULL;
		reinterpret_cast<unsigned*>(ws + L.ws_incl)[e] = SCAN_NONE;
	} else {
		reinterpret_cast<unsigned*>(ws + L.ws_flags)[q * L.units + s] = SCAN_NONE;
		reinterpret_cast<uint4*>(ws + L.ws_agg)[e] = make_uint4(SCAN_NONE, SCAN_NONE, SCAN_NONE, SCAN_NONE);
		reinterpret_cast<unsigned long long*>(ws + L.ws_incl)[e] = ~0ULL;
	}
}

// tile_needs_x (phase 1, scan_fwd_unit): whether a tile must read x for
// its forward aggregate; cumprod's tile has no zero when ye, y at its last
// element in scan order, is nonzero and not NaN (tile_y_end loads it).
template <typename Op, typename M> __device__ __forceinline__ bool tile_needs_x(M ye) {
	return !Op::fwd_shortcut || ye == M(0) || bc_isnan(ye);
}
template <typename T, typename Op>
__device__ __forceinline__ typename OpMath<T>::type tile_y_end(const T* __restrict__ y, const ScanLayout& L,
		const i64 (&off)[4], i64 ke) {
	typedef typename OpMath<T>::type M;
	if (!Op::fwd_shortcut) return M(0);
	return to_op(scan_ld(y + off[2] + ke * L.astride[2]));
}

// scan_fwd_unit and scan_fwd_wait (cumprod, col mapping, chunked): the
// forward state before each tile, computed in the main launch and only
// where dx can depend on it. It changes dx_k only where y before k is
// NaN: a y that is a number other than 0 says no zero came before k (a
// zero makes every later y 0 or NaN), and with y before k = 0, c_k is 0
// either way (CumprodBw::prep). A NaN y stays NaN to the slice's end, so
// the unit's first tile in carry order (the last in scan order; every
// other tile of the unit waits on it through the look-back) reads y at
// the end of its 32 slices before anything else. Where one is NaN it
// writes the state before every tile of the unit's slices: each warp
// takes tiles warp, warp + 8, ..., tells from y at a tile's end whether
// it can hold a zero (tile_y_end, tile_needs_x) and if so reads its x, 8
// loads at a time; per slice the block takes the first tile in scan
// order with a zero, and the state is 1 after it. Its unit flag (SCAN_NONE
// before the launch) then says 2, or 1 where no slice ended in NaN. A
// tile whose run sees a NaN y before an element waits for the flag (the
// first tile waits on nobody) and reads its state (scan_fwd_wait). Most
// inputs never ask, and no pass runs before the main launch. No tile of
// the unit has stored dx yet while the first tile reads x (dx may be
// written over x, in place).
template <typename T, typename Op>
__device__ __forceinline__ void scan_fwd_unit(const T* __restrict__ x, const T* __restrict__ y,
		unsigned char* __restrict__ ws, const ScanLayout& L, i64 unit, i64 s, bool has, bool& ready) {
	typedef typename OpMath<T>::type M;
	__shared__ i64 s_first[SCAN_WARPS][32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const bool rev = L.reverse != 0;
	// The slice offsets again rather than the caller's: taking them as a
	// parameter changes how ptxas allocates the f32 col kernel's registers,
	// and cumprod f32 along axis 0 runs slower.
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	M ye = M(0);
	if (warp == 0 && has) ye = tile_y_end<T, Op>(y, L, off, rev ? 0 : L.n - 1);
	const bool need = __syncthreads_or(bc_isnan(ye));
	if (need) {
		M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);
		const i64 tile = (i64)L.split * L.items;
		i64 first = L.chunks;  // the first tile with a zero, in scan order
		for (i64 qq = warp; qq < L.chunks; qq += SCAN_WARPS) {
			const i64 pos = rev ? L.chunks - 1 - qq : qq;
			const i64 tk0 = qq * tile, tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
			if (!has || pos >= first || !tile_needs_x<Op>(tile_y_end<T, Op>(y, L, off, rev ? tk0 : tk1 - 1)))
				continue;
			const T* p = x + off[1];
			const i64 st = L.astride[1];
			M f = Op::template fwd_identity<M>();
			for (i64 k = tk0; k < tk1; k += 8) {
				M v[8];
#pragma unroll
				for (int i = 0; i < 8; ++i)
					v[i] = k + i < tk1 ? to_op(scan_ld(p + (k + i) * st)) : Op::template x_fill<M>();
				f = Op::fwd_combine(f, Op::template fold<M, 8>(v));
			}
			if (f != Op::template fwd_identity<M>()) first = pos;
		}
		s_first[warp][lane] = first;
		__syncthreads();
		for (int w = 0; w < SCAN_WARPS; ++w) first = s_first[w][lane] < first ? s_first[w][lane] : first;
		if (has) {
			for (i64 qq = warp; qq < L.chunks; qq += SCAN_WARPS) {
				const i64 pos = rev ? L.chunks - 1 - qq : qq;
				fwdbuf[qq * L.nslices + s] = pos > first ? M(1) : Op::template fwd_identity<M>();
			}
		}
		fence_gpu();
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		scan_ws_wait(ws, L, ready);
		st_flag(reinterpret_cast<unsigned*>(ws + L.ws_unitflag) + unit, need ? 2u : 1u);
	}
}

template <typename Op, typename M>
__device__ __forceinline__ M scan_fwd_wait(unsigned char* __restrict__ ws, const ScanLayout& L, i64 q, i64 unit,
		i64 s, bool has, bool& ready) {
	__shared__ unsigned s_state;
	if (threadIdx.x == 0) {
		scan_ws_wait(ws, L, ready);
		const unsigned* flag = reinterpret_cast<const unsigned*>(ws + L.ws_unitflag) + unit;
		unsigned st;
		while ((st = ld_flag(flag)) == SCAN_NONE) __nanosleep(64);
		fence_gpu();
		s_state = st;
	}
	__syncthreads();
	if (s_state != 2u || !has) return Op::template fwd_identity<M>();
	return ld_cg(reinterpret_cast<const M*>(ws + L.ws_fwd) + q * L.nslices + s);
}

// ---- row mapping ---------------------------------------------------------

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_row(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = ScanItems<T, Op>::row;
	typedef ScanRun<T, Op, N, false> Run;
	__shared__ Aff<M> s_aff[SCAN_WARPS];
	__shared__ M s_fwd[SCAN_WARPS];
	__shared__ M s_vin;
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	if (L.phase == SCAN_FWD_PREFIX) {
		scan_fwd_prefix<T, Op>(ws, L);
		return;
	}
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const int split = L.split;  // threads per slice: 32..256
	const int wpg = split >> 5;  // warps per slice
	const int grp = tid / split, lt = tid % split;
	const int w0 = grp * wpg, wg = warp - w0;
	const bool chunked = L.chunks > 1;
	M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);

	i64 s, c = 0, q = 0;
	bool ready = true;
	if (L.phase == SCAN_FWD_TILES) {
		if (!Op::fwd) return;
		q = (i64)blockIdx.x / L.nslices;
		s = (i64)blockIdx.x - q * L.nslices;
	} else if (chunked) {
		i64 t;
		if (Op::fwd) {
			// The forward-state passes filled the slots (scan_fill_slots)
			// and reset the counter: no fill blocks.
			t = scan_ticket(ws);
		} else {
			t = scan_take(ws, L.ws_fill, L.fillers);
			if (t < 0) return;
			ready = (t & SCAN_READY) != 0;
			t &= ~SCAN_READY;
		}
		c = t / L.nslices;
		s = t - c * L.nslices;
		q = rev ? c : L.chunks - 1 - c;
	} else {
		s = (i64)blockIdx.x * (SCAN_THREADS / split) + grp;
	}
	const bool has = s < L.nslices;
	const i64 tile = (i64)split * N;
	const i64 tk0 = q * tile;
	const i64 tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
	const i64 k0 = tk0 + (i64)lt * N;
	int cnt = 0;
	if (has && k0 < tk1) cnt = (int)(tk1 - k0 < N ? tk1 - k0 : N);
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	const bool vec = L.vec != 0;
	Run r;

	if (L.phase == SCAN_FWD_TILES) {
		// The tile's forward aggregate (one slice per block).
		if (tid == 0) scan_fill_slots<M>(ws, L, q, s, blockIdx.x == 0);
		if (!tile_needs_x<Op>(tile_y_end<T, Op>(y, L, off, rev ? tk0 : tk1 - 1))) cnt = 0;
		r.init(k0, cnt, rev);
		r.load_x(x, L, off, vec);
		M f = r.fwd_total();
#pragma unroll
		for (int o = 16; o > 0; o >>= 1) f = Op::fwd_combine(f, __shfl_xor_sync(0xffffffffu, f, o));
		if (lane == 0) s_fwd[warp] = f;
		__syncthreads();
		if (tid == 0) {
			for (int w = 1; w < SCAN_WARPS; ++w) f = Op::fwd_combine(f, s_fwd[w]);
			fwdbuf[q * L.nslices + s] = f;
		}
		return;
	}

	r.init(k0, cnt, rev);
	r.load(dy, x, y, L, off, vec);
	M f = Op::template fwd_identity<M>();
	const bool fast = r.direct_ok();
	// The forward state only where a run needs it (a direct op's block
	// of direct runs skips it; the test is uniform across the block).
	if (Op::fwd && (!Direct<Op>::on || __syncthreads_or(!fast))) {
		if (chunked && has) f = __ldcg(&fwdbuf[q * L.nslices + s]);
		M wt;
		const M ex = warp_fwd_scan<Op>(r.fwd_total(), lane, rev, wt);
		if (lane == 0) s_fwd[warp] = wt;
		__syncthreads();
		// The warps of the slice before this one in scan order.
		if (rev) {
			for (int w = wpg - 1; w > wg; --w) f = Op::fwd_combine(f, s_fwd[w0 + w]);
		} else {
			for (int w = 0; w < wg; ++w) f = Op::fwd_combine(f, s_fwd[w0 + w]);
		}
		f = Op::fwd_combine(f, ex);
	}
	const bool plain = r.setup(fast, f, L);
	Aff<M> wt;
	const Aff<M> ex = warp_carry_scan<Op>(r.aggregate(plain), lane, rev, wt);
	if (lane == 0) s_aff[warp] = wt;
	__syncthreads();
	M v = M(0);
	if (chunked) {
		if (warp == 0) {
			// The tile's map: the warps composed, upstream first.
			Aff<M> tot = aff_identity<M>();
			for (int i = 0; i < SCAN_WARPS; ++i) tot = compose<Op>(s_aff[rev ? i : SCAN_WARPS - 1 - i], tot);
			scan_ws_wait(ws, L, ready);
			const M vin = lookback<Op, M>(ws, L, c, s, s, has && lane == 0, tot);
			if (lane == 0) s_vin = vin;
		}
		__syncthreads();
		v = s_vin;
	}
	// V after this warp: the warps upstream of it applied, farthest first.
	if (rev) {
		for (int w = 0; w < wg; ++w) v = apply<Op>(s_aff[w0 + w], v);
	} else {
		for (int w = wpg - 1; w > wg; --w) v = apply<Op>(s_aff[w0 + w], v);
	}
	r.finish(apply<Op>(ex, v), plain);
	// The offsets again rather than kept live through the scans (registers).
	scan_slice_offsets(L, has ? s : 0, off);
	r.store(dx, L, off, vec);
}

// FixLd reads a map or record for scan_ext_fix: as a slot in the main
// launch (false until the tile has published it), plainly after it.
template <bool InLaunch> struct FixLd {
	template <typename M> static __device__ __forceinline__ bool map(const Aff<M>* p, Aff<M>& v) {
		v = *p;
		return true;
	}
	template <typename M> static __device__ __forceinline__ bool rec(const FixRec<M>* p, FixRec<M>& r) {
		r = *p;
		return true;
	}
};
template <> struct FixLd<true> {
	static __device__ __forceinline__ bool map(const Aff<float>* p, Aff<float>& v) { return slot_ld(p, v); }
	static __device__ __forceinline__ bool rec(const FixRec<float>* p, FixRec<float>& r) {
		return slot_ld(p, r.v, r.k);
	}
};

// FixSt publishes a tile's map and take-over record for scan_ext_fix:
// as slots for the fix blocks of the same launch (InLaunch), plainly for
// the launch after.
template <bool InLaunch> struct FixSt {
	template <typename M> static __device__ __forceinline__ void map(Aff<M>* p, Aff<M> v) { *p = v; }
	template <typename M> static __device__ __forceinline__ void rec(FixRec<M>* p, M v, int k) {
		*p = FixRec<M>{v, k};
	}
};
template <> struct FixSt<true> {
	static __device__ __forceinline__ void map(Aff<float>* p, Aff<float> v) { slot_st(p, v); }
	static __device__ __forceinline__ void rec(FixRec<float>* p, float v, int k) { slot_st(p, v, k); }
};

// scan_ext_fix: one warp per slice walks its tile maps from the end of
// the slice in scan order, 32 tiles a round (lane j: tile top - j), and
// where a tile has a take-over (a = 0) writes dx at its k* with V after
// the tile added. V after tile top - j is the maps of the tiles after it
// applied to the round's carry: warp_carry_scan composes them (the lanes
// below j are upstream). The records are read only where needed. (A warp
// per slice: a warp for two slices, inline in the main launch, makes the
// compute_70 bf16 kernels spill and halves the fix blocks; a thread per
// slice, walking the tiles in batches of eight, leaves a few blocks each
// waiting for one batch of loads after the other.)
//
// Float opmath runs it in the main launch (InLaunch): the blocks whose
// tickets come after every tile's (fb counts them) wait for the maps and
// records, which the tiles publish as slots, and write dx at every k*,
// which the tile itself leaves out of its store (so nothing orders the two
// writes; with dx over x or dy, the tile's loads there are done before its
// record, which depends on them, is published). A fix block waits only on
// tiles with lower tickets, which are running or done. Double opmath
// (16-byte maps, no slots) runs it as a second launch (SCAN_EXT_FIX)
// after the tiles, which stored dx at k* without the carry, so it writes
// only where V after the tile is not 0.
template <typename T, typename Op, bool InLaunch>
__device__ __forceinline__ void scan_ext_fix(T* __restrict__ dx, const unsigned char* __restrict__ ws,
		const ScanLayout& L, i64 fb) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	const i64 s = fb * SCAN_WARPS + (threadIdx.x >> 5);
	if (s >= L.nslices) return;
	const Aff<M>* agg = reinterpret_cast<const Aff<M>*>(ws + L.ws_agg) + s;
	const FixRec<M>* fix = reinterpret_cast<const FixRec<M>*>(ws + L.ws_fix) + s;
	i64 off[4];
	scan_slice_offsets(L, s, off);
	const bool rev = L.reverse != 0;
	const i64 tile = (i64)L.split * L.items;
	M v = M(0);
	for (i64 top = L.chunks - 1; top >= 0; top -= 32) {
		const i64 c = top - lane;
		Aff<M> m = aff_identity<M>();
		if (c >= 0)
			while (!FixLd<InLaunch>::map(agg + c * L.nslices, m)) __nanosleep(64);
		FixRec<M> rec = FixRec<M>{M(0), 0};
		if (c >= 0 && m.a == M(0))
			while (!FixLd<InLaunch>::rec(fix + c * L.nslices, rec)) __nanosleep(64);
		Aff<M> tot;
		const M after = apply<Op>(warp_carry_scan<Op>(m, lane, true, tot), v);
		if (c >= 0 && m.a == M(0) && (InLaunch || after != M(0))) {
			const i64 q = rev ? L.chunks - 1 - c : c;
			dx[off[3] + (q * tile + rec.k) * L.astride[3]] = from_op<T>(rec.v + after);
		}
		v = apply<Op>(tot, v);
	}
}

// ---- col mapping -----------------------------------------------------------

__device__ __forceinline__ void prefetch_l2(const void* p) {
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// scan_col_prefetch (ColFetch::prefetch; chunked col mapping, one slice
// dim): warp wr asks L2 for the rows that warp wr of the unit's tile in
// tile row qn will load, one prefetch per 32-byte sector of a row (lane:
// sector lane % S of row lane / S, then 32 / S rows further; unit-stride
// slices put 32 / sizeof(T) lanes in a sector). A prefetch is a hint:
// every address is an element of the operand, and nothing waits for it.
template <typename T, typename Op>
__device__ __forceinline__ void scan_col_prefetch(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, const ScanLayout& L, i64 unit, i64 qn, int wr, int lane) {
	constexpr int LPS = 32 / sizeof(T);  // lanes per sector
	constexpr int S = 32 / LPS;          // sectors per warp row
	const i64 k0 = qn * ((i64)L.split * L.items) + (i64)wr * L.items;
	const i64 s = unit * 32 + (lane % S) * LPS;
	if (s >= L.nslices || k0 >= L.n) return;
	const i64 k1 = k0 + L.items < L.n ? k0 + L.items : L.n;
	const T* const ops[3] = {dy, x, y};
#pragma unroll
	for (int o = 0; o < 3; ++o) {
		if (o == 1 && !Op::needs_x) continue;
		if (o == 2 && !Op::needs_y) continue;
		const T* p = ops[o] + s * L.sstride[o][0];
		const i64 st = L.astride[o];
		for (i64 k = k0 + lane / S; k < k1; k += 32 / S) prefetch_l2(p + k * st);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_col(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef ScanRun<T, Op, ScanItems<T, Op>::col, true> Run;
	__shared__ Aff<M> s_aff[SCAN_WARPS][32];
	__shared__ M s_fwd[SCAN_WARPS][32];
	__shared__ M s_pre[Op::mask_factors ? SCAN_WARPS : 1][32];
	__shared__ M s_vin[32];
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	// Chunked, cummax and cummin always take the ext order and the other
	// ops never do, so each op's col kernel compiles only the phases it
	// runs: without the others' code the bf16 cummax and cummin kernels
	// spill less and run faster. The fix pass of the ext order runs in the
	// main launch with float opmath (fix_in), as a second launch
	// (SCAN_EXT_FIX) with double. Chunked, the tickets come in order: the
	// fill blocks', the tiles', then the fix blocks'.
	constexpr bool fix_in = Op::mask_factors && sizeof(M) == 4;
	if (L.phase == SCAN_EXT_FIX) {
		if (Op::mask_factors && !fix_in) scan_ext_fix<T, Op, false>(dx, ws, L, blockIdx.x);
		return;
	}
	const bool chunked = L.chunks > 1;
	// The ext order (mask ops, chunked): tiles in scan order, see the top.
	const bool ext = Op::mask_factors && chunked;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const int split = L.split;  // warps along the axis: 1..8
	const int cgi = warp >> L.lsplit, wr = warp & (split - 1), w0 = cgi * split;
	const int items = L.items;

	i64 unit, c = 0, q = 0;
	bool ready = true;
	if (chunked) {
		i64 t = scan_take(ws, L.ws_fill, L.fillers);
		if (t < 0) return;
		ready = (t & SCAN_READY) != 0;
		t &= ~SCAN_READY;
		if (fix_in && t >= L.chunks * L.units) {
			// A fix block (ext order): every tile has its ticket.
			scan_ws_wait(ws, L, ready);
			scan_ext_fix<T, Op, fix_in>(dx, ws, L, t - L.chunks * L.units);
			return;
		}
		c = bc_div(t, L.tmagic, L.tshift);
		unit = t - c * L.units;
		q = rev != ext ? c : L.chunks - 1 - c;  // c counts in carry order, or scan order (ext)
	} else {
		unit = (i64)blockIdx.x * (SCAN_WARPS >> L.lsplit) + cgi;
	}
	const i64 s = unit * 32 + lane;
	const bool has = unit < L.units && s < L.nslices;
	const i64 tile = (i64)split * items;
	const i64 tk0 = q * tile;
	const i64 tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
	const i64 k0 = tk0 + (i64)wr * items;
	int cnt = 0;
	if (has && k0 < tk1) cnt = (int)((k0 + items < tk1 ? k0 + items : tk1) - k0);
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	Run r;
	// The unit's next tile in ticket order (ColFetch).
	if (ColFetch<T, Op>::prefetch && chunked && L.srank <= 1 && unit < L.units && c + 1 < L.chunks)
		scan_col_prefetch<T, Op>(dy, x, y, L, unit, rev != ext ? c + 1 : L.chunks - 2 - c, wr, lane);

	// Chunked cumprod: the unit's first tile finds whether the unit needs
	// its forward state, and writes it if so (before it loads its run).
	if (Op::fwd_shortcut && chunked && c == 0) scan_fwd_unit<T, Op>(x, y, ws, L, unit, s, has, ready);
	r.init(k0, cnt, rev);
	r.load(dy, x, y, L, off, false);
	M f = Op::template fwd_identity<M>();
	const bool fast = r.direct_ok();  // as in the row kernel
	if (Op::fwd && (!Direct<Op>::on || __syncthreads_or(!fast))) {
		// Chunked cumprod: the state before the tile, where a NaN y asks.
		if (Op::fwd_shortcut && chunked && __syncthreads_or(!fast && r.nan_before()))
			f = scan_fwd_wait<Op, M>(ws, L, q, unit, s, has, ready);
		s_fwd[warp][lane] = r.fwd_total();
		__syncthreads();
		if (ext) {
			// The forward state before the tile (chunked: one column
			// group of split = 8 warps per block), then before each
			// warp's run, which warp 0 leaves in s_pre: each warp reads
			// one value rather than combining its predecessors'.
			if (warp == 0) {
				M tot = s_fwd[0][lane];
				for (int w = 1; w < SCAN_WARPS; ++w) tot = Op::fwd_combine(tot, s_fwd[w][lane]);
				scan_ws_wait(ws, L, ready);
				M p = fwd_lookback<Op, M>(ws, L, c, unit, s, has, tot);
#pragma unroll
				for (int i = 0; i < SCAN_WARPS; ++i) {
					const int w = rev ? SCAN_WARPS - 1 - i : i;
					s_pre[w][lane] = p;
					p = Op::fwd_combine(p, s_fwd[w][lane]);
				}
			}
			__syncthreads();
			f = s_pre[warp][lane];
		} else if (rev) {
			for (int w = split - 1; w > wr; --w) f = Op::fwd_combine(f, s_fwd[w0 + w][lane]);
		} else {
			for (int w = 0; w < wr; ++w) f = Op::fwd_combine(f, s_fwd[w0 + w][lane]);
		}
	}
	// quiet (mask ops): no run of the warp has a take-over, which its
	// forward total tells (Op::takes(f, total) holds exactly when some
	// element of the run takes over): the run skips its take-over tests,
	// composes a plain sum and stores zeros. Deep into a slice most runs
	// are quiet (a new running extremum grows rare).
	// Not in compute_70's bf16 kernels (software conversions, run on
	// Volta only): with the quiet path ptxas 11.8 gives them 80 registers
	// and they spill.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
	constexpr bool quiet_ok = Op::mask_factors && !Narrow<T>::wide;
#else
	constexpr bool quiet_ok = Op::mask_factors;
#endif
	bool quiet = false;
	if (quiet_ok) quiet = __all_sync(0xffffffffu, cnt == 0 || !MaskTake<Op>::take(f, s_fwd[warp][lane]));
	r.quiet = quiet;
	const bool plain = r.setup(fast, f, L);
	s_aff[warp][lane] = r.aggregate(plain);
	__syncthreads();
	M v = M(0);
	if (chunked && warp == 0) {
		Aff<M> tot = aff_identity<M>();
		for (int i = 0; i < split; ++i) tot = compose<Op>(s_aff[rev ? i : split - 1 - i][lane], tot);
		if (ext) {
			// The tile's map, for scan_ext_fix.
			if (has) FixSt<fix_in>::map(reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + c * L.nslices + s, tot);
		} else {
			scan_ws_wait(ws, L, ready);
			s_vin[lane] = lookback<Op, M>(ws, L, c, unit, s, has, tot);
		}
	}
	if (chunked && !ext) {
		__syncthreads();
		v = s_vin[lane];
	}
	// V after this warp: the warps upstream of it applied, farthest first;
	// later: one of them has a take-over (a mask op's a = 0).
	bool later = false;
	if (rev) {
		for (int w = 0; w < wr; ++w) {
			v = apply<Op>(s_aff[w0 + w][lane], v);
			later = later | (s_aff[w0 + w][lane].a == M(0));
		}
	} else {
		for (int w = split - 1; w > wr; --w) {
			v = apply<Op>(s_aff[w0 + w][lane], v);
			later = later | (s_aff[w0 + w][lane].a == M(0));
		}
	}
	r.finish(v, plain);
	// With the fix blocks in the launch only they store dx at k* (skip), so
	// no order between their store and the tile's is needed. (This is
	// faster than the tile storing it and publishing its record after a
	// fence.)
	int skip = -1;
	if (ext && has && r.cm != 0u && !later) {
		// This run holds the tile's last take-over k*: record dx there.
		constexpr int N = ScanItems<T, Op>::col;
		const int is = 31 - __clz(r.cm);  // its index in scan order
		M part = M(0);
#pragma unroll
		for (int i = 0; i < N; ++i)
			if (i == is) part = r.g[i];
		const int k = (int)((rev ? k0 + (N - 1 - is) : k0 + is) - tk0);
		FixSt<fix_in>::rec(reinterpret_cast<FixRec<M>*>(ws + L.ws_fix) + c * L.nslices + s, part, k);
		if (fix_in) skip = is;
	}
	scan_slice_offsets(L, has ? s : 0, off);
	if (fix_in && ext && !r.quiet) {
		r.store(dx, L, off, false, skip);
	} else {
		r.store(dx, L, off, false);
	}
}

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
// stride even, 4-byte aligned bases (ops/scan.go, pairLayout). The tiles
// publish the same per-slice maps and records as the col kernel's, so
// scan_ext_fix serves both; the forward values move as 8-byte slots of
// the two slices. SCAN_PAIR_ITEMS is 22: on an H100 the fastest run
// length that fits three blocks per SM without spilling (24 spills 40
// bytes; 32 fits two blocks per SM, at 123 registers). Prefetching the
// unit's next tile into L2, or taking the run's own take-overs before the
// look-back's barrier, makes it slower.
#ifndef SCAN_PAIR_ITEMS
#define SCAN_PAIR_ITEMS 22
#endif

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

// scan_backward_colstrip (variant "colstrip", compute_80: f16 and bf16
// cummax and cummin along an outer axis): one block owns a strip of SCAN_STRIP_W
// adjacent slices (64-byte rows) over the whole axis, so no block waits for
// another: no ticket, look-back, fix pass or workspace. It walks the axis
// twice, in stages of SCAN_STRIP_ROWS rows that cp.async moves into a ring
// of SCAN_STRIP_DEPTH stages in shared memory with 16-byte copies, the
// next stages' copies in flight while one is worked:
//   1. x in scan order: the running extremum with its NaN rule, kept as one
//      bit per element, t_k (k is where the forward takes over), in shared
//      memory (4 bytes per row of the strip);
//   2. dy against scan order: dx_k = t_k ? g_k + ... + g_{k'-1} : 0, with k'
//      the next take-over after k (V runs through a = 1 - t).
// Each thread of a stage owns 32 consecutive rows of one slice (a bit
// word); the 16 row segments of a stage combine through shared memory. x
// and dy are read once and dx written once, which makes it faster than
// the colpair kernel where it applies. The launcher takes it where the
// strips fill one wave of the GPU (ops/scan.go, stripFills), the axis fits
// the bit words in shared memory, and every operand has unit stride along
// the innermost slice dim with 16-byte aligned rows (stripLayout).
#define SCAN_STRIP_W 32
#define SCAN_STRIP_THREADS 512
#define SCAN_STRIP_SEGS (SCAN_STRIP_THREADS / SCAN_STRIP_W)
#define SCAN_STRIP_ROWS (32 * SCAN_STRIP_SEGS)
#define SCAN_STRIP_DEPTH 3

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// strip_cp copies 16 bytes to shared memory, or writes 16 zero bytes where
// ok is false (src-size 0 reads nothing).
__device__ __forceinline__ void strip_cp(void* s, const void* g, bool ok) {
	const unsigned a = (unsigned)__cvta_generic_to_shared(s);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(a), "l"(g), "r"(ok ? 16 : 0) : "memory");
}
#endif

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_colstrip(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__, T* __restrict__ dx, void* __restrict__, const ScanLayout& L) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	typedef typename OpMath<T>::type M;
	typedef ExtremumFwd<ExtSign<Op>::value> F;
	constexpr int W = SCAN_STRIP_W, Q = SCAN_STRIP_SEGS, R = SCAN_STRIP_ROWS, D = SCAN_STRIP_DEPTH;
	constexpr int CPR = W * (int)sizeof(T) / 16;  // 16-byte chunks per row
	constexpr int LD = R * CPR / SCAN_STRIP_THREADS;
	static_assert(ExtSign<Op>::value != 0 && sizeof(T) == 2, "colstrip serves the 16-bit cummax and cummin");
	static_assert(LD * SCAN_STRIP_THREADS == R * CPR, "a stage is whole copies per thread");
	extern __shared__ __align__(16) unsigned char strip_sm[];
	const i64 n = L.n, stages = (n + R - 1) / R;
	T* ring = reinterpret_cast<T*>(strip_sm);                                    // D x R x W
	unsigned* bits = reinterpret_cast<unsigned*>(strip_sm + D * R * W * sizeof(T));  // stages x Q x W
	M* agg = reinterpret_cast<M*>(bits + stages * Q * W);                          // Q x W
	unsigned* has = reinterpret_cast<unsigned*>(agg + Q * W);                      // Q x W
	M* carry = reinterpret_cast<M*>(has + Q * W);                                  // W
	const int t = threadIdx.x, s = t % W, q = t / W;
	// The strip: slices s0 .. s0 + width - 1 of the innermost slice dim.
	const i64 inner = L.srank > 0 ? L.sdim[L.srank - 1] : 1;
	const i64 spr = (inner + W - 1) / W;
	const i64 o = blockIdx.x / spr, j0 = (blockIdx.x - o * spr) * W;
	const int width = (int)min((i64)W, inner - j0);
	i64 off[4];
	scan_slice_offsets(L, o * inner + j0, off);
	const bool rev = L.reverse != 0;
	// Step i < stages copies x's stage i (scan order), a later step dy's
	// stage 2 * stages - 1 - i; every step commits one group.
	auto issue = [&](i64 i) {
		if (i < 2 * stages) {
			const bool fx = i < stages;
			const T* p = fx ? x + off[1] : dy + off[0];
			const i64 as = fx ? L.astride[1] : L.astride[0];
			const i64 st = fx ? i : 2 * stages - 1 - i;
			T* b = ring + (int)(i % D) * R * W;
#pragma unroll
			for (int l = 0; l < LD; ++l) {
				const int c = t + l * SCAN_STRIP_THREADS, r = c / CPR, ch = c % CPR;
				const i64 k = st * R + r;
				const bool ok = k < n && ch * 16 < width * (int)sizeof(T);
				const i64 row = rev ? n - 1 - k : k;
				strip_cp(b + r * W + ch * (16 / (int)sizeof(T)), ok ? p + row * as + ch * (16 / (int)sizeof(T)) : p, ok);
			}
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	if (t < W) carry[t] = F::template fwd_identity<M>();
#pragma unroll
	for (int i = 0; i < D - 1; ++i) issue(i);
	// 1. x in scan order: each thread folds its 32 rows, the segments'
	// totals give each its state before it, and the thread's walk from that
	// state sets its bits.
	for (i64 st = 0; st < stages; ++st) {
		issue(st + D - 1);
		asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
		__syncthreads();
		const T* buf = ring + (int)(st % D) * R * W;
		const i64 lim = n - st * R - q * 32;  // rows of the thread's segment inside the axis
		M v[32];
		M a = F::template fwd_identity<M>();
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			v[j] = j < lim ? to_op(buf[(q * 32 + j) * W + s]) : F::template fwd_identity<M>();
			a = F::fwd_combine(a, v[j]);
		}
		agg[q * W + s] = a;
		__syncthreads();
		M m = carry[s];
		for (int p = 0; p < q; ++p) m = F::fwd_combine(m, agg[p * W + s]);
		unsigned b = 0;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			const bool tk = F::takes(m, v[j]) && j < lim;
			b |= (unsigned)tk << j;
			m = tk ? v[j] : m;
		}
		bits[(st * Q + q) * W + s] = b;
		__syncthreads();
		if (q == Q - 1) carry[s] = m;
	}
	__syncthreads();
	if (t < W) carry[t] = M(0);
	// 2. dy against scan order: a segment hands the segments before it the
	// sum of its g up to its first take-over (all of them if it has none);
	// a thread starts from what the segments after it (and the stages
	// after this one, carry) hand down, and walks its rows backwards.
	for (i64 i = stages; i < 2 * stages; ++i) {
		const i64 st = 2 * stages - 1 - i;
		issue(i + D - 1);
		asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
		__syncthreads();
		T* buf = ring + (int)(i % D) * R * W;
		const unsigned b = bits[(st * Q + q) * W + s];
		M g[32];
		M head = M(0);
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			g[j] = to_op(buf[(q * 32 + j) * W + s]);  // 0 past the axis (zero-filled copies)
			head += (b & ((2u << j) - 1u)) == 0u ? g[j] : M(0);
		}
		agg[q * W + s] = head;
		has[q * W + s] = b;
		__syncthreads();
		M acc = M(0);
		int p = q + 1;
		for (; p < Q; ++p) {
			acc += agg[p * W + s];
			if (has[p * W + s] != 0u) break;
		}
		if (p == Q) acc += carry[s];
#pragma unroll
		for (int j = 31; j >= 0; --j) {
			acc += g[j];
			const bool tk = (b >> j) & 1u;
			buf[(q * 32 + j) * W + s] = from_op<T>(tk ? acc : M(0));
			acc = tk ? M(0) : acc;
		}
		__syncthreads();
		if (q == 0) carry[s] = acc;
		T* out = dx + off[3];
#pragma unroll
		for (int l = 0; l < LD; ++l) {
			const int c = t + l * SCAN_STRIP_THREADS, r = c / CPR, ch = c % CPR;
			const i64 k = st * R + r;
			if (k < n && ch * 16 < width * (int)sizeof(T)) {
				const i64 row = rev ? n - 1 - k : k;
				*reinterpret_cast<uint4*>(out + row * L.astride[3] + ch * (16 / (int)sizeof(T))) =
						*reinterpret_cast<const uint4*>(buf + r * W + ch * (16 / (int)sizeof(T)));
			}
		}
		__syncthreads();
	}
#endif
}
