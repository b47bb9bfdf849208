#include "ref_ex.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- element types ---- */

size_t vtx_size(vx_dtype t) { return t == VX_F32 ? 4 : 2; }

const char *vtx_dtype_name(vx_dtype t)
{
    return t == VX_F32 ? "f32" : t == VX_F16 ? "f16" : t == VX_BF16 ? "bf16" : "bad-dtype";
}

const char *vtx_math_name(vx_math_mode m)
{
    return m == VX_MATH_DEFAULT ? "default" : m == VX_MATH_TF32 ? "tf32" : "bad-math";
}

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

uint16_t vtx_f32_to_f16(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)                       /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    if (ax >= 0x477FF000u)                      /* >= 65520 rounds to Inf (and Inf itself) */
        return (uint16_t)(sign | 0x7C00u);
    if (ax >= 0x38800000u) {                    /* normal half: >= 2^-14 */
        uint32_t r = ax + 0xFFFu + ((ax >> 13) & 1u);   /* round to nearest even on bit 13 */
        return (uint16_t)(sign | ((r >> 13) - (112u << 10)));
    }
    /* subnormal half (or zero): units of 2^-24, rintf rounds ties to even in
     * the default rounding mode; 1024 becomes the smallest normal. The
     * scaling by 2^24 is exact. */
    float units = rintf(fabsf(f) * 16777216.0f);
    return (uint16_t)(sign | (uint16_t)units);
}

float vtx_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (e == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_f32(sign | 0x7F800000u | (man << 13));
    return bits_f32(sign | ((e + 112u) << 23) | (man << 13));
}

uint16_t vtx_f32_to_bf16(float f)
{
    const uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);   /* quiet NaN */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float vtx_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

float vtx_round(float f, vx_dtype t)
{
    if (t == VX_F16)
        return vtx_f16_to_f32(vtx_f32_to_f16(f));
    if (t == VX_BF16)
        return vtx_bf16_to_f32(vtx_f32_to_bf16(f));
    return f;
}

float vtx_load(const void *buf, vx_dtype t, int64_t idx)
{
    if (t == VX_F32)
        return ((const float *)buf)[idx];
    uint16_t h = ((const uint16_t *)buf)[idx];
    return t == VX_F16 ? vtx_f16_to_f32(h) : vtx_bf16_to_f32(h);
}

void vtx_store(void *buf, vx_dtype t, int64_t idx, float v)
{
    if (t == VX_F32)
        ((float *)buf)[idx] = v;
    else
        ((uint16_t *)buf)[idx] = t == VX_F16 ? vtx_f32_to_f16(v) : vtx_f32_to_bf16(v);
}

void vtx_to_f32(const void *buf, vx_dtype t, int64_t count, float *out)
{
    for (int64_t i = 0; i < count; i++)
        out[i] = vtx_load(buf, t, i);
}

/* ---- host memory ---- */

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        abort();
    return p;
}
static void host_release(void *p) { free(p); }
static void host_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void host_sync(void) {}

const vtx_mem vtx_host_mem = {"host", 0, host_alloc, host_release, host_copy, host_copy, host_sync};

/* ---- one checked call ---- */

const char *vtx_current = NULL;

vtx_case vtx_case_make(int64_t m, int64_t n, int64_t k)
{
    vtx_case c;
    memset(&c, 0, sizeof c);
    c.layout = VX_ROW_MAJOR;
    c.ta = VX_NO_TRANS;
    c.tb = VX_NO_TRANS;
    c.m = m;
    c.n = n;
    c.k = k;
    c.alpha = 1.0f;
    c.beta = 0.0f;
    c.ab_type = VX_F32;
    c.c_type = VX_F32;
    c.math = VX_MATH_DEFAULT;
    c.tol = 1e-5;
    c.seed = (uint64_t)(m * 1000003 + n * 1009 + k * 7 + 1);
    return c;
}

