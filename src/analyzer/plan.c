/* The interim plan rule: a small analytical model built only from the
 * hardware query (register file, cache sizes, cores) and the ISA's FMA
 * shape. The analyzer (tuning file, measured L0 rates, candidate pricing)
 * replaces the numbers here without changing the interface. */
#include "analyzer/plan.h"

#include <stdio.h>
#include <string.h>

#include "analyzer/hw.h"

/* Per-core issue model shared by both x86 ISAs: two FMA pipes, two vector
 * loads per cycle, four cycles of FMA latency. */
enum { FMA_PER_CYCLE = 2, LOADS_PER_CYCLE = 2, FMA_LATENCY = 4, FREE_GPRS = 8 };

/* In-place B is read in place for at most this many row blocks per panel. */
enum { DIRECT_MAX_ROW_BLOCKS = 4 };

/* Packing one float costs about as long as this many flops of the kernel
 * (a load, a store and some shuffling against 32 flops per cycle). */
#define PACK_FLOPS_PER_FLOAT 48.0

static vx_gemm_plan g_override;
static int g_have_override;

static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Cycles per k step of an m x (V vectors) register tile. With A read in
 * place every row needs its own offset register; past the general-purpose
 * registers left over (about 8), each row's broadcast costs a reload too
 * (measured: 30x16 in place ran at half the rate of 6x64). */
static double tile_cycles(int m, int V, int a_in_place)
{
    double fma = (double)m * V / FMA_PER_CYCLE;
    double ld = (double)(m + V + (a_in_place && m > FREE_GPRS ? m - FREE_GPRS : 0)) / LOADS_PER_CYCLE;
    double c = fma > ld ? fma : ld;
    /* One cycle of slack on the latency bound: a tile with exactly
     * latency x pipes accumulators stalls on any hiccup. */
    return c > FMA_LATENCY + 1 ? c : FMA_LATENCY + 1;
}

/* Cycles per k step to cover an m x n block with one family. */
static double family_cycles(int64_t m, int64_t n, int mr, int nr, int vec, int a_in_place)
{
    const int V = nr / vec;
    const int64_t full = m / mr, rest = m % mr;
    double per_panel = (double)full * tile_cycles(mr, V, a_in_place) +
                       (rest ? tile_cycles((int)rest, V, a_in_place) : 0.0);
    return per_panel * (double)cdiv(n, nr);
}

/* Vector registers a family's widest tile holds: accumulators, B vectors
 * and the broadcast. */
static int tile_registers(const vx_ukernel_set *set, const vx_ukernel_family *F)
{
    const int V = F->nr / set->vec_floats;
    return F->mr_max * V + V + 1;
}

static int pick_family(const vx_ukernel_set *set, int64_t m, int64_t n, int a_in_place, int want_nr)
{
    int best = 0;
    double best_c = 0;
    for (int f = 0; f < set->nfamilies; f++) {
        const vx_ukernel_family *F = &set->families[f];
        if (want_nr) {
            if (F->nr == want_nr)
                return f;
            continue;
        }
        double c = family_cycles(m, n, F->mr_max, F->nr, set->vec_floats, a_in_place);
        /* On near-ties prefer a tile that leaves the compiler a spare register
         * (the full ones, 30x16 and 14x8, spill), then the wider tile:
         * fewer, longer B loads per FMA. */
        const int roomy = tile_registers(set, F) < set->vec_registers;
        const int best_roomy = tile_registers(set, &set->families[best]) < set->vec_registers;
        /* Within 3 %: closer than this model can tell tiles apart. */
        const int tie = c <= best_c * 1.03 && c >= best_c * 0.97;
        if (f == 0 || c < best_c * 0.97 ||
            (tie && (roomy > best_roomy || (roomy == best_roomy && F->nr > set->families[best].nr)))) {
            best = f;
            best_c = c;
        }
    }
    return best;
}

/* Pick threads_m x threads_n = t minimising the busiest thread's time in
 * flop-equivalents: its tiles' FMAs plus what it must pack. Splitting n
 * makes every thread pack all of A's rows; splitting m, all of B. */
