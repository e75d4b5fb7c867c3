"""The node-kernel table shared by Session, OPS and ort_session.

A *builder* turns one ONNX node (a :class:`NodeDef`: op type, opset version, parsed
attributes, the array module) into a plain Python callable, once, at load time.  The
callable takes the node's inputs positionally (None for an omitted optional input) and
returns the output (single-output ops) or a tuple of outputs (``multi=True`` ops).  A
builder raises :class:`Unsupported` for a case it does not cover (an attribute value, a
version, a missing fastops module); the node then runs on onnx.reference instead.

Kernels never modify their inputs (values may be shared between nodes and with the
caller), and may return views of them.
"""
import contextlib

import numpy as np

# (domain, op_type) -> (builder, multi)
KERNELS = {}

# mmcv ops are exported under the "mmcv" domain (mmcv, mmdeploy's TensorRT/PPLNN paths)
# and the "mmdeploy" domain (mmdeploy's default symbolics): both map to one table.
MMCV_DOMAINS = ("mmcv", "mmdeploy")


class Unsupported(Exception):
    """The fastops kernel does not cover this node: run it on onnx.reference."""


def kernel(*op_types, domain="", multi=False):
    """Register a builder for ``op_types`` in ``domain`` ("" = ai.onnx, "mmcv")."""
    def deco(builder):
        domains = MMCV_DOMAINS if domain == "mmcv" else (domain,)
        for d in domains:
            for op in op_types:
                KERNELS[(d, op)] = (builder, multi)
        return builder
    return deco


# Element-wise ops a producer's kernel applies to its own output in registers, so the
# output is written once: (domain, producer op) -> consumer op types (ai.onnx, default
# attributes).  The compiler fuses a consumer when it is the only reader of the
# producer's single output and that output is not a graph output.
EPILOGUES = {}

# Ops that may update their first input in place instead of copying it (ai.onnx op ->
# that input's position), and the ops whose outputs are always fresh arrays no other
# value shares.  The compiler donates the input when it is such a fresh output, read
# by no other node (inputs or subgraph captures) and not a graph output: then nothing
# can observe the update.  (frcnn's RoIAlign merge scatters into zeros, then scatters 0
# rows into that: two 7.5 MB copies a run.)
DONATING = {"ScatterElements": 0, "Scatter": 0}
FRESH_OUTPUTS = {"ConstantOfShape", "ScatterElements", "Scatter"}


def canonical_domain(domain):
    return "" if domain in ("", "ai.onnx") else domain


class NodeDef:
    """One node as a builder sees it.

    ``attrs`` holds only the attributes present on the node, as Python values (int,
    float, str, lists, NumPy arrays for tensors, GraphProto for graphs); ``attr(name,
    default)`` reads one.  ``version`` is the opset version of the node's domain in the
    model.  ``captures`` are the outer-scope names its subgraphs read (passed to the
    callable after the declared inputs).  ``consts`` maps input positions to the values
    of inputs that are load-time constants (initializers, folded nodes), for builders that
    prepare them once.  ``epilogue`` is the op type of a node fused into this one (see
    EPILOGUES): the callable returns that node's output instead of its own.
    ``donated``: positions of inputs the callable may overwrite and return (see DONATING).
    """

    __slots__ = ("op_type", "domain", "version", "attrs", "inputs", "outputs", "xp", "name",
                 "proto", "captures", "compiler", "consts", "epilogue", "donated")

    def __init__(self, op_type, domain, version, attrs, inputs, outputs, xp, name="",
                 proto=None, captures=(), compiler=None, consts=None, epilogue=None,
                 donated=frozenset()):
        self.op_type = op_type
        self.domain = domain
        self.version = version
        self.attrs = attrs
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.xp = xp
        self.name = name
        self.proto = proto
        self.captures = list(captures)
        self.compiler = compiler
        self.consts = consts or {}
        self.epilogue = epilogue
        self.donated = donated

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    @property
    def n_in(self):
        return len(self.inputs)

    @property
    def n_out(self):
        return len(self.outputs)

    def has_input(self, i):
        return i < len(self.inputs) and self.inputs[i] != ""

    def has_output(self, i):
        return i < len(self.outputs) and self.outputs[i] != ""

    def where(self):
        return f"node {self.name!r} ({self.domain + '::' if self.domain else ''}{self.op_type}" \
               f"-{self.version})"

    def subgraph(self, attr_name):
        """The compiled subgraph of a graph attribute; its function takes the subgraph's
        inputs, then ``self.captures``."""
        g = self.attrs.get(attr_name)
        if g is None:
            raise ValueError(f"{self.where()}: graph attribute {attr_name!r} is missing")
        return self.compiler.compile_subgraph(g, self)


def is_gpu(xp):
    return xp is not np


def host(v):
    """A NumPy array (or scalar) of the value of ``v`` (a device array is copied)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v)
    get = getattr(v, "get", None)
    if get is not None and not isinstance(v, (list, dict)):
        return get()
    return np.asarray(v)


def ints(v):
    """A list of Python ints from a 0-d or 1-D integer tensor on any device."""
    return [int(a) for a in host(v).reshape(-1).tolist()]


def floats(v):
    return [float(a) for a in host(v).reshape(-1).tolist()]


# Mid-sized GEMMs run with one BLAS thread: waking OpenBLAS's threads costs more than the
# product below ~16M multiply-adds, and on a busy 2-core machine a 72x24 @ 24x6400
# product took 19 ms on 2 OpenBLAS threads against 0.74 ms on 1 (docs/onnx.md).  Below
# 1M multiply-adds OpenBLAS stays on one thread by itself and the switch (6 us, through
# threadpoolctl's library handles) is not worth it.  Without threadpoolctl BLAS keeps its
# own setting.
_GUARD_MACS = (1 << 20, 1 << 24)
_blas_libs = []


class _OneBlasThread:
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = [lib.get_num_threads() for lib in _blas_libs[0]]
        for lib in _blas_libs[0]:
            lib.set_num_threads(1)

    def __exit__(self, *exc):
        for lib, n in zip(_blas_libs[0], self.prev):
            lib.set_num_threads(n)


def blas_guard(xp, macs):
    """A context manager for one GEMM of ``macs`` multiply-adds on ``xp``."""
    if xp is not np or not _GUARD_MACS[0] <= macs < _GUARD_MACS[1]:
        return contextlib.nullcontext()
    if not _blas_libs:
        try:
            from threadpoolctl import ThreadpoolController
            _blas_libs.append([lib for lib in ThreadpoolController().lib_controllers
                               if lib.user_api == "blas"])
        except Exception:          # not installed: leave BLAS alone
            _blas_libs.append([])
    if not _blas_libs[0]:
        return contextlib.nullcontext()
    return _OneBlasThread()
