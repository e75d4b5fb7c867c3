"""Shared test fixtures: the array module per backend, and GPU skipping.

Tests that take the ``xp`` fixture run once on NumPy and once on CuPy; the CuPy run is
marked ``gpu`` and skips cleanly where CuPy or a CUDA device is missing.  Results are
compared on the host with ``to_numpy``.
"""
import numpy as np
import pytest

import fastops


UTILITIES = {"backends", "get_num_threads", "set_num_threads"}
NAMESPACES = ("cv",)     # fastops.cv.resize is an op too


def public_ops():
    """Dotted names of every public op: fastops.__all__ (minus the utilities) and the
    functions of the public namespaces ("cv.resize")."""
    import inspect
    names = set(fastops.__all__) - UTILITIES
    for ns in NAMESPACES:
        mod = getattr(fastops, ns)
        names |= {f"{ns}.{n}" for n in mod.__all__ if inspect.isfunction(getattr(mod, n))}
    return sorted(names)


def resolve(name):
    """fastops.<name> for a dotted public name."""
    fn = fastops
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


def _gpu_ok():
    return fastops.backends()["gpu"]


GPU = pytest.mark.skipif(not _gpu_ok(), reason="needs CuPy and a CUDA device")


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=[pytest.mark.gpu, GPU])])
def xp(request):
    if request.param == "numpy":
        return np
    import cupy
    return cupy


def peer(module):
    """Import an optional peer (torch, torchvision, onnxruntime, cv2, ...) or skip the test.

    Unlike pytest.importorskip this also skips when the peer is installed but unusable:
    a torchvision built for another torch raises RuntimeError at import."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module} is not installed ({exc})")
    except Exception as exc:   # installed but broken: not this suite's failure
        pytest.skip(f"{module} is installed but unusable: {type(exc).__name__}: {exc}")


def to_numpy(a):
    if isinstance(a, tuple):
        return tuple(to_numpy(v) for v in a)
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)


@pytest.fixture
def threads():
    """Run a block with a given thread count and restore the previous one."""
    import contextlib

    from fastops import _threads

    @contextlib.contextmanager
    def use(n):
        before, fixed = fastops.get_num_threads(), _threads._fixed
        fastops.set_num_threads(n)
        try:
            yield
        finally:
            fastops.set_num_threads(before)
            _threads._fixed = fixed     # no process-wide cap left behind if there was none
    return use


def guarded(a, at="end"):
    """A copy of `a` (C order) whose bytes end just before (at="end") or start just after
    (at="start") a page that cannot be read or written: a kernel that reads or writes past
    that end of the array faults (the test process dies) instead of reading its
    neighbour's bytes.  Vector loads of whole windows near a row's end are the risk."""
    import ctypes
    import mmap
    a = np.ascontiguousarray(a)
    if a.nbytes == 0:
        return a.copy()
    page = mmap.PAGESIZE
    body = -(-a.nbytes // page) * page
    m = mmap.mmap(-1, body + 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    anchor = ctypes.c_char.from_buffer(m)
    base = ctypes.addressof(anchor)
    del anchor                     # (an exported buffer would keep m from unmapping)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    for start in (base, base + page + body):
        if libc.mprotect(start, page, 0) != 0:       # PROT_NONE
            raise OSError(ctypes.get_errno(), "mprotect failed")
    offset = page + (body - a.nbytes if at == "end" else 0)
    out = np.frombuffer(m, a.dtype, a.size, offset).reshape(a.shape)
    out[...] = a
    return out
