"""resize (ONNX Resize) on dask arrays, spatially chunked or not: every output chunk
reads just the input slice its taps reach, with the tap tables of the whole array."""
import dataclasses
import itertools
import math

import numpy as np

import dask.array as da

from fastops import _dispatch, _validate
from fastops import resample as rs
from fastops._typing import Array, FloatScalar, Literal, Optional, Sequence
from fastops.dask import _graph as g

OP = rs.OP


# ------------------------------------------------------------------ apply
def _pairs(n):
    """The pairs of resized axes (indices into the active axes) in apply_tables' order:
    innermost pair first."""
    order, pairs = list(range(n)), []
    while order:
        pairs.append(order[-2:])
        order = order[:-2]
    return pairs


def _step(be, x, axes, tables, nearest, wdtype, v_first, what):
    """resample._step with the order of the two steps fixed by the caller: the order of
    the whole array (resample._vertical_first of the global shape), which a chunk's own
    shape could change, and with it the rounding.  None (one resized axis: its partner
    is the identity): the chunk's own order."""
    sp = rs._step_plan(be, x.shape, axes, tables, wdtype)
    if v_first is not None and not nearest:
        sp = dataclasses.replace(sp, v_first=v_first)
    return rs._run_step(be, x, sp, nearest, what)


def _apply(be, x, axes, tables, nearest, vfirst, what):
    """resample.apply_tables with the global step orders ``vfirst`` (one per pair)."""
    pairs = _pairs(len(axes))
    if nearest:
        cur = x
        for p, vf in zip(pairs, vfirst):
            cur = _step(be, cur, [axes[i] for i in p], [tables[i] for i in p], True, None,
                        vf, what)
        return cur
    wdtype = tables[0].weights.dtype
    if len(pairs) == 1:
        return _step(be, x, axes, tables, False, wdtype, vfirst[0], what)
    cur = x if x.dtype == wdtype else x.astype(wdtype)
    for p, vf in zip(pairs, vfirst):
        cur = _step(be, cur, [axes[i] for i in p], [tables[i] for i in p], False, wdtype,
                    vf, what)
    if x.dtype == wdtype:
        return cur
    if x.dtype.kind == "f":
        return cur.astype(x.dtype)
    out = rs._alloc(be, cur.shape, x.dtype, what)
    be.run("resample", "round_cast", cur.reshape(-1), out.reshape(-1))
    return out


def _block(spec, nparts, grid, *refs):
    """One output chunk: the input slice (its pieces concatenated), the rows of the
    tables, the separable apply with the whole array's step orders, the flagged
    outputs.  refs: the ``nparts`` table parts, then the pieces in C order over grid."""
    parts, pieces = refs[:nparts], refs[nparts:]
    be0, _ = g.block_module(pieces[0])
    x = _join(be0.xp, pieces, grid)
    be, (x,) = _dispatch.prepare(OP, x=x)
    x = be.element_view(x)
    xp = be.xp
    tables = [rs.Table(n_in, xp.asarray(f), xp.asarray(c), xp.asarray(w), xp.asarray(e), K)
              for (n_in, f, c, w, e, K) in parts]
    axes, what = spec["axes"], spec["what"]
    if spec["nearest"]:
        bits = rs._BITS[x.itemsize]
        out = _apply(be, x.view(bits), axes, tables, True, spec["vfirst"], what)
        out = out.view(x.dtype)
    else:
        xin = x.astype(np.float32) if x.dtype == np.float16 else x
        out = _apply(be, xin, axes, tables, False, spec["vfirst"], what)
        if x.dtype == np.float16:
            out = out.astype(np.float16)
    if spec["crop"]:
        rs.fill_flagged(be, out, axes, tables, 1, spec["extrapolation_value"])
    if spec["nearest"] and spec["exclude_outside"]:
        rs.fill_flagged(be, out, axes, tables, 2, 0.0)
    return out


def _cut(block, bounds):
    """The part of an input chunk an output chunk reads (a view: where the chunk lives
    nothing is copied, and only this part moves to another worker)."""
    return block[tuple(slice(a, b) for a, b in bounds)]


def _join(xp, pieces, grid):
    """pieces (C order over grid) concatenated along every axis of the grid."""
    def rec(items, dims, axis):
        if not dims:
            return items[0]
        n = dims[0]
        step = len(items) // n
        parts = [rec(items[i * step:(i + 1) * step], dims[1:], axis + 1) for i in range(n)]
        return parts[0] if n == 1 else xp.concatenate(parts, axis=axis)
    return rec(list(pieces), list(grid), 0)


def _empty_like_meta(meta_arr, shape):
    return np.empty_like(meta_arr, shape=shape)


