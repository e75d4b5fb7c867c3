"""fastops.onnx.Session's Conv and Gemm against a float64 reference written here
(windows of the zero-padded input, einsum), on shapes that reach each of their paths:
the depthwise and the tiled im2col kernels of the deform_conv family (2-D float32/
float64 on NumPy), the packed GEMM (include/conv.hpp, x86-64-v3 builds: pointwise and
conv_packed float32 Convs with constant weights, Gemm with a constant B), one
im2col matrix + BLAS GEMM (other dtypes and ranks), and the depthwise tap sum (float16).
Also: Relu/HardSwish fused into the Conv/Gemm before them (bit for bit the unfused
result), the fusion rules, the packed GEMM kernel itself on awkward sizes, and the
caching allocator Session.run installs."""
import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper

import fastops.onnx as fo
from fastops import _dispatch
from fastops._cpu import _pool
from fastops.onnx import _compile

PACKED = _dispatch.kernel_module("cpu", "deform_conv").PACKED_GEMM


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
    ((1, 6, 9, 75), 6, (3, 3), 6, (2, 2), (1, 1, 1, 1), (1, 1), True),         # depthwise
    ((1, 6, 9, 74), 6, (5, 5), 6, (1, 2), (2, 2, 2, 2), (1, 1), True),         # depthwise
    ((1, 7, 9, 5), 7, (3, 3), 7, (1, 1), (1, 1, 1, 1), (1, 1), True),          # dw, rows < 8
    ((1, 10, 20, 26), 10, (5, 5), 10, (2, 2), (2, 2, 2, 2), (1, 1), True),     # dw, s2 26-wide
    ((2, 37, 10, 13), 37, (5, 5), 37, (1, 1), (2, 2, 2, 2), (1, 1), True),     # dw, lanes
    ((1, 40, 21, 27), 40, (5, 5), 40, (2, 1), (1, 3, 2, 0), (1, 2), False),    # dw, lanes
    ((1, 16, 40, 40), 24, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1), True),      # tiled / rows
    ((1, 128, 32, 33), 8, (3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1), True),      # tiled, K 1152
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("C, K, W", [(5, 3, 11), (5, 3, 45), (37, 5, 13), (37, 3, 13),
                                     (21, 5, 32), (21, 5, 33)])
def test_depthwise_kernel_keeps_the_tap_sum_bits(C, K, W, dtype):
    """The depthwise kernel computes the NumPy tap sum's sequence (x_t0 * w_t0, then
    + x_t * w_t in row-major tap order, then + b): same bits as that sum, for rows of
    both vector widths (the AVX-512 build's narrow rows: at most 16) and for the
    channels-in-lanes form (AVX-512: 5x5 float32, any float64 kernel, rows of at most 32
    outputs, at least a vector's lanes of channels; 37 = two groups and 5 channels)."""
    rng = np.random.default_rng(4)
    p = K // 2
    x = rng.standard_normal((2, C, 13, W)).astype(dtype)
    w = rng.standard_normal((C, 1, K, K)).astype(dtype)
    b = rng.standard_normal(C).astype(dtype)
    got = _session(x, w, b, dict(kernel_shape=[K, K], pads=[p] * 4, group=C)).run(
        None, {"x": x})[0]
    xp = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)])
    want = None
    for i in range(K):
        for j in range(K):
            term = xp[:, :, i:i + 13, j:j + W] * w[:, 0, i, j].reshape(1, C, 1, 1)
            want = term if want is None else want + term
    want = want + b.reshape(1, C, 1, 1)
    np.testing.assert_array_equal(got, want)


