/* The GPU GEMM kernel family (L0 warp tile + L1 CTA tile), one template.
 *
 *   L1  a CTA computes a BM x BN tile of C over a K range [kb, ke) (the whole
 *       K, or one split-K slice); A and B tiles of BK columns stream through
 *       STAGES shared-memory buffers filled by cp.async (16-byte copies,
 *       zero-filled past the matrix edge) while the warps compute on an
 *       earlier stage. Shared memory keeps each operand in its global layout
 *       (K-contiguous or M/N-contiguous); the fragment loads adapt.
 *   L0  a warp computes WM x WN: Tensor Cores through mma.sync (m16n8k16 for
 *       fp16/bf16 fed by ldmatrix[.trans], m16n8k8 for tf32), or CUDA cores
 *       with a (WM/4) x (WN/8) FFMA register tile per thread.
 *
 * Ragged edges are handled in the loads (zeros written to shared memory,
 * never a read past the matrix, not even inside one 16-byte copy) and the stores
 * (predicated): the user's buffers are never padded. Unaligned operands
 * (a base pointer or leading dimension that is not a multiple of 16 bytes)
 * take a synchronous element-wise load path in the same kernel. */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace vx {

enum { UNIT_SIMT = 0, UNIT_TENSOR = 1 };
constexpr int CLUSTER_MAX_SLICES = 8; /* the portable thread-block cluster size: most split-K slices of a cluster entry */
enum { CT_F32 = 0, CT_F16 = 1, CT_BF16 = 2 };

/* One launch's arguments (canonical row-major C, see cuda_backend.h). */
struct KParams {
    int m, n, k;
    const void *a; long long lda;
    const void *b; long long ldb;
    void *c; long long ldc;
    float alpha, beta;
    int c_type;
    float *ws;         /* split-K partial sums (layout: the kernel family's); NULL: write C */
    int *counters;     /* per-tile arrival counters of in-kernel split-K reductions (zero between calls) */
    int k_per_split;   /* multiple of BK */
    int a_vec, b_vec;  /* 16-byte copies allowed for A / B */
    int c_trans;       /* C(row, col) lives at c[col * ldc + row]: the call runs transposed */
    int cluster;       /* > 1: the gridDim.z split-K slices of a tile form one thread-block cluster and add
                          their partial tiles through distributed shared memory (sm_90; see gemm_kernel) */
};

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ __forceinline__ float load_c(const void *c, long long i, int ct)
{
    if (ct == CT_F32) return ((const float *)c)[i];
    if (ct == CT_F16) return __half2float(((const __half *)c)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)c)[i]);
}

__device__ __forceinline__ void store_c(void *c, long long i, float v, int ct)
{
    if (ct == CT_F32) ((float *)c)[i] = v;
    else if (ct == CT_F16) ((__half *)c)[i] = __float2half_rn(v);
    else ((__nv_bfloat16 *)c)[i] = __float2bfloat16_rn(v);
}

/* C(row, col) = alpha * acc + beta * C for row < m, col < n. beta == 0
 * never reads C. */
__device__ __forceinline__ void store_final(const KParams &p, int row, int col, float acc)
{
    if (row >= p.m || col >= p.n) return;
    const long long i = p.c_trans ? (long long)col * p.ldc + row : (long long)row * p.ldc + col;
    float v = p.alpha * acc;
    if (p.beta != 0.0f) v += p.beta * load_c(p.c, i, p.c_type);
    store_c(p.c, i, v, p.c_type);
}

/* store_final, or the raw partial sum to the split-K workspace
 * [split][m][n] that the separate reduction kernel adds up. */
__device__ __forceinline__ void epilogue_store(const KParams &p, int row, int col, float acc)
{
    if (p.ws) {
        if (row < p.m && col < p.n) p.ws[((long long)blockIdx.z * p.m + row) * p.n + col] = acc;
        return;
    }
    store_final(p, row, col, acc);
}

/* Whether epilogue_store2 may store column pairs (col even) as one 8- or
 * 4-byte access: C (or the split-K workspace) row-major with pairs aligned. */
