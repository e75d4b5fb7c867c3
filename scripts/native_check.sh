#!/usr/bin/env bash
# Build the CPU kernels for this machine's CPU (FASTOPS_MARCH_NATIVE=1: AVX2/FMA on
# x86-64, where a compiler may fuse a*b+c) in a copy of this checkout and run the tests
# that compare results bit for bit with the ONNX reference, ONNX Runtime, torch and
# their own float64 references.  setup.py compiles with -ffp-contract=off, so the bits
# must not change (the GPU emulation tests compare GPU and CPU bits on the normal build).
#
#   bash scripts/native_check.sh             # CI runs this
#   bash scripts/native_check.sh tests/test_roi_align.py     # any pytest arguments
#
# Without arguments it checks only the families whose FMA build the normal test run has
# not already checked: where this CPU runs the x86-64-v3 build, a family built there
# (fastops/_cpu/avx2/) ran the whole suite with FMA available, and tests/test_simd.py
# compared its bits with the baseline build's.  Rebuilding those families (about 12 of
# CI's 57 minutes on a 2-core Zen 1 VM) checked nothing new.
set -euo pipefail
DIR="${FASTOPS_NATIVE_DIR:-/tmp/fastops-native}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# the families that promise bit-identity, and their tests
declare -A TESTS=([roi_align]=tests/test_roi_align.py [nms]=tests/test_nms.py
                  [norm]=tests/test_norm.py [resample]=tests/test_resize.py
                  [grid_sample]=tests/test_grid_sample.py
                  [deform_conv]=tests/test_deform_conv.py
                  [cv_resize]=tests/test_cv_resize.py)
families=("${!TESTS[@]}")
if [ $# -eq 0 ]; then
  runs_v3=$(python -c "from fastops._cpu import _runtime; print(int(_runtime.has_x86_64_v3()))")
  tests=()
  families_left=()
  for family in "${families[@]}"; do
    if [ "$runs_v3" = 1 ] && [ -e "$ROOT/fastops/_cpu/avx2/$family.pyx" ]; then continue; fi
    families_left+=("$family")
    tests+=("${TESTS[$family]}")
  done
  families=("${families_left[@]}")
  if [ ${#families[@]} -eq 0 ]; then
    echo "native_check: every bit-identity family ran with FMA in the main suite"; exit 0
  fi
  set -- "${tests[@]}"
fi
echo "native_check: -march=native build of ${families[*]}"
# (the two runtime modules every family imports)
bash "$ROOT/scripts/build_copy.sh" "$DIR" FASTOPS_MARCH_NATIVE=1 \
  FASTOPS_EXTENSIONS="_pool,_runtime,$(IFS=,; echo "${families[*]}")"
cd "$DIR"
# run from the copy: it is first on sys.path, so its build is the one imported
python -c "import fastops, os; assert fastops.__file__.startswith(os.getcwd()), fastops.__file__"
python -m pytest -q -p no:cacheprovider "$@"
