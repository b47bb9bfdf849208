/* dyn_gemm results against the float64 reference, on both ISA paths:
 * every layout/transpose combination, alpha/beta/ld variants, beta == 0 over
 * NaN, all small shapes, primes, sizes around every tile and blocking size,
 * large shapes and empty dimensions. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "cpu/gemm.h"
#include "ref.h"
#include "vt_isa.h"

#define TMO 150.0

static const float alphas[] = {1.0f, -0.5f, 0.0f};
static const float betas[] = {0.0f, 1.0f, 0.3f};

/* The ISA path must be the one forced, whatever else the test does. */
Test(isa, default_is_best_available)
{
    unsetenv("VORTEX_ISA");
    const vx_hw_info *hw = vx_hw();
    int expect = hw->has_avx512 ? VX_ISA_AVX512 : hw->has_avx2_fma ? VX_ISA_AVX2 : -1;
    cr_assert_eq(vx_active_isa(), expect,
                 "without VORTEX_ISA the best ISA must be used: has_avx512=%d has_avx2_fma=%d "
                 "but vx_active_isa()=%d",
                 hw->has_avx512, hw->has_avx2_fma, vx_active_isa());
}

VT_ISA_TEST(isa, forced_and_computes, TMO)
{
    /* vt_require_isa already asserted the ISA; a call must succeed on it */
    vt_case c = vt_case_make(19, 23, 11);
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s", vt_isa_name(vt_isa));
    c.tag = tag;
    vt_check(&c);
    cr_assert_eq(vx_active_isa(), (int)vt_isa, "ISA changed after a call");
}

/* The choice is made once: changing VORTEX_ISA later has no effect. */
Test(isa, decided_once, .init = vt_init_avx2)
{
    vt_require_isa(VX_ISA_AVX2);
    vt_case c = vt_case_make(9, 17, 5);
    vt_check(&c);
    setenv("VORTEX_ISA", "avx512", 1);
    vt_check(&c);
    cr_assert_eq(vx_active_isa(), VX_ISA_AVX2,
                 "vx_active_isa() changed to %d after VORTEX_ISA changed mid-process",
                 vx_active_isa());
}

/* All 8 layout/transpose combinations x alpha x beta x ld padding. */
VT_ISA_TEST(combos, alpha_beta_ld, TMO)
{
    static const int64_t pads[][3] = {{0, 0, 0}, {3, 3, 3}, {17, 17, 17}, {17, 0, 3}, {0, 3, 17}};
    static const int64_t shapes[][3] = {{37, 29, 41}, {70, 5, 130}, {3, 66, 9}};
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s", vt_isa_name(vt_isa));
    for (int s = 0; s < 3; s++)
        for (int combo = 0; combo < 8; combo++)
            for (int ai = 0; ai < 3; ai++)
                for (int bi = 0; bi < 3; bi++)
                    for (int pi = 0; pi < 5; pi++) {
                        if (s > 0 && pi != (combo + ai + bi) % 5)
                            continue; /* full cross product on the first shape only */
                        vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                        vt_combo(combo, &c.layout, &c.ta, &c.tb);
                        c.alpha = alphas[ai];
                        c.beta = betas[bi];
                        c.lda_pad = pads[pi][0];
                        c.ldb_pad = pads[pi][1];
                        c.ldc_pad = pads[pi][2];
                        c.seed = (uint64_t)(s * 1000 + combo * 100 + ai * 10 + bi + pi * 7919);
                        c.tag = tag;
                        vt_check(&c);
                    }
}

/* beta == 0: C is never read, so NaN/Inf in C must not survive. */
VT_ISA_TEST(combos, beta0_over_nan, TMO)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {33, 47, 19}, {64, 64, 64}, {5, 200, 300}};
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s", vt_isa_name(vt_isa));
    for (int s = 0; s < 4; s++)
        for (int combo = 0; combo < 8; combo++)
            for (int ai = 0; ai < 3; ai++) {
                vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                c.alpha = alphas[ai];
                c.beta = 0.0f;
                c.cinit = VT_C_NAN;
                c.ldc_pad = (combo & 1) ? 3 : 0;
                c.lda_pad = (combo & 2) ? 17 : 0;
                c.tag = tag;
                vt_check(&c);
            }
}

