"""scatter, scatter_elements, scatter_nd, gather_elements, gather_nd.

References: the ONNX backend node test data (onnx==1.22.0 wheel), onnx.reference,
NumPy (put/take_along_axis, fancy indexing, ufunc.at) and the slow loops in
tests/reference/scatter.py.
"""
import glob
import importlib
import os

import numpy as np
import pytest

import fastops
from tests.conftest import peer, to_numpy
from tests.reference import scatter as ref

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64"]
REDUCTIONS = ["none", "add", "mul", "max", "min"]


def _rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)


def _same(a, b):
    """Bit-level equality (NaN == NaN), with a clear failure message."""
    a, b = to_numpy(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------- ONNX backend node data
def _node_dirs():
    try:
        import onnx
    except ImportError:
        return []
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    pats = ["test_scatter_*", "test_scatter_elements*", "test_scatternd*",
            "test_gather_elements*", "test_gathernd*"]
    dirs = sorted({d for p in pats for d in glob.glob(os.path.join(root, p))})
    return [d for d in dirs if os.path.isdir(os.path.join(d, "test_data_set_0"))]


def _load_case(d):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(os.path.join(d, "model.onnx"))
    node = model.graph.node[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    ds = os.path.join(d, "test_data_set_0")
    read = lambda f: numpy_helper.to_array(onnx.load_tensor(f))  # noqa: E731
    ins = [read(f) for f in sorted(glob.glob(os.path.join(ds, "input_*.pb")))]
    outs = [read(f) for f in sorted(glob.glob(os.path.join(ds, "output_*.pb")))]
    return node.op_type, attrs, ins, outs


def _run_onnx_op(op_type, attrs, ins):
    if op_type in ("Scatter", "ScatterElements"):
        red = attrs.get("reduction", "none")
        if op_type == "Scatter":
            return fastops.scatter(*ins, axis=attrs.get("axis", 0))
        return fastops.scatter_elements(*ins, axis=attrs.get("axis", 0), reduction=red)
    if op_type == "ScatterND":
        return fastops.scatter_nd(*ins, reduction=attrs.get("reduction", "none"))
    if op_type == "GatherElements":
        return fastops.gather_elements(*ins, axis=attrs.get("axis", 0))
    if op_type == "GatherND":
        return fastops.gather_nd(*ins, batch_dims=attrs.get("batch_dims", 0))
    raise AssertionError(op_type)


@pytest.mark.parametrize("case", _node_dirs(), ids=os.path.basename)
def test_onnx_backend_node_data(case, xp):
    op_type, attrs, ins, outs = _load_case(case)
    got = _run_onnx_op(op_type, attrs, [xp.asarray(a) for a in ins])
    _same(got, outs[0])


def test_onnx_backend_node_data_found():
    names = {os.path.basename(d) for d in _node_dirs()}
    peer("onnx")
    assert {"test_scatter_with_axis", "test_scatter_elements_with_reduction_max",
            "test_scatternd_multiply", "test_gather_elements_negative_indices",
            "test_gathernd_example_int32_batch_dim1"} <= names


# ------------------------------------------------------------------- onnx.reference
def _onnx_ref(op_type, inputs, **attrs):
    onnx = peer("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    names = [f"x{i}" for i in range(len(inputs))]
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in zip(names, inputs)]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)
    node = helper.make_node(op_type, names, ["y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "g", vi, [out]),
                              opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_vs_onnx_reference(reduction, axis, xp):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((4, 5, 6)).astype(np.float32)
    shape = [3, 4, 5]
    n = data.shape[axis]
    if reduction == "none":   # unique along the axis: ONNX leaves duplicates undefined
        shape[axis] = n
        idx = np.argsort(rng.random(shape), axis=axis) - n * (rng.random(shape) < 0.3)
    else:
        idx = rng.integers(-n, n, shape)
    upd = rng.standard_normal(shape).astype(np.float32)
    expect = _onnx_ref("ScatterElements", [data, idx, upd], axis=axis, reduction=reduction)
    got = fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), axis,
                                   reduction)
    _same(got, expect)      # float add/mul run in row-major order on the GPU too


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd_vs_onnx_reference(reduction, k, xp):
    rng = np.random.default_rng(2)
    data = rng.integers(-50, 50, (5, 4, 3)).astype(np.int32)
    dims = np.array(data.shape[:k])
    if reduction == "none":   # distinct tuples
        flat = rng.permutation(int(np.prod(dims)))[:4]
        idx = np.stack(np.unravel_index(flat, dims), axis=-1).reshape(2, 2, k)
        idx = idx - dims * (rng.random(idx.shape) < 0.3)
    else:
        idx = rng.integers(-dims, dims, (2, 3, k))
    upd = rng.integers(-5, 5, idx.shape[:-1] + data.shape[k:]).astype(np.int32)
    if reduction in ("max", "min") and k > 1:
        # onnx.reference bug: its max/min index with `output[indices[i]]` (an array, not
        # a tuple), which selects whole rows when k > 1; use the slow loop instead
        expect = ref.scatter_nd(data, idx, upd, reduction)
    else:
        expect = _onnx_ref("ScatterND", [data, idx, upd], reduction=reduction)
    got = fastops.scatter_nd(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), reduction)
    _same(got, expect)


@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_gather_elements_vs_onnx_reference(axis, xp):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5, 6))
    shape = list(data.shape)
    shape[axis] = 7
    n = data.shape[axis]
    idx = rng.integers(-n, n, shape).astype(np.int32)
    _same(fastops.gather_elements(xp.asarray(data), xp.asarray(idx), axis),
          _onnx_ref("GatherElements", [data, idx], axis=axis))


@pytest.mark.parametrize("layout", ["contiguous", "strided data", "smaller indices"])
def test_gather_elements_long_rows_on_threads(layout):
    """Rows longer than one task's span (kGatherSpan, 4096 columns) on the pool's threads,
    with negative indices and every layout the kernel tells apart, against NumPy."""
    rng = np.random.default_rng(31)
    data = rng.standard_normal((6, 9000)).astype(np.float32)
    if layout == "strided data":
        data = np.asfortranarray(data)[:, ::-1]
    idx = rng.integers(-6, 6, (40, 9000 if layout != "smaller indices" else 8999))
    expect = np.take_along_axis(data[:, :idx.shape[1]], np.where(idx < 0, idx + 6, idx), 0)
    _same(fastops.gather_elements(data, idx, 0), expect)


@pytest.mark.parametrize("dtype", ["int16", "float32", "float64"])
def test_gather_elements_short_last_axis_rows(dtype, threads):
    """Last-axis rows of at most 16 KiB (the next row's lines prefetched over this one's
    steps, include/scatter.hpp SpreadLines): index rows of one span and of two (past
    kGatherSpan, 4096), the data row exactly 16 KiB and just past it, 1-2 threads,
    negative indices, against NumPy; a bad index late in a long row is named."""
    rng = np.random.default_rng(57)
    row = 16384 // np.dtype(dtype).itemsize
    for n_axis, width in ((row, 500), (row, 5000), (row + 1, 300), (1000, 4097), (37, 9)):
        data = rng.integers(-100, 100, (23, n_axis)).astype(dtype)
        idx = rng.integers(-n_axis, n_axis, (23, width))
        want = np.take_along_axis(data, idx % n_axis, 1)
        for n in (1, 2):
            with threads(n):
                np.testing.assert_array_equal(fastops.gather_elements(data, idx, 1), want,
                                              err_msg=f"{n_axis} {width}")
    idx = np.zeros((5, 5000), np.int64)
    idx[3, 4500] = row
    with pytest.raises(IndexError, match=rf"indices\[3, 4500\] = {row}"):
        fastops.gather_elements(np.zeros((5, row), dtype), idx, 1)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "float32", "float64"])
