"""Hostile input for every public op: nothing crashes, reads or writes out of bounds, or
returns a silent wrong answer; bad input gets an exception naming the op and argument.

Every public function has one ``OpSpec`` in ``SPECS`` (``test_every_public_op_has_a_spec``
fails for a new op without one).  The generic tests below then cover it:

* inputs are never modified (property-based over random valid inputs);
* strided, negative-stride, Fortran, broadcast (zero-stride), read-only, unaligned,
  packed-record and non-native byte order views give the result of their contiguous
  native copy, bit for bit;
* every integer index dtype gives the int64 result (or a TypeError naming the op);
* huge and negative integer arguments give a clean exception or the result of the value
  they are equivalent to (never a wrapped size);
* NaN and infinities in float arrays and scalars, zero-size axes, rank up to 10;
* a memory limit (RLIMIT_AS, in a subprocess) gives MemoryError naming the op, never an
  abort (skipped under the sanitizers, which reserve terabytes of address space);
* a thread that flips indices (or counted values) while the op runs with the GIL
  released: any result or a clean exception, never a crash.  Under
  scripts/sanitize.sh (ASan + UBSan) an out-of-bounds access in any of these aborts.
"""
import contextlib
import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
import time
from typing import Callable, Dict, Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastops
from tests.conftest import guarded, public_ops, resolve

SANITIZED = os.environ.get("FASTOPS_SANITIZED") == "1"
EXAMPLES = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

HUGE = [2**31, 2**32 + 1, 2**63 - 1, 2**63, 2**64, 2**100, -(2**31) - 1, -(2**63),
        -(2**63) - 1, -(2**100), np.int64(2**63 - 1), np.uint64(2**64 - 1)]
CLEAN = (ValueError, TypeError, IndexError, MemoryError)


# ------------------------------------------------------------------ input makers
def _shape(rng, lo=1, hi=3, side=5):
    return tuple(int(s) for s in rng.integers(1, side + 1, int(rng.integers(lo, hi + 1))))


def _values(rng, shape, dtype=None):
    """Random values of a random (or given) dtype, floats with NaN, +-0, +-inf and ties."""
    dtype = np.dtype(dtype or rng.choice(["float32", "float64", "float16", "int32",
                                          "uint8", "int64"]))
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "f":
        v = np.asarray(np.round(rng.standard_normal(shape) * 4) / 2)
        special = np.asarray(rng.random(shape))
        v[special < 0.05] = np.nan
        v[(special >= 0.05) & (special < 0.08)] = np.inf
        v[(special >= 0.08) & (special < 0.11)] = -0.0
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return np.asarray(rng.integers(max(info.min, -50), min(info.max, 50), shape,
                                   endpoint=True)).astype(dtype)


def _axis(rng, ndim):
    return int(rng.integers(-ndim, ndim))


def _boxes(rng, n, dtype=np.float32):
    c = rng.uniform(0, 40, (n, 2))
    wh = rng.uniform(2, 20, (n, 2))
    b = np.concatenate([c - wh / 2, c + wh / 2], 1)
    if n > 2:
        b[1] = b[0]
    return b.astype(dtype)


def _scores(rng, shape, dtype=np.float32):
    return (np.round(rng.uniform(0, 1, shape) * 8) / 8).astype(dtype)


def _topk(rng):
    x = _values(rng, _shape(rng))
    ax = _axis(rng, x.ndim)
    return dict(x=x, k=int(rng.integers(0, x.shape[ax] + 1)), axis=ax,
                largest=bool(rng.integers(2)))


def _cum(rng):
    x = _values(rng, _shape(rng))
    return dict(x=x, axis=_axis(rng, x.ndim))


def _nonzero(rng):
    x = _values(rng, _shape(rng, 0, 3), rng.choice(["bool", "float32", "int16", "float64"]))
    if x.dtype.kind != "b":
        x[rng.random(x.shape) < 0.5] = 0
    return dict(x=x)


def _elements(rng, with_updates=True, reduction=True):
    data = _values(rng, _shape(rng))
    ax = _axis(rng, data.ndim)
    ishape = tuple(int(rng.integers(1, s + 1)) if d != ax % data.ndim
                   else int(rng.integers(1, 5)) for d, s in enumerate(data.shape))
    n = data.shape[ax]
    kw = dict(data=data, indices=rng.integers(-n, n, ishape), axis=ax)
    if with_updates:
        kw["updates"] = _values(rng, ishape, data.dtype)
    if reduction:
        kw["reduction"] = str(rng.choice(["none", "add", "mul", "max", "min"]))
    return kw


def _nd_indices(rng, dims, lead):
    return np.stack([rng.integers(-d, d, lead) for d in dims], axis=-1)


def _scatter_nd(rng):
    data = _values(rng, _shape(rng))
    k = int(rng.integers(1, data.ndim + 1))
    lead = _shape(rng, 1, 2, 4)
    idx = _nd_indices(rng, data.shape[:k], lead)
    return dict(data=data, indices=idx, updates=_values(rng, lead + data.shape[k:], data.dtype),
                reduction=str(rng.choice(["none", "add", "mul", "max", "min"])))


def _gather_nd(rng):
    data = _values(rng, _shape(rng, 2, 3))
    b = int(rng.integers(0, 2))
    k = int(rng.integers(1, data.ndim - b + 1))
    lead = tuple(data.shape[:b]) + _shape(rng, 1, 1, 4)
    idx = np.broadcast_to(_nd_indices(rng, data.shape[b:b + k], lead[b:]), lead + (k,)).copy()
    return dict(data=data, indices=idx, batch_dims=b)


def _nms_onnx(rng):
    B, C, N = (int(v) for v in rng.integers(1, [3, 4, 12], endpoint=True))
    boxes = np.stack([_boxes(rng, N) for _ in range(B)])
    center = int(rng.integers(2))
    if center:
        boxes = np.concatenate([(boxes[..., :2] + boxes[..., 2:]) / 2,
                                boxes[..., 2:] - boxes[..., :2]], -1)
    mx = None if rng.random() < 0.3 else int(rng.integers(0, N + 2))
    return dict(boxes=boxes, scores=_scores(rng, (B, C, N)), max_output_boxes_per_class=mx,
                iou_threshold=float(rng.uniform(0.2, 0.8)),
                score_threshold=None if rng.random() < 0.5 else 0.25,
                center_point_box=center, offset=int(rng.integers(2)), pad=bool(rng.integers(2)))


def _nms(rng):
    n = int(rng.integers(1, 16))
    return dict(boxes=_boxes(rng, n), scores=_scores(rng, n),
                iou_threshold=float(rng.uniform(0.2, 0.8)),
                score_threshold=None if rng.random() < 0.5 else 0.25,
                max_num=None if rng.random() < 0.5 else int(rng.integers(0, n + 2)),
                offset=int(rng.integers(2)))


