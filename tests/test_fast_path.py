"""The compiled fast paths of the public calls (fastops/_cpu/_fast.pxd) against the
general path they shortcut: same dtype, shape and bytes for every plain input, the same
exception for bad ones, the fast path really taken for plain inputs and declined for
everything it does not cover.  Every ``fast_*`` function of every CPU family must have
cases here (test_every_fast_path_has_cases), so a new one cannot land untested."""
import importlib
import pkgutil

import numpy as np
import pytest

import fastops
import fastops._cpu
import fastops.cv as fcv
from fastops import _dispatch

REAL = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64,
        np.float32, np.float64]
BITS = REAL + [np.bool_, np.float16, np.complex64]


def _data(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.4
    if dtype.kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        x.flat[::7] = 0            # ties and zeros (and -0.0 below)
        x.flat[3::11] = -0.0
        if x.size > 5:
            x.flat[5] = np.nan
        return x
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.integers(0, 2, shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -5), min(info.max, 5), shape, endpoint=True).astype(dtype)


def _cases():
    """(fast function name, label, call) triples; call() runs the public op."""
    rng = np.random.default_rng(7)
    out = []
    for dt in REAL:
        for shape in [(17,), (4, 16), (3, 5, 6), (2, 1, 3, 4)]:
            x = _data(rng, shape, dt)
            for axis in range(-len(shape), len(shape)):
                n = shape[axis]
                out.append(("fast_cumext", f"cummax {dt.__name__} {shape} {axis}",
                            lambda x=x, a=axis: fastops.cummax(x, a)))
                out.append(("fast_cumext", f"cummin {dt.__name__} {shape} {axis}",
                            lambda x=x, a=axis: fastops.cummin(x, a)))
                for k in sorted({1, min(2, n), n}):
                    for largest in (True, False):
                        for sorted_ in (True, False):
                            out.append(("fast_topk", f"topk {dt.__name__} {shape} {axis} {k}",
                                        lambda x=x, k=k, a=axis, l=largest, s=sorted_:
                                        fastops.topk(x, k, a, l, s)))
    for dt in BITS:
        if dt is not np.complex64:      # (complex nonzero is x != 0: the general path)
            for shape in [(1,), (9,), (4, 16), (2, 3, 5)]:
                x = _data(rng, shape, dt)
                out.append(("fast_nonzero", f"nonzero {np.dtype(dt)} {shape}",
                            lambda x=x: fastops.nonzero(x)))
            out.append(("fast_nonzero", f"nonzero {np.dtype(dt)} all zero",
                        lambda z=np.zeros((3, 4), dt): fastops.nonzero(z)))
        for shape, axis in [((8, 8), 0), ((8, 8), 1), ((3, 4, 5), 1), ((3, 4, 5), -1)]:
            data = _data(rng, shape, dt)
            for idt in (np.int32, np.int64):
                n = shape[axis]
                ishape = list(shape)
                ishape[axis] = 6
                idx = rng.integers(-n, n, ishape).astype(idt)
                upd = _data(rng, ishape, dt)
                out.append(("fast_gather_elements", f"gather_elements {np.dtype(dt)} {shape}",
                            lambda d=data, i=idx, a=axis: fastops.gather_elements(d, i, a)))
                reductions = ["none", None] + (["add", "mul", "max", "min"] if dt in REAL else [])
                for red in reductions:
                    out.append(("fast_scatter_elements",
                                f"scatter_elements {np.dtype(dt)} {shape} {red}",
                                lambda d=data, i=idx, u=upd, a=axis, r=red:
                                fastops.scatter_elements(d, i, u, a, r)))
                out.append(("fast_scatter_elements", f"scatter {np.dtype(dt)} {shape}",
                            lambda d=data, i=idx, u=upd, a=axis: fastops.scatter(d, i, u, a)))
                for k in range(1, len(shape) + 1):
                    tuples = np.stack([rng.integers(-s, s, 5) for s in shape[:k]], -1)
                    tuples = tuples.astype(idt).reshape(5, k)
                    nd_upd = _data(rng, (5,) + shape[k:], dt)
                    out.append(("fast_gather_nd", f"gather_nd {np.dtype(dt)} {shape} k={k}",
                                lambda d=data, i=tuples: fastops.gather_nd(d, i)))
                    for red in reductions:
                        out.append(("fast_scatter_nd",
                                    f"scatter_nd {np.dtype(dt)} {shape} k={k} {red}",
                                    lambda d=data, i=tuples, u=nd_upd, r=red:
                                    fastops.scatter_nd(d, i, u, r)))
    for dt in (np.float32, np.float64):
        for shape in [(2, 3, 4, 5), (1, 4, 8), (1, 2, 3, 2, 2), (3, 1, 1)]:
            x = _data(rng, shape, dt) * 3 + 1
            x[np.isnan(x)] = 0.5
            for pdt in (dt, np.float32, np.int32):
                scale = rng.uniform(-2, 2, shape[1]).astype(pdt)
                bias = rng.uniform(-2, 2, shape[1]).astype(pdt)
                for eps in (1e-5, 0.0, 1.0):
                    out.append(("fast_instance_norm", f"instance_norm {dt.__name__} {shape}",
                                lambda x=x, s=scale, b=bias, e=eps:
                                fastops.instance_norm(x, s, b, e)))
        for xshape, gshape in [((2, 3, 5, 6), (2, 4, 7, 2)), ((1, 2, 1, 1), (1, 3, 3, 2)),
                               ((1, 2, 3, 4, 5), (1, 2, 3, 4, 3))]:
            x = _data(rng, xshape, dt)
            grid = rng.uniform(-1.3, 1.3, gshape).astype(dt)
            grid.flat[::17] = np.nan
            grid.flat[1::19] = np.inf
            modes = ["bilinear", "nearest", "linear"] + (["bicubic", "cubic"]
                                                         if len(xshape) == 4 else [])
            for mode in modes:
                for pad in ("zeros", "border", "reflection"):
                    for align in (False, True):
                        out.append(("fast_grid_sample", f"grid_sample {dt.__name__} {xshape}",
                                    lambda x=x, g=grid, m=mode, p=pad, a=align:
                                    fastops.grid_sample(x, g, m, p, a)))
    for dt in (np.float32, np.float64):
        for B, C, N in [(1, 1, 1), (1, 1, 16), (2, 3, 40)]:
            lo = rng.uniform(0, 50, (B, N, 2))
            boxes = np.concatenate([lo, lo + rng.uniform(0, 30, (B, N, 2))], -1).astype(dt)
            scores = rng.random((B, C, N)).round(1).astype(dt)      # ties
            scores.flat[::9] = np.nan
            for iou in (0.0, 0.5, 1.0):
                for sthr in (None, 0.3):
                    for max_out in (None, 3):
                        for center in (0, 1):
                            for off in (0, 1):
                                out.append(("fast_non_max_suppression",
                                            f"non_max_suppression {dt.__name__} {B}x{C}x{N}",
                                            lambda b=boxes, s=scores, m=max_out, i=iou,
                                            t=sthr, c=center, o=off:
                                            fastops.non_max_suppression(b, s, m, i, t, c, o)))
                    for max_num in (None, -1, 5):
                        out.append(("fast_nms", f"nms {dt.__name__} {N}",
                                    lambda b=boxes[0], s=scores[0, 0], i=iou, t=sthr, m=max_num:
                                    fastops.nms(b, s, i, t, m)))
                for classes in (1, 3):
                    cls = rng.integers(0, classes, N) * 7 - 5          # negative classes too
                    out.append(("fast_batched_nms", f"batched_nms {dt.__name__} {N}",
                                lambda b=boxes[0], s=scores[0, 0], c=cls, i=iou:
                                fastops.batched_nms(b, s, c, i)))
    for N, C, H, W, M, g, dg, k in [(1, 4, 8, 8, 4, 1, 1, (3, 3)), (2, 4, 7, 9, 6, 2, 2, (2, 3)),
                                    (1, 1, 1, 1, 1, 1, 1, (1, 1))]:
        x = rng.standard_normal((N, C, H, W)).astype(np.float32)
        w = rng.standard_normal((M, C // g) + k).astype(np.float32)
        b = rng.standard_normal(M).astype(np.float32)
        for st, pad, dil in [(1, 1, 1), ((2, 1), (1, 0), (1, 2)), (1, (0, 1, 2, 1), 1)]:
            pads = (pad,) * 4 if isinstance(pad, int) else pad * 2 if len(pad) == 2 else pad
            ph, pw = pads[::2], pads[1::2]       # (top, left, bottom, right)
            sh, sw = (st, st) if isinstance(st, int) else st
            dh, dw = (dil, dil) if isinstance(dil, int) else dil
            OH = (H + sum(ph) - (k[0] - 1) * dh - 1) // sh + 1
            OW = (W + sum(pw) - (k[1] - 1) * dw - 1) // sw + 1
            if OH < 1 or OW < 1:
                continue
            taps = dg * k[0] * k[1]
            off = (rng.standard_normal((N, 2 * taps, OH, OW)) * 2).astype(np.float32)
            mask = rng.random((N, taps, OH, OW)).astype(np.float32)
            label = f"deform_conv2d {N}x{C}x{H}x{W} -> {M} {k} g{g} dg{dg}"
            out.append(("fast_deform_conv2d", label,
                        lambda x=x, o=off, w=w, b=b, s=st, p=pad, d=dil, g=g, dg=dg:
                        fastops.deform_conv2d(x, o, w, b, s, p, d, g, dg)))
            out.append(("fast_deform_conv2d", label + " mask, no bias",
                        lambda x=x, o=off, w=w, m=mask, s=st, p=pad, d=dil, g=g, dg=dg:
                        fastops.deform_conv2d(x, o, w, None, s, p, d, g, dg, m)))
            out.append(("fast_deform_conv2d", "modulated_" + label,
                        lambda x=x, o=off, w=w, b=b, m=mask, s=st, p=pad, d=dil, g=g, dg=dg:
                        fastops.modulated_deform_conv2d(x, o, m, w, b, s, p, d, g, dg)))
    for dt in (np.float32, np.float64):
        x = _data(rng, (2, 3, 9, 11), dt)
        x[np.isnan(x)] = 1.5
        K = 5
        lo = rng.uniform(-2, 8, (K, 2))
        boxes = np.concatenate([lo, lo + rng.uniform(-1, 6, (K, 2))], 1)
        batch = rng.integers(0, 2, K)
        mmcv = np.concatenate([batch[:, None], boxes], 1).astype(dt)
        onnx_rois = boxes.astype(dt)
        for size in (2, (3, 2)):
            for scale in (1.0, 0.5, 1):
                for ratio in (0, 2, -1):
                    for mode in ("avg", "max", "onnx_max"):
                        for aligned in (True, False):
                            out.append(("fast_roi_align", f"roi_align {dt.__name__} mmcv",
                                        lambda x=x, r=mmcv, z=size, c=scale, q=ratio, m=mode,
                                        a=aligned: fastops.roi_align(x, r, z, c, q, m, a)))
                            out.append(("fast_roi_align", f"roi_align {dt.__name__} onnx",
                                        lambda x=x, r=onnx_rois, z=size, c=scale, q=ratio,
                                        m=mode, a=aligned: fastops.roi_align(
                                            x, r, z, c, q, m, a, batch_indices=batch)))
        # a map above kParallelGrain elements: the fast path runs it on the pool's threads
        big = _data(rng, (2, 16, 40, 60), dt)
        big[np.isnan(big)] = 0.5
        big_rois = np.concatenate([mmcv[:, :1], mmcv[:, 1:] * 4], 1)
        for ratio in (0, 2):
            for mode in ("avg", "max"):
                out.append(("fast_roi_align", f"roi_align {dt.__name__} large map",
                            lambda x=big, r=big_rois, q=ratio, m=mode:
                            fastops.roi_align(x, r, 7, 1.0, q, m)))
    for dt in (np.uint8, np.uint16, np.int16, np.float32, np.float64):
        for shape in [(9, 13), (9, 13, 1), (8, 12, 3), (10, 6, 4), (5, 7, 2)]:
            img = _data(rng, shape, dt) if dt != np.uint8 else \
                rng.integers(0, 256, shape).astype(np.uint8)
            h, w = shape[:2]
            # upscale, downscale, exact 2x (INTER_AREA's integer path), 3x by 2x, tiny
            sizes = [(w * 3, h * 2), (max(w // 3, 1), h - 1), (max(w // 2, 1), max(h // 2, 1)),
                     [2 * w, 3 * h], (1, 1)]
            for size in sizes:
                for flag in (fcv.INTER_LINEAR, fcv.INTER_CUBIC, fcv.INTER_AREA,
                             fcv.INTER_NEAREST, fcv.INTER_NEAREST_EXACT):
                    if flag == fcv.INTER_AREA and (w % size[0] or h % size[1]) and \
                            size[0] <= w and size[1] <= h:
                        continue            # non-integer INTER_AREA tables: general path
                    out.append(("fast_resize", f"cv.resize {dt.__name__} {shape} {size} {flag}",
                                lambda x=img, z=size, f=flag: fcv.resize(x, z, interpolation=f)))
                # into a dst that is exactly the output (a fresh one per call)
                oshape = (size[1], size[0]) + ((shape[2],) if len(shape) == 3 and
                                               shape[2] > 1 else ())
                out.append(("fast_resize", f"cv.resize {dt.__name__} {shape} {size} dst",
                            lambda x=img, z=size, o=oshape: fcv.resize(x, z, np.empty(o, x.dtype))))
        # crops of a larger image (rows of contiguous pixels at a stride), one-row crops
        base, gray = _data(rng, (12, 17, 3), dt), _data(rng, (12, 17, 1), dt)
        for crop in (base[2:10, 3:14], gray[2:10, 3:14], base[5:6, 1:16], base[1:9, 4:5],
                     gray[3:11, 2:16, 0]):
            h, w = crop.shape[:2]
            for size in [(w * 2 + 1, h + 3), (max(w // 2, 1), max(h // 2, 1)), (3, 2)]:
                for flag in (fcv.INTER_LINEAR, fcv.INTER_CUBIC, fcv.INTER_NEAREST):
                    out.append(("fast_resize", f"cv.resize {dt.__name__} crop {crop.shape} "
                                f"{size} {flag}",
                                lambda x=crop, z=size, f=flag: fcv.resize(x, z, interpolation=f)))
    big = rng.integers(0, 256, (300, 400, 3)).astype(np.uint8)       # threads, pooled output
    for dt in (np.uint8, np.float32):
        for size in [(640, 480), (200, 150), (133, 100)]:
            out.append(("fast_resize", f"cv.resize {dt.__name__} big {size}",
                        lambda x=big.astype(dt), z=size: fcv.resize(x, z)))
            out.append(("fast_resize", f"cv.resize {dt.__name__} big crop {size}",
                        lambda x=big.astype(dt)[7:291, 13:388], z=size: fcv.resize(x, z)))
    # the scatter family takes any size: threads without the GIL, pooled outputs (>= 1 MiB)
    for dt in (np.float32, np.int8):
        data = _data(rng, (700, 600), dt)
        for axis, ishape in ((0, (500, 600)), (1, (700, 5)), (1, (700, 600))):
            n = data.shape[axis]
            idx = rng.integers(-n, n, ishape)
            upd = _data(rng, ishape, dt)
            out.append(("fast_gather_elements", f"gather_elements {np.dtype(dt)} big {ishape}",
                        lambda d=data, i=idx, a=axis: fastops.gather_elements(d, i, a)))
            for red in ("none", "add"):
                out.append(("fast_scatter_elements",
                            f"scatter_elements {np.dtype(dt)} big {ishape} {red}",
                            lambda d=data, i=idx, u=upd, a=axis, r=red:
                            fastops.scatter_elements(d, i, u, a, r)))
        rows = _data(rng, (100000, 16), dt)
        tuples = rng.integers(-100000, 100000, (50000, 1))
        upd = _data(rng, (50000, 16), dt)
        out.append(("fast_gather_nd", f"gather_nd {np.dtype(dt)} big",
                    lambda d=rows, i=tuples: fastops.gather_nd(d, i)))
        out.append(("fast_gather_nd", f"gather_nd {np.dtype(dt)} 200 rows of 200",
                    lambda t=dt: fastops.gather_nd(np.ones((2, 200), t),
                                                   np.zeros((200, 1), np.int64))))
        for red in ("none", "add"):
            out.append(("fast_scatter_nd", f"scatter_nd {np.dtype(dt)} big {red}",
                        lambda d=rows, i=tuples, u=upd, r=red: fastops.scatter_nd(d, i, u, r)))
    # gather_elements of a column of row numbers broadcast over every later dimension
    # (at least scatter._ROWS_MIN indices; torch's expand): whole rows, gather_nd's kernel
    for dt in (np.bool_, np.int8, np.float16, np.float32, np.float64, np.complex64):
        for dshape, ishape in (((40, 16, 4, 4), (50, 16, 4, 4)), ((300, 32), (280, 32)),
                               ((7, 1, 3000), (5, 1, 3000))):
            data = _data(rng, dshape, dt)
            for idt in (np.int32, np.int64):
                rows = rng.integers(-dshape[0], dshape[0], ishape[0]).astype(idt)
                idx = np.broadcast_to(rows.reshape((-1,) + (1,) * (len(ishape) - 1)), ishape)
                out.append(("fast_gather_elements",
                            f"gather_elements {np.dtype(dt)} {dshape} rows {np.dtype(idt)}",
                            lambda d=data, i=idx: fastops.gather_elements(d, i, 0)))
    # fastops.resize: a call whose plan the general path filed (the first call here, made
    # through the undecorated function so that only the second is offered to fast paths)
    for dt in (np.uint8, np.int8, np.int32, np.int64, np.float32, np.float64):
        for shape, scales, sizes, kw in [
                ((1, 3, 8, 8), np.array([1, 1, 2, 2], np.float32), None, {"mode": "linear"}),
                ((1, 3, 8, 8), [1.0, 1.0, 0.5, 0.75], None, {"mode": "cubic"}),
                ((2, 5, 7), None, [2, 9, 3], {"mode": "linear", "antialias": True}),
                ((9,), None, (4,), {"mode": "cubic", "exclude_outside": 1,
                                    "cubic_coeff_a": -0.5}),
                ((6, 7, 3), [1.7, 0.6], None, {"axes": (0, 1), "mode": "linear",
                                               "coordinate_transformation_mode":
                                               "align_corners"}),
                ((3, 4, 5), None, [8, 9], {"axes": [-1, 1], "nearest_mode": "ceil"}),
                ((2, 3, 4, 5), [1.0, 1.0, 3.0, 0.4], None,
                 {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
                ((4, 6), None, np.array([3, 3]), {"mode": "linear",
                                                  "keep_aspect_ratio_policy": "not_smaller"})]:
            x = _data(rng, shape, dt)
            out.append(("fast_planned_resize", f"resize {np.dtype(dt)} {shape} {kw}",
                        lambda x=x, s=scales, z=sizes, kw=kw: (
                            fastops.resize.__wrapped__(x, s, z, **kw),
                            fastops.resize(x, s, z, **kw))[1]))
    return out


CASES = _cases()
# bad input that a fast path sees first: it must decline, and the general path raise
BAD = [
    ("topk k > n", lambda: fastops.topk(np.ones((2, 3), np.float32), 4)),
    ("topk axis", lambda: fastops.topk(np.ones((2, 3), np.float32), 1, axis=2)),
    ("cummax axis", lambda: fastops.cummax(np.ones((2, 3), np.float32), -3)),
    ("cummax 0-d", lambda: fastops.cummax(np.float32(1.0).reshape(()), 0)),
    ("cummax bool", lambda: fastops.cummax(np.ones(3, bool), 0)),
    ("cummax huge axis", lambda: fastops.cummax(np.ones(3, np.float32), 2 ** 70)),
    ("gather_elements bad index",
     lambda: fastops.gather_elements(np.ones((4, 4)), np.full((2, 4), 4), 0)),
    ("gather_elements bad index, threads",
     lambda: fastops.gather_elements(np.ones((400, 400)), np.full((400, 400), -401), 0)),
    ("scatter_elements bad index, threads",
     lambda: fastops.scatter_elements(np.ones((400, 400)), np.full((400, 400), 400),
                                      np.ones((400, 400)), 1, "add")),
    ("scatter_nd bad index, threads",
     lambda: fastops.scatter_nd(np.ones((90000, 4)), np.full((9000, 1), 90000),
                                np.ones((9000, 4)))),
    ("gather_nd bad index", lambda: fastops.gather_nd(np.ones((4, 4)), np.array([[1, -5]]))),
    ("scatter_elements bad index",
     lambda: fastops.scatter_elements(np.ones((4, 4)), np.full((2, 4), -5), np.ones((2, 4)))),
    ("scatter_nd bad index",
     lambda: fastops.scatter_nd(np.ones((4, 4)), np.array([[9]]), np.ones((1, 4)))),
    ("scatter_nd bad reduction",
     lambda: fastops.scatter_nd(np.ones((4, 4)), np.array([[1]]), np.ones((1, 4)), "sum")),
    ("instance_norm epsilon", lambda: fastops.instance_norm(
        np.ones((1, 2, 3)), np.ones(2), np.ones(2), -1.0)),
    ("instance_norm scale shape", lambda: fastops.instance_norm(
        np.ones((1, 2, 3)), np.ones(3), np.ones(2))),
    ("grid_sample bicubic 5-D", lambda: fastops.grid_sample(
        np.ones((1, 1, 2, 2, 2), np.float32), np.zeros((1, 1, 1, 1, 3), np.float32),
        "bicubic")),
    ("grid_sample mode", lambda: fastops.grid_sample(
        np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32), "area")),
    ("nms iou", lambda: fastops.nms(np.ones((2, 4), np.float32), np.ones(2, np.float32), 1.5)),
    ("nms score threshold NaN", lambda: fastops.nms(
        np.ones((2, 4), np.float32), np.ones(2, np.float32), 0.5, float("nan"))),
    ("non_max_suppression shapes", lambda: fastops.non_max_suppression(
        np.ones((1, 2, 4), np.float32), np.ones((1, 1, 3), np.float32), 1, 0.5)),
    ("non_max_suppression center", lambda: fastops.non_max_suppression(
        np.ones((1, 2, 4), np.float32), np.ones((1, 1, 2), np.float32), 1, 0.5, None, 2)),
    ("roi_align batch column", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[0.5, 0, 0, 2, 2]], np.float32), 2)),
    ("roi_align batch range", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[1, 0, 0, 2, 2]], np.float32), 2)),
    ("roi_align batch_indices range", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[0, 0, 2, 2]], np.float32), 2,
        batch_indices=np.array([-1]))),
    ("roi_align NaN box", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[0, 0, np.nan, 2, 2]], np.float32), 2)),
    ("roi_align output size", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[0, 0, 0, 2, 2]], np.float32), 0)),
    ("roi_align mode", lambda: fastops.roi_align(
        np.ones((1, 2, 4, 4), np.float32), np.array([[0, 0, 0, 2, 2]], np.float32), 2,
        mode="min")),
    ("cv.resize negative dsize", lambda: fcv.resize(np.ones((4, 4), np.uint8), (-2, 3))),
    ("cv.resize dsize length", lambda: fcv.resize(np.ones((4, 4), np.uint8), (2, 3, 1))),
    ("cv.resize lanczos", lambda: fcv.resize(np.ones((4, 4), np.uint8), (2, 3),
                                                interpolation=4)),
    ("cv.resize bool", lambda: fcv.resize(np.ones((4, 4), bool), (2, 3))),
    ("cv.resize int32", lambda: fcv.resize(np.ones((4, 4), np.int32), (2, 3))),
    ("cv.resize 4-D", lambda: fcv.resize(np.ones((4, 4, 1, 1), np.uint8), (2, 3))),
    ("cv.resize huge dsize", lambda: fcv.resize(np.ones((4, 4), np.uint8), (1 << 40, 3))),
    ("scatter_elements updates dtype",
     lambda: fastops.scatter_elements(np.ones((4, 4)), np.zeros((2, 4), np.int64),
                                      np.ones((2, 4), np.complex64))),
]


