#include "cpu/threadpool.h"

#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "analyzer/hw.h"

/* After a region a worker spins this many TSC ticks (~0.1 ms) before it
 * sleeps: back-to-back calls then start without a futex wake-up. */
enum { MAX_WORKERS = 256, SPIN_TICKS = 300000 };
/* How long a class above 0 lasts without a region to refresh it
 * (vx_pool_stream_note): ~0.1 s of a 2.6 GHz TSC. A slow window lasts
 * minutes (threadpool.h), so re-measuring it costs a few dozen regions in
 * ~3000 calls of 30 us. */
#define CLASS_STALE_TICKS 260000000ull

typedef struct {
    pthread_t thread;
    int tid;
    unsigned start_generation; /* the generation before the worker's first region */
    int bound_core;            /* core this worker is pinned to, -1 none */
} worker;

static pthread_mutex_t g_start_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_flag g_busy = ATOMIC_FLAG_INIT;   /* one region at a time */
static worker g_workers[MAX_WORKERS];
static int g_nworkers;                           /* pool threads started (tids 1..) */

/* The current region, on one cache line of its own: a spinning worker
 * polls the generation, and the caller's stores of the task beside it then
 * reach the worker in the one line transfer that brings the new generation.
 * Scattered over two lines shared with the pending count and the warm flag,
 * a region of two threads with nothing to do cost 185 ns; on lines of their
 * own (and without the futex broadcast below) 120 ns (AMD EPYC Zen 5,
 * NOTES.md, twentieth session). */
static struct {
    _Alignas(64) atomic_uint generation;
    atomic_int sleepers;      /* workers inside the condition wait (or about to be) */
    vx_task_fn fn;
    void *ctx;
    int nthreads;
    int caller_core;          /* where worker 0 (the caller) runs */
    int ncores;
} g_region;
/* 1 from the end of a region until the first worker is half way through
 * its spin window. Kept by the workers, which read the TSC anyway, so that
 * asking (every call's plan key carries it) is one load: RDTSC costs ~15 ns
 * a call on AMD Zen 1. */
_Alignas(64) atomic_int vx_pool_warm_flag;
static atomic_ullong g_stream_end;               /* TSC at the end of the last call that noted it */
static struct {
    _Alignas(64) atomic_int pending;             /* workers yet to finish */
} g_done;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

/* Each worker's TSC when it took the last region and when it ended it,
 * on a line of its own (read by the caller after the join). */
static struct {
    _Alignas(64) unsigned long long start, done;
} g_stamp[MAX_WORKERS + 1];

/* The run-time reading of a warm region's hand-offs (threadpool.h,
 * vx_pool_class_flag): touched only by the caller holding g_busy, but the
 * baseline (set when the backend's model is built) and the reading
 * (asked by vortex-info and the tests) by any thread. */
atomic_int vx_pool_class_flag;
static _Atomic double g_baseline_ns;   /* install-time warm region, 0: none */
static _Atomic double g_region_ns;     /* the tracked median, ns (0: none yet) */
static struct {
    double ticks_per_ns;               /* the TSC's rate, 0 until calibrated */
    unsigned long long cal_tsc;        /* calibration: a TSC reading and the */
    double cal_ns;                     /* monotonic clock's at the same time */
    vx_region_meter track;
} g_meter;
/* TSC of the last region the meter read, and a request (from any thread)
 * that the meter start again from the baseline: set when a class above 0
 * has gone stale (vx_pool_stream_note). */
static atomic_ullong g_meter_last;
static atomic_int g_meter_restart;

