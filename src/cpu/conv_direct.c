/* The direct kernel family for depthwise convolutions (one input channel per
 * group, any channel multiplier): every output element is a dot product of
 * r*s terms, which an implicit GEMM would run as a GEMM one column wide.
 * Vectorised along the contiguous axis of the layout (channels for NHWC,
 * output columns for NCHW) with GCC vector types, compiled once per ISA
 * (target attributes) and chosen at run time like the micro-kernels. Bias
 * and ReLU are applied while the output is still in registers or L1. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cpu/conv.h"
#include "cpu/pack.h"
#include "cpu/threadpool.h"
#include "status.h"

enum { SLOT_FILTER = 1 };

typedef struct {
    const vx_conv2d_params *p;
    const vx_conv_view *v;
    const float *in, *filter, *bias;
    float *out;
    int64_t units;        /* NHWC: (image, oh) rows; NCHW: (image, k) planes */
    atomic_llong next;
    int isa;
} dw_job;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }


/* One body per vector width W (floats), instantiated for AVX2 (8) and
 * AVX-512 (16). VEC loads and stores are unaligned (aligned(4)). */
#define DW_KERNELS(W, TARGET, SUFFIX)                                                                          \
    typedef float vf_##SUFFIX __attribute__((vector_size(4 * (W)), aligned(4)));                               \
    typedef int32_t vi_##SUFFIX __attribute__((vector_size(4 * (W)), aligned(4)));                             \
                                                                                                               \
    /* NHWC, one output row (image, oh): ft is the filter as [r][s][k]. The    \
     * row's valid taps are listed once as offsets from a pixel's input;     \
     * pixels whose taps all lie inside (the interior) use the list as is,   \
     * the few at the padded edges build their own. Channels go four        \
     * vectors at a time, each tap's filter and input vectors loaded once. */ \
    __attribute__((target(TARGET))) static void nhwc_row_##SUFFIX(const dw_job *J, const float *ft, int64_t im, \
                                                                  int64_t oh)                                  \
    {                                                                                                          \
        const vx_conv2d_params *p = J->p;                                                                      \
        const int64_t K = p->k, C = p->c, mult = J->v->kg, q = J->v->q;                                        \
        const int relu = p->activation == VX_ACT_RELU;                                                         \
        const vf_##SUFFIX zero = { 0 };                                                                        \
        int64_t row_off[VX_CONV_DIRECT_MAX_TAPS];                                                              \
        const float *row_f[VX_CONV_DIRECT_MAX_TAPS];                                                           \
        int nrow = 0;                                                                                          \
        for (int64_t r = 0; r < p->r; r++) {                                                                   \
            const int64_t ih = oh * p->stride_h - p->pad_h + r * p->dilation_h;                                \
            if (ih < 0 || ih >= p->h)                                                                          \
                continue;                                                                                      \
            for (int64_t s = 0; s < p->s; s++) {                                                               \
                row_off[nrow] = ((im * p->h + ih) * p->w + s * p->dilation_w - p->pad_w) * C;                  \
                row_f[nrow++] = ft + (r * p->s + s) * K;                                                       \
            }                                                                                                  \
        }                                                                                                      \
        int64_t lo, hi; /* interior: every column tap inside */                                                \
        vx_conv_inside(q, p->w, p->stride_w, -p->pad_w, &lo, &hi);                                                 \
        {                                                                                                      \
            int64_t lo2, hi2;                                                                                  \
            vx_conv_inside(q, p->w, p->stride_w, (p->s - 1) * p->dilation_w - p->pad_w, &lo2, &hi2);               \
            lo = lo > lo2 ? lo : lo2;                                                                          \
            hi = hi < hi2 ? hi : hi2;                                                                          \
        }                                                                                                      \
        for (int64_t ow = 0; ow < q; ow++) {                                                                   \
            float *o = J->out + ((im * J->v->p + oh) * q + ow) * K;                                            \
            const float *tap[VX_CONV_DIRECT_MAX_TAPS];                                                         \
            const float *const *ftap = row_f;                                                                  \
            const float *edge_f[VX_CONV_DIRECT_MAX_TAPS];                                                      \
            int ntap = 0;                                                                                      \
            if (ow >= lo && ow < hi) {                                                                         \
                const float *pix = J->in + ow * p->stride_w * C;                                               \
                for (int t = 0; t < nrow; t++)                                                                 \
                    tap[t] = pix + row_off[t];                                                                 \
                ntap = nrow;                                                                                   \
            } else {                                                                                           \
                for (int64_t r = 0; r < p->r; r++) {                                                           \
                    const int64_t ih = oh * p->stride_h - p->pad_h + r * p->dilation_h;                        \
                    if (ih < 0 || ih >= p->h)                                                                  \
                        continue;                                                                              \
                    for (int64_t s = 0; s < p->s; s++) {                                                       \
                        const int64_t iw = ow * p->stride_w - p->pad_w + s * p->dilation_w;                    \
                        if (iw < 0 || iw >= p->w)                                                              \
                            continue;                                                                          \
                        tap[ntap] = J->in + ((im * p->h + ih) * p->w + iw) * C;                                \
                        edge_f[ntap++] = ft + (r * p->s + s) * K;                                              \
                    }                                                                                          \
                }                                                                                              \
                ftap = edge_f;                                                                                 \
            }                                                                                                  \
            int64_t k = 0;                                                                                     \
            if (mult == 1) {                                                                                   \
                for (; k + 4 * (W) <= K; k += 4 * (W)) {                                                       \
                    vf_##SUFFIX a0 = zero, a1 = zero, a2 = zero, a3 = zero;                                    \
                    if (J->bias) {                                                                             \
                        a0 = *(const vf_##SUFFIX *)(J->bias + k);                                              \
                        a1 = *(const vf_##SUFFIX *)(J->bias + k + (W));                                        \
                        a2 = *(const vf_##SUFFIX *)(J->bias + k + 2 * (W));                                    \
                        a3 = *(const vf_##SUFFIX *)(J->bias + k + 3 * (W));                                    \
                    }                                                                                          \
                    for (int t = 0; t < ntap; t++) {                                                           \
                        const float *x = tap[t] + k, *f = ftap[t] + k;                                         \
                        a0 += *(const vf_##SUFFIX *)x * *(const vf_##SUFFIX *)f;                               \
                        a1 += *(const vf_##SUFFIX *)(x + (W)) * *(const vf_##SUFFIX *)(f + (W));               \
                        a2 += *(const vf_##SUFFIX *)(x + 2 * (W)) * *(const vf_##SUFFIX *)(f + 2 * (W));       \
                        a3 += *(const vf_##SUFFIX *)(x + 3 * (W)) * *(const vf_##SUFFIX *)(f + 3 * (W));       \
                    }                                                                                          \
                    if (relu) { /* lanes > 0 keep their bits, the others (and NaN) become +0 */               \
                        a0 = (vf_##SUFFIX)((vi_##SUFFIX)a0 & (vi_##SUFFIX)(a0 > zero));                        \
                        a1 = (vf_##SUFFIX)((vi_##SUFFIX)a1 & (vi_##SUFFIX)(a1 > zero));                        \
                        a2 = (vf_##SUFFIX)((vi_##SUFFIX)a2 & (vi_##SUFFIX)(a2 > zero));                        \
                        a3 = (vf_##SUFFIX)((vi_##SUFFIX)a3 & (vi_##SUFFIX)(a3 > zero));                        \
                    }                                                                                          \
                    *(vf_##SUFFIX *)(o + k) = a0;                                                              \
                    *(vf_##SUFFIX *)(o + k + (W)) = a1;                                                        \
                    *(vf_##SUFFIX *)(o + k + 2 * (W)) = a2;                                                    \
                    *(vf_##SUFFIX *)(o + k + 3 * (W)) = a3;                                                    \
                }                                                                                              \
                for (; k + (W) <= K; k += (W)) {                                                               \
                    vf_##SUFFIX acc = J->bias ? *(const vf_##SUFFIX *)(J->bias + k) : zero;                    \
                    for (int t = 0; t < ntap; t++)                                                             \
                        acc += *(const vf_##SUFFIX *)(tap[t] + k) * *(const vf_##SUFFIX *)(ftap[t] + k);       \
                    if (relu)                                                                                  \
                        acc = (vf_##SUFFIX)((vi_##SUFFIX)acc & (vi_##SUFFIX)(acc > zero));                     \
                    *(vf_##SUFFIX *)(o + k) = acc;                                                             \
                }                                                                                              \
            }                                                                                                  \
            for (; k < K; k++) {                                                                               \
                float acc = J->bias ? J->bias[k] : 0.0f;                                                       \
                const int64_t c = k / mult;                                                                    \
                for (int t = 0; t < ntap; t++)                                                                 \
                    acc += tap[t][c] * ftap[t][k];                                                             \
                o[k] = relu && !(acc > 0.0f) ? 0.0f : acc;                                                     \
            }                                                                                                  \
        }                                                                                                      \
    }                                                                                                          \
                                                                                                               \
    /* NCHW, one output plane (image, k). */                                                                   \
    __attribute__((target(TARGET))) static void nchw_plane_##SUFFIX(const dw_job *J, int64_t im, int64_t k)    \
    {                                                                                                          \
        const vx_conv2d_params *p = J->p;                                                                      \
        const int64_t P = J->v->p, Q = J->v->q, c = k / J->v->kg;                                              \
        const float *chan = J->in + (im * p->c + c) * p->h * p->w;                                             \
        const float *fk = J->filter + k * p->r * p->s;                                                         \
        const float b = J->bias ? J->bias[k] : 0.0f;                                                           \
        const int relu = p->activation == VX_ACT_RELU;                                                         \
        for (int64_t oh = 0; oh < P; oh++) {                                                                   \
            float *o = J->out + ((im * p->k + k) * P + oh) * Q;                                                \
            for (int64_t ow = 0; ow < Q; ow++)                                                                 \
                o[ow] = b;                                                                                     \
            for (int64_t r = 0; r < p->r; r++) {                                                               \
                const int64_t ih = oh * p->stride_h - p->pad_h + r * p->dilation_h;                            \
                if (ih < 0 || ih >= p->h)                                                                      \
                    continue;                                                                                  \
                const float *row = chan + ih * p->w;                                                           \
                for (int64_t s = 0; s < p->s; s++) {                                                           \
                    const float f = fk[r * p->s + s];                                                          \
                    const int64_t off = s * p->dilation_w - p->pad_w;                                          \
                    int64_t lo, hi;                                                                            \
                    vx_conv_inside(Q, p->w, p->stride_w, off, &lo, &hi);                                           \
                    if (p->stride_w == 1) {                                                                    \
                        const vf_##SUFFIX vf = f - (vf_##SUFFIX){ 0 };                                         \
                        int64_t ow = lo;                                                                       \
                        for (; ow + (W) <= hi; ow += (W))                                                      \
                            *(vf_##SUFFIX *)(o + ow) += vf * *(const vf_##SUFFIX *)(row + ow + off);           \
                        for (; ow < hi; ow++)                                                                  \
                            o[ow] += f * row[ow + off];                                                        \
                    } else {                                                                                   \
                        for (int64_t ow = lo; ow < hi; ow++)                                                   \
                            o[ow] += f * row[ow * p->stride_w + off];                                          \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
            if (relu)                                                                                          \
                for (int64_t ow = 0; ow < Q; ow++)                                                             \
                    o[ow] = o[ow] > 0.0f ? o[ow] : 0.0f;                                                       \
        }                                                                                                      \
    }

DW_KERNELS(8, "avx2,fma", avx2)
DW_KERNELS(16, "avx512f", avx512)

typedef struct {
    dw_job *J;
    const float *ft;
} dw_task_ctx;

static void dw_task(void *ctx, int tid, int nthreads)
{
    const dw_task_ctx *T = ctx;
    dw_job *J = T->J;
    (void)tid;
    /* a few units per claim: enough to amortise the atomic, few enough to balance */
    const int64_t chunk = J->units >= 64 ? 4 : 1;
    for (int64_t u0 = -chunk; (u0 = vx_pool_claim(&J->next, u0, chunk, nthreads)) < J->units;) {
        const int64_t u1 = min64(u0 + chunk, J->units);
        for (int64_t u = u0; u < u1; u++) {
            if (J->p->layout == VX_NHWC) {
                const int64_t im = u / J->v->p, oh = u % J->v->p;
                if (J->isa == VX_ISA_AVX512)
                    nhwc_row_avx512(J, T->ft, im, oh);
                else
                    nhwc_row_avx2(J, T->ft, im, oh);
            } else {
                const int64_t im = u / J->p->k, k = u % J->p->k;
                if (J->isa == VX_ISA_AVX512)
                    nchw_plane_avx512(J, im, k);
                else
                    nchw_plane_avx2(J, im, k);
            }
        }
    }
}

vx_status vx_cpu_conv_direct(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                             const float *in, const float *filter, const float *bias, float *out,
                             int *threads_used)
{
    if (!v->depthwise || p->r * p->s > VX_CONV_DIRECT_MAX_TAPS)
        return vx_fail(VX_ERR_INTERNAL, "dyn_conv2d: the direct plan needs a depthwise convolution with at "
                       "most 64 filter taps (r = %lld, s = %lld, c/groups = %lld)", (long long)p->r,
                       (long long)p->s, (long long)v->cg);
    dw_job J = { p, v, in, filter, bias, out, 0, 0, plan->isa };
    J.units = p->layout == VX_NHWC ? p->n * v->p : p->n * p->k;
    dw_task_ctx T = { &J, NULL };
    if (p->layout == VX_NHWC) {
        /* KRSC with one channel per group is k x (r*s): turn it to (r*s) x k
         * so a tap's weights for consecutive channels are contiguous. */
        const int64_t rs = p->r * p->s;
        float *ft = vx_scratch(SLOT_FILTER, (size_t)(rs * p->k));
        if (!ft)
            return vx_fail(VX_ERR_NO_MEMORY, "dyn_conv2d: out of memory for %lld bytes of filter",
                           (long long)(rs * p->k * 4));
        for (int64_t k = 0; k < p->k; k++)
            for (int64_t t = 0; t < rs; t++)
                ft[t * p->k + k] = filter[k * rs + t];
        T.ft = ft;
    }
    const int threads = (int)min64(plan->threads < 1 ? 1 : plan->threads, J.units);
    const int used = threads > 1 ? vx_pool_run(dw_task, &T, threads) : (dw_task(&T, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}
