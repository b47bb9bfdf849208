/* NHWC convolution in the dot form (cpu/dot.h), one group: the patches of
 * a k block, pixels x kb, gathered row-major with zeros where taps meet the
 * padding (conv_gather.c with one-row panels) into each thread's buffer,
 * and the KRSC filter read in place as B stored transposed (each filter's
 * r*s*c values run along the reduction, as the patch rows do). The
 * register-tile paths copy the filter through transposes on every call
 * (19 % of ResNet-50's c5 3x3 at batch 1); this form never copies it, and
 * is offered for few pixels, where that copy is not spread over many rows
 * (conv_plan.c). Each thread takes a run of the output-channel tiles and
 * gathers the k block's patches itself (they are small next to the filter
 * it streams). */
#include "cpu/conv.h"
#include "cpu/dot.h"
#include "cpu/pack.h"
#include "cpu/threadpool.h"
#include "status.h"

enum { SLOT_PATCHES = 0 }; /* the GEMM driver's slot: this path does not call it */

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct {
    const vx_conv2d_params *p;
    const vx_conv_view *v;
    const vx_dot_set *D;
    vx_conv_patches X;
    const float *filter, *bias;
    float *out, *ws;
    int64_t kb, slice, col_tiles;
} job;

static void task(void *ctx, int tid, int nthreads)
{
    const job *J = ctx;
    const int mr = J->D->mr, nr = J->D->nr;
    const int64_t M = J->v->m, K = J->p->k, red = J->v->k;
    const int64_t t0 = J->col_tiles * tid / nthreads, t1 = J->col_tiles * (tid + 1) / nthreads;
    if (t0 >= t1)
        return;
    float *a = J->ws + (size_t)tid * (size_t)J->slice;
    const int relu = J->p->activation == VX_ACT_RELU, fused = J->bias != NULL || relu;
    for (int64_t pc = 0; pc < red; pc += J->kb) {
        const int64_t kb = min64(J->kb, red - pc);
        J->X.base.pack(&J->X.base, 0, 0, M, pc, kb, 1, a); /* a[i * kb + q] */
        const int last = pc + kb >= red;
        for (int64_t t = t0; t < t1; t++) {
            const int64_t j0 = t * nr;
            const int n = (int)min64(nr, K - j0);
            const vx_epilogue ep = { NULL, J->bias ? J->bias + j0 : NULL, relu };
            for (int64_t i0 = 0; i0 < M; i0 += mr) {
                const int m = (int)min64(mr, M - i0);
                J->D->fn[m - 1][n - 1](kb, a + i0 * kb, kb, J->filter + j0 * red + pc, red, J->out + i0 * K + j0, K,
                                       1.0f, pc == 0 ? 0.0f : 1.0f, last && fused ? &ep : NULL);
            }
        }
    }
}

vx_status vx_cpu_conv_nhwc_dot(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                               const float *in, const float *filter, const float *bias, float *out,
                               int *threads_used)
{
    job J;
    J.p = p;
    J.v = v;
    J.D = vx_dot_kernels(plan->isa);
    vx_conv_patches_init(&J.X, p, v, in);
    J.filter = filter;
    J.bias = bias;
    J.out = out;
    J.kb = plan->kc >= 1 ? min64(plan->kc, v->k) : v->k;
    J.col_tiles = (p->k + J.D->nr - 1) / J.D->nr;
    const int threads = plan->threads < 1 ? 1 : plan->threads;
    const int units = J.col_tiles < threads ? (int)J.col_tiles : threads;
    J.slice = (v->m * J.kb + 15) & ~(int64_t)15; /* 64-byte aligned slices */
    if (!(J.ws = vx_scratch(SLOT_PATCHES, (size_t)units * (size_t)J.slice)))
        return vx_fail(VX_ERR_NO_MEMORY, "dyn_conv2d: out of memory for %lld floats of patches",
                       (long long)(units * J.slice));
    const int used = units > 1 ? vx_pool_run(task, &J, units) : (task(&J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}
