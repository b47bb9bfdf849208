/* vortex-bench-gemm-cuda: Vortex dyn_gemm_ex against cuBLAS on the same
 * device buffers and the same stream, in one run, row-major
 * C[MxN] = op(A) op(B) (alpha 1, beta 0), fp32 accumulation; the built-in
 * suites are NN, suite files (the format vortex-bench-gemm reads) give each
 * case's transposes. Leading dimensions are tight.
 *
 * Per shape: one checked call per library on NaN-filled C (Vortex must match
 * cuBLAS within the dtype's relative Frobenius tolerance), warm-up, then
 * repetitions interleaved across the libraries (rotating which goes first),
 * each call timed alone by a cudaEvent pair on an idle stream; the reported
 * time is the median. The results of the last timed calls are checked again.
 * cuBLAS's row-major product is the usual swap: column-major
 * C^T = op(B)^T op(A)^T (see call_cublas).
 * See --help and benchmarks/suites/README.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include "cuda/cuda_backend.h"
#include <vortex/vortex.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "vortex-bench-gemm-cuda"

/* ---- element types ------------------------------------------------------ */

enum { DT_F32, DT_TF32, DT_F16, DT_BF16, NDT };
static const char *const dt_name[NDT] = {"f32", "tf32", "f16", "bf16"};
/* Relative Frobenius tolerance of Vortex vs cuBLAS. */
static const double dt_tol[NDT] = {1e-5, 5e-3, 2e-2, 2e-2};

static size_t dt_size(int dt) { return dt == DT_F16 || dt == DT_BF16 ? 2 : 4; }
static vx_dtype dt_vx(int dt) { return dt == DT_F16 ? VX_F16 : dt == DT_BF16 ? VX_BF16 : VX_F32; }

/* fp32 <-> fp16 / bf16 on the host, round to nearest even (the C side has no
 * __float2half_rn). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
    if (ax < 0x38800000u) {              /* below 2^-14: a subnormal half */
        float v;
        memcpy(&v, &ax, 4);
        return (uint16_t)(sign | (uint16_t)lrintf(v * 16777216.0f)); /* units of 2^-24 */
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)((r - 0x38000000u) >> 13));
}

static float f16_to_f32(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 0x400u), (int)e - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void to_dtype(int dt, const float *src, void *dst, int64_t n)
{
    if (dt_size(dt) == 4) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = dt == DT_F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
}

static void from_dtype(int dt, const void *src, float *dst, int64_t n)
{
    if (dt_size(dt) == 4) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = dt == DT_F16 ? f16_to_f32(s[i]) : bf16_to_f32(s[i]);
}

/* ---- cases -------------------------------------------------------------- */

/* What kind of suite a case comes from; its suite name is in gcase.suite
 * (the built-in name, or a suite file's basename without extension). */
enum { S_TRANSFORMER, S_ADAPTIVE, S_SMALL, S_SHAPE, S_FILE, NSUITE };
static const char *const suite_name[NSUITE] = {"transformer", "adaptive", "small", "shape", "file"};

/* What is timed per case: Vortex with the model's choice, Vortex forced to
 * Tensor Cores or to CUDA cores (the adaptive suite), and cuBLAS. */
enum { R_AUTO, R_TENSOR, R_SIMT, R_CUBLAS, NRUN };
static const char *const run_name[NRUN] = {"auto", "tensor", "simt", "cublas"};

typedef struct {
    int kind, dt;      /* S_*, DT_* */
    char suite[40];    /* the CSV's suite name */
    char name[48];     /* the case name (suite files: NAME, or MODE_MxNxK) */
    int64_t m, n, k;
    char ta, tb;       /* 'N' or 'T': row-major C = op(A) op(B) */
} gcase;

typedef struct {
    gcase *v;
    int n, cap;
} case_list;

static void push_case(case_list *l, const gcase *c)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(1);
        }
    }
    l->v[l->n++] = *c;
}

/* A built-in NN case, named MxNxK. */
static void add_case(case_list *l, int kind, int dt, int64_t m, int64_t n, int64_t k)
{
    gcase c = {.kind = kind, .dt = dt, .m = m, .n = n, .k = k, .ta = 'N', .tb = 'N'};
    snprintf(c.suite, sizeof c.suite, "%s", suite_name[kind]);
    snprintf(c.name, sizeof c.name, "%" PRId64 "x%" PRId64 "x%" PRId64, m, n, k);
    push_case(l, &c);
}

/* Tight leading dimensions of the row-major operands (at least 1, as BLAS
 * wants): A is stored M x K (ta 'N') or K x M (ta 'T'), B K x N or N x K,
 * C M x N. The element counts are M*K, K*N and M*N either way. */
static int64_t ld1(int64_t x) { return x > 1 ? x : 1; }
static int64_t case_lda(const gcase *c) { return ld1(c->ta == 'T' ? c->m : c->k); }
static int64_t case_ldb(const gcase *c) { return ld1(c->tb == 'T' ? c->k : c->n); }
static int64_t case_ldc(const gcase *c) { return ld1(c->n); }

/* "MxNxK", with the mode and the name for a suite file's case. */
static const char *case_label(const gcase *c, char *buf, size_t len)
{
    if (c->kind == S_FILE)
        snprintf(buf, len, "%" PRId64 "x%" PRId64 "x%" PRId64 " %c%c %s", c->m, c->n, c->k, c->ta,
                 c->tb, c->name);
    else
        snprintf(buf, len, "%" PRId64 "x%" PRId64 "x%" PRId64, c->m, c->n, c->k);
    return buf;
}

/* Transformer dense layers (BERT-base/large, GPT-2 shapes), tokens M. */
static const int tf_m[] = {1, 2, 5, 8, 13, 16, 31, 64, 100, 128, 199, 256, 301, 384, 401, 476, 512};
static const int tf_m_quick[] = {1, 5, 16, 64, 199, 512};
static const int tf_nk[][2] = {{768, 768},   {2304, 768},  {3072, 768}, {768, 3072},
                               {1024, 1024}, {4096, 1024}, {1024, 4096}};

#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

static void suite_transformer(case_list *l, int dt, int quick)
{
    const int *ms = quick ? tf_m_quick : tf_m;
    int nm = quick ? COUNT(tf_m_quick) : COUNT(tf_m);
    for (int j = 0; j < COUNT(tf_nk); j++)
        for (int i = 0; i < nm; i++)
            add_case(l, S_TRANSFORMER, dt, ms[i], tf_nk[j][0], tf_nk[j][1]);
}

/* The paper's case: fp16, K = 1024, N in 1024 2048 4096, M = 1..16. */
static void suite_adaptive(case_list *l, int quick)
{
    static const int ns[] = {1024, 2048, 4096};
    static const int mq[] = {1, 2, 4, 8, 13, 16};
    for (int j = 0; j < COUNT(ns); j++) {
        if (quick && ns[j] == 2048)
            continue;
        for (int m = 1; m <= 16; m++) {
            int keep = !quick;
            for (int q = 0; q < COUNT(mq); q++)
                keep |= mq[q] == m;
            if (keep)
                add_case(l, S_ADAPTIVE, DT_F16, m, ns[j], 1024);
        }
    }
}

/* A handful of shapes, some with odd sizes (unaligned rows for 16-bit types). */
static void suite_small(case_list *l, int dt)
{
    static const int s[][3] = {{1, 768, 768},    {8, 2304, 768},  {13, 3072, 768}, {64, 768, 3072},
                               {199, 1024, 1024}, {512, 4096, 1024}, {7, 33, 65},   {100, 300, 77}};
    for (int i = 0; i < COUNT(s); i++)
        add_case(l, S_SMALL, dt, s[i][0], s[i][1], s[i][2]);
}

static int parse_mode(const char *s, char *ta, char *tb)
{
    if (strlen(s) != 2)
        return -1;
    char a = (char)toupper((unsigned char)s[0]), b = (char)toupper((unsigned char)s[1]);
    if ((a != 'N' && a != 'T') || (b != 'N' && b != 'T'))
        return -1;
    *ta = a;
    *tb = b;
    return 0;
}

