"""Workloads for scatter_elements, scatter_nd, gather_elements, gather_nd (issue #3 sizes).

Indices are random (with duplicates), int64.  Every scatter implementation allocates a
new output and copies data into it (16 MB for 2000x2000, 64 MB for 1M x 16 float32).

bytes_moved (the bench's memory floor) counts what any implementation must move: each
sequential array once, and for the random reads of the gathers the distinct 64-byte
lines of data they touch (memory moves whole lines: the 200k gathered rows of 64 bytes
sit 16 bytes off a line and touch two lines each; the 1M gathered elements of the
2000x2000 array touch ~98 % of its lines).  A scatter's random writes land in the
output that its copy writes, so an implementation that scatters while the copied lines
are cached moves them once: the copy (read and write) plus indices and updates.
"""
import functools

import numpy as np

import fastops
from fastops._bench import Workload, peers


def _rng():
    return np.random.default_rng(0)


def _elements_inputs():
    rng = _rng()
    return {"data": rng.standard_normal((2000, 2000), dtype=np.float32),
            "indices": rng.integers(0, 2000, (500, 2000), dtype=np.int64),
            "updates": rng.standard_normal((500, 2000), dtype=np.float32)}


def _elements_inputs_of(data_shape, index_shape, axis):
    """Random data, indices into ``axis`` and updates for the elements workloads."""
    def make():
        rng = _rng()
        return {"data": rng.standard_normal(data_shape, dtype=np.float32),
                "indices": rng.integers(0, data_shape[axis], index_shape, dtype=np.int64),
                "updates": rng.standard_normal(index_shape, dtype=np.float32)}
    return make


# Issue 14's short-row sweep: the elements ops along the last axis (per-anchor class
# scores: 8400 anchors x 80 classes, 5 picked), over 1-D arrays (a take; a histogram-like
# scatter-add) and with a short trailing extent, where every index row is a few
# elements.  (name, data shape, indices shape, axis)
SHORT_ROWS = [
    ("8400x80 float32 idx 8400x5", (8400, 80), (8400, 5), 1),
    ("2000x2000 float32 idx 2000x500", (2000, 2000), (2000, 500), 1),
    ("10M float32 idx 1M", (10_000_000,), (1_000_000,), 0),
    ("100k float32 idx 1M", (100_000,), (1_000_000,), 0),
    ("1000x2000x2 float32 idx 1000x500x2", (1000, 2000, 2), (1000, 500, 2), 1),
]


@functools.lru_cache(maxsize=1)
def _nd_data():
    """The 64 MB data array, shared by every scatter_nd/gather_nd workload (never written)."""
    return _rng().standard_normal((1_000_000, 16), dtype=np.float32)


def _nd_inputs():
    rng = _rng()
    rng.standard_normal((1_000_000, 16), dtype=np.float32)   # keep the stream as before
    return {"data": _nd_data(),
            "indices": rng.integers(0, 1_000_000, (200_000, 1), dtype=np.int64),
            "updates": rng.standard_normal((200_000, 16), dtype=np.float32)}


def _line_bytes(arr, starts, nbytes):
    """Bytes of the distinct 64-byte lines of ``arr`` that reads of ``nbytes`` bytes at
    the byte offsets ``starts`` touch."""
    at = arr.__array_interface__["data"][0] + np.asarray(starts)
    first, last = at // 64, (at + nbytes - 1) // 64
    lines = first[:, None] + np.arange(int((last - first).max()) + 1)
    return 64 * np.unique(lines[lines <= last[:, None]]).size


def _gather_elements_bytes(inp, axis=0):
    """indices read, output written, and the lines of data the reads touch."""
    d, i = inp["data"], inp["indices"]
    coords = list(np.indices(i.shape, sparse=True))
    coords[axis] = i
    offsets = np.ravel_multi_index(coords, d.shape) * d.itemsize
    return i.nbytes + i.size * d.itemsize + _line_bytes(d, offsets.ravel(), d.itemsize)


def _gather_nd_bytes(inp):
    """indices read, output rows written, and the lines of data the rows touch."""
    d, i = inp["data"], inp["indices"]
    row = d.shape[1] * d.itemsize
    return i.nbytes + i.shape[0] * row + _line_bytes(d, i[:, 0] * row, row)


