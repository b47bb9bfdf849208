/* The matrix-vector kernels of gemv.h for one ISA: compiled once per ISA
 * (meson: -DVX_GEMV_VEC_BYTES=32 with AVX2 flags, 64 with AVX-512 flags) so
 * the same GNU C vector code becomes that ISA's instructions, FMAs included
 * (-ffp-contract=fast). */
#include "cpu/gemv.h"

#ifndef VX_GEMV_VEC_BYTES
#error "compile with -DVX_GEMV_VEC_BYTES=32 (AVX2) or 64 (AVX-512)"
#endif
#define W (VX_GEMV_VEC_BYTES / 4)
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(CAT(vx_gemv_, name), CAT(_v, VX_GEMV_VEC_BYTES))

/* Unaligned, alias-safe vector access. */
typedef float vf __attribute__((vector_size(VX_GEMV_VEC_BYTES), aligned(4), may_alias));

static inline vf ld(const float *p) { return *(const vf *)p; }
static inline void st(float *p, vf v) { *(vf *)p = v; }
static inline vf splat(float s) { return (vf){0} + s; }

static inline float hsum(vf v)
{
    float s = 0;
    for (int i = 0; i < W; i++)
        s += v[i];
    return s;
}

static inline float store_one(float acc, float *y, const vx_gemv_store *s, int64_t i)
{
    float v = s->alpha * acc;
    if (s->beta != 0.0f)
        v += s->beta * *y;
    v += s->bias_scalar;
    if (s->bias_vec)
        v += s->bias_vec[i];
    if (s->relu && !(v > 0.0f))
        v = 0.0f;
    return v;
}

/* Four rows at a time, two vectors of k per row in flight (eight
 * accumulators hide the FMA latency); x is read once per four rows, from
 * L1. The k remainder is scalar. */
void FN(dot)(int64_t len, int64_t k, const float *m, int64_t ldm, const float *x, float *y,
             int64_t incy, const vx_gemv_store *s)
{
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
        const float *r0 = m + i * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
        vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        int64_t p = 0;
        for (; p + 2 * W <= k; p += 2 * W) {
            const vf x0 = ld(x + p), x1 = ld(x + p + W);
            a0 += ld(r0 + p) * x0;
            b0 += ld(r0 + p + W) * x1;
            a1 += ld(r1 + p) * x0;
            b1 += ld(r1 + p + W) * x1;
            a2 += ld(r2 + p) * x0;
            b2 += ld(r2 + p + W) * x1;
            a3 += ld(r3 + p) * x0;
            b3 += ld(r3 + p + W) * x1;
        }
        for (; p + W <= k; p += W) {
            const vf x0 = ld(x + p);
            a0 += ld(r0 + p) * x0;
            a1 += ld(r1 + p) * x0;
            a2 += ld(r2 + p) * x0;
            a3 += ld(r3 + p) * x0;
        }
        float s0 = hsum(a0 + b0), s1 = hsum(a1 + b1), s2 = hsum(a2 + b2), s3 = hsum(a3 + b3);
        for (; p < k; p++) {
            s0 += r0[p] * x[p];
            s1 += r1[p] * x[p];
            s2 += r2[p] * x[p];
            s3 += r3[p] * x[p];
        }
        float *yi = y + i * incy;
        yi[0] = store_one(s0, yi, s, i);
        yi[incy] = store_one(s1, yi + incy, s, i + 1);
        yi[2 * incy] = store_one(s2, yi + 2 * incy, s, i + 2);
        yi[3 * incy] = store_one(s3, yi + 3 * incy, s, i + 3);
    }
    for (; i < len; i++) {
        const float *r0 = m + i * ldm;
        vf a0 = {0}, b0 = {0};
        int64_t p = 0;
        for (; p + 2 * W <= k; p += 2 * W) {
            a0 += ld(r0 + p) * ld(x + p);
            b0 += ld(r0 + p + W) * ld(x + p + W);
        }
        for (; p + W <= k; p += W)
            a0 += ld(r0 + p) * ld(x + p);
        float s0 = hsum(a0 + b0);
        for (; p < k; p++)
            s0 += r0[p] * x[p];
        y[i * incy] = store_one(s0, y + i * incy, s, i);
    }
}

/* y block store: contiguous y with the plain store in vectors. */
static void store_block(const float *acc, int64_t nb, float *y, int64_t incy, int64_t j0,
                        const vx_gemv_store *s)
{
    int64_t j = 0;
    if (incy == 1 && s->beta == 0.0f && s->bias_scalar == 0.0f && !s->relu) {
        const vf al = splat(s->alpha);
        for (; j + W <= nb; j += W) {
            vf v = al * ld(acc + j);
            if (s->bias_vec)
                v += ld(s->bias_vec + j0 + j);
            st(y + j0 + j, v);
        }
    }
    for (; j < nb; j++)
        y[(j0 + j) * incy] = store_one(acc[j], y + (j0 + j) * incy, s, j0 + j);
}

