"""The real deform_conv GPU launcher (fastops/_gpu/deform_conv.py) and CUDA source
(kernels/deform_conv.cu), run on the CPU through tests/cuda_emu (see
tests/test_gpu_emulated.py for the harness).

The fake cupy has no ``matmul`` (cuBLAS): this module's fixture lends it one computed by
NumPy on the host data, for this module only.  The im2col kernel does the CPU kernel's
sample arithmetic with round-to-nearest intrinsics, so its columns equal the CPU's bit
for bit; the GEMM sums in another order than the CPU's BLAS, so outputs are compared
with a float tolerance (and float64 results to 1e-12).  Sizes are small: every block is
256 emulated threads.
"""
import numpy as np
import pytest

from fastops.conv import deform_conv2d, modulated_deform_conv2d
from tests import cuda_emu
from tests.cuda_emu import host
from tests.reference.deform_conv import deform_conv2d_ref
from tests.test_deform_conv import CONFIGS, _case

pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")


def _cublas(fake):
    def matmul(a, b, out=None):
        """cupy.matmul (cuBLAS) on the fake's host memory, with NumPy."""
        for v in (a, b) + (() if out is None else (out,)):
            assert isinstance(v, fake.ndarray), "matmul of a host array"
        r = np.matmul(a.view(np.ndarray), b.view(np.ndarray))
        if out is None:
            return fake.array(r)
        assert out.shape == r.shape and out.dtype == r.dtype
        out.view(np.ndarray)[...] = r
        return out
    return {"matmul": matmul}


cp = cuda_emu.cupy_fixture(_cublas)


def _gpu(cp, arrs, kw, **extra):
    g = {k: (None if v is None else cp.asarray(v)) for k, v in arrs.items()}
    return deform_conv2d(g["x"], g["offset"], g["weight"], g["bias"], mask=g["mask"], **kw,
                         **extra)


def _cpu(arrs, kw, **extra):
    return deform_conv2d(arrs["x"], arrs["offset"], arrs["weight"], arrs["bias"],
                         mask=arrs["mask"], **kw, **extra)


def _close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = {np.float16: 1e-3, np.float32: 2e-5, np.float64: 1e-12}[np.dtype(dtype).type]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("mask", [False, True])
def test_configs_float64(cp, cfg, mask):
    N, C, H, W, M, kh, kw_, s, p, d, g, dg = cfg
    arrs, kw = _case(31, N, C, H, W, M, kh, kw_, s, p, d, g, dg, mask=mask, spread=3.0)
    got = host(_gpu(cp, arrs, kw))
    _close(got, _cpu(arrs, kw), np.float64)
    ref = deform_conv2d_ref(arrs["x"], arrs["offset"], arrs["weight"], arrs["bias"], s, p, d,
                            g, dg, arrs["mask"])
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_dtypes(cp, dtype):
    arrs, kw = _case(32, 2, 6, 7, 9, 4, 3, 3, (1, 2), (1, 0, 2, 1), (2, 1), 2, 3,
                     dtype=dtype, spread=1.5)
    _close(host(_gpu(cp, arrs, kw)), _cpu(arrs, kw), dtype)


def test_columns_bit_identical_to_cpu(cp):
    """A 1x1 kernel with one-hot weights makes each output a single column entry: the
    GEMM adds nothing, so GPU and CPU must agree bit for bit (samples, mask, NaN/inf
    offsets and the boundary rule)."""
    rng = np.random.default_rng(33)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    off = (rng.standard_normal((2, 2 * 3, 6, 7)) * 3).astype(np.float32)
    off.reshape(-1)[::9] = np.nan
    off.reshape(-1)[1::13] = np.inf
    off.reshape(-1)[2::17] = -1.0          # exactly on the edge for row 1
    mask = rng.uniform(0, 2, (2, 3, 6, 7)).astype(np.float32)
    w = np.eye(3, dtype=np.float32).reshape(3, 3, 1, 1)
    for m in (None, mask):
        got = host(deform_conv2d(cp.asarray(x), cp.asarray(off), cp.asarray(w),
                                 deform_groups=3, mask=None if m is None else cp.asarray(m)))
        want = deform_conv2d(x, off, w, deform_groups=3, mask=m)
        np.testing.assert_array_equal(got, want)


