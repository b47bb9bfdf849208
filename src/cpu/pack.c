#include "cpu/pack.h"
#include "cpu/isa.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* In-register 8 x 8 transpose (AVX2, which every CPU Vortex runs on has):
 * r[i] holds row i on entry and column i on return. 24 shuffles instead of
 * 64 scalar strided stores. */
__attribute__((target("avx2")))
static inline void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* The first n (< 8) floats of a register bounce: a plain loop, since a
 * variable-length memcpy is a library call per row. */
static inline void copy_lanes(float *dst, const float *t, int n)
{
    for (int j = 0; j < n; j++)
        dst[j] = t[j];
}

/* dst[p*ld_dst + j] = src[j*ld_src + p] for j < nj (1..8), p < 8: an 8 x 8
 * block transposed, with only nj lanes of each output row written. */
__attribute__((target("avx2")))
static void transpose_block(const float *src, int64_t ld_src, int nj, float *dst, int64_t ld_dst)
{
    __m256 r[8];
    for (int j = 0; j < 8; j++)
        r[j] = j < nj ? _mm256_loadu_ps(src + j * ld_src) : _mm256_setzero_ps();
    transpose8(r);
    if (nj == 8) {
        for (int p = 0; p < 8; p++)
            _mm256_storeu_ps(dst + p * ld_dst, r[p]);
    } else if (ld_dst == nj && nj >= 4) {
        /* Output rows are adjacent: full stores in order. Store p spills
         * 8 - nj floats into rows p+1 (and p+2 when nj < 4, hence nj >= 4:
         * then every spill ends inside this block and is overwritten by a
         * later store); only the last row goes through a bounce, so nothing
         * past the block is touched. */
        float t[8];
        for (int p = 0; p < 7; p++)
            _mm256_storeu_ps(dst + p * ld_dst, r[p]);
        _mm256_storeu_ps(t, r[7]);
        copy_lanes(dst + 7 * ld_dst, t, nj);
    } else {
        /* nj lanes per row through a bounce: vmaskmovps stores are
         * microcoded on AMD Zen (several times a plain store) */
        float t[8];
        for (int p = 0; p < 8; p++) {
            _mm256_storeu_ps(t, r[p]);
            copy_lanes(dst + p * ld_dst, t, nj);
        }
    }
}

/* dst[p*ld_dst + j] = src[j*ld_src + p] for j, p < 16: a whole 16 x 16
 * block in AVX-512 registers, 64 shuffles for 256 floats where four 8 x 8
 * AVX2 blocks take 96, and full-line loads and stores. Transposing a
 * 512 x 4608 filter into 64-wide panels (an NHWC 3x3 convolution's B):
 * 0.100 ns per float with 8 x 8 blocks on AMD Zen 5, 0.069 with these
 * (0.080 and 0.062 with the filter in L2); NT GEMMs of 49-98 rows over
 * such a filter ran 6 % faster. Building the lanes by masked 128-bit
 * broadcast loads instead of the cross-lane shuffles ran slower (0.101). */
__attribute__((target("avx512f"), always_inline))
static inline void transpose16_to(const float *src, int64_t ld_src, float *dst, int64_t ld_dst, const int64_t *row)
{
    __m512 r[16], t[16];
    for (int j = 0; j < 16; j++)
        r[j] = _mm512_loadu_ps(src + j * ld_src);
    /* within each 128-bit lane: 4 x 4 blocks transposed (t[4g + c], lane L,
     * holds column 4L + c of rows 4g..4g+3) */
    for (int g = 0; g < 16; g += 4) {
        const __m512 a = _mm512_unpacklo_ps(r[g], r[g + 1]), b = _mm512_unpackhi_ps(r[g], r[g + 1]);
        const __m512 c = _mm512_unpacklo_ps(r[g + 2], r[g + 3]), d = _mm512_unpackhi_ps(r[g + 2], r[g + 3]);
        t[g + 0] = _mm512_shuffle_ps(a, c, 0x44);
        t[g + 1] = _mm512_shuffle_ps(a, c, 0xEE);
        t[g + 2] = _mm512_shuffle_ps(b, d, 0x44);
        t[g + 3] = _mm512_shuffle_ps(b, d, 0xEE);
    }
    /* across lanes: output row 4L + c takes lane L of t[c], t[4 + c],
     * t[8 + c], t[12 + c] */
    for (int c = 0; c < 4; c++) {
        const __m512 s0 = _mm512_shuffle_f32x4(t[c], t[4 + c], 0x88), s1 = _mm512_shuffle_f32x4(t[c], t[4 + c], 0xDD);
        const __m512 s2 = _mm512_shuffle_f32x4(t[8 + c], t[12 + c], 0x88);
        const __m512 s3 = _mm512_shuffle_f32x4(t[8 + c], t[12 + c], 0xDD);
        /* output row p goes to dst's row p, or row[p] where a map is given */
        _mm512_storeu_ps(dst + (row ? row[0 + c] : 0 + c) * ld_dst, _mm512_shuffle_f32x4(s0, s2, 0x88));
        _mm512_storeu_ps(dst + (row ? row[4 + c] : 4 + c) * ld_dst, _mm512_shuffle_f32x4(s1, s3, 0x88));
        _mm512_storeu_ps(dst + (row ? row[8 + c] : 8 + c) * ld_dst, _mm512_shuffle_f32x4(s0, s2, 0xDD));
        _mm512_storeu_ps(dst + (row ? row[12 + c] : 12 + c) * ld_dst, _mm512_shuffle_f32x4(s1, s3, 0xDD));
    }
}

