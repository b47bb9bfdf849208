/* The CUDA backend's host side: pointer routing, per-device state (occupancy
 * of every instance, the wave model's candidates), selection with the
 * device-neutral wave model (analyzer/wave.c) behind a small plan cache, the
 * launch with split-K through a stream-ordered workspace, and explain. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "cuda/cuda_internal.h"
#include "cuda_instances.h"
extern "C" {
#include "runtime.h"
#include "status.h"
}

namespace vx {

/* ---- the instance list --------------------------------------------------- */

const std::vector<const KernelEntry *> &entries()
{
    static const std::vector<const KernelEntry *> all = [] {
        std::vector<const KernelEntry *> v;
        for (int g = 0; g < cuda_group_count; g++) {
            int n = 0;
            const KernelEntry *t = cuda_groups[g](&n);
            for (int i = 0; i < n; i++) v.push_back(&t[i]);
        }
        return v;
    }();
    return all;
}

static const std::vector<vx_cuda_instance> &instance_infos()
{
    static const std::vector<vx_cuda_instance> infos = [] {
        std::vector<vx_cuda_instance> v;
        for (const KernelEntry *e : entries()) {
            vx_cuda_instance i;
            i.name = e->name;
            i.unit = e->unit == UNIT_TENSOR ? VX_UNIT_TENSOR : VX_UNIT_SIMT;
            i.ab_type = (vx_dtype)e->dtype;
            i.tf32 = e->tf32;
            i.a_kcontig = e->a_kcontig;
            i.b_kcontig = e->b_kcontig;
            i.bm = e->bm; i.bn = e->bn; i.bk = e->bk; i.wm = e->wm; i.wn = e->wn;
            i.cluster = e->cluster;
            i.sm90a = e->sm90a;
            i.stages = e->stages; i.threads = e->threads; i.smem_bytes = e->smem_bytes;
            v.push_back(i);
        }
        return v;
    }();
    return infos;
}

/* ---- devices ------------------------------------------------------------- */

enum { MAX_DEVICES = 64 };
static DeviceState *g_dev[MAX_DEVICES];
static std::mutex g_dev_mu;

static int device_count()
{
    static int count = [] {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
            cudaGetLastError(); /* no driver or no device: clear the sticky-free error */
            n = 0;
        }
        return n;
    }();
    return count;
}

/* Per-SM flop rate (flop per ns) the built-in estimate assumes for a unit. */
static double sm_flops_per_ns(const DeviceState &d, const KernelEntry &e)
{
    const double ghz = 1.6; /* typical sustained SM clock of sm_80/sm_90 parts under load */
    const int cc = d.prop.major * 10 + d.prop.minor;
    if (e.unit == UNIT_SIMT) {
        const double eff = e.dtype == VX_F32 ? 0.65 : 0.45; /* 16-bit operands pay conversions */
        return 2.0 * 128 * ghz * eff;
    }
    /* mma.sync: 1024 fp16 FMA per clock per SM on sm_80; Hopper runs it about
     * 1.3x faster per SM (its full rate needs wgmma). tf32 is half of that. */
    double r = 2.0 * 1024 * ghz * (cc >= 90 ? 1.3 : 1.0) * 0.7;
    if (e.sm90a) r = 2.0 * 2048 * ghz * 0.7; /* wgmma: Hopper's full rate, 2048 fp16 FMA per clock per SM */
    if (e.tf32) r *= 0.5;
    return r;
}

