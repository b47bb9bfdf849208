/* The L0 micro-kernels and the planner, from the inside:
 *  - the generated table's invariants;
 *  - every kernel (ISA x family x variant x m) called directly on operands
 *    laid out as src/cpu/ukernel.h documents, for every n in 1..nr;
 *  - dyn_gemm with the tile forced (vx_plan_set_override) to every family and
 *    every m <= mr_max, on each path (packed, pack-B, direct);
 *  - tiny forced mc/kc/nc so the blocked loops and beta across k-blocks run;
 *  - the planner's own invariants. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyzer/plan.h"
#include "analyzer/cost.h"
#include "analyzer/plancache.h"
#include "cpu/gemv.h"
#include "cpu/dot.h"
#include "cpu/resident.h"
#include "cpu/gemm.h"
#include "cpu/pack.h"
#include "cpu/stream.h"
#include "ref.h"
#include "vt_isa.h"

#define TMO 150.0

static const char *path_name(vx_path p)
{
    switch (p) {
    case VX_PATH_AUTO: return "auto";
    case VX_PATH_PACKED: return "packed";
    case VX_PATH_PACK_B: return "pack_b";
    case VX_PATH_DIRECT: return "direct";
    case VX_PATH_CONV_DIRECT: return "conv_direct";
    case VX_PATH_GEMV: return "gemv";
    case VX_PATH_DOT: return "dot";
    case VX_PATH_RESIDENT: return "resident";
    }
    return "?";
}

/* The packing variant (family->pk), the two that fetch B into L2
 * (family->bs_far, pk_far) and the packed-B ones that fetch a caller's rows
 * as they run (family->fetch), tested beside the three kern[] ones. */
enum { VARIANT_PK = VX_UK_VARIANTS, VARIANT_BS_FAR, VARIANT_PK_FAR, VARIANT_APBP_FETCH, VARIANT_ASBP_FETCH };

static const char *variant_name(int v)
{
    return v == VX_UK_AP_BP ? "apbp" : v == VX_UK_AS_BP ? "asbp" : v == VX_UK_AS_BS ? "asbs"
         : v == VARIANT_PK ? "asbs_pk" : v == VARIANT_BS_FAR ? "asbs_far" : v == VARIANT_PK_FAR ? "asbs_pk_far"
         : v == VARIANT_APBP_FETCH ? "apbp_fetch" : "asbp_fetch";
}

/* ------------------------------------------------------------------ */
/* The generated table                                                 */
/* ------------------------------------------------------------------ */

static void check_table(vx_isa isa)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    cr_assert(set != NULL, "vx_ukernels(%s) is NULL", vt_isa_name(isa));
    cr_assert_eq(set->isa, isa, "vx_ukernels(%s)->isa = %d", vt_isa_name(isa), set->isa);
    cr_assert(set->name && strcmp(set->name, vt_isa_name(isa)) == 0,
              "vx_ukernels(%s)->name = \"%s\"", vt_isa_name(isa), set->name ? set->name : "(null)");
    int w = isa == VX_ISA_AVX512 ? 16 : 8, regs = isa == VX_ISA_AVX512 ? 32 : 16;
    cr_assert_eq(set->vec_floats, w, "%s vec_floats = %d", set->name, set->vec_floats);
    cr_assert_eq(set->vec_registers, regs, "%s vec_registers = %d", set->name,
                 set->vec_registers);
    cr_assert(set->nfamilies >= 1 && set->families, "%s has no families", set->name);
    for (int f = 0; f < set->nfamilies; f++) {
        const vx_ukernel_family *fam = &set->families[f];
        cr_assert(fam->nr > 0 && fam->nr % w == 0, "%s family %d: nr=%d not a multiple of %d",
                  set->name, f, fam->nr, w);
        if (f > 0)
            cr_assert(fam->nr > set->families[f - 1].nr, "%s families not sorted by nr at %d",
                      set->name, f);
        cr_assert(fam->mr_max >= 1, "%s nr=%d: mr_max=%d", set->name, fam->nr, fam->mr_max);
        int vecs = fam->nr / w;
        cr_assert(fam->mr_max * vecs + vecs + 1 <= regs,
                  "%s nr=%d mr_max=%d needs %d registers > %d", set->name, fam->nr, fam->mr_max,
                  fam->mr_max * vecs + vecs + 1, regs);
        for (int v = 0; v < VX_UK_VARIANTS; v++) {
            cr_assert(fam->kern[v] != NULL, "%s nr=%d variant %s: no table", set->name, fam->nr,
                      variant_name(v));
            for (int m = 1; m <= fam->mr_max; m++)
                cr_assert(fam->kern[v][m - 1] != NULL, "%s nr=%d variant %s m=%d: NULL kernel",
                          set->name, fam->nr, variant_name(v), m);
        }
        cr_assert(fam->seg != NULL, "%s nr=%d: no segmented kernels", set->name, fam->nr);
        cr_assert(fam->pk != NULL, "%s nr=%d: no packing kernels", set->name, fam->nr);
        cr_assert(fam->bs_far != NULL && fam->pk_far != NULL, "%s nr=%d: no far kernels", set->name, fam->nr);
        cr_assert(fam->fetch[0] != NULL && fam->fetch[1] != NULL, "%s nr=%d: no fetching kernels", set->name,
                  fam->nr);
        for (int m = 1; m <= fam->mr_max; m++) {
            cr_assert(fam->fetch[0][m - 1] != NULL && fam->fetch[1][m - 1] != NULL &&
                          fam->fetch[0][m - 1] != fam->fetch[1][m - 1],
                      "%s nr=%d m=%d: fetching kernels NULL or the same", set->name, fam->nr, m);
            cr_assert(fam->seg[m - 1] != NULL, "%s nr=%d m=%d: NULL segmented kernel", set->name, fam->nr, m);
            cr_assert(fam->pk[m - 1] != NULL, "%s nr=%d m=%d: NULL packing kernel", set->name, fam->nr, m);
            cr_assert(fam->bs_far[m - 1] != NULL && fam->pk_far[m - 1] != NULL,
                      "%s nr=%d m=%d: NULL far kernel", set->name, fam->nr, m);
            cr_assert(fam->bs_far[m - 1] != fam->kern[VX_UK_AS_BS][m - 1] && fam->pk_far[m - 1] != fam->pk[m - 1],
                      "%s nr=%d m=%d: the far kernels are the near ones", set->name, fam->nr, m);
        }
    }
}

Test(ukernel, table_avx2) { check_table(VX_ISA_AVX2); }
Test(ukernel, table_avx512) { check_table(VX_ISA_AVX512); }

/* ------------------------------------------------------------------ */
/* Every kernel, called directly                                       */
/* ------------------------------------------------------------------ */

/* One call of kernel (isa, family f, variant v, rows m) with n columns;
 * v = VARIANT_PK also checks the packed panel it leaves (every step's nr
 * floats: B's n columns, then zeros; nothing written past k * nr). */