/* Every m, n in 1..40 for one k; the combination and alpha/beta rotate. */
static void small_shapes(vx_isa isa, int64_t k)
{
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s small-shape sweep", vt_isa_name(isa));
    for (int64_t m = 1; m <= 40; m++)
        for (int64_t n = 1; n <= 40; n++) {
            int64_t r = m * 41 + n * 3 + k;
            vt_case c = vt_case_make(m, n, k);
            vt_combo((int)(r % 8), &c.layout, &c.ta, &c.tb);
            c.alpha = alphas[(r / 8) % 2];      /* 1 or -0.5 */
            c.beta = betas[(r / 16) % 3];
            if (c.beta == 0.0f && (r & 32))
                c.cinit = VT_C_NAN;
            if ((m + n) % 5 == 0) {
                c.lda_pad = 3;
                c.ldb_pad = 17;
                c.ldc_pad = 3;
            }
            c.tag = tag;
            vt_check(&c);
        }
}

VT_ISA_TEST(shapes, all_small_k1, TMO) { small_shapes(vt_isa, 1); }
VT_ISA_TEST(shapes, all_small_k7, TMO) { small_shapes(vt_isa, 7); }
VT_ISA_TEST(shapes, all_small_k64, TMO) { small_shapes(vt_isa, 64); }
VT_ISA_TEST(shapes, all_small_k300, TMO) { small_shapes(vt_isa, 300); }

/* Every (m, n, k) triple of primes. */
VT_ISA_TEST(shapes, primes, TMO)
{
    static const int64_t p[] = {13, 37, 101, 257, 509};
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s primes", vt_isa_name(vt_isa));
    int idx = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (int l = 0; l < 5; l++, idx++) {
                vt_case c = vt_case_make(p[i], p[j], p[l]);
                vt_combo(idx % 8, &c.layout, &c.ta, &c.tb);
                c.beta = betas[idx % 3];
                c.alpha = idx % 2 ? -0.5f : 1.0f;
                c.tag = tag;
                vt_check(&c);
            }
}

/* m around every family's mr and its multiples, n around nr and multiples. */
VT_ISA_TEST(shapes, around_register_tiles, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    cr_assert(set && set->nfamilies > 0, "no micro-kernel families for %s", vt_isa_name(vt_isa));
    int idx = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        int mr = set->families[f].mr_max, nr = set->families[f].nr;
        int64_t ms[] = {mr - 1, mr, mr + 1, 2 * mr - 1, 2 * mr, 2 * mr + 1, 3 * mr + 1};
        int64_t ns[] = {nr - 1, nr, nr + 1, 2 * nr - 1, 2 * nr, 2 * nr + 1, 3 * nr + 1};
        char tag[96];
        snprintf(tag, sizeof tag, "isa=%s around family nr=%d mr_max=%d", vt_isa_name(vt_isa),
                 nr, mr);
        for (int a = 0; a < 7; a++)
            for (int b = 0; b < 7; b++, idx++) {
                if (ms[a] < 1 || ns[b] < 1)
                    continue;
                vt_case c = vt_case_make(ms[a], ns[b], idx % 2 ? 64 : 17);
                vt_combo(idx % 8, &c.layout, &c.ta, &c.tb);
                c.beta = betas[idx % 3];
                if (c.beta == 0.0f)
                    c.cinit = VT_C_NAN;
                c.alpha = idx % 2 ? -0.5f : 1.0f;
                c.ldc_pad = idx % 4 == 1 ? 3 : 0;
                c.tag = tag;
                vt_check(&c);
            }
    }
}

/* A B larger than the last-level cache comes from DRAM, and the in-place
 * kernels fetch it with their far variants (gemm.c, b_fetched_far): the
 * best-ranked direct and packed plans, forced, over such a B, with one row
 * tile (in-place B only) and with several (the first packs each panel). */
