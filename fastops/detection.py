"""Detection ops: non_max_suppression, nms, batched_nms (kernels in the "nms" family)
and roi_align (kernels in the "roi_align" family)."""
import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, FloatScalar, IntScalar, Literal, Optional, Tuple, Union

# ---------------------------------------------------------------- NMS section

# Kernels: fastops._cpu.nms / fastops._gpu.nms ("nms" family), both with
#   nms_select(boxes (B,N,4), scores (B,C,N), center, offset, cap, iou_thr,
#              has_score_thr, score_thr, pad_out) -> int64 (K, 3)
#   (cap = boxes kept per (batch, class), <= N; pad_out = None or the preallocated
#   (B*C*max, 3) output of pad=True: sizes are computed here with exact integers)
#   nms_batched(boxes (N,4), scores (N,), idxs int64 (N,), iou_thr) -> int64 (K,)
# boxes and scores arrive in one compute dtype (float32 or float64), non-empty.

def _nms_dtypes(op, boxes, scores):
    """(compute dtype, threshold dtype): float16 runs as float32; integer boxes (pixel
    boxes as OpenCV gives them) run in float64; mixed inputs run in the wider type;
    thresholds are rounded to the scores' compute dtype (ONNX stores float32)."""
    _validate.dtype_in(op, "boxes", boxes, _validate.FLOATS + _validate.SIGNED +
                       _validate.UNSIGNED)
    _validate.dtype_in(op, "scores", scores, _validate.FLOATS)
    thr_dt = np.float64 if scores.dtype == np.float64 else np.float32
    box_dt = np.float32 if boxes.dtype.kind == "f" and boxes.dtype.itemsize < 8 else np.float64
    return np.promote_types(thr_dt, box_dt), thr_dt


def _nms_iou(op, value, thr_dt):
    v = _validate.number(op, "iou_threshold", value)
    if not 0.0 <= v <= 1.0:     # also rejects NaN (ONNX Runtime rejects values outside [0, 1])
        raise ValueError(f"{op}: iou_threshold={v!r} must be in [0, 1]")
    return float(thr_dt(v))


def _nms_score_threshold(op, value, thr_dt):
    """(has_threshold, threshold in the scores' compute dtype); NaN is refused like a NaN
    iou_threshold (no box could pass it)."""
    if value is None:
        return False, 0.0
    v = _validate.number(op, "score_threshold", value)
    if v != v:
        raise ValueError(f"{op}: score_threshold is NaN; pass None for no threshold")
    return True, float(thr_dt(v))


def _nms_offset(op, offset):
    if isinstance(offset, (bool, np.bool_)) or not isinstance(offset, (int, np.integer)) \
            or offset not in (0, 1):
        raise ValueError(f"{op}: offset={offset!r} must be 0 or 1")
    return int(offset)


@_dispatch.public(fast=("nms", "fast_non_max_suppression",
                        ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                         "score_threshold", "center_point_box", "offset", "pad")))
