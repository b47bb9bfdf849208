/* L0, dot form: GEMM tiles for a B stored transposed (gen/gen_dotkernels.py).
 *
 * Every kernel computes, for its compile-time tile m x n (m <= mr, n <= nr):
 *     C[i][j] = alpha * sum_{p < k} a[i*a_rs + p] * b[j*b_rs + p] + beta * C[i][j]
 * with C[i][j] at c[i*c_rs + j]; beta == 0 never reads C. Both operands
 * are read in place, contiguous along k (A's rows; B^T's rows, i.e. B's
 * columns), k of any length >= 0 (the last partial vector is loaded masked).
 * Each C element's accumulator is a vector of partial sums over k, reduced
 * across its lanes once per call, so a caller splitting k pays that per
 * piece: pieces should be long (hundreds of elements). A non-NULL ep fuses
 * bias and ReLU into the store as the other kernels do (ukernel.h). */
#ifndef VX_CPU_DOT_H
#define VX_CPU_DOT_H

#include <stdint.h>

#include "cpu/ukernel.h"

typedef void (*vx_dot_fn)(int64_t k, const float *a, int64_t a_rs, const float *b, int64_t b_rs, float *c,
                          int64_t c_rs, float alpha, float beta, const vx_epilogue *ep);

enum { VX_DOT_NR_MAX = 8 };

typedef struct {
    int vec_floats;                          /* lanes along k */
    int mr, nr;                              /* the tile (rows of A, rows of B^T) */
    const vx_dot_fn (*fn)[VX_DOT_NR_MAX];    /* fn[m - 1][n - 1], m <= mr, n <= nr */
} vx_dot_set;

/* The generated table for an ISA (never NULL for a valid isa). */
const vx_dot_set *vx_dot_kernels(vx_isa isa);

#endif
