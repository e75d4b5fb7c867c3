"""Workloads for fastops.cv.resize (the cv2.resize drop-in), against cv2.resize itself.

cv2 computes the same bytes (uint8; INTER_CUBIC with IPP off: cv2's default IPP cubic
is within 1; 16-bit and float images with IPP off, while cv2's default build hands their
linear and cubic resizes to IPP, which computes its own way and is the speed to beat);
both run with fastops' thread count.  torch.nn.functional.interpolate on
the channels-last uint8 frame computes the same filters (bilinear / bicubic half-pixel
and nearest) with its own rounding (within a grey level or two), so it is timed next to
them as the other fast CPU resizer; it has no INTER_AREA for non-integer factors.
"""
import numpy as np

import fastops
import fastops.cv as fcv
from fastops._bench import Workload, peers

_FRAME = (1080, 1920, 3)
_FLAGS = {"linear": fcv.INTER_LINEAR, "cubic": fcv.INTER_CUBIC, "nearest": fcv.INTER_NEAREST,
          "area": fcv.INTER_AREA, "linear_exact": fcv.INTER_LINEAR_EXACT,
          "nearest_exact": fcv.INTER_NEAREST_EXACT}
_TORCH = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}


def _rng():
    return np.random.default_rng(0)


def _cv2():
    cv2 = peers._need("cv2")
    cv2.setNumThreads(fastops.get_num_threads())
    return cv2


def _frame(mode, size=(640, 640), shape=_FRAME, dtype=np.uint8, quick=True, heavy=False):
    """A 1080p frame (HWC) resized to ``size`` (width, height) with one flag."""
    flag = _FLAGS[mode]

    def make():
        rng = _rng()
        dt = np.dtype(dtype)
        if dt.kind == "f":
            return {"x": rng.random(shape, dtype=np.float32).astype(dt)}
        info = np.iinfo(dt)
        return {"x": rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)}

    def fast(inp):
        return lambda: fcv.resize(inp["x"], size, interpolation=flag)

    def cv2_resize(inp):
        cv2 = _cv2()
        return lambda: cv2.resize(inp["x"], size, interpolation=flag)

    def torch_cpu(inp):
        torch = peers.torch_cpu()
        if mode not in _TORCH or len(shape) != 3:
            raise NotImplementedError(f"torch has no {mode} resize")
        t = torch.from_numpy(inp["x"]).permute(2, 0, 1)[None]   # channels-last view
        return lambda: torch.nn.functional.interpolate(t, size[::-1], mode=_TORCH[mode])

    def gpu(inp):
        x = peers.to_gpu(inp)["x"]
        return peers.gpu_call(lambda: fcv.resize(x, size, interpolation=flag))

    def torch_gpu(inp):
        torch = peers.torch_cuda()
        if mode not in _TORCH or len(shape) != 3:
            raise NotImplementedError(f"torch has no {mode} resize")
        t = torch.from_numpy(inp["x"]).cuda().permute(2, 0, 1)[None]
        return peers.torch_gpu_call(
            lambda: torch.nn.functional.interpolate(t, size[::-1], mode=_TORCH[mode]))

    impls = {"fastops": fast, "cv2": cv2_resize, "fastops-gpu": gpu}
    if mode in _TORCH and np.dtype(dtype) in (np.uint8, np.float32):
        impls["torch"] = torch_cpu
        impls["torch-cuda"] = torch_gpu
    name = "x".join(str(v) for v in (shape[1], shape[0]) + shape[2:])
    return Workload(
        name=f"cv.resize {np.dtype(dtype).name} {name} -> {size[0]}x{size[1]} {mode}",
        op="cv.resize", make=make, impls=impls,
        bytes_moved=lambda inp: inp["x"].nbytes + size[0] * size[1] *
        (shape[2] if len(shape) == 3 else 1) * np.dtype(dtype).itemsize,
        heavy=heavy, quick=quick)


def _sweep():
    """Issue 14's sweep: image type x channels x filter on a 1080p frame, the common
    preprocessing sizes (a VGA frame to a 224x224 network input, a 224x224 image halved,
    a VGA upscale), 16-bit and float32 1080p frames halved, float64, and 1080p -> 720p.  uint8
    3-channel 1080p is WORKLOADS' own."""
    out = []
    for dtype in (np.uint8, np.uint16, np.float32):
        for C in (1, 3, 4):
            for mode in ("linear", "cubic", "area"):
                if C == 3 and (dtype == np.uint8 or (dtype == np.float32 and mode == "linear")):
                    continue
                shape = _FRAME[:2] if C == 1 else _FRAME[:2] + (C,)
                out.append(_frame(mode, shape=shape, dtype=dtype, quick=False))
    for dtype in (np.uint8, np.uint16, np.float32):
        out.append(_frame("linear", size=(224, 224), shape=(480, 640, 3), dtype=dtype,
                          quick=False))
        out.append(_frame("cubic", size=(224, 224), shape=(480, 640, 3), dtype=dtype,
                          quick=False))
    for dtype in (np.uint8, np.uint16, np.float32):
        out.append(_frame("linear", size=(112, 112), shape=(224, 224, 3), dtype=dtype,
                          quick=False))
    for dtype in (np.uint16, np.float32):
        out.append(_frame("linear", size=(1280, 960), shape=(480, 640, 3), dtype=dtype,
                          quick=False))
    for dtype in (np.uint16, np.float32):          # exact 2x: resizeAreaFast_'s 2x2 cells
        for C in (1, 3, 4):
            shape = _FRAME[:2] if C == 1 else _FRAME[:2] + (C,)
            out.append(_frame("linear", size=(960, 540), shape=shape, dtype=dtype,
                              quick=False))
    # float32 2x2 cells of mid-size images that stay in L3 between calls: back to back
    # against cv2 (IPP) 1.06-1.20 at 640x640x3 and 1.10-1.14 at 1024x1024x3 when these
    # were added (docs/performance.md, forty-ninth session)
    for size, shape in (((320, 320), (640, 640, 3)), ((512, 512), (1024, 1024, 3))):
        out.append(_frame("linear", size=size, shape=shape, dtype=np.float32, quick=False))
    out.append(_frame("linear", dtype=np.float64, quick=False))
    # 1080p -> 720p: a non-integer downscale (1.5x), where 640x640's 3x columns are one-hot
    # or of one step (const_stride_steps) and these take every tap
    for dtype in (np.uint8, np.uint16, np.float32):
        for C in (1, 3):
            shape = _FRAME[:2] if C == 1 else _FRAME
            out.append(_frame("linear", size=(1280, 720), shape=shape, dtype=dtype,
                              quick=False))
    return out


WORKLOADS = [
    _frame("linear", heavy=True),
    _frame("cubic", heavy=True),
    _frame("nearest"),
    _frame("area", heavy=True),
    _frame("linear_exact", quick=False),
    _frame("nearest_exact", quick=False),
    _frame("linear", size=(960, 540), quick=False),                # exact 2x: INTER_AREA
    _frame("linear", size=(3840, 2160), quick=False, heavy=True),  # upscale
    _frame("linear", dtype=np.float32, quick=False),
] + _sweep()
