"""Workloads for roi_align (sizes from issue 4's targets).

A Mask R-CNN-like FPN level: features (2, 256, 200, 272) float32 at stride 4 of an
800 x 1088 image (spatial_scale = 1/4); RoIs are random boxes in image pixels, sides
log-uniform in [16, 512] pixels, clipped to the image.  Box head: 1000 RoIs, 7 x 7;
mask head: 200 RoIs, 14 x 14; sampling_ratio 2, aligned (ONNX half_pixel).
"""
import functools

import numpy as np

import fastops
from fastops._bench import Workload, peers

_IMG_H, _IMG_W, _STRIDE = 800, 1088, 4


def _boxes(rng, k):
    side = np.exp(rng.uniform(np.log(16), np.log(512), (k, 2)))        # (w, h)
    ctr = rng.uniform(0, 1, (k, 2)) * np.array([_IMG_W, _IMG_H])
    lo = np.clip(ctr - side / 2, 0, [_IMG_W, _IMG_H])
    hi = np.clip(ctr + side / 2, 0, [_IMG_W, _IMG_H])
    return np.concatenate([lo, hi], axis=1).astype(np.float32)


@functools.lru_cache(maxsize=1)
def _features():
    """The FPN level, one array shared by every workload (111 MB; no op writes it)."""
    return np.random.default_rng(0).standard_normal(
        (2, 256, _IMG_H // _STRIDE, _IMG_W // _STRIDE), dtype=np.float32)


def _torchvision():
    peers._need("torch")
    return peers._need("torchvision")


def _workload(name, make, out, scale, aligned, heavy, quick):
    """A RoIAlign workload, 2 samples per bin, mode avg; ``make`` returns x and the RoIs
    both as MMCV rows (``rois``) and as ONNX boxes + batch indices."""
    ctm = "half_pixel" if aligned else "output_half_pixel"

    def fast(inp):
        return lambda: fastops.roi_align(inp["x"], inp["rois"], out, scale, 2, "avg",
                                         aligned)

    def ort(inp):
        return peers.ort_session(
            "RoiAlign", [("X", inp["x"]), ("rois", inp["boxes"]),
                         ("batch_indices", inp["batch"])],
            [("Y", np.float32)],
            {"output_height": out, "output_width": out, "sampling_ratio": 2,
             "spatial_scale": scale, "mode": "avg", "coordinate_transformation_mode": ctm},
            opset=16)

    def tv_cpu(inp):
        tv = _torchvision()
        torch = peers.torch_cpu()
        x, r = torch.from_numpy(inp["x"]), torch.from_numpy(inp["rois"])
        return lambda: tv.ops.roi_align(x, r, out, scale, 2, aligned=aligned)

    def gpu(inp):
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: fastops.roi_align(g["x"], g["rois"], out, scale, 2,
                                                        "avg", aligned))

    def tv_gpu(inp):
        tv = _torchvision()
        torch = peers.torch_cuda()
        x, r = torch.from_numpy(inp["x"]).cuda(), torch.from_numpy(inp["rois"]).cuda()
        return peers.torch_gpu_call(lambda: tv.ops.roi_align(x, r, out, scale, 2,
                                                             aligned=aligned))

    return Workload(
        name=name, op="roi_align", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": tv_cpu, "fastops-gpu": gpu,
               "torch-cuda": tv_gpu},
        heavy=heavy, quick=quick)


def _inputs(x, boxes, batch):
    rois = np.concatenate([batch[:, None].astype(np.float32), boxes], axis=1)
    return {"x": x, "rois": rois, "boxes": boxes, "batch": batch}


def _fpn_workload(k, out, quick=True):
    def make():
        rng = np.random.default_rng(0)
        x = _features()
        rng.standard_normal(x.shape, dtype=np.float32)   # the boxes' stream as before
        boxes = _boxes(rng, k)
        return _inputs(x, boxes, rng.integers(0, 2, k).astype(np.int64))

    return _workload(f"roi_align 2x256x200x272 float32 {k} rois {out}x{out} sr=2", make, out,
                     1.0 / _STRIDE, True, heavy=True, quick=quick)


def _coarse_level_workload(k=150):
    """The coarse FPN level of the frcnn detector (fastops._bench.onnx): a 10 x 13 map of
    256 channels at stride 32 of a 320 x 416 image, 150 RoIs (its RPN's post-NMS
    count, all mapped to this level), 7 x 7, sampling_ratio 2, output_half_pixel
    (aligned=False), as torchvision's MultiScaleRoIAlign exports it.  The sampling work
    is ~1000x the map: the class the channel-interleaved kernel is for."""
    def make():
        rng = np.random.default_rng(0)
        x = rng.standard_normal((1, 256, 10, 13), dtype=np.float32)
        side = np.exp(rng.uniform(np.log(32), np.log(320), (k, 2)))
        ctr = rng.uniform(0, 1, (k, 2)) * np.array([416, 320])
        boxes = np.concatenate([np.clip(ctr - side / 2, 0, [416, 320]),
                                np.clip(ctr + side / 2, 0, [416, 320])], 1)
        return _inputs(x, boxes.astype(np.float32), np.zeros(k, np.int64))

    return _workload(f"roi_align 1x256x10x13 float32 {k} rois 7x7 sr=2 (coarse FPN level)",
                     make, 7, 1.0 / 32, False, heavy=False, quick=False)


WORKLOADS = [
    _fpn_workload(1000, 7),      # box head
    _fpn_workload(200, 14),      # mask head
    # issue 14's sweep: a handful of RoIs (latency-bound second stages), not in --quick
    *[_fpn_workload(k, out, quick=False) for k in (1, 4, 16, 64) for out in (7, 14)],
    _coarse_level_workload(),
]