__device__ __forceinline__ bool pairs_aligned(const KParams &p)
{
    if (p.c_trans) return false;
    if (p.ws) return (p.n & 1) == 0;
    const uintptr_t mask = p.c_type == CT_F32 ? 7 : 3;
    return (p.ldc & 1) == 0 && ((uintptr_t)p.c & mask) == 0;
}

/* Columns col and col + 1 (col even) of one row: one store of the pair
 * where pairs_aligned and both lie inside C, else epilogue_store each. */
__device__ __forceinline__ void epilogue_store2(const KParams &p, bool pairs, int row, int col, float v0, float v1)
{
    if (pairs && row < p.m && col + 1 < p.n) {
        if (p.ws) {
            *reinterpret_cast<float2 *>(p.ws + ((long long)blockIdx.z * p.m + row) * p.n + col) = make_float2(v0, v1);
            return;
        }
        const long long i = (long long)row * p.ldc + col;
        float w0 = p.alpha * v0, w1 = p.alpha * v1;
        if (p.beta != 0.0f) {
            w0 += p.beta * load_c(p.c, i, p.c_type);
            w1 += p.beta * load_c(p.c, i + 1, p.c_type);
        }
        if (p.c_type == CT_F32) *reinterpret_cast<float2 *>((float *)p.c + i) = make_float2(w0, w1);
        else if (p.c_type == CT_F16) *reinterpret_cast<__half2 *>((__half *)p.c + i) = __floats2half2_rn(w0, w1);
        else *reinterpret_cast<__nv_bfloat162 *>((__nv_bfloat16 *)p.c + i) = __floats2bfloat162_rn(w0, w1);
        return;
    }
    epilogue_store(p, row, col, v0);
    epilogue_store(p, row, col + 1, v1);
}

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Copies one operand tile into shared memory. The tile is ROWS x COLS in the
 * operand's storage order (COLS along the contiguous dimension); global
 * element (r, c) of the tile is at g[(r0 + r) * ld + c0 + c], valid while
 * r0 + r < rows_end and c0 + c < cols_end. Shared rows are SLD apart. */
template <class T, int ROWS, int COLS, int SLD, int THREADS>
__device__ __forceinline__ void load_tile(T *s, const T *g, long long ld, int r0, int c0, int rows_end,
                                          int cols_end, bool vec)
{
    constexpr int VEC = 16 / (int)sizeof(T);
    constexpr int VPR = COLS / VEC;            /* vectors per row */
    constexpr int NV = ROWS * VPR;
    static_assert(COLS % VEC == 0, "tile columns must be whole 16-byte vectors");
    if (vec) {
#pragma unroll
        for (int v0 = 0; v0 < NV; v0 += THREADS) {
            const int v = v0 + (int)threadIdx.x;
            if (NV % THREADS == 0 || v < NV) {
                const int r = v / VPR, c = (v % VPR) * VEC;
                const int gr = r0 + r, gc = c0 + c;
                int n = cols_end - gc;
                n = gr < rows_end ? (n < 0 ? 0 : (n > VEC ? VEC : n)) : 0;
                T *dst = s + r * SLD + c;
                if (n == VEC) {
                    cp_async16(dst, g + (long long)gr * ld + gc, 16);
                } else if (n == 0) {
                    /* wholly outside the matrix: zeros, no global access at all */
                    *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
                } else {
                    /* the matrix ends inside this vector: read only what is there
                     * (a 16-byte copy could cross the end of the allocation) */
                    const T *src = g + (long long)gr * ld + gc;
#pragma unroll
                    for (int e = 0; e < VEC; e++) dst[e] = e < n ? src[e] : (T)0.0f;
                }
            }
        }
    } else {
        /* Eight loads are issued before their stores, so they are in
         * flight together (a load-store loop would wait out the memory
         * latency once per element); eight keeps the registers the fast
         * path needs. */
        constexpr int PER = (ROWS * COLS + THREADS - 1) / THREADS;
        constexpr int CHUNK = PER < 8 ? PER : 8;
#pragma unroll 1
        for (int i0 = 0; i0 < PER; i0 += CHUNK) {
            T x[CHUNK];
#pragma unroll
            for (int i = 0; i < CHUNK; i++) {
                const int e = (int)threadIdx.x + (i0 + i) * THREADS;
                const int r = e / COLS, c = e % COLS;
                const int gr = r0 + r, gc = c0 + c;
                x[i] = (T)0.0f;
                if (i0 + i < PER && e < ROWS * COLS && gr < rows_end && gc < cols_end)
                    x[i] = g[(long long)gr * ld + gc];
            }
#pragma unroll
            for (int i = 0; i < CHUNK; i++) {
                const int e = (int)threadIdx.x + (i0 + i) * THREADS;
                if (i0 + i < PER && e < ROWS * COLS) s[(e / COLS) * SLD + e % COLS] = x[i];
            }
        }
    }
}

