/* What vortex-install-tune measures once per machine and the cost model
 * reads at call time: the L0 micro-kernel rates (in cache) and the bytes per
 * nanosecond of every load the model prices (packing, cache levels, DRAM),
 * plus the fixed costs of a call and of waking the thread pool.
 *
 * The numbers live in a versioned JSON tuning file carrying a hardware
 * fingerprint (tunefile.c). Without a usable file the library runs on
 * defaults derived from the hardware query alone (tune.c). */
#ifndef VX_ANALYZER_TUNE_H
#define VX_ANALYZER_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/hw.h"
#include "cpu/ukernel.h"
#include "vortex/vortex.h"

/* 2: "stride_stream" is the in-place kernels' first pass k block by k
 * block (gemm.c's loop order), no longer one row piece per row in a single
 * pass; files of version 1 are re-measured. */
#define VX_TUNE_VERSION 2
#define VX_TUNE_MAX_FAMILIES 8
#define VX_TUNE_MAX_MR 32

/* Time of one micro-kernel call with its operands in cache:
 *     t(k) = overhead_ns + ns_per_k * k
 * (overhead: loading and storing the C tile, call set-up). Rates the
 * machine did not measure keep the built-in issue-model estimate. */
enum { VX_TUNE_GEMV_ROWS = 3 }; /* the few-row kernel's rates: 2, 3 and 4 rows */

typedef struct {
    float overhead_ns;
    float ns_per_k;
} vx_l0_rate;

/* What must match for a tuning file to apply to this machine. */
typedef struct {
    char cpu_model[128];
    int physical_cores;
    int64_t l1d_bytes, l2_bytes, l3_bytes;
    int has_avx2_fma, has_avx512;
} vx_fingerprint;

/* One probe's measurement (the in-place and packed probes below): the
 * family and rows of its tile, and the time it took (0: not measured). */
typedef struct {
    int fam, m;
    double ns;
} vx_tune_probe;

