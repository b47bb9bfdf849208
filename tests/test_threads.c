/* Threads: vx_get/set_num_threads semantics, results with 1 and 2 library
 * threads and with forced thread grids, and concurrent dyn_gemm calls from
 * several application threads. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/plan.h"
#include "cpu/threadpool.h"
#include "ref.h"
#include "vt_isa.h"

#define TMO 150.0

static void init_no_env(void)
{
    unsetenv("VORTEX_NUM_THREADS");
}

static void init_env3(void)
{
    setenv("VORTEX_NUM_THREADS", "3", 1);
}

Test(num_threads, default_and_set, .init = init_no_env)
{
    int def = vx_get_num_threads();
    cr_assert(def >= 1, "default vx_get_num_threads() = %d < 1", def);
    cr_assert_eq(def, vx_hw()->physical_cores,
                 "without VORTEX_NUM_THREADS the default must be the physical core count (%d), "
                 "got %d",
                 vx_hw()->physical_cores, def);
    vx_set_num_threads(1);
    cr_assert_eq(vx_get_num_threads(), 1, "set 1 then get %d", vx_get_num_threads());
    vx_set_num_threads(2);
    cr_assert_eq(vx_get_num_threads(), 2, "set 2 then get %d", vx_get_num_threads());
    vx_set_num_threads(0);
    cr_assert_eq(vx_get_num_threads(), def, "set 0 must restore the default %d, got %d", def,
                 vx_get_num_threads());
    vx_set_num_threads(1);
    vx_set_num_threads(-4);
    cr_assert_eq(vx_get_num_threads(), def, "set -4 must restore the default %d, got %d", def,
                 vx_get_num_threads());
}

Test(num_threads, env_default, .init = init_env3)
{
    cr_assert_eq(vx_get_num_threads(), 3, "VORTEX_NUM_THREADS=3 but vx_get_num_threads() = %d",
                 vx_get_num_threads());
    vx_set_num_threads(1);
    cr_assert_eq(vx_get_num_threads(), 1, "set 1 then get %d", vx_get_num_threads());
    vx_set_num_threads(0);
    cr_assert_eq(vx_get_num_threads(), 3, "set 0 must restore VORTEX_NUM_THREADS=3, got %d",
                 vx_get_num_threads());
}

/* A setting made on one thread is the process setting (calls from any
 * thread use it). */
static void *get_in_thread(void *arg)
{
    *(int *)arg = vx_get_num_threads();
    return NULL;
}

Test(num_threads, process_wide, .init = init_no_env)
{
    vx_set_num_threads(2);
    int seen = 0;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, get_in_thread, &seen), 0);
    pthread_join(t, NULL);
    cr_assert_eq(seen, 2, "set 2 on the main thread, another thread gets %d", seen);
}

/* ------------------------------------------------------------------ */

