/* Cost model. For a plan (L0 tile, L1 block and load mode, L2 grid) and the
 * problem m x n x k, in nanoseconds:
 *
 *   L2   call + (t > 1 ? parallel region : 0) + ceil(cells / t) x cell
 *   L1   cell = copies + max(compute, streams)   operands copied into buffers
 *                          (contiguous, prefetched: streams overlap compute)
 *        cell = copies + compute + streams     operands read in place (rows
 *                          a leading dimension apart, not prefetched: stalls)
 *          copies : elements copied x max(copy rate, element / source bandwidth),
 *                   except A copied from beyond L2: copy rate + element / bandwidth
 *          compute: L0 calls x (o + p x kb), summed over k blocks, with the
 *                   exact edge tile for the last m0 rows (no padding)
 *          streams: bytes each L0 call reads from outside the registers over
 *                   the bandwidth of the memory level they come from
 *   L0   measured t(k) = o + p k
 *
 * Padding enters only through the ceilings of the L2 grid and the column
 * tiles (a ragged last column tile costs a full one). */
#include "analyzer/cost.h"
#include "analyzer/conv_plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ceil(a / b) through a double division, corrected upward (exact for the
 * sizes a call can have, below 2^53): a 64-bit integer division takes
 * tens of cycles on some cores, and the search does hundreds. */
static inline int64_t cdiv(int64_t a, int64_t b)
{
    const int64_t q = (int64_t)((double)a / (double)b);
    return q + (q * b < a);
}

/* 1/b for the small divisors the search meets most (tile heights and
 * widths, grid sides): a multiply, where a division by the tile's side was
 * the largest single share of a search (14 % by perf). */
#define VX_RECIP4(b) 1.0 / (b), 1.0 / ((b) + 1), 1.0 / ((b) + 2), 1.0 / ((b) + 3)
#define VX_RECIP16(b) VX_RECIP4(b), VX_RECIP4((b) + 4), VX_RECIP4((b) + 8), VX_RECIP4((b) + 12)
static const double recip_small[129] = { 0.0,
                                         VX_RECIP16(1),  VX_RECIP16(17), VX_RECIP16(33), VX_RECIP16(49),
                                         VX_RECIP16(65), VX_RECIP16(81), VX_RECIP16(97), VX_RECIP16(113) };
#undef VX_RECIP16
#undef VX_RECIP4

/* cdiv for b in 1..128 through recip_small. Exact for a < 2^40: then a/b
 * is either whole, and the rounded product is at most one below it, which
 * the correction restores, or at least 1/b from a whole number, far more
 * than the product's error, so truncation floors it. Otherwise cdiv. */
static inline int64_t cdiv_small(int64_t a, int64_t b)
{
    if (b < 1 || b > 128 || a >= ((int64_t)1 << 40))
        return cdiv(a, b);
    const int64_t q = (int64_t)((double)a * recip_small[b]);
    return q + (q * b < a);
}

static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

/* What passing data between units costs now against what was measured
 * (levels.h, vx_units_state): 2^units_class. */
static inline double units_scale(const vx_problem *p)
{
    /* a table, not ldexp: asked for every priced grid (libm's scalbn was
     * 0.9 % of a search) */
    static const double pow2[16] = { 1.0 / 256, 1.0 / 128, 1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2,
                                     1, 2, 4, 8, 16, 32, 64, 128 };
    const int c = p->units_class < -8 ? -8 : p->units_class > 7 ? 7 : p->units_class;
    return pow2[c + 8];
}

/* The fixed cost of a parallel region on these units. */
static inline double region_ns(const vx_device_desc *d, const vx_problem *p)
{
    return p->units_warm ? d->parallel_ns[1] * units_scale(p) : d->parallel_ns[0];
}

double vx_cost_region_ns(const vx_device_desc *d, int units_state)
{
    const vx_problem p = { .units_warm = vx_units_state_warm(units_state),
                           .units_class = vx_units_state_class(units_state) };
    return region_ns(d, &p);
}

/* The first level's line, in bytes (64 where the backend gave none). */
static inline int line_bytes(const vx_device_desc *d) { return d->mem[0].line > 0 ? d->mem[0].line : 64; }

/* Whether C is large enough for in-place plans to stream it past the
 * caches (levels.h, stream_c_min; the plan and the call decide the rest). */
static inline int c_past_caches(const vx_device_desc *d, const vx_problem *p)
{
    return d->stream_c_min > 0 && (double)d->elem_bytes * (double)p->m * (double)p->n >= (double)d->stream_c_min;
}

int64_t vx_cost_kc(int64_t kc, int64_t k)
{
    const int64_t blocks = cdiv(k, kc);
    const int64_t kb = (cdiv(k, blocks) + 7) & ~(int64_t)7;
    return kb < k ? kb : k;
}

/* The first memory level that holds `bytes` (the last one holds anything). */
static int level_for(const vx_device_desc *d, double bytes)
{
    /* capacities grow level by level: count those `bytes` exceeds (branch
     * free; the search meets every level in turn) */
    int i = 0;
    for (int j = 0; j < d->nmem - 1; j++)
        i += bytes > (double)d->mem[j].bytes;
    return i;
}

int64_t vx_gcd_span(int64_t stride, int64_t span)
{
    if ((span & (span - 1)) == 0)
        return (stride & -stride) < span ? (stride & -stride) : span;
    for (int64_t a = stride, b = span;;) {
        const int64_t r = a % b;
        if (r == 0)
            return b;
        a = b;
        b = r;
    }
}

int64_t vx_rows_held(int64_t stride, int ways, int64_t way_bytes, int line)
{
    if (ways <= 0 || way_bytes <= 0 || line <= 0 || stride <= 0)
        return 0;
    const int64_t g = vx_gcd_span(stride, way_bytes);
    return (int64_t)ways * (way_bytes / (g > line ? g : line));
}

int vx_packed_a_in_place_ok(int mr, int64_t k, int64_t row_bytes, int ways, int64_t way_bytes, int line)
{
    return mr <= VX_PACKED_A_IN_PLACE_MAX_ROWS && k >= VX_PACKED_A_IN_PLACE_MIN_K &&
           mr <= vx_rows_held(row_bytes, ways, way_bytes, line);
}

/* The first level from `from` on that keeps `rows` pieces of `piece` bytes
 * lying `stride` bytes apart, counting its sets: addresses way_bytes apart
 * share a set, so such rows start in only way_bytes / gcd(stride, way_bytes)
 * of them, and a level keeps half the ways of each (as it keeps half its
 * capacity for an operand). Rows 8 KiB apart start in 1 of L1's 64 sets and 8
 * of a 512 KiB L2's 1024; rows 9 KiB apart (2304 floats) in 4 and 64, so a
 * 256-row panel of them stays in L2. Where the tune measured fewer ways
 * keeping them (alias_ways: an Intel Xeon guest's 16-way L2 kept 128 rows
 * 12 KiB apart, a quarter of its ways; NOTES.md, thirty-fourth session),
 * those. -1 when no level of known geometry keeps them. */
static int aliased_level(const vx_device_desc *d, int from, int64_t stride, int64_t piece, int64_t rows)
{
    for (int i = from; i < d->nmem - 1; i++) {
        const vx_mem_level *L = &d->mem[i];
        if (L->ways < 2 || L->way_bytes <= 0 || L->line <= 0)
            return -1;
        const int64_t lines = (piece + L->line - 1) / L->line * L->line;
        const int kept = L->alias_ways > 0 ? L->alias_ways : L->ways / 2;
        if (rows <= vx_rows_held(stride, kept, L->way_bytes, (int)lines))
            return i;
    }
    return -1;
}

/* Rows `stride` bytes apart whose pages the data TLB keeps mapped at once:
 * all but one of the ways of the sets their pages fall in (the other
 * operands' few pages take the last). Pages sets * page bytes apart share
 * a set. Half the ways, as for a cache, priced 16x3072x768 on one AMD Zen 4
 * core (rows 3 pages apart: 128 of 384 sets, 8 ways) with kc = 768 as the
 * slowest k block; it ran the fastest (674 us, kc = 128 722), while 16
 * KiB rows (96 sets: 672 rows) ran kc = 768 slower than 384 (996 against
 * 938 us), as Zen 1's did past 5 of its 6 ways (NOTES.md, twenty-sixth
 * session). Unknown geometry: no limit. */
static int64_t tlb_rows(const vx_device_desc *d, int64_t stride)
{
    if (d->tlb_sets <= 0 || d->tlb_ways <= 0)
        return INT64_MAX;
    const int64_t page = d->page_bytes, span = (int64_t)d->tlb_sets * page;
    int64_t g = vx_gcd_span(stride, span);
    if (g < page)
        g = page;
    return (int64_t)(d->tlb_ways > 1 ? d->tlb_ways - 1 : 1) * (span / g);
}

/* Bandwidth (bytes/ns) of memory level i for a unit sharing the last level
 * with t - 1 others. */
static double bw_at(const vx_device_desc *d, int i, int t)
{
    if (i < d->nmem - 1)
        return d->mem[i].bw;
    const double shared = d->bw_shared / t;
    const double own = d->mem[d->nmem - 1].bw;
    return shared < own ? shared : own;
}

/* Bandwidth of the first memory level that holds `bytes`. */
static double bw_for(const vx_device_desc *d, double bytes, int t) { return bw_at(d, level_for(d, bytes), t); }

double vx_cost_gemv(const vx_device_desc *d, const vx_problem *p, int threads)
{
    if (threads < 1)
        threads = 1;
    /* The matrix: A (k along its rows) when n == 1, else B; with m > 1 rows
     * of C (few-row form) every B element feeds m FMAs. */
    const double len = (double)(p->n == 1 ? p->m : p->n);
    const double rows = p->n == 1 ? 1.0 : (double)p->m;
    const double bytes = (double)d->elem_bytes * len * (double)p->k;
    /* Each unit streams its share from the level that holds it. */
    const double bw = bw_for(d, bytes / threads, threads) * threads;
    const double stream = bytes / bw;
    const double compute =
        rows > 1 ? 2.0 * rows * len * (double)p->k * d->gemv_ns_per_flop[rows < 4 ? (int)rows : 4] / threads : 0.0;
    /* Split by k, each unit writes its partial sums into lines the last
     * call's combiner read, and the unit that ends last reads them all: a
     * handshake each way (claiming the slices, counting them done) and the
     * lines streamed between the cores. On two AMD Zen 4 cores, 1 x len x 16
     * ran 340 ns over half its one-thread time at len = 64 (priced 110, the
     * empty region), 830-940 at 1024, 1440 at 2048, 2500-3300 at 4000:
     * 2 x 99 ns and 9 ns a line there, the tuner's line_share_ns and
     * line_stream_ns. 1x61x70 then runs on one thread (0.22-0.24 us against
     * 0.47-0.49 on two; NOTES.md, twenty-second session). */
    const int axpy = p->n == 1 ? p->a_trans : !p->b_trans;
    const double combine =
        axpy && vx_gemv_ksplit(d, (int64_t)len, p->k, (int64_t)rows, threads)
            ? (2.0 * d->line_share_ns + d->line_stream_ns * (threads - 1) * rows *
                                            (double)cdiv((int64_t)len * d->elem_bytes, line_bytes(d))) *
                  units_scale(p)
            : 0.0;
    return d->call_ns + (threads > 1 ? region_ns(d, p) : 0.0) +
           (compute > stream ? compute : stream) + combine;
}

int vx_gemv_ksplit(const vx_device_desc *d, int64_t len, int64_t k, int64_t rows, int threads)
{
    return vx_gemv_ksplit_rule(d->gemv_ksplit_len, d->gemv_ksplit_k_per_row, len, k, rows, threads);
}

int vx_resident_takes(const vx_device_desc *d, int64_t n, int64_t k)
{
    return d->resident_vec > 0 && n >= 1 && k >= 1 && n <= 2 * (int64_t)d->resident_vec &&
           k <= d->resident_kmax[n > d->resident_vec];
}

