"""fastops.dask: every function bit for bit against single-machine fastops on the
computed array, on many chunkings (chunks of 1, ragged last chunks, empty chunks), with
ties and NaN across chunk borders; independent checks against the slow references
(tests/reference), torch and dask's own peers; on dask's threaded and synchronous
schedulers and on a real dask.distributed LocalCluster with worker processes; hostile
input; the OpenMP thread count of tasks; the array metadata of CuPy chunks (emulated
CuPy here, a real device with the ``xp`` fixture)."""
import importlib.util
import inspect
import sys

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import fastops  # noqa: E402
import fastops.dask as fd  # noqa: E402
from fastops.dask import _graph  # noqa: E402
from tests import cuda_emu  # noqa: E402
from tests.conftest import to_numpy  # noqa: E402
from tests.reference import nms as nms_ref  # noqa: E402
from tests.reference import selection as sel_ref  # noqa: E402
from tests.reference.resize import resize_ref  # noqa: E402
from tests.reference.roi_align import roi_align_ref  # noqa: E402

# fastops.cv.resize's CPU kernels (another family, built separately)
HAVE_CV = importlib.util.find_spec("fastops._cpu.cv_resize") is not None
needs_cv = pytest.mark.skipif(not HAVE_CV, reason="fastops._cpu.cv_resize is not built")

REAL = ["uint8", "int8", "uint16", "int32", "uint64", "int64", "float16", "float32",
        "float64"]


@pytest.fixture(autouse=True)
def threaded():
    """The threaded scheduler unless a test says otherwise (a distributed Client of
    another module must not be picked up as the default)."""
    with dask.config.set(scheduler="threads"):
        yield


def sample(rng, shape, dtype, ties=True, specials=False):
    """Few distinct values (ties everywhere, across chunk borders too); specials puts
    NaN, inf and -0.0 on about a sixth of the elements, chunk borders included."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.integers(-3, 4, shape).astype(dt) if ties else \
            rng.standard_normal(shape).astype(dt)
        if specials and x.size:
            flat = x.reshape(-1)
            pick = rng.choice(flat.size, size=max(1, flat.size // 6), replace=False)
            flat[pick] = rng.choice([np.nan, np.inf, -np.inf, -0.0], size=pick.size)
        return x
    info = np.iinfo(dt)
    if ties:
        return rng.integers(max(info.min, -2), min(info.max, 3), shape,
                            endpoint=True).astype(dt)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dt)


def same(got, want):
    """Bit for bit: dtype, shape and every value's bytes (two NaNs count as equal)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind == "f":
        u = f"u{got.itemsize}"
        nan = np.isnan(got) & np.isnan(want)
        bad = np.flatnonzero(np.where(nan, 0, got.view(u)) != np.where(nan, 0, want.view(u)))
        assert not bad.size, f"{bad.size} values differ, first at {bad[0]}: " \
            f"{got.reshape(-1)[bad[0]]!r} != {want.reshape(-1)[bad[0]]!r}"
    else:
        np.testing.assert_array_equal(got, want)


def check(pairs):
    """Compute every dask result of ``pairs`` [(result, expected), ...] in one call (a
    result may be a (values, indices) pair) and compare them bit for bit."""
    flat, want = [], []
    for got, exp in pairs:
        if isinstance(got, tuple):
            flat.extend(known(g) for g in got)
            want.extend(exp)
        else:
            flat.append(known(got))
            want.append(exp)
    for g, w in zip(dask.compute(*flat), want):
        same(g, w)


def known(arr):
    """A dask result must have known chunk sizes."""
    assert not any(np.isnan(c) for cs in arr.chunks for c in cs), arr.chunks
    return arr