def _out_bounds(in_chunks, n_in, n_out):
    """Output chunk boundaries along a resized axis: the input's scaled (floor), without
    empty chunks."""
    b = sorted({s * n_out // n_in for s in g.offsets(in_chunks)} | {0, n_out})
    return b


def _source_range(first, count, extrap, n_in):
    """[lo, hi) of the source indices the rows read (rows with taps and no flag)."""
    live = (count > 0) & (extrap == 0)
    if not live.any():
        return 0, min(1, n_in)
    f, c = first[live], count[live]
    return int(f.min()), int((f + c).max())


# ------------------------------------------------------------------ public
def resize(x: da.Array, scales: Optional[Array] = None, sizes: Optional[Array] = None, *,
           mode: Literal["nearest", "linear", "cubic"] = "nearest",
           coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", cubic_coeff_a: FloatScalar = -0.75,
           exclude_outside: bool = False, extrapolation_value: FloatScalar = 0.0,
           antialias: bool = False, axes: Optional[Sequence[int]] = None,
           keep_aspect_ratio_policy: str = "stretch", roi: Optional[Array] = None
           ) -> da.Array:
    """ONNX Resize of a dask array, chunked along any axes (resized ones included):
    :func:`fastops.resize` with the same arguments, with no seams at chunk borders.

    Parameters
    ----------
    x : dask array, uint8, int8, int32, int64, float16, float32 or float64
        NumPy or CuPy chunks, any chunking (known sizes).  A stack of frames chunked
        along the batch axis and a large image chunked along its spatial axes both work.
    scales, sizes, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
    exclude_outside, extrapolation_value, antialias, axes, keep_aspect_ratio_policy, roi
        As :func:`fastops.resize` (validated the same way, same messages).

    Returns
    -------
    dask array of x's dtype, bit for bit ``fastops.resize(x.compute(), ...)``.  Chunks:
    x's along the axes that are not resized; along a resized axis the input's chunk
    boundaries scaled to the output (``floor(b * n_out / n_in)``, empty chunks dropped).

    Notes
    -----
    ==================  ============================================================
    tables              the per-axis tap tables (first source index, tap count,
                        weights) of the whole array are built once, on the host, when
                        the graph is built (``n_out * taps`` entries per axis); each
                        output chunk's task carries its rows of them
    input slices        an output chunk reads the source range its rows' taps cover
                        (dask-image's per-output-chunk slicing): the mapped range plus
                        the filter's support (1 sample for linear, 2 for cubic, 2 /
                        scale with antialias), assembled from the input chunks it
                        overlaps; chunk-local coordinates never enter the arithmetic
    bit identity        every output value is the same fixed sequence of multiply-adds
                        over the same taps as on the whole array; the order of the two
                        separable steps (fastops' cost model) is decided from the whole
                        array's shape, not the chunk's, so the rounding matches too
    per-chunk resize    resizing each chunk on its own (``map_blocks(fastops.resize)``)
                        is only right when the resized axes are not chunked; otherwise
                        half-pixel continuity breaks and chunk borders show seams
    ==================  ============================================================
    """
    x = g.as_dask(OP, "x", x)
    g.need_known_chunks(OP, "x", x)
    _validate.dtype_in(OP, "x", x, rs.DTYPES)
    _validate.min_ndim(OP, "x", x, 1)
    mode = rs._choice("mode", mode, rs.MODES)
    ctm = rs._choice("coordinate_transformation_mode", coordinate_transformation_mode,
                     rs.COORDINATE_MODES)
    nearest_mode = rs._choice("nearest_mode", nearest_mode, rs.NEAREST_MODES)
    policy = rs._choice("keep_aspect_ratio_policy", keep_aspect_ratio_policy,
                        {p: 0 for p in rs.POLICIES})
    cubic_a = _validate.number(OP, "cubic_coeff_a", cubic_coeff_a)
    if not math.isfinite(cubic_a):
        raise ValueError(f"{OP}: cubic_coeff_a={cubic_a!r} must be finite")
    exclude_outside = _validate.flag(OP, "exclude_outside", exclude_outside)
    antialias = _validate.flag(OP, "antialias", antialias)
    extrap_value = _validate.number(OP, "extrapolation_value", extrapolation_value)
    ax = rs._axes(axes, x.ndim)
    scales_v = rs._vector("scales", scales)
    sizes_v = rs._vector("sizes", sizes)
    roi_v = rs._vector("roi", roi)
    what = "scales" if scales_v is not None else "sizes"
    recs, out_shape = rs._geometry(x.shape, ax, scales_v, sizes_v, policy, roi_v, ctm)
    dtype = g.native(x.dtype)
    out_meta = g.meta(x, x.ndim, dtype)

    if _validate.prod(out_shape) == 0:
        gr = g.Graph(OP, x)
        name = f"fastops-resize-empty-{g.tokenize(x, out_shape)}"
        lay = gr.layer(name)
        gr.task(lay, (name,) + (0,) * x.ndim, _empty_like_meta, 1, out_meta,
                tuple(out_shape))
        return gr.array(name, tuple((s,) for s in out_shape), out_meta)
    if dtype.itemsize * _validate.prod(out_shape) > rs._MAX_BYTES:
        raise MemoryError(f"{OP}: an output of shape {tuple(out_shape)} (set by {what}) "
                          f"cannot exist")
    active = sorted((r for r in recs if not r.identity(ctm)), key=lambda r: r.axis)
    if not active:
        return x if x.dtype == dtype else x.astype(dtype)
    axes_on = [r.axis for r in active]
    nearest = mode == "nearest"
    wdtype = np.float32 if nearest else rs._COMPUTE[dtype]
    cpu = _dispatch.Backend("cpu", np, OP)
    tables = rs.axis_tables(cpu, active, mode, ctm, nearest_mode, cubic_a, antialias,
                            exclude_outside, wdtype, what)
    # the order of the two steps of every pair, from the whole array's shapes
    vfirst, shape = [], list(x.shape)
    for p in _pairs(len(axes_on)):
        if len(p) == 2 and not nearest:
            a, b = axes_on[p[0]], axes_on[p[1]]
            s5 = (_validate.prod(shape[:a]), shape[a], _validate.prod(shape[a + 1:b]),
                  shape[b], _validate.prod(shape[b + 1:]))
            vfirst.append(bool(rs._vertical_first(s5, tables[p[0]], tables[p[1]])))
        else:
            vfirst.append(None)
        for i in p:
            shape[axes_on[i]] = tables[i].n_out
    spec = {"axes": axes_on, "nearest": nearest, "vfirst": vfirst, "what": what,
            "crop": ctm == "tf_crop_and_resize", "extrapolation_value": extrap_value,
            "exclude_outside": exclude_outside}

    # per resized axis and output chunk: the source range and the rows of the table
    out_chunks = list(x.chunks)
    per_axis = {}
    for r, t in zip(active, tables):
        a = r.axis
        bounds = _out_bounds(x.chunks[a], r.n_in, r.n_out)
        out_chunks[a] = tuple(b1 - b0 for b0, b1 in zip(bounds[:-1], bounds[1:]))
        starts = g.offsets(x.chunks[a])
        rows = []
        for o0, o1 in zip(bounds[:-1], bounds[1:]):
            first, count = t.first[o0:o1], t.count[o0:o1]
            extrap, weights = t.extrap[o0:o1], t.weights[o0:o1]
            lo, hi = _source_range(first, count, extrap, r.n_in)
            rel = np.where((count > 0) & (extrap == 0), first - lo, 0).astype(np.int64)
            blocks = [(j, (max(lo, starts[j]) - starts[j], min(hi, starts[j + 1]) - starts[j]))
                      for j in range(len(x.chunks[a]))
                      if starts[j] < hi and starts[j + 1] > lo and starts[j + 1] > starts[j]]
            part = (hi - lo, rel, np.ascontiguousarray(count),
                    np.ascontiguousarray(weights), np.ascontiguousarray(extrap), t.K)
            rows.append((blocks, part))
        per_axis[a] = rows

    tok = g.tokenize(x, [(r.axis, r.n_out) for r in active], mode, ctm, nearest_mode,
                     cubic_a, antialias, exclude_outside, extrap_value,
                     [(t.first, t.count, t.weights) for t in tables], g.threads_setting(OP))
    name, tname, cname = (f"fastops-resize{s}-{tok}" for s in ("", "-tables", "-cut"))
    gr = g.Graph(OP, x)
    tabs = gr.layer(tname)
    cuts = gr.layer(cname)
    lay = gr.layer(name, tname, cname)
    for a, rows in per_axis.items():       # each table part once in the graph
        for m, (_, part) in enumerate(rows):
            tabs[(tname, a, m)] = g.DataNode((tname, a, m), part)
    nblocks = [len(c) for c in out_chunks]
    width = math.prod(nblocks)
    for ob in itertools.product(*(range(n) for n in nblocks)):
        choices, prefs = [], []
        for a in range(x.ndim):
            if a in per_axis:
                choices.append(per_axis[a][ob[a]][0])
                prefs.append(g.TaskRef((tname, a, ob[a])))
            else:
                choices.append([(ob[a], (0, x.chunks[a][ob[a]]))])
        grid = tuple(len(c) for c in choices)
        refs = []
        for combo in itertools.product(*choices):
            blk = tuple(j for j, _ in combo)
            bounds = tuple(b for _, b in combo)
            whole = all(b == (0, x.chunks[a][j]) for a, (j, b) in enumerate(combo))
            if whole:
                refs.append(g.TaskRef((x.name,) + blk))
                continue
            key = (cname,) + blk + tuple(v for b in bounds for v in b)
            if key not in cuts:
                gr.task(cuts, key, _cut, width, g.TaskRef((x.name,) + blk), bounds)
            refs.append(g.TaskRef(key))
        gr.task(lay, (name,) + ob, _block, width, spec, len(prefs), grid, *prefs, *refs)
    return gr.array(name, tuple(out_chunks), out_meta)