VT_ISA_TEST(shapes, b_past_last_level_cache, TMO)
{
    const vx_hw_info *hw = vx_hw();
    int64_t last = hw->l3_bytes > 0 ? hw->l3_bytes : hw->l2_bytes;
    if (last <= 0 || last > ((int64_t)256 << 20))
        last = last <= 0 ? (int64_t)32 << 20 : (int64_t)256 << 20;
    const int64_t n = 1037, k = last / (int64_t)sizeof(float) / n + 5; /* B just past it */
    static const int64_t ms[] = {5, 29};
    enum { MAX_RANKED = 4096 };
    vx_priced_plan *all = malloc(sizeof *all * MAX_RANKED);
    cr_assert(all);
    for (int i = 0; i < 2; i++) {
        vx_gemm_shape sh = { .m = ms[i], .n = n, .k = k, .b_unit_stride = 1, .a_unit_stride = 1 };
        const int ranked = vx_gemm_rank(&sh, vt_isa, 2, all, MAX_RANKED);
        static const vx_path paths[] = {VX_PATH_DIRECT, VX_PATH_PACKED};
        for (int w = 0; w < 2; w++) {
            int r = 0;
            while (r < ranked && r < MAX_RANKED && all[r].plan.path != paths[w])
                r++;
            cr_assert(r < ranked && r < MAX_RANKED, "%lldx%lldx%lld: no %s plan ranked", (long long)sh.m,
                      (long long)n, (long long)k, w ? "packed" : "direct");
            char tag[128];
            snprintf(tag, sizeof tag, "isa=%s B past the last-level cache, the best %s plan forced",
                     vt_isa_name(vt_isa), w ? "packed" : "direct");
            vt_case c = vt_case_make(sh.m, n, k);
            c.beta = i ? 0.3f : 0.0f;
            c.cinit = i ? VT_C_RANDOM : VT_C_NAN;
            c.alpha = -0.5f;
            c.tag = tag;
            vx_plan_set_override(&all[r].plan);
            vt_check(&c);
            vx_plan_set_override(NULL);
        }
    }
    free(all);
}

/* A's rows of 5-16 lines read in place from far (the cell's A block over
 * four L2s): the loops fetch them two row tiles ahead into L2 (gemm.c,
 * fetches_a_far), and the fetches near the cell's end must stay inside
 * it. The best direct, pack-B and packed plans forced, on two
 * threads, at k = 129 (ragged) and 256 (the longest fetched rows), row
 * counts that leave a ragged last tile; and the streamed loop (C streamed
 * from any size for the test), beta = 0 over NaN. */
VT_ISA_TEST(shapes, a_from_far_fetched_ahead, TMO)
{
    const vx_hw_info *hw = vx_hw();
    const int64_t l2 = hw->l2_bytes > 0 && hw->l2_bytes <= ((int64_t)8 << 20) ? hw->l2_bytes : (int64_t)1 << 20;
    static const int64_t ks[] = {129, 256};
    const int64_t n = 37;
    enum { MAX_RANKED = 4096 };
    vx_priced_plan *all = malloc(sizeof *all * MAX_RANKED);
    cr_assert(all);
    for (int i = 0; i < 2; i++) {
        /* A of 10 L2s: a cell of half its rows still over four */
        const int64_t k = ks[i], m = 10 * l2 / ((int64_t)sizeof(float) * k) | 1;
        vx_gemm_shape sh = { .m = m, .n = n, .k = k, .b_unit_stride = 1, .a_unit_stride = 1 };
        const int ranked = vx_gemm_rank(&sh, vt_isa, 2, all, MAX_RANKED);
        static const vx_path paths[] = {VX_PATH_DIRECT, VX_PATH_PACK_B, VX_PATH_PACKED, VX_PATH_DIRECT};
        static const char *const names[] = {"direct", "pack-B", "packed", "direct, C streamed"};
        for (int w = 0; w < 4; w++) {
            int r = 0;
            while (r < ranked && r < MAX_RANKED && (all[r].plan.path != paths[w] || all[r].plan.kc < k))
                r++;
            cr_assert(r < ranked && r < MAX_RANKED, "%lldx%lldx%lld: no %s plan of one k block ranked",
                      (long long)m, (long long)n, (long long)k, names[w]);
            char desc[128], tag[192];
            vx_plan_describe(&all[r].plan, desc, sizeof desc);
            snprintf(tag, sizeof tag, "isa=%s A from far, %s [%s]", vt_isa_name(vt_isa), names[w], desc);
            vt_case c = vt_case_make(m, n, k);
            c.alpha = -0.5f;
            c.beta = w == 3 || i ? 0.0f : 0.3f;
            c.cinit = c.beta == 0.0f ? VT_C_NAN : VT_C_RANDOM;
            c.tag = tag;
            if (w == 3)
                vx_gemm_set_stream_bytes(0);
            vx_plan_set_override(&all[r].plan);
            vt_check(&c);
            vx_plan_set_override(NULL);
            if (w == 3)
                vx_gemm_set_stream_bytes(-1);
        }
    }
    free(all);
}

/* One k block and a C beyond the units' L2: packed plans walk C by rows
 * over strips of B's panels (gemm.c, walks_rows). Every packed tile the
 * model ranks, forced, with ragged edges, B packed as it is read and
 * copied (transposed), beta = 0 over NaN and beta != 0. */
