/* vortex-bench-conv: Vortex dyn_conv2d against the oneDNN convolution
 * primitive (C API, forward_inference, fp32), same plain layout for both:
 * NCHW input / KCRS filter (oneDNN nchw / oihw, goihw with groups) or NHWC
 * input / KRSC filter (nhwc / ohwi, gohwi), bias when the case has one, ReLU
 * (oneDNN: an eltwise post-op) when the case has it.
 *
 * Two modes per suite and layout:
 * - steady: the oneDNN primitive is created once per shape (not timed) and
 *   reused; both libraries run warm, repetitions interleaved (rotating who
 *   goes first), each sample a batch of back-to-back calls lasting at least
 *   --min-sample-ms, median per-call time reported;
 * - dynamic: the suite's shapes in a shuffled order (fresh order each pass),
 *   each called once per pass, as a server whose shapes change from call to
 *   call; oneDNN pays memory descriptors + primitive descriptor + primitive
 *   + memory objects + execution (+ destruction) on every call, with its
 *   primitive cache capacity set to 0 for the mode; Vortex pays its call
 *   (with whatever plan cache it keeps); median over the passes.
 * Every case checks Vortex's output against oneDNN's (relative Frobenius
 * error, --tol). See --help. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <vortex/vortex.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_DNNL
#include <dnnl.h>
#endif
#include "bench_dnnl.h"
#ifdef HAVE_TBB_ARENA
int vxb_tbb_arena_init(int threads);
void vxb_tbb_arena_run(void (*fn)(void *), void *arg);
int vxb_tbb_default_concurrency(void);
#endif

#define PROG "vortex-bench-conv"

/* ---- libraries ---------------------------------------------------------- */

/* oneDNN's reference kernel, alone ("ref:any") or inside a wrapper that
 * reorders around it ("jit_uni_ncsp:conv+ref:any": nchw on an AVX-512 CPU
 * whose blocked kernels the plain weights do not reach; 100x slower).
 * Plain string logic: the summary uses it in builds without oneDNN too. */
static int impl_is_ref(const char *impl)
{
    return strncmp(impl, "ref", 3) == 0 || strstr(impl, "+ref") != NULL;
}

enum { L_VX, L_DNNL, NLIB };
static const char *const lib_name[NLIB] = {"vortex", "dnnl"};
static const int lib_built[NLIB] = {
    1,
#ifdef HAVE_DNNL
    1,
#else
    0,
#endif
};
static int lib_on[NLIB];
static int dnnl_in_arena __attribute__((unused)); /* dnnl calls run in the TBB arena */

enum { LAY_NCHW = 0, LAY_NHWC = 1 };
static const char *const lay_name[2] = {"nchw", "nhwc"};
enum { MODE_STEADY = 0, MODE_DYNAMIC = 1 };
static const char *const mode_name[2] = {"steady", "dynamic"};

/* oneDNN memory formats: plain (the rule); auto: plain, except that the
 * weights alone go to oneDNN's format where the plain weights leave it only
 * its reference kernel; or 'any' for the weights or for every tensor, the
 * reorders outside the timing (oneDNN's best case). */
enum { FMT_PLAIN = 0, FMT_WEIGHTS_ANY = 1, FMT_ANY = 2, FMT_AUTO = 3, NFMT };
static const char *const fmt_name[NFMT] = {"plain", "weights-any", "any", "auto"};

/* ---- cases -------------------------------------------------------------- */

typedef struct {
    char suite[32];
    char name[48];
    int64_t n, c, h, w, k, r, s;
    int64_t sh, sw, ph, pw, dh, dw, g;
    int bias, relu;
    int quick; /* in the --quick subset */
} ccase;

typedef struct {
    ccase *v;
    int n, cap;
} case_list;

static ccase *add_case(case_list *l, const ccase *c)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(1);
        }
    }
    l->v[l->n] = *c;
    return &l->v[l->n++];
}

static ccase mk(const char *suite, const char *name, int64_t n, int64_t c, int64_t h, int64_t w,
                int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad, int64_t dil,
                int64_t g, int bias, int relu)
{
    ccase x;
    memset(&x, 0, sizeof x);
    snprintf(x.suite, sizeof x.suite, "%s", suite);
    snprintf(x.name, sizeof x.name, "%s", name);
    x.n = n, x.c = c, x.h = h, x.w = w, x.k = k, x.r = r, x.s = s;
    x.sh = x.sw = stride;
    x.ph = x.pw = pad;
    x.dh = x.dw = dil;
    x.g = g;
    x.bias = bias;
    x.relu = relu;
    x.quick = 1;
    return x;
}

/* Output size, floor division as the header documents; 0 when no output. */
static int out_dims(const ccase *c, int64_t *p, int64_t *q)
{
    int64_t nh = c->h + 2 * c->ph - c->dh * (c->r - 1) - 1;
    int64_t nw = c->w + 2 * c->pw - c->dw * (c->s - 1) - 1;
    if (nh < 0 || nw < 0 || c->sh < 1 || c->sw < 1)
        return 0;
    *p = nh / c->sh + 1;
    *q = nw / c->sw + 1;
    return 1;
}

static double case_flops(const ccase *c)
{
    int64_t p = 0, q = 0;
    if (!out_dims(c, &p, &q))
        return 0;
    return 2.0 * (double)c->n * (double)c->k * (double)p * (double)q * (double)(c->c / c->g) *
           (double)c->r * (double)c->s;
}

static int64_t in_count(const ccase *c) { return c->n * c->c * c->h * c->w; }
static int64_t filt_count(const ccase *c) { return c->k * (c->c / c->g) * c->r * c->s; }
static int64_t out_count(const ccase *c)
{
    int64_t p = 0, q = 0;
    out_dims(c, &p, &q);
    return c->n * c->k * p * q;
}

/* ResNet-50 (v1.5, torchvision: stride on the 3x3 of each stage's first
 * block) at 224x224: the stem and every distinct conv of conv2_x..conv5_x.
 * BN folded into a bias (every layer has one); ReLU where the layer is
 * followed by one (not on the expanding 1x1 and the projection, which feed
 * the residual add). conv2_x's projection 64->256 has the shape of its
 * expanding 1x1 and is not repeated. */
static const struct {
    const char *name;
    int c, hw, k, r, stride, pad, relu;
} resnet_layers[] = {
    {"stem7x7s2_3-64", 3, 224, 64, 7, 2, 3, 1},
    {"c2_1x1_64-64", 64, 56, 64, 1, 1, 0, 1},
    {"c2_3x3_64", 64, 56, 64, 3, 1, 1, 1},
    {"c2_1x1_64-256", 64, 56, 256, 1, 1, 0, 0},
    {"c2_1x1_256-64", 256, 56, 64, 1, 1, 0, 1},
    {"c3_1x1_256-128", 256, 56, 128, 1, 1, 0, 1},
    {"c3_3x3s2_128", 128, 56, 128, 3, 2, 1, 1},
    {"c3_1x1_128-512", 128, 28, 512, 1, 1, 0, 0},
    {"c3_proj_256-512s2", 256, 56, 512, 1, 2, 0, 0},
    {"c3_1x1_512-128", 512, 28, 128, 1, 1, 0, 1},
    {"c3_3x3_128", 128, 28, 128, 3, 1, 1, 1},
    {"c4_1x1_512-256", 512, 28, 256, 1, 1, 0, 1},
    {"c4_3x3s2_256", 256, 28, 256, 3, 2, 1, 1},
    {"c4_1x1_256-1024", 256, 14, 1024, 1, 1, 0, 0},
    {"c4_proj_512-1024s2", 512, 28, 1024, 1, 2, 0, 0},
    {"c4_1x1_1024-256", 1024, 14, 256, 1, 1, 0, 1},
    {"c4_3x3_256", 256, 14, 256, 3, 1, 1, 1},
    {"c5_1x1_1024-512", 1024, 14, 512, 1, 1, 0, 1},
    {"c5_3x3s2_512", 512, 14, 512, 3, 2, 1, 1},
    {"c5_1x1_512-2048", 512, 7, 2048, 1, 1, 0, 0},
    {"c5_proj_1024-2048s2", 1024, 14, 2048, 1, 2, 0, 0},
    {"c5_1x1_2048-512", 2048, 7, 512, 1, 1, 0, 1},
    {"c5_3x3_512", 512, 7, 512, 3, 1, 1, 1},
};
#define N_RESNET_LAYERS ((int)(sizeof resnet_layers / sizeof *resnet_layers))
static const int resnet_batches[] = {1, 3, 8, 13, 32};
#define RESNET_QUICK_BATCH_A 1
#define RESNET_QUICK_BATCH_B 8

static void suite_resnet50(case_list *l)
{
    for (size_t b = 0; b < sizeof resnet_batches / sizeof *resnet_batches; b++)
        for (int i = 0; i < N_RESNET_LAYERS; i++) {
            char name[48];
            snprintf(name, sizeof name, "%s_b%d", resnet_layers[i].name, resnet_batches[b]);
            int hw = resnet_layers[i].hw;
            ccase x = mk("resnet50", name, resnet_batches[b], resnet_layers[i].c, hw, hw,
                         resnet_layers[i].k, resnet_layers[i].r, resnet_layers[i].r,
                         resnet_layers[i].stride, resnet_layers[i].pad, 1, 1, 1,
                         resnet_layers[i].relu);
            x.quick = resnet_batches[b] == RESNET_QUICK_BATCH_A ||
                      resnet_batches[b] == RESNET_QUICK_BATCH_B;
            add_case(l, &x);
        }
}

/* mobilenet-dw: the depthwise 3x3 convolutions of MobileNetV2 (width 1.0,
 * 224x224; Sandler et al. 2018, Table 2: each bottleneck's depthwise conv
 * runs on t*c channels, t = 6 except the first), one per distinct
 * (channels, input size, stride), bias (folded BN) and ReLU(6 -> ReLU), at
 * batch 1 and 8. Not one of the suites: it exercises the direct
 * depthwise family. */
static const struct {
    int c, hw, stride;
} mobilenet_dw[] = {
    {32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1},
    {192, 28, 2}, {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1},
};

static void suite_mobilenet_dw(case_list *l)
{
    static const int batches[] = {1, 8};
    for (int b = 0; b < 2; b++)
        for (size_t i = 0; i < sizeof mobilenet_dw / sizeof *mobilenet_dw; i++) {
            char name[48];
            snprintf(name, sizeof name, "dw%d_%d%s_b%d", mobilenet_dw[i].c, mobilenet_dw[i].hw,
                     mobilenet_dw[i].stride == 2 ? "s2" : "", batches[b]);
            ccase x = mk("mobilenet-dw", name, batches[b], mobilenet_dw[i].c, mobilenet_dw[i].hw,
                         mobilenet_dw[i].hw, mobilenet_dw[i].c, 3, 3, mobilenet_dw[i].stride, 1, 1,
                         mobilenet_dw[i].c, 1, 1);
            x.quick = batches[b] == 1;
            add_case(l, &x);
        }
}

/* cnn-random: 60 shapes from the Vortex paper's CNN range (its Table 4:
 * batch 1..64, feature map 4..768, filter 1..11, c 3..832, k 16..512,
 * stride 1..2). SplitMix64 from CNN_RANDOM_SEED; batch, feature map (square),
 * c and k log-uniform, filter (square) uniform over the odd sizes 1..11 with
 * 'same' padding (r-1)/2, stride 1 or 2, bias and ReLU each with
 * probability 1/2, groups 1. A draw is rejected when it exceeds
 * CNN_RANDOM_MAX_GFLOP or an input/output tensor exceeds
 * CNN_RANDOM_MAX_ELEMS floats (so each case stays within a few seconds on a
 * 2-core machine and 64 MiB per tensor). --quick keeps the cases of at most
 * CNN_RANDOM_QUICK_GFLOP. */
#define CNN_RANDOM_SEED 0x5EEDC0DEull
#define CNN_RANDOM_COUNT 60
#define CNN_RANDOM_MAX_GFLOP 20.0
#define CNN_RANDOM_MAX_ELEMS (16ll << 20)
#define CNN_RANDOM_QUICK_GFLOP 4.0