static void *worker_main(void *arg)
{
    worker *w = arg;
    unsigned seen = w->start_generation;
    for (;;) {
        /* Spin briefly (back-to-back calls are common), then sleep. */
        unsigned gen;
        const unsigned long long t0 = __rdtsc();
        int warm = 1;
        unsigned long long spun;
        while ((gen = atomic_load_explicit(&g_region.generation, memory_order_acquire)) == seen &&
               (spun = __rdtsc() - t0) < SPIN_TICKS) {
            /* a margin inside the window: a region that saw the flag set
             * must still find the workers spinning */
            if (warm && spun >= SPIN_TICKS / 2) {
                atomic_store_explicit(&vx_pool_warm_flag, 0, memory_order_relaxed);
                warm = 0;
            }
            _mm_pause();
        }
        if (warm && gen == seen)
            atomic_store_explicit(&vx_pool_warm_flag, 0, memory_order_relaxed);
        if (gen == seen) {
            /* Counted as a sleeper before the generation is read again
             * (both sequentially consistent): a caller that then finds no
             * sleeper has bumped the generation first, and this read sees it. */
            pthread_mutex_lock(&g_mu);
            atomic_fetch_add(&g_region.sleepers, 1);
            while ((gen = atomic_load(&g_region.generation)) == seen)
                pthread_cond_wait(&g_cv, &g_mu);
            atomic_fetch_sub(&g_region.sleepers, 1);
            pthread_mutex_unlock(&g_mu);
        }
        seen = gen;
        const unsigned long long start = __rdtsc();
        if (w->tid < g_region.nthreads) {
            /* Pin to the tid-th core counted from the caller's, so the
             * caller and the workers never share a core. Rebinding happens
             * only when the caller has moved. */
            const int caller = g_region.caller_core, ncores = g_region.ncores;
            int want = caller >= 0 ? (caller + w->tid) % ncores : w->tid % ncores;
            if (want != w->bound_core && vx_hw_bind_thread_to_core(want) == 0)
                w->bound_core = want;
            g_region.fn(g_region.ctx, w->tid, g_region.nthreads);
        }
        g_stamp[w->tid].start = start;
        g_stamp[w->tid].done = __rdtsc();
        atomic_fetch_sub_explicit(&g_done.pending, 1, memory_order_release);
    }
    return NULL;
}

/* Start pool threads up to tid n-1; returns how many threads are usable. */
static int ensure_workers(int n)
{
    if (n > MAX_WORKERS)
        n = MAX_WORKERS;
    pthread_mutex_lock(&g_start_mu);
    while (g_nworkers + 1 < n) {
        worker *w = &g_workers[g_nworkers];
        w->tid = g_nworkers + 1;
        /* Workers are only started by the thread holding g_busy, before it
         * publishes its region, so this is the generation to wait past. */
        w->start_generation = atomic_load(&g_region.generation);
        w->bound_core = -1;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&w->thread, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        g_nworkers++;
    }
    int usable = g_nworkers + 1;
    pthread_mutex_unlock(&g_start_mu);
    return usable < n ? usable : n;
}

int vx_pool_home(int tid, int nthreads)
{
    if (nthreads <= 1)
        return 0;
    return g_region.caller_core >= 0 ? (g_region.caller_core + tid) % nthreads : tid;
}

static double monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void vx_pool_set_region_baseline(double ns)
{
    atomic_store(&g_baseline_ns, ns > 0 && isfinite(ns) ? ns : 0.0);
}

double vx_pool_region_ns(void) { return atomic_load(&g_region_ns); }

/* One warm region of n threads, published at TSC t_pub, the caller's task
 * ended at t_cdone, the join seen at t_end: its hand-offs are the last
 * worker's start after t_pub and the caller's wait after the last task
 * ended (the tasks themselves are not in it). The TSC is the same on every
 * core (constant and non-stop: Linux keeps it as its clock only then); a
 * sample out of order is dropped. The median is tracked by steps of 1/32
 * (a slow outlier, a worker descheduled by the host, moves it once; a
 * window's change of 4x is followed in ~45 regions), and the class
 * follows it (threadpool.h). */
static void meter_sample(unsigned long long t_pub, unsigned long long t_cdone, unsigned long long t_end, int n)
{
    unsigned long long start = t_pub, done = t_cdone;
    for (int tid = 1; tid < n; tid++) {
        start = g_stamp[tid].start > start ? g_stamp[tid].start : start;
        done = g_stamp[tid].done > done ? g_stamp[tid].done : done;
    }
    if (t_end < done)
        return;
    /* at least a tick: a median at 0 could never move */
    const double sample = (double)(start - t_pub) + (double)(t_end - done) + 1.0;
    if (g_meter.ticks_per_ns <= 0) {
        /* Calibrate the TSC against the monotonic clock over the first
         * ~0.3-1 ms of regions: no wait of its own. */
        if (g_meter.cal_tsc == 0) {
            g_meter.cal_tsc = __rdtsc();
            g_meter.cal_ns = monotonic_ns();
        } else if (__rdtsc() - g_meter.cal_tsc > 2000000ull) {
            const double dt = monotonic_ns() - g_meter.cal_ns;
            if (dt > 0)
                g_meter.ticks_per_ns = (double)(__rdtsc() - g_meter.cal_tsc) / dt;
        }
    }
    if (g_meter.ticks_per_ns <= 0)
        return;
    atomic_store_explicit(&g_meter_last, t_end, memory_order_relaxed);
    if (atomic_exchange_explicit(&g_meter_restart, 0, memory_order_relaxed))
        g_meter.track.median_ticks = 0;
    const int cls = vx_region_meter_step(&g_meter.track, sample, g_meter.ticks_per_ns, atomic_load(&g_baseline_ns));
    atomic_store_explicit(&g_region_ns, g_meter.track.median_ticks / g_meter.ticks_per_ns, memory_order_relaxed);
    if (cls != atomic_load_explicit(&vx_pool_class_flag, memory_order_relaxed))
        atomic_store_explicit(&vx_pool_class_flag, cls, memory_order_relaxed);
}

