/* The device-neutral level model (the rKernel hierarchy, DESIGN.md).
 *
 * A backend describes its three levels and what it measured; the analyzer
 * (candidates.c, cost.c, search.c) builds candidates bottom-up and prices
 * them without knowing what an AVX register or a CUDA warp is.
 *
 *   L0  register tile m0 x n0 (the K loop inside): measured, t(k) = o + p*k
 *   L1  one unit's block mc x nc x kc, a multiple of its L0 tile; each
 *       operand is either copied into the level's buffer (packing on a CPU,
 *       shared memory on a GPU) or read in place from where it lives
 *   L2  all units: a grid tm x tn of cells over C (parallel loops)
 *
 * Loop roles: at L2 the m and n loops are parallel; at L1 all loops are
 * temporal, n (outermost) and m reuse the copied B block, k is a reduction;
 * L0 runs k as a reduction in registers. */
#ifndef VX_ANALYZER_LEVELS_H
#define VX_ANALYZER_LEVELS_H

#include <stdint.h>

enum { VX_MAX_L0_FAMILIES = 8, VX_MAX_TILE_M = 32 };

/* How L1 gets its operands. The order matches the backend's L0 variants:
 * each load mode runs the L0 kernels that read operands where it leaves them. */
typedef enum {
    VX_LOAD_COPY_AB = 0,  /* A and B copied into the level's buffers */
    VX_LOAD_COPY_B = 1,   /* B copied one n0-wide panel at a time, A in place */
    VX_LOAD_NONE = 2,     /* both read in place */
    VX_LOAD_MODES = 3
} vx_load_mode;

/* t(k) = o + p * k nanoseconds for one L0 call with operands in the level's
 * fastest memory; o covers the C tile's load and store. */
typedef struct {
    float o, p;
} vx_rate;

/* An L0 family: tiles m x n for m = 1..m_max share n and a register cost
 * regs(m) = regs_per_m * m + regs_fixed. */
typedef struct {
    int n, m_max;
    int regs_per_m, regs_fixed;
    vx_rate rate[VX_LOAD_MODES][VX_MAX_TILE_M]; /* [mode][m - 1]; every m <= m_max */
    int modes_ok[VX_LOAD_MODES];               /* the backend has kernels for this mode */
    double context; /* (0, 1]: the family's rate in the backend's GEMM driver against the
                       fastest family's there, over their rates above (0 or 1: as above).
                       The analyzer divides a plain problem's L0 time by it; a convolution's
                       patches keep the rates above (cost.c, context_scale) */
    double context_m[VX_MAX_TILE_M]; /* [m - 1]: the same tile by tile, where the backend
                                        measured it (0: the family's context stands), for a
                                        B packed and k of at least context_min_k; on the
                                        families' level, so it may exceed 1 */
    int64_t context_min_k; /* 0: context_m never applies */
    double context_cap;    /* (0, 1]: the most context_m may be where the problem's n is at least
                              context_cap_min_n (0: no such bound) */
    int64_t context_cap_min_n;
} vx_l0_family;

/* 1 / r for a context ratio r (vx_l0_family); 1 where none was measured. */
static inline double vx_context_scale(double r)
{
    return r > 0 && r != 1.0 ? 1.0 / r : 1.0;
}

/* One memory level an operand can live in or stream from. */
typedef struct {
    const char *name;
    int64_t bytes;   /* capacity one unit can count on; INT64_MAX for the last */
    double bw;       /* bytes per ns one unit reads */
    /* Set geometry, for rows a large stride apart (0 when unknown): addresses
     * way_bytes apart share a set, which holds `ways` lines of `line` bytes. */
    int ways, line;
    int64_t way_bytes;
    int alias_ways;  /* ways a set keeps for such rows until they are read again (0: half of
                        `ways`; cost.c, aliased_level) */
} vx_mem_level;

