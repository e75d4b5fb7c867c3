"""Workloads for topk, cummax/cummin and nonzero (sizes from the issues' targets)."""
import numpy as np

import fastops
from fastops._bench import Workload, peers


def _rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------- topk
def _topk_numpy(inp):
    x, k = inp["x"], inp["k"]
    n = x.shape[1]

    def run():
        part = np.argpartition(x, n - k, axis=1)[:, n - k:]        # the k largest, unordered
        vals = np.take_along_axis(x, part, axis=1)
        order = np.argsort(-vals.astype(np.float64), axis=1, kind="stable")
        return np.take_along_axis(vals, order, axis=1), np.take_along_axis(part, order, axis=1)
    return run


def _topk_workload(rows, n, k, dtype, quick=True):
    def make():
        rng = _rng()
        if np.dtype(dtype).kind == "f":
            x = rng.standard_normal((rows, n), dtype=np.float32).astype(dtype, copy=False)
        else:
            x = rng.integers(0, 256, (rows, n), dtype=dtype)
        return {"x": x, "k": k}

    def ort(inp):
        return peers.ort_session("TopK", [("x", inp["x"]), ("k", np.array([k], np.int64))],
                                 [("values", inp["x"].dtype), ("indices", np.int64)],
                                 {"axis": -1}, opset=11)

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        return lambda: torch.topk(t, k, dim=-1)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: fastops.topk(x, k))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        t = torch.from_numpy(inp["x"]).cuda()
        return peers.torch_gpu_call(lambda: torch.topk(t, k, dim=-1))

    return Workload(
        name=f"topk {rows}x{n} {np.dtype(dtype).name} k={k}", op="topk", make=make,
        impls={"fastops": lambda inp: (lambda: fastops.topk(inp["x"], k)),
               "numpy": _topk_numpy, "onnxruntime": ort, "torch": torch_cpu,
               "fastops-gpu": gpu, "torch-cuda": torch_gpu},
        # k of at most 1 % of a row over an input larger than the caches (issue 14's
        # memory-bound topk): read x once, write k values and k int64 indices a row.
        # Smaller inputs come from the caches and larger k is sorting work, which this
        # floor does not bound.
        bytes_moved=(lambda inp: inp["x"].nbytes + rows * k * (inp["x"].itemsize + 8))
        if 100 * k <= n and rows * n * np.dtype(dtype).itemsize >= 32 << 20 else None,
        heavy=True, quick=quick)


# ------------------------------------------------------- cummax / cummin
def _cum_workload(fn_name, axis):
    def make():
        return {"x": _rng().standard_normal((4096, 4096), dtype=np.float32)}

    fast = getattr(fastops, fn_name)
    ufunc = np.maximum if fn_name == "cummax" else np.minimum

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        f = getattr(torch, fn_name)
        return lambda: f(t, dim=axis)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: fast(x, axis))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        t = torch.from_numpy(inp["x"]).cuda()
        f = getattr(torch, fn_name)
        return peers.torch_gpu_call(lambda: f(t, dim=axis))

    return Workload(
        name=f"{fn_name} 4096x4096 float32 axis={axis}", op=fn_name, make=make,
        impls={"fastops": lambda inp: (lambda: fast(inp["x"], axis)),
               # NumPy computes values only (no indices): a lower bar than the op itself
               "numpy": lambda inp: (lambda: ufunc.accumulate(inp["x"], axis=axis)),
               "torch": torch_cpu, "fastops-gpu": gpu, "torch-cuda": torch_gpu},
        # read 4 B, write a 4 B value and an 8 B index per element
        bytes_moved=lambda inp: inp["x"].size * 16, heavy=True)


# ---------------------------------------------------------------- nonzero
def _nonzero_workload(dtype):
    def make():
        rng = _rng()
        mask = rng.random((4096, 4096)) < 0.1
        x = mask if dtype == "bool" else (mask * rng.standard_normal(mask.shape)).astype(dtype)
        return {"x": x, "nnz": int(mask.sum())}

    def ort(inp):
        return peers.ort_session("NonZero", [("x", inp["x"])], [("y", np.int64)], opset=13)

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        return lambda: torch.nonzero(t)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: fastops.nonzero(x))

    def cupy_gpu(inp):
        cp = peers.cupy()
        x = cp.asarray(inp["x"])
        return peers.gpu_call(lambda: cp.nonzero(x))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        t = torch.from_numpy(inp["x"]).cuda()
        return peers.torch_gpu_call(lambda: torch.nonzero(t))

    return Workload(
        name=f"nonzero 4096x4096 {dtype} 10%", op="nonzero", make=make,
        impls={"fastops": lambda inp: (lambda: fastops.nonzero(inp["x"])),
               "numpy": lambda inp: (lambda: np.nonzero(inp["x"])), "onnxruntime": ort,
               "torch": torch_cpu, "fastops-gpu": gpu, "cupy": cupy_gpu, "torch-cuda": torch_gpu},
        bytes_moved=lambda inp: inp["x"].nbytes + 2 * 8 * inp["nnz"], heavy=True)


WORKLOADS = [
    _topk_workload(1000, 10000, 10, np.float32),
    _topk_workload(64, 1_000_000, 100, np.float32, quick=False),
    _topk_workload(2000, 20000, 10, np.uint8),
    # issue 14's sweep of rows x row length x k (not in --quick): per-anchor class
    # scores (COCO's 80/91 classes), rows of a few dozen, k in the thousands
    *[_topk_workload(r, n, k, np.float32, quick=False)
      for r, n, k in [(100_000, 20, 1), (100_000, 20, 5), (20_000, 80, 1), (20_000, 80, 5),
                      (20_000, 91, 10), (8400, 80, 2), (10_000, 1000, 100),
                      (64, 20_000, 2000), (8, 100_000, 5000), (1, 1_000_000, 10),
                      # classifier logits: 1000 classes, top-10 and a batch's top-5;
                      # k of 17-64 on such rows (the thirty-first session's scan: 1.06-1.26x
                      # onnxruntime before the 64- and 128-group thresholds)
                      (2000, 1000, 10), (256, 1000, 5), (2000, 1000, 30), (500, 4000, 40),
                      (4000, 256, 20),
                      # rows of a few hundred with k of half of them, and whole rows
                      # sorted (the thirty-first session: 1.0-1.3x torch before the
                      # ranks and the radix sort)
                      (10_000, 200, 100), (2000, 1000, 1000)]],
    # float16 scores (a half-precision model's output), found by the twenty-eighth
    # session's scan: converted to float32 by NumPy before the kernel (docs/performance.md)
    _topk_workload(2000, 1000, 10, np.float16, quick=False),
    # NumPy's default float64 (the thirty-first session's scan: 1.27-1.46x torch on rows of
    # 80-4000 before 8-byte ranks and radix sort)
    _topk_workload(10_000, 200, 100, np.float64, quick=False),
    _topk_workload(500, 4000, 2000, np.float64, quick=False),
    _cum_workload("cummax", 0), _cum_workload("cummax", 1),
    _cum_workload("cummin", 0), _cum_workload("cummin", 1),
    _nonzero_workload("float32"), _nonzero_workload("bool"),
]
