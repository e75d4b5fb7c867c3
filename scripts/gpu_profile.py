"""Where a fastops GPU call spends its time: waiting for the device, or on the host.

For each quick benchmark workload with a fastops-gpu implementation (or those whose
name contains one of the arguments): the synchronized wall time per call, the part of
it spent waiting in the synchronize after the call (the device still busy: own time of
fastops._bench.peers.gpu_call's wrapper under cProfile), and cProfile's functions with
the most own time per call.  A call that hardly waits is bound by its host side
(Python, launches, syncs inside the op), not by its kernels.

    python scripts/gpu_profile.py [NAME_PART ...]
"""
import cProfile
import os
import pstats
import sys
import time

import numpy as np

from fastops._bench import workloads

CALLS = 30


def main(parts):
    for wl in workloads():
        if "fastops-gpu" not in wl.impls or not (
                any(p in wl.name for p in parts) if parts else wl.quick):
            continue
        inputs = wl.inputs()
        call = wl.impls["fastops-gpu"](inputs)      # synchronizes after each call
        call()
        walls = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            call()
            walls.append(time.perf_counter() - t0)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            call()
        prof.disable()
        stats = pstats.Stats(prof).stats
        # CuPy's Stream.synchronize is compiled: its time counts as the wrapper's own
        wait = sum(v[2] for (path, _, fn), v in stats.items()
                   if (fn == "run" and path.endswith("peers.py")) or "synchronize" in fn
                   ) / CALLS
        top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:8]
        print(f"\n{wl.name}: {1e3 * float(np.median(walls)):.3f} ms a call, "
              f"{1e3 * wait:.3f} ms of it waiting for the device")
        for (path, line, fn), (_, ncalls, tottime, cumtime, _) in top:
            where = f"{os.path.basename(path)}:{line}" if path != "~" else "builtin"
            print(f"  {1e6 * tottime / CALLS:9.1f} us own {1e6 * cumtime / CALLS:9.1f} us cum "
                  f"{ncalls / CALLS:6.1f}x  {fn} ({where})")
        wl._inputs = None
        del inputs, call
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
