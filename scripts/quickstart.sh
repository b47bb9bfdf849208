#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies (with the oneDNN/MKL
# baselines), build, measure the machine once (vortex-install-tune writes the
# tuning file the cost model reads), show what Vortex sees and the plan it
# would run, and run a small benchmark against the baselines.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --baselines
if [ ! -f build/build.ninja ]; then
  meson setup build -Dbuildtype=release
fi
ninja -C build
build/tools/vortex-install-tune --print
build/tools/vortex-info --candidates --explain gemm 2048 2048 2048
build/tools/vortex-info --explain conv2d 1 64 56 56 64 3 3 --pad 1 --nhwc | tail -n 4
mkdir -p benchmarks/out
build/benchmarks/vortex-bench-gemm --suite bert,small --quick --peak --csv benchmarks/out/quickstart.csv
build/benchmarks/vortex-bench-conv --suite small --quick --csv benchmarks/out/quickstart-conv.csv
