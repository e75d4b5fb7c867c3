#!/usr/bin/env bash
# Build the CPU extensions here for the GPU machine's Python and lay them out as
# scripts/gpu_check.sh's PREBUILT folder (avx2/, avx512/ beside the baseline modules),
# stripped of debug sections and stamped with scripts/kernel_sources_sha.sh:
#   bash scripts/gpu_prebuild.sh /tmp/venv312/bin/python .gpubuild
# The Python must match the GPU machine's (3.12 there in the twenty-sixth session) and
# have numpy of the same major version.  About 10 minutes on the 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$1"
DEST="$2"
TMP=$(mktemp -d)
PATH="$(dirname "$PY"):$PATH" bash scripts/build_copy.sh "$TMP/src"
rm -rf "$DEST"
mkdir -p "$DEST"
(cd "$TMP/src/fastops/_cpu" && find . -name '*.so' -print0 | xargs -0 cp --parents -t "$OLDPWD/$DEST")
find "$DEST" -name '*.so' -exec strip --strip-debug {} +
bash scripts/kernel_sources_sha.sh > "$DEST/SOURCES.sha256"
rm -rf "$TMP"
echo "$DEST: $(find "$DEST" -name '*.so' | wc -l) extensions, $(du -sh "$DEST" | cut -f1)"
