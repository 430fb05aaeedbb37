// Strip scan probe (bench/probes/README.md): cummax/cummin backward along
// axis 0 of a 4096x4096 bf16 tensor with one block per strip of W adjacent
// slices walking the whole axis, no look-back: a forward pass over x that
// keeps one bit per element (is it where the running extremum was taken)
// in shared memory, then a reverse pass over dy that hands each record the
// sum of dy up to the next one. Stages of R rows move through shared memory
// with 16-byte accesses, the next stage's loads in flight while one is
// worked. Checked against a CPU reference; every trial starts behind a
// write of 256 MiB; medians of 10 trials.
#include "probe.cuh"
#include <cmath>
#include <random>

constexpr int K = 4096, C = 4096;

__device__ __forceinline__ float bf(unsigned short v) { return __uint_as_float((unsigned)v << 16); }
__device__ __forceinline__ unsigned short to_bf(float f) {
	unsigned u = __float_as_uint(f);
	if (f != f) return 0x7fc0;
	u += 0x7fff + ((u >> 16) & 1);
	return (unsigned short)(u >> 16);
}
// E = +1: cummax, -1: cummin. ext folds two states (NaN wins).
template <int E> __device__ __forceinline__ float ext(float a, float b) {
	if (a != a || b != b) return __int_as_float(0x7fffffff);
	return E > 0 ? fmaxf(a, b) : fminf(a, b);
}
template <int E> __device__ __forceinline__ bool takes(float x, float m) {
	return x != x || (m == m && (E > 0 ? x >= m : x <= m));
}

// NT threads, W slices a block, stages of R = 32 * NT / W rows (each thread
// of the compute layout owns 32 rows of one slice, one bitmap word).
template <int E, int W, int NT>
__global__ void __launch_bounds__(NT) strip(const unsigned short* __restrict__ x, const unsigned short* __restrict__ dy,
                                            unsigned short* __restrict__ dx) {
	constexpr int Q = NT / W, R = 32 * Q, CPR = W / 8, LD = R * CPR / NT, STAGES = K / R;
	static_assert(LD * NT == R * CPR, "loads");
	extern __shared__ __align__(16) unsigned char sm[];
	unsigned short* buf = reinterpret_cast<unsigned short*>(sm);              // R x W
	unsigned* bits = reinterpret_cast<unsigned*>(sm + R * W * 2);              // (K/32) x W
	float* agg = reinterpret_cast<float*>(sm + R * W * 2 + K / 32 * W * 4);   // Q x W
	unsigned* has = reinterpret_cast<unsigned*>(agg + Q * W);                  // Q x W
	float* carry = reinterpret_cast<float*>(has + Q * W);                      // W
	const int t = threadIdx.x, s = t % W, q = t / W;
	const long col0 = (long)blockIdx.x * W;
	uint4 pf[LD];
	auto load = [&](const unsigned short* p, int stage) {
#pragma unroll
		for (int i = 0; i < LD; ++i) {
			const int c = t + i * NT, r = c / CPR, ch = c % CPR;
			pf[i] = __ldg(reinterpret_cast<const uint4*>(p + (long)(stage * R + r) * C + col0 + ch * 8));
		}
	};
	auto park = [&]() {
#pragma unroll
		for (int i = 0; i < LD; ++i) {
			const int c = t + i * NT, r = c / CPR, ch = c % CPR;
			*reinterpret_cast<uint4*>(buf + r * W + ch * 8) = pf[i];
		}
	};
	// Forward pass over x: records as bits.
	if (t < W) carry[t] = E > 0 ? -INFINITY : INFINITY;
	load(x, 0);
	for (int st = 0; st < STAGES; ++st) {
		park();
		__syncthreads();
		if (st + 1 < STAGES) load(x, st + 1);
		float v[32];
		float a = E > 0 ? -INFINITY : INFINITY;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			v[j] = bf(buf[(q * 32 + j) * W + s]);
			a = ext<E>(a, v[j]);
		}
		agg[q * W + s] = a;
		__syncthreads();
		float m = carry[s];
		for (int p = 0; p < q; ++p) m = ext<E>(m, agg[p * W + s]);
		unsigned b = 0;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			const bool tk = takes<E>(v[j], m);
			b |= (unsigned)tk << j;
			m = tk ? v[j] : m;
		}
		bits[(st * Q + q) * W + s] = b;
		__syncthreads();
		if (q == Q - 1) carry[s] = m;
	}
	__syncthreads();
	// Reverse pass over dy.
	if (t < W) carry[t] = 0.f;
	load(dy, STAGES - 1);
	for (int st = STAGES - 1; st >= 0; --st) {
		park();
		__syncthreads();
		if (st > 0) load(dy, st - 1);
		float g[32];
		const unsigned b = bits[(st * Q + q) * W + s];
		float hs = 0.f;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			g[j] = bf(buf[(q * 32 + j) * W + s]);
			hs += (b & ((2u << j) - 1)) == 0 ? g[j] : 0.f;
		}
		agg[q * W + s] = hs;
		has[q * W + s] = b != 0;
		__syncthreads();
		float acc = 0.f;
		int p = q + 1;
		for (; p < Q; ++p) {
			acc += agg[p * W + s];
			if (has[p * W + s]) break;
		}
		if (p == Q) acc += carry[s];
