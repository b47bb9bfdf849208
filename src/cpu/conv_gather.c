/* L1 load stage of the implicit GEMM: input patches (im2col on the fly)
 * gathered straight into the packed CacheBuffer, in the layouts the
 * micro-kernels read (cpu/pack.h). No im2col matrix is ever built: each
 * call fills one kc-deep block of one panel set. */
#include <immintrin.h>
#include <string.h>

#include "cpu/conv.h"
#include "cpu/pack.h"

enum { MAX_PANEL_ROWS = 64 };

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Runs here are a few to a few dozen floats: plain loops, not libc calls
 * (a call per run cost more than the run itself). */
static inline void zero_run(float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = 0.0f;
}

static inline void copy_run(float *restrict d, const float *restrict s, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = s[i];
}

/* NHWC, operand A: row = output pixel (image, oh, ow), column = (r, s, c')
 * with c' fastest. Rows go to panels of `mr` rows stored k-major
 * (vx_pack_a's layout); each run of columns is transposed in 8 x 8 register
 * blocks (vx_pack_rows_t).
 *
 * A run is what a row reads contiguously. With one group and dilation 1 the
 * taps (r, 0..s-1) of a row are s * c adjacent floats of one input row, so
 * a run goes along the whole filter row (cut at RUN_MAX floats); otherwise
 * it is one tap's c/groups channels. For few channels this is what matters:
 * with c = 1 a tap is one float, and one tap at a time cost ~13 ns per
 * element (a 5x5 filter on 161x700, 2 threads on AMD Zen 1: gather 73 % of
 * a 6.2 ms packed run). A row's run that reaches into the padding is built
 * in a small buffer, zeros where the taps fall outside. */
enum { RUN_MAX = VX_CONV_GATHER_RUN_MAX };

static void pack_nhwc(const vx_gather *self, int64_t item, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                      int mr, float *out)
{
    const vx_conv_patches *X = (const vx_conv_patches *)self;
    const int64_t pq = X->p * X->q, img_floats = X->h * X->w * X->c;
    const int row_runs = X->groups == 1 && X->dw == 1;
    const int64_t span = X->s * X->cg; /* the columns of one filter row r */
    const float *base = X->in + item * X->cg;
    float edge[MAX_PANEL_ROWS][RUN_MAX];
    /* the first row's pixel, then stepped row by row (no divisions per row:
     * ~40 cycles each on AMD Zen 1, against a few per gathered float) */
    int64_t im = r0 / pq, oh = (r0 % pq) / X->q, ow = (r0 % pq) % X->q;
    for (int64_t pr = 0; pr < rows; pr += mr) {
        const int nrow = (int)min64(mr, rows - pr);
        float *dst = out + pr * cols;
        int64_t ih0[MAX_PANEL_ROWS], iw0[MAX_PANEL_ROWS];
        const float *img[MAX_PANEL_ROWS], *src[MAX_PANEL_ROWS];
        for (int i = 0; i < nrow; i++) {
            ih0[i] = oh * X->sh - X->ph;
            iw0[i] = ow * X->sw - X->pw;
            img[i] = base + im * img_floats;
            if (++ow == X->q) {
                ow = 0;
                if (++oh == X->p) {
                    oh = 0;
                    ++im;
                }
            }
        }
        /* column c0 + done is (r, off) with off = s * cg + c' */
        const int64_t rs0 = c0 / X->cg;
        int64_t r = rs0 / X->s, off = (rs0 % X->s) * X->cg + c0 % X->cg;
        for (int64_t done = 0; done < cols;) {
            const int64_t run_end = row_runs ? span : (off / X->cg + 1) * X->cg; /* row or tap */
            int64_t len = min64(run_end - off, cols - done);
            if (row_runs && len > RUN_MAX)
                len = RUN_MAX;
            const int64_t s0 = off / X->cg, c = off % X->cg;
            const int64_t s1 = (off + len - 1) / X->cg; /* the run's last tap */
            for (int i = 0; i < nrow; i++) {
                const int64_t ih = ih0[i] + r * X->dh, iw = iw0[i] + s0 * X->dw, iw1 = iw0[i] + s1 * X->dw;
                if (ih < 0 || ih >= X->h) {
                    src[i] = NULL;
                } else if (iw >= 0 && iw1 < X->w) {
                    src[i] = img[i] + (ih * X->w + iw) * X->c + c;
                } else { /* part of the run is padding (row runs only: a tap's run is all in or out) */
                    if (!row_runs || iw1 < 0 || iw >= X->w) {
                        src[i] = NULL;
                        continue;
                    }
                    const float *in_row = img[i] + ih * X->w * X->c;
                    for (int64_t t = 0; t < len; t++) {
                        const int64_t tap = (off + t) / X->cg, x = iw0[i] + tap;
                        edge[i][t] = x >= 0 && x < X->w ? in_row[x * X->c + (off + t) % X->cg] : 0.0f;
                    }
                    src[i] = edge[i];
                }
            }
            if (mr == 1) { /* row-major patches (the dot form's A): plain copies */
                if (src[0])
                    copy_run(dst + done, src[0], len);
                else
                    zero_run(dst + done, len);
            } else {
                vx_pack_rows_t(src, nrow, len, dst + done * nrow, nrow);
            }
            done += len;
            off += len;
            if (off == span) {
                off = 0;
                ++r;
            }
        }
    }
}

