/* Hardware query: hwloc for the topology (cores, caches, NUMA), CPUID/XGETBV
 * for the ISA. Queried once; every other part reads the struct. */
#include "analyzer/hw.h"

#include <cpuid.h>
#include <sched.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static vx_hw_info g_hw;
enum { MAX_CPUS = 4096 };

static hwloc_topology_t g_topo;
static short g_core_of_cpu[MAX_CPUS]; /* OS cpu number -> core index, -1 unknown */
static int g_topo_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void query_isa(vx_hw_info *h)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    const int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx)
        return;
    const uint64_t xcr0 = xgetbv0();
    const int ymm_ok = (xcr0 & 0x6) == 0x6;         /* SSE + AVX state */
    const int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_max(0, NULL) < 7)
        return;
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1;
    const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    h->has_avx2_fma = ymm_ok && avx2 && fma;
    h->has_avx512 = zmm_ok && f && dq && bw && vl && h->has_avx2_fma;
    h->has_avx512_fp16 = h->has_avx512 && ((d >> 23) & 1);
    h->has_amx = (d >> 24) & 1; /* AMX-BF16 */
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    h->has_avx512_bf16 = h->has_avx512 && ((a1 >> 5) & 1);
}

/* The largest TLB that maps 4 KiB data pages (the second level on current
 * x86 cores): entries and ways. Rows of an operand read in place, a page or
 * more apart, take one entry each while a k block is walked, and like cache
 * lines they compete for the entries of a few sets (cost.c). Intel lists
 * its TLBs in leaf 0x18, AMD its L2 data TLB in 0x80000006. */
static void query_tlb(vx_hw_info *h)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    int best = 0, ways = 0;
    if (__get_cpuid_max(0, NULL) >= 0x18) {
        __cpuid_count(0x18, 0, a, b, c, d);
        const unsigned last = a < 64 ? a : 64;
        for (unsigned s = 0; s <= last; s++) {
            __cpuid_count(0x18, s, a, b, c, d);
            const unsigned type = d & 0x1f; /* 1 data, 3 unified, 4 load-only */
            const long w = (long)((b >> 16) & 0xffff), n = w * (long)c;
            if ((type == 1 || type == 3 || type == 4) && (b & 1) && n > best && n < (1L << 20)) {
                best = (int)n;
                ways = (d >> 8) & 1 ? (int)n : (int)w;
            }
        }
    }
    if (best == 0 && __get_cpuid_max(0x80000000, NULL) >= 0x80000006) {
        /* EBX: 4 KiB entries in bits 27:16, their associativity code in 31:28 */
        static const int assoc[16] = { 0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, -1 };
        __get_cpuid(0x80000006, &a, &b, &c, &d);
        best = (int)((b >> 16) & 0xfff);
        ways = assoc[b >> 28] < 0 ? best : assoc[b >> 28];
    }
    h->tlb_4k_entries = best;
    h->tlb_4k_ways = best > 0 && ways > 0 && best % ways == 0 ? ways : 0;
    h->tlb_4k_sets = h->tlb_4k_ways > 0 ? best / h->tlb_4k_ways : 0;
}

static void query_model(vx_hw_info *h)
{
    unsigned regs[12];
    if (__get_cpuid_max(0x80000000, NULL) >= 0x80000004) {
        __get_cpuid(0x80000002, &regs[0], &regs[1], &regs[2], &regs[3]);
        __get_cpuid(0x80000003, &regs[4], &regs[5], &regs[6], &regs[7]);
        __get_cpuid(0x80000004, &regs[8], &regs[9], &regs[10], &regs[11]);
        char raw[49];
        memcpy(raw, regs, 48);
        raw[48] = 0;
        const char *s = raw;
        while (*s == ' ')
            s++;
        snprintf(h->cpu_model, sizeof h->cpu_model, "%s", s);
    } else {
        snprintf(h->cpu_model, sizeof h->cpu_model, "unknown x86-64");
    }
}

/* Size of the first cache object of this depth above a core, how many
 * cores share it, its associativity (0 when unknown or fully associative)
 * and line size. */
static void cache_of_level(hwloc_topology_t t, int level, int64_t *bytes, int *cores, int *ways, int *line)
{
    hwloc_obj_type_t ty = level == 1 ? HWLOC_OBJ_L1CACHE : level == 2 ? HWLOC_OBJ_L2CACHE : HWLOC_OBJ_L3CACHE;
    hwloc_obj_t o = hwloc_get_next_obj_by_type(t, ty, NULL);
    if (!o || !o->attr)
        return;
    *bytes = (int64_t)o->attr->cache.size;
    *ways = o->attr->cache.associativity > 0 ? o->attr->cache.associativity : 0;
    if (o->attr->cache.linesize > 0)
        *line = (int)o->attr->cache.linesize;
    int n = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_CORE);
    *cores = n > 0 ? n : 1;
}

