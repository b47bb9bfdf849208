#!/usr/bin/env python3
"""Generate the L0 register micro-kernels of Vortex (see src/cpu/ukernel.h).

For each ISA, every register tile the vector register file allows is emitted:
nr is a multiple of the vector width, and mr is any row count such that the
accumulators (mr * nr/W), one register per B vector (nr/W) and one broadcast
register fit the architectural registers. Each (m, nr) pair gets three
operand-mode variants (packed/strided A x packed/strided B). Edge rows are
exact (a kernel exists for every m <= mr_max) and ragged columns are masked,
so callers never pad C.

Usage: gen_ukernels.py --isa avx512|avx2 --out FILE.c
       gen_ukernels.py --table --out FILE.c
"""
import sys

import gencli

ISAS = {
    # name: vector floats, vector registers
    "avx512": dict(w=16, regs=32),
    "avx2": dict(w=8, regs=16),
}
VARIANTS = [("apbp", True, True), ("asbp", False, True), ("asbs", False, False)]
SEG_VARIANT = "asbp_seg"  # in-place A in segments, packed B (vx_ukernel_seg_fn)
PACK_VARIANT = "asbs_pk"  # in-place A and B, B's panel also written packed (vx_ukernel_pk_fn)
# The in-place-B kernels again, fetching B further ahead into L2 only, for
# leading dimensions whose rows share too few L1 sets to hold the rows
# fetched ahead and for B's that stream from DRAM (ukernel.h,
# vx_ukernel_family.bs_far).
FAR_SUFFIX = "_far"
# The packed-B kernels again, also fetching a caller's rows into L2 as they
# run: one row every UNROLL k steps (ukernel.h, vx_ukernel_family.fetch).
FETCH_SUFFIX = "_fetch"
FETCH_VARIANTS = [("apbp", True), ("asbp", False)]
MAX_VECTORS_PER_ROW = 4  # nr up to 4 vectors: wider tiles leave too few rows
# Rows of in-place B fetched ahead (~100 cycles of L3 latency). Shorter
# distances win while B stays in L3 between calls (AMD Zen 1, 16-row shapes
# repeated, 1 thread against oneDNN: 4 rows 0.94-0.98x, 16 rows 0.87-0.92x)
# and lose when it comes from DRAM (the same shapes once each: 1.03-1.15x
# against 1.27-1.34x; 5x3072x768 repeated, B past L3: 0.57x against 1.03x).
# A call cannot tell where B lies, and weights read once per forward pass
# come from DRAM: 16 stays (NOTES.md, 2026-11-24, eighth session).
B_PREFETCH_ROWS = 16
# ... and by the far kernels, into L2: these serve rows that alias in L1
# (from L3) and B's bigger than the last-level cache (from DRAM, through a
# TLB miss per row), where 16 rows (~45 ns of a 6x64 tile's work) hide too
# little. AMD Zen 5, 2 threads, forced plans, builds alternated: 96 rows
# ran 66x4057x3535 (B 57 MB, 6x64) in 4.70-4.80 ms against 5.27-5.42 with
# 16 (and the L1 kernels at 16: 5.15-5.79; 192 rows: 4.82-4.84),
# 5x3072x768 88 us against 103-106, 16x4096x1024 0.97x the time,
# 16x3072x768, 32x4096x512, 80x3072x768 and 272x3072x768 within
# +-2 % (NOTES.md, eighteenth session). The near kernels at 96 lost up to
# 30 % on few-row calls over B's in L3 (5x3861x326, 2x1243x60).
B_PREFETCH_ROWS_FAR = 96
TAIL_PREFETCH_MIN_ROWS = 4  # rows of a tile that also fetches each B row's last line
A_GROUP = 3              # in-place A rows per pointer: base, base + a_rs * 4, base + a_rs * 8 bytes


def tiles(isa):
    """(nr, mr_max) for every family the register file allows."""
    w, regs = ISAS[isa]["w"], ISAS[isa]["regs"]
    out = []
    for vecs in range(1, MAX_VECTORS_PER_ROW + 1):
        mr_max = (regs - vecs - 1) // vecs
        if mr_max >= 1:
            out.append((vecs * w, mr_max))
    return out


def ordered_tile(isa, m, vecs):
    """Whether the tile's k loop is written as asm statements the compiler
    keeps in order, in pinned registers (accumulators from register 0, B's
    vectors and the broadcast at the top): its accumulators, B vectors and
    broadcast leave no room for a second set of B vectors. GCC otherwise
    hoists the next step's B loads above the FMAs, runs out of registers
    and spills accumulators: 9x48 stored and reloaded two zmm registers and
    copied three per unrolled step. Ordered, 16x3072x768 on 9x48 ran 0.97x
    the time, 1024^3 on 14x32 0.98x (AMD Zen 5; NOTES.md, sixteenth
    session); the out-of-order core does the scheduling GCC did."""
    return m * vecs + 2 * vecs + 1 > ISAS[isa]["regs"]


