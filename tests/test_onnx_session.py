"""fastops.onnx.Session and fastops.onnx.OPS against the ONNX backend node test data.

* Every node test of the seed ops (TopK, Scatter*, Gather*, NonMaxSuppression, RoiAlign,
  Resize/Upsample, NonZero, Loop, GridSample, InstanceNormalization, DeformConv, If,
  Scan) runs through Session and must reproduce the expected outputs stored with the
  test, and so must every opset-variant spelling of it (the same computation written
  for each other version of the op the installed onnx defines, where that version can
  express it: the checker accepts the model and the attribute values exist there).
* Every other node test runs too (the common-op kernels, and the onnx.reference
  fallback for ops without a fastops kernel).
* ReferenceEvaluator(model, new_ops=fastops.onnx.OPS) on the seed-op tests.
* The Session API: get_inputs/get_outputs, output selection, feed checks, the one
  fallback warning, outputs never aliasing feeds or constants, inputs unchanged.
"""
import glob
import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, defs, helper, numpy_helper  # noqa: E402

import fastops.onnx as fo  # noqa: E402
from tests.onnx_cases import node_dir  # noqa: E402

SEED_PREFIXES = ("test_top_k", "test_scatter", "test_gather_elements", "test_gathernd",
                 "test_nonmaxsuppression", "test_roialign", "test_resize", "test_upsample",
                 "test_nonzero", "test_loop", "test_gridsample", "test_instancenorm",
                 "test_basic_deform_conv", "test_deform_conv", "test_if", "test_scan")
SEED_OPS = ("TopK", "Scatter", "ScatterElements", "ScatterND", "GatherElements", "GatherND",
            "NonMaxSuppression", "RoiAlign", "Resize", "Upsample", "NonZero", "Loop",
            "GridSample", "InstanceNormalization", "DeformConv", "If", "Scan")


def _all_cases():
    try:
        root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    except Exception:    # pragma: no cover
        return []
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(root, "test_*")))


ALL_CASES = _all_cases()
SEED_CASES = [c for c in ALL_CASES if c.startswith(SEED_PREFIXES)]
# the expanded function bodies of Range use Loop too
SEED_CASES += [c for c in ALL_CASES if c.startswith("test_range_") and c.endswith("_expanded")]


def _read(path, tp):
    data = open(path, "rb").read()
    if tp.HasField("sequence_type"):
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if tp.HasField("optional_type"):
        s = onnx.OptionalProto()
        s.ParseFromString(data)
        return numpy_helper.to_optional(s)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def load_node_case(name):
    """(model, feeds, expected outputs) of one backend node test (sequences as lists,
    optionals as None or their value)."""
    d = os.path.join(node_dir(), name)
    if not os.path.isdir(d):
        pytest.skip(f"{name}: ONNX node test data not shipped by this onnx version")
    model = onnx.load(os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    feeds = {}
    for i, vi in enumerate(model.graph.input):
        p = os.path.join(ds, f"input_{i}.pb")
        if os.path.exists(p):
            feeds[vi.name] = _read(p, vi.type)
    want = [_read(os.path.join(ds, f"output_{i}.pb"), vi.type)
            for i, vi in enumerate(model.graph.output)]
    return model, feeds, want


_PLAIN = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64")}


def assert_same(got, want, where="", rtol=1e-3, atol=1e-6):
    """ONNX backend-test equality: same type, shape and dtype; floats within rtol/atol
    (the ONNX backend runner's rtol=1e-3: some stored outputs are rounded to 4 digits;
    float16: 4e-3), NaN where NaN; everything else exactly."""
    if isinstance(want, list):
        assert isinstance(got, list), f"{where}: expected a sequence, got {type(got)}"
        assert len(got) == len(want), f"{where}: sequence length {len(got)} != {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{k}]", rtol, atol)
        return
    if want is None:
        assert got is None, f"{where}: expected an empty optional"
        return
    got = np.asarray(got)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "OUS":
        assert [str(v) for v in got.reshape(-1)] == [str(v) for v in want.reshape(-1)]
        return
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
    if want.dtype not in _PLAIN:            # bfloat16, float8, int4: compare as float32
        got, want = got.astype(np.float32), want.astype(np.float32)
    if want.dtype.kind == "f":
        tol = 4e-3 if want.dtype == np.float16 else rtol
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def run_session(model, feeds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fo.ReferenceFallbackWarning)
        sess = fo.Session(model, **kw)
    return sess, sess.run(None, feeds)


# ------------------------------------------------------------------ opset spellings
def op_versions(op):
    out = set()
    for v in range(1, defs.onnx_opset_version() + 1):
        try:
            out.add(defs.get_schema(op, v).since_version)
        except Exception:
            pass
    return sorted(out)


