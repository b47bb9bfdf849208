/* Convolution plan selection: the implicit-GEMM view of a convolution, the
 * GEMM cost model priced over its items two ways (each item split over the
 * threads, or the items shared among them), the direct family's cost for
 * depthwise convolutions, and the shared plan cache in front. */
#include "analyzer/conv_plan.h"

#include <string.h>

#include "analyzer/cost.h"
#include "analyzer/plancache.h"
#include "cpu/cpu_levels.h"

/* The NCHW gather's panel rows in vectors (conv_plan.h, vx_conv_nchw_lanes),
 * priced as runs of 64 floats: no cost per run at all made packed NCHW
 * plans over 56x56 maps look faster than they run (8x64x56x56, 3x3, priced
 * 3.8 ms, ran 6.0-10 ms; NOTES.md, eighteenth session). */
enum { LANES_RUN = 64 };

/* ceil(a / b) for a >= 0, b >= 1, without forming a + b (b may be INT64_MAX) */
static inline int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The filter taps [*lo, *hi) along one dimension that some output reads
 * inside the input (out outputs, input extent in, filter f, stride st,
 * padding pad, dilation d). */
static void used_taps(int64_t out, int64_t in, int64_t f, int64_t st, int64_t pad, int64_t d, int64_t *lo,
                      int64_t *hi)
{
    *lo = f;
    *hi = 0;
    for (int64_t t = 0; t < f; t++) {
        int64_t first, end;
        vx_conv_inside(out, in, st, t * d - pad, &first, &end);
        if (first < end) {
            *lo = t < *lo ? t : *lo;
            *hi = t + 1;
        }
    }
    if (*lo >= *hi)
        *lo = *hi = 0;
}

/* Mean fraction of a filter dimension's taps that land inside the input,
 * over the output positions: out outputs, filter f, dilation d, stride st,
 * padding pad, input in. Only the positions near either edge lose taps, so
 * only those are walked. */
static double tap_fraction(int64_t out, int64_t in, int64_t f, int64_t st, int64_t pad, int64_t d)
{
    const int64_t edge = cdiv(pad + d * (f - 1), st) + 1; /* positions that can lose taps per side */
    int64_t lost = 0;
    for (int64_t o = 0; o < out; o++) {
        if (o >= edge && o < out - edge)
            o = out - edge; /* the interior keeps every tap */
        const int64_t x0 = o * st - pad;
        for (int64_t t = 0; t < f; t++) {
            const int64_t x = x0 + t * d;
            lost += x < 0 || x >= in;
        }
    }
    return 1.0 - (double)lost / ((double)out * (double)f);
}

/* How many times the L0 calls of a row of one class a band tile over a
 * whole output row makes (conv_inplace.c, band_runs): one per tap column,
 * those whose valid pixels are the same (the interior's) merged into one
 * run where a filter row's channels are adjacent (a row of one class: one
 * run a filter row), else one per tap either way (factor 1). 0 where the
 * row is one class (no band tiles) or the in-place path does not run.
 * *pixels: how many pixels of a whole row a tap column reads, on average. */
static int64_t band_runs(const vx_conv2d_params *p, const vx_conv_view *v, double *pixels)
{
    *pixels = 0.0;
    if (p->s > VX_CONV_INPLACE_MAX_S)
        return 0;
    const int merge = p->dilation_w == 1 && p->groups == 1;
    int64_t runs = 0, classes = 0, plo = -1, phi = -1, pairs = 0, cols = 0;
    for (int64_t s = 0; s < p->s; s++) {
        int64_t lo, hi;
        vx_conv_inside(v->q, p->w, p->stride_w, s * p->dilation_w - p->pad_w, &lo, &hi);
        if (lo >= hi) {
            plo = phi = -1;
            continue;
        }
        const int same = lo == plo && hi == phi;
        pairs += hi - lo;
        cols++;
        classes += !same;
        runs += !(same && merge);
        plo = lo;
        phi = hi;
    }
    *pixels = classes > 1 ? (double)pairs / (double)cols : 0.0;
    return classes > 1 ? merge ? runs : 1 : 0;
}

