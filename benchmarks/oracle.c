/* vortex-oracle: how good is the cost model's choice?
 *
 * For each shape of a suite, time candidate plans (every distinct plan the
 * model prices where there are few, else the model's top 20 plus 20 drawn at
 * random from the rest), each forced through the testing override and timed
 * round-robin so machine drift hits all of them alike. Then the model's
 * choice and the fastest plan found run head to head (alternately, medians;
 * see duel()), and the model's choice is reported as a fraction of the
 * fastest (1.0 = the oracle's pick or as fast). A second pass times one
 * static plan, the one most often fastest, on every shape beside the two
 * (the paper's static baseline).
 *
 * It also measures the selection cost: vx_plan_gemm on a cold plan cache
 * (the model prices the candidates) and on a hit. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/plan.h"
#include "analyzer/plancache.h"
#include "analyzer/select.h"
#include "bench_common.h"
#include "cpu/cpu_levels.h"
#include "cpu/isa.h"
#include "cpu/threadpool.h"
#include "vortex/vortex.h"

enum { RANK_MAX = 8192, ALL_IF_AT_MOST = 60, TOP = 20, RANDOM = 20, MAX_SHAPES = 512 };

typedef struct {
    char suite[16];
    int64_t m, n, k;
} shape;

typedef struct {
    shape s;
    int priced, timed;
    double model_us, best_us, static_us; /* model, best: the duel's medians; static: best-of */
    double static_frac;                  /* fastest of (static, model, best) / static */
    double model_pred_us, best_pred_us; /* the model's predictions for both */
    vx_gemm_plan model, best;
} outcome;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1p-53; }

/* Log-uniform integer in [lo, hi]. */
static int64_t log_uniform(uint64_t *s, int64_t lo, int64_t hi)
{
    const double v = exp(log((double)lo) + unit(s) * (log((double)hi + 1) - log((double)lo)));
    int64_t x = (int64_t)v;
    return x < lo ? lo : x > hi ? hi : x;
}

/* The CPU GEMM issue's BERT-base suite and the analyzer issue's random
 * shapes (m in 1..2048, n and k in 16..4096, log-uniform, fixed seed). */
static int build_suite(shape *out, int nrandom, int bert)
{
    int n = 0;
    if (bert) {
        static const int T[] = { 1, 5, 17, 31, 64, 100, 128 };
        static const int nk[][2] = { { 2304, 768 }, { 768, 768 }, { 3072, 768 }, { 768, 3072 } };
        for (int t = 0; t < 7; t++)
            for (int j = 0; j < 4; j++)
                out[n++] = (shape){ "bert", 16 * T[t], nk[j][0], nk[j][1] };
    }
    uint64_t seed = 0x0AC1E5EEDull;
    for (int i = 0; i < nrandom && n < MAX_SHAPES; i++) {
        const int64_t m = log_uniform(&seed, 1, 2048), nn = log_uniform(&seed, 16, 4096),
                      k = log_uniform(&seed, 16, 4096);
        out[n++] = (shape){ "random", m, nn, k };
    }
    return n;
}

typedef struct {
    float *a, *b, *c;
} buffers;

static double time_plan(const shape *s, const vx_gemm_plan *p, const buffers *B)
{
    vx_plan_set_override(p);
    const double t0 = bench_now();
    dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, s->m, s->n, s->k, 1.0f, B->a, s->k, B->b, s->n, 0.0f, B->c,
             s->n);
    const double us = (bench_now() - t0) * 1e6;
    vx_plan_set_override(NULL);
    return us;
}

/* The model's plan against the fastest one found, head to head: the two
 * run alternately, DUEL_MAX times each at most (about 0.4 s in all), and
 * the medians are compared. The fastest found is the least of many plans'
 * best runs, so on a noisy machine its time is a lucky draw that the
 * model's single plan rarely gets; the duel gives both the same luck.
 * The medians go to *model_us and *best_us (which come in holding the
 * round robin's times, to size the duel). */
static void duel(const shape *s, const vx_gemm_plan *model, const vx_gemm_plan *best, const buffers *B,
                   double *model_us, double *best_us)
{
    enum { DUEL_MIN = 5, DUEL_MAX = 15 };
    double t[2][DUEL_MAX];
    const double one = (*model_us + *best_us) * 1e-6;
    int reps = one > 0 ? (int)(0.4 / (2 * one)) : DUEL_MAX;
    reps = reps < DUEL_MIN ? DUEL_MIN : reps > DUEL_MAX ? DUEL_MAX : reps;
    /* Each turn runs its plan twice and keeps the second: a 2-unit plan
     * right after a 1-unit one would otherwise pay the workers' wake-up,
     * which the plans were ranked without (the pool is warm when calls run
     * back to back, as they do here). */
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < 2; w++) {
            time_plan(s, w == 0 ? model : best, B);
            t[w][r] = time_plan(s, w == 0 ? model : best, B);
        }
    *model_us = bench_median(t[0], reps);
    *best_us = bench_median(t[1], reps);
}

