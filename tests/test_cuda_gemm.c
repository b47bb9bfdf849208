/* dyn_gemm_ex on the GPU (all operands in device memory), against a float64
 * reference computed on the host from the rounded inputs:
 * - a sampled sweep: every transpose pair x row/col major x {F32, F32 TF32,
 *   F16 -> F32, F16 -> F16, BF16 -> F32, BF16 -> BF16} over M, N, K in 1..300
 *   (1, 2, primes, every tile size +- 1, 300), padded leading dimensions,
 *   alpha/beta with beta = 0 over NaN-filled C;
 * - every compiled kernel instance forced (vx_cuda_set_policy), with split-K
 *   not forced (0), 1 and 3, on edge shapes derived from its tile;
 * - the skinny family's in-kernel split-K over repeated calls;
 * - split-K reduced in a thread-block cluster's shared memory (sm_90);
 * - the transposed orientation (C^T = B^T A^T) forced, and the model
 *   weighing both orientations;
 * - k == 0, alpha == 0, empty C, operands not aligned to a vector width;
 * - bad arguments (host/device mix, unsupported type combinations, bad enums,
 *   small ld): the status, a message, and nothing written;
 * - stream ordering on a non-blocking stream with a dependent second call;
 * - managed memory runs on the GPU, pinned host memory on the CPU.
 * Every test skips ("skipped: no CUDA device") where no device is visible.
 * VX_TEST_QUICK=1 shrinks the shape sets (for compute-sanitizer runs). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_backend.h"
#include "ref.h"
#include "ref_ex.h"

#define TMO 300.0

/* A failed CUDA call fails the test, naming the dyn_gemm_ex call in flight
 * (a kernel fault shows at the next synchronisation). */
#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t ck_e_ = (call);                                                         \
        cr_assert(ck_e_ == cudaSuccess, "%s failed: %s (%s) at %s:%d%s%s", #call,           \
                  cudaGetErrorName(ck_e_), cudaGetErrorString(ck_e_), __FILE__, __LINE__,   \
                  vtx_current ? ", during " : "", vtx_current ? vtx_current : "");          \
    } while (0)

static int quick(void)
{
    const char *q = getenv("VX_TEST_QUICK");
    return q && q[0] && strcmp(q, "0") != 0;
}

/* Every test starts here: no device (or no usable driver) skips it. */
static void need_device(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        cr_skip_test("skipped: no CUDA device (cudaGetDeviceCount: %s, count %d)",
                     e == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(e), n);
    }
}

/* ---- where the operands live ---- */

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}
static void dev_release(void *p) { CK(cudaFree(p)); }
static void dev_upload(void *d, const void *s, size_t b) { CK(cudaMemcpy(d, s, b, cudaMemcpyHostToDevice)); }
static void dev_download(void *d, const void *s, size_t b) { CK(cudaMemcpy(d, s, b, cudaMemcpyDeviceToHost)); }
static void dev_sync(void)
{
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
}
static const vtx_mem DEV = {"device", 1, dev_alloc, dev_release, dev_upload, dev_download, dev_sync};

static void *managed_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMallocManaged(&p, bytes ? bytes : 1, cudaMemAttachGlobal));
    return p;
}
static void host_copy(void *d, const void *s, size_t b)
{
    CK(cudaDeviceSynchronize());
    memcpy(d, s, b);
}
static const vtx_mem MANAGED = {"managed", 1, managed_alloc, dev_release, host_copy, host_copy, dev_sync};

static void *pinned_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}
static void pinned_release(void *p) { CK(cudaFreeHost(p)); }
static const vtx_mem PINNED = {"pinned host", 0, pinned_alloc, pinned_release, host_copy, host_copy,
                               dev_sync};

/* ---- type combinations ---- */

typedef struct {
    vx_dtype ab, c;
    vx_math_mode math;
    double tol;
} tcombo;

static const tcombo tcombos[] = {
    {VX_F32, VX_F32, VX_MATH_DEFAULT, 1e-5},
    {VX_F32, VX_F32, VX_MATH_TF32, 2e-3},
    {VX_F16, VX_F32, VX_MATH_DEFAULT, 1e-2},
    {VX_F16, VX_F16, VX_MATH_DEFAULT, 1e-2},
    {VX_BF16, VX_F32, VX_MATH_DEFAULT, 2e-2},
    {VX_BF16, VX_BF16, VX_MATH_DEFAULT, 2e-2},
};
#define N_TCOMBOS 6

static double tol_for(vx_dtype ab, vx_dtype c, vx_math_mode math)
{
    if (ab == VX_BF16 || c == VX_BF16)
        return 2e-2;
    if (ab == VX_F16 || c == VX_F16)
        return 1e-2;
    return math == VX_MATH_TF32 ? 2e-3 : 1e-5;
}

static void set_types(vtx_case *c, const tcombo *t)
{
    c->ab_type = t->ab;
    c->c_type = t->c;
    c->math = t->math;
    c->tol = t->tol;
}

/* ---- the sweep ---- */

static const int64_t sizes_full[] = {1,   2,   15,  16,  17,  31,  32,  33,  63,  64, 65,
                                     97,  127, 128, 129, 131, 251, 255, 256, 257, 300};
static const int64_t sizes_quick[] = {1, 2, 17, 33, 64, 65, 97};
static const int64_t pads[] = {0, 1, 3, 8, 17};

typedef struct {
    int tc;       /* index into tcombos */
    int layout;   /* 0 row, 1 col */
} sweep_param;

ParameterizedTestParameters(gpu_sweep, shapes)
{
    static sweep_param ps[N_TCOMBOS * 2];
    for (int i = 0; i < N_TCOMBOS * 2; i++) {
        ps[i].tc = i / 2;
        ps[i].layout = i % 2;
    }
    return cr_make_param_array(sweep_param, ps, N_TCOMBOS * 2);
}

/* Six Latin passes over the size list (every m, n and k value six times
 * per type combination and layout, in different triples), the transpose
 * pair, alpha, beta and the paddings cycling with the case index. */
