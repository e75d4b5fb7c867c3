#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU, CuPy, torch, onnx (no network needed):
# builds fastops in place, runs the GPU tests (CPU == GPU comparisons included) and a
# short GPU benchmark against CuPy / PyTorch CUDA, and writes a report.  Under 8 minutes.
#
#   bash scripts/gpu_check.sh [REPORT_DIR]       (default: benchmarks/results)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-benchmarks/results}"
mkdir -p "$OUT_DIR"
REPORT="$OUT_DIR/gpu_check_$(date -u +%Y%m%d_%H%M%S).md"
export PYTHONUNBUFFERED=1
{
  echo "# fastops GPU check, $(date -u)"
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  echo '```'
  echo "## build"
  echo '```'
  FASTOPS_BUILD_JOBS=16 timeout 240 python -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -5
  python -m fastops info 2>&1
  echo '```'
  echo "## kernel compile (NVRTC sm_80, sm_90)"
  echo '```'
  timeout 120 python scripts/check_kernels.py 2>&1 | tail -8
  echo '```'
  echo "## GPU tests (pytest -m gpu)"
  echo '```'
  timeout 240 python -m pytest -q -m gpu -p no:cacheprovider 2>&1 | tail -30
  echo '```'
  echo "## GPU benchmark (median ms, synchronized)"
  echo '```'
  timeout 150 python -m fastops bench --quick --device gpu --repeat 5 --json "$OUT_DIR/gpu_bench.json" 2>&1 | tail -40
  echo '```'
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
