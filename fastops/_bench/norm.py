"""Workloads for instance_norm (issue 10's target shape plus the two other regimes).

8x64x128x128: many planes that fit in cache (statistics and output fused per plane);
1x64x256x256: planes of 256 KiB; 1x4x512x512: fewer planes than threads (chunked).
bytes_moved is one read of x and one write of y, the least any implementation can move.
"""
import numpy as np

import fastops
from fastops._bench import Workload, peers


def _workload(shape, quick=True):
    def make():
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, dtype=np.float32)
        c = shape[1]
        return {"x": x, "s": rng.uniform(0.5, 2, c).astype(np.float32),
                "b": rng.standard_normal(c).astype(np.float32)}

    def fast(inp):
        return lambda: fastops.instance_norm(inp["x"], inp["s"], inp["b"])

    def ort(inp):
        return peers.ort_session("InstanceNormalization",
                                 [("x", inp["x"]), ("s", inp["s"]), ("b", inp["b"])],
                                 [("y", np.float32)], {"epsilon": 1e-5}, opset=18)

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        x, s, b = (torch.from_numpy(inp[k]) for k in ("x", "s", "b"))
        return lambda: torch.nn.functional.instance_norm(x, weight=s, bias=b, eps=1e-5)

    def gpu(inp):
        g = peers.to_gpu(inp)
        return peers.gpu_call(lambda: fastops.instance_norm(g["x"], g["s"], g["b"]))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        x, s, b = (torch.from_numpy(inp[k]).cuda() for k in ("x", "s", "b"))
        return peers.torch_gpu_call(
            lambda: torch.nn.functional.instance_norm(x, weight=s, bias=b, eps=1e-5))

    return Workload(
        name="instance_norm " + "x".join(map(str, shape)) + " float32", op="instance_norm",
        make=make, impls={"fastops": fast, "onnxruntime": ort, "torch": torch_cpu,
                          "fastops-gpu": gpu, "torch-cuda": torch_gpu},
        bytes_moved=lambda inp: 2 * inp["x"].nbytes, heavy=True, quick=quick)


WORKLOADS = [
    _workload((8, 64, 128, 128)),
    _workload((1, 64, 256, 256), quick=False),
    _workload((1, 4, 512, 512), quick=False),
]
