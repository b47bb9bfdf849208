/* The analyzer: the candidate generator's invariants, the search (pruning
 * never changes the answer, ranked plans are sorted and every one of them
 * computes the right result), and the shared plan cache (hits return what
 * was stored, concurrent first calls on a cold cache agree with the
 * uncached choice, no torn plan is ever read). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/candidates.h"
#include "analyzer/conv_plan.h"
#include "analyzer/cost.h"
#include "analyzer/plancache.h"
#include "analyzer/select.h"
#include "analyzer/wave.h"
#include "cpu/cpu_levels.h"
#include "ref.h"
#include "vt_isa.h"

#define TMO 200.0

/* ------------------------------------------------------------------ */
/* Generator invariants                                                */
/* ------------------------------------------------------------------ */

VT_ISA_TEST(candidates, invariants, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M, "no model for %s", vt_isa_name(vt_isa));
    const vx_device_desc *d = &M->desc;
    const vx_candidates *c = &M->cand;
    cr_assert(c->n0 > 0 && c->n1 > 0 && c->n2 > 0, "empty level: L0 %d, L1 %d, L2 %d", c->n0, c->n1, c->n2);
    cr_assert(c->l0_enumerated >= c->l0_after_regs && c->l0_after_regs >= c->l0_after_measure &&
                  c->l0_after_measure >= c->n0,
              "stage counts must shrink: %d -> %d -> %d -> %d", c->l0_enumerated, c->l0_after_regs,
              c->l0_after_measure, c->n0);
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    for (int i = 0; i < c->n0; i++) {
        const vx_l0_cand *t = &c->l0[i];
        cr_assert(t->fam >= 0 && t->fam < set->nfamilies, "L0 %d: family %d", i, t->fam);
        const vx_l0_family *F = &d->fam[t->fam];
        cr_assert_eq(F->n, set->families[t->fam].nr, "L0 %d: n %d != kernel nr", i, F->n);
        cr_assert(t->m >= 1 && t->m <= set->families[t->fam].mr_max, "L0 %d: m %d past the kernels", i, t->m);
        cr_assert(F->regs_per_m * t->m + F->regs_fixed <= d->reg_limit, "L0 %dx%d needs %d registers > %d",
                  t->m, F->n, F->regs_per_m * t->m + F->regs_fixed, d->reg_limit);
        cr_assert(F->regs_per_m * t->m >= d->acc_min, "L0 %dx%d has too few accumulators", t->m, F->n);
        cr_assert(c->l1_count[i] > 0, "L0 %dx%d has no L1 candidate using it", t->m, F->n);
        for (int j = i + 1; j < c->n0; j++)
            cr_assert(!(c->l0[j].fam == t->fam && c->l0[j].m == t->m), "L0 %dx%d listed twice", t->m, F->n);
    }
    /* The mapping table: L1 candidates grouped by the L0 tile they use, and
     * each one an integer multiple of it that fits its level. */
    int covered = 0;
    for (int i = 0; i < c->n0; i++) {
        cr_assert_eq(c->l1_first[i], covered, "L1 group of L0 %d starts at %d, expected %d", i, c->l1_first[i],
                     covered);
        covered += c->l1_count[i];
    }
    cr_assert_eq(covered, c->n1, "groups cover %d of %d L1 candidates", covered, c->n1);
    for (int i = 0; i < c->n0; i++)
        for (int j = c->l1_first[i]; j < c->l1_first[i] + c->l1_count[i]; j++) {
            const vx_l1_cand *b = &c->l1[j];
            const int64_t m0 = c->l0[i].m, n0 = d->fam[c->l0[i].fam].n, e = d->elem_bytes;
            cr_assert_eq(b->l0, i, "L1 %d maps to L0 %d but sits in group %d", j, b->l0, i);
            cr_assert(b->kc > 0 && b->kc % d->k_step == 0, "L1 %d: kc %d not a multiple of %d", j, b->kc,
                      d->k_step);
            cr_assert((m0 + n0) * b->kc * e <= d->cap_slice, "L1 %d: L0 slices of %lldx%lld at kc %d overflow %lld",
                      j, (long long)m0, (long long)n0, b->kc, (long long)d->cap_slice);
            if (b->mode == VX_LOAD_COPY_AB) {
                cr_assert(b->mc >= m0 && b->mc % m0 == 0, "L1 %d: mc %d not a multiple of m0 %lld", j, b->mc,
                          (long long)m0);
                cr_assert(b->nc >= n0 && b->nc % n0 == 0, "L1 %d: nc %d not a multiple of n0 %lld", j, b->nc,
                          (long long)n0);
                cr_assert((int64_t)b->mc * b->kc * e <= d->cap_a, "L1 %d: A block %dx%d overflows %lld bytes", j,
                          b->mc, b->kc, (long long)d->cap_a);
                cr_assert((int64_t)b->kc * b->nc * e <= d->cap_b, "L1 %d: B block %dx%d overflows %lld bytes", j,
                          b->kc, b->nc, (long long)d->cap_b);
                /* utilisation kept away from the low extreme: at least
                 * half of the smallest fill (rounding down to m0) */
                cr_assert((double)b->mc * b->kc * e >= 0.5 * d->fill_a[0] * (double)d->cap_a - (double)m0 * b->kc * e,
                          "L1 %d: A block %dx%d fills too little of %lld bytes", j, b->mc, b->kc,
                          (long long)d->cap_a);
            } else {
                cr_assert(b->mc == 0 && b->nc == 0, "in-place L1 %d carries blocks %dx%d", j, b->mc, b->nc);
            }
        }
    for (int g = 0; g < c->n2; g++)
        cr_assert(c->l2[g].tm >= 1 && c->l2[g].tn >= 1 && c->l2[g].tm * c->l2[g].tn <= d->units,
                  "L2 grid %dx%d for %d units", c->l2[g].tm, c->l2[g].tn, d->units);
}

/* ------------------------------------------------------------------ */
/* Search                                                              */
/* ------------------------------------------------------------------ */

static const int64_t dims[] = { 1, 3, 16, 17, 31, 64, 97, 128, 255, 513, 1000, 3072 };
enum { NDIMS = sizeof dims / sizeof dims[0], RANK_MAX = 8192 };

/* Branch and bound (max = 1) on `isa` with t units against the exhaustive
 * ranking (written to all): the same cheapest price. `what` names the case
 * in a failure. Returns the ranking's count. */
static int expect_pruning_exact(vx_isa isa, const vx_gemm_shape *s, int t, vx_priced_plan *all, const char *what)
{
    vx_priced_plan one;
    vx_gemm_rank(s, isa, t, &one, 1);
    const int n = vx_gemm_rank(s, isa, t, all, RANK_MAX);
    cr_assert(n >= 1, "%s: nothing ranked", what);
    const double rel = (one.predicted_ns - all[0].predicted_ns) / all[0].predicted_ns;
    char a[160], b[160];
    vx_plan_describe(&one.plan, a, sizeof a);
    vx_plan_describe(&all[0].plan, b, sizeof b);
    cr_assert(rel > -1e-9 && rel < 1e-9,
              "%s (m=%lld n=%lld k=%lld a_seg=%lld a_row=%lld kfrac %.3f/%.3f) t=%d: pruned search chose [%s] "
              "%.1f ns, exhaustive [%s] %.1f ns",
              what, (long long)s->m, (long long)s->n, (long long)s->k, (long long)s->a_seg, (long long)s->a_row,
              s->a_kfrac, s->b_kfrac, t, a, one.predicted_ns, b, all[0].predicted_ns);
    cr_assert(one.predicted_ns > 0, "%s: non-positive prediction %g", what, one.predicted_ns);
    return n;
}

/* Branch and bound (max = 1) must find exactly the cheapest plan of the
 * exhaustive ranking. */
VT_ISA_TEST(search, pruning_keeps_the_best, TMO)
{
    vx_priced_plan *all = malloc(sizeof *all * RANK_MAX);
    cr_assert_not_null(all);
    for (int i = 0; i < NDIMS; i++)
        for (int j = 0; j < NDIMS; j += 2)
            for (int l = 1; l < NDIMS; l += 3)
                for (int t = 1; t <= 2; t++) {
                    vx_gemm_shape s = { .m = dims[i], .n = dims[j], .k = dims[l],
                                        .b_unit_stride = (i + j) % 3 != 0, .a_unit_stride = l % 2 };
                    const int n = expect_pruning_exact(vt_isa, &s, t, all, "gemm");
                    cr_assert(n <= RANK_MAX, "rank returned %d", n);
                    for (int r = 1; r < n && r < RANK_MAX; r++)
                        cr_assert(all[r].predicted_ns >= all[r - 1].predicted_ns,
                                  "ranking not sorted at %d for %lldx%lldx%lld", r, (long long)s.m,
                                  (long long)s.n, (long long)s.k);
                }
    free(all);
}

/* The same for convolutions' views: gathered operands, in-place patches in
 * tap runs and rows with edge tiles change the bounds as well as the prices. */
VT_ISA_TEST(search, pruning_keeps_the_best_for_convolutions, TMO)
{
    static const int64_t cs[][9] = {
        /* layout, n, c, hw, k, rs, stride, pad, groups */
        { VX_NHWC, 1, 64, 56, 64, 3, 1, 1, 1 },   { VX_NHWC, 1, 512, 7, 512, 3, 1, 1, 1 },
        { VX_NHWC, 8, 3, 224, 64, 7, 2, 3, 1 },   { VX_NHWC, 4, 186, 4, 142, 11, 2, 5, 1 },
        { VX_NHWC, 2, 12, 30, 18, 5, 1, 2, 2 },   { VX_NCHW, 1, 64, 56, 64, 3, 1, 1, 1 },
        { VX_NCHW, 7, 532, 14, 84, 3, 1, 1, 1 },  { VX_NCHW, 3, 5, 65, 72, 3, 2, 1, 1 },
        { VX_NHWC, 3, 40, 17, 24, 1, 1, 0, 1 },   { VX_NHWC, 1, 52, 9, 336, 9, 1, 4, 1 },
        { VX_NHWC, 3, 17, 9, 180, 9, 1, 4, 1 },
    };
    vx_priced_plan *all = malloc(sizeof *all * RANK_MAX);
    cr_assert_not_null(all);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int t = 1; t <= 2; t++) {
            const vx_conv2d_params p = { (vx_tensor_layout)cs[i][0], cs[i][1], cs[i][2], cs[i][3], cs[i][3],
                                         cs[i][4], cs[i][5], cs[i][5], cs[i][6], cs[i][6], cs[i][7], cs[i][7],
                                         1, 1, cs[i][8], VX_ACT_NONE };
            vx_conv_view v;
            vx_conv_view_of(&p, &v);
            char what[32];
            snprintf(what, sizeof what, "conv %zu", i);
            expect_pruning_exact(vt_isa, &v.shape, t, all, what);
        }
    free(all);
}

/* A grid's groups join the search only once the search reaches the
 * grid's bound (cost.c, expand_grid): on a copy of this machine's
 * description with eight units (ten grids, most of them beaten before
 * they are worked out), branch and bound still finds the exhaustive
 * ranking's price for every thread budget, plain and transposed. */
VT_ISA_TEST(search, lazy_grids_keep_the_best_on_eight_units, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M);
    vx_device_desc d = M->desc;
    d.units = 8;
    vx_candidates c;
    cr_assert_eq(vx_candidates_build(&d, &c), 0, "candidates for eight units");
    cr_assert(c.n2 >= 10, "%d grids for eight units", c.n2);
    const int all = c.n1 * c.n2;
    vx_choice *ranked = malloc(sizeof *ranked * (size_t)all);
    cr_assert_not_null(ranked);
    static const int64_t mn[] = { 1, 33, 517, 2048 }, ks[] = { 7, 517 }, ts[] = { 1, 2, 3, 8 };
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 2; l++)
                for (int u = 0; u < 4; u++) {
                    const int trans = (i + j + l) % 3 == 0;
                    const vx_problem p = { .m = mn[i], .n = mn[j], .k = ks[l], .a_trans = trans, .b_trans = trans,
                                           .a_in_place_ok = 1, .b_in_place_ok = !trans, .units_warm = 1 };
                    vx_choice one;
                    cr_assert_eq(vx_cost_search(&d, &c, &p, (int)ts[u], &one, 1, NULL), 1);
                    const int got = vx_cost_search(&d, &c, &p, (int)ts[u], ranked, all, NULL);
                    cr_assert(got >= 1, "%lldx%lldx%lld t=%lld: nothing ranked", (long long)p.m, (long long)p.n,
                              (long long)p.k, (long long)ts[u]);
                    const double rel = (one.ns - ranked[0].ns) / ranked[0].ns;
                    cr_assert(rel > -1e-9 && rel < 1e-9,
                              "%lldx%lldx%lld%s t=%lld: the search found %.3f ns (grid %d), the exhaustive ranking "
                              "%.3f (grid %d)",
                              (long long)p.m, (long long)p.n, (long long)p.k, trans ? " transposed" : "",
                              (long long)ts[u], one.ns, one.l2, ranked[0].ns, ranked[0].l2);
                }
    free(ranked);
    vx_candidates_free(&c);
}

/* Band tiles (conv_inplace.c) are priced where a row's pixels read
 * different taps, with the calls they make per filter row against a row of
 * one class: one per tap column whose pixels differ, the interior's merged
 * where a filter row's channels are adjacent (one group, dilation 1). */
Test(conv_view, band_runs_count_the_tap_columns_whose_pixels_differ)
{
    static const struct {
        int64_t c, hw, rs, stride, pad, dil, groups, runs;
    } cs[] = {
        { 52, 9, 9, 1, 4, 1, 1, 9 },  /* every tap column its own pixels */
        { 64, 56, 3, 1, 1, 1, 1, 3 }, /* left edge, interior, right edge */
        { 64, 56, 5, 1, 2, 1, 1, 5 },
        { 8, 14, 3, 2, 1, 1, 1, 2 },  /* stride 2, even width: only the left edge */
        { 8, 13, 3, 2, 1, 1, 1, 3 },  /* ... odd: both */
        { 64, 56, 3, 1, 0, 1, 1, 0 }, /* no padding: one class */
        { 64, 56, 1, 2, 0, 1, 1, 0 }, /* 1x1 stride 2 */
        { 64, 56, 3, 1, 1, 1, 2, 1 }, /* two groups: a call per tap either way */
        { 64, 56, 3, 1, 2, 2, 1, 1 }, /* dilated: likewise */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const vx_conv2d_params p = { VX_NHWC, 1, cs[i].c, cs[i].hw, cs[i].hw, 16, cs[i].rs, cs[i].rs,
                                     cs[i].stride, cs[i].stride, cs[i].pad, cs[i].pad, cs[i].dil, cs[i].dil,
                                     cs[i].groups, VX_ACT_NONE };
        vx_conv_view v;
        vx_conv_view_of(&p, &v);
        cr_expect_eq(v.shape.a_band_runs, cs[i].runs, "case %zu: band runs %lld, expected %lld", i,
                     (long long)v.shape.a_band_runs, (long long)cs[i].runs);
        /* and how many of a row's pixels a tap column reads: 9x9, pad 4: 61 of 81 */
        if (i == 0)
            cr_expect(v.shape.a_band_pixels > 61.0 / 9 - 1e-9 && v.shape.a_band_pixels < 61.0 / 9 + 1e-9,
                      "band pixels %g, expected 61/9", v.shape.a_band_pixels);
    }
}

/* The in-place path's order over a cell (vx_conv_inplace_order): a
 * re-read that stays in half of L2 is free, beyond it the order re-reading
 * fewer bytes wins (blocks of whole rows, or of whole images where two
 * fit), and which operand is smaller breaks a tie. And what a cell's rows
 * read of the input per pixel (vx_conv_pixel_elems). */
