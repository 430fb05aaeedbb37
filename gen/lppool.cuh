// LP pool 1d/2d backward (torch.nn.functional.lp_pool1d/lp_pool2d): given
// the saved input x [N, C, H, W], the saved output y [N, C, Ho, Wo] and dy,
// write dx [N, C, H, W]. A 1d pool is the 2d pool with H = 1, kh = sh = 1.
// Semantics are PyTorch's autograd through its composite forward
// (docs/semantics.md, section 5): no padding; window w's in-bounds count c_w
// divides (ceil-mode partial windows are scaled by K/c_w, K = kh*kw);
//
//   coef_w = y_w == 0 ? 0 : dy_w * (K/c_w) * y_w^(1-p)
//   dx_i   = x_i^(p-1) * Σ_{w∋i} coef_w
//
// The select discards a NaN or inf dy of a zero window (PyTorch's relu
// mask). A NaN window (y_w NaN) gives coef_w*0: PyTorch's sign(NaN) is 0,
// so for p == 1 (coef_w finite) it contributes 0 unless dy_w is NaN or
// inf, and NaN for any other p. For p < 1 a window whose y_w overflowed to
// +inf takes y_w^(1-p) as q_w^(1/p-1) of its pooled sum
// q_w = (K/c_w) Σ_{i∈w} x_i^p, recomputed from x (PyTorch's backward works
// from q_w, which did not overflow): a rare path, taken after phase 1's
// loop. The window sum comes before the x factor as in avg_pool's
// backward, so a cell in no window gets 0*x^(p-1) (0 unless x^(p-1) is NaN
// or inf). Negative x with a non-integer p gives NaN (x^(p-1) is NaN).
//
// Gather formulation: each cell sums the windows that contain it
// (oh*sh <= i < oh*sh + kh, likewise along W), so dx is written exactly once
// per cell, deterministically, with no atomics and no zeroing by the
// caller. A block owns a tile: tr input rows (consecutive in N*C*H order)
// by a segment of tu work units along W, a unit being a 16-byte pack of x
// and dx (lppool_pack) or one cell (lppool_cell, lppool_wide; any strides);
// a thread takes R consecutive rows of its unit (R = 4 for p == 1, 2 for
// the others, in lppool_pack; else 1). A prologue records once per tile
// each row's pointers and window rows, and each cell's window columns.
// Phase 1: the tu threads of a thread row compute, for every window column
// ow the segment touches, s[ow] = Σ over the window rows oh holding each
// input row of coef(oh, ow), consecutive threads on consecutive ow (y and
// dy read coalesced), and keep s in shared memory; a coefficient is
// computed once for the R rows of a thread, which share most window rows.
// Phase 2: each thread sums s over the window columns holding each of its
// cells. A coefficient thus costs one divide or pow per R input rows of its
// window, not one per cell. lppool_wide takes the window columns in passes
// when a tile row's share of shared memory cannot hold them all. Row and
// tile indices are split with multiply-high division (bc_div, lp_div32),
// never a hardware divide.
#pragma once
#include "lppool_util.cuh"

// lp_phase1_pooled adds to s[ow - cb] (ADD), or writes there (!ADD), for
// the window columns of the thread in [cb, ce] and each of its nrow input
// rows, the sum of the coefficients of the windows with y = +inf, which
// lp_phase1 leaves out (p < 1: lp_pooled_coef), in increasing oh. It runs
// only where phase 1 met such a window, after phase 1's loop, so that the
// pooled sum's registers are not live across that loop; a window shared by
// two rows is recomputed.
template <typename T, int V, int R, bool ADD>
__device__ __forceinline__ void lp_phase1_pooled(const LpPoolLayout& L, const LpRow* rw, int nrow, int cb, int ce,
		int u, LpVec<typename OpMath<T>::type, R>* s, double p) {
	typedef typename OpMath<T>::type M;
	const i64 yw = V > 1 ? 1 : L.stride[1][3], gw = V > 1 ? 1 : L.stride[2][3];
#pragma unroll 1
	for (int ow = cb + u; ow <= ce; ow += L.tu) {
#pragma unroll 1
		for (int e = 0; e < nrow; ++e) {
			const LpRow& row = rw[e];
			M acc = ADD ? s[ow - cb].v[e] : M(0);
#pragma unroll 1
			for (int oh = row.oh_lo; oh <= row.oh_hi; ++oh) {
				const T* yr = static_cast<const T*>(row.y) + (oh - row.oh_lo) * L.stride[1][2];
				if (!lp_posinf(lp_load(yr + ow * yw))) continue;
				const T* gr = static_cast<const T*>(row.dy) + (oh - row.oh_lo) * L.stride[2][2];
				M f_in, f_end;
				lp_factors(L, oh == L.Ho - 1, f_in, f_end);
				acc += lp_pooled_coef<T>(L, row, oh, ow, lp_load(gr + ow * gw), ow == L.Wo - 1 ? f_end : f_in, p);
			}
			s[ow - cb].v[e] = acc;
		}
	}
}

