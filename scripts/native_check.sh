#!/usr/bin/env bash
# Build the CPU kernels for this machine's CPU (FASTOPS_MARCH_NATIVE=1: AVX2/FMA on
# x86-64, where a compiler may fuse a*b+c) in a copy of this checkout and run the tests
# that compare results bit for bit with the ONNX reference, ONNX Runtime, torch and
# their own float64 references.  setup.py compiles with -ffp-contract=off, so the bits
# must not change (the GPU emulation tests compare GPU and CPU bits on the normal build).
#
#   bash scripts/native_check.sh             # CI runs this
#   bash scripts/native_check.sh tests/test_roi_align.py     # any pytest arguments
set -euo pipefail
DIR="${FASTOPS_NATIVE_DIR:-/tmp/fastops-native}"
# only the families that promise bit-identity (and the two runtime modules)
bash "$(dirname "$0")/build_copy.sh" "$DIR" FASTOPS_MARCH_NATIVE=1 \
  FASTOPS_EXTENSIONS=_pool,_runtime,roi_align,nms,norm,resample,grid_sample,deform_conv,cv_resize
cd "$DIR"
# run from the copy: it is first on sys.path, so its build is the one imported
python -c "import fastops, os; assert fastops.__file__.startswith(os.getcwd()), fastops.__file__"
if [ $# -eq 0 ]; then
  set -- tests/test_roi_align.py tests/test_nms.py tests/test_norm.py tests/test_resize.py \
    tests/test_grid_sample.py tests/test_deform_conv.py tests/test_cv_resize.py
fi
python -m pytest -q -p no:cacheprovider "$@"