/* A suite file, the format vortex-bench-gemm reads: one case per line,
 * "M N K [MODE [NAME]]", MODE NN (default), NT, TN or TT, '#' comments; the
 * suite is the file's basename without extension. With --quick only
 * bench_quick_pick's subset (the same as the CPU runners'). The cases are
 * added once per dtype of dts. Returns -1 (errno set) when the file cannot
 * be opened; a malformed file exits with status 2. */
static int suite_file(case_list *l, const char *path, const int *dts, int ndt, int quick)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    gcase proto = {.kind = S_FILE};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(proto.suite, sizeof proto.suite, "%s", base);
    char *dot = strrchr(proto.suite, '.');
    if (dot && dot != proto.suite)
        *dot = 0;
    case_list file = {0};
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, PROG ": %s:%d: line too long (at most %d characters)\n", path, lineno,
                    (int)sizeof line - 2);
            exit(2);
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        long long m, n, k;
        char mode[8] = "NN", name[96] = "";
        int got = sscanf(line, "%lld %lld %lld %7s %47s", &m, &n, &k, mode, name);
        if (got == EOF)
            continue; /* blank or comment only (0: text that is not a case) */
        gcase c = proto;
        if (got < 3 || m < 0 || n < 0 || k < 0 || parse_mode(mode, &c.ta, &c.tb) != 0) {
            fprintf(stderr, PROG ": %s:%d: expected 'M N K [NN|NT|TN|TT [NAME]]'\n", path, lineno);
            exit(2);
        }
        if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
            fprintf(stderr, PROG ": %s:%d: M, N and K must be at most %d (cuBLAS takes int)\n",
                    path, lineno, INT32_MAX);
            exit(2);
        }
        if (!name[0])
            snprintf(name, sizeof name, "%s_%lldx%lldx%lld", mode, m, n, k);
        snprintf(c.name, sizeof c.name, "%.47s", name); /* as vortex-bench-gemm: 47 at most */
        c.m = m;
        c.n = n;
        c.k = k;
        push_case(&file, &c);
    }
    if (ferror(f)) {
        fprintf(stderr, PROG ": %s: read error: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
    if (!file.n) {
        fprintf(stderr, PROG ": %s: no cases\n", path);
        exit(2);
    }
    if (quick) {
        double *gf = malloc((size_t)file.n * sizeof *gf);
        unsigned char *keep = malloc((size_t)file.n);
        if (!gf || !keep) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(1);
        }
        for (int i = 0; i < file.n; i++) {
            const gcase *c = &file.v[i];
            gf[i] = 2.0 * (double)c->m * (double)c->n * (double)c->k * 1e-9;
        }
        bench_quick_pick(gf, file.n, BENCH_QUICK_FILE_GFLOP, BENCH_QUICK_FILE_CASES, keep);
        int w = 0;
        for (int i = 0; i < file.n; i++)
            if (keep[i])
                file.v[w++] = file.v[i];
        file.n = w;
        free(gf);
        free(keep);
        if (!file.n)
            fprintf(stderr, PROG ": note: %s: --quick keeps no case (none of at most %g GFLOP)\n",
                    path, BENCH_QUICK_FILE_GFLOP);
    }
    for (int d = 0; d < ndt; d++)
        for (int i = 0; i < file.n; i++) {
            file.v[i].dt = dts[d];
            push_case(l, &file.v[i]);
        }
    free(file.v);
    return 0;
}

/* ---- options ------------------------------------------------------------ */

typedef struct {
    int reps, warmup, quick, list;
    int sync;           /* time each call alone (launch overhead included) */
    const char *csv;
    double max_seconds; /* 0: no budget */
    uint64_t seed;
    int dt_on[NDT], dt_order[NDT], ndt;
} options;

static void usage(FILE *f)
{
    fprintf(f, /* one format argument each: the --quick rule for suite files */
"usage: " PROG " [options]\n"
"\n"
"Times Vortex dyn_gemm_ex against cuBLAS on the same device buffers and the same\n"
"CUDA stream (vx_cuda_set_stream / cublasSetStream), row-major\n"
"C[MxN] = op(A) op(B), alpha 1, beta 0, fp32 accumulation, device 0. The built-in\n"
"suites are NN (C = A[MxK] B[KxN]); suite files give each case's transposes.\n"
"Leading dimensions are tight: A is stored M x K (lda K), or K x M (lda M) when\n"
"transposed; B K x N (ldb N), or N x K (ldb K); C M x N (ldc N).\n"
"\n"
"what to run (default: --suite transformer):\n"
"  --suite LIST      comma list of suites (repeatable), built in or files:\n"
"                      transformer  M in 1 2 5 8 13 16 31 64 100 128 199 256 301\n"
"                                   384 401 476 512 x (N,K) in (768,768) (2304,768)\n"
"                                   (3072,768) (768,3072) (1024,1024) (4096,1024)\n"
"                                   (1024,4096): 119 shapes per dtype\n"
"                      adaptive     fp16 only, K=1024, N in 1024 2048 4096, M=1..16\n"
"                                   (48 shapes): Vortex forced to Tensor Cores, to\n"
"                                   CUDA cores, and the model's choice, vs cuBLAS\n"
"                      small        8 shapes per dtype, a few with odd sizes (smoke)\n"
"                      FILE         any other name: a suite file, the format\n"
"                                   vortex-bench-gemm reads (benchmarks/suites/*.txt):\n"
"                                   one case per line 'M N K [MODE [NAME]]', MODE\n"
"                                   NN (default), NT, TN or TT = op(A) op(B),\n"
"                                   row-major; NAME defaults to MODE_MxNxK; '#'\n"
"                                   starts a comment. The suite is named after the\n"
"                                   file (suites/tall_skinny.txt -> tall_skinny);\n"
"                                   its cases run for every --dtype\n"
"  --shape M,N,K     one more shape (repeatable; also MxNxK), for every --dtype\n"
"  --dtype LIST      comma list of f32, tf32, f16, bf16 (default: all four);\n"
"                    the adaptive suite is always f16\n"
"                      f32   Vortex VX_MATH_DEFAULT vs cublasSgemm, default math\n"
"                            (pure fp32)\n"
"                      tf32  Vortex VX_MATH_TF32 vs cublasSgemm with\n"
"                            CUBLAS_TF32_TENSOR_OP_MATH (fp32 in and out)\n"
"                      f16   Vortex with A, B, C fp16 vs cublasGemmEx, A/B/C\n"
"                            CUDA_R_16F, CUBLAS_COMPUTE_32F\n"
"                      bf16  the same with bf16 / CUDA_R_16BF\n"
"  --list            print the cases (suite,dtype,m,n,k,op,case) and exit\n"
"\n"
"how:\n"
"  --reps N          timed calls per library per shape (default 50; --quick 15)\n"
"  --warmup N        untimed calls per library per shape first (default 10;\n"
"                    --quick 3)\n"
"  --quick           fewer shapes (transformer M in 1 5 16 64 199 512; adaptive\n"
"                    M in 1 2 4 8 13 16, N in 1024 4096; a suite file: the same\n"
"                    subset as vortex-bench-gemm --quick, up to %d cases of at\n"
"                    most %g GFLOP spread over the file) and fewer repetitions\n"
"  --sync            time each call alone on an idle stream, so host and launch\n"
"                    overhead count (default: queued, GPU time only; see below)\n"
"  --max-seconds S   stop cleanly (exit status from the shapes run) once S seconds\n"
"                    have been spent; the rest is reported as skipped\n"
"  --seed S          data seed (default 1); inputs uniform in [-1, 1)\n"
"\n"
"output:\n"
"  --csv FILE        one row per shape and Vortex mode:\n"
"                    suite,dtype,mode,m,n,k,vortex_us,cublas_us,speedup,rel_err,\n"
"                    plan,splits,predicted_us,reps,status,op,case\n"
"                    mode = auto (the model's choice), tensor or simt (forced);\n"
"                    speedup = cublas_us / vortex_us (>1: Vortex faster); rel_err =\n"
"                    Vortex vs cuBLAS, relative Frobenius (worst of the first and\n"
"                    the last call); plan, splits, predicted_us = vx_cuda_explain's\n"
"                    pick; status = ok, MISMATCH, ERROR, or ok-blocking (a call\n"
"                    waited for the stream inside: timed with synced calls);\n"
"                    op = op(A) op(B) (NN, NT, TN, TT); case = the case's name\n"
"                    (a suite file's NAME; MxNxK for the built-in suites)\n"
"  -h, --help        this text\n"
"\n"
"Timing: each call is bracketed by a cudaEvent pair; the time is the median.\n"
"By default the calls of 8 repetitions are enqueued while a host function\n"
"(cudaLaunchHostFunc) holds the stream, then released, so the GPU runs them back\n"
"to back and the events measure GPU time without host overhead. A call that\n"
"waits for the stream inside is reported (the hold gives up after 0.5 s), its\n"
"shape is timed with synced calls, and after 3 such shapes the rest too. With\n"
"--sync every call runs alone and is waited for, so host work (cuBLAS's\n"
"heuristics, Vortex's plan lookup) and launch latency count too. A ~0.25 s\n"
"cuBLAS warm-up raises the clocks first. Operands are reused across shapes\n"
"(prefixes of one random buffer), so they are often L2-resident, for both\n"
"libraries alike.\n"
"\n"
"Per (suite, dtype) it prints the geomean speedup over all shapes and over\n"
"M <= 16; for adaptive also per mode and the model's choice vs the faster of\n"
"the two forced units.\n"
"Tolerances (Vortex vs cuBLAS): f32 1e-5, tf32 5e-3, f16 and bf16 2e-2.\n"
"Exit status: 0 ok (also when there is no CUDA device: 'skipped: no CUDA\n"
"device'), 1 a mismatch or an error, 2 bad usage (a malformed suite file:\n"
"FILE:LINE is named).\n", BENCH_QUICK_FILE_CASES, BENCH_QUICK_FILE_GFLOP);
}

