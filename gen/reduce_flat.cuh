#pragma once
// The flat kernel (reduce_flat) and the workspace it leaves for the fix
// kernel (gen/reduce_flat_fix.cuh).
#include "reduce_flat_stats.cuh"

// The flat kernel for the provisional ops (max, min, prod; see
// reduce_flat) leaves in the workspace:
//   - cnt[s], a count per slice of the elements where the provisional dx
//     may be wrong (Op::accum's z of that element alone: max/min an
//     element equal to y, exact; prod a zero, exact up to two, which is
//     all its formula asks), then cnt[S], the wide flag: set
//     when some slice counted more than Op::flat_slots such elements;
//   - at a 16-byte boundary, Op::flat_slots flat indices per slice of such
//     elements (the first ones to arrive; any order);
//   - at a 16-byte boundary, for the ops with Op::mend_mask (max/min), the
//     mend mask: one bit per element of x, the flagged ones, N 32-bit words
//     per 32 packs (red_flat_bits_store); for the ops with Op::flat_regrid
//     (prod) and few slices, red_flat_regrid's counters and partials
//     (red_flat_regrid_ws).
// RED_FLAT_LOCAL (gen/zconsts.cuh): up to this many slices the flat
// kernel's blocks count in shared memory (red_flat_count_local), and the
// fix kernel keeps each slice's context there (red_flat_fix_few).

__device__ __forceinline__ i64 red_flat_counts_size(i64 S) { return (4 * (S + 1) + 15) & ~(i64)15; }

__device__ __forceinline__ i64* red_flat_slots(void* ws, i64 S) {
	return reinterpret_cast<i64*>(static_cast<unsigned char*>(ws) + red_flat_counts_size(S));
}

template <typename Op>
__device__ __forceinline__ unsigned* red_flat_bits(void* ws, i64 S) {
	const i64 off = (red_flat_counts_size(S) + 8 * Op::flat_slots * S + 15) & ~(i64)15;
	return reinterpret_cast<unsigned*>(static_cast<unsigned char*>(ws) + off);
}

// After the slots, for the ops with Op::flat_regrid (prod) and at most
// RED_FLAT_LOCAL slices, red_flat_regrid's place, each part at a 16-byte
// boundary: done[S] (units finished per slice; the flat kernel zeroes
// them), zat[S] (the position of the slice's one zero), then the units'
// partial statistics, ceil(k / RED_REGRID_UNIT) per slice.
struct RedRegrid {
	unsigned* done;
	i64* zat;
	void* part;
};

template <typename Op> __device__ __forceinline__ RedRegrid red_flat_regrid_ws(void* ws, i64 S) {
	unsigned char* b = static_cast<unsigned char*>(ws) + ((red_flat_counts_size(S) + 8 * Op::flat_slots * S + 15) & ~(i64)15);
	RedRegrid r;
	r.done = reinterpret_cast<unsigned*>(b);
	b += (4 * S + 15) & ~(i64)15;
	r.zat = reinterpret_cast<i64*>(b);
	r.part = b + ((8 * S + 15) & ~(i64)15);
	return r;
}

// red_flag tells whether x is such an element.
template <typename Op, typename M> __device__ __forceinline__ bool red_flag(M x, M y) {
	RedAcc<M> t = Op::template init<M>();
	Op::accum(t, x, y);
	return t.z != 0;
}

// red_flat_crosses tells whether the add of n to a count that was b takes
// it past Op::flat_slots. The adds to one count return disjoint ranges
// [b, b+n), so exactly one add crosses for a slice that ends above the
// slots: the wide flag gets one store per such slice, however many ties
// it has, not one per add after the crossing (which queue every SM's
// stores on one address).
template <typename Op> __device__ __forceinline__ bool red_flat_crosses(unsigned b, unsigned n) {
	return b <= (unsigned)Op::flat_slots && b + n > (unsigned)Op::flat_slots;
}

