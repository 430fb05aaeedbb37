// L2 reuse probe (bench/probes/README.md): how fast is a second pass over
// a buffer (read a tile, write it to another buffer) after a first pass
// read it, against a cold one, for buffers of 8-48 MiB; in either order;
// with the first pass's loads marked evict_last; and with each tile read
// the second time on the SM that read it the first time (per-SM tile
// lists built on the host, then stolen from when a list runs dry). Every
// trial starts behind a write of 256 MiB, as the bench's timed runs do;
// events bracket GPU time alone; medians of 7 trials.
#include "probe.cuh"

__device__ __forceinline__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned nsmid() { unsigned r; asm volatile("mov.u32 %0, %%nsmid;" : "=r"(r)); return r; }

constexpr int TB = 256;

__device__ __forceinline__ uint4 ld_last(const uint4* p, unsigned long long pol) {
	uint4 r;
	asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
	return r;
}

// pass 1: block per tile (grid-stride), reads its tile, writes a sum, records the SM.
template <int Hint>
__global__ void __launch_bounds__(TB) stats(const uint4* __restrict__ x, long tiles, int per, unsigned* owner, unsigned* sums) {
	unsigned long long pol = 0;
	if (Hint) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
	for (long t = blockIdx.x; t < tiles; t += gridDim.x) {
		const uint4* p = x + t * per;
		unsigned s = 0;
#pragma unroll 8
		for (int i = threadIdx.x; i < per; i += TB) {
			uint4 v = Hint ? ld_last(p + i, pol) : __ldg(p + i);
			s += v.x ^ v.y ^ v.z ^ v.w;
		}
		if (threadIdx.x == 0) owner[t] = smid();
		atomicAdd(sums + (t & 1023), s);
	}
}

// copy_tile: the second pass's work on tile t (read it, write it elsewhere).
__device__ __forceinline__ void copy_tile(const uint4* __restrict__ x, uint4* __restrict__ out, long t, int per) {
	const uint4* p = x + t * per;
	uint4* o = out + t * per;
#pragma unroll 8
	for (int i = threadIdx.x; i < per; i += TB) {
		uint4 v = __ldg(p + i);
		v.x += 1; v.y += 1; v.z += 1; v.w += 1;
		o[i] = v;
	}
}

// pass 2, plain: tile = order(b)
__global__ void __launch_bounds__(TB) apply(const uint4* __restrict__ x, uint4* __restrict__ out, long tiles, int per, int rev) {
	for (long b = blockIdx.x; b < tiles; b += gridDim.x) {
		long t = rev ? tiles - 1 - b : b;
		copy_tile(x, out, t, per);
	}
}

// pass 2, affine: each SM takes tiles from its own list (those it read in pass 1), newest first, then steals.
__global__ void __launch_bounds__(TB) apply_aff(const uint4* __restrict__ x, uint4* __restrict__ out, int per,
		const int* __restrict__ lstart, const int* __restrict__ lcount, const int* __restrict__ list, int* ctr, int nq) {
	__shared__ long tk;
	const int home = (int)smid();
	int q = home % nq, seen = 0;
	for (;;) {
		if (threadIdx.x < 32) {
			const int lane = threadIdx.x;
			long got = -1;
			if (lane == 0) {
				int j = atomicAdd(ctr + q, 1);
				if (j < lcount[q]) got = list[lstart[q] + lcount[q] - 1 - j];
			}
			got = __shfl_sync(0xffffffffu, got, 0);
			while (got < 0 && seen < nq) {
				// steal: lanes look at 32 queues at once
				const int qq = (home + seen + lane) % nq;
				const bool ok = seen + lane < nq && *(volatile int*)(ctr + qq) < lcount[qq];
				const unsigned m = __ballot_sync(0xffffffffu, ok);
				if (m == 0) { seen += 32; continue; }
				const int src = __ffs(m) - 1;
				if (lane == src) {
					int j = atomicAdd(ctr + qq, 1);
					if (j < lcount[qq]) got = list[lstart[qq] + lcount[qq] - 1 - j];
				}
				got = __shfl_sync(0xffffffffu, got, src);
			}
			if (lane == 0) tk = got;
		}
		__syncthreads();
		long t = tk;
		__syncthreads();
		if (t < 0) break;
		copy_tile(x, out, t, per);
	}
}

