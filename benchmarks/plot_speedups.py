#!/usr/bin/env python3
"""Plots and a Markdown summary from the benchmark runners' CSVs.

Reads any mix of the three CSV formats the runners write:
  vortex-bench-gemm       (suite,case,m,n,k,[op,]library,mode,...,time_us,...;
                           mode is steady/dynamic, or op(A)op(B) in CSVs
                           written before the dynamic mode existed)
  vortex-bench-conv       (suite,case,layout,mode,...,gflop,library,time_us,...;
                           its suites are shown as conv/<suite>)
  vortex-bench-gemm-cuda  (suite,dtype,mode,m,n,k,vortex_us,cublas_us,speedup,...
                           [,op,case]: cases are named by the case column
                           where there is one, else MxNxK)
and, per suite x baseline x variant (layout / mode / dtype), writes
  speedup-<group>.png   speedup (baseline time / Vortex time) against the
                        problem's GFLOP, log-log, like the paper's Fig. 12
  distribution.png      the sorted speedups of every group (share above 1.0)
and prints a Markdown table: cases, geomean, share > 1.0, min and max with
the worst cases named. Needs numpy and matplotlib (PyPI).

usage: plot_speedups.py [--out DIR] [--title TEXT] CSV [CSV ...]
"""
import argparse
import collections
import csv
import math
import os
import sys


def gemm_gflop(m, n, k):
    return 2.0 * float(m) * float(n) * float(k) * 1e-9


def read_groups(paths):
    """{(suite, baseline, variant): [(gflop, speedup, case name), ...]}"""
    groups = collections.defaultdict(list)
    for path in paths:
        with open(path, newline='') as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        cols = rows[0].keys()
        if 'cublas_us' in cols:                                   # GPU GEMM
            for r in rows:
                if (r.get('status') or 'ok').startswith('ok') and float(r['vortex_us']) > 0:
                    variant = r['dtype'] + ('' if r['mode'] == 'auto' else '-' + r['mode'])
                    # the case column (newer CSVs) names the case; older ones: MxNxK
                    case = r.get('case') or '%sx%sx%s' % (r['m'], r['n'], r['k'])
                    groups[(r['suite'], 'cuBLAS', variant)].append(
                        (gemm_gflop(r['m'], r['n'], r['k']), float(r['cublas_us']) / float(r['vortex_us']),
                         case))
        elif 'library' in cols:                                   # CPU GEMM or conv
            conv = 'layout' in cols
            by_case = collections.defaultdict(dict)
            for r in rows:
                variant = (r['layout'] + '-' + r['mode']) if conv else r['mode']
                suite = ('conv/' + r['suite']) if conv else r['suite']
                by_case[(suite, r['case'], variant)][r['library']] = r
            for (suite, case, variant), libs in by_case.items():
                v = libs.get('vortex')
                if not v or float(v['time_us']) <= 0:
                    continue
                gf = float(v['gflop']) if conv else gemm_gflop(v['m'], v['n'], v['k'])
                for lib, r in libs.items():
                    if lib != 'vortex' and float(r['time_us']) > 0:
                        groups[(suite, lib, variant)].append((gf, float(r['time_us']) / float(v['time_us']), case))
        else:
            sys.exit('%s: not a CSV any runner writes (columns: %s)' % (path, ', '.join(cols)))
    return groups


def summary(groups):
    lines = ['| suite | baseline | variant | cases | geomean | > 1.0 | min (case) | max (case) |',
             '| --- | --- | --- | --- | --- | --- | --- | --- |']
    for (suite, lib, variant), pts in sorted(groups.items()):
        sp = [p[1] for p in pts]
        geo = math.exp(sum(math.log(s) for s in sp) / len(sp))
        lo = min(pts, key=lambda p: p[1])
        hi = max(pts, key=lambda p: p[1])
        above = sum(1 for s in sp if s > 1.0)
        lines.append('| %s | %s | %s | %d | %.3fx | %d/%d (%.0f %%) | %.2fx (%s) | %.2fx (%s) |' % (
            suite, lib, variant, len(sp), geo, above, len(sp), 100.0 * above / len(sp), lo[1], lo[2], hi[1], hi[2]))
    return '\n'.join(lines)


def safe(name):
    return ''.join(c if c.isalnum() or c in '-_.' else '_' for c in name)


def plot(groups, out, title):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    os.makedirs(out, exist_ok=True)
    written = []
    for (suite, lib, variant), pts in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14)
        ax.axhline(1.0, color='grey', lw=1, ls='--')
        ax.set_xscale('log')
        ax.set_yscale('log')
        ax.set_xlabel('GFLOP per call')
        ax.set_ylabel('speedup over %s (%s time / Vortex time)' % (lib, lib))
        ax.set_title('%s%s: %s, %s' % (title + ' ' if title else '', suite, variant, lib), fontsize=10)
        fig.tight_layout()
        path = os.path.join(out, 'speedup-%s-%s-%s.png' % (safe(suite), safe(lib), safe(variant)))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (suite, lib, variant), pts in sorted(groups.items()):
        sp = sorted(p[1] for p in pts)
        ax.plot([i / max(1, len(sp) - 1) for i in range(len(sp))], sp, label='%s %s vs %s' % (suite, variant, lib))
    ax.axhline(1.0, color='grey', lw=1, ls='--')
    ax.set_yscale('log')
    ax.set_xlabel('fraction of cases (sorted)')
    ax.set_ylabel('speedup (baseline time / Vortex time)')
    ax.set_title((title + ': ' if title else '') + 'distribution of speedups', fontsize=10)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = os.path.join(out, 'distribution.png')
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('csv', nargs='+')
    ap.add_argument('--out', default='benchmarks/out/plots', help='folder for the PNGs (default %(default)s)')
    ap.add_argument('--title', default='', help='a prefix for the plot titles (the machine, say)')
    ap.add_argument('--no-plots', action='store_true', help='only the Markdown table')
    a = ap.parse_args()
    groups = read_groups(a.csv)
    if not groups:
        sys.exit('no Vortex/baseline pairs in %s' % ', '.join(a.csv))
    print(summary(groups))
    if not a.no_plots:
        try:
            files = plot(groups, a.out, a.title)
        except ImportError as e:
            sys.exit('plots need matplotlib (pip install matplotlib): %s' % e)
        print('\n%d plots in %s' % (len(files), a.out))


if __name__ == '__main__':
    main()