def test_gather_elements_short_rows_bits_and_bad_lanes(dtype, threads):
    """The last axis with index rows shorter than kFlatRow (scatter.hpp gather_rows_avx2
    on the x86-64-v3 build: 8 offsets per step, elements read by scalar loads, 4- and
    8-byte ones put together in float vector registers): every bit pattern comes back
    unchanged (signalling and quiet NaN payloads, -0.0, integers whose bits are NaNs),
    and a bad index in any lane of a step is the one named, 1-2 threads."""
    rng = np.random.default_rng(77)
    item = np.dtype(dtype).itemsize
    bits = rng.integers(0, 256, (3000, 40 * item), dtype=np.uint8)
    special = {8: [0x7FF0000000000001, 0xFFF8000000000123, 0x8000000000000000,
                   0x7FF4000000000000], 4: [0x7F800001, 0xFFC00123, 0x80000000, 0x7FA00000]}
    data = bits.view(dtype)
    if item in special:
        u = data.view(f"u{item}")
        u[:, :4] = np.array(special[item], f"u{item}")
    idx = rng.integers(-40, 40, (3000, 5))
    idx[::3, 0] = rng.integers(0, 4, 1000)    # the special patterns
    want = np.take_along_axis(data, np.where(idx < 0, idx + 40, idx), 1)
    for n in (1, 2):
        with threads(n):
            got = fastops.gather_elements(data, idx, 1)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    for lane in range(8):
        bad = idx.copy()
        pos = 1600 + lane                      # a step of 8 from position 1600 (320 rows)
        bad.flat[pos] = 40 if lane % 2 else -41
        bad[2500, 1] = 99
        r, c = divmod(pos, 5)
        with pytest.raises(IndexError, match=rf"indices\[{r}, {c}\] = {bad.flat[pos]}"):
            fastops.gather_elements(data, bad, 1)


def test_gather_elements_names_the_first_bad_index_whatever_the_threads():
    """Bad indices in several tasks: the error names the lowest position (row-major),
    not the one the fastest thread found first."""
    data = np.zeros((5, 9000), np.float32)
    idx = np.zeros((64, 9000), np.int64)
    idx[63, 0] = 5
    idx[40, 8999] = -6
    idx[7, 5000] = 99          # second span of row 7: the lowest position
    for _ in range(5):
        with pytest.raises(IndexError, match=r"indices\[7, 5000\] = 99"):
            fastops.gather_elements(data, idx, 0)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements_blocks_copy_their_own_part(reduction, threads):
    """Where the column blocks tile the new output (indices of data's shape outside the
    axis) each task copies its block before scattering into it; elsewhere the copy is a
    pass of its own.  Both, for several axes and block counts, 1-3 threads, against
    NumPy's row-major ufunc.at; data is untouched."""
    rng = np.random.default_rng(17)
    data = rng.standard_normal((3, 50, 2100)).astype(np.float32)
    keep = data.copy()
    for axis, shape in ((1, (3, 20, 2100)), (1, (2, 20, 2100)), (1, (3, 20, 1500)),
                        (0, (7, 50, 2100)), (2, (3, 50, 9)), (2, (3, 50, 4000))):
        idx = rng.integers(-data.shape[axis], data.shape[axis], shape)
        upd = rng.standard_normal(shape).astype(np.float32)
        want = _numpy_scatter_elements(data, idx, upd, axis, reduction)
        for n in (1, 2, 3):
            with threads(n):
                got = fastops.scatter_elements(data, idx, upd, axis, reduction)
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(data, keep)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_scatter_elements_l2_tiles(reduction, dtype, threads):
    """A new output whose blocks the tasks tile goes through per-thread L2 tiles of
    whole lines (scatter.hpp scatter_elements_tiles): rows that are not whole lines, so
    a tile starts mid-line in most rows; the tallest axis whose two-line tile still fits
    (256 KiB / 128 bytes = 2048 rows) and one row more (no tile: the updates land in the
    output); axis -1 (a contiguous block); duplicates, negative indices and 1-3 threads,
    against NumPy's row-major ufunc.at."""
    rng = np.random.default_rng(23)
    cases = [((1000, 37), 0, (300, 37)), ((1000, 1003), 0, (700, 1003)),
             ((2048, 40), 0, (500, 40)), ((2049, 40), 0, (500, 40)),
             ((3, 700, 45), 1, (3, 900, 45)), ((60, 333), 1, (60, 50))]
    for shape, axis, ishape in cases:
        data = (rng.standard_normal(shape) * 20).astype(dtype)
        keep = data.copy()
        n = shape[axis]
        idx = rng.integers(-n, n, ishape)
        upd = (rng.standard_normal(ishape) * 20).astype(dtype)
        want = _numpy_scatter_elements(data, idx, upd, axis, reduction)
        for nt in (1, 2, 3):
            with threads(nt):
                got = fastops.scatter_elements(data, idx, upd, axis, reduction)
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} axis {axis}, {nt} threads")
        np.testing.assert_array_equal(data, keep)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_elements_names_the_first_bad_index_whatever_the_threads(threads, reduction):
    """A new output is checked while the updates are applied, in column blocks on the
    pool's threads: the error still names the lowest position (row-major), the inputs
    are untouched, and the in-place path (fastops.onnx.Session) writes nothing."""
    from fastops.scatter import _scatter_elements
    data = np.arange(5 * 9000, dtype=np.float32).reshape(5, 9000)
    idx = np.zeros((64, 9000), np.int64)
    upd = np.ones((64, 9000), np.float32)
    idx[63, 0] = 5
    idx[40, 8999] = -6
    idx[7, 5000] = 99          # a later column block than row 40's: the lowest position
    before = data.copy(), idx.copy(), upd.copy()
    for n in (1, 2, 3):
        with threads(n):
            with pytest.raises(IndexError, match=r"indices\[7, 5000\] = 99"):
                fastops.scatter_elements(data, idx, upd, 0, reduction)
            with pytest.raises(IndexError, match=r"indices\[7, 5000\] = 99"):
                _scatter_elements("scatter_elements", data, idx, upd, 0, reduction,
                                  in_place=True)
    for a, b in zip((data, idx, upd), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_elements_vector_steps(dtype, index_dtype, threads):
    """Unit-stride rows take 8 indices per step on the x86-64-v3 build (AVX2 gathers of
    4- and 8-byte elements, prefetching 32 ahead) and the scalar span elsewhere: rows of
    1-41 and 4100 elements, negative indices, 1-2 threads, against NumPy; a bad index in
    any lane of a step is the one named, and the rest of the row is still checked."""
    rng = np.random.default_rng(9)
    for width in (1, 7, 8, 9, 33, 41, 4100):
        data = rng.integers(-100, 100, (61, width)).astype(dtype)
        idx = rng.integers(-61, 61, (37, width)).astype(index_dtype)
        want = np.take_along_axis(data, idx.astype(np.int64) % 61, 0)
        for n in (1, 2):
            with threads(n):
                np.testing.assert_array_equal(fastops.gather_elements(data, idx, 0), want)
    data = np.zeros((61, 48), dtype)
    for lane in range(8):
        idx = np.zeros((3, 48), index_dtype)
        idx[1, 16 + lane] = 61 if lane % 2 else -62
        idx[2, 0] = 99
        with pytest.raises(IndexError, match=rf"indices\[1, {16 + lane}\] = {idx[1, 16 + lane]}"):
            fastops.gather_elements(data, idx, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_elements_flat_steps(dtype, index_dtype, threads):
    """Index rows of 1-15 elements before the last axis walk flat: on the x86-64-v3 build
    8 positions a step (scatter.hpp gather_flat_avx2) for 4- and 8-byte elements, a step
    that crosses into the next outer slice or holds a bad index through the scalar walk.
    Slices of m * In positions that are and are not multiples of 8, data whose outer and
    inner dimensions are strided views, slices with their next slice prefetched
    (SpreadLines), negative indices, 1-2 threads, against NumPy; a bad index in each lane
    of a step and on both sides of a crossing is the one named."""
    rng = np.random.default_rng(31)
    for In in (1, 2, 3, 5, 8, 12, 15):
        for m in (3, 8, 13):
            data = rng.integers(-100, 100, (9, 50, In)).astype(dtype)
            idx = rng.integers(-50, 50, (9, m, In)).astype(index_dtype)
            want = np.take_along_axis(data, idx.astype(np.int64) % 50, 1)
            for n in (1, 2):
                with threads(n):
                    np.testing.assert_array_equal(fastops.gather_elements(data, idx, 1), want,
                                                  err_msg=f"In {In} m {m}")
    big = rng.integers(-100, 100, (6, 7, 40, 8, 3)).astype(dtype)
    view = big[:, 1:6, :, ::2, :]   # outer (6, 5) and inner (4, 3) dimensions strided
    idx = rng.integers(-40, 40, (6, 5, 7, 4, 3)).astype(index_dtype)
    want = np.take_along_axis(view, idx.astype(np.int64) % 40, 2)
    for n in (1, 2):
        with threads(n):
            np.testing.assert_array_equal(fastops.gather_elements(view, idx, 2), want)
    data = np.zeros((4, 50, 2), dtype)
    for lane in range(8):
        idx = np.zeros((4, 8, 2), index_dtype)   # slices of 16: positions 16-23 one step
        idx.flat[16 + lane] = 50 if lane % 2 else -51
        idx[3, 0, 0] = 99
        where = ", ".join(map(str, np.unravel_index(16 + lane, idx.shape)))
        with pytest.raises(IndexError, match=rf"indices\[{where}\] = {idx.flat[16 + lane]}"):
            fastops.gather_elements(data, idx, 1)
    data = np.zeros((4, 50, 3), dtype)
    for pos in (13, 15):   # slices of 15: the step of positions 8-15 crosses at 15
        idx = np.zeros((4, 5, 3), index_dtype)
        idx.flat[pos] = 77
        idx[3, 0, 0] = 99
        where = ", ".join(map(str, np.unravel_index(pos, idx.shape)))
        with pytest.raises(IndexError, match=rf"indices\[{where}\] = 77"):
            fastops.gather_elements(data, idx, 1)


# (data shape, indices shape, axis): the last axis with rows of 1-41 indices (row
# walks of 2-15 as one flat walk, longer ones as spans), 1-D arrays, a short trailing
# extent (2, 5) and the position count not a multiple of 8; rows of 3, 6, 8, 12 and 13
# indices in walks long enough for threads, whose chunks start inside a row and inside
# the AVX2 walk's period of lcm(8, row) positions; trailing extents 2 and 3 under slices
# of a few lines with many positions each (the flat walk streams the next slice's lines),
# in chunks that start inside a slice
SHORT_ROWS = [((300, 80), (300, 5), 1), ((300, 80), (300, 1), 1), ((70, 40), (70, 15), 1),
              ((70, 40), (70, 16), 1), ((33, 50), (33, 41), 1), ((5000,), (20001,), 0),
              ((9,), (4,), 0), ((4, 300, 2), (4, 77, 2), 1), ((200, 5), (333, 5), 0),
              ((3, 1, 90), (3, 1, 7), 2), ((8400, 80), (8400, 5), 1),
              ((5001, 20), (5001, 3), 1), ((3001, 30), (3001, 6), 1),
              ((2999, 30), (2999, 8), 1), ((2001, 40), (2001, 12), 1),
              ((1999, 40), (1999, 13), 1), ((61, 100, 2), (61, 150, 2), 1),
              ((40, 33, 3), (40, 70, 3), 1)]


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32", "float64"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided data"])
def test_elements_short_rows(dtype, index_dtype, layout, threads):
    """Index rows shorter than a line (the last axis: one walk over the slices, AVX2
    gathers where each lane carries its own row; a short trailing extent: one flat walk)
    against NumPy, 1-3 threads, negative indices, strided data; scatter_elements' last
    axis (one span per slice, in order: duplicates resolve row-major)."""
    rng = np.random.default_rng(41)
    for shape, ishape, axis in SHORT_ROWS:
        data = rng.integers(-100, 100, shape).astype(dtype)
        if layout == "strided data":
            data = np.flip(np.asfortranarray(data), axis=-1)
        n = shape[axis]
        idx = rng.integers(-n, n, ishape).astype(index_dtype)
        pos = np.where(idx < 0, idx + n, idx).astype(np.int64)
        upd = rng.integers(-100, 100, ishape).astype(dtype)
        same_rest = ishape[:axis] == shape[:axis] and ishape[axis + 1:] == shape[axis + 1:]
        gwant = np.take_along_axis(data, pos, axis) if same_rest else None
        # (duplicates along a shared target resolve in any order with "none": see below)
        swant = {red: _numpy_scatter_elements(data, idx, upd, axis, red)
                 for red in (("none", "add") if same_rest else ("add",))}
        for nt in (1, 2, 3):
            with threads(nt):
                if gwant is not None:
                    np.testing.assert_array_equal(fastops.gather_elements(data, idx, axis),
                                                  gwant, err_msg=f"{shape} {ishape}")
                for red, want in swant.items():
                    np.testing.assert_array_equal(
                        fastops.scatter_elements(data, idx, upd, axis, red), want,
                        err_msg=f"{shape} {ishape} {red}")


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided data"])
def test_scatter_elements_long_slices(dtype, layout, threads):
    """Last-axis slices larger than a core's L2 (9 MiB here, above any L2 the kernel may
    read from sysconf) are bucketed by target chunk, each part of the updates appending
    to its chains, then applied chunk by chunk, part after part: into a tile copied from
    data and streamed out (contiguous data) or in the output (strided data, copied
    first).  Every reduction against NumPy's ufunc.at in row-major order (random floats:
    the sums are exact only in that order), hot duplicated targets (a slice's end, the
    middle, a chunk's first row), negative indices, 1-3 threads, one slice and two; short
    slices beside them take the cached path.  The first bad index is named whatever the
    part it falls in, and nothing is returned."""
    rng = np.random.default_rng(43)
    n = (9 << 20) // np.dtype(dtype).itemsize + 7
    for shape, ishape in [((n,), (50_003,)), ((2, n), (2, 30_001)), ((4, 1000), (4, 9000))]:
        data = _rand(rng, shape, dtype)
        if layout == "strided data":
            data = np.flip(data, axis=-1)
        size = shape[-1]
        idx = rng.integers(-size, size, ishape)
        idx[..., ::7] = -1                   # a hot target at each slice's end
        idx[..., 3::11] = size // 2          # one in the middle
        idx[..., 5::13] = (1 << 16) % size   # and one at a chunk's first row
        upd = _rand(rng, ishape, dtype)
        for reduction in REDUCTIONS:
            want = _numpy_scatter_elements_fast(data, idx, upd, reduction)
            for nt in (1, 2, 3):
                with threads(nt):
                    got = fastops.scatter_elements(data, idx, upd, -1, reduction)
                np.testing.assert_array_equal(got, want, err_msg=f"{shape} {reduction} {nt}")
    data = np.zeros(n, np.float32)
    idx = np.zeros(40_000, np.int64)
    idx[30_000:] = n
    idx[25_001] = -n - 1
    idx[5] = 0
    for nt in (1, 2, 3):
        with threads(nt):
            with pytest.raises(IndexError, match=rf"indices\[25001\] = {-n - 1}"):
                fastops.scatter_elements(data, idx, np.ones(40_000, np.float32), 0, "add")
    assert not data.any()


