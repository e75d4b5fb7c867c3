"""CuPy launchers for kernels/cv_resize.cu (same signatures as fastops._cpu.cv_resize).

One thread per output element (per table row for area_table); each thread recomputes
its taps from the scales with the CPU's operations, so integer outputs and tables are
bit-identical to the CPU's.  INTER_NEAREST_EXACT's table is OpenCV's sequential running
sum: one thread.  No host synchronization.
"""
import numpy as np

from fastops._gpu._sources import CTYPE

_TYPES = ("uint8", "uint16", "int16", "float32", "float64")


def _defines(dtype_name):
    dt = np.dtype(dtype_name)
    d = {"T": CTYPE[dtype_name], "W": "double" if dt == np.float64 else "float",
         "T_INT": int(dt.kind in "iu"), "T_U8": int(dt == np.uint8),
         "T_F64": int(dt == np.float64)}
    if dt.kind in "iu":
        info = np.iinfo(dt)
        d.update(T_MIN=f"{info.min}LL", T_MAX=f"{info.max}LL")
    else:
        d.update(T_MIN=0, T_MAX=0)
    return d


# every variant the launchers below can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [_defines(t) for t in _TYPES]


def _kernel(name, dtype_name):
    from fastops._gpu._compile import kernel
    return kernel("cv_resize", name, **_defines(dtype_name))


def _launch(fn, n, args):
    from fastops._gpu._compile import launch
    launch(fn, n, args)


def _image(x3):
    """(h, w, C, row stride) of an (H, W, C) view with contiguous pixels."""
    from fastops._gpu._compile import elem_strides
    h, w, C = x3.shape
    return [np.int64(h), np.int64(w), np.int64(C), np.int64(elem_strides(x3)[0])]


def nn_table(n_in, n_out, ifx, exact, idx):
    """idx[i]: INTER_NEAREST (floor(i * ifx)) or INTER_NEAREST_EXACT source indices."""
    fn = _kernel("nn_table", "uint8")
    _launch(fn, 1 if exact else n_out,
            (np.int64(n_in), np.int64(n_out), np.float64(ifx), np.int32(bool(exact)), idx))


def area_table(n_in, n_out, scale, first, count, weights):
    """The INTER_AREA cells of one axis (see fastops._cpu.cv_resize.area_table)."""
    fn = _kernel("area_table", "float64" if weights.dtype == np.float64 else "uint8")
    _launch(fn, n_out,
            (np.int64(n_in), np.int64(n_out), np.float64(scale), np.int64(weights.shape[1]),
             first, count, weights))


def resize_fixed(x, scale_x, inv_x, scale_y, inv_y, interp, out):
    """uint8 INTER_LINEAR / INTER_CUBIC / INTER_AREA-upscale in 11-bit fixed point."""
    fn = _kernel("resize_fixed", "uint8")
    dh, dw, _ = out.shape
    _launch(fn, out.size,
            (x, *_image(x), np.float64(scale_x), np.float64(inv_x), np.float64(scale_y),
             np.float64(inv_y), np.int32(interp), out, np.int64(dh), np.int64(dw)))


def resize_float(x, scale_x, inv_x, scale_y, inv_y, interp, out):
    """uint16 / int16 / float32 / float64 INTER_LINEAR, INTER_CUBIC, INTER_AREA-upscale
    in OpenCV's float arithmetic."""
    fn = _kernel("resize_float", x.dtype.name)
    dh, dw, _ = out.shape
    _launch(fn, out.size,
            (x, *_image(x), np.float64(scale_x), np.float64(inv_x), np.float64(scale_y),
             np.float64(inv_y), np.int32(interp), out, np.int64(dh), np.int64(dw)))


def resize_exact(x, scale_x, scale_y, out):
    """INTER_LINEAR_EXACT (uint8, uint16, int16)."""
    fn = _kernel("resize_exact", x.dtype.name)
    dh, dw, _ = out.shape
    _launch(fn, out.size,
            (x, *_image(x), np.float64(scale_x), np.float64(scale_y), out, np.int64(dh),
             np.int64(dw)))


def area_fast(x, isx, isy, out):
    """INTER_AREA with integer factors (every dtype)."""
    fn = _kernel("area_fast", x.dtype.name)
    dh, dw, _ = out.shape
    _launch(fn, out.size,
            (x, *_image(x), np.int64(isx), np.int64(isy), out, np.int64(dh), np.int64(dw)))


def area(x, fy, cy, wy, fx, cx, wx, out):
    """INTER_AREA cells of integer images from area_table tables."""
    fn = _kernel("area", x.dtype.name)
    dh, dw, _ = out.shape
    _launch(fn, out.size,
            (x, *_image(x), fy, cy, wy, np.int64(wy.shape[1]), fx, cx, wx,
             np.int64(wx.shape[1]), out, np.int64(dh), np.int64(dw)))
