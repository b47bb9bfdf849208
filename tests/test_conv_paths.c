/* Every convolution path, forced: the analyzer picks one path per shape, so
 * the public tests alone would leave the others unchecked on most shapes.
 * For a set of shapes in both layouts this forces, through the planner's
 * testing override, the gathering implicit GEMM (packed), the NHWC in-place
 * path and NCHW's per-panel gather (pack_b), the in-place GEMM for
 * pointwise convolutions (direct), the direct depthwise family, every L0
 * family and a few k blocks and thread grids, and checks each against the
 * float64 reference. Links the internal view (vx_plan_set_override). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/plan.h"
#include "cpu/conv.h"
#include "cpu/gemm.h"
#include "cpu/isa.h"
#include "cpu/ukernel.h"
#include "ref.h"
#include "ref_conv.h"

#define TMO 240.0

typedef struct {
    int64_t n, c, h, w, k, r, s, stride, pad, dil, groups;
} shape;

/* Edges of every kind: taps entering the padding on both sides, pad >= r,
 * strides and dilation, channels around the tiles and k blocks, groups. */
static const shape shapes[] = {
    { 1, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1 },
    { 2, 16, 8, 8, 17, 3, 3, 1, 1, 1, 1 },
    { 1, 3, 17, 15, 33, 7, 7, 2, 3, 1, 1 },
    { 1, 33, 6, 7, 9, 5, 3, 1, 2, 1, 1 },
    { 1, 130, 5, 6, 24, 3, 3, 1, 1, 1, 1 },
    { 3, 8, 7, 9, 16, 3, 3, 2, 1, 2, 1 },
    { 1, 6, 5, 5, 6, 2, 3, 1, 3, 1, 2 },
    { 2, 12, 9, 10, 8, 3, 3, 1, 1, 1, 4 },
    { 2, 10, 4, 4, 12, 7, 7, 2, 3, 1, 1 },      /* taps no pixel reads (packed only in part) */
    { 1, 4, 3, 5, 9, 9, 9, 3, 4, 1, 1 },
    { 1, 17, 8, 9, 19, 1, 1, 1, 0, 1, 1 },      /* pointwise */
    { 2, 24, 5, 7, 40, 1, 1, 2, 0, 1, 2 },      /* 1x1 strided, grouped */
    { 2, 7, 6, 9, 7, 3, 3, 1, 1, 1, 7 },        /* depthwise */
    { 1, 16, 11, 10, 32, 5, 5, 2, 2, 1, 16 },   /* depthwise, multiplier 2 */
    { 1, 9, 4, 12, 9, 3, 1, 1, 4, 2, 9 },       /* depthwise, pad > r */
    { 1, 1, 7, 23, 5, 3, 7, 2, 3, 1, 1 },       /* one channel: NHWC gathers whole filter rows, */
    { 2, 2, 5, 19, 3, 1, 9, 1, 4, 1, 1 },       /* cut by the padding on both sides */
    { 3, 20, 7, 7, 24, 3, 3, 1, 1, 1, 1 },      /* small maps: edge pixels stacked down the rows */
    { 1, 12, 14, 5, 20, 5, 3, 1, 2, 1, 1 },     /* or across images; two rows of edge classes */
    { 1, 6, 9, 21, 10, 5, 5, 1, 2, 1, 1 },      /* NCHW gathers shifted runs (output as wide as */
    { 2, 5, 8, 13, 6, 3, 3, 1, 2, 2, 1 },       /* the input) into panels that start mid-row; dilated */
    { 1, 2, 12, 11, 3, 11, 11, 1, 5, 1, 1 },    /* the most taps it takes */
};

/* 1: run_forced's calls take their filter packed (dyn_conv2d_packed). */
static int g_packed;

static void run_forced(const vx_gemm_plan *ov, const char *what)
{
    vx_plan_set_override(ov);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int l = 0; l < 2; l++) {
            const shape *x = &shapes[i];
            vt_conv_case c = vt_conv_make(l ? VX_NHWC : VX_NCHW, x->n, x->c, x->h, x->w, x->k, x->r, x->s);
            c.p.stride_h = c.p.stride_w = x->stride;
            c.p.pad_h = c.p.pad_w = x->pad;
            c.p.dilation_h = c.p.dilation_w = x->dil;
            c.p.groups = x->groups;
            c.bias = (int)((i + (size_t)l) & 1);
            c.p.activation = (i >> 1) & 1 ? VX_ACT_RELU : VX_ACT_NONE;
            c.seed = 1000 + i * 2 + (uint64_t)l;
            c.packed = g_packed;
            c.tag = what;
            vt_conv_check(&c);
        }
    vx_plan_set_override(NULL);
}