Test(conv_view, inplace_cell_order_follows_the_far_rereads)
{
    const double fit = 1 << 20, MB = 1 << 20;
    double far = -1;
    int64_t block = -1;
    /* both fit: the smaller re-read, nothing far */
    cr_expect(vx_conv_inplace_order(0.5 * MB, 0.8 * MB / 700, 700, 7, 7, 49, 4, 8, fit, &block, &far) == VX_CELL_ALL_PANELS &&
              far == 0 && block == 700, "far %g block %lld", far, (long long)block);
    cr_expect(vx_conv_inplace_order(0.8 * MB, 0.5 * MB / 700, 700, 7, 7, 49, 4, 8, fit, &block, &far) ==
                  VX_CELL_PANEL_AT_A_TIME && far == 0);
    /* only the filter fits: all panels first, whatever the sizes */
    cr_expect(vx_conv_inplace_order(0.9 * MB, 1000.0, 200000, 100, 100, 10000, 4, 8, fit, &block, &far) ==
                  VX_CELL_ALL_PANELS && far == 0);
    /* only the input fits: one panel at a time, even with the filter smaller */
    cr_expect(vx_conv_inplace_order(4 * MB, 0.9 * MB / 637, 637, 7, 7, 49, 4, 8, fit, &block, &far) ==
                  VX_CELL_PANEL_AT_A_TIME && far == 0);
    /* neither: ResNet-50's 3x3 stride-2 layer of 512 channels at batch 13,
     * a 1 x 2 cell: 92 row passes over 4.7 MB, or 8 panels over 5.2 MB
     * (its rows have an edge pixel: no blocks) */
    const double filter = 4.0 * 4608 * 256, pixel = 4.0 * 2048, input = pixel * 637;
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 7, 6, 49, 2, 8, fit, &block, &far) == VX_CELL_PANEL_AT_A_TIME);
    cr_expect_float_eq(far, 7 * input, 1e-6 * input, "far %g, expected the input again 7 times", far);
    /* ... the same sizes without edge pixels: blocks of whole images (two
     * of 49 pixels fit: 128 of 8 KiB, cut to 98) pass 7 times over the
     * filter; with 10-row tiles the 7-pixel rows stack across the images
     * and no block holds 10 of them: a panel at a time */
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 7, 7, 49, 10, 8, fit, &block, &far) ==
              VX_CELL_PANEL_AT_A_TIME);
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 7, 7, 49, 2, 8, fit, &block, &far) == VX_CELL_BLOCKS);
    cr_expect_eq(block, 98, "block %lld, expected two whole images", (long long)block);
    cr_expect_float_eq(far, 6 * filter, 1e-6 * filter, "far %g, expected the filter again 6 times", far);
    /* ... 14-pixel rows with 7-row tiles: blocks of whole rows where the
     * row has no edge pixels, none where it has (its interior 12) */
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 14, 14, 196, 7, 8, fit, &block, &far) == VX_CELL_BLOCKS);
    cr_expect_eq(block, 126, "block %lld, expected 9 rows of 14", (long long)block);
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 14, 12, 196, 7, 8, fit, &block, &far) ==
              VX_CELL_PANEL_AT_A_TIME);
    /* ... with rows too long for two in a block (70 pixels: 11 passes over
     * the filter against 7 over the input): the input per panel */
    cr_expect(vx_conv_inplace_order(filter, pixel, 637, 70, 70, 637, 8, 8, fit, &block, &far) ==
              VX_CELL_PANEL_AT_A_TIME);
    cr_expect_float_eq(far, 7 * input, 1e-6 * input, "far %g, expected the input again 7 times", far);
    /* ... and many panels over three rows of pixels too wide to block:
     * the filter re-read per row */
    const double wide = 100.0 * 1024;
    cr_expect(vx_conv_inplace_order(filter, wide, 21, 7, 7, 49, 2, 64, fit, &block, &far) == VX_CELL_ALL_PANELS);
    cr_expect_float_eq(far, 3 * filter, 1e-6 * filter, "far %g, expected the filter again 3 times", far);
    /* a 3x3 stride-2 filter reads all four input pixels under an output
     * pixel, a 1x1 stride-2 one only one of them */
    cr_expect_float_eq(vx_conv_pixel_elems(512, 3, 3, 2, 2), 2048.0, 1e-9);
    cr_expect_float_eq(vx_conv_pixel_elems(1024, 1, 1, 2, 2), 1024.0, 1e-9);
    cr_expect_float_eq(vx_conv_pixel_elems(64, 3, 3, 1, 1), 64.0, 1e-9);
    /* the view carries it for the NHWC in-place path (a group's channels) */
    const vx_conv2d_params p = { VX_NHWC, 13, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 2, VX_ACT_NONE };
    vx_conv_view v;
    vx_conv_view_of(&p, &v);
    cr_expect_float_eq(v.shape.a_pixel_elems, 1024.0, 1e-9, "pixel elements %g", v.shape.a_pixel_elems);
}

/* An integer in [lo, hi], log-uniform. */
static int64_t pick(vt_rng *r, int64_t lo, int64_t hi)
{
    const double u = (double)(vt_rng_next(r) >> 11) * 0x1p-53;
    const int64_t x = (int64_t)(exp(log((double)lo) + u * (log((double)hi + 1) - log((double)lo))));
    return x < lo ? lo : x > hi ? hi : x;
}

/* The bounds must hold for every combination of the view's fields, not
 * only for those real convolutions produce: random sizes (1 .. 10^5),
 * strides, gathers, tap segments, pixel rows with edge tiles, images,
 * padded fractions of k and B packed before the call, on 1 and 2 units
 * with warm and cold pools. */
VT_ISA_TEST(search, pruning_keeps_the_best_for_random_views, TMO)
{
    vx_priced_plan *all = malloc(sizeof *all * RANK_MAX);
    cr_assert_not_null(all);
    vt_rng r;
    vt_rng_seed(&r, 0x5EA2C4);
    for (int i = 0; i < 400; i++) {
        vx_gemm_shape s = { .m = pick(&r, 1, 100000), .n = pick(&r, 1, 20000), .k = pick(&r, 1, 50000),
                            .b_unit_stride = vt_rng_next(&r) % 5 != 0, .a_unit_stride = vt_rng_next(&r) % 5 != 0,
                            .pool_warm = (int)(vt_rng_next(&r) % 2) };
        if (i % 3 == 0) { /* a convolution-like view */
            s.a_gathered = vt_rng_next(&r) % 4 == 0;
            s.a_seg = pick(&r, 1, 512);
            s.a_run = vt_rng_next(&r) % 2 ? pick(&r, 1, 64) : 0;
            s.b_run = vt_rng_next(&r) % 2 ? pick(&r, 1, 64) : 0;
            s.a_row = vt_rng_next(&r) % 2 ? pick(&r, 1, 200) : 0;
            s.a_edge = s.a_row ? (int64_t)(vt_rng_next(&r) % 5) : 0;
            s.a_kfrac = vt_rng_next(&r) % 2 ? (double)(vt_rng_next(&r) >> 11) * 0x1p-53 : 0;
            s.b_kfrac = vt_rng_next(&r) % 2 ? (double)(vt_rng_next(&r) >> 11) * 0x1p-53 : 0;
            s.a_img = s.a_row && vt_rng_next(&r) % 2 ? s.a_row * pick(&r, 1, 60) : 0;
            s.a_edge_rows = s.a_img ? (int64_t)(vt_rng_next(&r) % 5) : 0;
            s.a_band_runs = s.a_row && vt_rng_next(&r) % 2 ? pick(&r, 1, 12) : 0;
            s.a_band_pixels = s.a_band_runs ? 0.5 + (double)(vt_rng_next(&r) % 64) / 4.0 : 0.0;
            s.a_pixel_elems = s.a_row && vt_rng_next(&r) % 2 ? (double)pick(&r, 1, 8192) : 0.0;
        }
        s.b_prepacked = vt_rng_next(&r) % 3 == 0; /* a packed filter's panels, read not copied */
        s.a_prepacked = vt_rng_next(&r) % 3 == 0;
        const int t = 1 + (int)(vt_rng_next(&r) % 2);
        char what[32];
        snprintf(what, sizeof what, "view %d", i);
        expect_pruning_exact(vt_isa, &s, t, all, what);
    }
    free(all);
}

/* Every plan the model can rank runs correctly: force each one on shapes
 * with ragged edges and several k blocks. */
VT_ISA_TEST(search, every_ranked_plan_is_correct, TMO)
{
    static const int64_t shapes[][3] = { { 37, 45, 300 }, { 61, 130, 1030 }, { 5, 200, 77 } };
    vx_priced_plan *all = malloc(sizeof *all * RANK_MAX);
    cr_assert_not_null(all);
    vx_set_num_threads(2);
    int checked = 0;
    for (int s_i = 0; s_i < 3; s_i++) {
        vx_gemm_shape s = { .m = shapes[s_i][0], .n = shapes[s_i][1], .k = shapes[s_i][2],
                            .b_unit_stride = 1, .a_unit_stride = 1 };
        const int n = vx_gemm_rank(&s, vt_isa, 2, all, RANK_MAX);
        /* every plan on the smallest shape, a stride through the others */
        const int step = s_i == 2 ? 1 : 7;
        for (int r = 0; r < n && r < RANK_MAX; r += step) {
            vx_plan_set_override(&all[r].plan);
            char tag[200];
            vx_plan_describe(&all[r].plan, tag, sizeof tag);
            vt_case c = vt_case_make(s.m, s.n, s.k);
            c.beta = r % 2 ? 0.3f : 0.0f;
            c.cinit = r % 2 ? VT_C_RANDOM : VT_C_NAN;
            c.seed = (uint64_t)r * 31 + (uint64_t)s_i;
            c.tag = tag;
            vt_check(&c);
            checked++;
        }
    }
    vx_plan_set_override(NULL);
    free(all);
    cr_assert(checked >= 20, "only %d plans checked", checked);
}

/* The dot form is ranked exactly where both operands run along k (A's
 * rows unit-stride, B's not: B stored transposed), n >= 2 and 2 <= m <= 48
 * row tiles, once, with
 * blocks the driver can run (k blocks of at most dot_kc in multiples of its
 * lanes, row blocks of whole tiles); forced, it computes right. */
VT_ISA_TEST(search, dot_plans_only_for_transposed_b, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M);
    const vx_device_desc *d = &M->desc;
    cr_assert(d->dot_mr >= 1 && d->dot_nr >= 1 && d->dot_vec >= 8 && d->dot_kc >= d->dot_vec &&
                  d->dot_kc % d->dot_vec == 0 && d->dot_rate.p > 0,
              "dot description: %dx%d lanes %d kc %lld rate %g", d->dot_mr, d->dot_nr, d->dot_vec,
              (long long)d->dot_kc, (double)d->dot_rate.p);
    static const int64_t shapes[][3] = { { 2, 2, 1 }, { 4, 3072, 768 }, { 16, 768, 3072 }, { 49, 512, 4608 },
                                         { 1000, 7, 9000 }, { 1, 500, 64 }, { 300, 1, 64 } };
    vx_priced_plan *all = malloc(sizeof *all * RANK_MAX);
    cr_assert_not_null(all);
    vx_set_num_threads(2);
    for (int i = 0; i < 7; i++)
        for (int strides = 0; strides < 4; strides++) {
            const int b_unit = strides & 1, a_unit = strides >> 1;
            vx_gemm_shape s = { .m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2],
                                .b_unit_stride = b_unit, .a_unit_stride = a_unit };
            const int n = vx_gemm_rank(&s, vt_isa, 2, all, RANK_MAX);
            int dots = 0;
            for (int r = 0; r < n && r < RANK_MAX; r++) {
                const vx_gemm_plan *pl = &all[r].plan;
                if (pl->path != VX_PATH_DOT)
                    continue;
                dots++;
                cr_assert(pl->kc >= 1 && pl->kc <= s.k && (pl->kc % d->dot_vec == 0 || pl->kc == s.k) &&
                              pl->kc <= d->dot_kc,
                          "%lldx%lldx%lld: dot kc %lld", (long long)s.m, (long long)s.n, (long long)s.k,
                          (long long)pl->kc);
                cr_assert(pl->mc >= d->dot_mr && pl->mc % d->dot_mr == 0, "%lldx%lldx%lld: dot mc %lld",
                          (long long)s.m, (long long)s.n, (long long)s.k, (long long)pl->mc);
                cr_assert(pl->threads >= 1 && pl->threads <= 2, "dot threads %d", pl->threads);
                cr_assert(pl->fallback != VX_PATH_DOT && pl->fallback != VX_PATH_GEMV && pl->fallback != VX_PATH_AUTO,
                          "dot plan carries fallback %d", (int)pl->fallback);
                if (s.m * s.n * s.k <= 4000000) {
                    vx_plan_set_override(pl);
                    vt_case c = vt_case_make(s.m, s.n, s.k);
                    c.tb = VX_TRANS;
                    c.beta = 0.3f;
                    c.seed = 77u + (uint64_t)i;
                    c.tag = "the ranked dot plan, forced";
                    vt_check(&c);
                    vx_plan_set_override(NULL);
                }
            }
            /* plan.c offers it up to 48 row tiles (DOT_MAX_ROW_TILES) */
            const int want = a_unit && !b_unit && s.m >= 2 && s.m <= 48 * d->dot_mr && s.n >= 2;
            cr_assert_eq(dots, want, "%lldx%lldx%lld a_unit=%d b_unit=%d: %d dot plans ranked, want %d",
                         (long long)s.m, (long long)s.n, (long long)s.k, a_unit, b_unit, dots, want);
        }
    free(all);
}

/* ------------------------------------------------------------------ */
/* Plan cache                                                          */
/* ------------------------------------------------------------------ */

/* A plan to store: zero but for these fields. */
static vx_gemm_plan cache_plan(vx_path path, int family, int mr, int nr)
{
    vx_gemm_plan p;
    memset(&p, 0, sizeof p);
    p.isa = VX_ISA_AVX2;
    p.path = path;
    p.family = family;
    p.mr = mr;
    p.nr = nr;
    return p;
}

Test(plancache, hit_returns_what_was_put_and_clear_forgets)
{
    vx_gemm_plan p = cache_plan(VX_PATH_PACK_B, 1, 5, 16), q;
    p.kc = 264;
    p.threads_m = 2;
    p.threads_n = 1;
    p.threads = 2;
    const vx_plan_key k1 = { 123, 456, 789, 5, 0, 0, 0, 0 }, k2 = { 123, 456, 789, 6, 0, 0, 0, 0 };
    vx_plan_cache_put(&k1, &p);
    cr_assert(vx_plan_cache_get(&k1, &q), "miss right after put");
    cr_assert(memcmp(&p, &q, sizeof p) == 0, "hit returned a different plan");
    cr_assert(!vx_plan_cache_get(&k2, &q), "a key differing in flags hit");
    /* a key differing only in one leading dimension, below 2^21 (packed
     * exactly) and above (hashed) */
    for (int i = 0; i < 6; i++) {
        vx_plan_key kl = k1;
        *(i % 3 == 0 ? &kl.a_ld : i % 3 == 1 ? &kl.b_ld : &kl.c_ld) = i < 3 ? 1000 : 3000000;
        cr_assert(!vx_plan_cache_get(&kl, &q), "a key differing in leading dimension %d hit", i);
        vx_plan_cache_put(&kl, &p);
        cr_assert(vx_plan_cache_get(&kl, &q), "leading dimension %d: miss right after put", i);
        vx_plan_key next = kl;
        (*(i % 3 == 0 ? &next.a_ld : i % 3 == 1 ? &next.b_ld : &next.c_ld))++;
        cr_assert(!vx_plan_cache_get(&next, &q), "leading dimension %d one larger hit", i);
    }
    cr_assert(vx_plan_cache_get(&k1, &q), "keys apart only in a leading dimension took the dense key's slot");
    vx_plan_cache_clear();
    cr_assert(!vx_plan_cache_get(&k1, &q), "hit after clear");
}

/* Field by field: plans copied through different paths differ in their
 * padding bytes. */
