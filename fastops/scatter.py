"""Scatter and gather: ONNX Scatter/ScatterElements/ScatterND/GatherElements/GatherND.

Validation and shaping, then the backend kernel (fastops/_cpu/scatter.pyx,
fastops/_gpu/scatter.py).  Kernels see flat C-contiguous index/update arrays, a
contiguous output, and element offsets; they check every index before writing anything
and return the first bad position, which becomes the IndexError raised here.

Element types: "none" and the gathers move bits, so they run on unsigned words of the
element's width (bool, float16 and complex64 are exact copies); the reductions run on
the real type, float16 in float32, bool as 0/1 bytes (add = or, mul = and).
"""

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, Reduction

_REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_REAL_KINDS = "uif"


# ----------------------------------------------------------------------- helpers
def _reduction(op, reduction):
    if reduction is None:
        reduction = "none"
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction={reduction!r} is not one of "
                         f"{', '.join(repr(r) for r in _REDUCTIONS)}")
    return _REDUCTIONS[reduction]


def _check_data_dtype(op, data, red):
    dt = data.dtype
    moves_bits = dt.kind in "biufc" and dt.itemsize in _WORD
    if not moves_bits:
        raise TypeError(f"{op}: data has dtype {dt}; expected bool, an integer type, "
                        f"float16/32/64 or complex64")
    if red and dt.kind == "c":
        raise TypeError(f"{op}: reduction is not supported for complex data "
                        f"(dtype {dt}); only reduction='none' is")


def _kernel_types(dtype, red):
    """(kernel element dtype, compute dtype, kernel reduction) for one call.

    compute dtype is what the data is converted to before the kernel (float16 ->
    float32 for reductions); the kernel dtype is a view of it: unsigned words for bit
    moves and for integer add/mul, which wrap around to the same bits signed or not
    (so the CPU kernels compile those reductions for unsigned words only).
    """
    dtype = np.dtype(dtype)
    if red == 0 or (red in (1, 2) and dtype.kind in "iu"):
        return np.dtype(_WORD[dtype.itemsize]), dtype, red
    if dtype.kind == "b":   # 0/1 bytes: or = max, and = min
        return np.dtype(np.uint8), dtype, {1: 3, 2: 4, 3: 3, 4: 4}[red]
    if dtype == np.float16:   # float32 arithmetic, NumPy's float16 tie rule for max/min
        return np.dtype(np.float32), np.dtype(np.float32), {3: 5, 4: 6}.get(red, red)
    return dtype, dtype, red


def _indices(op, indices, be):
    """int32/int64 indices as they are; other integer dtypes converted to int64 (uint64
    values above the int64 range are out of range, not wrapped).  Dtypes are told apart
    by kind and size (np.intc, np.longlong and friends are int32/int64)."""
    dt = indices.dtype
    if dt.kind not in "iu":
        raise TypeError(f"{op}: indices has dtype {dt}; expected int32 or int64")
    if dt.kind == "i" and dt.itemsize in (4, 8):
        return indices
    if dt.kind == "u" and dt.itemsize == 8 and indices.size:
        big = indices > np.uint64(np.iinfo(np.int64).max)
        if bool(big.any()):
            where = tuple(int(w) for w in np.unravel_index(int(be.xp.argmax(big)),
                                                           indices.shape))
            raise IndexError(f"{op}: indices[{', '.join(map(str, where))}] = "
                             f"{int(indices[where])} is out of range")
    return indices.astype(np.int64)


def _updates(op, updates, data):
    if updates.dtype != data.dtype:
        if not np.can_cast(updates.dtype, data.dtype, "same_kind"):
            raise TypeError(f"{op}: updates has dtype {updates.dtype}, which does not cast "
                            f"to data's dtype {data.dtype} (same_kind)")
        updates = updates.astype(data.dtype)
    return updates


_prod = _validate.prod