/* The fast path of load_tile for the tiles of one operand in one block:
 * each thread's vectors lie in one column of 16 bytes and rows RSTEP apart,
 * so their global and shared addresses are fixed offsets from one base, and
 * whether each lies inside the matrix along the block's fixed dimension (M
 * or N) is known once per block. A full tile along K then costs one 16-byte
 * cp.async per vector and no index arithmetic. Rows or columns outside the
 * matrix along M/N are not written at all: they feed only accumulators of
 * rows/columns of C that are never stored (only K padding must be zero, and
 * a tile with K padding takes load_tile). KROWS: K runs along the tile's
 * rows (an M/N-contiguous operand), else along its columns. */
template <class T, int ROWS, int COLS, int SLD, int THREADS, bool KROWS>
struct FastTile {
    static constexpr int VEC = 16 / (int)sizeof(T);
    static constexpr int VPR = COLS / VEC;
    static constexpr int NV = ROWS * VPR;
    static constexpr int RSTEP = THREADS / VPR;
    static constexpr int PER = (NV + THREADS - 1) / THREADS;
    static_assert(THREADS % VPR == 0, "a thread's vectors must share one column");
    static_assert(PER <= 32, "one validity bit per vector");
    const T *src;       /* the thread's first vector in the tile at K offset 0 of the block */
    long long ld;       /* elements between rows */
    int soff;           /* shared offset of the first vector */
    unsigned valid;     /* bit j: vector j lies inside the matrix */
    bool ok;            /* the block may use the fast path (aligned, no vector cut by the M/N edge) */

    /* g, ld, r0, c0: the tile's origin as load_tile takes it, at the
     * block's first K; fixed_end: where the matrix ends along M/N. */
    __device__ __forceinline__ void init(const T *g, long long ld_, int r0, int c0, int fixed_end, bool vec)
    {
        const int v = (int)threadIdx.x, r = v / VPR, c = (v % VPR) * VEC;
        ld = ld_;
        src = g + (long long)(r0 + r) * ld_ + c0 + c;
        soff = r * SLD + c;
        valid = 0;
#pragma unroll
        for (int j = 0; j < PER; j++) {
            bool in = NV % THREADS == 0 || v + j * THREADS < NV;
            if (KROWS) in = in && c0 + c + VEC <= fixed_end;
            else in = in && r0 + r + j * RSTEP < fixed_end;
            valid |= (in ? 1u : 0u) << j;
        }
        /* an M/N-contiguous operand whose edge cuts a vector needs load_tile's element loads */
        ok = vec && (!KROWS || fixed_end % VEC == 0 || c0 + COLS <= fixed_end);
    }
    /* Tile whose first K is k_off elements past the block's first K. */
    __device__ __forceinline__ void load(T *s, int k_off) const
    {
        const T *g = src + (long long)k_off * (KROWS ? ld : 1);
#pragma unroll
        for (int j = 0; j < PER; j++)
            if (valid >> j & 1u) cp_async16(s + soff + j * RSTEP * SLD, g + (long long)j * RSTEP * ld, 16);
    }
};

