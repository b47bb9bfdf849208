/* vortex-info: what the library sees on this machine, and which plan it
 * would run for a GEMM shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "analyzer/candidates.h"
#include "cuda/cuda_backend.h"
#include "analyzer/conv_plan.h"
#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "analyzer/tune.h"
#include "cpu/cpu_levels.h"
#include "cpu/isa.h"
#include "cpu/threadpool.h"
#include "cpu/dot.h"
#include "cpu/ukernel.h"
#include "runtime.h"
#include "vortex/vortex.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vortex-info [--kernels] [--candidates] [--explain gemm M N K [--col-major] [--transa] [--transb]\n"
            "                                                                 [--lda L] [--ldb L] [--ldc L]]\n"
            "                   [--explain conv2d N C H W K R S [--stride S|SHxSW] [--pad P|PHxPW]\n"
            "                                                   [--dilation D|DHxDW] [--groups G] [--nhwc]\n"
            "                                                   [--packed-filter]]\n"
            "\n"
            "Prints the CPU, ISA, caches, thread count and tuning file Vortex uses.\n"
            "  --kernels            list the generated L0 micro-kernel families per ISA\n"
            "  --candidates         the analyzer's candidate counts per level (L0 tiles,\n"
            "                       L1 blocks, L2 grids) for every ISA this CPU runs\n"
            "  --explain gemm M N K the plan dyn_gemm would run for that shape, its\n"
            "                       predicted time and the next best five\n"
            "                       (row-major NN unless --col-major/--transa/--transb;\n"
            "                       dense unless --lda/--ldb/--ldc give the leading\n"
            "                       dimensions, which the model prices)\n"
            "  --explain conv2d N C H W K R S\n"
            "                       the plan dyn_conv2d would run for a batch of N CxHxW\n"
            "                       images and K RxS filters (NCHW unless --nhwc; stride 1,\n"
            "                       no padding, dilation 1, 1 group unless given): its\n"
            "                       implicit-GEMM view, the alternatives priced and the pick;\n"
            "                       --packed-filter: for dyn_conv2d_packed (filter packed once)\n"
            "  --gpu [--dtype f32|tf32|f16|bf16]\n"
            "                       with --explain gemm: the GPU plan (kernel instance,\n"
            "                       split-K, predicted time from the wave model) instead\n"
            "  --cuda-instances     list the compiled GPU kernel instances\n"
            "  -h, --help           this text\n"
            "Environment: VORTEX_ISA=avx2|avx512, VORTEX_NUM_THREADS=N, VORTEX_VERBOSE=1,\n"
            "             VORTEX_TUNE_FILE=path (else $XDG_CACHE_HOME/vortex/tune.json,\n"
            "             else ~/.cache/vortex/tune.json; written by vortex-install-tune)\n");
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
    /* the set geometry prices in-place rows a page or more apart (cost.c) */
    if (h->l1d_ways > 0 || h->l2_ways > 0)
        printf("sets:       L1d %d-way, L2 %d-way, %d-byte lines%s\n", h->l1d_ways, h->l2_ways, h->line_bytes,
               h->l1d_ways > 0 && h->l2_ways > 0 && h->line_bytes > 0 ? "" : "  [partly unknown: far-apart rows priced at the strided rate]");
    if (h->tlb_4k_entries > 0)
        printf("data TLB:   %d entries for 4 KiB pages, %d-way%s\n", h->tlb_4k_entries, h->tlb_4k_ways,
               h->tlb_4k_ways > 0 ? "" : " (ways unknown: its misses are not priced)");
    printf("isa:        avx2+fma %s, avx512 %s, avx512-bf16 %s, avx512-fp16 %s, amx %s\n",
           h->has_avx2_fma ? "yes" : "no", h->has_avx512 ? "yes" : "no", h->has_avx512_bf16 ? "yes" : "no",
           h->has_avx512_fp16 ? "yes" : "no", h->has_amx ? "yes" : "no");
    printf("using:      %s%s\n", isa < 0 ? "none (no AVX2/AVX-512: dyn_gemm is unsupported)" : vx_ukernels((vx_isa)isa)->name,
           getenv("VORTEX_ISA") ? " (VORTEX_ISA set)" : "");
    printf("threads:    %d\n", vx_get_num_threads());
    char gpu[1024];
    vx_cuda_describe(gpu, sizeof gpu);
    printf("gpu:        %s\n", gpu);
    const vx_tune *t = vx_tune_active();
    printf("tuning:     %s%s%s\n", vx_tune_source(), t->measured ? ", measured " : "", t->measured ? t->created : "");
    if (t->l3_effective_bytes > 0 && t->l3_effective_bytes < (double)h->l3_bytes)
        printf("l3 read:    %.0f MiB read nearer DRAM's rate than L3's (the tune): the driver's last-level "
               "thresholds take that as the L3\n",
               t->l3_effective_bytes / 1048576.0);
}

