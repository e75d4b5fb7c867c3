"""grid_sample against the ONNX node test data, torch.nn.functional.grid_sample,
ONNX Runtime, onnx.reference (except its known bugs, which are asserted to still exist)
and a float64 reference written from the specs (tests/reference/grid_sample.py)."""
import itertools

import numpy as np
import pytest

import fastops
from fastops.sampling import grid_sample
from tests.conftest import GPU, peer, to_numpy
from tests.onnx_cases import case_names, load_case, run_reference
from tests.reference.grid_sample import grid_sample_ref

MODES = ("bilinear", "nearest", "bicubic")
PADS = ("zeros", "border", "reflection")
ONNX_MODE = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
# every (mode, padding, align_corners) of 4-D inputs; 5-D has no bicubic
COMBOS_4D = list(itertools.product(MODES, PADS, (False, True)))
COMBOS_5D = list(itertools.product(("bilinear", "nearest"), PADS, (False, True)))

# (x shape, grid shape): odd sizes, size-1 axes, batch > 1, up- and down-sampling
SHAPES_4D = [((2, 3, 7, 9), (2, 5, 6, 2)), ((1, 2, 1, 5), (1, 4, 3, 2)),
             ((1, 2, 6, 1), (1, 3, 4, 2)), ((1, 1, 1, 1), (1, 2, 3, 2)),
             ((3, 4, 12, 5), (3, 9, 13, 2))]
SHAPES_5D = [((2, 3, 4, 5, 6), (2, 3, 4, 5, 3)), ((1, 2, 1, 3, 1), (1, 2, 2, 3, 3)),
             ((1, 2, 3, 1, 4), (1, 3, 2, 2, 3))]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _inputs(rng, xshape, gshape, dtype=np.float32, lim=1.3):
    x = rng.standard_normal(xshape).astype(dtype)
    g = rng.uniform(-lim, lim, gshape).astype(dtype)
    return x, g


def _torch(x, g, mode, pad, ac):
    torch = peer("torch")
    return torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode=mode,
                                           padding_mode=pad, align_corners=ac).numpy()


def _tol(x):
    """float32 tolerance against torch: a few ulp of the largest pixel coordinate, times
    the largest pixel difference (bicubic can amplify it up to ~1.5x)."""
    size = max(x.shape[2:]) + 1
    return 8 * np.finfo(np.float32).eps * size * 2 * float(np.abs(x).max()) + 1e-7


# ------------------------------------------------------------------ ONNX node tests
@pytest.mark.parametrize("name", case_names("test_gridsample"))
def test_onnx_node_data(name):
    node, attrs, (x, grid), (want,) = load_case(name)
    got = grid_sample(x, grid, attrs.get("mode", "linear"), attrs.get("padding_mode", "zeros"),
                      attrs.get("align_corners", 0))
    assert got.dtype == want.dtype and got.shape == want.shape
    # some expected outputs are stored rounded to 4 decimals
    np.testing.assert_allclose(got, want, rtol=0, atol=6e-5)


def test_all_node_tests_found():
    assert len(case_names("test_gridsample")) == 18


# ------------------------------------------------------------------ torch
@pytest.mark.parametrize("mode, pad, ac", COMBOS_4D)
@pytest.mark.parametrize("lim", [1.0, 1.3])        # in range / out of range
def test_torch_4d_float32(mode, pad, ac, lim):
    rng = _rng(1)
    for xs, gs in SHAPES_4D:
        x, g = _inputs(rng, xs, gs, lim=lim)
        want = _torch(x, g, mode, pad, ac)
        got = grid_sample(x, g, mode, pad, ac)
        assert got.dtype == np.float32 and got.shape == want.shape
        if mode == "nearest":
            np.testing.assert_array_equal(got, want)
        else:
            # torch's AVX2 kernel contracts some products into FMAs; the same
            # operations otherwise (see test_float32_as_accurate_as_torch)
            np.testing.assert_allclose(got, want, rtol=0, atol=_tol(x))