#pragma unroll
		for (int j = 31; j >= 0; --j) {
			acc += g[j];
			const bool r = (b >> j) & 1;
			buf[(q * 32 + j) * W + s] = r ? to_bf(acc) : 0;
			acc = r ? 0.f : acc;
		}
		__syncthreads();
		if (q == 0) carry[s] = acc;
#pragma unroll
		for (int i = 0; i < LD; ++i) {
			const int c = t + i * NT, r = c / CPR, ch = c % CPR;
			*reinterpret_cast<uint4*>(dx + (long)(st * R + r) * C + col0 + ch * 8) =
			    *reinterpret_cast<const uint4*>(buf + r * W + ch * 8);
		}
		__syncthreads();
	}
}


__device__ __forceinline__ void cp16(void* s, const void* g) {
	const unsigned a = (unsigned)__cvta_generic_to_shared(s);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// The same two passes with a ring of D stages filled by cp.async: the loads
// run D-1 stages ahead, across the turn from x to dy as well.
template <int E, int W, int NT, int D>
__global__ void __launch_bounds__(NT) ring(const unsigned short* __restrict__ x, const unsigned short* __restrict__ dy,
                                           unsigned short* __restrict__ dx) {
	constexpr int Q = NT / W, R = 32 * Q, CPR = W / 8, LD = R * CPR / NT, STAGES = K / R;
	static_assert(LD * NT == R * CPR, "loads");
	extern __shared__ __align__(16) unsigned char sm[];
	unsigned short* rb = reinterpret_cast<unsigned short*>(sm);                   // D x R x W
	unsigned* bits = reinterpret_cast<unsigned*>(sm + D * R * W * 2);             // (K/32) x W
	float* agg = reinterpret_cast<float*>(sm + D * R * W * 2 + K / 32 * W * 4);  // Q x W
	unsigned* has = reinterpret_cast<unsigned*>(agg + Q * W);                     // Q x W
	float* carry = reinterpret_cast<float*>(has + Q * W);                         // W
	const int t = threadIdx.x, s = t % W, q = t / W;
	const long col0 = (long)blockIdx.x * W;
	// step i < STAGES: x stage i; else dy stage 2*STAGES-1-i
	auto issue = [&](int i) {
		if (i < 2 * STAGES) {
			const unsigned short* p = i < STAGES ? x : dy;
			const int stage = i < STAGES ? i : 2 * STAGES - 1 - i;
			unsigned short* b = rb + (i % D) * R * W;
#pragma unroll
			for (int j = 0; j < LD; ++j) {
				const int c = t + j * NT, r = c / CPR, ch = c % CPR;
				cp16(b + r * W + ch * 8, p + (long)(stage * R + r) * C + col0 + ch * 8);
			}
		}
		cp_commit();
	};
	if (t < W) carry[t] = E > 0 ? -INFINITY : INFINITY;
#pragma unroll
	for (int i = 0; i < D - 1; ++i) issue(i);
	for (int st = 0; st < STAGES; ++st) {
		issue(st + D - 1);
		cp_wait<D - 1>();
		__syncthreads();
		const unsigned short* buf = rb + (st % D) * R * W;
		float v[32];
		float a = E > 0 ? -INFINITY : INFINITY;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			v[j] = bf(buf[(q * 32 + j) * W + s]);
			a = ext<E>(a, v[j]);
		}
		agg[q * W + s] = a;
		__syncthreads();
		float m = carry[s];
		for (int p = 0; p < q; ++p) m = ext<E>(m, agg[p * W + s]);
		unsigned b = 0;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			const bool tk = takes<E>(v[j], m);
			b |= (unsigned)tk << j;
			m = tk ? v[j] : m;
		}
		bits[(st * Q + q) * W + s] = b;
		__syncthreads();
		if (q == Q - 1) carry[s] = m;
	}
	__syncthreads();
	if (t < W) carry[t] = 0.f;
	for (int i = STAGES; i < 2 * STAGES; ++i) {
		const int st = 2 * STAGES - 1 - i;
		issue(i + D - 1);
		cp_wait<D - 1>();
		__syncthreads();
		unsigned short* buf = rb + (i % D) * R * W;
		float g[32];
		const unsigned b = bits[(st * Q + q) * W + s];
		float hs = 0.f;
#pragma unroll
		for (int j = 0; j < 32; ++j) {
			g[j] = bf(buf[(q * 32 + j) * W + s]);
			hs += (b & ((2u << j) - 1)) == 0 ? g[j] : 0.f;
		}
		agg[q * W + s] = hs;
		has[q * W + s] = b != 0;
		__syncthreads();
		float acc = 0.f;
		int p = q + 1;
		for (; p < Q; ++p) {
			acc += agg[p * W + s];
			if (has[p * W + s]) break;
		}
		if (p == Q) acc += carry[s];
#pragma unroll
		for (int j = 31; j >= 0; --j) {
			acc += g[j];
			const bool r = (b >> j) & 1;
			buf[(q * 32 + j) * W + s] = r ? to_bf(acc) : 0;
			acc = r ? 0.f : acc;
		}
		__syncthreads();
		if (q == 0) carry[s] = acc;
#pragma unroll
		for (int j = 0; j < LD; ++j) {
			const int c = t + j * NT, r = c / CPR, ch = c % CPR;
			*reinterpret_cast<uint4*>(dx + (long)(st * R + r) * C + col0 + ch * 8) =
			    *reinterpret_cast<const uint4*>(buf + r * W + ch * 8);
		}
		__syncthreads();
	}
}

