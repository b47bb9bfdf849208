/* vortex-fma-peak: measure this machine's fp32 FMA throughput.
 *
 * Runs a loop of independent FMAs (16 zmm accumulators for AVX-512, 12 ymm for
 * AVX2) on 1 thread and on one pinned thread per physical core, ~0.3 s each,
 * and reports GFLOP/s (2 flops per lane per FMA). This is the roofline that
 * vortex-bench-gemm --peak compares GEMM results against. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: vortex-fma-peak [options]\n"
        "\n"
        "Measures the fp32 FMA peak of this machine with an AVX-512 loop\n"
        "(16 independent zmm accumulators) and an AVX2+FMA loop (12 ymm), on one\n"
        "thread and on one pinned thread per physical core. GFLOP/s counts 2 flops\n"
        "per lane per FMA. An ISA the CPU (or OS) lacks is reported as n/a.\n"
        "\n"
        "options:\n"
        "  --seconds S   measuring time per run (default 0.3)\n"
        "  --repeat R    runs per figure, the best is reported (default 3)\n"
        "  --threads N   threads for the all-cores run (default: physical cores\n"
        "                this process may use)\n"
        "  --isa NAME    avx512, avx2 or all (default all)\n"
        "  --csv         print one machine-readable line per run instead:\n"
        "                isa,threads,gflops,gflops_per_thread_min\n"
        "  -h, --help    this text\n");
}

int main(int argc, char **argv)
{
    double seconds = 0.3;
    int threads = 0, csv = 0, repeat = 3;
    int want[2] = {1, 1}; /* [BENCH_ISA_AVX2], [BENCH_ISA_AVX512] */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
            if (!(seconds > 0)) {
                fprintf(stderr, "vortex-fma-peak: --seconds must be > 0\n");
                return 2;
            }
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1) {
                fprintf(stderr, "vortex-fma-peak: --threads must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--repeat") && i + 1 < argc) {
            repeat = atoi(argv[++i]);
            if (repeat < 1) {
                fprintf(stderr, "vortex-fma-peak: --repeat must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--isa") && i + 1 < argc) {
            const char *v = argv[++i];
            want[0] = !strcmp(v, "avx2") || !strcmp(v, "all");
            want[1] = !strcmp(v, "avx512") || !strcmp(v, "all");
            if (!want[0] && !want[1]) {
                fprintf(stderr, "vortex-fma-peak: unknown --isa '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else {
            fprintf(stderr, "vortex-fma-peak: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }

    static int cores[4096], usable[4096];
    int ncores = bench_physical_cores(cores, 4096);
    int nusable = bench_usable_cpus(usable, 4096);
    if (threads == 0)
        threads = ncores;

    if (csv) {
        printf("isa,threads,gflops,gflops_per_thread_min\n");
    } else {
        printf("cpu:     %s\n", bench_cpu_model());
        printf("cores:   %d physical, %d usable CPUs; all-cores run uses %d threads\n",
               ncores, nusable, threads);
        printf("loop:    best of %d runs of %.2f s, fp32, 2 flops per lane per FMA\n\n", repeat,
               seconds);
        printf("GFLOP/s   %10s %12s %10s\n", "1 thread", "all cores", "per core");
    }

    const bench_isa order[2] = {BENCH_ISA_AVX512, BENCH_ISA_AVX2};
    for (int o = 0; o < 2; o++) {
        bench_isa isa = order[o];
        if (!want[isa])
            continue;
        if (!bench_isa_supported(isa)) {
            if (csv)
                printf("%s,0,n/a,n/a\n", bench_isa_name(isa));
            else
                printf("%-8s  %10s %12s %10s\n", bench_isa_name(isa), "n/a", "n/a", "n/a");
            continue;
        }
        bench_peak one = {0}, all = {0};
        for (int r = 0; r < repeat; r++) {
            bench_peak p1, pn;
            if (bench_fma_peak(isa, 1, seconds, &p1) != 0 ||
                bench_fma_peak(isa, threads, seconds, &pn) != 0) {
                fprintf(stderr, "vortex-fma-peak: %s run failed\n", bench_isa_name(isa));
                return 1;
            }
            if (p1.gflops > one.gflops)
                one = p1;
            if (pn.gflops > all.gflops)
                all = pn;
        }
        if (csv) {
            printf("%s,1,%.2f,%.2f\n", bench_isa_name(isa), one.gflops, one.per_thread_min);
            printf("%s,%d,%.2f,%.2f\n", bench_isa_name(isa), threads, all.gflops, all.per_thread_min);
        } else {
            printf("%-8s  %10.1f %12.1f %10.1f\n", bench_isa_name(isa), one.gflops, all.gflops,
                   all.gflops / threads);
        }
    }
    if (!csv)
        printf("\n(per core = all-cores result / threads; below the 1-thread figure means\n"
               " shared-core, thermal or AVX frequency effects)\n");
    return 0;
}
