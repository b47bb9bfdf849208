#!/usr/bin/env python3
"""Generate the B-resident L0 kernels of Vortex (see src/cpu/resident.h).

A tall, skinny GEMM (many rows, k and n small: a graph network's layers,
m x 16 x 16 or m x 2 x 8) has a B of a few hundred floats. These kernels
load all of it into vector registers once per call, scaled by alpha, and
then walk A's rows front to back: each row of C is k FMAs into V
accumulators (V = vectors across n), one broadcast of A per FMA, then one
store. Nothing is reloaded per tile (the register-tile kernels reload B's
row and C's tile around every k loop, which at k = 16 is a third of their
work), and A and C are read and written in order, as the prefetchers like.

Rows go in groups of R whose R x V accumulator chains cover the FMA
latency; the last m % R rows run as one group of that size (a kernel per
group size), so no row pays a chain of k dependent FMAs on its own.

One kernel per (V, k), k = 1..KMAX[V] (B's k x V vectors, R x V
accumulators and a broadcast fit the register file). n of 1..V*w columns:
B is loaded masked (zeros past n) and C's last vector is stored masked.

Usage: gen_resident.py --isa avx512|avx2 --out FILE.c
       gen_resident.py --table --out FILE.c
"""
import sys

import gencli

# w: lanes; per V (vectors across n): (KMAX, R). Registers: k*V for B,
# R*V accumulators, one broadcast (AVX-512: 20 + 8 + 1 and 20 + 8 + 1 of
# 32; AVX2: 8 + 6 + 1 and 8 + 6 + 1 of 16).
ISAS = {
    "avx512": dict(w=16, vt="__m512", V={1: (20, 8), 2: (10, 4)}),
    "avx2": dict(w=8, vt="__m256", V={1: (8, 6), 2: (4, 3)}),
}
V_MAX = 2


def fname(isa, v, k):
    return f"vx_rk_{isa}_v{v}_k{k}"


SIG = ("(int64_t m, const float *restrict a, int64_t a_rs, const float *restrict b, int64_t b_rs, "
       "float *restrict c, int64_t c_rs, int64_t n, float alpha, float beta, int stream)")


class Ops:
    def __init__(self, isa):
        self.isa = isa
        self.w = ISAS[isa]["w"]
        self.vt = ISAS[isa]["vt"]
        self.p = "_mm512" if isa == "avx512" else "_mm256"

    def set1(self, x):
        return f"{self.p}_set1_ps({x})"

    def fma(self, a, b, c):
        return f"{self.p}_fmadd_ps({a}, {b}, {c})"

    def mul(self, a, b):
        return f"{self.p}_mul_ps({a}, {b})"

    def load_b(self, v, ptr):
        """B's vector v of a row: masked (zeros past n) where it may be partial."""
        if self.isa == "avx512":
            return f"_mm512_maskz_loadu_ps(mk{v}, {ptr})"
        return f"_mm256_maskload_ps({ptr}, mk{v})"

    def load_c(self, v, ptr, masked=True):
        if not masked:
            return f"{self.p}_loadu_ps({ptr})"
        if self.isa == "avx512":
            return f"_mm512_maskz_loadu_ps(mk{v}, {ptr})"
        return f"_mm256_maskload_ps({ptr}, mk{v})"

    def store_c(self, v, ptr, val, masked=True, stream=False):
        if stream:
            return f"{self.p}_stream_ps({ptr}, {val});"
        if not masked:
            return f"{self.p}_storeu_ps({ptr}, {val});"
        if self.isa == "avx512":
            return f"_mm512_mask_storeu_ps({ptr}, mk{v}, {val});"
        return f"_mm256_maskstore_ps({ptr}, mk{v}, {val});"

    def mask_decl(self, v):
        lo = v * self.w
        if self.isa == "avx512":
            return (f"const __mmask16 mk{v} = n >= {lo + 16} ? (__mmask16)0xFFFF : "
                    f"n > {lo} ? (__mmask16)((1u << (n - {lo})) - 1u) : (__mmask16)0;")
        # AVX2: lane j of the mask is on where lo + j < n
        return (f"const __m256i mk{v} = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - {lo}), "
                f"_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));")


def group(o, k, V, r, beta_zero, ind, masked, stream=False):
    """r rows from row i: accumulators, k FMA steps, then the stores (the
    last vector masked where `masked`; non-temporal where `stream`)."""
    L = []
    for s in range(r):
        L.append(f"{ind}const float *a{s} = a + (i + {s}) * a_rs;")
    for s in range(r):
        for v in range(V):
            L.append(f"{ind}{o.vt} c{s}_{v} = {o.mul(o.set1(f'a{s}[0]'), f'b0_{v}')};")
    for p in range(1, k):
        for s in range(r):
            L.append(f"{ind}{{ const {o.vt} x = {o.set1(f'a{s}[{p}]')};")
            for v in range(V):
                L.append(f"{ind}  c{s}_{v} = {o.fma('x', f'b{p}_{v}', f'c{s}_{v}')};")
            L.append(f"{ind}}}")
    for s in range(r):
        for v in range(V):
            ptr = f"c + (i + {s}) * c_rs + {v * o.w}"
            mv = masked and v == V - 1
            val = f"c{s}_{v}" if beta_zero else o.fma("be", o.load_c(v, ptr, mv), f"c{s}_{v}")
            L.append(f"{ind}{o.store_c(v, ptr, val, mv, stream)}")
    return L