def non_max_suppression(boxes: Array, scores: Array,
                        max_output_boxes_per_class: Optional[IntScalar] = None,
                        iou_threshold: FloatScalar = 0.0,
                        score_threshold: Optional[FloatScalar] = None,
                        center_point_box: int = 0, offset: int = 0, pad: bool = False) -> Array:
    """ONNX NonMaxSuppression (opsets 10, 11) and the MMCV/TensorRT ``NonMaxSuppression``.

    For every batch ``b`` and class ``c`` the boxes of batch ``b`` are visited in
    decreasing ``scores[b, c]``; a box is selected unless its IoU with an already
    selected box of the same (batch, class) is greater than ``iou_threshold``.

    Parameters
    ----------
    boxes : array (B, N, 4), float16/32/64 (or integer, computed in float64)
        ``center_point_box=0``: ``[y1, x1, y2, x2]``, the two corners in either order
        (ONNX).  ``center_point_box=1``: ``[x_center, y_center, width, height]``.
    scores : array (B, C, N), float16/32/64
    max_output_boxes_per_class : int, 1-element integer array or None
        At most this many boxes per (batch, class), any size.  None: no limit.  0:
        nothing is selected (ONNX; MMCV's op definition reads 0 as "all", pass None
        for that).  Negative: ValueError.  With ``pad=True`` a maximum whose
        ``B*C*max`` rows cannot be allocated raises MemoryError.
    iou_threshold : float in [0, 1] (or a 1-element array)
        Suppress when IoU > iou_threshold (strict).  Outside [0, 1] or NaN: ValueError.
    score_threshold : float or None
        Only boxes with score > score_threshold (strict) are candidates.  None: no
        threshold.  NaN: ValueError (as for iou_threshold).
    center_point_box : 0 or 1
    offset : 0 or 1
        Added to every width and height (MMCV's legacy ``+1`` convention), also to the
        intersection's, so with 1 touching boxes overlap.
    pad : bool
        False: ONNX output.  True: the MMCV/TensorRT fixed-size output of
        ``B*C*max_output_boxes_per_class`` rows (``B*C*N`` when the maximum is None), the
        selected rows first, the rest -1.

    Returns
    -------
    selected : int64 array (num_selected, 3) of ``[batch, class, box]`` rows, grouped by
        batch, then class, each group in decreasing score.

    Notes
    -----
    ========================  ======================================================
    ties in score             the lower box index first, on CPU and GPU alike
    NaN scores                never selected (ONNX is silent; the ONNX reference and
                              ONNX Runtime order NaN arbitrarily)
    thresholds                rounded to the scores' compute dtype first (float32 for
                              float16/float32 scores) as ONNX stores them in float32
    IoU arithmetic            the ONNX reference's: the intersection must be non-empty
                              on both axes, IoU = inter / (area1 + area2 - inter); a
                              box of zero (or negative, or NaN) area or a pair with a
                              zero union never suppresses and is never suppressed
    dtypes                    float16 is computed in float32; when boxes and scores
                              differ the wider of their compute dtypes is used
    ========================  ======================================================

    The CPU kernel sorts each (batch, class) once with a stable radix sort and sweeps
    greedily against the kept boxes (parallel over (batch, class), or inside one large
    class when there are fewer classes than threads).  The GPU kernel builds the 64-bit
    IoU bitmask of each (batch, class)'s candidates in parallel and unwraps it on the
    device, one block per (batch, class); it reads the candidate counts (to size the
    masks) and the output size from the device (neither with ``pad=True``).
    """
    op = "non_max_suppression"
    be, (boxes, scores) = _dispatch.prepare(op, boxes=boxes, scores=scores)
    ct, thr_dt = _nms_dtypes(op, boxes, scores)
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise ValueError(f"{op}: boxes must have shape (B, N, 4), got {tuple(boxes.shape)}")
    _validate.ndim_is(op, "scores", scores, 3)
    if scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{op}: scores.shape[0]={scores.shape[0]} (batches) does not match "
                         f"boxes.shape[0]={boxes.shape[0]}")
    if scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"{op}: scores.shape[2]={scores.shape[2]} (boxes) does not match "
                         f"boxes.shape[1]={boxes.shape[1]}")
    if max_output_boxes_per_class is None:
        max_out = None
    else:   # any size: only min(max, N) reaches the kernel, the pad size is exact here
        max_out = _validate.integer(op, "max_output_boxes_per_class",
                                    max_output_boxes_per_class, lo=0, hi=None)
    iou = _nms_iou(op, iou_threshold, thr_dt)
    has_sthr, sthr = _nms_score_threshold(op, score_threshold, thr_dt)
    if isinstance(center_point_box, (bool, np.bool_)) or \
            not isinstance(center_point_box, (int, np.integer)) or center_point_box not in (0, 1):
        raise ValueError(f"{op}: center_point_box={center_point_box!r} must be 0 or 1")
    off = _nms_offset(op, offset)
    pad = _validate.flag(op, "pad", pad)

    B, N, C = boxes.shape[0], boxes.shape[1], scores.shape[1]
    limit = N if max_out is None else max_out
    pad_out = None
    if pad:
        pad_out = be.empty((B * C * limit, 3), np.int64, sized_by="pad=True and "
                           f"max_output_boxes_per_class={max_output_boxes_per_class!r}")
    if B * C * N == 0:
        out = pad_out if pad else be.empty((0, 3), np.int64)
        out.fill(-1)
        return be.wrap(out)
    out = be.run("nms", "nms_select", be.element_view(boxes, ct),
                 be.element_view(scores, ct), int(center_point_box), off, min(limit, N), iou,
                 has_sthr, sthr, pad_out)
    return be.wrap(out)