static double unit(uint64_t *s) { return (double)(bench_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

static int64_t log_uniform(uint64_t *s, int64_t lo, int64_t hi)
{
    double v = exp(log((double)lo) + unit(s) * (log((double)hi + 1.0) - log((double)lo)));
    int64_t x = (int64_t)floor(v);
    return x < lo ? lo : (x > hi ? hi : x);
}

static void suite_cnn_random(case_list *l)
{
    uint64_t s = CNN_RANDOM_SEED;
    int got = 0;
    while (got < CNN_RANDOM_COUNT) {
        int64_t n = log_uniform(&s, 1, 64);
        int64_t hw = log_uniform(&s, 4, 768);
        int64_t r = 1 + 2 * (int64_t)(bench_splitmix64(&s) % 6);
        int64_t c = log_uniform(&s, 3, 832);
        int64_t k = log_uniform(&s, 16, 512);
        int64_t stride = 1 + (int64_t)(bench_splitmix64(&s) % 2);
        int bias = (int)(bench_splitmix64(&s) & 1), relu = (int)(bench_splitmix64(&s) & 1);
        char name[48];
        snprintf(name, sizeof name, "r%02d", got);
        ccase x = mk("cnn-random", name, n, c, hw, hw, k, r, r, stride, (r - 1) / 2, 1, 1, bias,
                     relu);
        double gf = case_flops(&x) * 1e-9;
        if (gf <= 0 || gf > CNN_RANDOM_MAX_GFLOP || in_count(&x) > CNN_RANDOM_MAX_ELEMS ||
            out_count(&x) > CNN_RANDOM_MAX_ELEMS)
            continue;
        x.quick = gf <= CNN_RANDOM_QUICK_GFLOP;
        add_case(l, &x);
        got++;
    }
}

/* Tiny shapes for the CI smoke: every feature once (strides, padding,
 * dilation, odd sizes, groups, depthwise, bias, ReLU). */
static void suite_small(case_list *l)
{
    ccase v[] = {
        /*             name            n   c   h   w   k  r  s str pad dil  g bias relu */
        mk("small", "t00_3x3", 1, 3, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1),
        mk("small", "t01_1x1_odd", 2, 8, 7, 9, 12, 1, 1, 1, 0, 1, 1, 0, 0),
        mk("small", "t02_3x3s2", 1, 16, 10, 10, 16, 3, 3, 2, 1, 1, 1, 1, 0),
        mk("small", "t03_5x5", 3, 4, 6, 6, 8, 5, 5, 1, 2, 1, 1, 0, 1),
        mk("small", "t04_dw3x3", 2, 32, 12, 12, 32, 3, 3, 1, 1, 1, 32, 1, 1),
        mk("small", "t05_dw3x3s2", 1, 16, 9, 9, 16, 3, 3, 2, 1, 1, 16, 0, 0),
        mk("small", "t06_dw_mult2", 1, 8, 7, 7, 16, 3, 3, 1, 1, 1, 8, 1, 0),
        mk("small", "t07_g2_3x3", 1, 8, 8, 8, 16, 3, 3, 1, 1, 1, 2, 1, 1),
        mk("small", "t08_g2_1x1", 2, 16, 5, 5, 8, 1, 1, 1, 0, 1, 2, 0, 0),
        mk("small", "t09_dil2", 1, 8, 12, 12, 8, 3, 3, 1, 2, 2, 1, 1, 0),
        mk("small", "t10_c1k1", 1, 1, 5, 5, 1, 3, 3, 1, 0, 1, 1, 0, 0),
        mk("small", "t11_7x7s2", 4, 3, 11, 11, 16, 7, 7, 2, 3, 1, 1, 0, 1),
        mk("small", "t12_c64_4x4", 1, 64, 4, 4, 64, 3, 3, 1, 1, 1, 1, 1, 1),
        mk("small", "t13_3x1_s2x1", 1, 8, 9, 7, 8, 3, 1, 2, 1, 1, 1, 1, 0),
    };
    /* t13: stride 2 x 1, pad 1 x 0 (asymmetric). */
    v[13].sw = 1;
    v[13].pw = 0;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        add_case(l, &v[i]);
}

/* "n=1 c=64 h=56 w=56 k=64 r=3 s=3 stride=1 pad=1 dil=1 g=1 bias=1 relu=1
 * name=x" (spaces or commas; w defaults to h, s to r; stride/pad/dil set
 * both directions, stride_h=.. etc. one). Returns 0 or -1 with *why set. */
static int parse_spec(const char *text, const char *suite, const char *defname, ccase *out,
                      const char **why)
{
    ccase x = mk(suite, defname, 1, 0, 0, -1, 0, 0, -1, 1, 0, 1, 1, 0, 0);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    int any = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \t\r\n,", &save); t;
         t = strtok_r(NULL, " \t\r\n,", &save)) {
        char *eq = strchr(t, '=');
        if (!eq) {
            *why = "expected KEY=VALUE";
            return -1;
        }
        *eq = 0;
        const char *key = t, *val = eq + 1;
        if (!strcmp(key, "name")) {
            snprintf(x.name, sizeof x.name, "%s", val);
            continue;
        }
        char *end;
        long long v = strtoll(val, &end, 10);
        if (end == val || *end) {
            *why = "a value is not an integer";
            return -1;
        }
        struct { const char *k; int64_t *a, *b; } keys[] = {
            {"n", &x.n, NULL}, {"c", &x.c, NULL}, {"h", &x.h, NULL}, {"w", &x.w, NULL},
            {"k", &x.k, NULL}, {"r", &x.r, NULL}, {"s", &x.s, NULL},
            {"stride", &x.sh, &x.sw}, {"stride_h", &x.sh, NULL}, {"stride_w", &x.sw, NULL},
            {"pad", &x.ph, &x.pw}, {"pad_h", &x.ph, NULL}, {"pad_w", &x.pw, NULL},
            {"dil", &x.dh, &x.dw}, {"dil_h", &x.dh, NULL}, {"dil_w", &x.dw, NULL},
            {"g", &x.g, NULL}, {"groups", &x.g, NULL},
        };
        int found = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (!strcmp(key, keys[i].k)) {
                *keys[i].a = v;
                if (keys[i].b)
                    *keys[i].b = v;
                found = 1;
            }
        if (!strcmp(key, "bias")) {
            x.bias = v != 0;
            found = 1;
        } else if (!strcmp(key, "relu")) {
            x.relu = v != 0;
            found = 1;
        }
        if (!found) {
            *why = "unknown key (n c h w k r s stride pad dil stride_h stride_w pad_h pad_w "
                   "dil_h dil_w g bias relu name)";
            return -1;
        }
        any = 1;
    }
    if (!any) {
        *why = "empty";
        return 1;
    }
    if (x.w < 0)
        x.w = x.h;
    if (x.s < 0)
        x.s = x.r;
    int64_t p, q;
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1 || x.k < 1 || x.r < 1 || x.s < 1 || x.sh < 1 ||
        x.sw < 1 || x.ph < 0 || x.pw < 0 || x.dh < 1 || x.dw < 1 || x.g < 1 || x.c % x.g ||
        x.k % x.g || !out_dims(&x, &p, &q)) {
        *why = "needs n c h k r >= 1, strides and dilations >= 1, pads >= 0, g dividing c and "
               "k, and an output of at least 1x1";
        return -1;
    }
    *out = x;
    return 0;
}

/* A suite file: one case per line in the --shape syntax, '#' comments; the
 * suite is named after the file (without directory and extension). */
static int suite_file(case_list *l, const char *path)
{
    const int first = l->n;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char suite[32];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(suite, sizeof suite, "%s", base);
    char *dot = strrchr(suite, '.');
    if (dot)
        *dot = 0;
    char line[512];
    int lineno = 0, added = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char defname[40];
        snprintf(defname, sizeof defname, "L%d", lineno);
        ccase x;
        const char *why = "";
        int rc = parse_spec(line, suite, defname, &x, &why);
        if (rc > 0)
            continue;
        if (rc < 0) {
            fprintf(stderr, "%s:%d: %s\n", path, lineno, why);
            fclose(f);
            exit(2);
        }
        add_case(l, &x);
        added++;
    }
    fclose(f);
    if (!added) {
        fprintf(stderr, "%s: no cases\n", path);
        exit(2);
    }
    /* The --quick subset: the rule every runner applies to suite files. */
    double *gf = malloc((size_t)added * sizeof *gf);
    unsigned char *keep = malloc((size_t)added);
    if (!gf || !keep) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int i = 0; i < added; i++)
        gf[i] = case_flops(&l->v[first + i]) * 1e-9;
    bench_quick_pick(gf, added, BENCH_QUICK_FILE_GFLOP, BENCH_QUICK_FILE_CASES, keep);
    for (int i = 0; i < added; i++)
        l->v[first + i].quick = keep[i];
    free(gf);
    free(keep);
    return 0;
}

static int add_suite(case_list *l, const char *name)
{
    if (!strcmp(name, "resnet50"))
        suite_resnet50(l);
    else if (!strcmp(name, "cnn-random"))
        suite_cnn_random(l);
    else if (!strcmp(name, "small"))
        suite_small(l);
    else if (!strcmp(name, "mobilenet-dw"))
        suite_mobilenet_dw(l);
    else if (!strcmp(name, "all")) {
        suite_resnet50(l);
        suite_cnn_random(l);
        suite_mobilenet_dw(l);
        suite_small(l);
    } else if (suite_file(l, name) != 0)
        return -1;
    return 0;
}

/* ---- options ------------------------------------------------------------ */

typedef struct {
    int threads;         /* 0: Vortex's default */
    int quick;
    int layouts;         /* bit per LAY_* */
    int modes;           /* bit per MODE_* */
    const char *csv;
    double max_seconds;  /* 0: no budget */
    double target_s;     /* steady: measured time per library per case */
    int min_reps, max_reps;
    double min_sample_s; /* steady: batch calls until a sample lasts this long */
    double warmup_s;
    double case_cap_s;   /* steady: cap on the measured time of one case */
    int passes;          /* dynamic: passes over the shuffled list */
    double gap_us;
    double tol;
    uint64_t seed;
    int fmt;             /* FMT_* */
    int alg_auto;
    int dnnl_cache_keep; /* dynamic: leave oneDNN's primitive cache on */
    int vx_packed;       /* Vortex takes its filter packed (vx_conv2d_filter, made untimed) */
    int check_naive;
    int list;
} options;

