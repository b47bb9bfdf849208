/* The analytical cost model (DESIGN.md "Cost model") and the search that
 * runs it over the candidates for one call's shape. Device-neutral: it reads
 * only the level description and the measured L0 rates. */
#ifndef VX_ANALYZER_COST_H
#define VX_ANALYZER_COST_H

#include "analyzer/levels.h"

/* One priced plan: indices into the candidate tables. */
typedef struct {
    int l1, l2;
    double ns;
} vx_choice;

/* Predicted nanoseconds for the whole call with L1 candidate l1 (and its L0
 * tile) on L2 grid l2; a negative value when the pair cannot run this
 * problem (more cells than row or column tiles, in-place B not allowed). */
double vx_cost_price(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int l1, int l2);

/* Price the candidates for problem p with at most max_threads units: write
 * the cheapest ones (at most max) to out, cheapest first, and return how
 * many were written; *considered (may be NULL) gets the number of plans
 * considered. Branch and bound: (grid, L0 tile) groups are visited in order
 * of a floor (their L0 calls at the tile's least rates plus the reads from
 * home every load mode pays); in a group the load modes go in order of
 * their own bounds (compute with one k block plus the copies the mode
 * cannot avoid); a group or mode whose bound is no cheaper than the max-th
 * plan kept is skipped, which cannot change the answer. Candidates that
 * would run alike for this shape (kc values giving the same k blocks,
 * copied blocks clipped to the cell) are priced once. */
int vx_cost_search(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int max_threads,
                   vx_choice *out, int max, int *considered);

/* Predicted nanoseconds for a matrix-vector product (m or n is 1) on
 * `threads` units: the matrix streamed once, in place, from the smallest
 * memory level that holds it, plus the call and the parallel region, and
 * where the units split k (vx_gemv_ksplit), the last one's reads of the
 * others' partial sums. There is no reuse to block for, so there are no
 * candidates to search. */
double vx_cost_gemv(const vx_device_desc *d, const vx_problem *p, int threads);

/* Whether `threads` units split k of an axpy-form product with an output of
 * len elements in `rows` rows (levels.h, gemv_ksplit_len): the driver's
 * rule, which the price follows. */
int vx_gemv_ksplit(const vx_device_desc *d, int64_t len, int64_t k, int64_t rows, int threads);

/* The fixed cost of a parallel region on units in this state (levels.h,
 * vx_units_state): woken from sleep, or still spinning, scaled by the
 * state's class. */
double vx_cost_region_ns(const vx_device_desc *d, int units_state);

/* gcd(stride, span) for stride > 0: span is a power of two on every cache
 * and TLB seen (the lowest set bit of stride then), Euclid otherwise. */
int64_t vx_gcd_span(int64_t stride, int64_t span);

/* Rows `stride` bytes apart of which a cache with `ways` ways of way_bytes
 * and lines of `line` bytes holds one line each at once: they share
 * way_bytes / gcd(stride, way_bytes) sets (at least a line apart). 0 when
 * the geometry is unknown. */
int64_t vx_rows_held(int64_t stride, int ways, int64_t way_bytes, int line);

/* Whether the packed path reads A's block in place (gemm.c,
 * reads_a_in_place; the cost model prices it so) for a tile of mr rows
 * whose rows lie row_bytes apart, over a k of k, on a first-level cache of
 * the given geometry: at most VX_PACKED_A_IN_PLACE_MAX_ROWS rows, no more
 * than that cache holds at such a stride, and k of at least
 * VX_PACKED_A_IN_PLACE_MIN_K. Measured on AMD Zen 5 (48 KiB 12-way L1),
 * 2 threads, in place vs copied, alternated (NOTES.md, fifteenth session):
 * - 512x196xK: rows 4 KiB apart (12 held), 12 and 14 rows ran 0.90-0.95x
 *   the time, 16 rows 1.66x, 24 3.0x, 29 3.7x; rows that do not alias
 *   (K = 768, 1000, 1056), 16 and 24 rows 1.06-1.08x, 19 rows 1.05x, 14
 *   rows 0.91x;
 * - 72x20000xK with 6x48 tiles: K = 45 1.02x, 90 1.01x, 180 1.00x, 384
 *   0.995x, 768 0.99x; 72x216225x45 1.10x (C streamed to DRAM). */
enum { VX_PACKED_A_IN_PLACE_MAX_ROWS = 14, VX_PACKED_A_IN_PLACE_MIN_K = 128 };
int vx_packed_a_in_place_ok(int mr, int64_t k, int64_t row_bytes, int ways, int64_t way_bytes, int line);