// lp_phase1 fills s[ow - cb] for the window columns [cb, ce] of a pass
// with, for each of the R input rows of a thread row (the first nrow
// valid), Σ over the window rows holding it of coef(oh, ow), from +0 in
// increasing oh. Consecutive rows of one plane lie in overlapping,
// monotone ranges of window rows, so a run of them (bit e of brk set where
// row e starts a run: it is row 0 of a plane, or e == 0) walks the union
// of its rows' ranges once, each coefficient computed once and added to
// the rows that it holds. A thread takes B columns, tu apart, at a time,
// each window row's y and dy loads issued before any arithmetic. Columns
// past ce are clamped to ce (loaded, computed and dropped) rather than
// predicated. A zero window (y == 0) gives 0, PyTorch's relu select, which
// also discards a NaN or inf dy; for p < 1 (pm1 < 0) a window with y = +inf
// takes its coefficient from the pooled sum (Op::pooled, lp_pooled_coef).
// The row records rw stay in shared memory and are read where needed
// (fewer registers).
template <typename T, typename Op, int V, int B, int R>
__device__ __forceinline__ bool lp_phase1(const LpPoolLayout& L, const LpRow* rw, int nrow, unsigned brk, int cb,
		int ce, int u, LpVec<typename OpMath<T>::type, R>* s, typename OpMath<T>::type pm1) {
	typedef typename OpMath<T>::type M;
	// The pack variant has y and dy dense along W.
	const i64 yw = V > 1 ? 1 : L.stride[1][3], gw = V > 1 ? 1 : L.stride[2][3];
	const i64 ys = L.stride[1][2], gs = L.stride[2][2];
	bool pooled = false;
#pragma unroll 1
	for (int ow = cb + u; ow <= ce; ow += B * L.tu) {
		int oc[B];
		LpVec<M, R> acc[B];
#pragma unroll
		for (int k = 0; k < B; ++k) {
			oc[k] = min(ow + k * L.tu, ce);
#pragma unroll
			for (int e = 0; e < R; ++e) acc[k].v[e] = M(0);
		}
#pragma unroll 1
		for (int st = 0; st < nrow;) {
			// The run of rows [st, se).
			const unsigned rest = brk >> (st + 1);
			const int se = rest != 0 ? min(st + __ffs(rest), nrow) : nrow;
			int lo[R], hi[R];
#pragma unroll
			for (int e = 0; e < R; ++e) {
				const bool in = e >= st && e < se;
				lo[e] = in ? rw[e].oh_lo : 1;
				hi[e] = in ? rw[e].oh_hi : 0;
			}
			const T* yr = static_cast<const T*>(rw[st].y);
			const T* gr = static_cast<const T*>(rw[st].dy);
			const int end = rw[se - 1].oh_hi;
#pragma unroll 1
			for (int oh = rw[st].oh_lo; oh <= end; ++oh, yr += ys, gr += gs) {
				M f_in, f_end;
				lp_factors(L, oh == L.Ho - 1, f_in, f_end);
				M yv[B], gv[B];
#pragma unroll
				for (int k = 0; k < B; ++k) {
					// Hidden from the compiler, which would otherwise keep
					// 64-bit offsets in registers and add them in two
					// instructions.
					int o = oc[k];
					lp_opaque(o);
					yv[k] = lp_load(yr + o * yw);
					gv[k] = lp_load(gr + o * gw);
				}
				bool in[R];
#pragma unroll
				for (int e = 0; e < R; ++e) in[e] = oh >= lo[e] && oh <= hi[e];
#pragma unroll
				for (int k = 0; k < B; ++k) {
					M cf = Op::template coef<T>(gv[k], oc[k] == L.Wo - 1 ? f_end : f_in, yv[k], pm1);
					cf = yv[k] == M(0) ? M(0) : cf;
					if (Op::pooled) {
						const bool big = pm1 < M(0) && lp_posinf(yv[k]);
						pooled |= big;
						cf = big ? M(0) : cf;
					}
#pragma unroll
					for (int e = 0; e < R; ++e)
						if (in[e]) acc[k].v[e] += cf;
				}
			}
			st = se;
		}
#pragma unroll
		for (int k = 0; k < B; ++k)
			if (ow + k * L.tu <= ce) s[oc[k] - cb] = acc[k];
	}
	return pooled;
}