__attribute__((target("avx512f")))
static void transpose16_block(const float *src, int64_t ld_src, float *dst, int64_t ld_dst)
{
    transpose16_to(src, ld_src, dst, ld_dst, NULL);
}

__attribute__((target("avx512f")))
static void transpose16_rows(const float *src, int64_t ld_src, float *dst, int64_t ld_dst, const int64_t *row)
{
    transpose16_to(src, ld_src, dst, ld_dst, row);
}

void vx_pack_a(int64_t mb, int64_t kb, const float *a, int64_t rs, int64_t cs, int mr, float *out)
{
    for (int64_t r0 = 0; r0 < mb; r0 += mr) {
        const int64_t rows = mb - r0 < mr ? mb - r0 : mr;
        const float *src = a + r0 * rs;
        float *dst = out + r0 * kb;
        if (cs == 1) {
            /* Row-major source: 8 (rows) x 8 (k) blocks transposed in
             * registers, the k tail by scalars. */
            int64_t p = 0;
            for (; p + 8 <= kb; p += 8)
                for (int64_t i = 0; i < rows; i += 8)
                    transpose_block(src + i * rs + p, rs, (int)(rows - i < 8 ? rows - i : 8),
                                    dst + p * rows + i, rows);
            for (int64_t i = 0; i < rows; i++) {
                const float *row = src + i * rs;
                for (int64_t q = p; q < kb; q++)
                    dst[q * rows + i] = row[q];
            }
        } else {
            /* Column-contiguous source (rs == 1 typically): copy runs of rows. */
            for (int64_t p = 0; p < kb; p++) {
                const float *col = src + p * cs;
                float *d = dst + p * rows;
                for (int64_t i = 0; i < rows; i++)
                    d[i] = col[i * rs];
            }
        }
    }
}

