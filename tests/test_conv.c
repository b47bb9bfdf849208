/* dyn_conv2d through the public API only (this executable links the shared
 * library): results against a float64 direct convolution on random data,
 * for a seeded random sweep of valid parameters and for directed shapes;
 * untouched operands and guard zones; an output that is written, never
 * read; vx_conv2d_output_dims; every bad parameter rejected before anything
 * is written; concurrent calls from several application threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "ref_conv.h"

#define TMO 240.0

static const vx_tensor_layout layouts[2] = {VX_NCHW, VX_NHWC};

static void set_flags(vt_conv_case *x, int bias, int relu)
{
    x->bias = bias;
    x->p.activation = relu ? VX_ACT_RELU : VX_ACT_NONE;
}

/* ------------------------------------------------------------------------ */
/* Seeded random sweep                                                      */
/* ------------------------------------------------------------------------ */

static int64_t pick(vt_rng *g, int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)(vt_rng_next(g) % (uint64_t)(hi - lo + 1));
}

/* One valid case. Only the geometry (h, w, r, s, stride, pad, dilation) is
 * redrawn when it gives no output; everything else is drawn once. */
static vt_conv_case draw_case(vt_rng *g)
{
    static const int64_t rs[5] = {1, 2, 3, 5, 7};
    vt_conv_case x;
    memset(&x, 0, sizeof x);
    vx_conv2d_params *p = &x.p;
    p->layout = layouts[pick(g, 0, 1)];
    p->n = pick(g, 0, 3) == 0 ? pick(g, 1, 5) : pick(g, 1, 2);
    switch (pick(g, 0, 3)) {
    case 0:
    case 1: /* dense */
        p->groups = 1;
        p->c = pick(g, 1, 19);
        p->k = pick(g, 1, 19);
        break;
    case 2: /* two groups */
        p->groups = 2;
        p->c = 2 * pick(g, 1, 9);
        p->k = 2 * pick(g, 1, 9);
        break;
    default: /* depthwise, multiplier 1 or 2 */
        p->c = pick(g, 1, 19);
        p->groups = p->c;
        p->k = p->c * pick(g, 1, 2);
        break;
    }
    set_flags(&x, (int)pick(g, 0, 1), (int)pick(g, 0, 1));
    x.seed = vt_rng_next(g);
    int64_t oh, ow;
    do {
        p->h = pick(g, 1, 20);
        p->w = pick(g, 1, 20);
        int64_t shape = pick(g, 0, 5);
        if (shape == 0) { /* 1x7 or 7x1 */
            int64_t t = pick(g, 0, 1);
            p->r = t ? 7 : 1;
            p->s = t ? 1 : 7;
        } else if (shape <= 2) { /* independent */
            p->r = rs[pick(g, 0, 4)];
            p->s = rs[pick(g, 0, 4)];
        } else { /* square */
            p->r = p->s = rs[pick(g, 0, 4)];
        }
        p->stride_h = pick(g, 1, 3);
        p->stride_w = pick(g, 1, 3);
        p->pad_h = pick(g, 0, 3);
        p->pad_w = pick(g, 0, 3);
        p->dilation_h = pick(g, 1, 2);
        p->dilation_w = pick(g, 1, 2);
    } while (!vt_conv_dims(p, &oh, &ow));
    return x;
}

#define SWEEP_PARTS 4
#define SWEEP_PER_PART 100
#define SWEEP_SEED 0x5EEDC0DEull

/* Case i of the main sweep (i in [0, SWEEP_PARTS * SWEEP_PER_PART)): each
 * part has its own generator so a part can be rerun alone. */
static void sweep_part_cases(int part, vt_conv_case *out, int count, uint64_t base)
{
    vt_rng g;
    vt_rng_seed(&g, base + (uint64_t)part * 0x1000193ull);
    for (int i = 0; i < count; i++)
        out[i] = draw_case(&g);
}

static void run_sweep_part(int part, uint64_t base, int count, const char *label)
{
    vt_conv_case cases[SWEEP_PER_PART];
    char tag[128];
    if (count > SWEEP_PER_PART)
        count = SWEEP_PER_PART;
    sweep_part_cases(part, cases, count, base);
    for (int i = 0; i < count; i++) {
        snprintf(tag, sizeof tag, "%s part %d case %d (sweep seed %#llx)", label, part, i,
                 (unsigned long long)base);
        cases[i].tag = tag;
        vt_conv_check(&cases[i]);
    }
}

Test(sweep, part0, .timeout = TMO) { run_sweep_part(0, SWEEP_SEED, SWEEP_PER_PART, "sweep"); }
Test(sweep, part1, .timeout = TMO) { run_sweep_part(1, SWEEP_SEED, SWEEP_PER_PART, "sweep"); }
Test(sweep, part2, .timeout = TMO) { run_sweep_part(2, SWEEP_SEED, SWEEP_PER_PART, "sweep"); }
Test(sweep, part3, .timeout = TMO) { run_sweep_part(3, SWEEP_SEED, SWEEP_PER_PART, "sweep"); }

/* The same generator with another seed, AVX2 kernels forced (on an AVX2-only
 * machine this is the default path; on an AVX-512 machine it is the other
 * kernel family). */
static void init_avx2(void) { setenv("VORTEX_ISA", "avx2", 1); }
Test(sweep, avx2_forced, .init = init_avx2, .timeout = TMO)
{
    run_sweep_part(0, SWEEP_SEED ^ 0xA5A5A5A5ull, 60, "sweep VORTEX_ISA=avx2");
}

/* One library thread: the single-threaded path of every shape. */
Test(sweep, one_library_thread, .timeout = TMO)
{
    vx_set_num_threads(1);
    run_sweep_part(1, SWEEP_SEED ^ 0x5A5A5A5Aull, 60, "sweep vx_set_num_threads(1)");
}

/* The generator really reaches every parameter class the sweep claims to
 * cover (a generator bug would silently shrink the sweep). */