def _linear_stride(shape, strides):
    """s such that the offset of flat position f over ``shape`` is f * s, else None."""
    dims = [(int(n), int(s)) for n, s in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    for (_, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != n1 * s1:
            return None
    return dims[-1][1]


def _offset_table(shape, strides):
    """Element offsets of every flat position over ``shape`` (int64, NumPy)."""
    off = np.zeros((), dtype=np.int64)
    for n, s in zip(shape, strides):
        off = off[..., None] + np.arange(n, dtype=np.int64) * s
    return off.reshape(-1)


def _layout(xp, ishape, ax, strides):
    """(outer_table, inner_table, s_outer, s_inner) for indices ``ishape`` around ``ax``."""
    def part(shape, st):
        s = _linear_stride(shape, st)
        if s is not None:
            return None, s
        return xp.asarray(_offset_table(shape, st)), 0
    outer, s_outer = part(ishape[:ax], strides[:ax])
    inner, s_inner = part(ishape[ax + 1:], strides[ax + 1:])
    return outer, inner, s_outer, s_inner


def _elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def _c_strides(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= int(n)
    return tuple(reversed(st))


def _flat(a, xp, dtype=None):
    f = xp.ascontiguousarray(a).reshape(-1)
    return f if dtype is None else f.view(dtype)


def _raise_bad(op, pos, indices, limit, axis_name):
    where = tuple(int(w) for w in np.unravel_index(int(pos), indices.shape))
    value = int(indices[where])
    raise IndexError(f"{op}: indices[{', '.join(map(str, where))}] = {value} is out of "
                     f"range for {axis_name} with size {limit} "
                     f"(expected {-limit} <= index < {limit})")


def _new_copy(xp, data):
    return xp.array(data, copy=True, order="C")


# -------------------------------------------------------------- ScatterElements
# Broadcast indices of fewer elements are materialized (the elements kernels): the row
# path's own Python costs ~8 us.  (150, C) float32, axis 0, 2 threads, us, elements / rows:
# C = 4: gather 14 / 22, scatter 20 / 30; C = 16: 18 / 22, 28 / 30; C = 64: 33 / 22,
# 35 / 32; C = 256: 62 / 29, 222 / 50; C = 4096: 899 / 165, 713 / 267.
_ROWS_MIN = 8192


def _broadcast_rows(xp, indices, data_shape, ax):
    """The indices of the rows (outer..., j) when ``indices`` is a view broadcast over
    every dimension after ``ax`` and spans those dimensions of data whole (``torch``'s
    ``expand``, ONNX Expand: torchvision's exported multi-level RoIAlign merge scatters a
    row index expanded over (C, H, W); ``torch.gather`` of expanded indices); else None.
    Each such row then moves a whole trailing block of data through the ND kernels, and
    the broadcast is never materialized (frcnn's merge: 15 MB of int64 indices for 150
    RoIs x 256 x 7 x 7: scatter 1.8 -> 0.64 ms, gather 1.95 -> 0.33).  NumPy only: on a
    GPU the copy is cheap, and its scatter kernels order duplicates differently."""
    if xp is not np or ax == indices.ndim - 1 or indices.size < _ROWS_MIN:
        return None
    spread = False
    for d in range(ax + 1, indices.ndim):
        if indices.shape[d] != data_shape[d]:
            return None
        if indices.shape[d] > 1:
            if indices.strides[d] != 0:
                return None
            spread = True
    return indices[(Ellipsis,) + (0,) * (indices.ndim - ax - 1)] if spread else None


def _flat_rows(op, indices, rows, data_shape, ax):
    """The rows of data, viewed as rows of its trailing block after ``ax``, that the
    broadcast row indices ``rows`` (see _broadcast_rows) select: (outer..., v) in
    row-major order, checked first (a bad one raises the IndexError of the materialized
    indices: the first bad position in row-major order)."""
    n_axis = int(data_shape[ax])
    v = rows.astype(np.int64).reshape(-1)   # a private copy: no other thread changes it
    if v.min() < -n_axis or v.max() >= n_axis:
        bad = int(np.flatnonzero((v < -n_axis) | (v >= n_axis))[0])
        where = np.unravel_index(bad, rows.shape) + (0,) * (indices.ndim - ax - 1)
        _raise_bad(op, np.ravel_multi_index(where, indices.shape), indices, n_axis,
                   f"axis {ax} of data")
    v += (v < 0) * n_axis
    if ax == 0:
        return v
    grid = np.indices(rows.shape, sparse=True)[:-1]
    return np.ravel_multi_index(tuple(grid) + (v.reshape(rows.shape),),
                                data_shape[:ax + 1]).reshape(-1)


def _scatter_rows(op, be, src_flat, out_flat, indices, rows, upd_flat, data_shape, ax, kred):
    """scatter_elements of broadcast row indices as a scatter_nd of whole rows: every
    element gets the same updates in the same row-major order as the elements kernel
    applies them (duplicates: the last "none" update wins)."""
    flat_rows = _flat_rows(op, indices, rows, data_shape, ax)
    be.run("scatter", "scatter_nd", src_flat, out_flat, flat_rows, flat_rows.size, 1,
           np.asarray([_prod(data_shape[:ax + 1])], dtype=np.int64), upd_flat,
           _prod(data_shape[ax + 1:]), kred)


def _scatter_elements(op, data, indices, updates, axis, reduction, in_place=False):
    """in_place: write into ``data`` when it is a C-contiguous writeable NumPy array of
    the kernel's dtype (fastops.onnx.Session, for a value no other node reads); else a
    copy as always."""
    if in_place and not (isinstance(data, np.ndarray) and data.flags.c_contiguous and
                         data.flags.writeable):
        in_place = False
    if not in_place:
        args = (data, indices, updates, axis, reduction, _REDUCTIONS)
        done = _dispatch.fast_path("scatter", "fast_scatter_elements", *args)
        if done is None:
            done = _dispatch.fast_path_of_copies("scatter", "fast_scatter_elements", args,
                                                 (0, 1, 2))
        if done is not None:
            return done
    be, (data, indices, updates) = _dispatch.prepare(op, data=data, indices=indices,
                                                     updates=updates)
    xp = be.xp
    red = _reduction(op, reduction)
    _check_data_dtype(op, data, red)
    indices = _indices(op, indices, be)
    updates = _updates(op, updates, data)
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least 1 dimension, got a 0-d array")
    ax = _validate.axis(op, axis, data.ndim)
    if indices.ndim != data.ndim:
        raise ValueError(f"{op}: indices must have the same rank as data ({data.ndim}), "
                         f"got indices of shape {tuple(indices.shape)}")
    if tuple(updates.shape) != tuple(indices.shape):
        raise ValueError(f"{op}: updates must have the shape of indices "
                         f"{tuple(indices.shape)}, got {tuple(updates.shape)}")
    for d in range(data.ndim):
        if d != ax and indices.shape[d] > data.shape[d]:
            raise ValueError(f"{op}: indices.shape[{d}]={indices.shape[d]} is larger than "
                             f"data.shape[{d}]={data.shape[d]} (only the axis={ax} "
                             f"dimension may differ freely)")
    kdt, cdt, kred = _kernel_types(data.dtype, red)
    in_place = in_place and xp is np and data.dtype == cdt
    if indices.size == 0:
        return be.wrap(data if in_place else _new_copy(xp, data))
    src = be.element_view(data, cdt) if data.dtype != cdt else data
    out = data if in_place else be.empty(data.shape, cdt)
    n_axis = int(data.shape[ax])
    if out.size == 0:   # then n_axis == 0 (the other dims bound indices), all are bad
        _raise_bad(op, 0, indices, n_axis, f"axis {ax} of data")
    if in_place:
        src_flat = None     # out holds data already
    elif src.flags.c_contiguous:
        src_flat = src.reshape(-1).view(kdt)
    else:
        out[...] = src
        src_flat = None
    rows = _broadcast_rows(xp, indices, data.shape, ax)
    if rows is not None:
        _scatter_rows(op, be, src_flat, out.reshape(-1).view(kdt), indices, rows,
                      _flat(updates.astype(cdt, copy=False), xp, kdt), data.shape, ax, kred)
    else:
        st = _c_strides(data.shape)
        outer, inner, s_outer, s_inner = _layout(xp, indices.shape, ax, st)
        shape = indices.shape
        O, m, In = _prod(shape[:ax]), int(shape[ax]), _prod(shape[ax + 1:])
        bad = be.run("scatter", "scatter_elements", src_flat, out.reshape(-1).view(kdt),
                     _flat(indices, xp), _flat(updates.astype(cdt, copy=False), xp, kdt),
                     O, m, In, outer, inner, s_outer, s_inner, int(st[ax]), n_axis, kred)
        if bad >= 0:
            _raise_bad(op, bad, indices, n_axis, f"axis {ax} of data")
    if out.dtype != data.dtype:
        out = out.astype(data.dtype)
    return be.wrap(out)


_SEMANTICS = """
    Semantics
    ---------
    =============  ==============================================================
    data dtypes    bool, uint8/16/32/64, int8/16/32/64, float16/32/64; complex64
                   with reduction "none" only
    indices        int32 or int64 (other integer dtypes are converted to int64);
                   negative values count from the back; out of range ->
                   ``IndexError`` naming the first bad value and its position in
                   row-major order, raised before anything is written
    "none"         copies the bits (float16, bool exact); duplicate indices: the
                   last update in row-major order of ``indices`` wins on the CPU,
                   for any thread count; on the GPU one of them wins
                   (nondeterministic)
    "add", "mul"   every duplicate contributes, in row-major order on the CPU;
                   integers wrap around as in NumPy; float16 is computed in
                   float32 and rounded once at the end
    "max", "min"   ``np.maximum`` / ``np.minimum`` applied in row-major order of
                   ``indices``, bit for bit: a NaN wins (the first one met), and of
                   two equal values (+0.0 and -0.0) the update wins for float32/64
                   and the current value for float16, as NumPy's x86 loops do
    bool           "add" is logical or, "mul" logical and, "max" or, "min" and
    GPU            float reductions apply duplicates in row-major order like the
                   CPU (add/mul: a stable sort of the updates by destination, then
                   one thread per destination; max/min: a closed form with
                   atomics on order keys), so they are deterministic and equal the
                   CPU bit for bit; integer reductions use atomics (exact in any
                   order); "none" with duplicates keeps one of them
                   (nondeterministic); one host sync per call for the index check
    =============  ==============================================================
"""


@_dispatch.public
def scatter_elements(data: Array, indices: Array, updates: Array, axis: int = 0,
                     reduction: Reduction = "none") -> Array:
    """Copy of ``data`` with ``updates`` written at ``indices`` along ``axis``.

    ONNX ScatterElements (opsets 11, 13, 16, 18) and ONNX Scatter (opsets 9, 11)::

        out[i][indices[i][j][k]][k] = updates[i][j][k]        # axis = 1, 3-D

    Parameters
    ----------
    data : array of rank r >= 1
    indices : int32/int64 array of rank r; ``indices.shape[d] <= data.shape[d]`` for
        every ``d != axis``
    updates : array of ``indices.shape``, cast to ``data.dtype`` (same_kind)
    axis : int, negative counts from the back
    reduction : {"none", "add", "mul", "max", "min"}
        How an update combines with the current value (opset 16 added "add"/"mul",
        opset 18 "max"/"min"; ``None`` means "none").

    Returns
    -------
    out : new array like ``data`` (``data`` is never modified)
    %s
    Notes
    -----
    Differences from ``onnx.reference``: its ScatterElements "max"/"min" use Python's
    ``max``/``min``, so a NaN update loses against a number there; here NaN wins as in
    ``np.maximum``.  ONNX leaves duplicates with "none" undefined; fastops defines them
    (last in row-major order on the CPU).  float16 "add"/"mul" accumulate in float32
    (``onnx.reference`` rounds to float16 after every update).  The reference also
    requires ``indices`` to be at most 4-D; any rank works here.
    """
    return _scatter_elements("scatter_elements", data, indices, updates, axis, reduction)


@_dispatch.public
def scatter(data: Array, indices: Array, updates: Array, axis: int = 0) -> Array:
    """ONNX Scatter (opsets 9 and 11, deprecated in favour of ScatterElements).

    The same as :func:`scatter_elements` with ``reduction="none"``: a copy of ``data``
    with ``out[..., indices[p], ...] = updates[p]`` along ``axis``; duplicates: the last
    update in row-major order of ``indices`` wins on the CPU.
    """
    return _scatter_elements("scatter", data, indices, updates, axis, "none")


scatter_elements.__doc__ = scatter_elements.__doc__ % _SEMANTICS


# ----------------------------------------------------------------------- ScatterND
@_dispatch.public(fast=("scatter", "fast_scatter_nd",
                        ("data", "indices", "updates", "reduction", _REDUCTIONS)))
def scatter_nd(data: Array, indices: Array, updates: Array,
               reduction: Reduction = "none") -> Array:
    """Copy of ``data`` with ``updates`` written at index tuples (ONNX ScatterND).

    ONNX ScatterND (opsets 11, 13, 16, 18) and the MMCV custom-domain ``mmcv::ScatterND``
    (the opset-11 semantics, float32/int32)::

        out[indices[i_0, ..., i_{q-2}, :]] = updates[i_0, ..., i_{q-2}]

    The last axis of ``indices`` holds index tuples of depth
    ``k = indices.shape[-1] <= data.ndim``; with ``k < data.ndim`` every tuple selects a
    slice ``data.shape[k:]``.

    Parameters
    ----------
    data : array of rank r >= 1
    indices : int32/int64 array of rank q >= 1
    updates : array of shape ``indices.shape[:-1] + data.shape[k:]``
    reduction : {"none", "add", "mul", "max", "min"} (opset 16: add/mul, 18: max/min)

    Returns
    -------
    out : new array like ``data``
    %s
    Notes
    -----
    ONNX (and MMCV) leave duplicate index tuples undefined with "none"; fastops
    defines them (last in row-major order on the CPU) and stays deterministic with any
    thread count (ONNX Runtime's parallel ScatterND did not, onnxruntime#18048).
    float16 "add"/"mul" accumulate in float32 (``onnx.reference`` rounds every step).
    ``onnx.reference``'s ScatterND "max"/"min" index the output with an array instead
    of a tuple, which selects whole rows when ``k > 1`` (a reference bug); fastops
    follows the spec there.
    """
    op = "scatter_nd"
    be, (data, indices, updates) = _dispatch.prepare(op, data=data, indices=indices,
                                                     updates=updates)
    xp = be.xp
    red = _reduction(op, reduction)
    _check_data_dtype(op, data, red)
    indices = _indices(op, indices, be)
    updates = _updates(op, updates, data)
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least 1 dimension, got a 0-d array")
    if indices.ndim == 0:
        raise ValueError(f"{op}: indices must have at least 1 dimension, got a 0-d array")
    k = int(indices.shape[-1])
    if k > data.ndim:
        raise ValueError(f"{op}: the index depth k = indices.shape[-1] = {k} is larger "
                         f"than data's rank {data.ndim}")
    expected = tuple(indices.shape[:-1]) + tuple(data.shape[k:])
    if tuple(updates.shape) != expected:
        raise ValueError(
            f"{op}: updates has shape {tuple(updates.shape)}; expected "
            f"indices.shape[:-1] + data.shape[k:] = {tuple(indices.shape[:-1])} + "
            f"{tuple(data.shape[k:])} = {expected} (index depth k = indices.shape[-1] = "
            f"{k}, data.shape = {tuple(data.shape)})")
    N = _prod(indices.shape[:-1])
    if N == 0:
        return be.wrap(_new_copy(xp, data))
    kdt, cdt, kred = _kernel_types(data.dtype, red)
    src = be.element_view(data, cdt) if data.dtype != cdt else data
    out = be.empty(data.shape, cdt)
    if src.flags.c_contiguous:
        src_flat = src.reshape(-1).view(kdt) if src.size else None
    else:
        out[...] = src
        src_flat = None
    S = _prod(data.shape[k:])
    dims = np.asarray(data.shape[:k], dtype=np.int64)
    bad = be.run("scatter", "scatter_nd", src_flat, out.reshape(-1).view(kdt),
                 _flat(indices, xp), N, k, xp.asarray(dims),
                 _flat(updates.astype(cdt, copy=False), xp, kdt), S, kred)
    if bad >= 0:
        d = int(bad) % k
        _raise_bad(op, bad, indices, int(dims[d]), f"axis {d} of data")
    if out.dtype != data.dtype:
        out = out.astype(data.dtype)
    return be.wrap(out)


scatter_nd.__doc__ = scatter_nd.__doc__ % _SEMANTICS


# ------------------------------------------------------------------ GatherElements
@_dispatch.public(fast=("scatter", "fast_gather_elements",
                          ("data", "indices", "axis", _ROWS_MIN)))
def gather_elements(data: Array, indices: Array, axis: int = 0) -> Array:
    """Elements of ``data`` picked along ``axis`` by ``indices`` (ONNX GatherElements).

    ONNX GatherElements (opsets 11, 13), ``torch.gather``, ``np.take_along_axis``
    (without broadcasting)::

        out[i][j][k] = data[i][indices[i][j][k]][k]           # axis = 1, 3-D

    Parameters
    ----------
    data : array of rank r >= 1, any dtype of :func:`scatter_elements` (bool, integers,
        float16/32/64, complex64); any strides (read in place, no copy)
    indices : int32/int64 array of rank r, ``indices.shape[d] <= data.shape[d]`` for
        ``d != axis``; negative values count from the back
    axis : int, negative counts from the back

    Returns
    -------
    out : array of ``indices.shape`` and ``data.dtype`` (exact bit copies)

    Notes
    -----
    An index out of ``[-n, n)`` raises ``IndexError`` naming the first bad value and its
    position (row-major); no element is read out of bounds.  ``onnx.reference``
    requires the non-axis dimensions of ``indices`` to equal ``data``'s; smaller ones
    are allowed here, as in ONNX Runtime and ``torch.gather``.
    """
    op = "gather_elements"
    be, (data, indices) = _dispatch.prepare(op, data=data, indices=indices)
    xp = be.xp
    _check_data_dtype(op, data, 0)
    indices = _indices(op, indices, be)
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least 1 dimension, got a 0-d array")
    ax = _validate.axis(op, axis, data.ndim)
    if indices.ndim != data.ndim:
        raise ValueError(f"{op}: indices must have the same rank as data ({data.ndim}), "
                         f"got indices of shape {tuple(indices.shape)}")
    for d in range(data.ndim):
        if d != ax and indices.shape[d] > data.shape[d]:
            raise ValueError(f"{op}: indices.shape[{d}]={indices.shape[d]} is larger than "
                             f"data.shape[{d}]={data.shape[d]} (only the axis={ax} "
                             f"dimension may differ freely)")
    rows = _broadcast_rows(xp, indices, data.shape, ax)
    if rows is not None and data.flags.c_contiguous:   # whole rows: gather_nd's fast path
        flat_rows = _flat_rows(op, indices, rows, data.shape, ax)
        R = _prod(data.shape[:ax + 1])
        return be.wrap(gather_nd(data.reshape(R, -1), flat_rows[:, None]).reshape(indices.shape))
    out = be.empty(indices.shape, data.dtype)
    if out.size == 0:
        return be.wrap(out)
    kdt = np.dtype(_WORD[data.dtype.itemsize])
    src = be.element_view(data)
    st = _elem_strides(src)
    outer, inner, s_outer, s_inner = _layout(xp, indices.shape, ax, st)
    shape = indices.shape
    O, m, In = _prod(shape[:ax]), int(shape[ax]), _prod(shape[ax + 1:])
    n_axis = int(data.shape[ax])
    if n_axis == 0:   # every index is out of range (the kernel may assume n_axis >= 1)
        _raise_bad(op, 0, indices, n_axis, f"axis {ax} of data")
    bad = be.run("scatter", "gather_elements", src.view(kdt) if src.size else None,
                 _flat(indices, xp), O, m, In, outer, inner, s_outer, s_inner, int(st[ax]),
                 n_axis, out.reshape(-1).view(kdt))
    if bad >= 0:
        _raise_bad(op, bad, indices, n_axis, f"axis {ax} of data")
    return be.wrap(out)


# ------------------------------------------------------------------------ GatherND
@_dispatch.public(fast=("scatter", "fast_gather_nd", ("data", "indices", "batch_dims")))
def gather_nd(data: Array, indices: Array, batch_dims: int = 0) -> Array:
    """Slices of ``data`` at index tuples (ONNX GatherND, opsets 11, 12, 13).

    With ``b = batch_dims`` and ``k = indices.shape[-1]``::

        out[i_0..i_{q-2}] = data[i_0..i_{b-1}, *indices[i_0..i_{q-2}, :]]

    Parameters
    ----------
    data : array of rank r >= 1 (dtypes as :func:`gather_elements`)
    indices : int32/int64 array of rank q >= 1, tuples of depth ``k <= r - b``;
        negative values count from the back
    batch_dims : int, ``0 <= b < min(q, r)``; ``indices.shape[:b]`` must equal
        ``data.shape[:b]`` (opset 12)

    Returns
    -------
    out : array of shape ``indices.shape[:-1] + data.shape[b + k:]``, exact bit copies

    Notes
    -----
    An index out of range raises ``IndexError`` naming the first bad value and its
    position in ``indices``; nothing is read out of bounds.  Same results as
    ``onnx.reference`` and NumPy fancy indexing ``data[tuple(indices.T)]`` (b = 0).
    """
    op = "gather_nd"
    be, (data, indices) = _dispatch.prepare(op, data=data, indices=indices)
    xp = be.xp
    _check_data_dtype(op, data, 0)
    indices = _indices(op, indices, be)
    b = _validate.integer(op, "batch_dims", batch_dims)
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least 1 dimension, got a 0-d array")
    if indices.ndim == 0:
        raise ValueError(f"{op}: indices must have at least 1 dimension, got a 0-d array")
    if not 0 <= b < min(data.ndim, indices.ndim):
        raise ValueError(f"{op}: batch_dims={b} must satisfy 0 <= batch_dims < "
                         f"min(data.ndim, indices.ndim) = {min(data.ndim, indices.ndim)}")
    if tuple(indices.shape[:b]) != tuple(data.shape[:b]):
        raise ValueError(f"{op}: the first batch_dims={b} dimensions of indices "
                         f"{tuple(indices.shape[:b])} and data {tuple(data.shape[:b])} "
                         f"must be equal")
    k = int(indices.shape[-1])
    if k > data.ndim - b:
        raise ValueError(f"{op}: the index depth k = indices.shape[-1] = {k} is larger "
                         f"than data.ndim - batch_dims = {data.ndim - b}")
    out_shape = tuple(indices.shape[:-1]) + tuple(data.shape[b + k:])
    out = be.empty(out_shape, data.dtype)
    N = _prod(indices.shape[:-1])
    if N == 0:
        return be.wrap(out)
    kdt = np.dtype(_WORD[data.dtype.itemsize])
    S = _prod(data.shape[b + k:])
    dims = np.asarray(data.shape[b:b + k], dtype=np.int64)
    per_batch = _prod(indices.shape[b:-1])
    batch_rows = _prod(data.shape[b:b + k])
    src = _flat(data, xp, kdt) if data.size else None
    bad = be.run("scatter", "gather_nd", src, _flat(indices, xp), N, k, xp.asarray(dims),
                 per_batch, batch_rows, S, out.reshape(-1).view(kdt))
    if bad >= 0:
        d = int(bad) % k
        _raise_bad(op, bad, indices, int(dims[d]), f"axis {b + d} of data")
    return be.wrap(out)
