#pragma once
// The scan family's math: the launch constants, ScanLayout, the element maps
// (Aff) and their composition, and each op's factors and forward state
// (CumsumBw, CumprodBw, CumExtBw, LogcumsumexpBw) with its run lengths
// (ScanItems) and load helpers (ColFetch). The recurrence is in scan.cuh's overview.
#include "common.cuh"
// SCAN_THREADS, SCAN_WARPS, SCAN_COUNTER (the workspace's first bytes, the
// ticket counter and room to keep what follows 16-byte aligned),
// SCAN_PAIR_ITEMS, SCAN_STRIP_W, SCAN_STRIP_THREADS, SCAN_STRIP_DEPTH and
// the kernels' phases (SCAN_MAIN, SCAN_FWD_TILES, ...): the constants
// shared with the Go launchers, from the spec (gen/spec_consts.go).
#include "zconsts.cuh"

#define SCAN_SRANK (BC_MAX_RANK - 1)

// ScanLayout, the kernels' last parameter: from the spec (gen/spec_layouts.go).
#include "zlayouts.cuh"

// FixRec is a tile's take-over record (ext order): dx at its last take-over
// k* without the carry, and k* as an offset in the tile.
template <typename M> struct __align__(2 * sizeof(M)) FixRec {
	M v;
	int k;
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
// (cummax, cummin), FactorMul<Op> its product of two factors.
template <typename Op> struct FactorMul {
	template <typename M> static __device__ __forceinline__ M mul(M a, M b) { return Op::mul(a, b); }
};
template <typename Op, typename M> __device__ __forceinline__ Aff<M> compose(Aff<M> p, Aff<M> q) {
	return Aff<M>{FactorMul<Op>::mul(p.a, q.a), p.u + Op::mul(p.a, q.u)};
}
template <typename Op, typename M> __device__ __forceinline__ M apply(Aff<M> p, M v) { return p.u + Op::mul(p.a, v); }

template <typename M> __device__ __forceinline__ bool scan_finite(M v) { return v - v == M(0); }
// scan_tiny is the least positive value (a subnormal).
template <typename M> __device__ __forceinline__ M scan_tiny();
template <> __device__ __forceinline__ float scan_tiny<float>() { return __int_as_float(1); }
template <> __device__ __forceinline__ double scan_tiny<double>() { return __longlong_as_double(1LL); }
// scan_keep is a product p of nonzero factors with an underflow to 0 kept
// as the least positive value of its sign, so that it still carries an
// infinity or NaN it is applied to.
__device__ __forceinline__ float scan_keep(float p) { return p + copysignf(scan_tiny<float>(), p); }
__device__ __forceinline__ double scan_keep(double p) { return p + copysign(scan_tiny<double>(), p); }
// CutC<M> is cumprod's c with its strong zero (dx = 0 whatever S is,
// after the first zero) told apart from a plain 0 (dx = 0 * S, an
// underflowed y before). float takes +0 for the strong zero and -0 for
// every plain 0; double a NaN with a payload of its own (scan_nan's is
// all ones), moved and compared by its bits but never computed with, and
// a plain 0 as it comes: each the encoding that keeps its kernels'
// registers lowest. A plain double c that is a NaN, a y loaded from
// memory with any payload (Go's math.NaN() has the strong zero's), is
// made scan_nan's NaN, so no y reads as the strong zero.
template <typename M> struct CutC;
template <> struct CutC<float> {
	static __device__ __forceinline__ float strong() { return 0.f; }
	static __device__ __forceinline__ float plain(float c) { return c == 0.f ? -fabsf(c) : c; }
	static __device__ __forceinline__ bool is_strong(float c) { return __float_as_int(c) == 0; }
};
template <> struct CutC<double> {
	static __device__ __forceinline__ double strong() { return __longlong_as_double(0x7ff8000000000001LL); }
	static __device__ __forceinline__ double plain(double c) { return c == c ? c : __longlong_as_double(0x7fffffffffffffffLL); }
	static __device__ __forceinline__ bool is_strong(double c) {
		return __double_as_longlong(c) == 0x7ff8000000000001LL;
	}
};
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
// prep(x, y, yp, first, single, w, g, a, c) sets the factors of one element
// from its saved x and y, yp = y of the element before it in scan order
// (first: there is none), single (the axis has length 1) and w, the forward
// state before it as walk and step keep it along a run; it may replace g,
// the gradient grad(dy) the op uses, with its stand-in h (cumprod).

// StrongZero: the factors are general numbers; a (.) v keeps its zeros
// exact (the op's scale says which c are strong zeros).
struct StrongZero {
	static constexpr bool strong = true;
	template <typename M> __device__ static M mul(M a, M v) { return sz(a, v); }
};

// NoFwd is the forward state of ops that need none. A forward state is a
// value of M; fwd_combine(a, b) is the state of a part a followed by a
// part b (in scan order), fwd_value(x) an element's. walk and step are the
// state as prep's loop keeps it: walk(f) at the start of a run, step(w, x)
// after element x.
struct NoFwd {
	static constexpr bool fwd = false, fwd_shortcut = false, mask_factors = false, strong = false;
	template <typename M> __device__ static M x_fill() { return M(0); }
	template <typename M> __device__ static M fwd_identity() { return M(0); }
	template <typename M> __device__ static M fwd_after_zero() { return M(0); }
	template <typename M> __device__ static M fwd_value(M) { return M(0); }
	template <typename M> __device__ static M fwd_combine(M a, M) { return a; }
	template <typename M, int N> __device__ static M fold(const M (&)[N]) { return M(0); }
	template <typename M> __device__ static M walk(M f) { return f; }
	template <typename M> __device__ static M step(M w, M) { return w; }
};


// cumsum: dx_k = sum_{j>=k} g_j (the reverse cumsum of dy).
struct CumsumBw : NoFwd {
	static constexpr bool needs_x = false, needs_y = false;
	template <typename M> __device__ static M mul(M, M v) { return v; }
	template <typename M> __device__ static M scale(M, M s) { return s; }
	template <typename M> __device__ static M grad(M g) { return g; }
	template <bool Narrow_, typename M, typename W> __device__ static void prep(M, M, M, bool, bool, W, M&, M& a, M& c) {
		a = M(1);
		c = M(1);
	}
};

// cumprod: dx_k = y_{k-1} * sum_{j>=k} g_j * x_{k+1}...x_j, exact with zeros
// and without division; PyTorch's three regions follow: before the first
// zero z1 the usual value, at z1 the value with the products cut at the
// second zero, after z1 exactly 0 (c is the strong zero of scale, CutC,
// where the forward state says a zero came before k). Where x_k is inf
// or NaN and no zero came before, dx_k is NaN as PyTorch's division
// gives, unless the axis has length 1 (dx = dy).
//
// PyTorch sums terms that the recurrence multiplies out: before z1,
// dx_k = (sum_{k<=j<z1} y_j g_j) / x_k; at z1, y_{z1-1} sum_j P_j g_j
// with P_j the product of the x in (z1, j]. Where some term is infinite,
// the value is ±inf or NaN by the signs of the infinite terms, which the
// recurrence's products would lose. So g_j enters as h_j (prep replaces
// g): before z1, g_j * |y_j| where y_j is ±inf or NaN (a term y_j g_j
// with the sign it has relative to y_j, NaN for g_j = 0); after z1, g_j *
// inf once an x after z1 is ±inf or NaN (P_j infinite); else g_j. An
// infinite h makes every sum that holds it infinite with the term's sign
// carried through the x it is multiplied by, as PyTorch's sum of terms
// does; where all terms are finite, h = g. PyTorch's sum at z1 also runs
// past the second zero z2, where P_j * 0 is NaN when P is infinite: z2
// then gets a = h = NaN, which its strong-zero products pass on.
//
// Where y underflowed to 0 before z1 (x has no zero there, y_j = 0 in the
// dtype), PyTorch's terms y_j g_j are 0, or NaN where g_j is ±inf or NaN,
// and its dx there is that sum over x_k: 0, or NaN. So h_j = g_j * |y_j|
// there too (0 or NaN), and dx_k = c_k * S_k is a plain product before
// and at z1: with c_k = y_{k-1} = 0 it is 0, or NaN where S_k holds such
// a NaN (or an infinity from beyond, at z1). The products of the x
// factors that a map carries keep an underflow as the least positive
// value (FactorMul, scan_keep), so that a NaN from far along the slice
// still reaches the elements before it, as it does PyTorch's sum.
//
// The forward state is bits of a zero-or-inf walk in scan order, held as
// a small integer in M: 1 a zero came, 2 an x that is ±inf or NaN came, 4
// one came after the first zero. fwd_combine is in order (a before b);
// walk and step keep the bits as an unsigned along a run. fwd_after_zero
// is the state "a zero came"; scan_fwd_unit tells it from an underflow by
// whether fwd_combine with it changes a state.
struct CumprodBw : StrongZero {
	static constexpr bool needs_x = true, needs_y = true;
	static constexpr bool fwd = true, mask_factors = false;
	// Phase 1 can tell a tile has no zero from y at its last element alone
	// (nonzero, not NaN), and reads x only otherwise: its state then
	// matters only after a zero (bit 2 of a part without a zero enters no
	// bit 4), where y would be 0 or NaN.
	static constexpr bool fwd_shortcut = true;
	template <typename M> __device__ static M fwd_identity() { return M(0); }
	template <typename M> __device__ static M fwd_after_zero() { return M(1); }
	template <typename M> __device__ static M x_fill() { return M(1); }
	template <typename M> __device__ static unsigned bits(M x) {
		return x == M(0) ? 1u : scan_finite(x) ? 0u : 2u;
	}
	static __device__ __forceinline__ unsigned join(unsigned a, unsigned b) {
		return a | b | ((a & (b >> 1) & 1u) << 2);
	}
	template <typename M> __device__ static M fwd_value(M x) { return M(bits(x)); }
	template <typename M> __device__ static M fwd_combine(M a, M b) {
		return M(join((unsigned)a, (unsigned)b));
	}
	template <typename M> __device__ static unsigned walk(M f) { return (unsigned)f; }
	template <typename M> __device__ static unsigned step(unsigned w, M x) { return join(w, bits(x)); }
	template <typename M, int N> __device__ static M fold(const M (&x)[N]) {
		unsigned w = 0;
#pragma unroll
		for (int i = 0; i < N; ++i) w = step(w, x[i]);
		return M(w);
	}
	template <typename M> __device__ static M grad(M g) { return g; }
	// scale: dx = c * S, 0 for the strong zero (after z1, CutC).
	template <typename M> __device__ static M scale(M c, M s) { return CutC<M>::is_strong(c) ? M(0) : c * s; }
	template <bool Narrow_, typename M>
	__device__ static void prep(M x, M y, M yp, bool first, bool single, unsigned w, M& g, M& a, M& c) {
		const bool z = (w & 1u) != 0, iz = (w & 4u) != 0, fin = scan_finite(x), zero = x == M(0);
		const M cp = first ? M(1) : yp;
		c = z ? CutC<M>::strong() : !single & !fin ? scan_nan<M>() : CutC<M>::plain(cp);
		// The quirk at the second zero: a = h = NaN.
		const bool cut_nan = z & iz & zero;
		a = cut_nan ? scan_nan<M>() : x;
		const M m0 = !zero & !(bc_fabs(y) > M(0) & scan_finite(y)) ? bc_fabs(y) : M(1);
		const M m1 = cut_nan ? scan_nan<M>() : iz | !fin ? scan_inf<M>() : M(1);
		g = g * (single ? M(1) : z ? m1 : m0);
	}
};
// Its product of two factors keeps an underflow (scan_keep): an exact 0
// comes only from a zero factor, a cut.
template <> struct FactorMul<CumprodBw> {
	template <typename M> static __device__ __forceinline__ M mul(M a, M b) {
		return a == M(0) || b == M(0) ? M(0) : scan_keep(a * b);
	}
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
	template <typename M> __device__ static M fwd_after_zero() { return fwd_identity<M>(); }
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
	template <typename M> __device__ static M walk(M f) { return f; }
	template <typename M> __device__ static M step(M w, M x) { return fwd_combine(w, x); }
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
	template <bool Narrow_, typename M> __device__ static void prep(M x, M, M, bool, bool, M f, M&, M& a, M& c) {
		a = take(f, x) ? M(0) : M(1);
		c = M(1) - a;
	}
};
typedef CumExtBw<1> CummaxBw;
typedef CumExtBw<-1> CumminBw;

// MaskTake calls Op::take for the mask ops only (the others have none).
template <typename Op> struct MaskTake {
	template <typename W, typename M> __device__ static bool take(W, M) { return false; }
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

// scan_exp2h is exp(2h) (h is half the exponent), or for a 16-bit dtype
// (Narrow) the hardware's 2^x of h * log2(e), squared: relative error near
// 2^-20 for the arguments that matter (|2h| < 104; beyond, the result is
// 0 or inf either way), far below the 2^-9 (bf16) or 2^-12 (f16) of the
// rounding to the dtype. The ftz form of ex2 flushes subnormal results,
// but half the exponent keeps every result of 2h >= -174 normal, and the
// square (a plain multiply) rounds into the subnormals as exp does: three
// instructions, where the non-ftz ex2 tests its argument and scales
// before and after under a predicate (six, and a predicate register).
// -DSCAN_PRECISE_EXP (NVCC_EXTRA of scripts/ptx-variant.sh) builds expf
// instead, to time the two.
template <bool Fast, typename M> __device__ __forceinline__ M scan_exp2h(M h) { return bc_exp(h + h); }
template <> __device__ __forceinline__ float scan_exp2h<true, float>(float h) {
#ifdef SCAN_PRECISE_EXP
	return bc_exp(h + h);
#else
	float r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(h * 1.44269504088896341f));
	return r * r;
#endif
}

// lse_exp is exp(p - q) for logcumsumexp's factors: at least the least
// positive value where p and q are finite (an underflow, or p - q
// overflowing to -inf near the ends of the range, where PyTorch's sums of
// logs stay finite), so that it keeps an infinity infinite; exactly 0
// where p is -inf or q is +inf; NaN where either is NaN or both are the
// same infinity. It takes h = p/2 - q/2, which is finite wherever p and q
// are, and 2h is p - q rounded alike (lse_exp_half: exp(2h), one test).
template <bool Narrow_, typename M> __device__ __forceinline__ M lse_exp_half(M h) {
	const M e = scan_exp2h<Narrow_>(h);
	return h > -scan_inf<M>() ? scan_fmax(e, scan_tiny<M>()) : e;
}
template <bool Narrow_, typename M> __device__ __forceinline__ M lse_exp(M p, M q) {
	return lse_exp_half<Narrow_>(p * M(0.5) - q * M(0.5));
}

// lse_factor is logcumsumexp's factor exp(from - to) between two y values,
// from before to in scan order: 1 where both are +inf, else lse_exp's
// value (0 where to is +inf or from -inf; NaN where either is NaN or both
// are -inf). The 16-bit and f64 kernels take it with the operands tested
// rather than the halves (the same value): each form is the one that
// keeps its kernels' registers lowest.
template <bool Narrow_, typename M> __device__ __forceinline__ M lse_factor(M from, M to) {
	const bool inf2 = from == to && to == scan_inf<M>();
	if (!Narrow_ && sizeof(M) == 4) return lse_exp_half<Narrow_>(inf2 ? M(0) : from * M(0.5) - to * M(0.5));
	const M e = scan_exp2h<Narrow_>((inf2 ? M(0) : from - to) * M(0.5));
	return (from > -scan_inf<M>()) & (to < scan_inf<M>()) ? scan_fmax(e, scan_tiny<M>()) : e;
}

// lse_tile_factor is lse_factor for a tile's map, with exp rounded once
// (float opmath: exp in double): the factors of the tiles a value crosses
// multiply, and a correctly rounded factor errs by half an ulp either way,
// where exp's own errors may lean one way for like arguments.
template <bool Narrow_, typename M> __device__ __forceinline__ M lse_tile_factor(M from, M to) {
	return lse_factor<Narrow_>(from, to);
}
template <> __device__ __forceinline__ float lse_tile_factor<false, float>(float from, float to) {
	const double d = (double)from - (double)to;
	const float e = (float)exp(d);
	const float r = d > -scan_inf<double>() ? fmaxf(e, scan_tiny<float>()) : e;
	return from == to && to == scan_inf<float>() ? 1.f : r;
}
template <> __device__ __forceinline__ float lse_tile_factor<true, float>(float from, float to) {
	return lse_tile_factor<false, float>(from, to);
}

// logcumsumexp: dx_k = exp(x_k - y_k) * T_k with T_k = g_k + exp(y_k -
// y_{k+1}) T_{k+1}, PyTorch's exp(x_k) sum_{j>=k} g_j exp(-y_j) without
// overflow: every exponent is <= 0 for the nondecreasing y. A NaN in dy
// contributes nothing, as PyTorch's log-space form (which maps it to the
// lowest value) does. c_k is held as its square root r = lse_exp(x_k/2,
// y_k/2) and applied as dx_k = (r T_k) r (scale): where c_k underflows,
// the product rounds to 0 at either step as PyTorch's exp of the summed
// logs does (c taken as the least positive value would leave a few
// subnormals of T), while an infinite T stays infinite; and x/2 - y/2
// does not overflow where x - y would.
//
// The products are plain, so inf and NaN pass every factor as PyTorch's
// log-space sums pass them: a NaN in x (y NaN from there on) makes every
// dx of the slice NaN; an infinite dy reaches every element before it,
// NaN where a factor is an exact 0, i.e. exp(-inf): past the first +inf
// of x (y = +inf there, where PyTorch's log g - y is inf - inf), and in
// dx_k = c_k T_k where x_k = -inf or y_k = +inf; a leading -inf run of x
// (y = -inf, c = exp(-inf + inf)) is NaN. So the factors keep an exact 0
// for exp(-inf) (an operand -inf or +inf) apart from an underflow
// (lse_exp): a factor or r that underflows, or whose exponent overflows to
// -inf from finite x and y, is the least positive value instead, which
// keeps an infinite T infinite (PyTorch's log-space dy is infinite at any
// distance) and scales a finite one to about 0 (a factor: a subnormal at
// most |T| times the least one; r: exactly 0, applied twice). Past the
// first +inf of x (y_{k-1} = y_k = +inf) a is 1: those
// elements carry the sum of their dy to the exp(-inf) at the first one,
// where a finite sum gives 0 and an infinite one NaN.
//
// At the slice's first element a is exp(yp - y) like anywhere else (yp = 0
// there, any number): V at the first element reaches no dx, and the maps
// it enters (its run's, warp's and tile's) are composed only into values
// for elements before it, of which there are none, so no test is needed.
//
// The factor of a run and of a tile is lse_factor of the y at their ends
// (Span), not the product of the element factors: a product of n
// factors, each rounded, errs by about sqrt(n) eps (n eps where exp's
// errors lean one way), a factor taken directly by one rounding. So a
// factor across k tiles holds at most k rounded tile factors and, within
// the tiles at its ends, the run factors of a warp scan and of the warps
// between (bounded by the tile's size, not the axis's).
struct LogcumsumexpBw : NoFwd {
	// Its products are plain, so a run needs no test for plain factors
	// (strong false: finish takes the general form, the same arithmetic).
	static constexpr bool needs_x = true, needs_y = true, strong = false;
	template <typename M> __device__ static M mul(M a, M v) { return a * v; }
	template <typename M> __device__ static M scale(M c, M s) { return (c * s) * c; }
	template <typename M> __device__ static M grad(M g) { return bc_isnan(g) ? M(0) : g; }
	template <bool Narrow_, typename M, typename W> __device__ static void prep(M x, M y, M yp, bool, bool, W, M&, M& a, M& c) {
		a = lse_factor<Narrow_>(yp, y);
		c = lse_exp<Narrow_>(x * M(0.5), y * M(0.5));
	}
};

// Span<Op>::on: the op takes the factor of a run and of a tile from the y
// at their ends (LogcumsumexpBw).
template <typename Op> struct Span {
	static constexpr bool on = false;
};
template <> struct Span<LogcumsumexpBw> {
	static constexpr bool on = true;
};
// Its product of two factors keeps a product of positive factors positive
// (the least positive value where it underflows).
template <> struct FactorMul<LogcumsumexpBw> {
	template <typename M> static __device__ __forceinline__ M mul(M a, M b) {
		const M p = a * b;
		return p == M(0) && a != M(0) && b != M(0) ? scan_tiny<M>() : p;
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

// ScanItems<T, Op>, the run lengths: one per (dtype, op), from the spec
// table (gen/spec_scan_items.go).
#include "zscan_items.cuh"
