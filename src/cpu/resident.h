/* L0, B resident: kernels for tall, skinny GEMMs whose whole B fits in the
 * vector registers (gen/gen_resident.py).
 *
 * Every kernel, for its compile-time k and V (vectors across n), computes
 * all m rows of
 *     C[i][j] = alpha * sum_{p < k} A[i][p] * B[p][j] + beta * C[i][j]
 * for j < n (1 <= n <= V * vec_floats), with A[i][p] at a[i*a_rs + p],
 * B[p][j] at b[p*b_rs + j] and C[i][j] at c[i*c_rs + j]; beta == 0 never
 * reads C. B is loaded once per call (alpha folded into it), then A's rows
 * are walked in order, groups of rows[V-1] at a time. Only the n valid
 * columns of B and C are touched. No epilogue: plain GEMM calls only.
 *
 * stream != 0 (beta == 0 only; the caller's promise that n == V * lanes and
 * every row of C starts on a vector boundary): C's whole groups are written
 * with non-temporal stores, the last few rows plainly, and the call ends
 * with an SFENCE, so its stores are ordered before whatever the thread
 * publishes next. */
#ifndef VX_CPU_RESIDENT_H
#define VX_CPU_RESIDENT_H

#include <stdint.h>

#include "cpu/ukernel.h"

typedef void (*vx_resident_fn)(int64_t m, const float *a, int64_t a_rs, const float *b, int64_t b_rs, float *c,
                               int64_t c_rs, int64_t n, float alpha, float beta, int stream);

/* VX_RESIDENT_ROW_UNIT: threads split the rows in runs of this many (a
 * run of C's rows of any n then starts on a line where C is contiguous). */
enum { VX_RESIDENT_V_MAX = 2, VX_RESIDENT_ROW_UNIT = 64 };

typedef struct {
    int vec_floats;                               /* lanes per vector */
    int kmax[VX_RESIDENT_V_MAX];                  /* kmax[V-1]: the deepest k with V vectors */
    int rows[VX_RESIDENT_V_MAX];                  /* rows[V-1]: rows per group */
    const vx_resident_fn *fn[VX_RESIDENT_V_MAX];  /* fn[V-1][k-1], k <= kmax[V-1] */
} vx_resident_set;

/* The generated table for an ISA (never NULL for a valid isa). */
const vx_resident_set *vx_resident_kernels(vx_isa isa);

/* The kernel for n columns and depth k, or NULL where B does not fit. */
static inline vx_resident_fn vx_resident_for(const vx_resident_set *R, int64_t n, int64_t k)
{
    if (n < 1 || k < 1)
        return 0;
    const int64_t V = (n + R->vec_floats - 1) / R->vec_floats;
    if (V > VX_RESIDENT_V_MAX || k > R->kmax[V - 1])
        return 0;
    return R->fn[V - 1][k - 1];
}

#endif