static void run_ukernel(vx_isa isa, int f, int v, int m, int64_t n, int64_t k, float alpha,
                        float beta, int a_trans, int c_pad, uint64_t seed)
{
    const vx_ukernel_family *fam = &vx_ukernels(isa)->families[f];
    const int nr = fam->nr;
    const int a_packed = v == VX_UK_AP_BP || v == VARIANT_APBP_FETCH;
    const int b_packed = a_packed || v == VX_UK_AS_BP || v == VARIANT_ASBP_FETCH;
    char desc[256];
    snprintf(desc, sizeof desc,
             "kernel %s nr=%d m=%d variant=%s: n=%lld k=%lld alpha=%g beta=%g A%s c_rs=n+%d "
             "seed=%llu",
             vt_isa_name(isa), nr, m, variant_name(v), (long long)n, (long long)k,
             (double)alpha, (double)beta,
             a_packed ? " packed" : a_trans ? " strided (column-major)" : " strided (row-major)",
             c_pad, (unsigned long long)seed);

    vt_rng rng;
    vt_rng_seed(&rng, seed);
    /* the kernels' c_far either way: a hint (whether C's tile is fetched
     * on entry), so no result may depend on it */
    const int c_far = (int)(seed % 2);
    /* logical operands, dense */
    float *la = malloc(sizeof(float) * (size_t)(m * k));
    float *lb = malloc(sizeof(float) * (size_t)(k * n));
    for (int64_t i = 0; i < m * k; i++)
        la[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < k * n; i++)
        lb[i] = vt_rng_float(&rng);

    /* A in the variant's layout; exact extent, NaN in any gap */
    int64_t a_rs = 0, a_cs = 0, ea;
    if (a_packed) {
        ea = k * m;
    } else if (!a_trans) {
        a_rs = k + 3;
        a_cs = 1;
        ea = (m - 1) * a_rs + (k - 1) * a_cs + 1;
    } else {
        a_rs = 1;
        a_cs = m + 2;
        ea = (m - 1) * a_rs + (k - 1) * a_cs + 1;
    }
    float *a = malloc(sizeof(float) * (size_t)ea);
    for (int64_t i = 0; i < ea; i++)
        a[i] = NAN;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            a[a_packed ? p * m + i : i * a_rs + p * a_cs] = la[i * k + p];

    /* B: packed = zero-padded nr-wide panel; strided = exact extent, NaN gaps */
    int64_t b_rs = b_packed ? nr : n + 5;
    int64_t eb = b_packed ? k * nr : (k - 1) * b_rs + n;
    float *b = malloc(sizeof(float) * (size_t)eb);
    for (int64_t i = 0; i < eb; i++)
        b[i] = b_packed ? 0.0f : NAN;
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++)
            b[p * b_rs + j] = lb[p * n + j];

    /* C: logical part random (or NaN/Inf for beta == 0), sentinel elsewhere */
    int64_t c_rs = n + c_pad;
    int64_t ec = m * c_rs + 19;
    float *c = malloc(sizeof(float) * (size_t)ec);
    float *c0 = malloc(sizeof(float) * (size_t)ec);
    vt_fill_sentinel(c, ec);
    static const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * c_rs + j] = beta == 0.0f ? specials[(i + j) % 3] : vt_rng_float(&rng);
    memcpy(c0, c, sizeof(float) * (size_t)ec);
    float *a_copy = malloc(sizeof(float) * (size_t)ea);
    float *b_copy = malloc(sizeof(float) * (size_t)eb);
    memcpy(a_copy, a, sizeof(float) * (size_t)ea);
    memcpy(b_copy, b, sizeof(float) * (size_t)eb);

    float *bpk = NULL;
    if (v == VARIANT_PK || v == VARIANT_PK_FAR) {
        bpk = malloc(sizeof(float) * (size_t)(k * nr + 16));
        for (int64_t i = 0; i < k * nr; i++)
            bpk[i] = NAN;
        vt_fill_sentinel(bpk + k * nr, 16);
        (v == VARIANT_PK ? fam->pk : fam->pk_far)[m - 1](k, a, a_rs, a_cs, b, b_rs, c, c_rs, n, alpha, beta, NULL,
                                                         c_far, bpk);
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < nr; j++) {
                const float want = j < n ? lb[p * n + j] : 0.0f;
                cr_assert(memcmp(&bpk[p * nr + j], &want, sizeof want) == 0,
                          "packed panel at step %lld col %lld: %g, want %g: %s", (long long)p, (long long)j,
                          (double)bpk[p * nr + j], (double)want, desc);
            }
        cr_assert(vt_check_sentinel(bpk + k * nr, 16) < 0, "packed panel written past k * nr: %s", desc);
        free(bpk);
    } else if (v == VARIANT_APBP_FETCH || v == VARIANT_ASBP_FETCH) {
        /* rows of 1..4 lines, not on a line, more of them than the kernel
         * fetches (one per four steps) or none: fetching writes nothing and
         * changes no result */
        enum { FETCH_RS = 100 };
        const int64_t rows = (seed % 3 == 0) ? 0 : k / 4 + 2, row_bytes = 4 + (int64_t)(seed % 4) * 64;
        float *fetch = malloc(sizeof(float) * (size_t)((rows + 1) * FETCH_RS));
        for (int64_t i = 0; i < (rows + 1) * FETCH_RS; i++)
            fetch[i] = (float)i;
        fam->fetch[v == VARIANT_APBP_FETCH ? VX_UK_AP_BP : VX_UK_AS_BP][m - 1](
            k, a, a_rs, a_cs, b, b_rs, c, c_rs, n, alpha, beta, NULL, c_far, fetch + 3, FETCH_RS, rows, row_bytes);
        for (int64_t i = 0; i < (rows + 1) * FETCH_RS; i++)
            cr_assert(fetch[i] == (float)i, "fetched rows modified at %lld: %s", (long long)i, desc);
        free(fetch);
    } else {
        const vx_ukernel_fn *kern = v == VARIANT_BS_FAR ? fam->bs_far : fam->kern[v];
        kern[m - 1](k, a, a_rs, a_cs, b, b_rs, c, c_rs, n, alpha, beta, NULL, c_far);
    }

    cr_assert(memcmp(a, a_copy, sizeof(float) * (size_t)ea) == 0, "A modified: %s", desc);
    cr_assert(memcmp(b, b_copy, sizeof(float) * (size_t)eb) == 0, "B modified: %s", desc);
    for (int64_t pos = 0; pos < ec; pos++) {
        int logical = pos / c_rs < m && pos % c_rs < n;
        if (!logical)
            cr_assert(memcmp(&c[pos], &c0[pos], sizeof(float)) == 0,
                      "C written outside the m x n tile at offset %lld (row %lld, col %lld): %s",
                      (long long)pos, (long long)(pos / c_rs), (long long)(pos % c_rs), desc);
    }
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < k; p++)
                s += (double)la[i * k + p] * (double)lb[p * n + j];
            double r = (double)alpha * s;
            if (beta != 0.0f)
                r += (double)beta * (double)c0[i * c_rs + j];
            ref[i * n + j] = r;
        }
    double err = vt_rel_err(c, c_rs, 1, ref, m, n);
    cr_assert(err <= VT_TOL, "relative error %.3g > %g: %s", err, VT_TOL, desc);
    free(ref);
    free(la);
    free(lb);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(a_copy);
    free(b_copy);
}

static void all_kernels_of_variant(vx_isa isa, int v)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU (%s) lacks %s: its kernels cannot run here", vx_hw()->cpu_model,
                     vt_isa_name(isa));
    static const int64_t ks[] = {1, 2, 7, 64};
    static const float betas[] = {0.0f, 1.0f, 0.3f};
    const vx_ukernel_set *set = vx_ukernels(isa);
    uint64_t seed = 1;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr;
        for (int m = 1; m <= set->families[f].mr_max; m++) {
            for (int64_t n = 1; n <= nr; n++, seed++)
                run_ukernel(isa, f, v, m, n, ks[(m + n) % 4], (n & 1) ? -0.5f : 1.0f,
                            betas[(m + n) % 3], (int)((n >> 1) & 1), (int)(n % 3 == 0 ? 3 : 0),
                            seed);
            /* longer K on the full and the ragged width */
            run_ukernel(isa, f, v, m, nr, 300, 1.0f, 0.3f, 0, 0, seed++);
            run_ukernel(isa, f, v, m, nr - 1, 300, -0.5f, 0.0f, 1, 1, seed++);
        }
    }
}

/* The in-place kernels read only B's n valid columns: B's last row ends
 * at a page that is followed by an inaccessible one, so a load past n
 * (16 floats when only the last vector of a short row was masked) faults
 * and Criterion reports the crash. Every family, every n < nr, m = 1 and
 * the widest m, the plain and the packing variant. */
static void in_place_b_reads_stop_at_n(vx_isa isa)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU (%s) lacks %s: its kernels cannot run here", vx_hw()->cpu_model,
                     vt_isa_name(isa));
    const long page = sysconf(_SC_PAGESIZE);
    const size_t span = 16 * (size_t)page;
    char *map = mmap(NULL, span + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(map != MAP_FAILED, "mmap");
    cr_assert_eq(mprotect(map + span, (size_t)page, PROT_NONE), 0, "mprotect");
    const vx_ukernel_set *set = vx_ukernels(isa);
    enum { K = 5 };
    float a[32 * K], c[32 * 128], bpk[K * 128];
    for (int i = 0; i < 32 * K; i++)
        a[i] = (float)(i % 7) - 3.0f;
    for (int f = 0; f < set->nfamilies; f++) {
        const vx_ukernel_family *F = &set->families[f];
        for (int64_t n = 1; n < F->nr; n++) {
            /* K rows of n floats, the last one ending at the guard page */
            float *b = (float *)(map + span) - K * n;
            for (int64_t i = 0; i < K * n; i++)
                b[i] = (float)(i % 5) - 2.0f;
            const int ms[2] = {1, F->mr_max};
            for (int q = 0; q < 2; q++) {
                const int m = ms[q];
                for (int far = 0; far < 2; far++) {
                    (far ? F->bs_far : F->kern[VX_UK_AS_BS])[m - 1](K, a, K, 1, b, n, c, n, n, 1.0f, 0.0f, NULL, far);
                    (far ? F->pk_far : F->pk)[m - 1](K, a, K, 1, b, n, c, n, n, 1.0f, 0.0f, NULL, far, bpk);
                    for (int64_t j = 0; j < n; j++) {
                        double want = 0;
                        for (int p = 0; p < K; p++)
                            want += (double)a[(m - 1) * K + p] * (double)b[p * n + j];
                        cr_assert_float_eq(c[(m - 1) * n + j], want, 1e-4,
                                           "%s nr=%d m=%d n=%lld col %lld%s: %g, want %g", set->name, F->nr, m,
                                           (long long)n, (long long)j, far ? " (far)" : "",
                                           (double)c[(m - 1) * n + j], want);
                    }
                }
            }
        }
    }
    munmap(map, span + (size_t)page);
}

Test(ukernel, in_place_b_reads_stop_at_n_avx2, .timeout = TMO) { in_place_b_reads_stop_at_n(VX_ISA_AVX2); }
Test(ukernel, in_place_b_reads_stop_at_n_avx512, .timeout = TMO) { in_place_b_reads_stop_at_n(VX_ISA_AVX512); }

/* vx_copy_transposed (the NCHW <-> NHWC copies): every element lands in
 * place and nothing outside the rows x cols block of dst is written, for
 * edge sizes around its 8 x 8 blocks, leading dimensions larger than needed
 * and leading dimensions a multiple of 512 floats on either side (the two
 * loop orders). */
Test(pack, copy_transposed_edges_and_both_orders, .timeout = TMO)
{
    static const int64_t sizes[] = {1, 3, 7, 8, 9, 16, 17, 33};
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            for (int lds = 0; lds < 2; lds++)
                for (int ldd = 0; ldd < 2; ldd++) {
                    const int64_t rows = sizes[a], cols = sizes[b];
                    const int64_t ls = lds ? 512 : cols + 3, ld = ldd ? 1024 : rows + 5;
                    float *src = malloc(sizeof(float) * (size_t)(rows * ls));
                    float *dst = malloc(sizeof(float) * (size_t)(cols * ld));
                    for (int64_t i = 0; i < rows * ls; i++)
                        src[i] = (float)i + 0.5f;
                    for (int64_t i = 0; i < cols * ld; i++)
                        dst[i] = -1.0f;
                    vx_copy_transposed(rows, cols, src, ls, dst, ld);
                    for (int64_t j = 0; j < cols; j++)
                        for (int64_t i = 0; i < ld; i++) {
                            const float want = i < rows ? src[i * ls + j] : -1.0f;
                            cr_assert(dst[j * ld + i] == want, "%lldx%lld ld %lld/%lld: dst[%lld][%lld] = %g, want %g",
                                      (long long)rows, (long long)cols, (long long)ls, (long long)ld, (long long)j,
                                      (long long)i, (double)dst[j * ld + i], (double)want);
                        }
                    free(src);
                    free(dst);
                }
}