double vx_cost_resident(const vx_device_desc *d, const vx_problem *p, int threads)
{
    if (p->m < 1 || !vx_resident_takes(d, p->n, p->k))
        return INFINITY;
    const int64_t V = cdiv(p->n, d->resident_vec);
    /* A C the GEMM plans stream past the caches (levels.h, stream_c_min)
     * goes past them from these kernels too where its rows are whole
     * vectors (gemm.c, resident_streams; C's alignment is the call's, and
     * taken as on a line). With plain stores it was the tile plans': 2449029x16x16
     * (C 157 MB) ran 9.4 ms here with plain stores, 7.3-8.3 with C staged
     * and streamed and A fetched ahead, and 5.9-7.1 on the streamed 30x16
     * register-tile plan (2 AMD Zen 5 cores, alternated in one process;
     * NOTES.md, twenty-first session). Streamed from the kernels, 6.9-7.1
     * against 10.0-11.5 plain and 12.3-15.4 on the streamed 10x16 tile
     * plan (2 AMD Zen 4 cores; NOTES.md, fortieth session). */
    if (c_past_caches(d, p) && p->n % d->resident_vec != 0)
        return INFINITY;
    /* Units take runs of resident_unit rows (the driver's split). */
    const int64_t units = cdiv(p->m, d->resident_unit > 0 ? d->resident_unit : 1);
    const int t = threads < 1 ? 1 : threads > units ? (int)units : threads;
    const int64_t rows = cdiv(p->m, t), R = d->resident_rows[V - 1];
    /* B into the registers once, then every row's k x V FMAs and V
     * stores; the last group of a unit, however short, takes a full
     * group's chain time. */
    const double row = (double)(p->k + 1) * (double)V * d->resident_ns_per_vfma;
    const double compute = row * (double)(cdiv(rows, R) * R + 1);
    /* A's rows read once, front to back, each unit its share from the
     * level that holds it, under the FMAs. C's stores are priced as the
     * in-place GEMM plans price them (in the kernels' time, cost.c
     * price_cell_body): plans of both kinds compare on equal terms. */
    const double bytes = (double)d->elem_bytes * (double)p->m * (double)p->k;
    const double stream = bytes / (bw_for(d, bytes / t, t) * t);
    return d->call_ns + (t > 1 ? region_ns(d, p) : 0.0) + dmax(compute, stream);
}

/* The cheapest of cost(d, p, t) over t = 1..max_threads units (the fewest
 * at a tie), its unit count in *threads. */
static double cheapest_units(double (*cost)(const vx_device_desc *, const vx_problem *, int),
                             const vx_device_desc *d, const vx_problem *p, int max_threads, int *threads)
{
    double best = cost(d, p, 1);
    *threads = 1;
    for (int t = 2; t <= max_threads; t++) {
        const double ns = cost(d, p, t);
        if (ns < best) {
            best = ns;
            *threads = t;
        }
    }
    return best;
}

double vx_cost_resident_best(const vx_device_desc *d, const vx_problem *p, int max_threads, int *threads)
{
    return cheapest_units(vx_cost_resident, d, p, max_threads, threads);
}

void vx_dot_blocks(const vx_device_desc *d, int64_t m, int64_t k, int64_t *kb, int64_t *mc)
{
    const int64_t v = d->dot_vec > 0 ? d->dot_vec : 1, kmax = d->dot_kc >= v ? d->dot_kc / v * v : v;
    const int64_t nkb = (k + kmax - 1) / kmax;
    const int64_t even = (k + nkb - 1) / nkb;
    *kb = (even + v - 1) / v * v;
    if (*kb > k)
        *kb = k;
    if (*kb < 1)
        *kb = 1;
    const int64_t mr = d->dot_mr > 0 ? d->dot_mr : 1;
    const int64_t fit = d->nmem > 1 ? d->mem[1].bytes / (d->elem_bytes * *kb) : m;
    *mc = fit / mr * mr;
    if (*mc < mr)
        *mc = mr;
    if (*mc > m)
        *mc = (m + mr - 1) / mr * mr;
}

int vx_dot_takes(const vx_device_desc *d, int64_t m, int64_t n)
{
    return d->dot_mr > 0 && m >= 2 && n >= 2 && m <= (int64_t)VX_DOT_MAX_ROW_TILES * d->dot_mr;
}

double vx_cost_dot_best(const vx_device_desc *d, const vx_problem *p, int max_threads, int *threads)
{
    return cheapest_units(vx_cost_dot, d, p, max_threads, threads);
}

double vx_cost_dot(const vx_device_desc *d, const vx_problem *p, int threads)
{
    if (d->dot_mr < 1 || d->dot_nr < 1 || p->k < 1)
        return INFINITY;
    int64_t kb, mc;
    vx_dot_blocks(d, p->m, p->k, &kb, &mc);
    const int64_t col_tiles = (p->n + d->dot_nr - 1) / d->dot_nr;
    const int t = threads < 1 ? 1 : threads > col_tiles ? (int)col_tiles : threads;
    /* Each unit takes a run of column tiles and, per k block and row block,
     * passes every row tile over each: one call per (tile, k block). */
    const double tiles = (double)((col_tiles + t - 1) / t) * (double)((p->m + d->dot_mr - 1) / d->dot_mr);
    const double nkb = (double)((p->k + kb - 1) / kb);
    const double compute = tiles * nkb * d->dot_rate.o + tiles * (double)p->k * d->dot_rate.p;
    /* B^T's rows stream once per row block from where B lives, each unit its
     * share (the kernels walk them front to back: the prefetchers follow);
     * A's block comes from the second level, under the FMAs. */
    const double b_bytes = (double)d->elem_bytes * (double)p->n * (double)p->k;
    const double blocks = (double)((p->m + mc - 1) / mc);
    const double b_stream = blocks * (b_bytes / t) / bw_for(d, b_bytes / t, t);
    return d->call_ns + (t > 1 ? region_ns(d, p) : 0.0) + dmax(compute, b_stream);
}

/* ns per element copied into A's and B's buffers: the measured packing
 * rate, plus, for a gathered operand (a convolution's patches), the fixed
 * cost of starting each contiguous run it is gathered from. */
static double copy_a_ns(const vx_device_desc *d, const vx_problem *p, int m0)
{
    double rate = d->copy_ns[0][p->a_trans];
    /* A with unit-stride rows is copied through v x v register transposes
     * of which only min(m0, v) rows are the panel's: the measured rate
     * (panels of copy_a_rows) scales with v / min(m0, v). */
    if (!p->a_trans && d->copy_a_rows > 0 && d->copy_a_vec > 0) {
        const int v = d->copy_a_vec;
        rate *= (double)(d->copy_a_rows < v ? d->copy_a_rows : v) / (double)(m0 < v ? m0 : v);
    }
    return rate + (p->a_run > 0 ? d->gather_run_ns / (double)p->a_run : 0.0);
}

/* ns per element of B copied by n0-wide panels: a gathered B (an NCHW
 * convolution's patches) fills each panel row from runs of b_run floats,
 * cut at the panel's width, and pays the run's start per piece. Priced at
 * b_run whatever the panel, 14 x 32 tiles over ResNet-50's 64-channel 3x3
 * layer (NCHW, 13 images of 56x56: 64-float rows, shifted runs) were
 * picked over 4 x 64 and ran 20.1 ms against 17.1 (AMD Zen 4, 2 cores). */
static double copy_b_ns(const vx_device_desc *d, const vx_problem *p, int n0)
{
    const int64_t run = p->b_run < n0 ? p->b_run : n0;
    return d->copy_ns[1][p->b_trans] + (p->b_run > 0 ? d->gather_run_ns / (double)run : 0.0);
}

/* ns per element of a copy from an operand's home: the copy's rate and
 * the read overlap (the slower of the two), unless `both` (the sum). */
static inline double copy_from_home(double rate, double read, int both)
{
    return both ? rate + read : dmax(rate, read);
}

/* ns per element of A copied into its buffer. From within the first two
 * levels the copy runs at the slower of its in-cache rate and the read; from
 * L3 or DRAM it pays both: A is copied through register transposes whose
 * loads do not overlap the far reads (232965x16x16 on 2 Zen cores: packed
 * 3.4 ms against 2.4 predicted with the slower of the two, A in place
 * 2.5 ms; NOTES.md). B's copies are plain row copies and keep the max. */
static double copy_a_elem_ns(const vx_device_desc *d, const vx_problem *p, int m0, double home_ns_per_byte, int far)
{
    return copy_from_home(copy_a_ns(d, p, m0), d->elem_bytes * home_ns_per_byte, far);
}

/* Per-(grid, tile) quantities every L1 candidate under it shares. */
typedef struct {
    int64_t m_c, n_c;   /* the largest cell */
    int64_t cols;       /* its column tiles */
    int64_t full, rem;  /* its full row tiles and the rows of the short last one */
    double fixed;       /* call + parallel region */
    /* Bandwidths as ns per byte (the prices multiply instead of dividing) */
    double nspb[4];     /* each memory level's, for a unit among t */
    double a_home, b_home; /* the levels A and B live in */
    double top;         /* the fastest level's (the bounds' re-reads) */
    double abuf;        /* the level a copied A block is read from (the unit's own) */
    double strided, stride_stream; /* in-place rows far apart: re-read, first pass */
    double stride_tlb;  /* ... first pass from the last level, more rows than the TLB keeps */
    int b_home_last;    /* B's home reads no faster than the last level alone */
    int tn;             /* the grid's columns of cells */
    int a_far;          /* A's home is beyond the second level (L3 or DRAM) */
    double copy_b;      /* ns per element of B copied (rate or read, the slower) */
    double copy_a;      /* ns per element of A copied (cell_rates: per tile height) */
    int64_t packed_a_rows; /* the tallest tile a packed plan reads A in place for (packed_a_rows_max) */
    int a_packed_in_place; /* the cell's tiles do (cell_rates) */
} grid_ctx;

/* The problem's leading dimensions (levels.h), the dense ones where it
 * gives none. */
static inline int64_t a_ld(const vx_problem *p)
{
    return p->a_ld > 0 ? p->a_ld : vx_dense_a_ld(p->a_trans, p->m, p->k);
}
static inline int64_t b_ld(const vx_problem *p)
{
    return p->b_ld > 0 ? p->b_ld : vx_dense_b_ld(p->b_trans, p->n, p->k);
}
static inline int64_t c_ld(const vx_problem *p) { return p->c_ld > 0 ? p->c_ld : p->n; }

/* Whether A is a matrix whose unit-stride rows a tile reads in place side
 * by side, a_ld elements apart (the caller's lda; k for a dense A). Priced
 * at k whatever the lda, 80x192x768 with lda = 3072 (rows 12 KiB apart, 8
 * of them in L1's sets) ran direct 14 x 32 tiles at 270 us on one AMD Zen
 * 4 core, against 209 for the packed 4 x 64 ones (a transposed
 * A's rows are adjacent; a convolution's patches are runs of adjacent
 * pixels). */
static inline int a_rows_apart(const vx_problem *p)
{
    return p->a_in_place_ok && !p->a_trans && p->a_seg <= 0 && p->a_run <= 0;
}

/* The tallest tile for which a packed plan reads A's block in place
 * rather than copying it (0: none): A's rows apart (above), the tile short
 * enough (gemm.c, reads_a_in_place, through vx_packed_a_in_place_ok). The
 * block then streams from L2 into the kernels like a copied one; what is
 * left of the copy is the first read of each block from A's home, priced
 * like an in-place plan's (on top of the kernels, which wait for it).
 * Depends on the problem only: worked out once per search (grid_common
 * takes it). */
static int64_t packed_a_rows_max(const vx_device_desc *d, const vx_problem *p)
{
    const vx_mem_level *L1 = &d->mem[0];
    if (!a_rows_apart(p) || p->a_prepacked || p->k < VX_PACKED_A_IN_PLACE_MIN_K)
        return 0;
    const int64_t held = vx_rows_held((int64_t)d->elem_bytes * a_ld(p), L1->ways, L1->way_bytes, L1->line);
    return held < VX_PACKED_A_IN_PLACE_MAX_ROWS ? held : VX_PACKED_A_IN_PLACE_MAX_ROWS;
}

/* What depends on the grid only: the fixed cost and the levels the
 * operands live in. A unit reads its share of each operand (the rows of A
 * of its grid row, the columns of B of its grid column), which lives where
 * that share fits the unit's share of the caches. */
