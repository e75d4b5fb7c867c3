#!/usr/bin/env bash
# Build the CPU kernels with AddressSanitizer + UndefinedBehaviorSanitizer in a copy of
# this checkout and run the test suite against that build, with the sanitizer runtime
# preloaded into the (uninstrumented) Python.  Any out-of-bounds access, use after free
# or undefined behaviour in a kernel aborts the run: exit status non-zero.
#
#   bash scripts/sanitize.sh                 # the hostile-input module (CI), see below
#   bash scripts/sanitize.sh tests/test_hostile.py -k topk    # any pytest arguments
#
# Without arguments it runs the hostile-input module (every public op: views, byte
# orders, index dtypes, huge sizes, NaN/inf, zero-size, rank 10, and the threads that
# rewrite indices while kernels run) and fastops.dask on a LocalCluster (its worker
# processes inherit the sanitizers), which is what CI runs to stay within its time.
# `bash scripts/sanitize.sh tests --ignore-glob='tests/test_gpu_emulated*'` runs the
# whole suite (about 15 minutes here); the GPU emulation modules add nothing under ASan
# (their kernels are compiled by g++ without sanitizers and check their own bounds with
# guard bytes).
# Leak checking is off (CPython itself "leaks" at exit); memory-limit tests skip
# themselves under ASan (it reserves terabytes of address space).  The copy lives in
# $FASTOPS_SANITIZE_DIR (default /tmp/fastops-sanitize).
set -euo pipefail
DIR="${FASTOPS_SANITIZE_DIR:-/tmp/fastops-sanitize}"
# FASTOPS_MARCH_NATIVE=1 in the environment sanitizes this machine's SIMD paths too (the
# baseline build then has AVX2/FMA, so code that only the x86-64-v3 build has, like the
# packed GEMM of Session's Conv, runs under the sanitizers)
bash "$(dirname "$0")/build_copy.sh" "$DIR" FASTOPS_SANITIZE=1 \
  ${FASTOPS_MARCH_NATIVE:+FASTOPS_MARCH_NATIVE=$FASTOPS_MARCH_NATIVE}
cd "$DIR"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export FASTOPS_SANITIZED=1
# run from the copy: it is first on sys.path, so its build is the one imported
python -c "import fastops, os; assert fastops.__file__.startswith(os.getcwd()), fastops.__file__"
if [ $# -eq 0 ]; then
  # + fastops.dask on worker processes: arrays arrive there unaligned (pickle-5 buffers)
  set -- tests/test_hostile.py "tests/test_dask.py::test_local_cluster_every_function"
fi
# --capture=sys: pytest must not redirect fd 2, or a sanitizer report is lost with the
# process it kills
python -m pytest -q -p no:cacheprovider --capture=sys "$@"
