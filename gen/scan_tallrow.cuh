#pragma once
// The tallrow form of the tall mapping: scan_backward_tallrow, a scan
// along an outer axis over SCAN_TALLROW_K contiguous columns, e.g.
// [4194304, 4] along axis 0, taken as one long row whose element is the
// K-wide row vector: the row mapping's tile with K independent lanes per
// element.
//
// A tile is SCAN_THREADS * R consecutive rows (rows of all K columns, one
// contiguous chunk of the operand); thread t owns rows t*R .. t*R+R-1, R*K
// consecutive elements that it moves in 16-byte packs (tallrow_fetch,
// the row mapping's store_run) straight into registers: no shared memory image,
// every load of the run in flight at once. In registers the run splits
// into K ScanRuns (scan_run.cuh) of R elements, one per column, so the op
// math, the forward state, the run maps and dx are the row mapping's own.
// Each column's runs combine across the block with the warp scans and the
// warps' maps in shared memory (the 8 warps of a block serve all K
// columns at once, where the tall kernel serves them in rounds), and the
// tiles of a column chain through the look-back: warp 0 chains all K
// columns at once, 32/K lanes a column, tiles taken in carry order from
// the ticket counter (tall_tile: t = c * A + a).
//
// The geometry, workspace and forward-state passes are the tall
// mapping's (ops/scan_tallrow.go): slices s = a*K + j, a unit per batch
// (one round), SCAN_FWD_TILES a block per tile and batch (tall_fill and
// each column's forward aggregate), SCAN_FWD_PREFIX scan_fwd_prefix.
#include "scan_tall.cuh"

// TallRowItems: R rows a run, so that a thread holds the row mapping's
// ScanItems::row elements (R*K); ops/scan_tallrow.go's tallRowItems
// mirrors it.
template <typename T, typename Op> struct TallRowItems {
	static constexpr int K = SCAN_TALLROW_K;
	static constexpr int R = ScanItems<T, Op>::row / K;
};

// tallrow_fetch loads the thread's cnt rows (cnt*K elements from q) as
// stored, 16-byte packs where the run is full and aligned (vec).
template <typename T, int E>
__device__ __forceinline__ void tallrow_fetch(const T* __restrict__ q, int cnt, bool vec, T (&r)[E]) {
	constexpr int P = Pack<T>::N;
	if (vec && cnt * SCAN_TALLROW_K == E && (reinterpret_cast<unsigned long long>(q) & 15) == 0) {
#pragma unroll
		for (int i = 0; i < E / P; ++i) {
			const Pack<T> pk = load_pack(q + i * P);
#pragma unroll
			for (int e = 0; e < P; ++e) r[i * P + e] = pk.v[e];
		}
	} else {
		fetch_steps<T, E>(q, 1, cnt * SCAN_TALLROW_K, false, r);
	}
}

