#pragma once
// The col mapping's tile (red_col_tile): vector loads and stores across
// slices, the fold over a column of the block, and the totals of the one
// kernel (red_one_totals) and of the cluster kernel (red_cluster_totals).
#include "reduce_row.cuh"

// RedColVec<T, Op>::n (gen/zreduce_colvec.cuh, from the spec) is how many
// adjacent slices a col-mapping thread takes when x and dx are contiguous
// across them; else half of that where it is at least 2 (the launcher's
// cvec says which), else 1.
#include "zreduce_colvec.cuh"
// RedColUnroll is the col loops' unroll: 64 bytes of x in flight per thread
// with 16-byte accesses, and with narrower ones too.
template <typename T, int V> struct RedColUnroll { static constexpr int n = V * sizeof(T) >= 16 ? 4 : 8; };


// RedVec is V adjacent elements moved with one access (16, 8 or 4 bytes;
// V == 1 is a plain element).
template <typename T, int V> struct __align__(V * sizeof(T)) RedVec {
	T v[V];
};

template <typename T, int V> __device__ __forceinline__ RedVec<T, V> red_vload(const T* p) {
	RedVec<T, V> r;
	if (sizeof(r) == 16) {
		const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
		memcpy(&r, &u, sizeof(r));
	} else if (sizeof(r) == 8) {
		const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
		memcpy(&r, &u, sizeof(r));
	} else if (sizeof(r) == 4 && V == 2) {
		const unsigned u = __ldg(reinterpret_cast<const unsigned*>(p));
		memcpy(&r, &u, sizeof(r));
	} else {
		r.v[0] = p[0];
	}
	return r;
}

// red_vstore: one store of the V values (f64 as store_pack does).
template <typename T, int V> __device__ __forceinline__ void red_vstore(T* p, const RedVec<T, V>& r) {
	constexpr int B = sizeof(RedVec<T, V>);
	unsigned w[4];
	if (sizeof(T) < 8) pack_words<T, B / 4>(w, r.v);
	if (sizeof(T) == 8 && B == 16) {
		uint4 u;
		memcpy(&u, &r, 16);
		*reinterpret_cast<uint4*>(p) = u;
	} else if (B == 16) {
		st_global_v4(p, w);
	} else if (B == 8 && sizeof(T) < 8) {
		st_global_v2(p, w);
	} else if (B == 4 && V == 2) {
		*reinterpret_cast<unsigned*>(p) = w[0];
	} else {
		p[0] = r.v[0];
	}
}

// The one-pass col split (RED_ONE, the "one" kernel) keeps each thread's
// part of its tile in dynamic shared memory, RedVec entry (row, sl) at
// row*W + sl: chunk*W entries, which the launcher sizes. A thread only
// ever reads back its own entries.
extern __shared__ __align__(16) unsigned char red_dyn[];

template <typename T, int V> __device__ __forceinline__ RedVec<T, V>* red_one_buf() {
	return reinterpret_cast<RedVec<T, V>*>(red_dyn);
}

// red_ldcg reads a workspace entry another block wrote during this launch
// (at L2: a line this SM read earlier may be stale in L1).
template <typename M> __device__ __forceinline__ RedAcc<M> red_ldcg(const RedAcc<M>* p) {
	RedAcc<M> r;
	if (sizeof(RedAcc<M>) == 16) {
		const int4 u = __ldcg(reinterpret_cast<const int4*>(p));
		memcpy(&r, &u, 16);
	} else {
		const int2 u = __ldcg(reinterpret_cast<const int2*>(p));
		memcpy(&r, &u, 8);
	}
	return r;
}

// red_one_counters: after the partials and the totals' place (which the
// one kernel leaves unused), the workspace holds the ticket counter, then
// one arrival counter per slice block (the launcher zeroes them before
// each launch).
template <typename M> __device__ __forceinline__ int* red_one_counters(RedAcc<M>* ws, const ReduceLayout& L) {
	return reinterpret_cast<int*>(ws + L.slices * (L.nchunks + 1));
}