def test_scatter_elements_long_slices_layouts(threads):
    """The bucketed path on the other layouts of a long slice: strided targets (axis 0
    of (n, 3) data with indices (m, 1)), slices placed by an offset table (indices
    smaller than data outside the axis), and more updates than one round of buckets
    (2^20), where the later rounds apply in the output."""
    rng = np.random.default_rng(47)
    n = 3 << 20
    cases = [(rng.standard_normal((n, 3)).astype(np.float32), (200_001, 1), 0),
             (rng.standard_normal((2, 3, n // 2)).astype(np.float32), (2, 2, 90_001), 2),
             (rng.standard_normal(n).astype(np.float32), ((1 << 20) * 2 + 123,), 0)]
    for data, ishape, axis in cases:
        size = data.shape[axis]
        idx = rng.integers(-size, size, ishape)
        upd = rng.standard_normal(ishape).astype(np.float32)
        for reduction in ("none", "add"):
            want = _numpy_scatter_elements(data, idx, upd, axis, reduction)
            for nt in (1, 2):
                with threads(nt):
                    got = fastops.scatter_elements(data, idx, upd, axis, reduction)
                np.testing.assert_array_equal(got, want, err_msg=f"{ishape} {reduction} {nt}")


def _numpy_scatter_elements_fast(data, idx, upd, reduction):
    """scatter_elements along the last axis by NumPy: ufunc.at in row-major order, and
    for "none" the last update of each target (np.unique on the reversed positions)."""
    out = data.copy()
    size = data.shape[-1]
    for o in np.ndindex(*idx.shape[:-1]):
        pos, u = idx[o] % size, upd[o]
        if reduction == "none":
            targets, last = np.unique(pos[::-1], return_index=True)
            out[o][targets] = u[::-1][last]
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                _UFUNC_AT[reduction].at(out[o], pos, u)
    return out


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_elements_short_rows_name_the_first_bad_index(index_dtype, threads):
    """A bad index in any lane of a vector step, in a scalar tail or in the flat walk of
    a short trailing extent: the lowest position is named whatever the threads, and the
    inputs are untouched."""
    for shape, ishape, axis in [((3000, 80), (3000, 5), 1), ((1000, 300, 2), (1000, 7, 2), 1),
                                ((300, 40, 2), (300, 60, 2), 1), ((50000,), (40003,), 0)]:
        data = np.zeros(shape, np.float32)
        n = shape[axis]
        count = int(np.prod(ishape))
        for first in (count // 3 + 5, count // 2 + 3, count - 1):
            flat = np.zeros(count, index_dtype)
            flat[first + 1:] = -n - 5          # later positions bad too
            flat[first] = n if first % 2 else -n - 1
            idx = flat.reshape(ishape)
            where = ", ".join(str(int(c)) for c in np.unravel_index(first, ishape))
            upd = np.ones(ishape, np.float32)
            for nt in (1, 2):
                with threads(nt):
                    with pytest.raises(IndexError, match=rf"indices\[{where}\] = {flat[first]}"):
                        fastops.gather_elements(data, idx, axis)
                    with pytest.raises(IndexError, match=rf"indices\[{where}\] = {flat[first]}"):
                        fastops.scatter_elements(data, idx, upd, axis, "add")
            assert not data.any()


@pytest.mark.parametrize("dtype,itype", [(np.int8, np.int64), (np.float32, np.int64),
                                         (np.float32, np.int32), (np.float64, np.int64),
                                         (np.float64, np.int32)])
def test_gather_elements_column_strips(dtype, itype, threads):
    """Many index rows over a slab of many long data rows (> 8 MiB, the lines read
    several times) walk column strips of one line per data row: element widths 1-8
    bytes, int64 and int32 indices, data starting inside a line and with rows a
    line-crossing length apart (a column slice of a wider array), outer slices (axis 1
    of 3-d data), negative indices, 1-3 threads, against NumPy; bad indices in the first
    strip, the last strip and (the lowest) inside a full strip's row (unrolled, or for
    4-byte elements 8 lanes a step on the x86-64-v3 build): the lowest position is
    named."""
    rng = np.random.default_rng(23)
    w = 64 // np.dtype(dtype).itemsize
    n, In = 320, (8 << 20) // (320 * np.dtype(dtype).itemsize) + 3 * w + 5
    m = 2 * n // w + 3
    wide = rng.integers(-100, 100, (n, In + 7)).astype(dtype)
    for data in (wide[:, :In], wide[:, 3:In + 3], np.ascontiguousarray(wide[:, 1:In + 1])):
        idx = rng.integers(-n, n, (m, In)).astype(itype)
        want = np.take_along_axis(data, idx % n, 0)
        for k in (1, 2, 3):
            with threads(k):
                np.testing.assert_array_equal(fastops.gather_elements(data, idx, 0), want)
    data3 = rng.integers(-100, 100, (2, n, In)).astype(dtype)
    idx3 = rng.integers(-n, n, (2, m, In)).astype(itype)
    want3 = np.take_along_axis(data3, idx3 % n, 1)
    with threads(2):
        np.testing.assert_array_equal(fastops.gather_elements(data3, idx3, 1), want3)
    idx = rng.integers(0, n, (m, In)).astype(itype)
    idx[m - 2, 5] = n
    idx[4, In - 2] = n + 7
    idx[3, In // 2] = -n - 1   # inside a full strip (its unrolled row)
    for k in (1, 2, 3):
        with threads(k):
            with pytest.raises(IndexError, match=rf"indices\[3, {In // 2}\] = {-n - 1}"):
                fastops.gather_elements(wide[:, :In], idx, 0)


def test_gather_nd_rows_ahead_on_threads(threads):
    """Rows are prefetched 32 ahead of their copy (one index per row: resolved twice;
    deeper tuples: a ring): chunks of every length around that distance, rows of 1-40
    elements, 1-3 threads, against NumPy; a bad tuple far into a later chunk and one at
    a ring boundary, at depth 1 and 2: the lowest is named."""
    rng = np.random.default_rng(21)
    for S in (1, 3, 16, 40):
        data = rng.standard_normal((997, S)).astype(np.float32)
        for N in (1, 31, 32, 33, 65, 20_000):
            idx = rng.integers(-997, 997, (N, 1))
            want = data[idx[:, 0]]
            for n in (1, 2, 3):
                with threads(n):
                    np.testing.assert_array_equal(fastops.gather_nd(data, idx), want)
    idx = rng.integers(0, 997, (20_000, 2)) % [997, 3]
    idx[15_000, 1] = 3
    idx[64, 0] = -998
    for n in (1, 2, 3):
        with threads(n):
            with pytest.raises(IndexError, match=r"indices\[64, 0\] = -998"):
                fastops.gather_nd(data.reshape(997, 40)[:, :3].copy(), idx)
            with pytest.raises(IndexError, match=r"indices\[64, 0\] = -998"):
                fastops.gather_nd(data, idx[:, :1])


def test_gather_nd_every_row_copy_and_batches_across_chunks(threads):
    """Rows of 1-128 bytes (powers of two) are copied at a size fixed at compile time and
    the rest by memcpy: every such size, and odd ones, against NumPy.  The batch of each
    row is carried from row to row: batches of 1, 2 and 3001 tuples, so that 1-3 threads'
    chunks start inside a batch and cross many."""
    rng = np.random.default_rng(22)
    for dtype, sizes in (("uint8", (1, 2, 3, 4, 8, 16, 32, 64, 128, 256)),
                         ("float16", (1, 3, 64, 65)), ("float64", (1, 2, 5, 16, 17))):
        for S in sizes:
            data = rng.integers(0, 100, (301, S)).astype(dtype)
            idx = rng.integers(-301, 301, (5000, 1))
            for n in (1, 2, 3):
                with threads(n):
                    np.testing.assert_array_equal(fastops.gather_nd(data, idx), data[idx[:, 0]])
    for B, R, per in ((7, 50, 3001), (20_000, 4, 1), (10_000, 4, 2)):   # (threaded sizes)
        data = rng.standard_normal((B, R, 16)).astype(np.float32)
        idx = rng.integers(-R, R, (B, per, 1))
        want = data[np.arange(B)[:, None], idx[..., 0]]
        for n in (1, 2, 3):
            with threads(n):
                np.testing.assert_array_equal(fastops.gather_nd(data, idx, batch_dims=1), want)


@pytest.mark.parametrize("batch_dims,k", [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1)])
def test_gather_nd_vs_onnx_reference(batch_dims, k, xp):
    rng = np.random.default_rng(4)
    data = rng.standard_normal((3, 4, 5)).astype(np.float32)
    dims = np.array(data.shape[batch_dims:batch_dims + k])
    idx = rng.integers(-dims, dims, data.shape[:batch_dims] + (2, k))
    _same(fastops.gather_nd(xp.asarray(data), xp.asarray(idx), batch_dims),
          _onnx_ref("GatherND", [data, idx], batch_dims=batch_dims))


# ------------------------------------------------------ every dtype, NumPy references
_UFUNC_AT = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
_BOOL_AT = {"add": np.logical_or, "mul": np.logical_and, "max": np.logical_or,
            "min": np.logical_and}


def _numpy_scatter_elements(data, idx, upd, axis, reduction):
    """NumPy ufunc.at in row-major order; float16 computed in float32 (the contract)."""
    comp = np.float32 if data.dtype == np.float16 else data.dtype
    out = data.astype(comp)
    grids = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    if reduction == "none":
        return ref.scatter_elements(data, idx, upd, axis, "none")
    ufunc = (_BOOL_AT if data.dtype == np.bool_ else _UFUNC_AT)[reduction]
    with np.errstate(over="ignore"):
        ufunc.at(out, tuple(grids), upd.astype(comp))
    return out.astype(data.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_elements_every_dtype(dtype, reduction, index_dtype, xp):
    rng = np.random.default_rng(5)
    data = _rand(rng, (6, 40), dtype)
    idx = rng.integers(-6, 6, (9, 40)).astype(index_dtype)   # many duplicates
    upd = _rand(rng, (9, 40), dtype)
    expect = _numpy_scatter_elements(data, idx, upd, 0, reduction)
    got = fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), 0,
                                   reduction)
    if xp is not np and reduction == "none":   # GPU: one of the duplicates wins
        assert to_numpy(got).dtype == data.dtype
        return
    if xp is not np and np.dtype(dtype).kind == "f" and reduction in ("add", "mul"):
        np.testing.assert_allclose(to_numpy(got).astype(np.float64), expect.astype(np.float64),
                                   rtol=2e-3 if dtype == "float16" else 1e-5)
        return
    _same(got, expect)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd_every_dtype(dtype, reduction, xp):
    rng = np.random.default_rng(6)
    data = _rand(rng, (7, 3, 4), dtype)
    idx = rng.integers(-7, 7, (5, 4, 1))
    upd = _rand(rng, (5, 4, 3, 4), dtype)
    expect = ref.scatter_nd(data.astype(np.float32) if dtype == "float16" else data, idx, upd.astype(np.float32) if dtype == "float16" else upd, reduction).astype(dtype)
    got = fastops.scatter_nd(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), reduction)
    if xp is not np and (reduction == "none" or
                         (np.dtype(dtype).kind == "f" and reduction in ("add", "mul"))):
        assert to_numpy(got).shape == data.shape
        return
    _same(got, expect)


@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
def test_gathers_every_dtype(dtype, xp):
    rng = np.random.default_rng(7)
    data = _rand(rng, (6, 5, 4), dtype if dtype != "complex64" else "float32")
    if dtype == "complex64":
        data = (data + 1j * data[::-1]).astype(np.complex64)
    idx = rng.integers(-6, 6, (8, 5, 4)).astype(np.int32)
    _same(fastops.gather_elements(xp.asarray(data), xp.asarray(idx), 0),
          np.take_along_axis(data, idx % 6, axis=0))
    idx2 = rng.integers(-5, 5, (3, 2, 2))
    idx2[..., 0] %= 6
    _same(fastops.gather_nd(xp.asarray(data), xp.asarray(idx2)),
          data[idx2[..., 0], idx2[..., 1]])


@pytest.mark.parametrize("S", [1, 3, 16])
def test_scatter_nd_none_last_update_of_each_row_wins(S, threads):
    """"none" writes only each row's last update (scatter.hpp walks the updates backwards
    and marks the rows it wrote): few distinct rows, many, negative indices, rows in every owner
    block of 1-3 threads, against the last occurrence of each row found with np.unique."""
    rng = np.random.default_rng(29)
    shape = (20000, S) if S > 1 else (20000,)        # S = 1: 1-D data, rows of one
    data = rng.standard_normal(shape).astype(np.float32)
    keep = data.copy()
    for distinct, N in ((3, 5000), (700, 30000), (20000, 30000)):
        rows = rng.choice(rng.choice(20000, distinct, replace=False), N)
        idx = np.where(rng.random(N) < 0.3, rows - 20000, rows)[:, None]
        upd = rng.standard_normal((N,) + shape[1:]).astype(np.float32)
        want = data.copy()
        uniq, first_from_back = np.unique(rows[::-1], return_index=True)
        want[uniq] = upd[N - 1 - first_from_back]
        for nt in (1, 2, 3):
            with threads(nt):
                got = fastops.scatter_nd(data, idx, upd, "none")
            np.testing.assert_array_equal(got, want, err_msg=f"{distinct} rows, {nt} threads")
    np.testing.assert_array_equal(data, keep)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_outputs_of_16_mb_or_more_are_copied_by_streamed_stores(reduction, threads):
    """New outputs of kStreamBytes (16 MiB) or more are copied with non-temporal stores
    (scatter.hpp copy_part), each part from a 16-byte-aligned head: scatter_nd and
    scatter_elements without L2 tiles (columns of 4096 rows, too tall for a two-line
    tile), data a view 1 or 3 elements into its buffer so that no part starts on a line,
    1-3 threads, against NumPy; 16 elements under the size take the plain copy."""
    rng = np.random.default_rng(41)
    base = rng.standard_normal((1 << 22) + 3).astype(np.float32)
    keep = base.copy()
    for rows in (1 << 18, (1 << 18) - 1):          # 16-float rows: 16 MiB, and 64 bytes less
        data = base[1:1 + 16 * rows].reshape(rows, 16)
        idx = rng.choice(rows, 5000, replace=reduction == "add")[:, None]
        upd = rng.standard_normal((5000, 16)).astype(np.float32)
        want = data.copy()
        if reduction == "none":
            want[idx[:, 0]] = upd
        else:
            np.add.at(want, idx[:, 0], upd)
        for nt in (1, 2, 3):
            with threads(nt):
                got = fastops.scatter_nd(data, idx, upd, reduction)
            np.testing.assert_array_equal(got, want, err_msg=f"scatter_nd {rows} {nt}")
    for cols in (1 << 10, (1 << 10) - 1):
        data = base[3:3 + 4096 * cols].reshape(4096, cols)
        idx = rng.integers(-4096, 4096, (3, cols))
        upd = rng.standard_normal(idx.shape).astype(np.float32)
        want = _numpy_scatter_elements(data, idx, upd, 0, reduction)
        for nt in (1, 2, 3):
            with threads(nt):
                got = fastops.scatter_elements(data, idx, upd, 0, reduction)
            np.testing.assert_array_equal(got, want, err_msg=f"scatter_elements {cols} {nt}")
    np.testing.assert_array_equal(base, keep)


def test_float16_none_is_a_bit_copy():
    data = np.array([1.0, np.nan, -0.0, 65504.0], np.float16)
    upd = np.array([0x7E01, 0x8000], np.uint16).view(np.float16)   # NaN payload, -0.0
    out = fastops.scatter_elements(data, np.array([0, 3]), upd)
    np.testing.assert_array_equal(out.view(np.uint16),
                                  np.array([0x7E01, data.view(np.uint16)[1], 0x8000, 0x8000],
                                           np.uint16))
    g = fastops.gather_nd(upd, np.array([[0], [1]]))
    np.testing.assert_array_equal(g.view(np.uint16), upd.view(np.uint16))


def test_complex64_none():
    data = np.arange(4).astype(np.complex64) * (1 + 2j)
    out = fastops.scatter_nd(data, np.array([[1], [-1]]), np.array([5j, 7], np.complex64))
    _same(out, np.array([0, 5j, 2 + 4j, 7], np.complex64))
    with pytest.raises(TypeError, match="reduction"):
        fastops.scatter_nd(data, np.array([[1]]), np.array([5j], np.complex64), "add")


# ------------------------------------------------------------ semantics one by one
def test_duplicates_none_last_wins_row_major(xp):
    data = xp.zeros((3, 2), dtype=xp.float32)
    idx = xp.asarray([[1, 0], [1, 0], [1, 2]])
    upd = xp.asarray([[1, 2], [3, 4], [5, 6]], dtype=xp.float32)
    got = to_numpy(fastops.scatter_elements(data, idx, upd))
    if xp is np:
        _same(got, np.array([[0, 4], [5, 0], [0, 6]], np.float32))
    else:
        assert got[1, 0] in (1, 3, 5) and got[0, 1] in (2, 4)
    got = to_numpy(fastops.scatter_nd(xp.zeros(3, dtype=xp.int64), xp.asarray([[2], [2], [0]]),
                                      xp.asarray([7, 8, 9])))
    if xp is np:
        _same(got, np.array([9, 0, 8]))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_elements_expanded_rows(reduction, index_dtype):
    """Indices constant along the other axes (torchvision's exported multi-level RoIAlign
    merge: a row index expanded over (C, H, W)) take the kernel's whole-row path; rows
    with duplicates, negative indices, a block that is uniform only in part and a 300-
    column row (a partial block) against the spec loop."""
    rng = np.random.default_rng(17)
    data = rng.integers(-3, 4, (6, 300)).astype(np.float64)
    rows = np.array([2, -1, 2, 0, 5, 3, -4, 2], dtype=index_dtype)
    idx = np.repeat(rows[:, None], 300, axis=1)
    idx[3, 260:] = 1                       # the last block of row 3 is not uniform
    idx[4, 7] = 4                          # nor the first block of row 4
    upd = rng.integers(-3, 4, idx.shape).astype(np.float64)
    want = ref.scatter_elements(data, idx, upd, 0, reduction)
    got = fastops.scatter_elements(data, idx, upd, axis=0, reduction=reduction)
    _same(got, want)
    # the same pattern on a 4-D (K, C, H, W) array along axis 0, float32
    d4 = rng.integers(-3, 4, (5, 16, 7, 7)).astype(np.float32)
    r4 = rng.integers(-5, 5, 9).astype(index_dtype)
    i4 = np.broadcast_to(r4[:, None, None, None], (9, 16, 7, 7)).copy()
    u4 = rng.integers(-3, 4, i4.shape).astype(np.float32)
    _same(fastops.scatter_elements(d4, i4, u4, axis=0, reduction=reduction),
          ref.scatter_elements(d4, i4, u4, 0, reduction))


@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_elements_broadcast_row_indices(dtype, reduction, monkeypatch):
    """Indices broadcast over every dimension after the axis (torch's expand, ONNX Expand:
    frcnn's RoIAlign merge) scatter whole rows without materializing the broadcast: the
    same values as the spec loop over the materialized indices, for axes 0 and 1, index
    rows with duplicates and negative values, outer dimensions smaller than data's, a
    size-1 trailing dimension among the broadcast ones, int32 / int64 indices, and the
    Session's in-place form; data is never modified."""
    if dtype == "complex64" and reduction != "none":
        pytest.skip("complex64 has reduction 'none' only")
    fs = importlib.import_module("fastops.scatter")     # (fastops.scatter is the function)
    rows_calls = []
    real = fs._scatter_rows
    monkeypatch.setattr(fs, "_scatter_rows", lambda *a: rows_calls.append(1) or real(*a))
    monkeypatch.setattr(fs, "_ROWS_MIN", 0)     # small arrays take the row path too
    rng = np.random.default_rng(29)
    for ax, dshape, ishape in [(0, (5, 6, 1, 7), (9, 6, 1, 7)),
                               (1, (3, 4, 5, 6), (2, 7, 5, 6)),
                               (2, (2, 3, 4, 9), (2, 3, 6, 9))]:
        for index_dtype in (np.int32, np.int64):
            n = dshape[ax]
            rows = rng.integers(-n, n, ishape[:ax + 1]).astype(index_dtype)
            idx = np.broadcast_to(rows.reshape(rows.shape + (1,) * (len(ishape) - ax - 1)),
                                  ishape)
            data = (_rand(rng, dshape, "float32") + 1j * _rand(rng, dshape, "float32")
                    ).astype(dtype) if dtype == "complex64" else _rand(rng, dshape, dtype)
            upd = (_rand(rng, ishape, "float32") * 1j).astype(dtype) \
                if dtype == "complex64" else _rand(rng, ishape, dtype)
            keep = data.copy()
            want = (ref.scatter_elements(data, idx.copy(), upd, ax, "none")
                    if reduction == "none"
                    else _numpy_scatter_elements(data, idx.copy(), upd, ax, reduction))
            _same(fastops.scatter_elements(data, idx, upd, ax, reduction), want)
            _same(data, keep)
            mine = data.copy()
            got = fs._scatter_elements("scatter_elements", mine, idx, upd, ax, reduction, True)
            _same(got, want)
            if np.dtype(dtype) != np.float16 or reduction == "none":
                assert got is mine
    assert len(rows_calls) == 12    # every call above took the whole-row path


def test_scatter_elements_broadcast_row_indices_name_the_bad_index():
    """A bad index in broadcast row indices raises the IndexError of the materialized
    indices (the first bad position in row-major order) and writes nothing; a frcnn-sized
    merge (above _ROWS_MIN) against NumPy."""
    rng = np.random.default_rng(37)
    rows = rng.permutation(150)
    idx = np.broadcast_to(rows[:, None, None, None], (150, 256, 7, 7))
    upd = rng.standard_normal(idx.shape).astype(np.float32)
    want = np.zeros(idx.shape, np.float32)
    want[rows] = upd
    _same(fastops.scatter_elements(np.zeros(idx.shape, np.float32), idx, upd), want)
    _same(fastops.gather_elements(want, idx, 0), upd)
    data = np.arange(2 * 4 * 3000, dtype=np.float32).reshape(2, 4, 3000)
    keep = data.copy()
    rows = np.array([[0, 3, -5, 9], [1, 2, 4, -1]])
    idx = np.broadcast_to(rows[:, :, None], (2, 4, 3000))
    upd = np.ones((2, 4, 3000), np.float32)
    msg = r"scatter_elements: indices\[0, 2, 0\] = -5 is out of range for axis 1 of data " \
          r"with size 4 \(expected -4 <= index < 4\)"
    for i in (idx, idx.copy()):
        with pytest.raises(IndexError, match=msg):
            fastops.scatter_elements(data, i, upd, axis=1)
    fs = importlib.import_module("fastops.scatter")
    with pytest.raises(IndexError, match=msg):
        fs._scatter_elements("scatter_elements", data, idx, upd, 1, "add", True)
    _same(data, keep)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_elements_broadcast_row_indices(index_dtype, monkeypatch):
    """gather_elements of indices broadcast over the dimensions after the axis gathers
    whole rows (the gather_nd kernel on data viewed as rows): np.take_along_axis of the
    materialized indices, every dtype width, axes 0-2, outer dimensions smaller than
    data's; strided data keeps the elements kernel; a bad index names its position."""
    fs = importlib.import_module("fastops.scatter")
    nd_calls = []
    real = fs._flat_rows
    monkeypatch.setattr(fs, "_flat_rows", lambda *a: nd_calls.append(1) or real(*a))
    monkeypatch.setattr(fs, "_ROWS_MIN", 0)
    rng = np.random.default_rng(31)
    for ax, dshape, ishape in [(0, (5, 6, 1, 7), (9, 6, 1, 7)),
                               (1, (3, 4, 5, 6), (2, 7, 5, 6)),
                               (2, (2, 3, 4, 9), (2, 3, 6, 9))]:
        n = dshape[ax]
        rows = rng.integers(-n, n, ishape[:ax + 1]).astype(index_dtype)
        idx = np.broadcast_to(rows.reshape(rows.shape + (1,) * (len(ishape) - ax - 1)),
                              ishape)
        full = np.where(idx < 0, idx + n, idx)
        for dtype in ("bool", "uint8", "int16", "float32", "float64", "complex64"):
            data = _rand(rng, dshape, dtype if dtype != "complex64" else "float64"
                         ).astype(dtype)
            sub = tuple(slice(0, k) for k in ishape[:ax]) + (slice(None),) * (len(ishape) - ax)
            want = np.take_along_axis(data[sub], full, ax)
            _same(fastops.gather_elements(data, idx, ax), want)
        strided = _rand(rng, dshape[:-1] + (2 * dshape[-1],), "float32")[..., ::2]
        before = len(nd_calls)
        _same(fastops.gather_elements(strided, idx, ax),
              np.take_along_axis(strided[sub], full, ax))
        assert len(nd_calls) == before            # strided data: the elements kernel
    assert len(nd_calls) == 18
    bad = np.broadcast_to(np.array([[0, 3, -5, 9]])[:, :, None], (1, 4, 3000))
    with pytest.raises(IndexError, match=r"gather_elements: indices\[0, 2, 0\] = -5 is "
                                         r"out of range for axis 1 of data with size 4"):
        fastops.gather_elements(np.zeros((2, 4, 3000), np.float32), bad, 1)


def test_nan_max_min_propagate(xp):
    data = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
    idx = np.array([0, 1, 2, 2, 3])
    upd = np.array([np.nan, 5.0, np.nan, 1.0, -1.0], np.float32)
    for red, uf in (("max", np.maximum), ("min", np.minimum)):
        expect = data.copy()
        with np.errstate(invalid="ignore"):
            uf.at(expect, idx, upd)
        _same(fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd),
                                       reduction=red), expect)
        _same(fastops.scatter_nd(xp.asarray(data), xp.asarray(idx[:, None]), xp.asarray(upd),
                                 red), expect)


