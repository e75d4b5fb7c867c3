"""The real grid_sample GPU launcher (fastops/_gpu/grid_sample.py) and CUDA source
(kernels/grid_sample.cu), run on the CPU through tests/cuda_emu (see
tests/test_gpu_emulated.py for the harness).  The kernels do the CPU kernel's arithmetic
with round-to-nearest intrinsics, so results must equal the CPU backend bit for bit.
Sizes are small: every block is 256 emulated threads.
"""
import numpy as np
import pytest

from fastops.sampling import grid_sample
from tests import cuda_emu
from tests.cuda_emu import host, same
from tests.test_grid_sample import COMBOS_4D, COMBOS_5D

pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")


cp = cuda_emu.cupy_fixture()


def _inputs(seed, xshape, gshape, dtype, specials=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xshape) * 50
    x = x.astype(dtype) if np.dtype(dtype).kind == "f" else \
        np.clip(x, np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)
    g = rng.uniform(-1.3, 1.3, gshape).astype(np.float32)
    if specials:                       # non-finite and far-away coordinates
        g.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 1e30, -3e9, 7.5]
    return x, g


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "uint8", "int16",
                                   "int32", "int64"])
def test_grid_sample_4d(cp, dtype):
    x, g = _inputs(1, (2, 3, 5, 7), (2, 4, 6, 2), dtype)
    for mode, pad, ac in COMBOS_4D:
        same(host(grid_sample(cp.asarray(x), cp.asarray(g), mode, pad, ac)),
             grid_sample(x, g, mode, pad, ac))


def test_grid_sample_channel_blocks(cp):
    """C = 5: one block of 4 channels and one single channel on the CPU; a 9 x 11 image
    has inside points (the CPU's SSE bicubic path for float32) and edge points."""
    for dtype in ("float32", "float64"):
        x, g = _inputs(6, (1, 5, 9, 11), (1, 6, 7, 2), dtype)
        for mode, pad, ac in COMBOS_4D:
            same(host(grid_sample(cp.asarray(x), cp.asarray(g), mode, pad, ac)),
                 grid_sample(x, g, mode, pad, ac))


def test_grid_sample_channel_groups(cp, monkeypatch):
    """Few points: the launcher splits the channels into groups (here 4 + 3)."""
    import fastops._gpu.grid_sample as ggs
    monkeypatch.setattr(ggs, "_TARGET_THREADS", 40)
    assert ggs._channels_per_thread(2 * 4 * 6, 7) == 7
    assert ggs._channels_per_thread(15, 7) == 4          # groups of 4 and 3
    x, g = _inputs(7, (1, 7, 5, 6), (1, 3, 5, 2), "float32")
    for mode, pad, ac in COMBOS_4D:
        same(host(grid_sample(cp.asarray(x), cp.asarray(g), mode, pad, ac)),
             grid_sample(x, g, mode, pad, ac))
    x5, g5 = _inputs(8, (1, 7, 3, 4, 5), (1, 2, 2, 4, 3), "float64")
    for mode, pad, ac in COMBOS_5D:
        same(host(grid_sample(cp.asarray(x5), cp.asarray(g5), mode, pad, ac)),
             grid_sample(x5, g5, mode, pad, ac))


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint16"])
def test_grid_sample_5d(cp, dtype):
    x, g = _inputs(2, (2, 3, 3, 4, 5), (2, 2, 3, 4, 3), dtype)
    for mode, pad, ac in COMBOS_5D:
        same(host(grid_sample(cp.asarray(x), cp.asarray(g), mode, pad, ac)),
             grid_sample(x, g, mode, pad, ac))


def test_grid_sample_size_one_axes_and_strides(cp):
    for xs, gs in (((1, 2, 1, 5), (1, 3, 4, 2)), ((2, 1, 4, 1), (2, 2, 3, 2)),
                   ((1, 1, 1, 1), (1, 2, 2, 2))):
        x, g = _inputs(3, xs, gs, "float32")
        for mode, pad, ac in COMBOS_4D:
            same(host(grid_sample(cp.asarray(x), cp.asarray(g), mode, pad, ac)),
                 grid_sample(x, g, mode, pad, ac))
    x, g = _inputs(4, (2, 6, 8, 10), (2, 5, 6, 2), "float64", specials=False)
    xv, gv = x.transpose(0, 1, 3, 2)[:, ::-2], g[:, ::-1, ::2, ::-1]
    dx = cp.asarray(x).transpose(0, 1, 3, 2)[:, ::-2]               # strided device views
    dg = cp.asarray(g)[:, ::-1, ::2, ::-1]
    for mode, pad, ac in COMBOS_4D:
        same(host(grid_sample(dx, dg, mode, pad, ac)), grid_sample(xv, gv, mode, pad, ac))
    x5, g5 = _inputs(5, (1, 2, 1, 3, 1), (1, 2, 2, 2, 3), "float32")
    for mode, pad, ac in COMBOS_5D:
        same(host(grid_sample(cp.asarray(x5), cp.asarray(g5), mode, pad, ac)),
             grid_sample(x5, g5, mode, pad, ac))


def test_grid_sample_empty_and_errors(cp):
    got = host(grid_sample(cp.zeros((2, 3, 4, 4), np.float32), cp.zeros((2, 0, 3, 2), np.float32)))
    assert got.shape == (2, 3, 0, 3)
    got = host(grid_sample(cp.ones((1, 2, 0, 4), np.float32), cp.zeros((1, 2, 2, 2), np.float32)))
    same(got, np.zeros((1, 2, 2, 2), np.float32))
    with pytest.raises(TypeError, match="grid_sample: argument 'grid' is on the CPU"):
        grid_sample(cp.ones((1, 1, 4, 4), np.float32), np.zeros((1, 2, 2, 2), np.float32))
    x = cp.asarray(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    grid_sample(x, cp.zeros((1, 2, 2, 2), np.float32), "bicubic")
    same(x.get(), np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))   # input unchanged