def fname(isa, nr, m, variant):
    return f"vx_uk_{isa}_n{nr}_m{m}_{variant}"


SIG = ("(int64_t k, const float *restrict a, int64_t a_rs, int64_t a_cs, "
       "const float *restrict b, int64_t b_rs, float *restrict c, int64_t c_rs, "
       "int64_t n, float alpha, float beta, const vx_epilogue *ep, int c_far)")
# The segmented in-place-A variant (ukernel.h, vx_ukernel_seg_fn): k in
# segments of seg_len steps, segment t's A at a + t * a_jump and its packed
# B at b + t * b_jump.
SIG_SEG = ("(int64_t k_all, const float *restrict a, int64_t a_rs, int64_t a_cs, "
           "const float *restrict b, int64_t b_rs, float *restrict c, int64_t c_rs, "
           "int64_t n, float alpha, float beta, const vx_epilogue *ep, int c_far, "
           "int64_t seg_len, int64_t a_jump, int64_t b_jump)")
# The packing in-place variant (ukernel.h, vx_ukernel_pk_fn): strided A and
# B, and every B vector it loads is also stored to the packed panel bpk.
SIG_PK = SIG[:-1] + ", float *restrict bpk)"
# The fetching packed-B variant (ukernel.h, vx_ukernel_fetch_fn): rows of
# row_bytes bytes (at most 4 lines), fetch_rs floats apart, from fetch on.
SIG_FETCH = SIG[:-1] + ", const float *fetch, int64_t fetch_rs, int64_t fetch_rows, int64_t row_bytes)"


class Isa:
    """Intrinsic spellings for one ISA."""

    def __init__(self, name):
        self.name = name
        self.w = ISAS[name]["w"]
        if name == "avx512":
            self.vt, self.p = "__m512", "_mm512"
        else:
            self.vt, self.p = "__m256", "_mm256"

    def zero(self):
        return f"{self.p}_setzero_ps()"

    def bcast(self, expr):
        return f"{self.p}_set1_ps({expr})"

    def fma(self, a, b, c):
        return f"{self.p}_fmadd_ps({a}, {b}, {c})"

    # The ordered forms (ordered_tile): volatile asm statements, which the
    # compiler neither moves past each other nor drops, on variables pinned
    # to registers (reg).
    def reg(self, i):
        return f"{'zmm' if self.name == 'avx512' else 'ymm'}{i}"

    def load_ordered(self, var, ptr, reg):
        return (f'register {self.vt} {var} __asm__("{reg}"); __asm__ volatile("vmovups %[p], %[v]" : [v] "=v"({var}) '
                f': [p] "m"(*(const {self.vt} *)({ptr})));')

    def bcast_ordered(self, var, elem, reg):
        return (f'register {self.vt} {var} __asm__("{reg}"); '
                f'__asm__ volatile("vbroadcastss %[p], %[v]" : [v] "=v"({var}) : [p] "m"({elem}));')

    def fma_ordered(self, a, b, c):
        return f'__asm__ volatile("vfmadd231ps %[x], %[y], %[acc]" : [acc] "+v"({c}) : [x] "v"({a}), [y] "v"({b}));'

    def fma_bcast(self, elem, b, c, ordered):
        """c += broadcast(elem) * b in one instruction (AVX-512's embedded
        broadcast): the load unit broadcasts. A vbroadcastss into a zmm
        register takes a slot of the FMA pipes on AMD Zen 4: a tile of one
        vector per row, which broadcasts once per FMA, ran at 0.75 of the
        FMA peak (30x16: 0.365 ns an FMA against 0.273 embedded, the peak;
        14x32 and 8x48, one broadcast per two or three FMAs, ran at the
        peak either way; NOTES.md, twenty-seventh session)."""
        vol = " volatile" if ordered else ""
        return (f'__asm__{vol}("vfmadd231ps %[p]%{{1to16%}}, %[y], %[acc]" : [acc] "+v"({c}) '
                f': [p] "m"({elem}), [y] "v"({b}));')

    def fma_acc(self, a, b, c):
        """c += a * b pinned in place. GCC otherwise rotates accumulators
        through vfmadd132/213 forms and register copies, and the copies take
        FMA-port slots (about 7% of the 14x32 kernel's peak)."""
        return f'__asm__("vfmadd231ps %[x], %[y], %[acc]" : [acc] "+v"({c}) : [x] "v"({a}), [y] "v"({b}));'

    def load(self, ptr):
        return f"{self.p}_loadu_ps({ptr})"

    def mload(self, v, ptr):
        if self.name == "avx512":
            return f"_mm512_maskz_loadu_ps(mk{v}, {ptr})"
        return f"_mm256_maskload_ps({ptr}, mk{v})"

    def mstore(self, v, ptr, val):
        if self.name == "avx512":
            return f"_mm512_mask_storeu_ps({ptr}, mk{v}, {val});"
        # Not vmaskmovps: its store form is microcoded on AMD Zen (many
        # times a plain store); store_part writes the valid lanes with
        # 16/8/4-byte stores instead.
        return f"store_part({ptr}, {val}, n - {self.w * v});"

    def store(self, ptr, val):
        return f"{self.p}_storeu_ps({ptr}, {val});"

    def store_halves(self, ptr, val):
        """A store as two 256-bit halves on AVX-512 (the high one by
        vextractf64x4 to memory): a packing kernel stores a vector for
        every three or four FMAs, and on AMD Zen 4 three 512-bit stores a
        k step took an 8 x 48 tile from 0.275 to 0.323 ns an FMA, six
        256-bit ones to 0.300 (NOTES.md, forty-fourth session)."""
        if self.name != "avx512":
            return self.store(ptr, val)
        return (f"_mm256_storeu_ps({ptr}, _mm512_castps512_ps256({val})); "
                f"_mm256_storeu_pd((double *)({ptr} + 8), _mm512_extractf64x4_pd(_mm512_castps_pd({val}), 1));")

    def add(self, x, y):
        return f"{self.p}_add_ps({x}, {y})"

    def relu(self, x):
        return f"{self.p}_max_ps({x}, {self.zero()})"

    def mask_decl(self, v):
        """Mask of the valid lanes of vector column v given n."""
        w = self.w
        if self.name == "avx512":
            return (f"const __mmask16 mk{v} = (n >= {w * (v + 1)}) ? (__mmask16)0xFFFF : "
                    f"(n > {w * v} ? (__mmask16)((1u << (n - {w * v})) - 1u) : (__mmask16)0);")
        return (f"const __m256i mk{v} = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - {w * v})), "
                f"_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));")


