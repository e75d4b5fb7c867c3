"""Tiny inputs for every op: the fixed cost of a call (validation, dispatch, output
allocation, kernel entry), measured against the NumPy equivalent where one exists and
ONNX Runtime / torch otherwise.  Issue 14's targets: within 2x of NumPy where it has the
op, under 10 us elsewhere.
"""
import functools

import numpy as np

import fastops
import fastops.cv as fcv
from fastops._bench import Workload, peers
from fastops._bench.nms import _xywh


def _rng():
    return np.random.default_rng(0)


def _torch(fn):
    def prep(inp):
        torch = peers.torch_cpu()
        t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in inp.items()}
        return lambda: fn(torch, t)
    return prep


def _tiny(name, op, make, fast, **peer_impls):
    return Workload(name=f"tiny {name}", op=op, make=make,
                    impls={"fastops": lambda inp: (lambda: fast(inp)), **peer_impls},
                    quick=False, calls=200)


def _cv2_resize(x, size):
    cv2 = peers._need("cv2")
    cv2.setNumThreads(fastops.get_num_threads())
    return functools.partial(cv2.resize, x, size)


def _x(shape, dtype=np.float32):
    return lambda: {"x": _rng().standard_normal(shape).astype(dtype)}


def _ort(op_type, names, out_dtypes, attrs=None, opset=18, extra=()):
    def prep(inp):
        ins = [(n, inp[n]) for n in names] + [(n, v) for n, v in extra]
        return peers.ort_session(op_type, ins, [(f"y{j}", d) for j, d in enumerate(out_dtypes)],
                                 attrs, opset=opset)
    return prep


def _scatter_inputs():
    rng = _rng()
    return {"data": rng.standard_normal((8, 8)).astype(np.float32),
            "indices": rng.integers(0, 8, (4, 8)),
            "updates": rng.standard_normal((4, 8)).astype(np.float32),
            "rows": rng.integers(0, 8, (4, 1)),
            "row_updates": rng.standard_normal((4, 8)).astype(np.float32)}


def _cv2_nms(inp):
    """cv2.dnn.NMSBoxes on (x, y, w, h) lists made before the timing, as the nms rows give
    it (fastops/_bench/nms.py)."""
    cv2 = peers._need("cv2")
    b, s = _xywh(inp["flat_boxes"]).tolist(), inp["flat_scores"].tolist()
    return lambda: cv2.dnn.NMSBoxes(b, s, 0.0, 0.5)


def _cv2_batched_nms(inp):
    """cv2.dnn.NMSBoxesBatched (OpenCV >= 4.7) on lists made before the timing, as the
    batched_nms rows give it."""
    cv2 = peers._need("cv2")
    if not hasattr(cv2.dnn, "NMSBoxesBatched"):
        raise NotImplementedError("cv2.dnn.NMSBoxesBatched needs OpenCV >= 4.7")
    b, s = _xywh(inp["flat_boxes"]).tolist(), inp["flat_scores"].tolist()
    c = inp["classes"].astype(np.int32).tolist()
    return lambda: cv2.dnn.NMSBoxesBatched(b, s, c, 0.0, 0.5)


def _boxes():
    rng = _rng()
    lo = rng.uniform(0, 90, (1, 16, 2))
    boxes = np.concatenate([lo, lo + rng.uniform(5, 30, (1, 16, 2))], -1).astype(np.float32)
    return {"boxes": boxes, "scores": rng.random((1, 1, 16)).astype(np.float32),
            "flat_boxes": boxes[0], "flat_scores": rng.random(16).astype(np.float32),
            "classes": rng.integers(0, 4, 16)}


def _roi():
    rng = _rng()
    return {"x": rng.standard_normal((1, 16, 32, 32)).astype(np.float32),
            "rois": np.array([[0, 2.5, 3.0, 20.0, 25.5]], np.float32),
            "boxes": np.array([[2.5, 3.0, 20.0, 25.5]], np.float32),
            "batch": np.zeros(1, np.int64)}