/* The segmented kernel (strided A in segments, packed B): segment t of
 * seg_len steps (the last one shorter when k_all is not a multiple) reads
 * A at a + t * a_jump and B at b + t * b_jump; the gaps between segments
 * hold NaN, which must never be read. */
static void run_seg_ukernel(vx_isa isa, int f, int m, int64_t n, int64_t k_all, int64_t seg_len, float alpha,
                            float beta, uint64_t seed)
{
    const vx_ukernel_family *fam = &vx_ukernels(isa)->families[f];
    const int nr = fam->nr;
    const int64_t nseg = (k_all + seg_len - 1) / seg_len;
    const int64_t a_rs = 2 * seg_len + 1, a_jump = m * a_rs + 5, b_jump = (seg_len + 2) * nr;
    char desc[200];
    snprintf(desc, sizeof desc, "segmented kernel %s nr=%d m=%d: n=%lld k_all=%lld seg_len=%lld alpha=%g beta=%g",
             vt_isa_name(isa), nr, m, (long long)n, (long long)k_all, (long long)seg_len, (double)alpha,
             (double)beta);
    vt_rng rng;
    vt_rng_seed(&rng, seed);
    const int64_t ea = nseg * a_jump + m * a_rs, eb = nseg * b_jump;
    float *a = malloc(sizeof(float) * (size_t)ea), *b = malloc(sizeof(float) * (size_t)eb);
    for (int64_t i = 0; i < ea; i++)
        a[i] = NAN;
    for (int64_t i = 0; i < eb; i++)
        b[i] = NAN;
    double *la = malloc(sizeof(double) * (size_t)(m * k_all)), *lb = malloc(sizeof(double) * (size_t)(k_all * n));
    for (int64_t p = 0; p < k_all; p++) {
        const int64_t t = p / seg_len, q = p % seg_len;
        for (int64_t i = 0; i < m; i++) {
            const float x = vt_rng_float(&rng);
            a[t * a_jump + i * a_rs + q] = x;
            la[i * k_all + p] = x;
        }
        for (int64_t j = 0; j < nr; j++) {
            const float x = j < n ? vt_rng_float(&rng) : 0.0f; /* a packed panel: zero past n */
            b[t * b_jump + q * nr + j] = x;
            if (j < n)
                lb[p * n + j] = x;
        }
    }
    const int64_t c_rs = n + 3, ec = m * c_rs + 7;
    float *c = malloc(sizeof(float) * (size_t)ec), *c0 = malloc(sizeof(float) * (size_t)ec);
    vt_fill_sentinel(c, ec);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * c_rs + j] = beta == 0.0f ? NAN : vt_rng_float(&rng);
    memcpy(c0, c, sizeof(float) * (size_t)ec);
    /* c_far either way: a hint, no result may depend on it */
    fam->seg[m - 1](k_all, a, a_rs, 1, b, nr, c, c_rs, n, alpha, beta, NULL, (int)(seed % 2), seg_len, a_jump,
                    b_jump);
    for (int64_t pos = 0; pos < ec; pos++)
        if (!(pos / c_rs < m && pos % c_rs < n))
            cr_assert(memcmp(&c[pos], &c0[pos], sizeof(float)) == 0, "C written outside the tile at %lld: %s",
                      (long long)pos, desc);
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < k_all; p++)
                s += la[i * k_all + p] * lb[p * n + j];
            ref[i * n + j] = (double)alpha * s + (beta != 0.0f ? (double)beta * (double)c0[i * c_rs + j] : 0.0);
        }
    const double err = vt_rel_err(c, c_rs, 1, ref, m, n);
    cr_assert(err <= VT_TOL, "relative error %.3g > %g: %s", err, VT_TOL, desc);
    free(a);
    free(b);
    free(la);
    free(lb);
    free(c);
    free(c0);
    free(ref);
}

static void all_seg_kernels(vx_isa isa)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU (%s) lacks %s: its kernels cannot run here", vx_hw()->cpu_model,
                     vt_isa_name(isa));
    /* (k_all, seg_len): one segment, several, a short last one, segments
     * shorter and longer than the kernels' unroll of 4 */
    static const int64_t ks[][2] = { { 5, 5 }, { 25, 5 }, { 27, 9 }, { 23, 5 }, { 7, 1 }, { 300, 64 } };
    static const float betas[] = { 0.0f, 1.0f, 0.3f };
    const vx_ukernel_set *set = vx_ukernels(isa);
    uint64_t seed = 77;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr;
        for (int m = 1; m <= set->families[f].mr_max; m++)
            for (int q = 0; q < 6; q++, seed++) {
                const int64_t n = q % 2 ? nr : 1 + (int64_t)((seed * 7) % (uint64_t)nr);
                run_seg_ukernel(isa, f, m, n, ks[q][0], ks[q][1], q % 2 ? -0.5f : 1.0f, betas[(m + q) % 3], seed);
            }
    }
}

Test(ukernel, segmented_avx2, .timeout = TMO) { all_seg_kernels(VX_ISA_AVX2); }
Test(ukernel, segmented_avx512, .timeout = TMO) { all_seg_kernels(VX_ISA_AVX512); }

#define UK_TEST(vname, v)                                                             \
    Test(ukernel, direct_##vname##_avx2, .timeout = TMO) { all_kernels_of_variant(VX_ISA_AVX2, v); } \
    Test(ukernel, direct_##vname##_avx512, .timeout = TMO) { all_kernels_of_variant(VX_ISA_AVX512, v); }

UK_TEST(apbp, VX_UK_AP_BP)
UK_TEST(asbp, VX_UK_AS_BP)
UK_TEST(asbs, VX_UK_AS_BS)
UK_TEST(asbs_pk, VARIANT_PK)
UK_TEST(asbs_far, VARIANT_BS_FAR)
UK_TEST(asbs_pk_far, VARIANT_PK_FAR)
UK_TEST(apbp_fetch, VARIANT_APBP_FETCH)
UK_TEST(asbp_fetch, VARIANT_ASBP_FETCH)

/* ------------------------------------------------------------------ */
/* dyn_gemm with the register tile forced                              */
/* ------------------------------------------------------------------ */

/* Layout/transpose combinations for a path; the direct path only runs in
 * place when B (after the API makes C row-major) has unit-stride rows:
 * row-major with B not transposed, or column-major with A not transposed.
 * Those come twice as often; the rest check the fallback. */
static void combo_for(vx_path path, int idx, vx_layout *l, vx_transpose *ta, vx_transpose *tb)
{
    static const int direct_combos[] = {0, 2, 4, 5, 0, 2, 4, 5, 1, 3, 6, 7};
    vt_combo(path == VX_PATH_DIRECT ? direct_combos[idx % 12] : idx % 8, l, ta, tb);
}

/* Build a case whose canonical (row-major C) shape is M x N: for a
 * column-major call the API computes C^T, so the user's m and n swap. */
static vt_case canonical_case(vx_path path, int idx, int64_t M, int64_t N, int64_t K)
{
    vx_layout l;
    vx_transpose ta, tb;
    combo_for(path, idx, &l, &ta, &tb);
    vt_case c = l == VX_ROW_MAJOR ? vt_case_make(M, N, K) : vt_case_make(N, M, K);
    c.layout = l;
    c.ta = ta;
    c.tb = tb;
    c.seed = (uint64_t)idx * 7919u + (uint64_t)(M * 131 + N * 17 + K);
    static const float betas[] = {0.0f, 1.0f, 0.3f};
    c.beta = betas[idx % 3];
    c.alpha = (idx / 3) % 2 ? -0.5f : 1.0f;
    if (c.beta == 0.0f)
        c.cinit = VT_C_NAN;
    c.ldc_pad = idx % 5 == 2 ? 3 : 0;
    c.lda_pad = idx % 7 == 3 ? 17 : 0;
    return c;
}

/* canonical_case for a packed plan, with layout/transposes `combo`
 * (vt_combo) instead of the path's rotation; the canonical (row-major C)
 * shape stays M x N. */
static vt_case packed_combo_case(int idx, int combo, int64_t M, int64_t N, int64_t K)
{
    vt_case c = canonical_case(VX_PATH_PACKED, idx, M, N, K);
    vt_combo(combo, &c.layout, &c.ta, &c.tb);
    c.m = c.layout == VX_COL_MAJOR ? N : M;
    c.n = c.layout == VX_COL_MAJOR ? M : N;
    return c;
}

static void forced_tile(vx_isa isa, vx_path path)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    vx_set_num_threads(1);
    int idx = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr;
        for (int m = 1; m <= set->families[f].mr_max; m++) {
            vx_plan_set_override(&(vx_gemm_plan){ .path = path, .nr = nr, .mr = m });
            char tag[128];
            snprintf(tag, sizeof tag, "isa=%s forced path=%s nr=%d mr=%d (1 thread)",
                     vt_isa_name(isa), path_name(path), nr, m);
            /* one tile, one tile + 1 row, two tiles + an (m-1)-row edge */
            int64_t Ms[3] = {m, m + 1, 3 * m - 1};
            /* full panel, two panels, ragged < nr, ragged > 2 nr */
            int64_t Ns[4] = {nr, 2 * nr, nr / 2 + 1, 2 * nr + 3};
            for (int a = 0; a < 3; a++) {
                if (a == 2 && m <= 2)
                    continue;
                for (int b = 0; b < 4; b++, idx++) {
                    vt_case c = canonical_case(path, idx, Ms[a], Ns[b], idx % 2 ? 19 : 1);
                    c.tag = tag;
                    vt_check(&c);
                }
            }
        }
    }
    vx_plan_set_override(NULL);
}

VT_ISA_TEST(forced_tile, packed, TMO) { forced_tile(vt_isa, VX_PATH_PACKED); }

/* A transposed B on packed plans is copied panel by panel as the first row
 * block reaches each panel (gemm.c, b_by_panel), and the later row blocks
 * read the panels where the first left them: several row blocks (mc of two
 * tiles), k blocks (the last short) and column blocks (the last panel
 * ragged), on one thread and on a 1 x 2 and a 2 x 1 grid, NT and TT,
 * against the float64 reference, with ldb padded and beta = 0 over NaN. */