/* Shared-memory geometry of one stage. */
template <class T, int UNIT, bool AK, bool BKC, int BM, int BN, int BK>
struct Smem {
    /* 16 bytes of padding per row keeps ldmatrix and cp.async rows aligned
     * and spreads rows over the banks; tf32 fragments read single words
     * across rows of an M/N-contiguous tile and need 32 bytes. */
    static constexpr int PAD16 = 16 / (int)sizeof(T);
    static constexpr int PADA = AK ? PAD16 : (sizeof(T) == 4 && UNIT == UNIT_TENSOR ? 2 * PAD16 : PAD16);
    static constexpr int PADB = BKC ? PAD16 : (sizeof(T) == 4 && UNIT == UNIT_TENSOR ? 2 * PAD16 : PAD16);
    static constexpr int LDA = AK ? BK + PADA : BM + PADA;     /* A: [BM][LDA] or [BK][LDA] */
    static constexpr int LDB = BKC ? BK + PADB : BN + PADB;    /* B: [BN][LDB] or [BK][LDB] */
    static constexpr int A_ELEMS = AK ? BM * LDA : BK * LDA;
    static constexpr int B_ELEMS = BKC ? BN * LDB : BK * LDB;
    static constexpr int STAGE_ELEMS = A_ELEMS + B_ELEMS;
};

/* ---- L0: Tensor Core warp tile ---------------------------------------- */

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

template <class T> __device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                                            unsigned b1);
template <> __device__ __forceinline__ void mma16816<__half>(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                                             unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4],
                                                                    unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned to_tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void mma1688_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* One stage's BK columns through a warp's WM x WN accumulators.
 * acc[mt][nt][i]: row g + 8*(i/2), column 2t + (i%2) of 16x8 tile (mt, nt),
 * g = lane / 4, t = lane % 4 (the mma accumulator layout). */
template <class T, bool AK, bool BKC, int BM, int BN, int BK, int WM, int WN, int LDA, int LDB>
__device__ __forceinline__ void warp_mma_stage(float (&acc)[WM / 16][WN / 8][4], const T *As, const T *Bs, int wm0,
                                               int wn0, int lane)
{
    constexpr int MT = WM / 16, NT = WN / 8;
    if constexpr (sizeof(T) == 2) {
        const int r = lane & 7, idx = lane >> 3;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MT][4], bf[NT][2];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int m = wm0 + mt * 16;
                if constexpr (AK)
                    ldsm_x4(af[mt], As + (m + r + (idx & 1) * 8) * LDA + kk + (idx >> 1) * 8);
                else
                    ldsm_x4_t(af[mt], As + (kk + r + (idx >> 1) * 8) * LDA + m + (idx & 1) * 8);
            }
#pragma unroll
            for (int nt = 0; nt < NT; nt += 2) {
                const int n = wn0 + nt * 8;
                unsigned q[4];
                if constexpr (BKC)
                    ldsm_x4(q, Bs + (n + r + (idx >> 1) * 8) * LDB + kk + (idx & 1) * 8);
                else
                    ldsm_x4_t(q, Bs + (kk + r + (idx & 1) * 8) * LDB + n + (idx >> 1) * 8);
                bf[nt][0] = q[0]; bf[nt][1] = q[1];
                bf[nt + 1][0] = q[2]; bf[nt + 1][1] = q[3];
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
                    mma16816<T>(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
        }
    } else {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            unsigned af[MT][4], bf[NT][2];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int m = wm0 + mt * 16 + g;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int mi = m + (i & 1) * 8, ki = kk + t + (i >> 1) * 4;
                    af[mt][i] = to_tf32(AK ? As[mi * LDA + ki] : As[ki * LDA + mi]);
                }
            }
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int n = wn0 + nt * 8 + g;
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const int ki = kk + t + i * 4;
                    bf[nt][i] = to_tf32(BKC ? Bs[n * LDB + ki] : Bs[ki * LDB + n]);
                }
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
                    mma1688_tf32(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
        }
    }
}

/* ---- L0: CUDA-core warp tile ------------------------------------------- */

