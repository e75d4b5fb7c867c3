#!/usr/bin/env bash
# Benchmark the last N commits of main with asv (each commit is built in its own
# virtualenv under asv_bench/.asv) and publish the HTML dashboard.
#
#   bash scripts/dashboard.sh [N=10] [asv run options, e.g. -b TimeSelection]
#   cd asv_bench && asv preview        # then open http://127.0.0.1:8080
set -euo pipefail
cd "$(dirname "$0")/../asv_bench"
N="${1:-10}"
shift || true
asv machine --yes > /dev/null
git rev-list --max-count="$N" main > .asv-commits   # fewer commits than N is fine
asv run HASHFILE:.asv-commits --skip-existing-commits "$@"
rm -f .asv-commits
asv publish
echo "dashboard written to asv_bench/.asv/html; view it with: cd asv_bench && asv preview"
