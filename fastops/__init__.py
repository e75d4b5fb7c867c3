"""fastops: vision and detection operators on NumPy (Cython/OpenMP) and CuPy (CUDA).

Every function takes NumPy arrays, CuPy arrays or DLPack tensors and returns results on
the same device and in the same framework.  See API.md for the contract.
"""
__version__ = "0.1.0"

from fastops._threads import get_num_threads, set_num_threads
from fastops.selection import cummax, cummin, nonzero, topk


def backends():
    """Which backends can run here: ``{"cpu": True, "gpu": bool}`` (GPU = CuPy + a device)."""
    from fastops._gpu import available
    return {"cpu": True, "gpu": available()}


__all__ = ["topk", "cummax", "cummin", "nonzero", "backends", "get_num_threads",
           "set_num_threads"]
