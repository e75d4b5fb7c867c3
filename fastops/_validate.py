"""Shared argument checks.  Every message starts with the op name and names the argument.

Checks run on the host before any kernel starts.  Kernels still never trust values they
read while running (another Python thread may change an array once the GIL is released):
they check or clamp where they use them, so a race gives a wrong answer at worst, never an
out-of-bounds access.
"""
import functools
import math
import operator

import numpy as np

SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
NUMERIC = UNSIGNED + SIGNED + FLOATS

# Kernels take int64 extents and offsets; no Python int outside this range reaches them.
INT64_MAX = (1 << 63) - 1


def prod(dims):
    """Exact product of extents (Python ints: no int64 wrap-around, whatever they came as)."""
    return math.prod(map(int, dims))


@functools.lru_cache(maxsize=None)
def _kind_sizes(allowed):
    return frozenset((np.dtype(a).kind, np.dtype(a).itemsize) for a in allowed)


def dtype_in(op, name, arr, allowed):
    """Raise TypeError unless ``arr.dtype`` is one of ``allowed`` (dtype names).

    Compared by kind and size, not by identity: '>f4', np.single and a dtype with metadata
    are all float32 here (fastops._dispatch converts byte order before any kernel)."""
    dt = arr.dtype
    if (dt.kind, dt.itemsize) not in _kind_sizes(tuple(allowed)):
        raise TypeError(f"{op}: {name} has dtype {dt}; expected one of {', '.join(allowed)}")


def ndim_is(op, name, arr, ndim):
    if arr.ndim != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D, got shape {tuple(arr.shape)}")


def min_ndim(op, name, arr, ndim):
    if arr.ndim < ndim:
        raise ValueError(f"{op}: {name} must have at least {ndim} dimension(s), "
                         f"got shape {tuple(arr.shape)}")


def axis(op, value, ndim, name="axis"):
    """Normalize an axis argument (negative counts from the back) or raise."""
    ax = integer(op, name, value)
    if not -ndim <= ax < ndim:
        raise ValueError(f"{op}: {name}={ax} is out of range for an input with "
                         f"{ndim} dimension(s) (expected {-ndim} <= {name} < {ndim})")
    return ax + ndim if ax < 0 else ax


def _item(op, name, value, what):
    """The Python scalar held by a 0-d or 1-element array of any framework (NumPy, CuPy,
    torch, JAX), or ``value`` itself."""
    if isinstance(value, (int, float, bool, np.generic)) or not hasattr(value, "shape"):
        return value.item() if isinstance(value, np.generic) else value
    shape = tuple(value.shape)
    size = 1
    for s in shape:
        size *= int(s)
    if size != 1:
        raise TypeError(f"{op}: {name} must be {what} or a 1-element {what.split()[-1]} "
                        f"array, got an array of shape {shape}")
    try:
        return value.reshape(-1)[0].item()
    except Exception as exc:  # a framework that cannot hand out the scalar
        raise TypeError(f"{op}: {name} must be {what}; could not read the scalar of a "
                        f"{type(value).__name__}: {exc}") from None


def integer(op, name, value, lo=None, hi=INT64_MAX):
    """A Python int from an int, a NumPy integer or a 1-element integer array (any
    framework), checked against ``lo <= value <= hi`` (by default it must fit int64)."""
    v = _item(op, name, value, "an integer")
    if isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "" if lo is None else f"{lo} <= "
        hi_s = "" if hi is None else f" <= {hi}"
        raise ValueError(f"{op}: {name}={v} is out of range (expected {lo_s}{name}{hi_s})")
    return v


def number(op, name, value, finite=False):
    """A Python float from a number or a 1-element numeric array (ONNX passes thresholds
    as tensors); ``finite`` also rejects NaN and infinities."""
    v = _item(op, name, value, "a real number")
    if isinstance(v, bool) or isinstance(v, complex):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}")
    try:
        v = float(v)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}") from None
    if finite and not np.isfinite(v):
        raise ValueError(f"{op}: {name} must be a finite number, got {v!r}")
    return v


def flag(op, name, value):
    """A bool from a bool or 0/1 (ONNX attributes are ints)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{op}: {name} must be a bool (or 0/1), got {value!r}")


def choice(op, name, value, options):
    """``value`` if it is one of the strings ``options``, else ValueError listing them."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{op}: {name}={value!r} is not one of "
                         f"{', '.join(repr(o) for o in options)}")
    return value
