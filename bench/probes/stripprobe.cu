// Strip probe (bench/probes/README.md): var's backward along axis 0 of a
// 4096x4096 tensor with each block holding whole slices on chip. A block
// takes a strip of adjacent slices (RB bytes of every row, all k rows),
// reads it once into shared memory or registers while it sums each slice,
// then writes dx from what it holds: one read of x, no workspace, no block
// waiting on another. Against a device-to-device copy of the same bytes.
// Every trial starts behind the 256 MiB write; medians of 17 trials.
#include "probe.cuh"
#include <cuda_bf16.h>
#include <cmath>

template <typename T> __device__ __forceinline__ float tof(T v);
template <> __device__ __forceinline__ float tof(float v) { return v; }
template <> __device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T fromf(float v);
template <> __device__ __forceinline__ float fromf(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 fromf(float v) { return __float2bfloat16_rn(v); }

template <typename T> union Vec {
	uint4 u;
	T e[16 / sizeof(T)];
};

// Mode 0: the strip in dynamic shared memory, loaded VPT vectors a thread
// at a time. Mode 1: in registers (VPT vectors a thread, all loaded at once).
// Mode 2: in shared memory through cp.async, the whole strip in flight at
// once, then summed from shared memory.
template <typename T, int RB, int NT, int Mode, int VPT>
__global__ void __launch_bounds__(NT, 1) strip(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx, int k,
		long I, float scale) {
	extern __shared__ uint4 buf[];
	constexpr int VR = RB / 16, EV = 16 / sizeof(T), W = RB / sizeof(T);
	__shared__ float part[NT / 32][W];
	__shared__ float mean[W], fac[W];
	const int t = threadIdx.x, lane = t & 31, warp = t >> 5, v = t % VR;
	const long col0 = (long)blockIdx.x * W;
	const uint4* xb = reinterpret_cast<const uint4*>(x + col0) + v;
	uint4* db = reinterpret_cast<uint4*>(dx + col0) + v;
	const long rs = I / EV;
	const int nv = k * VR;
	float acc[EV];
#pragma unroll
	for (int e = 0; e < EV; ++e) acc[e] = 0.f;
	Vec<T> r[VPT];
	if (Mode == 0) {
		for (int m0 = 0; m0 < nv; m0 += NT * VPT) {
#pragma unroll
			for (int i = 0; i < VPT; ++i) {
				const int m = m0 + t + NT * i;
				if (m < nv) r[i].u = __ldg(xb + (long)(m / VR) * rs);
			}
#pragma unroll
			for (int i = 0; i < VPT; ++i) {
				const int m = m0 + t + NT * i;
				if (m < nv) {
					buf[m] = r[i].u;
#pragma unroll
					for (int e = 0; e < EV; ++e) acc[e] += tof(r[i].e[e]);
				}
			}
		}
	} else if (Mode == 2) {
		for (int m = t; m < nv; m += NT) {
			const unsigned d = (unsigned)__cvta_generic_to_shared(buf + m);
			asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(xb + (long)(m / VR) * rs) : "memory");
		}
		asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
		for (int m = t; m < nv; m += NT) {
			Vec<T> a;
			a.u = buf[m];
#pragma unroll
			for (int e = 0; e < EV; ++e) acc[e] += tof(a.e[e]);
		}
	} else {
#pragma unroll
		for (int i = 0; i < VPT; ++i) {
			const int m = t + NT * i;
			if (m < nv) r[i].u = __ldg(xb + (long)(m / VR) * rs);
		}
#pragma unroll
		for (int i = 0; i < VPT; ++i) {
			const int m = t + NT * i;
			if (m < nv) {
#pragma unroll
				for (int e = 0; e < EV; ++e) acc[e] += tof(r[i].e[e]);
			}
		}
	}
#pragma unroll
	for (int o = VR; o < 32; o <<= 1) {
#pragma unroll
		for (int e = 0; e < EV; ++e) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], o);
	}
	if (lane < VR) {
#pragma unroll
		for (int e = 0; e < EV; ++e) part[warp][lane * EV + e] = acc[e];
	}
	__syncthreads();
	if (t < W) {
		float s = 0.f;
		for (int w = 0; w < NT / 32; ++w) s += part[w][t];
		mean[t] = s / (float)k;
		fac[t] = scale * tof(dy[col0 + t]);
	}
	__syncthreads();
	float mu[EV], f[EV];
