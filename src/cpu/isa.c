#include "cpu/isa.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "runtime.h"

int vx_isa_value = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
atomic_int vx_isa_chosen; /* choose has run: vx_active_isa reads vx_isa_value */

/* VORTEX_ISA=want, on a CPU whose best ISA is `best`. */
static void apply_override(const char *want, const vx_hw_info *h, int best)
{
    if (!strcmp(want, "avx2")) {
        if (h->has_avx2_fma)
            vx_isa_value = VX_ISA_AVX2;
        else
            vx_warn("VORTEX_ISA=avx2 but this CPU lacks AVX2+FMA; ignoring it");
    } else if (!strcmp(want, "avx512")) {
        if (h->has_avx512)
            vx_isa_value = VX_ISA_AVX512;
        else
            vx_warn("VORTEX_ISA=avx512 but this CPU lacks AVX-512 F/BW/VL/DQ; using %s",
                    best == VX_ISA_AVX2 ? "avx2" : "nothing");
    } else {
        vx_warn("VORTEX_ISA=%s is not one of avx2, avx512; ignoring it", want);
    }
}

static void choose(void)
{
    const vx_hw_info *h = vx_hw();
    const int best = h->has_avx512 ? VX_ISA_AVX512 : h->has_avx2_fma ? VX_ISA_AVX2 : -1;
    const char *want = getenv("VORTEX_ISA");
    vx_isa_value = best;
    if (want && *want)
        apply_override(want, h, best);
    atomic_store_explicit(&vx_isa_chosen, 1, memory_order_release);
}

int vx_isa_choose(void)
{
    pthread_once(&g_once, choose);
    return vx_isa_value;
}
