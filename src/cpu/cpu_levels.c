#include "cpu/cpu_levels.h"
#include "cpu/dot.h"
#include "cpu/resident.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/candidates.h"
#include "analyzer/cost.h"
#include "analyzer/hw.h"
#include "analyzer/tune.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "cpu/threadpool.h"

/* Two FMA pipes with four cycles of latency: fewer accumulators than this
 * leave a pipe idle whatever the loads do. */
enum { ACCUMULATORS_MIN = 8 };

/* L1d read bandwidth is not measured (the L0 rates already include it);
 * this only has to be far above L2's so that data in L1 costs nothing
 * extra: two 64-byte loads per cycle at ~3 GHz. */
#define L1_BYTES_PER_NS 384.0

/* Bytes of address space one way of a cache covers (sets x line): addresses
 * this far apart share a set. 0 when the geometry is unknown or does not
 * divide evenly (the model then assumes the worst for far-apart rows). */
static int64_t set_span(int64_t bytes, int ways, int line)
{
    if (bytes <= 0 || ways <= 0 || line <= 0 || bytes % ((int64_t)ways * line) != 0)
        return 0;
    return bytes / ways;
}

/* The context probe's ratios (tune.h, context_ratio) read 0.98-1.0 for
 * families that run alike from one tune to the next: their spread. */
#define CONTEXT_NOISE 0.02

/* The tiles' ratios apply from this k on: the probe's k is 768, and over k
 * of 16-176 (the GNN suite's outputs, DeepBench's 1500-row layers) they
 * moved 16 plans that ran up to 1.18x the time against 7 that gained
 * (NOTES.md, thirty-seventh session). */
#define CONTEXT_TILE_MIN_K 256

/* The tiles' context ratios (tune.h, context_tile) are against the least
 * time over L1's of any tile, the families' against the fastest family's
 * time: on the Intel Xeon guest the tiles' sat 3-4 % under the families'
 * (their geomean over each family's measured tile fastest in L1), and
 * taken as they were, every packed plan rose by that against the plans
 * priced without a context (a convolution's patches read in place, the
 * matrix-vector and dot forms) or with the families' (B read in place):
 * ResNet-50's stride-2 projection at batch 32, NCHW, went via NHWC to a
 * plan that ran 1.87x the time, ResNet-18's classifier at batch 32 to a
 * direct one at 1.28x. The tiles' are put on the families' level: divided
 * by that geomean (some then exceed 1; cost.c's floors allow for it). */
static void tile_context_level(vx_device_desc *d)
{
    double log_sum = 0;
    int n = 0;
    for (int f = 0; f < d->nfamilies; f++) {
        const vx_l0_family *F = &d->fam[f];
        double best = 0, tile = 0;
        for (int m = 1; m <= F->m_max; m++) {
            const double r = vx_l0_steady_rate(F, m);
            if (F->context_m[m - 1] > 0 && r > best)
                best = r, tile = F->context_m[m - 1];
        }
        if (tile > 0) {
            log_sum += log(tile / F->context);
            n++;
        }
    }
    const double level = n > 0 ? exp(log_sum / n) : 1.0;
    for (int f = 0; f < d->nfamilies; f++) {
        vx_l0_family *F = &d->fam[f];
        for (int m = 1; m <= F->m_max; m++)
            F->context_m[m - 1] /= level;
        F->context_min_k = n > 0 ? CONTEXT_TILE_MIN_K : 0;
    }
}