void FN(sum_store)(int parts, const float *part, int64_t part_stride, int64_t len, float *y, int64_t incy,
                   const vx_gemv_store *s)
{
    enum { NB = 1024 };
    float acc[NB] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < len; j0 += NB) {
        const int64_t nb = len - j0 < NB ? len - j0 : NB, nv = nb / W * W;
        for (int64_t j = 0; j < nv; j += W) {
            vf t = ld(part + j0 + j);
            for (int q = 1; q < parts; q++)
                t += ld(part + q * part_stride + j0 + j);
            st(acc + j, t);
        }
        for (int64_t j = nv; j < nb; j++) {
            float t = part[j0 + j];
            for (int q = 1; q < parts; q++)
                t += part[q * part_stride + j0 + j];
            acc[j] = t;
        }
        store_block(acc, nb, y, incy, j0, s);
    }
}

/* Rows stream in order, four at a time, each one's block of NB columns
 * contiguous (whole pages: one TLB miss per page and the prefetchers see
 * plain sequential streams); the partial sums of the block stay in a
 * buffer of 32 KiB, in L1 or L2 (a load and a store per four B vectors).
 * Walking strips of columns down all rows instead would touch a new page
 * per row per strip, and every block beyond the first is another pass over
 * all rows, each restarting the prefetchers' streams: with blocks of 2048
 * columns (8 KiB, to keep the sums in L1) a unit's 5504 columns of
 * 1x11008x4096 (B from DRAM) took three passes and ran 0.89-0.93x of
 * oneDNN, in one pass 1.07-1.21x; 1x6144x1024 on one thread (B in L3)
 * 0.85 -> 1.01-1.02x (2 AMD Zen 4 cores; NOTES.md, thirtieth session). */
void FN(axpy)(int64_t len, int64_t k, const float *m, int64_t ldm, const float *x, int64_t incx,
              float *y, int64_t incy, const vx_gemv_store *s)
{
    enum { NB = 8192 };
    float acc[NB] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < len; j0 += NB) {
        const int64_t nb = len - j0 < NB ? len - j0 : NB, nv = nb / W * W;
        /* Vector stores, rounded up within acc (a memset became `rep stos`;
         * meson.build keeps GCC from turning this loop back into one). */
        for (int64_t j = 0; j < nb; j += W)
            st(acc + j, (vf){0});
        if (nb >= W && nb <= 4 * W) {
            /* Short rows (one to four vectors): the sums stay in registers,
             * two per vector (even and odd k) so the FMA chains interleave;
             * the general loop below carries them through acc, a store and
             * a load per FMA chain step, and with so few vectors its
             * latency was the call (1x61x70: 182 ns; AMD Zen 5). The last
             * vector ends at the last column; where vectors overlap their
             * lanes hold the same sums. */
            int64_t off[4];
            for (int v = 0; v < 4; v++)
                off[v] = v * W < nb - W ? v * W : nb - W;
            vf e0 = (vf){0}, e1 = (vf){0}, e2 = (vf){0}, e3 = (vf){0};
            vf o0 = (vf){0}, o1 = (vf){0}, o2 = (vf){0}, o3 = (vf){0};
            int64_t q = 0;
            for (; q + 2 <= k; q += 2) {
                const float *r0 = m + q * ldm + j0, *r1 = r0 + ldm;
                const vf v0 = splat(x[q * incx]), v1 = splat(x[(q + 1) * incx]);
                e0 += v0 * ld(r0 + off[0]);
                e1 += v0 * ld(r0 + off[1]);
                e2 += v0 * ld(r0 + off[2]);
                e3 += v0 * ld(r0 + off[3]);
                o0 += v1 * ld(r1 + off[0]);
                o1 += v1 * ld(r1 + off[1]);
                o2 += v1 * ld(r1 + off[2]);
                o3 += v1 * ld(r1 + off[3]);
            }
            if (q < k) {
                const float *r0 = m + q * ldm + j0;
                const vf v0 = splat(x[q * incx]);
                e0 += v0 * ld(r0 + off[0]);
                e1 += v0 * ld(r0 + off[1]);
                e2 += v0 * ld(r0 + off[2]);
                e3 += v0 * ld(r0 + off[3]);
            }
            st(acc + off[0], e0 + o0);
            st(acc + off[1], e1 + o1);
            st(acc + off[2], e2 + o2);
            st(acc + off[3], e3 + o3);
            store_block(acc, nb, y, incy, j0, s);
            continue;
        }
        /* The columns past the last whole vector: with a vector's worth of
         * columns or more, one vector ending at the last column, summed
         * apart (its lanes below nv are the main loop's and are dropped);
         * scalar FMAs there made 1x61x70 take 221 ns against 158 for
         * 1x64x70 (AMD Zen 5). */
        const int tail = nb > nv && nb >= W;
        const int64_t tb = nb - W;
        vf t = (vf){0};
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) {
            const float *r0 = m + p * ldm + j0, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
            const float x0 = x[p * incx], x1 = x[(p + 1) * incx], x2 = x[(p + 2) * incx],
                        x3 = x[(p + 3) * incx];
            const vf v0 = splat(x0), v1 = splat(x1), v2 = splat(x2), v3 = splat(x3);
            for (int64_t j = 0; j < nv; j += W)
                st(acc + j, ld(acc + j) + v0 * ld(r0 + j) + v1 * ld(r1 + j) + v2 * ld(r2 + j) +
                                v3 * ld(r3 + j));
            if (tail)
                t += v0 * ld(r0 + tb) + v1 * ld(r1 + tb) + v2 * ld(r2 + tb) + v3 * ld(r3 + tb);
            else
                for (int64_t j = nv; j < nb; j++)
                    acc[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j];
        }
        for (; p < k; p++) {
            const float *r0 = m + p * ldm + j0;
            const float x0 = x[p * incx];
            const vf v0 = splat(x0);
            for (int64_t j = 0; j < nv; j += W)
                st(acc + j, ld(acc + j) + v0 * ld(r0 + j));
            if (tail)
                t += v0 * ld(r0 + tb);
            else
                for (int64_t j = nv; j < nb; j++)
                    acc[j] += x0 * r0[j];
        }
        if (tail) {
            float tv[W];
            st(tv, t);
            for (int64_t j = nv; j < nb; j++)
                acc[j] = tv[j - tb];
        }
        store_block(acc, nb, y, incy, j0, s);
    }
}