/* The tallest tile the plans that read A only in place (pack_b, direct)
 * may use over rows row_bytes apart (INT64_MAX: no bound, the geometry
 * unknown): the first-level cache must hold them at that stride with
 * VX_IN_PLACE_A_ROW_SLACK lines to spare (the lines the prefetchers bring
 * in next, B's and C's). Each k step reads one element of every row, so
 * rows that share too few sets evict each other's lines before their next
 * 15 elements are read.
 * Measured on AMD Zen 5 (48 KiB 12-way L1), 2 threads, pack_b tiles m0 x
 * 16 forced, alternated in one process (NOTES.md, nineteenth session):
 * rows 16 KiB apart (12 held; 4096x16x4096, A from DRAM) 8 rows 1.65 ms,
 * 10 1.56, 12 2.11, 16 2.45, 20 3.16, 30 4.9 (oneDNN 1.9); 4 KiB apart
 * (1024x16x1024) 8-10 rows 77-78 us, 11 84, 12 87, 30 299; 2 KiB apart
 * (24 held; 4096x16x512) 8-10 rows 145-150 us, 16-24 154-176, 30 215.
 * Direct 32x1024x4096: 12x32 tiles 0.72 ms, 9x48 0.61. */
enum { VX_IN_PLACE_A_ROW_SLACK = 2 };
int64_t vx_in_place_a_rows_max(int64_t row_bytes, int ways, int64_t way_bytes, int line);

/* The dot form is offered up to this many row tiles (plan.c, dot_shape;
 * conv_plan.c): vx_dot_takes says whether an m x n output is in its range
 * (two rows and columns or more; one is the matrix-vector form). */
enum { VX_DOT_MAX_ROW_TILES = 48 };
int vx_dot_takes(const vx_device_desc *d, int64_t m, int64_t n);

/* Whether the B-resident kernels (levels.h, resident_*) hold a k x n B. */
int vx_resident_takes(const vx_device_desc *d, int64_t n, int64_t k);

/* The B-resident plan (levels.h, resident_*) on `threads` units splitting
 * C's rows; INFINITY where B does not fit the registers. */
double vx_cost_resident(const vx_device_desc *d, const vx_problem *p, int threads);

/* The cheapest of vx_cost_resident over 1..max_threads units (the fewest
 * at a tie), its unit count in *threads. */
double vx_cost_resident_best(const vx_device_desc *d, const vx_problem *p, int max_threads, int *threads);

/* The dot-form plan (levels.h, dot_*) on `threads` units splitting C's
 * columns; k blocks and row blocks as vx_dot_blocks gives them. */
double vx_cost_dot(const vx_device_desc *d, const vx_problem *p, int threads);

/* The cheapest of vx_cost_dot over 1..max_threads units (the fewest at a
 * tie), their count in *threads. */
double vx_cost_dot_best(const vx_device_desc *d, const vx_problem *p, int max_threads, int *threads);

/* The dot form's blocking for a problem: k in nkb equal blocks of at most
 * d->dot_kc (each a multiple of d->dot_vec but the last), rows in blocks of
 * mc (a multiple of dot_mr) whose A block, mc x kb, takes at most half of
 * the second memory level. The driver runs what this returns. */
void vx_dot_blocks(const vx_device_desc *d, int64_t m, int64_t k, int64_t *kb, int64_t *mc);

/* The fraction of the in-place streams the kernels wait for, from an
 * in-place probe: family fam's m-row tile took ns longer over a 2m x n x k
 * problem (n rounded down to whole tiles) on one unit with B from the last
 * cache than with B's panel in L2, one k block (tune.h, inplace_probe):
 * ns over the difference of d's prices of that run with the streams fully
 * waited for and fully overlapped, within [0, 1]. ns <= 0 (not measured):
 * 1, the model as it was before the probe existed. */
double vx_cost_inplace_stall(const vx_device_desc *d, int fam, int m, int64_t n, int64_t k, double ns);

/* How many times their price a packed plan's copies and streams cost, from
 * a packed probe: family fam's m-row tile took ns for an M x n x k problem
 * (n rounded down to whole tiles) on one unit, copying A (mc = M) and B (nc
 * = n, kc = k), B from the last cache. At least 1 (the bounds of the search
 * rely on prices never falling); ns <= 0 (not measured): 1. */
double vx_cost_packed_scale(const vx_device_desc *d, int fam, int m, int64_t M, int64_t n, int64_t k, double ns);

/* The effective k block of an L1 candidate for this k: k split into equal
 * blocks of at most kc, rounded up to a multiple of 8 (no sliver at the end). */
int64_t vx_cost_kc(int64_t kc, int64_t k);

#endif
