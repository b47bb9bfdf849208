/* dyn_gemm_ex on the host (all operands in host memory): F32 against the
 * float64 reference for every layout/transpose combination, shapes from 1
 * over primes to 97 and 300, padded leading dimensions, alpha/beta (beta = 0
 * over NaN), VX_MATH_TF32 (ignored on the CPU: still exact fp32); F16/BF16 and
 * mixed types rejected with VX_ERR_UNSUPPORTED; invalid enums and the usual
 * bad arguments rejected with VX_ERR_INVALID_ARG; nothing written on any
 * error. Also the CUDA entry points in a build or on a machine without a GPU,
 * and the host fp16/bf16 converters test_cuda_gemm relies on. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_backend.h"
#include "ref.h"
#include "ref_ex.h"

#define TMO 120.0

static const vtx_mem *H = &vtx_host_mem;

/* ---- fp16 / bf16 converters (host side, round to nearest even) ---- */

static uint16_t f16(float f) { return vtx_f32_to_f16(f); }
static uint16_t bf16(float f) { return vtx_f32_to_bf16(f); }

Test(convert, f16_known_values)
{
    static const struct { float f; uint16_t h; } cases[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3C00}, {-2.0f, 0xC000}, {0.5f, 0x3800},
        {65504.0f, 0x7BFF},              /* largest half */
        {65519.0f, 0x7BFF},              /* below the midpoint to 65536 */
        {65520.0f, 0x7C00},              /* the midpoint: ties to even = Inf */
        {1e10f, 0x7C00}, {-1e10f, 0xFC00}, {INFINITY, 0x7C00}, {-INFINITY, 0xFC00},
        {6.103515625e-05f, 0x0400},      /* 2^-14, smallest normal */
        {5.9604644775390625e-08f, 0x0001}, /* 2^-24, smallest subnormal */
        {2.98023223876953125e-08f, 0x0000}, /* 2^-25: tie between 0 and 2^-24 -> 0 (even) */
        {8.94069671630859375e-08f, 0x0002}, /* 3 * 2^-25: tie between 1 and 2 units -> 2 */
        {3.0e-08f, 0x0001},              /* just above 2^-25 */
        {1.00048828125f, 0x3C00},        /* 1 + 2^-11: tie -> 1.0 (even) */
        {1.00146484375f, 0x3C02},        /* 1 + 3 * 2^-11: tie -> 1 + 2^-9 (even) */
        {1.0005f, 0x3C01},               /* above the tie */
        {6.1e-05f, 0x03FF},              /* just below 2^-14: largest subnormal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(f16(cases[i].f), cases[i].h, "vtx_f32_to_f16(%.10g) = 0x%04x, expected 0x%04x",
                     (double)cases[i].f, f16(cases[i].f), cases[i].h);
    uint16_t hn = f16(NAN);
    cr_assert((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0, "vtx_f32_to_f16(NaN) = 0x%04x", hn);
    cr_assert(isnan(vtx_f16_to_f32(0x7E00)), "0x7E00 is not NaN as a float");
    cr_assert_eq(vtx_f16_to_f32(0x0001), ldexpf(1.0f, -24));
    cr_assert_eq(vtx_f16_to_f32(0x3555), 0.333251953125f);
}

Test(convert, f16_exhaustive_roundtrip_and_ties)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = vtx_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            cr_assert(((h >> 10) & 0x1F) == 31 && (h & 0x3FF) != 0, "0x%04x decoded as NaN", h);
            cr_assert(isnan(vtx_f16_to_f32(f16(f))), "NaN 0x%04x does not round trip to NaN", h);
            continue;
        }
        cr_assert_eq(f16(f), (uint16_t)h, "0x%04x -> %.10g -> 0x%04x", h, (double)f, f16(f));
        /* midpoint to the next larger magnitude: ties to the even code;
         * slightly off the midpoint goes to the nearer one */
        uint32_t mag = h & 0x7FFF;
        if (mag < 0x7BFF) {
            float g = vtx_f16_to_f32((uint16_t)(h + 1));
            float mid = (f + g) * 0.5f; /* exact: 12 significant bits */
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            cr_assert_eq(f16(mid), even, "tie %.10g between 0x%04x and 0x%04x -> 0x%04x", (double)mid,
                         h, h + 1, f16(mid));
            cr_assert_eq(f16(nextafterf(mid, f)), (uint16_t)h, "below tie of 0x%04x", h);
            cr_assert_eq(f16(nextafterf(mid, g)), (uint16_t)(h + 1), "above tie of 0x%04x", h);
        }
    }
}