static int need(int i, int argc, const char *opt)
{
    if (i + 1 >= argc) {
        fprintf(stderr, PROG ": %s needs an argument\n", opt);
        exit(2);
    }
    return 1;
}

static double num(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno) {
        fprintf(stderr, PROG ": %s: not a number: '%s'\n", opt, s);
        exit(2);
    }
    return v;
}

static int parse_dtypes(const char *s, options *o)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    memset(o->dt_on, 0, sizeof o->dt_on);
    o->ndt = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int dt = -1;
        for (int d = 0; d < NDT; d++)
            if (!strcmp(t, dt_name[d]))
                dt = d;
        if (dt < 0) {
            fprintf(stderr, PROG ": unknown dtype '%s' (f32, tf32, f16, bf16)\n", t);
            return -1;
        }
        if (!o->dt_on[dt]) {
            o->dt_on[dt] = 1;
            o->dt_order[o->ndt++] = dt;
        }
    }
    return o->ndt ? 0 : -1;
}

/* ---- CUDA / cuBLAS plumbing --------------------------------------------- */

static cudaStream_t g_stream;
static cublasHandle_t g_blas;
static cudaEvent_t g_ev0, g_ev1;
/* Queued timing: the stream is held by a host function until a chunk of
 * calls is enqueued, so the GPU runs them back to back and each event pair
 * measures GPU time only. */
#define CHUNK 8
static cudaEvent_t g_evq[CHUNK][NRUN][2];
static atomic_int g_gate_open, g_gate_timed_out;
static int g_held_shapes; /* shapes where a call blocked the held stream */
static FILE *g_csv;
static char g_where[256] = "start-up"; /* what was running, for fatal errors */

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "ERROR: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " [during %s]\n", g_where);
    printf("ERROR: a CUDA or cuBLAS call failed during %s (details on stderr)\n", g_where);
    va_end(ap);
    if (g_csv)
        fclose(g_csv);
    exit(1);
}

static void ck_cuda(cudaError_t e, const char *what, int line)
{
    if (e != cudaSuccess)
        fatal("%s -> %s: %s (line %d)", what, cudaGetErrorName(e), cudaGetErrorString(e), line);
}

static void ck_blas(cublasStatus_t s, const char *what, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        fatal("%s -> %s (%d) (line %d)", what, cublasGetStatusString(s), (int)s, line);
}

#define CK(call) ck_cuda((call), #call, __LINE__)
#define CB(call) ck_blas((call), #call, __LINE__)

/* Device operands: A and B prefixes of random buffers, one C per run. */
typedef struct {
    void *a, *b, *c[NRUN];
    int64_t a_elems, b_elems, c_elems;
    int loaded_dt; /* dtype whose values a and b hold (-1: none) */
} dbufs;

typedef struct {
    float *a, *b;     /* random fp32 source values */
    void *stage;      /* conversion buffer, max(a, b, c) elements x 4 bytes */
    float *cx, *cref; /* C read back as fp32 */
} hbufs;

static void upload(int dt, dbufs *d, hbufs *h)
{
    if (d->loaded_dt >= 0 && dt_size(d->loaded_dt) == dt_size(dt) &&
        (dt_size(dt) == 4 || d->loaded_dt == dt))
        return; /* f32 and tf32 share fp32 storage */
    to_dtype(dt, h->a, h->stage, d->a_elems);
    CK(cudaMemcpy(d->a, h->stage, (size_t)d->a_elems * dt_size(dt), cudaMemcpyHostToDevice));
    to_dtype(dt, h->b, h->stage, d->b_elems);
    CK(cudaMemcpy(d->b, h->stage, (size_t)d->b_elems * dt_size(dt), cudaMemcpyHostToDevice));
    d->loaded_dt = dt;
}

static void set_policy(int run)
{
    if (run == R_AUTO) {
        vx_cuda_set_policy(NULL);
        return;
    }
    vx_cuda_policy p = {.instance = -1, .splits = 0,
                        .unit = run == R_TENSOR ? VX_UNIT_TENSOR : VX_UNIT_SIMT};
    vx_cuda_set_policy(&p);
}

static vx_transpose vx_trans(char t) { return t == 'T' ? VX_TRANS : VX_NO_TRANS; }

static vx_status call_vortex(const gcase *c, const dbufs *d, void *cbuf)
{
    vx_dtype t = dt_vx(c->dt);
    return dyn_gemm_ex(VX_ROW_MAJOR, vx_trans(c->ta), vx_trans(c->tb), c->m, c->n, c->k, 1.0f, d->a,
                       t, case_lda(c), d->b, t, case_ldb(c), 0.0f, cbuf, t, case_ldc(c),
                       c->dt == DT_TF32 ? VX_MATH_TF32 : VX_MATH_DEFAULT);
}