@_dispatch.public(fast=("nms", "fast_nms",
                        ("boxes", "scores", "iou_threshold", "score_threshold", "max_num",
                         "offset")))
def nms(boxes: Array, scores: Array, iou_threshold: FloatScalar,
        score_threshold: Optional[FloatScalar] = None, max_num: Optional[IntScalar] = None,
        offset: int = 0) -> Array:
    """Greedy non-maximum suppression, torchvision ``nms`` / MMCV ``nms`` style.

    Parameters
    ----------
    boxes : array (N, 4), ``[x1, y1, x2, y2]`` (corners in either order); float16/32/64,
        or any integer dtype (pixel boxes, as ``cv2.dnn.NMSBoxes`` accepts), computed in
        float64 (exact below 2**53)
    scores : array (N,), float16/32/64
    iou_threshold : float in [0, 1]
        Suppress when IoU > iou_threshold (strict); outside [0, 1] or NaN: ValueError.
    score_threshold : float or None
        Only boxes with score > score_threshold are kept (MMCV); NaN: ValueError.
    max_num : int or None
        Keep at most this many.  None or negative (MMCV's -1): no limit; 0: nothing.
    offset : 0 or 1
        Added to widths and heights (MMCV's legacy ``+1``).

    Returns
    -------
    keep : int64 array of kept box indices, in decreasing score order.

    Notes
    -----
    Same rules as :func:`non_max_suppression` (it is its one-batch, one-class case):
    ties in score keep the lower index first on every backend (torchvision's CPU and
    CUDA kernels may differ there); NaN scores are never kept (torch sorts NaN first);
    zero-area boxes never suppress and are never suppressed (IoU of a zero union is 0);
    float16 is computed in float32 and thresholds are rounded to the scores' compute
    dtype.  Unlike MMCV's CPU kernel, float64 is computed in float64.
    """
    op = "nms"
    be, (boxes, scores) = _dispatch.prepare(op, boxes=boxes, scores=scores)
    ct, thr_dt = _nms_dtypes(op, boxes, scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"{op}: boxes must have shape (N, 4), got {tuple(boxes.shape)}")
    _validate.ndim_is(op, "scores", scores, 1)
    if scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{op}: scores has {scores.shape[0]} entries but boxes has "
                         f"{boxes.shape[0]} rows")
    iou = _nms_iou(op, iou_threshold, thr_dt)
    has_sthr, sthr = _nms_score_threshold(op, score_threshold, thr_dt)
    N = boxes.shape[0]
    max_out = N if max_num is None else _validate.integer(op, "max_num", max_num, lo=None,
                                                          hi=None)
    max_out = N if max_out < 0 else min(max_out, N)   # MMCV's -1: no limit
    off = _nms_offset(op, offset)
    if N == 0 or max_out == 0:
        return be.wrap(be.empty((0,), np.int64))
    sel = be.run("nms", "nms_select", be.element_view(boxes, ct)[None],
                 be.element_view(scores, ct)[None, None], 0, off, max_out, iou, has_sthr,
                 sthr, None)
    return be.wrap(be.xp.ascontiguousarray(sel[:, 2]))