static const int64_t shapes[][3] = {
    {200, 300, 100}, {517, 33, 64}, {33, 517, 64}, {1, 1000, 50}, {1000, 1, 50},
    {7, 5, 3},       {64, 64, 300}, {2, 3, 1000},  {129, 130, 131},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void run_shapes(vx_isa isa, const char *what)
{
    char tag[200];
    snprintf(tag, sizeof tag, "isa=%s %s", vt_isa_name(isa), what);
    for (int s = 0; s < NSHAPES; s++)
        for (int v = 0; v < 3; v++) {
            int idx = s * 3 + v;
            vt_case c = vt_case_make(shapes[s][0], shapes[s][1], shapes[s][2]);
            vt_combo(idx % 8, &c.layout, &c.ta, &c.tb);
            static const float betas[] = {0.0f, 1.0f, 0.3f};
            c.beta = betas[v];
            if (c.beta == 0.0f)
                c.cinit = VT_C_NAN;
            c.alpha = idx % 2 ? -0.5f : 1.0f;
            c.ldc_pad = idx % 3 == 1 ? 3 : 0;
            c.seed = (uint64_t)idx + 11;
            c.tag = tag;
            vt_check(&c);
        }
}

VT_ISA_TEST(lib_threads, one, TMO)
{
    vx_set_num_threads(1);
    run_shapes(vt_isa, "1 thread");
}

VT_ISA_TEST(lib_threads, two, TMO)
{
    vx_set_num_threads(2);
    run_shapes(vt_isa, "2 threads");
}

/* Forced thread grids on every path, including grids with more threads
 * than rows or columns of tiles. */
VT_ISA_TEST(lib_threads, forced_grids, TMO)
{
    static const int grids[][2] = {{2, 1}, {1, 2}, {2, 2}, {3, 1}};
    static const vx_path paths[] = {VX_PATH_AUTO, VX_PATH_PACKED, VX_PATH_PACK_B,
                                    VX_PATH_DIRECT};
    static const int64_t gshapes[][3] = {{150, 170, 90}, {1, 40, 17}, {40, 1, 17},
                                         {3, 5, 2},      {97, 33, 300}};
    int idx = 0;
    for (int g = 0; g < 4; g++)
        for (int p = 0; p < 4; p++) {
            vx_set_num_threads(grids[g][0] * grids[g][1]);
            vx_gemm_plan o;
            memset(&o, 0, sizeof o);
            o.path = paths[p];
            o.threads_m = grids[g][0];
            o.threads_n = grids[g][1];
            if (paths[p] == VX_PATH_PACKED && g % 2 == 1) {
                /* small blocks too, so every thread runs several blocks */
                const vx_ukernel_family *fam = &vx_ukernels(vt_isa)->families[0];
                o.nr = fam->nr;
                o.mr = fam->mr_max > 2 ? 2 : 1;
                o.mc = 2 * o.mr;
                o.kc = 16;
                o.nc = 2 * fam->nr;
            }
            vx_plan_set_override(&o);
            char tag[160];
            snprintf(tag, sizeof tag, "isa=%s forced grid %dx%d path %d%s (threads=%d)",
                     vt_isa_name(vt_isa), grids[g][0], grids[g][1], (int)paths[p],
                     o.kc ? " small blocks" : "", vx_get_num_threads());
            for (int s = 0; s < 5; s++, idx++) {
                vt_case c = vt_case_make(gshapes[s][0], gshapes[s][1], gshapes[s][2]);
                /* the direct path runs in place for row-major B not transposed */
                vt_combo(paths[p] == VX_PATH_DIRECT && idx % 2 ? 0 : idx % 8, &c.layout, &c.ta,
                         &c.tb);
                static const float betas[] = {0.0f, 1.0f, 0.3f};
                c.beta = betas[idx % 3];
                if (c.beta == 0.0f)
                    c.cinit = VT_C_NAN;
                c.alpha = idx % 2 ? -0.5f : 1.0f;
                c.ldc_pad = idx % 4 == 1 ? 17 : 0;
                c.seed = (uint64_t)idx * 31u + 1u;
                c.tag = tag;
                vt_check(&c);
            }
        }
    vx_plan_set_override(NULL);
}

/* ------------------------------------------------------------------ */
/* Concurrent calls from application threads                           */
/* ------------------------------------------------------------------ */

#define NWORKERS 4
#define NITER 25

typedef struct {
    int id;
    int failures;
    int calls;
    char first_failure[1024];
    const char *tag;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int it = 0; it < NITER; it++) {
        /* a different shape, combination and scalars for every thread and
         * iteration; some big enough for the library to split */
        int64_t m = 1 + (w->id * 37 + it * 53) % 180;
        int64_t n = 1 + (w->id * 71 + it * 29) % 190;
        int64_t k = 1 + (w->id * 13 + it * 97) % 150;
        vt_case c = vt_case_make(m, n, k);
        vt_combo(w->id + it, &c.layout, &c.ta, &c.tb);
        static const float betas[] = {0.0f, 1.0f, 0.3f};
        c.beta = betas[(w->id + it) % 3];
        if (c.beta == 0.0f)
            c.cinit = VT_C_NAN;
        c.alpha = it % 2 ? -0.5f : 1.0f;
        c.ldc_pad = (it % 3 == 0) ? 3 : 0;
        c.seed = (uint64_t)(w->id * 1000 + it);
        c.tag = w->tag;
        vt_result r;
        w->calls++;
        if (!vt_run(&c, &r)) {
            if (w->failures++ == 0)
                snprintf(w->first_failure, sizeof w->first_failure, "thread %d iteration %d: %s",
                         w->id, it, r.msg);
        }
        /* every third iteration also a failing call: it must not disturb others */
        if (it % 3 == 2) {
            float dummy[4] = {0};
            vx_status s = dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 2, 2, 2, 1.0f, dummy, 1,
                                   dummy, 2, 0.0f, dummy, 2);
            if (s != VX_ERR_INVALID_ARG || vx_last_error()[0] == '\0') {
                if (w->failures++ == 0)
                    snprintf(w->first_failure, sizeof w->first_failure,
                             "thread %d iteration %d: lda=1 < k=2 gave %s, message \"%s\"", w->id,
                             it, vx_status_string(s), vx_last_error());
            }
        }
    }
    return NULL;
}

