"""CuPy launchers for kernels/resample.cu (same signatures as fastops._cpu.resample).

The tables are built on the device (axis_table, one thread per output index) with the
CPU builder's double-precision arithmetic; the apply is one thread per output element
summing the taps in the CPU's order.  No host synchronization.
"""
import numpy as np

from fastops._gpu._sources import CTYPE

# compute (weight) type of each data type; unsigned 16/32/64 carry float16 / other
# bit patterns for nearest and fill only
_W = {"uint8": "float32", "int8": "float32", "int32": "float64", "int64": "float64",
      "float32": "float32", "float64": "float64", "uint16": "float32",
      "uint32": "float32", "uint64": "float64"}


def _defines(dtype_name):
    dt = np.dtype(dtype_name)
    d = {"T": CTYPE[dtype_name], "W": CTYPE[_W[dtype_name]], "T_INT": int(dt.kind in "iu"),
         "T_BITS": 8 * dt.itemsize}
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = f"({info.min + 1}LL - 1)" if info.min < 0 and dt.itemsize == 8 else \
            f"{info.min}LL"
        hi = f"{info.max}ULL" if dt.kind == "u" and dt.itemsize == 8 else f"{info.max}LL"
        d.update(T_MIN=lo, T_MAX=hi)
    else:
        d.update(T_MIN=0, T_MAX=0)
    return d


# every variant the launchers below can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [_defines(d) for d in _W]


def _kernel(name, dtype_name):
    from fastops._gpu._compile import kernel
    return kernel("resample", name, **_defines(dtype_name))


def _launch(fn, n, args):
    from fastops._gpu._compile import launch
    launch(fn, n, args)


def axis_table(n_in, n_out, mode, ctm, nearest_mode, scale, out_width, roi_start, roi_end,
               cubic_a, antialias, exclude_outside, n_raw, tap_start, first, count, weights,
               extrap):
    """Fill one axis table (see fastops._cpu.resample.axis_table)."""
    fn = _kernel("axis_table", weights.dtype.name)
    _launch(fn, n_out,
            (np.int64(n_in), np.int64(n_out), np.int32(mode), np.int32(ctm),
             np.int32(nearest_mode), np.float64(scale), np.float64(out_width),
             np.float64(roi_start), np.float64(roi_end), np.float64(cubic_a),
             np.int32(antialias), np.int32(exclude_outside), np.int64(n_raw),
             np.int64(tap_start), np.int64(weights.shape[1]), first, count, weights, extrap))


def _shape_strides(x5):
    from fastops._gpu._compile import elem_strides
    return [np.int64(v) for v in x5.shape] + [np.int64(v) for v in elem_strides(x5)]


def resize2d(x5, fh, ch, wh, fw, cw, ww, v_first, out5):
    """Resize axes 1 and 3 of x5 (any element strides) into out5 (contiguous)."""
    fn = _kernel("resize2d", x5.dtype.name)
    _launch(fn, out5.size,
            (x5, *_shape_strides(x5), fh, ch, wh, np.int64(wh.shape[1]),
             np.int64(wh.shape[0]), fw, cw, ww, np.int64(ww.shape[1]), np.int64(ww.shape[0]),
             np.int32(bool(v_first)), out5))


def nearest2d(x5, fh, fw, out5):
    """out5[b, yo, m, xo, c] = x5[b, fh[yo], m, fw[xo], c] (unsigned element views)."""
    fn = _kernel("nearest2d", x5.dtype.name)
    _launch(fn, out5.size,
            (x5, *_shape_strides(x5), fh, np.int64(fh.shape[0]), fw, np.int64(fw.shape[0]),
             out5))


def round_cast(src, dst):
    """dst = src rounded half away from zero and saturated (1-D, contiguous)."""
    fn = _kernel("round_cast", dst.dtype.name)
    if np.dtype(_W[dst.dtype.name]) != src.dtype:
        raise TypeError(f"round_cast: {src.dtype} source for {dst.dtype} output")
    _launch(fn, src.size, (src, np.int64(src.size), dst))


def fill(out3, mask, code, value):
    """out3[b, o, :] = value[0] where mask[o] == code (unsigned element views); value is
    a 1-element host (NumPy) array."""
    fn = _kernel("fill", out3.dtype.name)
    B, m, C = out3.shape
    _launch(fn, out3.size,
            (out3, np.int64(B), np.int64(m), np.int64(C), mask, np.int32(code),
             out3.dtype.type(np.asarray(value)[0])))