/* run_forced with path on every L0 family (its widest tile), an NCHW call
 * run as NHWC where via is set. */
static void each_family(vx_path path, int via, const char *name)
{
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    char what[96];
    for (int f = 0; f < set->nfamilies; f++) {
        vx_gemm_plan ov;
        memset(&ov, 0, sizeof ov);
        ov.path = path;
        ov.nr = set->families[f].nr;
        ov.mr = set->families[f].mr_max;
        ov.conv_via_nhwc = via;
        snprintf(what, sizeof what, "%sforced %s %dx%d", via ? "NCHW via NHWC, " : "", name, ov.mr, ov.nr);
        run_forced(&ov, what);
    }
}

Test(conv_paths, each_path_each_family, .timeout = TMO)
{
    /* dot: the pointwise NHWC shapes (A's rows and the KRSC filter's both
     * along the channels) run the dot form with the bias and ReLU fused;
     * the others fall back to the GEMM plan it carries */
    static const vx_path paths[] = { VX_PATH_PACKED, VX_PATH_PACK_B, VX_PATH_DIRECT, VX_PATH_CONV_DIRECT,
                                     VX_PATH_DOT };
    static const char *names[] = { "packed", "pack_b", "direct", "conv_direct", "dot" };
    for (int pi = 0; pi < 5; pi++)
        each_family(paths[pi], 0, names[pi]);
}

Test(conv_paths, blocks_and_grids, .timeout = TMO)
{
    /* short k blocks cut the taps' channels; grids split pixels and panels
     * (the dot form splits output channels over ov.threads) */
    static const int kcs[] = { 8, 24 };
    static const int grids[][2] = { { 2, 1 }, { 1, 2 }, { 2, 2 } };
    static const vx_path paths[] = { VX_PATH_PACKED, VX_PATH_PACK_B, VX_PATH_DOT };
    static const char *names[] = { "packed", "pack_b", "dot" };
    char what[96];
    for (int pi = 0; pi < 3; pi++)
        for (int q = 0; q < 2; q++)
            for (int g = 0; g < 3; g++) {
                vx_gemm_plan ov;
                memset(&ov, 0, sizeof ov);
                ov.path = paths[pi];
                ov.kc = kcs[q];
                ov.mc = 24;
                ov.nc = 32;
                ov.threads_m = grids[g][0];
                ov.threads_n = grids[g][1];
                ov.threads = 2;
                snprintf(what, sizeof what, "forced %s kc=%d grid=%dx%d", names[pi], kcs[q],
                         grids[g][0], grids[g][1]);
                run_forced(&ov, what);
            }
}

Test(conv_paths, c_streamed_past_the_caches, .timeout = TMO)
{
    /* the in-place GEMM plans with C streamed (cpu/stream.h) whatever its
     * size: pointwise shapes run them with a batch of items and the bias
     * and ReLU in the tiles' store, the others fall back to their paths */
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    static const vx_path paths[] = { VX_PATH_PACK_B, VX_PATH_DIRECT };
    static const int grids[][2] = { { 2, 1 }, { 1, 2 } };
    char what[96];
    vx_gemm_set_stream_bytes(0);
    for (int packed = 0; packed < 2; packed++) /* and with the filter packed first */
    for (int pi = 0; pi < 2; pi++)
        for (int f = 0; f < set->nfamilies; f++)
            for (int g = 0; g < 2; g++) {
                vx_gemm_plan ov;
                memset(&ov, 0, sizeof ov);
                ov.path = paths[pi];
                ov.nr = set->families[f].nr;
                ov.mr = set->families[f].mr_max;
                ov.kc = 512;
                ov.threads_m = grids[g][0];
                ov.threads_n = grids[g][1];
                ov.threads = 2;
                snprintf(what, sizeof what, "C streamed, forced %s %dx%d grid=%dx%d",
                         pi ? "direct" : "pack_b", ov.mr, ov.nr, grids[g][0], grids[g][1]);
                g_packed = packed;
                run_forced(&ov, what);
            }
    g_packed = 0;
    vx_gemm_set_stream_bytes(-1);
}

