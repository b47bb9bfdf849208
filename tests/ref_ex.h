/* Helpers for the typed GEMM tests (dyn_gemm_ex): fp16 / bf16 conversion on
 * the host with round-to-nearest-even (plain bit manipulation, no CUDA
 * header), typed operand storage, and one checked dyn_gemm_ex call whose
 * operands live wherever a vtx_mem puts them (host memory here, device
 * memory in test_cuda_gemm.c).
 *
 * The float64 reference is ref.c's vt_ref_gemm, fed with the operands
 * converted back to float: every fp16/bf16 value is exactly a float, so the
 * reference sees exactly the rounded inputs the library sees. */
#ifndef VT_REF_EX_H
#define VT_REF_EX_H

#include <stddef.h>
#include <stdint.h>
#include <vortex/vortex.h>

#include "ref.h"

/* ---- element types ---- */
size_t vtx_size(vx_dtype t);              /* 4 or 2 */
const char *vtx_dtype_name(vx_dtype t);   /* "f32", "f16", "bf16" */
const char *vtx_math_name(vx_math_mode m);/* "default", "tf32" */

/* Round to nearest, ties to even; overflow gives +-Inf; NaN stays a quiet NaN. */
uint16_t vtx_f32_to_f16(float f);
float vtx_f16_to_f32(uint16_t h);
uint16_t vtx_f32_to_bf16(float f);
float vtx_bf16_to_f32(uint16_t h);

/* f rounded to t and back (identity for VX_F32). */
float vtx_round(float f, vx_dtype t);
/* Element idx of a typed buffer, read as / written from float (rounding). */
float vtx_load(const void *buf, vx_dtype t, int64_t idx);
void vtx_store(void *buf, vx_dtype t, int64_t idx, float v);
/* count elements of a typed buffer as floats. */
void vtx_to_f32(const void *buf, vx_dtype t, int64_t count, float *out);

/* ---- where a call's operands live ---- */
typedef struct {
    const char *name;                                          /* "host", "device" */
    int gpu;                                                   /* calls run on the GPU */
    void *(*alloc)(size_t bytes);                              /* never NULL (asserts) */
    void (*release)(void *p);
    void (*upload)(void *dst, const void *src, size_t bytes);  /* host -> memory */
    void (*download)(void *dst, const void *src, size_t bytes);/* memory -> host */
    void (*sync)(void);                                        /* wait for the call */
} vtx_mem;

extern const vtx_mem vtx_host_mem;

/* The description of the call vtx_run is running (NULL outside it), for
 * messages of failures inside a vtx_mem's functions. */
extern const char *vtx_current;

/* ---- one checked dyn_gemm_ex call ---- */
typedef struct {
    vx_layout layout;
    vx_transpose ta, tb;
    int64_t m, n, k;
    int64_t lda_pad, ldb_pad, ldc_pad;   /* ld = minimal ld + pad */
    int64_t a_off, b_off, c_off;         /* operand pointer = allocation + off elements */
    float alpha, beta;
    vx_dtype ab_type, c_type;
    vx_math_mode math;
    int c_nan;          /* C's logical part starts as NaN/Inf (beta must be 0) */
    double tol;         /* error bound, see vtx_run */
    uint64_t seed;
    const char *tag;    /* extra context for messages */
} vtx_case;

/* Row-major NN, alpha 1, beta 0 over random C, F32, default math, tol 1e-5. */
vtx_case vtx_case_make(int64_t m, int64_t n, int64_t k);

/* "dyn_gemm_ex(row-major, A=N, B=T, m=.., ..., f16 x f16 -> f32, tf32) ..." */
void vtx_describe(const vtx_case *c, char *buf, size_t len);

/* The leading dimensions the case uses. */
void vtx_case_lds(const vtx_case *c, int64_t *lda, int64_t *ldb, int64_t *ldc);

typedef struct {
    int ok;
    vx_status status;
    double rel_err;
    char msg[1024];
} vtx_result;

/* Builds A and B with their exact extent (typed NaN in the ld padding), C
 * with a full last row of padding plus a guard zone (position-dependent byte
 * pattern outside the logical part; NaN/Inf or random values inside),
 * rounds every value to its type, puts them into mem, calls dyn_gemm_ex,
 * syncs, reads everything back and checks: status VX_OK, A and B unchanged,
 * C outside the logical part bytewise unchanged, every logical element
 * finite (written, no NaN survived), and ||C - Cref||_F / ||Cref||_F <= tol
 * (exact zeros when Cref is all zero).
 * Reduced precision (TF32 math, F16/BF16 operands or C) rounds the products
 * or the result, an error proportional to the size of alpha op(A) op(B) and
 * beta C0, not to their sum: where the two cancel (seen with 1x1x1 and beta
 * != 0) the error relative to Cref is unbounded. Such calls pass also when
 * ||C - Cref||_F / max(||Cref||_F, ||alpha op(A) op(B)||_F, ||beta C0||_F)
 * <= tol (for independent terms both are below ||Cref||, so this loosens
 * only calls with such cancellation). Plain fp32, and TF32 math on the CPU
 * (exact there), are held to the first bound only. */
int vtx_run(const vtx_mem *mem, const vtx_case *c, vtx_result *r);

/* vtx_run + cr_assert naming the case (test thread only). */
void vtx_check(const vtx_mem *mem, const vtx_case *c);

#endif
