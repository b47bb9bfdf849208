/* Public entry points: argument checks (nothing is written on a bad call),
 * canonicalisation to one row-major problem with unit-stride C rows, routing
 * to the CPU backend, and the VORTEX_VERBOSE log line. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "analyzer/plan.h"
#include "cpu/gemm.h"
#include "cpu/isa.h"
#include "cpu/threadpool.h"
#include "cuda/cuda_backend.h"
#include "runtime.h"
#include "status.h"
#include "vortex/vortex.h"

static int valid_layout(vx_layout l) { return l == VX_ROW_MAJOR || l == VX_COL_MAJOR; }
static int valid_trans(vx_transpose t) { return t == VX_NO_TRANS || t == VX_TRANS; }
static const char *trans_name(vx_transpose t) { return t == VX_TRANS ? "T" : "N"; }

/* A stored rows x cols matrix with leading dimension ld must have
 * ld >= max(1, cols), and its last element's byte offset must fit int64.
 * Inlined: every call checks three matrices. */
static inline __attribute__((always_inline)) vx_status check_matrix(const char *fn, const char *name, const void *p,
                                                                    int64_t rows, int64_t cols, int64_t ld,
                                                                    const char *ld_name, int elem)
{
    const int64_t need = cols > 1 ? cols : 1;
    if (ld < need)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: %s = %lld is too small: %s is stored as %lld x %lld, "
                       "so %s must be >= %lld", fn, ld_name, (long long)ld, name, (long long)rows,
                       (long long)cols, ld_name, (long long)need);
    if (rows > 0 && cols > 0) {
        /* With rows and ld below 2^30 (both >= 0 here, cols <= ld), the
         * last byte offset is below 4 * 2^60: only larger ones need the
         * overflow checks. */
        int64_t last, bytes;
        if (((uint64_t)rows | (uint64_t)ld) >> 30 &&
            (__builtin_mul_overflow(rows - 1, ld, &last) || __builtin_add_overflow(last, cols, &last) ||
             __builtin_mul_overflow(last, (int64_t)elem, &bytes)))
            return vx_fail(VX_ERR_INVALID_ARG, "%s: %s (%lld x %lld, %s = %lld) spans more than "
                           "2^63 bytes", fn, name, (long long)rows, (long long)cols, ld_name, (long long)ld);
        if (!p)
            return vx_fail(VX_ERR_INVALID_ARG, "%s: %s is NULL but holds %lld x %lld elements",
                           fn, name, (long long)rows, (long long)cols);
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

static int valid_dtype(vx_dtype t) { return t == VX_F32 || t == VX_F16 || t == VX_BF16; }
static const char *dtype_name(vx_dtype t) { return t == VX_F16 ? "f16" : t == VX_BF16 ? "bf16" : "f32"; }
static int dtype_bytes(vx_dtype t) { return t == VX_F32 ? 4 : 2; }

vx_cuda_gemm_args vx_cuda_canonical(vx_layout layout, vx_transpose transa, vx_transpose transb,
                                    int64_t m, int64_t n, int64_t k, float alpha,
                                    const void *a, vx_dtype a_type, int64_t lda,
                                    const void *b, int64_t ldb, float beta,
                                    void *c, vx_dtype c_type, int64_t ldc, vx_math_mode math)
{
    const int ta = transa == VX_TRANS, tb = transb == VX_TRANS;
    vx_cuda_gemm_args g;
    g.alpha = alpha; g.beta = beta; g.c = c; g.ldc = ldc; g.k = k;
    g.ab_type = a_type; g.c_type = c_type; g.math = math;
    if (layout == VX_ROW_MAJOR) {
        g.m = m; g.n = n;
        g.a = a; g.lda = lda; g.a_kcontig = !ta;
        g.b = b; g.ldb = ldb; g.b_kcontig = tb;
    } else {
        g.m = n; g.n = m;
        g.a = b; g.lda = ldb; g.a_kcontig = !tb;
        g.b = a; g.ldb = lda; g.b_kcontig = ta;
    }
    return g;
}

/* dyn_gemm and dyn_gemm_ex: checks, routing (host or device memory), the
 * canonical row-major problem, the run, the verbose line. Inlined into
 * both, so dyn_gemm's constant types and math mode fold away its checks. */
static inline __attribute__((always_inline)) vx_status
gemm_any(const char *fn, vx_layout layout, vx_transpose transa, vx_transpose transb, int64_t m, int64_t n,
         int64_t k, float alpha, const void *a, vx_dtype at, int64_t lda, const void *b, vx_dtype bt, int64_t ldb,
         float beta, void *c, vx_dtype ct, int64_t ldc, vx_math_mode math)
{
    if (!valid_layout(layout))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: layout %d is neither VX_ROW_MAJOR (101) nor "
                       "VX_COL_MAJOR (102)", fn, (int)layout);
    if (!valid_trans(transa) || !valid_trans(transb))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: trans%s %d is neither VX_NO_TRANS (111) nor "
                       "VX_TRANS (112)", fn, valid_trans(transa) ? "b" : "a",
                       (int)(valid_trans(transa) ? transb : transa));
    if (!valid_dtype(at) || !valid_dtype(bt) || !valid_dtype(ct))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: a_type %d, b_type %d, c_type %d: each must be VX_F32 (0), "
                       "VX_F16 (1) or VX_BF16 (2)", fn, (int)at, (int)bt, (int)ct);
    if (math != VX_MATH_DEFAULT && math != VX_MATH_TF32)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: math mode %d is neither VX_MATH_DEFAULT (0) nor "
                       "VX_MATH_TF32 (1)", fn, (int)math);
    if (m < 0 || n < 0 || k < 0)
        return vx_fail(VX_ERR_INVALID_ARG, "%s: sizes must be >= 0 (m = %lld, n = %lld, k = %lld)",
                       fn, (long long)m, (long long)n, (long long)k);

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
    if ((s = check_matrix(fn, "A", a, a_rows, a_cols, lda, "lda", dtype_bytes(at))) != VX_OK ||
        (s = check_matrix(fn, "B", b, b_rows, b_cols, ldb, "ldb", dtype_bytes(bt))) != VX_OK ||
        (s = check_matrix(fn, "C", c, c_rows, c_cols, ldc, "ldc", dtype_bytes(ct))) != VX_OK)
        return s;
    int64_t mn, mk, kn;
    if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(m, k, &mk) ||
        __builtin_mul_overflow(k, n, &kn))
        return vx_fail(VX_ERR_INVALID_ARG, "%s: m*n, m*k or k*n overflows int64 (m = %lld, "
                       "n = %lld, k = %lld)", fn, (long long)m, (long long)n, (long long)k);
    if (m == 0 || n == 0)
        return VX_OK;

    /* Where the operands live. Only what the call reads counts: with k == 0
     * or alpha == 0, A and B are never touched (and may be NULL). */
    const int reads_ab = k > 0 && alpha != 0.0f;
    const vx_call_settings set = vx_settings();
    int on_gpu = 0;
    if (vx_cuda_available()) {
        const int dc = vx_cuda_pointer_is_device(c);
        const int da = reads_ab ? vx_cuda_pointer_is_device(a) : dc;
        const int db = reads_ab ? vx_cuda_pointer_is_device(b) : dc;
        if (da != dc || db != dc)
            return vx_fail(VX_ERR_INVALID_ARG, "%s: A is in %s memory, B in %s memory and C in %s memory; "
                           "all must be host memory (CPU) or all device memory (GPU)", fn,
                           da ? "device" : "host", db ? "device" : "host", dc ? "device" : "host");
        on_gpu = dc;
    }
    if (at != bt)
        return vx_fail(VX_ERR_UNSUPPORTED, "%s: A is %s but B is %s; both must have one type", fn,
                       dtype_name(at), dtype_name(bt));
    if (ct != VX_F32 && ct != at)
        return vx_fail(VX_ERR_UNSUPPORTED, "%s: C of type %s with %s inputs is not supported (C must be f32 or "
                       "the inputs' type)", fn, dtype_name(ct), dtype_name(at));
    if (!on_gpu && at != VX_F32)
        return vx_fail(VX_ERR_UNSUPPORTED, "%s: %s operands in host memory are not supported: the CPU backend "
                       "is fp32 only (pass device memory to run on the GPU)", fn, dtype_name(at));

    const int verbose = set.verbose;
    const double t0 = verbose ? now_us() : 0.0;
    char desc[160]; /* filled only for the verbose line: zeroing it cost a `rep stos` a call */
    desc[0] = '\0';
    int threads = 1;
    if (on_gpu) {
        /* One canonical problem (C row-major) for the device backend. */
        const vx_cuda_gemm_args cg = vx_cuda_canonical(layout, transa, transb, m, n, k, alpha, a, at, lda,
                                                       b, ldb, beta, c, ct, ldc, math);
        if ((s = vx_cuda_gemm(&cg, desc, sizeof desc)) != VX_OK)
            return s;
        threads = 0;
    } else {
        const int isa = vx_active_isa();
        if (isa < 0)
            return vx_fail(VX_ERR_UNSUPPORTED, "%s: this CPU has neither AVX2+FMA nor AVX-512; "
                           "Vortex needs one of them", fn);
        /* The canonical problem (C row-major, as vx_cuda_canonical frames it)
         * as the strides the CPU driver takes; written field by field, since
         * a zeroed struct plus stores cost a `rep stos` a call. */
        const int a_kcontig = rm ? !ta : !tb, b_kcontig = rm ? tb : ta;
        const int64_t la = rm ? lda : ldb, lb = rm ? ldb : lda;
        const vx_gemm_args g = {
            .m = rm ? m : n, .n = rm ? n : m, .k = k,
            .alpha = alpha, .beta = beta,
            .a = (const float *)(rm ? a : b), .a_rs = a_kcontig ? la : 1, .a_cs = a_kcontig ? 1 : la,
            .b = (const float *)(rm ? b : a), .b_rs = b_kcontig ? 1 : lb, .b_cs = b_kcontig ? lb : 1,
            .c = (float *)c, .c_rs = ldc, .ext = NULL,
        };
        if (!reads_ab) {
            scale_c(g.m, g.n, beta, g.c, g.c_rs);
            memcpy(desc, "scale", sizeof "scale");
        } else {
            /* Whether the pool's workers still spin, and what a region
             * costs now (threadpool.h, vx_pool_state), matter only to a
             * budget of more than one thread. */
            const int budget = set.threads, warm = budget > 1 ? vx_pool_state() : 0;
            vx_gemm_plan plan;
            vx_plan_gemm_plain(g.m, g.n, g.k, g.b_cs == 1, g.a_cs == 1, la, lb, ldc, warm, (vx_isa)isa, budget,
                               &plan);
            /* One thread because the workers sleep: in a stream of such
             * calls, wake them once (threadpool.h, vx_pool_stream_note).
             * Calls too small for two threads even then skip the check. */
            const int stream =
                vx_pool_stream_call(warm, budget, plan.threads, (double)g.m * (double)g.n * (double)g.k);
            if (stream && vx_pool_stream_recent()) {
                vx_gemm_plan spun;
                vx_plan_gemm_plain(g.m, g.n, g.k, g.b_cs == 1, g.a_cs == 1, la, lb, ldc, warm | 1, (vx_isa)isa,
                                   budget, &spun);
                if (spun.threads > 1)
                    plan = spun;
            }
            s = vx_cpu_gemm(&g, &plan, &threads);
            if (stream)
                vx_pool_stream_note();
            if (s != VX_OK)
                return s;
            if (verbose)
                vx_plan_describe(&plan, desc, sizeof desc);
        }
    }
    if (verbose) {
        /* GPU calls are asynchronous: their time is the launch's, not the kernel's. */
        const double us = now_us() - t0;
        /* the leading dimensions too: plans are chosen for them (as oneDNN's
         * verbose lines print strides) */
        fprintf(stderr, "vortex: gemm,%s,%s,%s%s,%s%s,m=%lld,n=%lld,k=%lld,lda=%lld,ldb=%lld,ldc=%lld,alpha=%g,"
                "beta=%g,plan=%s,threads=%d,%s=%.2f,gflops=%.1f\n", on_gpu ? "gpu" : "cpu", rm ? "row" : "col",
                trans_name(transa), trans_name(transb), dtype_name(at), ct != at ? (ct == VX_F32 ? "->f32" : "") :
                (math == VX_MATH_TF32 && at == VX_F32 && on_gpu ? "(tf32)" : ""),
                (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc, alpha,
                beta, desc, threads,
                on_gpu ? "launch_us" : "time_us", us,
                !on_gpu && us > 0 ? 2e-3 * (double)m * (double)n * (double)k / us : 0.0);
    }
    return VX_OK; /* vx_last_error() keeps the last failure's message */
}

VX_API vx_status dyn_gemm(vx_layout layout, vx_transpose transa, vx_transpose transb,
                          int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb,
                          float beta, float *c, int64_t ldc)
{
    return gemm_any("dyn_gemm", layout, transa, transb, m, n, k, alpha, a, VX_F32, lda, b, VX_F32, ldb,
                    beta, c, VX_F32, ldc, VX_MATH_DEFAULT);
}

VX_API vx_status dyn_gemm_ex(vx_layout layout, vx_transpose transa, vx_transpose transb,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const void *a, vx_dtype a_type, int64_t lda,
                             const void *b, vx_dtype b_type, int64_t ldb, float beta,
                             void *c, vx_dtype c_type, int64_t ldc, vx_math_mode math)
{
    return gemm_any("dyn_gemm_ex", layout, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb,
                    beta, c, c_type, ldc, math);
}

VX_API vx_status vx_cuda_set_stream(void *stream) { return vx_cuda_stream_set(stream); }

VX_API int vx_cuda_device_count(void)
{
    return vx_cuda_device_total();
}