@_dispatch.public(fast=("nms", "fast_batched_nms", ("boxes", "scores", "idxs", "iou_threshold")))
def batched_nms(boxes: Array, scores: Array, idxs: Array, iou_threshold: FloatScalar) -> Array:
    """Class-aware NMS (torchvision ``batched_nms``): boxes of different ``idxs`` never
    suppress each other.

    Parameters
    ----------
    boxes : array (N, 4), ``[x1, y1, x2, y2]``, float16/32/64 or integer (computed in
        float64)
    scores : array (N,), float16/32/64
    idxs : integer array (N,), the class (or image) of each box; any integer values
    iou_threshold : float in [0, 1]

    Returns
    -------
    keep : int64 array of kept indices in decreasing score order (ties: lower index).

    Notes
    -----
    Rules as :func:`nms`.  Each class is suppressed on its own (no coordinate-offset
    trick, so no precision loss on large coordinates and no quadratic cost across
    classes): the boxes are sorted once by (class, score desc, index asc), the classes
    run in parallel on the CPU, and on the GPU each class is its own problem with its
    own IoU mask (memory and work grow with the sum of squared class sizes, not N²).
    """
    op = "batched_nms"
    be, (boxes, scores, idxs) = _dispatch.prepare(op, boxes=boxes, scores=scores, idxs=idxs)
    ct, thr_dt = _nms_dtypes(op, boxes, scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"{op}: boxes must have shape (N, 4), got {tuple(boxes.shape)}")
    _validate.ndim_is(op, "scores", scores, 1)
    if scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{op}: scores has {scores.shape[0]} entries but boxes has "
                         f"{boxes.shape[0]} rows")
    if idxs.dtype.kind not in "iu":
        raise TypeError(f"{op}: idxs has dtype {idxs.dtype}; expected an integer dtype")
    if idxs.ndim != 1 or idxs.shape[0] != boxes.shape[0]:
        raise ValueError(f"{op}: idxs must have shape ({boxes.shape[0]},) like boxes' rows, "
                         f"got {tuple(idxs.shape)}")
    iou = _nms_iou(op, iou_threshold, thr_dt)
    if boxes.shape[0] == 0:
        return be.wrap(be.empty((0,), np.int64))
    # uint64 -> int64 is a bijection, so distinct classes stay distinct
    return be.wrap(be.run("nms", "nms_batched", be.element_view(boxes, ct),
                          be.element_view(scores, ct), be.element_view(idxs, np.int64), iou))


# ----------------------------------------------------------- RoIAlign section
_ROI_MODES = {"avg": 0, "max": 1, "onnx_max": 2}
_INT32_MAX = (1 << 31) - 1
_ROI_GRID_MAX = 1 << 20       # adaptive samples per bin and axis (kRoiGridMax in the kernels)


def _roi_output_size(op, output_size):
    if isinstance(output_size, (tuple, list)) or (
            hasattr(output_size, "shape") and getattr(output_size, "ndim", 0) == 1):
        if len(output_size) != 2:
            raise ValueError(f"{op}: output_size must be an int or a pair (h, w), "
                             f"got {output_size!r}")
        hw = tuple(_validate.integer(op, "output_size", v, lo=None, hi=None)
                   for v in output_size)
    else:
        hw = (_validate.integer(op, "output_size", output_size, lo=None, hi=None),) * 2
    if hw[0] <= 0 or hw[1] <= 0:
        raise ValueError(f"{op}: output_size must be positive, got {output_size!r}")
    return hw


def _roi_check(op, xp, boxes, batch, n_images, from_rois):
    """Finite boxes, integral batch values in [0, n_images); one host sync on the GPU."""
    finite = xp.isfinite(boxes).all(axis=1)
    if from_rois:           # MMCV layout: the batch index is a float column
        integral = xp.isfinite(batch) & (batch == xp.floor(batch))
        if batch.dtype == np.float32:
            # CuPy compiles its own kernels with -ftz=true, casts included: on an H200
            # 1e-45 == floor(1e-45) held (and so did float64(1e-45) == 0), and the kernel
            # read image 0.  A denormal is never integral: test the bits (integer ops).
            bits = batch.view(np.uint32)
            integral &= ((bits & 0x7F800000) != 0) | ((bits & 0x007FFFFF) == 0)
    else:
        integral = xp.ones(batch.shape, dtype=bool)
    in_range = integral & (batch >= 0) & (batch < n_images)
    ok = finite & in_range
    if bool(ok.all()):
        return
    bad_box = np.flatnonzero(~_host(finite))
    if bad_box.size:
        i = int(bad_box[0])
        raise ValueError(f"{op}: RoI {i} has a non-finite coordinate "
                         f"{_host(boxes[i]).tolist()}")
    integral, in_range, batch = _host(integral), _host(in_range), _host(batch)
    bad = np.flatnonzero(~integral)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{op}: rois[{i}, 0]={batch[i].item()!r} is not an integral batch "
                         f"index")
    i = int(np.flatnonzero(~in_range)[0])
    value = int(batch[i])
    where = f"rois[{i}, 0]" if from_rois else f"batch_indices[{i}]"
    raise IndexError(f"{op}: batch index {where}={value} of RoI {i} is out of range for x "
                     f"with {n_images} image(s) (expected 0 <= index < {n_images})")


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