def _batched_nms(rng):
    n = int(rng.integers(1, 16))
    return dict(boxes=_boxes(rng, n), scores=_scores(rng, n), idxs=rng.integers(-2, 3, n),
                iou_threshold=float(rng.uniform(0.2, 0.8)))


def _roi_align(rng):
    N, C = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    H, W = (int(v) for v in rng.integers(1, 9, 2))
    K = int(rng.integers(0, 5))
    boxes = np.concatenate([rng.uniform(-4, 12, (K, 2)), rng.uniform(-4, 12, (K, 2))], 1)
    kw = dict(x=rng.standard_normal((N, C, H, W)).astype(rng.choice(["float32", "float64"])),
              output_size=(int(rng.integers(1, 4)), int(rng.integers(1, 4))),
              spatial_scale=float(rng.choice([0.5, 1.0, 2.0])),
              sampling_ratio=int(rng.integers(0, 3)),
              mode=str(rng.choice(["avg", "max", "onnx_max"])), aligned=bool(rng.integers(2)))
    batch = rng.integers(0, N, K)
    if rng.random() < 0.5:
        kw["rois"] = np.concatenate([batch[:, None], boxes], 1).astype(np.float32)
    else:
        kw["rois"] = boxes.astype(np.float32)
        kw["batch_indices"] = batch
    return kw


# ------------------------------------------------------------ rank-10 checks (NumPy)
def _rank_topk(rng, shape):
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)
    ax = _axis(rng, x.ndim)
    v, i = fastops.topk(x, 1, axis=ax)
    np.testing.assert_array_equal(v, np.max(x, axis=ax, keepdims=True))
    np.testing.assert_array_equal(i, np.argmax(x, axis=ax, keepdims=True))


def _rank_cum(op, ufunc):
    def check(rng, shape):
        x = rng.standard_normal(shape)
        ax = _axis(rng, x.ndim)
        v, _ = getattr(fastops, op)(x, ax)
        np.testing.assert_array_equal(v, ufunc.accumulate(x, axis=ax))
    return check


def _rank_nonzero(rng, shape):
    x = rng.random(shape) < 0.3
    np.testing.assert_array_equal(fastops.nonzero(x), np.array(np.nonzero(x)).reshape(x.ndim, -1))


def _rank_gather_elements(rng, shape):
    data = rng.standard_normal(shape)
    ax = _axis(rng, data.ndim)
    idx = rng.integers(0, data.shape[ax], shape)
    np.testing.assert_array_equal(fastops.gather_elements(data, idx, ax),
                                  np.take_along_axis(data, idx, ax))


def _rank_scatter_elements(name):
    def check(rng, shape):
        data = rng.standard_normal(shape)
        ax = _axis(rng, data.ndim)
        # a permutation along the axis: no duplicates, so put_along_axis is the reference
        idx = np.argsort(rng.random(shape), axis=ax)
        upd = rng.standard_normal(shape)
        want = data.copy()
        np.put_along_axis(want, idx, upd, ax)
        np.testing.assert_array_equal(getattr(fastops, name)(data, idx, upd, ax), want)
    return check


def _rank_scatter_nd(rng, shape):
    data = rng.standard_normal(shape)
    k = int(rng.integers(1, data.ndim + 1))
    flat = rng.choice(int(np.prod(shape[:k])), size=2, replace=False)
    idx = np.stack(np.unravel_index(flat, shape[:k]), -1)
    upd = rng.standard_normal((2,) + shape[k:])
    want = data.copy()
    want[tuple(idx.T)] = upd
    np.testing.assert_array_equal(fastops.scatter_nd(data, idx, upd), want)


def _rank_gather_nd(rng, shape):
    data = rng.standard_normal(shape)
    k = int(rng.integers(1, data.ndim + 1))
    idx = np.stack([rng.integers(0, d, 3) for d in shape[:k]], -1)
    np.testing.assert_array_equal(fastops.gather_nd(data, idx), data[tuple(idx.T)])


# ---------------------------------------------------------------------- the registry
@dataclasses.dataclass
class OpSpec:
    name: str
    make: Callable                       # rng -> valid kwargs
    data: tuple = ()                     # array arguments: views, byte order, NaN
    indices: tuple = ()                  # integer index arrays: every index dtype
    ints: Dict[str, Optional[Callable]] = dataclasses.field(default_factory=dict)
    # ^ integer arguments; value: None, or kw -> kw of the value a huge one must equal
    floats: tuple = ()                   # float arrays that get NaN/inf
    scalars: tuple = ()                  # float scalar arguments that get NaN/inf
    zero: Optional[Callable] = None      # rng -> [(kwargs, expected shapes)] zero-size
    rank: Optional[Callable] = None      # (rng, shape) -> asserts against NumPy
    big: Optional[str] = None            # code defining `kw` whose working space is large
    headroom_mb: int = 64
    race: Optional[Callable] = None      # rng -> (kwargs, argument, good array, bad array)


def _equiv(**fixed):
    def f(kw):
        return {**kw, **fixed}
    return f


def _big_elements(rng, n_data=1 << 12, n_idx=1 << 20):
    data = rng.standard_normal((n_data, 64)).astype(np.float32)
    idx = rng.integers(0, n_data, (n_idx, 64))
    return data, idx


def _race_scatter(name, reduction):
    def race(rng):
        data, idx = _big_elements(rng, 1 << 10, 1 << 12)
        kw = dict(data=data, indices=idx, updates=rng.standard_normal(idx.shape).astype(
            np.float32), axis=0)
        if reduction:
            kw["reduction"] = "add"
        good = idx.copy()
        return kw, "indices", good, np.where(rng.random(good.shape) < 0.5, 2**40, -2**40)
    return race


def _race_gather_elements(rng):
    kw, name, good, bad = _race_scatter("scatter", False)(rng)
    del kw["updates"]
    return kw, name, good, bad


def _race_scatter_nd(rng):
    data = rng.standard_normal((1 << 16, 16)).astype(np.float32)
    idx = rng.integers(0, 1 << 16, (1 << 16, 1))
    kw = dict(data=data, indices=idx, updates=rng.standard_normal((1 << 16, 16)).astype(
        np.float32))
    return kw, "indices", idx.copy(), np.full(idx.shape, 2**40)


def _race_gather_nd(rng):
    data = rng.standard_normal((1 << 16, 16)).astype(np.float32)
    idx = rng.integers(0, 1 << 16, (1 << 18, 1))
    return dict(data=data, indices=idx), "indices", idx.copy(), np.full(idx.shape, -2**40)


def _race_nonzero(rng):
    x = (rng.random(1 << 22) < 0.1).astype(np.uint8)
    return dict(x=x), "x", x.copy(), np.ones_like(x)


def _race_topk(rng):
    x = rng.standard_normal((64, 1 << 14)).astype(np.float32)
    bad = np.where(rng.random(x.shape) < 0.5, np.nan, np.inf).astype(np.float32)
    return dict(x=x, k=100), "x", x.copy(), bad