// tallrow_split fills v (scan order, as ScanRun's loads leave it) with
// column j of the fetched rows: index i is row i, or R-1-i with rev; rows
// from cnt on take fill. Two straight loops: rev is uniform, and a
// select would index the registers at run time.
template <typename T, int R>
__device__ __forceinline__ void tallrow_split(const T (&r)[R * SCAN_TALLROW_K], int j, int cnt, bool rev,
		typename OpMath<T>::type (&v)[R], typename OpMath<T>::type fill) {
	if (rev) {
#pragma unroll
		for (int i = 0; i < R; ++i) v[R - 1 - i] = i < cnt ? to_op(r[i * SCAN_TALLROW_K + j]) : fill;
	} else {
#pragma unroll
		for (int i = 0; i < R; ++i) v[i] = i < cnt ? to_op(r[i * SCAN_TALLROW_K + j]) : fill;
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void scan_backward_tallrow(const T* __restrict__ dy, const T* __restrict__ x,
		const T* __restrict__ y, T* __restrict__ dx, void* __restrict__ wsp, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int K = SCAN_TALLROW_K, R = TallRowItems<T, Op>::R, E = R * K;
	constexpr int G = 32 / K;  // look-back lanes a column
	typedef ScanRun<T, Op, R, true> Run;
	__shared__ Aff<M> s_aff[K][SCAN_WARPS];
	__shared__ M s_fwd[K][SCAN_WARPS];
	__shared__ M s_vin[K];
	unsigned char* ws = static_cast<unsigned char*>(wsp);
	if (L.phase == SCAN_FWD_PREFIX) {
		scan_fwd_prefix<T, Op>(ws, L);
		return;
	}
	if (L.phase == SCAN_CARRY_PREFIX) {
		scan_carry_prefix<T, Op>(ws, L);
		return;
	}
	if (L.phase == SCAN_FWD_TILES && !Op::fwd) return;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const bool rev = L.reverse != 0;
	const i64 A = L.srank > 1 ? L.sdim[0] : 1;
	const bool chunked = L.chunks > 1;
	i64 c = 0, q, a;
	bool ready = true;
	if (!tall_tile<Op, true>(ws, L, A, c, q, a, ready)) return;
	const i64 rows = (i64)SCAN_THREADS * R;
	const i64 tk0 = q * rows;
	const i64 tk1 = tk0 + rows < L.n ? tk0 + rows : L.n;
	const i64 k0 = tk0 + (i64)tid * R;
	const int cnt = k0 < tk1 ? (int)(tk1 - k0 < R ? tk1 - k0 : R) : 0;
	const bool vec = L.vec != 0;
	// bat(t): the offset of batch a in operand t (dy, x, y, dx); row k of
	// column j is at bat(t) + k*K + j (the axis stride is K).
	const auto bat = [&](int t) -> i64 { return L.srank > 1 ? a * L.sstride[t][0] : 0; };
	M* const fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);
	Run r[K];
#pragma unroll
	for (int j = 0; j < K; ++j) r[j].init(k0, cnt, rev);

	if (L.phase == SCAN_FWD_TILES) {
		// Each column's forward aggregate over the tile.
		tall_fill<M>(ws, L, q, a, K, 1);
		T rx[E];
		tallrow_fetch<T, E>(x + bat(1) + k0 * K, cnt, vec, rx);
#pragma unroll
		for (int j = 0; j < K; ++j) {
			tallrow_split<T, R>(rx, j, cnt, rev, r[j].xv, Op::template x_fill<M>());
			M wt;
			warp_fwd_scan<Op>(r[j].fwd_total(), lane, rev, wt);
			if (lane == 0) s_fwd[j][warp] = wt;
		}
		__syncthreads();
		if (tid < K) {
			M f = Op::template fwd_identity<M>();
			for (int i = 0; i < SCAN_WARPS; ++i) f = Op::fwd_combine(f, s_fwd[tid][rev ? SCAN_WARPS - 1 - i : i]);
			fwdbuf[q * L.nslices + a * K + tid] = f;
		}
		return;
	}

	// The run of the tile SCAN_ROW_AHEAD later in carry order into L2, as
	// the row kernel asks for it (RowAhead; the axis stride is K).
	const i64 off[4] = {bat(0), bat(1), bat(2), bat(3)};
	if (RowAhead<Op>::fetch && !RowAhead<Op>::late && chunked && cnt > 0) row_ahead<Op, true>(dy, x, y, L, off, q, k0, rows);
	// Every load of the run first (y before it, then the operands), then
	// the conversions. y before the run in scan order is row kb of each
	// column, 0 at the slice's start (1 for a direct op, its c there), as
	// ScanRun::load leaves it.
	const i64 kb = rev ? k0 + cnt : k0 - 1;
	const bool hasb = Op::needs_y && cnt > 0 && kb >= 0 && kb < L.n;
	T rb[K];
#pragma unroll
	for (int j = 0; j < K; ++j) rb[j] = hasb ? scan_ld(y + bat(2) + kb * K + j) : scan_bits0<T>();
	T rg[E], rx[E], ry[E];
	tallrow_fetch<T, E>(dy + bat(0) + k0 * K, cnt, vec, rg);
	if (Op::needs_x) {
		if (carry_reads_x<Op>(L)) {
			tallrow_fetch<T, E>(x + bat(1) + k0 * K, cnt, vec, rx);
		} else {
#pragma unroll
			for (int i = 0; i < E; ++i) rx[i] = scan_bits0<T>();
		}
	}
	if (Op::needs_y) tallrow_fetch<T, E>(y + bat(2) + k0 * K, cnt, vec, ry);
	if (RowAhead<Op>::fetch && RowAhead<Op>::late && chunked && cnt > 0) row_ahead<Op, true>(dy, x, y, L, off, q, k0, rows);
	bool fast[K];
#pragma unroll
	for (int j = 0; j < K; ++j) {
		Run& u = r[j];
		tallrow_split<T, R>(rg, j, cnt, rev, u.g, M(0));
		if (Op::needs_x) tallrow_split<T, R>(rx, j, cnt, rev, u.xv, Op::template x_fill<M>());
		if (Op::needs_y) {
			u.yb = hasb ? to_op(rb[j]) : Direct<Op>::on && cnt > 0 ? M(1) : M(0);
			tallrow_split<T, R>(ry, j, cnt, rev, u.yv, u.yb);
		}
#pragma unroll
		for (int i = 0; i < R; ++i) u.g[i] = Op::grad(u.g[i]);
		fast[j] = u.direct_ok();
	}
	// The forward state before each column's run: the tile's prefix, the
	// warps before this one and the lanes before it, in scan order.
	M f[K];
#pragma unroll
	for (int j = 0; j < K; ++j) f[j] = Op::template fwd_identity<M>();
	if (Op::fwd) {
		M ex[K];
#pragma unroll
		for (int j = 0; j < K; ++j) {
			M wt;
			ex[j] = warp_fwd_scan<Op>(r[j].fwd_total(), lane, rev, wt);
			if (lane == 0) s_fwd[j][warp] = wt;
		}
		__syncthreads();
#pragma unroll
		for (int j = 0; j < K; ++j) {
			if (chunked) f[j] = __ldcg(&fwdbuf[q * L.nslices + a * K + j]);
			if (rev) {
				for (int w = SCAN_WARPS - 1; w > warp; --w) f[j] = Op::fwd_combine(f[j], s_fwd[j][w]);
			} else {
				for (int w = 0; w < warp; ++w) f[j] = Op::fwd_combine(f[j], s_fwd[j][w]);
			}
			f[j] = Op::fwd_combine(f[j], ex[j]);
		}
	}
	bool plain[K];
	Aff<M> ex[K];
#pragma unroll
	for (int j = 0; j < K; ++j) {
		if (Op::mask_factors)
			r[j].quiet = __all_sync(0xffffffffu, cnt == 0 || !MaskTake<Op>::take(f[j], r[j].fwd_total()));
		plain[j] = r[j].setup(fast[j], f[j], L);
		Aff<M> wt;
		ex[j] = warp_carry_scan<Op>(r[j].aggregate(plain[j]), lane, rev, wt);
		if (lane == 0) s_aff[j][warp] = wt;
	}
	__syncthreads();
	if (chunked && warp == 0) {
		// Lanes gl*G .. gl*G+G-1 chain column gl: the tile's map from its
		// warps' (upstream first), then the look-back. A Span op's factor
		// is that of y before the tile and y of its last row, in scan order.
		const int gl = lane / G;
		M yfrom = M(0), yto = M(0);
		if (Span<Op>::on) {
			const i64 le = rev ? tk0 : tk1 - 1, kf = rev ? tk1 : tk0 - 1;
			yto = to_op(scan_ld(y + bat(2) + le * K + gl));
			if (kf >= 0 && kf < L.n) yfrom = to_op(scan_ld(y + bat(2) + kf * K + gl));
		}
		const Aff<M> tot = TallTileMap<T, Op>::template of<M>(
				SCAN_WARPS, [&](int i) { return s_aff[gl][rev ? i : SCAN_WARPS - 1 - i]; }, yfrom, yto);
		const M vin = scan_carry<Op, M, G>(ws, L, c, a, a * K + gl, true, tot, ready);
		if ((lane & (G - 1)) == 0) s_vin[gl] = vin;
	}
	if (L.phase == SCAN_CARRY_MAPS) return;
	__syncthreads();
	M out[E];
#pragma unroll
	for (int j = 0; j < K; ++j) {
		// V after this warp: the warps upstream of it applied, farthest first.
		M v = chunked ? s_vin[j] : M(0);
		if (rev) {
			for (int w = 0; w < warp; ++w) v = apply<Op>(s_aff[j][w], v);
		} else {
			for (int w = SCAN_WARPS - 1; w > warp; --w) v = apply<Op>(s_aff[j][w], v);
		}
		r[j].finish(apply<Op>(ex[j], v), plain[j]);
		// Back to memory order: row i of column j.
		if (rev) {
#pragma unroll
			for (int i = 0; i < R; ++i) out[i * K + j] = r[j].g[R - 1 - i];
		} else {
#pragma unroll
			for (int i = 0; i < R; ++i) out[i * K + j] = r[j].g[i];
		}
	}
	store_run<T, E>(dx, bat(3), 1, k0 * K, cnt * K, vec, out);
}
