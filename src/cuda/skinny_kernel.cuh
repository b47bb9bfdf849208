/* The skinny GPU GEMM family: a few rows of C (M small, the decode and
 * small-batch shapes of inference), where the call is bound by reading B
 * once, not by arithmetic.
 *
 *   L0  a thread streams 16-byte vectors of B straight from global memory
 *       into registers (no shared-memory stage: each element is used by
 *       the MR rows of one block only) and runs MR x (its columns) FFMAs per
 *       vector with A's values, which are few and stay in L1. Several
 *       vectors are in flight per thread so the loads cover DRAM latency.
 *   L1  a block owns MR rows x NB columns over a K range; its threads split
 *       that K range and add their partial sums at the end (warp shuffles,
 *       then shared memory).
 *   L2  the grid is (M/MR) x (N/NB) tiles x split-K slices. Split-K is
 *       reduced inside the kernel: each slice writes its partial tile to the
 *       workspace, and the slice that finishes last (a per-tile counter)
 *       adds them in slice order (deterministic) and writes C, so a split
 *       call is one launch, not two.
 *
 * The selection offers the family only where one row tile covers M (see
 * rank_plans in cuda_gemm.cu); forced, it runs any M.
 *
 * Layouts: B with N contiguous (canonical row-major NN) walks K rows of 64
 * columns, 8 columns per thread; B with K contiguous walks each column's K
 * run, 8 lanes x 16 bytes per column, 4 columns per thread, 16 per block.
 * Ragged edges and unaligned operands take element-wise loads (zeros past
 * the matrix, never a read beyond it); rows past M reuse row M-1's A values
 * and are never stored. */
#pragma once

#include "cuda/gemm_kernel.cuh"

namespace vx {

struct SkinnyGeom {
    static constexpr int THREADS = 128, WARPS = THREADS / 32;
    /* B N-contiguous: 8 columns per thread, 8 column lanes, 16 K rows at once. */
    static constexpr int TN0 = 8, NB0 = 64, CL0 = NB0 / TN0, RL0 = THREADS / CL0, U0 = 4;
    /* B K-contiguous: 4 columns per thread, 8 K lanes x 4 column groups a warp. */
    static constexpr int TN1 = 4, KL1 = 8, NB1 = (32 / KL1) * TN1, U1 = 2;
    static constexpr int nb(bool bkc) { return bkc ? NB1 : NB0; }
};

/* A 16-byte global load that does not keep the line in L1 (B is streamed). */
__device__ __forceinline__ uint4 ldg_stream(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* 16 bytes of T as 16/sizeof(T) floats. */
__device__ __forceinline__ void unpack16(float *o, uint4 v, const float *)
{
    o[0] = __uint_as_float(v.x); o[1] = __uint_as_float(v.y);
    o[2] = __uint_as_float(v.z); o[3] = __uint_as_float(v.w);
}
__device__ __forceinline__ float2 pair_to_f32(__half2 h) { return __half22float2(h); }
__device__ __forceinline__ float2 pair_to_f32(__nv_bfloat162 h) { return __bfloat1622float2(h); }
/* 16 bytes of 16-bit values (H2: their pair type) as 8 floats */
template <class H2> __device__ __forceinline__ void unpack16_pairs(float *o, uint4 v)
{
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        H2 h;
        memcpy(&h, &w[i], 4);
        const float2 f = pair_to_f32(h);
        o[2 * i] = f.x; o[2 * i + 1] = f.y;
    }
}
__device__ __forceinline__ void unpack16(float *o, uint4 v, const __half *) { unpack16_pairs<__half2>(o, v); }
__device__ __forceinline__ void unpack16(float *o, uint4 v, const __nv_bfloat16 *)
{
    unpack16_pairs<__nv_bfloat162>(o, v);
}

/* n consecutive elements at p as floats: whole 16-byte vectors when vec
 * (p aligned, n == W), else element by element up to n, zeros after. */
template <class T, int W>
__device__ __forceinline__ void load_run(float (&o)[W], const T *p, int n, bool vec, bool stream)
{
    constexpr int V = 16 / (int)sizeof(T);
    static_assert(W % V == 0, "runs are whole 16-byte vectors");
    if (vec && n >= W) {
#pragma unroll
        for (int i = 0; i < W / V; i++) {
            const uint4 v = stream ? ldg_stream(p + i * V) : __ldg(reinterpret_cast<const uint4 *>(p + i * V));
            unpack16(o + i * V, v, p);
        }
    } else {
#pragma unroll
        for (int i = 0; i < W; i++) o[i] = i < n ? to_f32(p[i]) : 0.0f;
    }
}

/* Writes the block's MR x NB sums (red: [WARPS][MR * NB], summed over the
 * warps here) to C, or through the split-K workspace: every slice stores its
 * partial tile, the last one to arrive adds them in slice order and stores C,
 * then re-arms the tile's counter for the next call on this stream. */
template <int MR, int NB>
__device__ __forceinline__ void skinny_finish(const KParams &p, const float *red, int bm0, int bn0, int tile,
                                              int tiles)
{
    constexpr int N_OUT = MR * NB, T = SkinnyGeom::THREADS;
    const int tid = threadIdx.x;
    if (!p.ws) {
        for (int i = tid; i < N_OUT; i += T) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < SkinnyGeom::WARPS; w++) s += red[w * N_OUT + i];
            store_final(p, bm0 + i / NB, bn0 + i % NB, s);
        }
        return;
    }
    __shared__ int last;
    float *mine = p.ws + ((long long)blockIdx.z * tiles + tile) * N_OUT;
    for (int i = tid; i < N_OUT; i += T) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < SkinnyGeom::WARPS; w++) s += red[w * N_OUT + i];
        mine[i] = s;
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(&p.counters[tile], 1) == (int)gridDim.z - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int splits = (int)gridDim.z;
    for (int i = tid; i < N_OUT; i += T) {
        const float *src = p.ws + (long long)tile * N_OUT + i;
        const long long stride = (long long)tiles * N_OUT;
        float s = 0.0f;
        int z = 0;
        /* eight slices' loads in flight before their adds (in slice order) */
        for (; z + 8 <= splits; z += 8) {
            float v[8];
#pragma unroll
            for (int q = 0; q < 8; q++) v[q] = __ldcg(src + (z + q) * stride);
#pragma unroll
            for (int q = 0; q < 8; q++) s += v[q];
        }
        for (; z < splits; z++) s += __ldcg(src + z * stride);
        store_final(p, bm0 + i / NB, bn0 + i % NB, s);
    }
    if (tid == 0) p.counters[tile] = 0;
}