static void usage(FILE *f)
{
    fprintf(f,
"usage: " PROG " [options]\n"
"\n"
"Times Vortex dyn_conv2d against the oneDNN convolution primitive (C API,\n"
"forward_inference, fp32; algorithm convolution_direct, or _auto with\n"
"--dnnl-alg auto), same thread count and the SAME plain layout for both:\n"
"  nchw: input NCHW, filter KCRS   -> oneDNN src/dst nchw, weights oihw (goihw\n"
"                                     when groups > 1)\n"
"  nhwc: input NHWC, filter KRSC   -> oneDNN src/dst nhwc, weights ohwi (gohwi)\n"
"The user's tensors are plain, so oneDNN gets plain memory descriptors for src,\n"
"weights and dst: it may not pick blocked formats whose reorders would fall\n"
"outside the timing. One exception (--dnnl-formats auto, the default): where\n"
"the plain weights leave oneDNN nothing but its reference kernel (ref:any, or\n"
"a wrapper around it such as jit_uni_ncsp:conv+ref:any, nchw on AVX-512; it\n"
"runs 100-1000x slower), the weights alone go\n"
"to the format oneDNN picks, reordered once outside the timing as an inference\n"
"framework prepares constant weights; src and dst stay plain; such rows are\n"
"marked [w:any] and counted. --dnnl-formats plain is the strict rule.\n"
"Bias (k values) is passed when the case has one; ReLU is a oneDNN eltwise\n"
"post-op and Vortex's VX_ACT_RELU. GFLOP = 2*n*k*p*q*(c/groups)*r*s (bias and\n"
"ReLU not counted).\n"
"\n"
"what to run (default: --suite resnet50,cnn-random --layout both --mode both):\n"
"  --suite LIST      comma list of suites:\n"
"                    resnet50    ResNet-50 (v1.5) at 224x224: the 7x7/2 stem\n"
"                                and every distinct 1x1/3x3 conv of conv2_x..\n"
"                                conv5_x incl. the stride-2 3x3s and the\n"
"                                projections (%d shapes), bias (folded BN),\n"
"                                ReLU where the net has one, at batch 1 3 8\n"
"                                13 32 (%d cases); --quick: batch %d and %d\n"
"                    cnn-random  %d shapes drawn from the Vortex paper's CNN\n"
"                                range (Table 4: batch 1..64, feature map\n"
"                                4..768, filter 1..11, c 3..832, k 16..512,\n"
"                                stride 1..2): SplitMix64 seed 0x%llX;\n"
"                                batch, map (square), c, k log-uniform; filter\n"
"                                odd 1..11 with 'same' pad (r-1)/2; bias and\n"
"                                ReLU 50%% each; draws over %.0f GFLOP or with a\n"
"                                tensor over %lld Mi floats are rejected;\n"
"                                --quick: the cases <= %.1f GFLOP\n"
"                    small       14 tiny shapes (strides, pads, dilation, odd\n"
"                                sizes, groups=2, depthwise) for the CI smoke\n"
"                      mobilenet-dw MobileNetV2's 10 distinct depthwise 3x3 convs\n"
"                                  (t*c channels, 112..7, stride 1/2), bias + ReLU,\n"
"                                  at batch 1 and 8; --quick: batch 1\n"
"                    all         resnet50,cnn-random,mobilenet-dw,small\n"
"                    or a file path: one case per line as in --shape, '#'\n"
"                    starts a comment; the suite is named after the file;\n"
"                    --quick: of its cases <= %.0f GFLOP, %d spread evenly\n"
"  --shape SPEC      one case (repeatable, suite 'shape'): KEY=VALUE pairs\n"
"                    separated by commas or spaces: n c h w k r s (w defaults to\n"
"                    h, s to r), stride pad dil (both directions) or stride_h\n"
"                    stride_w pad_h pad_w dil_h dil_w, g (groups), bias=0|1,\n"
"                    relu=0|1, name=NAME. Defaults n=1 stride=1 pad=0 dil=1 g=1\n"
"                    bias=0 relu=0; e.g. --shape n=8,c=64,h=56,k=64,r=3,pad=1\n"
"  --layout L        nchw, nhwc or both (default both)\n"
"  --mode M          steady, dynamic or both (default both)\n"
"  --libs LIST       libraries among vortex,dnnl (default both; what the build\n"
"                    did not find is skipped and reported as such)\n"
"  --quick           the deterministic subset named above (small: all cases)\n"
"                    with less time per case: target 0.05 s per library,\n"
"                    samples >= 5 ms, 3 repetitions minimum, case cap 2 s,\n"
"                    3 dynamic passes, 1000 us gap; the default suites take a\n"
"                    few minutes on 2 cores\n"
"  --list            print the cases (with --quick: the subset) and exit\n"
"\n"
"how:\n"
"  --threads N       threads for every library (default: Vortex's default, i.e.\n"
"                    VORTEX_NUM_THREADS or the physical cores). Vortex:\n"
"                    vx_set_num_threads; oneDNN with the native CPU runtime\n"
"                    and TBB threading: primitive creation and execution run\n"
"                    in a tbb::task_arena(N); OpenMP: OMP_NUM_THREADS; SYCL\n"
"                    CPU runtime (the PyPI build): see 'oneDNN builds' below\n"
"  steady mode       per case: the oneDNN primitive is created once (not\n"
"                    timed) and reused; one checked call each, warm-up, then\n"
"                    repetitions interleaved vortex/dnnl (rotating who goes\n"
"                    first), each sample a batch of back-to-back calls lasting\n"
"                    >= --min-sample-ms; reported: the median per-call time\n"
"  --target-seconds S  steady: measured time per library per case (default 0.5,\n"
"                    --quick 0.05)\n"
"  --min-reps N      steady: minimum repetitions (default 5, --quick 3)\n"
"  --max-reps N      steady: maximum repetitions (default 1000)\n"
"  --min-sample-ms T steady: calls per sample until one lasts T ms (default 20,\n"
"                    --quick 5); bigger calls are timed one by one\n"
"  --case-seconds S  steady: cap on one case's measured time (all libraries);\n"
"                    repetitions are cut to fit but never below --min-reps\n"
"                    (default 10, --quick 2)\n"
"  dynamic mode      per suite and layout: the cases in a shuffled order (a\n"
"                    fresh order each pass, from --seed), each called once per\n"
"                    pass and library, as a server whose shapes change from\n"
"                    call to call. oneDNN pays, on every call: memory\n"
"                    descriptors, primitive descriptor, primitive, memory\n"
"                    objects, execution, wait and destruction, with its\n"
"                    primitive cache capacity set to 0 for the mode (restored\n"
"                    after): a shape it has not seen. Vortex pays its call,\n"
"                    plan selection included, and keeps its plan cache (so\n"
"                    from the second pass on its plans are hits; oneDNN has\n"
"                    no cache to hit). Both keep every other state they have\n"
"                    (oneDNN's engine and stream, thread pools). Reported: the\n"
"                    median over the passes; the first pass's outputs are\n"
"                    checked. Buffers are shared by all cases of the list\n"
"                    (sized for the largest), as a server's workspace would be\n"
"  --passes N        dynamic: passes over the list (default 5, --quick 3)\n"
"  --dnnl-cache keep dynamic: leave oneDNN's primitive cache as it is (shapes\n"
"                    a server has seen before; default: off, capacity 0)\n"
"  --vortex-filter F plain (default): dyn_conv2d, which packs its filter on\n"
"                    every call; packed: the filter packed once per case\n"
"                    outside the timing (vx_conv2d_filter_create, as oneDNN's\n"
"                    weights are reordered outside it), the calls\n"
"                    dyn_conv2d_packed (its panels are packed by the first\n"
"                    call that needs them: the check call in steady mode, the\n"
"                    first pass in dynamic mode, whose median leaves it out)\n"
"  --gap-us U        idle time before each timed sample when both libraries run\n"
"                    and threads > 1, so one library's spinning workers do not\n"
"                    eat into the other's time (default 2000, --quick 1000)\n"
"  --max-seconds S   stop adding cases (steady) or passes/cases (dynamic) once\n"
"                    S seconds have been spent; exit 0, the rest listed as\n"
"                    skipped\n"
"  --dnnl-alg A      direct (default) or auto (oneDNN chooses; with plain\n"
"                    formats this is direct too)\n"
"  --dnnl-formats F  auto (default): plain, with the [w:any] exception above;\n"
"                    plain: always plain (ref:any is then timed as it is: very\n"
"                    slow, mind the run time); weights-any: oneDNN picks the\n"
"                    weights format for every case, reordered once outside the\n"
"                    timing (a framework caching prepared weights); any: src,\n"
"                    weights and dst in the formats oneDNN picks, every reorder\n"
"                    outside the timing (a framework that keeps activations in\n"
"                    oneDNN's blocked layout end to end). The last two are\n"
"                    oneDNN's best case, not the user's plain tensors. In\n"
"                    dynamic mode the format request is settled per case before\n"
"                    the timing and reorders are never timed\n"
"  --tol T           max relative Frobenius error of Vortex vs oneDNN (default\n"
"                    1e-4); above it the case is a MISMATCH. Without oneDNN,\n"
"                    vs a float64 naive convolution when n*k*p*q*c/g*r*s <= 2^27.\n"
"                    Outputs are NaN-filled before the checked call, so an\n"
"                    element Vortex leaves unwritten shows as a MISMATCH\n"
"  --check-naive     also check each library against the naive convolution\n"
"                    (cases up to 2^27 multiply-adds)\n"
"  --seed S          data seed and dynamic-mode shuffle seed (default 1)\n"
"\n"
"oneDNN builds: the PyPI oneDNN (onednn-devel) has the SYCL CPU runtime: its\n"
"CPU engine is a SYCL device on the OpenCL CPU runtime (PyPI intel-opencl-rt),\n"
"so unless OCL_ICD_FILENAMES is set the runner points it at libintelocl.so\n"
"beside libdnnl, and every execution goes through a SYCL queue (a host task:\n"
"a fixed cost per call that a native-runtime oneDNN does not have; the header\n"
"says which runtime this build has). Its primitives then run on the SYCL\n"
"runtime's threads, outside any tbb::task_arena, so --threads below the core\n"
"count pins the whole process (every library) to that many cores. The table's\n"
"last column is oneDNN's implementation ('ref:any': its reference kernel,\n"
"counted in the summaries; '[w:any]': the weights exception above).\n"
"\n"
"output:\n"
"  a table per suite, layout and mode: case, shape (n c h w k r s, stride,\n"
"  pad, dil, g; epi: b = bias, r = ReLU), GFLOP, median microseconds per call\n"
"  of each library, speedup = dnnl time / vortex time (> 1: Vortex faster),\n"
"  the relative error and oneDNN's implementation; then geomean speedup, the\n"
"  share of cases above 1.0, min and max with their cases; a recap at the end.\n"
"  Dynamic mode also prints a ceiling: the geomean of oneDNN's dynamic time\n"
"  over the time the case's flops take at the FMA peak (the loop measured at\n"
"  the start on the run's threads), as if a library ran every call at the peak\n"
"  and paid nothing else. No direct or implicit-GEMM convolution can reach it.\n"
"  --csv FILE        one row per case and library: suite,case,layout,mode,n,c,h,\n"
"                    w,k,r,s,stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,groups,\n"
"                    gflop,library,time_us,gflops,speedup; speedup = this\n"
"                    library's time / Vortex's (1 on Vortex rows, dnnl/vortex on\n"
"                    dnnl rows, empty when Vortex did not run)\n"
"  -h, --help        this text\n"
"\n"
"Exit status: 0 ok, 1 a library call failed, 2 bad usage or a MISMATCH.\n",
            N_RESNET_LAYERS, N_RESNET_LAYERS * (int)(sizeof resnet_batches / sizeof *resnet_batches),
            RESNET_QUICK_BATCH_A, RESNET_QUICK_BATCH_B, CNN_RANDOM_COUNT,
            (unsigned long long)CNN_RANDOM_SEED, CNN_RANDOM_MAX_GFLOP,
            (long long)(CNN_RANDOM_MAX_ELEMS >> 20), CNN_RANDOM_QUICK_GFLOP,
            BENCH_QUICK_FILE_GFLOP, BENCH_QUICK_FILE_CASES);
}

static int parse_libs(const char *s, int explicit_libs)
{
    int on[NLIB] = {0, 0};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int l = 0; l < NLIB; l++)
            if (!strcmp(t, lib_name[l])) {
                on[l] = 1;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, PROG ": unknown library '%s' (vortex, dnnl)\n", t);
            return -1;
        }
    }
    int any = 0;
    for (int l = 0; l < NLIB; l++) {
        if (on[l] && !lib_built[l] && explicit_libs)
            fprintf(stderr, PROG ": %s was not found at build time; skipping it\n", lib_name[l]);
        lib_on[l] = on[l] && lib_built[l];
        any |= lib_on[l];
    }
    if (!any) {
        fprintf(stderr, PROG ": no library left to time\n");
        return -1;
    }
    return 0;
}

/* ---- budget, errors ----------------------------------------------------- */

static double g_deadline; /* 0: none */

static int over_budget(void)
{
    return g_deadline > 0 && bench_now() > g_deadline;
}

static void run_in_dnnl_arena(void (*fn)(void *), void *arg)
{
#ifdef HAVE_TBB_ARENA
    if (dnnl_in_arena) {
        vxb_tbb_arena_run(fn, arg);
        return;
    }
#endif
    fn(arg);
}

/* ---- Vortex ------------------------------------------------------------- */

static vx_conv2d_params vx_params(const ccase *c, int layout)
{
    vx_conv2d_params p;
    memset(&p, 0, sizeof p);
    p.layout = layout == LAY_NHWC ? VX_NHWC : VX_NCHW;
    p.n = c->n, p.c = c->c, p.h = c->h, p.w = c->w;
    p.k = c->k, p.r = c->r, p.s = c->s;
    p.stride_h = c->sh, p.stride_w = c->sw;
    p.pad_h = c->ph, p.pad_w = c->pw;
    p.dilation_h = c->dh, p.dilation_w = c->dw;
    p.groups = c->g;
    p.activation = c->relu ? VX_ACT_RELU : VX_ACT_NONE;
    return p;
}

/* ---- oneDNN ------------------------------------------------------------- */

#ifdef HAVE_DNNL
static dnnl_engine_t g_eng;
static dnnl_stream_t g_stream;

/* One convolution as oneDNN runs it. */
typedef struct {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t m_src, m_wei, m_bias, m_dst; /* what the primitive gets */
    dnnl_memory_t m_src_own, m_wei_own, m_dst_own; /* oneDNN-allocated (non-plain) */
    dnnl_memory_t m_dst_user; /* plain view of the user's output when dst is not */
    dnnl_exec_arg_t args[4];
    int nargs;
    double untimed_s;         /* reorders done during creation (not part of a call) */
    int wany_fallback;        /* FMT_AUTO fell back to FMT_WEIGHTS_ANY */
    char impl[48];
    char err[200];
} dconv;

static const char *dnnl_status_name(dnnl_status_t s)
{
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out_of_memory";
    case dnnl_invalid_arguments: return "invalid_arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_last_impl_reached: return "last_impl_reached";
    case dnnl_runtime_error: return "runtime_error";
    case dnnl_not_required: return "not_required";
    default: return "error";
    }
}

