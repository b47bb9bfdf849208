#!/usr/bin/env python3
"""GPU kernel-instance candidates, generated bottom-up (DESIGN.md, Algorithm 2).

L0  warp tiles WM x WN:
    tensor: multiples of the mma shape (16 x 16 per ldmatrix.x4 pair), with
            the accumulators plus fragments inside the register file;
    simt:   a (WM/4) x (WN/8) FFMA tile per thread, each side a multiple of 4
            (4-element shared-memory vectors), registers inside the file.
L1  CTA tiles BM x BN x BK x STAGES: integer multiples of an L0 tile, with the
    threads, registers and shared memory a block may use on both sm_80 and
    sm_90 (so two blocks fit on an SM), and utilization bounds (enough warps to
    hide latency, not so large a tile that small M pads most of it away).
    The mapping table (which L0 tile each L1 candidate uses) is the instance
    itself: one L0 tile per L1 candidate, the one the rules prefer.
L2  the grid and split-K are chosen at call time by the wave model.

The skinny family (src/cuda/skinny_kernel.cuh) is a second L0/L1 pair for
few rows of C: MR rows x 64 columns (B N-contiguous) or x 16 columns (B
K-contiguous) per 128-thread block, B streamed from global memory into
registers, split-K reduced inside the kernel. One instance per MR in
SKINNY_ROWS, operand type and layout; the wave model weighs them against the
tiled family like any other candidate.

The Hopper family (src/cuda/wgmma_kernel.cuh, with --wgmma: the build
compiles it for sm_90a only) is a third L0/L1 pair for 16-bit operands: a
warpgroup's 64 x BN wgmma tile, CTAs of one or two warpgroups over BK = 64
tiles in the 128-byte-swizzled layout. One instance per tile in WG_TILES,
operand type and layout; on other devices the host finds no image for them
(occupancy 0) and never offers them.

Outputs (all at build time, from meson):
  --groups                 the group names, one per line (one .cu per group)
  --group G --out F.cu     the kernel table of group G
  --table --out F.h        declarations of every group's table
  --list                   the candidates, with the count kept at each stage
  --wgmma                  with the Hopper family (the build passes it when it
                           compiles for sm_90); every output must agree on it
"""
import argparse
import itertools
import sys

# Resource limits every instance must meet on sm_80 and sm_90.
REGS_PER_THREAD = 255
THREADS_OK = (64, 128, 256)
SMEM_PER_BLOCK = 96 * 1024          # <= half of sm_80's 164 KB per SM: two blocks fit
SMEM_STAGE_FOUR = 16 * 1024         # stages of at most this size get four stages, else three

DTYPES = {  # name: (C++ type, bytes, vx_dtype value)
    'f32': ('float', 4, 0),
    'f16': ('__half', 2, 1),
    'bf16': ('__nv_bfloat16', 2, 2),
}

# The families: (unit, operand dtype, tf32?, BK, CTA tiles BM x BN considered).
# The tile lists are the L1 shapes worth compiling (every instance costs build
# time: ~3 s per architecture): short-and-wide tiles for small M (the dynamic
# dimension of inference), square ones for large M. CUDA cores on 16-bit
# operands only matter for small M (the paper's adaptive mode, sec. 7.4).
TC_TILES = [(16, 64), (16, 128), (32, 128), (64, 64), (64, 128), (128, 128), (128, 256)]
# Tensor Core tiles come with two depths BK where both fit: the deeper one
# halves the barriers and loop overhead per flop (the mma.sync loop is
# issue-bound on small warp tiles), the shallower one splits K finer.
FAMILIES = [
    ('tc', 'f16', 0, (32, 64), TC_TILES),
    ('tc', 'bf16', 0, (32, 64), TC_TILES),
    ('tc', 'f32', 1, (16, 32), TC_TILES),
    ('simt', 'f32', 0, (16,), [(16, 64), (32, 64), (32, 128), (64, 64), (64, 128), (128, 128)]),
    ('simt', 'f16', 0, (32,), [(16, 64), (32, 128)]),
    ('simt', 'bf16', 0, (32,), [(16, 64), (32, 128)]),
]
LAYOUTS = [(ak, bk) for ak in (1, 0) for bk in (1, 0)]   # (A K-contiguous, B K-contiguous)

# The skinny family: rows of C per block, its geometry (SkinnyGeom in
# skinny_kernel.cuh) and the split-K granularity. MR up to 16 fits the
# register file, but on an H100 the family beat the tiled kernels only for
# one or two rows (f32 1.25x, 16-bit types 1.02x the time of the tiled plan
# at M <= 2; 0.85x-0.95x at M = 5..16), so only those are compiled
# (benchmarks/NOTES.md, GPU skinny family).
SKINNY_ROWS = (1, 2)
SKINNY_THREADS, SKINNY_WARPS, SKINNY_BK = 128, 4, 32
SKINNY_NB = {0: 64, 1: 16}        # B K-contiguous? -> columns per block
SKINNY_TN = {0: 8, 1: 4}          # columns per thread

