"""Resampling ops: resize (ONNX Resize, opsets 10 to 19); kernels in the "resample" family.

Kernels (fastops._cpu.resample / fastops._gpu.resample, same names and signatures):

    axis_table(n_in, n_out, mode, ctm, nearest_mode, scale, out_width, roi_start,
               roi_end, cubic_a, antialias, exclude_outside, n_raw, tap_start,
               first, count, weights, extrap)      one axis's tap table, in place
    resize2d(x5, fh, ch, wh, fw, cw, ww, v_first, out5)
                                                   two axes (1 and 3) of a 5-D view
    nearest2d(x5, fh, fw, out5)                    the same as a gather, any element bits
    round_cast(src, dst)                           W -> integer (half away, saturated)
    fill(out3, mask, code, value)                  flagged outputs (extrapolation)

The machinery is reusable: :func:`axis_tables` builds the per-axis tables of any
coordinate rule the kernel knows, and :func:`apply_tables` runs the separable apply on
any set of axes with tables from anywhere (first, count, weights) in the same layout.
"""
import dataclasses
import itertools
import math
import operator
import threading

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, FloatScalar, Literal, Optional, Sequence

OP = "resize"

MODES = {"nearest": 0, "linear": 1, "cubic": 2}
COORDINATE_MODES = {
    "half_pixel": 0, "half_pixel_symmetric": 1, "pytorch_half_pixel": 2,
    "align_corners": 3, "asymmetric": 4, "tf_crop_and_resize": 5,
    "tf_half_pixel_for_nn": 6,
}
NEAREST_MODES = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}
POLICIES = ("stretch", "not_larger", "not_smaller")
DTYPES = ("uint8", "int8", "int32", "int64", "float16", "float32", "float64")

# compute (and weight) type per element type: float keeps 8-bit integers and float16/32
# exact enough (24-bit mantissa); 32/64-bit integers need double
_COMPUTE = {np.dtype(k): np.dtype(v) for k, v in (
    ("uint8", "float32"), ("int8", "float32"), ("float16", "float32"), ("float32", "float32"),
    ("int32", "float64"), ("int64", "float64"), ("float64", "float64"))}
# unsigned type of each element size: nearest moves bits, never values
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MAX_BYTES = 1 << 62


# ------------------------------------------------------------------ arguments
def _choice(name, value, table):
    if not isinstance(value, str) or value not in table:
        raise ValueError(f"{OP}: {name}={value!r} is not one of "
                         f"{', '.join(repr(k) for k in table)}")
    return value


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a


