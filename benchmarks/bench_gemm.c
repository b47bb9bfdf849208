/* vortex-bench-gemm: Vortex dyn_gemm against oneDNN (dnnl_sgemm, and the
 * matmul primitive with runtime dimensions) and MKL cblas_sgemm, each where
 * the build found it, fp32, row-major.
 *
 * Steady mode, per case: 64-byte aligned buffers, random data, one checked
 * call per library (Vortex must match the baselines within --tol relative
 * Frobenius), warm-up, then repetitions interleaved across libraries
 * (rotating which goes first), each repetition timing a batch of back-to-back
 * calls so that a sample lasts at least --min-sample-ms; the reported time is
 * the median of the per-call times.
 * Dynamic mode, per suite: the cases in a fresh shuffled order each pass,
 * every library called once per case and pass, each call timed alone; the
 * median over the passes. See --help and NOTES.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_common.h"

#include <vortex/vortex.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_DNNL
#include <dnnl.h>
#endif
#include "bench_dnnl.h"
#ifdef HAVE_MKL
#include <mkl.h>
#endif
#ifdef HAVE_TBB_ARENA
int vxb_tbb_arena_init(int threads);
void vxb_tbb_arena_run(void (*fn)(void *), void *arg);
int vxb_tbb_default_concurrency(void);
#endif

/* ---- libraries ---------------------------------------------------------- */

/* dnnl = dnnl_sgemm; dnnl_matmul = the matmul primitive created once per
 * transpose pair with runtime M, N, K (oneDNN's own dynamic-shape path). */
enum { L_VX, L_DNNL, L_MM, L_MKL, NLIB };
static const char *const lib_name[NLIB] = {"vortex", "dnnl", "dnnl_matmul", "mkl"};
static const int lib_built[NLIB] = {
    1,
#ifdef HAVE_DNNL
    1,
    1,
#else
    0,
    0,
#endif
#ifdef HAVE_MKL
    1,
#else
    0,
#endif
};
static int lib_on[NLIB];
static int dnnl_in_arena __attribute__((unused)); /* dnnl calls run in the TBB arena */

enum { MODE_STEADY, MODE_DYNAMIC };
static const char *const mode_name[2] = {"steady", "dynamic"};

/* ---- cases -------------------------------------------------------------- */

typedef struct {
    char suite[40];
    char name[48];
    int64_t m, n, k;
    char ta, tb; /* 'N' or 'T' */
    int64_t lda, ldb, ldc; /* leading dimensions; 0: tight (case_dims) */
} bcase;

typedef struct {
    bcase *v;
    int n, cap;
} case_list;

/* The tight leading dimensions of a case (A, B, C): what each stored
 * matrix's rows hold (at least 1, as cblas_sgemm wants). */
static void tight_lds(const bcase *c, int64_t ld[3])
{
    const int64_t acols = c->ta == 'N' ? c->k : c->m, bcols = c->tb == 'N' ? c->n : c->k;
    ld[0] = acols > 1 ? acols : 1;
    ld[1] = bcols > 1 ? bcols : 1;
    ld[2] = c->n > 1 ? c->n : 1;
}

static void add_case(case_list *l, const char *suite, const char *name, int64_t m, int64_t n,
                     int64_t k, char ta, char tb, const int64_t ld[3])
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    bcase *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->suite, sizeof c->suite, "%s", suite);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->m = m;
    c->n = n;
    c->k = k;
    c->ta = ta;
    c->tb = tb;
    if (ld) {
        c->lda = ld[0];
        c->ldb = ld[1];
        c->ldc = ld[2];
    }
}

/* Whether leading dimensions given for a case (0: tight) are at least the
 * tight ones; *why names the first that is not. */
static int lds_ok(int64_t m, int64_t n, int64_t k, char ta, char tb, const int64_t ld[3], const char **why)
{
    bcase c = {.m = m, .n = n, .k = k, .ta = ta, .tb = tb};
    int64_t t[3];
    tight_lds(&c, t);
    static const char *const names[3] = {"lda", "ldb", "ldc"};
    for (int i = 0; i < 3; i++)
        if (ld[i] != 0 && ld[i] < t[i]) {
            *why = names[i];
            return 0;
        }
    return 1;
}

/* A case name's suffix for its non-tight leading dimensions ("" for none). */
static void ld_suffix(const int64_t ld[3], char *buf, size_t len)
{
    buf[0] = 0;
    static const char *const names[3] = {"lda", "ldb", "ldc"};
    for (int i = 0; i < 3; i++)
        if (ld[i] > 0) {
            const size_t used = strlen(buf);
            snprintf(buf + used, len - used, "_%s%lld", names[i], (long long)ld[i]);
        }
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void suite_square(case_list *l)
{
    static const int sizes[] = {256, 512, 1000, 1024, 1537, 2048};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char name[48];
        snprintf(name, sizeof name, "sq%d", sizes[i]);
        add_case(l, "square", name, sizes[i], sizes[i], sizes[i], 'N', 'N', NULL);
    }
}

/* BERT-base dense layers, tokens M = 16 sequences * T, row-major NN. */
static void suite_bert(case_list *l)
{
    static const int T[] = {1, 5, 17, 31, 64, 100, 128};
    static const struct { int n, k; const char *what; } layer[] = {
        {2304, 768, "qkv"}, {768, 768, "attn_out"}, {3072, 768, "ffn_up"}, {768, 3072, "ffn_down"}};
    for (size_t t = 0; t < sizeof T / sizeof *T; t++)
        for (size_t j = 0; j < sizeof layer / sizeof *layer; j++) {
            char name[48];
            snprintf(name, sizeof name, "T%d_%s", T[t], layer[j].what);
            add_case(l, "bert", name, 16 * T[t], layer[j].n, layer[j].k, 'N', 'N', NULL);
        }
}

/* 50 shapes with m, n, k uniform in 1..32 from a fixed seed (stable across
 * platforms: own generator). */
static void suite_small(case_list *l)
{
    uint64_t s = 0x5EEDBA5Eull;
    for (int i = 0; i < 50; i++) {
        int64_t m = 1 + (int64_t)(splitmix64(&s) % 32);
        int64_t n = 1 + (int64_t)(splitmix64(&s) % 32);
        int64_t k = 1 + (int64_t)(splitmix64(&s) % 32);
        char name[48];
        snprintf(name, sizeof name, "s%02d", i);
        add_case(l, "small", name, m, n, k, 'N', 'N', NULL);
    }
}

/* Every transpose combination on a few shapes. */
static void suite_trans(case_list *l)
{
    static const int shp[][3] = {{512, 512, 512}, {100, 300, 77}, {512, 768, 768}};
    static const char *const modes[] = {"NN", "NT", "TN", "TT"};
    for (size_t i = 0; i < sizeof shp / sizeof *shp; i++)
        for (int t = 0; t < 4; t++) {
            char name[48];
            snprintf(name, sizeof name, "%s_%dx%dx%d", modes[t], shp[i][0], shp[i][1], shp[i][2]);
            add_case(l, "trans", name, shp[i][0], shp[i][1], shp[i][2], modes[t][0], modes[t][1], NULL);
        }
}

static int parse_mode(const char *s, char *ta, char *tb)
{
    if (strlen(s) != 2)
        return -1;
    char a = (char)toupper((unsigned char)s[0]), b = (char)toupper((unsigned char)s[1]);
    if ((a != 'N' && a != 'T') || (b != 'N' && b != 'T'))
        return -1;
    *ta = a;
    *tb = b;
    return 0;
}

static int g_quick_files; /* --quick: file suites keep their quick subset */

/* A suite file: one case per line, "M N K [MODE [NAME]]", '#' comments.
 * With --quick, only bench_quick_pick's subset of it. */