def _attrs(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _with(model, op_type, opset, attrs=None, inputs=None, drop_attrs=()):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    node = m.graph.node[0]
    node.op_type = op_type
    if attrs is not None or drop_attrs:
        kept = [a for a in node.attribute if a.name not in drop_attrs and
                (attrs is None or a.name not in attrs)]
        del node.attribute[:]
        node.attribute.extend(kept)
        for k, v in (attrs or {}).items():
            node.attribute.append(helper.make_attribute(k, v))
    if inputs is not None:
        del node.input[:]
        node.input.extend(inputs)
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", opset))
    m.ir_version = onnx.IR_VERSION
    return m


def _valid(m):
    try:
        onnx.checker.check_model(m, full_check=True)
        return True
    except Exception:
        return False


def spellings(name, model, feeds):
    """Yield (label, model, feeds): the test rewritten for every other version of its op
    that can express the same computation."""
    node = model.graph.node[0]
    op = node.op_type
    orig = {o.domain: o.version for o in model.opset_import}.get("", 1)
    a = _attrs(node)
    if op not in SEED_OPS:
        return
    if op in ("Scatter", "ScatterElements") and a.get("reduction", "none") == "none":
        cands = [("Scatter", v) for v in (9, 10)] + [("ScatterElements", v)
                                                    for v in op_versions("ScatterElements")]
    elif op == "Upsample":
        cands = [("Upsample", v) for v in (7, 9)] + [("Resize", 10)]
    else:
        cands = [(op, v) for v in op_versions(op)]
    for new_op, v in cands:
        if (new_op, v) == (op, orig) or (new_op == op and op_versions(op) and
                                         v == max(x for x in op_versions(op) if x <= orig)):
            continue
        f = dict(feeds)
        m = None
        if op in ("TopK",):
            if v < 11 and (a.get("largest", 1) != 1 or a.get("sorted", 1) != 1):
                continue
            if v < 11:
                m = _with(model, op, v, drop_attrs=("largest", "sorted"))
                if v < 10:
                    kname = node.input[1]
                    k = int(np.asarray(f.pop(kname)).reshape(-1)[0])
                    m = _with(m, op, v, attrs={"k": k}, inputs=[node.input[0]])
                    del m.graph.input[1]
            else:
                m = _with(model, op, v)
        elif op in ("Scatter", "ScatterElements"):
            m = _with(model, new_op, v, drop_attrs=("reduction",) if new_op == "Scatter" else ())
        elif op in ("ScatterND",) or (op == "ScatterElements"):
            red = a.get("reduction", "none")
            if (red in ("add", "mul") and v < 16) or (red in ("max", "min") and v < 18):
                continue
            m = _with(model, op, v)
        elif op == "RoiAlign":
            ctm = a.get("coordinate_transformation_mode", "half_pixel")
            if v < 16:
                if ctm != "output_half_pixel":
                    continue
                m = _with(model, op, v, drop_attrs=("coordinate_transformation_mode",))
            else:
                m = _with(model, op, v)
        elif op == "GridSample":
            mode = a.get("mode", "bilinear" if orig < 20 else "linear")
            names16 = {"linear": "bilinear", "cubic": "bicubic"}
            names20 = {"bilinear": "linear", "bicubic": "cubic"}
            mode = (names16 if v < 20 else names20).get(mode, mode)
            if v < 20 and np.ndim(next(iter(feeds.values()))) != 4:
                continue
            m = _with(model, op, v, attrs={"mode": mode})
        elif op == "Resize":
            ctm = a.get("coordinate_transformation_mode", "half_pixel")
            if v == 10:
                continue        # asymmetric-only version: no test is written that way
            if ctm == "half_pixel_symmetric" and v < 19:
                continue
            if ctm == "tf_half_pixel_for_nn" and v >= 13:
                continue
            m = _with(model, op, v)
            if v < 13:
                # Resize-11: roi and scales are required; an unused one is an empty tensor
                ins = list(m.graph.node[0].input) + [""] * (3 - len(m.graph.node[0].input))
                for k, nm in ((1, "roi_empty"), (2, "scales_empty")):
                    if ins[k] == "":
                        ins[k] = nm
                        m.graph.initializer.append(
                            numpy_helper.from_array(np.zeros(0, np.float32), nm))
                del m.graph.node[0].input[:]
                m.graph.node[0].input.extend(ins)
        elif op == "Upsample":
            if new_op == "Upsample" and v == 7:
                scales = [float(s) for s in np.asarray(f.pop(node.input[1]))]
                m = _with(model, op, v, attrs={"scales": scales}, inputs=[node.input[0]])
                del m.graph.input[1]
            else:
                m = _with(model, new_op, v)
        elif op == "GatherND":
            if a.get("batch_dims", 0) and v < 12:
                continue
            m = _with(model, op, v)
        else:
            m = _with(model, op, v)
        if m is not None and _valid(m):
            yield f"{new_op}-{v}", m, f


# ------------------------------------------------------------------ node tests
@pytest.mark.parametrize("name", SEED_CASES)
def test_seed_op_node_case(name):
    model, feeds, want = load_node_case(name)
    sess, got = run_session(model, feeds)
    # seed ops run on fastops kernels, never on the reference
    seed_fallbacks = [k for k in sess.fallback_ops if k in SEED_OPS]
    assert not seed_fallbacks, seed_fallbacks
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} output {k}")