@pytest.mark.parametrize("mode, pad, ac", COMBOS_4D)
def test_torch_4d_float64(mode, pad, ac):
    rng = _rng(2)
    for xs, gs in SHAPES_4D:
        x, g = _inputs(rng, xs, gs, np.float64)
        np.testing.assert_allclose(grid_sample(x, g, mode, pad, ac), _torch(x, g, mode, pad, ac),
                                   rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("C", range(1, 10))
def test_torch_every_channel_block(C):
    """Channels go in passes of up to 4 (C % 4 leftovers in one pass), planned and applied
    window by window when C <= 4: every channel count gives torch's result, and each
    channel equals that channel sampled alone.  1073 output points: several windows."""
    rng = _rng(40 + C)
    x, g = _inputs(rng, (2, C, 30, 41), (2, 37, 29, 2), np.float64, lim=1.2)
    for mode, pad, ac in COMBOS_4D:
        got = grid_sample(x, g, mode, pad, ac)
        # (torch's AVX2 build contracts some float64 products into FMAs: a few ulp)
        np.testing.assert_allclose(got, _torch(x, g, mode, pad, ac), rtol=0, atol=1e-12)
        for c in range(C):
            np.testing.assert_array_equal(got[:, c], grid_sample(x[:, c:c + 1], g, mode, pad,
                                                                 ac)[:, 0])


@pytest.mark.parametrize("mode, pad, ac", COMBOS_5D)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_torch_5d(mode, pad, ac, dtype):
    """5-D follows torch's scalar 3-D kernel operation for operation: equal."""
    rng = _rng(3)
    for xs, gs in SHAPES_5D:
        x, g = _inputs(rng, xs, gs, dtype)
        np.testing.assert_array_equal(grid_sample(x, g, mode, pad, ac),
                                      _torch(x, g, mode, pad, ac))


def test_float32_as_accurate_as_torch():
    """float32 results differ from torch only where its AVX2 build contracts products
    into FMAs: both are as far from the exact result (float64 on the same float32 inputs),
    an error of a few ulp of the pixel coordinates times the image's gradients."""
    rng = _rng(4)
    x, g = _inputs(rng, (2, 4, 50, 60), (2, 40, 70, 2), lim=1.2)
    for mode, pad, ac in COMBOS_4D:
        got = grid_sample(x, g, mode, pad, ac).astype(np.float64)
        want = _torch(x, g, mode, pad, ac).astype(np.float64)
        exact = grid_sample(x.astype(np.float64), g.astype(np.float64), mode, pad, ac)
        err, err_torch = np.abs(got - exact).max(), np.abs(want - exact).max()
        assert err <= 1.25 * err_torch + 1e-7, (mode, pad, ac, err, err_torch)
        assert np.abs(got - want).max() <= _tol(x), (mode, pad, ac)


def test_torch_non_contiguous():
    rng = _rng(5)
    base = rng.standard_normal((2, 10, 8, 14)).astype(np.float32)
    x = base.transpose(0, 3, 2, 1)[:, ::-2, 1:, ::2]           # (2, 7, 7, 5), odd strides
    graw = rng.uniform(-1.2, 1.2, (2, 3, 6, 8)).astype(np.float32)
    g = graw.transpose(0, 2, 3, 1)[:, ::-1, ::2, 1::-1]          # (2, 6, 4, 2), reversed xy
    for mode, pad, ac in COMBOS_4D:
        got = grid_sample(x, g, mode, pad, ac)
        same = grid_sample(np.ascontiguousarray(x), np.ascontiguousarray(g), mode, pad, ac)
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, _torch(np.ascontiguousarray(x), np.ascontiguousarray(g),
                                               mode, pad, ac), rtol=0, atol=_tol(x))


def test_torch_nan_inf_grid_4d():
    """Non-finite coordinates: torch's 4-D behaviour (documented), never out of bounds."""
    rng = _rng(6)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    vals = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, 1e8, -1e8]
    g = np.zeros((1, 2, 2 * len(vals), 2), np.float32) + 0.1
    for i, v in enumerate(vals):
        g[0, 0, 2 * i, 0] = v          # x coordinate
        g[0, 0, 2 * i + 1, 1] = v      # y coordinate
        g[0, 1, 2 * i] = v             # both
    for mode, pad, ac in COMBOS_4D:
        got = grid_sample(x, g, mode, pad, ac)
        want = _torch(x, g, mode, pad, ac)
        np.testing.assert_allclose(got, want, rtol=0, atol=_tol(x), equal_nan=True,
                                   err_msg=f"{mode} {pad} {ac}")


