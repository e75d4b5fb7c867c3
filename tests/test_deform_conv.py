"""deform_conv2d / modulated_deform_conv2d against the ONNX node test data, onnx.reference,
ONNX Runtime's DeformConv (opsets 19 and 22), torch.nn.functional.conv2d (zero offsets),
a float64 reference written from the definition (tests/reference/deform_conv.py) and
hand-checked boundary cases.

A one-off side check against torchvision (the suite does not need it): torch 2.14.1 and
torchvision 0.29.1 in a separate venv (python -m venv --system-site-packages), running
this checkout.  test_matches_torchvision_when_installed passed; over the 7 CONFIGS below
(pads made symmetric, as torchvision requires) x mask / no mask x offset spread 0, 1, 3
x float32 / float64 (84 cases) the largest |fastops - torchvision| / (1 + |torchvision|)
was 2.5e-6 in float32 and 3.6e-15 in float64; the boundary points of
test_boundary_rule_hand_checked (py = -1, -1 + 2**-20, -0.5, H - 1, H - 0.5, H - 2**-20,
H, the same for px, corners, 1e30) gave identical values in float32 and float64.
test_matches_torchvision_when_installed runs wherever torchvision imports.
"""
import numpy as np
import pytest

from fastops.conv import deform_conv2d, modulated_deform_conv2d
from tests.conftest import peer, to_numpy
from tests.onnx_cases import case_names, load_case, run_reference
from tests.reference.deform_conv import deform_conv2d_ref, out_size


def _rng(seed=0):
    return np.random.default_rng(seed)


def _case(seed, N=2, C=4, H=7, W=8, M=6, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1),
          dil=(1, 1), groups=1, dg=1, mask=True, bias=True, dtype=np.float64, spread=2.0):
    """Random inputs; offsets ~ N(0, spread) so that many samples leave the map."""
    rng = _rng(seed)
    OH = out_size(H, pads[0], pads[2], kh, stride[0], dil[0])
    OW = out_size(W, pads[1], pads[3], kw, stride[1], dil[1])
    kw_ = dict(stride=stride, padding=pads, dilation=dil, groups=groups, deform_groups=dg)
    arrs = dict(
        x=rng.standard_normal((N, C, H, W)).astype(dtype),
        offset=(rng.standard_normal((N, 2 * dg * kh * kw, OH, OW)) * spread).astype(dtype),
        weight=rng.standard_normal((M, C // groups, kh, kw)).astype(dtype),
        bias=rng.standard_normal(M).astype(dtype) if bias else None,
        mask=rng.uniform(0, 1, (N, dg * kh * kw, OH, OW)).astype(dtype) if mask else None)
    return arrs, kw_


def _fast(arrs, kw, xp=np, **extra):
    a = {k: (None if v is None else xp.asarray(v)) for k, v in arrs.items()}
    return deform_conv2d(a["x"], a["offset"], a["weight"], a["bias"], mask=a["mask"], **kw,
                         **extra)


def _ref(arrs, kw):
    return deform_conv2d_ref(arrs["x"], arrs["offset"], arrs["weight"], arrs["bias"],
                             kw["stride"], kw["padding"], kw["dilation"], kw["groups"],
                             kw["deform_groups"], arrs["mask"])


# (N, C, H, W, M, kh, kw, stride, pads, dilation, groups, deform_groups)
CONFIGS = [
    (2, 4, 7, 8, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1),
    (1, 6, 9, 7, 4, 3, 2, (2, 1), (1, 0, 2, 1), (1, 2), 2, 3),     # asymmetric pads
    (2, 8, 6, 6, 8, 2, 3, (1, 2), (0, 2, 1, 0), (2, 1), 2, 4),     # dg spans groups' halves
    (1, 8, 5, 9, 12, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 4, 2),   # a dg holds two groups
    (3, 3, 4, 5, 3, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 3, 1),    # depthwise 1x1
    (1, 5, 11, 10, 7, 5, 5, (3, 2), (2, 1, 0, 3), (1, 1), 1, 5),
    (1, 2, 1, 1, 3, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 2),    # 1x1 map
]


# ------------------------------------------------------------- ONNX node test data
@pytest.mark.parametrize("name", case_names("test_basic_deform_conv") +
                         case_names("test_deform_conv"))
def test_onnx_node_data(name):
    node, attrs, inputs, outputs = load_case(name)
    feeds = dict(zip(node.input, inputs))
    got = deform_conv2d(inputs[0], inputs[2], inputs[1],
                        feeds.get("B"), attrs.get("strides", 1), attrs.get("pads", 0),
                        attrs.get("dilations", 1), attrs.get("group", 1),
                        attrs.get("offset_group", 1), mask=feeds.get("mask"))
    assert got.dtype == outputs[0].dtype and got.shape == outputs[0].shape
    np.testing.assert_allclose(got, outputs[0], rtol=1e-5, atol=1e-5)


def test_onnx_node_cases_present():
    assert len(case_names("test_basic_deform_conv") + case_names("test_deform_conv")) == 4


# ------------------------------------------------------------- onnx.reference
def _onnx_attrs(kw, kh, kwid):
    return dict(strides=list(kw["stride"]), pads=list(kw["padding"]),
                dilations=list(kw["dilation"]), group=kw["groups"],
                offset_group=kw["deform_groups"], kernel_shape=[kh, kwid])


@pytest.mark.parametrize("cfg", [
    (1, 4, 5, 6, 4, 2, 3, (1, 2), (1, 0, 2, 1), (1, 1), 2, 2),
    (2, 2, 4, 4, 3, 2, 2, (1, 1), (0, 0, 0, 0), (2, 1), 1, 1),
])
@pytest.mark.parametrize("opset", [19, 22])
def test_onnx_reference(cfg, opset):
    """The reference evaluator (slow; it divides by H - 1, so no size-1 maps here)."""
    N, C, H, W, M, kh, kwid, s, p, d, g, dg = cfg
    arrs, kw = _case(3, N, C, H, W, M, kh, kwid, s, p, d, g, dg, dtype=np.float32, spread=1.5)
    want = run_reference("DeformConv", [arrs["x"], arrs["weight"], arrs["offset"],
                                        arrs["bias"], arrs["mask"]],
                         _onnx_attrs(kw, kh, kwid), opset)[0]
    got = _fast(arrs, kw)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------- ONNX Runtime
def _ort(inputs, attrs, opset):
    ort = peer("onnxruntime")
    from onnx import helper
    names = ["X", "W", "offset", "B", "mask"]
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in zip(names, inputs) if a is not None]
    node = helper.make_node("DeformConv", [n if a is not None else "" for n, a in
                                           zip(names, inputs)], ["Y"], **attrs)
    out = helper.make_tensor_value_info("Y", helper.np_dtype_to_tensor_dtype(inputs[0].dtype),
                                        None)
    model = helper.make_model(helper.make_graph([node], "g", vi, [out]),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in zip(names, inputs) if a is not None})[0]


