/* L0 for matrix-vector products (m == 1 or n == 1 after canonicalisation).
 *
 * With one operand a vector there is nothing to reuse: a GEMM tile would
 * waste all but one of its columns (or rows), and packing would copy the
 * matrix once more. These kernels stream the matrix once, in place, and are
 * bound by the bandwidth of wherever it lives. One source (gemv_kernels.c)
 * is compiled once per ISA with that ISA's flags.
 *
 * Two forms, by which way the matrix is contiguous:
 *   dot : y[i] = alpha * sum_p M[i*ldm + p] * x[p]        (rows along k)
 *   axpy: y[j] = alpha * sum_p x[p*incx] * M[p*ldm + j]   (rows along y)
 * and the store of every element, for i (or j) < len:
 *   y[i*incy] = act(alpha*acc + beta*y[i*incy] + bias_scalar + bias_vec[i])
 * where beta == 0 never reads y, bias_vec may be NULL and act is max(0, .)
 * when relu. */
#ifndef VX_CPU_GEMV_H
#define VX_CPU_GEMV_H

#include <stdint.h>

#include "cpu/ukernel.h"

typedef struct {
    float alpha, beta;
    const float *bias_vec; /* len values, or NULL */
    float bias_scalar;
    int relu;
} vx_gemv_store;

typedef void (*vx_gemv_dot_fn)(int64_t len, int64_t k, const float *m, int64_t ldm, const float *x,
                               float *y, int64_t incy, const vx_gemv_store *st);
typedef void (*vx_gemv_axpy_fn)(int64_t len, int64_t k, const float *m, int64_t ldm, const float *x,
                                int64_t incx, float *y, int64_t incy, const vx_gemv_store *st);

/* The axpy form for a few output rows at once (a GEMM with m <= rows_max
 * and unit-stride rows of B): row i takes x + i*x_rs as its vector and
 * writes y + i*y_rs (unit stride) with its own store, s[i]. The matrix is
 * read once for all rows. pass_floats > 0 bounds what one pass over the
 * matrix keeps in use, the rows' partial sums and the rows of the matrix
 * it reads at once, so that they stay in L1 (a matrix in the caches:
 * gemm.h, vx_gemv_pass_floats); 0 leaves the kernel its 32 KiB of sums, whose long
 * runs a matrix from DRAM needs. */
enum { VX_GEMV_ROWS_MAX = 4 };

typedef void (*vx_gemv_axpy_rows_fn)(int rows, int64_t len, int64_t k, const float *m, int64_t ldm,
                                     const float *x, int64_t x_rs, int64_t incx, float *y, int64_t y_rs,
                                     const vx_gemv_store *s, int64_t pass_floats);

/* The end of a K-split product: y[j*incy] = store(sum over q < parts of
 * part[q*part_stride + j]) for j < len, the parts being partial sums of
 * disjoint ranges of k. */
typedef void (*vx_gemv_sum_store_fn)(int parts, const float *part, int64_t part_stride, int64_t len, float *y,
                                     int64_t incy, const vx_gemv_store *s);

/* Split k among t threads instead of the output (each streams one
 * contiguous range of the matrix's rows into partial sums, the last to end
 * adds them) where the output is shorter than t x VX_GEMV_KSPLIT_LEN and k
 * is at least t x rows x VX_GEMV_KSPLIT_K_PER_ROW: split by the output,
 * each thread would read runs shorter than two 4 KiB pages of every row,
 * which stream badly (the prefetchers stop at page ends); with long runs
 * the output split kept both threads in the same DRAM pages and won by 4 %
 * (1 x 4096..8448 x 1536..25088 from DRAM); split by k costs t x rows
 * partial vectors, at most 1/8 of the matrix. Measured on AMD Zen 1, two
 * threads: NOTES.md, 2026-11-24 (ninth session). The analyzer reads both
 * numbers (levels.h, gemv_ksplit_len) and prices the partial sums. */
enum { VX_GEMV_KSPLIT_LEN = 2048, VX_GEMV_KSPLIT_K_PER_ROW = 8 };

typedef struct {
    vx_gemv_dot_fn dot;
    vx_gemv_axpy_fn axpy;
    int dot_rows;   /* rows one dot step computes: split work in multiples of it */
    int axpy_cols;  /* columns one axpy step computes */
    vx_gemv_axpy_rows_fn axpy_rows;
    int rows_max;   /* most rows a GEMM hands axpy_rows (<= VX_GEMV_ROWS_MAX, all of
                       which it takes, and 1) */
    vx_gemv_sum_store_fn sum_store;
} vx_gemv_kernels;

const vx_gemv_kernels *vx_gemv_kernels_for(vx_isa isa);

#endif
