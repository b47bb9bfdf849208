#include "ref_conv.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRONT_GUARD 19   /* floats before the output (odd: the output is not 64-byte aligned) */
#define BACK_GUARD 37    /* floats after the output */

vt_conv_case vt_conv_make(vx_tensor_layout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t k, int64_t r, int64_t s)
{
    vt_conv_case x;
    memset(&x, 0, sizeof x);
    x.p.layout = layout;
    x.p.n = n;
    x.p.c = c;
    x.p.h = h;
    x.p.w = w;
    x.p.k = k;
    x.p.r = r;
    x.p.s = s;
    x.p.stride_h = x.p.stride_w = 1;
    x.p.pad_h = x.p.pad_w = 0;
    x.p.dilation_h = x.p.dilation_w = 1;
    x.p.groups = 1;
    x.p.activation = VX_ACT_NONE;
    x.bias = 0;
    x.seed = (uint64_t)(n * 1000003 + c * 100003 + h * 10007 + w * 1009 + k * 101 + r * 11 + s +
                        (layout == VX_NHWC ? 7777777 : 0));
    x.tag = NULL;
    return x;
}

static int dim_out(int64_t in, int64_t pad, int64_t dil, int64_t f, int64_t stride, int64_t *out)
{
    if (in < 1 || pad < 0 || dil < 1 || f < 1 || stride < 1)
        return 0;
    int64_t padded, span, num;
    /* (overflow: not a valid test case; only described in messages) */
    if (__builtin_mul_overflow(pad, (int64_t)2, &padded) ||
        __builtin_add_overflow(padded, in, &padded) ||
        __builtin_mul_overflow(dil, f - 1, &span) || __builtin_sub_overflow(padded, span, &num))
        return 0;
    num -= 1;
    if (num < 0)   /* floor(num / stride) + 1 <= 0 */
        return 0;
    *out = num / stride + 1;
    return 1;
}

int vt_conv_dims(const vx_conv2d_params *p, int64_t *out_h, int64_t *out_w)
{
    if (p->layout != VX_NCHW && p->layout != VX_NHWC)
        return 0;
    if (p->activation != VX_ACT_NONE && p->activation != VX_ACT_RELU)
        return 0;
    if (p->n < 1 || p->c < 1 || p->k < 1 || p->groups < 1 || p->c % p->groups != 0 ||
        p->k % p->groups != 0)
        return 0;
    int64_t oh, ow;
    if (!dim_out(p->h, p->pad_h, p->dilation_h, p->r, p->stride_h, &oh) ||
        !dim_out(p->w, p->pad_w, p->dilation_w, p->s, p->stride_w, &ow))
        return 0;
    *out_h = oh;
    *out_w = ow;
    return 1;
}

int64_t vt_conv_input_count(const vx_conv2d_params *p)
{
    return p->n * p->c * p->h * p->w;
}

int64_t vt_conv_filter_count(const vx_conv2d_params *p)
{
    return p->k * (p->c / p->groups) * p->r * p->s;
}

int64_t vt_conv_output_count(const vx_conv2d_params *p)
{
    int64_t oh = 0, ow = 0;
    if (!vt_conv_dims(p, &oh, &ow))
        return 0;
    return p->n * p->k * oh * ow;
}

