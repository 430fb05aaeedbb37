#pragma once
// The flat kernel (reduce_flat) and the mend of its provisional dx
// (red_flat_fix).
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

// red_flat_redo rewrites slice s whose count says the provisional dx is
// wrong and which neither the slots nor a wide mend cover (max/min with no
// element equal to y; prod with one zero, which needs the product of the
// others), with one warp: its statistics from x (lane-strided, then an xor
// butterfly and lane 0's total: a fixed order), then every dx. A call, as
// red_total_fix.
template <typename T, typename Op>
__device__ __noinline__ void red_flat_redo(const T* __restrict__ x, T* __restrict__ dx, typename OpMath<T>::type g,
		typename OpMath<T>::type yv, double scale, i64 k, i64 xo, i64 xs, i64 dof, i64 ds) {
	typedef typename OpMath<T>::type M;
	const int lane = threadIdx.x & 31;
	RedAcc<M> acc = Op::template init<M>();
#pragma unroll 4
	for (i64 j = lane; j < k; j += 32) Op::accum(acc, to_op(x[xo + j * xs]), yv);
	red_warp_total<Op>(acc);
	red_fix_rows<T, Op>(x + xo, dx + dof, Op::template slice<M>(g, yv, acc, scale, k), k, xs, ds);
}

// red_block_total (also the seg kernel's) combines v over the block's threads in a fixed order (a
// warp butterfly, then the warps in index order) and returns the total to
// every thread (sm: RED_BLOCK/32 entries). Every thread must call it.
template <typename Op, typename M> __device__ __forceinline__ RedAcc<M> red_block_total(RedAcc<M> v, RedAcc<M>* sm) {
	red_warp_total<Op>(v);
	if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = v;
	__syncthreads();
	RedAcc<M> t = sm[0];
#pragma unroll
	for (int w = 1; w < RED_BLOCK / 32; ++w) Op::combine(t, sm[w]);
	__syncthreads();
	return t;
}

// red_flat_regrid (the fix kernel, at most RED_FLAT_LOCAL slices, ops with
// Op::flat_regrid: prod) redoes each slice whose provisional dx is wrong
// and which no x-free rewrite covers (prod with one zero: the zero's dx
// needs the product of the others) with the whole grid: the slice is cut
// into units of RED_REGRID_UNIT positions, a block a unit at a time. A
// block reads its unit's x, rewrites the dx of every element but the zero
// (elem with the zero count alone: g*0), records the zero's position, and
// stores the unit's partial statistics (thread-strided, then
// red_block_total: a fixed order); the block that finishes a slice's last
// unit (an integer atomic on done[s]) combines the slice's partials in unit
// order and writes the zero's dx. So the result does not depend on the
// grid, and the long slice costs one more pass over its elements spread
// over the GPU, not a warp's walk.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_regrid(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	__shared__ RedAcc<M> sm[RED_BLOCK / 32];
	__shared__ int last;
	const unsigned* cnt = static_cast<const unsigned*>(ws);
	const RedRegrid rg = red_flat_regrid_ws<Op>(ws, L.slices);
	RedAcc<M>* part = static_cast<RedAcc<M>*>(rg.part);
	const i64 nu = (L.k + RED_REGRID_UNIT - 1) / RED_REGRID_UNIT;
	const i64 xs = L.kstride[0], ds = L.kstride[1];
	for (i64 s = 0; s < L.slices; ++s) {  // block-uniform
		RedAcc<M> st = Op::template assumed<M>();
		st.z = cnt[s];
		if (!Op::fix(st) || Op::wide(st)) continue;
		const RedOff o = red_offsets(s, L);
		const M g = to_op(dy[o.dy]), yv = to_op(y[o.y]);
		// Every element but the zero takes the context of the count alone.
		const RedCtx<M> cq = Op::template slice<M>(g, yv, st, L.scale, L.k);
		for (i64 u = blockIdx.x; u < nu; u += gridDim.x) {
			RedAcc<M> acc = Op::template init<M>();
			const i64 j1 = min(L.k, (u + 1) * RED_REGRID_UNIT);
			for (i64 j = u * RED_REGRID_UNIT + threadIdx.x; j < j1; j += RED_BLOCK) {
				const M xv = to_op(x[o.x + j * xs]);
				Op::accum(acc, xv, yv);
				if (red_flag<Op>(xv, yv)) {
					rg.zat[s] = j;
				} else {
					dx[o.dx + j * ds] = from_op<T>(Op::elem(cq, xv));
				}
			}
			__threadfence();  // zat before the block's arrival
			acc = red_block_total<Op>(acc, sm);
			if (threadIdx.x == 0) {
				part[s * nu + u] = acc;
				__threadfence();
				last = atomicAdd(rg.done + s, 1u) == (unsigned)(nu - 1);
			}
			__syncthreads();
			if (last) {  // block-uniform: every unit of the slice is done
				__threadfence();
				RedAcc<M> t = Op::template init<M>();
				for (i64 v = threadIdx.x; v < nu; v += RED_BLOCK) Op::combine(t, red_ldcg(part + s * nu + v));
				t = red_block_total<Op>(t, sm);
				if (threadIdx.x == 0) {
					const RedCtx<M> c = Op::template slice<M>(g, yv, t, L.scale, L.k);
					dx[o.dx + __ldcg(rg.zat + s) * ds] = from_op<T>(Op::elem(c, M(0)));
				}
			}
			__syncthreads();
		}
	}
}

