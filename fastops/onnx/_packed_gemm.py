"""The packed GEMM of Session's Conv and Gemm (include/conv.hpp gemm_packed, in the
x86-64-v3 build of the deform_conv family): a constant weight is packed once when the
model loads, and the bias and a fused activation (EPILOGUES) are applied to the sums in
registers.  Elsewhere (baseline build, CuPy, other dtypes) the callers use the BLAS and
``activate``."""
import numpy as np

from fastops import _dispatch
from fastops._threads import get_num_threads

# include/conv.hpp ConvAct
ACT = {None: 0, "Relu": 1, "HardSwish": 2}


def activate(xp, y, act):
    """y = act(y) in place, the operations of the unfused kernels (fastops/onnx/_std.py)."""
    if act == "Relu":
        xp.maximum(y, y.dtype.type(0), out=y)
    elif act == "HardSwish":
        t = y * y.dtype.type(1 / 6)
        t += y.dtype.type(0.5)
        xp.clip(t, 0, 1, out=t)
        y *= t
    return y


def pack(xp, a):
    """gemm_packed's panels of the 2-D matrix ``a`` (any strides), or None where the
    packed GEMM does not apply (not NumPy float32, empty, or a build without it)."""
    if xp is not np or not isinstance(a, np.ndarray) or a.ndim != 2 or \
            a.dtype != np.float32 or a.size == 0:
        return None
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    if not mod.PACKED_GEMM:
        return None
    return mod.gemm_pack(a, get_num_threads())


def run(packed, m, b, row_bias, act, out, b_trans=False):
    """out (N, m, P) = act(A @ B[n] + row_bias[:, None]), A (m, K) packed by ``pack``;
    B = b (N, K, P), or its transpose with ``b_trans`` (b (N, P, K)); float32."""
    if row_bias is not None:
        row_bias = np.ascontiguousarray(row_bias)
    _dispatch.kernel_module("cpu", "deform_conv").gemm_packed(
        packed, m, b, row_bias, None, ACT[act], out, get_num_threads(), b_trans)
    return out


def conv(packed, x, kernel_shape, strides, pads_begin, dils, row_bias, act, out):
    """out (N, m, OH, OW) = act(conv(x, A) + row_bias) for a 2-D float32 Conv with group 1,
    A (m, C * kh * kw) packed by ``pack``: conv_packed reads the im2col matrix from x,
    never materialized (include/conv.hpp)."""
    if row_bias is not None:
        row_bias = np.ascontiguousarray(row_bias)
    _dispatch.kernel_module("cpu", "deform_conv").conv_packed(
        packed, x, kernel_shape[0], kernel_shape[1], strides[0], strides[1], pads_begin[0],
        pads_begin[1], dils[0], dils[1], row_bias, ACT[act], out, get_num_threads())
    return out