/* Four consecutive elements from shared memory as floats (16 or 8 bytes). */
__device__ __forceinline__ void lds4(float (&o)[4], const float *p)
{
    const float4 v = *reinterpret_cast<const float4 *>(p);
    o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
}
__device__ __forceinline__ void lds4(float (&o)[4], const __half *p)
{
    const uint2 v = *reinterpret_cast<const uint2 *>(p);
    const float2 lo = __half22float2(*reinterpret_cast<const __half2 *>(&v.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2 *>(&v.y));
    o[0] = lo.x; o[1] = lo.y; o[2] = hi.x; o[3] = hi.y;
}
__device__ __forceinline__ void lds4(float (&o)[4], const __nv_bfloat16 *p)
{
    const uint2 v = *reinterpret_cast<const uint2 *>(p);
    const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&v.x));
    const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&v.y));
    o[0] = lo.x; o[1] = lo.y; o[2] = hi.x; o[3] = hi.y;
}

/* A CUDA-core thread's columns. B N-contiguous: TN adjacent columns, read
 * four at a time along a shared row. B K-contiguous: columns 8 apart (lane
 * tx takes wn0 + tx + 8j): each column is then a shared row, LDB elements
 * long, and the 8 lanes of one load phase read 8 rows. TN rows apart, as
 * the adjacent columns had it, those rows start TN * LDB words apart
 * (LDB = 20 words for f32, f16 and bf16 alike): all 8 in one bank group
 * for TN = 8, in two for TN = 4, so the phase's loads queued 8 or 4 deep
 * (tune.json on an H200: the kk kernels took 2.7x the kn ones' time per K
 * step, 64x128: 470 ns against 171); adjacent rows (LDB = BK + a 16-byte
 * pad) fall in 8 different groups. Not yet run on a GPU. */
template <bool BKC, int TN>
__device__ __forceinline__ int simt_col_base(int wn0, int tx)
{
    return BKC ? wn0 + tx : wn0 + tx * TN;
}
template <bool BKC> __device__ __forceinline__ int simt_col(int n0, int j) { return BKC ? n0 + 8 * j : n0 + j; }

/* Lane (ty, tx) = (lane / 8, lane % 8) of a warp owns rows wm0 + ty*TM + i
 * and columns simt_col<BKC>(n0, j), n0 = simt_col_base<BKC, TN>(wn0, tx);
 * K advances four at a time so every shared load is a 4-element vector
 * along whichever dimension is contiguous. */
template <class T, bool AK, bool BKC, int BK, int TM, int TN, int LDA, int LDB>
__device__ __forceinline__ void thread_fma_stage(float (&acc)[TM][TN], const T *As, const T *Bs, int m0, int n0)
{
#pragma unroll 2
    for (int kk = 0; kk < BK; kk += 4) {
        float a[4][TM], b[4][TN];
        if constexpr (AK) {
#pragma unroll
            for (int i = 0; i < TM; i++) {
                float v[4];
                lds4(v, As + (m0 + i) * LDA + kk);
#pragma unroll
                for (int q = 0; q < 4; q++) a[q][i] = v[q];
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    float v[4];
                    lds4(v, As + (kk + q) * LDA + m0 + i);
#pragma unroll
                    for (int e = 0; e < 4; e++) a[q][i + e] = v[e];
                }
        }
        if constexpr (BKC) {
#pragma unroll
            for (int j = 0; j < TN; j++) {
                float v[4];
                lds4(v, Bs + simt_col<BKC>(n0, j) * LDB + kk);
#pragma unroll
                for (int q = 0; q < 4; q++) b[q][j] = v[q];
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    float v[4];
                    lds4(v, Bs + (kk + q) * LDB + n0 + j);
#pragma unroll
                    for (int e = 0; e < 4; e++) b[q][j + e] = v[e];
                }
        }
#pragma unroll
        for (int q = 0; q < 4; q++)
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a[q][i], b[q][j], acc[i][j]);
    }
}

/* One stage through load_tile's general path (a ragged K tile, an operand
 * whose M/N edge cuts a vector, unaligned operands). Out of line: inlined,
 * its element-wise branches made the main loop several times larger, and
 * the fast loop then stalled on instruction fetch (ncu on an H100: a third
 * of its stall cycles). */