typedef struct {
    const char *name;          /* "cpu-avx512" */
    int elem_bytes;
    int units;                 /* L2: parallel units (cores) */

    /* L0 */
    int nfamilies;
    vx_l0_family fam[VX_MAX_L0_FAMILIES];
    int reg_limit;             /* registers a tile may use */
    int acc_min;               /* accumulators below this cannot hide FMA latency */
    int keep_per_family;       /* measured pruning: tiles kept per family */
    double keep_rate_frac;     /* ... whose rate is at least this fraction of the family's best */

    /* L1 */
    int k_step;                /* kc is a multiple of this */
    int kc_mult[8], nkc;       /* kc candidates = k_step * kc_mult[i] */
    int64_t cap_a, cap_b;      /* bytes the copied A block / B block may occupy */
    int64_t cap_slice;         /* an L0 call's A and B slices (m0 + n0) x kc must fit */
    double fill_a[4];          /* fractions of cap_a an A block may fill (mc candidates) */
    int nfill_a;
    double fill_b;             /* fraction of cap_b for the B block (nc) */
    int64_t nc_max;

    /* Memory levels, fastest first; the last is shared by all units. */
    int nmem;
    vx_mem_level mem[4];
    double bw_shared;          /* bytes per ns all units read from the last level */
    double bw_strided;         /* bytes per ns re-reading an in-place panel whose rows
                                  lie a large stride apart (set aliasing, no prefetch):
                                  an in-place A's block from beyond the second level (B's
                                  rows, which the kernels fetch ahead, come from the last
                                  cache) */
    double bw_stride_stream;   /* ... and reading such rows once, k block by k block,
                                  each block panel by panel (the in-place first pass) */
    double bw_stride_tlb;      /* ... from the last level, k blocks of more rows than the TLB's
                                  sets keep for their stride (see tlb_sets) */
    double inplace_overlap;    /* the fraction of a plain in-place plan's priced operand streams
                                  that overlaps its kernels' FMAs (0: none, the model before
                                  it was measured; 1 - cost.c's vx_cost_inplace_stall) */
    double packed_extra;       /* a packed plan's copies and streams cost (1 + this) times their
                                  price (>= 0; measured, cost.c vx_cost_packed_scale) */
    int tlb_sets, tlb_ways;    /* the data TLB for 4 KiB pages (0: unknown, not priced) */
    int64_t page_bytes;        /* rows at least this far apart defeat the prefetchers */
    double copy_b_narrow_ns[2]; /* ns per element copying one n0-wide panel of such rows,
                                   [0] from the level before the last, [1] from the last */
    int buffer_level_a;        /* the mem level a copied A block is read from */
    double copy_ns[2][2];      /* ns per element copied: [A, B][source transposed] */
    double gather_run_ns;      /* a gathered copy's extra cost per contiguous run */
    int copy_a_rows, copy_a_vec; /* copy_ns[0][0] was measured with panels of copy_a_rows
                                  rows, transposed copy_a_vec rows at a time (0: ignore) */
    double parallel_ns[2];     /* fixed cost of one parallel region: [0] units
                                  idle (to be woken), [1] units still busy-waiting */
    double call_ns;            /* fixed cost of a call */
    int64_t last_level_bytes;  /* what the last cache level holds of a stream through it, where
                                  the backend measured less than its memory levels count
                                  (a guest told of the host's whole L3); 0: as they count */
    int64_t stream_c_min;      /* in-place plans write a C of at least this many bytes
                                  past the caches, where it is written once (one k block,
                                  beta = 0) and a cell's k x n_c of B is at most
                                  stream_b_max bytes: they then walk row blocks outer,
                                  reading A once (0: the backend never streams C) */
    int64_t stream_b_max;
    int64_t stream_one_tile_k_max; /* ... and a cell of one column tile only where k is at
                                  most this (0: never; negative: no such bound) */
    double line_share_ns;      /* a cache line stored by two units in turn: one transfer */
    double line_stream_ns;     /* one of many lines a unit writes and another then reads */
    /* In-place kernels reading A's rows from beyond the second level: a tile
     * of m0 rows and V vectors issues m0 * (V + 1) + V operations a k step
     * (FMAs, A broadcasts, B loads); past a_step_ops of them the core's
     * window holds less than a line of k steps ahead, and every row's next
     * line of A is waited for. Such a tile's first read of A is priced
     * ops / a_step_ops times slower (except where the
     * driver fetches A ahead itself). 0: no limit. */
    double a_step_ops;
    double direct_ns_per_flop; /* a direct convolution kernel (depthwise) on one unit */
    int gemv_rows_max;         /* matrix-vector kernels take up to this many rows of C at
                                  once (a GEMM with m <= it and unit-stride B rows); 1: none */
    int64_t gemv_ksplit_len;   /* the axpy form on t units splits k instead of the output
                                  (each unit one range of the matrix's rows, the last to
                                  finish adding the others' partial sums) where the output
                                  is shorter than t x this and k is at least t x rows x
                                  gemv_ksplit_k_per_row (0: never; cost.h vx_gemv_ksplit) */
    int64_t gemv_ksplit_k_per_row;
    double gemv_ns_per_flop[5]; /* ... their compute time per flop on one unit, by rows of C
                                   (2..4; they also wait for the matrix: the slower of the
                                   two counts) */
    double mode_ns[VX_LOAD_MODES]; /* what a load mode adds to it (set-up of its buffers) */
    /* The dot-form tiles, for a B stored transposed (both operands read in
     * place along k; cpu/dot.h on the CPU): dot_mr x dot_nr elements of C
     * per call, k in blocks of at most dot_kc (a multiple of dot_vec, the
     * lanes along k), a call over kb elements taking dot_rate.o +
     * dot_rate.p * kb with its operands in the fastest level. dot_mr = 0:
     * the backend has none. */
    int dot_mr, dot_nr, dot_vec;
    int64_t dot_kc;
    vx_rate dot_rate;
    /* The B-resident kernels, for a small B held in registers while A's
     * rows stream past (cpu/resident.h on the CPU): n <= V * resident_vec
     * columns with V <= 2, k <= resident_kmax[V - 1], rows in groups of
     * resident_rows[V - 1] (a group's FMA chains take as long as a full
     * one), resident_ns_per_vfma per vector FMA on one unit; units split
     * the rows in runs of resident_unit. resident_vec = 0: the backend has
     * none. */
    int resident_vec, resident_kmax[2], resident_rows[2], resident_unit;
    double resident_ns_per_vfma;
} vx_device_desc;