static void grid_common(const vx_device_desc *d, const vx_problem *p, vx_l2_cand g, int64_t packed_rows, grid_ctx *x)
{
    const double e = d->elem_bytes;
    const int t = g.tm * g.tn;
    x->tn = g.tn;
    x->fixed = d->call_ns + (t > 1 ? region_ns(d, p) : 0.0);
    double bw_top = d->bw_shared;
    for (int i = 0; i < d->nmem; i++) {
        x->nspb[i] = 1.0 / bw_at(d, i, t);
        bw_top = dmax(bw_top, d->mem[i].bw);
    }
    x->top = 1.0 / bw_top;
    x->abuf = 1.0 / d->mem[d->buffer_level_a].bw;
    x->strided = 1.0 / d->bw_strided;
    x->stride_stream = 1.0 / d->bw_stride_stream;
    x->stride_tlb = d->bw_stride_tlb > 0 ? 1.0 / d->bw_stride_tlb : x->stride_stream;
    const int a_level = level_for(d, e * (double)p->m * (double)p->k / g.tm);
    const int b_level = level_for(d, e * (double)p->k * (double)p->n / g.tn);
    x->a_home = x->nspb[a_level];
    x->b_home = x->nspb[b_level];
    x->b_home_last = bw_at(d, b_level, t) <= d->mem[d->nmem - 1].bw;
    /* a plain matrix (a convolution's gathered patches are priced per run) */
    x->a_far = a_level >= 2 && p->a_run <= 0 && p->a_seg <= 0;
    x->copy_b = 0; /* cell_rates: per panel width */
    x->copy_a = 0;
    x->packed_a_rows = packed_rows;
    x->a_packed_in_place = 0;
}

/* The load mode whose measured L0 rates a plan's kernels run at: a packed
 * plan that reads A in place (a_in_place: the tile is no taller than
 * packed_a_rows_max) runs the strided-A kernels (as_bp), whose calls cost
 * more than the packed ones' for short tiles (1.5 -> 5.8 ns a call for
 * 3x48 on AMD Zen 5) and whose k steps cost more for tall ones. */
static inline int rate_mode(int a_in_place, int mode)
{
    return mode == VX_LOAD_COPY_AB && a_in_place ? VX_LOAD_COPY_B : mode;
}

/* What depends on the tile: the rate B is copied at by panels n0 wide
 * (copy_b_ns); whether a packed plan reads A in place, and the rate A is
 * copied at (where it does, the rate it is read from home; so too for A's
 * panels packed before the call, a_prepacked: an NCHW call's packed
 * filter, read from A's home per column block with nothing copied). */
static void cell_rates(const vx_device_desc *d, const vx_problem *p, int m0, int n0, grid_ctx *x)
{
    /* From the last level a copy of B pays the read and the copy: several
     * units copying at once from DRAM do not overlap the two (16x2304x768
     * on 2 Zen 1 cores: each unit's 0.9 M elements copied in 0.6 ms against
     * 0.33 alone, 0.31 priced as the slower of the two). */
    const double b_read = d->elem_bytes * x->b_home;
    x->copy_b = copy_from_home(copy_b_ns(d, p, n0), b_read, x->b_home_last);
    x->a_packed_in_place = m0 <= x->packed_a_rows;
    x->copy_a = x->a_packed_in_place || p->a_prepacked ? d->elem_bytes * x->a_home
                                                       : copy_a_elem_ns(d, p, m0, x->a_home, x->a_far);
}

/* An L0 tile's row and column tiles of the problem and the height of its
 * last row tile. */
typedef struct {
    int64_t R, C, r_last;
    int m0, n0;
    double row_k;       /* the tile's least time per row of a column tile, all of k (group_floor) */
    int modes;          /* bit per load mode: the tile has candidates in it that may run here */
    /* plain problems (group_floor), per load mode: the time of a full
     * tile and of the last row tile (r_last rows) over all of k, in one k
     * block (INFINITY: the mode is not allowed) */
    double full_k[VX_LOAD_MODES], last_k[VX_LOAD_MODES];
    double copy_a;      /* ... and ns per element of A that copy A+B pays to copy it at this
                           height (copy_a_ns); 0: the plan reads A in place or A's panels
                           were packed before the call, and pays A's read only */
    double scale[VX_LOAD_MODES]; /* its context scale per load mode (context_scales) */
} tile_pre;

static void tile_of(const vx_problem *p, int m0, int n0, tile_pre *T)
{
    T->m0 = m0;
    T->n0 = n0;
    T->R = cdiv_small(p->m, m0);
    T->C = cdiv_small(p->n, n0);
    T->r_last = p->m - (T->R - 1) * m0;
    T->row_k = 0;
}

/* Row and column tiles per cell of grid g: cdiv(R, tm) x cdiv(C, tn). */
static inline int64_t cell_rows(const tile_pre *T, vx_l2_cand g) { return g.tm == 1 ? T->R : cdiv_small(T->R, g.tm); }
static inline int64_t cell_cols(const tile_pre *T, vx_l2_cand g) { return g.tn == 1 ? T->C : cdiv_small(T->C, g.tn); }

/* The full row tiles and the rows of the short last one of a cell of
 * rcell row tiles of T (a cell that reaches the last row tile ends with
 * the problem's last rows). */
static inline void cell_row_tiles(const tile_pre *T, int64_t rcell, int64_t *full, int64_t *rem)
{
    const int last_full = T->r_last == T->m0;
    *full = rcell < T->R ? rcell : T->R - 1 + last_full;
    *rem = rcell < T->R || last_full ? 0 : T->r_last;
}

/* The largest cell over tile T of a grid whose cells hold rcell x ccell
 * tiles (cell_rows, cell_cols): its rows and columns, column tiles, and
 * full and short row tiles, without a division (a cell that reaches the
 * last row tile ends with the problem's last rows). grid_common must have
 * filled x for the grid's unit count. */
static void cell_of(const tile_pre *T, int64_t rcell, int64_t ccell, const vx_problem *p, grid_ctx *x)
{
    x->m_c = rcell < T->R ? rcell * T->m0 : p->m;
    x->n_c = ccell < T->C ? ccell * T->n0 : p->n;
    x->cols = ccell;
    cell_row_tiles(T, rcell, &x->full, &x->rem);
}

/* The cell of grid g over m0 x n0 tiles; 0 when the grid has more cells
 * than tiles. */
static int grid_setup(const vx_device_desc *d, const vx_problem *p, int m0, int n0, vx_l2_cand g, grid_ctx *x)
{
    tile_pre T;
    tile_of(p, m0, n0, &T);
    if (g.tm > T.R || g.tn > T.C)
        return 0;
    grid_common(d, p, g, packed_a_rows_max(d, p), x);
    cell_rates(d, p, m0, n0, x);
    cell_of(&T, cell_rows(&T, g), cell_cols(&T, g), p, x);
    return 1;
}

/* L0 time of `cols` column tiles, each `full` calls of m0 rows and, when
 * rem > 0, one of rem rows, over all of k in kblocks k blocks: every call
 * pays o once per k block and p per k step. In two parts, for callers that
 * vary only the k blocks: the calls' o for one k block, and their p over
 * all of k; the time is o * kblocks + p (tiles_time). The short tile is
 * selected, not branched on: the search meets every kind of cell in turn. */
typedef struct {
    double o, p;
} tiles_parts;

static inline tiles_parts tiles_split(const vx_rate *r, int m0, int64_t full, int64_t rem, int64_t cols,
                                      int64_t k)
{
    const int64_t last = rem > 0 ? rem : 1;
    const double has = rem > 0 ? 1.0 : 0.0;
    const tiles_parts t = { ((double)full * r[m0 - 1].o + has * r[last - 1].o) * (double)cols,
                            ((double)full * r[m0 - 1].p + has * r[last - 1].p) * (double)k * (double)cols };
    return t;
}

static inline double tiles_time(const vx_rate *r, int m0, int64_t full, int64_t rem, int64_t cols, int64_t k,
                                int64_t kblocks)
{
    const tiles_parts t = tiles_split(r, m0, full, rem, cols, k);
    return t.o * (double)kblocks + t.p;
}

/* L0 time to cover m_c rows x cols column tiles (the exact edge tile for
 * the last m_c % m0 rows, no padding). */
static double l0_time(const vx_l0_family *F, int mode, int m0, int64_t m_c, int64_t cols, int64_t k,
                      int64_t kblocks)
{
    return tiles_time(F->rate[mode], m0, m_c / m0, m_c % m0, cols, k, kblocks);
}

/* Both operands plain matrices: what the probes measured (tune.h) applies;
 * a convolution's gathered or segmented operands keep the model's price. */
static inline int plain_operands(const vx_problem *p)
{
    return p->a_seg <= 0 && p->a_run <= 0 && p->b_run <= 0;
}

/* What a plain problem's L0 time is multiplied by for the family's rate in
 * the GEMM driver (levels.h, context): the CPU tune's context probe runs
 * each family through the packed driver, where the L1 timings ranked the
 * families by the clock each kernel caught (an Intel Xeon guest: 22 x 16
 * at 244 GFLOP/s put 2048x3072x768 at 0.77x of oneDNN). So do a
 * convolution's plans that copy both operands (load mode `mode`): their
 * kernels run over packed buffers as the probe's do; 25 x 16 over
 * ResNet-50's c4 projection (1x1 stride 2, batch 32, NHWC), L1-rated level
 * with 6 x 64, ran 23.7 ms against 21.4 (NOTES.md, thirty-fifth session).
 * Its patches read in place keep the L1 rates: scaled, 32-wide tiles at
 * 0.935 moved the c4 3x3 stride-2 layer (batch 8, NHWC) from pack-B
 * 10 x 32, 6.0 ms, to 5 x 64, 9.8 ms (thirty-third session).
 * From a long enough k on, the tile's own ratio where B is packed
 * as in the probe (levels.h, context_m; on the families' level, it may
 * exceed 1), held under the family's cap where n reaches its bound
 * (context_cap: narrow tiles over wide B, cpu_levels.c), else the
 * family's. Over an in-place B the tiles' order is
 * another (BERT's 13-16-row layers in place: 9 x 48 ran 0.95-1.16x the
 * time of 8 x 48, which the tiles' ratios put 3 % behind; NOTES.md,
 * thirty-seventh session). context_scales: every load mode at once (the
 * search's set-up, tile by tile). */
static inline void scales_of(const vx_l0_scale *X, int64_t k, int64_t n, int plain, double out[VX_LOAD_MODES])
{
    const double tile = k < X->tile_min_k ? X->family : n >= X->wide_min_n ? X->tile_wide : X->tile;
    for (int mode = 0; mode < VX_LOAD_MODES; mode++)
        out[mode] = !plain && mode != VX_LOAD_COPY_AB ? 1.0 : mode != VX_LOAD_NONE ? tile : X->family;
}

static inline void context_scales(const vx_l0_family *F, int m0, const vx_problem *p, double out[VX_LOAD_MODES])
{
    const vx_l0_scale X = vx_l0_scale_of(F, m0);
    scales_of(&X, p->k, p->n, plain_operands(p), out);
}

static inline double context_scale(const vx_l0_family *F, int m0, const vx_problem *p, int mode)
{
    double s[VX_LOAD_MODES];
    context_scales(F, m0, p, s);
    return s[mode];
}

/* l0_time over the whole cell of x (its row tiles worked out once) in load
 * mode `mode`, at the rates of rate_mode(x->a_packed_in_place, mode). */
static inline double cell_l0_time(const vx_l0_family *F, int mode, int m0, const grid_ctx *x, int64_t k,
                                  int64_t kblocks, const vx_problem *p)
{
    return context_scale(F, m0, p, mode) *
           tiles_time(F->rate[rate_mode(x->a_packed_in_place, mode)], m0, x->full, x->rem, x->cols, k, kblocks);
}

/* A copied block no larger than the cell's `len` rows or columns, in whole
 * tiles of `tile`: larger ones run alike. */
static inline int64_t clip_block(int64_t block, int64_t len, int tile)
{
    return block < len ? block : cdiv_small(len, tile) * tile;
}

/* Rows of B a load mode copies: all k, except that a convolution run with
 * its patches in place packs only the filter taps some pixel uses. */
static double b_copied_k(const vx_problem *p, int mode)
{
    const int conv_in_place = mode == VX_LOAD_COPY_B && p->a_seg > 0;
    return (double)p->k * (conv_in_place && p->b_kfrac > 0 && p->b_kfrac < 1 ? p->b_kfrac : 1.0);
}

/* L0 time of a convolution's in-place pieces (conv_inplace.c) over imgs
 * images: `rows` rows of len pixels each, tiled as vx_conv_piece_way
 * picks: along the rows, down the columns or across the images. */
static double piece_time(const vx_l0_family *F, int mode, int m0, int64_t len, int64_t rows, int64_t imgs,
                         int64_t cols, int64_t k, int64_t kblocks)
{
    if (len <= 0 || rows <= 0)
        return 0.0;
    switch (vx_conv_piece_way(len, rows, imgs, m0, F->rate[mode])) {
    case VX_PIECE_ALONG:
        return (double)(imgs * rows) * l0_time(F, mode, m0, len, cols, k, kblocks);
    case VX_PIECE_DOWN:
        return (double)(imgs * len) * l0_time(F, mode, m0, rows, cols, k, kblocks);
    default:
        return (double)(rows * len) * l0_time(F, mode, m0, imgs, cols, k, kblocks);
    }
}

