"""TopK, cummax/cummin and NonZero: validation and shaping, then the backend kernel."""
import math
from typing import Any, NamedTuple

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, IntScalar
from fastops._validate import NUMERIC as _REAL


class ValuesIndices(NamedTuple):
    """The ``(values, indices)`` result of topk, cummax and cummin: unpacks like a tuple,
    and has ``.values`` / ``.indices`` like ``torch.return_types.topk``."""
    values: Any
    indices: Any


def _as_3d(x, axis, be):
    """View x as (outer, n, inner) around ``axis`` (a copy only when strides forbid a view)."""
    shape = x.shape
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    return be.element_view(x.reshape(outer, shape[axis], inner))


def _compute_dtype(x, be):
    """float16 runs in float32 (exact for comparisons), everything else as is."""
    return be.element_view(x, np.float32) if x.dtype == np.float16 else x


@_dispatch.public(fast=("selection", "fast_topk",
                        ("x", "k", "axis", "largest", "sorted", ValuesIndices)))
def topk(x: Array, k: IntScalar, axis: int = -1, largest: bool = True,
         sorted: bool = True) -> ValuesIndices:
    """The ``k`` largest (or smallest) elements of ``x`` along ``axis``.

    ONNX TopK (opsets 1, 10, 11, 24) and ``torch.topk``.

    Parameters
    ----------
    x : array, any numeric dtype (uint8/16/32/64, int8/16/32/64, float16/32/64)
    k : int or 1-element integer array, ``0 <= k <= x.shape[axis]``
    axis : int, negative counts from the back
    largest : bool
        True for the largest values (descending), False for the smallest (ascending).
    sorted : bool
        With False the k winners come in ascending index order on every backend (ONNX
        leaves the order unspecified; fastops makes it deterministic).

    Returns
    -------
    ValuesIndices, a named tuple (``.values``, ``.indices``) that unpacks as a pair:
    values : array like ``x`` with ``shape[axis] = k``
    indices : int64 array of the same shape, positions along ``axis``

    Notes
    -----
    Ties: the lower index comes first (ONNX).  NaN ranks above every number, for
    ``largest=False`` too, so NaNs are picked first by largest and last by smallest
    (``torch.topk``'s rule; ONNX leaves it unspecified and ONNX Runtime is NaN-unaware).
    float16 is compared in float32 and returned as float16.  Algorithm: for k = 1 a
    vectorized max/min then the first position holding it; on contiguous rows of up to
    32 values of 4 bytes or fewer, every value's rank at once (SIMD compares, no
    branches); a heap while k is small against the row; a sorted insertion list for k <= 16 on short rows; else a
    partition (nth_element over the values that pass a threshold from a strided sample)
    and a sort of the k winners; rows run in parallel, and a single long row is split
    across threads.
    """
    op = "topk"
    be, (x,) = _dispatch.prepare(op, x=x)
    _validate.dtype_in(op, "x", x, _REAL)
    _validate.min_ndim(op, "x", x, 1)
    ax = _validate.axis(op, axis, x.ndim)
    k = _validate.integer(op, "k", k)
    n = x.shape[ax]
    if k < 0:
        raise ValueError(f"{op}: k={k} must be non-negative")
    if k > n:
        raise ValueError(f"{op}: k={k} is larger than x.shape[{ax}]={n}")
    largest = _validate.flag(op, "largest", largest)
    sorted_ = _validate.flag(op, "sorted", sorted)

    out_shape = x.shape[:ax] + (k,) + x.shape[ax + 1:]
    xp = be.xp
    values = be.empty(out_shape, x.dtype)
    indices = be.empty(out_shape, np.int64)
    if values.size == 0:
        return be.wrap(ValuesIndices(values, indices))
    xc = _as_3d(_compute_dtype(x, be), ax, be)
    v3 = values.reshape(xc.shape[0], k, xc.shape[2])
    if values.dtype == np.float16:
        v3 = xp.empty(v3.shape, dtype=np.float32)
    be.run("selection", "topk", xc, k, largest, sorted_, v3,
           indices.reshape(xc.shape[0], k, xc.shape[2]))
    if values.dtype == np.float16:
        values[...] = v3.reshape(out_shape)
    return be.wrap(ValuesIndices(values, indices))


