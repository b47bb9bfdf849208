#!/usr/bin/env python3
"""Writes wgmma_ops.h for wgmma_test.cu: the m64n128k16 wgmma wrappers (64 accumulator operands)."""
regs = ', '.join('%%%d' % i for i in range(64))
outs = ', '.join('"+f"(d[%d])' % i for i in range(64))
out = ['#pragma once', '#include <stdint.h>']
for name, ptx in (('f16', 'f16'), ('bf16', 'bf16')):
    out.append('''template <int TB> __device__ __forceinline__ void wgmma_n128_%s(float (&d)[64], uint64_t da, uint64_t db, int scale_d)
{
    asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %%66, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.%s.%s {%s}, %%64, %%65, p, 1, 1, 0, %%67;\\n}\\n"
                 : %s
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
}''' % (name, ptx, ptx, regs, outs))
open('wgmma_ops.h', 'w').write('\n'.join(out) + '\n')
