/* GEMM plan selection: the shared plan cache in front of the analyzer's
 * search (cost.c over the CPU backend's candidates), the conversion of its
 * choice into the CPU driver's plan, and the testing override. */
#include "analyzer/plan.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/cost.h"
#include "analyzer/plancache.h"
#include "analyzer/select.h"
#include "cpu/cpu_levels.h"
#include "cpu/dot.h"

static vx_gemm_plan g_override;
static atomic_int g_have_override;

static void problem_of(const vx_gemm_shape *s, vx_problem *p)
{
    p->m = s->m;
    p->n = s->n;
    p->k = s->k;
    p->a_trans = !s->a_unit_stride;
    p->b_trans = !s->b_unit_stride;
    p->b_in_place_ok = s->b_unit_stride && !s->b_gathered;
    p->a_in_place_ok = !s->a_gathered;
    p->a_seg = s->a_seg;
    p->a_run = s->a_run;
    p->b_run = s->b_run;
    p->a_row = s->a_row;
    p->a_edge = s->a_edge;
    p->a_img = s->a_img;
    p->a_edge_rows = s->a_edge_rows;
    p->a_pitch = s->a_pitch;
    p->a_band_runs = s->a_band_runs;
    p->a_band_pixels = s->a_band_pixels;
    p->a_pixel_elems = s->a_pixel_elems;
    p->a_kfrac = s->a_kfrac;
    p->b_kfrac = s->b_kfrac;
    p->b_prepacked = s->b_prepacked;
    p->a_prepacked = s->a_prepacked;
    p->a_ld = s->a_ld; /* 0: dense (cost.c fills in the dense ones) */
    p->b_ld = s->b_ld;
    p->c_ld = s->c_ld;
    p->units_warm = vx_units_state_warm(s->pool_warm);
    p->units_class = vx_units_state_class(s->pool_warm);
}

/* The CPU driver's plan for a priced choice. Blocks are stored as the
 * driver will run them for this k (equal k blocks). */
static void plan_of(const vx_cpu_model *M, const vx_gemm_shape *s, vx_isa isa, const vx_choice *ch,
                    vx_gemm_plan *out)
{
    const vx_l1_cand *b = &M->cand.l1[ch->l1];
    const vx_l0_cand *t = &M->cand.l0[b->l0];
    const vx_l2_cand g = M->cand.l2[ch->l2];
    static const vx_path path_of_mode[VX_LOAD_MODES] = { VX_PATH_PACKED, VX_PATH_PACK_B, VX_PATH_DIRECT };
    memset(out, 0, sizeof *out);
    out->isa = isa;
    out->path = path_of_mode[b->mode];
    out->family = t->fam;
    out->mr = t->m;
    out->nr = M->desc.fam[t->fam].n;
    out->kc = vx_cost_kc(b->kc, s->k);
    out->mc = b->mc;
    out->nc = b->nc;
    out->threads_m = g.tm;
    out->threads_n = g.tn;
    out->threads = g.tm * g.tn;
}

/* The plan every shape can fall back on if the model cannot be built (out
 * of memory): the widest family's largest tile, packed, one thread. It is
 * unpriced (predicted 0) and the only one ranked; returns that count, 1. */
static int fallback(const vx_gemm_shape *s, vx_isa isa, vx_priced_plan *priced)
{
    vx_gemm_plan *out = &priced->plan;
    priced->predicted_ns = 0;
    const vx_ukernel_set *set = vx_ukernels(isa);
    const vx_ukernel_family *F = &set->families[set->nfamilies - 1];
    memset(out, 0, sizeof *out);
    out->isa = isa;
    out->path = VX_PATH_PACKED;
    out->family = set->nfamilies - 1;
    out->mr = F->mr_max;
    out->nr = F->nr;
    out->kc = vx_cost_kc(256, s->k);
    out->mc = F->mr_max * 16;
    out->nc = F->nr * 16;
    out->threads_m = out->threads_n = out->threads = 1;
    return 1;
}

