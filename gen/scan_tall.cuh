#pragma once
// The tall mapping: scan_backward_tall, a scan along an outer axis over
// few slices with a small contiguous inner extent C (2..16 columns), e.g.
// [4194304, 4] along axis 0, or [A, n, C] along axis 1 with few batches A.
//
// T consecutive rows (along the axis) of all C columns are one contiguous
// chunk of T*C elements, a tile. A block moves a tile of every operand it
// reads into shared memory with coalesced loads (16-byte packs where the
// operands are aligned, L.vec), scans it column by column out of shared
// memory, writes dx over dy there and stores it back with the same
// coalesced stores. In shared memory a tile is cut into runs of
// L.items rows (all columns, items*C elements each), one run per thread of
// a column: wc = L.split warps (1, 2, 4 or 8) serve one column, the 32
// lanes of a warp 32 consecutive runs. A run starts at a pitch of P
// elements (L.pitch, from ops/scan_tall.go's tallPitch) that puts the 32
// lanes' element loads in 32 distinct banks. 8/wc columns are served at
// once, a round; the tile's columns take ceil(C*wc/8) rounds.
//
// Each thread's run is a ScanRun (scan_run.cuh) filled from shared
// memory in scan order, so the op math, the forward state, the run maps
// and dx are the row and col mappings' own. The runs of a column combine
// with the warp scans of scan_lookback.cuh and across the wc warps in
// shared memory; the tiles of a column chain through the workspace with
// the look-back (lookback, 4 to 32 lanes of warp 0 per column of a round:
// slot, packed or flag chains as the op and opmath choose), tiles taken in carry order
// from the ticket counter. A ticket names tile row c (carry order) of
// batch a: t = c * A + a, so a tile waits only on lower tickets.
//
// Ops with a forward state (cumprod, cummax, cummin) run the row mapping's
// two passes first: SCAN_FWD_TILES (a block per tile and batch: x's tile
// into shared memory, each column's forward aggregate into the workspace,
// and the tile's look-back slots filled) and SCAN_FWD_PREFIX
// (scan_fwd_prefix, shared with the row mapping: the aggregates become
// exclusive prefixes in scan order). The others fill the slots with the
// main launch's fill blocks (scan_take).
//
// Workspace (ops/scan_tall.go): slices are s = a*C + j, a tile's values
// sit at [c * nslices + s] (forward values at [q * nslices + s], q the
// tile in memory order), and the f64 flags at [c * units + a*rounds + r],
// one per tile, batch and round (the warp serving a round's columns).
#include "scan_fwd.cuh"
#include "scan_carry.cuh"

// tall_load moves E elements of a tile from p into its shared memory
// image sm (element e at run e / S, offset e % S); vec: p is 16-byte
// aligned, so whole packs move with 16-byte loads.
template <typename T>
__device__ __forceinline__ void tall_load(const T* __restrict__ p, T* sm, int E, int S, int P, bool vec) {
	constexpr int V = Pack<T>::N;
	int e0 = 0;
	if (vec) {
		const int packs = E / V;
		for (int k = threadIdx.x; k < packs; k += SCAN_THREADS) {
			const Pack<T> pk = load_pack(p + (i64)k * V);
			int r = k * V / S, o = k * V - r * S;
#pragma unroll
			for (int v = 0; v < V; ++v) {
				sm[r * P + o] = pk.v[v];
				if (++o == S) {
					o = 0;
					++r;
				}
			}
		}
		e0 = packs * V;
	}
	for (int e = e0 + threadIdx.x; e < E; e += SCAN_THREADS) {
		const int r = e / S;
		sm[r * P + e - r * S] = scan_ld(p + e);
	}
}

