/* CPU convolution driver: the implicit GEMM of analyzer/conv_plan.h handed to
 * the GEMM driver (gathered patch operand, one item per group or per image
 * and group, bias and ReLU fused into the micro-kernel's store), or the
 * direct family for depthwise plans. */
#include <stddef.h>

#include "cpu/conv.h"
#include "cpu/pack.h"
#include "cpu/threadpool.h"
#include "status.h"

enum { SLOT_NCHW_AS_NHWC = 3 };

/* count matrices of rows x cols, each transposed (vx_copy_transposed):
 * matrix i from src + i * src_step to dst + i * dst_step. */
typedef struct {
    int64_t count, rows, cols, ld_src, ld_dst, src_step, dst_step;
    const float *src;
    float *dst;
} transposes;

/* The threads share the matrices' column strips of VX_CONV_TRANSPOSE_STRIP
 * (rows of dst), not whole matrices: shared by matrices, a batch of 1 ran
 * on one thread and a batch of 3 on two took the time of 2. Where the
 * strips are fewer than the threads, each strip's rows are cut in parts
 * (vx_conv_transpose_row_parts), at multiples of 8 (the 8 x 8 blocks);
 * counted for the threads that run (transpose_all's, cut to the units:
 * the same parts). */
static void transposes_task(void *ctx, int tid, int nthreads)
{
    const transposes *t = ctx;
    const int64_t per = vx_conv_transpose_strips(t->cols),
                  parts = vx_conv_transpose_row_parts(t->count, t->rows, t->cols, nthreads),
                  units = t->count * per * parts;
    const int64_t lo = units * tid / nthreads, hi = units * (tid + 1) / nthreads;
    for (int64_t u = lo; u < hi; u++) {
        const int64_t i = u / (per * parts), c0 = u / parts % per * VX_CONV_TRANSPOSE_STRIP, part = u % parts;
        const int64_t w = t->cols - c0 < VX_CONV_TRANSPOSE_STRIP ? t->cols - c0 : VX_CONV_TRANSPOSE_STRIP;
        const int64_t r0 = t->rows * part / parts / 8 * 8,
                      r1 = part + 1 == parts ? t->rows : t->rows * (part + 1) / parts / 8 * 8;
        vx_copy_transposed(r1 - r0, w, t->src + i * t->src_step + r0 * t->ld_src + c0, t->ld_src,
                           t->dst + i * t->dst_step + c0 * t->ld_dst + r0, t->ld_dst);
    }
}

static void transpose_all(const transposes *t, int threads)
{
    const int64_t units = t->count * vx_conv_transpose_strips(t->cols) *
                          vx_conv_transpose_row_parts(t->count, t->rows, t->cols, threads);
    if (threads > units)
        threads = (int)units;
    if (threads > 1)
        vx_pool_run(transposes_task, (void *)t, threads);
    else
        transposes_task((void *)t, 0, 1);
}

/* An NCHW call on a plan with conv_via_nhwc: transpose the input to NHWC
 * and the filter to KRSC, run the NHWC plan, transpose its output back,
 * each transpose shared among the plan's threads. One buffer holds the
 * three copies (taken before anything is written). */
static vx_status conv_via_nhwc(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                               const float *in, const float *filter, const float *panels, const float *bias,
                               float *out, int *threads_used)
{
    vx_conv2d_params q = *p;
    q.layout = VX_NHWC;
    vx_conv_view vq;
    vx_conv_view_of(&q, &vq);
    const int64_t hw = p->h * p->w, rs = p->r * p->s, pq = v->p * v->q;
    /* in place, the filter panels are packed from KCRS itself (a 1x1
     * filter is KRSC already); else the filter is transposed to KRSC */
    const int in_place = vx_conv_nhwc_in_place(&q, &vq, plan->path), f_t_needed = rs > 1 && !in_place;
    const size_t n_in = (size_t)(p->n * p->c * hw), n_f = f_t_needed ? (size_t)(p->k * p->c * rs) : 0,
                 n_out = (size_t)(p->n * p->k * pq);
    float *in_t = vx_scratch(SLOT_NCHW_AS_NHWC, n_in + n_f + n_out);
    if (!in_t)
        return vx_fail(VX_ERR_NO_MEMORY, "dyn_conv2d: out of memory for %zu bytes of NHWC copies",
                       (n_in + n_f + n_out) * sizeof(float));
    float *f_t = in_t + n_in, *out_t = in_t + n_in + n_f;
    const int threads = plan->threads > 1 ? plan->threads : 1;
    const transposes t_in = { p->n, p->c, hw, hw, p->c, p->c * hw, hw * p->c, in, in_t };
    const transposes t_f = { p->k, p->c, rs, rs, p->c, p->c * rs, rs * p->c, filter, f_t };
    transpose_all(&t_in, threads);
    if (f_t_needed)
        transpose_all(&t_f, threads);
    vx_gemm_plan inner = *plan;
    inner.conv_via_nhwc = 0;
    const vx_status s = in_place ? vx_cpu_conv_nhwc_inplace(&q, &vq, &inner, in_t, filter, rs > 1, panels, bias,
                                                            out_t, threads_used)
                                 : vx_cpu_conv2d(&q, &vq, &inner, in_t, f_t_needed ? f_t : filter, panels, bias,
                                                 out_t, threads_used);
    if (s != VX_OK)
        return s;
    const transposes t_out = { p->n, pq, p->k, p->k, pq, pq * p->k, p->k * pq, out_t, out };
    transpose_all(&t_out, threads);
    return VX_OK;
}

