/* The Hopper GEMM family (sm_90a): warpgroup MMA (wgmma) on 16-bit operands.
 *
 *   L0  a warpgroup (four warps, 128 threads) computes 64 x BN of C with
 *       wgmma.mma_async m64nBNk16, both operands read from shared memory
 *       through matrix descriptors (gen/gen_wgmma_ops.py writes the
 *       wrappers); fp32 accumulators, BN / 2 per thread.
 *   L1  a CTA of BM / 64 warpgroups computes BM x BN over a K range in
 *       tiles of BK = 64 (one 128-byte row of 16-bit elements), streamed
 *       through STAGES shared-memory buffers by cp.async. The wgmma of tile
 *       kt runs while tile kt + 1 waits its turn and tiles up to
 *       kt + STAGES - 2 are in flight (wait_group 1: the buffer a load
 *       overwrites was read two tiles ago).
 *   L2  the grid, split-K (workspace + reduction launch, or the slices of a
 *       tile as one thread-block cluster adding in distributed shared
 *       memory) and orientation are the host's, as for gemm_kernel.cuh.
 *
 * Shared-memory layout: the 128-byte swizzle wgmma reads without bank
 * conflicts. An operand tile is rows of 128 bytes; chunk c (16 bytes) of
 * row r sits at r * 128 + ((c ^ (r % 8)) * 16), so a 1024-byte group of 8
 * rows is the swizzle atom (every stage starts 1024-aligned).
 *   K-contiguous operand: one row per M (or N) index, its 64 K elements.
 *     Descriptor: start + 32 B per k16 step, stride between 8-row groups
 *     (SBO) 1024.
 *   M/N-contiguous operand: one row per K index, 64 M/N elements; wider
 *     tiles are blocks of 64 columns, BK rows (8 KB) each. Descriptor:
 *     transpose flag, start + 2048 B per k16 step (16 rows), SBO 1024,
 *     LBO = the block stride 8 KB.
 * (Checked on an H100 by the probe in benchmarks/experiments/wgmma.)
 *
 * Edges: rows and columns past M / N are never loaded on full K tiles
 * (they feed only accumulators that are not stored); a ragged last K tile
 * unaligned operands, and tiles the matrix ends inside a chunk of take an
 * out-of-line path that writes every chunk (whole chunks by cp.async, the
 * rest by element loads, zeros past the matrix). The user's buffers are
 * never padded, and no read goes past the matrix. */
#pragma once

#include "cuda/gemm_kernel.cuh"
#include "wgmma_ops.h"

namespace vx {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VX_WGMMA_DEVICE 1
#endif

constexpr int WG_BK = 64;       /* K elements per tile: one 128-byte swizzled row */
constexpr int WG_ROW = 128;     /* bytes per shared row */

/* Byte offset of chunk sc (16 bytes; over all 64-column blocks) of shared
 * row sr in a tile whose blocks hold SROWS rows. */
template <int SROWS>
__device__ __forceinline__ int wg_chunk_offset(int sr, int sc)
{
    return (sc >> 3) * (SROWS * WG_ROW) + sr * WG_ROW + (((sc & 7) ^ (sr & 7)) << 4);
}

/* One operand's tile loads. R: the tile's M (or N) extent. KC: the operand
 * is K-contiguous (shared rows are M/N indices, 8 chunks each), else
 * M/N-contiguous (shared rows are K indices, R / 8 chunks each, in blocks
 * of 64 columns). Storage coordinates: row sr, chunk sc; a thread's
 * chunks share one sc, rows RSTEP apart. */
template <class T, int R, int THREADS, bool KC>
struct WgTile {
    static constexpr int SROWS = KC ? R : WG_BK;
    static constexpr int CPR = KC ? 8 : R / 8;
    static constexpr int NCH = SROWS * CPR;
    static constexpr int PER = NCH / THREADS;
    static constexpr int RSTEP = THREADS / CPR;
    static_assert(sizeof(T) == 2, "wgmma tiles hold 16-bit elements");
    static_assert(NCH % THREADS == 0 && THREADS % CPR == 0, "a thread's chunks share one column");
    static_assert(PER <= 32, "one validity bit per chunk");

    const T *src;      /* the thread's first chunk at the block's first K */
    long long ld;
    int sr0, sc;
    unsigned valid;    /* bit j: chunk j lies inside the matrix along M/N */

    /* Whether the matrix ends inside one of the tile's chunks (an M/N-
     * contiguous operand, M or N not a multiple of 8 within the tile):
     * such a tile takes wg_load_edge, which reads that chunk element by
     * element, never past the matrix. */
    static __device__ __forceinline__ bool ragged(int mn0, int mn_end)
    {
        return !KC && mn_end - mn0 < R && (mn_end - mn0) % 8 != 0;
    }

