/* NHWC convolution with the patches read in place (the L1 "no load" mode
 * for A): for one filter tap (r, s), the patch rows of consecutive output
 * pixels are input pixels sw*c floats apart with their channels contiguous,
 * which is exactly a strided A the micro-kernels read (a_rs = sw*c,
 * a_cs = 1). The reduction runs tap by tap, kc channels at a time, into the
 * same C tile. Pixel tiles never straddle a point where a tap enters or
 * leaves the padding, so every pixel of a tile has the same valid taps:
 * padding is skipped, never read, and no patch is ever copied. Each cell
 * packs the filter panels it uses into its thread's buffer (run_cell). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "cpu/conv.h"
#include "cpu/cpu_levels.h"
#include "cpu/pack.h"
#include "cpu/threadpool.h"
#include "cpu/ukernel.h"
#include "status.h"

enum { SLOT_FILTER = 1, MAX_S = VX_CONV_INPLACE_MAX_S };

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
/* ceil(a / b) for a >= 0, b >= 1, without forming a + b (b may be INT64_MAX) */
static inline int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

typedef struct {
    const vx_conv2d_params *p;
    const vx_conv_view *v;
    const vx_gemm_plan *plan;
    const vx_ukernel_fn *kern;   /* strided A, packed B: kern[m - 1] */
    const vx_ukernel_seg_fn *seg; /* the same in segments: seg[m - 1] */
    const vx_rate *rate;         /* the family's tuned L0 rates, A in place: rate[m - 1] */
    int64_t seg_max_bytes;       /* most packed filter one segmented call reads (segment) */
    double l2_bytes;             /* a unit's L2: what a cell re-reads beyond half of it is far (run_cell) */
    const float *in, *bias;
    float *out;
    const float *filter;         /* KRSC, or KCRS where filter_kcrs */
    int filter_kcrs;
    const float *packed;         /* the filter's panels packed before the call, or NULL */
    float *ws;                   /* packed filter panels, one slice per thread */
    size_t ws_panel;             /* floats per thread's packed panels (64-byte multiple) */
    int64_t panels, red;         /* column panels per group, r*s*c/groups */
    int c_far;                   /* the kernels' c_far (ukernel.h): vx_gemm_c_far */
    atomic_llong next;
} job;

/* Pack column panel q of group g's filter (KRSC: B[(r, s, c')][k'] =
 * filter[k' * red + ...], a transposed B) into out: red x nr floats, only
 * the taps some pixel reads (the rest meet padding only and are never
 * read). Each cell packs a panel right before its pixels use it, so the
 * panel is still in L2 while they do. */
static void pack_panel(const job *J, int64_t g, int64_t q, float *out)
{
    const int nr = J->plan->nr;
    const int64_t k0 = q * nr, nb = min64(nr, J->v->kg - k0);
    const float *src = J->filter + (g * J->v->kg + k0) * J->red;
    if (J->filter_kcrs) { /* the span from the first used tap to the last */
        const vx_conv_view *v = J->v;
        if (v->r0 < v->r1 && v->s0 < v->s1)
            vx_pack_b_kcrs(v->cg, J->p->r * J->p->s, v->r0 * J->p->s + v->s0,
                           (v->r1 - 1 - v->r0) * J->p->s + v->s1 - v->s0, nb, src, J->red, nr, out);
        return;
    }
    if (J->v->r1 - J->v->r0 == J->p->r && J->v->s1 - J->v->s0 == J->p->s) {
        vx_pack_b(J->red, nb, src, 1, J->red, nr, out);
        return;
    }
    const int64_t cg = J->v->cg;
    for (int64_t r = J->v->r0; r < J->v->r1; r++) {
        const int64_t off = (r * J->p->s + J->v->s0) * cg;
        vx_pack_b((J->v->s1 - J->v->s0) * cg, nb, src + off, 1, J->red, nr, out + off * nr);
    }
}


/* The runs of the reduction the pixels [x0, x1) of output row oh read (all
 * of them the same valid taps): one per valid tap (r, s), cg channels long;
 * or, where the channels of one input pixel are all of the group's
 * (groups == 1) and the filter row's columns are adjacent (dilation_w ==
 * 1), one per filter row over its valid columns (always adjacent), up to
 * s*c floats long: the input under them is contiguous, and so is that part
 * of the packed filter (order r, s, c). Longer runs mean fewer, longer L0
 * calls (a 3-channel stem: 21 instead of 3). Returns the number of runs. */
static int tap_runs(const job *J, int64_t oh, int64_t x0, int64_t x1, const int64_t *s_lo, const int64_t *s_hi,
                    int64_t *run_r, int64_t *run_s, int64_t *run_len)
{
    const vx_conv2d_params *p = J->p;
    const int64_t cg = J->v->cg, C = p->c;
    int nrun = 0;
    const int merge = p->dilation_w == 1 && cg == C;
    for (int64_t r = 0; r < p->r; r++) {
        const int64_t ih = oh * p->stride_h - p->pad_h + r * p->dilation_h;
        if (ih < 0 || ih >= p->h)
            continue;
        if (merge) { /* the valid columns of a filter row are adjacent: one run */
            int64_t sa = -1, sb = -1;
            for (int64_t s = 0; s < p->s; s++)
                if (s_lo[s] <= x0 && x1 <= s_hi[s]) {
                    sa = sa < 0 ? s : sa;
                    sb = s;
                }
            if (sa >= 0) {
                run_r[nrun] = r;
                run_s[nrun] = sa;
                run_len[nrun++] = (sb - sa + 1) * cg;
            }
            continue;
        }
        for (int64_t s = 0; s < p->s; s++)
            if (s_lo[s] <= x0 && x1 <= s_hi[s]) {
                run_r[nrun] = r;
                run_s[nrun] = s;
                run_len[nrun++] = cg;
            }
    }
    return nrun;
}

