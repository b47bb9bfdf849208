/* Per-ISA test helpers for the executables linked with vortex_internal_dep.
 *
 * The ISA is chosen once per process from VORTEX_ISA. Criterion runs every
 * Test in its own forked process, so a test's .init sets VORTEX_ISA before
 * anything in the library runs; the body then checks that the library
 * really picked that ISA, or skips when the CPU cannot run it.
 *
 * VT_ISA_TEST(suite, name, timeout) { ...body using vt_isa... }
 * defines suite::name_avx2 and suite::name_avx512 running the same body. */
#ifndef VT_ISA_H
#define VT_ISA_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "analyzer/hw.h"
#include "cpu/isa.h"
#include "cpu/ukernel.h"

static inline const char *vt_isa_name(vx_isa isa)
{
    return isa == VX_ISA_AVX512 ? "avx512" : isa == VX_ISA_AVX2 ? "avx2" : "?";
}

/* Can this CPU run kernels of this ISA? */
static inline int vt_cpu_has(vx_isa isa)
{
    const vx_hw_info *hw = vx_hw();
    return isa == VX_ISA_AVX512 ? hw->has_avx512 : hw->has_avx2_fma;
}

static inline void vt_init_avx2(void) { setenv("VORTEX_ISA", "avx2", 1); }
static inline void vt_init_avx512(void) { setenv("VORTEX_ISA", "avx512", 1); }

/* Skip when the CPU lacks the ISA, else require the library to use it. */
static inline void vt_require_isa(vx_isa isa)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU (%s) lacks %s (vx_hw()->has_%s == 0): %s path not tested",
                     vx_hw()->cpu_model, vt_isa_name(isa),
                     isa == VX_ISA_AVX512 ? "avx512" : "avx2_fma", vt_isa_name(isa));
    int active = vx_active_isa();
    cr_assert(active == (int)isa, "VORTEX_ISA=%s but vx_active_isa() = %d (%s)",
              vt_isa_name(isa), active, active >= 0 ? vt_isa_name((vx_isa)active) : "none");
}

#define VT_ISA_TEST(suite, name, tmo)                                            \
    static void suite##_##name##_body(vx_isa vt_isa);                            \
    Test(suite, name##_avx2, .init = vt_init_avx2, .timeout = (tmo))             \
    {                                                                            \
        vt_require_isa(VX_ISA_AVX2);                                             \
        suite##_##name##_body(VX_ISA_AVX2);                                      \
    }                                                                            \
    Test(suite, name##_avx512, .init = vt_init_avx512, .timeout = (tmo))         \
    {                                                                            \
        vt_require_isa(VX_ISA_AVX512);                                           \
        suite##_##name##_body(VX_ISA_AVX512);                                    \
    }                                                                            \
    static void suite##_##name##_body(vx_isa vt_isa)

#endif
