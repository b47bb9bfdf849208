/* Shared test helpers: a float64 reference GEMM, a seeded PRNG, the
 * relative Frobenius error, and sentinel fill/compare for the padding of C.
 *
 * Only the public header is needed here, so every test executable (including
 * the one linked against the shared library) can use it. */
#ifndef VT_REF_H
#define VT_REF_H

#include <stddef.h>
#include <stdint.h>
#include <vortex/vortex.h>

/* The accuracy rule: ||C - Cref||_F / ||Cref||_F <= VT_TOL. */
#ifndef VT_TOL
#define VT_TOL 1e-5
#endif

/* ---- PRNG (splitmix64), deterministic per seed ---- */
typedef struct { uint64_t s; } vt_rng;
void vt_rng_seed(vt_rng *r, uint64_t seed);
uint64_t vt_rng_next(vt_rng *r);
/* Uniform in [-1, 1), never exactly 0. */
float vt_rng_float(vt_rng *r);

/* ---- storage of a logical rows x cols matrix in a layout with ld ---- */
int64_t vt_min_ld(vx_layout layout, int64_t rows, int64_t cols);   /* max(1, inner) */
int64_t vt_extent(vx_layout layout, int64_t rows, int64_t cols, int64_t ld); /* floats touched */
int64_t vt_index(vx_layout layout, int64_t i, int64_t j, int64_t ld);

/* Stored (not op()) dimensions of A and B for a call. */
void vt_a_dims(vx_transpose ta, int64_t m, int64_t k, int64_t *rows, int64_t *cols);
void vt_b_dims(vx_transpose tb, int64_t k, int64_t n, int64_t *rows, int64_t *cols);
/* The smallest valid leading dimensions of a call's A, B and C. */
void vt_min_lds(vx_layout l, vx_transpose ta, vx_transpose tb, int64_t m, int64_t n, int64_t k,
                int64_t *lda, int64_t *ldb, int64_t *ldc);

/* ---- sentinels ---- */
/* A quiet NaN whose payload depends on the position (so a shifted copy or a
 * store of a computed NaN is still detected by a byte compare). */
float vt_sentinel(int64_t pos);
void vt_fill_sentinel(float *p, int64_t count);
/* Index of the first float that differs bytewise from the sentinel, or -1. */
int64_t vt_check_sentinel(const float *p, int64_t count);

/* ---- names ---- */
const char *vt_layout_name(vx_layout l);      /* "row", "col" */
const char *vt_trans_name(vx_transpose t);    /* "N", "T" */

/* All 8 (layout, transa, transb) combinations, by index 0..7. */
void vt_combo(int idx, vx_layout *l, vx_transpose *ta, vx_transpose *tb);

/* ---- one checked GEMM call ---- */
typedef enum {
    VT_C_RANDOM = 0,   /* C starts with random values */
    VT_C_NAN = 1       /* C starts with NaN/+Inf/-Inf (only with beta == 0) */
} vt_cinit;

typedef struct {
    vx_layout layout;
    vx_transpose ta, tb;
    int64_t m, n, k;
    int64_t lda_pad, ldb_pad, ldc_pad;   /* ld = minimal ld + pad (pad >= 0) */
    float alpha, beta;
    vt_cinit cinit;
    uint64_t seed;
    const char *tag;   /* extra context for messages (ISA, forced plan, ...) */
    int c_on_line;     /* C starts on a 64-byte line (else wherever malloc puts it) */
} vt_case;

/* A case with defaults: row-major NN, alpha 1, beta 0, no padding. */
vt_case vt_case_make(int64_t m, int64_t n, int64_t k);

/* "row NT m=.. n=.. k=.. lda=.. ..." */
void vt_describe(const vt_case *c, char *buf, size_t len);

typedef struct {
    int ok;
    vx_status status;
    double rel_err;
    char msg[768];
} vt_result;

/* Runs one call on freshly allocated operands and checks everything:
 * status VX_OK, A and B unchanged, every float of C outside the logical
 * matrix (ld padding and a guard zone after the end) bytewise unchanged,
 * the error bound (or exact zeros when the reference is all zero), no
 * non-finite value in C. A and B are allocated with their exact extent so
 * AddressSanitizer sees over-reads; their ld padding holds NaN so a read
 * that leaks into the result is seen too. Safe to call from any thread. */
int vt_run(const vt_case *c, vt_result *r);

/* vt_run + cr_assert with the case named in the message (test thread only). */
void vt_check(const vt_case *c);

/* float64 reference: cref[i*n+j] = alpha*op(A)op(B) + beta*C0 (C0 unread when
 * beta == 0). Exposed for tests that build their own operands. */
void vt_ref_gemm(vx_layout layout, vx_transpose ta, vx_transpose tb,
                 int64_t m, int64_t n, int64_t k, double alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb,
                 double beta, const float *c0, int64_t ldc, double *cref);

/* Relative Frobenius error of an m x n float matrix (element (i,j) at
 * c[i*c_rs + j*c_cs]) against a dense row-major double reference. Returns 0
 * when equal; when the reference is all zero, returns 0 if C is exactly zero
 * and +Inf otherwise; NaN/Inf in C give +Inf. */
double vt_rel_err(const float *c, int64_t c_rs, int64_t c_cs, const double *ref,
                  int64_t m, int64_t n);

#endif
