"""The seed ops of the ai.onnx domain on fastops kernels, in every opset version the
installed onnx defines.

Each builder imports its fastops module when the model is loaded; if that module is
missing or broken, the builder raises Unsupported and the node runs on onnx.reference
(listed in the load warning).  Attribute defaults and input layouts per version:

==================  ==================================================================
TopK 1/10/11/24     1: ``k`` attribute; 10: K input, largest/sorted fixed to 1; 11+:
                    largest, sorted
Scatter 9/11,       fastops.scatter / scatter_elements (reduction from 16: none, add,
ScatterElements     mul; 18: max, min)
ScatterND 11-18     fastops.scatter_nd, same reductions
GatherElements,     fastops.gather_elements / gather_nd (batch_dims from 12)
GatherND
NonMaxSuppression   fastops.non_max_suppression; omitted max_output_boxes_per_class
10/11               selects nothing (ONNX), a negative one too (as ONNX Runtime)
RoiAlign 10         aligned=False (no half-pixel shift: the opset-10 rule; onnx.reference
                    1.22 wrongly applies opset 16's default)
RoiAlign 16/22      coordinate_transformation_mode half_pixel (default) -> aligned=True,
                    output_half_pixel -> aligned=False; mode max -> "onnx_max"
Resize 10,          asymmetric coordinates; nearest rounds down when upscaling and up
Upsample 7/9        when downscaling an axis (ONNX Runtime's rule for these versions);
                    "bilinear"/"linear" -> linear
Resize 11-19        every attribute as fastops.resize; empty scales/sizes = omitted
NonZero 9/13        fastops.nonzero
GridSample 16/20/22 fastops.grid_sample (both mode spellings)
Instance-           fastops.instance_norm
Normalization
DeformConv 19/22    fastops.deform_conv2d (2-D; other ranks run on onnx.reference)
==================  ==================================================================
"""
import warnings

import numpy as np

from fastops.onnx._registry import Unsupported, floats, host, ints, kernel


def _fastops(module, name):
    """fastops.<module>.<name>, or Unsupported if that module does not import."""
    import importlib
    try:
        mod = importlib.import_module("fastops." + module)
        return getattr(mod, name)
    except Exception as exc:     # missing or broken: fall back, never fail the load
        raise Unsupported(f"fastops.{module}.{name} is unavailable ({type(exc).__name__}: "
                          f"{exc})") from None


def _empty(t):
    return t is None or getattr(t, "size", 1) == 0


@kernel("TopK", multi=True)
def _topk(n):
    topk = _fastops("selection", "topk")
    axis = n.attr("axis", -1)
    if n.version < 10:
        k = n.attr("k")
        return lambda x: tuple(topk(x, k, axis, True, True))
    largest = bool(n.attr("largest", 1)) if n.version >= 11 else True
    sort = bool(n.attr("sorted", 1)) if n.version >= 11 else True
    return lambda x, k: tuple(topk(x, k, axis, largest, sort))


@kernel("Scatter")
def _scatter(n):
    f = _fastops("scatter", "scatter_elements")
    axis = n.attr("axis", 0)
    if 0 in n.donated:      # data is this node's alone (compiler DONATING): no copy
        g = _fastops("scatter", "_scatter_elements")
        return lambda data, idx, upd: g("scatter", data, idx, upd, axis, "none", True)
    return lambda data, idx, upd: f(data, idx, upd, axis)


@kernel("ScatterElements")
def _scatter_elements(n):
    f = _fastops("scatter", "scatter_elements")
    axis = n.attr("axis", 0)
    red = n.attr("reduction", "none")
    if 0 in n.donated:      # data is this node's alone (compiler DONATING): no copy
        g = _fastops("scatter", "_scatter_elements")
        return lambda data, idx, upd: g("scatter_elements", data, idx, upd, axis, red, True)
    return lambda data, idx, upd: f(data, idx, upd, axis, red)


@kernel("ScatterND")
def _scatter_nd(n):
    f = _fastops("scatter", "scatter_nd")
    red = n.attr("reduction", "none")
    return lambda data, idx, upd: f(data, idx, upd, red)


@kernel("GatherElements")
def _gather_elements(n):
    f = _fastops("scatter", "gather_elements")
    axis = n.attr("axis", 0)
    return lambda data, idx: f(data, idx, axis)


@kernel("GatherND")
def _gather_nd(n):
    f = _fastops("scatter", "gather_nd")
    bd = n.attr("batch_dims", 0)
    return lambda data, idx: f(data, idx, bd)


@kernel("NonZero")
def _nonzero(n):
    return _fastops("selection", "nonzero")