Test(convert, bf16_exhaustive_roundtrip_and_ties)
{
    cr_assert_eq(bf16(1.0f), 0x3F80);
    cr_assert_eq(bf16(-2.0f), 0xC000);
    cr_assert_eq(bf16(1.00390625f), 0x3F80);   /* 1 + 2^-8: tie -> even */
    cr_assert_eq(bf16(1.01171875f), 0x3F82);   /* 1 + 3 * 2^-8: tie -> even */
    cr_assert_eq(bf16(INFINITY), 0x7F80);
    cr_assert_eq(bf16(3.4028235e38f), 0x7F80); /* FLT_MAX rounds up to Inf */
    cr_assert(isnan(vtx_bf16_to_f32(bf16(NAN))), "bf16(NaN) is not NaN");
    cr_assert(isnan(vtx_bf16_to_f32(bf16(-NAN))), "bf16(-NaN) is not NaN");
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = vtx_bf16_to_f32((uint16_t)h);
        if (isnan(f))
            continue;
        cr_assert_eq(bf16(f), (uint16_t)h, "0x%04x -> %.10g -> 0x%04x", h, (double)f, bf16(f));
        uint32_t mag = h & 0x7FFF;
        if (mag < 0x7F7F) {
            float g = vtx_bf16_to_f32((uint16_t)(h + 1));
            float mid = f + (g - f) * 0.5f; /* exact: 9 significant bits, no overflow */
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            cr_assert_eq(bf16(mid), even, "tie %.10g between 0x%04x and 0x%04x -> 0x%04x",
                         (double)mid, h, h + 1, bf16(mid));
            if (mag != 0) { /* nextafter of a subnormal midpoint stays exact */
                cr_assert_eq(bf16(nextafterf(mid, f)), (uint16_t)h, "below tie of 0x%04x", h);
                cr_assert_eq(bf16(nextafterf(mid, g)), (uint16_t)(h + 1), "above tie of 0x%04x", h);
            }
        }
    }
}

#if defined(__FLT16_MAX__)
/* Where the compiler has _Float16 (GCC >= 12 on x86-64), its conversion
 * (round to nearest even) must agree with ours on arbitrary float bits. */
Test(convert, f16_matches_compiler)
{
    vt_rng r;
    vt_rng_seed(&r, 77);
    for (int i = 0; i < 2000000; i++) {
        uint32_t bits = (uint32_t)vt_rng_next(&r);
        if (i & 1) /* concentrate on the half range */
            bits = (bits & 0x80FFFFFFu) | ((uint32_t)(100 + (i >> 1) % 45) << 23);
        float f;
        memcpy(&f, &bits, sizeof f);
        if (isnan(f))
            continue;
        _Float16 hc = (_Float16)f;
        uint16_t want;
        memcpy(&want, &hc, sizeof want);
        cr_assert_eq(f16(f), want, "vtx_f32_to_f16(%a) = 0x%04x, the compiler gives 0x%04x",
                     (double)f, f16(f), want);
        cr_assert_eq(vtx_f16_to_f32(want), (float)hc, "vtx_f16_to_f32(0x%04x)", want);
    }
}
#endif

/* ---- F32 results on the host ---- */

static const int64_t host_sizes[] = {1, 2, 3, 7, 13, 17, 31, 33, 65, 97};
#define N_HOST_SIZES ((int)(sizeof host_sizes / sizeof host_sizes[0]))
static const int64_t pads[] = {0, 1, 3, 8, 17};

/* Every layout x transpose combination over a Latin sample of the size
 * cross product (each m, n and k value appears for every combination). */