// red_flat_count (all 32 lanes of a warp, converged) adds to cnt[s] (the
// workspace's counts, or a block's in shared memory: see
// red_flat_provisional) the
// flagged elements m (bits) of each lane, whose flat indices are q0 + bit,
// with one integer atomic per slice the warp touches (lanes grouped by
// slice with match.any; a lane with m == 0 passes any s), so that a slice
// whose every element ties costs an atomic per warp, not per element. The
// counts are exact and order-free. Each lane then records its indices in
// the slots from the place its prefix over its group gives it, while that
// is under Op::flat_slots; the add that takes a count past
// Op::flat_slots sets the wide flag (where wide is not null;
// red_flat_crosses). A group's lanes are either contiguous (Single false: a lane's
// pack lies in one slice, and slices follow the lanes in order), so that
// a prefix over the warp gives every group's sums, or each lane flags at
// most one element (Single true: the group's lanes, in any order, are the
// count).
template <typename Op, bool Single>
__device__ __forceinline__ void red_flat_count(unsigned* cnt, i64* slots, unsigned* wide, i64 s, unsigned m, i64 q0) {
	const unsigned full = 0xffffffffu;
	if (__ballot_sync(full, m != 0) == 0) return;
	const int lane = threadIdx.x & 31;
	const unsigned peers = __match_any_sync(full, m != 0 ? s : (i64)-1);
	const int lead = __ffs(peers) - 1;
	int before, total;  // flagged elements of the group: in lanes under this one, in all
	if (Single) {
		before = __popc(peers & ((1u << lane) - 1u));
		total = __popc(peers);
	} else {
		const int c = __popc(m);
		int p = c;  // inclusive prefix of c over the warp
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			const int t = __shfl_up_sync(full, p, d);
			if (lane >= d) p += t;
		}
		const int first = __shfl_sync(full, p - c, lead);
		total = __shfl_sync(full, p, 31 - __clz(peers)) - first;
		before = p - c - first;
	}
	unsigned b = 0;
	if (m != 0 && lane == lead) {
		b = atomicAdd(cnt + s, (unsigned)total);
		if (wide != nullptr && red_flat_crosses<Op>(b, (unsigned)total)) *static_cast<volatile unsigned*>(wide) = 1;
	}
	b = __shfl_sync(full, b, lead);
	if (Op::flat_slots == 0 || b >= (unsigned)Op::flat_slots) return;
	i64* slot = slots + s * Op::flat_slots;
	for (int at = (int)b + before; m != 0 && at < Op::flat_slots; m &= m - 1, ++at) slot[at] = q0 + __ffs(m) - 1;
}

// red_flat_bits_store (all 32 lanes, converged) writes the mend bits mb of
// the warp's 32 packs q0..q0+31 (q0 a multiple of 32; N bits a lane, the
// bit of element e of lane l at l*N + e) as N words.
template <int N>
__device__ __forceinline__ void red_flat_bits_store(unsigned* bits, i64 q0, unsigned mb) {
	constexpr int G = 32 / N;  // lanes per word
	const int lane = threadIdx.x & 31;
	unsigned w = mb << ((lane % G) * N);
#pragma unroll
	for (int d = 1; d < G; d <<= 1) w |= __shfl_xor_sync(0xffffffffu, w, d);
	if (lane % G == 0) bits[(q0 >> 5) * N + lane / G] = w;
}

// red_flat_bits_load is lane l's N bits of pack q0 + l (as stored).
template <int N>
__device__ __forceinline__ unsigned red_flat_bits_load(const unsigned* bits, i64 q0) {
	constexpr int G = 32 / N;
	const int lane = threadIdx.x & 31;
	return (bits[(q0 >> 5) * N + lane / G] >> ((lane % G) * N)) & ((1u << N) - 1u);
}

// red_flat_pack sets out to the provisional dx of pack xv whose element e
// is in the slice of gv.v[e] and yp.v[e] (fip != 0) and returns its
// flagged elements (red_flag): the fast form (RedFlatFast, with red_quot's
// Z), then, only if it was out of its range somewhere, the exact form for
// the whole pack (as red_elems).
template <typename T, typename Op, bool Z>
__device__ __forceinline__ unsigned red_flat_pack(const Pack<T>& xv, const Pack<T>& gv, const Pack<T>& yp, Pack<T>& out,
		const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	const RedAcc<M> assumed = Op::template assumed<M>();
	unsigned m = 0;
	bool bad = false;
#pragma unroll
	for (int e = 0; e < N; ++e) {
		const M yv = to_op(yp.v[e]), xe = to_op(xv.v[e]);
		const RedCtx<M> c = Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k);
		out.v[e] = from_op<T>(RedFlatFast<Op, T>::template elem<Z>(c, xe, bad));
		m |= red_flag<Op>(xe, yv) ? 1u << e : 0u;
	}
	if (bad) {
#pragma unroll
		for (int e = 0; e < N; ++e) {
			const M yv = to_op(yp.v[e]);
			out.v[e] = from_op<T>(RedZeroQuot<Op>::elem(
					Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k), to_op(xv.v[e])));
		}
	}
	return m;
}