/* Tiles of fewer than WIDE_TILE_VECTORS vectors a row broadcast one A
 * element for every one or two FMAs, where wider ones broadcast one for
 * three or four (and walk A's block two to four times as often, once per
 * column panel; which of the two costs them is not settled). In the GEMM
 * driver over wide B (BERT's layers, k = 768) they lose: an Intel Xeon
 * guest ran 336x2304x768 on 6 x 64 and 9 x 48 at 157-162 GFLOP/s, 14 x 32
 * at 149-151 and 22 x 16 or 30 x 16 at 142-144 (the context probe saw it
 * there; thirty-third session); two
 * AMD Zen 4 cores ran 1008-2048 x 2304 x 768 on 10 x 16 and 14 x 32 2-9 %
 * slower than on 7 x 48 or 6 x 64, 2048x3072x768 3.7-9 %, in every
 * process and window timed, yet the probe's medians put them within 1-2 %
 * of each other, its noise, in five tunes; and the tile the tune put
 * first took BERT's 15 packed layers (0.956x of oneDNN on 10 x 16). Over
 * few columns the narrow tiles hold their own: 8192 x 128..512 x 768 ran
 * 10 x 16, 14 x 32, 5 x 64 and 6 x 64 within 3 % of each other, and
 * 3327x64x3703, 19717x64x500 and 89250x128x500 4-6 % slower on 5 x 64
 * than on 10 x 16 (NOTES.md, forty-third session). So from n =
 * NARROW_TILE_MIN_N on, a narrow tile's context ratio is at most
 * NARROW_TILE_CAP of the wide tiles' median: the probe's own ratio where
 * it measured a larger gap (Intel), this where its noise hid one. */
enum { WIDE_TILE_VECTORS = 3, NARROW_TILE_MIN_N = 768 };
#define NARROW_TILE_CAP 0.97

static void narrow_tiles_capped(vx_device_desc *d, int vec_floats)
{
    double wide[VX_MAX_L0_FAMILIES * VX_MAX_TILE_M];
    int n = 0;
    for (int f = 0; f < d->nfamilies; f++)
        for (int m = 1; d->fam[f].n >= WIDE_TILE_VECTORS * vec_floats && m <= d->fam[f].m_max; m++)
            if (d->fam[f].context_m[m - 1] > 0)
                wide[n++] = d->fam[f].context_m[m - 1];
    if (n == 0)
        return;
    const double cap = NARROW_TILE_CAP * vx_tune_median(wide, n);
    for (int f = 0; f < d->nfamilies; f++)
        if (d->fam[f].n < WIDE_TILE_VECTORS * vec_floats) {
            d->fam[f].context_cap = cap;
            d->fam[f].context_cap_min_n = NARROW_TILE_MIN_N;
        }
}

/* The ways of an L2 set the model counts on for rows far apart (levels.h,
 * alias_ways): what the tune's alias probe measured, where that is fewer
 * than half the ways (the model's count otherwise: the probe's panels of
 * 128 rows or more cannot show the more a level of few ways keeps; AMD Zen
 * 4's 8-way L2 ran 16x3072x768 fastest at kc = 768, NOTES.md). 0: half. */
static int l2_alias_ways(double measured, int ways)
{
    const int w = (int)measured;
    return w >= 1 && w < ways / 2 ? w : 0;
}