void vtx_case_lds(const vtx_case *c, int64_t *lda, int64_t *ldb, int64_t *ldc)
{
    vt_min_lds(c->layout, c->ta, c->tb, c->m, c->n, c->k, lda, ldb, ldc);
    *lda += c->lda_pad;
    *ldb += c->ldb_pad;
    *ldc += c->ldc_pad;
}

void vtx_describe(const vtx_case *c, char *buf, size_t len)
{
    int64_t lda, ldb, ldc;
    vtx_case_lds(c, &lda, &ldb, &ldc);
    snprintf(buf, len,
             "dyn_gemm_ex(%s-major, A=%s, B=%s, m=%lld, n=%lld, k=%lld, alpha=%g, lda=%lld, "
             "ldb=%lld, beta=%g, ldc=%lld, %s x %s -> %s, math=%s) C0=%s seed=%llu%s%s",
             vt_layout_name(c->layout), vt_trans_name(c->ta), vt_trans_name(c->tb),
             (long long)c->m, (long long)c->n, (long long)c->k, (double)c->alpha, (long long)lda,
             (long long)ldb, (double)c->beta, (long long)ldc, vtx_dtype_name(c->ab_type),
             vtx_dtype_name(c->ab_type), vtx_dtype_name(c->c_type), vtx_math_name(c->math),
             c->c_nan ? "NaN/Inf" : "random", (unsigned long long)c->seed, c->tag ? " | " : "",
             c->tag ? c->tag : "");
    if (c->a_off | c->b_off | c->c_off) {
        size_t used = strlen(buf);
        if (used + 1 < len)
            snprintf(buf + used, len - used, " pointers at allocation + (a %lld, b %lld, c %lld) elements", (long long)c->a_off,
                     (long long)c->b_off, (long long)c->c_off);
    }
}

#define VTX_GUARD 37

/* Typed operand: NaN everywhere (prefix and ld padding), random rounded
 * values on the logical part. */
static void fill_operand(void *p, vx_dtype t, int64_t total, int64_t off, vx_layout layout,
                         int64_t rows, int64_t cols, int64_t ld, vt_rng *rng)
{
    for (int64_t i = 0; i < total; i++)
        vtx_store(p, t, i, NAN);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            vtx_store(p, t, off + vt_index(layout, i, j, ld), vt_rng_float(rng));
}