void vx_conv_view_of(const vx_conv2d_params *p, vx_conv_view *v)
{
    memset(v, 0, sizeof *v);
    v->p = (p->h + 2 * p->pad_h - p->dilation_h * (p->r - 1) - 1) / p->stride_h + 1;
    v->q = (p->w + 2 * p->pad_w - p->dilation_w * (p->s - 1) - 1) / p->stride_w + 1;
    v->cg = p->c / p->groups;
    v->kg = p->k / p->groups;
    v->pointwise = p->r == 1 && p->s == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_h == 0 &&
                   p->pad_w == 0;
    v->depthwise = v->cg == 1 && p->groups > 1;
    used_taps(v->p, p->h, p->r, p->stride_h, p->pad_h, p->dilation_h, &v->r0, &v->r1);
    used_taps(v->q, p->w, p->s, p->stride_w, p->pad_w, p->dilation_w, &v->s0, &v->s1);
    const int64_t red = p->r * p->s * v->cg;
    if (p->layout == VX_NHWC) {
        v->m = p->n * v->p * v->q;
        v->n = v->kg;
        v->k = red;
        v->items = p->groups;
        /* A: pixels x (r, s, c'), channels contiguous: gathered into the
         * packed buffer (copy mode, priced as a transposing copy) or read in
         * place tap by tap (conv_inplace.c); B: the filter read across its
         * rows (KRSC holds B transposed), never in place. */
        v->shape.a_unit_stride = v->pointwise;
        v->shape.b_unit_stride = 0;
        /* in place, the reduction comes in runs: a filter row's s*c
         * channels where they are contiguous (conv_inplace.c), else one
         * tap's c/groups */
        v->shape.a_seg = v->pointwise ? 0 : p->dilation_w == 1 && p->groups == 1 ? p->s * v->cg : v->cg;
        /* in place, a tile's rows are output pixels of one row: input
         * pixels stride_w * c floats apart (saturated: valid calls may
         * have sizes whose product no call could allocate) */
        v->shape.a_pitch = v->pointwise ? 0 : p->c <= INT64_MAX / p->stride_w ? p->stride_w * p->c : INT64_MAX;
        /* copied, a row's contiguous runs: a filter row's s*c channels with
         * one group and dilation 1 (cut at VX_CONV_GATHER_RUN_MAX), else one tap's
         * (conv_gather.c) */
        v->shape.a_run = v->pointwise ? 0
                         : p->dilation_w == 1 && p->groups == 1 ? (p->s * v->cg < VX_CONV_GATHER_RUN_MAX ? p->s * v->cg : VX_CONV_GATHER_RUN_MAX)
                                                                : v->cg;
        if (!v->pointwise) {
            /* output columns whose taps reach into the padding, left and right */
            const int64_t left = cdiv(p->pad_w, p->stride_w);
            const int64_t reach = (v->q - 1) * p->stride_w - p->pad_w + p->dilation_w * (p->s - 1) - (p->w - 1);
            const int64_t right = reach > 0 ? cdiv(reach, p->stride_w) : 0;
            v->shape.a_row = v->q;
            v->shape.a_edge = left + right < v->q ? left + right : v->q;
            v->shape.a_img = v->p * v->q;
            const int64_t top = cdiv(p->pad_h, p->stride_h);
            const int64_t below = (v->p - 1) * p->stride_h - p->pad_h + p->dilation_h * (p->r - 1) - (p->h - 1);
            const int64_t bottom = below > 0 ? cdiv(below, p->stride_h) : 0;
            v->shape.a_edge_rows = top + bottom < v->p ? top + bottom : v->p;
            const double frac = tap_fraction(v->p, p->h, p->r, p->stride_h, p->pad_h, p->dilation_h) *
                                tap_fraction(v->q, p->w, p->s, p->stride_w, p->pad_w, p->dilation_w);
            v->shape.a_kfrac = frac < 0.999 ? frac : 0.0;
            v->shape.a_band_runs = band_runs(p, v, &v->shape.a_band_pixels);
            const double used = (double)(v->r1 - v->r0) * (double)(v->s1 - v->s0) / ((double)p->r * (double)p->s);
            v->shape.b_kfrac = used < 0.999 ? used : 0.0;
            v->shape.a_pixel_elems = vx_conv_pixel_elems(v->cg, p->r, p->s, p->stride_h, p->stride_w);
        }
        /* the in-place path keeps a filter row's taps in a fixed table */
        v->shape.a_gathered = !v->pointwise && (p->s > VX_CONV_INPLACE_MAX_S ||
                                                p->r * p->s > VX_CONV_INPLACE_MAX_TAPS);
    } else {
        v->m = v->kg;
        v->n = v->p * v->q;
        v->k = red;
        v->items = p->n * p->groups;
        /* A: the filter, row-major; B: (c', r, s) x pixels, pixels contiguous. */
        v->shape.a_unit_stride = 1;
        v->shape.b_unit_stride = 1;
        v->shape.b_gathered = !v->pointwise;
        /* the gather copies runs of a row of output pixels, cut at panels,
         * or whole panel rows in vectors (vx_conv_nchw_lanes): 512x7x7 with
         * 512 3x3 filters ran 604 us (shifted runs), the same GEMM with B
         * plain 616 (AMD Zen 5, 2 threads). Rows gathered by index (strides
         * over 1) keep the price of runs: priced as shifted ones,
         * 3x512x14x14 at stride 2 left the NHWC route (1765 us) for its own
         * (1980). */
        const int lanes = vx_conv_nchw_lanes(p->stride_h, p->stride_w, p->h, p->w, v->q, p->r * p->s);
        v->shape.b_run = v->pointwise ? 0 : lanes == 1 ? LANES_RUN : (v->q < 16 ? v->q : 16);
    }
    v->shape.m = v->m;
    v->shape.n = v->n;
    v->shape.k = v->k;
}

