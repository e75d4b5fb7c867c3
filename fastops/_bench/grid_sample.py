"""Workloads for grid_sample (the task's targets).

x (4, 64, 128, 128) float32 sampled at a random grid (4, 128, 128, 2) uniform in
[-1.1, 1.1] (about 9% of the samples fall outside, so padding matters), zeros padding,
align_corners=False, for bilinear, nearest and bicubic; and a spatial-transformer-like
call, 8 RGB images of 256 x 256 with a smooth affine grid (few channels: the per-point
plan dominates).  Peers: ONNX Runtime (one
GridSample node, opset 20), torch.nn.functional.grid_sample, and for bilinear/nearest
cv2.remap looped over the N*C planes with the equivalent pixel maps
``((g + 1) * size - 1) / 2``, converted once to OpenCV's fixed-point maps (its fastest
path; BORDER_CONSTANT 0; OpenCV quantizes bilinear positions to 1/32 pixel, so its
results are close, not equal).
"""
import numpy as np

import fastops
from fastops._bench import Workload, peers

_N, _C, _H, _W = 4, 64, 128, 128
_ONNX_MODE = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}


def _make():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((_N, _C, _H, _W), dtype=np.float32)
    grid = rng.uniform(-1.1, 1.1, (_N, _H, _W, 2)).astype(np.float32)
    return {"x": x, "grid": grid}


def _make_affine():
    """A spatial-transformer-like call: RGB images, a smooth affine grid (rotation by
    10 degrees, scale 0.9, a small shift; torch's affine_grid with align_corners=False)."""
    rng = np.random.default_rng(1)
    n, h, w = 8, 256, 256
    x = rng.standard_normal((n, 3, h, w), dtype=np.float32)
    a = np.deg2rad(10.0)
    theta = np.array([[np.cos(a), -np.sin(a), 0.05], [np.sin(a), np.cos(a), -0.03]]) * 0.9
    xs = (2 * np.arange(w) + 1) / w - 1
    ys = (2 * np.arange(h) + 1) / h - 1
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)  # (h, w, 3)
    grid = np.broadcast_to(base @ theta.T, (n, h, w, 2)).astype(np.float32)
    return {"x": x, "grid": np.ascontiguousarray(grid)}


def _grid_sample():
    from fastops.sampling import grid_sample
    return grid_sample


def _workload(mode, make=_make, label=None):
    def fast(inp):
        gs = _grid_sample()
        x, g = inp["x"], inp["grid"]
        return lambda: gs(x, g, mode, "zeros", False)

    def ort(inp):
        return peers.ort_session(
            "GridSample", [("X", inp["x"]), ("grid", inp["grid"])], [("Y", np.float32)],
            {"mode": _ONNX_MODE[mode], "padding_mode": "zeros", "align_corners": 0},
            opset=20)

    def torch_impl(inp):
        torch = peers.torch_cpu()
        x, g = torch.from_numpy(inp["x"]), torch.from_numpy(inp["grid"])
        f = torch.nn.functional.grid_sample
        return lambda: f(x, g, mode=mode, padding_mode="zeros", align_corners=False)

    def cv2_impl(inp):
        if mode == "bicubic":
            raise NotImplementedError("cv2.remap's cubic is not torch's bicubic")
        cv2 = peers._need("cv2")
        cv2.setNumThreads(fastops.get_num_threads())
        x, g = inp["x"], inp["grid"]
        # the pixel maps of align_corners=False, converted to OpenCV's fixed-point maps
        # (its fastest remap path) outside the timed call
        H, W = x.shape[2:]
        mx = (((g[..., 0] + 1) * W - 1) / 2).astype(np.float32)
        my = (((g[..., 1] + 1) * H - 1) / 2).astype(np.float32)
        nearest = mode == "nearest"
        maps = [cv2.convertMaps(mx[n], my[n], cv2.CV_16SC2, nninterpolation=nearest)
                for n in range(x.shape[0])]
        interp = cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR

        def run():
            out = np.empty(x.shape[:2] + g.shape[1:3], np.float32)
            for n in range(x.shape[0]):
                m1, m2 = maps[n]
                for c in range(x.shape[1]):
                    cv2.remap(x[n, c], m1, None if nearest else m2, interp, dst=out[n, c],
                              borderMode=cv2.BORDER_CONSTANT, borderValue=0)
            return out
        return run

    def gpu(inp):
        gs = _grid_sample()
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: gs(g["x"], g["grid"], mode, "zeros", False))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        x, g = torch.from_numpy(inp["x"]).cuda(), torch.from_numpy(inp["grid"]).cuda()
        f = torch.nn.functional.grid_sample
        return peers.torch_gpu_call(
            lambda: f(x, g, mode=mode, padding_mode="zeros", align_corners=False))

    return Workload(
        name=label or f"grid_sample {_N}x{_C}x{_H}x{_W} float32 {mode} zeros grid U(-1.1, 1.1)",
        op="grid_sample", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": torch_impl, "cv2": cv2_impl,
               "fastops-gpu": gpu, "torch-cuda": torch_gpu},
        heavy=True)


WORKLOADS = [_workload("bilinear"), _workload("nearest"), _workload("bicubic"),
             _workload("bilinear", _make_affine,
                       "grid_sample 8x3x256x256 float32 bilinear zeros affine grid (STN)")]
