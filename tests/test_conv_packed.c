/* dyn_conv2d_packed and vx_conv2d_filter through the public API only (this
 * executable links the shared library): a seeded random sweep with the
 * filter packed first; one packed filter serving calls whose batch, map
 * size, stride, padding, dilation and activation change from call to call
 * (as a server's would), in both layouts; many threads making the first
 * calls on one object at once (its panels are packed on first use); and
 * every bad argument rejected with a message before anything is written. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "ref_conv.h"

#define TMO 240.0

static int64_t pick(vt_rng *g, int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)(vt_rng_next(g) % (uint64_t)(hi - lo + 1));
}

/* A random valid case in the ranges, the filter packed first. */
static vt_conv_case draw_packed(vt_rng *g)
{
    static const int64_t taps[][2] = { { 1, 1 }, { 2, 2 }, { 3, 3 }, { 5, 5 }, { 7, 7 }, { 1, 7 }, { 7, 1 } };
    for (;;) {
        const int t = (int)pick(g, 0, 6);
        vt_conv_case x = vt_conv_make(pick(g, 0, 1) ? VX_NHWC : VX_NCHW, pick(g, 1, 5), pick(g, 1, 19),
                                      pick(g, 1, 20), pick(g, 1, 20), pick(g, 1, 19), taps[t][0], taps[t][1]);
        x.p.stride_h = pick(g, 1, 3);
        x.p.stride_w = pick(g, 1, 3);
        x.p.pad_h = pick(g, 0, 3);
        x.p.pad_w = pick(g, 0, 3);
        x.p.dilation_h = pick(g, 1, 2);
        x.p.dilation_w = pick(g, 1, 2);
        const int64_t gsel = pick(g, 0, 3);
        x.p.groups = gsel == 1 && x.p.c % 2 == 0 && x.p.k % 2 == 0 ? 2 : gsel == 2 ? x.p.c : 1;
        if (x.p.k % x.p.groups != 0)
            x.p.k = x.p.groups * pick(g, 1, 3);
        x.bias = (int)pick(g, 0, 1);
        x.p.activation = pick(g, 0, 1) ? VX_ACT_RELU : VX_ACT_NONE;
        x.packed = 1;
        x.seed = vt_rng_next(g);
        int64_t oh, ow;
        if (vt_conv_dims(&x.p, &oh, &ow))
            return x;
    }
}

static void run_sweep(uint64_t seed, int count, const char *label)
{
    vt_rng g;
    vt_rng_seed(&g, seed);
    char tag[64];
    for (int i = 0; i < count; i++) {
        vt_conv_case x = draw_packed(&g);
        snprintf(tag, sizeof tag, "%s case %d", label, i);
        x.tag = tag;
        vt_conv_check(&x);
    }
}

Test(packed, random_sweep, .timeout = TMO) { run_sweep(0xF117E5ull, 120, "packed sweep"); }

/* The AVX2 families (8-wide panels) on this machine too. Criterion runs
 * each test in its own process, so the ISA is set before the library
 * reads it. */
static void init_avx2(void) { setenv("VORTEX_ISA", "avx2", 1); }
Test(packed, random_sweep_avx2, .init = init_avx2, .timeout = TMO)
{
    run_sweep(0xA2F117ull, 60, "packed sweep, VORTEX_ISA=avx2");
}

/* Larger channel counts than the sweep's: several panels of every family,
 * k blocks, the in-place path's pieces and band tiles, pointwise GEMMs,
 * one with an output past L2 (gemm.c, walks_rows). */
