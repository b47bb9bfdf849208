/* vortex-info: what the library sees on this machine, and which plan it
 * would run for a GEMM shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "analyzer/plan.h"
#include "cpu/isa.h"
#include "cpu/ukernel.h"
#include "runtime.h"
#include "vortex/vortex.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vortex-info [--kernels] [--explain gemm M N K [--col-major] [--transa] [--transb]]\n"
            "\n"
            "Prints the CPU, ISA, caches and thread count Vortex uses.\n"
            "  --kernels            list the generated L0 micro-kernel families per ISA\n"
            "  --explain gemm M N K print the plan dyn_gemm would run for that shape\n"
            "                       (row-major NN unless --col-major/--transa/--transb)\n"
            "  -h, --help           this text\n"
            "Environment: VORTEX_ISA=avx2|avx512, VORTEX_NUM_THREADS=N, VORTEX_VERBOSE=1\n");
}

static int parse_i64(const char *s, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < 1)
        return 0;
    *out = v;
    return 1;
}

static void print_hw(void)
{
    const vx_hw_info *h = vx_hw();
    int isa = vx_active_isa();
    printf("vortex %d.%d.%d\n", VORTEX_VERSION_MAJOR, VORTEX_VERSION_MINOR, VORTEX_VERSION_PATCH);
    printf("cpu:        %s\n", h->cpu_model);
    printf("cores:      %d physical, %d logical, %d NUMA node(s)\n", h->physical_cores, h->logical_cpus,
           h->numa_nodes);
    printf("caches:     L1d %lld KiB, L2 %lld KiB (per %d core(s)), L3 %lld KiB (per %d core(s))%s\n",
           (long long)(h->l1d_bytes >> 10), (long long)(h->l2_bytes >> 10), h->l2_cores,
           (long long)(h->l3_bytes >> 10), h->l3_cores, h->from_hwloc ? "" : "  [defaults: hwloc gave none]");
    printf("isa:        avx2+fma %s, avx512 %s, avx512-bf16 %s, avx512-fp16 %s, amx %s\n",
           h->has_avx2_fma ? "yes" : "no", h->has_avx512 ? "yes" : "no", h->has_avx512_bf16 ? "yes" : "no",
           h->has_avx512_fp16 ? "yes" : "no", h->has_amx ? "yes" : "no");
    printf("using:      %s%s\n", isa < 0 ? "none (no AVX2/AVX-512: dyn_gemm is unsupported)" : vx_ukernels((vx_isa)isa)->name,
           getenv("VORTEX_ISA") ? " (VORTEX_ISA set)" : "");
    printf("threads:    %d\n", vx_get_num_threads());
    printf("gpu:        none (CUDA backend not built)\n");
    printf("tuning:     none (built-in defaults from the hardware query)\n");
}

static void print_kernels(void)
{
    for (int i = 0; i < VX_ISA_COUNT; i++) {
        const vx_ukernel_set *s = vx_ukernels((vx_isa)i);
        int n = 0;
        printf("%s (%d lanes, %d registers):", s->name, s->vec_floats, s->vec_registers);
        for (int f = 0; f < s->nfamilies; f++) {
            printf(" %dx%d", s->families[f].mr_max, s->families[f].nr);
            n += s->families[f].mr_max * VX_UK_VARIANTS;
        }
        printf("  (%d kernels: every m <= mr, %d operand modes)\n", n, VX_UK_VARIANTS);
    }
}

int main(int argc, char **argv)
{
    int kernels = 0, explain = 0, col = 0, ta = 0, tb = 0;
    long long m = 0, n = 0, k = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--kernels")) {
            kernels = 1;
        } else if (!strcmp(argv[i], "--explain")) {
            if (i + 4 >= argc) {
                fprintf(stderr, "vortex-info: --explain needs: gemm M N K\n");
                return 2;
            }
            if (strcmp(argv[i + 1], "gemm")) {
                fprintf(stderr, "vortex-info: --explain knows only 'gemm' (got '%s')\n", argv[i + 1]);
                return 2;
            }
            if (!parse_i64(argv[i + 2], &m) || !parse_i64(argv[i + 3], &n) || !parse_i64(argv[i + 4], &k)) {
                fprintf(stderr, "vortex-info: M N K must be positive integers\n");
                return 2;
            }
            explain = 1;
            i += 4;
        } else if (!strcmp(argv[i], "--col-major")) {
            col = 1;
        } else if (!strcmp(argv[i], "--transa")) {
            ta = 1;
        } else if (!strcmp(argv[i], "--transb")) {
            tb = 1;
        } else {
            fprintf(stderr, "vortex-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    print_hw();
    if (kernels)
        print_kernels();
    if (explain) {
        int isa = vx_active_isa();
        if (isa < 0) {
            fprintf(stderr, "vortex-info: no usable ISA on this CPU\n");
            return 1;
        }
        /* Same canonicalisation as dyn_gemm: column-major swaps the roles. */
        vx_gemm_shape s;
        if (!col) {
            s = (vx_gemm_shape){ m, n, k, !tb, !ta };
        } else {
            s = (vx_gemm_shape){ n, m, k, !ta, !tb };
        }
        vx_gemm_plan p;
        vx_plan_gemm(&s, (vx_isa)isa, vx_get_num_threads(), &p);
        char d[160];
        vx_plan_describe(&p, d, sizeof d);
        printf("plan:       gemm %s %s%s m=%lld n=%lld k=%lld -> %s\n", col ? "col" : "row", ta ? "T" : "N",
               tb ? "T" : "N", m, n, k, d);
    }
    return 0;
}
