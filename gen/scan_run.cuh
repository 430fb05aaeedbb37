#pragma once
// ScanRun: one thread's run of elements, loaded, folded into its map and
// forward state, and finished into dx.
#include "scan_io.cuh"

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

	// run_factor is a Span op's factor of the whole run: lse_factor from y
	// before it to y of its last element, yv[N-1], where that holds it;
	// the product of the element factors in the forward direction's
	// partial runs (past the run y holds yb): the last run of a row slice,
	// every col run shorter than N.
	__device__ __forceinline__ M run_factor() const {
		if (rev || cnt == N) return lse_factor<Narrow<T>::value>(yb, yv[N - 1]);
		M p = M(1);
#pragma unroll
		for (int i = 0; i < N; ++i) p = FactorMul<Op>::mul(a[i], p);
		return p;
	}

	// tile_ends (a Span op, chunked): the runs at a tile's ends (first in
	// memory: mfirst, last: mlast) leave y before the tile in scan order in
	// yb_tile and y of its last element in ye_tile. That is yv[N-1] of the
	// run last in scan order, except in a forward partial run, the last of
	// the slice (past the run y holds yb): only the last tile in scan order
	// has one, whose map multiplies the 0 after the slice (and a factor
	// from yb that is NaN: a slice that is -inf or NaN up to there, every
	// dx before it NaN anyway).
	__device__ __forceinline__ void tile_ends(bool mfirst, bool mlast, M& yb_tile, M& ye_tile) const {
		if (cnt == 0) return;
		if (rev ? mlast : mfirst) yb_tile = yb;
		if (rev ? mfirst : mlast) ye_tile = yv[N - 1];
	}

	// y_before is y of the element before index i in scan order (load
	// filled y before lo with yb).
	__device__ __forceinline__ M y_before(int i) const { return i > 0 ? yv[i > 0 ? i - 1 : 0] : yb; }

	// nan_y: y of some element of the run, or y before it, is NaN
	// (cumprod's dx depends on the forward state only there, see
	// scan_fwd_unit).
	__device__ __forceinline__ bool nan_y() const {
		bool nan = bc_isnan(yb);
#pragma unroll
		for (int i = 0; i < N; ++i) nan = nan | bc_isnan(yv[i]);
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
			auto w = Op::walk(f);
#pragma unroll
			for (int i = 0; i < N; ++i) {
				Op::template prep<Narrow<T>::value>(xv[i], yv[i], y_before(i), i == 0 && first0, single, w, g[i], a[i],
						c[i]);
				if (Op::fwd) w = Op::step(w, xv[i]);
			}
			return;
		}
		auto w = Op::walk(f);
#pragma unroll
		for (int i = 0; i < N; ++i) {
			const M yp = y_before(i);
			M ai, ci, gi = g[i];
			if (Op::mask_factors) {
				if (MaskTake<Op>::take(w, xv[i])) cm |= 1u << i;
			} else {
				Op::template prep<Narrow<T>::value>(xv[i], yv[i], yp, i == ifirst, single, w, gi, ai, ci);
				const bool v = (vm >> i & 1u) != 0;
				a[i] = v ? ai : M(1);
				c[i] = v ? ci : M(1);
				g[i] = v ? gi : g[i];
			}
			if (Op::fwd) w = Op::step(w, xv[i]);
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
	static __device__ __forceinline__ void plain_one(M& s, M& m, M v) {
		s = scan_fma(v, M(0), s);
		m = scan_fmin(m, bc_fabs(v));
	}
	static __device__ __forceinline__ bool plain_done(M s, M m) { return s == M(0) && m > M(0); }

	// direct_ok: a Direct op's run takes the direct form: every x of the
	// run and every y of or before one of its elements is finite and
	// nonzero (outside the run x holds 1, y holds yb, which is 1 where the
	// run starts the slice: c there). Then no zero came before any element
	// (y before it would be 0 or NaN), so the forward state is not needed,
	// a = x and c = y before, and every y is finite, so h = g: the factors
	// of prep's plain run, without prep. An empty run passes too.
	__device__ __forceinline__ bool direct_ok() const {
		if (!Direct<Op>::on) return false;
		M s = M(0), m = scan_inf<M>();
#pragma unroll
		for (int i = 0; i < N; ++i) plain_pair(s, m, xv[i], y_before(i));
		plain_one(s, m, yv[N - 1]);
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
	// 0 and a = 1: those elements pass V through, so no test is needed. A
	// Span op's run factor is that of y before the run and y of its last
	// element; its products are plain, so u needs no zero tests.
	__device__ __forceinline__ Aff<M> aggregate(bool plain) const {
		Aff<M> acc = aff_identity<M>();
		if (Span<Op>::on) {
			M u = M(0);
#pragma unroll
			for (int i = N - 1; i >= 0; --i) u = a[i] * (g[i] + u);
			acc = Aff<M>{run_factor(), u};
		} else if (Op::mask_factors) {
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
			// No factor is 0: a 0 product is an underflow (FactorMul).
			acc.a = scan_keep(acc.a);
		} else if (Op::strong) {
			// The factor as a plain product, exactly 0 where a factor is
			// (a cut), else with an underflow kept: FactorMul's value,
			// with one test per element.
			bool cut = false;
			M p = M(1);
#pragma unroll
			for (int i = N - 1; i >= 0; --i) {
				acc.u = Op::mul(a[i], g[i]) + Op::mul(a[i], acc.u);
				p = a[i] * p;
				cut = cut | (a[i] == M(0));
			}
			acc.a = cut ? M(0) : scan_keep(p);
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
