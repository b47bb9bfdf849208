/* The B-resident path (k and n small, all of B in registers; src/cpu/resident.h):
 *  - every generated kernel called directly: each V and k, n from 1 to V
 *    lanes' worth, row counts around the group size, padded strides, alpha
 *    and beta incl. beta = 0 over NaN, against a float64 reference, with
 *    every float past the n valid columns of C left bytewise untouched;
 *  - dyn_gemm forced onto the path (vx_plan_set_override) in every layout
 *    and transpose, one and two threads: the calls the kernels take and
 *    those they cannot (transposed operands, n or k too large) both give
 *    the reference result;
 *  - the streamed stores (C past the caches): every kernel, and dyn_gemm
 *    forced onto the path with C on a line;
 *  - the planner offers the plan only where B fits and ranks it first for
 *    a tall, skinny shape whose A streams from memory, also where C goes
 *    past the caches in whole vectors, and not where it would in part. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "cpu/gemm.h"
#include "cpu/resident.h"
#include "ref.h"
#include "vt_isa.h"

#define TMO 200.0

/* One kernel call of m rows against the float64 reference. */
static void check_kernel(vx_isa isa, int V, int k, int64_t n, int64_t m, float alpha, float beta, uint64_t seed,
                         int stream)
{
    const vx_resident_set *R = vx_resident_kernels(isa);
    const vx_resident_fn fn = R->fn[V - 1][k - 1];
    /* streamed: C's rows padded to whole lines and C on a line, as the
     * kernels' promise asks */
    const int64_t a_rs = k + 3, b_rs = n + 5, c_rs = stream ? (n + 7 + 15) / 16 * 16 : n + 7;
    float *a = malloc(sizeof(float) * (size_t)(m * a_rs));
    float *b = malloc(sizeof(float) * (size_t)(k * b_rs));
    float *c = aligned_alloc(64, sizeof(float) * (size_t)((m * c_rs + 15) / 16 * 16));
    float *c0 = malloc(sizeof(float) * (size_t)(m * c_rs));
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    cr_assert(a && b && c && c0 && ref);
    vt_rng rng;
    vt_rng_seed(&rng, seed);
    for (int64_t i = 0; i < m * a_rs; i++)
        a[i] = vt_rng_float(&rng);
    for (int64_t i = 0; i < k * b_rs; i++)
        b[i] = vt_rng_float(&rng);
    /* C: random inside the matrix (NaN where beta = 0 must not read it),
     * sentinels in every row's padding */
    vt_fill_sentinel(c0, m * c_rs);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c0[i * c_rs + j] = beta == 0.0f ? NAN : vt_rng_float(&rng);
    memcpy(c, c0, sizeof(float) * (size_t)(m * c_rs));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)a[i * a_rs + p] * (double)b[p * b_rs + j];
            ref[i * n + j] = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)c0[i * c_rs + j]);
        }
    fn(m, a, a_rs, b, b_rs, c, c_rs, n, alpha, beta, stream);
    const double err = vt_rel_err(c, c_rs, 1, ref, m, n);
    cr_assert(err <= 1e-5, "%s resident V=%d k=%d: m=%lld n=%lld alpha=%g beta=%g stream=%d: rel err %g",
              vt_isa_name(isa), V, k, (long long)m, (long long)n, alpha, beta, stream, err);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = n; j < c_rs; j++)
            cr_assert(memcmp(&c[i * c_rs + j], &c0[i * c_rs + j], sizeof(float)) == 0,
                      "%s resident V=%d k=%d m=%lld n=%lld: C[%lld][%lld] past n was written", vt_isa_name(isa),
                      V, k, (long long)m, (long long)n, (long long)i, (long long)j);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(ref);
}

VT_ISA_TEST(resident, every_kernel_against_the_reference, TMO)
{
    const vx_resident_set *R = vx_resident_kernels(vt_isa);
    const int w = R->vec_floats;
    static const float ab[][2] = {{1.0f, 0.0f}, {-0.5f, 0.3f}, {0.7f, 1.0f}};
    int cases = 0;
    for (int V = 1; V <= VX_RESIDENT_V_MAX; V++) {
        const int64_t g = R->rows[V - 1];
        const int64_t ms[] = {1, g - 1, g, g + 1, 2 * g + 3, 61};
        const int64_t ns[] = {(V - 1) * w + 1, (V - 1) * w + 2, V * w - 1, V * w};
        cr_assert(R->kmax[V - 1] >= 1 && g >= 1, "%s: V=%d kmax %d rows %lld", vt_isa_name(vt_isa), V,
                  R->kmax[V - 1], (long long)g);
        for (int k = 1; k <= R->kmax[V - 1]; k++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++) {
                    if (ns[ni] < 1 || ms[mi] < 1)
                        continue;
                    const int v = cases++ % 3;
                    check_kernel(vt_isa, V, k, ns[ni], ms[mi], ab[v][0], ab[v][1], 7000u + (uint64_t)cases, 0);
                }
    }
}