static float hbf(unsigned short v) {
	unsigned u = (unsigned)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

template <int E>
static void reference(const std::vector<unsigned short>& x, const std::vector<unsigned short>& dy, std::vector<double>& out) {
	out.assign((size_t)K * C, 0.0);
	for (int c = 0; c < C; ++c) {
		std::vector<int> idx(K);
		double m = 0;
		int im = -1;
		for (int k = 0; k < K; ++k) {
			const double v = hbf(x[(size_t)k * C + c]);
			bool tk = im < 0 || std::isnan(v) || (!std::isnan(m) && (E > 0 ? v >= m : v <= m));
			if (tk) { m = v; im = k; }
			idx[k] = im;
		}
		for (int k = 0; k < K; ++k) out[(size_t)idx[k] * C + c] += hbf(dy[(size_t)k * C + c]);
	}
}

template <typename KF>
void check_report(const char* name, int W, int NT, int R, int D, KF k, int blocks, size_t smem, const std::vector<float>& t,
                  const ColBufs& b, const std::vector<double>& ref) {
	std::vector<unsigned short> got((size_t)K * C);
	CK(cudaMemcpy(got.data(), b.dx, got.size() * 2, cudaMemcpyDeviceToHost));
	long bad = 0;
	for (size_t i = 0; i < got.size(); ++i) {
		const double g = hbf(got[i]), r = ref[i];
		if (std::isnan(r) ? !std::isnan(g) : !(std::fabs(g - r) <= 1e-2 * std::fabs(r) + 1e-2)) {
			if (bad < 3) printf("  mismatch at %zu: got %g want %g\n", i, g, r);
			++bad;
		}
	}
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, k));
	int occ;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, NT, smem));
	const float med = t[t.size() / 2];
	printf("%-12s W=%3d NT=%4d R=%4d D=%d regs %3d occ %d blocks %4d smem %6zu: %6.1f us min %6.1f (%.0f GB/s) %s\n", name, W,
	       NT, R, D, fa.numRegs, occ, blocks, smem, med, t[0], 3.0 * K * C * 2 / (med * 1e3), bad ? "WRONG" : "ok");
}

