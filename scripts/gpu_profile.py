"""Where a fastops GPU call spends its time: on the host, or waiting for the device.

For each quick benchmark workload with a fastops-gpu implementation (or those whose
name contains one of the arguments): the wall time per synchronized call, split into
the call itself (host work: Python, launches and any sync inside the op, such as
reading an output size) and the synchronize after it (the device still busy), and
cProfile's functions with the most own time per call.  A call that hardly waits is
bound by its host side, not by its kernels.

    python scripts/gpu_profile.py [NAME_PART ...]
"""
import cProfile
import os
import pstats
import sys
import time
from unittest import mock

import cupy
import numpy as np

from fastops._bench import peers, workloads

CALLS = 30


def main(parts):
    for wl in workloads():
        if "fastops-gpu" not in wl.impls or not (
                any(p in wl.name for p in parts) if parts else wl.quick):
            continue
        inputs = wl.inputs()
        with mock.patch.object(peers, "gpu_call", lambda fn: fn):   # no sync inside
            call = wl.impls["fastops-gpu"](inputs)
        sync = cupy.cuda.get_current_stream().synchronize
        call()
        sync()
        host, wait = [], []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            sync()
            host.append(t1 - t0)
            wait.append(time.perf_counter() - t1)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            call()
            sync()
        prof.disable()
        stats = pstats.Stats(prof).stats
        top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:8]
        wall = np.add(host, wait)
        print(f"\n{wl.name}: {1e3 * float(np.median(wall)):.3f} ms a call, "
              f"{1e3 * float(np.median(wait)):.3f} ms of it waiting for the device")
        for (path, line, fn), (_, ncalls, tottime, cumtime, _) in top:
            where = f"{os.path.basename(path)}:{line}" if path != "~" else "builtin"
            print(f"  {1e6 * tottime / CALLS:9.1f} us own {1e6 * cumtime / CALLS:9.1f} us cum "
                  f"{ncalls / CALLS:6.1f}x  {fn} ({where})")
        wl._inputs = None
        del inputs, call
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