def chunkings_1d(n):
    """Chunkings of an axis of length n: whole, chunks of 1, ragged, with empty chunks."""
    out = [(n,), (1,) * n]
    if n >= 7:
        out += [tuple([5] * (n // 5) + ([n % 5] if n % 5 else [])), (0, n - 3, 0, 3)]
    return out


# ------------------------------------------------------------------ topk
@pytest.mark.parametrize("dtype", REAL)
def test_topk_every_dtype_and_chunking(dtype):
    rng = np.random.default_rng(1)
    x = sample(rng, (5, 23), dtype, specials=True)
    pairs = []
    for ch in chunkings_1d(23):
        d = da.from_array(x, chunks=((2, 3), ch))
        for k in (0, 1, 4, 23):
            for largest in (True, False):
                for srt in (True, False):
                    pairs.append((fd.topk(d, k, -1, largest, srt, split_every=2),
                                  fastops.topk(x, k, -1, largest, srt)))
    check(pairs)


def test_topk_against_reference_and_other_axes():
    rng = np.random.default_rng(2)
    x = sample(rng, (6, 9, 8), "float32", specials=True)
    d = da.from_array(x, chunks=(4, 2, 3))
    pairs = []
    for axis in (0, 1, 2):
        for split_every in (2, 3, None):
            for largest in (True, False):
                pairs.append((fd.topk(d, 5, axis, largest, split_every=split_every),
                              sel_ref.topk(x, 5, axis, largest)))
    check(pairs)


def test_topk_ties_go_to_the_lower_global_index():
    """The research example: ONNX/torch give [6, 7, 0]; da.argtopk gives [7, 6, 5]."""
    x = np.array([5, 5, 5, 5, 1, 5, 7, 7], dtype=np.float64)
    for ch in (1, 2, 3, 8):
        d = da.from_array(x, chunks=ch)
        v, i = dask.compute(*fd.topk(d, 3))
        same(i, np.array([6, 7, 0]))
        same(v, np.array([7.0, 7.0, 5.0]))
    theirs = da.argtopk(da.from_array(x, chunks=3), 3).compute()
    assert theirs.tolist() != [6, 7, 0]        # why fastops.dask exists


def test_topk_values_equal_dask_topk():
    """A peer: da.topk's values (no NaN: dask's own NaN handling is not the point)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    d = da.from_array(x, chunks=(3, 170))
    same(fd.topk(d, 17, 1).values.compute(), da.topk(d, 17, axis=1).compute())
    same(fd.topk(d, 17, 1, largest=False).values.compute(),
         da.topk(d, -17, axis=1).compute())


def test_topk_graph_is_a_tree():
    x = da.zeros((3, 64), chunks=(3, 4))       # 16 chunks along the axis
    v = fd.topk(x, 2, split_every=4).values
    layers = v.dask.layers
    combine = [n for n in layers if n.startswith("fastops-topk-combine")][0]
    assert len(layers[combine]) == 4 + 1        # 16 -> 4 -> 1
    assert v.chunks == ((3,), (2,))


# ------------------------------------------------------------------ cummax / cummin
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("method", ["sequential", "blelloch"])
def test_cummax_cummin_every_dtype_and_chunking(dtype, method):
    rng = np.random.default_rng(4)
    x = sample(rng, (4, 23), dtype, specials=True)
    pairs = []
    for ch in chunkings_1d(23):
        d = da.from_array(x, chunks=((1, 3), ch))
        for fn, ref in ((fd.cummax, fastops.cummax), (fd.cummin, fastops.cummin)):
            got = fn(d, 1, method=method)
            assert got.values.chunks == d.chunks == got.indices.chunks
            pairs.append((got, ref(x, 1)))
    check(pairs)


@pytest.mark.parametrize("method", ["sequential", "blelloch"])
def test_cummax_against_reference_and_torch(method):
    rng = np.random.default_rng(5)
    x = sample(rng, (3, 17, 5), "float32", specials=True)
    # a NaN and a tie on a chunk border
    x[0, 4, :] = np.nan
    x[1, 5, :] = x[1, 4, :]
    d = da.from_array(x, chunks=(2, (5, 1, 1, 10), 3))
    torch = None
    try:
        import torch
    except ImportError:
        pass
    for axis in (0, 1, 2):
        for is_max in (True, False):
            fn = fd.cummax if is_max else fd.cummin
            v, i = dask.compute(*fn(d, axis, method=method))
            rv, ri = sel_ref.cumext(x, axis, is_max)
            same(i, ri)
            same(v, rv)
            if torch is not None:
                t = (torch.cummax if is_max else torch.cummin)(torch.from_numpy(x), axis)
                same(i, t.indices.numpy())


def test_cummax_blelloch_many_chunks_and_tasks():
    rng = np.random.default_rng(6)
    x = sample(rng, (2, 100), "float64", specials=True)
    d = da.from_array(x, chunks=(2, 1))
    for method in ("sequential", "blelloch"):
        v, i = dask.compute(*fd.cummax(d, 1, method=method))
        wv, wi = fastops.cummax(x, 1)
        same(i, wi)
        same(v, wv)
    # blelloch: 2 log2(n) levels of carries instead of n - 1
    seq = fd.cummax(d, 1).values.__dask_graph__()
    ble = fd.cummax(d, 1, method="blelloch").values.__dask_graph__()
    for g, most in ((seq, 99), (ble, 2 * 7)):
        layer = [n for n in g.layers if "-carry-" in n][0]
        depth = {}
        deps = {k: t.dependencies for k, t in g.layers[layer].items()}
        def level(k):
            if k not in deps:
                return 0
            if k not in depth:
                depth[k] = 1 + max((level(d) for d in deps[k]), default=0)
            return depth[k]
        assert max(level(k) for k in deps) <= most
    # up to 16 chunks, sequential folds the summaries in the final tasks: no carry tasks
    few = fd.cummax(da.from_array(x, chunks=(2, 10)), 1).values.__dask_graph__()
    assert not [k for n in few.layers if "-carry-" in n for k in few.layers[n]]
    finals = [few.layers[n] for n in few.layers if "-final-" in n][0]
    assert max(len(t.dependencies) for t in finals.values()) == 1 + 9   # chunk + 9 summaries


@pytest.mark.parametrize("dtype", ["int16", "uint32", "float16", "float32", "float64"])
def test_cummax_side_by_side_lanes(dtype):
    """Lanes side by side (the axis is not the innermost one): the fix-up's branch-free
    path (np.maximum for the values) and its fallbacks (a zero or NaN carry), with signed
    zeros, ties and NaN payloads other than NumPy's, compared bit for bit."""
    rng = np.random.default_rng(24)
    x = sample(rng, (40, 33), dtype)
    if x.dtype.kind == "f":
        x[:6, 0] = 0.0                  # a +0 carry, then -0 ties
        x[6:9, 0] = -0.0
        x[:, 1] = -x[:, 1]
        bits = x.view(f"u{x.itemsize}")
        top = 1 << (8 * x.itemsize - 1)
        exp = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[x.itemsize]
        bits[13, 2] = exp | 1 | top     # a negative signalling NaN with a payload
        bits[25, 3] = exp | 5           # another payload, in a later chunk
    for ch in (7, 1, 40):
        d = da.from_array(x, chunks=(ch, (20, 13)))
        for fn, ref in ((fd.cummax, fastops.cummax), (fd.cummin, fastops.cummin)):
            for method in ("sequential", "blelloch"):
                v, i = dask.compute(*fn(d, 0, method=method))
                wv, wi = ref(x, 0)
                same(i, wi)
                assert np.array_equal(v.view(f"u{v.itemsize}"), wv.view(f"u{v.itemsize}"))


def test_cumulative_input_not_modified():
    rng = np.random.default_rng(7)
    x = sample(rng, (5, 30), "int32")
    keep = x.copy()
    d = da.from_array(x, chunks=(5, 7))
    dask.compute(*fd.cummax(d, 1), *fd.cummin(d, 1), *fd.topk(d, 3))
    same(x, keep)


# ------------------------------------------------------------------ nonzero
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float32",
                                   "float64", "complex64", ">f4", "<i2"])
def test_nonzero_dtypes_and_chunkings(dtype):
    rng = np.random.default_rng(8)
    x = (rng.integers(0, 3, (6, 13)) == 0).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[1, 2], x[3, 4], x[5, 12] = -0.0, np.nan, np.inf
    for ch in ((6, 13), (1, 13), (4, 13), ((0, 6), (13,)), (1, 5), (3, 4), (6, 1)):
        got = known(fd.nonzero(da.from_array(x, chunks=ch)))
        same(got.compute(), fastops.nonzero(x))
        same(got.compute(), np.array(np.nonzero(x)))


def test_nonzero_shapes():
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2, (3, 4, 5)).astype(np.uint8)
    for ch in ((1, 2, 5), (1, 1, 2), (2, 4, 5), (3, 4, 5)):
        got = known(fd.nonzero(da.from_array(x, chunks=ch)))
        same(got.compute(), fastops.nonzero(x))
        same(got.compute(), sel_ref.nonzero(x))
    # 0-d is shape (1,); empty arrays; all zeros
    same(fd.nonzero(da.from_array(np.float32(2))).compute(), fastops.nonzero(np.float32(2)))
    same(fd.nonzero(da.from_array(np.float32(0))).compute(), fastops.nonzero(np.float32(0)))
    same(fd.nonzero(da.zeros((0, 4), chunks=2)).compute(), np.zeros((2, 0), np.int64))
    same(fd.nonzero(da.zeros((4, 6), chunks=2)).compute(), np.zeros((2, 0), np.int64))