/* band_rows' answers for whole rows, by (first row, end row, images): a
 * cell asks the same for every image and panel it runs. */
enum { BAND_MEMO = 64 };
typedef struct {
    int64_t ya[BAND_MEMO], yb[BAND_MEMO], imgs[BAND_MEMO];
    signed char band[BAND_MEMO];
} band_memo;

/* Where each filter tap meets the input: output columns [s_lo[s], s_hi[s])
 * read tap column s inside the input, output rows [r_lo[r], r_hi[r]) tap
 * row r. The same for every cell of a call; memo is the cell's own. */
typedef struct {
    int64_t s_lo[MAX_S], s_hi[MAX_S];
    int64_t r_lo[VX_CONV_INPLACE_MAX_TAPS], r_hi[VX_CONV_INPLACE_MAX_TAPS];
    band_memo *memo;
} tap_bounds;

/* The filter rows [*ra, *rb) that output row oh reads inside the input
 * (contiguous: the input row a tap row reads grows with it); empty: *ra ==
 * *rb. */
static void valid_rows(const tap_bounds *tb, int64_t R, int64_t oh, int64_t *ra, int64_t *rb)
{
    int64_t r = 0;
    while (r < R && !(oh >= tb->r_lo[r] && oh < tb->r_hi[r]))
        r++;
    *ra = r;
    while (r < R && oh >= tb->r_lo[r] && oh < tb->r_hi[r])
        r++;
    *rb = r;
}

/* The cuts of [a, b) (output columns or rows) into pieces whose positions
 * all read the same valid taps, given where each of the n taps is valid
 * ([lo[t], hi[t])): cuts[0] = a < ... < cuts[count - 1] = b (some pieces
 * may be empty: equal cuts). */
static int cuts_of(int64_t n, const int64_t *lo, const int64_t *hi, int64_t a, int64_t b, int64_t *cuts)
{
    int nc = 0;
    cuts[nc++] = a;
    cuts[nc++] = b;
    for (int64_t t = 0; t < n; t++) {
        if (lo[t] > a && lo[t] < b)
            cuts[nc++] = lo[t];
        if (hi[t] > a && hi[t] < b)
            cuts[nc++] = hi[t];
    }
    for (int i = 1; i < nc; i++) /* insertion sort: a few dozen at most */
        for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            const int64_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    return nc;
}

/* count output pixels with the same valid taps, each a_step input floats
 * and c_step output floats after the one before, starting at pixel x of
 * output row oh of image im, one column panel q: tiles of up to mr of
 * them (a strided A and a strided C). Taps outermost, pixel tiles inside:
 * one tap's k x nr slice of the packed filter, the pixels' C and the input
 * under them stay in L1 while every tile passes over them. The first valid
 * tap's first k block writes C (beta = 0), the last one's last block
 * carries the epilogue. Runs along a row (segment), or stacks the same
 * pixel of consecutive output rows (run_block) or images (run_images). */
static void stack_pixels(const job *J, int64_t g, int64_t im, int64_t oh, int64_t x, int64_t count, int64_t a_step,
                         int64_t c_step, int64_t q, const float *bp, int nrun, const int64_t *run_r,
                         const int64_t *run_s, const int64_t *run_len)
{
    const vx_conv2d_params *p = J->p;
    const int64_t cg = J->v->cg, C = p->c, K = p->k, Q = J->v->q;
    const int mr = J->plan->mr, nr = J->plan->nr;
    const int64_t kc = J->plan->kc > 0 ? J->plan->kc : cg;
    const int64_t k0 = q * nr, nn = min64(nr, J->v->kg - k0);
    vx_epilogue ep = { NULL, J->bias ? J->bias + g * J->v->kg + k0 : NULL, p->activation == VX_ACT_RELU };
    const vx_epilogue *epp = ep.bias_col || ep.relu ? &ep : NULL;
    float *c = J->out + ((im * J->v->p + oh) * Q + x) * K + g * J->v->kg + k0;
    if (nrun == 0) { /* every tap in the padding: act(bias) */
        for (int64_t i = 0; i < count; i += mr) {
            const int mm = (int)min64(mr, count - i);
            J->kern[mm - 1](0, NULL, 0, 0, bp, nr, c + i * c_step, c_step, nn, 1.0f, 0.0f, epp, J->c_far);
        }
        return;
    }
    /* Filter rows merged into runs (one group, dilation 1) are equally
     * long, start at the same filter column and lie in consecutive input
     * rows, dilation_h input rows apart: a constant distance in the input
     * and in the packed filter. With few channels such runs are short
     * (k = 5 for one channel and a 5x5 filter), and a call per run loaded
     * and stored its C tile every 5 steps, running at about half the FMA
     * peak; one segmented call per pixel tile takes them all, while all
     * the runs' packed filter stays in L2 (seg_max_bytes). */
    const int merge = p->dilation_w == 1 && cg == C;
    if (merge && nrun > 1 && run_len[0] * nrun * nr * (int64_t)sizeof(float) <= J->seg_max_bytes) {
        const int64_t ih = oh * p->stride_h - p->pad_h + run_r[0] * p->dilation_h;
        const int64_t iw = x * p->stride_w - p->pad_w + run_s[0] * p->dilation_w;
        const float *a = J->in + ((im * p->h + ih) * p->w + iw) * C + g * cg;
        const float *b = bp + (run_r[0] * p->s + run_s[0]) * cg * nr;
        for (int64_t i = 0; i < count; i += mr) {
            const int mm = (int)min64(mr, count - i);
            J->seg[mm - 1](run_len[0] * nrun, a + i * a_step, mm > 1 ? a_step : 0, 1, b, nr, c + i * c_step, c_step,
                           nn, 1.0f, 0.0f, epp, J->c_far, run_len[0], p->dilation_h * p->w * C, p->s * cg * nr);
        }
        return;
    }
    for (int t = 0; t < nrun; t++) {
        const int64_t r = run_r[t], s = run_s[t], len = run_len[t];
        const int64_t ih = oh * p->stride_h - p->pad_h + r * p->dilation_h;
        const int64_t iw = x * p->stride_w - p->pad_w + s * p->dilation_w;
        const float *a = J->in + ((im * p->h + ih) * p->w + iw) * C + g * cg;
        const float *b = bp + (r * p->s + s) * cg * nr;
        for (int64_t c0 = 0; c0 < len; c0 += kc) {
            const int64_t kb = min64(kc, len - c0);
            const float beta = t == 0 && c0 == 0 ? 0.0f : 1.0f;
            const vx_epilogue *e = t == nrun - 1 && c0 + kb >= len ? epp : NULL;
            for (int64_t i = 0; i < count; i += mr) {
                const int mm = (int)min64(mr, count - i);
                J->kern[mm - 1](kb, a + i * a_step + c0, mm > 1 ? a_step : 0, 1, b + c0 * nr, nr, c + i * c_step,
                                c_step, nn, 1.0f, beta, e, J->c_far);
            }
        }
    }
}