def _general_only(monkeypatch):
    monkeypatch.setattr(_dispatch, "fast_path", lambda family, name, *args: None)


def _same(a, b):
    if isinstance(a, tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert type(a) is type(b) is np.ndarray
    assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous
    assert a.tobytes() == b.tobytes()


def _spy(monkeypatch):
    """Records (name, whether it returned a result) for every fast path offered a call;
    a second offer with the call's small views copied (fast_path_of_copies) is recorded
    as (name + " copies", ...)."""
    seen = []
    real, real_copies = _dispatch.fast_path, _dispatch.fast_path_of_copies
    copying = []

    def spying(family, name, *args):
        r = real(family, name, *args)
        seen.append((name + " copies" if copying else name, r is not None))
        return r

    def spying_copies(*args):
        copying.append(True)
        try:
            return real_copies(*args)
        finally:
            copying.pop()
    monkeypatch.setattr(_dispatch, "fast_path", spying)
    monkeypatch.setattr(_dispatch, "fast_path_of_copies", spying_copies)
    return seen


@pytest.mark.parametrize("name,label,call", CASES, ids=[c[1] for c in CASES])
def test_fast_equals_general(monkeypatch, name, label, call):
    seen = _spy(monkeypatch)
    fast = call()
    assert seen == [(name, True)], f"{label}: the fast path was not taken ({seen})"
    monkeypatch.undo()
    _general_only(monkeypatch)
    _same(fast, call())


@pytest.mark.parametrize("label,call", BAD, ids=[b[0] for b in BAD])
def test_bad_input_same_error(monkeypatch, label, call):
    with pytest.raises(Exception) as fast:
        call()
    _general_only(monkeypatch)
    with pytest.raises(Exception) as general:
        call()
    assert type(fast.value) is type(general.value)
    assert str(fast.value) == str(general.value)


class _Sub(np.ndarray):
    pass


def _declined_inputs():
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    swapped = x.astype(x.dtype.newbyteorder())
    return [
        ("byte-swapped", swapped),
        ("float16", x.astype(np.float16)),
        ("subclass", x.view(_Sub)),
        ("list", x.tolist()),
        ("large", np.ones(40000, np.float32)),
        ("empty", np.ones((0, 8), np.float32)),
    ]


def _view_calls():
    """(label, call, views): calls whose array inputs include small views (strided,
    reversed, Fortran order, a channel, a crop), which the fast paths take as C-contiguous
    copies (fastops._dispatch.fast_path_of_copies); ``views`` are those inputs."""
    rng = np.random.default_rng(11)
    x = _data(rng, (6, 16), np.float32)
    img = _data(rng, (2, 3, 10, 12), np.float32)
    boxes = np.sort(rng.random((12, 6)).astype(np.float32) * 30, axis=1)
    rois = np.array([[0, 1, 1, 7, 8, 9], [1, 0, 2, 5, 9, 0]], np.float32)
    idx = rng.integers(0, 6, (6, 16))
    grid = rng.uniform(-1.1, 1.1, (2, 5, 4, 2)).astype(np.float32)
    cases = [("cummax strided", lambda v: fastops.cummax(v, 1), [x[:, ::2]]),
             ("cummin F order", lambda v: fastops.cummin(v, 0), [np.asfortranarray(x)]),
             ("topk reversed", lambda v: fastops.topk(v, 3), [x[::-1]]),
             ("topk column slice", lambda v: fastops.topk(v, 2), [x[:, 5:]]),
             ("nonzero strided", lambda v: fastops.nonzero(v), [x[::2, 1::3]]),
             ("gather_elements", lambda d, i: fastops.gather_elements(d, i, 0),
              [x[:, ::2], idx[:, ::2]]),
             ("scatter_elements", lambda d, i, u: fastops.scatter_elements(d, i, u, 1, "add"),
              [x.T, idx[:3].T % 6, x[:3].T]),
             ("gather_nd", lambda d: fastops.gather_nd(d, np.array([[1], [4]])), [x[:, 1::2]]),
             ("instance_norm", lambda v: fastops.instance_norm(
                 v, np.ones(3, np.float32), np.zeros(3, np.float32)), [img[..., ::2]]),
             ("grid_sample", lambda v, g: fastops.grid_sample(v, g), [img[:, :, ::-1], grid[..., ::-1]]),
             ("roi_align", lambda v, r: fastops.roi_align(v, r, 3), [img[..., 1:], rois[:, :5]]),
             ("nms", lambda b: fastops.nms(b, np.ascontiguousarray(boxes[:, 4]), 0.5),
              [boxes[:, :4]]),
             ("resize", lambda v: fastops.resize(v, np.array([1, 1, 2, 2], np.float32),
                                                 mode="linear"), [img[:, :, 1:, 2:]]),
             ("cv.resize channel", lambda v: fcv.resize(v, (7, 5)),
              [np.ascontiguousarray(img[0].transpose(1, 2, 0))[..., :2]])]
    return [(label, (lambda f=f, v=v: f(*v)), v) for label, f, v in cases]


@pytest.mark.parametrize("label,call,views", _view_calls(), ids=[c[0] for c in _view_calls()])
def test_small_views_take_the_fast_path_as_copies(monkeypatch, label, call, views):
    """A small view is offered to the fast path again as a C-contiguous copy (20-40 us of
    the general path's Python saved): the same result as the general path, the inputs
    unchanged, the outputs sharing no memory with them."""
    assert all(not v.flags.c_contiguous for v in views)
    before = [v.copy() for v in views]
    call()                                  # (resize: files the plan its fast path takes)
    seen = _spy(monkeypatch)
    fast = call()
    assert len(seen) == 2 and not seen[0][1] and seen[1][1], (label, seen)
    monkeypatch.undo()
    for b, v in zip(before, views):
        assert b.tobytes() == v.tobytes()
    for out in (fast if isinstance(fast, tuple) else (fast,)):
        assert not any(np.shares_memory(out, v) for v in views)
    _general_only(monkeypatch)
    _same(fast, call())


def test_views_not_copied_for_the_fast_path(monkeypatch):
    """No copy for a view past the size bound, a broadcast (the general path may take it
    as it is), a byte-swapped or unaligned view, or an output (cv.resize's dst)."""
    x = np.random.default_rng(2).standard_normal((300, 300)).astype(np.float32)
    unaligned = np.frombuffer(b"\0" + x[:4, :8].tobytes(), np.float32, offset=1).reshape(4, 8)
    calls = [lambda: fastops.cummax(x[:, ::2], 1),                       # 45000 elements
             lambda: fastops.cummax(np.broadcast_to(x[:1, :8], (4, 8)), 1),
             lambda: fastops.cummax(x[:4, :8].astype(">f4")[:, ::2], 1),
             lambda: fastops.cummax(unaligned[:, ::2], 1),
             lambda: fcv.resize(x[:4, :8], (5, 2), np.zeros((2, 10), np.float32)[:, ::2])]
    seen = _spy(monkeypatch)
    fast = [c() for c in calls]
    assert all(not took for _, took in seen) and all("copies" not in n for n, _ in seen[:4])
    monkeypatch.undo()
    _general_only(monkeypatch)
    for a, c in zip(fast, calls):
        _same(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a, c())


@pytest.mark.parametrize("label,x", _declined_inputs(), ids=[d[0] for d in _declined_inputs()])
def test_declined_inputs_take_the_general_path(monkeypatch, label, x):
    seen = _spy(monkeypatch)
    got = fastops.cummax(x, -1)
    assert seen == [("fast_cumext", False)]
    monkeypatch.undo()
    ref = np.asarray(x)
    vals = np.maximum.accumulate(ref.astype(np.float64), axis=-1).astype(ref.dtype)
    assert np.array_equal(np.asarray(got.values), vals)
    seen = _spy(monkeypatch)
    fastops.topk(x, 1)
    if label != "float16":      # (nonzero takes float16 as 2-byte words)
        fastops.nonzero(x)
    assert all(not took for _, took in seen), seen


def test_uncovered_calls_decline(monkeypatch):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(20, dtype=np.float32).reshape(4, 5)
    h = x.astype(np.float16)
    i = np.array([[0, 1, 2, 0]])
    calls = [lambda: fastops.cummax(x, np.int64(1)),
             lambda: fastops.topk(x, np.array([2])),
             lambda: fastops.topk(x, 2, largest=1),
             lambda: fastops.topk(x, 0),
             lambda: fastops.gather_nd(x, np.array([[1]]), batch_dims=np.int32(0)),
             lambda: fastops.gather_nd(x, np.array([[1], [0], [2]]), batch_dims=1),
             lambda: fastops.nonzero(x.astype(np.complex64)),
             lambda: fastops.nonzero(np.float32(1.0).reshape(())),
             lambda: fastops.scatter_elements(h, i, h[:1], 0, "add"),
             lambda: fastops.scatter_elements(x, i, x[:1].astype(np.float64), 0),
             lambda: fastops.scatter_elements(x, i.astype(np.uint8), x[:1], 0),
             lambda: fastops.gather_elements(x, i[:, :2], 0),        # offset tables
             lambda: fastops.scatter_nd(x > 1, np.array([[1]]), x[:1] > 0, "add"),
             lambda: fastops.instance_norm(h[None], h[:, 0], h[:, 0]),
             lambda: fastops.instance_norm(x[None], x[:, 0], x[:, 0], 1),
             lambda: fastops.grid_sample(x[None, None], np.zeros((1, 2, 2, 2))),
             lambda: fastops.grid_sample(x[None, None], np.zeros((1, 2, 2, 2), np.float32),
                                         "Bilinear"),
             lambda: fastops.grid_sample(x[None, None], np.zeros((1, 2, 2, 2), np.float32),
                                         1),
             lambda: fastops.nms(x[:, :4].copy(), x[:, 0].copy(), 0.5, max_num=0),
             lambda: fastops.nms(x[:, :4].copy(), x[:, 0].astype(np.float64), 0.5),
             lambda: fastops.nms(x[:, :4].copy(), x[:, 0].copy(), 1),
             lambda: fastops.deform_conv2d(x[None, None], np.zeros((1, 2, 3, 4), np.float32),
                                           np.ones((1, 1, 1, 1), np.float32), stride=[1, 1]),
             lambda: fastops.deform_conv2d(x[None, None], np.zeros((1, 2, 3, 4)),
                                           np.ones((1, 1, 1, 1))),               # float64
             lambda: fastops.deform_conv2d(x[None, None], np.zeros((1, 2, 3, 4), np.float32),
                                           np.ones((1, 1, 1, 1), np.float32), padding=np.int64(0)),
             lambda: fastops.batched_nms(x[:, :4].copy(), x[:, 0].copy(), i[0, :3], 1),
             lambda: fastops.batched_nms(x[:, :4].copy(), x[:, 0].copy(),
                                         i[0, :3].astype(np.int32), 0.5),
             lambda: fastops.batched_nms(x[:, :4].copy(), x[:, 0].astype(np.float64),
                                         i[0, :3], 0.5),
             lambda: fastops.non_max_suppression(x[None, :, :4].copy(), x[None, None, :, 0].copy(),
                                                 2, 0.5, pad=True),
             lambda: fastops.non_max_suppression(x[None, :, :4].copy(), x[None, None, :, 0].copy(),
                                                 0, 0.5),
             lambda: fastops.roi_align(x[None, None], np.array([[0, 0, 0, 2, 2]]), 2),
             lambda: fastops.roi_align(x[None, None], np.array([[0, 0, 2, 2]], np.float32), 2,
                                       batch_indices=np.array([0], np.int32)),
             lambda: fastops.roi_align(x[None, None], np.array([[0, 0, 0, 2, 2]], np.float32),
                                       2, np.float32(0.5)),
             lambda: fastops.roi_align(x[None, None], np.array([[0, 0, 0, 2, 2]], np.float32),
                                       [2, 2]),
             lambda: fastops.grid_sample(x[None, None], np.zeros((1, 200, 200, 2),
                                                                 np.float32)),
             lambda: np.ascontiguousarray(                                # dst: strided,
                 fcv.resize(x, (5, 2), np.zeros((2, 10), np.float32)[:, ::2])),
             lambda: (lambda y: fcv.resize(y, (5, 2), y[:2]))(y.copy()),   # overlapping img,
             lambda: fcv.resize(x, (5, 2), np.zeros((2, 5))),             # float64 (unused),
             lambda: fcv.resize(x, (5, 2), np.zeros((2, 5, 1), np.float32)),  # 3-D for 2-D
             lambda: fcv.resize(x, (5, 2), interpolation=fcv.INTER_LINEAR_EXACT),
             lambda: fcv.resize(x, None, fx=2.0, fy=2.0),                 # fx / fy
             lambda: fcv.resize(x, (np.int64(5), 2)),                     # NumPy ints
             lambda: fcv.resize(x, (5, 2), interpolation=np.int32(1)),
             lambda: fcv.resize(x, (4, 3)),                               # equal size: copy
             lambda: fcv.resize(x, (3, 2), interpolation=fcv.INTER_AREA),  # area tables
             lambda: fcv.resize(x.astype(np.float16), (5, 2)),
             lambda: fcv.resize(x.astype(x.dtype.newbyteorder()), (5, 2))]
    seen = _spy(monkeypatch)
    fast = [c() for c in calls]
    # (views among the arguments are offered again as copies: declined too)
    assert len([n for n, _ in seen if "copies" not in n]) == len(calls), seen
    assert not any(took for _, took in seen), seen
    monkeypatch.undo()
    _general_only(monkeypatch)
    for a, c in zip(fast, calls):
        _same(a, c())


def test_inputs_unchanged_and_outputs_fresh():
    rng = np.random.default_rng(3)
    for name, label, call in CASES[::37]:
        before = [c.cell_contents.copy() for c in (call.__closure__ or ())
                  if isinstance(getattr(c, "cell_contents", None), np.ndarray)]
        call()
        after = [c.cell_contents for c in (call.__closure__ or ())
                 if isinstance(getattr(c, "cell_contents", None), np.ndarray)]
        for b, a in zip(before, after):
            assert b.tobytes() == a.tobytes(), label
    x = rng.standard_normal(10).astype(np.float32)
    assert not np.shares_memory(fastops.cummax(x, 0).values, x)


def test_every_fast_path_has_cases():
    covered = {c[0] for c in CASES}
    found = set()
    for mod in pkgutil.iter_modules(fastops._cpu.__path__):
        if mod.ispkg or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"fastops._cpu.{mod.name}")
        names = {n for n in dir(module) if n.startswith("fast_")}
        assert not names & found, f"fast path names must be unique ({_dispatch.fast_path})"
        found |= names
    assert found, "no fast paths found"
    assert found <= covered, f"fast paths without equivalence cases: {sorted(found - covered)}"


