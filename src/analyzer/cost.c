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

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

int64_t vx_cost_kc(int64_t kc, int64_t k)
{
    const int64_t blocks = cdiv(k, kc);
    const int64_t kb = (cdiv(k, blocks) + 7) & ~(int64_t)7;
    return kb < k ? kb : k;
}

/* The first memory level that holds `bytes` (the last one holds anything). */
static int level_for(const vx_device_desc *d, double bytes)
{
    int i = 0;
    while (i < d->nmem - 1 && bytes > (double)d->mem[i].bytes)
        i++;
    return i;
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
    const double len = (double)(p->m == 1 ? p->n : p->m);
    const double bytes = (double)d->elem_bytes * len * (double)p->k;
    /* Each unit streams its share from the level that holds it. */
    const double bw = bw_for(d, bytes / threads, threads) * threads;
    return d->call_ns + (threads > 1 ? d->parallel_ns[p->units_warm ? 1 : 0] : 0.0) + bytes / bw;
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

static double copy_b_ns(const vx_device_desc *d, const vx_problem *p)
{
    return d->copy_ns[1][p->b_trans] + (p->b_run > 0 ? d->gather_run_ns / (double)p->b_run : 0.0);
}

/* ns per element of A copied into its buffer. From within the first two
 * levels the copy runs at the slower of its in-cache rate and the read; from
 * L3 or DRAM it pays both: A is copied through register transposes whose
 * loads do not overlap the far reads (232965x16x16 on 2 Zen cores: packed
 * 3.4 ms against 2.4 predicted with the slower of the two, A in place
 * 2.5 ms; NOTES.md). B's copies are plain row copies and keep the max. */
static double copy_a_elem_ns(const vx_device_desc *d, const vx_problem *p, int m0, double bw_home, int far)
{
    const double rate = copy_a_ns(d, p, m0), read = d->elem_bytes / bw_home;
    return far ? rate + read : dmax(rate, read);
}

/* Per-(grid, tile) quantities every L1 candidate under it shares. */
typedef struct {
    int64_t m_c, n_c;   /* the largest cell */
    int64_t cols;       /* its column tiles */
    int64_t full, rem;  /* its full row tiles and the rows of the short last one */
    int t;              /* units running cells */
    double fixed;       /* call + parallel region */
    double bw_a_home, bw_b_home;
    int a_far;          /* A's home is beyond the second level (L3 or DRAM) */
    double bw_top;      /* the fastest level's bandwidth (the bounds' re-reads) */
} grid_ctx;

/* cdiv through a double division (exact below 2^53, corrected upward):
 * faster than an integer one and without the branches of special cases. */
static inline int64_t cdiv_fp(int64_t a, int64_t b)
{
    const int64_t q = (int64_t)((double)a / (double)b);
    return q + (q * b < a);
}

/* What depends on the grid's unit count only: the fixed cost and the
 * levels the operands live in. */
static void grid_common(const vx_device_desc *d, const vx_problem *p, int t, grid_ctx *x)
{
    const double e = d->elem_bytes;
    x->t = t;
    x->fixed = d->call_ns + (t > 1 ? d->parallel_ns[p->units_warm ? 1 : 0] : 0.0);
    const int a_level = level_for(d, e * (double)p->m * (double)p->k);
    x->bw_a_home = bw_at(d, a_level, t);
    x->bw_b_home = bw_for(d, e * (double)p->k * (double)p->n, t);
    /* a plain matrix (a convolution's gathered patches are priced per run) */
    x->a_far = a_level >= 2 && p->a_run <= 0 && p->a_seg <= 0;
    x->bw_top = d->bw_shared;
    for (int i = 0; i < d->nmem; i++)
        x->bw_top = dmax(x->bw_top, d->mem[i].bw);
}

/* The cell of grid g over R x C tiles of m0 x n0; 0 when the grid has more
 * cells than tiles. grid_common must have filled x for g's unit count. */
static int cell_setup(const vx_problem *p, int m0, int n0, int64_t R, int64_t C, vx_l2_cand g, grid_ctx *x)
{
    if (g.tm > R || g.tn > C)
        return 0;
    x->m_c = cdiv_fp(R, g.tm) * m0;
    x->n_c = cdiv_fp(C, g.tn) * n0;
    if (x->m_c > p->m)
        x->m_c = p->m;
    if (x->n_c > p->n)
        x->n_c = p->n;
    x->cols = cdiv_fp(x->n_c, n0);
    x->full = x->m_c / m0;
    x->rem = x->m_c - x->full * m0;
    return 1;
}

static int grid_setup(const vx_device_desc *d, const vx_problem *p, int m0, int n0, vx_l2_cand g, grid_ctx *x)
{
    grid_common(d, p, g.tm * g.tn, x);
    return cell_setup(p, m0, n0, cdiv(p->m, m0), cdiv(p->n, n0), g, x);
}

/* L0 time of `cols` column tiles, each `full` calls of m0 rows and, when
 * rem > 0, one of rem rows, over all of k in kblocks k blocks: every call
 * pays o once per k block and p per k step. The short tile is selected,
 * not branched on: the search meets every kind of cell in turn. */
static inline double tiles_time(const vx_rate *r, int m0, int64_t full, int64_t rem, int64_t cols, int64_t k,
                                int64_t kblocks)
{
    double t = (double)full * ((double)kblocks * r[m0 - 1].o + (double)r[m0 - 1].p * (double)k);
    const int64_t last = rem > 0 ? rem : 1;
    const double short_tile = (double)kblocks * r[last - 1].o + (double)r[last - 1].p * (double)k;
    t += rem > 0 ? short_tile : 0.0;
    return t * (double)cols;
}

/* L0 time to cover m_c rows x cols column tiles (the exact edge tile for
 * the last m_c % m0 rows, no padding). */
static double l0_time(const vx_l0_family *F, int mode, int m0, int64_t m_c, int64_t cols, int64_t k,
                      int64_t kblocks)
{
    return tiles_time(F->rate[mode], m0, m_c / m0, m_c % m0, cols, k, kblocks);
}

/* l0_time over the whole cell of x (its row tiles worked out once). */
static inline double cell_l0_time(const vx_l0_family *F, int mode, int m0, const grid_ctx *x, int64_t k,
                                  int64_t kblocks)
{
    return tiles_time(F->rate[mode], m0, x->full, x->rem, x->cols, k, kblocks);
}

/* Rows of B a load mode copies: all k, except that a convolution run with
 * its patches in place packs only the filter taps some pixel uses. */
static double b_copied_k(const vx_problem *p, int mode)
{
    const int conv_in_place = mode == VX_LOAD_COPY_B && p->a_seg > 0;
    return (double)p->k * (conv_in_place && p->b_kfrac > 0 && p->b_kfrac < 1 ? p->b_kfrac : 1.0);
}

/* L0 time of a convolution's in-place patches: the taps that fall into the
 * padding are skipped (a_kfrac of k is computed), pixel tiles never cross an
 * output row, and the a_edge pixels of each row whose taps reach into the
 * padding run as tiles of their own (one pixel each, mostly), so a row of
 * a_row pixels costs its interior tiles plus a_edge one-row tiles. */
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
    const double row = (p->a_row > edge ? l0_time(F, mode, m0, p->a_row - edge, cols, k, kblocks) : 0.0) +
                       (double)edge * l0_time(F, mode, 1, 1, cols, k, kblocks);
    return row * (double)m_c / (double)p->a_row;
}

