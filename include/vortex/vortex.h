/* Vortex: dynamic-shape GEMM and 2-D convolution for CPUs and GPUs.
 *
 * The only header a user includes. All functions are thread-safe.
 * Argument semantics follow cblas_sgemm; see README.md for the rules
 * (beta == 0 never reads C, bad arguments write nothing, ...). */
#ifndef VORTEX_VORTEX_H
#define VORTEX_VORTEX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define VX_API
#else
#define VX_API __attribute__((visibility("default")))
#endif

#define VORTEX_VERSION_MAJOR 0
#define VORTEX_VERSION_MINOR 1
#define VORTEX_VERSION_PATCH 0

typedef enum { VX_ROW_MAJOR = 101, VX_COL_MAJOR = 102 } vx_layout;      /* CBLAS values */
typedef enum { VX_NO_TRANS = 111, VX_TRANS = 112 } vx_transpose;        /* CBLAS values */
typedef enum {
    VX_OK = 0,
    VX_ERR_INVALID_ARG,   /* a size, leading dimension, pointer or enum is wrong */
    VX_ERR_UNSUPPORTED,   /* valid request this build or machine cannot run */
    VX_ERR_NO_MEMORY,     /* a workspace allocation failed; C is unchanged */
    VX_ERR_DEVICE,        /* a GPU runtime call failed */
    VX_ERR_INTERNAL       /* a bug in Vortex: please report it */
} vx_status;

/* C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
 * op(A) is m x k, op(B) is k x n, C is m x n, all fp32 in host memory.
 * beta == 0: C is not read (NaN/Inf in C do not propagate).
 * m == 0 or n == 0: returns VX_OK at once. k == 0: C = beta * C.
 * On any error nothing is written and vx_last_error() says why. */
VX_API vx_status dyn_gemm(vx_layout layout, vx_transpose transa, vx_transpose transb,
                   int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc);

/* A short constant name for a status ("VX_ERR_INVALID_ARG", ...). */
VX_API const char *vx_status_string(vx_status s);

/* The message of the last failed call on this thread ("" if none). */
VX_API const char *vx_last_error(void);

/* Threads used by one call. Default: VORTEX_NUM_THREADS if set, else the
 * number of physical cores. n <= 0 restores that default. */
VX_API int  vx_get_num_threads(void);
VX_API void vx_set_num_threads(int n);

/* ---- 2-D convolution ------------------------------------------------------ */

typedef enum { VX_NCHW = 0, VX_NHWC = 1 } vx_tensor_layout;   /* filter: KCRS for NCHW, KRSC for NHWC */
typedef enum { VX_ACT_NONE = 0, VX_ACT_RELU = 1 } vx_activation;
typedef struct {
    vx_tensor_layout layout;
    int64_t n, c, h, w;            /* input batch, channels, height, width */
    int64_t k, r, s;               /* output channels, filter height, filter width */
    int64_t stride_h, stride_w;    /* >= 1 */
    int64_t pad_h, pad_w;          /* symmetric zero padding, >= 0 */
    int64_t dilation_h, dilation_w;/* >= 1 */
    int64_t groups;                /* >= 1, divides c and k; filter holds c/groups input channels */
    vx_activation activation;      /* applied after the bias */
} vx_conv2d_params;

/* output = act(conv(input, filter) + bias), cross-correlation as in every DL
 * framework. output is n x k x p x q (NCHW) or n x p x q x k (NHWC) with
 * p = (h + 2*pad_h - dilation_h*(r-1) - 1)/stride_h + 1, q likewise.
 * Input group g uses channels [g*c/groups, (g+1)*c/groups) and produces
 * output channels [g*k/groups, (g+1)*k/groups). bias is NULL or k values.
 * The output is written, never read. On any error nothing is written and
 * vx_last_error() says why. */
VX_API vx_status dyn_conv2d(const vx_conv2d_params *p, const float *input, const float *filter,
                            const float *bias /* NULL or k values */, float *output);