# ------------------------------------------------ resize's plan cache (host calls)
def _resize_calls():
    from fastops import resample as rs
    rng = np.random.default_rng(11)
    x8 = rng.integers(0, 255, (1, 3, 7, 9)).astype(np.uint8)
    xf = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    xh = xf.astype(np.float16)
    x3 = rng.standard_normal((4, 5, 6)).astype(np.float64)
    calls = []
    for x in (x8, xf, xh):
        for mode in ("nearest", "linear", "cubic"):
            calls += [lambda x=x, m=mode: fastops.resize(x, np.array([1, 1, 2, 1.5], np.float32),
                                                         mode=m),
                      lambda x=x, m=mode: fastops.resize(x, sizes=[1, 3, 4, 11], mode=m,
                                                         antialias=True),
                      lambda x=x, m=mode: fastops.resize(x, scales=(0.5, 0.7), axes=(2, 3),
                                                         mode=m, exclude_outside=True)]
    calls += [lambda: fastops.resize(x3, [2, 0.5, 1.5], mode="linear"),         # 3 axes
              lambda: fastops.resize(x3, sizes=np.array([4, 7]), axes=[-1, 0]),
              lambda: fastops.resize(xf, sizes=[3, 3], axes=[2, 3],
                                     keep_aspect_ratio_policy="not_larger"),
              lambda: fastops.resize(xf, [1, 1, 1.0, 1.0]),                     # identity
              lambda: fastops.resize(xf, [1, 1, 0.1, 1.0]),                     # empty
              lambda: fastops.resize(x8, [2, 2], mode="linear",
                                     coordinate_transformation_mode="tf_crop_and_resize",
                                     roi=[0.1, 0.2, 0.8, 0.9], axes=[2, 3],
                                     extrapolation_value=7.0)]
    return rs, calls


