"""How many OpenMP threads the CPU kernels use.

The default is OpenMP's own: ``OMP_NUM_THREADS`` if set, else every core, and
``threadpoolctl.threadpool_limits`` lowers it (it calls ``omp_set_num_threads`` on the
OpenMP runtime fastops links).  ``set_num_threads(n)`` fixes it process-wide, for every
Python thread; a threadpoolctl limit in the calling thread still applies on top.
"""
import operator

from fastops._cpu import _runtime

_fixed = None


def get_num_threads():
    """Number of threads the next CPU kernel call from this Python thread will use."""
    omp = _runtime.max_threads()
    return omp if _fixed is None else min(_fixed, omp)


def set_num_threads(n):
    """Use ``n`` threads (n >= 1) in every CPU kernel from now on."""
    global _fixed
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: n must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: n={n} must be at least 1")
    _runtime.set_max_threads(n)   # so that min() above lets n through in this thread
    _fixed = n