def _scatter_bytes(inp):
    """the copy (read and write), indices and updates read (see the module docstring)."""
    return 2 * inp["data"].nbytes + inp["indices"].nbytes + inp["updates"].nbytes


def _torch_cpu(inp, *names):
    torch = peers.torch_cpu()
    return torch, [torch.from_numpy(inp[n]) for n in names]


def _torch_gpu(inp, *names):
    torch = peers.torch_cuda()
    return torch, [torch.from_numpy(inp[n]).cuda() for n in names]


def _gpu_fastops(fn, *names):
    def prep(inp):
        g = peers.to_gpu(inp)
        args = [g[n] for n in names]
        return peers.gpu_call(lambda: fn(*args))
    return prep


# ------------------------------------------------------------ scatter_elements
def _scatter_elements_workload(reduction, name="2000x2000 float32 idx 500x2000",
                               make=_elements_inputs, axis=0):
    def fast(inp):
        d, i, u = inp["data"], inp["indices"], inp["updates"]
        return lambda: fastops.scatter_elements(d, i, u, axis=axis, reduction=reduction)

    def numpy_impl(inp):
        d, i, u = inp["data"], inp["indices"], inp["updates"]
        coords = list(np.indices(i.shape, sparse=True))
        coords[axis] = i
        coords = tuple(coords)

        def run():
            out = d.copy()
            if reduction == "none":
                np.put_along_axis(out, i, u, axis=axis)
            else:
                np.add.at(out, coords, u)
            return out
        return run

    def ort(inp):
        return peers.ort_session(
            "ScatterElements", [("data", inp["data"]), ("indices", inp["indices"]),
                                ("updates", inp["updates"])],
            [("out", np.float32)], {"axis": axis, "reduction": reduction}, opset=18)

    def torch_impl(inp):
        torch, (d, i, u) = _torch_cpu(inp, "data", "indices", "updates")
        if reduction == "none":
            return lambda: torch.scatter(d, axis, i, u)
        return lambda: torch.scatter_add(d, axis, i, u)

    def torch_gpu(inp):
        torch, (d, i, u) = _torch_gpu(inp, "data", "indices", "updates")
        f = torch.scatter if reduction == "none" else torch.scatter_add
        return peers.torch_gpu_call(lambda: f(d, axis, i, u))

    return Workload(
        name=f"scatter_elements {name} axis={axis} {reduction}",
        op="scatter_elements", make=make, quick=make is _elements_inputs,
        impls={"fastops": fast, "numpy": numpy_impl, "onnxruntime": ort, "torch": torch_impl,
               "fastops-gpu": _gpu_fastops(
                   lambda d, i, u: fastops.scatter_elements(d, i, u, axis, reduction),
                   "data", "indices", "updates"),
               "torch-cuda": torch_gpu},
        bytes_moved=_scatter_bytes, heavy=True)


# ------------------------------------------------------------------ scatter_nd
def _nd_inputs_with(distinct):
    """_nd_inputs with the 200k target rows drawn from ``distinct`` rows (a permutation
    when distinct == 200k: no duplicates; 16: every row hit 12500 times)."""
    def make():
        inp = _nd_inputs()
        rng = _rng()
        rows = rng.choice(1_000_000, distinct, replace=False)
        pick = rng.permutation(200_000) % distinct
        inp["indices"] = rows[pick][:, None].astype(np.int64)
        return inp
    return make