void vx_copy_transposed(int64_t rows, int64_t cols, const float *src, int64_t ld_src, float *dst, int64_t ld_dst)
{
    /* 8 x 8 blocks in registers, a column of them at a time: the 8 rows of
     * dst they write are filled left to right, 8 sequential streams. Rows
     * of dst a power of two apart (512 or 1024 channels) share cache sets:
     * walking along src's rows instead, the blocks wrote 32 bytes into each
     * of a few hundred such rows before returning to them, every store missed
     * L1, and 1024 x 196 took 0.65 ns per float against 0.07 for 1000 x 196. */
    const int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    /* ... unless it is src's rows that share sets and dst's do not (49 x
     * 2048: 0.20 ns per float this way, 0.08 along src's rows) */
    const int64_t alias = 2048 / (int64_t)sizeof(float);
    if (ld_src % alias == 0 && ld_dst % alias != 0) {
        for (int64_t i = 0; i < r8; i += 8) {
            for (int64_t j = 0; j < c8; j += 8)
                transpose_block(src + i * ld_src + j, ld_src, 8, dst + j * ld_dst + i, ld_dst);
            for (int64_t j = c8; j < cols; j++)
                for (int64_t ii = i; ii < i + 8; ii++)
                    dst[j * ld_dst + ii] = src[ii * ld_src + j];
        }
        for (int64_t i = r8; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                dst[j * ld_dst + i] = src[i * ld_src + j];
        return;
    }
    for (int64_t j = 0; j < c8; j += 8) {
        for (int64_t i = 0; i < r8; i += 8)
            transpose_block(src + i * ld_src + j, ld_src, 8, dst + j * ld_dst + i, ld_dst);
        for (int64_t jj = j; jj < j + 8; jj++)
            for (int64_t i = r8; i < rows; i++)
                dst[jj * ld_dst + i] = src[i * ld_src + jj];
    }
    for (int64_t j = c8; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            dst[j * ld_dst + i] = src[i * ld_src + j];
}

/* The first `lanes` (0..3) floats at p, zeros above. */
__attribute__((target("avx2")))
static inline __m128 load_part4(const float *p, int64_t lanes)
{
    /* two floats at once: _mm_loadu_si64 takes any alignment (_mm_load_sd
     * reads through a double pointer, which UBSan rejects unaligned) */
    if (lanes == 3)
        return _mm_movelh_ps(_mm_castsi128_ps(_mm_loadu_si64(p)), _mm_load_ss(p + 2));
    if (lanes == 2)
        return _mm_castsi128_ps(_mm_loadu_si64(p));
    return lanes == 1 ? _mm_load_ss(p) : _mm_setzero_ps();
}

/* The first `lanes` (1..7) floats at p, zeros above: exact-width loads
 * (vmaskmovps loads stalled the copy on AMD Zen 1, ~25 cycles a row). */
__attribute__((target("avx2")))
static inline __m256 load_part(const float *p, int64_t lanes)
{
    if (lanes >= 4)
        return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), load_part4(p + 4, lanes - 4), 1);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(load_part4(p, lanes)), _mm_setzero_ps(), 1);
}

/* `rows` rows of a B panel (row p from src + p * rs, to dst + p * nr): the
 * `cols` (1..nr) floats, then zeros up to nr. Vector moves: a memcpy and a
 * memset per row were two library calls for a few dozen bytes, ~8 % of a
 * 30x5x9 call on AMD Zen 1. */
__attribute__((target("avx2")))
static void copy_rows_padded(float *dst, const float *src, int64_t rs, int64_t rows, int64_t cols, int nr)
{
    if (nr % 8 != 0) { /* every generated tile is a multiple of 8 wide; kept for safety */
        for (int64_t p = 0; p < rows; p++) {
            memcpy(dst + p * nr, src + p * rs, (size_t)cols * sizeof(float));
            memset(dst + p * nr + cols, 0, (size_t)(nr - cols) * sizeof(float));
        }
        return;
    }
    const int64_t whole = cols / 8 * 8;
    for (int64_t p = 0; p < rows; p++, dst += nr, src += rs) {
        int64_t j = 0;
        for (; j < whole; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_loadu_ps(src + j));
        if (j < cols) {
            _mm256_storeu_ps(dst + j, load_part(src + j, cols - j));
            j += 8;
        }
        for (; j < nr; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_setzero_ps());
    }
}

/* Rows of B taken together by the unit-stride copy: each block of rows is
 * read left to right across every panel, so B streams row by row (a
 * panel-at-a-time walk would touch a new page per row per panel when rows lie
 * a page or more apart: 5x slower from DRAM), and each panel receives
 * PACK_B_ROWS * nr contiguous floats. */
#define PACK_B_ROWS 8

static void pack_b_rows(int64_t kb, int64_t nb, const float *b, int64_t rs, int nr, float *out)
{
    for (int64_t p0 = 0; p0 < kb; p0 += PACK_B_ROWS) {
        const int64_t pe = kb - p0 < PACK_B_ROWS ? kb : p0 + PACK_B_ROWS;
        for (int64_t j0 = 0; j0 < nb; j0 += nr) {
            const int64_t cols = nb - j0 < nr ? nb - j0 : nr;
            float *dst = out + j0 * kb;
            copy_rows_padded(dst + p0 * nr, b + p0 * rs + j0, rs, pe - p0, cols, nr);
        }
    }
}

