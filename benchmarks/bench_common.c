/* Shared helpers for the Vortex benchmark runners; see bench_common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *bench_cpu_model(void)
{
    static char model[256];
    if (model[0])
        return model;
    snprintf(model, sizeof model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return model;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                size_t n = strcspn(p, "\n");
                if (n >= sizeof model)
                    n = sizeof model - 1;
                memcpy(model, p, n);
                model[n] = 0;
            }
            break;
        }
    }
    fclose(f);
    return model;
}

int bench_usable_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n < max; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    }
    if (n == 0) {
        long k = sysconf(_SC_NPROCESSORS_ONLN);
        for (int c = 0; c < k && n < max; c++)
            cpus[n++] = c;
    }
    if (n == 0 && max > 0)
        cpus[n++] = 0;
    return n;
}

/* First CPU listed in a sysfs cpu list ("0,56" or "0-1"), -1 on failure. */
static int first_sibling(int cpu, const int *usable, int nusable)
{
    char path[128];
    snprintf(path, sizeof path,
             "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[256];
    int first = -1;
    if (fgets(buf, sizeof buf, f)) {
        /* Walk the list and return the smallest sibling that is usable. */
        char *p = buf;
        while (*p && *p != '\n') {
            char *end;
            long a = strtol(p, &end, 10), b = a;
            if (end == p)
                break;
            p = end;
            if (*p == '-') {
                p++;
                b = strtol(p, &end, 10);
                p = end;
            }
            for (long c = a; c <= b; c++)
                for (int i = 0; i < nusable; i++)
                    if (usable[i] == c && (first < 0 || c < first))
                        first = (int)c;
            if (*p == ',')
                p++;
        }
    }
    fclose(f);
    return first;
}

int bench_physical_cores(int *cpus, int max)
{
    int usable[CPU_SETSIZE];
    int nu = bench_usable_cpus(usable, CPU_SETSIZE);
    int n = 0;
    for (int i = 0; i < nu && n < max; i++) {
        int first = first_sibling(usable[i], usable, nu);
        if (first < 0) /* no sysfs: every usable CPU counts */
            first = usable[i];
        if (first == usable[i])
            cpus[n++] = usable[i];
    }
    if (n == 0) {
        for (int i = 0; i < nu && n < max; i++)
            cpus[n++] = usable[i];
    }
    return n;
}

int bench_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
}

int bench_isa_supported(bench_isa isa)
{
    __builtin_cpu_init();
    switch (isa) {
    case BENCH_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") ? 1 : 0;
    case BENCH_ISA_AVX2:
        return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 1 : 0;
    }
    return 0;
}

const char *bench_isa_name(bench_isa isa)
{
    return isa == BENCH_ISA_AVX512 ? "avx512" : "avx2";
}

/* ---- the FMA loops ---------------------------------------------------- */

/* Iterations between clock reads (each iteration is NACC independent FMAs). */
#define FMA_CHUNK 4096

/* acc = acc * x + y converges to y / (1 - x) = 1.0 without denormals or
 * overflow, and the compiler may not fuse or drop any of the chains. */
#define FMA_X 0.99999994f
#define FMA_Y 5.9604645e-08f

static volatile float fma_sink;

/* 16 zmm accumulators: covers 4-cycle latency x 2 FMA ports (8 needed)
 * with room to spare; 18 of 32 zmm registers in use. */