static void pick_grid(int64_t m, int64_t n, int64_t k, int mr, int nr, int packs, int t,
                      int *tm_out, int *tn_out)
{
    const int64_t rt = cdiv(m, mr), ct = cdiv(n, nr);
    if (t > rt * ct)
        t = (int)(rt * ct);
    int best_tm = 1, best_tn = 1;
    double best_cost = -1;
    for (int tm = 1; tm <= t; tm++) {
        if (t % tm)
            continue;
        const int tn = t / tm;
        if (tm > rt || tn > ct)
            continue;
        const double rows = (double)cdiv(rt, tm) * mr, cols = (double)cdiv(ct, tn) * nr;
        double cost = 2.0 * rows * cols * (double)k;
        if (packs)
            cost += PACK_FLOPS_PER_FLOAT * (rows + cols) * (double)k;
        if (best_cost < 0 || cost < best_cost * 0.999) {
            best_cost = cost;
            best_tm = tm;
            best_tn = tn;
        }
    }
    *tm_out = best_tm;
    *tn_out = best_tn;
}

static void plan_gemm(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_gemm_plan *out);

/* A per-thread memo of recent plans, so a repeated shape costs a lookup
 * (the analyzer issue replaces it with a shared, bounded table). Entries
 * made under an override are never reused. */
enum { MEMO_SLOTS = 64 };
typedef struct {
    int64_t m, n, k;
    int flags; /* b_unit | a_unit << 1 | isa << 2 | threads << 4; 0 = empty */
    vx_gemm_plan plan;
} memo_entry;
static _Thread_local memo_entry t_memo[MEMO_SLOTS];

void vx_plan_gemm(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_gemm_plan *out)
{
    if (g_have_override) {
        plan_gemm(s, isa, max_threads, out);
        return;
    }
    const int flags = (s->b_unit_stride ? 1 : 0) | (s->a_unit_stride ? 2 : 0) | ((int)isa << 2) |
                      (max_threads << 4);
    const uint64_t h = ((uint64_t)s->m * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)s->n * 0xC2B2AE3D27D4EB4Full) ^
                       ((uint64_t)s->k * 0x165667B19E3779F9ull) ^ (uint64_t)flags;
    memo_entry *e = &t_memo[(h >> 32) % MEMO_SLOTS];
    if (e->flags == flags && e->m == s->m && e->n == s->n && e->k == s->k) {
        *out = e->plan;
        return;
    }
    plan_gemm(s, isa, max_threads, out);
    e->m = s->m;
    e->n = s->n;
    e->k = s->k;
    e->flags = flags;
    e->plan = *out;
}