/* A few output rows at once (the axpy form of each row, 2 <= R <= 4):
 * y_i[j] = store(sum_p x_i[p] * M[p*ldm + j]) for i < R, with x_i[p] =
 * x[i*x_rs + p*incx] and y_i = y + i*y_rs. The matrix streams once, row by
 * row in blocks of up to ACC_FLOATS / R columns (long sequential runs: a GEMM tile's
 * panel walk instead reads 128 bytes per row, rows a leading dimension
 * apart, and ran 2x1024x512 at a quarter of this rate on AMD Zen 1); each
 * B vector is loaded once for the R rows, whose partial sums stay in an
 * L1-resident buffer. U rows of M per pass: R * U broadcast x values, U B
 * vectors and one sum must fit the register file (16 on AVX2: U = 2 for
 * R > 2). */
/* The partial sums: 32 KiB (L1 or L2, as the one-row form's), shared by
 * the R rows; blocks split the columns evenly (a short last block reads
 * short runs). Each block is a pass over all of k: with 16 KiB, 2-4 rows
 * of 4096-11008 columns from DRAM ran 1.04-1.40x of oneDNN, with 32 KiB
 * 1.11-1.45x (geomean 1.17 -> 1.23; 64 KiB 1.29, but on the stack of any
 * caller's thread; 2 AMD Zen 4 cores, NOTES.md, thirtieth session). A
 * matrix in the caches runs the other way: its blocks are cut so that the
 * sums and the U rows a step reads fit pass_floats (3/4 of L1): the sums
 * stay in L1 instead of going to L2 and back on every pass (2 x 2304 x
 * 768 from L3, two threads: 76-79 us with 2 x 2304 floats of sums, 48
 * with three blocks of 768; 4 x 2304 x 768 100 -> 76; AMD Zen 4, NOTES.md,
 * thirty-first session). */
enum { ACC_FLOATS = 8192, ROWS_MAX = VX_GEMV_ROWS_MAX };