/* One segment [x0, x1) of output row (image, oh), one column panel q:
 * every pixel of it has the same valid taps, the pixels stride_w input
 * columns apart. */
static void segment(const job *J, int64_t g, int64_t im, int64_t oh, int64_t x0, int64_t x1, int64_t q,
                    const float *bp, const int64_t *s_lo, const int64_t *s_hi)
{
    int64_t run_r[VX_CONV_INPLACE_MAX_TAPS], run_s[VX_CONV_INPLACE_MAX_TAPS], run_len[VX_CONV_INPLACE_MAX_TAPS];
    const int nrun = tap_runs(J, oh, x0, x1, s_lo, s_hi, run_r, run_s, run_len);
    stack_pixels(J, g, im, oh, x0, x1 - x0, J->p->stride_w * J->p->c, J->p->k, q, bp, nrun, run_r, run_s, run_len);
}

/* The pixels [x0, x1) of output row oh of image im, each stacked with the
 * same pixel of the count - 1 rows or images after it (a_step input and
 * c_step output floats apart), one column panel q. */
static void stack_piece(const job *J, int64_t g, int64_t im, int64_t oh, int64_t x0, int64_t x1, int64_t count,
                        int64_t a_step, int64_t c_step, int64_t q, const float *bp, const tap_bounds *tb)
{
    int64_t run_r[VX_CONV_INPLACE_MAX_TAPS], run_s[VX_CONV_INPLACE_MAX_TAPS], run_len[VX_CONV_INPLACE_MAX_TAPS];
    const int nrun = tap_runs(J, oh, x0, x1, tb->s_lo, tb->s_hi, run_r, run_s, run_len);
    for (int64_t x = x0; x < x1; x++)
        stack_pixels(J, g, im, oh, x, count, a_step, c_step, q, bp, nrun, run_r, run_s, run_len);
}

/* ---- Band tiles ------------------------------------------------------
 * A map hardly wider than its filter (9x9 with 9x9 filters, pad 4) has as
 * many tap classes as columns: cut into pieces of one class each, every
 * piece is one pixel wide and its tiles one row tall, a third of a full
 * tile's rate. A band tile instead takes up to mr pixels of a row whatever
 * their classes and runs each tap column over just the pixels that read it
 * inside the input (a contiguous part of the tile: validity is monotone
 * along a row), so the work stays exact and the tiles stay tall; only the
 * calls multiply. A tap column reads the same pixels in every valid filter
 * row, so each column (or run of adjacent columns of equal pixels, as in
 * tap_runs) goes over all the valid filter rows in one segmented call
 * where its packed filter stays in L2 (seg_max_bytes), as stack_pixels'
 * merged runs do. */
typedef struct {
    int64_t s, len; /* first tap column, reduction floats per filter row */
    int64_t lo, hi; /* the tile's pixels [lo, hi) that read it */
} band_run;

static int band_force = -1;  /* testing: -1 priced, 0 never, 1 always */
static int order_force = -1; /* testing: -1 by the re-reads, else a VX_CELL_ order */

void vx_conv_inplace_force_order(int mode) { order_force = mode < 0 ? -1 : mode > 2 ? 2 : mode; }

void vx_conv_inplace_force_band(int mode) { band_force = mode < 0 ? -1 : mode > 0; }

/* The valid filter rows [*ra, *rb) of output row oh (valid_rows) and the
 * tap-column runs of the tile [t0, t1) of that row. Returns the number of
 * runs (0: no valid tap). */
static int band_runs(const job *J, int64_t oh, int64_t t0, int64_t t1, const tap_bounds *tb, band_run *runs,
                     int64_t *ra, int64_t *rb)
{
    const vx_conv2d_params *p = J->p;
    const int64_t cg = J->v->cg;
    const int merge = p->dilation_w == 1 && cg == p->c;
    valid_rows(tb, p->r, oh, ra, rb);
    if (*ra >= *rb)
        return 0;
    int n = 0;
    for (int64_t s = 0; s < p->s; s++) {
        const int64_t lo = t0 > tb->s_lo[s] ? t0 : tb->s_lo[s], hi = min64(t1, tb->s_hi[s]);
        if (lo >= hi)
            continue;
        band_run *b = n > 0 ? &runs[n - 1] : NULL;
        if (merge && b && b->lo == lo && b->hi == hi && b->s + b->len / cg == s)
            b->len += cg;
        else
            runs[n++] = (band_run){ s, cg, lo, hi };
    }
    return n;
}

