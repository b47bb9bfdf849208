/* A range of C written past the caches (non-temporal stores). A C written
 * once and larger than the last-level cache is evicted unread anyway, and a
 * plain store first reads each line it fills (the write-allocate): such a
 * C costs its size twice in DRAM traffic, streamed once.
 *
 * Only whole 64-byte lines are streamed. A line written in part (plain
 * stores, after its read from DRAM) between streamed ones held the stores
 * behind it for that read, the stores leaving in program order: blocks of
 * 5 x 100 floats, each ending in a part line, ran 716847x100x16 in 15 ms
 * against 8.5 for blocks of 8 x 100 (whole lines) and 9.6 with plain stores
 * (AMD EPYC Zen 5, 2 threads; NOTES.md, twentieth session). So the writer
 * takes a contiguous range in pieces, in order, and keeps the line a piece
 * ends inside until the next piece fills it; only the range's first and
 * last lines, which it may share with a neighbour, are written in part. */
#ifndef VX_CPU_STREAM_H
#define VX_CPU_STREAM_H

#include <stdint.h>

#include "cpu/ukernel.h"

typedef struct vx_stream vx_stream;
struct vx_stream {
    _Alignas(64) float line[16]; /* the line `next` lies in, as far as filled */
    float *next;                 /* where the next float goes */
    int first;                   /* floats of the range's first line that are not the range's */
    void (*put)(vx_stream *s, const float *src, int64_t n);
    void (*end)(vx_stream *s);
};

/* Start a range at dst, with the plan's ISA's writer. */
void vx_stream_begin(vx_stream *s, float *dst, vx_isa isa);

/* The next n floats of the range, from src (any alignment). */
static inline void vx_stream_put(vx_stream *s, const float *src, int64_t n) { s->put(s, src, n); }

/* Write the part line the range ends in (plain stores). */
static inline void vx_stream_end(vx_stream *s) { s->end(s); }

/* Order the streamed stores before any later store (SFENCE): once, after
 * the last range a thread writes, before the data is handed on. */
void vx_stream_fence(void);

#endif