Test(conv_paths, nchw_run_as_nhwc, .timeout = TMO)
{
    /* NCHW calls run by NHWC plans (conv_via_nhwc): the input and output
     * transposed around every family's in-place plans (their panels packed
     * from the KCRS filter: vx_pack_b_kcrs) and gathering plans (the filter
     * transposed to KRSC first) */
    each_family(VX_PATH_PACK_B, 1, "pack_b");
    each_family(VX_PATH_PACKED, 1, "packed");
}

/* The grids the in-place tests force: one cell, the pixels split, the
 * panels split. */
static const int inplace_grids[3][2] = { { 1, 1 }, { 2, 1 }, { 1, 2 } };

/* A forced NHWC in-place plan: family F's tallest tile on grid g of
 * inplace_grids. */
static vx_gemm_plan inplace_plan(const vx_ukernel_family *F, int g)
{
    vx_gemm_plan ov;
    memset(&ov, 0, sizeof ov);
    ov.path = VX_PATH_PACK_B;
    ov.nr = F->nr;
    ov.mr = F->mr_max;
    ov.threads_m = inplace_grids[g][0];
    ov.threads_n = inplace_grids[g][1];
    ov.threads = inplace_grids[g][0] * inplace_grids[g][1];
    return ov;
}

/* run_forced on every family's tallest tile over each grid, with a testing
 * switch of conv_inplace.c (force) set to each of modes - 1 down to 0, and
 * back to -1 after; tweak(plan, grid) adjusts each plan. */
static void each_inplace_forced(void (*force)(int), int modes, const char *label,
                                void (*tweak)(vx_gemm_plan *, int))
{
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    char what[96];
    for (int mode = modes - 1; mode >= 0; mode--)
        for (int f = 0; f < set->nfamilies; f++)
            for (int g = 0; g < 3; g++) {
                vx_gemm_plan ov = inplace_plan(&set->families[f], g);
                tweak(&ov, g);
                snprintf(what, sizeof what, "%s %d, forced pack_b %dx%d kc=%d grid=%dx%d%s", label, mode, ov.mr,
                         ov.nr, (int)ov.kc, ov.threads_m, ov.threads_n, ov.conv_via_nhwc ? " via NHWC" : "");
                force(mode);
                run_forced(&ov, what);
            }
    force(-1);
}

/* a short k block on the grid that splits the pixels */
static void short_kc(vx_gemm_plan *ov, int g) { ov->kc = g == 1 ? 8 : 0; }

Test(conv_paths, band_tiles_forced_on_and_off, .timeout = TMO)
{
    /* the NHWC in-place path's band tiles (pixels of several tap classes
     * in one tile, each tap over the pixels it reads) on every class of
     * rows, and never: every family, a short k block that cuts the taps'
     * runs, grids that split the pixels mid-row and the panels */
    each_inplace_forced(vx_conv_inplace_force_band, 2, "band tiles forced", short_kc);
}

/* Random operands for one convolution, its filter also packed (pf), and
 * `outs` output buffers of nout floats. */
typedef struct {
    float *in, *filt, *bias, *out[6];
    vx_conv2d_filter *pf;
    size_t nout;
    int outs;
} conv_operands;

static void operands_make(const vx_conv2d_params *p, uint64_t seed, int outs, conv_operands *o)
{
    int64_t oh, ow;
    cr_assert_eq(vx_conv2d_output_dims(p, &oh, &ow), VX_OK);
    const size_t nin = (size_t)(p->n * p->c * p->h * p->w), nf = (size_t)(p->k * p->c / p->groups * p->r * p->s);
    memset(o, 0, sizeof *o);
    o->nout = (size_t)(p->n * p->k * oh * ow);
    o->outs = outs;
    o->in = malloc(nin * sizeof *o->in);
    o->filt = malloc(nf * sizeof *o->filt);
    o->bias = malloc((size_t)p->k * sizeof *o->bias);
    cr_assert(o->in && o->filt && o->bias);
    for (int j = 0; j < outs; j++)
        cr_assert_not_null(o->out[j] = malloc(o->nout * sizeof *o->out[j]));
    vt_rng r;
    vt_rng_seed(&r, seed);
    for (size_t j = 0; j < nin; j++)
        o->in[j] = vt_rng_float(&r);
    for (size_t j = 0; j < nf; j++)
        o->filt[j] = vt_rng_float(&r);
    for (int64_t j = 0; j < p->k; j++)
        o->bias[j] = vt_rng_float(&r);
    cr_assert_eq(vx_conv2d_filter_create(p, o->filt, &o->pf), VX_OK, "%s", vx_last_error());
}

