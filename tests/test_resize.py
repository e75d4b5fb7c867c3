"""resize against the ONNX node test data, onnx.reference, a float64 reference written from
the spec (tests/reference/resize.py), ONNX Runtime (its known differences asserted) and
torch.nn.functional.interpolate; hostile input; thread-count and SIMD-path invariance."""
import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from fastops.resample import resize
from tests.conftest import peer, to_numpy
from tests.onnx_cases import case_names, load_case, run_reference
from tests.reference.resize import resize_ref, round_half_away

CTMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_crop_and_resize"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
INTS = ["uint8", "int8", "int32", "int64"]
DTYPES = INTS + ["float16", "float32", "float64"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _data(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 50).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -(1 << 40)), min(info.max, 1 << 40)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def _compare_int(got, want64, dtype, compute=np.float32):
    """got (integer dtype) against the float64 value rounded half away from zero: equal,
    except by 1 where the float64 value is within the compute type's rounding of a tie."""
    want = round_half_away(want64, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    frac = np.abs(np.abs(want64 - np.trunc(want64)) - 0.5)
    tol = 1e-4 if compute == np.float32 else 1e-9
    near_tie = frac <= tol * np.maximum(1.0, np.abs(want64))
    bad = (diff > 0) & ~(near_tie & (diff <= 1))
    assert not bad.any(), f"{bad.sum()} values differ, e.g. got {got[bad][:5]} want {want[bad][:5]}"


# ------------------------------------------------------------------ ONNX node data
def _node_call(name):
    """Map one backend node test to a resize call: attributes as keywords, the inputs
    by position (X, roi, scales, sizes); an opset-10 model has (X, scales) only and the
    opset-10 rule (asymmetric; nearest floors upscaled axes and ceils downscaled ones)."""
    node, attrs, inputs, outputs = load_case(name)
    names = list(node.input)
    given = dict(zip([n for n in names if n], inputs))
    x = inputs[0]
    import onnx
    from tests.onnx_cases import node_dir
    model = onnx.load(os.path.join(node_dir(), name, "model.onnx"))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 11:
        return x, _opset10_call(x, given[names[1]], attrs.get("mode", "nearest")), outputs[0]

    def pos(i):
        return given.get(names[i]) if len(names) > i and names[i] else None
    return x, lambda: resize(x, pos(2), pos(3), roi=pos(1), **attrs), outputs[0]


def _opset10_call(x, scales, mode):
    """Resize-10: asymmetric coordinates; nearest floors on upscaled axes and ceils on
    downscaled ones (ONNX Runtime's rule and the opset-10 test data).  A nearest model
    that does both is two exact calls (nearest is a gather, separable)."""
    scales = np.asarray(scales, np.float32)

    def call():
        if mode != "nearest":
            return resize(x, scales, mode=mode, coordinate_transformation_mode="asymmetric")
        up = [i for i, s in enumerate(scales) if s >= 1]
        down = [i for i, s in enumerate(scales) if s < 1]
        y = x
        for axes, nm in ((up, "floor"), (down, "ceil")):
            if axes:
                y = resize(y, scales[axes], axes=axes, mode="nearest",
                           coordinate_transformation_mode="asymmetric", nearest_mode=nm)
        return y
    return call


@pytest.mark.parametrize("name", case_names("test_resize"))
def test_onnx_node_data(name):
    x, call, want = _node_call(name)
    got = call()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_node_data_count():
    assert len(case_names("test_resize")) == 39


def _ort():
    return peer("onnxruntime")


def _resize_model(x, opset=19, scales=None, sizes=None, roi=None, **attrs):
    from onnx import TensorProto, helper
    tt = helper.np_dtype_to_tensor_dtype(x.dtype)
    inits, names = [], ["X"]
    if opset == 10:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
        names.append("scales")
    else:
        if opset < 13:      # roi and scales are required inputs there (empty if unused)
            roi = [] if roi is None else roi
            scales = [] if scales is None else scales
        for nm, val, t in (("roi", roi, TensorProto.FLOAT), ("scales", scales, TensorProto.FLOAT),
                           ("sizes", sizes, TensorProto.INT64)):
            if val is None:
                names.append("")
            else:
                inits.append(helper.make_tensor(nm, t, [len(val)], list(val)))
                names.append(nm)
        while names[-1] == "":
            names.pop()
    node = helper.make_node("Resize", names, ["Y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", tt, x.shape)],
                              [helper.make_tensor_value_info("Y", tt, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _run_ort(model, x):
    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})[0]


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opset10_models_against_onnxruntime(mode):
    """Opset-10 models (X, scales) mapped as _opset10_call does, checked with ORT on
    scales where float32 and float64 coordinates agree (powers of two)."""
    rng = _rng(1)
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    for scales in ([1, 1, 2.0, 0.5], [1, 1, 0.5, 4.0], [1, 1, 2.0, 2.0], [1, 1, 0.5, 0.5]):
        want = _run_ort(_resize_model(x, opset=10, scales=scales, mode=mode), x)
        got = _opset10_call(x, scales, mode)()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ onnx.reference
def _ref_onnx(x, scales=None, sizes=None, axes=None, roi=None, **attrs):
    ins = [x, None if roi is None else np.asarray(roi, np.float64),
           None if scales is None else np.asarray(scales, np.float32)]
    if sizes is not None:
        ins.append(np.asarray(sizes, np.int64))
    if axes is not None:
        attrs["axes"] = list(axes)
    return run_reference("Resize", ins, attrs, 19)[0]


def _geometry_ok(shape, axes, scales, sizes, ctm, mode):
    """False for the documented deviations from onnx.reference: length-1 outputs with
    pytorch_half_pixel (-0.5 there) and tf_crop_and_resize when scale * in is not
    exactly 1, and
    (nearest, or tf_crop_and_resize's range test) where the reference recomputes an
    output length from sizes as (out / in) * in and is off by an ulp."""
    for i, a in enumerate(axes):
        n = shape[a]
        if scales is not None:
            s = float(np.float32(scales[i]))
            out, width = math.floor(n * s), s * n
        else:
            out = int(sizes[i])
            width = out / n * n
            if width != out and (mode == "nearest" or ctm == "tf_crop_and_resize"
                                 or ctm == "half_pixel_symmetric"):
                return False
        if out == 1 and (ctm == "pytorch_half_pixel" or
                         (width != 1 and ctm == "tf_crop_and_resize")):
            return False
    return True


SHAPES = [((2, 3, 5, 7), (2, 3)), ((9,), (0,)), ((3, 4, 5), (0, 1)),
          ((2, 3, 4, 2, 5), (2, 3, 4)), ((4, 1, 3), (1, 2))]
FACTORS = [(0.45, 1.6), (2.0, 0.5), (0.7, 1.0), (1.0, 3.0), (0.3, 2.5)]


@pytest.mark.parametrize("shape,axes", SHAPES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_onnx_reference_float64(shape, axes, mode):
    """float64 in: equal to rounding (cubic: the reference evaluates its coefficients in
    float32, from the float32 cubic_coeff_a attribute)."""
    rng = _rng(2)
    x = rng.standard_normal(shape)
    k = len(axes)
    tol = 2e-5 if mode == "cubic" else 1e-12
    for ctm, aa, excl, (f0, f1) in itertools.product(CTMS, (0, 1), (0, 1), FACTORS):
        if mode == "nearest" and aa:
            continue
        fac = [(f0, f1)[i % 2] * (1 + 0.2 * i) for i in range(k)]
        roi = ([0.1 * (i + 1) for i in range(k)] + [0.95 - 0.1 * i for i in range(k)]
               if ctm == "tf_crop_and_resize" else None)
        for kind in ("scales", "sizes"):
            scales = fac if kind == "scales" else None
            sizes = [max(1, round(shape[a] * q)) for a, q in zip(axes, fac)] \
                if kind == "sizes" else None
            if not _geometry_ok(shape, axes, scales, sizes, ctm, mode):
                continue
            for nm in (NEAREST if mode == "nearest" else ["round_prefer_floor"]):
                attrs = dict(mode=mode, coordinate_transformation_mode=ctm, antialias=aa,
                             exclude_outside=excl, nearest_mode=nm, extrapolation_value=-2.5)
                want = _ref_onnx(x, scales, sizes, axes, roi, **attrs)
                got = resize(x, scales, sizes, axes=axes, roi=roi, **attrs)
                assert got.shape == want.shape, (attrs, kind)
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                           err_msg=f"{attrs} {kind} {fac}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_onnx_reference_dtypes(dtype, mode):
    """Every dtype: floats against the reference on the same dtype; integers against
    the reference's float64 value rounded half away from zero (the reference itself
    rounds half to even; fastops rounds half away from zero, API.md)."""
    rng = _rng(3)
    x = _data(rng, (2, 3, 6, 8), dtype)
    for ctm, aa, scales in itertools.product(["half_pixel", "align_corners", "asymmetric"],
                                             (0, 1), ([0.5, 2.0], [1.5, 0.6], [2.0, 2.0])):
        if mode == "nearest" and aa:
            continue
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm, antialias=aa)
        got = resize(x, scales, axes=(2, 3), **attrs)
        if np.dtype(dtype).kind == "f":
            want = _ref_onnx(x, scales, axes=(2, 3), **attrs)
            tol = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-12}[dtype]
            if mode == "cubic":     # the reference's float32 cubic coefficients
                tol = max(tol, 2e-5)
            assert got.dtype == x.dtype
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol * np.abs(x.astype(float)).max())
        elif mode == "nearest":   # a gather: exact, even for int64 beyond 2**53
            want = _ref_onnx(x, scales, axes=(2, 3), **attrs)
            idx = _ref_onnx(np.arange(x.size, dtype=np.float64).reshape(x.shape), scales,
                            axes=(2, 3), **attrs).astype(np.int64)
            np.testing.assert_array_equal(got, x.reshape(-1)[idx])
            if dtype != "int64":
                np.testing.assert_array_equal(got, want)
        else:
            want64 = _ref_onnx(x.astype(np.float64), scales, axes=(2, 3), **attrs)
            compute = np.float32 if dtype in ("uint8", "int8") else np.float64
            if mode == "cubic":     # the reference's float32 cubic coefficients
                info = np.iinfo(dtype)
                np.testing.assert_allclose(got.astype(np.float64),
                                           np.clip(want64, info.min, info.max), rtol=2e-5,
                                           atol=1.0 + 2e-6 * np.abs(x.astype(float)).max())
            elif dtype == "int64":    # computed in float64 (the reference too)
                np.testing.assert_allclose(got.astype(np.float64), want64, rtol=1e-12,
                                           atol=2.0)
            else:
                _compare_int(got, want64, dtype, compute)