def test_nan_grid_rules_5d():
    """5-D uses the same non-finite rule as 4-D (torch's 3-D kernel differs, documented):
    zeros -> NaN (linear) / 0 (nearest); border/reflection move NaN to index 0."""
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float64).reshape(1, 2, 3, 4, 4) + 1
    g = np.array([np.nan, 0.0, 0.0])[None, None, None, None]
    assert np.isnan(grid_sample(x, g, "bilinear", "zeros")).all()
    assert (grid_sample(x, g, "nearest", "zeros") == 0).all()
    for pad in ("border", "reflection"):
        for mode in ("bilinear", "nearest"):
            for ac in (False, True):
                # W = 4: g = -1 (align_corners) or -0.75 is exactly the coordinate 0
                g0 = np.array([-1.0 if ac else -0.75, 0.0, 0.0])[None, None, None, None]
                np.testing.assert_array_equal(grid_sample(x, g, mode, pad, ac),
                                              grid_sample(x, g0, mode, pad, ac))
    # the 4-D rule on the same data
    x4, g4 = x[:, :, 0], g[..., 0, :2]
    assert np.isnan(grid_sample(x4, g4, "bilinear", "zeros")).all()
    assert (grid_sample(x4, g4, "nearest", "zeros") == 0).all()


# ------------------------------------------------------------------ ONNX Runtime
def _ort(x, g, mode, pad, ac, opset=20):
    ort = peer("onnxruntime")
    from onnx import helper
    tt = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], mode=mode, padding_mode=pad,
                            align_corners=int(ac))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", tt, None),
                                            helper.make_tensor_value_info("G", tt, None)],
                              [helper.make_tensor_value_info("Y", tt, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x, "G": g})[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_onnxruntime(dtype):
    rng = _rng(7)
    for (xs, gs), (mode, pad, ac) in itertools.product(SHAPES_4D[:3], COMBOS_4D):
        x, g = _inputs(rng, xs, gs, dtype)
        want = _ort(x, g, ONNX_MODE[mode], pad, ac)
        np.testing.assert_allclose(grid_sample(x, g, ONNX_MODE[mode], pad, ac), want,
                                   rtol=0, atol=_tol(x), err_msg=f"{xs} {mode} {pad} {ac}")
    for (xs, gs), (mode, pad, ac) in itertools.product(SHAPES_5D, COMBOS_5D):
        x, g = _inputs(rng, xs, gs, dtype)
        want = _ort(x, g, ONNX_MODE[mode], pad, ac)
        np.testing.assert_allclose(grid_sample(x, g, mode, pad, ac), want, rtol=0,
                                   atol=_tol(x), err_msg=f"{xs} {mode} {pad} {ac}")


def test_onnxruntime_opset16_names():
    rng = _rng(8)
    x, g = _inputs(rng, (1, 2, 5, 6), (1, 4, 4, 2))
    for mode in ("bilinear", "nearest", "bicubic"):
        np.testing.assert_allclose(grid_sample(x, g, mode, "border", True),
                                   _ort(x, g, mode, "border", True, opset=16),
                                   rtol=0, atol=_tol(x))


# ------------------------------------------------------------------ onnx.reference
def _reference_bug(mode, pad, ac, shape):
    """onnx.reference 1.22's known bugs: cubic + border clamps the wrong coordinate;
    reflection with align_corners on a size-1 axis divides by zero (OverflowError)."""
    if mode == "bicubic" and pad == "border":
        return True
    return pad == "reflection" and ac and mode != "nearest" and min(shape[2:]) == 1


@pytest.mark.parametrize("mode, pad, ac", COMBOS_4D)
def test_onnx_reference_4d(mode, pad, ac):
    rng = _rng(9)
    for xs, gs in SHAPES_4D[:3]:
        x, g = _inputs(rng, xs, gs)
        if _reference_bug(mode, pad, ac, xs):
            continue
        want = run_reference("GridSample", [x, g], dict(mode=ONNX_MODE[mode], padding_mode=pad,
                                                         align_corners=int(ac)), 20)[0]
        np.testing.assert_allclose(grid_sample(x, g, mode, pad, ac), want, rtol=0, atol=_tol(x))


@pytest.mark.parametrize("mode, pad, ac", COMBOS_5D)
def test_onnx_reference_5d(mode, pad, ac):
    rng = _rng(9)
    for xs, gs in SHAPES_5D:
        x, g = _inputs(rng, xs, gs)
        if _reference_bug(mode, pad, ac, xs):
            continue
        want = run_reference("GridSample", [x, g], dict(mode=ONNX_MODE[mode], padding_mode=pad,
                                                         align_corners=int(ac)), 20)[0]
        np.testing.assert_allclose(grid_sample(x, g, mode, pad, ac), want, rtol=0, atol=_tol(x))


def test_onnx_reference_known_bugs_still_exist():
    """If these start failing, onnx.reference was fixed: compare with it there too."""
    rng = _rng(10)
    x, g = _inputs(rng, (1, 2, 5, 7), (1, 4, 6, 2))
    for ac in (0, 1):
        ref = run_reference("GridSample", [x, g], dict(mode="cubic", padding_mode="border",
                                                       align_corners=ac), 20)[0]
        ours = grid_sample(x, g, "cubic", "border", ac)
        assert np.abs(ref - ours).max() > 1e-3
        np.testing.assert_allclose(ours, _torch(x, g, "bicubic", "border", bool(ac)),
                                   rtol=0, atol=_tol(x))
    x1, g1 = _inputs(rng, (1, 1, 1, 4), (1, 2, 3, 2))
    with pytest.raises(OverflowError), np.errstate(divide="ignore"):
        run_reference("GridSample", [x1, g1], dict(mode="linear", padding_mode="reflection",
                                                   align_corners=1), 20)
    # fastops: a size-1 axis with reflection + align_corners samples index 0
    got = grid_sample(x1, g1, "bilinear", "reflection", True)
    np.testing.assert_allclose(got, _torch(x1, g1, "bilinear", "reflection", True),
                               rtol=0, atol=_tol(x1))


# ------------------------------------------------------------------ float64 reference
@pytest.mark.parametrize("mode, pad, ac", COMBOS_4D)
def test_reference_4d(xp, mode, pad, ac):
    rng = _rng(11)
    for xs, gs in SHAPES_4D[:4]:
        x, g = _inputs(rng, xs, gs, np.float64, lim=1.6)
        got = grid_sample(xp.asarray(x), xp.asarray(g), mode, pad, ac)
        np.testing.assert_allclose(to_numpy(got), grid_sample_ref(x, g, mode, pad, ac),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode, pad, ac", COMBOS_5D)
def test_reference_5d(xp, mode, pad, ac):
    rng = _rng(12)
    for xs, gs in SHAPES_5D:
        x, g = _inputs(rng, xs, gs, np.float64, lim=1.6)
        got = grid_sample(xp.asarray(x), xp.asarray(g), mode, pad, ac)
        np.testing.assert_allclose(to_numpy(got), grid_sample_ref(x, g, mode, pad, ac),
                                   rtol=1e-12, atol=1e-12)


def test_reference_far_out_of_range():
    """Coordinates many periods away (reflection), far outside (zeros/border)."""
    rng = _rng(13)
    x = rng.standard_normal((1, 2, 4, 5))
    g = rng.uniform(-40, 40, (1, 6, 7, 2))
    for mode, pad, ac in COMBOS_4D:
        np.testing.assert_allclose(grid_sample(x, g, mode, pad, ac),
                                   grid_sample_ref(x, g, mode, pad, ac), rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------ hand-checked
def test_hand_nearest_ties_round_half_even():
    # align_corners=True, W = 5: x = (g + 1) * 2, so g = -0.75 -> 0.5 -> 0, g = -0.25 ->
    # 1.5 -> 2, g = 0.25 -> 2.5 -> 2, g = 0.75 -> 3.5 -> 4
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5) * 10
    g = np.array([[-0.75, 0], [-0.25, 0], [0.25, 0], [0.75, 0]], np.float32)[None, None]
    got = grid_sample(x, g, "nearest", "zeros", True)
    np.testing.assert_array_equal(got[0, 0, 0], [0, 20, 20, 40])


def test_hand_bilinear_and_padding():
    x = np.array([[1.0, 2.0, 4.0]])[None, None]            # (1, 1, 1, 3)
    # align_corners=False, W=3: x = (3g + 2) / 2; g = 0 -> 1 (pixel 2.0)
    # g = 1/3 -> 1.5 -> 3.0; g = 1 -> 2.5: zeros -> 0.5 * 4 = 2, border -> 4,
    # reflection -> reflect 2.5 about 2.5 -> 2.5 -> clip 2 -> 4
    g = np.array([[0.0, 0.0], [1 / 3, 0.0], [1.0, 0.0]])[None, None]
    np.testing.assert_allclose(grid_sample(x, g, "bilinear", "zeros")[0, 0, 0], [2, 3, 2])
    np.testing.assert_allclose(grid_sample(x, g, "bilinear", "border")[0, 0, 0], [2, 3, 4])
    np.testing.assert_allclose(grid_sample(x, g, "bilinear", "reflection")[0, 0, 0], [2, 3, 4])
    # g = -1.5 -> x = -1.25: zeros -> 0; reflection about -0.5 -> 0.25 -> 1.25
    g = np.array([[-1.5, 0.0]])[None, None]
    assert grid_sample(x, g, "bilinear", "zeros")[0, 0, 0, 0] == 0
    np.testing.assert_allclose(grid_sample(x, g, "bilinear", "reflection")[0, 0, 0, 0], 1.25)


def test_hand_bicubic_border_repeats_edge():
    # constant image: every bicubic sample with border/reflection padding is that constant
    # (the Keys weights sum to 1); with zeros padding samples near the edge are not
    x = np.full((1, 1, 4, 4), 3.0)
    g = np.array([[-1.0, -1.0], [0.9, -0.95], [0.1, 0.2]])[None, None]
    for pad in ("border", "reflection"):
        np.testing.assert_allclose(grid_sample(x, g, "bicubic", pad)[0, 0, 0], 3.0, rtol=1e-14)
    assert grid_sample(x, g, "bicubic", "zeros")[0, 0, 0, 0] != 3.0


def test_outside_tap_is_exactly_zero_next_to_inf():
    """A tap outside the image contributes 0, not 0 * pixel (torch's masked gather): an
    outside tap reads a safe element, here an infinite one, and must still give 0."""
    x = np.ones((1, 1, 3, 3), np.float32)
    x[0, 0, :, 0] = np.inf                       # column 0: where outside x taps point
    # x coordinates -3 and -2.6 (align_corners): every bilinear/nearest/bicubic tap outside
    g = np.array([[-4.0, 0.0], [-3.6, 0.3]], np.float32)[None, None]
    for mode, pad, ac in COMBOS_4D:
        if pad == "zeros":
            got = grid_sample(x, g, mode, pad, True)
            np.testing.assert_array_equal(got, 0.0)
            np.testing.assert_array_equal(got, _torch(x, g, mode, pad, True))
    # on the last pixel with every padding: the taps past the edge are masked
    x2 = np.ones((1, 1, 3, 3), np.float32)
    x2[0, 0, 2, 2] = np.inf
    g2 = np.array([[1.0, 1.0]], np.float32)[None, None]
    for pad in PADS:
        got = grid_sample(x2, g2, "bilinear", pad, True)
        np.testing.assert_array_equal(got, _torch(x2, g2, "bilinear", pad, True))
        assert got[0, 0, 0, 0] == np.inf


# ------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "int32", "uint32",
                                   "int64", "uint64"])