static int suite_file(case_list *l, const char *path)
{
    const int first = l->n;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char suite[40];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(suite, sizeof suite, "%s", base);
    char *dot = strrchr(suite, '.');
    if (dot)
        *dot = 0;
    char line[512];
    int lineno = 0, added = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        /* M N K, then MODE and NAME in that order, with lda=L, ldb=L,
         * ldc=L anywhere among them */
        long long dims[3];
        int ndims = 0, words = 0, bad = 0;
        int64_t ld[3] = {0, 0, 0};
        char mode[8] = "NN", name[96] = "";
        for (char *tok = strtok(line, " \t\r\n"); tok && !bad; tok = strtok(NULL, " \t\r\n")) {
            char *end;
            if (ndims < 3) {
                dims[ndims++] = strtoll(tok, &end, 10);
                bad = *end != 0 || dims[ndims - 1] < 0;
            } else if (!strncmp(tok, "ld", 2) && tok[2] && strchr("abc", tok[2]) && tok[3] == '=') {
                ld[tok[2] - 'a'] = strtoll(tok + 4, &end, 10);
                bad = *end != 0 || ld[tok[2] - 'a'] < 1;
            } else if (words == 0) {
                bad = strlen(tok) >= sizeof mode;
                snprintf(mode, sizeof mode, "%s", tok);
                words++;
            } else if (words == 1) {
                snprintf(name, 48, "%s", tok);
                words++;
            } else {
                bad = 1;
            }
        }
        if (ndims == 0 && !bad)
            continue;
        char ta, tb;
        const char *why = NULL;
        if (bad || ndims < 3 || parse_mode(mode, &ta, &tb) != 0) {
            fprintf(stderr, "%s:%d: expected 'M N K [NN|NT|TN|TT [NAME]]' (and optionally lda=L ldb=L ldc=L)\n",
                    path, lineno);
            fclose(f);
            exit(2);
        }
        const long long m = dims[0], n = dims[1], k = dims[2];
        if (!lds_ok(m, n, k, ta, tb, ld, &why)) {
            fprintf(stderr, "%s:%d: %s is smaller than the stored matrix's rows\n", path, lineno, why);
            fclose(f);
            exit(2);
        }
        if (!name[0]) {
            char suffix[80];
            ld_suffix(ld, suffix, sizeof suffix);
            snprintf(name, 48, "%s_%lldx%lldx%lld%s", mode, m, n, k, suffix);
        }
        add_case(l, suite, name, m, n, k, ta, tb, ld);
        added++;
    }
    fclose(f);
    if (!added) {
        fprintf(stderr, "%s: no cases\n", path);
        exit(2);
    }
    if (g_quick_files) {
        double *gf = malloc((size_t)added * sizeof *gf);
        unsigned char *keep = malloc((size_t)added);
        if (!gf || !keep) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        for (int i = 0; i < added; i++) {
            const bcase *c = &l->v[first + i];
            gf[i] = 2.0 * (double)c->m * (double)c->n * (double)c->k * 1e-9;
        }
        bench_quick_pick(gf, added, BENCH_QUICK_FILE_GFLOP, BENCH_QUICK_FILE_CASES, keep);
        int w = first;
        for (int i = 0; i < added; i++)
            if (keep[i])
                l->v[w++] = l->v[first + i];
        l->n = w;
        free(gf);
        free(keep);
    }
    return 0;
}

static int add_suite(case_list *l, const char *name)
{
    if (!strcmp(name, "square"))
        suite_square(l);
    else if (!strcmp(name, "bert"))
        suite_bert(l);
    else if (!strcmp(name, "small"))
        suite_small(l);
    else if (!strcmp(name, "trans"))
        suite_trans(l);
    else if (!strcmp(name, "all")) {
        suite_square(l);
        suite_bert(l);
        suite_small(l);
    } else if (suite_file(l, name) != 0)
        return -1;
    return 0;
}

/* ---- options ------------------------------------------------------------ */

typedef struct {
    int threads;          /* 0: Vortex's default */
    int quick;
    const char *csv;
    double max_seconds;   /* 0: no budget */
    int peak;
    double target_s;      /* measured time per library per case */
    int min_reps, max_reps;
    double min_sample_s;  /* batch calls until one sample lasts this long */
    double warmup_s;
    double gap_us;        /* idle time between samples of different libraries */
    double tol;
    float alpha, beta;
    uint64_t seed;
    int list;
    int modes;            /* bit MODE_STEADY / MODE_DYNAMIC */
    int passes;           /* dynamic: passes over the shuffled suite */
    double case_s;        /* steady: cap on one case's measured time */
} options;

static void usage(FILE *f)
{
    fprintf(f,
"usage: vortex-bench-gemm [options]\n"
"\n"
"Times Vortex dyn_gemm against oneDNN (dnnl_sgemm, and the matmul primitive\n"
"with runtime dimensions) and MKL cblas_sgemm (the ones this build found; see\n"
"the header it prints), fp32, row-major, C = alpha*op(A)*op(B) + beta*C with\n"
"alpha=1, beta=0 unless told. Every library runs with the same thread count.\n"
"\n"
"what to run (default: --suite square,bert,small):\n"
"  --suite LIST      comma list of suites:\n"
"                      square  M=N=K in 256 512 1000 1024 1537 2048 (6 cases)\n"
"                      bert    BERT-base dense layers, M=16*T for T in 1 5 17 31 64\n"
"                              100 128, (N,K) in (2304,768) qkv, (768,768) attn_out,\n"
"                              (3072,768) ffn_up, (768,3072) ffn_down; NN (28 cases)\n"
"                      small   50 shapes, m,n,k in 1..32, fixed seed (50 cases)\n"
"                      trans   NN/NT/TN/TT on 512^3, 100x300x77, 512x768x768 (12)\n"
"                      all     square,bert,small\n"
"                    or a file path: one case per line 'M N K [MODE [NAME]]',\n"
"                    with optional lda=L ldb=L ldc=L tokens after K (leading\n"
"                    dimensions, else tight); '#' starts a comment; the suite\n"
"                    is named after the file\n"
"  --shape M N K     one case (repeatable); MODE from the last --trans\n"
"  --trans MODE      NN, NT, TN or TT for the following --shape (default NN)\n"
"  --ld LDA LDB LDC  leading dimensions for the following --shape, row-major\n"
"                    (0: tight, the default): a case on views into wider\n"
"                    matrices, e.g. one attention head's columns of Q\n"
"  --libs LIST       libraries to time among vortex,dnnl,dnnl_matmul,mkl\n"
"                    (default: all found; vortex always runs). dnnl is\n"
"                    dnnl_sgemm; dnnl_matmul is the matmul primitive made once\n"
"                    per transpose pair with DNNL_RUNTIME_DIM_VAL for M, N, K\n"
"                    (creation never timed); each call binds memory objects\n"
"                    to the buffers (steady: once per case; dynamic: per call),\n"
"                    executes and waits. Only with alpha=1, beta=0\n"
"  --mode M          steady, dynamic or both (default both)\n"
"  --list            print the cases and exit\n"
"\n"
"how:\n"
"  --threads N       threads for every library (default: Vortex's default, i.e.\n"
"                    VORTEX_NUM_THREADS or the physical cores). Vortex:\n"
"                    vx_set_num_threads; oneDNN: TBB runtime -> calls run in a\n"
"                    tbb::task_arena(N) (OpenMP runtime -> OMP_NUM_THREADS);\n"
"                    MKL: mkl_set_num_threads\n"
"  --quick           less time per case: target 0.01 s per library, 1 ms\n"
"                    samples, 2 ms warm-up, 1000 us gap; still >= 5 repetitions;\n"
"                    a suite FILE keeps a deterministic subset: of its cases of\n"
"                    at most %.0f GFLOP, %d spread evenly over the file\n"
"  --target-seconds S  time per library per case (default 0.25; --quick 0.01)\n"
"  --min-reps N      minimum repetitions (default 5); --max-reps N (default 2000)\n"
"  --min-sample-ms T back-to-back calls per sample until a sample lasts T ms\n"
"                    (default 5, --quick 1; tiny shapes are timed as batch\n"
"                    time / calls)\n"
"  --gap-us U        idle time between samples of different libraries when\n"
"                    threads > 1, so one library's spinning workers do not eat\n"
"                    into the next one's time (default 2000, --quick 1000)\n"
"  --case-seconds S  steady: cap on one case's measured time (all libraries;\n"
"                    default 20, --quick 2); repetitions are cut to fit, down\n"
"                    to one (the giant cases then run once each)\n"
"  dynamic mode      per suite: the cases in a shuffled order (a fresh order\n"
"                    per pass, from --seed), every library called once per\n"
"                    case and pass, each call timed alone, as a server whose\n"
"                    shapes change from call to call sees them; reported: the\n"
"                    median over the passes. Buffers are shared by the suite's\n"
"                    cases (sized for the largest). Every library keeps what\n"
"                    it caches (Vortex its plan cache: hits from the second\n"
"                    pass on); the first pass's outputs are checked\n"
"  --passes N        dynamic: passes over the suite (default 5, --quick 3)\n"
"  --max-seconds S   stop cleanly (exit 0) once S seconds have been spent; the\n"
"                    cases not run are listed as skipped\n"
"  --alpha A --beta B  scalars (default 1 and 0)\n"
"  --tol T           max relative Frobenius error of Vortex vs each baseline\n"
"                    (default 1e-4); without a baseline, vs a double-precision\n"
"                    naive product when m*n*k <= 2^28\n"
"  --seed S          data seed (default 1)\n"
"\n"
"output:\n"
"  --peak            measure the fp32 FMA peak first (AVX-512 if present, else\n"
"                    AVX2, same thread count, best of 3 x 0.1 s; the loop of\n"
"                    vortex-fma-peak) and print Vortex's GFLOP/s\n"
"                    as %% of it\n"
"  --csv FILE        write one row per case and library:\n"
"                    suite,case,m,n,k,op,library,mode,threads,time_us,gflops,\n"
"                    speedup,batch,reps,rel_err,first_call_us\n"
"                    op = op(A)op(B) (NN...); mode = steady or dynamic;\n"
"                    time_us = median per-call time; speedup = this library's\n"
"                    time / Vortex's (>1: Vortex faster; 1 on Vortex rows);\n"
"                    batch = calls per sample; reps = repetitions (dynamic:\n"
"                    passes); rel_err = Vortex vs this library (0 on Vortex\n"
"                    rows); first_call_us = the very first call for the shape\n"
"  -h, --help        this text\n"
"\n"
"The table per case: shape, op, GFLOP/s per library, ratio = Vortex/baseline,\n"
"and per suite: geomean ratio, min ratio (with its shape), cases below 0.8x.\n"
"Exit status: 0 ok, 1 a library call failed, 2 bad usage or a Vortex MISMATCH.\n"
"\n"
"Environment: KMP_BLOCKTIME is set to 1 (ms) when unset, so MKL's OpenMP\n"
"workers stop spinning before the next library's sample; MKL_THREADING_LAYER\n"
"and VORTEX_NUM_THREADS are honoured.\n", BENCH_QUICK_FILE_GFLOP, BENCH_QUICK_FILE_CASES);
}