VT_ISA_TEST(forced_tile, packed_transposed_b_in_blocks, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    static const int grids[][2] = { { 1, 1 }, { 1, 2 }, { 2, 1 } };
    int idx = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr, mr = set->families[f].mr_max;
        for (int g = 0; g < 3; g++, idx++) {
            const int tm = grids[g][0], tn = grids[g][1];
            const vx_gemm_plan plan = { .path = VX_PATH_PACKED, .isa = vt_isa, .mr = mr, .nr = nr, .kc = 96,
                                        .mc = 2 * mr, .nc = 2 * nr, .threads_m = tm, .threads_n = tn,
                                        .threads = tm * tn };
            vx_set_num_threads(tm * tn);
            vx_plan_set_override(&plan);
            char tag[160];
            snprintf(tag, sizeof tag, "isa=%s packed %dx%d, B transposed, mc %d kc 96 nc %d, grid %dx%d",
                     vt_isa_name(vt_isa), mr, nr, 2 * mr, 2 * nr, tm, tn);
            vt_case c = vt_case_make(5 * mr + 3, 5 * nr + nr / 2 + 1, 250);
            c.tb = VX_TRANS;
            c.ta = idx % 2 ? VX_TRANS : VX_NO_TRANS;
            c.ldb_pad = 7;
            c.beta = 0.0f;
            c.cinit = VT_C_NAN;
            c.alpha = idx % 3 ? 1.0f : -0.5f;
            c.seed = 4400 + (uint64_t)idx;
            c.tag = tag;
            vt_check(&c);
        }
    }
    vx_plan_set_override(NULL);
    vx_set_num_threads(0);
}
VT_ISA_TEST(forced_tile, pack_b, TMO) { forced_tile(vt_isa, VX_PATH_PACK_B); }
VT_ISA_TEST(forced_tile, direct, TMO) { forced_tile(vt_isa, VX_PATH_DIRECT); }

/* Plans whose row tiles fetch the next panel of B into L2 (gemm.c,
 * next_panel_fetch: AVX-512 tiles of two vectors a row or more, over k
 * blocks of B larger than half of L2): right against the float64
 * reference, and bit for bit what the same plan computes without the
 * fetches. Packed plans in one row block (the next k block's and column
 * block's first panels fetched too) and in several, pack-B plans, and
 * direct plans with four row tiles or more (B packed on read); B's k
 * blocks of 2.2-2.8 MB, beyond half of any L2 up to 4 MB.
 *
 * either_way_case: the plan right against the float64 reference (with the
 * driver's setting as it stands), and bit for bit the same C with the
 * setting `set` at `on` and at `off` (the same arithmetic, other memory
 * traffic). */
static void either_way_case(void (*set)(int), int on, int off, const char *what, const vx_gemm_plan *plan,
                            int64_t m, int64_t n, int64_t k, int64_t ldb_pad, float beta, uint64_t seed,
                            const char *tag)
{
    vx_set_num_threads(plan->threads);
    vx_plan_set_override(plan);
    vt_case c = vt_case_make(m, n, k);
    c.seed = seed;
    c.beta = beta;
    c.alpha = seed % 2 ? -0.5f : 1.0f;
    c.cinit = beta == 0.0f ? VT_C_NAN : VT_C_RANDOM;
    c.ldb_pad = ldb_pad;
    c.tag = tag;
    vt_check(&c);

    const int64_t ldb = n + ldb_pad;
    vt_rng rng;
    vt_rng_seed(&rng, seed);
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * ldb));
    float *c_on = malloc(sizeof(float) * (size_t)(m * n)), *c_off = malloc(sizeof(float) * (size_t)(m * n));
    cr_assert(a && b && c_on && c_off, "out of memory: %s", tag);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < k * ldb; i++)
        b[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < m * n; i++)
        c_on[i] = c_off[i] = vt_rng_float(&rng);
    set(on); /* whatever the tune found on this machine */
    cr_assert_eq(dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, k, c.alpha, a, k, b, ldb, beta, c_on, n),
                 VX_OK, "%s", tag);
    set(off);
    cr_assert_eq(dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, k, c.alpha, a, k, b, ldb, beta, c_off, n),
                 VX_OK, "%s", tag);
    set(1);
    for (int64_t i = 0; i < m * n; i++)
        cr_assert(memcmp(&c_on[i], &c_off[i], sizeof(float)) == 0, "C[%lld][%lld] %.9g with %s, %.9g without: %s",
                  (long long)(i / n), (long long)(i % n), (double)c_on[i], what, (double)c_off[i], tag);
    free(a);
    free(b);
    free(c_on);
    free(c_off);
    vx_plan_set_override(NULL);
}

Test(fetch_next, same_result_with_and_without, .timeout = TMO)
{
    if (!vt_cpu_has(VX_ISA_AVX512))
        cr_skip_test("this CPU (%s) lacks avx512: the fetching plans run on AVX-512 only", vx_hw()->cpu_model);
    const vx_ukernel_set *set = vx_ukernels(VX_ISA_AVX512);
    uint64_t seed = 9700;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr, mr = set->families[f].mr_max;
        if (nr < 2 * set->vec_floats)
            continue;
        char tag[160];
        /* packed, one row block, one thread: 3 k blocks (the last short),
         * the last panel ragged; then two column cells, two threads */
        const vx_gemm_plan one = { .path = VX_PATH_PACKED, .isa = VX_ISA_AVX512, .mr = mr, .nr = nr, .kc = 300,
                                   .nc = 1024, .threads_m = 1, .threads_n = 1, .threads = 1 };
        snprintf(tag, sizeof tag, "fetch next: packed %dx%d, one row block, kc 300, nc 1024", mr, nr);
        either_way_case(vx_gemm_set_fetch_next, 2, 0, "the fetches", &one,
                4 * mr + 3, 2 * 1024 + nr / 2 + 1, 700, 0, 0.0f, seed++, tag);
        const vx_gemm_plan two = { .path = VX_PATH_PACKED, .isa = VX_ISA_AVX512, .mr = mr, .nr = nr, .kc = 500,
                                   .nc = 1408, .threads_m = 1, .threads_n = 2, .threads = 2 };
        snprintf(tag, sizeof tag, "fetch next: packed %dx%d, 1 x 2, kc 500, ldb + 5", mr, nr);
        either_way_case(vx_gemm_set_fetch_next, 2, 0, "the fetches", &two,
                3 * mr + 1, 2 * 1400 + 7, 520, 5, 0.3f, seed++, tag);
        /* several row blocks (A's block past L2 would also do): mc = 2 tiles */
        const vx_gemm_plan rows = { .path = VX_PATH_PACKED, .isa = VX_ISA_AVX512, .mr = mr, .nr = nr, .kc = 700,
                                    .mc = 2 * mr, .nc = 1024, .threads_m = 1, .threads_n = 1, .threads = 1 };
        snprintf(tag, sizeof tag, "fetch next: packed %dx%d, row blocks of %d", mr, nr, 2 * mr);
        either_way_case(vx_gemm_set_fetch_next, 2, 0, "the fetches", &rows,
                7 * mr + 2, 1000 + 3, 700, 0, 1.0f, seed++, tag);
        /* pack-B and direct: B packed on read by the first row tile */
        const vx_gemm_plan pb = { .path = VX_PATH_PACK_B, .isa = VX_ISA_AVX512, .mr = mr, .nr = nr, .kc = 700,
                                  .threads_m = 1, .threads_n = 1, .threads = 1 };
        snprintf(tag, sizeof tag, "fetch next: pack_b %dx%d", mr, nr);
        either_way_case(vx_gemm_set_fetch_next, 2, 0, "the fetches", &pb,
                5 * mr + 1, 1000 + 9, 700, 0, 0.0f, seed++, tag);
        const vx_gemm_plan dir = { .path = VX_PATH_DIRECT, .isa = VX_ISA_AVX512, .mr = mr, .nr = nr, .kc = 350,
                                   .threads_m = 1, .threads_n = 1, .threads = 1 };
        snprintf(tag, sizeof tag, "fetch next: direct %dx%d, kc 350", mr, nr);
        vx_gemm_set_pack_on_read(2); /* rows closer than a page: packed on read whatever the tune found */
        either_way_case(vx_gemm_set_fetch_next, 2, 0, "the fetches", &dir,
                6 * mr - 1, 1000 + 1, 700, 0, 0.3f, seed++, tag);
        vx_gemm_set_pack_on_read(1);
    }
    vx_set_num_threads(0);
}

/* Direct plans of four row tiles or more pack each B panel as the first
 * tile reads it, or, where the tune found that it does not pay for rows
 * closer than a page, read B in place in every tile (gemm.c,
 * packs_on_read): the same C either way, right against the float64
 * reference, for rows closer than a page (ldb 700 + 3) and a page or
 * more apart (1024, 2304 + 5), one and two threads, ragged panels, k
 * blocks with a short last one, beta = 0 over NaN and beta = 0.3. */
