"""fastops on Dask arrays: the same bits as single-machine fastops, on chunked NumPy or
CuPy arrays, on any scheduler (dask.distributed included).

=========================  ===================================================
``topk``                   per-chunk fastops.topk, tree of combines; global indices
``cummax`` / ``cummin``    per-chunk scan, carried (value, index) pairs
``nonzero``                count per chunk, then fill: known chunk sizes
``non_max_suppression``    per chunk of images, ``pad=True`` (static shapes)
``roi_align``              per chunk of images, for the RoIs of those images
``resize``                 ONNX Resize, any chunking (spatial too), no seams
``cv.resize``              cv2.resize of every frame of a stack
=========================  ===================================================

Threads: each task runs fastops' OpenMP kernels with the share of the host's cores that
one task slot has (cores // task slots on the host, at most the parallel width of the
graph layer); ``dask.config.set({"fastops.threads": n})`` when the graph is built fixes
it.  See docs/scaling.md for the graphs, their task counts and the bytes they move.

Needs the optional extra ``fastops[dask]`` (dask[array] and distributed).
"""
try:
    import dask.array  # noqa: F401
except ImportError as exc:      # pragma: no cover - depends on the install
    raise ImportError("fastops.dask needs dask: pip install 'fastops[dask]'") from exc

from fastops.dask import cv
from fastops.dask._detection import non_max_suppression, roi_align
from fastops.dask._resample import resize
from fastops.dask._selection import cummax, cummin, nonzero, topk

__all__ = ["topk", "cummax", "cummin", "nonzero", "non_max_suppression", "roi_align",
           "resize", "cv"]
