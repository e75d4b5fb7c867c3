"""CuPy launchers for kernels/grid_sample.cu (same signatures as fastops._cpu.grid_sample)."""
import numpy as np

from fastops._gpu._sources import CTYPE

# x's element type -> compute type (the public layer converts the grid to it)
_COMPUTE = {"float32": "float32", "float64": "float64", "uint8": "float32",
            "int8": "float32", "uint16": "float32", "int16": "float32", "uint32": "float64",
            "int32": "float64", "uint64": "float64", "int64": "float64"}
_INT_RANGE = {
    "uint8": ("0", "255"), "int8": ("(-128)", "127"), "uint16": ("0", "65535"),
    "int16": ("(-32768)", "32767"), "uint32": ("0u", "4294967295u"),
    "int32": ("(-2147483647 - 1)", "2147483647"), "uint64": ("0ull", "18446744073709551615ull"),
    "int64": ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
}


def _defines(name):
    lo, hi = _INT_RANGE.get(name, ("0", "0"))
    return {"TIN": CTYPE[name], "T": CTYPE[_COMPUTE[name]],
            "TIN_INT": int(name in _INT_RANGE), "TIN_MIN": lo, "TIN_MAX": hi}


# every variant the launchers can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [_defines(name) for name in _COMPUTE]


def _strides(a):
    return tuple(np.int64(s // a.itemsize) for s in a.strides)


# Threads to aim for: a point's taps are computed once per group of channels, so small
# batches split the channels into groups to fill the device (about 1M threads fill an
# H100/H200; a larger N * points keeps every channel in one group).  Not measured on a
# device yet.
_TARGET_THREADS = 1 << 20


def _channels_per_thread(points, C):
    groups = max(1, min(C, _TARGET_THREADS // max(points, 1)))
    return -(-C // groups)


def grid_sample_2d(x, grid, mode, padding, align_corners, out):
    """x (N, C, H, W) with every extent >= 1, any element strides; grid (N, Ho, Wo, 2) in
    x's compute type; out (N, C, Ho, Wo) contiguous, non-empty, of x's dtype."""
    from fastops._gpu._compile import kernel, launch
    fn = kernel("grid_sample", "grid_sample_2d", **_defines(x.dtype.name))
    N, C, H, W = (np.int64(s) for s in x.shape)
    sN, sC, sH, sW = _strides(x)
    gN, gH, gW, gK = _strides(grid)
    Ho, Wo = (np.int64(s) for s in grid.shape[1:3])
    points = int(N) * int(Ho) * int(Wo)
    cpt = _channels_per_thread(points, int(C))
    launch(fn, points * -(-int(C) // cpt),
           (x, grid, N, C, H, W, sN, sC, sH, sW, Ho, Wo, gN, gH, gW, gK, np.int32(mode),
            np.int32(padding), np.int32(align_corners), np.int64(cpt), out))


def grid_sample_3d(x, grid, mode, padding, align_corners, out):
    """x (N, C, D, H, W) with every extent >= 1, any element strides; grid
    (N, Do, Ho, Wo, 3) in x's compute type; out (N, C, Do, Ho, Wo) contiguous, non-empty."""
    from fastops._gpu._compile import kernel, launch
    fn = kernel("grid_sample", "grid_sample_3d", **_defines(x.dtype.name))
    N, C, D, H, W = (np.int64(s) for s in x.shape)
    sN, sC, sD, sH, sW = _strides(x)
    gN, gD, gH, gW, gK = _strides(grid)
    Do, Ho, Wo = (np.int64(s) for s in grid.shape[1:4])
    points = int(N) * int(Do) * int(Ho) * int(Wo)
    cpt = _channels_per_thread(points, int(C))
    launch(fn, points * -(-int(C) // cpt),
           (x, grid, N, C, D, H, W, sN, sC, sD, sH, sW, Do, Ho, Wo, gN, gD, gH, gW, gK,
            np.int32(mode), np.int32(padding), np.int32(align_corners), np.int64(cpt), out))