/* NCHW, operand B: row = (c', r, s) with s fastest, column = output pixel
 * (oh, ow) of one image, stored in panels of nr columns (vx_pack_b's
 * layout: column j of row p at out[(j / nr) * nr * rows + p * nr + j % nr],
 * zero padded to a whole panel). Each row is filled along whole runs of
 * output pixels (a row of the output at a time), cut only where a panel
 * ends; with stride 1 a run is one clipped copy of an input row. */
typedef struct {
    float *row;          /* this row's slot in panel 0: out + p * nr */
    int64_t step, nr;    /* floats from one panel to the next: nr * rows */
    int64_t lane;        /* the cursor: next column's lane in its panel */
} panel_row;

/* The next n columns of the row (the cursor moves on; columns are filled in
 * order, so no division is ever needed): zeros (src NULL) or src[t * st]. */
static void put_run(panel_row *pr, int64_t n, const float *src, int64_t st)
{
    while (n > 0) {
        const int64_t piece = min64(n, pr->nr - pr->lane);
        float *d = pr->row + pr->lane;
        if (!src)
            zero_run(d, piece);
        else if (st == 1)
            copy_run(d, src, piece);
        else
            for (int64_t t = 0; t < piece; t++)
                d[t] = src[t * st];
        if (src)
            src += piece * st;
        n -= piece;
        pr->lane += piece;
        if (pr->lane == pr->nr) {
            pr->lane = 0;
            pr->row += pr->step;
        }
    }
}

/* NCHW at stride 1 with the output as wide as the input (a "same" width:
 * 3x3 pad 1, 5x5 pad 2, ...): output pixel j = oh * w + ow of tap (r, s)
 * reads input float j + dy * w + dx of its channel, so a panel's row is one
 * run of the channel shifted by the tap, the pixels whose tap falls in the
 * padding masked to zero. Eight columns a vector, masked loads (no lane
 * outside the mask is read). The masks, per tap and vector, are made once
 * per panel, for the taps the call's rows use. A 7x7 map (49 columns, one
 * 64-wide panel) was filled a tap at a time along each of its 7 output
 * rows, 3 runs a row: 512x7x7 with 512 3x3 filters spent 220 of 840 us
 * there on 2 AMD Zen 5 cores (NOTES.md, eighteenth session). */
enum { SHIFT_MAX_TAPS = VX_CONV_SHIFT_MAX_TAPS, SHIFT_MAX_VECS = 8 };

/* 1: shifted runs; 2: the same lanes gathered by index (strided taps);
 * 0: neither (the runs below). */
static int lane_form(const vx_conv_patches *X, int nr)
{
    if (nr % 8 != 0 || nr / 8 > SHIFT_MAX_VECS)
        return 0;
    return vx_conv_nchw_lanes(X->sh, X->sw, X->h, X->w, X->q, X->r * X->s);
}

/* All ones in the lanes of x with 0 <= x < n. */
__attribute__((target("avx2"))) static inline __m256i lanes_within(__m256i x, int64_t n)
{
    return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), x),
                               _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)n), x));
}

/* Also for strides over 1 (form 2): lane t of the panel reads input
 * oh*sh*w + ow*sw + dy*w + dx, gathered by index under the same masks. */