static void concurrent(vx_isa isa, int lib_threads)
{
    vx_set_num_threads(lib_threads);
    char tag[96];
    snprintf(tag, sizeof tag, "isa=%s concurrent, %d library thread(s) per call",
             vt_isa_name(isa), lib_threads);
    worker w[NWORKERS];
    pthread_t t[NWORKERS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < NWORKERS; i++) {
        w[i].id = i;
        w[i].tag = tag;
        cr_assert_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0, "pthread_create");
    }
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NWORKERS; i++) {
        cr_assert_eq(w[i].calls, NITER, "thread %d made %d calls", i, w[i].calls);
        cr_assert_eq(w[i].failures, 0, "%d failure(s); first: %s", w[i].failures,
                     w[i].first_failure);
    }
}

VT_ISA_TEST(concurrent, one_lib_thread, TMO) { concurrent(vt_isa, 1); }
VT_ISA_TEST(concurrent, two_lib_threads, TMO) { concurrent(vt_isa, 2); }

/* A stream of calls planned on one thread because the workers sleep wakes
 * them once (threadpool.h, vx_pool_stream_note): a note is recent right
 * after it (tried until the test thread runs the two steps unpreempted;
 * a preemption of half the spin window between them is rare, not every
 * time) and not after a sleep far past the spin window. */
Test(pool_stream, note_is_recent_then_expires)
{
    int recent = 0;
    for (int t = 0; t < 1000 && !recent; t++) {
        vx_pool_stream_note();
        recent = vx_pool_stream_recent();
    }
    cr_assert(recent, "a note was never recent right after it");
    vx_pool_stream_note();
    struct timespec ts = { 0, 50 * 1000 * 1000 }; /* 50 ms: 500x the ~0.1 ms window */
    nanosleep(&ts, NULL);
    cr_assert(!vx_pool_stream_recent(), "a note 50 ms old still counted as recent");
}

/* And the calls of such a stream stay right on two threads: NT 2x768x768
 * (the dot form, one thread while the pool sleeps) called back to back
 * eight times, C over NaN with beta = 0 each time, the last result against
 * a float64 reference. */
Test(pool_stream, back_to_back_calls_stay_correct, .timeout = TMO)
{
    enum { M = 2, N = 768, K = 768 };
    vx_set_num_threads(2);
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K), *c = malloc(sizeof(float) * M * N);
    double *ref = malloc(sizeof(double) * M * N);
    cr_assert(a && b && c && ref);
    vt_rng rng;
    vt_rng_seed(&rng, 88172645463325252ull);
    for (int i = 0; i < M * K; i++)
        a[i] = vt_rng_float(&rng);
    for (int i = 0; i < N * K; i++)
        b[i] = vt_rng_float(&rng);
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < M * N; i++)
            c[i] = NAN;
        cr_assert_eq(dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_TRANS, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N), VX_OK);
    }
    vt_ref_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_TRANS, M, N, K, 1.0, a, K, b, K, 0.0, NULL, N, ref);
    const double err = vt_rel_err(c, N, 1, ref, M, N);
    cr_assert(err <= VT_TOL, "relative Frobenius error %g after 8 back-to-back calls", err);
    free(a);
    free(b);
    free(c);
    free(ref);
}

/* The pool's reading of a warm region (threadpool.h, vx_pool_class_flag):
 * after enough two-thread regions it has one (the TSC calibrated), and the
 * class it reports follows the baseline it is read against: the largest
 * class over a baseline of a picosecond, the smallest over one of a
 * second, 0 over its own reading. Orders of magnitude apart, so no timing
 * of this machine's can decide it. */
static void empty_region(void *ctx, int tid, int n)
{
    (void)ctx;
    (void)tid;
    (void)n;
}

static void regions(int count)
{
    for (int i = 0; i < count; i++)
        vx_pool_run(empty_region, NULL, 2);
}

Test(pool_meter, class_follows_the_baseline, .timeout = TMO)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double waited = 0;
    while (vx_pool_region_ns() <= 0 && waited < 20.0) { /* the TSC's calibration takes ~3 ms of regions */
        regions(1000);
        clock_gettime(CLOCK_MONOTONIC, &t);
        waited = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    }
    const double ns = vx_pool_region_ns();
    cr_assert(ns > 0 && ns < 1e8, "no reading of a warm region after %.1f s of them: %g ns", waited, ns);
    vx_pool_set_region_baseline(1e-3);
    regions(200);
    cr_assert_eq(atomic_load(&vx_pool_class_flag), 7, "baseline 1 ps, reading %g ns: class %d", vx_pool_region_ns(),
                 atomic_load(&vx_pool_class_flag));
    vx_pool_set_region_baseline(1e9);
    regions(200);
    cr_assert_eq(atomic_load(&vx_pool_class_flag), -8, "baseline 1 s, reading %g ns: class %d", vx_pool_region_ns(),
                 atomic_load(&vx_pool_class_flag));
    int cls = 99;
    for (int tries = 0; tries < 100 && cls != 0; tries++) { /* its own reading, as it drifts */
        vx_pool_set_region_baseline(vx_pool_region_ns());
        regions(50);
        cls = atomic_load(&vx_pool_class_flag);
    }
    cr_assert_eq(cls, 0, "baseline at its own reading (%g ns): class %d", vx_pool_region_ns(), cls);
    /* the state the planner reads: the class beside the warm bit */
    vx_pool_set_region_baseline(1e9);
    regions(200);
    const int s = vx_pool_state();
    cr_assert_eq(vx_units_state_class(s), -8, "state %d", s);
}