def test_resize_plan_cache_hits_equal_uncached_calls(monkeypatch):
    rs, calls = _resize_calls()
    rs._PLANS.clear()
    first = [c() for c in calls]                  # misses: plans made and filed
    assert rs._PLANS, "no plan was cached"
    hits = [c() for c in calls]
    monkeypatch.setattr(rs, "_plan_key", lambda x, args: None)
    _general_only(monkeypatch)
    uncached = [c() for c in calls]
    for a, b, c in zip(first, hits, uncached):
        _same(a, b)
        _same(a, c)


def test_resize_plan_keys_keep_types_and_values():
    from fastops import resample as rs
    x = np.ones((1, 1, 4, 4), np.float32)
    assert fastops.resize(x, sizes=[1, 1, 2, 2]).shape == (1, 1, 2, 2)
    with pytest.raises(TypeError):                # [2.0] == [2], but sizes must be integers
        fastops.resize(x, sizes=[1.0, 1.0, 2.0, 2.0])
    scales = np.array([1, 1, 2, 2], np.float32)
    assert fastops.resize(x, scales).shape == (1, 1, 8, 8)
    scales[2:] = 0.5                              # the same array, new values: a new plan
    assert fastops.resize(x, scales).shape == (1, 1, 2, 2)
    assert scales.tolist() == [1, 1, 0.5, 0.5]    # never modified
    for i in range(100):
        fastops.resize(x, sizes=[1, 1, 2, i + 1])
    assert len(rs._PLANS) <= rs._CACHE_ENTRIES
    # arguments the key cannot hold cheaply are planned every call, not cached
    assert rs._plan_key(x, (np.zeros(100), None)) is None
    assert rs._plan_key(x, (np.array([1, 2], object), None)) is None
    assert rs._plan_key(x, ([[1, 2]], None)) is None