// red_flat_fix_pack mends lane's pack q of dx (any q: past the packs it
// writes nothing) from the mend bits mb and the slices' contexts sc and
// marks sm (1: a wide slice; 2: a max/min slice with no element equal to
// y). Max/min: an element's dx follows from its slice's context and its
// bit alone, elem(cx, y) where flagged, elem(cx, NaN) = (g/count)*0
// elsewhere (the bits of the provisional g*0 in a slice that is not
// mended), so every pack that holds an element of a marked slice is
// written whole, flagged elements or not: the walk's stores cover the
// marked slices' dx like the flat kernel's, without the partial sectors
// that merge with memory (a few flagged elements in each of many packs);
// where a slice's slots mend it too, they write the same values. Prod:
// the elements of wide slices, g*0, gathered into a pack, stored whole
// where all are, else one by one.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_fix_pack(T* __restrict__ dx, const RedCtx<typename OpMath<T>::type>* sc,
		const unsigned char* sm, unsigned mb, const ReduceLayout& L, i64 q) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	const bool in = q < L.fpacks;
	int kq = 0, em = 0;  // element e is in slice kq + (e & em), under RED_FLAT_LOCAL
	if (in) {
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		if (L.fip == 0) {
			kq = (int)o;
		} else {
			kq = (int)red_flat_kq<N>(q, o, L);
			em = red_flat_em<N>(L);
		}
	}
	if (!in) return;
	Pack<T> out;
	if (Op::mend_mask) {
		bool need = false;
#pragma unroll
		for (int e = 0; e < N; ++e) need = need || sm[kq + (e & em)] != 0;
		if (!need) return;
#pragma unroll
		for (int e = 0; e < N; ++e) {
			const RedCtx<M> c = sc[kq + (e & em)];
			out.v[e] = from_op<T>(Op::elem(c, (mb >> e) & 1u ? c.q : M(NAN)));
		}
		store_pack(dx + q * N, out);
		return;
	}
	unsigned wm = 0;  // the elements gathered into out
#pragma unroll
	for (int e = 0; e < N; ++e) {
		const int s = kq + (e & em);
		if (sm[s] != 1) continue;
		out.v[e] = from_op<T>(Op::elem(sc[s], M(NAN)));
		wm |= 1u << e;
	}
	if (wm == (1u << N) - 1u) {
		store_pack(dx + q * N, out);
	} else {
#pragma unroll
		for (int e = 0; e < N; ++e) {
			if ((wm >> e) & 1u) dx[q * N + e] = out.v[e];
		}
	}
}

