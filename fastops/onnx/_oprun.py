"""fastops.onnx.OPS: onnx.reference op classes backed by fastops kernels.

``ReferenceEvaluator(model, new_ops=fastops.onnx.OPS)`` then runs the seed ops (and the
MMCV domain, and Loop without the reference's omitted-cond bug) on fastops, everything
else on the reference.  Each class builds the same node callable as
``fastops.onnx.Session`` once, when the evaluator loads the node.
"""
import numpy as np

from fastops.onnx import _registry
from fastops.onnx._registry import KERNELS, NodeDef, Unsupported, canonical_domain

SEED_OPS = ("TopK", "Scatter", "ScatterElements", "ScatterND", "GatherElements",
            "GatherND", "NonMaxSuppression", "RoiAlign", "Resize", "Upsample", "NonZero",
            "GridSample", "InstanceNormalization", "DeformConv", "Loop")
MMCV_OPS = ("MMCVRoiAlign", "MMCVRoIAlign", "NonMaxSuppression", "MMCVDeformConv2d",
            "MMCVModulatedDeformConv2d", "grid_sampler", "cummax", "cummin",
            "MMCVInstanceNormalization", "ScatterND")


def _make(op_type, domain):
    from onnx.reference.op_run import OpRun

    from fastops.onnx._compile import Compiler, node_captures, parse_attribute
    builder, multi = KERNELS[(domain, op_type)]

    def __init__(self, onnx_node, run_params, schema=None):
        OpRun.__init__(self, onnx_node, run_params, schema)
        opsets = {canonical_domain(d): v for d, v in run_params["opsets"].items()}
        dom = canonical_domain(onnx_node.domain)
        version = opsets.get(dom, 1)
        comp = Compiler(np, opsets)
        attrs = {a.name: parse_attribute(a) for a in onnx_node.attribute}
        self._captures = node_captures(onnx_node)
        n = NodeDef(onnx_node.op_type, dom, version, attrs, onnx_node.input,
                    onnx_node.output, np, onnx_node.name, onnx_node, self._captures, comp)
        self._delegate = None
        try:
            self._fastops_fn = builder(n)
        except Unsupported:
            if dom != "":
                raise
            from onnx.reference import ReferenceEvaluator
            from onnx.reference.ops import load_op
            cls = load_op(dom, onnx_node.op_type, version,
                          evaluator_cls=run_params.get("evaluator_cls", ReferenceEvaluator))
            self._delegate = cls(onnx_node, run_params)

    def need_context(self):
        return bool(self._captures)

    def _run(self, *inputs, context=None, attributes=None, **kwargs):
        if self._delegate is not None:
            extra = {} if context is None else {"context": context}
            return self._delegate._run(*inputs, **extra, **kwargs)
        args = list(inputs)
        if self._captures:
            args += [context[c] for c in self._captures]
        res = self._fastops_fn(*args)
        res = tuple(res) if multi else (res,)
        return tuple(np.asarray(r) if isinstance(r, np.generic) else r for r in res)

    cls = type(op_type, (OpRun,), {
        "op_domain": domain, "__init__": __init__, "need_context": need_context,
        "_run": _run, "__module__": __name__,
        "__doc__": f"{domain or 'ai.onnx'}::{op_type} on fastops kernels."})
    return cls


def build_ops():
    ops = [_make(op, "") for op in SEED_OPS]
    for domain in _registry.MMCV_DOMAINS:
        ops.extend(_make(op, domain) for op in MMCV_OPS)
    return ops