static int parse_libs(const char *s, int explicit_libs)
{
    int on[NLIB] = {1, 0, 0, 0};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int l = 0; l < NLIB; l++)
            if (!strcmp(t, lib_name[l])) {
                on[l] = 1;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "vortex-bench-gemm: unknown library '%s'\n", t);
            return -1;
        }
    }
    for (int l = 0; l < NLIB; l++) {
        if (on[l] && !lib_built[l] && explicit_libs)
            fprintf(stderr, "vortex-bench-gemm: %s was not found at build time; skipping it\n",
                    lib_name[l]);
        lib_on[l] = on[l] && lib_built[l];
    }
    return 0;
}

/* ---- buffers and calls -------------------------------------------------- */

static float *alloc_floats(int64_t count)
{
    size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "vortex-bench-gemm: cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static void fill_random(float *p, int64_t count, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < count; i++)
        p[i] = (float)((double)(splitmix64(&s) >> 40) * (2.0 / 16777216.0) - 1.0); /* [-1, 1) */
}

typedef struct {
    int lib;
    const bcase *c;
    const float *a, *b;
    float *cbuf;
    int64_t lda, ldb, ldc;
    float alpha, beta;
    long batch;
    int dynamic;      /* dnnl_matmul: bind memory objects inside every call */
    int failed;       /* a call returned an error */
    char err[256];
#ifdef HAVE_DNNL
    dnnl_memory_t mem[3]; /* dnnl_matmul steady: A, B, C bound once per case */
#endif
} call_ctx;

#ifdef HAVE_DNNL /* only the oneDNN calls report failures this way */
static void call_failed(call_ctx *x, const char *fmt, const char *what, int code)
{
    if (x->failed)
        return;
    x->failed = 1;
    snprintf(x->err, sizeof x->err, fmt, what, code);
}
#endif

/* ---- oneDNN matmul with runtime dimensions ------------------------------ */

#ifdef HAVE_DNNL
static dnnl_engine_t g_eng;
static dnnl_stream_t g_stream;
static dnnl_primitive_t g_matmul[2][2]; /* [transa][transb], made on first use */

/* A 2-D f32 descriptor: dims rows x cols of the logical operand; 'ba' is its
 * transpose stored row-major (the leading dimension is then rows). */
static dnnl_status_t matmul_md(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int trans)
{
    dnnl_dims_t d = {rows, cols};
    return dnnl_memory_desc_create_with_tag(md, 2, d, dnnl_f32, trans ? dnnl_ba : dnnl_ab);
}

/* The primitive for one transpose pair, M, N and K left to run time. */
static dnnl_status_t matmul_prepare(char ta, char tb)
{
    dnnl_primitive_t *p = &g_matmul[ta == 'T'][tb == 'T'];
    if (*p)
        return dnnl_success;
    const int64_t rt = DNNL_RUNTIME_DIM_VAL;
    dnnl_memory_desc_t a = NULL, b = NULL, c = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = matmul_md(&a, rt, rt, ta == 'T');
    if (st == dnnl_success)
        st = matmul_md(&b, rt, rt, tb == 'T');
    if (st == dnnl_success)
        st = matmul_md(&c, rt, rt, 0);
    if (st == dnnl_success)
        st = dnnl_matmul_primitive_desc_create(&pd, g_eng, a, b, NULL, c, NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_create(p, pd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_desc_destroy(a);
    dnnl_memory_desc_destroy(b);
    dnnl_memory_desc_destroy(c);
    return st;
}

static void matmul_unbind(call_ctx *x)
{
    for (int i = 0; i < 3; i++) {
        dnnl_memory_destroy(x->mem[i]);
        x->mem[i] = NULL;
    }
}

/* Memory objects over the caller's buffers at this call's shape: what a
 * caller of a runtime-dimension primitive does for every new shape. The
 * runner's leading dimensions are the tight ones the tags imply. */
static dnnl_status_t matmul_bind(call_ctx *x)
{
    const bcase *c = x->c;
    dnnl_memory_desc_t md[3] = {NULL, NULL, NULL};
    dnnl_status_t st = matmul_md(&md[0], c->m, c->k, c->ta == 'T');
    if (st == dnnl_success)
        st = matmul_md(&md[1], c->k, c->n, c->tb == 'T');
    if (st == dnnl_success)
        st = matmul_md(&md[2], c->m, c->n, 0);
    void *ptr[3] = {(void *)x->a, (void *)x->b, x->cbuf};
    for (int i = 0; i < 3 && st == dnnl_success; i++)
        st = dnnl_memory_create(&x->mem[i], md[i], g_eng, ptr[i]);
    for (int i = 0; i < 3; i++)
        dnnl_memory_desc_destroy(md[i]);
    if (st != dnnl_success)
        matmul_unbind(x);
    return st;
}

static void matmul_calls(call_ctx *x)
{
    dnnl_primitive_t prim = g_matmul[x->c->ta == 'T'][x->c->tb == 'T'];
    for (long i = 0; i < x->batch; i++) {
        dnnl_status_t st = dnnl_success;
        if (x->dynamic || !x->mem[0])
            st = matmul_bind(x);
        if (st != dnnl_success) {
            call_failed(x, "%s: status %d", "dnnl_memory_create", (int)st);
            return;
        }
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, x->mem[0]}, {DNNL_ARG_WEIGHTS, x->mem[1]},
                                   {DNNL_ARG_DST, x->mem[2]}};
        st = dnnl_primitive_execute(prim, g_stream, 3, args);
        if (st == dnnl_success)
            st = dnnl_stream_wait(g_stream);
        if (st != dnnl_success)
            call_failed(x, "%s: status %d", "dnnl matmul execute", (int)st);
        if (x->dynamic)
            matmul_unbind(x);
    }
}
#endif