VT_ISA_TEST(shapes, packed_one_k_block_c_past_l2, TMO)
{
    const vx_hw_info *hw = vx_hw();
    const int64_t l2 = hw->l2_bytes > 0 && hw->l2_bytes <= ((int64_t)8 << 20) ? hw->l2_bytes : (int64_t)1 << 20;
    const int64_t n = 1109, k = 23;
    const int64_t m = 5 * l2 / ((int64_t)sizeof(float) * n) | 1; /* C 2.5x two units' L2 */
    enum { MAX_RANKED = 4096, MAX_TILES = 16 };
    vx_priced_plan *all = malloc(sizeof *all * MAX_RANKED);
    cr_assert(all);
    vx_gemm_shape sh = { .m = m, .n = n, .k = k, .b_unit_stride = 1, .a_unit_stride = 1 };
    const int ranked = vx_gemm_rank(&sh, vt_isa, 2, all, MAX_RANKED);
    int tiles[MAX_TILES][2], ntiles = 0;
    for (int r = 0; r < ranked && r < MAX_RANKED && ntiles < MAX_TILES; r++) {
        const vx_gemm_plan *pl = &all[r].plan;
        if (pl->path != VX_PATH_PACKED || pl->kc < k)
            continue;
        int seen = 0;
        for (int t = 0; t < ntiles; t++)
            seen |= tiles[t][0] == pl->mr && tiles[t][1] == pl->nr;
        if (seen)
            continue;
        tiles[ntiles][0] = pl->mr;
        tiles[ntiles][1] = pl->nr;
        ntiles++;
        char desc[128], tag[192];
        vx_plan_describe(pl, desc, sizeof desc);
        snprintf(tag, sizeof tag, "isa=%s C past L2, one k block [%s]", vt_isa_name(vt_isa), desc);
        vt_case c = vt_case_make(m, n, k);
        c.tb = ntiles % 2 ? VX_TRANS : VX_NO_TRANS; /* B copied, or packed as it is read */
        c.alpha = -0.5f;
        c.beta = ntiles % 3 ? 0.0f : 0.3f;
        c.cinit = c.beta == 0.0f ? VT_C_NAN : VT_C_RANDOM;
        c.ldc_pad = ntiles % 2 ? 5 : 0;
        c.tag = tag;
        vx_plan_set_override(pl);
        vt_check(&c);
        vx_plan_set_override(NULL);
    }
    cr_assert(ntiles >= 2, "only %d packed tiles ranked for %lldx%lldx%lld", ntiles, (long long)m,
              (long long)n, (long long)k);
    free(all);
}

/* k around the usual kc blocking sizes, and m, n, k around the planner's own
 * blocking for a big shape. */
