// Col access probe (bench/probes/README.md): a 4096x4096 16-bit pass dx =
// f(dy) along axis 0 in the col scan's shape, without its look-back: a
// block of 8 warps takes W = 32P slices (P adjacent ones per lane: 2, 4 or
// 8 bytes a lane, 64, 128 or 256 a warp row) by 8*items rows, each thread
// loads its items rows, then stores them; "scan" keeps a running sum down
// each lane's run. Every trial starts behind a write of 256 MiB; medians
// of 10 trials.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int R = 4096, C = 4096;

template <int P> struct W_;
template <> struct W_<1> { typedef unsigned short t; };
template <> struct W_<2> { typedef unsigned t; };
template <> struct W_<4> { typedef uint2 t; };

__device__ __forceinline__ float lo(unsigned short v) { return __uint_as_float((unsigned)v << 16); }
__device__ __forceinline__ unsigned short hi(float f) { return (unsigned short)(__float_as_uint(f) >> 16); }

template <int P, int ITEMS, bool SCAN>
__global__ void __launch_bounds__(256) colk(const unsigned short* __restrict__ dy, unsigned short* __restrict__ dx) {
	typedef typename W_<P>::t Wt;
	constexpr int Wd = 32 * P;
	const int units = C / Wd;
	const int unit = blockIdx.x % units, chunk = blockIdx.x / units;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const long r0 = (long)chunk * 8 * ITEMS + warp * ITEMS;
	const long c0 = (long)unit * Wd + lane * P;
	const Wt* p = reinterpret_cast<const Wt*>(dy + r0 * C + c0);
	Wt* q = reinterpret_cast<Wt*>(dx + r0 * C + c0);
	constexpr long st = C / P;
	Wt v[ITEMS];
#pragma unroll
	for (int i = 0; i < ITEMS; ++i) v[i] = __ldg(p + i * st);
	if (SCAN) {
		float acc[P];
#pragma unroll
		for (int e = 0; e < P; ++e) acc[e] = 0.f;
#pragma unroll
		for (int i = ITEMS - 1; i >= 0; --i) {
			unsigned short h[P];
			memcpy(h, &v[i], sizeof(Wt));
#pragma unroll
			for (int e = 0; e < P; ++e) { acc[e] += lo(h[e]); h[e] = hi(acc[e]); }
			memcpy(&v[i], h, sizeof(Wt));
		}
	} else {
#pragma unroll
		for (int i = 0; i < ITEMS; ++i) {
			unsigned short h[P];
			memcpy(h, &v[i], sizeof(Wt));
#pragma unroll
			for (int e = 0; e < P; ++e) h[e] ^= 1;
			memcpy(&v[i], h, sizeof(Wt));
		}
	}
	__syncthreads();
#pragma unroll
	for (int i = 0; i < ITEMS; ++i) q[i * st] = v[i];
}

__global__ void flush(uint4* p, long n) {
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) p[i] = make_uint4(i, 1, 2, 3);
}

template <int P, int ITEMS, bool SCAN>
void run(const unsigned short* dy, unsigned short* dx, uint4* sc, long scn) {
	cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
	const int blocks = (C / (32 * P)) * (R / (8 * ITEMS));
	std::vector<float> t;
	for (int rep = 0; rep < 12; ++rep) {
		flush<<<1024, 256>>>(sc, scn);
		CK(cudaEventRecord(e0));
		colk<P, ITEMS, SCAN><<<blocks, 256>>>(dy, dx);
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		float a; cudaEventElapsedTime(&a, e0, e1);
		if (rep >= 2) t.push_back(a * 1000);
	}
	std::sort(t.begin(), t.end());
	cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, colk<P, ITEMS, SCAN>);
	int occ; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, colk<P, ITEMS, SCAN>, 256, 0);
	printf("P=%d items=%2d %s regs %3d occ %d blocks %5d: %6.1f us (%.0f GB/s)\n", P, ITEMS, SCAN ? "scan" : "copy", fa.numRegs, occ, blocks,
			t[t.size() / 2], 2.0 * R * C * 2 / (t[t.size() / 2] * 1e3));
}

int main() {
	const long scn = (256L << 20) / 16;
	uint4* sc; unsigned short *dy, *dx;
	CK(cudaMalloc(&sc, scn * 16));
	CK(cudaMalloc(&dy, (long)R * C * 2)); CK(cudaMalloc(&dx, (long)R * C * 2));
	CK(cudaMemset(dy, 0x3c, (long)R * C * 2));
	run<1, 32, false>(dy, dx, sc, scn);
	run<1, 32, true>(dy, dx, sc, scn);
	run<2, 16, false>(dy, dx, sc, scn);
	run<2, 16, true>(dy, dx, sc, scn);
	run<2, 32, false>(dy, dx, sc, scn);
	run<2, 32, true>(dy, dx, sc, scn);
	run<4, 8, false>(dy, dx, sc, scn);
	run<4, 16, false>(dy, dx, sc, scn);
	run<4, 16, true>(dy, dx, sc, scn);
	run<1, 64, false>(dy, dx, sc, scn);
	return 0;
}