# ------------------------------------------------------------------ float64 spec reference
ALL_CTMS = CTMS + ["tf_half_pixel_for_nn"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_spec_reference_integers(dtype, mode):
    """Integers: the float64 spec value rounded half away from zero and saturated (within
    one step where the compute type cannot resolve a near-tie)."""
    rng = _rng(17)
    x = _data(rng, (2, 7, 9), dtype)
    compute = np.float32 if dtype in ("uint8", "int8") else np.float64
    for ctm, aa, excl, scales in itertools.product(
            ["half_pixel", "align_corners", "pytorch_half_pixel"], (0, 1), (0, 1),
            ([0.5, 2.0], [1.6, 0.45], [3.0, 1.3])):
        kw = dict(mode=mode, coordinate_transformation_mode=ctm, antialias=aa,
                  exclude_outside=excl, axes=(1, 2), cubic_coeff_a=-0.5)
        got = resize(x, scales, **kw)
        want64 = resize_ref(x, scales, **kw)
        if dtype == "int64":
            np.testing.assert_allclose(got.astype(np.float64), want64, rtol=1e-12, atol=2.0)
        else:
            _compare_int(got, want64, dtype, compute)


@pytest.mark.parametrize("shape,axes", SHAPES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_spec_reference(shape, axes, mode):
    """Every mode, including the documented choices (length-1 outputs, exact output
    widths for sizes, tf_half_pixel_for_nn), to float64 rounding."""
    rng = _rng(4)
    x = rng.standard_normal(shape)
    k = len(axes)
    for ctm, aa, excl, (f0, f1) in itertools.product(ALL_CTMS, (0, 1), (0, 1), FACTORS):
        if mode == "nearest" and aa:
            continue
        fac = [(f0, f1)[i % 2] * (1 + 0.2 * i) for i in range(k)]
        roi = ([0.1 * (i + 1) for i in range(k)] + [1.05 - 0.2 * i for i in range(k)]
               if ctm == "tf_crop_and_resize" else None)
        for kind in ("scales", "sizes"):
            scales = fac if kind == "scales" else None
            sizes = [max(1, round(shape[a] * q)) for a, q in zip(axes, fac)] \
                if kind == "sizes" else None
            for nm in (NEAREST if mode == "nearest" else ["round_prefer_floor"]):
                kw = dict(mode=mode, coordinate_transformation_mode=ctm, antialias=aa,
                          exclude_outside=excl, nearest_mode=nm, axes=axes, roi=roi,
                          extrapolation_value=7.25, cubic_coeff_a=-0.6)
                want = resize_ref(x, scales, sizes, **kw)
                got = resize(x, scales, sizes, **kw)
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{kw} {kind}")


def test_length_one_outputs():
    """pytorch_half_pixel with one output samples coordinate 0 (the spec, ONNX Runtime;
    onnx.reference uses -0.5, onnx/onnx#4275); tf_crop_and_resize samples the roi's
    centre whenever the output has length 1 (the reference does only when scale * in is
    exactly 1)."""
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    got = resize(x, sizes=[3, 1], axes=(2, 3), mode="cubic",
                 coordinate_transformation_mode="pytorch_half_pixel")
    np.testing.assert_allclose(got, resize_ref(x, sizes=[3, 1], axes=(2, 3), mode="cubic",
                               coordinate_transformation_mode="pytorch_half_pixel"),
                               rtol=1e-6)
    want = _run_ort(_resize_model(x, sizes=[1, 1, 3, 1], mode="cubic",
                                  coordinate_transformation_mode="pytorch_half_pixel"), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ref = _ref_onnx(x, sizes=[1, 1, 3, 1], mode="cubic",
                    coordinate_transformation_mode="pytorch_half_pixel")
    assert np.abs(ref - got).max() > 0.05              # the reference's -0.5
    # scales 0.3 on 4 -> 1 output: ORT and fastops sample 0, the reference 1.17
    got = resize(x, [0.3], axes=[3], mode="linear",
                 coordinate_transformation_mode="pytorch_half_pixel")
    np.testing.assert_array_equal(got[..., 0], x[..., 0])
    roi = [0.2, 0.3, 0.7, 0.9]
    got = resize(x, [0.4, 0.4], axes=(2, 3), mode="linear", roi=roi,
                 coordinate_transformation_mode="tf_crop_and_resize")
    # centre of the roi on both axes: y = 0.45 * 3, x = 0.6 * 3
    np.testing.assert_allclose(got[0, 0, 0, 0], 1 + 4 * 1.35 + 1.8, rtol=1e-6)
    want = _run_ort(_resize_model(x, scales=[1, 1, 0.4, 0.4], roi=[0, 0, .2, .3, 1, 1, .7, .9],
                                  mode="linear",
                                  coordinate_transformation_mode="tf_crop_and_resize"), x)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sizes_use_exact_output_width():
    """For sizes, the output length is exact: with roi [0, 1] the last sample is the
    edge, never extrapolated (onnx.reference computes (1/49)*49 = 0.999... and
    (k/n)*n != k for some lengths)."""
    x = np.arange(49, dtype=np.float64)
    for n_out in range(2, 60):
        got = resize(x, sizes=[n_out], mode="linear", roi=[0.0, 1.0],
                     coordinate_transformation_mode="tf_crop_and_resize",
                     extrapolation_value=-1.0)
        assert got[-1] == 48.0 and got[0] == 0.0
    got = resize(x, sizes=[1], mode="linear", roi=[0.0, 1.0],
                 coordinate_transformation_mode="tf_crop_and_resize")
    assert got[0] == 24.0


def test_exclude_outside_with_nearest_follows_the_reference():
    """The one nearest sample outside the axis has weight 0 and nothing renormalizes:
    0 (onnx.reference; ONNX Runtime rejects exclude_outside with nearest)."""
    x = np.arange(1, 6, dtype=np.float32)
    for nm in ("floor", "ceil"):
        got = resize(x, [1.6], mode="nearest", nearest_mode=nm, exclude_outside=1)
        want = _ref_onnx(x, [1.6], mode="nearest", nearest_mode=nm, exclude_outside=1)
        np.testing.assert_array_equal(got, want)
        assert (got == 0).any()


def test_reference_window_rounding_bug():
    """onnx.reference (1.22) takes the ratio from x but the window from x + pad: at
    x = 7.000000000000001 (10.5 / 1.4 - 0.5) the sum rounds to 8.0 and it reads samples
    6 and 7 with weights for 7 and 8, so nearest picks 6 and linear returns ~x[6].
    fastops (and the spec reference) sample at x."""
    x = np.arange(8, dtype=np.float64)
    scale = 7 / 5
    for mode in ("nearest", "linear"):
        got = resize(x, sizes=[11], mode=mode)    # scale 11/8: no artifact
        np.testing.assert_allclose(got, resize_ref(x, sizes=[11], mode=mode), rtol=1e-12)
        import onnx.reference.ops.op_resize as ref_ops
        coeffs = (lambda r, s: ref_ops._nearest_coeffs(r, mode="round_prefer_floor")) \
            if mode == "nearest" else ref_ops._linear_coeffs
        buggy = ref_ops._interpolate_1d_along_axis(x[None], 1, scale, 11, coeffs)[0]
        assert buggy[10] < 6.01                     # the reference's pick / blend
        got = resize(np.arange(40.0).reshape(5, 8), sizes=[7, 9], mode=mode,
                     keep_aspect_ratio_policy="not_smaller")
        assert got[0, 10] == 7.0                    # x = 7.000000000000001 -> sample 7


def test_tf_half_pixel_for_nn_against_onnxruntime():
    """Opset 11's tf_half_pixel_for_nn (onnx.reference does not implement it)."""
    rng = _rng(5)
    x = rng.standard_normal((1, 1, 6, 10)).astype(np.float32)
    for sizes in ([12, 20], [3, 5], [9, 4]):
        for nm in NEAREST:
            want = _run_ort(_resize_model(x, opset=11, sizes=[1, 1] + sizes, mode="nearest",
                                          nearest_mode=nm,
                                          coordinate_transformation_mode="tf_half_pixel_for_nn"),
                            x)
            got = resize(x, sizes=sizes, axes=(2, 3), mode="nearest", nearest_mode=nm,
                         coordinate_transformation_mode="tf_half_pixel_for_nn")
            np.testing.assert_array_equal(got, want)


def test_keep_aspect_ratio_policy():
    rng = _rng(6)
    x = rng.standard_normal((2, 5, 8))
    for policy in ("not_larger", "not_smaller"):
        for sizes in ([3, 3], [10, 6], [7, 9]):
            for mode in ("nearest", "linear"):
                got = resize(x, sizes=sizes, axes=(1, 2), mode=mode,
                             keep_aspect_ratio_policy=policy)
                assert got.shape == _ref_onnx(x, sizes=sizes, axes=(1, 2), mode=mode,
                                              keep_aspect_ratio_policy=policy).shape
                want = resize_ref(x, sizes=sizes, axes=(1, 2), mode=mode,
                                  keep_aspect_ratio_policy=policy)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # ignored with scales (the spec: "not applicable when the scales input is used")
    np.testing.assert_array_equal(
        resize(x, [2.0, 0.5], axes=(1, 2), keep_aspect_ratio_policy="not_larger"),
        resize(x, [2.0, 0.5], axes=(1, 2)))


def test_axes_order_and_negative_axes():
    rng = _rng(7)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    a = resize(x, [2.0, 0.6], axes=(2, 3), mode="linear")
    b = resize(x, [0.6, 2.0], axes=(3, 2), mode="linear")
    c = resize(x, np.array([0.6, 2.0]), axes=np.array([-1, -2]), mode="linear")
    d = resize(x, (1, 1, 2.0, 0.6), mode="linear")
    for y in (b, c, d):
        np.testing.assert_array_equal(a, y)
    hwc = np.ascontiguousarray(x[0].transpose(1, 2, 0))     # (4, 5, 3)
    e = resize(hwc, sizes=(8, 3), axes=(0, 1), mode="linear")
    np.testing.assert_array_equal(e, resize(x[0], sizes=(8, 3), axes=(1, 2),
                                            mode="linear").transpose(1, 2, 0))


def test_extrapolation_value_rounding():
    x = np.arange(16, dtype=np.uint8).reshape(4, 4)
    roi = [0.5, 0.5, 1.5, 1.5]
    got = resize(x, sizes=[3, 3], mode="linear", roi=roi, extrapolation_value=2.5,
                 coordinate_transformation_mode="tf_crop_and_resize")
    assert got[2, 2] == 3                   # half away from zero
    got = resize(x.astype(np.int8), sizes=[3, 3], mode="linear", roi=roi,
                 extrapolation_value=-1e9, coordinate_transformation_mode="tf_crop_and_resize")
    assert got[2, 2] == -128                # saturated
    got = resize(x.astype(np.float32), sizes=[3, 3], mode="nearest", roi=roi,
                 extrapolation_value=np.nan,
                 coordinate_transformation_mode="tf_crop_and_resize")
    assert np.isnan(got[2, 2]) and not np.isnan(got[0, 0])
    with pytest.raises(ValueError, match="resize: extrapolation_value=nan"):
        resize(x, sizes=[3, 3], mode="linear", roi=roi, extrapolation_value=float("nan"),
               coordinate_transformation_mode="tf_crop_and_resize")


def test_integer_rounding_half_away_from_zero():
    """Exact ties (dyadic weights: the float path is exact) round away from zero."""
    x = np.array([[0, 1], [-3, 4]], np.int8)
    got = resize(x, [1.0, 2.0], mode="linear")    # weights 0.25 / 0.75
    want = round_half_away(resize_ref(x, [1.0, 2.0], mode="linear"), np.int8)
    np.testing.assert_array_equal(got, want)
    assert got[1].tolist() == [-3, -1, 2, 4]           # -1.25 -> -1, 2.25 -> 2
    y = resize(np.array([1, 2], np.uint8), sizes=[1], mode="linear")   # 1.5 -> 2
    assert y.tolist() == [2]
    y = resize(np.array([-1, -2], np.int32), sizes=[1], mode="linear")  # -1.5 -> -2
    assert y.tolist() == [-2]
    big = np.array([2**62, 2**62 - 1], np.int64)
    assert resize(big, sizes=[4], mode="cubic").dtype == np.int64
    sat = resize(np.array([0, 255, 255, 0], np.uint8), [2.0], mode="cubic")
    assert sat.max() == 255 and sat.min() == 0           # overshoot saturates


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_uint8_dyadic_cases_exact(dtype):
    """2x up and 2x down (plain and antialiased) have dyadic weights: the float32 path is
    exact, so the bytes equal the spec value rounded half away from zero."""
    rng = _rng(8)
    x = _data(rng, (3, 16, 40), dtype)
    for scales, aa in (([2.0, 2.0], 0), ([0.5, 0.5], 0), ([0.5, 0.5], 1), ([2.0, 0.5], 1)):
        got = resize(x, scales, axes=(1, 2), mode="linear", antialias=aa)
        want = round_half_away(resize_ref(x, scales, axes=(1, 2), mode="linear",
                                          antialias=aa), dtype)
        np.testing.assert_array_equal(got, want)
    # HWC images with 1-4 channels, rows long enough for the unrolled 2x horizontal loop
    for c in range(1, 5):
        img = _data(rng, (9, 37, c), dtype)
        for scales in ([2.0, 2.0], [4.0, 2.0], [2.0, 4.0]):
            got = resize(img, scales, axes=(0, 1), mode="linear")
            want = round_half_away(resize_ref(img, scales, axes=(0, 1), mode="linear"), dtype)
            np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ ONNX Runtime
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("ctm", CTMS)
def test_onnxruntime_float32(mode, ctm):
    """float32 agrees with ONNX Runtime to rounding, except align_corners and
    tf_crop_and_resize with scales whose scale * in is not an integer: ORT divides by
    the integer output length, fastops (like onnx.reference and its test data) by
    scale * in."""
    rng = _rng(9)
    x = rng.standard_normal((1, 2, 6, 9)).astype(np.float32)
    roi = [0.1, 0.2, 0.9, 0.95] if ctm == "tf_crop_and_resize" else None
    for aa, excl in ((0, 0), (1, 0), (1, 1)) if mode == "linear" else \
            ((0, 0), (0, 1), (1, 0), (1, 1)):
        for kind, val in (("sizes", [4, 13]), ("sizes", [12, 5]), ("scales", [0.5, 2.0]),
                          ("scales", [1.5, 0.75])):
            attrs = dict(mode=mode, coordinate_transformation_mode=ctm, antialias=aa,
                         exclude_outside=excl)
            lead = [1, 1] if kind == "scales" else [1, 2]
            model = _resize_model(x, roi=None if roi is None else [0, 0, .1, .2, 1, 1, .9, .95],
                                  **{kind: lead + val}, **attrs)
            want = _run_ort(model, x)
            got = resize(x, axes=(2, 3), roi=roi, **{kind: val}, **attrs)
            assert got.shape == want.shape
            fractional = kind == "scales" and any(s * n != int(s * n)
                                                  for s, n in zip(val, (6, 9)))
            if ctm in ("align_corners", "tf_crop_and_resize") and fractional:
                assert np.abs(got - want).max() > 0.1
            else:
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_onnxruntime_uint8_truncates():
    """ORT's uint8 linear resize truncates; fastops rounds half away from zero: equal to
    ORT or one more, and equal to the rounded float result."""
    rng = _rng(10)
    x = rng.integers(0, 256, (1, 2, 9, 11)).astype(np.uint8)
    for sizes in ([5, 17], [18, 6]):
        want = _run_ort(_resize_model(x, sizes=[1, 2] + sizes, mode="linear"), x)
        got = resize(x, sizes=sizes, axes=(2, 3), mode="linear")
        d = got.astype(int) - want.astype(int)
        assert set(np.unique(d)) <= {0, 1} and (d == 1).any()
        f = resize(x.astype(np.float32), sizes=sizes, axes=(2, 3), mode="linear")
        _compare_int(got, f.astype(np.float64), "uint8")


def test_onnxruntime_nearest_float32_coordinates():
    """ORT maps coordinates in float32: at a float64 near-tie its nearest pick may differ
    (4 -> 6 rows at scale 0.7: 3.5 / 0.7f is 5.0000001 in float64, exactly 5 in float32)."""
    x = (np.arange(6 * 3).reshape(1, 1, 6, 3) * 3).astype(np.float32)
    want = _run_ort(_resize_model(x, scales=[1, 1, 0.7, 1], mode="nearest"), x)
    got = resize(x, [0.7], axes=[2], mode="nearest")
    ref = _ref_onnx(x, [1, 1, 0.7, 1], mode="nearest")
    np.testing.assert_array_equal(got, ref)
    assert not np.array_equal(got, want)
    np.testing.assert_array_equal(got[..., :3, :], want[..., :3, :])


def test_onnxruntime_output_length_float32():
    """ORT computes the output length in float32: 3 * float32(5/3) rounds to 5.0; the
    product in float64 (onnx.reference, fastops) is 4.99999994 -> 4."""
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    s = float(np.float32(5 / 3))
    assert resize(x, [1.0, s], mode="linear").shape == (1, 4)
    assert _ref_onnx(x, [1.0, s], mode="linear").shape == (1, 4)
    assert _run_ort(_resize_model(x, scales=[1.0, s], mode="linear"), x).shape == (1, 5)


# ------------------------------------------------------------------ torch
def _torch():
    return peer("torch")


@pytest.mark.parametrize("size", [(8, 12), (2, 3), (12, 5), (4, 6)])
def test_torch_interpolate(size):
    torch = _torch()
    F = torch.nn.functional
    rng = _rng(11)
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    t = torch.from_numpy(x)
    pairs = [
        (dict(mode="bilinear", align_corners=False), dict(mode="linear")),
        (dict(mode="bilinear", align_corners=True),
         dict(mode="linear", coordinate_transformation_mode="align_corners")),
        (dict(mode="bicubic", align_corners=False), dict(mode="cubic")),
        (dict(mode="bicubic", align_corners=True),
         dict(mode="cubic", coordinate_transformation_mode="align_corners")),
        # integer and power-of-two ratios: torch's float32 in/out scale is exact there
        (dict(mode="nearest"),
         dict(mode="nearest", coordinate_transformation_mode="asymmetric",
              nearest_mode="floor")),
        (dict(mode="nearest-exact"), dict(mode="nearest", nearest_mode="round_prefer_ceil")),
    ]
    for tk, fk in pairs:
        want = F.interpolate(t, size, **tk).numpy()
        got = resize(x, sizes=size, axes=(2, 3), **fk)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(tk))


@pytest.mark.parametrize("size", [(2, 3), (3, 2), (1, 4), (4, 6)])
def test_torch_antialias(size):
    """torch's antialias=True equals antialias with exclude_outside=1 (and
    cubic_coeff_a=-0.5 for bicubic)."""
    torch = _torch()
    F = torch.nn.functional
    rng = _rng(12)
    x = rng.standard_normal((1, 2, 9, 13)).astype(np.float32)
    t = torch.from_numpy(x)
    want = F.interpolate(t, size, mode="bilinear", antialias=True).numpy()
    got = resize(x, sizes=size, axes=(2, 3), mode="linear", antialias=1, exclude_outside=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    want = F.interpolate(t, size, mode="bicubic", antialias=True).numpy()
    got = resize(x, sizes=size, axes=(2, 3), mode="cubic", antialias=1, exclude_outside=1,
                 cubic_coeff_a=-0.5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    u = (rng.random((1, 3, 30, 40)) * 255).astype(np.uint8)
    want = F.interpolate(torch.from_numpy(u.astype(np.float32)), (10, 13), mode="bilinear",
                         antialias=True).numpy()
    got = resize(u, sizes=(10, 13), axes=(2, 3), mode="linear", antialias=1,
                 exclude_outside=1)
    _compare_int(got, want.astype(np.float64), "uint8")


# ------------------------------------------------------------------ hostile input
def test_zero_size():
    x = np.zeros((0, 3, 4, 4), np.float32)
    y = resize(x, [2.0, 2.0], axes=(2, 3), mode="linear")
    assert y.shape == (0, 3, 8, 8) and y.dtype == np.float32
    x = np.zeros((2, 0, 5), np.uint8)
    assert resize(x, sizes=[7], axes=[2], mode="cubic").shape == (2, 0, 7)
    assert resize(np.zeros(5), [0.1]).shape == (0,)           # floor(0.5) = 0
    assert resize(np.zeros((3, 4)), sizes=[0, 2]).shape == (0, 2)
    with pytest.raises(ValueError, match="resize: cannot resize axis 1 of length 0 to 3"):
        resize(np.zeros((2, 0)), sizes=[2, 3])
    with pytest.raises(ValueError, match="keep_aspect_ratio_policy"):
        resize(np.zeros((2, 0)), sizes=[2, 3], keep_aspect_ratio_policy="not_larger")


def test_huge_scales_and_sizes():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(MemoryError, match="resize: .*scales"):
        resize(x, [1e30, 1e30])
    with pytest.raises(MemoryError, match="resize: .*scales"):
        resize(x, [3e38, 1.0], mode="linear")
    with pytest.raises(MemoryError, match="resize: .*sizes"):
        resize(x, sizes=[2**40, 2**40])
    with pytest.raises(MemoryError, match="resize: .*sizes"):
        resize(x, sizes=[2**62, 3])
    with pytest.raises(MemoryError, match="resize: .*sizes"):
        resize(x, sizes=[10**30, 3], mode="nearest")
    # a tiny scale: wide antialias filters, bounded tables
    y = resize(np.ones((1, 100000), np.float32), sizes=[1, 3], mode="cubic", antialias=1)
    np.testing.assert_allclose(y, 1.0, rtol=1e-3)   # 133k taps summed in float32


@pytest.mark.parametrize("bad", [[0.0, 1.0], [-1.0, 1.0], [np.nan, 1.0], [np.inf, 1.0],
                                 [1e-50, 1.0], [1e50, 1.0]])
def test_bad_scales(bad):
    with pytest.raises(ValueError, match=r"resize: scales\[0\]"):
        resize(np.zeros((2, 3)), bad)


def test_argument_errors():
    x = np.zeros((2, 3, 4), np.float32)
    cases = [
        (dict(scales=[1, 2]), ValueError, "scales has 2 values; expected 3"),
        (dict(scales=[1, 2], sizes=[1, 2]), ValueError, "exactly one of scales and sizes"),
        (dict(), ValueError, "exactly one of scales and sizes"),
        (dict(sizes=[1, 2, -3]), ValueError, r"sizes\[2\]=-3"),
        (dict(sizes=[1.5, 2, 3]), TypeError, "sizes must be integers"),
        (dict(scales=[2.0], axes=[3]), ValueError, "axes=3 is out of range"),
        (dict(scales=[2.0, 2.0], axes=[1, -2]), ValueError, "repeats an axis"),
        (dict(scales=[2.0], axes=[1.5]), TypeError, "axes must be integers"),
        (dict(scales=[1, 1, 2], mode="bilinear"), ValueError, "mode='bilinear' is not one of"),
        (dict(scales=[1, 1, 2], coordinate_transformation_mode="corners"), ValueError,
         "coordinate_transformation_mode='corners'"),
        (dict(scales=[1, 1, 2], nearest_mode="round"), ValueError, "nearest_mode='round'"),
        (dict(scales=[1, 1, 2], keep_aspect_ratio_policy="fit"), ValueError,
         "keep_aspect_ratio_policy='fit'"),
        (dict(scales=[1, 1, 2], cubic_coeff_a=np.inf), ValueError, "cubic_coeff_a"),
        (dict(scales=[1, 1, 2], cubic_coeff_a="x"), TypeError, "cubic_coeff_a"),
        (dict(scales=[1, 1, 2], antialias=2), TypeError, "antialias"),
        (dict(scales=[1, 1, 2], exclude_outside="yes"), TypeError, "exclude_outside"),
        (dict(scales=[1, 1, 2], coordinate_transformation_mode="tf_crop_and_resize"),
         ValueError, "needs roi"),
        (dict(scales=[1, 1, 2], coordinate_transformation_mode="tf_crop_and_resize",
              roi=[0, 0, 0, 1, 1]), ValueError, "roi has 5 values; expected 6"),
        (dict(scales=[1, 1, 2], coordinate_transformation_mode="tf_crop_and_resize",
              roi=[0, 0, np.nan, 1, 1, 1]), ValueError, "must be finite"),
        (dict(scales=[[1, 1, 2]]), ValueError, "scales must be 1-D"),
        (dict(scales=["a", "b", "c"]), TypeError, "scales must hold numbers"),
    ]
    for kw, exc, msg in cases:
        with pytest.raises(exc, match="resize: .*" + msg if not msg.startswith("resize") else msg):
            resize(x, **kw)
    with pytest.raises(ValueError, match="resize: x must have at least 1 dimension"):
        resize(np.float32(3.0), [2.0])
    for dt in (np.bool_, np.uint16, np.int16, np.uint32, np.complex64):
        with pytest.raises(TypeError, match="resize: x has dtype"):
            resize(np.zeros((2, 2), dt), [2.0, 2.0])


def test_roi_ignored_unless_tf_crop():
    x = np.arange(12.0).reshape(3, 4)
    a = resize(x, [2.0, 2.0], mode="linear")
    np.testing.assert_array_equal(a, resize(x, [2.0, 2.0], mode="linear", roi=[0.3, 0.1, 0.2, 0.9]))
    np.testing.assert_array_equal(a, resize(x, [2.0, 2.0], mode="linear", roi=np.zeros(0)))


def test_nan_inf_inputs():
    """NaN and inf propagate only through samples with non-zero weight (onnx.reference and
    torch multiply zero-weight neighbours too and return NaN next to an inf)."""
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[1, 2] = np.inf
    x[3, 0] = np.nan
    for mode in ("nearest", "linear", "cubic"):
        for scales in ([2.0, 2.0], [0.5, 0.6], [1.0, 3.0]):
            got = resize(x, scales, mode=mode)
            want = resize_ref(x, scales, mode=mode)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            fin = np.isfinite(want)
            np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-4)
    # integer inputs never see NaN; the 3x upscale at integer coordinates keeps x exactly
    y = resize(x, [1.0, 3.0], mode="linear", coordinate_transformation_mode="asymmetric")
    assert np.isinf(y[1, 6]) and y[1, 3] == 6.0


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_views_and_byte_order(mode):
    rng = _rng(13)
    base = rng.standard_normal((4, 6, 8, 3)).astype(np.float32)
    views = [base[:, ::-1], base[::2, :, 1:7:2], base.transpose(0, 3, 1, 2),
             base[..., 0], np.broadcast_to(base[:1], (5, 6, 8, 3)),
             base.astype(">f4"), base[:, :, ::-2, ::-1]]
    ro = base.copy()
    ro.flags.writeable = False
    views.append(ro)
    for v in views:
        axes = (1, 2)
        kw = dict(mode=mode, antialias=mode != "nearest")
        before = np.array(v, copy=True)
        got = resize(v, [1.5, 0.6], axes=axes, **kw)
        want = resize(np.ascontiguousarray(v, dtype=np.float32), [1.5, 0.6], axes=axes, **kw)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(v, before)            # inputs never modified
    u8 = (base * 40 + 128).clip(0, 255).astype(np.uint8)
    for v in (u8[:, ::-1], u8.transpose(3, 0, 1, 2)[::-1], u8[..., 1]):
        for axes in ((1,), (0, 2), (1, 2), (0, 1, 2)):
            sc = [1.7, 0.55, 2.0][:len(axes)]
            got = resize(v, sc, axes=axes, mode=mode)
            np.testing.assert_array_equal(got, resize(np.ascontiguousarray(v), sc, axes=axes,
                                                      mode=mode))


def test_identity_axes_are_copies():
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4) * (2**55 + 1)
    y = resize(x, [1.0, 1.0, 1.0], mode="cubic")
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)
    z = resize(x, sizes=[2, 3, 4], mode="linear")
    np.testing.assert_array_equal(z, x)
    w = resize(x, [1.0, 2.0, 1.0], mode="nearest")      # int64 beyond 2**53 moved exactly
    np.testing.assert_array_equal(w, np.repeat(x, 2, axis=1))


# ------------------------------------------------------------------ threads, SIMD paths
_BIG_CASES = [
    ("float32", (4, 3, 70, 90), (2, 3), [2.0, 2.0], dict(mode="linear")),
    ("float32", (2, 3, 90, 70), (2, 3), [0.5, 0.5], dict(mode="linear", antialias=1)),
    ("uint8", (90, 120, 3), (0, 1), [0.34, 0.4], dict(mode="linear", antialias=1)),
    ("uint8", (2, 3, 40, 50), (2, 3), [2.6, 1.7], dict(mode="cubic")),
    ("int8", (50, 60, 4), (0, 1), [0.7, 1.9], dict(mode="cubic", antialias=1)),
    ("float64", (3, 40, 50, 7), (1, 2), [1.3, 0.45], dict(mode="cubic", antialias=1)),
    ("int32", (3, 40, 50), (1, 2), [2.0, 0.5], dict(mode="linear")),
    ("int64", (3, 40, 50), (1, 2), [1.5, 1.5], dict(mode="linear")),
    ("float32", (2, 3, 64, 64), (2, 3), [2.0, 3.0], dict(mode="nearest")),
    ("float32", (6, 20, 30, 8), (1, 2, 3), [1.5, 0.5, 2.0], dict(mode="linear")),
    # exact 2x upscales of 1-4 channel rows: the 16-lane up2 loop (steps of 16 or 8
    # source pixels) and its tails, two and four taps
    ("float32", (3, 20, 77), (1, 2), [2.0, 2.0], dict(mode="cubic")),
    ("float32", (11, 51, 2), (0, 1), [2.0, 2.0], dict(mode="cubic")),
    ("float32", (9, 45, 3), (0, 1), [2.0, 2.0], dict(mode="linear")),
    ("uint8", (9, 43, 3), (0, 1), [2.0, 2.0], dict(mode="cubic")),
    ("uint8", (9, 43, 4), (0, 1), [2.0, 2.0], dict(mode="linear")),
    # 17 MB out: non-temporal stores (kStreamBytes), rows not 64-byte multiples
    ("float32", (1, 2, 520, 1030), (2, 3), [2.0, 2.0], dict(mode="linear")),
]


def _big_results():
    rng = _rng(14)
    out = []
    for dt, shape, axes, scales, kw in _BIG_CASES:
        x = _data(rng, shape, dt)
        out.append(resize(x, scales, axes=axes, **kw))
    return out


def test_thread_count_invariance(threads):
    with threads(1):
        one = _big_results()
    with threads(2):
        two = _big_results()
    with threads(7):
        seven = _big_results()
    for a, b, c in zip(one, two, seven):
        assert a.tobytes() == b.tobytes() == c.tobytes()


def test_sse2_avx2_and_avx512_paths_agree():
    """FASTOPS_SIMD=baseline keeps the SSE2 vertical step; the bytes must not change."""
    code = ("import hashlib, sys; sys.path.insert(0, %r); from tests.test_resize import "
            "_big_results; print(hashlib.sha256(b''.join(r.tobytes() for r in "
            "_big_results())).hexdigest())" % os.getcwd())
    outs = []
    # SSE2; AVX2 (FASTOPS_SIMD caps the run-time steps too); the best this CPU has
    for env in ({"FASTOPS_SIMD": "baseline"}, {"FASTOPS_SIMD": "x86-64-v3"},
                {"FASTOPS_SIMD": ""}):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, **env}, cwd=os.getcwd())
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.strip())
    assert outs[0] == outs[1] == outs[2]


