/* Install-time measurements of the CPU levels. Everything is timed as the
 * minimum over repeated trials (the fastest trial is the one the machine did
 * not disturb), on the calling thread pinned to one core.
 *
 *   L0      every micro-kernel (ISA x family x variant x m) at five k, in
 *           its blocked-loop context (A panels from L2, one B panel);
 *           t(k) = o + p k: p from the long k, o from the short ones
 *   L1      packing A and B from an L2-resident source, unit-stride and
 *           transposed, in ns per float
 *   memory  one core's read bandwidth from a buffer sized to half of L2,
 *           half of its L3 share and well past L3; all cores from DRAM
 *   fixed   one empty parallel region on the pool; one 1x1x1 dyn_gemm */
#include "cpu/cpu_tune.h"
#include "cpu/cpu_levels.h"
#include "cpu/gemm.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/candidates.h"
#include "analyzer/cost.h"
#include "analyzer/hw.h"
#include "analyzer/plan.h"
#include "analyzer/tune.h"
#include "cpu/gemv.h"
#include "cpu/pack.h"
#include "cpu/threadpool.h"
#include "cpu/ukernel.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *aligned(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, (bytes + 63) & ~(size_t)63) == 0 ? p : NULL;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * 7 + 3) % 17) * 0.01f - 0.08f;
}

/* ---------------------------------------------------------------- L0 --- */

/* Two short depths pin the per-call cost o (the C tile's load and store,
 * the call itself), three long ones the per-step cost p. The line through
 * the long ones alone extrapolated o from k >= 32: its intercept came out
 * anywhere in 0..100 ns for neighbouring tiles (noise over a long lever),
 * and calls at k < 32 (small problems, thin k blocks) were priced at that
 * intercept: 21x32x1 picked a packed 3x24 plan (0.70 us) over direct or
 * packed-B ones that ran 0.43-0.45 us. */
enum { NK = 5, NK_SHORT = 2 };
static const int64_t k_points[NK] = { 4, 12, 32, 128, 384 };
enum { K_MAX = 384, MR_LIMIT = 32, NR_LIMIT = 128, C_TILES = 512 };

/* The L3 probes read at most this many L2s (vx_cpu_tune_l3_probe_bytes). */
enum { L3_PROBE_L2S = 8 };

/* A guest may be told of an L3 far larger than what it reads at L3 speed:
 * an Intel Xeon KVM guest with 2 cores saw 480 MiB (240 a core) and read
 * 28-31 GB/s over 4-64 MiB, 19 at 128 MiB and 15 at 256 (DRAM's rate), so
 * the 120 MiB probe (half a core's share) measured DRAM and priced every
 * L3-resident operand at DRAM speed (NOTES.md, thirty-third session).
 * Eight L2s keep the 8 MiB the AMD Zen 4 guests (1 MiB L2, 16 MiB of L3 a
 * core) read before. */
int64_t vx_cpu_tune_l3_probe_bytes(int64_t l3_share, int64_t l2_bytes)
{
    int64_t bytes = l3_share / 2;
    if (l2_bytes > 0 && bytes > L3_PROBE_L2S * l2_bytes)
        bytes = L3_PROBE_L2S * l2_bytes;
    return bytes;
}

/* Each kernel is timed where the blocked loops run it: one B panel (k x nr)
 * reused against a sequence of distinct A panels that together fill a
 * quarter of L2, each with its own C tile, so A streams from L2 and the
 * B panel stays in L1 only if it fits there (timing one A panel over and
 * over kept everything in L1 and could not tell 6x16 from 5x16 or 4x24).
 * In-place operands use compact strides (A rows k apart, B rows nr apart):
 * what a caller's large leading dimension costs on top (conflict misses, no
 * prefetch across pages) is a memory-level quantity, measured once as the
 * strided panel bandwidth below. */

typedef struct {
    float *a, *b, *c;
    int64_t a_floats; /* the A region the panels walk */
} l0_buffers;

/* ns per call of one kernel at depth k, in its loop context. */
static double time_kernel(vx_ukernel_fn fn, int m, int nr, int64_t k, const l0_buffers *B, int trials)
{
    int64_t panels = B->a_floats / (m * k);
    if (panels < 1)
        panels = 1;
    if (panels > C_TILES)
        panels = C_TILES;
    /* about 400k flops (some 20 us) per trial, at least one pass */
    int64_t reps = 400000 / (2 * (int64_t)m * nr * k * panels + 1);
    if (reps < 1)
        reps = 1;
    const int64_t a_rs = k, a_cs = 1, b_rs = nr; /* ignored by the packed operands */
    double best = 1e300;
    for (int t = 0; t < trials; t++) {
        const double t0 = now_ns();
        for (int64_t r = 0; r < reps; r++)
            for (int64_t q = 0; q < panels; q++)
                fn(k, B->a + q * m * k, a_rs, a_cs, B->b, b_rs, B->c + q * m * nr, nr, nr, 1.0f, 1.0f, NULL, 0);
        const double dt = (now_ns() - t0) / (double)(reps * panels);
        if (dt < best)
            best = dt;
    }
    return best;
}

/* t(k) = o + p k: p from the long depths, o from the short ones. */
static vx_l0_rate fit(const double *t)
{
    double k[NK], o, p;
    for (int i = 0; i < NK; i++)
        k[i] = (double)k_points[i];
    vx_tune_fit_call(k, t, NK, NK_SHORT, &o, &p);
    return (vx_l0_rate){ (float)o, (float)p };
}

/* Whether this machine runs the kernels of ISA isa (those it does not are
 * not measured). */
static int isa_runs(const vx_hw_info *hw, int isa)
{
    return isa == VX_ISA_AVX512 ? hw->has_avx512 : isa == VX_ISA_AVX2 && hw->has_avx2_fma;
}

static int count_kernels(const vx_hw_info *hw)
{
    int n = 0;
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        if (!isa_runs(hw, isa))
            continue;
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++)
            n += VX_UK_VARIANTS * set->families[f].mr_max;
    }
    return n;
}

/* ------------------------------------------------------------ memory --- */

/* Sum of a buffer, read with 256-bit loads (every x86 Vortex runs on has
 * AVX2); four independent accumulators keep the adds off the critical path. */