template <class T, bool AK, bool BKC, int BM, int BN, int BK, int LDA, int LDB, int THREADS>
__device__ __noinline__ void load_stage_edge(T *As, T *Bs, const T *A, long long lda, const T *B, long long ldb, int m,
                                             int n, int bm0, int bn0, int k0, int ke, bool avec, bool bvec)
{
    if constexpr (AK)
        load_tile<T, BM, BK, LDA, THREADS>(As, A, lda, bm0, k0, m, ke, avec);
    else
        load_tile<T, BK, BM, LDA, THREADS>(As, A, lda, k0, bm0, ke, m, avec);
    if constexpr (BKC)
        load_tile<T, BN, BK, LDB, THREADS>(Bs, B, ldb, bn0, k0, n, ke, bvec);
    else
        load_tile<T, BK, BN, LDB, THREADS>(Bs, B, ldb, k0, bn0, ke, n, bvec);
}

/* Split-K inside one launch on sm_90: the p.cluster slices of a tile run as
 * one thread-block cluster (cluster dims 1 x 1 x slices). Each slice puts its
 * partial tile in its own shared memory (the pipeline's buffers, drained by
 * then); after a cluster barrier slice r adds rows r, r + slices, ... of all
 * slices' tiles through distributed shared memory and stores them, and a
 * second barrier keeps every slice's shared memory alive until the others
 * have read it. No workspace, no counters, no second launch: the partial
 * sums never leave the GPC. Needs BM x (BN + 4) floats of shared memory. */
template <int BM, int BN, int WM, int WN, int THREADS>
__device__ __forceinline__ void cluster_reduce_store(const KParams &p, float (&acc)[WM / 16][WN / 8][4],
                                                     unsigned char *smem_raw, int bm0, int bn0, int wm0, int wn0,
                                                     int lane)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    constexpr int LD = BN + 4; /* rows 16 bytes apart in banks: the float2 writes below do not collide */
    float *red = reinterpret_cast<float *>(smem_raw);
    const int g = lane >> 2, t = lane & 3;
    __syncthreads(); /* every warp is done reading the pipeline's buffers */
#pragma unroll
    for (int mt = 0; mt < WM / 16; mt++)
#pragma unroll
        for (int nt = 0; nt < WN / 8; nt++) {
            float *q = red + (wm0 + mt * 16 + g) * LD + wn0 + nt * 8 + 2 * t;
            *reinterpret_cast<float2 *>(q) = make_float2(acc[mt][nt][0], acc[mt][nt][1]);
            *reinterpret_cast<float2 *>(q + 8 * LD) = make_float2(acc[mt][nt][2], acc[mt][nt][3]);
        }
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    const int slices = p.cluster, me = (int)cluster.block_rank();
    constexpr int V = BN / 4; /* float4 columns per row */
    /* Rows me, me + slices, ...: every thread takes whole float4s, and all
     * slices' loads are issued before the first add (a loop that waited
     * out one remote load per slice and row ran 2-3x slower than the
     * reduction launch it replaces: H100, first version). */
    const int items = (BM - me + slices - 1) / slices * V;
    for (int it = (int)threadIdx.x; it < items; it += THREADS) {
        const int row = me + (it / V) * slices, col = bn0 + 4 * (it % V);
        if (bm0 + row >= p.m || col >= p.n) continue;
        float4 part[CLUSTER_MAX_SLICES];
#pragma unroll
        for (int r = 0; r < CLUSTER_MAX_SLICES; r++)
            if (r < slices)
                part[r] = *reinterpret_cast<const float4 *>(cluster.map_shared_rank(red, r) + row * LD + (col - bn0));
        float4 sum = part[0];
#pragma unroll
        for (int r = 1; r < CLUSTER_MAX_SLICES; r++)
            if (r < slices) {
                sum.x += part[r].x; sum.y += part[r].y; sum.z += part[r].z; sum.w += part[r].w;
            }
        store_final(p, bm0 + row, col, sum.x);
        store_final(p, bm0 + row, col + 1, sum.y);
        store_final(p, bm0 + row, col + 2, sum.z);
        store_final(p, bm0 + row, col + 3, sum.w);
    }
    cluster.sync();