/* Direct family: every output element is one dot product of r*s terms; the
 * output is written once and the input read about once. */
static double direct_ns(const vx_device_desc *d, const vx_conv_view *v, int max_threads, int warm)
{
    const double flops = 2.0 * (double)v->m * (double)v->n * (double)v->k * (double)v->items;
    const double bytes = 2.0 * d->elem_bytes * (double)v->m * (double)v->n * (double)v->items;
    const int64_t rows = v->m * v->items;
    const int t = (int)(rows < max_threads ? rows : max_threads);
    const double compute = flops * d->direct_ns_per_flop / t;
    const double stream = bytes / d->bw_shared;
    return d->call_ns + (t > 1 ? vx_cost_region_ns(d, warm) : 0.0) + (compute > stream ? compute : stream);
}

/* Whether a transpose writes rows a page apart or a multiple of it (1024
 * channels and more) while reading rows that are not 512 floats apart
 * (pack.c, vx_copy_transposed: it then walks dst's rows 8 at a time, all
 * in the same cache sets, and reads each line of src twice); such
 * transposes ran TRANSPOSE_ALIASED times as long a float (1024 x 196:
 * 0.30 ns against 0.15 for 1000 x 196; 2048 x 49: 0.35 against 0.17; one
 * AMD Zen 4 core). With the rate of the others, an NCHW 1x1 conv 1024 ->
 * 256 on 14x14 went through NHWC at 1.12x the time of its NCHW plan. */
#define TRANSPOSE_ALIASED 2.0

static int transpose_aliased(int64_t ld_src, int64_t ld_dst)
{
    return ld_dst % 1024 == 0 && ld_src % 512 != 0;
}

