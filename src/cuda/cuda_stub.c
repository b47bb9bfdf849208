/* The CUDA backend in a build without nvcc: no device, no instances, and
 * every GPU entry point says so. */
#include <stdio.h>

#include "cuda/cuda_backend.h"
#include "status.h"

int vx_cuda_available(void) { return 0; }
int vx_cuda_device_total(void) { return 0; }
int vx_cuda_pointer_is_device(const void *p) { (void)p; return 0; }

vx_status vx_cuda_gemm(const vx_cuda_gemm_args *g, char *desc, size_t desc_len)
{
    (void)g; (void)desc; (void)desc_len;
    return vx_fail(VX_ERR_UNSUPPORTED, "dyn_gemm_ex: this Vortex was built without CUDA "
                   "(meson option cuda: nvcc was not found or cuda=disabled)");
}

vx_status vx_cuda_stream_set(void *stream)
{
    (void)stream;
    return vx_fail(VX_ERR_UNSUPPORTED, "vx_cuda_set_stream: this Vortex was built without CUDA "
                   "(meson option cuda: nvcc was not found or cuda=disabled)");
}

int vx_cuda_instance_count(void) { return 0; }
const vx_cuda_instance *vx_cuda_instance_get(int i) { (void)i; return NULL; }
void vx_cuda_set_policy(const vx_cuda_policy *p) { (void)p; }

int vx_cuda_describe(char *buf, size_t len)
{
    if (len)
        snprintf(buf, len, "none (built without CUDA)");
    return 0;
}

int vx_cuda_explain(const vx_cuda_gemm_args *g, vx_cuda_choice *out, int max_out)
{
    (void)g; (void)out; (void)max_out;
    return 0;
}

vx_status vx_cuda_tune(const char *path, int quick, void (*progress)(int, int), char *why, size_t why_len)
{
    (void)path; (void)quick; (void)progress;
    if (why_len)
        snprintf(why, why_len, "built without CUDA");
    return VX_ERR_UNSUPPORTED;
}

const char *vx_cuda_tune_source(void) { return "none (built without CUDA)"; }
