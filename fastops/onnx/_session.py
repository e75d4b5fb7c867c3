"""fastops.onnx.Session: run an ONNX model with fastops kernels on NumPy or CuPy arrays."""
import os
import sys
import threading
import warnings

import numpy as np

from fastops._cpu._pool import restore as _arena_restore
from fastops._cpu._pool import use_arena as _arena_use
from fastops.onnx import _compile
from fastops.onnx._registry import canonical_domain


class ReferenceFallbackWarning(UserWarning):
    """Some nodes of a model run on onnx.reference (correct but slow)."""


class NodeArg:
    """A graph input or output as ``InferenceSession.get_inputs()`` describes it: ``name``,
    ``type`` (e.g. ``"tensor(float)"``) and ``shape`` (ints, strings for symbolic
    dimensions, None for unknown ones)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _type_string(tp):
    from onnx import helper
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        if tp.tensor_type.elem_type == 0:
            return "tensor(undefined)"
        name = helper.tensor_dtype_to_string(tp.tensor_type.elem_type).split(".")[-1].lower()
        return f"tensor({name})"
    if kind == "sequence_type":
        return f"seq({_type_string(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_string(tp.optional_type.elem_type)})"
    if kind == "map_type":
        return "map"
    return "undefined"


def _shape_of(tp):
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    out = []
    for d in tp.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def load_model(model):
    """A ModelProto from a ModelProto, a path or serialized bytes; local functions are
    inlined (the compiler sees standard nodes only)."""
    import onnx
    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.load_from_string(bytes(model))
    elif isinstance(model, (str, os.PathLike)):
        proto = onnx.load(os.fspath(model))
    else:
        raise TypeError(f"fastops.onnx.Session: model must be an onnx.ModelProto, a path or "
                        f"serialized bytes, got {type(model).__name__}")
    if len(proto.functions):
        from onnx import inliner
        proto = inliner.inline_local_functions(proto)
    return proto


def _root(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _is_cupy(v):
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(v, cp.ndarray)


def _any_cupy(v):
    if isinstance(v, (list, tuple)):
        return any(_any_cupy(x) for x in v)
    return _is_cupy(v)


class Session:
    """Run an ONNX model with fastops kernels: ``Session(model).run(output_names, feeds)``.

    Parameters
    ----------
    model : onnx.ModelProto, path or bytes
    fallback : {"reference", "error"}, keyword-only
        What to do with a node that no fastops kernel covers: run it on
        ``onnx.reference`` (default; one :class:`ReferenceFallbackWarning` at load lists
        those ops) or raise NotImplementedError at load.

    Notes
    -----
    The call shape is onnxruntime's and ``onnx.reference``'s:
    ``run(output_names or None, {input name: array}) -> list of arrays``, plus
    ``get_inputs()`` / ``get_outputs()``.  NumPy feeds run on the CPU kernels, CuPy feeds
    on the GPU kernels (the model is compiled once per backend, the NumPy program at
    load); mixing them in one run raises TypeError.  See docs/onnx.md for the op
    coverage, the semantics table and the measurements.

    ======================  =======================================================
    graph compilation       once at load: topological order, dead nodes dropped,
                            Identity aliased, Constant nodes and constant-only
                            subexpressions evaluated, attributes parsed into Python
                            values, every node bound to a callable, the graph turned
                            into one generated Python function (values are locals,
                            freed after their last use)
    seed ops                fastops kernels in every opset version onnx defines
                            (TopK, Scatter*, Gather*, NonMaxSuppression, RoiAlign
                            with the "onnx_max" rule, Resize/Upsample, NonZero,
                            GridSample, InstanceNormalization, DeformConv), Loop,
                            If, Scan; the mmcv:: / mmdeploy:: custom ops
    common ops              NumPy/CuPy implementations (elementwise, shape ops,
                            Concat, Slice, Gather, Cast, Reshape, Transpose, MatMul,
                            Gemm, Conv (im2col + GEMM), pooling, reductions, ...)
    other ops               onnx.reference (one warning at load); on the GPU their
                            values go through the host
    outputs                 fresh arrays, as onnxruntime returns them (an output
                            that is a view of an input or a constant is copied)
    ======================  =======================================================
    """

    def __init__(self, model, *, fallback="reference"):
        if fallback not in ("reference", "error"):
            raise ValueError(f"fastops.onnx.Session: fallback={fallback!r} is not one of "
                             f"'reference', 'error'")
        self._model = load_model(model)
        self._fallback = fallback
        self._opsets = {}
        for op in self._model.opset_import:
            self._opsets[canonical_domain(op.domain)] = int(op.version)
        if "" not in self._opsets:
            self._opsets[""] = 1
        g = self._model.graph
        init_names = {t.name for t in g.initializer}
        self._inputs = [NodeArg(i.name, _type_string(i.type), _shape_of(i.type))
                        for i in g.input if i.name not in init_names]
        self._outputs = [NodeArg(o.name, _type_string(o.type), _shape_of(o.type))
                         for o in g.output]
        self._input_types = {i.name: i.type for i in g.input}
        self._specs = {i.name: self._spec(i.type) for i in g.input}
        self._output_index = {o.name: k for k, o in enumerate(g.output)}
        self._programs = {}
        self._lock = threading.Lock()
        prog, fallbacks = self._compile(np)
        self.fallback_ops = dict(sorted(fallbacks.items()))
        if fallbacks:
            listed = ", ".join(f"{k} ({v})" if v > 1 else k for k, v in self.fallback_ops.items())
            warnings.warn(f"fastops.onnx: {sum(fallbacks.values())} node(s) run on onnx.reference "
                          f"(slow), ops: {listed}", ReferenceFallbackWarning, stacklevel=2)

    def _compile(self, xp):
        comp = _compile.Compiler(xp, self._opsets, self._model.ir_version, self._fallback)
        prog = comp.compile_model_graph(self._model.graph)
        self._programs[xp.__name__] = prog
        return prog, comp.fallbacks

    def _program(self, xp):
        prog = self._programs.get(xp.__name__)
        if prog is None:
            with self._lock:
                prog = self._programs.get(xp.__name__)
                if prog is None:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ReferenceFallbackWarning)
                        prog, _ = self._compile(xp)
        return prog

    # ------------------------------------------------------------------ metadata
    def get_inputs(self):
        """The inputs to feed (graph inputs without an initializer default)."""
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["fastops"]

    @property
    def model(self):
        return self._model

    # ------------------------------------------------------------------ running
    @staticmethod
    def _spec(tp):
        """(kind, dtype or None, dims or None) of a declared input type, read once."""
        kind = tp.WhichOneof("value")
        if kind != "tensor_type":
            return kind, None, None
        tt = tp.tensor_type
        want = None
        if tt.elem_type:
            from onnx import helper
            try:
                want = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
            except Exception:      # a type NumPy cannot hold (e.g. string): no check
                want = None
        dims = None
        if tt.HasField("shape"):
            dims = [int(d.dim_value) if d.HasField("dim_value") else None
                    for d in tt.shape.dim]
        return kind, want, dims

    def _convert(self, name, value, xp):
        kind, want, dims = self._specs.get(name, (None, None, None))
        if value is None or isinstance(value, list) or kind in ("sequence_type",
                                                                 "optional_type"):
            if xp is not np and isinstance(value, list):
                value = [v if _is_cupy(v) else xp.asarray(v) for v in value]
            return value
        if xp is np:
            if not isinstance(value, np.ndarray):
                value = np.asarray(value)
        elif not _is_cupy(value):
            raise TypeError(f"fastops.onnx.Session: input {name!r} is a "
                            f"{type(value).__name__} but other inputs are CuPy arrays; "
                            f"feed all inputs on one device")
        if want is not None and value.dtype != want and not (
                want.kind == value.dtype.kind and want.itemsize == value.dtype.itemsize):
            raise TypeError(f"fastops.onnx.Session: input {name!r} has dtype "
                            f"{value.dtype}; the model declares {want}")
        if dims is not None:
            if len(dims) != value.ndim:
                raise ValueError(f"fastops.onnx.Session: input {name!r} has shape "
                                 f"{tuple(value.shape)}; the model declares rank {len(dims)}")
            for k, d in enumerate(dims):
                if d is not None and d != value.shape[k]:
                    raise ValueError(f"fastops.onnx.Session: input {name!r} has shape "
                                     f"{tuple(value.shape)}; the model declares "
                                     f"dimension {k} = {d}")
        return value

    def run(self, output_names, input_feed, run_options=None):
        """Run the model: ``output_names`` (None for all, in graph order) and a dict of
        input arrays; returns a list of arrays (lists for sequence outputs, None for an
        empty optional)."""
        if not isinstance(input_feed, dict):
            raise TypeError(f"fastops.onnx.Session.run: input_feed must be a dict of name -> "
                            f"array, got {type(input_feed).__name__}")
        xp = np
        if any(_any_cupy(v) for v in input_feed.values()):
            import cupy
            xp = cupy
        prog = self._program(xp)
        args = []
        for name in prog.input_names:
            if name in input_feed:
                args.append(self._convert(name, input_feed[name], xp))
            elif name in prog.defaults:
                args.append(prog.defaults[name])
            elif self._input_types[name].WhichOneof("value") == "optional_type":
                args.append(None)
            else:
                raise ValueError(f"fastops.onnx.Session.run: missing input {name!r} (the model "
                                 f"needs {[i.name for i in self._inputs]})")
        if len(input_feed) > len(args) or any(k not in self._input_types for k in input_feed):
            unknown = [k for k in input_feed if k not in self._input_types]
            if unknown:
                raise ValueError(f"fastops.onnx.Session.run: unknown input name(s) {unknown}; "
                                 f"the model's inputs are {prog.input_names}")
        previous = _arena_use() if xp is np else None
        try:
            outs = prog.fn(*args)
        except Exception as exc:
            _compile.annotate(exc)
            raise
        finally:
            _arena_restore(previous)
        if output_names is None:
            picks = range(len(outs))
        else:
            picks = []
            for name in output_names:
                k = self._output_index.get(name)
                if k is None:
                    raise ValueError(f"fastops.onnx.Session.run: unknown output name {name!r}; "
                                     f"the model's outputs are {list(self._output_index)}")
                picks.append(k)
        fed = {id(_root(a)) for a in args if a is not None and not isinstance(a, list)}
        return [self._fresh(outs[k], k in prog.constant_outputs, fed) for k in picks]

    def profile(self, input_feed, repeat=1):
        """Seconds spent per op type over ``repeat`` runs: ``{op type: seconds}``, most
        expensive first, plus ``"total"``.  Control-flow ops (Loop, If, Scan) include
        the time of the nodes they run, which are also counted under their own op types.
        Runs a separately compiled, instrumented copy of the program (NumPy feeds)."""
        import time
        times = {}

        def wrap(fn, label):
            def timed(*args):
                t0 = time.perf_counter()
                try:
                    return fn(*args)
                finally:
                    times[label] = times.get(label, 0.0) + time.perf_counter() - t0
            return timed

        comp = _compile.Compiler(np, self._opsets, self._model.ir_version, self._fallback)
        comp.wrap = wrap
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReferenceFallbackWarning)
            prog = comp.compile_model_graph(self._model.graph)
        args = [self._convert(nm, input_feed[nm], np) if nm in input_feed else
                prog.defaults.get(nm) for nm in prog.input_names]
        times.clear()            # load-time constant folding ran some nodes already
        t0 = time.perf_counter()
        for _ in range(repeat):
            prog.fn(*args)
        total = time.perf_counter() - t0
        out = dict(sorted(times.items(), key=lambda kv: -kv[1]))
        out["total"] = total
        return out

    @staticmethod
    def _fresh(v, is_const, fed):
        if isinstance(v, list):
            return [Session._fresh(x, False, fed) for x in v]
        if isinstance(v, np.generic):
            return np.asarray(v)
        if isinstance(v, np.ndarray):
            if is_const or not v.flags.writeable or id(_root(v)) in fed:
                return v.copy()
            return v
        if v is not None and (is_const or id(_root(v)) in fed):
            return v.copy()
        return v
