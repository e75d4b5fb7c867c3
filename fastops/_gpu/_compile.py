"""Memoized kernel getter: one compiled module per (family, defines, device), never per call.

Compilation happens on first use (NVRTC, about a second per variant, then CuPy's disk
cache under ~/.cupy/kernel_cache makes later processes fast).
"""
import functools

import cupy

from fastops._gpu import _sources


@functools.lru_cache(maxsize=None)
def _module(family, defines, device_id):
    return cupy.RawModule(code=_sources.source(family, defines), options=("-std=c++17",))


def kernel(family, name, **defines):
    """The ``extern "C"`` kernel ``name`` of kernels/<family>.cu built with ``defines``."""
    key = tuple(sorted((k, str(v)) for k, v in defines.items()))
    return _module(family, key, cupy.cuda.Device().id).get_function(name)


def launch(fn, n_items, args, block=256, shared_mem=0):
    """Launch ``fn`` with one thread per item (grid-stride loops cap the grid)."""
    grid = max(1, min((n_items + block - 1) // block, 65535 * 8))
    fn((grid,), (block,), args, shared_mem=shared_mem)


def elem_strides(a):
    """Strides of ``a`` in elements (the public layer guarantees they divide evenly)."""
    return tuple(s // a.itemsize for s in a.strides)
