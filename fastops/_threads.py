"""How many OpenMP threads the CPU kernels use.

The default is OpenMP's own: ``OMP_NUM_THREADS`` if set, else every core, and
``threadpoolctl.threadpool_limits`` lowers it (it calls ``omp_set_num_threads`` on the
OpenMP runtime fastops links).  ``set_num_threads(n)`` fixes it process-wide, for every
Python thread, including threads started later; a threadpoolctl limit in the calling
thread still applies on top.

OpenMP keeps the count per OS thread (a thread that never called omp_set_num_threads
reads the process default), so the fixed count is applied to each Python thread the
first time it asks after a change (a generation number in thread-local storage).
"""
import operator
import threading

from fastops._cpu import _runtime

_fixed = None
_generation = 0
_local = threading.local()


def get_num_threads() -> int:
    """Number of threads the next CPU kernel call from this Python thread will use."""
    if _fixed is not None and getattr(_local, "generation", None) != _generation:
        _runtime.set_max_threads(_fixed)   # this thread has not seen the fixed count yet
        _local.generation = _generation
    omp = _runtime.max_threads()
    return omp if _fixed is None else min(_fixed, omp)


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (n >= 1) in every CPU kernel from now on, in every thread."""
    global _fixed, _generation
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: n must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: n={n} must be at least 1")
    _fixed = n
    _generation += 1
    _runtime.set_max_threads(n)   # so that min() above lets n through in this thread
    _local.generation = _generation