ParameterizedTest(sweep_param *p, gpu_sweep, shapes, .timeout = TMO)
{
    need_device();
    static const float alphas[] = {1.0f, -0.5f, 0.75f, 1.25f};
    static const float betas[] = {0.0f, 1.0f, 0.3f, 0.0f, -0.75f};
    const int q = quick();
    const int64_t *sz = q ? sizes_quick : sizes_full;
    const int L = q ? (int)(sizeof sizes_quick / sizeof sizes_quick[0])
                    : (int)(sizeof sizes_full / sizeof sizes_full[0]);
    const int passes = q ? 1 : 6;
    const tcombo *t = &tcombos[p->tc];
    char tag[96];
    snprintf(tag, sizeof tag, "gpu sweep combo %d layout %d%s", p->tc, p->layout,
             q ? " (quick)" : "");
    for (int pass = 0; pass < passes; pass++)
        for (int u = 0; u < L; u++) {
            const int i = pass * L + u;
            vtx_case c = vtx_case_make(sz[(u + 3 * p->tc + 7 * p->layout) % L],
                                       sz[(5 * u + p->tc + 2 * p->layout + 1 + 7 * pass) % L],
                                       sz[(4 * u + 5 * p->tc + p->layout + 2 + 11 * pass) % L]);
            c.layout = p->layout ? VX_COL_MAJOR : VX_ROW_MAJOR;
            const int tr = (i + p->tc + p->layout) % 4;
            c.ta = tr & 2 ? VX_TRANS : VX_NO_TRANS;
            c.tb = tr & 1 ? VX_TRANS : VX_NO_TRANS;
            set_types(&c, t);
            c.alpha = alphas[(i + p->layout) % 4];
            c.beta = betas[(i + p->tc) % 5];
            c.c_nan = c.beta == 0.0f;
            c.lda_pad = pads[(i + p->tc) % 5];
            c.ldb_pad = pads[(2 * i + p->layout) % 5];
            c.ldc_pad = pads[(3 * i + 1 + p->tc) % 5];
            c.seed = (uint64_t)(p->tc * 100000 + p->layout * 10000 + i);
            c.tag = tag;
            vtx_check(&DEV, &c);
        }
}

/* ---- every compiled kernel instance, forced ---- */

#define INST_PARTS 16

ParameterizedTestParameters(gpu_instances, forced)
{
    static int parts[INST_PARTS];
    for (int i = 0; i < INST_PARTS; i++)
        parts[i] = i;
    return cr_make_param_array(int, parts, INST_PARTS);
}

/* The user-level call that canonicalises to A m x k (a_kcontig), B k x n
 * (b_kcontig), C m x n in the given layout. Row-major: A is the user's A.
 * Column-major: C^T = op(B)^T op(A)^T, so the canonical A is the user's B. */
static void canonical_call(vtx_case *c, int col, int a_kcontig, int b_kcontig, int64_t cm,
                           int64_t cn, int64_t ck)
{
    c->k = ck;
    if (!col) {
        c->layout = VX_ROW_MAJOR;
        c->m = cm;
        c->n = cn;
        c->ta = a_kcontig ? VX_NO_TRANS : VX_TRANS;
        c->tb = b_kcontig ? VX_TRANS : VX_NO_TRANS;
    } else {
        c->layout = VX_COL_MAJOR;
        c->m = cn;
        c->n = cm;
        c->tb = a_kcontig ? VX_NO_TRANS : VX_TRANS;
        c->ta = b_kcontig ? VX_TRANS : VX_NO_TRANS;
    }
}

static int64_t at_least_1(int64_t v) { return v > 0 ? v : 1; }

/* One checked call under a selection policy (restored afterwards). */
static void run_with_policy(vtx_case *c, vx_cuda_policy pol)
{
    vx_cuda_set_policy(&pol);
    vtx_result r;
    vtx_run(&DEV, c, &r);
    vx_cuda_set_policy(NULL);
    cr_assert(r.ok, "%s", r.msg);
}

/* The dynamic shared memory one block of this device may use: an instance
 * asking for more cannot run here (the library refuses to force it). */
static int max_smem_optin(void)
{
    int dev = 0, v = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return v;
}

static int device_major(void)
{
    int dev = 0, v = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, dev));
    return v;
}

ParameterizedTest(int *part, gpu_instances, forced, .timeout = TMO)
{
    need_device();
    const int n = vx_cuda_instance_count();
    cr_assert(n > 0, "a CUDA build on a machine with a device has no kernel instances");
    const int smem_max = max_smem_optin();
    const int q = quick();
    static const int splits_full[] = {0, 1, 3}, splits_quick[] = {1, 3};
    const int *splits = q ? splits_quick : splits_full;
    const int nsplits = q ? 2 : 3;
    int calls = 0, not_resident = 0;
    for (int i = *part; i < n; i += INST_PARTS) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        cr_assert(in != NULL, "vx_cuda_instance_get(%d) is NULL (count %d)", i, n);
        if (in->cluster && device_major() < 9) {
            not_resident++; /* thread-block clusters need sm_90 (the library refuses to force it) */
            continue;
        }
        if (in->sm90a && device_major() != 9) {
            not_resident++; /* sm_90a (wgmma) code runs on compute capability 9.0 alone */
            continue;
        }
        if (in->smem_bytes > smem_max) {
            cr_log_warn("instance %d %s needs %d bytes of shared memory, this device allows %d: "
                        "not run", i, in->name, in->smem_bytes, smem_max);
            not_resident++;
            continue;
        }
        const int64_t shapes[4][3] = {
            {1, 1, 1},
            {17, 33, 65},
            {in->bm + 1, at_least_1(in->bn - 1), 3 * (int64_t)in->bk + 1},
            {2 * (int64_t)in->bm - 1, in->bn + 1, at_least_1(in->bk - 1)},
        };
        static const int quick_shapes[] = {0, 2};
        const int nshapes = q ? 2 : 4;
        const vx_math_mode math = in->tf32 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
        for (int si = 0; si < nshapes; si++)
            for (int sp = 0; sp < nsplits; sp++)
                for (int col = 0; col < 2; col++)
                    for (int ct = 0; ct < 2; ct++) {
                        const int s = q ? quick_shapes[si] : si;
                        if (q && col != sp % 2)
                            continue;           /* quick: one layout per split */
                        if (ct == 1 && in->ab_type == VX_F32)
                            continue;           /* C of the operand type == F32 */
                        if (q && ct != (s + sp) % 2 && in->ab_type != VX_F32)
                            continue;           /* quick: one C type per call */
                        vtx_case c = vtx_case_make(1, 1, 1);
                        canonical_call(&c, col, in->a_kcontig, in->b_kcontig, shapes[s][0],
                                       shapes[s][1], shapes[s][2]);
                        c.ab_type = in->ab_type;
                        c.c_type = ct ? in->ab_type : VX_F32;
                        c.math = math;
                        c.tol = tol_for(c.ab_type, c.c_type, math);
                        const int pick = s + sp + col + ct;
                        c.alpha = pick % 3 == 0 ? -0.75f : 1.0f;
                        c.beta = pick % 2 ? 0.5f : 0.0f;
                        c.c_nan = c.beta == 0.0f;
                        c.lda_pad = pads[pick % 5];
                        c.ldb_pad = pads[(pick + 2) % 5];
                        c.ldc_pad = pads[(pick + 3) % 5];
                        c.seed = (uint64_t)(i * 1000 + s * 100 + sp * 10 + col * 2 + ct);
                        char tag[192];
                        snprintf(tag, sizeof tag,
                                 "forced instance %d %s (a_kcontig %d, b_kcontig %d, %dx%dx%d), "
                                 "splits %d (0 = not forced)",
                                 i, in->name, in->a_kcontig, in->b_kcontig, in->bm, in->bn, in->bk,
                                 splits[sp]);
                        c.tag = tag;
                        run_with_policy(&c, (vx_cuda_policy){i, splits[sp], VX_UNIT_AUTO, 0});
                        calls++;
                    }
    }
    vx_cuda_set_policy(NULL);
    cr_assert(calls + not_resident > 0 || *part >= n, "part %d ran no call", *part);
}

