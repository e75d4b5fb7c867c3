#!/usr/bin/env python
"""Side-by-side timing of the SIMD builds of every CPU kernel family, in one process: each
repeat runs a workload of fastops/_bench once under each target (baseline, x86-64-v3,
x86-64-v4: the modules that target's dispatch would import, swapped in _dispatch's module
cache), one thread, each after one warm-up call.  Prints the median ms under each target
and the ratio of the last to the one before it; docs/performance.md ("SIMD targets")
chose the families in fastops/_cpu/avx2 and fastops/_cpu/avx512 with it.  A family is
timed under a target only where this CPU runs it.

    python scripts/simd_ab.py [--repeat 9] [--threads 1] [--targets baseline,x86-64-v3]
                              [bench family ...]
"""
import argparse
import importlib
import statistics
import time

import fastops
from fastops import _bench, _dispatch
from fastops._cpu import _runtime

ap = argparse.ArgumentParser()
ap.add_argument("--repeat", type=int, default=9)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--targets", default="baseline,x86-64-v3,x86-64-v4",
                help="comma-separated, oldest first; the ratio is last / the one before")
ap.add_argument("bench_families", nargs="*",
                default=["selection", "scatter", "nms", "roi_align", "resample", "grid_sample",
                         "conv", "norm", "cv"])
args = ap.parse_args()
fastops.set_num_threads(args.threads)

RUNS = {target: getattr(_runtime, test)() for target, _, test in _dispatch.SIMD_BUILDS}
targets = [t for t in args.targets.split(",") if t == "baseline" or RUNS[t]]
families = sorted({f for fams in _dispatch.simd_families().values() for f in fams})


def use(target):
    _dispatch.swap_cpu_modules({fam: importlib.import_module(_dispatch.module_for(target, fam))
                                for fam in families})


for t in targets:
    print(f"{t}: " + ", ".join(f"{f}={_dispatch.module_for(t, f).rsplit('.', 2)[1]}"
                               for f in families))
print(f"{args.threads} thread(s), median of {args.repeat} (ms)")
print(f"{'workload':72s} " + " ".join(f"{t:>10s}" for t in targets) + "  ratio")
for bench_family in args.bench_families:
    for w in _bench.workloads(bench_family):
        try:
            fn = w.prepare("fastops")
        except NotImplementedError:
            continue
        times = {t: [] for t in targets}
        for _ in range(args.repeat):
            for t, ts in times.items():
                use(t)
                fn()
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        med = [statistics.median(times[t]) * 1e3 for t in targets]
        ratio = med[-1] / med[-2] if len(med) > 1 else 1.0
        print(f"{w.name[:72]:72s} " + " ".join(f"{m:10.3f}" for m in med) + f" {ratio:6.2f}",
              flush=True)
use(_dispatch.simd_target())