def store_stage(I, m, V, full, ind):
    """C = alpha*acc + beta*C (beta == 0 never reads C), or, with an
    epilogue (the conv driver's last K block), C = act(alpha*acc [+ beta*C]
    + bias_row[i] + bias_col[j]). Taken once per tile; its branches cost
    little next to the K loop, but how GCC allocates registers around them
    does (below). full: all nr columns valid, so plain loads
    and stores (AVX2's masked forms are microcoded and slow on some cores,
    AMD Zen's especially); otherwise masked to the n valid columns."""
    def ld(v, ptr):
        return I.load(ptr) if full else I.mload(v, ptr)

    def st(v, ptr, val):
        return I.store(ptr, val) if full else I.mstore(v, ptr, val)

    # The plain GEMM store (no epilogue, beta == 0) is tested first, walks
    # C's rows with one pointer, returns, and with alpha == 1 stores the
    # accumulators as they are; alpha's vector is made inside each branch.
    # With the epilogue's branch first and alpha's vector made before the
    # branches, GCC spilled an accumulator and kept every row's address on
    # the stack on all paths: a 14 x 32 tile over k = 32 (C in L1, its
    # lines not fetched: prefetch_c) ran at 90 % of the FMA peak, and at 92
    # % as here (the store stage is 1 / k of a tile's work, so short k sees
    # it most; with C's lines fetched, the order alone moved nothing).
    va = f"const {I.vt} va = {I.bcast('alpha')};"

    def plain_rows(value):
        """The tile's rows down one pointer, value(acc) stored."""
        return [f"{ind}        " + " ".join(st(v, f"crow + {v * I.w}", value(f"c{i}_{v}")) for v in range(V))
                + (" crow += c_rs;" if i + 1 < m else "") for i in range(m)]

    L = [f"{ind}if (!ep && beta == 0.0f) {{"]
    L.append(f"{ind}    float *crow = c;")
    L.append(f"{ind}    if (alpha == 1.0f) {{")
    L += plain_rows(lambda acc: acc)
    L.append(f"{ind}    }} else {{")
    L.append(f"{ind}        {va}")
    L += plain_rows(lambda acc: f"{I.p}_mul_ps({acc}, va)")
    L.append(f"{ind}    }}")
    L.append(f"{ind}    return;")
    L.append(f"{ind}}}")
    L.append(f"{ind}{{")
    L.append(f"{ind}    {va}")
    L.append(f"{ind}    if (ep) {{")
    L.append(f"{ind}    const {I.vt} vb = {I.bcast('beta')};")
    for v in range(V):
        L.append(f"{ind}    const {I.vt} bc{v} = ep->bias_col ? {ld(v, f'ep->bias_col + {v * I.w}')} : {I.zero()};")
    for i in range(m):
        L.append(f"{ind}    {{ const {I.vt} br = ep->bias_row ? {I.bcast(f'ep->bias_row[{i}]')} : {I.zero()};")
        for v in range(V):
            ptr = f"c + {i} * c_rs + {v * I.w}"
            L.append(f"{ind}      {{ {I.vt} t = {I.add(f'{I.p}_mul_ps(c{i}_{v}, va)', I.add('br', f'bc{v}'))};")
            L.append(f"{ind}        if (beta != 0.0f) t = {I.fma(ld(v, ptr), 'vb', 't')};")
            L.append(f"{ind}        if (ep->relu) t = {I.relu('t')};")
            L.append(f"{ind}        {st(v, ptr, 't')} }}")
        L.append(f"{ind}    }}")
    L.append(f"{ind}    }} else {{")
    L.append(f"{ind}    const {I.vt} vb = {I.bcast('beta')};")
    for i in range(m):
        for v in range(V):
            ptr = f"c + {i} * c_rs + {v * I.w}"
            L.append(f"{ind}    {{ const {I.vt} t = {I.p}_mul_ps({ld(v, ptr)}, vb);")
            L.append(f"{ind}      {st(v, ptr, I.fma(f'c{i}_{v}', 'va', 't'))} }}")
    L.append(f"{ind}    }}")
    L.append(f"{ind}}}")
    return L