static int same_plan(const vx_gemm_plan *a, const vx_gemm_plan *b)
{
    return a->isa == b->isa && a->path == b->path && a->family == b->family && a->mr == b->mr && a->nr == b->nr &&
           a->mc == b->mc && a->kc == b->kc && a->nc == b->nc && a->threads_m == b->threads_m &&
           a->threads_n == b->threads_n && a->threads == b->threads && a->fallback == b->fallback &&
           a->conv_via_nhwc == b->conv_via_nhwc;
}

/* Two convolutions whose implicit GEMMs agree in m, n and k but not in
 * their geometry must each get their own plan, whichever was planned first
 * (one cache slot once served both). NHWC: 49 x 512 x 4608, one 7x7 output
 * of 512 3x3 filters from a 7x7 input at stride 1 or a 14x14 one at stride
 * 2 (their padded taps differ). NCHW: ResNet-50's stage-4 3x3 layers at
 * batch 32, 32 items of 256 x 196 x 2304 from a 14x14 map at stride 1 or a
 * 28x28 one at stride 2: their views differ only in the gather's runs,
 * which the cache once shifted out of its key, and the NHWC views they may
 * run as differ more. */
VT_ISA_TEST(plancache, conv_views_equal_in_size_are_planned_apart, TMO)
{
    for (int layout = 0; layout < 2; layout++) {
        vx_conv2d_params p[2];
        vx_conv_view v[2];
        vx_gemm_plan fresh[2];
        for (int i = 0; i < 2; i++) {
            p[i] = layout == 0 ? (vx_conv2d_params){ .layout = VX_NHWC, .n = 1, .c = 512, .h = 7 << i, .w = 7 << i,
                                                     .k = 512, .r = 3, .s = 3, .stride_h = 1 + i, .stride_w = 1 + i,
                                                     .pad_h = 1, .pad_w = 1, .dilation_h = 1, .dilation_w = 1,
                                                     .groups = 1 }
                               : (vx_conv2d_params){ .layout = VX_NCHW, .n = 32, .c = 256, .h = 14 << i, .w = 14 << i,
                                                     .k = 256, .r = 3, .s = 3, .stride_h = 1 + i, .stride_w = 1 + i,
                                                     .pad_h = 1, .pad_w = 1, .dilation_h = 1, .dilation_w = 1,
                                                     .groups = 1 };
            vx_conv_view_of(&p[i], &v[i]);
            vx_priced_plan r;
            cr_assert_eq(vx_conv_rank(&p[i], &v[i], vt_isa, 2, 1, &r, 1), 1);
            fresh[i] = r.plan;
        }
        cr_assert(v[0].m == v[1].m && v[0].n == v[1].n && v[0].k == v[1].k && v[0].items == v[1].items,
                  "layout %d: the views differ in size", layout);
        cr_assert_neq(vx_shape_geometry_key(&v[0].shape), vx_shape_geometry_key(&v[1].shape),
                      "layout %d: different geometry, one geometry key", layout);
        for (int first = 0; first < 2; first++) {
            vx_plan_cache_clear();
            vx_gemm_plan got[2];
            vx_plan_conv(&p[first], &v[first], vt_isa, 2, 1, &got[first]);
            vx_plan_conv(&p[!first], &v[!first], vt_isa, 2, 1, &got[!first]);
            for (int i = 0; i < 2; i++)
                cr_assert(same_plan(&got[i], &fresh[i]),
                          "layout %d: conv %d planned after conv %d got another plan than on its own", layout, i,
                          first);
        }
    }
    vx_plan_cache_clear();
}

/* The cache keeps every bit of a key: keys apart only in the top bits of
 * items (where a GEMM shape's geometry goes) or of a leading-dimension
 * word (where a convolution's does) do not hit each other. */
Test(plancache, keys_apart_only_in_their_top_bits_miss)
{
    vx_gemm_plan p = cache_plan(VX_PATH_PACKED, 0, 6, 16), q;
    vx_plan_cache_clear();
    const int64_t tops[] = { 0, (int64_t)1 << 47, (int64_t)1 << 52, (int64_t)1 << 61, (int64_t)1 << 62 };
    for (int field = 0; field < 2; field++)
        for (int i = 0; i < 5; i++) {
            vx_plan_key k = { 49, 512, 4608, 7, 1, 0, 0, 0 };
            *(field == 0 ? &k.items : &k.a_ld) |= tops[i];
            p.kc = 100 + i;
            vx_plan_cache_put(&k, &p);
            for (int j = 0; j < i; j++) {
                vx_plan_key o = { 49, 512, 4608, 7, 1, 0, 0, 0 };
                *(field == 0 ? &o.items : &o.a_ld) |= tops[j];
                if (vx_plan_cache_get(&o, &q))
                    cr_assert_eq(q.kc, 100 + j, "field %d: key with top bit %d served the plan of top bit %d",
                                 field, j, i);
            }
            cr_assert(vx_plan_cache_get(&k, &q) && q.kc == 100 + i, "field %d, key %d: miss right after put",
                      field, i);
        }
    vx_plan_cache_clear();
}

enum { CONC_THREADS = 8, CONC_SHAPES = 300 };
static vx_gemm_plan g_expect[CONC_SHAPES];
static vx_isa g_isa;
static pthread_barrier_t g_bar;

static vx_gemm_shape conc_shape(int i)
{
    return (vx_gemm_shape){ .m = 1 + (i * 37) % 900, .n = 1 + (i * 53) % 1100, .k = 1 + (i * 71) % 700,
                            .b_unit_stride = i % 3 != 0, .a_unit_stride = i % 2 };
}

static void *conc_worker(void *arg)
{
    const int id = (int)(intptr_t)arg;
    long bad = 0;
    pthread_barrier_wait(&g_bar);
    for (int rep = 0; rep < 3; rep++)
        for (int j = 0; j < CONC_SHAPES; j++) {
            const int i = (j + id * 17) % CONC_SHAPES;
            const vx_gemm_shape s = conc_shape(i);
            vx_gemm_plan p;
            vx_plan_gemm(&s, g_isa, 2, &p);
            if (memcmp(&p, &g_expect[i], sizeof p) != 0)
                bad++;
        }
    return (void *)bad;
}

/* Eight threads plan the same 300 shapes at once on a cold cache (and then
 * again, hitting it while others overwrite colliding slots): every plan must
 * equal the one the model chooses without the cache. */
VT_ISA_TEST(plancache, concurrent_first_calls, TMO)
{
    g_isa = vt_isa;
    for (int i = 0; i < CONC_SHAPES; i++) {
        const vx_gemm_shape s = conc_shape(i);
        vx_priced_plan r;
        vx_gemm_rank(&s, vt_isa, 2, &r, 1);
        g_expect[i] = r.plan;
    }
    vx_plan_cache_clear();
    pthread_t th[CONC_THREADS];
    pthread_barrier_init(&g_bar, NULL, CONC_THREADS);
    for (int t = 0; t < CONC_THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, conc_worker, (void *)(intptr_t)t), 0);
    long bad = 0;
    for (int t = 0; t < CONC_THREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        bad += (long)r;
    }
    pthread_barrier_destroy(&g_bar);
    cr_assert_eq(bad, 0, "%ld of %d concurrent plans differed from the uncached choice", bad,
                 CONC_THREADS * 3 * CONC_SHAPES);
}

/* ---- copies from far memory ---- */

/* The candidates' 1x1 grid (one cell on one unit), or -1. */
static int one_cell_grid(const vx_candidates *c)
{
    for (int g = 0; g < c->n2; g++)
        if (c->l2[g].tm == 1 && c->l2[g].tn == 1)
            return g;
    return -1;
}

/* Price of plan (l1, l2) for an m x 16 x 16 GEMM under desc d whose A is
 * gathered (a convolution's patches: copied whatever its strides). */
static double copy_ab_price(const vx_device_desc *d, const vx_candidates *c, int64_t m, int l1, int l2)
{
    const vx_problem p = {.m = m, .n = 16, .k = 16, .b_in_place_ok = 1, .a_in_place_ok = 0};
    return vx_cost_price(d, c, &p, l1, l2);
}

/* A copied from beyond the second level costs its read from there plus the
 * copy (the register transposes do not overlap the far reads; NOTES.md,
 * 232965x16x16), so a slower in-cache copy rate raises the price even when
 * the read alone is slower; from within the first level the copy runs at
 * the slower of the two and a copy rate below the read changes nothing. */
VT_ISA_TEST(cost, far_a_copy_pays_read_and_copy, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M);
    const vx_candidates *c = &M->cand;
    int l1 = -1;
    const int l2 = one_cell_grid(c);
    for (int j = 0; j < c->n1 && l1 < 0; j++)
        if (c->l1[j].mode == VX_LOAD_COPY_AB)
            l1 = j;
    cr_assert(l1 >= 0 && l2 >= 0, "no copying candidate (%d) or 1x1 grid (%d)", l1, l2);
    vx_device_desc lo = M->desc, hi = M->desc;
    /* copy rates far below any read: the read decides under the max */
    lo.copy_ns[0][0] = 1e-4;
    hi.copy_ns[0][0] = 2e-4;
    const int64_t far_m = 4 * (M->desc.mem[M->desc.nmem - 2].bytes / (16 * M->desc.elem_bytes)) + 7;
    const double far_lo = copy_ab_price(&lo, c, far_m, l1, l2), far_hi = copy_ab_price(&hi, c, far_m, l1, l2);
    cr_assert(far_lo > 0 && far_hi > far_lo, "A of %lld x 16 beyond L2: copy rate x2 moved the price %g -> %g ns",
              (long long)far_m, far_lo, far_hi);
    const double near_lo = copy_ab_price(&lo, c, 8, l1, l2), near_hi = copy_ab_price(&hi, c, 8, l1, l2);
    cr_assert(near_lo > 0 && near_hi == near_lo, "A of 8 x 16 in L1: copy rate x2 moved the price %g -> %g ns",
              near_lo, near_hi);
}

/* The packed path reads a plain matrix A with unit-stride rows in place
 * for tiles of at most VX_PACKED_A_IN_PLACE_MAX_ROWS rows (gemm.c,
 * reads_a_in_place) and copies a transposed or gathered one, or A under a
 * taller tile: the copy rate of A's rows moves only those prices. K = 520
 * puts A's rows 2080 bytes apart, which no cache aliases. */
VT_ISA_TEST(cost, packed_path_copies_only_transposed_gathered_or_tall_a, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M);
    const vx_candidates *c = &M->cand;
    int l1 = -1, l1_tall = -1;
    const int l2 = one_cell_grid(c);
    for (int j = 0; j < c->n1; j++) {
        const int rows = c->l0[c->l1[j].l0].m;
        if (c->l1[j].mode != VX_LOAD_COPY_AB || rows < 2)
            continue;
        if (l1 < 0 && rows <= VX_PACKED_A_IN_PLACE_MAX_ROWS)
            l1 = j;
        if (l1_tall < 0 && rows > VX_PACKED_A_IN_PLACE_MAX_ROWS)
            l1_tall = j;
    }
    cr_assert(l1 >= 0 && l2 >= 0, "no copying candidate (%d) or 1x1 grid (%d)", l1, l2);
    vx_device_desc lo = M->desc, hi = M->desc;
    for (int t = 0; t < 2; t++) {
        lo.copy_ns[0][t] = 0.5;
        hi.copy_ns[0][t] = 5.0;
    }
    const vx_problem plain = {.m = 512, .n = 512, .k = 520, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_problem trans = plain, gathered = plain;
    trans.a_trans = 1;
    gathered.a_in_place_ok = 0;
    const double p_lo = vx_cost_price(&lo, c, &plain, l1, l2), p_hi = vx_cost_price(&hi, c, &plain, l1, l2);
    cr_assert(p_lo > 0 && p_hi == p_lo, "plain A: copy rate x10 moved the packed price %g -> %g ns", p_lo, p_hi);
    const double t_lo = vx_cost_price(&lo, c, &trans, l1, l2), t_hi = vx_cost_price(&hi, c, &trans, l1, l2);
    cr_assert(t_lo > 0 && t_hi > t_lo, "transposed A: copy rate x10 left the packed price at %g -> %g ns", t_lo,
              t_hi);
    const double g_lo = vx_cost_price(&lo, c, &gathered, l1, l2), g_hi = vx_cost_price(&hi, c, &gathered, l1, l2);
    cr_assert(g_lo > 0 && g_hi > g_lo, "gathered A: copy rate x10 left the packed price at %g -> %g ns", g_lo,
              g_hi);
    if (l1_tall >= 0) { /* AVX-512 has tiles of 15..30 rows (16 wide); AVX2's stop at 14 */
        const double h_lo = vx_cost_price(&lo, c, &plain, l1_tall, l2), h_hi = vx_cost_price(&hi, c, &plain, l1_tall, l2);
        cr_assert(h_lo > 0 && h_hi > h_lo, "%d-row tile: copy rate x10 left the packed price at %g -> %g ns",
                  c->l0[c->l1[l1_tall].l0].m, h_lo, h_hi);
    }
}

/* The rows a cache holds at once a stride apart, and the packed path's
 * in-place rule on top: a 48 KiB 12-way L1 of 64-byte lines (4 KiB a way)
 * holds 12 rows 4 or 8 KiB apart, 48 rows 3 KiB apart, 768 rows 64 bytes
 * apart; 12 rows at 4 KiB are read in place, 13 are not. */
Test(cost, rows_held_and_a_in_place_rule)
{
    cr_assert_eq(vx_rows_held(4096, 12, 4096, 64), 12);
    cr_assert_eq(vx_rows_held(8192, 12, 4096, 64), 12);
    cr_assert_eq(vx_rows_held(3072, 12, 4096, 64), 48);
    cr_assert_eq(vx_rows_held(64, 12, 4096, 64), 768);
    cr_assert_eq(vx_rows_held(4, 12, 4096, 64), 768, "rows closer than a line share it: one set per line");
    cr_assert_eq(vx_rows_held(4096, 0, 4096, 64), 0, "unknown geometry holds nothing");
    cr_assert(vx_packed_a_in_place_ok(12, 1024, 4096, 12, 4096, 64));
    cr_assert(!vx_packed_a_in_place_ok(13, 1024, 4096, 12, 4096, 64));
    cr_assert(vx_packed_a_in_place_ok(14, 768, 3072, 12, 4096, 64));
    cr_assert(!vx_packed_a_in_place_ok(VX_PACKED_A_IN_PLACE_MAX_ROWS + 1, 768, 3072, 12, 4096, 64));
    cr_assert(!vx_packed_a_in_place_ok(1, 1024, 4096, 0, 0, 0), "unknown geometry: A is copied");
    cr_assert(vx_packed_a_in_place_ok(6, VX_PACKED_A_IN_PLACE_MIN_K, 2080, 12, 4096, 64));
    cr_assert(!vx_packed_a_in_place_ok(6, VX_PACKED_A_IN_PLACE_MIN_K - 1, 2080, 12, 4096, 64),
              "short k: A is copied");
}

/* The caller's lda, not k, bounds the tiles that read A in place: with A's
 * rows three L1 ways apart (every row in the same sets) no direct or
 * pack-B plan the model ranks is taller than the rows those sets hold,
 * while the same shape with a dense A (rows k apart, spread over the sets)
 * ranks taller ones. A wider ldb or ldc changes no tile rule here, and the
 * dense leading dimensions given explicitly price exactly as none. */