/* cuBLAS's math mode for the case's dtype (set outside the timed region). */
static void blas_prepare(const gcase *c)
{
    CB(cublasSetMathMode(g_blas, c->dt == DT_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

/* Row-major C = op(A) op(B) as column-major C^T (n x m) = op(B)^T op(A)^T.
 * A row-major R x S matrix with leading dimension ld is, read column-major
 * with the same ld, its S x R transpose. So:
 *   B, tb 'N': stored K x N (ldb N), column-major it is N x K = op(B)^T: OP_N;
 *       tb 'T': stored N x K (ldb K), column-major K x N = op(B): OP_T.
 *   A, ta 'N': stored M x K (lda K), column-major K x M = op(A)^T: OP_N;
 *       ta 'T': stored K x M (lda M), column-major M x K = op(A): OP_T.
 *   C: stored M x N (ldc N), column-major N x M = C^T.
 * cuBLAS's first operand is op(B)^T (n x k), the second op(A)^T (k x m), and
 * each leading dimension is the row-major one (ldb >= n for OP_N, >= k for
 * OP_T; lda >= k for OP_N, >= m for OP_T, as cuBLAS requires). */
static void call_cublas(const gcase *c, const dbufs *d, void *cbuf)
{
    const float one = 1.0f, zero = 0.0f;
    const int m = (int)c->m, n = (int)c->n, k = (int)c->k;
    const int lda = (int)case_lda(c), ldb = (int)case_ldb(c), ldc = (int)case_ldc(c);
    const cublasOperation_t opa = c->ta == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opb = c->tb == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (c->dt == DT_F32 || c->dt == DT_TF32) {
        CB(cublasSgemm(g_blas, opb, opa, n, m, k, &one, d->b, ldb, d->a, lda, &zero, cbuf, ldc));
    } else {
        cudaDataType t = c->dt == DT_F16 ? CUDA_R_16F : CUDA_R_16BF;
        CB(cublasGemmEx(g_blas, opb, opa, n, m, k, &one, d->b, t, ldb, d->a, t, lda, &zero, cbuf,
                        t, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}

/* The same problem as vx_cuda_gemm sees it after api.c's canonicalisation:
 * row-major C; A k-contiguous for ta 'N' (A(i, p) = a[i*lda + p]), B
 * k-contiguous for tb 'T' (B(p, j) = b[j*ldb + p]). */
static vx_cuda_gemm_args explain_args(const gcase *c, const dbufs *d, void *cbuf)
{
    /* exactly the call call_vortex makes */
    return vx_cuda_canonical(VX_ROW_MAJOR, vx_trans(c->ta), vx_trans(c->tb), c->m, c->n, c->k, 1.0f,
                             d->a, dt_vx(c->dt), case_lda(c), d->b, case_ldb(c), 0.0f, cbuf,
                             dt_vx(c->dt), case_ldc(c),
                             c->dt == DT_TF32 ? VX_MATH_TF32 : VX_MATH_DEFAULT);
}

/* Read back m x n of cbuf as fp32 into out. */
static void read_c(const gcase *c, const void *cbuf, hbufs *h, float *out)
{
    int64_t cnt = c->m * c->n;
    CK(cudaMemcpyAsync(h->stage, cbuf, (size_t)cnt * dt_size(c->dt), cudaMemcpyDeviceToHost,
                       g_stream));
    CK(cudaStreamSynchronize(g_stream));
    from_dtype(c->dt, h->stage, out, cnt);
}

static double rel_frobenius(const float *x, const float *ref, int64_t cnt)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < cnt; i++) {
        double r = ref[i], e = (double)x[i] - r;
        num += e * e;
        den += r * r;
    }
    if (den == 0)
        return num == 0 ? 0 : INFINITY;
    return sqrt(num / den); /* NaN anywhere (an unwritten element) stays NaN */
}

/* On a mismatch, who is off? Both against a double-precision product of the
 * operands as they are on the device (small enough shapes only). */
static void blame(const gcase *c, const dbufs *d, const float *vx, const float *bl)
{
    if ((double)c->m * (double)c->n * (double)c->k > 268435456.0) {
        printf("      (too large for a host reference)\n");
        return;
    }
    /* +1: no zero-byte mallocs (an empty operand) */
    float *a = malloc((size_t)(c->m * c->k + 1) * sizeof *a), *b = malloc((size_t)(c->k * c->n + 1) * sizeof *b);
    float *ref = malloc((size_t)(c->m * c->n + 1) * sizeof *ref);
    void *raw = malloc((size_t)(c->k * c->n > c->m * c->k ? c->k * c->n : c->m * c->k) * 4 + 4);
    if (!a || !b || !ref || !raw) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(1);
    }
    CK(cudaMemcpy(raw, d->a, (size_t)(c->m * c->k) * dt_size(c->dt), cudaMemcpyDeviceToHost));
    from_dtype(c->dt, raw, a, c->m * c->k);
    CK(cudaMemcpy(raw, d->b, (size_t)(c->k * c->n) * dt_size(c->dt), cudaMemcpyDeviceToHost));
    from_dtype(c->dt, raw, b, c->k * c->n);
    /* op(A)(i, p) and op(B)(p, j) from the stored operands (case_lda/ldb) */
    const int64_t lda = case_lda(c), ldb = case_ldb(c);
    const int64_t a_is = c->ta == 'T' ? 1 : lda, a_ps = c->ta == 'T' ? lda : 1;
    const int64_t b_ps = c->tb == 'T' ? 1 : ldb, b_js = c->tb == 'T' ? ldb : 1;
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0;
            for (int64_t p = 0; p < c->k; p++)
                s += (double)a[i * a_is + p * a_ps] * (double)b[p * b_ps + j * b_js];
            ref[i * c->n + j] = (float)s;
        }
    printf("      vs a double-precision host product: vortex %.3g, cublas %.3g\n",
           rel_frobenius(vx, ref, c->m * c->n), rel_frobenius(bl, ref, c->m * c->n));
    int64_t shown = 0;
    for (int64_t i = 0; i < c->m * c->n && shown < 3; i++)
        if (!(fabs((double)vx[i] - ref[i]) <= 0.05 * (fabs((double)ref[i]) + 1e-3))) {
            printf("      C[%" PRId64 ",%" PRId64 "]: vortex %g, cublas %g, reference %g\n",
                   i / c->n, i % c->n, (double)vx[i], (double)bl[i], (double)ref[i]);
            shown++;
        }
    free(a);
    free(b);
    free(ref);
    free(raw);
}

/* ---- one case ----------------------------------------------------------- */

typedef struct {
    int ran;
    int on[NRUN];
    double us[NRUN];     /* median microseconds */
    double err[NRUN];    /* Vortex vs cuBLAS, worst of the first and the last call */
    int plan[NRUN], splits[NRUN], transposed[NRUN]; /* transposed: runs C^T = B^T A^T */
    double pred_us[NRUN];
    int failed[NRUN];    /* a Vortex call returned an error */
    double host_max_s[NRUN]; /* longest host time of one call */
    int held;            /* queued timing: a call waited for the held stream */
    int mismatch[NRUN];
    int reps;
} gres;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void vortex_error(const gcase *c, gres *r, int run, vx_status s)
{
    if (r->failed[run])
        return;
    r->failed[run] = 1;
    char lb[128];
    printf("  ERROR %s %s %s vortex(%s): dyn_gemm_ex: %s: %s\n", c->suite, dt_name[c->dt],
           case_label(c, lb, sizeof lb), run_name[run], vx_status_string(s), vx_last_error());
}

/* Vortex's own launch errors show up here rather than at the next sync. */
static void vortex_launch_check(const gcase *c, gres *r, int run)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && !r->failed[run]) {
        r->failed[run] = 1;
        char lb[128];
        printf("  ERROR %s %s %s vortex(%s): pending CUDA error after dyn_gemm_ex returned: %s\n",
               c->suite, dt_name[c->dt], case_label(c, lb, sizeof lb), run_name[run],
               cudaGetErrorString(e));
    }
}

/* Compare every Vortex run's C with cuBLAS's; phase names the call checked. */
static void check(const gcase *c, const dbufs *d, hbufs *h, gres *r, const char *phase)
{
    const int64_t cnt = c->m * c->n;
    read_c(c, d->c[R_CUBLAS], h, h->cref);
    for (int run = 0; run < R_CUBLAS; run++) {
        if (!r->on[run] || r->failed[run])
            continue;
        read_c(c, d->c[run], h, h->cx);
        double e = rel_frobenius(h->cx, h->cref, cnt);
        if (!(e <= r->err[run]))
            r->err[run] = e; /* NaN sticks */
        if (!(e <= dt_tol[c->dt])) {
            char lb[128];
            if (!r->mismatch[run])
                printf("\n  !!!!!!!! MISMATCH !!!!!!!! %s %s %s vortex(%s), %s call: rel. "
                       "Frobenius error vs cuBLAS %.3g (tol %.1g)\n", c->suite, dt_name[c->dt],
                       case_label(c, lb, sizeof lb), run_name[run], phase, e, dt_tol[c->dt]);
            if (!r->mismatch[run])
                blame(c, d, h->cx, h->cref);
            r->mismatch[run] = 1;
        }
    }
}

