#!/usr/bin/env bash
# Build the benchmark runners (if needed) and run GEMM suites, one CSV and one
# log per suite under benchmarks/out/<date>-<commit>/ (benchmarks/out/ is
# gitignored; benchmarks/out/latest points at the newest run).
#
# usage: benchmarks/run.sh [options] [SUITE...] [-- vortex-bench-gemm args]
#   SUITE        square, bert, small, trans, a name with a file
#                benchmarks/suites/NAME.txt, or a path (default: square bert small)
#   --build-dir D  meson build directory (default: $VORTEX_BUILD_DIR or ./build)
#   --no-build     use the runner already built
#   --no-peak      skip the FMA peak measurement (default: measure, and pass
#                  --peak so tables show Vortex as % of peak)
#   -h, --help     this text
# Everything after `--` goes to vortex-bench-gemm (e.g. -- --threads 1 --quick).
# Environment: JOBS (ninja -j), MESON_ARGS (extra `meson setup` options when
# the build directory has to be created).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${VORTEX_BUILD_DIR:-$repo/build}
do_build=1
peak=1
suites=()
extra=()

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --build-dir) build=$2; shift 2 ;;
        --build-dir=*) build=${1#*=}; shift ;;
        --no-build) do_build=0; shift ;;
        --no-peak) peak=0; shift ;;
        --) shift; extra=("$@"); break ;;
        -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) suites+=("$1"); shift ;;
    esac
done
[ ${#suites[@]} -gt 0 ] || suites=(square bert small)
case "$build" in /*) ;; *) build=$PWD/$build ;; esac

if [ "$do_build" = 1 ]; then
    if [ ! -f "$build/build.ninja" ]; then
        # shellcheck disable=SC2086
        meson setup "$build" "$repo" --buildtype=release -Dbenchmarks=true ${MESON_ARGS:-}
    elif [ "$(meson introspect "$build" --buildoptions 2>/dev/null |
              python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="benchmarks"][0])' 2>/dev/null)" = "False" ]; then
        meson configure "$build" -Dbenchmarks=true
    fi
    ninja -C "$build" ${JOBS:+-j"$JOBS"} benchmarks/vortex-bench-gemm benchmarks/vortex-fma-peak
fi
bench=$build/benchmarks/vortex-bench-gemm
peakexe=$build/benchmarks/vortex-fma-peak
[ -x "$bench" ] || { echo "run.sh: $bench not built (drop --no-build?)" >&2; exit 2; }

rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo nogit)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then rev=$rev-dirty; fi
out=$here/out/$(date +%Y%m%d-%H%M%S)-$rev
mkdir -p "$out"
ln -sfn "$(basename "$out")" "$here/out/latest"

{
    echo "date:    $(date -Is)"
    echo "commit:  $(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
    echo "host:    $(uname -srm)"
    echo "args:    ${extra[*]:-}"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
    lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L[123]|Flags)' | cut -c1-200 || true
} > "$out/meta.txt"

if [ "$peak" = 1 ]; then
    echo "== vortex-fma-peak"
    "$peakexe" | tee "$out/fma_peak.txt"
    extra=(--peak "${extra[@]}")
fi

status=0
for s in "${suites[@]}"; do
    arg=$s
    case "$s" in
        square|bert|small|trans|all) ;;
        *) if [ -f "$here/suites/$s.txt" ]; then arg=$here/suites/$s.txt; fi ;;
    esac
    name=$(basename "$s" .txt)
    echo "== suite $name -> $out/$name.csv"
    set +e
    "$bench" --suite "$arg" --csv "$out/$name.csv" "${extra[@]}" 2>&1 | tee "$out/$name.txt"
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" != 0 ]; then
        echo "run.sh: suite $name exited with $rc" >&2
        status=$rc
    fi
done

# All suites in one file (one header).
first=1
for f in "$out"/*.csv; do
    [ -f "$f" ] || continue
    [ "$(basename "$f")" = all.csv ] && continue
    if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
done > "$out/all.csv"

echo "results: $out"
exit "$status"
