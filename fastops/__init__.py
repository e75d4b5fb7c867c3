"""fastops: vision and detection operators on NumPy (Cython/OpenMP) and CuPy (CUDA).

Every function takes NumPy arrays, CuPy arrays or DLPack tensors and returns results on
the same device and in the same framework.  See API.md for the contract.
"""
__version__ = "0.1.0"

from fastops._threads import get_num_threads, set_num_threads
from fastops.detection import batched_nms, nms, non_max_suppression, roi_align
from fastops.control import loop
from fastops.conv import deform_conv2d, modulated_deform_conv2d
from fastops.norm import instance_norm
from fastops.resample import resize
from fastops.sampling import grid_sample
from fastops.scatter import gather_elements, gather_nd, scatter, scatter_elements, scatter_nd
from fastops.selection import cummax, cummin, nonzero, topk
from fastops import cv  # noqa: F401,E402  (a namespace: fastops.cv.resize, fastops.cv.INTER_*)


def backends() -> dict:
    """Which backends can run here: ``{"cpu": True, "gpu": bool}`` (GPU = CuPy + a device)."""
    from fastops._gpu import available
    return {"cpu": True, "gpu": available()}


__all__ = [
    "topk", "cummax", "cummin", "nonzero",
    "scatter", "scatter_elements", "scatter_nd", "gather_elements", "gather_nd",
    "non_max_suppression", "nms", "batched_nms", "roi_align",
    "resize", "grid_sample", "deform_conv2d", "modulated_deform_conv2d", "instance_norm",
    "loop",
    "backends", "get_num_threads", "set_num_threads",
]