Test(packed, wide_channels, .timeout = TMO)
{
    static const int64_t cases[][9] = {
        /* n, c, h, w, k, r, s, stride, pad */
        { 1, 64, 7, 7, 130, 3, 3, 1, 1 },   { 2, 96, 9, 9, 70, 1, 1, 1, 0 },  { 1, 52, 9, 9, 100, 9, 9, 1, 4 },
        { 3, 40, 14, 14, 64, 1, 1, 2, 0 },  { 1, 200, 4, 4, 48, 3, 3, 1, 1 }, { 2, 3, 23, 23, 64, 7, 7, 2, 3 },
        { 1, 128, 5, 6, 257, 1, 1, 1, 0 },
        { 12, 20, 40, 40, 108, 1, 1, 1, 0 }, /* an output past L2: packed plans walk it by rows */
    };
    char tag[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int l = 0; l < 2; l++) {
            const int64_t *c = cases[i];
            vt_conv_case x = vt_conv_make(l ? VX_NHWC : VX_NCHW, c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
            x.p.stride_h = x.p.stride_w = c[7];
            x.p.pad_h = x.p.pad_w = c[8];
            x.bias = 1;
            x.p.activation = (i & 1) ? VX_ACT_RELU : VX_ACT_NONE;
            x.packed = 1;
            snprintf(tag, sizeof tag, "packed wide case %zu", i);
            x.tag = tag;
            vt_conv_check(&x);
        }
}

/* One call on a shared object: fresh random input and bias, checked against
 * the float64 reference with the filter the object was made from. */
static void call_shared(const vx_conv2d_params *p, const vx_conv2d_filter *pf, const float *filt, uint64_t seed,
                        const char *what)
{
    int64_t oh, ow;
    cr_assert(vt_conv_dims(p, &oh, &ow), "test bug: %s", what);
    const int64_t nin = vt_conv_input_count(p), nout = p->n * p->k * oh * ow;
    float *in = malloc(sizeof(float) * (size_t)nin), *out = malloc(sizeof(float) * (size_t)nout);
    float *bias = malloc(sizeof(float) * (size_t)p->k);
    double *ref = malloc(sizeof(double) * (size_t)nout);
    cr_assert(in && out && bias && ref);
    vt_rng g;
    vt_rng_seed(&g, seed);
    for (int64_t i = 0; i < nin; i++)
        in[i] = vt_rng_float(&g);
    for (int64_t i = 0; i < p->k; i++)
        bias[i] = vt_rng_float(&g);
    for (int64_t i = 0; i < nout; i++)
        out[i] = NAN;
    const vx_status s = dyn_conv2d_packed(p, in, pf, bias, out);
    cr_assert_eq(s, VX_OK, "%s: dyn_conv2d_packed returned %s (%s)", what, vx_status_string(s), vx_last_error());
    vt_ref_conv2d(p, in, filt, bias, ref);
    const double err = vt_rel_err(out, 0, 1, ref, 1, nout);
    cr_assert(err <= VT_TOL, "%s: relative Frobenius error %.3g > %g", what, err, VT_TOL);
    free(in);
    free(out);
    free(bias);
    free(ref);
}

/* A random filter for p's filter fields (from g) and its packed object in
 * *pf; the caller frees both. */
static float *random_filter(const vx_conv2d_params *p, vt_rng *g, vx_conv2d_filter **pf)
{
    const int64_t nf = vt_conv_filter_count(p);
    float *filt = malloc(sizeof(float) * (size_t)nf);
    cr_assert(filt);
    for (int64_t i = 0; i < nf; i++)
        filt[i] = vt_rng_float(g);
    cr_assert_eq(vx_conv2d_filter_create(p, filt, pf), VX_OK, "%s", vx_last_error());
    return filt;
}

/* What changes between a server's calls (batch, map, stride, padding,
 * dilation, activation) on one object per layout, its panels packed by
 * whichever call first needs each width. */
Test(packed, one_filter_many_shapes, .timeout = TMO)
{
    for (int l = 0; l < 2; l++) {
        vx_conv2d_params p;
        memset(&p, 0, sizeof p);
        p.layout = l ? VX_NHWC : VX_NCHW;
        p.c = 24;
        p.k = 40;
        p.r = p.s = 3;
        p.groups = 1;
        vt_rng g;
        vt_rng_seed(&g, 31 + (uint64_t)l);
        vx_conv2d_filter *pf = NULL;
        float *filt = random_filter(&p, &g, &pf);
        char what[160];
        for (int i = 0; i < 24; i++) {
            vx_conv2d_params q = p;
            q.n = pick(&g, 1, 6);
            q.h = pick(&g, 3, 40);
            q.w = pick(&g, 3, 40);
            q.stride_h = q.stride_w = pick(&g, 1, 2);
            q.pad_h = pick(&g, 0, 2);
            q.pad_w = pick(&g, 0, 2);
            q.dilation_h = q.dilation_w = pick(&g, 1, 2);
            q.activation = i & 1 ? VX_ACT_RELU : VX_ACT_NONE;
            int64_t oh, ow;
            if (!vt_conv_dims(&q, &oh, &ow))
                continue;
            snprintf(what, sizeof what, "%s call %d: n=%lld %lldx%lld stride %lld pad %lldx%lld dil %lld",
                     l ? "NHWC" : "NCHW", i, (long long)q.n, (long long)q.h, (long long)q.w,
                     (long long)q.stride_h, (long long)q.pad_h, (long long)q.pad_w, (long long)q.dilation_h);
            call_shared(&q, pf, filt, 500 + (uint64_t)i, what);
        }
        vx_conv2d_filter_destroy(pf);
        free(filt);
    }
}

enum { NTHREADS = 6 };

typedef struct {
    const vx_conv2d_filter *pf;
    const float *filt;
    vx_conv2d_params p;
    int id;
} shared_job;

static void *shared_main(void *arg)
{
    shared_job *j = arg;
    char what[64];
    snprintf(what, sizeof what, "thread %d of %d on one packed filter", j->id, NTHREADS);
    call_shared(&j->p, j->pf, j->filt, 900 + (uint64_t)j->id, what);
    return NULL;
}

/* First calls from many threads at once on a fresh object: each width is
 * packed once while the others wait, then read by all. Criterion reports
 * an assertion in a thread as a failure of the test. */
Test(packed, concurrent_first_calls, .timeout = TMO)
{
    vx_conv2d_params p = vt_conv_make(VX_NHWC, 2, 48, 12, 12, 96, 3, 3).p;
    p.pad_h = p.pad_w = 1;
    vt_rng g;
    vt_rng_seed(&g, 4711);
    vx_conv2d_filter *pf = NULL;
    float *filt = random_filter(&p, &g, &pf);
    pthread_t t[NTHREADS];
    shared_job jobs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i] = (shared_job){ pf, filt, p, i };
        jobs[i].p.h = jobs[i].p.w = 8 + 3 * i; /* different maps: perhaps different widths */
        cr_assert_eq(pthread_create(&t[i], NULL, shared_main, &jobs[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    vx_conv2d_filter_destroy(pf);
    free(filt);
}

/* ------------------------------------------------------------------------ */
/* Bad arguments                                                            */
/* ------------------------------------------------------------------------ */

static vx_conv2d_params base(vx_tensor_layout l)
{
    vx_conv2d_params p = vt_conv_make(l, 2, 4, 5, 6, 6, 3, 3).p;
    p.pad_h = p.pad_w = 1;
    p.groups = 2;
    return p;
}

/* The fields the bad-argument tests change, by name. */
enum { F_K, F_C, F_R, F_S, F_GROUPS, F_STRIDE_H, F_PAD_H };
static int64_t *field_of(vx_conv2d_params *q, int f)
{
    int64_t *const at[] = { &q->k, &q->c, &q->r, &q->s, &q->groups, &q->stride_h, &q->pad_h };
    return at[f];
}

enum { ABUF = 4096 };
static float g_in[ABUF], g_f[ABUF], g_b[ABUF], g_out[ABUF];

static void expect_create_fails(const vx_conv2d_params *p, const float *filt, int null_out, const char *why)
{
    vx_conv2d_filter *sentinel = (vx_conv2d_filter *)&g_out[0], *pf = sentinel;
    const vx_status s = vx_conv2d_filter_create(p, filt, null_out ? NULL : &pf);
    cr_assert_eq(s, VX_ERR_INVALID_ARG, "vx_conv2d_filter_create (%s) returned %s, expected VX_ERR_INVALID_ARG",
                 why, vx_status_string(s));
    cr_assert(vx_last_error()[0] != '\0', "vx_conv2d_filter_create (%s): no message", why);
    cr_assert(pf == sentinel, "vx_conv2d_filter_create (%s) wrote *out although it failed", why);
}

Test(packed, bad_create_arguments, .timeout = TMO)
{
    vt_rng g;
    vt_rng_seed(&g, 5);
    for (int i = 0; i < ABUF; i++)
        g_f[i] = vt_rng_float(&g);
    vx_conv2d_params p = base(VX_NHWC);
    expect_create_fails(NULL, g_f, 0, "params NULL");
    expect_create_fails(&p, NULL, 0, "filter NULL");
    expect_create_fails(&p, g_f, 1, "out NULL");
    static const char *const fields[] = { "k", "c", "r", "s", "groups" };
    for (int f = F_K; f <= F_GROUPS; f++)
        for (int64_t v = -1; v <= 0; v++) {
            vx_conv2d_params q = p;
            *field_of(&q, f) = v;
            char why[48];
            snprintf(why, sizeof why, "%s = %lld", fields[f], (long long)v);
            expect_create_fails(&q, g_f, 0, why);
        }
    vx_conv2d_params q = p;
    q.groups = 3; /* does not divide c = 4 */
    expect_create_fails(&q, g_f, 0, "groups not dividing c");
    q = p;
    q.layout = (vx_tensor_layout)7;
    expect_create_fails(&q, g_f, 0, "bad layout");
    q = p;
    q.k = q.c = (int64_t)1 << 40;
    q.groups = 1;
    expect_create_fails(&q, g_f, 0, "filter size overflowing");
    vx_conv2d_filter_destroy(NULL); /* nothing, no crash */
}

/* A call whose filter fields differ from the object's, a NULL pointer or
 * bad map parameters: VX_ERR_INVALID_ARG, a message, nothing written. */
static void expect_call_fails(const vx_conv2d_params *p, const vx_conv2d_filter *pf, int null_in, int null_out,
                              const char *why)
{
    vt_fill_sentinel(g_out, ABUF);
    const vx_status s = dyn_conv2d_packed(p, null_in ? NULL : g_in, pf, g_b, null_out ? NULL : g_out);
    cr_assert_eq(s, VX_ERR_INVALID_ARG, "dyn_conv2d_packed (%s) returned %s, expected VX_ERR_INVALID_ARG", why,
                 vx_status_string(s));
    cr_assert(vx_last_error()[0] != '\0', "dyn_conv2d_packed (%s): no message", why);
    cr_assert(vt_check_sentinel(g_out, ABUF) < 0, "dyn_conv2d_packed (%s) wrote the output although it failed",
              why);
}

Test(packed, bad_call_arguments, .timeout = TMO)
{
    vt_rng g;
    vt_rng_seed(&g, 6);
    for (int i = 0; i < ABUF; i++) {
        g_in[i] = vt_rng_float(&g);
        g_f[i] = vt_rng_float(&g);
        g_b[i] = vt_rng_float(&g);
    }
    for (int l = 0; l < 2; l++) {
        const vx_conv2d_params p = base(l ? VX_NHWC : VX_NCHW);
        vx_conv2d_filter *pf = NULL;
        cr_assert_eq(vx_conv2d_filter_create(&p, g_f, &pf), VX_OK, "%s", vx_last_error());
        /* the base call itself is valid */
        vt_fill_sentinel(g_out, ABUF);
        cr_assert_eq(dyn_conv2d_packed(&p, g_in, pf, g_b, g_out), VX_OK, "%s", vx_last_error());
        expect_call_fails(NULL, pf, 0, 0, "params NULL");
        expect_call_fails(&p, NULL, 0, 0, "packed filter NULL");
        expect_call_fails(&p, pf, 1, 0, "input NULL");
        expect_call_fails(&p, pf, 0, 1, "output NULL");
        vx_conv2d_params q = p;
        q.layout = l ? VX_NCHW : VX_NHWC;
        expect_call_fails(&q, pf, 0, 0, "the other layout");
        /* one field changed: the filter's (k still divisible by groups),
         * or the map's into an invalid call */
        static const struct { int field; int64_t value; const char *why; } changes[] = {
            { F_K, 4, "another k" }, { F_C, 6, "another c" }, { F_R, 2, "another r" },
            { F_S, 1, "another s" }, { F_GROUPS, 1, "another groups" }, { F_STRIDE_H, 0, "stride 0" },
            { F_PAD_H, -1, "negative padding" },
        };
        for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
            q = p;
            *field_of(&q, changes[i].field) = changes[i].value;
            expect_call_fails(&q, pf, 0, 0, changes[i].why);
        }
        vx_conv2d_filter_destroy(pf);
    }
}
