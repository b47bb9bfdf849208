// Scratch: a first wgmma GEMM (sm_90a) to check descriptors and speed on a lent H100.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <type_traits>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "wgmma_ops.h"
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

__device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(saddr(dst)), "l"(src));
}
__device__ __forceinline__ uint64_t mkdesc(const void *p, unsigned lbo, unsigned sbo)
{
    uint64_t d = (uint64_t)((saddr(p) & 0x3FFFF) >> 4);
    d |= (uint64_t)((lbo >> 4) & 0x3FFF) << 16;
    d |= (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
    return d;
}

/* Tile of R rows x C 16-byte chunks, global row-major (chunks contiguous),
 * into core matrices: chunk (r, c) at ((c * (R/8) + r/8) * 128 + (r%8) * 16).
 * Two threads per row pair of chunks: 32-byte global segments, 4 shared wavefronts per warp. */
template <int R, int C, int THREADS>
__device__ __forceinline__ void load_cm(char *s, const char *g, long long ld_bytes)
{
    constexpr int N = R * C;
    static_assert(N % THREADS == 0, "");
#pragma unroll
    for (int i = 0; i < N / THREADS; i++) {
        const int v = i * THREADS + (int)threadIdx.x;
        const int h = v & 1, r = (v >> 1) % R, c = ((v >> 1) / R) * 2 + h;
        cp16(s + (c * (R / 8) + r / 8) * 128 + (r % 8) * 16, g + r * ld_bytes + c * 16);
    }
}

/* 128-byte swizzle: ROWS rows of exactly 128 bytes (8 chunks), chunk c of row r
 * stored at r*128 + ((c ^ (r % 8)) * 16). Eight threads per row: coalesced, conflict-free. */
template <int ROWS, int THREADS>
__device__ __forceinline__ void load_sw(char *s, const char *g, long long ld_bytes)
{
    constexpr int N = ROWS * 8;
    static_assert(N % THREADS == 0, "");
#pragma unroll
    for (int i = 0; i < N / THREADS; i++) {
        const int v = i * THREADS + (int)threadIdx.x, r = v / 8, c = v % 8;
        cp16(s + r * 128 + ((c ^ (r % 8)) * 16), g + r * ld_bytes + c * 16);
    }
}
__device__ __forceinline__ uint64_t mkdesc_sw(const void *p, unsigned lbo, unsigned sbo)
{
    return mkdesc(p, lbo, sbo) | (1ull << 62);
}

/* Swizzled version: A K-major (BK = 64 halves = one 128-byte row per m);
 * B MN-major: per 64-wide N block nb, BK rows of 128 bytes (8 KB per block);
 * B K-major: like A. */
template <class T, bool BKM, int VAR, int STAGES>
__global__ void __launch_bounds__(256) sw_kernel(const T *A, const T *B, float *Cm, int M, int N, int K)
{
    constexpr int BM = 128, BN = 128, BK = 64;
    constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(1024) char sm[];
    const int bm0 = blockIdx.y * BM, bn0 = blockIdx.x * BN;
    const int wg = threadIdx.x / 128, ktiles = K / BK;
    auto load = [&](int kt, int st) {
        char *sa = sm + st * STAGE, *sb = sa + A_BYTES;
        load_sw<BM, 256>(sa, (const char *)(A + (long long)bm0 * K + kt * BK), (long long)K * 2);
        if (BKM) load_sw<BN, 256>(sb, (const char *)(B + (long long)bn0 * K + kt * BK), (long long)K * 2);
        else {
#pragma unroll
            for (int nb = 0; nb < BN / 64; nb++)
                load_sw<BK, 256>(sb + nb * BK * 128, (const char *)(B + (long long)kt * BK * N + bn0 + nb * 64), (long long)N * 2);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < ktiles) load(s, s);
        asm volatile("cp.async.commit_group;\n");
    }
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 3));
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (kt + STAGES - 2 < ktiles) load(kt + STAGES - 2, (kt + STAGES - 2) % STAGES);
        asm volatile("cp.async.commit_group;\n");
        const char *sa = sm + (kt % STAGES) * STAGE + wg * 64 * 128, *sb = sm + (kt % STAGES) * STAGE + A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < BK / 16; j++) {
            const uint64_t da = mkdesc_sw(sa + j * 32, 16, 1024);
            uint64_t db;
            if (BKM) db = mkdesc_sw(sb + j * 32, 16, 1024);
            else if (VAR == 0) db = mkdesc_sw(sb + j * 2 * 1024, BK * 128, 1024);
            else db = mkdesc_sw(sb + j * 2 * 1024, 1024, BK * 128);
            if constexpr (std::is_same<T, __half>::value) wgmma_n128_f16<BKM ? 0 : 1>(d, da, db, 1);
            else wgmma_n128_bf16<BKM ? 0 : 1>(d, da, db, 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const int w = (threadIdx.x / 32) % 4, l = threadIdx.x % 32, g = l / 4, t = l % 4;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        const int row = bm0 + wg * 64 + w * 16 + g, col = bn0 + 8 * j + 2 * t;
        *reinterpret_cast<float2 *>(Cm + (long long)row * N + col) = make_float2(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<float2 *>(Cm + (long long)(row + 8) * N + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
}

/* C (M x N, fp32 row-major) = A (M x K row-major) * B (K x N row-major if !BKM, else N x K row-major).
 * CTA 128 x 128 x 64, two warpgroups (64 rows each). VAR: descriptor variant for MN-major B. */
template <class T, bool BKM, int VAR, int STAGES>
__global__ void __launch_bounds__(256) wg_kernel(const T *A, const T *B, float *Cm, int M, int N, int K)
{
    constexpr int BM = 128, BN = 128, BK = 64;
    constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) char sm[];
    const int bm0 = blockIdx.y * BM, bn0 = blockIdx.x * BN;
    const int wg = threadIdx.x / 128, ktiles = K / BK;
    auto load = [&](int kt, int st) {
        char *sa = sm + st * STAGE, *sb = sa + A_BYTES;
        load_cm<BM, BK / 8, 256>(sa, (const char *)(A + (long long)bm0 * K + kt * BK), (long long)K * 2);
        if (BKM) load_cm<BN, BK / 8, 256>(sb, (const char *)(B + (long long)bn0 * K + kt * BK), (long long)K * 2);
        else load_cm<BK, BN / 8, 256>(sb, (const char *)(B + (long long)kt * BK * N + bn0), (long long)N * 2);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < ktiles) load(s, s);
        asm volatile("cp.async.commit_group;\n");
    }
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 3));
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (kt + STAGES - 2 < ktiles) load(kt + STAGES - 2, (kt + STAGES - 2) % STAGES);
        asm volatile("cp.async.commit_group;\n");
        const char *sa = sm + (kt % STAGES) * STAGE + wg * 1024, *sb = sm + (kt % STAGES) * STAGE + A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < BK / 16; j++) {
            const uint64_t da = mkdesc(sa + j * 2 * (BM * 16), BM * 16, 128);
            uint64_t db;
            if (BKM) db = mkdesc(sb + j * 2 * (BN * 16), BN * 16, 128);
            else if (VAR == 0) db = mkdesc(sb + j * 2 * 128, 128, BK * 16);
            else db = mkdesc(sb + j * 2 * 128, BK * 16, 128);
            if constexpr (sizeof(T) == 2 && std::is_same<T, __half>::value) wgmma_n128_f16<BKM ? 0 : 1>(d, da, db, 1);
            else wgmma_n128_bf16<BKM ? 0 : 1>(d, da, db, 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const int w = (threadIdx.x / 32) % 4, l = threadIdx.x % 32, g = l / 4, t = l % 4;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        const int row = bm0 + wg * 64 + w * 16 + g, col = bn0 + 8 * j + 2 * t;
        *reinterpret_cast<float2 *>(Cm + (long long)row * N + col) = make_float2(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<float2 *>(Cm + (long long)(row + 8) * N + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
}

template <class T> __global__ void ref_kernel(const T *A, const T *B, float *C, int M, int N, int K, bool bkm)
{
    const int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= M || j >= N) return;
    float s = 0;
    for (int k = 0; k < K; k++) s += (float)A[(long long)i * K + k] * (float)(bkm ? B[(long long)j * K + k] : B[(long long)k * N + j]);
    C[(long long)i * N + j] = s;
}
template <class T> __global__ void fill(T *p, long long n, unsigned seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed * 97u; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        p[i] = (T)((float)(x & 0xFFFF) / 32768.0f - 1.0f);
    }
}

template <class T, bool BKM, int VAR, int STAGES, bool SW = false>
double run(const char *tag, int M, int N, int K, cublasHandle_t h)
{
    T *A, *B; float *C, *R;
    CK(cudaMalloc(&A, (size_t)M * K * 2)); CK(cudaMalloc(&B, (size_t)K * N * 2));
    CK(cudaMalloc(&C, (size_t)M * N * 4)); CK(cudaMalloc(&R, (size_t)M * N * 4));
    fill<T><<<512, 256>>>(A, (long long)M * K, 1); fill<T><<<512, 256>>>(B, (long long)K * N, 2);
    CK(cudaMemset(C, 0xFF, (size_t)M * N * 4));
    ref_kernel<T><<<dim3(N / 16, M / 16), dim3(16, 16)>>>(A, B, R, M, N, K, BKM);
    const int smem = STAGES * (128 * 64 + 128 * 64) * 2;
    auto kern = SW ? sw_kernel<T, BKM, VAR, STAGES> : wg_kernel<T, BKM, VAR, STAGES>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    dim3 grid(N / 128, M / 128);
    kern<<<grid, 256, smem>>>(A, B, C, M, N, K);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<float> c((size_t)M * N), r((size_t)M * N);
    CK(cudaMemcpy(c.data(), C, c.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), R, r.size() * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); i++) { double e = (double)c[i] - r[i]; num += e * e; den += (double)r[i] * r[i]; }
    const double rel = std::isfinite(num) ? sqrt(num / den) : 1e30;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 5; i++) kern<<<grid, 256, smem>>>(A, B, C, M, N, K);
    const int reps = 50;
    std::vector<float> ts;
    for (int i = 0; i < reps; i++) {
        cudaEventRecord(e0); kern<<<grid, 256, smem>>>(A, B, C, M, N, K); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    const float t_vx = ts[reps / 2];
    // cuBLAS: column-major C^T (N x M) = B^T A^T
    float one = 1, zero = 0;
    const cudaDataType ty = std::is_same<T, __half>::value ? CUDA_R_16F : CUDA_R_16BF;
    ts.clear();
    for (int i = 0; i < reps + 5; i++) {
        cudaEventRecord(e0);
        cublasGemmEx(h, BKM ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, ty, BKM ? K : N, A, ty, K, &zero, C, CUDA_R_32F, N,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 5) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    const float t_cb = ts[reps / 2];
    const double fl = 2.0 * M * N * K;
    printf("%-26s %5dx%5dx%5d rel_err %.2e  wgmma %7.2f us %6.1f TF | cublas %7.2f us %6.1f TF | ratio %.2f\n", tag, M, N, K, rel,
           t_vx * 1e3, fl / t_vx / 1e9, t_cb * 1e3, fl / t_cb / 1e9, t_cb / t_vx);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
    return rel;
}

int main()
{
    cublasHandle_t h; cublasCreate(&h);
    const int shapes[][3] = {{512, 4096, 1024}, {256, 1024, 1024}, {2048, 2048, 2048}};
    for (auto &s : shapes) {
        run<__half, false, 0, 4>("f16 n var0 s4 noswz", s[0], s[1], s[2], h);
        run<__half, false, 0, 4, true>("f16 n var0 s4 SW128", s[0], s[1], s[2], h);
        run<__half, false, 1, 4, true>("f16 n var1 s4 SW128", s[0], s[1], s[2], h);
        run<__half, true, 0, 4, true>("f16 k s4 SW128", s[0], s[1], s[2], h);
        run<__nv_bfloat16, false, 0, 4, true>("bf16 n var0 s4 SW128", s[0], s[1], s[2], h);
        run<__half, false, 0, 3, true>("f16 n var0 s3 SW128", s[0], s[1], s[2], h);
    }
    return 0;
}