int vx_plan_same(const vx_gemm_plan *a, const vx_gemm_plan *b)
{
    return a->path == b->path && a->family == b->family && a->mr == b->mr && a->kc == b->kc &&
           a->mc == b->mc && a->nc == b->nc && a->threads_m == b->threads_m && a->threads_n == b->threads_n &&
           a->conv_via_nhwc == b->conv_via_nhwc;
}

/* Blocks larger than the problem behave like the problem: clip them so
 * plans that would run identically compare equal. */
static void clip_blocks(const vx_gemm_shape *s, vx_gemm_plan *p)
{
    const int64_t m_up = (s->m + p->mr - 1) / p->mr * p->mr, n_up = (s->n + p->nr - 1) / p->nr * p->nr;
    if (p->mc > m_up)
        p->mc = m_up;
    if (p->nc > n_up)
        p->nc = n_up;
}

/* Plain matrices: none of a convolution's gathered operands, tap segments,
 * pixel rows or padded fractions of k. */
static int plain_shape(const vx_gemm_shape *s)
{
    return !s->a_gathered && !s->b_gathered && s->a_seg == 0 && s->a_row == 0 && s->a_img == 0 &&
           s->a_edge_rows == 0 && s->a_band_runs == 0 && !s->b_prepacked && !s->a_prepacked && s->a_run == 0 && s->b_run == 0 && !(s->a_kfrac > 0) && !(s->b_kfrac > 0);
}

int64_t vx_shape_geometry_key(const vx_gemm_shape *s)
{
    /* unsigned: the shifts may carry bits out */
    const uint64_t h = (uint64_t)s->a_seg ^ ((uint64_t)s->a_run << 24) ^ ((uint64_t)s->b_run << 40) ^
                       ((uint64_t)s->a_row << 48) ^ ((uint64_t)s->a_edge << 58) ^ ((uint64_t)s->a_img << 36) ^
                       ((uint64_t)s->a_edge_rows << 4) ^ ((uint64_t)(s->a_kfrac * 65536.0) << 8) ^
                       ((uint64_t)(s->b_kfrac * 65536.0) << 30) ^ ((uint64_t)s->a_pitch << 14) ^
                       ((uint64_t)s->a_band_runs << 52) ^ ((uint64_t)(s->a_band_pixels * 256.0) << 26) ^
                       ((uint64_t)s->a_pixel_elems << 20) ^
                       ((uint64_t)s->b_prepacked << 62) ^ ((uint64_t)s->a_prepacked << 61);
    return (int64_t)(h & INT64_MAX);
}

/* A matrix-vector product, or a few of them sharing B, on plain matrices
 * (a convolution's gathered or in-place patches keep the GEMM paths). The
 * few-row form (m <= the kernels' rows, B's rows unit-stride) only for a B
 * that streams from beyond L2: there its sequential pass beats a register
 * tile's panel walk (2x1024x512: 86 us against 205; 3x1024x1024: 245
 * against 366), while in cache the tiles, with no partial sums to load and
 * store, win (4x32x32: 440 ns against 684; AMD Zen 1, NOTES.md); and
 * only for rows of 64 columns or more. */
enum { GEMV_ROWS_MIN_N = 64 }; /* narrower rows are short runs anyway, and mostly tail: 2x28x3742 ran 27 us
                                 few-row against 20 for a 4x24 tile */

static int gemv_shape(const vx_gemm_shape *s, const vx_device_desc *d)
{
    const int few_rows = s->m >= 2 && s->m <= d->gemv_rows_max && s->n >= GEMV_ROWS_MIN_N && s->b_unit_stride &&
                         d->nmem > 2 && (double)s->k * (double)s->n * d->elem_bytes > (double)d->mem[1].bytes;
    return (s->m == 1 || s->n == 1 || few_rows) && plain_shape(s);
}

/* A plan of `path` that carries base (the best GEMM plan: its tile and
 * blocks, and its path as the fallback) for the driver to fall back on
 * where the path's kernels cannot take the operands' strides. */
static void carry(vx_priced_plan *r, const vx_gemm_plan *base, vx_path path)
{
    /* into the caller's r: plans are compared bytewise (the plan cache's
     * test), and a plan returned by value came back with other bytes in
     * its padding */
    r->plan = *base;
    r->plan.fallback = base->path;
    r->plan.path = path;
}

