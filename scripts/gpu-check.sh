#!/usr/bin/env bash
# One command for a GPU machine: builds a release Vortex with the CUDA backend
# in build-gpu, runs the GPU tests (test_cuda_gemm, test_gemm_ex), the GPU
# tuning (vortex-install-tune), vortex-bench-gemm-cuda (transformer suite in
# f32, tf32, f16, bf16, and the adaptive suite) against cuBLAS, then
# compute-sanitizer memcheck and racecheck over test_cuda_gemm.
# Ends with a table: each step OK/FAIL with its counts, and the geomeans.
#
# usage: scripts/gpu-check.sh [--quick] [--no-sanitizer] [--no-bench] [--wgmma]
#                              [--suites LIST] [--help]
#   --quick         small benchmark suites (small, adaptive --quick), quick
#                   tuning, no sanitizer
#   --no-sanitizer  skip the compute-sanitizer runs
#   --no-bench      skip the benchmarks
#   --wgmma         weigh the Hopper (wgmma) family: test_cuda_gemm, the
#                   transformer and adaptive suites in f16/bf16 (and the
#                   --suites) again without it (VORTEX_CUDA_WGMMA=0), and
#                   vortex-oracle-cuda (the model's picks against the
#                   fastest of its best plans)
#   --suites LIST   comma list of suite files (benchmarks/suites/NAME.txt or
#                   paths) benchmarked after the built-in suites, all four
#                   types, each file an equal share of the step's time
#                   (with --wgmma, f16/bf16 once more without the family)
#
# Order: build, tests, tuning, benchmarks, then the sanitizers (slowest).
# Logs go to $OUT if set, else benchmarks/out/gpu-YYYY-MM-DD: build.log
# tests.log sanitizer.log tune.log tune.json bench.log bench.csv summary.txt,
# and with --wgmma / --suites also bench-no-wgmma.{log,csv} oracle.{log,csv}
# oracle-plans.csv suites.{log,csv} suites-no-wgmma.csv (pack them: a lent
# machine returns 8 files). Every step has a timeout and the whole run
# stays within GPU_CHECK_SECONDS (default 520 s): steps that no longer fit
# are skipped, the least important first (racecheck, the tuning, then the
# oracle and the suite files; memcheck keeps a minute).
# GPU_CHECK_ARCHS (say 90) builds for those architectures alone. A .devdeps
# folder (scripts/gpu-deps-bundle.sh) supplies jansson, hwloc and Criterion
# where the machine lacks them. Exit status 0 when every step passed (the
# tuning may fail without failing the run), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

