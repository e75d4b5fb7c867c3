"""OpenCV-compatible front ends: :func:`resize`, a drop-in for ``cv2.resize``, and the
``INTER_*`` flags with OpenCV's values.

Kernels: the "cv_resize" family (fastops/_cpu/cv_resize.pyx, fastops/_gpu/cv_resize.py),
OpenCV's arithmetic operation for operation, and the resize family's kernels where the
arithmetic is the same ("resample": nearest2d for the nearest modes with nn_table's
indices, resize2d for INTER_AREA downscaling of float images with area_table's cells).
"""
import math
import numbers
import sys
import warnings

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, FloatScalar, IntScalar, Optional, Sequence

OP = "cv.resize"

INTER_NEAREST = 0
INTER_LINEAR = 1
INTER_CUBIC = 2
INTER_AREA = 3
INTER_LINEAR_EXACT = 5
INTER_NEAREST_EXACT = 6

_FLAGS = {INTER_NEAREST: "INTER_NEAREST", INTER_LINEAR: "INTER_LINEAR",
          INTER_CUBIC: "INTER_CUBIC", INTER_AREA: "INTER_AREA",
          INTER_LINEAR_EXACT: "INTER_LINEAR_EXACT", INTER_NEAREST_EXACT: "INTER_NEAREST_EXACT"}
