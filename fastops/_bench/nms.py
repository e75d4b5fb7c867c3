"""Workloads for non_max_suppression, nms and batched_nms (sizes from issue 4's targets).

"Realistic" boxes (:func:`realistic_boxes`): detector-like clusters.  ``n_objects``
object centres are drawn uniformly in a 1024x1024 image, each with a size of 16 to 256
pixels per side; every box picks an object, jitters its centre by N(0, 0.15 * size) and
scales its width and height by U(0.6, 1.4).  Scores are U(0, 1), independent of the
boxes.  So many boxes overlap their object's other boxes (IoU mostly 0.3 to 0.9) and
boxes of different objects overlap where objects are near each other.  Seeded.
"""
import numpy as np

import fastops
from fastops._bench import Workload, peers


def realistic_boxes(n, n_objects=200, seed=0, image=1024.0):
    """(boxes (n, 4) float32 [x1, y1, x2, y2], scores (n,) float32 in (0, 1))."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, image, (n_objects, 2))
    sizes = rng.uniform(16, 256, (n_objects, 2))
    obj = rng.integers(0, n_objects, n)
    c = centres[obj] + rng.normal(0, 0.15, (n, 2)) * sizes[obj]
    wh = sizes[obj] * rng.uniform(0.6, 1.4, (n, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], axis=1).astype(np.float32)
    scores = rng.uniform(0, 1, n).astype(np.float32)
    return boxes, scores


def numpy_nms(boxes, scores, thr):
    """The classic vectorized NumPy NMS (one IoU row per kept box); stable score order."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.maximum(0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]))
        h = np.maximum(0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]))
        inter = w * h
        iou = inter / (areas[i] + areas[rest] - inter)
        order = rest[iou <= thr]
    return np.array(keep, dtype=np.int64)


def offset_trick(boxes, idxs):
    """torchvision's _batched_nms_coordinate_trick: shift each class far apart."""
    return boxes + (idxs.astype(boxes.dtype) * (boxes.max() + 1))[:, None]


def _torchvision():
    torch = peers.torch_cpu()
    try:
        import torchvision
    except Exception:   # not installable next to torch 2.13 here
        raise peers.PeerMissing("torchvision") from None
    return torch, torchvision


def _torchvision_cuda():
    torch = peers.torch_cuda()
    try:
        import torchvision
    except Exception:
        raise peers.PeerMissing("torchvision") from None
    return torch, torchvision


def _xywh(boxes):
    return np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)


# ---------------------------------------------------------------- nms
def _nms_workload(n, thr):
    def make():
        boxes, scores = realistic_boxes(n)
        return {"boxes": boxes, "scores": scores}

    def ort(inp):
        b = inp["boxes"][:, [1, 0, 3, 2]][None].copy()      # ONNX [y1, x1, y2, x2]
        return peers.ort_session(
            "NonMaxSuppression",
            [("boxes", b), ("scores", inp["scores"][None, None].copy()),
             ("max_output", np.array([n], np.int64)), ("iou", np.array([thr], np.float32))],
            [("selected", np.int64)], opset=11)

    def cv2_nms(inp):
        try:
            import cv2
        except ImportError:
            raise peers.PeerMissing("cv2") from None
        b = _xywh(inp["boxes"]).tolist()
        s = inp["scores"].tolist()
        return lambda: cv2.dnn.NMSBoxes(b, s, 0.0, thr)

    def torch_cpu(inp):
        torch, tv = _torchvision()
        b, s = torch.from_numpy(inp["boxes"]), torch.from_numpy(inp["scores"])
        return lambda: tv.ops.nms(b, s, thr)

    def gpu(inp):
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: fastops.nms(g["boxes"], g["scores"], thr))

    def torch_gpu(inp):
        torch, tv = _torchvision_cuda()
        b, s = torch.from_numpy(inp["boxes"]).cuda(), torch.from_numpy(inp["scores"]).cuda()
        return peers.torch_gpu_call(lambda: tv.ops.nms(b, s, thr))

    return Workload(
        name=f"nms {n} realistic iou={thr}", op="nms", make=make,
        impls={"fastops": lambda inp: (lambda: fastops.nms(inp["boxes"], inp["scores"], thr)),
               "numpy": lambda inp: (lambda: numpy_nms(inp["boxes"], inp["scores"], thr)),
               "onnxruntime": ort, "cv2": cv2_nms, "torch": torch_cpu, "fastops-gpu": gpu,
               "torch-cuda": torch_gpu},
        heavy=True)


