"""The MMCV custom domain in fastops.onnx: small graphs built with onnx.helper as MMCV's
and mmdeploy's symbolic functions write them (domains mmcv and mmdeploy, their attribute
names and types), run through Session, ort_session and ReferenceEvaluator(new_ops=OPS),
compared with the slow float64 references in tests/reference (written from MMCV's
conventions), torch where it has the op, and fastops' own functions only where a
convention is the thing under test (int32 casts, padding).
"""
import numpy as np
import pytest

from tests.conftest import peer
from tests.reference import nms as nms_ref
from tests.reference import norm as norm_ref
from tests.reference import scatter as scatter_ref
from tests.reference import selection as sel_ref
from tests.reference.deform_conv import deform_conv2d_ref
from tests.reference.grid_sample import grid_sample_ref
from tests.reference.roi_align import roi_align_ref

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import fastops.onnx as fo  # noqa: E402

DOMAINS = ("mmcv", "mmdeploy")


def _model(node, inputs, outputs, domain="mmcv"):
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    g = helper.make_graph([node], "g", vis, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid(domain, 1)])
    m.ir_version = 8
    return m


def _all_runtimes(model, feeds):
    """Outputs of Session, ort_session (when onnxruntime-extensions is installed) and
    ReferenceEvaluator(new_ops=OPS): all three must agree bit for bit (one kernel)."""
    from onnx.reference import ReferenceEvaluator
    got = fo.Session(model).run(None, feeds)
    ref = ReferenceEvaluator(model, new_ops=fo.OPS).run(None, feeds)
    runs = [got, ref]
    try:
        runs.append(fo.ort_session(model).run(None, feeds))
    except ImportError:              # no onnxruntime / onnxruntime-extensions here
        pass
    for other in runs[1:]:
        for a, b in zip(got, other):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    return got


def _feature_rois(rng, n=2, c=3, h=12, w=14, k=6):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    xy = rng.uniform(-2, 12, (k, 2))
    wh = rng.uniform(0, 9, (k, 2))
    rois = np.concatenate([rng.integers(0, n, (k, 1)), xy, xy + wh], 1).astype(np.float32)
    return x, rois


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", ["MMCVRoiAlign", "MMCVRoIAlign"])
@pytest.mark.parametrize("mode, aligned", [("avg", 1), ("avg", 0), ("max", 1), ("max", 0)])
def test_roi_align(domain, op, mode, aligned):
    rng = np.random.default_rng(0)
    x, rois = _feature_rois(rng)
    node = helper.make_node(op, ["x", "rois"], ["y"], domain=domain, output_height=3,
                            output_width=4, spatial_scale=0.5, sampling_ratio=2, mode=mode,
                            aligned=aligned)
    (y,) = _all_runtimes(_model(node, {"x": x, "rois": rois}, [("y", TP.FLOAT)], domain),
                         {"x": x, "rois": rois})
    # MMCV's max is the max of the bilinear samples (not ONNX's weighted-corner rule)
    want = roi_align_ref(x, rois[:, 1:], rois[:, 0], (3, 4), 0.5, 2, mode, bool(aligned))
    assert y.dtype == np.float32 and y.shape == (6, 3, 3, 4)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_roi_align_defaults_are_mmcv():
    """Attributes left out take MMCV's defaults: 1x1 output, scale 1, adaptive sampling,
    avg, aligned."""
    rng = np.random.default_rng(1)
    x, rois = _feature_rois(rng)
    node = helper.make_node("MMCVRoiAlign", ["x", "rois"], ["y"], domain="mmcv")
    (y,) = fo.Session(_model(node, {"x": x, "rois": rois}, [("y", TP.FLOAT)])).run(
        None, {"x": x, "rois": rois})
    want = roi_align_ref(x, rois[:, 1:], rois[:, 0], (1, 1), 1.0, 0, "avg", True)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def _boxes_scores(rng, B=2, N=40, C=3):
    xy = rng.uniform(0, 50, (B, N, 2))
    wh = rng.uniform(1, 20, (B, N, 2))
    boxes = np.concatenate([xy, xy + wh], -1).astype(np.float32)     # [y1, x1, y2, x2]
    scores = np.round(rng.uniform(0, 1, (B, C, N)), 2).astype(np.float32)  # ties
    return boxes, scores


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("max_out, score_thr, offset", [(0, 0.0, 0), (5, 0.0, 0), (3, 0.4, 0),
                                                        (100, 0.2, 1), (0, 0.5, 1)])
def test_nms_int32_padded(domain, max_out, score_thr, offset):
    rng = np.random.default_rng(2)
    boxes, scores = _boxes_scores(rng)
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["idx"], domain=domain,
                            center_point_box=0, max_output_boxes_per_class=max_out,
                            iou_threshold=0.3, score_threshold=score_thr, offset=offset)
    feeds = {"boxes": boxes, "scores": scores}
    (idx,) = _all_runtimes(_model(node, feeds, [("idx", TP.INT32)], domain), feeds)
    B, C, N = scores.shape
    m = N if max_out <= 0 else min(max_out, N)
    assert idx.dtype == np.int32 and idx.shape == (B * C * m, 3)
    # thresholds are float32 attributes: the reference gets the float32 values
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    want = nms_ref.non_max_suppression(boxes, scores, m, f32(0.3),
                                       f32(score_thr) if score_thr > 0 else None, 0, offset)
    np.testing.assert_array_equal(idx[:len(want)], want)
    assert (idx[len(want):] == -1).all()