#endif
}

/* ---- L1 + L2: the CTA ---------------------------------------------------- */

template <int BM, int BN, int WM, int WN>
struct Warps {
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
};

/* Tile (tm, tn) of block b: groups of 8 tile rows are walked column by
 * column, so concurrently running blocks share A rows and B columns in L2. */
__device__ __forceinline__ void raster(int b, int tiles_m, int tiles_n, int &tm, int &tn)
{
    const int group = 8;
    const int width = group * tiles_n;
    const int first = (b / width) * group;
    const int rows = min(tiles_m - first, group);
    const int in = b % width;
    tm = first + in % rows;
    tn = in / rows;
}

template <class T, int UNIT, bool AK, bool BKC, int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__(Warps<BM, BN, WM, WN>::THREADS) gemm_kernel(KParams p)
{
    using S = Smem<T, UNIT, AK, BKC, BM, BN, BK>;
    constexpr int THREADS = Warps<BM, BN, WM, WN>::THREADS;
    constexpr int WARPS_N = Warps<BM, BN, WM, WN>::WARPS_N;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *smem = reinterpret_cast<T *>(smem_raw);

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

    /* Fast loads for every full K tile (all but a ragged last one). */
    FastTile<T, AK ? BM : BK, AK ? BK : BM, S::LDA, THREADS, !AK> fa;
    FastTile<T, BKC ? BN : BK, BKC ? BK : BN, S::LDB, THREADS, !BKC> fb;
    if constexpr (AK) fa.init(A, p.lda, bm0, kb, p.m, avec);
    else fa.init(A, p.lda, kb, bm0, p.m, avec);
    if constexpr (BKC) fb.init(B, p.ldb, bn0, kb, p.n, bvec);
    else fb.init(B, p.ldb, kb, bn0, p.n, bvec);
    const bool fast = fa.ok && fb.ok;

    auto load_stage = [&](int kt, int stage) {
        T *As = smem + stage * S::STAGE_ELEMS;
        T *Bs = As + S::A_ELEMS;
        const int k0 = kb + kt * BK;
        if (fast && k0 + BK <= ke) {
            fa.load(As, kt * BK);
            fb.load(Bs, kt * BK);
        } else {
            load_stage_edge<T, AK, BKC, BM, BN, BK, S::LDA, S::LDB, THREADS>(As, Bs, A, p.lda, B, p.ldb, p.m, p.n,
                                                                             bm0, bn0, k0, ke, avec, bvec);
        }
    };

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }

    if constexpr (UNIT == UNIT_TENSOR) {
        float acc[WM / 16][WN / 8][4];
#pragma unroll
        for (int i = 0; i < WM / 16; i++)
#pragma unroll
            for (int j = 0; j < WN / 8; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][j][q] = 0.0f;
        for (int kt = 0; kt < ktiles; kt++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            if (kt + STAGES - 1 < ktiles) load_stage(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
            cp_async_commit();
            const T *As = smem + (kt % STAGES) * S::STAGE_ELEMS;
            warp_mma_stage<T, AK, BKC, BM, BN, BK, WM, WN, S::LDA, S::LDB>(acc, As, As + S::A_ELEMS, wm0, wn0,
                                                                           lane);
        }
        cp_async_wait<0>();
        const int g = lane >> 2, t = lane & 3;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (p.cluster > 1) {
            cluster_reduce_store<BM, BN, WM, WN, THREADS>(p, acc, smem_raw, bm0, bn0, wm0, wn0, lane);
            return;
        }
#endif
        const bool pairs = pairs_aligned(p);
#pragma unroll
        for (int mt = 0; mt < WM / 16; mt++)
#pragma unroll
            for (int nt = 0; nt < WN / 8; nt++)
            {
                const int row = bm0 + wm0 + mt * 16 + g, col = bn0 + wn0 + nt * 8 + 2 * t;
                epilogue_store2(p, pairs, row, col, acc[mt][nt][0], acc[mt][nt][1]);
                epilogue_store2(p, pairs, row + 8, col, acc[mt][nt][2], acc[mt][nt][3]);
            }
    } else {
        constexpr int TM = WM / 4, TN = WN / 8;
        static_assert(TM % 4 == 0 && TN % 4 == 0, "CUDA-core thread tiles are multiples of 4");
        float acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
        const int m0 = wm0 + (lane >> 3) * TM, n0 = simt_col_base<BKC, TN>(wn0, lane & 7);
        for (int kt = 0; kt < ktiles; kt++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            if (kt + STAGES - 1 < ktiles) load_stage(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
            cp_async_commit();
            const T *As = smem + (kt % STAGES) * S::STAGE_ELEMS;
            thread_fma_stage<T, AK, BKC, BK, TM, TN, S::LDA, S::LDB>(acc, As, As + S::A_ELEMS, m0, n0);
        }
        cp_async_wait<0>();
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) epilogue_store(p, bm0 + m0 + i, bn0 + simt_col<BKC>(n0, j), acc[i][j]);
    }
}

