"""``python -m fastops info`` and ``python -m fastops bench``."""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import fastops

CPU_IMPLS = ("fastops", "numpy", "onnxruntime", "torch", "cv2", "dask")
GPU_IMPLS = ("fastops-gpu", "cupy", "torch-cuda")


def info():
    print(f"fastops {fastops.__version__}")
    print(f"python {platform.python_version()} on {platform.machine()}, numpy {np.__version__}")
    print(f"backends: {fastops.backends()}")
    print(f"OpenMP threads: {fastops.get_num_threads()}")
    print(f"CPU kernels: {simd_summary()}")
    from fastops import _dispatch
    k = _dispatch.kernel_module("cpu", "deform_conv")
    print(f"convolution GEMM: float32 {k.gemm_backend(np.float32)}, "
          f"float64 {k.gemm_backend(np.float64)}")
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
        for d in range(n):
            props = cupy.cuda.runtime.getDeviceProperties(d)
            print(f"CUDA device {d}: {props['name'].decode()}, "
                  f"compute capability {props['major']}.{props['minor']}")
        print(f"CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")
    except Exception as exc:  # no CuPy, no driver or no device: say which
        print(f"CuPy/CUDA: not available ({type(exc).__name__}: {exc})")


def simd_summary():
    """Which build of each CPU kernel family this machine imports (fastops/_cpu/avx2,
    fastops/_cpu/avx512)."""
    from fastops import _dispatch
    from fastops._cpu import _runtime
    names = {"avx512": "x86-64-v4 (AVX-512)", "avx2": "x86-64-v3 (AVX2, FMA)"}
    built = sorted({f for fams in _dispatch.simd_families().values() for f in fams})
    if not built:
        return "baseline build for every family (this install has no SIMD builds)"
    used = {}
    for f in built:
        subdir = _dispatch.cpu_module(f).split(".")[-2]
        if subdir in names:
            used.setdefault(names[subdir], []).append(f)
    if not used:
        forced = _runtime.simd_cap() == "baseline"
        why = "FASTOPS_SIMD=baseline" if forced else "this CPU has no AVX2/FMA"
        return f"baseline build for every family ({why})"
    return ("; ".join(f"{name} for {', '.join(fams)}" for name, fams in used.items())
            + "; baseline for the rest (FASTOPS_SIMD=baseline or x86-64-v3 caps it)")