void vt_conv_describe(const vt_conv_case *c, char *buf, size_t len)
{
    const vx_conv2d_params *p = &c->p;
    int64_t oh = -1, ow = -1;
    char outs[64];
    if (vt_conv_dims(p, &oh, &ow))
        snprintf(outs, sizeof outs, "output %lldx%lld", (long long)oh, (long long)ow);
    else
        snprintf(outs, sizeof outs, "no valid output");
    snprintf(buf, len,
             "dyn_conv2d(%s n=%lld c=%lld h=%lld w=%lld k=%lld r=%lld s=%lld stride=%lldx%lld "
             "pad=%lldx%lld dilation=%lldx%lld groups=%lld bias=%s relu=%s%s) %s seed=%llu%s%s",
             p->layout == VX_NCHW ? "NCHW/KCRS" : p->layout == VX_NHWC ? "NHWC/KRSC" : "bad-layout",
             (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w,
             (long long)p->k, (long long)p->r, (long long)p->s, (long long)p->stride_h,
             (long long)p->stride_w, (long long)p->pad_h, (long long)p->pad_w,
             (long long)p->dilation_h, (long long)p->dilation_w, (long long)p->groups,
             c->bias ? "yes" : "NULL",
             p->activation == VX_ACT_RELU ? "yes" : p->activation == VX_ACT_NONE ? "no" : "bad",
             c->packed ? " filter=packed" : "", outs, (unsigned long long)c->seed, c->tag ? " | " : "",
             c->tag ? c->tag : "");
}

/* Strides (in floats) of each logical index for the parameter's layout. */
typedef struct {
    int64_t in_n, in_c, in_y, in_x;
    int64_t f_k, f_c, f_r, f_s;
    int64_t o_n, o_k, o_y, o_x;
} conv_strides;

static conv_strides strides_of(const vx_conv2d_params *p, int64_t oh, int64_t ow)
{
    conv_strides t;
    int64_t C = p->c, H = p->h, W = p->w, K = p->k, R = p->r, S = p->s;
    int64_t Cg = C / p->groups;
    if (p->layout == VX_NCHW) {
        t.in_x = 1, t.in_y = W, t.in_c = H * W, t.in_n = C * H * W;
        t.f_s = 1, t.f_r = S, t.f_c = R * S, t.f_k = Cg * R * S;
        t.o_x = 1, t.o_y = ow, t.o_k = oh * ow, t.o_n = K * oh * ow;
    } else {
        t.in_c = 1, t.in_x = C, t.in_y = W * C, t.in_n = H * W * C;
        t.f_c = 1, t.f_s = Cg, t.f_r = S * Cg, t.f_k = R * S * Cg;
        t.o_k = 1, t.o_x = K, t.o_y = ow * K, t.o_n = oh * ow * K;
    }
    return t;
}

void vt_ref_conv2d(const vx_conv2d_params *p, const float *input, const float *filter,
                   const float *bias, double *out)
{
    int64_t oh, ow;
    if (!vt_conv_dims(p, &oh, &ow))
        abort();   /* test bug */
    conv_strides t = strides_of(p, oh, ow);
    const int64_t Cg = p->c / p->groups, Kg = p->k / p->groups;
    for (int64_t ni = 0; ni < p->n; ni++)
        for (int64_t ki = 0; ki < p->k; ki++) {
            const int64_t g = ki / Kg;
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double acc = 0.0;
                    for (int64_t cg = 0; cg < Cg; cg++) {
                        const int64_t ci = g * Cg + cg;
                        for (int64_t ry = 0; ry < p->r; ry++) {
                            const int64_t iy = oy * p->stride_h - p->pad_h + ry * p->dilation_h;
                            if (iy < 0 || iy >= p->h)
                                continue;   /* zero padding */
                            for (int64_t sx = 0; sx < p->s; sx++) {
                                const int64_t ix =
                                    ox * p->stride_w - p->pad_w + sx * p->dilation_w;
                                if (ix < 0 || ix >= p->w)
                                    continue;
                                acc += (double)input[ni * t.in_n + ci * t.in_c + iy * t.in_y +
                                                     ix * t.in_x] *
                                       (double)filter[ki * t.f_k + cg * t.f_c + ry * t.f_r +
                                                      sx * t.f_s];
                            }
                        }
                    }
                    if (bias)
                        acc += (double)bias[ki];
                    if (p->activation == VX_ACT_RELU && !(acc > 0.0))
                        acc = 0.0;
                    out[ni * t.o_n + ki * t.o_k + oy * t.o_y + ox * t.o_x] = acc;
                }
        }
}

/* The (n, k, y, x) coordinates of output element i, as text. */
static void out_coords(const vx_conv2d_params *p, int64_t oh, int64_t ow, int64_t i, char *buf,
                       size_t len)
{
    int64_t ni, ki, y, x;
    if (p->layout == VX_NCHW) {
        x = i % ow;
        y = (i / ow) % oh;
        ki = (i / (ow * oh)) % p->k;
        ni = i / (ow * oh * p->k);
    } else {
        ki = i % p->k;
        x = (i / p->k) % ow;
        y = (i / (p->k * ow)) % oh;
        ni = i / (p->k * ow * oh);
    }
    snprintf(buf, len, "output[n=%lld][k=%lld][y=%lld][x=%lld] (float %lld)", (long long)ni,
             (long long)ki, (long long)y, (long long)x, (long long)i);
}

