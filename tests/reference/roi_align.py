"""Slow float64 RoIAlign written from the specs (ONNX RoiAlign, MMCV roi_align, Caffe2).

``roi_align_ref(x, boxes, batch, output_size, spatial_scale, sampling_ratio, mode,
aligned, mmcv_seed=False)`` with boxes (K, 4) ``[x1, y1, x2, y2]`` and batch (K,) ints.

mode: "avg" (mean of bilinear samples), "max" (max of bilinear samples: the MMCV rule;
with ``mmcv_seed=True`` exactly MMCV's loop, seeded with -10000 and a strict ``>``),
"onnx_max" (per sample the max of the four weighted corners, then the max over samples).
Bilinear sampling follows the Caffe2 rule: a sample with y < -1 or y > H (x alike) is 0,
else y is clamped into [0, H-1] and interpolated.  Vectorized over channels only.
"""
import math

import numpy as np


def _axis(c, n):
    """(lo, hi, frac) for one coordinate, or None when the sample lies outside."""
    if c < -1.0 or c > n:
        return None
    c = max(c, 0.0)
    lo = int(math.floor(c))
    if lo >= n - 1:
        return n - 1, n - 1, 0.0
    return lo, lo + 1, c - lo


def _corners(plane, y, x):
    """(w, v) pairs of the four corners of a sample of plane (C, H, W); None if outside."""
    H, W = plane.shape[1:]
    ay, ax = _axis(y, H), _axis(x, W)
    if ay is None or ax is None:
        return None
    (y0, y1, ly), (x0, x1, lx) = ay, ax
    hy, hx = 1.0 - ly, 1.0 - lx
    return [(hy * hx, plane[:, y0, x0]), (hy * lx, plane[:, y0, x1]),
            (ly * hx, plane[:, y1, x0]), (ly * lx, plane[:, y1, x1])]


def roi_align_ref(x, boxes, batch, output_size, spatial_scale=1.0, sampling_ratio=0,
                  mode="avg", aligned=True, mmcv_seed=False):
    x = np.asarray(x, dtype=np.float64)
    boxes = np.asarray(boxes, dtype=np.float64)
    N, C, H, W = x.shape
    ph_n, pw_n = (output_size, output_size) if np.isscalar(output_size) else output_size
    out = np.zeros((len(boxes), C, ph_n, pw_n))
    off = 0.5 if aligned else 0.0
    for k, (x1, y1, x2, y2) in enumerate(boxes):
        plane = x[int(batch[k])]
        sw, sh = x1 * spatial_scale - off, y1 * spatial_scale - off
        rw, rh = (x2 - x1) * spatial_scale, (y2 - y1) * spatial_scale
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(bh)), 0)
        gw = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(bw)), 0)
        count = max(gh * gw, 1)
        for ph in range(ph_n):
            for pw in range(pw_n):
                vals = []
                for iy in range(gh):
                    y = sh + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = sw + pw * bw + (ix + 0.5) * bw / gw
                        cs = _corners(plane, y, xx)
                        if cs is None:
                            cs = [(0.0, np.zeros(C))] * 4
                        if mode == "onnx_max":
                            vals.append(np.max([w * v for w, v in cs], axis=0))
                        else:
                            vals.append(sum(w * v for w, v in cs))
                if mode == "avg":
                    r = np.sum(vals, axis=0) / count if vals else np.zeros(C)
                elif mmcv_seed:
                    r = np.full(C, -10000.0)
                    for v in vals:
                        r = np.where(v > r, v, r)
                else:
                    r = np.max(vals, axis=0) if vals else np.zeros(C)
                out[k, :, ph, pw] = r
    return out
