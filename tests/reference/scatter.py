"""Slow, obviously correct scatter/gather loops written from the ONNX specs.

Every element is visited in row-major order of ``indices`` with plain Python/NumPy
scalar arithmetic in the arrays' own dtype (pass float64 copies for a float64
reference).  Integer add/mul wrap around (NumPy scalar arithmetic, overflow warnings
silenced); max/min follow np.maximum/np.minimum (NaN wins); bool add/mul are or/and.
"""
import numpy as np


def _combine(reduction, o, u):
    if reduction == "none":
        return u
    if o.dtype == np.bool_:
        return {"add": o or u, "mul": o and u, "max": o or u, "min": o and u}[reduction]
    with np.errstate(over="ignore"):
        if reduction == "add":
            return o + u
        if reduction == "mul":
            return o * u
    if reduction == "max":
        return np.maximum(o, u)
    return np.minimum(o, u)


def _norm(v, n):
    v = int(v)
    v = v + n if v < 0 else v
    if not 0 <= v < n:
        raise IndexError(f"index {v} out of range for size {n}")
    return v


def scatter_elements(data, indices, updates, axis=0, reduction="none"):
    out = np.array(data, copy=True)
    axis = axis % data.ndim
    for pos in np.ndindex(*indices.shape):
        target = list(pos)
        target[axis] = _norm(indices[pos], data.shape[axis])
        target = tuple(target)
        out[target] = _combine(reduction, out[target], updates[pos])
    return out


def gather_elements(data, indices, axis=0):
    out = np.empty(indices.shape, dtype=data.dtype)
    axis = axis % data.ndim
    for pos in np.ndindex(*indices.shape):
        src = list(pos)
        src[axis] = _norm(indices[pos], data.shape[axis])
        out[pos] = data[tuple(src)]
    return out


def scatter_nd(data, indices, updates, reduction="none"):
    out = np.array(data, copy=True)
    k = indices.shape[-1]
    for pos in np.ndindex(*indices.shape[:-1]):
        tup = tuple(_norm(indices[pos + (d,)], data.shape[d]) for d in range(k))
        for sub in np.ndindex(*data.shape[k:]):
            out[tup + sub] = _combine(reduction, out[tup + sub], updates[pos + sub])
    return out


def gather_nd(data, indices, batch_dims=0):
    b = batch_dims
    k = indices.shape[-1]
    out = np.empty(indices.shape[:-1] + data.shape[b + k:], dtype=data.dtype)
    for pos in np.ndindex(*indices.shape[:-1]):
        tup = tuple(_norm(indices[pos + (d,)], data.shape[b + d]) for d in range(k))
        out[pos] = data[pos[:b] + tup]
    return out