def test_nonzero_chunks_are_known_and_row_major_rechunk():
    x = np.eye(8, dtype=bool)
    d = da.from_array(x, chunks=(4, 4))        # not row-major contiguous: rechunked
    got = fd.nonzero(d)
    assert got.chunks[0] == (2,) and sum(got.chunks[1]) == 8
    same(got.compute(), fastops.nonzero(x))
    with dask.config.set({"array.chunk-size": "16B"}):   # force (2, 8) chunks
        got = fd.nonzero(d)
        assert got.chunks[1] == (2, 2, 2, 2)
        same(got.compute(), fastops.nonzero(x))


def test_nonzero_detects_a_graph_that_changes():
    state = {"n": 0}

    def block():
        state["n"] += 1
        return np.ones(4) if state["n"] == 1 else np.zeros(4)
    d = da.from_delayed(dask.delayed(block)(), (4,), dtype=np.float64)
    with pytest.raises(RuntimeError, match="nonzero: .*persist x"):
        fd.nonzero(d).compute(scheduler="sync")


# ------------------------------------------------------------------ non_max_suppression
def _detections(rng, B=7, N=30, C=3, dtype=np.float32):
    xy = rng.uniform(0, 40, (B, N, 2))
    wh = rng.uniform(4, 25, (B, N, 2))
    boxes = np.concatenate([xy, xy + wh], -1).astype(dtype)
    scores = (rng.integers(0, 9, (B, C, N)) / 8).astype(dtype)   # exact ties
    boxes[:, 1] = boxes[:, 0]                                     # duplicate boxes
    return boxes, scores


def test_non_max_suppression_chunkings_and_arguments():
    rng = np.random.default_rng(10)
    boxes, scores = _detections(rng)
    for bc in (1, 2, 3, 7, (0, 4, 3)):
        b = da.from_array(boxes, chunks=(bc, 11, 4))
        s = da.from_array(scores, chunks=(2, 1, 30))       # other chunks: made to match
        for mx in (None, 0, 2, 50):
            for iou, sthr in ((0.3, None), (0.0, 0.4), (1.0, 0.0)):
                got = known(fd.non_max_suppression(b, s, mx, iou, sthr, split_every=2))
                want = fastops.non_max_suppression(boxes, scores, mx, iou, sthr, pad=True)
                same(got.compute(), want)


def test_non_max_suppression_center_offset_dtypes_and_reference():
    rng = np.random.default_rng(11)
    for dt in (np.float16, np.float64):
        boxes, scores = _detections(rng, B=4, N=12, C=2, dtype=dt)
        b, s = da.from_array(boxes, chunks=(1, 12, 4)), da.from_array(scores, chunks=1)
        for cpb, off in ((0, 0), (1, 0), (0, 1)):
            got = fd.non_max_suppression(b, s, 3, 0.25, None, cpb, off).compute()
            same(got, fastops.non_max_suppression(boxes, scores, 3, 0.25, None, cpb, off,
                                                  pad=True))
    boxes, scores = _detections(rng, B=3, N=10, C=2, dtype=np.float64)
    got = fd.non_max_suppression(da.from_array(boxes, chunks=1), scores, 4, 0.3).compute()
    same(got, nms_ref.non_max_suppression(boxes, scores, 4, 0.3, pad=True))


def test_non_max_suppression_refusals():
    rng = np.random.default_rng(12)
    boxes, scores = _detections(rng, B=2, N=5, C=1)
    b = da.from_array(boxes, chunks=1)
    with pytest.raises(ValueError, match="non_max_suppression: fastops.dask needs pad=True"):
        fd.non_max_suppression(b, scores, pad=False)
    with pytest.raises(ValueError, match=r"non_max_suppression: scores.shape\[0\]=3"):
        fd.non_max_suppression(b, np.zeros((3, 1, 5), np.float32))
    with pytest.raises(ValueError, match="non_max_suppression: iou_threshold=2.0"):
        fd.non_max_suppression(b, scores, iou_threshold=2.0)
    with pytest.raises(ValueError, match=r"non_max_suppression: boxes must have shape"):
        fd.non_max_suppression(da.zeros((2, 5, 3), chunks=1), scores)
    with pytest.raises(TypeError, match="non_max_suppression: scores has dtype int32"):
        fd.non_max_suppression(b, scores.astype(np.int32))
    with pytest.raises(MemoryError, match="non_max_suppression: an output chunk"):
        fd.non_max_suppression(b, scores, max_output_boxes_per_class=1 << 62)