/* The cell's time for L1 candidate b, whose k block for this k is kb
 * (vx_cost_kc). */
static double price_cell(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int m0,
                         const vx_l1_cand *b, int64_t kb, const grid_ctx *x)
{
    const double e = d->elem_bytes;
    const int n0 = F->n;
    const int64_t m_c = x->m_c, n_c = x->n_c, k = p->k;
    /* An in-place A cut into segments (a convolution's taps) needs one L0
     * call per k block of every segment. */
    const int64_t KB = b->mode != VX_LOAD_COPY_AB && p->a_seg > 0 ? cdiv(k, p->a_seg) * cdiv(p->a_seg, kb)
                                                                : cdiv(k, kb);
    const int64_t cols = x->cols;
    const double compute = cell_l0_time(F, b->mode, m0, x, k, KB);
    const double a_cell = e * (double)m_c * (double)k, b_cell = e * (double)n_c * (double)k;
    const double copy_b = d->mode_ns[b->mode] +
                          (double)n_c * b_copied_k(p, b->mode) * dmax(copy_b_ns(d, p), e / x->bw_b_home);

    if (b->mode == VX_LOAD_COPY_AB) {
        const int64_t mc = b->mc < m_c ? b->mc : cdiv(m_c, m0) * m0;
        const int64_t nc = b->nc < n_c ? b->nc : cdiv(n_c, n0) * n0;
        const int64_t MB = cdiv(m_c, mc), NB = cdiv(n_c, nc);
        const double copy_a = (double)NB * (double)m_c * (double)k *
                              copy_a_elem_ns(d, p, m0, x->bw_a_home, x->a_far);
        /* A block read once per column tile from its buffer; the B block once
         * per row block from wherever it fits. */
        const double bw_abuf = d->mem[d->buffer_level_a].bw;
        const double bw_bbuf = bw_for(d, e * (double)kb * (double)nc, x->t);
        const double streams = a_cell * (double)cols / bw_abuf + b_cell * (double)MB / bw_bbuf;
        return copy_a + copy_b + dmax(compute, streams);
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
         * run and column tile. Such reads stream (the prefetchers follow
         * them) and overlap the kernels, like a copied operand's. */
        const double a_first = e * (double)m_c * (double)p->a_seg / x->bw_a_home;
        const double a_again = a_cell * (double)cols / d->mem[1].bw;
        return copy_b + dmax(conv_rows_time(F, b->mode, m0, m_c, cols, k, KB, p), a_first + a_again);
    }
    double bw_a = bw_for(d, e * (double)m_c * (double)kb, x->t);
    if (bw_a < d->mem[1].bw)
        bw_a = dmin(bw_a, d->bw_strided);
    const double a_stream = a_cell / x->bw_a_home + a_cell * (double)(cols - 1) / bw_a;
    /* B's rows lie ldb >= n elements apart. A page or more apart (and a k
     * block of them spanning more than the first level), every row is a new
     * page for the prefetchers and the pieces alias in the caches' sets;
     * closer rows share pages and stream like contiguous data (oracle:
     * 1x956x1171 read B in place at 37 GB/s per core, 3.7 KiB rows). */
    const int b_strided = e * (double)p->n >= (double)d->page_bytes &&
                          e * (double)kb * (double)p->n > (double)d->mem[0].bytes;
    if (b->mode == VX_LOAD_COPY_B) {
        /* one n0-wide panel at a time: short pieces of far-apart rows */
        const int from_last = x->bw_b_home <= d->mem[d->nmem - 1].bw;
        const double narrow = b_strided ? (double)n_c * (double)k * d->copy_b_narrow_ns[from_last] : 0;
        return dmax(copy_b, d->mode_ns[b->mode] + narrow) + compute + a_stream;
    }
    /* B in place: the first row tile brings each kb x n0 panel in from B's
     * home (a k block's rows walked panel by panel), the others re-read it
     * from the level that holds the panel; far-apart rows run at the
     * measured strided rates (first pass, re-read). */
    const int64_t rows = cdiv(m_c, m0);
    double bw_panel = bw_for(d, e * (double)kb * n0, x->t), bw_first = x->bw_b_home;
    if (b_strided) {
        bw_panel = dmin(bw_panel, d->bw_strided);
        bw_first = dmin(bw_first, d->bw_stride_stream);
    }
    const double b_stream = b_cell / bw_first + b_cell * (double)(rows - 1) / bw_panel;
    return d->mode_ns[VX_LOAD_NONE] + compute + a_stream + b_stream;
}

