#pragma once
// The seg variant (reduce_seg): a reduction over several axes whose
// reduced dims do not form one group after coalescing, on contiguous
// operands. x is seen as alternating groups of kept and reduced dims
// (adjacent dims of one kind merged, size-1 dims dropped); slice c (an
// index over the kept groups, the order of dy and y) holds the N = L.k
// elements of the reduced groups. Its elements are segments: the innermost
// reduced group is a run of L.kstride[1] elements at stride L.kstride[0]
// (1 when the innermost dim is reduced), and segment q sits at an offset
// from the outer reduced groups. The launcher reads the layout as:
//   k = N, slices = C (product of the kept groups), chunk/nchunks/tiles:
//   each slice cut into nchunks chunks of chunk positions, tile
//   t = c*nchunks + chunk, one block per tile;
//   srank, sdim[0..srank), sstride[0][0..srank): the kept groups' sizes
//   and x (and dx) strides, outermost first;
//   cvec: the outer reduced groups (0..3), their sizes in
//   sstride[1][0..cvec) and strides in sstride[2][0..cvec), outermost first;
//   kstride = {inner segment stride, segment length};
//   vec: 16-byte packs (the innermost dim is reduced, the segment length a
//   multiple of a pack, x and dx 16-byte aligned; chunk is a multiple of a
//   pack), with fmagic[0] and fshift[0] dividing by a segment's packs
//   (bc_div); fmagic[1] and fshift[1] divide by its elements (the walk
//   element by element);
//   phase: RED_PHASE_SEG_STATS for the statistics pass, else the apply pass.
// The ops without statistics take a packed walk instead where the slices
// are one kept group between reduced ones (x seen as [R, C, S], S the
// segment length, at least a pack but no multiple of one) and x and dx
// allow 16-byte packs over the whole tensor: vec 2, red_seg_flat.
// Ops with statistics launch it twice: the statistics pass writes each
// tile's partial statistics to ws[t] (and the provisional dx of max, min
// and prod), the apply pass combines a slice's partials in an order fixed
// by nchunks (so deterministic) and writes dx (for the provisional ops only
// in the chunks where the provisional dx is wrong, and for max and min only
// at the elements equal to y where the statistics pass recorded them all).
// The other ops launch the apply pass alone.
#include "reduce_kernels.cuh"

// red_div is a / b for 0 <= a, 0 < b, in 32 bits where both fit.
__device__ __forceinline__ i64 red_div(i64 a, i64 b) {
	return ((a | b) >> 32) == 0 ? (i64)((unsigned)a / (unsigned)b) : a / b;
}

// red_seg_kept is slice c's offset in x and dx.
__device__ __forceinline__ i64 red_seg_kept(i64 c, const ReduceLayout& L) {
	i64 o = 0, rem = c;
#pragma unroll
	for (int d = 3; d >= 0; --d) {
		if (d < L.srank) {
			i64 idx = rem;
			if (d > 0) {
				const i64 q = red_div(rem, L.sdim[d]);
				idx = rem - q * L.sdim[d];
				rem = q;
			}
			o += idx * L.sstride[0][d];
		}
	}
	return o;
}

// red_seg_outer is segment q's offset over the outer reduced groups.
__device__ __forceinline__ i64 red_seg_outer(i64 q, const ReduceLayout& L) {
	i64 o = 0, rem = q;
#pragma unroll
	for (int d = 2; d >= 0; --d) {
		if (d < L.cvec) {
			i64 idx = rem;
			if (d > 0) {
				const i64 n = L.sstride[1][d];
				const i64 r = red_div(rem, n);
				idx = rem - r * n;
				rem = r;
			}
			o += idx * L.sstride[2][d];
		}
	}
	return o;
}

// RED_SEG_BATCH is the 16-byte packs a thread of red_seg_each takes at a
// time: it computes their offsets and issues their loads of x before it
// hands any of them on, so that a thread keeps that many loads in flight
// (handed on one at a time, each load waits for the previous pack's store).
#define RED_SEG_BATCH 4

