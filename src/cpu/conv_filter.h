/* A convolution filter packed once for many calls (dyn_conv2d_packed): the
 * user's filter, copied, and its KRSC column panels as the pack-B kernels
 * read them, one set per panel width nr, packed on first use. The panels
 * are what every call of the plain API packs again (conv_inplace.c,
 * pack_panel; gemm.c, load_b) and do not depend on the call's batch, map
 * size, stride, padding or dilation, which may change from call to call. */
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
        int nr;
        _Atomic(float *) panels; /* published after nr; NULL: not packed */
    } width[VX_CONV_FILTER_WIDTHS];
};

/* Whether f was packed for these filter dimensions (layout, k, c, r, s,
 * groups); else writes what differs to why (len bytes). */
int vx_conv_filter_fits(const vx_conv2d_filter *f, const vx_conv2d_params *p, char *why, int len);

/* The panels of width nr: for group g and panel q (filters q*nr ..
 * q*nr + nr - 1 of the group), red x nr floats at
 * (g * cdiv(kg, nr) + q) * red * nr, row (r*s + s')*cg + c of filter tap
 * (r, s') and channel c, filters past the group's zero. Packed on the
 * first call that asks for this width (thread-safe); NULL when out of
 * memory or VX_CONV_FILTER_WIDTHS widths are packed already. */
const float *vx_conv_filter_panels(const vx_conv2d_filter *f, int nr);

#endif
