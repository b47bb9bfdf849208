#!/usr/bin/env bash
# One command for the benchmark suites: builds the runners (if needed), runs
# each suite against every baseline the build found, and leaves one CSV and
# one log per suite, plots and a Markdown summary under
# benchmarks/out/<date>-<commit>/ (benchmarks/out/ is gitignored;
# benchmarks/out/latest points at the newest run).
#
# usage: benchmarks/run.sh [options] [SUITE...] [-- runner args]
#   SUITE          a GEMM suite: square, bert, small, trans (built in) or NAME
#                  with a file benchmarks/suites/NAME.txt (deepbench,
#                  transformer, cnn_fc, gnn, dietcode_bert, tscompiler_bert,
#                  tall_skinny);
#                  a conv2d suite: conv/NAME, built in (conv/resnet50,
#                  conv/cnn-random, conv/mobilenet-dw, conv/small) or with a
#                  file benchmarks/suites/conv/NAME.txt (conv/deepbench,
#                  conv/cnn);
#                  or a path to a suite file (GEMM format).
#                  Default: square bert small. 'paper' = every suite of
#                  issue 6: deepbench transformer cnn_fc gnn dietcode_bert
#                  tscompiler_bert conv/deepbench conv/cnn; without runner
#                  args (and without --quick) it runs them on the full
#                  run's budget, --target-seconds 0.2 --case-seconds 3
#                  --passes 3 --min-reps 2 (on the 2-core AMD guest of
#                  RESULTS.md: 84 minutes, measured suite by suite, on a
#                  day it ran 2.5x slower than on 2026-11-23, so an
#                  estimated 34 minutes at that day's speed; NOTES.md has
#                  the timings; on the AVX-512 Zen 4 guest, 2026-11-28,
#                  with two passes: 39 minutes with conv/cnn cut at 8, and
#                  8 more for conv/cnn's NHWC half)
#   --quick        the deterministic --quick subset of each suite, less time
#                  per case (all of 'paper' in about 5 minutes on 2 cores)
#   --mode M       steady, dynamic or both (default both)
#   --gpu          GEMM suites on the GPU against cuBLAS
#                  (vortex-bench-gemm-cuda, f32/tf32/f16/bf16); conv suites
#                  are refused (Vortex has no GPU convolution yet)
#   --build-dir D  meson build directory (default: $VORTEX_BUILD_DIR or ./build)
#   --no-build     use the runners already built
#   --no-peak      skip the FMA peak measurement (default: measure, and pass
#                  --peak so GEMM tables show Vortex as % of peak)
#   --no-plots     skip plot_speedups.py (needs numpy + matplotlib)
#   -h, --help     this text
# Everything after `--` goes to every runner (e.g. -- --threads 1).
# Environment: JOBS (ninja -j), MESON_ARGS (extra `meson setup` options when
# the build directory has to be created).
# benchmarks/make_results.py turns a finished run into RESULTS.md's tables.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${VORTEX_BUILD_DIR:-$repo/build}
do_build=1
peak=1
plots=1
gpu=0
quick=()
mode=both
suites=()
extra=()
paper_asked=0
paper=(deepbench transformer cnn_fc gnn dietcode_bert tscompiler_bert conv/deepbench conv/cnn)

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "run.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build=$2; shift 2 ;;
        --build-dir=*) build=${1#*=}; shift ;;
        --no-build) do_build=0; shift ;;
        --no-peak) peak=0; shift ;;
        --no-plots) plots=0; shift ;;
        --gpu) gpu=1; shift ;;
        --quick) quick=(--quick); shift ;;
        --mode) [ $# -ge 2 ] || die "--mode needs a value"; mode=$2; shift 2 ;;
        --mode=*) mode=${1#*=}; shift ;;
        --) shift; extra=("$@"); break ;;
        -*) die "unknown option $1 (see --help)" ;;
        paper) suites+=("${paper[@]}"); paper_asked=1; shift ;;
        *) suites+=("$1"); shift ;;
    esac