// red_col_fold combines each of the thread's V statistics over the H
// threads of its column of the block (shared memory, h in index order: a
// fixed order) and returns the result to all H of them (H <= HMax). Every
// thread of the block calls it. The statistics are in opmath A (RedWide's
// type), their entries in sm in M (red_narrow), combined in A.
template <typename Op, int V, int HMax, typename A, typename M>
__device__ __forceinline__ void red_col_fold(RedAcc<A> (&acc)[V], const ReduceLayout& L, int sl, RedAcc<M>* sm) {
	const int H = L.group;
	const int W = RED_BLOCK / H;
#pragma unroll
	for (int v = 0; v < V; ++v) RedPut<M>::put(sm[v * RED_BLOCK + threadIdx.x], acc[v]);
	__syncthreads();
#pragma unroll
	for (int v = 0; v < V; ++v) {
		RedAcc<A> tot = red_widen<A>(sm[v * RED_BLOCK + sl]);
		if (sizeof(A) == sizeof(M)) {
#pragma unroll
			for (int h = 1; h < HMax; ++h) {
				if (h < H) Op::combine(tot, red_widen<A>(sm[v * RED_BLOCK + h * W + sl]));
			}
		} else {
			// A wide fold unrolled keeps every entry's conversion live
			// at once (prod f32 stats: 120 registers instead of 81).
#pragma unroll 1
			for (int h = 1; h < H; ++h) Op::combine(tot, red_widen<A>(sm[v * RED_BLOCK + h * W + sl]));
		}
		acc[v] = tot;
	}
	__syncthreads();
}

// red_one_totals: the tile has stored its partials. It arrives at its
// slice block's counter and waits until every chunk has; then each tile
// of the slice block combines all the partials of its slices itself (thread
// kt folds chunks kt, kt+H, ..., then the H threads in index order: the
// same fixed order in every tile, so they agree bit for bit). acc returns
// the totals of the thread's V slices. Tiles take tickets in order, so a
// tile only waits on tiles that hold tickets, which are running: the
// launcher makes sure that nchunks blocks fit on the GPU at once.
template <typename Op, int V, typename A, typename M>
__device__ __forceinline__ void red_one_totals(RedAcc<A> (&acc)[V], RedAcc<M>* __restrict__ ws, const ReduceLayout& L,
		i64 st, i64 s0, bool active, int sl, int kt, RedAcc<M>* sm) {
	const int H = L.group;
	int* arrive = red_one_counters(ws, L) + 1 + st;
	const int nc = (int)L.nchunks;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) {
		atomicAdd(arrive, 1);
		while (*reinterpret_cast<volatile int*>(arrive) < nc) __nanosleep(32);
		__threadfence();
	}
	__syncthreads();
#pragma unroll
	for (int v = 0; v < V; ++v) acc[v] = Op::template init<A>();
	if (active) {
		for (int c = kt; c < nc; c += H) {
#pragma unroll
			for (int v = 0; v < V; ++v) Op::combine(acc[v], red_widen<A>(red_ldcg(ws + (i64)c * L.slices + s0 + v)));
		}
	}
	red_col_fold<Op, V, 8>(acc, L, sl, sm);
}

// The cluster kernel (RED_CLUSTER, compute capability 9.0): a split col
// slice block is cut into RED_CLUSTER_BLOCKS chunks, and its tiles are the
// blocks of one thread block cluster (the kernel declares the cluster
// size, so a plain launch of tiles blocks groups them: block b is chunk
// b % RED_CLUSTER_BLOCKS of slice block b / RED_CLUSTER_BLOCKS, and its rank in the
// cluster). A cluster's blocks run at the same time, so a tile waits only
// for the other chunks of its slice block, all of them running, and the
// partials never leave the SMs: each block publishes its own in shared
// memory, and after a cluster barrier every block reads all of them
// through distributed shared memory and combines them in rank order (the
// same bits in each). No workspace, no second launch.
#if __CUDA_ARCH__ >= 900
// red_dsmem reads the entry at p (this block's shared memory) in the block
// of cluster rank r.
__device__ __forceinline__ unsigned red_dsmem_addr(const void* p, unsigned r) {
	unsigned a;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"((unsigned)__cvta_generic_to_shared(p)), "r"(r));
	return a;
}
__device__ __forceinline__ RedAcc<float> red_dsmem(const RedAcc<float>* p, unsigned r) {
	float a;
	unsigned z;
	asm volatile("ld.shared::cluster.v2.b32 {%0, %1}, [%2];" : "=f"(a), "=r"(z) : "r"(red_dsmem_addr(p, r)) : "memory");
	return red_acc(a, z);
}
__device__ __forceinline__ RedAcc<double> red_dsmem(const RedAcc<double>* p, unsigned r) {
	const unsigned q = red_dsmem_addr(p, r);
	double a;
	unsigned z;
	asm volatile("ld.shared::cluster.f64 %0, [%2];\n\tld.shared::cluster.b32 %1, [%2+8];" : "=d"(a), "=r"(z) : "r"(q) : "memory");
	return red_acc(a, z);
}
// barrier.cluster.arrive releases and .wait acquires (PTX ISA 7.8's only
// forms): what a block's threads stored to shared memory before arriving
// is visible to every thread of the cluster after its wait.
__device__ __forceinline__ void red_cluster_arrive() { asm volatile("barrier.cluster.arrive;" ::: "memory"); }
__device__ __forceinline__ void red_cluster_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
#else
template <typename M> __device__ __forceinline__ RedAcc<M> red_dsmem(const RedAcc<M>* p, unsigned) { return *p; }
__device__ __forceinline__ void red_cluster_arrive() {}
__device__ __forceinline__ void red_cluster_wait() {}
#endif