/* One call of run between events e0 and e1 (host side only; no wait). */
static void call_between(const gcase *c, const dbufs *d, gres *r, int run, cudaEvent_t e0,
                         cudaEvent_t e1)
{
    if (run != R_CUBLAS)
        set_policy(run);
    CK(cudaEventRecord(e0, g_stream));
    double t0 = bench_now();
    if (run == R_CUBLAS) {
        call_cublas(c, d, d->c[run]);
    } else {
        vx_status s = call_vortex(c, d, d->c[run]);
        if (s != VX_OK)
            vortex_error(c, r, run, s);
    }
    double host = bench_now() - t0;
    if (host > r->host_max_s[run])
        r->host_max_s[run] = host;
    CK(cudaEventRecord(e1, g_stream));
}

static double elapsed_us(cudaEvent_t e0, cudaEvent_t e1)
{
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return (double)ms * 1e3;
}

/* --sync and the warm-up: one call alone on an idle stream. */
static double time_one(const gcase *c, const dbufs *d, gres *r, int run)
{
    call_between(c, d, r, run, g_ev0, g_ev1);
    CK(cudaEventSynchronize(g_ev1));
    return elapsed_us(g_ev0, g_ev1);
}

/* Holds the stream until the chunk is enqueued (at most 0.5 s: a call that
 * waits for the stream inside would otherwise deadlock). Runs on a CUDA
 * runtime thread; no CUDA calls here. */
static void CUDART_CB gate_fn(void *arg)
{
    (void)arg;
    double t0 = bench_now();
    while (!atomic_load(&g_gate_open)) {
        if (bench_now() - t0 > 0.5) {
            atomic_store(&g_gate_timed_out, 1);
            return;
        }
        sched_yield();
    }
}

/* Repetitions [rep0, rep0 + n) of the runs in on[], enqueued behind the gate
 * (rotating order), then timed from their event pairs. */
static void time_chunk(const gcase *c, const dbufs *d, gres *r, const int *on, int non, int rep0,
                       int n, int reps, double *samples)
{
    atomic_store(&g_gate_open, 0);
    CK(cudaLaunchHostFunc(g_stream, gate_fn, NULL));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < non; j++) {
            int run = on[(rep0 + i + j) % non];
            call_between(c, d, r, run, g_evq[i][run][0], g_evq[i][run][1]);
        }
    atomic_store(&g_gate_open, 1);
    CK(cudaStreamSynchronize(g_stream));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < non; j++) {
            int run = on[j];
            samples[(size_t)run * reps + rep0 + i] = elapsed_us(g_evq[i][run][0], g_evq[i][run][1]);
        }
}

static void run_case(const gcase *c, const options *o, dbufs *d, hbufs *h, gres *r)
{
    memset(r, 0, sizeof *r);
    char lb[128];
    snprintf(g_where, sizeof g_where, "%s %s %s", c->suite, dt_name[c->dt],
             case_label(c, lb, sizeof lb));
    r->on[R_AUTO] = r->on[R_CUBLAS] = 1;
    if (c->kind == S_ADAPTIVE)
        r->on[R_TENSOR] = r->on[R_SIMT] = 1;
    upload(c->dt, d, h);
    blas_prepare(c);

    /* The plan per Vortex mode (no launch). */
    for (int run = 0; run < R_CUBLAS; run++) {
        r->plan[run] = -1;
        if (!r->on[run])
            continue;
        set_policy(run);
        vx_cuda_gemm_args g = explain_args(c, d, d->c[run]);
        vx_cuda_choice ch;
        if (vx_cuda_explain(&g, &ch, 1) >= 1) {
            r->plan[run] = ch.instance;
            r->splits[run] = ch.splits;
            r->transposed[run] = ch.transposed;
            r->pred_us[run] = ch.predicted_us;
        }
    }

    /* 1. The first call of each on NaN-filled C, checked. */
    const size_t cbytes = (size_t)(c->m * c->n) * dt_size(c->dt);
    for (int run = 0; run < NRUN; run++) {
        if (!r->on[run])
            continue;
        CK(cudaMemsetAsync(d->c[run], 0xff, cbytes, g_stream));
        if (run == R_CUBLAS) {
            call_cublas(c, d, d->c[run]);
        } else {
            set_policy(run);
            vx_status s = call_vortex(c, d, d->c[run]);
            if (s != VX_OK)
                vortex_error(c, r, run, s);
            vortex_launch_check(c, r, run);
        }
    }
    CK(cudaStreamSynchronize(g_stream));
    check(c, d, h, r, "first");

    int on[NRUN], non = 0;
    for (int run = 0; run < NRUN; run++)
        if (r->on[run] && !r->failed[run])
            on[non++] = run;

    /* 2. Warm-up, 3. timed repetitions, interleaved with a rotating order. */
    for (int w = 0; w < o->warmup; w++)
        for (int j = 0; j < non; j++)
            time_one(c, d, r, on[j]);
    double *samples = calloc((size_t)o->reps * NRUN, sizeof *samples);
    if (!samples) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(1);
    }
    memset(r->host_max_s, 0, sizeof r->host_max_s); /* the warm-up's first calls may load modules */
    /* Queued unless --sync, or a call blocked the held stream in 3 shapes
     * already; a shape falls back to synced calls after its first block. */
    int rep = 0;
    if (!o->sync && g_held_shapes < 3) {
        atomic_store(&g_gate_timed_out, 0);
        for (; rep < o->reps && !atomic_load(&g_gate_timed_out); rep += CHUNK)
            time_chunk(c, d, r, on, non, rep, o->reps - rep < CHUNK ? o->reps - rep : CHUNK,
                       o->reps, samples);
        if (atomic_load(&g_gate_timed_out)) {
            r->held = 1;
            g_held_shapes++;
            rep = 0;
            printf("  WARNING %s: a call blocked while the stream was held (longest host time per "
                   "call:", g_where);
            for (int j = 0; j < non; j++)
                printf(" %s %.3g s", on[j] == R_CUBLAS ? "cublas" : run_name[on[j]],
                       r->host_max_s[on[j]]);
            printf("): it waits for the GPU inside; this shape is timed with synced calls%s\n",
                   g_held_shapes == 3 ? ", and so is the rest of the run" : "");
        }
    }
    for (; rep < o->reps; rep++)
        for (int j = 0; j < non; j++) {
            int run = on[(rep + j) % non];
            samples[(size_t)run * o->reps + rep] = time_one(c, d, r, run);
        }
    r->reps = o->reps;
    for (int j = 0; j < non; j++) {
        int run = on[j];
        if (run != R_CUBLAS)
            vortex_launch_check(c, r, run);
        r->us[run] = bench_median(samples + (size_t)run * o->reps, o->reps);
    }
    free(samples);
    vx_cuda_set_policy(NULL);

    /* 4. The last timed calls' results (beta 0: each call rewrites C). */
    check(c, d, h, r, "last timed");
    r->ran = 1;
}

/* ---- reporting ---------------------------------------------------------- */

static void plan_name(const gres *r, int run, char *buf, size_t len)
{
    const vx_cuda_instance *in = r->plan[run] >= 0 ? vx_cuda_instance_get(r->plan[run]) : NULL;
    if (!in || !in->name)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%s%s", r->transposed[run] ? "T:" : "", in->name);
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == ' ')
            *p = '_';
}

static const char *case_status(const gres *r, int run)
{
    return r->failed[run] ? "ERROR" : r->mismatch[run] ? "MISMATCH" : r->held ? "ok-blocking" : "ok";
}

static double speedup(const gres *r, int run)
{
    if (r->failed[run] || !(r->us[run] > 0) || !(r->us[R_CUBLAS] > 0))
        return NAN;
    return r->us[R_CUBLAS] / r->us[run];
}