static void host_sweep(vx_math_mode math, uint64_t seed_base)
{
    static const float alphas[] = {1.0f, -0.5f, 0.75f, 2.0f};
    static const float betas[] = {0.0f, 1.0f, 0.3f, 0.0f, -0.75f};
    char tag[64];
    snprintf(tag, sizeof tag, "host sweep %s", vtx_math_name(math));
    for (int combo = 0; combo < 8; combo++)
        for (int t = 0; t < 2 * N_HOST_SIZES; t++) {
            vtx_case c = vtx_case_make(host_sizes[(t + combo) % N_HOST_SIZES],
                                       host_sizes[(3 * t + 1 + combo) % N_HOST_SIZES],
                                       host_sizes[(7 * t + 2 + 2 * combo) % N_HOST_SIZES]);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            c.alpha = alphas[(t + combo) % 4];
            c.beta = betas[t % 5];
            c.c_nan = c.beta == 0.0f && (t % 2 == 0);
            c.lda_pad = pads[(t + combo) % 5];
            c.ldb_pad = pads[(2 * t + 1) % 5];
            c.ldc_pad = pads[(3 * t + 2) % 5];
            c.math = math;
            c.tol = 1e-5;
            c.seed = seed_base + (uint64_t)(combo * 1000 + t);
            c.tag = tag;
            vtx_check(H, &c);
        }
}

Test(host_f32, sweep_default, .timeout = TMO) { host_sweep(VX_MATH_DEFAULT, 1); }

/* VX_MATH_TF32 is ignored on the CPU: the result is exact fp32. */
Test(host_f32, sweep_tf32_is_exact, .timeout = TMO) { host_sweep(VX_MATH_TF32, 50000); }

/* beta == 0 over a C full of NaN/Inf: nothing of C survives, for every
 * combination, alpha and ld padding. */
Test(host_f32, beta0_over_nan, .timeout = TMO)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {17, 31, 33}, {65, 2, 13}, {3, 97, 65}};
    for (int s = 0; s < 4; s++)
        for (int combo = 0; combo < 8; combo++)
            for (int mi = 0; mi < 2; mi++) {
                vtx_case c = vtx_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                c.alpha = mi ? -1.5f : 1.0f;
                c.math = mi ? VX_MATH_TF32 : VX_MATH_DEFAULT;
                c.beta = 0.0f;
                c.c_nan = 1;
                c.ldc_pad = pads[(s + combo) % 5];
                c.lda_pad = pads[(s + combo + 1) % 5];
                c.ldb_pad = pads[(s + combo + 2) % 5];
                c.seed = (uint64_t)(s * 100 + combo * 2 + mi);
                c.tag = "beta0 over NaN";
                vtx_check(H, &c);
            }
}

/* Larger shapes, through the blocked and threaded CPU paths. */
Test(host_f32, larger, .timeout = TMO)
{
    static const int64_t shapes[][3] = {{300, 257, 129}, {131, 300, 251}, {257, 1, 300},
                                        {1, 300, 257}};
    for (int s = 0; s < 4; s++)
        for (int combo = 0; combo < 8; combo += 3) {
            vtx_case c = vtx_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            c.alpha = 0.5f;
            c.beta = s % 2 ? 0.25f : 0.0f;
            c.c_nan = s % 2 == 0;
            c.ldc_pad = 5;
            c.lda_pad = 3;
            c.math = combo % 2 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
            c.seed = (uint64_t)(s * 10 + combo + 900);
            vtx_check(H, &c);
        }
}

/* k == 0 and alpha == 0 scale C by beta (beta == 0: exact zeros over NaN);
 * m == 0 or n == 0 write nothing. */
Test(host_f32, k0_alpha0_and_empty)
{
    static const float betas[] = {0.0f, 1.0f, 0.5f, -2.0f};
    for (int combo = 0; combo < 8; combo++)
        for (int bi = 0; bi < 4; bi++) {
            vtx_case c = vtx_case_make(17, 33, 0);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            c.beta = betas[bi];
            c.c_nan = bi == 0;
            c.ldc_pad = 3;
            c.tag = "k = 0";
            vtx_check(H, &c);
            c.k = 31;
            c.alpha = 0.0f;
            c.tag = "alpha = 0";
            vtx_check(H, &c);
        }
    static const int64_t empty[][3] = {{0, 5, 7}, {5, 0, 7}, {0, 0, 0}, {0, 3, 0}};
    for (int e = 0; e < 4; e++)
        for (int combo = 0; combo < 8; combo++) {
            vtx_case c = vtx_case_make(empty[e][0], empty[e][1], empty[e][2]);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            c.beta = 0.5f;
            c.tag = "empty C: nothing may be written";
            vtx_check(H, &c);
        }
}