static void operands_free(conv_operands *o)
{
    vx_conv2d_filter_destroy(o->pf);
    for (int j = 0; j < o->outs; j++)
        free(o->out[j]);
    free(o->in);
    free(o->filt);
    free(o->bias);
}

/* One NHWC in-place call under a forced plan and cell order (mode of
 * vx_conv_inplace_force_order) into out; the filter plain, or packed
 * before the call where pf is given. */
static void inplace_run(const vx_conv2d_params *p, const vx_gemm_plan *ov, int order, const float *in,
                        const float *filt, const vx_conv2d_filter *pf, const float *bias, float *out)
{
    vx_conv_inplace_force_order(order);
    vx_plan_set_override(ov);
    const vx_status st = pf ? dyn_conv2d_packed(p, in, pf, bias, out) : dyn_conv2d(p, in, filt, bias, out);
    vx_plan_set_override(NULL);
    vx_conv_inplace_force_order(-1);
    cr_assert_eq(st, VX_OK, "forced in-place %dx%d, order %d: %s", ov->mr, ov->nr, order, vx_last_error());
}

/* NCHW calls run as NHWC on the grid that splits the panels */
static void via_nhwc_on_split_panels(vx_gemm_plan *ov, int g) { ov->conv_via_nhwc = g == 2; }

/* The in-place path's three orders over a cell (conv_inplace.c, run_cell:
 * all its filter panels packed first and the rows over all of them; one
 * panel at a time and the rows over each; all panels first and blocks of
 * rows over one panel after another, forced as blocks of two output rows),
 * forced on every family over grids that split the pixels and the panels:
 * each agrees with the float64 reference (NCHW run as NHWC too). The
 * first two write the same output bit for bit (every tile makes the same
 * calls, in another order), with the filter plain or packed before the
 * call; blocks tile their rows apart (band tiles and stacked pieces cut at
 * the blocks, whose taps run in another order), so they agree with the
 * others to rounding, and bit for bit between a plain and a packed filter. */
Test(conv_paths, inplace_cell_orders_forced_alike, .timeout = TMO)
{
    static const char *names[] = { "one panel at a time", "all panels first", "blocks of two rows" };
    each_inplace_forced(vx_conv_inplace_force_order, 3, "cell order forced", via_nhwc_on_split_panels);
    const int isa = vx_active_isa();
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    /* several panels a cell (k over the widest tile), whole images and rows
     * cut by the grid, a stride, two groups */
    static const shape cases[] = {
        { 2, 16, 8, 8, 100, 3, 3, 1, 1, 1, 1 },
        { 3, 20, 7, 7, 140, 3, 3, 2, 1, 1, 1 },
        { 1, 33, 6, 9, 130, 5, 3, 1, 2, 1, 1 },
        { 2, 12, 9, 10, 136, 3, 3, 1, 1, 1, 2 },
    };
    int compared = 0;
    for (int f = 0; f < set->nfamilies; f++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int g = 0; g < 3; g++) {
                const shape *x = &cases[i];
                vx_conv2d_params p = { .layout = VX_NHWC, .n = x->n, .c = x->c, .h = x->h, .w = x->w, .k = x->k,
                                       .r = x->r, .s = x->s, .stride_h = x->stride, .stride_w = x->stride,
                                       .pad_h = x->pad, .pad_w = x->pad, .dilation_h = x->dil,
                                       .dilation_w = x->dil, .groups = x->groups, .activation = VX_ACT_RELU };
                const vx_gemm_plan ov = inplace_plan(&set->families[f], g);
                conv_operands o;
                operands_make(&p, 91 + i, 6, &o);
                for (int j = 0; j < 6; j++) /* order j % 3, the filter packed for j >= 3 */
                    inplace_run(&p, &ov, j % 3, o.in, o.filt, j >= 3 ? o.pf : NULL, o.bias, o.out[j]);
                for (int j = 1; j < 6; j++) {
                    const int base = j % 3 == 2 ? 2 : 0; /* blocks against blocks */
                    if (j == base)
                        continue;
                    cr_assert(memcmp(o.out[base], o.out[j], o.nout * sizeof *o.out[0]) == 0,
                              "case %zu, forced pack_b %dx%d grid=%dx%d: %s, filter %s, differs from %s, filter "
                              "plain", i, ov.mr, ov.nr, ov.threads_m, ov.threads_n, names[j % 3],
                              j >= 3 ? "packed" : "plain", names[base]);
                }
                double err = 0, norm = 0;
                for (size_t e = 0; e < o.nout; e++) {
                    const double dv = (double)o.out[2][e] - (double)o.out[0][e];
                    err += dv * dv;
                    norm += (double)o.out[0][e] * (double)o.out[0][e];
                }
                cr_assert(err <= 1e-10 * norm, "case %zu, forced pack_b %dx%d grid=%dx%d: blocks of two rows "
                          "differ from one panel at a time by %g (relative, squared)", i, ov.mr, ov.nr,
                          ov.threads_m, ov.threads_n, norm > 0 ? err / norm : err);
                compared++;
                operands_free(&o);
            }
    cr_assert(compared > 0);
}