__attribute__((target("avx2"))) static float read_pass(const float *p, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

static volatile float g_sink;

/* Bytes per ns one thread reads from a buffer of `bytes` (already warmed). */
static double read_bw(const float *p, size_t bytes, int passes)
{
    const size_t n = bytes / sizeof(float);
    g_sink = read_pass(p, n);
    double best = 1e300;
    for (int i = 0; i < passes; i++) {
        const double t0 = now_ns();
        g_sink = read_pass(p, n);
        const double dt = now_ns() - t0;
        best = dt < best ? dt : best;
    }
    return (double)bytes / best;
}

/* The capacity probe (tune.h, l3_effective_bytes): one core reads
 * buffers of twice, four times, ... the L3 probe's bytes, up to half the
 * L3 the hardware query reports, and the first that reads nearer DRAM's
 * rate than L3's (twice in a row, so that one slow moment of a shared host
 * does not decide it) is taken as the L3 this machine has: a cyclic read
 * of a buffer the cache just holds already misses. 0 where every size read
 * at L3's rate, or L3 and DRAM read too much alike to tell (within 25 %).
 * On the Intel Xeon guest (480 MiB reported; NOTES.md, thirty-third
 * session) one core read 28-31 GB/s over 4-64 MiB, 19 at 128 and 15 from
 * 256 (DRAM); the AMD Zen 4 guests' 32 MiB L3 reads at its rate at 16. */
static double l3_effective_bytes(const float *big, size_t big_bytes, int64_t l3_bytes, int64_t probe, double bw_l3,
                                 double bw_dram, int passes)
{
    if (l3_bytes <= 0 || probe <= 0 || !(bw_l3 > 1.25 * bw_dram))
        return 0;
    const double mid = 0.5 * (bw_l3 + bw_dram);
    for (int64_t bytes = 2 * probe; bytes <= l3_bytes / 2 && (size_t)bytes <= big_bytes; bytes *= 2)
        if (read_bw(big, (size_t)bytes, passes) < mid && read_bw(big, (size_t)bytes, passes) < mid)
            return (double)bytes;
    return 0;
}

/* Bytes per ns reading 64-byte pieces of `rows` rows that lie `stride`
 * bytes apart: in blocks of `block` rows, each block `panels` times (panel
 * j reads bytes 64j..64j+63 of every row of the block), the whole walk
 * `reps` times per timed pass; best of `passes`. At page-multiple strides
 * the pieces alias in the caches' sets and the prefetchers stop at every
 * page, so this is far below the streaming rate.
 *   one panel, reps > 1: the in-place kernels re-reading a B panel for
 *     every row tile;
 *   all the row's panels, blocks of a k block's rows, reps = 1 over many
 *     rows: the in-place kernels' first pass over B's home (gemm.c,
 *     run_inplace: k blocks outermost), whose block's pages stay in the
 *     TLB from one panel to the next. */
__attribute__((target("avx2"))) static double strided_walk_bw(const float *p, size_t rows, size_t stride,
                                                              size_t block, size_t panels, int reps, int passes)
{
    const size_t step = stride / sizeof(float);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    double best = 1e300;
    for (int pass = -1; pass < passes; pass++) {
        const double t0 = now_ns();
        for (int rep = 0; rep < reps; rep++)
            for (size_t r0 = 0; r0 < rows; r0 += block)
                for (size_t j = 0; j < panels; j++)
                    for (size_t r = r0; r < r0 + block && r < rows; r++) {
                        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + r * step + j * 16));
                        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + r * step + j * 16 + 8));
                    }
        const double dt = now_ns() - t0;
        if (pass >= 0 && dt < best)
            best = dt;
    }
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(s0, s1));
    g_sink = out[0];
    return (double)reps * (double)rows * (double)panels * 64.0 / best;
}

/* The probes' tile: the widest family with six rows or more (AVX-512
 * 6x64, AVX2 6x16: tiles the plans pick), six rows of it. */
enum { PROBE_M = 6 };

static int probe_family(const vx_ukernel_set *set)
{
    int f = -1;
    for (int i = 0; i < set->nfamilies && i < VX_TUNE_MAX_FAMILIES; i++)
        if (set->families[i].mr_max >= PROBE_M && (f < 0 || set->families[i].nr > set->families[f].nr))
            f = i;
    return f;
}

/* What both probes run on: the family, its panel width, B of K x N
 * (N whole panels) in b_floats. 0 when no family has PROBE_M rows. */
typedef struct {
    const vx_ukernel_family *F;
    int f, nr;
    int64_t N, K;
    size_t b_floats;
} probe_shape;

static int probe_shape_of(vx_isa isa, probe_shape *ps)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    ps->f = probe_family(set);
    if (ps->f < 0)
        return 0;
    ps->F = &set->families[ps->f];
    ps->nr = ps->F->nr;
    ps->N = VX_PROBE_N / ps->nr * ps->nr;
    ps->K = VX_PROBE_K;
    ps->b_floats = (size_t)ps->N * (size_t)ps->K;
    return 1;
}

/* A probe's plan: the path and tile on one thread, k blocks of kc (the
 * other blocks the caller's, else the driver's). */
static vx_gemm_plan probe_plan(vx_isa isa, vx_path path, int f, int mr, int nr, int64_t kc)
{
    vx_gemm_plan p = { 0 };
    p.isa = isa;
    p.path = path;
    p.family = f;
    p.mr = mr;
    p.nr = nr;
    p.kc = kc;
    p.threads_m = p.threads_n = p.threads = 1;
    return p;
}

/* B (K x N), then A (M x K) and C (M x N), one after the other from the
 * start of big; 0 when big is too small. */
static int probe_operands(float *big, size_t big_bytes, int64_t M, int64_t N, int64_t K, float **a, float **b,
                          float **c)
{
    if (((size_t)(N + M) * (size_t)K + (size_t)M * (size_t)N) * sizeof(float) > big_bytes)
        return 0;
    *b = big;
    *a = big + (size_t)N * (size_t)K;
    *c = *a + (size_t)M * (size_t)K;
    return 1;
}

/* Carve the probes' operands out of big: `copies` B matrices of b_floats
 * (enough to exceed four times L2, so a pass over one evicts the others
 * from L2 and each pass reads its B from L3), then A and C. 0 when big is
 * too small for even one. */
static int probe_buffers(const vx_hw_info *hw, float *big, size_t big_bytes, size_t b_floats, size_t a_floats,
                         size_t c_floats, size_t *copies, float **a, float **c)
{
    size_t n = (size_t)(4 * hw->l2_bytes) / (b_floats * sizeof(float)) + 1;
    while (n > 1 && (n * b_floats + a_floats + c_floats) * sizeof(float) > big_bytes)
        n--;
    if ((n * b_floats + a_floats + c_floats) * sizeof(float) > big_bytes)
        return 0;
    *copies = n;
    *a = big + n * b_floats;
    *c = *a + a_floats;
    return 1;
}

/* The in-place probe (tune.h): the probe tile walks B panel by panel, both row tiles
 * over each panel, as run_inplace does with one k block. Copies of B
 * rotate between passes (probe_buffers), so every pass reads B from L3
 * (and A, 2m x K, from L1). */
static void inplace_probe(vx_isa isa, const vx_hw_info *hw, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    probe_shape ps;
    if (!probe_shape_of(isa, &ps))
        return;
    const int f = ps.f, m = PROBE_M, nr = ps.nr;
    const int64_t N = ps.N, K = ps.K;
    const size_t b_floats = ps.b_floats;
    size_t copies;
    float *a, *c;
    if (!probe_buffers(hw, big, big_bytes, b_floats, (size_t)2 * m * K, (size_t)2 * m * N, &copies, &a, &c))
        return;
    const vx_ukernel_fn fn = ps.F->kern[VX_UK_AS_BS][m - 1];
    /* the walk over a B from L3 (copies rotate), alternated with the same
     * calls all on B's first panel, which stays in L2: their difference is
     * what reading B from L3 adds, free of the noise in the kernels' own
     * rates (the probe's total put the share at 2.5-33 % from one tune to
     * the next on AMD Zen 5, this difference at 9-14 %) */
    double cold = 1e300, hot = 1e300;
    for (int pass = -1; pass < 2 * passes; pass++)
        for (int hot_b = 0; hot_b < 2; hot_b++) {
            const float *b = big + (size_t)(pass + 1) % copies * b_floats;
            const double t0 = now_ns();
            for (int64_t j = 0; j < N; j += nr)
                for (int i = 0; i < 2; i++)
                    fn(K, a + (size_t)i * m * K, K, 1, b + (hot_b ? 0 : j), N, c + (size_t)i * m * N + j, N, nr,
                       1.0f, 0.0f, NULL, 0);
            const double dt = now_ns() - t0;
            double *best = hot_b ? &hot : &cold;
            if (pass >= 0 && dt < *best)
                *best = dt;
        }
    t->inplace_probe[isa].fam = f;
    t->inplace_probe[isa].m = m;
    t->inplace_probe[isa].ns = cold > hot ? cold - hot : 0.0;
}

