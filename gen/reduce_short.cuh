#pragma once
// The short mapping (reduce_short): a single reduced axis of at most
// RED_SHORT_KMAX positions on dense operands, each slice's statistics in
// one thread's registers, x read and dx stored in 16-byte accesses (8-byte
// ones for the 16-bit dtypes along an outer axis).
#include "reduce_kernels.cuh"

// RED_SHORT_KREG: rows of its vector an outer-form thread keeps in registers
// between the statistics and dx; it reads the rows past them again for dx
// (from L1 or L2). Keeping all RED_SHORT_KMAX would take registers from
// the occupancy the short axes, which read few rows, need to keep enough
// loads in flight.
#define RED_SHORT_KREG 8

// RedShortCap is the inner form's chunk: the elements of x a block stages
// in shared memory at a time, 16 KiB (32 KiB of f64: at least RED_BLOCK
// slices of RED_SHORT_KMAX).
template <typename T> struct RedShortCap {
	static constexpr int n = (16384 > RED_BLOCK * RED_SHORT_KMAX * (int)sizeof(T) ? 16384 : RED_BLOCK * RED_SHORT_KMAX * (int)sizeof(T)) / (int)sizeof(T);
	// The padding red_short_pad adds: a word (8 bytes for f64) per 128 bytes.
	static constexpr int padded = n + (n / (128 / (int)sizeof(T))) * (sizeof(T) >= 4 ? 1 : 4 / (int)sizeof(T));
};

// red_short_pad is the shared memory index of element i of the inner
// form's staged chunk: one 4-byte word (8 bytes for f64) after every 128
// bytes, so that the lanes of a warp, each reading position j of its own
// slice (a stride of k elements), and the lanes storing adjacent 16-byte
// packs element by element, fall in distinct banks for the k that are
// powers of two.
template <typename T> __device__ __forceinline__ int red_short_pad(int i) {
	constexpr int W = 128 / sizeof(T);
	constexpr int P = sizeof(T) >= 4 ? 1 : 4 / sizeof(T);
	return i + (i / W) * P;
}

// red_short_inner: the axis is innermost (x and dx seen as [S, k], dy and y
// as [S]). A block takes a chunk of CS = RED_BLOCK*spt consecutive slices
// at a time, spt = RedShortCap/(RED_BLOCK*k) (so about 16 KiB of x
// whatever k; shortChunk in ops/reduce_short.go):
// it copies their contiguous elements of x into shared memory with 16-byte
// loads (scalars for a last chunk's tail), each thread reduces slices tid,
// tid + RED_BLOCK, ... of the chunk from there, each in position order,
// forms each slice's context (Op::slice) and writes its dx over its x, and
// the block stores the chunk with 16-byte stores. Ops that need no x skip
// the copy. x and dx are 16-byte aligned (the launcher checks), and so is
// every chunk: CS*k is a multiple of RED_BLOCK elements.
template <typename T, typename Op>
__device__ __forceinline__ void red_short_inner(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	constexpr int N = Pack<T>::N;
	__shared__ __align__(16) T buf[RedShortCap<T>::padded];
	const int tid = threadIdx.x;
	const int k = (int)L.k;
	const int cs = RED_BLOCK * (RedShortCap<T>::n / (RED_BLOCK * k));
	for (i64 b = blockIdx.x; b * cs < L.slices; b += gridDim.x) {
		const i64 s0 = b * cs;
		const int ns = (int)min((i64)cs, L.slices - s0);
		const int ne = ns * k;
		const int np = ne / N;
		const i64 e0 = s0 * k;
		if (Op::needs_x) {
#pragma unroll 4
			for (int m = tid; m < np; m += RED_BLOCK) {
				const Pack<T> v = load_pack(x + e0 + (i64)m * N);
#pragma unroll
				for (int e = 0; e < N; ++e) buf[red_short_pad<T>(m * N + e)] = v.v[e];
			}
			for (int i = np * N + tid; i < ne; i += RED_BLOCK) buf[red_short_pad<T>(i)] = x[e0 + i];
			__syncthreads();
		}
		for (int t = tid; t < ns; t += RED_BLOCK) {
			const i64 s = s0 + t;
			const M g = to_op(dy[s]);
			const M yv = Op::needs_y ? to_op(y[s]) : M(0);
			M xv[RED_SHORT_KMAX];
			RedAcc<M> acc = Op::template init<M>();
#pragma unroll
			for (int j = 0; j < RED_SHORT_KMAX; ++j) {
				xv[j] = M(0);
				if (Op::needs_x && j < k) {
					xv[j] = to_op(buf[red_short_pad<T>(t * k + j)]);
					Op::accum(acc, xv[j], yv);
				}
			}
			const RedCtx<M> c = Op::template slice<M>(g, yv, acc, L.scale, L.k);
#pragma unroll
			for (int j = 0; j < RED_SHORT_KMAX; ++j) {
				if (j < k) buf[red_short_pad<T>(t * k + j)] = from_op<T>(Op::elem(c, xv[j]));
			}
		}
		__syncthreads();
#pragma unroll 4
		for (int m = tid; m < np; m += RED_BLOCK) {
			Pack<T> v;
#pragma unroll
			for (int e = 0; e < N; ++e) v.v[e] = buf[red_short_pad<T>(m * N + e)];
			store_pack(dx + e0 + (i64)m * N, v);
		}
		for (int i = np * N + tid; i < ne; i += RED_BLOCK) dx[e0 + i] = buf[red_short_pad<T>(i)];
		// The next chunk's copy must not overwrite what is still stored.
		__syncthreads();
	}
}