def _deform():
    rng = _rng()
    return {"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32),
            "offset": rng.standard_normal((1, 18, 8, 8)).astype(np.float32),
            "weight": rng.standard_normal((4, 4, 3, 3)).astype(np.float32),
            "bias": np.zeros(4, np.float32)}


def _norm():
    rng = _rng()
    return {"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32),
            "scale": np.ones(4, np.float32), "bias": np.zeros(4, np.float32)}


def _grid():
    rng = _rng()
    return {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
            "grid": rng.uniform(-1, 1, (1, 8, 8, 2)).astype(np.float32)}


WORKLOADS = [
    _tiny("topk 4x16 float32 k=2", "topk", _x((4, 16)),
          lambda i: fastops.topk(i["x"], 2),
          numpy=lambda i: (lambda: np.argsort(-i["x"], axis=1, kind="stable")[:, :2]),
          onnxruntime=_ort("TopK", ["x"], [np.float32, np.int64], {"axis": -1}, 11,
                           extra=[("k", np.array([2], np.int64))]),
          torch=_torch(lambda torch, t: torch.topk(t["x"], 2))),
    # a slice: the class scores of 8 detections (YOLO's (N, 85) rows, columns 5:), k=2;
    # a view takes the fast path as a copy (fastops._dispatch.fast_path_of_copies)
    _tiny("topk 8x85[:, 5:] float32 view k=2", "topk",
          lambda: {"x": _rng().standard_normal((8, 85)).astype(np.float32)[:, 5:]},
          lambda i: fastops.topk(i["x"], 2),
          numpy=lambda i: (lambda: np.argsort(-i["x"], axis=1, kind="stable")[:, :2]),
          torch=_torch(lambda torch, t: torch.topk(t["x"], 2))),
    _tiny("cummax 4x16 float32", "cummax", _x((4, 16)),
          lambda i: fastops.cummax(i["x"], 1),
          numpy=lambda i: (lambda: np.maximum.accumulate(i["x"], axis=1)),
          torch=_torch(lambda torch, t: torch.cummax(t["x"], 1))),
    _tiny("nonzero 4x16 float32", "nonzero", _x((4, 16)),
          lambda i: fastops.nonzero(i["x"]),
          numpy=lambda i: (lambda: np.nonzero(i["x"])),
          onnxruntime=_ort("NonZero", ["x"], [np.int64], opset=13)),
    _tiny("scatter_elements 8x8 float32", "scatter_elements", _scatter_inputs,
          lambda i: fastops.scatter_elements(i["data"], i["indices"], i["updates"]),
          numpy=lambda i: (lambda: np.put_along_axis(i["data"].copy(), i["indices"],
                                                     i["updates"], 0)),
          onnxruntime=_ort("ScatterElements", ["data", "indices", "updates"], [np.float32])),
    _tiny("gather_elements 8x8 float32", "gather_elements", _scatter_inputs,
          lambda i: fastops.gather_elements(i["data"], i["indices"]),
          numpy=lambda i: (lambda: np.take_along_axis(i["data"], i["indices"], 0)),
          onnxruntime=_ort("GatherElements", ["data", "indices"], [np.float32], opset=13)),
    _tiny("scatter_nd 8x8 float32", "scatter_nd", _scatter_inputs,
          lambda i: fastops.scatter_nd(i["data"], i["rows"], i["row_updates"]),
          onnxruntime=_ort("ScatterND", ["data", "rows", "row_updates"], [np.float32])),
    _tiny("gather_nd 8x8 float32", "gather_nd", _scatter_inputs,
          lambda i: fastops.gather_nd(i["data"], i["rows"]),
          numpy=lambda i: (lambda: i["data"][i["rows"][:, 0]]),
          onnxruntime=_ort("GatherND", ["data", "rows"], [np.float32], opset=13)),
    _tiny("non_max_suppression 16 boxes", "non_max_suppression", _boxes,
          lambda i: fastops.non_max_suppression(i["boxes"], i["scores"], 16, 0.5),
          onnxruntime=_ort("NonMaxSuppression", ["boxes", "scores"], [np.int64], opset=11,
                           extra=[("m", np.array([16], np.int64)),
                                  ("t", np.array([0.5], np.float32))])),
    _tiny("nms 16 boxes", "nms", _boxes,
          lambda i: fastops.nms(i["flat_boxes"], i["flat_scores"], 0.5), cv2=_cv2_nms),
    _tiny("batched_nms 16 boxes 4 classes", "batched_nms", _boxes,
          lambda i: fastops.batched_nms(i["flat_boxes"], i["flat_scores"], i["classes"], 0.5),
          cv2=_cv2_batched_nms),
    _tiny("roi_align 1 roi 1x16x32x32 7x7", "roi_align", _roi,
          lambda i: fastops.roi_align(i["x"], i["rois"], 7, 1.0, 2),
          onnxruntime=_ort("RoiAlign", ["x", "boxes", "batch"], [np.float32],
                           {"output_height": 7, "output_width": 7, "sampling_ratio": 2,
                            "coordinate_transformation_mode": "half_pixel"}, opset=16)),
    _tiny("resize 1x3x8x8 linear x2", "resize",
          lambda: {"x": _rng().standard_normal((1, 3, 8, 8)).astype(np.float32),
                   "scales": np.array([1, 1, 2, 2], np.float32)},
          lambda i: fastops.resize(i["x"], i["scales"], mode="linear"),
          onnxruntime=_ort("Resize", ["x"], [np.float32], {"mode": "linear"}, 19,
                           extra=[("roi", None),
                                  ("scales", np.array([1, 1, 2, 2], np.float32))])),
    Workload(name="tiny cv.resize 8x8x3 uint8 -> 5x4 linear", op="cv.resize",
             make=lambda: {"x": _rng().integers(0, 256, (8, 8, 3), dtype=np.uint8)},
             # (both sides call resize directly: a wrapper would cost as much as the op)
             impls={"fastops": lambda inp: functools.partial(fcv.resize, inp["x"], (5, 4)),
                    "cv2": lambda inp: _cv2_resize(inp["x"], (5, 4))},
             quick=False, calls=200),
    # a crop of a frame (rows at the frame's stride), the preprocessing script's usual input
    Workload(name="tiny cv.resize 16x16x3 crop of 480x640x3 uint8 -> 8x8 linear",
             op="cv.resize",
             make=lambda: {"x": _rng().integers(0, 256, (480, 640, 3), dtype=np.uint8)[100:116,
                                                                                   200:216]},
             impls={"fastops": lambda inp: functools.partial(fcv.resize, inp["x"], (8, 8)),
                    "cv2": lambda inp: _cv2_resize(inp["x"], (8, 8))},
             quick=False, calls=200),
    _tiny("grid_sample 1x3x8x8 bilinear", "grid_sample", _grid,
          lambda i: fastops.grid_sample(i["x"], i["grid"]),
          onnxruntime=_ort("GridSample", ["x", "grid"], [np.float32], opset=16)),
    _tiny("deform_conv2d 1x4x8x8 -> 4 3x3", "deform_conv2d", _deform,
          lambda i: fastops.deform_conv2d(i["x"], i["offset"], i["weight"], i["bias"],
                                          padding=1),
          onnxruntime=_ort("DeformConv", ["x", "weight", "offset", "bias"], [np.float32],
                           {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, 22)),
    _tiny("instance_norm 1x4x8x8", "instance_norm", _norm,
          lambda i: fastops.instance_norm(i["x"], i["scale"], i["bias"]),
          onnxruntime=_ort("InstanceNormalization", ["x", "scale", "bias"], [np.float32])),
]