# The Hopper family: CTA tiles BM x BN x STAGES (BM / 64 warpgroups; BN up to
# 256, the widest wgmma), BK = 64. Each tile comes with the stages that let two
# CTAs share an H100 SM (228 KB) and with a deep pipeline (~192 KB, one CTA
# per SM, 4-10 tiles in flight): with few K tiles per CTA the shallow kernels
# waited out a load round trip every tile or two (H100: 512 x 768 x 768 fp16
# on 64 x 64 tiles, 12 K tiles, ~350 ns per tile). The tuned wave times choose.
WG_TILES = [(64, 64, 4), (64, 64, 12), (64, 128, 4), (64, 128, 8), (128, 128, 3), (128, 128, 6), (128, 256, 3)]
# Cluster split-K entries (a kernel each: compiled into every kernel, the
# cluster epilogue slowed the plain one) for the tiles split-K serves.
WG_CLUSTER_TILES = [(64, 64, 4), (64, 64, 12), (64, 128, 4)]
WG_BK = 64
WG_SMEM_PER_BLOCK = 227 * 1024    # sm_90's opt-in limit per block


def l0_tiles(unit, dt):
    """Warp tiles the register file allows, with their register estimate."""
    out = []
    if unit == 'tc':
        for wm, wn in itertools.product((16, 32, 64), (16, 32, 64)):
            acc = wm * wn // 32                     # fp32 accumulators per thread
            frag = (wm // 16) * 4 + (wn // 8) * 2   # A and B fragments per k step
            regs = acc + frag + 40                  # + addresses, loop state
            if regs <= REGS_PER_THREAD:
                out.append((wm, wn, regs))
    else:
        for tm, tn in itertools.product((4, 8), (4, 8)):
            regs = tm * tn + 4 * (tm + tn) + 40     # accumulators + 4-deep A/B fragments
            if regs <= REGS_PER_THREAD:
                out.append((4 * tm, 8 * tn, regs))
    return out


def smem_bytes(dt, unit, ak, bkc, bm, bn, bk, stages):
    size = DTYPES[dt][1]
    pad16 = 16 // size
    pad_mn = 2 * pad16 if (size == 4 and unit == 'tc') else pad16
    a = bm * (bk + pad16) if ak else bk * (bm + pad_mn)
    b = bn * (bk + pad16) if bkc else bk * (bn + pad_mn)
    return stages * (a + b) * size


def l1_candidates(stats=None):
    """Every family's CTA tiles over every layout, filtered by the rules."""
    out = []
    for unit, dt, tf32, bks, tiles in FAMILIES:
        l0 = l0_tiles(unit, dt)
        if stats is not None:
            stats.setdefault('L0 warp tiles', 0)
            stats['L0 warp tiles'] += len(l0)
        for ak, bkc in LAYOUTS:
            for (bm, bn), bk in itertools.product(tiles, bks):
                options = []
                for wm, wn, regs in l0:
                    if bm % wm or bn % wn:
                        continue                           # not a multiple of the L0 tile
                    threads = (bm // wm) * (bn // wn) * 32
                    if threads not in THREADS_OK:
                        continue
                    stage = smem_bytes(dt, unit, ak, bkc, bm, bn, bk, 1)
                    stages = 4 if stage <= SMEM_STAGE_FOUR else 3
                    smem = stages * stage
                    if smem > SMEM_PER_BLOCK or regs * threads > 65536:
                        continue
                    options.append((wm, wn, threads, stages, smem))
                if stats is not None:
                    stats.setdefault('L1 tiles x warp tiles (fit)', 0)
                    stats['L1 tiles x warp tiles (fit)'] += len(options)
                if not options:
                    continue
                # Utilization: prefer 4 warps (latency hiding with room for two
                # blocks per SM), 8 for Tensor Core tiles of 128 x 128 and up
                # (4 warps of 64 x 64 need ~240 registers, so an SM held 4-8
                # warps and the mma.sync loop waited on latency: ncu on an
                # H100), then the larger warp tile (operand reuse).
                want = 256 if unit == 'tc' and bm * bn >= 128 * 128 else 128
                options.sort(key=lambda o: (abs(o[2] - want), -(o[0] * o[1])))
                wm, wn, threads, stages, smem = options[0]
                name = '%s_%s_%s%s_%dx%dx%d_w%dx%d_s%d' % (
                    unit if not tf32 else 'tc', 'tf32' if tf32 else dt, 'k' if ak else 'm', 'k' if bkc else 'n',
                    bm, bn, bk, wm, wn, stages)
                out.append(dict(name=name, unit=unit, dt=dt, tf32=tf32, ak=ak, bkc=bkc, bm=bm, bn=bn, bk=bk,
                                wm=wm, wn=wn, stages=stages, threads=threads, smem=smem))
    if stats is not None:
        stats['L1 instances kept'] = len(out)
    return out


def skinny_candidates():
    """The skinny family: every MR, operand type and layout."""
    out = []
    for dt in ('f32', 'f16', 'bf16'):
        for ak, bkc in LAYOUTS:
            for mr in SKINNY_ROWS:
                nb = SKINNY_NB[bkc]
                regs = mr * SKINNY_TN[bkc] + 48
                assert regs <= REGS_PER_THREAD
                name = 'skinny_%s_%s%s_%dx%dx%d' % (dt, 'k' if ak else 'm', 'k' if bkc else 'n', mr, nb, SKINNY_BK)
                out.append(dict(name=name, unit='skinny', dt=dt, tf32=0, ak=ak, bkc=bkc, bm=mr, bn=nb,
                                bk=SKINNY_BK, wm=mr, wn=SKINNY_TN[bkc], stages=1, threads=SKINNY_THREADS,
                                smem=SKINNY_WARPS * mr * nb * 4))
    return out


def wg_candidates():
    """The Hopper family: every tile, 16-bit operand type and layout."""
    out = []
    for dt in ('f16', 'bf16'):
        for ak, bkc in LAYOUTS:
            for bm, bn, stages in WG_TILES:
                stage = (bm + bn) * WG_BK * DTYPES[dt][1]
                smem = stages * stage + 1024          # + the slack that aligns stage 0 to 1024 bytes
                threads = bm // 64 * 128
                acc = bn // 2                          # fp32 accumulators per thread
                assert smem <= WG_SMEM_PER_BLOCK and acc + 40 <= REGS_PER_THREAD
                name = 'wg_%s_%s%s_%dx%dx%d_s%d' % (dt, 'k' if ak else 'm', 'k' if bkc else 'n', bm, bn, WG_BK,
                                                   stages)
                out.append(dict(name=name, unit='wg', dt=dt, tf32=0, ak=ak, bkc=bkc, bm=bm, bn=bn, bk=WG_BK,
                                wm=64, wn=bn, stages=stages, threads=threads, smem=smem, sm90a=1))
    return out


# Cluster split-K (sm_90): a second table entry for the small Tensor Core
# tiles, the same compiled kernel launched with its split-K slices as one
# thread-block cluster that adds the partial tiles in distributed shared
# memory (cluster_reduce_store in gemm_kernel.cuh): one launch instead of the
# kernel plus a reduction launch. Small tiles only (BM x BN <= CLUSTER_MAX_TILE):
# they are the ones split-K serves, and the partial tile must fit in the
# pipeline's shared memory. At most 8 slices, the portable cluster size
# (CLUSTER_MAX_SLICES in gemm_kernel.cuh, which the selection applies).
# The Hopper family's cluster entries are kernels of their own (WG_CLUSTER_*).
CLUSTER_MAX_TILE = 64 * 64


def cluster_candidates(tiled):
    out = []
    for c in tiled:
        if c['unit'] == 'wg':
            if (c['bm'], c['bn'], c['stages']) not in WG_CLUSTER_TILES:
                continue
        elif c['unit'] != 'tc' or c['bm'] * c['bn'] > CLUSTER_MAX_TILE:
            continue
        if c['bm'] * (c['bn'] + 4) * 4 > c['smem']:
            continue
        d = dict(c)
        d['name'] = c['name'] + '_cl'
        d['cluster'] = 1
        out.append(d)
    return out


WGMMA = False   # --wgmma: the Hopper family is part of the build


def all_candidates(stats=None):
    tiled = l1_candidates(stats)
    wg = wg_candidates() if WGMMA else []
    out = tiled + skinny_candidates() + cluster_candidates(tiled) + wg + cluster_candidates(wg)
    if stats is not None:
        stats['skinny instances'] = len(skinny_candidates())
        stats['cluster split-K entries (mma.sync: no extra kernel)'] = len(cluster_candidates(tiled))
        stats['cluster split-K entries (wgmma: a kernel each)'] = len(cluster_candidates(wg))
        stats['Hopper (wgmma, sm_90a) instances'] = len(wg)
        stats['table entries'] = len(out)
        stats['kernels compiled'] = len(tiled) + stats['skinny instances'] + len(wg) + len(cluster_candidates(wg))
    return out


def group_of(c):
    return '%s_%s_%s%s' % (c['unit'], 'tf32' if c['tf32'] else c['dt'], 'k' if c['ak'] else 'm',
                           'k' if c['bkc'] else 'n')


def groups():
    seen = []
    for c in all_candidates():
        g = group_of(c)
        if g not in seen:
            seen.append(g)
    return seen


def write_group(g, path):
    rows = [c for c in all_candidates() if group_of(c) == g]
    if not rows:
        sys.exit('unknown group %s' % g)
    hopper = rows[0]['unit'] == 'wg'
    headers = ['#include "cuda/wgmma_kernel.cuh"'] if hopper else ['#include "cuda/gemm_kernel.cuh"',
                                                                  '#include "cuda/skinny_kernel.cuh"']
    lines = ['// Generated by gen/gen_cuda_instances.py: kernel instances of group %s. Do not edit.' % g] + headers + [
             '', 'namespace vx {', '',
             'const KernelEntry *cuda_group_%s(int *count)' % g, '{', '    static const KernelEntry table[] = {']
    asserts = []
    for c in rows:
        ty = DTYPES[c['dt']][0]
        unit = 'UNIT_TENSOR' if c['unit'] in ('tc', 'wg') else 'UNIT_SIMT'
        ak, bkc = 'true' if c['ak'] else 'false', 'true' if c['bkc'] else 'false'
        if c['unit'] == 'wg':
            inst = 'WgInstance<%s, %s, %s, %d, %d, %d, %s>' % (ty, ak, bkc, c['bm'], c['bn'], c['stages'],
                                                               'true' if c.get('cluster') else 'false')
        elif c['unit'] == 'skinny':
            inst = 'SkinnyInstance<%s, %s, %s, %d>' % (ty, ak, bkc, c['bm'])
        else:
            inst = 'Instance<%s, %s, %s, %s, %d, %d, %d, %d, %d, %d>' % (
                ty, unit, ak, bkc, c['bm'], c['bn'], c['bk'], c['wm'], c['wn'], c['stages'])
        cl = c.get('cluster', 0)
        lines.append('        {"%s", %s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %s::THREADS, %s::SMEM, %s::func(), '
                     '&%s::%s, %d, %d, %d},' % (c['name'], unit, DTYPES[c['dt']][2], c['tf32'], c['ak'], c['bkc'],
                                                c['bm'], c['bn'], c['bk'], c['wm'], c['wn'], c['stages'], inst, inst,
                                                inst, inst, 'launch_cluster' if cl else 'launch',
                                                1 if c['unit'] == 'skinny' or cl else 0, cl, c.get('sm90a', 0)))
        if c['unit'] == 'wg':
            asserts.append('    static_assert(%s::SMEM == %d, "%s: the generator\'s shared-memory size");'
                           % (inst, c['smem'], c['name']))
        if cl:
            asserts.append('    static_assert(%s::CLUSTER_FITS, "%s: the partial tile must fit in shared memory");'
                           % (inst, c['name']))
    lines += ['    };'] + asserts + ['    *count = (int)(sizeof table / sizeof table[0]);', '    return table;', '}', '',
              '} // namespace vx', '']
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def write_table(path):
    gs = groups()
    lines = ['// Generated by gen/gen_cuda_instances.py: every group of kernel instances. Do not edit.',
             '#pragma once', '#include "cuda/gemm_kernel.cuh"', '', 'namespace vx {']
    lines += ['const KernelEntry *cuda_group_%s(int *count);' % g for g in gs]
    lines += ['', 'typedef const KernelEntry *(*GroupFn)(int *count);',
              'static const GroupFn cuda_groups[] = {']
    lines += ['    cuda_group_%s,' % g for g in gs]
    lines += ['};', 'static const int cuda_group_count = %d;' % len(gs), '', '} // namespace vx', '']
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--groups', action='store_true')
    ap.add_argument('--group')
    ap.add_argument('--table', action='store_true')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--out')
    ap.add_argument('--wgmma', action='store_true')
    a = ap.parse_args()
    global WGMMA
    WGMMA = a.wgmma
    if a.groups:
        print('\n'.join(groups()))
    elif a.group:
        write_group(a.group, a.out)
    elif a.table:
        write_table(a.out)
    elif a.list:
        stats = {}
        cands = all_candidates(stats)
        for c in cands:
            print('%-36s threads %3d smem %6d' % (c['name'], c['threads'], c['smem']))
        for k, v in stats.items():
            print('%s: %d' % (k, v))
    else:
        ap.print_help()


if __name__ == '__main__':
    main()