/* ---- rejected calls: status, message, C untouched ---- */

#define CBUF 4096   /* floats per operand buffer: enough for every shape here */

typedef struct {
    float a[CBUF], b[CBUF], c[CBUF];
} bufs;

typedef struct {
    vx_layout l;
    vx_transpose ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    vx_dtype at, bt, ct;
    vx_math_mode math;
    int null_a, null_b, null_c;
} call;

static void fill(bufs *x)
{
    vt_rng r;
    vt_rng_seed(&r, 11);
    for (int i = 0; i < CBUF; i++) {
        x->a[i] = vt_rng_float(&r);
        x->b[i] = vt_rng_float(&r);
    }
    vt_fill_sentinel(x->c, CBUF);
}

static call valid_call(vx_layout l, vx_transpose ta, vx_transpose tb, int64_t m, int64_t n,
                       int64_t k)
{
    call q;
    memset(&q, 0, sizeof q);
    q.l = l;
    q.ta = ta;
    q.tb = tb;
    q.m = m;
    q.n = n;
    q.k = k;
    vt_min_lds(l, ta, tb, m, n, k, &q.lda, &q.ldb, &q.ldc);
    q.at = q.bt = q.ct = VX_F32;
    q.math = VX_MATH_DEFAULT;
    return q;
}

static void describe(const call *q, char *buf, size_t len)
{
    snprintf(buf, len,
             "dyn_gemm_ex(layout=%d, transa=%d, transb=%d, m=%lld, n=%lld, k=%lld, a=%s, "
             "a_type=%d, lda=%lld, b=%s, b_type=%d, ldb=%lld, c=%s, c_type=%d, ldc=%lld, math=%d) "
             "on host memory",
             (int)q->l, (int)q->ta, (int)q->tb, (long long)q->m, (long long)q->n, (long long)q->k,
             q->null_a ? "NULL" : "buf", (int)q->at, (long long)q->lda, q->null_b ? "NULL" : "buf",
             (int)q->bt, (long long)q->ldb, q->null_c ? "NULL" : "buf", (int)q->ct,
             (long long)q->ldc, (int)q->math);
}

static vx_status do_call(const call *q, bufs *x, float beta)
{
    return dyn_gemm_ex(q->l, q->ta, q->tb, q->m, q->n, q->k, 1.0f, q->null_a ? NULL : x->a, q->at,
                       q->lda, q->null_b ? NULL : x->b, q->bt, q->ldb, beta,
                       q->null_c ? NULL : x->c, q->ct, q->ldc, q->math);
}

/* The call must fail with `want`, leave a message and C bytewise untouched,
 * with beta 0 and beta 0.5 (no zeroing or scaling pass may run first). */
static void expect_fail(const call *q, vx_status want, const char *why)
{
    static bufs x;
    char d[400];
    describe(q, d, sizeof d);
    for (int bi = 0; bi < 2; bi++) {
        fill(&x);
        vx_status s = do_call(q, &x, bi ? 0.5f : 0.0f);
        cr_assert_eq(s, want, "%s (%s, beta=%g): returned %s (%d, \"%s\"), expected %s", d, why,
                     bi ? 0.5 : 0.0, vx_status_string(s), (int)s, s ? vx_last_error() : "",
                     vx_status_string(want));
        const char *msg = vx_last_error();
        cr_assert(msg != NULL && msg[0] != '\0', "%s (%s): vx_last_error() is empty", d, why);
        int64_t bad = vt_check_sentinel(x.c, CBUF);
        cr_assert(bad < 0, "%s (%s): C written at float offset %lld although the call failed", d,
                  why, (long long)bad);
    }
}

static void expect_ok(const call *q, const char *why)
{
    static bufs x;
    char d[400];
    describe(q, d, sizeof d);
    fill(&x);
    vx_status s = do_call(q, &x, 0.0f);
    cr_assert_eq(s, VX_OK, "%s (%s): returned %s (\"%s\"), expected VX_OK", d, why,
                 vx_status_string(s), vx_last_error());
}