def test_integer_inputs(xp, dtype):
    """Computed in float, rounded half away from zero and saturated (API rule)."""
    rng = _rng(14)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    x = rng.integers(lo, hi, (2, 3, 6, 7), endpoint=True).astype(dtype)
    g = rng.uniform(-1.2, 1.2, (2, 4, 5, 2)).astype(np.float32)
    for mode, pad, ac in COMBOS_4D[::3]:
        got = to_numpy(grid_sample(xp.asarray(x), xp.asarray(g), mode, pad, ac))
        assert got.dtype == dtype
        ct = np.float32 if info.bits <= 16 else np.float64
        want = grid_sample_ref(x, g.astype(ct), mode, pad, ac, out_dtype=dtype)
        # the compute dtype may round a value within 1e-5 of a .5 tie either way
        assert np.abs(got.astype(np.float64) - want.astype(np.float64)).max() <= 1


def test_integer_saturation_and_exact_ties():
    # bicubic over- and undershoots next to a spike / a dip
    x = np.array([[0, 0, 255, 0, 0], [255, 255, 0, 255, 255]], np.uint8).reshape(1, 1, 2, 5)
    xs = np.linspace(-1, 1, 21)
    g = np.stack([np.stack([xs, np.full_like(xs, r)], -1) for r in (-1.0, 1.0)])[None]
    g = g.astype(np.float32)
    ref = grid_sample_ref(x, g, "bicubic", "border", True)
    assert ref.min() < -20 and ref.max() > 275
    got = grid_sample(x, g, "bicubic", "border", True)
    assert got.dtype == np.uint8 and got.min() == 0 and got.max() == 255
    assert np.abs(got.astype(float) - np.clip(np.round(ref), 0, 255)).max() <= 1
    # exact half values round away from zero: (1 + 2) / 2 = 1.5 -> 2, -1.5 -> -2
    xi = np.array([1, 2, -1, -2], np.int32).reshape(1, 1, 2, 2)
    gi = np.array([[0.0, -1.0], [0.0, 1.0]], np.float32)[None, None]   # midpoints of rows
    np.testing.assert_array_equal(grid_sample(xi, gi, "bilinear", "zeros", True)[0, 0, 0],
                                  [2, -2])
    # int64 near the top of its range saturates instead of wrapping
    big = np.full((1, 1, 2, 2), np.iinfo(np.int64).max, np.int64)
    assert grid_sample(big, gi, "bilinear", "zeros", True)[0, 0, 0, 0] == np.iinfo(np.int64).max
    # NaN (a NaN coordinate with zeros padding) becomes 0
    gn = np.array([[np.nan, 0.0]], np.float32)[None, None]
    assert grid_sample(xi, gn, "bilinear", "zeros")[0, 0, 0, 0] == 0


