/* vortex-install-tune: measure this machine once and write the tuning file
 * the analyzer reads at call time (see src/analyzer/tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/hw.h"
#include "analyzer/tune.h"
#include "cpu/cpu_tune.h"
#include "cuda/cuda_backend.h"
#include "vortex/vortex.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vortex-install-tune [--output FILE] [--quick] [--quiet] [--print] [--no-gpu | --gpu-only]\n"
            "\n"
            "Measures this machine once (the micro-kernels' rates in cache, packing rates,\n"
            "cache and memory bandwidths, call and thread wake-up costs) and writes the\n"
            "tuning file Vortex's cost model reads. Re-running is safe: the file is\n"
            "written to a temporary name and renamed over the old one.\n"
            "\n"
            "  -o, --output FILE  where to write (default: $VORTEX_TUNE_FILE, else\n"
            "                     $XDG_CACHE_HOME/vortex/tune.json, else\n"
            "                     ~/.cache/vortex/tune.json, where the library looks)\n"
            "  --quick            fewer repetitions (a few seconds; noisier numbers)\n"
            "  --quiet            no progress bar\n"
            "  --print            also print the file's summary after writing\n"
            "  --no-gpu           measure the CPU only\n"
            "  --gpu-only         measure the GPU only (keeps the file's CPU part)\n"
            "GPU (when the CUDA backend is built and a device is visible): one full wave\n"
            "of every compiled kernel instance at a few K on the current device, stored\n"
            "under that GPU's fingerprint; about a minute.\n"
            "  -h, --help         this text\n"
            "Run it on an otherwise idle machine; it takes well under a minute.\n");
}

typedef struct {
    int tty, quiet;
    double t0;
} bar_state;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A progress bar on a terminal; one line per tenth of the work otherwise
 * (logs stay short). */
static void on_progress(void *ctx, int done, int total, const char *what)
{
    bar_state *b = ctx;
    if (b->quiet)
        return;
    const int width = 30, fill = total > 0 ? done * width / total : width;
    const int pct = total > 0 ? done * 100 / total : 100;
    if (b->tty) {
        char bar[64];
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r[%s] %3d%% %5.1fs  %-48.48s", bar, pct, now_s() - b->t0, what);
        if (done >= total)
            fputc('\n', stderr);
    } else {
        const int prev = total > 0 ? (done - 1) * 10 / total : -1;
        if (done == 0 || done >= total || done * 10 / total != prev)
            fprintf(stderr, "vortex-install-tune: %3d%% %5.1fs %s\n", pct, now_s() - b->t0, what);
    }
    fflush(stderr);
}

