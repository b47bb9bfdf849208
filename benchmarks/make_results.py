#!/usr/bin/env python3
"""Regenerate the suite tables of benchmarks/RESULTS.md from run folders.

A run folder is what benchmarks/run.sh leaves (benchmarks/out/<run>/, copied
to benchmarks/results/<run>/ to keep it): meta.txt (date, commit, lscpu or
nvidia-smi lines) and one CSV per suite from any runner. For every folder
given, this script
  - writes the plots (speedup vs GFLOP per suite, baseline and mode, and the
    distribution of speedups) into <folder>/plots/ with plot_speedups.py, and
  - writes one Markdown section: the machine and date from meta.txt, the
    command, and per suite x baseline x mode the case count, geomean speedup
    (baseline time / Vortex time), share of cases above 1.0, min and max,
    and the three worst cases named;
then replaces the block between
    <!-- BEGIN generated suites -->  and  <!-- END generated suites -->
in RESULTS.md with those sections (the block is appended when missing).
Text outside the block (the explanations of where Vortex loses) is kept.

usage: make_results.py [--results FILE] [--no-plots] [--stdout] RUN_DIR [RUN_DIR ...]
"""
import argparse
import glob
import importlib.util
import math
import os
import re
import sys

BEGIN = '<!-- BEGIN generated suites -->'
END = '<!-- END generated suites -->'
HERE = os.path.dirname(os.path.abspath(__file__))


def load_plotter():
    spec = importlib.util.spec_from_file_location('plot_speedups', os.path.join(HERE, 'plot_speedups.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_meta(folder):
    meta = {}
    path = os.path.join(folder, 'meta.txt')
    if not os.path.exists(path):
        return meta
    with open(path) as f:
        for line in f:
            if ':' not in line:
                continue
            key, val = line.split(':', 1)
            meta[key.strip()] = val.strip()
    return meta


def machine(meta):
    """One line naming the machine: CPU model, cores, ISA; or the GPU."""
    if meta.get('gpu') or any(k.startswith('GPU 0') for k in meta):
        gpus = [k + ': ' + v for k, v in meta.items() if k.startswith('GPU ')]
        return '; '.join(gpus) or meta.get('gpu', 'GPU')
    model = meta.get('Model name', 'unknown CPU')
    cpus = meta.get('CPU(s)', '?')
    flags = (meta.get('isa', '') + ' ' + meta.get('Flags', '')).split()
    isa = 'AVX-512' if 'avx512f' in flags else ('AVX2' if 'avx2' in flags else 'ISA not recorded')
    return '%s, %s CPUs, %s' % (model, cpus, isa)


def fmt_cases(pts, n):
    worst = sorted(pts, key=lambda p: p[1])[:n]
    return ', '.join('%s %.2fx' % (p[2], p[1]) for p in worst)


def section(folder, plotter, plots, rel_to):
    meta = read_meta(folder)
    csvs = sorted(glob.glob(os.path.join(folder, '*.csv')))
    csvs = [c for c in csvs if os.path.basename(c) != 'all.csv']
    if not csvs:
        sys.exit('%s: no CSV files' % folder)
    groups = plotter.read_groups(csvs)
    if not groups:
        sys.exit('%s: no Vortex/baseline pairs in its CSVs' % folder)
    name = os.path.basename(os.path.normpath(folder))
    rel = os.path.relpath(folder, rel_to)
    lines = ['### %s' % name, '',
             '- machine: %s' % machine(meta),
             '- date: %s; commit %s' % (meta.get('date', '?'), meta.get('commit', '?')),
             '- suites: %s; runner args: %s' % (meta.get('suites', '?'), meta.get('args', '?') or '(none)'),
             '- data: `%s/*.csv` (one row per case and library)' % rel,
             '- speedup = baseline time / Vortex time per case (> 1: Vortex faster); '
             'geomean over the cases; worst three named', '',
             '| suite | baseline | mode | cases | geomean | > 1.0 | min | max | worst three |',
             '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |']
    allsp = []
    for (suite, lib, variant), pts in sorted(groups.items()):
        sp = [p[1] for p in pts]
        allsp.append((lib, variant, sp))
        geo = math.exp(sum(math.log(s) for s in sp) / len(sp))
        above = sum(1 for s in sp if s > 1.0)
        lines.append('| %s | %s | %s | %d | %.3fx | %d%% | %.2fx | %.2fx | %s |' % (
            suite, lib, variant, len(sp), geo, round(100.0 * above / len(sp)), min(sp), max(sp),
            fmt_cases(pts, 3)))
    # Over all suites, per baseline and mode: the one-line answer.
    lines += ['', '| all suites | baseline | mode | cases | geomean | > 1.0 |',
              '| --- | --- | --- | ---: | ---: | ---: |']
    totals = {}
    for lib, variant, sp in allsp:
        totals.setdefault((lib, variant), []).extend(sp)
    for (lib, variant), sp in sorted(totals.items()):
        geo = math.exp(sum(math.log(s) for s in sp) / len(sp))
        above = sum(1 for s in sp if s > 1.0)
        lines.append('| all | %s | %s | %d | %.3fx | %d%% |' % (lib, variant, len(sp), geo,
                                                               round(100.0 * above / len(sp))))
    if plots:
        files = plotter.plot(groups, os.path.join(folder, 'plots'), machine(meta).split(',')[0])
        dist = [f for f in files if f.endswith('distribution.png')]
        lines += ['', 'Plots: `%s/plots/` (speedup vs GFLOP per suite, baseline and mode; %d files).' % (
            rel, len(files))]
        for d in dist:
            lines += ['', '![distribution of speedups, %s](%s)' % (name, os.path.relpath(d, rel_to))]
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('runs', nargs='+', metavar='RUN_DIR')
    ap.add_argument('--results', default=os.path.join(HERE, 'RESULTS.md'),
                    help='the Markdown file to update (default %(default)s)')
    ap.add_argument('--no-plots', action='store_true', help='tables only')
    ap.add_argument('--stdout', action='store_true', help='print the block instead of writing the file')
    a = ap.parse_args()
    for r in a.runs:
        if not os.path.isdir(r):
            sys.exit('%s: not a folder' % r)
    plotter = load_plotter()
    rel_to = os.path.dirname(os.path.abspath(a.results))
    body = '\n\n'.join(section(os.path.abspath(r), plotter, not a.no_plots, rel_to) for r in a.runs)
    block = '%s\n<!-- generated by benchmarks/make_results.py %s; edit the CSVs\' runs, not this block -->\n\n%s\n\n%s' % (
        BEGIN, ' '.join(os.path.relpath(os.path.abspath(r), rel_to) for r in a.runs), body, END)
    if a.stdout:
        print(block)
        return
    text = open(a.results).read() if os.path.exists(a.results) else '# Results\n'
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + '.*?' + re.escape(END), lambda m: block, text, flags=re.S)
    else:
        text = text.rstrip('\n') + '\n\n## Benchmark suites (issue 6)\n\n' + block + '\n'
    tmp = a.results + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, a.results)
    print('updated %s from %s' % (a.results, ', '.join(a.runs)))


if __name__ == '__main__':
    main()
