"""Workloads for fastops.dask against dask's own algorithms (issue 15's targets).

Everything runs on one dask.distributed LocalCluster with 2 single-threaded worker
processes, started on first use and closed at exit.  The inputs are generated on the
workers and persisted there once, so every implementation reads the same worker-resident
chunks; a timed call builds the graph and persists the results on the workers
(``persist`` + ``wait``, nothing gathered), as a pipeline stage would.

========================  ==========================================================
topk                      (64, 2_000_000) float32 in 8 chunks of (64, 250_000) along
                          the axis, k = 10: fastops.dask.topk (values and indices)
                          against da.topk + da.argtopk (what dask needs for both),
                          da.topk alone and da.argtopk alone
cummax                    (8192, 4096) float32, along axis 0 in 8 chunks of (1024, 4096)
                          (time series: chunks along time) and along axis 1 in 8 chunks
                          of (8192, 512): fastops.dask.cummax (values and indices)
                          against da.cumreduction(np.maximum.accumulate, np.maximum,
                          -inf) (values only)
nonzero                   (8192, 4096) bool, 10 % nonzero, 8 chunks of (1024, 4096):
                          fastops.dask.nonzero (known chunk sizes) against
                          da.argwhere + compute_chunk_sizes() (da.nonzero is its
                          columns)
========================  ==========================================================

The "dask" implementation name is not in fastops._bench.impl_names yet (the lead adds
it); meanwhile ``python -m fastops._bench.dask`` prints the side-by-side table.
"""
import atexit
import logging
import sys
import time

import numpy as np

from fastops._bench import Workload, peers

_STATE = {}


def _client():
    """The shared LocalCluster client (2 workers x 1 thread, processes)."""
    if "client" not in _STATE:
        peers._need("dask")
        distributed = peers._need("distributed")
        # silence_logs: dask's own da.argwhere + compute_chunk_sizes() graph makes the
        # scheduler warn about keys resubmitted with a different run_spec (dask#9888)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           silence_logs=logging.ERROR)
        # not the process-wide default: the scheduler of everything else in this process
        # (a test suite importing these workloads) stays as it was; _run makes it current
        client = distributed.Client(cluster, set_as_default=False)
        _STATE.update(client=client, cluster=cluster)
        atexit.register(_close)
    return _STATE["client"]


def _close():
    client, cluster = _STATE.pop("client", None), _STATE.pop("cluster", None)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()


def _persisted(key, make):
    """A dask array made and persisted on the cluster once per process."""
    if key not in _STATE:
        client = _client()
        from distributed import wait
        with client.as_current():
            arr = _spread(client, make())
        _STATE[key] = arr
    return _STATE[key]


def _spread(client, arr):
    """``arr`` persisted with its chunks dealt to the workers in turn.  Left to itself the
    scheduler put 6 of 8 chunks on one worker (and 5/3; client.rebalance too), which
    made every implementation that one worker's speed."""
    import dask
    import dask.array as da
    from distributed import wait
    workers = sorted(client.scheduler_info()["workers"])
    blocks = arr.to_delayed()
    parts = np.empty(blocks.shape, dtype=object)
    for i, idx in enumerate(np.ndindex(blocks.shape)):
        fut = client.compute(blocks[idx], workers=[workers[i % len(workers)]])
        shape = tuple(c[j] for c, j in zip(arr.chunks, idx))
        parts[idx] = da.from_delayed(dask.delayed(fut), shape, arr.dtype)
    out = client.persist(da.block(parts.tolist()))
    wait(out)
    return out


def _run(make_outputs):
    """persist the outputs on the workers, wait, release: one timed call."""
    client = _client()
    from distributed import wait

    def fn():
        with client.as_current():   # graphs that compute while built (counts) use it too
            outs = client.persist(list(make_outputs()))
            wait(outs)
        del outs
    return fn


def _random(shape, chunks, dtype=np.float32):
    import dask.array as da
    return da.random.default_rng(0).standard_normal(shape, chunks=chunks, dtype=dtype)


# ------------------------------------------------------------------ topk
_TOPK = ((64, 2_000_000), (64, 250_000), 10)


def _topk_x():
    shape, chunks, _ = _TOPK
    return _persisted("topk", lambda: _random(shape, chunks))


def _topk_workload(peer):
    shape, chunks, k = _TOPK

    def make():
        return {"x": _topk_x()}

    def fast(inp):
        import fastops.dask as fd
        return _run(lambda: fd.topk(inp["x"], k, axis=1))

    def dask_impl(inp):
        import dask.array as da
        x = inp["x"]
        if peer == "topk+argtopk":
            return _run(lambda: (da.topk(x, k, axis=1), da.argtopk(x, k, axis=1)))
        if peer == "topk":
            return _run(lambda: (da.topk(x, k, axis=1),))
        return _run(lambda: (da.argtopk(x, k, axis=1),))

    return Workload(
        name=f"dask topk {shape[0]}x{shape[1]} f32 {shape[1] // chunks[1]} chunks k={k} "
             f"vs da.{peer}",
        op="dask.topk", make=make, impls={"fastops": fast, "dask": dask_impl},
        quick=False, hot_ok=False)