def test_periodic_fast_paths_match_generic():
    """Rows long enough for the exact-2x vector loops (up2, down2, with antialias and
    cubic) against the spec reference."""
    rng = _rng(15)
    for dt in ("float32", "float64", "uint8"):
        x = _data(rng, (3, 200), dt)
        for scales, kw in (([2.0], {}), ([0.5], {}), ([0.5], dict(antialias=1)),
                           ([2.0], dict(mode="cubic")), ([0.5], dict(mode="cubic"))):
            kw = {"mode": "linear", **kw}
            long = resize(x, scales, axes=[1], **kw)
            pieces = resize_ref(x, scales, axes=[1], **kw)
            if dt == "uint8":
                _compare_int(long, pieces, dt)
            else:
                np.testing.assert_allclose(long, pieces, rtol=1e-6, atol=1e-4)
            assert long.shape == (3, int(200 * scales[0]))
    # HWC rows of 2-4 channels (the up2 loops interleave the channels of two phases)
    for dt in ("float32", "uint8"):
        for c in (2, 3, 4):
            x = _data(rng, (3, 61, c), dt)
            for mode in ("linear", "cubic"):
                got = resize(x, [2.0], axes=[1], mode=mode)
                want = resize_ref(x, [2.0], axes=[1], mode=mode)
                if dt == "uint8":
                    _compare_int(got, want, dt)
                else:
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)