static float *alloc_floats(int64_t count)
{
    float *p = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (!p)
        abort();
    return p;
}

int vt_conv_run(const vt_conv_case *c, vt_conv_result *r)
{
    char desc[640], where[160];
    const vx_conv2d_params *p = &c->p;
    vt_conv_describe(c, desc, sizeof desc);
    memset(r, 0, sizeof *r);
    int64_t oh, ow;
    if (!vt_conv_dims(p, &oh, &ow)) {
        snprintf(r->msg, sizeof r->msg, "test bug: invalid parameters: %s", desc);
        return 0;
    }
    const int64_t nin = vt_conv_input_count(p), nf = vt_conv_filter_count(p);
    const int64_t nout = p->n * p->k * oh * ow, nb = c->bias ? p->k : 0;
    const int64_t nbuf = FRONT_GUARD + nout + BACK_GUARD;

    vt_rng rng;
    vt_rng_seed(&rng, c->seed);
    float *in = alloc_floats(nin), *in0 = alloc_floats(nin);
    float *f = alloc_floats(nf), *f0 = alloc_floats(nf);
    float *b = c->bias ? alloc_floats(nb) : NULL, *b0 = alloc_floats(nb);
    float *buf = alloc_floats(nbuf), *out = buf + FRONT_GUARD;
    double *ref = malloc(sizeof(double) * (size_t)nout);
    float *again = NULL; /* packed: the second call's output */
    if (!ref)
        abort();
    for (int64_t i = 0; i < nin; i++)
        in[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < nf; i++)
        f[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < nb; i++)
        b[i] = vt_rng_float(&rng);
    memcpy(in0, in, sizeof(float) * (size_t)nin);
    memcpy(f0, f, sizeof(float) * (size_t)nf);
    if (nb)
        memcpy(b0, b, sizeof(float) * (size_t)nb);
    vt_fill_sentinel(buf, FRONT_GUARD);
    vt_fill_sentinel(out + nout, BACK_GUARD);
    static const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (int64_t i = 0; i < nout; i++)
        out[i] = specials[i % 3];   /* the output is written, never read */

    int64_t dh = -7, dw = -7;
    vx_status ds = vx_conv2d_output_dims(p, &dh, &dw);
    if (ds != VX_OK || dh != oh || dw != ow) {
        snprintf(r->msg, sizeof r->msg,
                 "vx_conv2d_output_dims returned %s (\"%s\") %lldx%lld, expected VX_OK %lldx%lld: %s",
                 vx_status_string(ds), ds != VX_OK ? vx_last_error() : "", (long long)dh,
                 (long long)dw, (long long)oh, (long long)ow, desc);
        goto out;
    }

    vx_status s;
    if (c->packed) {
        vx_conv2d_filter *pf = NULL;
        s = vx_conv2d_filter_create(p, f, &pf);
        if (s != VX_OK || !pf) {
            snprintf(r->msg, sizeof r->msg, "vx_conv2d_filter_create returned %s (\"%s\"), expected VX_OK: %s",
                     vx_status_string(s), vx_last_error(), desc);
            r->status = s;
            goto out;
        }
        for (int64_t i = 0; i < nf; i++) /* the object holds its own copy */
            f[i] = NAN;
        s = dyn_conv2d_packed(p, in, pf, b, out);
        /* again on the same object (its panels packed now), into a second
         * output checked against the reference below */
        again = s == VX_OK ? alloc_floats(nout) : NULL;
        vx_status s2 = VX_OK;
        if (again) {
            for (int64_t i = 0; i < nout; i++)
                again[i] = NAN;
            s2 = dyn_conv2d_packed(p, in, pf, b, again);
        }
        vx_conv2d_filter_destroy(pf);
        memcpy(f, f0, sizeof(float) * (size_t)nf);
        if (s == VX_OK && s2 != VX_OK) {
            snprintf(r->msg, sizeof r->msg, "the second dyn_conv2d_packed call returned %s (\"%s\"): %s",
                     vx_status_string(s2), vx_last_error(), desc);
            r->status = s2;
            goto out;
        }
    } else {
        s = dyn_conv2d(p, in, f, b, out);
    }
    r->status = s;
    if (s != VX_OK) {
        snprintf(r->msg, sizeof r->msg, "%s returned %s (\"%s\"), expected VX_OK: %s",
                 c->packed ? "dyn_conv2d_packed" : "dyn_conv2d", vx_status_string(s), vx_last_error(), desc);
        goto out;
    }
    if (memcmp(in, in0, sizeof(float) * (size_t)nin) != 0) {
        snprintf(r->msg, sizeof r->msg, "input was modified: %s", desc);
        goto out;
    }
    if (memcmp(f, f0, sizeof(float) * (size_t)nf) != 0) {
        snprintf(r->msg, sizeof r->msg, "filter was modified: %s", desc);
        goto out;
    }
    if (nb && memcmp(b, b0, sizeof(float) * (size_t)nb) != 0) {
        snprintf(r->msg, sizeof r->msg, "bias was modified: %s", desc);
        goto out;
    }
    int64_t bad = vt_check_sentinel(buf, FRONT_GUARD);
    if (bad >= 0) {
        snprintf(r->msg, sizeof r->msg,
                 "guard zone before the output written at output[%lld] (%g): %s",
                 (long long)(bad - FRONT_GUARD), (double)buf[bad], desc);
        goto out;
    }
    bad = vt_check_sentinel(out + nout, BACK_GUARD);
    if (bad >= 0) {
        snprintf(r->msg, sizeof r->msg,
                 "guard zone after the output written at output[%lld] (count %lld, value %g): %s",
                 (long long)(nout + bad), (long long)nout, (double)out[nout + bad], desc);
        goto out;
    }
    for (int64_t i = 0; i < nout; i++)
        if (!isfinite(out[i])) {
            out_coords(p, oh, ow, i, where, sizeof where);
            snprintf(r->msg, sizeof r->msg,
                     "%s = %g is not finite: the NaN/Inf pre-fill survived or was read: %s",
                     where, (double)out[i], desc);
            goto out;
        }
    if (p->activation == VX_ACT_RELU)
        for (int64_t i = 0; i < nout; i++)
            if (out[i] < 0.0f) {
                out_coords(p, oh, ow, i, where, sizeof where);
                snprintf(r->msg, sizeof r->msg, "%s = %g < 0 with ReLU: %s", where,
                         (double)out[i], desc);
                goto out;
            }

    vt_ref_conv2d(p, in, f, b, ref);
    double err = vt_rel_err(out, 0, 1, ref, 1, nout);
    if (again) {
        const double err2 = vt_rel_err(again, 0, 1, ref, 1, nout);
        if (!(err2 <= VT_TOL)) {
            snprintf(r->msg, sizeof r->msg, "the second dyn_conv2d_packed call (panels packed already): relative "
                     "Frobenius error %.3g > %g: %s", err2, VT_TOL, desc);
            goto out;
        }
    }
    r->rel_err = err;
    if (!(err <= VT_TOL)) {
        int64_t wi = 0;
        double worst = -1.0;
        for (int64_t i = 0; i < nout; i++) {
            double d = fabs((double)out[i] - ref[i]);
            if (d > worst) {
                worst = d;
                wi = i;
            }
        }
        out_coords(p, oh, ow, wi, where, sizeof where);
        snprintf(r->msg, sizeof r->msg,
                 "relative Frobenius error %.3g > %g (worst %s = %.8g, reference %.8g): %s", err,
                 VT_TOL, where, (double)out[wi], ref[wi], desc);
        goto out;
    }
    r->ok = 1;
out:
    free(again);
    free(in);
    free(in0);
    free(f);
    free(f0);
    free(b);
    free(b0);
    free(buf);
    free(ref);
    return r->ok;
}

void vt_conv_check(const vt_conv_case *c)
{
    vt_conv_result r;
    vt_conv_run(c, &r);
    cr_assert(r.ok, "%s", r.msg);
}