DTYPES = ("uint8", "uint16", "int16", "float16", "float32", "float64")
_DTYPES = frozenset(np.dtype(d) for d in DTYPES)
_INTS = {np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int16)}
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_DBL_EPSILON = 2.220446049250313e-16
_INT64_MAX = (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1

__all__ = ["resize", "INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA",
           "INTER_LINEAR_EXACT", "INTER_NEAREST_EXACT"]


# ------------------------------------------------------------------ arguments
def _is_scalar(v):
    """A number where dst goes (the flag passed positionally): cv2 ignores it."""
    if isinstance(v, np.ndarray):
        return v.ndim == 0 and v.dtype.kind in "biuf"
    return isinstance(v, (numbers.Number, np.generic)) and not isinstance(v, (str, bytes))


def _dsize(dsize):
    """(width, height) with both > 0, or None (cv2: an empty dsize means "use fx, fy")."""
    if dsize is None:
        return None
    if hasattr(dsize, "tolist") and not isinstance(dsize, (list, tuple)):
        dsize = dsize.tolist() if getattr(dsize, "ndim", 1) else [dsize.item()]
    try:
        seq = list(dsize)
    except TypeError:
        raise TypeError(f"{OP}: dsize must be None or a (width, height) pair of integers, "
                        f"got {dsize!r}") from None
    if len(seq) != 2:
        raise ValueError(f"{OP}: dsize must be a (width, height) pair, got {len(seq)} "
                         f"value(s): {dsize!r}")
    w, h = seq
    if type(w) is not int or type(h) is not int or not (0 <= w <= _INT64_MAX and
                                                        0 <= h <= _INT64_MAX):
        w = _validate.integer(OP, "dsize[0] (width)", w)
        h = _validate.integer(OP, "dsize[1] (height)", h)
    if w < 0 or h < 0:
        raise ValueError(f"{OP}: dsize={tuple(seq)!r} must not be negative")
    return (w, h) if w > 0 and h > 0 else None


def _round_even(v, name):
    """cvRound of a double: round half to even, saturated to int like saturate_cast<int>
    would be for sizes only after the caller's checks."""
    if not math.isfinite(v):
        raise ValueError(f"{OP}: {name} gives a non-finite output size")
    return int(round(v))


def _saturate_int(v):
    """saturate_cast<int>(double): round half to even, clamp to int32."""
    if v != v:
        return 0
    if v >= _INT_MAX:
        return _INT_MAX
    if v <= _INT_MIN:
        return _INT_MIN
    return int(round(v))


def _geometry(h, w, size, fx, fy):
    """(dh, dw, inv_scale_x, inv_scale_y) as cv::resize computes them (size: _dsize())."""
    if size is not None:
        dw, dh = size
        if h == 0 or w == 0:
            raise ValueError(f"{OP}: cannot resize an empty image of shape ({h}, {w}) to "
                             f"dsize={size} (there is nothing to sample)")
        return dh, dw, dw / w, dh / h
    fxv = _validate.number(OP, "fx", fx)
    fyv = _validate.number(OP, "fy", fy)
    for name, v in (("fx", fxv), ("fy", fyv)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{OP}: {name}={v!r} must be a positive finite scale when dsize "
                             f"is None or has a zero (cv2's rule: dsize wins when both of its "
                             f"values are > 0)")
    dw = _round_even(w * fxv, "fx")
    dh = _round_even(h * fyv, "fy")
    if h and w and (dw == 0 or dh == 0):
        name = "fx" if dw == 0 else "fy"
        raise ValueError(f"{OP}: {name}={fxv if dw == 0 else fyv!r} on an image of shape "
                         f"({h}, {w}) gives an empty output ({dh}, {dw}) (cv2 refuses it too)")
    return dh, dw, fxv, fyv


def _interpolation(interpolation):
    if type(interpolation) is int and interpolation in _FLAGS:
        return interpolation
    v = _validate.integer(OP, "interpolation", interpolation)
    if v == 4:
        raise ValueError(f"{OP}: interpolation=4 (cv2.INTER_LANCZOS4) is not supported; "
                         f"supported: " + ", ".join(f"{n} ({k})" for k, n in _FLAGS.items()))
    if v not in _FLAGS:
        raise ValueError(f"{OP}: interpolation={v} is not a known flag; expected one of "
                         + ", ".join(f"{n} ({k})" for k, n in _FLAGS.items()))
    return v


def _dst_fits(d, shape3, squeeze, dtype):
    """cv2's rule: dst is used when it has the output's size, channels and type."""
    dh, dw, C = shape3
    if d.dtype.kind != dtype.kind or d.dtype.itemsize != dtype.itemsize:
        return False
    if d.ndim == 3:
        return tuple(d.shape) == (dh, dw, C)
    if d.ndim == 2:
        return C == 1 and tuple(d.shape) == (dh, dw)
    return False


def _may_share(be, a, b):
    fn = getattr(be.xp, "may_share_memory", None)
    return True if fn is None else bool(fn(a, b))


def _writeable(d):
    flags = getattr(d, "flags", None)
    return True if flags is None else bool(getattr(flags, "writeable", True))


# ------------------------------------------------------------------ backends
def _pixels(be, x3):
    """x3 with C-contiguous pixels (a copy only when they are not): the cv_resize kernels
    take any row stride."""
    it = x3.itemsize
    C = x3.shape[2]
    if (C > 1 and x3.strides[2] != it) or x3.strides[1] != C * it or x3.strides[0] % it:
        return be.xp.ascontiguousarray(x3)
    return x3


def _area_table(be, n_in, n_out, scale, wdtype, what):
    """A resample.Table (first, count, weights) of INTER_AREA cells, built on the backend."""
    from fastops.resample import Table
    K = int(min(math.floor(scale), n_in)) + 3
    try:
        first = be.xp.empty((n_out,), dtype=np.int64)
        count = be.xp.empty((n_out,), dtype=np.int64)
        weights = be.xp.empty((n_out, K), dtype=wdtype)
    except MemoryError as exc:
        raise MemoryError(f"{OP}: the {n_out} x {K} INTER_AREA table set by {what} cannot "
                          f"be allocated") from exc
    be.run("cv_resize", "area_table", n_in, n_out, scale, first, count, weights)
    return Table(n_in, first, count, weights, None, K)


def _area_float(be, x3, o3, scale_x, scale_y, what):
    """INTER_AREA downscaling of float images on the resize family's apply (resample
    resize2d), horizontal pass first: OpenCV's resizeArea_ sums operation for operation
    (float32; float64 for float64 images)."""
    wdt = np.dtype(np.float64 if x3.dtype == np.float64 else np.float32)
    xin = x3 if x3.dtype == wdt else be.element_view(x3, wdt)
    h, w, C = x3.shape
    dh, dw, _ = o3.shape
    th = _area_table(be, h, dh, scale_y, wdt, what)
    tw = _area_table(be, w, dw, scale_x, wdt, what)
    y = o3 if o3.dtype == wdt else be.empty((dh, dw, C), wdt, sized_by=what)
    be.run("resample", "resize2d", xin[None, :, None], th.first, th.count, th.weights,
           tw.first, tw.count, tw.weights, False, y[None, :, None])
    # resizeArea_ starts both passes' sums at 0, so a cell of -0.0 gives +0.0; the shared
    # apply starts at the first product.  The two differ only there: adding +0 maps -0.0
    # to +0.0 and leaves every other value (NaN included) as it is.
    y += 0
    if y is not o3:
        o3[...] = y


def _nearest(be, x3, o3, dh, dw, inv_sx, inv_sy, exact):
    h, w, _ = x3.shape
    fh = be.xp.empty((dh,), dtype=np.int64)
    fw = be.xp.empty((dw,), dtype=np.int64)
    be.run("cv_resize", "nn_table", h, dh, 1.0 / inv_sy, exact, fh)
    be.run("cv_resize", "nn_table", w, dw, 1.0 / inv_sx, exact, fw)
    bits = _BITS[x3.itemsize]
    be.run("resample", "nearest2d", x3.view(bits)[None, :, None], fh, fw,
           o3.view(bits)[None, :, None])


def _area_fast(be, x3, o3, isx, isy, what):
    if x3.dtype == np.float16:
        t = be.empty(o3.shape, np.float32, sized_by=what)
        be.run("cv_resize", "area_fast", _pixels(be, be.element_view(x3, np.float32)), isx, isy, t)
        o3[...] = t
        return
    be.run("cv_resize", "area_fast", _pixels(be, x3), isx, isy, o3)


def _dispatch_modes(be, x3, o3, dh, dw, inv_sx, inv_sy, interp, what):
    """hal::resize's routing; o3 is a contiguous (dh, dw, C) array of x3's dtype."""
    h, w, C = x3.shape
    dt = x3.dtype
    if interp == INTER_LINEAR_EXACT and dt.kind == "f":
        interp = INTER_LINEAR              # cv::resize: no exact float path
    scale_x, scale_y = 1.0 / inv_sx, 1.0 / inv_sy
    isx, isy = _saturate_int(scale_x), _saturate_int(scale_y)
    area_fast = abs(scale_x - isx) < _DBL_EPSILON and abs(scale_y - isy) < _DBL_EPSILON
    if interp == INTER_LINEAR_EXACT:
        if area_fast and isx == 2 and isy == 2 and C != 2:
            interp = INTER_AREA            # OpenCV: the same bytes, faster
        else:
            be.run("cv_resize", "resize_exact", _pixels(be, x3), scale_x, scale_y, o3)
            return
    if interp in (INTER_NEAREST, INTER_NEAREST_EXACT):
        _nearest(be, x3, o3, dh, dw, inv_sx, inv_sy, interp == INTER_NEAREST_EXACT)
        return
    if interp == INTER_LINEAR and area_fast and isx == 2 and isy == 2:
        interp = INTER_AREA
    if interp == INTER_AREA and scale_x >= 1 and scale_y >= 1:
        if area_fast:
            _area_fast(be, x3, o3, isx, isy, what)
            return
        if dt in _INTS:
            ty = _area_table(be, h, dh, scale_y, np.float32, what)
            tx = _area_table(be, w, dw, scale_x, np.float32, what)
            be.run("cv_resize", "area", _pixels(be, x3), ty.first, ty.count, ty.weights,
                   tx.first, tx.count, tx.weights, o3)
            return
        _area_float(be, x3, o3, scale_x, scale_y, what)
        return
    if dt == np.uint8:
        be.run("cv_resize", "resize_fixed", _pixels(be, x3), scale_x, inv_sx, scale_y, inv_sy,
               interp, o3)
        return
    if dt == np.float16:                   # computed in float32, rounded back
        t = be.empty(o3.shape, np.float32, sized_by=what)
        be.run("cv_resize", "resize_float", _pixels(be, be.element_view(x3, np.float32)), scale_x,
               inv_sx, scale_y, inv_sy, interp, t)
        o3[...] = t
        return
    be.run("cv_resize", "resize_float", _pixels(be, x3), scale_x, inv_sx, scale_y, inv_sy,
           interp, o3)


# ------------------------------------------------------------------ public
@_dispatch.public(fast=("cv_resize", "fast_resize", ("img", "dsize", "dst", "interpolation")),
                  fast_outputs=("dst",))
def resize(img: Array, dsize: Optional[Sequence[IntScalar]], dst: Optional[Array] = None,
           fx: FloatScalar = 0, fy: FloatScalar = 0,
           interpolation: IntScalar = INTER_LINEAR) -> Array:
    """Resize an image exactly as ``cv2.resize(src, dsize, dst, fx, fy, interpolation)``.

    A drop-in for OpenCV's ``cv2.resize`` (OpenCV 5.0): the same arguments in the same
    order, the same output size and coordinate rules, and on 8-bit images the same bytes.
    Runs on NumPy arrays (OpenMP, SIMD) and CuPy arrays (CUDA); DLPack tensors (torch,
    JAX) come back in their framework.

    Parameters
    ----------
    img : array (H, W) or (H, W, C), C >= 1
        uint8, uint16, int16, float32 or float64 (float16 too: computed in float32 and
        rounded back); any strides and byte order; never modified.
    dsize : (width, height) or None
        The output size, **width first** as in OpenCV.  When it is None or has a zero,
        ``fx`` and ``fy`` set the size (cv2's rule; a zero in dsize with fx/fy given uses
        fx/fy for both axes).
    dst : array, optional
        As in cv2: written in place and returned when it has the output's size, channels
        and dtype ((height, width, C), or (height, width) / (height, width, 1) for one
        channel); otherwise ignored and a new array is returned (cv2 reallocates).  A
        strided, byte-swapped or misaligned dst, or one overlapping img, is filled as if
        img were a separate copy; a read-only one that fits raises ValueError.  **The
        third positional argument is dst, not the flag**: ``resize(img, (w, h),
        INTER_AREA)`` passes 3 as dst and cv2 silently resizes with INTER_LINEAR.
        fastops does the same (the result is cv2's) and warns (UserWarning) that the
        number was ignored; any other non-array dst (a list, a string) raises TypeError.
    fx, fy : float
        Scale factors, used when ``dsize`` is None or has a zero: the output is
        ``round_half_even(W * fx)`` x ``round_half_even(H * fy)`` and the coordinate
        mapping uses ``1 / fx`` (not ``W / out_width``), as cv2 does.  Must then be
        positive and finite (ValueError), and the output non-empty (ValueError, as cv2).
        Ignored when dsize gives the size.
    interpolation : int
        ``INTER_NEAREST`` (0), ``INTER_LINEAR`` (1, default), ``INTER_CUBIC`` (2),
        ``INTER_AREA`` (3), ``INTER_LINEAR_EXACT`` (5), ``INTER_NEAREST_EXACT`` (6),
        cv2's values.  ``INTER_LANCZOS4`` (4) and unknown values raise ValueError.

    Returns
    -------
    array (height, width) or (height, width, C) of img's dtype (native byte order): 2-D
    when img is 2-D or has one channel (cv2 drops the channel axis of (H, W, 1) images;
    so does fastops, so that code written for cv2 keeps its shapes); ``dst`` itself
    when it was used.

    Notes
    -----
    Each path is OpenCV's resize.cpp (OpenCV 5.0, the code that runs with IPP off),
    operation for operation, routed as cv::resize / hal::resize route it:

    ======================  ============================================================
    accuracy                bit-exact with cv2 with ``cv2.ipp.setUseIPP(False)`` for every
                            image type, flag, size, scale and channel count (NaN and
                            infinities included: a weight of exactly 0 still multiplies
                            its sample, as in OpenCV).  cv2's default build hands some
                            paths to Intel IPP, which computes its own way: uint8
                            INTER_CUBIC (fastops within 1 grey level, ~4 % of pixels
                            differ: the x86 / ARM difference users report), uint16 /
                            int16 INTER_LINEAR and INTER_CUBIC (within 1), float
                            INTER_LINEAR and INTER_CUBIC (within ~5e-6 relative); every
                            other uint8 path is bit-exact with the default build too
    arithmetic              uint8 in OpenCV's fixed point (below); uint16 / int16 in
                            float32 rounded half to even (INTER_LINEAR_EXACT and
                            INTER_AREA's 2x2 cells in integers); float32 in float32,
                            float64 in float64; OpenCV's coefficients (float32) and
                            order: horizontal pass, then vertical
    coordinates             half-pixel centres, ``(x + 0.5) * scale - 0.5`` in double,
                            rounded to float32, ``scale = 1 / inv_scale`` with
                            ``inv_scale = dw / W`` (dsize) or ``fx``
    INTER_LINEAR            bilinear; uint8 with 11-bit weights (``round(w * 2048)``), the
                            horizontal sums in int32 and OpenCV's vertical rounding
                            ``((b0 * (H0 >> 4)) >> 16) + ((b1 * (H1 >> 4)) >> 16) + 2 >> 2``;
                            an exact 2x downscale on both axes is INTER_AREA (OpenCV's
                            rule; the same as bilinear there)
    INTER_CUBIC             Keys' cubic, A = -0.75 (float32 coefficients, the 4th one
                            ``1 - c0 - c1 - c2``), edge samples replicated; uint8 in
                            11-bit fixed point: int32 horizontal sums, then OpenCV's
                            float32 vertical sum for the elements its 8-lane loop covers
                            and ``(sum + 2^21) >> 22`` for the row's last width % 8
    INTER_AREA              downscale (both scales >= 1): integer factors average the
                            cell (``(a+b+c+d+2) >> 2`` for 2x2 cells of 1/3/4-channel
                            integer images, else ``sum * (1 / area)`` rounded half to
                            even; border cells ``sum / count``); other factors weigh
                            each source pixel by its covered fraction
                            (computeResizeAreaTab, float32 sums, rounded half to even).
                            Upscale on either axis: bilinear with OpenCV's "area"
                            coefficients
    INTER_NEAREST           ``floor(x / fx)`` in double, clamped: the top-left source
                            pixel of the cell (asymmetric), as cv2
    INTER_NEAREST_EXACT     OpenCV 5's (Pillow's) rule: ``f = scale / 2``, then
                            ``floor(f)`` and ``f += scale`` per output (the running double
                            sum, not ``(x + 0.5) * scale``; OpenCV 4.x used a 16.16
                            fixed-point formula that differs on some sizes)
    INTER_LINEAR_EXACT      integer bilinear: weights ``round(frac * 256)`` (uint8) or
                            ``* 65536`` (16-bit) from IEEE-double coordinates, sums
                            rounded ``(v + half) >> shift``; exact 2x downscales with C
                            != 2 are INTER_AREA (OpenCV's rule); float images use
                            INTER_LINEAR (as cv2)
    equal sizes             a copy, whatever the flag (also when fx/fy round to the
                            input's size), as cv2
    dtypes                  cv2's five image types and float16; int8, int32, bool and
                            others raise TypeError (cv2 refuses them too)
    channels                any C on every path (cv2's INTER_AREA general path stops at
                            4); one pixel is C contiguous values (copied when not)
    empty images            H or W = 0 with fx/fy: an empty result of the computed shape;
                            with a dsize: ValueError (nothing to sample; cv2 refuses
                            empty images); C = 0: (height, width, 0)
    sizes                   int64 throughout: no 2^31 limits (OpenCV's int32 offsets
                            overflow there); outputs that cannot be allocated raise
                            MemoryError naming dsize or fx/fy
    threads, SIMD, GPU      results do not depend on the thread count or on the SIMD
                            level (SSE2 / AVX2); the GPU gives the CPU's bytes for
                            integer images and the CPU's float values
    ======================  ============================================================

    Differences from :func:`fastops.resize` (ONNX Resize), all OpenCV conventions:
    images are HWC (ONNX Resize takes any axes, typically NCHW); ``dsize`` is
    (width, height); sizes from ``fx``/``fy`` round half to even (ONNX floors) and map
    coordinates with ``1 / fx`` (ONNX with the float32 scale too, but from ``scales``)
    where ``dsize`` maps with ``dw / W`` (the ONNX ``sizes`` rule); coordinates are
    computed in double then rounded to float32 (ONNX reference: double throughout);
    integer results follow OpenCV's fixed point (uint8 linear/cubic with 11-bit weights,
    within 1 of the exact value) or round half to even (ONNX: half away from zero from a
    float computation); INTER_CUBIC is ``cubic_coeff_a=-0.75`` with edge replication
    (ONNX's default a and padding, but OpenCV's coefficient rounding); INTER_NEAREST is
    ``coordinate_transformation_mode="asymmetric"`` + ``nearest_mode="floor"`` computed
    in double, INTER_NEAREST_EXACT has no ONNX equivalent (the running sum); INTER_AREA
    has none either (antialiased linear is a different filter); there is no antialias,
    exclude_outside, extrapolation or roi.
    """
    if dst is not None and _is_scalar(dst):
        warnings.warn(
            f"{OP}: the third positional argument is dst, not interpolation; {dst!r} is "
            f"ignored (as cv2.resize ignores it) and INTER_LINEAR-by-default rules apply: "
            f"pass interpolation={dst!r} as a keyword", UserWarning, stacklevel=3)
        dst = None
    if isinstance(dst, (list, tuple, str, bytes)):     # nothing to write into
        raise TypeError(f"{OP}: dst must be None or an image array, got {type(dst).__name__}")
    be, (x, d) = _dispatch.prepare(OP, img=img, dst=dst)
    if d is not None and (d.ndim == 0 or d.dtype.kind not in "biuf"):
        raise TypeError(f"{OP}: dst must be None or an image array, got {dst!r}")
    if x.dtype not in _DTYPES:          # (native byte order after prepare)
        _validate.dtype_in(OP, "img", x, DTYPES)
    if x.ndim not in (2, 3):
        raise ValueError(f"{OP}: img must be (H, W) or (H, W, C), got shape {tuple(x.shape)}")
    interp = _interpolation(interpolation)
    x = be.element_view(x)
    x3 = x[:, :, None] if x.ndim == 2 else x
    h, w, C = (int(s) for s in x3.shape)
    size = _dsize(dsize)
    dh, dw, inv_sx, inv_sy = _geometry(h, w, size, fx, fy)
    squeeze = x.ndim == 2 or C == 1
    shape = (dh, dw) if squeeze else (dh, dw, C)
    what = f"dsize={size}" if size is not None else f"fx={fx!r}, fy={fy!r}"
    if x.itemsize * math.prod(max(s, 1) for s in shape) > sys.maxsize:
        # also when another axis is 0: NumPy refuses such a shape even when empty
        raise MemoryError(f"{OP}: an output of shape {shape} (set by {what}) cannot exist: "
                          f"its non-empty axes alone exceed the address space")
    out = None
    if d is not None and _dst_fits(d, (dh, dw, C), squeeze, x.dtype):
        if not _writeable(d) or not _writeable(dst):
            raise ValueError(f"{OP}: dst has the output's shape and dtype but is read-only "
                             f"(cv2 refuses it too)")
        out = d
    if out is None:
        res = be.empty(shape, x.dtype, sized_by=what)
    else:
        res = out
    if res.size == 0:
        return dst if out is not None else be.wrap(res)
    # a strided dst, or one overlapping img: compute into a new array, then copy
    copy_back = not res.flags.c_contiguous or (out is not None and _may_share(be, out, x))
    o3 = be.empty((dh, dw, C), x.dtype, sized_by=what) if copy_back else \
        res.reshape(dh, dw, C)
    if (dh, dw) == (h, w):
        o3[...] = x3
    else:
        _dispatch_modes(be, x3, o3, dh, dw, inv_sx, inv_sy, interp, what)
    if copy_back:
        res[...] = o3.reshape(res.shape)
    if out is not None:
        if be.name == "cpu" and isinstance(dst, np.ndarray) and \
                not np.shares_memory(out, dst):
            dst[...] = out      # prepare copied a non-native / misaligned dst: write back
        return dst
    return be.wrap(res)
