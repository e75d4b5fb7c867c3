"""Slow float64 GridSample written from the specs (ONNX GridSample and torch's
grid_sample documentation), one output point at a time.

Semantics (torch's, which ONNX GridSample cites):

* unnormalize: align_corners -> ``(g + 1) / 2 * (size - 1)``, else
  ``((g + 1) * size - 1) / 2``;
* padding of a coordinate: "border" clamps into ``[0, size - 1]``; "reflection"
  reflects about the edges (``0`` and ``size - 1`` with align_corners, ``-0.5`` and
  ``size - 0.5`` without), then clamps; "zeros" leaves it and reads 0 outside;
* bilinear: the 2**r neighbours ``floor(v)``, ``floor(v) + 1`` per axis with weights
  ``1 - |v - i|``; nearest: ``rint`` (half to even); bicubic: the 4 x 4 neighbours
  ``floor(v) - 1 .. floor(v) + 2`` with Keys weights (A = -0.75), each tap coordinate
  padded on its own (so "border" repeats the edge pixel, "reflection" mirrors pixels).

Integer outputs are rounded half away from zero and saturated (the fastops API rule).
Finite grids only.
"""
import itertools

import numpy as np

A = -0.75


def unnormalize(g, size, align):
    return (g + 1.0) / 2.0 * (size - 1) if align else ((g + 1.0) * size - 1.0) / 2.0


def clip(v, size):
    return min(max(v, 0.0), size - 1.0)


def reflect(v, size, align):
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    span = hi - lo
    if span == 0:
        return 0.0
    d = abs(v - lo) % (2 * span)          # position within one period
    return lo + (d if d <= span else 2 * span - d)


def pad_coord(v, size, padding, align):
    if padding == "border":
        return clip(v, size)
    if padding == "reflection":
        return clip(reflect(v, size, align), size)
    return v


def keys(t):
    """Keys cubic kernel, A = -0.75, at distance t."""
    t = abs(t)
    if t <= 1:
        return (A + 2) * t ** 3 - (A + 3) * t ** 2 + 1
    if t < 2:
        return A * t ** 3 - 5 * A * t ** 2 + 8 * A * t - 4 * A
    return 0.0


def _value(img, idx):
    """img[:, idx] over channels, 0 where idx is outside (zeros padding)."""
    if all(0 <= i < s for i, s in zip(idx, img.shape[1:])):
        return img[(slice(None),) + tuple(int(i) for i in idx)]
    return np.zeros(img.shape[0])


def _sample(img, coords, mode, padding, align):
    """One output point of one image: img (C, *spatial) float64, coords in spatial order."""
    sizes = img.shape[1:]
    if mode == "nearest":
        v = [pad_coord(unnormalize(c, s, align), s, padding, align) for c, s in zip(coords, sizes)]
        return _value(img, [np.rint(x) for x in v])
    if mode == "bilinear":
        v = [pad_coord(unnormalize(c, s, align), s, padding, align) for c, s in zip(coords, sizes)]
        out = np.zeros(img.shape[0])
        for corner in itertools.product((0, 1), repeat=len(v)):
            idx = [np.floor(x) + k for x, k in zip(v, corner)]
            w = np.prod([1.0 - abs(x - i) for x, i in zip(v, idx)])
            out += w * _value(img, idx)
        return out
    # bicubic (2-D): padding applied to each integer tap, weights from the raw coordinate
    v = [unnormalize(c, s, align) for c, s in zip(coords, sizes)]
    out = np.zeros(img.shape[0])
    for offs in itertools.product(range(-1, 3), repeat=len(v)):
        taps = [np.floor(x) + k for x, k in zip(v, offs)]
        w = np.prod([keys(x - t) for x, t in zip(v, taps)])
        idx = [pad_coord(t, s, padding, align) for t, s in zip(taps, sizes)]
        out += w * _value(img, idx)
    return out


def round_saturate(y, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return y.astype(dtype)
    info = np.iinfo(dtype)
    y = np.where(np.isnan(y), 0.0, y)
    r = np.trunc(y)
    d = y - r                                    # exact
    r = r + (d >= 0.5) - (d <= -0.5)             # half away from zero
    r = np.clip(r, float(info.min), float(info.max))
    out = np.empty(r.shape, dtype)
    big = r >= float(info.max)
    out[big] = info.max
    out[~big] = r[~big].astype(dtype)
    return out


def grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                    out_dtype=None):
    """x (N, C, *spatial), grid (N, *out_spatial, r) with grid[..., 0] the last (width)
    axis.  Returns float64 (or ``out_dtype`` after rounding/saturation)."""
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    x = np.asarray(x, np.float64)
    grid = np.asarray(grid, np.float64)
    N, C = x.shape[:2]
    out_sp = grid.shape[1:-1]
    y = np.zeros((N, C) + out_sp)
    for n in range(N):
        for pos in np.ndindex(*out_sp):
            coords = grid[(n,) + pos][::-1]          # (x, y[, z]) -> spatial order
            y[(n, slice(None)) + pos] = _sample(x[n], coords, mode, padding_mode,
                                                bool(align_corners))
    return y if out_dtype is None else round_saturate(y, out_dtype)