@pytest.mark.parametrize("cfg", CONFIGS[:6])
@pytest.mark.parametrize("opset", [19, 22])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_onnxruntime(cfg, opset, dtype):
    N, C, H, W, M, kh, kwid, s, p, d, g, dg = cfg
    for mask in (False, True):                       # DCN v1 and v2
        arrs, kw = _case(4, N, C, H, W, M, kh, kwid, s, p, d, g, dg, mask=mask, dtype=dtype)
        want = _ort([arrs["x"], arrs["weight"], arrs["offset"], arrs["bias"], arrs["mask"]],
                    _onnx_attrs(kw, kh, kwid), opset)
        got = _fast(arrs, kw)
        tol = 1e-4 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_onnxruntime_float16():
    arrs, kw = _case(5, *CONFIGS[1][:7], *CONFIGS[1][7:], dtype=np.float16, spread=1.0)
    want = _ort([arrs["x"], arrs["weight"], arrs["offset"], arrs["bias"], arrs["mask"]],
                _onnx_attrs(kw, 3, 2), 22)
    got = _fast(arrs, kw)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2,
                               atol=2e-2)


def test_mmcv_v1_v2_equal_onnx():
    """MMCV DeformConv2d (v1) is DeformConv without a mask; ModulatedDeformConv2d (v2)
    is DeformConv with one; deform_conv2d(mask=m) is modulated_deform_conv2d bit for bit."""
    arrs, kw = _case(6, 2, 6, 9, 8, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2, 3,
                     dtype=np.float32)
    attrs = _onnx_attrs(kw, 3, 3)
    v1 = deform_conv2d(arrs["x"], arrs["offset"], arrs["weight"], None, **kw)
    want1 = _ort([arrs["x"], arrs["weight"], arrs["offset"], None, None], attrs, 19)
    np.testing.assert_allclose(v1, want1, rtol=1e-4, atol=1e-4)
    v2 = modulated_deform_conv2d(arrs["x"], arrs["offset"], arrs["mask"], arrs["weight"],
                                 arrs["bias"], **kw)
    want2 = _ort([arrs["x"], arrs["weight"], arrs["offset"], arrs["bias"], arrs["mask"]],
                 attrs, 19)
    np.testing.assert_allclose(v2, want2, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(v2, _fast(arrs, kw))
    ones = np.ones_like(arrs["mask"])
    np.testing.assert_array_equal(
        modulated_deform_conv2d(arrs["x"], arrs["offset"], ones, arrs["weight"], None, **kw),
        v1)


# ------------------------------------------------------------- float64 reference
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("mask", [False, True])
def test_reference(xp, cfg, mask):
    N, C, H, W, M, kh, kwid, s, p, d, g, dg = cfg
    arrs, kw = _case(7, N, C, H, W, M, kh, kwid, s, p, d, g, dg, mask=mask, spread=3.0)
    got = to_numpy(_fast(arrs, kw, xp))
    np.testing.assert_allclose(got, _ref(arrs, kw), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("groups, dg", [(1, 1), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1),
                                        (4, 2), (8, 8), (4, 8)])
def test_groups_and_deform_groups(xp, groups, dg):
    arrs, kw = _case(8, 2, 8, 6, 7, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), groups, dg)
    np.testing.assert_allclose(to_numpy(_fast(arrs, kw, xp)), _ref(arrs, kw), rtol=1e-12,
                               atol=1e-12)


