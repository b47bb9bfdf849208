/* The CPU backend's description of its levels for the analyzer: L0 families
 * from the generated kernel table with the rates vortex-install-tune
 * measured, L1 capacities and bandwidths from the hardware query and the
 * tuning, L2 units = physical cores. Built once per ISA. */
#ifndef VX_CPU_CPU_LEVELS_H
#define VX_CPU_CPU_LEVELS_H

#include "analyzer/levels.h"
#include "cpu/ukernel.h"

/* The L0 tiles the candidates keep are within this fraction of their
 * family's best steady rate in L1 (levels.h, keep_rate_frac); the tune's
 * context probe measures those. */
#define VX_CPU_KEEP_RATE_FRAC 0.85

typedef struct {
    vx_device_desc desc;
    vx_candidates cand;
    int fetch_next; /* the driver's next-panel fetches pay here (tune.h, fetch_next_ratio;
                       not measured: they run) */
    int pack_near_on_read; /* direct plans pack B's panels on their first read where B's rows
                              lie closer than a page (tune.h, pack_on_read_ratio; not
                              measured: they do) */
} vx_cpu_model;

/* The model for an ISA (thread-safe; built on first use from vx_hw() and
 * vx_tune_active()). NULL only when memory runs out. */
const vx_cpu_model *vx_cpu_model_get(vx_isa isa);

/* Tests and tools: forget the built models so the next use rebuilds them
 * (after vx_tune_reset). Not thread-safe against concurrent calls. */
void vx_cpu_model_reset(void);

#endif
