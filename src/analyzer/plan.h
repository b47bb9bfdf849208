/* Plan selection for CPU GEMM: which L0 tile, which L1 blocking, which L2
 * thread grid and whether to pack. This is the interface the analyzer fills;
 * for now a simple hardware-derived rule (plan.c) decides. */
#ifndef VX_ANALYZER_PLAN_H
#define VX_ANALYZER_PLAN_H

#include <stdint.h>
#include "cpu/ukernel.h"

typedef enum {
    VX_PATH_AUTO = 0,
    VX_PATH_PACKED = 1,   /* L1 blocking, A and B packed into CacheBuffers */
    VX_PATH_PACK_B = 2,   /* A in place, B packed per nr panel (no blocking) */
    VX_PATH_DIRECT = 3,   /* A and B in place (needs unit-stride B rows) */
    VX_PATH_CONV_DIRECT = 4, /* convolution only: the direct (depthwise) kernel family */
    VX_PATH_GEMV = 5,     /* m == 1 or n == 1: the matrix streamed once (cpu/gemv.h) */
    VX_PATH_DOT = 6,      /* B stored transposed: both operands read in place along k by
                             the dot-form tiles (cpu/dot.h); kc and mc are its blocks */
    VX_PATH_RESIDENT = 7  /* k and n small: all of B held in registers while A's rows
                             stream past (cpu/resident.h); threads split the rows */
} vx_path;

/* The shape the planner sees (after the API has canonicalised the call so
 * that C has unit column stride). */
typedef struct {
    int64_t m, n, k;
    int b_unit_stride;    /* B[p][j+1] is next to B[p][j] */
    int a_unit_stride;    /* A[i][p+1] is next to A[i][p] */
    int pool_warm;        /* the thread pool's state (vx_pool_state, levels.h vx_units_state):
                             its workers still spin, and what a region costs now */
    int a_gathered;       /* A is produced by a gather (conv's im2col): packed plans only */
    int b_gathered;       /* B is produced by a gather: B is never read in place */
    int64_t a_seg;        /* > 0: A read in place comes in segments of this length
                             along k (a convolution's taps; see levels.h) */
    int64_t a_run, b_run; /* > 0: copying A / B gathers contiguous runs this long */
    int64_t a_row, a_edge; /* a_row > 0: A in place is cut into rows of a_row, each with
                              a_edge one-row tiles at its edges (see levels.h) */
    double a_kfrac;       /* in (0, 1): in place, only this fraction of k is computed */
    double b_kfrac;       /* in (0, 1): ... and only this fraction of B's rows copied */
    int64_t a_img;        /* > 0: A in place comes in images of a_img rows, a_edge_rows */
    int64_t a_edge_rows;  /* of whose rows of a_row reach into padding (see levels.h) */
    int64_t a_pitch;      /* > 0: A in place (segments) has rows this many elements apart */
    int64_t a_band_runs;  /* > 0: band tiles allowed, with this many times the calls (levels.h) */
    double a_band_pixels; /* ... each tap column over this many of a row's pixels (levels.h) */
    double a_pixel_elems; /* > 0: A in place (a convolution's input) holds this many elements
                             under each row of A, its output pixel (levels.h) */
    int b_prepacked;      /* B's nr-wide panels exist already (a packed filter): pack-B plans
                             read them instead of packing (levels.h) */
    int a_prepacked;      /* A's mr-row panels exist already (an NCHW packed filter): packed
                             plans read them instead of copying A (levels.h) */
    int64_t a_ld, b_ld, c_ld; /* > 0: the caller's leading dimensions, in elements: A's (between
                             its rows of k along m, or of m along k where transposed), B's (its
                             rows of n, or of k), C's rows; 0: dense (k or m, n or k, n). The
                             model prices in-place reads at these strides (levels.h) */
} vx_gemm_shape;

typedef struct {
    vx_isa isa;
    vx_path path;
    int family;           /* index into vx_ukernels(isa)->families */
    int mr, nr;           /* register tile, mr <= family's mr_max */
    int64_t mc, kc, nc;   /* L1 block: mc % mr == 0, nc % nr == 0 */
    int threads_m, threads_n; /* L2 grid of cells over C */
    int threads;          /* threads that share the cells (<= cells) */
    vx_path fallback;     /* VX_PATH_GEMV, _DOT and _RESIDENT: the best GEMM path, whose tile and
                             blocks the fields above hold, for a problem the
                             matrix-vector kernels cannot take (odd strides) */
    int conv_via_nhwc;    /* convolution only: an NCHW call run by the NHWC plan the
                             fields above describe, its input and filter transposed
                             to NHWC/KRSC before and its output back after */
} vx_gemm_plan;

/* Fill *out for this shape, ISA and thread budget. Never fails. */
void vx_plan_gemm(const vx_gemm_shape *shape, vx_isa isa, int max_threads, vx_gemm_plan *out);

/* A hash of what a convolution's implicit GEMM adds to a shape (its tap
 * segments, runs, pixel rows and images, padded fractions of k): part of
 * every plan cache key, since shapes equal in m, n and k but not in these
 * are priced apart. 0 for plain matrices. */
int64_t vx_shape_geometry_key(const vx_gemm_shape *shape);

/* The same for a plain GEMM (no convolution fields), without building the
 * shape on a cache hit (every dyn_gemm call). */
void vx_plan_gemm_plain(int64_t m, int64_t n, int64_t k, int b_unit_stride, int a_unit_stride, int64_t a_ld,
                        int64_t b_ld, int64_t c_ld, int pool_warm, vx_isa isa, int max_threads, vx_gemm_plan *out);

/* Testing hook: every non-zero field of *o replaces the rule's choice for
 * later calls in this process (path, nr, mr, mc, kc, nc, threads_m,
 * threads_n, threads; isa is ignored, use VORTEX_ISA). NULL clears it. Not
 * thread-safe against concurrent dyn_gemm calls: set it before them. */
void vx_plan_set_override(const vx_gemm_plan *o);

/* For planners built on this one (convolution): when an override is set,
 * apply it to *plan (a GEMM plan for shape s; NULL: only ask), report its
 * path through *path (may be NULL) and return 1; else return 0 and change
 * nothing. */
int vx_plan_apply_override(const vx_gemm_shape *s, vx_gemm_plan *plan, vx_path *path);

/* Testing: 1 when the override set asks an NCHW convolution to run as NHWC
 * (its conv_via_nhwc), where the analyzer offers that. */
int vx_plan_override_via(void);

/* 1 when two plans run the same way (path, tile, blocks, grid). */
int vx_plan_same(const vx_gemm_plan *a, const vx_gemm_plan *b);

/* A one-line human description, e.g. "packed avx512 14x32 mc=... t=1x2". */
void vx_plan_describe(const vx_gemm_plan *p, char *buf, int len);

#endif
