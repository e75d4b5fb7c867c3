#!/usr/bin/env python
"""This checkout's CPU kernels against another checkout's, in one process: each repeat runs
a workload of fastops/_bench once with each checkout's kernel modules
(_dispatch.swap_cpu_modules, as scripts/simd_ab.py swaps the SIMD builds), in alternating
order, each call after a 20 ms pause or, with --hot, after 20 ms of calls.  Prints the
median ms of the other checkout (A) and of this one (B), and B / A.

    git worktree add /tmp/base <commit>
    (cd /tmp/base && python setup.py build_ext --inplace)
    python scripts/checkout_ab.py /tmp/base scatter gather_nd [--hot] [--repeat 41]

(A bench family, then substrings of the workload names to keep.)  On the 2-vCPU VMs,
separate runs of one build drift more than most changes are worth; alternating in one
process does not.  Importing the second checkout's package after clearing sys.modules
does not work: the kernel modules are imported at an op's first call, so both packages
then run whichever kernels were imported first (B / A reads 1.00).  The end of the output
lists the kernel files mapped into the process, to show that both sets ran.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import pkgutil
import statistics
import time

import fastops
from fastops import _bench, _dispatch

ap = argparse.ArgumentParser()
ap.add_argument("other", help="root of the other checkout, its extensions built in place")
ap.add_argument("bench_family")
ap.add_argument("names", nargs="*", help="substrings of the workload names to run (all)")
ap.add_argument("--repeat", type=int, default=41)
ap.add_argument("--threads", type=int, default=0, help="0: fastops' default")
ap.add_argument("--hot", action="store_true", help="20 ms of calls before each timed one")
args = ap.parse_args()
if args.threads:
    fastops.set_num_threads(args.threads)

here = os.path.dirname(os.path.dirname(os.path.abspath(fastops.__file__)))
families = [m.name for m in pkgutil.iter_modules(importlib.import_module("fastops._cpu").__path__)
            if not m.ispkg and not m.name.startswith("_")]


def built(root, name):
    """The extension file of module ``name`` built in checkout root, or None."""
    base = os.path.join(root, *name.split("."))
    return next((base + sfx for sfx in importlib.machinery.EXTENSION_SUFFIXES
                 if os.path.exists(base + sfx)), None)


def load(root):
    """{family: the module this machine's dispatch would use in checkout root}
    (_dispatch.module_for asking root's files: a family that gained a SIMD build since
    root runs root's older build)."""
    mods = {}
    for fam in families:
        name = _dispatch.module_for(_dispatch.simd_target(), fam,
                                    built=lambda n: built(root, n) is not None)
        path = built(root, name)
        if path is None:
            raise SystemExit(f"{root}: no built {name} (python setup.py build_ext --inplace)")
        spec = importlib.util.spec_from_file_location(name, path)
        mods[fam] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mods[fam])
    return mods


builds = {"A": load(os.path.abspath(args.other)), "B": load(here)}
print(f"A = {os.path.abspath(args.other)}, B = {here}; median of {args.repeat} "
      f"{'back to back' if args.hot else 'after a 20 ms pause'} (ms)")
print(f"{'workload':72s} {'A':>9s} {'B':>9s}  B / A")
for w in _bench.workloads(args.bench_family):
    if args.names and not any(n in w.name for n in args.names):
        continue
    try:
        fn = w.prepare("fastops")
    except NotImplementedError:
        continue
    times = {k: [] for k in builds}
    for r in range(args.repeat):
        for k in (("A", "B") if r % 2 else ("B", "A")):
            _dispatch.swap_cpu_modules(builds[k])
            fn()
            if args.hot:
                t_end = time.perf_counter() + 0.02
                while time.perf_counter() < t_end:
                    fn()
            else:
                time.sleep(0.02)
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    a, b = (statistics.median(times[k]) * 1e3 for k in ("A", "B"))
    print(f"{w.name[:72]:72s} {a:9.3f} {b:9.3f} {b / a:6.3f}", flush=True)
_dispatch.swap_cpu_modules(builds["B"])
with open("/proc/self/maps") as f:
    mapped = {line.split()[-1] for line in f if "/fastops/_cpu/" in line and ".so" in line}
for root in (os.path.abspath(args.other), here):
    print(f"kernel files mapped from {root}: {sum(p.startswith(root + '/') for p in mapped)}")