/* A packed filter (dyn_conv2d_packed) on every path and family, and NCHW
 * run as NHWC: the paths that read its panels (the in-place path, the
 * pointwise pack-B GEMM) and those that read its copy (the rest) agree
 * with the reference; each case runs twice on one object (the second call
 * finds its panels packed) with the same output. */
Test(conv_paths, packed_filter_each_path_each_family, .timeout = TMO)
{
    static const vx_path paths[] = { VX_PATH_PACK_B, VX_PATH_PACKED, VX_PATH_DOT, VX_PATH_CONV_DIRECT };
    static const char *names[] = { "pack_b", "packed", "dot", "conv_direct" };
    g_packed = 1;
    for (int pi = 0; pi < 4; pi++)
        each_family(paths[pi], 0, names[pi]);
    each_family(VX_PATH_PACK_B, 1, "pack_b");
    g_packed = 0;
}

/* Under one forced plan, the packed filter's panels are the ones a plain
 * call packs: the same output bit for bit, on the in-place path (whole
 * rows, band tiles, NCHW via NHWC from KCRS), the pointwise GEMM (column
 * panels) and NCHW's packed GEMM (row panels; row blocks of two tiles, so
 * blocks start mid-filter). */
Test(conv_paths, packed_filter_matches_plain_bit_for_bit, .timeout = TMO)
{
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    static const shape cases[] = {
        { 2, 16, 8, 8, 17, 3, 3, 1, 1, 1, 1 },
        { 2, 10, 4, 4, 12, 7, 7, 2, 3, 1, 1 },
        { 2, 12, 9, 10, 8, 3, 3, 1, 1, 1, 4 },
        { 1, 17, 8, 9, 19, 1, 1, 1, 0, 1, 1 },
        { 2, 24, 5, 7, 40, 1, 1, 2, 0, 1, 2 },
        { 1, 33, 6, 7, 70, 1, 1, 1, 0, 1, 1 },
        { 2, 100, 4, 5, 70, 1, 1, 1, 0, 1, 1 },  /* pointwise, several k blocks */
        { 1, 150, 5, 6, 40, 1, 1, 1, 0, 1, 2 },  /* ... and two groups */
        { 1, 40, 6, 6, 36, 3, 3, 1, 1, 1, 1 },   /* 360 taps x channels: k blocks in place */
    };
    int compared = 0;
    for (int path = 0; path < 3; path++) /* pack_b; packed on one cell; packed on a 2 x 1 grid */
    for (int f = 0; f < set->nfamilies; f++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int l = 0; l < 2; l++)
                for (int via = 0; via < 2 - l; via++) {
                    const shape *x = &cases[i];
                    vx_conv2d_params p = { .layout = l ? VX_NHWC : VX_NCHW, .n = x->n, .c = x->c, .h = x->h,
                                           .w = x->w, .k = x->k, .r = x->r, .s = x->s, .stride_h = x->stride,
                                           .stride_w = x->stride, .pad_h = x->pad, .pad_w = x->pad,
                                           .dilation_h = x->dil, .dilation_w = x->dil, .groups = x->groups,
                                           .activation = VX_ACT_RELU };
                    vx_gemm_plan ov;
                    memset(&ov, 0, sizeof ov);
                    ov.path = path ? VX_PATH_PACKED : VX_PATH_PACK_B;
                    ov.nr = set->families[f].nr;
                    ov.mr = set->families[f].mr_max;
                    ov.mc = path ? 2 * ov.mr : 0;
                    ov.conv_via_nhwc = via;
                    /* fixed cells: the same tiles both calls */
                    ov.threads_m = ov.threads = path == 2 ? 2 : 1;
                    ov.threads_n = 1;
                    ov.kc = 64;
                    conv_operands o;
                    operands_make(&p, 77 + i, 2, &o);
                    vx_plan_set_override(&ov);
                    const vx_status sa = dyn_conv2d(&p, o.in, o.filt, o.bias, o.out[0]);
                    const vx_status sb = dyn_conv2d_packed(&p, o.in, o.pf, o.bias, o.out[1]);
                    vx_plan_set_override(NULL);
                    cr_assert(sa == VX_OK && sb == VX_OK, "case %zu %s: %s", i, l ? "NHWC" : "NCHW", vx_last_error());
                    cr_assert(memcmp(o.out[0], o.out[1], o.nout * sizeof *o.out[0]) == 0,
                              "case %zu %s%s, forced %s %dx%d: the packed filter's output differs from the plain "
                              "call's", i, l ? "NHWC" : "NCHW", via ? " via NHWC" : "", path ? "packed" : "pack_b",
                              ov.mr, ov.nr);
                    compared++;
                    operands_free(&o);
                }
    cr_assert(compared > 0);
}

