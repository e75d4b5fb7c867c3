"""Workloads for deform_conv2d (the research note's shapes and the issue's targets).

* 2 x 64 x 64 x 64 float32, 64 -> 64 output channels, 3x3, pad 1, one offset group,
  without a mask (DCN v1) and with one (DCN v2); offsets ~ N(0, 2) pixels.
* A detector DCN layer: 1 x 256 x 100 x 136 (stride 8 of an 800 x 1088 image),
  256 -> 256, 3x3, pad 1, with a mask (mmdet's DCNv2 in ResNet stages 3-5).

Peers: ONNX Runtime's DeformConv (one-node opset-22 model), torchvision's deform_conv2d
where it imports, and CuPy/torch on a GPU.  The "conv2d floor" workloads time
torch.nn.functional.conv2d of the same shapes without deformation: a lower reference line
(a deformable conv does that GEMM plus the sampling), not a peer of the same op.

Measured on the shared 2-core VM in a quiet moment (wall-clock medians, noisy; fastops
with NumPy's OpenBLAS, ONNX Runtime 1.32 without spinning, torch 2.13 conv2d):

=====================================  =========  ======  ==========  ============
workload, threads                      fastops    ORT     ratio       conv2d floor
=====================================  =========  ======  ==========  ============
2x64x64x64 -> 64 v1, 2 threads         13.8 ms    18.4    0.75        11.4
2x64x64x64 -> 64 v2, 2 threads         11.2 ms    20.0    0.56        8.9
1x256x100x136 -> 256 v2, 2 threads     155 ms     178     0.87        120
2x64x64x64 -> 64 v1, 1 thread          20.4 ms    29.1    0.70        15.9
2x64x64x64 -> 64 v2, 1 thread          18.9 ms    28.9    0.65        10.8
1x256x100x136 -> 256 v2, 1 thread      295 ms     356     0.83        236
=====================================  =========  ======  ==========  ============

torchvision 0.29.1's CPU deform_conv2d (torch 2.14.1, side venv, 2 threads, while the
machine was busy): 228-240 ms on 2x64x64x64 and 1.34 s on the detector layer, against
fastops' 32 and 320 ms in the same run.
"""
import numpy as np

from fastops._bench import Workload, peers
from fastops.conv import deform_conv2d


def _inputs(n, c, h, w, m, with_mask, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((n, c, h, w), dtype=np.float32),
        "weight": (rng.standard_normal((m, c, 3, 3), dtype=np.float32) * 0.05),
        "offset": rng.standard_normal((n, 18, h, w), dtype=np.float32) * 2,
        "mask": rng.random((n, 9, h, w), dtype=np.float32) if with_mask else None,
        "bias": rng.standard_normal(m, dtype=np.float32),
    }


def _workload(n, c, h, w, m, with_mask, quick=True):
    def make():
        return _inputs(n, c, h, w, m, with_mask)

    def fast(inp):
        return lambda: deform_conv2d(inp["x"], inp["offset"], inp["weight"], inp["bias"],
                                     padding=1, mask=inp["mask"])

    def ort(inp):
        feeds = [("X", inp["x"]), ("W", inp["weight"]), ("offset", inp["offset"]),
                 ("B", inp["bias"]), ("mask", inp["mask"])]
        return peers.ort_session("DeformConv", feeds, [("Y", np.float32)],
                                 {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, opset=22)

    def tv_cpu(inp):
        torch = peers.torch_cpu()
        tv = peers._need("torchvision")
        t = {k: (None if v is None else torch.from_numpy(v)) for k, v in inp.items()}
        return lambda: tv.ops.deform_conv2d(t["x"], t["offset"], t["weight"], t["bias"],
                                            padding=1, mask=t["mask"])

    def gpu(inp):
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: deform_conv2d(g["x"], g["offset"], g["weight"],
                                                    g["bias"], padding=1, mask=g["mask"]))

    def tv_gpu(inp):
        torch = peers.torch_cuda()
        tv = peers._need("torchvision")
        t = {k: (None if v is None else torch.from_numpy(v).cuda()) for k, v in inp.items()}
        return peers.torch_gpu_call(lambda: tv.ops.deform_conv2d(
            t["x"], t["offset"], t["weight"], t["bias"], padding=1, mask=t["mask"]))

    v = "v2 (mask)" if with_mask else "v1"
    return Workload(
        name=f"deform_conv2d {n}x{c}x{h}x{w} float32 -> {m} 3x3 {v}",
        op="deform_conv2d", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": tv_cpu, "fastops-gpu": gpu,
               "torch-cuda": tv_gpu},
        heavy=True, quick=quick)


def _conv_floor(n, c, h, w, m):
    """torch conv2d of the same shape, no deformation: the GEMM-only lower line."""
    def make():
        return _inputs(n, c, h, w, m, False)

    def conv(inp):
        torch = peers.torch_cpu()
        x, wt, b = (torch.from_numpy(inp[k]) for k in ("x", "weight", "bias"))
        return lambda: torch.nn.functional.conv2d(x, wt, b, padding=1)

    def conv_gpu(inp):
        torch = peers.torch_cuda()
        x, wt, b = (torch.from_numpy(inp[k]).cuda() for k in ("x", "weight", "bias"))
        return peers.torch_gpu_call(lambda: torch.nn.functional.conv2d(x, wt, b, padding=1))

    return Workload(
        name=f"conv2d floor (torch, no deform) {n}x{c}x{h}x{w} -> {m} 3x3",
        op="deform_conv2d", make=make, impls={"torch": conv, "torch-cuda": conv_gpu},
        quick=False)


WORKLOADS = [
    _workload(2, 64, 64, 64, 64, False),
    _workload(2, 64, 64, 64, 64, True),
    _workload(1, 256, 100, 136, 256, True, quick=False),
    _conv_floor(2, 64, 64, 64, 64),
    _conv_floor(1, 256, 100, 136, 256),
]
