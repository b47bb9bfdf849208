/* Shared helpers for the Vortex benchmark runners (not part of the library).
 *
 * - wall clock (CLOCK_MONOTONIC)
 * - machine description: CPU model, usable CPUs, one CPU per physical core
 * - the fp32 FMA peak loops (AVX-512 and AVX2), single- and multi-threaded
 */
#ifndef VORTEX_BENCH_COMMON_H
#define VORTEX_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Seconds from an arbitrary origin, CLOCK_MONOTONIC. */
double bench_now(void);

/* "model name" from /proc/cpuinfo (or "unknown"); never NULL. */
const char *bench_cpu_model(void);

/* CPUs this process may run on (sched_getaffinity), in cpus[0..ret-1]. */
int bench_usable_cpus(int *cpus, int max);

/* One usable CPU per physical core (the first usable sibling of each core,
 * from /sys/devices/system/cpu/cpuN/topology/thread_siblings_list), in
 * cpus[0..ret-1]. Falls back to bench_usable_cpus() when sysfs is missing. */
int bench_physical_cores(int *cpus, int max);

/* Pin the calling thread to one CPU (best effort; returns 0 on success). */
int bench_pin_self(int cpu);

typedef enum { BENCH_ISA_AVX2 = 0, BENCH_ISA_AVX512 = 1 } bench_isa;

/* 1 if the CPU and OS can run the loop for this ISA. */
int bench_isa_supported(bench_isa isa);
const char *bench_isa_name(bench_isa isa);

typedef struct {
    double gflops;        /* all threads together */
    double per_thread_min; /* slowest thread's GFLOP/s */
    double seconds;       /* wall time of the measurement */
    int threads;
} bench_peak;

/* Run the fp32 FMA loop of `isa` on `threads` threads (one per physical core,
 * pinned, round-robin when threads > cores) for about `seconds` seconds.
 * 2 flops per lane per FMA. Returns 0 on success, -1 if the ISA is not
 * supported or threads could not be started. */
int bench_fma_peak(bench_isa isa, int threads, double seconds, bench_peak *out);

/* ---- small helpers shared by the runners ---------------------------------- */

/* SplitMix64: the runners' own generator, so suites drawn from a seed are the
 * same on every platform. */
uint64_t bench_splitmix64(uint64_t *state);

/* count floats uniform in [-1, 1) from seed (bench_splitmix64; the same values
 * as vortex-bench-gemm's operands for the same seed). */
void bench_fill_uniform(float *p, int64_t count, uint64_t seed);

/* 64-byte aligned storage for max(count, 1) floats; exits with a message when
 * the allocation fails. Release with free(). */
float *bench_alloc_floats(int64_t count);

/* Median of v[0..n-1] (sorts v in place; the mean of the middle two for even
 * n; 0 for n < 1). */
double bench_median(double *v, int n);

/* Sleep for us microseconds (nanosleep, restarted on EINTR); no-op for <= 0. */
void bench_sleep_us(double us);

/* Restrict the whole process to its first n physical cores (a fallback where a
 * runtime's thread count cannot be set otherwise). 0 on success or when n
 * covers every core already, -1 on failure. */
int bench_restrict_affinity(int n);

/* oneDNN's DNNL_CPU_THREADING_RUNTIME / DNNL_GPU_RUNTIME value as a name
 * ("TBB", "SYCL", ...); the numbers are oneDNN's DNNL_RUNTIME_* values. */
const char *bench_dnnl_runtime_name(unsigned rt);

/* The --quick subset of a suite read from a file, the same rule in every
 * runner: among the cases of at most max_gflop, up to max_cases spread
 * evenly over the file's order (first and last eligible included). Sets
 * keep[i] to 1 or 0 for each of the n cases; returns how many are kept. */
#define BENCH_QUICK_FILE_CASES 12
#define BENCH_QUICK_FILE_GFLOP 4.0
int bench_quick_pick(const double *gflop, int n, double max_gflop, int max_cases,
                     unsigned char *keep);

#endif