# ------------------------------------------------------------------ cummax
def _cummax_workload(axis):
    shape = (8192, 4096)
    chunks = (1024, 4096) if axis == 0 else (8192, 512)

    def make():
        return {"x": _persisted(("cummax", axis), lambda: _random(shape, chunks))}

    def fast(inp):
        import fastops.dask as fd
        return _run(lambda: fd.cummax(inp["x"], axis))

    def dask_impl(inp):
        import dask.array as da
        x = inp["x"]
        return _run(lambda: (da.reductions.cumreduction(
            np.maximum.accumulate, np.maximum, -np.inf, x, axis, x.dtype),))

    return Workload(
        name=f"dask cummax {shape[0]}x{shape[1]} f32 axis={axis} 8 chunks",
        op="dask.cummax", make=make, impls={"fastops": fast, "dask": dask_impl},
        quick=False, hot_ok=False)


# ------------------------------------------------------------------ nonzero
def _nonzero_workload():
    shape, chunks = (8192, 4096), (1024, 4096)

    def make():
        def mk():
            import dask.array as da
            return da.random.default_rng(1).random(shape, chunks=chunks) < 0.1
        return {"x": _persisted("nonzero", mk)}

    def fast(inp):
        import fastops.dask as fd
        return _run(lambda: (fd.nonzero(inp["x"]),))

    def dask_impl(inp):
        import dask.array as da

        def outs():
            ind = da.argwhere(inp["x"])
            ind.compute_chunk_sizes()
            return (ind,)
        return _run(outs)

    return Workload(
        name="dask nonzero 8192x4096 bool 10% 8 chunks (known chunk sizes)",
        op="dask.nonzero", make=make, impls={"fastops": fast, "dask": dask_impl},
        quick=False, hot_ok=False)


WORKLOADS = [
    _topk_workload("topk+argtopk"), _topk_workload("topk"), _topk_workload("argtopk"),
    _cummax_workload(0), _cummax_workload(1),
    _nonzero_workload(),
]


# ------------------------------------------------------------------ scaling (docs/scaling.md)
def _graph_tasks(outs, inputs):
    """Tasks a computation adds on top of its (persisted) inputs."""
    keys = set()
    for o in outs:
        keys |= set(o.__dask_graph__().keys())
    for i in inputs:
        keys -= set(i.__dask_graph__().keys())
    return len(keys)


def _moved(client):
    """Bytes sent between workers (and to the client) so far, all workers together."""
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
               .values())