def test_integer_wraparound(xp):
    data = np.array([120, -128, 100], np.int8)
    idx = np.array([0, 0, 1, 2, 2])
    upd = np.array([5, 10, -1, 3, 3], np.int8)
    for red, uf in (("add", np.add), ("mul", np.multiply)):
        expect = data.copy()
        with np.errstate(over="ignore"):
            uf.at(expect, idx, upd)
        _same(fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd),
                                       reduction=red), expect)
    big = np.array([2**63 - 1], np.int64)
    _same(fastops.scatter_nd(xp.asarray(big), xp.asarray([[0]]), xp.asarray([1]), "add"),
          np.array([-2**63], np.int64))
    u16 = np.array([65535], np.uint16)
    _same(fastops.scatter_nd(xp.asarray(u16), xp.asarray([[0], [0]]),
                             xp.asarray(np.array([65535, 3], np.uint16)), "mul"),
          np.array([(65535 * 65535 * 3) % 65536], np.uint16))


def test_bool_reductions_are_logical(xp):
    data = np.array([False, True, False, True])
    idx = np.array([0, 0, 1, 2, 3])
    upd = np.array([True, True, False, False, True])
    exp = {"add": [True, True, False, True], "mul": [False, False, False, True],
           "max": [True, True, False, True], "min": [False, False, False, True]}
    for red, e in exp.items():
        _same(fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd),
                                       reduction=red), np.array(e))