/* A call in instance in's layouts (row-major, or col = 1 column-major),
 * canonical m x n x k, its operand type, C of that type (c_same) or F32,
 * its math mode; beta = 0 runs over a NaN-filled C. */
static vtx_case instance_call(const vx_cuda_instance *in, int col, int64_t m, int64_t n, int64_t k, int c_same,
                              float alpha, float beta)
{
    vtx_case c = vtx_case_make(1, 1, 1);
    canonical_call(&c, col, in->a_kcontig, in->b_kcontig, m, n, k);
    c.ab_type = in->ab_type;
    c.c_type = c_same ? in->ab_type : VX_F32;
    c.math = in->tf32 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
    c.tol = tol_for(c.ab_type, c.c_type, c.math);
    c.alpha = alpha;
    c.beta = beta;
    c.c_nan = beta == 0.0f;
    return c;
}

/* ---- the skinny family's in-kernel split-K ---- */

/* Every skinny instance (split-K slices added inside the kernel: the last
 * slice of a tile, found with a per-tile counter, sums the others and
 * re-arms the counter) with 7 and 12 slices, two row tiles and a ragged
 * column tile, three calls in a row on one stream: a counter left armed
 * by one call would let the next call's tiles finish early and wrong. */
Test(gpu_skinny, split_fixup_rearms, .timeout = TMO)
{
    need_device();
    const int n = vx_cuda_instance_count();
    int ran = 0;
    for (int i = 0; i < n; i++) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        cr_assert(in != NULL, "vx_cuda_instance_get(%d) is NULL (count %d)", i, n);
        if (strncmp(in->name, "skinny_", 7) != 0)
            continue;
        for (int rep = 0; rep < 3; rep++) {
            vtx_case c = instance_call(in, rep == 1, in->bm + 1, 2 * (int64_t)in->bn + 3, 1000 + 37 * rep, rep == 2,
                                       rep == 2 ? -1.5f : 1.0f, rep == 0 ? 0.0f : 0.5f);
            c.ldb_pad = rep == 1 ? 3 : 0;
            c.seed = (uint64_t)(7000000 + i * 10 + rep);
            char tag[160];
            snprintf(tag, sizeof tag, "skinny instance %d %s, call %d of 3, splits %d", i, in->name, rep + 1,
                     rep == 2 ? 16 : 7);
            c.tag = tag;
            run_with_policy(&c, (vx_cuda_policy){i, rep == 2 ? 16 : 7, VX_UNIT_AUTO, 0});
            ran++;
        }
    }
    cr_assert(ran > 0, "no skinny instance among the %d compiled", n);
}

/* ---- split-K reduced inside a thread-block cluster (sm_90) ---- */

/* Every cluster entry (the slices of a tile add their partial tiles through
 * distributed shared memory) with 2, 5 and 8 slices, on two row tiles plus a
 * ragged one and a ragged column tile, K long enough for every slice and
 * one ragged BK step: beta = 0 over NaN, beta != 0, C of both types, both
 * layouts. */
Test(gpu_cluster, split_in_shared_memory, .timeout = TMO)
{
    need_device();
    if (device_major() < 9)
        cr_skip_test("skipped: thread-block clusters need an sm_90 device (this one is sm_%d)", device_major() * 10);
    const int n = vx_cuda_instance_count();
    static const int slices[] = {2, 5, 8};
    int ran = 0;
    for (int i = 0; i < n; i++) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        cr_assert(in != NULL, "vx_cuda_instance_get(%d) is NULL (count %d)", i, n);
        if (!in->cluster || (in->sm90a && device_major() != 9))
            continue; /* sm_90a (wgmma) code runs on compute capability 9.0 alone */
        for (int si = 0; si < 3; si++) {
            if (quick() && si != i % 3)
                continue;
            vtx_case c = instance_call(in, si == 1, 2 * (int64_t)in->bm + 3, in->bn + 5,
                                       8 * (int64_t)in->bk * slices[si] / 2 + 7, si == 2, si == 1 ? -0.75f : 1.0f,
                                       si == 0 ? 0.0f : 0.5f);
            c.ldc_pad = si == 2 ? 3 : 0;
            c.seed = (uint64_t)(8000000 + i * 10 + si);
            char tag[160];
            snprintf(tag, sizeof tag, "cluster entry %d %s, %d slices", i, in->name, slices[si]);
            c.tag = tag;
            run_with_policy(&c, (vx_cuda_policy){i, slices[si], VX_UNIT_AUTO, 0});
            ran++;
        }
    }
    cr_assert(ran > 0, "no cluster entry among the %d compiled", n);
}

/* ---- the transposed orientation (C^T = B^T A^T, C stored transposed) ---- */

/* Every type combination and layout, the transpose pairs, alpha/beta with
 * beta = 0 over NaN, padded leading dimensions, on shapes with a small N
 * (the case the orientation exists for) and a few others, forced to run
 * transposed with the model's instance; unsplit, split in the GEMM with a
 * reduction launch, and through the skinny family's in-kernel split. */
