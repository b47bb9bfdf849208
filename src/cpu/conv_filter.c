/* vx_conv2d_filter: a filter copied once and its panels packed per width
 * on first use (conv_filter.h). */
#include "cpu/conv_filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/conv_plan.h"
#include "cpu/pack.h"

static inline int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

int vx_conv_filter_fits(const vx_conv2d_filter *f, const vx_conv2d_params *p, char *why, int len)
{
    static const char *const lay[2] = { "NCHW (KCRS)", "NHWC (KRSC)" };
    if (f->layout != p->layout) {
        snprintf(why, (size_t)len, "the filter was packed for %s, the call is %s", lay[f->layout], lay[p->layout]);
        return 0;
    }
    if (f->k != p->k || f->c != p->c || f->r != p->r || f->s != p->s || f->groups != p->groups) {
        snprintf(why, (size_t)len,
                 "the filter was packed for k=%lld c=%lld r=%lld s=%lld groups=%lld, the call has k=%lld c=%lld "
                 "r=%lld s=%lld groups=%lld",
                 (long long)f->k, (long long)f->c, (long long)f->r, (long long)f->s, (long long)f->groups,
                 (long long)p->k, (long long)p->c, (long long)p->r, (long long)p->s, (long long)p->groups);
        return 0;
    }
    return 1;
}

/* Pack every group's panels of this kind and width (layout:
 * conv_filter.h). */
static float *pack_all(const vx_conv2d_filter *f, int kind, int width)
{
    const int64_t panels = cdiv(f->kg, width);
    size_t floats;
    if (__builtin_mul_overflow((size_t)(f->groups * panels), (size_t)(f->red * width), &floats) ||
        floats > SIZE_MAX / sizeof(float) - 64)
        return NULL;
    void *mem = NULL;
    if (posix_memalign(&mem, 64, (floats * sizeof(float) + 63) & ~(size_t)63) != 0)
        return NULL;
    float *out = mem;
    const int64_t rs = f->r * f->s;
    if (kind == VX_CONV_PANELS_A) { /* the KCRS rows themselves, mr at a time */
        for (int64_t g = 0; g < f->groups; g++)
            vx_pack_a(f->kg, f->red, f->raw + g * f->kg * f->red, f->red, 1, width,
                      out + g * panels * width * f->red);
        return out;
    }
    for (int64_t g = 0; g < f->groups; g++)
        for (int64_t q = 0; q < panels; q++) {
            const int64_t k0 = q * width, nb = f->kg - k0 < width ? f->kg - k0 : width;
            const float *src = f->raw + (g * f->kg + k0) * f->red;
            float *dst = out + (g * panels + q) * f->red * width;
            if (f->layout == VX_NCHW && rs > 1)
                vx_pack_b_kcrs(f->cg, rs, 0, rs, nb, src, f->red, width, dst);
            else /* KRSC, or a 1x1 KCRS filter (the same order) */
                vx_pack_b(f->red, nb, src, 1, f->red, width, dst);
        }
    return out;
}

/* The set of this kind and width if packed, else NULL with *end the first
 * free slot (VX_CONV_FILTER_WIDTHS: none). Sets fill in order. */
static float *find_set(vx_conv2d_filter *f, int kind, int width, int *end)
{
    int i = 0;
    for (; i < VX_CONV_FILTER_WIDTHS; i++) {
        float *p = atomic_load_explicit(&f->width[i].panels, memory_order_acquire);
        if (!p)
            break;
        if (f->width[i].kind == kind && f->width[i].width == width)
            return p;
    }
    *end = i;
    return NULL;
}

const float *vx_conv_filter_panels(const vx_conv2d_filter *cf, int kind, int width)
{
    /* the filter is const to its users; its panel cache is not */
    vx_conv2d_filter *f = (vx_conv2d_filter *)cf;
    if (width < 1 || (kind != VX_CONV_PANELS_A && kind != VX_CONV_PANELS_B) ||
        (kind == VX_CONV_PANELS_A && f->layout != VX_NCHW))
        return NULL;
    int i;
    float *found = find_set(f, kind, width, &i);
    if (found)
        return found;
    pthread_mutex_lock(&f->lock);
    found = find_set(f, kind, width, &i); /* another call may have packed it meanwhile */
    if (!found && i < VX_CONV_FILTER_WIDTHS && (found = pack_all(f, kind, width))) {
        f->width[i].kind = kind;
        f->width[i].width = width;
        atomic_store_explicit(&f->width[i].panels, found, memory_order_release);
    }
    pthread_mutex_unlock(&f->lock);
    return found;
}
