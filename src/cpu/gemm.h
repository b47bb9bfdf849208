/* CPU GEMM driver: executes a plan (L2 thread grid, L1 blocking + packing or
 * in-place operands, L0 micro-kernels) on a canonical problem. The same
 * driver runs convolutions as implicit GEMMs: an operand may be gathered
 * (im2col on the fly, straight into the packed CacheBuffer) instead of read
 * from a strided matrix, a batch of independent problems shares one plan and
 * one parallel region, and bias + ReLU ride in the micro-kernel's store. */
#ifndef VX_CPU_GEMM_H
#define VX_CPU_GEMM_H

#include <stdint.h>

#include "analyzer/plan.h"
#include "cpu/ukernel.h"
#include "vortex/vortex.h"

/* An operand produced by a load stage instead of a strided matrix. pack()
 * writes rows [r0, r0 + rows) x columns [c0, c0 + cols) of batch item `item`
 * in the packed layout of vx_pack_a (A: panels of `panel` rows) or vx_pack_b
 * (B: panels of `panel` columns, zero-padded), see cpu/pack.h. A gather
 * embeds this struct first and reaches its own state through self. */
typedef struct vx_gather {
    void (*pack)(const struct vx_gather *self, int64_t item, int64_t r0, int64_t rows,
                 int64_t c0, int64_t cols, int panel, float *out);
} vx_gather;

/* Offsets (in floats) of batch item i = outer * inner_count + inner. */
typedef struct { int64_t outer, inner; } vx_batch_stride;

/* What a convolution adds to a GEMM: gathered operands, a batch of items
 * and a fused epilogue. A plain GEMM has none (vx_gemm_args.ext == NULL),
 * so its call builds and copies only the small struct below. */
typedef struct {
    const vx_gather *gather_a, *gather_b; /* non-NULL: the operand is gathered (a/b unused) */
    int64_t batch, batch_inner;           /* items = batch (0 means 1); item splits by batch_inner */
    vx_batch_stride a_bs, b_bs, c_bs, bias_bs;
    const float *bias_row, *bias_col;     /* epilogue bias per row of C / per column, or NULL */
    int relu, epilogue;                   /* epilogue != 0: apply bias/relu after the last K block */
    const float *b_panels;                /* non-NULL: B packed already, for the plan's nr (a packed
                                             filter, conv_filter.h): panel q of item i, k x nr, at
                                             b_panels + i * b_panels_item + q * k * nr; pack-B plans
                                             read it instead of packing B */
    int64_t b_panels_item;
    const float *a_panels;                /* non-NULL: A packed already, for the plan's mr (an NCHW
                                             packed filter): panel r of an item (rows r*mr ..,
                                             rows_r = min(mr, m - r*mr) of them) at its offset
                                             (a_panels_bs) + r * mr * k, element (i, p) at
                                             p * rows_r + i (vx_pack_a's layout over all of k);
                                             packed plans read it instead of copying A */
    vx_batch_stride a_panels_bs;
} vx_gemm_ext;

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
    const vx_gemm_ext *ext; /* NULL for a plain GEMM */
} vx_gemm_args;

/* The bytes of C from which in-place plans stream it past the caches (twice
 * the last-level cache's size, or the testing value below), and the most bytes
 * of B a cell may span for them to (half the L2): gemm.c's streams_c, which
 * the analyzer prices (levels.h, stream_c_min). */
int64_t vx_gemm_stream_c_min(void);
/* The few-row matrix-vector kernel's pass bound for a matrix of k rows of
 * len floats (gemv.h, axpy_rows): 3/4 of L1 where the matrix fits the
 * last-level cache, else 0. */
int64_t vx_gemv_pass_floats(int64_t len, int64_t k);
int64_t vx_gemm_stream_b_max(void);
/* ... and a cell of one column tile streams C only where k is at most
 * vx_gemm_stream_one_tile_k_max() (gemm.c, streams_c; the analyzer prices
 * the same rule): VX_GEMM_STREAM_ONE_TILE_K_MAX unless the tune measured
 * otherwise (tune.h, stream_one_tile_ratio; cpu_levels.c sets it as the
 * model is built). A negative value restores the default. */
enum { VX_GEMM_STREAM_ONE_TILE_K_MAX = 32 };
int vx_gemm_stream_one_tile_k_max(void);
void vx_gemm_set_stream_one_tile_k_max(int k);

/* Testing: the size of C, in bytes, from which in-place plans stream C
 * past the caches (gemm.c, streams_c); negative restores the default. */
void vx_gemm_set_stream_bytes(int64_t bytes);

/* The last-level cache the driver's thresholds count on (streaming C, B's
 * far fetches, the few-row passes), in bytes: what the tune read at L3's
 * rate where that is less than the hardware query reports (cpu_levels.c
 * sets it as the model is built; tune.h, l3_effective_bytes); 0 (the
 * default) takes the hardware query's. vx_gemm_last_level_bytes reads it. */
void vx_gemm_set_last_level_bytes(int64_t bytes);
int64_t vx_gemm_last_level_bytes(void);

/* Whether a call writing c_bytes of C tells the kernels its C comes from
 * beyond the caches (ukernel.h, c_far): more than the last level. */
int vx_gemm_c_far(double c_bytes);

/* Whether packed plans fetch the next panel of B into L2 as their row tiles
 * run (gemm.c, next_panel_fetch): 0 never (the same arithmetic without the
 * fetches, for tests and comparisons), 1 where the tune found that they pay
 * (tune.h, fetch_next_ratio; the default), 2 wherever the shape allows
 * (the tune's probe, tests). */
void vx_gemm_set_fetch_next(int mode);

/* Whether direct plans pack each B panel as their first row tile reads it
 * (gemm.c, packs_on_read): 0 never (for tests and comparisons), 1 where
 * the row rule allows and, for B's rows closer than a page, where the tune
 * found that it pays (tune.h, pack_on_read_ratio; the default), 2 wherever
 * the row rule allows (the tune's probe, tests). */
void vx_gemm_set_pack_on_read(int mode);

/* Testing and comparisons: 0 makes packed plans copy A's blocks always, 1
 * (the default) lets them read A's rows in place where the rows allow
 * (gemm.c, reads_a_in_place). The same arithmetic either way. */
void vx_gemm_set_a_in_place(int allow);

/* Whether a packed plan of mr-row tiles reads a plain A whose rows lie
 * a_row_bytes apart in place, on this machine's L1, over k (gemm.c,
 * reads_a_in_place; the tune's context probe prices its calls so). */
int vx_gemm_a_rows_in_place_ok(int mr, int64_t k, int64_t a_row_bytes);

/* Run the plan; returns the threads used through *threads_used (may be NULL). */
vx_status vx_cpu_gemm(const vx_gemm_args *g, const vx_gemm_plan *plan, int *threads_used);

#endif