/* Round-robin timing of plans[0..n): best of `rounds` runs each; a plan
 * already 3x slower than the best after a round is not run again. */
static void time_plans(const shape *s, const vx_gemm_plan *plans, int n, const buffers *B, double budget_s,
                       double *best_us)
{
    for (int i = 0; i < n; i++) {
        time_plan(s, &plans[i], B); /* warm-up: pages, workspace, caches */
        best_us[i] = time_plan(s, &plans[i], B);
    }
    const double t_start = bench_now();
    for (int round = 0; round < 40; round++) {
        double fastest = INFINITY;
        for (int i = 0; i < n; i++)
            fastest = best_us[i] < fastest ? best_us[i] : fastest;
        if (round >= 4 && bench_now() - t_start > budget_s)
            break;
        for (int i = 0; i < n; i++) {
            if (best_us[i] > 3 * fastest && round >= 1)
                continue;
            const double us = time_plan(s, &plans[i], B);
            best_us[i] = us < best_us[i] ? us : best_us[i];
        }
    }
}

/* The selection cost. The first plan of a process also builds the model
 * (reads the tuning file, generates the candidates): timed apart, since
 * every later miss only prices. A miss is timed alone, on a cleared plan
 * cache, each shape in turn (so the branch predictors have not learnt the
 * shape); the median is the figure, the mean shows the preemptions. */
static void selection_cost(const shape *shapes, int n, vx_isa isa, int threads)
{
    enum { REPS = 20, HITS = 100 };
    vx_gemm_plan p;
    vx_cpu_model_reset();
    const vx_gemm_shape first = { .m = 7, .n = 7, .k = 7, .b_unit_stride = 1, .a_unit_stride = 1 };
    vx_plan_cache_clear();
    double t0 = bench_now();
    vx_plan_gemm(&first, isa, threads, &p);
    const double first_s = bench_now() - t0;
    double *miss = malloc(sizeof *miss * (size_t)REPS * (size_t)n);
    if (!miss) {
        fprintf(stderr, "vortex-oracle: out of memory\n");
        return;
    }
    double hit = 0, miss_sum = 0;
    int calls = 0;
    for (int r = 0; r < REPS; r++)
        for (int i = 0; i < n; i++) {
            const vx_gemm_shape gs = { .m = shapes[i].m, .n = shapes[i].n, .k = shapes[i].k,
                                       .b_unit_stride = 1, .a_unit_stride = 1 };
            vx_plan_cache_clear();
            t0 = bench_now();
            vx_plan_gemm(&gs, isa, threads, &p);
            miss[calls] = bench_now() - t0;
            miss_sum += miss[calls];
            t0 = bench_now();
            for (int h = 0; h < HITS; h++)
                vx_plan_gemm(&gs, isa, threads, &p);
            hit += (bench_now() - t0) / HITS;
            calls++;
        }
    printf("selection cost over %d shapes x %d: miss (model prices the candidates) median %.0f ns, mean %.0f ns; "
           "hit %.1f ns per call; the process's first plan (model built) %.2f ms\n",
           n, REPS, bench_median(miss, calls) * 1e9, miss_sum / calls * 1e9, hit / calls * 1e9, first_s * 1e3);
    free(miss);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vortex-oracle [--quick] [--random N] [--no-bert] [--budget S] [--csv FILE]\n"
            "                     [--selection-only] [--threads N]\n"
            "\n"
            "Times candidate plans per shape (all where at most %d distinct, else the model's\n"
            "top %d plus %d at random), then runs the model's choice and the fastest found\n"
            "head to head (alternately, medians) and reports the model's choice as a fraction\n"
            "of the fastest; then one static plan (the most often fastest) on every shape.\n"
            "Shapes: the BERT-base suite (M = 16T, T in 1..128) and N random shapes\n"
            "(m 1..2048, n and k 16..4096, log-uniform, fixed seed; default 100).\n"
            "  --quick           20 random shapes, shorter timing budget\n"
            "  --budget S        seconds of timing per shape after the first rounds (default 1.5)\n"
            "  --csv FILE        one row per shape\n"
            "  --selection-only  only the selection-cost measurement\n",
            ALL_IF_AT_MOST, TOP, RANDOM);
}