VT_ISA_TEST(cost, leading_dimension_bounds_in_place_tiles, TMO)
{
    const vx_cpu_model *M = vx_cpu_model_get(vt_isa);
    cr_assert_not_null(M);
    const vx_mem_level *L1 = &M->desc.mem[0];
    if (L1->ways <= 0 || L1->way_bytes <= 0)
        cr_skip_test("skipped: this CPU's L1 geometry is unknown, so no stride aliases in the model");
    const int64_t e = M->desc.elem_bytes, k = 768;
    const int64_t lda = 3 * L1->way_bytes / e; /* rows three ways apart */
    const int64_t limit = vx_in_place_a_rows_max(e * lda, L1->ways, L1->way_bytes, L1->line);
    enum { MAX = 4096 };
    vx_priced_plan *r = malloc(sizeof *r * MAX);
    cr_assert_not_null(r);
    const vx_gemm_shape dense = { .m = 80, .n = 192, .k = k, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_gemm_shape wide = dense;
    wide.a_ld = lda;
    int n = vx_gemm_rank(&wide, vt_isa, 2, r, MAX);
    cr_assert(n > 0 && n < MAX, "%d plans ranked", n);
    int in_place = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].plan.path != VX_PATH_DIRECT && r[i].plan.path != VX_PATH_PACK_B)
            continue;
        in_place++;
        cr_assert(r[i].plan.mr <= limit, "lda %lld: plan %d reads %d rows of A in place, the sets hold %lld",
                  (long long)lda, i, r[i].plan.mr, (long long)limit);
    }
    cr_assert(in_place > 0, "no in-place plan left to check");
    n = vx_gemm_rank(&dense, vt_isa, 2, r, MAX);
    int taller = 0;
    for (int i = 0; i < n; i++)
        taller |= (r[i].plan.path == VX_PATH_DIRECT || r[i].plan.path == VX_PATH_PACK_B) && r[i].plan.mr > limit;
    cr_assert(taller, "dense A (rows %lld bytes apart): no in-place tile taller than %lld ranked",
              (long long)(e * k), (long long)limit);
    /* the dense leading dimensions, given, rank the same plans at the same prices */
    vx_gemm_shape given = dense;
    given.a_ld = k;
    given.b_ld = given.c_ld = dense.n;
    vx_priced_plan *q = malloc(sizeof *q * MAX);
    cr_assert_not_null(q);
    const int nq = vx_gemm_rank(&given, vt_isa, 2, q, MAX);
    cr_assert_eq(nq, n);
    for (int i = 0; i < n; i++)
        cr_assert(vx_plan_same(&q[i].plan, &r[i].plan) && q[i].predicted_ns == r[i].predicted_ns,
                  "plan %d differs with the dense leading dimensions given", i);
    free(q);
    free(r);
}

/* Candidates for a copy of this machine's description with two units (so
 * the 1x2 grid exists whatever the cores), and the first candidate of a
 * load mode and the grid tm x tn in them. */
static void two_unit_model(vx_isa isa, vx_device_desc *d, vx_candidates *c)
{
    const vx_cpu_model *M = vx_cpu_model_get(isa);
    cr_assert_not_null(M);
    *d = M->desc;
    d->units = 2;
    /* the in-place stream terms the tests below check, priced in full (a
     * tuning file's measured overlap would scale them down), and the copies
     * priced as the model has them (not scaled by a measured packed probe) */
    d->inplace_overlap = 0;
    d->packed_extra = 0;
    cr_assert_eq(vx_candidates_build(d, c), 0, "candidates for two units");
}


/* Whether candidate j's tile may read A in place whatever A's stride
 * (cost.h, vx_in_place_a_rows_max over rows a way apart, the worst);
 * copying both, any tile. */
static int rows_fit_any_stride(const vx_device_desc *d, const vx_candidates *c, int j)
{
    const vx_mem_level *L1 = &d->mem[0];
    return c->l1[j].mode == VX_LOAD_COPY_AB ||
           c->l0[c->l1[j].l0].m <= vx_in_place_a_rows_max(L1->way_bytes, L1->ways, L1->way_bytes, L1->line);
}

static int first_of_mode(const vx_device_desc *d, const vx_candidates *c, int mode)
{
    for (int j = 0; j < c->n1; j++)
        if (c->l1[j].mode == mode && rows_fit_any_stride(d, c, j))
            return j;
    cr_assert_fail("no candidate of load mode %d", mode);
    return -1;
}

static int grid_of(const vx_candidates *c, int tm, int tn)
{
    for (int g = 0; g < c->n2; g++)
        if (c->l2[g].tm == tm && c->l2[g].tn == tn)
            return g;
    cr_assert_fail("no %dx%d grid", tm, tn);
    return -1;
}

/* The measured cost of copying: a plain packed plan's price beyond its
 * kernels scales by 1 + packed_extra (a convolution's gathered operands
 * keep theirs), and the calibration inverts it: a probe time priced at
 * extra 0.5 gives back a scale of 1.5; faster than priced gives 1, never
 * less (the search's bounds assume prices only rise). */
VT_ISA_TEST(cost, packed_extra_scales_the_copies_and_calibrates, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    d.packed_extra = 0;
    const int g11 = grid_of(&c, 1, 1);
    int l1 = -1;
    for (int j = 0; j < c.n1 && l1 < 0; j++)
        if (c.l1[j].mode == VX_LOAD_COPY_AB && vx_cost_kc(c.l1[j].kc, 384) == 384 && c.l1[j].mc >= 80)
            l1 = j;
    cr_assert(l1 >= 0, "a packed candidate with kc = 384");
    const int fam = c.l0[c.l1[l1].l0].fam, m = c.l0[c.l1[l1].l0].m;
    const vx_problem p = {.m = 80, .n = 2304 / d.fam[fam].n * d.fam[fam].n, .k = 384, .b_in_place_ok = 1,
                          .a_in_place_ok = 1};
    vx_device_desc e = d;
    e.packed_extra = 0.5;
    const double base = vx_cost_price(&d, &c, &p, l1, g11), more = vx_cost_price(&e, &c, &p, l1, g11);
    cr_assert(more > base, "extra 0.5 left the packed price at %g -> %g ns", base, more);
    vx_problem conv = p;
    conv.a_run = 64;
    cr_assert_float_eq(vx_cost_price(&e, &c, &conv, l1, g11), vx_cost_price(&d, &c, &conv, l1, g11), 1e-6,
                       "a gathered A keeps its price");
    cr_assert_float_eq(vx_cost_packed_scale(&d, fam, m, 80, 2304, 384, 0), 1.0, 1e-12, "not measured: 1");
    cr_assert_float_eq(vx_cost_packed_scale(&d, fam, m, 80, 2304, 384, 1.0), 1.0, 1e-12, "faster than priced: 1");
    /* the probe's own plan: mc = 80 rounded to the tile, nc = n, kc = k, one unit */
    const vx_problem probe = {.m = 80, .n = 2304 / d.fam[fam].n * d.fam[fam].n, .k = 384, .b_in_place_ok = 1,
                              .a_in_place_ok = 1};
    int lp = -1;
    for (int j = 0; j < c.n1 && lp < 0; j++)
        if (c.l1[j].mode == VX_LOAD_COPY_AB && c.l1[j].l0 == c.l1[l1].l0 && vx_cost_kc(c.l1[j].kc, 384) == 384 &&
            c.l1[j].mc >= (80 + m - 1) / m * m && c.l1[j].nc >= probe.n)
            lp = j;
    if (lp >= 0) {
        vx_device_desc one = e;
        one.units = 1;
        const double t = vx_cost_price(&one, &c, &probe, lp, g11) - one.call_ns - one.mode_ns[VX_LOAD_COPY_AB];
        const double s = vx_cost_packed_scale(&d, fam, m, 80, 2304, 384, t);
        cr_assert_float_eq(s, 1.5, 0.02, "calibrated scale %g from a run priced at 1.5", s);
    }
    vx_candidates_free(&c);
}

/* Cells side by side share the line under their boundary when it is not a
 * line boundary: a 1x2 grid over 19200x108x20 pays up to one transfer per
 * row (per k block), less the row's own work; a 2x1 grid and a 1x2 grid
 * over 19200x128x20 (64-float cells, 512-byte rows) nothing. */
