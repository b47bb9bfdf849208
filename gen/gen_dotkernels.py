#!/usr/bin/env python3
"""Generate the dot-form L0 kernels of Vortex (see src/cpu/dot.h).

A GEMM whose B is stored transposed (B^T's rows, one per column of C, run
along k: an NT call, or a convolution's KRSC filter) has both operands
contiguous along the reduction. These kernels vectorize along k instead of
along C's columns: the accumulator of C[i][j] is a vector of partial sums
over k, one load of each A row and each B^T row feeds mr x nr FMAs per
vector of k, and the sums are reduced across lanes once per call. No
operand is packed, so B^T is read where it lies, row after row, which
the hardware prefetchers follow (an NN panel walk reads rows a leading
dimension apart and they do not).

One kernel per (m, n) with m <= MR, n <= NR: every edge tile is exact.
k of any length; its last partial vector is read masked, never past the
end of a row.

Usage: gen_dotkernels.py --isa avx512|avx2 --out FILE.c
       gen_dotkernels.py --table --out FILE.c
"""
import sys

import gencli

# (lanes, tile rows, tile columns): mr * nr accumulators, mr A vectors and
# one B vector per step fit the register file (AVX-512: 24 + 4 + 1 of 32;
# AVX2: 12 + 3 + 1 of 16).
ISAS = {
    "avx512": dict(w=16, mr=4, nr=6),
    "avx2": dict(w=8, mr=3, nr=4),
}


def fname(isa, m, n):
    return f"vx_dk_{isa}_m{m}_n{n}"


SIG = ("(int64_t k, const float *restrict a, int64_t a_rs, const float *restrict b, int64_t b_rs, "
       "float *restrict c, int64_t c_rs, float alpha, float beta, const vx_epilogue *ep)")

AVX512_HELPERS = """/* Four accumulators' lane sums: [sum(v0), sum(v1), sum(v2), sum(v3)].
 * Pairs interleave within 128-bit lanes (unpack, add), then the four
 * lanes are added: 13 operations for four sums where four separate
 * reductions take 20. */
static inline __attribute__((always_inline)) __m128 hsum4(__m512 v0, __m512 v1, __m512 v2, __m512 v3)
{
    const __m512 a = _mm512_add_ps(_mm512_unpacklo_ps(v0, v1), _mm512_unpackhi_ps(v0, v1));
    const __m512 b = _mm512_add_ps(_mm512_unpacklo_ps(v2, v3), _mm512_unpackhi_ps(v2, v3));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
"""

AVX2_HELPERS = """/* Four accumulators' lane sums: [sum(v0), sum(v1), sum(v2), sum(v3)]. */
static inline __attribute__((always_inline)) __m128 hsum4(__m256 v0, __m256 v1, __m256 v2, __m256 v3)
{
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

/* The first n (1..4) floats of p, zeros above / the first n lanes of x to p:
 * through a bounce, once per row of a tile (vmaskmovps is microcoded on AMD
 * Zen). */
static inline __attribute__((always_inline)) __m128 load_n(const float *p, int n)
{
    float t[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int j = 0; j < n; j++)
        t[j] = p[j];
    return _mm_loadu_ps(t);
}

static inline __attribute__((always_inline)) void store_n(float *p, __m128 x, int n)
{
    float t[4];
    _mm_storeu_ps(t, x);
    for (int j = 0; j < n; j++)
        p[j] = t[j];
}
"""