// red_flat_fix_few is the fix kernel's walk over the packs with few slices
// (at most RED_FLAT_LOCAL): each block first puts every slice's context,
// from its count, and its mark into shared memory; then the walk reads
// only the mend mask, the mask loads of U packs a thread in flight
// together, and mends them (red_flat_fix_pack).
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_fix_few(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
		void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	constexpr int U = 4;
	__shared__ RedCtx<M> sc[RED_FLAT_LOCAL];
	__shared__ unsigned char sm[RED_FLAT_LOCAL];
	const unsigned* cnt = static_cast<const unsigned*>(ws);
	for (int t = threadIdx.x; t < L.slices; t += blockDim.x) {
		RedAcc<M> acc = Op::template assumed<M>();
		acc.z = cnt[t];
		const M yv = to_op(y[t]);
		sc[t] = Op::template slice<M>(to_op(dy[t]), yv, acc, L.scale, L.k);
		sm[t] = Op::mend_mask && acc.z == 0 ? 2 : Op::wide(acc) ? 1 : 0;
	}
	__syncthreads();
	const unsigned* bits = red_flat_bits<Op>(ws, L.slices);
	const int lane = threadIdx.x & 31;
	const i64 nth = grid_threads();
	for (i64 b0 = global_tid() - lane; b0 < L.fpacks; b0 += U * nth) {  // warp-uniform
		unsigned mb[U];
#pragma unroll
		for (int j = 0; j < U; ++j) {
			const i64 q0 = b0 + j * nth;
			mb[j] = Op::mend_mask && q0 < L.fpacks ? red_flat_bits_load<N>(bits, q0) : 0u;
		}
#pragma unroll
		for (int j = 0; j < U; ++j) {
			const i64 q0 = b0 + j * nth;
			if (q0 >= L.fpacks) break;
			red_flat_fix_pack<T, Op>(dx, sc, sm, mb[j], L, q0 + lane);
		}
	}
}

