"""Standard workloads, shared by ``python -m fastops bench`` and the asv suite.

Each op family has a module here (selection.py, scatter.py, nms.py, roi_align.py) with a
``WORKLOADS`` list.  A :class:`Workload` makes seeded inputs once and, for each
implementation name ("fastops", "numpy", "onnxruntime", "torch", "cv2", and the GPU
ones "fastops-gpu", "cupy", "torch-cuda"), a zero-argument callable that runs the op.
An implementation that is not installed (or has no GPU) raises NotImplementedError
from ``prepare``; input conversion happens there, outside the timed call.
"""
import dataclasses
import importlib
from typing import Callable, Dict, Optional

FAMILIES = ("selection", "scatter", "nms", "roi_align", "resample", "grid_sample", "conv", "norm", "cv", "onnx", "dask", "tiny")


@dataclasses.dataclass
class Workload:
    name: str                                   # e.g. "topk 1000x10000 float32 k=10"
    op: str                                     # the fastops function, for --ops
    make: Callable[[], dict]                    # seeded inputs (NumPy)
    impls: Dict[str, Callable[[dict], Callable[[], object]]]
    bytes_moved: Optional[Callable[[dict], int]] = None   # memory-bound ops: bytes read+written
    heavy: bool = False                         # in the thread-scaling benchmark
    quick: bool = True                          # part of `bench --quick`
    calls: int = 1                              # calls per timing (microsecond workloads)
    # back-to-back calls measure the call (bench --hot); False where a repeat is not a
    # new computation (fastops._bench.dask: the scheduler still holds the last result)
    hot_ok: bool = True

    _inputs: Optional[dict] = dataclasses.field(default=None, repr=False)

    def inputs(self):
        if self._inputs is None:
            self._inputs = self.make()
        return self._inputs

    def prepare(self, impl):
        """A zero-argument callable running this workload with ``impl``."""
        if impl not in self.impls:
            raise NotImplementedError(f"{impl} does not compute {self.name}")
        return self.impls[impl](self.inputs())


def workloads(family=None):
    fams = FAMILIES if family is None else (family,)
    out = []
    for fam in fams:
        try:
            mod = importlib.import_module("fastops._bench." + fam)
        except ModuleNotFoundError as exc:
            if exc.name == "fastops._bench." + fam:
                continue      # family not built yet
            raise
        out.extend(mod.WORKLOADS)
    return out


def impl_names():
    return ("fastops", "numpy", "onnxruntime", "torch", "cv2", "dask", "fastops-gpu", "cupy",
            "torch-cuda")