/* The matrix-vector plan on the cheaper of one unit and all of them,
 * carrying the best GEMM plan. */
static vx_priced_plan gemv_plan(const vx_cpu_model *M, const vx_problem *p, int max_threads,
                                const vx_gemm_plan *base)
{
    vx_priced_plan r;
    carry(&r, base, VX_PATH_GEMV);
    r.plan.threads = 1;
    r.predicted_ns = vx_cost_gemv(&M->desc, p, 1);
    if (max_threads > 1) {
        const double ns = vx_cost_gemv(&M->desc, p, max_threads);
        if (ns < r.predicted_ns) {
            r.predicted_ns = ns;
            r.plan.threads = max_threads;
        }
    }
    return r;
}

/* A plain GEMM whose A rows and B columns both run along k (row-major NT:
 * B stored transposed, as a framework's [out, in] weights are): the dot
 * form reads both in place, where the register tiles would copy B through
 * transposes first. Two rows or more (one is the matrix-vector dot form),
 * and at most VX_DOT_MAX_ROW_TILES row tiles: with many rows the register
 * tiles' one-time copy of B is spread thin and their loops beat the dot
 * form's (a load per 2.4 FMAs and the lane reductions), which the model
 * does not see: 6272x256x512 was priced 3.7 ms on the dot form, which ran
 * 3.6-3.9, against 3.2 for pack_b; 512x256x512 357 us against 275; from
 * 128x3072x768 down the dot form ran as fast or faster (AMD Zen 5, 2
 * threads; NOTES.md, fourteenth session). */
static int dot_shape(const vx_gemm_shape *s, const vx_device_desc *d)
{
    return vx_dot_takes(d, s->m, s->n) && s->k >= 1 && s->a_unit_stride && !s->b_unit_stride && plain_shape(s);
}

/* The dot-form plan on the cheapest thread count, carrying the best GEMM
 * plan. */
static vx_priced_plan dot_plan(const vx_cpu_model *M, const vx_problem *p, int max_threads,
                               const vx_gemm_plan *base)
{
    vx_priced_plan r;
    carry(&r, base, VX_PATH_DOT);
    r.plan.conv_via_nhwc = 0;
    vx_dot_blocks(&M->desc, p->m, p->k, &r.plan.kc, &r.plan.mc); /* nc stays the base plan's */
    r.predicted_ns = vx_cost_dot_best(&M->desc, p, max_threads, &r.plan.threads);
    r.plan.threads_m = 1;
    r.plan.threads_n = r.plan.threads;
    return r;
}

/* A tall, skinny call whose B fits the registers (levels.h, resident_*):
 * two rows and columns or more (one of either is the matrix-vector
 * form), A's and B's rows unit-stride, plain matrices. */
static int resident_shape(const vx_gemm_shape *s, const vx_device_desc *d)
{
    return s->m >= 2 && s->n >= 2 && vx_resident_takes(d, s->n, s->k) && s->a_unit_stride && s->b_unit_stride &&
           plain_shape(s);
}

/* The B-resident plan on the cheapest thread count, carrying the best GEMM
 * plan. */
static vx_priced_plan resident_plan(const vx_cpu_model *M, const vx_problem *p, int max_threads,
                                    const vx_gemm_plan *base)
{
    vx_priced_plan r;
    carry(&r, base, VX_PATH_RESIDENT);
    r.plan.conv_via_nhwc = 0;
    r.predicted_ns = vx_cost_resident_best(&M->desc, p, max_threads, &r.plan.threads);
    r.plan.threads_m = r.plan.threads;
    r.plan.threads_n = 1;
    return r;
}

/* Rank v in among the kept plans out[0..kept) (sorted by price), at most
 * max kept; returns the new count. */
static int rank_in(vx_priced_plan *out, int kept, int max, const vx_priced_plan *v)
{
    int at = 0;
    while (at < kept && out[at].predicted_ns <= v->predicted_ns)
        at++;
    if (at >= max)
        return kept;
    for (int j = (kept < max ? kept : max - 1); j > at; j--)
        out[j] = out[j - 1];
    out[at] = *v;
    return kept < max ? kept + 1 : max;
}

