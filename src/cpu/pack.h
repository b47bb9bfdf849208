/* L1 load stage: packing operand blocks into CacheBuffers in the layouts the
 * micro-kernels read (see ukernel.h). */
#ifndef VX_CPU_PACK_H
#define VX_CPU_PACK_H

#include <stddef.h>
#include <stdint.h>

/* Pack the mb x kb block A[i][p] = a[i*rs + p*cs] into row panels of mr rows:
 * panel r (rows r*mr ..) holds rows_r = min(mr, mb - r*mr) rows stored as
 * out[r*mr*kb + p*rows_r + i]. The last panel is compact (no padding). */
void vx_pack_a(int64_t mb, int64_t kb, const float *a, int64_t rs, int64_t cs, int mr, float *out);

/* Pack the kb x nb block B[p][j] = b[p*rs + j*cs] into column panels of nr
 * columns: panel q holds out[q*nr*kb + p*nr + j], columns past nb zeroed. */
void vx_pack_b(int64_t kb, int64_t nb, const float *b, int64_t rs, int64_t cs, int nr, float *out);

/* Pack one column panel of a convolution's B straight from nb KCRS filter
 * rows (f + j*cs, each cg channels x rs taps), the taps [t0, t0 + nt) of
 * each channel: out[(t*cg + c)*nr + j] = f[j*cs + c*rs + t], the rows of
 * the KRSC panel vx_pack_b makes from a KRSC filter (columns past nb
 * zeroed; the other taps' rows not written): an NCHW call run as NHWC needs
 * no filter transposed first. */
void vx_pack_b_kcrs(int64_t cg, int64_t rs, int64_t t0, int64_t nt, int64_t nb, const float *f, int64_t cs, int nr,
                    float *out);

/* The transposing gather under convolution's loads: dst[q*ld + i] =
 * src[i][q] for i < nrows, q < len, where a NULL src[i] (a row of zero
 * padding) reads as zeros. */
void vx_pack_rows_t(const float *const *src, int nrows, int64_t len, float *dst, int64_t ld);

/* dst[j*ld_dst + i] = src[i*ld_src + j] for i < rows, j < cols. */
void vx_copy_transposed(int64_t rows, int64_t cols, const float *src, int64_t ld_src, float *dst, int64_t ld_dst);

/* A per-thread, 64-byte aligned scratch buffer that grows on demand and is
 * freed when the thread exits. slot selects one of a few independent buffers.
 * Returns NULL when memory runs out. */
float *vx_scratch(int slot, size_t floats);

#endif
