#include "cpu/stream.h"

#include <immintrin.h>

/* A piece is often a few lines (a row block of a narrow C), so the part
 * lines are handled in registers, without calls: with memcpy for them the
 * pieces of 8 x 47 floats cost 25-30 ns each more (NOTES.md, twentieth
 * session). */
enum { LINE_FLOATS = 16 };

/* Floats of `p`'s line before p. */
static inline int line_offset(const float *p) { return (int)(((uintptr_t)p & 63) / sizeof(float)); }

__attribute__((target("avx512f"))) static void put_avx512(vx_stream *s, const float *src, int64_t n)
{
    const int off = line_offset(s->next);
    if (off != 0) { /* finish the line the last piece ended in */
        const int take = n < LINE_FLOATS - off ? (int)n : LINE_FLOATS - off;
        const __mmask16 lanes = (__mmask16)(((1u << take) - 1) << off);
        /* src[0..take) into lanes off.. of the line (an expanding load
         * reads only those floats) */
        const __m512 line = _mm512_mask_expandloadu_ps(_mm512_load_ps(s->line), lanes, src);
        s->next += take, src += take, n -= take;
        if (off + take < LINE_FLOATS) {
            _mm512_store_ps(s->line, line);
            return;
        }
        float *at = s->next - LINE_FLOATS;
        if (s->first == 0)
            _mm512_stream_ps(at, line);
        else /* the range's first line: only its own part, plainly */
            _mm512_mask_store_ps(at, (__mmask16)(0xffffu << s->first), line);
        s->first = 0;
    }
    for (; n >= LINE_FLOATS; n -= LINE_FLOATS, src += LINE_FLOATS, s->next += LINE_FLOATS)
        _mm512_stream_ps(s->next, _mm512_loadu_ps(src));
    if (n > 0) { /* the start of a line the next piece finishes */
        _mm512_store_ps(s->line, _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), src));
        s->next += n;
    }
}

__attribute__((target("avx512f"))) static void end_avx512(vx_stream *s)
{
    const int off = line_offset(s->next);
    if (off > s->first)
        _mm512_mask_store_ps(s->next - off, (__mmask16)(((1u << (off - s->first)) - 1) << s->first),
                             _mm512_load_ps(s->line));
}

__attribute__((target("avx2"))) static void put_avx2(vx_stream *s, const float *src, int64_t n)
{
    const int off = line_offset(s->next);
    if (off != 0) {
        const int take = n < LINE_FLOATS - off ? (int)n : LINE_FLOATS - off;
        for (int i = 0; i < take; i++)
            s->line[off + i] = src[i];
        s->next += take, src += take, n -= take;
        if (off + take < LINE_FLOATS)
            return;
        float *at = s->next - LINE_FLOATS;
        if (s->first == 0) {
            _mm256_stream_ps(at, _mm256_load_ps(s->line));
            _mm256_stream_ps(at + 8, _mm256_load_ps(s->line + 8));
        } else {
            for (int i = s->first; i < LINE_FLOATS; i++)
                at[i] = s->line[i];
        }
        s->first = 0;
    }
    for (; n >= LINE_FLOATS; n -= LINE_FLOATS, src += LINE_FLOATS, s->next += LINE_FLOATS) {
        _mm256_stream_ps(s->next, _mm256_loadu_ps(src));
        _mm256_stream_ps(s->next + 8, _mm256_loadu_ps(src + 8));
    }
    for (int64_t i = 0; i < n; i++)
        s->line[i] = src[i];
    s->next += n;
}

static void end_avx2(vx_stream *s)
{
    const int off = line_offset(s->next);
    for (int i = s->first; i < off; i++)
        s->next[i - off] = s->line[i];
}

void vx_stream_begin(vx_stream *s, float *dst, vx_isa isa)
{
    s->next = dst;
    s->first = line_offset(dst);
    s->put = isa == VX_ISA_AVX512 ? put_avx512 : put_avx2;
    s->end = isa == VX_ISA_AVX512 ? end_avx512 : end_avx2;
}

void vx_stream_fence(void) { _mm_sfence(); }
