// Col staging probe (bench/probes/README.md): the 4096x4096 16-bit pass of
// colprobe.cu along axis 0, but a block of 256 threads takes S slices by
// (256/S)*ITEMS rows: loads and stores move 16 bytes a lane through shared
// memory (a block row is S*2 contiguous bytes), and each thread walks its
// own slice run of ITEMS rows there, keeping a running sum ("scan") or
// flipping a bit ("copy"). "reg" is colprobe's register form at 2 bytes a
// lane and 32 slices a block, for reference. Every trial starts behind a
// write of 256 MiB; medians (and minima) of 12 trials, two rounds.
#include "probe.cuh"

constexpr int R = 4096, C = 4096;

__device__ __forceinline__ float lo(unsigned short v) { return __uint_as_float((unsigned)v << 16); }
__device__ __forceinline__ unsigned short hi(float f) { return (unsigned short)(__float_as_uint(f) >> 16); }

template <int S, int ITEMS, bool SCAN>
__global__ void __launch_bounds__(256) stagek(const unsigned short* __restrict__ dy, unsigned short* __restrict__ dx) {
	constexpr int SPLIT = 256 / S, ROWS = SPLIT * ITEMS, VPR = S / 8, NV = ROWS * VPR / 256;
	__shared__ __align__(16) unsigned short sm[ROWS * S];
	const int units = C / S;
	const int unit = blockIdx.x % units, chunk = blockIdx.x / units;
	const long r0 = (long)chunk * ROWS, c0 = (long)unit * S;
	const int tid = threadIdx.x;
	uint4 v[NV];
#pragma unroll
	for (int i = 0; i < NV; ++i) {
		const int e = tid + i * 256, r = e / VPR, cv = e % VPR;
		v[i] = __ldg(reinterpret_cast<const uint4*>(dy + (r0 + r) * C + c0 + cv * 8));
	}
#pragma unroll
	for (int i = 0; i < NV; ++i) {
		const int e = tid + i * 256;
		reinterpret_cast<uint4*>(sm)[e] = v[i];
	}
	__syncthreads();
	const int j = tid % S, w = tid / S;
	if (SCAN) {
		float acc = 0.f;
#pragma unroll
		for (int i = ITEMS - 1; i >= 0; --i) {
			unsigned short& h = sm[(w * ITEMS + i) * S + j];
			acc += lo(h);
			h = hi(acc);
		}
	} else {
#pragma unroll
		for (int i = 0; i < ITEMS; ++i) sm[(w * ITEMS + i) * S + j] ^= 1;
	}
	__syncthreads();
#pragma unroll
	for (int i = 0; i < NV; ++i) {
		const int e = tid + i * 256, r = e / VPR, cv = e % VPR;
		reinterpret_cast<uint4*>(dx + (r0 + r) * C + c0 + cv * 8)[0] = reinterpret_cast<const uint4*>(sm)[e];
	}
}

// The register form of colprobe.cu at P = 1 (2 bytes a lane), for reference.
template <int ITEMS>
__global__ void __launch_bounds__(256) regk(const unsigned short* __restrict__ dy, unsigned short* __restrict__ dx) {
	const int units = C / 32;
	const int unit = blockIdx.x % units, chunk = blockIdx.x / units;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const long r0 = (long)chunk * 8 * ITEMS + warp * ITEMS, c0 = (long)unit * 32 + lane;
	unsigned short v[ITEMS];
#pragma unroll
	for (int i = 0; i < ITEMS; ++i) v[i] = __ldg(dy + (r0 + i) * C + c0);
	float acc = 0.f;
#pragma unroll
	for (int i = ITEMS - 1; i >= 0; --i) { acc += lo(v[i]); v[i] = hi(acc); }
	__syncthreads();
#pragma unroll
	for (int i = 0; i < ITEMS; ++i) dx[(r0 + i) * C + c0] = v[i];
}

template <typename K>
void timeit(const char* name, K k, int blocks, const ColBufs& b) {
	const std::vector<float> t = time_trials([&] { k<<<blocks, 256>>>(b.dy, b.dx); }, b.sc, b.scn, 14, 2);
	report(name, k, blocks, t, 2.0 * R * C * 2);
}

template <int S, int ITEMS, bool SCAN>
void staged(const ColBufs& b) {
	char name[64];
	snprintf(name, sizeof name, "staged S=%3d items=%2d %s", S, ITEMS, SCAN ? "scan" : "copy");
	timeit(name, stagek<S, ITEMS, SCAN>, (C / S) * (R / ((256 / S) * ITEMS)), b);
}

int main() {
	const ColBufs b = col_bufs((long)R * C);
	for (int round = 0; round < 2; ++round) {
		timeit("reg P=1 items=32 scan", regk<32>, (C / 32) * (R / 256), b);
		staged<32, 32, true>(b);
		staged<64, 32, true>(b);
		staged<128, 32, true>(b);
		staged<128, 16, true>(b);
		staged<256, 32, true>(b);
		staged<128, 32, false>(b);
	}
	return 0;
}