void vx_pack_b(int64_t kb, int64_t nb, const float *b, int64_t rs, int64_t cs, int nr, float *out)
{
    if (cs == 1 && nb > nr) {
        pack_b_rows(kb, nb, b, rs, nr, out);
        return;
    }
    for (int64_t j0 = 0; j0 < nb; j0 += nr) {
        const int64_t cols = nb - j0 < nr ? nb - j0 : nr;
        float *dst = out + j0 * kb;
        const float *src = b + j0 * cs;
        if (cs == 1) {
            copy_rows_padded(dst, src, rs, kb, cols, nr);
        } else {
            if (cols < nr)
                for (int64_t p = 0; p < kb; p++)
                    memset(dst + p * nr + cols, 0, (size_t)(nr - cols) * sizeof(float));
            int64_t j = 0;
            if (rs == 1 && vx_active_isa() == VX_ISA_AVX512) {
                /* Transposed B (B[p][j] = b[j*cs + p]): 16 x 16 blocks */
                for (; j + 16 <= cols; j += 16) {
                    int64_t p = 0;
                    for (; p + 16 <= kb; p += 16)
                        transpose16_block(src + j * cs + p, cs, dst + p * nr + j, nr);
                    for (; p < kb; p++)
                        for (int64_t jj = j; jj < j + 16; jj++)
                            dst[p * nr + jj] = src[jj * cs + p];
                }
            }
            if (rs == 1) {
                /* Transposed B, the rest (AVX2): 8 x 8 blocks */
                for (; j + 8 <= cols; j += 8) {
                    int64_t p = 0;
                    for (; p + 8 <= kb; p += 8)
                        transpose_block(src + j * cs + p, cs, 8, dst + p * nr + j, nr);
                    for (; p < kb; p++)
                        for (int64_t jj = j; jj < j + 8; jj++)
                            dst[p * nr + jj] = src[jj * cs + p];
                }
            }
            for (; j < cols; j++) {
                const float *col = src + j * cs;
                for (int64_t p = 0; p < kb; p++)
                    dst[p * nr + j] = col[p * rs];
            }
        }
    }
}

__attribute__((target("avx2")))
void vx_pack_rows_t(const float *const *src, int nrows, int64_t len, float *dst, int64_t ld)
{
    for (int i0 = 0; i0 < nrows; i0 += 8) {
        const int nj = nrows - i0 < 8 ? nrows - i0 : 8;
        int64_t q = 0;
        for (; q + 8 <= len; q += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; j++)
                r[j] = j < nj && src[i0 + j] ? _mm256_loadu_ps(src[i0 + j] + q) : _mm256_setzero_ps();
            transpose8(r);
            /* Plain stores: masked ones are microcoded on AMD Zen (several
             * times slower). A partial block (nj < 8) goes through a
             * register-sized bounce so nothing past its nj lanes is touched. */
            if (nj == 8) {
                for (int p = 0; p < 8; p++)
                    _mm256_storeu_ps(dst + (q + p) * ld + i0, r[p]);
            } else if (ld == nj && nj >= 4) {
                /* A whole panel of 4..7 rows (a 7-row tile's A): its rows
                 * are adjacent in dst, so full stores in order, each one's
                 * spill overwritten by the next; only the last goes through
                 * the bounce (as transpose_block). The bounce for every row
                 * made NHWC 3x3 convs spend a fifth of their time here. */
                float t[8];
                for (int p = 0; p < 7; p++)
                    _mm256_storeu_ps(dst + (q + p) * ld + i0, r[p]);
                _mm256_storeu_ps(t, r[7]);
                copy_lanes(dst + (q + 7) * ld + i0, t, nj);
            } else {
                float t[8];
                for (int p = 0; p < 8; p++) {
                    _mm256_storeu_ps(t, r[p]);
                    copy_lanes(dst + (q + p) * ld + i0, t, nj);
                }
            }
        }
        for (int j = 0; j < nj; j++) {
            const float *row = src[i0 + j];
            for (int64_t t = q; t < len; t++)
                dst[t * ld + i0 + j] = row ? row[t] : 0.0f;
        }
    }
}

enum { SLOTS = 4 }; /* 0: GEMM packing, 1: conv filters, 2: GEMV vector copies, 3: NCHW as NHWC */

typedef struct {
    float *buf[SLOTS];
    size_t cap[SLOTS];
} scratch;

static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    scratch *s = p;
    for (int i = 0; i < SLOTS; i++)
        free(s->buf[i]);
    free(s);
}

static void make_key(void)
{
    pthread_key_create(&g_key, scratch_free);
}