int vx_gemm_rank(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_priced_plan *out, int max)
{
    const vx_cpu_model *M = vx_cpu_model_get(isa);
    if (max < 1)
        return 0;
    if (!M)
        return fallback(s, isa, out);
    vx_problem p;
    problem_of(s, &p);
    if (max_threads < 1)
        max_threads = 1;
    if (max == 1) {
        vx_choice ch;
        if (vx_cost_search(&M->desc, &M->cand, &p, max_threads, &ch, 1, NULL) < 1)
            return fallback(s, isa, out);
        plan_of(M, s, isa, &ch, &out[0].plan);
        /* as the ranked list shows it (and VORTEX_VERBOSE then prints what
         * runs): a block past a plain problem's edge runs as the problem */
        if (plain_shape(s))
            clip_blocks(s, &out[0].plan);
        out[0].predicted_ns = ch.ns;
        const vx_gemm_plan base = out[0].plan;
        if (gemv_shape(s, &M->desc)) {
            const vx_priced_plan v = gemv_plan(M, &p, max_threads, &base);
            if (v.predicted_ns < out[0].predicted_ns)
                out[0] = v;
        }
        if (dot_shape(s, &M->desc)) {
            const vx_priced_plan v = dot_plan(M, &p, max_threads, &base);
            if (v.predicted_ns < out[0].predicted_ns)
                out[0] = v;
        }
        if (resident_shape(s, &M->desc)) {
            const vx_priced_plan v = resident_plan(M, &p, max_threads, &base);
            if (v.predicted_ns < out[0].predicted_ns)
                out[0] = v;
        }
        return 1;
    }
    /* Everything, then drop plans that would run identically. */
    const int all = M->cand.n1 * M->cand.n2;
    vx_choice *ch = malloc(sizeof *ch * (size_t)(all > 0 ? all : 1));
    if (!ch)
        return fallback(s, isa, out);
    const int got = vx_cost_search(&M->desc, &M->cand, &p, max_threads, ch, all, NULL);
    int distinct = 0;
    for (int i = 0; i < got; i++) {
        vx_gemm_plan pl;
        plan_of(M, s, isa, &ch[i], &pl);
        clip_blocks(s, &pl);
        int dup = 0;
        for (int j = 0; j < distinct && j < max && !dup; j++)
            dup = vx_plan_same(&out[j].plan, &pl);
        if (dup)
            continue;
        /* Beyond max only count: compare against those kept is enough for
         * the ones kept; the count may include a few duplicates past max. */
        if (distinct < max) {
            out[distinct].plan = pl;
            out[distinct].predicted_ns = ch[i].ns;
        }
        distinct++;
    }
    free(ch);
    if (distinct > 0) { /* the matrix-vector and dot-form plans ranked in among the GEMM plans */
        const vx_gemm_plan base = out[0].plan;
        if (gemv_shape(s, &M->desc)) {
            const vx_priced_plan v = gemv_plan(M, &p, max_threads, &base);
            rank_in(out, distinct < max ? distinct : max, max, &v);
            distinct++;
        }
        if (dot_shape(s, &M->desc)) {
            const vx_priced_plan v = dot_plan(M, &p, max_threads, &base);
            rank_in(out, distinct < max ? distinct : max, max, &v);
            distinct++;
        }
        if (resident_shape(s, &M->desc)) {
            const vx_priced_plan v = resident_plan(M, &p, max_threads, &base);
            rank_in(out, distinct < max ? distinct : max, max, &v);
            distinct++;
        }
    }
    return distinct > 0 ? distinct : fallback(s, isa, out);
}

/* The override replaces the fields it names. Path, nr and mr change which
 * kernels run; blocks and the grid are taken as given. */
