"""fastops kernels inside onnxruntime, through onnxruntime-extensions' Python custom ops.

onnxruntime-extensions runs a Python function for every node whose op type was
registered with ``onnx_op`` (a "PyOp").  A PyOp has a fixed number of inputs (their
element types may be left open), fixed output element types, string/int/float
attributes only, and no optional inputs.  So at load time each node that fastops takes
over is rewritten:

* its domain becomes ``fastops`` and its op type ``n<inputs>__<output types>``;
* its attributes are replaced by one string attribute, ``fastops_node``, the key of the
  node's callable (built once, by the same builders as fastops.onnx.Session);
* omitted optional inputs are dropped (the callable gets None in their place), omitted
  outputs get placeholder names.

All the PyOps fastops can need (1 to 5 inputs of any type; one output of any plain
element type, or a value output and an int64 or int32 index output: 165 op types) are
registered at once, before the first session: onnxruntime-extensions keeps the PyOps of
a domain in one std::vector and hands onnxruntime pointers into it, so registering more
PyOps after a session exists would move them under that session (a crash we hit when
types were registered one signature at a time).

The callback returns contiguous arrays, which onnxruntime-extensions copies with one
memcpy (its default path turns every output into a Python list first: a chained hook
skips that for fastops nodes and leaves every other PyOp alone).
"""
import itertools
import threading
import uuid
import weakref

import numpy as np

from fastops.onnx import _registry
from fastops.onnx._registry import KERNELS, NodeDef, Unsupported, canonical_domain

# the standard ops ort_session(seed_ops=True) hands to fastops: the ones measured clearly
# faster than onnxruntime's kernels inside exported detectors once the PyOp copies are
# paid (fastops/_bench/onnx.py, docs/onnx.md).  RoiAlign joined once its channel-
# interleaved kernel took Faster R-CNN's 150 RoIs on the 10x13 level from 20 to 6 ms
# (onnxruntime: 11); ScatterElements is about even there and loses its margin to the
# copies.
FAST_SEED_OPS = ("NonMaxSuppression", "RoiAlign")

# output element types: "T<k>" = the type of input k, else a TensorProto name
_OUT_RULES = {
    "MMCVRoiAlign": ["T0"], "MMCVRoIAlign": ["T0"], "NonMaxSuppression": ["INT64"],
    "MMCVDeformConv2d": ["T0"], "MMCVModulatedDeformConv2d": ["T0"], "grid_sampler": ["T0"],
    "cummax": ["T0", "INT32"], "cummin": ["T0", "INT32"], "MMCVInstanceNormalization": ["T0"],
    "ScatterND": ["T0"], "ScatterElements": ["T0"], "Scatter": ["T0"], "RoiAlign": ["T0"],
    "TopK": ["T0", "INT64"], "Resize": ["T0"], "Upsample": ["T0"], "NonZero": ["INT64"],
    "GridSample": ["T0"], "InstanceNormalization": ["T0"], "DeformConv": ["T0"],
    "GatherElements": ["T0"], "GatherND": ["T0"],
}
_MMCV_NMS_OUT = ["INT32"]

_lock = threading.Lock()
_table = {}                 # fastops_node key -> (fn, positions, n_slots, multi, picks, dtypes)
_opdefs = {}                # (inputs, output type names) -> registered op type
_hook_installed = False
_ids = itertools.count()


def _elem_name(elem):
    from onnx import TensorProto
    return TensorProto.DataType.Name(elem)


def _pyop_type(ortx, elem):
    """The PyCustomOpDef dt_* code of a TensorProto element type, or None."""
    name = _elem_name(elem).lower()
    table = {"float": "dt_float", "double": "dt_double", "int8": "dt_int8",
             "int16": "dt_int16", "int32": "dt_int32", "int64": "dt_int64",
             "uint8": "dt_uint8", "uint16": "dt_uint16", "uint32": "dt_uint32",
             "uint64": "dt_uint64", "bool": "dt_bool"}
    attr = table.get(name)
    return None if attr is None else getattr(ortx.PyCustomOpDef, attr)


def _dispatch(key, feed):
    fn, positions, n_slots, multi, picks, dtypes = _table[key]
    args = [None] * n_slots
    for p, v in zip(positions, feed):
        args[p] = v
    res = fn(*args)
    res = tuple(res) if multi else (res,)
    return [np.ascontiguousarray(np.asarray(res[j]), dtype=dt) for j, dt in zip(picks, dtypes)]


def _install_hook(ortx):
    """Chain a hook in front of onnxruntime-extensions' PyOp callback: fastops nodes get
    their arrays back as arrays (one memcpy on the C++ side), other PyOps are untouched."""
    global _hook_installed
    if _hook_installed:
        return
    from onnxruntime_extensions import _ocos
    previous = _ocos._on_pyop_invocation

    def hook(k_id, feed, attributes):
        key = attributes.get("fastops_node") if attributes else None
        if key is None or key not in _table:
            return previous(k_id, feed, attributes)
        out = [k_id]
        for a in _dispatch(key, feed):
            out.append(a.shape)
            out.append(a)
        return tuple(out)

    ortx.PyCustomOpDef.install_hooker(hook)
    _hook_installed = True