static void pack_on_read_both_ways(vx_isa isa)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    uint64_t seed = 9900;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr, mr = set->families[f].mr_max;
        char tag[160];
        const vx_gemm_plan one = { .path = VX_PATH_DIRECT, .isa = isa, .mr = mr, .nr = nr, .kc = 300,
                                   .threads_m = 1, .threads_n = 1, .threads = 1 };
        const vx_gemm_plan two = { .path = VX_PATH_DIRECT, .isa = isa, .mr = mr, .nr = nr, .kc = 256,
                                   .threads_m = 1, .threads_n = 2, .threads = 2 };
        snprintf(tag, sizeof tag, "pack on read: %s direct %dx%d, near rows, kc 300", set->name, mr, nr);
        either_way_case(vx_gemm_set_pack_on_read, 2, 0, "B packed on read", &one, 5 * mr + 2, 700, 700, 3, 0.0f,
                        seed++, tag);
        snprintf(tag, sizeof tag, "pack on read: %s direct %dx%d, near rows, 1 x 2", set->name, mr, nr);
        either_way_case(vx_gemm_set_pack_on_read, 2, 0, "B packed on read", &two, 4 * mr, 2 * nr + nr / 2 + 1, 600,
                        0, 0.3f, seed++, tag);
        snprintf(tag, sizeof tag, "pack on read: %s direct %dx%d, rows a page apart", set->name, mr, nr);
        either_way_case(vx_gemm_set_pack_on_read, 2, 0, "B packed on read", &one, 4 * mr + 1, 1024, 650, 0, 0.3f,
                        seed++, tag);
        snprintf(tag, sizeof tag, "pack on read: %s direct %dx%d, rows 9 KiB apart, 1 x 2", set->name, mr, nr);
        either_way_case(vx_gemm_set_pack_on_read, 2, 0, "B packed on read", &two, 6 * mr - 1, 2304, 520, 5, 0.0f,
                        seed++, tag);
    }
    vx_set_num_threads(0);
}

VT_ISA_TEST(pack_on_read, same_result_either_way, TMO) { pack_on_read_both_ways(vt_isa); }

/* B's rows a multiple of 4 KiB apart (ldb 1024, 2048, 3072 floats) fall in
 * one L1 set each, and the kernels reading them in place fetch into L2
 * (gemm.c, b_rows_alias_in_l1); ldb 1000 and 2304 do not. The direct path
 * reads B so, and the pack-B and packed paths' first row tile packs B's
 * panels as it reads them. Through dyn_gemm, on one and two threads, one
 * row tile and several (the packing kernels then run too), ragged n,
 * beta = 0 over NaN and beta = 0.3, k over several k blocks. */
static void b_rows_far_apart(vx_isa isa, vx_path path)
{
    static const int64_t ldbs[] = { 1024, 2048, 3072, 1000, 2304 };
    static const int64_t ms[] = { 1, 7, 16, 61 };
    const vx_ukernel_set *set = vx_ukernels(isa);
    const int f = set->nfamilies > 1 ? 1 : 0;
    int idx = 0;
    for (int threads = 1; threads <= 2; threads++) {
        vx_set_num_threads(threads);
        for (int l = 0; l < 5; l++)
            for (int q = 0; q < 4; q++, idx++) {
                vx_plan_set_override(&(vx_gemm_plan){ .path = path, .nr = set->families[f].nr,
                                                       .mr = set->families[f].mr_max, .kc = 48, .threads_m = 1,
                                                       .threads_n = threads, .threads = threads });
                const int64_t n = 3 * set->families[f].nr + 5;
                vt_case c = vt_case_make(ms[q], n, 131);
                c.ldb_pad = ldbs[l] - n;
                c.seed = 4000u + (uint64_t)idx;
                c.beta = idx % 2 ? 0.3f : 0.0f;
                if (c.beta == 0.0f)
                    c.cinit = VT_C_NAN;
                char tag[128];
                snprintf(tag, sizeof tag, "isa=%s forced %s, ldb=%lld, %d thread(s)", vt_isa_name(isa),
                         path_name(path), (long long)ldbs[l], threads);
                c.tag = tag;
                vt_check(&c);
            }
    }
    vx_plan_set_override(NULL);
}

VT_ISA_TEST(forced_tile, direct_b_rows_far_apart, TMO) { b_rows_far_apart(vt_isa, VX_PATH_DIRECT); }
VT_ISA_TEST(forced_tile, pack_b_b_rows_far_apart, TMO) { b_rows_far_apart(vt_isa, VX_PATH_PACK_B); }
VT_ISA_TEST(forced_tile, packed_b_rows_far_apart, TMO) { b_rows_far_apart(vt_isa, VX_PATH_PACKED); }

/* ------------------------------------------------------------------ */
/* Tiny forced L1 blocks: many m/n/k blocks on small matrices          */
/* ------------------------------------------------------------------ */

VT_ISA_TEST(forced_blocking, small_blocks, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    vx_set_num_threads(1);
    int idx = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr, mrx = set->families[f].mr_max;
        struct { int mr; int64_t mcx, kc, ncx; } cfg[] = {
            {mrx, 2, 5, 2},                      /* mc = 2 mr, kc = 5, nc = 2 nr */
            {mrx > 1 ? mrx - 1 : 1, 1, 1, 1},    /* one tile per block, kc = 1 */
            {1, 3, 7, 1},
        };
        for (int g = 0; g < 3; g++) {
            int mr = cfg[g].mr;
            int64_t mc = cfg[g].mcx * mr, kc = cfg[g].kc, nc = cfg[g].ncx * nr;
            vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_PACKED, .nr = nr, .mr = mr, .mc = mc, .kc = kc,
                                                   .nc = nc });
            char tag[160];
            snprintf(tag, sizeof tag,
                     "isa=%s forced packed nr=%d mr=%d mc=%lld kc=%lld nc=%lld (1 thread)",
                     vt_isa_name(vt_isa), nr, mr, (long long)mc, (long long)kc, (long long)nc);
            /* ragged numbers of m, n and k blocks; k = kc and k < kc too;
             * fewer rows than the tile (the first row tile, which packs
             * B's panels as it reads them, is then a short one: a packed
             * A panel of fewer than mr rows, or A's rows in place) */
            int64_t shapes[][3] = {
                {2 * mc + 3, 2 * nc + nr / 2 + 1, 3 * kc + 2},
                {mc, nc, kc},
                {mc + 1, nc + 1, kc + 1},
                {mr, 3 * nc, 4 * kc},
                {mr > 1 ? mr - 1 : 1, nc + nr / 2 + 1, 2 * kc + 1},
            };
            for (int s = 0; s < 5; s++)
                for (int combo = 0; combo < 8; combo++, idx++) {
                    vt_case c = packed_combo_case(idx, combo, shapes[s][0], shapes[s][1], shapes[s][2]);
                    c.tag = tag;
                    vt_check(&c);
                }
        }
    }
    vx_plan_set_override(NULL);
}

/* The packed path reads A's block in place for tiles of at most
 * VX_PACKED_A_IN_PLACE_MAX_ROWS rows when k >= VX_PACKED_A_IN_PLACE_MIN_K
 * (gemm.c, reads_a_in_place) and packs B's panels in its first row tile
 * (packs_b_on_read): several row, column and k blocks, a first row block
 * shorter than the tile, A's rows a multiple of 4 KiB apart (1024 floats:
 * tiles taller than the L1 holds copy A) and not, on one and two threads,
 * every layout and transpose (a transposed A is copied, a transposed B
 * copied first). */
VT_ISA_TEST(forced_blocking, packed_a_in_place_over_blocks, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    int idx = 0;
    /* A read in place wherever the rows allow, then copied always
     * (vx_gemm_set_a_in_place) */
    for (int way = 0; way < 2; way++)
    for (int threads = 1; threads <= 2; threads++) {
        vx_gemm_set_a_in_place(!way);
        vx_set_num_threads(threads);
        for (int f = 0; f < set->nfamilies; f++) {
            const int nr = set->families[f].nr;
            int mr = set->families[f].mr_max;
            mr = mr > VX_PACKED_A_IN_PLACE_MAX_ROWS ? VX_PACKED_A_IN_PLACE_MAX_ROWS : mr;
            const int64_t kc = 64, mc = 2 * mr, nc = 2 * nr;
            vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_PACKED, .nr = nr, .mr = mr, .mc = mc, .kc = kc,
                                                   .nc = nc, .threads_m = threads, .threads_n = 1,
                                                   .threads = threads });
            char tag[160];
            snprintf(tag, sizeof tag, "isa=%s forced packed nr=%d mr=%d mc=%lld kc=%lld nc=%lld, %d thread(s), A %s",
                     vt_isa_name(vt_isa), nr, mr, (long long)mc, (long long)kc, (long long)nc, threads,
                     way ? "copied" : "in place where its rows allow");
            const int64_t k = VX_PACKED_A_IN_PLACE_MIN_K + 3;
            const int64_t shapes[][3] = {
                { 2 * mc + 3, 2 * nc + nr / 2 + 1, k },
                { mr > 1 ? mr - 1 : 1, nc + 3, k + kc },
                { mc + 1, nr, 2 * k },
            };
            for (int sh = 0; sh < 3; sh++)
                for (int combo = 0; combo < 8; combo++, idx++) {
                    vt_case c = packed_combo_case(idx, combo, shapes[sh][0], shapes[sh][1], shapes[sh][2]);
                    c.lda_pad = idx % 3 == 0 ? 1024 - c.k : idx % 3 == 1 ? 5 : 0;
                    if (c.lda_pad < 0)
                        c.lda_pad = 5;
                    c.tag = tag;
                    vt_check(&c);
                }
        }
    }
    vx_gemm_set_a_in_place(1);
    vx_plan_set_override(NULL);
}

/* The same packed plan computes C bit for bit alike whether its tiles read
 * A's rows in place or from a copied block (the same FMAs in the same
 * order): every family's tallest tile A may be read in place with (up to
 * VX_PACKED_A_IN_PLACE_MAX_ROWS), one and two threads, beta = 0 over the
 * same C and beta = 0.3, several row, column and k blocks. */
