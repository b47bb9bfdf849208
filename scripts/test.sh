#!/usr/bin/env bash
# Builds Vortex twice (release, and AddressSanitizer + UndefinedBehaviorSanitizer)
# and runs the Criterion tests in both, then the 10-second benchmark smokes
# (GEMM and conv2d against the baselines).
# Ends with one line "N passed, N failed, N skipped" summed over every run.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${VORTEX_BUILD_JOBS:-$(nproc)}

configure() { # dir, extra meson args...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
  fi
  ninja -C "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
}

passed=0 failed=0 skipped=0
run_suite() { # dir, label
  local dir=$1 label=$2 log
  echo "== tests ($label) =="
  for exe in "$dir"/tests/test_*; do
    [ -x "$exe" ] && [ -f "$exe" ] || continue
    log=$(mktemp)
    # A hung test must fail CI, not stall it: each executable gets 10 minutes.
    # --verbose: Criterion 2.4 prints "[SKIP] suite::test: reason" only then
    # (skipped tests are not in its Tested/Passing counts, so they are counted
    # from those lines).
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 timeout 600 "$exe" --short-filename --verbose >"$log" 2>&1
    local rc=$?
    grep -E 'Synthesis|FAIL|CRASH|ERROR|Skipped|skipped' "$log" | grep -v '^\s*$' | head -40
    local line t p f c s
    line=$(grep 'Synthesis' "$log" | tail -1)
    if [ -z "$line" ]; then
      echo "$(basename "$exe"): no Criterion summary (exit $rc)"; tail -20 "$log"; failed=$((failed + 1))
    else
      t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$line")
      p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
      f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
      c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
      s=$(grep -c '^\[SKIP\] ' "$log")
      passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
      [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { echo "$(basename "$exe") exited $rc"; failed=$((failed + 1)); }
      : "$t" "$c"
    fi
    rm -f "$log"
  done
}

# Without a GPU the CUDA kernels are only compiled, never run: one
# architecture (sm_90) halves that compile on a 2-core CI machine.
gpu_args=()
if ! nvidia-smi -L >/dev/null 2>&1; then gpu_args=(-Dgpu_archs=90); fi
configure build -Dbuildtype=release "${gpu_args[@]}" || { echo "0 passed, 1 failed"; exit 1; }
run_suite build release
configure build-asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=false -Dcuda=disabled ||
  { echo "$passed passed, $((failed + 1)) failed"; exit 1; }
ASAN_OPTIONS=detect_leaks=1 run_suite build-asan "asan+ubsan"

if [ -x build/benchmarks/vortex-bench-gemm ]; then
  echo "== benchmark smoke (10 s) =="
  if timeout 120 build/benchmarks/vortex-bench-gemm --suite small --quick --max-seconds 10; then
    passed=$((passed + 1))
  else
    echo "benchmark smoke failed"; failed=$((failed + 1))
  fi
fi

if [ -x build/benchmarks/vortex-bench-conv ]; then
  echo "== conv benchmark smoke (10 s) =="
  if timeout 180 build/benchmarks/vortex-bench-conv --suite small --quick --max-seconds 10; then
    passed=$((passed + 1))
  else
    echo "conv benchmark smoke failed"; failed=$((failed + 1))
  fi
  echo "== conv benchmark smoke, packed filters (5 s) =="
  if timeout 120 build/benchmarks/vortex-bench-conv --suite small --quick --max-seconds 5 --vortex-filter packed; then
    passed=$((passed + 1))
  else
    echo "conv benchmark smoke (packed filters) failed"; failed=$((failed + 1))
  fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
