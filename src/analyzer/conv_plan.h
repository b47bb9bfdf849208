/* Convolution plans. A convolution runs as an implicit GEMM through the same
 * levels and the same cost model as dyn_gemm (one GEMM per item: a group, or
 * an image and a group), or, when every group holds one input channel
 * (depthwise), through a direct kernel family; the analyzer prices both and
 * the cheaper runs. The geometry here is device-neutral. */
#ifndef VX_ANALYZER_CONV_PLAN_H
#define VX_ANALYZER_CONV_PLAN_H

#include <stdint.h>

#include "analyzer/levels.h"
#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "vortex/vortex.h"

/* The direct family holds a pixel's filter taps in a fixed table. */
enum { VX_CONV_DIRECT_MAX_TAPS = 64 };
/* ... and the NHWC in-place path a filter row's tap columns and a pixel's
 * valid taps. */
enum { VX_CONV_INPLACE_MAX_S = 64, VX_CONV_INPLACE_MAX_TAPS = 256, VX_CONV_INPLACE_MAX_PANELS = 512 };
/* The NHWC in-place path (conv_inplace.c) cuts the output map into pieces
 * (rectangles of pixels that read the same valid taps) and tiles each
 * piece, len pixels wide and `rows` rows tall, in each of imgs images, one
 * of three ways: along its rows (a tile per mr pixels of a row), down its
 * columns (a tile per mr rows of a column) or, with two or more images,
 * across them (a tile per mr images of one pixel); whichever costs least
 * at the tiles' measured rates (rate[m - 1].p per k step for m rows, the
 * tuned L0 rates of the plan's family with A in place). Short tiles cost
 * more per row than full ones: one-row tiles ran at a third of a full
 * tile's rate per row (latency, not the FMA ports, bounds them). Without
 * a rate, a tile of m rows costs like max(m, mr/2) full rows. Measured on
 * Zen 5 (pack_b 5x64, 512 3x3 filters) against all pieces along the rows /
 * all across the images: 8x7x7 0.72x / 0.85x the time, 3x7x7 0.75x /
 * 0.74x, 8x14x14 stride 2 0.79x / 0.99x, 3x256x14x14 0.91x / 0.83x. The
 * analyzer prices the same choice (cost.c, conv_rows_time). Ties keep the
 * earlier way. Pieces two tiles wide or more always go along their rows:
 * stacked tiles read rows a map row or an image apart, which the rates
 * (measured on nearby rows) do not price; a 250x125 piece of a 1x1 stride-2
 * conv (1x49x499x499, 47 filters) priced 0.05 % cheaper down its columns
 * ran 1.46x the time so. For the same reason narrower pieces stack only
 * where stacking prices at most VX_PIECE_STACK_MARGIN of the way along
 * their rows: ResNet-50's c3 3x3 stride-2 layer at batch 1, its 27-pixel
 * interior cut 14 rows tall by a 2 x 1 grid, stacked 14-row tiles down the
 * columns (priced 3 % under 14 + 13 along the rows) whose pixels lay 56 KiB
 * apart, all in one L1 set, and ran 1.3x the time of the same plan with w
 * = 55 (AMD Zen 4). One-pixel edge columns, where stacking replaces
 * one-row tiles, stack still. */
enum { VX_PIECE_ALONG = 0, VX_PIECE_DOWN = 1, VX_PIECE_ACROSS = 2 };
#define VX_PIECE_STACK_MARGIN 0.9
/* Band tiles (conv_inplace.c: a row's pixels of several tap classes in one
 * tile, each tap column over the pixels that read it) replace a class of
 * rows' pieces only where they price at most this fraction of them: priced
 * within 1-4 % of the pieces, they ran 6-12 % slower (ResNet-50's stem,
 * 20x6x23x23 with 9x9 filters; AMD Zen 4), their extra calls' C tiles
 * not priced. */
#define VX_BAND_MARGIN 0.9