typedef struct {
    int version;             /* VX_TUNE_VERSION */
    vx_fingerprint fp;
    char created[32];        /* ISO 8601 UTC, "" for built-in defaults */
    int measured;            /* 1 = numbers from vortex-install-tune, 0 = built-in defaults */

    /* L0: [isa][family index in vx_ukernels(isa)][variant][m - 1]. The file
     * keys families by nr, so a file survives families being added. */
    vx_l0_rate l0[VX_ISA_COUNT][VX_TUNE_MAX_FAMILIES][VX_UK_VARIANTS][VX_TUNE_MAX_MR];

    /* L1 loads, nanoseconds per float packed. [0]: the source is read along
     * its unit stride (A row-major along k, B row-major along n);
     * [1]: the source is transposed (strided reads). */
    double pack_a_ns[2];
    double pack_b_ns[2];
    /* Packing one nr-wide B panel at a time from rows a page-multiple apart
     * (the pack-B path on a wide B), ns per float: [0] B in L3, [1] B in DRAM. */
    double pack_b_narrow_ns[2];

    /* Read bandwidth of one core from each level, bytes per nanosecond
     * (= GB/s), and of all cores together from DRAM. */
    double bw_l2, bw_l3, bw_dram, bw_dram_all;
    /* Bytes per nanosecond re-reading a panel of 64-byte row pieces a
     * page-multiple stride apart (an in-place operand at a large leading
     * dimension): set aliasing and no prefetch across pages. */
    double bw_strided;
    /* ... and reading such rows once, as the in-place kernels' first pass
     * does: k block by k block (256 rows), each block panel by panel. */
    double bw_stride_stream;
    double bw_stride_tlb;      /* the first pass again, from DRAM, with k blocks of more rows than
                                  the TLB's sets keep mapped (optional in the file) */
    /* The in-place probe, per ISA (cpu_tune.c, optional in the file): one
     * thread runs family `fam`'s m-row A-and-B-in-place kernel over a
     * 2m x VX_PROBE_N x VX_PROBE_K problem (B's rows VX_PROBE_N floats
     * apart, read from L3, panel by panel as gemm.c's run_inplace walks
     * them); ns is what that pass took beyond the same calls on a B panel
     * in L2 (0: not measured). The analyzer calibrates how much of its
     * priced in-place streams the kernels wait for from it (cost.c,
     * vx_cost_inplace_stall). */
    vx_tune_probe inplace_probe[VX_ISA_COUNT];
    /* The packed probe, the same way (optional in the file): one thread
     * runs the packed path (A and B copied, mc = VX_PROBE_PACKED_M, kc = k,
     * nc = n) with that tile over a VX_PROBE_PACKED_M x VX_PROBE_N x
     * VX_PROBE_K problem, B from L3. The analyzer scales what its price of
     * a packed plan adds to the kernels' time by it (cost.c,
     * vx_cost_packed_scale). */
    vx_tune_probe packed_probe[VX_ISA_COUNT];
    /* The few-row matrix-vector kernel (cpu/gemv.h, axpy_rows), per ISA
     * and for 2, 3 and 4 rows (optional in the file): ns per flop on one
     * thread over a matrix in L2, its partial sums in L1 as for a matrix in
     * the caches (0: not measured; the analyzer then estimates it from the
     * GEMM tiles' rate). */
    double gemv_rows_ns[VX_ISA_COUNT][VX_TUNE_GEMV_ROWS];
    /* The CPU driver's next-panel fetches (cpu/gemm.c, next_panel_fetch)
     * on the fetch probe, per ISA (optional in the file): its time with
     * them over its time without, on one thread (0: not measured; the
     * driver then fetches). Below 1 they pay on this machine. */
    double fetch_next_ratio[VX_ISA_COUNT];
    /* Direct plans packing each B panel as their first row tile reads it
     * (cpu/gemm.c, packs_on_read) where B's rows lie closer than a page,
     * on the pack-on-read probe, per ISA (optional in the file): the time
     * with the panels packed over the time with every row tile reading B
     * in place (0: not measured; the driver then packs). Below 1 packing
     * pays on this machine. */
    double pack_on_read_ratio[VX_ISA_COUNT];
    /* Each family's fastest tile in L1 run through the packed driver on one
     * thread (the context probe, cpu_tune.c), per ISA and family (optional
     * in the file): its rate over the fastest family's there, in (0, 1]
     * (0: not measured). The analyzer divides the family's L1 rates by it. */
    double context_ratio[VX_ISA_COUNT][VX_TUNE_MAX_FAMILIES];
    /* The same probe tile by tile (optional in the file), per ISA, family
     * and m (index m - 1): the tile's time in the driver over what its L1
     * rate predicts there, the least such ratio over this ISA's tiles
     * against it, in (0, 1] (0: not measured; the family's context_ratio
     * then stands). The L1 rates of tiles that issue alike rank them by the
     * clock each caught, from one tune to the next; in the driver, on an
     * Intel Xeon guest, 6 x 64 ran BERT's 1024-2048-row layers 3-8 % faster
     * than 9 x 48 or 5 x 48, which the tunes' L1 rates put ahead of it
     * (NOTES.md, thirty-seventh session). The analyzer divides the tile's
     * L1 rates by it. */
    double context_tile[VX_ISA_COUNT][VX_TUNE_MAX_FAMILIES][VX_TUNE_MAX_MR];
    /* The ways of an L2 set that keep the rows of an in-place B panel for
     * its next row tile, where the rows are a multiple of 4 KiB apart and
     * so share few sets (the alias probe, cpu_tune.c; optional in the file,
     * 0: not measured, and the model counts half the ways). */
    double l2_alias_ways;
    /* The L3 one core reads at L3's rate, in bytes, where the capacity
     * probe (cpu_tune.c) found it at most half the size the hardware query
     * reports (optional in the file; 0: not measured, or as reported). A
     * guest may be told of the host's whole L3: the Intel Xeon guest of
     * NOTES.md reports 480 MiB and reads like DRAM past 64-128 MiB. The
     * driver's last-level thresholds (gemm.c: streaming C, which the model
     * prices, B's far fetches, the few-row passes) take it; the model's
     * memory levels keep the reported L3 (cpu_levels.c says why). */
    double l3_effective_bytes;
    /* The stream probe (cpu_tune.c; optional in the file): a column of
     * pack-B tiles over a C twice the last-level cache, all cores, at k =
     * VX_TUNE_STREAM_K (8, 16, 32), its time with C staged and streamed past
     * the caches over its time with plain stores (0: not measured). The CPU
     * driver streams the C of such cells up to the deepest of those k where
     * the ratio is below 1 (vx_tune_stream_one_tile_k_max). On 2 AMD Zen 5
     * cores k = 32 ran 0.89-0.94x the time streamed; on 2 AMD Zen 4 cores
     * k = 8 0.84-0.94x, k = 16 and 32 1.2-1.5x (NOTES.md, twentieth and
     * fortieth sessions). */
    double stream_one_tile_ratio[3];

    /* Fixed costs, nanoseconds: one parallel region on the pool (hand out
     * work, join) when its workers sleep and must be woken (wake_ns) and when
     * they still spin after a recent region (wake_warm_ns), and one dyn_gemm
     * call's checks and plan lookup before any kernel runs. */
    double wake_ns;
    double wake_warm_ns;
    /* A 1x1x1 call forced onto each load mode (copy A+B, copy B, in place)
     * through the testing override (which skips the plan cache, so all three
     * include one search): their differences are what a mode costs before
     * its first flop (buffers, packing set-up, loop entry). */
    double mode_call_ns[3];
    double call_ns;
    /* ns a cache line takes to move to the other core when two cores
     * store into it in turn (C rows whose line straddles two threads'
     * columns; optional in the file) */
    double line_share_ns;
    /* ns per line of many that one core writes and another then reads,
     * the transfers overlapping (a K split's partial sums; optional) */
    double line_stream_ns;
    /* the thread pool's reading of a warm region's hand-offs while
     * wake_warm_ns was measured: what its run-time readings are compared
     * with (threadpool.h; optional, 0: none) */
    double region_handoff_ns;
} vx_tune;