/* The first failure in a fresh process leaves a message (so the message
 * seen is this call's, not an earlier one's). */
Test(host_types, first_failure_sets_message)
{
    cr_assert_str_empty(vx_last_error(), "vx_last_error() not empty before any call");
    call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 7, 3);
    q.at = q.bt = VX_F16;
    expect_fail(&q, VX_ERR_UNSUPPORTED, "f16 operands on the host");
}

/* Only F32 x F32 -> F32 runs on the CPU; every other valid type
 * combination (and every mixed one) is VX_ERR_UNSUPPORTED. */
Test(host_types, non_f32_unsupported)
{
    static const vx_dtype ts[] = {VX_F32, VX_F16, VX_BF16};
    int tested = 0;
    for (int combo = 0; combo < 8; combo++)
        for (int ai = 0; ai < 3; ai++)
            for (int bi = 0; bi < 3; bi++)
                for (int ci = 0; ci < 3; ci++) {
                    if (ai == 0 && bi == 0 && ci == 0)
                        continue;
                    vx_layout l;
                    vx_transpose ta, tb;
                    vt_combo(combo, &l, &ta, &tb);
                    call q = valid_call(l, ta, tb, 5, 7, 3);
                    q.at = ts[ai];
                    q.bt = ts[bi];
                    q.ct = ts[ci];
                    q.math = (combo + ci) % 2 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
                    char why[96];
                    snprintf(why, sizeof why, "%s x %s -> %s on the host", vtx_dtype_name(ts[ai]),
                             vtx_dtype_name(ts[bi]), vtx_dtype_name(ts[ci]));
                    expect_fail(&q, VX_ERR_UNSUPPORTED, why);
                    tested++;
                }
    cr_assert_eq(tested, 8 * 26);
}

Test(host_args, bad_dtype_and_math_enums)
{
    static const int bad_types[] = {3, -1, 99, 0x7FFFFFFF};
    static const int bad_math[] = {2, -1, 99};
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        for (int i = 0; i < 4; i++) {
            call q = valid_call(l, ta, tb, 5, 7, 3);
            q.at = (vx_dtype)bad_types[i];
            expect_fail(&q, VX_ERR_INVALID_ARG, "bad a_type");
            q = valid_call(l, ta, tb, 5, 7, 3);
            q.bt = (vx_dtype)bad_types[i];
            expect_fail(&q, VX_ERR_INVALID_ARG, "bad b_type");
            q = valid_call(l, ta, tb, 5, 7, 3);
            q.ct = (vx_dtype)bad_types[i];
            expect_fail(&q, VX_ERR_INVALID_ARG, "bad c_type");
            /* a bad enum is a bad argument even beside types the host lacks */
            q.at = q.bt = VX_F16;
            expect_fail(&q, VX_ERR_INVALID_ARG, "bad c_type with f16 operands");
            q = valid_call(l, ta, tb, 5, 7, 3);
            q.at = q.bt = q.ct = (vx_dtype)bad_types[i];
            expect_fail(&q, VX_ERR_INVALID_ARG, "all three types bad");
        }
        for (int i = 0; i < 3; i++) {
            call q = valid_call(l, ta, tb, 5, 7, 3);
            q.math = (vx_math_mode)bad_math[i];
            expect_fail(&q, VX_ERR_INVALID_ARG, "bad math mode");
        }
    }
    static const int bad_layouts[] = {0, 100, 103, -1};
    static const int bad_trans[] = {0, 110, 113, -1};
    for (int i = 0; i < 4; i++) {
        call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 7, 3);
        q.l = (vx_layout)bad_layouts[i];
        expect_fail(&q, VX_ERR_INVALID_ARG, "bad layout");
        q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_TRANS, 5, 7, 3);
        q.ta = (vx_transpose)bad_trans[i];
        expect_fail(&q, VX_ERR_INVALID_ARG, "bad transa");
        q = valid_call(VX_ROW_MAJOR, VX_TRANS, VX_NO_TRANS, 5, 7, 3);
        q.tb = (vx_transpose)bad_trans[i];
        expect_fail(&q, VX_ERR_INVALID_ARG, "bad transb");
    }
}

