/* Hardware query: the one place that knows cores, caches and ISA.
 * Everything else reads vx_hw(); nothing hard-codes cache sizes. */
#ifndef VX_ANALYZER_HW_H
#define VX_ANALYZER_HW_H

#include <stdint.h>

typedef struct {
    char cpu_model[128];
    int physical_cores;      /* cores (not hyper-threads) usable by this process */
    int logical_cpus;
    int numa_nodes;
    int64_t l1d_bytes;       /* per instance */
    int64_t l2_bytes;
    int64_t l3_bytes;
    int l2_cores;            /* cores sharing one L2 instance */
    int l3_cores;            /* cores sharing one L3 instance */
    int l1d_ways, l2_ways, l3_ways; /* associativity of each level, 0 when unknown */
    int line_bytes;          /* cache line, 0 when unknown */
    int tlb_4k_entries;      /* entries of the largest data TLB for 4 KiB pages, 0 when unknown */
    int tlb_4k_ways;         /* its associativity (= entries when fully associative) */
    int tlb_4k_sets;         /* entries / ways, 0 when either is unknown */
    int has_avx2_fma;        /* AVX2 + FMA3, with OS support for ymm state */
    int has_avx512;          /* AVX-512 F/BW/VL/DQ, with OS support for zmm state */
    int has_avx512_bf16;
    int has_avx512_fp16;
    int has_amx;
    int from_hwloc;          /* 1 when cache sizes came from hwloc, 0 = fallbacks */
    double ghz;              /* clock the kernel reports (/proc/cpuinfo), 0 when unknown;
                                only the built-in tuning defaults read it */
} vx_hw_info;

/* A data TLB to assume where the CPU lists none (a guest's hypervisor may
 * hide CPUID leaf 0x18): AMD Zen 1's 1536 entries of 6 ways. The CPU
 * tune's strided probe walks past it; the model prices k blocks of rows a
 * page or more apart beyond it at that probe's rate. */
enum { VX_TLB_FALLBACK_WAYS = 6, VX_TLB_FALLBACK_SETS = 256 };

/* The 4 KiB data TLB's ways and sets: h's where the CPU lists them, else
 * the fallback above. */
void vx_hw_tlb_assumed(const vx_hw_info *h, int *ways, int *sets);

/* Queried once per process (thread-safe); never NULL. */
const vx_hw_info *vx_hw(void);

/* The core index (0-based, as vx_hw_bind_thread_to_core counts) that the
 * calling thread runs on now, or -1 when unknown. */
int vx_hw_current_core(void);

/* Bind the calling thread to physical core `core` (0-based, modulo the core
 * count). Returns 0 on success; failure is harmless (the thread just floats). */
int vx_hw_bind_thread_to_core(int core);

#endif