__attribute__((target("avx512f"))) static double fma_loop_avx512(double seconds, double *flops)
{
    __m512 x = _mm512_set1_ps(FMA_X), y = _mm512_set1_ps(FMA_Y);
    __m512 a0 = _mm512_set1_ps(0.10f), a1 = _mm512_set1_ps(0.11f), a2 = _mm512_set1_ps(0.12f),
           a3 = _mm512_set1_ps(0.13f), a4 = _mm512_set1_ps(0.14f), a5 = _mm512_set1_ps(0.15f),
           a6 = _mm512_set1_ps(0.16f), a7 = _mm512_set1_ps(0.17f), a8 = _mm512_set1_ps(0.18f),
           a9 = _mm512_set1_ps(0.19f), a10 = _mm512_set1_ps(0.20f), a11 = _mm512_set1_ps(0.21f),
           a12 = _mm512_set1_ps(0.22f), a13 = _mm512_set1_ps(0.23f), a14 = _mm512_set1_ps(0.24f),
           a15 = _mm512_set1_ps(0.25f);
    long iters = 0;
    double t0 = bench_now(), t;
    do {
        for (int i = 0; i < FMA_CHUNK; i++) {
            a0 = _mm512_fmadd_ps(a0, x, y);   a1 = _mm512_fmadd_ps(a1, x, y);
            a2 = _mm512_fmadd_ps(a2, x, y);   a3 = _mm512_fmadd_ps(a3, x, y);
            a4 = _mm512_fmadd_ps(a4, x, y);   a5 = _mm512_fmadd_ps(a5, x, y);
            a6 = _mm512_fmadd_ps(a6, x, y);   a7 = _mm512_fmadd_ps(a7, x, y);
            a8 = _mm512_fmadd_ps(a8, x, y);   a9 = _mm512_fmadd_ps(a9, x, y);
            a10 = _mm512_fmadd_ps(a10, x, y); a11 = _mm512_fmadd_ps(a11, x, y);
            a12 = _mm512_fmadd_ps(a12, x, y); a13 = _mm512_fmadd_ps(a13, x, y);
            a14 = _mm512_fmadd_ps(a14, x, y); a15 = _mm512_fmadd_ps(a15, x, y);
        }
        iters += FMA_CHUNK;
        t = bench_now() - t0;
    } while (t < seconds);
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)),
                                       _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15))));
    fma_sink = _mm512_reduce_add_ps(s);
    *flops = (double)iters * 16.0 /* accumulators */ * 16.0 /* lanes */ * 2.0;
    return t;
}

/* 12 ymm accumulators (+2 constants = 14 of 16 ymm registers). */
__attribute__((target("avx2,fma"))) static double fma_loop_avx2(double seconds, double *flops)
{
    __m256 x = _mm256_set1_ps(FMA_X), y = _mm256_set1_ps(FMA_Y);
    __m256 a0 = _mm256_set1_ps(0.10f), a1 = _mm256_set1_ps(0.11f), a2 = _mm256_set1_ps(0.12f),
           a3 = _mm256_set1_ps(0.13f), a4 = _mm256_set1_ps(0.14f), a5 = _mm256_set1_ps(0.15f),
           a6 = _mm256_set1_ps(0.16f), a7 = _mm256_set1_ps(0.17f), a8 = _mm256_set1_ps(0.18f),
           a9 = _mm256_set1_ps(0.19f), a10 = _mm256_set1_ps(0.20f), a11 = _mm256_set1_ps(0.21f);
    long iters = 0;
    double t0 = bench_now(), t;
    do {
        for (int i = 0; i < FMA_CHUNK; i++) {
            a0 = _mm256_fmadd_ps(a0, x, y);   a1 = _mm256_fmadd_ps(a1, x, y);
            a2 = _mm256_fmadd_ps(a2, x, y);   a3 = _mm256_fmadd_ps(a3, x, y);
            a4 = _mm256_fmadd_ps(a4, x, y);   a5 = _mm256_fmadd_ps(a5, x, y);
            a6 = _mm256_fmadd_ps(a6, x, y);   a7 = _mm256_fmadd_ps(a7, x, y);
            a8 = _mm256_fmadd_ps(a8, x, y);   a9 = _mm256_fmadd_ps(a9, x, y);
            a10 = _mm256_fmadd_ps(a10, x, y); a11 = _mm256_fmadd_ps(a11, x, y);
        }
        iters += FMA_CHUNK;
        t = bench_now() - t0;
    } while (t < seconds);
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    fma_sink = lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
    *flops = (double)iters * 12.0 /* accumulators */ * 8.0 /* lanes */ * 2.0;
    return t;
}

typedef struct {
    bench_isa isa;
    double seconds;
    int cpu;
    pthread_barrier_t *barrier;
    double gflops;
} peak_job;

static void *peak_thread(void *p)
{
    peak_job *j = p;
    double flops, t;
    if (j->cpu >= 0)
        bench_pin_self(j->cpu);
    pthread_barrier_wait(j->barrier);
    /* Short warm-up (frequency ramp, AVX-512 power license), then measure. */
    if (j->isa == BENCH_ISA_AVX512) {
        fma_loop_avx512(0.05 * j->seconds + 0.005, &flops);
        pthread_barrier_wait(j->barrier);
        t = fma_loop_avx512(j->seconds, &flops);
    } else {
        fma_loop_avx2(0.05 * j->seconds + 0.005, &flops);
        pthread_barrier_wait(j->barrier);
        t = fma_loop_avx2(j->seconds, &flops);
    }
    j->gflops = flops / t * 1e-9;
    return NULL;
}