def _cumulative(op, x, axis, is_max):
    """The general path of cummax/cummin (after their compiled fast path declined)."""
    be, (x,) = _dispatch.prepare(op, x=x)
    _validate.dtype_in(op, "x", x, _REAL)
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d array")
    ax = _validate.axis(op, axis, x.ndim)
    xp = be.xp
    values = be.empty(x.shape, x.dtype)
    indices = be.empty(x.shape, np.int64)
    if x.size == 0:
        return be.wrap(ValuesIndices(values, indices))
    xc = _as_3d(_compute_dtype(x, be), ax, be)
    v3 = values.reshape(xc.shape) if values.dtype != np.float16 else xp.empty(xc.shape, np.float32)
    be.run("selection", "cumext", xc, is_max, v3, indices.reshape(xc.shape))
    if values.dtype == np.float16:
        values[...] = v3.reshape(x.shape)
    return be.wrap(ValuesIndices(values, indices))


@_dispatch.public(fast=("selection", "fast_cumext", ("x", "axis", True, ValuesIndices)))
def cummax(x: Array, axis: int) -> ValuesIndices:
    """Running maximum of ``x`` along ``axis`` and the index where it was taken.

    Same values and indices as ``torch.cummax`` (MMCV ``cummax``): the running value is
    replaced when the new element is NaN or ``>=`` it, so ties move the index to the
    later position; once a NaN is seen the value stays NaN and the index follows each
    later NaN.  (MMCV's old ONNX Runtime op had no NaN rule; this follows torch.)

    Parameters
    ----------
    x : array of any real dtype (uint8..uint64, int8..int64, float16/32/64), ndim >= 1
    axis : int

    Returns
    -------
    ValuesIndices (``.values``, ``.indices``): values like ``x``; int64 indices of
    ``x.shape``
    """
    return _cumulative("cummax", x, axis, True)


@_dispatch.public(fast=("selection", "fast_cumext", ("x", "axis", False, ValuesIndices)))
def cummin(x: Array, axis: int) -> ValuesIndices:
    """Running minimum of ``x`` along ``axis`` and its index; :func:`cummax` with ``<=``.

    Same values and indices as ``torch.cummin`` (ties → later index, NaN propagates).
    """
    return _cumulative("cummin", x, axis, False)


# nonzero reads every element as an unsigned word of the same width; for floats the
# sign bit is masked off, so -0.0 is zero and NaN is nonzero, exactly like `x != 0`.
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@_dispatch.public(fast=("selection", "fast_nonzero", ("x",)))
def nonzero(x: Array) -> Array:
    """Indices of the nonzero elements, ONNX NonZero layout: int64 ``(x.ndim, nnz)``.

    Equal to ``np.array(np.nonzero(x))`` in row-major order.  A 0-d input is treated as
    shape (1,) (ONNX opset >= 13 reference; NumPy 2 refuses 0-d nonzero).  Any numeric
    dtype: bool, integers, floats of any width (-0.0 is zero, NaN is nonzero), complex,
    in either byte order.  Other dtypes (strings, objects, datetimes) raise TypeError.
    """
    op = "nonzero"
    be, (x,) = _dispatch.prepare(op, x=x)
    xp = be.xp
    if x.ndim == 0:
        x = x.reshape(1)
    kind = x.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"{op}: x has dtype {x.dtype}; expected a bool, integer, float or "
                        f"complex dtype")
    if kind == "c" or x.dtype.itemsize not in _WORD:   # complex, longdouble: via x != 0
        x = x != 0
    if x.size == 0:
        return be.wrap(xp.empty((x.ndim, 0), dtype=np.int64))
    word = _WORD[x.dtype.itemsize]
    mask = ~word(0)
    if x.dtype.kind == "f":
        mask = word(mask >> word(1))            # all bits but the sign
    flat = xp.ascontiguousarray(x).reshape(-1).view(word)
    shape = np.asarray(x.shape, dtype=np.int64)
    return be.wrap(be.run("selection", "nonzero", flat, mask, shape))
