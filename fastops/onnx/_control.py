"""Control flow (Loop, If, Scan, SequenceMap) and sequence/optional values.

Subgraphs are compiled once, like the main graph (fastops/onnx/_compile.py), into
functions of their inputs followed by the outer-scope values they read; the node's
callable receives those outer values after its declared inputs.  Loop goes further: the
body's generated lines are inlined into a generated iteration loop (_loop_driver), so an
iteration is the body's node calls, the carried values rebound (never copied) and the
scan outputs appended to lists, stacked once at the end.

Sequences are Python lists and never modified in place (SequenceInsert returns a new
list); an empty optional is None.
"""
import numpy as np

from fastops.onnx._registry import host, ints, kernel

_INT64_MAX = (1 << 63) - 1


def _elem_dtype(tp, default=np.float32):
    from onnx import helper
    try:
        if tp.WhichOneof("value") == "tensor_type" and tp.tensor_type.elem_type:
            return np.dtype(helper.tensor_dtype_to_np_dtype(tp.tensor_type.elem_type))
    except Exception:
        pass
    return np.dtype(default)


def _static_shape(tp):
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tp.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


def _truth(v):
    """A Python bool from a bool tensor (one device sync on the GPU)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return bool(host(v).reshape(-1)[0])


def _stack(xp, values, axis=0):
    if xp is np:
        if axis == 0:
            # np.array copies same-shaped arrays in one C pass: a Loop's 1000 scan outputs
            # of 16 elements in 0.15-0.19 ms against np.stack's 0.3-0.5 (a view and a
            # concatenate per value); ragged values fall through to np.stack's error
            try:
                return np.array(values)
            except ValueError:
                pass
        return np.stack([np.asarray(v) for v in values], axis=axis)
    return xp.stack(values, axis=axis)


def _loop_driver(body, nc, k_scan, mode):
    """Generate the iteration loop with the body's code inlined (no call per iteration):

        def drive(_trips, _ctr, _c0, ..., <captures>):
            v2 = _c0                      # the body's carried-value parameters
            _s0 = []; _a0 = _s0.append    # one list per scan output
            for _i in range(_trips):      # mode "for"; "while" also reads the cond
                v0 = _ctr(_i)             # only if the body reads the iteration number
                <body lines>
                v2 = <carried output>     # rebinding, never a copy
                _a0(<scan output>)
            return (v2,), [_s0]
    """
    from fastops.onnx._compile import exec_source
    P = body.params
    it_p, cond_p = P[0], P[1]
    carried_p = P[2:2 + nc]
    cap_p = P[2 + nc:]
    rets = body.returns
    init = [f"_c{j}" for j in range(nc)]
    src = [f"def drive(_trips, _ctr, _true{''.join(', ' + a for a in init + cap_p)}):"]
    for j in range(nc):
        src.append(f"    {carried_p[j]} = _c{j}")
    for k in range(k_scan):
        src.append(f"    _s{k} = []; _a{k} = _s{k}.append")
    if body.used_inputs[1]:
        src.append(f"    {cond_p} = _true")
    ind = "        "
    if mode == "for":
        src.append("    for _i in range(_trips):")
    else:
        src.append("    _i = 0")
        src.append("    while _i < _trips:")
    if body.used_inputs[0]:
        src.append(f"{ind}{it_p} = _ctr(_i)")
    descs = {}
    for j, line in enumerate(body.lines):
        src.append(ind + line)
        if j in body.line_descs:
            descs[len(src)] = body.line_descs[j]
    if mode == "while":
        src.append(f"{ind}_go = {rets[0]}")
    # scan outputs first: they may read the carried values before the rebinding
    for k in range(k_scan):
        src.append(f"{ind}_a{k}({rets[1 + nc + k]})")
    if nc:
        src.append(f"{ind}{', '.join(carried_p)}{',' if nc == 1 else ''} = "
                   f"{', '.join(rets[1:1 + nc])}{',' if nc == 1 else ''}")
    if mode == "while":
        src.append(f"{ind}_i += 1")
        src.append(f"{ind}if not _go:")
        src.append(f"{ind}    break")
    carried_tuple = "(" + "".join(c + ", " for c in carried_p) + ")"
    src.append(f"    return {carried_tuple}, [{', '.join(f'_s{k}' for k in range(k_scan))}]")
    glob = dict(body.glob)
    exec_source(src, glob, descs, "loop")
    return glob["drive"]


@kernel("Loop", multi=True)
def _loop(n):
    xp = n.xp
    body = n.subgraph("body")
    nc = n.n_in - 2                              # loop-carried values
    n_body_in = len(body.input_names)
    if n_body_in != nc + 2:
        raise ValueError(f"{n.where()}: the body takes {n_body_in} inputs; the node passes "
                         f"{nc} carried value(s) (+ iteration number and condition)")
    k_scan = len(body.output_names) - 1 - nc
    if k_scan < 0 or nc + k_scan != n.n_out:
        raise ValueError(f"{n.where()}: the body returns {len(body.output_names)} values, "
                         f"which does not match {nc} carried value(s) and {n.n_out} node "
                         f"output(s)")
    scan_types = body.output_types[1 + nc:]
    # the body's cond output is its cond input, unchanged: it never needs reading
    cond_passthrough = body.output_sources and body.output_sources[0] == 1
    where = n.where()
    gpu = xp is not np
    true = np.True_ if not gpu else xp.asarray(True)
    drive_for = _loop_driver(body, nc, k_scan, "for")
    drive_while = None if cond_passthrough else _loop_driver(body, nc, k_scan, "while")

    def empty_scan(k):
        shape = _static_shape(scan_types[k])
        return xp.empty((0,) + (shape if shape is not None else ()),
                        dtype=_elem_dtype(scan_types[k]))

    def run(M, cond, *rest):
        trips = None
        if M is not None:
            trips = max(int(host(M).reshape(-1)[0]), 0)      # negative: no iteration
        honour = cond is not None and not cond_passthrough
        go = _truth(cond) if cond is not None else True
        if not go:
            trips = 0
        if trips is None and not honour:
            raise ValueError(f"{where}: this Loop would never end (no M, and the condition "
                             f"is {'omitted' if cond is None else 'never changed by the body'})")
        if gpu:
            ctr = (xp.arange(trips, dtype=np.int64).__getitem__
                   if trips is not None and trips <= 1 << 22 else
                   (lambda i: xp.asarray(np.int64(i))))
        else:
            ctr = np.int64
        if honour:
            carried, scans = drive_while(_INT64_MAX if trips is None else trips, ctr, true,
                                         *rest)
        else:
            carried, scans = drive_for(trips, ctr, true, *rest)
        out = carried
        for k in range(k_scan):
            out += (_stack(xp, scans[k]) if scans[k] else empty_scan(k),)
        return out
    return run


@kernel("If", multi=True)
def _if(n):
    then_g = n.subgraph("then_branch")
    else_g = n.subgraph("else_branch")
    for g, name in ((then_g, "then_branch"), (else_g, "else_branch")):
        if len(g.output_names) != n.n_out:
            raise ValueError(f"{n.where()}: {name} returns {len(g.output_names)} values for "
                             f"{n.n_out} node outputs")
    then_fn, else_fn = then_g.fn, else_g.fn
    return lambda cond, *caps: (then_fn if _truth(cond) else else_fn)(*caps)


@kernel("Scan", multi=True)
def _scan(n):
    xp = n.xp
    body = n.subgraph("body")
    bfn = body.fn
    m = n.attr("num_scan_inputs")
    legacy = n.version < 9
    n_args = n.n_in - (1 if legacy else 0)
    ns = n_args - m                               # state variables
    k = len(body.output_names) - ns
    in_axes = n.attr("scan_input_axes") or [0] * m
    in_dirs = n.attr("scan_input_directions", n.attr("directions")) or [0] * m
    out_axes = n.attr("scan_output_axes") or [0] * k
    out_dirs = n.attr("scan_output_directions") or [0] * k

    def one(states, xs, caps, in_ax):
        if not xs:
            raise ValueError(f"{n.where()}: Scan without scan inputs")
        lengths = {x.shape[a if a >= 0 else a + x.ndim] for x, a in zip(xs, in_ax)}
        if len(lengths) != 1:
            raise ValueError(f"{n.where()}: scan inputs have different lengths {lengths}")
        length = lengths.pop()
        outs = [[] for _ in range(k)]
        for t in range(length):
            slices = []
            for x, a, d in zip(xs, in_ax, in_dirs):
                ax = a if a >= 0 else a + x.ndim
                idx = [slice(None)] * x.ndim
                idx[ax] = length - 1 - t if d else t
                slices.append(x[tuple(idx)])
            res = bfn(*states, *slices, *caps)
            states = res[:ns]
            for j in range(k):
                outs[j].append(res[ns + j])
        stacked = []
        for j in range(k):
            vals = outs[j][::-1] if out_dirs[j] else outs[j]
            if not vals:
                stacked.append(xp.empty((0,), dtype=_elem_dtype(body.output_types[ns + j])))
                continue
            r = getattr(vals[0], "ndim", 0) + 1
            ax = out_axes[j] if out_axes[j] >= 0 else out_axes[j] + r
            stacked.append(_stack(xp, vals, ax))
        return tuple(states), stacked

    if not legacy:
        def run(*args):
            states, stacked = one(args[:ns], args[ns:ns + m], args[ns + m:], in_axes)
            return states + tuple(stacked)
        return run

    def run8(seq_lens, *args):
        # opset 8: a batch axis 0 on every input, then the scan axis
        states, xs, caps = args[:ns], args[ns:ns + m], args[ns + m:]
        batch = (states or xs)[0].shape[0]
        if seq_lens is not None:
            full = xs[0].shape[1]
            if any(v != full for v in ints(seq_lens)):
                raise NotImplementedError(f"{n.where()}: Scan-8 with sequence_lens shorter "
                                          f"than the scan axis")
        res_states, res_outs = [], []
        for b in range(batch):
            s, o = one(tuple(v[b] for v in states), [x[b] for x in xs], caps,
                       [0] * m)
            res_states.append(s)
            res_outs.append(o)
        out = tuple(_stack(xp, [r[j] for r in res_states]) for j in range(ns))
        return out + tuple(_stack(xp, [r[j] for r in res_outs]) for j in range(k))
    return run8


@kernel("SequenceMap", multi=True)
def _sequence_map(n):
    body = n.subgraph("body")
    bfn = body.fn
    nin = n.n_in
    nout = n.n_out

    def run(*args):
        ins, caps = args[:nin], args[nin:]
        length = len(ins[0])
        outs = [[] for _ in range(nout)]
        for j in range(length):
            elems = [a[j] if isinstance(a, list) else a for a in ins]
            res = bfn(*elems, *caps)
            for o in range(nout):
                outs[o].append(res[o])
        return tuple(outs)
    return run


# ------------------------------------------------------------------ sequences
def _pos(p, length, insert=False):
    q = int(host(p).reshape(-1)[0])
    if q < 0:
        q += length
    hi = length if insert else length - 1
    if not 0 <= q <= hi:
        raise IndexError(f"sequence position {int(host(p).reshape(-1)[0])} is out of range "
                         f"for a sequence of {length}")
    return q


@kernel("SequenceEmpty")
def _seq_empty(n):
    return lambda: []


@kernel("SequenceConstruct")
def _seq_construct(n):
    return lambda *xs: list(xs)


@kernel("SequenceInsert")
def _seq_insert(n):
    def run(seq, x, pos=None):
        out = list(seq)
        if pos is None:
            out.append(x)
        else:
            out.insert(_pos(pos, len(seq), insert=True), x)
        return out
    return run


@kernel("SequenceAt")
def _seq_at(n):
    return lambda seq, pos: seq[_pos(pos, len(seq))]


@kernel("SequenceErase")
def _seq_erase(n):
    def run(seq, pos=None):
        out = list(seq)
        del out[-1 if pos is None else _pos(pos, len(seq))]
        return out
    return run


@kernel("SequenceLength")
def _seq_length(n):
    xp = n.xp
    return lambda seq: xp.asarray(np.int64(len(seq)))


@kernel("ConcatFromSequence")
def _concat_from_sequence(n):
    xp = n.xp
    axis = n.attr("axis")
    new_axis = n.attr("new_axis", 0)

    def run(seq):
        if new_axis:
            r = seq[0].ndim + 1
            return xp.stack(seq, axis=axis + r if axis < 0 else axis)
        return xp.concatenate(seq, axis=axis)
    return run


@kernel("SplitToSequence")
def _split_to_sequence(n):
    xp = n.xp
    axis = n.attr("axis", 0)
    keepdims = n.attr("keepdims", 1)

    def run(x, split=None):
        ax = axis + x.ndim if axis < 0 else axis
        dim = x.shape[ax]
        if split is None:
            parts = [xp.take(x, [j], axis=ax) for j in range(dim)]
            return parts if keepdims else [xp.squeeze(p, axis=ax) for p in parts]
        s = ints(split)
        if np.ndim(host(split)) == 0:
            step = s[0]
            s = [step] * (dim // step) + ([dim % step] if dim % step else [])
        out, start = [], 0
        for size in s:
            idx = [slice(None)] * x.ndim
            idx[ax] = slice(start, start + size)
            out.append(x[tuple(idx)])
            start += size
        return out
    return run


@kernel("Optional")
def _optional(n):
    return lambda x=None: x


@kernel("OptionalHasElement")
def _optional_has(n):
    xp = n.xp
    return lambda x=None: xp.asarray(np.bool_(x is not None))


@kernel("OptionalGetElement")
def _optional_get(n):
    def run(x):
        if x is None:
            raise ValueError("OptionalGetElement of an empty optional")
        return x
    return run