#pragma unroll
	for (int e = 0; e < EV; ++e) {
		mu[e] = mean[v * EV + e];
		f[e] = fac[v * EV + e];
	}
	if (Mode != 1) {
#pragma unroll 8
		for (int m = t; m < nv; m += NT) {
			Vec<T> a, o;
			a.u = buf[m];
#pragma unroll
			for (int e = 0; e < EV; ++e) o.e[e] = fromf<T>(f[e] * (tof(a.e[e]) - mu[e]));
			db[(long)(m / VR) * rs] = o.u;
		}
	} else {
#pragma unroll
		for (int i = 0; i < VPT; ++i) {
			const int m = t + NT * i;
			if (m < nv) {
				Vec<T> o;
#pragma unroll
				for (int e = 0; e < EV; ++e) o.e[e] = fromf<T>(f[e] * (tof(r[i].e[e]) - mu[e]));
				db[(long)(m / VR) * rs] = o.u;
			}
		}
	}
}

template <typename T> float hval(long j, long i) { return (float)((j * 7 + i * 3) % 11) - 5.f + 0.25f * (float)(i % 4); }

template <typename T> struct Host;
template <> struct Host<float> {
	static float get(const float* p, long i) { return p[i]; }
	static float put(float v) { return v; }
};
template <> struct Host<__nv_bfloat16> {
	static float get(const __nv_bfloat16* p, long i) {
		unsigned short b;
		memcpy(&b, p + i, 2);
		unsigned u = (unsigned)b << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	static __nv_bfloat16 put(float v) { return __float2bfloat16_rn(v); }
};

template <typename T, int RB, int NT, int Mode, int VPT>
void run(const char* name, int k, long I, uint4* sc, long scn, double copy_us_per_byte) {
	const long n = (long)k * I;
	std::vector<T> hx(n), hdy(I);
	for (long j = 0; j < k; ++j)
		for (long i = 0; i < I; ++i) hx[j * I + i] = Host<T>::put(hval<T>(j, i));
	for (long i = 0; i < I; ++i) hdy[i] = Host<T>::put(1.f + 0.125f * (float)(i % 5));
	T *x, *dy, *dx;
	CK(cudaMalloc(&x, n * sizeof(T)));
	CK(cudaMalloc(&dy, I * sizeof(T)));
	CK(cudaMalloc(&dx, n * sizeof(T)));
	CK(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy, hdy.data(), I * sizeof(T), cudaMemcpyHostToDevice));
	CK(cudaMemset(dx, 0xff, n * sizeof(T)));
	const int W = RB / sizeof(T);
	const int blocks = (int)(I / W);
	const size_t smem = Mode != 1 ? (size_t)k * RB : 0;
	auto kern = strip<T, RB, NT, Mode, VPT>;
	CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
	const float scale = 2.f / (float)(k - 1);
	auto launch = [&] { kern<<<blocks, NT, smem>>>(x, dy, dx, k, I, scale); };
	std::vector<float> t = time_trials(launch, sc, scn, 20, 3);
	// Check against the host (float sums; tolerance for bf16 rounding).
	std::vector<T> hdx(n);
	CK(cudaMemcpy(hdx.data(), dx, n * sizeof(T), cudaMemcpyDeviceToHost));
	long bad = 0;
	for (long i = 0; i < I; ++i) {
		double s = 0;
		for (long j = 0; j < k; ++j) s += Host<T>::get(hx.data(), j * I + i);
		const double mu = s / k, g = Host<T>::get(hdy.data(), i);
		for (long j = 0; j < k; ++j) {
			const double want = scale * g * (Host<T>::get(hx.data(), j * I + i) - mu);
			const double got = Host<T>::get(hdx.data(), j * I + i);
			if (!(std::fabs(got - want) <= 1e-2 * std::fabs(want) + 1e-5)) ++bad;
		}
	}
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, kern));
	int occ;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, NT, smem));
	const double bytes = 2.0 * n * sizeof(T);
	const float med = t[t.size() / 2];
	printf("%-30s regs %3d occ %d blocks %5d smem %6zu: %6.1f us min %6.1f (%.0f GB/s, %.0f%% of copy) bad %ld\n", name,
			fa.numRegs, occ, blocks, smem, med, t[0], bytes / (med * 1e3), 100.0 * copy_us_per_byte * bytes / med, bad);
	CK(cudaFree(x));
	CK(cudaFree(dy));
	CK(cudaFree(dx));
}