def _scaling_cases():
    """(function, chunking label, make inputs, {impl: make outputs}) for the table."""
    import dask.array as da

    import fastops.dask as fd
    rng = da.random.default_rng(0)
    cases = []
    for n in (4, 16, 64):
        def mk(n=n):
            return {"x": rng.standard_normal((64, 1 << 20), chunks=(64, (1 << 20) // n),
                                             dtype=np.float32)}
        cases.append(("topk k=10", f"{n} chunks", mk, {
            "fastops": lambda i: list(fd.topk(i["x"], 10, 1)),
            "dask": lambda i: [da.topk(i["x"], 10, axis=1), da.argtopk(i["x"], 10, axis=1)]}))
    for n in (4, 16, 64):
        def mk(n=n):
            return {"x": rng.standard_normal((4096, 4096), chunks=(4096 // n, 4096),
                                             dtype=np.float32)}
        cases.append(("cummax axis 0", f"{n} chunks", mk, {
            "fastops": lambda i: list(fd.cummax(i["x"], 0)),
            "fastops-blelloch": lambda i: list(fd.cummax(i["x"], 0, method="blelloch")),
            "dask": lambda i: [da.reductions.cumreduction(
                np.maximum.accumulate, np.maximum, -np.inf, i["x"], 0, np.float32)]}))
    for n in (4, 16, 64):
        def mk(n=n):
            return {"x": rng.random((8192, 4096), chunks=(8192 // n, 4096)) < 0.1}
        cases.append(("nonzero", f"{n} chunks", mk, {
            "fastops": lambda i: [fd.nonzero(i["x"])],
            "dask": lambda i: [_argwhere_known(i["x"])]}))
    for n in (1, 4, 8):
        def mk(n=n):
            return {"x": rng.standard_normal((1, 3, 4096, 4096),
                                             chunks=(1, 3, 4096 // n, 4096 // n),
                                             dtype=np.float32)}
        cases.append(("resize linear 0.5x", f"{n}x{n} spatial chunks", mk, {
            "fastops": lambda i: [fd.resize(i["x"], scales=[1, 1, 0.5, 0.5],
                                            mode="linear")]}))
    for n in (4, 16, 64):
        def mk(n=n):
            import numpy.random as npr
            g = npr.default_rng(0)
            xy = g.uniform(0, 600, (1024, 1000, 2))
            wh = g.uniform(10, 120, (1024, 1000, 2))
            boxes = np.concatenate([xy, xy + wh], -1).astype(np.float32)
            scores = g.random((1024, 4, 1000), dtype=np.float32)
            return {"boxes": da.from_array(boxes, chunks=(1024 // n, 1000, 4)),
                    "scores": da.from_array(scores, chunks=(1024 // n, 4, 1000))}
        cases.append(("non_max_suppression max=100", f"{n} chunks", mk, {
            "fastops": lambda i: [fd.non_max_suppression(i["boxes"], i["scores"], 100,
                                                         0.5, 0.05)]}))
    for n in (4, 16, 64):
        def mk(n=n):
            import numpy.random as npr
            g = npr.default_rng(0)
            x = rng.standard_normal((64, 256, 50, 68), chunks=(64 // n, 256, 50, 68),
                                    dtype=np.float32)
            b = np.repeat(np.arange(64), 100)
            xy = g.uniform(0, 200, (b.size, 2))
            rois = np.concatenate([b[:, None], xy, xy + g.uniform(8, 64, (b.size, 2))],
                                  1).astype(np.float32)
            return {"x": x, "rois": rois}
        cases.append(("roi_align 7x7", f"{n} chunks", mk, {
            "fastops": lambda i: [fd.roi_align(i["x"], i["rois"], 7, 0.25, 2)]}))
    return cases


def _argwhere_known(x):
    import dask.array as da
    ind = da.argwhere(x)
    ind.compute_chunk_sizes()
    return ind


def scaling(workers=(1, 2), repeat=3):
    """Tasks, bytes moved between workers and wall time per function, chunking and
    worker count (LocalCluster, 1 thread per worker): the measured half of
    docs/scaling.md.  Prints a Markdown table."""
    import dask.array as da
    import distributed
    rows = []
    for nw in workers:
        with distributed.LocalCluster(n_workers=nw, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cl, \
                distributed.Client(cl) as client:
            for fn, label, mk, impls in _scaling_cases():
                inp = mk()
                inp = {k: (client.persist(v) if isinstance(v, da.Array) else v)
                       for k, v in inp.items()}
                distributed.wait([v for v in inp.values() if isinstance(v, da.Array)])
                arrays = [v for v in inp.values() if isinstance(v, da.Array)]
                for impl, make in impls.items():
                    outs = make(inp)                       # warm-up, and the task count
                    tasks = _graph_tasks(outs, arrays)
                    distributed.wait(client.persist(outs))
                    del outs
                    times, moved = [], []
                    for _ in range(repeat):
                        b0 = _moved(client)
                        t = time.perf_counter()
                        outs = client.persist(make(inp))
                        distributed.wait(outs)
                        times.append(time.perf_counter() - t)
                        del outs
                        moved.append(_moved(client) - b0)
                    rows.append((fn, label, nw, impl, tasks, float(np.median(moved)),
                                 float(np.median(times))))
                    print(f"| {fn} | {label} | {nw} | {impl} | {tasks} | "
                          f"{rows[-1][5] / 2**20:.1f} | {rows[-1][6] * 1e3:.0f} |",
                          flush=True)
                del inp, arrays
    return rows


def main(argv=None):
    """Side by side, interleaved: median ms per implementation and the ratios."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m fastops._bench.dask")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--scaling", action="store_true",
                   help="tasks, bytes moved and time for 1 and 2 workers (docs/scaling.md)")
    args = p.parse_args(argv)
    if args.scaling:
        print("| function | chunking | workers | impl | tasks | MiB moved | ms |")
        print("|---|---|---|---|---|---|---|")
        scaling(repeat=max(1, min(args.repeat, 3)))
        return 0
    print(f"LocalCluster: 2 worker processes x 1 thread; median of {args.repeat} "
          f"interleaved calls, ms")
    print(f"{'workload':<66}{'fastops':>10}{'dask':>10}{'dask/fastops':>14}")
    for wl in WORKLOADS:
        fns = {impl: wl.prepare(impl) for impl in ("fastops", "dask")}
        for fn in fns.values():
            fn()                                    # warm-up
        times = {impl: [] for impl in fns}
        for _ in range(args.repeat):
            for impl, fn in fns.items():
                time.sleep(0.05)
                t = time.perf_counter()
                fn()
                times[impl].append(time.perf_counter() - t)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"{wl.name:<66}{med['fastops']:>10.1f}{med['dask']:>10.1f}"
              f"{med['dask'] / med['fastops']:>14.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