def _scatter_nd_workload(reduction, distinct=None):
    def fast(inp):
        d, i, u = inp["data"], inp["indices"], inp["updates"]
        return lambda: fastops.scatter_nd(d, i, u, reduction=reduction)

    def numpy_impl(inp):
        d, i, u = inp["data"], inp["indices"][:, 0], inp["updates"]

        def run():
            out = d.copy()
            if reduction == "none":
                out[i] = u
            else:
                np.add.at(out, i, u)
            return out
        return run

    def ort(inp):
        return peers.ort_session(
            "ScatterND", [("data", inp["data"]), ("indices", inp["indices"]),
                          ("updates", inp["updates"])],
            [("out", np.float32)], {"reduction": reduction}, opset=18)

    def torch_impl(inp):
        torch, (d, i, u) = _torch_cpu(inp, "data", "indices", "updates")
        i = i[:, 0]
        return lambda: d.index_put((i,), u, accumulate=reduction == "add")

    def torch_gpu(inp):
        torch, (d, i, u) = _torch_gpu(inp, "data", "indices", "updates")
        i = i[:, 0]
        return peers.torch_gpu_call(lambda: d.index_put((i,), u, accumulate=reduction == "add"))

    return Workload(
        name=f"scatter_nd 1Mx16 float32 200k rows {reduction}"
        + ("" if distinct is None else f" {distinct} distinct"), op="scatter_nd",
        make=_nd_inputs if distinct is None else _nd_inputs_with(distinct),
        quick=distinct is None,
        impls={"fastops": fast, "numpy": numpy_impl, "onnxruntime": ort, "torch": torch_impl,
               "fastops-gpu": _gpu_fastops(
                   lambda d, i, u: fastops.scatter_nd(d, i, u, reduction),
                   "data", "indices", "updates"),
               "torch-cuda": torch_gpu},
        bytes_moved=_scatter_bytes, heavy=True)


# --------------------------------------------------------------------- gathers
def _elements_inputs_slab():
    """A 41 MB slab (more than L3) read by 128 index rows: each line ~4 times."""
    rng = _rng()
    return {"data": rng.standard_normal((512, 20_000), dtype=np.float32),
            "indices": rng.integers(0, 512, (128, 20_000), dtype=np.int64)}


def _gather_elements_workload(name="2000x2000 float32 idx 500x2000", make=_elements_inputs,
                              axis=0):
    def ort(inp):
        return peers.ort_session("GatherElements", [("data", inp["data"]),
                                                    ("indices", inp["indices"])],
                                 [("out", np.float32)], {"axis": axis}, opset=13)

    def torch_impl(inp):
        torch, (d, i) = _torch_cpu(inp, "data", "indices")
        return lambda: torch.gather(d, axis, i)

    def torch_gpu(inp):
        torch, (d, i) = _torch_gpu(inp, "data", "indices")
        return peers.torch_gpu_call(lambda: torch.gather(d, axis, i))

    return Workload(
        name=f"gather_elements {name} axis={axis}", op="gather_elements", make=make,
        quick=make is _elements_inputs,
        impls={"fastops": lambda inp: (lambda: fastops.gather_elements(
                   inp["data"], inp["indices"], axis=axis)),
               "numpy": lambda inp: (lambda: np.take_along_axis(
                   inp["data"], inp["indices"], axis=axis)),
               "onnxruntime": ort, "torch": torch_impl,
               "fastops-gpu": _gpu_fastops(lambda d, i: fastops.gather_elements(d, i, axis),
                                           "data", "indices"),
               "torch-cuda": torch_gpu},
        bytes_moved=lambda inp: _gather_elements_bytes(inp, axis))


def _gather_nd_workload():
    def ort(inp):
        return peers.ort_session("GatherND", [("data", inp["data"]),
                                              ("indices", inp["indices"])],
                                 [("out", np.float32)], opset=13)

    def torch_impl(inp):
        torch, (d, i) = _torch_cpu(inp, "data", "indices")
        i = i[:, 0]
        return lambda: torch.index_select(d, 0, i)

    def torch_gpu(inp):
        torch, (d, i) = _torch_gpu(inp, "data", "indices")
        i = i[:, 0]
        return peers.torch_gpu_call(lambda: torch.index_select(d, 0, i))

    return Workload(
        name="gather_nd 1Mx16 float32 200k rows", op="gather_nd", make=_nd_inputs,
        impls={"fastops": lambda inp: (lambda: fastops.gather_nd(inp["data"], inp["indices"])),
               "numpy": lambda inp: (lambda: inp["data"][inp["indices"][:, 0]]),
               "onnxruntime": ort, "torch": torch_impl,
               "fastops-gpu": _gpu_fastops(lambda d, i: fastops.gather_nd(d, i),
                                           "data", "indices"),
               "torch-cuda": torch_gpu},
        bytes_moved=_gather_nd_bytes)