/* The order a cell of the NHWC in-place path runs in (conv_inplace.c,
 * run_cell). VX_CELL_ALL_PANELS: all its filter panels packed first and
 * every output row passing over all of them (the input read once, the
 * packed filter again per row). VX_CELL_PANEL_AT_A_TIME: one panel packed
 * at a time and every row passing over it (the filter read once, the
 * input again per panel). VX_CELL_BLOCKS: all panels packed first, the
 * pixels in blocks of *block whose input stays in L2, and each block
 * passing over one panel after another (the input read once, the filter
 * again per block). A re-read is free while what it reads fits `fit`
 * bytes (half the unit's L2, where it stays between passes); beyond, the
 * order that re-reads fewer bytes runs, and *far is what it re-reads.
 * Blocks hold two or more whole output rows of `row` pixels (whole images
 * of `image` where two fit), and only where a row has no edge pixels
 * (`inner` == row: no taps reach into the padding, whose one-pixel pieces
 * stack down the rows or across the images): the 3x3 pad-1 layers of
 * ResNet-50's stage 4 ran 3-9 % slower in blocks, the 1x1 stride-2
 * projections 2-6 % faster (forced in one process). Where such a row is
 * narrower than two tiles of `tile` pixels its pieces stack across the
 * images, and blocks must hold `tile` images or more (blocks of two 7x7
 * images took the stage-5 3x3 stride-2 layer from 9.0 to 10.1 ms). Ties
 * keep the filter's re-reads where it is the smaller operand, else one
 * panel at a time. On an Intel Xeon guest whose reported L3 (480 MiB) read at 15-30
 * GB/s: ResNet-50's 3x3 stride-2 layer of 512 channels at batch 13 (NHWC)
 * had kept all 4.7 MB of a thread's panels "in its L3 share" and re-read
 * them for each of 92 rows (1 x 2 grid 21.7 ms, one thread 18.6, a panel
 * at a time 8.6; oneDNN 11.5); its c4 projection (1x1 stride 2, 512 ->
 * 1024, batch 13) re-read 2.6 MB of input for each of 22 panels (10.4 ms,
 * packed 8.9, in blocks of two images 8.8; NOTES.md, thirty-fifth
 * session). */
enum { VX_CELL_PANEL_AT_A_TIME = 0, VX_CELL_ALL_PANELS = 1, VX_CELL_BLOCKS = 2 };

static inline int vx_conv_inplace_order(double filter_bytes, double pixel_bytes, int64_t pixels, int64_t row,
                                        int64_t inner, int64_t image, int64_t tile, double panels, double fit,
                                        int64_t *block, double *far)
{
    const double input_bytes = pixel_bytes * (double)pixels;
    const double rows = (double)((pixels + row - 1) / row) + 1.0;
    const double one = input_bytes <= fit ? 0.0 : (panels - 1.0) * input_bytes;
    *block = pixels;
    if (filter_bytes <= fit) { /* every row's pass over the panels is free */
        *far = 0;
        return one > 0 || filter_bytes <= input_bytes ? VX_CELL_ALL_PANELS : VX_CELL_PANEL_AT_A_TIME;
    }
    const double all = (rows - 1.0) * filter_bytes;
    int64_t px = pixel_bytes > 0 ? (int64_t)(fit / pixel_bytes) : pixels;
    px = px >= 2 * image ? px / image * image : px / row * row;
    const int64_t least = row < 2 * tile ? tile * image : 2 * row;
    double blocks = all + 1.0; /* none with edge pixels, or where the least block does not fit */
    if (inner == row && px >= least && px < pixels)
        blocks = (double)((pixels + px - 1) / px - 1) * filter_bytes;
    if (one <= blocks && one <= all) {
        *far = one;
        return VX_CELL_PANEL_AT_A_TIME;
    }
    if (blocks < all) {
        *far = blocks;
        *block = px;
        return VX_CELL_BLOCKS;
    }
    *far = all;
    return VX_CELL_ALL_PANELS;
}

/* The input elements under each output pixel that a cell's rows read
 * (NHWC in place): a group's c channels at each of the pixel's stride_h x
 * stride_w input pixels, or only at its taps where the filter is smaller
 * than the stride (a 1x1 stride-2 filter reads a quarter of the map). */
static inline double vx_conv_pixel_elems(int64_t c, int64_t r, int64_t s, int64_t stride_h, int64_t stride_w)
{
    return (double)c * (double)(r < stride_h ? r : stride_h) * (double)(s < stride_w ? s : stride_w);
}

static inline double vx_conv_tile_cost(int64_t m, int64_t mr, const vx_rate *rate)
{
    if (m <= 0)
        return 0.0;
    if (rate && rate[m - 1].p > 0)
        return rate[m - 1].p;
    return (double)(2 * m > mr ? 2 * m : mr);
}

static inline int vx_conv_piece_way(int64_t len, int64_t rows, int64_t imgs, int64_t mr, const vx_rate *rate)
{
    if (len >= 2 * mr)
        return VX_PIECE_ALONG;
    const double full = vx_conv_tile_cost(mr, mr, rate);
    const double along = (double)(imgs * rows) * ((double)(len / mr) * full + vx_conv_tile_cost(len % mr, mr, rate));
    const double down = (double)(imgs * len) * ((double)(rows / mr) * full + vx_conv_tile_cost(rows % mr, mr, rate));
    const double across =
        imgs >= 2 ? (double)(rows * len) * ((double)(imgs / mr) * full + vx_conv_tile_cost(imgs % mr, mr, rate))
                  : -1.0;
    const double stack_below = VX_PIECE_STACK_MARGIN * along;
    if (across >= 0 && across <= stack_below && across < down)
        return VX_PIECE_ACROSS;
    return down <= stack_below ? VX_PIECE_DOWN : VX_PIECE_ALONG;
}

