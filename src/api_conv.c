/* dyn_conv2d and vx_conv2d_output_dims: parameter checks (nothing is written
 * on a bad call), plan selection (analyzer/conv_plan.h), the CPU run and
 * the VORTEX_VERBOSE log line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/conv_plan.h"
#include "cpu/conv.h"
#include "cpu/conv_filter.h"
#include "cpu/isa.h"
#include "cpu/threadpool.h"
#include "runtime.h"
#include "status.h"
#include "vortex/vortex.h"

static vx_status bad(const char *fn, const char *what, long long v)
{
    return vx_fail(VX_ERR_INVALID_ARG, "%s: %s (got %lld)", fn, what, v);
}

/* a * b * c * d into *out; 0 on overflow. */
static int mul4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out)
{
    int64_t t;
    return !__builtin_mul_overflow(a, b, &t) && !__builtin_mul_overflow(t, c, &t) &&
           !__builtin_mul_overflow(t, d, &t) && !__builtin_mul_overflow(t, (int64_t)sizeof(float), out);
}

/* One output extent: (in + 2 pad - dil (f - 1) - 1) / stride + 1, computed
 * without overflow; <= 0 when the filter does not fit. */
static int out_extent(int64_t in, int64_t pad, int64_t dil, int64_t f, int64_t stride, int64_t *out)
{
    int64_t padded, span;
    if (__builtin_mul_overflow(pad, 2, &padded) || __builtin_add_overflow(padded, in, &padded) ||
        __builtin_mul_overflow(dil, f - 1, &span) || __builtin_add_overflow(span, 1, &span))
        return 0;
    *out = padded < span ? 0 : (padded - span) / stride + 1;
    return 1;
}

/* The layout, the sizes (where filter_only, only the filter's: k, c, r,
 * s, groups) and groups dividing c and k. */
static vx_status check_fields(const char *fn, const vx_conv2d_params *p, int filter_only)
{
    if (p->layout != VX_NCHW && p->layout != VX_NHWC)
        return bad(fn, "layout must be VX_NCHW (0) or VX_NHWC (1)", (long long)p->layout);
    const struct { const char *name; int64_t v, min; int filter; } f[] = {
        { "n (batch)", p->n, 1, 0 }, { "c (input channels)", p->c, 1, 1 }, { "h (input height)", p->h, 1, 0 },
        { "w (input width)", p->w, 1, 0 }, { "k (output channels)", p->k, 1, 1 }, { "r (filter height)", p->r, 1, 1 },
        { "s (filter width)", p->s, 1, 1 }, { "stride_h", p->stride_h, 1, 0 }, { "stride_w", p->stride_w, 1, 0 },
        { "pad_h", p->pad_h, 0, 0 }, { "pad_w", p->pad_w, 0, 0 }, { "dilation_h", p->dilation_h, 1, 0 },
        { "dilation_w", p->dilation_w, 1, 0 }, { "groups", p->groups, 1, 1 },
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((f[i].filter || !filter_only) && f[i].v < f[i].min)
            return vx_fail(VX_ERR_INVALID_ARG, "%s: %s must be >= %lld (got %lld)", fn, f[i].name,
                           (long long)f[i].min, (long long)f[i].v);
    if (p->c % p->groups != 0 || p->k % p->groups != 0)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: groups = %lld must divide both c = %lld and k = %lld", fn,
                       (long long)p->groups, (long long)p->c, (long long)p->k);
    return VX_OK;
}

