/* CPU convolution driver: the implicit GEMM of analyzer/conv_plan.h handed to
 * the GEMM driver (gathered patch operand, one item per group or per image
 * and group, bias and ReLU fused into the micro-kernel's store), or the
 * direct family for depthwise plans. */
#include <stddef.h>

#include "cpu/conv.h"

vx_status vx_cpu_conv2d(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                        const float *in, const float *filter, const float *bias, float *out, int *threads_used)
{
    if (plan->path == VX_PATH_CONV_DIRECT)
        return vx_cpu_conv_direct(p, v, plan, in, filter, bias, out, threads_used);
    if (p->layout == VX_NHWC && !v->pointwise && plan->path != VX_PATH_PACKED)
        return vx_cpu_conv_nhwc_inplace(p, v, plan, in, filter, bias, out, threads_used);
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