static void run_batch(void *p)
{
    call_ctx *x = p;
    const bcase *c = x->c;
    switch (x->lib) {
    case L_VX: {
        vx_transpose ta = c->ta == 'T' ? VX_TRANS : VX_NO_TRANS;
        vx_transpose tb = c->tb == 'T' ? VX_TRANS : VX_NO_TRANS;
        for (long i = 0; i < x->batch; i++) {
            vx_status s = dyn_gemm(VX_ROW_MAJOR, ta, tb, c->m, c->n, c->k, x->alpha, x->a, x->lda,
                                   x->b, x->ldb, x->beta, x->cbuf, x->ldc);
            if (s != VX_OK && !x->failed) {
                x->failed = 1;
                snprintf(x->err, sizeof x->err, "dyn_gemm: %s: %s", vx_status_string(s),
                         vx_last_error());
            }
        }
        break;
    }
#ifdef HAVE_DNNL
    case L_DNNL:
        for (long i = 0; i < x->batch; i++) {
            dnnl_status_t s = dnnl_sgemm(c->ta, c->tb, c->m, c->n, c->k, x->alpha, x->a, x->lda,
                                         x->b, x->ldb, x->beta, x->cbuf, x->ldc);
            if (s != dnnl_success)
                call_failed(x, "%s: status %d", "dnnl_sgemm", (int)s);
        }
        break;
    case L_MM:
        matmul_calls(x);
        break;
#endif
#ifdef HAVE_MKL
    case L_MKL: {
        CBLAS_TRANSPOSE ta = c->ta == 'T' ? CblasTrans : CblasNoTrans;
        CBLAS_TRANSPOSE tb = c->tb == 'T' ? CblasTrans : CblasNoTrans;
        for (long i = 0; i < x->batch; i++)
            cblas_sgemm(CblasRowMajor, ta, tb, (MKL_INT)c->m, (MKL_INT)c->n, (MKL_INT)c->k,
                        x->alpha, x->a, (MKL_INT)x->lda, x->b, (MKL_INT)x->ldb, x->beta, x->cbuf,
                        (MKL_INT)x->ldc);
        break;
    }
#endif
    default:
        break;
    }
}

/* Wall time of one batch (x->batch calls). */
static double timed_batch(call_ctx *x)
{
    double t0 = bench_now();
#ifdef HAVE_TBB_ARENA
    if ((x->lib == L_DNNL || x->lib == L_MM) && dnnl_in_arena)
        vxb_tbb_arena_run(run_batch, x);
    else
#endif
        run_batch(x);
    return bench_now() - t0;
}

/* ||x - ref||_F / ||ref||_F over an m x n row-major matrix. */
static double rel_frobenius(const float *x, const float *ref, int64_t m, int64_t n, int64_t ld)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double r = ref[i * ld + j], d = (double)x[i * ld + j] - r;
            num += d * d;
            den += r * r;
        }
    if (den == 0)
        return num == 0 ? 0 : INFINITY;
    return sqrt(num / den);
}

static void naive_gemm(const bcase *c, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, const float *c0, float *out, int64_t ldc)
{
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0;
            for (int64_t p = 0; p < c->k; p++) {
                double av = c->ta == 'N' ? a[i * lda + p] : a[p * lda + i];
                double bv = c->tb == 'N' ? b[p * ldb + j] : b[j * ldb + p];
                s += av * bv;
            }
            double r = alpha * s;
            if (beta != 0)
                r += (double)beta * c0[i * ldc + j];
            out[i * ldc + j] = (float)r;
        }
}

static void sleep_us(double us)
{
    if (us <= 0)
        return;
    struct timespec ts = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- one case ----------------------------------------------------------- */

typedef struct {
    int ran;              /* measured (else skipped by the budget) */
    int partial;          /* cut short by the budget */
    double time_s[NLIB];  /* median per-call seconds */
    double first_s[NLIB]; /* first call */
    double gflops[NLIB];
    double relerr[NLIB];  /* Vortex vs this library (vs naive in [L_VX]) */
    long batch[NLIB];
    int reps;             /* steady: repetitions; dynamic: passes */
    int capped;           /* steady: repetitions cut by --case-seconds */
    int verified;         /* 1 checked, 0 no reference */
    int mismatch;
    int failed;
} result;

static double g_deadline; /* 0: none */

static int over_budget(void)
{
    return g_deadline > 0 && bench_now() > g_deadline;
}

/* Leading dimensions (ld[0..2] for A, B, C: the case's, else tight) and
 * element counts of a case. */
static void case_dims(const bcase *c, int64_t *asz, int64_t *bsz, int64_t *csz, int64_t ld[3])
{
    tight_lds(c, ld);
    if (c->lda > 0)
        ld[0] = c->lda;
    if (c->ldb > 0)
        ld[1] = c->ldb;
    if (c->ldc > 0)
        ld[2] = c->ldc;
    *asz = (c->ta == 'N' ? c->m : c->k) * ld[0];
    *bsz = (c->tb == 'N' ? c->k : c->n) * ld[1];
    *csz = c->m * ld[2];
}

static void run_case(const bcase *c, const options *o, int threads, uint64_t seed, result *r)
{
    memset(r, 0, sizeof *r);
    int64_t asz, bsz, csz, ld[3];
    case_dims(c, &asz, &bsz, &csz, ld);
    const int64_t lda = ld[0], ldb = ld[1], ldc = ld[2];
    float *a = alloc_floats(asz), *b = alloc_floats(bsz);
    float *c0 = alloc_floats(csz);
    float *cb[NLIB] = {0};
    fill_random(a, asz, seed * 3 + 1);
    fill_random(b, bsz, seed * 3 + 2);
    if (o->beta != 0)
        fill_random(c0, csz, seed * 3 + 3);
    else
        memset(c0, 0, (size_t)csz * sizeof(float));

    call_ctx ctx[NLIB];
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        cb[l] = alloc_floats(csz);
        memcpy(cb[l], c0, (size_t)csz * sizeof(float));
        ctx[l] = (call_ctx){.lib = l, .c = c, .a = a, .b = b, .cbuf = cb[l], .lda = lda,
                            .ldb = ldb, .ldc = ldc, .alpha = o->alpha, .beta = o->beta,
                            .batch = 1};
    }

    /* 1. One call each on identical C: first-call time and the check. */
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
#ifdef HAVE_DNNL
        ctx[l].mem[0] = ctx[l].mem[1] = ctx[l].mem[2] = NULL;
        if (l == L_MM) {
            dnnl_status_t st = matmul_prepare(c->ta, c->tb);
            if (st != dnnl_success)
                call_failed(&ctx[l], "%s: status %d", "dnnl matmul primitive creation", (int)st);
        }
#endif
        r->first_s[l] = timed_batch(&ctx[l]);
        if (ctx[l].failed) {
            printf("  ERROR %s %s: %s\n", c->suite, c->name, ctx[l].err);
            r->failed = 1;
        }
    }
    int nbase = 0;
    for (int l = L_VX + 1; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        nbase++;
        r->relerr[l] = rel_frobenius(cb[L_VX], cb[l], c->m, c->n, ldc);
        r->verified = 1;
        if (!(r->relerr[l] <= o->tol))
            r->mismatch = 1;
    }
    if (nbase == 0 && (double)c->m * c->n * c->k <= 268435456.0) {
        float *ref = alloc_floats(csz);
        naive_gemm(c, o->alpha, a, lda, b, ldb, o->beta, c0, ref, ldc);
        r->relerr[L_VX] = rel_frobenius(cb[L_VX], ref, c->m, c->n, ldc);
        r->verified = 1;
        if (!(r->relerr[L_VX] <= o->tol))
            r->mismatch = 1;
        free(ref);
    }
    if (r->mismatch) {
        printf("\n  !!!!!!!! MISMATCH !!!!!!!! %s %s: %" PRId64 "x%" PRId64 "x%" PRId64
               " %c%c, Vortex rel. Frobenius error",
               c->suite, c->name, c->m, c->n, c->k, c->ta, c->tb);
        for (int l = 0; l < NLIB; l++)
            if (lib_on[l] && (l != L_VX || nbase == 0))
                printf(" vs %s %.3g", l == L_VX ? "naive" : lib_name[l], r->relerr[l]);
        printf(" (tol %.1g)\n\n", o->tol);
    }

    /* 2. Warm-up: estimate the single-call time of each library. */
    double est[NLIB] = {0};
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        double t0 = bench_now(), best = INFINITY;
        int calls = 0;
        do {
            double t = timed_batch(&ctx[l]);
            if (t < best)
                best = t;
            calls++;
        } while (!over_budget() &&
                 (calls < (r->first_s[l] >= o->target_s ? 1 : 2) ||
                  (bench_now() - t0 < o->warmup_s && calls < 100000)));
        est[l] = best > 1e-9 ? best : 1e-9;
        long bt = est[l] >= o->min_sample_s ? 1 : (long)ceil(o->min_sample_s / est[l]);
        r->batch[l] = bt < 1 ? 1 : (bt > 1000000 ? 1000000 : bt);
        ctx[l].batch = r->batch[l];
    }

    /* 3. Repetitions, interleaved; rotation removes any fixed-order bias. */
    double longest = 0, per_rep = 0;
    int on[NLIB], non = 0;
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l]) {
            on[non++] = l;
            double s = est[l] * (double)r->batch[l];
            per_rep += s;
            if (s > longest)
                longest = s;
        }
    int reps = (int)ceil(o->target_s / (longest > 0 ? longest : 1e-9));
    if (reps < o->min_reps)
        reps = o->min_reps;
    if (reps > o->max_reps)
        reps = o->max_reps;
    if (o->case_s > 0 && reps * per_rep > o->case_s) {
        int cap = (int)floor(o->case_s / per_rep);
        reps = cap < 1 ? 1 : cap;
        r->capped = 1;
    }
    double *samples = calloc((size_t)reps * NLIB, sizeof *samples);
    const double gap = (threads > 1 && non > 1) ? o->gap_us : 0;
    int done = 0;
    for (int rep = 0; rep < reps; rep++) {
        for (int j = 0; j < non; j++) {
            int l = on[(rep + j) % non];
            if (gap > 0)
                sleep_us(gap);
            samples[(size_t)l * reps + rep] = timed_batch(&ctx[l]) / (double)ctx[l].batch;
        }
        done = rep + 1;
        if (over_budget() && rep + 1 < reps) {
            r->partial = 1;
            break;
        }
    }
    r->reps = done;
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        if (ctx[l].failed && !r->failed) {
            printf("  ERROR %s %s: %s\n", c->suite, c->name, ctx[l].err);
            r->failed = 1;
        }
        double *s = samples + (size_t)l * reps;
        r->time_s[l] = bench_median(s, done);
        r->gflops[l] = 2.0 * (double)c->m * (double)c->n * (double)c->k / r->time_s[l] * 1e-9;
    }
    r->ran = 1;
    free(samples);
