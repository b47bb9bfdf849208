/* Run-time ISA choice: AVX-512 where the CPU and OS support it, else AVX2.
 * VORTEX_ISA=avx2 (or avx512) forces a path; a forced ISA the CPU lacks
 * falls back to the best available one (with a warning under VORTEX_VERBOSE). */
#ifndef VX_CPU_ISA_H
#define VX_CPU_ISA_H

#include "cpu/ukernel.h"

/* The ISA this process uses (decided once, thread-safe). Returns -1 when the
 * CPU has neither AVX2+FMA nor AVX-512: dyn_gemm then says VX_ERR_UNSUPPORTED. */
int vx_active_isa(void);

#endif
