#include "runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/hw.h"
#include "vortex/vortex.h"

enum { MAX_THREADS = 1024 };

static int g_verbose;
static int g_default_threads = 1;
static atomic_int g_user_threads; /* 0 = use the default */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_ready; /* init has run: later calls skip pthread_once */

static int parse_positive(const char *s, int *out)
{
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > MAX_THREADS)
        return 0;
    *out = (int)v;
    return 1;
}

static void init(void)
{
    const char *v = getenv("VORTEX_VERBOSE");
    if (v && *v) {
        long x = strtol(v, NULL, 10);
        g_verbose = x > 0 ? (int)x : 0;
    }
    g_default_threads = vx_hw()->physical_cores > 0 ? vx_hw()->physical_cores : 1;
    const char *t = getenv("VORTEX_NUM_THREADS");
    int n;
    if (parse_positive(t, &n))
        g_default_threads = n;
    else if (t && *t && g_verbose)
        fprintf(stderr, "vortex: warning: VORTEX_NUM_THREADS=%s is not a count in 1..%d; using %d\n",
                t, MAX_THREADS, g_default_threads);
    atomic_store_explicit(&g_ready, 1, memory_order_release);
}

/* Every dyn_gemm asks for the settings: after the first, one load. */
static inline void ensure_init(void)
{
    if (!atomic_load_explicit(&g_ready, memory_order_acquire))
        pthread_once(&g_once, init);
}

int vx_verbose(void)
{
    ensure_init();
    return g_verbose;
}

void vx_warn(const char *fmt, ...)
{
    if (!vx_verbose())
        return;
    /* Remember a few messages so a warning in a hot loop prints once. */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char seen[16][400];
    static int nseen;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    int dup = 0;
    for (int i = 0; i < nseen && !dup; i++)
        dup = !strcmp(seen[i], msg);
    if (!dup) {
        if (nseen < 16)
            strcpy(seen[nseen++], msg);
        fprintf(stderr, "vortex: warning: %s\n", msg);
    }
    pthread_mutex_unlock(&mu);
}

int vx_threads(void) { return vx_settings().threads; }

vx_call_settings vx_settings(void)
{
    ensure_init();
    const int u = atomic_load_explicit(&g_user_threads, memory_order_relaxed);
    return (vx_call_settings){ g_verbose, u > 0 ? u : g_default_threads };
}

VX_API int vx_get_num_threads(void)
{
    return vx_threads();
}

VX_API void vx_set_num_threads(int n)
{
    pthread_once(&g_once, init);
    atomic_store(&g_user_threads, n > 0 ? (n > MAX_THREADS ? MAX_THREADS : n) : 0);
}