static void describe(vx_isa isa, vx_device_desc *d)
{
    const vx_hw_info *hw = vx_hw();
    const vx_tune *tu = vx_tune_active();
    const vx_ukernel_set *set = vx_ukernels(isa);
    memset(d, 0, sizeof *d);
    d->name = isa == VX_ISA_AVX512 ? "cpu-avx512" : "cpu-avx2";
    d->elem_bytes = (int)sizeof(float);
    d->units = hw->physical_cores > 0 ? hw->physical_cores : 1;

    /* L0: every family of the generated table, its register cost (m rows of
     * accumulators, one row of B vectors, one broadcast) and its rates. */
    d->nfamilies = set->nfamilies < VX_MAX_L0_FAMILIES ? set->nfamilies : VX_MAX_L0_FAMILIES;
    for (int f = 0; f < d->nfamilies; f++) {
        const vx_ukernel_family *K = &set->families[f];
        vx_l0_family *F = &d->fam[f];
        const int V = K->nr / set->vec_floats;
        F->n = K->nr;
        F->m_max = K->mr_max < VX_MAX_TILE_M ? K->mr_max : VX_MAX_TILE_M;
        F->regs_per_m = V;
        F->regs_fixed = V + 1;
        /* the family's k steps in the GEMM driver against the others'
         * (tune.h, context_ratio), where they part by more than the probe's
         * noise: a family within it flipping plans on knife edges for
         * nothing (ResNet-50's c5 projection at batch 8, NHWC, packed 14 x 32
         * priced 0.6 % under pack-B 9 x 48 on an Intel Xeon guest; with
         * 32-wide tiles at 0.988 the pack-B plan won and ran 1.7x the time;
         * NOTES.md, thirty-third session) */
        const double in_context = f < VX_TUNE_MAX_FAMILIES ? tu->context_ratio[isa][f] : 0.0;
        F->context = in_context > 0 && in_context <= 1.0 - CONTEXT_NOISE ? in_context : 1.0;
        /* and tile by tile where the probe told them apart (tune.h,
         * context_tile); not rounded up as the family's are: the tiles a
         * tune's L1 rates put level (the widest of each family, within the
         * clock's noise) are the ones whose order in the driver decides */
        for (int m = 1; m <= F->m_max && m <= VX_TUNE_MAX_MR && f < VX_TUNE_MAX_FAMILIES; m++) {
            const double r = tu->context_tile[isa][f][m - 1];
            F->context_m[m - 1] = r > 0 && r <= 1.0 ? r : 0.0;
        }
        for (int mode = 0; mode < VX_LOAD_MODES; mode++) {
            F->modes_ok[mode] = 1; /* generated for every variant; mode order = variant order */
            for (int m = 1; m <= F->m_max; m++) {
                const vx_l0_rate r = tu->l0[isa][f < VX_TUNE_MAX_FAMILIES ? f : 0][mode][m - 1];
                F->rate[mode][m - 1] = (vx_rate){ r.overhead_ns, r.ns_per_k };
            }
        }
    }
    tile_context_level(d);
    narrow_tiles_capped(d, set->vec_floats);
    /* The direct (depthwise) family loads an input and a filter vector for
     * every FMA, so the load ports hold it to half the FMA rate at best, and
     * short rows and padded edges take more: priced at 2.5x the best tile's
     * time per flop (an estimate, not measured yet). */
    double best_flops_per_ns = 0;
    for (int f = 0; f < d->nfamilies; f++)
        for (int m = 1; m <= d->fam[f].m_max; m++)
            if (d->fam[f].rate[0][m - 1].p > 0) {
                const double r = 2.0 * m * d->fam[f].n / d->fam[f].rate[0][m - 1].p;
                best_flops_per_ns = r > best_flops_per_ns ? r : best_flops_per_ns;
            }
    d->direct_ns_per_flop = best_flops_per_ns > 0 ? 2.5 / best_flops_per_ns : 0.05;
    /* The few-row matrix-vector kernel keeps its partial sums in L1, a load
     * and a store per FMA chain: measured by the tune (gemv_rows_ns). A
     * file without it: 23-26 GFLOP/s for 2..4 rows on AMD Zen 1, where the
     * tune's best tile rate (timed in short bursts, at boost clocks) read 47
     * (NOTES.md): half that rate. On 2 AMD Zen 4 cores, with the sums kept
     * in L1, the kernel ran 0.68-0.93 of the best tile's rate (80-109 of
     * 117 GFLOP/s): at half, 2 x 2304 x 768 from L3 was priced 65 us, the
     * tuned rates price it 55; it ran 48 (NOTES.md, thirty-first session). */
    d->gemv_rows_max = vx_gemv_kernels_for(set->isa)->rows_max;
    d->gemv_ksplit_len = VX_GEMV_KSPLIT_LEN;
    d->gemv_ksplit_k_per_row = VX_GEMV_KSPLIT_K_PER_ROW;
    for (int rows = 2; rows <= 4; rows++) {
        const double tuned = tu->gemv_rows_ns[isa][rows - 2];
        d->gemv_ns_per_flop[rows] = tuned > 0                ? tuned
                                    : best_flops_per_ns > 0 ? 1.0 / (0.5 * best_flops_per_ns)
                                                            : 0.05;
    }
    /* The dot-form tile (cpu/dot.h) holds dot_mr * dot_nr accumulators,
     * each fed one FMA per vector of k, as a GEMM tile with as many
     * accumulator vectors is fed one per k step: priced at the measured
     * packed rate of such a tile (m rows x nr/lanes vectors), per vector of
     * k, plus its call cost once more for the lane reductions (an
     * estimate: on AMD Zen 5 the 4 x 6 dot tile ran 245-253 GFLOP/s a core
     * in L1 at k = 512-768 where the 6 x 64 tile ran 266, ~8 ns a call
     * more; NOTES.md, fourteenth session). Its k blocks keep the tile's
     * rows, (mr + nr) x kc, in three quarters of L1. */
    {
        const vx_dot_set *D = vx_dot_kernels(set->isa);
        const int acc = D->mr * D->nr;
        double p_best = 0, o_best = 0;
        for (int f = 0; f < d->nfamilies; f++) {
            const int V = d->fam[f].n / set->vec_floats;
            if (V < 1 || acc % V != 0 || acc / V > d->fam[f].m_max)
                continue;
            const vx_rate r = d->fam[f].rate[VX_LOAD_COPY_AB][acc / V - 1];
            if (r.p > 0 && (p_best == 0 || r.p < p_best)) {
                p_best = r.p;
                o_best = r.o;
            }
        }
        if (p_best == 0 && best_flops_per_ns > 0) { /* no tile with as many accumulators */
            p_best = 2.0 * acc * set->vec_floats / best_flops_per_ns;
            o_best = 10.0;
        }
        d->dot_mr = D->mr;
        d->dot_nr = D->nr;
        d->dot_vec = D->vec_floats;
        d->dot_kc = (hw->l1d_bytes * 3 / 4) / ((int64_t)(D->mr + D->nr) * (int64_t)sizeof(float)) / D->vec_floats *
                    D->vec_floats;
        if (d->dot_kc < D->vec_floats)
            d->dot_kc = D->vec_floats;
        d->dot_rate = (vx_rate){ (float)(2.0 * o_best), (float)(p_best / D->vec_floats) };
    }
    /* The B-resident kernels (cpu/resident.h) keep both FMA pipes busy
     * with no tile loads or stores between their k steps: on AMD Zen 5 the
     * 16-wide k = 16 kernel ran 2.0 ns a row in L1 (8.5 cycles for 16 FMAs),
     * 0.95x the best tile's measured rate; priced at that share of it. */
    {
        const vx_resident_set *R = vx_resident_kernels(set->isa);
        d->resident_vec = R->vec_floats;
        d->resident_unit = VX_RESIDENT_ROW_UNIT;
        for (int v = 0; v < 2; v++) {
            d->resident_kmax[v] = R->kmax[v];
            d->resident_rows[v] = R->rows[v];
        }
        d->resident_ns_per_vfma =
            best_flops_per_ns > 0 ? 2.0 * R->vec_floats / (0.95 * best_flops_per_ns) : 0.1;
    }
    d->reg_limit = set->vec_registers;
    d->acc_min = ACCUMULATORS_MIN;
    d->keep_per_family = 3;
    d->keep_rate_frac = VX_CPU_KEEP_RATE_FRAC;

    /* L1: kc from 128 to 512, 768 for the AVX-512 families (NOTES.md: long
     * k blocks win until the B panel leaves L2; each C tile is loaded and
     * stored once per k block, and each panel walk of an in-place B starts
     * anew). 768 against the model's 128-512 picks, forced, 2 AMD Zen 5
     * cores: 29x1795x1845 0.90-0.92x the time, 32x2077x531 0.92x,
     * 272x2304x768 packed 0.97x, 1024x3072x768 0.985x, 2048^3 1.00x (1024
     * gained no more than 0.5 %); the AVX2 4x24 tiles' packed BERT layers
     * ran 1.02-1.10x the time with it. The slices (m0 + n0) x kc must fit a
     * quarter of L2 (cap_slice); the packed A block fills a quarter or half
     * of L2, the packed B block half of this core's share of L3. */
    d->k_step = 64;
    static const int kc_mult[] = { 2, 3, 4, 6, 8, 12 /* AVX-512 only: the last */ };
    const int all_kc = (int)(sizeof kc_mult / sizeof kc_mult[0]);
    d->nkc = isa == VX_ISA_AVX512 ? all_kc : all_kc - 1;
    memcpy(d->kc_mult, kc_mult, sizeof kc_mult);
    /* The driver's last-level thresholds (gemm.c: C streamed, B's far
     * fetches, the few-row passes; the model prices the first as the driver
     * runs it) take the L3 the tune read at L3's rate where that is less
     * than reported (tune.h, l3_effective_bytes). The memory levels keep
     * the reported size: on the Intel Xeon guest, pricing operands of
     * 32-120 MiB a core at DRAM's rate sent AlexNet's fc6/fc7 at batch 8-16
     * (B of 67-151 MB, read again by every call) from pack-B to direct
     * plans that ran 1.06-1.56x the time (NOTES.md, thirty-sixth session). */
    const int64_t l3_measured = tu->l3_effective_bytes > 0 && tu->l3_effective_bytes < (double)hw->l3_bytes
                                    ? (int64_t)tu->l3_effective_bytes
                                    : 0;
    vx_gemm_set_last_level_bytes(l3_measured);
    const int64_t l3_share = hw->l3_bytes > 0 ? hw->l3_bytes / (hw->l3_cores > 0 ? hw->l3_cores : 1) : 0;
    d->cap_a = hw->l2_bytes;
    d->cap_b = l3_share > hw->l2_bytes ? l3_share : hw->l2_bytes;
    d->cap_slice = hw->l2_bytes / 4;
    d->fill_a[0] = 0.25;
    d->fill_a[1] = 0.5;
    d->nfill_a = 2;
    d->fill_b = 0.5;
    d->nc_max = 4096;

    /* Memory levels: an operand "lives" in a level when it takes at most
     * half of it (the other half holds everything else the loops touch). */
    int n = 0;
    d->mem[n++] = (vx_mem_level){ "L1", hw->l1d_bytes / 2, L1_BYTES_PER_NS, hw->l1d_ways, hw->line_bytes,
                                  set_span(hw->l1d_bytes, hw->l1d_ways, hw->line_bytes), 0 };
    d->mem[n++] = (vx_mem_level){ "L2", hw->l2_bytes / 2, tu->bw_l2, hw->l2_ways, hw->line_bytes,
                                  set_span(hw->l2_bytes, hw->l2_ways, hw->line_bytes),
                                  l2_alias_ways(tu->l2_alias_ways, hw->l2_ways) };
    if (l3_share > 0)
        d->mem[n++] = (vx_mem_level){ "L3", l3_share / 2, tu->bw_l3, 0, 0, 0, 0 };
    d->mem[n++] = (vx_mem_level){ "DRAM", INT64_MAX, tu->bw_dram, 0, 0, 0, 0 };
    d->nmem = n;
    d->bw_shared = tu->bw_dram_all;
    d->bw_strided = tu->bw_strided;
    d->bw_stride_stream = tu->bw_stride_stream;
    d->bw_stride_tlb = tu->bw_stride_tlb;
    const long page = sysconf(_SC_PAGESIZE);
    d->page_bytes = page > 0 ? page : 4096;
    /* a guest told of no TLB still has one (hw.h): on an Intel Xeon guest
     * that hides it, 32x4096x25088 read B in place (rows 16 KiB apart,
     * from DRAM) in k blocks of 768 rows at 1.8-2.0x the time of 192-row
     * blocks, priced alike without it (NOTES.md, thirty-seventh session) */
    vx_hw_tlb_assumed(hw, &d->tlb_ways, &d->tlb_sets);
    d->copy_b_narrow_ns[0] = tu->pack_b_narrow_ns[0];
    d->copy_b_narrow_ns[1] = tu->pack_b_narrow_ns[1];
    d->buffer_level_a = 1;
    d->copy_ns[0][0] = tu->pack_a_ns[0];
    d->copy_ns[0][1] = tu->pack_a_ns[1];
    d->copy_ns[1][0] = tu->pack_b_ns[0];
    d->copy_ns[1][1] = tu->pack_b_ns[1];
    /* Convolution gathers pay a fixed cost per contiguous run on top of the
     * packing rate (bounds, zero padding, the loop around each run): 15 ns,
     * fitted to gathers timed on the 2-core AMD EPYC (NOTES.md: 0.48 ns per
     * element over 56-float runs, 1.3 over 14-float runs, 0.20 packing).
     * Not measured by vortex-install-tune yet. */
    d->gather_run_ns = 15.0;
    /* vx_pack_a transposes 8 x 8 blocks; vortex-install-tune times it with
     * the middle family's tile (cpu_tune.c), whose rows fill part of each
     * block: smaller tiles fill less of it (3 rows: 3/8, measured 2.4x the
     * time per float of 6 rows on the AMD EPYC) */
    {
        const vx_ukernel_set *tset = vx_ukernels(hw->has_avx512 ? VX_ISA_AVX512 : VX_ISA_AVX2);
        d->copy_a_rows = tset->families[tset->nfamilies / 2].mr_max;
        d->copy_a_vec = 8;
    }
    d->parallel_ns[0] = tu->wake_ns;
    d->parallel_ns[1] = tu->wake_warm_ns;
    d->call_ns = tu->call_ns;
    d->stream_c_min = vx_gemm_stream_c_min();
    d->last_level_bytes = l3_measured;
    d->stream_b_max = vx_gemm_stream_b_max();
    /* the driver's bound and the model's, from the tune's stream probe
     * (tune.h, stream_one_tile_ratio; not measured: the driver's default) */
    vx_gemm_set_stream_one_tile_k_max(vx_tune_stream_one_tile_k_max(tu));
    d->stream_one_tile_k_max = vx_gemm_stream_one_tile_k_max();
    d->line_share_ns = tu->line_share_ns;
    d->line_stream_ns = tu->line_stream_ns;
    /* Measured on AMD Zen 5 (2 threads, A streamed in place once: tall,
     * skinny GEMMs, tiles forced and alternated in one process; NOTES.md,
     * twenty-first session): the fastest tiles were those of about 12
     * accumulators, 8-12 x 16 (30 x 16: 1.5-1.7x the time), 6 x 32 (14 x 32:
     * 1.5x), 4 x 48 (8 x 48: 1.25x, 9 x 48 1.4x), 4 x 64 (6 x 64: 1.15x);
     * the k step of each best tile is at most 28 operations, about what
     * a 448-entry reorder window holds over the 16 k steps of a line. The
     * limit is 30: tiles of 29 (9 x 32, 5 x 64) ran within a few percent of
     * the best, and priced slower, 89250x32x500 left 9 x 32 in place for a
     * packed plan that ran 1.2x the time. */
    d->a_step_ops = 30.0;
    double least = tu->mode_call_ns[0];
    for (int mode = 1; mode < VX_LOAD_MODES; mode++)
        least = tu->mode_call_ns[mode] < least ? tu->mode_call_ns[mode] : least;
    for (int mode = 0; mode < VX_LOAD_MODES; mode++)
        d->mode_ns[mode] = tu->mode_call_ns[mode] - least;
    /* last: the calibration prices the probe with everything above */
    d->inplace_overlap = 1.0 - vx_cost_inplace_stall(d, tu->inplace_probe[isa].fam, tu->inplace_probe[isa].m,
                                                     VX_PROBE_N, VX_PROBE_K, tu->inplace_probe[isa].ns);
    d->packed_extra = vx_cost_packed_scale(d, tu->packed_probe[isa].fam, tu->packed_probe[isa].m,
                                           VX_PROBE_PACKED_M, VX_PROBE_N, VX_PROBE_K, tu->packed_probe[isa].ns) -
                      1.0;
}