/* Transposing a tensor of `elems` floats (NCHW to NHWC and back), shared
 * among t threads: at the measured transposed-copy rate while it and its
 * copy fit the last cache level (as much of it as a stream finds there,
 * levels.h last_level_bytes); beyond, at what DRAM moves for all units
 * together: each float read, its line fetched for the write, written back
 * (1x49x499x499, 1x1 stride 2: the 49 MB input's transpose took 5 of the
 * 7.9 ms, 0.41 ns a float; 13x64x56x56, 3x3 -> 64 on 2 AMD Zen 4 cores:
 * 2.2 ms for 5.2 M floats in and out, 0.41 ns, priced 0.63 at the
 * measured single-thread rate of strided copies from DRAM it had before).
 * Against the tensor alone and the reported L3, ResNet-50's stride-2
 * projection at batch 32 (an input of 103 MB) was priced 3.8 ms of
 * transposes on an Intel Xeon guest whose L3 streams like DRAM past
 * 64-128 MiB, and its NCHW call ran via NHWC at 1.6x the time of the
 * NCHW plan (NOTES.md, thirty-seventh session). */
static double transpose_ns(const vx_device_desc *d, double elems, int t, int64_t ld_src, int64_t ld_dst)
{
    const double bytes = elems * d->elem_bytes;
    if (d->nmem >= 2 && d->bw_shared > 0) {
        int64_t last = d->mem[d->nmem - 2].bytes;
        if (d->last_level_bytes > 0 && d->last_level_bytes < last)
            last = d->last_level_bytes;
        if (2.0 * bytes > (double)last)
            return 3.0 * bytes / d->bw_shared;
    }
    return elems * d->copy_ns[0][1] * (transpose_aliased(ld_src, ld_dst) ? TRANSPOSE_ALIASED : 1.0) / t;
}

/* The threads that share `count` matrices' transposes of rows x cols,
 * each cut into strips of VX_CONV_TRANSPOSE_STRIP of its columns and
 * those, where fewer than the threads, into parts of their rows (conv.c,
 * transposes_task). */
static int transpose_threads(int64_t count, int64_t rows, int64_t cols, int t)
{
    const double units = (double)count * (double)vx_conv_transpose_strips(cols) *
                         (double)vx_conv_transpose_row_parts(count, rows, cols, t);
    return units < (double)t ? (int)units : t;
}

static void insert(vx_priced_plan *out, int *n, int max, const vx_priced_plan *v)
{
    if (*n == max && v->predicted_ns >= out[max - 1].predicted_ns)
        return;
    int i = *n < max ? (*n)++ : max - 1;
    while (i > 0 && out[i - 1].predicted_ns > v->predicted_ns) {
        out[i] = out[i - 1];
        i--;
    }
    out[i] = *v;
}

