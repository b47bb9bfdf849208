/* The matrix-vector path (m == 1 or n == 1, and the few-row form: m <=
 * VX_GEMV_ROWS_MAX with unit-stride rows of B; src/cpu/gemv.h):
 *  - dyn_gemm forced onto it (vx_plan_set_override) for every layout and
 *    transpose, output lengths around the kernels' steps, k around the
 *    vector width, padded leading dimensions, alpha/beta incl. beta = 0 over
 *    NaN, one and two threads, both ISAs;
 *  - the kernels called directly with the fused store (bias per element, a
 *    scalar bias, ReLU) and strided y;
 *  - the few-row kernel called directly (per-row stores, strided x rows)
 *    and dyn_gemm forced onto it for m = 2..4 in every layout whose B rows
 *    are unit-stride;
 *  - the split over k (two threads, k large enough): through the sweeps,
 *    the sum-and-store kernel directly, and a 1x1 convolution forced onto
 *    it, whose bias and ReLU the last slice applies;
 *  - the planner ranks a GEMV plan for m == 1 / n == 1 and few rows of a
 *    B beyond L2 only, and prices it below packing for a matrix that
 *    streams from memory. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "cpu/gemv.h"
#include "ref.h"
#include "ref_conv.h"
#include "vt_isa.h"

#define TMO 200.0

static void force_gemv(int threads)
{
    vx_gemm_plan ov;
    memset(&ov, 0, sizeof ov);
    ov.path = VX_PATH_GEMV;
    ov.threads = threads;
    vx_plan_set_override(&ov);
}

static const float k_alpha_beta[][2] = {{1.0f, 0.0f}, {-0.5f, 0.3f}, {0.7f, 1.0f}};

/* One forced case: layout combination, alpha/beta variant v (beta = 0 over
 * NaN), padded leading dimensions, checked against the float64 reference. */
static void check_case(vt_case c, int combo, int v, int64_t lda_pad, int64_t ldb_pad, int64_t ldc_pad, uint64_t seed,
                       const char *tag)
{
    vt_combo(combo, &c.layout, &c.ta, &c.tb);
    c.alpha = k_alpha_beta[v][0];
    c.beta = k_alpha_beta[v][1];
    c.cinit = c.beta == 0.0f ? VT_C_NAN : VT_C_RANDOM;
    c.lda_pad = lda_pad;
    c.ldb_pad = ldb_pad;
    c.ldc_pad = ldc_pad;
    c.seed = seed;
    c.tag = tag;
    vt_check(&c);
}

/* Every (layout, transa, transb) with the vector on either side. */
static void sweep(vx_isa isa, int threads)
{
    static const int64_t lens[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 63, 64, 65, 127, 128, 129, 257};
    static const int64_t ks[] = {1, 3, 8, 16, 17, 33, 100};
    char tag[64];
    snprintf(tag, sizeof tag, "forced gemv, %s, %d thread(s)", vt_isa_name(isa), threads);
    force_gemv(threads);
    int cases = 0;
    for (int combo = 0; combo < 8; combo++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (int side = 0; side < 2; side++) {
                    const int v = (int)(cases++ % 3);
                    check_case(side ? vt_case_make(1, lens[li], ks[ki]) : vt_case_make(lens[li], 1, ks[ki]), combo,
                               v, (combo + li) % 3 == 0 ? 5 : 0, (combo + ki) % 2 ? 3 : 0, side ? 0 : 2,
                               1000u + (uint64_t)cases, tag);
                }
    vx_plan_set_override(NULL);
}

VT_ISA_TEST(gemv, sweep_one_thread, TMO) { sweep(vt_isa, 1); }
VT_ISA_TEST(gemv, sweep_two_threads, TMO) { sweep(vt_isa, 2); }

/* The few-row form forced: m = 2..VX_GEMV_ROWS_MAX, lengths around the
 * kernel's vector and column-block edges (8192 / m floats of partial sums
 * at most), k around its passes.
 * Layouts whose canonical B has unit-stride rows (row-major NN / TN,
 * col-major NN / NT) run it; the others fall back to the GEMM plan it
 * carries, and must be right too. */
static void sweep_rows(vx_isa isa, int threads)
{
    static const int64_t lens[] = {2, 7, 8, 9, 33, 64, 65, 1023, 1025, 2100, 4100};
    /* 40 and 97: two threads split k (for m = 2, and for every m) */
    static const int64_t ks[] = {1, 2, 3, 5, 17, 40, 97};
    char tag[64];
    snprintf(tag, sizeof tag, "forced few-row gemv, %s, %d thread(s)", vt_isa_name(isa), threads);
    force_gemv(threads);
    int cases = 0;
    for (int combo = 0; combo < 8; combo++)
        for (int64_t m = 2; m <= VX_GEMV_ROWS_MAX; m++)
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
                for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                    const int v = (int)(cases++ % 3);
                    check_case(vt_case_make(m, lens[li], ks[ki]), combo, v, (combo + li) % 3 == 0 ? 5 : 0,
                               (combo + ki) % 2 ? 3 : 0, li % 2 ? 4 : 0, 5000u + (uint64_t)cases, tag);
                }
    vx_plan_set_override(NULL);
}

