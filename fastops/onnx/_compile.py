"""Compile an ONNX graph once into one generated Python function.

Each node is bound to a callable when the model is loaded (attributes parsed once, see
_registry.py); the graph becomes the source text of a function whose local variables
are the graph's values::

    def graph(v0, v1):          # graph inputs, then outer-scope values (subgraphs)
        v2 = f0(v0, k0)         # a node: one call, its inputs are locals or constants
        _t = f1(v2, v1); v3 = _t[0]; v4 = _t[1]
        del v2                  # a value dies after its last use
        return (v3, v4)

so running a node costs one call plus local-variable loads: no per-node dict lookups or
Python-level interpretation loop.  Identity nodes become aliases, Constant nodes and
nodes whose inputs are all constants are evaluated at load time, nodes that no output
needs are dropped.  Subgraphs (Loop/Scan bodies, If branches) compile the same way into
functions that take their own inputs followed by the outer-scope values they read.
"""
import itertools
import threading

import numpy as np

from fastops.onnx import _registry
from fastops.onnx._registry import KERNELS, NodeDef, Unsupported, canonical_domain

# ops whose result may differ between runs: never folded at load time
_NOT_FOLDABLE = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                 "Multinomial", "Bernoulli", "Loop", "If", "Scan", "SequenceMap"}
_FOLD_MAX_BYTES = 16 << 20          # keep load-time folding to shape-sized values

_counter = itertools.count()
_sources = {}                       # filename -> (source lines, {lineno: node description})
_sources_lock = threading.Lock()


def _to_np_dtype(elem_type):
    from onnx import helper
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def parse_attribute(a):
    """An AttributeProto as a Python value (tensors as NumPy arrays, graphs as protos)."""
    from onnx import AttributeProto as A
    from onnx import numpy_helper
    t = a.type
    if t == A.FLOAT:
        return float(a.f)
    if t == A.INT:
        return int(a.i)
    if t == A.STRING:
        return a.s.decode("utf-8", "surrogateescape")
    if t == A.TENSOR:
        return numpy_helper.to_array(a.t)
    if t == A.GRAPH:
        return a.g
    if t == A.FLOATS:
        return [float(v) for v in a.floats]
    if t == A.INTS:
        return [int(v) for v in a.ints]
    if t == A.STRINGS:
        return [s.decode("utf-8", "surrogateescape") for s in a.strings]
    if t == A.TENSORS:
        return [numpy_helper.to_array(v) for v in a.tensors]
    if t == A.GRAPHS:
        return list(a.graphs)
    if t == A.SPARSE_TENSOR:
        return sparse_to_dense(a.sparse_tensor)
    if t == A.TYPE_PROTO:
        return a.tp
    if t == A.TYPE_PROTOS:
        return list(a.type_protos)
    raise ValueError(f"attribute {a.name!r} has an unknown type {t}")


def sparse_to_dense(sp):
    from onnx import numpy_helper
    values = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices).astype(np.int64)
    dims = tuple(sp.dims)
    out = np.zeros(dims, dtype=values.dtype)
    flat = out.reshape(-1)
    if idx.ndim == 2:
        idx = np.ravel_multi_index(tuple(idx.T), dims)
    flat[idx.reshape(-1)] = values.reshape(-1)
    return out


def free_names(graph):
    """Names a graph reads from its enclosing scopes (ONNX implicit inputs), in first-use
    order."""
    defined = {i.name for i in graph.input}
    defined.update(t.name for t in graph.initializer)
    defined.update(t.name for t in graph.sparse_initializer)
    for node in graph.node:
        defined.update(node.output)
    out = []
    seen = set()
    for node in graph.node:
        names = list(node.input)
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                names.extend(free_names(g))
        for n in names:
            if n and n not in defined and n not in seen:
                seen.add(n)
                out.append(n)
    return out


def node_captures(node):
    out = []
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for n in free_names(g):
                if n not in out:
                    out.append(n)
    return out


