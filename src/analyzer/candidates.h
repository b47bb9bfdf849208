/* Bottom-up, sample-free candidate generation (paper 002, Algorithm 2):
 * L0 tiles allowed by the register file and measured fast enough, L1 blocks
 * that are integer multiples of an L0 tile and fit the level's capacities
 * with utilisation in bounds, L2 grids over the units. No shape is used. */
#ifndef VX_ANALYZER_CANDIDATES_H
#define VX_ANALYZER_CANDIDATES_H

#include <stdio.h>

#include "analyzer/levels.h"

/* Build the candidates for a device; returns 0, or -1 when out of memory
 * (*c is then empty). */
int vx_candidates_build(const vx_device_desc *d, vx_candidates *c);
/* Rate of L0 tile m of family F in flops per ns at a long k, A and B packed
 * (the steady state the measurement pruning compares). */
double vx_l0_steady_rate(const vx_l0_family *F, int m);
/* ... from an m x n tile's call cost o + p k (ns) at that k. */
double vx_steady_flops_per_ns(double o, double p, int m, int n);
void vx_candidates_free(vx_candidates *c);

/* Print the counts per level and the L0 tiles kept (vortex-info --candidates). */
void vx_candidates_report(const vx_device_desc *d, const vx_candidates *c, FILE *f);

#endif