int vx_conv_rank(const vx_conv2d_params *p, const vx_conv_view *view, vx_isa isa, int max_threads, int pool_warm,
                 vx_priced_plan *out, int max)
{
    vx_conv_view v = *view;
    v.shape.pool_warm = pool_warm;
    if (max_threads < 1)
        max_threads = 1;
    const vx_cpu_model *M = vx_cpu_model_get(isa);
    const vx_device_desc *d = M ? &M->desc : NULL;
    const double call = d ? d->call_ns : 0, region = d ? vx_cost_region_ns(d, pool_warm) : 0;
    int n = 0;
    vx_priced_plan pp;

    /* Each item split over all the threads, the items one after another in
     * one parallel region: the call and the region are paid once. */
    vx_gemm_rank(&v.shape, isa, max_threads, &pp, 1);
    const vx_gemm_plan gemm_best = pp.plan;
    const double fixed = call + (pp.plan.threads > 1 ? region : 0.0);
    const double per_item = pp.predicted_ns > fixed ? pp.predicted_ns - fixed : 0.0;
    pp.predicted_ns = fixed + per_item * (double)v.items;
    insert(out, &n, max, &pp);

    /* The items shared among the threads, one thread each. */
    if (v.items > 1 && max_threads > 1) {
        vx_gemm_rank(&v.shape, isa, 1, &pp, 1);
        const int t = (int)(v.items < max_threads ? v.items : max_threads);
        const double one = pp.predicted_ns > call ? pp.predicted_ns - call : 0.0;
        pp.plan.threads = t;
        pp.predicted_ns = call + region + one * (double)cdiv(v.items, t);
        insert(out, &n, max, &pp);
    }

    /* NHWC, one group, in the dot form (conv_dot.c): each thread gathers
     * the patches of a k block row-major (zeros in the padding, computed
     * like the rest) and reads the KRSC filter in place, which the
     * register tiles copy through transposes on every call. Few pixels
     * only, as for GEMMs (plan.c, dot_shape). */
    if (d && p->layout == VX_NHWC && !v.pointwise && p->groups == 1 && vx_dot_takes(d, v.m, v.n)) {
        vx_problem q;
        memset(&q, 0, sizeof q);
        q.m = v.m;
        q.n = v.n;
        q.k = v.k;
        q.units_warm = vx_units_state_warm(pool_warm);
        q.units_class = vx_units_state_class(pool_warm);
        const double run = v.shape.a_run > 0 ? (double)v.shape.a_run : (double)v.cg;
        const double gather = (double)v.m * (double)v.k * (d->copy_ns[1][0] + d->gather_run_ns / run);
        vx_priced_plan dp;
        dp.plan = gemm_best; /* its tile fields, for the plan's description */
        dp.plan.path = VX_PATH_DOT;
        dp.plan.conv_via_nhwc = 0;
        vx_dot_blocks(d, v.m, v.k, &dp.plan.kc, &dp.plan.mc);
        dp.predicted_ns = vx_cost_dot_best(d, &q, max_threads, &dp.plan.threads) + gather;
        dp.plan.threads_m = 1;
        dp.plan.threads_n = dp.plan.threads;
        insert(out, &n, max, &dp);
    }

    /* NCHW run as NHWC: the input and filter transposed to NHWC and KRSC,
     * the output back, around the NHWC plan, whose in-place patches skip
     * the taps that meet padding and whose tiles may run across images
     * (conv_inplace.c) where the NCHW items gather every tap, zeros
     * included, one image at a time (36x474x4x4 with 11x11 filters, pad 5:
     * 121 taps gathered for at most 16 valid), and where one image's
     * pixels make a GEMM too small for the tiles. oneDNN runs NCHW the same
     * way on AVX-512 (its ncsp wrapper reorders around a blocked kernel).
     * The transposes are shared among the plan's threads, at the measured
     * transposed-copy rate. */
    if (p->layout == VX_NCHW && !v.depthwise && p->groups == 1 && d) {
        vx_conv2d_params q = *p;
        q.layout = VX_NHWC;
        vx_conv_view vq;
        vx_conv_view_of(&q, &vq);
        if (v.filter_packed)
            vx_conv_view_with_packed_filter(&q, &vq);
        vx_priced_plan via;
        if (vx_conv_rank(&q, &vq, isa, max_threads, pool_warm, &via, 1) == 1 && via.plan.path != VX_PATH_CONV_DIRECT) {
            const int t = via.plan.threads > 1 ? via.plan.threads : 1;
            const double rs = (double)p->r * (double)p->s;
            via.plan.conv_via_nhwc = 1;
            /* the threads share out strips of each image's (filter's)
             * matrix (transpose_threads) */
            const int tin = transpose_threads(p->n, p->c, p->h * p->w, t),
                      tf = transpose_threads(p->k, p->c, p->r * p->s, t),
                      tout = transpose_threads(p->n, v.p * v.q, p->k, t);
            /* in place, the filter panels are packed from KCRS itself (or
             * were packed before the call) */
            const int f_t = rs > 1 && !vx_conv_nhwc_in_place(&q, &vq, via.plan.path);
            /* (conv.c, conv_via_nhwc: the input c x hw to hw x c, the
             * filter c x rs to rs x c, the output pq x k to k x pq) */
            const int64_t hw = p->h * p->w, pq = v.p * v.q;
            via.predicted_ns += transpose_ns(d, (double)p->n * (double)p->c * (double)hw, tin, hw, p->c) +
                                (f_t ? transpose_ns(d, (double)p->k * (double)p->c * rs, tf, p->r * p->s, p->c) : 0.0) +
                                transpose_ns(d, (double)p->n * (double)p->k * (double)pq, tout, p->k, pq);
            insert(out, &n, max, &via);
        }
    }

    if (v.depthwise && d && p->r * p->s <= VX_CONV_DIRECT_MAX_TAPS) {
        memset(&pp.plan, 0, sizeof pp.plan);
        pp.plan.isa = isa;
        pp.plan.path = VX_PATH_CONV_DIRECT;
        const int64_t rows = v.m * v.items;
        pp.plan.threads = (int)(rows < max_threads ? rows : max_threads);
        pp.plan.threads_m = pp.plan.threads_n = 1;
        pp.predicted_ns = direct_ns(d, &v, max_threads, pool_warm);
        insert(out, &n, max, &pp);
    }
    return n;
}