__attribute__((target("avx2"))) static void pack_nchw_lanes(const vx_conv_patches *X, const float *base,
                                                             int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                                                             int nr, int form, float *out)
{
    const int64_t hw = X->h * X->w, rs_n = X->r * X->s, vecs = nr / 8;
    __m256i mask[SHIFT_MAX_TAPS][SHIFT_MAX_VECS];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t j0 = 0; j0 < cols; j0 += nr) {
        float *panel = out + j0 * rows; /* panel j0 / nr: nr * rows floats each */
        const int64_t live_vecs = cols - j0 >= nr ? vecs : (cols - j0 + 7) / 8;
        /* each lane's output pixel: column c0 + j0 + t, t < cols - j0 */
        /* each lane's input row and column for tap (0, 0) without padding
         * (oh * sh, ow * sw), and its offset in the channel */
        __m256i ih0[SHIFT_MAX_VECS], iw0[SHIFT_MAX_VECS], live[SHIFT_MAX_VECS], at[SHIFT_MAX_VECS];
        for (int64_t v = 0; v < vecs; v++) {
            int32_t h8[8], w8[8];
            for (int l = 0; l < 8; l++) {
                const int64_t col = c0 + j0 + v * 8 + l;
                h8[l] = (int32_t)(col / X->q * X->sh);
                w8[l] = (int32_t)(col % X->q * X->sw);
            }
            ih0[v] = _mm256_loadu_si256((const __m256i *)h8);
            iw0[v] = _mm256_loadu_si256((const __m256i *)w8);
            live[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(cols - j0 - v * 8)), lane);
            at[v] = _mm256_add_epi32(_mm256_mullo_epi32(ih0[v], _mm256_set1_epi32((int32_t)X->w)), iw0[v]);
        }
        int64_t c = r0 / rs_n, rs = r0 % rs_n;
        for (int64_t pp = 0; pp < rows; pp++) {
            const int64_t dy = (rs / X->s) * X->dh - X->ph, dx = (rs % X->s) * X->dw - X->pw;
            if (pp < rs_n) /* the rows go through the taps in turn: each tap's masks once */
                for (int64_t v = 0; v < vecs; v++) {
                    const __m256i in_h = lanes_within(_mm256_add_epi32(ih0[v], _mm256_set1_epi32((int32_t)dy)), X->h);
                    const __m256i in_w = lanes_within(_mm256_add_epi32(iw0[v], _mm256_set1_epi32((int32_t)dx)), X->w);
                    mask[rs][v] = _mm256_and_si256(_mm256_and_si256(in_h, in_w), live[v]);
                }
            /* the tap's shift within the channel; lanes whose tap falls
             * outside it are masked, so only in-channel addresses are read */
            const float *src = base + c * hw + dy * X->w + dx;
            float *dst = panel + pp * nr;
            if (form == 1)
                for (int64_t v = 0; v < live_vecs; v++)
                    _mm256_storeu_ps(dst + v * 8, _mm256_maskload_ps(src + c0 + j0 + v * 8, mask[rs][v]));
            else
                for (int64_t v = 0; v < live_vecs; v++)
                    _mm256_storeu_ps(dst + v * 8, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), src, at[v],
                                                                           _mm256_castsi256_ps(mask[rs][v]), 4));
            for (int64_t v = live_vecs; v < vecs; v++) /* past the last column: the panel's zero padding */
                _mm256_storeu_ps(dst + v * 8, _mm256_setzero_ps());
            if (++rs == rs_n) {
                rs = 0;
                ++c;
            }
        }
    }
}

static void pack_nchw(const vx_gather *self, int64_t item, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                      int nr, float *out)
{
    const vx_conv_patches *X = (const vx_conv_patches *)self;
    const int64_t hw = X->h * X->w, rs_n = X->r * X->s;
    const int64_t im = item / X->groups, g = item % X->groups;
    const float *base = X->in + (im * X->c + g * X->cg) * hw;
    const int form = lane_form(X, nr);
    if (form) {
        pack_nchw_lanes(X, base, r0, rows, c0, cols, nr, form, out);
        return;
    }
    const int64_t oh0 = c0 / X->q, ow0 = c0 % X->q, padded = (cols + nr - 1) / nr * nr;
    int64_t c = r0 / rs_n, rs = r0 % rs_n;
    int64_t r = rs / X->s, s = rs % X->s;
    for (int64_t pp = 0; pp < rows; pp++) {
        panel_row pr = { out + pp * nr, (int64_t)nr * rows, nr, 0 };
        const float *chan = base + c * hw;
        const int64_t dy = r * X->dh - X->ph, dx = s * X->dw - X->pw;
        for (int64_t j = 0, oh = oh0, ow = ow0; j < cols; oh++, ow = 0) {
            const int64_t run = min64(X->q - ow, cols - j);
            const int64_t ih = oh * X->sh + dy;
            if (ih < 0 || ih >= X->h) {
                put_run(&pr, run, NULL, 0);
            } else {
                /* output columns t with 0 <= iw + t*sw < w: [lo, hi) */
                const int64_t iw = ow * X->sw + dx;
                int64_t lo, hi;
                vx_conv_inside(run, X->w, X->sw, iw, &lo, &hi);
                const float *row = chan + ih * X->w;
                put_run(&pr, lo, NULL, 0);
                if (hi > lo)
                    put_run(&pr, hi - lo, row + iw + lo * X->sw, X->sw);
                put_run(&pr, run - hi, NULL, 0);
            }
            j += run;
        }
        put_run(&pr, padded - cols, NULL, 0);
        if (++s == X->s) {
            s = 0;
            if (++r == X->r) {
                r = 0;
                ++c;
            }
        }
    }
}

void vx_conv_patches_init(vx_conv_patches *x, const vx_conv2d_params *p, const vx_conv_view *v, const float *in)
{
    x->base.pack = p->layout == VX_NHWC ? pack_nhwc : pack_nchw;
    x->in = in;
    x->c = p->c;
    x->h = p->h;
    x->w = p->w;
    x->cg = v->cg;
    x->groups = p->groups;
    x->r = p->r;
    x->s = p->s;
    x->p = v->p;
    x->q = v->q;
    x->sh = p->stride_h;
    x->sw = p->stride_w;
    x->ph = p->pad_h;
    x->pw = p->pad_w;
    x->dh = p->dilation_h;
    x->dw = p->dilation_w;
}
