"""The MMCV custom-op domain (``mmcv::``, also ``mmdeploy::`` as mmdeploy's default
symbolics write it), with MMCV's conventions.

Attribute names follow MMCV's and mmdeploy's symbolic functions (what exported graphs
contain) and MMCV's op definitions (docs/en/deployment/mmcv_ops_definition.md); where
they disagree both spellings are read:

=============================  ============================================================
MMCVRoiAlign / MMCVRoIAlign    output_height, output_width (1), spatial_scale (1.0),
                               sampling_ratio (0), mode "avg"/"max" (MMCV max: the max of
                               the bilinear samples), aligned (1); rois (K, 5)
NonMaxSuppression              center_point_box (0), max_output_boxes_per_class (0 = all
                               N), iou_threshold (0), score_threshold (only > 0 filters,
                               as MMCV's kernel), offset (0); int32 (B*C*min(max, N), 3),
                               selected rows first, the rest -1
MMCVDeformConv2d               inputs (x, offset, weight); stride, padding, dilation
                               (pairs; mmdeploy's 4-value padding [ph, ph, pw, pw]),
                               groups/group, deform_groups/deformable_groups/
                               deformable_group; bias and im2col_step ignored
MMCVModulatedDeformConv2d      inputs (x, offset, mask, weight[, bias]); same attributes
grid_sampler                   interpolation_mode 0/1/2 (bilinear/nearest/bicubic),
                               padding_mode 0/1/2 (zeros/border/reflection), align_corners
cummax / cummin                dim; outputs (values, int32 indices), torch's tie and NaN
                               rules
MMCVInstanceNormalization      epsilon (1e-5); inputs (x, scale, B)
ScatterND                      ONNX ScatterND without reduction (MMCV's TensorRT plugin)
=============================  ============================================================
"""
import numpy as np

from fastops.onnx._registry import Unsupported, kernel
from fastops.onnx._seed import _fastops


def _pair(n, name, default):
    v = n.attr(name)
    if v is None:
        return default
    if isinstance(v, int):
        return (v, v)
    v = list(v)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) == 2:
        return tuple(v)
    if len(v) == 4 and name == "padding":     # mmdeploy: zip(padding, padding) flattened
        return (v[0], v[2])
    raise Unsupported(f"{name}={v}")


def _first(n, names, default):
    for name in names:
        if name in n.attrs:
            return n.attrs[name]
    return default


@kernel("MMCVRoiAlign", "MMCVRoIAlign", domain="mmcv")
def _roi_align(n):
    f = _fastops("detection", "roi_align")
    size = (n.attr("output_height", 1), n.attr("output_width", 1))
    scale = n.attr("spatial_scale", 1.0)
    sr = n.attr("sampling_ratio", 0)
    mode = n.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ValueError(f"{n.where()}: mode {mode!r} is not 'avg' or 'max'")
    aligned = bool(n.attr("aligned", 1))
    return lambda x, rois: f(x, rois, size, scale, sr, mode, aligned)


@kernel("NonMaxSuppression", domain="mmcv")
def _nms(n):
    f = _fastops("detection", "non_max_suppression")
    cpb = n.attr("center_point_box", 0)
    max_out = n.attr("max_output_boxes_per_class", 0)
    iou = n.attr("iou_threshold", 0.0)
    sthr = n.attr("score_threshold", 0.0)
    offset = n.attr("offset", 0)

    def run(boxes, scores):
        count = boxes.shape[1]
        m = count if max_out <= 0 else min(max_out, count)
        sel = f(boxes, scores, m, iou, sthr if sthr > 0 else None, cpb, offset, pad=True)
        return sel.astype(np.int32)
    return run


def _deform_attrs(n):
    return dict(stride=_pair(n, "stride", (1, 1)), padding=_pair(n, "padding", (0, 0)),
                dilation=_pair(n, "dilation", (1, 1)),
                groups=_first(n, ("groups", "group"), 1),
                deform_groups=_first(n, ("deform_groups", "deformable_groups",
                                         "deformable_group"), 1))


@kernel("MMCVDeformConv2d", domain="mmcv")
def _deform_conv(n):
    f = _fastops("conv", "deform_conv2d")
    a = _deform_attrs(n)
    return lambda x, offset, w: f(x, offset, w, None, **a)


@kernel("MMCVModulatedDeformConv2d", domain="mmcv")
def _mdeform_conv(n):
    f = _fastops("conv", "modulated_deform_conv2d")
    a = _deform_attrs(n)
    return lambda x, offset, mask, w, b=None: f(x, offset, mask, w, b, **a)


@kernel("grid_sampler", domain="mmcv")
def _grid_sampler(n):
    f = _fastops("sampling", "grid_sample")
    mode = n.attr("interpolation_mode", 0)
    pad = n.attr("padding_mode", 0)
    ac = bool(n.attr("align_corners", 0))
    return lambda x, grid: f(x, grid, mode, pad, ac)


def _cum(n, name):
    f = _fastops("selection", name)
    dim = n.attr("dim", 0)

    def run(x):
        values, indices = f(x, dim)
        return values, indices.astype(np.int32)
    return run


@kernel("cummax", domain="mmcv", multi=True)
def _cummax(n):
    return _cum(n, "cummax")


@kernel("cummin", domain="mmcv", multi=True)
def _cummin(n):
    return _cum(n, "cummin")


@kernel("MMCVInstanceNormalization", domain="mmcv")
def _instance_norm(n):
    f = _fastops("norm", "instance_norm")
    eps = n.attr("epsilon", 1e-5)
    return lambda x, s, b: f(x, s, b, eps)


@kernel("ScatterND", domain="mmcv")
def _scatter_nd(n):
    f = _fastops("scatter", "scatter_nd")
    return lambda data, idx, upd: f(data, idx, upd)