class CompiledGraph:
    """``fn(*inputs, *captures) -> tuple(outputs)``, plus what callers need to know."""

    __slots__ = ("fn", "input_names", "captures", "output_names", "output_types",
                 "input_types", "defaults", "constant_outputs", "source", "output_sources",
                 "params", "lines", "returns", "glob", "used_inputs", "line_descs")

    def __init__(self, fn, input_names, captures, output_names, output_types, input_types,
                 defaults, constant_outputs, source, output_sources=()):
        self.fn = fn
        self.input_names = input_names
        self.captures = captures
        self.output_names = output_names
        self.output_types = output_types
        self.input_types = input_types
        self.defaults = defaults
        self.constant_outputs = constant_outputs
        self.source = source
        self.output_sources = list(output_sources)   # graph input index an output is, or None
        # the generated code, for drivers that inline the graph (Loop): parameter names
        # (inputs then captures), body lines, return expressions, globals, and which
        # inputs the graph reads at all
        self.params = self.lines = self.returns = self.glob = None
        self.used_inputs = None
        self.line_descs = {}


class Compiler:
    """Compiles a model's graphs for one array module (numpy or cupy)."""

    def __init__(self, xp, opsets, ir_version=None, fallback="reference"):
        self.xp = xp
        self.opsets = opsets            # canonical domain -> version
        self.ir_version = ir_version
        self.fallback = fallback        # "reference" or "error"
        self.fallbacks = {}             # "domain::op" -> number of nodes
        self.wrap = None                # profiling: wrap(fn, "domain::op") -> fn

    # ------------------------------------------------------------------ entry points
    def compile_model_graph(self, graph):
        return self._compile(graph, list(graph.input), [], "main graph")

    def compile_subgraph(self, graph, node):
        return self._compile(graph, list(graph.input), node.captures,
                             f"subgraph {graph.name!r} of {node.where()}")

    # ------------------------------------------------------------------ helpers
    def const(self, value):
        """A load-time value converted for this backend (arrays read-only on the host)."""
        xp = self.xp
        if isinstance(value, np.ndarray):
            if xp is np:
                value = np.array(value, copy=True) if value.flags.writeable else value
                value.setflags(write=False)
            elif value.dtype != object:
                value = xp.asarray(value)
        return value

    def version(self, domain):
        d = canonical_domain(domain)
        if d not in self.opsets:
            if d in _registry.MMCV_DOMAINS:     # exporters do not always declare it
                return 1
            raise ValueError(f"the model uses domain {domain!r} but does not import it "
                             f"(opset_import)")
        return self.opsets[d]

    def build_node(self, node, where_graph, consts=None, epilogue=None, donated=frozenset()):
        """(callable, multi, used_fallback) for one NodeProto; ``consts``: position ->
        value of its load-time constant inputs; ``epilogue``: a fused consumer's op
        type (EPILOGUES); ``donated``: input positions it may overwrite (DONATING)."""
        domain = canonical_domain(node.domain)
        attrs = {a.name: parse_attribute(a) for a in node.attribute}
        n = NodeDef(node.op_type, domain, self.version(node.domain), attrs, node.input,
                    node.output, self.xp, node.name, node, node_captures(node), self,
                    consts, epilogue, donated)
        entry = KERNELS.get((domain, node.op_type))
        if entry is not None:
            builder, multi = entry
            try:
                fn = builder(n)
                if self.wrap is not None:
                    fn = self.wrap(fn, self._label(domain, node.op_type))
                return fn, multi, False
            except Unsupported as exc:
                why = str(exc)
        else:
            why = "no fastops kernel"
        if self.fallback == "error":
            raise NotImplementedError(f"fastops.onnx: {n.where()} in the {where_graph} has no "
                                      f"fastops kernel ({why}) and fallback='error'")
        from fastops.onnx._reference import reference_callable
        fn = reference_callable(n)
        key = self._label(domain, node.op_type)
        self.fallbacks[key] = self.fallbacks.get(key, 0) + 1
        if self.wrap is not None:
            fn = self.wrap(fn, key + " (onnx.reference)")
        return fn, True, True

    @staticmethod
    def _label(domain, op_type):
        return f"{domain}::{op_type}" if domain else op_type

    # ------------------------------------------------------------------ compiler
    def _compile(self, graph, inputs, captures, what):
        gid = next(_counter)
        names = {}                      # value name -> python expression

        local_ids = itertools.count()

        glob = {"None": None}
        consts = {}                     # value name -> constant value (load-time)
        alias = {}                      # Identity outputs -> their input
        input_names = [i.name for i in inputs]
        input_types = [i.type for i in inputs]

        def resolve(name):
            while name in alias:
                name = alias[name]
            return name

        params = []
        for nm in input_names + [c for c in captures if c not in input_names]:
            names[nm] = f"v{next(local_ids)}"
            params.append(names[nm])
        defaults = {}
        for t in graph.initializer:
            from onnx import numpy_helper
            arr = numpy_helper.to_array(t)
            if t.name in names:          # an input with a default (IR < 4 style)
                defaults[t.name] = self.const(arr)
            else:
                consts[t.name] = self.const(arr)
        for t in graph.sparse_initializer:
            consts[t.values.name] = self.const(sparse_to_dense(t))

        # topological order (ONNX requires it, exporters mostly give it; be tolerant)
        available = set(names) | set(consts)
        pending = list(graph.node)
        order = []
        while pending:
            progress = []
            rest = []
            for node in pending:
                deps = [x for x in node.input if x] + node_captures(node)
                if all(d in available for d in deps):
                    progress.append(node)
                    available.update(o for o in node.output if o)
                else:
                    rest.append(node)
            if not progress:
                node = rest[0]
                missing = [d for d in list(node.input) + node_captures(node)
                           if d and d not in available]
                raise ValueError(f"fastops.onnx: in the {what}, node {node.name!r} "
                                 f"({node.op_type}) reads {missing[0]!r}, which no input, "
                                 f"initializer or node produces")
            order.extend(progress)
            pending = rest

        # dead-code elimination: keep nodes an output needs
        needed = {o.name for o in graph.output}
        keep = []
        for node in reversed(order):
            if any(o in needed for o in node.output if o):
                keep.append(node)
                needed.update(x for x in node.input if x)
                needed.update(node_captures(node))
        keep.reverse()

        graph_outputs = {o.name for o in graph.output}
        readers = _readers(keep)
        consumers, absorbed = _fuse_epilogues(keep, readers, graph_outputs)
        donors = _donations(keep, readers, graph_outputs)
        emitted = []                    # (node, function name, multi, args, description)
        for node in keep:
            if id(node) in absorbed:
                continue
            desc = (f"node {node.name!r} ({node.domain + '::' if node.domain else ''}"
                    f"{node.op_type})")
            if node.op_type == "Identity" and canonical_domain(node.domain) == "" \
                    and node.input and node.input[0]:
                alias[node.output[0]] = resolve(node.input[0])
                continue
            if node.op_type == "Constant" and canonical_domain(node.domain) == "":
                consts[node.output[0]] = self.const(_constant_value(node))
                continue
            ins = [resolve(x) if x else "" for x in node.input]
            consumer = consumers.get(id(node))
            donated = frozenset(i for i in donors.get(id(node), ()) if ins[i] not in consts)
            fn, multi, _ = self.build_node(
                node, what, {i: consts[a] for i, a in enumerate(ins) if a in consts},
                consumer.op_type if consumer is not None else None, donated)
            if consumer is not None:    # the call returns the consumer's output
                node = _with_outputs(node, consumer.output)
            caps = [resolve(c) for c in node_captures(node)]
            args = ins + caps
            if (node.op_type not in _NOT_FOLDABLE and not caps
                    and all(a == "" or a in consts for a in args)):
                folded = self._fold(fn, multi, [consts[a] if a else None for a in args],
                                    node)
                if folded is not None:
                    for o, v in zip(node.output, folded):
                        if o:
                            consts[o] = v
                    continue
            fname = f"f{gid}_{next(local_ids)}"
            glob[fname] = fn
            emitted.append((node, fname, multi, args, desc))

        # expressions for constants used at run time
        def expr(name):
            if name == "":
                return "None"
            name = resolve(name)
            if name in names:
                return names[name]
            if name in consts:
                key = f"k{gid}_{next(local_ids)}"
                glob[key] = consts[name]
                names[name] = key
                return key
            raise ValueError(f"fastops.onnx: {name!r} is read before it is produced in the "
                             f"{what}")

        # liveness: the last emitted call reading each runtime value
        out_names = [resolve(o.name) for o in graph.output]
        last_use = {}
        for k, (node, fname, multi, args, desc) in enumerate(emitted):
            for a in args:
                if a:
                    last_use[a] = k
        body = []
        descs = {}
        for k, (node, fname, multi, args, desc) in enumerate(emitted):
            call = f"{fname}({', '.join(expr(a) for a in args)})"
            outs = [o for o in node.output]
            for o in outs:
                if o and o not in names:
                    names[o] = f"v{next(local_ids)}"
            if multi:
                parts = [f"_t = {call}"]
                for j, o in enumerate(outs):
                    if o:
                        parts.append(f"{names[o]} = _t[{j}]")
                line = "; ".join(parts)
            else:
                target = names[outs[0]] if outs and outs[0] else "_"
                line = f"{target} = {call}"
            dead = sorted({names[a] for a in args if a and last_use.get(a) == k
                           and a not in out_names and names.get(a, "").startswith("v")
                           and a not in input_names and a not in captures})
            body.append(line)
            descs[len(body)] = desc
            if dead:
                body.append(f"del {', '.join(dead)}")
        ret = [expr(o) for o in out_names]
        filename = f"<fastops.onnx graph {gid}>"
        src = [f"def graph({', '.join(params)}):"]
        src += ["    " + b for b in body]
        src.append(f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
        text = "\n".join(src) + "\n"
        code = compile(text, filename, "exec")
        exec(code, glob)
        with _sources_lock:
            _sources[filename] = {ln + 1: d for ln, d in descs.items()}
        fn = glob["graph"]
        out_types = [o.type for o in graph.output]
        const_outs = {i for i, o in enumerate(out_names) if o in consts}
        sources = [input_names.index(o) if o in input_names else None for o in out_names]
        cg = CompiledGraph(fn, input_names, list(captures), [o.name for o in graph.output],
                           out_types, input_types, defaults, const_outs, text, sources)
        cg.params, cg.lines, cg.returns, cg.glob = params, body, ret, glob
        cg.line_descs = {ln - 1: d for ln, d in descs.items()}
        read = set()
        for node, fname, multi, args, desc in emitted:
            read.update(a for a in args if a)
        read.update(out_names)
        cg.used_inputs = [nm in read for nm in input_names]
        return cg

    def _fold(self, fn, multi, args, node):
        try:
            res = fn(*args)
        except Exception:       # leave it to run time, where the error names the node
            return None
        outs = tuple(res) if multi else (res,)
        total = 0
        for v in outs:
            total += getattr(v, "nbytes", 0)
        if total > _FOLD_MAX_BYTES:
            return None
        folded = []
        for v in outs:
            if isinstance(v, (np.ndarray, np.generic)) and self.xp is np:
                v = np.asarray(v)
                if v.flags.writeable:
                    v = v.copy()
                    v.setflags(write=False)
            folded.append(v)
        return folded


def _readers(nodes):
    """value name -> the nodes reading it (as an input or a subgraph capture)."""
    readers = {}
    for node in nodes:
        for name in set(x for x in node.input if x) | set(node_captures(node)):
            readers.setdefault(name, []).append(node)
    return readers


def _fuse_epilogues(nodes, readers, graph_outputs):
    """(id(producer) -> consumer NodeProto it runs, ids of the absorbed consumers) for the
    pairs of ``nodes`` to fuse per EPILOGUES: the consumer is the only reader of the
    producer's only output, which is not a graph output, and has no attributes (the
    kernels apply the defaults)."""
    consumers, absorbed = {}, set()
    for node in nodes:
        ops = _registry.EPILOGUES.get((canonical_domain(node.domain), node.op_type))
        if not ops or len(node.output) != 1 or node.output[0] in graph_outputs:
            continue
        users = readers.get(node.output[0], [])
        if len(users) != 1:
            continue
        c = users[0]
        if (canonical_domain(c.domain) == "" and c.op_type in ops and not c.attribute
                and list(c.input) == [node.output[0]] and len(c.output) == 1
                and id(c) not in absorbed):
            consumers[id(node)] = c
            absorbed.add(id(c))
    return consumers, absorbed


def _donations(nodes, readers, graph_outputs):
    """id(node) -> input positions it may overwrite (DONATING, FRESH_OUTPUTS).  The
    caller also drops inputs that turn out to be load-time constants (folded)."""
    producer = {o: node for node in nodes for o in node.output if o}
    out = {}
    for node in nodes:
        if canonical_domain(node.domain) != "" or node.op_type not in _registry.DONATING:
            continue
        pos = _registry.DONATING[node.op_type]
        if pos >= len(node.input) or not node.input[pos]:
            continue
        name = node.input[pos]
        src = producer.get(name)
        if (src is not None and canonical_domain(src.domain) == ""
                and src.op_type in _registry.FRESH_OUTPUTS and name not in graph_outputs
                and readers.get(name) == [node] and list(node.input).count(name) == 1):
            out[id(node)] = (pos,)
    return out


def _with_outputs(node, outputs):
    import onnx
    fused = onnx.NodeProto()
    fused.CopyFrom(node)
    del fused.output[:]
    fused.output.extend(outputs)
    return fused


def exec_source(lines, glob, descs, kind="graph"):
    """Compile generated source (a list of lines); ``descs`` maps 1-based line numbers to
    node descriptions for error notes.  Returns the namespace it ran in."""
    gid = next(_counter)
    filename = f"<fastops.onnx {kind} {gid}>"
    code = compile("\n".join(lines) + "\n", filename, "exec")
    exec(code, glob)
    with _sources_lock:
        _sources[filename] = dict(descs)
    return glob


def _constant_value(node):
    attrs = {a.name: parse_attribute(a) for a in node.attribute}
    if "value" in attrs:
        return attrs["value"]
    if "value_float" in attrs:
        return np.array(attrs["value_float"], np.float32)
    if "value_floats" in attrs:
        return np.array(attrs["value_floats"], np.float32)
    if "value_int" in attrs:
        return np.array(attrs["value_int"], np.int64)
    if "value_ints" in attrs:
        return np.array(attrs["value_ints"], np.int64)
    if "value_string" in attrs:
        return np.array(attrs["value_string"], dtype=object)
    if "value_strings" in attrs:
        return np.array(attrs["value_strings"], dtype=object)
    if "sparse_value" in attrs:
        return attrs["sparse_value"]
    raise ValueError(f"fastops.onnx: Constant node {node.name!r} has no value attribute")


def annotate(exc):
    """Add a note naming the graph node(s) in which ``exc`` was raised (Python 3.11+)."""
    if not hasattr(exc, "add_note") or getattr(exc, "_fastops_noted", False):
        return
    tb = exc.__traceback__
    notes = []
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if fname.startswith("<fastops.onnx "):
            desc = _sources.get(fname, {}).get(tb.tb_lineno)
            if desc:
                notes.append(desc)
        tb = tb.tb_next
    if notes:
        exc.add_note("fastops.onnx: raised in " + " -> ".join(notes))
        try:
            exc._fastops_noted = True
        except Exception:
            pass


__all__ = ["Compiler", "CompiledGraph", "parse_attribute", "free_names", "annotate"]
