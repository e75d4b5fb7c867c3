"""Load the ONNX backend node test data (model + input/output .pb files).

The data ships in the onnx==1.22.0 wheel under onnx/backend/test/data/node; later
wheels only carry the generators, so a missing directory skips the test.
"""
import glob
import os

import pytest


def node_dir():
    onnx = pytest.importorskip("onnx")
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def case_names(prefix):
    """Names of the node test cases starting with ``prefix`` (e.g. "test_top_k")."""
    root = node_dir()
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(root, prefix + "*")))


def load_case(name):
    """(node, attributes dict, inputs list, outputs list) of one node test case."""
    import onnx
    from onnx import helper, numpy_helper
    d = os.path.join(node_dir(), name)
    if not os.path.isdir(d):
        pytest.skip(f"{name}: ONNX node test data not shipped by this onnx version")
    model = onnx.load(os.path.join(d, "model.onnx"))
    node = model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    ds = os.path.join(d, "test_data_set_0")

    def read(kind):
        out = []
        for p in sorted(glob.glob(os.path.join(ds, f"{kind}_*.pb")),
                        key=lambda s: int(s.rsplit("_", 1)[1].split(".")[0])):
            t = onnx.TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            out.append(numpy_helper.to_array(t))
        return out
    return node, attrs, read("input"), read("output")


def run_reference(op_type, inputs, attrs, opset, n_outputs=1, domain=""):
    """Run one node through onnx.reference.ReferenceEvaluator."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    outs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, domain=domain, **attrs)
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in zip(names, inputs) if a is not None]
    ovi = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outs]
    graph = helper.make_graph([node], "g", vi, ovi)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, opset)])
    feeds = {n: a for n, a in zip(names, inputs) if a is not None}
    return ReferenceEvaluator(model).run(None, feeds)