/* The load modes this problem's operands allow. */
static int mode_ok(const vx_problem *p, int mode)
{
    if (mode == VX_LOAD_COPY_AB)
        return 1;
    return p->a_in_place_ok && (mode == VX_LOAD_COPY_B || p->b_in_place_ok);
}

double vx_cost_price(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int l1, int l2)
{
    const vx_l1_cand *b = &c->l1[l1];
    const vx_l0_cand *t = &c->l0[b->l0];
    const vx_l0_family *F = &d->fam[t->fam];
    grid_ctx x;
    if (!mode_ok(p, b->mode) || !grid_setup(d, p, t->m, F->n, c->l2[l2], &x))
        return -1;
    return x.fixed + price_cell(d, p, F, t->m, b, vx_cost_kc(b->kc, p->k), &x);
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

/* A (grid, L0 tile) pair and the least any plan under it can cost
 * (group_floor). The load modes' own bounds (mode_bound) are worked out
 * only for the groups the search reaches. */
typedef struct {
    double lb;
    int g, l0;
    grid_ctx x;
} group;

/* The least any plan of a group can cost, whatever its load mode and
 * blocks: its L0 calls at the tile's least rates (candidates.c), with one
 * k block, plus the reads from home that every mode pays on top of them
 * (price_cell: copies from home, or in-place first passes that do not
 * overlap the kernels; a convolution's in-place patches do overlap, so
 * there only B's copy counts). */
static double group_floor(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int l0,
                          const grid_ctx *x)
{
    const vx_l0_floor f = c->l0_floor[l0];
    /* A convolution's in-place patches skip the taps in the padding: only
     * a_kfrac of k runs there (conv_rows_time rounds that, hence the - 1). */
    double k = (double)p->k;
    if (p->a_kfrac > 0 && p->a_kfrac < 1)
        k = dmax(1.0, k * p->a_kfrac - 1.0);
    /* at least m_c / m0 calls per column tile (a convolution's rows of
     * pixels may cut the cell into more) */
    const double tiles = (double)x->cols * (double)x->m_c / (double)c->l0[l0].m;
    const double compute = (double)x->cols * (double)x->m_c * k * f.p_per_row + tiles * f.o;
    const double e = d->elem_bytes;
    const int conv_in_place = p->a_seg > 0 && mode_ok(p, VX_LOAD_COPY_B);
    const double b_read = e * (double)x->n_c * (conv_in_place ? b_copied_k(p, VX_LOAD_COPY_B) : (double)p->k) /
                          x->bw_b_home;
    const double a_read = conv_in_place ? 0.0 : e * (double)x->m_c * (double)p->k / x->bw_a_home;
    return x->fixed + compute + a_read + b_read;
}

/* The least a plan in this group and load mode can cost, whatever its
 * blocks: price_cell's terms with one k block (compute's least), each block
 * count at 1 and every re-read from the fastest level. */
static double mode_bound(const vx_device_desc *d, const vx_problem *p, const vx_l0_family *F, int m0, int mode,
                         const grid_ctx *x)
{
    const double e = d->elem_bytes;
    const double bw_top = x->bw_top;
    const int64_t cols = x->cols;
    const double a_cell = e * (double)x->m_c * (double)p->k, b_cell = e * (double)x->n_c * (double)p->k;
    const double compute =
        cell_l0_time(F, mode, m0, x, p->k, mode != VX_LOAD_COPY_AB && p->a_seg > 0 ? cdiv(p->k, p->a_seg) : 1);
    double lb = x->fixed + d->mode_ns[mode];
    if (mode != VX_LOAD_NONE)
        lb += (double)x->n_c * b_copied_k(p, mode) * dmax(copy_b_ns(d, p), e / x->bw_b_home);
    if (mode == VX_LOAD_COPY_AB) {
        lb += (double)x->m_c * (double)p->k * copy_a_elem_ns(d, p, m0, x->bw_a_home, x->a_far);
        const double streams = a_cell * (double)cols / d->mem[d->buffer_level_a].bw + b_cell / bw_top;
        return lb + dmax(compute, streams);
    }
    if (p->a_seg > 0 && mode == VX_LOAD_COPY_B) /* price_cell's convolution branch: streams overlap */
        return lb + dmin(compute, conv_rows_time(F, mode, m0, x->m_c, cols, p->k, cdiv(p->k, p->a_seg), p));
    lb += compute + a_cell / x->bw_a_home + a_cell * (double)(cols - 1) / bw_top;
    if (mode == VX_LOAD_NONE)
        lb += b_cell / x->bw_b_home + b_cell * (double)(x->full + (x->rem > 0) - 1) / bw_top;
    return lb;
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
        key.mc = b->mc < x->m_c ? b->mc : cdiv(x->m_c, m0) * m0;
        key.nc = b->nc < x->n_c ? b->nc : cdiv(x->n_c, n0) * n0;
    }
    return key;
}