Test(sweep, coverage)
{
    enum {
        L_NCHW, L_NHWC, R1, R2, R3, R5, R7, S1, S2, S3, S5, S7, K1X7, K7X1, RNE, SH1, SH2, SH3,
        SW1, SW2, SW3, SHNE, PAD0, PAD3, PADGER, DIL2, DILNE, G1, G2, DW1, DW2, N5, BIAS, NOBIAS,
        RELU, NORELU, H1, W1, H20, C1, C19, K19, OUT1, NCLASS
    };
    static const char *names[NCLASS] = {
        "NCHW", "NHWC", "r=1", "r=2", "r=3", "r=5", "r=7", "s=1", "s=2", "s=3", "s=5", "s=7",
        "1x7", "7x1", "r!=s", "stride_h=1", "stride_h=2", "stride_h=3", "stride_w=1",
        "stride_w=2", "stride_w=3", "stride_h!=stride_w", "pad=0", "pad=3", "pad>=r", "dilation 2",
        "dilation_h!=dilation_w", "groups=1", "groups=2", "depthwise k=c", "depthwise k=2c",
        "n=5", "bias", "no bias", "relu", "no relu", "h=1", "w=1", "h=20", "c=1", "c=19", "k=19",
        "output 1x1"};
    int seen[NCLASS] = {0};
    for (int part = 0; part < SWEEP_PARTS; part++) {
        vt_conv_case cases[SWEEP_PER_PART];
        sweep_part_cases(part, cases, SWEEP_PER_PART, SWEEP_SEED);
        for (int i = 0; i < SWEEP_PER_PART; i++) {
            const vx_conv2d_params *p = &cases[i].p;
            int64_t oh, ow;
            cr_assert(vt_conv_dims(p, &oh, &ow), "sweep drew an invalid case (part %d, %d)", part,
                      i);
            seen[p->layout == VX_NCHW ? L_NCHW : L_NHWC]++;
            seen[p->r == 1 ? R1 : p->r == 2 ? R2 : p->r == 3 ? R3 : p->r == 5 ? R5 : R7]++;
            seen[p->s == 1 ? S1 : p->s == 2 ? S2 : p->s == 3 ? S3 : p->s == 5 ? S5 : S7]++;
            seen[K1X7] += p->r == 1 && p->s == 7;
            seen[K7X1] += p->r == 7 && p->s == 1;
            seen[RNE] += p->r != p->s;
            seen[SH1 + p->stride_h - 1]++;
            seen[SW1 + p->stride_w - 1]++;
            seen[SHNE] += p->stride_h != p->stride_w;
            seen[PAD0] += p->pad_h == 0 || p->pad_w == 0;
            seen[PAD3] += p->pad_h == 3 || p->pad_w == 3;
            seen[PADGER] += p->pad_h >= p->r || p->pad_w >= p->s;
            seen[DIL2] += p->dilation_h == 2 || p->dilation_w == 2;
            seen[DILNE] += p->dilation_h != p->dilation_w;
            seen[G1] += p->groups == 1;
            seen[G2] += p->groups == 2 && p->c > 2;
            seen[DW1] += p->groups == p->c && p->k == p->c && p->c > 2;
            seen[DW2] += p->groups == p->c && p->k == 2 * p->c && p->c > 2;
            seen[N5] += p->n == 5;
            seen[cases[i].bias ? BIAS : NOBIAS]++;
            seen[p->activation == VX_ACT_RELU ? RELU : NORELU]++;
            seen[H1] += p->h == 1;
            seen[W1] += p->w == 1;
            seen[H20] += p->h == 20;
            seen[C1] += p->c == 1;
            seen[C19] += p->c == 19;
            seen[K19] += p->k == 19;
            seen[OUT1] += oh == 1 && ow == 1;
        }
    }
    for (int i = 0; i < NCLASS; i++)
        cr_assert(seen[i] > 0, "the sweep (%d cases, seed %#llx) never draws a case with %s",
                  SWEEP_PARTS * SWEEP_PER_PART, (unsigned long long)SWEEP_SEED, names[i]);
}

/* ------------------------------------------------------------------------ */
/* Directed shapes                                                          */
/* ------------------------------------------------------------------------ */

/* Runs the case in both layouts, cycling bias / ReLU with idx. */
static void check_both(vt_conv_case x, int idx, const char *tag)
{
    for (int l = 0; l < 2; l++) {
        x.p.layout = layouts[l];
        set_flags(&x, (idx + l) & 1, ((idx + l) >> 1) & 1);
        x.seed = x.seed * 31 + (uint64_t)l + 1;
        x.tag = tag;
        vt_conv_check(&x);
    }
}

/* 1x1, stride 1, no padding: a plain GEMM per image. */
Test(directed, pointwise_stride1, .timeout = TMO)
{
    static const int64_t s[][5] = {/* n c h w k */
                                   {1, 1, 1, 1, 1},    {1, 3, 5, 7, 2},     {2, 17, 9, 11, 33},
                                   {3, 16, 8, 8, 16},  {1, 64, 14, 14, 48}, {5, 7, 3, 2, 31},
                                   {1, 130, 6, 5, 17}, {2, 33, 1, 13, 65},  {1, 5, 20, 19, 129}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4], 1, 1);
        check_both(x, i, "1x1 stride 1");
    }
}

/* 1x1 with stride, padding or groups: not a plain GEMM any more. */
Test(directed, pointwise_strided_padded_grouped, .timeout = TMO)
{
    static const int64_t s[][9] = {/* n c h w k sh sw pad groups */
                                   {1, 16, 14, 14, 32, 2, 2, 0, 1}, {2, 17, 9, 10, 15, 2, 2, 0, 1},
                                   {1, 8, 11, 7, 9, 2, 3, 0, 1},    {3, 5, 5, 6, 7, 3, 1, 0, 1},
                                   {1, 6, 4, 5, 7, 1, 1, 1, 1},     {2, 3, 3, 3, 4, 1, 1, 2, 1},
                                   {1, 12, 7, 9, 18, 1, 1, 0, 2},   {2, 12, 8, 8, 12, 2, 2, 0, 3},
                                   {1, 32, 9, 9, 32, 1, 1, 0, 32}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4], 1, 1);
        x.p.stride_h = s[i][5];
        x.p.stride_w = s[i][6];
        x.p.pad_h = x.p.pad_w = s[i][7];
        x.p.groups = s[i][8];
        check_both(x, i, "1x1 strided/padded/grouped");
    }
}

