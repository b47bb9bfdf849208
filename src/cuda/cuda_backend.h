/* The CUDA backend as the rest of Vortex sees it (plain C).
 *
 * Built from the .cu files in src/cuda where nvcc is found; otherwise cuda_stub.c gives
 * the same functions, reporting no device and VX_ERR_UNSUPPORTED. api.c
 * checks the arguments and canonicalises the problem before calling in, so
 * nothing here re-checks sizes or leading dimensions. */
#ifndef VX_CUDA_BACKEND_H
#define VX_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "vortex/vortex.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One GEMM with row-major C (m x n, row stride ldc, unit column stride):
 * C = alpha * A B + beta * C, A m x k, B k x n, all in device memory.
 * A(i, p) = a_kcontig ? a[i*lda + p] : a[p*lda + i]
 * B(p, j) = b_kcontig ? b[j*ldb + p] : b[p*ldb + j]
 * m, n >= 1; k >= 0 (k == 0 or alpha == 0 scales C by beta). */
typedef struct {
    int64_t m, n, k;
    float alpha, beta;
    const void *a; int64_t lda; int a_kcontig;
    const void *b; int64_t ldb; int b_kcontig;
    void *c; int64_t ldc;
    vx_dtype ab_type, c_type;
    vx_math_mode math;
} vx_cuda_gemm_args;

/* The canonical problem of a dyn_gemm_ex call (the mapping api.c uses):
 * row-major as given; column-major computes C^T = op(B)^T op(A)^T, row-major
 * with the same ldc. No checks; tools and benchmarks use it to ask
 * vx_cuda_explain about a call exactly as dyn_gemm_ex would see it. */
vx_cuda_gemm_args vx_cuda_canonical(vx_layout layout, vx_transpose transa, vx_transpose transb,
                                    int64_t m, int64_t n, int64_t k, float alpha,
                                    const void *a, vx_dtype a_type, int64_t lda,
                                    const void *b, int64_t ldb, float beta,
                                    void *c, vx_dtype c_type, int64_t ldc, vx_math_mode math);

/* 1 when built with CUDA and at least one device is visible. */
int vx_cuda_available(void);

/* Devices visible (0 without CUDA). */
int vx_cuda_device_total(void);

/* Where p lives: 0 host (or unknown to CUDA), 1 device or managed memory.
 * Host memory always in a build without CUDA. */
int vx_cuda_pointer_is_device(const void *p);

/* Runs g on the current device, on this thread's stream. desc (may be NULL)
 * receives the chosen kernel and split for the verbose log. */
vx_status vx_cuda_gemm(const vx_cuda_gemm_args *g, char *desc, size_t desc_len);

/* vx_cuda_set_stream's implementation. */
vx_status vx_cuda_stream_set(void *stream);

/* ---- the compiled kernel instances (the L1 candidates gen/ produced) ---- */

typedef enum { VX_UNIT_AUTO = 0, VX_UNIT_TENSOR = 1, VX_UNIT_SIMT = 2 } vx_cuda_unit;

typedef struct {
    const char *name;      /* "mma_f16_nt_128x128x32_w64x64_s3" */
    int unit;              /* VX_UNIT_TENSOR or VX_UNIT_SIMT */
    vx_dtype ab_type;      /* operand type the kernel reads */
    int tf32;              /* tensor unit with fp32 operands rounded to tf32 */
    int a_kcontig, b_kcontig;
    int bm, bn, bk, wm, wn, stages, threads;
    int smem_bytes;        /* dynamic shared memory per block */
    int cluster;           /* split-K slices reduce as one thread-block cluster (sm_90 only, <= 8 slices) */
    int sm90a;             /* Hopper wgmma family: compiled for sm_90a, runs on compute capability 9.0 only */
} vx_cuda_instance;

/* Number of compiled instances (0 in a build without CUDA). */
int vx_cuda_instance_count(void);
const vx_cuda_instance *vx_cuda_instance_get(int i);

/* Selection override for tests, benchmarks and the tuner (process-wide):
 * instance >= 0 forces that instance (it must match the call's types and
 * layouts, else the call returns VX_ERR_UNSUPPORTED; with splits 0 a forced
 * instance runs unsplit), splits >= 1 forces the split-K factor (lowered
 * until no slice is empty), unit restricts the choice to one kind of core.
 * Default: instance -1, splits 0, unit AUTO. Process-wide and meant for
 * tests, benchmarks and tools, not for concurrent production callers.
 * orient forces the orientation: every call may run as C^T = B^T A^T
 * (the instances then see M and N swapped and store C transposed); a
 * forced instance runs as called unless orient says otherwise. */
typedef struct {
    int instance;
    int splits;
    vx_cuda_unit unit;
    int orient;   /* 0: the model picks; 1: as called; 2: transposed (C^T = B^T A^T) */
} vx_cuda_policy;
void vx_cuda_set_policy(const vx_cuda_policy *p); /* NULL restores the default */

/* A description of the device for vortex-info ("NVIDIA H100 80GB HBM3, 132 SMs,
 * cc 9.0, ..."); returns 0 when there is none. */
int vx_cuda_describe(char *buf, size_t len);

/* The plan the model picks for g (no launch): instance index, splits,
 * predicted microseconds; and up to `alts` next-best (instance, splits,
 * predicted) triples. Returns the number written to best+alts, 0 if none fit. */
typedef struct {
    int instance, splits;
    double predicted_us;
    int transposed;   /* runs C^T = B^T A^T: the instance's tile M covers the call's N */
} vx_cuda_choice;
int vx_cuda_explain(const vx_cuda_gemm_args *g, vx_cuda_choice *out, int max_out);

/* vortex-install-tune: time one full wave of every instance at a few K on
 * device 0 and merge the result into the tuning file at path (atomically).
 * progress(done, total) is called as it goes (may be NULL). */
vx_status vx_cuda_tune(const char *path, int quick, void (*progress)(int done, int total),
                       char *why, size_t why_len);

/* Where the active GPU wave times came from ("tuning file ...", "defaults: ..."). */
const char *vx_cuda_tune_source(void);

#ifdef __cplusplus
}
#endif
#endif
