"""fastops.loop (ONNX Loop as a Python function) and Loop nodes in fastops.onnx.Session.

fastops.loop is checked against plain Python loops written from the ONNX spec; Session's
Loop against onnxruntime on hand-built graphs for every edge case the issue lists (cond
omitted, M omitted, zero trips, loop-carried sequences, outer-scope values, nested
loops, 0-d scan outputs), and against NumPy for opset 1 (which onnxruntime does not load).
"""
import numpy as np
import pytest

import fastops
from fastops.control import loop
from tests.conftest import peer, to_numpy

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import fastops.onnx as fo  # noqa: E402


# ------------------------------------------------------------------ fastops.loop
def _spec_loop(body, M, cond, carried):
    """The ONNX Loop pseudo-code, literally."""
    i = 0
    keep = True if cond is None else bool(cond)
    state = list(carried)
    scans = None
    while (M is None or i < M) and keep:
        res = body(i, True, *state)
        if cond is not None:
            keep = bool(res[0])
        state = list(res[1:1 + len(carried)])
        extra = res[1 + len(carried):]
        scans = [[] for _ in extra] if scans is None else scans
        for k, v in enumerate(extra):
            scans[k].append(np.asarray(v))
        i += 1
    return state, scans


def test_loop_matches_spec():
    def body(i, cond, v, acc):
        v2 = v * 2 + i
        return (v2.sum() < 1e6, v2, acc + v2.sum(), v2, np.float32(i))
    v0 = np.arange(3, dtype=np.float32)
    for M, cond in ((5, True), (None, True), (40, None), (0, True), (3, False)):
        got = loop(body, M, cond, v0, np.float32(0), scan_outputs=[np.float32, np.float32])
        state, scans = _spec_loop(body, M, cond, [v0, np.float32(0)])
        np.testing.assert_array_equal(got[0], state[0])
        np.testing.assert_array_equal(got[1], state[1])
        if scans is None:
            assert got[2].shape == (0,) and got[3].shape == (0,)
            assert got[2].dtype == np.float32
        else:
            np.testing.assert_array_equal(got[2], np.stack(scans[0]))
            assert got[3].shape == (len(scans[1]),)        # 0-d values: rank + 1
            np.testing.assert_array_equal(got[3], np.stack(scans[1]))


def test_loop_cond_omitted_ignores_body_cond():
    calls = []

    def body(i, cond, x):
        calls.append(i)
        return (False, x + 1)            # ignored: cond is omitted
    assert loop(body, 4, None, 0) == (4,)
    assert calls == [0, 1, 2, 3]
    assert loop(body, 4, True, 0) == (1,)   # honoured when cond is given


def test_loop_zero_trips_and_carried_kinds():
    seq = [np.zeros(2), np.ones(2)]
    out = loop(lambda i, c, s, o: (True, s, o), 0, True, seq, None, scan_outputs=1)
    assert out[0] is seq and out[1] is None and out[2].shape == (0,)
    assert out[2].dtype == np.float64
    assert loop(lambda i, c, a: (True, a), 0, True, np.ones(3)) [0].shape == (3,)
    assert len(loop(lambda i, c, a: (True, a, a), 0, True, np.ones(3))) == 1   # no spec

    def grow(i, c, s, opt):
        return (True, s + [np.full(2, i)], None if i % 2 else np.float64(i))
    s, opt = loop(grow, 3, True, [], None)
    assert len(s) == 3 and np.array_equal(s[2], [2, 2]) and opt == 2.0


def test_loop_values_are_not_copied_or_modified():
    x = np.arange(4.0)
    x.flags.writeable = False
    out = loop(lambda i, c, a: (True, a), 3, True, x)
    assert out[0] is x


def test_loop_stays_on_device(xp):
    x = xp.arange(4, dtype=xp.float32)
    v, s = loop(lambda i, c, a: (a.sum() < 100, a + 1, a * 2), 10, xp.asarray(True), x)
    assert type(v) is type(x) and type(s) is type(x)
    np.testing.assert_array_equal(to_numpy(s)[3], (np.arange(4) + 3) * 2)
    e = loop(lambda i, c, a: (True, a, a), 0, True, x, scan_outputs=[np.float32])
    assert type(e[1]) is type(x) and e[1].shape == (0,)


def test_loop_torch_tensors():
    torch = peer("torch")
    x = torch.arange(3, dtype=torch.float32)
    v, s = loop(lambda i, c, a: (True, a + 1, a * i), 4, True, x)
    assert isinstance(s, torch.Tensor) and tuple(s.shape) == (4, 3)
    e = loop(lambda i, c, a: (True, a, a), 0, True, x, scan_outputs=[np.float32])
    assert isinstance(e[1], torch.Tensor) and tuple(e[1].shape) == (0,)


