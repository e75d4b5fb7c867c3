"""Slow float64 ONNX Resize written from the spec (onnx.defs Resize, opsets 11 to 19), with
fastops' documented choices where the spec is silent or the ONNX reference has a bug.

``resize_ref(x, scales=None, sizes=None, **attrs)`` returns the float64 result (integer
inputs are not rounded; use :func:`round_half_away`).  One dense weight matrix per axis:

* output length: ``floor(in * float32(scale))`` (product in float64), or ``sizes``;
  keep_aspect_ratio_policy scales every axis by the min / max ratio and rounds half up;
* the coordinate of output ``o`` by the spec's formula for the mode, with the "output
  width" ``scale * in`` when scales are given and the exact output length for sizes;
  length-1 outputs: pytorch_half_pixel gives 0 and tf_crop_and_resize the roi's centre
  (the spec; onnx.reference uses -0.5 and the start when scale * in is not exactly 1);
* nearest: the nearest_mode rounding of the coordinate, clamped to the axis;
* linear / cubic: every source index ``i`` with ``|i - x| * s`` inside the filter's
  support (1 or 2) weighs ``k((i - x) * s)`` with ``s = min(scale, 1)`` when antialias,
  else 1 (k: the triangle or Keys' cubic with parameter a); antialias normalizes the
  weights to sum 1; exclude_outside drops indices outside the axis and normalizes;
  otherwise outside indices read the edge value;
* a weight of exactly 0 does not read its sample (no 0 * inf);
* tf_crop_and_resize outputs whose coordinate lies outside [0, in - 1] (on any axis) are
  extrapolation_value;
* nearest with exclude_outside and the chosen index outside the axis gives 0.
"""
import math

import numpy as np


def _keys(d, a):
    d = abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