# Exporters run class-aware NMS as one NonMaxSuppression over boxes shifted apart per
# class (torchvision's batched_nms coordinate trick: SSD gives one call over 27 000
# boxes).  Greedy NMS costs O(boxes x kept) there, although boxes of different classes
# never overlap.  Boxes whose intervals along one axis are disjoint never suppress each
# other (IoU needs a non-empty intersection on both axes), so the call is split into
# clusters of overlapping intervals and run as one fastops.batched_nms with the cluster as
# the class: the same boxes in the same order, at the cost of the clusters.  Clusters are
# merged generously (a margin of 1e-6 of the coordinate range), which can only make them
# larger, never change the result.  Used for one (batch, class) of at least
# _CLUSTER_MIN_BOXES corner-format boxes on the CPU, when it finds >= 4 clusters.
_CLUSTER_MIN_BOXES = 2048


def _interval_clusters(lo, hi):
    """Cluster ids (int64) of intervals [lo, hi]: intervals in one cluster overlap in a
    chain, intervals in different clusters are separated by a gap."""
    order = np.argsort(lo, kind="stable")
    lo_s, hi_s = lo[order], hi[order]
    margin = 1e-6 * max(float(np.abs(lo_s).max()), float(np.abs(hi_s).max()), 1.0)
    reach = np.maximum.accumulate(hi_s)
    starts = np.empty(lo_s.shape, dtype=np.int64)
    starts[0] = 0
    starts[1:] = lo_s[1:] > reach[:-1] + margin
    ids = np.empty(lo.shape, dtype=np.int64)
    ids[order] = np.cumsum(starts)
    return ids


def _clustered_nms(batched, boxes, scores, m, thr, sthr):
    """None when clustering does not apply (the caller runs the plain kernel)."""
    b = boxes[0]
    s = scores[0, 0]
    if not np.isfinite(b).all() or (sthr is not None and sthr != sthr):
        return None
    cand = ~np.isnan(s)
    if sthr is not None:
        cand &= s > np.float32(sthr) if s.dtype != np.float64 else s > sthr
    idx = np.flatnonzero(cand)
    if idx.size < _CLUSTER_MIN_BOXES:
        return None
    bb = b[idx]
    # corners in either order: [y1, x1, y2, x2]; the first axis is enough
    ids = _interval_clusters(np.minimum(bb[:, 0], bb[:, 2]), np.maximum(bb[:, 0], bb[:, 2]))
    if ids[-1:].size and int(ids.max()) < 3:
        return None
    keep = batched(bb, s[idx], ids, thr)[:m]
    out = np.zeros((keep.shape[0], 3), dtype=np.int64)
    out[:, 2] = idx[keep]
    return out


@kernel("NonMaxSuppression")
def _nms(n):
    f = _fastops("detection", "non_max_suppression")
    batched = _fastops("detection", "batched_nms")
    cpb = n.attr("center_point_box", 0)
    xp = n.xp

    def run(boxes, scores, max_out=None, iou=None, score_thr=None):
        m = 0 if _empty(max_out) else int(host(max_out).reshape(-1)[0])
        if m <= 0:
            return xp.empty((0, 3), dtype=np.int64)
        thr = 0.0 if _empty(iou) else float(host(iou).reshape(-1)[0])
        sthr = None if _empty(score_thr) else float(host(score_thr).reshape(-1)[0])
        if (xp is np and cpb == 0 and boxes.ndim == 3 and scores.ndim == 3
                and boxes.shape[0] == 1 and scores.shape[:2] == (1, 1)
                and boxes.shape[1] == scores.shape[2] and boxes.shape[2] == 4
                and boxes.shape[1] >= _CLUSTER_MIN_BOXES and 0.0 <= thr <= 1.0
                and boxes.dtype.kind == "f" and scores.dtype.kind == "f"):
            out = _clustered_nms(batched, boxes, scores, m, thr, sthr)
            if out is not None:
                return out
        return f(boxes, scores, m, thr, sthr, cpb)
    return run


@kernel("RoiAlign")
def _roi_align(n):
    f = _fastops("detection", "roi_align")
    mode = n.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise Unsupported(f"RoiAlign mode {mode!r}")
    mode = "onnx_max" if mode == "max" else "avg"
    if n.version < 16:
        aligned = False
    else:
        ctm = n.attr("coordinate_transformation_mode", "half_pixel")
        if ctm not in ("half_pixel", "output_half_pixel"):
            raise Unsupported(f"coordinate_transformation_mode {ctm!r}")
        aligned = ctm == "half_pixel"
    size = (n.attr("output_height", 1), n.attr("output_width", 1))
    sr = n.attr("sampling_ratio", 0)
    scale = n.attr("spatial_scale", 1.0)
    return lambda x, rois, bi: f(x, rois, size, scale, sr, mode, aligned, bi)