def test_many_tiles_and_channels():
    """Several tiles per image, channel counts that are not multiples of a vector."""
    arrs, kw = _case(9, 2, 37, 23, 29, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1,
                     spread=1.0)
    np.testing.assert_allclose(_fast(arrs, kw), _ref(arrs, kw), rtol=1e-11, atol=1e-11)


def test_one_hot_columns_exact(xp):
    """A 1x1 kernel with one-hot weights makes each output one sample: exactly the
    sample's arithmetic (w0*v0 + w1*v1 + w2*v2 + w3*v3 with w = mask * axis weights, in
    the compute dtype), so every backend agrees with the CPU bit for bit and with the
    float64 reference to float32 rounding; NaN/inf offsets give 0."""
    rng = _rng(25)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    off = (rng.standard_normal((2, 6, 6, 7)) * 3).astype(np.float32)
    off.reshape(-1)[::9] = np.nan
    off.reshape(-1)[1::13] = np.inf
    off.reshape(-1)[2::17] = -1.0
    mask = rng.uniform(0, 2, (2, 3, 6, 7)).astype(np.float32)
    w = np.eye(3, dtype=np.float32).reshape(3, 3, 1, 1)
    for m in (None, mask):
        got = to_numpy(deform_conv2d(xp.asarray(x), xp.asarray(off), xp.asarray(w),
                                     deform_groups=3, mask=None if m is None else
                                     xp.asarray(m)))
        want = deform_conv2d(x, off, w, deform_groups=3, mask=m)
        np.testing.assert_array_equal(got, want)
        ref = deform_conv2d_ref(x, off, w, deform_groups=3, mask=m)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------- invariants
@pytest.mark.parametrize("stride, pad, dil, groups", [
    (1, 0, 1, 1), (1, 1, 1, 1), (2, 1, 1, 2), ((1, 2), (2, 1), (2, 1), 3), (3, 2, 2, 6)])
