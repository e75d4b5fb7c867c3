#!/usr/bin/env python
"""Cold-call probe behind docs/performance.md ("Cold calls"): median / 90th percentile ms
of one call after a 20 ms pause, fastops and its peers interleaved as `python -m fastops
bench` does, then fastops alone, back to back, and on one thread.

    python scripts/cold_call_probe.py {nearest,linear,cubic,area2x,norm}
"""
import sys
import time

import cv2
import numpy as np
import onnxruntime  # noqa: F401  (loaded, as in the bench process)
import torch

import fastops
import fastops.cv as fcv

rng = np.random.default_rng(0)
what = sys.argv[1]
if what == "norm":
    x = rng.standard_normal((1, 4, 512, 512)).astype(np.float32)
    sc, bi = np.ones(4, np.float32), np.zeros(4, np.float32)
    tx, tsc, tbi = torch.from_numpy(x), torch.from_numpy(sc), torch.from_numpy(bi)
    fns = {"fastops": lambda: fastops.instance_norm(x, sc, bi),
           "torch": lambda: torch.nn.functional.instance_norm(tx, weight=tsc, bias=tbi)}
else:
    img = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    flag = {"nearest": 0, "linear": 1, "cubic": 2, "area2x": 1}[what]
    size = (960, 540) if what == "area2x" else (640, 640)
    t_img = torch.from_numpy(img).permute(2, 0, 1)[None].float()
    mode = {0: "nearest", 1: "bilinear", 2: "bicubic"}[flag]
    fns = {"fastops": lambda: fcv.resize(img, size, interpolation=flag),
           "cv2": lambda: cv2.resize(img, size, interpolation=flag),
           "torch": lambda: torch.nn.functional.interpolate(t_img, size=size[::-1], mode=mode)}


def run(names, reps=25, idle=0.02):
    ts = {n: [] for n in names}
    for n in names:
        fns[n]()
    for _ in range(reps):
        for n in names:
            time.sleep(idle)
            t = time.perf_counter()
            fns[n]()
            ts[n].append(time.perf_counter() - t)
    return "  ".join("%s %.2f/%.2f" % (n, np.median(v) * 1e3, np.percentile(v, 90) * 1e3)
                     for n, v in ts.items())


names = list(fns)
print(what, fastops.__file__.split("/fastops/")[0])
print("  interleaved      ", run(names))
print("  fastops alone    ", run(["fastops"]))
print("  fastops hot      ", run(["fastops"], idle=0))
fastops.set_num_threads(1)
print("  1 thread interl. ", run(names))
