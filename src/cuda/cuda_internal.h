/* Shared by the CUDA backend's host files (C++ only). */
#pragma once

#include <string>
#include <vector>

#include "cuda/gemm_kernel.cuh"
extern "C" {
#include "analyzer/wave.h"
#include "cuda/cuda_backend.h"
}

namespace vx {

/* What one device is, as the model and the tuning file see it. */
struct DeviceState {
    int id = -1;
    cudaDeviceProp prop{};
    int driver = 0;
    std::vector<int> resident;             /* per instance: blocks per SM (0: cannot run) */
    std::vector<vx_wave_cand> wave;        /* per instance: the model's candidate */
    vx_wave_device model{};
    std::string tune_source;
    bool wgmma_off = false;                /* the model never picks the Hopper family (VORTEX_CUDA_WGMMA=0) */
};

/* Every compiled instance, in a fixed order (the generated groups in turn). */
const std::vector<const KernelEntry *> &entries();

/* The state of the current device, initialised on first use; NULL and a
 * vx_last_error() message when it cannot be. */
DeviceState *device_state(vx_status *err);

/* Wave times from the built-in estimate (device properties only). */
void default_wave(const DeviceState &d, const KernelEntry &e, vx_wave_cand &c);

/* Overrides d.wave from the tuning file when it holds this GPU's
 * measurements; says where they came from in d.tune_source. */
void load_tuned_waves(DeviceState &d);

/* Launches instance e for p on stream s over tiles x splits blocks. */
cudaError_t launch_instance(const KernelEntry &e, const KParams &p, int splits, cudaStream_t s);

/* A short fingerprint of the device for the tuning file. */
std::string fingerprint(const DeviceState &d);

} // namespace vx