def _race_roi(rng):
    x = rng.standard_normal((2, 64, 64, 64)).astype(np.float32)
    k = 256
    rois = np.concatenate([rng.integers(0, 2, (k, 1)), rng.uniform(0, 40, (k, 2)),
                           rng.uniform(40, 64, (k, 2))], 1).astype(np.float32)
    bad = rois.copy()
    bad[:, 0] = 7
    bad[::2, 1:] = np.float32(3e38)
    bad[1::2, 1:] = np.nan
    return dict(x=x, rois=rois, output_size=7, sampling_ratio=0), "rois", rois.copy(), bad


def _race_roi_batch(rng):
    kw, _, rois, _ = _race_roi(rng)
    kw["rois"] = np.ascontiguousarray(rois[:, 1:])
    kw["batch_indices"] = rois[:, 0].astype(np.int64)
    good = kw["batch_indices"].copy()
    return kw, "batch_indices", good, np.full_like(good, 2**40)


def _race_nms(rng):
    n = 1 << 13
    boxes, scores = _boxes(rng, n), _scores(rng, n)
    bad = np.where(rng.random(n) < 0.5, np.nan, np.inf).astype(np.float32)
    return dict(boxes=boxes, scores=scores, iou_threshold=0.5), "scores", scores.copy(), bad


def _race_batched(rng):
    n = 1 << 13
    kw = dict(boxes=_boxes(rng, n), scores=_scores(rng, n), idxs=rng.integers(0, 8, n),
              iou_threshold=0.5)
    good = kw["idxs"].copy()
    return kw, "idxs", good, rng.integers(-2**62, 2**62, n)


def _race_nms_onnx(rng):
    n = 1 << 12
    boxes = _boxes(rng, n)[None]
    scores = _scores(rng, (1, 4, n))
    bad = np.full_like(scores, np.nan)
    return (dict(boxes=boxes, scores=scores, max_output_boxes_per_class=100,
                 iou_threshold=0.5, pad=True), "scores", scores.copy(), bad)


def _instance_norm(rng):
    x = _values(rng, _shape(rng, 3, 5), rng.choice(["float16", "float32", "float64"]))
    c = x.shape[1]
    return dict(x=x, scale=_values(rng, (c,), "float32"), bias=_values(rng, (c,), "float64"),
                epsilon=float(rng.choice([1e-5, 0.0, 1.0])))


def _race_instance_norm(rng):
    x = rng.standard_normal((4, 8, 128, 128)).astype(np.float32)
    bad = np.where(rng.random(x.shape) < 0.5, np.nan, np.inf).astype(np.float32)
    return dict(x=x, scale=np.ones(8), bias=np.zeros(8)), "x", x.copy(), bad


_BIG_TOPK = "kw = dict(x=rng.standard_normal((1, 1 << 23)).astype(np.float32), k=1 << 22)"
_BIG_ELEMENTS = ("data = rng.standard_normal((4096, 64)).astype(np.float32)\n"
                 "idx = rng.integers(0, 4096, (1 << 19, 64))")