def test_float16_reductions_in_float32():
    # 2048 + 1 + 1 in float16 steps stays 2048; in float32 it is 2050 (exact in float16)
    data = np.array([2048.0], np.float16)
    out = fastops.scatter_nd(data, np.zeros((2, 1), np.int64), np.ones(2, np.float16), "add")
    _same(out, np.array([2050.0], np.float16))


@pytest.mark.parametrize("k", [1, 2])
def test_scatter_nd_slices_vs_fancy_indexing(k):
    rng = np.random.default_rng(8)
    data = rng.standard_normal((20, 6, 5))
    flat = rng.permutation(120)[:30] if k == 2 else rng.permutation(20)[:10]
    idx = np.stack(np.unravel_index(flat, data.shape[:k]), -1)
    upd = rng.standard_normal(idx.shape[:-1] + data.shape[k:])
    expect = data.copy()
    expect[tuple(idx.T)] = upd
    _same(fastops.scatter_nd(data, idx, upd), expect)
    _same(fastops.gather_nd(data, idx), data[tuple(idx.T)])


def test_slow_reference_float64():
    rng = np.random.default_rng(9)
    data = rng.standard_normal((5, 7, 3)).astype(np.float32)
    idx = rng.integers(-7, 7, (4, 6, 3))
    upd = rng.standard_normal((4, 6, 3)).astype(np.float32)
    for red in REDUCTIONS:
        got = fastops.scatter_elements(data, idx, upd, 1, red)
        expect = ref.scatter_elements(data.astype(np.float64), idx, upd.astype(np.float64), 1,
                                      red)
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(fastops.gather_elements(data, idx, 1),
                                  ref.gather_elements(data, idx, 1))
    idx3 = rng.integers(-3, 3, (5, 7, 2, 1))
    np.testing.assert_array_equal(fastops.gather_nd(data, idx3, 2), ref.gather_nd(data, idx3, 2))