int main(int argc, char **argv)
{
    int nrandom = 100, bert = 1, sel_only = 0, threads = 0;
    double budget = 1.5;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            nrandom = 20;
            budget = 0.5;
        } else if (!strcmp(argv[i], "--random") && i + 1 < argc) {
            nrandom = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-bert")) {
            bert = 0;
        } else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
            budget = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv_path = argv[++i];
        } else if (!strcmp(argv[i], "--selection-only")) {
            sel_only = 1;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else {
            fprintf(stderr, "vortex-oracle: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (nrandom < 0 || nrandom > MAX_SHAPES - 28 || budget <= 0) {
        fprintf(stderr, "vortex-oracle: --random must be in 0..%d and --budget > 0\n", MAX_SHAPES - 28);
        return 2;
    }
    if (threads > 0)
        vx_set_num_threads(threads);
    threads = vx_get_num_threads();
    const int isa = vx_active_isa();
    if (isa < 0) {
        fprintf(stderr, "vortex-oracle: no AVX2/AVX-512 on this CPU\n");
        return 1;
    }
    static shape shapes[MAX_SHAPES];
    const int nshapes = build_suite(shapes, nrandom, bert);
    printf("vortex-oracle: %s, %d threads, ISA %s, %d shapes\n", bench_cpu_model(), threads,
           isa == VX_ISA_AVX512 ? "avx512" : "avx2", nshapes);
    selection_cost(shapes, nshapes, (vx_isa)isa, threads);
    if (sel_only)
        return 0;

    int64_t maxa = 1, maxb = 1, maxc = 1;
    for (int i = 0; i < nshapes; i++) {
        const shape *s = &shapes[i];
        maxa = s->m * s->k > maxa ? s->m * s->k : maxa;
        maxb = s->k * s->n > maxb ? s->k * s->n : maxb;
        maxc = s->m * s->n > maxc ? s->m * s->n : maxc;
    }
    buffers B = { malloc(sizeof(float) * (size_t)maxa), malloc(sizeof(float) * (size_t)maxb),
                  malloc(sizeof(float) * (size_t)maxc) };
    vx_priced_plan *ranked = malloc(sizeof *ranked * RANK_MAX);
    vx_gemm_plan *plans = malloc(sizeof *plans * (ALL_IF_AT_MOST + TOP + RANDOM));
    double *pred = malloc(sizeof *pred * (ALL_IF_AT_MOST + TOP + RANDOM));
    double *us = malloc(sizeof *us * (ALL_IF_AT_MOST + TOP + RANDOM + 3));
    outcome *res = calloc((size_t)nshapes, sizeof *res);
    if (!B.a || !B.b || !B.c || !ranked || !plans || !pred || !us || !res) {
        fprintf(stderr, "vortex-oracle: out of memory\n");
        return 1;
    }
    uint64_t fill = 42;
    for (int64_t i = 0; i < maxa; i++)
        B.a[i] = (float)unit(&fill) - 0.5f;
    for (int64_t i = 0; i < maxb; i++)
        B.b[i] = (float)unit(&fill) - 0.5f;

    printf("%-7s %5s %5s %5s %6s %5s %10s %10s %10s %10s %6s  %-44s %s\n", "suite", "m", "n", "k", "priced",
           "timed", "model_us", "(pred)", "best_us", "(pred)", "frac", "model plan", "fastest plan");
    uint64_t pick = 7;
    const double t_all = bench_now();
    for (int i = 0; i < nshapes; i++) {
        outcome *o = &res[i];
        o->s = shapes[i];
        /* pool_warm: the plans are timed back to back, so the workers spin
         * between calls and dyn_gemm plans with the warm region cost, as
         * the pool reads it now (threadpool.h, vx_pool_state) */
        const vx_gemm_shape gs = { .m = o->s.m, .n = o->s.n, .k = o->s.k,
                                   .b_unit_stride = 1, .a_unit_stride = 1, .pool_warm = vx_pool_state() | 1 };
        const int n = vx_gemm_rank(&gs, (vx_isa)isa, threads, ranked, RANK_MAX);
        const int have = n < RANK_MAX ? n : RANK_MAX;
        int np = 0;
        if (have <= ALL_IF_AT_MOST) {
            for (int j = 0; j < have; j++) {
                pred[np] = ranked[j].predicted_ns * 1e-3;
                plans[np++] = ranked[j].plan;
            }
        } else {
            for (int j = 0; j < TOP; j++) {
                pred[np] = ranked[j].predicted_ns * 1e-3;
                plans[np++] = ranked[j].plan;
            }
            /* RANDOM distinct picks from the rest (partial Fisher-Yates on indices) */
            int *idx = malloc(sizeof(int) * (size_t)(have - TOP));
            for (int j = 0; j < have - TOP; j++)
                idx[j] = TOP + j;
            for (int j = 0; j < RANDOM && j < have - TOP; j++) {
                const int r = j + (int)(splitmix64(&pick) % (uint64_t)(have - TOP - j));
                const int t = idx[j];
                idx[j] = idx[r];
                idx[r] = t;
                pred[np] = ranked[idx[j]].predicted_ns * 1e-3;
                plans[np++] = ranked[idx[j]].plan;
            }
            free(idx);
        }
        time_plans(&o->s, plans, np, &B, budget, us);
        int best = 0;
        for (int j = 1; j < np; j++)
            best = us[j] < us[best] ? j : best;
        o->priced = n;
        o->timed = np;
        o->model = plans[0];
        o->model_us = us[0];
        o->best = plans[best];
        o->best_us = us[best];
        if (best != 0) {
            /* settle it head to head; a model plan that wins the duel was
             * as good as the fastest */
            duel(&o->s, &o->model, &o->best, &B, &o->model_us, &o->best_us);
            if (o->best_us > o->model_us)
                o->best_us = o->model_us;
        }
        o->model_pred_us = pred[0];
        o->best_pred_us = pred[best];
        char d0[160], d1[160];
        vx_plan_describe(&o->model, d0, sizeof d0);
        vx_plan_describe(&o->best, d1, sizeof d1);
        printf("%-7s %5" PRId64 " %5" PRId64 " %5" PRId64 " %6d %5d %10.1f %10.1f %10.1f %10.1f %6.3f  %-44s %s\n",
               o->s.suite, o->s.m, o->s.n, o->s.k, n, np, o->model_us, o->model_pred_us, o->best_us, o->best_pred_us,
               o->best_us / o->model_us, d0, best ? d1 : "(same)");
        fflush(stdout);
    }

    /* The static plan: the fastest plan that won most often (compared as
     * the driver runs it, so blocks clipped to one shape still match). */
    int win = 0, win_count = 0;
    for (int i = 0; i < nshapes; i++) {
        int c = 0;
        for (int j = 0; j < nshapes; j++)
            c += vx_plan_same(&res[i].best, &res[j].best);
        if (c > win_count) {
            win_count = c;
            win = i;
        }
    }
    const vx_gemm_plan stat = res[win].best;
    char sd[160];
    vx_plan_describe(&stat, sd, sizeof sd);
    printf("\nstatic plan (fastest on %d of %d shapes): %s\n", win_count, nshapes, sd);
    for (int i = 0; i < nshapes; i++) {
        outcome *o = &res[i];
        vx_gemm_plan trio[3] = { stat, o->model, o->best };
        time_plans(&o->s, trio, 3, &B, budget / 3, us);
        /* best-of times, all three from this round robin: the static plan
         * against the fastest of the three */
        o->static_us = us[0];
        o->static_frac = fmin(us[0], fmin(us[1], us[2])) / us[0];
    }

    double lg_model = 0, lg_static = 0, worst = 2;
    int below80 = 0, worst_i = 0;
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv_path && !csv)
        fprintf(stderr, "vortex-oracle: cannot write %s\n", csv_path);
    if (csv)
        fprintf(csv, "suite,m,n,k,priced,timed,model_us,model_pred_us,best_us,best_pred_us,static_us,model_frac,"
                     "static_frac,model_plan,best_plan\n");
    for (int i = 0; i < nshapes; i++) {
        const outcome *o = &res[i];
        const double fm = o->best_us / o->model_us, fs = o->static_frac;
        lg_model += log(fm);
        lg_static += log(fs);
        below80 += fm < 0.8;
        if (fm < worst) {
            worst = fm;
            worst_i = i;
        }
        if (csv) {
            char d0[160], d1[160];
            vx_plan_describe(&o->model, d0, sizeof d0);
            vx_plan_describe(&o->best, d1, sizeof d1);
            fprintf(csv, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f,%.4f,%s,%s\n",
                    o->s.suite, o->s.m, o->s.n, o->s.k, o->priced, o->timed, o->model_us, o->model_pred_us, o->best_us,
                    o->best_pred_us, o->static_us, fm, fs, d0, d1);
        }
    }
    if (csv)
        fclose(csv);
    printf("\nmodel choice vs fastest found: geomean %.3f, min %.3f (%" PRId64 "x%" PRId64 "x%" PRId64
           "), %d of %d below 0.80\n",
           exp(lg_model / nshapes), worst, res[worst_i].s.m, res[worst_i].s.n, res[worst_i].s.k, below80, nshapes);
    printf("static plan vs fastest found:  geomean %.3f\n", exp(lg_static / nshapes));
    printf("(%.0f s)\n", bench_now() - t_all);
    free(B.a);
    free(B.b);
    free(B.c);
    free(ranked);
    free(plans);
    free(pred);
    free(us);
    free(res);
    return 0;
}