template <int E, int W, int NT>
void run(const ColBufs& b, const unsigned short* dxs, const std::vector<double>& ref) {
	constexpr int Q = NT / W, R = 32 * Q;
	const size_t smem = R * W * 2 + K / 32 * W * 4 + 2 * Q * W * 4 + W * 4;
	auto k = strip<E, W, NT>;
	CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
	const int blocks = C / W;
	CK(cudaMemset(b.dx, 0xff, (size_t)K * C * 2));
	const std::vector<float> t = time_trials([&] { k<<<blocks, NT, smem>>>(dxs, b.dy, b.dx); }, b.sc, b.scn, 12, 2);
	check_report(E > 0 ? "reg cummax" : "reg cummin", W, NT, R, 1, k, blocks, smem, t, b, ref);
}

template <int E, int W, int NT, int D>
void runring(const ColBufs& b, const unsigned short* dxs, const std::vector<double>& ref) {
	constexpr int Q = NT / W, R = 32 * Q;
	const size_t smem = D * R * W * 2 + K / 32 * W * 4 + 2 * Q * W * 4 + W * 4;
	auto k = ring<E, W, NT, D>;
	CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
	const int blocks = C / W;
	CK(cudaMemset(b.dx, 0xff, (size_t)K * C * 2));
	const std::vector<float> t = time_trials([&] { k<<<blocks, NT, smem>>>(dxs, b.dy, b.dx); }, b.sc, b.scn, 12, 2);
	check_report(E > 0 ? "ring cummax" : "ring cummin", W, NT, R, D, k, blocks, smem, t, b, ref);
}

int main() {
	const ColBufs b = col_bufs((long)K * C);
	std::mt19937 rng(7);
	std::normal_distribution<float> nd;
	std::vector<unsigned short> x((size_t)K * C), dy((size_t)K * C);
	auto h = [](float f) { unsigned u; memcpy(&u, &f, 4); return (unsigned short)(u >> 16); };
	for (size_t i = 0; i < x.size(); ++i) {
		x[i] = h(nd(rng));
		dy[i] = h(nd(rng));
	}
	for (int c = 0; c < C; c += 97) x[(size_t)(rng() % K) * C + c] = 0x7fc0;  // NaN in some slices
	for (int c = 1; c < C; c += 89) x[(size_t)(rng() % K) * C + c] = 0x7f80;  // +inf
	unsigned short* dxs;
	CK(cudaMalloc(&dxs, x.size() * 2));
	CK(cudaMemcpy(dxs, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b.dy, dy.data(), dy.size() * 2, cudaMemcpyHostToDevice));
	// copy bandwidth in this run
	{
		void *a, *c;
		const size_t n = 512ul << 20;
		CK(cudaMalloc(&a, n));
		CK(cudaMalloc(&c, n));
		const std::vector<float> t = time_trials([&] { CK(cudaMemcpyAsync(c, a, n, cudaMemcpyDeviceToDevice)); }, b.sc, b.scn, 12, 2);
		printf("copy 512 MiB: %.1f us (%.0f GB/s read+write); 60%% of it for 3n bf16: %.1f us\n", t[t.size() / 2],
		       2.0 * n / (t[t.size() / 2] * 1e3), 3.0 * K * C * 2 / (0.6 * 2.0 * n / (t[t.size() / 2] * 1e3)) / 1e3);
		CK(cudaFree(a));
		CK(cudaFree(c));
	}
	std::vector<double> rmax, rmin;
	reference<1>(x, dy, rmax);
	reference<-1>(x, dy, rmin);
	run<1, 32, 512>(b, dxs, rmax);
	runring<1, 32, 512, 2>(b, dxs, rmax);
	runring<1, 32, 512, 3>(b, dxs, rmax);
	runring<1, 32, 512, 4>(b, dxs, rmax);
	runring<1, 32, 256, 4>(b, dxs, rmax);
	runring<1, 32, 256, 6>(b, dxs, rmax);
	runring<1, 32, 256, 8>(b, dxs, rmax);
	runring<1, 32, 1024, 2>(b, dxs, rmax);
	runring<1, 16, 256, 3>(b, dxs, rmax);
	runring<1, 16, 256, 4>(b, dxs, rmax);
	runring<1, 64, 512, 4>(b, dxs, rmax);
	runring<-1, 32, 512, 3>(b, dxs, rmin);
	runring<-1, 32, 256, 6>(b, dxs, rmin);
	return 0;
}