VT_ISA_TEST(gemv, rows_sweep_one_thread, TMO) { sweep_rows(vt_isa, 1); }
VT_ISA_TEST(gemv, rows_sweep_two_threads, TMO) { sweep_rows(vt_isa, 2); }

/* The few-row kernel directly: each row its own store (alpha, beta, a
 * scalar bias per row, a bias per column, ReLU), x rows x_rs apart with a
 * stride along k, y rows y_rs apart; nothing between the rows written.
 * Each with the kernel's own blocks (pass_floats 0), blocks cut to 3/4 of
 * a 32 KiB L1 (as a matrix in the caches gets) and to the least block. */
VT_ISA_TEST(gemv, rows_kernel_stores, TMO)
{
    const vx_gemv_kernels *K = vx_gemv_kernels_for(vt_isa);
    cr_assert(K->axpy_rows && K->rows_max >= 2 && K->rows_max <= VX_GEMV_ROWS_MAX,
              "no few-row kernel for %s", vt_isa_name(vt_isa));
    /* every row count the kernel takes, beyond those a GEMM hands it too */
    vt_rng r;
    vt_rng_seed(&r, 7);
    static const int64_t lens[] = {1, 5, 16, 37, 1030, 2049, 4097};
    static const int64_t passes[] = {0, 6144, 1};
    for (int rows = 1; rows <= VX_GEMV_ROWS_MAX; rows++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int vp = 0; vp < 3 * 3; vp++) {
                const int var = vp % 3;
                const int64_t pass_floats = passes[vp / 3];
                const int64_t len = lens[li], k = 13, ldm = len + 3, incx = var == 1 ? 2 : 1;
                const int64_t x_rs = k * incx + 1, y_rs = len + 5;
                float *m = malloc(sizeof(float) * (size_t)(k * ldm));
                float *x = malloc(sizeof(float) * (size_t)(rows * x_rs));
                float *y = malloc(sizeof(float) * (size_t)(rows * y_rs));
                float *bias = malloc(sizeof(float) * (size_t)len);
                for (int64_t i = 0; i < k * ldm; i++)
                    m[i] = vt_rng_float(&r);
                for (int64_t i = 0; i < rows * x_rs; i++)
                    x[i] = vt_rng_float(&r);
                for (int64_t i = 0; i < len; i++)
                    bias[i] = vt_rng_float(&r);
                const float beta = var == 2 ? 0.5f : 0.0f;
                for (int64_t i = 0; i < rows * y_rs; i++)
                    y[i] = beta == 0.0f ? NAN : vt_rng_float(&r);
                float *y0 = malloc(sizeof(float) * (size_t)(rows * y_rs));
                memcpy(y0, y, sizeof(float) * (size_t)(rows * y_rs));
                vx_gemv_store st[VX_GEMV_ROWS_MAX];
                for (int i = 0; i < rows; i++)
                    st[i] = (vx_gemv_store){0.75f - 0.25f * i, beta, var ? bias : NULL, var ? 0.125f * (i + 1) : 0.0f,
                                            var == 1};
                K->axpy_rows(rows, len, k, m, ldm, x, x_rs, incx, y, y_rs, st, pass_floats);
                for (int i = 0; i < rows; i++) {
                    for (int64_t j = 0; j < len; j++) {
                        double acc = 0;
                        for (int64_t p = 0; p < k; p++)
                            acc += (double)x[i * x_rs + p * incx] * m[p * ldm + j];
                        double v = st[i].alpha * acc + (beta != 0.0f ? beta * (double)y0[i * y_rs + j] : 0.0) +
                                   st[i].bias_scalar + (st[i].bias_vec ? st[i].bias_vec[j] : 0.0);
                        if (st[i].relu && v < 0)
                            v = 0;
                        const double got = y[i * y_rs + j];
                        cr_assert(fabs(got - v) <= 1e-5 * (1.0 + fabs(v)),
                                  "%s rows=%d len=%lld variant %d pass %lld: y[%d][%lld] = %g, want %g",
                                  vt_isa_name(vt_isa), rows, (long long)len, var, (long long)pass_floats, i,
                                  (long long)j, got, v);
                    }
                    for (int64_t j = len; j < y_rs && i + 1 < rows; j++)
                        cr_assert(memcmp(&y[i * y_rs + j], &y0[i * y_rs + j], sizeof(float)) == 0,
                                  "rows=%d len=%lld: wrote y[%d][%lld], between the rows", rows, (long long)len,
                                  i, (long long)j);
                }
                free(m);
                free(x);
                free(y);
                free(y0);
                free(bias);
            }
}