/* L0 time of n images whose rows hold `inner` interior pixels and `edge`
 * edge pixels, rows_in rows inside and edge_rows at the padded edges:
 * their interior, edge columns, edge rows and corners as pieces. */
static double images_time(const vx_l0_family *F, int mode, int m0, int64_t inner, int64_t edge, int64_t rows_in,
                          int64_t edge_rows, int64_t n, int64_t cols, int64_t k, int64_t kblocks)
{
    return piece_time(F, mode, m0, inner, rows_in, n, cols, k, kblocks) +
           (double)edge * piece_time(F, mode, m0, 1, rows_in, n, cols, k, kblocks) +
           (double)edge_rows * (piece_time(F, mode, m0, inner, 1, n, cols, k, kblocks) +
                                (double)edge * piece_time(F, mode, m0, 1, 1, n, cols, k, kblocks));
}

/* L0 time of a convolution's in-place patches: the taps that fall into the
 * padding are skipped (a_kfrac of k is computed) and the map is cut into
 * pieces whose pixels read the same taps, each tiled along its rows, down
 * its columns or across the images (piece_time). The pieces of an image:
 * its interior, the a_edge columns whose taps reach into the padding (one
 * pixel wide each, mostly) beside it, the a_edge_rows rows likewise above
 * and below, and their corners. Where most tiles were edge pixels'
 * one-row tiles, small maps ran far from the price of tiles along rows:
 * 32x512x7x7, 512 3x3 filters (Zen 5), priced 17.4 ms so, ran 13.7 ms. */
static double conv_rows_time(const vx_l0_family *F, int mode, int m0, int64_t m_c, int64_t cols, int64_t k,
                             int64_t kblocks, const vx_problem *p)
{
    /* taps in the padding are skipped: only the valid fraction of k runs */
    if (p->a_kfrac > 0 && p->a_kfrac < 1) {
        k = (int64_t)((double)k * p->a_kfrac + 0.5);
        kblocks = (int64_t)((double)kblocks * p->a_kfrac + 0.5);
        k = k > 0 ? k : 1;
        kblocks = kblocks > 0 ? kblocks : 1;
    }
    if (p->a_row <= 0)
        return l0_time(F, mode, m0, m_c, cols, k, kblocks);
    const int64_t edge = p->a_edge < p->a_row ? p->a_edge : p->a_row;
    const int64_t inner = p->a_row - edge;
    if (p->a_img < p->a_row) /* rows only: the edge pixels as one-row tiles */
        return ((inner > 0 ? l0_time(F, mode, m0, inner, cols, k, kblocks) : 0.0) +
                (double)edge * l0_time(F, mode, 1, 1, cols, k, kblocks)) *
               (double)m_c / (double)p->a_row;
    const int64_t rows = p->a_img / p->a_row, edge_rows = p->a_edge_rows < rows ? p->a_edge_rows : rows;
    const int64_t rows_in = rows - edge_rows;
    const double one = images_time(F, mode, m0, inner, edge, rows_in, edge_rows, 1, cols, k, kblocks);
    const int64_t imgs = m_c / p->a_img; /* the cell's whole images, tiled together */
    const double pieces = imgs < 2 ? one * (double)m_c / (double)p->a_img
                                   : images_time(F, mode, m0, inner, edge, rows_in, edge_rows, imgs, cols, k, kblocks) +
                                         one * (double)(m_c - imgs * p->a_img) / (double)p->a_img;
    /* or every row as band tiles (a row's pixels whatever their taps, each
     * tap over the pixels that read it): exact work at the rates of whole
     * rows, the calls multiplied. 1x52x9x9, 336 9x9 filters, pad 4: 81
     * one-pixel pieces; band tiles ran 0.5-0.6x their time (AMD Zen 4). */
    if (p->a_band_runs <= 0)
        return pieces;
    double band = (double)m_c / (double)p->a_row * l0_time(F, mode, m0, p->a_row, cols, k, kblocks * p->a_band_runs);
    /* whole-row tiles do the exact work, but each tap column's calls run
     * only the pixels that read it: a row's rate per pixel taken at those
     * heights (4x4 maps with 5x5 filters: 2.8 of 4 pixels a column) */
    const int64_t wide = p->a_row < m0 ? p->a_row : m0;
    int64_t part = (int64_t)(p->a_band_pixels + 0.5);
    part = part < 1 ? 1 : part > wide ? wide : part;
    const vx_rate *r = F->rate[mode];
    if (part < wide && r[part - 1].p > 0 && r[wide - 1].p > 0)
        band *= ((double)r[part - 1].p / (double)part) / ((double)r[wide - 1].p / (double)wide);
    return band <= VX_BAND_MARGIN * pieces ? band : pieces;
}

/* What a cell of a convolution's in-place patches re-reads from beyond
 * L2 (the order it runs in, vx_conv_inplace_order: its packed filter per
 * row or block of pixels, or its input per panel) at the rate of the
 * level that holds it (the second level holds half the unit's L2,
 * levels.h, as the executor counts). The cell's pixels and panels are
 * x's. The filter's re-reads are a packed buffer's stream, which the
 * prefetchers run under the kernels (returned, for the caller's overlap);
 * the input's, one panel after another, are the tiles' rows read in place
 * (pixels a stride of channels apart, every row its own stream): like a
 * plain A read in place from beyond the second level, they run at the
 * strided rate at best and stall the kernels (*stall). Overlapped, ResNet-
 * 50's c3 3x3 stride-2 layer (128 channels) at batch 8 put 30 x 16 tiles
 * on a 2 x 1 grid (each unit all 8 panels, its 6.4 MB of input re-read
 * from the L3 for each) priced 8.1 ms, which ran 12.4-13.2, against 8.9
 * for 1 x 2 (4 panels of 295 KB a unit, held in L2: no re-read); oneDNN
 * 8.6 (2 AMD Zen 4 cores, NHWC; 0.64x at batch 13 and 32). */
static double conv_far_ns(const vx_device_desc *d, const vx_problem *p, int m0, int n0, const grid_ctx *x,
                          double *stall)
{
    *stall = 0.0;
    if (p->a_pixel_elems <= 0 || p->a_row <= 0 || d->nmem < 3)
        return 0.0;
    const double e = d->elem_bytes;
    const double filter = e * (double)x->cols * (double)n0 * (double)p->k;
    const int64_t image = p->a_img > 0 ? p->a_img : x->m_c;
    int64_t block;
    double far;
    const int order = vx_conv_inplace_order(filter, e * p->a_pixel_elems, x->m_c, p->a_row, p->a_row - p->a_edge,
                                            image, m0, (double)x->cols, (double)d->mem[1].bytes, &block, &far);
    if (far <= 0)
        return 0.0;
    if (order == VX_CELL_PANEL_AT_A_TIME) {
        *stall = far * dmax(x->nspb[level_for(d, e * (double)x->m_c * p->a_pixel_elems)], x->strided);
        return 0.0;
    }
    return far * x->nspb[level_for(d, filter)];
}

/* A cell of a convolution's in-place patches walks each of its filter
 * panels (the taps in use of all of k, n0 wide) whole for every tile of
 * pixels: a panel larger than the second level comes from beyond it every
 * time. 1x366x16x16 with 102 7x7 filters (k = 17934, pad 3): 6 x 64 tiles
 * on a 1 x 2 grid, 4.6 MB panels, priced 2.9 ms without this, ran 7.8
 * (197 MB from an L3 read at 28 GB/s); 30 x 16 (1.1 MB panels) on 2 x 1
 * ran 3.5 (Intel Xeon guest; NOTES.md, thirty-fifth session). */
static double conv_panel_ns(const vx_device_desc *d, const vx_problem *p, int m0, int n0, const grid_ctx *x)
{
    const double used = p->a_kfrac > 0 && p->a_kfrac < 1 ? p->a_kfrac : 1.0;
    const double panel = d->elem_bytes * (double)p->k * used * (double)n0;
    const int level = level_for(d, panel);
    if (level < 2)
        return 0.0;
    return (double)cdiv_small(x->m_c, m0) * (double)x->cols * panel * x->nspb[level];
}

/* L0 calls per row tile and column tile over all of k with k block kb:
 * an in-place A cut into segments (a convolution's taps) needs one per k
 * block of every segment. */
static inline int64_t k_blocks(const vx_problem *p, int mode, int64_t kb)
{
    return mode != VX_LOAD_COPY_AB && p->a_seg > 0 ? cdiv(p->k, p->a_seg) * cdiv(p->a_seg, kb) : cdiv(p->k, kb);
}

/* The fraction of an in-place plan's priced B stream its kernels wait for
 * (measured, vx_cost_inplace_stall). */
static inline double inplace_stall(const vx_device_desc *d, const vx_problem *p)
{
    return plain_operands(p) ? 1.0 - d->inplace_overlap : 1.0;
}

/* inplace_stall for a direct plan whose tiles work `rows` rows of C per
 * row of B they read: a tile of one or two rows does one or two FMAs per
 * B vector it loads, runs at its load-bound rate, and its 16 rows of
 * fetch-ahead take less time than a row's fetch from beyond the second
 * level (`far`): the kernels wait for all of B's stream instead of the
 * probe's share. Priced at the share, 1x3072x768 read B (in L3) in place
 * with 1-row tiles, priced 47 us against 50 for the matrix-vector form,
 * and ran 106 against 65; 1x1024x4096 208 against 115 (2 AMD Zen 4 cores,
 * alternated runs against oneDNN: 0.67-0.87x, then 1.08-1.47x). Two rows
 * streamed B at 66 GB/s a core in place (L3: 101): 2x2304x768 priced 39
 * us, ran 53, and 2x768x3072 priced 52, ran 72, where the matrix-vector
 * form, its sums kept in L1, ran 48 and 59 (thirty-first session; before
 * that the two forms had run alike). Four rows still ran faster in place
 * (4x2304x768: 70 against 76). */
static inline double inplace_stall_rows(const vx_device_desc *d, const vx_problem *p, int64_t rows, int far)
{
    return far && rows <= 2 && plain_operands(p) ? 1.0 : inplace_stall(d, p);
}

/* ns per element of B a plan in this mode loads into its panels: a copy
 * (grid_common), or, where the panels were packed before the call
 * (b_prepacked: a packed filter) and the mode reads panels, their read
 * from B's home, a contiguous stream the prefetchers run under the FMAs
 * as they run an in-place B's: only the measured stalled share counts
 * (inplace_stall). Priced whole, 49x2048x512 with B transposed (a
 * pointwise NHWC conv, ResNet-50's c5 at batch 1) kept a packed plan
 * priced 479 us that ran 515, against pack-B on the packed panels priced
 * 485 that ran 457 (AMD Zen 4, 2 cores). */
static inline double b_load_ns(const vx_device_desc *d, const vx_problem *p, int mode, const grid_ctx *x)
{
    return p->b_prepacked && mode == VX_LOAD_COPY_B ? inplace_stall(d, p) * d->elem_bytes * x->b_home : x->copy_b;
}

/* The share of an in-place A block's re-reads (one per column tile after
 * the first) its kernels wait for. From the second level, a block of at
 * most A_STREAMED_ROW_TILES row tiles at least two lines wide streams
 * under the FMAs as B's stream does (the measured in-place share,
 * inplace_stall); a taller or narrower block, or one from further out, is
 * waited for whole. Measured on 2 AMD Zen 4 cores, each pick against the
 * model's before, alternated in one process over the oracle's 128 shapes:
 * 16x3072x768 with kc = 768 339 us against kc = 128 (A's block in L1)
 * 408, 16x768x3072 0.93x, 32x2077x531 0.83x, 29x390x2665 0.83x; up to 6
 * row tiles 0.92x the time of up to 3 on the shapes the two limits part,
 * while without a limit 1035x1037x81 (A's rows 81 floats) and 192x3298x87
 * ran 4-7 % slower. The AVX2 tiles (16 and 24 floats) took direct plans
 * that ran 1.06-1.23x the time of the packed ones (16x2304x768: 409 us
 * against 332; NOTES.md, twenty-sixth session). On Zen 5, 14-row tiles
 * read in place over a 496-row block had lost to a packed plan.
 * A tile of one vector a row as wide as a line (AVX-512's 16-wide tiles,
 * one FMA per element of A, its broadcast embedded) streams a block of up
 * to A_STREAMED_ROW_TILES_ONE_VECTOR row tiles too: forced on one Zen 4
 * core, direct 30 x 16 and 19 x 16 over k = 512..1500 in one k block ran
 * 3-12 % faster than in blocks of 128 that keep A's rows in L1 (25x154x731
 * 55.7 us against 58.0, 16x3072x768 776 against 877), which the model had
 * priced the other way; over up to 6 row tiles, BERT's 100-155-row layers
 * then took 30 x 16 and ran 1.7 % slower than their packed 14 x 32 and
 * direct 9 x 48 plans (NOTES.md, thirty-eighth session). */
