"""Slow float64 deformable convolution written from the definition (Dai et al. 2017, Zhu
et al. 2019; the ONNX DeformConv spec; torchvision's and MMCV's documented boundary rule).

``deform_conv2d_ref(x, offset, weight, bias=None, stride=(1, 1), pads=(0, 0, 0, 0),
dilation=(1, 1), groups=1, deform_groups=1, mask=None)``; ``pads`` is ONNX's
``(top, left, bottom, right)``.  Everything is computed in float64:

    y[n, m, oy, ox] = bias[m] + sum over c in m's group, taps (i, j) of
        weight[m, c', i, j] * mask[n, d*K + k, oy, ox] * bilinear(x[n, c], py, px)

with ``py = oy*sh - top + i*dh + offset[n, 2*(d*K + k)]``, ``px = ox*sw - left + j*dw +
offset[n, 2*(d*K + k) + 1]``, ``d = c // (C / deform_groups)``, ``k = i*kw + j``.
Bilinear: a point with py <= -1, py >= H, px <= -1, px >= W (or NaN) is 0; otherwise the
four neighbours ``floor(p)``, ``floor(p) + 1`` are weighted by the usual fractions and
neighbours outside the map count as 0.  One sample point at a time, vectorized over
channels only; the sum over channels and taps is a plain ``np.dot``.
"""
import math

import numpy as np


def bilinear_ref(plane, py, px):
    """Value of ``plane`` (C, H, W) at (py, px) under the rule above, as a (C,) vector."""
    C, H, W = plane.shape
    if not (py > -1 and py < H and px > -1 and px < W):      # also NaN
        return np.zeros(C)
    y0, x0 = math.floor(py), math.floor(px)
    ly, lx = py - y0, px - x0
    val = np.zeros(C)
    for yy, wy in ((y0, 1.0 - ly), (y0 + 1, ly)):
        for xx, wx in ((x0, 1.0 - lx), (x0 + 1, lx)):
            if 0 <= yy < H and 0 <= xx < W:
                val = val + (wy * wx) * plane[:, yy, xx]
    return val


def out_size(n, pad0, pad1, k, stride, dil):
    span = (k - 1) * dil + 1
    return (n + pad0 + pad1 - span) // stride + 1 if n + pad0 + pad1 >= span else 0


def deform_conv2d_ref(x, offset, weight, bias=None, stride=(1, 1), pads=(0, 0, 0, 0),
                      dilation=(1, 1), groups=1, deform_groups=1, mask=None):
    x = np.asarray(x, np.float64)
    offset = np.asarray(offset, np.float64)
    weight = np.asarray(weight, np.float64)
    N, C, H, W = x.shape
    M, Cg, KH, KW = weight.shape
    K = KH * KW
    sh, sw = stride
    top, left, bottom, right = pads
    dh, dw = dilation
    OH = out_size(H, top, bottom, KH, sh, dh)
    OW = out_size(W, left, right, KW, sw, dw)
    assert offset.shape == (N, 2 * deform_groups * K, OH, OW), offset.shape
    if mask is None:
        mask = np.ones((N, deform_groups * K, OH, OW))
    mask = np.asarray(mask, np.float64)
    Mg, Cd = M // groups, C // deform_groups
    y = np.zeros((N, M, OH, OW))
    for n in range(N):
        for oy in range(OH):
            for ox in range(OW):
                # cols[c, k]: the modulated sample of channel c at tap k
                cols = np.zeros((C, K))
                for d in range(deform_groups):
                    chans = slice(d * Cd, (d + 1) * Cd)
                    for i in range(KH):
                        for j in range(KW):
                            k = i * KW + j
                            py = oy * sh - top + i * dh + offset[n, 2 * (d * K + k), oy, ox]
                            px = ox * sw - left + j * dw + offset[n, 2 * (d * K + k) + 1, oy,
                                                                  ox]
                            v = bilinear_ref(x[n, chans], py, px)
                            cols[chans, k] = mask[n, d * K + k, oy, ox] * v
                for g in range(groups):
                    wg = weight[g * Mg:(g + 1) * Mg].reshape(Mg, Cg * K)
                    y[n, g * Mg:(g + 1) * Mg, oy, ox] = wg @ cols[g * Cg:(g + 1) * Cg].reshape(
                        Cg * K)
    if bias is not None:
        y += np.asarray(bias, np.float64)[None, :, None, None]
    return y