/* Big enough that both threads get work and both kernels' main loops run
 * many strips; the planner's own choice (no override). */
VT_ISA_TEST(gemv, large_unforced, TMO)
{
    static const int64_t shapes[][3] = {{1, 4099, 1000}, {3001, 1, 777}, {1, 1, 5000}, {1, 640, 2048}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int combo = 0; combo < 8; combo++) {
            vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            c.cinit = VT_C_NAN;
            c.seed = 77u + (uint64_t)(s * 8 + (size_t)combo);
            c.tag = vt_isa_name(vt_isa);
            vt_check(&c);
        }
}

/* The kernels' store stage: y[i*incy] = act(alpha*acc + beta*y + scalar + vec[i]). */
VT_ISA_TEST(gemv, kernels_fused_store, TMO)
{
    const vx_gemv_kernels *K = vx_gemv_kernels_for(vt_isa);
    cr_assert(K && K->dot && K->axpy && K->dot_rows > 0 && K->axpy_cols > 0, "no gemv kernels for %s",
              vt_isa_name(vt_isa));
    vt_rng r;
    vt_rng_seed(&r, 42);
    /* ... and around the axpy form's column blocks (8192 partial sums) */
    static const int64_t lens[] = {1, 3, 4, 5, 33, 150, 2049, 8191, 8192, 8193, 16400};
    for (int form = 0; form < 2; form++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int var = 0; var < 4; var++) {
                const int64_t len = lens[li], k = 37, incy = var & 1 ? 3 : 1;
                const int64_t ldm = form ? len + 2 : k + 1, incx = form && (var & 2) ? 2 : 1;
                float *m = malloc(sizeof(float) * (size_t)(form ? k * ldm : len * ldm));
                float *x = malloc(sizeof(float) * (size_t)(k * incx));
                float *y = malloc(sizeof(float) * (size_t)(len * incy));
                float *bias = malloc(sizeof(float) * (size_t)len);
                const int64_t mcount = form ? k * ldm : len * ldm;
                for (int64_t i = 0; i < mcount; i++)
                    m[i] = vt_rng_float(&r);
                for (int64_t i = 0; i < k * incx; i++)
                    x[i] = vt_rng_float(&r);
                for (int64_t i = 0; i < len; i++)
                    bias[i] = vt_rng_float(&r);
                const float beta = var >= 2 ? 0.5f : 0.0f;
                for (int64_t i = 0; i < len * incy; i++)
                    y[i] = beta == 0.0f ? NAN : vt_rng_float(&r);
                double *want = malloc(sizeof(double) * (size_t)len);
                const vx_gemv_store st = {0.75f, beta, var & 1 ? bias : NULL, var == 2 ? 0.25f : 0.0f,
                                          var != 1};
                for (int64_t i = 0; i < len; i++) {
                    double acc = 0;
                    for (int64_t p = 0; p < k; p++)
                        acc += form ? (double)x[p * incx] * m[p * ldm + i] : (double)m[i * ldm + p] * x[p];
                    double v = st.alpha * acc + (beta != 0.0f ? beta * (double)y[i * incy] : 0.0) +
                               st.bias_scalar + (st.bias_vec ? st.bias_vec[i] : 0.0);
                    want[i] = st.relu && v < 0 ? 0.0 : v;
                }
                if (form)
                    K->axpy(len, k, m, ldm, x, incx, y, incy, &st);
                else
                    K->dot(len, k, m, ldm, x, y, incy, &st);
                for (int64_t i = 0; i < len; i++) {
                    const double got = y[i * incy];
                    cr_assert(fabs(got - want[i]) <= 1e-5 * (1.0 + fabs(want[i])),
                              "%s %s len=%lld incy=%lld variant %d: y[%lld] = %g, want %g",
                              vt_isa_name(vt_isa), form ? "axpy" : "dot", (long long)len,
                              (long long)incy, var, (long long)i, got, want[i]);
                }
                if (incy > 1)
                    for (int64_t i = 0; i < len * incy; i++)
                        if (i % incy)
                            cr_assert(beta != 0.0f || isnan(y[i]), "%s wrote y[%lld] between the strided elements",
                                      form ? "axpy" : "dot", (long long)i);
                free(m);
                free(x);
                free(y);
                free(bias);
                free(want);
            }
}