/* One run over the valid filter rows as one segmented call (1), or a call
 * per filter row and k block (0). */
static inline int band_segmented(const job *J, int64_t rows, int64_t len)
{
    return rows > 1 && rows * len * J->plan->nr * (int64_t)sizeof(float) <= J->seg_max_bytes;
}

/* ns of `calls` L0 calls of k reduction floats each on m rows (the
 * family's tuned rates; without them, vx_conv_tile_cost a step) */
static double calls_ns(const job *J, int64_t m, double calls, int64_t k)
{
    if (J->rate && J->rate[m - 1].p > 0)
        return calls * (double)J->rate[m - 1].o + (double)J->rate[m - 1].p * (double)k;
    return vx_conv_tile_cost(m, J->plan->mr, NULL) * (double)k;
}

/* ns of a run of len floats a filter row over `rows` filter rows */
static double band_run_ns(const job *J, int64_t m, int64_t rows, int64_t len)
{
    const int64_t kc = J->plan->kc > 0 ? J->plan->kc : J->v->cg;
    if (band_segmented(J, rows, len))
        return calls_ns(J, m, 1.0, rows * len);
    return calls_ns(J, m, (double)(rows * cdiv(len, kc)), rows * len);
}

/* How a band tile runs: its runs over the valid filter rows [ra, rb), in
 * `order`. The first (or only) run over the whole tile writes C (beta = 0,
 * `whole`) and the last such run carries the epilogue (`carries`); a tile
 * without one is zeroed first, and a tile whose last run does not carry
 * the epilogue gets it in a call of its own. */
typedef struct {
    band_run runs[MAX_S];
    int order[MAX_S];
    int n;
    int64_t ra, rb;
    int whole, carries;
} band_plan;

static void band_plan_of(const job *J, int64_t oh, int64_t t0, int64_t t1, const tap_bounds *tb, band_plan *B)
{
    B->n = band_runs(J, oh, t0, t1, tb, B->runs, &B->ra, &B->rb);
    int first = -1, last = -1, no = 0;
    for (int i = 0; i < B->n; i++)
        if (B->runs[i].lo == t0 && B->runs[i].hi == t1) {
            first = first < 0 ? i : first;
            last = i;
        }
    B->whole = first >= 0;
    if (B->whole) /* the whole-tile runs first and last, the rest between in order */
        B->order[no++] = first;
    for (int i = 0; i < B->n; i++)
        if (!B->whole || (i != first && i != last))
            B->order[no++] = i;
    if (B->whole && last != first)
        B->order[no++] = last;
    B->carries = B->whole && B->order[no - 1] == last;
}

/* ns of tile [t0, t1) of output row oh as band_tile runs it. */
static double band_tile_ns(const job *J, int64_t oh, int64_t t0, int64_t t1, const tap_bounds *tb, int epilogue)
{
    band_plan B;
    band_plan_of(J, oh, t0, t1, tb, &B);
    const int64_t m = t1 - t0;
    double ns = 0.0;
    for (int i = 0; i < B.n; i++)
        ns += band_run_ns(J, B.runs[i].hi - B.runs[i].lo, B.rb - B.ra, B.runs[i].len);
    return ns + (B.whole ? 0.0 : calls_ns(J, m, 1.0, 0)) + (epilogue && !B.carries ? calls_ns(J, m, 1.0, 0) : 0.0);
}

/* The tiles of a row [x0, x1): as few as mr allows, widths within one. */
static inline int64_t band_tiles(int64_t x0, int64_t x1, int mr) { return cdiv(x1 - x0, mr); }
static inline int64_t band_cut(int64_t x0, int64_t x1, int64_t tiles, int64_t i)
{
    return x0 + (x1 - x0) * i / tiles;
}

/* Tile [t0, t1) of output row oh of image im, one column panel q. */
static void band_tile(const job *J, int64_t g, int64_t im, int64_t oh, int64_t t0, int64_t t1, int64_t q,
                      const float *bp, const tap_bounds *tb)
{
    const vx_conv2d_params *p = J->p;
    const int64_t cg = J->v->cg, C = p->c, K = p->k, Q = J->v->q, a_step = p->stride_w * C;
    const int64_t a_row = p->dilation_h * p->w * C, b_row = p->s * cg * J->plan->nr; /* a filter row on */
    const int nr = J->plan->nr;
    const int64_t kc = J->plan->kc > 0 ? J->plan->kc : cg;
    const int64_t k0 = q * nr, nn = min64(nr, J->v->kg - k0);
    vx_epilogue ep = { NULL, J->bias ? J->bias + g * J->v->kg + k0 : NULL, p->activation == VX_ACT_RELU };
    const vx_epilogue *epp = ep.bias_col || ep.relu ? &ep : NULL;
    float *c = J->out + ((im * J->v->p + oh) * Q + t0) * K + g * J->v->kg + k0;
    const int m = (int)(t1 - t0);
    band_plan B;
    band_plan_of(J, oh, t0, t1, tb, &B);
    if (!B.whole) /* no run covers every pixel: C zeroed first */
        J->kern[m - 1](0, NULL, 0, 0, bp, nr, c, K, nn, 1.0f, 0.0f, NULL, J->c_far);
    const int64_t ra = B.ra, rb = B.rb, ih0 = oh * p->stride_h - p->pad_h + ra * p->dilation_h;
    for (int j = 0; j < B.n; j++) {
        const band_run *b = &B.runs[B.order[j]];
        const int mm = (int)(b->hi - b->lo);
        const int64_t iw = b->lo * p->stride_w - p->pad_w + b->s * p->dilation_w;
        const float *a = J->in + ((im * p->h + ih0) * p->w + iw) * C + g * cg;
        const float *bb = bp + (ra * p->s + b->s) * cg * nr;
        float *cc = c + (b->lo - t0) * K;
        const float beta0 = B.whole && j == 0 ? 0.0f : 1.0f;
        const vx_epilogue *e_last = B.carries && j == B.n - 1 ? epp : NULL;
        if (band_segmented(J, rb - ra, b->len)) {
            J->seg[mm - 1]((rb - ra) * b->len, a, mm > 1 ? a_step : 0, 1, bb, nr, cc, K, nn, 1.0f, beta0, e_last,
                           J->c_far, b->len, a_row, b_row);
            continue;
        }
        for (int64_t r = 0; r < rb - ra; r++)
            for (int64_t c0 = 0; c0 < b->len; c0 += kc) {
                const int64_t kb = min64(kc, b->len - c0);
                const float beta = r == 0 && c0 == 0 ? beta0 : 1.0f;
                const vx_epilogue *e = r == rb - ra - 1 && c0 + kb >= b->len ? e_last : NULL;
                J->kern[mm - 1](kb, a + r * a_row + c0, mm > 1 ? a_step : 0, 1, bb + r * b_row + c0 * nr, nr, cc, K,
                                nn, 1.0f, beta, e, J->c_far);
            }
    }
    if (epp && !B.carries)
        J->kern[m - 1](0, NULL, 0, 0, bp, nr, c, K, nn, 1.0f, 1.0f, epp, J->c_far);
}

