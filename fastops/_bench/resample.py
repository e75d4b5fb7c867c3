"""Workloads for resize (ONNX Resize; sizes from the resize issue's targets).

Each peer computes the same result: ONNX Runtime runs a one-node Resize model with the
same attributes; torch.nn.functional.interpolate and cv2.resize (looped over the planes
of an NCHW batch) are used where they implement the same filter (bilinear half-pixel;
torch's antialias equals ONNX antialias with exclude_outside=1).
"""
import numpy as np

import fastops
from fastops._bench import Workload, peers
from fastops.resample import resize


def _rng():
    return np.random.default_rng(0)


def _ort_resize(x, sizes, attrs, axes=None):
    a = dict(attrs)
    if axes is not None:
        a["axes"] = list(axes)
    return peers.ort_session(
        "Resize", [("X", x), ("roi", None), ("scales", None),
                   ("sizes", np.asarray(sizes, np.int64))],
        [("Y", x.dtype)], a, opset=19)


def _f32_upscale(quick=True):
    """float32 NCHW (8, 3, 512, 512) -> (8, 3, 1024, 1024), bilinear half-pixel."""
    shape, size = (8, 3, 512, 512), (1024, 1024)

    def make():
        return {"x": _rng().random(shape, dtype=np.float32)}

    def fast(inp):
        return lambda: resize(inp["x"], sizes=size, axes=(2, 3), mode="linear")

    def ort(inp):
        return _ort_resize(inp["x"], list(shape[:2]) + list(size), {"mode": "linear"})

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        return lambda: torch.nn.functional.interpolate(t, size, mode="bilinear",
                                                       align_corners=False)

    def cv2_loop(inp):
        cv2 = _cv2()
        planes = [inp["x"][n, c] for n in range(shape[0]) for c in range(shape[1])]
        return lambda: [cv2.resize(p, size[::-1], interpolation=cv2.INTER_LINEAR)
                        for p in planes]

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: resize(x, sizes=size, axes=(2, 3), mode="linear"))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        t = torch.from_numpy(inp["x"]).cuda()
        return peers.torch_gpu_call(
            lambda: torch.nn.functional.interpolate(t, size, mode="bilinear"))

    return Workload(
        name="resize float32 8x3x512x512 -> 1024x1024 linear", op="resize", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": torch_cpu, "cv2": cv2_loop,
               "fastops-gpu": gpu, "torch-cuda": torch_gpu},
        bytes_moved=lambda inp: inp["x"].nbytes * 5, heavy=True, quick=quick)


def _cv2():
    cv2 = peers._need("cv2")
    cv2.setNumThreads(fastops.get_num_threads())
    return cv2


def _u8_antialias(layout, quick=True):
    """uint8 1080x1920x3 frame -> 360x640, bilinear antialias (torch/Pillow's filter:
    exclude_outside=1), as HWC (axes 0, 1) or NCHW (1, 3, 1080, 1920)."""
    attrs = {"mode": "linear", "antialias": 1, "exclude_outside": 1}

    def make():
        img = _rng().integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
        x = img if layout == "HWC" else np.ascontiguousarray(img.transpose(2, 0, 1))[None]
        return {"x": x}

    axes = (0, 1) if layout == "HWC" else (2, 3)

    def fast(inp):
        return lambda: resize(inp["x"], sizes=(360, 640), axes=axes, **attrs)

    def ort(inp):
        return _ort_resize(inp["x"], [360, 640], attrs, axes=axes)

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        if layout == "HWC":
            t = t.permute(2, 0, 1)[None]         # channels-last view, torch's fast path
        return lambda: torch.nn.functional.interpolate(t, (360, 640), mode="bilinear",
                                                       antialias=True)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: resize(x, sizes=(360, 640), axes=axes, **attrs))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        t = torch.from_numpy(inp["x"]).cuda()
        if layout == "HWC":
            t = t.permute(2, 0, 1)[None]
        return peers.torch_gpu_call(lambda: torch.nn.functional.interpolate(
            t.float(), (360, 640), mode="bilinear", antialias=True))

    shape = "1080x1920x3" if layout == "HWC" else "1x3x1080x1920"
    return Workload(
        name=f"resize uint8 {shape} -> 360x640 linear antialias", op="resize", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": torch_cpu, "fastops-gpu": gpu,
               "torch-cuda": torch_gpu},
        heavy=True, quick=quick)


def _u8_upscale(quick=True):
    """uint8 HWC 540x960x3 -> 1080x1920, bilinear half-pixel (cv2 INTER_LINEAR computes
    the same filter in 11-bit fixed point: within 1 grey level)."""
    def make():
        return {"x": _rng().integers(0, 256, (540, 960, 3), dtype=np.uint8)}

    def fast(inp):
        return lambda: resize(inp["x"], sizes=(1080, 1920), axes=(0, 1), mode="linear")

    def ort(inp):
        return _ort_resize(inp["x"], [1080, 1920], {"mode": "linear"}, axes=(0, 1))

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"]).permute(2, 0, 1)[None]
        return lambda: torch.nn.functional.interpolate(t, (1080, 1920), mode="bilinear")

    def cv2_resize(inp):
        cv2 = _cv2()
        return lambda: cv2.resize(inp["x"], (1920, 1080), interpolation=cv2.INTER_LINEAR)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: resize(x, sizes=(1080, 1920), axes=(0, 1),
                                             mode="linear"))

    return Workload(
        name="resize uint8 540x960x3 -> 1080x1920 linear", op="resize", make=make,
        impls={"fastops": fast, "onnxruntime": ort, "torch": torch_cpu, "cv2": cv2_resize,
               "fastops-gpu": gpu},
        quick=quick)


def _f32_small(mode, quick=True):
    """float32 NCHW (1, 3, 224, 224) -> (1, 3, 448, 448): per-call overhead matters."""
    size = (448, 448)

    def make():
        return {"x": _rng().random((1, 3, 224, 224), dtype=np.float32)}

    def fast(inp):
        return lambda: resize(inp["x"], sizes=size, axes=(2, 3), mode=mode)

    def ort(inp):
        return _ort_resize(inp["x"], [1, 3, 448, 448], {"mode": mode})

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        t = torch.from_numpy(inp["x"])
        tmode = {"nearest": "nearest-exact", "linear": "bilinear", "cubic": "bicubic"}[mode]
        return lambda: torch.nn.functional.interpolate(t, size, mode=tmode)

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: resize(x, sizes=size, axes=(2, 3), mode=mode))

    impls = {"fastops": fast, "onnxruntime": ort, "fastops-gpu": gpu}
    if mode != "nearest":   # torch's nearest-exact breaks ties upwards (round_prefer_ceil)
        impls["torch"] = torch_cpu
    return Workload(
        name=f"resize float32 1x3x224x224 -> 448x448 {mode}", op="resize", make=make,
        impls=impls, quick=quick)


WORKLOADS = [
    _f32_upscale(),
    _u8_antialias("HWC"),
    _u8_antialias("NCHW"),
    _u8_upscale(),
    _f32_small("linear"),
    _f32_small("cubic"),
    _f32_small("nearest"),
]