/* The end of a split over k: parts partial vectors part_stride apart,
 * summed and stored with every store variant, y strided or not. */
VT_ISA_TEST(gemv, sum_store_kernel, TMO)
{
    const vx_gemv_kernels *K = vx_gemv_kernels_for(vt_isa);
    cr_assert(K && K->sum_store, "no sum-and-store kernel for %s", vt_isa_name(vt_isa));
    vt_rng r;
    vt_rng_seed(&r, 99);
    static const int64_t lens[] = {1, 7, 8, 9, 1023, 1024, 1025, 2500};
    for (int parts = 1; parts <= 3; parts++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int var = 0; var < 4; var++) {
                const int64_t len = lens[li], stride = len + 16 + var, incy = var & 1 ? 2 : 1;
                float *part = malloc(sizeof(float) * (size_t)(parts * stride));
                float *y = malloc(sizeof(float) * (size_t)(len * incy));
                float *bias = malloc(sizeof(float) * (size_t)len);
                for (int64_t i = 0; i < parts * stride; i++)
                    part[i] = vt_rng_float(&r);
                for (int64_t i = 0; i < len; i++)
                    bias[i] = vt_rng_float(&r);
                const float beta = var >= 2 ? -0.5f : 0.0f;
                for (int64_t i = 0; i < len * incy; i++)
                    y[i] = beta == 0.0f ? NAN : vt_rng_float(&r);
                float *y0 = malloc(sizeof(float) * (size_t)(len * incy));
                memcpy(y0, y, sizeof(float) * (size_t)(len * incy));
                const vx_gemv_store st = {1.5f, beta, var & 2 ? bias : NULL, var == 1 ? -0.25f : 0.0f, var == 3};
                K->sum_store(parts, part, stride, len, y, incy, &st);
                for (int64_t j = 0; j < len; j++) {
                    double acc = 0;
                    for (int q = 0; q < parts; q++)
                        acc += part[q * stride + j];
                    double v = st.alpha * acc + (beta != 0.0f ? beta * (double)y0[j * incy] : 0.0) + st.bias_scalar +
                               (st.bias_vec ? st.bias_vec[j] : 0.0);
                    if (st.relu && v < 0)
                        v = 0;
                    const double got = y[j * incy];
                    cr_assert(fabs(got - v) <= 1e-5 * (1.0 + fabs(v)),
                              "%s parts=%d len=%lld variant %d: y[%lld] = %g, want %g", vt_isa_name(vt_isa), parts,
                              (long long)len, var, (long long)j, got, v);
                    if (incy > 1)
                        cr_assert(isnan(y[j * incy + 1]) == isnan(y0[j * incy + 1]) &&
                                      (isnan(y0[j * incy + 1]) || y[j * incy + 1] == y0[j * incy + 1]),
                                  "wrote y[%lld], between the strided elements", (long long)(j * incy + 1));
                }
                free(part);
                free(y);
                free(y0);
                free(bias);
            }
}

/* A 1x1 NCHW convolution of one image with 1..3 output channels is a GEMM of
 * that many rows over unit-stride B rows (the image's pixels), with the bias
 * per row of C: forced onto the matrix-vector path on two threads with
 * c = 97 input channels, the split over k carries the bias and ReLU to the
 * slice that finishes last. */