template <class T, bool AK, bool BKC, int MR>
__global__ void __launch_bounds__(SkinnyGeom::THREADS) skinny_kernel(KParams p)
{
    using G = SkinnyGeom;
    constexpr int NB = G::nb(BKC);
    extern __shared__ __align__(16) unsigned char smem_raw[];
    float *red = reinterpret_cast<float *>(smem_raw); /* [WARPS][MR][NB] */

    const int tiles_m = (p.m + MR - 1) / MR, tiles_n = (p.n + NB - 1) / NB;
    const int tile = blockIdx.x;
    /* consecutive blocks share B's columns (row tiles of one column tile) */
    const int bm0 = (tile % tiles_m) * MR, bn0 = (tile / tiles_m) * NB;
    const int kb = blockIdx.z * p.k_per_split;
    const int ke = min(p.k, kb + p.k_per_split);
    const T *A = static_cast<const T *>(p.a);
    const T *B = static_cast<const T *>(p.b);
    const int mlast = min(MR, p.m - bm0) - 1; /* rows past M read row M-1 */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    if constexpr (!BKC) {
        constexpr int TN = G::TN0, RL = G::RL0, U = G::U0;
        const int cl = tid % G::CL0, rl = tid / G::CL0;
        const int n0 = bn0 + cl * TN;
        const int ncols = p.n - n0;
        float acc[MR][TN];
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int j = 0; j < TN; j++) acc[m][j] = 0.0f;
        for (int k = kb + rl; k < ke; k += RL * U) {
            float b[U][TN];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kk = k + u * RL;
                if (kk < ke && ncols > 0)
                    load_run<T, TN>(b[u], B + (long long)kk * p.ldb + n0, ncols, p.b_vec != 0, true);
                else
#pragma unroll
                    for (int j = 0; j < TN; j++) b[u][j] = 0.0f;
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kk = k + u * RL;
                if (kk >= ke) break;
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    const long long row = bm0 + min(m, mlast);
                    const float a = to_f32(AK ? __ldg(A + row * p.lda + kk) : __ldg(A + (long long)kk * p.lda + row));
#pragma unroll
                    for (int j = 0; j < TN; j++) acc[m][j] = fmaf(a, b[u][j], acc[m][j]);
                }
            }
        }
        /* the 4 K rows a warp holds per column: lanes 8 and 16 apart */
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int j = 0; j < TN; j++) {
                float v = acc[m][j];
                v += __shfl_xor_sync(0xffffffffu, v, 8);
                v += __shfl_xor_sync(0xffffffffu, v, 16);
                acc[m][j] = v;
            }
        if (lane < G::CL0)