Test(gpu_orient, transposed_matches_reference, .timeout = TMO)
{
    need_device();
    static const int64_t shapes[][3] = {{300, 1, 64}, {257, 2, 33},  {1000, 7, 129}, {65, 16, 300},
                                        {33, 17, 5},  {1, 1, 1},     {129, 3, 1000}, {5, 64, 77}};
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    static const float alphas[] = {1.0f, -0.5f, 1.25f};
    static const float betas[] = {0.0f, 0.5f, -1.0f, 0.0f};
    int calls = 0;
    for (int tc = 0; tc < N_TCOMBOS; tc++)
        for (int col = 0; col < 2; col++)
            for (int si = 0; si < ns; si++) {
                const int i = (tc * 2 + col) * ns + si;
                vtx_case c = vtx_case_make(shapes[si][0], shapes[si][1], shapes[si][2]);
                c.layout = col ? VX_COL_MAJOR : VX_ROW_MAJOR;
                c.ta = i & 1 ? VX_TRANS : VX_NO_TRANS;
                c.tb = i & 2 ? VX_TRANS : VX_NO_TRANS;
                set_types(&c, &tcombos[tc]);
                c.alpha = alphas[i % 3];
                c.beta = betas[i % 4];
                c.c_nan = c.beta == 0.0f;
                c.lda_pad = pads[i % 5];
                c.ldb_pad = pads[(i + 2) % 5];
                c.ldc_pad = pads[(i + 4) % 5];
                c.seed = (uint64_t)(8000000 + i);
                const int splits = i % 3 == 0 ? 0 : i % 3 == 1 ? 3 : 1; /* 0: the model's */
                char tag[128];
                snprintf(tag, sizeof tag, "transposed orientation, combo %d, layout %d, splits %d", tc, col, splits);
                c.tag = tag;
                run_with_policy(&c, (vx_cuda_policy){.instance = -1, .splits = splits, .unit = VX_UNIT_AUTO,
                                                     .orient = 2});
                calls++;
            }
    cr_assert_eq(calls, N_TCOMBOS * 2 * ns);
}

/* Forcing an orientation returns plans of that orientation only, cheapest
 * first. Where N is below the narrowest tile and below M the model weighs
 * both (its choice is never dearer than either alone); elsewhere it keeps
 * the call's orientation. */
