#pragma once
// Carries across threads and tiles: the warp scans, a tile's map
// (TileMap, SpanEnds), the look-back through the workspace (ScanChain,
// PackedChain, Lookback) and the tickets with which blocks take tiles and
// fill the workspace (scan_take).
#include "scan_run.cuh"

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
// state flows from lanes earlier in scan order, combined in that order)
// and the warp's total.
template <typename Op, typename M>
__device__ __forceinline__ M warp_fwd_scan(M v, int lane, bool rev, M& total) {
	const int dir = rev ? 1 : -1;
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		const int src = lane + dir * off;
		const M o = __shfl_sync(0xffffffffu, v, src & 31);
		if (src >= 0 && src < 32) v = Op::fwd_combine(o, v);
	}
	const int src = lane + dir;
	const M e = __shfl_sync(0xffffffffu, v, src & 31);
	total = __shfl_sync(0xffffffffu, v, rev ? 0 : 31);
	return (src >= 0 && src < 32) ? e : Op::template fwd_identity<M>();
}

// ---- tile maps ---------------------------------------------------------------

// SpanEnds (a Span op, chunked): the runs at a tile's ends leave the y at
// those ends in shared memory (record), one pair per lane (col: per
// slice; row: lane 0, a slice per block), which give the factor of the
// tile's map (factor). For other ops record does nothing.
template <typename T, typename Op> struct SpanEnds {
	template <typename R> __device__ static void record(const R&, bool, bool, int) {}
};
template <typename T> struct SpanEnds<T, LogcumsumexpBw> {
	typedef typename OpMath<T>::type M;
	__device__ static M (&ends())[2][32] {
		__shared__ M s[2][32];
		return s;
	}
	template <typename R> __device__ static void record(const R& r, bool mfirst, bool mlast, int lane) {
		r.tile_ends(mfirst, mlast, ends()[0][lane], ends()[1][lane]);
	}
	__device__ static M factor(int lane) { return lse_tile_factor<Narrow<T>::value>(ends()[0][lane], ends()[1][lane]); }
};

// TileMap::of is a tile's map: its maps m(i), i = 0..n-1, composed
// upstream first (the last in scan order first); a Span op's composes
// only u and takes the factor from the tile's y ends (SpanEnds). (A
// template rather than a test of Span in the kernels: the test alone,
// though always false for the other ops, changes their code.)
template <typename T, typename Op> struct TileMap {
	template <typename M, typename F> static __device__ __forceinline__ Aff<M> of(int n, F m, int) {
		Aff<M> tot = aff_identity<M>();
		for (int i = 0; i < n; ++i) tot = compose<Op>(m(i), tot);
		return tot;
	}
};
template <typename T> struct TileMap<T, LogcumsumexpBw> {
	template <typename M, typename F> static __device__ __forceinline__ Aff<M> of(int n, F m, int lane) {
		M u = M(0);
		for (int i = 0; i < n; ++i) u = apply<LogcumsumexpBw>(m(i), u);
		return Aff<M>{SpanEnds<T, LogcumsumexpBw>::factor(lane), u};
	}
};

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