def geometry(shape, axes, scales, sizes, policy="stretch"):
    """[(n_out, scale, out_width)] for each axis in ``axes``."""
    out = []
    if scales is not None:
        for a, s in zip(axes, np.asarray(scales, dtype=np.float32)):
            s = float(s)
            out.append((math.floor(shape[a] * s), s, s * shape[a]))
        return out
    sizes = [int(v) for v in sizes]
    if policy == "stretch":
        for a, n in zip(axes, sizes):
            out.append((n, n / shape[a], float(n)))
        return out
    ratios = [n / shape[a] for a, n in zip(axes, sizes)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        n = int(math.floor(s * shape[a] + 0.5))
        out.append((n, s, s * shape[a]))
    return out


def coordinate(ctm, o, n_in, n_out, scale, out_width, roi=(0.0, 1.0)):
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adjustment = n_out / out_width
        center = n_in / 2
        offset = center * (1 - adjustment)
        return offset + (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if n_out > 1 else 0.0
    if ctm == "align_corners":
        return o * (n_in - 1) / (out_width - 1) if n_out > 1 else 0.0
    if ctm == "asymmetric":
        return o / scale
    if ctm == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if ctm == "tf_crop_and_resize":
        start, end = roi
        if n_out > 1:
            return o * (end - start) * (n_in - 1) / (out_width - 1) + start * (n_in - 1)
        return (end - start) * (n_in - 1) / 2 + start * (n_in - 1)
    raise ValueError(ctm)


def _nearest(x, mode):
    f = math.floor(x)
    if x == f:
        return int(f)
    frac = x - f
    if mode == "round_prefer_floor":
        return int(f) if frac <= 0.5 else int(f) + 1
    if mode == "round_prefer_ceil":
        return int(f) if frac < 0.5 else int(f) + 1
    if mode == "floor":
        return int(f)
    if mode == "ceil":
        return int(f) + 1
    raise ValueError(mode)


def axis_weights(n_in, n_out, scale, out_width, mode="nearest", ctm="half_pixel",
                 nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75,
                 exclude_outside=False, antialias=False, roi=(0.0, 1.0)):
    """(list of {source index: weight} per output, extrapolated flags, zero flags)."""
    rows, extrap, zero = [], [], []
    for o in range(n_out):
        x = coordinate(ctm, o, n_in, n_out, scale, out_width, roi)
        if ctm == "tf_crop_and_resize" and not (0 <= x <= n_in - 1):
            rows.append({})
            extrap.append(True)
            zero.append(False)
            continue
        extrap.append(False)
        if mode == "nearest":
            i = _nearest(x, nearest_mode)
            if exclude_outside and not 0 <= i < n_in:
                rows.append({})
                zero.append(True)
                continue
            rows.append({min(max(i, 0), n_in - 1): 1.0})
            zero.append(False)
            continue
        zero.append(False)
        s = min(scale, 1.0) if antialias else 1.0
        support = 1.0 if mode == "linear" else 2.0
        taps = []
        for i in range(math.floor(x - support / s) - 1, math.ceil(x + support / s) + 2):
            d = (i - x) * s
            w = max(0.0, 1.0 - abs(d)) if mode == "linear" else _keys(d, cubic_coeff_a)
            if abs(d) < support and w != 0:
                taps.append((i, w))
        if antialias:
            total = sum(w for _, w in taps)
            taps = [(i, w / total) for i, w in taps]
        if exclude_outside:
            taps = [(i, w) for i, w in taps if 0 <= i < n_in]
            total = sum(w for _, w in taps)
            taps = [(i, w / total) for i, w in taps] if total != 0 else []
        row = {}
        for i, w in taps:
            j = min(max(i, 0), n_in - 1)
            row[j] = row.get(j, 0.0) + w
        rows.append({j: w for j, w in row.items() if w != 0})
    return rows, np.array(extrap, bool), np.array(zero, bool)


def _apply(data, axis, rows):
    moved = np.moveaxis(data, axis, 0)
    out = np.zeros((len(rows),) + moved.shape[1:])
    for o, row in enumerate(rows):
        for j, w in row.items():
            out[o] += w * moved[j]
    return np.moveaxis(out, 0, axis)


def resize_ref(x, scales=None, sizes=None, *, mode="nearest",
               coordinate_transformation_mode="half_pixel",
               nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=False,
               extrapolation_value=0.0, antialias=False, axes=None,
               keep_aspect_ratio_policy="stretch", roi=None):
    """The float64 result (not rounded)."""
    data = np.asarray(x).astype(np.float64)
    r = data.ndim
    axes = list(range(r)) if axes is None else [a % r for a in axes]
    geo = geometry(data.shape, axes, scales, sizes, keep_aspect_ratio_policy)
    n = len(axes)
    rois = [(0.0, 1.0)] * n if roi is None else \
        [(float(roi[i]), float(roi[n + i])) for i in range(n)]
    masks = []
    for a, (n_out, s, width), rr in zip(axes, geo, rois):
        if n_out == data.shape[a] and math.isclose(s, 1.0) and (
                coordinate_transformation_mode != "tf_crop_and_resize"
                or (rr[0] == 0.0 and rr[1] == 1.0)):
            continue        # the identity (as the ONNX reference skips it)
        rows, extrap, zero = axis_weights(
            data.shape[a], n_out, s, width, mode, coordinate_transformation_mode,
            nearest_mode, cubic_coeff_a, exclude_outside, antialias, rr)
        data = _apply(data, a, rows)
        masks.append((a, extrap, zero))
    for a, extrap, zero in masks:
        idx = [slice(None)] * r
        idx[a] = zero
        data[tuple(idx)] = 0.0
    for a, extrap, zero in masks:
        idx = [slice(None)] * r
        idx[a] = extrap
        data[tuple(idx)] = extrapolation_value
    return data


def round_half_away(v, dtype):
    """Round half away from zero and saturate to an integer dtype (float64 in)."""
    v = np.asarray(v, dtype=np.float64)
    t = np.trunc(v)
    d = v - t
    t = t + (d >= 0.5) - (d <= -0.5)
    info = np.iinfo(dtype)
    t = np.where(np.isnan(v), info.min, t)
    return np.clip(t, info.min, info.max).astype(dtype)