@pytest.mark.parametrize("with_mask", [False, True])
def test_zero_offsets_equal_conv2d(stride, pad, dil, groups, with_mask):
    torch = peer("torch")
    F = torch.nn.functional
    rng = _rng(10)
    x = rng.standard_normal((2, 6, 11, 13))
    w = rng.standard_normal((12, 6 // groups, 3, 3))
    b = rng.standard_normal(12)
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride,
                    pad, dil, groups).numpy()
    off = np.zeros((2, 18) + want.shape[2:])
    mask = np.ones((2, 9) + want.shape[2:]) if with_mask else None
    got = deform_conv2d(x, off, w, b, stride, pad, dil, groups, mask=mask)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_integer_offsets_shift():
    """Offset layout: channel 2k is dy and 2k + 1 is dx of tap k (row-major taps).  A 2x2
    kernel that only weights tap (0, 1), with dx = -1 and dy = +1 on that tap alone, reads
    x[oy + 1, ox] (hand-checked)."""
    x = np.arange(30.0).reshape(1, 1, 5, 6)
    w = np.zeros((1, 1, 2, 2))
    w[0, 0, 0, 1] = 1.0
    off = np.zeros((1, 8, 4, 5))
    off[0, 2] = 1.0            # dy of tap 1 = (0, 1)
    off[0, 3] = -1.0           # dx of tap 1
    off[0, 0] = 100.0          # tap 0 is far outside but has weight 0
    got = deform_conv2d(x, off, w)
    np.testing.assert_array_equal(got[0, 0], x[0, 0, 1:5, 0:5])


def test_boundary_rule_hand_checked():
    """The torchvision/MMCV rule at and past the edges of a 4 x 5 map."""
    H, W = 4, 5
    x = (np.arange(H * W, dtype=np.float64) + 1.0).reshape(H, W)
    eps = 2.0 ** -20
    pts = [  # (py, px, expected value from the rule, computed by hand)
        (-1.0, 2.0, 0.0),                              # py <= -1: outside
        (-1.0 + eps, 2.0, eps * x[0, 2]),              # just inside: one corner, weight eps
        (-0.5, 2.0, 0.5 * x[0, 2]),                    # row -1 is 0, row 0 weight 0.5
        (0.0, 0.0, x[0, 0]),
        (H - 1.0, W - 1.0, x[H - 1, W - 1]),           # the last pixel exactly
        (H - 0.5, 1.0, 0.5 * x[H - 1, 1]),             # row H counts 0
        (H - eps, 1.0, eps * x[H - 1, 1]),             # just inside the bottom edge
        (float(H), 1.0, 0.0),                          # py >= H: outside
        (1.0, -1.0, 0.0), (1.0, -0.25, 0.75 * x[1, 0]), (1.0, float(W), 0.0),
        (1.0, W - 0.75, 0.75 * x[1, W - 1]),
        (-0.5, -0.5, 0.25 * x[0, 0]),                  # a corner of the map
        (H - 0.5, W - 0.5, 0.25 * x[H - 1, W - 1]),
        (1.25, 2.5, 0.75 * 0.5 * x[1, 2] + 0.75 * 0.5 * x[1, 3] + 0.25 * 0.5 * x[2, 2]
         + 0.25 * 0.5 * x[2, 3]),
        (1e30, 2.0, 0.0), (-np.inf, 2.0, 0.0), (np.nan, 2.0, 0.0), (2.0, np.nan, 0.0),
    ]
    n = len(pts)
    # output 1 x n: stride H leaves one row, right padding makes n columns
    off = np.zeros((1, 2, 1, n))
    for i, (py, px, _) in enumerate(pts):
        off[0, 0, 0, i] = py            # oy = 0: py = dy
        off[0, 1, 0, i] = px - i        # ox = i: px = i + dx
    geom = dict(stride=(H, 1), padding=(0, 0, 0, n - W))
    got = deform_conv2d(x[None, None], off, np.ones((1, 1, 1, 1)), **geom)[0, 0, 0]
    want = np.array([p[2] for p in pts])
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    got32 = deform_conv2d(x[None, None].astype(np.float32), off.astype(np.float32),
                          np.ones((1, 1, 1, 1), np.float32), **geom)
    np.testing.assert_allclose(got32[0, 0, 0], want, rtol=1e-6, atol=0)


def test_nonfinite_offsets_and_data():
    """NaN/inf/huge offsets: samples outside (0, as ONNX Runtime); inf/NaN data in pixel 0
    does not leak into samples whose corners lie outside the map."""
    arrs, kw = _case(11, 2, 3, 6, 7, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1,
                     dtype=np.float32)
    off = arrs["offset"]
    flat = off.reshape(-1)
    flat[::7] = np.nan
    flat[1::11] = np.inf
    flat[2::13] = -np.inf
    flat[3::17] = 3e38
    flat[4::19] = -1e20
    got = _fast(arrs, kw)
    want = _ref(arrs, kw)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ort = _ort([arrs["x"], arrs["weight"], off, arrs["bias"], arrs["mask"]],
               _onnx_attrs(kw, 3, 3), 22)
    np.testing.assert_allclose(got, ort, rtol=1e-4, atol=1e-4)
    # inf at pixel (0, 0) of every plane; all samples far outside
    x = arrs["x"].copy()
    x[:, :, 0, 0] = np.inf
    far = np.full_like(off, 1e6)
    y = deform_conv2d(x, far, arrs["weight"], None, **kw)
    np.testing.assert_array_equal(y, 0)


def test_nan_mask_propagates():
    arrs, kw = _case(12, 1, 2, 5, 5, 3, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1)
    arrs["mask"][0, 4, 2, 3] = np.nan
    got = _fast(arrs, kw)
    assert np.isnan(got[0, :, 2, 3]).all()
    assert np.isfinite(np.delete(got.reshape(3, -1), 2 * 5 + 3, axis=1)).all()
    np.testing.assert_allclose(got, _ref(arrs, kw), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------- dtypes
def test_float16_computes_in_float32():
    arrs, kw = _case(13, 2, 4, 7, 8, 6, 3, 3, dtype=np.float16, spread=1.0)
    got = _fast(arrs, kw)
    assert got.dtype == np.float16
    a32 = {k: (None if v is None else v.astype(np.float32)) for k, v in arrs.items()}
    np.testing.assert_array_equal(got, _fast(a32, kw).astype(np.float16))
    np.testing.assert_allclose(got.astype(np.float64), _ref(arrs, kw), rtol=1e-2, atol=1e-2)


def test_mixed_dtypes_promote():
    arrs, kw = _case(14, 1, 4, 6, 6, 2, 3, 3, dtype=np.float32)
    arrs["weight"] = arrs["weight"].astype(np.float64)
    got = _fast(arrs, kw)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _ref(arrs, kw), rtol=1e-12, atol=1e-12)
    arrs["weight"] = arrs["weight"].astype(np.float16)
    assert _fast(arrs, kw).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_float64_close_to_reference(xp, dtype):
    arrs, kw = _case(15, 2, 5, 9, 8, 7, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 1,
                     dtype=dtype)
    got = to_numpy(_fast(arrs, kw, xp))
    assert got.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _ref(arrs, kw), rtol=tol, atol=tol)