int vtx_run(const vtx_mem *mem, const vtx_case *c, vtx_result *r)
{
    char desc[640];
    int64_t lda, ldb, ldc, ar, ac, br, bc;
    vtx_describe(c, desc, sizeof desc);
    memset(r, 0, sizeof *r);
    if (c->c_nan && c->beta != 0.0f) {
        snprintf(r->msg, sizeof r->msg, "test bug: NaN C with beta != 0: %s", desc);
        return 0;
    }
    vtx_case_lds(c, &lda, &ldb, &ldc);
    vt_a_dims(c->ta, c->m, c->k, &ar, &ac);
    vt_b_dims(c->tb, c->k, c->n, &br, &bc);
    const size_t sab = vtx_size(c->ab_type), sc = vtx_size(c->c_type);
    /* element counts of the allocations: offset + exact extent (at least 1) */
    int64_t ea = c->a_off + vt_extent(c->layout, ar, ac, lda);
    int64_t eb = c->b_off + vt_extent(c->layout, br, bc, ldb);
    const int64_t couter = c->layout == VX_ROW_MAJOR ? c->m : c->n;
    const int64_t cinner = c->layout == VX_ROW_MAJOR ? c->n : c->m;
    const int64_t ec = c->c_off + ldc * couter + VTX_GUARD;
    if (ea < 1)
        ea = 1;
    if (eb < 1)
        eb = 1;
    const size_t ba = (size_t)ea * sab, bb = (size_t)eb * sab, bcb = (size_t)ec * sc;

    vt_rng rng;
    vt_rng_seed(&rng, c->seed);
    unsigned char *a = malloc(ba), *b = malloc(bb), *cc = malloc(bcb);
    unsigned char *a1 = malloc(ba), *b1 = malloc(bb), *c1 = malloc(bcb);
    float *af = malloc(sizeof(float) * (size_t)ea), *bf = malloc(sizeof(float) * (size_t)eb);
    float *c0f = malloc(sizeof(float) * (size_t)ec), *c1f = malloc(sizeof(float) * (size_t)ec);
    double *ref = malloc(sizeof(double) * (size_t)(c->m > 0 && c->n > 0 ? c->m * c->n : 1));
    if (!a || !b || !cc || !a1 || !b1 || !c1 || !af || !bf || !c0f || !c1f || !ref)
        abort();
    fill_operand(a, c->ab_type, ea, c->a_off, c->layout, ar, ac, lda, &rng);
    fill_operand(b, c->ab_type, eb, c->b_off, c->layout, br, bc, ldb, &rng);
    for (size_t i = 0; i < bcb; i++)   /* padding/guard: a position-dependent pattern */
        cc[i] = (unsigned char)(0xA5u ^ (unsigned)(i * 131u) ^ (unsigned)(i >> 8));
    static const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++)
            vtx_store(cc, c->c_type, c->c_off + vt_index(c->layout, i, j, ldc),
                      c->c_nan ? specials[(i + j) % 3] : vt_rng_float(&rng));
    vtx_to_f32(a, c->ab_type, ea, af);
    vtx_to_f32(b, c->ab_type, eb, bf);
    vtx_to_f32(cc, c->c_type, ec, c0f);

    vtx_current = desc;
    void *da = mem->alloc(ba), *db = mem->alloc(bb), *dc = mem->alloc(bcb);
    mem->upload(da, a, ba);
    mem->upload(db, b, bb);
    mem->upload(dc, cc, bcb);
    vx_status st = dyn_gemm_ex(c->layout, c->ta, c->tb, c->m, c->n, c->k, c->alpha,
                               (const unsigned char *)da + (size_t)c->a_off * sab, c->ab_type, lda,
                               (const unsigned char *)db + (size_t)c->b_off * sab, c->ab_type, ldb,
                               c->beta, (unsigned char *)dc + (size_t)c->c_off * sc, c->c_type, ldc,
                               c->math);
    r->status = st;
    mem->sync();
    mem->download(a1, da, ba);
    mem->download(b1, db, bb);
    mem->download(c1, dc, bcb);
    mem->release(da);
    mem->release(db);
    mem->release(dc);
    vtx_current = NULL;

    if (st != VX_OK) {
        snprintf(r->msg, sizeof r->msg, "returned %s (\"%s\"), expected VX_OK: %s",
                 vx_status_string(st), vx_last_error(), desc);
        goto out;
    }
    if (memcmp(a, a1, ba) != 0) {
        snprintf(r->msg, sizeof r->msg, "A was modified: %s", desc);
        goto out;
    }
    if (memcmp(b, b1, bb) != 0) {
        snprintf(r->msg, sizeof r->msg, "B was modified: %s", desc);
        goto out;
    }
    for (int64_t pos = 0; pos < ec; pos++) {
        int64_t rel = pos - c->c_off, o = rel >= 0 ? rel / ldc : -1, in = rel >= 0 ? rel % ldc : -1;
        int logical = rel >= 0 && o < couter && in < cinner;
        if (!logical && memcmp(cc + (size_t)pos * sc, c1 + (size_t)pos * sc, sc) != 0) {
            snprintf(r->msg, sizeof r->msg,
                     "C outside the logical matrix was written at element offset %lld from the "
                     "C pointer (outer %lld, inner %lld; ldc padding, guard or the bytes before "
                     "C): %s",
                     (long long)rel, (long long)o, (long long)in, desc);
            goto out;
        }
    }
    if (c->m > 0 && c->n > 0) {
        vtx_to_f32(c1, c->c_type, ec, c1f);
        const float *cv = c1f + c->c_off;
        const int64_t rs = c->layout == VX_ROW_MAJOR ? ldc : 1;
        const int64_t cs = c->layout == VX_ROW_MAJOR ? 1 : ldc;
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++)
                if (!isfinite(cv[i * rs + j * cs])) {
                    snprintf(r->msg, sizeof r->msg,
                             "C[%lld][%lld] = %g is not finite (element not written, or a NaN/Inf "
                             "of C survived beta = %g): %s",
                             (long long)i, (long long)j, (double)cv[i * rs + j * cs],
                             (double)c->beta, desc);
                    r->rel_err = INFINITY;
                    goto out;
                }
        vt_ref_gemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, (double)c->alpha, af + c->a_off,
                    lda, bf + c->b_off, ldb, (double)c->beta, c0f + c->c_off, ldc, ref);
        double err = vt_rel_err(cv, rs, cs, ref, c->m, c->n);
        r->rel_err = err;
        const int reduced = (mem->gpu && c->math == VX_MATH_TF32) || c->ab_type != VX_F32 ||
                            c->c_type != VX_F32;
        double err_mag = -1.0;
        if (!(err <= c->tol) && reduced) {
            /* the larger of the two terms: ||alpha op(A) op(B)||_F, ||beta C0||_F */
            double *ab = malloc(sizeof(double) * (size_t)(c->m * c->n));
            if (!ab)
                abort();
            vt_ref_gemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, (double)c->alpha,
                        af + c->a_off, lda, bf + c->b_off, ldb, 0.0, NULL, ldc, ab);
            double num = 0.0, nab = 0.0, nc0 = 0.0, nref = 0.0;
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t j = 0; j < c->n; j++) {
                    double d = (double)cv[i * rs + j * cs] - ref[i * c->n + j];
                    double t = c->beta != 0.0f
                                   ? (double)c->beta *
                                         (double)c0f[c->c_off + vt_index(c->layout, i, j, ldc)]
                                   : 0.0;
                    num += d * d;
                    nab += ab[i * c->n + j] * ab[i * c->n + j];
                    nc0 += t * t;
                    nref += ref[i * c->n + j] * ref[i * c->n + j];
                }
            double den = nab > nc0 ? nab : nc0;
            den = den > nref ? den : nref;
            err_mag = den > 0.0 ? sqrt(num) / sqrt(den) : (num == 0.0 ? 0.0 : INFINITY);
            free(ab);
            if (err_mag <= c->tol)
                err = err_mag;
        }
        if (!(err <= c->tol)) {
            int64_t wi = 0, wj = 0;
            double worst = -1.0;
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t j = 0; j < c->n; j++) {
                    double d = fabs((double)cv[i * rs + j * cs] - ref[i * c->n + j]);
                    if (isnan(d))
                        d = INFINITY;
                    if (d > worst) {
                        worst = d;
                        wi = i;
                        wj = j;
                    }
                }
            char magtxt[96] = "";
            if (err_mag >= 0.0)
                snprintf(magtxt, sizeof magtxt, " (%.3g against max(||alpha AB||, ||beta C0||))",
                         err_mag);
            snprintf(r->msg, sizeof r->msg,
                     "relative Frobenius error %.3g%s > %g (worst C[%lld][%lld] = %.8g, ref %.8g): "
                     "%s",
                     err, magtxt, c->tol, (long long)wi, (long long)wj,
                     (double)cv[wi * rs + wj * cs], ref[wi * c->n + wj], desc);
            goto out;
        }
    }
    r->ok = 1;
out:
    free(a);
    free(b);
    free(cc);
    free(a1);
    free(b1);
    free(c1);
    free(af);
    free(bf);
    free(c0f);
    free(c1f);
    free(ref);
    return r->ok;
}

void vtx_check(const vtx_mem *mem, const vtx_case *c)
{
    vtx_result r;
    vtx_run(mem, c, &r);
    cr_assert(r.ok, "%s", r.msg);
}
