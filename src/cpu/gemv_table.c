/* The per-ISA matrix-vector kernels (gemv_kernels.c compiled once per ISA). */
#include "cpu/gemv.h"

#define DECL(bytes)                                                                                \
    void vx_gemv_dot_v##bytes(int64_t, int64_t, const float *, int64_t, const float *, float *,   \
                              int64_t, const vx_gemv_store *);                                     \
    void vx_gemv_axpy_v##bytes(int64_t, int64_t, const float *, int64_t, const float *, int64_t,  \
                               float *, int64_t, const vx_gemv_store *);                       \
    void vx_gemv_axpy_rows_v##bytes(int, int64_t, int64_t, const float *, int64_t, const float *,   \
                                    int64_t, int64_t, float *, int64_t, const vx_gemv_store *,       \
                                    int64_t);                                                       \
    void vx_gemv_sum_store_v##bytes(int, const float *, int64_t, int64_t, float *, int64_t,        \
                                    const vx_gemv_store *);
DECL(32)
DECL(64)

/* The few-row kernel takes up to VX_GEMV_ROWS_MAX rows, and is offered for
 * all of them. At four rows, compute-bound, a 6x16 or 4x24 register tile
 * had run as fast or faster wherever B was not in DRAM (4x639x2017 from L3,
 * two threads: 290 us against 193), until two threads split k instead of
 * the columns (gemm.c): then m = 4 against oneDNN, 20 shapes, went from
 * 0.94x to 1.03x steady and 1.03x to 1.29x dynamic (AMD Zen 1, NOTES.md,
 * 2026-11-24, ninth session). */
enum { ROWS_OFFERED = 4 };

static const vx_gemv_kernels g_kernels[VX_ISA_COUNT] = {
    [VX_ISA_AVX2] = {vx_gemv_dot_v32, vx_gemv_axpy_v32, 4, 8 * 8, vx_gemv_axpy_rows_v32, ROWS_OFFERED,
                      vx_gemv_sum_store_v32},
    [VX_ISA_AVX512] = {vx_gemv_dot_v64, vx_gemv_axpy_v64, 4, 8 * 16, vx_gemv_axpy_rows_v64, ROWS_OFFERED,
                        vx_gemv_sum_store_v64},
};

const vx_gemv_kernels *vx_gemv_kernels_for(vx_isa isa)
{
    return &g_kernels[isa == VX_ISA_AVX512 ? VX_ISA_AVX512 : VX_ISA_AVX2];
}