def test_indices_smaller_than_data_in_other_dims(xp):
    rng = np.random.default_rng(10)
    data = rng.standard_normal((6, 7, 8)).astype(np.float32)
    idx = rng.integers(-7, 7, (4, 5, 3))
    upd = rng.standard_normal((4, 5, 3)).astype(np.float32)
    for red in ("none", "max"):
        expect = ref.scatter_elements(data, idx, upd, 1, red) if red == "max" else None
        got = fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), 1, red)
        if expect is not None:
            _same(got, expect)
    _same(fastops.gather_elements(xp.asarray(data), xp.asarray(idx), 1),
          ref.gather_elements(data, idx, 1))


# ---------------------------------------------------------- layout, empty, threads
def test_non_contiguous_inputs(xp):
    rng = np.random.default_rng(11)
    base = rng.standard_normal((12, 10)).astype(np.float32)
    data = base.T[::-1, ::2]                     # (10, 6), negative and odd strides
    idx = rng.integers(-10, 10, (6, 8)).T[:, ::-1][:, :6]   # (8, 6) transposed, reversed
    upd = rng.standard_normal((6, 16)).astype(np.float32).T[::2]
    for red in ("add", "max"):
        expect = ref.scatter_elements(np.ascontiguousarray(data), np.ascontiguousarray(idx),
                                      np.ascontiguousarray(upd), 0, red)
        _same(fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), 0,
                                       red), expect)
    _same(fastops.gather_elements(xp.asarray(data), xp.asarray(idx), 0),
          np.take_along_axis(data, idx % 10, 0))
    small = idx[:, :3] % 6 - 6 * (idx[:, :3] < 0)
    _same(fastops.gather_elements(xp.asarray(data), xp.asarray(small), 1),
          ref.gather_elements(data, small, 1))
    nd_idx = idx[:5, :1]
    nd_upd = upd[:5]
    _same(fastops.scatter_nd(xp.asarray(data), xp.asarray(nd_idx), xp.asarray(nd_upd), "add"),
          ref.scatter_nd(np.ascontiguousarray(data), nd_idx, nd_upd, "add"))
    _same(fastops.gather_nd(xp.asarray(data), xp.asarray(nd_idx)), data[nd_idx[:, 0]])


