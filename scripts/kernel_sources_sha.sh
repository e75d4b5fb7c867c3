#!/usr/bin/env bash
# sha256 of the CPU kernels' sources (the .pyx / .pxd / .hpp under fastops/_cpu and
# setup.py): what a prebuilt copy of the extensions was built from.  scripts/gpu_prebuild.sh
# stamps its copy with it and scripts/gpu_check.sh builds afresh when the stamp differs,
# so a GPU check never runs CPU kernels older than the checkout.  (find, not git: the
# GPU machine's copy of the tree may have no .git.)
set -euo pipefail
cd "$(dirname "$0")/.."
find fastops/_cpu \( -name '*.pyx' -o -name '*.pxd' -o -name '*.hpp' \) -print0 | sort -z \
  | xargs -0 cat setup.py | sha256sum | cut -d' ' -f1
