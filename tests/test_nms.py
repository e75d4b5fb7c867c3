"""non_max_suppression, nms, batched_nms against the ONNX node test data, onnx.reference,
the float64 references in tests/reference/nms.py and hand-checked cases."""
import glob
import os

import numpy as np
import pytest

import fastops
from tests.conftest import peer, to_numpy
from tests.reference import nms as ref

onnx = peer("onnx")
from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

FLOATS = (np.float16, np.float32, np.float64)


def clustered(rng, n, n_obj=8, dtype=np.float32, ties=True):
    """Overlapping boxes around a few centres ([x1, y1, x2, y2]), scores with exact ties and
    duplicate boxes."""
    c = rng.uniform(0, 100, (n_obj, 2))
    obj = rng.integers(0, n_obj, n)
    centre = c[obj] + rng.normal(0, 3, (n, 2))
    wh = rng.uniform(5, 30, (n, 2))
    boxes = np.concatenate([centre - wh / 2, centre + wh / 2], 1)
    if n > 3:
        boxes[1] = boxes[0]                      # duplicate box
        boxes[3] = boxes[2]
    scores = rng.uniform(0, 1, n)
    if ties:
        scores = np.round(scores * 8) / 8        # many exact ties
    return boxes.astype(dtype), scores.astype(dtype)


# ------------------------------------------------------------------ ONNX node test data
NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
NODE_TESTS = sorted(glob.glob(os.path.join(NODE_DIR, "test_nonmaxsuppression_*")))


def _run_node_model(model, feeds, xp=np):
    node = model.graph.node[0]
    names = list(node.input) + [""] * (5 - len(node.input))
    val = {n: feeds[n] for n in names if n}
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    max_out = val.get(names[2]) if names[2] else None
    max_out = 0 if max_out is None else int(max_out.reshape(-1)[0])   # ONNX: missing = 0
    iou = float(val[names[3]].reshape(-1)[0]) if names[3] else 0.0
    sthr = float(val[names[4]].reshape(-1)[0]) if names[4] else None
    return fastops.non_max_suppression(xp.asarray(val[names[0]]), xp.asarray(val[names[1]]),
                                       max_out, iou, sthr, attrs.get("center_point_box", 0))


@pytest.mark.parametrize("path", NODE_TESTS, ids=os.path.basename)
def test_onnx_node_data(path, xp):
    assert NODE_TESTS
    model = onnx.load(os.path.join(path, "model.onnx"))
    case = os.path.join(path, "test_data_set_0")
    ins = [numpy_helper.to_array(onnx.load_tensor(f))
           for f in sorted(glob.glob(os.path.join(case, "input_*.pb")))]
    feeds = dict(zip([i.name for i in model.graph.input], ins))
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(case, "output_0.pb")))
    got = to_numpy(_run_node_model(model, feeds, xp))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_onnx_node_data_found():
    assert len(NODE_TESTS) >= 10


# ------------------------------------------------------------------ onnx.reference
def _onnx_reference(boxes, scores, max_out, iou, sthr, center):
    inputs = [helper.make_tensor_value_info("boxes", onnx.TensorProto.FLOAT, None),
              helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, None),
              helper.make_tensor_value_info("m", onnx.TensorProto.INT64, None),
              helper.make_tensor_value_info("iou", onnx.TensorProto.FLOAT, None)]
    names = ["boxes", "scores", "m", "iou"]
    feeds = {"boxes": boxes, "scores": scores, "m": np.array([max_out], np.int64),
             "iou": np.array([iou], np.float32)}
    if sthr is not None:
        inputs.append(helper.make_tensor_value_info("st", onnx.TensorProto.FLOAT, None))
        names.append("st")
        feeds["st"] = np.array([sthr], np.float32)
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("seed", range(4))
def test_against_onnx_reference(center, seed):
    rng = np.random.default_rng(seed)
    B, C, N = 2, 3, 40
    b = np.stack([clustered(rng, N)[0] for _ in range(B)])
    if center:
        b = np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)
    else:   # ONNX [y1, x1, y2, x2], some with the corners swapped
        b = b[..., [1, 0, 3, 2]]
        flip = rng.random((B, N)) < 0.3
        b[flip] = b[flip][:, [2, 3, 0, 1]]
    s = np.round(rng.uniform(0, 1, (B, C, N)) * 10).astype(np.float32) / 10
    for max_out, iou, sthr in [(5, 0.5, None), (100, 0.3, 0.2), (3, 0.0, 0.5), (0, 0.5, None)]:
        want = _onnx_reference(b.astype(np.float32), s, max_out, iou, sthr, center)
        got = fastops.non_max_suppression(b, s, max_out, iou, sthr, center)
        np.testing.assert_array_equal(got, want.reshape(-1, 3))


