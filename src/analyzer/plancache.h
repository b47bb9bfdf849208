/* The shared plan cache: chosen plans per (shape, strides, ISA, thread
 * budget), in a bounded table every thread reads without locks. */
#ifndef VX_ANALYZER_PLANCACHE_H
#define VX_ANALYZER_PLANCACHE_H

#include <stdint.h>

#include "analyzer/plan.h"

typedef struct {
    int64_t m, n, k;
    int64_t flags; /* strides, ISA and thread budget, packed by the caller */
    int64_t items; /* a convolution's independent GEMM items (conv_plan.c), or a GEMM
                      shape's geometry key (plan.c, gemm_key; 0 for a plain GEMM) */
    int64_t a_ld, b_ld, c_ld; /* a GEMM's leading dimensions where they are not dense, else 0:
                                 the model prices the strides (vx_gemm_shape); a convolution's
                                 keys carry its view's geometry key and its map's hash in a_ld
                                 and b_ld (conv_plan.c, vx_plan_conv). Every field is compared
                                 whole, except that the three ld words, packed exactly while
                                 each is below 2^21, share one hash word beyond (plancache.c) */
} vx_plan_key;

/* Copy the cached plan for key into *out; 1 on a hit, 0 on a miss (after
 * which *out may hold anything: the caller fills it). */
int vx_plan_cache_get(const vx_plan_key *key, vx_gemm_plan *out);

/* Remember plan p for key, replacing whatever shared its slot. */
void vx_plan_cache_put(const vx_plan_key *key, const vx_gemm_plan *p);

/* Forget every plan (after the tuning or the model changed). */
void vx_plan_cache_clear(void);

/* Slots in the table (the bound on what it holds). */
int vx_plan_cache_slots(void);

#endif