def test_dlpack_tensors():
    """torch tensors in (x and scales, as an ONNX runtime passes them), torch out."""
    torch = _torch()
    x = torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4)
    y = resize(x, torch.tensor([1.0, 1.0, 2.0, 0.5]), mode="linear")
    assert isinstance(y, torch.Tensor) and tuple(y.shape) == (1, 2, 6, 2)
    np.testing.assert_array_equal(y.numpy(), resize(x.numpy(), [1, 1, 2.0, 0.5],
                                                    mode="linear"))
    z = resize(x, sizes=torch.tensor([5, 5]), axes=[2, 3], mode="nearest")
    assert isinstance(z, torch.Tensor) and tuple(z.shape) == (1, 2, 5, 5)


# ------------------------------------------------------------------ every backend
@pytest.mark.parametrize("dtype", ["uint8", "float32", "float16"])
def test_backends(xp, dtype):
    rng = _rng(16)
    x = _data(rng, (2, 3, 9, 11), dtype)
    for kw in (dict(mode="linear"), dict(mode="cubic", antialias=1), dict(mode="nearest"),
               dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                    roi=[0.1, 0.2, 0.8, 1.1], extrapolation_value=5.0)):
        got = to_numpy(resize(xp.asarray(x), [0.6, 1.8], axes=(2, 3), **kw))
        want = resize_ref(x, [0.6, 1.8], axes=(2, 3), **kw)
        if dtype == "uint8":
            _compare_int(got, want, dtype)
        else:
            assert got.dtype == x.dtype
            np.testing.assert_allclose(got.astype(np.float64), want,
                                       rtol=2e-2 if dtype == "float16" else 1e-5, atol=0.1)