def _vector(name, value):
    """A 1-D NumPy array from a list, tuple or 1-D array (host or device); None or an
    empty sequence (an omitted ONNX input) gives None."""
    if value is None:
        return None
    if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray) and \
            not hasattr(value, "get"):     # a framework tensor (torch, JAX)
        if _dispatch._dlpack_device(value) in (1, 3):
            value = np.from_dlpack(value)
        elif hasattr(value, "cpu"):
            value = value.cpu()
    arr = np.asarray(_host(value))
    if arr.ndim == 0:
        raise ValueError(f"{OP}: {name} must be a 1-D sequence, got a scalar {value!r}")
    if arr.ndim != 1:
        raise ValueError(f"{OP}: {name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return None
    if arr.dtype == object:     # Python ints beyond int64 stay exact
        try:
            return np.array([operator.index(v) for v in arr], dtype=object)
        except TypeError:
            pass
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{OP}: {name} must hold numbers, got dtype {arr.dtype}")
    return arr


def _axes(axes, ndim):
    if axes is None:
        return list(range(ndim))
    if isinstance(axes, (tuple, list)) and all(type(a) is int for a in axes):
        out = [a + ndim if a < 0 else a for a in axes]
        if all(0 <= a < ndim for a in out) and len(set(out)) == len(out):
            return out
    arr = _vector("axes", axes)
    if arr is None:
        return list(range(ndim))
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{OP}: axes must be integers, got {axes!r}")
    out = [_validate.axis(OP, int(a), ndim, "axes") for a in arr]
    if len(set(out)) != len(out):
        raise ValueError(f"{OP}: axes={list(map(int, arr))} repeats an axis")
    return out


@dataclasses.dataclass
class Axis:
    """One resized axis: the coordinate rule's inputs (see resample.hpp AxisParams)."""
    axis: int
    n_in: int
    n_out: int
    scale: float        # coordinate scale: float32 `scales` value, or out / in
    out_width: float    # the reference's output_width (scale * n_in; n_out for sizes)
    roi: tuple          # (start, end), used by tf_crop_and_resize only

    def identity(self, ctm):
        """The reference's skip rule: scale ~ 1, same length, full roi."""
        if self.n_out != self.n_in or not math.isclose(self.scale, 1.0):
            return False
        return ctm != "tf_crop_and_resize" or (
            math.isclose(self.roi[0], 0.0) and math.isclose(self.roi[1], 1.0))


def _geometry(shape, axes, scales, sizes, policy, roi, ctm):
    """Per-axis Axis records (for every axis in `axes`) and the output shape."""
    n = len(axes)
    if (scales is None) == (sizes is None):
        raise ValueError(f"{OP}: give exactly one of scales and sizes "
                         f"(got {'both' if scales is not None else 'neither'})")
    if ctm == "tf_crop_and_resize":
        if roi is None:
            raise ValueError(f"{OP}: coordinate_transformation_mode='tf_crop_and_resize' "
                             f"needs roi (starts then ends for each resized axis)")
        if roi.size != 2 * n:
            raise ValueError(f"{OP}: roi has {roi.size} values; expected {2 * n} (a start "
                             f"and an end for each of the {n} axes)")
        r = roi.astype(np.float64)
        if not np.isfinite(r).all():
            raise ValueError(f"{OP}: roi={roi.tolist()} must be finite")
        rois = [(float(r[i]), float(r[n + i])) for i in range(n)]
    else:
        rois = [(0.0, 1.0)] * n
    out_shape = list(shape)
    recs = []
    if scales is not None:
        if scales.size != n:
            raise ValueError(f"{OP}: scales has {scales.size} values; expected {n} (one per "
                             f"axis in axes)" if n != len(shape) else
                             f"{OP}: scales has {scales.size} values; expected {n} (one per "
                             f"axis of x with shape {tuple(shape)})")
        with np.errstate(over="ignore", invalid="ignore"):
            s32 = scales.astype(np.float32)     # ONNX stores scales as float32
        for i, a in enumerate(axes):
            s = float(s32[i])
            if not (math.isfinite(s) and s > 0):
                raise ValueError(f"{OP}: scales[{i}]={scales[i].item()!r} must be a positive "
                                 f"finite float32 value")
            n_in = int(shape[a])
            n_out = math.floor(n_in * s)        # the product in float64, as the reference
            recs.append(Axis(a, n_in, n_out, s, s * n_in, rois[i]))
            out_shape[a] = n_out
        return recs, out_shape
    if sizes.size != n:
        raise ValueError(f"{OP}: sizes has {sizes.size} values; expected {n} (one per axis "
                         f"in axes)")
    if sizes.dtype.kind not in "iuO":
        raise TypeError(f"{OP}: sizes must be integers, got {sizes.tolist()}")
    sz = [int(v) for v in sizes]
    for i, v in enumerate(sz):
        if v < 0:
            raise ValueError(f"{OP}: sizes[{i}]={v} must be >= 0")
    if policy == "stretch":
        for i, a in enumerate(axes):
            n_in, n_out = int(shape[a]), sz[i]
            if n_in == 0 and n_out != 0:
                raise ValueError(f"{OP}: cannot resize axis {a} of length 0 to {n_out}")
            s = n_out / n_in if n_in else 1.0
            recs.append(Axis(a, n_in, n_out, s, float(n_out), rois[i]))
            out_shape[a] = n_out
        return recs, out_shape
    for i, a in enumerate(axes):
        if shape[a] == 0:
            raise ValueError(f"{OP}: keep_aspect_ratio_policy={policy!r} cannot scale axis "
                             f"{a} of length 0")
    ratios = [sz[i] / int(shape[a]) for i, a in enumerate(axes)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    for i, a in enumerate(axes):
        n_in = int(shape[a])
        n_out = int(s * n_in + 0.5)             # round half up (the spec's round_int)
        recs.append(Axis(a, n_in, n_out, s, s * n_in, rois[i]))
        out_shape[a] = n_out
    return recs, out_shape


def _taps(mode, antialias, scale):
    """(n_raw, tap_start): raw taps per output and the first one's offset from the
    adjusted floor, with the reference's expressions (exact Python ints)."""
    if mode == "nearest":
        return 1, 0
    if not antialias:
        return (2, 0) if mode == "linear" else (4, -1)
    s = min(scale, 1.0)
    start = math.floor((-1.0 if mode == "linear" else -2.0) / s) + 1
    return 2 - 2 * start, start


def _alloc(be, shape, dtype, what):
    """be.empty, whose MemoryError names the argument that set the size."""
    return be.empty(shape, dtype, sized_by=what)


# ------------------------------------------------------------------ tables
@dataclasses.dataclass
class Table:
    """One axis's taps on the backend: output o reads source indices first[o] ..
    first[o] + count[o] - 1 with weights[o, :count[o]]; extrap[o] marks outputs that
    take the extrapolation value instead (tf_crop_and_resize)."""
    n_in: int
    first: object
    count: object
    weights: object
    extrap: object
    K: int

    @property
    def n_out(self):
        return self.first.shape[0]


# Tables by everything they depend on (and the GPU stream): a preprocessing loop
# resizes frames of one shape again and again, and for small images building the tables
# costs more than the resize (tiny resize 1x3x8x8 x2: ~40% of the call on the CPU; on an
# H200 the two tables' launches and allocations were 0.16-0.22 of a 0.21-0.34 ms call).
# Kernels never write tables.  Only small tables are kept, and few: the cache holds at
# most _CACHE_ENTRIES tables of at most _CACHE_BYTES each.
_CACHE = {}
_CACHE_ENTRIES = 64
_CACHE_BYTES = 1 << 20
_CACHE_LOCK = threading.Lock()
_THREAD = threading.local()
_THREAD_NUMBERS = itertools.count()


def _thread_number():
    """A number no other thread of this process ever gets.  threading.get_ident() is no
    such number: a thread started after another one ended usually gets the ended one's
    ident, and would reuse the tables that the ended thread's stream wrote, unordered
    with its own stream."""
    try:
        return _THREAD.number
    except AttributeError:
        _THREAD.number = next(_THREAD_NUMBERS)     # (one bytecode: atomic under the GIL)
        return _THREAD.number


def axis_tables(be, recs, mode, ctm, nearest_mode, cubic_a, antialias, exclude_outside,
                wdtype, what):
    """One :class:`Table` per Axis record, built by the backend's axis_table kernel
    (tables come from a small cache when an identical one was built before)."""
    out = []
    # a GPU table is reused only on the device and stream that built it: in that stream's
    # order it is written before any use (no sync), and an evicted one's memory goes back
    # to CuPy's pool of that stream while no other stream still reads it.  The thread too:
    # with per-thread default streams every thread's stream has the same ptr.
    where = None
    if be.name == "gpu":
        where = (be.xp.cuda.Device().id, be.xp.cuda.get_current_stream().ptr,
                 _thread_number())
    for r in recs:
        key = (be.name, where, r.n_in, r.n_out, r.scale, r.out_width, r.roi, mode, ctm,
               nearest_mode, cubic_a, antialias, exclude_outside, np.dtype(wdtype).char)
        table = _CACHE.get(key)
        if table is not None:
            out.append(table)
            continue
        table = _build_table(be, r, mode, ctm, nearest_mode, cubic_a, antialias,
                             exclude_outside, wdtype, what)
        if table.weights.nbytes <= _CACHE_BYTES:
            with _CACHE_LOCK:   # (dask's threads resize concurrently)
                if len(_CACHE) >= _CACHE_ENTRIES:
                    del _CACHE[next(iter(_CACHE))]      # the oldest entry
                _CACHE[key] = table
        out.append(table)
    return out


def _build_table(be, r, mode, ctm, nearest_mode, cubic_a, antialias, exclude_outside,
                 wdtype, what):
    """The Table of one Axis record, from the backend's axis_table kernel."""
    xp = be.xp
    n_raw, start = _taps(mode, antialias, r.scale)
    K = 1 if mode == "nearest" else max(1, min(n_raw, r.n_in))
    nbytes = r.n_out * (17 + K * np.dtype(wdtype).itemsize)
    if n_raw > _MAX_BYTES or nbytes > _MAX_BYTES:
        raise MemoryError(f"{OP}: {what} give {n_raw} filter taps per output on axis "
                          f"{r.axis}, more than can be tabulated")
    try:    # scratch, not an output: plain arrays of the backend
        idx = xp.empty((2, r.n_out), dtype=np.int64)
        extrap = xp.empty((r.n_out,), dtype=np.uint8)
        weights = xp.empty((r.n_out, K), dtype=wdtype)
    except MemoryError as exc:
        raise MemoryError(f"{OP}: {what} need a {nbytes}-byte filter table on axis "
                          f"{r.axis}, which cannot be allocated") from exc
    first, count = idx[0], idx[1]
    be.run("resample", "axis_table", r.n_in, r.n_out, MODES[mode], COORDINATE_MODES[ctm],
           NEAREST_MODES[nearest_mode], r.scale, r.out_width, r.roi[0], r.roi[1],
           cubic_a, antialias, exclude_outside, n_raw, start, first, count, weights,
           extrap)
    return Table(r.n_in, first, count, weights, extrap, K)


# ------------------------------------------------------------------ apply
_prod = _validate.prod


# one-axis resize: rows of at least this many inner elements go through the vertical
# step (contiguous rows), shorter ones through the horizontal step with C inner
_VERTICAL_MIN_INNER = 16


def _five(shape, axes):
    """(5-D shape (B, H, M, Wd, C) of ``shape`` around the one or two resized axes, which
    of its axes 1/3 carry axes[0]/axes[1] or None)."""
    s = shape
    if len(axes) == 2:
        a, b = axes
        return (_prod(s[:a]), s[a], _prod(s[a + 1:b]), s[b], _prod(s[b + 1:])), (1, 3)
    (a,) = axes
    inner = _prod(s[a + 1:])
    if inner >= _VERTICAL_MIN_INNER:
        return (_prod(s[:a]), s[a], 1, 1, inner), (1, None)
    return (_prod(s[:a]), 1, 1, s[a], inner), (None, 3)


_UNIT = {}


def _unit_table(be, wdtype):
    """The identity table of a length-1 axis (host copies are cached: kernels never
    write tables)."""
    key = np.dtype(wdtype or np.float32)
    if be.name == "cpu" and key in _UNIT:
        return _UNIT[key]
    first = be.xp.zeros((1,), dtype=np.int64)
    count = be.xp.ones((1,), dtype=np.int64)
    weights = be.xp.ones((1, 1), dtype=key)
    t = Table(1, first, count, weights, be.xp.zeros((1,), dtype=np.uint8), 1)
    if be.name == "cpu":
        _UNIT[key] = t
    return t


def _out_shape(x_shape, axes, tables):
    shape = list(x_shape)
    for a, t in zip(axes, tables):
        shape[a] = t.n_out
    return shape


@dataclasses.dataclass(frozen=True)
class _StepPlan:
    """One resize2d / nearest2d pass over one or two axes of an input shape."""
    out_shape: list
    in5: tuple              # the input and output as 5-D views (see _five)
    out5: tuple
    th: Table               # the tables of 5-D axes 1 and 3 (unit tables where unused)
    tw: Table
    v_first: bool


def _step_plan(be, shape, axes, tables, wdtype):
    out_shape = _out_shape(shape, axes, tables)
    in5, (ia, ib) = _five(shape, axes)
    unit = None
    if ia is None or ib is None:
        unit = _unit_table(be, wdtype)
    th = tables[0] if ia is not None else unit
    tw = (tables[1] if len(tables) == 2 else tables[0]) if ib is not None else unit
    return _StepPlan(out_shape, in5, _five(out_shape, axes)[0], th, tw,
                     _vertical_first(in5, th, tw))


def _run_step(be, x, sp, nearest, what):
    """One planned pass over x (same dtype out)."""
    out = _alloc(be, sp.out_shape, x.dtype, what)
    x5, o5 = x.reshape(sp.in5), out.reshape(sp.out5)
    if nearest:
        be.run("resample", "nearest2d", x5, sp.th.first, sp.tw.first, o5)
    else:
        be.run("resample", "resize2d", x5, sp.th.first, sp.th.count, sp.th.weights,
               sp.tw.first, sp.tw.count, sp.tw.weights, sp.v_first, o5)
    return out


def _step(be, x, axes, tables, nearest, wdtype, what):
    """Resize one or two axes of x (same dtype out)."""
    return _run_step(be, x, _step_plan(be, x.shape, axes, tables, wdtype), nearest, what)


# Cost of one tap of the horizontal step relative to the vertical one (a gather per
# output against a contiguous multiply-add): about 3 in the resize benchmarks.
_H_COST = 3


def _vertical_first(shape5, th, tw):
    """Which step runs first in resize2d: the cheaper order by multiply-adds (the orders
    differ only in rounding; the choice is deterministic and the GPU follows it)."""
    _, H, _, Wd, C = shape5
    Ho, Wo = th.n_out, tw.n_out
    v_first = Ho * (Wd * C * th.K + _H_COST * Wo * C * tw.K)
    h_first = _H_COST * min(H, Ho * th.K) * Wo * C * tw.K + Ho * Wo * C * th.K
    return v_first <= h_first


def apply_tables(be, x, axes, tables, nearest, what=OP):
    """Resize ``axes`` (ascending) of x with their tables; returns a new C-ordered array
    of x's dtype.  Nearest moves element bits (any dtype); the interpolating path wants
    x in one of uint8, int8, int32, int64, float32, float64 and weights in its compute
    type.  Up to two axes run as one fused pass; more run as a chain of such passes
    over the innermost remaining pair, intermediates in the compute type (never
    rounded), then one rounding cast."""
    if not axes:
        return x.copy()
    order = list(range(len(axes)))
    pairs = []
    while order:        # innermost pairs first
        pairs.append(order[-2:])
        order = order[:-2]
    if nearest:
        cur = x
        for p in pairs:
            cur = _step(be, cur, [axes[i] for i in p], [tables[i] for i in p], True, None,
                        what)
        return cur
    wdtype = tables[0].weights.dtype
    if len(pairs) == 1:
        return _step(be, x, axes, tables, False, wdtype, what)
    cur = x if x.dtype == wdtype else be.element_view(x, wdtype)
    for p in pairs:
        cur = _step(be, cur, [axes[i] for i in p], [tables[i] for i in p], False, wdtype,
                    what)
    if x.dtype == wdtype:
        return cur
    if x.dtype.kind == "f":
        return cur.astype(x.dtype)
    out = _alloc(be, cur.shape, x.dtype, what)
    be.run("resample", "round_cast", cur.reshape(-1), out.reshape(-1))
    return out


def _round_value(value, dtype):
    """extrapolation_value as one element of dtype (integers: half away, saturated)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array([value], dtype=dtype)
    if math.isnan(value):
        raise ValueError(f"{OP}: extrapolation_value=nan cannot be stored as {dtype.name}")
    info = np.iinfo(dtype)
    if math.isinf(value):
        r = info.max if value > 0 else info.min
    else:
        r = math.trunc(value)
        d = value - r
        r += (d >= 0.5) - (d <= -0.5)
        r = min(max(r, info.min), info.max)
    return np.array([r], dtype=dtype)


def fill_flagged(be, out, axes, tables, code, value):
    """out[..., o, ...] = value along every axis where its table flags o with code."""
    v = _round_value(value, out.dtype)
    bits = _BITS[out.dtype.itemsize]
    flat = out.view(bits)
    val = v.view(bits)          # a host array on every backend (a kernel argument)
    s = out.shape
    for a, t in zip(axes, tables):
        o3 = flat.reshape(_prod(s[:a]), s[a], _prod(s[a + 1:]))
        be.run("resample", "fill", o3, t.extrap, code, val)


# ------------------------------------------------------------------ public
# Host plans by the call's arguments (fastops.resize on NumPy arrays): a preprocessing loop
# resizes frames of one shape with one set of arguments, and for small images validating
# them and deriving the geometry cost more than the resize (tiny resize 1x3x8x8 x2: ~60%
# of a 42 us call).  At most _CACHE_ENTRIES plans of small tables are kept.
# A repeated call whose plan is one CPU pass (_Plan.fast) and whose output is small runs
# in the compiled fast path (resample.pyx fast_planned_resize), the others through
# _run_plan.
_PLANS = {}


@_dispatch.public(fast=("resample", "fast_planned_resize", (
    "x", "scales", "sizes", "mode", "coordinate_transformation_mode", "nearest_mode",
    "cubic_coeff_a", "exclude_outside", "extrapolation_value", "antialias", "axes",
    "keep_aspect_ratio_policy", "roi", _PLANS)))
def resize(x: Array, scales: Optional[Array] = None, sizes: Optional[Array] = None, *,
           mode: Literal["nearest", "linear", "cubic"] = "nearest",
           coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", cubic_coeff_a: FloatScalar = -0.75,
           exclude_outside: bool = False, extrapolation_value: FloatScalar = 0.0,
           antialias: bool = False, axes: Optional[Sequence[int]] = None,
           keep_aspect_ratio_policy: str = "stretch", roi: Optional[Array] = None) -> Array:
    """Resize ``x`` along any set of axes: ONNX Resize, opsets 10 to 19.

    Each output element is a weighted sum of input elements, separable per axis: along
    every resized axis, output index ``o`` maps to a source coordinate (the coordinate
    transformation mode), and the mode's filter gives the weights of the source indices
    around it.  CPU (OpenMP) and GPU (CuPy) give the same bytes for every dtype.

    Parameters
    ----------
    x : array, uint8, int8, int32, int64, float16, float32 or float64, ndim >= 1
        Any strides (non-contiguous, negative, zero, non-native byte order); never
        modified.
    scales : sequence or 1-D array of float, optional
        One per axis in ``axes``.  Stored as float32 as ONNX stores them; the output
        length is ``floor(n * scale)`` with the product in float64 (as onnx.reference).
        Exactly one of ``scales`` and ``sizes``; an empty sequence counts as omitted.
    sizes : sequence or 1-D array of int, optional
        Output lengths, one per axis in ``axes`` (>= 0).
    mode : {"nearest", "linear", "cubic"}
    coordinate_transformation_mode : str
        "half_pixel" (default), "half_pixel_symmetric", "pytorch_half_pixel",
        "align_corners", "asymmetric", "tf_crop_and_resize" (with ``roi`` and
        ``extrapolation_value``) or opset 11's "tf_half_pixel_for_nn".
    nearest_mode : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
    cubic_coeff_a : float
        Keys' cubic parameter (-0.75 as torch's bicubic; -0.5 as TensorFlow and torch's
        antialiased bicubic).  Finite.
    exclude_outside : bool or 0/1
        Weights of taps outside the axis become 0 and the rest are renormalized.
    extrapolation_value : float
        tf_crop_and_resize's value for outputs mapped outside [0, n - 1].
    antialias : bool or 0/1
        Linear and cubic: when downscaling, the filter is stretched by 1 / scale and its
        weights normalized (ONNX 18+).  No effect on nearest.
    axes : sequence of int, optional
        The axes ``scales`` / ``sizes`` / ``roi`` refer to (negative allowed, no
        repeats); default all.  Other axes are kept.
    keep_aspect_ratio_policy : {"stretch", "not_larger", "not_smaller"}
        With ``sizes``: "not_larger" / "not_smaller" scale every axis in ``axes`` by the
        smallest / largest ``size / n`` and round the lengths half up.  Ignored with
        ``scales`` (the spec).
    roi : sequence or 1-D array of float, optional
        tf_crop_and_resize only: ``[start_0, ..., start_k, end_0, ..., end_k]`` over
        ``axes``, normalized coordinates, finite.  Ignored by the other modes.

    Returns
    -------
    y : array of x's dtype, C-contiguous, on x's device (and framework)

    Notes
    -----
    ================================  ===================================================
    dtypes                            float16 is computed in float32; uint8, int8 and
                                      float32 in float32; int32, int64 and float64 in
                                      float64 (int64 beyond 2**53 loses precision, as in
                                      onnx.reference, except nearest, which moves the
                                      elements exactly)
    integer outputs                   rounded half away from zero and saturated (API.md);
                                      onnx.reference rounds half to even, ONNX Runtime
                                      truncates uint8 linear results
    intermediates                     the axes are applied one after another (separable);
                                      intermediate values stay in the compute type, never
                                      rounded to the integer dtype between axes
    coordinates                       computed in float64 with onnx.reference's
                                      expressions; ONNX Runtime computes them in float32,
                                      so its nearest picks can differ at float64
                                      near-ties (e.g. 6 -> 4 rows at scale 0.7)
    output length                     floor(n * float32(scale)) in float64; ONNX Runtime
                                      multiplies in float32 (3 * float32(5/3) gives it 5
                                      outputs, onnx.reference and fastops 4)
    output width in the formulas      ``scale * n`` when scales are given (onnx.reference
                                      and the ONNX test data: align_corners divides by
                                      ``scale * n - 1``; ONNX Runtime by the integer
                                      length minus 1); the exact output length when sizes
                                      are given (onnx.reference recomputes
                                      ``(out / n) * n``, off by an ulp for some lengths:
                                      with roi [0, 1] it then extrapolates the last
                                      sample)
    length-1 outputs                  pytorch_half_pixel samples coordinate 0 (the spec
                                      and ONNX Runtime; onnx.reference uses -0.5,
                                      onnx/onnx#4275); tf_crop_and_resize samples the
                                      roi's centre (the spec; onnx.reference only when
                                      ``scale * n`` is exactly 1)
    half_pixel_symmetric              differs from half_pixel only when scales are given
                                      (with sizes the output width is exact)
    nearest ties                      an integral coordinate picks itself in every mode;
                                      otherwise floor / ceil / round with ties to the
                                      floor or the ceiling; indices clamped to the axis
    linear / cubic taps               as onnx.reference: 2 (linear) or 4 (cubic) taps,
                                      with antialias ``2 - 2 * (floor(-s / scale) + 1)``
                                      (s = 1 linear, 2 cubic) taps weighted by the
                                      stretched filter and normalized; out-of-axis taps
                                      read the edge (the reference's edge padding) unless
                                      exclude_outside
    exclude_outside with nearest      onnx.reference's rule: a pick outside the axis gets
                                      weight 0 and the output is 0 (ONNX Runtime rejects
                                      the combination)
    weights of exactly 0              not read: an inf or NaN input does not leak into
                                      outputs it has no weight in (onnx.reference and
                                      torch compute 0 * inf = NaN there)
    identity axes                     an axis with scale ~ 1 (math.isclose), the same
                                      length and a full roi is not resampled (as
                                      onnx.reference skips it)
    onnx.reference window bug         onnx 1.22's vectorized reference takes the tap
                                      window from x + pad, which can round to an integer
                                      when x is just above one (10.5 / 1.4 - 0.5): it then
                                      reads one sample too far left; fastops samples at x
    opset 10                          Resize-10 (inputs X, scales) is
                                      coordinate_transformation_mode="asymmetric";
                                      ONNX Runtime's nearest floors on upscaled axes and
                                      ceils on downscaled ones: call with
                                      nearest_mode="floor" / "ceil" per group of axes
                                      (nearest is separable, two calls are exact)
    torch equivalences                bilinear/bicubic (align_corners=False) = linear /
                                      cubic half_pixel; align_corners=True =
                                      "align_corners"; nearest-exact = half_pixel with
                                      round_prefer_ceil; nearest = asymmetric + floor
                                      (torch computes in/out in float32: equal where
                                      that ratio is exact); antialias=True = antialias
                                      with exclude_outside=1 (bicubic: cubic_coeff_a=-0.5)
    ================================  ===================================================

    Algorithm: per resized axis one table of (first source index, tap count, weights),
    built once per call (on the device for CuPy); the CPU applies two axes at a time per
    output row (vertical step over contiguous rows, horizontal step within a row, the
    cheaper order first), in parallel over rows, with SIMD loops and exact-2x fast paths;
    more axes run as a chain.  Every value is one fixed sequence of operations, so results
    do not depend on the thread count, the SIMD level or the device.
    """
    be, (x,) = _dispatch.prepare(OP, x=x)
    args = (scales, sizes, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
            exclude_outside, extrapolation_value, antialias, axes, keep_aspect_ratio_policy,
            roi)
    key = _plan_key(x, args) if be.name == "cpu" else None
    plan = _PLANS.get(key) if key is not None else None
    if plan is None:
        # a plan to be cached is made from the key's snapshot of the arguments: another
        # thread rewriting scales meanwhile must not file a plan under the wrong key
        plan = _plan(be, x, *(args if key is None else
                              _dispatch.kernel_module("cpu", "resample").args_of(key)))
        if key is not None and plan.table_bytes <= _CACHE_BYTES:
            with _CACHE_LOCK:
                if len(_PLANS) >= _CACHE_ENTRIES:
                    del _PLANS[next(iter(_PLANS))]      # the oldest entry
                _PLANS[key] = plan
    return be.wrap(_run_plan(be, be.element_view(x), plan))


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything a resize call computes from its arguments but not from x's values:
    validated once, then reused for identical arguments (the host plan cache)."""
    out_shape: list
    axes_on: list           # resized axes, ascending (empty: an identity resize)
    tables: list            # their tables (None when the output is empty)
    nearest: bool
    tf_crop: bool
    extrap_value: float
    exclude_outside: bool
    what: str               # "scales" or "sizes": named in allocation errors
    step: Optional[_StepPlan] = None    # the one pass of one or two resized axes
    fast: Optional[tuple] = None        # that pass for fast_planned_resize (_fast_step)

    @property
    def table_bytes(self):
        return sum(t.weights.nbytes + 17 * t.n_out for t in self.tables or ())


def _plan_key(x, args):
    """The plan key of a CPU call (fastops/_cpu/resample.pyx plan_key: x's shape and dtype,
    each argument's type and value), or None for arguments that cannot be keyed cheaply."""
    return _dispatch.kernel_module("cpu", "resample").plan_key(x, args)


def _plan(be, x, scales, sizes, mode, coordinate_transformation_mode, nearest_mode,
          cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes,
          keep_aspect_ratio_policy, roi):
    """Validates the arguments and derives the geometry and the tables (see resize)."""
    if x.dtype.newbyteorder("=") not in _COMPUTE:   # (dtype.name is slow: checked once)
        _validate.dtype_in(OP, "x", x, DTYPES)
    _validate.min_ndim(OP, "x", x, 1)
    mode = _choice("mode", mode, MODES)
    ctm = _choice("coordinate_transformation_mode", coordinate_transformation_mode,
                  COORDINATE_MODES)
    nearest_mode = _choice("nearest_mode", nearest_mode, NEAREST_MODES)
    policy = _choice("keep_aspect_ratio_policy", keep_aspect_ratio_policy,
                     {p: 0 for p in POLICIES})
    cubic_a = _validate.number(OP, "cubic_coeff_a", cubic_coeff_a)
    if not math.isfinite(cubic_a):
        raise ValueError(f"{OP}: cubic_coeff_a={cubic_a!r} must be finite")
    exclude_outside = _validate.flag(OP, "exclude_outside", exclude_outside)
    antialias = _validate.flag(OP, "antialias", antialias)
    extrap_value = _validate.number(OP, "extrapolation_value", extrapolation_value)
    ax = _axes(axes, x.ndim)
    scales_v = _vector("scales", scales)
    sizes_v = _vector("sizes", sizes)
    roi_v = _vector("roi", roi)
    what = "scales" if scales_v is not None else "sizes"
    recs, out_shape = _geometry(x.shape, ax, scales_v, sizes_v, policy, roi_v, ctm)
    nearest = mode == "nearest"
    plan = dict(out_shape=out_shape, axes_on=[], tables=None, nearest=nearest,
                tf_crop=ctm == "tf_crop_and_resize", extrap_value=extrap_value,
                exclude_outside=exclude_outside, what=what)
    if _prod(out_shape) == 0:
        return _Plan(**plan)
    if x.itemsize * _prod(out_shape) > _MAX_BYTES:
        raise MemoryError(f"{OP}: an output of shape {tuple(out_shape)} (set by {what}) "
                          f"cannot exist")
    active = sorted((r for r in recs if not r.identity(ctm)), key=lambda r: r.axis)
    wdtype = np.float32 if nearest else _COMPUTE[x.dtype]
    axes_on = [r.axis for r in active]
    tables = axis_tables(be, active, mode, ctm, nearest_mode, cubic_a, antialias,
                         exclude_outside, wdtype, what)
    plan.update(axes_on=axes_on, tables=tables)
    if 1 <= len(axes_on) <= 2:
        plan["step"] = sp = _step_plan(be, x.shape, axes_on, tables, wdtype)
        if be.name == "cpu" and not plan["tf_crop"] and not (nearest and exclude_outside) \
                and x.dtype.char != "e":
            plan["fast"] = _fast_step(sp, nearest)
    return _Plan(**plan)


def _fast_step(sp, nearest):
    """A plan's one CPU pass as resample.pyx fast_planned_resize reads it: _run_step's
    kernel arguments for the plan's input shape, for calls that need no more than that
    pass (not float16, which is computed in float32; no extrapolated or excluded outputs
    to fill afterwards)."""
    return (tuple(sp.in5), tuple(sp.out_shape), sp.th.first, sp.th.count, sp.th.weights,
            sp.tw.first, sp.tw.count, sp.tw.weights, bool(sp.v_first), nearest)


def _apply_plan(be, x, plan):
    """The plan's passes over x: its planned single pass, or apply_tables' chain."""
    if plan.step:
        return _run_step(be, x, plan.step, plan.nearest, plan.what)
    return apply_tables(be, x, plan.axes_on, plan.tables, plan.nearest, plan.what)


def _run_plan(be, x, plan):
    """The resize of x (native, element strides) by a plan of its shape and dtype."""
    if plan.tables is None:
        return _alloc(be, plan.out_shape, x.dtype, plan.what)
    if not plan.axes_on:
        return x.copy()
    if plan.nearest:
        out = _apply_plan(be, x.view(_BITS[x.itemsize]), plan).view(x.dtype)
    else:
        half = x.dtype.char == "e"  # (float16; `x.dtype == np.float16` costs 0.3 us)
        out = _apply_plan(be, be.element_view(x, np.float32) if half else x, plan)
        if half:
            out = out.astype(np.float16)
    if plan.tf_crop:
        fill_flagged(be, out, plan.axes_on, plan.tables, 1, plan.extrap_value)
    if plan.nearest and plan.exclude_outside:
        fill_flagged(be, out, plan.axes_on, plan.tables, 2, 0.0)
    return out