def kernel(isa, m, n):
    cfg = ISAS[isa]
    w = cfg["w"]
    big = isa == "avx512"
    vt = "__m512" if big else "__m256"
    p = "_mm512" if big else "_mm256"
    L = [f"void {fname(isa, m, n)}{SIG}", "{"]
    for i in range(m):
        L.append("    " + " ".join(f"{vt} c{i}_{j} = {p}_setzero_ps();" for j in range(n)))
    for i in range(m):
        L.append(f"    const float *a{i} = a + {i} * a_rs;")
    for j in range(n):
        L.append(f"    const float *b{j} = b + {j} * b_rs;")

    def step(load, ind):
        out = []
        for i in range(m):
            out.append(f"{ind}const {vt} x{i} = {load(f'a{i} + q')};")
        for j in range(n):
            out.append(f"{ind}{{ const {vt} y = {load(f'b{j} + q')};")
            for i in range(m):
                out.append(f"{ind}  c{i}_{j} = {p}_fmadd_ps(x{i}, y, c{i}_{j});")
            out.append(f"{ind}}}")
        return out

    L.append("    int64_t q = 0;")
    L.append(f"    for (; q + {w} <= k; q += {w}) {{")
    L += step(lambda ptr: f"{p}_loadu_ps({ptr})", "        ")
    L.append("    }")
    L.append("    if (q < k) { /* the last partial vector of k, masked */")
    if big:
        L.append("        const __mmask16 mk = (__mmask16)((1u << (k - q)) - 1u);")
        L += step(lambda ptr: f"_mm512_maskz_loadu_ps(mk, {ptr})", "        ")
    else:
        L.append("        const __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k - q)), "
                 "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));")
        L += step(lambda ptr: f"_mm256_maskload_ps({ptr}, mk)", "        ")
    L.append("    }")

    # Reduction and store, row by row: the n sums of row i in one vector
    # (__m256 of 8 lanes on AVX-512, __m128 of 4 on AVX2).
    z = f"{p}_setzero_ps()"

    def acc(i, j):
        return f"c{i}_{j}" if j < n else z

    if big:
        L.append(f"    const __mmask8 mn = (__mmask8)0x{(1 << n) - 1:02x};")
        L.append("    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);")
        L.append("    const __m256 bc = ep && ep->bias_col ? _mm256_maskz_loadu_ps(mn, ep->bias_col) : "
                 "_mm256_setzero_ps();")
        for i in range(m):
            lo = f"hsum4({acc(i, 0)}, {acc(i, 1)}, {acc(i, 2)}, {acc(i, 3)})"
            if n > 4:
                hi = f"hsum4({acc(i, 4)}, {acc(i, 5)}, {acc(i, 6)}, {acc(i, 7)})"
                L.append(f"    {{ const __m256 s = _mm256_insertf128_ps(_mm256_castps128_ps256({lo}), {hi}, 1);")
            else:
                L.append(f"    {{ const __m256 s = _mm256_castps128_ps256({lo});")
            L.append(f"      float *cr = c + {i} * c_rs;")
            L.append("      __m256 t = _mm256_mul_ps(s, va);")
            L.append("      if (beta != 0.0f) t = _mm256_fmadd_ps(_mm256_maskz_loadu_ps(mn, cr), vb, t);")
            L.append("      if (ep) {")
            L.append(f"          t = _mm256_add_ps(t, bc);")
            L.append(f"          if (ep->bias_row) t = _mm256_add_ps(t, _mm256_set1_ps(ep->bias_row[{i}]));")
            L.append("          if (ep->relu) t = _mm256_max_ps(t, _mm256_setzero_ps());")
            L.append("      }")
            L.append("      _mm256_mask_storeu_ps(cr, mn, t); }")
    else:
        L.append("    const __m128 va = _mm_set1_ps(alpha), vb = _mm_set1_ps(beta);")
        L.append(f"    const __m128 bc = ep && ep->bias_col ? load_n(ep->bias_col, {n}) : _mm_setzero_ps();")
        for i in range(m):
            L.append(f"    {{ const __m128 s = hsum4({acc(i, 0)}, {acc(i, 1)}, {acc(i, 2)}, {acc(i, 3)});")
            L.append(f"      float *cr = c + {i} * c_rs;")
            L.append("      __m128 t = _mm_mul_ps(s, va);")
            ld = "_mm_loadu_ps(cr)" if n == 4 else f"load_n(cr, {n})"
            L.append(f"      if (beta != 0.0f) t = _mm_fmadd_ps({ld}, vb, t);")
            L.append("      if (ep) {")
            L.append("          t = _mm_add_ps(t, bc);")
            L.append(f"          if (ep->bias_row) t = _mm_add_ps(t, _mm_set1_ps(ep->bias_row[{i}]));")
            L.append("          if (ep->relu) t = _mm_max_ps(t, _mm_setzero_ps());")
            L.append("      }")
            L.append(f"      {'_mm_storeu_ps(cr, t);' if n == 4 else f'store_n(cr, t, {n});'} }}")
    L.append("}")
    return "\n".join(L)


def emit_isa(isa):
    cfg = ISAS[isa]
    out = ["/* Generated by gen/gen_dotkernels.py: do not edit. */",
           "#include <immintrin.h>", "#include <stdint.h>", '#include "cpu/dot.h"', ""]
    out.append(AVX512_HELPERS if isa == "avx512" else AVX2_HELPERS)
    for m in range(1, cfg["mr"] + 1):
        for n in range(1, cfg["nr"] + 1):
            out.append(f"void {fname(isa, m, n)}{SIG};")
            out.append(kernel(isa, m, n))
            out.append("")
    return "\n".join(out) + "\n"


def emit_table():
    out = ["/* Generated by gen/gen_dotkernels.py: do not edit. */",
           "#include <stddef.h>", '#include "cpu/dot.h"', ""]
    for isa, cfg in ISAS.items():
        for m in range(1, cfg["mr"] + 1):
            for n in range(1, cfg["nr"] + 1):
                out.append(f"void {fname(isa, m, n)}{SIG};")
    out.append("")
    for isa, cfg in ISAS.items():
        mr, nr = cfg["mr"], cfg["nr"]
        rows = []
        for m in range(1, mr + 1):
            rows.append("{ " + ", ".join(fname(isa, m, n) for n in range(1, nr + 1)) + " }")
        out.append(f"static const vx_dot_fn {isa}_dot_fns[{mr}][VX_DOT_NR_MAX] = {{")
        out.append("    " + ",\n    ".join(rows))
        out.append("};")
        out.append(f"static const vx_dot_set {isa}_dot = {{ {cfg['w']}, {mr}, {nr}, {isa}_dot_fns }};")
        out.append("")
    out.append("const vx_dot_set *vx_dot_kernels(vx_isa isa)")
    out.append("{")
    out.append("    return isa == VX_ISA_AVX512 ? &avx512_dot : &avx2_dot;")
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    return gencli.main(__doc__, ISAS, emit_isa, emit_table)


if __name__ == "__main__":
    sys.exit(main())