void default_wave(const DeviceState &d, const KernelEntry &e, vx_wave_cand &c)
{
    c.bm = e.bm; c.bn = e.bn; c.bk = e.bk;
    c.fixup = e.fixup;
    c.max_splits = e.cluster ? CLUSTER_MAX_SLICES : 0;
    c.min_splits = e.cluster ? 2 : 0; /* unsplit it is its base entry */
    const double res = std::max(1, c.resident);
    if (e.fixup && !e.cluster) {
        /* The skinny family streams B from DRAM (~3 TB/s on sm_90 parts,
         * ~1.5 on sm_80) once per row tile; its FFMAs mostly hide behind that. */
        const int cc = d.prop.major * 10 + d.prop.minor;
        const double elem = e.dtype == VX_F32 ? 4.0 : 2.0;
        const double dram = cc >= 90 ? 3000.0 : 1500.0;
        const double memory = res * d.prop.multiProcessorCount * e.bn * elem / dram;
        const double compute = res * 2.0 * e.bm * e.bn / sm_flops_per_ns(d, e);
        c.p_ns = (float)std::max(memory, compute);
        c.o_ns = 800.0f;
        return;
    }
    const double compute = res * 2.0 * e.bm * e.bn / sm_flops_per_ns(d, e);   /* ns per unit of K, one SM */
    const double elem = e.dtype == VX_F32 ? 4.0 : 2.0;
    /* Operand bytes a wave reads per unit of K, mostly from L2 (~5 TB/s here). */
    const double bytes = res * d.prop.multiProcessorCount * (e.bm + e.bn) * elem;
    const double memory = bytes / 5000.0;
    /* A BK step cannot take less than ~80 clocks (barrier, address math,
     * shared-memory latency) however little a block computes. */
    const double floor = res * 80.0 / 1.6 / e.bk / std::max(1.0, res * e.threads / 512.0);
    c.p_ns = (float)std::max(compute, std::max(memory, floor));
    c.o_ns = 1500.0f; /* block start, pipeline fill, epilogue */
}

DeviceState *device_state(vx_status *err)
{
    int dev = 0;
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce != cudaSuccess || dev < 0 || dev >= MAX_DEVICES) {
        *err = vx_fail(VX_ERR_DEVICE, "dyn_gemm_ex: cudaGetDevice failed: %s", cudaGetErrorString(ce));
        cudaGetLastError();
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(g_dev_mu);
    if (g_dev[dev]) return g_dev[dev];
    DeviceState *d = new DeviceState();
    d->id = dev;
    if ((ce = cudaGetDeviceProperties(&d->prop, dev)) != cudaSuccess) {
        delete d;
        *err = vx_fail(VX_ERR_DEVICE, "dyn_gemm_ex: cudaGetDeviceProperties(%d) failed: %s", dev,
                       cudaGetErrorString(ce));
        cudaGetLastError();
        return nullptr;
    }
    cudaDriverGetVersion(&d->driver);
    /* The Hopper family is the model's to pick on compute capability 9.0;
     * VORTEX_CUDA_WGMMA=0 takes it away (the mma.sync families alone, as on
     * other GPUs), for comparisons. It passed the GPU tests and racecheck on
     * an H200 and ran the transformer suite's fp16/bf16 shapes 1.14x faster
     * (benchmarks/RESULTS.md, 2026-11-28). A forced plan (the tests, the
     * oracle) runs it either way. */
    const char *wg_env = getenv("VORTEX_CUDA_WGMMA");
    d->wgmma_off = wg_env && strcmp(wg_env, "0") == 0;
    const auto &all = entries();
    d->resident.assign(all.size(), 0);
    d->wave.assign(all.size(), vx_wave_cand{});
    for (size_t i = 0; i < all.size(); i++) {
        const KernelEntry &e = *all[i];
        int r = 0;
        if ((size_t)e.smem_bytes <= d->prop.sharedMemPerBlockOptin) {
            if (e.smem_bytes > 48 * 1024)
                cudaFuncSetAttribute(e.func, cudaFuncAttributeMaxDynamicSharedMemorySize, e.smem_bytes);
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, e.func, e.threads, e.smem_bytes) != cudaSuccess)
                r = 0;
        }
        cudaGetLastError();
        d->resident[i] = r;
        d->wave[i].resident = r;
        default_wave(*d, e, d->wave[i]);
    }
    d->model.units = d->prop.multiProcessorCount;
    d->model.launch_ns = 2500.0;
    d->model.split_fixed_ns = 1000.0;
    d->model.reduce_bytes_per_ns = 2000.0;
    d->model.fixup_ns = 800.0;
    d->model.max_splits = 32;
    d->tune_source = "defaults: estimated from the device properties (no tuning file with this GPU)";
    load_tuned_waves(*d);
    /* Split-K workspaces come from the stream-ordered pool: keep what it
     * holds instead of returning it to the driver after every call. */
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();
    g_dev[dev] = d;
    return d;
}