@pytest.mark.parametrize("name", [c for c in SEED_CASES if not c.endswith("_expanded")])
def test_seed_op_opset_spellings(name):
    model, feeds, want = load_node_case(name)
    count = 0
    for label, m, f in spellings(name, model, feeds):
        _, got = run_session(m, f)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{name} as {label}, output {k}")
        count += 1
    if count == 0 and model.graph.node[0].op_type not in ("Scan",):
        # every seed op has at least two versions, but some tests use a feature only
        # the newest one has (e.g. half_pixel_symmetric, reductions, N-D GridSample)
        pytest.skip(f"{name}: no other opset version can express this test")


def test_spellings_cover_every_version():
    """The spelling generator reaches every version of every seed op on some test."""
    reached = {}
    for name in SEED_CASES:
        if name.endswith("_expanded"):
            continue
        model, feeds, _ = load_node_case(name)
        node = model.graph.node[0]
        orig = {o.domain: o.version for o in model.opset_import}.get("", 1)
        reached.setdefault(node.op_type, set()).add(
            max(v for v in op_versions(node.op_type) if v <= orig))
        for label, m, f in spellings(name, model, feeds):
            op, v = label.split("-")
            reached.setdefault(op, set()).add(int(v))
    missing = {op: sorted(set(op_versions(op)) - reached.get(op, set()))
               for op in ("TopK", "ScatterElements", "ScatterND", "GatherElements",
                          "GatherND", "NonMaxSuppression", "RoiAlign", "NonZero",
                          "GridSample", "InstanceNormalization", "DeformConv", "Loop")}
    # Resize 10 (asymmetric only) is covered by test_resize_opset10_rules below, Loop 1
    # (no ONNX Loop test is valid at opset 1) by tests/test_loop.py
    missing["Loop"] = [v for v in missing["Loop"] if v > 1]
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, missing


_RANDOM = ("test_bernoulli", "test_dropout_random", "test_training_dropout")


@pytest.mark.parametrize("name", [c for c in ALL_CASES if c not in SEED_CASES])
def test_other_node_case(name):
    """Every other node test: the common ops' NumPy kernels, or the reference fallback."""
    if name.startswith(_RANDOM):
        pytest.skip("random output")
    model, feeds, want = load_node_case(name)
    try:
        _, got = run_session(model, feeds)
    except ImportError as exc:       # the reference's optional dependency (Pillow)
        pytest.skip(f"onnx.reference needs: {exc}")
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} output {k}", rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", [c for c in SEED_CASES if not c.endswith("_expanded")
                                  and not c.startswith(("test_if", "test_scan"))])
def test_reference_evaluator_with_ops(name):
    """ReferenceEvaluator(model, new_ops=fastops.onnx.OPS) runs the seed ops on fastops."""
    from onnx.reference import ReferenceEvaluator
    model, feeds, want = load_node_case(name)
    ev = ReferenceEvaluator(model, new_ops=fo.OPS)
    op = model.graph.node[0].op_type
    impl = ev.rt_nodes_[0]
    assert type(impl).__module__ == "fastops.onnx._oprun", (op, type(impl))
    got = ev.run(None, feeds)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} output {k}")


def test_ops_fix_reference_loop_without_cond():
    """onnx.reference runs 0 iterations and crashes when Loop's cond is omitted; with
    OPS it runs M iterations, as onnxruntime does."""
    from onnx.reference import ReferenceEvaluator

    from fastops._bench.onnx import loop_model
    m = loop_model(4, cond_input=False)
    feeds = {"M": np.array(3, np.int64), "v0": np.zeros(4, np.float32)}
    v, scan = ReferenceEvaluator(m, new_ops=fo.OPS).run(None, feeds)
    np.testing.assert_array_equal(v, np.full(4, 3, np.float32))
    assert scan.shape == (3, 4)


