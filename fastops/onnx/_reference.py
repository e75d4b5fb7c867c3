"""The fallback: run one node on onnx.reference.

The node is wrapped in a one-node model whose inputs are the node's inputs plus the
outer-scope values its subgraphs read, and evaluated by ``ReferenceEvaluator`` (built
once; again per input-type signature for the few ops whose implementation depends on
the input types).  On the GPU backend the values go through the host.
"""
import numpy as np

from fastops.onnx._registry import is_gpu


def _value_info(name, value):
    from onnx import TypeProto, ValueInfoProto, helper
    if isinstance(value, list):
        if value and hasattr(value[0], "dtype"):
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(value[0].dtype))
            return helper.make_tensor_sequence_value_info(name, elem, None)
        return ValueInfoProto(name=name, type=TypeProto())
    if value is not None and hasattr(value, "dtype") and np.dtype(value.dtype) != object:
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(value.dtype))
        return helper.make_tensor_value_info(name, elem, list(getattr(value, "shape", ())))
    return ValueInfoProto(name=name)


def _to_host(v):
    if isinstance(v, list):
        return [_to_host(x) for x in v]
    get = getattr(v, "get", None)          # a device array (NumPy arrays have no .get)
    return get() if get is not None and v is not None else v


def _to_device(xp, v):
    if isinstance(v, list):
        return [_to_device(xp, x) for x in v]
    if isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype != object:
        return xp.asarray(v)
    return v


def reference_callable(n):
    """fn(*inputs, *captures) -> tuple of the node's outputs, computed by onnx.reference."""
    from onnx import TypeProto, helper
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import RuntimeContextError

    comp = n.compiler
    arg_names = list(n.inputs) + list(n.captures)
    out_names = [o for o in n.outputs if o]

    def make(values):
        seen = set()
        vis = []
        for name, v in zip(arg_names, values):
            if name and name not in seen:
                seen.add(name)
                vis.append(_value_info(name, v))
        outs = [helper.make_value_info(o, TypeProto()) for o in out_names]
        graph = helper.make_graph([n.proto], "fastops_fallback", vis, outs)
        opsets = [helper.make_opsetid(d, v) for d, v in comp.opsets.items()]
        if n.domain and n.domain not in comp.opsets:
            opsets.append(helper.make_opsetid(n.domain, n.version))
        model = helper.make_model(graph, opset_imports=opsets)
        if comp.ir_version:
            model.ir_version = comp.ir_version
        return ReferenceEvaluator(model)

    # built at the first call with the input types (some implementations, such as
    # expanded function ops, depend on them); a node no implementation exists for is
    # reported here, at load
    try:
        make([None] * len(arg_names))
    except RuntimeContextError:
        pass
    except NotImplementedError as exc:
        raise NotImplementedError(f"fastops.onnx: {n.where()} has no fastops kernel and "
                                  f"onnx.reference cannot run it either: {exc}") from None
    static = None
    cache = {}
    gpu = is_gpu(n.xp)
    xp = n.xp

    def run(*args):
        if gpu:
            args = [_to_host(a) for a in args]
        ev = static
        if ev is None:
            key = tuple((type(a).__name__, str(getattr(a, "dtype", "")),
                         getattr(a, "ndim", -1)) for a in args)
            ev = cache.get(key)
            if ev is None:
                ev = cache[key] = make(args)
        feeds = {}
        for name, v in zip(arg_names, args):
            if name:
                feeds[name] = v
        res = ev.run(None, feeds)
        got = dict(zip(out_names, res))
        outs = tuple(got.get(o) if o else None for o in n.outputs)
        if gpu:
            outs = tuple(_to_device(xp, o) for o in outs)
        return outs
    return run
