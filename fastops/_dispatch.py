"""Where does an array live?  NumPy -> fastops._cpu, CuPy -> fastops._gpu, DLPack -> either.

Every public function calls :func:`prepare` once with its array arguments by name.  It
returns a :class:`Backend` and the arguments converted to that backend's array type
(NumPy or CuPy).  The backend's ``run(family, kernel, *args)`` calls
``fastops._cpu.<family>.<kernel>`` (adding the OpenMP thread count) or
``fastops._gpu.<family>.<kernel>``, and ``wrap(result)`` turns results back into the
caller's framework (torch, JAX, ...).

CuPy is imported only when a CuPy array (or a CUDA DLPack tensor) arrives, so
``import fastops`` never pays for it.
"""
import importlib
import sys

import numpy as np

_DL_CPU = (1, 3)          # kDLCPU, kDLCUDAHost
_DL_CUDA = (2, 13)        # kDLCUDA, kDLCUDAManaged


def _is_cupy(obj):
    # cheap test that never imports cupy: a CuPy array is only possible if cupy is loaded
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(obj, cp.ndarray)


def _dlpack_device(obj):
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack_device__"):
        return None
    return int(obj.__dlpack_device__()[0])


def _from_dlpack_fn(obj):
    """The framework's own ``from_dlpack`` to hand results back (torch.from_dlpack, ...)."""
    root = type(obj).__module__.split(".")[0]
    if root == "jaxlib" or root == "jax":
        return importlib.import_module("jax.numpy").from_dlpack
    mod = sys.modules.get(root)
    fn = getattr(mod, "from_dlpack", None)
    if fn is None:
        raise TypeError(f"cannot return results to a {type(obj).__name__}: "
                        f"module {root!r} has no from_dlpack")
    return fn


class Backend:
    """One call's backend: ``name`` is "cpu" or "gpu", ``xp`` the array module."""

    __slots__ = ("name", "xp", "_to_framework")

    def __init__(self, name, xp, to_framework=None):
        self.name = name
        self.xp = xp
        self._to_framework = to_framework

    def kernels(self, family):
        """The kernel module of one op family: fastops._cpu.<family> or fastops._gpu.<family>."""
        pkg = "fastops._cpu." if self.name == "cpu" else "fastops._gpu."
        return importlib.import_module(pkg + family)

    def empty(self, shape, dtype):
        """An uninitialized output array; large host outputs reuse pooled blocks
        (fastops/_cpu/_pool.pyx), device outputs come from CuPy's memory pool."""
        if self.name == "cpu":
            from fastops._cpu._pool import empty
            return empty(tuple(shape), dtype)
        return self.xp.empty(shape, dtype=dtype)

    def element_view(self, a, dtype=None):
        """``a`` in ``dtype`` (no copy when it already is), copied to C order only when a
        stride is not a whole number of elements (e.g. a field of a packed record
        array): the kernels index by element strides."""
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        if any(s % a.itemsize for s in a.strides):
            a = self.xp.ascontiguousarray(a)
        return a

    def run(self, family, kernel, *args):
        """Call ``kernel`` of ``family`` on this backend; CPU kernels also get the thread count."""
        fn = getattr(self.kernels(family), kernel)
        if self.name == "cpu":
            from fastops._threads import get_num_threads
            return fn(*args, get_num_threads())
        return fn(*args)

    def wrap(self, result):
        """Return ``result`` (an array or a tuple of arrays) in the caller's framework."""
        if self._to_framework is None:
            return result
        if isinstance(result, tuple):
            return tuple(self._to_framework(r) for r in result)
        return self._to_framework(result)


def _cupy():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("a CUDA array was given but CuPy is not installed: "
                           "pip install 'fastops[gpu]'") from exc
    return cupy


def prepare(op, **arrays):
    """Pick the backend for ``op`` from its array arguments and convert them.

    ``None`` values are passed through.  Everything that is neither CuPy nor a DLPack
    producer goes through ``np.asarray`` (lists, scalars, NumPy arrays).  Mixing CPU and
    GPU arguments raises ``TypeError`` naming the argument that disagrees with the first.
    Returns ``(backend, converted)`` where ``converted`` is a tuple in argument order.
    """
    where = {}            # name -> "cpu" | "gpu"
    producer = None       # the first DLPack producer: results go back to its framework
    for name, a in arrays.items():
        if a is None:
            continue
        if isinstance(a, np.ndarray):
            where[name] = "cpu"
        elif _is_cupy(a):
            where[name] = "gpu"
        else:
            dev = _dlpack_device(a)
            if dev in _DL_CUDA:
                where[name] = "gpu"
            else:
                where[name] = "cpu"
            if dev is not None and producer is None:
                producer = a
    devices = set(where.values())
    if len(devices) > 1:
        first = next(iter(where))
        for name, d in where.items():
            if d != where[first]:
                raise TypeError(
                    f"{op}: argument {name!r} is on the {d.upper()} but {first!r} is on the "
                    f"{where[first].upper()}; move them to one device (fastops does not copy "
                    f"between host and GPU implicitly)")
    device = devices.pop() if devices else "cpu"
    framework = None if producer is None else _from_dlpack_fn(producer)
    if device == "gpu":
        cp = _cupy()
        conv = cp.from_dlpack
        backend = Backend("gpu", cp, framework)
        out = tuple(None if a is None else (a if isinstance(a, cp.ndarray) else conv(a))
                    for a in arrays.values())
    else:
        backend = Backend("cpu", np, framework)
        out = tuple(None if a is None else _to_numpy(a) for a in arrays.values())
    return backend, out


def _to_numpy(a):
    if isinstance(a, np.ndarray):
        return a
    if _dlpack_device(a) is not None:
        return np.from_dlpack(a)
    return np.asarray(a)