@pytest.mark.parametrize("args, exc, match", [
    (("nope", 3, True), TypeError, "loop: body must be callable"),
    ((None, -1, True), ValueError, "loop: max_trip_count=-1"),
    ((None, 1 << 63, True), ValueError, "loop: max_trip_count"),
    ((None, 2.5, True), TypeError, "loop: max_trip_count must be an integer"),
    ((None, np.array([1, 2]), True), TypeError, "loop: max_trip_count"),
    ((None, 3, 1), TypeError, "loop: cond must be a bool"),
    ((None, 3, np.array(1.0)), TypeError, "loop: cond .* dtype float64"),
    ((None, 3, np.array([True, False])), ValueError, "loop: cond must hold exactly one"),
    ((None, None, None), ValueError, "loop: max_trip_count and cond are both None"),
])
def test_loop_bad_arguments(args, exc, match):
    body = args[0] if args[0] is not None else (lambda i, c: (True,))
    with pytest.raises(exc, match=match):
        loop(body, *args[1:])


@pytest.mark.parametrize("body, exc, match", [
    (lambda i, c, a: [True, a], None, None),                       # a list is fine
    (lambda i, c, a: a, TypeError, "must return a tuple"),
    (lambda i, c, a: (True,), ValueError, "returned 1 value.*expected at least 2"),
    (lambda i, c, a: (True, a) + ((a,) if i else ()), ValueError, "1 scan output.*0 before"),
    (lambda i, c, a: (True, a, np.ones(i + 1)), ValueError, "scan output 0 cannot be stacked"),
    (lambda i, c, a: (True, a, [a]), TypeError, "scan output 0 .* list"),
    (lambda i, c, a: (True, a, None), TypeError, "scan output 0 .* None"),
    (lambda i, c, a: (1, a), TypeError, "cond returned by body at iteration 0"),
])
def test_loop_bad_bodies(body, exc, match):
    if exc is None:
        assert loop(body, 2, True, 1)[0] == 1
        return
    with pytest.raises(exc, match=match):
        loop(body, 3, True, np.zeros(2))


def test_loop_scan_outputs_spec_checked():
    with pytest.raises(ValueError, match="scan_outputs says 2"):
        loop(lambda i, c, a: (True, a, a), 2, True, 1, scan_outputs=2)
    with pytest.raises(TypeError, match="scan_outputs"):
        loop(lambda i, c, a: (True, a), 0, True, 1, scan_outputs="x")


def test_loop_is_fast_enough():
    """A sanity bound, not a benchmark: 10 000 trivial iterations well under a second."""
    import time
    t = time.perf_counter()
    loop(lambda i, c, a: (True, a), 10000, True, 0)
    assert time.perf_counter() - t < 1.0