def _iteration_scan_loop(op):
    """A Loop whose scan output is ``op`` of the iteration number: "Identity" gives 0-d
    values, "Range" values of growing length (ragged)."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    if op == "Range":
        nodes += [helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(
                      np.array(0, np.int64))),
                  helper.make_node("Constant", [], ["step"], value=numpy_helper.from_array(
                      np.array(1, np.int64))),
                  helper.make_node("Range", ["zero", "it", "step"], ["s_out"])]
    else:
        nodes.append(helper.make_node("Identity", ["it"], ["s_out"]))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("it", i64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", i64, None)])
    loop = helper.make_node("Loop", ["M", ""], ["scan"], body=body)
    g = helper.make_graph([loop], "g", [helper.make_tensor_value_info("M", i64, [])],
                          [helper.make_tensor_value_info("scan", i64, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def test_loop_scan_outputs_stacked():
    """Scan outputs are stacked along a new first axis: 0-d values into a vector (against
    arange), values of differing shapes are refused (onnxruntime refuses them too)."""
    _, (got,) = run_session(_iteration_scan_loop("Identity"), {"M": np.array(5, np.int64)})
    np.testing.assert_array_equal(got, np.arange(5))
    assert got.dtype == np.int64
    with pytest.raises(ValueError):
        run_session(_iteration_scan_loop("Range"), {"M": np.array(3, np.int64)})


# ------------------------------------------------------------------ opset 10 rules
def _single(op, inputs, outputs, attrs, opset, feeds, out_types=None):
    """A one-node model; ``out_types`` are the outputs' NumPy dtypes (default float32)."""
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    node = helper.make_node(op, inputs, outputs, **attrs)
    out_types = out_types or [np.float32] * len(outputs)
    g = helper.make_graph([node], "g", vis,
                          [helper.make_tensor_value_info(
                              o, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
                           for o, t in zip(outputs, out_types)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m


def test_resize_opset10_rules():
    """Resize-10 and Upsample: asymmetric coordinates, nearest floors when upscaling and
    rounds up when downscaling (onnxruntime's rule for these versions)."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
    for scales in ([1, 1, 2, 3], [1, 1, 0.5, 0.6], [1, 1, 2.5, 0.4], [1, 1, 1.7, 1.3]):
        for mode in ("nearest", "linear"):
            feeds = {"x": x, "s": np.array(scales, np.float32)}
            m = _single("Resize", ["x", "s"], ["y"], {"mode": mode}, 10, feeds)
            _, (got,) = run_session(m, feeds)
            want = ort.InferenceSession(m.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{scales} {mode}")
            if mode == "nearest" and min(scales) >= 1:
                m9 = _single("Upsample", ["x", "s"], ["y"], {"mode": mode}, 9, feeds)
                _, (got9,) = run_session(m9, feeds)
                np.testing.assert_array_equal(got9, want)


def test_roialign_opset10_is_not_half_pixel():
    """RoiAlign-10 has no half-pixel shift (onnxruntime); onnx.reference 1.22 applies
    opset 16's default there, which fastops does not follow."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 3, 10, 12)).astype(np.float32),
             "rois": np.array([[0.5, 1.2, 7.3, 8.9], [2, 2, 4, 9]], np.float32),
             "bi": np.array([0, 0], np.int64)}
    for mode in ("avg", "max"):
        m = _single("RoiAlign", ["x", "rois", "bi"], ["y"],
                    {"output_height": 3, "output_width": 4, "sampling_ratio": 2, "mode": mode},
                    10, feeds)
        _, (got,) = run_session(m, feeds)
        want = ort.InferenceSession(m.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nms_omitted_and_negative_max():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    for inputs, extra in ((["b", "s"], {}), (["b", "s", "m"], {"m": np.array([-3], np.int64)})):
        feeds = {"b": boxes, "s": scores, **extra}
        m = _single("NonMaxSuppression", inputs, ["y"], {}, 11, feeds, [np.int64])
        _, (got,) = run_session(m, feeds)
        assert got.shape == (0, 3) and got.dtype == np.int64


def test_nms_clustered_path_is_exact():
    """A class-offset NMS call (torchvision's batched_nms export) takes the clustered path;
    it must select exactly what the plain kernel selects, ties and thresholds included."""
    import fastops
    from fastops.onnx import _seed
    rng = np.random.default_rng(3)
    n_cls, per = 24, 200
    base = rng.uniform(0, 100, (n_cls * per, 2))
    wh = rng.uniform(5, 40, (n_cls * per, 2))
    boxes = np.concatenate([base, base + wh], 1)
    boxes += (np.repeat(np.arange(n_cls), per) * 200.0)[:, None]      # the offset trick
    boxes = boxes[:, [1, 0, 3, 2]].astype(np.float32)                   # [y1, x1, y2, x2]
    boxes[::7] = boxes[::7][:, [2, 3, 0, 1]]                            # swapped corners
    scores = np.round(rng.uniform(0, 1, n_cls * per), 2).astype(np.float32)  # many ties
    scores[5] = np.nan
    assert boxes.shape[0] >= _seed._CLUSTER_MIN_BOXES
    for mx, thr, sthr in ((10 ** 9, 0.5, None), (50, 0.3, 0.2), (7, 0.0, None),
                          (10 ** 9, 1.0, 0.5)):
        feeds = {"b": boxes[None], "s": scores[None, None], "m": np.array([mx], np.int64),
                 "i": np.array([thr], np.float32)}
        inputs = ["b", "s", "m", "i"]
        if sthr is not None:
            feeds["t"] = np.array([sthr], np.float32)
            inputs.append("t")
        m = _single("NonMaxSuppression", inputs, ["y"], {}, 11, feeds, [np.int64])
        _, (got,) = run_session(m, feeds)
        want = fastops.non_max_suppression(boxes[None], scores[None, None], mx, thr, sthr)
        np.testing.assert_array_equal(got, want)
    ids = _seed._interval_clusters(np.minimum(boxes[:, 0], boxes[:, 2]),
                                   np.maximum(boxes[:, 0], boxes[:, 2]))
    assert ids.max() + 1 >= n_cls // 2


# ------------------------------------------------------------------ API
def _add_model(shape=(2, 3), dtype=np.float32):
    from onnx import TensorProto
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    c = numpy_helper.from_array(np.arange(np.prod(shape), dtype=dtype).reshape(shape), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["y"]),
             helper.make_node("Identity", ["x"], ["same"]),
             helper.make_node("Identity", ["c"], ["const"]),
             helper.make_node("Reshape", ["x", "flat"], ["view"])]
    flat = numpy_helper.from_array(np.array([-1], np.int64), "flat")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, list(shape))],
                          [helper.make_tensor_value_info(n, elem, None)
                           for n in ("y", "same", "const", "view")], initializer=[c, flat])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    _ = TensorProto
    return m