/* The packed probe (tune.h): the same tile through the GEMM driver's
 * packed path on one thread, A (VX_PROBE_PACKED_M x K) and B copied into
 * its buffers, B read from L3 (copies rotate as for the in-place probe). */
static void packed_probe(vx_isa isa, const vx_hw_info *hw, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    probe_shape ps;
    if (!probe_shape_of(isa, &ps))
        return;
    const int f = ps.f, m = PROBE_M, nr = ps.nr;
    const int64_t M = VX_PROBE_PACKED_M, N = ps.N, K = ps.K;
    const size_t b_floats = ps.b_floats;
    size_t copies;
    float *a, *c;
    if (!probe_buffers(hw, big, big_bytes, b_floats, (size_t)M * K, (size_t)M * N, &copies, &a, &c))
        return;
    vx_gemm_plan plan = probe_plan(isa, VX_PATH_PACKED, f, m, nr, K);
    plan.mc = (M + m - 1) / m * m;
    plan.nc = N;
    double best = 1e300;
    for (int pass = -1; pass < 2 * passes; pass++) {
        const vx_gemm_args g = { M, N, K, 1.0f, 0.0f, a, K, 1, big + (size_t)(pass + 1) % copies * b_floats,
                                 N, 1, c, N, NULL };
        const double t0 = now_ns();
        if (vx_cpu_gemm(&g, &plan, NULL) != VX_OK)
            return;
        const double dt = now_ns() - t0;
        if (pass >= 0 && dt < best)
            best = dt;
    }
    t->packed_probe[isa].fam = f;
    t->packed_probe[isa].m = m;
    t->packed_probe[isa].ns = best;
}

/* ns of one call of the plan, timed after an untimed one with the same
 * settings (what a setting leaves in the caches is part of its cost);
 * negative where the driver refuses the plan. */
static double call_after_one(const vx_gemm_args *g, const vx_gemm_plan *plan)
{
    if (vx_cpu_gemm(g, plan, NULL) != VX_OK)
        return -1.0;
    const double t0 = now_ns();
    if (vx_cpu_gemm(g, plan, NULL) != VX_OK)
        return -1.0;
    return now_ns() - t0;
}

/* A driver setting's probe: the plan's call with set(on) and with set(0),
 * in turns, `samples` of each (at most RATIO_SAMPLES); the ratio of their
 * median calls (on over off), or -1 where a call fails. Each timed call
 * follows one with the same setting: calls alternated one by one put the
 * medians 1-2 % apart on an Intel Xeon guest, after a call of their own
 * 3-8 %. The setting goes back to 1 (the driver's default) after. */
enum { RATIO_SAMPLES = 64 };

static double ratio_in_turns(const vx_gemm_args *g, const vx_gemm_plan *plan, void (*set)(int), int on,
                             int samples)
{
    double v[2][RATIO_SAMPLES];
    if (samples > RATIO_SAMPLES)
        samples = RATIO_SAMPLES;
    for (int got = 0; got < samples; got++)
        for (int w = 0; w < 2; w++) {
            set(w ? on : 0);
            v[w][got] = call_after_one(g, plan);
            if (v[w][got] < 0) {
                set(1);
                return -1.0;
            }
        }
    set(1);
    return samples > 0 ? vx_tune_median(v[1], samples) / vx_tune_median(v[0], samples) : -1.0;
}

/* The fetch probe (tune.h, fetch_next_ratio): a pack-B plan with the probe
 * tile on one thread over VX_PROBE_PACKED_M x VX_PROBE_N x FETCH_PROBE_K
 * (B 7 MB, hot in L3 from the previous call, as a layer's weights are
 * between steps), with the driver's next-panel fetches and without, in
 * turns; the ratio of their median calls. The fetches pay where the
 * prefetches of B's far-apart rows arrive before the pk kernel reads them
 * and cost more where they take the slots the kernels' own misses need:
 * on two AMD Zen 4 cores the BERT layers ran 0.4-0.9 % faster with them; on
 * an Intel Xeon guest 80x2304x768 (pack-B 6 x 64) ran 9-10 % slower on one
 * thread, 10-13 % slower for 80-160 rows on two, and 2-9 % slower for the
 * packed plans that read A in place (NOTES.md, thirty-third session).
 * k = 768: at 384 the loss there read -5..+2 %, within the noise. */
enum { FETCH_PROBE_K = 768 };

static void fetch_probe(vx_isa isa, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    probe_shape ps;
    if (isa != VX_ISA_AVX512 || !probe_shape_of(isa, &ps))
        return;
    const int64_t M = VX_PROBE_PACKED_M, N = ps.N, K = FETCH_PROBE_K;
    float *a, *b, *c;
    if (!probe_operands(big, big_bytes, M, N, K, &a, &b, &c))
        return;
    const vx_gemm_plan plan = probe_plan(isa, VX_PATH_PACK_B, ps.f, PROBE_M, ps.nr, K);
    const vx_gemm_args g = { M, N, K, 1.0f, 0.0f, a, K, 1, b, N, 1, c, N, NULL };
    /* medians: the best calls of the two moved from 2 % apart to 8 % from
     * one tune to the next; over 32 samples the medians read 1.03-1.07
     * in four tunes out of four there */
    const double r = ratio_in_turns(&g, &plan, vx_gemm_set_fetch_next, 2, 4 * passes);
    if (r > 0)
        t->fetch_next_ratio[isa] = r;
}

/* The pack-on-read probe (tune.h, pack_on_read_ratio): a direct plan with
 * the probe tile on one thread over VX_PROBE_PACKED_M x PACK_PROBE_N x
 * PACK_PROBE_K, B's rows 3 KiB apart and B 9 MB (BERT's ffn_down weights,
 * hot in L3 from the previous call), with each panel packed by its first
 * row tile and read in place by every tile, in turns; the ratio of their
 * median calls. On two AMD Zen 4 cores the AVX-512 plans ran 0.96 of the
 * time in place at k = 3072 and 0.99-1.00 at k = 768-1536 (the suites'
 * plans over such rows: 0.97, none slower); the AVX2 ones 1.28x the time
 * in place at k = 768 (NOTES.md, forty-fourth session). */
enum { PACK_PROBE_N = 768, PACK_PROBE_K = 3072, PACK_PROBE_KC = 768 };

static void pack_probe(vx_isa isa, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    probe_shape ps;
    if (!probe_shape_of(isa, &ps) || PACK_PROBE_N % ps.nr != 0)
        return;
    const int64_t M = VX_PROBE_PACKED_M, N = PACK_PROBE_N, K = PACK_PROBE_K;
    float *a, *b, *c;
    if (!probe_operands(big, big_bytes, M, N, K, &a, &b, &c))
        return;
    const vx_gemm_plan plan = probe_plan(isa, VX_PATH_DIRECT, ps.f, PROBE_M, ps.nr, PACK_PROBE_KC);
    const vx_gemm_args g = { M, N, K, 1.0f, 0.0f, a, K, 1, b, N, 1, c, N, NULL };
    const double r = ratio_in_turns(&g, &plan, vx_gemm_set_pack_on_read, 2, 2 * passes);
    /* the file takes [0.1, 10] */
    if (r > 0)
        t->pack_on_read_ratio[isa] = r < 0.1 ? 0.1 : r > 10.0 ? 10.0 : r;
}

/* The stream probe (tune.h, stream_one_tile_ratio): one column of pack-B
 * tiles, 4 x 32 (the model's pick for 716847x32x32 on 2 AMD Zen 4 cores)
 * or the 32-wide family's tallest below that, over a C twice the driver's
 * last-level cache (as large as calls stream it) and all cores, at k = 8,
 * 16 and 32, with C staged and streamed and with plain stores, in turns;
 * the ratio of their median calls. */