VT_ISA_TEST(forced_blocking, packed_a_in_place_or_copied_alike, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    uint64_t seed = 9800;
    for (int f = 0; f < set->nfamilies; f++)
        for (int threads = 1; threads <= 2; threads++) {
            const int nr = set->families[f].nr;
            const int mr = set->families[f].mr_max > VX_PACKED_A_IN_PLACE_MAX_ROWS ? VX_PACKED_A_IN_PLACE_MAX_ROWS
                                                                                 : set->families[f].mr_max;
            const vx_gemm_plan plan = { .path = VX_PATH_PACKED, .isa = vt_isa, .mr = mr, .nr = nr, .kc = 200,
                                        .mc = 3 * mr, .nc = 4 * nr, .threads_m = 1, .threads_n = threads,
                                        .threads = threads };
            vx_set_num_threads(threads);
            vx_plan_set_override(&plan);
            const int64_t m = 7 * mr + 2, n = 9 * nr + 3, k = 2 * 200 + 37;
            const float beta = threads == 1 ? 0.0f : 0.3f;
            vt_rng rng;
            vt_rng_seed(&rng, seed++);
            float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
            float *c0 = malloc(sizeof(float) * (size_t)(m * n)), *c1 = malloc(sizeof(float) * (size_t)(m * n));
            cr_assert(a && b && c0 && c1, "out of memory");
            for (int64_t i = 0; i < m * k; i++)
                a[i] = vt_rng_float(&rng);
            for (int64_t i = 0; i < k * n; i++)
                b[i] = vt_rng_float(&rng);
            for (int64_t i = 0; i < m * n; i++)
                c0[i] = c1[i] = vt_rng_float(&rng);
            vx_gemm_set_a_in_place(1);
            cr_assert_eq(dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, k, 0.75f, a, k, b, n, beta, c0, n),
                         VX_OK);
            vx_gemm_set_a_in_place(0);
            cr_assert_eq(dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, m, n, k, 0.75f, a, k, b, n, beta, c1, n),
                         VX_OK);
            vx_gemm_set_a_in_place(1);
            for (int64_t i = 0; i < m * n; i++)
                cr_assert(memcmp(&c0[i], &c1[i], sizeof(float)) == 0,
                          "%s packed %dx%d, %d thread(s), %lldx%lldx%lld: C[%lld][%lld] %.9g with A in place, "
                          "%.9g copied",
                          vt_isa_name(vt_isa), mr, nr, threads, (long long)m, (long long)n, (long long)k,
                          (long long)(i / n), (long long)(i % n), (double)c0[i], (double)c1[i]);
            free(a);
            free(b);
            free(c0);
            free(c1);
        }
    vx_set_num_threads(0);
    vx_plan_set_override(NULL);
}

/* The direct path on AVX2 copies the partial last column panel of every k
 * block once three or more row tiles read it (gemm.c, copies_edge_panel),
 * and reads it masked otherwise: ragged widths over several k blocks with
 * three row tiles and with two, on one thread and on a 1 x 2 grid (the
 * edge then lies in the second cell), with beta = 0 over NaN and
 * beta = 0.3 accumulating across blocks. */
VT_ISA_TEST(forced_blocking, direct_ragged_edge_over_k_blocks, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    int idx = 0;
    for (int threads = 1; threads <= 2; threads++) {
        vx_set_num_threads(threads);
        for (int f = 0; f < set->nfamilies; f++) {
            const int nr = set->families[f].nr, mr = set->families[f].mr_max;
            for (int kc = 5; kc <= 16; kc += 11) {
                vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_DIRECT, .nr = nr, .mr = mr, .kc = kc,
                                                       .threads_m = 1, .threads_n = threads, .threads = threads });
                char tag[160];
                snprintf(tag, sizeof tag, "isa=%s forced direct nr=%d mr=%d kc=%d grid 1x%d", vt_isa_name(vt_isa),
                         nr, mr, kc, threads);
                const int64_t shapes[][3] = {
                    {2 * mr + 1, 2 * nr + nr / 2 + 1, 3 * kc + 2},
                    {mr, nr - 1, 4 * kc},
                    {1, 3 * nr + 1, kc + 1},
                    {mr + 1, nr + nr / 2 + 3, 2 * kc + 1},
                };
                for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++, idx++) {
                    vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
                    c.seed = 4242u + (uint64_t)idx;
                    c.beta = idx % 2 ? 0.3f : 0.0f;
                    if (c.beta == 0.0f)
                        c.cinit = VT_C_NAN;
                    c.alpha = idx % 3 ? 1.0f : -0.5f;
                    c.ldc_pad = idx % 2 ? 5 : 0;
                    c.ldb_pad = idx % 3 == 1 ? 7 : 0;
                    c.tag = tag;
                    vt_check(&c);
                }
            }
        }
    }
    vx_plan_set_override(NULL);
    vx_set_num_threads(1);
}

/* ------------------------------------------------------------------ */
/* Planner invariants                                                  */
/* ------------------------------------------------------------------ */

static void check_plan(vx_isa isa)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    static const int64_t dims[] = {1, 2, 7, 16, 31, 64, 100, 257, 1000, 4096, 100000};
    static const int threads[] = {1, 2, 3, 4, 16, 64};
    const int nd = (int)(sizeof dims / sizeof dims[0]);
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < nd; j++)
            for (int l = 0; l < nd; l += 2)
                for (int t = 0; t < 6; t++)
                    for (int us = 0; us < 4; us++) {
                        vx_gemm_shape sh = { .m = dims[i], .n = dims[j], .k = dims[l],
                                             .b_unit_stride = us & 1, .a_unit_stride = (us >> 1) & 1 };
                        vx_gemm_plan p;
                        memset(&p, 0x5A, sizeof p);
                        vx_plan_gemm(&sh, isa, threads[t], &p);
                        char d[200], pd[128];
                        vx_plan_describe(&p, pd, sizeof pd);
                        snprintf(d, sizeof d,
                                 "vx_plan_gemm(%s, m=%lld n=%lld k=%lld b_unit=%d a_unit=%d, "
                                 "threads=%d) = [%s]",
                                 vt_isa_name(isa), (long long)sh.m, (long long)sh.n,
                                 (long long)sh.k, sh.b_unit_stride, sh.a_unit_stride,
                                 threads[t], pd);
                        cr_assert_eq(p.isa, isa, "isa field wrong: %s", d);
                        cr_assert(p.path == VX_PATH_PACKED || p.path == VX_PATH_PACK_B ||
                                      p.path == VX_PATH_DIRECT ||
                                      (p.path == VX_PATH_GEMV &&
                                       (sh.m == 1 || sh.n == 1 ||
                                        (sh.m <= VX_GEMV_ROWS_MAX && sh.b_unit_stride))) ||
                                      (p.path == VX_PATH_DOT && sh.a_unit_stride && !sh.b_unit_stride &&
                                       sh.m >= 2 && sh.n >= 2) ||
                                      (p.path == VX_PATH_RESIDENT && sh.a_unit_stride && sh.b_unit_stride &&
                                       sh.m >= 2 && sh.n >= 2 &&
                                       vx_resident_for(vx_resident_kernels(isa), sh.n, sh.k) != NULL),
                                  "path %d: %s", p.path, d);
                        /* A GEMV, dot or resident plan carries the best GEMM plan to fall back on. */
                        const int carries =
                            p.path == VX_PATH_GEMV || p.path == VX_PATH_DOT || p.path == VX_PATH_RESIDENT;
                        const vx_path gemm_path = carries ? p.fallback : p.path;
                        cr_assert(gemm_path == VX_PATH_PACKED || gemm_path == VX_PATH_PACK_B ||
                                      gemm_path == VX_PATH_DIRECT,
                                  "fallback path %d: %s", gemm_path, d);
                        cr_assert(gemm_path != VX_PATH_DIRECT || sh.b_unit_stride,
                                  "direct path without unit-stride B: %s", d);
                        cr_assert(p.family >= 0 && p.family < set->nfamilies, "family %d: %s",
                                  p.family, d);
                        const vx_ukernel_family *fam = &set->families[p.family];
                        cr_assert_eq(p.nr, fam->nr, "nr %d != family nr %d: %s", p.nr, fam->nr,
                                     d);
                        cr_assert(p.mr >= 1 && p.mr <= fam->mr_max, "mr %d (mr_max %d): %s",
                                  p.mr, fam->mr_max, d);
                        if (gemm_path == VX_PATH_PACKED)
                            cr_assert(p.mc > 0 && p.kc > 0 && p.nc > 0,
                                      "packed path without blocks: %s", d);
                        /* the dot plan's mc and kc are its own blocks (cpu/dot.h) */
                        const int mr_blocks = p.path == VX_PATH_DOT ? vx_dot_kernels(isa)->mr : p.mr;
                        cr_assert(p.mc >= 0 && p.mc % mr_blocks == 0, "mc %lld %% mr %d != 0: %s",
                                  (long long)p.mc, mr_blocks, d);
                        cr_assert(p.nc >= 0 && p.nc % p.nr == 0, "nc %lld %% nr %d != 0: %s",
                                  (long long)p.nc, p.nr, d);
                        cr_assert(p.kc >= 0, "kc %lld: %s", (long long)p.kc, d);
                        cr_assert(p.threads >= 1 && p.threads <= threads[t],
                                  "plan runs %d threads for budget %d: %s", p.threads, threads[t], d);
                        cr_assert(p.threads_m >= 1 && p.threads_n >= 1 &&
                                      p.threads_m * p.threads_n <= threads[t],
                                  "thread grid %dx%d for budget %d: %s", p.threads_m,
                                  p.threads_n, threads[t], d);
                    }
}

Test(planner, invariants_avx2, .timeout = TMO) { check_plan(VX_ISA_AVX2); }
Test(planner, invariants_avx512, .timeout = TMO) { check_plan(VX_ISA_AVX512); }

/* dyn_gemm's lookup for plain shapes (vx_plan_gemm_plain) returns what
 * vx_plan_gemm does for the same shape, with and without a warm pool, on a
 * cold cache and on a hit. */
