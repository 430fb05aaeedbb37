// What the probes share: an error check, the write of a 256 MiB scratch
// buffer that every trial starts behind (as the bench's timed runs do),
// and a timer of one launch behind it.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void flush(uint4* p, long n) {
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) p[i] = make_uint4(i, 1, 2, 3);
}

// time_trials times launch() reps times, each behind a write of the
// scratch buffer sc (n 16-byte words); it returns the times of all but the
// first skip trials in microseconds, sorted. Events bracket GPU time alone.
template <typename F>
std::vector<float> time_trials(F launch, uint4* sc, long n, int reps, int skip) {
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	std::vector<float> t;
	for (int rep = 0; rep < reps; ++rep) {
		flush<<<1024, 256>>>(sc, n);
		CK(cudaEventRecord(e0));
		launch();
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		float a;
		CK(cudaEventElapsedTime(&a, e0, e1));
		if (rep >= skip) t.push_back(a * 1000);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	std::sort(t.begin(), t.end());
	return t;
}

// ColBufs: the col probes' scratch buffer and a 16-bit dy (filled) and dx
// of n elements each.
struct ColBufs {
	long scn;
	uint4* sc;
	unsigned short *dy, *dx;
};
inline ColBufs col_bufs(long n) {
	ColBufs b;
	b.scn = (256L << 20) / 16;
	CK(cudaMalloc(&b.sc, b.scn * 16));
	CK(cudaMalloc(&b.dy, n * 2));
	CK(cudaMalloc(&b.dx, n * 2));
	CK(cudaMemset(b.dy, 0x3c, n * 2));
	return b;
}

// report prints one line: kernel k's registers and blocks per SM (256
// threads), its grid, and the median and fastest of the sorted times t,
// with GB/s for the bytes it moves.
template <typename K>
void report(const char* name, K k, int blocks, const std::vector<float>& t, double bytes) {
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, k));
	int occ;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, 0));
	const float med = t[t.size() / 2];
	printf("%-28s regs %3d occ %d blocks %5d: %6.1f us min %6.1f (%.0f GB/s)\n", name, fa.numRegs, occ, blocks, med, t[0],
			bytes / (med * 1e3));
}