/* Checks everything but the tensor pointers; fills *v on success. */
static vx_status check_params(const char *fn, const vx_conv2d_params *p, vx_conv_view *v)
{
    if (!p)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: the parameter struct is NULL", fn);
    if (p->activation != VX_ACT_NONE && p->activation != VX_ACT_RELU)
        return bad(fn, "activation must be VX_ACT_NONE (0) or VX_ACT_RELU (1)", (long long)p->activation);
    const vx_status fields = check_fields(fn, p, 0);
    if (fields != VX_OK)
        return fields;
    int64_t oh, ow, bytes;
    if (!out_extent(p->h, p->pad_h, p->dilation_h, p->r, p->stride_h, &oh) ||
        !out_extent(p->w, p->pad_w, p->dilation_w, p->s, p->stride_w, &ow))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: the padded input or the dilated filter size overflows int64", fn);
    if (oh <= 0 || ow <= 0)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: the output would be %lld x %lld: the dilated %lld x %lld filter "
                       "(dilation %lld x %lld) does not fit the padded %lld x %lld input (pad %lld x %lld)", fn,
                       (long long)oh, (long long)ow, (long long)p->r, (long long)p->s, (long long)p->dilation_h,
                       (long long)p->dilation_w, (long long)p->h, (long long)p->w, (long long)p->pad_h,
                       (long long)p->pad_w);
    if (!mul4(p->n, p->c, p->h, p->w, &bytes) || !mul4(p->k, p->c / p->groups, p->r, p->s, &bytes) ||
        !mul4(p->n, p->k, oh, ow, &bytes) || !mul4(p->n * oh * ow, p->r, p->s, p->c, &bytes))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: a tensor (or the reduction of n*p*q x r*s*c) holds more than "
                       "2^63 bytes (n = %lld, c = %lld, h = %lld, w = %lld, k = %lld, r = %lld, s = %lld)", fn,
                       (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->k,
                       (long long)p->r, (long long)p->s);
    vx_conv_view_of(p, v);
    return VX_OK;
}

VX_API vx_status vx_conv2d_output_dims(const vx_conv2d_params *p, int64_t *out_h, int64_t *out_w)
{
    vx_conv_view v;
    vx_status s = check_params("vx_conv2d_output_dims", p, &v);
    if (s != VX_OK)
        return s;
    if (!out_h || !out_w)
        return vx_fail(VX_ERR_INVALID_ARG, "vx_conv2d_output_dims: out_h and out_w must not be NULL");
    *out_h = v.p;
    *out_w = v.q;
    return VX_OK;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* A checked call (v: its view), with the filter plain (packed NULL) or
 * packed: plan, run, log. */
static vx_status run_conv(const char *fn, const vx_conv2d_params *p, vx_conv_view *v, const float *input,
                          const float *filter, const vx_conv2d_filter *packed, const float *bias, float *output)
{
    const int isa = vx_active_isa();
    if (isa < 0)
        return vx_fail(VX_ERR_UNSUPPORTED, "%s: this CPU has neither AVX2+FMA nor AVX-512; "
                       "Vortex needs one of them", fn);
    if (packed)
        vx_conv_view_with_packed_filter(p, v);
    vx_status s;
    const int verbose = vx_verbose();
    const double t0 = verbose ? now_us() : 0.0;
    vx_gemm_plan plan;
    const int budget = vx_threads(), warm = budget > 1 ? vx_pool_state() : 0;
    vx_plan_conv(p, v, (vx_isa)isa, budget, warm, &plan);
    /* a stream of calls planned on one thread because the workers sleep
     * wakes them once, as dyn_gemm's (threadpool.h) */
    const int stream =
        vx_pool_stream_call(warm, budget, plan.threads, (double)v->m * (double)v->n * (double)v->k * (double)v->items);
    if (stream && vx_pool_stream_recent()) {
        vx_gemm_plan spun;
        vx_plan_conv(p, v, (vx_isa)isa, budget, warm | 1, &spun);
        if (spun.threads > 1)
            plan = spun;
    }
    int threads = 1;
    /* the packed filter's panels where the plan reads them (packed once
     * per kind and width, on the first call that asks); where they cannot
     * be had (no memory for them, or the object's sets all taken), the
     * plan packs from the object's copy as dyn_conv2d does */
    const int kind = packed ? vx_conv_panels_read(p, v, &plan) : VX_CONV_PANELS_NONE;
    const float *panels = kind == VX_CONV_PANELS_NONE ? NULL
                          : vx_conv_filter_panels(packed, kind, kind == VX_CONV_PANELS_B ? plan.nr : plan.mr);
    s = vx_cpu_conv2d(p, v, &plan, input, filter, panels, bias, output, &threads);
    if (stream)
        vx_pool_stream_note();
    if (s != VX_OK)
        return s;
    if (verbose) {
        const double us = now_us() - t0;
        char desc[160];
        vx_plan_describe(&plan, desc, sizeof desc);
        const double flops = 2.0 * (double)v->m * (double)v->n * (double)v->k * (double)v->items;
        fprintf(stderr, "vortex: conv2d,cpu,%s,n=%lld,c=%lld,h=%lld,w=%lld,k=%lld,r=%lld,s=%lld,stride=%lldx%lld,"
                "pad=%lldx%lld,dil=%lldx%lld,groups=%lld,bias=%d,relu=%d,plan=%s,threads=%d,time_us=%.2f,"
                "gflops=%.1f%s\n", p->layout == VX_NHWC ? "nhwc" : "nchw", (long long)p->n, (long long)p->c,
                (long long)p->h, (long long)p->w, (long long)p->k, (long long)p->r, (long long)p->s,
                (long long)p->stride_h, (long long)p->stride_w, (long long)p->pad_h, (long long)p->pad_w,
                (long long)p->dilation_h, (long long)p->dilation_w, (long long)p->groups, bias != NULL,
                p->activation == VX_ACT_RELU, desc, threads, us, us > 0 ? flops * 1e-3 / us : 0.0,
                packed ? (panels ? ",filter=panels" : ",filter=copy") : "");
    }
    return VX_OK;
}

VX_API vx_status dyn_conv2d(const vx_conv2d_params *p, const float *input, const float *filter,
                            const float *bias, float *output)
{
    vx_conv_view v;
    vx_status s = check_params("dyn_conv2d", p, &v);
    if (s != VX_OK)
        return s;
    if (!input || !filter || !output)
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_conv2d: %s is NULL", !input ? "input" : !filter ? "filter" : "output");
    return run_conv("dyn_conv2d", p, &v, input, filter, NULL, bias, output);
}

VX_API vx_status dyn_conv2d_packed(const vx_conv2d_params *p, const float *input, const vx_conv2d_filter *f,
                                   const float *bias, float *output)
{
    vx_conv_view v;
    vx_status s = check_params("dyn_conv2d_packed", p, &v);
    if (s != VX_OK)
        return s;
    if (!input || !f || !output)
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_conv2d_packed: %s is NULL",
                       !input ? "input" : !f ? "the packed filter" : "output");
    char why[256];
    if (!vx_conv_filter_fits(f, p, why, sizeof why))
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_conv2d_packed: %s", why);
    return run_conv("dyn_conv2d_packed", p, &v, input, f->raw, f, bias, output);
}