Test(gpu_orient, explain_weighs_both, .timeout = TMO)
{
    need_device();
    static const int64_t shapes[][3] = {{100000, 2, 64}, {2, 100000, 64}, {512, 512, 512}};
    for (int si = 0; si < 3; si++) {
        const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        vx_cuda_gemm_args g = vx_cuda_canonical(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, k, 1.0f, NULL,
                                                VX_F32, k, NULL, n, 0.0f, NULL, VX_F32, n, VX_MATH_DEFAULT);
        vx_cuda_choice any[6], one[2][6];
        const int got = vx_cuda_explain(&g, any, 6);
        cr_assert(got > 0, "no plan for %lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
        for (int o = 0; o < 2; o++) {
            vx_cuda_policy pol = {.instance = -1, .splits = 0, .unit = VX_UNIT_AUTO, .orient = o + 1};
            vx_cuda_set_policy(&pol);
            const int n1 = vx_cuda_explain(&g, one[o], 6);
            vx_cuda_set_policy(NULL);
            cr_assert(n1 > 0, "no plan with orient %d", o + 1);
            for (int i = 0; i < n1; i++) {
                cr_assert_eq(one[o][i].transposed, o, "orient %d returned a plan with transposed = %d", o + 1,
                             one[o][i].transposed);
                if (i)
                    cr_assert(one[o][i].predicted_us >= one[o][i - 1].predicted_us, "not cheapest first");
            }
            if (si == 0)
                cr_assert(any[0].predicted_us <= one[o][0].predicted_us + 1e-9,
                          "%lldx%lldx%lld: free choice %g us dearer than orient %d's %g us", (long long)m,
                          (long long)n, (long long)k, any[0].predicted_us, o + 1, one[o][0].predicted_us);
        }
        if (si > 0)
            for (int i = 0; i < got; i++)
                cr_assert(!any[i].transposed && any[i].instance == one[0][i].instance &&
                              any[i].splits == one[0][i].splits,
                          "%lldx%lldx%lld: plan %d differs from the as-called ranking", (long long)m,
                          (long long)n, (long long)k, i);
    }
}

/* ---- a failing call on the GPU: status, message, nothing written ---- */

#define FBUF 4096   /* elements per operand: enough for every shape below */

typedef struct {
    void *da, *db, *dc;          /* device */
    unsigned char *ha, *hb, *hc; /* host */
    unsigned char c0[FBUF * 4];  /* C's initial bytes (both C buffers) */
} fail_bufs;

static void fail_bufs_init(fail_bufs *f)
{
    f->da = dev_alloc(FBUF * 4);
    f->db = dev_alloc(FBUF * 4);
    f->dc = dev_alloc(FBUF * 4);
    f->ha = malloc(FBUF * 4);
    f->hb = malloc(FBUF * 4);
    f->hc = malloc(FBUF * 4);
    cr_assert(f->ha && f->hb && f->hc);
    vt_rng r;
    vt_rng_seed(&r, 3);
    for (int i = 0; i < FBUF; i++) {
        float va = vt_rng_float(&r) * 0.5f, vb = vt_rng_float(&r) * 0.5f;
        memcpy(f->ha + 4 * i, &va, 4);
        memcpy(f->hb + 4 * i, &vb, 4);
    }
    vt_fill_sentinel((float *)(void *)f->c0, FBUF);
    dev_upload(f->da, f->ha, FBUF * 4);
    dev_upload(f->db, f->hb, FBUF * 4);
}

static void fail_bufs_free(fail_bufs *f)
{
    dev_release(f->da);
    dev_release(f->db);
    dev_release(f->dc);
    free(f->ha);
    free(f->hb);
    free(f->hc);
}

typedef struct {
    vx_layout l;
    vx_transpose ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    vx_dtype at, bt, ct;
    vx_math_mode math;
    int a_host, b_host, c_host;   /* which operands are the host buffers */
} gcall;

static gcall gvalid(vx_layout l, vx_transpose ta, vx_transpose tb, int64_t m, int64_t n, int64_t k)
{
    gcall q;
    memset(&q, 0, sizeof q);
    q.l = l;
    q.ta = ta;
    q.tb = tb;
    q.m = m;
    q.n = n;
    q.k = k;
    vt_min_lds(l, ta, tb, m, n, k, &q.lda, &q.ldb, &q.ldc);
    q.at = q.bt = q.ct = VX_F32;
    q.math = VX_MATH_DEFAULT;
    return q;
}

static void gdescribe(const gcall *q, char *buf, size_t len)
{
    snprintf(buf, len,
             "dyn_gemm_ex(layout=%d, transa=%d, transb=%d, m=%lld, n=%lld, k=%lld, a=%s %s, "
             "lda=%lld, b=%s %s, ldb=%lld, c=%s %s, ldc=%lld, math=%d)",
             (int)q->l, (int)q->ta, (int)q->tb, (long long)q->m, (long long)q->n, (long long)q->k,
             q->a_host ? "host" : "device", vtx_dtype_name(q->at), (long long)q->lda,
             q->b_host ? "host" : "device", vtx_dtype_name(q->bt), (long long)q->ldb,
             q->c_host ? "host" : "device", vtx_dtype_name(q->ct), (long long)q->ldc, (int)q->math);
}

/* Runs q with beta 0 and 0.5; expects `want`, a message, both C buffers
 * (device and host) bytewise unchanged after the device is synchronised. */
static void gexpect_fail(fail_bufs *f, const gcall *q, vx_status want, const char *why)
{
    char d[400];
    gdescribe(q, d, sizeof d);
    static unsigned char back[FBUF * 4];
    for (int bi = 0; bi < 2; bi++) {
        dev_upload(f->dc, f->c0, FBUF * 4);
        memcpy(f->hc, f->c0, FBUF * 4);
        vx_status s = dyn_gemm_ex(q->l, q->ta, q->tb, q->m, q->n, q->k, 1.0f,
                                  q->a_host ? (void *)f->ha : f->da, q->at, q->lda,
                                  q->b_host ? (void *)f->hb : f->db, q->bt, q->ldb,
                                  bi ? 0.5f : 0.0f, q->c_host ? (void *)f->hc : f->dc, q->ct,
                                  q->ldc, q->math);
        cr_assert_eq(s, want, "%s (%s, beta=%g): returned %s (\"%s\"), expected %s", d, why,
                     bi ? 0.5 : 0.0, vx_status_string(s), s ? vx_last_error() : "",
                     vx_status_string(want));
        const char *msg = vx_last_error();
        cr_assert(msg != NULL && msg[0] != '\0', "%s (%s): vx_last_error() is empty", d, why);
        dev_sync();
        dev_download(back, f->dc, FBUF * 4);
        cr_assert(memcmp(back, f->c0, FBUF * 4) == 0,
                  "%s (%s): device C was written although the call failed", d, why);
        cr_assert(memcmp(f->hc, f->c0, FBUF * 4) == 0,
                  "%s (%s): host C was written although the call failed", d, why);
    }
}

Test(gpu_args, mixed_host_device, .timeout = TMO)
{
    need_device();
    fail_bufs f;
    fail_bufs_init(&f);
    static const vx_dtype types[][2] = {{VX_F32, VX_F32}, {VX_F16, VX_F16}, {VX_BF16, VX_F32}};
    for (int combo = 0; combo < 8; combo++)
        for (int mix = 1; mix < 7; mix++)   /* 0 = all device, 7 = all host */
            for (int ti = 0; ti < 3; ti++) {
                vx_layout l;
                vx_transpose ta, tb;
                vt_combo(combo, &l, &ta, &tb);
                gcall q = gvalid(l, ta, tb, 9, 13, 7);
                q.a_host = mix & 1;
                q.b_host = (mix >> 1) & 1;
                q.c_host = (mix >> 2) & 1;
                q.at = q.bt = types[ti][0];
                q.ct = types[ti][1];
                gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "host and device pointers mixed");
            }
    fail_bufs_free(&f);
}

/* With k == 0 (or alpha == 0) A and B are not read: NULL operands next to a
 * device C run on the GPU and scale C (as NULL is accepted for operands
 * without elements on the host). */
Test(gpu_args, k0_null_operands_device_c, .timeout = TMO)
{
    need_device();
    const int64_t m = 7, n = 5, ldc = 9, cnt = ldc * (m - 1) + n;
    float hc[64], back[64];
    for (int i = 0; i < 64; i++)
        hc[i] = (float)(i + 1);
    float *dc = dev_alloc(sizeof hc);
    for (int bi = 0; bi < 2; bi++) {
        const float beta = bi ? -0.5f : 0.0f;
        dev_upload(dc, hc, sizeof hc);
        vx_status s = dyn_gemm_ex(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, 0, 1.0f, NULL,
                                  VX_F32, 1, NULL, VX_F32, n, beta, dc, VX_F32, ldc,
                                  VX_MATH_DEFAULT);
        cr_assert_eq(s, VX_OK, "k = 0, NULL A and B, device C, beta %g: %s (\"%s\")", (double)beta,
                     vx_status_string(s), vx_last_error());
        dev_sync();
        dev_download(back, dc, sizeof back);
        for (int64_t p = 0; p < 64; p++) {
            const int logical = p < cnt && p % ldc < n;
            const float want = logical ? beta * hc[p] : hc[p];
            cr_assert_eq(back[p], want, "k = 0, beta %g: C float %lld is %g, expected %g",
                         (double)beta, (long long)p, (double)back[p], (double)want);
        }
    }
    dev_release(dc);
}

Test(gpu_args, unsupported_types, .timeout = TMO)
{
    need_device();
    fail_bufs f;
    fail_bufs_init(&f);
    static const vx_dtype bad[][3] = {
        {VX_F16, VX_BF16, VX_F32}, {VX_BF16, VX_F16, VX_F32}, {VX_F16, VX_BF16, VX_F16},
        {VX_F16, VX_F16, VX_BF16}, {VX_BF16, VX_BF16, VX_F16}, {VX_F32, VX_F32, VX_F16},
        {VX_F32, VX_F32, VX_BF16}, {VX_F32, VX_F16, VX_F32},   {VX_F16, VX_F32, VX_F32},
        {VX_BF16, VX_F32, VX_BF16},
    };
    for (int combo = 0; combo < 8; combo++)
        for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
            vx_layout l;
            vx_transpose ta, tb;
            vt_combo(combo, &l, &ta, &tb);
            gcall q = gvalid(l, ta, tb, 9, 13, 7);
            q.at = bad[i][0];
            q.bt = bad[i][1];
            q.ct = bad[i][2];
            char why[96];
            snprintf(why, sizeof why, "%s x %s -> %s on the GPU", vtx_dtype_name(q.at),
                     vtx_dtype_name(q.bt), vtx_dtype_name(q.ct));
            gexpect_fail(&f, &q, VX_ERR_UNSUPPORTED, why);
        }
    fail_bufs_free(&f);
}