int vx_region_meter_step(vx_region_meter *t, double sample, double ticks_per_ns, double base_ns)
{
    /* The median starts at the baseline (without one, at this sample), not
     * at the process's first sample: that region also waited for the new
     * workers to start (up to 2-7 million ticks, ~1000x a hand-off, on two
     * AMD Zen 4 cores), and followed by 1/32 a sample it put the class at 7
     * within the calibration's first millisecond, where it stayed: priced
     * at 128x, no later call ran a region to move it (NOTES.md,
     * twenty-ninth session). */
    const double m = t->median_ticks > 0 ? t->median_ticks : base_ns > 0 ? base_ns * ticks_per_ns : sample;
    t->median_ticks = sample > m ? m * (33.0 / 32.0) : sample < m ? m * (31.0 / 32.0) : m;
    if (base_ns <= 0)
        return t->cls = 0;
    const double r = log2(t->median_ticks / ticks_per_ns / base_ns);
    if (fabs(r - t->cls) > 0.75) {
        const long c = lround(r);
        t->cls = c < -8 ? -8 : c > 7 ? 7 : (int)c;
    }
    return t->cls;
}

int vx_pool_run(vx_task_fn fn, void *ctx, int nthreads)
{
    if (nthreads > 1 && !atomic_flag_test_and_set_explicit(&g_busy, memory_order_acquire)) {
        nthreads = ensure_workers(nthreads);
        if (nthreads > 1) {
            g_region.fn = fn;
            g_region.ctx = ctx;
            g_region.nthreads = nthreads;
            g_region.ncores = vx_hw()->physical_cores > 0 ? vx_hw()->physical_cores : 1;
            g_region.caller_core = vx_hw_current_core();
            /* Every started worker wakes for a generation, even those with
             * tid >= nthreads (they return at once), so all can be counted. */
            atomic_store(&g_done.pending, g_nworkers);
            /* The futex broadcast only when a worker sleeps: spinning ones
             * see the generation (the mutex and the broadcast cost ~30 ns
             * a region). */
            const unsigned long long t_pub = __rdtsc();
            atomic_fetch_add(&g_region.generation, 1);
            const int asleep = atomic_load(&g_region.sleepers) > 0;
            if (asleep) {
                pthread_mutex_lock(&g_mu);
                pthread_cond_broadcast(&g_cv);
                pthread_mutex_unlock(&g_mu);
            }
            fn(ctx, 0, nthreads);
            const unsigned long long t_cdone = __rdtsc();
            while (atomic_load_explicit(&g_done.pending, memory_order_acquire) > 0)
                _mm_pause();
            if (!asleep) /* a warm region: every worker was spinning */
                meter_sample(t_pub, t_cdone, __rdtsc(), nthreads);
            atomic_store_explicit(&vx_pool_warm_flag, 1, memory_order_relaxed);
            atomic_flag_clear_explicit(&g_busy, memory_order_release);
            return nthreads;
        }
        atomic_flag_clear_explicit(&g_busy, memory_order_release);
    }
    fn(ctx, 0, 1);
    return 1;
}

void vx_pool_stream_note(void)
{
    const unsigned long long t = __rdtsc();
    atomic_store_explicit(&g_stream_end, t, memory_order_relaxed);
    /* A class above 0 keeps calls that would share work on one thread, so
     * no region comes to update it: read CLASS_STALE_TICKS ago or earlier,
     * it is dropped (these calls then run regions again, which re-measure
     * it, from the baseline up if the window is still slow). */
    if (atomic_load_explicit(&vx_pool_class_flag, memory_order_relaxed) > 0 &&
        t - atomic_load_explicit(&g_meter_last, memory_order_relaxed) > CLASS_STALE_TICKS) {
        atomic_store_explicit(&g_meter_restart, 1, memory_order_relaxed);
        atomic_store_explicit(&vx_pool_class_flag, 0, memory_order_relaxed);
    }
}

int vx_pool_stream_recent(void)
{
    const unsigned long long t = atomic_load_explicit(&g_stream_end, memory_order_relaxed);
    return t != 0 && __rdtsc() - t < SPIN_TICKS / 2;
}