// red_flat_count_pack (all 32 lanes, converged) counts the flagged
// elements m of lane's pack q (any q where m == 0) into the workspace's
// counts, many slices (see red_flat_count_local for few). The flat kernel
// calls it only where a lane of the warp flagged an element. Prod's counts
// matter up to Op::wide (two zeros) and it records no slots: a lane adds
// its own zeros, and none to a count that already reads two or more (a
// count only grows, so the slice stays wide), which spares the atomics of
// a slice with many zeros.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_count_pack(void* ws, const ReduceLayout& L, i64 q, unsigned m) {
	constexpr int N = Pack<T>::N;
	unsigned* cnt = static_cast<unsigned*>(ws);
	i64* slots = red_flat_slots(ws, L.slices);
	unsigned* wide = cnt + L.slices;
	const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
	if (L.fip == 0) {
		red_flat_count<Op, false>(cnt, slots, wide, o, m, q * N);
		return;
	}
	// Element e is in slice kq + (e & em) (red_flat_kq).
	const i64 kq = red_flat_kq<N>(q, o, L);
	const int em = red_flat_em<N>(L);
#pragma unroll
	for (int e = 0; e < N; ++e) {
		if (Op::flat_slots > 0) {
			red_flat_count<Op, true>(cnt, slots, wide, kq + (e & em), (m >> e) & 1u, q * N + e);
		} else if ((m >> e) & 1u) {
			unsigned* c = cnt + kq + (e & em);
			if (*static_cast<volatile unsigned*>(c) < 2u && red_flat_crosses<Op>(atomicAdd(c, 1u), 1u)) {
				*static_cast<volatile unsigned*>(wide) = 1;
			}
		}
	}
}

// red_flat_count_local (all 32 lanes, converged) adds the flagged elements
// m of each lane's pack q to the block's counts in shared memory (few
// slices: at most RED_FLAT_LOCAL) and records the first Op::flat_slots of
// each slice in the block's slots. Where the lanes that flag an element
// share their first slice (kq, the common case: a warp's packs lie in one
// slice, or in rows of the same few slices), the warp counts each element
// position with a ballot and lane e adds the count of position e; a
// position whose add starts under the slots then records its elements
// there in lane order (a block's first few ties of a slice, so rarely).
// Elsewhere each lane adds its own elements one by one.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_count_local(unsigned* bcnt, i64* bslot, const ReduceLayout& L, i64 q, unsigned m) {
	constexpr int N = Pack<T>::N;
	constexpr int SL = Op::flat_slots > 0 ? Op::flat_slots : 1;
	const unsigned full = 0xffffffffu;
	const int lane = threadIdx.x & 31;
	i64 kq = 0;
	int em = 0;  // element e is in slice kq + (e & em)
	if (m != 0) {
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		if (L.fip == 0) {
			kq = o;
		} else {
			kq = red_flat_kq<N>(q, o, L);
			em = red_flat_em<N>(L);
		}
	}
	const int lead = __ffs(__ballot_sync(full, m != 0)) - 1;
	const i64 k0 = __shfl_sync(full, kq, lead);
	if (__all_sync(full, m == 0 || kq == k0)) {
		em = __shfl_sync(full, em, lead);
		unsigned c = 0;  // lane e < N: the warp's flagged elements at position e
#pragma unroll
		for (int e = 0; e < N; ++e) {
			const unsigned n = __popc(__ballot_sync(full, (m >> e) & 1u));
			if (lane == e) c = n;
		}
		int b = Op::flat_slots;  // lane e < N: where position e's add starts
		if (lane < N && c != 0) b = (int)atomicAdd(bcnt + k0 + (lane & em), c);
		if (Op::flat_slots > 0) {
			for (unsigned low = __ballot_sync(full, b < Op::flat_slots); low != 0; low &= low - 1) {
				const int e = __ffs(low) - 1;
				int at = __shfl_sync(full, b, e);
				const i64 s = k0 + (e & em);
				for (unsigned ln = __ballot_sync(full, (m >> e) & 1u); ln != 0 && at < Op::flat_slots; ln &= ln - 1, ++at) {
					if (lane == __ffs(ln) - 1) bslot[s * SL + at] = q * N + e;
				}
			}
		}
		return;
	}