static void summary(const vx_tune *t)
{
    const vx_hw_info *hw = vx_hw();
    printf("machine:   %s, %d cores, L1d %lld KiB, L2 %lld KiB, L3 %lld KiB\n", hw->cpu_model, hw->physical_cores,
           (long long)hw->l1d_bytes >> 10, (long long)hw->l2_bytes >> 10, (long long)hw->l3_bytes >> 10);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        if ((isa == VX_ISA_AVX2 && !hw->has_avx2_fma) || (isa == VX_ISA_AVX512 && !hw->has_avx512))
            continue;
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        printf("L0 %-7s largest tile of each family, packed operands, GFLOP/s at k=256:", set->name);
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
            const vx_ukernel_family *F = &set->families[f];
            const vx_l0_rate r = t->l0[isa][f][VX_UK_AP_BP][F->mr_max - 1];
            const double ns = r.overhead_ns + r.ns_per_k * 256.0;
            printf(" %dx%d %.1f", F->mr_max, F->nr, ns > 0 ? 2.0 * F->mr_max * F->nr * 256 / ns : 0.0);
        }
        printf("\n");
    }
    printf("packing:   A %.3f / %.3f ns per float, B %.3f / %.3f (unit stride / transposed); "
           "B one narrow panel at a time %.3f (from L3) / %.3f (from DRAM)\n",
           t->pack_a_ns[0], t->pack_a_ns[1], t->pack_b_ns[0], t->pack_b_ns[1], t->pack_b_narrow_ns[0],
           t->pack_b_narrow_ns[1]);
    printf("bandwidth: L2 %.1f, L3 %.1f, DRAM %.1f GB/s per core; DRAM %.1f GB/s all cores;\n"
           "           rows 8 KiB apart: %.1f GB/s re-reading a panel, %.1f GB/s in one pass;\n"
           "           rows 16 KiB apart from DRAM, more per k block than the TLB keeps: %.1f GB/s in one pass\n",
           t->bw_l2, t->bw_l3, t->bw_dram, t->bw_dram_all, t->bw_strided, t->bw_stride_stream, t->bw_stride_tlb);
    printf("fixed:     parallel region %.0f ns (workers asleep), %.0f ns (workers spinning); 1x1x1 call %.0f ns "
           "(copy A+B %.0f, copy B %.0f, in place %.0f)\n",
           t->wake_ns, t->wake_warm_ns, t->call_ns, t->mode_call_ns[0], t->mode_call_ns[1], t->mode_call_ns[2]);
    printf("cores:     a cache line passed between two %.0f ns; one of many written by one and read by the "
           "other %.1f ns\n"
           "           (on a virtual machine these move with the host's placement: the pool rescales them and the "
           "warm region at run time by its reading of a region's hand-offs, %.0f ns here)\n",
           t->line_share_ns, t->line_stream_ns, t->region_handoff_ns);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (t->gemv_rows_ns[isa][0] > 0)
            printf("gemv %-6s few-row matrix-vector kernel over a matrix in L2: %.1f / %.1f / %.1f GFLOP/s "
                   "(2 / 3 / 4 rows)\n",
                   isa == VX_ISA_AVX512 ? "avx512" : "avx2", 1.0 / t->gemv_rows_ns[isa][0],
                   t->gemv_rows_ns[isa][1] > 0 ? 1.0 / t->gemv_rows_ns[isa][1] : 0.0,
                   t->gemv_rows_ns[isa][2] > 0 ? 1.0 / t->gemv_rows_ns[isa][2] : 0.0);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        if (set->nfamilies < 1 || !(t->context_ratio[isa][0] > 0))
            continue;
        printf("context %-6s each tile family in the GEMM driver, against the fastest:",
               isa == VX_ISA_AVX512 ? "avx512" : "avx2");
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++)
            printf(" %d-wide %.3f", set->families[f].nr, t->context_ratio[isa][f]);
        printf("\n");
        /* tile by tile: the driver's time over what the L1 rates predict,
         * the least such against each (m:ratio) */
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
            int shown = 0;
            for (int m = 1; m <= set->families[f].mr_max && m <= VX_TUNE_MAX_MR; m++) {
                const double r = t->context_tile[isa][f][m - 1];
                if (!(r > 0))
                    continue;
                if (!shown++)
                    printf("        %-6s %2d-wide tiles in the driver over their L1 rates (rows:ratio):",
                           isa == VX_ISA_AVX512 ? "avx512" : "avx2", set->families[f].nr);
                printf(" %d:%.3f", m, r);
            }
            if (shown)
                printf("\n");
        }
    }
    if (t->l3_effective_bytes > 0)
        printf("l3     one core reads %.0f MiB nearer DRAM's rate than L3's: the driver's last-level thresholds "
               "take that as the L3 (the hardware query reports %lld MiB)\n",
               t->l3_effective_bytes / 1048576.0, (long long)(vx_hw()->l3_bytes >> 20));
    if (t->l2_alias_ways > 0)
        printf("alias  L2 keeps in-place rows 12 KiB apart in %.2f of its %d ways%s\n", t->l2_alias_ways,
               vx_hw()->l2_ways, t->l2_alias_ways < vx_hw()->l2_ways / 2 ? "" : " (the model counts half)");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (t->fetch_next_ratio[isa] > 0)
            printf("fetch %-6s next panel of B fetched while the row tiles run: %.3fx the time without, %s\n",
                   isa == VX_ISA_AVX512 ? "avx512" : "avx2", t->fetch_next_ratio[isa],
                   t->fetch_next_ratio[isa] < 1.0 ? "on" : "off");
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (t->pack_on_read_ratio[isa] > 0)
            printf("pack  %-6s B's panels packed by a direct plan's first row tile (rows closer than a page): "
                   "%.3fx the time in place, %s\n",
                   isa == VX_ISA_AVX512 ? "avx512" : "avx2", t->pack_on_read_ratio[isa],
                   t->pack_on_read_ratio[isa] < 1.0 ? "packed" : "in place");
}