# ------------------------------------------------------------------ float64 references
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("offset", [0, 1])
def test_non_max_suppression_reference(dtype, center, offset):
    rng = np.random.default_rng(7)
    B, C, N = 2, 2, 60
    b = np.stack([clustered(rng, N)[0] for _ in range(B)]).astype(np.float64)
    if center:
        b = np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)
    b = b.astype(dtype)
    s = (np.round(rng.uniform(0, 1, (B, C, N)) * 8) / 8).astype(dtype)
    for max_out, iou, sthr in [(None, 0.5, None), (4, 0.3, 0.25), (None, 0.0, None)]:
        want = ref.non_max_suppression(b.astype(np.float32) if dtype == np.float16 else b, s,
                                       max_out, iou, sthr, center, offset)
        got = fastops.non_max_suppression(b, s, max_out, iou, sthr, center, offset)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int64


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", range(3))
def test_nms_reference(dtype, seed, xp):
    rng = np.random.default_rng(seed)
    boxes, scores = clustered(rng, 300, dtype=dtype)
    for iou, sthr, max_num, off in [(0.5, None, None, 0), (0.3, 0.4, 10, 0), (0.7, None, -1, 1)]:
        want = ref.nms(boxes, scores, iou, sthr, None if max_num == -1 else max_num, off)
        got = to_numpy(fastops.nms(xp.asarray(boxes), xp.asarray(scores), iou, sthr, max_num,
                                   off))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_batched_nms_reference(dtype, xp):
    rng = np.random.default_rng(3)
    boxes, scores = clustered(rng, 400, dtype=dtype)
    idxs = rng.integers(-3, 4, 400)
    for iou in (0.0, 0.5, 0.9):
        want = ref.batched_nms(boxes, scores, idxs, iou)
        got = to_numpy(fastops.batched_nms(xp.asarray(boxes), xp.asarray(scores),
                                           xp.asarray(idxs), iou))
        np.testing.assert_array_equal(got, want)


def test_batched_nms_equals_per_class_nms():
    rng = np.random.default_rng(4)
    boxes, scores = clustered(rng, 500, ties=False)
    idxs = rng.integers(0, 5, 500).astype(np.int32)
    got = fastops.batched_nms(boxes, scores, idxs, 0.5)
    per = np.concatenate([np.flatnonzero(idxs == c)[fastops.nms(boxes[idxs == c],
                                                                 scores[idxs == c], 0.5)]
                          for c in range(5)])
    want = per[np.lexsort((per, -scores[per]))]
    np.testing.assert_array_equal(got, want)
    # never across classes: identical boxes of different classes all survive
    same = np.tile([[0, 0, 10, 10]], (4, 1)).astype(np.float32)
    np.testing.assert_array_equal(
        fastops.batched_nms(same, np.array([.1, .4, .3, .2], np.float32), [7, 8, 9, 7], 0.5),
        [1, 2, 3])


# ------------------------------------------------------------------ hand-checked cases
def test_torchvision_semantics_by_hand(xp):
    # [x1, y1, x2, y2]; IoU(0, 1) = 81/119 = 0.68, IoU(0, 2) = 0, IoU(1, 3) = 25/175 = 0.14
    boxes = xp.asarray(np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30],
                                 [6, 6, 16, 16]], np.float32))
    scores = xp.asarray(np.array([0.9, 0.95, 0.5, 0.8], np.float32))
    np.testing.assert_array_equal(to_numpy(fastops.nms(boxes, scores, 0.5)), [1, 3, 2])
    np.testing.assert_array_equal(to_numpy(fastops.nms(boxes, scores, 0.1)), [1, 2])
    np.testing.assert_array_equal(to_numpy(fastops.nms(boxes, scores, 0.7)), [1, 0, 3, 2])
    keep = fastops.batched_nms(boxes, scores, xp.asarray(np.array([0, 1, 0, 1])), 0.1)
    np.testing.assert_array_equal(to_numpy(keep), [1, 0, 2])