#define DN(call, what)                                                                    \
    do {                                                                                  \
        dnnl_status_t st_ = (call);                                                       \
        if (st_ != dnnl_success) {                                                        \
            snprintf(d->err, sizeof d->err, "%s: %s", what, dnnl_status_name(st_));       \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* from -> to through a reorder primitive (created, run, destroyed). */
static dnnl_status_t run_reorder(dnnl_memory_t from, dnnl_memory_t to)
{
    const_dnnl_memory_desc_t fmd, tmd;
    dnnl_status_t s = dnnl_memory_get_memory_desc(from, &fmd);
    if (s == dnnl_success)
        s = dnnl_memory_get_memory_desc(to, &tmd);
    if (s != dnnl_success)
        return s;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    s = dnnl_reorder_primitive_desc_create(&rpd, fmd, g_eng, tmd, g_eng, NULL);
    if (s == dnnl_success)
        s = dnnl_primitive_create(&r, rpd);
    if (s == dnnl_success) {
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        s = dnnl_primitive_execute(r, g_stream, 2, a);
        if (s == dnnl_success)
            s = dnnl_stream_wait(g_stream);
    }
    if (r)
        dnnl_primitive_destroy(r);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    return s;
}

static void dconv_destroy(dconv *d)
{
    dnnl_memory_t *mems[] = {&d->m_src, &d->m_wei, &d->m_bias, &d->m_dst, &d->m_src_own,
                             &d->m_wei_own, &d->m_dst_own, &d->m_dst_user};
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++)
        if (*mems[i]) {
            dnnl_memory_destroy(*mems[i]);
            *mems[i] = NULL;
        }
    if (d->prim)
        dnnl_primitive_destroy(d->prim);
    if (d->pd)
        dnnl_primitive_desc_destroy(d->pd);
    d->prim = NULL;
    d->pd = NULL;
}

/* Everything a call needs: descriptors, primitive descriptor, primitive and
 * memory objects on the user's buffers. With fmt != FMT_PLAIN, the tensors
 * oneDNN wants in another format are reordered into its own buffers (time
 * kept in d->untimed_s). Returns 0, or -1 with d->err set (d destroyed). */
static int dconv_create(dconv *d, const ccase *c, int layout, int fmt, int alg_auto,
                        const float *in, const float *filt, const float *bias, float *out)
{
    if (fmt == FMT_AUTO) {
        /* Plain, unless oneDNN has nothing but its reference kernel for the
         * plain weights (nhwc with ohwi): then the weights alone go to the
         * format it picks (reordered once, outside the timing). */
        int rc = dconv_create(d, c, layout, FMT_PLAIN, alg_auto, in, filt, bias, out);
        if (rc != 0 || !impl_is_ref(d->impl))
            return rc;
        dconv_destroy(d);
        rc = dconv_create(d, c, layout, FMT_WEIGHTS_ANY, alg_auto, in, filt, bias, out);
        d->wany_fallback = 1;
        return rc;
    }
    memset(d, 0, sizeof *d);
    dnnl_memory_desc_t md_src = NULL, md_wei = NULL, md_bias = NULL, md_dst = NULL;
    dnnl_memory_desc_t rq_src = NULL, rq_wei = NULL, rq_dst = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    int64_t p = 0, q = 0;
    out_dims(c, &p, &q);
    const int nhwc = layout == LAY_NHWC;
    dnnl_dims_t sd = {c->n, c->c, c->h, c->w}, dd = {c->n, c->k, p, q};
    dnnl_dims_t wd = {c->k, c->c, c->r, c->s};
    dnnl_dims_t gwd = {c->g, c->k / c->g, c->c / c->g, c->r, c->s};
    dnnl_dims_t bd = {c->k};
    dnnl_dims_t strides = {c->sh, c->sw}, dil = {c->dh - 1, c->dw - 1};
    dnnl_dims_t pad_l = {c->ph, c->pw}, pad_r = {c->ph, c->pw};
    const dnnl_format_tag_t act_tag = nhwc ? dnnl_nhwc : dnnl_nchw;

    DN(dnnl_memory_desc_create_with_tag(&md_src, 4, sd, dnnl_f32, act_tag), "src md");
    DN(dnnl_memory_desc_create_with_tag(&md_dst, 4, dd, dnnl_f32, act_tag), "dst md");
    if (c->g > 1)
        DN(dnnl_memory_desc_create_with_tag(&md_wei, 5, gwd, dnnl_f32,
                                            nhwc ? dnnl_gohwi : dnnl_goihw), "weights md");
    else
        DN(dnnl_memory_desc_create_with_tag(&md_wei, 4, wd, dnnl_f32,
                                            nhwc ? dnnl_ohwi : dnnl_oihw), "weights md");
    if (c->bias)
        DN(dnnl_memory_desc_create_with_tag(&md_bias, 1, bd, dnnl_f32, dnnl_a), "bias md");
    if (fmt != FMT_PLAIN)
        DN(dnnl_memory_desc_create_with_tag(&rq_wei, c->g > 1 ? 5 : 4, c->g > 1 ? gwd : wd,
                                            dnnl_f32, dnnl_format_tag_any), "weights md any");
    if (fmt == FMT_ANY) {
        DN(dnnl_memory_desc_create_with_tag(&rq_src, 4, sd, dnnl_f32, dnnl_format_tag_any),
           "src md any");
        DN(dnnl_memory_desc_create_with_tag(&rq_dst, 4, dd, dnnl_f32, dnnl_format_tag_any),
           "dst md any");
    }
    if (c->relu) {
        DN(dnnl_primitive_attr_create(&attr), "attr");
        DN(dnnl_post_ops_create(&po), "post-ops");
        DN(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.0f, 0.0f), "relu post-op");
        DN(dnnl_primitive_attr_set_post_ops(attr, po), "set post-ops");
    }
    DN(dnnl_convolution_forward_primitive_desc_create(
           &d->pd, g_eng, dnnl_forward_inference,
           alg_auto ? dnnl_convolution_auto : dnnl_convolution_direct, rq_src ? rq_src : md_src,
           rq_wei ? rq_wei : md_wei, md_bias, rq_dst ? rq_dst : md_dst, strides, dil, pad_l,
           pad_r, attr),
       "convolution primitive descriptor");
    {
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(d->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl)
            snprintf(d->impl, sizeof d->impl, "%s", impl);
    }
    DN(dnnl_primitive_create(&d->prim, d->pd), "convolution primitive");

    /* Memory objects: the user's buffers, or oneDNN's when it wants another
     * format (reordered here, outside a call's time). */
    const_dnnl_memory_desc_t pd_src = dnnl_primitive_desc_query_md(d->pd, dnnl_query_src_md, 0);
    const_dnnl_memory_desc_t pd_wei =
        dnnl_primitive_desc_query_md(d->pd, dnnl_query_weights_md, 0);
    const_dnnl_memory_desc_t pd_dst = dnnl_primitive_desc_query_md(d->pd, dnnl_query_dst_md, 0);
    if (dnnl_memory_desc_equal(pd_src, md_src)) {
        DN(dnnl_memory_create(&d->m_src, md_src, g_eng, (void *)in), "src memory");
    } else {
        double t0 = bench_now();
        DN(dnnl_memory_create(&d->m_src_own, md_src, g_eng, (void *)in), "src user memory");
        DN(dnnl_memory_create(&d->m_src, pd_src, g_eng, DNNL_MEMORY_ALLOCATE), "src memory");
        DN(run_reorder(d->m_src_own, d->m_src), "src reorder");
        d->untimed_s += bench_now() - t0;
    }
    if (dnnl_memory_desc_equal(pd_wei, md_wei)) {
        DN(dnnl_memory_create(&d->m_wei, md_wei, g_eng, (void *)filt), "weights memory");
    } else {
        double t0 = bench_now();
        DN(dnnl_memory_create(&d->m_wei_own, md_wei, g_eng, (void *)filt), "weights user memory");
        DN(dnnl_memory_create(&d->m_wei, pd_wei, g_eng, DNNL_MEMORY_ALLOCATE), "weights memory");
        DN(run_reorder(d->m_wei_own, d->m_wei), "weights reorder");
        d->untimed_s += bench_now() - t0;
    }
    if (dnnl_memory_desc_equal(pd_dst, md_dst)) {
        DN(dnnl_memory_create(&d->m_dst, md_dst, g_eng, out), "dst memory");
    } else {
        double t0 = bench_now();
        DN(dnnl_memory_create(&d->m_dst_user, md_dst, g_eng, out), "dst user memory");
        DN(dnnl_memory_create(&d->m_dst, pd_dst, g_eng, DNNL_MEMORY_ALLOCATE), "dst memory");
        d->untimed_s += bench_now() - t0;
    }
    if (c->bias)
        DN(dnnl_memory_create(&d->m_bias, md_bias, g_eng, (void *)bias), "bias memory");
    d->nargs = 0;
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, d->m_src};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, d->m_wei};
    if (c->bias)
        d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, d->m_bias};
    d->args[d->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, d->m_dst};

    dnnl_memory_desc_destroy(md_src);
    dnnl_memory_desc_destroy(md_wei);
    dnnl_memory_desc_destroy(md_dst);
    if (md_bias)
        dnnl_memory_desc_destroy(md_bias);
    if (rq_src)
        dnnl_memory_desc_destroy(rq_src);
    if (rq_wei)
        dnnl_memory_desc_destroy(rq_wei);
    if (rq_dst)
        dnnl_memory_desc_destroy(rq_dst);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return 0;
fail:
    if (md_src)
        dnnl_memory_desc_destroy(md_src);
    if (md_wei)
        dnnl_memory_desc_destroy(md_wei);
    if (md_dst)
        dnnl_memory_desc_destroy(md_dst);
    if (md_bias)
        dnnl_memory_desc_destroy(md_bias);
    if (rq_src)
        dnnl_memory_desc_destroy(rq_src);
    if (rq_wei)
        dnnl_memory_desc_destroy(rq_wei);
    if (rq_dst)
        dnnl_memory_desc_destroy(rq_dst);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    dconv_destroy(d);
    return -1;
}

static int dconv_exec(dconv *d)
{
    dnnl_status_t s = dnnl_primitive_execute(d->prim, g_stream, d->nargs, d->args);
    if (s == dnnl_success)
        s = dnnl_stream_wait(g_stream);
    if (s != dnnl_success) {
        snprintf(d->err, sizeof d->err, "execute: %s", dnnl_status_name(s));
        return -1;
    }
    return 0;
}

/* The result into the user's plain output (only when dst is not plain). */
static int dconv_fetch(dconv *d)
{
    if (!d->m_dst_user)
        return 0;
    dnnl_status_t s = run_reorder(d->m_dst, d->m_dst_user);
    if (s != dnnl_success) {
        snprintf(d->err, sizeof d->err, "dst reorder: %s", dnnl_status_name(s));
        return -1;
    }
    return 0;
}
#undef DN
#endif /* HAVE_DNNL */

/* ---- calls through one context ------------------------------------------ */

typedef struct {
    int lib;
    const ccase *c;
    int layout;
    const options *o;
    const float *in, *filt, *bias;
    float *out;
    long batch;
    const vx_conv2d_filter *vxf; /* Vortex: the filter packed (dyn_conv2d_packed), or NULL */
    /* steady: the primitive made once; dynamic: made per call */
#ifdef HAVE_DNNL
    dconv d;
    int have_d;
#endif
    int dynamic;
    int fetch;          /* dynamic: copy a non-plain dst to the user's buffer */
    int op;             /* steady dnnl: 0 create, 1 run batch, 2 fetch the output;
                           3 (dynamic, untimed) resolve FMT_AUTO for the case */
    int fmt;            /* the oneDNN formats (FMT_*) */
    double untimed_s;   /* dynamic: reorder time inside the call (subtracted) */
    int failed;
    char err[256];
} call_ctx;

static void note_fail(call_ctx *x, const char *msg)
{
    if (!x->failed) {
        x->failed = 1;
        snprintf(x->err, sizeof x->err, "%s", msg);
    }
}

static void run_body(void *p)
{
    call_ctx *x = p;
    if (x->lib == L_VX) {
        vx_conv2d_params prm = vx_params(x->c, x->layout);
        for (long i = 0; i < x->batch; i++) {
            vx_status s = x->vxf ? dyn_conv2d_packed(&prm, x->in, x->vxf, x->c->bias ? x->bias : NULL, x->out)
                                 : dyn_conv2d(&prm, x->in, x->filt, x->c->bias ? x->bias : NULL, x->out);
            if (s != VX_OK && !x->failed) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s: %s: %s", x->vxf ? "dyn_conv2d_packed" : "dyn_conv2d",
                         vx_status_string(s), vx_last_error());
                note_fail(x, msg);
            }
        }
        return;
    }