// lp_cell_entry is the phase-2 table entry of cell j: the byte offset in a
// tile row's s (slots of R values) of the first window column holding j
// (relative to ow0) in the low 16 bits, the number of window columns
// holding it in the high 16. A cell in no window points once at the zero
// slot (index nw_max).
template <typename M, int R>
__device__ __forceinline__ unsigned lp_cell_entry(const LpPoolLayout& L, int j, int ow0) {
	int lo, hi;
	lp_windows(L, j, j, lo, hi);
	if (j >= L.W || lo > hi) return (unsigned)(L.nw_max * R * sizeof(M)) | 1u << 16;
	return (unsigned)((lo - ow0) * R * sizeof(M)) | (unsigned)(hi - lo + 1) << 16;
}

// lp_phase2 sets acc, for the P input rows e0 .. e0+P-1 of a thread row
// (of R) and its cells j0 .. j0+V-1, to the sum of s over the window
// columns holding each cell, in increasing ow: each cell's table entry
// gives its first column and count; the first term is unconditional (a
// cell in no window reads the zero slot), the others are predicated, up to
// T = ceil(kw/sw) in all. The sum starts at the first term rather than
// +0: s is never -0 (phase 1 sums from +0), so the two agree bit for bit.
template <typename M, int V, int R, int P>
__device__ __forceinline__ void lp_phase2(const LpPoolLayout& L, const unsigned* tab, const LpVec<M, R>* s, int e0,
		M (&acc)[P][V]) {
	unsigned ent[V];
	if (V % 4 == 0) {
#pragma unroll
		for (int e = 0; e < V; e += 4) {
			const uint4 q = *reinterpret_cast<const uint4*>(tab + e);
			ent[e] = q.x;
			ent[e + 1] = q.y;
			ent[e + 2] = q.z;
			ent[e + 3] = q.w;
		}
	} else if (V == 2) {
		const uint2 q = *reinterpret_cast<const uint2*>(tab);
		ent[0] = q.x;
		ent[V - 1] = q.y;
	} else {
		ent[0] = tab[0];
	}
	const char* sb = reinterpret_cast<const char*>(s) + e0 * sizeof(M);
#pragma unroll
	for (int c = 0; c < V; ++c) {
		const LpVec<M, P> v = *reinterpret_cast<const LpVec<M, P>*>(sb + (ent[c] & 0xffffu));
#pragma unroll
		for (int k = 0; k < P; ++k) acc[k][c] = v.v[k];
	}
	// Term t of cell c exists when its count ent[c] >> 16 exceeds t, i.e.
	// when ent[c] >= (t + 1) << 16 (the offset takes 16 bits).
	const int T = lp_div32(L.kw + L.sw - 1, L.sw_magic, L.sw_shift);
#pragma unroll 1
	for (int t = 1; t < T; ++t) {
		const unsigned lim = (unsigned)(t + 1) << 16;
#pragma unroll
		for (int c = 0; c < V; ++c)
			if (ent[c] >= lim) {
				const LpVec<M, P> v =
						*reinterpret_cast<const LpVec<M, P>*>(sb + (ent[c] & 0xffffu) + t * (int)sizeof(LpVec<M, R>));
#pragma unroll
				for (int k = 0; k < P; ++k) acc[k][c] += v.v[k];
			}
	}
}

// lp_phase2_wide adds to acc s over the window columns [max(lo, cb),
// min(hi, ce)] of a pass, [lo, hi] being those holding the cell.
template <typename M>
__device__ __forceinline__ void lp_phase2_wide(int lo, int hi, int cb, int ce, const LpVec<M, 1>* s, M& acc) {
	hi = min(hi, ce);
#pragma unroll 1
	for (int ow = max(lo, cb); ow <= hi; ++ow) acc += s[ow - cb].v[0];
}