static void print_candidates(void)
{
    const vx_hw_info *h = vx_hw();
    for (int i = 0; i < VX_ISA_COUNT; i++) {
        if ((i == VX_ISA_AVX512 && !h->has_avx512) || (i == VX_ISA_AVX2 && !h->has_avx2_fma))
            continue;
        const vx_cpu_model *m = vx_cpu_model_get((vx_isa)i);
        if (m)
            vx_candidates_report(&m->desc, &m->cand, stdout);
    }
}

static void explain_gemm(const vx_gemm_shape *s, vx_isa isa, const char *what)
{
    enum { SHOW = 6, ASK = 64 };
    vx_gemm_plan p;
    vx_plan_gemm(s, isa, vx_get_num_threads(), &p);
    char d[160];
    vx_plan_describe(&p, d, sizeof d);
    printf("plan:       %s -> %s\n", what, d);
    vx_priced_plan r[ASK];
    const int n = vx_gemm_rank(s, isa, vx_get_num_threads(), r, ASK);
    const double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    printf("ranked:     %d distinct plans priced; the best %d:\n", n, n < SHOW ? n : SHOW);
    for (int i = 0; i < n && i < SHOW; i++) {
        vx_plan_describe(&r[i].plan, d, sizeof d);
        printf("  %d. %10.2f us  %8.1f GFLOP/s  %s\n", i + 1, r[i].predicted_ns * 1e-3,
               r[i].predicted_ns > 0 ? flops / r[i].predicted_ns : 0.0, d);
    }
}

