#include "cpu/pack.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void vx_pack_a(int64_t mb, int64_t kb, const float *a, int64_t rs, int64_t cs, int mr, float *out)
{
    for (int64_t r0 = 0; r0 < mb; r0 += mr) {
        const int64_t rows = mb - r0 < mr ? mb - r0 : mr;
        const float *src = a + r0 * rs;
        float *dst = out + r0 * kb;
        if (cs == 1) {
            /* Row-major source: walk each row contiguously, scatter by rows. */
            for (int64_t i = 0; i < rows; i++) {
                const float *row = src + i * rs;
                for (int64_t p = 0; p < kb; p++)
                    dst[p * rows + i] = row[p];
            }
        } else {
            /* Column-contiguous source (rs == 1 typically): copy runs of rows. */
            for (int64_t p = 0; p < kb; p++) {
                const float *col = src + p * cs;
                float *d = dst + p * rows;
                for (int64_t i = 0; i < rows; i++)
                    d[i] = col[i * rs];
            }
        }
    }
}

void vx_pack_b(int64_t kb, int64_t nb, const float *b, int64_t rs, int64_t cs, int nr, float *out)
{
    for (int64_t j0 = 0; j0 < nb; j0 += nr) {
        const int64_t cols = nb - j0 < nr ? nb - j0 : nr;
        float *dst = out + j0 * kb;
        const float *src = b + j0 * cs;
        if (cs == 1) {
            for (int64_t p = 0; p < kb; p++) {
                memcpy(dst + p * nr, src + p * rs, (size_t)cols * sizeof(float));
                if (cols < nr)
                    memset(dst + p * nr + cols, 0, (size_t)(nr - cols) * sizeof(float));
            }
        } else {
            if (cols < nr)
                for (int64_t p = 0; p < kb; p++)
                    memset(dst + p * nr + cols, 0, (size_t)(nr - cols) * sizeof(float));
            for (int64_t j = 0; j < cols; j++) {
                const float *col = src + j * cs;
                for (int64_t p = 0; p < kb; p++)
                    dst[p * nr + j] = col[p * rs];
            }
        }
    }
}

enum { SLOTS = 2 };

typedef struct {
    float *buf[SLOTS];
    size_t cap[SLOTS];
} scratch;

static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    scratch *s = p;
    for (int i = 0; i < SLOTS; i++)
        free(s->buf[i]);
    free(s);
}

static void make_key(void)
{
    pthread_key_create(&g_key, scratch_free);
}

float *vx_scratch(int slot, size_t floats)
{
    pthread_once(&g_once, make_key);
    scratch *s = pthread_getspecific(g_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(g_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < floats) {
        free(s->buf[slot]);
        s->buf[slot] = NULL;
        s->cap[slot] = 0;
        size_t bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0)
            return NULL;
        s->buf[slot] = p;
        s->cap[slot] = floats;
    }
    return s->buf[slot];
}