def test_api_shape():
    m = _add_model()
    s = fo.Session(m)
    ins, outs = s.get_inputs(), s.get_outputs()
    assert [i.name for i in ins] == ["x"] and ins[0].type == "tensor(float)"
    assert ins[0].shape == [2, 3]
    assert [o.name for o in outs] == ["y", "same", "const", "view"]
    x = np.ones((2, 3), np.float32)
    y, view = s.run(["y", "view"], {"x": x})
    np.testing.assert_array_equal(y, x + np.arange(6).reshape(2, 3))
    assert view.shape == (6,)
    # from a path and from bytes too
    assert len(fo.Session(m.SerializeToString()).run(None, {"x": x})) == 4


def test_outputs_are_fresh_and_inputs_unchanged():
    s = fo.Session(_add_model())
    x = np.ones((2, 3), np.float32)
    keep = x.copy()
    y, same, const, view = s.run(None, {"x": x})
    assert not np.shares_memory(same, x) and not np.shares_memory(view, x)
    const[...] = -1                       # the user may write to what they get back
    same[...] = 5
    np.testing.assert_array_equal(x, keep)
    y2, _, const2, _ = s.run(None, {"x": x})
    np.testing.assert_array_equal(const2, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(y, y2)


def test_feed_errors():
    s = fo.Session(_add_model())
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="missing input 'x'"):
        s.run(None, {})
    with pytest.raises(ValueError, match="unknown input"):
        s.run(None, {"x": x, "nope": x})
    with pytest.raises(TypeError, match="dtype float64"):
        s.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match="rank"):
        s.run(None, {"x": x[0]})
    with pytest.raises(ValueError, match="dimension 1 = 3"):
        s.run(None, {"x": np.ones((2, 4), np.float32)})
    with pytest.raises(ValueError, match="unknown output"):
        s.run(["zz"], {"x": x})
    with pytest.raises(TypeError, match="ModelProto"):
        fo.Session(42)
    with pytest.raises(ValueError, match="fallback"):
        fo.Session(_add_model(), fallback="maybe")


def test_layouts_and_byte_order():
    """Non-contiguous, negative-stride, read-only and '>f4' feeds give the contiguous result."""
    s = fo.Session(_add_model())
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = s.run(["y"], {"x": np.ascontiguousarray(base[::2, ::-2])})[0]
    ro = base[::2, ::-2]
    ro.flags.writeable = False
    for x in (base[::2, ::-2], ro, base[::2, ::-2].astype(">f4")):
        np.testing.assert_array_equal(s.run(["y"], {"x": x})[0], want)


def test_fallback_warning_once_and_error_mode():
    from onnx import TensorProto
    node = helper.make_node("Erf", ["x"], ["y"])
    node2 = helper.make_node("Erf", ["y"], ["z"])
    g = helper.make_graph([node, node2], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = fo.Session(m)
    msgs = [str(x.message) for x in w if issubclass(x.category, fo.ReferenceFallbackWarning)]
    assert len(msgs) == 1 and "Erf (2)" in msgs[0]
    import math
    x = np.array([0.1, -0.5, 2.0], np.float32)
    want = np.array([math.erf(math.erf(float(v))) for v in x], np.float32)
    np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="fallback='error'"):
        fo.Session(m, fallback="error")


def test_unknown_custom_op_fails_at_load():
    from onnx import TensorProto
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="mmcv")
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("mmcv", 1)])
    with pytest.raises(NotImplementedError, match="NoSuchOp"):
        fo.Session(m)


def test_error_names_the_node():
    """An error inside a node says which node (Python 3.11+ exception notes)."""
    feeds = {"x": np.zeros((2, 3), np.float32), "k": np.array([5], np.int64)}
    m = _single("TopK", ["x", "k"], ["v", "i"], {"axis": 1}, 11, feeds, [np.float32, np.int64])
    m.graph.node[0].name = "my_topk"
    s = fo.Session(m)
    with pytest.raises(ValueError, match="topk") as info:
        s.run(None, feeds)
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:
        assert any("my_topk" in n for n in notes)