/* 3x3 pad 1 on 56x56-ish images, output channels around the register tile
 * widths (16, 32, 48) and input channels around them too. */
Test(directed, conv3x3_tile_edges, .timeout = TMO)
{
    static const int64_t s[][5] = {/* n c h w k */
                                   {1, 3, 56, 56, 15},  {1, 16, 56, 56, 16}, {1, 17, 56, 56, 17},
                                   {1, 15, 28, 28, 31}, {1, 32, 28, 28, 32}, {1, 33, 28, 27, 33},
                                   {1, 16, 14, 14, 47}, {1, 31, 14, 15, 48}, {1, 48, 14, 14, 49},
                                   {2, 8, 57, 55, 16},  {1, 47, 7, 7, 15},   {1, 49, 9, 8, 64}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4], 3, 3);
        x.p.pad_h = x.p.pad_w = 1;
        check_both(x, i, "3x3 pad 1, tile edges");
    }
}

/* Large channel counts: the reduction c/groups*r*s (up to 130*9 and
 * 130*25) crosses the 128..512 K blocking. */
Test(directed, large_channels, .timeout = TMO)
{
    static const int64_t s[][8] = {/* n c h w k r pad stride */
                                   {1, 64, 12, 12, 64, 3, 1, 1},  {1, 100, 9, 10, 97, 3, 1, 1},
                                   {1, 129, 11, 9, 128, 3, 1, 1}, {1, 130, 14, 14, 130, 3, 1, 2},
                                   {2, 72, 9, 9, 65, 3, 0, 1},    {1, 128, 10, 10, 66, 5, 2, 1},
                                   {1, 130, 9, 9, 64, 1, 0, 1},   {1, 113, 13, 12, 129, 1, 0, 1},
                                   {1, 96, 9, 9, 120, 5, 0, 2}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x =
            vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4], s[i][5], s[i][5]);
        x.p.pad_h = x.p.pad_w = s[i][6];
        x.p.stride_h = x.p.stride_w = s[i][7];
        check_both(x, i, "large channels");
    }
}

/* Grouped (non-depthwise) convolutions, large groups of channels included. */
Test(directed, grouped, .timeout = TMO)
{
    static const int64_t s[][7] = {/* n c h w k r groups */
                                   {1, 8, 9, 9, 12, 3, 2},    {2, 12, 7, 8, 12, 3, 4},
                                   {1, 6, 10, 10, 9, 5, 3},   {1, 64, 10, 10, 64, 3, 2},
                                   {1, 130, 8, 8, 130, 3, 2}, {1, 9, 6, 6, 27, 3, 9},
                                   {3, 4, 5, 5, 4, 2, 2}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x =
            vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4], s[i][5], s[i][5]);
        x.p.groups = s[i][6];
        x.p.pad_h = x.p.pad_w = s[i][5] / 2;
        check_both(x, i, "grouped");
    }
}

/* Depthwise 3x3 and 5x5 (groups = c, k = c and k = 2c), both layouts,
 * stride 1 and 2, batch up to 5. */
Test(directed, depthwise, .timeout = TMO)
{
    static const int64_t cs[5] = {1, 7, 16, 17, 33};
    int idx = 0;
    for (int ci = 0; ci < 5; ci++)
        for (int64_t r = 3; r <= 5; r += 2)
            for (int64_t mult = 1; mult <= 2; mult++) {
                int64_t c = cs[ci], n = 1 + (idx % 5), hw = 6 + (idx * 5) % 13;
                vt_conv_case x = vt_conv_make(VX_NCHW, n, c, hw, hw + 1, c * mult, r, r);
                x.p.groups = c;
                x.p.pad_h = x.p.pad_w = r / 2;
                x.p.stride_h = x.p.stride_w = 1 + (idx / 2) % 2;
                check_both(x, idx, "depthwise");
                idx++;
            }
}

/* Depthwise with a multiplier of 3, dilation and uneven strides. */
Test(directed, depthwise_mixed, .timeout = TMO)
{
    vt_conv_case x = vt_conv_make(VX_NCHW, 2, 5, 11, 9, 15, 3, 3);
    x.p.groups = 5;
    x.p.pad_h = 2;
    x.p.pad_w = 1;
    x.p.dilation_h = 2;
    x.p.stride_w = 2;
    check_both(x, 0, "depthwise multiplier 3, dilation");
    x = vt_conv_make(VX_NCHW, 1, 32, 20, 20, 32, 7, 7);
    x.p.groups = 32;
    x.p.pad_h = x.p.pad_w = 3;
    check_both(x, 1, "depthwise 7x7");
    x = vt_conv_make(VX_NCHW, 1, 16, 13, 13, 16, 1, 7);
    x.p.groups = 16;
    x.p.pad_w = 3;
    check_both(x, 2, "depthwise 1x7");
}

/* Batches 1..5 on one shape. */
Test(directed, batches, .timeout = TMO)
{
    for (int64_t n = 1; n <= 5; n++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, n, 13, 10, 9, 19, 3, 3);
        x.p.pad_h = x.p.pad_w = 1;
        x.p.stride_w = 2;
        check_both(x, (int)n, "batches");
    }
}

/* Padding as large as or larger than the filter: whole rows/columns of the
 * output see only padding (bias, or zero). */
Test(directed, pad_ge_filter, .timeout = TMO)
{
    static const int64_t s[][8] = {/* c h w k r s pad_h pad_w */
                                   {3, 5, 5, 4, 3, 3, 3, 3}, {2, 4, 6, 3, 1, 1, 2, 3},
                                   {5, 3, 3, 6, 2, 2, 3, 2}, {4, 1, 1, 5, 3, 3, 3, 3},
                                   {7, 6, 4, 9, 3, 5, 3, 3}, {16, 8, 8, 17, 1, 7, 1, 3}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, 2, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4],
                                      s[i][5]);
        x.p.pad_h = s[i][6];
        x.p.pad_w = s[i][7];
        x.p.stride_h = 1 + i % 2;
        check_both(x, i, "pad >= filter");
    }
}