/* What the host needs of one instance. */
struct KernelEntry {
    const char *name;
    int unit, dtype, tf32, a_kcontig, b_kcontig;
    int bm, bn, bk, wm, wn, stages, threads, smem_bytes;
    const void *func;
    void (*launch)(const KParams &, dim3, cudaStream_t);
    int fixup;         /* split-K reduced inside the kernel (workspace + counters), not by a second launch */
    int cluster;       /* the split-K slices reduce as one cluster (launch = launch_cluster, sm_90, <= 8) */
    int sm90a;         /* Hopper family (wgmma_kernel.cuh): compiled for sm_90a only, runs on cc 9.0 alone */
};

/* Launch kernel over grid with its z slices as one thread-block cluster
 * (1 x 1 x grid.z; sm_90, grid.z <= 8), p.cluster telling the kernel so:
 * the split-K slices then reduce in distributed shared memory
 * (cluster_reduce_store). Both kernel families' cluster entries use it. */
inline void launch_z_cluster(void (*kernel)(KParams), const KParams &p, dim3 grid, int threads, int smem,
                             cudaStream_t s)
{
    KParams q = p;
    q.cluster = (int)grid.z;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = grid.z;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, q);
}

template <class T, int UNIT, bool AK, bool BKC, int BM, int BN, int BK, int WM, int WN, int STAGES>
struct Instance {
    using S = Smem<T, UNIT, AK, BKC, BM, BN, BK>;
    static constexpr int THREADS = Warps<BM, BN, WM, WN>::THREADS;
    static constexpr int SMEM = STAGES * S::STAGE_ELEMS * (int)sizeof(T);
    static_assert(BM % WM == 0 && BN % WN == 0, "the CTA tile is a multiple of the warp tile");
    static_assert(UNIT == UNIT_SIMT || (WM % 16 == 0 && WN % 16 == 0), "mma warp tiles are multiples of 16");
    static void launch(const KParams &p, dim3 grid, cudaStream_t s)
    {
        gemm_kernel<T, UNIT, AK, BKC, BM, BN, BK, WM, WN, STAGES><<<grid, THREADS, SMEM, s>>>(p);
    }
    /* The grid's z slices as one cluster that reduces in shared memory
     * (cluster_reduce_store); sm_90 only, grid.z <= 8 (the portable size). */
    static constexpr bool CLUSTER_FITS = UNIT == UNIT_TENSOR && BM * (BN + 4) * 4 <= SMEM;
    static void launch_cluster(const KParams &p, dim3 grid, cudaStream_t s)
    {
        launch_z_cluster(gemm_kernel<T, UNIT, AK, BKC, BM, BN, BK, WM, WN, STAGES>, p, grid, THREADS, SMEM, s);
    }
    static const void *func() { return (const void *)gemm_kernel<T, UNIT, AK, BKC, BM, BN, BK, WM, WN, STAGES>; }
};

} // namespace vx