/* The output height and width for p (checks p as dyn_conv2d does). */
VX_API vx_status vx_conv2d_output_dims(const vx_conv2d_params *p, int64_t *out_h, int64_t *out_w);

/* A filter packed once for every later call that uses it, as a model's
 * weights are: dyn_conv2d packs its filter into the kernels' panels on
 * every call, dyn_conv2d_packed reads the panels packed here. Only the
 * filter's fields of p count (layout, k, c, r, s, groups, checked as
 * dyn_conv2d checks them); the batch, map size, stride, padding, dilation
 * and activation may differ from call to call. The filter is copied: the
 * caller may free or change its array afterwards. Panels of each kind and
 * width the plans ask for are packed on the first call that needs them
 * (once, thread-safe); the object holds the copy and at most 8 such sets
 * (each about the filter's size). A call whose plan needs a set the object
 * cannot take (all 8 taken, or no memory for it) packs from the copy as
 * dyn_conv2d does. Calls may share one object from many threads; destroy
 * it only when none is running. */
typedef struct vx_conv2d_filter vx_conv2d_filter;
VX_API vx_status vx_conv2d_filter_create(const vx_conv2d_params *p, const float *filter,
                                         vx_conv2d_filter **out);
VX_API void vx_conv2d_filter_destroy(vx_conv2d_filter *f);   /* NULL: nothing */

/* dyn_conv2d with a packed filter: the same result, bit for bit where the
 * same plan runs. p's filter fields must equal those f was created with
 * (else VX_ERR_INVALID_ARG, nothing written). */
VX_API vx_status dyn_conv2d_packed(const vx_conv2d_params *p, const float *input, const vx_conv2d_filter *f,
                                   const float *bias /* NULL or k values */, float *output);


/* ---- mixed precision and NVIDIA GPUs -------------------------------------- */

typedef enum { VX_F32 = 0, VX_F16 = 1, VX_BF16 = 2 } vx_dtype;
typedef enum { VX_MATH_DEFAULT = 0, VX_MATH_TF32 = 1 } vx_math_mode;  /* TF32 allowed for fp32 inputs on GPU */

/* The cudaStream_t that this host thread's GPU calls are queued on; NULL is
 * the default stream. VX_ERR_UNSUPPORTED in a build without CUDA. */
VX_API vx_status vx_cuda_set_stream(void *stream);

/* dyn_gemm with element types. When a, b and c are all device memory the call
 * runs on the GPU, asynchronously on the thread's stream (like cuBLAS);
 * when all are host memory it runs on the CPU; a mix is VX_ERR_INVALID_ARG.
 * Only the operands the call reads count: with k == 0 or alpha == 0, A and B
 * are not read (and may be NULL), so C alone decides. dyn_gemm routes the
 * same way. Pinned host memory (cudaMallocHost) runs on the CPU, managed
 * memory on the GPU. Sizes above 2^31-1 are VX_ERR_UNSUPPORTED on the GPU.
 * Checks run in this order: enums, sizes, leading dimensions (m == 0 or
 * n == 0 returns VX_OK here), where the operands live, the type combination.
 * Accumulation is fp32 always. Supported: a and b of one type; c F32, or c of
 * a's type. On the CPU only F32 (math mode ignored: the result is exact fp32).
 * VX_MATH_TF32 lets fp32 inputs use TF32 Tensor Cores on the GPU. Other
 * combinations return VX_ERR_UNSUPPORTED. Leading dimensions count elements. */
VX_API vx_status dyn_gemm_ex(vx_layout layout, vx_transpose transa, vx_transpose transb,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const void *a, vx_dtype a_type, int64_t lda,
                             const void *b, vx_dtype b_type, int64_t ldb, float beta,
                             void *c, vx_dtype c_type, int64_t ldc, vx_math_mode math);

/* GPUs this process can use: 0 in a build without CUDA or with no device. */
VX_API int vx_cuda_device_count(void);

#ifdef __cplusplus
}
#endif
#endif /* VORTEX_VORTEX_H */