VT_ISA_TEST(gemv, ksplit_fused_epilogue, TMO)
{
    vx_gemm_plan ov;
    memset(&ov, 0, sizeof ov);
    ov.path = VX_PATH_GEMV;
    ov.threads = 2;
    vx_plan_set_override(&ov);
    const int saved = vx_get_num_threads();
    vx_set_num_threads(2);
    for (int64_t k = 1; k <= 3; k++)
        for (int var = 0; var < 3; var++) {
            vt_conv_case c = vt_conv_make(VX_NCHW, 1, 97, 5 + var, 23, k, 1, 1);
            c.bias = var != 0;
            c.p.activation = var == 2 ? VX_ACT_RELU : VX_ACT_NONE;
            c.seed = 300u + (uint64_t)(k * 3 + var);
            c.tag = vt_isa_name(vt_isa);
            vt_conv_check(&c);
        }
    vx_set_num_threads(saved);
    vx_plan_set_override(NULL);
}

static int has_gemv(const vx_priced_plan *p, int n, double *ns, double *best_other)
{
    int found = 0;
    *best_other = INFINITY;
    for (int i = 0; i < n; i++) {
        if (p[i].plan.path == VX_PATH_GEMV) {
            found = 1;
            *ns = p[i].predicted_ns;
        } else if (p[i].predicted_ns < *best_other) {
            *best_other = p[i].predicted_ns;
        }
    }
    return found;
}

/* A plain shape with unit-stride operands (gathered: B comes from a gather). */
static vx_gemm_shape plain_shape(const int64_t mnk[3], int b_gathered)
{
    vx_gemm_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.m = mnk[0];
    sh.n = mnk[1];
    sh.k = mnk[2];
    sh.a_unit_stride = 1;
    sh.b_unit_stride = !b_gathered;
    sh.b_gathered = b_gathered;
    return sh;
}

Test(gemv, planner_ranks_it_for_vectors_and_few_rows_only, .timeout = TMO)
{
    const int isa = vx_active_isa();
    cr_assert(isa >= 0, "no usable ISA");
    enum { MAX = 4096 };
    vx_priced_plan *p = malloc(sizeof *p * MAX);
    static const int64_t vec[][3] = {{1, 4096, 4096}, {4096, 1, 4096}, {1, 1, 100}, {1, 300, 7}, {2, 4096, 4096},
                                     {3, 2048, 1024}};
    for (size_t s = 0; s < sizeof vec / sizeof *vec; s++) {
        const vx_gemm_shape sh = plain_shape(vec[s], 0);
        const int n = vx_gemm_rank(&sh, (vx_isa)isa, 2, p, MAX);
        double g = 0, other = 0;
        cr_assert(has_gemv(p, n < MAX ? n : MAX, &g, &other), "%lldx%lldx%lld: no gemv plan among %d",
                  (long long)sh.m, (long long)sh.n, (long long)sh.k, n);
        for (int i = 1; i < (n < MAX ? n : MAX); i++)
            cr_assert(p[i].predicted_ns >= p[i - 1].predicted_ns, "ranking not sorted at %d", i);
        if (sh.m * sh.n * sh.k >= 4096 * 4096)
            cr_assert(g < other, "%lldx%lldx%lld: gemv priced %.0f ns, not below the best GEMM plan %.0f ns",
                      (long long)sh.m, (long long)sh.n, (long long)sh.k, g, other);
    }
    /* Not matrix-vector products (more rows than offered; few rows of a B
     * that fits L2, or of narrow rows; few rows of a B with strided rows);
     * and a convolution's gathered B keeps the GEMM paths. */
    const int64_t more_rows = vx_gemv_kernels_for((vx_isa)isa)->rows_max + 1;
    const int64_t mat[][5] = {{more_rows, 4096, 4096, 0, 0}, {4096, 2, 64, 0, 0}, {16, 16, 16, 0, 0},
                              {1, 500, 300, 1, 0},         {2, 32, 32, 0, 0},   {2, 28, 3742, 0, 0},
                              {3, 4096, 4096, 0, 1}};
    for (size_t s = 0; s < sizeof mat / sizeof *mat; s++) {
        vx_gemm_shape sh = plain_shape(mat[s], (int)mat[s][3]);
        if (mat[s][4])
            sh.b_unit_stride = 0;
        const int n = vx_gemm_rank(&sh, (vx_isa)isa, 2, p, MAX);
        double g = 0, other = 0;
        cr_assert(!has_gemv(p, n < MAX ? n : MAX, &g, &other), "%lldx%lldx%lld%s got a gemv plan",
                  (long long)sh.m, (long long)sh.n, (long long)sh.k,
                  sh.b_gathered ? " with a gathered B" : !sh.b_unit_stride ? " with strided B rows"
                                                                           : " (no matrix-vector product)");
    }
    free(p);
}