static void query_topology(vx_hw_info *h)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    h->logical_cpus = ncpu > 0 ? (int)ncpu : 1;
    h->physical_cores = h->logical_cpus;
    h->numa_nodes = 1;
    /* Fallbacks when hwloc cannot tell: conservative, common sizes. */
    h->l1d_bytes = 32 << 10;
    h->l2_bytes = 1 << 20;
    h->l3_bytes = 8 << 20;
    h->l2_cores = 1;
    h->l3_cores = h->physical_cores;

    if (hwloc_topology_init(&g_topo) != 0)
        return;
    if (hwloc_topology_load(g_topo) != 0) {
        hwloc_topology_destroy(g_topo);
        return;
    }
    g_topo_ok = 1;
    int cores = hwloc_get_nbobjs_by_type(g_topo, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(g_topo, HWLOC_OBJ_PU);
    int numa = hwloc_get_nbobjs_by_type(g_topo, HWLOC_OBJ_NUMANODE);
    if (cores > 0)
        h->physical_cores = cores;
    if (pus > 0)
        h->logical_cpus = pus;
    if (numa > 0)
        h->numa_nodes = numa;
    int64_t l1 = 0, l2 = 0, l3 = 0;
    int c1 = 1, c2 = 1, c3 = 1, line = 0;
    cache_of_level(g_topo, 1, &l1, &c1, &h->l1d_ways, &line);
    cache_of_level(g_topo, 2, &l2, &c2, &h->l2_ways, &line);
    cache_of_level(g_topo, 3, &l3, &c3, &h->l3_ways, &line);
    h->line_bytes = line;
    if (l1 > 0)
        h->l1d_bytes = l1;
    if (l2 > 0) {
        h->l2_bytes = l2;
        h->l2_cores = c2;
    }
    if (l3 > 0) {
        h->l3_bytes = l3;
        h->l3_cores = c3;
    } else if (l2 > 0) {
        h->l3_bytes = 0; /* no L3: the model then streams from DRAM */
        h->l3_cores = h->physical_cores;
    }
    h->from_hwloc = l1 > 0 && l2 > 0;
    for (int c = 0; c < cores; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(g_topo, HWLOC_OBJ_CORE, (unsigned)c);
        unsigned cpu;
        hwloc_bitmap_foreach_begin(cpu, core->cpuset)
            if (cpu < MAX_CPUS)
                g_core_of_cpu[cpu] = (short)c;
        hwloc_bitmap_foreach_end();
    }
}

/* The clock Linux reports for the first CPU (a VM shows the host's nominal
 * clock). Used only to turn cycle counts into the built-in defaults'
 * nanoseconds; vortex-install-tune measures the real rates. */
static void query_clock(vx_hw_info *h)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    double mhz = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
            break;
    fclose(f);
    if (mhz >= 500 && mhz <= 10000)
        h->ghz = mhz / 1000;
}

static void query_all(void)
{
    for (int i = 0; i < MAX_CPUS; i++)
        g_core_of_cpu[i] = -1;
    query_model(&g_hw);
    query_isa(&g_hw);
    query_tlb(&g_hw);
    query_topology(&g_hw);
    query_clock(&g_hw);
}

void vx_hw_tlb_assumed(const vx_hw_info *h, int *ways, int *sets)
{
    const int known = h->tlb_4k_ways > 0 && h->tlb_4k_sets > 0;
    *ways = known ? h->tlb_4k_ways : VX_TLB_FALLBACK_WAYS;
    *sets = known ? h->tlb_4k_sets : VX_TLB_FALLBACK_SETS;
}

const vx_hw_info *vx_hw(void)
{
    pthread_once(&g_once, query_all);
    return &g_hw;
}

int vx_hw_current_core(void)
{
    vx_hw();
    int cpu = sched_getcpu();
    return cpu >= 0 && cpu < MAX_CPUS ? g_core_of_cpu[cpu] : -1;
}

int vx_hw_bind_thread_to_core(int core)
{
    vx_hw();
    if (!g_topo_ok)
        return -1;
    int n = hwloc_get_nbobjs_by_type(g_topo, HWLOC_OBJ_CORE);
    if (n <= 0)
        return -1;
    hwloc_obj_t o = hwloc_get_obj_by_type(g_topo, HWLOC_OBJ_CORE, (unsigned)(core % n));
    if (!o)
        return -1;
    hwloc_cpuset_t set = hwloc_bitmap_dup(o->cpuset);
    hwloc_bitmap_singlify(set); /* one PU: no migration between hyper-threads */
    int r = hwloc_set_cpubind(g_topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return r;
}