# ------------------------------------------------------------- GEMM back ends, threads
GEMMS = ("builtin", "blas", "avx512", "avx2")


def _kernel():
    """The deform_conv module this machine dispatches to: each build (baseline, x86-64-v3,
    x86-64-v4) keeps its own GEMM choice, so set_gemm must reach this one."""
    from fastops import _dispatch
    return _dispatch.kernel_module("cpu", "deform_conv")


class _Gemm:
    """with _Gemm(which, dtype): the dispatched kernel uses GEMM `which` for dtype, or the
    test skips where this build or machine has no such GEMM."""

    def __init__(self, which, dtype):
        self.which, self.dtype, self.k = which, dtype, _kernel()

    def __enter__(self):
        self.before = self.k.set_gemm(self.which)
        if self.k.gemm_backend(self.dtype).split(":")[0] != self.which:
            self.k.set_gemm(self.before)
            pytest.skip(f"no {self.which} GEMM for {np.dtype(self.dtype).name} here")
        return self.k

    def __exit__(self, *exc):
        self.k.set_gemm(self.before)


@pytest.mark.parametrize("which", GEMMS)
def test_every_gemm_gives_the_reference(which):
    """The op through each GEMM against the float64 definition: K * Cg past the AVX-512
    GEMM's pass length (384) and output channels past its 32-row strips (2 passes, a
    partial strip), and a grouped case whose 10 channels per group take 16-row strips."""
    cases = [_case(16, 2, 48, 9, 10, 40, 3, 3, dtype=np.float32),
             _case(19, 1, 48, 9, 11, 40, 3, 3, groups=4, dg=2, dtype=np.float32)]
    with _Gemm(which, np.float32):
        for arrs, kw in cases:
            np.testing.assert_allclose(_fast(arrs, kw), _ref(arrs, kw), rtol=2e-5, atol=2e-4)


