"""fastops.onnx.Session's Conv against a float64 reference written here (windows of the
zero-padded input, einsum), on shapes that reach each of its paths: the depthwise and
the tiled im2col kernels of the deform_conv family (2-D float32/float64 on NumPy), one
im2col matrix + BLAS GEMM (small images, few taps, other dtypes and ranks), pointwise
GEMMs, and the depthwise tap sum (float16)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import fastops.onnx as fo


def conv_ref(x, w, b, strides, pads, dils, group):
    """float64 ONNX Conv with explicit pads (begin..., end...)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + r]) for i in range(r)])
    ext = [(w.shape[2 + i] - 1) * dils[i] + 1 for i in range(r)]
    win = np.lib.stride_tricks.sliding_window_view(xp, ext, axis=tuple(range(2, 2 + r)))
    win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dils)]
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    N, C = x.shape[:2]
    M = w.shape[0]
    cg, mg = C // group, M // group
    letters = "hijk"[:r]
    outs = []
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg]
        xg = win[:, g * cg:(g + 1) * cg]
        outs.append(np.einsum(f"nc{'pqr'[:r]}{letters},mc{letters}->nm{'pqr'[:r]}", xg, wg))
    y = np.concatenate(outs, axis=1)
    if b is not None:
        y = y + np.asarray(b, np.float64).reshape((1, M) + (1,) * r)
    return y


def _session(x, w, b, attrs):
    tt = helper.np_dtype_to_tensor_dtype(x.dtype)
    ins = ["x", "w"] + (["b"] if b is not None else [])
    node = helper.make_node("Conv", ins, ["y"], **attrs)
    inits = [helper.make_tensor("w", tt, w.shape, w.reshape(-1).tolist())]
    if b is not None:
        inits.append(helper.make_tensor("b", tt, b.shape, b.reshape(-1).tolist()))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tt, None)],
                              [helper.make_tensor_value_info("y", tt, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return fo.Session(model.SerializeToString())


# (x shape, M, kernel, group, strides, pads, dilations, bias): each reaches one path
CASES = [
    ((1, 12, 17, 19), 12, (3, 3), 12, (1, 1), (1, 1, 1, 1), (1, 1), True),     # depthwise
    ((2, 12, 17, 19), 12, (3, 3), 12, (2, 2), (0, 1, 2, 1), (1, 1), False),    # depthwise
    ((1, 8, 21, 16), 8, (5, 5), 8, (1, 2), (2, 2, 2, 2), (2, 1), True),        # depthwise
    ((1, 9, 23, 29), 9, (3, 5), 9, (2, 3), (2, 1, 0, 3), (1, 2), True),        # depthwise
    ((1, 5, 4, 40), 5, (3, 3), 5, (3, 1), (4, 0, 4, 0), (1, 1), False),        # depthwise
    ((1, 16, 40, 40), 24, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1), True),      # tiled
    ((2, 16, 36, 30), 20, (3, 3), 2, (1, 1), (1, 0, 1, 2), (1, 1), False),     # tiled, groups
    ((1, 16, 70, 66), 8, (3, 3), 1, (2, 2), (1, 1, 1, 1), (2, 2), True),       # tiled, dilated
    ((1, 16, 8, 9), 32, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1), True),        # small image
    ((1, 3, 64, 64), 16, (3, 3), 1, (2, 2), (1, 1, 1, 1), (1, 1), True),       # RGB stem
    ((2, 6, 12, 12), 4, (3, 3), 2, (1, 1), (0, 0, 0, 0), (1, 1), True),        # groups
    ((1, 16, 20, 22), 8, (1, 1), 1, (2, 2), (0, 0, 0, 0), (1, 1), True),       # pointwise
    ((1, 16, 20, 22), 8, (1, 1), 1, (1, 1), (1, 0, 0, 1), (1, 1), False),      # 1x1 padded
    ((1, 4, 30), 6, (5,), 1, (2,), (2, 1), (1,), True),                        # 1-D
    ((1, 4, 6, 7, 5), 3, (3, 3, 3), 1, (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1), True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_conv_matches_reference(case, dtype):
    shape, M, k, group, strides, pads, dils, bias = case
    rng = np.random.default_rng(len(shape) + M)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((M, shape[1] // group) + k).astype(dtype)
    b = rng.standard_normal(M).astype(dtype) if bias else None
    x0 = x.copy()
    attrs = dict(kernel_shape=list(k), strides=list(strides), pads=list(pads),
                 dilations=list(dils), group=group)
    got = _session(x, w, b, attrs).run(None, {"x": x})[0]
    want = conv_ref(x, w, b, strides, pads, dils, group)
    assert got.dtype == dtype and got.shape == want.shape
    taps = int(np.prod(k)) * shape[1] // group
    tol = {np.float16: 4e-3, np.float32: 2e-6, np.float64: 1e-13}[dtype] * taps
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(x, x0)


def test_conv_auto_pad_same_upper():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 33, 35)).astype(np.float32)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    got = _session(x, w, None, dict(kernel_shape=[3, 3], strides=[2, 2],
                                    auto_pad="SAME_UPPER")).run(None, {"x": x})[0]
    # SAME_UPPER, stride 2: out = ceil(n / 2); total pad = (out - 1) * 2 + 3 - n, the
    # larger half at the end
    want = conv_ref(x, w, None, (2, 2), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_depthwise_kernel_keeps_the_tap_sum_bits():
    """The depthwise kernel computes the NumPy tap sum's sequence (x_t0 * w_t0, then
    + x_t * w_t in row-major tap order, then + b): same bits as that sum, in float32."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 13, 11)).astype(np.float32)
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    got = _session(x, w, b, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=5)).run(
        None, {"x": x})[0]
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = None
    for i in range(3):
        for j in range(3):
            term = xp[:, :, i:i + 13, j:j + 11] * w[:, 0, i, j].reshape(1, 5, 1, 1)
            want = term if want is None else want + term
    want = want + b.reshape(1, 5, 1, 1)
    np.testing.assert_array_equal(got, want)
