#include "cpu/isa.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "runtime.h"

static int g_isa = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const vx_hw_info *h = vx_hw();
    int best = h->has_avx512 ? VX_ISA_AVX512 : h->has_avx2_fma ? VX_ISA_AVX2 : -1;
    const char *want = getenv("VORTEX_ISA");
    g_isa = best;
    if (!want || !*want)
        return;
    if (!strcmp(want, "avx2")) {
        if (h->has_avx2_fma)
            g_isa = VX_ISA_AVX2;
        else
            vx_warn("VORTEX_ISA=avx2 but this CPU lacks AVX2+FMA; ignoring it");
    } else if (!strcmp(want, "avx512")) {
        if (h->has_avx512)
            g_isa = VX_ISA_AVX512;
        else
            vx_warn("VORTEX_ISA=avx512 but this CPU lacks AVX-512 F/BW/VL/DQ; using %s",
                    best == VX_ISA_AVX2 ? "avx2" : "nothing");
    } else {
        vx_warn("VORTEX_ISA=%s is not one of avx2, avx512; ignoring it", want);
    }
}

int vx_active_isa(void)
{
    pthread_once(&g_once, choose);
    return g_isa;
}