def test_constant_folding_and_dead_code():
    """Shape arithmetic on constants is folded at load; nodes no output needs never run."""
    from onnx import TensorProto
    nodes = [helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Mul", ["s", "two"], ["s2"]),
             helper.make_node("Reshape", ["x", "s2"], ["y"]),
             helper.make_node("Erf", ["x"], ["unused"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [2, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.zeros((1, 6), np.float32), "c"),
                                       numpy_helper.from_array(np.array([2, 1], np.int64), "two")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # Erf is dead: no fallback warning
        s = fo.Session(m)
    src = s._programs["numpy"].source
    assert src.count("= f") == 1, src       # only the Reshape runs
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], x.reshape(2, 6))


def test_profile():
    s = fo.Session(_add_model())
    p = s.profile({"x": np.ones((2, 3), np.float32)}, repeat=3)
    assert "Add" in p and p["total"] >= p["Add"] >= 0


@pytest.mark.parametrize("dtype,value", [("float32", 0.0), ("float32", -0.0),
                                         ("float64", 2.5), ("int64", 0), ("int32", -3),
                                         ("bool", False), ("float16", -0.0)])
def test_constant_of_shape_values(dtype, value):
    """Zero bits come from zeros (lazily mapped), every other value from a fill: -0.0
    keeps its sign bit; against onnx.reference, bit for bit."""
    from onnx import TensorProto
    from onnx.reference import ReferenceEvaluator
    T = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"],
                            value=helper.make_tensor("v", T, [1], [value]))
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", T, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    feeds = {"shape": np.array([300, 7000], np.int64)}
    got = fo.Session(m.SerializeToString()).run(None, feeds)[0]
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# ------------------------------------------------------------------ threaded arithmetic
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((1, 16, 160, 208), (1, 16, 160, 208)),
                                    ((1, 120, 1, 1), (1, 120, 40, 52)),
                                    ((3, 320, 416), (3, 1, 1)), ((3, 1, 1), (3, 320, 416)),
                                    ((400, 400), ()), ((400, 400), (400,)),
                                    ((400, 400), (400, 1)), ((2, 3, 150, 150), (1, 3, 1, 1)),
                                    ((13, 1, 1000), (1, 15, 1000))])
def test_large_float_arithmetic_equals_numpy(dtype, shapes, monkeypatch, threads):
    """Add, Sub, Mul and Div of large float arrays run on the pool's threads where the
    output splits into rows each operand reads whole or as one value (_std._rows_view),
    else NumPy: the bits of NumPy's ufunc either way (NaN payloads, signed zeros, inf,
    division by zero), on 1-3 threads; the threaded path is taken where it applies."""
    from fastops.onnx import _std
    rng = np.random.default_rng(17)
    sa, sb = shapes
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    a.flat[::97] = np.nan
    a.flat[1::101] = np.inf
    a.flat[2::103] = -0.0
    if a.size > 50:
        a.view(np.uint32 if dtype == "float32" else np.uint64).flat[50] |= 5   # NaN payload
    if b.size > 5:
        b.flat[::89] = 0
        b.flat[1::83] = -np.inf
        b.flat[5::79] = np.nan
    bits = np.uint32 if dtype == "float32" else np.uint64
    taken = []
    real = _std._threaded_binary
    monkeypatch.setattr(_std, "_threaded_binary",
                        lambda *args: taken.append(real(*args) is not None) or real(*args))
    for op, f in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                  ("Div", np.true_divide)):
        with np.errstate(all="ignore"):
            want = f(a, b)
        m = _single(op, ["a", "b"], ["y"], {}, 14, {"a": a, "b": b}, [dtype])
        sess = fo.Session(m.SerializeToString())
        for nt in (1, 2, 3):
            with threads(nt):
                got = sess.run(None, {"a": a, "b": b})[0]
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(bits), want.view(bits), err_msg=op)
    numpy_only = shapes in (((2, 3, 150, 150), (1, 3, 1, 1)), ((13, 1, 1000), (1, 15, 1000)))
    assert not any(taken) if numpy_only else taken and all(taken), taken


def test_size_switch_routes_by_operand_size():
    """The Session's Add/Sub/Mul/Div choose NumPy or the threaded path by operand size in
    C (norm.pyx SizeSwitch): at ``limit`` elements in either ndarray operand, not below;
    other operands (Python and NumPy scalars, lists) never count."""
    from fastops import _dispatch
    sw = _dispatch.kernel_module("cpu", "norm").SizeSwitch(lambda a, b: "small",
                                                           lambda a, b: "big", 100)
    assert sw(np.ones(99), np.ones(99)) == "small"
    assert sw(np.ones(100), 1.0) == "big"
    assert sw(2.0, np.ones((10, 10))) == "big"
    assert sw(np.ones(3), np.ones((1, 100), np.float32)) == "big"
    assert sw(np.ones(200)[::2], np.ones(3)) == "big"
    assert sw(np.ones(200)[::3], np.ones(3)) == "small"       # 67 elements
    assert sw(np.float64(3), [1.0] * 500) == "small"