// lp_tiled is the tiled kernel with V cells per unit and R input rows per
// thread row: V = 16/sizeof(T) and R = Op::rows when x and dx rows are
// dense, 16-byte aligned packs (W % V == 0) and y and dy rows have unit
// stride along W; else V = R = 1 with any strides. WIDE: the segment's
// window columns exceed a tile row's nw_max slots of shared memory and
// are taken nw_max at a time, the sums carried in registers. Phase 1
// batches B columns a thread: V/2 (at least 1), what a stride of 2 gives
// a thread (W/V units a row, W/2 window columns), but 2 for 16-bit types
// with R = 4 (registers), or for WIDE 2 (in double 1).
//
// A block takes tr input rows (tr/R thread rows of tu threads) by a
// segment of tu*V cells. A prologue fills, once per tile, the rows'
// records and (unless WIDE) the segment's phase-2 table, so that a warp
// spends a few shared loads, not divisions and 64-bit products, to find
// its rows and its cells' windows. Phase 1 sums, per input row and window
// column, the coefficients of the window rows holding the row into s;
// phase 2 sums s over the window columns holding each cell.
//
// Shared memory (ops/lppool_launch.go lpSmem): per thread row nw_max + 1 slots
// of R opmath values, the last one 0, rounded up to 16 bytes; tr LpRow;
// unless WIDE the table, a 4-byte entry per cell of the segment.
template <typename T, typename Op, int V, int R, bool WIDE>
__device__ __forceinline__ void lp_tiled(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	typedef typename OpMath<T>::type M;
	const M pm1 = M(p - 1.0);
	const i64 b = L.base + blockIdx.x;
	const i64 rg = bc_div(b, L.a_magic, L.a_shift);
	const int seg = (int)(b - rg * L.segs);
	const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
	const int c0 = seg * (L.tu * V);
	int ow0, ow_end;
	lp_windows(L, c0, min(c0 + L.tu * V, L.W) - 1, ow0, ow_end);
	// s first: its accesses, the most frequent, need no offset.
	const int srow_len = L.nw_max + 1;
	LpVec<M, R>* sm = reinterpret_cast<LpVec<M, R>*>(lp_smem);
	LpRow* rows = reinterpret_cast<LpRow*>(
			reinterpret_cast<char*>(lp_smem) + ((L.tr * srow_len * (int)sizeof(M) + 15) & ~15));
	unsigned* tab = reinterpret_cast<unsigned*>(rows + L.tr);

	// Prologue: the rows from thread 0 up, the table from the last down.
	const i64 row0 = rg * L.tr;
#pragma unroll 1
	for (int t = tid; t < L.tr; t += nt) {
		const i64 row = row0 + t;
		i64 nc = row;
		int i = 0;
		if (L.H != 1) {
			nc = bc_div(row, L.h_magic, L.h_shift);
			i = (int)(row - nc * L.H);
		}
		LpRow info;
		info.oh_lo = lp_oh_lo(L, i);
		info.oh_hi = lp_oh_hi(L, i);
		info.x = x + (lp_plane(L, nc, 0) + i * L.stride[0][2]);
		info.dx = dx + (lp_plane(L, nc, 3) + i * L.stride[3][2]);
		info.y = y + (lp_plane(L, nc, 1) + info.oh_lo * L.stride[1][2]);
		info.dy = dy + (lp_plane(L, nc, 2) + info.oh_lo * L.stride[2][2]);
		info.valid = row < L.rows;
		info.i = i;
		rows[t] = info;
		if (t % R == 0) {
			LpVec<M, R> z;
#pragma unroll
			for (int e = 0; e < R; ++e) z.v[e] = M(0);
			sm[t / R * srow_len + L.nw_max] = z;
		}
	}
	if (!WIDE) {
#pragma unroll 1
		for (int q = nt - 1 - tid; q < L.tu * V; q += nt) tab[q] = lp_cell_entry<M, R>(L, c0 + q, ow0);
	}
	__syncthreads();

	const int r = lp_div32(tid, L.tu_magic, L.tu_shift);
	const int u = tid - r * L.tu;
	const int j0 = c0 + u * V;
	// The thread row's records are read from shared memory where they are
	// needed (fewer registers).
	int nrow = 0;
	unsigned brk = 1;
	const LpRow* myrows = rows + r * R;
	if (r < L.tr / R) {
#pragma unroll
		for (int e = 0; e < R; ++e) {
			const LpRow& w = myrows[e];
			if (w.valid) nrow = e + 1;
			if (w.i == 0) brk |= 1u << e;
		}
	}
	const bool active = nrow > 0 && j0 < L.W;
	// Packs of x are prefetched now and loaded after phase 2, so that their
	// DRAM latency overlaps the phases without holding registers across
	// them; a single cell is loaded now (one register instead of its row
	// pointer).
	T xs = T();
	if (active) {
		if (V > 1) {
#pragma unroll
			for (int e = 0; e < R; ++e)
				if (e < nrow) lp_prefetch(static_cast<const T*>(myrows[e].x) + j0);
		} else {
			xs = static_cast<const T*>(myrows[0].x)[j0 * L.stride[0][3]];
		}
	}
	LpVec<M, R>* srow = sm + r * srow_len;
	constexpr int B = WIDE ? (sizeof(M) == 8 ? 1 : 2) : V == 1 ? 1 : R == 4 && V == 8 ? 2 : V / 2;
	if (!WIDE) {
		if (nrow > 0 && lp_phase1<T, Op, V, B, R>(L, myrows, nrow, brk, ow0, ow_end, u, srow, pm1) && Op::pooled)
			lp_phase1_pooled<T, V, R, true>(L, myrows, nrow, ow0, ow_end, u, srow, p);
		__syncthreads();
		if (!active) return;
		// Phase 2 and the stores, P rows at a time.
		constexpr int P = R < 2 ? R : 2;
#pragma unroll
		for (int e0 = 0; e0 < R; e0 += P) {
			if (e0 >= nrow) break;
			M acc[P][V];
			lp_phase2<M, V, R, P>(L, tab + u * V, srow, e0, acc);
#pragma unroll
			for (int e = 0; e < P; ++e) {
				if (e0 + e >= nrow) break;
				if (V > 1) {
					const Pack<T> px = load_pack(static_cast<const T*>(myrows[e0 + e].x) + j0);
#pragma unroll
					for (int c = 0; c < V; ++c) acc[e][c] *= Op::xpow(to_op(px.v[c]), pm1);
					lp_store_pack<T, V>(static_cast<T*>(myrows[e0 + e].dx) + j0, acc[e]);
				} else {
					static_cast<T*>(myrows[e0 + e].dx)[j0 * L.stride[3][3]] = lp_round<T>(acc[e][0] * Op::xpow(to_op(xs), pm1));
				}
			}
		}
	} else {
		M acc = M(0);
		int lo, hi;
		lp_windows(L, j0, j0, lo, hi);
		// Whether phase 1 left a window out, for the block: in shared memory
		// rather than a register held across the passes, set after a
		// pass's first barrier (which orders it after thread 0's clearing).
		__shared__ int pooled_any;
		if (Op::pooled && tid == 0) pooled_any = 0;
#pragma unroll 1
		for (int cb = ow0; cb <= ow_end; cb += L.nw_max) {
			const int ce = min(cb + L.nw_max - 1, ow_end);
			const bool pooled = nrow > 0 && lp_phase1<T, Op, V, B, R>(L, myrows, nrow, brk, cb, ce, u, srow, pm1);
			__syncthreads();
			if (Op::pooled && pooled) pooled_any = 1;
			if (active) lp_phase2_wide(lo, hi, cb, ce, reinterpret_cast<LpVec<M, 1>*>(srow), acc);
			__syncthreads();  // before the next pass overwrites s
		}
		// The windows phase 1 left out (y = +inf, p < 1), in passes of their
		// own where any thread of the block met one (the registers of the
		// pooled sum are not live across the passes above). Where there was
		// a pass, the last ended with a barrier, so pooled_any is the
		// block's.
		if (Op::pooled && ow0 <= ow_end && pooled_any) {
#pragma unroll 1
			for (int cb = ow0; cb <= ow_end; cb += L.nw_max) {
				const int ce = min(cb + L.nw_max - 1, ow_end);
				if (nrow > 0) lp_phase1_pooled<T, V, R, false>(L, myrows, nrow, cb, ce, u, srow, p);
				__syncthreads();
				if (active) lp_phase2_wide(lo, hi, cb, ce, reinterpret_cast<LpVec<M, 1>*>(srow), acc);
				__syncthreads();
			}
		}
		if (active) static_cast<T*>(myrows[0].dx)[j0 * L.stride[3][3]] = lp_round<T>(acc * Op::xpow(to_op(xs), pm1));
	}
}

// The family's kernel shapes (spec variants pack, cell, wide).
template <typename T, typename Op>
__device__ __forceinline__ void lppool_pack(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, Pack<T>::N, Op::rows, false>(x, y, dy, dx, p, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void lppool_cell(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, 1, 1, false>(x, y, dy, dx, p, L);
}

template <typename T, typename Op>
__device__ __forceinline__ void lppool_wide(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, double p, const LpPoolLayout& L) {
	lp_tiled<T, Op, 1, 1, true>(x, y, dy, dx, p, L);
}