def test_mmcv_offset_and_pad_by_hand(xp):
    # touching boxes: with offset=1 widths are 2, the intersection 1x1: IoU = 1 / 7
    boxes = xp.asarray(np.array([[[0, 0, 1, 1], [1, 1, 2, 2]]], np.float32))
    scores = xp.asarray(np.array([[[0.9, 0.8]]], np.float32))
    got = to_numpy(fastops.non_max_suppression(boxes, scores, None, 0.1, offset=0))
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 1]])
    got = to_numpy(fastops.non_max_suppression(boxes, scores, None, 0.1, offset=1))
    np.testing.assert_array_equal(got, [[0, 0, 0]])
    got = to_numpy(fastops.non_max_suppression(boxes, scores, None, 0.15, offset=1))
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 1]])
    got = to_numpy(fastops.non_max_suppression(boxes, scores, None, 0.1, offset=1, pad=True))
    np.testing.assert_array_equal(got, [[0, 0, 0], [-1, -1, -1]])
    got = to_numpy(fastops.non_max_suppression(boxes, scores, 3, 0.1, offset=1, pad=True))
    np.testing.assert_array_equal(got, [[0, 0, 0]] + [[-1, -1, -1]] * 2)
    np.testing.assert_array_equal(to_numpy(fastops.nms(boxes[0], scores[0, 0], 0.1, offset=1)),
                                  [0])


def test_ties_lower_index_first(xp):
    boxes = np.array([[0, 0, 1, 1]] * 3 + [[5, 5, 6, 6]] * 3, np.float32)
    scores = np.array([0.5, 0.7, 0.7, 0.7, 0.7, -0.0], np.float32)
    scores[5] = 0.0
    got = to_numpy(fastops.nms(xp.asarray(boxes), xp.asarray(scores), 0.5))
    np.testing.assert_array_equal(got, [1, 3])
    got = to_numpy(fastops.nms(xp.asarray(boxes), xp.asarray(scores), 1.0))
    np.testing.assert_array_equal(got, [1, 2, 3, 4, 0, 5])
    z = np.array([-0.0, 0.0, -0.0], np.float32)   # -0.0 == 0.0: index order
    got = to_numpy(fastops.nms(xp.asarray(boxes[:3] + np.arange(3)[:, None] * 10), xp.asarray(z),
                               0.5))
    np.testing.assert_array_equal(got, [0, 1, 2])


def test_nan_scores_never_selected(xp):
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [3, 3, 4, 4]], np.float64)
    scores = np.array([np.nan, 0.2, np.nan])
    np.testing.assert_array_equal(to_numpy(fastops.nms(xp.asarray(boxes), xp.asarray(scores),
                                                       0.5)), [1])
    got = fastops.non_max_suppression(xp.asarray(boxes[None]), xp.asarray(scores[None, None]))
    np.testing.assert_array_equal(to_numpy(got), [[0, 0, 1]])


def test_degenerate_boxes(xp):
    # zero-area boxes (a point, a line) never suppress and are never suppressed (IoU 0)
    boxes = np.array([[2, 2, 2, 2], [2, 2, 2, 2], [0, 0, 4, 0], [0, 0, 4, 4]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    got = to_numpy(fastops.nms(xp.asarray(boxes), xp.asarray(scores), 0.0))
    np.testing.assert_array_equal(got, [0, 1, 2, 3])
    # flipped corners are the same box
    flipped = np.array([[4, 4, 0, 0], [0, 0, 4, 4]], np.float32)
    got = to_numpy(fastops.nms(xp.asarray(flipped), xp.asarray(scores[:2]), 0.5))
    np.testing.assert_array_equal(got, [0])
    # center format with a negative width: area < 0, kept, suppresses nothing
    cb = np.array([[[2, 2, -4, 4], [2, 2, 4, 4]]], np.float32)
    got = to_numpy(fastops.non_max_suppression(xp.asarray(cb), xp.asarray(scores[None, None, :2]),
                                               None, 0.0, center_point_box=1))
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 1]])


def test_thresholds_cast_to_score_dtype():
    # float32(0.1) > 0.1 in double, but not once the threshold is float32 too (ONNX)
    boxes = np.array([[[0, 0, 1, 1]]], np.float32)
    s32 = np.array([[[0.1]]], np.float32)
    assert fastops.non_max_suppression(boxes, s32, None, 0.5, 0.1).shape == (0, 3)
    s64 = s32.astype(np.float64)
    assert fastops.non_max_suppression(boxes, s64, None, 0.5, 0.1).shape == (1, 3)
    assert fastops.non_max_suppression(boxes, s64, None, 0.5, 0.0999).shape == (1, 3)