vx_status vx_cpu_conv2d(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                        const float *in, const float *filter, const float *panels, const float *bias, float *out,
                        int *threads_used)
{
    if (plan->conv_via_nhwc && p->layout == VX_NCHW)
        return conv_via_nhwc(p, v, plan, in, filter, panels, bias, out, threads_used);
    if (plan->path == VX_PATH_CONV_DIRECT)
        return vx_cpu_conv_direct(p, v, plan, in, filter, bias, out, threads_used);
    if (p->layout == VX_NHWC && !v->pointwise && p->groups == 1 && plan->path == VX_PATH_DOT)
        return vx_cpu_conv_nhwc_dot(p, v, plan, in, filter, bias, out, threads_used);
    if (p->layout == VX_NHWC && vx_conv_nhwc_in_place(p, v, plan->path))
        return vx_cpu_conv_nhwc_inplace(p, v, plan, in, filter, 0, panels, bias, out, threads_used);
    const int64_t red = v->k, pq = v->p * v->q;
    vx_conv_patches patches;
    vx_conv_patches_init(&patches, p, v, in);
    vx_gemm_args g = { 0 };
    vx_gemm_ext x = { 0 };
    g.ext = &x;
    g.m = v->m;
    g.n = v->n;
    g.k = v->k;
    g.alpha = 1.0f;
    g.beta = 0.0f;
    x.batch = v->items;
    x.relu = p->activation == VX_ACT_RELU;
    x.epilogue = bias != NULL || x.relu;
    if (p->layout == VX_NHWC) {
        /* item = group: its input channels, output channels and filters */
        x.batch_inner = 1;
        if (v->pointwise) {
            g.a = in;
            g.a_rs = p->c;
            g.a_cs = 1;
            x.a_bs = (vx_batch_stride){ v->cg, 0 };
        } else {
            x.gather_a = &patches.base;
        }
        g.b = filter;
        g.b_rs = 1;
        g.b_cs = red;
        x.b_bs = (vx_batch_stride){ v->kg * red, 0 };
        if (panels && plan->path == VX_PATH_PACK_B) { /* a group's panels after the last's */
            x.b_panels = panels;
            x.b_panels_item = (v->kg + plan->nr - 1) / plan->nr * plan->nr * red;
        }
        g.c = out;
        g.c_rs = p->k;
        x.c_bs = (vx_batch_stride){ v->kg, 0 };
        x.bias_col = bias;
        x.bias_bs = (vx_batch_stride){ v->kg, 0 };
    } else {
        /* item = (image, group) */
        x.batch_inner = p->groups;
        g.a = filter;
        g.a_rs = red;
        g.a_cs = 1;
        x.a_bs = (vx_batch_stride){ 0, v->kg * red };
        if (panels && plan->path == VX_PATH_PACKED) { /* a group's row panels after the last's */
            x.a_panels = panels;
            x.a_panels_bs = (vx_batch_stride){ 0, (v->kg + plan->mr - 1) / plan->mr * plan->mr * red };
        }
        if (v->pointwise) {
            g.b = in;
            g.b_rs = p->h * p->w;
            g.b_cs = 1;
            x.b_bs = (vx_batch_stride){ p->c * p->h * p->w, v->cg * p->h * p->w };
        } else {
            x.gather_b = &patches.base;
        }
        g.c = out;
        g.c_rs = pq;
        x.c_bs = (vx_batch_stride){ p->k * pq, v->kg * pq };
        x.bias_row = bias;
        x.bias_bs = (vx_batch_stride){ 0, v->kg };
    }
    return vx_cpu_gemm(&g, plan, threads_used);
}
