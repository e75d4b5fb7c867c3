#!/usr/bin/env bash
# Build the CPU kernels with AddressSanitizer + UndefinedBehaviorSanitizer in a copy of
# this checkout and run the test suite against that build, with the sanitizer runtime
# preloaded into the (uninstrumented) Python.  Any out-of-bounds access, use after free
# or undefined behaviour in a kernel aborts the run: exit status non-zero.
#
#   bash scripts/sanitize.sh                 # the suite (CI runs this), see below
#   bash scripts/sanitize.sh tests/test_hostile.py -k topk    # any pytest arguments
#
# Without arguments it runs every test module except the GPU emulation ones
# (tests/test_gpu_emulated*.py: their kernels are compiled by g++ without sanitizers and
# check their own bounds with guard bytes, so ASan adds nothing there but minutes).
# Leak checking is off (CPython itself "leaks" at exit); memory-limit tests skip
# themselves under ASan (it reserves terabytes of address space).  The copy lives in
# $FASTOPS_SANITIZE_DIR (default /tmp/fastops-sanitize).
set -euo pipefail
DIR="${FASTOPS_SANITIZE_DIR:-/tmp/fastops-sanitize}"
bash "$(dirname "$0")/build_copy.sh" "$DIR" FASTOPS_SANITIZE=1
cd "$DIR"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export FASTOPS_SANITIZED=1
if [ $# -eq 0 ]; then
  set -- tests --ignore-glob='tests/test_gpu_emulated*'
fi
# --capture=sys: pytest must not redirect fd 2, or a sanitizer report is lost with the
# process it kills
python -m pytest -q -p no:cacheprovider --capture=sys "$@"