Test(gpu_args, bad_arguments, .timeout = TMO)
{
    need_device();
    fail_bufs f;
    fail_bufs_init(&f);
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        for (int ti = 0; ti < N_TCOMBOS; ti++) {
            gcall ok = gvalid(l, ta, tb, 9, 13, 7);
            ok.at = ok.bt = tcombos[ti].ab;
            ok.ct = tcombos[ti].c;
            ok.math = tcombos[ti].math;
            gcall q = ok;
            q.lda = ok.lda - 1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "lda one too small");
            q = ok;
            q.ldb = ok.ldb - 1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "ldb one too small");
            q = ok;
            q.ldc = ok.ldc - 1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "ldc one too small");
            q = ok;
            q.m = -1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "m < 0");
            q = ok;
            q.k = -1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "k < 0");
            q = ok;
            q.ct = (vx_dtype)3;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "bad c_type");
            q = ok;
            q.at = (vx_dtype)-1;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "bad a_type");
            q = ok;
            q.math = (vx_math_mode)2;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "bad math mode");
            q = ok;
            q.l = (vx_layout)0;
            gexpect_fail(&f, &q, VX_ERR_INVALID_ARG, "bad layout");
        }
    }
    fail_bufs_free(&f);
}

/* ---- edges ---- */

/* k == 0 and alpha == 0: C = beta C (beta 0 over NaN gives zeros), and
 * empty C writes nothing, for every type combination. */
Test(gpu_edge, k0_alpha0_empty, .timeout = TMO)
{
    need_device();
    static const float betas[] = {0.0f, 1.0f, 0.5f, -2.0f};
    const int q = quick();
    for (int ti = 0; ti < N_TCOMBOS; ti++)
        for (int combo = 0; combo < 8; combo++) {
            if (q && combo % 3 != ti % 3)
                continue;
            for (int bi = 0; bi < 4; bi++) {
                vtx_case c = vtx_case_make(17, 33, 0);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                set_types(&c, &tcombos[ti]);
                c.beta = betas[bi];
                c.c_nan = bi == 0;
                c.ldc_pad = 3;
                c.seed = (uint64_t)(ti * 100 + combo * 10 + bi);
                c.tag = "k = 0";
                vtx_check(&DEV, &c);
                c.k = 31;
                c.alpha = 0.0f;
                c.tag = "alpha = 0";
                vtx_check(&DEV, &c);
            }
            static const int64_t empty[][3] = {{0, 5, 7}, {5, 0, 7}, {0, 0, 0}};
            for (int e = 0; e < 3; e++) {
                vtx_case c = vtx_case_make(empty[e][0], empty[e][1], empty[e][2]);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                set_types(&c, &tcombos[ti]);
                c.beta = 0.5f;
                c.tag = "empty C: nothing may be written";
                vtx_check(&DEV, &c);
            }
        }
}

/* Operand pointers one or three elements past an allocation and odd leading
 * dimensions: no vector access may assume alignment. */
Test(gpu_edge, unaligned_operands, .timeout = TMO)
{
    need_device();
    const int q = quick();
    static const int64_t shapes[][3] = {{33, 65, 17}, {128, 128, 64}, {1, 257, 31}, {63, 1, 129}};
    const int nshapes = q ? 2 : 4;
    for (int ti = 0; ti < N_TCOMBOS; ti++)
        for (int s = 0; s < nshapes; s++)
            for (int combo = 0; combo < 8; combo++) {
                if (q && combo % 3 != 0)
                    continue;
                vtx_case c = vtx_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                set_types(&c, &tcombos[ti]);
                c.a_off = 1 + 2 * ((combo + s) % 2);
                c.b_off = 1 + 2 * ((combo + s + 1) % 2);
                c.c_off = 1 + 2 * (s % 2);
                c.lda_pad = 1;
                c.ldb_pad = 3;
                c.ldc_pad = combo % 2 ? 1 : 0;
                c.alpha = 1.5f;
                c.beta = combo % 2 ? 0.0f : -0.5f;
                c.c_nan = combo % 2;
                c.seed = (uint64_t)(ti * 1000 + s * 10 + combo + 77);
                c.tag = "operands not aligned";
                vtx_check(&DEV, &c);
            }
}

/* Forcing an instance whose operand type or layout does not match the call
 * is refused (VX_ERR_UNSUPPORTED), writing nothing. */
Test(gpu_edge, forced_instance_mismatch, .timeout = TMO)
{
    need_device();
    const int n = vx_cuda_instance_count();
    cr_assert(n > 0, "no kernel instances");
    fail_bufs f;
    fail_bufs_init(&f);
    for (int i = 0; i < n; i += quick() ? 5 : 1) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        vx_cuda_policy pol = {i, 1, VX_UNIT_AUTO, 0};
        /* the right layout, another operand type */
        static const vx_dtype all[] = {VX_F32, VX_F16, VX_BF16};
        for (int t = 0; t < 3; t++) {
            if (all[t] == in->ab_type)
                continue;
            gcall q = gvalid(VX_ROW_MAJOR, in->a_kcontig ? VX_NO_TRANS : VX_TRANS,
                             in->b_kcontig ? VX_TRANS : VX_NO_TRANS, 9, 13, 7);
            q.at = q.bt = all[t];
            q.ct = VX_F32;
            q.math = VX_MATH_DEFAULT;
            char why[256];
            snprintf(why, sizeof why, "instance %d %s (%s) forced for %s operands", i, in->name,
                     vtx_dtype_name(in->ab_type), vtx_dtype_name(all[t]));
            vx_cuda_set_policy(&pol);
            gexpect_fail(&f, &q, VX_ERR_UNSUPPORTED, why);
            vx_cuda_set_policy(NULL);
        }
        /* the right type, A's k direction flipped */
        gcall q = gvalid(VX_ROW_MAJOR, in->a_kcontig ? VX_TRANS : VX_NO_TRANS,
                         in->b_kcontig ? VX_TRANS : VX_NO_TRANS, 9, 13, 7);
        q.at = q.bt = q.ct = in->ab_type;
        q.math = in->tf32 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
        char why[256];
        snprintf(why, sizeof why, "instance %d %s (a_kcontig %d) forced for the other A layout",
                 i, in->name, in->a_kcontig);
        vx_cuda_set_policy(&pol);
        gexpect_fail(&f, &q, VX_ERR_UNSUPPORTED, why);
        vx_cuda_set_policy(NULL);
    }
    fail_bufs_free(&f);
}