#pragma unroll
            for (int m = 0; m < MR; m++)
#pragma unroll
                for (int j = 0; j < TN; j++) red[(warp * MR + m) * NB + cl * TN + j] = acc[m][j];
    } else {
        constexpr int V = 16 / (int)sizeof(T), TN = G::TN1, U = G::U1;
        constexpr int STEP = G::WARPS * G::KL1 * V; /* K a block covers per pass */
        const int kl = lane % G::KL1, cg = lane / G::KL1;
        const int n0 = bn0 + cg * TN;
        float acc[MR][TN];
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int j = 0; j < TN; j++) acc[m][j] = 0.0f;
        const bool avec = AK && p.a_vec != 0;
        for (int k = kb + (warp * G::KL1 + kl) * V; k < ke; k += STEP * U) {
            float b[U][TN][V];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kk = k + u * STEP;
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    if (kk < ke && n0 + j < p.n)
                        load_run<T, V>(b[u][j], B + (long long)(n0 + j) * p.ldb + kk, ke - kk, p.b_vec != 0, true);
                    else
#pragma unroll
                        for (int e = 0; e < V; e++) b[u][j][e] = 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kk = k + u * STEP;
                if (kk >= ke) break;
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    const long long row = bm0 + min(m, mlast);
                    float a[V];
                    if (AK) {
                        load_run<T, V>(a, A + row * p.lda + kk, ke - kk, avec, false);
                    } else {
#pragma unroll
                        for (int e = 0; e < V; e++)
                            a[e] = kk + e < ke ? to_f32(__ldg(A + (long long)(kk + e) * p.lda + row)) : 0.0f;
                    }
#pragma unroll
                    for (int j = 0; j < TN; j++)
#pragma unroll
                        for (int e = 0; e < V; e++) acc[m][j] = fmaf(a[e], b[u][j][e], acc[m][j]);
                }
            }
        }
        /* the 8 K lanes of each column: lanes 1, 2 and 4 apart */
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int j = 0; j < TN; j++) {
                float v = acc[m][j];
                v += __shfl_xor_sync(0xffffffffu, v, 1);
                v += __shfl_xor_sync(0xffffffffu, v, 2);
                v += __shfl_xor_sync(0xffffffffu, v, 4);
                acc[m][j] = v;
            }
        if (kl == 0)
#pragma unroll
            for (int m = 0; m < MR; m++)
#pragma unroll
                for (int j = 0; j < TN; j++) red[(warp * MR + m) * NB + cg * TN + j] = acc[m][j];
    }
    __syncthreads();
    skinny_finish<MR, NB>(p, red, bm0, bn0, tile, tiles_m * tiles_n);
}

template <class T, bool AK, bool BKC, int MR>
struct SkinnyInstance {
    static constexpr int THREADS = SkinnyGeom::THREADS;
    static constexpr int SMEM = SkinnyGeom::WARPS * MR * SkinnyGeom::nb(BKC) * (int)sizeof(float);
    static void launch(const KParams &p, dim3 grid, cudaStream_t s)
    {
        skinny_kernel<T, AK, BKC, MR><<<grid, THREADS, SMEM, s>>>(p);
    }
    static const void *func() { return (const void *)skinny_kernel<T, AK, BKC, MR>; }
};

} // namespace vx