/* Outputs of exactly 1x1: filter = padded input, dilated filter = padded
 * input, and a stride far larger than the input. */
Test(directed, output_1x1, .timeout = TMO)
{
    vt_conv_case x = vt_conv_make(VX_NCHW, 3, 11, 5, 5, 13, 5, 5);
    check_both(x, 0, "output 1x1: filter = input");
    x = vt_conv_make(VX_NCHW, 2, 6, 3, 3, 7, 7, 7);
    x.p.pad_h = x.p.pad_w = 2;
    check_both(x, 1, "output 1x1: filter = padded input");
    x = vt_conv_make(VX_NCHW, 1, 9, 5, 7, 8, 3, 4);
    x.p.dilation_h = x.p.dilation_w = 2;
    check_both(x, 2, "output 1x1: dilated filter = input");
    x = vt_conv_make(VX_NCHW, 2, 5, 7, 6, 4, 3, 3);
    x.p.stride_h = 1000;
    x.p.stride_w = INT64_MAX;
    x.p.pad_h = 1;
    check_both(x, 3, "output 1x1: huge strides");
    x = vt_conv_make(VX_NCHW, 1, 1, 1, 1, 1, 1, 1);
    check_both(x, 4, "output 1x1: everything 1");
    x = vt_conv_make(VX_NCHW, 4, 40, 3, 3, 50, 3, 3);
    check_both(x, 5, "output 1x1: 40 -> 50 channels");
}

/* Non-square filters 1x7 / 7x1 and other asymmetric geometry. */
Test(directed, asymmetric, .timeout = TMO)
{
    static const int64_t s[][12] = {
        /* n c h w k r s sh sw ph pw dil_h,dil_w packed as dh*10+dw */
        {1, 16, 17, 17, 17, 1, 7, 1, 1, 0, 3, 11}, {1, 16, 17, 17, 17, 7, 1, 1, 1, 3, 0, 11},
        {2, 9, 12, 20, 10, 1, 7, 2, 1, 0, 1, 12},  {1, 5, 19, 4, 6, 7, 1, 3, 2, 2, 1, 21},
        {1, 8, 15, 13, 12, 3, 5, 2, 3, 1, 2, 22},  {2, 3, 10, 10, 5, 2, 3, 1, 2, 0, 1, 12},
        {1, 19, 20, 1, 19, 5, 1, 1, 1, 2, 0, 11},  {1, 7, 1, 20, 9, 1, 5, 1, 2, 0, 3, 12}};
    for (int i = 0; i < (int)(sizeof s / sizeof s[0]); i++) {
        vt_conv_case x = vt_conv_make(VX_NCHW, s[i][0], s[i][1], s[i][2], s[i][3], s[i][4],
                                      s[i][5], s[i][6]);
        x.p.stride_h = s[i][7];
        x.p.stride_w = s[i][8];
        x.p.pad_h = s[i][9];
        x.p.pad_w = s[i][10];
        x.p.dilation_h = s[i][11] / 10;
        x.p.dilation_w = s[i][11] % 10;
        check_both(x, i, "asymmetric geometry");
    }
}

/* Dilated 3x3 with "same" padding, and stride 2 downsampling 3x3 pad 1. */
Test(directed, dilated_and_strided, .timeout = TMO)
{
    vt_conv_case x = vt_conv_make(VX_NCHW, 1, 16, 16, 16, 32, 3, 3);
    x.p.pad_h = x.p.pad_w = 2;
    x.p.dilation_h = x.p.dilation_w = 2;
    check_both(x, 0, "dilation 2 same padding");
    x = vt_conv_make(VX_NCHW, 1, 32, 28, 28, 33, 3, 3);
    x.p.pad_h = x.p.pad_w = 1;
    x.p.stride_h = x.p.stride_w = 2;
    check_both(x, 1, "3x3 stride 2 pad 1");
    x = vt_conv_make(VX_NCHW, 1, 3, 32, 32, 16, 7, 7);
    x.p.pad_h = x.p.pad_w = 3;
    x.p.stride_h = x.p.stride_w = 2;
    check_both(x, 2, "7x7 stride 2 pad 3 stem");
}

/* The same shapes called repeatedly (a cached plan the second time) and
 * interleaved with others, with fresh data each time. */
Test(directed, repeated_calls, .timeout = TMO)
{
    for (int rep = 0; rep < 3; rep++) {
        vt_conv_case x = vt_conv_make(VX_NHWC, 2, 17, 9, 9, 33, 3, 3);
        x.p.pad_h = x.p.pad_w = 1;
        x.seed += (uint64_t)rep * 7919;
        check_both(x, rep, "repeated 3x3");
        x = vt_conv_make(VX_NCHW, 1, 24, 7, 7, 24, 5, 5);
        x.p.groups = 24;
        x.p.pad_h = x.p.pad_w = 2;
        x.seed += (uint64_t)rep * 7919;
        check_both(x, rep, "repeated depthwise 5x5");
        x = vt_conv_make(VX_NCHW, 3, 40, 6, 6, 20, 1, 1);
        x.seed += (uint64_t)rep * 7919;
        check_both(x, rep, "repeated 1x1");
    }
}

/* Library thread counts 1, 2 and 3 on shapes large enough to be split. */
Test(directed, library_thread_counts, .timeout = TMO)
{
    for (int t = 1; t <= 3; t++) {
        char tag[64];
        snprintf(tag, sizeof tag, "vx_set_num_threads(%d)", t);
        vx_set_num_threads(t);
        vt_conv_case x = vt_conv_make(VX_NCHW, 3, 32, 20, 20, 48, 3, 3);
        x.p.pad_h = x.p.pad_w = 1;
        check_both(x, t, tag);
        x = vt_conv_make(VX_NCHW, 4, 33, 15, 15, 33, 3, 3);
        x.p.groups = 33;
        x.p.pad_h = x.p.pad_w = 1;
        check_both(x, t + 1, tag);
        x = vt_conv_make(VX_NCHW, 2, 64, 14, 14, 65, 1, 1);
        check_both(x, t + 2, tag);
    }
    vx_set_num_threads(0);
}