    /* g, ld: the operand in storage order (rows x contiguous columns);
     * mn0: the tile's first M/N index; k0: the block's first K; mn_end: M or N. */
    __device__ __forceinline__ void init(const T *g, long long ld_, int mn0, int k0, int mn_end)
    {
        const int v = (int)threadIdx.x;
        sr0 = v / CPR;
        sc = v % CPR;
        ld = ld_;
        valid = 0;
        if (KC) {
            src = g + (long long)(mn0 + sr0) * ld_ + k0 + sc * 8;
#pragma unroll
            for (int j = 0; j < PER; j++) valid |= (mn0 + sr0 + j * RSTEP < mn_end ? 1u : 0u) << j;
        } else {
            src = g + (long long)(k0 + sr0) * ld_ + mn0 + sc * 8;
            valid = mn0 + sc * 8 < mn_end ? ~0u : 0u; /* whole chunks: the tile is not ragged() */
        }
    }

    /* A full K tile kt_off elements past the block's first K. */
    __device__ __forceinline__ void load(unsigned char *s, int k_off) const
    {
        const T *g = src + (KC ? (long long)k_off : (long long)k_off * ld);
#pragma unroll
        for (int j = 0; j < PER; j++)
            if (valid >> j & 1u)
                cp_async16(s + wg_chunk_offset<SROWS>(sr0 + j * RSTEP, sc), g + (long long)j * RSTEP * ld, 16);
    }
};

/* Every chunk of one operand tile, checked: the ragged last K tile, a tile
 * the matrix ends inside a chunk of, or an operand that is not 16-byte
 * aligned. Storage coordinates as in WgTile:
 * global element (r0 + sr, c0 + 8 sc + e) exists while r0 + sr < rows_end
 * and c0 + 8 sc + e < cols_end; what does not is written as zero. Out of
 * line, so the main loop stays small. */
template <class T, int R, int THREADS, bool KC>
__device__ __noinline__ void wg_load_edge(unsigned char *s, const T *g, long long ld, int r0, int c0, int rows_end,
                                          int cols_end, bool vec)
{
    using W = WgTile<T, R, THREADS, KC>;
#pragma unroll 1
    for (int j = 0; j < W::PER; j++) {
        const int v = (int)threadIdx.x + j * THREADS, sr = v / W::CPR, sc = v % W::CPR;
        const int gr = r0 + sr, gc = c0 + sc * 8;
        int n = cols_end - gc;
        n = gr < rows_end ? (n < 0 ? 0 : n > 8 ? 8 : n) : 0;
        unsigned char *dst = s + wg_chunk_offset<W::SROWS>(sr, sc);
        const T *p = g + (long long)gr * ld + gc;
        if (vec && n == 8) {
            cp_async16(dst, p, 16);
        } else {
            /* A chunk the matrix ends inside (or wholly outside: n = 0, no
             * read) is read element by element: cp.async with a short
             * source still reads 16 bytes (compute-sanitizer memcheck on an
             * H200: past the end of an allocation sized to the matrix). */
            union { T e[8]; uint4 u; } x;
#pragma unroll
            for (int e = 0; e < 8; e++) x.e[e] = e < n ? p[e] : T(0.0f);
            *reinterpret_cast<uint4 *>(dst) = x.u;
        }
    }
}

/* A shared-memory matrix descriptor with the 128-byte swizzle. */
__device__ __forceinline__ uint64_t wg_desc(const void *p, unsigned lbo, unsigned sbo)
{
    return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFF) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}

template <class T, bool AK, bool BKC, int BM, int BN, int STAGES>
struct WgGeom {
    static constexpr int THREADS = BM / 64 * 128;
    static constexpr int A_BYTES = BM * WG_ROW, B_BYTES = BN * WG_ROW;
    static constexpr int STAGE = A_BYTES + B_BYTES;
    static constexpr int SMEM = STAGES * STAGE + 1024; /* + the slack that aligns the first stage to 1024 */
    static_assert(BM % 64 == 0 && BN % 64 == 0 && BN <= 256, "wgmma tiles: 64-row warpgroups, N a multiple of 64");
    static_assert(STAGES >= 3, "the buffer a load overwrites must be two tiles old");
};

