"""Every benchmark of the asv suite runs: the setup and one timed call of the fastops
implementation of every workload (quick or not), in-process.

CI used to run `asv run --quick`; with every op family in the suite that spawns a
process per benchmark and alone took longer than CI's whole budget.  CI now runs
`asv check` (the suite's definitions) and this module (each workload's fastops path);
`python -m fastops bench --quick`, the README's first command, runs the quick workloads
against every installed peer.
"""
import glob
import importlib.util
import os

import pytest

import fastops
from fastops._bench import workloads

SUITE_DIR = os.path.join(os.path.dirname(__file__), os.pardir, "asv_bench", "benchmarks")


def _suite_classes():
    import sys
    sys.path.insert(0, os.path.dirname(SUITE_DIR))
    try:
        out = []
        for path in sorted(glob.glob(os.path.join(SUITE_DIR, "*.py"))):
            name = os.path.splitext(os.path.basename(path))[0]
            if name.startswith("_"):
                continue
            mod = importlib.import_module("benchmarks." + name)
            out += [v for v in vars(mod).values()
                    if isinstance(v, type) and hasattr(v, "time_op")]
        return out
    finally:
        sys.path.remove(os.path.dirname(SUITE_DIR))


CLASSES = _suite_classes()
TIME = [c for c in CLASSES if c.__name__.startswith("Time")]


def test_every_family_is_in_the_suite():
    covered = {w for c in TIME for w in c.params[0]}
    assert {w.name for w in workloads()} <= covered


@pytest.mark.parametrize("suite", TIME, ids=lambda c: c.__name__)
def test_every_workload_runs_under_the_suite(suite):
    from fastops._bench.peers import PeerMissing
    by_name = {w.name: w for w in workloads()}
    ran = 0
    for workload in suite.params[0]:
        wl = by_name.get(workload)
        if wl is None or "fastops" not in wl.impls:
            continue          # a peer-only reference line, or a family not in FAMILIES
        bench = suite()
        try:
            bench.setup(workload, "fastops")
            bench.time_op(workload, "fastops")
            ran += 1
        except PeerMissing:   # the workload's inputs need a peer (an exported model)
            pass
        finally:
            wl._inputs = None  # free the inputs before the next one
    if suite.params[0] and not ran:
        pytest.skip("every workload of this family needs a peer that is not installed")


def test_thread_scaling_classes_are_well_formed():
    for c in CLASSES:
        if c.__name__.startswith("Threads"):
            assert c.params[0] and c.params[1] == [1, "all"]
            before = fastops.get_num_threads()
            bench = c()
            bench.setup(c.params[0][0], 1)
            bench.teardown(c.params[0][0], 1)
            assert fastops.get_num_threads() == before


def test_line_bytes_counts_the_distinct_cache_lines():
    """The gathers' memory floor counts the 64-byte lines their random reads touch;
    against a brute-force set of every byte's line, reads straddling lines included."""
    import numpy as np
    from fastops._bench.scatter import _line_bytes
    rng = np.random.default_rng(5)
    a = np.zeros(5000, np.float32)
    base = a.__array_interface__["data"][0]
    for nbytes in (1, 4, 60, 64, 65, 200):
        starts = rng.integers(0, a.nbytes - nbytes, 300)
        want = {(base + s + b) // 64 for s in starts.tolist() for b in range(nbytes)}
        assert _line_bytes(a, starts, nbytes) == 64 * len(want)
