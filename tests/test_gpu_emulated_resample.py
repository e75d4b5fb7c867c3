"""The real resize GPU launchers (fastops/_gpu/resample.py) and kernels/resample.cu, run on
the CPU through tests/cuda_emu (see tests/test_gpu_emulated.py for the harness).

Each test calls fastops.resample.resize with emulated-CuPy arrays and compares with the
CPU backend bit for bit: the GPU builds the same tables with the same double-precision
operations and sums the taps in the CPU's order with round-to-nearest intrinsics, so
integer and float outputs are identical.  Sizes are small: every block is 256 emulated threads.
"""
import numpy as np
import pytest

from fastops.resample import resize
from tests import cuda_emu
from tests.cuda_emu import host, same

pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")


cp = cuda_emu.cupy_fixture()


def _data(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 60).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), shape,
                        endpoint=True).astype(dtype)


CONFIGS = [
    dict(mode="linear"),
    dict(mode="linear", antialias=True, exclude_outside=True),
    dict(mode="cubic"),
    dict(mode="cubic", antialias=True, cubic_coeff_a=-0.5),
    dict(mode="cubic", exclude_outside=True, coordinate_transformation_mode="align_corners"),
    dict(mode="nearest", nearest_mode="ceil", coordinate_transformation_mode="asymmetric"),
    dict(mode="nearest", nearest_mode="floor", exclude_outside=True),
    dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
         roi=[0.1, -0.2, 0.9, 1.1], extrapolation_value=3.5),
    dict(mode="nearest", coordinate_transformation_mode="tf_crop_and_resize",
         roi=[0.3, 0.0, 1.2, 0.8], extrapolation_value=-2.0),
    dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
    dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel"),
    dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn"),
]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_resize_bitwise(cp, dtype):
    rng = np.random.default_rng(20)
    x = _data(rng, (2, 2, 5, 7), dtype)
    gx = cp.asarray(x)
    for kw in CONFIGS:
        for scales in ((0.6, 1.7), (2.0, 0.5), (1.0, 2.5)):
            want = resize(x, scales, axes=(2, 3), **kw)
            got = host(resize(gx, scales, axes=(2, 3), **kw))
            same(got, want)


def test_resize_axes_layouts_and_views(cp):
    rng = np.random.default_rng(21)
    x = _data(rng, (3, 4, 5, 6), "float32")
    u = _data(rng, (3, 4, 5, 6), "uint8")
    for arr in (x, u):
        g = cp.asarray(arr)
        for axes, scales in (((1,), (2.5,)), ((3,), (0.5,)), ((0, 1), (1.5, 0.7)),
                             ((1, 2, 3), (1.5, 0.7, 2.0)), ((0, 1, 2, 3), (2, 0.5, 1.5, 0.7))):
            for kw in (dict(mode="linear"), dict(mode="nearest"),
                       dict(mode="cubic", antialias=True)):
                same(host(resize(g, scales, axes=axes, **kw)), resize(arr, scales, axes=axes, **kw))
        # strided, reversed, transposed views
        for view, hview in ((g[:, ::-1], arr[:, ::-1]), (g[::2, :, 1:5], arr[::2, :, 1:5]),
                            (g.transpose(0, 2, 3, 1), arr.transpose(0, 2, 3, 1))):
            for kw in (dict(mode="linear"), dict(mode="nearest")):
                same(host(resize(view, (1.7, 0.6), axes=(1, 2), **kw)),
                     resize(hview, (1.7, 0.6), axes=(1, 2), **kw))
        # sizes and keep_aspect_ratio_policy
        for policy in ("stretch", "not_larger", "not_smaller"):
            same(host(resize(g, sizes=(7, 4), axes=(2, 3), mode="linear",
                             keep_aspect_ratio_policy=policy)),
                 resize(arr, sizes=(7, 4), axes=(2, 3), mode="linear",
                        keep_aspect_ratio_policy=policy))


def test_tables_bitwise(cp):
    """The device table builder against the CPU one, row for row."""
    from fastops._cpu import resample as cpu
    from fastops._gpu import resample as gpu
    from fastops.resample import COORDINATE_MODES, _taps
    for wdt in (np.float32, np.float64):
        for mode, aa, excl in ((0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 1, 1), (2, 0, 1),
                               (2, 1, 0)):
            for ctm in COORDINATE_MODES.values():
                for n_in, n_out, scale, width in ((7, 3, 0.45, 3.15), (5, 12, 2.4, 12.0),
                                                  (9, 1, 0.15, 1.35), (4, 4, 1.0, 4.0)):
                    name = ("nearest", "linear", "cubic")[mode]
                    n_raw, start = _taps(name, aa, scale)
                    K = 1 if mode == 0 else min(n_raw, n_in)
                    args = (n_in, n_out, mode, ctm, 1, scale, width, 0.2, 0.9, -0.6, aa, excl,
                            n_raw, start)
                    hf, hc = np.empty(n_out, np.int64), np.empty(n_out, np.int64)
                    hw, he = np.empty((n_out, K), wdt), np.empty(n_out, np.uint8)
                    cpu.axis_table(*args, hf, hc, hw, he, 1)
                    gf, gc = cp.empty(n_out, np.int64), cp.empty(n_out, np.int64)
                    gw, ge = cp.empty((n_out, K), wdt), cp.empty(n_out, np.uint8)
                    gpu.axis_table(*args, gf, gc, gw, ge)
                    for g, h in ((gf, hf), (gc, hc), (gw, hw), (ge, he)):
                        same(host(g), h)


