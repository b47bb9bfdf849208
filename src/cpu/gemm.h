/* CPU GEMM driver: executes a plan (L2 thread grid, L1 blocking + packing or
 * in-place operands, L0 micro-kernels) on a canonical problem. */
#ifndef VX_CPU_GEMM_H
#define VX_CPU_GEMM_H

#include <stdint.h>

#include "analyzer/plan.h"
#include "vortex/vortex.h"

/* C[i][j] = alpha * sum_p A[i][p] B[p][j] + beta * C[i][j], with
 * A[i][p] = a[i*a_rs + p*a_cs], B[p][j] = b[p*b_rs + j*b_cs], C[i][j] = c[i*c_rs + j].
 * m, n, k >= 1 (the API handles the empty cases). */
typedef struct {
    int64_t m, n, k;
    float alpha, beta;
    const float *a;
    int64_t a_rs, a_cs;
    const float *b;
    int64_t b_rs, b_cs;
    float *c;
    int64_t c_rs;
} vx_gemm_args;

/* Run the plan; returns the threads used through *threads_used (may be NULL). */
vx_status vx_cpu_gemm(const vx_gemm_args *g, const vx_gemm_plan *plan, int *threads_used);

#endif