#pragma unroll
	for (int e = 0; e < N; ++e) {
		if (!((m >> e) & 1u)) continue;
		const i64 s = kq + (e & em);
		const int b = (int)atomicAdd(bcnt + s, 1u);
		if (b < Op::flat_slots) bslot[s * SL + b] = q * N + e;
	}
}

// The provisional ops (max, min, prod) take it too where their slices
// would be split (red_flat_provisional): it writes the provisional dx
// (their common case: one element equal to y; no zero), counts per slice
// the elements that may make it wrong (red_flat_count: for max/min an
// element equal to y, for prod a zero) and, for max/min, writes them as
// the mend mask; the fix kernel then mends the slices where it is wrong
// (red_flat_fix). Every dx is the same bits whatever the order of the
// atomics. It is empty for var and std, which need the mean first.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_provisional(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int SL = Op::flat_slots > 0 ? Op::flat_slots : 1;
	__shared__ unsigned bcnt[RED_FLAT_LOCAL];
	__shared__ i64 bslot[RED_FLAT_LOCAL * SL];
	const RedAcc<M> assumed = Op::template assumed<M>();
	const int lane = threadIdx.x & 31;
	// Few slices: the block counts in shared memory and adds its counts
	// once at the end, so that many ties in one slice do not queue every
	// warp of the grid on one atomic.
	const bool local = L.slices <= RED_FLAT_LOCAL;
	if (local) {
		for (int i = threadIdx.x; i < RED_FLAT_LOCAL; i += blockDim.x) bcnt[i] = 0;
		__syncthreads();
	}
	if (Op::flat_regrid && local && global_tid() < L.slices) {
		red_flat_regrid_ws<Op>(ws, L.slices).done[global_tid()] = 0;  // for the fix kernel's red_flat_regrid
	}
	const i64 nth = grid_threads();
	for (i64 q0 = global_tid() - lane; q0 < L.fpacks; q0 += nth) {  // q0: the warp's first pack (warp-uniform)
		const i64 q = q0 + lane;
		unsigned m = 0;  // per element: red_flag
		if (q < L.fpacks) {
			const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
			const Pack<T> xv = load_pack(x + q * N);
			Pack<T> out;
			if (L.fip == 0) {
				const M yv = to_op(y[o]);
				const RedCtx<M> c = Op::template slice<M>(to_op(dy[o]), yv, assumed, L.scale, L.k);
				// The fast form for the pack, then, only if it was out of
				// its range somewhere, the exact form (as red_elems); a
				// slice whose every element takes the exact form's
				// division-free path (RedZeroQuot::whole) goes there first.
				bool bad = RedZeroQuot<Op>::whole(c);
				if (!bad) {
#pragma unroll
					for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(RedFlatFast<Op, T>::elem(c, to_op(xv.v[e]), bad));
				}
				if (bad) {
#pragma unroll
					for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(RedZeroQuot<Op>::elem(c, to_op(xv.v[e])));
				}
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M xe = to_op(xv.v[e]);
					m |= red_flag<Op>(xe, yv) ? 1u << e : 0u;
				}
			} else {
				const i64 kq = red_flat_kq<N>(q, o, L);
				const Pack<T> gv = red_flat_load(dy + kq, L), yp = red_flat_load(y + kq, L);
				// Rows of a few slices (fip < 0) take red_quot's test for
				// a zero dividend: there the few products underflow
				// together, in every pack.
				if (L.fip < 0) {
					m = red_flat_pack<T, Op, true>(xv, gv, yp, out, L);
				} else {
					m = red_flat_pack<T, Op, false>(xv, gv, yp, out, L);
				}
			}
			store_pack(dx + q * N, out);
		}
		if (__ballot_sync(0xffffffffu, m != 0) != 0) {
			if (local) {
				red_flat_count_local<T, Op>(bcnt, bslot, L, q, m);
			} else {
				red_flat_count_pack<T, Op>(ws, L, q, m);
			}
		}
		if (Op::mend_mask) red_flat_bits_store<N>(red_flat_bits<Op>(ws, L.slices), q0, m);
	}
	if (local) {
		// The block's counts into the workspace, and its first indices
		// into the slots from the place the global count gives them.
		__syncthreads();
		unsigned* gcnt = static_cast<unsigned*>(ws);
		i64* gslot = red_flat_slots(ws, L.slices);
		for (int t = threadIdx.x; t < L.slices; t += blockDim.x) {
			const unsigned c = bcnt[t];
			if (c == 0) continue;
			const unsigned b = atomicAdd(gcnt + t, c);
			if (red_flat_crosses<Op>(b, c)) *static_cast<volatile unsigned*>(gcnt + L.slices) = 1;
			const int room = Op::flat_slots - (int)min(b, (unsigned)Op::flat_slots);  // slots left from b
			for (int i = 0; i < room && (unsigned)i < c; ++i) gslot[t * SL + b + i] = bslot[t * SL + i];
		}
	}
}