_PLAIN_TYPES = ("float", "double", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "bool")
_MAX_INPUTS = 5
DOMAIN = "fastops"


def _register_all(ortx):
    """Register every PyOp signature fastops can use, once, before any session."""
    if _opdefs:
        return

    def body_for(n_out):
        def body(*feed, fastops_node=None):      # the default (list-converting) path
            res = _dispatch(fastops_node, feed)
            return res[0] if n_out == 1 else tuple(res)
        return body
    outs = [(t,) for t in _PLAIN_TYPES] + [(t, "int64") for t in _PLAIN_TYPES] + \
        [(t, "int32") for t in _PLAIN_TYPES]
    code = {t: getattr(ortx.PyCustomOpDef, "dt_" + t) for t in _PLAIN_TYPES}
    for n_in in range(1, _MAX_INPUTS + 1):
        for o in outs:
            name = f"n{n_in}__{'_'.join(o)}"
            _opdefs[(n_in, o)] = name
            ortx.onnx_op(op_type=f"{DOMAIN}::{name}",
                         inputs=[ortx.PyCustomOpDef.undefined] * n_in,
                         outputs=[code[t] for t in o],
                         attrs={"fastops_node": ortx.PyCustomOpDef.dt_string})(
                             body_for(len(o)))


def _opdef(in_types, out_types):
    """The registered op type for a node, or None when no PyOp fits it."""
    key = (len(in_types), tuple(_elem_name(t).lower() for t in out_types))
    return _opdefs.get(key)


def _light_copy(model):
    """The model with every initializer replaced by a typed graph input: element types
    are all the rewrite needs, and shape inference then skips the weights."""
    import onnx
    from onnx import helper
    src = model.graph
    light = onnx.ModelProto()
    light.ir_version = model.ir_version
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    g = light.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    names = {i.name for i in g.input}
    for t in src.initializer:
        if t.name not in names:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return light


def _collect_types(graph, types):
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.elem_type:
            types[vi.name] = tt.elem_type
    for t in graph.initializer:
        types[t.name] = t.data_type
    for node in graph.node:
        if node.op_type == "Constant" and canonical_domain(node.domain) == "":
            for a in node.attribute:
                if a.name == "value":
                    types[node.output[0]] = a.t.data_type
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _collect_types(sub, types)


def _known_types(model):
    """value name -> TensorProto element type over every graph of the model (names are
    unique across subgraphs in exported models), from the declarations, initializers and
    onnx shape inference."""
    import onnx
    types = {}
    _collect_types(model.graph, types)
    try:
        inferred = onnx.shape_inference.infer_shapes(_light_copy(model))
        _collect_types(inferred.graph, types)
    except Exception:        # inference is a help, not a requirement
        pass
    return types


def _graphs(graph):
    """The graph and all its subgraphs, outermost first."""
    yield graph
    for node in graph.node:
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _graphs(sub)