std::string fingerprint(const DeviceState &d)
{
    char buf[400];
    snprintf(buf, sizeof buf, "%s|sm=%d|cc=%d.%d|driver=%d|instances=%zu", d.prop.name, d.prop.multiProcessorCount,
             d.prop.major, d.prop.minor, d.driver, entries().size());
    return buf;
}

/* ---- streams, policy, plan cache ----------------------------------------- */

static thread_local cudaStream_t t_stream = nullptr;
static std::mutex g_policy_mu;
static vx_cuda_policy g_policy = {-1, 0, VX_UNIT_AUTO, 0};
static int g_policy_gen = 0;

struct PlanKey {
    int64_t m, n, k;
    int dev, bits, gen;
    bool operator==(const PlanKey &o) const
    {
        return m == o.m && n == o.n && k == o.k && dev == o.dev && bits == o.bits && gen == o.gen;
    }
};
struct PlanKeyHash {
    size_t operator()(const PlanKey &p) const
    {
        uint64_t h = 1469598103934665603ull;
        const int64_t v[6] = {p.m, p.n, p.k, p.dev, p.bits, p.gen};
        for (int64_t x : v) h = (h ^ (uint64_t)x) * 1099511628211ull;
        return (size_t)h;
    }
};
static std::mutex g_cache_mu;
static std::unordered_map<PlanKey, vx_cuda_choice, PlanKeyHash> g_cache;
enum { PLAN_CACHE_MAX = 4096 };

/* Which instances may run g under the policy: operand type and layouts
 * match; fp32 runs on CUDA cores, or on tf32 Tensor Cores when allowed. */
static std::vector<unsigned char> eligible(const DeviceState &d, const vx_cuda_gemm_args *g, vx_cuda_unit unit)
{
    const auto &all = entries();
    std::vector<unsigned char> ok(all.size(), 0);
    for (size_t i = 0; i < all.size(); i++) {
        const KernelEntry &e = *all[i];
        if (e.dtype != (int)g->ab_type || e.a_kcontig != g->a_kcontig || e.b_kcontig != g->b_kcontig) continue;
        if (d.resident[i] <= 0) continue;
        if (e.cluster && d.prop.major < 9) continue; /* thread-block clusters: sm_90 */
        if (e.sm90a && (d.prop.major != 9 || d.prop.minor != 0)) continue; /* sm_90a: cc 9.0 alone */
        const bool tensor = e.unit == UNIT_TENSOR;
        if (g->ab_type == VX_F32 && tensor && g->math != VX_MATH_TF32) continue;
        if (unit == VX_UNIT_TENSOR && !tensor) continue;
        if (unit == VX_UNIT_SIMT && tensor) continue;
        ok[i] = 1;
    }
    return ok;
}

static const int64_t CLUSTER_MAX_M = 64;

static int rank_plans(const DeviceState &d, const vx_cuda_gemm_args *g, vx_cuda_unit unit, vx_cuda_choice *out,
                      int max_out)
{
    std::vector<unsigned char> ok = eligible(d, g, unit);
    /* The skinny family is chosen only where one row tile covers M, so B is
     * read once: with more row tiles it re-reads B and lost to the tiled
     * kernels on an H100 while the wave model still priced it cheaper.
     * Cluster split-K is offered up to M = CLUSTER_MAX_M. Beyond it the wave
     * model prices its in-kernel tail (two cluster barriers and the shared-
     * memory reduction, paid by every wave) too cheaply: on an H100 the calls
     * that took a cluster plan instead of the plain ones ran 0.88x the time
     * at M <= 16 and 0.95x at 17..64, but 0.99x at 65..128 and 1.02x above.
     * The Hopper family's cluster entries are offered at any M: with its
     * larger tiles the cluster plans were the fastest found up to M = 512
     * on K = 768 calls (vortex-oracle-cuda on an H100; benchmarks/NOTES.md).
     * (Forced, both run any M: the tests cover that.) */
    const auto &all = entries();
    for (size_t i = 0; i < all.size(); i++) {
        const KernelEntry &e = *all[i];
        if (e.cluster ? g->m > CLUSTER_MAX_M && !e.sm90a : e.fixup && g->m > e.bm) ok[i] = 0;
        if (e.sm90a && d.wgmma_off) ok[i] = 0; /* VORTEX_CUDA_WGMMA=0 */
    }
    vx_wave_device model = d.model;
    model.c_bytes = g->c_type == VX_F32 ? 4 : 2;
    model.beta_reads_c = g->beta != 0.0f;
    std::vector<vx_wave_choice> tmp(std::max(1, max_out));
    const int n = vx_wave_rank(&model, d.wave.data(), ok.data(), (int)ok.size(), g->m, g->n, g->k, tmp.data(),
                               max_out);
    for (int i = 0; i < n; i++) out[i] = {tmp[i].cand, tmp[i].splits, tmp[i].ns * 1e-3, 0};
    return n;
}