static void apply_override(const vx_gemm_shape *s, const vx_gemm_plan *ov, vx_gemm_plan *out)
{
    const vx_ukernel_set *set = vx_ukernels(out->isa);
    if (ov->path && ov->path != VX_PATH_CONV_DIRECT)
        out->path = ov->path;
    if (out->path == VX_PATH_DIRECT && (!s->b_unit_stride || s->b_gathered))
        out->path = VX_PATH_PACK_B;
    if (s->a_gathered)
        out->path = VX_PATH_PACKED;
    if (ov->nr)
        for (int f = 0; f < set->nfamilies; f++)
            if (set->families[f].nr == ov->nr) {
                out->family = f;
                out->nr = ov->nr;
            }
    const int mr_max = set->families[out->family].mr_max;
    if (ov->mr)
        out->mr = ov->mr;
    if (out->mr > mr_max)
        out->mr = mr_max;
    if (ov->kc)
        out->kc = ov->kc;
    if (ov->mc)
        out->mc = ov->mc;
    if (ov->nc)
        out->nc = ov->nc;
    if (out->path == VX_PATH_PACKED) {
        if (out->mc < out->mr)
            out->mc = out->mr;
        if (out->nc < out->nr)
            out->nc = out->nr;
        out->mc = out->mc / out->mr * out->mr;
        out->nc = out->nc / out->nr * out->nr;
    } else {
        out->mc = ov->mc ? out->mc / out->mr * out->mr : 0;
        out->nc = ov->nc ? (out->nc < out->nr ? out->nr : out->nc / out->nr * out->nr) : 0;
    }
    if (ov->threads_m || ov->threads_n) {
        out->threads_m = ov->threads_m ? ov->threads_m : 1;
        out->threads_n = ov->threads_n ? ov->threads_n : 1;
        out->threads = ov->threads ? ov->threads : out->threads_m * out->threads_n;
    } else if (ov->threads) {
        out->threads = ov->threads;
    }
}

/* The cache key's flags word: strides, ISA, warm pool, thread budget,
 * gathered operands. */
static inline int64_t key_flags(int b_unit, int a_unit, vx_isa isa, int pool_warm, int max_threads, int a_gathered,
                                int b_gathered)
{
    return (b_unit ? 1 : 0) | (a_unit ? 2 : 0) | ((int64_t)isa << 2) | ((int64_t)(pool_warm & 31) << 42) |
           ((int64_t)max_threads << 5) | ((int64_t)(a_gathered != 0) << 40) | ((int64_t)(b_gathered != 0) << 41);
}

/* A leading dimension in a cache key: 0 where it is the dense one, so
 * that a dense call finds the plan whether or not its caller gave it. */
static inline int64_t ld_key(int64_t ld, int64_t dense) { return ld > 0 && ld != dense ? ld : 0; }

/* The cache key of a GEMM shape; `geometry` is vx_shape_geometry_key's
 * word (0 for a plain GEMM). One builder for both lookups, which must
 * agree. */
static inline vx_plan_key gemm_key(int64_t m, int64_t n, int64_t k, int64_t flags, int64_t geometry, int a_unit,
                                   int b_unit, int64_t a_ld, int64_t b_ld, int64_t c_ld)
{
    return (vx_plan_key){ m, n, k, flags, geometry, ld_key(a_ld, vx_dense_a_ld(!a_unit, m, k)),
                          ld_key(b_ld, vx_dense_b_ld(!b_unit, n, k)), ld_key(c_ld, n) };
}

void vx_plan_gemm_plain(int64_t m, int64_t n, int64_t k, int b_unit, int a_unit, int64_t a_ld, int64_t b_ld,
                        int64_t c_ld, int pool_warm, vx_isa isa, int max_threads, vx_gemm_plan *out)
{
    if (max_threads < 1)
        max_threads = 1;
    /* vx_plan_gemm's key for this shape: its geometry word is 0 */
    const vx_plan_key key = gemm_key(m, n, k, key_flags(b_unit, a_unit, isa, pool_warm, max_threads, 0, 0), 0,
                                     a_unit, b_unit, a_ld, b_ld, c_ld);
    if (vx_plan_cache_get(&key, out) && !atomic_load_explicit(&g_have_override, memory_order_acquire))
        return;
    const vx_gemm_shape s = { .m = m, .n = n, .k = k, .b_unit_stride = b_unit, .a_unit_stride = a_unit,
                              .pool_warm = pool_warm, .a_ld = a_ld, .b_ld = b_ld, .c_ld = c_ld };
    vx_plan_gemm(&s, isa, max_threads, out);
}