def test_empty(xp):
    data = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    e_idx = xp.zeros((0, 4), dtype=xp.int64)
    e_upd = xp.zeros((0, 4), dtype=xp.float32)
    out = fastops.scatter_elements(data, e_idx, e_upd)
    _same(out, to_numpy(data))
    assert out is not data
    _same(fastops.scatter_nd(data, xp.zeros((0, 1), dtype=xp.int64), e_upd), to_numpy(data))
    _same(fastops.gather_elements(data, e_idx), np.zeros((0, 4), np.float32))
    _same(fastops.gather_nd(data, xp.zeros((0, 2), dtype=xp.int64)), np.zeros((0,), np.float32))
    z = xp.zeros((3, 0), dtype=xp.float32)
    _same(fastops.scatter_nd(z, xp.asarray([[1], [2]]), xp.zeros((2, 0), dtype=xp.float32)),
          np.zeros((3, 0), np.float32))
    _same(fastops.gather_nd(z, xp.asarray([[1]])), np.zeros((1, 0), np.float32))
    with pytest.raises(IndexError, match=r"indices\[1, 0\] = 3"):
        fastops.scatter_nd(z, xp.asarray([[1], [3]]), xp.zeros((2, 0), dtype=xp.float32))
    with pytest.raises(IndexError):
        fastops.scatter_elements(xp.zeros((0,), dtype=xp.float32), xp.asarray([0]),
                                 xp.asarray([1.0], dtype=xp.float32))
    with pytest.raises(IndexError, match=r"indices\[0, 0\] = 0 is out of range for axis 0"):
        fastops.gather_elements(xp.zeros((0, 3), dtype=xp.float32), xp.zeros((1, 3), xp.int64))


def test_data_never_modified(xp):
    rng = np.random.default_rng(12)
    data = rng.standard_normal((50, 40)).astype(np.float32)
    keep = data.copy()
    d = xp.asarray(data)
    idx = xp.asarray(rng.integers(0, 50, (30, 40)))
    upd = xp.asarray(rng.standard_normal((30, 40)).astype(np.float32))
    for red in REDUCTIONS:
        fastops.scatter_elements(d, idx, upd, 0, red)
        fastops.scatter_nd(d, idx[:, :1], xp.asarray(rng.standard_normal((30, 40)), dtype=xp.float32), red)
    _same(d, keep)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_threads_bit_identical_and_deterministic(reduction, threads):
    rng = np.random.default_rng(13)
    data = rng.standard_normal((300, 257)).astype(np.float32)
    idx = rng.integers(-300, 300, (400, 257))           # heavy duplicates
    upd = rng.standard_normal((400, 257)).astype(np.float32)
    nd_data = rng.standard_normal((1000, 3)).astype(np.float32)
    nd_idx = rng.integers(-1000, 1000, (60_000, 1))
    nd_upd = rng.standard_normal((60_000, 3)).astype(np.float32)
    wide = rng.standard_normal((8, 5000)).astype(np.float32)      # long rows: column split
    w_idx = rng.integers(0, 8, (40, 1))
    w_upd = rng.standard_normal((40, 5000)).astype(np.float32)

    def run():
        return (fastops.scatter_elements(data, idx, upd, 0, reduction),
                fastops.scatter_nd(nd_data, nd_idx, nd_upd, reduction),
                fastops.scatter_nd(wide, w_idx, w_upd, reduction))
    with threads(1):
        one = run()
    with threads(2):
        two = [run() for _ in range(3)]
    with threads(3):        # (not a power of two: scatter_nd's owners by division)
        two.append(run())
    for r in two:
        for a, b in zip(one, r):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    # and equal to the sequential row-major order (np.ufunc.at / the slow loop)
    if reduction == "none":
        exp_nd = ref.scatter_nd(nd_data, nd_idx, nd_upd, "none")
    else:
        exp_nd = nd_data.copy()
        _UFUNC_AT[reduction].at(exp_nd, nd_idx[:, 0], nd_upd)
    np.testing.assert_array_equal(one[1], exp_nd)
    np.testing.assert_array_equal(one[0], _numpy_scatter_elements(data, idx, upd, 0, reduction))