/* The same product run as C^T = B^T A^T: M and N swap, A and B swap (each
 * keeps its storage, so its K-contiguity moves with it), C is stored
 * transposed. A call with a small N then meets the instances' small-M
 * tiles and the skinny family instead of wasting a wide N tile. */
static vx_cuda_gemm_args transposed_args(const vx_cuda_gemm_args *g)
{
    vx_cuda_gemm_args t = *g;
    t.m = g->n; t.n = g->m;
    t.a = g->b; t.lda = g->ldb; t.a_kcontig = g->b_kcontig;
    t.b = g->a; t.ldb = g->lda; t.b_kcontig = g->a_kcontig;
    return t;
}

/* The narrowest N tile of the tiled family: a call with a smaller N wastes
 * part of every tile as called. */
static int narrowest_tiled_bn()
{
    static const int bn = [] {
        int v = 1 << 30;
        for (const KernelEntry *e : entries())
            if (!e->fixup) v = std::min(v, e->bn);
        return v;
    }();
    return bn;
}

/* The best max_out plans over the orientations `orient` allows (0: the
 * model's choice, 1 as called, 2 transposed), cheapest first. The model
 * weighs the transposed orientation only where it changes the tile fit: N
 * below the narrowest N tile and below M. Elsewhere both orientations run
 * the same tiles, and letting the wave times decide picked the transposed
 * layout for 122 of 476 transformer calls on an H100 and lost 6 % on them
 * (the two layouts' tuned times differ by little more than noise). */
static int rank_oriented(const DeviceState &d, const vx_cuda_gemm_args *g, vx_cuda_unit unit, int orient,
                         vx_cuda_choice *out, int max_out)
{
    if (orient == 0 && !(g->n < g->m && g->n < narrowest_tiled_bn())) orient = 1;
    std::vector<vx_cuda_choice> as(std::max(1, max_out)), tr(std::max(1, max_out));
    int na = 0, nt = 0;
    if (orient != 2) na = rank_plans(d, g, unit, as.data(), max_out);
    if (orient != 1) {
        const vx_cuda_gemm_args t = transposed_args(g);
        nt = rank_plans(d, &t, unit, tr.data(), max_out);
        for (int i = 0; i < nt; i++) tr[i].transposed = 1;
    }
    int i = 0, j = 0, n = 0;
    while (n < max_out && (i < na || j < nt)) {
        /* ties keep the call's own orientation */
        if (j >= nt || (i < na && as[i].predicted_us <= tr[j].predicted_us)) out[n++] = as[i++];
        else out[n++] = tr[j++];
    }
    return n;
}

/* ---- kernels beside the GEMM ---------------------------------------------- */

__global__ void splitk_reduce(const float *ws, int splits, int m, int n, void *c, long long ldc, int c_trans, int ct,
                              float alpha, float beta)
{
    const long long total = (long long)m * n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int z = 0; z < splits; z++) s += ws[z * total + i];
        const int row = (int)(i / n), col = (int)(i % n);
        const long long ci = c_trans ? (long long)col * ldc + row : (long long)row * ldc + col;
        float v = alpha * s;
        if (beta != 0.0f) v += beta * load_c(c, ci, ct);
        store_c(c, ci, v, ct);
    }
}