def test_builtin_gemm_float64_exact_to_rounding():
    arrs, kw = _case(16, 2, 9, 10, 11, 13, 3, 3, dtype=np.float64)
    with _Gemm("builtin", np.float64):
        np.testing.assert_allclose(_fast(arrs, kw), _ref(arrs, kw), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("which", GEMMS)
def test_gemm_paths_odd_sizes(dtype, which):
    """The kernel's GEMM entry (c[:, :n] = a . b^T) on sizes that exercise every block
    edge: the builtin GEMM's 4 x 8 blocks, the AVX-512 one's 14-row blocks (a last block
    copied, so rows of b past n are never read), 16- and 32-row strips and 384-long
    passes of k; columns past n are never written."""
    rng = _rng(26)
    with _Gemm(which, dtype) as k:
        for m, n, kk in [(1, 1, 1), (3, 5, 7), (4, 8, 0), (5, 9, 13), (9, 17, 33),
                         (13, 3, 1), (16, 14, 384), (17, 15, 385), (33, 29, 800),
                         (40, 28, 769), (1, 100, 2)]:
            a = rng.standard_normal((m, kk)).astype(dtype)
            b = rng.standard_normal((n, kk)).astype(dtype)
            c = np.full((m, n + 2), np.nan, dtype)
            k._gemm_nt(a, b, c, which)
            want = a.astype(np.float64) @ b.astype(np.float64).T
            scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64).T
            tol = 1e-6 if dtype == np.float32 else 1e-15
            assert (np.abs(c[:, :n] - want) <= tol * (scale + 1)).all(), (m, n, kk)
            assert np.isnan(c[:, n:]).all()


def test_blas_thread_count_restored():
    threadpoolctl = peer("threadpoolctl")
    arrs, kw = _case(17, 1, 4, 6, 6, 2, 3, 3, dtype=np.float32)
    with _Gemm("blas", np.float32), threadpoolctl.threadpool_limits(2, user_api="blas"):
        _fast(arrs, kw)
        info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert all(i["num_threads"] == 2 for i in info)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threads_and_im2col_step_bit_identical(threads, dtype):
    arrs, kw = _case(18, 3, 16, 40, 44, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2, 2,
                     dtype=dtype)
    outs = []
    for n in (1, 2, 3):
        with threads(n):
            outs.append(_fast(arrs, kw))
    outs.append(_fast(arrs, kw, im2col_step=1))
    outs.append(_fast(arrs, kw, im2col_step=2))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


# ------------------------------------------------------------- layouts and frameworks
def _views(a):
    """A transposed, negative-stride view equal to ``a`` (4-D)."""
    big = np.zeros((a.shape[0], a.shape[2] * 2, a.shape[1], a.shape[3]), a.dtype)
    v = big.transpose(0, 2, 1, 3)[:, :, ::-2, :]
    v[...] = a
    return v


def test_non_contiguous_byte_order_read_only(xp):
    """Views give the bits that contiguous inputs give on the same backend (the GPU's
    cuBLAS GEMM sums in another order than the CPU's: 1 ulp apart on an H200; GPU and
    CPU agree within tolerance in test_float32_float64_close_to_reference)."""
    arrs, kw = _case(19, 2, 4, 6, 7, 6, 3, 3, dtype=np.float32)
    want = to_numpy(_fast(arrs, kw, xp))
    views = {k: (None if v is None else (_views(v) if v.ndim == 4 else v[::-1][::-1]))
             for k, v in arrs.items()}
    for v, a in zip(views.values(), arrs.values()):
        if v is not None:
            np.testing.assert_array_equal(v, a)
    np.testing.assert_array_equal(to_numpy(_fast(views, kw, xp)), want)
    if xp is np:
        swapped = {k: (None if v is None else v.astype(v.dtype.newbyteorder(">")))
                   for k, v in arrs.items()}
        np.testing.assert_array_equal(_fast(swapped, kw), want)
        ro = {k: (None if v is None else v.copy()) for k, v in arrs.items()}
        for v in ro.values():
            if v is not None:
                v.flags.writeable = False
        np.testing.assert_array_equal(_fast(ro, kw), want)


def test_zero_stride_views():
    """Broadcast (zero-stride) inputs: one image repeated, one offset field for all."""
    arrs, kw = _case(20, 1, 3, 5, 6, 4, 3, 3, dtype=np.float64)
    b = {k: (np.broadcast_to(v, (3,) + v.shape[1:]) if k in ("x", "offset", "mask") else v)
         for k, v in arrs.items()}
    want = _fast({k: (None if v is None else np.ascontiguousarray(v)) for k, v in b.items()},
                 kw)
    np.testing.assert_array_equal(_fast(b, kw), want)
    np.testing.assert_allclose(want[2], _ref(arrs, kw)[0], rtol=1e-12, atol=1e-12)


def test_inputs_not_modified():
    arrs, kw = _case(21, 2, 4, 6, 7, 6, 3, 3, dtype=np.float16)
    before = {k: (None if v is None else v.copy()) for k, v in arrs.items()}
    _fast(arrs, kw)
    for k, v in arrs.items():
        if v is not None:
            np.testing.assert_array_equal(v, before[k])