/* Candidates, built once per device (candidates.c). */
typedef struct {
    int16_t fam, m;            /* L0 tile: family and rows (n = fam's n) */
} vx_l0_cand;

/* The least an L0 tile of m rows costs, over the load modes and the heights
 * 1..m its cells' last tiles may have: per row and k step (p / m) and per
 * call (o). */
typedef struct {
    double p_per_row, o;
} vx_l0_floor;

/* What an L0 tile's kernel times are multiplied by in the GEMM driver's
 * context (vx_l0_family, context, context_m and context_cap; cost.c,
 * context_scales), worked out once: the family's scale, and the tile's own
 * from k = tile_min_k on (INT64_MAX: never; the family's stands), under
 * the family's cap (tile_wide) from n = wide_min_n on. */
typedef struct {
    double family, tile, tile_wide;
    int64_t tile_min_k, wide_min_n;
} vx_l0_scale;

static inline vx_l0_scale vx_l0_scale_of(const vx_l0_family *F, int m)
{
    const double r = F->context_m[m - 1];
    const int own = F->context_min_k > 0 && r > 0, capped = own && F->context_cap > 0 && r > F->context_cap;
    return (vx_l0_scale){ vx_context_scale(F->context), own ? vx_context_scale(r) : 1.0,
                          own ? vx_context_scale(capped ? F->context_cap : r) : 1.0, own ? F->context_min_k : INT64_MAX,
                          capped ? F->context_cap_min_n : INT64_MAX };
}

typedef struct {
    int16_t l0;                /* index into l0[] (the mapping table) */
    int8_t mode;               /* vx_load_mode */
    int8_t kci;                /* kc = k_step * kc_mult[kci] */
    int32_t mc, nc, kc;        /* mc = nc = 0: the whole cell (in-place modes) */
} vx_l1_cand;

typedef struct {
    int16_t tm, tn;            /* grid of cells, one per unit */
} vx_l2_cand;

typedef struct {
    int n0, n1, n2;
    vx_l0_cand *l0;
    vx_l1_cand *l1;            /* grouped by l0: l1_first[i] .. + l1_count[i] */
    int *l1_first, *l1_count;
    int *l1_mode_first;        /* [l0 * (VX_LOAD_MODES + 1) + mode]: where that tile's
                                  candidates of a load mode start (they run mode by mode);
                                  [.. + VX_LOAD_MODES]: where they end */
    vx_l2_cand *l2;
    vx_l0_floor *l0_floor;     /* per L0 tile: its least rates (the search's first bound) */
    vx_l0_scale *l0_scale;     /* per L0 tile: its context scales */
    /* what each stage kept, for vortex-info --candidates */
    int l0_enumerated, l0_after_regs, l0_after_measure;
} vx_candidates;

