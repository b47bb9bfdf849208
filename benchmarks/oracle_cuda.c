/* vortex-oracle-cuda: the GPU wave model against measured plans (issue 3's
 * oracle check, on the GPU).
 *
 * Per shape, the model's best TOP plans (vx_cuda_explain: instance, split-K,
 * orientation) are each forced (vx_cuda_set_policy) and timed on the GPU;
 * the report says how fast the model's pick ran against the fastest of
 * them, and both against cuBLAS in the same run. Row-major NN,
 * C = A[MxK] B[KxN], alpha 1, beta 0, C of the operand type.
 *
 * Timing: per plan, warm-up calls, then batches of calls enqueued behind a
 * host function that holds the stream, then released, between one cudaEvent
 * pair: GPU time per call with the host's overhead hidden, as in
 * vortex-bench-gemm-cuda's default (queued without the hold, both libraries
 * timed their host work instead: ~6-7 us per Vortex call, ~11 per cuBLAS
 * call on an H100 machine). The median of 5 batches. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_backend.h"
#include "vortex/vortex.h"

#define PROG "vortex-oracle-cuda"
#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, PROG ": %s failed: %s\n", #x, cudaGetErrorString(e_));                  \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

enum { MAX_TOP = 32, MAX_SHAPES = 512 };

static void usage(FILE *f)
{
    fprintf(f,
"usage: " PROG " [options]\n"
"\n"
"Forces each of the wave model's best plans for a shape and times it on GPU 0:\n"
"how fast the model's pick ran against the fastest plan found, and both\n"
"against cuBLAS (cublasGemmEx / cublasSgemm) in the same run.\n"
"\n"
"  --dtype T       f16 (default), bf16, f32 (CUDA cores) or tf32\n"
"  --shape M,N,K   a shape (repeatable); default: the transformer suite\n"
"                  (M in 1 2 5 8 13 16 31 64 100 128 199 256 301 384 401 476 512,\n"
"                  (N,K) in (768,768) (2304,768) (3072,768) (768,3072)\n"
"                  (1024,1024) (4096,1024) (1024,4096))\n"
"  --quick         transformer M in 5 64 199 512 only\n"
"  --top N         plans timed per shape (default 8, at most %d)\n"
"  --reps N        calls per timed batch (default 20)\n"
"  --csv FILE      one row per shape: dtype,m,n,k,pick,pick_us,best,best_us,\n"
"                  pick_over_best,cublas_us\n"
"  --plans-csv FILE  one row per timed plan: dtype,m,n,k,rank,plan,splits,\n"
"                  transposed,predicted_us,measured_us (the wave model's price\n"
"                  next to what the plan ran, to fit the model from one run)\n"
"  -h, --help      this text\n"
"\n"
"Exit status: 0 (also 'skipped: no CUDA device'), 1 an error, 2 bad usage.\n",
            MAX_TOP);
}

/* float -> IEEE half, round to nearest even (finite inputs in [-2, 2] here). */
static uint16_t to_half(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint32_t sign = (u >> 16) & 0x8000u;
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffffu;
    if (e <= 0) {               /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        const int shift = 14 - e;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

static uint16_t to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

typedef struct {
    int64_t m, n, k;
} shape;

static int parse_shape(const char *s, shape *out)
{
    long long m, n, k;
    char x;
    if (sscanf(s, "%lld,%lld,%lld%c", &m, &n, &k, &x) != 3 && sscanf(s, "%lldx%lldx%lld%c", &m, &n, &k, &x) != 3)
        return -1;
    if (m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536) return -1;
    out->m = m, out->n = n, out->k = k;
    return 0;
}

static cudaStream_t g_stream;
static cudaEvent_t g_e0, g_e1;
static atomic_int g_gate_open, g_gate_timed_out;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Holds the stream until the batch is enqueued (at most 0.5 s: a call that
 * waited for the stream inside would otherwise never return). No CUDA calls. */
static void CUDART_CB gate_fn(void *arg)
{
    (void)arg;
    const double t0 = now_s();
    while (!atomic_load(&g_gate_open)) {
        if (now_s() - t0 > 0.5) {
            atomic_store(&g_gate_timed_out, 1);
            return;
        }
        sched_yield();
    }
}

/* GPU microseconds per call of fn (queued back to back), median of 5 batches. */
typedef int (*call_fn)(void *ctx);
static double time_calls(call_fn fn, void *ctx, int reps)
{
    for (int i = 0; i < 3; i++)
        if (fn(ctx)) return -1;
    CK(cudaStreamSynchronize(g_stream));
    double t[5];
    for (int b = 0; b < 5; b++) {
        atomic_store(&g_gate_open, 0);
        CK(cudaLaunchHostFunc(g_stream, gate_fn, NULL));
        CK(cudaEventRecord(g_e0, g_stream));
        for (int i = 0; i < reps; i++)
            if (fn(ctx)) {
                atomic_store(&g_gate_open, 1);
                return -1;
            }
        CK(cudaEventRecord(g_e1, g_stream));
        atomic_store(&g_gate_open, 1);
        CK(cudaEventSynchronize(g_e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, g_e0, g_e1));
        t[b] = ms * 1e3 / reps;
    }
    for (int i = 0; i < 5; i++) /* median of 5 */
        for (int j = i + 1; j < 5; j++)
            if (t[j] < t[i]) { double s = t[i]; t[i] = t[j]; t[j] = s; }
    return t[2];
}

typedef struct {
    shape s;
    int dt; /* 0 f16, 1 bf16, 2 f32, 3 tf32 */
    void *a, *b, *c;
    cublasHandle_t blas;
} call_ctx;

static vx_dtype vx_type(int dt) { return dt == 0 ? VX_F16 : dt == 1 ? VX_BF16 : VX_F32; }

static int call_vortex(void *p)
{
    call_ctx *x = p;
    const vx_dtype t = vx_type(x->dt);
    vx_status st = dyn_gemm_ex(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, x->s.m, x->s.n, x->s.k, 1.0f, x->a, t,
                               x->s.k, x->b, t, x->s.n, 0.0f, x->c, t, x->s.n,
                               x->dt == 3 ? VX_MATH_TF32 : VX_MATH_DEFAULT);
    if (st != VX_OK) {
        fprintf(stderr, PROG ": dyn_gemm_ex %lldx%lldx%lld: %s\n", (long long)x->s.m, (long long)x->s.n,
                (long long)x->s.k, vx_last_error());
        return 1;
    }
    return 0;
}

/* Row-major C = A B as column-major C^T = B^T A^T. */
static int call_cublas(void *p)
{
    call_ctx *x = p;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (x->dt >= 2) {
        st = cublasSgemm(x->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)x->s.n, (int)x->s.m, (int)x->s.k, &one, x->b,
                         (int)x->s.n, x->a, (int)x->s.k, &zero, x->c, (int)x->s.n);
    } else {
        const cudaDataType t = x->dt == 0 ? CUDA_R_16F : CUDA_R_16BF;
        st = cublasGemmEx(x->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)x->s.n, (int)x->s.m, (int)x->s.k, &one, x->b, t,
                          (int)x->s.n, x->a, t, (int)x->s.k, &zero, x->c, t, (int)x->s.n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, PROG ": cuBLAS failed (%d)\n", (int)st);
        return 1;
    }
    return 0;
}