static void print_header(const gcase *c)
{
    static const char *const what[NDT] = {
        "Vortex VX_MATH_DEFAULT vs cublasSgemm default math (pure fp32)",
        "Vortex VX_MATH_TF32 vs cublasSgemm CUBLAS_TF32_TENSOR_OP_MATH",
        "Vortex A/B/C fp16 vs cublasGemmEx CUDA_R_16F, CUBLAS_COMPUTE_32F",
        "Vortex A/B/C bf16 vs cublasGemmEx CUDA_R_16BF, CUBLAS_COMPUTE_32F"};
    printf("\n== %s %s: %s ==\n", c->suite, dt_name[c->dt], what[c->dt]);
    if (c->kind == S_FILE) { /* op(A) op(B) per case, and the case's name */
        printf("%-5s %5s %5s %5s %2s %10s %10s %8s %9s %8s  %s\n", "dtype", "M", "N", "K", "op",
               "vortex_us", "cublas_us", "speedup", "rel_err", "pred_us", "plan, split-K  [case]");
    } else if (c->kind == S_ADAPTIVE) {
        printf("%-5s %5s %5s %5s %10s %10s %10s %10s %8s %9s %9s %8s  %s\n", "dtype", "M", "N", "K",
               "tensor_us", "simt_us", "auto_us", "cublas_us", "speedup", "best/auto", "rel_err",
               "pred_us", "plan (auto), split-K");
    } else {
        printf("%-5s %5s %5s %5s %10s %10s %8s %9s %8s  %s\n", "dtype", "M", "N", "K", "vortex_us",
               "cublas_us", "speedup", "rel_err", "pred_us", "plan, split-K");
    }
}

static double max_err(const gres *r)
{
    double e = 0;
    for (int run = 0; run < R_CUBLAS; run++)
        if (r->on[run] && !r->failed[run] && !(r->err[run] <= e))
            e = r->err[run];
    return e;
}

static void print_row(const gcase *c, const gres *r)
{
    char plan[128];
    plan_name(r, R_AUTO, plan, sizeof plan);
    int bad = 0;
    for (int run = 0; run < R_CUBLAS; run++)
        bad |= r->on[run] && (r->failed[run] || r->mismatch[run]);
    printf("%-5s %5" PRId64 " %5" PRId64 " %5" PRId64, dt_name[c->dt], c->m, c->n, c->k);
    if (c->kind == S_FILE)
        printf(" %c%c", c->ta, c->tb);
    if (c->kind == S_ADAPTIVE) {
        double best = fmin(r->failed[R_TENSOR] ? INFINITY : r->us[R_TENSOR],
                           r->failed[R_SIMT] ? INFINITY : r->us[R_SIMT]);
        printf(" %10.2f %10.2f %10.2f %10.2f %7.2fx %8.2fx", r->us[R_TENSOR], r->us[R_SIMT],
               r->us[R_AUTO], r->us[R_CUBLAS], speedup(r, R_AUTO),
               r->failed[R_AUTO] ? NAN : best / r->us[R_AUTO]);
    } else {
        printf(" %10.2f %10.2f %7.2fx", r->us[R_AUTO], r->us[R_CUBLAS], speedup(r, R_AUTO));
    }
    printf(" %9.2g %8.2f  %s ks=%d", max_err(r), r->pred_us[R_AUTO], plan, r->splits[R_AUTO]);
    if (c->kind == S_FILE)
        printf("  [%s]", c->name);
    printf("%s\n", bad ? "  <-- MISMATCH/ERROR" : "");
    fflush(stdout);
}

/* A name as one unquoted CSV field: commas, quotes and control characters
 * become '_'. */
static const char *csv_field(const char *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s);
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == '"' || (unsigned char)*p < 0x20)
            *p = '_';
    return buf;
}

/* The columns op (op(A) op(B), e.g. NT) and case (the case's name) come last
 * so that readers of the older 15 columns keep working. */
static void csv_rows(FILE *f, const gcase *c, const gres *r)
{
    char suite[sizeof c->suite], name[sizeof c->name];
    csv_field(c->suite, suite, sizeof suite);
    csv_field(c->name, name, sizeof name);
    for (int run = 0; run < R_CUBLAS; run++) {
        if (!r->on[run])
            continue;
        char plan[128];
        plan_name(r, run, plan, sizeof plan);
        fprintf(f, "%s,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%.3f,%.3f,%.4f,%.3g,%s,%d,%.3f,%d,%s,"
                   "%c%c,%s\n",
                suite, dt_name[c->dt], run_name[run], c->m, c->n, c->k, r->us[run],
                r->us[R_CUBLAS], speedup(r, run), r->err[run], plan, r->splits[run],
                r->pred_us[run], r->reps, case_status(r, run), c->ta, c->tb, name);
    }
    fflush(f);
}

/* Geomean of cuBLAS/Vortex(run) over the group [from, to), all and M <= 16. */
static void geomean_line(const gcase *v, const gres *res, int from, int to, int run,
                         const char *label)
{
    double ls = 0, ls16 = 0, minr = INFINITY;
    int cnt = 0, cnt16 = 0, slower = 0, imin = -1;
    for (int i = from; i < to; i++) {
        double s = res[i].ran ? speedup(&res[i], run) : NAN;
        if (!(s > 0))
            continue;
        ls += log(s);
        cnt++;
        if (v[i].m <= 16) {
            ls16 += log(s);
            cnt16++;
        }
        if (s < 1)
            slower++;
        if (s < minr) {
            minr = s;
            imin = i;
        }
    }
    if (!cnt) {
        printf("geomean %s: no shape timed\n", label);
        return;
    }
    printf("geomean %s: %.3fx over %d shapes", label, exp(ls / cnt), cnt);
    if (cnt16)
        printf(" | M<=16: %.3fx over %d", exp(ls16 / cnt16), cnt16);
    char lb[128];
    printf(" | min %.2fx at %s | slower than cuBLAS: %d/%d\n", minr,
           case_label(&v[imin], lb, sizeof lb), slower, cnt);
}

static void print_summary(const gcase *v, const gres *res, int from, int to)
{
    char label[96];
    const gcase *c = &v[from];
    int ran = 0, skipped = 0;
    for (int i = from; i < to; i++)
        res[i].ran ? ran++ : skipped++;
    printf("-- %s %s: %d shape%s run", c->suite, dt_name[c->dt], ran,
           ran == 1 ? "" : "s");
    if (skipped)
        printf(", %d skipped (--max-seconds)", skipped);
    printf("; speedup = cuBLAS time / Vortex time\n");
    if (c->kind != S_ADAPTIVE) {
        snprintf(label, sizeof label, "%s %s", c->suite, dt_name[c->dt]);
        geomean_line(v, res, from, to, R_AUTO, label);
        return;
    }
    static const int modes[] = {R_TENSOR, R_SIMT, R_AUTO};
    for (int j = 0; j < COUNT(modes); j++) {
        snprintf(label, sizeof label, "%s %s %s", c->suite, dt_name[c->dt], run_name[modes[j]]);
        geomean_line(v, res, from, to, modes[j], label);
    }
    /* The model's unit choice: auto against the faster forced unit. */
    double ls = 0;
    int cnt = 0, within = 0, tensor_wins = 0;
    for (int i = from; i < to; i++) {
        const gres *r = &res[i];
        if (!r->ran || r->failed[R_AUTO] || r->failed[R_TENSOR] || r->failed[R_SIMT] ||
            !(r->us[R_AUTO] > 0))
            continue;
        double best = fmin(r->us[R_TENSOR], r->us[R_SIMT]);
        ls += log(best / r->us[R_AUTO]);
        cnt++;
        within += r->us[R_AUTO] <= 1.05 * best;
        tensor_wins += r->us[R_TENSOR] < r->us[R_SIMT];
    }
    if (cnt)
        printf("geomean %s %s auto vs best unit: %.3fx (1 = always as fast as the faster of "
               "tensor/simt) | within 5%%: %d/%d | tensor faster than simt: %d/%d\n",
               c->suite, dt_name[c->dt], exp(ls / cnt), within, cnt, tensor_wins, cnt);
}