__global__ void scale_c_kernel(int m, int n, void *c, long long ldc, int ct, float beta)
{
    const long long total = (long long)m * n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long ci = (i / n) * ldc + i % n;
        store_c(c, ci, beta == 0.0f ? 0.0f : beta * load_c(c, ci, ct), ct);
    }
}

static int elementwise_blocks(long long total)
{
    return (int)std::min<long long>((total + 255) / 256, 4096);
}

cudaError_t launch_instance(const KernelEntry &e, const KParams &p, int splits, cudaStream_t s)
{
    const long long tiles = (long long)((p.m + e.bm - 1) / e.bm) * ((p.n + e.bn - 1) / e.bn);
    e.launch(p, dim3((unsigned)tiles, 1, (unsigned)splits), s);
    return cudaGetLastError();
}

/* Split-K partial sums live in one workspace per (device, stream), grown on
 * demand: calls on one stream run in order, so they can share it, and no
 * call pays an allocation once the workspace is large enough. A grown
 * workspace replaces the old one in stream order (cudaFreeAsync). */
struct Workspace {
    float *ptr = nullptr;
    size_t bytes = 0;
    int *counters = nullptr; /* in-kernel reductions' per-tile counters: zero between calls */
    size_t ncounters = 0;
};
static std::mutex g_ws_mu;
static std::unordered_map<uint64_t, Workspace> g_ws;

/* The stream's workspace of at least `bytes`, and (when ncounters > 0) at
 * least that many zeroed counters. Kernels that use the counters leave them
 * zero, so they are cleared only when first allocated. */
static cudaError_t workspace(int dev, cudaStream_t s, size_t bytes, size_t ncounters, float **out, int **counters)
{
    std::lock_guard<std::mutex> lock(g_ws_mu);
    Workspace &w = g_ws[(uint64_t)(uintptr_t)s * 64 + (uint64_t)dev];
    cudaError_t ce;
    if (w.bytes < bytes) {
        if (w.ptr) cudaFreeAsync(w.ptr, s);
        w.ptr = nullptr;
        w.bytes = 0;
        const size_t grow = std::max(bytes, (size_t)4 << 20);
        if ((ce = cudaMallocAsync((void **)&w.ptr, grow, s)) != cudaSuccess) return ce;
        w.bytes = grow;
    }
    if (w.ncounters < ncounters) {
        if (w.counters) cudaFreeAsync(w.counters, s);
        w.counters = nullptr;
        w.ncounters = 0;
        const size_t grow = std::max(ncounters, (size_t)1 << 16);
        if ((ce = cudaMallocAsync((void **)&w.counters, grow * sizeof(int), s)) != cudaSuccess) return ce;
        if ((ce = cudaMemsetAsync(w.counters, 0, grow * sizeof(int), s)) != cudaSuccess) return ce;
        w.ncounters = grow;
    }
    *out = w.ptr;
    if (counters) *counters = w.counters;
    return cudaSuccess;
}

static bool aligned16(const void *p, long long ld, int elem)
{
    return ((uintptr_t)p % 16) == 0 && (ld * elem) % 16 == 0;
}

} // namespace vx

using namespace vx;

/* ---- the C interface ------------------------------------------------------ */

extern "C" int vx_cuda_available(void) { return device_count() > 0; }
extern "C" int vx_cuda_device_total(void) { return device_count(); }

