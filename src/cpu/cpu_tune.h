/* The CPU backend's install-time measurements (vortex-install-tune): the L0
 * micro-kernels' rates in cache, the packing rates, each memory level's read
 * bandwidth, and the fixed costs of a call and of a parallel region. */
#ifndef VX_CPU_CPU_TUNE_H
#define VX_CPU_CPU_TUNE_H

#include "analyzer/tune.h"

/* Called between steps: done of total steps, and what is being measured. */
typedef void (*vx_tune_progress)(void *ctx, int done, int total, const char *what);

typedef struct {
    int quick;              /* fewer repetitions (about a quarter of the time) */
    vx_tune_progress progress;
    void *progress_ctx;
} vx_cpu_tune_opts;

/* Measure into *t (which holds defaults for whatever is not measured: an ISA
 * this CPU lacks keeps its built-in rates). Runs on the calling thread pinned
 * to one core, plus one thread per core for the shared DRAM bandwidth.
 * Returns VX_OK, or VX_ERR_NO_MEMORY. */
vx_status vx_cpu_tune_measure(const vx_cpu_tune_opts *o, vx_tune *t);

/* The bytes the L3 probes (read bandwidth, the first strided pass) read:
 * half a core's share of L3 (l3_share bytes), at most eight L2s. */
int64_t vx_cpu_tune_l3_probe_bytes(int64_t l3_share, int64_t l2_bytes);

#endif