#ifdef HAVE_DNNL
    if (x->dynamic) {
        /* One whole call of a server that meets this shape for the first time. */
        x->untimed_s = 0;
        if (x->op == 3) {
            if (dconv_create(&x->d, x->c, x->layout, x->fmt, x->o->alg_auto, x->in, x->filt,
                             x->bias, x->out) != 0)
                note_fail(x, x->d.err);
            else
                dconv_destroy(&x->d);
            return;
        }
        if (dconv_create(&x->d, x->c, x->layout, x->fmt, x->o->alg_auto, x->in, x->filt,
                         x->bias, x->out) != 0) {
            note_fail(x, x->d.err);
            return;
        }
        x->untimed_s = x->d.untimed_s;
        if (dconv_exec(&x->d) != 0)
            note_fail(x, x->d.err);
        if (x->fetch && !x->failed) {
            double t0 = bench_now();
            if (dconv_fetch(&x->d) != 0)
                note_fail(x, x->d.err);
            x->untimed_s += bench_now() - t0;
        }
        dconv_destroy(&x->d);
        return;
    }
    if (x->op == 0) {
        if (dconv_create(&x->d, x->c, x->layout, x->fmt, x->o->alg_auto, x->in, x->filt,
                         x->bias, x->out) != 0)
            note_fail(x, x->d.err);
        else
            x->have_d = 1;
        return;
    }
    if (x->op == 2) {
        if (dconv_fetch(&x->d) != 0)
            note_fail(x, x->d.err);
        return;
    }
    for (long i = 0; i < x->batch; i++)
        if (dconv_exec(&x->d) != 0) {
            note_fail(x, x->d.err);
            break;
        }
#endif
}

/* Wall time of x's work (a batch of calls, or one dynamic call), minus the
 * reorders that are not part of a call. */
static double timed_call(call_ctx *x)
{
    double t0 = bench_now();
    if (x->lib == L_DNNL)
        run_in_dnnl_arena(run_body, x);
    else
        run_body(x);
    double t = bench_now() - t0;
    if (x->dynamic && x->lib == L_DNNL)
        t -= x->untimed_s;
    return t;
}

/* ---- checking ----------------------------------------------------------- */

static double rel_frobenius(const float *x, const float *ref, int64_t count)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; i++) {
        double r = ref[i], d = (double)x[i] - r;
        num += d * d;
        den += r * r;
    }
    if (den == 0)
        return num == 0 ? 0 : INFINITY;
    return sqrt(num / den);
}

#define NAIVE_MAX_MACS 134217728.0 /* 2^27 */

static void naive_conv(const ccase *c, int layout, const float *in, const float *f,
                       const float *b, float *out)
{
    int64_t P = 0, Q = 0;
    out_dims(c, &P, &Q);
    const int64_t cg = c->c / c->g, kg = c->k / c->g;
    const int nhwc = layout == LAY_NHWC;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t kk = 0; kk < c->k; kk++) {
            int64_t g = kk / kg;
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = c->bias ? (double)b[kk] : 0.0;
                    for (int64_t rr = 0; rr < c->r; rr++) {
                        int64_t ih = p * c->sh - c->ph + rr * c->dh;
                        if (ih < 0 || ih >= c->h)
                            continue;
                        for (int64_t ss = 0; ss < c->s; ss++) {
                            int64_t iw = q * c->sw - c->pw + ss * c->dw;
                            if (iw < 0 || iw >= c->w)
                                continue;
                            for (int64_t ci = 0; ci < cg; ci++) {
                                int64_t cc = g * cg + ci;
                                double xv = nhwc ? in[((n * c->h + ih) * c->w + iw) * c->c + cc]
                                                 : in[((n * c->c + cc) * c->h + ih) * c->w + iw];
                                double wv = nhwc ? f[((kk * c->r + rr) * c->s + ss) * cg + ci]
                                                 : f[((kk * cg + ci) * c->r + rr) * c->s + ss];
                                acc += xv * wv;
                            }
                        }
                    }
                    if (c->relu && acc < 0)
                        acc = 0;
                    int64_t o = nhwc ? ((n * P + p) * Q + q) * c->k + kk
                                     : ((n * c->k + kk) * P + p) * Q + q;
                    out[o] = (float)acc;
                }
        }
}

static void fill_nan(float *p, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        p[i] = NAN;
}

/* ---- results ------------------------------------------------------------ */

typedef struct {
    const ccase *c;
    int layout, mode;
    int ran;             /* measured (else skipped by the budget) */
    int partial;         /* cut short by the budget */
    double t[NLIB];      /* median seconds per call (0: not measured) */
    double relerr;       /* Vortex vs oneDNN (or vs naive without it) */
    double naive_err[NLIB];
    int checked;         /* 0 none, 1 vs dnnl, 2 vs naive */
    int mismatch;
    int failed;
    int reps;            /* steady: repetitions; dynamic: passes */
    int wany;            /* oneDNN got its own weights format (FMT_AUTO fallback) */
    long batch[NLIB];
    char impl[48];
} cresult;

/* Compare the outputs of one case's first calls; updates r. */
static void check_outputs(const ccase *c, int layout, const options *o, const float *in,
                          const float *filt, const float *bias, float *const out[NLIB],
                          cresult *r)
{
    int64_t oc = out_count(c);
    int both = lib_on[L_VX] && lib_on[L_DNNL] && !r->failed;
    if (both) {
        r->relerr = rel_frobenius(out[L_VX], out[L_DNNL], oc);
        r->checked = 1;
        if (!(r->relerr <= o->tol))
            r->mismatch = 1;
    }
    int naive_ok = case_flops(c) / 2 <= NAIVE_MAX_MACS;
    if (naive_ok && (o->check_naive || (!both && !r->failed))) {
        float *ref = bench_alloc_floats(oc);
        naive_conv(c, layout, in, filt, bias, ref);
        for (int l = 0; l < NLIB; l++) {
            if (!lib_on[l])
                continue;
            r->naive_err[l] = rel_frobenius(out[l], ref, oc);
            if (!both && l == L_VX) {
                r->relerr = r->naive_err[l];
                r->checked = 2;
            }
            if (!(r->naive_err[l] <= o->tol)) {
                if (l == L_VX)
                    r->mismatch = 1;
                else
                    printf("  !! oneDNN disagrees with the naive convolution on %s (rel. "
                           "error %.3g): the runner's oneDNN set-up is wrong\n",
                           c->name, r->naive_err[l]);
            }
        }
        free(ref);
    }
    if (r->mismatch) {
        printf("\n  !!!!!!!! MISMATCH !!!!!!!! %s %s %s %s: Vortex rel. Frobenius error", c->suite,
               c->name, lay_name[layout], mode_name[r->mode]);
        if (r->checked == 1)
            printf(" vs dnnl %.3g", r->relerr);
        for (int l = 0; l < NLIB; l++)
            if (r->naive_err[l] != 0 || (naive_ok && o->check_naive))
                if (l == L_VX)
                    printf(" vs naive %.3g", r->naive_err[l]);
        if (r->checked == 2)
            printf(" vs naive %.3g", r->relerr);
        printf(" (tol %.1g)\n\n", o->tol);
    }
}

/* ---- steady mode: one case ---------------------------------------------- */

static void steady_case(const ccase *c, int layout, const options *o, int threads, uint64_t seed,
                        cresult *r)
{
    const int64_t ic = in_count(c), fc = filt_count(c), oc = out_count(c);
    float *in = bench_alloc_floats(ic), *filt = bench_alloc_floats(fc);
    float *bias = bench_alloc_floats(c->k);
    float *out[NLIB] = {0};
    bench_fill_uniform(in, ic, seed * 4 + 1);
    bench_fill_uniform(filt, fc, seed * 4 + 2);
    bench_fill_uniform(bias, c->k, seed * 4 + 3);

    call_ctx ctx[NLIB];
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        out[l] = bench_alloc_floats(oc);
        fill_nan(out[l], oc);
        memset(&ctx[l], 0, sizeof ctx[l]);
        ctx[l].lib = l;
        ctx[l].c = c;
        ctx[l].layout = layout;
        ctx[l].o = o;
        ctx[l].in = in;
        ctx[l].filt = filt;
        ctx[l].bias = bias;
        ctx[l].out = out[l];
        ctx[l].batch = 1;
    }
    int on[NLIB], non = 0;
    vx_conv2d_filter *vxf = NULL;
    if (lib_on[L_VX] && o->vx_packed) { /* packed once, not timed, as oneDNN's weights are reordered */
        vx_conv2d_params prm = vx_params(c, layout);
        if (vx_conv2d_filter_create(&prm, filt, &vxf) != VX_OK) {
            snprintf(ctx[L_VX].err, sizeof ctx[L_VX].err, "vx_conv2d_filter_create: %s", vx_last_error());
            ctx[L_VX].failed = 1;
        }
        ctx[L_VX].vxf = vxf;
    }

#ifdef HAVE_DNNL
    if (lib_on[L_DNNL]) {
        ctx[L_DNNL].op = 0; /* create the primitive (not timed) */
        ctx[L_DNNL].fmt = o->fmt;
        run_in_dnnl_arena(run_body, &ctx[L_DNNL]);
        ctx[L_DNNL].op = 1;
        snprintf(r->impl, sizeof r->impl, "%s", ctx[L_DNNL].d.impl);
        r->wany = ctx[L_DNNL].d.wany_fallback;
    }
#endif
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l] && !ctx[l].failed)
            on[non++] = l;

    /* 1. One call each: the check. */
    for (int j = 0; j < non; j++)
        timed_call(&ctx[on[j]]);
#ifdef HAVE_DNNL
    if (lib_on[L_DNNL] && ctx[L_DNNL].have_d && !ctx[L_DNNL].failed) {
        ctx[L_DNNL].op = 2;
        run_in_dnnl_arena(run_body, &ctx[L_DNNL]);
        ctx[L_DNNL].op = 1;
    }
#endif
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l] && ctx[l].failed) {
            printf("  ERROR %s %s %s: %s: %s\n", c->suite, c->name, lay_name[layout], lib_name[l],
                   ctx[l].err);
            r->failed = 1;
        }
    check_outputs(c, layout, o, in, filt, bias, out, r);

    /* 2. Warm-up and the single-call estimate of each library. */
    double est[NLIB] = {0};
    non = 0;
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l] && !ctx[l].failed)
            on[non++] = l;
    for (int j = 0; j < non; j++) {
        int l = on[j];
        double t0 = bench_now(), best = INFINITY;
        int calls = 0;
        do {
            double t = timed_call(&ctx[l]);
            if (t < best)
                best = t;
            calls++;
        } while (!over_budget() && bench_now() - t0 < o->warmup_s && calls < 100000);
        est[l] = best > 1e-9 ? best : 1e-9;
        long bt = est[l] >= o->min_sample_s ? 1 : (long)ceil(o->min_sample_s / est[l]);
        r->batch[l] = bt < 1 ? 1 : (bt > 1000000 ? 1000000 : bt);
        ctx[l].batch = r->batch[l];
    }

    /* 3. Repetitions, interleaved, rotating who goes first. */
    double longest = 0, round = 0;
    for (int j = 0; j < non; j++) {
        double s = est[on[j]] * (double)r->batch[on[j]];
        round += s;
        if (s > longest)
            longest = s;
    }
    int reps = (int)ceil(o->target_s / (longest > 0 ? longest : 1e-9));
    if (round > 0 && reps * round > o->case_cap_s)
        reps = (int)floor(o->case_cap_s / round);
    if (reps > o->max_reps)
        reps = o->max_reps;
    if (reps < o->min_reps)
        reps = o->min_reps;
    double *samples = calloc((size_t)reps * NLIB, sizeof *samples);
    const double gap = (threads > 1 && non > 1) ? o->gap_us : 0;
    int done = 0;
    for (int rep = 0; rep < reps && non > 0; rep++) {
        for (int j = 0; j < non; j++) {
            int l = on[(rep + j) % non];
            bench_sleep_us(gap);
            samples[(size_t)l * reps + rep] = timed_call(&ctx[l]) / (double)ctx[l].batch;
        }
        done = rep + 1;
        if (over_budget() && rep + 1 < reps) {
            r->partial = 1;
            break;
        }
    }
    r->reps = done;
    for (int j = 0; j < non; j++) {
        int l = on[j];
        if (ctx[l].failed && !r->failed) {
            printf("  ERROR %s %s %s: %s: %s\n", c->suite, c->name, lay_name[layout], lib_name[l],
                   ctx[l].err);
            r->failed = 1;
        }
        r->t[l] = bench_median(samples + (size_t)l * reps, done);
    }
    r->ran = 1;
    free(samples);
#ifdef HAVE_DNNL
    if (lib_on[L_DNNL] && ctx[L_DNNL].have_d)
        dconv_destroy(&ctx[L_DNNL].d);
#endif
    vx_conv2d_filter_destroy(vxf);
    for (int l = 0; l < NLIB; l++)
        free(out[l]);
    free(in);
    free(filt);
    free(bias);
}

/* ---- dynamic mode: one suite x layout ----------------------------------- */