@pytest.mark.parametrize("gdtype", [np.float16, np.float32, np.float64])
def test_float16_and_grid_dtypes(xp, gdtype):
    rng = _rng(15)
    x = rng.standard_normal((1, 3, 6, 5)).astype(np.float16)
    g = rng.uniform(-1.1, 1.1, (1, 4, 4, 2)).astype(gdtype)
    got = grid_sample(xp.asarray(x), xp.asarray(g), "bicubic", "reflection")
    assert got.dtype == np.float16
    want = grid_sample(x.astype(np.float32), g.astype(np.float32), "bicubic", "reflection")
    np.testing.assert_array_equal(to_numpy(got), want.astype(np.float16))   # rounded once
    x64 = x.astype(np.float64)
    got64 = grid_sample(xp.asarray(x64), xp.asarray(g), "bilinear")
    np.testing.assert_allclose(to_numpy(got64), grid_sample_ref(x64, g.astype(np.float64)),
                               rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ names and attributes
def test_mode_names():
    rng = _rng(16)
    x, g = _inputs(rng, (1, 2, 4, 5), (1, 3, 3, 2))
    for a, b, code in (("bilinear", "linear", 0), ("nearest", "NEAREST", 1),
                       ("bicubic", "cubic", 2)):
        ref = grid_sample(x, g, a)
        np.testing.assert_array_equal(grid_sample(x, g, b), ref)
        np.testing.assert_array_equal(grid_sample(x, g, code), ref)     # MMCV codes
    np.testing.assert_array_equal(grid_sample(x, g, padding_mode=2),
                                  grid_sample(x, g, padding_mode="reflection"))
    np.testing.assert_array_equal(grid_sample(x, g, align_corners=1),
                                  grid_sample(x, g, align_corners=True))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(mode="area"), ValueError, "mode='area' is not supported; expected one of 'bilinear'"),
    (dict(mode=3), ValueError, "mode=3 is not supported"),
    (dict(mode=True), ValueError, "mode=True"),
    (dict(mode=None), ValueError, "mode=None"),
    (dict(padding_mode="constant"), ValueError, "padding_mode='constant'.*'zeros', 'border'"),
    (dict(align_corners=2), TypeError, "align_corners must be a bool"),
    (dict(x=np.ones((1, 1, 4), np.float32)), ValueError, "x must be 4-D .* or 5-D"),
    (dict(x=np.ones((1, 1, 2, 2, 2, 2), np.float32)), ValueError, "x must be 4-D"),
    (dict(grid=np.zeros((1, 3, 3, 3), np.float32)), ValueError,
     r"grid must have shape \(N, Ho, Wo, 2\) for a 4-D x"),
    (dict(grid=np.zeros((1, 3, 2), np.float32)), ValueError, "grid must have shape"),
    (dict(grid=np.zeros((2, 3, 3, 2), np.float32)), ValueError,
     r"grid.shape\[0\]=2 does not match x.shape\[0\]=1"),
    (dict(x=np.ones((1, 1, 2, 2, 2), np.float32), grid=np.zeros((1, 2, 2, 2, 2), np.float32)),
     ValueError, r"\(N, Do, Ho, Wo, 3\)"),
    (dict(x=np.ones((1, 1, 2, 2, 2), np.float32), grid=np.zeros((1, 2, 2, 2, 3), np.float32),
          mode="cubic"), ValueError, "bicubic\\) supports 4-D x only"),
    (dict(x=np.ones((1, 1, 4, 4), bool)), TypeError, "x has dtype bool"),
    (dict(x=np.ones((1, 1, 4, 4), np.complex64)), TypeError, "x has dtype complex64"),
    (dict(grid=np.zeros((1, 3, 3, 2), np.int32)), TypeError, "grid has dtype int32"),
    (dict(x=np.ones((1, 1, 0, 4), np.float32), padding_mode="border"), ValueError,
     "empty spatial axis; padding_mode='border'"),
])
def test_bad_input(kwargs, exc, match):
    args = dict(x=np.ones((1, 1, 4, 4), np.float32), grid=np.zeros((1, 3, 3, 2), np.float32))
    args.update(kwargs)
    with pytest.raises(exc, match=match) as info:
        grid_sample(**args)
    assert str(info.value).startswith("grid_sample: ")