def test_table_cache_is_bounded_and_keyed_by_every_parameter(xp):
    """Tables are cached (fastops.resample._CACHE): a call equals the same call with the
    cache emptied, after calls that share lengths but differ in one parameter each
    (test_spec_reference covers the parameters against the reference), and the cache
    keeps at most _CACHE_ENTRIES small tables."""
    from fastops import resample as R
    x = xp.asarray(_rng(9).standard_normal((1, 2, 9, 11)))
    variants = [dict(mode="linear"), dict(mode="cubic"), dict(mode="cubic", cubic_coeff_a=-0.5),
                dict(mode="cubic", exclude_outside=1), dict(mode="linear", antialias=1),
                dict(mode="nearest", nearest_mode="ceil"),
                dict(mode="linear", coordinate_transformation_mode="align_corners"),
                dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                     roi=[0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8])]
    for scales in ([1, 1, 0.7, 0.6], [1, 1, 2, 3]):
        cached = [to_numpy(resize(x, scales, **kw)) for kw in variants]
        for kw, got in zip(variants, cached):
            R._CACHE.clear()
            np.testing.assert_array_equal(got, to_numpy(resize(x, scales, **kw)),
                                          err_msg=str(kw))
    for n in range(2 * R._CACHE_ENTRIES):
        resize(x, sizes=[1, 2, 9, n + 1], mode="linear")
    assert len(R._CACHE) <= R._CACHE_ENTRIES
    R._CACHE.clear()
    resize(xp.zeros((1, 1 << 17)), sizes=[1, 1 << 10], mode="linear", antialias=1)
    assert not R._CACHE          # (1024 x 257 float64 weights: too big to keep)