done
case "$mode" in steady|dynamic|both) ;; *) die "--mode takes steady, dynamic or both" ;; esac
[ ${#suites[@]} -gt 0 ] || suites=(square bert small)
# The full run's budget: the runners' own defaults (0.25-0.5 s per library
# and case, 5 passes) took 92 minutes for all eight suites on 2026-11-23.
# Three dynamic passes, not two: the median of two is their mean, and one
# pass that met a stall of the guest (1-2 ms) put Vortex at 0.10-0.33x of
# oneDNN on cases where nine passes read 1.5-2.0x (2026-11-28, RESULTS.md).
if [ "$paper_asked" = 1 ] && [ ${#extra[@]} -eq 0 ] && [ ${#quick[@]} -eq 0 ]; then
    extra=(--target-seconds 0.2 --case-seconds 3 --passes 3 --min-reps 2)
    echo "run.sh: paper suites on the full run's budget: ${extra[*]} (pass runner args after -- to change it)"
fi
case "$build" in /*) ;; *) build=$PWD/$build ;; esac

# Resolve every suite to "kind<TAB>runner argument<TAB>name" before building,
# so a typo fails in a second, not after the build.
plan=()
for s in "${suites[@]}"; do
    case "$s" in
        conv/resnet50|conv/cnn-random|conv/mobilenet-dw|conv/small)
            plan+=("conv	${s#conv/}	conv-${s#conv/}") ;;
        conv/*)
            f=$here/suites/$s.txt
            [ -f "$f" ] || die "no conv suite $s (no file $f)"
            plan+=("conv	$f	conv-${s#conv/}") ;;
        square|bert|small|trans|all)
            plan+=("gemm	$s	$s") ;;
        *)
            if [ -f "$here/suites/$s.txt" ]; then
                plan+=("gemm	$here/suites/$s.txt	$s")
            elif [ -f "$s" ]; then
                plan+=("gemm	$(cd "$(dirname "$s")" && pwd)/$(basename "$s")	$(basename "$s" .txt)")
            else
                die "unknown suite '$s' (see --help; files live in benchmarks/suites/)"
            fi ;;
    esac
done
if [ "$gpu" = 1 ]; then
    for p in "${plan[@]}"; do
        [ "${p%%	*}" = gemm ] || die "--gpu: ${p##*	} is a conv2d suite, and Vortex has no GPU convolution yet"
    done
fi

if [ "$do_build" = 1 ]; then
    if [ ! -f "$build/build.ninja" ]; then
        # shellcheck disable=SC2086
        meson setup "$build" "$repo" --buildtype=release -Dbenchmarks=true ${MESON_ARGS:-}
    elif [ "$(meson introspect "$build" --buildoptions 2>/dev/null |
              python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="benchmarks"][0])' 2>/dev/null)" = "False" ]; then
        meson configure "$build" -Dbenchmarks=true
    fi
    if [ "$gpu" = 1 ]; then
        targets=(benchmarks/vortex-bench-gemm-cuda)
    else
        targets=(benchmarks/vortex-bench-gemm benchmarks/vortex-bench-conv benchmarks/vortex-fma-peak)
    fi
    ninja -C "$build" ${JOBS:+-j"$JOBS"} "${targets[@]}"
fi
gemm_bench=$build/benchmarks/vortex-bench-gemm
conv_bench=$build/benchmarks/vortex-bench-conv
gpu_bench=$build/benchmarks/vortex-bench-gemm-cuda
peakexe=$build/benchmarks/vortex-fma-peak
if [ "$gpu" = 1 ]; then
    [ -x "$gpu_bench" ] || die "$gpu_bench not built (needs nvcc and cuBLAS at build time)"
else
    for x in "$gemm_bench" "$conv_bench"; do
        [ -x "$x" ] || die "$x not built (drop --no-build?)"
    done
fi

rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo nogit)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then rev=$rev-dirty; fi
out=$here/out/$(date +%Y%m%d-%H%M%S)-$rev
mkdir -p "$out"
ln -sfn "$(basename "$out")" "$here/out/latest"

{
    echo "date:    $(date -Is)"
    echo "commit:  $(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
    echo "host:    $(uname -srm)"
    echo "suites:  ${suites[*]}"
    echo "args:    ${quick[*]:-} --mode $mode ${extra[*]:-}"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
    lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L[123])' || true
    echo "isa:     $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' |
                     grep -E '^(avx2|fma|avx512f|avx512bw|avx512vl|avx512_bf16|avx512_fp16|amx_tile)$' |
                     tr '\n' ' ')"
    if [ "$gpu" = 1 ]; then nvidia-smi -L 2>/dev/null || echo "gpu:     none visible"; fi
} > "$out/meta.txt"

gemm_extra=()
if [ "$peak" = 1 ] && [ "$gpu" = 0 ]; then
    echo "== vortex-fma-peak"
    "$peakexe" | tee "$out/fma_peak.txt"
    gemm_extra=(--peak)
fi

status=0
t0=$(date +%s)
i=0
for p in "${plan[@]}"; do
    i=$((i + 1))
    IFS='	' read -r kind arg name <<< "$p"
    echo "== [$i/${#plan[@]}] $name ($kind) -> $out/$name.csv   ($(( $(date +%s) - t0 )) s so far)"
    if [ "$gpu" = 1 ]; then
        cmd=("$gpu_bench" --suite "$arg")
    elif [ "$kind" = conv ]; then
        cmd=("$conv_bench" --suite "$arg" --mode "$mode")
    else
        cmd=("$gemm_bench" --suite "$arg" --mode "$mode" "${gemm_extra[@]}")
    fi
    set +e
    "${cmd[@]}" "${quick[@]}" --csv "$out/$name.csv" "${extra[@]}" 2>&1 | tee "$out/$name.txt"
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" != 0 ]; then
        echo "run.sh: suite $name exited with $rc" >&2
        status=$rc
    fi
done
echo "== all suites done in $(( $(date +%s) - t0 )) s"

csvs=()
for f in "$out"/*.csv; do [ -f "$f" ] && csvs+=("$f"); done
if [ ${#csvs[@]} -gt 0 ]; then
    popt=(--out "$out/plots" --title "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)")
    [ "$plots" = 1 ] || popt+=(--no-plots)
    if python3 "$here/plot_speedups.py" "${popt[@]}" "${csvs[@]}" > "$out/summary.md"; then
        cat "$out/summary.md"
    else
        echo "run.sh: plot_speedups.py failed (numpy/matplotlib missing? --no-plots skips the plots)" >&2
    fi
fi
echo "results: $out"
exit "$status"