// window_chain is the float look-back for groups of G lanes that serve
// one slice each (G = 32: the whole warp serves one slice, as in the row
// mapping, where a slice's tiles follow one another through one chain).
// Lane j of a group reads tile top - j, so a step of the walk back covers
// G tiles at the cost of one load: the walk moves over G tiles a memory
// latency where one lane moves over one. Src reads and writes the tiles'
// slots (SlotSrc, PackedSrc). The walk stops at the nearest tile with its
// value after it (incl) with every tile in between holding its map (agg),
// then the group folds those maps onto that incl one by one in ascending
// order, as ScanChain<true> does: the same operations on the same values,
// whichever tile the walk stops at. With K > 0 the first K steps of the
// walk keep the maps they probed in shared memory (WalkKeep), and the
// fold reads those from there rather than from the workspace again: a
// fold round then costs no memory latency. The buffer is the block's, so
// one warp of a block walks with K > 0. Not inlined: inlined, its
// registers add to the whole kernel's (the row kernels of cummax and
// cummin run at lower occupancy).
template <typename A> __device__ __forceinline__ A shfl_slot(A v, int src);
template <> __device__ __forceinline__ float shfl_slot(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
template <> __device__ __forceinline__ Aff<float> shfl_slot(Aff<float> v, int src) {
	return Aff<float>{__shfl_sync(0xffffffffu, v.a, src), __shfl_sync(0xffffffffu, v.u, src)};
}

// WalkKeep<A, K>: the maps of a walk's first K steps, slot [i][lane] for
// step i (tile c-1 - i*G - j of the lane's group); K = 0 keeps none.
template <typename A, int K> struct WalkKeep {
	static __device__ __forceinline__ A (&buf())[K][32] {
		__shared__ A s[K][32];
		return s;
	}
	static __device__ __forceinline__ void put(i64 i, int lane, A a) {
		if (i < K) buf()[i][lane] = a;
	}
	static __device__ __forceinline__ bool get(i64 r, int G, int g0, A& a) {
		if (r >= (i64)K * G) return false;
		a = buf()[r / G][g0 + (int)(r % G)];
		return true;
	}
};
template <typename A> struct WalkKeep<A, 0> {
	static __device__ __forceinline__ void put(i64, int, A) {}
	static __device__ __forceinline__ bool get(i64, int, int, A&) { return false; }
};

template <int G, int K, typename Src, typename A, typename M, typename F>
__device__ __noinline__ M window_chain(const Src src, i64 c, i64 chunks, bool has, A tot, M v0, F fold) {
	typedef WalkKeep<A, K> Keep;
	const int lane = threadIdx.x & 31, j = lane & (G - 1), g0 = lane - j;
	const unsigned gbits = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << g0;
	const bool last = c + 1 == chunks;  // nobody reads the last tile
	if (has && j == 0 && c > 0 && !last) src.put_agg(c, tot);
	i64 top = c - 1, d0 = -1;
	M v = v0;
	bool walking = has && c > 0;
	while (__any_sync(0xffffffffu, walking)) {
		const i64 d = top - j;
		int st = 2;  // before the first tile: the start, v0
		M lv = v0;
		A la = A();
		if (walking && d >= 0) st = src.probe(d, lv, la);
		const unsigned two = __ballot_sync(0xffffffffu, walking && st == 2) & gbits;
		const unsigned none = __ballot_sync(0xffffffffu, walking && st == 0) & gbits;
		const int at = two ? __ffs(two) - 1 : lane;  // the group's nearest tile with its incl
		const M iv = __shfl_sync(0xffffffffu, lv, at);
		// A tile nearer than that one without its map yet: wait for it.
		const bool wait = (none & (two ? (two & (0u - two)) - 1u : 0xffffffffu)) != 0u;
		if (walking && !wait) {
			Keep::put((c - 1 - top) / G, lane, la);
			if (two) {
				d0 = top - (at - g0);
				v = iv;
				walking = false;
			} else {
				top -= G;
			}
		} else if (walking) {
			__nanosleep(32);
		}
	}
	__syncwarp();  // the kept maps, written by other lanes of the group
	i64 e0 = d0 + 1;
	bool folding = has && e0 < c;
	while (__any_sync(0xffffffffu, folding)) {
		A av = A();
		if (folding && e0 + j < c && !Keep::get(c - 1 - (e0 + j), G, g0, av)) av = src.agg(e0 + j);
#pragma unroll
		for (int t = 0; t < G; ++t) {
			const A a = shfl_slot(av, g0 + t);
			if (folding && e0 + t < c) v = fold(a, v);
		}
		e0 += G;
		folding = folding && e0 < c;
	}
	if (has && j == 0 && !last) src.put_incl(c, tot, fold(tot, v));
	return v;
}

// SlotSrc: ScanChain<true>'s slots for window_chain (maps in aggs,
// values in incls).
template <typename A, typename M> struct SlotSrc {
	A* aggs;
	M* incls;
	i64 ns;
	// The map is read only where the value is not there (av is set where
	// the tile has its map alone).
	__device__ int probe(i64 d, M& iv, A& av) const {
		if (slot_ld(incls + d * ns, iv)) return 2;
		return d > 0 && slot_ld(aggs + d * ns, av) ? 1 : 0;  // tile 0 publishes incl alone
	}
	__device__ A agg(i64 d) const {
		A av;
		slot_ld(aggs + d * ns, av);
		return av;
	}
	__device__ void put_agg(i64 c, A tot) const { slot_st(aggs + c * ns, tot); }
	__device__ void put_incl(i64 c, A, M v) const { slot_st(incls + c * ns, v); }
};

// chain_lookback runs in warp 0 of a chunked tile: every lane calls it;
// G > 1 (float opmath): lanes in groups of G serve one slice each, and the
// walk keeps the maps of its first K steps (window_chain; one warp of a
// block with K > 0).
template <bool Window> struct ChainPick {
	template <int G, int K, typename A, typename M, typename F>
	static __device__ __forceinline__ M run(unsigned* flags, A* agg, M* incl, const ScanLayout& L, i64 c, bool has,
			A tot, M v0, F fold) {
		return ScanChain<sizeof(M) == 4>::run(flags, agg, incl, L, c, has, tot, v0, fold);
	}
};
template <> struct ChainPick<true> {
	template <int G, int K, typename A, typename M, typename F>
	static __device__ __forceinline__ M run(unsigned*, A* agg, M* incl, const ScanLayout& L, i64 c, bool has, A tot,
			M v0, F fold) {
		return window_chain<G, K>(SlotSrc<A, M>{agg, incl, L.nslices}, c, L.chunks, has, tot, v0, fold);
	}
};

template <int G, int K = 0, typename A, typename M, typename F>
__device__ __forceinline__ M chain_lookback(unsigned* flags, A* agg, M* incl, const ScanLayout& L, i64 c, bool has,
		A tot, M v0, F fold) {
	return ChainPick<(G > 1 && sizeof(M) == 4)>::template run<G, K>(flags, agg, incl, L, c, has, tot, v0, fold);
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
// no incl part (ops/scan_geometry.go), and the fill before a launch is 8 bytes per
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
	template <typename Op, typename M, int G, int K>
	static __device__ __forceinline__ M run(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
			Aff<M> tot) {
		return chain_lookback<G, K>(reinterpret_cast<unsigned*>(ws + L.ws_flags) + unit,
				reinterpret_cast<Aff<M>*>(ws + L.ws_agg) + s, reinterpret_cast<M*>(ws + L.ws_incl) + s, L, c,
				has, tot, M(0), ApplyFold<Op>());
	}
};

// PackedSrc: the packed slots for window_chain (a map is its sum u).
struct PackedSrc {
	unsigned long long* slot;
	i64 ns;
	__device__ int probe(i64 d, float& iv, float& u) const {
		const unsigned long long b = pslot_ld(slot + d * ns);
		u = __uint_as_float((unsigned)b);
		if ((unsigned)(b >> 32) != SCAN_NONE) {
			iv = __uint_as_float((unsigned)(b >> 32));
			return 2;
		}
		return (unsigned)b != SCAN_NONE ? 1 : 0;
	}
	__device__ float agg(i64 d) const { return __uint_as_float((unsigned)pslot_ld(slot + d * ns)); }
	__device__ void put_agg(i64 c, float u) const { pslot_st(slot + c * ns, u, 0.f, false); }
	__device__ void put_incl(i64 c, float u, float v) const { pslot_st(slot + c * ns, u, v, true); }
};
struct PackedFold {
	__device__ float operator()(float u, float v) const { return u + v; }
};

template <> struct Lookback<true> {
	template <typename Op, typename M, int G, int K>
	static __device__ __forceinline__ M run(unsigned char* ws, const ScanLayout& L, i64 c, i64, i64 s, bool has,
			Aff<M> tot) {
		unsigned long long* slot = reinterpret_cast<unsigned long long*>(ws + L.ws_agg) + s;
		if (G > 1) return window_chain<G, K>(PackedSrc{slot, L.nslices}, c, L.chunks, has, tot.u, 0.f, PackedFold());
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
// returns V after the tile (V_in). G > 1: lanes in groups of G serve one
// slice each (window_chain, float opmath), and the walk keeps the maps of
// its first K steps in shared memory (packed slots or the ops' slots).
template <typename Op, typename M, int G = 1, int K = 0>
__device__ __forceinline__ M lookback(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
		Aff<M> tot) {
	return Lookback<PackedChain<Op>::on && sizeof(M) == 4>::template run<Op, M, G, K>(ws, L, c, unit, s, has, tot);
}

// fwd_lookback chains the forward state instead (the ext order: tile c in
// scan order, tot its forward total); returns the state before the tile.
template <typename Op, typename M>
__device__ __forceinline__ M fwd_lookback(unsigned char* ws, const ScanLayout& L, i64 c, i64 unit, i64 s, bool has,
		M tot) {
	return chain_lookback<1>(reinterpret_cast<unsigned*>(ws + L.ws_flags) + unit,
			reinterpret_cast<M*>(ws + L.ws_fwd) + s, reinterpret_cast<M*>(ws + L.ws_incl) + s, L, c, has, tot,
			Op::template fwd_identity<M>(), FwdFold<Op>());
}

// Tickets. The counter at workspace byte 0 starts at all ones (the
// launcher's memset of 16 bytes), so an atomic add's old value plus one
// holds the tickets taken before it in its low SCAN_TK_BITS bits and,
// above them, the fill blocks that are done. The first L.fillers tickets
// are fill blocks: each sets its share of the slots, [SCAN_COUNTER,
// L.ws_fill), to SCAN_NONE_BYTE bytes and then counts itself done behind a fence
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
// workspace's slots, [SCAN_COUNTER, ws_fill), to SCAN_NONE_BYTE bytes (16 a store),
// then counts itself done.
__device__ __forceinline__ void scan_fill_part(unsigned char* __restrict__ ws, i64 ws_fill, int fillers, i64 b) {
	const i64 words = (ws_fill - SCAN_COUNTER) >> 4;
	const i64 per = (words + fillers - 1) / fillers;
	const i64 w1 = b * per + per < words ? b * per + per : words;
	uint4* p = reinterpret_cast<uint4*>(ws + SCAN_COUNTER);
	for (i64 w = b * per + threadIdx.x; w < w1; w += SCAN_THREADS) p[w] = make_uint4(SCAN_NONE, SCAN_NONE, SCAN_NONE, SCAN_NONE);
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