# ------------------------------------------------------------------ hostile layouts
def test_empty_axes(xp):
    for xs, gs in [((0, 2, 4, 4), (0, 3, 3, 2)), ((2, 0, 4, 4), (2, 3, 3, 2)),
                   ((2, 3, 4, 4), (2, 0, 3, 2)), ((2, 3, 4, 4), (2, 3, 0, 2)),
                   ((1, 2, 3, 4, 5), (1, 0, 2, 2, 3))]:
        got = grid_sample(xp.zeros(xs, np.float32), xp.zeros(gs, np.float32))
        assert got.shape == xs[:2] + gs[1:-1] and got.dtype == np.float32
    # an empty image with zeros padding: every sample is outside
    got = grid_sample(xp.zeros((1, 2, 0, 4), np.float32), xp.zeros((1, 3, 3, 2), np.float32),
                      "bicubic")
    assert got.shape == (1, 2, 3, 3) and not to_numpy(got).any()


def test_huge_output_is_a_clean_memory_error():
    x = np.broadcast_to(np.ones((1, 1, 2, 2), np.float32), (1, 2 ** 40, 2, 2))
    g = np.broadcast_to(np.zeros((1, 1, 1, 2), np.float32), (1, 2 ** 20, 2 ** 20, 2))
    with pytest.raises(MemoryError, match="grid_sample: "):
        grid_sample(x, g)
    x = np.broadcast_to(np.ones((1, 1, 2, 2), np.float32), (1, 2 ** 20, 2, 2))
    g = np.broadcast_to(np.zeros((1, 1, 1, 2), np.float32), (1, 2 ** 12, 2 ** 12, 2))
    with pytest.raises(MemoryError, match="grid_sample: "):      # 2**46 bytes
        grid_sample(x, g)