Test(planner, plain_lookup_matches_the_shape_lookup, .timeout = TMO)
{
    static const int64_t shapes[][3] = {{1, 17, 4}, {7, 15, 6}, {2, 1024, 512}, {300, 200, 100}, {4096, 1, 64}};
    for (int isa = VX_ISA_AVX2; isa <= VX_ISA_AVX512; isa++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            for (int v = 0; v < 16; v++) {
                const int b_unit = v & 1, a_unit = (v >> 1) & 1, warm = (v >> 2) & 1, wide = (v >> 3) & 1;
                const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
                /* leading dimensions: none given, or wider than dense (A's rows 4 KiB apart) */
                const int64_t a_ld = wide ? 1024 + (a_unit ? k : m) : 0, b_ld = wide ? 3 + (b_unit ? n : k) : 0,
                              c_ld = wide ? n + 17 : 0;
                const vx_gemm_shape sh = { .m = m, .n = n, .k = k, .b_unit_stride = b_unit, .a_unit_stride = a_unit,
                                           .pool_warm = warm, .a_ld = a_ld, .b_ld = b_ld, .c_ld = c_ld };
                for (int round = 0; round < 2; round++) { /* a miss, then a hit */
                    if (round == 0)
                        vx_plan_cache_clear();
                    vx_gemm_plan a, b;
                    memset(&a, 0x5A, sizeof a);
                    memset(&b, 0x3C, sizeof b);
                    vx_plan_gemm_plain(sh.m, sh.n, sh.k, b_unit, a_unit, a_ld, b_ld, c_ld, warm, (vx_isa)isa, 2, &a);
                    vx_plan_gemm(&sh, (vx_isa)isa, 2, &b);
                    cr_assert(vx_plan_same(&a, &b) && a.isa == b.isa && a.threads == b.threads,
                              "isa %d %lldx%lldx%lld b_unit %d a_unit %d warm %d wide %d round %d: plain and "
                              "shape lookups differ", isa, (long long)sh.m, (long long)sh.n, (long long)sh.k, b_unit,
                              a_unit, warm, wide, round);
                }
            }
}

Test(planner, describe_truncates)
{
    vx_gemm_shape sh = { .m = 500, .n = 600, .k = 700, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_gemm_plan p;
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &p);
    char big[256], small[8];
    memset(big, 'x', sizeof big);
    memset(small, 'x', sizeof small);
    vx_plan_describe(&p, big, sizeof big);
    vx_plan_describe(&p, small, sizeof small);
    cr_assert(memchr(big, 0, sizeof big) != NULL && strlen(big) > 0,
              "vx_plan_describe wrote no string");
    cr_assert(memchr(small, 0, sizeof small) != NULL,
              "vx_plan_describe(len=8) did not NUL-terminate within 8 bytes");
    cr_assert(strncmp(big, small, strlen(small)) == 0, "truncated description \"%s\" is not a "
              "prefix of \"%s\"", small, big);
}

static int plan_eq(const vx_gemm_plan *a, const vx_gemm_plan *b)
{
    return a->isa == b->isa && a->path == b->path && a->family == b->family && a->mr == b->mr &&
           a->nr == b->nr && a->mc == b->mc && a->kc == b->kc && a->nc == b->nc &&
           a->threads_m == b->threads_m && a->threads_n == b->threads_n && a->threads == b->threads;
}

/* Plans are memoized per thread: a repeated shape must still see a changed
 * thread budget, an override set after it was planned, and the override's
 * removal. */
Test(planner, memo_follows_budget_and_override)
{
    const vx_ukernel_set *set = vx_ukernels(VX_ISA_AVX2);
    vx_gemm_shape sh = { .m = 1500, .n = 1400, .k = 700, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_gemm_plan p2, p1, again, forced, after;
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &p2);
    vx_plan_gemm(&sh, VX_ISA_AVX2, 1, &p1);
    cr_assert(p2.threads_m * p2.threads_n == 2 && p2.threads == 2,
              "1500x1400x700 with 2 threads planned a %dx%d grid on %d threads", p2.threads_m,
              p2.threads_n, p2.threads);
    cr_assert(p1.threads_m * p1.threads_n == 1 && p1.threads == 1,
              "the same shape with 1 thread reused the 2-thread plan (%dx%d, %d threads)",
              p1.threads_m, p1.threads_n, p1.threads);
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &again);
    cr_assert(plan_eq(&again, &p2), "a repeated shape got a different plan");

    const int other_nr = set->families[0].nr == p2.nr ? set->families[1].nr : set->families[0].nr;
    vx_plan_set_override(&(vx_gemm_plan){ .nr = other_nr });
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &forced);
    vx_plan_set_override(NULL);
    cr_assert_eq(forced.nr, other_nr, "an override set after the shape was planned was ignored "
                 "(nr %d, wanted %d)", forced.nr, other_nr);
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &after);
    cr_assert(plan_eq(&after, &p2), "clearing the override did not restore the plan");
}

/* The override replaces exactly the non-zero fields it names. */
Test(planner, override_applies)
{
    const vx_ukernel_set *set = vx_ukernels(VX_ISA_AVX2);
    const vx_ukernel_family *fam = &set->families[set->nfamilies - 1];
    vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_PACKED, .nr = fam->nr, .mr = 1, .mc = 3, .kc = 5,
                                           .nc = 2 * fam->nr, .threads_m = 2, .threads_n = 1 });
    vx_gemm_shape sh = { .m = 300, .n = 300, .k = 300, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_gemm_plan p;
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &p);
    char pd[128];
    vx_plan_describe(&p, pd, sizeof pd);
    cr_assert(p.path == VX_PATH_PACKED && p.nr == fam->nr && p.mr == 1 && p.mc == 3 &&
                  p.kc == 5 && p.nc == 2 * fam->nr && p.threads_m == 2 && p.threads_n == 1,
              "override path=packed nr=%d mr=1 mc=3 kc=5 nc=%d t=2x1 not applied: [%s]", fam->nr,
              2 * fam->nr, pd);
    cr_assert_eq(p.family, set->nfamilies - 1, "override nr=%d picked family %d: [%s]", fam->nr,
                 p.family, pd);
    vx_plan_set_override(NULL);
    vx_gemm_plan q;
    vx_plan_gemm(&sh, VX_ISA_AVX2, 2, &q);
    cr_assert(!(q.mr == 1 && q.mc == 3 && q.kc == 5), "override still applied after NULL");
}

/* ------------------------------------------------------------------ */
/* The dot-form kernels (B stored transposed, cpu/dot.h)               */
/* ------------------------------------------------------------------ */

/* One dot kernel call on operands with NaN in every gap (a read past a row
 * shows), C with sentinels around the tile, against a float64 reference;
 * with ep, bias per row and per column and ReLU. */
static void run_dot_kernel(vx_isa isa, int m, int n, int64_t k, float alpha, float beta, int with_ep, uint64_t seed)
{
    const vx_dot_set *D = vx_dot_kernels(isa);
    char desc[200];
    snprintf(desc, sizeof desc, "dot kernel %s m=%d n=%d k=%lld alpha=%g beta=%g ep=%d seed=%llu", vt_isa_name(isa),
             m, n, (long long)k, (double)alpha, (double)beta, with_ep, (unsigned long long)seed);
    vt_rng rng;
    vt_rng_seed(&rng, seed);
    const int64_t a_rs = k + 3, b_rs = k + 5, c_rs = n + 2;
    const int64_t ea = (m - 1) * a_rs + k, eb = (n - 1) * b_rs + k, ec = m * c_rs + 11;
    float *a = malloc(sizeof(float) * (size_t)ea), *b = malloc(sizeof(float) * (size_t)eb);
    float *c = malloc(sizeof(float) * (size_t)ec), *c0 = malloc(sizeof(float) * (size_t)ec);
    for (int64_t i = 0; i < ea; i++)
        a[i] = (i % a_rs) < k ? vt_rng_float(&rng) : NAN;
    for (int64_t i = 0; i < eb; i++)
        b[i] = (i % b_rs) < k ? vt_rng_float(&rng) : NAN;
    vt_fill_sentinel(c, ec);
    static const float specials[3] = { NAN, INFINITY, -INFINITY };
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            c[i * c_rs + j] = beta == 0.0f ? specials[(i + j) % 3] : vt_rng_float(&rng);
    memcpy(c0, c, sizeof(float) * (size_t)ec);
    float bias_row[8], bias_col[8];
    for (int i = 0; i < 8; i++) {
        bias_row[i] = vt_rng_float(&rng);
        bias_col[i] = vt_rng_float(&rng);
    }
    const vx_epilogue ep = { bias_row, bias_col, 1 };
    D->fn[m - 1][n - 1](k, a, a_rs, b, b_rs, c, c_rs, alpha, beta, with_ep ? &ep : NULL);
    for (int64_t pos = 0; pos < ec; pos++)
        if (!(pos / c_rs < m && pos % c_rs < n))
            cr_assert(memcmp(&c[pos], &c0[pos], sizeof(float)) == 0, "C written outside the tile at %lld: %s",
                      (long long)pos, desc);
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (double)a[i * a_rs + p] * (double)b[j * b_rs + p];
            double r = (double)alpha * acc + (beta != 0.0f ? (double)beta * (double)c0[i * c_rs + j] : 0.0);
            if (with_ep) {
                r += (double)bias_row[i] + (double)bias_col[j];
                r = r > 0 ? r : 0;
            }
            ref[i * n + j] = r;
        }
    const double err = vt_rel_err(c, c_rs, 1, ref, m, n);
    cr_assert(err <= VT_TOL, "relative error %.3g: %s", err, desc);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            cr_assert(isfinite(c[i * c_rs + j]), "C[%d][%d] = %g not finite: %s", i, j, (double)c[i * c_rs + j], desc);
    free(ref);
    free(a);
    free(b);
    free(c);
    free(c0);
}

static void all_dot_kernels(vx_isa isa)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU (%s) lacks %s: its kernels cannot run here", vx_hw()->cpu_model, vt_isa_name(isa));
    const vx_dot_set *D = vx_dot_kernels(isa);
    cr_assert(D && D->mr >= 1 && D->nr >= 1 && D->nr <= VX_DOT_NR_MAX && D->vec_floats >= 8, "%s: dot table",
              vt_isa_name(isa));
    cr_assert(D->mr * D->nr + D->mr + 1 <= (isa == VX_ISA_AVX512 ? 32 : 16), "%s: %dx%d dot tile needs %d registers",
              vt_isa_name(isa), D->mr, D->nr, D->mr * D->nr + D->mr + 1);
    /* k: one element, under a vector, a vector +/- 1, several with a tail */
    const int64_t w = D->vec_floats;
    const int64_t ks[] = { 1, 5, w - 1, w, w + 1, 2 * w + 3, 300 };
    static const float betas[] = { 0.0f, 1.0f, 0.3f };
    uint64_t seed = 901;
    for (int m = 1; m <= D->mr; m++)
        for (int n = 1; n <= D->nr; n++) {
            cr_assert(D->fn[m - 1][n - 1] != NULL, "%s dot m=%d n=%d: NULL", vt_isa_name(isa), m, n);
            for (int q = 0; q < 7; q++, seed++)
                run_dot_kernel(isa, m, n, ks[q], q % 2 ? -0.5f : 1.0f, betas[(m + n + q) % 3], q == 3 || q == 6,
                               seed);
        }
}