float *vx_scratch(int slot, size_t floats)
{
    pthread_once(&g_once, make_key);
    scratch *s = pthread_getspecific(g_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(g_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < floats) {
        free(s->buf[slot]);
        s->buf[slot] = NULL;
        s->cap[slot] = 0;
        size_t bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0)
            return NULL;
        s->buf[slot] = p;
        s->cap[slot] = floats;
    }
    return s->buf[slot];
}

/* 8 x 8: dst[row[p]*ld_dst + j] = src[j*ld_src + p] */
__attribute__((target("avx2")))
static void transpose8_rows(const float *src, int64_t ld_src, float *dst, int64_t ld_dst, const int64_t *row)
{
    __m256 r[8];
    for (int j = 0; j < 8; j++)
        r[j] = _mm256_loadu_ps(src + j * ld_src);
    transpose8(r);
    for (int p = 0; p < 8; p++)
        _mm256_storeu_ps(dst + row[p] * ld_dst, r[p]);
}

/* The rows of the packed panel that the reduction indices kk .. kk + n - 1
 * of a KCRS filter row map to: kk = c * rs + t -> t * cg + c. */
static inline void kcrs_rows(int64_t kk, int64_t rs, int64_t cg, int n, int64_t *row)
{
    int64_t c = kk / rs, t = kk % rs;
    for (int i = 0; i < n; i++) {
        row[i] = t * cg + c;
        if (++t == rs) {
            t = 0;
            c++;
        }
    }
}

/* Filters [j, j + jw) over the contiguous reduction indices [kk0, kk0 +
 * len) of their KCRS rows, kw of them at a time, into the panel's mapped
 * rows: register transposes for whole 16 x 16 (AVX-512) or 8 x 8 blocks,
 * scalars for the rest. */
static void kcrs_blocks(int jw, int kw, int64_t j, int64_t kk0, int64_t len, int64_t rs, int64_t cg, const float *f,
                        int64_t cs, int nr, float *out)
{
    int64_t row[16];
    for (int64_t p = kk0; p < kk0 + len; p += kw) {
        const int n = kk0 + len - p < kw ? (int)(kk0 + len - p) : kw;
        kcrs_rows(p, rs, cg, n, row);
        if (n == 16 && jw == 16)
            transpose16_rows(f + j * cs + p, cs, out + j, nr, row);
        else if (n == 8 && jw == 8)
            transpose8_rows(f + j * cs + p, cs, out + j, nr, row);
        else
            for (int i = 0; i < n; i++)
                for (int64_t jj = j; jj < j + jw; jj++)
                    out[row[i] * nr + jj] = f[jj * cs + p + i];
    }
}

/* Filters [0, nb) over [kk0, kk0 + len): 16 at a time on AVX-512, then 8
 * (AVX2), then one. */
static void kcrs_run(int64_t kk0, int64_t len, int64_t rs, int64_t cg, int64_t nb, const float *f, int64_t cs, int nr,
                     float *out)
{
    int64_t j = 0;
    if (vx_active_isa() == VX_ISA_AVX512)
        for (; j + 16 <= nb; j += 16)
            kcrs_blocks(16, 16, j, kk0, len, rs, cg, f, cs, nr, out);
    for (; j + 8 <= nb; j += 8)
        kcrs_blocks(8, 8, j, kk0, len, rs, cg, f, cs, nr, out);
    for (; j < nb; j++)
        kcrs_blocks(1, 16, j, kk0, len, rs, cg, f, cs, nr, out);
}

void vx_pack_b_kcrs(int64_t cg, int64_t rs, int64_t t0, int64_t nt, int64_t nb, const float *f, int64_t cs, int nr,
                    float *out)
{
    if (nb < nr)
        for (int64_t t = t0; t < t0 + nt; t++)
            for (int64_t c = 0; c < cg; c++)
                memset(out + (t * cg + c) * nr + nb, 0, (size_t)(nr - nb) * sizeof(float));
    if (t0 == 0 && nt == rs) { /* every tap: one run over the whole rows */
        kcrs_run(0, cg * rs, rs, cg, nb, f, cs, nr, out);
        return;
    }
    for (int64_t c = 0; c < cg; c++) /* a run per channel: its taps [t0, t0 + nt) */
        kcrs_run(c * rs + t0, nt, rs, cg, nb, f, cs, nr, out);
}