Test(host_args, negative_sizes)
{
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        call q = valid_call(l, ta, tb, 5, 7, 3);
        q.m = -1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "m < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.n = -1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "n < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.k = -1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "k < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.m = INT64_MIN;
        expect_fail(&q, VX_ERR_INVALID_ARG, "m = INT64_MIN");
        q = valid_call(l, ta, tb, 0, 7, 3);
        q.k = -2;
        expect_fail(&q, VX_ERR_INVALID_ARG, "k < 0 with m = 0");
    }
}

Test(host_args, leading_dimensions)
{
    static const int64_t shapes[][3] = {{5, 7, 3}, {7, 3, 5}, {3, 5, 7}, {4, 4, 0}, {1, 6, 9}};
    for (int s = 0; s < 5; s++)
        for (int combo = 0; combo < 8; combo++) {
            vx_layout l;
            vx_transpose ta, tb;
            vt_combo(combo, &l, &ta, &tb);
            call ok = valid_call(l, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2]);
            expect_ok(&ok, "minimum leading dimensions");
            ok.math = VX_MATH_TF32;
            expect_ok(&ok, "minimum leading dimensions, tf32");
            ok.math = VX_MATH_DEFAULT;
            call q = ok;
            q.lda = ok.lda - 1;
            expect_fail(&q, VX_ERR_INVALID_ARG, "lda one too small");
            q.lda = -ok.lda;
            expect_fail(&q, VX_ERR_INVALID_ARG, "lda negative");
            q = ok;
            q.ldb = ok.ldb - 1;
            expect_fail(&q, VX_ERR_INVALID_ARG, "ldb one too small");
            q = ok;
            q.ldc = ok.ldc - 1;
            expect_fail(&q, VX_ERR_INVALID_ARG, "ldc one too small");
            q.ldc = -1;
            expect_fail(&q, VX_ERR_INVALID_ARG, "ldc negative");
        }
}

Test(host_args, null_pointers)
{
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        call q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_a = 1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "a == NULL");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_b = 1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "b == NULL");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_c = 1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "c == NULL");
        q = valid_call(l, ta, tb, 5, 7, 0);
        q.null_c = 1;
        expect_fail(&q, VX_ERR_INVALID_ARG, "c == NULL with k = 0");
    }
    /* operands without elements may be NULL (as in dyn_gemm) */
    call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 7, 0);
    q.null_a = q.null_b = 1;
    expect_ok(&q, "k = 0: A and B have no elements");
    q = valid_call(VX_COL_MAJOR, VX_TRANS, VX_NO_TRANS, 0, 7, 3);
    q.null_a = q.null_c = 1;
    expect_ok(&q, "m = 0: A and C have no elements");
}

Test(host_args, overflow)
{
    const int64_t T40 = (int64_t)1 << 40, T33 = (int64_t)1 << 33, T31 = (int64_t)1 << 31;
    call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T40, T40, 1);
    expect_fail(&q, VX_ERR_INVALID_ARG, "m*n overflows int64");
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, T40, T40);
    expect_fail(&q, VX_ERR_INVALID_ARG, "k*n overflows int64");
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T33, 1, 1);
    q.lda = T31;
    expect_fail(&q, VX_ERR_INVALID_ARG, "lda*(m-1)+k overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, T33, 1);
    q.ldc = T31;
    expect_fail(&q, VX_ERR_INVALID_ARG, "ldc*(n-1)+m overflows int64");
}

/* ---- the CUDA entry points without a GPU ---- */

Test(cuda_api, set_stream_null)
{
    vx_status s = vx_cuda_set_stream(NULL);
    if (vx_cuda_instance_count() == 0) {
        cr_assert_eq(s, VX_ERR_UNSUPPORTED,
                     "vx_cuda_set_stream(NULL) in a build without CUDA returned %s, expected "
                     "VX_ERR_UNSUPPORTED", vx_status_string(s));
        cr_assert(vx_last_error()[0] != '\0', "no message after vx_cuda_set_stream failed");
    } else {
        cr_assert_eq(s, VX_OK, "vx_cuda_set_stream(NULL) with %d kernel instances returned %s "
                     "(\"%s\")", vx_cuda_instance_count(), vx_status_string(s), vx_last_error());
    }
}

