#!/usr/bin/env bash
# Copy this checkout (tracked and untracked-but-not-ignored files) into DIR and build the
# CPU extensions there in place, with the build variables given after DIR, e.g.
#   bash scripts/build_copy.sh /tmp/fastops-native FASTOPS_MARCH_NATIVE=1
# Used by scripts/sanitize.sh and scripts/native_check.sh; never touches this checkout's
# build.  Needs the environment of the normal install (numpy; Cython and setuptools are
# installed here if missing, since pip builds fastops in an isolated environment).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="$1"
shift
rm -rf "$DIR"
mkdir -p "$DIR"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$DIR"
cd "$DIR"
# setuptools >= 77 reads pyproject's SPDX license string (a fresh venv may carry an older
# one); Cython >= 3.2.1 builds the shared utility module (setup.py) without its import bug
python -c "import Cython, setuptools; assert int(setuptools.__version__.split('.')[0]) >= 77
assert tuple(map(int, Cython.__version__.split('.')[:3])) >= (3, 2, 1)" 2>/dev/null || \
  python -m pip install -q "Cython>=3.2.1" "setuptools>=77" wheel
env "$@" python setup.py -q build_ext --inplace -j 2 > build.log 2>&1 || {
  tail -50 build.log; exit 1; }