# ------------------------------------------------------- expanded row indices
def _expanded_rows_inputs():
    """torchvision's exported MultiScaleRoIAlign merge: 150 RoIs' (256, 7, 7) features
    scattered into zeros by a row index expanded over (C, H, W), a broadcast view (ONNX
    Expand, torch's expand); the gather reads the same rows back."""
    rng = _rng()
    rows = rng.permutation(150).astype(np.int64)
    return {"data": np.zeros((150, 256, 7, 7), np.float32), "rows": rows,
            "indices": np.broadcast_to(rows[:, None, None, None], (150, 256, 7, 7)),
            "updates": rng.standard_normal((150, 256, 7, 7), dtype=np.float32)}


def _expanded_rows_workload(op):
    """op "scatter_elements" (reduction none) or "gather_elements", axis 0.  onnxruntime
    gets the indices materialized, as its Expand node would leave them (the Expand itself
    is not timed); torch gets an expanded view, NumPy the broadcast view."""
    def ort(inp):
        idx = np.ascontiguousarray(inp["indices"])
        if op == "gather_elements":
            return peers.ort_session("GatherElements", [("data", inp["updates"]),
                                                        ("indices", idx)],
                                     [("out", np.float32)], {"axis": 0}, opset=13)
        return peers.ort_session("ScatterElements", [("data", inp["data"]), ("indices", idx),
                                                     ("updates", inp["updates"])],
                                 [("out", np.float32)], {"axis": 0}, opset=18)

    def torch_impl(inp):
        torch, (d, r, u) = _torch_cpu(inp, "data", "rows", "updates")
        i = r.view(-1, 1, 1, 1).expand(*u.shape)
        if op == "gather_elements":
            return lambda: torch.gather(u, 0, i)
        return lambda: torch.scatter(d, 0, i, u)

    def numpy_impl(inp):
        d, i, u = inp["data"], inp["indices"], inp["updates"]
        if op == "gather_elements":
            return lambda: np.take_along_axis(u, i, axis=0)

        def run():
            out = d.copy()
            np.put_along_axis(out, i, u, axis=0)
            return out
        return run

    def fast(inp):
        d, i, u = inp["data"], inp["indices"], inp["updates"]
        if op == "gather_elements":
            return lambda: fastops.gather_elements(u, i, axis=0)
        return lambda: fastops.scatter_elements(d, i, u, axis=0)

    def moved(inp):   # the row indices, data (and its copy) or the rows read, the output
        n = inp["updates"].nbytes
        return inp["rows"].nbytes + (3 * n if op == "scatter_elements" else 2 * n)

    return Workload(
        name=f"{op} 150x256x7x7 float32 rows expanded over 256x7x7 axis=0"
        + (" none" if op == "scatter_elements" else ""),
        op=op, make=_expanded_rows_inputs, quick=False,
        impls={"fastops": fast, "numpy": numpy_impl, "onnxruntime": ort,
               "torch": torch_impl},
        bytes_moved=moved, heavy=op == "scatter_elements")


WORKLOADS = [
    _scatter_elements_workload("none"), _scatter_elements_workload("add"),
    _scatter_nd_workload("none"), _scatter_nd_workload("add"),
    _gather_elements_workload(), _gather_nd_workload(),
    # a data slab bigger than L3 (not in --quick)
    _gather_elements_workload("512x20000 float32 idx 128x20000", _elements_inputs_slab),
    # issue 14's duplicate-density sweep (not in --quick)
    *[_scatter_nd_workload(r, d) for r in ("none", "add") for d in (200_000, 20_000, 16)],
    # issue 14's short-row sweep (not in --quick)
    *[_gather_elements_workload(n, _elements_inputs_of(ds, i, a), a)
      for n, ds, i, a in SHORT_ROWS],
    *[_scatter_elements_workload("add", n, _elements_inputs_of(ds, i, a), a)
      for n, ds, i, a in SHORT_ROWS],
    # a detector's RoIAlign merge: row indices expanded over the feature (not in --quick)
    _expanded_rows_workload("scatter_elements"), _expanded_rows_workload("gather_elements"),
]