def test_nms_center_point_box():
    rng = np.random.default_rng(3)
    boxes, scores = _boxes_scores(rng, B=1, N=30, C=2)
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["idx"], domain="mmcv",
                            center_point_box=1, iou_threshold=0.2)
    feeds = {"boxes": boxes, "scores": scores}
    (idx,) = fo.Session(_model(node, feeds, [("idx", TP.INT32)])).run(None, feeds)
    want = nms_ref.non_max_suppression(boxes, scores, 30, float(np.float32(0.2)), None, 1, 0)
    np.testing.assert_array_equal(idx[:len(want)], want)


def _deform_inputs(rng, groups=1, dg=1, k=3, mask=False):
    x = rng.standard_normal((2, 4, 7, 8)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, k, k)).astype(np.float32)
    off = rng.uniform(-1.5, 1.5, (2, 2 * dg * k * k, 7, 8)).astype(np.float32)
    msk = rng.uniform(0, 1, (2, dg * k * k, 7, 8)).astype(np.float32)
    return x, w, off, msk


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("group_name, dg_name", [("groups", "deform_groups"),
                                                 ("group", "deformable_groups"),
                                                 ("groups", "deformable_group")])
def test_deform_conv(domain, group_name, dg_name):
    rng = np.random.default_rng(4)
    x, w, off, _ = _deform_inputs(rng, groups=2, dg=2)
    attrs = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], group_name: 2,
             dg_name: 2, "bias": 0, "im2col_step": 32}
    node = helper.make_node("MMCVDeformConv2d", ["x", "offset", "w"], ["y"], domain=domain,
                            **attrs)
    feeds = {"x": x, "offset": off, "w": w}
    (y,) = _all_runtimes(_model(node, feeds, [("y", TP.FLOAT)], domain), feeds)
    want = deform_conv2d_ref(x, off, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 2, 2)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_deform_conv_mmdeploy_padding():
    """mmdeploy writes padding as zip(padding, padding) flattened: [ph, ph, pw, pw]."""
    rng = np.random.default_rng(5)
    x, w, _, _ = _deform_inputs(rng)
    off = rng.uniform(-1, 1, (2, 18, 9, 8)).astype(np.float32)
    node = helper.make_node("MMCVDeformConv2d", ["x", "offset", "w"], ["y"], domain="mmdeploy",
                            stride=[1, 1], padding=[2, 2, 1, 1], dilation=[1, 1], groups=1,
                            deform_groups=1)
    feeds = {"x": x, "offset": off, "w": w}
    (y,) = fo.Session(_model(node, feeds, [("y", TP.FLOAT)], "mmdeploy")).run(None, feeds)
    want = deform_conv2d_ref(x, off, w, None, (1, 1), (2, 1, 2, 1), (1, 1), 1, 1)
    assert y.shape == (2, 6, 9, 8)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("with_bias", [False, True])
def test_modulated_deform_conv(domain, with_bias):
    rng = np.random.default_rng(6)
    x, w, off, msk = _deform_inputs(rng, dg=1)
    b = rng.standard_normal(6).astype(np.float32)
    names = ["x", "offset", "mask", "w"] + (["b"] if with_bias else [])
    node = helper.make_node("MMCVModulatedDeformConv2d", names, ["y"], domain=domain,
                            stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1,
                            deform_groups=1)
    feeds = {"x": x, "offset": off, "mask": msk, "w": w}
    if with_bias:
        feeds["b"] = b
    (y,) = _all_runtimes(_model(node, feeds, [("y", TP.FLOAT)], domain), feeds)
    want = deform_conv2d_ref(x, off, w, b if with_bias else None, (1, 1), (1, 1, 1, 1),
                             (1, 1), 1, 1, msk)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sampler(mode, padding, align):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (2, 4, 5, 2)).astype(np.float32)
    node = helper.make_node("grid_sampler", ["x", "grid"], ["y"], domain="mmcv",
                            interpolation_mode=mode, padding_mode=padding, align_corners=align)
    feeds = {"x": x, "grid": grid}
    (y,) = _all_runtimes(_model(node, feeds, [("y", TP.FLOAT)]), feeds)
    names = (["bilinear", "nearest", "bicubic"][mode], ["zeros", "border", "reflection"][padding])
    want = grid_sample_ref(x, grid, names[0], names[1], bool(align))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    torch = peer("torch")
    tw = torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), names[0],
                                         names[1], bool(align)).numpy()
    np.testing.assert_allclose(y, tw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_int32(op, dim):
    rng = np.random.default_rng(8)
    x = rng.integers(0, 4, (3, 5, 6)).astype(np.float32)       # ties
    x[1, 2, 3] = np.nan
    node = helper.make_node(op, ["x"], ["v", "i"], domain="mmcv", dim=dim)
    feeds = {"x": x}
    v, i = _all_runtimes(_model(node, feeds, [("v", TP.FLOAT), ("i", TP.INT32)]), feeds)
    assert i.dtype == np.int32 and v.dtype == np.float32
    wv, wi = sel_ref.cumext(x, dim % 3, op == "cummax")
    np.testing.assert_array_equal(v, wv)
    np.testing.assert_array_equal(i, wi.astype(np.int32))
    torch = peer("torch")
    tv, ti = getattr(torch, op)(torch.from_numpy(x), dim)
    np.testing.assert_array_equal(i, ti.numpy().astype(np.int32))


def test_instance_norm():
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((2, 4, 5, 6)) * 3 + 50).astype(np.float32)
    s = rng.uniform(0.5, 2, 4).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    node = helper.make_node("MMCVInstanceNormalization", ["x", "s", "b"], ["y"], domain="mmcv",
                            epsilon=1e-3)
    feeds = {"x": x, "s": s, "b": b}
    (y,) = _all_runtimes(_model(node, feeds, [("y", TP.FLOAT)]), feeds)
    np.testing.assert_allclose(y, norm_ref.instance_norm_ref(x, s, b, 1e-3), rtol=1e-4,
                               atol=1e-4)