static void stream_probe(const vx_hw_info *hw, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    const vx_isa isa = hw->has_avx512 ? VX_ISA_AVX512 : VX_ISA_AVX2;
    const vx_ukernel_set *set = vx_ukernels(isa);
    int f = -1;
    for (int i = 0; i < set->nfamilies && i < VX_TUNE_MAX_FAMILIES; i++)
        if (set->families[i].nr == 32)
            f = i;
    if (f < 0)
        return;
    const int64_t N = 32, K_MAX = vx_tune_stream_k(VX_TUNE_STREAM_DEPTHS - 1);
    const int mr = set->families[f].mr_max < 4 ? set->families[f].mr_max : 4;
    const int cores = hw->physical_cores > 0 ? hw->physical_cores : 1;
    /* twice the last level, or what big holds of A and C at the deepest k */
    int64_t c_bytes = 2 * vx_gemm_last_level_bytes();
    const int64_t room = (int64_t)(big_bytes / 2) - 2 * N * K_MAX * (int64_t)sizeof(float);
    if (c_bytes > room)
        c_bytes = room;
    const int64_t M = c_bytes / (N * (int64_t)sizeof(float)) / mr * mr;
    if (M < 1)
        return;
    const int bound = vx_gemm_stream_one_tile_k_max();
    vx_gemm_set_stream_one_tile_k_max((int)K_MAX); /* every depth may stream */
    enum { MOST = 10 }; /* pairs; the two sides were 15-55 % apart on 2 AMD Zen 4 cores */
    const int samples = 2 * passes < MOST ? 2 * passes : MOST;
    double ratio[VX_TUNE_STREAM_DEPTHS] = { 0 };
    for (int q = 0; q < VX_TUNE_STREAM_DEPTHS; q++) {
        const int64_t K = vx_tune_stream_k(q);
        float *a, *b, *c;
        if (!probe_operands(big, big_bytes, M, N, K, &a, &b, &c))
            goto done;
        vx_gemm_plan plan = probe_plan(isa, VX_PATH_PACK_B, f, mr, (int)N, K);
        plan.threads_m = plan.threads = cores;
        const vx_gemm_args g = { M, N, K, 1.0f, 0.0f, a, K, 1, b, N, 1, c, N, NULL };
        double v[2][MOST];
        int got = 0;
        for (; got < samples; got++)
            for (int on = 0; on < 2; on++) {
                vx_gemm_set_stream_bytes(on ? 0 : INT64_MAX);
                v[on][got] = call_after_one(&g, &plan);
                if (v[on][got] < 0)
                    goto done;
            }
        ratio[q] = vx_tune_median(v[1], got) / vx_tune_median(v[0], got);
    }
    for (int q = 0; q < VX_TUNE_STREAM_DEPTHS; q++)
        t->stream_one_tile_ratio[q] = ratio[q];
done:
    vx_gemm_set_stream_bytes(-1);
    vx_gemm_set_stream_one_tile_k_max(bound);
}

/* The context probe (tune.h, context_ratio and context_tile): every tile
 * of four rows or more that the candidates keep on its L1 rate
 * (VX_CPU_KEEP_RATE_FRAC of its family's best), through the packed driver
 * on one thread over CONTEXT_M x VX_PROBE_N x FETCH_PROBE_K, the tiles in
 * turns, medians. In L1 the wide
 * tiles all run at the FMAs' rate, within the noise of the clock; in the
 * GEMM a tile issues (m + V) loads for m x V FMAs while the caches refill L1
 * under it, and on an Intel Xeon guest 336x2304x768 ran 6 x 64 and 9 x 48 at
 * 157-162 GFLOP/s, 14 x 32 at 149-151 and 22 x 16 or 30 x 16 at 142-144,
 * where the tunes' L1 rates ranked them by the clock each caught: picked on
 * 14 x 32 or 22 x 16, 2048x3072x768 ran 7-12 % slower than on 6 x 64
 * (NOTES.md, thirty-third session). Within a family too: 9 x 48 and 5 x 48
 * ran BERT's larger layers 3-8 % slower than 6 x 64 there, and whichever
 * the L1 rates put first got every plan (thirty-seventh session). */
enum { CONTEXT_M = 336, CONTEXT_ROWS = 168, CONTEXT_TILES = 96 };

/* The steady L1 rate of tile m of family f, A and B packed: what
 * candidates.c prunes on (vx_l0_steady_rate). */
static double l1_steady_rate(const vx_tune *t, vx_isa isa, int f, int m, int nr)
{
    const vx_l0_rate r = t->l0[isa][f][VX_UK_AP_BP][m - 1];
    return vx_steady_flops_per_ns(r.overhead_ns, r.ns_per_k, m, nr);
}

/* What the L1 rates predict for the probe's plan: row blocks of mc rows in
 * tiles of m (a block's last tile shorter), every column tile, k in one
 * block, at the rates of the kernels the driver runs (A read in place or
 * copied, gemm.c reads_a_in_place). */
static double l1_predicted_ns(const vx_tune *t, vx_isa isa, int f, int m, int64_t mc, int64_t M, int64_t N,
                              int nr, int64_t K, int a_in_place)
{
    const vx_l0_rate *r = t->l0[isa][f][a_in_place ? VX_UK_AS_BP : VX_UK_AP_BP];
    double ns = 0;
    for (int64_t i = 0; i < M; i += mc) {
        const int64_t rows = M - i < mc ? M - i : mc, h = rows % m;
        ns += (double)(rows / m) * ((double)r[m - 1].overhead_ns + (double)r[m - 1].ns_per_k * (double)K);
        if (h > 0)
            ns += (double)r[h - 1].overhead_ns + (double)r[h - 1].ns_per_k * (double)K;
    }
    return ns * (double)(N / nr);
}

typedef struct {
    int f, m;
    vx_gemm_plan plan;
    double l1_ns; /* l1_predicted_ns */
} context_tile;