#ifdef HAVE_DNNL
    if (lib_on[L_MM])
        matmul_unbind(&ctx[L_MM]);
#endif
    for (int l = 0; l < NLIB; l++)
        free(cb[l]);
    free(a);
    free(b);
    free(c0);
}

/* ---- dynamic mode: one suite ------------------------------------------- */

/* The suite's cases in a fresh shuffled order per pass, each library called
 * once per case and pass (rotating which goes first), each call timed alone:
 * what a server whose shapes change every call pays, setup included. */
static void dynamic_suite(const bcase *cs, int ncase, const options *o, int threads, uint64_t seed,
                          result *res)
{
    int64_t amax = 1, bmax = 1, cmax = 1;
    for (int i = 0; i < ncase; i++) {
        int64_t asz, bsz, csz, ld[3];
        case_dims(&cs[i], &asz, &bsz, &csz, ld);
        amax = asz > amax ? asz : amax;
        bmax = bsz > bmax ? bsz : bmax;
        cmax = csz > cmax ? csz : cmax;
    }
    float *a = alloc_floats(amax), *b = alloc_floats(bmax), *cb[NLIB] = {0};
    fill_random(a, amax, seed * 3 + 1);
    fill_random(b, bmax, seed * 3 + 2);
    int on[NLIB], non = 0;
    for (int l = 0; l < NLIB; l++)
        if (lib_on[l]) {
            on[non++] = l;
            cb[l] = alloc_floats(cmax);
            fill_random(cb[l], cmax, seed * 3 + 3); /* beta != 0 reads it */
        }
    const int passes = o->passes;
    double *samples = calloc((size_t)ncase * NLIB * (size_t)passes, sizeof *samples);
    int *order = malloc((size_t)ncase * sizeof *order);
    uint64_t rng = seed ^ 0xD1CEull;
    const double gap = (threads > 1 && non > 1) ? o->gap_us : 0;
    int done = 0;
    for (int i = 0; i < ncase; i++)
        memset(&res[i], 0, sizeof res[i]);
#ifdef HAVE_DNNL
    for (int i = 0; i < ncase && lib_on[L_MM]; i++)
        if (matmul_prepare(cs[i].ta, cs[i].tb) != dnnl_success) {
            printf("  ERROR %s: cannot create the dnnl matmul primitive (%c%c)\n", cs[i].suite,
                   cs[i].ta, cs[i].tb);
            res[i].failed = 1;
        }
#endif
    for (int pass = 0; pass < passes; pass++) {
        for (int i = 0; i < ncase; i++)
            order[i] = i;
        for (int i = ncase - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)(splitmix64(&rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int q = 0; q < ncase; q++) {
            const int i = order[q];
            const bcase *c = &cs[i];
            int64_t asz, bsz, csz, ld[3];
            case_dims(c, &asz, &bsz, &csz, ld);
            for (int j = 0; j < non; j++) {
                int l = on[(pass + q + j) % non];
                call_ctx x = {.lib = l, .c = c, .a = a, .b = b, .cbuf = cb[l], .lda = ld[0],
                              .ldb = ld[1], .ldc = ld[2], .alpha = o->alpha, .beta = o->beta,
                              .batch = 1, .dynamic = 1};
                if (gap > 0)
                    sleep_us(gap);
                double t = timed_batch(&x);
                samples[((size_t)i * NLIB + l) * passes + pass] = t;
                if (x.failed && !res[i].failed) {
                    printf("  ERROR %s %s dynamic: %s\n", c->suite, c->name, x.err);
                    res[i].failed = 1;
                }
            }
            if (pass == 0 && o->beta == 0) { /* outputs of this case, before the next */
                for (int l = L_VX + 1; l < NLIB; l++)
                    if (lib_on[l]) {
                        res[i].relerr[l] = rel_frobenius(cb[L_VX], cb[l], c->m, c->n, ld[2]);
                        res[i].verified = 1;
                        if (!(res[i].relerr[l] <= o->tol))
                            res[i].mismatch = 1;
                    }
            }
        }
        done = pass + 1;
        if (over_budget())
            break;
    }
    for (int i = 0; i < ncase; i++) {
        result *r = &res[i];
        const bcase *c = &cs[i];
        r->ran = 1;
        r->reps = done;
        r->partial = done < passes;
        for (int l = 0; l < NLIB; l++) {
            if (!lib_on[l])
                continue;
            double *sm = samples + ((size_t)i * NLIB + l) * passes;
            r->first_s[l] = sm[0];
            r->batch[l] = 1;
            r->time_s[l] = bench_median(sm, done);
            r->gflops[l] = 2.0 * (double)c->m * (double)c->n * (double)c->k / r->time_s[l] * 1e-9;
        }
    }
    free(order);
    free(samples);
    for (int l = 0; l < NLIB; l++)
        free(cb[l]);
    free(a);
    free(b);
}

/* ---- reporting ---------------------------------------------------------- */

static void print_header(const char *suite, int mode, int peak)
{
    printf("\n== suite %s, %s ==\n", suite, mode_name[mode]);
    printf("%-20s %-16s %-2s %10s", "case", "MxNxK", "op", "vortex");
    for (int l = L_VX + 1; l < NLIB; l++)
        if (lib_on[l])
            printf(" %9s %7s", lib_name[l], "ratio");
    if (peak)
        printf(" %6s", "%peak");
    printf(" %9s %6s\n", "rel_err", "reps");
    printf("%-20s %-16s %-2s %10s", "", "", "", "GFLOP/s");
    for (int l = L_VX + 1; l < NLIB; l++)
        if (lib_on[l])
            printf(" %9s %7s", "GFLOP/s", "vx/base");
    if (peak)
        printf(" %6s", "");
    printf("\n");
}

static void print_row(const bcase *c, const result *r, double peak)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64 "x%" PRId64, c->m, c->n, c->k);
    printf("%-20s %-16s %c%c %10.2f", c->name, shape, c->ta, c->tb, r->gflops[L_VX]);
    double err = r->relerr[L_VX];
    for (int l = L_VX + 1; l < NLIB; l++)
        if (lib_on[l]) {
            double ratio = r->gflops[L_VX] / r->gflops[l];
            printf(" %9.2f %6.2fx", r->gflops[l], ratio);
            if (r->relerr[l] > err)
                err = r->relerr[l];
        }
    if (peak > 0)
        printf(" %5.1f%%", 100.0 * r->gflops[L_VX] / peak);
    if (r->verified)
        printf(" %9.2g", err);
    else
        printf(" %9s", "unchecked");
    printf(" %6d%s%s%s\n", r->reps, r->partial ? " (cut by budget)" : "",
           r->capped ? " (capped)" : "", r->mismatch ? "  <-- MISMATCH" : "");
    fflush(stdout);
}