@_dispatch.public(fast=("roi_align", "fast_roi_align",
                        ("x", "rois", "output_size", "spatial_scale", "sampling_ratio",
                         "mode", "aligned", "batch_indices", _ROI_MODES)))
def roi_align(x: Array, rois: Array, output_size: Union[int, Tuple[int, int]],
              spatial_scale: FloatScalar = 1.0, sampling_ratio: int = 0,
              mode: Literal["avg", "max", "onnx_max"] = "avg", aligned: bool = True,
              batch_indices: Optional[Array] = None) -> Array:
    """RoIAlign: pool each region of interest of ``x`` into an ``output_size`` grid.

    ONNX RoiAlign (opsets 10, 16, 22), MMCV ``RoIAlign`` / ``mmcv::MMCVRoiAlign`` and
    the forward pass of ``torchvision.ops.roi_align``, on NumPy (OpenMP) and CuPy.

    Parameters
    ----------
    x : array (N, C, H, W), float16, float32 or float64
        Feature maps.  Any strides.
    rois : array (K, 5) or (K, 4), real dtype
        Without ``batch_indices`` (MMCV / torchvision layout): rows
        ``[batch, x1, y1, x2, y2]``; the batch column must hold integral values.
        With ``batch_indices`` (ONNX layout): rows ``[x1, y1, x2, y2]``.  Coordinates
        are in input-image pixels and are multiplied by ``spatial_scale``; they are
        converted to the compute dtype of ``x`` and must be finite.
    output_size : int or (int, int)
        ``(output_height, output_width)``; an int means a square grid.
    spatial_scale : float
        Factor from RoI coordinates to ``x``'s pixels: ``1 / stride`` of the feature
        map, e.g. 0.25 for an FPN P2 level (stride 4) or 0.125 for P3.
    sampling_ratio : int
        Samples per bin along each axis; ``<= 0`` means adaptive,
        ``ceil(roi_size / output_size)`` per RoI and axis (ONNX default 0, MMCV 0).
    mode : {"avg", "max", "onnx_max"}
        How a bin reduces its samples, see Notes.
    aligned : bool
        True: shift by half a pixel (ONNX ``half_pixel``); False: legacy, no shift and
        RoI width/height clamped to at least 1.  See the alignment table.
    batch_indices : integer array (K,), optional
        Image index of each RoI (ONNX layout); values in ``[0, N)``.

    Returns
    -------
    out : array (K, C, output_height, output_width), the dtype of ``x``

    Raises
    ------
    IndexError
        A batch index is outside ``[0, N)`` (the message names the value and the RoI).
    ValueError, TypeError
        Wrong shapes, dtypes or attributes, non-finite RoI coordinates or a non-integral
        batch column (the message names the argument).

    Notes
    -----
    **Sampling.**  With offset ``o = 0.5`` if ``aligned`` else ``0``, a RoI starts at
    ``(x1 * spatial_scale - o, y1 * spatial_scale - o)`` and has size
    ``(x2 - x1) * spatial_scale`` (``max(., 1)`` when not aligned).  Bin ``(ph, pw)``
    takes a ``grid_h x grid_w`` grid of samples at
    ``y = y_start + ph * bin_h + (iy + 0.5) * bin_h / grid_h`` (same for x).  Each
    sample is bilinear with the Caffe2 edge rule shared by every peer: a sample with
    ``y < -1`` or ``y > H`` (or ``x < -1`` or ``x > W``) is 0; otherwise coordinates
    are clamped into ``[0, H - 1]`` / ``[0, W - 1]``.  So RoIs partly or wholly outside
    the map work: outside samples count as 0.  Coordinates, weights and sums are
    computed in the compute dtype (float32 for float16 and float32 inputs, float64 for
    float64) in the peers' order of operations, so float32 results agree with ONNX
    Runtime and ``onnx.reference`` (bit for bit in the test suite).

    **Modes.**

    ==========  ===============================================  =======================
    mode        value of a bin                                   peer
    ==========  ===============================================  =======================
    "avg"       mean of the samples, sum / (grid_h * grid_w)     all (ONNX, MMCV, tv)
    "max"       max of the bilinearly interpolated samples       MMCV ``pool_mode=max``
    "onnx_max"  max over samples of ``max(w1*v1, ..., w4*v4)``   ONNX reference, ORT
                (the largest weighted corner term, not the sum)
    ==========  ===============================================  =======================

    Differences from the peers, all deliberate:

    * ``"max"`` is the true maximum of the samples.  MMCV seeds its maximum with
      ``-10000``, so a bin whose samples are all below -10000 returns -10000 there and
      the real maximum here.  NaN samples propagate (MMCV skips them).
    * An empty bin (adaptive sampling of a zero- or negative-size RoI with
      ``aligned=True``) is 0 in every mode, as in ONNX; MMCV's max mode gives -10000
      and MMCV asserts on negative sizes, which fastops accepts like ONNX (adaptive
      sampling: empty bins; fixed sampling: samples taken in the reversed direction).
    * ``"onnx_max"`` reproduces ONNX Runtime's and the reference's formula, which
      differs from Caffe2/MMCV/OpenVINO max pooling (onnx/onnx#4764,
      microsoft/onnxruntime#6146); ``fastops.onnx`` uses it for RoiAlign nodes.
      torchvision has no max mode.
    * A sample outside the map is exactly 0 (it still counts in the average's
      divisor; in the max modes it is a +0 candidate).  The peers compute it as weight
      0 times element 0 of the plane, so an infinite or NaN element there makes their
      bin NaN; here it cannot.
    * ``sampling_ratio`` above 2**31 - 1 is refused (ValueError); adaptive grids are
      capped at 2**20 samples per bin and axis (only RoIs about a million times larger
      than the map reach that; the peers' integer conversion is undefined there).

    **Alignment.**

    =====================================  =================  =========================
    peer setting                           fastops            rule
    =====================================  =================  =========================
    ONNX opset 10 (no attribute)           ``aligned=False``  no shift, size >= 1
    ONNX 16/22 ``output_half_pixel``       ``aligned=False``  no shift, size >= 1
    ONNX 16/22 ``half_pixel`` (default)    ``aligned=True``   -0.5 shift, size as is
    MMCV ``aligned=True`` (its default)    ``aligned=True``   -0.5 shift, size as is
    MMCV ``aligned=False``                 ``aligned=False``  no shift, size >= 1
    torchvision ``aligned=False`` (def.)   ``aligned=False``  no shift, size >= 1
    torchvision ``aligned=True``           ``aligned=True``   -0.5 shift, size as is
    =====================================  =================  =========================

    fastops' default is ``aligned=True`` (ONNX 16 and MMCV defaults); pass
    ``aligned=False`` for torchvision's default and ONNX opset 10.

    **Layouts and dtypes.**  MMCV/torchvision give ``(K, 5)`` rois; ONNX gives
    ``(K, 4)`` rois plus int64 ``batch_indices`` (any integer dtype is accepted here).
    ONNX RoiAlign 10/16 types X as float16/float/double and 22 adds bfloat16 (not a
    NumPy dtype: not supported).  float16 runs in float32 and is rounded once at the
    end.  An empty RoI list gives a ``(0, C, h, w)`` result; an empty map (H or W = 0)
    gives zeros.

    **ONNX opset 10.**  Opset 10 has no half-pixel shift (ONNX Runtime agrees);
    ``onnx.reference`` 1.22 applies its opset-16 default ``half_pixel`` to opset-10
    models too, a reference bug that fastops does not follow: use ``aligned=False``.

    **Performance.**  CPU: per RoI a table of the bilinear sample offsets and weights,
    stored per axis (rows and columns of samples; the corner weights are their
    products), is built once and shared by all channels; the loop runs channel-major
    over blocks of 4 channels so that the feature planes stay in cache while every RoI
    of an image reads them.  (RoI chunk, channel block) items run on OpenMP threads;
    results are bit-identical for any thread count.  Samples outside the map are never
    visited (along each axis the inside samples of a bin form one run, found by
    bisection), so a RoI costs at most about what its overlap with the map costs, however
    large or far outside it is.  GPU: one thread per output element, computing the
    CPU's operations in the same order without FMA contraction, so GPU and CPU results
    are bit-identical; the call synchronizes once to check the batch indices and RoI
    coordinates.
    """
    op = "roi_align"
    be, (x, rois, batch_indices) = _dispatch.prepare(op, x=x, rois=rois,
                                                     batch_indices=batch_indices)
    xp = be.xp
    _validate.dtype_in(op, "x", x, _validate.FLOATS)
    _validate.ndim_is(op, "x", x, 4)
    if rois.dtype.kind not in "iuf":
        raise TypeError(f"{op}: rois has dtype {rois.dtype}; expected a real (float or "
                        f"integer) dtype")
    cols = 5 if batch_indices is None else 4
    if rois.ndim != 2 or rois.shape[1] != cols:
        layout = ("(K, 5) [batch, x1, y1, x2, y2] (pass batch_indices for the (K, 4) ONNX "
                  "layout)" if cols == 5 else "(K, 4) [x1, y1, x2, y2] with batch_indices")
        raise ValueError(f"{op}: rois must be {layout}, got shape {tuple(rois.shape)}")
    K = rois.shape[0]
    if batch_indices is not None:
        if batch_indices.dtype.kind not in "iu":
            raise TypeError(f"{op}: batch_indices has dtype {batch_indices.dtype}; "
                            f"expected an integer dtype")
        if batch_indices.shape != (K,):
            raise ValueError(f"{op}: batch_indices must have shape ({K},) to match rois, "
                             f"got {tuple(batch_indices.shape)}")
    oh, ow = _roi_output_size(op, output_size)
    scale = _validate.number(op, "spatial_scale", spatial_scale, finite=True)
    # <= 0: adaptive.  Samples per bin and axis fit an int (as in MMCV), so a bin's sample
    # count fits int64; the sample tables (up to K * (oh + ow) * ratio entries) must be
    # addressable.
    sampling_ratio = max(0, _validate.integer(op, "sampling_ratio", sampling_ratio, lo=None,
                                              hi=None))
    if sampling_ratio > _INT32_MAX:
        raise ValueError(f"{op}: sampling_ratio={sampling_ratio} is more than {_INT32_MAX} "
                         f"samples per bin along an axis")
    if K * (oh + ow) * max(sampling_ratio, _ROI_GRID_MAX) > 1 << 62:
        raise MemoryError(f"{op}: the sample tables of {K} RoIs with output_size=({oh}, "
                          f"{ow}) and sampling_ratio={sampling_ratio} cannot be addressed")
    if not isinstance(mode, str) or mode.lower() not in _ROI_MODES:
        raise ValueError(f"{op}: mode must be one of 'avg', 'max', 'onnx_max', got {mode!r}")
    mode_code = _ROI_MODES[mode.lower()]
    aligned = _validate.flag(op, "aligned", aligned)

    N, C, H, W = x.shape
    out = be.empty((K, C, oh, ow), x.dtype, sized_by=f"output_size={output_size!r}")
    ct = np.float32 if x.dtype == np.float16 else x.dtype
    # The kernel reads each box once and survives any value; the batch indices it trusts,
    # so they are copied first and the copy is what gets checked and used (another
    # thread may write rois meanwhile).
    boxes = xp.ascontiguousarray(rois[:, cols - 4:], dtype=ct)
    raw = xp.array(rois[:, 0] if batch_indices is None else batch_indices, copy=True)
    if K:
        _roi_check(op, xp, boxes, raw, N, batch_indices is None)
    if out.size == 0:
        return be.wrap(out)
    if H == 0 or W == 0:        # every sample lies outside an empty map
        out[...] = 0
        return be.wrap(out)
    batch = raw.astype(np.int64)
    xc = be.element_view(x, np.float32 if x.dtype == np.float16 else None)
    oc = out if out.dtype == ct else be.empty(out.shape, ct)
    be.run("roi_align", "roi_align", xc, boxes, batch, scale, sampling_ratio, mode_code,
           aligned, oc)
    if oc is not out:
        out[...] = oc
    return be.wrap(out)
