/* Run-time ISA choice: AVX-512 where the CPU and OS support it, else AVX2.
 * VORTEX_ISA=avx2 (or avx512) forces a path; a forced ISA the CPU lacks
 * falls back to the best available one (with a warning under VORTEX_VERBOSE). */
#ifndef VX_CPU_ISA_H
#define VX_CPU_ISA_H

#include "cpu/ukernel.h"

#include <stdatomic.h>

/* The ISA this process uses (decided once, thread-safe). Returns -1 when the
 * CPU has neither AVX2+FMA nor AVX-512: dyn_gemm then says VX_ERR_UNSUPPORTED.
 * Every call asks: after the first, one load, inlined. */
extern atomic_int vx_isa_chosen; /* isa.c: set (release) once vx_isa_value holds the choice */
extern int vx_isa_value;
int vx_isa_choose(void);
static inline int vx_active_isa(void)
{
    return atomic_load_explicit(&vx_isa_chosen, memory_order_acquire) ? vx_isa_value : vx_isa_choose();
}

#endif