quick=0 sanitizer=1 bench=1 wgmma=0 suites=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; sanitizer=0 ;;
    --no-sanitizer) sanitizer=0 ;;
    --no-bench) bench=0 ;;
    --wgmma) wgmma=1 ;;
    --suites)
      [ $# -ge 2 ] || { echo "gpu-check: --suites needs a list (see --help)" >&2; exit 2; }
      suites=$2; shift ;;
    -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# Suite names -> files, checked before any device time is spent.
suite_files=""
if [ -n "$suites" ]; then
  IFS=, read -r -a names <<<"$suites"
  for nm in "${names[@]}"; do
    f=$nm; [ -f "$f" ] || f=benchmarks/suites/$nm.txt
    [ -f "$f" ] || { echo "gpu-check: no suite file '$nm' (nor $f)" >&2; exit 2; }
    suite_files="${suite_files:+$suite_files,}$f"
  done
fi

T0=$SECONDS
BUDGET=${GPU_CHECK_SECONDS:-520}
LOGDIR=${OUT:-benchmarks/out/gpu-$(date +%F)}
if ! mkdir -p "$LOGDIR" || ! LOGDIR=$(cd "$LOGDIR" && pwd); then
  echo "gpu-check: cannot create $LOGDIR" >&2; exit 1
fi
BUILD=build-gpu
JOBS=$(nproc)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for f in build.log tests.log sanitizer.log tune.log tune.json bench.log bench.csv summary.txt \
         bench-no-wgmma.log bench-no-wgmma.csv oracle.log oracle.csv oracle-plans.csv suites.log suites.csv suites-no-wgmma.csv; do
  rm -f "$LOGDIR/$f"
done

# ---- environment --------------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1; then
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && { export PATH="$d/bin:$PATH"; break; }
  done
fi
cuda_home=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
[ -d "$cuda_home/lib64" ] && export LD_LIBRARY_PATH="$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# .devdeps (scripts/gpu-deps-bundle.sh): its .pc files say @BUNDLE@ for their
# prefix; fixed copies go to a stable place (meson may re-run pkg-config when
# it regenerates the build later).
devdeps_note=""
if [ -d .devdeps ]; then
  dd=$(cd .devdeps && pwd)
  pcdir=${TMPDIR:-/tmp}/vortex-gpu-check-pkgconfig-$(id -u)
  rm -rf "$pcdir" && mkdir -p "$pcdir"
  for pc in "$dd"/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed "s|@BUNDLE@|$dd|g" "$pc" >"$pcdir/$(basename "$pc")"
  done
  export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$dd/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CPATH="$dd/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$dd/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  devdeps_note="using .devdeps (pkg-config files in $pcdir)"
fi

sanitizer_bin=""
if [ $sanitizer = 1 ]; then
  sanitizer_bin=$(command -v compute-sanitizer 2>/dev/null || true)
  [ -z "$sanitizer_bin" ] && [ -x "$cuda_home/bin/compute-sanitizer" ] && sanitizer_bin=$cuda_home/bin/compute-sanitizer
  [ -z "$sanitizer_bin" ] && [ -x "$cuda_home/compute-sanitizer/compute-sanitizer" ] &&
    sanitizer_bin=$cuda_home/compute-sanitizer/compute-sanitizer
fi

# ---- time budget ----------------------------------------------------------------
# Each step may take up to its cap, minus the minimum time of the later steps
# that matter at least as much (priority 0 most). A step left with less than
# its minimum is skipped.
steps=(configure build test_cuda_gemm test_gemm_ex test_no_wgmma tune bench bench_no_wgmma oracle
       suites memcheck racecheck)
declare -A CAP=([configure]=120 [build]=420 [test_cuda_gemm]=150 [test_gemm_ex]=90
                [test_no_wgmma]=150 [tune]=60 [bench]=240 [bench_no_wgmma]=120 [oracle]=120
                [suites]=240 [memcheck]=150 [racecheck]=180)
declare -A MIN=([configure]=10 [build]=60 [test_cuda_gemm]=20 [test_gemm_ex]=10
                [test_no_wgmma]=20 [tune]=10 [bench]=45 [bench_no_wgmma]=30 [oracle]=30
                [suites]=45 [memcheck]=60 [racecheck]=30)
declare -A PRIO=([configure]=0 [build]=0 [test_cuda_gemm]=1 [test_gemm_ex]=1
                 [test_no_wgmma]=1 [tune]=4 [bench]=2 [bench_no_wgmma]=2 [oracle]=3
                 [suites]=3 [memcheck]=2 [racecheck]=5)
on_suites=0; [ "$bench" = 1 ] && [ -n "$suite_files" ] && on_suites=1
declare -A ON=([configure]=1 [build]=1 [test_cuda_gemm]=1 [test_gemm_ex]=1
               [test_no_wgmma]=$wgmma [tune]=1 [bench]=$bench [bench_no_wgmma]=$((bench & wgmma))
               [oracle]=$((bench & wgmma)) [suites]=$on_suites
               [memcheck]=$sanitizer [racecheck]=$sanitizer)
if [ $quick = 1 ]; then CAP[tune]=30; CAP[bench]=90; fi

step_seconds() { # step -> seconds it may take
  local step=$1 after=0 reserve=0 s t
  for s in "${steps[@]}"; do
    if [ "$s" = "$step" ]; then after=1; continue; fi
    [ $after = 1 ] && [ "${ON[$s]}" = 1 ] && [ "${PRIO[$s]}" -le "${PRIO[$step]}" ] && reserve=$((reserve + MIN[$s]))
  done
  t=$((BUDGET - (SECONDS - T0) - reserve))
  [ $t -gt "${CAP[$step]}" ] && t=${CAP[$step]}
  echo "$t"
}

declare -A STATUS DETAIL TOOK
record() { STATUS[$1]=$2; DETAIL[$1]=$3; }
fits() { # step -> 0 and sets $lim when the step has time, else records a SKIP
  lim=$(step_seconds "$1")
  if [ "$lim" -lt "${MIN[$1]}" ]; then
    record "$1" SKIP "no time left (${lim}s of the ${BUDGET}s budget)"; return 1
  fi
  echo "== $1 (timeout ${lim}s) =="
  return 0
}
rc_word() { case $1 in 0) echo OK ;; 124|137) echo TIMEOUT ;; *) echo FAIL ;; esac; }

