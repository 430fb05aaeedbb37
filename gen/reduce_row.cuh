#pragma once
// Slice offsets and the reductions over a warp and a row tile's group
// (shared with the other mappings), and the row mapping's tile (red_row_tile).
#include "reduce_ops.cuh"

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
// commutative), then the warps' totals in index order (sm: 8 entries, in
// M; v and the total in A, RedWide's opmath).
template <typename Op, typename A, typename M>
__device__ __forceinline__ RedAcc<A> red_group_reduce(RedAcc<A> v, const ReduceLayout& L, RedAcc<M>* sm) {
	const int tid = threadIdx.x;
	const int G = L.group;
#pragma unroll
	for (int off = 1; off < 32; off <<= 1) {
		if (off < G) Op::combine(v, red_shfl_xor(v, off));
	}
	if (G <= 32) return v;
	if ((tid & 31) == 0) RedPut<M>::put(sm[tid >> 5], v);
	__syncthreads();
	const int wpg = G >> 5;
	const int first = ((tid >> 5) / wpg) * wpg;
	RedAcc<A> t = red_widen<A>(sm[first]);
#pragma unroll
	for (int w = 1; w < RED_BLOCK / 32; ++w) {
		if (w < wpg) Op::combine(t, red_widen<A>(sm[first + w]));
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
// statistics (and provisional dx); RED_APPLY: apply with red_total's totals
// (for the provisional ops: rewrite the tiles whose dx can be wrong).
template <typename T, typename Op, int Pass>
__device__ __forceinline__ void red_row_tile(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, bool active, int lane, RedAcc<typename OpMath<T>::type>* sm) {
	typedef typename OpMath<T>::type M;
	// The statistics' opmath: RedWide's for the statistics pass of split
	// slices; a fused tile's slice is short enough for its group's tree.
	typedef typename RedWide<Op, M, Pass == RED_STATS>::type A;
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

	RedAcc<A> acc = Op::template init<A>();
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
					for (int e = 0; e < N; ++e) Op::accum(acc, A(to_op(cache[r].v[e])), A(yv));
				}
			}
			red_row_scalars(xs, ds, kx, kd, lane, G, send, vec, body, len,
				[&](const T* xq, T*) { Op::accum(acc, A(to_op(*xq)), A(yv)); });
		} else {
			const RedCtx<M> pc = Op::template slice<M>(g, yv, Op::template assumed<M>(), L.scale, L.k);
#pragma unroll 4
			for (i64 p = lane; p < np; p += G) {
				const Pack<T> v = load_pack(xp + p * N);
				Pack<T> r;
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M xv = to_op(v.v[e]);
					Op::accum(acc, A(xv), A(yv));
					if (prov) r.v[e] = from_op<T>(Op::elem(pc, xv));
				}
				if (prov) store_pack(dp + p * N, r);
			}
			red_row_scalars(xs, ds, kx, kd, lane, G, send, vec, body, len, [&](const T* xq, T* dq) {
				const M xv = to_op(*xq);
				Op::accum(acc, A(xv), A(yv));
				if (prov) *dq = from_op<T>(Op::elem(pc, xv));
			});
		}
	}
	RedAcc<M> total;
	RedPut<M>::put(total, acc);
	if (Op::stats) {
		if (Pass == RED_APPLY) {
			if (active) total = ws[L.slices * L.nchunks + s];  // red_total's
		} else {
			RedPut<M>::put(total, red_group_reduce<Op>(acc, L, sm));
		}
	}
	if (Pass == RED_STATS) {
		if (Op::stats && active && lane == 0) ws[t] = total;
		return;
	}
	if (!active) return;
	if (!cached && Op::stats && prov && !Op::fix(total)) return;
	// The apply pass of a provisional op mends: only a tile whose
	// provisional dx can be wrong is rewritten (its partial is ws[t]).
	if (Pass == RED_APPLY && Op::stats && prov && !Op::fix_chunk(total, ws[t])) return;
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