/* ns of the pieces of output rows [ya, yb) (one class of rows) in imgs
 * images, cut by the columns' classes at xcuts, as run_block and
 * run_images tile them (vx_conv_piece_way; stack_pixels' calls). */
static double pieces_ns(const job *J, int64_t ya, int64_t yb, int64_t imgs, const tap_bounds *tb,
                        const int64_t *xcuts, int nx)
{
    const vx_conv2d_params *p = J->p;
    const int mr = J->plan->mr, nr = J->plan->nr;
    const int64_t cg = J->v->cg;
    const int merge = p->dilation_w == 1 && cg == p->c;
    const int64_t rows = yb - ya, kc = J->plan->kc > 0 ? J->plan->kc : cg;
    int64_t ra, rb; /* the valid filter rows, the same for every piece */
    valid_rows(tb, p->r, ya, &ra, &rb);
    const int64_t nvr = rb - ra;
    double ns = 0.0;
    for (int i = 0; i + 1 < nx; i++) {
        const int64_t len = xcuts[i + 1] - xcuts[i];
        if (len <= 0)
            continue;
        /* tap_runs' runs, counted: the piece's valid tap columns (adjacent:
         * validity is monotone along a row), merged or one run each */
        int64_t ns_valid = 0;
        for (int64_t s = 0; s < p->s; s++)
            ns_valid += tb->s_lo[s] <= xcuts[i] && xcuts[i + 1] <= tb->s_hi[s];
        const int64_t nrun = ns_valid == 0 ? 0 : merge ? nvr : nvr * ns_valid, run_len = merge ? ns_valid * cg : cg;
        const int way = vx_conv_piece_way(len, rows, imgs, mr, J->rate);
        const int64_t span = way == VX_PIECE_ALONG ? len : way == VX_PIECE_DOWN ? rows : imgs;
        const double strips = (double)(imgs * rows * len / span);
        const int seg = merge && nrun > 1 && run_len * nrun * nr * (int64_t)sizeof(float) <= J->seg_max_bytes;
        double tile[2] = { 0.0, 0.0 }; /* a full tile, the remainder's */
        const int64_t m[2] = { mr, span % mr };
        for (int t = 0; t < 2; t++)
            if (m[t] > 0)
                tile[t] = nrun == 0 || seg ? calls_ns(J, m[t], 1.0, run_len * nrun)
                                           : calls_ns(J, m[t], (double)(nrun * cdiv(run_len, kc)), run_len * nrun);
        ns += strips * ((double)(span / mr) * tile[0] + tile[1]);
    }
    return ns;
}

/* Whether the pixels [x0, x1) of the output rows [ya, yb) (one class of
 * rows) of imgs images go as band tiles: where the columns, cut into
 * classes at xcuts, fall into two classes or more and band tiles price
 * below the pieces. */
static int band_rows(const job *J, int64_t ya, int64_t yb, int64_t x0, int64_t x1, int64_t imgs,
                     const tap_bounds *tb, const int64_t *xcuts, int nx)
{
    if (band_force >= 0)
        return band_force;
    int pieces = 0;
    for (int i = 0; i + 1 < nx; i++)
        pieces += xcuts[i] < xcuts[i + 1];
    if (pieces < 2 || ya >= yb)
        return 0;
    band_memo *memo = x0 == 0 && x1 == J->v->q ? tb->memo : NULL;
    const int slot = (int)(((uint64_t)ya * 31u + (uint64_t)yb * 7u + (uint64_t)imgs) % BAND_MEMO);
    if (memo && memo->ya[slot] == ya && memo->yb[slot] == yb && memo->imgs[slot] == imgs)
        return memo->band[slot];
    const int64_t tiles = band_tiles(x0, x1, J->plan->mr);
    const int epilogue = J->bias != NULL || J->p->activation == VX_ACT_RELU;
    double band = 0.0;
    for (int64_t i = 0; i < tiles; i++)
        band += band_tile_ns(J, ya, band_cut(x0, x1, tiles, i), band_cut(x0, x1, tiles, i + 1), tb, epilogue);
    const int use = band * (double)(imgs * (yb - ya)) <= VX_BAND_MARGIN * pieces_ns(J, ya, yb, imgs, tb, xcuts, nx);
    if (memo) {
        memo->ya[slot] = ya;
        memo->yb[slot] = yb;
        memo->imgs[slot] = imgs;
        memo->band[slot] = (signed char)use;
    }
    return use;
}