/* One object asked for more panel sets than it keeps (NCHW row panels of
 * every tile height of a family, forced in turn): the calls past the
 * eighth set pack from the object's copy instead, and every call still
 * agrees with the float64 reference. */
Test(conv_paths, packed_filter_more_widths_than_sets, .timeout = TMO)
{
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
    const vx_ukernel_family *F = &set->families[0];
    for (int f = 1; f < set->nfamilies; f++) /* the family with the tallest tiles */
        if (set->families[f].mr_max > F->mr_max)
            F = &set->families[f];
    vx_conv2d_params p = { .layout = VX_NCHW, .n = 2, .c = 12, .h = 9, .w = 8, .k = 37, .r = 3, .s = 3,
                           .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .dilation_h = 1,
                           .dilation_w = 1, .groups = 1, .activation = VX_ACT_NONE };
    int64_t oh, ow;
    cr_assert_eq(vx_conv2d_output_dims(&p, &oh, &ow), VX_OK);
    const size_t nin = (size_t)(p.n * p.c * p.h * p.w), nf = (size_t)(p.k * p.c * p.r * p.s),
                 nout = (size_t)(p.n * p.k * oh * ow);
    float *in = malloc(nin * sizeof *in), *filt = malloc(nf * sizeof *filt), *out = malloc(nout * sizeof *out);
    double *ref = malloc(nout * sizeof *ref);
    cr_assert(in && filt && out && ref);
    vt_rng r;
    vt_rng_seed(&r, 4242);
    for (size_t j = 0; j < nin; j++)
        in[j] = vt_rng_float(&r);
    for (size_t j = 0; j < nf; j++)
        filt[j] = vt_rng_float(&r);
    vt_ref_conv2d(&p, in, filt, NULL, ref);
    vx_conv2d_filter *pf = NULL;
    cr_assert_eq(vx_conv2d_filter_create(&p, filt, &pf), VX_OK, "%s", vx_last_error());
    int heights = 0;
    for (int mr = 1; mr <= F->mr_max && mr <= 12; mr++, heights++) {
        vx_gemm_plan ov;
        memset(&ov, 0, sizeof ov);
        ov.path = VX_PATH_PACKED;
        ov.nr = F->nr;
        ov.mr = mr;
        ov.mc = 2 * mr;
        vx_plan_set_override(&ov);
        for (size_t j = 0; j < nout; j++)
            out[j] = NAN;
        const vx_status st = dyn_conv2d_packed(&p, in, pf, NULL, out);
        vx_plan_set_override(NULL);
        cr_assert_eq(st, VX_OK, "forced packed %dx%d: %s", mr, ov.nr, vx_last_error());
        const double err = vt_rel_err(out, 0, 1, ref, 1, (int64_t)nout);
        cr_assert(err <= VT_TOL, "forced packed %dx%d (panel set %d of the object): relative error %.3g", mr,
                  ov.nr, mr, err);
    }
    cr_assert(heights > 8, "only %d tile heights: the object's sets were never exhausted", heights);
    vx_conv2d_filter_destroy(pf);
    free(in);
    free(filt);
    free(out);
    free(ref);
}