static void print_summary(const char *suite, int mode, const bcase *cases, const result *res,
                          int from, int to)
{
    int ran = 0, skipped = 0;
    for (int i = from; i < to; i++)
        res[i].ran ? ran++ : skipped++;
    printf("-- %s, %s: %d case%s run", suite, mode_name[mode], ran, ran == 1 ? "" : "s");
    if (skipped)
        printf(", %d skipped (budget)", skipped);
    printf("\n");
    for (int l = L_VX + 1; l < NLIB; l++) {
        if (!lib_on[l] || ran == 0)
            continue;
        double logsum = 0, minr = INFINITY, maxr = 0;
        int below = 0, cnt = 0, imin = -1, imax = -1;
        for (int i = from; i < to; i++) {
            if (!res[i].ran || !(res[i].gflops[l] > 0))
                continue;
            double ratio = res[i].gflops[L_VX] / res[i].gflops[l];
            logsum += log(ratio);
            cnt++;
            if (ratio < minr) {
                minr = ratio;
                imin = i;
            }
            if (ratio > maxr) {
                maxr = ratio;
                imax = i;
            }
            if (ratio < 0.8)
                below++;
        }
        if (!cnt)
            continue;
        printf("   vs %-11s geomean %.3fx | min %.3fx (%s %" PRId64 "x%" PRId64 "x%" PRId64
               " %c%c) | max %.3fx (%s) | below 0.8x: %d/%d\n",
               lib_name[l], exp(logsum / cnt), minr, cases[imin].name, cases[imin].m,
               cases[imin].n, cases[imin].k, cases[imin].ta, cases[imin].tb, maxr,
               cases[imax].name, below, cnt);
    }
}

static void csv_rows(FILE *f, const bcase *c, const result *r, int threads, int mode)
{
    for (int l = 0; l < NLIB; l++) {
        if (!lib_on[l])
            continue;
        double speedup = r->time_s[l] / r->time_s[L_VX];
        double err = l == L_VX ? 0 : r->relerr[l];
        fprintf(f, "%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%c%c,%s,%s,%d,%.4f,%.3f,%.4f,%ld,%d,"
                   "%.3g,%.2f\n",
                c->suite, c->name, c->m, c->n, c->k, c->ta, c->tb, lib_name[l], mode_name[mode],
                threads, r->time_s[l] * 1e6, r->gflops[l], speedup, r->batch[l], r->reps, err,
                r->first_s[l] * 1e6);
    }
    fflush(f);
}

/* ---- thread setup and the machine header -------------------------------- */

__attribute__((unused)) static char dnnl_thread_note[160] = "";

/* Must run before the first call into any baseline. */
static void setup_threads(int threads)
{
    vx_set_num_threads(threads);
#ifdef HAVE_DNNL
    if (lib_on[L_DNNL]) {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
        char v[16];
        snprintf(v, sizeof v, "%d", threads);
        setenv("OMP_NUM_THREADS", v, 1);
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note, "OMP_NUM_THREADS=%d", threads);
#elif DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_TBB
#ifdef HAVE_TBB_ARENA
        int got = vxb_tbb_arena_init(threads);
        dnnl_in_arena = 1;
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "calls run in tbb::task_arena(%d) (max_concurrency %d)", threads, got);
#else
        int cores[CPU_SETSIZE];
        int nc = bench_physical_cores(cores, CPU_SETSIZE);
        if (threads < nc) {
            bench_restrict_affinity(threads);
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                     "no TBB headers at build time: process pinned to %d cores for every "
                     "library", threads);
        } else {
            snprintf(dnnl_thread_note, sizeof dnnl_thread_note, "TBB default (all %d cores)", nc);
        }
#endif
#elif DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_SEQ
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "sequential build: always 1 thread (ratios with --threads > 1 are unfair)");
#else
        snprintf(dnnl_thread_note, sizeof dnnl_thread_note,
                 "thread count of this runtime cannot be set here");
#endif
    }
#endif
#ifdef HAVE_MKL
    if (lib_on[L_MKL])
        mkl_set_num_threads(threads);
#endif
}

static void print_machine(int threads, const options *o, double peak, const char *peak_isa)
{
    int cores[CPU_SETSIZE], usable[CPU_SETSIZE];
    int nc = bench_physical_cores(cores, CPU_SETSIZE), nu = bench_usable_cpus(usable, CPU_SETSIZE);
    printf("cpu:      %s (%d physical cores, %d usable CPUs; avx512f %s, avx2 %s)\n",
           bench_cpu_model(), nc, nu, bench_isa_supported(BENCH_ISA_AVX512) ? "yes" : "no",
           bench_isa_supported(BENCH_ISA_AVX2) ? "yes" : "no");
    printf("threads:  %d for every library%s\n", threads,
           o->threads ? " (--threads)" : " (Vortex's default)");
    printf("vortex:   %d.%d.%d, vx_get_num_threads()=%d\n", VORTEX_VERSION_MAJOR,
           VORTEX_VERSION_MINOR, VORTEX_VERSION_PATCH, vx_get_num_threads());
#ifdef HAVE_DNNL
    {
        const dnnl_version_t *v = dnnl_version();
        printf("dnnl:     oneDNN %d.%d.%d (%s), CPU threading runtime %s; %s%s\n", v->major,
               v->minor, v->patch, v->hash ? v->hash : "?",
               bench_dnnl_runtime_name(DNNL_CPU_THREADING_RUNTIME), dnnl_thread_note,
               lib_on[L_DNNL] ? "" : " [not timed: --libs]");
        printf("          dnnl = dnnl_sgemm; dnnl_matmul = matmul primitive, runtime M/N/K, "
               "%s%s\n", dnnl_runtime_note, lib_on[L_MM] ? "" : " [not timed]");
    }
#else
    printf("dnnl:     not found at build time (baseline skipped)\n");
#endif
#ifdef HAVE_MKL
    {
        char buf[256];
        mkl_get_version_string(buf, (int)sizeof buf);
        const char *layer = getenv("MKL_THREADING_LAYER");
        printf("mkl:      %s; mkl_set_num_threads(%d), mkl_get_max_threads()=%d, threading "
               "layer %s, KMP_BLOCKTIME=%s%s\n",
               buf, threads, mkl_get_max_threads(), layer ? layer : "INTEL (default)",
               getenv("KMP_BLOCKTIME") ? getenv("KMP_BLOCKTIME") : "unset",
               lib_on[L_MKL] ? "" : " [not timed: --libs]");
    }
#else
    printf("mkl:      not found at build time (baseline skipped)\n");
#endif
    if (peak > 0)
        printf("peak:     %.1f GFLOP/s fp32 (%s FMA loop, %d threads, best of 3)\n", peak,
               peak_isa, threads);
    printf("timing:   median per-call time; libraries interleaved per repetition (rotating);\n"
           "          steady: target %.3g s per library per case, reps %d..%d (case cap %.3g s,\n"
           "          down to 1 rep), samples >= %.3g ms; dynamic: %d shuffled passes, one call\n"
           "          per case per pass; gap %.0f us between libraries (threads > 1);\n"
           "          alpha %g beta %g; modes:%s%s\n",
           o->target_s, o->min_reps, o->max_reps, o->case_s, o->min_sample_s * 1e3, o->passes,
           o->gap_us, (double)o->alpha, (double)o->beta,
           (o->modes & (1 << MODE_STEADY)) ? " steady" : "",
           (o->modes & (1 << MODE_DYNAMIC)) ? " dynamic" : "");
}