/* ---- header ------------------------------------------------------------- */

static void print_machine(const options *o, const struct cudaDeviceProp *p, int transposed)
{
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    int drv = 0, rt = 0, bl_major = 0, bl_minor = 0, bl_patch = 0, sms = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    CB(cublasGetProperty(MAJOR_VERSION, &bl_major));
    CB(cublasGetProperty(MINOR_VERSION, &bl_minor));
    CB(cublasGetProperty(PATCH_LEVEL, &bl_patch));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    char kdrv[160] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        if (fgets(kdrv, sizeof kdrv, f)) {
            char *nl = strchr(kdrv, '\n');
            if (nl)
                *nl = 0;
        }
        fclose(f);
    }
    char desc[256];
    if (!vx_cuda_describe(desc, sizeof desc))
        snprintf(desc, sizeof desc, "(vx_cuda_describe: none)");
    printf("date:     %s\n", date);
    printf("device:   %s, %d SMs, cc %d.%d, %.1f GiB (device 0)\n", p->name, sms, p->major,
           p->minor, (double)p->totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    printf("cuda:     driver API %d.%d, runtime %d.%d%s%s\n", drv / 1000, (drv % 1000) / 10,
           rt / 1000, (rt % 1000) / 10, kdrv[0] ? "; " : "", kdrv);
    printf("cublas:   %d.%d.%d\n", bl_major, bl_minor, bl_patch);
    printf("vortex:   %d.%d.%d; %s", VORTEX_VERSION_MAJOR, VORTEX_VERSION_MINOR,
           VORTEX_VERSION_PATCH, desc);
    if (!strstr(desc, "instances"))
        printf("; %d kernel instances", vx_cuda_instance_count());
    if (!strstr(desc, vx_cuda_tune_source()))
        printf("; GPU timings from %s", vx_cuda_tune_source());
    printf("\n");
    printf("host:     %s\n", bench_cpu_model());
    printf("timing:   median of %d calls per library per shape after %d warm-up calls, each\n"
           "          between a cudaEvent pair on one stream; libraries interleaved\n"
           "          (rotating); alpha 1, beta 0; row-major %s, tight leading dimensions;\n",
           o->reps, o->warmup, transposed ? "C = op(A) op(B) (NN/NT/TN/TT per case)" : "NN");
    if (o->sync)
        printf("          --sync: each call alone on an idle stream (host and launch overhead "
               "count)\n");
    else
        printf("          queued: calls enqueued %d repetitions at a time behind a host function\n"
               "          holding the stream, so the GPU runs them back to back (GPU time only;\n"
               "          --sync includes host overhead)\n", CHUNK);
}

/* ---- main --------------------------------------------------------------- */

static int parse_shape(const char *s, int64_t *m, int64_t *n, int64_t *k)
{
    long long a, b, c;
    char tail;
    if (sscanf(s, "%lld,%lld,%lld%c", &a, &b, &c, &tail) != 3 &&
        sscanf(s, "%lldx%lldx%lld%c", &a, &b, &c, &tail) != 3)
        return -1;
    if (a < 1 || b < 1 || c < 1 || a > INT32_MAX || b > INT32_MAX || c > INT32_MAX)
        return -1;
    *m = a;
    *n = b;
    *k = c;
    return 0;
}

static void *dev_alloc(int64_t elems)
{
    void *p = NULL;
    CK(cudaMalloc(&p, (size_t)(elems > 0 ? elems : 1) * 4));
    return p;
}

static void *host_alloc(int64_t bytes)
{
    void *p = malloc((size_t)(bytes > 0 ? bytes : 1));
    if (!p) {
        fprintf(stderr, PROG ": cannot allocate %" PRId64 " bytes\n", bytes);
        exit(1);
    }
    return p;
}

/* Raise the clocks before the first measurement. */
static void gpu_warmup(double seconds)
{
    const int s = 2048;
    float *w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = dev_alloc((int64_t)s * s);
        CK(cudaMemsetAsync(w[i], 0, (size_t)s * s * 4, g_stream));
    }
    CB(cublasSetMathMode(g_blas, CUBLAS_DEFAULT_MATH));
    const float one = 1.0f, zero = 0.0f;
    double t0 = bench_now();
    do {
        for (int i = 0; i < 4; i++)
            CB(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &one, w[0], s, w[1], s,
                           &zero, w[2], s));
        CK(cudaStreamSynchronize(g_stream));
    } while (bench_now() - t0 < seconds);
    for (int i = 0; i < 3; i++)
        CK(cudaFree(w[i]));
}