VT_ISA_TEST(cost, cells_side_by_side_pay_for_shared_lines, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    int l1 = -1;
    for (int j = 0; j < c.n1 && l1 < 0; j++)
        if (c.l1[j].mode == VX_LOAD_COPY_B && d.fam[c.l0[c.l1[j].l0].fam].n == 64 / d.elem_bytes * 4)
            l1 = j;
    if (l1 < 0)
        l1 = first_of_mode(&d, &c, VX_LOAD_COPY_B);
    const int g12 = grid_of(&c, 1, 2), g21 = grid_of(&c, 2, 1);
    const int n0 = d.fam[c.l0[c.l1[l1].l0].fam].n;
    vx_device_desc none = d;
    none.line_share_ns = 0;
    d.line_share_ns = 100;
    const vx_problem odd = {.m = 19200, .n = 2 * n0 - 3, .k = 20, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem even = {.m = 19200, .n = 2 * n0, .k = 20, .b_in_place_ok = 1, .a_in_place_ok = 1};
    /* a transfer stalls only for what the row's own work does not cover
     * (cost.c, price_cell): 19200 short rows pay most of one per row, at
     * most all of it; rows of long work (8 panels a cell, k = 512) pay none */
    const double shared = vx_cost_price(&d, &c, &odd, l1, g12) - vx_cost_price(&none, &c, &odd, l1, g12);
    cr_assert(shared > 0.3 * 100.0 * 19200 && shared <= 100.0 * 19200 + 1.0,
              "19200 rows x %d, 1x2: %g ns for the shared lines, want (0.3 .. 1] x %g", (int)odd.n, shared,
              100.0 * 19200);
    const vx_problem long_rows = {.m = 19200, .n = 16 * n0 - 3, .k = 512, .b_in_place_ok = 1, .a_in_place_ok = 1};
    cr_assert_float_eq(vx_cost_price(&d, &c, &long_rows, l1, g12), vx_cost_price(&none, &c, &long_rows, l1, g12), 1e-6,
                       "rows of long work hide the transfers");
    cr_assert_float_eq(vx_cost_price(&d, &c, &odd, l1, g21), vx_cost_price(&none, &c, &odd, l1, g21), 1e-6,
                       "a 2x1 grid shares no column boundary");
    if ((n0 * d.elem_bytes) % 64 == 0)
        cr_assert_float_eq(vx_cost_price(&d, &c, &even, l1, g12), vx_cost_price(&none, &c, &even, l1, g12), 1e-6,
                           "cells of whole lines share none");
    vx_candidates_free(&c);
}

/* A C past the caches (stream_c_min) makes in-place plans walk row blocks
 * outer (gemm.c, run_streamed): a cell of several column tiles then reads
 * its A block once from home and re-reads it from L1, and meets no line of
 * C twice, so it prices below the same cell walked column tile by column
 * tile; a cell of one column tile walks the same way either way (whether
 * it streams is stream_one_tile_k_max's; gemm.c, streams_c) and prices the
 * same. A far A (200000 rows) and a core window of one operation a step
 * put the first pass's wait on every plan alike. */
VT_ISA_TEST(cost, streaming_c_walks_row_blocks_outer, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert_geq(d.stream_one_tile_k_max, 0, "the CPU backend bounds k for one-tile cells");
    d.a_step_ops = 1;
    const int l1 = first_of_mode(&d, &c, VX_LOAD_COPY_B), g21 = grid_of(&c, 2, 1);
    const int n0 = d.fam[c.l0[c.l1[l1].l0].fam].n;
    const struct {
        int64_t n, k, k_max;
    } cases[] = { { n0, 16, 32 }, { n0, 64, 32 }, { n0, 16, 0 }, { 2 * n0, 64, 32 }, { 2 * n0, 16, 0 },
                  { 3 * n0 + 1, 8, -1 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const vx_problem p = {.m = 200000, .n = cases[i].n, .k = cases[i].k, .b_in_place_ok = 1,
                              .a_in_place_ok = 1};
        d.stream_one_tile_k_max = cases[i].k_max;
        vx_device_desc on = d, off = d;
        on.stream_c_min = 1;
        off.stream_c_min = 0;
        const double streamed = vx_cost_price(&on, &c, &p, l1, g21), plain = vx_cost_price(&off, &c, &p, l1, g21);
        cr_assert(streamed > 0 && plain > 0, "n %lld k %lld: not priced (%g, %g)", (long long)p.n, (long long)p.k,
                  streamed, plain);
        if (p.n > n0)
            cr_assert(streamed < plain,
                      "n %lld (tiles %d wide) k %lld: the row-block walk should price below %g, found %g",
                      (long long)p.n, n0, (long long)p.k, plain, streamed);
        else
            cr_assert_float_eq(streamed, plain, 1e-9 * plain,
                               "n %lld (one tile) k %lld: one walk either way, priced %g against %g",
                               (long long)p.n, (long long)p.k, streamed, plain);
    }
    /* ... so two column tiles cost at most twice one: A's first pass is
     * shared and C's lines are met once (priced as met again, 132534x128x8
     * took a 1 x 2 grid that ran 1.4-1.6x the time of the 2 x 1) */
    d.stream_one_tile_k_max = 32;
    d.stream_c_min = 1;
    const vx_problem one = {.m = 200000, .n = n0, .k = 8, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_problem two = one;
    two.n = 2 * n0;
    const double p1 = vx_cost_price(&d, &c, &one, l1, g21), p2 = vx_cost_price(&d, &c, &two, l1, g21);
    cr_assert(p2 <= 2.0 * p1, "k 8, streamed: two column tiles priced %g, over twice one (%g)", p2, p1);
}

/* The measured overlap of in-place streams: a plain in-place plan costs
 * less with it, never less than reading B once from home; a convolution's
 * segmented A keeps the full price; and the calibration inverts the price:
 * a probe time priced at stall s gives back s. */
VT_ISA_TEST(cost, inplace_overlap_scales_the_streams_and_calibrates, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_NONE), g11 = grid_of(&c, 1, 1);
    const vx_problem p = {.m = 16, .n = 2304, .k = 384, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double full = vx_cost_price(&d, &c, &p, l1, g11);
    vx_device_desc o = d;
    o.inplace_overlap = 0.8;
    const double part = vx_cost_price(&o, &c, &p, l1, g11);
    o.inplace_overlap = 1.0;
    const double none = vx_cost_price(&o, &c, &p, l1, g11);
    cr_assert(full > part && part > none, "full %g, 80 %% overlapped %g, all %g", full, part, none);
    /* B (3.5 MB) lives in L2 or beyond, none faster than L2 */
    cr_assert(none >= d.elem_bytes * (double)p.n * (double)p.k / d.mem[1].bw,
              "all overlapped %g ns must still read B once", none);
    vx_problem conv = p;
    conv.a_seg = 128;
    o.inplace_overlap = 0.8;
    cr_assert_float_eq(vx_cost_price(&o, &c, &conv, l1, g11), vx_cost_price(&d, &c, &conv, l1, g11), 1e-6,
                       "a segmented A keeps the full price");
    /* the calibration: price the probe's run on one unit at stall 0.3 */
    const int fam = c.l0[c.l1[l1].l0].fam, m = c.l0[c.l1[l1].l0].m;
    const vx_problem probe = {.m = 2 * m, .n = 2304 / d.fam[fam].n * d.fam[fam].n, .k = 384,
                              .b_in_place_ok = 1, .a_in_place_ok = 1};
    int l1p = -1;
    for (int j = 0; j < c.n1 && l1p < 0; j++)
        if (c.l1[j].mode == VX_LOAD_NONE && c.l1[j].l0 == c.l1[l1].l0 && vx_cost_kc(c.l1[j].kc, 384) == 384)
            l1p = j;
    if (l1p < 0) {
        vx_candidates_free(&c);
        return; /* no candidate with this k block: the price check above stands */
    }
    /* the probe's extra time at stall 0.3: the price at overlap 0.7 minus
     * the price with everything overlapped */
    vx_device_desc e = d;
    e.units = 1;
    e.inplace_overlap = 1.0;
    const double all = vx_cost_price(&e, &c, &probe, l1p, g11);
    e.inplace_overlap = 0.7;
    const double t = vx_cost_price(&e, &c, &probe, l1p, g11) - all;
    const double s = vx_cost_inplace_stall(&d, fam, m, 2304, 384, t);
    cr_assert_float_eq(s, 0.3, 0.02, "calibrated stall %g from a run priced at 0.3", s);
    cr_assert_float_eq(vx_cost_inplace_stall(&d, fam, m, 2304, 384, 0), 1.0, 1e-12, "not measured: full price");
    vx_candidates_free(&c);
}

/* The model view of a convolution (plan.c's problem_of, for the fields
 * the in-place path's price reads). */
static vx_problem conv_problem(const vx_conv2d_params *cp)
{
    vx_conv_view v;
    vx_conv_view_of(cp, &v);
    const vx_gemm_shape *s = &v.shape;
    return (vx_problem){ .m = v.m, .n = v.n, .k = v.k, .b_trans = 1, .a_in_place_ok = 1, .a_seg = s->a_seg,
                         .a_run = s->a_run, .a_row = s->a_row, .a_edge = s->a_edge, .a_img = s->a_img,
                         .a_edge_rows = s->a_edge_rows, .a_pitch = s->a_pitch, .a_kfrac = s->a_kfrac,
                         .b_kfrac = s->b_kfrac, .a_band_runs = s->a_band_runs,
                         .a_band_pixels = s->a_band_pixels, .a_pixel_elems = s->a_pixel_elems };
}

/* A convolution's in-place plan pays what its cells re-read from beyond L2
 * (cost.c, conv_far_ns: the order vx_conv_inplace_order picks; and
 * conv_panel_ns: filter panels larger than the second level): with the
 * levels past L2 made slow, ResNet-50's 3x3 stride-2 layer of 512
 * channels at batch 13 on a 1 x 2 grid (4.7 MB of filter and 5.2 MB of
 * input a cell) costs more than without the input's size, and at least
 * what the order re-reads at the far levels' rate; a layer whose filter
 * and input both stay in L2 costs the same either way. */
VT_ISA_TEST(cost, conv_in_place_pays_its_far_rereads, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "a level beyond L2");
    for (int i = 2; i < d.nmem; i++)
        d.mem[i].bw = 0.5; /* bytes per ns */
    d.bw_shared = 1.0;
    const int l1 = first_of_mode(&d, &c, VX_LOAD_COPY_B), g12 = grid_of(&c, 1, 2);
    const vx_conv2d_params big = { VX_NHWC, 13, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, VX_ACT_NONE };
    vx_problem p = conv_problem(&big);
    cr_assert(p.a_pixel_elems > 0);
    const int64_t wide = d.fam[c.l0[c.l1[l1].l0].fam].n, panels = ((p.n + wide - 1) / wide + 1) / 2;
    int64_t block;
    double far;
    const int order = vx_conv_inplace_order(4.0 * (double)(panels * wide * p.k), 4.0 * p.a_pixel_elems, p.m,
                                            p.a_row, p.a_row - p.a_edge, p.a_img, c.l0[c.l1[l1].l0].m, (double)panels,
                                            (double)d.mem[1].bytes, &block, &far);
    cr_assert(far > 0, "order %d re-reads nothing far", order);
    const double with = vx_cost_price(&d, &c, &p, l1, g12);
    p.a_pixel_elems = 0;
    const double without = vx_cost_price(&d, &c, &p, l1, g12);
    /* the re-reads run beside the kernels (in the max with them): the
     * price holds them whole, and more than without them */
    cr_assert(with >= far / 0.5 * 0.999 && with > without, "priced %g ns with the far re-reads (order %d), %g "
              "without: expected at least %g", with, order, without, far / 0.5);
    const vx_conv2d_params small = { VX_NHWC, 1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, VX_ACT_NONE };
    vx_problem q = conv_problem(&small);
    const double fits = vx_cost_price(&d, &c, &q, l1, g12);
    q.a_pixel_elems = 0;
    cr_assert_float_eq(fits, vx_cost_price(&d, &c, &q, l1, g12), 1e-9 * fits,
                       "a cell within L2 re-reads nothing far");
    /* every tile of pixels walks each of its panels (all of k in use, n0
     * wide) whole: 2048 channels with 7x7 filters make panels past L2, read
     * from the slow levels once per tile */
    const vx_conv2d_params deep = { VX_NHWC, 1, 2048, 16, 16, 102, 7, 7, 1, 1, 3, 3, 1, 1, 1, VX_ACT_NONE };
    const vx_problem r = conv_problem(&deep);
    const int g11 = grid_of(&c, 1, 1), m0 = c.l0[c.l1[l1].l0].m, n0 = d.fam[c.l0[c.l1[l1].l0].fam].n;
    const double used = r.a_kfrac > 0 ? r.a_kfrac : 1.0, panel = 4.0 * (double)r.k * used * n0;
    cr_assert(panel > (double)d.mem[1].bytes, "a %g-byte panel within the second level", panel);
    const double tiles = (double)((r.m + m0 - 1) / m0), cols = (double)((r.n + n0 - 1) / n0);
    const double walks = vx_cost_price(&d, &c, &r, l1, g11);
    cr_assert(walks >= tiles * cols * panel / 0.5, "priced %g ns; %g tiles x %g panels of %g bytes at 0.5 bytes/ns "
              "take %g", walks, tiles, cols, panel, tiles * cols * panel / 0.5);
    vx_candidates_free(&c);
}

/* Where a cell re-reads its input one filter panel after another
 * (VX_CELL_PANEL_AT_A_TIME), the re-reads are the tiles' rows read in
 * place and stall the kernels (cost.c, conv_far_ns): the price holds them
 * on top of the kernels' time, at the strided rate where the far level
 * reads faster, not under it. ResNet-50's c3 3x3 stride-2 layer at batch 8
 * on a 2 x 1 grid (every cell all of the filter's panels), the far levels
 * made fast and the strided rate slow, the second level a quarter MiB. */
VT_ISA_TEST(cost, conv_input_rereads_per_panel_stall_the_kernels, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "a level beyond L2");
    d.mem[1].bytes = 256 * 1024;
    for (int i = 2; i < d.nmem; i++)
        d.mem[i].bw = 1000.0; /* bytes per ns */
    d.bw_shared = 2000.0;
    d.bw_strided = 2.0;
    const int g21 = grid_of(&c, 2, 1);
    const vx_conv2d_params cp = { VX_NHWC, 8, 128, 56, 56, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, VX_ACT_NONE };
    vx_problem p = conv_problem(&cp);
    cr_assert(p.a_pixel_elems > 0);
    int l1 = -1;
    double far = 0;
    for (int j = 0; j < c.n1 && l1 < 0; j++) {
        if (c.l1[j].mode != VX_LOAD_COPY_B || !rows_fit_any_stride(&d, &c, j))
            continue;
        const int m0 = c.l0[c.l1[j].l0].m;
        const int64_t n0 = d.fam[c.l0[c.l1[j].l0].fam].n, panels = (p.n + n0 - 1) / n0;
        const int64_t tiles = (p.m + m0 - 1) / m0, m_c = (tiles + 1) / 2 * m0; /* the 2 x 1 grid's cell */
        int64_t block;
        if (vx_conv_inplace_order(4.0 * (double)(panels * n0 * p.k), 4.0 * p.a_pixel_elems, m_c, p.a_row,
                                  p.a_row - p.a_edge, p.a_img, m0, (double)panels, (double)d.mem[1].bytes, &block,
                                  &far) == VX_CELL_PANEL_AT_A_TIME &&
            far > 0)
            l1 = j;
    }
    cr_assert(l1 >= 0, "no in-place candidate re-reads its cell's input per panel");
    const double with = vx_cost_price(&d, &c, &p, l1, g21);
    p.a_pixel_elems = 0;
    const double without = vx_cost_price(&d, &c, &p, l1, g21);
    cr_assert(with - without >= far / d.bw_strided * 0.999,
              "priced %g ns with the input's re-reads, %g without: %g bytes at the strided %g bytes/ns stall %g",
              with, without, far, d.bw_strided, far / d.bw_strided);
    vx_candidates_free(&c);
}

/* A tile of one or two rows waits for all of an in-place B's stream from
 * beyond the second level (cost.c, inplace_stall_rows): priced so whatever
 * the measured overlap; three rows, or a B within the second level, keep
 * the overlap. */
VT_ISA_TEST(cost, one_and_two_row_tiles_wait_for_a_far_b, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_NONE), g11 = grid_of(&c, 1, 1);
    const int64_t n = 2304, k_far = 2 * d.mem[1].bytes / (d.elem_bytes * n) + 1, k_near = 16;
    const vx_problem far1 = {.m = 1, .n = n, .k = k_far, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_problem far2 = far1, far3 = far1, near1 = far1;
    far2.m = 2;
    far3.m = 3;
    near1.k = k_near;
    vx_device_desc o = d;
    o.inplace_overlap = 0.9;
    d.inplace_overlap = 0.0;
    cr_assert_float_eq(vx_cost_price(&o, &c, &far1, l1, g11), vx_cost_price(&d, &c, &far1, l1, g11), 1e-6,
                       "one row over B beyond L2: the whole stream, overlap or not");
    if (c.l0[c.l1[l1].l0].m >= 2)
        cr_assert_float_eq(vx_cost_price(&o, &c, &far2, l1, g11), vx_cost_price(&d, &c, &far2, l1, g11), 1e-6,
                           "two rows over B beyond L2: the whole stream, overlap or not");
    if (c.l0[c.l1[l1].l0].m >= 3)
        cr_assert(vx_cost_price(&o, &c, &far3, l1, g11) < vx_cost_price(&d, &c, &far3, l1, g11),
                  "three rows keep the measured overlap");
    cr_assert(vx_cost_price(&o, &c, &near1, l1, g11) < vx_cost_price(&d, &c, &near1, l1, g11),
              "one row over B within L2 keeps the measured overlap");
    vx_candidates_free(&c);
}

/* Row cells side by side each walk all of an in-place B's first pass from
 * beyond the second level at once, and wait for it whole (cost.c,
 * price_cell_body): the measured overlap moves only the re-reads of their
 * panels. One cell of 80 rows over B of 768 x 2304 floats, alone (1 x 1
 * over 80 rows) and as one of two row cells (2 x 1 over 160): what the
 * overlap takes off the price, with it against without, is smaller for the
 * row cell by its first pass. */
VT_ISA_TEST(cost, row_cells_wait_for_a_far_b_first_pass, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_NONE), g11 = grid_of(&c, 1, 1), g21 = grid_of(&c, 2, 1);
    const int64_t n = 2304, k = 768;
    cr_assert((double)d.elem_bytes * n * k > 2.0 * (double)d.mem[1].bytes, "B within the second level");
    const vx_problem alone = {.m = 80, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_problem rows = alone;
    rows.m = 160;
    vx_device_desc o = d;
    o.inplace_overlap = 1.0;
    const double taken_alone = vx_cost_price(&d, &c, &alone, l1, g11) - vx_cost_price(&o, &c, &alone, l1, g11);
    const double taken_rows = vx_cost_price(&d, &c, &rows, l1, g21) - vx_cost_price(&o, &c, &rows, l1, g21);
    cr_assert(taken_rows > 0, "the row cell's re-reads keep the overlap: %g ns taken off", taken_rows);
    cr_assert(taken_alone - taken_rows > 0.02 * taken_alone,
              "the overlap took %g ns off one cell alone and %g off a row cell beside another: expected the row "
              "cell's first pass of B to stay",
              taken_alone, taken_rows);
    vx_candidates_free(&c);
}

/* A unit reads its share of B (its grid column's columns), which lives
 * where that share fits (3x768x768 on 2 Zen 1 cores: B of 2.4 MiB in L3, not
 * DRAM, once each unit reads half; NOTES.md). B one and a half times the
 * capacity of the level before the last: read in place by two units side
 * by side (1x2) it streams from that level, whose bandwidth then moves the
 * price; by one unit (1x1) it comes from the last level, and does not. */
VT_ISA_TEST(cost, operand_lives_where_each_units_share_fits, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_NONE), g12 = grid_of(&c, 1, 2), g11 = grid_of(&c, 1, 1);
    const int lv = d.nmem - 2; /* the level before the last */
    cr_assert(lv >= 1, "%d memory levels", d.nmem);
    /* at most 16 MiB: B one and a half times the 120 MiB an Intel Xeon
     * guest counts on (half its 240 MiB share of a 480 MiB L3) has rows
     * 32 KiB apart, which no level keeps: their strided rate, not the
     * level's, then prices it */
    if (d.mem[lv].bytes > ((int64_t)16 << 20))
        d.mem[lv].bytes = (int64_t)16 << 20;
    /* and the levels keep far-apart rows in half their ways, whatever a
     * tune's alias probe measured: an Intel Xeon guest's tunes read 2-6 of
     * L2's 16 ways, and at 2 no level kept the 4 KiB-apart rows of
     * 1x1024x6144's B, whose strided rate then priced it (this test failed
     * on a fresh clone's tune) */
    for (int i = 0; i < d.nmem; i++)
        d.mem[i].alias_ways = 0;
    /* wide enough that A's one row fits the first level (a 32 MB L3 would
     * otherwise make it 48 KiB) */
    int64_t n = 256;
    while (d.elem_bytes * (3 * d.mem[lv].bytes / (2 * d.elem_bytes * n)) > d.mem[0].bytes)
        n *= 2;
    const int64_t k = 3 * d.mem[lv].bytes / (2 * d.elem_bytes * n);
    cr_assert(d.elem_bytes * k <= d.mem[0].bytes, "A of 1 x %lld must stay in the first level", (long long)k);
    const vx_problem p = {.m = 1, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_device_desc fast = d;
    fast.mem[lv].bw = 2 * d.mem[lv].bw;
    const double split = vx_cost_price(&d, &c, &p, l1, g12), split_fast = vx_cost_price(&fast, &c, &p, l1, g12);
    const double one = vx_cost_price(&d, &c, &p, l1, g11), one_fast = vx_cost_price(&fast, &c, &p, l1, g11);
    vx_candidates_free(&c);
    cr_assert(split > 0 && split_fast < split, "1x%lldx%lld on 1x2: B's halves in %s, yet its bandwidth x2 moved "
              "the price %g -> %g ns", (long long)n, (long long)k, d.mem[lv].name, split, split_fast);
    cr_assert(one > 0 && one_fast == one, "1x%lldx%lld on 1x1: B beyond %s, yet its bandwidth x2 moved the price "
              "%g -> %g ns", (long long)n, (long long)k, d.mem[lv].name, one, one_fast);
}

/* B copied one n0-wide panel at a time from the last level pays the
 * measured narrow-panel rate whatever its rows' stride (1-16 KiB rows copy
 * alike from DRAM, 2x the plain read; NOTES.md), also for rows less than a
 * page apart; from a level that holds B such rows copy at the plain rate. */
VT_ISA_TEST(cost, narrow_copies_from_the_last_level_pay_the_narrow_rate, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_COPY_B), g11 = grid_of(&c, 1, 1);
    const int64_t n = 768; /* rows 3 KiB apart: less than a page */
    cr_assert(d.elem_bytes * n < d.page_bytes, "rows of %lld must be less than a page apart", (long long)n);
    const int64_t k_far = 4 * d.mem[d.nmem - 2].bytes / (d.elem_bytes * n) + 1, k_near = 16;
    const vx_problem far = {.m = 3, .n = n, .k = k_far, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem near = {.m = 3, .n = n, .k = k_near, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_device_desc slow = d;
    slow.copy_b_narrow_ns[1] = 10.0 * (d.copy_b_narrow_ns[1] + d.copy_ns[1][0] + 1.0);
    slow.copy_b_narrow_ns[0] = 10.0 * (d.copy_b_narrow_ns[0] + d.copy_ns[1][0] + 1.0);
    const double f = vx_cost_price(&d, &c, &far, l1, g11), f_slow = vx_cost_price(&slow, &c, &far, l1, g11);
    const double e = vx_cost_price(&d, &c, &near, l1, g11), e_slow = vx_cost_price(&slow, &c, &near, l1, g11);
    vx_candidates_free(&c);
    cr_assert(f > 0 && f_slow > f, "3x%lldx%lld (B in the last level): narrow rate x10 left the price at %g -> %g ns",
              (long long)n, (long long)k_far, f, f_slow);
    cr_assert(e > 0 && e_slow == e, "3x%lldx%lld (B in cache): narrow rate x10 moved the price %g -> %g ns",
              (long long)n, (long long)k_near, e, e_slow);
}

/* The first candidate reading both operands in place whose k block is kc
 * (then every k that is a multiple of kc runs whole blocks of it) and
 * whose tile is at least min_bytes wide. */
static int in_place_with_kc(const vx_device_desc *d, const vx_candidates *c, int kc, int min_bytes)
{
    for (int j = 0; j < c->n1; j++)
        if (c->l1[j].mode == VX_LOAD_NONE && c->l1[j].kc == kc && rows_fit_any_stride(d, c, j) &&
            d->elem_bytes * d->fam[c->l0[c->l1[j].l0].fam].n >= min_bytes)
            return j;
    cr_assert_fail("no in-place candidate with kc = %d, %d bytes wide", kc, min_bytes);
    return -1;
}

/* The caches' set geometry, as a 32 KiB 8-way L1 and a 512 KiB 8-way L2
 * with 64-byte lines (Zen 1), or none known; the TLB's unknown. */
static void set_geometry(vx_device_desc *d, int known)
{
    for (int i = 0; i < d->nmem; i++)
        d->mem[i].ways = d->mem[i].line = 0, d->mem[i].way_bytes = 0;
    /* Zen 1's capacities too (half of each, as describe() counts them): the
     * expectations below are worked out for them, whatever the host has */
    d->mem[0].bytes = 16 * 1024;
    d->mem[1].bytes = 256 * 1024;
    if (d->nmem >= 4) /* an L3: the guest's 4 MiB share of it */
        d->mem[2].bytes = 2 * 1024 * 1024;
    d->tlb_sets = d->tlb_ways = 0; /* the TLB's too (k_blocks_beyond_the_tlbs_sets...) */
    if (!known)
        return;
    d->mem[0] = (vx_mem_level){ d->mem[0].name, d->mem[0].bytes, d->mem[0].bw, 8, 64, 4096, 0 };
    d->mem[1] = (vx_mem_level){ d->mem[1].name, d->mem[1].bytes, d->mem[1].bw, 8, 64, 65536, 0 };
}

/* B read in place with rows a page or more apart: a panel re-read by the
 * later row tiles comes from the first level whose sets keep its rows,
 * else from the last cache. 256 rows 9 KiB apart (2304 floats) start in
 * 64 of L2's 1024 sets, and 4 ways of each keep them: cheaper than the
 * last cache the model assumes without the geometry (16x2304x768 on 2
 * Zen 1 cores: in place 1.15 ms, the packed plan it lost to 1.66;
 * NOTES.md). Rows 8 KiB apart start in 8 sets, which keep only 32: the
 * geometry changes nothing there. */
VT_ISA_TEST(cost, far_apart_rows_reread_from_the_level_whose_sets_keep_them, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "%d memory levels", d.nmem);
    const int l1 = in_place_with_kc(&d, &c, 256, 64), g11 = grid_of(&c, 1, 1); /* a line wide */
    const int m0 = c.l0[c.l1[l1].l0].m;
    vx_device_desc known = d, unknown = d;
    set_geometry(&known, 1);
    set_geometry(&unknown, 0);
    const vx_problem p9 = {.m = 3 * m0, .n = 2304, .k = 768, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem p8 = {.m = 3 * m0, .n = 2048, .k = 768, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double k9 = vx_cost_price(&known, &c, &p9, l1, g11), u9 = vx_cost_price(&unknown, &c, &p9, l1, g11);
    const double k8 = vx_cost_price(&known, &c, &p8, l1, g11), u8 = vx_cost_price(&unknown, &c, &p8, l1, g11);
    vx_candidates_free(&c);
    /* the two re-reads of B (2 x 2304 x 768 floats) at L2's rate instead of
     * the last cache's (none without a third cache level: L2 is the last) */
    const double last = d.mem[d.nmem - 2].bw;
    const double saved = 2.0 * d.elem_bytes * 2304 * 768 * (1.0 / last - 1.0 / d.mem[1].bw);
    cr_assert(d.nmem == 3 || last < d.mem[1].bw, "the last cache's rate %g must be below L2's %g", last,
              d.mem[1].bw);
    cr_assert(k9 > 0 && fabs(u9 - k9 - saved) <= 0.01 * saved,
              "%dx2304x768, rows 9 KiB apart: the sets keep the panel, so %g ns should come off %g (got %g)",
              3 * m0, saved, u9, k9);
    cr_assert(k8 > 0 && k8 == u8, "%dx2048x768, rows 8 KiB apart: no level keeps them, yet the geometry moved "
              "the price %g -> %g ns", 3 * m0, u8, k8);
}

/* ... and where the tune measured fewer ways keeping such rows (levels.h,
 * alias_ways: the alias probe), the count is those: at 2 of L2's 8 ways the
 * 256 rows 9 KiB apart (64 set positions) no longer stay, and the
 * re-reads cost what they cost with no geometry known; at 4 (half, the
 * count without the probe) the price is the same as without it. */
VT_ISA_TEST(cost, far_apart_rows_kept_in_the_ways_the_tune_measured, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "%d memory levels", d.nmem);
    const int l1 = in_place_with_kc(&d, &c, 256, 64), g11 = grid_of(&c, 1, 1);
    const int m0 = c.l0[c.l1[l1].l0].m;
    vx_device_desc known = d, unknown = d, two = d, four = d;
    set_geometry(&known, 1);
    set_geometry(&unknown, 0);
    set_geometry(&two, 1);
    set_geometry(&four, 1);
    two.mem[1].alias_ways = 2;
    four.mem[1].alias_ways = 4;
    const vx_problem p9 = {.m = 3 * m0, .n = 2304, .k = 768, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double k9 = vx_cost_price(&known, &c, &p9, l1, g11), u9 = vx_cost_price(&unknown, &c, &p9, l1, g11);
    const double t9 = vx_cost_price(&two, &c, &p9, l1, g11), f9 = vx_cost_price(&four, &c, &p9, l1, g11);
    vx_candidates_free(&c);
    cr_assert(k9 > 0 && u9 > k9, "%dx2304x768: the geometry should make the re-reads cheaper (%g, %g ns)", 3 * m0,
              u9, k9);
    cr_assert(t9 == u9, "%dx2304x768, 2 ways kept: expected the price without the geometry, %g ns, found %g", 3 * m0,
              u9, t9);
    cr_assert(f9 == k9, "%dx2304x768, 4 ways kept (half of 8): expected the price %g ns, found %g", 3 * m0, k9, f9);
}

/* The first pass over B's far-apart rows, from a cache, streams at the
 * home level's rate whether or not some level's sets keep a k block's rows
 * (the kernels fetch B 16 rows ahead): 6x1294x356 on 2 Zen 1 cores, priced
 * 150 us in place at the strided rate, ran 104; 16x3072x768 (rows 12 KiB
 * apart, which no level keeps) priced so took kc = 128 on 2 Zen 4 cores
 * and ran 376-400 us against 348 for kc = 768 (NOTES.md). The measured
 * strided-stream rate stays for B in the last level. One row tile, so
 * only the first pass differs. */
VT_ISA_TEST(cost, far_apart_rows_from_a_cache_stream_at_its_rate, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "%d memory levels", d.nmem);
    const int l1 = in_place_with_kc(&d, &c, 256, 64), g11 = grid_of(&c, 1, 1);
    const int m0 = c.l0[c.l1[l1].l0].m, lv = d.nmem - 2;
    /* B (up to 3 MiB) lives in the level before the last, which reads twice
     * as fast as the last and faster than the strided stream */
    d.mem[lv].bytes = (int64_t)64 << 20;
    d.mem[lv].bw = 2.0 * d.mem[d.nmem - 1].bw * d.units;
    d.bw_stride_stream = d.mem[d.nmem - 1].bw / 4;
    set_geometry(&d, 1);
    vx_device_desc slower = d; /* the strided stream half as fast */
    slower.bw_stride_stream = d.bw_stride_stream / 2;
    /* rows 5 KiB apart, which L1's and L2's sets keep; 8 KiB apart, which
     * no level keeps */
    const vx_problem p5 = {.m = m0, .n = 1294, .k = 256, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem p8 = {.m = m0, .n = 2048, .k = 256, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double a5 = vx_cost_price(&d, &c, &p5, l1, g11), s5 = vx_cost_price(&slower, &c, &p5, l1, g11);
    const double a8 = vx_cost_price(&d, &c, &p8, l1, g11), s8 = vx_cost_price(&slower, &c, &p8, l1, g11);
    /* the same rows with B in the last level */
    vx_device_desc far = d, far_slower = slower;
    far.mem[lv].bytes = far_slower.mem[lv].bytes = 4096;
    const double af = vx_cost_price(&far, &c, &p8, l1, g11), sf = vx_cost_price(&far_slower, &c, &p8, l1, g11);
    vx_candidates_free(&c);
    cr_assert(a5 > 0 && a5 == s5, "%dx1294x256, B in a cache, rows its levels keep: the strided rate moved the "
              "price %g -> %g ns", m0, a5, s5);
    cr_assert(a8 > 0 && a8 == s8, "%dx2048x256, B in a cache, rows no level keeps: the strided rate moved the "
              "price %g -> %g ns", m0, a8, s8);
    cr_assert(af > 0 && sf > af, "%dx2048x256, B in the last level: a strided stream half as fast should cost "
              "more than %g ns (got %g)", m0, af, sf);
}

/* Panels narrower than a line share each line with the next panel; when
 * no level keeps a k block's lines until then, every panel fetches them
 * whole again (13x4096x4096 on 2 Zen 1 cores: the 8-wide tile read in place
 * ran 20.8 ms, the 16-wide one 13.1; NOTES.md). The same one-row-tile plan
 * costs more when the line is twice the panel's width than when it is as
 * wide. */
VT_ISA_TEST(cost, narrow_in_place_panels_fetch_whole_lines, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = in_place_with_kc(&d, &c, 256, 0), g11 = grid_of(&c, 1, 1);
    const int m0 = c.l0[c.l1[l1].l0].m, piece = d.elem_bytes * d.fam[c.l0[c.l1[l1].l0].fam].n;
    /* the first pass at the strided-stream rate, slower than any level (as
     * measured on Zen 1: a tuning file whose one-unit DRAM share read
     * slower priced that pass at the DRAM rate instead, and this test
     * failed on it) */
    d.bw_stride_stream = d.mem[d.nmem - 1].bw / 4;
    vx_device_desc as_wide = d, twice = d;
    set_geometry(&as_wide, 0);
    set_geometry(&twice, 0);
    as_wide.mem[0].line = piece;
    twice.mem[0].line = 2 * piece;
    /* B in the last level, whose first pass takes the strided rate */
    as_wide.mem[d.nmem - 2].bytes = twice.mem[d.nmem - 2].bytes = 4096;
    const vx_problem p = {.m = m0, .n = 4096, .k = 768, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double w = vx_cost_price(&as_wide, &c, &p, l1, g11), t = vx_cost_price(&twice, &c, &p, l1, g11);
    vx_candidates_free(&c);
    const double first = d.elem_bytes * 4096.0 * 768.0 / d.bw_stride_stream; /* B's first pass, ns */
    cr_assert(w > 0 && t - w > 0.99 * first && t - w < 1.01 * first,
              "%dx4096x768 in place, %d-byte panels: lines of twice their width should add the first pass again "
              "(%g ns) to %g (got %g)", m0, piece, first, w, t);
}

/* B copied from the last level pays the read and the copy, as A does from
 * beyond L2 (16x2304x768 on 2 Zen 1 cores: each unit's B copied in 0.6 ms,
 * priced 0.31 as the slower of the two; NOTES.md): a copy rate below the
 * read still moves the price. From a cache the slower of the two counts. */
VT_ISA_TEST(cost, b_copied_from_the_last_level_pays_read_and_copy, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int l1 = first_of_mode(&d, &c, VX_LOAD_COPY_AB), g11 = grid_of(&c, 1, 1);
    const int64_t n = 256, k_far = 4 * d.mem[d.nmem - 2].bytes / (d.elem_bytes * n) + 64, k_near = 16;
    const vx_problem far = {.m = 4, .n = n, .k = k_far, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem near = {.m = 4, .n = n, .k = k_near, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_device_desc lo = d, hi = d;
    lo.copy_ns[1][0] = 1e-4;
    hi.copy_ns[1][0] = 2e-4;
    const double f_lo = vx_cost_price(&lo, &c, &far, l1, g11), f_hi = vx_cost_price(&hi, &c, &far, l1, g11);
    const double e_lo = vx_cost_price(&lo, &c, &near, l1, g11), e_hi = vx_cost_price(&hi, &c, &near, l1, g11);
    vx_candidates_free(&c);
    const double delta = 1e-4 * (double)n * (double)k_far; /* B copied once */
    cr_assert(f_lo > 0 && f_hi - f_lo > 0.99 * delta && f_hi - f_lo < 1.01 * delta,
              "4x%lldx%lld, B in the last level: copy rate +1e-4 ns should add %g ns to %g (got %g)",
              (long long)n, (long long)k_far, delta, f_lo, f_hi);
    cr_assert(e_lo > 0 && e_hi == e_lo, "4x%lldx%lld, B in cache: a copy rate below the read moved the price "
              "%g -> %g ns", (long long)n, (long long)k_near, e_lo, e_hi);
}

/* Each row of a k block read in place holds a TLB entry while the block is
 * walked; rows 16 KiB apart (4 pages) fall in a quarter of a 256-set TLB's
 * sets, whose 5 ways (all but one of 6) keep 320 of them. A k block of 512
 * such rows from DRAM runs at the measured TLB-missing rate (4x4096x4096
 * on 2 Zen 1 cores: 9.3 ms against 5.8 with kc = 256 and 5.7 with 128;
 * NOTES.md); one of 128 or 256 rows does not, nor do 512 rows 9 KiB apart,
 * whose pages spread over every set. */
VT_ISA_TEST(cost, k_blocks_beyond_the_tlbs_sets_pay_the_tlb_rate, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int tall = in_place_with_kc(&d, &c, 512, 0), short_ = in_place_with_kc(&d, &c, 128, 0);
    const int mid = in_place_with_kc(&d, &c, 256, 0);
    const int g11 = grid_of(&c, 1, 1);
    d.tlb_sets = 256;
    d.tlb_ways = 6;
    d.page_bytes = 4096;
    const int64_t n16 = 4096, n9 = 2304;
    /* B beyond the last cache level, k a multiple of 512 */
    const int64_t k = (4 * d.mem[d.nmem - 2].bytes / (d.elem_bytes * n9) / 512 + 1) * 512;
    const vx_problem p16 = {.m = 4, .n = n16, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem p9 = {.m = 4, .n = n9, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_device_desc slow = d, fast = d;
    slow.bw_stride_tlb = 0.01;
    fast.bw_stride_tlb = 1000.0;
    const double t_slow = vx_cost_price(&slow, &c, &p16, tall, g11), t_fast = vx_cost_price(&fast, &c, &p16, tall, g11);
    const double s_slow = vx_cost_price(&slow, &c, &p16, short_, g11), s_fast = vx_cost_price(&fast, &c, &p16, short_, g11);
    const double n_slow = vx_cost_price(&slow, &c, &p9, tall, g11), n_fast = vx_cost_price(&fast, &c, &p9, tall, g11);
    const double m_slow = vx_cost_price(&slow, &c, &p16, mid, g11), m_fast = vx_cost_price(&fast, &c, &p16, mid, g11);
    vx_candidates_free(&c);
    cr_assert(t_fast > 0 && t_slow > 2 * t_fast, "4x%lldx%lld, kc = 512, rows 16 KiB apart: the TLB-missing rate "
              "/ 1e5 left the price at %g -> %g ns", (long long)n16, (long long)k, t_fast, t_slow);
    cr_assert(s_fast > 0 && s_slow == s_fast, "kc = 128, rows 16 KiB apart: the TLB-missing rate moved the price "
              "%g -> %g ns", s_fast, s_slow);
    cr_assert(n_fast > 0 && n_slow == n_fast, "kc = 512, rows 9 KiB apart: the TLB-missing rate moved the price "
              "%g -> %g ns", n_fast, n_slow);
    cr_assert(m_fast > 0 && m_slow == m_fast, "kc = 256, rows 16 KiB apart (no more than 5 ways keep): the "
              "TLB-missing rate moved the price %g -> %g ns", m_fast, m_slow);
}

/* A's k block read in place is re-read by every column tile after the
 * first; from the second level, a block of at most 6 row tiles at least
 * two lines wide streams under the FMAs as B's stream does (only the
 * measured in-place share counts: none here, all overlapped), while a
 * taller or narrower block is waited for whole (16x3072x768 on 2 AMD Zen 4
 * cores ran kc = 768, A's block in L2, at 339 us against kc = 128's 408,
 * A's block in L1; the one-line-wide AVX2 tiles lost with the share;
 * NOTES.md, twenty-sixth session). A tile of one vector a row as wide as a
 * line (AVX-512's 16-wide ones) streams a block of up to 3 row tiles
 * (thirty-eighth session). The second level's rate moves only the prices
 * of the blocks that do not stream, by their re-reads. */
VT_ISA_TEST(cost, a_blocks_of_few_row_tiles_reread_from_l2_stream, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "%d memory levels", d.nmem);
    const int l1 = in_place_with_kc(&d, &c, 512, 2 * 64), g11 = grid_of(&c, 1, 1);
    const int m0 = c.l0[c.l1[l1].l0].m, n0 = d.fam[c.l0[c.l1[l1].l0].fam].n;
    int narrow = -1; /* an in-place tile one line wide or less */
    for (int j = 0; j < c.n1 && narrow < 0; j++)
        if (c.l1[j].mode == VX_LOAD_NONE && c.l1[j].kc == 512 && d.elem_bytes * d.fam[c.l0[c.l1[j].l0].fam].n <= 64)
            narrow = j;
    cr_assert(narrow >= 0, "no in-place tile one line wide with kc = 512");
    const int m1 = c.l0[c.l1[narrow].l0].m, n1 = d.fam[c.l0[c.l1[narrow].l0].fam].n;
    d.inplace_overlap = 1.0; /* B's stream, and the few tiles' A re-reads, all under the FMAs */
    /* the levels beyond the second as fast as it: B's home then reads no
     * slower than the second level, so tiles of one or two rows keep the
     * overlap too (cost.c, inplace_stall_rows: they wait for a B from
     * further out whole) */
    for (int i = 2; i < d.nmem; i++)
        d.mem[i].bw = d.mem[1].bw;
    d.bw_shared = 4 * d.mem[1].bw; /* the last level's share a unit gets: no slower either */
    /* A's 512-deep block of 7 row tiles within the second level's share,
     * A itself (all of k) and B beyond it */
    const int mm = m0 > m1 ? m0 : m1;
    d.mem[0].bytes = (int64_t)d.elem_bytes * (m0 < m1 ? m0 : m1) * 64;
    d.mem[1].bytes = (int64_t)d.elem_bytes * 8 * mm * 512;
    const int64_t n = 40 * n0, k = 61 * 512 + 16; /* A's rows 64 bytes from a multiple of a way apart */
    const vx_problem few = {.m = 3 * m0, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem tall = {.m = 7 * m0, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_device_desc slow = d;
    slow.mem[1].bw = d.mem[1].bw / 2;
    const double f = vx_cost_price(&d, &c, &few, l1, g11), f_slow = vx_cost_price(&slow, &c, &few, l1, g11);
    const double t = vx_cost_price(&d, &c, &tall, l1, g11), t_slow = vx_cost_price(&slow, &c, &tall, l1, g11);
    /* one vector a row, a line wide: 3 row tiles stream, 4 do not */
    const vx_l0_family *Fn = &d.fam[c.l0[c.l1[narrow].l0].fam];
    const int one_vector = Fn->regs_per_m == 1 && d.elem_bytes * n1 >= 64;
    const vx_problem thin = {.m = 3 * m1, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem thin4 = {.m = 4 * m1, .n = n, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const double w = vx_cost_price(&d, &c, &thin, narrow, g11), w_slow = vx_cost_price(&slow, &c, &thin, narrow, g11);
    const double w4 = vx_cost_price(&d, &c, &thin4, narrow, g11),
                 w4_slow = vx_cost_price(&slow, &c, &thin4, narrow, g11);
    const int64_t cols = (n + n1 - 1) / n1;
    vx_candidates_free(&c);
    const double thin_reread = (double)d.elem_bytes * 3 * m1 * k * (double)(cols - 1) / d.mem[1].bw;
    if (one_vector)
        cr_assert(w > 0 && w_slow == w, "%dx%lldx%lld (3 row tiles of one vector, a line wide): the second level's "
                  "rate moved the price %g -> %g ns", 3 * m1, (long long)n, (long long)k, w, w_slow);
    else
        cr_assert(w > 0 && fabs(w_slow - w - thin_reread) <= 0.01 * thin_reread,
                  "%dx%lldx%lld (3 row tiles one line wide): halving the second level's rate should add %g ns to %g "
                  "(got %g)", 3 * m1, (long long)n, (long long)k, thin_reread, w, w_slow);
    const double thin4_reread = (double)d.elem_bytes * 4 * m1 * k * (double)(cols - 1) / d.mem[1].bw;
    cr_assert(w4 > 0 && fabs(w4_slow - w4 - thin4_reread) <= 0.01 * thin4_reread,
              "%dx%lldx%lld (4 row tiles one line wide): halving the second level's rate should add %g ns to %g "
              "(got %g)", 4 * m1, (long long)n, (long long)k, thin4_reread, w4, w4_slow);
    /* the tall block's re-reads: 39 column tiles after the first, each all of A */
    const double reread = (double)d.elem_bytes * 7 * m0 * k * 39 / d.mem[1].bw;
    cr_assert(f > 0 && f_slow == f, "%dx%lldx%lld (3 row tiles): the second level's rate moved the price %g -> "
              "%g ns", 3 * m0, (long long)n, (long long)k, f, f_slow);
    cr_assert(t > 0 && fabs(t_slow - t - reread) <= 0.01 * reread,
              "%dx%lldx%lld (7 row tiles): halving the second level's rate should add %g ns to %g (got %g)",
              7 * m0, (long long)n, (long long)k, reread, t, t_slow);
}

/* An in-place plan walks all of a cell's rows once per column tile (and k
 * block), storing an n0-wide piece of each row of C. Where the cell's C
 * is beyond the second level, each pass after the first has every tile
 * fetch its C lines from C's home and write them back as its k loop
 * starts (pieces rows apart, which the prefetchers do not follow), so each
 * tile waits for what that loop does not cover.
 * Nothing where the loop covers it, where C fits the second level or where
 * one pass stores all of it. */
VT_ISA_TEST(cost, in_place_passes_over_c_beyond_the_second_level_fetch_it_again, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    cr_assert(d.nmem >= 3, "%d memory levels", d.nmem);
    const int l1 = in_place_with_kc(&d, &c, 512, 64), g11 = grid_of(&c, 1, 1);
    const int m0 = c.l0[c.l1[l1].l0].m;
    const vx_l0_family *F = &d.fam[c.l0[c.l1[l1].l0].fam];
    const int n0 = F->n;
    const int64_t e = d.elem_bytes, line = 64;
    d.mem[0].bytes = 16 * 1024;
    d.mem[1].bytes = 256 * 1024;
    d.mem[2].bytes = d.nmem > 3 ? 64 * 1024 * 1024 : d.mem[2].bytes;
    d.bw_shared = 1e9; /* the last level at its own rate */
    for (int i = 0; i < d.nmem; i++)
        d.mem[i].line = (int)line;
    /* k = 16, one k block: A (m x 16) within the second level, B within
     * the first; C (m x 4 n0: the fewest row tiles that put it beyond the
     * second level, 114 of a 9 x 16 tile; a power of two, 256 of an 8 x 16
     * tile, put A at exactly half the level) */
    const int64_t tiles = d.mem[1].bytes / (e * m0 * 4 * n0) + 1;
    const int64_t m = tiles * (int64_t)m0, k = 16;
    const vx_problem four = {.m = m, .n = 4 * n0, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem one = {.m = m, .n = n0, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    const vx_problem small = {.m = 8 * m0, .n = 4 * n0, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
    cr_assert(e * m * 4 * n0 > d.mem[1].bytes && e * m * k < d.mem[1].bytes / 2 && e * 8 * m0 * 4 * n0 < d.mem[1].bytes,
              "the sizes this test needs (tile %d x %d, %lld row tiles)", m0, n0, (long long)tiles);
    /* a tile's C lines, fetched and written back, against its k loop */
    const int64_t piece = e * n0;
    const double bytes = 2.0 * m0 * ((double)((piece + line - 1) / line) + (piece % line == 0 ? 0.0 : 1.0)) * line;
    const double loop = (double)k * F->rate[VX_LOAD_NONE][m0 - 1].p;
    cr_assert(loop > 0, "the tile's rate");
    /* C's home slow enough that the loop covers a tenth of the fetch */
    d.mem[2].bw = bytes / (10.0 * loop);
    vx_device_desc slow = d, fast = d, faster = d;
    slow.mem[2].bw = d.mem[2].bw / 2;
    fast.mem[2].bw = 4.0 * bytes / loop; /* the fetch a quarter of the loop */
    faster.mem[2].bw = 8.0 * bytes / loop;
    const double f = vx_cost_price(&d, &c, &four, l1, g11), f_slow = vx_cost_price(&slow, &c, &four, l1, g11);
    const double h = vx_cost_price(&fast, &c, &four, l1, g11), h_faster = vx_cost_price(&faster, &c, &four, l1, g11);
    const double o = vx_cost_price(&d, &c, &one, l1, g11), o_slow = vx_cost_price(&slow, &c, &one, l1, g11);
    const double s = vx_cost_price(&d, &c, &small, l1, g11), s_slow = vx_cost_price(&slow, &c, &small, l1, g11);
    vx_candidates_free(&c);
    /* 3 passes after the first, `tiles` row tiles each: each tile waits 10
     * loops' worth less one, and 20 less one at half the rate */
    const double more = 3.0 * (double)tiles * (20.0 * loop - 10.0 * loop);
    cr_assert(f > 0 && fabs(f_slow - f - more) <= 0.01 * more,
              "%lldx%dx%lld in place, 4 column tiles: halving C's home rate should add %g ns to %g (got %g)",
              (long long)m, 4 * n0, (long long)k, more, f, f_slow);
    cr_assert(h > 0 && h_faster == h, "the k loop covering the fetch: C's home rate moved the price %g -> %g ns", h,
              h_faster);
    cr_assert(o > 0 && o_slow == o, "one column tile: C's home rate moved the price %g -> %g ns", o, o_slow);
    cr_assert(s > 0 && s_slow == s, "C within the second level: its home rate moved the price %g -> %g ns", s, s_slow);
}

/* A family's context (levels.h: its rate in the GEMM driver against the
 * fastest family's) scales the L0 time of plans that copy both operands,
 * a plain problem's or a convolution's gathered patches (a_run > 0): their
 * kernels run over packed buffers as the probe's do; halving it costs such
 * a plan at least its compute once more. A convolution's patches read in
 * place (a_seg > 0, pack-B) keep the L1 rates and their price. */
VT_ISA_TEST(cost, family_context_scales_packed_kernels_only, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    for (int f = 0; f < d.nfamilies; f++) /* the families' contexts alone (a tune's tiles' ratios aside) */
        d.fam[f].context_min_k = 0;
    const int l1 = first_of_mode(&d, &c, VX_LOAD_COPY_AB), g11 = grid_of(&c, 1, 1);
    const int f = c.l0[c.l1[l1].l0].fam, m0 = c.l0[c.l1[l1].l0].m;
    const int64_t n0 = d.fam[f].n;
    const vx_problem plain = {.m = 16 * m0, .n = 4 * n0, .k = 256, .b_in_place_ok = 1, .a_in_place_ok = 1};
    vx_problem patches = plain;
    patches.a_run = 64;
    vx_device_desc half = d;
    d.fam[f].context = 1.0;
    half.fam[f].context = 0.5;
    const double p1 = vx_cost_price(&d, &c, &plain, l1, g11), p2 = vx_cost_price(&half, &c, &plain, l1, g11);
    const double g1 = vx_cost_price(&d, &c, &patches, l1, g11), g2 = vx_cost_price(&half, &c, &patches, l1, g11);
    /* the L0 time once: 16 row tiles x 4 column tiles of k = 256 */
    const double once = 64.0 * (d.fam[f].rate[VX_LOAD_COPY_AB][m0 - 1].o + 256.0 * d.fam[f].rate[VX_LOAD_COPY_AB][m0 - 1].p);
    /* in place: the pack-B candidate of a family, its context halved */
    const int lb = first_of_mode(&d, &c, VX_LOAD_COPY_B), fb = c.l0[c.l1[lb].l0].fam;
    vx_problem in_place = plain;
    in_place.b_in_place_ok = 0;
    in_place.a_seg = 64;
    in_place.a_pitch = 64;
    vx_device_desc half_b = d;
    d.fam[fb].context = 1.0;
    half_b.fam[fb].context = 0.5;
    const double i1 = vx_cost_price(&d, &c, &in_place, lb, g11), i2 = vx_cost_price(&half_b, &c, &in_place, lb, g11);
    vx_candidates_free(&c);
    cr_assert(p1 > 0 && p2 - p1 >= 0.99 * once, "plain %dx%lldx256: context 0.5 should add at least %g ns to %g (got %g)",
              16 * m0, (long long)(4 * n0), once, p1, p2);
    cr_assert(g1 > 0 && g2 - g1 >= 0.99 * once, "gathered patches: context 0.5 should add at least %g ns to %g (got %g)",
              once, g1, g2);
    cr_assert(i1 > 0 && i2 == i1, "patches in place: the context moved the price %g -> %g ns", i1, i2);
}

/* A tile's own context (levels.h, context_m) scales the L0 time of the
 * plans that pack B, as the probe's did, from the family's context_min_k
 * on: halving it costs such a plan at least its compute once more, and
 * above 1 (the tiles' ratios sit on the families' level) it lowers the
 * price. Plans that read B in place, and any below that k, take the
 * family's context whatever the tile's. */
static void contexts_at(vx_device_desc *d, double family, double tile, int64_t min_k)
{
    for (int f = 0; f < d->nfamilies; f++) {
        d->fam[f].context = family;
        d->fam[f].context_min_k = min_k;
        for (int m = 0; m < VX_MAX_TILE_M; m++)
            d->fam[f].context_m[m] = tile;
    }
}

VT_ISA_TEST(cost, tile_context_scales_packed_b_plans_from_its_k, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    const int g11 = grid_of(&c, 1, 1);
    const int modes[] = { VX_LOAD_COPY_AB, VX_LOAD_COPY_B, VX_LOAD_NONE };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const int l1 = first_of_mode(&d, &c, modes[i]);
        const int f = c.l0[c.l1[l1].l0].fam, m0 = c.l0[c.l1[l1].l0].m;
        const int64_t n0 = d.fam[f].n;
        const int packs_b = modes[i] != VX_LOAD_NONE;
        for (int64_t k = 128; k <= 512; k *= 4) {
            const vx_problem p = {.m = 16 * m0, .n = 4 * n0, .k = k, .b_in_place_ok = 1, .a_in_place_ok = 1};
            vx_device_desc base = d, half = d, above = d, family = d;
            contexts_at(&base, 1.0, 0.0, 256);
            contexts_at(&half, 1.0, 0.5, 256);
            contexts_at(&above, 1.0, 1.25, 256);
            contexts_at(&family, 0.5, 0.0, 256);
            const double p0 = vx_cost_price(&base, &c, &p, l1, g11), ph = vx_cost_price(&half, &c, &p, l1, g11);
            const double pa = vx_cost_price(&above, &c, &p, l1, g11), pf = vx_cost_price(&family, &c, &p, l1, g11);
            /* the L0 time once, at the least rate of the modes the plan may
             * run (A copied or read in place): 16 x 4 tiles over all of k */
            const vx_rate r = d.fam[f].rate[packs_b ? VX_LOAD_COPY_B : VX_LOAD_NONE][m0 - 1];
            const vx_rate q = d.fam[f].rate[VX_LOAD_COPY_AB][m0 - 1];
            const double once = 64.0 * fmin(r.o + (double)k * r.p, q.o + (double)k * q.p);
            cr_assert(pf - p0 >= 0.99 * once, "mode %d, k = %lld: the family's context 0.5 should add at least %g ns "
                      "to %g (got %g)", modes[i], (long long)k, once, p0, pf);
            if (k >= 256 && packs_b)
                cr_assert(ph - p0 >= 0.99 * once && pa < p0,
                          "mode %d, k = %lld: the tile's context 0.5 should add at least %g ns to %g (got %g), "
                          "1.25 take some off (got %g)",
                          modes[i], (long long)k, once, p0, ph, pa);
            else
                cr_assert(ph == p0 && pa == p0, "mode %d, k = %lld: the tile's context moved the price %g -> %g / %g ns",
                          modes[i], (long long)k, p0, ph, pa);
        }
    }
    vx_candidates_free(&c);
}

/* two_unit_model, and its first level, whose set geometry the in-place
 * bounds read: the test is skipped where the machine does not tell it. */
static const vx_mem_level *two_unit_model_with_l1_sets(vx_isa isa, vx_device_desc *d, vx_candidates *c)
{
    two_unit_model(isa, d, c);
    const vx_mem_level *L1 = &d->mem[0];
    if (L1->ways <= 0 || L1->way_bytes <= 0) {
        vx_candidates_free(c);
        cr_skip_test("skipped: this machine's first-level set geometry is unknown");
    }
    return L1;
}

/* A tile reading a plain A in place reads one element of each of its rows
 * per k step; rows a multiple of a way apart share one set of the first
 * level, which then holds no more of them than it has ways. Taller tiles
 * are not priced in the in-place modes over such rows (4096x16x4096 on 30
 * rows of 16 KiB apart ran 3.1x the time of 10 rows on AMD Zen 5; NOTES.md,
 * nineteenth session), are priced over rows that spread over the sets, and
 * copying both, always; every family keeps a tile short enough. */
VT_ISA_TEST(cost, in_place_tiles_no_taller_than_the_l1_holds_a_rows, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    const vx_mem_level *L1 = two_unit_model_with_l1_sets(vt_isa, &d, &c);
    const int safe = L1->ways - VX_IN_PLACE_A_ROW_SLACK;
    int families_checked = 0;
    for (int f = 0; f < d.nfamilies; f++) {
        int shortest = 1 << 30, any = 0;
        for (int i = 0; i < c.n0; i++)
            if (c.l0[i].fam == f) {
                any = 1;
                shortest = c.l0[i].m < shortest ? c.l0[i].m : shortest;
            }
        /* The generator keeps such a tile only where one that short holds
         * enough accumulators to hide the FMA latency: an 8-way L1 (AMD
         * Zen 4: 6 rows held, less the slack) and one vector a row (8
         * accumulators need 8 rows) leave that family none, and its calls
         * over such rows copy A. */
        const int rows_for_latency = (d.acc_min + d.fam[f].regs_per_m - 1) / d.fam[f].regs_per_m;
        if (!any || rows_for_latency > safe)
            continue;
        families_checked++;
        cr_assert(shortest <= safe, "family %d: shortest kept tile %d rows, the L1 holds %d at a way's stride",
                  f, shortest, safe);
    }
    cr_assert(families_checked > 0, "no family has a tile the L1 holds at a way's stride (%d rows)", safe);
    const int g21 = grid_of(&c, 2, 1);
    const int64_t k_alias = 4 * L1->way_bytes / d.elem_bytes; /* rows 4 ways' bytes apart */
    const int64_t k_spread = 17;                              /* rows 68 bytes apart */
    int tall = 0, short_ = 0;
    for (int j = 0; j < c.n1; j++) {
        const vx_l0_cand *t = &c.l0[c.l1[j].l0];
        const vx_problem alias = {.m = 4096, .n = d.fam[t->fam].n, .k = k_alias, .b_in_place_ok = 1,
                                  .a_in_place_ok = 1};
        const vx_problem spread = {.m = 4096, .n = d.fam[t->fam].n, .k = k_spread, .b_in_place_ok = 1,
                                   .a_in_place_ok = 1};
        const double pa = vx_cost_price(&d, &c, &alias, j, g21), ps = vx_cost_price(&d, &c, &spread, j, g21);
        cr_assert(ps > 0, "candidate %d (%dx%d, mode %d) over rows 68 bytes apart: price %g", j, t->m,
                  d.fam[t->fam].n, c.l1[j].mode, ps);
        if (c.l1[j].mode == VX_LOAD_COPY_AB || t->m <= safe) {
            cr_assert(pa > 0, "candidate %d (%dx%d, mode %d) over rows a way apart: price %g", j, t->m,
                      d.fam[t->fam].n, c.l1[j].mode, pa);
            short_ += c.l1[j].mode != VX_LOAD_COPY_AB;
        } else {
            cr_assert(pa < 0, "candidate %d (%d rows, mode %d) read A's rows in place a way apart, %d held: "
                      "priced %g", j, t->m, c.l1[j].mode, safe, pa);
            tall++;
        }
    }
    vx_candidates_free(&c);
    cr_assert(tall > 0 && short_ > 0, "%d tall and %d short in-place candidates: nothing compared", tall, short_);
}

/* A convolution's patches read in place (NHWC) are output pixels whose
 * input pixels lie stride_w * c floats apart (a_pitch): a tile reads them
 * side by side as it reads a plain A's rows, and holds no more of them than
 * the L1's sets keep at that stride (without the plain rows' slack: cost.c,
 * a_rows_max). Unbounded, ResNet-50's 1x1 stride-2 projection from 512
 * channels ran 14-row tiles at 0.75x the speed of 7-row ones on AMD Zen 4
 * (8-way L1). */
VT_ISA_TEST(cost, in_place_patches_no_taller_than_the_l1_holds_their_pixels, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    const vx_mem_level *L1 = two_unit_model_with_l1_sets(vt_isa, &d, &c);
    const int safe = L1->ways; /* rows a way's bytes apart: each in the same set */
    const int g12 = grid_of(&c, 1, 2);
    const int64_t k = 512; /* one 1x1 tap of 512 channels: one segment */
    int tall = 0, short_ = 0;
    for (int j = 0; j < c.n1; j++) {
        if (c.l1[j].mode != VX_LOAD_COPY_B) /* the in-place patches' mode (pack_b) */
            continue;
        const vx_l0_cand *t = &c.l0[c.l1[j].l0];
        vx_problem alias = {.m = 4096, .n = 2 * d.fam[t->fam].n, .k = k, .a_in_place_ok = 1, .a_seg = k,
                            .a_row = 14, .a_pitch = L1->way_bytes / d.elem_bytes};
        vx_problem spread = alias;
        spread.a_pitch = 17;
        const double pa = vx_cost_price(&d, &c, &alias, j, g12), ps = vx_cost_price(&d, &c, &spread, j, g12);
        cr_assert(ps > 0, "candidate %d (%dx%d) over pixels 68 bytes apart: price %g", j, t->m, d.fam[t->fam].n, ps);
        if (t->m <= safe) {
            cr_assert(pa > 0, "candidate %d (%d rows) over pixels a way apart: price %g", j, t->m, pa);
            short_++;
        } else {
            cr_assert(pa < 0, "candidate %d (%d rows) read pixels a way apart in place, %d held: priced %g", j,
                      t->m, safe, pa);
            tall++;
        }
    }
    vx_candidates_free(&c);
    cr_assert(tall > 0 && short_ > 0, "%d tall and %d short in-place candidates: nothing compared", tall, short_);
}

/* The units' state word (levels.h, vx_units_state): a plain 0 or 1 is
 * class 0, and every class in -8..7 comes back with either warm bit. */
Test(units_state, encodes_warm_and_class)
{
    cr_assert_eq(vx_units_state_class(0), 0);
    cr_assert_eq(vx_units_state_class(1), 0);
    cr_assert_eq(vx_units_state_warm(1), 1);
    for (int c = -8; c <= 7; c++)
        for (int w = 0; w <= 1; w++) {
            const int s = vx_units_state(w, c);
            cr_assert_eq(vx_units_state_class(s), c, "class %d warm %d: state %d reads class %d", c, w, s,
                         vx_units_state_class(s));
            cr_assert_eq(vx_units_state_warm(s), w, "class %d warm %d: state %d reads warm %d", c, w, s,
                         vx_units_state_warm(s));
        }
}

/* What passes between units scales with the state's class: a warm
 * region 2^c times, and so the price of every two-unit plan moves by the
 * region's difference (plus shared lines where a grid splits C's rows),
 * while a cold region and one-unit plans stay as measured. */
VT_ISA_TEST(cost, units_class_scales_what_passes_between_units, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    d.parallel_ns[0] = 30000;
    d.parallel_ns[1] = 100;
    cr_assert_float_eq(vx_cost_region_ns(&d, vx_units_state(1, 0)), 100.0, 1e-9);
    cr_assert_float_eq(vx_cost_region_ns(&d, vx_units_state(1, 2)), 400.0, 1e-9);
    cr_assert_float_eq(vx_cost_region_ns(&d, vx_units_state(1, -1)), 50.0, 1e-9);
    cr_assert_float_eq(vx_cost_region_ns(&d, vx_units_state(0, 3)), 30000.0, 1e-9, "a cold region is a wake-up");
    const int l1 = first_of_mode(&d, &c, VX_LOAD_NONE), g11 = grid_of(&c, 1, 1), g21 = grid_of(&c, 2, 1);
    vx_problem p = {.m = 64, .n = 64, .k = 64, .b_in_place_ok = 1, .a_in_place_ok = 1, .units_warm = 1};
    const double one0 = vx_cost_price(&d, &c, &p, l1, g11), two0 = vx_cost_price(&d, &c, &p, l1, g21);
    p.units_class = 3;
    const double one3 = vx_cost_price(&d, &c, &p, l1, g11), two3 = vx_cost_price(&d, &c, &p, l1, g21);
    cr_assert_float_eq(one3, one0, 1e-9, "one unit passes nothing: %g and %g", one0, one3);
    cr_assert_float_eq(two3 - two0, 700.0, 1e-6, "a 2x1 grid in class 3 pays 8 x 100 ns for its region: +%g",
                       two3 - two0);
    vx_candidates_free(&c);
}

/* A matrix-vector product split by k among the units (vx_gemv_ksplit)
 * pays the partial sums' handshakes and lines, scaled by the class; split
 * by the output, or on one unit, it pays none. */
VT_ISA_TEST(cost, gemv_k_split_pays_for_the_partial_sums, TMO)
{
    vx_device_desc d;
    vx_candidates c;
    two_unit_model(vt_isa, &d, &c);
    vx_candidates_free(&c);
    d.line_share_ns = 100;
    d.line_stream_ns = 10;
    vx_device_desc none = d;
    none.line_share_ns = 0;
    none.line_stream_ns = 0;
    /* 1 x 61 x 70, B row-major: the axpy form, 4 lines of partial sums */
    vx_problem p = {.m = 1, .n = 61, .k = 70, .b_in_place_ok = 1, .a_in_place_ok = 1, .units_warm = 1};
    cr_assert(vx_gemv_ksplit(&d, 61, 70, 1, 2), "61 outputs, k = 70: two units split k");
    cr_assert(!vx_gemv_ksplit(&d, 61, 70, 1, 1), "one unit splits nothing");
    cr_assert(!vx_gemv_ksplit(&d, 2 * d.gemv_ksplit_len, 70, 1, 2), "long outputs split the output");
    cr_assert(!vx_gemv_ksplit(&d, 61, 2 * d.gemv_ksplit_k_per_row - 1, 1, 2), "too short a k splits the output");
    const double extra = vx_cost_gemv(&d, &p, 2) - vx_cost_gemv(&none, &p, 2);
    cr_assert_float_eq(extra, 2 * 100.0 + 4 * 10.0, 1e-9, "two handshakes and four lines: %g ns", extra);
    cr_assert_float_eq(vx_cost_gemv(&d, &p, 1), vx_cost_gemv(&none, &p, 1), 1e-9, "one unit: no partial sums");
    p.units_class = 1;
    const double extra1 = vx_cost_gemv(&d, &p, 2) - vx_cost_gemv(&none, &p, 2);
    cr_assert_float_eq(extra1, 2 * (2 * 100.0 + 4 * 10.0), 1e-6, "class 1 doubles them: %g ns", extra1);
    /* B transposed (row-major NT): the dot form, split by the output */
    vx_problem dot = p;
    dot.units_class = 0;
    dot.b_trans = 1;
    cr_assert_float_eq(vx_cost_gemv(&d, &dot, 2), vx_cost_gemv(&none, &dot, 2), 1e-9, "the dot form splits y");
}

/* ---- the wave model (GPU selection, device-neutral) ---- */

static const vx_wave_device wave_dev = {.units = 132, .launch_ns = 2500.0, .split_fixed_ns = 1000.0,
                                        .reduce_bytes_per_ns = 2000.0, .fixup_ns = 800.0, .c_bytes = 4,
                                        .beta_reads_c = 0, .max_splits = 32};

/* A candidate that adds its split-K slices inside the kernel pays no second
 * launch: unsplit it costs the same as one that launches a reduction, split
 * it costs less, and on a call with few tiles and a long K the ranking
 * splits it further than the other. */
Test(wave, in_kernel_split_skips_the_reduction_launch)
{
    vx_wave_cand two = {.bm = 1, .bn = 64, .bk = 32, .resident = 4, .o_ns = 900.0f, .p_ns = 11.0f, .fixup = 0};
    vx_wave_cand one = two;
    one.fixup = 1;
    static const int64_t shapes[][3] = {{1, 768, 3072}, {3, 2304, 768}, {16, 1024, 4096}, {7, 100, 50000}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        cr_assert_float_eq(vx_wave_time(&wave_dev, &one, m, n, k, 1), vx_wave_time(&wave_dev, &two, m, n, k, 1),
                           1e-9, "%lldx%lldx%lld unsplit", (long long)m, (long long)n, (long long)k);
        for (int s = 2; s <= 16; s *= 2) {
            const double t1 = vx_wave_time(&wave_dev, &one, m, n, k, s);
            const double t2 = vx_wave_time(&wave_dev, &two, m, n, k, s);
            cr_assert((t1 > 0) == (t2 > 0), "%lldx%lldx%lld split %d: %g %g", (long long)m, (long long)n,
                      (long long)k, s, t1, t2);
            if (t1 < 0)
                continue; /* a slice would be empty: refused by both */
            cr_assert(t1 < t2 - 0.5 * wave_dev.launch_ns, "%lldx%lldx%lld split %d: in-kernel %g ns, "
                      "two launches %g ns", (long long)m, (long long)n, (long long)k, s, t1, t2);
        }
    }
    vx_wave_choice c1, c2;
    cr_assert_eq(vx_wave_rank(&wave_dev, &one, NULL, 1, 1, 768, 3072, &c1, 1), 1);
    cr_assert_eq(vx_wave_rank(&wave_dev, &two, NULL, 1, 1, 768, 3072, &c2, 1), 1);
    cr_assert(c1.splits > 1 && c1.splits >= c2.splits, "splits: in-kernel %d, two launches %d", c1.splits,
              c2.splits);
}
