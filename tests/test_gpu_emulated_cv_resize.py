"""The real fastops.cv.resize GPU launchers (fastops/_gpu/cv_resize.py, and the resize
family's resize2d / nearest2d for the float and nearest paths) and kernels/cv_resize.cu,
run on the CPU through tests/cuda_emu (see tests/test_gpu_emulated.py for the harness).

Each test calls fastops.cv.resize with emulated-CuPy arrays and compares with the CPU
backend bit for bit: integer images use the same integer arithmetic, the tables and the
float paths the same operations with round-to-nearest intrinsics.  Sizes are small: every
block is 256 emulated threads.
"""
import numpy as np
import pytest

import fastops.cv as fcv
from tests import cuda_emu
from tests.cuda_emu import host, same

pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")

FLAGS = (fcv.INTER_NEAREST, fcv.INTER_LINEAR, fcv.INTER_CUBIC, fcv.INTER_AREA,
         fcv.INTER_LINEAR_EXACT, fcv.INTER_NEAREST_EXACT)


cp = cuda_emu.cupy_fixture()


def _image(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.random(shape) * 300 - 50).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


# sizes: up, down (2x and 3x exact, odd), mixed, one pixel; fx/fy with the 1 / fx rule
CASES = [((17, 5), 0, 0), ((5, 4), 0, 0), (None, 0.5, 0.5), (None, 1 / 3, 0.4),
         ((22, 18), 0, 0), ((1, 1), 0, 0), ((4, 3), 0, 0)]


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "float16", "float32",
                                   "float64"])
def test_every_flag_bitwise(cp, dtype):
    rng = np.random.default_rng(30)
    for C in (1, 3):
        img = _image(rng, (9, 11, C), dtype)
        g = cp.asarray(img)
        for flag in FLAGS:
            for ds, fx, fy in CASES:
                want = fcv.resize(img, ds, fx=fx, fy=fy, interpolation=flag)
                same(host(fcv.resize(g, ds, fx=fx, fy=fy, interpolation=flag)), want)


def test_channels_views_and_dst(cp):
    rng = np.random.default_rng(31)
    for C in (2, 4, 5):
        img = _image(rng, (8, 13, C), "uint8")
        g = cp.asarray(img)
        for flag in FLAGS:
            same(host(fcv.resize(g, (10, 6), interpolation=flag)),
                 fcv.resize(img, (10, 6), interpolation=flag))
    img = _image(rng, (10, 12, 3), "uint8")
    g = cp.asarray(img)
    for view, hview in ((g[::-1], img[::-1]), (g[1::2, ::-1], img[1::2, ::-1]),
                        (g.transpose(1, 0, 2), img.transpose(1, 0, 2)),
                        (g[:, :, ::-1], img[:, :, ::-1])):
        for flag in (fcv.INTER_LINEAR, fcv.INTER_CUBIC, fcv.INTER_AREA, fcv.INTER_NEAREST):
            same(host(fcv.resize(view, (7, 9), interpolation=flag)),
                 fcv.resize(hview, (7, 9), interpolation=flag))
    dst = cp.zeros((9, 7, 3), dtype=np.uint8)
    r = fcv.resize(g, (7, 9), dst, interpolation=fcv.INTER_CUBIC)
    assert r is dst
    same(host(dst), fcv.resize(img, (7, 9), interpolation=fcv.INTER_CUBIC))


def test_cubic_vector_and_tail_elements(cp):
    """uint8 cubic: elements before the row's last multiple of 8 take OpenCV's float
    vertical sum, the tail its integer one; rows of 1, 3 and 4 channels whose length is
    not a multiple of 8."""
    rng = np.random.default_rng(32)
    for C in (1, 3, 4):
        img = _image(rng, (6, 7, C), "uint8")
        g = cp.asarray(img)
        for ds in [(11, 5), (13, 9), (3, 2)]:
            same(host(fcv.resize(g, ds, interpolation=fcv.INTER_CUBIC)),
                 fcv.resize(img, ds, interpolation=fcv.INTER_CUBIC))


def test_tables_bitwise(cp):
    """The device table builders against the CPU ones, row for row."""
    from fastops._cpu import cv_resize as cpu
    from fastops._gpu import cv_resize as gpu
    for wdt in (np.float32, np.float64):
        for n_in, n_out in ((7, 3), (9, 1), (4, 4), (13, 6), (53, 18), (1080, 7)):
            scale = n_in / n_out
            K = int(scale) + 3
            host_t = [np.zeros(n_out, np.int64), np.zeros(n_out, np.int64),
                      np.zeros((n_out, K), wdt)]
            cpu.area_table(n_in, n_out, scale, *host_t, 1)
            dev_t = [cp.zeros(n_out, dtype=np.int64), cp.zeros(n_out, dtype=np.int64),
                     cp.zeros((n_out, K), dtype=wdt)]
            gpu.area_table(n_in, n_out, scale, *dev_t)
            for a, b in zip(dev_t, host_t):
                same(host(a), b)
    for exact in (False, True):
        for n_in, n_out in ((7, 3), (5, 12), (1080, 7), (3, 3), (1, 9)):
            want = np.zeros(n_out, np.int64)
            cpu.nn_table(n_in, n_out, n_in / n_out, exact, want, 1)
            got = cp.zeros(n_out, dtype=np.int64)
            gpu.nn_table(n_in, n_out, n_in / n_out, exact, got)
            same(host(got), want)
