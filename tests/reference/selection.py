"""Slow references for topk, cummax/cummin and nonzero, written from the specs.

Values are compared as Python numbers (exact for every integer width).
"""
import math

import numpy as np


def _isnan(v):
    return isinstance(v, float) and math.isnan(v)


def topk(x, k, axis, largest):
    """Sort each line by (NaN first, value, index) - NaN ranks above every number."""
    x = np.asarray(x)
    xm = np.moveaxis(x, axis, -1)
    flat = xm.reshape(-1, xm.shape[-1])
    vals = np.empty((flat.shape[0], k), dtype=x.dtype)
    idx = np.empty((flat.shape[0], k), dtype=np.int64)
    for r, row in enumerate(flat):
        items = [(float(v) if x.dtype.kind == "f" else int(v), i) for i, v in enumerate(row.tolist())]
        if largest:
            key = lambda t: (0 if _isnan(t[0]) else 1, 0 if _isnan(t[0]) else -t[0], t[1])
        else:
            key = lambda t: (1 if _isnan(t[0]) else 0, 0 if _isnan(t[0]) else t[0], t[1])
        best = sorted(items, key=key)[:k]
        vals[r] = [v for v, _ in best]
        idx[r] = [i for _, i in best]
    shape = xm.shape[:-1] + (k,)
    return (np.moveaxis(vals.reshape(shape), -1, axis), np.moveaxis(idx.reshape(shape), -1, axis))


def cumext(x, axis, is_max):
    """torch.cummax/cummin rule: take x if NaN, or if running is not NaN and x >=/<= it."""
    x = np.asarray(x)
    xm = np.moveaxis(x, axis, -1)
    flat = xm.reshape(-1, xm.shape[-1])
    vals = np.empty(flat.shape, dtype=x.dtype)
    idx = np.empty(flat.shape, dtype=np.int64)
    for r, row in enumerate(flat):
        cur, ci = None, 0
        for i, v in enumerate(row.tolist()):
            take = (i == 0 or _isnan(v)
                    or (not _isnan(cur) and (v >= cur if is_max else v <= cur)))
            if take:
                cur, ci = v, i
            vals[r, i] = cur
            idx[r, i] = ci
    return (np.moveaxis(vals.reshape(xm.shape), -1, axis),
            np.moveaxis(idx.reshape(xm.shape), -1, axis))


def nonzero(x):
    x = np.asarray(x)
    if x.ndim == 0:
        x = x.reshape(1)
    coords = [ix for ix in np.ndindex(*x.shape) if x[ix] != 0]
    return np.array(coords, dtype=np.int64).reshape(-1, x.ndim).T
