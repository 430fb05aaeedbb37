#pragma once
// The forward state across tiles: the row mapping's two passes
// (scan_fill_slots, scan_fwd_prefix) and the col mapping's cumprod state
// in the main launch (scan_fwd_unit, scan_fwd_wait).
#include "scan_lookback.cuh"

// fwd_prefix_slice turns the forward aggregates of slice s's tiles in
// fwdbuf into exclusive prefixes in scan order, loading eight at a time.
template <typename Op, typename M>
__device__ __forceinline__ void fwd_prefix_slice(M* __restrict__ fwdbuf, const ScanLayout& L, i64 s) {
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

// scan_fwd_prefix_wide: block s turns slice s's tile aggregates into
// exclusive prefixes. Thread t takes a contiguous range of tiles in scan
// order: it combines its range, the block scans the threads' totals, and
// the thread rewrites its range with the prefixes. The order of the
// combines is fixed by the tile count alone, so the result is the same on
// every run.
template <typename Op, typename M>
__device__ __forceinline__ void scan_fwd_prefix_wide(M* __restrict__ fwdbuf, const ScanLayout& L, i64 s, bool rev) {
	__shared__ M s_tot[SCAN_WARPS];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const i64 per = (L.chunks + SCAN_THREADS - 1) / SCAN_THREADS;
	const i64 i0 = (i64)tid * per;
	const i64 i1 = i0 + per < L.chunks ? i0 + per : L.chunks;
	M f = Op::template fwd_identity<M>();
	for (i64 i = i0; i < i1; ++i) f = Op::fwd_combine(f, fwdbuf[(rev ? L.chunks - 1 - i : i) * L.nslices + s]);
	M wt;
	M p = warp_fwd_scan<Op>(f, lane, false, wt);
	if (lane == 0) s_tot[warp] = wt;
	__syncthreads();
	M b = Op::template fwd_identity<M>();
	for (int w = 0; w < warp; ++w) b = Op::fwd_combine(b, s_tot[w]);
	p = Op::fwd_combine(b, p);
	for (i64 i = i0; i < i1; ++i) {
		M* at = &fwdbuf[(rev ? L.chunks - 1 - i : i) * L.nslices + s];
		const M e = *at;
		*at = p;
		p = Op::fwd_combine(p, e);
	}
}

// scan_fwd_prefix (phase 2, row mapping) turns the forward aggregates of
// each slice's tiles into exclusive prefixes in scan order. Below
// SCAN_PREFIX_WIDE tiles a slice one thread serves a slice
// (fwd_prefix_slice); from there on one block serves a slice
// (scan_fwd_prefix_wide), since one thread walking thousands of tiles
// leaves the GPU idle for the whole walk. (A warp form of the narrow case
// in the same kernel gives the cumprod row kernels more registers and
// slows them down.)
template <typename T, typename Op>
__device__ __forceinline__ void scan_fwd_prefix(unsigned char* __restrict__ ws, const ScanLayout& L) {
	typedef typename OpMath<T>::type M;
	if (!Op::fwd) return;
	M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);
	if (L.chunks >= SCAN_PREFIX_WIDE) {
		scan_fwd_prefix_wide<Op, M>(fwdbuf, L, blockIdx.x, L.reverse != 0);
		return;
	}
	const i64 s = (i64)blockIdx.x * SCAN_THREADS + threadIdx.x;
	if (s >= L.nslices) return;
	fwd_prefix_slice<Op>(fwdbuf, L, s);
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

// tile_y_before (scan_fwd_unit): y of the element before tile [tk0, tk1)
// in scan order, 1 where the tile starts the slice (y_{-1} = 1).
template <typename T, typename Op>
__device__ __forceinline__ typename OpMath<T>::type tile_y_before(const T* __restrict__ y, const ScanLayout& L,
		const i64 (&off)[4], i64 tk0, i64 tk1) {
	typedef typename OpMath<T>::type M;
	const bool rev = L.reverse != 0;
	if (rev ? tk1 >= L.n : tk0 == 0) return M(1);
	return tile_y_end<T, Op>(y, L, off, rev ? tk1 : tk0 - 1);
}

// tile_fwd_x (scan_fwd_unit): the forward state of tile [tk0, tk1) from
// its x in scan order (from tk0 on, or back from tk1 - 1), 8 loads at a
// time.
template <typename T, typename Op>
__device__ __forceinline__ typename OpMath<T>::type tile_fwd_x(const T* __restrict__ x, const ScanLayout& L,
		const i64 (&off)[4], i64 tk0, i64 tk1) {
	typedef typename OpMath<T>::type M;
	const bool rev = L.reverse != 0;
	const i64 len = tk1 - tk0;
	const i64 st = rev ? -L.astride[1] : L.astride[1];
	const T* p = x + off[1] + (rev ? tk1 - 1 : tk0) * L.astride[1];
	M f = Op::template fwd_identity<M>();
	for (i64 j = 0; j < len; j += 8) {
		M v[8];
#pragma unroll
		for (int i = 0; i < 8; ++i) v[i] = j + i < len ? to_op(scan_ld(p + (j + i) * st)) : Op::template x_fill<M>();
		f = Op::fwd_combine(f, Op::template fold<M, 8>(v));
	}
	return f;
}

// scan_fwd_unit and scan_fwd_wait (cumprod, col mapping, chunked): the
// forward state before each tile, computed in the main launch for the
// units where some slice ends in a y that is NaN or 0. The state changes
// dx_k only where y of k or of the element before k is NaN or 0: a y that
// is a number other than 0 says no zero came before (a zero makes every
// later y 0 or NaN). A 0 y follows a zero of x or an underflow of y,
// which PyTorch tells apart (CumprodBw): after the first zero z1 dx is 0,
// after an underflow before z1 it is 0 or NaN by the dy up to z1. NaN and
// 0 y stay to the slice's end, so the unit's first tile in carry order
// (the last in scan order; every other tile of the unit waits on it
// through the look-back) reads y at the end of its 32 slices before
// anything else. Where one is NaN or 0 it writes the state before every
// tile of the unit's slices: each warp takes tiles warp, warp + 8, ...,
// and reads a tile's x for its state (tile_fwd_x) where the tile can
// matter:
//   - a slice that ends in NaN: where y at the tile's end (tile_y_end) is
//     0 or NaN (tile_needs_x), since the states after a zero then matter
//     (an x that is ±inf or NaN between the first two zeros);
//   - a slice that ends in 0 (no NaN y, so every x is finite and the
//     state is "a zero came" or not): first only at the tile where y
//     becomes 0, whose y before is not 0 (y stays 0 once 0: exactly one
//     tile per slice). Where that tile holds no zero (y underflowed,
//     s_uf), a second round reads the tiles after it (y before them 0),
//     which may hold z1;
//   - other slices: none (the state is "no zero came" before every tile).
// Then warp 0 turns each slice's tile states into exclusive prefixes. The
// unit flag (SCAN_NONE before the launch) then says 2, or 1 where no slice
// ended in NaN or 0. A tile whose run sees a NaN y, or whose y before is
// 0, waits for the flag (the first tile waits on nobody: every waiting
// tile of the unit has a later ticket, so the first is running or done)
// and reads its state (scan_fwd_wait); every tile of the unit that reads
// it reads the exact state for each of its 32 slices. Without the flag at
// 2 no y before a tile is 0 (flag 1), and a tile takes the state as "no
// zero came"; the main kernel's fwd_after_zero for a 0 y before a tile
// there is only reached by a y that is not cumprod's. Units whose slices
// end in numbers other than 0 never ask, and no pass runs before the main
// launch. No tile of the unit has stored dx yet while the first tile reads
// x (dx may be written over x, in place).
template <typename T, typename Op>
__device__ __forceinline__ void scan_fwd_unit(const T* __restrict__ x, const T* __restrict__ y,
		unsigned char* __restrict__ ws, const ScanLayout& L, i64 unit, i64 s, bool has, bool& ready) {
	typedef typename OpMath<T>::type M;
	// Per slice of the unit: s_z, it ends in 0 (not NaN); s_uf, its tile
	// where y becomes 0 holds no zero (an underflow).
	__shared__ bool s_z[32], s_uf[32];
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const bool rev = L.reverse != 0;
	// The slice offsets again rather than the caller's: taking them as a
	// parameter changes how ptxas allocates the f32 col kernel's registers,
	// and cumprod f32 along axis 0 runs slower.
	i64 off[4];
	scan_slice_offsets(L, has ? s : 0, off);
	M ye = M(1);
	if (warp == 0) {
		if (has) ye = tile_y_end<T, Op>(y, L, off, rev ? 0 : L.n - 1);
		s_z[lane] = ye == M(0);
		s_uf[lane] = false;
	}
	const bool need = __syncthreads_or(bc_isnan(ye) || ye == M(0));
	if (need) {
		M* fwdbuf = reinterpret_cast<M*>(ws + L.ws_fwd);
		const i64 tile = (i64)L.split * L.items;
		const bool z = s_z[lane];
		bool uf = false;  // this thread found an underflow
		for (i64 qq = warp; has && qq < L.chunks; qq += SCAN_WARPS) {
			const i64 tk0 = qq * tile, tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
			M f = Op::template fwd_identity<M>();
			bool rd = tile_needs_x<Op>(tile_y_end<T, Op>(y, L, off, rev ? tk0 : tk1 - 1));
			if (rd && z) rd = tile_y_before<T, Op>(y, L, off, tk0, tk1) != M(0);
			if (rd) f = tile_fwd_x<T, Op>(x, L, off, tk0, tk1);
			// No zero in the tile where y becomes 0: an underflow.
			if (rd && z && Op::fwd_combine(f, Op::template fwd_after_zero<M>()) != f) {
				s_uf[lane] = true;
				uf = true;
			}
			fwdbuf[qq * L.nslices + s] = f;
		}
		if (__syncthreads_or(uf)) {
			// After an underflow: the tiles whose y before is 0.
			for (i64 qq = warp; has && s_uf[lane] && qq < L.chunks; qq += SCAN_WARPS) {
				const i64 tk0 = qq * tile, tk1 = tk0 + tile < L.n ? tk0 + tile : L.n;
				if (tile_y_before<T, Op>(y, L, off, tk0, tk1) == M(0))
					fwdbuf[qq * L.nslices + s] = tile_fwd_x<T, Op>(x, L, off, tk0, tk1);
			}
			__syncthreads();
		}
		if (warp == 0 && has) fwd_prefix_slice<Op>(fwdbuf, L, s);
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
		i64 s, bool has, bool& ready, M none) {
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
	if (s_state != 2u || !has) return none;
	return ld_cg(reinterpret_cast<const M*>(ws + L.ws_fwd) + q * L.nslices + s);
}
