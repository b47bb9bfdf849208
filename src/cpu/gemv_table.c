/* The per-ISA matrix-vector kernels (gemv_kernels.c compiled once per ISA). */
#include "cpu/gemv.h"

#define DECL(bytes)                                                                                \
    void vx_gemv_dot_v##bytes(int64_t, int64_t, const float *, int64_t, const float *, float *,   \
                              int64_t, const vx_gemv_store *);                                     \
    void vx_gemv_axpy_v##bytes(int64_t, int64_t, const float *, int64_t, const float *, int64_t,  \
                               float *, int64_t, const vx_gemv_store *);                       \
    void vx_gemv_axpy_rows_v##bytes(int, int64_t, int64_t, const float *, int64_t, const float *,   \
                                    int64_t, int64_t, float *, int64_t, const vx_gemv_store *);
DECL(32)
DECL(64)

static const vx_gemv_kernels g_kernels[VX_ISA_COUNT] = {
    [VX_ISA_AVX2] = {vx_gemv_dot_v32, vx_gemv_axpy_v32, 4, 8 * 8, vx_gemv_axpy_rows_v32, VX_GEMV_ROWS_MAX},
    [VX_ISA_AVX512] = {vx_gemv_dot_v64, vx_gemv_axpy_v64, 4, 8 * 16, vx_gemv_axpy_rows_v64, VX_GEMV_ROWS_MAX},
};

const vx_gemv_kernels *vx_gemv_kernels_for(vx_isa isa)
{
    return &g_kernels[isa == VX_ISA_AVX512 ? VX_ISA_AVX512 : VX_ISA_AVX2];
}
