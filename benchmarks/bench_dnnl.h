/* oneDNN runtime set-up shared by the CPU runners that use oneDNN primitives
 * (vortex-bench-conv, and vortex-bench-gemm's matmul baseline). Include after
 * <dnnl.h>; everything compiles to nothing without HAVE_DNNL. */
#ifndef VORTEX_BENCH_DNNL_H
#define VORTEX_BENCH_DNNL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* What the runner did about oneDNN's CPU runtime, for the machine header. */
__attribute__((unused)) static char dnnl_runtime_note[1200] = "";

/* A oneDNN whose CPU runtime is SYCL (the PyPI wheels) runs its CPU engine on
 * a SYCL CPU device, i.e. the OpenCL CPU runtime (PyPI intel-opencl-rt). Its
 * ICD file there names a path that does not exist, so unless the
 * environment says otherwise, point the OpenCL loader at libintelocl.so next
 * to libdnnl (BENCH_DNNL_LIBDIR, from the build). Must run before the first
 * oneDNN engine is created. */
__attribute__((unused)) static void dnnl_runtime_setup(void)
{
#if defined(HAVE_DNNL) && defined(DNNL_CPU_RUNTIME) && DNNL_CPU_RUNTIME == DNNL_RUNTIME_SYCL
    const char *cur = getenv("OCL_ICD_FILENAMES");
    if (cur && *cur) {
        snprintf(dnnl_runtime_note, sizeof dnnl_runtime_note,
                 "CPU runtime SYCL (OpenCL CPU device; OCL_ICD_FILENAMES=%s from the "
                 "environment)", cur);
        return;
    }
#ifdef BENCH_DNNL_LIBDIR
    char path[1024];
    snprintf(path, sizeof path, "%s/libintelocl.so", BENCH_DNNL_LIBDIR);
    if (access(path, R_OK) == 0) {
        setenv("OCL_ICD_FILENAMES", path, 1);
        snprintf(dnnl_runtime_note, sizeof dnnl_runtime_note,
                 "CPU runtime SYCL (OpenCL CPU device; OCL_ICD_FILENAMES set to %s)", path);
        return;
    }
#endif
    snprintf(dnnl_runtime_note, sizeof dnnl_runtime_note,
             "CPU runtime SYCL (needs an OpenCL CPU device: set OCL_ICD_FILENAMES to "
             "libintelocl.so if the engine cannot be created)");
#elif defined(HAVE_DNNL)
    snprintf(dnnl_runtime_note, sizeof dnnl_runtime_note, "CPU runtime native");
#endif
}

#endif