static void context_probe(vx_isa isa, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    const vx_ukernel_set *set = vx_ukernels(isa);
    const int nf = set->nfamilies < VX_TUNE_MAX_FAMILIES ? set->nfamilies : VX_TUNE_MAX_FAMILIES;
    const int64_t M = CONTEXT_M, N = VX_PROBE_N / 192 * 192, K = FETCH_PROBE_K;
    float *a, *b, *c;
    if (nf < 1 || !probe_operands(big, big_bytes, M, N, K, &a, &b, &c))
        return;
    context_tile tiles[CONTEXT_TILES];
    int n = 0, best_of[VX_TUNE_MAX_FAMILIES]; /* the family's fastest tile in L1, index into tiles */
    for (int f = 0; f < nf; f++) {
        const vx_ukernel_family *F = &set->families[f];
        const int m_lo = F->mr_max < 4 ? 1 : 4, m_hi = F->mr_max < VX_TUNE_MAX_MR ? F->mr_max : VX_TUNE_MAX_MR;
        double best = 0;
        for (int m = m_lo; m <= m_hi; m++) {
            const double r = l1_steady_rate(t, isa, f, m, F->nr);
            best = r > best ? r : best;
        }
        if (!(best > 0))
            return;
        best_of[f] = -1;
        double best_in = 0;
        for (int m = m_lo; m <= m_hi && n < CONTEXT_TILES; m++) {
            const double r = l1_steady_rate(t, isa, f, m, F->nr);
            if (r < VX_CPU_KEEP_RATE_FRAC * best)
                continue;
            context_tile *x = &tiles[n];
            x->f = f;
            x->m = m;
            x->plan = probe_plan(isa, VX_PATH_PACKED, f, m, F->nr, K);
            x->plan.mc = CONTEXT_ROWS / m * m;
            x->plan.nc = N;
            const int a_in_place = vx_gemm_a_rows_in_place_ok(m, K, K * (int64_t)sizeof(float));
            x->l1_ns = l1_predicted_ns(t, isa, f, m, x->plan.mc, M, N, F->nr, K, a_in_place);
            if (!(x->l1_ns > 0))
                return;
            if (r > best_in)
                best_in = r, best_of[f] = n;
            n++;
        }
        if (best_of[f] < 0)
            return;
    }
    /* One call of each first, then the samples: rounds of one call of every
     * tile (a call finds what the previous tile's left in the caches: the
     * same operands), every other round in reverse order, so a drift of
     * the clock over a round reaches every tile alike. Each call's ratio to
     * what its L1 rates predict, over the median such ratio of its round
     * (the host's speed, round by round, cancels out), then the median over
     * the rounds. */
    const vx_gemm_args g = { M, N, K, 1.0f, 0.0f, a, K, 1, b, N, 1, c, N, NULL };
    enum { MOST = 16 };
    const int samples = 2 * passes < MOST ? 2 * passes : MOST;
    double v[CONTEXT_TILES][MOST];
    /* the next-panel fetches as the calls after this tune will run them
     * (the fetch probe's verdict): they take load slots from the tiles that
     * issue the most loads, and change their order */
    vx_gemm_set_fetch_next(vx_tune_fetches_next(t, isa) ? 2 : 0);
    for (int i = -1; i < samples; i++)
        for (int o = 0; o < n; o++) {
            const int j = i % 2 ? n - 1 - o : o;
            const double t0 = now_ns();
            if (vx_cpu_gemm(&g, &tiles[j].plan, NULL) != VX_OK) {
                vx_gemm_set_fetch_next(1);
                return;
            }
            if (i >= 0)
                v[j][i] = (now_ns() - t0) / tiles[j].l1_ns;
        }
    vx_gemm_set_fetch_next(1);
    for (int i = 0; i < samples; i++) {
        double round[CONTEXT_TILES];
        for (int j = 0; j < n; j++)
            round[j] = v[j][i];
        const double mid = vx_tune_median(round, n);
        for (int j = 0; j < n; j++)
            v[j][i] /= mid;
    }
    double q[CONTEXT_TILES], med[CONTEXT_TILES], q_least = 1e300;
    for (int j = 0; j < n; j++) {
        q[j] = vx_tune_median(v[j], samples);
        med[j] = q[j] * tiles[j].l1_ns; /* relative times, for the families' ratios below */
        q_least = q[j] < q_least ? q[j] : q_least;
    }
    for (int j = 0; j < n; j++)
        t->context_tile[isa][tiles[j].f][tiles[j].m - 1] = q_least / q[j];
    /* per family, as before the tiles were told apart: its fastest tile in
     * L1 against the fastest of those */
    double least = 1e300;
    for (int f = 0; f < nf; f++)
        least = med[best_of[f]] < least ? med[best_of[f]] : least;
    for (int f = 0; f < nf; f++)
        t->context_ratio[isa][f] = least / med[best_of[f]];
}

/* The alias probe (tune.h, l2_alias_ways): a direct plan (A and B read in
 * place) with the probe tile over two row tiles, one thread, B's ALIAS_K
 * rows 12 KiB apart (ALIAS_N floats: a multiple of 4 KiB, so the rows share
 * a few of L2's set positions), in k blocks of each of alias_kc's sizes;
 * the second row tile re-reads each panel of a block, from L2 while the
 * block's rows fit the ways its sets keep for them, from L3 beyond. The
 * same over rows ALIAS_SPREAD floats shorter (spread over the sets) for a
 * control: the largest block whose time over the control's is within
 * ALIAS_SLACK of the least such ratio, over the set positions the rows
 * take, is the ways kept. On an Intel Xeon guest (2 MiB, 16-way L2)
 * 16x3072x768 on 8 x 48 ran kc = 128 / 256 / 768 in 508 / 623 / 819 us, and
 * 16x3000x768 in 416 / 430 / 429: a quarter of the ways, where the model
 * counted half (NOTES.md, thirty-fourth session). Block sizes in turns,
 * each call after one of its own; medians. */
enum { ALIAS_N = 3072, ALIAS_SPREAD = 16, ALIAS_K = 768 };
static const int alias_kc[] = { 64, 128, 192, 256, 384, 768 };
#define ALIAS_SLACK 0.05

static void alias_probe(vx_isa isa, const vx_hw_info *hw, float *big, size_t big_bytes, int passes, vx_tune *t)
{
    probe_shape ps;
    if (!probe_shape_of(isa, &ps) || hw->l2_ways < 2 || hw->line_bytes <= 0 || hw->l2_bytes <= 0)
        return;
    const int64_t way_bytes = hw->l2_bytes / hw->l2_ways, stride = (int64_t)ALIAS_N * (int64_t)sizeof(float);
    const int64_t M = 2 * PROBE_M, K = ALIAS_K, N[2] = { ALIAS_N, ALIAS_N - ALIAS_SPREAD };
    if (way_bytes <= 0 || ((size_t)(N[0] + N[1] + M) * (size_t)K + (size_t)M * (size_t)N[0]) * sizeof(float) > big_bytes)
        return;
    float *b[2] = { big, big + (size_t)N[0] * (size_t)K };
    float *a = b[1] + (size_t)N[1] * (size_t)K, *c = a + (size_t)M * (size_t)K;
    vx_gemm_plan plan = probe_plan(isa, VX_PATH_DIRECT, ps.f, PROBE_M, ps.nr, 0);
    enum { NKC = sizeof alias_kc / sizeof alias_kc[0], MOST = 16 };
    const int samples = passes < MOST ? passes : MOST;
    double v[2][NKC][MOST];
    for (int i = 0; i < samples; i++)
        for (int j = 0; j < NKC; j++)
            for (int w = 0; w < 2; w++) {
                const vx_gemm_args g = { M, N[w], K, 1.0f, 0.0f, a, K, 1, b[w], N[w], 1, c, N[w], NULL };
                plan.kc = alias_kc[j];
                if ((v[w][j][i] = call_after_one(&g, &plan)) < 0)
                    return;
                v[w][j][i] /= (double)N[w];
            }
    double ratio[NKC], least = 1e300;
    for (int j = 0; j < NKC; j++) {
        ratio[j] = vx_tune_median(v[0][j], samples) / vx_tune_median(v[1][j], samples);
        least = ratio[j] < least ? ratio[j] : least;
    }
    int kept = 0;
    for (int j = 0; j < NKC; j++)
        if (ratio[j] <= least * (1.0 + ALIAS_SLACK))
            kept = alias_kc[j];
    const int64_t piece = ((int64_t)ps.nr * (int64_t)sizeof(float) + hw->line_bytes - 1) / hw->line_bytes * hw->line_bytes;
    const int64_t positions = vx_rows_held(stride, 1, way_bytes, (int)piece); /* one row a set position */
    /* within the file's range (a block of rows over more positions than it
     * has rows, or a level keeping more than 64 ways: the ends) */
    const double ways = positions > 0 ? (double)kept / (double)positions : 0.0;
    if (ways > 0)
        t->l2_alias_ways = ways < 1.0 ? 1.0 : ways > 64.0 ? 64.0 : ways;
}

