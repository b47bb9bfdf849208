/* Runtime selection: the cost model prices every candidate plan for the
 * call's actual shape (cost.c over the candidates of candidates.c, as the CPU
 * backend describes its levels in cpu/cpu_levels.c) and the cheapest runs.
 * vx_plan_gemm (plan.h) is this plus the shared plan cache. */
#ifndef VX_ANALYZER_SELECT_H
#define VX_ANALYZER_SELECT_H

#include "analyzer/plan.h"

typedef struct {
    vx_gemm_plan plan;
    double predicted_ns;   /* the model's time for the whole call */
} vx_priced_plan;

/* Price every candidate plan for shape s on this ISA with at most
 * max_threads threads. Writes the cheapest min(max, count) to out, cheapest
 * first, and returns count, the number of distinct plans priced. Every plan
 * written is executable by vx_cpu_gemm for this shape. */
int vx_gemm_rank(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_priced_plan *out, int max);

#endif
