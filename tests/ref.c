#include "ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PRNG ---- */

void vt_rng_seed(vt_rng *r, uint64_t seed) { r->s = seed ^ 0x9E3779B97F4A7C15ull; }

uint64_t vt_rng_next(vt_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float vt_rng_float(vt_rng *r)
{
    for (;;) {
        /* 24 random bits -> k / 2^23 - 1 in [-1, 1), exactly representable */
        int32_t v = (int32_t)(vt_rng_next(r) >> 40);
        float f = (float)v * (1.0f / 8388608.0f) - 1.0f;
        if (f != 0.0f)
            return f;
    }
}

/* ---- storage ---- */

int64_t vt_min_ld(vx_layout layout, int64_t rows, int64_t cols)
{
    int64_t inner = layout == VX_ROW_MAJOR ? cols : rows;
    return inner > 1 ? inner : 1;
}

int64_t vt_extent(vx_layout layout, int64_t rows, int64_t cols, int64_t ld)
{
    int64_t outer = layout == VX_ROW_MAJOR ? rows : cols;
    int64_t inner = layout == VX_ROW_MAJOR ? cols : rows;
    if (outer <= 0 || inner <= 0)
        return 0;
    return ld * (outer - 1) + inner;
}

int64_t vt_index(vx_layout layout, int64_t i, int64_t j, int64_t ld)
{
    return layout == VX_ROW_MAJOR ? i * ld + j : j * ld + i;
}

void vt_a_dims(vx_transpose ta, int64_t m, int64_t k, int64_t *rows, int64_t *cols)
{
    *rows = ta == VX_NO_TRANS ? m : k;
    *cols = ta == VX_NO_TRANS ? k : m;
}

void vt_b_dims(vx_transpose tb, int64_t k, int64_t n, int64_t *rows, int64_t *cols)
{
    *rows = tb == VX_NO_TRANS ? k : n;
    *cols = tb == VX_NO_TRANS ? n : k;
}

/* ---- sentinels ---- */

float vt_sentinel(int64_t pos)
{
    uint32_t h = (uint32_t)pos * 2654435761u;
    uint32_t bits = 0x7FC00000u | ((h >> 9) & 0x3FFFFFu) | 1u; /* quiet NaN, payload != 0 */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void vt_fill_sentinel(float *p, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        p[i] = vt_sentinel(i);
}

int64_t vt_check_sentinel(const float *p, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        float s = vt_sentinel(i);
        if (memcmp(&p[i], &s, sizeof s) != 0)
            return i;
    }
    return -1;
}

/* ---- names ---- */

const char *vt_layout_name(vx_layout l)
{
    return l == VX_ROW_MAJOR ? "row" : l == VX_COL_MAJOR ? "col" : "bad-layout";
}

const char *vt_trans_name(vx_transpose t)
{
    return t == VX_NO_TRANS ? "N" : t == VX_TRANS ? "T" : "?";
}

void vt_combo(int idx, vx_layout *l, vx_transpose *ta, vx_transpose *tb)
{
    idx &= 7;
    *l = (idx & 4) ? VX_COL_MAJOR : VX_ROW_MAJOR;
    *ta = (idx & 2) ? VX_TRANS : VX_NO_TRANS;
    *tb = (idx & 1) ? VX_TRANS : VX_NO_TRANS;
}

vt_case vt_case_make(int64_t m, int64_t n, int64_t k)
{
    vt_case c;
    memset(&c, 0, sizeof c);
    c.layout = VX_ROW_MAJOR;
    c.ta = VX_NO_TRANS;
    c.tb = VX_NO_TRANS;
    c.m = m;
    c.n = n;
    c.k = k;
    c.alpha = 1.0f;
    c.beta = 0.0f;
    c.cinit = VT_C_RANDOM;
    c.seed = (uint64_t)(m * 1000003 + n * 1009 + k * 7 + 1);
    return c;
}

void vt_min_lds(vx_layout l, vx_transpose ta, vx_transpose tb, int64_t m, int64_t n, int64_t k,
                int64_t *lda, int64_t *ldb, int64_t *ldc)
{
    int64_t r, c;
    vt_a_dims(ta, m, k, &r, &c);
    *lda = vt_min_ld(l, r, c);
    vt_b_dims(tb, k, n, &r, &c);
    *ldb = vt_min_ld(l, r, c);
    *ldc = vt_min_ld(l, m, n);
}

static void case_lds(const vt_case *c, int64_t *lda, int64_t *ldb, int64_t *ldc)
{
    vt_min_lds(c->layout, c->ta, c->tb, c->m, c->n, c->k, lda, ldb, ldc);
    *lda += c->lda_pad;
    *ldb += c->ldb_pad;
    *ldc += c->ldc_pad;
}

void vt_describe(const vt_case *c, char *buf, size_t len)
{
    int64_t lda, ldb, ldc;
    case_lds(c, &lda, &ldb, &ldc);
    snprintf(buf, len,
             "dyn_gemm(%s-major, A=%s, B=%s, m=%lld, n=%lld, k=%lld, alpha=%g, lda=%lld, "
             "ldb=%lld, beta=%g, ldc=%lld) C0=%s seed=%llu%s%s",
             vt_layout_name(c->layout), vt_trans_name(c->ta), vt_trans_name(c->tb),
             (long long)c->m, (long long)c->n, (long long)c->k, (double)c->alpha,
             (long long)lda, (long long)ldb, (double)c->beta, (long long)ldc,
             c->cinit == VT_C_NAN ? "NaN/Inf" : "random", (unsigned long long)c->seed,
             c->tag ? " | " : "", c->tag ? c->tag : "");
}

/* ---- reference ---- */

void vt_ref_gemm(vx_layout layout, vx_transpose ta, vx_transpose tb,
                 int64_t m, int64_t n, int64_t k, double alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb,
                 double beta, const float *c0, int64_t ldc, double *cref)
{
    if (m <= 0 || n <= 0)
        return;
    /* op(A) as dense m x k and op(B) as dense k x n, in double */
    double *oa = malloc(sizeof(double) * (size_t)(m * (k > 0 ? k : 1)));
    double *ob = malloc(sizeof(double) * (size_t)((k > 0 ? k : 1) * n));
    double *acc = malloc(sizeof(double) * (size_t)n);
    if (!oa || !ob || !acc)
        abort();
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            /* op(A)[i][p] = A[i][p] or A[p][i] */
            int64_t r = ta == VX_NO_TRANS ? i : p, s = ta == VX_NO_TRANS ? p : i;
            oa[i * k + p] = a[vt_index(layout, r, s, lda)];
        }
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++) {
            int64_t r = tb == VX_NO_TRANS ? p : j, s = tb == VX_NO_TRANS ? j : p;
            ob[p * n + j] = b[vt_index(layout, r, s, ldb)];
        }
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++)
            acc[j] = 0.0;
        for (int64_t p = 0; p < k; p++) {
            double av = oa[i * k + p];
            const double *brow = ob + p * n;
            for (int64_t j = 0; j < n; j++)
                acc[j] += av * brow[j];
        }
        for (int64_t j = 0; j < n; j++) {
            double v = alpha * acc[j];
            if (beta != 0.0)
                v += beta * (double)c0[vt_index(layout, i, j, ldc)];
            cref[i * n + j] = v;
        }
    }
    free(oa);
    free(ob);
    free(acc);
}

