#!/usr/bin/env bash
# The asv performance dashboard: fastops and every installed peer as lines over commits.
#
#   bash scripts/dashboard.sh publish        # the HTML from the results kept in the repo
#                                            # (seconds); then: cd asv_bench && asv preview
#   bash scripts/dashboard.sh record [asv run options]
#                                            # measure this checkout once and keep it
#   bash scripts/dashboard.sh history N [asv run options]
#                                            # rebuild and measure the last N commits
#
# record is what each landed change does (on a quiet machine: nothing else running, check
# `uptime`): it measures this checkout (built in place and installed editable: asv drops
# PYTHONPATH, so record refuses when python imports another fastops) under the current
# commit's hash and machine name
# $FASTOPS_ASV_MACHINE (default fastops-2core, the 2-vCPU CI machine class), with raw
# samples (--record-samples; the JSON also keeps each point's quartiles and 99%
# interval, so the noise of a point can be read next to it), into
# asv_bench/results/<machine>/, which is committed.  The environment is named "fastops"
# whatever the venv path, so measurements from different sessions form one line.
# About 50 minutes on the 2-core machine for the whole suite with 7 repeats (measured
# 2026-11-30: 21 benchmark classes, the sweeps, tiny inputs and dask included); asv's
# -b REGEX limits it.
#
# history is the full rerun for a dedicated benchmark machine: every commit is built
# in its own virtualenv under asv_bench/.asv (3-4 minutes of compilation each here) and
# measured with the suite's default repeats: about an hour per commit on the 2-core
# machine, so history 10 is most of a day.  Its results land in the same results tree.
set -euo pipefail
cd "$(dirname "$0")/../asv_bench"
MACHINE="${FASTOPS_ASV_MACHINE:-fastops-2core}"
cmd="${1:-publish}"
shift || true
case "$cmd" in
  publish)
    asv publish
    echo "dashboard written to asv_bench/.asv/html; view it with: cd asv_bench && asv preview"
    ;;
  record)
    # asv runs the benchmarks without PYTHONPATH: the fastops they import must be this
    # checkout's, built in place and installed editable here.  (The thirtieth and
    # thirty-first sessions' records ran an older checkout's editable install under
    # PYTHONPATH=this one: their points were another commit's, without the new rows.)
    root="$(cd .. && pwd -P)"
    imported="$(cd / && env -u PYTHONPATH python -c \
      'import fastops, os; print(os.path.dirname(os.path.dirname(os.path.realpath(fastops.__file__))))')"
    if [ "$imported" != "$root" ]; then
      echo "dashboard.sh: asv would measure the fastops in $imported, not this checkout" \
           "($root); run pip install -e . here first" >&2
      exit 1
    fi
    asv machine --yes --machine "$MACHINE" > /dev/null
    commit="$(git rev-parse HEAD)"
    python -m fastops info
    asv run --python=same --set-commit-hash "$commit" --machine "$MACHINE" \
      --record-samples -a repeat=7 --show-stderr "$@"
    # one environment name for every session's venv (asv derives it from the python path)
    python - "$MACHINE" "${commit:0:8}" <<'EOF'
import glob, json, os, sys
machine, short = sys.argv[1:]
for path in glob.glob(os.path.join("results", machine, short + "-existing-*.json")):
    data = json.load(open(path))
    data["env_name"] = "fastops"
    data["python"] = "python"
    target = os.path.join("results", machine, short + "-fastops.json")
    if os.path.exists(target):   # an earlier record of this commit (another -b): keep it
        kept = json.load(open(target))
        for key in ("results", "durations"):
            data[key] = {**kept.get(key, {}), **data.get(key, {})}
    json.dump(data, open(target, "w"), separators=(",", ":"))
    os.remove(path)
    print("kept", target)
EOF
    asv publish
    ;;
  history)
    N="${1:-10}"
    shift || true
    asv machine --yes --machine "$MACHINE" > /dev/null
    git rev-list --max-count="$N" main > .asv-commits   # fewer commits than N is fine
    asv run HASHFILE:.asv-commits --machine "$MACHINE" --skip-existing-commits "$@"
    rm -f .asv-commits
    asv publish
    ;;
  *)
    echo "usage: bash scripts/dashboard.sh {publish|record|history N} [asv run options]" >&2
    exit 2
    ;;
esac