enum { A_STREAMED_ROW_TILES = 6, A_STREAMED_ROW_TILES_ONE_VECTOR = 3 };

/* The share for the cell's A block if it is re-read from the second level
 * (the level depends on the k block, so the search's bounds take this as
 * the least share whatever it). */
static inline double a_reread_share(const vx_device_desc *d, const vx_problem *p, int m0, const vx_l0_family *F,
                                    const grid_ctx *x)
{
    const int64_t row_bytes = (int64_t)d->elem_bytes * F->n, row_tiles = cdiv_small(x->m_c, m0);
    const int streams = row_bytes >= 2 * line_bytes(d) ? row_tiles <= A_STREAMED_ROW_TILES
                        : F->regs_per_m == 1 && row_bytes >= line_bytes(d) ? row_tiles <= A_STREAMED_ROW_TILES_ONE_VECTOR
                                                                            : 0;
    return streams ? inplace_stall(d, p) : 1.0;
}

/* The in-place loops (gemm.c, run_inplace) walk all of a cell's rows once
 * per k block and column tile, each pass storing an n0-wide piece of every
 * row of C. Where the cell's C is beyond the second level, the passes after
 * the first meet its lines in short pieces rows apart, which the
 * prefetchers do not follow: each tile's lines are fetched (and written
 * back) as its k loop starts, and only what that loop does not cover
 * waits. Unpriced, the tuned rates of 16-wide tiles (AVX-512 embedded
 * broadcasts, twenty-seventh session) put 54208x44x4 (a 1x1 NHWC
 * convolution) on 8 x 16 tiles, three passes over a 9.5 MB C, that ran
 * 1.3-1.4x the time of one pass on 4 x 48 (2 AMD Zen 4 cores; 54208x64x4:
 * 8 x 16 545 us, 4 x 64 336). Priced without the loop's cover, c2 1x1
 * 64->256 at batch 3-32 (9408..100352 x 256 x 64) left pack-B 4 x 64 for
 * packed 10 x 16 and ran 0.91-0.95x of oneDNN against 1.00-1.02. A piece
 * that does not start and end on line boundaries touches a line more than
 * it fills. */
static double c_rewalk_ns(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int mode, int m0,
                          int64_t kb, int64_t KB, const grid_ctx *x)
{
    const double e = d->elem_bytes;
    const int64_t passes = KB * x->cols;
    const int home = level_for(d, e * (double)x->m_c * (double)x->n_c);
    if (passes < 2 || home < 2)
        return 0.0;
    const int line = line_bytes(d);
    const int64_t piece = (int64_t)e * F->n;
    const int aligned = piece % line == 0 && ((int64_t)e * c_ld(p)) % line == 0;
    const double lines = (double)(piece / line + (piece % line != 0)) + (aligned ? 0.0 : 1.0);
    const double fetch = 2.0 * (double)m0 * lines * line * x->nspb[home];
    const double waits = fetch - (double)kb * F->rate[mode][m0 - 1].p;
    if (waits <= 0)
        return 0.0;
    return (double)(passes - 1) * (double)(x->full + (x->rem > 0)) * waits;
}

/* The cell's time for L1 candidate b, whose k block for this k is kb
 * (vx_cost_kc), KB k blocks (k_blocks) and L0 time compute (cell_l0_time). */
static double price_cell_body(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int m0,
                              const vx_l1_cand *b, int64_t kb, int64_t KB, double compute, const grid_ctx *x)
{
    const double e = d->elem_bytes;
    const int n0 = F->n;
    const int64_t m_c = x->m_c, n_c = x->n_c, k = p->k;
    const int64_t cols = x->cols;
    const double a_cell = e * (double)m_c * (double)k, b_cell = e * (double)n_c * (double)k;
    const double copy_b = d->mode_ns[b->mode] +
                          (double)n_c * b_copied_k(p, b->mode) * b_load_ns(d, p, b->mode, x);

    if (b->mode == VX_LOAD_COPY_AB) {
        const int64_t mc = clip_block(b->mc, m_c, m0), nc = clip_block(b->nc, n_c, n0);
        const int64_t MB = cdiv(m_c, mc), NB = cdiv(n_c, nc);
        const double copy_a = (double)NB * (double)m_c * (double)k * x->copy_a;
        /* A block read once per column tile from its buffer; the B block once
         * per row block from wherever it fits. */
        const double bbuf = x->nspb[level_for(d, e * (double)kb * (double)nc)];
        const double streams = a_cell * (double)cols * x->abuf + b_cell * (double)MB * bbuf;
        const double price = copy_a + copy_b + dmax(compute, streams);
        /* measured (vx_cost_packed_scale): what a plain matrix's copies and
         * streams add to the kernels runs this many times its price */
        return plain_operands(p) ? compute + (1.0 + d->packed_extra) * (price - compute) : price;
    }
    /* In place: each column tile walks all m_c rows of A's k block, from the
     * level that holds that slice (after the first pass over it). Rows of an
     * in-place operand lie a leading dimension apart, and the kernels do not
     * prefetch them: reads from beyond the second level run at the measured
     * strided rate and stall the kernel instead of overlapping with it (the
     * copied paths stream contiguous buffers, which the hardware prefetches). */
    if (p->a_seg > 0 && b->mode == VX_LOAD_COPY_B) {
        /* A convolution's patches read in place: a tile's rows are adjacent
         * pixels, and the input under a row of output pixels is read once
         * from its home and then again from the second level by every tap
         * run and column tile. The re-reads stream (the prefetchers follow
         * them) and overlap the kernels, like a copied operand's; the first
         * pass from home is priced whole, as a plain A's stream in place is:
         * overlapped too, every grid over ResNet-50's 3x3 layers priced
         * within 0.7 % and the pick, 1 x 2 (each unit reads all the input),
         * ran 1.07-1.14x the time of 2 x 1 (64 channels, batch 8 and 32,
         * 2 AMD Zen 4 cores; priced so, 33.3 ms predicted, 33.7 run). */
        const double a_first = e * (double)m_c * (double)p->a_seg * x->a_home;
        const double a_again = a_cell * (double)cols * x->nspb[1];
        double far_stall;
        const double far = conv_far_ns(d, p, m0, n0, x, &far_stall);
        return copy_b + a_first + far_stall +
               dmax(conv_rows_time(F, b->mode, m0, m_c, cols, k, KB, p), a_again + far + conv_panel_ns(d, p, m0, n0, x));
    }
    const int a_level = level_for(d, e * (double)m_c * (double)kb);
    double a_again = x->nspb[a_level]; /* ns per byte */
    if (a_again > x->nspb[1]) /* slower than the second level */
        a_again = dmax(a_again, x->strided);
    /* A call that streams C (levels.h, stream_c_min; beta = 0 taken, as
     * such calls mostly are) walks row blocks outer: a tile's rows of A
     * come from home once and are re-read from the first level by the
     * other column tiles. Priced as above, 716847x112x16 went to a 1 x 2
     * grid that reads A twice and ran 10.5 ms against 8.5 (2 AMD Zen 5
     * cores; NOTES.md, twentieth session). */
    const int c_streamed = KB == 1 && c_past_caches(d, p) && b_cell <= (double)d->stream_b_max &&
                           !(x->cols <= 1 && d->stream_one_tile_k_max >= 0 && p->k > d->stream_one_tile_k_max);
    if (c_streamed)
        a_again = x->nspb[0];
    /* ... and stores each row tile's C once, all its column tiles in turn:
     * no pass meets C's lines again. Priced as rewalked, 132534x128x8 took
     * a 1 x 2 grid of one-tile cells (priced 1.5 ms, ran 4.5-5.6) over the
     * streamed 2 x 1 (priced 4.4, ran 3.6-3.9; 2 AMD Zen 4 cores; NOTES.md,
     * fortieth session). */
    const double c_again = c_streamed ? 0.0 : c_rewalk_ns(d, p, F, b->mode, m0, kb, KB, x);
    /* A tile too wide for the core's window over A's rows, from beyond the
     * second level (levels.h, a_step_ops): its first pass waits for them,
     * also where C streams and the loop fetches A's rows ahead (gemm.c,
     * fetches_a). That loop was exempt once: 2449029x16x16 went to 10 x 16
     * and ran 1.4x the time of 30 x 16 (2 AMD Zen 5 cores); it now runs on
     * the resident kernels. Exempt, 716847x32x32 took 30 x 16 on one thread
     * (24-27 ms against 18.4-18.7 on 10 x 16) and 716847x100x64 19 x 16 on
     * two (0.93-0.97x the time on 10 x 16; 2 AMD Zen 4 cores; NOTES.md,
     * fortieth session). Longer rows waited there as anywhere
     * (1569960x16x200: 10 x 16 0.54x the time of 30 x 16). */
    const double step_ops = (double)m0 * (double)(F->regs_per_m + 1) + (double)F->regs_per_m;
    const double a_wait =
        x->a_far && d->a_step_ops > 0 && step_ops > d->a_step_ops ? step_ops / d->a_step_ops : 1.0;
    const double a_stream =
        a_cell * x->a_home * a_wait +
        (a_level == 1 ? a_reread_share(d, p, m0, F, x) : 1.0) * a_cell * (double)(cols - 1) * a_again;
    /* B's rows lie b_ld (the caller's ldb >= n) elements apart. A page or
     * more apart (and a k block of them spanning more than the first level), every row is a new
     * page for the prefetchers and the pieces alias in the caches' sets;
     * closer rows share pages and stream like contiguous data (oracle:
     * 1x956x1171 read B in place at 37 GB/s per core, 3.7 KiB rows). */
    const int b_strided = e * (double)b_ld(p) >= (double)d->page_bytes &&
                          e * (double)kb * (double)b_ld(p) > (double)d->mem[0].bytes;
    if (b->mode == VX_LOAD_COPY_B) {
        /* One n0-wide panel at a time: short pieces of rows a leading
         * dimension apart. From DRAM such pieces copy at the measured
         * narrow rate whatever the stride (1-16 KiB rows: 0.6-0.9 ns per
         * element on one Zen 1 core against 0.35 for the read alone), and
         * the copy stalls the kernels that wait for it (3x768x3072 on 2
         * cores: copied 2.0 ms, in place 0.83; NOTES.md); from a cache,
         * only rows a page or more apart do. */
        const int from_last = x->b_home_last;
        const double narrow = !p->b_prepacked && (b_strided || from_last)
                                  ? (double)n_c * (double)k * d->copy_b_narrow_ns[from_last]
                                  : 0;
        return dmax(copy_b, d->mode_ns[b->mode] + narrow) + compute + a_stream + c_again;
    }
    /* B in place: the first row tile brings each kb x n0 panel in from B's
     * home (a k block's rows walked panel by panel), the others re-read it
     * from the level that holds the panel. Far-apart rows take the measured
     * strided rate for the first pass; re-read, they come from the first
     * level whose sets keep them (aliased_level), else from the last cache,
     * which the kernels fetch them from 16 rows ahead. Priced at the strided
     * rate whatever the stride, 16x2304x768 read in place (2 Zen 1 cores,
     * 1.15 ms) was put behind a packed plan that ran 1.66 ms; priced at the
     * strided rate where no level keeps them (a walk without fetches ahead,
     * tune.h bw_strided), 16x3072x768 took kc = 128 (2 Zen 4 cores: 408 us)
     * over kc = 768 (339 us; NOTES.md, twenty-sixth session). */
    const int64_t rows = cdiv_small(m_c, m0);
    const int fit = level_for(d, e * (double)kb * n0);
    double panel = x->nspb[fit], first = x->b_home; /* ns per byte */
    if (b_strided) {
        const int keep = aliased_level(d, fit, (int64_t)e * b_ld(p), (int64_t)e * n0, kb);
        panel = dmax(panel, x->nspb[keep >= 0 ? keep : d->nmem >= 2 ? d->nmem - 2 : 0]);
        /* The first pass: from a cache, the rows stream at the home
         * level's rate, since the kernels fetch B 16 rows ahead, whether or
         * not some level's sets keep a k block's rows. The measured
         * strided-stream rate (a walk without fetches ahead, rows 8 KiB
         * apart) priced 6x1294x356 in place at 150 us on 2 Zen 1 cores,
         * where it ran 104 (packed: priced 146, ran 205). Kept for rows no
         * level keeps (page-multiple strides: BERT's 2304, 3072 and 1024
         * wide B's), it put 16x3072x768 on kc = 128, which ran 376-400 us
         * against 348 for kc = 768, and the 80 suite cases it moved ran
         * in 0.94-0.96 of the time (AVX2: 0.96-0.99; 2 AMD Zen 4 cores,
         * forced and alternated; NOTES.md, thirty-ninth session). From
         * the last level (DRAM) that rate stays. */
        if (x->b_home_last)
            first = dmax(first, x->stride_stream);
        /* Each row of a k block holds a TLB entry while the block is walked
         * panel by panel; more rows than the TLB's sets keep for them miss
         * it on every piece. From DRAM that runs at the measured rate
         * (4x4096x4096 on 2 Zen 1 cores, rows 16 KiB apart, 4 pages: their
         * entries fall in 64 of the 256 sets of 6 ways; kc = 512: 9.3 ms,
         * kc = 256: 5.8, kc = 128: 5.7). From a cache the walks are cheaper
         * and not priced. */
        if (x->b_home_last && kb > tlb_rows(d, (int64_t)e * b_ld(p)))
            first = dmax(first, x->stride_tlb);
        /* Panels narrower than a line share each line with the next panel;
         * where no level keeps the k block's lines until then, every panel
         * fetches whole lines anew (13x4096x4096: the 14x8 tile read in place
         * ran 20.8 ms on 2 Zen 1 cores, 6x16 13.1). */
        const int line = line_bytes(d);
        if (keep < 0 && e * n0 < line)
            first *= (double)line / (e * n0);
    }
    /* Where the machine's prefetchers run B's stream under the FMAs (the
     * in-place probe: AMD Zen 5 waits for 9-14 % of it), only that share
     * adds to the kernels' time; never less than reading B once from home.
     * A's stream is priced whole, but for the re-reads from the second level
     * of a block of a few row tiles (a_reread_share). */
    const int b_far = x->b_home > x->nspb[1]; /* B's home is beyond the second level */
    const double stall = inplace_stall_rows(d, p, m_c < m0 ? m_c : m0, b_far);
    /* Row cells side by side (a grid splitting M) each walk all of B's
     * first pass from beyond L2 at the same time, the same panels on every
     * core: that pass is waited for whole. The probe's share is one core's
     * walk alone; two AMD Zen 4 cores ran 80 x 768..3072 x 768 on direct
     * 8 x 48 tiles 5-7 % slower on 2 x 1 than on 1 x 2 (each cell half of
     * B), where the share priced 2 x 1 4 % under (NOTES.md, forty-third
     * session). */
    const double first_stall = x->m_c < p->m && plain_operands(p) && b_far ? 1.0 : stall;
    const double b_stream = first_stall * b_cell * first + stall * b_cell * (double)(rows - 1) * panel;
    return d->mode_ns[VX_LOAD_NONE] + a_stream + c_again + dmax(compute + b_stream, b_cell * x->b_home);
}

