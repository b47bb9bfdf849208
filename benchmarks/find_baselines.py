#!/usr/bin/env python3
"""Locate the optional GEMM baselines for benchmarks/meson.build.

oneDNN (include/dnnl.h + lib/libdnnl.so[.N]) and MKL (include/mkl.h +
lib/libmkl_rt.so[.N]) as the PyPI packages onednn-devel and mkl-devel install
them: under the Python prefix (sys.prefix; also tried: sys.base_prefix, the
user base of `pip install --user`, $CONDA_PREFIX). An explicit prefix (meson
options onednn_prefix / mkl_prefix) is the only one tried for that library;
'none' turns that baseline off.
Also reports oneDNN's CPU threading runtime (from dnnl_config.h) and the TBB
headers/library (PyPI tbb-devel, pulled in by mkl-devel) used to set oneDNN's
thread count when that runtime is TBB.

Prints key=value lines; prints nothing for what it does not find.
"""
import argparse
import glob
import os
import re
import site
import sys


def candidates(explicit):
    if explicit.lower() in ("none", "no", "off", "disabled"):
        return []
    if explicit:
        return [os.path.abspath(os.path.expanduser(explicit))]
    out = []
    for p in (sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None),
              os.environ.get("CONDA_PREFIX")):
        if p and p not in out:
            out.append(p)
    return out


def find_lib(libdir, name):
    """Path of lib<name>.so, else the highest lib<name>.so.N (PyPI mkl-devel
    ships only libmkl_rt.so.N)."""
    plain = os.path.join(libdir, "lib%s.so" % name)
    if os.path.exists(plain):
        return plain
    versioned = glob.glob(os.path.join(libdir, "lib%s.so.[0-9]*" % name))

    def key(p):
        return [int(x) for x in re.findall(r"\d+", p[len(plain):])]

    versioned.sort(key=key)
    return versioned[-1] if versioned else None


def find(prefixes, header, lib):
    for p in prefixes:
        inc = os.path.join(p, "include")
        for libdir in (os.path.join(p, "lib"), os.path.join(p, "lib64")):
            if not os.path.exists(os.path.join(inc, header)):
                continue
            path = find_lib(libdir, lib)
            if path:
                return p, inc, libdir, path
    return None


def dnnl_runtime(inc):
    for cfg in (os.path.join(inc, "oneapi", "dnnl", "dnnl_config.h"),
                os.path.join(inc, "dnnl_config.h")):
        try:
            text = open(cfg, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        m = re.search(r"#\s*define\s+DNNL_CPU_THREADING_RUNTIME\s+DNNL_RUNTIME_(\w+)", text)
        if m:
            return m.group(1)
    return "UNKNOWN"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onednn-prefix", default="")
    ap.add_argument("--mkl-prefix", default="")
    a = ap.parse_args()

    out = {}
    d = find(candidates(a.onednn_prefix), "dnnl.h", "dnnl")
    if d:
        out.update(onednn_prefix=d[0], onednn_inc=d[1], onednn_libdir=d[2], onednn_lib=d[3],
                   onednn_runtime=dnnl_runtime(d[1]))
    m = find(candidates(a.mkl_prefix), "mkl.h", "mkl_rt")
    if m:
        out.update(mkl_prefix=m[0], mkl_inc=m[1], mkl_libdir=m[2], mkl_lib=m[3])
    # TBB next to oneDNN first (the libtbb.so.12 it will load), then MKL's.
    tbb_prefixes = [x[0] for x in (d, m) if x]
    t = find(tbb_prefixes, os.path.join("oneapi", "tbb", "task_arena.h"), "tbb")
    if t:
        out.update(tbb_inc=t[1], tbb_libdir=t[2], tbb_lib=t[3])
    for k, v in out.items():
        if "=" not in v and "\n" not in v:  # meson splits each line on '='
            print("%s=%s" % (k, v))


if __name__ == "__main__":
    main()