double vt_rel_err(const float *c, int64_t c_rs, int64_t c_cs, const double *ref,
                  int64_t m, int64_t n)
{
    double num = 0.0, den = 0.0;
    int nonfinite = 0, nonzero = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float v = c[i * c_rs + j * c_cs];
            double r = ref[i * n + j];
            if (!isfinite(v))
                nonfinite = 1;
            if (v != 0.0f)
                nonzero = 1;
            double d = (double)v - r;
            num += d * d;
            den += r * r;
        }
    if (nonfinite)
        return INFINITY;
    if (den == 0.0)
        return nonzero ? INFINITY : 0.0;
    return sqrt(num) / sqrt(den);
}

/* ---- one checked call ---- */

static float *alloc_floats(int64_t count)
{
    float *p = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (!p)
        abort();
    return p;
}

/* Fill an operand: NaN everywhere (ld padding), random on the logical part. */
static void fill_operand(float *p, int64_t ext, vx_layout layout, int64_t rows, int64_t cols,
                         int64_t ld, vt_rng *rng)
{
    for (int64_t i = 0; i < ext; i++)
        p[i] = NAN;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            p[vt_index(layout, i, j, ld)] = vt_rng_float(rng);
}

#define VT_GUARD 37

int vt_run(const vt_case *c, vt_result *r)
{
    char desc[512];
    int64_t lda, ldb, ldc, ar, ac, br, bc;
    vt_describe(c, desc, sizeof desc);
    memset(r, 0, sizeof *r);
    r->ok = 0;
    if (c->cinit == VT_C_NAN && c->beta != 0.0f) {
        snprintf(r->msg, sizeof r->msg, "test bug: NaN C with beta != 0: %s", desc);
        return 0;
    }
    case_lds(c, &lda, &ldb, &ldc);
    vt_a_dims(c->ta, c->m, c->k, &ar, &ac);
    vt_b_dims(c->tb, c->k, c->n, &br, &bc);
    int64_t ea = vt_extent(c->layout, ar, ac, lda);
    int64_t eb = vt_extent(c->layout, br, bc, ldb);
    int64_t couter = c->layout == VX_ROW_MAJOR ? c->m : c->n;
    int64_t ec = ldc * couter + VT_GUARD;   /* full last row/column of padding + guard */

    vt_rng rng;
    vt_rng_seed(&rng, c->seed);
    float *a = alloc_floats(ea), *b = alloc_floats(eb);
    float *cc = c->c_on_line ? aligned_alloc(64, sizeof(float) * (size_t)((ec + 15) / 16 * 16)) : alloc_floats(ec);
    if (!cc)
        abort();
    float *a0 = alloc_floats(ea), *b0 = alloc_floats(eb), *c0 = alloc_floats(ec);
    fill_operand(a, ea, c->layout, ar, ac, lda, &rng);
    fill_operand(b, eb, c->layout, br, bc, ldb, &rng);
    vt_fill_sentinel(cc, ec);
    static const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++)
            cc[vt_index(c->layout, i, j, ldc)] =
                c->cinit == VT_C_NAN ? specials[(i + j) % 3] : vt_rng_float(&rng);
    memcpy(a0, a, sizeof(float) * (size_t)(ea > 0 ? ea : 1));
    memcpy(b0, b, sizeof(float) * (size_t)(eb > 0 ? eb : 1));
    memcpy(c0, cc, sizeof(float) * (size_t)ec);

    vx_status st = dyn_gemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, c->alpha, a, lda, b,
                            ldb, c->beta, cc, ldc);
    r->status = st;
    if (st != VX_OK) {
        snprintf(r->msg, sizeof r->msg, "returned %s (\"%s\"), expected VX_OK: %s",
                 vx_status_string(st), vx_last_error(), desc);
        goto out;
    }
    if (ea > 0 && memcmp(a, a0, sizeof(float) * (size_t)ea) != 0) {
        snprintf(r->msg, sizeof r->msg, "A was modified: %s", desc);
        goto out;
    }
    if (eb > 0 && memcmp(b, b0, sizeof(float) * (size_t)eb) != 0) {
        snprintf(r->msg, sizeof r->msg, "B was modified: %s", desc);
        goto out;
    }
    /* every float outside the logical m x n part must be bytewise unchanged */
    {
        int64_t cinner = c->layout == VX_ROW_MAJOR ? c->n : c->m;
        for (int64_t pos = 0; pos < ec; pos++) {
            int64_t o = pos / ldc, in = pos % ldc;
            int logical = o < couter && in < cinner;
            if (!logical && memcmp(&cc[pos], &c0[pos], sizeof(float)) != 0) {
                snprintf(r->msg, sizeof r->msg,
                         "C padding/guard at float offset %lld (outer %lld, inner %lld) was "
                         "written (%g): %s",
                         (long long)pos, (long long)o, (long long)in, (double)cc[pos], desc);
                goto out;
            }
        }
    }
    if (c->m > 0 && c->n > 0) {
        double *ref = malloc(sizeof(double) * (size_t)(c->m * c->n));
        if (!ref)
            abort();
        vt_ref_gemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, (double)c->alpha, a, lda, b, ldb,
                    (double)c->beta, c0, ldc, ref);
        int64_t rs = c->layout == VX_ROW_MAJOR ? ldc : 1;
        int64_t cs = c->layout == VX_ROW_MAJOR ? 1 : ldc;
        double err = vt_rel_err(cc, rs, cs, ref, c->m, c->n);
        r->rel_err = err;
        if (!(err <= VT_TOL)) {
            /* locate the worst element for the message */
            int64_t wi = 0, wj = 0;
            double worst = -1.0;
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t j = 0; j < c->n; j++) {
                    double d = fabs((double)cc[i * rs + j * cs] - ref[i * c->n + j]);
                    if (isnan(d))
                        d = INFINITY;
                    if (d > worst) {
                        worst = d;
                        wi = i;
                        wj = j;
                    }
                }
            snprintf(r->msg, sizeof r->msg,
                     "relative Frobenius error %.3g > %g (worst C[%lld][%lld] = %.8g, ref "
                     "%.8g): %s",
                     err, VT_TOL, (long long)wi, (long long)wj, (double)cc[wi * rs + wj * cs],
                     ref[wi * c->n + wj], desc);
            free(ref);
            goto out;
        }
        free(ref);
    }
    r->ok = 1;
out:
    free(a);
    free(b);
    free(cc);
    free(a0);
    free(b0);
    free(c0);
    return r->ok;
}

void vt_check(const vt_case *c)
{
    vt_result r;
    vt_run(c, &r);
    cr_assert(r.ok, "%s", r.msg);
}