/* The few-row matrix-vector kernel (tune.h, gemv_rows_ns): a matrix of
 * ROWS_LEN x ROWS_K floats (480 KiB: in L2 after the first pass), its sums
 * kept in L1 as for a matrix in the caches (vx_gemv_pass_floats); ns per
 * flop for 2, 3 and 4 rows, each the fastest of its passes (0 for a row
 * count the kernel does not take). */
enum { ROWS_LEN = 768, ROWS_K = 160 };

static void gemv_rows_ns(vx_isa isa, float *big, int passes, double out[VX_TUNE_GEMV_ROWS])
{
    const vx_gemv_kernels *K = vx_gemv_kernels_for(isa);
    for (int r = 0; r < VX_TUNE_GEMV_ROWS; r++)
        out[r] = 0.0;
    if (!K->axpy_rows || K->rows_max < 2)
        return;
    const float *m = big, *x = big + ROWS_LEN * ROWS_K;
    float *y = big + ROWS_LEN * ROWS_K + VX_GEMV_ROWS_MAX * ROWS_K;
    vx_gemv_store st[VX_GEMV_ROWS_MAX];
    for (int i = 0; i < VX_GEMV_ROWS_MAX; i++)
        st[i] = (vx_gemv_store){ 1.0f, 0.0f, NULL, 0.0f, 0 };
    const int64_t pass = vx_gemv_pass_floats(ROWS_LEN, ROWS_K);
    for (int rows = 2; rows <= K->rows_max && rows < 2 + VX_TUNE_GEMV_ROWS; rows++) {
        double best = 1e300;
        for (int p = -1; p < 4 * passes; p++) {
            const double t0 = now_ns();
            K->axpy_rows(rows, ROWS_LEN, ROWS_K, m, ROWS_LEN, x, ROWS_K, 1, y, ROWS_LEN, st, pass);
            const double dt = now_ns() - t0;
            if (p >= 0 && dt < best)
                best = dt;
        }
        out[rows - 2] = best / (2.0 * rows * ROWS_LEN * ROWS_K);
    }
}

typedef struct {
    const float *p;
    size_t bytes;
    int core, passes;
    pthread_barrier_t *bar;
    double ns;
} dram_job;

static void *dram_reader(void *arg)
{
    dram_job *j = arg;
    vx_hw_bind_thread_to_core(j->core);
    const size_t n = j->bytes / sizeof(float);
    g_sink = read_pass(j->p, n);
    double best = 1e300;
    for (int i = 0; i < j->passes; i++) {
        pthread_barrier_wait(j->bar);
        const double t0 = now_ns();
        g_sink = read_pass(j->p, n);
        const double dt = now_ns() - t0;
        best = dt < best ? dt : best;
    }
    j->ns = best;
    return NULL;
}

/* Bytes per ns all cores read together, each from its own buffer. */
static double dram_bw_all(float *big, size_t bytes, int cores, int passes)
{
    if (cores > 64)
        cores = 64;
    dram_job jobs[64];
    pthread_t th[64];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)cores);
    const size_t each = bytes / (size_t)cores / 64 * 64;
    int started = 0;
    for (int c = 0; c < cores; c++) {
        jobs[c] = (dram_job){ big + each / sizeof(float) * (size_t)c, each, c, passes, &bar, 0 };
        if (pthread_create(&th[c], NULL, dram_reader, &jobs[c]) != 0)
            break;
        started++;
    }
    double worst = 0;
    for (int c = 0; c < started; c++) {
        pthread_join(th[c], NULL);
        worst = jobs[c].ns > worst ? jobs[c].ns : worst;
    }
    pthread_barrier_destroy(&bar);
    if (started < cores) /* cannot happen in practice; the barrier would hang */
        return 0;
    return worst > 0 ? (double)each * started / worst : 0;
}

/* One cache line passed between cores 0 and 1: each side waits for the
 * other's store before its own, so every store moves the line once. */
typedef struct {
    _Alignas(64) int64_t turn;
} shared_line;

typedef struct {
    shared_line *line;
    int64_t rounds;
    int core, parity;
    float *payload; /* lines the odd side writes in its turn and the even side then reads (or NULL) */
    int lines;
} pingpong_side;

static void *pingpong_run(void *arg)
{
    const pingpong_side *ps = arg;
    vx_hw_bind_thread_to_core(ps->core);
    float sum = 0;
    for (int64_t i = ps->parity; i < 2 * ps->rounds; i += 2) {
        while (__atomic_load_n(&ps->line->turn, __ATOMIC_ACQUIRE) != i)
            ;
        for (int64_t j = 0; j < (int64_t)ps->lines * 16; j++) {
            if (ps->parity)
                ps->payload[j] = (float)i;
            else
                sum += ps->payload[j];
        }
        __atomic_store_n(&ps->line->turn, i + 1, __ATOMIC_RELEASE);
    }
    volatile float keep = sum;
    (void)keep;
    return NULL;
}

/* ns per round trip of the turn, with `lines` lines of payload written by
 * core 1 and read by core 0 in every round; best of `passes`; 0 when the
 * second thread cannot start. */
static double pingpong_ns(int passes, int64_t rounds, float *payload, int lines)
{
    static shared_line line;
    double best = 0;
    for (int pass = 0; pass < passes; pass++) {
        line.turn = 0;
        pingpong_side side0 = { &line, rounds, 0, 0, payload, lines }, side1 = { &line, rounds, 1, 1, payload, lines };
        pthread_t other;
        const double t0 = now_ns();
        if (pthread_create(&other, NULL, pingpong_run, &side1) != 0)
            return 0;
        pingpong_run(&side0);
        pthread_join(other, NULL);
        const double dt = (now_ns() - t0) / (double)rounds;
        best = pass == 0 || dt < best ? dt : best;
    }
    vx_hw_bind_thread_to_core(0);
    return best;
}

/* ns per line of many written by one core and then read by the other (a
 * K-split's partial sums, cost.c vx_cost_gemv): what a round trip with 256
 * such lines takes beyond one with none, per line; 0 when not measured. The
 * transfers overlap, so this is far below line_transfer_ns (AMD Zen 4: 9 ns
 * against 99). */
static double line_stream_ns(int passes)
{
    enum { LINES = 256, ROUNDS = 2000 };
    float *payload = aligned_alloc(64, LINES * 64);
    if (!payload)
        return 0;
    memset(payload, 0, LINES * 64);
    const double none = pingpong_ns(passes, ROUNDS, NULL, 0), full = pingpong_ns(passes, ROUNDS, payload, LINES);
    free(payload);
    return none > 0 && full > none ? (full - none) / LINES : 0;
}

/* ns per transfer, best of `passes`; 0 when the second thread cannot start. */
static double line_transfer_ns(int passes)
{
    enum { ROUNDS = 20000 };
    return pingpong_ns(passes, ROUNDS, NULL, 0) / 2.0; /* a round trip moves the line twice */
}

/* ------------------------------------------------------------- fixed --- */

static void empty_task(void *ctx, int tid, int n)
{
    (void)ctx;
    (void)tid;
    (void)n;
}

/* The pool's reading of a warm region's hand-offs (threadpool.h), taken
 * beside wake_warm_ns as the baseline its run-time readings are compared
 * with: empty regions until it has one (its clock calibrated, at most
 * 50 ms), then a thousand more for its median. */
static void region_handoffs(vx_tune *t, int nt)
{
    const double t0 = now_ns();
    while (vx_pool_region_ns() <= 0 && now_ns() - t0 < 5e7)
        for (int i = 0; i < 100; i++)
            vx_pool_run(empty_task, NULL, nt);
    for (int i = 0; i < 1000; i++)
        vx_pool_run(empty_task, NULL, nt);
    t->region_handoff_ns = vx_pool_region_ns();
}

