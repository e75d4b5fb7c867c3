"""roi_align against onnx.reference, the ONNX node test data, ONNX Runtime, a float64
reference written from the specs (tests/reference/roi_align.py) and hand-checked cases."""
import glob
import os

import numpy as np
import pytest

import fastops
from tests.conftest import GPU, peer, to_numpy
from tests.reference.roi_align import roi_align_ref


def _rng(seed=0):
    return np.random.default_rng(seed)


def _boxes(rng, k, h, w, scale=1.0, outside=True):
    """Random [x1, y1, x2, y2] in input pixels, some partly or wholly outside the map."""
    lo = -0.3 if outside else 0.0
    hi = 1.3 if outside else 1.0
    xy = rng.uniform(lo, hi, (k, 2)) * np.array([w, h]) / scale
    wh = rng.uniform(0.0, 0.6, (k, 2)) * np.array([w, h]) / scale
    return np.concatenate([xy, xy + wh], axis=1)


def _mmcv_rois(rng, n, k, h, w, scale=1.0, dtype=np.float32):
    b = rng.integers(0, n, k)
    return np.concatenate([b[:, None], _boxes(rng, k, h, w, scale)], 1).astype(dtype)


# ------------------------------------------------------------------ onnx.reference
def _onnx_model(opset, attrs, dtype=np.float32):
    from onnx import TensorProto, helper
    tt = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("X", tt, None),
         helper.make_tensor_value_info("rois", tt, None),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT64, None)],
        [helper.make_tensor_value_info("Y", tt, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _onnx_case(seed=1, dtype=np.float32):
    rng = _rng(seed)
    x = rng.standard_normal((2, 3, 11, 13)).astype(dtype)
    rois = _boxes(rng, 6, 11, 13, scale=0.5).astype(dtype)
    rois[0] = [2.0, 2.0, 2.0, 2.0]           # zero-size RoI
    rois[1] = [30.0, 30.0, 40.0, 45.0]       # wholly outside
    rois[2] = [8.0, 6.0, 2.0, 3.0]           # reversed corners (negative size)
    bi = rng.integers(0, 2, len(rois)).astype(np.int64)
    return x, rois, bi


@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sr", [0, 2])
def test_onnx_reference_opset16(ctm, mode, sr):
    from onnx.reference import ReferenceEvaluator
    x, rois, bi = _onnx_case()
    attrs = dict(mode=mode, output_height=3, output_width=4, sampling_ratio=sr,
                 spatial_scale=0.5, coordinate_transformation_mode=ctm)
    want = ReferenceEvaluator(_onnx_model(16, attrs)).run(
        None, {"X": x, "rois": rois, "batch_indices": bi})[0]
    got = fastops.roi_align(x, rois, (3, 4), 0.5, sr, "avg" if mode == "avg" else "onnx_max",
                            ctm == "half_pixel", batch_indices=bi)
    assert got.dtype == np.float32 and got.shape == want.shape
    # same float32 arithmetic in the same order: equal to rounding (bit-equal here)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_onnx_reference_dtypes(dtype):
    from onnx.reference import ReferenceEvaluator
    x, rois, bi = _onnx_case(seed=2, dtype=dtype)
    attrs = dict(output_height=2, output_width=2, sampling_ratio=2, spatial_scale=0.5)
    want = ReferenceEvaluator(_onnx_model(16, attrs, dtype)).run(
        None, {"X": x, "rois": rois, "batch_indices": bi})[0]
    got = fastops.roi_align(x, rois, 2, 0.5, 2, batch_indices=bi)
    assert got.dtype == dtype
    tol = 2e-3 if dtype == np.float16 else 1e-12   # the reference computes float16 in float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_opset10_is_legacy(mode):
    """Opset 10 has no half-pixel shift (the spec, ONNX Runtime).  onnx.reference applies
    its opset-16 default half_pixel to opset-10 models; we compare with ORT and with the
    reference's explicit output_half_pixel."""
    from onnx.reference import ReferenceEvaluator
    x, rois, bi = _onnx_case(seed=3)
    attrs = dict(mode=mode, output_height=3, output_width=3, sampling_ratio=2,
                 spatial_scale=0.5)
    got = fastops.roi_align(x, rois, 3, 0.5, 2, "avg" if mode == "avg" else "onnx_max",
                            aligned=False, batch_indices=bi)
    legacy = ReferenceEvaluator(_onnx_model(
        16, dict(attrs, coordinate_transformation_mode="output_half_pixel"))).run(
        None, {"X": x, "rois": rois, "batch_indices": bi})[0]
    np.testing.assert_allclose(got, legacy, rtol=1e-6, atol=1e-6)
    ort = peer("onnxruntime")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(_onnx_model(10, attrs).SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    want = sess.run(None, {"X": x, "rois": rois, "batch_indices": bi})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _node_dirs():
    import onnx
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    return sorted(glob.glob(os.path.join(root, "test_roialign_*")))


@pytest.mark.parametrize("path", _node_dirs(), ids=os.path.basename)
def test_onnx_node_data(path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(os.path.join(path, "model.onnx"))
    node = model.graph.node[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    data = os.path.join(path, "test_data_set_0")

    def load(name):
        t = onnx.TensorProto()
        with open(os.path.join(data, name), "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)
    x, rois, bi = (load(f"input_{i}.pb") for i in range(3))
    want = load("output_0.pb")
    got = fastops.roi_align(
        x, rois, (attrs["output_height"], attrs["output_width"]), attrs["spatial_scale"],
        attrs["sampling_ratio"], "onnx_max" if attrs.get("mode", "avg") == "max" else "avg",
        attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel",
        batch_indices=bi)
    # the expected outputs are stored rounded to 4 decimals
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


# --------------------------------------------------------- float64 spec reference
@pytest.mark.parametrize("mode", ["avg", "max", "onnx_max"])
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("sr", [0, 1, 3])
def test_reference_mmcv_layout(xp, mode, aligned, sr):
    rng = _rng(4)
    x = rng.standard_normal((2, 4, 9, 10))
    rois = _mmcv_rois(rng, 2, 7, 9, 10, scale=0.25, dtype=np.float64)
    rois[0, 1:] = [8.0, 8.0, 8.0, 8.0]     # zero size
    got = fastops.roi_align(xp.asarray(x), xp.asarray(rois), (3, 2), 0.25, sr, mode, aligned)
    want = roi_align_ref(x, rois[:, 1:], rois[:, 0], (3, 2), 0.25, sr, mode, aligned)
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12, atol=1e-12)


def test_reference_huge_adaptive_grid():
    """A RoI needing more samples than the per-RoI table holds (recomputed per channel)."""
    rng = _rng(5)
    x = rng.standard_normal((1, 2, 12, 12))
    rois = np.array([[0, -5.0, -3.0, 150.0, 140.0], [0, 1.0, 2.0, 9.0, 11.0]])
    for mode in ("avg", "max", "onnx_max"):
        got = fastops.roi_align(x, rois, 2, 1.0, 0, mode)
        want = roi_align_ref(x, rois[:, 1:], rois[:, 0], 2, 1.0, 0, mode)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtypes(xp, dtype):
    rng = _rng(6)
    x = rng.standard_normal((2, 5, 16, 20)).astype(dtype)
    rois = _mmcv_rois(rng, 2, 9, 64, 80, scale=0.25, dtype=dtype)
    got = fastops.roi_align(xp.asarray(x), xp.asarray(rois), 4, 0.25, 2)
    assert got.dtype == dtype and got.shape == (9, 5, 4, 4)
    want = roi_align_ref(x.astype(np.float64), rois[:, 1:], rois[:, 0], 4, 0.25, 2)
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want, rtol=tol, atol=tol)


def test_float16_rounds_once():
    """float16 input is computed in float32 and rounded once to float16."""
    rng = _rng(7)
    x = rng.standard_normal((1, 3, 10, 10)).astype(np.float16)
    rois = np.array([[0, 0.3, 1.7, 8.2, 9.1]], np.float32)
    got = fastops.roi_align(x, rois, 3, sampling_ratio=2)
    want = fastops.roi_align(x.astype(np.float32), rois, 3, sampling_ratio=2)
    np.testing.assert_array_equal(got, want.astype(np.float16))


# ------------------------------------------------------------- hand-checked cases
def _ramp(h=6, w=8):
    """x[0, 0, y, x] = 10 * y + x: bilinear of it is 10 * y + x (inside the map)."""
    return (10.0 * np.arange(h)[:, None] + np.arange(w)[None, :])[None, None]


def test_hand_aligned_false_avg():
    # RoI [1, 1, 5, 3]: no shift, size 4 x 2, one bin, 2x2 samples at x in {2, 4},
    # y in {1.5, 2.5}: mean = 10 * 2 + 3 = 23
    got = fastops.roi_align(_ramp(), np.array([[0, 1, 1, 5, 3]]), 1, 1.0, 2, "avg", False)
    assert got.shape == (1, 1, 1, 1) and got[0, 0, 0, 0] == pytest.approx(23.0)
    # aligned=True shifts by -0.5: x in {1.5, 3.5}, y in {1, 2}: 10 * 1.5 + 2.5 = 17.5
    got = fastops.roi_align(_ramp(), np.array([[0, 1, 1, 5, 3]]), 1, 1.0, 2, "avg", True)
    assert got[0, 0, 0, 0] == pytest.approx(17.5)


def test_hand_aligned_false_clamps_size_to_one():
    # zero-size RoI at (2, 3): legacy makes it 1x1 -> samples at 2.25/2.75, 3.25/3.75
    got = fastops.roi_align(_ramp(), np.array([[0, 2, 3, 2, 3]]), 1, 1.0, 2, "avg", False)
    assert got[0, 0, 0, 0] == pytest.approx(10 * 3.5 + 2.5)
    # aligned: zero size, adaptive sampling -> empty bin -> 0 in every mode
    for mode in ("avg", "max", "onnx_max"):
        got = fastops.roi_align(_ramp(), np.array([[0, 2, 3, 2, 3]]), 1, 1.0, 0, mode, True)
        assert got[0, 0, 0, 0] == 0.0


def test_hand_max_modes():
    # one bin, samples (aligned=False, RoI [0, 0, 2, 2], 2x2 grid) at x, y in {0.5, 1.5}
    x = np.array([[[[0.0, 4.0, 0.0], [8.0, 0.0, 0.0], [0.0, 0.0, 2.0]]]])
    rois = np.array([[0, 0, 0, 2, 2]])
    # interpolated samples: (0.5,0.5)=3, (0.5,1.5)=(4+0+0+0)/4=1, (1.5,0.5)=(8+0+0+0)/4=2,
    # (1.5,1.5)=(0+0+0+2)/4=0.5 -> MMCV max 3, avg 6.5/4
    assert fastops.roi_align(x, rois, 1, 1.0, 2, "max", False)[0, 0, 0, 0] == 3.0
    assert fastops.roi_align(x, rois, 1, 1.0, 2, "avg", False)[0, 0, 0, 0] == 6.5 / 4
    # ONNX: per sample the max weighted corner: 0.25*8=2, 0.25*4=1, 0.25*8=2, 0.25*2=0.5
    assert fastops.roi_align(x, rois, 1, 1.0, 2, "onnx_max", False)[0, 0, 0, 0] == 2.0


def test_max_below_mmcv_seed():
    """MMCV seeds max with -10000; fastops returns the true maximum (documented)."""
    x = np.full((1, 1, 4, 4), -20000.0)
    rois = np.array([[0, 0, 0, 3, 3]])
    got = fastops.roi_align(x, rois, 1, 1.0, 2, "max")
    assert got[0, 0, 0, 0] == -20000.0
    assert roi_align_ref(x, rois[:, 1:], rois[:, 0], 1, 1.0, 2, "max",
                         mmcv_seed=True)[0, 0, 0, 0] == -10000.0


def test_nan_propagates_in_max_and_avg():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    rois = np.array([[0, 0, 0, 3, 3]])
    for mode in ("avg", "max"):
        assert np.isnan(fastops.roi_align(x, rois, 1, 1.0, 2, mode)[0, 0, 0, 0])


def test_outside_map_is_zero():
    x = np.ones((1, 2, 5, 5), np.float32)
    rois = np.array([[0, 20, 20, 30, 30], [0, -30, -30, -10, -10]], np.float32)
    for mode in ("avg", "max", "onnx_max"):
        got = fastops.roi_align(x, rois, 2, 1.0, 2, mode)
        np.testing.assert_array_equal(got, 0.0)
    # partly outside: samples beyond -1 count as 0, those in [-1, 0] clamp to the edge
    got = fastops.roi_align(x, np.array([[0, -4.0, 0.0, 4.0, 4.0]]), (1, 2), 1.0, 1, "avg",
                            False)
    np.testing.assert_allclose(got[0, 0, 0], [0.0, 1.0])   # samples at x = -2 and 2


# ---------------------------------------------------------------- layout and shape
def test_empty_rois(xp):
    x = xp.ones((2, 3, 8, 8), dtype=np.float32)
    got = fastops.roi_align(x, xp.zeros((0, 5), np.float32), (2, 3))
    assert got.shape == (0, 3, 2, 3) and got.dtype == np.float32
    got = fastops.roi_align(x, xp.zeros((0, 4)), 2, batch_indices=xp.zeros(0, np.int64))
    assert got.shape == (0, 3, 2, 2)


def test_empty_channels_and_map():
    rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    assert fastops.roi_align(np.ones((1, 0, 4, 4), np.float32), rois, 2).shape == (1, 0, 2, 2)
    got = fastops.roi_align(np.ones((1, 2, 0, 4), np.float32), rois, 2)
    assert got.shape == (1, 2, 2, 2) and not got.any()


def test_layouts_agree(xp):
    rng = _rng(8)
    x = rng.standard_normal((3, 4, 10, 12)).astype(np.float32)
    rois = _mmcv_rois(rng, 3, 6, 10, 12)
    a = fastops.roi_align(xp.asarray(x), xp.asarray(rois), 3, 1.0, 0, "max", False)
    b = fastops.roi_align(xp.asarray(x), xp.asarray(rois[:, 1:]), 3, 1.0, 0, "max", False,
                          batch_indices=xp.asarray(rois[:, 0].astype(np.int32)))
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def _strided(a):
    """(2, 6, 15, 6) view of a (2, 12, 6, 30) array: transposed, negative and odd strides."""
    return a.transpose(0, 2, 3, 1)[:, :, ::-2, 1::2]


def test_non_contiguous(xp):
    rng = _rng(9)
    base = rng.standard_normal((2, 12, 6, 30)).astype(np.float32)
    x = _strided(xp.asarray(base))                         # the view lives on the device
    assert not x.flags.c_contiguous
    rois = _mmcv_rois(rng, 2, 8, 15, 6)
    rois_nc = xp.asarray(np.repeat(rois, 2, axis=0))[::2]
    for mode in ("avg", "max", "onnx_max"):
        got = fastops.roi_align(x, rois_nc, (2, 3), 1.0, 0, mode)
        want = fastops.roi_align(np.ascontiguousarray(_strided(base)), rois, (2, 3), 1.0, 0,
                                 mode)
        np.testing.assert_array_equal(to_numpy(got), want)


@GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gpu_equals_cpu_bitwise(dtype):
    """The CUDA kernel does the CPU arithmetic with explicit round-to-nearest ops (no FMA
    contraction): results are bit-identical."""
    import cupy
    rng = _rng(12)
    x = rng.standard_normal((2, 6, 20, 24)).astype(dtype)
    rois = _mmcv_rois(rng, 2, 40, 80, 96, scale=0.25, dtype=dtype)
    for mode in ("avg", "max", "onnx_max"):
        for aligned in (True, False):
            for sr in (0, 2):
                args = ((3, 5), 0.25, sr, mode, aligned)
                got = fastops.roi_align(cupy.asarray(x), cupy.asarray(rois), *args)
                assert isinstance(got, cupy.ndarray)
                np.testing.assert_array_equal(got.get(), fastops.roi_align(x, rois, *args))


def test_lists_and_torch():
    x = _ramp().tolist()
    got = fastops.roi_align(x, [[0, 1, 1, 5, 3]], 1, 1.0, 2, "avg", False)
    assert isinstance(got, np.ndarray) and got[0, 0, 0, 0] == pytest.approx(23.0)
    torch = peer("torch")
    t = torch.from_numpy(_ramp().astype(np.float32))
    got = fastops.roi_align(t, torch.tensor([[0.0, 1, 1, 5, 3]]), 1, 1.0, 2, "avg", False)
    assert isinstance(got, torch.Tensor) and float(got[0, 0, 0, 0]) == pytest.approx(23.0)


def test_inputs_not_modified():
    rng = _rng(10)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float16)
    rois = _mmcv_rois(rng, 1, 3, 6, 6)
    x0, r0 = x.copy(), rois.copy()
    fastops.roi_align(x, rois, 2)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(rois, r0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strided", [False, True])
def test_channel_interleaved_path_bit_identical(dtype, strided):
    """Many RoIs on a small map with >= 4 channels take the channel-interleaved kernel
    (roi_lanes: sample-channels far above the map's size); one channel at a time always
    takes the planar one.  Both must give the same bits, for every mode and rule, with a
    partial lane block (19 channels), RoIs outside the map, reversed and empty, and
    strided x; and match the float64 spec reference."""
    rng = _rng(21)
    base = rng.standard_normal((2, 9, 19, 11)).astype(dtype)
    x = base.transpose(0, 2, 1, 3) if strided else np.ascontiguousarray(
        base.transpose(0, 2, 1, 3))
    rois = _mmcv_rois(rng, 2, 60, 9, 11, scale=0.5, dtype=dtype)
    rois[0, 1:] = [4.0, 4.0, 4.0, 4.0]
    rois[1, 1:] = [9.0, 7.0, 1.0, 2.0]
    rois[2, 1:] = [60.0, 60.0, 80.0, 90.0]
    for mode in ("avg", "max", "onnx_max"):
        for aligned in (True, False):
            for sr in (0, 2):
                args = ((3, 4), 0.5, sr, mode, aligned)
                got = fastops.roi_align(x, rois, *args)
                per_channel = np.concatenate(
                    [fastops.roi_align(x[:, c:c + 1], rois, *args) for c in range(19)], 1)
                np.testing.assert_array_equal(got, per_channel)
                if dtype == np.float64 and not strided:
                    want = roi_align_ref(x, rois[:, 1:], rois[:, 0], *args)
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [2, 300])
def test_threads_bit_identical(threads, k):
    rng = _rng(11)
    x = rng.standard_normal((2, 66, 40, 48)).astype(np.float32)   # 66: a partial block
    rois = _mmcv_rois(rng, 2, k, 160, 192, scale=0.25)
    outs = []
    for n in (1, 2):
        with threads(n):
            outs.append([fastops.roi_align(x, rois, 7, 0.25, sr, mode)
                         for mode in ("avg", "max", "onnx_max") for sr in (0, 2)])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------- errors
def test_batch_index_out_of_range(xp):
    x = xp.ones((2, 1, 4, 4), np.float32)
    with pytest.raises(IndexError, match=r"rois\[1, 0\]=2 of RoI 1"):
        fastops.roi_align(x, xp.asarray([[0, 0, 0, 2, 2], [2, 0, 0, 2, 2]], np.float32), 2)
    with pytest.raises(IndexError, match=r"batch_indices\[0\]=-1 of RoI 0"):
        fastops.roi_align(x, xp.zeros((1, 4), np.float32), 2,
                          batch_indices=xp.asarray([-1], np.int64))
    with pytest.raises(IndexError, match="out of range"):
        fastops.roi_align(xp.ones((0, 1, 4, 4), np.float32), xp.zeros((1, 5), np.float32), 2)


def test_denormal_batch_index_is_not_integral(xp):
    """A float32 batch column of +-1e-45 (a denormal) is not an integral index on either
    backend.  CuPy compiles its own kernels with -ftz=true (its float32 -> float64 cast
    too), so on an H200 its comparisons took the denormal for 0, that is image 0; the
    check tests the bits."""
    x = xp.ones((2, 1, 4, 4), np.float32)
    tiny = np.float32(1e-45)
    for b in (tiny, -tiny):
        rois = np.array([[0, 0, 0, 2, 2], [b, 0, 0, 2, 2]], np.float32)
        with pytest.raises(ValueError, match=r"rois\[1, 0\]=.*e-45 is not an integral "
                                             r"batch index"):
            fastops.roi_align(x, xp.asarray(rois), 2)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(x=np.ones((1, 4, 4), np.float32)), ValueError, "x must be 4-D"),
    (dict(x=np.ones((1, 1, 4, 4), np.int32)), TypeError, "x has dtype int32"),
    (dict(rois=np.zeros((2, 4), np.float32)), ValueError, r"rois must be \(K, 5\)"),
    (dict(rois=np.zeros((2, 5), bool)), TypeError, "rois has dtype bool"),
    (dict(rois=np.zeros((1, 5), np.float32), batch_indices=np.zeros(1, np.int64)),
     ValueError, r"rois must be \(K, 4\)"),
    (dict(rois=np.zeros((1, 4), np.float32), batch_indices=np.zeros(1, np.float32)),
     TypeError, "batch_indices has dtype float32"),
    (dict(rois=np.zeros((2, 4), np.float32), batch_indices=np.zeros(1, np.int64)),
     ValueError, r"batch_indices must have shape \(2,\)"),
    (dict(output_size=0), ValueError, "output_size must be positive"),
    (dict(output_size=(2, 2, 2)), ValueError, "output_size must be an int or a pair"),
    (dict(output_size=2.5), TypeError, "output_size must be an integer"),
    (dict(spatial_scale=float("nan")), ValueError, "spatial_scale must be a finite"),
    (dict(spatial_scale="a"), TypeError, "spatial_scale must be a real number"),
    (dict(sampling_ratio=1.5), TypeError, "sampling_ratio must be an integer"),
    (dict(mode="sum"), ValueError, "mode must be one of"),
    (dict(aligned=2), TypeError, "aligned must be a bool"),
    (dict(rois=np.array([[0, 0, np.nan, 1, 1]], np.float32)), ValueError,
     "RoI 0 has a non-finite coordinate"),
    (dict(rois=np.array([[0.5, 0, 0, 1, 1]], np.float32)), ValueError,
     r"rois\[0, 0\]=0.5 is not an integral batch index"),
])
def test_bad_input(kwargs, exc, match):
    args = dict(x=np.ones((1, 1, 4, 4), np.float32), rois=np.zeros((1, 5), np.float32),
                output_size=2)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        fastops.roi_align(**args)


def test_mixed_devices_rejected():
    cupy = peer("cupy")
    if not fastops.backends()["gpu"]:
        pytest.skip("needs a CUDA device")
    with pytest.raises(TypeError, match="rois"):
        fastops.roi_align(cupy.ones((1, 1, 4, 4), np.float32), np.zeros((1, 5), np.float32), 2)


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_matches_torchvision_when_installed(aligned, sampling_ratio):
    torch = peer("torch")
    tvops = peer("torchvision.ops")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 20, 24)).astype(np.float32)
    xy = rng.uniform(-4, 20, (17, 2))
    wh = rng.uniform(0.5, 15, (17, 2))
    rois = np.concatenate([rng.integers(0, 2, (17, 1)), xy, xy + wh], 1).astype(np.float32)
    expect = tvops.roi_align(torch.from_numpy(x), torch.from_numpy(rois), (5, 4), 0.5,
                             sampling_ratio, aligned).numpy()
    got = fastops.roi_align(x, rois, (5, 4), spatial_scale=0.5, sampling_ratio=sampling_ratio,
                            mode="avg", aligned=aligned)
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