/* ---- main --------------------------------------------------------------- */

static int need(int i, int argc, int count, const char *opt)
{
    if (i + count >= argc) {
        fprintf(stderr, "vortex-bench-gemm: %s needs %d argument%s\n", opt, count,
                count > 1 ? "s" : "");
        exit(2);
    }
    return 1;
}

static double num(const char *s, const char *opt)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) {
        fprintf(stderr, "vortex-bench-gemm: %s: not a number: '%s'\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const double t_start = bench_now();
    options o = {.threads = 0, .target_s = -1, .min_reps = 5, .max_reps = 2000,
                 .min_sample_s = -1, .warmup_s = -1, .gap_us = -1, .tol = 1e-4,
                 .alpha = 1.0f, .beta = 0.0f, .seed = 1,
                 .modes = (1 << MODE_STEADY) | (1 << MODE_DYNAMIC), .passes = -1, .case_s = -1};
    case_list cases = {0};
    char suites_arg[1024] = "";
    const char *libs_arg = "vortex,dnnl,dnnl_matmul,mkl";
    int explicit_libs = 0;
    char ta = 'N', tb = 'N';
    int64_t shape_ld[3] = {0, 0, 0}; /* --ld for the following --shape: A, B, C (0: tight) */
    int have_shapes = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--suite") && need(i, argc, 1, a)) {
            if (suites_arg[0])
                strncat(suites_arg, ",", sizeof suites_arg - strlen(suites_arg) - 1);
            strncat(suites_arg, argv[++i], sizeof suites_arg - strlen(suites_arg) - 1);
        } else if (!strcmp(a, "--shape") && need(i, argc, 3, a)) {
            double m = num(argv[i + 1], a), n = num(argv[i + 2], a), k = num(argv[i + 3], a);
            i += 3;
            if (m < 0 || n < 0 || k < 0 || m != floor(m) || n != floor(n) || k != floor(k)) {
                fprintf(stderr, "vortex-bench-gemm: --shape needs integers >= 0\n");
                return 2;
            }
            const char *why = NULL;
            if (!lds_ok((int64_t)m, (int64_t)n, (int64_t)k, ta, tb, shape_ld, &why)) {
                fprintf(stderr, "vortex-bench-gemm: --ld: %s is smaller than the stored matrix's rows for "
                                "--shape %.0f %.0f %.0f\n", why, m, n, k);
                return 2;
            }
            char name[48], suffix[80];
            ld_suffix(shape_ld, suffix, sizeof suffix);
            snprintf(name, sizeof name, "%c%c_%.0fx%.0fx%.0f%s", ta, tb, m, n, k, suffix);
            add_case(&cases, "shape", name, (int64_t)m, (int64_t)n, (int64_t)k, ta, tb, shape_ld);
            have_shapes = 1;
        } else if (!strcmp(a, "--ld") && need(i, argc, 3, a)) {
            for (int j = 0; j < 3; j++) {
                const double v = num(argv[i + 1 + j], a);
                if (v < 0 || v != floor(v)) {
                    fprintf(stderr, "vortex-bench-gemm: --ld needs three integers >= 0 (0: tight)\n");
                    return 2;
                }
                shape_ld[j] = (int64_t)v;
            }
            i += 3;
        } else if (!strcmp(a, "--trans") && need(i, argc, 1, a)) {
            if (parse_mode(argv[++i], &ta, &tb) != 0) {
                fprintf(stderr, "vortex-bench-gemm: --trans takes NN, NT, TN or TT\n");
                return 2;
            }
        } else if (!strcmp(a, "--libs") && need(i, argc, 1, a)) {
            libs_arg = argv[++i];
            explicit_libs = 1;
        } else if (!strcmp(a, "--threads") && need(i, argc, 1, a)) {
            o.threads = (int)num(argv[++i], a);
            if (o.threads < 1) {
                fprintf(stderr, "vortex-bench-gemm: --threads must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--quick")) {
            o.quick = 1;
        } else if (!strcmp(a, "--mode") && need(i, argc, 1, a)) {
            const char *v = argv[++i];
            if (!strcmp(v, "steady"))
                o.modes = 1 << MODE_STEADY;
            else if (!strcmp(v, "dynamic"))
                o.modes = 1 << MODE_DYNAMIC;
            else if (!strcmp(v, "both"))
                o.modes = (1 << MODE_STEADY) | (1 << MODE_DYNAMIC);
            else {
                fprintf(stderr, "vortex-bench-gemm: --mode takes steady, dynamic or both\n");
                return 2;
            }
        } else if (!strcmp(a, "--passes") && need(i, argc, 1, a)) {
            o.passes = (int)num(argv[++i], a);
            if (o.passes < 1) {
                fprintf(stderr, "vortex-bench-gemm: --passes must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--case-seconds") && need(i, argc, 1, a)) {
            o.case_s = num(argv[++i], a);
        } else if (!strcmp(a, "--target-seconds") && need(i, argc, 1, a)) {
            o.target_s = num(argv[++i], a);
        } else if (!strcmp(a, "--min-reps") && need(i, argc, 1, a)) {
            o.min_reps = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--max-reps") && need(i, argc, 1, a)) {
            o.max_reps = (int)num(argv[++i], a);
        } else if (!strcmp(a, "--min-sample-ms") && need(i, argc, 1, a)) {
            o.min_sample_s = num(argv[++i], a) * 1e-3;
        } else if (!strcmp(a, "--gap-us") && need(i, argc, 1, a)) {
            o.gap_us = num(argv[++i], a);
        } else if (!strcmp(a, "--max-seconds") && need(i, argc, 1, a)) {
            o.max_seconds = num(argv[++i], a);
        } else if (!strcmp(a, "--alpha") && need(i, argc, 1, a)) {
            o.alpha = (float)num(argv[++i], a);
        } else if (!strcmp(a, "--beta") && need(i, argc, 1, a)) {
            o.beta = (float)num(argv[++i], a);
        } else if (!strcmp(a, "--tol") && need(i, argc, 1, a)) {
            o.tol = num(argv[++i], a);
        } else if (!strcmp(a, "--seed") && need(i, argc, 1, a)) {
            o.seed = (uint64_t)num(argv[++i], a);
        } else if (!strcmp(a, "--peak")) {
            o.peak = 1;
        } else if (!strcmp(a, "--csv") && need(i, argc, 1, a)) {
            o.csv = argv[++i];
        } else if (!strcmp(a, "--list")) {
            o.list = 1;
        } else {
            fprintf(stderr, "vortex-bench-gemm: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (o.target_s < 0)
        o.target_s = o.quick ? 0.01 : 0.25;
    if (o.warmup_s < 0)
        o.warmup_s = o.quick ? 0.002 : 0.05;
    if (o.min_sample_s < 0)
        o.min_sample_s = o.quick ? 1e-3 : 5e-3;
    if (o.gap_us < 0)
        o.gap_us = o.quick ? 1000 : 2000;
    if (o.passes < 0)
        o.passes = o.quick ? 3 : 5;
    if (o.case_s < 0)
        o.case_s = o.quick ? 2 : 20;
    if (o.min_reps < 1)
        o.min_reps = 1;
    if (o.max_reps < o.min_reps)
        o.max_reps = o.min_reps;

    /* Suites first (in the order given), then any --shape cases. */
    g_quick_files = o.quick;
    case_list all = {0};
    if (!suites_arg[0] && !have_shapes)
        snprintf(suites_arg, sizeof suites_arg, "square,bert,small");
    if (suites_arg[0]) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", suites_arg);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (add_suite(&all, t) != 0) {
                fprintf(stderr,
                        "vortex-bench-gemm: unknown suite '%s' (square, bert, small, trans, all, "
                        "or a readable file)\n", t);
                return 2;
            }
    }
    for (int i = 0; i < cases.n; i++)
        add_case(&all, cases.v[i].suite, cases.v[i].name, cases.v[i].m, cases.v[i].n,
                 cases.v[i].k, cases.v[i].ta, cases.v[i].tb,
                 (const int64_t[3]){cases.v[i].lda, cases.v[i].ldb, cases.v[i].ldc});
    free(cases.v);

    if (o.list) {
        printf("suite,case,m,n,k,op\n");
        for (int i = 0; i < all.n; i++)
            printf("%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%c%c\n", all.v[i].suite,
                   all.v[i].name, all.v[i].m, all.v[i].n, all.v[i].k, all.v[i].ta, all.v[i].tb);
        return 0;
    }
    if (parse_libs(libs_arg, explicit_libs) != 0)
        return 2;
    if (lib_on[L_MM] && (o.alpha != 1.0f || o.beta != 0.0f)) {
        if (explicit_libs)
            fprintf(stderr, "vortex-bench-gemm: dnnl_matmul is timed with alpha=1, beta=0 only; "
                            "skipping it\n");
        lib_on[L_MM] = 0;
    }
    /* the matmul primitive is made for dense operands (format tags) */
    for (int i = 0; i < all.n && lib_on[L_MM]; i++) {
        int64_t t[3];
        tight_lds(&all.v[i], t);
        if ((all.v[i].lda && all.v[i].lda != t[0]) || (all.v[i].ldb && all.v[i].ldb != t[1]) ||
            (all.v[i].ldc && all.v[i].ldc != t[2])) {
            if (explicit_libs)
                fprintf(stderr, "vortex-bench-gemm: dnnl_matmul is timed on tight leading dimensions only "
                                "(%s has others); skipping it\n", all.v[i].name);
            lib_on[L_MM] = 0;
        }
    }

    /* MKL's OpenMP workers spin 200 ms after each call by default, which
     * would land in the next library's sample; 1 ms is gone by the gap. */
    setenv("KMP_BLOCKTIME", "1", 0);

    int threads = o.threads ? o.threads : vx_get_num_threads();
    if (threads < 1)
        threads = 1;
    dnnl_runtime_setup();
    setup_threads(threads);
#ifdef HAVE_DNNL
    int dnnl_engine_failed = 0;
    if (lib_on[L_MM] &&
        (dnnl_engine_create(&g_eng, dnnl_cpu, 0) != dnnl_success ||
         dnnl_stream_create(&g_stream, g_eng, dnnl_stream_default_flags) != dnnl_success)) {
        lib_on[L_MM] = 0;
        dnnl_engine_failed = 1;
    }
#endif

    /* Initialise every library once (JIT, thread pools, runtime start-up) so
     * the first case's first_call_us is about the shape, not the library. */
    {
        static float ia[64], ib[64], ic[64];
        bcase init = {.m = 8, .n = 8, .k = 8, .ta = 'N', .tb = 'N'};
        for (int l = 0; l < NLIB; l++) {
            if (!lib_on[l])
                continue;
            call_ctx x = {.lib = l, .c = &init, .a = ia, .b = ib, .cbuf = ic, .lda = 8,
                          .ldb = 8, .ldc = 8, .alpha = 1.0f, .beta = 0.0f, .batch = 1,
                          .dynamic = 1};
#ifdef HAVE_DNNL
            if (l == L_MM && matmul_prepare('N', 'N') != dnnl_success) {
                fprintf(stderr, "vortex-bench-gemm: cannot create the oneDNN matmul primitive; "
                                "dnnl_matmul not timed\n");
                lib_on[L_MM] = 0;
                continue;
            }
#endif
            timed_batch(&x);
        }
    }

    double peak = 0;
    const char *peak_isa = "";
    if (o.peak) {
        bench_isa isa = bench_isa_supported(BENCH_ISA_AVX512) ? BENCH_ISA_AVX512 : BENCH_ISA_AVX2;
        bench_peak p;
        for (int r = 0; r < 3; r++) /* best of 3 x 0.1 s: robust to a noisy neighbour */
            if (bench_fma_peak(isa, threads, 0.1, &p) == 0 && p.gflops > peak) {
                peak = p.gflops;
                peak_isa = bench_isa_name(isa);
            }
        if (peak <= 0) {
            printf("peak:     n/a (no AVX2/AVX-512 FMA)\n");
        }
    }
    print_machine(threads, &o, peak, peak_isa);
#ifdef HAVE_DNNL
    if (dnnl_engine_failed)
        printf("WARNING:  cannot create the oneDNN CPU engine/stream (%s): dnnl_matmul NOT "
               "timed\n", dnnl_runtime_note);
#endif
    if (o.max_seconds > 0) {
        g_deadline = t_start + o.max_seconds;
        printf("budget:   %.3g s (--max-seconds)\n", o.max_seconds);
    }

    FILE *csv = NULL;
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            fprintf(stderr, "vortex-bench-gemm: cannot write %s: %s\n", o.csv, strerror(errno));
            return 2;
        }
        fprintf(csv, "suite,case,m,n,k,op,library,mode,threads,time_us,gflops,speedup,batch,"
                     "reps,rel_err,first_call_us\n");
    }

    result *res = calloc((size_t)(all.n > 0 ? all.n : 1), sizeof *res);
    int mismatches = 0, failures = 0, stopped = 0, run = 0;
    for (int i = 0; i < all.n;) {
        /* One suite = a run of consecutive cases with the same suite name. */
        int j = i;
        while (j < all.n && !strcmp(all.v[j].suite, all.v[i].suite))
            j++;
        for (int mode = MODE_STEADY; mode <= MODE_DYNAMIC; mode++) {
            if (!(o.modes & (1 << mode)))
                continue;
            memset(res + i, 0, (size_t)(j - i) * sizeof *res);
            print_header(all.v[i].suite, mode, peak > 0);
            if (mode == MODE_DYNAMIC) {
                if (stopped || over_budget()) {
                    if (!stopped)
                        printf("  -- budget of %.3g s reached: stopping before %s dynamic\n",
                               o.max_seconds, all.v[i].suite);
                    stopped = 1;
                } else {
                    printf("   (%d case%s in a shuffled order, a fresh one per pass, %d passes, "
                           "one timed call per case, pass and library; median)\n",
                           j - i, j - i == 1 ? "" : "s", o.passes);
                    dynamic_suite(all.v + i, j - i, &o, threads, o.seed * 7919ull + (uint64_t)i,
                                  res + i);
                    for (int c = i; c < j; c++) {
                        print_row(&all.v[c], &res[c], peak);
                        if (csv)
                            csv_rows(csv, &all.v[c], &res[c], threads, mode);
                        mismatches += res[c].mismatch;
                        failures += res[c].failed;
                    }
                    run += j - i;
                }
            }
            for (int c = i; c < j && mode == MODE_STEADY; c++) {
                if (stopped || over_budget()) {
                    if (!stopped)
                        printf("  -- budget of %.3g s reached: stopping before %s %s\n",
                               o.max_seconds, all.v[c].suite, all.v[c].name);
                    stopped = 1;
                    continue;
                }
                run_case(&all.v[c], &o, threads, o.seed * 1000003ull + (uint64_t)c, &res[c]);
                print_row(&all.v[c], &res[c], peak);
                if (csv)
                    csv_rows(csv, &all.v[c], &res[c], threads, mode);
                mismatches += res[c].mismatch;
                failures += res[c].failed;
                run++;
            }
            print_summary(all.v[i].suite, mode, all.v, res, i, j);
        }
        i = j;
    }
    if (csv)
        fclose(csv);

    int nmodes = __builtin_popcount((unsigned)o.modes);
    printf("\n%d of %d case runs (%d cases x %d mode%s) in %.1f s", run, all.n * nmodes, all.n,
           nmodes, nmodes == 1 ? "" : "s", bench_now() - t_start);
    if (stopped)
        printf(" (stopped by --max-seconds %.3g)", o.max_seconds);
    printf("\n");
    if (o.csv)
        printf("csv: %s\n", o.csv);
    if (mismatches)
        printf("!!!!!!!! MISMATCH in %d case%s: Vortex disagrees with the reference "
               "beyond %.1g !!!!!!!!\n", mismatches, mismatches == 1 ? "" : "s", o.tol);
    if (failures)
        printf("ERROR: a library call failed in %d case%s\n", failures, failures == 1 ? "" : "s");
    free(res);
    free(all.v);
    if (mismatches)
        return 2;
    return failures ? 1 : 0;
}