// reduce_flat: without statistics dx = elem(slice(dy, y), x) is a map of x
// with dy and y broadcast along the axis. Where every operand is dense (x
// and dx viewed as [O, k, I], dy and y as [O, I]) the launcher takes this
// kernel, which moves like the binary kernels: one 16-byte pack of x and
// dx per thread over the flat index, a block per 256 packs. A pack lies in
// one slice when I == 1 and k is a multiple of the pack's N (fip == 0: dy
// and y are scalars, fmagic[0] divides by k/N), in N adjacent slices
// when I is a multiple of N (fip = I/N: dy and y are packs too, fmagic[0]
// divides by k*I/N and fmagic[1] by fip), or in N/I rows of all I slices
// when I divides N and k*I is a multiple of N (fip = -I: element e is in
// slice e mod I of its outer index; fmagic[0] divides by k*I/N).
// The provisional ops (max, min, prod) take it too where their slices
// would be split (red_flat_provisional): it writes the provisional dx
// (their common case: one element equal to y; no zero), counts per slice
// the elements that may make it wrong (red_flat_count: for max/min an
// element equal to y, for prod a zero) and, for max/min, writes them as
// the mend mask; the fix kernel then mends the slices where it is wrong
// (red_flat_fix). Every dx is the same bits whatever the order of the
// atomics. Var and std, which need the mean first, take it twice: their
// statistics pass (L.phase RED_PHASE_FLAT), then, after the apply
// kernel's totals, their apply pass (reduce_flat_stats.cuh).
template <typename T, typename Op>
__device__ __forceinline__ void reduce_flat(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (Op::stats) {
		if (Op::provisional) {
			red_flat_provisional<T, Op>(x, y, dy, dx, ws, L);
		} else if (L.phase == RED_PHASE_FLAT) {
			red_flat_stats<T, Op>(x, static_cast<RedAcc<M>*>(ws), L);
		} else {
			red_flat_apply<T, Op>(x, y, dy, dx, static_cast<const RedAcc<M>*>(ws), L);
		}
		return;
	}
	const RedAcc<M> assumed = Op::template assumed<M>();
	const i64 nth = grid_threads();
	for (i64 q = global_tid(); q < L.fpacks; q += nth) {
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		Pack<T> xv, out;
		if (Op::needs_x) xv = load_pack(x + q * N);
		if (L.fip == 0) {
			const M yv = Op::needs_y ? to_op(y[o]) : M(0);
			const RedCtx<M> c = Op::template slice<M>(to_op(dy[o]), yv, assumed, L.scale, L.k);
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c, Op::needs_x ? to_op(xv.v[e]) : M(0)));
		} else {
			const i64 kq = red_flat_kq<N>(q, o, L);
			const Pack<T> gv = red_flat_load(dy + kq, L);
			Pack<T> yp;
			if (Op::needs_y) yp = red_flat_load(y + kq, L);
			bool bad = false;
#pragma unroll
			for (int e = 0; e < N; ++e) {
				const M yv = Op::needs_y ? to_op(yp.v[e]) : M(0), xe = Op::needs_x ? to_op(xv.v[e]) : M(0);
				const RedCtx<M> c = Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k);
				out.v[e] = from_op<T>(RedFast<Op, T>::elem(c, xe, bad));
			}
			if (bad) {
				// RedFast's quotient was out of its range somewhere: the
				// exact form for the whole pack (as red_elems).
#pragma unroll
				for (int e = 0; e < N; ++e) {
					const M yv = Op::needs_y ? to_op(yp.v[e]) : M(0), xe = Op::needs_x ? to_op(xv.v[e]) : M(0);
					out.v[e] = from_op<T>(Op::elem(Op::template slice<M>(to_op(gv.v[e]), yv, assumed, L.scale, L.k), xe));
				}
			}
		}
		store_pack(dx + q * N, out);
	}
}