// red_cluster_totals: the fold has left the block's partials of the
// thread's V slices in acc. Thread kt == 0 of each column publishes them
// in sm (free after the fold); after the cluster barrier acc becomes the
// totals, own keeps the block's partials (for fix_chunk). Every thread
// arrives at the cluster barrier a second time once its reads are done;
// the kernel waits on it before it exits, so that no block's shared
// memory goes while another block may still read it.
template <typename Op, int V, typename A, typename M>
__device__ __forceinline__ void red_cluster_totals(RedAcc<A> (&acc)[V], RedAcc<A> (&own)[V], bool active, int sl,
		int kt, RedAcc<M>* sm) {
#pragma unroll
	for (int v = 0; v < V; ++v) {
		own[v] = acc[v];
		if (kt == 0) sm[v * RED_BLOCK + sl] = red_narrow<M>(acc[v]);
	}
	red_cluster_arrive();
	red_cluster_wait();
	if (active) {
#pragma unroll
		for (int v = 0; v < V; ++v) {
			RedAcc<A> tot = red_widen<A>(red_dsmem(sm + v * RED_BLOCK + sl, 0));
#pragma unroll
			for (int r = 1; r < RED_CLUSTER_BLOCKS; ++r) Op::combine(tot, red_widen<A>(red_dsmem(sm + v * RED_BLOCK + sl, r)));
			acc[v] = tot;
		}
	}
	red_cluster_arrive();
}