def test_threaded_arithmetic_declines_odd_layouts():
    """Unaligned, byte-swapped, strided or broadcast-view operands and mixed dtypes go to
    NumPy (None here)."""
    from fastops.onnx import _std
    n = 1 << 18
    a = np.arange(n, dtype=np.float32)
    raw = np.zeros(4 * n + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, np.float32, count=n, offset=1)
    assert not unaligned.flags.aligned
    for x, y in [(unaligned, a), (a, unaligned), (a.astype(">f4"), a), (a[::-1], a),
                 (np.broadcast_to(a[:1], (n,)), a), (a, a.astype(np.float64)),
                 (a.astype(np.int32), a.astype(np.int32))]:
        assert _std._threaded_binary(0, x, y) is None
    np.testing.assert_array_equal(_std._threaded_binary(0, a, a), a + a)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_scalar_integer_div_truncates_as_the_array_path(dtype):
    """0-d signed integer Div (Python ints) against the same pairs as 1-D arrays (NumPy's
    vectorized path): truncation toward zero, x / 0 and MIN / -1 as the array path, the
    dtype kept."""
    info = np.iinfo(dtype)
    vals = [0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, info.max, info.min, info.min + 1]
    pairs = [(x, y) for x in vals for y in vals]
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    vec = fo.Session(_single("Div", ["a", "b"], ["y"], {}, 14, {"a": a, "b": b},
                             [dtype]).SerializeToString())
    want = vec.run(None, {"a": a, "b": b})[0]
    a0, b0 = np.array(0, dtype), np.array(0, dtype)
    one = fo.Session(_single("Div", ["a", "b"], ["y"], {}, 14, {"a": a0, "b": b0},
                             [dtype]).SerializeToString())
    for i, (x, y) in enumerate(pairs):
        got = one.run(None, {"a": np.array(x, dtype), "b": np.array(y, dtype)})[0]
        assert got.dtype == np.dtype(dtype) and got.shape == ()
        assert int(got) == int(want[i]), (x, y, got, want[i])
        if y and not (x == info.min and y == -1):
            assert int(got) == int(np.trunc(np.float64(x) / y)) or abs(x) > 2 ** 52


def test_binary_rows_checks_its_view():
    from fastops import _dispatch
    k = _dispatch.kernel_module("cpu", "norm")
    a, b, out = np.ones(12, np.float32), np.ones(4, np.float32), np.empty(12, np.float32)
    k.binary_rows(0, a, 4, 1, b, 0, 1, out, 3, 4, 2)          # rows of 4 + one row of b
    np.testing.assert_array_equal(out, 2)
    for bad in [(0, a, 4, 1, b, 1, 1, out, 3, 4, 2),            # b read past its end
                (0, a, 5, 1, b, 0, 1, out, 3, 4, 2),            # a read past its end
                (4, a, 4, 1, b, 0, 1, out, 3, 4, 2),            # no such op
                (0, a, 4, 2, b, 0, 1, out, 3, 4, 2),            # element stride 2
                (0, a, 4, 1, b, 0, 1, out[:8], 3, 4, 2)]:       # output too short
        with pytest.raises(ValueError):
            k.binary_rows(*bad)