// red_seg_each calls fp(o, e, v) for each 16-byte pack (o: the offset of
// its first element, e: its first position less j0, v: the pack of x at o
// where Load, else unset) of positions [j0, j0+len) that this thread
// takes, with L.vec, else fs(o, e) for each element; the block's threads
// take every RED_BLOCK-th pack or element, first to last, or with Rev last
// to first (the apply pass after a statistics pass: its first reads then
// hit what the statistics pass left in L2, the ends of the chunks). A
// thread meets its packs in the same order either way; it loads them
// RED_SEG_BATCH at a time.
template <typename T, bool Rev, bool Load, typename FP, typename FS>
__device__ __forceinline__ void red_seg_each(const T* __restrict__ x, const ReduceLayout& L, i64 ko, i64 j0, i64 len, FP fp, FS fs) {
	constexpr int N = Pack<T>::N;
	constexpr int U = RED_SEG_BATCH;
	const int step = Rev ? -RED_BLOCK : RED_BLOCK;
	if (L.vec) {
		const i64 bp = L.kstride[1] / N;  // packs per segment
		const i64 n = len / N;
		const i64 p0 = j0 / N;
		for (i64 i = threadIdx.x, p = Rev ? p0 + n - 1 - threadIdx.x : p0 + threadIdx.x; i < n; i += U * RED_BLOCK, p += U * step) {
			// The offsets first, then the loads with no branch between
			// them (a pack past the chunk's end loads pack 0's again,
			// unused), so that they all issue before the first use.
			i64 o[U];
			Pack<T> v[U];
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (u == 0 || i + u * RED_BLOCK < n) {
					const i64 pu = p + u * step;
					const i64 q = bc_div(pu, L.fmagic[0], L.fshift[0]);  // pu / bp
					o[u] = ko + red_seg_outer(q, L) + (pu - q * bp) * N;
				} else {
					o[u] = o[0];
				}
			}
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (Load) v[u] = load_pack(x + o[u]);
			}
#pragma unroll
			for (int u = 0; u < U; ++u) {
				if (i + u * RED_BLOCK < n) fp(o[u], (p + u * step - p0) * N, v[u]);
			}
		}
	} else {
		const i64 bi = L.kstride[1], si = L.kstride[0];
		for (i64 i = threadIdx.x, j = Rev ? j0 + len - 1 - threadIdx.x : j0 + threadIdx.x; i < len; i += RED_BLOCK, j += step) {
			const i64 q = bc_div(j, L.fmagic[1], L.fshift[1]);  // j / bi
			fs(ko + red_seg_outer(q, L) + (j - q * bi) * si, j - j0);
		}
	}
}

// red_seg_record records the positions o + e of the elements equal to y
// that mask m flags (bit e) in the first free of the block's SL slots
// (the slots' order is the atomics', the set of positions the same in any
// order). Out of line: packs with a tie are rare, and the hot loop keeps
// its registers.
template <int SL> __device__ __noinline__ void red_seg_record(unsigned* cnt, i64* slot, i64 o, unsigned m) {
	for (; m != 0; m &= m - 1) {
		const int i = (int)atomicAdd(cnt, 1u);
		if (i < SL) slot[i] = o + __ffs(m) - 1;
	}
}

// red_seg_slice_total is slice c's total from its nchunks partials: warp 0
// combines them (lanes stride the chunks, then the butterfly: an order
// fixed by nchunks) in A (RedWide's opmath) and shares it through sm[0].
template <typename Op, typename A, typename M>
__device__ __forceinline__ RedAcc<M> red_seg_slice_total(const RedAcc<M>* __restrict__ ws, i64 c, i64 nc, RedAcc<A>* sm) {
	if (threadIdx.x < 32) {
		RedAcc<A> acc = Op::template init<A>();
		for (i64 i = threadIdx.x; i < nc; i += 32) Op::combine(acc, red_widen<A>(ws[c * nc + i]));
		red_warp_total<Op>(acc);
		if (threadIdx.x == 0) sm[0] = acc;
	}
	__syncthreads();
	RedAcc<M> t;
	RedPut<M>::put(t, sm[0]);
	__syncthreads();
	return t;
}

