/* Test helpers for dyn_conv2d: a float64 direct-convolution reference and
 * one fully checked call on fresh random operands.
 *
 * Public API only (vortex/vortex.h), so the executable linked against the
 * shared library can use it. */
#ifndef VT_REF_CONV_H
#define VT_REF_CONV_H

#include <stddef.h>
#include <stdint.h>
#include <vortex/vortex.h>

#include "ref.h"

/* One convolution call: the parameters, whether a bias is passed, the seed
 * of the operand data and a tag naming the test / case for messages. */
typedef struct {
    vx_conv2d_params p;
    int bias;            /* 0: bias = NULL, 1: k random values */
    int packed;          /* 1: the filter packed first (vx_conv2d_filter_create, the
                            caller's array then overwritten with NaN), the call
                            dyn_conv2d_packed, made twice (the second on
                            panels packed already), both checked */
    uint64_t seed;
    const char *tag;
} vt_conv_case;

/* A case with defaults: stride 1, pad 0, dilation 1, groups 1, no bias,
 * no activation; seed derived from the sizes. */
vt_conv_case vt_conv_make(vx_tensor_layout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t k, int64_t r, int64_t s);

/* The output size from the formula, computed here independently of the
 * library: p = floor((h + 2*pad_h - dil_h*(r-1) - 1) / stride_h) + 1, with
 * floor (a numerator < 0 means the dilated filter is larger than the padded
 * input: no output). Returns 1 and sets *out_h, *out_w when p >= 1 and
 * q >= 1 and every other parameter is valid (small, non-overflowing test
 * values assumed), else 0. */
int vt_conv_dims(const vx_conv2d_params *p, int64_t *out_h, int64_t *out_w);

/* Element counts of input, filter and output (p must be valid). */
int64_t vt_conv_input_count(const vx_conv2d_params *p);
int64_t vt_conv_filter_count(const vx_conv2d_params *p);
int64_t vt_conv_output_count(const vx_conv2d_params *p);

/* "dyn_conv2d(NHWC n=.. c=.. h=.. w=.. k=.. r=.. s=.. stride=.. pad=.. dilation=..
 *  groups=.. bias=.. relu=..) seed=.. | tag" */
void vt_conv_describe(const vt_conv_case *c, char *buf, size_t len);

/* float64 reference, seven nested loops: out (same layout as the output,
 * n*k*p*q doubles) = act(cross-correlation(input, filter) + bias). */
void vt_ref_conv2d(const vx_conv2d_params *p, const float *input, const float *filter,
                   const float *bias, double *out);

typedef struct {
    int ok;
    vx_status status;
    double rel_err;
    char msg[1024];
} vt_conv_result;

/* Runs one dyn_conv2d on freshly allocated random operands (input, filter
 * and bias with their exact extents, so AddressSanitizer sees over-reads)
 * and checks: status VX_OK; vx_conv2d_output_dims agrees with the formula;
 * input, filter and bias bytewise unchanged; the guard zones before and
 * after the output bytewise unchanged; the output, pre-filled with
 * NaN/+Inf/-Inf, entirely overwritten with finite values; and the relative
 * Frobenius error against the float64 reference <= VT_TOL (exact zeros when
 * the reference is all zero). Safe to call from any thread. With packed,
 * also that the filter object made from the filter does not read the
 * caller's array later, and a second call (its panels packed already) is
 * checked against the reference too. */
int vt_conv_run(const vt_conv_case *c, vt_conv_result *r);

/* vt_conv_run + cr_assert naming the case (test thread only). */
void vt_conv_check(const vt_conv_case *c);

#endif