/* ------------------------------------------------------------------------ */
/* Concurrent calls from application threads                                */
/* ------------------------------------------------------------------------ */

#define NTHREADS 4
#define PER_THREAD 4

typedef struct {
    int id;
    int failed;
    char msg[1100];
} thread_job;

static vt_conv_case thread_case(int id, int j)
{
    vt_conv_case x;
    switch ((id + j) % PER_THREAD) {
    case 0:
        x = vt_conv_make(VX_NCHW, 2, 16 + id, 12, 11, 32 + id, 3, 3);
        x.p.pad_h = x.p.pad_w = 1;
        break;
    case 1:
        x = vt_conv_make(VX_NHWC, 1 + id % 3, 17 + id, 10, 12, 17 + id, 3, 3);
        x.p.groups = 17 + id;
        x.p.pad_h = x.p.pad_w = 1;
        x.p.stride_w = 2;
        break;
    case 2:
        x = vt_conv_make(VX_NHWC, 1, 40 + 3 * id, 9, 9, 20 + id, 1, 1);
        break;
    default:
        x = vt_conv_make(VX_NCHW, 1, 6 + 2 * id, 13, 9, 10 + 2 * id, 5, 5);
        x.p.groups = 2;
        x.p.pad_h = 2;
        x.p.stride_h = 2;
        x.p.dilation_w = 2;
        break;
    }
    x.p.layout = ((id + j) & 1) ? VX_NHWC : VX_NCHW;
    set_flags(&x, (id + j) & 1, (id >> 1) & 1);
    x.seed = (uint64_t)(1000 * id + j + 1);
    return x;
}

static void *thread_main(void *arg)
{
    thread_job *job = arg;
    for (int rep = 0; rep < 2 && !job->failed; rep++)
        for (int j = 0; j < PER_THREAD; j++) {
            vt_conv_case x = thread_case(job->id, j);
            x.seed += (uint64_t)rep * 100;
            x.tag = "concurrent application threads";
            vt_conv_result r;
            if (!vt_conv_run(&x, &r)) {
                job->failed = 1;
                snprintf(job->msg, sizeof job->msg, "thread %d call %d round %d: %s", job->id, j,
                         rep, r.msg);
                break;
            }
        }
    return NULL;
}

Test(threads, concurrent_calls, .timeout = TMO)
{
    pthread_t t[NTHREADS];
    thread_job jobs[NTHREADS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i].id = i;
        cr_assert_eq(pthread_create(&t[i], NULL, thread_main, &jobs[i]), 0,
                     "pthread_create failed");
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        cr_assert(!jobs[i].failed, "%s", jobs[i].msg);
}

/* ------------------------------------------------------------------------ */
/* vx_conv2d_output_dims                                                    */
/* ------------------------------------------------------------------------ */

static vx_conv2d_params dims_params(int64_t h, int64_t r, int64_t pad, int64_t stride,
                                    int64_t dil)
{
    vx_conv2d_params p;
    memset(&p, 0, sizeof p);
    p.layout = VX_NCHW;
    p.n = 1;
    p.c = 2;
    p.k = 3;
    p.groups = 1;
    p.activation = VX_ACT_NONE;
    p.h = h;
    p.r = r;
    p.pad_h = pad;
    p.stride_h = stride;
    p.dilation_h = dil;
    /* w dimension: a fixed valid geometry with its own known output */
    p.w = 9;
    p.s = 2;
    p.pad_w = 1;
    p.stride_w = 2;
    p.dilation_w = 1;   /* q = (9 + 2 - 1 - 1) / 2 + 1 = 5 */
    return p;
}

static void describe_params(const vx_conv2d_params *p, char *buf, size_t len)
{
    vt_conv_case x;
    memset(&x, 0, sizeof x);
    x.p = *p;
    vt_conv_describe(&x, buf, len);
}

/* Every (h, r, pad, stride, dilation) in a grid, in the h and (transposed)
 * the w dimension: VX_OK with the formula's value, or VX_ERR_INVALID_ARG
 * exactly when the dilated filter is larger than the padded input. Includes
 * numerators of -1 with stride >= 2, where truncating division would give
 * 1 instead of no output. */
Test(dims, formula_grid)
{
    static const int64_t rs[6] = {1, 2, 3, 4, 5, 7};
    int valid = 0, invalid = 0;
    char d[640];
    for (int64_t h = 1; h <= 12; h++)
        for (int ri = 0; ri < 6; ri++)
            for (int64_t pad = 0; pad <= 3; pad++)
                for (int64_t st = 1; st <= 3; st++)
                    for (int64_t dil = 1; dil <= 3; dil++)
                        for (int tr = 0; tr < 2; tr++) {
                            int64_t r = rs[ri];
                            vx_conv2d_params p = dims_params(h, r, pad, st, dil);
                            int64_t num = h + 2 * pad - dil * (r - 1) - 1;
                            int64_t want = num / st + 1, fixed = 5;
                            if (tr) { /* the same geometry in w, the fixed one in h */
                                p.w = h, p.s = r, p.pad_w = pad, p.stride_w = st,
                                p.dilation_w = dil;
                                p.h = 9, p.r = 2, p.pad_h = 1, p.stride_h = 2, p.dilation_h = 1;
                            }
                            describe_params(&p, d, sizeof d);
                            int64_t oh = -77, ow = -77;
                            vx_status s = vx_conv2d_output_dims(&p, &oh, &ow);
                            if (num >= 0) {
                                valid++;
                                cr_assert_eq(s, VX_OK, "vx_conv2d_output_dims: %s (\"%s\") for %s",
                                             vx_status_string(s), vx_last_error(), d);
                                int64_t got = tr ? ow : oh, other = tr ? oh : ow;
                                cr_assert(got == want && other == fixed,
                                          "vx_conv2d_output_dims gave %lldx%lld, expected "
                                          "%lldx%lld for %s",
                                          (long long)oh, (long long)ow,
                                          (long long)(tr ? fixed : want),
                                          (long long)(tr ? want : fixed), d);
                            } else {
                                invalid++;
                                cr_assert_eq(s, VX_ERR_INVALID_ARG,
                                             "vx_conv2d_output_dims returned %s (output "
                                             "%lldx%lld) for a filter larger than the padded "
                                             "input: %s",
                                             vx_status_string(s), (long long)oh, (long long)ow, d);
                                cr_assert(vx_last_error()[0] != '\0',
                                          "no vx_last_error() message for %s", d);
                            }
                        }
    cr_assert(valid > 100 && invalid > 100, "test bug: grid has %d valid, %d invalid", valid,
              invalid);
}

