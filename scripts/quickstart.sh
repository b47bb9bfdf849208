#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies (with the oneDNN/MKL
# baselines), build, show what Vortex sees, and run a small benchmark against
# the baselines. (vortex-install-tune joins here once the analyzer lands; the
# library already runs from defaults derived from the hardware query.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --baselines
if [ ! -f build/build.ninja ]; then
  meson setup build -Dbuildtype=release
fi
ninja -C build
build/tools/vortex-info --explain gemm 2048 2048 2048
mkdir -p benchmarks/out
build/benchmarks/vortex-bench-gemm --suite bert,small --quick --peak --csv benchmarks/out/quickstart.csv