# ------------------------------------------------------------------ donated inputs
def _scatter_chain(shape_const, reduction="none", expose=None):
    """zeros = ConstantOfShape(shape); a = ScatterElements(zeros, i, u); b = (a, j, w)
    with j, w empty; shape from an input (run time) or an initializer (folded)."""
    from onnx import TensorProto
    F, I = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["zeros"],
                              value=helper.make_tensor("v", F, [1], [0.0])),
             helper.make_node("ScatterElements", ["zeros", "i", "u"], ["a"], axis=0,
                              reduction=reduction),
             helper.make_node("ScatterElements", ["a", "j", "w"], ["b"], axis=0)]
    ins = [helper.make_tensor_value_info(n, t, None)
           for n, t in (("i", I), ("u", F), ("j", I), ("w", F))]
    inits = []
    if shape_const:
        inits.append(helper.make_tensor("shape", I, [2], [4, 3]))
    else:
        ins.append(helper.make_tensor_value_info("shape", I, None))
    outs = [helper.make_tensor_value_info("b", F, None)]
    if expose:
        outs.append(helper.make_tensor_value_info(expose, F, None))
    g = helper.make_graph(nodes, "g", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def _scatter_feeds(shape_const):
    feeds = {"i": np.array([[1, 0, 3], [1, 2, 0]], np.int64),
             "u": np.arange(6, dtype=np.float32).reshape(2, 3) + 1,
             "j": np.zeros((0, 3), np.int64), "w": np.zeros((0, 3), np.float32)}
    if not shape_const:
        feeds["shape"] = np.array([4, 3], np.int64)
    return feeds


@pytest.mark.parametrize("shape_const", [False, True])
@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_into_a_fresh_value_runs_in_place_and_stays_right(shape_const, reduction):
    """Run-time zeros are donated to the scatter (then its output to the next); folded
    zeros are a load-time constant and must not be: with "add", a constant updated in
    place would make the second run differ from the first."""
    m = _scatter_chain(shape_const, reduction)
    s = fo.Session(m.SerializeToString())
    feeds = _scatter_feeds(shape_const)
    want = np.zeros((4, 3), np.float32)
    for (r, c), v in zip([(1, 0), (0, 1), (3, 2), (1, 0), (2, 1), (0, 2)], range(1, 7)):
        want[r, c] = want[r, c] + v if reduction == "add" else v
    first = s.run(None, feeds)[0]
    second = s.run(None, feeds)[0]
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(second, want)
    assert first is not second


def test_donation_rules():
    from fastops.onnx._compile import _donations as donations_of, _readers

    def _donations(nodes, outputs):
        return donations_of(nodes, _readers(nodes), outputs)
    m = _scatter_chain(False)
    nodes = list(m.graph.node)
    got = _donations(nodes, {"b"})
    assert got == {id(nodes[1]): (0,), id(nodes[2]): (0,)}
    # a graph output is never donated (the user holds it)
    assert _donations(nodes, {"b", "a"}) == {id(nodes[1]): (0,)}
    # nor a value another node reads
    extra = helper.make_node("Identity", ["zeros"], ["z2"])
    assert _donations(nodes + [extra], {"b"}) == {id(nodes[2]): (0,)}
    # nor a graph input or a value of an op whose output may be a view (Reshape)
    scat = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"])
    assert _donations([scat], {"y"}) == {}
    rs = helper.make_node("Reshape", ["x", "s"], ["r"])
    scat2 = helper.make_node("ScatterElements", ["r", "i", "u"], ["y"])
    assert _donations([rs, scat2], {"y"}) == {}
    # nor data that is also the updates
    same = helper.make_node("ScatterElements", ["zeros", "i", "zeros"], ["y"])
    assert _donations([nodes[0], same], {"y"}) == {}


def test_donated_value_exposed_as_output_is_not_overwritten():
    """'a' is also a graph output: the second scatter must copy it."""
    m = _scatter_chain(False, expose="a")
    s = fo.Session(m.SerializeToString())
    feeds = _scatter_feeds(False)
    feeds["j"] = np.array([[0, 0, 0]], np.int64)
    feeds["w"] = np.full((1, 3), 9, np.float32)
    b, a = s.run(None, feeds)
    assert not (a == 9).any() and (b[0] == 9).all()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_with_a_scalar_index(axis):
    """The 0-d index fast path: negative indices, bounds errors, a fresh writable 0-d or
    N-d result, against np.take."""
    from onnx import TensorProto
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT64,
                                                                      None),
                                        helper.make_tensor_value_info("i", TensorProto.INT64,
                                                                      None)],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    s = fo.Session(m.SerializeToString())
    for x in (np.arange(12, dtype=np.int64).reshape(3, 4), np.arange(5, dtype=np.int64)):
        if axis == 1 and x.ndim == 1:
            continue
        dim = x.shape[axis]
        for i in (0, dim - 1, -1, -dim):
            got = s.run(None, {"x": x, "i": np.array(i, np.int64)})[0]
            want = np.take(x, i, axis=axis)
            assert got.shape == want.shape and got.flags.writeable
            np.testing.assert_array_equal(got, want)
            assert not np.shares_memory(got, x)
        for i in (dim, -dim - 1):
            with pytest.raises(IndexError, match="out of range"):
                s.run(None, {"x": x, "i": np.array(i, np.int64)})


@pytest.mark.parametrize("attrs", [dict(strides=[2, 2]), dict(strides=[3, 2], ceil_mode=1),
                                   dict(strides=[1, 1]), dict(strides=[2, 3], ceil_mode=0)])
def test_maxpool_one_element_window(attrs):
    """kernel 1 (FPN's LastLevelMaxPool) subsamples; against onnx.reference, NaN kept."""
    from onnx import TensorProto
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    x = np.random.default_rng(1).standard_normal((2, 3, 10, 13)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    got = fo.Session(m.SerializeToString()).run(None, {"x": x})[0]
    if attrs["strides"] == [1, 1]:      # (onnx.reference 1.22 fails on this one)
        want = x
    else:
        want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, 672, 20, 26), (2, 3, 5), (2, 4, 3, 5, 7), (1, 1, 1, 1),
                                   (3, 2, 17, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_global_average_pool(shape, dtype):
    """The plane-means kernel against a float64 mean: lengths not a multiple of its 16
    running sums, 1 to 3 spatial axes, a non-contiguous input, NaN in one plane."""
    from onnx import TensorProto
    tt = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tt, None)],
                          [helper.make_tensor_value_info("y", tt, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    s = fo.Session(m.SerializeToString())
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 10 + 3).astype(dtype)
    if x.shape[1] > 1:
        x[0, 1].reshape(-1)[0] = np.nan
    for xin in (x, np.asfortranarray(x)):
        got = s.run(None, {"x": xin})[0]
        want = x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True)
        assert got.shape == want.shape and got.dtype == dtype
        tol = 1e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
