/* Process-wide settings read once from the environment: verbosity, warnings
 * and the thread count. */
#ifndef VX_RUNTIME_H
#define VX_RUNTIME_H

/* VORTEX_VERBOSE (0 = quiet, 1 = one line per call, 2 = also plan details). */
int vx_verbose(void);

/* A warning on stderr, printed only when verbose; each distinct message once. */
void vx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Threads a call may use: vx_set_num_threads, else VORTEX_NUM_THREADS,
 * else the number of physical cores. */
int vx_threads(void);

/* Both of the above in one call (dyn_gemm reads them on every call; each
 * call across files costs a small GEMM a few nanoseconds). */
typedef struct {
    int verbose;
    int threads;
} vx_call_settings;
vx_call_settings vx_settings(void);

#endif