static void dynamic_group(ccase *const *cs, int m, int layout, const options *o, int threads,
                          uint64_t seed, cresult *res)
{
    int64_t max_in = 1, max_f = 1, max_o = 1, max_k = 1;
    for (int i = 0; i < m; i++) {
        if (in_count(cs[i]) > max_in)
            max_in = in_count(cs[i]);
        if (filt_count(cs[i]) > max_f)
            max_f = filt_count(cs[i]);
        if (out_count(cs[i]) > max_o)
            max_o = out_count(cs[i]);
        if (cs[i]->k > max_k)
            max_k = cs[i]->k;
    }
    float *in = bench_alloc_floats(max_in), *filt = bench_alloc_floats(max_f);
    float *bias = bench_alloc_floats(max_k);
    float *out[NLIB] = {0};
    bench_fill_uniform(in, max_in, seed * 4 + 1);
    bench_fill_uniform(filt, max_f, seed * 4 + 2);
    bench_fill_uniform(bias, max_k, seed * 4 + 3);
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l]) {
            out[l] = bench_alloc_floats(max_o);
            fill_nan(out[l], max_o);
        }
    const int passes = o->passes;
    double *times = calloc((size_t)m * NLIB * (size_t)passes, sizeof *times);
    int *order = malloc((size_t)(m > 0 ? m : 1) * sizeof *order);
    int *npass = calloc((size_t)(m > 0 ? m : 1), sizeof *npass);
    int *dead = calloc((size_t)(m > 0 ? m : 1), sizeof *dead); /* a library failed */
    int non = 0, on[NLIB];
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l])
            on[non++] = l;
    const double gap = (threads > 1 && non > 1) ? o->gap_us : 0;
    uint64_t shuf = seed ^ 0xD1B54A32D192ED03ull;

    /* The formats oneDNN gets per case, decided once before the timing (for
     * FMT_AUTO: does it need its own weights format), as a server's
     * configuration would be. */
    int *fmts = malloc((size_t)(m > 0 ? m : 1) * sizeof *fmts);
    /* Vortex's packed filters, made before the timing as a server makes
     * them when it loads its model */
    vx_conv2d_filter **vxf = calloc((size_t)(m > 0 ? m : 1), sizeof *vxf);
    for (int i = 0; i < m && lib_on[L_VX] && o->vx_packed; i++) {
        vx_conv2d_params prm = vx_params(cs[i], layout);
        if (vx_conv2d_filter_create(&prm, filt, &vxf[i]) != VX_OK) {
            printf("  ERROR %s %s %s dynamic: vx_conv2d_filter_create: %s\n", cs[i]->suite, cs[i]->name,
                   lay_name[layout], vx_last_error());
            res[i].failed = 1;
            dead[i] = 1;
        }
    }
    for (int i = 0; i < m; i++) {
        fmts[i] = o->fmt;
#ifdef HAVE_DNNL
        if (lib_on[L_DNNL] && o->fmt == FMT_AUTO) {
            call_ctx x;
            memset(&x, 0, sizeof x);
            x.lib = L_DNNL;
            x.c = cs[i];
            x.layout = layout;
            x.o = o;
            x.in = in;
            x.filt = filt;
            x.bias = bias;
            x.out = out[L_DNNL];
            x.dynamic = 1;
            x.op = 3;
            x.fmt = FMT_AUTO;
            run_in_dnnl_arena(run_body, &x);
            if (!x.failed && x.d.wany_fallback) {
                fmts[i] = FMT_WEIGHTS_ANY;
                res[i].wany = 1;
            } else {
                fmts[i] = FMT_PLAIN;
            }
        }
#endif
    }

    for (int pass = 0; pass < passes; pass++) {
        if (pass > 0 && over_budget())
            break;
        for (int i = 0; i < m; i++)
            order[i] = i;
        for (int i = m - 1; i > 0; i--) { /* Fisher-Yates, fresh each pass */
            int j = (int)(bench_splitmix64(&shuf) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int pos = 0; pos < m; pos++) {
            int i = order[pos];
            const ccase *c = cs[i];
            cresult *r = &res[i];
            if (pass == 0 && over_budget())
                continue; /* never started: skipped */
            if (pass > 0 && (!r->ran || dead[i]))
                continue;
            if (pass == 0)
                for (int l = 0; l < NLIB; l++)
                    if (out[l])
                        fill_nan(out[l], out_count(c));
            for (int j = 0; j < non; j++) {
                int l = on[(pass + pos + j) % non];
                call_ctx x;
                memset(&x, 0, sizeof x);
                x.lib = l;
                x.c = c;
                x.layout = layout;
                x.o = o;
                x.in = in;
                x.filt = filt;
                x.bias = bias;
                x.out = out[l];
                x.batch = 1;
                x.dynamic = 1;
                x.fmt = fmts[i];
                x.fetch = pass == 0;
                x.vxf = l == L_VX ? vxf[i] : NULL;
                if (l == L_VX && o->vx_packed && !vxf[i])
                    continue;
                bench_sleep_us(gap);
                double t = timed_call(&x);
                times[((size_t)i * NLIB + l) * passes + npass[i]] = t;
#ifdef HAVE_DNNL
                if (l == L_DNNL && pass == 0)
                    snprintf(r->impl, sizeof r->impl, "%s", x.d.impl);
#endif
                if (x.failed) {
                    printf("  ERROR %s %s %s dynamic: %s: %s\n", c->suite, c->name,
                           lay_name[layout], lib_name[l], x.err);
                    r->failed = 1;
                    dead[i] = 1;
                }
            }
            npass[i]++;
            r->ran = 1;
            if (pass == 0 && !r->failed)
                check_outputs(c, layout, o, in, filt, bias, out, r);
        }
    }
    for (int i = 0; i < m; i++) {
        cresult *r = &res[i];
        r->reps = npass[i];
        if (!r->ran)
            continue;
        if (npass[i] < passes)
            r->partial = 1;
        for (int l = 0; l < NLIB; l++)
            if (lib_on[l])
                r->t[l] = bench_median(times + ((size_t)i * NLIB + l) * passes, npass[i]);
    }
    free(times);
    for (int i = 0; i < m; i++)
        vx_conv2d_filter_destroy(vxf[i]);
    free(vxf);
    free(fmts);
    free(order);
    free(npass);
    free(dead);
    for (int l = 0; l < NLIB; l++)
        free(out[l]);
    free(in);
    free(filt);
    free(bias);
}

/* ---- reporting ---------------------------------------------------------- */

static void fmt_pair(char *buf, size_t len, int64_t a, int64_t b)
{
    if (a == b)
        snprintf(buf, len, "%" PRId64, a);
    else
        snprintf(buf, len, "%" PRId64 "x%" PRId64, a, b);
}

static void print_header(const char *suite, int layout, int mode, const options *o)
{
    printf("\n== suite %s | layout %s | mode %s ==\n", suite, lay_name[layout], mode_name[mode]);
    if (!strcmp(suite, "cnn-random"))
        printf("   (cnn-random: %d shapes from the Vortex paper's Table 4 CNN range, SplitMix64 "
               "seed 0x%llX, draws over %.0f GFLOP rejected)\n",
               CNN_RANDOM_COUNT, (unsigned long long)CNN_RANDOM_SEED, CNN_RANDOM_MAX_GFLOP);
    if (!strcmp(suite, "resnet50"))
        printf("   (resnet50: v1.5 at 224x224, %d distinct convs x batch 1 3 8 13 32, bias, "
               "ReLU where the net has one)\n", N_RESNET_LAYERS);
    if (mode == MODE_DYNAMIC)
        printf("   (dynamic: shuffled order, a fresh one per pass, %d passes, median; oneDNN "
               "creates descriptors + primitive on every call, primitive cache %s; Vortex "
               "keeps its plan cache)\n",
               o->passes, o->dnnl_cache_keep ? "kept (--dnnl-cache keep)" : "capacity 0");
    printf("%-10s %-23s %-4s %-7s %3s %4s %4s %4s %4s %2s %2s %4s %4s %3s %4s %3s %8s %10s %10s "
           "%7s %8s  %s\n",
           "suite", "case", "lay", "mode", "n", "c", "h", "w", "k", "r", "s", "str", "pad", "dil",
           "g", "epi", "GFLOP", "vortex_us", "dnnl_us", "speedup", "rel_err", "dnnl impl");
}

static void print_row(const cresult *r)
{
    const ccase *c = r->c;
    char st[16], pd[16], dl[16], epi[4] = "-";
    fmt_pair(st, sizeof st, c->sh, c->sw);
    fmt_pair(pd, sizeof pd, c->ph, c->pw);
    fmt_pair(dl, sizeof dl, c->dh, c->dw);
    if (c->bias && c->relu)
        snprintf(epi, sizeof epi, "br");
    else if (c->bias)
        snprintf(epi, sizeof epi, "b");
    else if (c->relu)
        snprintf(epi, sizeof epi, "r");
    printf("%-10s %-23s %-4s %-7s %3" PRId64 " %4" PRId64 " %4" PRId64 " %4" PRId64 " %4" PRId64
           " %2" PRId64 " %2" PRId64 " %4s %4s %3s %4" PRId64 " %3s %8.4f",
           c->suite, c->name, lay_name[r->layout], mode_name[r->mode], c->n, c->c, c->h, c->w,
           c->k, c->r, c->s, st, pd, dl, c->g, epi, case_flops(c) * 1e-9);
    if (!r->ran) {
        printf("  skipped (budget)\n");
        return;
    }
    for (int l = 0; l < NLIB; l++) {
        if (!lib_built[l])
            printf(" %10s", "skipped");
        else if (!lib_on[l])
            printf(" %10s", "off");
        else if (r->t[l] > 0)
            printf(" %10.1f", r->t[l] * 1e6);
        else
            printf(" %10s", "failed");
    }
    if (r->t[L_VX] > 0 && r->t[L_DNNL] > 0)
        printf(" %6.2fx", r->t[L_DNNL] / r->t[L_VX]);
    else
        printf(" %7s", "-");
    if (r->checked)
        printf(" %8.1e", r->relerr);
    else
        printf(" %8s", "unchkd");
    printf("  %s%s%s%s\n", r->impl[0] ? r->impl : "-", r->wany ? " [w:any]" : "",
           r->partial ? " (cut by budget)" : "",
           r->mismatch ? "  <-- MISMATCH" : "");
    fflush(stdout);
}

typedef struct {
    char suite[32];
    int layout, mode;
    int ran, skipped, cmp, faster, failed, mismatched, ref_impl, wany;
    double geo, minr, maxr;
    double ceiling; /* dynamic: the geomean a call at the FMA peak would reach (0: none) */
    char minc[48], maxc[48];
} gsummary;

/* The FMA loop's rate on the run's threads, GFLOP/s (0: not measured), for
 * the dynamic mode's ceiling: oneDNN's dynamic time over the time of the
 * case's flops at this rate, as if a library ran every call at the FMA peak
 * and paid nothing else (no call, no plan, no memory traffic, no cold
 * cache). No direct or implicit-GEMM convolution can beat it; only
 * algorithms that do fewer flops (Winograd, FFT) could. */
static double g_peak_gflops;

static void summarize(const cresult *res, int m, const char *suite, int layout, int mode,
                      gsummary *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->suite, sizeof g->suite, "%s", suite);
    g->layout = layout;
    g->mode = mode;
    g->minr = INFINITY;
    double logsum = 0, ceil_logsum = 0;
    for (int i = 0; i < m; i++) {
        const cresult *r = &res[i];
        if (!r->ran) {
            g->skipped++;
            continue;
        }
        g->ran++;
        g->failed += r->failed;
        g->mismatched += r->mismatch;
        g->ref_impl += impl_is_ref(r->impl);
        g->wany += r->wany;
        if (!(r->t[L_VX] > 0 && r->t[L_DNNL] > 0))
            continue;
        double s = r->t[L_DNNL] / r->t[L_VX];
        logsum += log(s);
        if (mode == MODE_DYNAMIC && g_peak_gflops > 0)
            ceil_logsum += log(r->t[L_DNNL] / (case_flops(r->c) * 1e-9 / g_peak_gflops));
        g->cmp++;
        g->faster += s > 1.0;
        if (s < g->minr) {
            g->minr = s;
            snprintf(g->minc, sizeof g->minc, "%s", r->c->name);
        }
        if (s > g->maxr) {
            g->maxr = s;
            snprintf(g->maxc, sizeof g->maxc, "%s", r->c->name);
        }
    }
    g->geo = g->cmp ? exp(logsum / g->cmp) : 0;
    g->ceiling = g->cmp && mode == MODE_DYNAMIC && g_peak_gflops > 0 ? exp(ceil_logsum / g->cmp) : 0;
}