VT_ISA_TEST(shapes, around_blocking, TMO)
{
    static const int64_t ks[] = {255, 256, 257, 383, 384, 385, 511, 512, 513, 767, 768, 769};
    char tag[160];
    snprintf(tag, sizeof tag, "isa=%s k around 256/384/512/768", vt_isa_name(vt_isa));
    for (int i = 0; i < 12; i++) {
        vt_case c = vt_case_make(45, 70, ks[i]);
        vt_combo(i % 8, &c.layout, &c.ta, &c.tb);
        c.beta = betas[i % 3];
        c.tag = tag;
        vt_check(&c);
    }
    /* the planner's blocking for a large problem */
    vx_gemm_shape sh = { .m = 1024, .n = 1024, .k = 1024, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_gemm_plan pl;
    memset(&pl, 0, sizeof pl);
    vx_plan_gemm(&sh, vt_isa, 1, &pl);
    char pdesc[128];
    vx_plan_describe(&pl, pdesc, sizeof pdesc);
    snprintf(tag, sizeof tag, "isa=%s around plan [%s]", vt_isa_name(vt_isa), pdesc);
    int64_t mr = pl.mr > 0 ? pl.mr : 8, nr = pl.nr > 0 ? pl.nr : 16;
    int64_t mc = pl.mc > 0 && pl.mc <= 600 ? pl.mc : 4 * mr;
    int64_t kc = pl.kc > 0 && pl.kc <= 1024 ? pl.kc : 256;
    int64_t nc = pl.nc > 0 && pl.nc <= 2100 ? pl.nc : 8 * nr;
    int64_t cases[][3] = {
        {mc + 1, 2 * nr + 1, kc + 1},
        {mc - 1, 3 * nr - 1, kc - 1},
        {mc, nr, kc},
        {2 * mc + 1, nr + 3, 2 * kc + 1},
        {mr + 1, nc + 1, kc},
        {mr * 2 - 1, nc - 1, 17},
        {mr, nc, kc + 1},
        {3, 2 * nc + 1, 5},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        if (cases[i][0] < 1 || cases[i][1] < 1 || cases[i][2] < 1)
            continue;
        vt_case c = vt_case_make(cases[i][0], cases[i][1], cases[i][2]);
        vt_combo(i * 3, &c.layout, &c.ta, &c.tb);
        c.beta = betas[i % 3];
        c.alpha = i % 2 ? -0.5f : 1.0f;
        c.tag = tag;
        vt_check(&c);
    }
}

VT_ISA_TEST(shapes, large, TMO)
{
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s large", vt_isa_name(vt_isa));
    vt_case c = vt_case_make(1000, 1003, 517);
    c.alpha = -0.5f;
    c.beta = 0.3f;
    c.ldc_pad = 3;
    c.lda_pad = 17;
    c.tag = tag;
    vt_check(&c);

    vt_case d = vt_case_make(2001, 2003, 33);
    d.layout = VX_COL_MAJOR;
    d.ta = VX_TRANS;
    d.beta = 0.0f;
    d.cinit = VT_C_NAN;
    d.tag = tag;
    vt_check(&d);
}

/* The large shape again, column-major with both operands transposed and
 * every leading dimension padded. */
VT_ISA_TEST(shapes, large_col_tt, TMO)
{
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s large", vt_isa_name(vt_isa));
    vt_case c = vt_case_make(1000, 1003, 517);
    c.layout = VX_COL_MAJOR;
    c.ta = VX_TRANS;
    c.tb = VX_TRANS;
    c.alpha = 1.0f;
    c.beta = 1.0f;
    c.lda_pad = 3;
    c.ldb_pad = 17;
    c.ldc_pad = 17;
    c.tag = tag;
    vt_check(&c);
}

/* m == 0 or n == 0: VX_OK and C bytewise untouched (vt_run checks every
 * float of C's buffer, which is all padding here). */
VT_ISA_TEST(shapes, empty_m_n, TMO)
{
    static const int64_t shapes[][3] = {{0, 5, 7}, {5, 0, 7}, {0, 0, 7}, {0, 5, 0}, {0, 0, 0}};
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s empty", vt_isa_name(vt_isa));
    for (int s = 0; s < 5; s++)
        for (int combo = 0; combo < 8; combo++)
            for (int bi = 0; bi < 3; bi++) {
                vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                vt_combo(combo, &c.layout, &c.ta, &c.tb);
                c.beta = betas[bi];
                c.ldc_pad = 3;
                c.tag = tag;
                vt_check(&c);
            }
}

/* k == 0: C = beta * C; beta == 0 zeroes C even over NaN. */
VT_ISA_TEST(shapes, k_zero, TMO)
{
    static const int64_t shapes[][2] = {{1, 1}, {7, 5}, {40, 33}, {100, 3}};
    char tag[64];
    snprintf(tag, sizeof tag, "isa=%s k=0", vt_isa_name(vt_isa));
    for (int s = 0; s < 4; s++)
        for (int combo = 0; combo < 8; combo++)
            for (int ai = 0; ai < 3; ai++)
                for (int bi = 0; bi < 3; bi++) {
                    vt_case c = vt_case_make(shapes[s][0], shapes[s][1], 0);
                    vt_combo(combo, &c.layout, &c.ta, &c.tb);
                    c.alpha = alphas[ai];
                    c.beta = betas[bi];
                    if (c.beta == 0.0f)
                        c.cinit = VT_C_NAN;
                    c.ldc_pad = (combo + bi) % 2 ? 17 : 0;
                    c.tag = tag;
                    vt_check(&c);
                }
}

/* beta == 1 and k == 0 must leave C exactly as it was (C = 1 * C). */
VT_ISA_TEST(shapes, k_zero_beta1_exact, TMO)
{
    float c[6 * 9];
    float c0[6 * 9];
    vt_rng r;
    vt_rng_seed(&r, 99);
    for (int i = 0; i < 6 * 9; i++)
        c[i] = c0[i] = vt_rng_float(&r);
    float a[1] = {NAN}, b[1] = {NAN};
    vx_status s = dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 6, 8, 0, 1.0f, a, 1, b, 8,
                           1.0f, c, 9);
    cr_assert_eq(s, VX_OK, "isa=%s k=0 beta=1: %s", vt_isa_name(vt_isa), vx_status_string(s));
    cr_assert(memcmp(c, c0, sizeof c) == 0, "isa=%s k=0 beta=1 changed C", vt_isa_name(vt_isa));
}