/* The streamed stores (beta = 0, whole vectors, rows on lines): every
 * kernel, row counts around the group size, C over NaN, nothing past n
 * written. */
VT_ISA_TEST(resident, every_kernel_streamed_against_the_reference, TMO)
{
    const vx_resident_set *R = vx_resident_kernels(vt_isa);
    const int w = R->vec_floats;
    int cases = 0;
    for (int V = 1; V <= VX_RESIDENT_V_MAX; V++) {
        const int64_t g = R->rows[V - 1];
        const int64_t ms[] = {1, g - 1, g, g + 1, 3 * g + 2, 67};
        for (int k = 1; k <= R->kmax[V - 1]; k++)
            for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
                if (ms[mi] >= 1) {
                    check_kernel(vt_isa, V, k, V * w, ms[mi], cases % 2 ? -0.5f : 1.0f, 0.0f,
                                 7500u + (uint64_t)cases, 1);
                    cases++;
                }
    }
}

/* The table's lookup: a kernel exactly where B's k x V vectors fit. */
VT_ISA_TEST(resident, lookup_fits_the_registers, TMO)
{
    const vx_resident_set *R = vx_resident_kernels(vt_isa);
    const int w = R->vec_floats;
    cr_assert_null(vx_resident_for(R, 0, 4));
    cr_assert_null(vx_resident_for(R, 4, 0));
    cr_assert_null(vx_resident_for(R, VX_RESIDENT_V_MAX * w + 1, 1));
    for (int V = 1; V <= VX_RESIDENT_V_MAX; V++) {
        cr_assert_eq(vx_resident_for(R, V * w, R->kmax[V - 1]), R->fn[V - 1][R->kmax[V - 1] - 1]);
        cr_assert_null(vx_resident_for(R, V * w, R->kmax[V - 1] + 1));
        /* B's vectors, a group's accumulators and a broadcast fit the registers */
        const int regs = vt_isa == VX_ISA_AVX512 ? 32 : 16;
        cr_assert(R->kmax[V - 1] * V + R->rows[V - 1] * V + 1 <= regs, "%s V=%d: kmax %d rows %d",
                  vt_isa_name(vt_isa), V, R->kmax[V - 1], R->rows[V - 1]);
    }
}

/* dyn_gemm forced onto the path: every layout and transpose (those the
 * kernels cannot take run the GEMM plan the resident one carries), shapes
 * around the group size and the 64-row split, k and n at the kernels'
 * limits and past them, padded leading dimensions. */
static void sweep(vx_isa isa, int threads, int streamed)
{
    const vx_resident_set *R = vx_resident_kernels(isa);
    const int w = R->vec_floats;
    const int64_t ms[] = {2, 7, 9, 64, 65, 131, 1001};
    const int64_t ns[] = {2, w - 1, w, w + 3, 2 * w, 2 * w + 1};
    const int64_t ks[] = {1, 3, R->kmax[1], R->kmax[1] + 1, R->kmax[0], R->kmax[0] + 1};
    static const float ab[][2] = {{1.0f, 0.0f}, {-0.5f, 0.3f}, {0.7f, 1.0f}};
    vx_gemm_plan ov;
    memset(&ov, 0, sizeof ov);
    ov.path = VX_PATH_RESIDENT;
    ov.threads = threads;
    vx_plan_set_override(&ov);
    const int saved = vx_get_num_threads();
    vx_set_num_threads(threads);
    if (streamed) /* every C counts as past the caches: the calls that can stream it do */
        vx_gemm_set_stream_bytes(0);
    char tag[64];
    snprintf(tag, sizeof tag, "forced resident, %s, %d thread(s)%s", vt_isa_name(isa), threads,
             streamed ? ", C streamed" : "");
    int cases = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                vt_case c = vt_case_make(ms[mi], ns[ni], ks[ki]);
                /* mostly row-major NN, the form the kernels take; every
                 * eighth case another layout or transpose */
                vt_combo(cases % 8 == 7 ? (int)(cases / 8) % 8 : 0, &c.layout, &c.ta, &c.tb);
                const int v = cases % 3;
                c.alpha = ab[v][0];
                c.beta = ab[v][1];
                c.cinit = c.beta == 0.0f ? VT_C_NAN : VT_C_RANDOM;
                c.lda_pad = cases % 2 ? 3 : 0;
                c.ldb_pad = cases % 3 ? 0 : 5;
                c.ldc_pad = cases % 5 ? 0 : 2;
                c.seed = 9000u + (uint64_t)cases;
                c.tag = tag;
                c.c_on_line = streamed;
                vt_check(&c);
                cases++;
            }
    vx_gemm_set_stream_bytes(-1);
    vx_set_num_threads(saved);
    vx_plan_set_override(NULL);
}