/* The model's pick matches the call (types, tf32, k directions) and has a
 * finite positive prediction. */
Test(gpu_edge, explain_matches_call, .timeout = TMO)
{
    need_device();
    const int n = vx_cuda_instance_count();
    cr_assert(n > 0, "no kernel instances");
    static const int64_t shapes[][3] = {{1, 1, 1}, {17, 33, 65}, {300, 257, 131}, {4096, 4096, 4096},
                                        {8, 8192, 8192}};
    for (int ti = 0; ti < N_TCOMBOS; ti++)
        for (int s = 0; s < 5; s++)
            for (int ak = 0; ak < 2; ak++)
                for (int bk = 0; bk < 2; bk++) {
                    vx_cuda_gemm_args g;
                    memset(&g, 0, sizeof g);
                    g.m = shapes[s][0];
                    g.n = shapes[s][1];
                    g.k = shapes[s][2];
                    g.alpha = 1.0f;
                    g.a_kcontig = ak;
                    g.b_kcontig = bk;
                    g.lda = ak ? g.k : g.m;
                    g.ldb = bk ? g.k : g.n;
                    g.ldc = g.n;
                    g.ab_type = tcombos[ti].ab;
                    g.c_type = tcombos[ti].c;
                    g.math = tcombos[ti].math;
                    vx_cuda_choice ch[6];
                    int got = vx_cuda_explain(&g, ch, 6);
                    cr_assert(got >= 1 && got <= 6, "vx_cuda_explain(%lldx%lldx%lld, combo %d, "
                              "kcontig %d%d) returned %d", (long long)g.m, (long long)g.n,
                              (long long)g.k, ti, ak, bk, got);
                    for (int j = 0; j < got; j++) {
                        cr_assert(ch[j].instance >= 0 && ch[j].instance < n && ch[j].splits >= 1,
                                  "choice %d: instance %d splits %d", j, ch[j].instance,
                                  ch[j].splits);
                        const vx_cuda_instance *in = vx_cuda_instance_get(ch[j].instance);
                        /* a transposed plan runs B^T A^T: the operands swap */
                        const int eak = ch[j].transposed ? bk : ak, ebk = ch[j].transposed ? ak : bk;
                        cr_assert(in->ab_type == g.ab_type && in->a_kcontig == eak &&
                                  in->b_kcontig == ebk &&
                                  (!in->tf32 || g.math == VX_MATH_TF32),
                                  "choice %d (%s%s) does not fit %lldx%lldx%lld combo %d kcontig "
                                  "%d%d", j, ch[j].transposed ? "T:" : "", in->name, (long long)g.m,
                                  (long long)g.n, (long long)g.k, ti, ak, bk);
                        cr_assert(isfinite(ch[j].predicted_us) && ch[j].predicted_us > 0.0,
                                  "choice %d (%s): predicted %g us", j, in->name,
                                  ch[j].predicted_us);
                    }
                }
}

Test(gpu_edge, device_count, .timeout = TMO)
{
    need_device();
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    cr_assert_eq(vx_cuda_device_count(), n, "vx_cuda_device_count() = %d, CUDA sees %d",
                 vx_cuda_device_count(), n);
    cr_assert_eq(vx_cuda_available(), 1);
    cr_assert_eq(vx_cuda_set_stream(NULL), VX_OK, "vx_cuda_set_stream(NULL): \"%s\"",
                 vx_last_error());
}

/* ---- where memory lives ---- */

/* Managed memory counts as device memory: f16 operands (which the CPU does
 * not take) run, on the GPU. */
Test(gpu_mem, managed_runs_on_gpu, .timeout = TMO)
{
    need_device();
    for (int ti = 0; ti < N_TCOMBOS; ti++)
        for (int combo = 0; combo < 8; combo += 3) {
            vtx_case c = vtx_case_make(65, 31, 129);
            vt_combo(combo, &c.layout, &c.ta, &c.tb);
            set_types(&c, &tcombos[ti]);
            c.beta = ti % 2 ? 0.25f : 0.0f;
            c.c_nan = !(ti % 2);
            c.ldb_pad = 2;
            c.seed = (uint64_t)(ti * 10 + combo + 5000);
            c.tag = "managed memory";
            vtx_check(&MANAGED, &c);
        }
}

/* Pinned host memory is host memory: F32 runs on the CPU (exactly); other
 * types are refused as on any host memory. */
Test(gpu_mem, pinned_host_runs_on_cpu, .timeout = TMO)
{
    need_device();
    for (int combo = 0; combo < 8; combo++) {
        vtx_case c = vtx_case_make(65, 31, 129);
        vt_combo(combo, &c.layout, &c.ta, &c.tb);
        c.math = combo % 2 ? VX_MATH_TF32 : VX_MATH_DEFAULT;
        c.tol = 1e-5;
        c.seed = (uint64_t)(combo + 6000);
        c.tag = "pinned host memory";
        vtx_check(&PINNED, &c);
    }
    void *a = pinned_alloc(4096), *b = pinned_alloc(4096), *cc = pinned_alloc(4096);
    memset(cc, 0x7F, 4096);
    vx_status s = dyn_gemm_ex(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 8, 8, 8, 1.0f, a, VX_F16, 8,
                              b, VX_F16, 8, 0.0f, cc, VX_F32, 8, VX_MATH_DEFAULT);
    cr_assert_eq(s, VX_ERR_UNSUPPORTED, "f16 operands in pinned host memory returned %s",
                 vx_status_string(s));
    for (int i = 0; i < 4096; i++)
        cr_assert_eq(((unsigned char *)cc)[i], 0x7F, "C written at byte %d", i);
    pinned_release(a);
    pinned_release(b);
    pinned_release(cc);
}