def kernel(isa, V, k):
    o = Ops(isa)
    R = ISAS[isa]["V"][V][1]
    L = [f"void {fname(isa, V, k)}{SIG}", "{"]
    for v in range(V):
        L.append("    " + o.mask_decl(v))
    L.append(f"    const {o.vt} al = {o.set1('alpha')};")
    # B, alpha folded in: C = sum_p A[i][p] * (alpha * B[p][:]) (+ beta * C)
    for p in range(k):
        for v in range(V):
            L.append(f"    const {o.vt} b{p}_{v} = {o.mul('al', o.load_b(v, f'b + {p} * b_rs + {v * o.w}'))};")
    L.append("    int64_t i = 0;")
    # AVX-512 masks cost nothing: one body. AVX2's masked stores are slow
    # on AMD (vmaskmovps): whole rows (n = V * w) store plainly.
    bodies = [("", True)] if isa == "avx512" else [(f"n == {V * o.w}", False), ("", True)]
    for cond, masked in bodies:
        if cond:
            L.append(f"    if ({cond}) {{")
        elif len(bodies) > 1:
            L.append("    else {")
        for beta_zero in (True, False):
            ind = "        "
            L.append("    if (beta == 0.0f) {" if beta_zero else "    } else {")
            if beta_zero and (not masked or len(bodies) == 1):
                # `stream` (the caller's promise: n == V * w, every row of C
                # aligned to a vector): whole groups go past the caches;
                # the last few rows (fewer than R) take the plain stores below
                L.append("        if (stream) {")
                L.append(f"            for (; i + {R} <= m; i += {R}) {{")
                L += group(o, k, V, R, True, ind + "        ", False, True)
                L.append("            }")
                L.append("            _mm_sfence();")
                L.append("        }")
            if not beta_zero:
                L.append(f"        const {o.vt} be = {o.set1('beta')};")
            L.append(f"        for (; i + {R} <= m; i += {R}) {{")
            L += group(o, k, V, R, beta_zero, ind + "    ", masked)
            L.append("        }")
            if R > 1:
                L.append("        switch (m - i) {")
                for r in range(1, R):
                    L.append(f"        case {r}: {{")
                    L += group(o, k, V, r, beta_zero, ind + "    ", masked)
                    L.append("            break;")
                    L.append("        }")
                L.append("        default:")
                L.append("            break;")
                L.append("        }")
            L.append("    }" if not beta_zero else "")
        if len(bodies) > 1:
            L.append("    }")
    L.append("}")
    return "\n".join(L)


def emit_isa(isa):
    out = ["/* Generated by gen/gen_resident.py: do not edit. */",
           "#include <immintrin.h>", "#include <stdint.h>", '#include "cpu/resident.h"', ""]
    for V, (kmax, _) in sorted(ISAS[isa]["V"].items()):
        for k in range(1, kmax + 1):
            out.append(f"void {fname(isa, V, k)}{SIG};")
            out.append(kernel(isa, V, k))
            out.append("")
    return "\n".join(out) + "\n"


def emit_table():
    out = ["/* Generated by gen/gen_resident.py: do not edit. */",
           "#include <stddef.h>", '#include "cpu/resident.h"', ""]
    for isa, cfg in ISAS.items():
        for V, (kmax, _) in sorted(cfg["V"].items()):
            for k in range(1, kmax + 1):
                out.append(f"void {fname(isa, V, k)}{SIG};")
    out.append("")
    for isa, cfg in ISAS.items():
        for V, (kmax, _) in sorted(cfg["V"].items()):
            names = ", ".join(fname(isa, V, k) for k in range(1, kmax + 1))
            out.append(f"static const vx_resident_fn {isa}_v{V}[{kmax}] = {{ {names} }};")
        kmaxes = ", ".join(str(cfg["V"][V][0]) for V in range(1, V_MAX + 1))
        rows = ", ".join(str(cfg["V"][V][1]) for V in range(1, V_MAX + 1))
        fns = ", ".join(f"{isa}_v{V}" for V in range(1, V_MAX + 1))
        out.append(f"static const vx_resident_set {isa}_resident = {{ {cfg['w']}, {{ {kmaxes} }}, "
                   f"{{ {rows} }}, {{ {fns} }} }};")
        out.append("")
    out.append("const vx_resident_set *vx_resident_kernels(vx_isa isa)")
    out.append("{")
    out.append("    return isa == VX_ISA_AVX512 ? &avx512_resident : &avx2_resident;")
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    return gencli.main(__doc__, ISAS, emit_isa, emit_table)


if __name__ == "__main__":
    sys.exit(main())