def _resize_legacy(resize, x, scales, mode):
    """Resize 10 / Upsample 7, 9: asymmetric; nearest floors upscaled axes and ceils
    downscaled ones (ONNX Runtime's rule for these versions); separable, so mixed axes
    run in two passes."""
    mode = {"bilinear": "linear"}.get(mode, mode)
    if mode not in ("nearest", "linear"):
        raise ValueError(f"Resize/Upsample (opset <= 10): mode {mode!r} is not nearest or "
                         f"linear")
    if mode == "linear":
        return resize(x, scales=scales, mode="linear",
                      coordinate_transformation_mode="asymmetric")
    up = [a for a, s in enumerate(scales) if s >= 1]
    down = [a for a, s in enumerate(scales) if s < 1]
    y = x
    for axes, rounding in ((up, "floor"), (down, "ceil")):
        if axes:
            y = resize(y, scales=[scales[a] for a in axes], mode="nearest",
                       coordinate_transformation_mode="asymmetric", nearest_mode=rounding,
                       axes=axes)
    return y


@kernel("Resize")
def _resize(n):
    resize = _fastops("resample", "resize")
    mode = n.attr("mode", "nearest")
    if n.version < 11:
        return lambda x, scales: _resize_legacy(resize, x, floats(scales), mode)
    kw = dict(mode=mode,
              coordinate_transformation_mode=n.attr("coordinate_transformation_mode",
                                                    "half_pixel"),
              nearest_mode=n.attr("nearest_mode", "round_prefer_floor"),
              cubic_coeff_a=n.attr("cubic_coeff_a", -0.75),
              exclude_outside=n.attr("exclude_outside", 0),
              extrapolation_value=n.attr("extrapolation_value", 0.0))
    if n.version >= 18:
        kw.update(antialias=n.attr("antialias", 0), axes=n.attr("axes"),
                  keep_aspect_ratio_policy=n.attr("keep_aspect_ratio_policy", "stretch"))

    def run(x, roi=None, scales=None, sizes=None):
        sc = None if _empty(scales) else floats(scales)
        sz = None if _empty(sizes) else ints(sizes)
        r = None if _empty(roi) else floats(roi)
        return resize(x, sc, sz, roi=r, **kw)
    return run


@kernel("Upsample")
def _upsample(n):
    resize = _fastops("resample", "resize")
    mode = n.attr("mode", "nearest")
    if n.version < 7:
        hs, ws = n.attr("height_scale"), n.attr("width_scale")
        return lambda x: _resize_legacy(resize, x, [1.0, 1.0, hs, ws], mode)
    if n.version < 9:
        scales = n.attr("scales")
        return lambda x: _resize_legacy(resize, x, scales, mode)
    return lambda x, scales: _resize_legacy(resize, x, floats(scales), mode)


@kernel("GridSample")
def _grid_sample(n):
    f = _fastops("sampling", "grid_sample")
    mode = n.attr("mode", "bilinear" if n.version < 20 else "linear")
    pad = n.attr("padding_mode", "zeros")
    ac = bool(n.attr("align_corners", 0))
    return lambda x, grid: f(x, grid, mode, pad, ac)


@kernel("InstanceNormalization")
def _instance_norm(n):
    f = _fastops("norm", "instance_norm")
    eps = n.attr("epsilon", 1e-5)
    return lambda x, s, b: f(x, s, b, eps)


@kernel("DeformConv")
def _deform_conv(n):
    f = _fastops("conv", "deform_conv2d")
    ks = n.attr("kernel_shape")
    if ks is not None and len(ks) != 2:
        raise Unsupported("DeformConv other than 2-D")
    strides = n.attr("strides", [1, 1])
    dil = n.attr("dilations", [1, 1])
    pads = n.attr("pads", [0, 0, 0, 0])
    group = n.attr("group", 1)
    og = n.attr("offset_group", 1)
    fallback = []

    def run(x, w, offset, b=None, mask=None):
        if x.ndim != 4:           # N-D DeformConv: onnx.reference (built on first use)
            if not fallback:
                from fastops.onnx._reference import reference_callable
                warnings.warn(f"fastops.onnx: {n.where()} is {x.ndim - 2}-D; it runs on "
                              f"onnx.reference", stacklevel=2)
                fallback.append(reference_callable(n))
            return fallback[0](x, w, offset, b, mask)[0]
        return f(x, offset, w, b, strides, pads, dil, group, og, mask)
    return run