# ------------------------------------------------------------------ Loop nodes
def _ort(model, feeds):
    ort = peer("onnxruntime")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _model(nodes, inputs, outputs, opset=17, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 9
    return m


def _vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _compare(model, feeds):
    got = fo.Session(model).run(None, feeds)
    want = _ort(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            assert len(g) == len(w)
            for a, b in zip(g, w):
                np.testing.assert_array_equal(a, b)
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-6)
    return got


def _counter_body(with_cond_compute=False, outer=None):
    """Body: v = v + step (step from the outer scope if ``outer``), scan v and i;
    the condition is ``sum(v) < 20`` when computed, else passed through."""
    step = outer or "one"
    nodes = [helper.make_node("Add", ["v_in", step], ["v_out"]),
             helper.make_node("Identity", ["i"], ["i_scan"])]
    inits = [] if outer else [numpy_helper.from_array(np.ones(3, np.float32), "one")]
    if with_cond_compute:
        nodes += [helper.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
                  helper.make_node("Less", ["s", "limit"], ["c_out"])]
        inits.append(numpy_helper.from_array(np.array(20, np.float32), "limit"))
    else:
        nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    return helper.make_graph(
        nodes, "body", [_vi("i", TP.INT64, []), _vi("c_in", TP.BOOL, []),
                        _vi("v_in", TP.FLOAT, [3])],
        [_vi("c_out", TP.BOOL, []), _vi("v_out", TP.FLOAT, [3]), _vi("i_scan", TP.INT64, [])],
        initializer=inits)


@pytest.mark.parametrize("M", [0, 1, 7, -2])
def test_session_loop_cond_omitted(M):
    node = helper.make_node("Loop", ["M", "", "v0"], ["v", "iters"], body=_counter_body())
    m = _model([node], [_vi("M", TP.INT64, []), _vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    got = _compare(m, {"M": np.array(M, np.int64), "v0": np.zeros(3, np.float32)})
    assert got[1].shape == (max(M, 0),)                # 0-d scan values: (iterations,)


@pytest.mark.parametrize("cond", [True, False])
def test_session_loop_m_omitted(cond):
    node = helper.make_node("Loop", ["", "c", "v0"], ["v", "iters"],
                            body=_counter_body(with_cond_compute=True))
    m = _model([node], [_vi("c", TP.BOOL, []), _vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    got = _compare(m, {"c": np.array(cond), "v0": np.zeros(3, np.float32)})
    assert got[1].shape == ((7,) if cond else (0,))


def test_session_loop_m_and_cond():
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v", "iters"],
                            body=_counter_body(with_cond_compute=True))
    m = _model([node], [_vi("M", TP.INT64, []), _vi("c", TP.BOOL, []),
                        _vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    for M in (3, 100):
        _compare(m, {"M": np.array(M, np.int64), "c": np.array(True),
                     "v0": np.zeros(3, np.float32)})


def test_session_loop_outer_scope_values():
    """The body reads ``step`` from the main graph, computed there at run time."""
    node0 = helper.make_node("Mul", ["x", "x"], ["step"])
    node = helper.make_node("Loop", ["M", "", "v0"], ["v", "iters"],
                            body=_counter_body(outer="step"))
    m = _model([node0, node], [_vi("M", TP.INT64, []), _vi("v0", TP.FLOAT, [3]),
                               _vi("x", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    got = _compare(m, {"M": np.array(4, np.int64), "v0": np.zeros(3, np.float32),
                       "x": np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(got[0], [4, 16, 36])


def test_session_nested_loops_with_captures():
    """An inner Loop reading a value of the main graph and one of the outer body."""
    inner_body = helper.make_graph(
        [helper.make_node("Add", ["a_in", "outer_i_f"], ["t"]),
         helper.make_node("Add", ["t", "bias"], ["a_out"]),
         helper.make_node("Identity", ["c2"], ["c2_out"])],
        "inner", [_vi("j", TP.INT64, []), _vi("c2", TP.BOOL, []), _vi("a_in", TP.FLOAT, [])],
        [_vi("c2_out", TP.BOOL, []), _vi("a_out", TP.FLOAT, [])])
    outer_body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["outer_i_f"], to=TP.FLOAT),
         helper.make_node("Loop", ["K", "", "acc_in"], ["acc_out"], body=inner_body),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "outer", [_vi("i", TP.INT64, []), _vi("c", TP.BOOL, []), _vi("acc_in", TP.FLOAT, [])],
        [_vi("c_out", TP.BOOL, []), _vi("acc_out", TP.FLOAT, []), _vi("acc_in", TP.FLOAT, [])])
    node = helper.make_node("Loop", ["M", "", "a0"], ["acc", "trace"], body=outer_body)
    m = _model([node], [_vi("M", TP.INT64, []), _vi("K", TP.INT64, []),
                        _vi("a0", TP.FLOAT, []), _vi("bias", TP.FLOAT, [])],
               [_vi("acc", TP.FLOAT, None), _vi("trace", TP.FLOAT, None)])
    feeds = {"M": np.array(3, np.int64), "K": np.array(2, np.int64),
             "a0": np.array(0.5, np.float32), "bias": np.array(0.25, np.float32)}
    got = _compare(m, feeds)
    acc, trace = 0.5, []
    for i in range(3):
        trace.append(acc)
        for _ in range(2):
            acc = acc + i + 0.25
    np.testing.assert_allclose(got[0], acc)
    np.testing.assert_allclose(got[1], trace)


def test_session_loop_carried_sequence():
    """A loop-carried sequence grown with SequenceInsert, then concatenated."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
         helper.make_node("Unsqueeze", ["fi", "zero"], ["u"]),
         helper.make_node("SequenceInsert", ["s_in", "u"], ["s_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [_vi("i", TP.INT64, []), _vi("c", TP.BOOL, []),
                 helper.make_tensor_sequence_value_info("s_in", TP.FLOAT, None)],
        [_vi("c_out", TP.BOOL, []), helper.make_tensor_sequence_value_info("s_out", TP.FLOAT,
                                                                         None)],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "zero")])
    nodes = [helper.make_node("SequenceEmpty", [], ["s0"], dtype=TP.FLOAT),
             helper.make_node("Loop", ["M", "", "s0"], ["s"], body=body),
             helper.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    m = _model(nodes, [_vi("M", TP.INT64, [])],
               [_vi("cat", TP.FLOAT, None), _vi("n", TP.INT64, None)])
    got = _compare(m, {"M": np.array(5, np.int64)})
    np.testing.assert_array_equal(got[0], np.arange(5, dtype=np.float32))


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23, 24, 25])
def test_session_loop_every_opset(opset):
    """The same Loop at every version of the op (opset 1: checked against NumPy; the
    versions onnxruntime loads also against onnxruntime)."""
    from onnx.defs import onnx_opset_version
    if opset > onnx_opset_version():
        pytest.skip("opset newer than this onnx")
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "one"], ["v_out"]),
         helper.make_node("Mul", ["v_out", "v_in"], ["sq"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [_vi("i", TP.INT64, []), _vi("c", TP.BOOL, []), _vi("v_in", TP.FLOAT, [2])],
        [_vi("c_out", TP.BOOL, []), _vi("v_out", TP.FLOAT, [2]), _vi("sq", TP.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.ones(2, np.float32), "one")])
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v", "sq"], body=body)
    m = _model([node], [_vi("M", TP.INT64, []), _vi("c", TP.BOOL, []),
                        _vi("v0", TP.FLOAT, [2])],
               [_vi("v", TP.FLOAT, None), _vi("sq", TP.FLOAT, None)], opset=opset)
    m.ir_version = min(onnx.IR_VERSION, 3 if opset == 1 else m.ir_version)
    feeds = {"M": np.array(4, np.int64), "c": np.array(True), "v0": np.zeros(2, np.float32)}
    v, sq = fo.Session(m).run(None, feeds)
    np.testing.assert_array_equal(v, [4, 4])
    np.testing.assert_array_equal(sq, np.array([[0, 0], [2, 2], [6, 6], [12, 12]], np.float32))
    ort = peer("onnxruntime")
    if opset >= 11 and opset <= 21:
        _compare(m, feeds)
    _ = ort


def test_session_loop_never_ending_is_refused():
    node = helper.make_node("Loop", ["", "", "v0"], ["v", "iters"], body=_counter_body())
    m = _model([node], [_vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    with pytest.raises(ValueError, match="never end"):
        fo.Session(m).run(None, {"v0": np.zeros(3, np.float32)})
    node = helper.make_node("Loop", ["", "c", "v0"], ["v", "iters"], body=_counter_body())
    m = _model([node], [_vi("c", TP.BOOL, []), _vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None), _vi("iters", TP.INT64, None)])
    with pytest.raises(ValueError, match="never end"):
        fo.Session(m).run(None, {"c": np.array(True), "v0": np.zeros(3, np.float32)})


def test_session_loop_error_inside_body_names_the_node():
    body = helper.make_graph(
        [helper.make_node("Reshape", ["v_in", "shape"], ["v_out"], name="bad_reshape"),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [_vi("i", TP.INT64, []), _vi("c", TP.BOOL, []), _vi("v_in", TP.FLOAT, [3])],
        [_vi("c_out", TP.BOOL, []), _vi("v_out", TP.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array([2, 2], np.int64), "shape")])
    node = helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body, name="the_loop")
    m = _model([node], [_vi("M", TP.INT64, []), _vi("v0", TP.FLOAT, [3])],
               [_vi("v", TP.FLOAT, None)])
    with pytest.raises(ValueError) as info:
        fo.Session(m).run(None, {"M": np.array(2, np.int64), "v0": np.zeros(3, np.float32)})
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:
        assert any("bad_reshape" in n for n in notes), notes


def test_session_loop_on_gpu(xp):
    """Arrays stay on their device: CuPy feeds give CuPy outputs (GPU-marked run)."""
    from fastops._bench.onnx import loop_model
    m = loop_model(4, cond_input=False)
    feeds = {"M": xp.asarray(np.array(6, np.int64)), "v0": xp.zeros(4, dtype=xp.float32)}
    v, scan = fo.Session(m).run(None, feeds)
    assert type(v) is type(feeds["v0"]) and to_numpy(scan).shape == (6, 4)
    np.testing.assert_array_equal(to_numpy(v), np.full(4, 6, np.float32))


def test_python_loop_and_session_agree():
    """fastops.loop with a NumPy body equals the Session running the same ONNX body."""
    from fastops._bench.onnx import loop_model
    m = loop_model(5, cond_input=False)
    v0 = np.linspace(0, 1, 5).astype(np.float32)
    one = np.ones(5, np.float32)
    v, scan = loop(lambda i, c, v: (True, v + one, (v + one) * v), 9, None, v0)
    sv, sscan = fo.Session(m).run(None, {"M": np.array(9, np.int64), "v0": v0})
    np.testing.assert_array_equal(v, sv)
    np.testing.assert_array_equal(scan, sscan)
    _ = fastops