/* price_cell_body, plus what cells side by side pay for the lines they
 * share: where a cell boundary or C's rows do not fall on line boundaries,
 * the line under each boundary holds columns of both neighbours, and every
 * k block stores each of the cell's rows into it from both cores, moving it
 * between them (19200x108x20, 1x2 grid on 2 AMD Zen 5 cores: 0.25 ms, or
 * 1.7-2.0 ms when the two threads walk the rows in step; NOTES.md). The
 * worst case is priced: a grid that splits rows instead costs nothing. */
static double price_cell(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int m0,
                         const vx_l1_cand *b, int64_t kb, int64_t KB, double compute, const grid_ctx *x)
{
    const double body = price_cell_body(d, p, F, m0, b, kb, KB, compute, x);
    const int64_t line = line_bytes(d);
    const int64_t e = d->elem_bytes;
    if (x->tn < 2 || ((x->n_c * e) % line == 0 && (c_ld(p) * e) % line == 0))
        return body;
    /* A transfer stalls a unit only where its work on one row of the cell
     * (per k block) is shorter than the transfer: longer, the line has
     * moved before the neighbour stores to it again, under the FMAs.
     * Charged whole, it put 32x2077x531, 8x2275x27 and 15x923x42 on 2 x 1
     * grids that ran 1.25-1.5x the time of the 1 x 2 ones (oracle, AMD
     * Zen 5, the transfer measured at 246 ns; NOTES.md, fourteenth
     * session), while 19200x108x20 (13 ns of work a row) keeps it. */
    const double rows = (double)x->m_c * (double)KB;
    const double stall = d->line_share_ns * units_scale(p) - body / rows;
    return stall > 0 ? body + stall * rows : body;
}

/* The load modes this problem's operands allow. */
static int mode_ok(const vx_problem *p, int mode)
{
    if (mode == VX_LOAD_COPY_AB)
        return 1;
    return p->a_in_place_ok && (mode == VX_LOAD_COPY_B || p->b_in_place_ok);
}

int64_t vx_in_place_a_rows_max(int64_t row_bytes, int ways, int64_t way_bytes, int line)
{
    const int64_t held = vx_rows_held(row_bytes, ways, way_bytes, line);
    return held > 0 ? held - VX_IN_PLACE_A_ROW_SLACK : INT64_MAX;
}

/* The tallest tile that may read this problem's A in place: over a plain
 * matrix's rows a_ld apart, vx_in_place_a_rows_max; over a convolution's
 * pixels a_pitch apart, as many as the first level's sets hold at that
 * stride, without the slack: its tiles end where a row of output pixels
 * does, and at 7 pixels a row the slack's 6-row tiles left a one-row tile
 * beside each (ResNet-50's c5 projection, 1 x 1024 x 14 x 14 at stride 2:
 * 6 x 32 ran 159 GFLOP/s, 7 x 32 180, on 2 AMD Zen 4 cores, 8-way L1).
 * Unbounded, its c4 projection from 512 channels (pixels 4 KiB apart, 14
 * a row) ran 14 x 32 tiles at 165 GFLOP/s, 7 x 32 at 218 (8 x 32 220,
 * 11 x 32 196), as a plain A with 4 KiB rows did (14 rows 164, 6 216).
 * No bound where the rows are adjacent. */
static int64_t a_rows_max(const vx_device_desc *d, const vx_problem *p)
{
    const vx_mem_level *L1 = &d->mem[0];
    if (a_rows_apart(p))
        return vx_in_place_a_rows_max((int64_t)d->elem_bytes * a_ld(p), L1->ways, L1->way_bytes, L1->line);
    if (p->a_in_place_ok && p->a_seg > 0 && p->a_pitch > 0) {
        const int64_t e = d->elem_bytes, bytes = p->a_pitch <= INT64_MAX / e ? e * p->a_pitch : INT64_MAX;
        const int64_t held = vx_rows_held(bytes, L1->ways, L1->way_bytes, L1->line);
        return held > 0 ? held : INT64_MAX;
    }
    return INT64_MAX;
}

/* ... and whether an m0-row tile may run in that mode: copying both, any;
 * otherwise no taller than rows_max (a_rows_max). */
static inline int tile_mode_ok(const vx_problem *p, int m0, int mode, int64_t rows_max)
{
    return mode_ok(p, mode) && (mode == VX_LOAD_COPY_AB || m0 <= rows_max);
}

double vx_cost_price(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int l1, int l2)
{
    const vx_l1_cand *b = &c->l1[l1];
    const vx_l0_cand *t = &c->l0[b->l0];
    const vx_l0_family *F = &d->fam[t->fam];
    grid_ctx x;
    if (!tile_mode_ok(p, t->m, b->mode, a_rows_max(d, p)) || !grid_setup(d, p, t->m, F->n, c->l2[l2], &x))
        return -1;
    const int64_t kb = vx_cost_kc(b->kc, p->k), KB = k_blocks(p, b->mode, kb);
    const double compute = cell_l0_time(F, b->mode, t->m, &x, p->k, KB, p);
    return x.fixed + price_cell(d, p, F, t->m, b, kb, KB, compute, &x);
}

/* Keep out[0..*n) sorted by ns, at most max entries. */
static void insert(vx_choice *out, int *n, int max, vx_choice v)
{
    if (*n == max && v.ns >= out[max - 1].ns)
        return;
    int i = *n < max ? (*n)++ : max - 1;
    while (i > 0 && out[i - 1].ns > v.ns) {
        out[i] = out[i - 1];
        i--;
    }
    out[i] = v;
}

/* A grid that fits the units, for the search: its shared context and
 * what group_floor prices per row and column of a cell. */
typedef struct {
    grid_ctx x;
    int g;
    double a_row_read, b_row_read; /* ns per row of A (all of k) / of B's columns from home */
    /* A plain problem's terms per load mode (modes_floor): its set-up;
     * ns per column of B (all of k); per row of A and column tile after
     * the first; per column of B and row tile after the first */
    double ab_fixed, ab_b;         /* copy A+B: B's copy */
    double a_elem;                 /* ns per element of A read from home */
    double b_fixed, b_b;           /* copy B: B's copy */
    double reread;                 /* in place: a re-read (A's per column tile after the first,
                                      both in place B's per row tile after the first) */
    double n_fixed, n_b, n_full;   /* both in place: B's stalled read, its whole read */
    double bound;                  /* no group of the grid has a lower floor (vx_cost_search) */
    int expanded;                  /* its groups are in the search's table (expand_grid) */
} grid_pre;

/* The least any plan of a group can cost, whatever its load mode and
 * blocks. A plain problem: the least over the load modes of the mode's
 * bound (mode_bound) with the terms that vary with the tile or the cell at
 * their least (modes_floor). Otherwise: the L0 calls at the tile's least
 * rates (candidates.c), with one k block, plus the reads from home that
 * every mode pays on top of them (price_cell: copies from home, or
 * in-place first passes that do not overlap the kernels; a convolution's
 * in-place patches do overlap, so there only B's copy counts). */
static inline double group_floor(const tile_pre *T, const grid_pre *P, int64_t rcell, int64_t ccell,
                                 const vx_problem *p, int plain)
{
    const double m_c = rcell < T->R ? (double)(rcell * T->m0) : (double)p->m;
    const double n_c = ccell < T->C ? (double)(ccell * T->n0) : (double)p->n;
    if (!plain)
        return P->x.fixed + (double)ccell * m_c * T->row_k + m_c * P->a_row_read + n_c * P->b_row_read;
    /* per mode: the cell's own full and short tiles (cell_of) at the
     * mode's rates in one k block (INFINITY where the tile does not allow
     * it), and the mode's reads, copies and re-reads */
    int64_t full, rem;
    cell_row_tiles(T, rcell, &full, &rem);
    const double cols = (double)ccell, has = rem > 0 ? 1.0 : 0.0;
    double compute[VX_LOAD_MODES];
    for (int mode = 0; mode < VX_LOAD_MODES; mode++)
        compute[mode] = cols * ((double)full * T->full_k[mode] + has * T->last_k[mode]);
    const double a_read = m_c * P->a_row_read, reread = m_c * (cols - 1.0) * P->reread;
    const double copy_a = T->copy_a <= 0.0 ? P->a_elem : copy_from_home(T->copy_a, P->a_elem, P->x.a_far);
    const double copy_ab = compute[VX_LOAD_COPY_AB] + P->ab_fixed + n_c * P->ab_b + m_c * (double)p->k * copy_a;
    const double copy_b = compute[VX_LOAD_COPY_B] + P->b_fixed + n_c * P->b_b + a_read + reread;
    const double none = P->n_fixed + a_read + reread +
                        dmax(compute[VX_LOAD_NONE] + n_c * (P->n_b + (full + has - 1.0) * P->reread), n_c * P->n_full);
    return P->x.fixed + dmin(dmin(copy_ab, copy_b), none);
}

/* A plain problem's terms of mode_bound per grid (group_floor): B's copy
 * at its least over the tiles (n0 at most n0_max), the in-place re-reads'
 * shares at their least (the stalled one), B's stalled read both in place.
 * With the L0 calls at their least over the modes and only the reads from
 * home beside them, the floors sat 5-14 % below their groups' least mode
 * bound, and a search visited 9 groups (the random suite, AMD Zen 4)
 * where 1.7 had a mode bound below the best plan. */