def test_zero_stride_readonly_big_endian():
    rng = _rng(17)
    x = rng.standard_normal((1, 1, 5, 6)).astype(np.float32)
    xb = np.broadcast_to(x, (3, 4, 5, 6))                          # zero strides
    g = rng.uniform(-1.2, 1.2, (1, 1, 3, 2)).astype(np.float32)
    gb = np.broadcast_to(g, (3, 4, 3, 2))
    want = grid_sample(np.ascontiguousarray(xb), np.ascontiguousarray(gb), "bicubic")
    np.testing.assert_array_equal(grid_sample(xb, gb, "bicubic"), want)
    xr = np.ascontiguousarray(xb)
    xr.flags.writeable = False
    np.testing.assert_array_equal(grid_sample(xr, gb, "bicubic"), want)
    got = grid_sample(xr.astype(">f4"), np.ascontiguousarray(gb).astype(">f8"), "bicubic")
    assert got.dtype == np.float32 and got.dtype.isnative
    np.testing.assert_array_equal(got, want)
    # zero and negative strides along the sampled axes themselves
    col = rng.standard_normal((1, 2, 5, 1)).astype(np.float32)
    for xv in (np.broadcast_to(col, (1, 2, 5, 6)), x[:, :, ::-1, ::-1],
               np.broadcast_to(x[:, :, :1], (1, 1, 5, 6))):
        gv = gb[:1]
        for mode, pad, ac in COMBOS_4D:
            np.testing.assert_array_equal(grid_sample(xv, gv, mode, pad, ac),
                                          grid_sample(np.ascontiguousarray(xv), gv, mode, pad,
                                                      ac))
    xi = rng.integers(0, 255, (2, 2, 4, 4)).astype(">u2")
    np.testing.assert_array_equal(grid_sample(xi, gb[:2, :2]),
                                  grid_sample(xi.astype(np.uint16), gb[:2, :2]))


