"""Run ONNX models on fastops kernels.

* :class:`Session` — ``Session(model).run(output_names, feeds)``, the call shape of
  onnxruntime and onnx.reference; NumPy feeds run on the CPU kernels, CuPy feeds on the
  GPU kernels.  The graph is compiled once into one Python function.
* ``OPS`` — onnx.reference op classes backed by fastops:
  ``ReferenceEvaluator(model, new_ops=fastops.onnx.OPS)``.
* :func:`ort_session` — an ``onnxruntime.InferenceSession`` whose ``mmcv::`` nodes (and
  optionally the seed-op nodes) run on fastops through onnxruntime-extensions' Python
  custom ops (the optional extra with onnxruntime and onnxruntime-extensions).

Needs the ``onnx`` package.  See docs/onnx.md.
"""
# importing the kernel modules registers their builders
from fastops.onnx import _control, _mmcv, _nn, _seed, _std  # noqa: F401
from fastops.onnx._session import NodeArg, ReferenceFallbackWarning, Session

__all__ = ["Session", "OPS", "ort_session", "NodeArg", "ReferenceFallbackWarning"]

_ops = None


def __getattr__(name):
    # OPS imports onnx.reference: built on first access, not at import
    global _ops
    if name == "OPS":
        if _ops is None:
            from fastops.onnx._oprun import build_ops
            _ops = build_ops()
        return list(_ops)
    raise AttributeError(f"module 'fastops.onnx' has no attribute {name!r}")


def ort_session(model, sess_options=None, providers=None, *, seed_ops=False):
    """An ``onnxruntime.InferenceSession`` in which fastops runs the ``mmcv::`` nodes (and,
    with ``seed_ops``, standard seed-op nodes) through onnxruntime-extensions' Python
    ops; onnxruntime runs the rest.  Full documentation:
    :func:`fastops.onnx._ort.ort_session` and docs/onnx.md."""
    from fastops.onnx._ort import ort_session as _impl
    return _impl(model, sess_options, providers, seed_ops=seed_ops)