static void plan_gemm(const vx_gemm_shape *s, vx_isa isa, int max_threads, vx_gemm_plan *out)
{
    const vx_hw_info *hw = vx_hw();
    const vx_ukernel_set *set = vx_ukernels(isa);
    const vx_gemm_plan *ov = g_have_override ? &g_override : NULL;
    memset(out, 0, sizeof *out);
    out->isa = isa;

    /* L0 and path. Small problems, and those where one operand is thin
     * enough that packing it would cost more than it saves, run in place. */
    const int64_t m = s->m, n = s->n, k = s->k;
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    /* In place when A is small enough to stay in L2 while B streams past it
     * once (packing B would cost a full extra pass over it), when B is thin,
     * or when the whole problem is too small to amortise any packing. */
    const double a_bytes = (double)m * (double)k * sizeof(float);
    const int tiny = flops <= 2.0 * 48 * 48 * 48;
    int in_place = a_bytes <= (double)hw->l2_bytes / 4 || n <= 2 * set->vec_floats || tiny;
    out->path = ov && ov->path ? ov->path : in_place ? VX_PATH_DIRECT : VX_PATH_PACKED;
    if (out->path == VX_PATH_DIRECT && !s->b_unit_stride)
        out->path = VX_PATH_PACK_B;

    if (out->path == VX_PATH_PACKED) {
        /* Big blocks: the tile with the best FMA-to-load ratio that still
         * leaves registers for B, i.e. the model's choice for a large square
         * (the same for every shape, so worked out once per ISA). */
        static int packed_family[VX_ISA_COUNT] = { -1, -1 };
        int f = ov && ov->nr ? -1 : __atomic_load_n(&packed_family[isa], __ATOMIC_RELAXED);
        if (f < 0) {
            f = pick_family(set, 4096, 4096, 0, ov ? ov->nr : 0);
            if (!(ov && ov->nr))
                __atomic_store_n(&packed_family[isa], f, __ATOMIC_RELAXED);
        }
        out->family = f;
    } else {
        out->family = pick_family(set, m, n, 1, ov ? ov->nr : 0);
    }
    const vx_ukernel_family *F = &set->families[out->family];
    out->nr = F->nr;
    out->mr = ov && ov->mr ? (ov->mr <= F->mr_max ? ov->mr : F->mr_max) : F->mr_max;

    /* In place with many row blocks: copy each kc x nr panel of B once and
     * let every row block read it contiguously, rather than walk B's rows
     * ldb apart again and again (m = 80, n = 3072, k = 768 on 2 threads: 79
     * -> 127 GFLOP/s). With a few row blocks the copy does not pay. */
    if (out->path == VX_PATH_DIRECT && !(ov && ov->path) && !tiny && cdiv(m, out->mr) > DIRECT_MAX_ROW_BLOCKS)
        out->path = VX_PATH_PACK_B;

    /* L1. Measured on the 2-core AVX-512 machine (benchmarks/NOTES.md):
     * long k blocks win, since each C tile is loaded and stored once per
     * block; kc is capped where a kc x nr B panel passes a quarter of L2,
     * and k is split into equal blocks so the last one is not a sliver. The
     * in-place paths use the same kc: keeping their B block in L1 (kc ~ 96
     * for nr = 64) measured 10-15% slower. mc x kc (the packed A block)
     * fills half of L2, kc x nc (the packed B block) half of this core's
     * share of L3. */
    const int64_t fl = (int64_t)sizeof(float);
    int64_t kc_max = imax(128, imin(512, (hw->l2_bytes / 4) / (out->nr * fl)));
    int64_t kblocks = cdiv(k, kc_max);
    int64_t kc = (cdiv(k, kblocks) + 7) & ~(int64_t)7;
    int64_t mc = imax(out->mr, ((hw->l2_bytes / 2) / (kc * fl)) / out->mr * out->mr);
    int64_t l3_share = hw->l3_bytes > 0 ? hw->l3_bytes / imax(1, hw->l3_cores) : hw->l2_bytes;
    int64_t nc = imax(out->nr, imin(4096, (l3_share / 2) / (kc * fl)) / out->nr * out->nr);
    out->kc = ov && ov->kc ? ov->kc : kc;
    out->mc = ov && ov->mc ? imax(out->mr, ov->mc / out->mr * out->mr) : mc;
    out->nc = ov && ov->nc ? imax(out->nr, ov->nc / out->nr * out->nr) : nc;

    /* L2: more threads only when each gets enough work to pay the wake-up. */
    int t = max_threads < 1 ? 1 : max_threads;
    const double min_flops_per_thread = 2.0 * 96 * 96 * 96;
    while (t > 1 && flops / t < min_flops_per_thread)
        t--;
    out->threads = t;
    if (ov && (ov->threads_m || ov->threads_n)) {
        out->threads_m = ov->threads_m ? ov->threads_m : 1;
        out->threads_n = ov->threads_n ? ov->threads_n : 1;
        out->threads = ov->threads ? ov->threads : out->threads_m * out->threads_n;
    } else if (t == 1) {
        out->threads_m = out->threads_n = 1;
    } else {
        pick_grid(m, n, k, out->mr, out->nr, out->path == VX_PATH_PACKED, t, &out->threads_m,
                  &out->threads_n);
        out->threads = out->threads_m * out->threads_n;
    }
}

void vx_plan_set_override(const vx_gemm_plan *o)
{
    if (o) {
        g_override = *o;
        g_have_override = 1;
    } else {
        memset(&g_override, 0, sizeof g_override);
        g_have_override = 0;
    }
}

void vx_plan_describe(const vx_gemm_plan *p, char *buf, int len)
{
    static const char *paths[] = { "auto", "packed", "pack_b", "direct" };
    snprintf(buf, (size_t)len, "%s %s %dx%d mc=%lld kc=%lld nc=%lld grid=%dx%d threads=%d",
             paths[p->path & 3], vx_ukernels(p->isa)->name, p->mr, p->nr, (long long)p->mc,
             (long long)p->kc, (long long)p->nc, p->threads_m, p->threads_n, p->threads);
}