def test_scatter_nd():
    rng = np.random.default_rng(10)
    data = rng.standard_normal((4, 5, 3)).astype(np.float32)
    idx = np.array([[0, 1], [3, 4], [2, 0]], np.int64)
    upd = rng.standard_normal((3, 3)).astype(np.float32)
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], domain="mmcv")
    feeds = {"d": data, "i": idx, "u": upd}
    (y,) = _all_runtimes(_model(node, feeds, [("y", TP.FLOAT)]), feeds)
    np.testing.assert_array_equal(y, scatter_ref.scatter_nd(data, idx, upd))


def test_mmdeploy_style_graph_through_ort_session():
    """Standard nodes around mmcv ones: onnxruntime runs Conv/Relu/Add, fastops the mmcv
    nodes, in one session; Session runs everything; the two agree."""
    peer("onnxruntime")
    peer("onnxruntime_extensions")
    from onnx import numpy_helper
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 4, 10, 12)).astype(np.float32)
    rois = np.array([[0, 1, 1, 8, 9], [0, 0, 2, 11, 6]], np.float32)
    w = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32) * 0.3, "w")
    wo = numpy_helper.from_array(rng.standard_normal((18, 4, 3, 3)).astype(np.float32) * 0.1,
                                 "wo")
    wd = numpy_helper.from_array(rng.standard_normal((5, 4, 3, 3)).astype(np.float32), "wd")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "wo"], ["off"], pads=[1, 1, 1, 1]),
             helper.make_node("MMCVDeformConv2d", ["r", "off", "wd"], ["d"], domain="mmdeploy",
                              stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1,
                              deform_groups=1),
             helper.make_node("MMCVRoiAlign", ["d", "rois"], ["p"], domain="mmcv",
                              output_height=2, output_width=2, spatial_scale=1.0,
                              sampling_ratio=2, mode="avg", aligned=1),
             helper.make_node("cummax", ["p"], ["v", "i"], domain="mmcv", dim=1),
             helper.make_node("Add", ["v", "v"], ["out"])]
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, x.shape),
                           helper.make_tensor_value_info("rois", TP.FLOAT, rois.shape)],
                          [helper.make_tensor_value_info("out", TP.FLOAT, None),
                           helper.make_tensor_value_info("i", TP.INT32, None)],
                          initializer=[w, wo, wd])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("mmcv", 1),
                                            helper.make_opsetid("mmdeploy", 1)])
    m.ir_version = 8
    feeds = {"x": x, "rois": rois}
    sess = fo.ort_session(m)
    assert sess.fastops_nodes == {"mmdeploy::MMCVDeformConv2d": 1, "mmcv::MMCVRoiAlign": 1,
                                  "mmcv::cummax": 1}
    a = sess.run(None, feeds)
    b = fo.Session(m).run(None, feeds)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-5)   # Conv: ORT vs NumPy
    assert a[1].dtype == np.int32 and a[1].shape == b[1].shape


def test_ort_session_refuses_float16_mmcv():
    peer("onnxruntime")
    peer("onnxruntime_extensions")
    x = np.zeros((1, 2, 4, 4), np.float16)
    rois = np.zeros((1, 5), np.float16)
    node = helper.make_node("MMCVRoiAlign", ["x", "rois"], ["y"], domain="mmcv")
    m = _model(node, {"x": x, "rois": rois}, [("y", TP.FLOAT16)])
    with pytest.raises(NotImplementedError, match="float16"):
        fo.ort_session(m)
    # Session runs it (computed in float32, returned as float16)
    (y,) = fo.Session(m).run(None, {"x": x, "rois": rois})
    assert y.dtype == np.float16