static int explain_conv(const vx_conv2d_params *p, vx_isa isa, int packed)
{
    enum { SHOW = 4 };
    int64_t oh, ow;
    if (vx_conv2d_output_dims(p, &oh, &ow) != VX_OK) {
        fprintf(stderr, "vortex-info: %s\n", vx_last_error());
        return 1;
    }
    vx_conv_view v;
    vx_conv_view_of(p, &v);
    if (packed)
        vx_conv_view_with_packed_filter(p, &v);
    printf("conv2d:     %s n=%lld c=%lld h=%lld w=%lld k=%lld r=%lld s=%lld stride=%lldx%lld pad=%lldx%lld "
           "dilation=%lldx%lld groups=%lld -> output %lld x %lld%s\n", p->layout == VX_NHWC ? "nhwc" : "nchw",
           (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->k, (long long)p->r,
           (long long)p->s, (long long)p->stride_h, (long long)p->stride_w, (long long)p->pad_h,
           (long long)p->pad_w, (long long)p->dilation_h, (long long)p->dilation_w, (long long)p->groups,
           (long long)oh, (long long)ow, packed ? ", filter packed (dyn_conv2d_packed)" : "");
    printf("as gemm:    %lld item(s) of m=%lld n=%lld k=%lld; %s\n", (long long)v.items, (long long)v.m,
           (long long)v.n, (long long)v.k,
           v.pointwise ? "pointwise: the input is read in place"
                       : p->layout == VX_NHWC ? "A = patches (pixels x r*s*c): gathered into the packed buffer "
                                                "(packed plans) or read in place tap by tap (pack_b plans)"
                                              : "B = patches (c*r*s x pixels), gathered into the packed buffer");
    vx_gemm_plan plan;
    vx_plan_conv(p, &v, isa, vx_get_num_threads(), vx_pool_state(), &plan);
    char d[160];
    vx_plan_describe(&plan, d, sizeof d);
    printf("plan:       %s%s\n", d,
           !packed                                                      ? ""
           : vx_conv_panels_read(p, &v, &plan) == VX_CONV_PANELS_B ? " (reads the packed column panels)"
           : vx_conv_panels_read(p, &v, &plan) == VX_CONV_PANELS_A ? " (reads the packed row panels)"
                                                                   : " (reads the filter's copy)");
    vx_priced_plan r[SHOW];
    const int n = vx_conv_rank(p, &v, isa, vx_get_num_threads(), vx_pool_state(), r, SHOW);
    const double flops = 2.0 * (double)v.m * (double)v.n * (double)v.k * (double)v.items;
    printf("ranked:     %d alternatives (each item over all threads / items shared among threads / NCHW via NHWC / direct):\n", n);
    for (int i = 0; i < n; i++) {
        vx_plan_describe(&r[i].plan, d, sizeof d);
        printf("  %d. %10.2f us  %8.1f GFLOP/s  %s\n", i + 1, r[i].predicted_ns * 1e-3,
               r[i].predicted_ns > 0 ? flops / r[i].predicted_ns : 0.0, d);
    }
    return 0;
}

/* "3" or "2x3" into a (height, width) pair; 0 when malformed. */
static int parse_pair(const char *s, long long lo, int64_t *a, int64_t *b)
{
    char *end;
    long long x = strtoll(s, &end, 10), y = x;
    if (end == s)
        return 0;
    if (*end == 'x') {
        const char *t = end + 1;
        y = strtoll(t, &end, 10);
        if (end == t)
            return 0;
    }
    if (*end || x < lo || y < lo)
        return 0;
    *a = x;
    *b = y;
    return 1;
}

static void print_kernels(void)
{
    for (int i = 0; i < VX_ISA_COUNT; i++) {
        const vx_ukernel_set *s = vx_ukernels((vx_isa)i);
        int n = 0;
        printf("%s (%d lanes, %d registers):", s->name, s->vec_floats, s->vec_registers);
        for (int f = 0; f < s->nfamilies; f++) {
            printf(" %dx%d", s->families[f].mr_max, s->families[f].nr);
            n += s->families[f].mr_max * (VX_UK_VARIANTS + 4);
        }
        /* + 4: the segmented, the packing-on-read, and the two that fetch B into L2 (ukernel.h) */
        printf("  (%d kernels: every m <= mr; %d operand modes, A in segments, B packed on read, "
               "and two fetching far-apart B rows into L2)\n", n, VX_UK_VARIANTS);
        const vx_dot_set *D = vx_dot_kernels((vx_isa)i);
        printf("%s dot form (B stored transposed, %d lanes along k): %dx%d  (%d kernels: every m <= %d, n <= %d)\n",
               s->name, D->vec_floats, D->mr, D->nr, D->mr * D->nr, D->mr, D->nr);
    }
}

static void print_cuda_instances(void)
{
    const int n = vx_cuda_instance_count();
    printf("GPU kernel instances: %d%s\n", n, n ? "" : " (built without CUDA)");
    for (int i = 0; i < n; i++) {
        const vx_cuda_instance *in = vx_cuda_instance_get(i);
        printf("  %3d %-36s %-6s threads %3d smem %6d B%s\n", i, in->name,
               in->unit == VX_UNIT_TENSOR ? "tensor" : "simt", in->threads, in->smem_bytes,
               in->cluster ? "  split-K in a thread-block cluster (sm_90, <= 8 slices)" : "");
    }
}

/* The GPU plan for a shape, as dyn_gemm_ex would choose it (no launch). */
static int explain_gpu(long long m, long long n, long long k, int col, int ta, int tb, const char *dtype)
{
    if (!vx_cuda_available()) {
        fprintf(stderr, "vortex-info: --gpu: no CUDA device visible%s\n",
                vx_cuda_instance_count() ? "" : " (built without CUDA)");
        return 1;
    }
    const vx_dtype t = !strcmp(dtype, "f16") ? VX_F16 : !strcmp(dtype, "bf16") ? VX_BF16 : VX_F32;
    /* The leading dimensions do not enter the plan; the tightest ones do. */
    const long long lda = col ? (ta ? k : m) : (ta ? m : k), ldb = col ? (tb ? n : k) : (tb ? k : n);
    const vx_cuda_gemm_args g = vx_cuda_canonical(col ? VX_COL_MAJOR : VX_ROW_MAJOR, ta ? VX_TRANS : VX_NO_TRANS,
                                                  tb ? VX_TRANS : VX_NO_TRANS, m, n, k, 1.0f, NULL, t, lda, NULL,
                                                  ldb, 0.0f, NULL, t, col ? m : n,
                                                  !strcmp(dtype, "tf32") ? VX_MATH_TF32 : VX_MATH_DEFAULT);
    vx_cuda_choice ch[6];
    const int got = vx_cuda_explain(&g, ch, 6);
    printf("explain:    gemm gpu %s %s%s %s m=%lld n=%lld k=%lld (wave times: %s)\n", col ? "col" : "row",
           ta ? "T" : "N", tb ? "T" : "N", dtype, m, n, k, vx_cuda_tune_source());
    for (int i = 0; i < got; i++) {
        const vx_cuda_instance *in = vx_cuda_instance_get(ch[i].instance);
        printf("  %s %s%-36s split-K %2d  predicted %9.2f us\n", i ? "   " : "-> ", ch[i].transposed ? "T:" : "  ",
               in->name, ch[i].splits, ch[i].predicted_us);
    }
    if (got)
        printf("  (T: runs as C^T = B^T A^T, the instance's M tile over the call's N)\n");
    if (!got)
        printf("  no compiled kernel runs this combination\n");
    return got ? 0 : 1;
}

int main(int argc, char **argv)
{
    int kernels = 0, candidates = 0, explain = 0, col = 0, ta = 0, tb = 0, gpu = 0, list_gpu = 0, packed_filter = 0;
    const char *dtype = "f32";
    long long m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0; /* 0: dense */
    vx_conv2d_params cp = { VX_NCHW, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, VX_ACT_NONE };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--kernels")) {
            kernels = 1;
        } else if (!strcmp(argv[i], "--candidates")) {
            candidates = 1;
        } else if (!strcmp(argv[i], "--explain")) {
            if (i + 1 < argc && !strcmp(argv[i + 1], "conv2d")) {
                long long v[7];
                for (int j = 0; j < 7; j++)
                    if (i + 2 + j >= argc || !parse_i64(argv[i + 2 + j], &v[j])) {
                        fprintf(stderr, "vortex-info: --explain conv2d needs N C H W K R S, positive integers\n");
                        return 2;
                    }
                cp.n = v[0], cp.c = v[1], cp.h = v[2], cp.w = v[3], cp.k = v[4], cp.r = v[5], cp.s = v[6];
                explain = 2;
                i += 8;
                continue;
            }
            if (i + 4 >= argc) {
                fprintf(stderr, "vortex-info: --explain needs: gemm M N K, or conv2d N C H W K R S\n");
                return 2;
            }
            if (strcmp(argv[i + 1], "gemm")) {
                fprintf(stderr, "vortex-info: --explain knows 'gemm' and 'conv2d' (got '%s')\n", argv[i + 1]);
                return 2;
            }
            if (!parse_i64(argv[i + 2], &m) || !parse_i64(argv[i + 3], &n) || !parse_i64(argv[i + 4], &k)) {
                fprintf(stderr, "vortex-info: M N K must be positive integers\n");
                return 2;
            }
            explain = 1;
            i += 4;
        } else if (!strcmp(argv[i], "--stride") || !strcmp(argv[i], "--pad") || !strcmp(argv[i], "--dilation")) {
            const int pad = !strcmp(argv[i], "--pad");
            int64_t *a = pad ? &cp.pad_h : argv[i][2] == 's' ? &cp.stride_h : &cp.dilation_h;
            int64_t *b = pad ? &cp.pad_w : argv[i][2] == 's' ? &cp.stride_w : &cp.dilation_w;
            if (i + 1 >= argc || !parse_pair(argv[i + 1], pad ? 0 : 1, a, b)) {
                fprintf(stderr, "vortex-info: %s needs a value like 2 or 2x1\n", argv[i]);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--groups")) {
            long long g;
            if (i + 1 >= argc || !parse_i64(argv[i + 1], &g)) {
                fprintf(stderr, "vortex-info: --groups needs a positive integer\n");
                return 2;
            }
            cp.groups = g;
            i++;
        } else if (!strcmp(argv[i], "--gpu")) {
            gpu = 1;
        } else if (!strcmp(argv[i], "--cuda-instances")) {
            list_gpu = 1;
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            dtype = argv[++i];
            if (strcmp(dtype, "f32") && strcmp(dtype, "tf32") && strcmp(dtype, "f16") && strcmp(dtype, "bf16")) {
                fprintf(stderr, "vortex-info: --dtype takes f32, tf32, f16 or bf16 (got '%s')\n", dtype);
                return 2;
            }
        } else if (!strcmp(argv[i], "--nhwc")) {
            cp.layout = VX_NHWC;
        } else if (!strcmp(argv[i], "--packed-filter")) {
            packed_filter = 1;
        } else if (!strcmp(argv[i], "--col-major")) {
            col = 1;
        } else if (!strcmp(argv[i], "--transa")) {
            ta = 1;
        } else if (!strcmp(argv[i], "--transb")) {
            tb = 1;
        } else if (!strcmp(argv[i], "--lda") || !strcmp(argv[i], "--ldb") || !strcmp(argv[i], "--ldc")) {
            long long *ld = argv[i][4] == 'a' ? &lda : argv[i][4] == 'b' ? &ldb : &ldc;
            if (i + 1 >= argc || !parse_i64(argv[i + 1], ld)) {
                fprintf(stderr, "vortex-info: %s needs a positive integer\n", argv[i]);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "vortex-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    /* the least leading dimensions dyn_gemm accepts (cblas_sgemm's) */
    const int rm = !col;
    const long long a_min = rm ? (ta ? m : k) : (ta ? k : m), b_min = rm ? (tb ? k : n) : (tb ? n : k),
                    c_min = rm ? n : m;
    if ((lda || ldb || ldc) && explain != 1) {
        fprintf(stderr, "vortex-info: --lda/--ldb/--ldc go with --explain gemm\n");
        return 2;
    }
    if ((lda && lda < a_min) || (ldb && ldb < b_min) || (ldc && ldc < c_min)) {
        fprintf(stderr, "vortex-info: leading dimensions too small for this shape: lda >= %lld, ldb >= %lld, "
                        "ldc >= %lld\n", a_min, b_min, c_min);
        return 2;
    }
    print_hw();
    if (kernels)
        print_kernels();
    if (candidates)
        print_candidates();
    if (list_gpu)
        print_cuda_instances();
    if (explain == 1 && gpu)
        return explain_gpu(m, n, k, col, ta, tb, dtype);
    if (explain) {
        int isa = vx_active_isa();
        if (isa < 0) {
            fprintf(stderr, "vortex-info: no usable ISA on this CPU\n");
            return 1;
        }
        if (explain == 2)
            return explain_conv(&cp, (vx_isa)isa, packed_filter);
        /* Same canonicalisation as dyn_gemm: column-major swaps the roles. */
        vx_gemm_shape s;
        if (rm) {
            s = (vx_gemm_shape){ .m = m, .n = n, .k = k, .b_unit_stride = !tb, .a_unit_stride = !ta,
                                 .a_ld = lda, .b_ld = ldb, .c_ld = ldc };
        } else {
            s = (vx_gemm_shape){ .m = n, .n = m, .k = k, .b_unit_stride = !ta, .a_unit_stride = !tb,
                                 .a_ld = ldb, .b_ld = lda, .c_ld = ldc };
        }
        char what[192];
        snprintf(what, sizeof what, "gemm %s %s%s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld", col ? "col" : "row",
                 ta ? "T" : "N", tb ? "T" : "N", m, n, k, lda ? lda : a_min, ldb ? ldb : b_min, ldc ? ldc : c_min);
        explain_gemm(&s, (vx_isa)isa, what);
    }
    return 0;
}
