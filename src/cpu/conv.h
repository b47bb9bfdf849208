/* CPU convolution: the implicit GEMM (the patch operand gathered by the L1
 * load stage, conv_gather.c) run by the GEMM driver, and the direct family
 * for depthwise convolutions (conv_direct.c). */
#ifndef VX_CPU_CONV_H
#define VX_CPU_CONV_H

#include "analyzer/conv_plan.h"
#include "cpu/gemm.h"
#include "vortex/vortex.h"

/* The patch operand of the implicit GEMM: a gather over the input. */
typedef struct {
    vx_gather base;   /* first: the driver calls base.pack(&base, ...) */
    const float *in;
    int64_t c, h, w, cg, groups, r, s, p, q, sh, sw, ph, pw, dh, dw;
} vx_conv_patches;

/* Set x up to gather p's patches from `in` in p's layout (NHWC: the A
 * operand, rows = output pixels; NCHW: the B operand, columns = pixels). */
void vx_conv_patches_init(vx_conv_patches *x, const vx_conv2d_params *p, const vx_conv_view *v, const float *in);

/* Run plan on valid parameters; bias may be NULL. panels: NULL, or where
 * the plan reads them (vx_conv_panels_read) the filter's panels of that
 * kind, plan->nr wide or plan->mr tall, packed before the call
 * (conv_filter.h), which it then reads instead of packing the filter. */
vx_status vx_cpu_conv2d(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                        const float *in, const float *filter, const float *panels, const float *bias, float *out,
                        int *threads_used);

/* NHWC with the patches read in place (plan->path == VX_PATH_PACK_B):
 * conv_inplace.c. filter: KRSC, or KCRS where filter_kcrs (an NCHW call's,
 * run as NHWC: its panels packed from it directly); panels: NULL, or the
 * filter's panels packed before the call (vx_cpu_conv2d), read in place. */
vx_status vx_cpu_conv_nhwc_inplace(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                                   const float *in, const float *filter, int filter_kcrs, const float *panels,
                                   const float *bias, float *out, int *threads_used);

/* Testing: the in-place path's band tiles (conv_inplace.c) -1 where they
 * price below the pieces (the default), 0 never, 1 for every class of rows.
 * Not thread-safe: set it while no convolution runs. */
void vx_conv_inplace_force_band(int mode);

/* Testing: the order a cell of the in-place path runs in (conv_inplace.c,
 * run_cell; analyzer/conv_plan.h, vx_conv_inplace_order) -1 as the
 * re-reads decide (the default), else VX_CELL_PANEL_AT_A_TIME (0),
 * VX_CELL_ALL_PANELS (1) or VX_CELL_BLOCKS (2, blocks of two output rows);
 * panels first only where they fit the cell's buffer. Not thread-safe: set
 * it while no convolution runs. */
void vx_conv_inplace_force_order(int mode);

/* NHWC, one group, not pointwise, in the dot form (plan->path ==
 * VX_PATH_DOT): patches gathered row-major per k block, the filter read in
 * place; plan->kc is the k block, plan->threads the threads. conv_dot.c. */
vx_status vx_cpu_conv_nhwc_dot(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                               const float *in, const float *filter, const float *bias, float *out,
                               int *threads_used);

/* The direct family (plan->path == VX_PATH_CONV_DIRECT, depthwise only). */
vx_status vx_cpu_conv_direct(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan,
                             const float *in, const float *filter, const float *bias, float *out,
                             int *threads_used);

#endif
