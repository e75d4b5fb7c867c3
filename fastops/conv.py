"""Convolution ops: deform_conv2d and modulated_deform_conv2d (kernels in the
"deform_conv" family)."""
import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, IntScalar, Optional, Sequence, Union

# Kernels: fastops._cpu.deform_conv / fastops._gpu.deform_conv, both with
#   deform_conv2d(x (N,C,H,W), offset (N,2*dg*kh*kw,OH,OW), mask (N,dg*kh*kw,OH,OW) or None,
#                 weight (M,C/groups,kh,kw), bias (M,) or None, stride_h, stride_w,
#                 pad_top, pad_left, dil_h, dil_w, groups, deform_groups, out (N,M,OH,OW))
#   every array in the compute dtype (float32 or float64), any element strides except
#   out (contiguous, non-empty).  Sizes are computed and checked here with exact integers.

# Padded extents and every int64 coordinate the kernels form (oy * stride - pad + i * dil)
# stay below this, so no kernel arithmetic can overflow.
_EXTENT_MAX = 1 << 62

IntPair = Union[IntScalar, Sequence[IntScalar]]


def _ints(op, name, value, lengths, lo):
    """An int or a sequence (list, tuple, 1-D array) of ints of one of ``lengths``."""
    if isinstance(value, (list, tuple)) or (hasattr(value, "shape") and
                                            len(getattr(value, "shape", ())) == 1):
        items = list(value)
        if len(items) not in lengths:
            want = " or ".join(str(n) for n in lengths)
            raise ValueError(f"{op}: {name} must be an int or a sequence of {want} ints, "
                             f"got {len(items)} values")
        return tuple(_validate.integer(op, f"{name}[{i}]", v, lo=lo)
                     for i, v in enumerate(items))
    return (_validate.integer(op, name, value, lo=lo),)


def _pair(op, name, value, lo):
    v = _ints(op, name, value, (1, 2), lo)
    return (v[0], v[0]) if len(v) == 1 else v


def _pads(op, padding):
    """(top, left, bottom, right) from an int, (pad_h, pad_w) or ONNX's
    (h_begin, w_begin, h_end, w_end)."""
    v = _ints(op, "padding", padding, (1, 2, 4), 0)
    if len(v) == 1:
        return v * 4
    if len(v) == 2:
        return (v[0], v[1], v[0], v[1])
    return v


def _out_extent(op, axis, n, pad0, pad1, k, stride, dil):
    """Output length along one axis: the number of positions of the dilated kernel in the
    padded input (0 when it does not fit), in exact integers."""
    padded = n + pad0 + pad1
    if padded > _EXTENT_MAX:
        raise ValueError(f"{op}: padding ({pad0}, {pad1}) of the {axis} axis is too large: "
                         f"the padded extent {padded} exceeds 2**62")
    span = (k - 1) * dil + 1
    return 0 if span > padded else (padded - span) // stride + 1