static void modes_floor(const vx_device_desc *d, const vx_problem *p, int n0_max, grid_pre *P)
{
    const grid_ctx *x = &P->x;
    const double e = d->elem_bytes, k = (double)p->k;
    const double st = inplace_stall(d, p);
    const double copy_b = copy_from_home(copy_b_ns(d, p, n0_max), e * x->b_home, x->b_home_last);
    P->ab_fixed = d->mode_ns[VX_LOAD_COPY_AB];
    P->ab_b = k * copy_b;
    P->a_elem = e * x->a_home;
    P->b_fixed = d->mode_ns[VX_LOAD_COPY_B];
    P->b_b = p->b_prepacked ? k * st * e * x->b_home : k * copy_b;
    P->reread = st * e * k * x->top;
    P->n_fixed = d->mode_ns[VX_LOAD_NONE];
    P->n_b = st * e * k * x->b_home;
    P->n_full = e * k * x->b_home;
}

/* A mode's bound (mode_bound) in parts, so that each L1 candidate's own
 * bound adds what its blocks cost beyond the least: more k blocks (every
 * L0 call pays o again) and, copying A, a copy per column block. */
typedef struct {
    double lb;          /* the mode's bound */
    double rest;        /* copy A+B: lb without the copy of A and max(compute, streams);
                           otherwise lb without compute */
    double compute1;    /* compute with the least k blocks, kb_least (mode_compute) */
    double per_kb;      /* compute per k block: every call's o once */
    double steps;       /* compute's per-k-step part, all of k */
    double copy_a1;     /* copy A+B: one copy of A */
    double streams;     /* copy A+B: the streams' bound; in place: the reads' bound */
    double stall, floor; /* in place: the share of streams priced, and the reads from home */
    int64_t kb_least;
    int refine;         /* 0: the candidates take the mode's bound (a convolution's in-place patches) */
} mode_lb;

/* The cell's L0 time in k blocks of the mode (cell_l0_time, from its parts). */
static inline double mode_compute(const mode_lb *r, int64_t kblocks)
{
    return r->per_kb * (double)kblocks + r->steps;
}

/* The least a plan in this group and load mode can cost, whatever its
 * blocks: price_cell's terms with one k block (compute's least), each block
 * count at 1 and every re-read from the fastest level. */
static mode_lb mode_bound(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int m0, int mode,
                          const grid_ctx *x, double scale)
{
    const double e = d->elem_bytes;
    const int64_t cols = x->cols;
    const double a_cell = e * (double)x->m_c * (double)p->k, b_cell = e * (double)x->n_c * (double)p->k;
    mode_lb r = { 0 };
    r.kb_least = mode != VX_LOAD_COPY_AB && p->a_seg > 0 ? cdiv(p->k, p->a_seg) : 1;
    const tiles_parts t =
        tiles_split(F->rate[rate_mode(x->a_packed_in_place, mode)], m0, x->full, x->rem, x->cols, p->k);
    r.per_kb = scale * t.o;
    r.steps = scale * t.p;
    r.compute1 = mode_compute(&r, r.kb_least);
    r.refine = 1;
    double lb = x->fixed + d->mode_ns[mode];
    if (mode != VX_LOAD_NONE)
        lb += (double)x->n_c * b_copied_k(p, mode) * b_load_ns(d, p, mode, x);
    if (mode == VX_LOAD_COPY_AB) {
        r.rest = lb;
        r.copy_a1 = (double)x->m_c * (double)p->k * x->copy_a;
        r.streams = a_cell * (double)cols * x->abuf + b_cell * x->top;
        r.lb = lb + r.copy_a1 + dmax(r.compute1, r.streams);
        return r;
    }
    if (p->a_seg > 0 && mode == VX_LOAD_COPY_B) { /* price_cell's convolution branch: streams overlap */
        r.refine = 0;
        r.lb = lb + dmin(r.compute1, conv_rows_time(F, mode, m0, x->m_c, cols, p->k, r.kb_least, p));
        return r;
    }
    if (mode == VX_LOAD_NONE) { /* price_cell's last branch, every re-read from the fastest level */
        r.rest = lb + a_cell * x->a_home + a_reread_share(d, p, m0, F, x) * a_cell * (double)(cols - 1) * x->top;
        r.streams = b_cell * x->b_home + b_cell * (double)(x->full + (x->rem > 0) - 1) * x->top;
        r.stall = inplace_stall(d, p);
        r.floor = b_cell * x->b_home;
        r.lb = r.rest + dmax(r.compute1 + r.stall * r.streams, r.floor);
        return r;
    }
    lb += a_cell * x->a_home + a_reread_share(d, p, m0, F, x) * a_cell * (double)(cols - 1) * x->top;
    r.rest = lb;
    r.lb = lb + r.compute1;
    return r;
}

/* An L1 candidate's bound: its mode's with the candidate's own k blocks
 * (kblocks) and, copying A, its column blocks (nblocks). compute is linear
 * in the k blocks, so this never exceeds price_cell's answer. */
static inline double cand_bound(const mode_lb *r, int mode, int64_t kblocks, int64_t nblocks)
{
    const double compute = mode_compute(r, kblocks);
    if (!r->refine)
        return r->lb;
    if (mode == VX_LOAD_COPY_AB)
        return r->rest + (double)nblocks * r->copy_a1 + dmax(compute, r->streams);
    if (mode == VX_LOAD_NONE)
        return r->rest + dmax(compute + r->stall * r->streams, r->floor);
    return r->rest + compute;
}

/* What the price of an L1 candidate depends on besides its tile and grid. */
typedef struct {
    int64_t kb, mc, nc;
    int mode;
} priced_key;

enum { MAX_SAME_KB = 16 };

static priced_key key_of(const vx_l1_cand *b, int64_t kb, int m0, int n0, const grid_ctx *x)
{
    priced_key key = { kb, 0, 0, b->mode };
    if (b->mode == VX_LOAD_COPY_AB) { /* as price_cell clips them */
        key.mc = clip_block(b->mc, x->m_c, m0);
        key.nc = clip_block(b->nc, x->n_c, n0);
    }
    return key;
}

static int same_key(priced_key a, priced_key b)
{
    return a.kb == b.kb && a.mode == b.mode && a.mc == b.mc && a.nc == b.nc;
}

/* The search's table of groups: each one's floor and id (its grid's
 * index among those that fit, << 16, | its tile's), in the order of the
 * ids (the tables' order, which ties keep), and each (grid, tile)'s cell
 * in row and column tiles. */
typedef struct {
    double *lbs;
    int *ids;
    int64_t *cells;
    int n;
} group_table;

/* What a grid's groups share, worked out once per search (vx_cost_search). */
typedef struct {
    const tile_pre *tiles;
    int plain, conv_in_place, n0_max;
    double b_k;
} group_setup;

/* Work out the groups of grid gi (grids[gi], not in the table yet): its
 * reads from home, a plain problem's mode terms, and each group's floor;
 * merged into the table where the ids put them, but for those at or above
 * beat (the plans found beat every plan in them). */
static void expand_grid(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, const group_setup *S,
                        grid_pre *P, int gi, double beat, group_table *t)
{
    const vx_l2_cand G = c->l2[P->g];
    const double e = d->elem_bytes;
    /* an in-place plan, or one reading B's panels packed before the
     * call (b_load_ns), overlaps all but the stalled share of B's */
    const double share = mode_ok(p, VX_LOAD_NONE) || p->b_prepacked ? inplace_stall(d, p) : 1.0;
    P->a_row_read = S->conv_in_place ? 0.0 : e * (double)p->k * P->x.a_home;
    P->b_row_read = share * e * S->b_k * P->x.b_home;
    if (S->plain)
        modes_floor(d, p, S->n0_max, P);
    P->expanded = 1;
    /* the groups of later grids move up by n0 while this one's are
     * written, then back down to follow them (all the table holds: n2 x n0) */
    int at = 0;
    while (at < t->n && t->ids[at] >> 16 < gi)
        at++;
    const int tail = t->n - at;
    if (tail > 0) {
        memmove(t->lbs + at + c->n0, t->lbs + at, sizeof *t->lbs * (size_t)tail);
        memmove(t->ids + at + c->n0, t->ids + at, sizeof *t->ids * (size_t)tail);
    }
    int w = at;
    for (int i = 0; i < c->n0; i++) {
        const tile_pre *T = &S->tiles[i];
        if (G.tm > T->R || G.tn > T->C)
            continue;
        int64_t *cell = &t->cells[2 * ((size_t)gi * (size_t)c->n0 + (size_t)i)];
        cell[0] = cell_rows(T, G);
        cell[1] = cell_cols(T, G);
        const double lb = group_floor(T, P, cell[0], cell[1], p, S->plain);
        t->lbs[w] = lb;
        t->ids[w] = gi << 16 | i; /* n0 is a few dozen at most */
        w += lb < beat;
    }
    if (tail > 0) {
        memmove(t->lbs + w, t->lbs + at + c->n0, sizeof *t->lbs * (size_t)tail);
        memmove(t->ids + w, t->ids + at + c->n0, sizeof *t->ids * (size_t)tail);
    }
    t->n = w + tail;
}

/* The table's first cheapest group (ties: the table's order) and its
 * floor; the groups at or above beat are dropped first. */
static int table_scan(group_table *t, double beat, double *least)
{
    int kept = 0, q = 0;
    double lb = INFINITY;
    for (int r = 0; r < t->n; r++) { /* branch-free */
        const double v = t->lbs[r];
        const int id = t->ids[r];
        t->lbs[kept] = v;
        t->ids[kept] = id;
        const int less = v < lb;
        lb = less ? v : lb;
        q = less ? kept : q;
        kept += v < beat;
    }
    t->n = kept;
    *least = lb;
    return q;
}