extern "C" int vx_cuda_pointer_is_device(const void *p)
{
    if (!p || device_count() == 0) return 0;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

extern "C" vx_status vx_cuda_stream_set(void *stream)
{
    t_stream = (cudaStream_t)stream;
    return VX_OK;
}

extern "C" int vx_cuda_instance_count(void) { return (int)entries().size(); }

extern "C" const vx_cuda_instance *vx_cuda_instance_get(int i)
{
    const auto &v = instance_infos();
    return i >= 0 && i < (int)v.size() ? &v[i] : nullptr;
}

extern "C" void vx_cuda_set_policy(const vx_cuda_policy *p)
{
    std::lock_guard<std::mutex> lock(g_policy_mu);
    g_policy = p ? *p : vx_cuda_policy{-1, 0, VX_UNIT_AUTO, 0};
    g_policy_gen++;
}

extern "C" int vx_cuda_describe(char *buf, size_t len)
{
    if (device_count() == 0) {
        if (len) snprintf(buf, len, "none (no CUDA device visible)");
        return 0;
    }
    vx_status err;
    DeviceState *d = device_state(&err);
    if (!d) {
        if (len) snprintf(buf, len, "error: %s", vx_last_error());
        return 0;
    }
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    int runnable = 0;
    for (int r : d->resident) runnable += r > 0;
    snprintf(buf, len,
             "%s, %d SMs, compute capability %d.%d, %.1f GiB, L2 %d KiB, driver %d, runtime %d; "
             "%zu kernel instances (%d runnable here); wave times: %s",
             d->prop.name, d->prop.multiProcessorCount, d->prop.major, d->prop.minor,
             d->prop.totalGlobalMem / 1073741824.0, d->prop.l2CacheSize / 1024, d->driver, rt, entries().size(),
             runnable, d->tune_source.c_str());
    return 1;
}

extern "C" const char *vx_cuda_tune_source(void)
{
    if (device_count() == 0) return "none (no CUDA device visible)";
    vx_status err;
    DeviceState *d = device_state(&err);
    return d ? d->tune_source.c_str() : "none (device error)";
}

extern "C" int vx_cuda_explain(const vx_cuda_gemm_args *g, vx_cuda_choice *out, int max_out)
{
    if (device_count() == 0 || max_out <= 0) return 0;
    vx_status err;
    DeviceState *d = device_state(&err);
    if (!d) return 0;
    vx_cuda_unit unit;
    int orient;
    {
        std::lock_guard<std::mutex> lock(g_policy_mu);
        unit = g_policy.unit;
        orient = g_policy.orient;
    }
    return rank_oriented(*d, g, unit, orient, out, max_out);
}

extern "C" vx_status vx_cuda_gemm(const vx_cuda_gemm_args *g, char *desc, size_t desc_len)
{
    if (device_count() == 0)
        return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm_ex: no CUDA device is visible");
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX)
        return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm_ex: GPU sizes above 2^31-1 are not supported (m = %lld, "
                       "n = %lld, k = %lld)", (long long)g->m, (long long)g->n, (long long)g->k);
    vx_status err;
    DeviceState *d = device_state(&err);
    if (!d) return err;
    cudaStream_t s = t_stream;
    const int k = (int)g->k;

    if (k == 0 || g->alpha == 0.0f) {
        const long long total = g->m * g->n;
        scale_c_kernel<<<elementwise_blocks(total), 256, 0, s>>>((int)g->m, (int)g->n, g->c, g->ldc, g->c_type,
                                                                  g->beta);
        cudaError_t ce = cudaGetLastError();
        if (ce != cudaSuccess)
            return vx_fail(VX_ERR_DEVICE, "dyn_gemm_ex: launching the C scaling failed: %s", cudaGetErrorString(ce));
        if (desc && desc_len) snprintf(desc, desc_len, "scale");
        return VX_OK;
    }

    vx_cuda_policy pol;
    int gen;
    {
        std::lock_guard<std::mutex> lock(g_policy_mu);
        pol = g_policy;
        gen = g_policy_gen;
    }
    const auto &all = entries();
    vx_cuda_choice choice{-1, 1, 0.0, 0};
    if (pol.instance >= 0) {
        if (pol.instance >= (int)all.size())
            return vx_fail(VX_ERR_INVALID_ARG, "dyn_gemm_ex: forced instance %d does not exist (%zu compiled)",
                           pol.instance, all.size());
        choice.transposed = pol.orient == 2;
        const vx_cuda_gemm_args as_run = choice.transposed ? transposed_args(g) : *g;
        std::vector<unsigned char> ok = eligible(*d, &as_run, VX_UNIT_AUTO);
        if (!ok[pol.instance])
            return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm_ex: forced instance %s does not fit this call's types "
                           "and layouts (or this device)", all[pol.instance]->name);
        choice.instance = pol.instance;
        choice.splits = pol.splits >= 1 ? pol.splits : 1;
    } else {
        const int bits = (int)g->ab_type | (int)g->c_type << 2 | (int)g->math << 4 | g->a_kcontig << 5 |
                         g->b_kcontig << 6 | (g->beta != 0.0f) << 7;
        const PlanKey key{g->m, g->n, g->k, d->id, bits, gen};
        bool hit = false;
        {
            std::lock_guard<std::mutex> lock(g_cache_mu);
            auto it = g_cache.find(key);
            if (it != g_cache.end()) {
                choice = it->second;
                hit = true;
            }
        }
        if (!hit) {
            if (rank_oriented(*d, g, pol.unit, pol.orient, &choice, 1) < 1)
                return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm_ex: no compiled kernel runs this combination on %s",
                               d->prop.name);
            std::lock_guard<std::mutex> lock(g_cache_mu);
            if (g_cache.size() >= PLAN_CACHE_MAX) g_cache.clear();
            g_cache[key] = choice;
        }
        if (pol.splits >= 1) choice.splits = pol.splits;
    }
    /* a forced split is lowered to what a cluster holds */
    if (all[choice.instance]->cluster) choice.splits = std::min(choice.splits, CLUSTER_MAX_SLICES);
    /* from here on, the problem as the kernel runs it */
    const vx_cuda_gemm_args run = choice.transposed ? transposed_args(g) : *g;
    const int m = (int)run.m, n = (int)run.n;
    const KernelEntry &e = *all[choice.instance];
    int splits = choice.splits;
    long long kps = vx_wave_k_per_split(&d->wave[choice.instance], k, splits);
    while (splits > 1 && kps * (splits - 1) >= k) { /* a forced split may leave slices empty */
        splits--;
        kps = vx_wave_k_per_split(&d->wave[choice.instance], k, splits);
    }

    KParams p;
    p.m = m; p.n = n; p.k = k;
    p.a = run.a; p.lda = run.lda; p.b = run.b; p.ldb = run.ldb; p.c = g->c; p.ldc = g->ldc;
    p.c_trans = choice.transposed;
    p.alpha = g->alpha; p.beta = g->beta; p.c_type = (int)g->c_type;
    p.ws = nullptr;
    p.counters = nullptr;
    p.cluster = 0; /* launch_cluster sets it */
    p.k_per_split = (int)kps;
    const int elem = g->ab_type == VX_F32 ? 4 : 2;
    p.a_vec = aligned16(run.a, run.lda, elem);
    p.b_vec = aligned16(run.b, run.ldb, elem);

    cudaError_t ce;
    if (splits > 1 && !e.cluster) {
        const size_t tiles = (size_t)((m + e.bm - 1) / e.bm) * ((n + e.bn - 1) / e.bn);
        /* a second-launch reduction reads [split][m][n]; an in-kernel one
         * [split][tile][bm x bn] and a counter per tile */
        const size_t bytes = (size_t)splits * (e.fixup ? tiles * e.bm * e.bn : (size_t)m * n) * sizeof(float);
        if ((ce = workspace(d->id, s, bytes, e.fixup ? tiles : 0, &p.ws, &p.counters)) != cudaSuccess) {
            cudaGetLastError();
            return vx_fail(VX_ERR_NO_MEMORY, "dyn_gemm_ex: the split-K workspace (%zu bytes) could not be "
                           "allocated: %s", bytes, cudaGetErrorString(ce));
        }
    }
    ce = launch_instance(e, p, splits, s);
    if (ce == cudaSuccess && splits > 1 && !e.fixup) {
        const long long total = (long long)m * n;
        splitk_reduce<<<elementwise_blocks(total), 256, 0, s>>>(p.ws, splits, m, n, g->c, g->ldc, p.c_trans,
                                                                g->c_type, g->alpha, g->beta);
        ce = cudaGetLastError();
    }
    if (ce != cudaSuccess)
        return vx_fail(VX_ERR_DEVICE, "dyn_gemm_ex: launching %s failed: %s", e.name, cudaGetErrorString(ce));
    if (desc && desc_len)
        snprintf(desc, desc_len, "%s%s,splitk=%d", choice.transposed ? "T:" : "", e.name, splits);
    return VX_OK;
}