def test_modulated_and_views(cp):
    arrs, kw = _case(34, 2, 4, 6, 7, 6, 3, 3, dtype=np.float32)
    want = _cpu(arrs, kw)
    g = {k: cp.asarray(v) for k, v in arrs.items()}
    got = modulated_deform_conv2d(g["x"], g["offset"], g["mask"], g["weight"], g["bias"],
                                  **kw)
    _close(host(got), want, np.float32)
    # transposed / negative-stride views on the device
    xv = cp.asarray(np.ascontiguousarray(arrs["x"][:, :, ::-1].transpose(0, 1, 3, 2)))
    xv = xv.transpose(0, 1, 3, 2)[:, :, ::-1]
    ov = cp.asarray(np.ascontiguousarray(arrs["offset"][:, ::-1]))[:, ::-1]
    got = deform_conv2d(xv, ov, g["weight"], g["bias"], mask=g["mask"], **kw)
    _close(host(got), want, np.float32)


def test_pixel_tiles_and_image_chunks(cp, monkeypatch):
    """A column budget smaller than one image: tiles of output pixels (the last one
    partial); a budget of two images: chunks of images (the last one partial)."""
    import fastops._gpu.deform_conv as gdc
    arrs, kw = _case(35, 3, 5, 8, 9, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1)
    want = _cpu(arrs, kw)
    per_image = 5 * 9 * 8 * 9 * 8
    for budget in (per_image // 3 + 8, 2 * per_image):
        monkeypatch.setattr(gdc, "_COL_BYTES", budget)
        nb, P = gdc._plan(3, 45, 72, 8)
        assert (nb, P) in ((1, 24), (2, 72))
        _close(host(_gpu(cp, arrs, kw)), want, np.float64)


def test_empty_and_no_channels(cp):
    x = cp.zeros((1, 0, 4, 4), np.float32)
    off = cp.zeros((1, 18, 2, 2), np.float32)
    w = cp.zeros((3, 0, 3, 3), np.float32)
    b = cp.asarray(np.arange(3, dtype=np.float32))
    got = host(deform_conv2d(x, off, w, b))
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(3.0)[None, :, None, None],
                                                       (1, 3, 2, 2)))
    got = host(deform_conv2d(cp.zeros((0, 2, 4, 4), np.float32),
                             cp.zeros((0, 18, 2, 2), np.float32),
                             cp.zeros((3, 2, 3, 3), np.float32)))
    assert got.shape == (0, 3, 2, 2)
    got = host(deform_conv2d(cp.ones((1, 2, 0, 3), np.float32),
                             cp.zeros((1, 18, 2, 3), np.float32),
                             cp.ones((3, 2, 3, 3), np.float32), b, padding=(2, 1)))
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(3.0)[None, :, None, None],
                                                       (1, 3, 2, 3)))


def test_mixed_devices_rejected(cp):
    arrs, kw = _case(36, 1, 2, 4, 4, 2, 3, 3, dtype=np.float32)
    with pytest.raises(TypeError, match="deform_conv2d: argument 'offset' is on the CPU"):
        deform_conv2d(cp.asarray(arrs["x"]), arrs["offset"], cp.asarray(arrs["weight"]))


def test_runs_on_the_device_of_its_arguments(cp):
    """Arrays on GPU 1 while GPU 0 is current: the kernel launches there (the fake refuses
    arrays of another device) and the result lives there."""
    arrs, kw = _case(37, 1, 3, 5, 6, 2, 3, 3, dtype=np.float32)
    with cp.cuda.Device(1):
        g = {k: cp.asarray(v) for k, v in arrs.items()}
    assert cp.cuda.Device().id == 0
    got = deform_conv2d(g["x"], g["offset"], g["weight"], g["bias"], mask=g["mask"], **kw)
    assert got.device.id == 1
    _close(host(got), _cpu(arrs, kw), np.float32)