def test_lists_and_torch():
    arrs, kw = _case(22, 1, 2, 4, 4, 2, 2, 2, (1, 1), (0, 0, 0, 0), (1, 1), 1, 1,
                     dtype=np.float32)
    want = _fast(arrs, kw)
    got = deform_conv2d(arrs["x"].tolist(), arrs["offset"].tolist(), arrs["weight"].tolist(),
                        arrs["bias"].tolist(), mask=arrs["mask"].tolist())
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    torch = peer("torch")
    t = {k: torch.from_numpy(v) for k, v in arrs.items()}
    got = deform_conv2d(t["x"], t["offset"], t["weight"], t["bias"], mask=t["mask"])
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), want)


# ------------------------------------------------------------- empty and edge shapes
def test_empty_shapes(xp):
    def run(N=1, C=2, H=4, W=4, M=3, k=3, pad=0, bias=True, dg=1, groups=1):
        OH = out_size(H, pad, pad, k, 1, 1)
        OW = out_size(W, pad, pad, k, 1, 1)
        x = xp.ones((N, C, H, W), np.float32)
        off = xp.zeros((N, 2 * dg * k * k, OH, OW), np.float32)
        w = xp.ones((M, C // groups if groups else 0, k, k), np.float32)
        b = xp.arange(M, dtype=np.float32) if bias else None
        return to_numpy(deform_conv2d(x, off, w, b, padding=pad, groups=groups,
                                      deform_groups=dg))
    assert run(N=0).shape == (0, 3, 2, 2)
    assert run(M=0, bias=False).shape == (1, 0, 2, 2)
    assert run(H=2).shape == (1, 3, 0, 2)             # the 3x3 kernel does not fit: 0 rows
    assert run(W=1, pad=0).shape == (1, 3, 2, 0)
    y = run(C=0)                                      # no input channels: the bias
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(3.0)[None, :, None, None],
                                                     (1, 3, 2, 2)))
    y = run(H=0, pad=2)                               # empty map, padded: every sample is 0
    assert y.shape == (1, 3, 2, 6)
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(3.0)[None, :, None, None],
                                                     y.shape))
    y = run(W=0, pad=1, bias=False)
    assert y.shape == (1, 3, 4, 0)


# ------------------------------------------------------------- errors
def _args(**over):
    arrs, kw = _case(23, 1, 4, 5, 5, 2, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1), 1, 1,
                     dtype=np.float32)
    args = dict(x=arrs["x"], offset=arrs["offset"], weight=arrs["weight"], bias=arrs["bias"],
                mask=arrs["mask"])
    args.update(over)
    return args