# ---------------------------------------------------------------- batched_nms
def _batched_workload(n, classes, thr, trick=False):
    """trick=False: the per-class op; trick=True: each library's offset trick + single nms."""
    def make():
        boxes, scores = realistic_boxes(n, seed=1)
        idxs = np.random.default_rng(2).integers(0, classes, n).astype(np.int64)
        return {"boxes": boxes, "scores": scores, "idxs": idxs}

    def fast(inp):
        b, s, i = inp["boxes"], inp["scores"], inp["idxs"]
        if trick:
            return lambda: fastops.nms(offset_trick(b, i), s, thr)
        return lambda: fastops.batched_nms(b, s, i, thr)

    def numpy_impl(inp):
        b, s, i = inp["boxes"], inp["scores"], inp["idxs"]
        return lambda: numpy_nms(offset_trick(b, i), s, thr)

    def cv2_impl(inp):
        try:
            import cv2
        except ImportError:
            raise peers.PeerMissing("cv2") from None
        if trick:
            b = _xywh(offset_trick(inp["boxes"], inp["idxs"])).tolist()
            s = inp["scores"].tolist()
            return lambda: cv2.dnn.NMSBoxes(b, s, 0.0, thr)
        if not hasattr(cv2.dnn, "NMSBoxesBatched"):
            raise NotImplementedError("cv2.dnn.NMSBoxesBatched needs OpenCV >= 4.7")
        b, s = _xywh(inp["boxes"]).tolist(), inp["scores"].tolist()
        c = inp["idxs"].astype(np.int32).tolist()
        return lambda: cv2.dnn.NMSBoxesBatched(b, s, c, 0.0, thr)

    def torch_cpu(inp):
        torch, tv = _torchvision()
        b, s = torch.from_numpy(inp["boxes"]), torch.from_numpy(inp["scores"])
        i = torch.from_numpy(inp["idxs"])
        if trick:
            return lambda: tv.ops.nms(torch.from_numpy(offset_trick(inp["boxes"], inp["idxs"])),
                                      s, thr)
        return lambda: tv.ops.batched_nms(b, s, i, thr)

    def gpu(inp):
        g = peers.to_gpu(inp)
        if trick:
            return peers.gpu_call(lambda: fastops.nms(
                g["boxes"] + (g["idxs"].astype(g["boxes"].dtype)
                              * (g["boxes"].max() + 1))[:, None], g["scores"], thr))
        return peers.gpu_call(lambda: fastops.batched_nms(g["boxes"], g["scores"], g["idxs"], thr))

    def torch_gpu(inp):
        torch, tv = _torchvision_cuda()
        b, s = torch.from_numpy(inp["boxes"]).cuda(), torch.from_numpy(inp["scores"]).cuda()
        i = torch.from_numpy(inp["idxs"]).cuda()
        return peers.torch_gpu_call(lambda: tv.ops.batched_nms(b, s, i, thr))

    impls = {"fastops": fast, "numpy": numpy_impl, "cv2": cv2_impl, "torch": torch_cpu,
             "fastops-gpu": gpu}
    if not trick:
        impls["torch-cuda"] = torch_gpu
    return Workload(
        name=f"batched_nms {n} realistic {classes} classes iou={thr}"
             + (" offset-trick" if trick else ""),
        op="batched_nms", make=make, impls=impls, heavy=not trick)


# ---------------------------------------------------------------- ONNX NonMaxSuppression
def _onnx_workload(B, C, N, max_out, thr, score_thr):
    def make():
        boxes = np.stack([realistic_boxes(N, seed=10 + b)[0][:, [1, 0, 3, 2]] for b in range(B)])
        scores = np.random.default_rng(3).uniform(0, 1, (B, C, N)).astype(np.float32)
        return {"boxes": boxes, "scores": scores}

    def fast(inp):
        return lambda: fastops.non_max_suppression(inp["boxes"], inp["scores"], max_out, thr,
                                                   score_thr)

    def ort(inp):
        return peers.ort_session(
            "NonMaxSuppression",
            [("boxes", inp["boxes"]), ("scores", inp["scores"]),
             ("max_output", np.array([max_out], np.int64)), ("iou", np.array([thr], np.float32)),
             ("score_thr", np.array([score_thr], np.float32))],
            [("selected", np.int64)], opset=11)

    def gpu(inp):
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: fastops.non_max_suppression(g["boxes"], g["scores"],
                                                                  max_out, thr, score_thr))

    return Workload(
        name=f"non_max_suppression B={B} C={C} N={N} max={max_out} iou={thr} "
             f"score>{score_thr}",
        op="non_max_suppression", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "fastops-gpu": gpu}, heavy=True,
        quick=max_out <= 1000)   # ORT needs over a second for the unlimited case


WORKLOADS = [
    _nms_workload(1000, 0.5),
    _nms_workload(10000, 0.5),
    _batched_workload(10000, 80, 0.5),
    _batched_workload(10000, 80, 0.5, trick=True),
    _onnx_workload(1, 80, 5000, 200, 0.5, 0.05),
    _onnx_workload(1, 80, 5000, 5000, 0.5, 0.0),
]