def test_planned_resize_declines_what_one_pass_does_not_cover(monkeypatch):
    """fast_planned_resize takes a filed plan only where its one pass is the whole call and
    the call is small; the rest (primed here, so that a plan exists) go the general way."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    s2 = [1.0, 1.0, 2.0, 2.0]
    calls = [(x.astype(np.float16), s2, {"mode": "linear"}),         # computed in float32
             (x, None, {"sizes": [4, 4], "mode": "linear", "roi": [0.1, 0.2, 0.9, 0.8],
                        "axes": [2, 3]}),                           # (roi unused: a pass)
             (x, [2.0, 0.5], {"axes": [2, 3], "roi": [0.1, 0.2, 0.9, 0.8], "mode": "linear",
                              "coordinate_transformation_mode": "tf_crop_and_resize"}),
             (x, [1.0, 1.0, 3.0, 0.5], {"exclude_outside": True,
                                        "coordinate_transformation_mode": "asymmetric"}),
             (x.astype(x.dtype.newbyteorder()), s2, {}),            # byte-swapped
             (x, [1.0, 2.0, 2.0, 2.0], {"mode": "linear"}),         # three axes: a chain
             (x, [1.0, 1.0, 1.0, 1.0], {}),                         # identity: a copy
             (x, [1.0, 1.0, 0.1, 1.0], {}),                         # empty output
             (x, [1.0, 1.0, 60.0, 60.0], {"mode": "linear"}),       # output > kParallelGrain
             (np.ones((4, 100, 100), np.float32), [1.0, 0.5, 0.5], {})]   # input > it
    expect = [False, True, False, False, False, False, False, False, False, False]
    for (a, sc, kw) in calls:
        fastops.resize.__wrapped__(a, sc, **kw)           # files the plan
    seen = _spy(monkeypatch)
    fast = [fastops.resize(a, sc, **kw) for a, sc, kw in calls]
    assert [took for _, took in seen] == expect, seen
    monkeypatch.undo()
    _general_only(monkeypatch)
    for f, (a, sc, kw) in zip(fast, calls):
        _same(f, fastops.resize(a, sc, **kw))


def test_broadcast_row_gathers_decline_what_is_not_whole_rows(monkeypatch):
    """fast_gather_elements' broadcast-row branch takes axis 0 of a contiguous column of
    row numbers spread over data's later dimensions whole; the rest go the general way
    (which may move rows too), with the same result and the same error."""
    rng = np.random.default_rng(9)
    data = _data(rng, (60, 16, 4, 4), np.float32)
    rows = rng.integers(-60, 60, 128)
    col = rows.reshape(-1, 1, 1, 1)
    spread = (128, 16, 4, 4)
    per_c = rng.integers(0, 4, (128, 16, 1, 1))          # not one index per row
    calls = [lambda: fastops.gather_elements(data, np.broadcast_to(col[:60] % 16, data.shape),
                                             1),                      # axis 1
             lambda: fastops.gather_elements(data, np.broadcast_to(col[:8], (8, 16, 4, 4)), 0),
             lambda: fastops.gather_elements(data, np.broadcast_to(col[::2], (64, 16, 4, 4)),
                                             0),                      # strided column
             lambda: fastops.gather_elements(data, np.broadcast_to(col, (128, 8, 4, 4)), 0),
             lambda: fastops.gather_elements(data, np.broadcast_to(col.astype(">i8"), spread),
                                             0),                      # byte-swapped
             lambda: fastops.gather_elements(data[..., ::-1], np.broadcast_to(col, spread), 0),
             lambda: fastops.gather_elements(data, np.broadcast_to(per_c, spread), 0),
             lambda: fastops.gather_elements(data, np.broadcast_to(col[:1], spread), 0)]
    seen = _spy(monkeypatch)
    fast = [c() for c in calls]
    firsts = [s for s in seen if s[0] == "fast_gather_elements"]
    assert firsts == [("fast_gather_elements", False)] * len(calls), seen
    monkeypatch.undo()
    _general_only(monkeypatch)
    for a, c in zip(fast, calls):
        _same(a, c())
    bad = np.broadcast_to(np.where(np.arange(128) == 77, 60, rows).reshape(-1, 1, 1, 1), spread)
    with pytest.raises(IndexError, match=r"indices\[77, 0, 0, 0\] = 60"):
        fastops.gather_elements(data, bad, 0)