// red_flat_fix (the fix kernel, after the flat kernel)
// first walks the slices, a thread per slice (one coalesced load of a
// warp's 32 counts). Where Op::fix says the provisional dx is wrong:
//   - a slice whose flagged elements were all recorded (max/min with
//     2..flat_slots ties: each equals y, so dx there is elem(cx, y), and
//     every other element keeps its g*0, the same bits as (g/count)*0) is
//     mended by its thread at those indices alone;
//   - a wide slice (Op::wide: more ties than slots; prod with two or more
//     zeros) is left to the second walk;
//   - the rest (max/min with no element equal to y; prod with one zero)
//     the warp redoes together, one after another (red_flat_redo), where
//     the slices are many (short); with few (long) slices the grid does:
//     prod's by red_flat_regrid, max/min's in the walk below.
// Then, where the wide flag is set (or, with few slices, a max/min slice
// has no element equal to y), the whole grid walks x's packs as the flat
// kernel did and rewrites, in the packs of wide slices, the elements the
// mend mask flags (every element without Op::mend_mask, and every element
// of such a max/min slice), from the count alone: elem(cx, y) where
// flagged, elem(cx, NaN) elsewhere (max/min: (g/count)*0; prod: g*0),
// without reading x. So ties cost one pass over the mask, not over x, and
// the grid covers long slices. With few slices that walk is
// red_flat_fix_few's.
template <typename T, typename Op>
__device__ __forceinline__ void red_flat_fix(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__ ws, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	if (!Op::provisional) return;
	const int lane = threadIdx.x & 31;
	const unsigned* cnt = static_cast<const unsigned*>(ws);
	const i64 nth = grid_threads();
	// few: the slices that the first walk would redo with a warp are
	// rewritten by the whole grid instead (red_flat_regrid, or the walk
	// over the packs for a slice with no element equal to y).
	static_assert(RED_FLAT_LOCAL <= 64, "a warp looks at every count of a few slices with two loads a lane");
	const bool few = L.slices <= RED_FLAT_LOCAL;
	for (i64 s0 = global_tid() - lane; s0 < L.slices; s0 += nth) {  // s0: the warp's first slice (warp-uniform)
		const i64 s = s0 + lane;
		RedAcc<M> acc = Op::template assumed<M>();
		bool need = false;
		if (s < L.slices) {
			acc.z = cnt[s];
			need = Op::fix(acc) && !Op::wide(acc);
		}
		const bool slots = need && Op::flat_slots > 0 && acc.z > 0 && acc.z <= (unsigned)Op::flat_slots;
		if (slots) {
			const RedOff o = red_offsets(s, L);
			const M yv = to_op(y[o.y]);
			const RedCtx<M> cx = Op::template slice<M>(to_op(dy[o.dy]), yv, acc, L.scale, L.k);
			const T v = from_op<T>(Op::elem(cx, yv));
			const i64* slot = red_flat_slots(ws, L.slices) + s * Op::flat_slots;
			i64 at[Op::flat_slots > 0 ? Op::flat_slots : 1];
#pragma unroll
			for (int i = 0; i < Op::flat_slots; ++i) at[i] = (unsigned)i < acc.z ? slot[i] : 0;
#pragma unroll
			for (int i = 0; i < Op::flat_slots; ++i) {
				if ((unsigned)i < acc.z) dx[at[i]] = v;
			}
		}
		for (unsigned m = __ballot_sync(0xffffffffu, need && !slots && !few); m != 0; m &= m - 1) {
			const i64 sr = s0 + __ffs(m) - 1;
			const RedOff o = red_offsets(sr, L);
			red_flat_redo<T, Op>(x, dx, to_op(dy[o.dy]), to_op(y[o.y]), L.scale, L.k, o.x, L.kstride[0], o.dx,
					L.kstride[1]);
		}
	}
	if (Op::flat_regrid && few) red_flat_regrid<T, Op>(x, y, dy, dx, ws, L);
	// empty: with few slices, the walk below also rewrites every element of
	// a max/min slice with no element equal to y (y NaN, or not in the
	// slice), elem(cx, NaN) = (g/0)*0 without reading x, as the warp's redo
	// would from x (no x equals y). Each warp looks at the counts itself.
	bool any_empty = false;
	if (Op::mend_mask && few) {
		const bool e0 = lane < L.slices && cnt[lane] == 0, e1 = lane + 32 < L.slices && cnt[lane + 32] == 0;
		any_empty = __ballot_sync(0xffffffffu, e0 || e1) != 0;
	}
	if (cnt[L.slices] == 0 && !any_empty) return;
	if (few) {
		red_flat_fix_few<T, Op>(y, dy, dx, ws, L);
		return;
	}
	const unsigned* bits = red_flat_bits<Op>(ws, L.slices);
	const M nan = M(NAN);
	for (i64 q0 = global_tid() - lane; q0 < L.fpacks; q0 += nth) {
		const i64 q = q0 + lane;
		const unsigned mb = Op::mend_mask ? red_flat_bits_load<N>(bits, q0) : 0u;
		if (q >= L.fpacks) continue;
		const i64 o = bc_div(q, L.fmagic[0], L.fshift[0]);
		if (L.fip == 0) {
			RedAcc<M> acc = Op::template assumed<M>();
			acc.z = cnt[o];
			const bool empty = Op::mend_mask && few && acc.z == 0;
			if (Op::mend_mask && mb == 0 && !empty) continue;
			if (!Op::wide(acc) && !empty) continue;
			const M yv = to_op(y[o]);
			const RedCtx<M> cx = Op::template slice<M>(to_op(dy[o]), yv, acc, L.scale, L.k);
			Pack<T> out;
#pragma unroll
			for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(cx, (mb >> e) & 1 ? yv : nan));
			store_pack(dx + q * N, out);
		} else {
			// Element e is in slice kq + (e & em) (red_flat_kq); only
			// those of wide slices are written: without a mend mask
			// (prod) gathered into a pack, stored whole where every
			// element is (a wide slice's), else one by one; with one
			// (max/min: the flagged elements, few of a pack) one by one.
			const i64 kq = red_flat_kq<N>(q, o, L);
			const int em = red_flat_em<N>(L);
			Pack<T> out;
			unsigned wm = 0;  // the elements gathered into out
#pragma unroll
			for (int e = 0; e < N; ++e) {
				const i64 s = kq + (e & em);
				RedAcc<M> acc = Op::template assumed<M>();
				acc.z = cnt[s];
				const bool empty = Op::mend_mask && few && acc.z == 0;
				if (!Op::wide(acc) && !empty) continue;
				const M yv = to_op(y[s]);
				const bool flagged = (mb >> e) & 1;
				if (Op::mend_mask && !flagged && !empty) continue;
				const RedCtx<M> cx = Op::template slice<M>(to_op(dy[s]), yv, acc, L.scale, L.k);
				const T v = from_op<T>(Op::elem(cx, flagged ? yv : nan));
				if (Op::mend_mask) {
					dx[q * N + e] = v;
				} else {
					out.v[e] = v;
					wm |= 1u << e;
				}
			}
			if (!Op::mend_mask) {
				if (wm == (1u << N) - 1u) {
					store_pack(dx + q * N, out);
				} else {
#pragma unroll
					for (int e = 0; e < N; ++e) {
						if ((wm >> e) & 1u) dx[q * N + e] = out.v[e];
					}
				}
			}
		}
	}
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