def _deform_conv(op, x, offset, mask, weight, bias, stride, padding, dilation, groups,
                 deform_groups, im2col_step=64):
    be, (x, offset, mask, weight, bias) = _dispatch.prepare(
        op, x=x, offset=offset, mask=mask, weight=weight, bias=bias)
    named = [("x", x), ("offset", offset), ("weight", weight)]
    named += [(n, a) for n, a in (("mask", mask), ("bias", bias)) if a is not None]
    for name, a in named:
        _validate.dtype_in(op, name, a, _validate.FLOATS)
    for name, a in named:
        _validate.ndim_is(op, name, a, 1 if name == "bias" else 4)
    N, C, H, W = (int(s) for s in x.shape)
    M, Cw, KH, KW = (int(s) for s in weight.shape)
    groups = _validate.integer(op, "groups", groups, lo=1)
    dg = _validate.integer(op, "deform_groups", deform_groups, lo=1)
    _validate.integer(op, "im2col_step", im2col_step, lo=1)
    if KH < 1 or KW < 1:
        raise ValueError(f"{op}: weight must be (out_channels, in_channels / groups, kh, kw) "
                         f"with kh, kw >= 1, got shape {tuple(weight.shape)}")
    if C % groups:
        raise ValueError(f"{op}: x has {C} channels, not divisible by groups={groups}")
    if Cw * groups != C:
        hint = (f" (torchvision infers groups={C // Cw} from these shapes: pass "
                f"groups={C // Cw})" if Cw and C % Cw == 0 else "")
        raise ValueError(f"{op}: weight must have shape (M, {C // groups}, kh, kw) for x with "
                         f"{C} channels and groups={groups}, got {tuple(weight.shape)}{hint}")
    if M % groups:
        raise ValueError(f"{op}: weight has {M} output channels, not divisible by "
                         f"groups={groups}")
    if C % dg:
        raise ValueError(f"{op}: x has {C} channels, not divisible by deform_groups={dg}")
    sh, sw = _pair(op, "stride", stride, 1)
    dh, dw = _pair(op, "dilation", dilation, 1)
    pt, pl, pb, pr = _pads(op, padding)
    OH = _out_extent(op, "height", H, pt, pb, KH, sh, dh)
    OW = _out_extent(op, "width", W, pl, pr, KW, sw, dw)
    taps = dg * KH * KW
    want = (N, 2 * taps, OH, OW)
    if tuple(offset.shape) != want:
        per = 2 * KH * KW
        oc = int(offset.shape[1])
        hint = (f"; torchvision infers deform_groups={oc // per} from offset's channels: "
                f"pass deform_groups={oc // per}"
                if oc != 2 * taps and oc % per == 0 and oc and C % (oc // per) == 0 else "")
        raise ValueError(
            f"{op}: offset must have shape {want} (N, 2 * deform_groups * kh * kw, out_h, "
            f"out_w) for x {tuple(x.shape)}, weight {tuple(weight.shape)}, stride "
            f"({sh}, {sw}), padding ({pt}, {pl}, {pb}, {pr}), dilation ({dh}, {dw}), got "
            f"{tuple(offset.shape)}{hint}")
    if mask is not None and tuple(mask.shape) != (N, taps, OH, OW):
        raise ValueError(f"{op}: mask must have shape {(N, taps, OH, OW)} (N, deform_groups * "
                         f"kh * kw, out_h, out_w), got {tuple(mask.shape)}")
    if bias is not None and tuple(bias.shape) != (M,):
        raise ValueError(f"{op}: bias must have shape ({M},) (one value per output channel), "
                         f"got {tuple(bias.shape)}")

    dtype = np.result_type(*(a.dtype for _, a in named))
    ct = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
    out = be.empty((N, M, OH, OW), dtype, sized_by="x, weight and the offset's shape")
    if out.size == 0:
        return be.wrap(out)
    args = [None if a is None else be.element_view(a, ct)
            for a in (x, offset, mask, weight, bias)]
    oc = out if out.dtype == ct else be.empty(out.shape, ct)
    be.run("deform_conv", "deform_conv2d", *args, sh, sw, pt, pl, dh, dw, groups, dg, oc)
    if oc is not out:
        out[...] = oc
    return be.wrap(out)


@_dispatch.public(fast=("deform_conv", "fast_deform_conv2d",
                        ("x", "offset", "weight", "bias", "stride", "padding", "dilation",
                         "groups", "deform_groups", "mask", "im2col_step", False)))
def deform_conv2d(x: Array, offset: Array, weight: Array, bias: Optional[Array] = None,
                  stride: IntPair = 1, padding: IntPair = 0, dilation: IntPair = 1,
                  groups: int = 1, deform_groups: int = 1, mask: Optional[Array] = None,
                  im2col_step: int = 64) -> Array:
    """Deformable 2-D convolution (DCN v1; DCN v2 when ``mask`` is given).

    ONNX DeformConv (opsets 19 and 22), MMCV ``DeformConv2d`` / ``mmcv::MMCVDeformConv2d``
    and the forward pass of ``torchvision.ops.deform_conv2d``, on NumPy (OpenMP + BLAS)
    and CuPy (CUDA + cuBLAS).

    Parameters
    ----------
    x : array (N, C, H, W), float16, float32 or float64
    offset : array (N, 2 * deform_groups * kh * kw, out_h, out_w)
        Per output pixel and kernel tap, the ``(dy, dx)`` displacement of the sampling
        point in input pixels.
    weight : array (M, C / groups, kh, kw)
    bias : array (M,), optional
    stride, dilation : int or (int, int), >= 1
    padding : int, (pad_h, pad_w) or (h_begin, w_begin, h_end, w_end), >= 0
    groups : int, >= 1
        Convolution groups: ``C`` and ``M`` divisible by it.
    deform_groups : int, >= 1
        Offset groups (ONNX ``offset_group``): ``C`` divisible by it; channel block ``d``
        of ``C / deform_groups`` channels uses offsets ``2*d*kh*kw ... 2*(d+1)*kh*kw - 1``.
    mask : array (N, deform_groups * kh * kw, out_h, out_w), optional
        Modulation scalar per sample (DCN v2, ONNX ``mask``).
    im2col_step : int, >= 1
        MMCV's batching knob; accepted for compatibility, the result does not depend on it.

    Returns
    -------
    y : array (N, M, out_h, out_w), the promoted dtype of the inputs

    Raises
    ------
    ValueError
        Shapes that do not fit together (offset channels not ``2 * deform_groups * kh *
        kw``, channels not divisible by ``groups`` or ``deform_groups``, mask, weight or
        bias shape), strides/dilations < 1, negative padding, padded extents past 2**62.
    TypeError
        Non-float dtypes or non-integer attributes.

    Notes
    -----
    **Definition.**  With ``K = kh * kw`` taps ``k = (i, j)`` and ``d(c) = c // (C /
    deform_groups)`` the deform group of input channel ``c``::

        y[n, m, oy, ox] = bias[m] + sum over c in the group of m, i < kh, j < kw of
            weight[m, c - g*C/groups, i, j] * mask[n, d(c)*K + k, oy, ox]
            * bilinear(x[n, c], py, px)
        py = oy * stride_h - pad_top  + i * dilation_h + offset[n, 2*(d(c)*K + k),     oy, ox]
        px = ox * stride_w - pad_left + j * dilation_w + offset[n, 2*(d(c)*K + k) + 1, oy, ox]

    (no mask: mask = 1).  Offsets are ``(dy, dx)`` pairs interleaved per tap, taps in
    row-major order, deform groups outermost, as in torchvision, MMCV and ONNX.
    ``out_h = (H + pad_top + pad_bottom - ((kh - 1) * dilation_h + 1)) // stride_h + 1``.

    **Semantics and where the peers differ.**

    =============================  =============================================================
    topic                          rule (peers)
    =============================  =============================================================
    boundary                       torchvision/MMCV/ONNX Runtime: a sample with ``py <= -1``,
                                   ``py >= H``, ``px <= -1`` or ``px >= W`` is 0; otherwise
                                   each of its 4 corners outside the map contributes 0 (the
                                   ONNX reference's GridSample with zeros padding gives the
                                   same values)
    NaN / inf offsets              the sample lies outside: 0 (ONNX Runtime gives 0;
                                   torchvision and MMCV cast NaN to int, undefined)
    inf / NaN in ``x``             read only where a corner with non-zero weight lies: a
                                   corner outside the map reads an all-zero pixel, never
                                   ``x`` (ONNX Runtime reads pixel 0 with weight 0, so an
                                   inf there makes its sample NaN)
    mask                           multiplies the sample's 4 corner weights (torchvision
                                   multiplies the interpolated value: same up to rounding);
                                   a NaN or inf mask makes its term NaN, also for a sample
                                   outside the map, as in torchvision (``mask * 0``)
    padding                        int, ``(pad_h, pad_w)``, or ONNX ``pads`` order
                                   ``(h_begin, w_begin, h_end, w_end)`` (asymmetric, as ONNX;
                                   torchvision and MMCV are symmetric only)
    kernel > padded input          ``out_h = 0``: an empty result (its offset must have
                                   ``out_h = 0`` too); torchvision raises
    ``im2col_step``                MMCV's batching knob, validated (>= 1) and otherwise
                                   ignored: results never depend on it (MMCV requires the
                                   batch to be divisible by it; fastops does not)
    dtypes                         float16, float32, float64 in any mix; the result has
                                   NumPy's promoted dtype of the inputs, computed in float32
                                   (float64 if any input is float64) and rounded once; ONNX
                                   22's bfloat16 is not a NumPy dtype
    =============================  =============================================================

    **Peers.**  ``deform_conv2d(x, offset, weight, bias, mask=None)`` is
    ``torchvision.ops.deform_conv2d(x, offset, weight, bias, stride, padding, dilation,
    mask)`` (torchvision infers groups and offset groups from the shapes) and MMCV
    ``DeformConv2d`` / ``mmcv::MMCVDeformConv2d`` (DCN v1, no bias input);
    ``modulated_deform_conv2d`` is MMCV ``ModulatedDeformConv2d`` /
    ``mmcv::MMCVModulatedDeformConv2d`` (DCN v2).  ONNX ``DeformConv`` (opsets 19, 22)
    maps to ``deform_conv2d(X, offset, W, B, strides, pads, dilations, group, offset_group,
    mask)``; its ``kernel_shape`` attribute is ``W.shape[2:]``.  Only 2-D is implemented.

    **Performance.**  CPU: per tile of output pixels a bilinear sampling plan (4 corner
    offsets and 4 weights times the mask per deform group, tap and pixel) fills a
    channels-last column tile (4 contiguous channel vectors blended per entry), followed
    by one GEMM per group into the output; tiles run on fastops' threads, each calling a
    single-threaded BLAS GEMM (NumPy's bundled OpenBLAS, found at run time; a builtin
    GEMM where there is none).  The column matrix never materializes beyond one tile per
    thread.  Results are bit-identical for any thread count and any ``im2col_step``.
    While a call runs, OpenBLAS's process-wide thread count is held at 1, so NumPy
    matrix products in other Python threads run single-threaded meanwhile.  GPU: an
    im2col kernel (one thread per image, channel and output pixel, looping over the taps)
    and cuBLAS through ``cupy.matmul``, over chunks of images bounded in memory.
    """
    return _deform_conv("deform_conv2d", x, offset, mask, weight, bias, stride, padding,
                        dilation, groups, deform_groups, im2col_step)


@_dispatch.public(fast=("deform_conv", "fast_deform_conv2d",
                        ("x", "offset", "weight", "bias", "stride", "padding", "dilation",
                         "groups", "deform_groups", "mask", 64, True)))
def modulated_deform_conv2d(x: Array, offset: Array, mask: Array, weight: Array,
                            bias: Optional[Array] = None, stride: IntPair = 1,
                            padding: IntPair = 0, dilation: IntPair = 1, groups: int = 1,
                            deform_groups: int = 1) -> Array:
    """Modulated deformable 2-D convolution (DCN v2): MMCV ``ModulatedDeformConv2d`` /
    ``mmcv::MMCVModulatedDeformConv2d``.

    The same as ``deform_conv2d(x, offset, weight, bias, stride, padding, dilation,
    groups, deform_groups, mask=mask)`` (bit for bit), with the mask required and in
    MMCV's argument order.

    Parameters
    ----------
    x : array (N, C, H, W), float16, float32 or float64
    offset : array (N, 2 * deform_groups * kh * kw, out_h, out_w), ``(dy, dx)`` per tap
    mask : array (N, deform_groups * kh * kw, out_h, out_w)
    weight : array (M, C / groups, kh, kw)
    bias : array (M,), optional
    stride, padding, dilation, groups, deform_groups
        As in :func:`deform_conv2d`.

    Returns
    -------
    y : array (N, M, out_h, out_w), the promoted dtype of the inputs

    Notes
    -----
    See :func:`deform_conv2d` for the definition, the boundary, NaN and mask rules, the
    dtypes and how this differs from the peers.
    """
    op = "modulated_deform_conv2d"
    if mask is None:
        raise TypeError(f"{op}: mask is required (DCN v2); use deform_conv2d without a mask "
                        f"for DCN v1")
    return _deform_conv(op, x, offset, mask, weight, bias, stride, padding, dilation, groups,
                        deform_groups)
