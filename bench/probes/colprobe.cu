// Col access probe (bench/probes/README.md): a 4096x4096 16-bit pass dx =
// f(dy) along axis 0 in the col scan's shape, without its look-back: a
// block of 8 warps takes W = 32P slices (P adjacent ones per lane: 2, 4 or
// 8 bytes a lane, 64, 128 or 256 a warp row) by 8*items rows, each thread
// loads its items rows, then stores them; "scan" keeps a running sum down
// each lane's run. Every trial starts behind a write of 256 MiB; medians
// of 10 trials.
#include "probe.cuh"

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

template <int P, int ITEMS, bool SCAN>
void run(const ColBufs& b) {
	const int blocks = (C / (32 * P)) * (R / (8 * ITEMS));
	const std::vector<float> t = time_trials([&] { colk<P, ITEMS, SCAN><<<blocks, 256>>>(b.dy, b.dx); }, b.sc, b.scn, 12, 2);
	char name[64];
	snprintf(name, sizeof name, "P=%d items=%2d %s", P, ITEMS, SCAN ? "scan" : "copy");
	report(name, colk<P, ITEMS, SCAN>, blocks, t, 2.0 * R * C * 2);
}

int main() {
	const ColBufs b = col_bufs((long)R * C);
	run<1, 32, false>(b);
	run<1, 32, true>(b);
	run<2, 16, false>(b);
	run<2, 16, true>(b);
	run<2, 32, false>(b);
	run<2, 32, true>(b);
	run<4, 8, false>(b);
	run<4, 16, false>(b);
	run<4, 16, true>(b);
	run<1, 64, false>(b);
	return 0;
}