/* Large but representable geometry is still computed exactly. */
Test(dims, large_values)
{
    int64_t oh = 0, ow = 0;
    vx_conv2d_params p = dims_params((int64_t)1 << 40, 1, 0, 1, 1);
    vx_status s = vx_conv2d_output_dims(&p, &oh, &ow);
    cr_assert(s == VX_OK && oh == ((int64_t)1 << 40) && ow == 5,
              "h = 2^40, r = 1: got %s %lldx%lld, expected VX_OK 2^40 x 5 (\"%s\")",
              vx_status_string(s), (long long)oh, (long long)ow, vx_last_error());
    p = dims_params(1000001, 3, 5, 1000, 7);   /* (1000001 + 10 - 14 - 1) / 1000 + 1 = 1000 */
    s = vx_conv2d_output_dims(&p, &oh, &ow);
    cr_assert(s == VX_OK && oh == 1000 && ow == 5,
              "h = 1000001 r = 3 pad 5 stride 1000 dilation 7: got %s %lldx%lld, expected 1000x5",
              vx_status_string(s), (long long)oh, (long long)ow);
    p = dims_params(7, 3, 0, INT64_MAX, 1);
    s = vx_conv2d_output_dims(&p, &oh, &ow);
    cr_assert(s == VX_OK && oh == 1 && ow == 5,
              "stride_h = INT64_MAX: got %s %lldx%lld, expected VX_OK 1x5", vx_status_string(s),
              (long long)oh, (long long)ow);
    for (int l = 0; l < 2; l++) {   /* the layout does not change the output size */
        p = dims_params(10, 3, 1, 2, 1);
        p.layout = layouts[l];
        p.groups = 1;
        s = vx_conv2d_output_dims(&p, &oh, &ow);
        cr_assert(s == VX_OK && oh == 5 && ow == 5, "layout %d: got %s %lldx%lld, expected 5x5",
                  (int)p.layout, vx_status_string(s), (long long)oh, (long long)ow);
    }
}

/* ------------------------------------------------------------------------ */
/* Bad parameters                                                           */
/* ------------------------------------------------------------------------ */

#define ABUF 4096   /* floats in every buffer: enough for the base case, tiny for the huge ones */

static float g_in[ABUF], g_f[ABUF], g_b[ABUF], g_out[ABUF];
static float g_in0[ABUF], g_f0[ABUF], g_b0[ABUF];

/* A valid base: groups 2, pad 1, 3x3 (input 240, filter 108, output 360). */
static vx_conv2d_params base_params(vx_tensor_layout l)
{
    vx_conv2d_params p;
    memset(&p, 0, sizeof p);
    p.layout = l;
    p.n = 2;
    p.c = 4;
    p.h = 5;
    p.w = 6;
    p.k = 6;
    p.r = 3;
    p.s = 3;
    p.stride_h = p.stride_w = 1;
    p.pad_h = p.pad_w = 1;
    p.dilation_h = p.dilation_w = 1;
    p.groups = 2;
    p.activation = VX_ACT_RELU;
    return p;
}

enum { NULL_NONE = 0, NULL_PARAMS = 1, NULL_INPUT = 2, NULL_FILTER = 4, NULL_OUTPUT = 8 };

/* dyn_conv2d (with and without a bias) must return VX_ERR_INVALID_ARG with a
 * message and write nothing: the output buffer keeps its sentinels and the
 * operands are unchanged. vx_conv2d_output_dims must reject the same
 * parameters (unless only a buffer pointer is wrong). */
static void expect_invalid(const vx_conv2d_params *p, int nulls, const char *why)
{
    char d[640];
    if (p)
        describe_params(p, d, sizeof d);
    else
        snprintf(d, sizeof d, "dyn_conv2d(NULL params)");
    vt_rng g;
    vt_rng_seed(&g, 99);
    for (int i = 0; i < ABUF; i++) {
        g_in[i] = vt_rng_float(&g);
        g_f[i] = vt_rng_float(&g);
        g_b[i] = vt_rng_float(&g);
    }
    memcpy(g_in0, g_in, sizeof g_in);
    memcpy(g_f0, g_f, sizeof g_f);
    memcpy(g_b0, g_b, sizeof g_b);
    for (int bi = 0; bi < 2; bi++) {
        vt_fill_sentinel(g_out, ABUF);
        vx_status s = dyn_conv2d(p, (nulls & NULL_INPUT) ? NULL : g_in,
                                 (nulls & NULL_FILTER) ? NULL : g_f, bi ? g_b : NULL,
                                 (nulls & NULL_OUTPUT) ? NULL : g_out);
        cr_assert_eq(s, VX_ERR_INVALID_ARG,
                     "%s (%s, bias %s): returned %s (%d), expected VX_ERR_INVALID_ARG", d, why,
                     bi ? "given" : "NULL", vx_status_string(s), (int)s);
        const char *msg = vx_last_error();
        cr_assert(msg != NULL && msg[0] != '\0', "%s (%s): vx_last_error() is empty", d, why);
        int64_t bad = vt_check_sentinel(g_out, ABUF);
        cr_assert(bad < 0, "%s (%s): output written at float %lld although the call failed", d,
                  why, (long long)bad);
        cr_assert(memcmp(g_in, g_in0, sizeof g_in) == 0 && memcmp(g_f, g_f0, sizeof g_f) == 0 &&
                      memcmp(g_b, g_b0, sizeof g_b) == 0,
                  "%s (%s): an input operand was modified", d, why);
    }
    if (!(nulls & ~NULL_PARAMS)) {
        int64_t oh = -5, ow = -5;
        vx_status s = vx_conv2d_output_dims(p, &oh, &ow);
        cr_assert_eq(s, VX_ERR_INVALID_ARG,
                     "vx_conv2d_output_dims for %s (%s): returned %s (output %lldx%lld), "
                     "expected VX_ERR_INVALID_ARG",
                     d, why, vx_status_string(s), (long long)oh, (long long)ow);
        cr_assert(vx_last_error()[0] != '\0', "vx_conv2d_output_dims for %s (%s): no message",
                  d, why);
    }
}