/* The pixels [x0, x1) of output row oh of image im as band tiles, one
 * column panel q. */
static void band_row(const job *J, int64_t g, int64_t im, int64_t oh, int64_t x0, int64_t x1, int64_t q,
                     const float *bp, const tap_bounds *tb)
{
    const int64_t tiles = band_tiles(x0, x1, J->plan->mr);
    for (int64_t i = 0; i < tiles; i++)
        band_tile(J, g, im, oh, band_cut(x0, x1, tiles, i), band_cut(x0, x1, tiles, i + 1), q, bp, tb);
}

/* Output rows [y0, y1) of image im, whole, over the column panels whose
 * packed filter starts at bp[q] (bp indexed by panel): the rows cut where
 * a tap row enters or leaves the input, each piece of rows cut by columns
 * likewise, and each piece tiled along its rows (segment) or down its
 * columns (stack_pixels, rows sh*w*c input floats apart), whichever
 * vx_conv_piece_way prices lower for `imgs` images; pieces it sends across
 * the images are left to the caller (run_images). The pieces along the
 * rows go row by row over all panels (the input rows under them read
 * once, as in run_rows), the others panel by panel after them. 1x512x7x7
 * with 512 3x3 filters, pad 1: 13 tiles an image (4 of one row) instead of
 * 21 (14 of one row). */
static void run_block(const job *J, int64_t g, int64_t im, int64_t y0, int64_t y1, int64_t imgs, int64_t q0,
                      int64_t q1, const float *const *bp, const tap_bounds *tb)
{
    const vx_conv2d_params *p = J->p;
    const int64_t Q = J->v->q;
    const int mr = J->plan->mr;
    int64_t ycuts[2 * VX_CONV_INPLACE_MAX_TAPS + 2], xcuts[2 * MAX_S + 2];
    const int ny = cuts_of(p->r, tb->r_lo, tb->r_hi, y0, y1, ycuts);
    const int nx = cuts_of(p->s, tb->s_lo, tb->s_hi, 0, Q, xcuts);
    int way[2 * MAX_S + 1];
    for (int j = 0; j + 1 < ny; j++) {
        const int64_t ya = ycuts[j], yb = ycuts[j + 1];
        if (ya == yb)
            continue;
        if (band_rows(J, ya, yb, 0, Q, imgs, tb, xcuts, nx)) {
            for (int64_t oh = ya; oh < yb; oh++)
                for (int64_t q = q0; q < q1; q++)
                    band_row(J, g, im, oh, 0, Q, q, bp[q - q0], tb);
            continue;
        }
        for (int i = 0; i + 1 < nx; i++) /* -1: an empty piece */
            way[i] = xcuts[i] < xcuts[i + 1] ? vx_conv_piece_way(xcuts[i + 1] - xcuts[i], yb - ya, imgs, mr, J->rate)
                                             : -1;
        for (int64_t oh = ya; oh < yb; oh++)
            for (int64_t q = q0; q < q1; q++)
                for (int i = 0; i + 1 < nx; i++)
                    if (way[i] == VX_PIECE_ALONG)
                        segment(J, g, im, oh, xcuts[i], xcuts[i + 1], q, bp[q - q0], tb->s_lo, tb->s_hi);
        for (int64_t q = q0; q < q1; q++)
            for (int i = 0; i + 1 < nx; i++)
                if (way[i] == VX_PIECE_DOWN)
                    stack_piece(J, g, im, ya, xcuts[i], xcuts[i + 1], yb - ya, p->stride_h * p->w * p->c, Q * p->k, q,
                                bp[q - q0], tb);
    }
}

/* Pixels [m0, m1) (flattened over images and output rows) of group g over
 * the column panels whose packed filter starts at bp[q] (bp indexed by
 * panel): runs of two or more whole output rows of one image go through
 * run_block, a part of a row (where a cell starts or ends) through its
 * segments. */
static void run_rows(const job *J, int64_t g, int64_t m0, int64_t m1, int64_t q0, int64_t q1, const float *const *bp,
                     const tap_bounds *tb)
{
    const int64_t Q = J->v->q, P = J->v->p, pq = P * Q;
    int64_t cuts[2 * MAX_S + 2];
    for (int64_t pix = m0; pix < m1;) {
        const int64_t im = pix / pq, oh = (pix % pq) / Q, a = pix % Q;
        const int64_t whole = a == 0 ? min64(P - oh, (m1 - pix) / Q) : 0;
        if (whole >= 2) {
            run_block(J, g, im, oh, oh + whole, 1, q0, q1, bp, tb);
            pix += whole * Q;
            continue;
        }
        const int64_t b = min64(Q, a + (m1 - pix));
        /* the row's segments: cut where any tap enters or leaves the input */
        const int nc = cuts_of(J->p->s, tb->s_lo, tb->s_hi, a, b, cuts);
        const int band = band_rows(J, oh, oh + 1, a, b, 1, tb, cuts, nc);
        for (int64_t q = q0; q < q1; q++) {
            if (band) {
                band_row(J, g, im, oh, a, b, q, bp[q - q0], tb);
                continue;
            }
            for (int i = 0; i + 1 < nc; i++)
                if (cuts[i] < cuts[i + 1])
                    segment(J, g, im, oh, cuts[i], cuts[i + 1], q, bp[q - q0], tb->s_lo, tb->s_hi);
        }
        pix += b - a;
    }
}

/* Whole images [i0, i1): the pieces vx_conv_piece_way sends across the
 * images first, each pixel of them one stack of the same pixel of every
 * image (a strided A, rows h*w*c floats apart, and a strided C, p*q*k
 * apart: a pixel's valid taps depend only on its row and column), then
 * each image's other pieces (run_block). */