# ------------------------------------------------------------------ roi_align
def _features_rois(rng, N=5, C=4, H=12, W=14, K=25, sort=True):
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    b = rng.integers(0, N, K)
    if sort:
        b = np.sort(b)
    xy = rng.uniform(-4, 12, (K, 2))
    wh = rng.uniform(0, 9, (K, 2))
    rois = np.concatenate([b[:, None], xy, xy + wh], 1).astype(np.float32)
    return x, rois


@pytest.mark.parametrize("sort", [True, False])
def test_roi_align_chunkings_layouts_modes(sort):
    rng = np.random.default_rng(13)
    x, rois = _features_rois(rng, sort=sort)
    for ch in ((1, 4, 12, 14), (2, 3, 5, 14), ((0, 3, 2), 1, 12, 3), (5, 4, 12, 14)):
        d = da.from_array(x, chunks=ch)
        for mode, aligned, sr in (("avg", True, 2), ("max", False, 0), ("onnx_max", True, 0)):
            got = known(fd.roi_align(d, rois, (3, 2), 0.75, sr, mode, aligned))
            same(got.compute(), fastops.roi_align(x, rois, (3, 2), 0.75, sr, mode, aligned))
        bi = rois[:, 0].astype(np.int32)
        got = fd.roi_align(d, rois[:, 1:], 2, batch_indices=bi)
        same(got.compute(), fastops.roi_align(x, rois[:, 1:], 2, batch_indices=bi))
    if sort:    # the output chunks are the RoIs of each chunk of images: no assembly
        d = da.from_array(x, chunks=(2, 4, 12, 14))
        got = fd.roi_align(d, rois, 2)
        counts = np.bincount(rois[:, 0].astype(int) // 2, minlength=3)
        assert got.chunks[0] == tuple(int(c) for c in counts if c)


def test_roi_align_reference_float16_and_empty():
    rng = np.random.default_rng(14)
    x, rois = _features_rois(rng, N=3, C=2, H=6, W=7, K=6)
    d = da.from_array(x.astype(np.float64), chunks=(1, 2, 3, 7))
    got = fd.roi_align(d, rois, 2, 1.0, 2).compute()
    want = roi_align_ref(x.astype(np.float64), rois[:, 1:], rois[:, 0], 2, 1.0, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    h = x.astype(np.float16)
    same(fd.roi_align(da.from_array(h, chunks=1), rois, 3).compute(),
         fastops.roi_align(h, rois, 3))
    empty = fd.roi_align(d, np.zeros((0, 5), np.float32), 2)
    same(empty.compute(), np.zeros((0, 2, 2, 2)))
    with pytest.raises(IndexError, match=r"roi_align: batch index rois\[0, 0\]=9"):
        fd.roi_align(d, np.array([[9, 0, 0, 1, 1]], np.float32), 2)
    with pytest.raises(ValueError, match="roi_align: RoI 0 has a non-finite coordinate"):
        fd.roi_align(d, np.array([[0, np.nan, 0, 1, 1]], np.float32), 2)
    with pytest.raises(MemoryError, match=r"roi_align: an output chunk .* output_size="):
        fd.roi_align(d, rois, (1 << 31, 1 << 31))
    with pytest.raises(ValueError, match="roi_align: x must be 4-D"):
        fd.roi_align(d[0], rois, 2)
    with pytest.raises(TypeError, match="roi_align: x has dtype int32"):
        fd.roi_align(da.zeros((1, 1, 2, 2), dtype=np.int32), rois, 2)


# ------------------------------------------------------------------ resize
RESIZE_CASES = [
    dict(scales=[1, 1, 1.7, 0.6], mode="linear"),
    dict(sizes=[2, 3, 13, 41], mode="cubic"),
    dict(scales=[1, 1, 0.33, 0.41], mode="linear", antialias=True),
    dict(scales=[1, 1, 0.45, 0.5], mode="cubic", antialias=True, exclude_outside=True,
         cubic_coeff_a=-0.5),
    dict(scales=[1, 1, 2.5, 1.5], mode="nearest", nearest_mode="round_prefer_ceil"),
    dict(scales=[1, 1, 0.8, 1.3], mode="nearest", coordinate_transformation_mode="asymmetric",
         nearest_mode="floor", exclude_outside=True),
    dict(sizes=[10, 11], axes=[2, 3], mode="linear",
         coordinate_transformation_mode="tf_crop_and_resize", roi=[0.1, 0.2, 0.9, 1.3],
         extrapolation_value=7),
    dict(scales=[1.5, 1, 2, 0.5], mode="linear",
         coordinate_transformation_mode="align_corners"),          # 3 axes: a chain
    dict(sizes=[9, 9], axes=[-1, -2], keep_aspect_ratio_policy="not_larger", mode="linear",
         coordinate_transformation_mode="pytorch_half_pixel"),
    dict(scales=[1, 1, 1, 1], mode="linear"),                      # identity
    dict(sizes=[2, 3, 0, 5]),                                      # empty output
]


@pytest.mark.parametrize("case", range(len(RESIZE_CASES)))
def test_resize_spatial_chunkings(case):
    kw = RESIZE_CASES[case]
    rng = np.random.default_rng(15)
    x = (rng.standard_normal((2, 3, 17, 19)) * 40).astype(np.float32)
    x[0, 0, 8, 9] = np.nan
    want = fastops.resize(x, **kw)
    for ch in ((1, 3, 17, 19), (1, 2, 1, 1), (2, 3, 5, 4), (1, 1, (0, 9, 8), 19)):
        got = known(fd.resize(da.from_array(x, chunks=ch), **kw))
        same(got.compute(), want)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16",
                                   "float64"])
