/* GPU install-time measurement and its place in the tuning file.
 *
 * For every instance: one full wave (resident blocks per SM x SMs, so every SM
 * is busy exactly once) at a few K, timed with events (median of several),
 * fitted to o + p*K. Stored under "cuda" in the tuning file, one entry per
 * GPU fingerprint (name, SMs, compute capability, driver, instance count);
 * the CPU's part of the file is left as it is. */
#include <cuda_runtime.h>
#include <jansson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "cuda/cuda_internal.h"
extern "C" {
#include "analyzer/tune.h"
#include "runtime.h"
#include "status.h"
}

namespace vx {

static bool tune_path(std::string &out)
{
    char buf[1024];
    if (!vx_tune_default_path(buf, sizeof buf)) return false;
    out = buf;
    return true;
}

void load_tuned_waves(DeviceState &d)
{
    std::string path;
    if (!tune_path(path)) return;
    json_error_t jerr;
    json_t *root = json_load_file(path.c_str(), 0, &jerr);
    if (!root) return; /* the CPU side already says why, once, when verbose */
    json_t *gpus = json_object_get(root, "cuda");
    const std::string fp = fingerprint(d);
    bool found = false;
    size_t gi;
    json_t *gpu;
    json_array_foreach(gpus, gi, gpu) {
        const char *f = json_string_value(json_object_get(gpu, "fingerprint"));
        if (!f || fp != f) continue;
        json_t *inst = json_object_get(gpu, "instances");
        const auto &all = entries();
        int used = 0;
        for (size_t i = 0; i < all.size(); i++) {
            json_t *v = json_object_get(inst, all[i]->name);
            if (!json_is_array(v) || json_array_size(v) != 2) continue;
            const double o = json_number_value(json_array_get(v, 0)), p = json_number_value(json_array_get(v, 1));
            if (!std::isfinite(o) || !std::isfinite(p) || o < 0 || p <= 0 || o > 1e9 || p > 1e6) continue;
            d.wave[i].o_ns = (float)o;
            d.wave[i].p_ns = (float)p;
            used++;
        }
        json_t *l = json_object_get(gpu, "launch_ns");
        if (json_is_number(l) && json_number_value(l) > 0 && json_number_value(l) < 1e6)
            d.model.launch_ns = json_number_value(l);
        d.tune_source = "tuning file " + path + " (" + std::to_string(used) + " instances measured)";
        found = true;
        break;
    }
    if (!found && json_is_array(gpus))
        vx_warn("vortex: the tuning file %s has no measurements for this GPU (%s): using the built-in wave "
                "estimates; run vortex-install-tune", path.c_str(), fp.c_str());
    json_decref(root);
}

/* Uniform values in [-1, 1) from a hash of the index: never zeros. */
template <class T> __global__ void fill_random(T *p, long long n, unsigned seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; x *= 3266489917u; x ^= x >> 16;
        p[i] = (T)((float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

} // namespace vx

using namespace vx;

#define CK(call)                                                                                                   \
    do {                                                                                                           \
        cudaError_t ce_ = (call);                                                                                  \
        if (ce_ != cudaSuccess) {                                                                                  \
            snprintf(why, why_len, "%s failed: %s", #call, cudaGetErrorString(ce_));                               \
            status = VX_ERR_DEVICE;                                                                                \
            goto done;                                                                                             \
        }                                                                                                          \
    } while (0)

extern "C" vx_status vx_cuda_tune(const char *path, int quick, void (*progress)(int, int), char *why, size_t why_len)
{
    if (!vx_cuda_available()) {
        snprintf(why, why_len, "no CUDA device visible");
        return VX_ERR_UNSUPPORTED;
    }
    vx_status status = VX_OK;
    vx_status err;
    DeviceState *d = device_state(&err);
    if (!d) {
        snprintf(why, why_len, "%s", vx_last_error());
        return err;
    }
    const auto &all = entries();
    const int sms = d->prop.multiProcessorCount;
    const std::vector<int> ks = quick ? std::vector<int>{256, 1024} : std::vector<int>{256, 1024, 2048};
    const int reps = quick ? 3 : 5;
    int max_res = 1;
    for (int r : d->resident) max_res = std::max(max_res, r);
    /* Largest one-wave problem: M = bm * resident, N = bn * SMs. */
    const long long max_m = 128LL * max_res, max_n = 256LL * sms, max_k = ks.back();
    void *a = nullptr, *b = nullptr, *c = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    json_t *inst = json_object();
    double launch_ns = 0;
    int filled = -1;
    CK(cudaMalloc(&a, max_m * max_k * 4));
    CK(cudaMalloc(&b, max_n * max_k * 4));
    CK(cudaMalloc(&c, max_m * max_n * 4));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (size_t i = 0; i < all.size(); i++) {
        const KernelEntry &e = *all[i];
        if (progress) progress((int)i, (int)all.size());
        const int res = d->resident[i];
        if (res <= 0) continue;
        if (e.dtype != filled) { /* operands of the instance's type, random, never zero */
            const long long na = max_m * max_k, nb = max_n * max_k;
            if (e.dtype == VX_F32) {
                fill_random<float><<<1024, 256>>>((float *)a, na, 1u);
                fill_random<float><<<1024, 256>>>((float *)b, nb, 2u);
            } else if (e.dtype == VX_F16) {
                fill_random<__half><<<1024, 256>>>((__half *)a, na, 1u);
                fill_random<__half><<<1024, 256>>>((__half *)b, nb, 2u);
            } else {
                fill_random<__nv_bfloat16><<<1024, 256>>>((__nv_bfloat16 *)a, na, 1u);
                fill_random<__nv_bfloat16><<<1024, 256>>>((__nv_bfloat16 *)b, nb, 2u);
            }
            CK(cudaGetLastError());
            filled = e.dtype;
        }
        /* 16-bit kernels read the same bytes as halves: values stay finite. */
        KParams p{};
        p.m = e.bm * res; p.n = e.bn * sms;
        p.a = a; p.b = b; p.c = c; p.ldc = p.n;
        p.alpha = 1.0f; p.beta = 0.0f; p.c_type = 0; p.ws = nullptr;
        p.a_vec = p.b_vec = 1;
        std::vector<double> xs, ys;
        for (int k : ks) {
            p.k = k; p.k_per_split = k;
            p.lda = e.a_kcontig ? k : p.m;
            p.ldb = e.b_kcontig ? k : p.n;
            std::vector<double> t;
            for (int r = -1; r < reps; r++) {
                CK(cudaEventRecord(e0));
                CK(launch_instance(e, p, 1, nullptr));
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (r >= 0) t.push_back(ms * 1e6);
            }
            xs.push_back(k);
            ys.push_back(vx_tune_median(t.data(), (int)t.size()));
        }
        double icpt, slope;
        vx_tune_fit_line(xs.data(), ys.data(), (int)xs.size(), &icpt, &slope);
        json_object_set_new(inst, e.name, json_pack("[f, f]", icpt, slope));
        d->wave[i].o_ns = (float)icpt;
        d->wave[i].p_ns = (float)slope;
    }
    {
        /* the cost of one more launch on a busy stream: back-to-back tiny kernels */
        KParams p{};
        const KernelEntry &e = *all[0];
        p.m = 1; p.n = 1; p.k = 16; p.k_per_split = 16; p.a = a; p.b = b; p.c = c; p.lda = 16; p.ldb = 16; p.ldc = 1;
        p.alpha = 1; p.c_type = 0; p.a_vec = p.b_vec = 1;
        const int n = 200;
        CK(cudaEventRecord(e0));
        for (int r = 0; r < n; r++) CK(launch_instance(e, p, 1, nullptr));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        launch_ns = ms * 1e6 / n;
        d->model.launch_ns = launch_ns;
    }
    if (progress) progress((int)all.size(), (int)all.size());
    {
        /* merge into the file: replace this GPU's entry, keep everything else */
        json_t *root = json_load_file(path, 0, nullptr);
        if (!root || !json_is_object(root)) {
            json_decref(root);
            root = json_object();
        }
        json_t *gpus = json_object_get(root, "cuda");
        if (!json_is_array(gpus)) {
            gpus = json_array();
            json_object_set_new(root, "cuda", gpus);
        }
        const std::string fp = fingerprint(*d);
        for (size_t j = json_array_size(gpus); j-- > 0;) {
            const char *f = json_string_value(json_object_get(json_array_get(gpus, j), "fingerprint"));
            if (f && fp == f) json_array_remove(gpus, j);
        }
        json_t *entry = json_pack("{s:s, s:s, s:i, s:i, s:i, s:f, s:O}", "fingerprint", fp.c_str(), "name",
                                  d->prop.name, "sms", sms, "cc", d->prop.major * 10 + d->prop.minor, "driver",
                                  d->driver, "launch_ns", launch_ns, "instances", inst);
        json_array_append_new(gpus, entry);
        std::string tmp = std::string(path) + ".tmp." + std::to_string((int)getpid());
        int bad = json_dump_file(root, tmp.c_str(), JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0;
        if (!bad && rename(tmp.c_str(), path) != 0) bad = 1;
        if (bad) {
            snprintf(why, why_len, "cannot write %s: %s", path, strerror(errno));
            unlink(tmp.c_str());
            status = VX_ERR_INVALID_ARG;
        } else {
            d->tune_source = std::string("tuning file ") + path + " (measured now)";
        }
        json_decref(root);
    }
done:
    json_decref(inst);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return status;
}