int vx_cost_search(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int max_threads,
                   vx_choice *out, int max, int *considered_out)
{
    enum { STACK_GROUPS = 64, STACK_TILES = 32, STACK_GRIDS = 16 };
    double stack_lb[STACK_GROUPS];
    int stack_id[STACK_GROUPS];
    int64_t stack_cells[2 * STACK_GROUPS];
    tile_pre stack_tiles[STACK_TILES];
    grid_pre stack_grids[STACK_GRIDS];
    int considered = 0, nout = 0, ngrids = 0;
    if (max < 1)
        return 0;
    /* One group per (grid, tile): a few dozen on a desktop, hundreds on a
     * many-core server, where the heap takes them. */
    const int need = c->n2 * c->n0;
    double *lbs = need <= STACK_GROUPS ? stack_lb : malloc(sizeof *lbs * (size_t)need);
    int *ids = need <= STACK_GROUPS ? stack_id : malloc(sizeof *ids * (size_t)need);
    /* each group's cell in tiles, rows and columns, by grid and tile */
    int64_t *cells = need <= STACK_GROUPS ? stack_cells : malloc(sizeof *cells * 2 * (size_t)need);
    tile_pre *tiles = c->n0 <= STACK_TILES ? stack_tiles : malloc(sizeof *tiles * (size_t)c->n0);
    grid_pre *grids = c->n2 <= STACK_GRIDS ? stack_grids : malloc(sizeof *grids * (size_t)c->n2);
    int ok = lbs && ids && cells && tiles && grids;
    if (!ok)
        goto done;
    /* Per tile: row and column tiles of the problem and the least time per
     * row of a column tile over all of k (a convolution's in-place patches
     * skip the taps in the padding: only a_kfrac of k runs there, which
     * conv_rows_time rounds, hence the - 1). */
    double k_least = (double)p->k;
    if (p->a_kfrac > 0 && p->a_kfrac < 1)
        k_least = dmax(1.0, k_least * p->a_kfrac - 1.0);
    /* A plain problem (no tap segments or pixel rows) also takes each
     * tile's time in each load mode it allows, at the full tile's and the
     * last tile's own heights, one k block (mode_bound's compute), and
     * what copying A costs at its height (group_floor): the least rate per
     * row over all modes and heights left 70 % of the groups visited
     * beaten by every mode's bound, whose compute alone was 3 % above the
     * floor. */
    const int plain = p->a_seg <= 0 && p->a_row <= 0, plain_ops = plain_operands(p);
    const int64_t rows_max = a_rows_max(d, p); /* the in-place modes' tallest tile */
    const int64_t packed_rows = packed_a_rows_max(d, p);
    int n0_max = 1;
    double elem_least = INFINITY; /* the least time per element of C per k step, any tile and mode */
    for (int i = 0; i < c->n0; i++) {
        tile_pre *T = &tiles[i];
        tile_of(p, c->l0[i].m, d->fam[c->l0[i].fam].n, T);
        n0_max = T->n0 > n0_max ? T->n0 : n0_max;
        const vx_l0_family *F = &d->fam[c->l0[i].fam];
        /* the floors, worked out at the L1 rates, take the tile's context
         * (its least over the modes where they do not tell them apart;
         * context_scales from the candidates' copy) */
        double *scale = T->scale, least = 1.0;
        scales_of(&c->l0_scale[i], p->k, p->n, plain_ops, scale);
        for (int mode = 0; mode < VX_LOAD_MODES; mode++)
            least = scale[mode] < least ? scale[mode] : least;
        T->row_k = least * (k_least * c->l0_floor[i].p_per_row + c->l0_floor[i].o / (double)T->m0);
        elem_least = dmin(elem_least, least * c->l0_floor[i].p_per_row / (double)T->n0);
        const int *run = c->l1_mode_first + (size_t)i * (VX_LOAD_MODES + 1);
        T->modes = 0;
        for (int mode = 0; mode < VX_LOAD_MODES; mode++)
            T->modes |= (run[mode + 1] > run[mode] && tile_mode_ok(p, T->m0, mode, rows_max)) << mode;
        if (!plain)
            continue;
        const double kd = (double)p->k;
        const int a_in_place = T->m0 <= packed_rows;
        for (int mode = 0; mode < VX_LOAD_MODES; mode++) {
            const vx_rate *r = F->rate[rate_mode(a_in_place, mode)];
            const int ok = T->modes >> mode & 1;
            T->full_k[mode] = ok ? scale[mode] * ((double)r[T->m0 - 1].o + (double)r[T->m0 - 1].p * kd) : INFINITY;
            T->last_k[mode] =
                ok ? scale[mode] * ((double)r[T->r_last - 1].o + (double)r[T->r_last - 1].p * kd) : INFINITY;
        }
        T->copy_a = a_in_place || p->a_prepacked ? 0.0 : copy_a_ns(d, p, T->m0);
    }
    /* Per grid that fits: its fixed cost and the levels its units find A
     * and B in (grid_common), and a bound under every floor of its groups
     * (group_floor): the fixed cost and its largest cell's work (m / tm x
     * n / tn elements of C over k_least) at the least rate per element of
     * any tile. Its groups are worked out (expand_grid) only once the
     * search reaches that bound: the plans found on two units beat one
     * unit's grid over most of the random suite, and one unit's plans the
     * grids that would wake the other for a small call. */
    const int conv_in_place = p->a_seg > 0 && mode_ok(p, VX_LOAD_COPY_B);
    const group_setup setup = { tiles, plain, conv_in_place, n0_max,
                                conv_in_place ? b_copied_k(p, VX_LOAD_COPY_B) : (double)p->k };
    for (int g = 0; g < c->n2; g++) {
        const vx_l2_cand G = c->l2[g];
        if (G.tm * G.tn > max_threads)
            continue;
        grid_pre *P = &grids[ngrids];
        grid_common(d, p, G, packed_rows, &P->x);
        P->g = g;
        P->expanded = 0;
        /* a hair under, so that rounding never lifts it above a floor */
        P->bound = P->x.fixed + (1.0 - 1e-9) * ((double)p->m / G.tm) * ((double)p->n / G.tn) * k_least * elem_least;
        if (considered_out) /* each group is either visited or beaten */
            for (int i = 0; i < c->n0; i++)
                considered += G.tm <= tiles[i].R && G.tn <= tiles[i].C ? c->l1_count[i] : 0;
        ngrids++;
    }
    /* Per kc: its k block for this k and the k blocks each load mode runs
     * (k_blocks; [1]: an in-place A cut into segments) */
    enum { NKC = sizeof d->kc_mult / sizeof d->kc_mult[0] };
    int64_t kbs[NKC], kblocks_of[2][NKC];
    for (int i = 0; i < d->nkc; i++) {
        kbs[i] = vx_cost_kc((int64_t)d->k_step * d->kc_mult[i], p->k);
        kblocks_of[0][i] = k_blocks(p, VX_LOAD_COPY_AB, kbs[i]);
        kblocks_of[1][i] = k_blocks(p, VX_LOAD_NONE, kbs[i]);
    }
    /* Groups in order of their floor (the cheapest unvisited one next):
     * once the cheapest plans found beat a group's floor they beat every
     * later group's too, and the search stops; within a group, a load mode
     * or an L1 candidate whose bound they beat is skipped (branch and
     * bound; the answer is the exhaustive one). Each scan after a visit
     * also drops the groups the plans found so far beat. A grid's groups
     * join the table before the first visit whose floor reaches the grid's
     * bound (the first grid: the least bound), so the visits come in the
     * order a table of every group would give them. */
    group_table table = { lbs, ids, cells, 0 };
    for (;;) {
        const double beat = nout == max ? out[max - 1].ns : INFINITY;
        double lb;
        int q = table_scan(&table, beat, &lb);
        for (;;) { /* the least bound of the grids the next visit must wait for */
            int next = -1;
            for (int gi = 0; gi < ngrids; gi++) {
                const grid_pre *P = &grids[gi];
                if (!P->expanded && P->bound < beat && (table.n == 0 || P->bound <= lb) &&
                    (next < 0 || P->bound < grids[next].bound))
                    next = gi;
            }
            if (next < 0)
                break;
            expand_grid(d, c, p, &setup, &grids[next], next, beat, &table);
            q = table_scan(&table, beat, &lb);
        }
        if (table.n == 0)
            break;
        const int id = ids[q];
        lbs[q] = INFINITY; /* visited: the next scan drops it (keeping the order of ties) */
        const int i = id & 0xFFFF;
        const grid_pre *P = &grids[id >> 16];
        const tile_pre *T = &tiles[i];
        const int64_t *tiles_in = &cells[2 * ((size_t)(id >> 16) * (size_t)c->n0 + (size_t)i)];
        grid_ctx cell = P->x;
        cell_of(T, tiles_in[0], tiles_in[1], p, &cell);
        cell_rates(d, p, T->m0, T->n0, &cell);
        const grid_ctx *x = &cell;
        const vx_l0_cand *t = &c->l0[i];
        const vx_l0_family *F = &d->fam[t->fam];
        const int *run = c->l1_mode_first + (size_t)i * (VX_LOAD_MODES + 1);
        /* The load modes in order of their bounds, the likeliest first. */
        mode_lb bound[VX_LOAD_MODES];
        int modes[VX_LOAD_MODES], nmodes = 0;
        for (int mode = 0; mode < VX_LOAD_MODES; mode++) {
            if (!(T->modes >> mode & 1))
                continue;
            bound[mode] = mode_bound(d, p, F, t->m, mode, x, T->scale[mode]);
            int j = nmodes++;
            while (j > 0 && bound[modes[j - 1]].lb > bound[mode].lb) {
                modes[j] = modes[j - 1];
                j--;
            }
            modes[j] = mode;
        }
        for (int mi = 0; mi < nmodes; mi++) {
            const int mode = modes[mi];
            const mode_lb *B = &bound[mode];
            if (nout == max && B->lb >= out[max - 1].ns)
                break; /* and so are the modes after it */
            const int64_t *kblocks = kblocks_of[mode != VX_LOAD_COPY_AB];
            if (mode != VX_LOAD_COPY_AB) {
                /* Only kc varies. Walked kc descending: kb never rises, so
                 * each kb's first candidate is priced and the rest run alike;
                 * the k blocks never fall, so neither does the bound, and the
                 * first candidate it rules out rules out the rest. */
                int64_t last_kb = -1;
                for (int j = run[mode + 1] - 1; j >= run[mode]; j--) {
                    const vx_l1_cand *b = &c->l1[j];
                    const int64_t kb = kbs[b->kci], KB = kblocks[b->kci];
                    if (kb == last_kb)
                        continue;
                    last_kb = kb;
                    if (nout == max && cand_bound(B, mode, KB, 1) >= out[max - 1].ns)
                        break;
                    const double ns = x->fixed + price_cell(d, p, F, t->m, b, kb, KB, mode_compute(B, KB), x);
                    insert(out, &nout, max, (vx_choice){ j, P->g, ns });
                }
                continue;
            }
            /* Copying both: one nc per kc, mc varies within (kc ascending).
             * The bound depends on kc and nc only: priced once per kc. Blocks
             * clipped to the cell run alike: each candidate is compared with
             * those since kb last changed (kb never falls as kc grows) and
             * the first of each is priced. */
            priced_key same_kb[MAX_SAME_KB];
            int nsame = 0, kci = -1;
            double kc_bound = 0;
            for (int j = run[mode]; j < run[mode + 1]; j++) {
                const vx_l1_cand *b = &c->l1[j];
                const int64_t kb = kbs[b->kci], KB = kblocks[b->kci];
                if (b->kci != kci) {
                    kci = b->kci;
                    kc_bound = cand_bound(B, mode, KB, cdiv(x->n_c, clip_block(b->nc, x->n_c, F->n)));
                }
                if (nout == max && kc_bound >= out[max - 1].ns)
                    continue;
                const priced_key key = key_of(b, kb, t->m, F->n, x);
                if (nsame > 0 && key.kb != same_kb[0].kb)
                    nsame = 0;
                int dup = 0;
                for (int r = 0; r < nsame; r++)
                    dup |= same_key(same_kb[r], key);
                if (dup)
                    continue;
                if (nsame < MAX_SAME_KB)
                    same_kb[nsame++] = key;
                const double ns = x->fixed + price_cell(d, p, F, t->m, b, kb, KB, mode_compute(B, KB), x);
                insert(out, &nout, max, (vx_choice){ j, P->g, ns });
            }
        }
    }
done:
    if (lbs != stack_lb)
        free(lbs);
    if (ids != stack_id)
        free(ids);
    if (cells != stack_cells)
        free(cells);
    if (tiles != stack_tiles)
        free(tiles);
    if (grids != stack_grids)
        free(grids);
    if (considered_out)
        *considered_out = considered;
    return ok ? nout : 0;
}

/* A probe's problem (M x n x k, n cut to whole tiles of family fam, both
 * operands plain matrices) and its one-unit grid with m-row tiles; 0 when
 * the tile or the problem does not exist. */
static int probe_setup(const vx_device_desc *d, int fam, int m, int64_t M, int64_t n, int64_t k, vx_problem *p,
                       grid_ctx *x)
{
    if (fam < 0 || fam >= d->nfamilies || m < 1 || m > d->fam[fam].m_max || M < 1)
        return 0;
    const int n0 = d->fam[fam].n;
    memset(p, 0, sizeof *p);
    p->m = M;
    p->n = n / n0 * n0;
    p->k = k;
    p->a_in_place_ok = p->b_in_place_ok = 1;
    const vx_l2_cand one = { 1, 1 };
    return p->n >= 1 && grid_setup(d, p, m, n0, one, x);
}

double vx_cost_inplace_stall(const vx_device_desc *d, int fam, int m, int64_t n, int64_t k, double ns)
{
    vx_problem p;
    grid_ctx x;
    if (!(ns > 0) || !probe_setup(d, fam, m, 2 * (int64_t)m, n, k, &p, &x))
        return 1.0;
    const vx_l0_family *F = &d->fam[fam];
    const vx_l1_cand b = { .mode = VX_LOAD_NONE, .kc = (int32_t)p.k };
    const double compute = cell_l0_time(F, VX_LOAD_NONE, m, &x, p.k, 1, &p);
    vx_device_desc dd = *d;
    dd.inplace_overlap = 1.0;
    const double overlapped = price_cell(&dd, &p, F, m, &b, p.k, 1, compute, &x);
    dd.inplace_overlap = 0.0;
    const double waited = price_cell(&dd, &p, F, m, &b, p.k, 1, compute, &x);
    if (!(waited > overlapped))
        return 1.0;
    const double s = ns / (waited - overlapped);
    return s < 0 ? 0.0 : s > 1 ? 1.0 : s;
}

double vx_cost_packed_scale(const vx_device_desc *d, int fam, int m, int64_t M, int64_t n, int64_t k, double ns)
{
    vx_problem p;
    grid_ctx x;
    if (!(ns > 0) || !probe_setup(d, fam, m, M, n, k, &p, &x))
        return 1.0;
    const vx_l0_family *F = &d->fam[fam];
    const vx_l1_cand b = { .mode = VX_LOAD_COPY_AB, .kc = (int32_t)k, .mc = (int32_t)((M + m - 1) / m * m),
                           .nc = (int32_t)p.n };
    const double compute = cell_l0_time(F, VX_LOAD_COPY_AB, m, &x, p.k, 1, &p);
    vx_device_desc dd = *d;
    dd.packed_extra = 0;
    const double priced = price_cell(&dd, &p, F, m, &b, p.k, 1, compute, &x) - dd.mode_ns[VX_LOAD_COPY_AB];
    if (!(priced > compute))
        return 1.0;
    const double s = (ns - compute) / (priced - compute);
    return s < 1 ? 1.0 : s > 4 ? 4.0 : s;
}
