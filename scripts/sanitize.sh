#!/usr/bin/env bash
# Build the CPU kernels with AddressSanitizer + UndefinedBehaviorSanitizer in a copy of
# this checkout and run the test suite against that build, with the sanitizer runtime
# preloaded into the (uninstrumented) Python.  Any out-of-bounds access, use after free
# or undefined behaviour in a kernel aborts the run: exit status non-zero.
#
#   bash scripts/sanitize.sh                 # the suite (CI runs this), see below
#   bash scripts/sanitize.sh tests/test_hostile.py -k topk    # any pytest arguments
#
# Needs the environment of the normal install (numpy, Cython, pytest, onnx, ...): run it
# after `pip install -e ".[test]"`.  The copy lives in $FASTOPS_SANITIZE_DIR
# (default /tmp/fastops-sanitize) and never touches this checkout's build.
# Without arguments it runs every test module except the GPU emulation ones
# (tests/test_gpu_emulated*.py: their kernels are compiled by g++ without sanitizers and
# check their own bounds with guard bytes, so ASan adds nothing there but minutes).
# Leak checking is off (CPython itself "leaks" at exit); memory-limit tests skip
# themselves under ASan (it reserves terabytes of address space).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${FASTOPS_SANITIZE_DIR:-/tmp/fastops-sanitize}"
rm -rf "$DIR"
mkdir -p "$DIR"
# tracked and untracked-but-not-ignored files: the sources as they are now
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$DIR"
cd "$DIR"
# pip builds fastops in an isolated environment; this build needs the tools here
python -c "import Cython, setuptools" 2>/dev/null || \
  python -m pip install -q "Cython>=3.0" "setuptools>=77" wheel
FASTOPS_SANITIZE=1 python setup.py -q build_ext --inplace -j 2 > build.log 2>&1 || {
  tail -50 build.log; exit 1; }
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export FASTOPS_SANITIZED=1
# this directory first on sys.path, so the sanitized build is the one imported
python -c "import fastops, os; assert fastops.__file__.startswith(os.getcwd()), fastops.__file__"
# --capture=sys: pytest must not redirect fd 2, or a sanitizer report is lost with the
# process it kills
if [ $# -eq 0 ]; then
  set -- tests --ignore-glob='tests/test_gpu_emulated*'
fi
python -m pytest -q -p no:cacheprovider --capture=sys "$@"