static void print_summary(const gsummary *g)
{
    printf("-- %s %s %s: %d case%s run", g->suite, lay_name[g->layout], mode_name[g->mode],
           g->ran, g->ran == 1 ? "" : "s");
    if (g->skipped)
        printf(", %d skipped (budget)", g->skipped);
    if (g->failed)
        printf(", %d with a failed call", g->failed);
    if (g->mismatched)
        printf(", %d MISMATCH", g->mismatched);
    printf("\n");
    if (g->cmp)
        printf("   speedup dnnl/vortex: geomean %.3fx | > 1.0 in %d/%d (%.0f%%) | min %.3fx (%s) "
               "| max %.3fx (%s)\n",
               g->geo, g->faster, g->cmp, 100.0 * g->faster / g->cmp, g->minr, g->minc, g->maxr,
               g->maxc);
    if (g->ceiling > 0)
        printf("   ceiling: every call at the FMA peak (%.1f GFLOP/s), nothing else paid: geomean "
               "%.3fx\n", g_peak_gflops, g->ceiling);
    if (g->wany)
        printf("   note: [w:any] in %d of %d cases: the plain weights left oneDNN only its\n"
               "   reference kernel, so it got its own weights format (reordered once, not\n"
               "   timed); src and dst stayed plain (--dnnl-formats auto)\n", g->wany, g->ran);
    if (g->ref_impl)
        printf("   note: oneDNN ran its reference implementation (ref:*) in %d of %d cases: it\n"
               "   has no optimized kernel for these plain formats; --dnnl-formats weights-any\n"
               "   shows what it does with its own weights layout\n",
               g->ref_impl, g->ran);
    if (!g->cmp && g->ran)
        printf("   no speedup: %s\n", lib_built[L_DNNL] ? "one library only (--libs) or failures"
                                                        : "oneDNN not found at build time "
                                                          "(baseline skipped)");
}

static void csv_rows(FILE *f, const cresult *r)
{
    if (!f || !r->ran)
        return;
    const ccase *c = r->c;
    double gf = case_flops(c) * 1e-9;
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l] || !(r->t[l] > 0))
            continue;
        fprintf(f,
                "%s,%s,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.6f,%s,%.3f,%.3f,",
                c->suite, c->name, lay_name[r->layout], mode_name[r->mode], c->n, c->c, c->h,
                c->w, c->k, c->r, c->s, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->g, gf,
                lib_name[l], r->t[l] * 1e6, gf / r->t[l]);
        if (r->t[L_VX] > 0)
            fprintf(f, "%.4f\n", r->t[l] / r->t[L_VX]);
        else
            fprintf(f, "\n");
    }
    fflush(f);
}

/* ---- threads and the machine header ------------------------------------- */

#ifdef HAVE_DNNL
static const char *dnnl_isa_name(dnnl_cpu_isa_t isa)
{
    switch ((int)isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2_vnni_2: return "avx2_vnni_2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx10_1_512: return "avx10_1_512 (avx512_core_fp16)";
    case dnnl_cpu_isa_avx10_1_512_amx: return "avx10_1_512_amx";
    case dnnl_cpu_isa_avx10_1_512_amx_fp16: return "avx10_1_512_amx_fp16";
    default: return "other";
    }
}
#endif

__attribute__((unused)) static char dnnl_thread_note[160] = "";
/* Must run before the first call into oneDNN. */
static void setup_threads(int threads)
{
    vx_set_num_threads(threads);
#ifdef HAVE_DNNL
    if (lib_on[L_DNNL]) {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
        char v[16];
        snprintf(v, sizeof v, "%d", threads);
        setenv("OMP_NUM_THREADS", v, 1);
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note, "OMP_NUM_THREADS=%d", threads);
#elif DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_TBB
#if defined(DNNL_CPU_RUNTIME) && DNNL_CPU_RUNTIME == DNNL_RUNTIME_SYCL
        /* With the SYCL CPU runtime the primitives run in SYCL host tasks on
         * the runtime's own threads, outside any arena of ours: TBB sizes
         * itself from the process affinity there, so fewer threads than
         * cores means pinning the whole process (every library) to that
         * many cores, before TBB starts. */
        int cores[CPU_SETSIZE];
        int nc = bench_physical_cores(cores, CPU_SETSIZE);
        if (threads < nc) {
            bench_restrict_affinity(threads);
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                     "SYCL CPU runtime: process pinned to %d of %d cores for every library",
                     threads, nc);
        } else {
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                     "SYCL CPU runtime: TBB default (all %d cores)", nc);
        }
#elif defined(HAVE_TBB_ARENA)
        int got = vxb_tbb_arena_init(threads);
        dnnl_in_arena = 1;
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "creation and calls run in tbb::task_arena(%d) (max_concurrency %d)", threads,
                 got);
#else
        int cores[CPU_SETSIZE];
        int nc = bench_physical_cores(cores, CPU_SETSIZE);
        if (threads < nc) {
            bench_restrict_affinity(threads);
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                     "no TBB headers at build time: process pinned to %d cores for every "
                     "library", threads);
        } else {
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note, "TBB default (all %d cores)", nc);
        }
#endif
#elif DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_SEQ
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "sequential build: always 1 thread (speedups with --threads > 1 are unfair)");
#else
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "thread count of this runtime cannot be set here");
#endif
    }
#endif
}

static void print_machine(int threads, const options *o)
{
    int cores[CPU_SETSIZE], usable[CPU_SETSIZE];
    int nc = bench_physical_cores(cores, CPU_SETSIZE), nu = bench_usable_cpus(usable, CPU_SETSIZE);
    printf("cpu:      %s (%d physical cores, %d usable CPUs; ISA: avx512f %s, avx2 %s)\n",
           bench_cpu_model(), nc, nu, bench_isa_supported(BENCH_ISA_AVX512) ? "yes" : "no",
           bench_isa_supported(BENCH_ISA_AVX2) ? "yes" : "no");
    printf("threads:  %d for every library%s\n", threads,
           o->threads ? " (--threads)" : " (Vortex's default)");
    printf("vortex:   %d.%d.%d, vx_get_num_threads()=%d, filter %s%s\n", VORTEX_VERSION_MAJOR,
           VORTEX_VERSION_MINOR, VORTEX_VERSION_PATCH, vx_get_num_threads(),
           o->vx_packed ? "packed once per case, untimed (dyn_conv2d_packed)"
                        : "plain (dyn_conv2d packs it every call)",
           lib_on[L_VX] ? "" : " [not timed: --libs]");
#ifdef HAVE_DNNL
    {
        const dnnl_version_t *v = dnnl_version();
        int cap = -1;
        dnnl_get_primitive_cache_capacity(&cap);
        printf("dnnl:     oneDNN %d.%d.%d (%s), CPU threading runtime %s; %s; ISA %s%s\n",
               v->major, v->minor, v->patch, v->hash ? v->hash : "?",
               bench_dnnl_runtime_name(DNNL_CPU_THREADING_RUNTIME), dnnl_thread_note,
               dnnl_isa_name(dnnl_get_effective_cpu_isa()),
               lib_on[L_DNNL] ? "" : " [not timed]");
        printf("          %s\n", dnnl_runtime_note);
        printf("          convolution forward_inference, %s, formats %s%s, primitive cache "
               "capacity %d (0 in dynamic mode%s)\n",
               o->alg_auto ? "convolution_auto" : "convolution_direct", fmt_name[o->fmt],
               o->fmt == FMT_PLAIN  ? " (nchw/oihw, nhwc/ohwi, goihw/gohwi with groups)"
               : o->fmt == FMT_AUTO ? " (plain nchw/oihw, nhwc/ohwi, goihw/gohwi; weights in "
                                      "oneDNN's format, reordered untimed, only where the plain "
                                      "ones leave it its reference kernel: [w:any])"
                                    : " (reorders outside the timing: oneDNN's best case)",
               cap, o->dnnl_cache_keep ? ": not here, --dnnl-cache keep" : "");
    }
#else
    printf("dnnl:     not found at build time (baseline skipped)\n");
#endif
    printf("timing:   steady: median per-call time, libraries interleaved per repetition\n"
           "          (rotating), target %.3g s per library per case, reps %d..%d, samples\n"
           "          >= %.3g ms, case cap %.3g s, gap %.0f us (threads > 1);\n"
           "          dynamic: %d shuffled passes, one call per case per pass, median\n",
           o->target_s, o->min_reps, o->max_reps, o->min_sample_s * 1e3, o->case_cap_s,
           o->gap_us, o->passes);
}

/* ---- main --------------------------------------------------------------- */

static int need(int i, int argc, int count, const char *opt)
{
    if (i + count >= argc) {
        fprintf(stderr, PROG ": %s needs %d argument%s\n", opt, count, count > 1 ? "s" : "");
        exit(2);
    }
    return 1;
}

static double num(const char *s, const char *opt)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) {
        fprintf(stderr, PROG ": %s: not a number: '%s'\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const double t_start = bench_now();
    options o = {.threads = 0, .layouts = 3, .modes = 3, .target_s = -1, .min_reps = -1,
                 .max_reps = 1000, .min_sample_s = -1, .warmup_s = -1, .case_cap_s = -1,
                 .passes = -1, .gap_us = -1, .tol = 1e-4, .seed = 1, .fmt = FMT_AUTO};
    case_list shapes = {0};
    char suites_arg[1024] = "";
    const char *libs_arg = "vortex,dnnl";
    int explicit_libs = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--suite") && need(i, argc, 1, a)) {
            if (suites_arg[0])
                strncat(suites_arg, ",", sizeof suites_arg - strlen(suites_arg) - 1);
            strncat(suites_arg, argv[++i], sizeof suites_arg - strlen(suites_arg) - 1);
        } else if (!strcmp(a, "--shape") && need(i, argc, 1, a)) {
            char defname[40];
            snprintf(defname, sizeof defname, "shape%d", shapes.n);
            ccase x;
            const char *why = "";
            if (parse_spec(argv[++i], "shape", defname, &x, &why) != 0) {
                fprintf(stderr, PROG ": --shape '%s': %s\n", argv[i], why);
                return 2;
            }
            add_case(&shapes, &x);
        } else if (!strcmp(a, "--layout") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "nchw"))
                o.layouts = 1;
            else if (!strcmp(v, "nhwc"))
                o.layouts = 2;
            else if (!strcmp(v, "both"))
                o.layouts = 3;
            else {
                fprintf(stderr, PROG ": --layout takes nchw, nhwc or both\n");
                return 2;
            }
        } else if (!strcmp(a, "--mode") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "steady"))
                o.modes = 1;
            else if (!strcmp(v, "dynamic"))
                o.modes = 2;
            else if (!strcmp(v, "both"))
                o.modes = 3;
            else {
                fprintf(stderr, PROG ": --mode takes steady, dynamic or both\n");
                return 2;
            }
        } else if (!strcmp(a, "--libs") && need(i, argc, 1, a)) {
            libs_arg = argv[++i];
            explicit_libs = 1;
        } else if (!strcmp(a, "--threads") && need(i, argc, 1, a)) {
            o.threads = (int)num(argv[++i], a);
            if (o.threads < 1) {
                fprintf(stderr, PROG ": --threads must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--quick")) {
            o.quick = 1;
        } else if (!strcmp(a, "--target-seconds") && need(i, argc, 1, a)) {
            o.target_s = num(argv[++i], a);
        } else if (!strcmp(a, "--min-reps") && need(i, argc, 1, a)) {
            o.min_reps = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--max-reps") && need(i, argc, 1, a)) {
            o.max_reps = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--min-sample-ms") && need(i, argc, 1, a)) {
            o.min_sample_s = num(argv[++i], a) * 1e-3;
        } else if (!strcmp(a, "--case-seconds") && need(i, argc, 1, a)) {
            o.case_cap_s = num(argv[++i], a);
        } else if (!strcmp(a, "--passes") && need(i, argc, 1, a)) {
            o.passes = (int)num(argv[++i], a);
            if (o.passes < 1) {
                fprintf(stderr, PROG ": --passes must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--gap-us") && need(i, argc, 1, a)) {
            o.gap_us = num(argv[++i], a);
        } else if (!strcmp(a, "--max-seconds") && need(i, argc, 1, a)) {
            o.max_seconds = num(argv[++i], a);
        } else if (!strcmp(a, "--tol") && need(i, argc, 1, a)) {
            o.tol = num(argv[++i], a);
        } else if (!strcmp(a, "--seed") && need(i, argc, 1, a)) {
            o.seed = (uint64_t)num(argv[++i], a);
        } else if (!strcmp(a, "--dnnl-alg") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "direct"))
                o.alg_auto = 0;
            else if (!strcmp(v, "auto"))
                o.alg_auto = 1;
            else {
                fprintf(stderr, PROG ": --dnnl-alg takes direct or auto\n");
                return 2;
            }
        } else if (!strcmp(a, "--dnnl-formats") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            int f = -1;
            for (int k = 0; k < NFMT; k++)
                if (!strcmp(v, fmt_name[k]))
                    f = k;
            if (f < 0) {
                fprintf(stderr, PROG ": --dnnl-formats takes auto, plain, weights-any or any\n");
                return 2;
            }
            o.fmt = f;
        } else if (!strcmp(a, "--dnnl-cache") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "keep"))
                o.dnnl_cache_keep = 1;
            else if (!strcmp(v, "off"))
                o.dnnl_cache_keep = 0;
            else {
                fprintf(stderr, PROG ": --dnnl-cache takes keep or off\n");
                return 2;
            }
        } else if (!strcmp(a, "--vortex-filter") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "packed"))
                o.vx_packed = 1;
            else if (!strcmp(v, "plain"))
                o.vx_packed = 0;
            else {
                fprintf(stderr, PROG ": --vortex-filter takes plain or packed\n");
                return 2;
            }
        } else if (!strcmp(a, "--check-naive")) {
            o.check_naive = 1;
        } else if (!strcmp(a, "--csv") && need(i, argc, 1, a)) {
            o.csv = argv[++i];
        } else if (!strcmp(a, "--list")) {
            o.list = 1;
        } else {
            fprintf(stderr, PROG ": unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (o.target_s < 0)
        o.target_s = o.quick ? 0.05 : 0.5;
    if (o.warmup_s < 0)
        o.warmup_s = o.quick ? 0.005 : 0.05;
    if (o.min_sample_s < 0)
        o.min_sample_s = o.quick ? 5e-3 : 20e-3;
    if (o.case_cap_s < 0)
        o.case_cap_s = o.quick ? 2.0 : 10.0;
    if (o.passes < 0)
        o.passes = o.quick ? 3 : 5;
    if (o.gap_us < 0)
        o.gap_us = o.quick ? 1000 : 2000;
    if (o.min_reps < 1)
        o.min_reps = o.quick ? 3 : 5;
    if (o.max_reps < o.min_reps)
        o.max_reps = o.min_reps;

    /* Suites first (in the order given), then the --shape cases. */
    case_list all = {0};
    if (!suites_arg[0] && shapes.n == 0)
        snprintf(suites_arg, sizeof suites_arg, "resnet50,cnn-random");
    if (suites_arg[0]) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", suites_arg);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (add_suite(&all, t) != 0) {
                fprintf(stderr,
                        PROG ": unknown suite '%s' (resnet50, cnn-random, mobilenet-dw, small, all, or a "
                             "readable file)\n", t);
                return 2;
            }
    }
    for (int i = 0; i < shapes.n; i++)
        add_case(&all, &shapes.v[i]);
    free(shapes.v);
    if (o.quick) { /* keep the subset */
        int w = 0;
        for (int i = 0; i < all.n; i++)
            if (all.v[i].quick)
                all.v[w++] = all.v[i];
        all.n = w;
    }

    if (o.list) {
        printf("suite,case,n,c,h,w,k,r,s,stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,groups,bias,"
               "relu,p,q,gflop\n");
        for (int i = 0; i < all.n; i++) {
            const ccase *c = &all.v[i];
            int64_t p = 0, q = 0;
            out_dims(c, &p, &q);
            printf("%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                   ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                   ",%" PRId64 ",%" PRId64 ",%d,%d,%" PRId64 ",%" PRId64 ",%.6f\n",
                   c->suite, c->name, c->n, c->c, c->h, c->w, c->k, c->r, c->s, c->sh, c->sw,
                   c->ph, c->pw, c->dh, c->dw, c->g, c->bias, c->relu, p, q,
                   case_flops(c) * 1e-9);
        }
        free(all.v);
        return 0;
    }
    if (parse_libs(libs_arg, explicit_libs) != 0)
        return 2;

    int threads = o.threads ? o.threads : vx_get_num_threads();
    if (threads < 1)
        threads = 1;
    dnnl_runtime_setup();
    setup_threads(threads);
