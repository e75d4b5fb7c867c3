"""Shared argument checks.  Every message starts with the op name and names the argument.

Checks run on the host before any kernel starts; kernels may assume valid input.
"""
import operator

import numpy as np

SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
NUMERIC = UNSIGNED + SIGNED + FLOATS


def dtype_in(op, name, arr, allowed):
    """Raise TypeError unless ``arr.dtype`` is one of ``allowed`` (dtype names)."""
    if arr.dtype.name not in allowed:
        raise TypeError(f"{op}: {name} has dtype {arr.dtype.name}; expected one of "
                        f"{', '.join(allowed)}")


def ndim_is(op, name, arr, ndim):
    if arr.ndim != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D, got shape {tuple(arr.shape)}")


def min_ndim(op, name, arr, ndim):
    if arr.ndim < ndim:
        raise ValueError(f"{op}: {name} must have at least {ndim} dimension(s), "
                         f"got shape {tuple(arr.shape)}")


def axis(op, value, ndim, name="axis"):
    """Normalize an axis argument (negative counts from the back) or raise."""
    try:
        ax = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}") from None
    if not -ndim <= ax < ndim:
        raise ValueError(f"{op}: {name}={ax} is out of range for an input with "
                         f"{ndim} dimension(s) (expected {-ndim} <= {name} < {ndim})")
    return ax + ndim if ax < 0 else ax


def integer(op, name, value):
    """A Python int from an int, a NumPy integer or a 1-element integer array."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        if value.size != 1 or value.dtype.kind not in "iu":
            raise TypeError(f"{op}: {name} must be an integer or a 1-element integer array, "
                            f"got an array of shape {tuple(value.shape)} and dtype {value.dtype}")
        value = value.reshape(-1)[0]
        value = value.item() if hasattr(value, "item") else value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}") from None


def number(op, name, value):
    """A Python float from a number or a 1-element numeric array (ONNX passes thresholds
    as tensors)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        if value.size != 1 or value.dtype.kind not in "fiu":
            raise TypeError(f"{op}: {name} must be a number or a 1-element numeric array, "
                            f"got an array of shape {tuple(value.shape)} and dtype {value.dtype}")
        value = value.reshape(-1)[0]
        value = value.item() if hasattr(value, "item") else value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a number, got {value!r}") from None


def flag(op, name, value):
    """A bool from a bool or 0/1 (ONNX attributes are ints)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{op}: {name} must be a bool (or 0/1), got {value!r}")