def test_cached_tables_are_per_device(cp):
    """GPU tables are cached like the CPU's (fastops.resample._CACHE), per device, stream
    and thread: the same resize on GPU 0, GPU 1, GPU 0 again and in another thread gives
    the CPU's bits each time (the fake refuses a kernel argument of another device, so a
    table shared across devices fails here)."""
    from fastops import resample as R
    x = _data(np.random.default_rng(4), (1, 2, 9, 11), np.float32)
    want = resize(x, sizes=[1, 2, 5, 17], mode="cubic")
    R._CACHE.clear()
    for device in (0, 1, 0):
        with cp.cuda.Device(device):
            gx = cp.asarray(x)
            same(host(resize(gx, sizes=[1, 2, 5, 17], mode="cubic")), want)
    devices = sorted(k[1][0] for k in R._CACHE if k[0] == "gpu")
    assert devices == [0, 0, 1, 1]          # (two axes a device)
    # another thread builds its own (per-thread default streams share one ptr)
    # and a thread started after it ended builds its own too, though it usually gets
    # the ended thread's threading.get_ident()
    import threading
    got = []
    for _ in range(2):
        t = threading.Thread(target=lambda: got.append(
            host(resize(cp.asarray(x), sizes=[1, 2, 5, 17], mode="cubic"))))
        t.start()
        t.join()
    for g in got:
        same(g, want)
    assert len({k[1][2] for k in R._CACHE if k[0] == "gpu"}) == 3
    R._CACHE.clear()


def test_wide_antialias_and_saturation(cp):
    rng = np.random.default_rng(22)
    x = _data(rng, (1, 300), "uint8")
    for kw in (dict(mode="linear", antialias=True), dict(mode="cubic", antialias=True)):
        same(host(resize(cp.asarray(x), sizes=(1, 7), **kw)), resize(x, sizes=(1, 7), **kw))
    s = np.array([0, 255, 255, 0, 0, 255], np.uint8)      # cubic overshoot saturates
    same(host(resize(cp.asarray(s), [2.5], mode="cubic")), resize(s, [2.5], mode="cubic"))
    i64 = np.array([2**62, -2**62, 2**63 - 1, -2**63], np.int64)
    same(host(resize(cp.asarray(i64), [1.5], mode="cubic")), resize(i64, [1.5], mode="cubic"))


def test_nan_inf_and_empty(cp):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[1, 2], x[3, 0] = np.inf, np.nan
    for mode in ("nearest", "linear", "cubic"):
        same(host(resize(cp.asarray(x), [1.5, 2.0], mode=mode)), resize(x, [1.5, 2.0], mode=mode))
    e = cp.zeros((0, 3, 4), np.float32)
    assert host(resize(e, [2.0, 2.0], axes=(1, 2), mode="linear")).shape == (0, 6, 8)
    y = host(resize(cp.asarray(x), [1.0, 1.0], mode="cubic"))      # identity: a copy
    same(y, x)


def test_cpu_fast_paths_bitwise(cp):
    """Rows long enough for the CPU's exact-2x vector loops (C = 1 and C = 3), the AVX2
    or SSE2 steps and the nearest duplication against the GPU's plain tap sums."""
    rng = np.random.default_rng(23)
    for dtype in ("float32", "uint8", "float64"):
        row = _data(rng, (2, 80), dtype)
        hwc = _data(rng, (6, 40, 3), dtype)
        for arr, axes, scales in ((row, (1,), (2.0,)), (row, (1,), (0.5,)),
                                  (hwc, (0, 1), (2.0, 2.0)), (hwc, (0, 1), (0.5, 0.5))):
            g = cp.asarray(arr)
            for kw in (dict(mode="linear"), dict(mode="linear", antialias=True),
                       dict(mode="cubic"), dict(mode="nearest")):
                same(host(resize(g, scales, axes=axes, **kw)),
                     resize(arr, scales, axes=axes, **kw))