// red_ctx_pick is b ? kb : ka field by field (a select of whole structs
// would keep both in local memory and pick an address).
template <typename M> __device__ __forceinline__ RedCtx<M> red_ctx_pick(bool b, const RedCtx<M>& ka, const RedCtx<M>& kb) {
	RedCtx<M> k;
	k.p = b ? kb.p : ka.p;
	k.q = b ? kb.q : ka.q;
	k.mode = b ? kb.mode : ka.mode;
	return k;
}

// red_seg_flat (vec 2): dx over the whole tensor in 16-byte packs, a pack
// per thread (grid-stride), x seen as [R, C, S] with C = sdim[0] slices
// and segments of S = kstride[1] >= N elements: element i is in slice
// (i / S) mod C, so a pack lies in at most two adjacent slices (the second
// from its position split on). fpacks: the tensor's packs; fmagic[1] and
// fshift[1] divide by S, fmagic[0] and fshift[0] by C.
template <typename T, typename Op>
__device__ __forceinline__ void red_seg_flat(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	const i64 S = L.kstride[1], C = L.sdim[0];
	const RedAcc<M> assumed = Op::template assumed<M>();
	for (i64 p = global_tid(); p < L.fpacks; p += grid_threads()) {
		const i64 i0 = p * N;
		const i64 s0 = bc_div(i0, L.fmagic[1], L.fshift[1]);  // i0's segment
		const i64 c0 = s0 - bc_div(s0, L.fmagic[0], L.fshift[0]) * C;
		const i64 c1 = c0 + 1 == C ? 0 : c0 + 1;
		const i64 split = s0 * S + S - i0;  // elements of the pack in slice c0 (> 0)
		const RedCtx<M> k0 = Op::template slice<M>(to_op(dy[c0]), Op::needs_y ? to_op(y[c0]) : M(0), assumed, L.scale, L.k);
		RedCtx<M> k1 = k0;
		if (split < N) k1 = Op::template slice<M>(to_op(dy[c1]), Op::needs_y ? to_op(y[c1]) : M(0), assumed, L.scale, L.k);
		Pack<T> xv, out;
		if (Op::needs_x) xv = load_pack(x + i0);
#pragma unroll
		for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(red_ctx_pick(e >= split, k0, k1), Op::needs_x ? to_op(xv.v[e]) : M(0)));
		store_pack(dx + i0, out);
	}
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_seg(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ wsv, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef typename RedWide<Op, M>::type A;  // the statistics' opmath
	constexpr int N = Pack<T>::N;
	constexpr bool prov = Op::provisional;
	RedAcc<M>* ws = static_cast<RedAcc<M>*>(wsv);
	__shared__ RedAcc<A> sm[RED_BLOCK / 32];
	const bool stats = L.phase == RED_PHASE_SEG_STATS;
	if (stats && !Op::stats) return;
	if (!Op::stats && L.vec == 2) {
		red_seg_flat<T, Op>(x, y, dy, dx, L);
		return;
	}
	// Max and min (Op::mend_mask) record the positions of up to SL
	// elements equal to y per tile in slots, after the tiles' partials
	// (ws[t]): a tile with at most SL of them is mended at those alone.
	constexpr int SL = Op::mend_mask ? Op::flat_slots : 0;
	__shared__ unsigned scnt;
	__shared__ i64 sslot[SL > 0 ? SL : 1];
	// Tile t's slots (computed where used: a pointer live across the
	// loops costs registers).
	auto slots = [&](i64 t) {
		return reinterpret_cast<i64*>(static_cast<char*>(wsv) + ((L.tiles * (i64)sizeof(RedAcc<M>) + 15) & ~(i64)15)) + t * SL;
	};
	if (SL > 0 && stats) {
		if (threadIdx.x == 0) scnt = 0;
		__syncthreads();
	}
	// The apply pass after a statistics pass walks the tiles last to first
	// (and each chunk backwards, see red_seg_each): the tiles the
	// statistics pass read last come first, while L2 still holds them.
	const bool rev = !stats && Op::stats;
	for (i64 b = blockIdx.x; b < L.tiles; b += gridDim.x) {  // block-uniform
		const i64 t = rev ? L.tiles - 1 - b : b;
		const i64 c = red_div(t, L.nchunks);
		const i64 j0 = (t - c * L.nchunks) * L.chunk;
		const i64 len = min(L.chunk, L.k - j0);
		const i64 ko = red_seg_kept(c, L);
		const M g = to_op(dy[c]);
		const M yv = Op::needs_y ? to_op(y[c]) : M(0);
		if (stats) {
			RedAcc<A> acc = Op::template init<A>();
			const RedCtx<M> pc = Op::template slice<M>(g, yv, Op::template assumed<M>(), L.scale, L.k);
			red_seg_each<T, false, true>(x, L, ko, j0, len,
				[&](i64 o, i64, const Pack<T>& v) {
					Pack<T> r;
					unsigned m = 0;  // the pack's elements equal to y (SL > 0)
#pragma unroll
					for (int e = 0; e < N; ++e) {
						const M xv = to_op(v.v[e]);
						Op::accum(acc, A(xv), A(yv));
						if (prov) r.v[e] = from_op<T>(Op::elem(pc, xv));
						if (SL > 0) m |= red_flag<Op>(xv, yv) ? 1u << e : 0u;
					}
					if (SL > 0 && m != 0) red_seg_record<SL>(&scnt, sslot, o, m);
					if (prov) store_pack(dx + o, r);
				},
				[&](i64 o, i64) {
					const M xv = to_op(x[o]);
					Op::accum(acc, A(xv), A(yv));
					if (prov) dx[o] = from_op<T>(Op::elem(pc, xv));
					if (SL > 0 && red_flag<Op>(xv, yv)) red_seg_record<SL>(&scnt, sslot, o, 1u);
				});
			acc = red_block_total<Op>(acc, sm);
			if (threadIdx.x == 0) {
				RedPut<M>::put(ws[t], acc);
				if (SL > 0) {
					for (unsigned i = 0; i < min(scnt, (unsigned)SL); ++i) slots(t)[i] = sslot[i];
					scnt = 0;
				}
			}
			if (SL > 0) __syncthreads();
			continue;
		}
		RedAcc<M> total = Op::template init<M>();
		if (Op::stats) {
			total = red_seg_slice_total<Op>(ws, c, L.nchunks, sm);
			// A provisional slice is rewritten only where its total
			// says the provisional dx is wrong, and then only in the
			// chunks whose own partial needs it (fix_chunk: for max and
			// min, those holding an element equal to y).
			if (prov && (!Op::fix(total) || !Op::fix_chunk(total, ws[t]))) continue;
		}
		const RedCtx<M> cx = Op::template slice<M>(g, yv, total, L.scale, L.k);
		// A slice with elements equal to y needs new dx only at them (every
		// other element keeps its provisional g*0, the same bits as
		// (g/count)*0): where the tile recorded all of its own, at those.
		if (SL > 0 && total.z != 0) {
			const unsigned own = ws[t].z;
			if (own <= (unsigned)SL) {
				if (threadIdx.x < own) {
					const i64 o = slots(t)[threadIdx.x];
					dx[o] = from_op<T>(Op::elem(cx, to_op(x[o])));
				}
				continue;
			}
		}
		red_seg_each<T, Op::stats, Op::needs_x>(x, L, ko, j0, len,
			[&](i64 o, i64, const Pack<T>& v) {
				Pack<T> r;
#pragma unroll
				for (int e = 0; e < N; ++e) r.v[e] = from_op<T>(Op::elem(cx, Op::needs_x ? to_op(v.v[e]) : M(0)));
				store_pack(dx + o, r);
			},
			[&](i64 o, i64) { dx[o] = from_op<T>(Op::elem(cx, Op::needs_x ? to_op(x[o]) : M(0))); });
	}
}