def test_max_output_semantics():
    rng = np.random.default_rng(0)
    b, s = clustered(rng, 50, ties=False)
    b3, s3 = b[None], s[None, None]
    full = fastops.non_max_suppression(b3, s3, None, 0.9)
    assert len(full) > 5
    np.testing.assert_array_equal(fastops.non_max_suppression(b3, s3, 5, 0.9), full[:5])
    np.testing.assert_array_equal(fastops.non_max_suppression(b3, s3, np.array([5]), 0.9),
                                  full[:5])
    assert fastops.non_max_suppression(b3, s3, 0, 0.9).shape == (0, 3)
    np.testing.assert_array_equal(fastops.nms(b, s, 0.9, max_num=5), full[:5, 2])
    assert fastops.nms(b, s, 0.9, max_num=0).shape == (0,)
    np.testing.assert_array_equal(fastops.nms(b, s, 0.9, max_num=-1), full[:, 2])
    padded = fastops.non_max_suppression(b3, s3, None, 0.9, pad=True)
    assert padded.shape == (50, 3)
    np.testing.assert_array_equal(padded[:len(full)], full)
    assert (padded[len(full):] == -1).all()


def test_empty(xp):
    e = xp.zeros((0, 4), np.float32)
    assert to_numpy(fastops.nms(e, xp.zeros(0, np.float32), 0.5)).shape == (0,)
    assert to_numpy(fastops.batched_nms(e, xp.zeros(0, np.float32),
                                        xp.zeros(0, np.int64), 0.5)).shape == (0,)
    got = fastops.non_max_suppression(xp.zeros((2, 0, 4), np.float32),
                                      xp.zeros((2, 3, 0), np.float32))
    assert to_numpy(got).shape == (0, 3) and to_numpy(got).dtype == np.int64
    got = fastops.non_max_suppression(xp.zeros((2, 5, 4), np.float32),
                                      xp.zeros((2, 0, 5), np.float32), 4)
    assert to_numpy(got).shape == (0, 3)
    got = fastops.non_max_suppression(xp.zeros((1, 0, 4), np.float32),
                                      xp.zeros((1, 2, 0), np.float32), 3, pad=True)
    assert (to_numpy(got) == -1).all() and to_numpy(got).shape == (6, 3)


def test_non_contiguous(xp):
    rng = np.random.default_rng(5)
    b, s = clustered(rng, 80)
    big = np.zeros((3, 80, 8), np.float32)
    big[1, :, ::2] = b
    bs = xp.asarray(big)[1:2, ::-1, ::2]           # strided and reversed
    sc = xp.asarray(np.stack([s[::-1], s[::-1]], 1).T[None])   # (1, 2, 80), transposed
    want = fastops.non_max_suppression(np.ascontiguousarray(b[::-1])[None],
                                       np.ascontiguousarray(np.stack([s[::-1]] * 2)[None]),
                                       None, 0.4)
    np.testing.assert_array_equal(to_numpy(fastops.non_max_suppression(bs, sc, None, 0.4)), want)
    np.testing.assert_array_equal(to_numpy(fastops.nms(bs[0], sc[0, 1], 0.4)), want[want[:, 1] == 1, 2])
    idx = xp.asarray(np.arange(160) % 3)[::2]
    np.testing.assert_array_equal(
        to_numpy(fastops.batched_nms(bs[0], sc[0, 0], idx, 0.4)),
        fastops.batched_nms(np.ascontiguousarray(b[::-1]), np.ascontiguousarray(s[::-1]),
                            np.arange(80) * 2 % 3, 0.4))


def test_threads_identical(threads):
    rng = np.random.default_rng(6)
    # sparse boxes: little is suppressed, so one class uses the blocked parallel sweep
    n = 17000          # > kBlockedMin candidates
    c = rng.uniform(0, 6000, (n, 2))
    sparse = np.concatenate([c, c + rng.uniform(5, 40, (n, 2))], 1).astype(np.float32)
    scores = np.round(rng.uniform(0, 1, n) * 50).astype(np.float32)
    dense, dscores = clustered(rng, 6000)
    idxs = rng.integers(0, 3, n)
    res = {}
    for n in (1, 2):
        with threads(n):
            res[n] = (fastops.nms(sparse, scores, 0.3), fastops.nms(dense, dscores, 0.5),
                      fastops.batched_nms(sparse, scores, idxs, 0.3),
                      fastops.non_max_suppression(sparse[None], scores[None, None], None, 0.3),
                      fastops.non_max_suppression(dense[None], np.stack([dscores] * 5)[None],
                                                  20, 0.5))
    for a, b in zip(res[1], res[2]):
        np.testing.assert_array_equal(a, b)
    assert len(res[1][0]) > 1000
    np.testing.assert_array_equal(res[1][0], ref.nms_vectorized(sparse, scores, 0.3))