static void run_images(const job *J, int64_t g, int64_t i0, int64_t i1, int64_t q0, int64_t q1, const float *const *bp,
                       const tap_bounds *tb)
{
    const vx_conv2d_params *p = J->p;
    const int64_t P = J->v->p, Q = J->v->q, imgs = i1 - i0;
    const int mr = J->plan->mr;
    int64_t ycuts[2 * VX_CONV_INPLACE_MAX_TAPS + 2], xcuts[2 * MAX_S + 2];
    const int ny = cuts_of(p->r, tb->r_lo, tb->r_hi, 0, P, ycuts);
    const int nx = cuts_of(p->s, tb->s_lo, tb->s_hi, 0, Q, xcuts);
    int way[2 * MAX_S + 1];
    for (int j = 0; j + 1 < ny; j++) {
        if (band_rows(J, ycuts[j], ycuts[j + 1], 0, Q, imgs, tb, xcuts, nx))
            continue; /* band tiles: run_block's */
        for (int i = 0; i + 1 < nx; i++) /* -1: an empty piece */
            way[i] = xcuts[i] < xcuts[i + 1] && ycuts[j] < ycuts[j + 1]
                         ? vx_conv_piece_way(xcuts[i + 1] - xcuts[i], ycuts[j + 1] - ycuts[j], imgs, mr, J->rate)
                         : -1;
        for (int64_t oh = ycuts[j]; oh < ycuts[j + 1]; oh++)
            for (int64_t q = q0; q < q1; q++)
                for (int i = 0; i + 1 < nx; i++)
                    if (way[i] == VX_PIECE_ACROSS)
                        stack_piece(J, g, i0, oh, xcuts[i], xcuts[i + 1], imgs, p->h * p->w * p->c, P * Q * p->k, q,
                                    bp[q - q0], tb);
    }
    for (int64_t im = i0; im < i1; im++)
        run_block(J, g, im, 0, P, imgs, q0, q1, bp, tb);
}

/* Pixels [m0, m1) (flattened over images and output rows): the whole
 * images among them, two or more, through run_images, the rest through
 * run_rows. 36 images of 4x4 with 11x11 filters (stride 2, pad 5): 2x2
 * outputs of one pixel per piece, all stacked across the images. */
static void run_pixels(const job *J, int64_t g, int64_t m0, int64_t m1, int64_t q0, int64_t q1, const float *const *bp,
                       const tap_bounds *tb)
{
    const int64_t pq = J->v->p * J->v->q;
    const int64_t i0 = cdiv(m0, pq), i1 = m1 / pq; /* whole images */
    if (i1 - i0 < 2) {
        run_rows(J, g, m0, m1, q0, q1, bp, tb);
        return;
    }
    if (m0 < i0 * pq)
        run_rows(J, g, m0, i0 * pq, q0, q1, bp, tb);
    run_images(J, g, i0, i1, q0, q1, bp, tb);
    if (i1 * pq < m1)
        run_rows(J, g, i1 * pq, m1, q0, q1, bp, tb);
}

/* One cell: pixels [m0, m1) x column panels [q0, q1) of group g, with this
 * thread's buffer for packed panels. Either all its filter panels are
 * packed first and every output row passes over all of them (the input
 * rows read once, the filter re-read per row), or one panel is packed at a
 * time and every row passes over it while it sits in L2 (the filter read
 * once, the input re-read per panel), or all panels are packed first and
 * blocks of rows whose input stays in L2 pass over one panel after another
 * (both read again: the filter per block): vx_conv_inplace_order picks by
 * what each re-reads from beyond L2. A last-level cache does not make the
 * filter's re-reads cheap: at 512 channels in and out (3x3, 4.7 MB of
 * panels a thread) they ran from DRAM on AMD Zen 1 (64x512x7x7, 2
 * threads: 238 ms all panels first, 202 one at a time; NOTES.md, eleventh
 * session), and at the L3's 15-30 GB/s on an Intel Xeon guest (13x512x14x14
 * stride 2: 21.7 ms against 8.6; thirty-fifth session). */
static void run_cell(const job *J, int64_t g, int64_t m0, int64_t m1, int64_t q0, int64_t q1, float *buf)
{
    const vx_conv2d_params *p = J->p;
    tap_bounds tb;
    band_memo memo;
    for (int i = 0; i < BAND_MEMO; i++)
        memo.ya[i] = -1;
    tb.memo = &memo;
    const float *bp[VX_CONV_INPLACE_MAX_PANELS];
    for (int64_t s = 0; s < p->s; s++)
        vx_conv_inside(J->v->q, p->w, p->stride_w, s * p->dilation_w - p->pad_w, &tb.s_lo[s], &tb.s_hi[s]);
    for (int64_t r = 0; r < p->r; r++)
        vx_conv_inside(J->v->p, p->h, p->stride_h, r * p->dilation_h - p->pad_h, &tb.r_lo[r], &tb.r_hi[r]);
    const int64_t panel_floats = J->red * J->plan->nr;
    const double filter_bytes = 4.0 * (double)(q1 - q0) * (double)panel_floats;
    const double pixel_bytes = 4.0 * vx_conv_pixel_elems(J->v->cg, p->r, p->s, p->stride_h, p->stride_w);
    int64_t block;
    double far;
    int order = vx_conv_inplace_order(filter_bytes, pixel_bytes, m1 - m0, J->v->q, J->v->q - J->v->shape.a_edge,
                                      J->v->p * J->v->q, J->plan->mr, (double)(q1 - q0), J->l2_bytes / 2, &block,
                                      &far);
    if (order_force >= 0) { /* testing: forced blocks are two output rows */
        order = order_force;
        block = 2 * J->v->q;
    }
    /* packed before the call: the same panels, read where they are */
    const float *pre = J->packed ? J->packed + g * J->panels * panel_floats : NULL;
    if (order != VX_CELL_PANEL_AT_A_TIME && q1 - q0 <= VX_CONV_INPLACE_MAX_PANELS) {
        for (int64_t q = q0; q < q1; q++) {
            float *own = buf + (q - q0) * panel_floats;
            bp[q - q0] = pre ? pre + q * panel_floats : own;
            if (!pre)
                pack_panel(J, g, q, own);
        }
        if (order == VX_CELL_ALL_PANELS) {
            run_pixels(J, g, m0, m1, q0, q1, bp, &tb);
            return;
        }
        for (int64_t b0 = m0; b0 < m1; b0 += block) /* VX_CELL_BLOCKS */
            for (int64_t q = q0; q < q1; q++)
                run_pixels(J, g, b0, min64(m1, b0 + block), q, q + 1, &bp[q - q0], &tb);
        return;
    }
    bp[0] = buf;
    for (int64_t q = q0; q < q1; q++) {
        if (pre)
            bp[0] = pre + q * panel_floats;
        else
            pack_panel(J, g, q, buf);
        run_pixels(J, g, m0, m1, q, q + 1, bp, &tb);
    }
}