// tall_store is tall_load's reverse: the tile's image in sm to p.
template <typename T>
__device__ __forceinline__ void tall_store(T* __restrict__ p, const T* sm, int E, int S, int P, bool vec) {
	constexpr int V = Pack<T>::N;
	int e0 = 0;
	if (vec) {
		const int packs = E / V;
		for (int k = threadIdx.x; k < packs; k += SCAN_THREADS) {
			Pack<T> pk;
			int r = k * V / S, o = k * V - r * S;
#pragma unroll
			for (int v = 0; v < V; ++v) {
				pk.v[v] = sm[r * P + o];
				if (++o == S) {
					o = 0;
					++r;
				}
			}
			store_pack(p + (i64)k * V, pk);
		}
		e0 = packs * V;
	}
	for (int e = e0 + threadIdx.x; e < E; e += SCAN_THREADS) {
		const int r = e / S;
		p[e] = sm[r * P + e - r * S];
	}
}

// tall_get fills v (scan order, as ScanRun's loads leave it) from a run of
// column j in shared memory at base: index i is row offset i, or N-1-i
// with rev; rows from cnt on take fill.
template <typename T, int N>
__device__ __forceinline__ void tall_get(const T* sm, int base, int C, int cnt, bool rev,
		typename OpMath<T>::type (&v)[N], typename OpMath<T>::type fill) {
#pragma unroll
	for (int i = 0; i < N; ++i) {
		const int ro = rev ? N - 1 - i : i;
		v[i] = ro < cnt ? to_op(sm[base + ro * C]) : fill;
	}
}

template <typename T, int N>
__device__ __forceinline__ void tall_put(T* sm, int base, int C, int cnt, bool rev,
		const typename OpMath<T>::type (&v)[N]) {
#pragma unroll
	for (int i = 0; i < N; ++i) {
		const int ro = rev ? N - 1 - i : i;
		if (ro < cnt) sm[base + ro * C] = from_op<T>(v[i]);
	}
}

// TallTileMap::of composes a column's wc warp maps m(i), upstream first;
// logcumsumexp (Span) composes only u and takes the factor from y before
// the tile and y at its last element, both in scan order (TileMap's rule).
template <typename T, typename Op> struct TallTileMap {
	template <typename M, typename F> static __device__ __forceinline__ Aff<M> of(int n, F m, M, M) {
		Aff<M> tot = aff_identity<M>();
		for (int i = 0; i < n; ++i) tot = compose<Op>(m(i), tot);
		return tot;
	}
};
template <typename T> struct TallTileMap<T, LogcumsumexpBw> {
	template <typename M, typename F> static __device__ __forceinline__ Aff<M> of(int n, F m, M yfrom, M yto) {
		M u = M(0);
		for (int i = 0; i < n; ++i) u = apply<LogcumsumexpBw>(m(i), u);
		return Aff<M>{lse_tile_factor<Narrow<T>::value>(yfrom, yto), u};
	}
};

// tall_fill (SCAN_FWD_TILES): tile row q of batch a sets its look-back
// slots (and with double opmath its flags) to SCAN_NONE bytes, the first
// block the ticket counter, as scan_fill_slots does for the row mapping.
template <typename M>
__device__ __forceinline__ void tall_fill(unsigned char* __restrict__ ws, const ScanLayout& L, i64 q, i64 a, int C,
		int rounds) {
	if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<unsigned long long*>(ws) = ~0ULL;
	for (int j = threadIdx.x; j < C; j += SCAN_THREADS) {
		const i64 e = q * L.nslices + a * C + j;
		if (sizeof(M) == 4) {
			reinterpret_cast<unsigned long long*>(ws + L.ws_agg)[e] = ~0ULL;
			reinterpret_cast<unsigned*>(ws + L.ws_incl)[e] = SCAN_NONE;
		} else {
			reinterpret_cast<uint4*>(ws + L.ws_agg)[e] = make_uint4(SCAN_NONE, SCAN_NONE, SCAN_NONE, SCAN_NONE);
			reinterpret_cast<unsigned long long*>(ws + L.ws_incl)[e] = ~0ULL;
		}
	}
	if (sizeof(M) == 8)
		for (int r = threadIdx.x; r < rounds; r += SCAN_THREADS)
			reinterpret_cast<unsigned*>(ws + L.ws_flags)[q * L.units + a * rounds + r] = SCAN_NONE;
}