#ifdef HAVE_DNNL
    int dnnl_engine_failed = 0;
    if (lib_on[L_DNNL]) {
        if (dnnl_engine_create(&g_eng, dnnl_cpu, 0) != dnnl_success ||
            dnnl_stream_create(&g_stream, g_eng, dnnl_stream_default_flags) != dnnl_success) {
            /* Time Vortex alone (checked against the naive convolution), as
             * when oneDNN is missing, but say so loudly. */
            lib_on[L_DNNL] = 0;
            dnnl_engine_failed = 1;
        }
    }
#endif
    if ((o.modes & (1 << MODE_DYNAMIC)) && lib_on[L_DNNL] && lib_on[L_VX]) {
        const bench_isa isa = bench_isa_supported(BENCH_ISA_AVX512) ? BENCH_ISA_AVX512 : BENCH_ISA_AVX2;
        bench_peak pk;
        for (int r = 0; r < 3; r++) /* best of 3 x 0.1 s: robust to a noisy neighbour */
            if (bench_fma_peak(isa, threads, 0.1, &pk) == 0 && pk.gflops > g_peak_gflops)
                g_peak_gflops = pk.gflops;
    }
    print_machine(threads, &o);
    if (g_peak_gflops > 0)
        printf("peak:     %.1f GFLOP/s, the FMA loop on %d thread%s (dynamic mode's ceiling, "
               "see --help)\n", g_peak_gflops, threads, threads == 1 ? "" : "s");
#ifdef HAVE_DNNL
    if (dnnl_engine_failed)
        printf("WARNING:  cannot create the oneDNN CPU engine/stream (%s): oneDNN NOT timed, "
               "Vortex checked against the naive convolution only\n", dnnl_runtime_note);
#endif
    if (o.max_seconds > 0) {
        g_deadline = t_start + o.max_seconds;
        printf("budget:   %.3g s (--max-seconds)\n", o.max_seconds);
    }
    if (o.quick)
        printf("quick:    the --quick subset, %d case%s per layout and mode\n", all.n,
               all.n == 1 ? "" : "s");

    /* Vortex's first call (thread pool start-up, tuning file) before any case. */
    if (lib_on[L_VX]) {
        ccase init = mk("init", "init", 1, 4, 4, 4, 4, 1, 1, 1, 0, 1, 1, 0, 0);
        static float ii[64], fi[64], oi[64];
        vx_conv2d_params prm = vx_params(&init, LAY_NCHW);
        vx_status s = dyn_conv2d(&prm, ii, fi, NULL, oi);
        if (s != VX_OK)
            printf("note:     Vortex's warm-up call returned %s: %s\n", vx_status_string(s),
                   vx_last_error());
    }

    FILE *csv = NULL;
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", o.csv, strerror(errno));
            return 2;
        }
        fprintf(csv, "suite,case,layout,mode,n,c,h,w,k,r,s,stride_h,stride_w,pad_h,pad_w,dil_h,"
                     "dil_w,groups,gflop,library,time_us,gflops,speedup\n");
    }

    /* Vortex's own output-size rule must agree with the formula. */
    int dims_bad = 0;
    if (lib_on[L_VX])
        for (int i = 0; i < all.n; i++) {
            int64_t p = 0, q = 0, vp = -1, vq = -1;
            out_dims(&all.v[i], &p, &q);
            for (int lay = 0; lay < 2; lay++) {
                vx_conv2d_params prm = vx_params(&all.v[i], lay);
                vx_status s = vx_conv2d_output_dims(&prm, &vp, &vq);
                if (s != VX_OK || vp != p || vq != q) {
                    printf("ERROR %s %s %s: vx_conv2d_output_dims says %s %" PRId64 "x%" PRId64
                           ", expected %" PRId64 "x%" PRId64 " (%s)\n",
                           all.v[i].suite, all.v[i].name, lay_name[lay], vx_status_string(s), vp,
                           vq, p, q, s == VX_OK ? "" : vx_last_error());
                    dims_bad++;
                }
            }
        }

    int ngroups_max = 64, ngroups = 0;
    gsummary *gs = calloc((size_t)ngroups_max, sizeof *gs);
    cresult *res = calloc((size_t)(all.n > 0 ? all.n : 1), sizeof *res);
    ccase **grp = calloc((size_t)(all.n > 0 ? all.n : 1), sizeof *grp);
    int mismatches = 0, failures = dims_bad, stopped = 0, runs = 0;
#ifdef HAVE_DNNL
    int cache_saved = -1;
    if (lib_on[L_DNNL])
        dnnl_get_primitive_cache_capacity(&cache_saved);
#endif
    for (int i = 0; i < all.n;) {
        /* One suite = a run of consecutive cases with the same suite name. */
        int j = i;
        while (j < all.n && !strcmp(all.v[j].suite, all.v[i].suite))
            j++;
        const int m = j - i;
        for (int k = 0; k < m; k++)
            grp[k] = &all.v[i + k];
        for (int layout = 0; layout < 2; layout++) {
            if (!(o.layouts & (1 << layout)))
                continue;
            for (int mode = 0; mode < 2; mode++) {
                if (!(o.modes & (1 << mode)))
                    continue;
                memset(res, 0, (size_t)m * sizeof *res);
                for (int k = 0; k < m; k++) {
                    res[k].c = grp[k];
                    res[k].layout = layout;
                    res[k].mode = mode;
                }
                print_header(all.v[i].suite, layout, mode, &o);
                const uint64_t gseed = o.seed * 1000003ull + (uint64_t)i * 7919u +
                                       (uint64_t)layout * 31u;
                if (mode == MODE_STEADY) {
                    for (int k = 0; k < m; k++) {
                        if (over_budget()) {
                            if (!stopped)
                                printf("  -- budget of %.3g s reached: stopping before %s %s\n",
                                       o.max_seconds, grp[k]->suite, grp[k]->name);
                            stopped = 1;
                            continue;
                        }
                        steady_case(grp[k], layout, &o, threads, gseed + (uint64_t)k, &res[k]);
                        print_row(&res[k]);
                        csv_rows(csv, &res[k]);
                    }
                } else {
#ifdef HAVE_DNNL
                    if (lib_on[L_DNNL] && !o.dnnl_cache_keep)
                        dnnl_set_primitive_cache_capacity(0);
#endif
                    if (over_budget()) {
                        if (!stopped)
                            printf("  -- budget of %.3g s reached: stopping before %s dynamic\n",
                                   o.max_seconds, all.v[i].suite);
                        stopped = 1;
                    } else {
                        dynamic_group(grp, m, layout, &o, threads, gseed, res);
                    }
#ifdef HAVE_DNNL
                    if (lib_on[L_DNNL] && !o.dnnl_cache_keep && cache_saved >= 0)
                        dnnl_set_primitive_cache_capacity(cache_saved);
#endif
                    for (int k = 0; k < m; k++) {
                        if (!res[k].ran)
                            stopped = 1;
                        print_row(&res[k]);
                        csv_rows(csv, &res[k]);
                    }
                }
                for (int k = 0; k < m; k++) {
                    mismatches += res[k].mismatch;
                    failures += res[k].failed;
                    runs += res[k].ran;
                }
                if (ngroups == ngroups_max) {
                    ngroups_max *= 2;
                    gs = realloc(gs, (size_t)ngroups_max * sizeof *gs);
                }
                summarize(res, m, all.v[i].suite, layout, mode, &gs[ngroups]);
                print_summary(&gs[ngroups]);
                ngroups++;
            }
        }
        i = j;
    }
    if (csv)
        fclose(csv);

    if (ngroups > 1) {
        printf("\n== recap: speedup = dnnl time / vortex time (> 1: Vortex faster) ==\n");
        printf("%-12s %-5s %-8s %6s %9s %9s %9s %9s %9s %6s %9s\n", "suite", "lay", "mode", "cases",
               "geomean", "> 1.0", "min", "max", "dnnl ref", "w:any", "ceiling");
        for (int k = 0; k < ngroups; k++) {
            const gsummary *g = &gs[k];
            char share[24] = "-";
            if (g->cmp)
                snprintf(share, sizeof share, "%d/%d", g->faster, g->cmp);
            printf("%-12s %-5s %-8s %6d", g->suite, lay_name[g->layout], mode_name[g->mode],
                   g->ran);
            if (g->cmp)
                printf(" %8.3fx %9s %8.3fx %8.3fx", g->geo, share, g->minr, g->maxr);
            else
                printf(" %9s %9s %9s %9s", "-", "-", "-", "-");
            printf(" %9d %6d", g->ref_impl, g->wany);
            if (g->ceiling > 0)
                printf(" %8.3fx\n", g->ceiling);
            else
                printf(" %9s\n", "-");
        }
    }
    printf("\n%d case runs in %.1f s", runs, bench_now() - t_start);
    if (stopped)
        printf(" (stopped by --max-seconds %.3g; the rest skipped)", o.max_seconds);
    printf("\n");
    if (o.csv)
        printf("csv: %s\n", o.csv);
    if (mismatches)
        printf("!!!!!!!! MISMATCH in %d case run%s: Vortex disagrees with the reference beyond "
               "%.1g !!!!!!!!\n", mismatches, mismatches == 1 ? "" : "s", o.tol);
    if (failures)
        printf("ERROR: a library call failed in %d case run%s\n", failures,
               failures == 1 ? "" : "s");
#ifdef HAVE_DNNL
    if (lib_on[L_DNNL]) {
        dnnl_stream_destroy(g_stream);
        dnnl_engine_destroy(g_eng);
    }
#endif
    free(res);
    free(grp);
    free(gs);
    free(all.v);
    if (mismatches)
        return 2;
    return failures ? 1 : 0;
}