int main() {
	int nsm; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
	int l2; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	printf("SMs %d, L2 %d MiB\n", nsm, l2 >> 20);
	const long scratch = (256L << 20) / 16;
	uint4 *sc, *x, *out; unsigned *owner, *sums;
	CK(cudaMalloc(&sc, scratch * 16));
	const long maxb = 48L << 20;
	CK(cudaMalloc(&x, maxb)); CK(cudaMalloc(&out, maxb));
	CK(cudaMemset(x, 0x3c, maxb));
	CK(cudaMalloc(&owner, 1 << 20)); CK(cudaMalloc(&sums, 4096 * 4));
	int *lstart, *lcount, *list, *ctr;
	CK(cudaMalloc(&lstart, 4096 * 4)); CK(cudaMalloc(&lcount, 4096 * 4)); CK(cudaMalloc(&list, 1 << 20)); CK(cudaMalloc(&ctr, 4096 * 4));
	cudaEvent_t e0, e1, e2; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventCreate(&e2);
	int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, apply, TB, 0));
	const int grid = nsm * occ;
	printf("blocks per SM %d\n", occ);
	const long sizes[] = {8L << 20, 16L << 20, 24L << 20, 32L << 20, 40L << 20, 48L << 20};
	const int tilekb[] = {32, 64};
	printf("%6s %5s %-10s %8s %8s\n", "MiB", "tileK", "mode", "pass1us", "pass2us");
	for (long bytes : sizes) for (int tk : tilekb) for (int mode = 0; mode < 6; ++mode) {
		const int per = tk * 1024 / 16;
		const long tiles = bytes / 16 / per;
		std::vector<float> t1, t2;
		for (int rep = 0; rep < 9; ++rep) {
			flush<<<1024, 256>>>(sc, scratch);
			CK(cudaEventRecord(e0));
			if (mode != 0) {
				if (mode == 5) stats<1><<<grid, TB>>>(x, tiles, per, owner, sums);
				else stats<0><<<grid, TB>>>(x, tiles, per, owner, sums);
			}
			CK(cudaEventRecord(e1));
			if (mode == 3 || mode == 4) {
				// build per-SM lists from the owners (host side; not timed... the event pair brackets GPU time only)
				CK(cudaEventSynchronize(e1));
				std::vector<unsigned> own(tiles); CK(cudaMemcpy(own.data(), owner, tiles * 4, cudaMemcpyDeviceToHost));
				int nq = 0; for (unsigned o : own) nq = std::max(nq, (int)o + 1);
				nq = std::max(nq, 1);
				std::vector<int> cnt(nq, 0), st(nq, 0), lst(tiles);
				for (unsigned o : own) cnt[o]++;
				for (int i = 1; i < nq; ++i) st[i] = st[i - 1] + cnt[i - 1];
				std::vector<int> fill(st);
				for (long t = 0; t < tiles; ++t) lst[fill[own[t]]++] = (int)t;
				if (mode == 4) { // control: same lists, rotated by half the SMs (other partition, maybe)
					std::vector<int> c2(nq), s2(nq);
					for (int i = 0; i < nq; ++i) { c2[i] = cnt[(i + nq / 2) % nq]; s2[i] = st[(i + nq / 2) % nq]; }
					cnt = c2; st = s2;
				}
				CK(cudaMemcpy(lstart, st.data(), nq * 4, cudaMemcpyHostToDevice));
				CK(cudaMemcpy(lcount, cnt.data(), nq * 4, cudaMemcpyHostToDevice));
				CK(cudaMemcpy(list, lst.data(), tiles * 4, cudaMemcpyHostToDevice));
				CK(cudaMemset(ctr, 0, nq * 4));
				CK(cudaEventRecord(e1));
				apply_aff<<<grid, TB>>>(x, out, per, lstart, lcount, list, ctr, nq);
			} else {
				apply<<<grid, TB>>>(x, out, tiles, per, mode == 2 || mode == 5);
			}
			CK(cudaGetLastError());
			CK(cudaEventRecord(e2));
			CK(cudaEventSynchronize(e2));
			float a, b; cudaEventElapsedTime(&a, e0, e1); cudaEventElapsedTime(&b, e1, e2);
			if (rep >= 2) { t1.push_back(a * 1000); t2.push_back(b * 1000); }
		}
		std::sort(t1.begin(), t1.end()); std::sort(t2.begin(), t2.end());
		const char* names[] = {"cold", "fwd", "rev", "affine", "aff-rot", "rev+last"};
		printf("%6ld %5d %-10s %8.1f %8.1f\n", bytes >> 20, tk, names[mode], mode == 3 || mode == 4 ? 0.f : t1[t1.size() / 2], t2[t2.size() / 2]);
	}
	return 0;
}