/* The base case itself is valid and correct (so each rejection below is
 * caused by the one field changed). */
static void check_base(vx_tensor_layout l)
{
    vt_conv_case x;
    memset(&x, 0, sizeof x);
    x.p = base_params(l);
    x.bias = 1;
    x.seed = 4242;
    x.tag = "bad-argument base case";
    cr_assert(vt_conv_output_count(&x.p) <= ABUF && vt_conv_input_count(&x.p) <= ABUF &&
                  vt_conv_filter_count(&x.p) <= ABUF,
              "test bug: base case larger than the buffers");
    vt_conv_check(&x);
}

typedef struct {
    size_t off;      /* offset of an int64_t field in vx_conv2d_params */
    int64_t value;
    const char *why;
} field_change;

#define F(field) offsetof(vx_conv2d_params, field)

Test(args, bad_sizes_and_geometry, .timeout = TMO)
{
    static const field_change ch[] = {
        {F(n), 0, "n = 0"},
        {F(n), -1, "n < 0"},
        {F(n), INT64_MIN, "n = INT64_MIN"},
        {F(c), 0, "c = 0"},
        {F(c), -2, "c < 0"},
        {F(h), 0, "h = 0"},
        {F(h), -1, "h < 0"},
        {F(w), 0, "w = 0"},
        {F(w), -3, "w < 0"},
        {F(k), 0, "k = 0"},
        {F(k), -2, "k < 0"},
        {F(r), 0, "r = 0"},
        {F(r), -1, "r < 0"},
        {F(s), 0, "s = 0"},
        {F(s), -1, "s < 0"},
        {F(stride_h), 0, "stride_h = 0"},
        {F(stride_h), -1, "stride_h < 0"},
        {F(stride_w), 0, "stride_w = 0"},
        {F(stride_w), -2, "stride_w < 0"},
        {F(pad_h), -1, "pad_h < 0"},
        {F(pad_w), -1, "pad_w < 0"},
        {F(pad_w), INT64_MIN, "pad_w = INT64_MIN"},
        {F(dilation_h), 0, "dilation_h = 0"},
        {F(dilation_h), -1, "dilation_h < 0"},
        {F(dilation_w), 0, "dilation_w = 0"},
        {F(dilation_w), -1, "dilation_w < 0"},
        {F(groups), 0, "groups = 0"},
        {F(groups), -2, "groups < 0 (divides c and k)"},
        {F(groups), 3, "groups = 3 does not divide c = 4"},
        {F(groups), 4, "groups = 4 does not divide k = 6"},
        {F(groups), 8, "groups > c"},
    };
    for (int l = 0; l < 2; l++) {
        check_base(layouts[l]);
        for (int i = 0; i < (int)(sizeof ch / sizeof ch[0]); i++) {
            vx_conv2d_params p = base_params(layouts[l]);
            memcpy((char *)&p + ch[i].off, &ch[i].value, sizeof(int64_t));
            expect_invalid(&p, NULL_NONE, ch[i].why);
        }
    }
}

/* The dilated filter larger than the padded input: no output. */
Test(args, empty_output, .timeout = TMO)
{
    for (int l = 0; l < 2; l++) {
        vx_conv2d_params p = base_params(layouts[l]);
        p.pad_h = 0;
        p.h = 2;
        expect_invalid(&p, NULL_NONE, "h = 2 < r = 3, no padding");
        p = base_params(layouts[l]);
        p.pad_w = 0;
        p.s = 7;
        expect_invalid(&p, NULL_NONE, "s = 7 > w = 6, no padding");
        p = base_params(layouts[l]);
        p.r = 8;   /* 5 + 2 = 7 < 8 */
        expect_invalid(&p, NULL_NONE, "r = 8 > h + 2*pad = 7");
        p = base_params(layouts[l]);
        p.dilation_w = 4;   /* 4*2+1 = 9 > 6 + 2 */
        expect_invalid(&p, NULL_NONE, "dilated s (9) > w + 2*pad (8)");
        /* numerator exactly -1: truncating division with stride >= 2 would give 1 */
        p = base_params(layouts[l]);
        p.h = 2;
        p.r = 4;
        p.pad_h = 0;
        p.stride_h = 2;
        expect_invalid(&p, NULL_NONE, "h = 2, r = 4, stride 2: (2-3-1)/2 must not round to 0");
        p = base_params(layouts[l]);
        p.w = 4;
        p.s = 3;
        p.pad_w = 0;
        p.dilation_w = 2;
        p.stride_w = 3;
        expect_invalid(&p, NULL_NONE, "w = 4, dilated s = 5, stride 3");
        p = base_params(layouts[l]);
        p.h = 1;
        p.w = 1;
        p.r = 4;
        p.s = 4;
        p.pad_h = p.pad_w = 1;
        p.stride_h = p.stride_w = 3;
        expect_invalid(&p, NULL_NONE, "1x1 input, 4x4 filter, pad 1, stride 3");
    }
}