static bar_state g_gpu_bar;
static void on_gpu_progress(int done, int total)
{
    const vx_cuda_instance *in = done < total ? vx_cuda_instance_get(done) : NULL;
    on_progress(&g_gpu_bar, done, total, in ? in->name : "done");
}

/* The GPU part: wave times of every kernel instance, merged into the file. */
static int tune_gpu(const char *path, int quick, int quiet)
{
    if (!vx_cuda_available()) {
        fprintf(stderr, "vortex-install-tune: no GPU to measure (%s)\n",
                vx_cuda_instance_count() ? "no CUDA device visible" : "built without CUDA");
        return 1;
    }
    char dev[512], why[512];
    vx_cuda_describe(dev, sizeof dev);
    g_gpu_bar = (bar_state){ isatty(2), quiet, now_s() };
    if (!quiet)
        fprintf(stderr, "vortex-install-tune: measuring GPU %s\n", dev);
    vx_status s = vx_cuda_tune(path, quick, on_gpu_progress, why, sizeof why);
    if (s != VX_OK) {
        fprintf(stderr, "vortex-install-tune: GPU: %s\n", why);
        return 1;
    }
    printf("wrote the GPU wave times to %s in %.1f s\n", path, now_s() - g_gpu_bar.t0);
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    int quick = 0, quiet = 0, print = 0, no_gpu = 0, gpu_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--print")) {
            print = 1;
        } else if (!strcmp(argv[i], "--no-gpu")) {
            no_gpu = 1;
        } else if (!strcmp(argv[i], "--gpu-only")) {
            gpu_only = 1;
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else {
            fprintf(stderr, "vortex-install-tune: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    char path[1024];
    if (out) {
        snprintf(path, sizeof path, "%s", out);
    } else if (!vx_tune_default_path(path, sizeof path)) {
        fprintf(stderr, "vortex-install-tune: no place for the tuning file: set VORTEX_TUNE_FILE or HOME, "
                        "or pass --output FILE\n");
        return 2;
    }
    if (no_gpu && gpu_only) {
        fprintf(stderr, "vortex-install-tune: --no-gpu and --gpu-only exclude each other\n");
        return 2;
    }
    const vx_hw_info *hw = vx_hw();
    if (gpu_only)
        return tune_gpu(path, quick, quiet);
    if (!hw->has_avx2_fma) {
        fprintf(stderr, "vortex-install-tune: this CPU has neither AVX2+FMA nor AVX-512; nothing to measure\n");
        return 1;
    }

    vx_tune t;
    vx_tune_defaults(hw, &t);
    const time_t now = time(NULL);
    strftime(t.created, sizeof t.created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    bar_state b = { isatty(2), quiet, now_s() };
    if (!quiet)
        fprintf(stderr, "vortex-install-tune: measuring %s (%d cores)%s\n", hw->cpu_model, hw->physical_cores,
                quick ? ", quick" : "");
    vx_cpu_tune_opts o = { quick, on_progress, &b };
    vx_status s = vx_cpu_tune_measure(&o, &t);
    if (s != VX_OK) {
        fprintf(stderr, "vortex-install-tune: measuring failed: %s\n", vx_status_string(s));
        return 1;
    }
    char why[512];
    if ((s = vx_tune_save(path, &t, why, sizeof why)) != VX_OK) {
        fprintf(stderr, "vortex-install-tune: %s\n", why);
        return 1;
    }
    /* Read it back the way the library will, so a file that cannot be used
     * is reported here and not discovered later. */
    vx_tune back;
    vx_tune_defaults(hw, &back);
    if ((s = vx_tune_load(path, hw, &back, why, sizeof why)) != VX_OK) {
        fprintf(stderr, "vortex-install-tune: wrote %s but cannot read it back: %s\n", path, why);
        return 1;
    }
    printf("wrote %s in %.1f s\n", path, now_s() - b.t0);
    if (print)
        summary(&back);
    if (!no_gpu && vx_cuda_available())
        return tune_gpu(path, quick, quiet);
    return 0;
}
