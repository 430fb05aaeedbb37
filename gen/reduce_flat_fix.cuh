#pragma once
// The fix kernel (red_flat_fix): the mend of the flat kernel's provisional
// dx of max, min and prod (gen/reduce_flat.cuh), with the grid-wide redo of
// a few long slices (red_flat_regrid) and the block total it shares with the
// seg kernel (red_block_total).
#include "reduce_flat.cuh"

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
	typedef typename RedWide<Op, M>::type W;
	const int lane = threadIdx.x & 31;
	RedAcc<W> acc = Op::template init<W>();
#pragma unroll 4
	for (i64 j = lane; j < k; j += 32) Op::accum(acc, W(to_op(x[xo + j * xs])), W(yv));
	red_warp_total<Op>(acc);
	red_fix_rows<T, Op>(x + xo, dx + dof, Op::template slice<M>(g, yv, red_narrow<M>(acc), scale, k), k, xs, ds);
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
	typedef typename RedWide<Op, M>::type W;
	__shared__ RedAcc<W> sm[RED_BLOCK / 32];
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
			RedAcc<W> acc = Op::template init<W>();
			const i64 j1 = min(L.k, (u + 1) * RED_REGRID_UNIT);
			for (i64 j = u * RED_REGRID_UNIT + threadIdx.x; j < j1; j += RED_BLOCK) {
				const M xv = to_op(x[o.x + j * xs]);
				Op::accum(acc, W(xv), W(yv));
				if (red_flag<Op>(xv, yv)) {
					rg.zat[s] = j;
				} else {
					dx[o.dx + j * ds] = from_op<T>(Op::elem(cq, xv));
				}
			}
			__threadfence();  // zat before the block's arrival
			acc = red_block_total<Op>(acc, sm);
			if (threadIdx.x == 0) {
				part[s * nu + u] = red_narrow<M>(acc);
				__threadfence();
				last = atomicAdd(rg.done + s, 1u) == (unsigned)(nu - 1);
			}
			__syncthreads();
			if (last) {  // block-uniform: every unit of the slice is done
				__threadfence();
				RedAcc<W> t = Op::template init<W>();
				for (i64 v = threadIdx.x; v < nu; v += RED_BLOCK) Op::combine(t, red_widen<W>(red_ldcg(part + s * nu + v)));
				t = red_block_total<Op>(t, sm);
				if (threadIdx.x == 0) {
					const RedCtx<M> c = Op::template slice<M>(g, yv, red_narrow<M>(t), L.scale, L.k);
					dx[o.dx + __ldcg(rg.zat + s) * ds] = from_op<T>(Op::elem(c, M(0)));
				}
			}
			__syncthreads();
		}
	}
}

// red_flat_store_some stores the elements wm of out into pack q of dx:
// the whole pack where wm has every element, else one by one.
template <typename T>
__device__ __forceinline__ void red_flat_store_some(T* __restrict__ dx, i64 q, const Pack<T>& out, unsigned wm) {
	constexpr int N = Pack<T>::N;
	if (wm == (1u << N) - 1u) {
		store_pack(dx + q * N, out);
		return;
	}
#pragma unroll
	for (int e = 0; e < N; ++e) {
		if ((wm >> e) & 1u) dx[q * N + e] = out.v[e];
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
	red_flat_store_some(dx, q, out, wm);
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
// Then, where the wide flag is set, the whole grid walks x's packs as the
// flat kernel did and rewrites, in the packs of wide slices, the elements
// the mend mask flags (every element without Op::mend_mask), from the
// count alone: elem(cx, y) where flagged, elem(cx, NaN) elsewhere
// (max/min: (g/count)*0; prod: g*0), without reading x. So ties cost one
// pass over the mask, not over x, and the grid covers long slices. With
// few slices that walk is red_flat_fix_few's, which also rewrites every
// element of a max/min slice with no element equal to y.
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
			if ((Op::mend_mask && mb == 0) || !Op::wide(acc)) continue;
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
				if (!Op::wide(acc)) continue;
				const M yv = to_op(y[s]);
				const bool flagged = (mb >> e) & 1;
				if (Op::mend_mask && !flagged) continue;
				const RedCtx<M> cx = Op::template slice<M>(to_op(dy[s]), yv, acc, L.scale, L.k);
				const T v = from_op<T>(Op::elem(cx, flagged ? yv : nan));
				if (Op::mend_mask) {
					dx[q * N + e] = v;
				} else {
					out.v[e] = v;
					wm |= 1u << e;
				}
			}
			if (!Op::mend_mask) red_flat_store_some(dx, q, out, wm);
		}
	}
}