static int same_key(priced_key a, priced_key b)
{
    return a.kb == b.kb && a.mode == b.mode && a.mc == b.mc && a.nc == b.nc;
}

int vx_cost_search(const vx_device_desc *d, const vx_candidates *c, const vx_problem *p, int max_threads,
                   vx_choice *out, int max, int *considered_out)
{
    enum { STACK_GROUPS = 64, STACK_TILES = 64 };
    group stack_groups[STACK_GROUPS];
    int64_t stack_rc[2 * STACK_TILES];
    int considered = 0, nout = 0, ng = 0;
    if (max < 1)
        return 0;
    /* One group per (grid, tile): a few dozen on a desktop, hundreds on a
     * many-core server, where the heap takes them. */
    const int need = c->n2 * c->n0;
    group *gs = need <= STACK_GROUPS ? stack_groups : malloc(sizeof *gs * (size_t)need);
    int64_t *rc = c->n0 <= STACK_TILES ? stack_rc : malloc(sizeof *rc * 2 * (size_t)c->n0);
    if (!gs || !rc) {
        if (gs != stack_groups)
            free(gs);
        if (rc != stack_rc)
            free(rc);
        return 0;
    }
    /* Row and column tiles of the problem per L0 tile, and the k block of
     * each kc (candidates refer to theirs by index). */
    for (int i = 0; i < c->n0; i++) {
        rc[2 * i] = cdiv(p->m, c->l0[i].m);
        rc[2 * i + 1] = cdiv(p->n, d->fam[c->l0[i].fam].n);
    }
    int64_t kbs[sizeof d->kc_mult / sizeof d->kc_mult[0]];
    for (int i = 0; i < d->nkc; i++)
        kbs[i] = vx_cost_kc((int64_t)d->k_step * d->kc_mult[i], p->k);
    for (int g = 0; g < c->n2; g++) {
        const vx_l2_cand G = c->l2[g];
        if (G.tm * G.tn > max_threads)
            continue;
        grid_ctx common;
        grid_common(d, p, G.tm * G.tn, &common);
        for (int i = 0; i < c->n0; i++) {
            group *v = &gs[ng];
            v->x = common;
            if (!cell_setup(p, c->l0[i].m, d->fam[c->l0[i].fam].n, rc[2 * i], rc[2 * i + 1], G, &v->x))
                continue;
            v->g = g;
            v->l0 = i;
            v->lb = group_floor(d, c, p, i, &v->x);
            ng++;
        }
    }
    /* Groups in order of their floor (the cheapest unvisited one next):
     * once the cheapest plans found beat a group's floor they beat every
     * later group's too, and the search stops; within a group, a load mode
     * whose bound they beat is skipped (branch and bound; the answer is the
     * exhaustive one). */
    for (int visited = 0; visited < ng; visited++) {
        int q = 0;
        double lb = INFINITY;
        for (int r = 0; r < ng; r++) { /* branch-free scan: ties keep the tables' order */
            const int less = gs[r].lb < lb;
            lb = less ? gs[r].lb : lb;
            q = less ? r : q;
        }
        if (nout == max && lb >= out[max - 1].ns) {
            for (int r = 0; r < ng; r++)
                considered += gs[r].lb < INFINITY ? c->l1_count[gs[r].l0] : 0;
            break;
        }
        group *G = &gs[q];
        G->lb = INFINITY; /* visited */
        const int i = G->l0;
        considered += c->l1_count[i];
        const vx_l0_cand *t = &c->l0[i];
        const vx_l0_family *F = &d->fam[t->fam];
        const grid_ctx *x = &G->x;
        const int *run = c->l1_mode_first + (size_t)i * (VX_LOAD_MODES + 1);
        /* The load modes in order of their bounds, the likeliest first. */
        double bound[VX_LOAD_MODES];
        int modes[VX_LOAD_MODES], nmodes = 0;
        for (int mode = 0; mode < VX_LOAD_MODES; mode++) {
            if (run[mode + 1] == run[mode] || !mode_ok(p, mode))
                continue;
            bound[mode] = mode_bound(d, p, F, t->m, mode, x);
            int j = nmodes++;
            while (j > 0 && bound[modes[j - 1]] > bound[mode]) {
                modes[j] = modes[j - 1];
                j--;
            }
            modes[j] = mode;
        }
        for (int mi = 0; mi < nmodes; mi++) {
            const int mode = modes[mi];
            if (nout == max && bound[mode] >= out[max - 1].ns)
                break; /* and so are the modes after it */
            /* Candidates that run alike for this shape price alike: kc
             * values that give k the same blocks, copied blocks clipped to
             * the cell. kb never falls as kc grows and a mode's candidates
             * run kc ascending, so each is compared with those since kb last
             * changed (were they out of order, some would only be priced
             * twice); the first of each is priced. */
            priced_key same_kb[MAX_SAME_KB];
            int nsame = 0;
            for (int j = run[mode]; j < run[mode + 1]; j++) {
                const vx_l1_cand *b = &c->l1[j];
                const priced_key key = key_of(b, kbs[b->kci], t->m, F->n, x);
                if (nsame > 0 && key.kb != same_kb[0].kb)
                    nsame = 0;
                int dup = 0;
                for (int r = 0; r < nsame; r++)
                    dup |= same_key(same_kb[r], key);
                if (dup)
                    continue;
                if (nsame < MAX_SAME_KB)
                    same_kb[nsame++] = key;
                const double ns = x->fixed + price_cell(d, p, F, t->m, b, key.kb, x);
                insert(out, &nout, max, (vx_choice){ j, G->g, ns });
                if (nout == max && bound[mode] >= out[max - 1].ns)
                    break;
            }
        }
    }
    if (gs != stack_groups)
        free(gs);
    if (rc != stack_rc)
        free(rc);
    if (considered_out)
        *considered_out = considered;
    return nout;
}
