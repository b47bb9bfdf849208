/* A convolution filter packed once for many calls (dyn_conv2d_packed): the
 * user's filter, copied, and its panels as the kernels read them, packed
 * on first use, one set per kind and width: the KRSC column panels of the
 * NHWC GEMM's B (nr wide), or, for an NCHW filter, the row panels of the
 * NCHW GEMM's A (mr rows). The panels are what every call of the plain
 * API packs again (conv_inplace.c, pack_panel; gemm.c, load_b, load_a) and
 * do not depend on the call's batch, map size, stride, padding or
 * dilation, which may change from call to call. */
#ifndef VX_CPU_CONV_FILTER_H
#define VX_CPU_CONV_FILTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "vortex/vortex.h"

enum { VX_CONV_FILTER_WIDTHS = 8 }; /* panel widths a filter keeps (a few families') */

struct vx_conv2d_filter {
    vx_tensor_layout layout;   /* of the filter copied: KCRS (NCHW) or KRSC (NHWC) */
    int64_t k, c, r, s, groups;
    int64_t cg, kg, red;       /* per group: input channels, filters, r*s*cg */
    float *raw;                /* the filter as given (plans that read no panels) */
    pthread_mutex_t lock;      /* serialises packing a new width */
    struct {
        int kind, width;
        _Atomic(float *) panels; /* published after kind and width; NULL: not packed */
    } width[VX_CONV_FILTER_WIDTHS];
};

/* Whether f was packed for these filter dimensions (layout, k, c, r, s,
 * groups); else writes what differs to why (len bytes). */
int vx_conv_filter_fits(const vx_conv2d_filter *f, const vx_conv2d_params *p, char *why, int len);

/* The panels of a kind (VX_CONV_PANELS_B or _A, conv_plan.h) and width,
 * packed on the first call that asks for them (thread-safe); NULL when out
 * of memory, the kind does not apply (A: NCHW filters only) or
 * VX_CONV_FILTER_WIDTHS other sets are packed already (the caller then
 * packs from the copy, raw).
 * B, width nr: for group g and panel q (filters q*nr .. q*nr + nr - 1 of
 * the group), red x nr floats at (g * cdiv(kg, nr) + q) * red * nr, row
 * (r*s + s')*cg + c of filter tap (r, s') and channel c, filters past the
 * group's zero.
 * A, width mr: group g's filters (rows of red = cg*r*s floats, KCRS) in
 * panels of mr rows, panel q at (g * cdiv(kg, mr) + q) * mr * red holding
 * rows_q = min(mr, kg - q*mr) rows, element (i, p) at p * rows_q + i. */
const float *vx_conv_filter_panels(const vx_conv2d_filter *f, int kind, int width);

#endif