/* A region whose tasks each take ~20 us, as a mid-size call's do. */
static void busy_task(void *ctx, int tid, int n)
{
    (void)ctx;
    (void)tid;
    (void)n;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
}

/* Regions of ~20 us until the TSC is calibrated and the meter has a
 * reading: ~40 of them, where empty ones would be thousands. */
static double calibrated_reading(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double waited = 0;
    while (vx_pool_region_ns() <= 0 && waited < 20.0) {
        vx_pool_run(busy_task, NULL, 2);
        clock_gettime(CLOCK_MONOTONIC, &t);
        waited = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    }
    return vx_pool_region_ns();
}

/* The meter's tracking on made-up samples (threadpool.h,
 * vx_region_meter_step; 2.5 ticks a ns, a baseline of 200 ns = 500
 * ticks). A process's first warm region also waits for its new workers
 * (up to millions of ticks): the median starts at the baseline and that
 * sample moves it 1/32, so the class stays 0; read from that sample, it
 * stood at 7 and, in calls planned by it, stayed there (NOTES.md,
 * twenty-ninth session). Hand-offs at the baseline keep it 0; at 8x it
 * climbs to 3, and back at the baseline it returns to 0. */
Test(pool_meter, tracking_starts_at_the_baseline)
{
    vx_region_meter t = { 0 };
    cr_assert_eq(vx_region_meter_step(&t, 7e6, 2.5, 200.0), 0, "one slow first sample: class %d", t.cls);
    cr_assert_float_eq(t.median_ticks, 500.0 * 33.0 / 32.0, 1e-9);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(vx_region_meter_step(&t, i % 2 ? 450.0 : 550.0, 2.5, 200.0), 0, "sample %d: class %d", i, t.cls);
    for (int i = 0; i < 200; i++)
        vx_region_meter_step(&t, 4000.0, 2.5, 200.0);
    cr_assert_eq(t.cls, 3, "hand-offs at 8x the baseline: class %d (median %g ticks)", t.cls, t.median_ticks);
    for (int i = 0; i < 200; i++)
        vx_region_meter_step(&t, 500.0, 2.5, 200.0);
    cr_assert_eq(t.cls, 0, "back at the baseline: class %d (median %g ticks)", t.cls, t.median_ticks);
    vx_region_meter none = { 0 };
    cr_assert_eq(vx_region_meter_step(&none, 7e6, 2.5, 0.0), 0, "no baseline: class %d", none.cls);
    cr_assert_float_eq(none.median_ticks, 7e6, 1e-3, "no baseline: the median starts at the first sample");
}

/* A class above 0 keeps the calls that would run regions on one thread,
 * so nothing would update it: read ~0.1 s ago or earlier it is dropped by
 * the next note of such a call (vx_pool_stream_note), and the regions that
 * follow measure it again. Just after a reading it stays. */
Test(pool_meter, a_stale_class_expires, .timeout = TMO)
{
    cr_assert(calibrated_reading() > 0, "no reading of a warm region");
    vx_pool_set_region_baseline(1e-3);
    int kept = 0;
    for (int t = 0; t < 20 && !kept; t++) { /* tried until the two steps run unpreempted */
        regions(200);
        cr_assert_eq(atomic_load(&vx_pool_class_flag), 7, "baseline 1 ps: class %d", atomic_load(&vx_pool_class_flag));
        vx_pool_stream_note();
        kept = atomic_load(&vx_pool_class_flag) == 7;
    }
    cr_assert(kept, "a class read just now was dropped");
    struct timespec ts = { 0, 300 * 1000 * 1000 }; /* 300 ms: past the ~0.1 s a class lasts unread */
    nanosleep(&ts, NULL);
    vx_pool_stream_note();
    cr_assert_eq(atomic_load(&vx_pool_class_flag), 0, "a class unread for 300 ms kept: %d",
                 atomic_load(&vx_pool_class_flag));
    regions(400); /* from the baseline up by 1/32 a region: 7 after ~150 */
    cr_assert_eq(atomic_load(&vx_pool_class_flag), 7, "not measured again after it was dropped: class %d",
                 atomic_load(&vx_pool_class_flag));
}