def test_resize_dtypes(dtype):
    rng = np.random.default_rng(16)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    x = rng.integers(info.min, info.max, (11, 13, 3), endpoint=True).astype(dtype) \
        if info else (rng.standard_normal((11, 13, 3)) * 9).astype(dtype)
    d = da.from_array(x, chunks=(3, 4, 2))
    for kw in (dict(scales=[1.8, 0.7, 1], mode="linear"),
               dict(sizes=[5, 29], axes=[0, 1], mode="cubic"),
               dict(scales=[0.5, 0.5], axes=[0, 1], mode="linear", antialias=True),
               dict(scales=[1.4, 2.6, 1], mode="nearest")):
        same(fd.resize(d, **kw).compute(), fastops.resize(x, **kw))


def test_resize_reference_and_seams():
    """Against the float64 reference; and the naive per-chunk resize (each chunk resized
    on its own) differs, which is what the per-output-chunk slices avoid."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((1, 1, 24, 20))
    d = da.from_array(x, chunks=(1, 1, 6, 5))
    kw = dict(scales=[1, 1, 1.5, 2], mode="cubic")
    got = fd.resize(d, **kw).compute()
    np.testing.assert_allclose(got, resize_ref(x, **kw), rtol=1e-12, atol=1e-12)
    rows = da.from_array(x, chunks=(1, 1, 6, 20))       # chunked along H only
    naive = rows.map_blocks(lambda b: fastops.resize(b, **kw),
                            chunks=((1,), (1,), (9,) * 4, (40,)), dtype=d.dtype).compute()
    assert naive.shape == got.shape
    seams = np.abs(naive - got).max(axis=(0, 1, 3))
    assert seams[0] < 1e-12 < seams[8]          # rows near a chunk border differ


def _resize_layers(y):
    main = [n for n in y.dask.layers if n.startswith("fastops-resize-")
            and "-tables-" not in n and "-cut-" not in n]
    cut = [n for n in y.dask.layers if n.startswith("fastops-resize-cut-")]
    return y.dask.layers[main[0]], y.dask.layers[cut[0]]


def test_resize_reads_only_the_input_slice_it_needs():
    """Each output chunk depends on the few input chunks its taps reach, through cut
    tasks that hold only the part it reads (so only halos move between workers)."""
    x = da.zeros((1, 1, 200, 200), chunks=(1, 1, 10, 10), dtype=np.float32)
    for kw, most, halo in ((dict(scales=[1, 1, 0.5, 0.5], mode="linear"), 4, 1),
                           (dict(scales=[1, 1, 0.25, 0.25], mode="cubic", antialias=True),
                            16, 8)):
        y = fd.resize(x, **kw)
        main, cut = _resize_layers(y)
        pieces = [[d for d in t.dependencies if "-tables-" not in d[0]]
                  for t in main.values()]
        assert max(map(len, pieces)) <= most
        for key in cut:                     # (name, 4 block indices, 4 (start, stop))
            b = key[5:]
            sizes = [b[i + 1] - b[i] for i in range(0, 8, 2)]
            assert sizes[:2] == [1, 1] and min(sizes[2:]) <= halo + 1
        same(y.compute(), fastops.resize(np.zeros((1, 1, 200, 200), np.float32), **kw))


def test_resize_refusals():
    d = da.zeros((4, 4), chunks=2, dtype=np.float32)
    with pytest.raises(ValueError, match="resize: give exactly one of scales and sizes"):
        fd.resize(d)
    with pytest.raises(TypeError, match="resize: x has dtype uint16"):
        fd.resize(d.astype(np.uint16), scales=[2, 2])
    with pytest.raises(MemoryError, match="resize: an output of shape"):
        fd.resize(d, sizes=[1 << 40, 1 << 40])
    with pytest.raises(ValueError, match="resize: mode='area'"):
        fd.resize(d, scales=[2, 2], mode="area")


# ------------------------------------------------------------------ cv.resize
@needs_cv
@pytest.mark.parametrize("flag", [0, 1, 2, 3, 5, 6])
def test_cv_resize_frames(flag):
    rng = np.random.default_rng(18)
    frames = rng.integers(0, 256, (5, 21, 26, 3)).astype(np.uint8)
    for ch in ((2, 21, 26, 3), (1, 7, 26, 3), (5, 21, 26, 3)):
        d = da.from_array(frames, chunks=ch)
        for dsize, fx, fy in (((13, 9), 0, 0), ((52, 42), 0, 0), (None, 0.5, 0.75)):
            got = known(fd.cv.resize(d, dsize, fx, fy, flag))
            want = np.stack([fastops.cv.resize(f, dsize, None, fx, fy, flag) for f in frames])
            same(got.compute(), want)
    if flag in (0, 1, 3):
        from tests.reference.cv_resize import cv_resize_ref
        want = np.stack([cv_resize_ref(f, (13, 9), interpolation=flag) for f in frames])
        same(fd.cv.resize(da.from_array(frames, chunks=2), (13, 9),
                          interpolation=flag).compute(), want)


@needs_cv
def test_cv_resize_shapes_and_dtypes():
    rng = np.random.default_rng(19)
    for shape, dt in (((4, 10, 12), np.float32), ((4, 10, 12, 1), np.uint16),
                      ((3, 9, 8, 4), np.int16), ((2, 10, 12), np.float64)):
        f = (rng.standard_normal(shape) * 300).astype(dt)
        got = fd.cv.resize(da.from_array(f, chunks=1), (7, 5), interpolation=2).compute()
        same(got, np.stack([fastops.cv.resize(a, (7, 5), interpolation=2) for a in f]))
    # dsize None or with a zero: fx and fy set the size (cv2's rule); dsize as an array
    f = rng.integers(0, 256, (3, 10, 12, 3)).astype(np.uint8)
    d = da.from_array(f, chunks=(2, 5, 12, 3))
    for dsize, fx, fy in (((0, 0), 0.5, 0.5), ((7, 0), 0.5, 1.5), (None, 2, 1),
                          (np.array([7, 5]), 0, 0)):
        same(fd.cv.resize(d, dsize, fx, fy).compute(),
             np.stack([fastops.cv.resize(a, dsize, None, fx, fy) for a in f]))
    with pytest.raises(ValueError, match=r"cv.resize: frames must be a stack"):
        fd.cv.resize(da.zeros((4, 4), chunks=2), (2, 2))
    with pytest.raises(TypeError, match="cv.resize: frames has dtype int32"):
        fd.cv.resize(da.zeros((1, 4, 4), chunks=2, dtype=np.int32), (2, 2))
    with pytest.raises(ValueError, match="cv.resize: interpolation=4"):
        fd.cv.resize(da.zeros((1, 4, 4), chunks=2), (2, 2), interpolation=4)


# ------------------------------------------------------------------ hostile input
def test_views_byte_order_and_unchanged_inputs():
    rng = np.random.default_rng(20)
    base = sample(rng, (9, 16), "float32", specials=True)
    keep = base.copy()
    views = {"negative stride": base[::-1, ::-2],
             "zero stride": np.broadcast_to(base[:1], (9, 16)),
             "big endian": base.astype(">f4"),
             "read-only": base.copy()}
    views["read-only"].flags.writeable = False
    for name, v in views.items():
        d = da.from_array(v, chunks=(4, 3))
        c = np.ascontiguousarray(v).astype(np.float32)
        for got, want in ((fd.topk(d, 3, 1), fastops.topk(c, 3, 1)),
                          (fd.cummax(d, 1), fastops.cummax(c, 1)),
                          (fd.cummin(d, 0, method="blelloch"), fastops.cummin(c, 0))):
            v_, i_ = dask.compute(*got)
            same(i_, want[1])
            same(v_, want[0])
        same(fd.nonzero(d).compute(), fastops.nonzero(c))
        same(fd.resize(d, scales=[1.5, 0.5], mode="linear").compute(),
             fastops.resize(c, scales=[1.5, 0.5], mode="linear"))
    same(base, keep)


def test_refusals_name_the_op_and_argument():
    d = da.zeros((4, 6), chunks=2)
    with pytest.raises(ValueError, match=r"topk: k=7 is larger than x.shape\[1\]=6"):
        fd.topk(d, 7)
    with pytest.raises(ValueError, match="topk: k=-1 must be non-negative"):
        fd.topk(d, -1)
    with pytest.raises(TypeError, match="topk: x has dtype bool"):
        fd.topk(d > 0, 1)
    with pytest.raises(ValueError, match="topk: axis=2 is out of range"):
        fd.topk(d, 1, axis=2)
    with pytest.raises(ValueError, match="topk: split_every=1 must be an integer >= 2"):
        fd.topk(d, 1, split_every=1)
    with pytest.raises(ValueError, match="topk: x must have at least 1 dimension"):
        fd.topk(da.from_array(np.float32(1)), 0)
    with pytest.raises(ValueError, match="cummax: x must have at least 1 dimension"):
        fd.cummax(da.from_array(np.float32(1)), 0)
    with pytest.raises(ValueError, match="cummin: method='tree' is not one of"):
        fd.cummin(d, 0, method="tree")
    with pytest.raises(TypeError, match="nonzero: x has dtype <U1"):
        fd.nonzero(da.from_array(np.array(["a", "b"])))
    unknown = d[d[:, 0] > 0]                    # unknown chunk sizes along axis 0
    for fn in (lambda: fd.topk(unknown, 1, 0), lambda: fd.cummax(unknown, 0),
               lambda: fd.nonzero(unknown)):
        with pytest.raises(ValueError, match="compute_chunk_sizes"):
            fn()
    with dask.config.set({"fastops.threads": 0}):
        with pytest.raises(ValueError, match="topk: dask config fastops.threads=0"):
            fd.topk(d, 1)


def test_zero_size_axes():
    x = np.zeros((0, 5), np.float32)
    d = da.from_array(x, chunks=2)
    for got, want in ((fd.topk(d, 2, 1), fastops.topk(x, 2, 1)),
                      (fd.topk(d, 0, 0), fastops.topk(x, 0, 0)),
                      (fd.cummax(d, 0), fastops.cummax(x, 0)),
                      (fd.cummin(d, 1, method="blelloch"), fastops.cummin(x, 1))):
        v, i = dask.compute(*got)
        same(v, want[0])
        same(i, want[1])
    same(fd.resize(d, scales=[2, 2], mode="linear").compute(),
         fastops.resize(x, scales=[2, 2], mode="linear"))


# ------------------------------------------------------------------ threads
def _probe_array(width):
    """A one-layer graph of ``width`` tasks, each reporting its fastops thread count."""
    gr = _graph.Graph("probe")
    name = f"probe-threads-{width}-{_graph.threads_setting('probe')}"
    lay = gr.layer(name)
    for j in range(width):
        gr.task(lay, (name, j), _probe_block, width)
    return gr.array(name, ((1,) * width,), np.empty(0, np.int64))


def _probe_block():
    return np.array([_graph.probe_threads()], dtype=np.int64)


@pytest.fixture
def uncapped():
    """No process-wide fastops.set_num_threads cap during the test (an earlier test or
    benchmark may leave one: set_num_threads has no "unset"), restored afterwards."""
    from fastops import _threads
    fixed, _threads._fixed = _threads._fixed, None
    try:
        yield
    finally:
        _threads._fixed = fixed


def test_task_threads_share_of_cores(threads, uncapped):
    cores = dask.system.CPU_COUNT
    with dask.config.set(num_workers=2):
        got = _probe_array(8).compute()
        assert (got == max(1, cores // 2)).all()
        got = _probe_array(1).compute()                 # one task: every core
        assert (got == cores).all()
    got = _probe_array(4).compute(scheduler="sync")     # the calling thread, alone
    assert (got == cores).all()
    with dask.config.set({"fastops.threads": 3}):
        arr = _probe_array(4)
    assert (arr.compute() == 3).all()                  # fixed when the graph is built
    with threads(1):
        assert (_probe_array(1).compute() == 1).all()   # a process-wide cap still holds


def _unaligned(a):
    """A copy of ``a`` at an odd byte offset (as a pickle-5 buffer can arrive on a worker)."""
    raw = np.empty(a.nbytes + 1, np.uint8)[1:]
    out = raw.view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned or a.itemsize == 1
    return out


def test_tasks_hand_the_kernels_aligned_arrays():
    """Every task body (_graph.call) aligns the arrays it is given, nested in tuples,
    named tuples, lists and dicts, and leaves aligned ones alone (no copy)."""
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    vi = fastops.topk(x, 2)
    args = (_unaligned(x), (_unaligned(x), [_unaligned(x)]), {"t": _unaligned(x)},
            type(vi)(_unaligned(vi.values), vi.indices), x, 3)

    def body(a, nested, d, pair, same, three):
        arrays = [a, nested[0], nested[1][0], d["t"], pair.values, pair.indices, same]
        assert all(v.flags.aligned for v in arrays)
        assert same is x and three == 3 and pair.indices is vi.indices
        assert type(pair) is type(vi) and isinstance(nested[1], list)
        return [np.array_equal(v, w) for v, w in zip(arrays[:5], [x, x, x, x, vi.values])]
    assert all(_graph.call(body, None, 1, *args))


def test_unaligned_chunks_give_the_same_bits():
    rng = np.random.default_rng(5)
    x = _unaligned(rng.standard_normal((6, 40)).astype(np.float32))
    d = da.from_array(x, chunks=(3, 7))
    for got, want in zip(fd.cummax(d, 1).__iter__(), fastops.cummax(x, 1)):
        np.testing.assert_array_equal(got.compute(), want)
    for got, want in zip(fd.topk(d, 5, 1), fastops.topk(x, 5, 1)):
        np.testing.assert_array_equal(got.compute(), want)


def test_task_threads_restore_the_thread():
    before = fastops.get_num_threads()
    with _graph.task_threads(1, 1) as n:
        assert n == 1 and fastops.get_num_threads() == 1
    assert fastops.get_num_threads() == before


# ------------------------------------------------------------------ API surface and meta
def test_public_functions_are_typed_and_documented():
    for name in ("topk", "cummax", "cummin", "nonzero", "non_max_suppression", "roi_align",
                 "resize"):
        fn = getattr(fd, name)
        sig = inspect.signature(fn)
        assert all(p.annotation is not inspect.Parameter.empty
                   for p in sig.parameters.values()), name
        assert sig.return_annotation is not inspect.Signature.empty, name
        assert fn.__doc__ and "bit for bit" in fn.__doc__, name
    sig = inspect.signature(fd.cv.resize)
    assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values())
    assert sig.return_annotation is not inspect.Signature.empty
    assert "bit for bit" in fd.cv.resize.__doc__
    # the single-machine signatures, plus dask's own knobs
    for name, extra in (("topk", {"split_every"}), ("cummax", {"method"}),
                        ("non_max_suppression", {"split_every"}), ("resize", set()),
                        ("roi_align", set())):
        mine = list(inspect.signature(getattr(fd, name)).parameters)
        theirs = list(inspect.signature(getattr(fastops, name)).parameters)
        assert mine[:len(theirs)] == theirs and set(mine[len(theirs):]) == extra, name


def test_meta_follows_the_chunks():
    d = da.from_array(np.zeros((4, 6), np.float16), chunks=2)
    for arr, dt in ((fd.topk(d, 2).values, np.float16), (fd.topk(d, 2).indices, np.int64),
                    (fd.cummax(d, 0).indices, np.int64), (fd.nonzero(d), np.int64),
                    (fd.resize(d, scales=[2, 2]), np.float16)):
        assert type(arr._meta) is np.ndarray and arr.dtype == dt and arr._meta.dtype == dt
    b = da.from_array(np.zeros((2, 3, 4), np.dtype(">f4")), chunks=1)
    assert fd.resize(b, scales=[1, 2, 2]).dtype == np.dtype("float32")


def test_on_device_chunks(xp):
    """CuPy chunks stay CuPy (NumPy on the CPU run): results equal fastops on the same
    arrays, chunk types included."""
    rng = np.random.default_rng(21)
    x = sample(rng, (6, 40), "float32", specials=True)
    d = da.from_array(xp.asarray(x), chunks=(4, 9), asarray=False)
    for got, want in ((fd.topk(d, 5, 1), fastops.topk(xp.asarray(x), 5, 1)),
                      (fd.cummax(d, 1), fastops.cummax(xp.asarray(x), 1))):
        assert isinstance(got.values._meta, xp.ndarray)
        same(to_numpy(got.values.compute()), to_numpy(want.values))
        same(to_numpy(got.indices.compute()), to_numpy(want.indices))
    nz = fd.nonzero(d)
    assert isinstance(nz._meta, xp.ndarray)
    same(to_numpy(nz.compute()), to_numpy(fastops.nonzero(xp.asarray(x))))
    img = xp.asarray(rng.standard_normal((1, 2, 13, 11)).astype(np.float32))
    r = fd.resize(da.from_array(img, chunks=(1, 2, 4, 5), asarray=False), scales=[1, 1, 2, 0.5],
                  mode="cubic")
    assert isinstance(r._meta, xp.ndarray)
    same(to_numpy(r.compute()), to_numpy(fastops.resize(img, scales=[1, 1, 2, 0.5],
                                                        mode="cubic")))


def _blocks(arr, fake):
    """Compute every block (each must be an emulated CuPy array) and assemble on the host
    (dask's own final concatenation turns ndarray subclasses into NumPy)."""
    bl = arr.to_delayed()
    vals = dask.compute(*bl.ravel())
    for v in vals:
        assert isinstance(v, fake), type(v)
    out = np.empty(bl.shape, dtype=object)
    for idx, v in zip(np.ndindex(bl.shape), vals):
        out[idx] = v.get()
    return np.block(out.tolist())


@pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")
def test_emulated_cupy_chunks_stay_on_the_device():
    """Every function on emulated-CuPy chunks (tests/cuda_emu: the real launchers and
    .cu sources): each result block is a (fake) CuPy array equal to the CPU backend.  The
    emulation is not thread-safe across concurrent launches: synchronous scheduler."""
    rng = np.random.default_rng(22)
    x = sample(rng, (8, 30), "float32", specials=True)
    img = rng.standard_normal((2, 3, 14, 11)).astype(np.float32)
    boxes, scores = _detections(rng, B=3, N=8, C=2)
    rois = np.array([[0, 1, 1, 10, 12], [1, 0, 3, 5, 9], [1, 2, 2, 9, 10]], np.float32)
    frames = rng.integers(0, 256, (3, 12, 14, 3)).astype(np.uint8)
    before = sys.modules.get("cupy")
    with cuda_emu.emulated_cupy() as cp, dask.config.set(scheduler="sync"):
        F = cp.ndarray

        def dev(a, chunks):
            return da.from_array(cp.asarray(a), chunks=chunks, asarray=False)
        d = dev(x, (4, (7, 1, 22)))
        for got, want in ((fd.topk(d, 3, 1), fastops.topk(x, 3, 1)),
                          (fd.cummax(d, 1, method="blelloch"), fastops.cummax(x, 1)),
                          (fd.cummin(d, 0), fastops.cummin(x, 0))):
            assert isinstance(got.values._meta, F)
            same(_blocks(got.indices, F), want.indices)
            same(_blocks(got.values, F), want.values)
        same(_blocks(fd.nonzero(dev(x > 0.5, (2, 30))), F), fastops.nonzero(x > 0.5))
        same(_blocks(fd.resize(dev(img, (1, 3, 5, 6)), scales=[1, 1, 1.5, 0.7],
                               mode="linear"), F),
             fastops.resize(img, scales=[1, 1, 1.5, 0.7], mode="linear"))
        same(_blocks(fd.roi_align(dev(img, (1, 2, 14, 11)), rois, 3), F),
             fastops.roi_align(img, rois, 3))
        same(_blocks(fd.non_max_suppression(dev(boxes, (1, 8, 4)), dev(scores, (1, 2, 8)),
                                            3, 0.4), F),
             fastops.non_max_suppression(boxes, scores, 3, 0.4, pad=True))
        if HAVE_CV and importlib.util.find_spec("fastops._gpu.cv_resize") is not None:
            same(_blocks(fd.cv.resize(dev(frames, (2, 12, 14, 3)), (7, 5)), F),
                 np.stack([fastops.cv.resize(f, (7, 5)) for f in frames]))
    assert sys.modules.get("cupy") is before


# ------------------------------------------------------------------ dask.distributed
@pytest.fixture(scope="module")
def cluster_client():
    """A real LocalCluster: 2 worker processes of 1 thread (started and closed here)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def test_local_cluster_every_function(cluster_client):
    """All functions on worker processes (one small graph each, computed together)."""
    rng = np.random.default_rng(23)
    x = sample(rng, (6, 41), "float32", specials=True)
    d = da.from_array(x, chunks=(4, (10, 1, 1, 20, 9)))
    img = (rng.standard_normal((2, 2, 15, 13)) * 30).astype(np.float32)
    boxes, scores = _detections(rng, B=5, N=10, C=2)
    fx, rois = _features_rois(rng, N=4, C=2, H=8, W=9, K=11, sort=False)
    frames = rng.integers(0, 256, (4, 10, 12, 3)).astype(np.uint8)
    with cluster_client.as_current():
        nz = fd.nonzero(da.from_array(x > 0, chunks=(1, 41)))   # counts on the cluster
        outs = [*fd.topk(d, 4, 1), *fd.topk(d, 3, 0, largest=False, sorted=False),
                *fd.cummax(d, 1), *fd.cummin(d, 1, method="blelloch"), nz,
                fd.resize(da.from_array(img, chunks=(1, 2, 4, 5)), scales=[1, 1, 1.6, 0.7],
                          mode="cubic"),
                fd.non_max_suppression(da.from_array(boxes, chunks=2), scores, 3, 0.3),
                fd.roi_align(da.from_array(fx, chunks=(1, 1, 8, 9)), rois, 2, 1.0, 2)]
        if HAVE_CV:
            outs.append(fd.cv.resize(da.from_array(frames, chunks=3), (7, 6),
                                     interpolation=2))
        futures = cluster_client.compute(outs)
        # a worker lost for good (killed from outside) must fail the test, not hang CI
        pytest.importorskip("distributed").wait(futures, timeout=240)
        got = cluster_client.gather(futures)
    want = [*fastops.topk(x, 4, 1), *fastops.topk(x, 3, 0, largest=False, sorted=False),
            *fastops.cummax(x, 1), *fastops.cummin(x, 1), fastops.nonzero(x > 0),
            fastops.resize(img, scales=[1, 1, 1.6, 0.7], mode="cubic"),
            fastops.non_max_suppression(boxes, scores, 3, 0.3, pad=True),
            fastops.roi_align(fx, rois, 2, 1.0, 2)]
    if HAVE_CV:
        want.append(np.stack([fastops.cv.resize(f, (7, 6), interpolation=2)
                              for f in frames]))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        same(a, b)


def test_local_cluster_task_threads(cluster_client):
    """Both workers share this host: a task gets cores // 2 threads (cores for a layer of
    one task), the nanny's OMP_NUM_THREADS=1 notwithstanding."""
    cores = dask.system.CPU_COUNT
    wide, narrow = cluster_client.gather(cluster_client.compute([_probe_array(6),
                                                                 _probe_array(1)]))
    assert (wide == max(1, cores // 2)).all()
    assert (narrow == cores).all()
