/* The tuning the model reads: built-in defaults from the hardware query, the
 * machine's fingerprint, where the tuning file lives, and the process-wide
 * active tuning (loaded once, on first use). The file format is tunefile.c's. */
#include "analyzer/tune.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* Issue model behind the defaults, shared by both x86 ISAs: two FMA pipes,
 * two vector loads per cycle, four cycles of FMA latency (plus one of slack:
 * a tile with exactly latency x pipes accumulators stalls on any hiccup).
 * With A read in place each row needs an offset register; past the general
 * registers left over, each row's broadcast costs a reload too (measured on
 * AVX-512: 30x16 in place ran at half the rate of 6x64). */
enum { FMA_PER_CYCLE = 2, LOADS_PER_CYCLE = 2, FMA_LATENCY = 4, FREE_GPRS = 8 };
#define DEFAULT_GHZ 3.0

static double tile_cycles_per_k(int m, int V, int a_in_place)
{
    const double fma = (double)m * V / FMA_PER_CYCLE;
    const double ld = (double)(m + V + (a_in_place && m > FREE_GPRS ? m - FREE_GPRS : 0)) / LOADS_PER_CYCLE;
    const double c = fma > ld ? fma : ld;
    return c > FMA_LATENCY + 1 ? c : FMA_LATENCY + 1;
}

void vx_fingerprint_of(const vx_hw_info *hw, vx_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->cpu_model, sizeof fp->cpu_model, "%s", hw->cpu_model);
    fp->physical_cores = hw->physical_cores;
    fp->l1d_bytes = hw->l1d_bytes;
    fp->l2_bytes = hw->l2_bytes;
    fp->l3_bytes = hw->l3_bytes;
    fp->has_avx2_fma = hw->has_avx2_fma;
    fp->has_avx512 = hw->has_avx512;
}

void vx_tune_defaults(const vx_hw_info *hw, vx_tune *t)
{
    memset(t, 0, sizeof *t);
    t->version = VX_TUNE_VERSION;
    vx_fingerprint_of(hw, &t->fp);
    const double ghz = hw->ghz > 0 ? hw->ghz : DEFAULT_GHZ;

    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
            const vx_ukernel_family *F = &set->families[f];
            const int V = F->nr / set->vec_floats;
            for (int v = 0; v < VX_UK_VARIANTS; v++)
                for (int m = 1; m <= F->mr_max && m <= VX_TUNE_MAX_MR; m++) {
                    /* overhead: load and store the C tile (one vector per
                     * cycle each way) plus call and loop set-up */
                    const double o = (2.0 * m * V + 20.0) / ghz;
                    const double p = tile_cycles_per_k(m, V, v != VX_UK_AP_BP) / ghz;
                    t->l0[isa][f][v][m - 1] = (vx_l0_rate){ (float)o, (float)p };
                }
        }
    }
    /* Packing: about half a cycle per float along the unit stride, a cycle
     * and a half when the source is read across it. */
    t->pack_a_ns[0] = t->pack_b_ns[0] = 0.5 / ghz;
    t->pack_a_ns[1] = t->pack_b_ns[1] = 1.5 / ghz;
    /* Reads per core: L2 32 bytes per cycle, L3 16; DRAM 10 GB/s per core
     * and 20 GB/s for the socket (a conservative server share). */
    t->bw_l2 = 32.0 * ghz;
    t->bw_l3 = 16.0 * ghz;
    t->bw_dram = 10.0;
    t->bw_dram_all = 20.0;
    t->bw_strided = 8.0;
    t->bw_stride_stream = 16.0;
    t->bw_stride_tlb = 4.0; /* Zen 1 measured 3.7-5.2 */
    t->pack_b_narrow_ns[0] = 0.6 / ghz;
    t->pack_b_narrow_ns[1] = 2.0 / ghz;
    t->wake_ns = 30000.0;
    t->wake_warm_ns = 500.0;
    t->call_ns = 100.0;
    t->line_share_ns = 60.0; /* a core-to-core transfer on one socket */
    t->line_stream_ns = 6.0;  /* ... and one of many in flight (AMD Zen 4: 9 of 99) */
    t->region_handoff_ns = 400.0; /* the pool's reading of the same regions' hand-offs (AMD Zen 4: 70-110
                                     where wake_warm_ns read 80-146), in proportion to this wake_warm_ns */
    t->mode_call_ns[0] = 250.0;
    t->mode_call_ns[1] = 150.0;
    t->mode_call_ns[2] = 100.0;
}

int vx_tune_default_path(char *buf, size_t len)
{
    const char *p = getenv("VORTEX_TUNE_FILE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (p && *p)
        n = snprintf(buf, len, "%s", p);
    else if (xdg && *xdg)
        n = snprintf(buf, len, "%s/vortex/tune.json", xdg);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/vortex/tune.json", home);
    else
        n = -1;
    if (n < 0 || (size_t)n >= len) {
        if (len)
            buf[0] = 0;
        return 0;
    }
    return 1;
}

/* The active tuning, published once; reset only by tests and tools. */
static vx_tune g_tune;
static char g_source[1200];
static atomic_int g_ready;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void load_active(void)
{
    const vx_hw_info *hw = vx_hw();
    char path[1024], why[512];
    vx_tune_defaults(hw, &g_tune);
    if (!vx_tune_default_path(path, sizeof path)) {
        const char *e = getenv("VORTEX_TUNE_FILE");
        snprintf(g_source, sizeof g_source, "built-in defaults (%s)",
                 e && *e ? "VORTEX_TUNE_FILE is longer than 1023 bytes"
                         : "no VORTEX_TUNE_FILE, XDG_CACHE_HOME or HOME");
    } else if (vx_tune_load(path, hw, &g_tune, why, sizeof why) == VX_OK) {
        snprintf(g_source, sizeof g_source, "%s", path);
    } else {
        snprintf(g_source, sizeof g_source, "built-in defaults (%s)", why);
        vx_warn("tuning: %s; using built-in defaults (run vortex-install-tune)", why);
    }
}

const vx_tune *vx_tune_active(void)
{
    if (atomic_load_explicit(&g_ready, memory_order_acquire))
        return &g_tune;
    pthread_mutex_lock(&g_mu);
    if (!atomic_load_explicit(&g_ready, memory_order_relaxed)) {
        load_active();
        atomic_store_explicit(&g_ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_mu);
    return &g_tune;
}

const char *vx_tune_source(void)
{
    vx_tune_active();
    return g_source;
}

void vx_tune_reset(void)
{
    pthread_mutex_lock(&g_mu);
    atomic_store_explicit(&g_ready, 0, memory_order_release);
    pthread_mutex_unlock(&g_mu);
}

double vx_tune_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            const double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

void vx_tune_fit_line(const double *x, const double *y, int n, double *o, double *p)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double icpt = (sy - slope * sx) / n;
    if (!(slope > 1e-6))
        slope = y[n - 1] / x[n - 1];
    if (icpt < 0)
        icpt = 0;
    *o = icpt;
    *p = slope;
}

void vx_tune_fit_call(const double *x, const double *y, int n, int n_short, double *o, double *p)
{
    double icpt, slope;
    vx_tune_fit_line(x + n_short, y + n_short, n - n_short, &icpt, &slope);
    double least = y[0] - slope * x[0];
    for (int i = 1; i < n_short; i++)
        if (y[i] - slope * x[i] < least)
            least = y[i] - slope * x[i];
    *o = least > 0 ? least : 0;
    *p = slope;
}
