#!/usr/bin/env bash
# Installs what Vortex needs to build and test (Debian packages), and with
# --baselines the benchmark baselines (oneDNN and MKL from PyPI).
set -euo pipefail
baselines=0
for a in "$@"; do
  case "$a" in
    --baselines) baselines=1 ;;
    -h|--help) echo "usage: scripts/install-deps.sh [--baselines]"; exit 0 ;;
    *) echo "install-deps: unknown argument $a" >&2; exit 2 ;;
  esac
done

need=()
for p in meson ninja-build pkg-config libhwloc-dev libjansson-dev libcriterion-dev python3 gcc g++; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ "$baselines" = 1 ]; then
  py=$(command -v python3)
  if ! "$py" -c 'import importlib.metadata as m; m.version("onednn-devel"); m.version("mkl-devel")' 2>/dev/null; then
    echo "install-deps: pip install onednn-devel mkl-devel (benchmark baselines)"
    "$py" -m pip install -q onednn-devel mkl-devel || echo "install-deps: baselines unavailable; benchmarks will run Vortex alone" >&2
  fi
fi