/* The problem the model prices (C row-major with unit column stride). */
typedef struct {
    int64_t m, n, k;
    int a_trans, b_trans;      /* operand read across its unit stride when copied */
    int b_in_place_ok;         /* B's rows are unit-stride (VX_LOAD_NONE allowed) */
    int a_in_place_ok;         /* A exists as a matrix (else only VX_LOAD_COPY_AB) */
    int64_t a_seg;             /* > 0: A in place is k / a_seg segments (a convolution's
                                  filter taps), each L0 call within one */
    int64_t a_run, b_run;      /* > 0: a copied A / B is gathered from runs this long */
    int64_t a_row, a_edge;     /* a_row > 0: A in place comes in rows of a_row (output
                                  pixels), each with a_edge tiles of one row at its edges */
    int64_t a_img;             /* > 0: ... and in images of a_img rows (output pixels),
                                  whose same pixels a tile may stack (conv_inplace.c) */
    int64_t a_edge_rows;       /* ... a_edge_rows of an image's rows of a_row pixels reach
                                  into the padding (each piece of the map is tiled as
                                  vx_conv_piece_way picks, conv_plan.h) */
    int64_t a_pitch;           /* > 0: A's segments in place have rows this many elements apart
                                  (a convolution's pixels: stride_w * c), which a tile reads side
                                  by side as it reads a plain A's rows k apart */
    int64_t a_band_runs;       /* > 0: a row of a_row pixels may instead go as band tiles
                                  (conv_inplace.c), making this many times the L0 calls
                                  of a row of one class (the taps read by different
                                  pixels of the row apart) */
    double a_band_pixels;      /* ... where a tap column reads this many of a whole row's
                                  pixels, on average (its calls run that many rows) */
    double a_pixel_elems;      /* > 0: A in place is a convolution's input, this many of
                                  its elements under each row of A (output pixel): what a
                                  cell's rows read of it (vx_conv_inplace_order) */
    double a_kfrac;            /* in (0, 1): A in place skips all but this fraction of k
                                  (a convolution's taps in the padding); 0 = all of k */
    double b_kfrac;            /* in (0, 1): ... and its B copy only this fraction (the
                                  filter taps some output uses); 0 = all */
    int b_prepacked;           /* B's panels were packed before the call (a filter packed
                                  once, vx_conv2d_filter): VX_LOAD_COPY_B reads them from
                                  B's home instead of copying */
    int a_prepacked;           /* ... A's mr-row panels (an NCHW call's packed filter):
                                  VX_LOAD_COPY_AB reads them instead of copying A */
    int64_t a_ld, b_ld, c_ld;  /* elements between A's rows (of k along m; of m along k where
                                  a_trans), B's (of n; of k where b_trans) and C's: the caller's
                                  leading dimensions; 0: dense (k, n and n untransposed). What
                                  the first level's sets and the TLB keep of an operand read
                                  in place depends on them (cost.c: vx_rows_held, aliased_level,
                                  tlb_rows), not on the shape */
    int units_warm;            /* the units are still busy-waiting from a recent region */
    int units_class;           /* what passing data between units costs now against what was
                                  measured: 2^units_class times (vx_units_state) */
} vx_problem;

/* A dense operand's leading dimension (vx_problem's a_ld/b_ld where they
 * are 0): A's rows hold k elements (m where transposed), B's n (k). C's is
 * n. */
static inline int64_t vx_dense_a_ld(int a_trans, int64_t m, int64_t k) { return a_trans ? m : k; }
static inline int64_t vx_dense_b_ld(int b_trans, int64_t n, int64_t k) { return b_trans ? k : n; }

/* The units' state as a backend reports it at call time, in one int that
 * plan keys carry: bit 0, the units still busy-wait after a recent region
 * (a region then starts without waking them); bits 1-4, a class c in
 * -8..7 (two's complement): the backend's run-time reading of a warm
 * region's fixed cost is about 2^c times what it measured at install time
 * (on a virtual machine the host moves the two cores' distance: a region
 * took 80 ns in one window and 370 in the next, AMD Zen 4), and the model
 * scales what passes between units (a warm region, lines shared or
 * streamed between them) by 2^c. A plain 0 or 1 is class 0: as measured. */
static inline int vx_units_state(int warm, int cls) { return (warm ? 1 : 0) | ((cls & 15) << 1); }
static inline int vx_units_state_warm(int state) { return state & 1; }
static inline int vx_units_state_class(int state) { return (((state >> 1) & 15) ^ 8) - 8; }

/* The matrix-vector k split (gemv_ksplit_len above): `units` split k of an
 * output of len elements in `rows` rows. The one rule the CPU driver runs
 * (gemv.h's numbers) and the analyzer prices (the desc's). */
static inline int vx_gemv_ksplit_rule(int64_t split_len, int64_t k_per_row, int64_t len, int64_t k, int64_t rows,
                                      int units)
{
    return units > 1 && split_len > 0 && len < units * split_len && k >= units * rows * k_per_row;
}

#endif