/* *out: path opened for writing with its header line written; NULL where
 * there is no path. 1 (said on stderr) when it cannot be written. */
static int open_csv(const char *path, const char *header, FILE **out)
{
    *out = NULL;
    if (!path)
        return 0;
    if (!(*out = fopen(path, "w"))) {
        fprintf(stderr, PROG ": cannot write %s\n", path);
        return 1;
    }
    fprintf(*out, "%s\n", header);
    return 0;
}

int main(int argc, char **argv)
{
    static shape shapes[MAX_SHAPES];
    int nshapes = 0, quick = 0, top = 8, reps = 20, dt = 0;
    const char *csv_path = NULL, *plans_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quick")) {
            quick = 1;
        } else if (!strcmp(a, "--dtype") && has) {
            const char *v = argv[++i];
            dt = !strcmp(v, "f16") ? 0 : !strcmp(v, "bf16") ? 1 : !strcmp(v, "f32") ? 2 : !strcmp(v, "tf32") ? 3 : -1;
            if (dt < 0) {
                fprintf(stderr, PROG ": unknown dtype '%s' (f16, bf16, f32, tf32)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--shape") && has) {
            if (nshapes == MAX_SHAPES || parse_shape(argv[++i], &shapes[nshapes])) {
                fprintf(stderr, PROG ": --shape wants M,N,K (1..65536 each): '%s'\n", argv[i]);
                return 2;
            }
            nshapes++;
        } else if ((!strcmp(a, "--top") || !strcmp(a, "--reps")) && has) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > (!strcmp(a, "--top") ? MAX_TOP : 10000)) {
                fprintf(stderr, PROG ": %s: bad value '%s'\n", a, argv[i]);
                return 2;
            }
            if (!strcmp(a, "--top")) top = (int)v;
            else reps = (int)v;
        } else if (!strcmp(a, "--csv") && has) {
            csv_path = argv[++i];
        } else if (!strcmp(a, "--plans-csv") && has) {
            plans_path = argv[++i];
        } else {
            fprintf(stderr, PROG ": unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!vx_cuda_available()) {
        printf("skipped: no CUDA device\n");
        return 0;
    }
    if (nshapes == 0) {
        static const int ms_full[] = {1, 2, 5, 8, 13, 16, 31, 64, 100, 128, 199, 256, 301, 384, 401, 476, 512};
        static const int ms_quick[] = {5, 64, 199, 512};
        static const int nk[][2] = {{768, 768}, {2304, 768}, {3072, 768}, {768, 3072},
                                    {1024, 1024}, {4096, 1024}, {1024, 4096}};
        const int *ms = quick ? ms_quick : ms_full;
        const int nm = quick ? 4 : 17;
        for (int j = 0; j < 7; j++)
            for (int i = 0; i < nm; i++) shapes[nshapes++] = (shape){ms[i], nk[j][0], nk[j][1]};
    }
    FILE *csv = NULL, *plans = NULL;
    if (open_csv(csv_path, "dtype,m,n,k,pick,pick_us,best,best_us,pick_over_best,cublas_us", &csv) ||
        open_csv(plans_path, "dtype,m,n,k,rank,plan,splits,transposed,predicted_us,measured_us", &plans))
        return 1;
    const char *dt_name[] = {"f16", "bf16", "f32", "tf32"};
    const size_t elem = dt < 2 ? 2 : 4;
    int64_t max_a = 1, max_b = 1, max_c = 1;
    for (int i = 0; i < nshapes; i++) {
        if (shapes[i].m * shapes[i].k > max_a) max_a = shapes[i].m * shapes[i].k;
        if (shapes[i].k * shapes[i].n > max_b) max_b = shapes[i].k * shapes[i].n;
        if (shapes[i].m * shapes[i].n > max_c) max_c = shapes[i].m * shapes[i].n;
    }
    call_ctx x;
    memset(&x, 0, sizeof x);
    x.dt = dt;
    CK(cudaStreamCreate(&g_stream));
    CK(cudaEventCreate(&g_e0));
    CK(cudaEventCreate(&g_e1));
    CK(cudaMalloc(&x.a, (size_t)max_a * elem));
    CK(cudaMalloc(&x.b, (size_t)max_b * elem));
    CK(cudaMalloc(&x.c, (size_t)max_c * elem));
    {
        /* random operands in [-1, 1), never zero */
        const int64_t n = max_a > max_b ? max_a : max_b;
        void *h = malloc((size_t)n * elem);
        if (!h) {
            fprintf(stderr, PROG ": out of host memory\n");
            return 1;
        }
        uint64_t st = 0x9e3779b97f4a7c15ull;
        for (int which = 0; which < 2; which++) {
            const int64_t cnt = which ? max_b : max_a;
            for (int64_t i = 0; i < cnt; i++) {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                float v = (float)((st >> 40) & 0xffffff) / 8388608.0f - 1.0f;
                if (v == 0.0f) v = 0.5f;
                if (dt == 0) ((uint16_t *)h)[i] = to_half(v);
                else if (dt == 1) ((uint16_t *)h)[i] = to_bf16(v);
                else ((float *)h)[i] = v;
            }
            CK(cudaMemcpy(which ? x.b : x.a, h, (size_t)cnt * elem, cudaMemcpyHostToDevice));
        }
        free(h);
    }
    if (cublasCreate(&x.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(x.blas, g_stream) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, PROG ": cuBLAS could not start\n");
        return 1;
    }
    if (dt == 3) cublasSetMathMode(x.blas, CUBLAS_TF32_TENSOR_OP_MATH);
    if (vx_cuda_set_stream(g_stream) != VX_OK) {
        fprintf(stderr, PROG ": vx_cuda_set_stream: %s\n", vx_last_error());
        return 1;
    }
    char dev[256];
    vx_cuda_describe(dev, sizeof dev);
    printf("%s\n%s, %d shapes, the model's best %d plans each, %s; wave times: %s\n", dev, dt_name[dt], nshapes,
           top, "GPU time per call, median of 5 batches", vx_cuda_tune_source());
    printf("%-16s %-36s %9s  %-36s %9s %6s %9s\n", "shape", "model's pick", "us", "fastest found", "us", "ratio",
           "cuBLAS us");
    double log_ratio = 0, log_pick_cb = 0, log_best_cb = 0;
    int below = 0, done = 0;
    for (int si = 0; si < nshapes; si++) {
        x.s = shapes[si];
        const vx_dtype t = vx_type(dt);
        vx_cuda_gemm_args g = vx_cuda_canonical(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, x.s.m, x.s.n, x.s.k, 1.0f,
                                                x.a, t, x.s.k, x.b, x.s.n, 0.0f, x.c, t, x.s.n,
                                                dt == 3 ? VX_MATH_TF32 : VX_MATH_DEFAULT);
        vx_cuda_choice ch[MAX_TOP];
        vx_cuda_set_policy(NULL);
        const int nc = vx_cuda_explain(&g, ch, top);
        if (nc < 1) {
            fprintf(stderr, PROG ": no plan for %lldx%lldx%lld\n", (long long)x.s.m, (long long)x.s.n,
                    (long long)x.s.k);
            return 1;
        }
        double tp = -1, tb = 1e30;
        int best = 0;
        for (int i = 0; i < nc; i++) {
            vx_cuda_policy pol = {ch[i].instance, ch[i].splits, VX_UNIT_AUTO, ch[i].transposed ? 2 : 1};
            vx_cuda_set_policy(&pol);
            const double us = time_calls(call_vortex, &x, reps);
            vx_cuda_set_policy(NULL);
            if (us < 0) return 1;
            if (plans)
                fprintf(plans, "%s,%lld,%lld,%lld,%d,%s,%d,%d,%.3f,%.3f\n", dt_name[dt], (long long)x.s.m,
                        (long long)x.s.n, (long long)x.s.k, i, vx_cuda_instance_get(ch[i].instance)->name,
                        ch[i].splits, ch[i].transposed, ch[i].predicted_us, us);
            if (i == 0) tp = us;
            if (us < tb) tb = us, best = i;
        }
        const double cb = time_calls(call_cublas, &x, reps);
        if (cb < 0) return 1;
        char sh[40], pick[64], bst[64];
        snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)x.s.m, (long long)x.s.n, (long long)x.s.k);
        snprintf(pick, sizeof pick, "%s%s s%d", ch[0].transposed ? "T:" : "",
                 vx_cuda_instance_get(ch[0].instance)->name, ch[0].splits);
        snprintf(bst, sizeof bst, "%s%s s%d", ch[best].transposed ? "T:" : "",
                 vx_cuda_instance_get(ch[best].instance)->name, ch[best].splits);
        const double ratio = tb / tp;
        printf("%-16s %-36s %9.2f  %-36s %9.2f %6.3f %9.2f\n", sh, pick, tp, bst, tb, ratio, cb);
        fflush(stdout);
        if (csv)
            fprintf(csv, "%s,%lld,%lld,%lld,%s,%.3f,%s,%.3f,%.4f,%.3f\n", dt_name[dt], (long long)x.s.m,
                    (long long)x.s.n, (long long)x.s.k, pick, tp, bst, tb, ratio, cb);
        log_ratio += log(ratio);
        log_pick_cb += log(cb / tp);
        log_best_cb += log(cb / tb);
        below += ratio < 0.8;
        done++;
    }
    if (atomic_load(&g_gate_timed_out))
        printf("\nnote: a call waited for the stream inside, so some batches timed host work too\n");
    printf("\nmodel's pick: %.3f of the fastest of its best %d plans (geomean), %d of %d shapes below 0.8\n",
           exp(log_ratio / done), top, below, done);
    printf("speedup vs cuBLAS: model's pick %.3fx, fastest found %.3fx (geomean over %d shapes)\n",
           exp(log_pick_cb / done), exp(log_best_cb / done), done);
    if (csv) fclose(csv);
    if (plans) fclose(plans);
    return 0;
}