VT_ISA_TEST(resident, forced_one_thread, TMO) { sweep(vt_isa, 1, 0); }
VT_ISA_TEST(resident, forced_two_threads, TMO) { sweep(vt_isa, 2, 0); }
VT_ISA_TEST(resident, forced_two_threads_c_streamed, TMO) { sweep(vt_isa, 2, 1); }

static vx_gemm_shape plain(int64_t m, int64_t n, int64_t k)
{
    vx_gemm_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.m = m;
    sh.n = n;
    sh.k = k;
    sh.a_unit_stride = 1;
    sh.b_unit_stride = 1;
    return sh;
}

static int ranks_resident(const vx_gemm_shape *sh, vx_isa isa, int *first)
{
    vx_priced_plan p[64];
    const int got = vx_gemm_rank(sh, isa, 2, p, 64);
    int found = 0;
    for (int i = 0; i < got && i < 64; i++)
        if (p[i].plan.path == VX_PATH_RESIDENT) {
            found = 1;
            cr_assert(p[i].plan.threads >= 1 && p[i].plan.threads <= 2, "resident plan with %d threads",
                      p[i].plan.threads);
            cr_assert(p[i].plan.fallback != VX_PATH_RESIDENT && p[i].plan.fallback != VX_PATH_AUTO,
                      "resident plan carries no GEMM plan (fallback %d)", p[i].plan.fallback);
        }
    *first = got > 0 && p[0].plan.path == VX_PATH_RESIDENT;
    return found;
}

/* Offered only where B fits the registers and both operands' rows are
 * unit-stride; first for a tall, skinny call (A streams, B is tiny). */
VT_ISA_TEST(resident, planner_offers_it_where_b_fits, TMO)
{
    const vx_resident_set *R = vx_resident_kernels(vt_isa);
    const int w = R->vec_floats;
    int first;
    vx_gemm_shape sh = plain(200000, w, R->kmax[0]);
    cr_assert(ranks_resident(&sh, vt_isa, &first), "%s: 200000x%dx%d not offered", vt_isa_name(vt_isa), w,
              R->kmax[0]);
    cr_assert(first, "%s: 200000x%dx%d (B %d floats in registers) not ranked first", vt_isa_name(vt_isa), w,
              R->kmax[0], w * R->kmax[0]);
    sh = plain(200000, w, R->kmax[0] + 1);
    cr_assert(!ranks_resident(&sh, vt_isa, &first), "%s: k past kmax offered", vt_isa_name(vt_isa));
    sh = plain(200000, 2 * w + 1, 2);
    cr_assert(!ranks_resident(&sh, vt_isa, &first), "%s: n past two vectors offered", vt_isa_name(vt_isa));
    sh = plain(200000, w, 4);
    sh.a_unit_stride = 0;
    cr_assert(!ranks_resident(&sh, vt_isa, &first), "%s: transposed A offered", vt_isa_name(vt_isa));
    sh = plain(1, w, 4);
    cr_assert(!ranks_resident(&sh, vt_isa, &first), "%s: one row offered", vt_isa_name(vt_isa));
    /* A C the GEMM plans stream past the caches: first where its rows are
     * whole vectors (the kernels stream it too), not offered where they
     * are not (they would store it plainly) */
    const int64_t past = vx_gemm_stream_c_min() / (int64_t)sizeof(float) / (w - 1) + 64;
    sh = plain(past, w, R->kmax[0] < 16 ? R->kmax[0] : 16);
    cr_assert(ranks_resident(&sh, vt_isa, &first) && first, "%s: %lldx%dx%lld, C past the caches, not first",
              vt_isa_name(vt_isa), (long long)past, w, (long long)sh.k);
    sh = plain(past, w - 1, R->kmax[0] < 16 ? R->kmax[0] : 16);
    cr_assert(!ranks_resident(&sh, vt_isa, &first), "%s: %lldx%dx%lld, C past the caches in part lines, offered",
              vt_isa_name(vt_isa), (long long)past, w - 1, (long long)sh.k);
}