def test_gpu_matches_cpu_exactly(xp):
    rng = np.random.default_rng(8)
    b = np.stack([clustered(rng, 700)[0][:, [1, 0, 3, 2]] for _ in range(2)])
    s = (np.round(rng.uniform(0, 1, (2, 4, 700)) * 20) / 20).astype(np.float32)
    s[0, 0, 5] = np.nan
    for args in [(None, 0.5, None), (30, 0.3, 0.2), (5, 0.6, None, 0, 1, True)]:
        want = fastops.non_max_suppression(b, s, *args)
        got = fastops.non_max_suppression(xp.asarray(b), xp.asarray(s), *args)
        np.testing.assert_array_equal(to_numpy(got), want)
    idxs = rng.integers(0, 6, 700)
    np.testing.assert_array_equal(
        to_numpy(fastops.batched_nms(xp.asarray(b[0]), xp.asarray(s[0, 1]), xp.asarray(idxs), .5)),
        fastops.batched_nms(b[0], s[0, 1], idxs, .5))


def test_torch_tensors_roundtrip():
    torch = peer("torch")
    boxes = torch.tensor([[0., 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]])
    keep = fastops.nms(boxes, torch.tensor([0.9, 0.95, 0.5]), 0.5)
    assert isinstance(keep, torch.Tensor) and keep.tolist() == [1, 2]


def test_bad_input():
    b = np.zeros((1, 3, 4), np.float32)
    s = np.zeros((1, 2, 3), np.float32)
    nms_ = fastops.non_max_suppression
    with pytest.raises(ValueError, match="boxes"):
        nms_(np.zeros((1, 3, 5), np.float32), s)
    with pytest.raises(ValueError, match="scores"):
        nms_(b, np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match=r"scores.shape\[0\]"):
        nms_(b, np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError, match=r"scores.shape\[2\]"):
        nms_(b, np.zeros((1, 2, 4), np.float32))
    with pytest.raises(ValueError, match="max_output_boxes_per_class"):
        nms_(b, s, -1)
    with pytest.raises(TypeError, match="max_output_boxes_per_class"):
        nms_(b, s, 1.5)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="iou_threshold"):
            nms_(b, s, None, bad)
        with pytest.raises(ValueError, match="iou_threshold"):
            fastops.nms(b[0], s[0, 0], bad)
    with pytest.raises(ValueError, match="center_point_box"):
        nms_(b, s, center_point_box=2)
    with pytest.raises(ValueError, match="offset"):
        nms_(b, s, offset=2)
    with pytest.raises(TypeError, match="boxes has dtype complex"):
        nms_(b.astype(np.complex64), s)
    with pytest.raises(TypeError, match="scores"):
        fastops.nms(b[0], s[0, 0].astype(np.int64), 0.5)
    with pytest.raises(TypeError, match="score_threshold"):
        fastops.nms(b[0], s[0, 0], 0.5, score_threshold="x")
    with pytest.raises(ValueError, match="boxes"):
        fastops.nms(b, s[0, 0], 0.5)
    with pytest.raises(ValueError, match="scores"):
        fastops.nms(b[0], s[0], 0.5)
    with pytest.raises(ValueError, match="rows"):
        fastops.nms(b[0], s[0, 0, :2], 0.5)
    with pytest.raises(ValueError, match="idxs"):
        fastops.batched_nms(b[0], s[0, 0], np.zeros(2, np.int64), 0.5)
    with pytest.raises(TypeError, match="idxs"):
        fastops.batched_nms(b[0], s[0, 0], np.zeros(3, np.float32), 0.5)
    with pytest.raises(TypeError, match="idxs"):
        fastops.batched_nms(b[0], s[0, 0], np.zeros(3, bool), 0.5)


def test_inputs_not_modified():
    rng = np.random.default_rng(9)
    b, s = clustered(rng, 100)
    b0, s0 = b.copy(), s.copy()
    fastops.nms(b, s, 0.5)
    fastops.batched_nms(b, s, np.arange(100) % 4, 0.5)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(s, s0)


def test_matches_torchvision_when_installed():
    """torchvision.ops.nms / batched_nms on distinct scores (torchvision's sort is not
    stable, so ties are left out)."""
    torch = peer("torch")
    tvops = peer("torchvision.ops")
    rng = np.random.default_rng(11)
    for n in (50, 700):
        xy = rng.uniform(0, 200, (n, 2))
        wh = rng.uniform(5, 60, (n, 2))
        boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
        scores = rng.permutation(n).astype(np.float32) / n
        idxs = rng.integers(0, 5, n)
        for thr in (0.3, 0.5, 0.7):
            expect = tvops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), thr).numpy()
            np.testing.assert_array_equal(fastops.nms(boxes, scores, thr), expect)
            expect = tvops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                       torch.from_numpy(idxs), thr).numpy()
            np.testing.assert_array_equal(fastops.batched_nms(boxes, scores, idxs, thr), expect)