int bench_fma_peak(bench_isa isa, int threads, double seconds, bench_peak *out)
{
    memset(out, 0, sizeof *out);
    if (!bench_isa_supported(isa) || threads < 1)
        return -1;
    int cores[CPU_SETSIZE];
    int ncores = bench_physical_cores(cores, CPU_SETSIZE);
    peak_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    pthread_barrier_t barrier;
    if (!jobs || !tids) {
        free(jobs);
        free(tids);
        return -1;
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    double t0 = bench_now();
    int started = 0, rc = 0;
    for (int i = 0; i < threads; i++) {
        jobs[i].isa = isa;
        jobs[i].seconds = seconds;
        jobs[i].cpu = ncores > 0 ? cores[i % ncores] : -1;
        jobs[i].barrier = &barrier;
        if (i == 0)
            continue; /* thread 0 is the caller */
        if (pthread_create(&tids[i], NULL, peak_thread, &jobs[i]) != 0) {
            rc = -1;
            break;
        }
        started++;
    }
    if (rc != 0) {
        /* Cannot run the barrier with fewer threads: give up cleanly.  The
         * started threads are blocked on the barrier; this only happens when
         * thread creation fails, where exiting is the sane thing anyway. */
        fprintf(stderr, "fma peak: could not start %d threads\n", threads);
        exit(1);
    }
    /* Run job 0 on the calling thread, restoring its affinity afterwards. */
    cpu_set_t saved;
    int have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    peak_thread(&jobs[0]);
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    for (int i = 1; i <= started; i++)
        pthread_join(tids[i], NULL);
    out->seconds = bench_now() - t0;
    out->threads = threads;
    out->per_thread_min = jobs[0].gflops;
    for (int i = 0; i < threads; i++) {
        out->gflops += jobs[i].gflops;
        if (jobs[i].gflops < out->per_thread_min)
            out->per_thread_min = jobs[i].gflops;
    }
    pthread_barrier_destroy(&barrier);
    free(jobs);
    free(tids);
    return 0;
}

/* ---- small helpers shared by the runners ------------------------------ */

uint64_t bench_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void bench_fill_uniform(float *p, int64_t count, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < count; i++)
        p[i] = (float)((double)(bench_splitmix64(&s) >> 40) * (2.0 / 16777216.0) - 1.0);
}

float *bench_alloc_floats(int64_t count)
{
    size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "vortex bench: cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static int cmp_double_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n < 1)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double_asc);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_sleep_us(double us)
{
    if (!(us > 0))
        return;
    long long ns = (long long)(us * 1e3);
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int bench_restrict_affinity(int n)
{
    int cores[CPU_SETSIZE];
    int nc = bench_physical_cores(cores, CPU_SETSIZE);
    if (n >= nc)
        return 0;
    if (n < 1)
        n = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        CPU_SET(cores[i], &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -1;
}

const char *bench_dnnl_runtime_name(unsigned rt)
{
    switch (rt) {
    case 0: return "none";
    case 1: return "sequential";
    case 2: return "OpenMP";
    case 4: return "TBB";
    case 8: return "threadpool";
    case 256: return "OpenCL";
    case 512: return "SYCL";
    default: return "unknown";
    }
}

int bench_quick_pick(const double *gflop, int n, double max_gflop, int max_cases,
                     unsigned char *keep)
{
    int eligible = 0, kept = 0;
    for (int i = 0; i < n; i++) {
        keep[i] = 0;
        eligible += gflop[i] <= max_gflop;
    }
    if (eligible == 0 || max_cases < 1)
        return 0;
    /* The j-th pick is eligible case number round(j * (eligible-1) / (picks-1)). */
    const int picks = eligible < max_cases ? eligible : max_cases;
    for (int j = 0, e = 0, i = 0; j < picks && i < n; i++) {
        if (!(gflop[i] <= max_gflop))
            continue;
        int want = picks == 1 ? 0 : (int)(((int64_t)j * (eligible - 1) + (picks - 1) / 2) / (picks - 1));
        if (e == want) {
            keep[i] = 1;
            kept++;
            j++;
        }
        e++;
    }
    return kept;
}