// One col-mapping tile: a block of W = 256/H threads across slices, each
// taking V adjacent slices (V = L.cvec), by H threads along k. The V
// slices' statistics reduce over the H threads through shared memory
// (sm holds RED_BLOCK * RedColVec<T, Op>::n entries).
template <typename T, typename Op, int Pass, int V>
__device__ __forceinline__ void red_col_tile(const T* __restrict__ x, const T* __restrict__ y,
		const T* __restrict__ dy, T* __restrict__ dx, RedAcc<typename OpMath<T>::type>* __restrict__ ws,
		const ReduceLayout& L, i64 t, RedAcc<typename OpMath<T>::type>* sm) {
	typedef typename OpMath<T>::type M;
	// The statistics' opmath: RedWide's where the tile forms the partials
	// of one of several chunks of its slices or combines them (a fused
	// tile's H <= 8 threads each form a sequential run of a slice, whose
	// product does not drift; the apply pass reads red_total's totals).
	typedef typename RedWide<Op, M, Pass != RED_FUSED && Pass != RED_APPLY>::type A;
	constexpr bool prov = Op::provisional && Pass != RED_ONE;
	const int H = L.group;
	const int W = RED_BLOCK / H;
	const int sl = threadIdx.x % W, kt = threadIdx.x / W;
	const i64 st = L.nchunks == 1 ? t : t / L.nchunks;
	const i64 c = t - st * L.nchunks;
	const i64 s0 = (st * W + sl) * V;  // the launcher makes S a multiple of V
	const bool active = s0 < L.slices;
	const i64 j0 = c * L.chunk;
	i64 len = 0;  // (a cluster's last chunks may be empty: len <= 0)
	RedOff o = {0, 0, 0, 0};
	M g[V], yv[V];
#pragma unroll
	for (int v = 0; v < V; ++v) g[v] = yv[v] = M(0);
	if (active) {
		len = min(L.chunk, L.k - j0);
		o = red_offsets(s0, L);
#pragma unroll
		for (int v = 0; v < V; ++v) {
			g[v] = to_op(dy[o.dy + v * L.vstride[1]]);
			if (Op::needs_y) yv[v] = to_op(y[o.y + v * L.vstride[0]]);
		}
	}
	const i64 kx = L.kstride[0], kd = L.kstride[1];
	const T* xs = Op::needs_x ? x + o.x + j0 * kx : x;
	T* ds = dx + o.dx + j0 * kd;

	RedAcc<A> acc[V];
#pragma unroll
	for (int v = 0; v < V; ++v) acc[v] = Op::template init<A>();
	if (Op::stats && Pass != RED_APPLY && active) {
		RedCtx<M> pc[V];
#pragma unroll
		for (int v = 0; v < V; ++v) pc[v] = Op::template slice<M>(g[v], yv[v], Op::template assumed<M>(), L.scale, L.k);
		const T* xp = xs + kt * kx;
		T* dp = ds + kt * kd;
		RedVec<T, V>* bp = red_one_buf<T, V>() + kt * W + sl;
		auto step = [&](const RedVec<T, V>& xv, T* d, RedVec<T, V>* b) {
			RedVec<T, V> r;
#pragma unroll
			for (int v = 0; v < V; ++v) {
				const M xm = to_op(xv.v[v]);
				Op::accum(acc[v], A(xm), A(yv[v]));
				if (prov) r.v[v] = from_op<T>(Op::elem(pc[v], xm));
			}
			if (prov) red_vstore<T, V>(d, r);
			if (Pass == RED_ONE) *b = xv;
		};
		i64 n = red_steps(len, kt, H);
		if (Op::batch) {
			// A batch's loads all go out before its arithmetic: in a
			// plain unrolled loop prod's divisions (their slow-path
			// branches) hold the later loads back.
			// With wide statistics (RedWide) and 16-byte accesses a
			// batch is 2 (32 bytes in flight, as with narrower ones):
			// 4 would take prod f32's stats kernel to 81 registers, two
			// blocks an SM instead of three.
			constexpr int U = sizeof(A) > sizeof(M) && V * sizeof(T) >= 16 ? 2 : RedColUnroll<T, V>::n;
			for (; n >= U; n -= U, xp += U * H * kx, dp += U * H * kd, bp += U * H * W) {
				RedVec<T, V> xb[U];
#pragma unroll
				for (int u = 0; u < U; ++u) xb[u] = red_vload<T, V>(xp + u * H * kx);
#pragma unroll
				for (int u = 0; u < U; ++u) step(xb[u], dp + u * H * kd, bp + u * H * W);
			}
		}
#pragma unroll(RedColUnroll<T, V>::n)
		for (; n > 0; --n, xp += H * kx, dp += H * kd, bp += H * W) step(red_vload<T, V>(xp), dp, bp);
	}
	bool need = true;
	if (Op::stats && Pass == RED_APPLY) {
		if (active) {
#pragma unroll
			for (int v = 0; v < V; ++v) RedPut<A>::put(acc[v], ws[L.slices * L.nchunks + s0 + v]);  // red_total's
			if (prov) {
				// The apply pass of a provisional op mends: only a tile
				// whose provisional dx can be wrong is rewritten (its
				// partials are ws[c*S + s]).
				need = false;
#pragma unroll
				for (int v = 0; v < V; ++v) {
					need = need || (Op::fix(acc[v]) && Op::fix_chunk(acc[v], red_widen<A>(ws[c * L.slices + s0 + v])));
				}
			}
		}
	} else if (Op::stats) {
		red_col_fold<Op, V, Pass == RED_CLUSTER ? RED_CLUSTER_HMAX : 8>(acc, L, sl, sm);
		RedAcc<A> own[V];
		if (Pass == RED_CLUSTER) red_cluster_totals<Op, V>(acc, own, active, sl, kt, sm);
		if (Pass == RED_STATS || Pass == RED_ONE) {
			if (active && kt == 0) {
#pragma unroll
				for (int v = 0; v < V; ++v) RedPut<M>::put(ws[c * L.slices + s0 + v], acc[v]);
			}
			if (Pass == RED_STATS) return;
			red_one_totals<Op, V>(acc, ws, L, st, s0, active, sl, kt, sm);
		}
		if (prov) {
			// Only a chunk whose provisional dx can be wrong is rewritten
			// (red_total's test); with nchunks == 1 that is fix() alone.
			need = false;
#pragma unroll
			for (int v = 0; v < V; ++v) need = need || (Op::fix(acc[v]) && (Pass != RED_CLUSTER || Op::fix_chunk(acc[v], own[v])));
		}
	}
	if (!active || !need) return;
	RedCtx<M> cx[V];
#pragma unroll
	for (int v = 0; v < V; ++v) cx[v] = Op::template slice<M>(g[v], yv[v], red_narrow<M>(acc[v]), L.scale, L.k);
	const T* xp = xs + kt * kx;
	T* dp = ds + kt * kd;
	const RedVec<T, V>* bp = red_one_buf<T, V>() + kt * W + sl;
#pragma unroll(RedColUnroll<T, V>::n)
	for (i64 n = red_steps(len, kt, H); n > 0; --n, xp += H * kx, dp += H * kd, bp += H * W) {
		RedVec<T, V> xv, r;
		if (Op::needs_x) xv = Pass == RED_ONE ? *bp : red_vload<T, V>(xp);
#pragma unroll
		for (int v = 0; v < V; ++v) r.v[v] = from_op<T>(Op::elem(cx[v], Op::needs_x ? to_op(xv.v[v]) : M(0)));
		red_vstore<T, V>(dp, r);
	}
}