template <class T, bool AK, bool BKC, int BM, int BN, int STAGES, bool CLUSTER>
__global__ void __launch_bounds__(WgGeom<T, AK, BKC, BM, BN, STAGES>::THREADS, 1) wg_gemm_kernel(KParams p)
{
#ifdef VX_WGMMA_DEVICE
    using G = WgGeom<T, AK, BKC, BM, BN, STAGES>;
    constexpr int THREADS = G::THREADS, BK = WG_BK, P = STAGES - 2;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);

    const int tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
    int tm, tn;
    raster(blockIdx.x, tiles_m, tiles_n, tm, tn);
    const int bm0 = tm * BM, bn0 = tn * BN;
    const int kb = blockIdx.z * p.k_per_split;
    const int ke = min(p.k, kb + p.k_per_split);
    const int ktiles = ke > kb ? (ke - kb + BK - 1) / BK : 0;
    const T *A = static_cast<const T *>(p.a);
    const T *B = static_cast<const T *>(p.b);
    const bool avec = p.a_vec != 0, bvec = p.b_vec != 0;

    WgTile<T, BM, THREADS, AK> ta;
    WgTile<T, BN, THREADS, BKC> tb;
    ta.init(A, p.lda, bm0, kb, p.m);
    tb.init(B, p.ldb, bn0, kb, p.n);
    const bool fast = avec && bvec && !decltype(ta)::ragged(bm0, p.m) && !decltype(tb)::ragged(bn0, p.n);

    auto load_stage = [&](int kt, int stage) {
        unsigned char *sa = smem + stage * G::STAGE, *sb = sa + G::A_BYTES;
        const int k0 = kb + kt * BK;
        if (fast && k0 + BK <= ke) {
            ta.load(sa, kt * BK);
            tb.load(sb, kt * BK);
        } else {
            if (AK) wg_load_edge<T, BM, THREADS, true>(sa, A, p.lda, bm0, k0, p.m, ke, avec);
            else wg_load_edge<T, BM, THREADS, false>(sa, A, p.lda, k0, bm0, ke, p.m, avec);
            if (BKC) wg_load_edge<T, BN, THREADS, true>(sb, B, p.ldb, bn0, k0, p.n, ke, bvec);
            else wg_load_edge<T, BN, THREADS, false>(sb, B, p.ldb, k0, bn0, ke, p.n, bvec);
        }
    };

    const int wg = (int)threadIdx.x / 128;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.0f;

#pragma unroll 1
    for (int s = 0; s < P; s++) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<P - 1>();
        /* the tile was written through the generic proxy; wgmma reads it through the async one */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (kt + P < ktiles) load_stage(kt + P, (kt + P) % STAGES);
        cp_async_commit();
        const unsigned char *sa = smem + (kt % STAGES) * G::STAGE, *sb = sa + G::A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < BK / 16; j++) {
            const uint64_t da = AK ? wg_desc(sa + wg * 64 * WG_ROW + j * 32, 16, 1024)
                                   : wg_desc(sa + wg * BK * WG_ROW + j * 16 * WG_ROW, BK * WG_ROW, 1024);
            const uint64_t db = BKC ? wg_desc(sb + j * 32, 16, 1024)
                                    : wg_desc(sb + j * 16 * WG_ROW, BK * WG_ROW, 1024);
            wg_mma<T, BN>::template run<AK ? 0 : 1, BKC ? 0 : 1>(acc, da, db, 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    cp_async_wait<0>();

    /* Accumulator j of a thread: the m16n8 fragment layout per 8 columns,
     * so a warp's 16 x BN is an mma.sync warp tile of 16 x BN. */
    const int lane = (int)threadIdx.x & 31, w = ((int)threadIdx.x >> 5) & 3;
    if constexpr (CLUSTER) {
        if (p.cluster > 1) {
            cluster_reduce_store<BM, BN, 16, BN, THREADS>(p, reinterpret_cast<float(&)[1][BN / 8][4]>(acc), smem_raw,
                                                         bm0, bn0, ((int)threadIdx.x >> 5) * 16, 0, lane);
            return;
        }
    }
    const int row = bm0 + wg * 64 + w * 16 + (lane >> 2), col0 = bn0 + 2 * (lane & 3);
    const bool pairs = pairs_aligned(p);
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        epilogue_store2(p, pairs, row, col0 + 8 * j, acc[4 * j], acc[4 * j + 1]);
        epilogue_store2(p, pairs, row + 8, col0 + 8 * j, acc[4 * j + 2], acc[4 * j + 3]);
    }
#endif
}

/* CLUSTER: the cluster split-K entry's own kernel. Compiled into every
 * kernel, the cluster epilogue made the plain one ~18 % slower on an H100
 * (same plan, same machine kind: 512 x 768 x 768 fp16 10.1 -> 11.9 us). */
template <class T, bool AK, bool BKC, int BM, int BN, int STAGES, bool CLUSTER>
struct WgInstance {
    using G = WgGeom<T, AK, BKC, BM, BN, STAGES>;
    static constexpr int THREADS = G::THREADS;
    static constexpr int SMEM = G::SMEM;
    static void launch(const KParams &p, dim3 grid, cudaStream_t s)
    {
        wg_gemm_kernel<T, AK, BKC, BM, BN, STAGES, CLUSTER><<<grid, THREADS, SMEM, s>>>(p);
    }
    /* Split-K slices as one thread-block cluster that adds the partial tiles
     * in distributed shared memory (gemm_kernel.cuh's cluster_reduce_store). */
    static constexpr bool CLUSTER_FITS = BM * (BN + 4) * 4 <= SMEM;
    static void launch_cluster(const KParams &p, dim3 grid, cudaStream_t s)
    {
        launch_z_cluster(wg_gemm_kernel<T, AK, BKC, BM, BN, STAGES, CLUSTER>, p, grid, THREADS, SMEM, s);
    }
    static const void *func() { return (const void *)wg_gemm_kernel<T, AK, BKC, BM, BN, STAGES, CLUSTER>; }
};

} // namespace vx