// RedShortVec is what an outer-form thread moves of a row: N adjacent
// slices, 16 bytes of 4- and 8-byte types, 8 bytes (4 slices) of 16-bit
// ones, whose 8 slices a thread would otherwise hold the statistics and
// contexts of (more registers than two blocks an SM allow).
template <typename T, bool Narrow = sizeof(T) == 2> struct RedShortVec {
	static constexpr int N = 16 / sizeof(T);
	T v[N];
	__device__ __forceinline__ void load(const T* p) {
		const uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
		memcpy(v, &r, 16);
	}
	__device__ __forceinline__ void store(T* p) const {
		Pack<T> q;
		memcpy(q.v, v, 16);
		store_pack(p, q);
	}
};
template <typename T> struct RedShortVec<T, true> {
	static constexpr int N = 4;
	T v[N];
	__device__ __forceinline__ void load(const T* p) {
		const uint2 r = __ldg(reinterpret_cast<const uint2*>(p));
		memcpy(v, &r, 8);
	}
	__device__ __forceinline__ void store(T* p) const {
		unsigned w[2];
		pack_words<T, 2>(w, v);
		st_global_v2(p, w);
	}
};

// red_short_outer: an outer axis (x and dx seen as [O, k, I], dy and y as
// [O, I], I a multiple of RedShortVec's N). A thread owns a vector of N
// adjacent slices: it loads the vector's k rows (all issued before any is
// used), accumulates each slice's statistics in position order, forms the
// slices' contexts and stores the k rows of dx, from the first
// RED_SHORT_KREG rows it kept and the others read again. Layout: k,
// fpacks = O*I/N (the vectors), fip = I/N, fmagic[0] and fshift[0] divide
// by fip. x and dx are 16-byte aligned (the launcher checks); dy and y are
// read as one vector where they are aligned to one, else element by
// element.
template <typename T, typename Op>
__device__ __forceinline__ void red_short_outer(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, const ReduceLayout& L) {
	typedef typename OpMath<T>::type M;
	typedef RedShortVec<T> V;
	constexpr int N = V::N;
	const int k = (int)L.k;
	const i64 rs = L.fip * N;  // I: the row stride of x and dx
	const bool gvec = ((size_t)dy % sizeof(V)) == 0 && (!Op::needs_y || ((size_t)y % sizeof(V)) == 0);
	for (i64 p = (i64)blockIdx.x * RED_BLOCK + threadIdx.x; p < L.fpacks; p += (i64)gridDim.x * RED_BLOCK) {
		const i64 o = bc_div(p, L.fmagic[0], L.fshift[0]);
		const i64 q = (p - o * L.fip) * N;
		const T* xp = x + (o * L.k * rs + q);  // row 0 of the vector
		T* dp = dx + (o * L.k * rs + q);
		const i64 so = o * rs + q;  // its slices in dy and y
		V xv[RED_SHORT_KREG], xr[RED_SHORT_KMAX - RED_SHORT_KREG];
		if (Op::needs_x) {
#pragma unroll
			for (int j = 0; j < RED_SHORT_KMAX; ++j) {
				if (j < k) {
					if (j < RED_SHORT_KREG) {
						xv[j].load(xp + j * rs);
					} else {
						xr[j - RED_SHORT_KREG].load(xp + j * rs);
					}
				}
			}
		}
		M g[N], yv[N];
		if (gvec) {
			V gp, yp;
			gp.load(dy + so);
			if (Op::needs_y) yp.load(y + so);
#pragma unroll
			for (int e = 0; e < N; ++e) {
				g[e] = to_op(gp.v[e]);
				yv[e] = Op::needs_y ? to_op(yp.v[e]) : M(0);
			}
		} else {
#pragma unroll
			for (int e = 0; e < N; ++e) {
				g[e] = to_op(dy[so + e]);
				yv[e] = Op::needs_y ? to_op(y[so + e]) : M(0);
			}
		}
		RedAcc<M> acc[N];
#pragma unroll
		for (int e = 0; e < N; ++e) acc[e] = Op::template init<M>();
		if (Op::needs_x && Op::stats) {
#pragma unroll
			for (int j = 0; j < RED_SHORT_KMAX; ++j) {
				if (j < k) {
					const V& v = j < RED_SHORT_KREG ? xv[j] : xr[j - RED_SHORT_KREG];
#pragma unroll
					for (int e = 0; e < N; ++e) Op::accum(acc[e], to_op(v.v[e]), yv[e]);
				}
			}
		}
		RedCtx<M> c[N];
#pragma unroll
		for (int e = 0; e < N; ++e) c[e] = Op::template slice<M>(g[e], yv[e], acc[e], L.scale, L.k);
#pragma unroll
		for (int j = 0; j < RED_SHORT_KMAX; ++j) {
			if (j < k) {
				V v, out;
				if (Op::needs_x) {
					if (j < RED_SHORT_KREG) {
						v = xv[j];
					} else {
						v.load(xp + j * rs);
					}
				}
#pragma unroll
				for (int e = 0; e < N; ++e) out.v[e] = from_op<T>(Op::elem(c[e], Op::needs_x ? to_op(v.v[e]) : M(0)));
				out.store(dp + j * rs);
			}
		}
	}
}

// reduce_short: the short mapping, the inner form for L.mapping == RED_ROW,
// else the outer form.
template <typename T, typename Op>
__device__ __forceinline__ void reduce_short(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, void* __restrict__, const ReduceLayout& L) {
	if (L.mapping == RED_ROW) {
		red_short_inner<T, Op>(x, y, dy, dx, L);
	} else {
		red_short_outer<T, Op>(x, y, dy, dx, L);
	}
}