// tall_tile names the block's tile: tile row q (memory order) of batch a
// of A, and c, its place in carry order. The forward-state pass and an
// unchunked launch take a block per tile and batch; a chunked main launch
// takes tiles in carry order from the ticket counter (t = c * A + a),
// after the fill blocks where the op has no forward-state passes (ready:
// every fill block was done when the ticket was taken). Returns false
// for a fill block, which has nothing else to do. With Carry (the tallrow
// kernel), the carry passes' launches take their tiles by index
// (scan_carry_tile).
template <typename Op, bool Carry = false>
__device__ __forceinline__ bool tall_tile(unsigned char* ws, const ScanLayout& L, i64 A, i64& c, i64& q, i64& a,
		bool& ready) {
	if (L.phase == SCAN_FWD_TILES || L.chunks <= 1) {
		q = (i64)blockIdx.x / A;
		a = (i64)blockIdx.x - q * A;
		return true;
	}
	if (Carry && L.phase != SCAN_MAIN) {
		scan_carry_tile(L, A, c, q, a);
		return true;
	}
	i64 t;
	if (Op::fwd) {
		// The forward-state passes filled the slots and reset the
		// counter: no fill blocks.
		t = scan_ticket(ws);
	} else {
		t = scan_take(ws, L.ws_fill, L.fillers);
		if (t < 0) return false;
		ready = (t & SCAN_READY) != 0;
		t &= ~SCAN_READY;
	}
	c = t / A;
	a = t - c * A;
	q = L.reverse != 0 ? c : L.chunks - 1 - c;
	return true;
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_tall(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = ScanItems<T, Op>::tall;
	typedef ScanRun<T, Op, N, true> Run;
	extern __shared__ __align__(16) unsigned char tall_sm[];
	__shared__ Aff<M> s_aff[SCAN_TALL_ROUNDS][SCAN_WARPS];
	__shared__ M s_fwd[SCAN_WARPS];
	__shared__ M s_vin[SCAN_TALL_ROUNDS][SCAN_WARPS];
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	if (L.phase == SCAN_FWD_PREFIX) {
		scan_fwd_prefix<T, Op>(ws, L);
		return;
	}
	if (L.phase == SCAN_FWD_TILES && !Op::fwd) return;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const int wc = L.split;  // warps per column
	const int groups = SCAN_WARPS / wc;  // columns served at once
	const int grp = warp / wc, wg = warp - grp * wc;
	const int items = L.items;
	const int C = (int)L.sdim[L.srank - 1];
	const i64 A = L.srank > 1 ? L.sdim[0] : 1;
	const int rounds = (C + groups - 1) / groups;
	const bool chunked = L.chunks > 1;

	i64 c = 0, q, a;
	bool ready = true;
	if (!tall_tile<Op>(ws, L, A, c, q, a, ready)) return;
	const i64 rows = (i64)wc * 32 * items;
	const i64 tk0 = q * rows;
	const i64 tk1 = tk0 + rows < L.n ? tk0 + rows : L.n;
	const int S = items * C, P = L.pitch, R = wc * 32;
	const int E = (int)(tk1 - tk0) * C;
	const bool vec = L.vec != 0;
	T* const sm_g = reinterpret_cast<T*>(tall_sm);
	T* const sm_x = sm_g + R * P;
	T* const sm_y = sm_x + (Op::needs_x ? R * P : 0);
	// off(t): the element offset of the tile's first element in operand
	// t (dy, x, y, dx); column j adds j. Computed where used rather than
	// kept live through the scans (registers).
	const auto off = [&](int t) -> i64 { return (L.srank > 1 ? a * L.sstride[t][0] : 0) + tk0 * L.astride[t]; };
	const int run = wg * 32 + lane;
	const i64 k0 = tk0 + (i64)run * items;
	const int rbase = run * P;
	M* const fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);

	if (L.phase == SCAN_FWD_TILES) {
		// Each column's forward aggregate over the tile.
		tall_fill<M>(ws, L, q, a, C, rounds);
		tall_load<T>(x + off(1), sm_x, E, S, P, vec);
		__syncthreads();
		for (int rd = 0; rd < rounds; ++rd) {
			const int j = rd * groups + grp;
			int cnt = 0;
			if (j < C && k0 < tk1) cnt = (int)(tk1 - k0 < items ? tk1 - k0 : items);
			Run r;
			r.init(k0, cnt, rev);
			tall_get<T, N>(sm_x, rbase + j, C, cnt, rev, r.xv, Op::template x_fill<M>());
			M wt;
			warp_fwd_scan<Op>(r.fwd_total(), lane, rev, wt);
			if (lane == 0) s_fwd[warp] = wt;
			__syncthreads();
			if (wg == 0 && lane == 0 && j < C) {
				M f = Op::template fwd_identity<M>();
				for (int i = 0; i < wc; ++i) f = Op::fwd_combine(f, s_fwd[grp * wc + (rev ? wc - 1 - i : i)]);
				fwdbuf[q * L.nslices + a * C + j] = f;
			}
			__syncthreads();
		}
		return;
	}

	tall_load<T>(dy + off(0), sm_g, E, S, P, vec);
	if (Op::needs_x) tall_load<T>(x + off(1), sm_x, E, S, P, vec);
	if (Op::needs_y) tall_load<T>(y + off(2), sm_y, E, S, P, vec);
	__syncthreads();
	// chain(rd): lanes gl*G .. gl*G+G-1 of the calling warp chain column
	// rd*groups + gl: the tile's map from its warps', then the look-back,
	// which probes G tiles a step: 32/groups, but 8 for two columns a
	// round (half the warp idle), where 16 spills for sm_70.
	const auto chain = [&](int rd) {
		const int G = groups == 8 ? 4 : groups == 1 ? 32 : 8;
		const int gl = lane / G;
		const int jg = rd * groups + gl;
		const bool has = gl < groups && jg < C;
		Aff<M> tot = aff_identity<M>();
		if (has) {
			M yfrom = M(0), yto = M(0);
			if (Span<Op>::on) {
				const int le = rev ? 0 : (int)(tk1 - tk0) - 1, re = le / items;
				yto = to_op(sm_y[re * P + (le - re * items) * C + jg]);
				const i64 kf = rev ? tk1 : tk0 - 1;
				if (kf >= 0 && kf < L.n) yfrom = to_op(scan_ld(y + off(2) + (kf - tk0) * L.astride[2] + jg));
			}
			tot = TallTileMap<T, Op>::template of<M>(
					wc, [&](int i) { return s_aff[rd][gl * wc + (rev ? i : wc - 1 - i)]; }, yfrom, yto);
		}
		scan_ws_wait(ws, L, ready);
		const i64 unit = a * rounds + rd, s = has ? a * C + jg : 0;
		const M vin = G == 4   ? lookback<Op, M, 4>(ws, L, c, unit, s, has, tot)
		              : G == 8 ? lookback<Op, M, 8>(ws, L, c, unit, s, has, tot)
		                       : lookback<Op, M, 32>(ws, L, c, unit, s, has, tot);
		if ((lane & (G - 1)) == 0 && gl < groups) s_vin[rd][gl] = vin;
	};
	// With several rounds, an op without a forward state in float opmath
	// takes two passes over them: the first gives every round's warp maps,
	// then warp rd chains round rd's columns, all rounds' look-backs at
	// once, and the second pass scans each run again (the same values,
	// from shared memory) and finishes it. Otherwise each round chains in
	// its only pass: a second pass of cumprod, cummax or cummin would
	// combine the forward state again, which costs more than the
	// look-backs overlap, and in double opmath the two passes spill.
	const bool split = !Op::fwd && sizeof(M) == 4 && chunked && rounds > 1;
	for (int pass = split ? 0 : 1; pass < 2; ++pass) {
		for (int rd = 0; rd < rounds; ++rd) {
			const int j = rd * groups + grp;
			const bool col = j < C;
			int cnt = 0;
			if (col && k0 < tk1) cnt = (int)(tk1 - k0 < items ? tk1 - k0 : items);
			Run r;
			r.init(k0, cnt, rev);
			const int base = rbase + (col ? j : 0);
			tall_get<T, N>(sm_g, base, C, cnt, rev, r.g, M(0));
			if (Op::needs_x) tall_get<T, N>(sm_x, base, C, cnt, rev, r.xv, Op::template x_fill<M>());
			if (Op::needs_y) {
				// y before the run in scan order: in the tile's image, or (the
				// run at the tile's end) in y; 0 at the slice's start (1 for a
				// direct op, its c there), as ScanRun::load leaves it.
				const i64 kb = rev ? k0 + cnt : k0 - 1;
				M yb = Direct<Op>::on && cnt > 0 ? M(1) : M(0);
				if (cnt > 0 && kb >= 0 && kb < L.n) {
					if (kb >= tk0 && kb < tk1) {
						const int lr = (int)(kb - tk0), rr = lr / items;
						yb = to_op(sm_y[rr * P + (lr - rr * items) * C + j]);
					} else {
						yb = to_op(scan_ld(y + off(2) + (kb - tk0) * L.astride[2] + j));
					}
				}
				r.yb = yb;
				tall_get<T, N>(sm_y, base, C, cnt, rev, r.yv, yb);
			}
	#pragma unroll
			for (int i = 0; i < N; ++i) r.g[i] = Op::grad(r.g[i]);
			M f = Op::template fwd_identity<M>();
			const bool fast = r.direct_ok();
			if (Op::fwd) {
				// The state before the run: the tile's prefix, the column's
				// warps before this one and the lanes before it, in scan order.
				M wt;
				const M ex = warp_fwd_scan<Op>(r.fwd_total(), lane, rev, wt);
				if (lane == 0) s_fwd[warp] = wt;
				__syncthreads();
				if (chunked && col) f = __ldcg(&fwdbuf[q * L.nslices + a * C + j]);
				if (rev) {
					for (int w = wc - 1; w > wg; --w) f = Op::fwd_combine(f, s_fwd[grp * wc + w]);
				} else {
					for (int w = 0; w < wg; ++w) f = Op::fwd_combine(f, s_fwd[grp * wc + w]);
				}
				f = Op::fwd_combine(f, ex);
			}
			if (Op::mask_factors) r.quiet = __all_sync(0xffffffffu, cnt == 0 || !MaskTake<Op>::take(f, r.fwd_total()));
			const bool plain = r.setup(fast, f, L);
			Aff<M> wt;
			const Aff<M> ex = warp_carry_scan<Op>(r.aggregate(plain), lane, rev, wt);
			if (lane == 0) s_aff[rd][warp] = wt;
			__syncthreads();
			if (pass == 0) continue;
			if (chunked && !split && warp == 0) chain(rd);
			__syncthreads();
			M v = chunked ? s_vin[rd][grp] : M(0);
			// V after this warp: the column's warps upstream of it applied,
			// farthest first.
			if (rev) {
				for (int w = 0; w < wg; ++w) v = apply<Op>(s_aff[rd][grp * wc + w], v);
			} else {
				for (int w = wc - 1; w > wg; --w) v = apply<Op>(s_aff[rd][grp * wc + w], v);
			}
			r.finish(apply<Op>(ex, v), plain);
			tall_put<T, N>(sm_g, base, C, cnt, rev, r.g);
			__syncthreads();
		}
		if (pass == 0) {
			if (warp < rounds) chain(warp);
			__syncthreads();
		}
	}
	tall_store<T>(dx + off(3), sm_g, E, S, P, vec);
}