/* The map's geometry in one word (a hash: a plan key's word, never a
 * result): sizes, filter, strides, padding, dilation and groups. */
static int64_t map_key(const vx_conv2d_params *p)
{
    const int64_t f[] = { p->h, p->w, p->r, p->s, p->stride_h, p->stride_w, p->pad_h, p->pad_w,
                          p->dilation_h, p->dilation_w, p->groups };
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        h = (h ^ (uint64_t)f[i]) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 29;
    }
    return (int64_t)(h & INT64_MAX);
}

void vx_plan_conv(const vx_conv2d_params *p, const vx_conv_view *view, vx_isa isa, int max_threads, int pool_warm,
                  vx_gemm_plan *out)
{
    const vx_conv_view v = *view;
    if (max_threads < 1)
        max_threads = 1;
    /* The choice depends on the view (its sizes, and the geometry its
     * in-place patches are priced by) and, for an NCHW call that may run
     * as NHWC, on the NHWC view the map's geometry makes: keyed by both,
     * in the key's a_ld and b_ld words, which the cache hashes into one
     * (plancache.h). */
    const vx_plan_key key = { v.m, v.n, v.k,
                              ((int64_t)1 << 50) | (int64_t)p->layout | ((int64_t)v.pointwise << 1) |
                                  ((int64_t)v.depthwise << 2) | ((int64_t)isa << 3) |
                                  ((int64_t)(pool_warm & 31) << 44) | ((int64_t)v.filter_packed << 49) |
                                  ((int64_t)max_threads << 6),
                              v.items, vx_shape_geometry_key(&v.shape), map_key(p), 0 };
    vx_path forced = VX_PATH_AUTO;
    if (vx_plan_apply_override(&v.shape, NULL, &forced)) {
        /* Testing: the best GEMM plan with the override applied, or the
         * direct family when the override names it and it applies; run
         * as NHWC exactly where the override asks (conv_via_nhwc) and that
         * is offered. */
        vx_priced_plan ranked[6];
        const int got = vx_conv_rank(p, &v, isa, max_threads, pool_warm, ranked, 6);
        const int via = vx_plan_override_via();
        *out = ranked[0].plan;
        for (int i = 0; i < got; i++) {
            const int direct = ranked[i].plan.path == VX_PATH_CONV_DIRECT;
            if (direct == (forced == VX_PATH_CONV_DIRECT) && ranked[i].plan.conv_via_nhwc == via) {
                *out = ranked[i].plan;
                break;
            }
        }
        vx_plan_apply_override(&v.shape, out, NULL);
        return;
    }
    if (vx_plan_cache_get(&key, out))
        return;
    vx_priced_plan best;
    vx_conv_rank(p, &v, isa, max_threads, pool_warm, &best, 1);
    *out = best.plan;
    vx_plan_cache_put(&key, out);
}