def kernel(isa, nr, m, variant, a_packed, b_packed, seg=False, pack_out=False, far=False, fetch=False):
    I = Isa(isa)
    V = nr // I.w
    ordered = ordered_tile(isa, m, V)
    # The ordered tiles' registers: accumulators from the bottom, the
    # broadcast at the top and B's vectors just below it.
    top = ISAS[isa]["regs"] - 1

    def acc_reg(i, v):
        return I.reg(i * V + v)

    def b_reg(v):
        return I.reg(top - V + v)

    bcast_reg = I.reg(top)
    fma = I.fma_ordered if ordered else I.fma_acc
    L = []
    suffix = FAR_SUFFIX if far else FETCH_SUFFIX if fetch else ""
    L.append(f"void {fname(isa, nr, m, variant + suffix)}"
             f"{SIG_SEG if seg else SIG_PK if pack_out else SIG_FETCH if fetch else SIG}")
    L.append("{")
    if a_packed:
        L.append("    (void)a_rs; (void)a_cs;")
    if b_packed:
        L.append("    (void)b_rs;")
    for i in range(m):
        if ordered:
            L.append("    " + " ".join(f"register {I.vt} c{i}_{v} __asm__(\"{acc_reg(i, v)}\") = {I.zero()};"
                                       for v in range(V)))
        else:
            L.append("    " + " ".join(f"{I.vt} c{i}_{v} = {I.zero()};" for v in range(V)))
    for v in range(V):
        L.append("    " + I.mask_decl(v))
    if not a_packed and m == 1:
        L.append("    (void)a_rs;")
    def prefetch_c():
        """Warm the C tile while the K loop runs where its lines would
        otherwise come late: C not in the core's caches (c_far, the
        driver's word), C read back (beta != 0: the loads wait at the end),
        or rows off lines or shorter than one. A row not starting on a line
        spans one line more than its vectors' starts reach; that line came
        on demand at the store (ldc = 1537: 1537^3 ran 8 % slower than with
        ldc = 1552). So there the line of each row's last live element is
        fetched too, where rows lie a line or more apart (closer rows'
        starts cover each other's lines; 89250x7x128 ran 1037-1086 us with
        this against 1122-1228 fetching the tile's last column in every
        row, 716847x2x8 alike). Not fetched: a tile written, not read, of
        whole rows (c_rs == n) on lines, so one run of lines that the
        hardware prefetchers follow, where C fits the last-level cache (not
        c_far). There the prefetches, at the tile's start beside A's first
        lines, cost more than the stores' misses, which the store queue
        takes while the next tile runs (a 14 x 32 tile over k = 32, one
        core, C in L1 or L2: 89-90 % of the FMA peak fetched, 92-93 % not;
        the models' plans on 13752-132534 x 32 x 32 4-5 % faster, C of
        1.7-17 MB). Not so elsewhere: C past the last level (716847x32x32,
        92 MB: 7 % slower unfetched), or a tile's rows apart (NHWC
        convolutions with 16-wide tiles over 64-256 channels, 4-14 %; a
        1x1 convolution of 49 pixels onto 2048 channels, C in L2, 2-5 %)."""
        L.append("    if (c_far || beta != 0.0f || c_rs < 16 || c_rs != n || "
                 "(((uintptr_t)c | ((uintptr_t)c_rs << 2)) & 63)) {")
        for i in range(m):
            for v in range(0, V, max(1, 64 // (4 * I.w))):
                L.append(f"        __builtin_prefetch(c + {i} * c_rs + {v * I.w}, 1, 3);")
        L.append("        if (c_rs >= 16) {")
        for i in range(m):
            L.append(f"            __builtin_prefetch(c + {i} * c_rs + n - 1, 1, 3);")
        L.append("        }")
        L.append("    }")
    if seg:
        prefetch_c()  # once, before the segments
        # Segments: the A and B pointers restart at the segment's base;
        # the accumulators carry on.
        L.append("    const float *a_seg = a, *b_seg = b;")
        L.append("    for (int64_t k0 = 0; k0 < k_all; k0 += seg_len, a_seg += a_jump, b_seg += b_jump) {")
        L.append("    const int64_t k = seg_len < k_all - k0 ? seg_len : k_all - k0;")
        L.append("    a = a_seg;")
        L.append("    b = b_seg;")
    if not a_packed:
        # In-place A: one pointer per group of A_GROUP rows, the rows of a
        # group at base + j * a_rs (addressed as base + a_rs * 4 or * 8),
        # each pointer stepped by a_cs per k step. Per-row offsets held
        # m - 1 registers more; with the unrolled B row offsets GCC spilled
        # them and reloaded one from the stack per broadcast. (In-place B
        # keeps its unrolled row offsets: stepping b per k step as well ran
        # 2x6144x2048 from DRAM, one thread, in 6.2-7.0 ms against 5.7-6.1,
        # and small calls no faster.)
        for g in range((m + A_GROUP - 1) // A_GROUP):
            L.append(f"    const float *ag{g} = a + {g * A_GROUP} * a_rs;")
    if not seg:
        prefetch_c()

    def a_elem(i, u):
        if a_packed:
            return f"a[{u * m + i}]"
        j = i % A_GROUP
        return f"ag{i // A_GROUP}[{'0' if j == 0 else 'a_rs' if j == 1 else f'{j} * a_rs'}]"

    def b_ptr(v, u):
        if b_packed:
            return f"b + {u * nr + v * I.w}"
        uo = f"{u} * b_rs + " if u else ""
        return f"b + {uo}{v * I.w}"

    def advance_in_place(indent):
        """After a k step: the in-place operands' pointers move one step."""
        out = []
        if not a_packed:
            out.append(indent + " ".join(f"ag{g} += a_cs;" for g in range((m + A_GROUP - 1) // A_GROUP)))
        return out

    def advance_packed(steps, indent):
        """After `steps` k steps: the packed A and the (packed or in-place) B
        pointers move past them; in-place A moves per step."""
        parts = [f"a += {steps * m};"] if a_packed else []
        parts.append(f"b += {steps * nr};" if b_packed else f"b += {steps} * b_rs;")
        if pack_out:
            parts.append(f"bpk += {steps * nr};")
        return [indent + " ".join(parts)]

    ahead = B_PREFETCH_ROWS_FAR if far else B_PREFETCH_ROWS  # rows of B fetched ahead
    locality = 2 if far else 3  # __builtin_prefetch: into L2 (prefetcht1) or L1

    def step(u, live, masked, indent):
        """One k step over the first `live` vectors of the tile; with
        `masked`, the last of them is partial and masked, the others are
        whole (plain loads); vectors past `live` hold no valid column and
        are neither loaded nor accumulated."""
        out = []
        if not b_packed and not masked:
            # In-place B rows are ldb apart: too far for the hardware stride
            # prefetcher, so fetch `ahead` rows by hand, into
            # L1 (locality 3), or with `far` into L2 (locality 2,
            # prefetcht1): rows whose L1 sets hold fewer lines than the rows
            # in flight evict each other before they are read.
            uo = f"({u} + {ahead}) * b_rs"
            for v in range(0, live, max(1, 16 // I.w)):
                out.append(f"{indent}__builtin_prefetch(pf + {uo} + {v * I.w}, 0, {locality});")
            # ... and the row's last float: a row that does not start on a
            # line spans one line more than its vectors' starts reach, and
            # that line came on demand, from DRAM once per row (66x4057x3535,
            # rows 16228 bytes apart: 14x32 tiles ran 1.37x the time of 6x64,
            # at 66x4096x3535 0.97x; NOTES.md, eighteenth session). Tiles of
            # fewer rows issue more loads than FMAs and pay for one more
            # (2x1243x60 with 2 rows: 1.7 -> 2.0 us): they go without.
            if m >= TAIL_PREFETCH_MIN_ROWS:
                out.append(f"{indent}__builtin_prefetch(pf + {uo} + {live * I.w - 1}, 0, {locality});")
        for v in range(live):
            ptr = b_ptr(v, u)
            # AVX-512 runs one masked loop for every n < nr (see below): each
            # vector is masked, or a short row would be read past its n
            # columns (and the packed panel get those floats, not zeros).
            each = masked and I.name == "avx512"
            masked_load = each or (masked and v == live - 1)
            if ordered and not masked_load:
                out.append(f"{indent}{I.load_ordered(f'b{v}', ptr, b_reg(v))}")
            else:
                ld = I.mload(v, ptr) if masked_load else I.load(ptr)
                out.append(f"{indent}const {I.vt} b{v} = {ld};")
        if pack_out:
            # The panel as the packed kernels read it: nr floats per step,
            # zero past the n valid columns (masked loads give zeros).
            for v in range(V):
                val = f"b{v}" if v < live else I.zero()
                out.append(f"{indent}{I.store_halves(f'bpk + {u * nr + v * I.w}', val)}")
        if I.name == "avx512" and live == 1:
            for i in range(m):
                out.append(f"{indent}{I.fma_bcast(a_elem(i, u), 'b0', f'c{i}_0', ordered)}")
            out += advance_in_place(indent)
            return out
        for i in range(m):
            if ordered:
                out.append(f"{indent}{{ {I.bcast_ordered('ai', a_elem(i, u), bcast_reg)}")
            else:
                out.append(f"{indent}{{ const {I.vt} ai = {I.bcast(a_elem(i, u))};")
            for v in range(live):
                out.append(f"{indent}  {fma('ai', f'b{v}', f'c{i}_{v}')}")
            out.append(f"{indent}}}")
        out += advance_in_place(indent)
        return out

    UNROLL = 4

    def kloop(live, masked, indent):
        out = []
        out.append(f"{indent}int64_t p = 0;")
        prefetching = not b_packed and not masked
        if prefetching:
            # The last rows of a walk fetch ahead the first rows of the
            # next panel (nr columns on, k rows back), which the driver
            # walks next: otherwise each walk starts with `ahead`
            # rows fetched on demand.
            out.append(f"{indent}const int64_t pf_wrap = {nr} - k * b_rs;")
        out.append(f"{indent}for (; p + {UNROLL} <= k; p += {UNROLL}) {{")
        if prefetching:
            out.append(f"{indent}  const float *pf = b + (p + {ahead + UNROLL} > k ? pf_wrap : 0);")
        if fetch:
            # One of the caller's rows per UNROLL steps, into L2 (prefetcht1),
            # its lines spread over the steps' loads: fetched between calls
            # instead, a burst of them held the core until the misses
            # drained.
            out.append(f"{indent}  if (fetch_rows > 0) {{")
            out.append(f"{indent}    const char *fr = (const char *)fetch;")
            out.append(f"{indent}    __builtin_prefetch(fr, 0, 2);")
            out.append(f"{indent}    if (row_bytes > 64) __builtin_prefetch(fr + 64, 0, 2);")
            out.append(f"{indent}    if (row_bytes > 128) __builtin_prefetch(fr + 128, 0, 2);")
            out.append(f"{indent}    if (row_bytes > 192) __builtin_prefetch(fr + 192, 0, 2);")
            out.append(f"{indent}    __builtin_prefetch(fr + row_bytes - 1, 0, 2);")
            out.append(f"{indent}    fetch += fetch_rs;")
            out.append(f"{indent}    fetch_rows--;")
            out.append(f"{indent}  }}")
        for u in range(UNROLL):
            out.append(f"{indent}  {{")
            out += step(u, live, masked, indent + "    ")
            out.append(f"{indent}  }}")
        out += advance_packed(UNROLL, indent + "  ")
        out.append(f"{indent}}}")
        out.append(f"{indent}for (; p < k; ++p) {{")
        if prefetching:
            out.append(f"{indent}  const float *pf = b + pf_wrap;")
        out += step(0, live, masked, indent + "  ")
        out += advance_packed(1, indent + "  ")
        out.append(f"{indent}}}")
        return out

    if b_packed:
        L += kloop(V, False, "    ")
        if seg:
            L.append("    }")
    elif I.name == "avx512":
        # Strided B: only the n valid columns may be read. Masked loads
        # cost AVX-512 nothing, so one loop masks every vector.
        L.append(f"    if (n == {nr}) {{")
        L += kloop(V, False, "        ")
        L.append("    } else {")
        L += kloop(V, True, "        ")
        L.append("    }")
    else:
        # Strided B, AVX2: one loop per count of live vectors, the partial
        # one (if any) masked and the whole ones loaded plainly. vmaskmovps
        # costs ~3 cycles more than a load on AMD Zen 1; masking every
        # vector of a ragged tile made 2x18x12 (4x24 tile) 1.5x slower than
        # 2x24x12, for 2 valid columns past the first 16.
        L.append(f"    const int64_t live = (n + {I.w - 1}) / {I.w};")
        L.append(f"    const int partial = (n % {I.w}) != 0;")
        first = True
        for live in range(V, 0, -1):
            for masked in (False, True):
                cond = f"live == {live} && {'partial' if masked else '!partial'}"
                L.append(f"    {'if' if first else '} else if'} ({cond}) {{")
                L += kloop(live, masked, "        ")
                first = False
        L.append("    }")

    # Store stage (see store_stage).
    if I.name == "avx512":
        L += store_stage(I, m, V, False, "    ")
    else:
        L.append(f"    if (n == {nr}) {{")
        L += store_stage(I, m, V, True, "        ")
        L.append("    } else {")
        L += store_stage(I, m, V, False, "        ")
        L.append("    }")
    L.append("}")
    return "\n".join(L)


AVX2_STORE_PART = """/* The first `lanes` floats of x to p (nothing when lanes <= 0). */
static inline __attribute__((always_inline)) void store_part(float *p, __m256 x, int64_t lanes)
{
    if (lanes >= 8) {
        _mm256_storeu_ps(p, x);
        return;
    }
    if (lanes <= 0)
        return;
    __m128 h = _mm256_castps256_ps128(x);
    if (lanes >= 4) {
        _mm_storeu_ps(p, h);
        h = _mm256_extractf128_ps(x, 1);
        p += 4;
        lanes -= 4;
    }
    if (lanes >= 2) {
        _mm_storel_pi((__m64 *)p, h);
        h = _mm_movehl_ps(h, h);
        p += 2;
        lanes -= 2;
    }
    if (lanes)
        _mm_store_ss(p, h);
}
"""


def emit_isa(isa, only_nr=None):
    out = ["/* Generated by gen/gen_ukernels.py: do not edit. */",
           "#include <immintrin.h>", "#include <stdint.h>", '#include "cpu/ukernel.h"', ""]
    if isa == "avx2":
        out.append(AVX2_STORE_PART)
    for nr, mr_max in tiles(isa):
        if only_nr is not None and nr != only_nr:
            continue
        for m in range(1, mr_max + 1):
            for variant, ap, bp in VARIANTS:
                out.append(f"void {fname(isa, nr, m, variant)}{SIG};")
                out.append(kernel(isa, nr, m, variant, ap, bp))
                out.append("")
            out.append(f"void {fname(isa, nr, m, SEG_VARIANT)}{SIG_SEG};")
            out.append(kernel(isa, nr, m, SEG_VARIANT, False, True, seg=True))
            out.append("")
            out.append(f"void {fname(isa, nr, m, PACK_VARIANT)}{SIG_PK};")
            out.append(kernel(isa, nr, m, PACK_VARIANT, False, False, pack_out=True))
            out.append("")
            out.append(f"void {fname(isa, nr, m, 'asbs' + FAR_SUFFIX)}{SIG};")
            out.append(kernel(isa, nr, m, "asbs", False, False, far=True))
            out.append("")
            out.append(f"void {fname(isa, nr, m, PACK_VARIANT + FAR_SUFFIX)}{SIG_PK};")
            out.append(kernel(isa, nr, m, PACK_VARIANT, False, False, pack_out=True, far=True))
            out.append("")
            for variant, ap in FETCH_VARIANTS:
                out.append(f"void {fname(isa, nr, m, variant + FETCH_SUFFIX)}{SIG_FETCH};")
                out.append(kernel(isa, nr, m, variant, ap, True, fetch=True))
                out.append("")
    return "\n".join(out) + "\n"


def emit_table():
    out = ["/* Generated by gen/gen_ukernels.py: do not edit. */",
           "#include <stddef.h>", '#include "cpu/ukernel.h"', ""]
    for isa in ISAS:
        for nr, mr_max in tiles(isa):
            for m in range(1, mr_max + 1):
                for variant, _, _ in VARIANTS:
                    out.append(f"void {fname(isa, nr, m, variant)}{SIG};")
                out.append(f"void {fname(isa, nr, m, SEG_VARIANT)}{SIG_SEG};")
                out.append(f"void {fname(isa, nr, m, PACK_VARIANT)}{SIG_PK};")
                out.append(f"void {fname(isa, nr, m, 'asbs' + FAR_SUFFIX)}{SIG};")
                out.append(f"void {fname(isa, nr, m, PACK_VARIANT + FAR_SUFFIX)}{SIG_PK};")
                for variant, _ in FETCH_VARIANTS:
                    out.append(f"void {fname(isa, nr, m, variant + FETCH_SUFFIX)}{SIG_FETCH};")
    out.append("")
    order = {"avx2": "VX_ISA_AVX2", "avx512": "VX_ISA_AVX512"}
    for isa in ISAS:
        for nr, mr_max in tiles(isa):
            for variant, _, _ in VARIANTS:
                names = ", ".join(fname(isa, nr, m, variant) for m in range(1, mr_max + 1))
                out.append(f"static const vx_ukernel_fn {isa}_n{nr}_{variant}[{mr_max}] = {{ {names} }};")
            names = ", ".join(fname(isa, nr, m, SEG_VARIANT) for m in range(1, mr_max + 1))
            out.append(f"static const vx_ukernel_seg_fn {isa}_n{nr}_{SEG_VARIANT}[{mr_max}] = {{ {names} }};")
            names = ", ".join(fname(isa, nr, m, PACK_VARIANT) for m in range(1, mr_max + 1))
            out.append(f"static const vx_ukernel_pk_fn {isa}_n{nr}_{PACK_VARIANT}[{mr_max}] = {{ {names} }};")
            for v, T in (("asbs", "vx_ukernel_fn"), (PACK_VARIANT, "vx_ukernel_pk_fn")):
                names = ", ".join(fname(isa, nr, m, v + FAR_SUFFIX) for m in range(1, mr_max + 1))
                out.append(f"static const {T} {isa}_n{nr}_{v}{FAR_SUFFIX}[{mr_max}] = {{ {names} }};")
            for v, _ in FETCH_VARIANTS:
                names = ", ".join(fname(isa, nr, m, v + FETCH_SUFFIX) for m in range(1, mr_max + 1))
                out.append(f"static const vx_ukernel_fetch_fn {isa}_n{nr}_{v}{FETCH_SUFFIX}[{mr_max}] = {{ {names} }};")
        fams = []
        for nr, mr_max in tiles(isa):
            ks = ", ".join(f"{isa}_n{nr}_{v}" for v, _, _ in VARIANTS)
            fams.append(f"    {{ {nr}, {mr_max}, {{ {ks} }}, {isa}_n{nr}_{SEG_VARIANT}, {isa}_n{nr}_{PACK_VARIANT}, "
                        f"{isa}_n{nr}_asbs{FAR_SUFFIX}, {isa}_n{nr}_{PACK_VARIANT}{FAR_SUFFIX}, "
                        f"{{ {', '.join(f'{isa}_n{nr}_{v}{FETCH_SUFFIX}' for v, _ in FETCH_VARIANTS)} }} }},")
        out.append(f"static const vx_ukernel_family {isa}_families[] = {{")
        out += fams
        out.append("};")
        w, regs = ISAS[isa]["w"], ISAS[isa]["regs"]
        out.append(f"static const vx_ukernel_set {isa}_set = {{ {order[isa]}, \"{isa}\", {w}, {regs}, "
                   f"(int)(sizeof {isa}_families / sizeof {isa}_families[0]), {isa}_families }};")
        out.append("")
    out.append("const vx_ukernel_set *vx_ukernels(vx_isa isa)")
    out.append("{")
    out.append("    return isa == VX_ISA_AVX512 ? &avx512_set : &avx2_set;")
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    ap = gencli.parser(__doc__, ISAS)
    ap.add_argument("--nr", type=int, help="with --isa: only the family with this nr (one file per family builds in parallel)")
    ap.add_argument("--list", action="store_true", help="print the tiles per ISA and exit")
    ap.add_argument("--families", action="store_true", help="print 'isa:nr' per family, one a line (for meson)")
    args = ap.parse_args()
    if args.list:
        for isa in ISAS:
            print(isa, " ".join(f"{mr}x{nr}" for nr, mr in tiles(isa)))
        return 0
    if args.families:
        for isa in ISAS:
            for nr, _ in tiles(isa):
                print(f"{isa}:{nr}")
        return 0
    if args.table:
        text = emit_table()
    elif args.isa:
        if args.nr is not None and args.nr not in [nr for nr, _ in tiles(args.isa)]:
            ap.error(f"{args.isa} has no family with nr={args.nr}")
        text = emit_isa(args.isa, args.nr)
    else:
        ap.error("give --isa, --table or --list")
    return gencli.write(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
