/* Public entry points: argument checks (nothing is written on a bad call),
 * canonicalisation to one row-major problem with unit-stride C rows, routing
 * to the CPU backend, and the VORTEX_VERBOSE log line. */
#include <stdio.h>
#include <time.h>

#include "analyzer/plan.h"
#include "cpu/gemm.h"
#include "cpu/isa.h"
#include "cpu/threadpool.h"
#include "runtime.h"
#include "status.h"
#include "vortex/vortex.h"

static int valid_layout(vx_layout l) { return l == VX_ROW_MAJOR || l == VX_COL_MAJOR; }
static int valid_trans(vx_transpose t) { return t == VX_NO_TRANS || t == VX_TRANS; }
static const char *trans_name(vx_transpose t) { return t == VX_TRANS ? "T" : "N"; }

/* A stored rows x cols matrix with leading dimension ld must have
 * ld >= max(1, cols), and its last element's byte offset must fit int64. */
static vx_status check_matrix(const char *name, const void *p, int64_t rows, int64_t cols,
                              int64_t ld, const char *ld_name)
{
    const int64_t need = cols > 1 ? cols : 1;
    if (ld < need)
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: %s = %lld is too small: %s is stored as %lld x %lld, "
                       "so %s must be >= %lld", ld_name, (long long)ld, name, (long long)rows,
                       (long long)cols, ld_name, (long long)need);
    if (rows > 0 && cols > 0) {
        int64_t last, bytes;
        if (__builtin_mul_overflow(rows - 1, ld, &last) || __builtin_add_overflow(last, cols, &last) ||
            __builtin_mul_overflow(last, (int64_t)sizeof(float), &bytes))
            return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: %s (%lld x %lld, %s = %lld) spans more than "
                           "2^63 bytes", name, (long long)rows, (long long)cols, ld_name, (long long)ld);
        if (!p)
            return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: %s is NULL but holds %lld x %lld elements",
                           name, (long long)rows, (long long)cols);
    }
    return VX_OK;
}

/* C = beta * C over the canonical view (k == 0 or alpha == 0). */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t c_rs)
{
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * c_rs;
        if (beta == 0.0f)
            for (int64_t j = 0; j < n; j++)
                row[j] = 0.0f;
        else if (beta != 1.0f)
            for (int64_t j = 0; j < n; j++)
                row[j] *= beta;
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

VX_API vx_status dyn_gemm(vx_layout layout, vx_transpose transa, vx_transpose transb,
                          int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb,
                          float beta, float *c, int64_t ldc)
{
    if (!valid_layout(layout))
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: layout %d is neither VX_ROW_MAJOR (101) nor "
                       "VX_COL_MAJOR (102)", (int)layout);
    if (!valid_trans(transa) || !valid_trans(transb))
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: trans%s %d is neither VX_NO_TRANS (111) nor "
                       "VX_TRANS (112)", valid_trans(transa) ? "b" : "a",
                       (int)(valid_trans(transa) ? transb : transa));
    if (m < 0 || n < 0 || k < 0)
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: sizes must be >= 0 (m = %lld, n = %lld, k = %lld)",
                       (long long)m, (long long)n, (long long)k);

    /* Stored shapes: row-major stores op(X) or X as rows x cols; col-major
     * stores the transpose of that picture. */
    const int rm = layout == VX_ROW_MAJOR;
    const int ta = transa == VX_TRANS, tb = transb == VX_TRANS;
    int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
    int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
    int64_t c_rows = m, c_cols = n;
    if (!rm) {
        int64_t t;
        t = a_rows; a_rows = a_cols; a_cols = t;
        t = b_rows; b_rows = b_cols; b_cols = t;
        t = c_rows; c_rows = c_cols; c_cols = t;
    }
    vx_status s;
    if ((s = check_matrix("A", a, a_rows, a_cols, lda, "lda")) != VX_OK ||
        (s = check_matrix("B", b, b_rows, b_cols, ldb, "ldb")) != VX_OK ||
        (s = check_matrix("C", c, c_rows, c_cols, ldc, "ldc")) != VX_OK)
        return s;
    int64_t mn, mk, kn;
    if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(m, k, &mk) ||
        __builtin_mul_overflow(k, n, &kn))
        return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm: m*n, m*k or k*n overflows int64 (m = %lld, "
                       "n = %lld, k = %lld)", (long long)m, (long long)n, (long long)k);
    if (m == 0 || n == 0)
        return VX_OK;
    const int isa = vx_active_isa();
    if (isa < 0)
        return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm: this CPU has neither AVX2+FMA nor AVX-512; "
                       "Vortex needs one of them");

    /* Canonical problem: C row-major with unit column stride. Column-major
     * computes C^T = op(B)^T op(A)^T, which is row-major with the same ldc. */
    vx_gemm_args g = {0};
    g.alpha = alpha;
    g.beta = beta;
    g.c = c;
    g.c_rs = ldc;
    g.k = k;
    if (rm) {
        g.m = m; g.n = n;
        g.a = a; g.a_rs = ta ? 1 : lda; g.a_cs = ta ? lda : 1;
        g.b = b; g.b_rs = tb ? 1 : ldb; g.b_cs = tb ? ldb : 1;
    } else {
        g.m = n; g.n = m;
        g.a = b; g.a_rs = tb ? 1 : ldb; g.a_cs = tb ? ldb : 1;
        g.b = a; g.b_rs = ta ? 1 : lda; g.b_cs = ta ? lda : 1;
    }

    const int verbose = vx_verbose();
    const double t0 = verbose ? now_us() : 0.0;
    char desc[160] = "scale";
    int threads = 1;
    if (k == 0 || alpha == 0.0f) {
        scale_c(g.m, g.n, beta, g.c, g.c_rs);
    } else {
        vx_gemm_shape shape = { g.m, g.n, g.k, g.b_cs == 1, g.a_cs == 1, vx_pool_warm(), 0, 0, 0, 0, 0, 0, 0, 0, 0 };
        vx_gemm_plan plan;
        vx_plan_gemm(&shape, (vx_isa)isa, vx_threads(), &plan);
        if ((s = vx_cpu_gemm(&g, &plan, &threads)) != VX_OK)
            return s;
        if (verbose)
            vx_plan_describe(&plan, desc, sizeof desc);
    }
    if (verbose) {
        const double us = now_us() - t0;
        fprintf(stderr, "vortex: gemm,cpu,%s,%s%s,m=%lld,n=%lld,k=%lld,alpha=%g,beta=%g,plan=%s,threads=%d,"
                "time_us=%.2f,gflops=%.1f\n", rm ? "row" : "col", trans_name(transa), trans_name(transb),
                (long long)m, (long long)n, (long long)k, alpha, beta, desc, threads, us,
                us > 0 ? 2e-3 * (double)m * (double)n * (double)k / us : 0.0);
    }
    return VX_OK; /* vx_last_error() keeps the last failure's message */
}