Test(ukernel, dot_avx2, .timeout = TMO) { all_dot_kernels(VX_ISA_AVX2); }
Test(ukernel, dot_avx512, .timeout = TMO) { all_dot_kernels(VX_ISA_AVX512); }

/* dyn_gemm with the dot path forced: every layout x transpose (those whose
 * canonical A and B^T do not both run along k fall back to the GEMM plan
 * the dot plan carries), edge shapes around the tile, k blocks forced
 * short (several k blocks: beta applies once, C accumulates the rest) and
 * row blocks forced small, on one thread and two, beta = 0 over NaN. */
VT_ISA_TEST(forced_tile, dot, TMO)
{
    const vx_dot_set *D = vx_dot_kernels(vt_isa);
    const int64_t Ms[] = { 2, D->mr - 1, D->mr, D->mr + 1, 13, 49 };
    const int64_t Ns[] = { 2, D->nr - 1, D->nr, D->nr + 1, 2 * D->nr + 1, 65 };
    const int64_t Ks[] = { 1, 17, 300 };
    int idx = 0;
    for (int threads = 1; threads <= 2; threads++) {
        vx_set_num_threads(threads);
        for (int a = 0; a < 6; a++)
            for (int b = 0; b < 6; b++, idx++) {
                const int64_t kc = idx % 3 == 0 ? 0 : idx % 3 == 1 ? D->vec_floats : 100;
                const int64_t mc = idx % 4 == 1 ? D->mr : idx % 4 == 2 ? 2 * D->mr : 0;
                vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_DOT, .kc = kc, .mc = mc, .threads = threads });
                vt_case c = vt_case_make(Ms[a], Ns[b], Ks[idx % 3]);
                /* 1 (row-major NT) and 6 (column-major TN) take the dot form */
                static const int combos[] = { 1, 6, 1, 0, 6, 2, 1, 3, 4, 5, 7 };
                vt_combo(combos[idx % 11], &c.layout, &c.ta, &c.tb);
                c.seed = 7000u + (uint64_t)idx;
                c.beta = idx % 3 == 2 ? 0.3f : 0.0f;
                c.alpha = idx % 2 ? -0.5f : 1.0f;
                if (c.beta == 0.0f)
                    c.cinit = VT_C_NAN;
                c.lda_pad = idx % 5 == 1 ? 7 : 0;
                c.ldb_pad = idx % 5 == 2 ? 9 : 0;
                c.ldc_pad = idx % 5 == 3 ? 3 : 0;
                char tag[160];
                snprintf(tag, sizeof tag, "isa=%s forced dot kc=%lld mc=%lld, %d thread(s)", vt_isa_name(vt_isa),
                         (long long)kc, (long long)mc, threads);
                c.tag = tag;
                vt_check(&c);
            }
    }
    vx_plan_set_override(NULL);
}

/* ------------------------------------------------------------------ */
/* C streamed past the caches (cpu/stream.h; gemm.c, streams_c)        */
/* ------------------------------------------------------------------ */

/* The line writer against memcpy: ranges starting at every offset in a
 * line, fed in pieces of random lengths (1 float up to several lines); the
 * floats around the range keep their sentinels. */
static void stream_writer(vx_isa isa)
{
    if (!vt_cpu_has(isa))
        cr_skip_test("this CPU lacks %s", vt_isa_name(isa));
    enum { PAD = 48, MAXN = 300, TOTAL = PAD + 16 + MAXN + PAD, ALLOC = (TOTAL + 15) / 16 * 16 };
    /* aligned_alloc takes a multiple of the alignment */
    float *buf = aligned_alloc(64, ALLOC * sizeof(float)), *want = malloc(TOTAL * sizeof(float));
    cr_assert(buf && want, "out of memory");
    float src[MAXN];
    vt_rng r;
    vt_rng_seed(&r, 4242u + (unsigned)isa);
    for (int off = 0; off < 16; off++)
        for (int trial = 0; trial < 60; trial++) {
            const int64_t n = trial == 0 ? 1 : trial == 1 ? 16 - off : trial == 2 ? 32 - off
                                                                                  : (int64_t)(vt_rng_next(&r) % MAXN) + 1;
            for (int64_t i = 0; i < n; i++)
                src[i] = vt_rng_float(&r);
            vt_fill_sentinel(buf, TOTAL);
            vt_fill_sentinel(want, TOTAL);
            float *dst = buf + PAD + off; /* PAD is whole lines: dst lies `off` floats into one */
            memcpy(want + PAD + off, src, (size_t)n * sizeof(float));
            vx_stream s;
            vx_stream_begin(&s, dst, isa);
            char pieces[256] = "";
            for (int64_t done = 0; done < n;) {
                int64_t piece = trial % 3 == 0 ? (int64_t)(vt_rng_next(&r) % 5) + 1 : (int64_t)(vt_rng_next(&r) % 70) + 1;
                piece = piece < n - done ? piece : n - done;
                vx_stream_put(&s, src + done, piece);
                done += piece;
                const size_t len = strlen(pieces);
                if (len + 8 < sizeof pieces)
                    snprintf(pieces + len, sizeof pieces - len, " %lld", (long long)piece);
            }
            vx_stream_end(&s);
            vx_stream_fence();
            for (int64_t i = 0; i < TOTAL; i++)
                cr_assert(memcmp(&buf[i], &want[i], sizeof(float)) == 0,
                          "%s: range of %lld floats at line offset %d, pieces%s: float %lld (range index %lld) "
                          "is %g, want %g",
                          vt_isa_name(isa), (long long)n, off, pieces, (long long)i, (long long)(i - PAD - off),
                          buf[i], want[i]);
        }
    free(buf);
    free(want);
}

Test(stream, writer_matches_memcpy_avx2) { stream_writer(VX_ISA_AVX2); }
Test(stream, writer_matches_memcpy_avx512) { stream_writer(VX_ISA_AVX512); }

/* dyn_gemm on in-place plans with streaming forced for every size of C:
 * each family at its tallest and a short tile, pack-B and direct, the grid
 * split by rows and by columns on two threads and one cell on one; rows of
 * C contiguous (whole-row ranges), line-aligned with the column split, or
 * neither (plain stores); n past the stage's width; beta = 0 over NaN. */
VT_ISA_TEST(stream, gemm_with_c_streamed, TMO)
{
    const vx_ukernel_set *set = vx_ukernels(vt_isa);
    static const vx_path paths[] = { VX_PATH_PACK_B, VX_PATH_DIRECT };
    static const int grids[][3] = { { 2, 1, 2 }, { 1, 2, 2 }, { 1, 1, 1 } };
    vx_gemm_set_stream_bytes(0);
    int idx = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        const int nr = set->families[f].nr, mr_max = set->families[f].mr_max;
        const int mrs[] = { mr_max, mr_max > 3 ? 3 : 1 };
        for (int t = 0; t < 2; t++)
            for (int p = 0; p < 2; p++)
                for (int gi = 0; gi < 3; gi++) {
                    const int mr = mrs[t];
                    vx_set_num_threads(grids[gi][2]);
                    vx_plan_set_override(&(vx_gemm_plan){ .path = paths[p], .nr = nr, .mr = mr, .kc = 64,
                                                          .threads_m = grids[gi][0], .threads_n = grids[gi][1],
                                                          .threads = grids[gi][2] });
                    const int64_t Ms[] = { 1, mr + 1, 4 * mr + 3 };
                    const int64_t Ns[] = { 1, 16, nr + 3, 2 * nr, 100 };
                    const int64_t Ks[] = { 1, 16, 37 };
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 5; b++, idx++) {
                            vt_case c = vt_case_make(Ms[a], Ns[b], Ks[idx % 3]);
                            c.seed = 9100u + (uint64_t)idx;
                            c.alpha = idx % 2 ? -0.5f : 1.0f;
                            c.cinit = VT_C_NAN;
                            c.ldc_pad = idx % 4 == 1 ? 3 : idx % 4 == 3 ? 16 : 0;
                            c.lda_pad = idx % 5 == 2 ? 5 : 0;
                            char tag[160];
                            snprintf(tag, sizeof tag, "isa=%s, C streamed: %s %dx%d grid %dx%d, %d thread(s)",
                                     vt_isa_name(vt_isa), path_name(paths[p]), mr, nr, grids[gi][0], grids[gi][1],
                                     grids[gi][2]);
                            c.tag = tag;
                            vt_check(&c);
                        }
                }
        /* wider than the stage (STAGE_COLS = 512): rows in several parts */
        vx_set_num_threads(2);
        vx_plan_set_override(&(vx_gemm_plan){ .path = VX_PATH_PACK_B, .nr = nr, .mr = mr_max, .kc = 64,
                                              .threads_m = 2, .threads_n = 1, .threads = 2 });
        for (int pad = 0; pad <= 16; pad += 16, idx++) {
            vt_case c = vt_case_make(2 * mr_max + 1, 1100 + pad, 5);
            c.seed = 9100u + (uint64_t)idx;
            c.cinit = VT_C_NAN;
            c.ldc_pad = pad ? 0 : 4;
            c.tag = "C streamed, n past the stage";
            vt_check(&c);
        }
    }
    vx_plan_set_override(NULL);
    vx_gemm_set_stream_bytes(-1);
}