int main() {
	int nsm;
	CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
	printf("SMs %d\n", nsm);
	const long scn = (256L << 20) / 16;
	uint4* sc;
	CK(cudaMalloc(&sc, scn * 16));
	// The copy line: a device-to-device copy of 64 MiB (read + write 128 MiB).
	const long cb = 64L << 20;
	void *a, *b;
	CK(cudaMalloc(&a, cb));
	CK(cudaMalloc(&b, cb));
	CK(cudaMemset(a, 1, cb));
	std::vector<float> tc = time_trials([&] { CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice)); }, sc, scn, 20, 3);
	const double cus = tc[tc.size() / 2];
	printf("copy 64 MiB: %.1f us (%.0f GB/s)\n", cus, 2.0 * cb / (cus * 1e3));
	const double per = cus / (2.0 * cb);
	const int k = 4096;
	const long I = 4096;
	typedef __nv_bfloat16 bf;
	run<bf, 32, 256, 0, 16>("bf16 smem 32B 256t b16", k, I, sc, scn, per);
	run<bf, 32, 256, 0, 8>("bf16 smem 32B 256t b8", k, I, sc, scn, per);
	run<bf, 32, 256, 2, 1>("bf16 cp.async 32B 256t", k, I, sc, scn, per);
	run<bf, 32, 512, 2, 1>("bf16 cp.async 32B 512t", k, I, sc, scn, per);
	run<bf, 32, 1024, 0, 8>("bf16 smem 32B 1024t", k, I, sc, scn, per);
	run<bf, 32, 512, 0, 8>("bf16 smem 32B 512t", k, I, sc, scn, per);
	run<bf, 32, 1024, 1, 8>("bf16 regs 32B 1024t", k, I, sc, scn, per);
	run<bf, 16, 512, 0, 8>("bf16 smem 16B 512t", k, I, sc, scn, per);
	run<bf, 16, 1024, 1, 4>("bf16 regs 16B 1024t", k, I, sc, scn, per);
	run<bf, 16, 512, 1, 8>("bf16 regs 16B 512t", k, I, sc, scn, per);
	run<float, 32, 256, 0, 16>("f32 smem 32B 256t b16", k, I, sc, scn, per);
	run<float, 32, 1024, 0, 8>("f32 smem 32B 1024t", k, I, sc, scn, per);
	run<float, 32, 256, 2, 1>("f32 cp.async 32B 256t", k, I, sc, scn, per);
	run<float, 32, 1024, 1, 8>("f32 regs 32B 1024t", k, I, sc, scn, per);
	run<float, 16, 512, 0, 8>("f32 smem 16B 512t", k, I, sc, scn, per);
	run<float, 16, 256, 0, 16>("f32 smem 16B 256t b16", k, I, sc, scn, per);
	run<bf, 16, 256, 0, 16>("bf16 smem 16B 256t b16", k, I, sc, scn, per);
	return 0;
}