// reduce_segc: var and std on the seg path as thread block clusters of
// RED_SEG_CLUSTER blocks (compute capability 9.0; empty below it and for
// the other ops, it is only launched from the compute_90 build): cluster c
// is slice c, block rank r its chunk r (L.chunk positions, L.nchunks ==
// RED_SEG_CLUSTER, tiles = slices*RED_SEG_CLUSTER, one block per tile).
// Each block keeps its chunk of x in dynamic shared memory, publishes its
// partial sum, and after a cluster barrier combines the cluster's partials
// in rank order (the same bits in every block) and writes dx from shared
// memory: x is read once, where the two passes read it twice.
template <typename T, typename Op>
__device__ __forceinline__ void reduce_segc(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
#if __CUDA_ARCH__ >= 900
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (!Op::stats || Op::provisional) return;
	__shared__ RedAcc<M> sm[RED_BLOCK / 32];
	__shared__ RedAcc<M> pub;
	T* buf = reinterpret_cast<T*>(red_dyn);
	const i64 c = blockIdx.x / RED_SEG_CLUSTER;
	const int r = blockIdx.x % RED_SEG_CLUSTER;
	const i64 j0 = r * L.chunk;
	const i64 len = min(L.chunk, L.k - j0);  // <= 0 for the empty last chunks of a short slice
	const i64 ko = red_seg_kept(c, L);
	const M g = to_op(dy[c]);
	const M yv = Op::needs_y ? to_op(y[c]) : M(0);
	RedAcc<M> acc = Op::template init<M>();
	// Position j0 + e of the slice is kept in buf[e].
	red_seg_each<T, false, true>(x, L, ko, j0, len,
		[&](i64 o, i64 e, const Pack<T>& v) {
			*reinterpret_cast<Pack<T>*>(buf + e) = v;
#pragma unroll
			for (int u = 0; u < N; ++u) Op::accum(acc, to_op(v.v[u]), yv);
		},
		[&](i64 o, i64 e) {
			const T v = x[o];
			buf[e] = v;
			Op::accum(acc, to_op(v), yv);
		});
	acc = red_block_total<Op>(acc, sm);
	if (threadIdx.x == 0) pub = acc;
	red_cluster_arrive();
	red_cluster_wait();
	RedAcc<M> total = red_dsmem(&pub, 0);
#pragma unroll
	for (int q = 1; q < RED_SEG_CLUSTER; ++q) Op::combine(total, red_dsmem(&pub, q));
	// Done reading the others' partials; the kernel waits on this
	// barrier before it exits, so that no block's shared memory goes
	// while another block may still read it.
	red_cluster_arrive();
	const RedCtx<M> cx = Op::template slice<M>(g, yv, total, L.scale, L.k);
	// Each thread reads back the elements it stored.
	red_seg_each<T, false, false>(x, L, ko, j0, len,
		[&](i64 o, i64 e, const Pack<T>&) {
			const Pack<T> v = *reinterpret_cast<const Pack<T>*>(buf + e);
			Pack<T> out;
#pragma unroll
			for (int u = 0; u < N; ++u) out.v[u] = from_op<T>(Op::elem(cx, to_op(v.v[u])));
			store_pack(dx + o, out);
		},
		[&](i64 o, i64 e) { dx[o] = from_op<T>(Op::elem(cx, to_op(buf[e]))); });
	red_cluster_wait();
#endif
}