static vx_cpu_model *g_model[VX_ISA_COUNT];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

const vx_cpu_model *vx_cpu_model_get(vx_isa isa)
{
    if ((unsigned)isa >= VX_ISA_COUNT)
        return NULL;
    vx_cpu_model *m = __atomic_load_n(&g_model[isa], __ATOMIC_ACQUIRE);
    if (m)
        return m;
    pthread_mutex_lock(&g_mu);
    m = g_model[isa];
    if (!m && (m = calloc(1, sizeof *m))) {
        describe(isa, &m->desc);
        m->fetch_next = vx_tune_fetches_next(vx_tune_active(), isa);
        m->pack_near_on_read = vx_tune_packs_near_on_read(vx_tune_active(), isa);
        if (vx_candidates_build(&m->desc, &m->cand) != 0) {
            free(m);
            m = NULL;
        } else {
            /* the pool compares its run-time readings of a warm region's
             * hand-offs with the one taken when the region was priced */
            vx_pool_set_region_baseline(vx_tune_active()->region_handoff_ns);
            __atomic_store_n(&g_model[isa], m, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return m;
}

void vx_cpu_model_reset(void)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < VX_ISA_COUNT; i++) {
        vx_cpu_model *m = g_model[i];
        g_model[i] = NULL;
        if (m) {
            vx_candidates_free(&m->cand);
            free(m);
        }
    }
    pthread_mutex_unlock(&g_mu);
}