Test(cuda_api, device_count)
{
    int n = vx_cuda_device_count();
    cr_assert(n >= 0, "vx_cuda_device_count() = %d", n);
    if (vx_cuda_instance_count() == 0)
        cr_assert_eq(n, 0, "vx_cuda_device_count() = %d in a build without CUDA kernels", n);
    cr_assert_eq(vx_cuda_device_count(), n, "vx_cuda_device_count() changed between calls");
    /* the backend's view agrees */
    cr_assert_eq(vx_cuda_available(), n > 0, "vx_cuda_available() = %d but %d devices",
                 vx_cuda_available(), n);
}

/* With no device (or no CUDA), host memory still runs on the CPU whatever
 * the math mode, and the instance table is consistent. */
Test(cuda_api, instance_table_consistent)
{
    int n = vx_cuda_instance_count();
    cr_assert(n >= 0);
    for (int i = 0; i < n; i++) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        cr_assert(in != NULL && in->name != NULL && in->name[0] != '\0', "instance %d", i);
        cr_assert(in->bm > 0 && in->bn > 0 && in->bk > 0 && in->threads > 0,
                  "instance %d (%s): bm %d bn %d bk %d threads %d", i, in->name, in->bm, in->bn,
                  in->bk, in->threads);
        cr_assert(in->unit == VX_UNIT_TENSOR || in->unit == VX_UNIT_SIMT, "instance %d (%s): unit %d",
                  i, in->name, in->unit);
        cr_assert(in->ab_type == VX_F32 || in->ab_type == VX_F16 || in->ab_type == VX_BF16,
                  "instance %d (%s): ab_type %d", i, in->name, (int)in->ab_type);
        cr_assert(!in->tf32 || (in->ab_type == VX_F32 && in->unit == VX_UNIT_TENSOR),
                  "instance %d (%s): tf32 with ab_type %d unit %d", i, in->name, (int)in->ab_type,
                  in->unit);
        for (int j = 0; j < i; j++)
            cr_assert(strcmp(vx_cuda_instance_get(j)->name, in->name) != 0, "instances %d and %d are both %s", j,
                      i, in->name);
        if (!in->cluster)
            continue;
        /* A cluster entry launches its base entry's kernel as clusters: the
         * same geometry under the name without "_cl", Tensor Cores, and the
         * partial tile (bm x (bn + 4) floats) inside its shared memory. */
        const size_t len = strlen(in->name);
        cr_assert(len > 3 && strcmp(in->name + len - 3, "_cl") == 0, "cluster entry %d is named %s", i, in->name);
        cr_assert(in->unit == VX_UNIT_TENSOR, "cluster entry %s is not a Tensor Core kernel", in->name);
        cr_assert((long long)in->bm * (in->bn + 4) * 4 <= in->smem_bytes,
                  "cluster entry %s: a %dx%d partial tile does not fit its %d bytes of shared memory", in->name,
                  in->bm, in->bn, in->smem_bytes);
        int base = -1;
        for (int j = 0; j < n; j++) {
            const vx_cuda_instance *b = vx_cuda_instance_get(j);
            if (!b->cluster && strlen(b->name) == len - 3 && strncmp(b->name, in->name, len - 3) == 0)
                base = j;
        }
        cr_assert(base >= 0, "cluster entry %s has no base entry", in->name);
        const vx_cuda_instance *b = vx_cuda_instance_get(base);
        cr_assert(b->bm == in->bm && b->bn == in->bn && b->bk == in->bk && b->stages == in->stages &&
                      b->threads == in->threads && b->smem_bytes == in->smem_bytes && b->ab_type == in->ab_type &&
                      b->tf32 == in->tf32 && b->a_kcontig == in->a_kcontig && b->b_kcontig == in->b_kcontig,
                  "cluster entry %s differs from its base entry %s", in->name, b->name);
    }
    vtx_case c = vtx_case_make(33, 17, 65);
    c.math = VX_MATH_TF32;
    vtx_check(H, &c);
}
