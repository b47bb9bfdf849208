/* Shared helpers for the Vortex benchmark runners (not part of the library).
 *
 * - wall clock (CLOCK_MONOTONIC)
 * - machine description: CPU model, usable CPUs, one CPU per physical core
 * - the fp32 FMA peak loops (AVX-512 and AVX2), single- and multi-threaded
 */
#ifndef VORTEX_BENCH_COMMON_H
#define VORTEX_BENCH_COMMON_H

#include <stddef.h>

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

#endif
