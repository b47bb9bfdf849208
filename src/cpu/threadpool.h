/* L2 execution: a pool of worker threads pinned to cores (hwloc). The calling
 * thread is worker 0; worker i is pinned to the i-th core after the one the
 * caller runs on, so caller and workers never share a core. One parallel
 * region runs at a time: a call that finds the pool busy (another thread's
 * dyn_gemm in flight) runs its region on the calling thread alone, which is
 * always correct because a task must cover all its work for any (tid, n). */
#ifndef VX_CPU_THREADPOOL_H
#define VX_CPU_THREADPOOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "analyzer/levels.h"

typedef void (*vx_task_fn)(void *ctx, int tid, int nthreads);

/* A task's next claim of `step` units from the shared counter *next, after
 * its claim `prev` (-step before the first). A region run on one thread
 * (nthreads == 1) counts on its own and leaves *next alone: each LOCK XADD
 * costs ~9 ns on AMD Zen 1, and a small call makes two. */
static inline int64_t vx_pool_claim(atomic_llong *next, int64_t prev, int64_t step, int nthreads)
{
    return nthreads == 1 ? prev + step : (int64_t)atomic_fetch_add_explicit(next, step, memory_order_relaxed);
}

/* Run fn(ctx, tid, n) for tid = 0..n-1 and wait; returns the n actually used
 * (1 when the pool is busy or a worker cannot be started). */
int vx_pool_run(vx_task_fn fn, void *ctx, int nthreads);

/* Inside a region of n threads: thread tid's home, a number in 0..n-1, one
 * per thread, tied to the core the thread runs on: (the caller's core +
 * tid) mod n, which is the core itself when n is the core count. Work
 * handed out by home rather than first come first served lands on the same
 * core call after call, even when the caller moves between cores, so a
 * caller repeating a shape finds its share of the operands in that core's
 * caches. */
int vx_pool_home(int tid, int nthreads);

/* 1 while the workers still spin after the last region (a region now
 * starts without a sleeping thread to wake), 0 when they have gone to sleep
 * or never started. The analyzer prices a parallel region by this. Every
 * call with a thread budget over one asks: one load, inlined. */
extern atomic_int vx_pool_warm_flag; /* kept by threadpool.c */
static inline int vx_pool_warm(void) { return atomic_load_explicit(&vx_pool_warm_flag, memory_order_relaxed); }

/* What a region with spinning workers costs now against the install-time
 * reading the backend gave (vx_pool_set_region_baseline), as the class
 * of analyzer/levels.h's vx_units_state: about 2^class times. The pool
 * times every such region's hand-offs (the workers' start after the caller
 * publishes it, the caller's wait after the last one ends; the tasks
 * themselves excluded) and tracks their median; the class moves when that
 * is more than 2^0.75 away from the class's value. A virtual machine's
 * host moves its cores apart and back within minutes: an empty region on
 * two AMD Zen 4 cores took 80 ns in one window and 370 in the next, and
 * calls priced with the other window's cost ran on two threads at twice
 * the time of one (NOTES.md, twenty-second session). */
extern atomic_int vx_pool_class_flag; /* kept by threadpool.c */

/* The tracking behind vx_pool_class_flag, one sample at a time: the
 * median of the hand-offs (ticks) moves 1/32 towards each sample, from the
 * baseline base_ns (ns; none: 0, the class stays 0) at ticks_per_ns, and
 * the class (returned, also kept in *t) follows log2(median / baseline)
 * once it is more than 0.75 away. Start from a zeroed meter. */
typedef struct {
    double median_ticks; /* 0: no sample yet */
    int cls;
} vx_region_meter;
int vx_region_meter_step(vx_region_meter *t, double sample_ticks, double ticks_per_ns, double base_ns);

/* The pool's state for the planner: vx_units_state(warm, class); every
 * call with a thread budget over one asks: two loads, inlined. */
static inline int vx_pool_state(void)
{
    return vx_units_state(vx_pool_warm(), atomic_load_explicit(&vx_pool_class_flag, memory_order_relaxed));
}

/* The reading of a warm region's hand-offs that vortex-install-tune took
 * beside the warm region it priced, ns (0: none, the class stays 0). */
void vx_pool_set_region_baseline(double ns);

/* The pool's current reading of a warm region's hand-offs, ns (0 before
 * it has one). */
double vx_pool_region_ns(void);

/* Calls that would run on more threads with the workers spinning, but plan
 * one because they sleep, never wake them: back to back, each finds them
 * asleep again. Such a call stamps its end (vx_pool_stream_note), and the
 * next one, if it starts within half the workers' spin window of that
 * (vx_pool_stream_recent), plans as if they spun: it pays one wake-up and
 * the calls after it find them spinning. */
void vx_pool_stream_note(void);
int vx_pool_stream_recent(void);

/* Multiply-adds below which no call runs on two threads, pool spinning or
 * not (32^3 and under: the small suite, 0.1-0.5 us a call): the callers
 * skip the stream check (a TSC read) for them. NT BERT layers of 1..8 rows
 * (2x768x768: 27 -> 12.5 us) ran on two threads back to back: the suite
 * 1.40x -> 1.50x of dnnl_sgemm (AMD Zen 5, NOTES.md, fifteenth session). */
#define VX_POOL_STREAM_MIN_MACS (128.0 * 1024.0)

/* Whether a call planned with `warm` (vx_pool_warm) on `threads` of a
 * budget of `budget`, doing `macs` multiply-adds, is one of those calls: it
 * notes its end, and replans as if the workers spun when
 * vx_pool_stream_recent() says the last one ended just before. */
static inline int vx_pool_stream_call(int warm, int budget, int threads, double macs)
{
    return !(warm & 1) && budget > 1 && threads == 1 && macs >= VX_POOL_STREAM_MIN_MACS;
}

#endif