int main(int argc, char **argv)
{
    const double t_start = bench_now();
    options o = {.reps = -1, .warmup = -1, .seed = 1};
    char suites_arg[4096] = "";
    const char *dtype_arg = NULL;
    case_list shapes = {0};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--suite") && need(i, argc, a)) {
            size_t used = strlen(suites_arg);
            if (used + 1 + strlen(argv[i + 1]) >= sizeof suites_arg) {
                fprintf(stderr, PROG ": --suite: the suite list is too long (at most %d "
                        "characters in all)\n", (int)sizeof suites_arg - 1);
                return 2;
            }
            snprintf(suites_arg + used, sizeof suites_arg - used, "%s%s", used ? "," : "",
                     argv[++i]);
        } else if (!strcmp(a, "--dtype") && need(i, argc, a)) {
            dtype_arg = argv[++i];
        } else if (!strcmp(a, "--shape") && need(i, argc, a)) {
            int64_t m, n, k;
            if (parse_shape(argv[++i], &m, &n, &k) != 0) {
                fprintf(stderr, PROG ": --shape takes M,N,K (integers >= 1), got '%s'\n", argv[i]);
                return 2;
            }
            add_case(&shapes, S_SHAPE, 0, m, n, k);
        } else if (!strcmp(a, "--reps") && need(i, argc, a)) {
            o.reps = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--warmup") && need(i, argc, a)) {
            o.warmup = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--quick")) {
            o.quick = 1;
        } else if (!strcmp(a, "--sync")) {
            o.sync = 1;
        } else if (!strcmp(a, "--max-seconds") && need(i, argc, a)) {
            o.max_seconds = num(argv[++i], a);
        } else if (!strcmp(a, "--seed") && need(i, argc, a)) {
            o.seed = (uint64_t)num(argv[++i], a);
        } else if (!strcmp(a, "--csv") && need(i, argc, a)) {
            o.csv = argv[++i];
        } else if (!strcmp(a, "--list")) {
            o.list = 1;
        } else {
            fprintf(stderr, PROG ": unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (o.reps < 0)
        o.reps = o.quick ? 15 : 50;
    if (o.warmup < 0)
        o.warmup = o.quick ? 3 : 10;
    if (o.reps < 1) {
        fprintf(stderr, PROG ": --reps must be >= 1\n");
        return 2;
    }
    if (parse_dtypes(dtype_arg ? dtype_arg : "f32,tf32,f16,bf16", &o) != 0) {
        fprintf(stderr, PROG ": --dtype takes a comma list of f32, tf32, f16, bf16\n");
        return 2;
    }

    /* Suites in the order given, then the --shape cases, each per dtype. */
    case_list all = {0};
    if (!suites_arg[0] && !shapes.n)
        snprintf(suites_arg, sizeof suites_arg, "transformer");
    if (suites_arg[0]) {
        char buf[sizeof suites_arg];
        snprintf(buf, sizeof buf, "%s", suites_arg);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (!strcmp(t, "transformer")) {
                for (int d = 0; d < o.ndt; d++)
                    suite_transformer(&all, o.dt_order[d], o.quick);
            } else if (!strcmp(t, "adaptive")) {
                suite_adaptive(&all, o.quick);
            } else if (!strcmp(t, "small")) {
                for (int d = 0; d < o.ndt; d++)
                    suite_small(&all, o.dt_order[d]);
            } else if (suite_file(&all, t, o.dt_order, o.ndt, o.quick) != 0) {
                fprintf(stderr, PROG ": unknown suite '%s' (transformer, adaptive, small, or a "
                        "readable file: %s)\n", t, strerror(errno));
                return 2;
            }
        }
    }
    for (int d = 0; d < o.ndt; d++)
        for (int i = 0; i < shapes.n; i++)
            add_case(&all, S_SHAPE, o.dt_order[d], shapes.v[i].m, shapes.v[i].n, shapes.v[i].k);
    free(shapes.v);
    int transposed = 0;
    for (int i = 0; i < all.n; i++)
        transposed |= all.v[i].ta != 'N' || all.v[i].tb != 'N';

    if (o.list) {
        printf("suite,dtype,m,n,k,op,case\n");
        for (int i = 0; i < all.n; i++) {
            const gcase *c = &all.v[i];
            char suite[sizeof c->suite], name[sizeof c->name];
            printf("%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%c%c,%s\n",
                   csv_field(c->suite, suite, sizeof suite), dt_name[c->dt], c->m, c->n, c->k,
                   c->ta, c->tb, csv_field(c->name, name, sizeof name));
        }
        free(all.v);
        return 0;
    }

    /* No device: nothing to compare, and not an error. */
    int ndev = 0;
    cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev < 1) {
        printf("skipped: no CUDA device (%s)\n",
               de != cudaSuccess ? cudaGetErrorString(de) : "cudaGetDeviceCount() = 0");
        free(all.v);
        return 0;
    }
    if (vx_cuda_device_count() < 1) {
        printf("ERROR: CUDA sees %d device%s but vx_cuda_device_count() = 0: this Vortex was "
               "built without its CUDA backend, or it cannot use the device\n",
               ndev, ndev == 1 ? "" : "s");
        free(all.v);
        return 1;
    }
    CK(cudaSetDevice(0));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major < 8) { /* no TF32 or bf16 Tensor Cores before Ampere */
        int kept = 0;
        for (int i = 0; i < all.n; i++)
            if (all.v[i].dt != DT_TF32 && all.v[i].dt != DT_BF16)
                all.v[kept++] = all.v[i];
        if (kept != all.n)
            printf("note:     cc %d.%d < 8.0: tf32 and bf16 cases dropped (%d)\n", prop.major,
                   prop.minor, all.n - kept);
        all.n = kept;
    }

    CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_ev0));
    CK(cudaEventCreate(&g_ev1));
    for (int i = 0; i < CHUNK; i++)
        for (int run = 0; run < NRUN; run++)
            for (int e = 0; e < 2; e++)
                CK(cudaEventCreate(&g_evq[i][run][e]));
    CB(cublasCreate(&g_blas));
    CB(cublasSetStream(g_blas, g_stream));
    vx_status vs = vx_cuda_set_stream(g_stream);
    if (vs != VX_OK) {
        printf("ERROR: vx_cuda_set_stream: %s: %s\n", vx_status_string(vs), vx_last_error());
        return 1;
    }
    print_machine(&o, &prop, transposed);

    /* One set of buffers for every case: A and B are prefixes of random data. */
    dbufs d = {.loaded_dt = -1};
    for (int i = 0; i < all.n; i++) {
        const gcase *c = &all.v[i];
        if (c->m * c->k > d.a_elems)
            d.a_elems = c->m * c->k;
        if (c->k * c->n > d.b_elems)
            d.b_elems = c->k * c->n;
        if (c->m * c->n > d.c_elems)
            d.c_elems = c->m * c->n;
    }
    d.a = dev_alloc(d.a_elems);
    d.b = dev_alloc(d.b_elems);
    for (int run = 0; run < NRUN; run++)
        d.c[run] = dev_alloc(d.c_elems);
    int64_t stage = d.a_elems > d.b_elems ? d.a_elems : d.b_elems;
    if (d.c_elems > stage)
        stage = d.c_elems;
    hbufs h = {.a = bench_alloc_floats(d.a_elems), .b = bench_alloc_floats(d.b_elems),
               .stage = host_alloc(stage * 4), .cx = bench_alloc_floats(d.c_elems),
               .cref = bench_alloc_floats(d.c_elems)};
    bench_fill_uniform(h.a, d.a_elems, o.seed * 2 + 1);
    bench_fill_uniform(h.b, d.b_elems, o.seed * 2 + 2);

    if (o.csv) {
        g_csv = fopen(o.csv, "w");
        if (!g_csv) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", o.csv, strerror(errno));
            return 2;
        }
        fprintf(g_csv, "suite,dtype,mode,m,n,k,vortex_us,cublas_us,speedup,rel_err,plan,splits,"
                       "predicted_us,reps,status,op,case\n");
    }
    if (o.max_seconds > 0)
        printf("budget:   %.3g s (--max-seconds)\n", o.max_seconds);

    snprintf(g_where, sizeof g_where, "the clock warm-up");
    gpu_warmup(o.quick ? 0.1 : 0.25);

    gres *res = calloc((size_t)(all.n > 0 ? all.n : 1), sizeof *res);
    if (!res) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    int mismatches = 0, errors = 0, run_count = 0, stopped = 0, held = 0;
    for (int i = 0; i < all.n;) {
        int j = i;
        while (j < all.n && all.v[j].kind == all.v[i].kind &&
               !strcmp(all.v[j].suite, all.v[i].suite) && all.v[j].dt == all.v[i].dt)
            j++;
        print_header(&all.v[i]);
        for (int c = i; c < j; c++) {
            if (stopped || (o.max_seconds > 0 && bench_now() - t_start > o.max_seconds)) {
                if (!stopped)
                    printf("  -- budget of %.3g s reached: stopping\n", o.max_seconds);
                stopped = 1;
                continue;
            }
            run_case(&all.v[c], &o, &d, &h, &res[c]);
            print_row(&all.v[c], &res[c]);
            if (g_csv)
                csv_rows(g_csv, &all.v[c], &res[c]);
            int mm = 0, er = 0;
            for (int run = 0; run < R_CUBLAS; run++) {
                mm |= res[c].mismatch[run];
                er |= res[c].failed[run];
            }
            mismatches += mm;
            errors += er;
            held += res[c].held;
            run_count++;
        }
        print_summary(all.v, res, i, j);
        i = j;
    }
    if (g_csv)
        fclose(g_csv);
    g_csv = NULL;

    printf("\ndone: %d of %d shapes in %.1f s, %d mismatch%s, %d error%s%s%s\n", run_count, all.n,
           bench_now() - t_start, mismatches, mismatches == 1 ? "" : "es", errors,
           errors == 1 ? "" : "s", stopped ? " (stopped by --max-seconds)" : "",
           held ? "; WARNING: calls that block the stream in some shapes (see above)" : "");
    if (o.csv)
        printf("csv: %s\n", o.csv);
    if (mismatches)
        printf("!!!!!!!! MISMATCH in %d shape%s: Vortex disagrees with cuBLAS beyond the "
               "tolerance !!!!!!!!\n", mismatches, mismatches == 1 ? "" : "s");
    if (errors)
        printf("ERROR: a Vortex call failed in %d shape%s\n", errors, errors == 1 ? "" : "s");

    CB(cublasDestroy(g_blas));
    CK(cudaEventDestroy(g_ev0));
    CK(cudaEventDestroy(g_ev1));
    for (int i = 0; i < CHUNK; i++)
        for (int run = 0; run < NRUN; run++)
            for (int e = 0; e < 2; e++)
                CK(cudaEventDestroy(g_evq[i][run][e]));
    CK(cudaFree(d.a));
    CK(cudaFree(d.b));
    for (int run = 0; run < NRUN; run++)
        CK(cudaFree(d.c[run]));
    vx_cuda_set_stream(NULL);
    CK(cudaStreamDestroy(g_stream));
    free(h.a);
    free(h.b);
    free(h.stage);
    free(h.cx);
    free(h.cref);
    free(res);
    free(all.v);
    return mismatches || errors ? 1 : 0;
}