# Criterion's "Synthesis" line of log $1 -> counts="tested T, passed P, ...";
# crit_bad=1 when a test failed or crashed, none ran, or there is no summary.
criterion_counts() {
  local line t p f c s
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$1" | grep 'Synthesis' | tail -1)
  if [ -z "$line" ]; then crit_bad=1; counts="no Criterion summary"; return; fi
  t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$line")
  p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
  f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
  c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
  s=$(grep -c '^\[SKIP\] ' "$1")
  crit_bad=$(( ${f:-1} + ${c:-0} > 0 || ${t:-0} == 0 ? 1 : 0 ))
  counts="tested ${t:-?}, passed ${p:-?}, failed ${f:-?}, crashed ${c:-?}, skipped $s"
  [ "${t:-0}" = 0 ] && counts="$counts: no test ran (no device visible?)"
}

header() {
  echo "gpu-check: $(date '+%F %T'), $(hostname), budget ${BUDGET}s, logs in $LOGDIR"
  command -v nvidia-smi >/dev/null 2>&1 &&
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "compute-sanitizer: ${sanitizer_bin:-not used}"
  [ -n "$devdeps_note" ] && echo "$devdeps_note"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
}
header | tee "$LOGDIR/summary.txt.tmp"

# ---- 1. configure and build --------------------------------------------------------
built=0
opts=(-Dbuildtype=release -Dcuda=enabled -Dbenchmarks=true)
[ -n "${GPU_CHECK_ARCHS:-}" ] && opts+=("-Dgpu_archs=$GPU_CHECK_ARCHS")
if fits configure; then
  t0=$SECONDS
  {
    if [ -f "$BUILD/build.ninja" ]; then
      timeout -k 10 "$lim" meson configure "$BUILD" "${opts[@]}" ||
        timeout -k 10 "$lim" meson setup --wipe "$BUILD" "${opts[@]}"
    else
      timeout -k 10 "$lim" meson setup "$BUILD" "${opts[@]}"
    fi
  } >"$LOGDIR/build.log" 2>&1
  rc=$?
  TOOK[configure]=$((SECONDS - t0))
  if [ $rc = 0 ]; then
    record configure OK "$(grep -m1 'CUDA backend' "$LOGDIR/build.log" | sed 's/^ *//')"
  else
    record configure "$(rc_word $rc)" "exit $rc, see build.log"; tail -30 "$LOGDIR/build.log"
  fi
fi
if [ "${STATUS[configure]:-}" = OK ] && fits build; then
  t0=$SECONDS
  timeout -k 10 "$lim" ninja -C "$BUILD" -j "$JOBS" >>"$LOGDIR/build.log" 2>&1
  rc=$?
  TOOK[build]=$((SECONDS - t0))
  warnings=$(grep -c 'warning:' "$LOGDIR/build.log")
  if [ $rc = 0 ]; then
    built=1; record build OK "$warnings compiler warnings, -j$JOBS"
  else
    record build "$(rc_word $rc)" "exit $rc, $warnings compiler warnings, see build.log"
    grep -E 'error|FAILED' "$LOGDIR/build.log" | head -20
  fi
fi
[ -n "${STATUS[build]:-}" ] || record build SKIP "configure failed"

# ---- 2. tests (test_no_wgmma: test_cuda_gemm with the Hopper family off) -------------
: >"$LOGDIR/tests.log"
for t in test_cuda_gemm test_gemm_ex test_no_wgmma; do
  [ "${ON[$t]}" = 1 ] || continue
  exe=$BUILD/tests/$t env=()
  [ $t = test_no_wgmma ] && { exe=$BUILD/tests/test_cuda_gemm; env=(VORTEX_CUDA_WGMMA=0); }
  if [ $built = 0 ]; then record $t SKIP "no build"; continue; fi
  if [ ! -x "$exe" ]; then record $t FAIL "$exe was not built"; continue; fi
  fits $t || continue
  t0=$SECONDS
  log=$tmp/$t.log
  env "${env[@]}" timeout -k 10 "$lim" "$exe" --short-filename --verbose >"$log" 2>&1
  rc=$?
  TOOK[$t]=$((SECONDS - t0))
  { echo "==== $t${env:+ (${env[*]})} (exit $rc) ===="; cat "$log"; } >>"$LOGDIR/tests.log"
  criterion_counts "$log"
  grep -E 'FAIL|CRASH|Assertion' "$log" | head -10
  if [ $rc = 0 ] && [ $crit_bad = 0 ]; then record $t OK "$counts"
  else record $t "$(rc_word $((rc == 0 ? 1 : rc)))" "$counts (exit $rc)"; fi