/* ---- stream ordering ---- */

/* On a non-blocking stream: a large upload first (so that work on any other
 * stream would overtake it), then the operands, C1 = A B, C2 = C1 D (reads
 * the first call's output), and the downloads; only that stream is
 * synchronised. Device buffers start as NaN, so a call that ran early or on
 * another stream shows. */
Test(gpu_stream, ordering_on_user_stream, .timeout = TMO)
{
    need_device();
    const int q = quick();
    const int64_t M = q ? 96 : 512, K = q ? 80 : 512, N = q ? 64 : 256, P = q ? 48 : 384;
    const size_t delay_bytes = (size_t)(q ? 8 : 256) << 20;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    float *ha, *hb, *hd, *hc1, *hc2;
    void *hdelay;
    CK(cudaMallocHost((void **)&ha, sizeof(float) * (size_t)(M * K)));
    CK(cudaMallocHost((void **)&hb, sizeof(float) * (size_t)(K * N)));
    CK(cudaMallocHost((void **)&hd, sizeof(float) * (size_t)(N * P)));
    CK(cudaMallocHost((void **)&hc1, sizeof(float) * (size_t)(M * N)));
    CK(cudaMallocHost((void **)&hc2, sizeof(float) * (size_t)(M * P)));
    CK(cudaMallocHost(&hdelay, delay_bytes));
    memset(hdelay, 0, delay_bytes);
    vt_rng r;
    vt_rng_seed(&r, 4242);
    for (int64_t i = 0; i < M * K; i++)
        ha[i] = vt_rng_float(&r);
    for (int64_t i = 0; i < K * N; i++)
        hb[i] = vt_rng_float(&r);
    for (int64_t i = 0; i < N * P; i++)
        hd[i] = vt_rng_float(&r);
    float *da, *db, *dd, *dc1, *dc2;
    void *ddelay;
    CK(cudaMalloc((void **)&da, sizeof(float) * (size_t)(M * K)));
    CK(cudaMalloc((void **)&db, sizeof(float) * (size_t)(K * N)));
    CK(cudaMalloc((void **)&dd, sizeof(float) * (size_t)(N * P)));
    CK(cudaMalloc((void **)&dc1, sizeof(float) * (size_t)(M * N)));
    CK(cudaMalloc((void **)&dc2, sizeof(float) * (size_t)(M * P)));
    CK(cudaMalloc(&ddelay, delay_bytes));
    /* NaN everywhere (0xFF bytes), finished before the stream starts */
    CK(cudaMemset(da, 0xFF, sizeof(float) * (size_t)(M * K)));
    CK(cudaMemset(db, 0xFF, sizeof(float) * (size_t)(K * N)));
    CK(cudaMemset(dd, 0xFF, sizeof(float) * (size_t)(N * P)));
    CK(cudaMemset(dc1, 0xFF, sizeof(float) * (size_t)(M * N)));
    CK(cudaMemset(dc2, 0xFF, sizeof(float) * (size_t)(M * P)));
    CK(cudaDeviceSynchronize());

    vx_status s = vx_cuda_set_stream(st);
    cr_assert_eq(s, VX_OK, "vx_cuda_set_stream(stream): %s (\"%s\")", vx_status_string(s),
                 vx_last_error());
    CK(cudaMemcpyAsync(ddelay, hdelay, delay_bytes, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(da, ha, sizeof(float) * (size_t)(M * K), cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(db, hb, sizeof(float) * (size_t)(K * N), cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(dd, hd, sizeof(float) * (size_t)(N * P), cudaMemcpyHostToDevice, st));
    /* C1 = A B (row-major, beta 0 over NaN) */
    s = dyn_gemm_ex(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, M, N, K, 1.0f, da, VX_F32, K, db,
                    VX_F32, N, 0.0f, dc1, VX_F32, N, VX_MATH_DEFAULT);
    cr_assert_eq(s, VX_OK, "first call: %s (\"%s\")", vx_status_string(s), vx_last_error());
    /* C2 = 0.5 C1 D (reads C1) */
    s = dyn_gemm_ex(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, M, P, N, 0.5f, dc1, VX_F32, N, dd,
                    VX_F32, P, 0.0f, dc2, VX_F32, P, VX_MATH_DEFAULT);
    cr_assert_eq(s, VX_OK, "second call: %s (\"%s\")", vx_status_string(s), vx_last_error());
    CK(cudaMemcpyAsync(hc1, dc1, sizeof(float) * (size_t)(M * N), cudaMemcpyDeviceToHost, st));
    CK(cudaMemcpyAsync(hc2, dc2, sizeof(float) * (size_t)(M * P), cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());

    double *ref1 = malloc(sizeof(double) * (size_t)(M * N));
    double *ref2 = malloc(sizeof(double) * (size_t)(M * P));
    cr_assert(ref1 && ref2);
    vt_ref_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, M, N, K, 1.0, ha, K, hb, N, 0.0, NULL, N,
                ref1);
    double e1 = vt_rel_err(hc1, N, 1, ref1, M, N);
    cr_assert(e1 <= 1e-5, "stream ordering: first call's C1 relative error %.3g (NaN/Inf = "
              "ran before its inputs arrived or off the stream)", e1);
    /* the second call against its actual input (the C1 it read) */
    vt_ref_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, M, P, N, 0.5, hc1, N, hd, P, 0.0, NULL, P,
                ref2);
    double e2 = vt_rel_err(hc2, P, 1, ref2, M, P);
    cr_assert(e2 <= 1e-5, "stream ordering: second call's C2 relative error %.3g (NaN/Inf = "
              "ran before C1 was written or off the stream)", e2);
    free(ref1);
    free(ref2);

    s = vx_cuda_set_stream(NULL);
    cr_assert_eq(s, VX_OK, "vx_cuda_set_stream(NULL): %s", vx_status_string(s));
    CK(cudaStreamDestroy(st));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
    CK(cudaFree(dc1));
    CK(cudaFree(dc2));
    CK(cudaFree(ddelay));
    CK(cudaFreeHost(ha));
    CK(cudaFreeHost(hb));
    CK(cudaFreeHost(hd));
    CK(cudaFreeHost(hc1));
    CK(cudaFreeHost(hc2));
    CK(cudaFreeHost(hdelay));
}
