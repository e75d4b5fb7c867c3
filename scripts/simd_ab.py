#!/usr/bin/env python
"""Side-by-side timing of the baseline and the x86-64-v3 (AVX2) build of every CPU kernel
family, in one process: each repeat runs a workload of fastops/_bench on the baseline
modules and then on the AVX2 ones (swapped in _dispatch's module cache), one thread,
after one warm-up call each.  Prints the median ms of both and the ratio avx2 / baseline;
docs/performance.md ("SIMD targets") chose the families in fastops/_cpu/avx2 with it.

    python scripts/simd_ab.py [--repeat 9] [--threads 1] [family ...]
"""
import argparse
import importlib
import pkgutil
import statistics
import time

import fastops
from fastops import _bench, _dispatch
from fastops._cpu import avx2

ap = argparse.ArgumentParser()
ap.add_argument("--repeat", type=int, default=9)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("bench_families", nargs="*",
                default=["selection", "scatter", "nms", "roi_align", "resample", "grid_sample",
                         "conv", "norm", "cv"])
args = ap.parse_args()
fastops.set_num_threads(args.threads)
built = sorted(m.name for m in pkgutil.iter_modules(avx2.__path__))


def use(prefix):
    for fam in built:
        _dispatch._KERNEL_MODULES["cpu", fam] = importlib.import_module(prefix + fam)
    _dispatch._KERNELS.clear()
    _dispatch._FAST.clear()         # (the compiled fast paths of small calls follow too)


print(f"AVX2 builds: {', '.join(built)}; {args.threads} thread(s), median of {args.repeat}")
print(f"{'workload':72s} {'baseline':>9s} {'avx2':>9s} {'ratio':>6s}")
for bench_family in args.bench_families:
    for w in _bench.workloads(bench_family):
        try:
            fn = w.prepare("fastops")
        except NotImplementedError:
            continue
        times = {"fastops._cpu.": [], "fastops._cpu.avx2.": []}
        for _ in range(args.repeat):
            for prefix, ts in times.items():
                use(prefix)
                fn()
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        base, fast = (statistics.median(t) * 1e3 for t in times.values())
        print(f"{w.name[:72]:72s} {base:9.3f} {fast:9.3f} {fast / base:6.2f}", flush=True)
use("fastops._cpu.")