def ort_session(model, sess_options=None, providers=None, *, seed_ops=False):
    """An ``onnxruntime.InferenceSession`` in which fastops runs the ``mmcv::`` nodes
    (and, with ``seed_ops``, standard seed-op nodes); onnxruntime runs the rest.

    Parameters
    ----------
    model : onnx.ModelProto, path or bytes
        Not modified (a rewritten copy goes to onnxruntime).
    sess_options : onnxruntime.SessionOptions, optional
        Used as given, with onnxruntime-extensions' custom-op library registered on it.
        Default: a new one.
    providers : list, optional
        onnxruntime providers; default ``["CPUExecutionProvider"]``.  The fastops nodes
        run on the CPU (NumPy) whatever the provider.
    seed_ops : bool or iterable of op types, keyword-only
        False (default): only the ``mmcv::`` / ``mmdeploy::`` nodes, which onnxruntime
        cannot run at all.  True: also the standard ops measured clearly faster than
        onnxruntime's kernels inside exported detectors, PyOp copies included
        (``FAST_SEED_OPS``: NonMaxSuppression, RoiAlign).  An iterable of op types: exactly
        those standard ops (any op fastops.onnx.Session runs on a fastops kernel, e.g.
        ``["NonMaxSuppression", "RoiAlign", "GridSample"]``).

    Returns
    -------
    onnxruntime.InferenceSession, with ``fastops_nodes`` (how many nodes fastops runs,
    per op type) set on it.

    Raises
    ------
    ImportError
        onnxruntime or onnxruntime-extensions is missing (``pip install
        "fastops[onnx]"``).
    NotImplementedError
        An ``mmcv::`` node whose element types cannot be determined, or that uses
        float16 (onnxruntime-extensions' Python ops have no float16).

    Notes
    -----
    Nodes are rewritten into PyOps of domain ``fastops`` (attributes replaced by a key
    into a table of prebuilt callables), in the main graph and in subgraphs (If
    branches, Loop bodies); a standard seed-op node whose types are unknown or
    unsupported stays in onnxruntime.
    Each fastops node costs a Python call and one copy of its inputs and outputs (the
    PyOp protocol), so ``seed_ops`` pays off on large nodes (see docs/onnx.md).
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ImportError("fastops.onnx.ort_session needs onnxruntime: "
                          "pip install 'fastops[onnx]'") from exc
    try:
        import onnxruntime_extensions as ortx
    except ImportError as exc:
        raise ImportError("fastops.onnx.ort_session needs onnxruntime-extensions: "
                          "pip install 'fastops[onnx]'") from exc
    import onnx
    from onnx import helper

    from fastops.onnx._compile import Compiler, node_captures, parse_attribute
    from fastops.onnx._session import load_model

    src = load_model(model)
    proto = onnx.ModelProto()
    proto.CopyFrom(src)
    if seed_ops is True:
        chosen = set(FAST_SEED_OPS)
    elif seed_ops is False or seed_ops is None:
        chosen = set()
    else:
        chosen = set(seed_ops)
        unknown = [op for op in chosen if ("", op) not in KERNELS]
        if unknown:
            raise ValueError(f"fastops.onnx.ort_session: seed_ops {unknown} have no fastops "
                             f"kernel")
    opsets = {canonical_domain(o.domain): int(o.version) for o in proto.opset_import}
    opsets.setdefault("", 1)
    with _lock:
        _register_all(ortx)
        _install_hook(ortx)
        types = _known_types(proto)
        comp = Compiler(np, opsets, proto.ir_version)
        keys = []
        counts = {}
        for node in [nd for g in _graphs(proto.graph) for nd in g.node]:
            dom = canonical_domain(node.domain)
            mmcv = dom in _registry.MMCV_DOMAINS
            if not mmcv and not (dom == "" and node.op_type in chosen):
                continue
            where = f"{node.domain}::{node.op_type} node {node.name!r}"
            entry = KERNELS.get((dom, node.op_type))
            if entry is None:
                if mmcv:
                    raise NotImplementedError(f"fastops.onnx.ort_session: {where} has no "
                                              f"fastops kernel")
                continue
            present = [(k, x) for k, x in enumerate(node.input) if x]
            in_types = [types.get(x) for _, x in present]
            rule = _MMCV_NMS_OUT if (mmcv and node.op_type == "NonMaxSuppression") else \
                _OUT_RULES.get(node.op_type)
            out_names = list(node.output)
            if rule is None or any(t is None for t in in_types):
                if mmcv:
                    raise NotImplementedError(f"fastops.onnx.ort_session: the input element "
                                              f"types of {where} are unknown")
                continue
            out_types = [in_types[int(r[1:])] if r.startswith("T") else
                         getattr(onnx.TensorProto, r) for r in rule][:len(out_names)]
            op_name = _opdef(in_types, out_types)
            if op_name is None or any(_pyop_type(ortx, t) is None
                                      for t in in_types + out_types):
                if mmcv:
                    raise NotImplementedError(
                        f"fastops.onnx.ort_session: {where} has element types "
                        f"{[_elem_name(t) for t in in_types + out_types]}; onnxruntime-"
                        f"extensions' Python ops support no float16/bfloat16/string")
                continue
            builder, multi = entry
            attrs = {a.name: parse_attribute(a) for a in node.attribute}
            n = NodeDef(node.op_type, dom, comp.version(node.domain), attrs, node.input,
                        node.output, np, node.name, node, node_captures(node), comp)
            try:
                fn = builder(n)
            except Unsupported:
                if mmcv:
                    raise
                continue
            key = f"{uuid.uuid4().hex}:{next(_ids)}"
            picks = list(range(len(out_names)))
            dtypes = [np.dtype(helper.tensor_dtype_to_np_dtype(t)) for t in out_types]
            _table[key] = (fn, [k for k, _ in present], len(node.input), multi, picks, dtypes)
            keys.append(key)
            for k, o in enumerate(out_names):
                if not o:
                    out_names[k] = f"fastops_unused_{key}_{k}"
                else:
                    types[o] = out_types[k]
            new = helper.make_node(op_name, [x for _, x in present], out_names,
                                   name=node.name, domain=DOMAIN, fastops_node=key)
            node.CopyFrom(new)
            label = f"{dom}::{n.op_type}" if dom else n.op_type
            counts[label] = counts.get(label, 0) + 1
        if keys and not any(o.domain == DOMAIN for o in proto.opset_import):
            proto.opset_import.append(helper.make_opsetid(DOMAIN, 1))

    so = sess_options if sess_options is not None else ort.SessionOptions()
    so.register_custom_ops_library(ortx.get_library_path())
    try:
        sess = ort.InferenceSession(proto.SerializeToString(), so,
                                    providers=providers or ["CPUExecutionProvider"])
    except Exception:
        for k in keys:
            _table.pop(k, None)
        raise
    weakref.finalize(sess, _forget, keys)
    sess.fastops_nodes = counts
    return sess


def _forget(keys):
    for k in keys:
        _table.pop(k, None)
