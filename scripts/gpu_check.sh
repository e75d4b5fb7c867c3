#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU, CuPy, torch, onnx (no network needed):
# gets the CPU extensions, runs the GPU tests (CPU == GPU comparisons included), a GPU
# benchmark against CuPy / torch CUDA (back to back), the host/device split of each call
# (scripts/gpu_profile.py) and the launchers' threshold sweep (scripts/gpu_sweep.py),
# and writes a report.  About 3 minutes on an H200 with a prebuilt copy (at most 9).
#
#   bash scripts/gpu_check.sh [REPORT_DIR [PREBUILT]]     (REPORT_DIR: benchmarks/results)
#
# PREBUILT: a folder laid out like fastops/_cpu (avx2/, avx512/) holding the extensions
# built elsewhere for the Python here (scripts/gpu_prebuild.sh).  The lent GPU machine
# gives 15 minutes in all, and building here costs 2-3 of them (scatter.cpp alone
# compiles for 3 minutes on one core); if the copy was built from other kernel sources
# (its SOURCES.sha256 differs from scripts/kernel_sources_sha.sh here) or does not
# import (another Python, glibc or libgomp), it is built here with -march=native on
# every core instead.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-benchmarks/results}"
PREBUILT="${2:-}"
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%d_%H%M%S)
REPORT="$OUT_DIR/gpu_check_$STAMP.md"
export PYTHONUNBUFFERED=1
FAMILIES=$(cd fastops/_cpu && ls *.pyx | sed 's/\.pyx$//' | paste -sd, -)
imports_ok() {
  python -c "import importlib, sys
for f in sys.argv[1].split(','): importlib.import_module('fastops._cpu.' + f)" "$FAMILIES"
}
{
  echo "# fastops GPU check, $(date -u), $(git rev-parse --short HEAD 2>/dev/null)"
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -3
  python -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion())" 2>&1
  python -c "import torch; print('torch', torch.__version__)" 2>&1 | tail -1
  lscpu | grep -E '^Model name|^CPU\(s\)' 2>&1
  echo '```'
  echo "## CPU extensions"
  echo '```'
  if [ -n "$PREBUILT" ] && [ -d "$PREBUILT" ] && \
     [ "$(cat "$PREBUILT/SOURCES.sha256" 2>/dev/null)" != "$(bash scripts/kernel_sources_sha.sh)" ]; then
    echo "prebuilt copy in $PREBUILT was built from other kernel sources: building here"
  elif [ -n "$PREBUILT" ] && [ -d "$PREBUILT" ]; then
    cp -r "$PREBUILT"/. fastops/_cpu/
    rm -f fastops/_cpu/SOURCES.sha256
    if imports_ok 2>&1; then echo "prebuilt copy from $PREBUILT imports"
    else
      echo "prebuilt copy does not import: building here"
      find fastops/_cpu -name '*.so' -delete
    fi
  fi
  if ! imports_ok > /dev/null 2>&1; then
    t0=$(date +%s)
    FASTOPS_MARCH_NATIVE=1 FASTOPS_BUILD_JOBS=$(nproc) timeout 300 \
      python setup.py -q build_ext --inplace -j "$(nproc)" > "$OUT_DIR/gpu_build.log" 2>&1 \
      || tail -20 "$OUT_DIR/gpu_build.log"
    echo "built in $(( $(date +%s) - t0 )) s"
  fi
  python -m fastops info 2>&1
  echo '```'
  echo "## GPU tests (pytest -m gpu)"
  echo '```'
  workers=""
  python -c "import xdist" 2>/dev/null && workers="-n 8"
  timeout 240 python -m pytest -q -m gpu -p no:cacheprovider $workers -rfEs \
    --durations=10 2>&1 | tee "$OUT_DIR/gpu_pytest_$STAMP.log" | tail -60
  echo '```'
  echo "## GPU benchmark (median ms of synchronized calls, back to back)"
  echo '```'
  timeout 120 python -m fastops bench --quick --device gpu --hot --repeat 5 \
    --json "$OUT_DIR/gpu_bench_$STAMP.json" 2>&1 | tail -60
  echo '```'
  echo "## Host and device time per call (scripts/gpu_profile.py; cProfile in gpu_profile_$STAMP.txt)"
  echo '```'
  PYTHONPATH=".:${PYTHONPATH:-}" timeout 90 python scripts/gpu_profile.py \
    > "$OUT_DIR/gpu_profile_$STAMP.txt" 2>&1
  grep -E 'ms a call|Error' "$OUT_DIR/gpu_profile_$STAMP.txt"
  echo '```'
  echo "## Launcher thresholds (scripts/gpu_sweep.py, ms)"
  echo '```'
  PYTHONPATH=".:${PYTHONPATH:-}" timeout 90 python scripts/gpu_sweep.py 2>&1 | tail -50
  echo '```'
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