Test(args, bad_enums, .timeout = TMO)
{
    static const int bad_layout[] = {7, 2, -1, 101};
    static const int bad_act[] = {2, 7, -1, 100};
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < 4; i++) {
            vx_conv2d_params p = base_params(layouts[l]);
            p.layout = (vx_tensor_layout)bad_layout[i];
            expect_invalid(&p, NULL_NONE, "invalid layout");
            p = base_params(layouts[l]);
            p.activation = (vx_activation)bad_act[i];
            expect_invalid(&p, NULL_NONE, "invalid activation");
        }
    }
}

Test(args, null_pointers, .timeout = TMO)
{
    expect_invalid(NULL, NULL_PARAMS, "params == NULL");
    for (int l = 0; l < 2; l++) {
        vx_conv2d_params p = base_params(layouts[l]);
        expect_invalid(&p, NULL_INPUT, "input == NULL");
        expect_invalid(&p, NULL_FILTER, "filter == NULL");
        expect_invalid(&p, NULL_OUTPUT, "output == NULL");
        expect_invalid(&p, NULL_INPUT | NULL_FILTER | NULL_OUTPUT, "all buffers NULL");
    }
    int64_t oh, ow;
    vx_status s = vx_conv2d_output_dims(NULL, &oh, &ow);
    cr_assert_eq(s, VX_ERR_INVALID_ARG, "vx_conv2d_output_dims(NULL, ...) returned %s",
                 vx_status_string(s));
}

/* Element counts (or intermediate geometry) that overflow int64. The real
 * buffers hold ABUF floats: a library that misses the check writes far
 * outside them or crashes. */
Test(args, overflow, .timeout = TMO)
{
    const int64_t T20 = (int64_t)1 << 20, T12 = (int64_t)1 << 12, T32 = (int64_t)1 << 32;
    for (int l = 0; l < 2; l++) {
        vx_conv2d_params p = base_params(layouts[l]);
        p.groups = 1;
        p.r = p.s = 1;
        p.pad_h = p.pad_w = 0;
        const vx_conv2d_params one = p;

        /* input n*c*h*w = 2^64; filter, output fit */
        p = one;
        p.n = T20, p.c = T20, p.h = T12, p.w = T12, p.k = 1;
        expect_invalid(&p, NULL_NONE, "n*c*h*w = 2^64");
        /* h*w = 2^64 with everything else 1 */
        p = one;
        p.n = 1, p.c = 1, p.k = 1, p.h = T32, p.w = T32;
        expect_invalid(&p, NULL_NONE, "h*w = 2^64, n = c = k = 1");
        p = one;
        p.n = 1, p.c = 1, p.k = 1, p.h = INT64_MAX, p.w = 2;
        expect_invalid(&p, NULL_NONE, "h = INT64_MAX, w = 2");
        /* filter k*c*r*s = 2^64, input and output fit */
        p = one;
        p.n = 1, p.h = 1, p.w = 1, p.c = T32, p.k = T32;
        expect_invalid(&p, NULL_NONE, "k*c = 2^64 (filter), 1x1 image");
        p = one;
        p.n = 1, p.c = 1, p.k = 1, p.h = 1, p.w = 1, p.r = T32, p.s = T32;
        p.pad_h = p.pad_w = T32 / 2;   /* output 2x2, input 1 element */
        expect_invalid(&p, NULL_NONE, "r*s = 2^64 (filter), 1x1 input padded by 2^31");
        /* output n*k*p*q = 2^64, input and filter fit */
        p = one;
        p.n = T32, p.k = T32, p.c = 1, p.h = 1, p.w = 1;
        expect_invalid(&p, NULL_NONE, "n*k = 2^64 (output)");
        /* padding makes the output overflow: p = q = 2^33 + 1 */
        p = one;
        p.n = 1, p.c = 1, p.k = 1, p.h = 1, p.w = 1, p.pad_h = T32, p.pad_w = T32;
        expect_invalid(&p, NULL_NONE, "pad 2^32 each side: p*q > 2^66");
        /* h + 2*pad overflows int64 */
        p = one;
        p.n = 1, p.c = 1, p.k = 1, p.pad_h = INT64_MAX / 2 + 1;
        expect_invalid(&p, NULL_NONE, "h + 2*pad_h overflows int64");
        p = one;
        p.pad_w = INT64_MAX;
        expect_invalid(&p, NULL_NONE, "pad_w = INT64_MAX");
        /* dilation*(r-1) overflows int64 */
        p = one;
        p.r = 5, p.dilation_h = INT64_MAX / 2;
        expect_invalid(&p, NULL_NONE, "dilation_h*(r-1) overflows int64");
        p = one;
        p.s = INT64_MAX, p.dilation_w = INT64_MAX;
        expect_invalid(&p, NULL_NONE, "s = dilation_w = INT64_MAX");
        /* everything huge */
        p = one;
        p.n = p.c = p.h = p.w = p.k = INT64_MAX;
        expect_invalid(&p, NULL_NONE, "n = c = h = w = k = INT64_MAX");
    }
}

/* A failed call leaves the next valid one unaffected, and the message
 * belongs to the failing thread. */
static void *fail_in_thread(void *arg)
{
    int *res = arg;
    res[0] = vx_last_error() != NULL && vx_last_error()[0] == '\0';
    vx_conv2d_params p = base_params(VX_NCHW);
    p.groups = 3;
    float buf[4] = {0};
    res[1] = dyn_conv2d(&p, buf, buf, NULL, buf) == VX_ERR_INVALID_ARG &&
             vx_last_error()[0] != '\0';
    return NULL;
}

Test(args, error_then_success_and_per_thread_message, .timeout = TMO)
{
    vx_conv2d_params p = base_params(VX_NHWC);
    p.stride_h = 0;
    expect_invalid(&p, NULL_NONE, "stride_h = 0");
    char mine[512];
    snprintf(mine, sizeof mine, "%s", vx_last_error());
    int res[2] = {0, 0};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fail_in_thread, res), 0);
    pthread_join(t, NULL);
    cr_assert(res[0], "a new thread sees another thread's error message");
    cr_assert(res[1], "a failed dyn_conv2d in a second thread set no message");
    cr_assert_str_eq(vx_last_error(), mine,
                     "this thread's message changed after another thread failed");
    check_base(VX_NHWC);
    check_base(VX_NCHW);
}