# --------------------------------------------------------------------- bad input
def _bad_cases():
    d = np.zeros((3, 4), np.float32)
    i = np.zeros((2, 4), np.int64)
    u = np.zeros((2, 4), np.float32)
    se, snd = fastops.scatter_elements, fastops.scatter_nd
    ge, gnd = fastops.gather_elements, fastops.gather_nd
    return [
        (lambda: se(d, i, u, reduction="sum"), ValueError, "scatter_elements: reduction='sum'"),
        (lambda: snd(d, i[:, :1], u, reduction=3), ValueError, "reduction=3"),
        (lambda: se(d, i, u, axis=2), ValueError, "axis=2"),
        (lambda: se(d, i, u, axis=1.0), TypeError, "axis must be an integer"),
        (lambda: se(d, i.astype(np.float32), u), TypeError, "indices has dtype float32"),
        (lambda: snd(d, np.zeros((2, 1), bool), u), TypeError, "indices has dtype bool"),
        (lambda: ge(d, np.zeros((2, 4), np.float64)), TypeError, "gather_elements: indices"),
        (lambda: se(d, i[0], u[0]), ValueError, "same rank as data"),
        (lambda: se(d, i, u[:1]), ValueError, "updates must have the shape of indices"),
        (lambda: se(d, np.zeros((2, 5), np.int64), np.zeros((2, 5), np.float32)),
         ValueError, r"indices.shape\[1\]=5 is larger than data.shape\[1\]=4"),
        (lambda: se(np.float32(1), np.int64(0), np.float32(1)), ValueError, "0-d"),
        (lambda: se(d, i, u.astype(np.float64).astype(np.complex128)), TypeError, "updates"),
        (lambda: se(np.zeros(3, "U2"), np.zeros(1, np.int64), np.zeros(1, "U2")), TypeError,
         "data has dtype"),
        (lambda: se(d, np.array([[0, 1, 3, -4], [0, 0, 0, 0]]), u), IndexError,
         r"scatter_elements: indices\[0, 2\] = 3 is out of range for axis 0 of data with "
         r"size 3 \(expected -3 <= index < 3\)"),
        (lambda: fastops.scatter(d, np.array([[0, 0, 0, 0], [0, -4, 9, 0]]), u), IndexError,
         r"scatter: indices\[1, 1\] = -4"),
        (lambda: snd(d, np.array([[0, 1], [2, 4]]), np.zeros(2, np.float32)), IndexError,
         r"scatter_nd: indices\[1, 1\] = 4 is out of range for axis 1 of data with size 4"),
        (lambda: snd(d, np.zeros((2, 3), np.int64), np.zeros(2, np.float32)), ValueError,
         "index depth k = indices.shape\\[-1\\] = 3 is larger than data's rank 2"),
        (lambda: snd(d, np.zeros((2, 1), np.int64), np.zeros((2, 3), np.float32)), ValueError,
         r"expected indices.shape\[:-1\] \+ data.shape\[k:\] = \(2,\) \+ \(4,\) = \(2, 4\)"),
        (lambda: ge(d, np.array([[0, 1, 2, 3], [0, 1, 2, -5]]), axis=1), IndexError,
         r"gather_elements: indices\[1, 3\] = -5 is out of range for axis 1"),
        (lambda: gnd(d, np.array([[0, 0], [3, 0]])), IndexError,
         r"gather_nd: indices\[1, 0\] = 3 is out of range for axis 0"),
        (lambda: gnd(d, np.zeros((2, 1), np.int64), batch_dims=1), ValueError,
         r"first batch_dims=1 dimensions"),
        (lambda: gnd(d, np.zeros((3, 1), np.int64), batch_dims=2), ValueError,
         r"batch_dims=2 must satisfy"),
        (lambda: gnd(d, np.zeros((3, 1), np.int64), batch_dims=0.5), TypeError,
         "batch_dims must be an integer"),
        (lambda: gnd(d, np.zeros((3, 3), np.int64)), ValueError, "index depth"),
        (lambda: se(np.zeros(3, np.float32), np.array([2**63 + 1], np.uint64),
                    np.zeros(1, np.float32)), IndexError, r"indices\[0\]"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_input(case):
    fn, exc, match = _bad_cases()[case]
    with pytest.raises(exc, match=match):
        fn()


def test_index_error_writes_nothing_and_gpu_matches(xp):
    data = xp.asarray(np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError, match=r"indices\[2\] = 6"):
        fastops.scatter_elements(data, xp.asarray([1, 2, 6, 7]), xp.ones(4, dtype=xp.float32))
    with pytest.raises(IndexError, match=r"indices\[1, 0\] = -7"):
        fastops.scatter_nd(data, xp.asarray([[0], [-7]]), xp.ones(2, dtype=xp.float32), "add")
    with pytest.raises(IndexError, match=r"indices\[3\] = 100"):
        fastops.gather_elements(data, xp.asarray([0, 1, 2, 100]).astype(xp.int32))
    _same(data, np.arange(6, dtype=np.float32))


def test_torch_tensors_round_trip():
    torch = peer("torch")
    d = torch.zeros(3, 2)
    out = fastops.scatter_elements(d, torch.tensor([[2, 0]]), torch.tensor([[1.0, 2.0]]))
    assert isinstance(out, torch.Tensor)
    assert out.tolist() == [[0, 2], [0, 0], [1, 0]]
    g = fastops.gather_elements(torch.arange(6.0).reshape(2, 3), torch.tensor([[2, 0]]), 1)
    assert g.tolist() == [[2.0, 0.0]]


def test_int32_and_int64_indices_agree(xp):
    rng = np.random.default_rng(14)
    data = rng.standard_normal((9, 8)).astype(np.float32)
    idx = rng.integers(-9, 9, (5, 8))
    upd = rng.standard_normal((5, 8)).astype(np.float32)
    a = fastops.scatter_elements(xp.asarray(data), xp.asarray(idx.astype(np.int32)),
                                 xp.asarray(upd), 0, "max")
    b = fastops.scatter_elements(xp.asarray(data), xp.asarray(idx), xp.asarray(upd), 0, "max")
    _same(a, to_numpy(b))
    small = fastops.gather_nd(xp.asarray(data), xp.asarray(idx[:, :1].astype(np.int16)))
    _same(small, data[idx[:, 0]])


@pytest.mark.parametrize("dtype,reduction", [("float32", 0), ("int64", 0), ("int32", 5),
                                             ("float64", 6), ("uint8", 9), ("int8", 1),
                                             ("int64", 2)])
def test_kernels_refuse_pairs_they_do_not_compile(dtype, reduction):
    """The scatter kernels compile only the (element type, reduction) pairs that
    fastops.scatter sends: "none" and integer add/mul (codes 1, 2) as unsigned words, the
    float16 max/min tie rule (codes 5, 6) as float32.  Any other pair raises instead of
    returning untouched data, so a Python layer that starts sending one fails here and in
    the every-dtype tests."""
    from fastops import _dispatch
    k = _dispatch.kernel_module("cpu", "scatter")
    data = np.arange(6, dtype=dtype)
    out = data.copy()
    idx = np.array([1, 2], dtype=np.int64)
    upd = np.ones(2, dtype=dtype)
    with pytest.raises(ValueError, match="reduction"):
        k.scatter_elements(data, out, idx, upd, 1, 2, 1, None, None, 6, 1, 1, 6, reduction, 1)
    with pytest.raises(ValueError, match="reduction"):
        k.scatter_nd(data, out, idx.reshape(2), 2, 1, np.array([6], np.int64), upd, 1,
                     reduction, 1)
    np.testing.assert_array_equal(data, np.arange(6, dtype=dtype))