def copy_bandwidth(nbytes=256 << 20, repeats=5):
    """Bytes per second of a large NumPy copy (read + write), the memory-bound floor."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return 2 * nbytes / best


# Idle time before each timed call.  Thread pools of the previous implementation keep
# spinning for a while after their call (libgomp, ONNX Runtime, torch) and would steal
# the cores from the next one: interleaved without a pause, ONNX Runtime's TopK went
# from 14 to 19 ms and fastops' from 7 to 13-21 ms; 20 ms of idle time removes it.
SETTLE_S = 0.02


# bench --quick times a call that takes longer than this once instead of three times: a
# slow peer's ratio needs no precision, and the NumPy, cv2 and torch calls of 0.1-1 s
# (batched_nms, topk uint8, cummax along axis 0) took over a quarter of its time (67 s,
# 48 s since, on the 2-core Zen 1 VM with torch installed).
QUICK_ONCE_OVER_S = 0.1


# --hot: untimed calls right before each timed one (its threads awake, its data cached),
# at least HOT_WARMUP of them and for at least HOT_WARMUP_S.  Three calls were not
# enough: cv2's resize, called after fastops, needed about 20 to reach its loop speed
# (uint16 1920x1080x3 -> 640x640 linear: 0.38-0.44 ms after 3, 0.20-0.30 after 20 ms).
HOT_WARMUP = 3
HOT_WARMUP_S = 0.02


# Settings that decide how idle OpenMP threads wait, and so the back-to-back times of the
# libraries that use them: with OMP_WAIT_POLICY=passive torch's scatter_add (8400x80,
# idx 8400x5, axis 1) took 0.142 ms against 0.059-0.066 with libgomp's default spin
# (docs/performance.md, forty-eighth session).  The header and the JSON name those set.
THREAD_ENV = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")


def _thread_env():
    return {k: os.environ[k] for k in THREAD_ENV if k in os.environ}


def _seconds_per_call(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def _warm_up(fn, calls):
    """Untimed calls: at least ``calls``, and more until HOT_WARMUP_S has passed."""
    if calls == 0:
        return
    t_end = time.perf_counter() + HOT_WARMUP_S
    for _ in range(calls):
        fn()
    while time.perf_counter() < t_end:
        fn()


def measure(wl, impls, repeats, missing, hot=False, once_over_s=None):
    """Median seconds per impl; repeats are interleaved so drift hits every impl alike,
    and the order rotates each repeat so that no impl always runs right after the same
    other one (on the 2-vCPU VM a call's speed depended on its predecessor: cv2's
    resize took 2.1 ms right after torch or onnxruntime and 3.0 ms after fastops, and
    fastops' 2.1 ms after cv2 and 2.3-2.4 ms after torch).  Each repeat starts after
    SETTLE_S of idle time: a call after a pause, as in a pipeline that does other work
    between calls.

    ``hot``: each timed call follows untimed calls of the same impl (_warm_up: its
    threads awake, its data cached), as in a loop of calls; workloads with ``hot_ok``
    False keep the pauses.  The two disagree where a library's threads wake slowly: the
    STN grid_sample workload, torch 5.8 ms after a pause, 2.1 hot.  Hot repeats take
    turns too: timed as one block per impl, a slow spell of the VM landed on one impl
    only (three runs of the same code: gather_nd 1Mx16 against onnxruntime 0.39-0.57
    in blocks, 0.54-0.56 in turns after 3 warm-up calls).

    An impl whose library is not installed is added to ``missing`` (name -> module); one
    that has no such op is simply absent from the result.  ``once_over_s``: an impl whose
    warm-up call took longer is timed once, not ``repeats`` times (``bench --quick``)."""
    from fastops._bench.peers import PeerMissing
    fns, first_s = {}, {}
    for impl in impls:
        try:
            fn = wl.prepare(impl)
            t = time.perf_counter()
            fn()          # warm-up; a peer may only refuse here (torch CUDA: no uint8 bilinear)
            first_s[impl] = time.perf_counter() - t
        except PeerMissing as exc:
            missing[impl] = exc.module
            continue
        except NotImplementedError:
            continue
        fns[impl] = fn
    if not fns:     # e.g. the ONNX model workloads without torchvision (it exports them)
        return {}
    warmup = HOT_WARMUP if hot and wl.hot_ok else 0
    times = {impl: [] for impl in fns}
    order = list(fns)
    for r in range(repeats):
        for impl in order[r % len(order):] + order[:r % len(order)]:
            if r and once_over_s is not None and first_s[impl] > once_over_s:
                continue
            time.sleep(SETTLE_S)
            _warm_up(fns[impl], warmup)
            times[impl].append(_seconds_per_call(fns[impl], wl.calls))
    return {impl: float(np.median(ts)) for impl, ts in times.items()}


LEGEND = """\
  columns: median milliseconds per call of each implementation on this machine
  best peer: the fastest peer that computes the same op on the same input
  ratio = fastops / best peer: below 1 fastops is faster (0.25 = 4x faster), above 1 slower
  floor: the memory-bandwidth bound, bytes the op must read and write at the copy
         bandwidth measured above; no implementation can beat it, closer is better
  -: the peer has no such op;  n/i: the peer is not installed (see the end)"""


def bench(argv):
    from fastops._bench import workloads
    from fastops._bench.peers import PIP_NAMES
    p = argparse.ArgumentParser(prog="python -m fastops bench",
                                description="fastops against the peers installed here")
    p.add_argument("--quick", action="store_true", help="fewer repeats (one of a call "
                   "over 0.1 s), skip the largest workloads (about a minute)")
    p.add_argument("--ops", help="comma-separated op names (topk,cummax,nonzero,...)")
    p.add_argument("--repeat", type=int, help="timed repeats per implementation (>= 1)")
    p.add_argument("--device", choices=("cpu", "gpu", "all"), default="all",
                   help="which backends to measure (gpu only where CuPy sees a device)")
    p.add_argument("--hot", action="store_true", help="time each implementation's calls "
                   "back to back (a loop of calls) instead of each after a pause")
    p.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = p.parse_args(argv)
    known = sorted({w.op for w in workloads()})
    ops = set(args.ops.split(",")) if args.ops else None
    if ops and ops - set(known):
        p.error(f"unknown op(s) in --ops: {', '.join(sorted(ops - set(known)))}; "
                f"the ops with workloads are: {', '.join(known)}")
    if args.repeat is not None and args.repeat < 1:
        p.error(f"--repeat must be at least 1, got {args.repeat}")
    gpu = fastops.backends()["gpu"]
    if args.device == "gpu" and not gpu:
        p.error("--device gpu: no CUDA device is usable here (CuPy missing or no GPU); "
                "see python -m fastops info")
    repeats = args.repeat or (3 if args.quick else 9)
    selected = [wl for wl in workloads()
                if not (ops and wl.op not in ops) and not (args.quick and not wl.quick)]
    bw = copy_bandwidth()
    mode = "back to back (--hot)" if args.hot else "each after a pause"
    once = f" (one of a call over {QUICK_ONCE_OVER_S} s)" if args.quick else ""
    env = _thread_env()
    env_note = "".join(f", {k}={v}" for k, v in env.items())
    print(f"fastops {fastops.__version__}, {fastops.get_num_threads()} threads, "
          f"copy bandwidth {bw / 1e9:.1f} GB/s, median of {repeats} calls{once} {mode}, "
          f"in ms{env_note}")
    print(LEGEND)
    width = max([len(w.name) for w in selected] + [20]) + 2
    rows, missing = [], {}
    for wl in selected:
        for device, impls in (("cpu", CPU_IMPLS), ("gpu", GPU_IMPLS)):
            if (device == "gpu" and not gpu) or args.device not in ("all", device):
                continue
            med = measure(wl, impls, repeats, missing, hot=args.hot,
                          once_over_s=QUICK_ONCE_OVER_S if args.quick else None)
            if not med:
                continue
            mine = med.get(impls[0])
            peers = {k: v for k, v in med.items() if k != impls[0]}
            best = min(peers, key=peers.get) if peers else None
            floor = (wl.bytes_moved(wl.inputs()) / bw
                     if wl.bytes_moved and device == "cpu" else None)
            rows.append({"workload": wl.name, "device": device,
                         "ms": {k: v * 1e3 for k, v in med.items()},
                         "best_peer": best,
                         "ratio": (mine / peers[best]) if (best and mine) else None,
                         "floor_ms": floor * 1e3 if floor else None})
            _print_row(rows[-1], impls, width, missing)
            wl._inputs = None      # free the inputs before the next workload
    if missing:
        mods = sorted(set(missing.values()))
        print(f"\nn/i = not installed here: {', '.join(mods)}.  To compare with them: "
              f"pip install {' '.join(PIP_NAMES.get(m, m) for m in mods)}  "
              f"(or pip install -e \".[bench]\" for all CPU peers)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": fastops.get_num_threads(), "copy_GBps": bw / 1e9,
                       "repeats": repeats, "hot": args.hot, "machine": platform.platform(),
                       "thread_env": env,
                       "rows": rows,
                       "not_installed": sorted(set(missing.values()))}, f, indent=1)
    return 0


_header_done = set()


def _fmt_ms(v):
    return f"{v:.3g}" if v < 1 else f"{v:.2f}" if v < 1000 else f"{v:.0f}"


def _print_row(row, impls, width, missing):
    if row["device"] not in _header_done:
        _header_done.add(row["device"])
        cols = "".join(f"{c:>13}" for c in impls)
        print(f"\n{'workload (' + row['device'] + ')':<{width}}{cols}{'best peer':>13}"
              f"{'ratio':>8}{'floor':>9}")
    cells = "".join(f"{_fmt_ms(row['ms'][c]):>13}" if c in row["ms"] else
                    f"{'n/i' if c in missing else '-':>13}" for c in impls)
    ratio = f"{row['ratio']:.3g}" if row["ratio"] else "-"
    floor = _fmt_ms(row["floor_ms"]) if row["floor_ms"] else "-"
    print(f"{row['workload']:<{width}}{cells}{row['best_peer'] or '-':>13}{ratio:>8}"
          f"{floor:>9}", flush=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m fastops {info,bench} [options]\n"
              "  info   version, backends, threads, CuPy/CUDA device\n"
              "  bench  fastops against the installed peers (bench --help)")
        return 0 if argv else 2
    if argv[0] == "info":
        info()
        return 0
    if argv[0] == "bench":
        return bench(argv[1:])
    print(f"unknown command {argv[0]!r}; use info or bench", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