void vx_plan_gemm(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_gemm_plan *out)
{
    if (max_threads < 1)
        max_threads = 1;
    const vx_plan_key key = gemm_key(s->m, s->n, s->k,
                                     key_flags(s->b_unit_stride, s->a_unit_stride, isa, s->pool_warm, max_threads,
                                               s->a_gathered, s->b_gathered),
                                     vx_shape_geometry_key(s), s->a_unit_stride, s->b_unit_stride, s->a_ld, s->b_ld,
                                     s->c_ld);
    if (!vx_plan_cache_get(&key, out)) {
        vx_priced_plan best;
        vx_gemm_rank(s, isa, max_threads, &best, 1);
        *out = best.plan;
        vx_plan_cache_put(&key, out);
    }
    /* The testing override edits the model's plan (cached like any other,
     * so a forced plan times the call as users get it: a hit, not a
     * search per call). */
    if (atomic_load_explicit(&g_have_override, memory_order_acquire))
        apply_override(s, &g_override, out);
}

int vx_plan_apply_override(const vx_gemm_shape *s, vx_gemm_plan *plan, vx_path *path)
{
    if (!atomic_load_explicit(&g_have_override, memory_order_acquire))
        return 0;
    if (path)
        *path = g_override.path;
    if (plan && plan->path != VX_PATH_CONV_DIRECT)
        apply_override(s, &g_override, plan);
    return 1;
}

int vx_plan_override_via(void)
{
    return atomic_load_explicit(&g_have_override, memory_order_acquire) && g_override.conv_via_nhwc;
}

void vx_plan_set_override(const vx_gemm_plan *o)
{
    if (o) {
        g_override = *o;
        atomic_store_explicit(&g_have_override, 1, memory_order_release);
    } else {
        atomic_store_explicit(&g_have_override, 0, memory_order_release);
        memset(&g_override, 0, sizeof g_override);
    }
}

void vx_plan_describe(const vx_gemm_plan *p, char *buf, int len)
{
    static const char *paths[] = { "auto", "packed", "pack_b", "direct", "conv_direct", "gemv", "dot", "resident" };
    if (p->path == VX_PATH_RESIDENT) {
        snprintf(buf, (size_t)len, "resident %s threads=%d", vx_ukernels(p->isa)->name, p->threads);
        return;
    }
    if (p->path == VX_PATH_GEMV) {
        snprintf(buf, (size_t)len, "gemv %s threads=%d", vx_ukernels(p->isa)->name, p->threads);
        return;
    }
    if (p->path == VX_PATH_DOT) {
        const vx_dot_set *D = vx_dot_kernels(p->isa);
        snprintf(buf, (size_t)len, "dot %s %dx%d kc=%lld mc=%lld threads=%d", vx_ukernels(p->isa)->name, D->mr,
                 D->nr, (long long)p->kc, (long long)p->mc, p->threads);
        return;
    }
    if (p->path == VX_PATH_CONV_DIRECT) {
        snprintf(buf, (size_t)len, "conv_direct %s threads=%d", vx_ukernels(p->isa)->name, p->threads);
        return;
    }
    const char *via = p->conv_via_nhwc ? " via nhwc" : "";
    if (p->path == VX_PATH_PACKED)
        snprintf(buf, (size_t)len, "%s %s %dx%d mc=%lld kc=%lld nc=%lld grid=%dx%d threads=%d%s",
                 paths[p->path & 7], vx_ukernels(p->isa)->name, p->mr, p->nr, (long long)p->mc,
                 (long long)p->kc, (long long)p->nc, p->threads_m, p->threads_n, p->threads, via);
    else
        snprintf(buf, (size_t)len, "%s %s %dx%d kc=%lld grid=%dx%d threads=%d%s", paths[p->path & 7],
                 vx_ukernels(p->isa)->name, p->mr, p->nr, (long long)p->kc, p->threads_m, p->threads_n,
                 p->threads, via);
}