static inline __attribute__((always_inline)) void rows_pass(const int R, const int U, int64_t nb, int64_t nv,
                                                            const float *const r[4], int64_t ahead, const float *xs,
                                                            float *acc, int64_t acc_rs)
{
    vf v[ROWS_MAX][4];
    for (int i = 0; i < R; i++)
        for (int u = 0; u < U; u++)
            v[i][u] = splat(xs[i * 4 + u]);
    for (int64_t j = 0; j < nv; j += W) {
        vf b[4];
        for (int u = 0; u < U; u++) {
            /* the same columns of the next pass's rows, once per line:
             * each row's block is a short run, which the hardware
             * prefetchers start late (4x639x2017 from L3: 630 -> 450 us) */
            if (W == 16 || (j & 15) == 0)
                __builtin_prefetch(r[u] + ahead + j, 0, 3);
            b[u] = ld(r[u] + j);
            /* in a register: GCC otherwise folds the load into each row's
             * FMA, loading every B vector R times (acc is a local array,
             * so it may); 2 x 1152 x 768 from L3 on one AMD Zen 4 core,
             * 1.59-1.64 -> 1.29-1.31 ns per B vector, 3 rows 1.94-2.07 ->
             * 1.66-1.74, 4 rows 1.94 -> 1.76-1.79 */
            __asm__("" : "+v"(b[u]));
        }
        for (int i = 0; i < R; i++) {
            /* two chains, even and odd u: a serial chain of U FMAs (5
             * cycles each on Zen 1) per row and vector kept too few in
             * flight (U is 1 or even) */
            vf t = ld(acc + i * acc_rs + j) + v[i][0] * b[0];
            if (U > 1) {
                vf t2 = v[i][1] * b[1];
                for (int u = 2; u < U; u += 2) {
                    t += v[i][u] * b[u];
                    t2 += v[i][u + 1] * b[u + 1];
                }
                t += t2;
            }
            st(acc + i * acc_rs + j, t);
        }
    }
    for (int64_t j = nv; j < nb; j++)
        for (int i = 0; i < R; i++) {
            float t = acc[i * acc_rs + j];
            for (int u = 0; u < U; u++)
                t += xs[i * 4 + u] * r[u][j];
            acc[i * acc_rs + j] = t;
        }
}

static inline __attribute__((always_inline)) void rows_body(const int R, const int U, int64_t len, int64_t k,
                                                            const float *m, int64_t ldm, const float *x,
                                                            int64_t x_rs, int64_t incx, float *y, int64_t y_rs,
                                                            const vx_gemv_store *s, int64_t pass_floats)
{
    float acc[ACC_FLOATS] __attribute__((aligned(64)));
    int64_t most = ACC_FLOATS / R / 16 * 16;
    const int64_t fit = pass_floats / (R + U) / 16 * 16; /* sums and U matrix rows in pass_floats */
    if (pass_floats > 0)
        most = fit < 16 ? 16 : fit < most ? fit : most;
    const int64_t blocks = (len + most - 1) / most;
    const int64_t block = (len + blocks - 1) / blocks; /* <= most */
    const int64_t acc_rs = (block + 15) / 16 * 16;     /* rows of acc on whole lines */
    for (int64_t j0 = 0; j0 < len; j0 += block) {
        const int64_t nb = len - j0 < block ? len - j0 : block, nv = nb / W * W;
        for (int i = 0; i < R; i++)
            for (int64_t j = 0; j < nb; j += W) /* rounded up within the row's acc_rs */
                st(acc + i * acc_rs + j, (vf){0});
        int64_t p = 0;
        for (; p + U <= k; p += U) {
            const float *r[4];
            float xs[ROWS_MAX * 4];
            for (int u = 0; u < U; u++) {
                r[u] = m + (p + u) * ldm + j0;
                for (int i = 0; i < R; i++)
                    xs[i * 4 + u] = x[i * x_rs + (p + u) * incx];
            }
            rows_pass(R, U, nb, nv, r, (p + 2 * U <= k ? U : 1) * ldm, xs, acc, acc_rs);
        }
        for (; p < k; p++) {
            const float *r[4] = { m + p * ldm + j0 };
            float xs[ROWS_MAX * 4];
            for (int i = 0; i < R; i++)
                xs[i * 4] = x[i * x_rs + p * incx];
            rows_pass(R, 1, nb, nv, r, p + 1 < k ? ldm : 0, xs, acc, acc_rs);
        }
        for (int i = 0; i < R; i++)
            store_block(acc + i * acc_rs, nb, y + i * y_rs, 1, j0, &s[i]);
    }
}

/* U: rows of M per pass, as the register file allows (see above). */
#define ROWS_U(R) (W == 16 || (R) <= 2 ? 4 : 2)

void FN(axpy_rows)(int rows, int64_t len, int64_t k, const float *m, int64_t ldm, const float *x, int64_t x_rs,
                   int64_t incx, float *y, int64_t y_rs, const vx_gemv_store *s, int64_t pass_floats)
{
    switch (rows) {
    case 2: rows_body(2, ROWS_U(2), len, k, m, ldm, x, x_rs, incx, y, y_rs, s, pass_floats); break;
    case 3: rows_body(3, ROWS_U(3), len, k, m, ldm, x, x_rs, incx, y, y_rs, s, pass_floats); break;
    case 4: rows_body(4, ROWS_U(4), len, k, m, ldm, x, x_rs, incx, y, y_rs, s, pass_floats); break;
    default: /* one row at a time */
        for (int i = 0; i < rows; i++)
            FN(axpy)(len, k, m, ldm, x + i * x_rs, incx, y + i * y_rs, 1, &s[i]);
    }
}