VX_API vx_status vx_conv2d_filter_create(const vx_conv2d_params *p, const float *filter, vx_conv2d_filter **out)
{
    static const char fn[] = "vx_conv2d_filter_create";
    if (!p)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: the parameter struct is NULL", fn);
    if (!filter || !out)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: %s is NULL", fn, !filter ? "filter" : "out");
    const vx_status fields = check_fields(fn, p, 1);
    if (fields != VX_OK)
        return fields;
    int64_t bytes;
    if (!mul4(p->k, p->c / p->groups, p->r, p->s, &bytes) || (uint64_t)bytes > SIZE_MAX / 4)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: the filter (k = %lld, c/groups = %lld, r = %lld, s = %lld) holds "
                       "more than 2^63 bytes", fn, (long long)p->k, (long long)(p->c / p->groups), (long long)p->r,
                       (long long)p->s);
    vx_conv2d_filter *cf = calloc(1, sizeof *cf);
    float *raw = cf ? malloc((size_t)bytes) : NULL;
    if (!raw) {
        free(cf);
        return vx_fail(VX_ERR_NO_MEMORY, "%s: out of memory for a %lld-byte filter", fn, (long long)bytes);
    }
    memcpy(raw, filter, (size_t)bytes);
    cf->layout = p->layout;
    cf->k = p->k;
    cf->c = p->c;
    cf->r = p->r;
    cf->s = p->s;
    cf->groups = p->groups;
    cf->cg = p->c / p->groups;
    cf->kg = p->k / p->groups;
    cf->red = p->r * p->s * cf->cg;
    cf->raw = raw;
    pthread_mutex_init(&cf->lock, NULL);
    for (int i = 0; i < VX_CONV_FILTER_WIDTHS; i++)
        atomic_init(&cf->width[i].panels, NULL);
    *out = cf;
    return VX_OK;
}

VX_API void vx_conv2d_filter_destroy(vx_conv2d_filter *f)
{
    if (!f)
        return;
    for (int i = 0; i < VX_CONV_FILTER_WIDTHS; i++)
        free(atomic_load(&f->width[i].panels));
    pthread_mutex_destroy(&f->lock);
    free(f->raw);
    free(f);
}