SPECS = [
    OpSpec("topk", _topk, data=("x",), ints={"k": None, "axis": None}, floats=("x",),
           zero=lambda rng: [(dict(x=np.zeros((3, 0)), k=0), ((3, 0), (3, 0))),
                             (dict(x=np.zeros((0, 4)), k=2), ((0, 2), (0, 2)))],
           rank=_rank_topk, big=_BIG_TOPK, race=_race_topk),
    OpSpec("cummax", _cum, data=("x",), ints={"axis": None}, floats=("x",),
           zero=lambda rng: [(dict(x=np.zeros((0, 3)), axis=1), ((0, 3), (0, 3)))],
           rank=_rank_cum("cummax", np.fmax),
           big="kw = dict(x=np.ones((4096, 4096), np.float32), axis=1)"),
    OpSpec("cummin", _cum, data=("x",), ints={"axis": None}, floats=("x",),
           zero=lambda rng: [(dict(x=np.zeros((2, 0)), axis=0), ((2, 0), (2, 0)))],
           rank=_rank_cum("cummin", np.fmin),
           big="kw = dict(x=np.ones((4096, 4096), np.float32), axis=0)"),
    OpSpec("nonzero", _nonzero, data=("x",), floats=("x",),
           zero=lambda rng: [(dict(x=np.zeros((2, 0, 3))), ((3, 0),))],
           rank=_rank_nonzero, big="kw = dict(x=np.ones(1 << 24, bool))", race=_race_nonzero),
    OpSpec("scatter_elements", _elements, data=("data", "updates", "indices"),
           indices=("indices",), ints={"axis": None}, floats=("data", "updates"),
           zero=lambda rng: [(dict(data=np.zeros((2, 3)), indices=np.zeros((2, 0), int),
                                   updates=np.zeros((2, 0)), axis=1), ((2, 3),))],
           rank=_rank_scatter_elements("scatter_elements"),
           big=("kw = dict(data=np.zeros((1 << 22, 16), np.float32), indices=np.zeros((1, 16), "
                "int), updates=np.ones((1, 16), np.float32))"),
           race=_race_scatter("scatter_elements", True)),
    OpSpec("scatter", lambda rng: _elements(rng, reduction=False),
           data=("data", "updates", "indices"), indices=("indices",), ints={"axis": None},
           floats=("data", "updates"), rank=_rank_scatter_elements("scatter"),
           race=_race_scatter("scatter", False)),
    OpSpec("scatter_nd", _scatter_nd, data=("data", "updates", "indices"),
           indices=("indices",), floats=("data", "updates"),
           zero=lambda rng: [(dict(data=np.zeros((2, 3)), indices=np.zeros((0, 1), int),
                                   updates=np.zeros((0, 3))), ((2, 3),))],
           rank=_rank_scatter_nd,
           big=("kw = dict(data=np.zeros((1 << 20, 1), np.float32), indices=rng.integers(0, "
                "1 << 20, (1 << 23, 1)), updates=np.ones((1 << 23, 1), np.float32))"),
           headroom_mb=48, race=_race_scatter_nd),
    OpSpec("gather_elements", lambda rng: _elements(rng, False, False),
           data=("data", "indices"), indices=("indices",), ints={"axis": None},
           floats=("data",),
           zero=lambda rng: [(dict(data=np.zeros((0, 3)), indices=np.zeros((0, 2), int),
                                   axis=1), ((0, 2),))],
           rank=_rank_gather_elements, big=_BIG_ELEMENTS + "\nkw = dict(data=data, indices=idx)",
           race=_race_gather_elements),
    OpSpec("gather_nd", _gather_nd, data=("data", "indices"), indices=("indices",),
           ints={"batch_dims": None}, floats=("data",),
           zero=lambda rng: [(dict(data=np.zeros((2, 3)), indices=np.zeros((0, 1), int)),
                              ((0, 3),))],
           rank=_rank_gather_nd,
           big=("kw = dict(data=np.zeros((1 << 10, 1 << 10), np.float32), "
                "indices=rng.integers(0, 1 << 10, (1 << 16, 1)))"),
           race=_race_gather_nd),
    OpSpec("non_max_suppression", _nms_onnx, data=("boxes", "scores"),
           ints={"max_output_boxes_per_class":
                 lambda kw: kw if kw.get("pad") else {**kw, "max_output_boxes_per_class": None},
                 "center_point_box": None, "offset": None},
           floats=("boxes", "scores"), scalars=("iou_threshold", "score_threshold"),
           zero=lambda rng: [(dict(boxes=np.zeros((1, 0, 4)), scores=np.zeros((1, 3, 0)),
                                   max_output_boxes_per_class=2, pad=True), ((6, 3),)),
                             (dict(boxes=np.zeros((0, 5, 4)), scores=np.zeros((0, 2, 5))),
                              ((0, 3),))],
           # the call's own buffers fit; each thread's sort scratch (24 B a box) does not
           big=("kw = dict(boxes=rng.uniform(0, 1, (1, 1 << 20, 4)).astype(np.float32), "
                "scores=rng.uniform(0, 1, (1, 8, 1 << 20)).astype(np.float32), "
                "max_output_boxes_per_class=10)"),
           headroom_mb=40, race=_race_nms_onnx),
    OpSpec("nms", _nms, data=("boxes", "scores"),
           ints={"max_num": _equiv(max_num=None), "offset": None},
           floats=("boxes", "scores"), scalars=("iou_threshold", "score_threshold"),
           zero=lambda rng: [(dict(boxes=np.zeros((0, 4)), scores=np.zeros(0),
                                   iou_threshold=0.5), ((0,),))],
           big=("kw = dict(boxes=rng.uniform(0, 1, (1 << 22, 4)).astype(np.float32), "
                "scores=rng.uniform(0, 1, 1 << 22).astype(np.float32), iou_threshold=0.5)"),
           race=_race_nms),
    OpSpec("batched_nms", _batched_nms, data=("boxes", "scores", "idxs"), indices=("idxs",),
           floats=("boxes", "scores"), scalars=("iou_threshold",),
           zero=lambda rng: [(dict(boxes=np.zeros((0, 4)), scores=np.zeros(0),
                                   idxs=np.zeros(0, int), iou_threshold=0.5), ((0,),))],
           big=("kw = dict(boxes=rng.uniform(0, 1, (1 << 22, 4)).astype(np.float32), "
                "scores=rng.uniform(0, 1, 1 << 22).astype(np.float32), "
                "idxs=rng.integers(0, 4, 1 << 22), iou_threshold=0.5)"),
           race=_race_batched),
    OpSpec("roi_align", _roi_align, data=("x", "rois", "batch_indices"),
           indices=("batch_indices",),
           ints={"output_size": None, "sampling_ratio": lambda kw: (
               {**kw, "sampling_ratio": 0} if kw["sampling_ratio"] < 0 else kw)},
           floats=("x", "rois"), scalars=("spatial_scale",),
           zero=lambda rng: [(dict(x=np.zeros((1, 2, 4, 4), np.float32),
                                   rois=np.zeros((0, 5), np.float32), output_size=2),
                              ((0, 2, 2, 2),)),
                             (dict(x=np.zeros((1, 2, 0, 4), np.float32),
                                   rois=np.array([[0, 0, 0, 2, 2]], np.float32),
                                   output_size=2), ((1, 2, 2, 2),))],
           big=("kw = dict(x=np.ones((1, 1, 8, 8), np.float32), "
                "rois=np.array([[0, 0, 0, 8, 8]], np.float32), output_size=7, "
                "sampling_ratio=1 << 22)"),
           race=_race_roi),
]
def _resize(rng):
    x = _values(rng, _shape(rng, 1, 4), rng.choice(["uint8", "int8", "int32", "int64",
                                                    "float16", "float32", "float64"]))
    axes = sorted(set(int(a) for a in rng.integers(0, x.ndim, 2)))
    kw = dict(x=x, axes=axes, mode=str(rng.choice(["nearest", "linear", "cubic"])),
              coordinate_transformation_mode=str(rng.choice(
                  ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"])),
              antialias=bool(rng.integers(2)))
    if rng.random() < 0.5:
        kw["scales"] = [float(rng.choice([0.5, 0.75, 1.0, 1.5, 2.0])) for _ in axes]
    else:
        kw["sizes"] = [int(rng.integers(1, 9)) for _ in axes]
    return kw


def _race_resize(rng):
    x = rng.standard_normal((4, 3, 256, 256)).astype(np.float32)
    bad = np.where(rng.random(x.shape) < 0.5, np.nan, np.inf).astype(np.float32)
    return dict(x=x, scales=[1, 1, 0.7, 1.3], mode="cubic"), "x", x.copy(), bad


SPECS.append(
    OpSpec("resize", _resize, data=("x",), floats=("x",),
           scalars=("cubic_coeff_a", "extrapolation_value"),
           zero=lambda rng: [(dict(x=np.zeros((0, 4), np.float32), scales=[1.0, 2.0]),
                              ((0, 8),)),
                             (dict(x=np.zeros((3, 4), np.uint8), sizes=[0, 2], axes=[0, 1]),
                              ((0, 2),))],
           rank=None,
           big="kw = dict(x=np.ones((64, 64), np.float32), scales=[128.0, 128.0], "
               "mode='linear')",
           race=_race_resize))
SPECS.append(
    OpSpec("instance_norm", _instance_norm, data=("x", "scale", "bias"), floats=("x", "scale"),
           scalars=("epsilon",),
           zero=lambda rng: [(dict(x=np.zeros((2, 0, 3), np.float32), scale=np.ones(0),
                                   bias=np.ones(0)), ((2, 0, 3),)),
                             (dict(x=np.zeros((1, 2, 0, 4), np.float32), scale=np.ones(2),
                                   bias=np.ones(2)), ((1, 2, 0, 4),))],
           big="kw = dict(x=np.ones((8, 64, 256, 256), np.float32), scale=np.ones(64), "
               "bias=np.ones(64))",
           race=_race_instance_norm))
def _deform_conv(rng, modulated=False):
    N, C = int(rng.integers(1, 3)), int(rng.choice([1, 2, 4]))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = tuple(int(v) for v in rng.integers(0, 3, 4))
    # at least 2 output positions per axis: a huge stride or padding changes the shape
    H = (kh - 1) * dil[0] + 1 + stride[0] + int(rng.integers(0, 4))
    W = (kw - 1) * dil[1] + 1 + stride[1] + int(rng.integers(0, 4))
    OH = (H + pads[0] + pads[2] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    OW = (W + pads[1] + pads[3] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    groups = int(rng.choice([g for g in (1, 2) if C % g == 0]))
    dg = int(rng.choice([d for d in (1, 2, 4) if C % d == 0]))
    M = groups * int(rng.integers(1, 3))
    dt = str(rng.choice(["float32", "float64", "float16"]))
    kw_ = dict(x=rng.standard_normal((N, C, H, W)).astype(dt),
               offset=rng.uniform(-3, 3, (N, 2 * dg * kh * kw, OH, OW)).astype(dt),
               weight=rng.standard_normal((M, C // groups, kh, kw)).astype(dt),
               bias=rng.standard_normal(M).astype(dt) if rng.random() < 0.5 else None,
               stride=stride, padding=pads, dilation=dil, groups=groups, deform_groups=dg)
    if modulated or rng.random() < 0.5:
        kw_["mask"] = rng.uniform(0, 1, (N, dg * kh * kw, OH, OW)).astype(dt)
    if not modulated:
        kw_["im2col_step"] = int(rng.integers(1, 5))
    return kw_


def _race_deform_conv(rng):
    x = rng.standard_normal((2, 32, 48, 48)).astype(np.float32)
    off = rng.uniform(-4, 4, (2, 18, 48, 48)).astype(np.float32)
    bad = np.where(rng.random(off.shape) < 0.5, np.nan, 3e38).astype(np.float32)
    bad[::2] = -np.inf
    return (dict(x=x, offset=off, weight=rng.standard_normal((16, 32, 3, 3)).astype(np.float32),
                 padding=1), "offset", off.copy(), bad)


def _dcn_zero(rng):
    f = np.float32
    return [(dict(x=np.zeros((0, 2, 4, 4), f), offset=np.zeros((0, 18, 2, 2), f),
                  weight=np.zeros((3, 2, 3, 3), f)), ((0, 3, 2, 2),)),
            (dict(x=np.zeros((1, 0, 4, 4), f), offset=np.zeros((1, 18, 2, 2), f),
                  weight=np.zeros((3, 0, 3, 3), f), bias=np.ones(3, f)), ((1, 3, 2, 2),)),
            (dict(x=np.zeros((1, 2, 0, 4), f), offset=np.zeros((1, 18, 2, 4), f),
                  weight=np.zeros((3, 2, 3, 3), f), padding=(2, 1)), ((1, 3, 2, 4),)),
            (dict(x=np.zeros((1, 2, 2, 4), f), offset=np.zeros((1, 18, 0, 2), f),
                  weight=np.zeros((3, 2, 3, 3), f)), ((1, 3, 0, 2),))]


_DCN_INTS = {"stride": None, "padding": None, "dilation": None, "groups": None,
             "deform_groups": None}
SPECS.append(
    OpSpec("deform_conv2d", _deform_conv, data=("x", "offset", "weight", "bias", "mask"),
           ints={**_DCN_INTS, "im2col_step": _equiv(im2col_step=1)},
           floats=("x", "offset", "weight", "bias", "mask"), zero=_dcn_zero,
           # the call's own buffers fit; the kernel's channels-last copy of x (64 MiB) not
           big=("kw = dict(x=np.ones((1, 64, 512, 512), np.float32), "
                "offset=np.zeros((1, 2, 512, 512), np.float32), "
                "weight=np.ones((1, 64, 1, 1), np.float32))"),
           headroom_mb=48, race=_race_deform_conv))
SPECS.append(
    OpSpec("modulated_deform_conv2d", lambda rng: _deform_conv(rng, True),
           data=("x", "offset", "mask", "weight", "bias"), ints=dict(_DCN_INTS),
           floats=("x", "offset", "mask", "weight", "bias")))
def _grid_sample(rng):
    five = rng.random() < 0.3
    N, C = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    spatial = tuple(int(v) for v in rng.integers(1, 6, 3 if five else 2))
    out = tuple(int(v) for v in rng.integers(1, 5, 3 if five else 2))
    dt = str(rng.choice(["float32", "float64", "float16", "uint8", "int16"]))
    modes = ["bilinear", "nearest"] + ([] if five else ["bicubic"])
    return dict(x=_values(rng, (N, C) + spatial, dt),
                grid=rng.uniform(-1.3, 1.3, (N,) + out + (len(spatial),)).astype(
                    rng.choice(["float32", "float64"])),
                mode=str(rng.choice(modes)),
                padding_mode=str(rng.choice(["zeros", "border", "reflection"])),
                align_corners=bool(rng.integers(2)))


def _race_grid_sample(rng):
    x = rng.standard_normal((2, 16, 64, 64)).astype(np.float32)
    grid = rng.uniform(-1, 1, (2, 64, 64, 2)).astype(np.float32)
    bad = np.where(rng.random(grid.shape) < 0.5, np.nan, 3e38).astype(np.float32)
    return dict(x=x, grid=grid, mode="bicubic", padding_mode="reflection"), "grid", \
        grid.copy(), bad


SPECS.append(
    OpSpec("grid_sample", _grid_sample, data=("x", "grid"), floats=("x", "grid"),
           zero=lambda rng: [(dict(x=np.zeros((0, 2, 3, 3), np.float32),
                                   grid=np.zeros((0, 4, 4, 2), np.float32)), ((0, 2, 4, 4),)),
                             (dict(x=np.zeros((1, 2, 3, 3), np.float32),
                                   grid=np.zeros((1, 0, 4, 2), np.float32)), ((1, 2, 0, 4),))],
           big="kw = dict(x=np.ones((1, 256, 8, 8), np.float32), "
               "grid=np.zeros((1, 256, 256, 2), np.float32))",
           race=_race_grid_sample))


def _cv_resize(rng):
    x = _values(rng, _shape(rng, 2, 3, 6), rng.choice(["uint8", "uint16", "int16", "float16",
                                                       "float32", "float64"]))
    kw = dict(img=x, interpolation=int(rng.choice([0, 1, 2, 3, 5, 6])))
    if rng.random() < 0.5:
        kw["dsize"] = (int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    else:               # cv2's fx/fy rule (an empty result is a clean ValueError)
        kw["dsize"] = None
        kw["fx"], kw["fy"] = (float(v) for v in rng.choice([1 / 3, 0.5, 1.5, 2.0, 3.0], 2))
    return kw


def _rank_cv_resize(rng, shape):
    # images are (H, W) or (H, W, C): every other rank is a ValueError naming img
    if len(shape) in (2, 3):
        return
    with pytest.raises(ValueError, match="cv.resize: img must be"):
        fastops.cv.resize(np.zeros(shape, np.uint8), (2, 2))


def _race_cv_resize(rng):
    x = rng.standard_normal((256, 256, 3)).astype(np.float32)
    bad = np.where(rng.random(x.shape) < 0.5, np.nan, np.inf).astype(np.float32)
    return dict(img=x, dsize=(300, 170), interpolation=2), "img", x.copy(), bad


SPECS.append(
    OpSpec("cv.resize", _cv_resize, data=("img",), floats=("img",), scalars=("fx", "fy"),
           ints={"interpolation": None, "dsize": None},
           zero=lambda rng: [(dict(img=np.zeros((0, 5, 3), np.uint8), dsize=None, fx=2.0,
                                   fy=2.0), ((0, 10, 3),)),
                             (dict(img=np.zeros((4, 6, 0), np.float32), dsize=(3, 2)),
                              ((2, 3, 0),))],
           rank=_rank_cv_resize,
           # the output fits the headroom, the per-thread rows of horizontal sums do not
           big="kw = dict(img=np.ones((8, 1 << 22, 4), np.uint8), dsize=(1 << 22, 3))",
           headroom_mb=80,
           race=_race_cv_resize))


def _loop(rng):
    stop = int(rng.integers(0, 4))

    def body(i, cond):
        return (i + 1 < stop, np.float32(i))      # a while loop: it stops by itself
    return dict(body=body, max_trip_count=int(rng.integers(0, 6)), cond=True)


SPECS.append(OpSpec("loop", _loop, ints={"max_trip_count": _equiv(max_trip_count=None)}))
SPEC = {s.name: s for s in SPECS}


def _call(spec, kw):
    return resolve(spec.name)(**kw)


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


def _same(got, want):
    for g, w in zip(_tuple(got), _tuple(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(w).tobytes(), (g, w)


def _clean(spec, exc, arg=None):
    """The exception names the op (and the argument, when one was made hostile)."""
    msg = str(exc)
    assert msg.startswith(f"{spec.name}:"), f"{type(exc).__name__}: {msg}"
    if arg is not None:
        assert arg in msg, f"{arg!r} not named in: {msg}"


def _outcome(spec, kw):
    """The result, or the clean exception (checked to name the op)."""
    try:
        return _call(spec, kw)
    except CLEAN as exc:
        _clean(spec, exc)
        return exc


def _arrays(kw):
    return {k: v for k, v in kw.items() if isinstance(v, np.ndarray)}


def test_every_public_op_has_a_spec():
    public = set(public_ops())
    missing = sorted(public - set(SPEC))
    assert not missing, f"public ops without a hostile-input spec: {missing}"


ops = pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)


# --------------------------------------------------------------- inputs unchanged
@ops
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_inputs_never_modified(spec, seed):
    kw = spec.make(np.random.default_rng(seed))
    before = {k: (v.copy(), v.strides) for k, v in _arrays(kw).items()}
    _outcome(spec, kw)
    for k, (copy, strides) in before.items():
        assert kw[k].tobytes() == copy.tobytes() and kw[k].strides == strides, k


# ------------------------------------------------------------------ views and layout
def _packed(a):
    """The same values as a field of a packed record array: strides not whole elements."""
    rec = np.zeros(a.shape, dtype=[("pad", np.int8), ("v", a.dtype)])
    rec["v"] = a
    return rec["v"]


def _unaligned(a):
    buf = np.zeros(a.nbytes + 1, np.uint8)
    v = buf[1:].view(a.dtype).reshape(a.shape)
    v[...] = a
    return v


def _strided(a):
    big = np.zeros(tuple(2 * s for s in a.shape), a.dtype)
    sl = tuple(slice(None, None, 2) for _ in a.shape)
    big[sl] = a
    return big[sl]


def _negative(a):
    sl = tuple(slice(None, None, -1) for _ in a.shape)
    return a[sl].copy()[sl]


def _broadcast(a):
    """Zero strides: the first slice repeated along axis 0 (other values, same shape)."""
    if a.ndim == 0 or a.shape[0] == 0:
        return a
    return np.broadcast_to(a[:1], a.shape)


def _readonly(a):
    a = a.copy()
    a.setflags(write=False)
    return a


def _swapped(a):
    return a.astype(a.dtype.newbyteorder("S"))


def _guarded_negative(a, at):
    """Every axis reversed, the data against an unreadable page (tests/conftest.guarded)."""
    sl = tuple(slice(None, None, -1) for _ in a.shape)
    return guarded(a[sl], at)[sl]


VIEWS = {"strided": _strided, "negative": _negative, "fortran": np.asfortranarray,
         "broadcast": _broadcast, "readonly": _readonly, "unaligned": _unaligned,
         "packed": _packed, "byteswapped": _swapped,
         # the array's last byte before an unreadable page, or its first one after one:
         # a vector load past either end of the data faults
         "guard_end": lambda a: guarded(a, "end"),
         "guard_start": lambda a: guarded(a, "start"),
         "guard_end_negative": lambda a: _guarded_negative(a, "end"),
         "guard_start_negative": lambda a: _guarded_negative(a, "start")}


@ops
@pytest.mark.parametrize("view", sorted(VIEWS))
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_views_match_contiguous_copies(spec, view, seed):
    kw = spec.make(np.random.default_rng(seed))
    viewed = {k: (VIEWS[view](v) if k in spec.data and isinstance(v, np.ndarray) else v)
              for k, v in kw.items()}
    copies = {k: (np.ascontiguousarray(v).astype(v.dtype.newbyteorder("="))
                  if isinstance(v, np.ndarray) else v) for k, v in viewed.items()}
    got, want = _outcome(spec, viewed), _outcome(spec, copies)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:
        _same(got, want)


# ------------------------------------------------------------------- index dtypes
INDEX_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                ">i8", ">i4", ">u8", np.intc, np.longlong, np.uintp]


@pytest.mark.parametrize("spec", [s for s in SPECS if s.indices], ids=lambda s: s.name)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_every_index_dtype(spec, seed):
    kw = spec.make(np.random.default_rng(seed))
    names = [n for n in spec.indices if isinstance(kw.get(n), np.ndarray)]
    want = _outcome(spec, kw)
    for dt in INDEX_DTYPES:
        dt = np.dtype(dt)
        conv = {}
        for n in names:
            a = kw[n]
            if a.size and (a.min() < np.iinfo(dt).min or a.max() > np.iinfo(dt).max):
                break
            conv[n] = a.astype(dt)
        else:
            got = _outcome(spec, {**kw, **conv})
            if isinstance(want, Exception):
                assert type(got) is type(want), (dt, got, want)
            else:
                _same(got, want)
    for n in names:   # not an integer dtype: a TypeError naming the op and the argument
        with pytest.raises(TypeError) as info:
            _call(spec, {**kw, n: kw[n].astype(np.float64)})
        _clean(spec, info.value, n)


def test_uint64_indices_beyond_int64_are_out_of_range():
    x = np.arange(10.0)
    for dt in ("<u8", ">u8"):
        with pytest.raises(IndexError, match="18446744073709551615 is out of range"):
            fastops.gather_elements(x, np.array([1, 2**64 - 1], dt))


# ---------------------------------------------------------------- huge integers
@pytest.mark.parametrize("spec,arg", [(s, a) for s in SPECS for a in s.ints],
                         ids=lambda v: v if isinstance(v, str) else v.name)
@pytest.mark.parametrize("value", HUGE, ids=repr)
def test_huge_and_negative_integers(spec, arg, value):
    if spec.name == "roi_align" and arg == "output_size" and SANITIZED:
        pytest.skip("a huge output under ASan aborts instead of raising MemoryError")
    kw = spec.make(np.random.default_rng(0))
    try:
        got = _call(spec, {**kw, arg: value})
    except CLEAN as exc:
        _clean(spec, exc, arg)
        return
    equiv = spec.ints[arg]
    assert equiv is not None, f"{spec.name} accepted {arg}={value!r}"
    _same(got, _call(spec, equiv({**kw, arg: value})))


def test_nms_pad_with_a_huge_maximum_is_a_memory_error():
    boxes, scores = np.zeros((2, 3, 4), np.float32), np.zeros((2, 5, 3), np.float32)
    with pytest.raises(MemoryError, match="non_max_suppression: .*max_output_boxes_per_class"):
        fastops.non_max_suppression(boxes, scores, 2**62, pad=True)
    got = fastops.non_max_suppression(boxes, scores, 2**62, pad=False)
    _same(got, fastops.non_max_suppression(boxes, scores, None))


# -------------------------------------------------------------------- NaN and inf
@pytest.mark.parametrize("spec", [s for s in SPECS if s.floats or s.scalars],
                         ids=lambda s: s.name)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), fill=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_nan_and_inf(spec, seed, fill):
    rng = np.random.default_rng(seed)
    kw = spec.make(rng)
    for n in spec.floats:
        a = kw.get(n)
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            a = a.copy()
            a[rng.random(a.shape) < 0.3] = fill
            kw[n] = a
    _outcome(spec, kw)
    for n in spec.scalars:
        try:
            _call(spec, {**kw, n: fill})
        except CLEAN as exc:
            _clean(spec, exc, n)


# --------------------------------------------------------------- zero-size and rank
@pytest.mark.parametrize("spec", [s for s in SPECS if s.zero], ids=lambda s: s.name)
def test_zero_size_axes(spec):
    for kw, shapes in spec.zero(np.random.default_rng(0)):
        got = _tuple(_call(spec, kw))
        assert tuple(g.shape for g in got) == shapes


@pytest.mark.parametrize("spec", [s for s in SPECS if s.rank], ids=lambda s: s.name)
@pytest.mark.parametrize("ndim", [1, 4, 7, 10])
def test_any_rank_up_to_10(spec, ndim):
    rng = np.random.default_rng(ndim)
    for _ in range(3):
        spec.rank(rng, tuple(int(s) for s in rng.integers(1, 4, ndim)))


# -------------------------------------------------------------------- memory limit
_LIMIT_SCRIPT = """
import resource, sys
import numpy as np
import fastops
from tests.conftest import public_ops, resolve
import fastops._cpu, importlib, pkgutil
from fastops._dispatch import cpu_module
for m in pkgutil.iter_modules(fastops._cpu.__path__):    # loaded before the limit (the
    if not m.ispkg:                                      # build the dispatch picks)
        importlib.import_module(cpu_module(m.name))
rng = np.random.default_rng(0)
{big}
nt = fastops.get_num_threads()
fastops.cummax(np.ones((64 * nt, 4096), np.float32), 1)   # the thread pool, started
vm = [l for l in open("/proc/self/status") if l.startswith("VmSize")][0]
limit = int(vm.split()[1]) * 1024 + {headroom} * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    fastops.{name}(**kw)
except MemoryError as exc:
    print("MemoryError:", exc)
else:
    print("ok")
"""


@pytest.mark.skipif(SANITIZED, reason="ASan reserves terabytes of address space")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS + /proc")
@pytest.mark.parametrize("spec", [s for s in SPECS if s.big], ids=lambda s: s.name)
def test_memory_limit_gives_memory_error(spec):
    code = _LIMIT_SCRIPT.format(big=textwrap.indent(spec.big, ""), name=spec.name,
                                headroom=spec.headroom_mb)
    env = {**os.environ, "FASTOPS_POOL_BYTES": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(f"MemoryError: {spec.name}:"), out.stdout + out.stderr[-2000:]


# ------------------------------------------------------------ concurrent mutation
@pytest.mark.parametrize("spec", [s for s in SPECS if s.race], ids=lambda s: s.name)
def test_concurrent_mutation_is_memory_safe(spec):
    """Another thread flips an argument between valid and hostile values while the op runs
    (the kernels release the GIL).  Any result or a clean exception; never a crash, and
    under ASan never an out-of-bounds access."""
    kw, name, good, bad = spec.race(np.random.default_rng(1))
    with _flipping(kw[name], good, bad):
        end = time.monotonic() + (2.0 if SANITIZED else 0.5)
        calls = 0
        while time.monotonic() < end or calls < 5:
            _outcome(spec, kw)
            calls += 1
    kw[name][...] = good
    _call(spec, kw)          # still works on the restored input


@contextlib.contextmanager
def _flipping(target, good, bad):
    """Another thread writes bad, then good, into target until the block ends."""
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            target[...] = bad
            target[...] = good

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def _race_elements_along(op, shape, ishape, axis):
    def race(rng):
        data = rng.standard_normal(shape).astype(np.float32)
        idx = rng.integers(0, shape[axis], ishape)
        kw = dict(data=data, indices=idx, axis=axis)
        if op == "scatter_elements":
            kw.update(updates=rng.standard_normal(ishape).astype(np.float32), reduction="add")
        return kw, "indices", idx.copy(), np.where(rng.random(ishape) < 0.5, 2**40, -2**40)
    return race


@pytest.mark.parametrize("op, shape, ishape, axis", [
    ("scatter_elements", (300_000,), (1 << 18,), 0),          # a slice in L2: one thread
    ("scatter_elements", (3_000_000,), (1 << 18,), 0),        # past any L2: bucketed
    ("scatter_elements", (2000, 2000), (2000, 500), 1),       # one span per slice
    ("scatter_elements", (64, 300, 2), (64, 200, 2), 1),      # short rows: one flat walk
    ("gather_elements", (2000, 2000), (2000, 500), 1),        # short rows prefetched whole
    ("gather_elements", (8400, 80), (8400, 5), 1),            # lanes carrying their row
    ("gather_elements", (2000, 2000), (500, 2000), 0),        # column strips, 8 lanes a step
    ("gather_elements", (1000, 2000, 2), (200, 500, 2), 1)])  # flat walks, 8 positions a step
def test_concurrent_mutation_along_the_last_axis(op, shape, ishape, axis):
    """The scatter family's paths for short index rows, long slices, column strips and
    flat walks, under the same flip of the indices between good and out-of-range
    values."""
    spec = dataclasses.replace(SPEC[op], race=_race_elements_along(op, shape, ishape, axis))
    test_concurrent_mutation_is_memory_safe(spec)


@pytest.mark.parametrize("op", ["scatter_elements", "gather_elements"])
def test_concurrent_mutation_of_broadcast_row_indices(op):
    """Indices broadcast over the trailing dimensions (the scatter family's whole-row path)
    from a base array another thread flips between row numbers and out-of-range values:
    a result or an IndexError, never a crash; a result moves whole rows of one snapshot
    (every output row is one of the source rows)."""
    n, inner = 64, (32, 9)
    base = np.random.default_rng(3).permutation(n)
    good, bad = base.copy(), np.where(np.arange(n) % 2, 2**40, -2**40)
    idx = np.broadcast_to(base.reshape((n,) + (1,) * len(inner)), (n,) + inner)
    src = np.repeat(np.arange(1, n + 1, dtype=np.float32), idx[0].size).reshape(idx.shape)
    # (row r of src holds r + 1)
    zeros = np.zeros(idx.shape, np.float32)
    with _flipping(base, good, bad):
        end = time.monotonic() + (2.0 if SANITIZED else 0.5)
        calls = 0
        while time.monotonic() < end or calls < 5:
            calls += 1
            try:
                out = (fastops.gather_elements(src, idx, 0) if op == "gather_elements"
                       else fastops.scatter_elements(zeros, idx, src, 0))
            except IndexError:
                continue
            rows = out.reshape(n, -1)
            assert (rows == rows[:, :1]).all() and rows.min() >= 0 and rows.max() <= n
    base[...] = good
    assert np.array_equal(fastops.gather_elements(src, idx, 0)[:, 0, 0], good + 1)


def _race_topk_rows(shape, k):
    def race(rng):
        x = rng.standard_normal(shape).astype(np.float32)
        bad = np.where(rng.random(x.shape) < 0.5, np.nan, -np.inf).astype(np.float32)
        return dict(x=x, k=k), "x", x.copy(), bad
    return race


@pytest.mark.parametrize("shape, ks, distinct", [
    ((256, 1000), (10, 30, 60), False),  # the group threshold (G = 32, 64, 128)
    ((2000, 100), (40,), True)])         # the ranks of every value, each read once
def test_concurrent_mutation_of_topk_rows(shape, ks, distinct):
    """topk's float32 paths for rows of hundreds under a flip of the values between a
    row and NaN / -inf: whatever the values, every index in the row, sorted or not; the
    ranks of every value stay a permutation, so those indices are distinct too."""
    spec = dataclasses.replace(SPEC["topk"], race=_race_topk_rows(shape, ks[0]))
    test_concurrent_mutation_is_memory_safe(spec)
    kw, _, good, bad = _race_topk_rows(shape, ks[0])(np.random.default_rng(2))
    x = kw["x"]
    with _flipping(x, good, bad):
        for _ in range(20):
            for k in ks:
                for sorted_ in (True, False):
                    _, i = fastops.topk(x, k, sorted=sorted_)
                    assert i.min() >= 0 and i.max() < x.shape[1]
                    if distinct:
                        assert all(len(np.unique(r)) == k for r in i)


def test_concurrent_mutation_of_integer_topk_rows():
    """topk's integer heap path (the row's floor from its group extremes, the vector
    block tests and bit-visited blocks) under a flip of the values between a row and the
    type's extremes: every index in the row, each at most once."""
    def race(rng):
        x = rng.integers(0, 256, (64, 20000)).astype(np.uint8)
        bad = np.where(rng.random(x.shape) < 0.5, 0, 255).astype(np.uint8)
        return dict(x=x, k=10), "x", x.copy(), bad
    test_concurrent_mutation_is_memory_safe(dataclasses.replace(SPEC["topk"], race=race))
    kw, _, good, bad = race(np.random.default_rng(3))
    x = kw["x"]
    with _flipping(x, good, bad):
        for _ in range(20):
            for largest in (True, False):
                _, i = fastops.topk(x, 10, largest=largest)
                assert i.min() >= 0 and i.max() < x.shape[1]
                assert all(len(np.unique(r)) == 10 for r in i)


def test_concurrent_mutation_of_batch_indices():
    spec = dataclasses.replace(SPEC["roi_align"], race=_race_roi_batch)
    test_concurrent_mutation_is_memory_safe(spec)


# ---------------------------------------------------------------- specific classes
def test_roi_align_cost_is_bounded_by_the_map():
    """RoIs far outside (or far larger than) the map: samples outside are never visited,
    so the call is fast; the result equals the definition (outside samples are 0)."""
    x = np.random.default_rng(0).standard_normal((1, 4, 16, 16)).astype(np.float32)
    rois = np.array([[0, 3e4, 3e4, 6e4, 6e4], [0, -1e6, -1e6, 1e6, 1e6],
                     [0, -5e5, 2, 5e5, 9]], np.float32)
    t0 = time.perf_counter()
    out = fastops.roi_align(x, rois, 7, sampling_ratio=0, aligned=True)
    assert time.perf_counter() - t0 < 5.0
    assert np.all(out[0] == 0)
    assert np.all(np.isfinite(out))
    # a huge RoI averages mostly outside samples: its bins are tiny but not all zero
    assert np.abs(out[1]).max() < np.abs(x).max() * 1e-3


def test_pool_env_var_is_validated():
    for bad in ("abc", "-1", "1.5"):
        out = subprocess.run([sys.executable, "-c", "import numpy, fastops; "
                              "fastops.cummax(numpy.ones((1024, 1024), 'f4'), 0)"],
                             capture_output=True, text=True,
                             env={**os.environ, "FASTOPS_POOL_BYTES": bad})
        assert out.returncode != 0
        assert f"FASTOPS_POOL_BYTES={bad!r}" in out.stderr, out.stderr[-500:]


def test_scatter_max_min_signed_zero_and_nan_like_numpy():
    """np.maximum.at / np.minimum.at in row-major order, bit for bit, per dtype."""
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64):
        u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
        vals = np.array([0.0, -0.0, 1.0, -1.0], dtype)
        nans = np.array([np.nan, -np.nan], dtype)
        for _ in range(30):
            data = rng.choice(vals, 6).astype(dtype)
            idx = rng.integers(0, 6, 12)
            upd = rng.choice(np.concatenate([vals, nans] if rng.random() < 0.3 else [vals]),
                             12).astype(dtype)
            for red, ufunc in (("max", np.maximum), ("min", np.minimum)):
                want = data.copy()
                with np.errstate(invalid="ignore"):
                    ufunc.at(want, idx, upd)
                got = fastops.scatter_elements(data, idx, upd, reduction=red)
                assert got.view(u).tolist() == want.view(u).tolist(), (dtype, red, data, idx, upd)
                got_nd = fastops.scatter_nd(data, idx[:, None], upd, reduction=red)
                assert got_nd.view(u).tolist() == want.view(u).tolist()