/* --------------------------------------------------------------- all --- */

typedef struct {
    const vx_cpu_tune_opts *o;
    int done, total;
} progress;

static void step(progress *pr, const char *what)
{
    if (pr->o->progress)
        pr->o->progress(pr->o->progress_ctx, pr->done, pr->total, what);
    pr->done++;
}

vx_status vx_cpu_tune_measure(const vx_cpu_tune_opts *o, vx_tune *t)
{
    const vx_hw_info *hw = vx_hw();
    const int trials = o->quick ? 5 : 12, rounds = o->quick ? 1 : 8;
    const int nkern = count_kernels(hw);
    enum { OTHER_STEPS = 17 };
    progress pr = { o, 0, rounds * nkern + OTHER_STEPS };
    vx_hw_bind_thread_to_core(0);

    l0_buffers B;
    B.a_floats = hw->l2_bytes / 4 / (int64_t)sizeof(float);
    if (B.a_floats < MR_LIMIT * K_MAX)
        B.a_floats = MR_LIMIT * K_MAX;
    B.a = aligned(sizeof(float) * (size_t)B.a_floats);
    B.b = aligned(sizeof(float) * K_MAX * NR_LIMIT);
    const size_t c_floats = (size_t)(B.a_floats / k_points[0] + MR_LIMIT) * NR_LIMIT;
    B.c = aligned(sizeof(float) * c_floats);
    const int64_t l3_share = hw->l3_bytes > 0 ? hw->l3_bytes / (hw->l3_cores > 0 ? hw->l3_cores : 1) : 0;
    const int64_t l3_probe = vx_cpu_tune_l3_probe_bytes(l3_share, hw->l2_bytes);
    size_t big_bytes = (size_t)(hw->l3_bytes > 0 ? 4 * hw->l3_bytes : 64 * hw->l2_bytes);
    if (big_bytes < ((size_t)256 << 20))
        big_bytes = (size_t)256 << 20;
    float *big = aligned(big_bytes);
    if (!B.a || !B.b || !B.c || !big) {
        free(B.a);
        free(B.b);
        free(B.c);
        free(big);
        return VX_ERR_NO_MEMORY;
    }
    fill(B.a, (size_t)B.a_floats);
    fill(B.b, K_MAX * NR_LIMIT);
    fill(B.c, c_floats);
    fill(big, big_bytes / sizeof(float));

    /* L0, in rounds: each round times every kernel once and a kernel keeps
     * its fastest round, so a burst of steal time or a clock change hits one
     * round of one kernel rather than one kernel for good. */
    static const char *const vname[VX_UK_VARIANTS] = { "packed A, packed B", "A in place, packed B",
                                                       "A and B in place" };
    static double best_t[VX_ISA_COUNT][VX_TUNE_MAX_FAMILIES][VX_UK_VARIANTS][VX_TUNE_MAX_MR][NK];
    for (int round = 0; round < rounds; round++)
        for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
            if (!isa_runs(hw, isa))
                continue;
            const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
            for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
                const vx_ukernel_family *F = &set->families[f];
                for (int v = 0; v < VX_UK_VARIANTS; v++)
                    for (int m = 1; m <= F->mr_max && m <= VX_TUNE_MAX_MR; m++) {
                        char what[112];
                        snprintf(what, sizeof what, "L0 %s %dx%d, %s (round %d of %d)", set->name, m, F->nr,
                                 vname[v], round + 1, rounds);
                        step(&pr, what);
                        double *bt = best_t[isa][f][v][m - 1];
                        for (int i = 0; i < NK; i++) {
                            const double x = time_kernel(F->kern[v][m - 1], m, F->nr, k_points[i], &B, trials);
                            bt[i] = round == 0 || x < bt[i] ? x : bt[i];
                        }
                        if (round == rounds - 1)
                            t->l0[isa][f][v][m - 1] = fit(bt);
                    }
            }
        }

    /* L1 loads: pack an L2-resident block, as the packed path does, with
     * the middle family's tile (the rates barely depend on it). */
    step(&pr, "packing rates");
    {
        const vx_ukernel_set *set = vx_ukernels(hw->has_avx512 ? VX_ISA_AVX512 : VX_ISA_AVX2);
        const vx_ukernel_family *F = &set->families[set->nfamilies / 2];
        const int64_t rows = 96, kb = 256, ld = 320;
        float *src = big, *dst = big + (size_t)ld * 512;
        const int reps = o->quick ? 20 : 80;
        double best[2][2] = { { 1e300, 1e300 }, { 1e300, 1e300 } };
        for (int r = 0; r < reps; r++)
            for (int tr = 0; tr < 2; tr++) {
                double t0 = now_ns();
                vx_pack_a(rows, kb, src, tr ? 1 : ld, tr ? ld : 1, F->mr_max, dst);
                double dt = now_ns() - t0;
                best[0][tr] = dt < best[0][tr] ? dt : best[0][tr];
                t0 = now_ns();
                vx_pack_b(kb, rows, src, tr ? 1 : ld, tr ? ld : 1, F->nr, dst);
                dt = now_ns() - t0;
                best[1][tr] = dt < best[1][tr] ? dt : best[1][tr];
            }
        for (int tr = 0; tr < 2; tr++) {
            t->pack_a_ns[tr] = best[0][tr] / (double)(rows * kb);
            t->pack_b_ns[tr] = best[1][tr] / (double)(rows * kb);
        }
        /* The pack-B path: one nr-wide panel at a time, walking across a
         * 384 x 2048 B whose rows lie 8 KiB apart (L3-resident). */
        const int64_t kn = 384, wide = 2048;
        float *panel = big + (size_t)kn * wide;
        double best_narrow = 1e300;
        for (int r = 0; r < (o->quick ? 3 : 10); r++) {
            const double t0 = now_ns();
            for (int64_t j = 0; j + F->nr <= wide; j += F->nr)
                vx_pack_b(kn, F->nr, big + j, wide, 1, F->nr, panel);
            const double dt = now_ns() - t0;
            best_narrow = dt < best_narrow ? dt : best_narrow;
        }
        t->pack_b_narrow_ns[0] = best_narrow / (double)(kn * (wide / F->nr * F->nr));
        /* ... and from a B far larger than L3 (4096 x 4096, rows 16 KiB
         * apart), panel by panel down its whole height in 384-row blocks,
         * as the pack-B loop walks it: the rows come from DRAM. */
        const int64_t tall = 4096, across = 4096;
        if ((size_t)(tall * across) * sizeof(float) + (size_t)kn * F->nr * sizeof(float) <= big_bytes) {
            best_narrow = 1e300;
            for (int r = 0; r < (o->quick ? 1 : 3); r++) {
                const double t0 = now_ns();
                for (int64_t j = 0; j + F->nr <= across; j += F->nr)
                    for (int64_t p0 = 0; p0 < tall; p0 += kn)
                        vx_pack_b(kn < tall - p0 ? kn : tall - p0, F->nr, big + p0 * across + j, across, 1, F->nr,
                                  big + tall * across);
                const double dt = now_ns() - t0;
                best_narrow = dt < best_narrow ? dt : best_narrow;
            }
            t->pack_b_narrow_ns[1] = best_narrow / (double)(tall * (across / F->nr * F->nr));
        }
    }

    /* Memory levels, one core. */
    const int passes = o->quick ? 3 : 8;
    step(&pr, "L2 read bandwidth");
    t->bw_l2 = read_bw(big, (size_t)hw->l2_bytes / 2, passes * 20);
    step(&pr, "L3 read bandwidth");
    t->bw_l3 = l3_share > 0 ? read_bw(big, (size_t)l3_probe, passes * 4) : t->bw_l2;
    step(&pr, "strided panel read bandwidth");
    /* a 384-deep panel with rows 8 KiB apart (2048 floats: a common layer
     * width, and the worst case for set aliasing) */
    t->bw_strided = strided_walk_bw(big, 384, 8192, 384, 1, 16, passes * 4);
    /* the first pass over far-apart rows from L3, k block by k block
     * (256 rows, the middle of the kc candidates) */
    t->bw_stride_stream = strided_walk_bw(big, (size_t)(l3_share > 0 ? l3_probe : 64 * hw->l2_bytes) / 8192,
                                          8192, 256, 8192 / 64, 1, passes);
    step(&pr, "far-apart rows, more than the TLB keeps");
    {
        /* the first pass again, from DRAM (the far half of the buffer, four
         * blocks), in k blocks of rows 16 KiB apart, twice as many as the
         * TLB's sets hold for such rows (all their ways): every piece then
         * misses it (Zen 1: 3.7-4.4 GB/s against 9.9 for 256-row blocks;
         * NOTES.md). Unknown geometry: hw.h's fallback. */
        const size_t stride = 16384;
        int ways, tlb_sets;
        vx_hw_tlb_assumed(hw, &ways, &tlb_sets);
        const size_t sets = (size_t)tlb_sets;
        const size_t distinct = sets * 4096 / stride > 0 ? sets * 4096 / stride : 1;
        size_t block = 2 * (size_t)ways * distinct, rows = 4 * block;
        if (rows * stride > big_bytes / 2)
            rows = big_bytes / 2 / stride, block = rows / 4;
        t->bw_stride_tlb = strided_walk_bw(big + big_bytes / 2 / sizeof(float), rows, stride, block, stride / 64, 1,
                                           passes < 3 ? passes : 3);
    }
    step(&pr, "DRAM read bandwidth, one core");
    t->bw_dram = read_bw(big, big_bytes, passes);
    step(&pr, "DRAM read bandwidth, all cores");
    const double all = dram_bw_all(big, big_bytes, hw->physical_cores > 0 ? hw->physical_cores : 1, passes);
    t->bw_dram_all = all > t->bw_dram ? all : t->bw_dram;
    step(&pr, "L3 capacity read at L3's rate");
    t->l3_effective_bytes = l3_effective_bytes(big, big_bytes, hw->l3_bytes, l3_share > 0 ? l3_probe : 0, t->bw_l3,
                                               t->bw_dram, passes);
    if (t->bw_l3 < t->bw_dram)
        t->bw_l3 = t->bw_dram;
    if (t->bw_l2 < t->bw_l3)
        t->bw_l2 = t->bw_l3;

    step(&pr, "a cache line passed between two cores");
    if (hw->physical_cores >= 2) {
        const double ns = line_transfer_ns(passes);
        if (ns > 0)
            t->line_share_ns = ns;
        const double per_line = line_stream_ns(passes);
        if (per_line > 0)
            t->line_stream_ns = per_line;
    }
    step(&pr, "in-place kernels over a B in L3");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (isa_runs(hw, isa))
            inplace_probe((vx_isa)isa, hw, big, big_bytes, passes, t), packed_probe((vx_isa)isa, hw, big, big_bytes, passes, t);

    step(&pr, "rows 12 KiB apart in L2's sets");
    alias_probe(isa_runs(hw, VX_ISA_AVX512) ? VX_ISA_AVX512 : VX_ISA_AVX2, hw, big, big_bytes, passes, t);

    step(&pr, "next-panel fetches");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (isa_runs(hw, isa))
            fetch_probe((vx_isa)isa, big, big_bytes, passes, t);

    step(&pr, "B's panels packed on their first read");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (isa_runs(hw, isa))
            pack_probe((vx_isa)isa, big, big_bytes, passes, t);

    step(&pr, "the tiles in the GEMM driver");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (isa_runs(hw, isa))
            context_probe((vx_isa)isa, big, big_bytes, passes, t);

    step(&pr, "C streamed past the caches from one column of tiles");
    stream_probe(hw, big, big_bytes, passes, t);

    step(&pr, "few-row matrix-vector kernel");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (isa_runs(hw, isa))
            gemv_rows_ns((vx_isa)isa, big, passes, t->gemv_rows_ns[isa]);

    /* Fixed costs. The parallel region is timed after an idle gap longer
     * than the workers' spin, so they sleep and must be woken, as in a
     * server between requests; back-to-back regions (spinning workers) cost
     * far less, but pricing them so sent small shapes to two threads that
     * then waited tens of microseconds for a futex wake. */
    step(&pr, "call and parallel-region costs");
    {
        enum { SAMPLES = 301 };
        double v[SAMPLES];
        const int nt = hw->physical_cores > 1 ? hw->physical_cores : 1;
        for (int i = 0; i < 50; i++)
            vx_pool_run(empty_task, NULL, nt);
        for (int i = 0; i < SAMPLES; i++) {
            const double t0 = now_ns();
            for (int r = 0; r < 10; r++)
                vx_pool_run(empty_task, NULL, nt);
            v[i] = (now_ns() - t0) / 10;
        }
        t->wake_warm_ns = nt > 1 ? vx_tune_median(v, SAMPLES) : 0;
        if (nt > 1)
            region_handoffs(t, nt);
        const int wakes = o->quick ? 31 : 101;
        for (int i = 0; i < wakes; i++) {
            const struct timespec gap = { 0, 1000000 }; /* 1 ms: past the spin */
            nanosleep(&gap, NULL);
            const double t0 = now_ns();
            vx_pool_run(empty_task, NULL, nt);
            v[i] = now_ns() - t0;
        }
        t->wake_ns = nt > 1 ? vx_tune_median(v, wakes) : 0;
        float a = 0.5f, b = 0.25f, c = 0;
        for (int i = 0; i < 1000; i++)
            dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
        /* The plain call and the three forced load modes take turns sample
         * by sample, so a slow spell of the machine (the guest's speed
         * swings within seconds) lands on all four alike: measured one
         * after the other, the modes' differences came out anywhere in
         * -60..+100 ns from one tune to the next. Each keeps its fastest
         * sample, as the kernels do (noise only adds time; a median still
         * moved 40 % with a slow spell that covered the whole 30 ms). */
        static const vx_path path_of_mode[3] = { VX_PATH_PACKED, VX_PATH_PACK_B, VX_PATH_DIRECT };
        static double per[4][SAMPLES];
        for (int i = 0; i < SAMPLES; i++)
            for (int mode = -1; mode < 3; mode++) {
                vx_gemm_plan forced;
                memset(&forced, 0, sizeof forced);
                if (mode >= 0)
                    forced.path = path_of_mode[mode];
                vx_plan_set_override(mode >= 0 ? &forced : NULL);
                const double t0 = now_ns();
                for (int r = 0; r < 100; r++)
                    dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
                per[mode + 1][i] = (now_ns() - t0) / 100;
            }
        vx_plan_set_override(NULL);
        double fastest[4];
        for (int j = 0; j < 4; j++) {
            fastest[j] = per[j][0];
            for (int i = 1; i < SAMPLES; i++)
                fastest[j] = per[j][i] < fastest[j] ? per[j][i] : fastest[j];
        }
        t->call_ns = fastest[0];
        for (int mode = 0; mode < 3; mode++)
            t->mode_call_ns[mode] = fastest[mode + 1];
    }
    pr.done = pr.total;
    step(&pr, "done");

    free(B.a);
    free(B.b);
    free(B.c);
    free(big);
    t->measured = 1;
    return VX_OK;
}