done

# ---- 3. GPU tuning (tolerated to fail) ------------------------------------------------
tuned=0
if [ $built = 0 ]; then record tune SKIP "no build"
elif fits tune; then
  tune=$BUILD/tools/vortex-install-tune
  targs=(--output "$LOGDIR/tune.json" --quiet --print)
  "$tune" --help 2>&1 | grep -q -- '--gpu-only' && targs+=(--gpu-only)
  [ $quick = 1 ] && targs+=(--quick)
  t0=$SECONDS
  timeout -k 10 "$lim" "$tune" "${targs[@]}" >"$LOGDIR/tune.log" 2>&1
  rc=$?
  TOOK[tune]=$((SECONDS - t0))
  if [ $rc = 0 ] && [ -s "$LOGDIR/tune.json" ]; then
    tuned=1
    if grep -q '"cuda"' "$LOGDIR/tune.json"; then gpu='with GPU ("cuda") timings'; else gpu='no "cuda" section: CPU only'; fi
    record tune OK "flags: ${targs[*]:4}; $gpu"
  else
    record tune WARN "tolerated: exit $rc ($(rc_word $rc)), see tune.log"
  fi
fi

# append_csv PART ALL: PART's rows onto ALL, its header only where ALL has
# none yet; 1 when PART was not written.
append_csv() {
  [ -f "$1" ] || return 1
  if [ -s "$2" ]; then tail -n +2 "$1" >>"$2"; else cat "$1" >"$2"; fi
}

# ---- 4. benchmarks: built-in suites, the Hopper family's A/B, the oracle, suite files ---
# run_bench STEP NAME [VAR=VALUE...] -- ARGS...: vortex-bench-gemm-cuda into NAME.log/.csv
run_bench() {
  local step=$1 name=$2 exe=$BUILD/benchmarks/vortex-bench-gemm-cuda env=() rc t0 done_line tf
  shift 2
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  [ $tuned = 1 ] && env+=("VORTEX_TUNE_FILE=$LOGDIR/tune.json")
  if [ $built = 0 ]; then record $step SKIP "no build"; return; fi
  if [ ! -x "$exe" ]; then record $step FAIL "$exe was not built"; return; fi
  fits $step || return
  t0=$SECONDS
  env "${env[@]}" timeout -k 10 "$lim" "$exe" "$@" --csv "$LOGDIR/$name.csv" \
    --max-seconds $((lim > 40 ? lim - 20 : lim / 2)) >>"$LOGDIR/$name.log" 2>&1
  rc=$?
  TOOK[$step]=$(( ${TOOK[$step]:-0} + SECONDS - t0 ))
  done_line=$(grep '^done:' "$LOGDIR/$name.log" | tail -1 | sed 's/^done: //')
  tf=$([ $tuned = 1 ] && echo "tune.json" || echo "default tuning")
  if grep -q '^skipped: no CUDA device' "$LOGDIR/$name.log"; then record $step FAIL "no CUDA device"
  elif [ $rc = 0 ]; then record $step OK "${DETAIL[$step]:+${DETAIL[$step]}; }${done_line:-?}; $tf"
  else
    record $step "$(rc_word $rc)" "exit $rc; ${done_line:-no final line}; $tf"
    grep -E 'ERROR|MISMATCH' "$LOGDIR/$name.log" | head -10
  fi
}
if [ "${ON[bench]}" = 1 ]; then
  if [ $quick = 1 ]; then run_bench bench bench -- --suite "small,adaptive" --quick
  else run_bench bench bench -- --suite "transformer,adaptive" --dtype "f32,tf32,f16,bf16"; fi
fi
if [ "${ON[bench_no_wgmma]}" = 1 ]; then
  run_bench bench_no_wgmma bench-no-wgmma VORTEX_CUDA_WGMMA=0 -- --suite "transformer,adaptive" --dtype "f16,bf16"