/* The in-place probe's problem (tune.h, inplace_probe): 9 KiB rows (a
 * transformer's QKV width), not a power of two, and one 384-deep k block. */
enum { VX_PROBE_N = 2304, VX_PROBE_K = 384, VX_PROBE_PACKED_M = 80 };

/* The fingerprint of this machine. */
void vx_fingerprint_of(const vx_hw_info *hw, vx_fingerprint *fp);

/* Built-in defaults from the hardware query alone (never fails). */
void vx_tune_defaults(const vx_hw_info *hw, vx_tune *t);

/* Where the tuning file is looked for and written: $VORTEX_TUNE_FILE, else
 * $XDG_CACHE_HOME/vortex/tune.json, else $HOME/.cache/vortex/tune.json.
 * Returns 0 and writes "" when none can be formed (no HOME). */
int vx_tune_default_path(char *buf, size_t len);

/* Read a tuning file into *t, which the caller has filled with defaults:
 * every value the file gives (and that passes the checks) replaces one.
 * The file must parse, carry VX_TUNE_VERSION and this machine's fingerprint,
 * and every number must be finite and in a sane range; otherwise *t is left
 * exactly as it was, the reason is written to why and an error returned
 * (VX_ERR_INVALID_ARG for a bad file, VX_ERR_UNSUPPORTED for another
 * machine's or version's). Never crashes on any input. */
vx_status vx_tune_load(const char *path, const vx_hw_info *hw, vx_tune *t, char *why, size_t whylen);

/* Write *t atomically: to a temporary file in the same directory (created
 * if missing), fsync, then rename over path. A failure leaves any existing
 * file intact and says why. */
vx_status vx_tune_save(const char *path, const vx_tune *t, char *why, size_t whylen);

/* The tuning the library uses in this process: loaded from the default path
 * on first use (thread-safe), else the built-in defaults, with the reason
 * printed once under VORTEX_VERBOSE. Never NULL. */
const vx_tune *vx_tune_active(void);

/* Where the active tuning came from: the file's path, or "built-in
 * defaults (<reason>)". */
const char *vx_tune_source(void);

/* Whether a driver setting runs, by its probe's ratio r (time with it over
 * time without): where not measured (0), or measured to pay. */
static inline int vx_tune_ratio_pays(double r) { return !(r > 0) || r < 1.0; }

/* Whether the CPU driver fetches the next panel of B on ISA isa under
 * tuning t (tune.h, fetch_next_ratio). */
static inline int vx_tune_fetches_next(const vx_tune *t, int isa)
{
    return vx_tune_ratio_pays(t->fetch_next_ratio[isa]);
}

/* Whether the CPU driver's direct plans pack B's panels on their first
 * read where B's rows lie closer than a page, on ISA isa under tuning t
 * (tune.h, pack_on_read_ratio). */
static inline int vx_tune_packs_near_on_read(const vx_tune *t, int isa)
{
    return vx_tune_ratio_pays(t->pack_on_read_ratio[isa]);
}

/* The stream probe's depths (tune.h, stream_one_tile_ratio). */
enum { VX_TUNE_STREAM_DEPTHS = 3 };
static inline int vx_tune_stream_k(int i) { return 8 << i; }

/* The deepest k at which the CPU driver streams a C of one column of tiles
 * under tuning t (gemm.h, vx_gemm_set_stream_one_tile_k_max): the deepest
 * probe depth at which streaming ran faster; 0 where it lost at every
 * depth; -1 where not measured (the driver's default then stands). */
static inline int vx_tune_stream_one_tile_k_max(const vx_tune *t)
{
    int deepest = 0;
    for (int i = 0; i < VX_TUNE_STREAM_DEPTHS; i++) {
        if (!(t->stream_one_tile_ratio[i] > 0))
            return -1;
        if (t->stream_one_tile_ratio[i] < 1.0)
            deepest = vx_tune_stream_k(i);
    }
    return deepest;
}

/* Helpers every backend's install-time measurements share. */
/* The median of v[0..n), n >= 1 (reorders v). */
double vx_tune_median(double *v, int n);
/* The least-squares line y = o + p*x through n >= 2 points; a slope
 * <= 1e-6 falls back to the last point's y / x, a negative o to 0. */
void vx_tune_fit_line(const double *x, const double *y, int n, double *o, double *p);
/* A call's cost t(x) = o + p*x from n points whose first n_short are short
 * calls (1 <= n_short <= n - 2): p is the least-squares slope through the
 * others, o the least of the short points' y - p*x (noise only adds time),
 * at least 0. */
void vx_tune_fit_call(const double *x, const double *y, int n, int n_short, double *o, double *p);

/* Tests and tools: make the next vx_tune_active() reload (not thread-safe
 * against concurrent calls). */
void vx_tune_reset(void);

#endif