/* Balanced split of `total` units into `parts`, chunk idx = [*lo, *hi). */
static void split(int64_t total, int parts, int idx, int64_t *lo, int64_t *hi)
{
    const int64_t base = total / parts, extra = total % parts;
    *lo = idx * base + min64(idx, extra);
    *hi = *lo + base + (idx < extra ? 1 : 0);
}

static void task(void *ctx, int tid, int nthreads)
{
    job *J = ctx;
    const vx_gemm_plan *P = J->plan;
    const int grid = P->threads_m * P->threads_n;
    const int64_t cells = (int64_t)grid * J->p->groups;
    float *panel = J->ws + (size_t)tid * J->ws_panel;
    for (int64_t cell = -1; (cell = vx_pool_claim(&J->next, cell, 1, nthreads)) < cells;) {
        const int64_t g = cell / grid;
        const int rest = (int)(cell % grid);
        int64_t m0, m1, q0, q1;
        split(J->v->m, P->threads_m, rest / P->threads_n, &m0, &m1);
        split(J->panels, P->threads_n, rest % P->threads_n, &q0, &q1);
        if (m0 < m1 && q0 < q1)
            run_cell(J, g, m0, m1, q0, q1, panel);
    }
}

vx_status vx_cpu_conv_nhwc_inplace(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                                   const float *in, const float *filter, int filter_kcrs, const float *panels,
                                   const float *bias, float *out, int *threads_used)
{
    const vx_ukernel_set *set = vx_ukernels(plan->isa);
    if (p->layout != VX_NHWC || p->s > MAX_S || p->r * p->s > VX_CONV_INPLACE_MAX_TAPS || plan->family < 0 ||
        plan->family >= set->nfamilies)
        return vx_fail(VX_ERR_INTERNAL, "dyn_conv2d: the in-place plan needs NHWC, s <= %d and r*s <= %d", MAX_S,
                       VX_CONV_INPLACE_MAX_TAPS);
    job J;
    memset(&J, 0, sizeof J);
    J.p = p;
    J.v = v;
    J.plan = plan;
    J.kern = set->families[plan->family].kern[VX_UK_AS_BP];
    J.seg = set->families[plan->family].seg;
    {
        const vx_cpu_model *M = vx_cpu_model_get(plan->isa);
        J.rate = M && plan->family < M->desc.nfamilies ? M->desc.fam[plan->family].rate[VX_LOAD_COPY_B] : NULL;
    }
    /* A quarter of L2, as the analyzer's k slices (cap_slice): measured on
     * AMD Zen 1 (512 KiB L2), segmented calls reading up to 73 KiB of
     * packed filter per pixel tile ran 1.0-1.4x the per-run calls (NOTES.md,
     * tenth session); at 147-590 KiB, +-2 %. */
    J.seg_max_bytes = vx_hw()->l2_bytes > 0 ? vx_hw()->l2_bytes / 4 : 131072;
    J.in = in;
    J.bias = bias;
    J.out = out;
    J.red = v->k;
    J.panels = cdiv(v->kg, plan->nr);
    J.filter = filter;
    J.filter_kcrs = filter_kcrs;
    J.packed = panels;
    const int64_t cells = (int64_t)plan->threads_m * plan->threads_n * p->groups;
    const int threads = (int)min64(plan->threads < 1 ? 1 : plan->threads, cells);
    J.c_far = vx_gemm_c_far((double)v->m * (double)p->k * sizeof(float));
    J.l2_bytes = vx_hw()->l2_bytes > 0 ? (double)vx_hw()->l2_bytes : 1048576.0;
    /* every buffer is taken before anything is written (out of memory leaves
     * the output untouched) */
    /* per thread: the packed panels of its widest cell (see run_cell) */
    const int64_t cell_panels = min64(cdiv(J.panels, plan->threads_n < 1 ? 1 : plan->threads_n),
                                      VX_CONV_INPLACE_MAX_PANELS);
    J.ws_panel = ((size_t)(cell_panels * J.red * plan->nr) + 15) & ~(size_t)15;
    if (!(J.ws = vx_scratch(SLOT_FILTER, (size_t)threads * J.ws_panel)))
        return vx_fail(VX_ERR_NO_MEMORY, "dyn_conv2d: out of memory for %zu bytes of packed filter panels",
                       (size_t)threads * J.ws_panel * sizeof(float));
    const int used = threads > 1 ? vx_pool_run(task, &J, threads) : (task(&J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}