fi
if [ "${ON[oracle]}" = 1 ]; then
  exe=$BUILD/benchmarks/vortex-oracle-cuda
  if [ $built = 0 ]; then record oracle SKIP "no build"
  elif [ ! -x "$exe" ]; then record oracle FAIL "$exe was not built"
  elif fits oracle; then
    t0=$SECONDS rc=0
    # f16 over the whole transformer suite, bf16 and f32 over its quick
    # subset; the lines of all go to one CSV each (later headers dropped):
    # oracle.csv a row per shape, oracle-plans.csv a row per timed plan
    # (the wave model's price beside the measured time).
    for dt in f16 bf16 f32; do
      q=(); [ $dt != f16 ] && q=(--quick)
      left=$((lim - (SECONDS - t0))); [ $left -lt 10 ] && break
      tf=(); [ $tuned = 1 ] && tf=("VORTEX_TUNE_FILE=$LOGDIR/tune.json")
      env "${tf[@]}" timeout -k 10 $left "$exe" --dtype $dt "${q[@]}" --csv "$tmp/oracle-$dt.csv" \
        --plans-csv "$tmp/oracle-plans-$dt.csv" \
        >>"$LOGDIR/oracle.log" 2>&1 || rc=$?
      for f in oracle oracle-plans; do append_csv "$tmp/$f-$dt.csv" "$LOGDIR/$f.csv"; done
    done
    TOOK[oracle]=$((SECONDS - t0))
    rows=0; [ -s "$LOGDIR/oracle.csv" ] && rows=$(($(wc -l <"$LOGDIR/oracle.csv") - 1))
    if [ $rc = 0 ] && [ $rows -gt 0 ]; then record oracle OK "$rows shapes (f16 full, bf16 and f32 quick)"
    else record oracle "$(rc_word $((rc == 0 ? 1 : rc)))" "exit $rc, $rows shapes, see oracle.log"; fi
  fi