/* An NCHW call run as NHWC (conv_via_nhwc) transposes its input, filter
 * and output with the threads sharing strips of this many columns of
 * each matrix (conv.c, transposes_task; conv_plan.c prices them so). */
enum { VX_CONV_TRANSPOSE_STRIP = 64 };

/* The strips of one matrix of `cols` columns the threads share. */
static inline int64_t vx_conv_transpose_strips(int64_t cols)
{
    return (cols + VX_CONV_TRANSPOSE_STRIP - 1) / VX_CONV_TRANSPOSE_STRIP;
}

/* The parts each strip's rows are cut into: one, unless `count` matrices'
 * strips are fewer than the threads; then enough for every thread, each
 * part at least VX_CONV_TRANSPOSE_STRIP rows. An image's output of 64
 * channels (ResNet-50's stem at batch 1, 12544 x 64 back to NCHW) was one
 * strip, transposed on one thread: a third of the call (NOTES.md,
 * thirty-fifth session). */
static inline int64_t vx_conv_transpose_row_parts(int64_t count, int64_t rows, int64_t cols, int threads)
{
    const int64_t units = count * vx_conv_transpose_strips(cols);
    if (units >= threads)
        return 1;
    const int64_t want = (threads + units - 1) / units, most = rows / VX_CONV_TRANSPOSE_STRIP;
    return want < most ? want : most > 1 ? most : 1;
}

/* Longest contiguous run the NHWC patch gather copies at once (conv_gather.c;
 * the analyzer prices the copy by it). */
enum { VX_CONV_GATHER_RUN_MAX = 64 };

/* How the NCHW patch gather fills a panel row (one tap of one channel over
 * the panel's output pixels; conv_gather.c): 1, one run of the channel
 * shifted by the tap, where the stride is 1 and the output as wide as the
 * input (3x3 pad 1, 5x5 pad 2, ...), so that output pixel oh * w + ow of tap
 * (r, s) reads input float (oh * w + ow) + dy * w + dx; 2, the same lanes
 * gathered by index, at strides over 1 with outputs at most 8 wide; 0,
 * runs along each output row.
 * `h`, `w`: the input's height and width, `q`: the output width. The
 * analyzer prices form 1 without a cost per output row (conv_plan.c). */
enum { VX_CONV_SHIFT_MAX_TAPS = 121 };
static inline int vx_conv_nchw_lanes(int64_t stride_h, int64_t stride_w, int64_t h, int64_t w, int64_t q,
                                     int64_t taps)
{
    /* the gather computes pixel positions in 32-bit lanes */
    if (taps > VX_CONV_SHIFT_MAX_TAPS || h * w >= INT32_MAX / (stride_h > stride_w ? stride_h : stride_w))
        return 0;
    if (stride_h == 1 && stride_w == 1)
        return q == w;
    /* gathered by index only where a row's run is a vector or less: 1x1
     * stride-2 projections onto 14x14 and 28x28 maps ran 1.15-1.22x the
     * time so (NOTES.md, eighteenth session) */
    return q <= 8 ? 2 : 0;
}

/* The implicit-GEMM view of a (valid) convolution.
 *   NHWC: C[pixel][k'] = sum over (r, s, c') of patch[pixel][(r, s, c')] filter[k'][(r, s, c')]
 *         m = n*p*q pixels, n = k/groups, k = r*s*c/groups; items = groups
 *   NCHW: C[k'][pixel] = sum over (c', r, s) of filter[k'][(c', r, s)] patch[(c', r, s)][pixel]
 *         m = k/groups, n = p*q, k = c/groups*r*s; items = images x groups
 * The patch operand (A for NHWC, B for NCHW) is gathered straight into the
 * packed buffer, except for pointwise convolutions (1x1, stride 1, no
 * padding), where it is the input itself, read like any GEMM operand. */
typedef struct {
    int64_t p, q;              /* output height and width */
    int64_t r0, r1, s0, s1;    /* the filter taps some output reads inside the input:
                                  [r0, r1) x [s0, s1); the rest only ever meet padding */
    int64_t cg, kg;            /* input and output channels per group */
    int64_t m, n, k, items;    /* one GEMM item and how many there are */
    int pointwise, depthwise;  /* depthwise: one input channel per group */
    int filter_packed;         /* the filter's panels were packed before the call
                                  (vx_conv2d_filter; vx_conv_view_with_packed_filter) */
    vx_gemm_shape shape;       /* what the GEMM planner sees for one item */
} vx_conv_view;