def test_depthwise_kernel_strided_operands():
    """The kernel reads x and w at any element strides (a plane's columns apart, a
    channel's taps apart): same bits as on contiguous copies, in both forms."""
    from fastops import _dispatch
    dc = _dispatch.kernel_module("cpu", "deform_conv")
    rng = np.random.default_rng(5)
    for C, K in [(20, 5), (20, 3), (3, 5)]:
        x = rng.standard_normal((2, C, 13, 26)).astype(np.float32)[..., ::2]
        w = rng.standard_normal((C, 2, K, K)).astype(np.float32)[:, :1]
        b = rng.standard_normal(2 * C).astype(np.float32)[::2]
        outs = []
        for xx, ww, bb in [(x, w, b), (x.copy(), w.copy(), b.copy())]:
            y = np.empty((2, C, 13, 13), np.float32)
            dc.depthwise_conv2d(xx, ww, bb, 1, 1, K // 2, K // 2, 1, 1, y, 2, 2)
            outs.append(y)
        np.testing.assert_array_equal(outs[0], outs[1])


# ------------------------------------------------------------------ fused activations
def _act_ref(y, act):
    """The unfused NumPy kernels' formulas (fastops/onnx/_std.py), in y's dtype."""
    if act == "Relu":
        return np.maximum(y, y.dtype.type(0))
    return y * np.clip(y * y.dtype.type(1 / 6) + y.dtype.type(0.5), 0, 1)


def _conv_act_model(x, w, b, attrs, act, expose_conv):
    """Conv -> act; with expose_conv the Conv's output is a graph output too, so the
    compiler cannot fuse the activation (the reference for bit equality)."""
    tt = helper.np_dtype_to_tensor_dtype(x.dtype)
    ins = ["x", "w"] + (["b"] if b is not None else [])
    nodes = [helper.make_node("Conv", ins, ["c"], **attrs), helper.make_node(act, ["c"], ["y"])]
    inits = [helper.make_tensor("w", tt, w.shape, w.reshape(-1).tolist())]
    if b is not None:
        inits.append(helper.make_tensor("b", tt, b.shape, b.reshape(-1).tolist()))
    outs = [helper.make_tensor_value_info("y", tt, None)]
    if expose_conv:
        outs.append(helper.make_tensor_value_info("c", tt, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", tt, None)], outs,
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return fo.Session(model.SerializeToString())


# (x shape, M, kernel, group, strides, pads): the paths a fused activation goes through
FUSED_CASES = [
    ((1, 16, 20, 22), 24, (1, 1), 1, (1, 1), (0, 0, 0, 0)),      # packed pointwise
    ((2, 40, 9, 7), 13, (1, 1), 1, (2, 2), (0, 0, 0, 0)),        # packed pointwise, strided
    ((1, 3, 64, 64), 16, (3, 3), 1, (2, 2), (1, 1, 1, 1)),       # packed im2col (stem)
    ((1, 300, 6, 5), 20, (3, 3), 1, (1, 1), (1, 1, 1, 1)),       # packed im2col, K > 256
    ((1, 12, 17, 19), 12, (3, 3), 12, (2, 2), (1, 1, 1, 1)),     # depthwise kernel
    ((1, 8, 20, 70), 8, (3, 3), 8, (2, 2), (1, 1, 1, 1)),        # full blocks, stride-2
    ((1, 40, 10, 13), 40, (5, 5), 40, (1, 1), (2, 2, 2, 2)),     # depthwise, lanes
    ((1, 8, 21, 71), 8, (5, 5), 8, (2, 2), (2, 0, 2, 0)),        # split, even/odd pad
    ((1, 8, 9, 40), 8, (3, 3), 8, (1, 1), (1, 1, 1, 1)),         # stride 1, full blocks
    ((1, 8, 9, 52), 8, (3, 3), 8, (1, 1), (1, 1, 1, 1)),         # last block 20 of 32
    ((1, 16, 40, 40), 24, (3, 3), 1, (1, 1), (1, 1, 1, 1)),      # tiled kernel
    ((2, 6, 12, 12), 4, (3, 3), 2, (1, 1), (0, 0, 0, 0)),        # groups: BLAS im2col
]


@pytest.mark.parametrize("act", ["Relu", "HardSwish"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", FUSED_CASES, ids=[f"case{i}" for i in range(len(FUSED_CASES))])
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")   # inf * 0, NumPy paths
def test_fused_activation_is_the_unfused_result(case, dtype, act):
    shape, M, k, group, strides, pads = case
    rng = np.random.default_rng(M + len(k))
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x.reshape(-1)[::97] = np.nan                      # NaN propagates through both forms
    x.reshape(-1)[50::89] = np.inf                    # and so do infinite sums
    w = rng.standard_normal((M, shape[1] // group) + k).astype(dtype)
    b = rng.standard_normal(M).astype(dtype)
    attrs = dict(kernel_shape=list(k), strides=list(strides), pads=list(pads), group=group)
    fused = _conv_act_model(x, w, b, attrs, act, expose_conv=False)
    assert sum(1 for line in fused._program(np).lines if "=" in line) == 1   # one call
    got = fused.run(None, {"x": x})[0]
    y_unfused, conv = _conv_act_model(x, w, b, attrs, act, expose_conv=True).run(
        None, {"x": x})
    np.testing.assert_array_equal(got, y_unfused)
    np.testing.assert_array_equal(got, _act_ref(conv, act))
    want = conv_ref(x, w, b, strides, pads, (1, 1), group)
    taps = int(np.prod(k)) * shape[1] // group
    tol = {np.float32: 2e-6, np.float64: 1e-13}[dtype] * taps
    want = _act_ref(want, act)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def _fusions(nodes, outputs):
    consumers, _ = _compile._fuse_epilogues(nodes, _compile._readers(nodes), set(outputs))
    return {p.op_type + ":" + p.output[0]: c.op_type for p in nodes
            for c in [consumers.get(id(p))] if c is not None}


def test_fusion_rules():
    conv = helper.make_node("Conv", ["x", "w"], ["c"])
    relu = helper.make_node("Relu", ["c"], ["y"])
    add = helper.make_node("Add", ["c", "y"], ["z"])
    assert _fusions([conv, relu], ["y"]) == {"Conv:c": "Relu"}
    assert _fusions([conv, relu], ["y", "c"]) == {}              # c is a graph output
    assert _fusions([conv, relu, add], ["z"]) == {}              # c has two readers
    leaky = helper.make_node("LeakyRelu", ["c"], ["y"])
    assert _fusions([conv, leaky], ["y"]) == {}                  # not an epilogue
    hs = helper.make_node("HardSwish", ["c"], ["y"])
    assert _fusions([conv, hs], ["y"]) == {"Conv:c": "HardSwish"}
    gemm = helper.make_node("Gemm", ["a", "b"], ["c"])
    assert _fusions([gemm, relu], ["y"]) == {"Gemm:c": "Relu"}
    assert _fusions([gemm, hs], ["y"]) == {}                     # Gemm fuses Relu only
    # a subgraph reading c (a Loop body's capture) is a second reader
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["o"])], "body", [], [])
    loop = helper.make_node("Loop", ["", ""], ["l"], body=body)
    assert _fusions([conv, relu, loop], ["y", "l"]) == {}


def test_fused_model_with_a_second_reader_is_correct():
    """Conv -> Relu and Conv -> Add(c, relu): not fused, both outputs right."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 8, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["c", "r"], ["z"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.reshape(-1).tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    got = fo.Session(model.SerializeToString()).run(None, {"x": x})[0]
    c = conv_ref(x, w, None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    np.testing.assert_allclose(got, c + np.maximum(c, 0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ Gemm
def _gemm_model(a_shape, b, c, attrs, act=None):
    nodes = [helper.make_node("Gemm", ["a", "b"] + (["c"] if c is not None else []),
                              ["g" if act else "y"], **attrs)]
    if act:
        nodes.append(helper.make_node(act, ["g"], ["y"]))
    inits = [helper.make_tensor("b", TensorProto.FLOAT, b.shape, b.reshape(-1).tolist())]
    if c is not None:
        inits.append(helper.make_tensor("c", TensorProto.FLOAT, c.shape, c.reshape(-1).tolist()))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT,
                                                                         None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return fo.Session(model.SerializeToString())


@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (23,), (1, 23), (37, 23), ()])
@pytest.mark.parametrize("alpha_beta", [(1.0, 1.0), (1.0, 0.5), (2.0, 1.0)])
def test_gemm_with_a_constant_weight(ta, tb, c_shape, alpha_beta):
    """Every transpose / bias / scale combination (the packed path takes alpha 1 with a
    bias of shape (N,) or (1, N) at beta 1; the rest the BLAS) against float64."""
    alpha, beta = alpha_beta
    rng = np.random.default_rng(ta + 2 * tb)
    M, K, N = 37, 300, 23
    a = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    c = None if c_shape is None else rng.standard_normal(c_shape).astype(np.float32)
    s = _gemm_model(a.shape, b, c, dict(transA=ta, transB=tb, alpha=alpha, beta=beta))
    a0 = a.copy()
    got = s.run(None, {"a": a})[0]
    A = a.astype(np.float64).T if ta else a.astype(np.float64)
    B = b.astype(np.float64).T if tb else b.astype(np.float64)
    want = alpha * (A @ B) + (0 if c is None else beta * c.astype(np.float64))
    assert got.shape == (M, N) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6 * K, atol=2e-6 * K)
    np.testing.assert_array_equal(a, a0)


def test_gemm_relu_fused_is_the_unfused_result():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((150, 700)).astype(np.float32)
    b = rng.standard_normal((64, 700)).astype(np.float32)
    c = rng.standard_normal(64).astype(np.float32)
    fused = _gemm_model(a.shape, b, c, dict(transB=1), act="Relu").run(None, {"a": a})[0]
    plain = _gemm_model(a.shape, b, c, dict(transB=1)).run(None, {"a": a})[0]
    np.testing.assert_array_equal(fused, np.maximum(plain, np.float32(0)))


# ------------------------------------------------------------------ the packed GEMM kernel
@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
@pytest.mark.parametrize("M", [1, 5, 6, 12, 13, 100])
@pytest.mark.parametrize("K", [1, 16, 255, 257, 600])
@pytest.mark.parametrize("P", [1, 8, 9, 17, 34, 38, 40, 42, 257, 300, 4100])
def test_packed_gemm_kernel_sizes(M, K, P):
    """Panels with padded rows, k passes with a short last one, strips of 8 and 16 and
    partial ones, column blocks (wide ones for short k passes: K = 1, 16 with P = 4100),
    two images, both B layouts, biases, activations; P = 1 (gemv_packed) and items of one
    or two panels (M <= 12: B's strips read in place); M = 100 (17 panels: two runs of
    pairs and a lone last panel) with the last 2, 6, 8 and 10 columns computed along the
    rows (P = 34-42: gemm_tail_cols in groups of 8 or 4 panels and a partial group)."""
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    rng = np.random.default_rng(M * 1000 + K + P)
    a = rng.standard_normal((M, K)).astype(np.float32)
    packed = mod.gemm_pack(a[:, ::-1][:, ::-1], 2)              # strided input
    b = rng.standard_normal((2, K, P)).astype(np.float32)
    rb = rng.standard_normal(M).astype(np.float32)
    cb = rng.standard_normal(P).astype(np.float32)
    want = np.einsum("mk,nkp->nmp", a.astype(np.float64), b.astype(np.float64))
    want = want + rb[:, None].astype(np.float64) + cb.astype(np.float64)
    for act, f in ((0, lambda v: v), (1, lambda v: np.maximum(v, 0)),
                   (2, lambda v: v * np.clip(v / 6 + 0.5, 0, 1))):
        for trans in (False, True):
            out = np.full((2, M, P), np.nan, np.float32)
            src = np.ascontiguousarray(b.transpose(0, 2, 1)) if trans else b
            mod.gemm_packed(packed, M, src, rb, cb, act, out, 2, trans)
            np.testing.assert_allclose(out, f(want), rtol=1e-5 * K, atol=1e-5 * K)


@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
def test_packed_gemm_kernel_checks_its_arguments():
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    a = np.ones((5, 7), np.float32)
    packed = mod.gemm_pack(a)
    b = np.ones((1, 7, 9), np.float32)
    out = np.empty((1, 5, 9), np.float32)
    with pytest.raises(ValueError, match="packed has"):
        mod.gemm_packed(packed[:-1], 5, b, None, None, 0, out, 1)
    with pytest.raises(ValueError, match="out has shape"):
        mod.gemm_packed(packed, 5, b, None, None, 0, out[:, :4], 1)
    with pytest.raises(ValueError, match="row_bias"):
        mod.gemm_packed(packed, 5, b, np.ones(4, np.float32), None, 0, out, 1)
    with pytest.raises(ValueError, match="col_bias"):
        mod.gemm_packed(packed, 5, b, None, np.ones(8, np.float32), 0, out, 1)
    with pytest.raises(ValueError, match="contiguous"):
        mod.gemm_packed(packed, 5, np.ones((1, 7, 18), np.float32)[:, :, ::2], None, None,
                        0, out, 1)


@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
@pytest.mark.parametrize("geom", [
    # (C, H, W, kh, kw, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r, dil_h, dil_w)
    (3, 40, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),   # stem: stride-2 strips inside a row
    (40, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),   # K = 360: a k pass starts mid-channel
    (6, 9, 40, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1),    # rows of 16-output strips, stride 2
    (5, 9, 11, 5, 3, 1, 3, 4, 0, 2, 5, 2, 1),    # rows and columns wholly in the padding
    (4, 4, 4, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1),     # kernel larger than the image
    (6, 30, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1),    # OW = 1: a strip spans 16 rows
    (2, 12, 50, 2, 3, 3, 4, 0, 3, 1, 0, 1, 2),   # stride 4, dilated columns
    (3, 10, 9, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1),    # 49 taps, 9-wide rows: ImageB's tap table
    (2, 9, 3, 9, 7, 1, 1, 4, 3, 4, 3, 1, 1),     # 63 taps, 3-wide rows: past the table
])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
@pytest.mark.parametrize("route", ["rows", "strips"])
def test_conv_packed_is_gemm_packed_on_the_im2col_matrix(geom, layout, route):
    """conv_packed reads the im2col matrix from the image, never materialized: for K <=
    256 from phase-split rows of a scratch band (conv_rows), above that from strips
    packed from the image (ImageB); the geometry's channels are raised past 256 / taps
    for the second.  Either way the same sums in the same order as im2col +
    gemm_packed (so the same bits, on any thread count), and the convolution (float64
    reference) within the float32 tolerance."""
    C, H, W, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw = geom
    if (C * kh * kw > 256) != (route == "strips"):
        C = 256 // (kh * kw) + 1 if route == "strips" else 256 // (kh * kw)
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    rng = np.random.default_rng(C * H * W)
    M = 13                                                   # a partial last panel
    x = rng.standard_normal((2, C, H, 2 * W)).astype(np.float32)
    x = {"contiguous": np.ascontiguousarray(x[:, :, :, :W]), "strided": x[:, :, :, ::2],
         "reversed": x[:, ::-1, :, ::-2]}[layout]
    w = rng.standard_normal((M, C, kh, kw)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    packed = mod.gemm_pack(w.reshape(M, -1), 2)
    OH = (H + pt + pb - (kh - 1) * dh - 1) // sh + 1
    OW = (W + pl + pr - (kw - 1) * dw - 1) // sw + 1
    cols = np.empty((2, C * kh * kw, OH * OW), np.float32)
    mod.im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, cols, OH, OW, 1)
    ref = conv_ref(x, w, b, (sh, sw), (pt, pl, pb, pr), (dh, dw), 1)
    for act, bias in ((0, b), (1, None), (2, b)):
        want = np.empty((2, M, OH * OW), np.float32)
        mod.gemm_packed(packed, M, cols, bias, None, act, want, 1)
        for nt in (1, 2, 3):
            got = np.full((2, M, OH, OW), np.nan, np.float32)
            mod.conv_packed(packed, x, kh, kw, sh, sw, pt, pl, dh, dw, bias, act, got, nt)
            np.testing.assert_array_equal(got.reshape(want.shape), want)
    np.testing.assert_allclose(got, ref * np.clip(ref / 6 + 0.5, 0, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
def test_conv_packed_kernel_checks_its_arguments():
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    packed = mod.gemm_pack(np.ones((5, 3 * 9), np.float32))
    x = np.ones((1, 3, 8, 8), np.float32)
    out = np.empty((1, 5, 8, 8), np.float32)
    args = (3, 3, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="packed has"):
        mod.conv_packed(packed[:-1], x, *args, None, 0, out, 1)
    with pytest.raises(ValueError, match="packed has"):
        mod.conv_packed(packed, x[:, :2], *args, None, 0, out, 1)
    with pytest.raises(ValueError, match="out has 2 images"):
        mod.conv_packed(packed, x, *args, None, 0, np.empty((2, 5, 8, 8), np.float32), 1)
    with pytest.raises(ValueError, match="row_bias"):
        mod.conv_packed(packed, x, *args, np.ones(4, np.float32), 0, out, 1)
    with pytest.raises(ValueError, match="strides and dilations"):
        mod.conv_packed(packed, x, 3, 3, 0, 1, 1, 1, 1, 1, None, 0, out, 1)
    with pytest.raises(ValueError, match="pads"):
        mod.conv_packed(packed, x, 3, 3, 1, 1, -1, 1, 1, 1, None, 0, out, 1)
    with pytest.raises(ValueError, match="empty"):
        mod.conv_packed(packed, x[:, :, :0], *args, None, 0, out, 1)
    odd = np.lib.stride_tricks.as_strided(np.zeros(1200, np.uint8)[:4].view(np.float32),
                                          (1, 3, 8, 8), (1152, 384, 48, 6))
    with pytest.raises(ValueError, match="multiples of 4"):
        mod.conv_packed(packed, odd, *args, None, 0, out, 1)


# ------------------------------------------------------------------ Session.run's arena
def _handler_name(arr=None):
    from numpy._core.multiarray import get_handler_name
    return get_handler_name() if arr is None else get_handler_name(arr)


def test_session_run_allocates_from_its_arena_and_restores_numpy():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 16, 64, 64)).astype(np.float32)
    w = rng.standard_normal((32, 16, 1, 1)).astype(np.float32)
    s = _session(x, w, None, dict(kernel_shape=[1, 1]))
    want = conv_ref(x, w, None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    before = _handler_name()
    outs = [s.run(None, {"x": x})[0] for _ in range(3)]
    assert _handler_name() == before                         # restored after each run
    for got in outs:
        assert _handler_name(got) == "fastops_session_arena"
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    del outs, got
    assert _pool.arena_idle_bytes() >= 32 * 64 * 64 * 4       # the outputs' blocks came back
    with pytest.raises(ValueError):
        s.run(None, {"x": x[:, :3]})                          # fails inside the run
    assert _handler_name() == before


def test_arena_blocks_hold_their_contents_through_reuse_and_resize():
    previous = _pool.use_arena()
    try:
        blocks = [np.full(300_000, i, np.float32) for i in range(4)]   # 1.2 MB: cached class
        del blocks[1]
        again = np.zeros(300_000, np.float32)                # takes the freed block: zeroed
        assert not again.any()
        small = np.arange(10, dtype=np.int64)
        small.resize(200_000, refcheck=False)                 # realloc: small -> cached
        assert (small[:10] == np.arange(10)).all() and not small[10:].any()
        small.resize(5, refcheck=False)                       # and back down
        assert (small == np.arange(5)).all()
        for i, blk in zip((0, 2, 3), blocks):
            assert (blk == i).all()
    finally:
        _pool.restore(previous)


def test_arena_hands_out_the_most_recently_freed_block_that_fits():
    """A cached block serves requests of half its size up to its size, the most recently
    freed first (its lines are the likeliest to be in cache), and keeps its own size.
    (Idle blocks left by earlier tests are released first: one of them could serve the
    requests below; the cyclic collector is held off, so that none is freed meanwhile.)"""
    import gc
    gc.collect()
    gc.disable()
    _pool.arena_trim()
    previous = _pool.use_arena()
    try:
        older, newer = np.empty(300_000, np.float32), np.empty(400_000, np.float32)
        addr_old, addr_new = older.ctypes.data, newer.ctypes.data
        del older, newer                                     # 1.2 MB, then 1.6 MB freed
        a = np.ones(280_000, np.float32)
        assert a.ctypes.data == addr_new                     # the newer one, though larger
        a.resize(400_000, refcheck=False)                    # its whole size: in place
        assert a.ctypes.data == addr_new and (a[:280_000] == 1).all()
        b = np.empty(100_000, np.float32)                    # 0.4 MB: below half of either
        assert b.ctypes.data not in (addr_old, addr_new)
        c = np.empty(300_000, np.float32)
        assert c.ctypes.data == addr_old
    finally:
        _pool.restore(previous)
        gc.enable()


def test_arena_is_per_context():
    """Another thread allocating while a run holds the arena uses NumPy's default."""
    import threading
    seen = []
    previous = _pool.use_arena()
    try:
        t = threading.Thread(target=lambda: seen.append(_handler_name(np.ones(10**6))))
        t.start()
        t.join()
    finally:
        _pool.restore(previous)
    assert seen == ["default_allocator"]


# ------------------------------------------------------------------ im2col kernel
@pytest.mark.parametrize("geom", [
    # (H, W, kh, kw, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r, dil_h, dil_w)
    (10, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
    (17, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),
    (9, 11, 5, 3, 1, 3, 4, 0, 2, 5, 2, 1),       # rows and columns wholly in the padding
    (6, 7, 2, 4, 3, 2, 0, 3, 1, 0, 1, 2),
    (4, 4, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1),        # kernel larger than the image
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_im2col_kernel_matches_windows(geom, dtype):
    H, W, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw = geom
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    rng = np.random.default_rng(H * W)
    x = rng.standard_normal((2, 3, H, 2 * W)).astype(dtype)[:, :, :, ::2]   # strided
    xp = np.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    OH = (H + pt + pb - (kh - 1) * dh - 1) // sh + 1
    OW = (W + pl + pr - (kw - 1) * dw - 1) // sw + 1
    want = np.empty((2, 3, kh, kw, OH, OW), dtype)
    for i in range(kh):
        for j in range(kw):
            want[:, :, i, j] = xp[:, :, i * dh:i * dh + (OH - 1) * sh + 1:sh,
                                  j * dw:j * dw + (OW - 1) * sw + 1:sw]
    cols = np.full((2, 3 * kh * kw, OH * OW), np.nan, dtype)
    mod.im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, cols, OH, OW, 2)
    np.testing.assert_array_equal(cols, want.reshape(2, 3 * kh * kw, OH * OW))
    with pytest.raises(ValueError, match="cols has shape"):
        mod.im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, cols[:1], OH, OW, 1)


def _build_modules(family):
    """family's x86-64-v3 and x86-64-v4 modules where both are built and this CPU runs
    them, else None."""
    from fastops._cpu import _runtime
    if not (_runtime.has_x86_64_v4() and _runtime.has_x86_64_v3()):
        return None
    names = [_dispatch.module_for(t, family) for t in ("x86-64-v3", "x86-64-v4")]
    if names[0] == names[1] or "avx512" not in names[1]:
        return None
    return [importlib.import_module(n) for n in names]


@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
def test_packed_gemm_bits_are_the_same_on_both_builds():
    """The x86-64-v4 build computes two panels at once in 512-bit registers (conv.hpp
    gemm_pair_block) with each output's sum in gemm_block's order: the same bits as the
    x86-64-v3 build, for whole and partial pairs (M = 20: 8 rows in the second), an odd
    panel left over (M = 13, 23: zmm blocks of one panel), 32- and 16-column steps with
    partial ones (P = 7, 9, 17, 22, 33, 150, 300), the last 2-10 columns along the rows
    (gemm_tail_cols: P = 34, 40, 42, 130 with 11-17 panels; the x86-64-v3 build's
    gemm_block takes them as 8- or 16-lane strips), short k passes (K = 300: 256 + 44;
    K = 16 in wide column blocks), both B layouts, biases, activations, 1-3 threads; and
    conv_packed through both routes."""
    mods = _build_modules("deform_conv")
    if mods is None:
        pytest.skip("needs the x86-64-v3 and x86-64-v4 builds, both built and runnable here")
    rng = np.random.default_rng(5)
    for M, K, P in ((13, 128, 150), (20, 300, 33), (23, 600, 22), (36, 256, 300),
                    (24, 129, 7), (25, 200, 9), (40, 1100, 17), (20, 16, 5000),
                    (100, 300, 34), (100, 300, 40), (100, 300, 42), (61, 256, 130)):
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((2, K, P)).astype(np.float32)
        bt = np.ascontiguousarray(b.transpose(0, 2, 1))
        rb = rng.standard_normal(M).astype(np.float32)
        cb = rng.standard_normal(P).astype(np.float32)
        packed = mods[0].gemm_pack(a, 2)
        for act in (0, 2):
            for trans, src in ((False, b), (True, bt)):
                for nt in (1, 2, 3):
                    outs = [np.empty((2, M, P), np.float32) for _ in mods]
                    for mod, out in zip(mods, outs):
                        mod.gemm_packed(packed, M, src, rb, cb, act, out, nt, trans)
                    np.testing.assert_array_equal(outs[0], outs[1], err_msg=f"{M} {K} {P}")
    for C, M, H, W, k in ((64, 30, 10, 13, 3), (16, 26, 40, 52, 3)):   # ImageB, conv_rows
        x = rng.standard_normal((1, C, H, W)).astype(np.float32)
        packed = mods[0].gemm_pack(rng.standard_normal((M, C * k * k)).astype(np.float32), 2)
        rb = rng.standard_normal(M).astype(np.float32)
        outs = [np.empty((1, M, H, W), np.float32) for _ in mods]
        for mod, out in zip(mods, outs):
            mod.conv_packed(packed, x, k, k, 1, 1, 1, 1, 1, 1, rb, 1, out, 2)
        np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.skipif(not PACKED, reason="this build has no packed GEMM (x86-64-v3 and -v4 only)")
def test_packed_gemm_bits_do_not_depend_on_threads():
    """Each output's k passes run in one fixed order whatever the split into runs and
    column blocks, so 1, 2 and 3 threads give the same bits.  One image on more threads
    splits its panels into runs that read one shared copy of the strips (and 2 MB of it
    at most: K = 4000 x 150 columns packs per run again)."""
    mod = _dispatch.kernel_module("cpu", "deform_conv")
    rng = np.random.default_rng(11)
    for M, K, P, N in ((150, 700, 37, 2), (64, 40, 3000, 2), (7, 300, 600, 2),
                       (20, 70, 1100, 2), (40, 300, 200, 2), (150, 700, 37, 1),
                       (61, 300, 150, 1), (30, 4000, 150, 1), (19, 129, 250, 1),
                       (13, 16, 9000, 1), (64, 24, 7000, 2)):
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((N, K, P)).astype(np.float32)
        packed = mod.gemm_pack(a, 2)
        outs = []
        for nt in (1, 2, 3):
            out = np.empty((N, M, P), np.float32)
            mod.gemm_packed(packed, M, b, None, None, 2, out, nt)
            outs.append(out)
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])