fi
# Suite files one at a time, each with an equal share of what is left of the
# step's time (one slow suite, deepbench's K = 500000 in f32, took all of a
# shared limit on an H200 and left five suites untimed); with --wgmma the
# f16/bf16 pass without the Hopper family gets a third of the time.
if [ "${ON[suites]}" = 1 ]; then
  exe=$BUILD/benchmarks/vortex-bench-gemm-cuda
  if [ $built = 0 ]; then record suites SKIP "no build"
  elif [ ! -x "$exe" ]; then record suites FAIL "$exe was not built"
  elif fits suites; then
    t0=$SECONDS rc_all=0 notes=""
    IFS=, read -r -a files <<<"$suite_files"
    passes=("suites|f32,tf32,f16,bf16|")
    [ $wgmma = 1 ] && passes+=("suites-no-wgmma|f16,bf16|VORTEX_CUDA_WGMMA=0")
    for pi in "${!passes[@]}"; do
      IFS='|' read -r out dts envv <<<"${passes[$pi]}"
      env=(); [ -n "$envv" ] && env+=("$envv")
      [ $tuned = 1 ] && env+=("VORTEX_TUNE_FILE=$LOGDIR/tune.json")
      pass_end=$((t0 + lim)); [ ${#passes[@]} = 2 ] && [ $pi = 0 ] && pass_end=$((t0 + lim * 2 / 3))
      for i in "${!files[@]}"; do
        left=$((pass_end - SECONDS)); share=$((left / (${#files[@]} - i)))
        [ $share -lt 5 ] && { notes="$notes; $(basename "${files[$i]}" .txt) ($dts) not run"; continue; }
        env "${env[@]}" timeout -k 10 $((share + 30)) "$exe" --suite "${files[$i]}" --dtype "$dts" \
          --csv "$tmp/suite.csv" --max-seconds "$share" >>"$LOGDIR/$out.log" 2>&1
        rc=$?
        [ $rc = 0 ] || rc_all=$rc
        append_csv "$tmp/suite.csv" "$LOGDIR/$out.csv" && rm -f "$tmp/suite.csv"
      done
    done
    TOOK[suites]=$((SECONDS - t0))
    [ -f "$LOGDIR/suites-no-wgmma.log" ] && { cat "$LOGDIR/suites-no-wgmma.log" >>"$LOGDIR/suites.log"; rm -f "$LOGDIR/suites-no-wgmma.log"; }
    runs=$(grep -c '^done:' "$LOGDIR/suites.log" 2>/dev/null || true)
    cut=$(grep -c 'stopped by --max-seconds' "$LOGDIR/suites.log" 2>/dev/null || true)
    if grep -q '^skipped: no CUDA device' "$LOGDIR/suites.log"; then record suites FAIL "no CUDA device"
    elif [ $rc_all = 0 ]; then record suites OK "${runs:-0} suite runs, ${cut:-0} cut by their time share$notes"
    else
      record suites "$(rc_word $rc_all)" "exit $rc_all; ${runs:-0} suite runs$notes"
      grep -E 'ERROR|MISMATCH' "$LOGDIR/suites.log" | head -10
    fi
  fi
fi

# ---- 5. compute-sanitizer over test_cuda_gemm (Criterion forks each test) -------------
for tool in memcheck racecheck; do
  [ "${ON[$tool]}" = 1 ] || continue
  if [ $built = 0 ]; then record $tool SKIP "no build"; continue; fi
  if [ -z "$sanitizer_bin" ]; then record $tool SKIP "compute-sanitizer not found"; continue; fi
  [ -x $BUILD/tests/test_cuda_gemm ] || { record $tool FAIL "test_cuda_gemm was not built"; continue; }
  fits $tool || continue
  t0=$SECONDS
  log=$tmp/$tool.log
  VX_TEST_QUICK=1 timeout -k 10 "$lim" "$sanitizer_bin" --tool "$tool" --target-processes all \
    --error-exitcode 99 $BUILD/tests/test_cuda_gemm -j1 --short-filename >"$log" 2>&1
  rc=$?
  TOOK[$tool]=$((SECONDS - t0))
  { echo "==== compute-sanitizer --tool $tool (exit $rc) ===="; cat "$log"; } >>"$LOGDIR/sanitizer.log"
  # One summary per process (the Criterion runner and each test's child).
  procs=$(grep -cE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log")
  errs=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | awk '{s += $3} END {print s + 0}')
  rerrs=$(grep -oE 'RACECHECK SUMMARY: .*' "$log" | grep -oE '[0-9]+ error' | awk '{s += $1} END {print s + 0}')
  rwarn=$(grep -oE 'RACECHECK SUMMARY: .*' "$log" | grep -oE '[0-9]+ warning' | awk '{s += $1} END {print s + 0}')
  errs=$((errs + rerrs))
  criterion_counts "$log"
  detail="$errs errors$([ $tool = racecheck ] && echo ", $rwarn warnings") in $procs process summaries; tests: $counts"
  if [ $rc = 0 ] && [ "$errs" = 0 ] && [ "$procs" -gt 0 ] && [ $crit_bad = 0 ]; then record $tool OK "$detail"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    # Out of time: what ran so far still counts; errors fail, a cut does not.
    if [ "$errs" = 0 ]; then record $tool PARTIAL "timed out after ${lim}s, no errors until then; $detail"
    else record $tool TIMEOUT "$detail (timed out after ${lim}s)"; fi
  elif [ "$procs" = 0 ]; then record $tool FAIL "no sanitizer summary (exit $rc); $detail"
  else record $tool FAIL "$detail (exit $rc)"; fi
  grep -E '^========= (Invalid|Race|Error|Program hit)' "$log" | sort | uniq -c | sort -rn | head -5
done

# ---- summary --------------------------------------------------------------------------
# A step that did not pass fails the run; so do tests left out for lack of
# time. The tuning may fail (WARN); a sanitizer that is missing or had no
# time is a SKIP, one cut by its timeout without errors PARTIAL.
fail=0
for s in "${steps[@]}"; do
  [ "${ON[$s]}" = 1 ] || continue
  case ${STATUS[$s]:-SKIP} in
    OK|WARN|PARTIAL) ;;
    SKIP) case $s in configure|build|test_cuda_gemm|test_gemm_ex) fail=1 ;; esac ;;
    *) fail=1 ;;
  esac
done
{
  echo
  echo "== gpu-check summary =="
  printf '%-15s %-8s %6s  %s\n' step status time details
  for s in "${steps[@]}"; do
    [ "${ON[$s]}" = 1 ] || continue
    printf '%-15s %-8s %6s  %s\n' "$s" "${STATUS[$s]:-SKIP}" "${TOOK[$s]:+${TOOK[$s]}s}" "${DETAIL[$s]:-}"
  done
  for f in bench bench-no-wgmma suites; do
    [ -f "$LOGDIR/$f.log" ] || continue
    echo
    echo "-- $f.log$([ $f = bench-no-wgmma ] && echo ' (VORTEX_CUDA_WGMMA=0)')"
    grep '^geomean' "$LOGDIR/$f.log"
  done
  if [ -f "$LOGDIR/oracle.log" ]; then
    echo
    echo "-- oracle.log"
    grep -E "^(model's pick|speedup vs cuBLAS)" "$LOGDIR/oracle.log"
  fi
  echo
  echo "total $((SECONDS - T0))s; $([ $fail = 0 ] && echo PASS || echo FAIL); logs: $LOGDIR"
} | tee -a "$LOGDIR/summary.txt.tmp"
mv "$LOGDIR/summary.txt.tmp" "$LOGDIR/summary.txt"
exit $fail