@pytest.mark.parametrize("over, exc, match", [
    (dict(x=np.ones((4, 5, 5), np.float32)), ValueError, "x must be 4-D"),
    (dict(x=np.ones((1, 4, 5, 5), np.int32)), TypeError, "x has dtype int32"),
    (dict(offset=np.ones((1, 17, 3, 3), np.float32)), ValueError, r"offset must have shape "
                                                                    r"\(1, 18, 3, 3\)"),
    (dict(offset=np.ones((1, 18, 4, 3), np.float32)), ValueError, "offset must have shape"),
    (dict(offset=np.ones((1, 18, 3, 3), np.complex64)), TypeError, "offset has dtype"),
    (dict(mask=np.ones((1, 18, 3, 3), np.float32)), ValueError, r"mask must have shape "
                                                                r"\(1, 9, 3, 3\)"),
    (dict(mask=np.ones((1, 9, 3, 3), bool)), TypeError, "mask has dtype bool"),
    (dict(weight=np.ones((2, 3, 3, 3), np.float32)), ValueError, r"weight must have shape "
                                                                 r"\(M, 4, kh, kw\)"),
    (dict(weight=np.ones((2, 2, 3, 3), np.float32)), ValueError, "infers groups=2 .*pass "
                                                                 "groups=2"),
    (dict(offset=np.ones((1, 36, 3, 3), np.float32)), ValueError, "pass deform_groups=2"),
    (dict(weight=np.ones((2, 4, 0, 3), np.float32)), ValueError, "kh, kw >= 1"),
    (dict(weight=np.ones((2, 4, 3), np.float32)), ValueError, "weight must be 4-D"),
    (dict(bias=np.ones(3, np.float32)), ValueError, r"bias must have shape \(2,\)"),
    (dict(bias=np.ones((2, 1), np.float32)), ValueError, "bias must be 1-D"),
    (dict(groups=3), ValueError, "not divisible by groups=3"),
    (dict(groups=2, weight=np.ones((3, 2, 3, 3), np.float32)), ValueError,
     "3 output channels, not divisible by groups=2"),
    (dict(deform_groups=3), ValueError, "not divisible by deform_groups=3"),
    (dict(groups=0), ValueError, "groups=0 is out of range"),
    (dict(deform_groups=-1), ValueError, "deform_groups=-1"),
    (dict(stride=0), ValueError, "stride=0"),
    (dict(stride=(1, 0)), ValueError, r"stride\[1\]=0"),
    (dict(stride=(1, 1, 1)), ValueError, "stride must be an int or a sequence of 1 or 2"),
    (dict(dilation=-2), ValueError, "dilation=-2"),
    (dict(padding=-1), ValueError, "padding=-1"),
    (dict(padding=(1, 2, 3)), ValueError, "sequence of 1 or 2 or 4"),
    (dict(padding=1.5), TypeError, "padding must be an integer"),
    (dict(stride=True), TypeError, "stride must be an integer"),
    (dict(padding=2**62), ValueError, "padding .* too large"),
    (dict(padding=2**63), ValueError, "padding=9223372036854775808 is out of range"),
    (dict(stride=2**64), ValueError, "stride=18446744073709551616 is out of range"),
    (dict(dilation=2**40), ValueError, r"offset must have shape \(1, 18, 0, 0\)"),
    (dict(im2col_step=0), ValueError, "im2col_step=0"),
    (dict(im2col_step=2.0), TypeError, "im2col_step must be an integer"),
])
def test_bad_input(over, exc, match):
    args = _args(**over)
    with pytest.raises(exc, match="^deform_conv2d: .*" + match):
        deform_conv2d(**args)


def test_huge_stride_is_one_position():
    """A stride far beyond the map gives one output position per axis (computed exactly)."""
    args = _args()
    off = args["offset"][:, :, :1, :1].copy()
    y = deform_conv2d(args["x"], off, args["weight"], args["bias"], stride=2**62,
                      mask=args["mask"][:, :, :1, :1].copy())
    want = deform_conv2d(args["x"], off, args["weight"], args["bias"], stride=5,
                         mask=args["mask"][:, :, :1, :1].copy())
    np.testing.assert_array_equal(y, want)


def test_modulated_requires_mask():
    args = _args()
    with pytest.raises(TypeError, match="^modulated_deform_conv2d: mask is required"):
        modulated_deform_conv2d(args["x"], args["offset"], None, args["weight"])
    with pytest.raises(ValueError, match="^modulated_deform_conv2d: mask must have shape"):
        modulated_deform_conv2d(args["x"], args["offset"], args["offset"], args["weight"])


def test_huge_output_memory_error():
    """An output that cannot be allocated raises MemoryError naming the op (offsets are
    zero-stride views, so only the result would be huge)."""
    x = np.ones((1, 1, 1, 1), np.float32)
    off = np.broadcast_to(np.zeros((1, 1, 1, 1), np.float32), (1 << 20, 2, 1 << 20, 1 << 10))
    with pytest.raises(MemoryError, match="^deform_conv2d: "):
        deform_conv2d(np.broadcast_to(x, (1 << 20, 1, 1, 1)), off,
                      np.ones((1 << 10, 1, 1, 1), np.float32), padding=(0, 0, (1 << 20) - 1,
                                                                           (1 << 10) - 1))


# ------------------------------------------------------------- peers, when installed
@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_torchvision_when_installed(with_mask):
    torch = peer("torch")
    tvops = peer("torchvision.ops")
    arrs, kw = _case(24, 2, 6, 9, 8, 4, 3, 3, (2, 1), (1, 2, 1, 2), (1, 2), 2, 3,
                     mask=with_mask, dtype=np.float32)
    t = {k: (None if v is None else torch.from_numpy(v)) for k, v in arrs.items()}
    want = tvops.deform_conv2d(t["x"], t["offset"], t["weight"], t["bias"], (2, 1), (1, 2),
                               (1, 2), t["mask"]).numpy()
    np.testing.assert_allclose(_fast(arrs, kw), want, rtol=1e-4, atol=1e-4)