def test_inputs_not_modified():
    rng = _rng(18)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float16)
    g = rng.uniform(-1.3, 1.3, (2, 4, 4, 2)).astype(np.float64)
    g[0, 0, 0] = np.nan
    x0, g0 = x.copy(), g.copy()
    for mode in MODES:
        grid_sample(x, g, mode, "reflection")
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(g, g0)


def test_threads_bit_identical(threads):
    rng = _rng(19)
    x, g = _inputs(rng, (2, 9, 40, 50), (2, 70, 80, 2), lim=1.2)       # C = 9: partial block
    x5, g5 = _inputs(rng, (1, 5, 12, 14, 16), (1, 10, 30, 40, 3))
    xi = (x * 40).astype(np.int16)
    outs = []
    for n in (1, 2, 3):
        with threads(n):
            outs.append([grid_sample(x, g, m, p, a) for m, p, a in COMBOS_4D] +
                        [grid_sample(x5, g5, m, p, a) for m, p, a in COMBOS_5D] +
                        [grid_sample(xi, g, m, "zeros") for m in MODES])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)


def test_large_image_many_chunks(threads):
    """More output points than one plan holds (several chunks per image)."""
    rng = _rng(20)
    x, g = _inputs(rng, (1, 2, 50, 60), (1, 300, 400, 2), lim=1.05)
    with threads(2):
        for mode in MODES:
            got = grid_sample(x, g, mode)
            np.testing.assert_allclose(got, _torch(x, g, mode, "zeros", False), rtol=0,
                                       atol=_tol(x))


def test_lists_and_torch_tensors():
    x = [[[[1.0, 2.0], [3.0, 4.0]]]]
    g = [[[[0.0, 0.0]]]]
    got = grid_sample(x, g)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got[0, 0, 0, 0] == 2.5
    torch = peer("torch")
    t = grid_sample(torch.tensor(x, dtype=torch.float32), torch.tensor(g, dtype=torch.float32))
    assert isinstance(t, torch.Tensor) and float(t[0, 0, 0, 0]) == 2.5


# ------------------------------------------------------------------ real GPU
@GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.uint8, np.int32])
def test_gpu_equals_cpu(dtype):
    """Same arithmetic with round-to-nearest intrinsics, no flush-to-zero: equal."""
    import cupy
    rng = _rng(21)
    x = (rng.standard_normal((2, 5, 17, 23)) * 60).astype(dtype)
    g = rng.uniform(-1.2, 1.2, (2, 9, 11, 2)).astype(np.float32)
    g[0, 0, :3, 0] = [np.nan, np.inf, -np.inf]
    x5 = (rng.standard_normal((2, 3, 5, 6, 7)) * 60).astype(dtype)
    g5 = rng.uniform(-1.2, 1.2, (2, 3, 4, 5, 3)).astype(np.float32)
    for mode, pad, ac in COMBOS_4D:
        got = grid_sample(cupy.asarray(x), cupy.asarray(g), mode, pad, ac)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(got.get(), grid_sample(x, g, mode, pad, ac))
    for mode, pad, ac in COMBOS_5D:
        got = grid_sample(cupy.asarray(x5), cupy.asarray(g5), mode, pad, ac)
        np.testing.assert_array_equal(got.get(), grid_sample(x5, g5, mode, pad, ac))


def test_mixed_devices_rejected():
    cupy = peer("cupy")
    if not fastops.backends()["gpu"]:
        pytest.skip("needs a CUDA device")
    with pytest.raises(TypeError, match="grid"):
        grid_sample(cupy.ones((1, 1, 4, 4), np.float32), np.zeros((1, 2, 2, 2), np.float32))