/* The outputs o in [0, out) whose input position o*st + off lies in
 * [0, in), as [*lo, *hi) (empty: *lo == *hi): along one dimension, which
 * outputs a filter tap at offset off reads real input for. st >= 1 may be
 * as large as INT64_MAX; stride 1 (the common case) divides nothing. */
static inline void vx_conv_inside(int64_t out, int64_t in, int64_t st, int64_t off, int64_t *lo, int64_t *hi)
{
    int64_t l, h;
    if (st == 1) {
        l = off >= 0 ? 0 : -off;
        h = in - off;
    } else {
        l = off >= 0 ? 0 : -off / st + (-off % st != 0);
        h = in - 1 - off < 0 ? 0 : (in - 1 - off) / st + 1;
    }
    h = h < 0 ? 0 : h < out ? h : out;
    *lo = l < h ? l : h;
    *hi = h;
}

/* Whether an NHWC plan with this path reads the patches in place
 * (conv_inplace.c; vx_cpu_conv2d dispatches by it): not pointwise, not
 * gathered, not direct, not the one-group dot form. An NCHW call run by
 * such a plan (conv_via_nhwc) packs its filter panels straight from the
 * KCRS filter (vx_pack_b_kcrs): nothing of the filter is transposed first.
 * v: the NHWC view. */
static inline int vx_conv_nhwc_in_place(const vx_conv2d_params *p, const vx_conv_view *v, vx_path path)
{
    return !v->pointwise && path != VX_PATH_PACKED && path != VX_PATH_CONV_DIRECT &&
           !(path == VX_PATH_DOT && p->groups == 1);
}

/* Fill *v for valid parameters (checked by the caller). */
void vx_conv_view_of(const vx_conv2d_params *p, vx_conv_view *v);

/* Mark *v as a call whose filter comes packed (dyn_conv2d_packed): the
 * NHWC GEMM's B is then the filter's column panels, which pack-B plans
 * read instead of packing (levels.h, b_prepacked); the NCHW GEMM's A is
 * the filter's row panels, which packed plans read instead of copying
 * (a_prepacked). */
static inline void vx_conv_view_with_packed_filter(const vx_conv2d_params *p, vx_conv_view *v)
{
    v->filter_packed = 1;
    v->shape.b_prepacked = p->layout == VX_NHWC;
    v->shape.a_prepacked = p->layout == VX_NCHW;
}

/* Which panels of a packed filter a plan reads (conv_filter.h):
 * VX_CONV_PANELS_B, plan->nr wide, on the NHWC in-place path
 * (conv_inplace.c) and the pack-B GEMM path of a pointwise NHWC call
 * (gemm.c), each also under an NCHW plan run as NHWC; VX_CONV_PANELS_A,
 * plan->mr rows, on an NCHW call's own packed GEMM path (gemm.c,
 * run_packed); else none (the plan reads the filter as the plain call
 * does). Where panels are read the analyzer priced the plan without the
 * filter's copy (cost.c, b_load_ns and cell_rates). p and v: the call's
 * own parameters and view. */
enum { VX_CONV_PANELS_NONE = 0, VX_CONV_PANELS_B = 1, VX_CONV_PANELS_A = 2 };
static inline int vx_conv_panels_read(const vx_conv2d_params *p, const vx_conv_view *v, const vx_gemm_plan *plan)
{
    if (!v->filter_packed || plan->path == VX_PATH_CONV_DIRECT)
        return VX_CONV_PANELS_NONE;
    if (p->layout == VX_NCHW && !plan->conv_via_nhwc)
        return plan->path == VX_PATH_PACKED ? VX_CONV_PANELS_A : VX_CONV_PANELS_NONE;
    /* an NCHW view's pointwise flag is the NHWC one's: the same test */
    if (v->pointwise)
        return plan->path == VX_PATH_PACK_B ? VX_CONV_PANELS_B : VX_CONV_PANELS_NONE;
    return vx_conv_nhwc_in_place(p, v, plan->path) ? VX_CONV_PANELS_B : VX_CONV_PANELS_NONE;
}

/* The plan for p (v: its view, vx_conv_view_of): a GEMM plan run on every item (threads > 1 with a 1x1
 * grid means the items are shared among the threads, one thread each), or
 * path VX_PATH_CONV_DIRECT. Cached like GEMM plans. Never fails. */
void vx_plan_conv(const vx_conv2d_params *p, const vx_conv_view *v, vx_isa isa, int max_threads, int pool_warm,
                  vx_gemm_plan *out);

/* The priced alternatives for p, cheapest first (at most max written):
 * each item split over the threads, items shared among the threads, and the
 * direct family where it applies. Returns how many were written. */
int vx_conv_rank(const vx_conv2d_params *p, const vx_conv_view *v, vx_isa isa, int max_threads, int pool_warm,
                 vx_priced_plan *out, int max);

#endif
