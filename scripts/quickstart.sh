#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies (with the oneDNN/MKL
# baselines), build, measure the machine once (vortex-install-tune writes the
# tuning file the cost model reads), show what Vortex sees and the plan it
# would run, and run a small benchmark against the baselines.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --baselines
# Without a GPU the CUDA kernels (if nvcc is here) are only compiled: one
# architecture is enough. test.sh makes the same choice for the same build.
gpu_args=()
if ! nvidia-smi -L >/dev/null 2>&1; then gpu_args=(-Dgpu_archs=90); fi
if [ ! -f build/build.ninja ]; then
  meson setup build -Dbuildtype=release "${gpu_args[@]}"
fi
ninja -C build
build/tools/vortex-install-tune --print
build/tools/vortex-info --candidates --explain gemm 2048 2048 2048
build/tools/vortex-info --explain conv2d 1 64 56 56 64 3 3 --pad 1 --nhwc | tail -n 4
mkdir -p benchmarks/out
build/benchmarks/vortex-bench-gemm --suite bert,small --quick --peak --csv benchmarks/out/quickstart.csv
build/benchmarks/vortex-bench-conv --suite small --quick --csv benchmarks/out/quickstart-conv.csv
# GPU: against cuBLAS where a device is visible (prints "skipped: no CUDA device" otherwise).
if [ -x build/benchmarks/vortex-bench-gemm-cuda ]; then
  build/benchmarks/vortex-bench-gemm-cuda --suite small --quick
fi
