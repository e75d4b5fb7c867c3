"""topk, cummax / cummin and nonzero on dask arrays (fastops.selection per chunk)."""
import itertools
import math

import numpy as np

import dask
import dask.array as da

import fastops
from fastops import _validate
from fastops._typing import IntScalar, Literal, Optional
from fastops.dask import _graph as g
from fastops.selection import ValuesIndices, _as_3d, _compute_dtype


def _take(t, i):
    return t[i]


# ------------------------------------------------------------------ topk
def _topk_leaf(block, k, axis, largest, sorted_, off):
    """fastops.topk of one chunk, indices made global."""
    v, i = fastops.topk(block, min(k, block.shape[axis]), axis, largest, sorted_)
    if off:
        i += off                    # a fresh array of this task: in place is safe
    return v, i


def _topk_combine(k, axis, largest, sorted_, *parts):
    """fastops.topk over the candidates of consecutive chunks.  Each part holds its
    winners in ascending global index order (sorted=False below the root), so in the
    concatenation position order is global index order and fastops' tie rule (the lower
    position first) is the lower global index first, whatever the chunking."""
    be, _ = g.block_module(parts[0][0])
    xp = be.xp
    cv = xp.concatenate([p[0] for p in parts], axis=axis)
    ci = xp.concatenate([p[1] for p in parts], axis=axis)
    v, sel = fastops.topk(cv, min(k, cv.shape[axis]), axis, largest, sorted_)
    return v, xp.take_along_axis(ci, sel, axis=axis)


def topk(x: da.Array, k: IntScalar, axis: int = -1, largest: bool = True,
         sorted: bool = True, split_every: Optional[int] = None) -> ValuesIndices:
    """The ``k`` largest (or smallest) elements along ``axis`` of a dask array, and their
    global indices: :func:`fastops.topk` on chunked NumPy or CuPy arrays.

    Parameters
    ----------
    x : dask array of a numeric dtype (uint8..uint64, int8..int64, float16/32/64)
        NumPy or CuPy chunks, any chunking (known chunk sizes along ``axis``).
    k : int or 1-element integer array, ``0 <= k <= x.shape[axis]``
    axis : int
    largest, sorted : bool
        As :func:`fastops.topk`.
    split_every : int >= 2, optional
        Fan-in of the combine tree along ``axis`` (default: dask's ``split_every``
        config, else 4, as ``da.topk``).

    Returns
    -------
    ValuesIndices (``.values``, ``.indices``) of dask arrays: one chunk of ``k`` along
    ``axis``, x's chunks along the other axes; int64 global indices.

    Notes
    -----
    ==================  ============================================================
    result              bit for bit ``fastops.topk(x.compute(), k, axis, ...)`` on any
                        chunking and scheduler
    ties                the lower global index first (ONNX, torch); ``da.argtopk``
                        puts the higher index first
    NaN                 ranks above every number, for ``largest=False`` too (fastops,
                        torch); ``da.topk`` treats NaN as the largest value too but has
                        no index tie rule
    sorted=False        winners in ascending index order (fastops' deterministic order)
    graph               per chunk ``fastops.topk`` (at most ``k`` candidates, in index
                        order), then a tree of ``fastops.topk`` over the concatenated
                        candidates of up to ``split_every`` neighbouring chunks; values
                        and indices travel together (one task per node, as
                        ``da.argtopk``'s tuples)
    ==================  ============================================================
    """
    op = "topk"
    x = g.as_dask(op, "x", x)
    _validate.dtype_in(op, "x", x, _validate.NUMERIC)
    _validate.min_ndim(op, "x", x, 1)
    ax = _validate.axis(op, axis, x.ndim)
    k = _validate.integer(op, "k", k)
    g.need_known_chunks(op, "x", x)
    n = x.shape[ax]
    if k < 0:
        raise ValueError(f"{op}: k={k} must be non-negative")
    if k > n:
        raise ValueError(f"{op}: k={k} is larger than x.shape[{ax}]={n}")
    largest = _validate.flag(op, "largest", largest)
    sorted_ = _validate.flag(op, "sorted", sorted)
    se = g.split_every_value(op, split_every)

    tok = g.tokenize(x, k, ax, largest, sorted_, se, g.threads_setting(op))
    gr = g.Graph(op, x)
    leaf_name, comb_name = f"fastops-topk-chunk-{tok}", f"fastops-topk-combine-{tok}"
    vname, iname = f"fastops-topk-values-{tok}", f"fastops-topk-indices-{tok}"
    leaves = gr.layer(leaf_name)
    comb = gr.layer(comb_name, leaf_name)
    vl, il = gr.layer(vname, comb_name, leaf_name), gr.layer(iname, comb_name, leaf_name)
    nb = x.numblocks
    starts = g.offsets(x.chunks[ax])
    lanes = list(itertools.product(*(range(nb[a]) if a != ax else [0]
                                     for a in range(x.ndim))))
    single = nb[ax] == 1
    width = math.prod(nb)
    for lane in lanes:
        refs = []
        for j in range(nb[ax]):
            idx = lane[:ax] + (j,) + lane[ax + 1:]
            refs.append(gr.task(leaves, (leaf_name,) + idx, _topk_leaf, width,
                                g.TaskRef((x.name,) + idx), k, ax, largest,
                                sorted_ if single else False, starts[j]))
        level = 0
        while len(refs) > 1:
            groups = g.tree_groups(refs, se)
            last = len(groups) == 1
            nxt = []
            for gi, grp in enumerate(groups):
                if len(grp) == 1 and not last:
                    nxt.append(grp[0])
                    continue
                key = (comb_name, level, gi) + lane
                nxt.append(gr.task(comb, key, _topk_combine, len(groups) * len(lanes), k,
                                   ax, largest, sorted_ if last else False, *grp))
            refs, level = nxt, level + 1
        root = refs[0]
        gr.task(vl, (vname,) + lane, _take, len(lanes), root, 0)
        gr.task(il, (iname,) + lane, _take, len(lanes), root, 1)
    chunks = tuple((k,) if a == ax else c for a, c in enumerate(x.chunks))
    vdt = g.native(x.dtype)
    values = gr.array(vname, chunks, g.meta(x, x.ndim, vdt))
    indices = gr.array(iname, chunks, g.meta(x, x.ndim, np.int64))
    return ValuesIndices(values, indices)


# ------------------------------------------------------------------ cummax / cummin
def _wins_carry(lv, cv, is_max, xp):
    """Where the carried running value beats the chunk's own running value (torch's rule
    as an associative select: the later element wins when it is NaN or >= (<=) the
    earlier, so the carry wins where the local value is not NaN and strictly below
    (above) it, or where the carry is NaN and the local value is not)."""
    w = (lv < cv) if is_max else (lv > cv)
    if lv.dtype.kind == "f":     # (always computed: a bool() test is a host sync on GPU)
        w |= xp.isnan(cv) & ~xp.isnan(lv)
    return w


def _combine_pair(is_max, a, b):
    """The running (value, index) after ``a`` then ``b`` (lane-shaped pairs; None is the
    empty prefix)."""
    if a is None:
        return b
    if b is None:
        return a
    be, _ = g.block_module(a[0])
    xp = be.xp
    keep_a = _wins_carry(b[0], a[0], is_max, xp)
    return xp.where(keep_a, a[0], b[0]), xp.where(keep_a, a[1], b[1])


def _cum_view(block, axis):
    """(backend, the chunk as fastops sees it, its (outer, n, inner) view in the compute
    dtype: float16 as float32)."""
    be, (b,) = g.block_module(block)
    return be, b, _as_3d(_compute_dtype(b, be), axis, be)


def _cum_summary(block, axis, is_max, off):
    """The running pair (value in the compute dtype, global index) at the end of one
    chunk, for every lane: (outer, inner) arrays; None for an empty chunk (the empty
    prefix).  A read-only kernel pass (cumext_last: no scan written, a fraction of the
    scan's cost), on the CPU and the GPU alike."""
    be, b, xc = _cum_view(block, axis)
    if b.size == 0:
        return None
    outer, _, inner = xc.shape
    lv = be.xp.empty((outer, inner), xc.dtype)
    li = be.xp.empty((outer, inner), np.int64)
    be.run("selection", "cumext_last", xc, is_max, off, lv, li)
    return lv, li


def _cum_final(block, axis, is_max, off, *prefix):
    """The chunk's final (values, global indices): one kernel pass (cumext_from) whose
    lanes start from the carry, the running pair of the earlier chunks (the fold of
    ``prefix``: one carry, or the summaries of every earlier chunk), and which writes
    global indices.  The same take rule as the single-array scan, so the same bits."""
    carry = None
    for pair in prefix:
        carry = _combine_pair(is_max, carry, pair)
    be, b, xc = _cum_view(block, axis)
    xp = be.xp
    values = be.empty(b.shape, b.dtype)
    indices = be.empty(b.shape, np.int64)
    if b.size == 0:
        return values, indices
    v3 = values.reshape(xc.shape) if values.dtype == xc.dtype else \
        xp.empty(xc.shape, xc.dtype)
    if carry is None:
        cv, ci = xp.empty((0, 0), xc.dtype), xp.empty((0, 0), np.int64)
    else:
        cv, ci = (xp.ascontiguousarray(c) for c in carry)
    be.run("selection", "cumext_from", xc, is_max, cv, ci, off, v3,
           indices.reshape(xc.shape))
    if values.dtype != xc.dtype:     # float16, computed in float32
        values[...] = v3.reshape(b.shape)
    return values, indices


def _blelloch(n):
    """Brent-Kung network for the inclusive prefixes of n items: a list of (target,
    source) steps, item[target] = op(item[source], item[target]), grouped by level."""
    levels = []
    d = 1
    while 2 * d <= n:                       # up-sweep
        levels.append([(i, i - d) for i in range(2 * d - 1, n, 2 * d)])
        d *= 2
    d //= 2
    while d >= 1:                           # down-sweep
        steps = [(i, i - d) for i in range(3 * d - 1, n, 2 * d)]
        if steps:
            levels.append(steps)
        d //= 2
    return levels


# Up to this many chunks along the axis, "sequential" has no carry tasks: each final task
# folds the summaries of all earlier chunks itself (j small (outer, inner) selects for
# chunk j), so the graph is two task levels deep instead of a chain of n - 1 hops
# between workers (dask cummax axis=1, 8 chunks, fastops/_bench/dask.py: the chain's
# transfers and hops were most of the wall time).  Beyond it the fold's n^2 / 2 selects
# and the tasks' fan-in grow: the chain (or "blelloch") again.
_FOLD_IN_FINAL = 16


def _cumulative(op, x, axis, method, is_max):
    x = g.as_dask(op, "x", x)
    _validate.dtype_in(op, "x", x, _validate.NUMERIC)
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d array")
    ax = _validate.axis(op, axis, x.ndim)
    method = _validate.choice(op, "method", method, ("sequential", "blelloch"))
    g.need_known_chunks(op, "x", x, [ax])

    tok = g.tokenize(x, ax, method, is_max, g.threads_setting(op))
    gr = g.Graph(op, x)
    names = {s: f"fastops-{op}-{s}-{tok}" for s in
             ("summary", "carry", "final", "values", "indices")}
    summ = gr.layer(names["summary"])
    carry = gr.layer(names["carry"], names["summary"])
    final = gr.layer(names["final"], names["summary"], names["carry"])
    vl = gr.layer(names["values"], names["final"])
    il = gr.layer(names["indices"], names["final"])
    nb = x.numblocks
    n = nb[ax]
    starts = g.offsets(x.chunks[ax])
    width = math.prod(nb)
    lanes = list(itertools.product(*(range(nb[a]) if a != ax else [0]
                                     for a in range(x.ndim))))
    nl = len(lanes)
    for lane in lanes:
        def idx(j):
            return lane[:ax] + (j,) + lane[ax + 1:]
        # summaries[j]: the running pair at the end of chunk j (the last chunk needs none)
        summaries = [gr.task(summ, (names["summary"],) + idx(j), _cum_summary,
                             nl * (n - 1), g.TaskRef((x.name,) + idx(j)), ax, is_max,
                             starts[j])
                     for j in range(n - 1)]
        # prefixes[j]: the running pairs chunk j's final task folds into its carry
        if method == "sequential" and n <= _FOLD_IN_FINAL:
            prefixes = [summaries[:j] for j in range(n)]
        else:
            carries = [None] * n        # carries[j]: the running pair before chunk j
            if n > 1:
                carries[1] = summaries[0]
            if method == "sequential":
                for j in range(2, n):
                    carries[j] = gr.task(carry, (names["carry"], j) + lane, _combine_pair,
                                         nl, is_max, carries[j - 1], summaries[j - 1])
            else:
                items = list(summaries)
                for lev, steps in enumerate(_blelloch(n - 1)):
                    new = list(items)
                    for t, s in steps:
                        new[t] = gr.task(carry, (names["carry"], lev, t) + lane,
                                         _combine_pair, len(steps) * nl, is_max, items[s],
                                         items[t])
                    items = new
                carries[1:] = items
            prefixes = [() if c is None else (c,) for c in carries]
        for j in range(n):
            fx = gr.task(final, (names["final"],) + idx(j), _cum_final, width,
                         g.TaskRef((x.name,) + idx(j)), ax, is_max, starts[j], *prefixes[j])
            gr.task(vl, (names["values"],) + idx(j), _take, width, fx, 0)
            gr.task(il, (names["indices"],) + idx(j), _take, width, fx, 1)
    values = gr.array(names["values"], x.chunks, g.meta(x, x.ndim, g.native(x.dtype)))
    indices = gr.array(names["indices"], x.chunks, g.meta(x, x.ndim, np.int64))
    return ValuesIndices(values, indices)


_CUM_DOC = """Running {what} of a dask array along ``axis`` and the global index where it
    was taken: :func:`fastops.{op}` on chunked NumPy or CuPy arrays.

    Parameters
    ----------
    x : dask array of a real dtype (uint8..uint64, int8..int64, float16/32/64), ndim >= 1
        Any chunking (known chunk sizes along ``axis``).
    axis : int
    method : {{"sequential", "blelloch"}}
        How the carries between chunks are computed.  "sequential" (default): the
        summaries folded in order; with up to 16 chunks along ``axis`` each chunk's
        scan folds the earlier summaries itself (two task levels, no carry tasks),
        beyond that a chain of one small task per chunk boundary (``n - 1`` steps of
        latency for ``n`` chunks).  "blelloch": a Brent-Kung prefix network over the
        chunks' summaries, ``2 log2(n)`` steps of latency and about ``2n`` small tasks,
        for many chunks.  Both give the same bits.

    Returns
    -------
    ValuesIndices (``.values``, ``.indices``) of dask arrays chunked like ``x``: values
    of x's dtype, int64 global indices.

    Notes
    -----
    ==================  ============================================================
    result              bit for bit ``fastops.{op}(x.compute(), axis)`` (and
                        ``torch.{op}``) on any chunking and scheduler
    ties                the later index wins, across chunk borders too (torch)
    NaN                 propagates, the index following each later NaN (torch)
    graph               per chunk but the last a read-only summary pass (the
                        chunk's final running value and global index per lane, in
                        parallel); the carry of each chunk from the summaries (the
                        rule above as an associative select); per chunk one scan that
                        starts each lane from its carry and writes the values and
                        global indices directly (the CPU and GPU kernels alike)
    peer                ``da.cumreduction(np.{ufunc}.accumulate, ...)`` gives the
                        values only
    ==================  ============================================================
    """


def cummax(x: da.Array, axis: int,
           method: Literal["sequential", "blelloch"] = "sequential") -> ValuesIndices:
    return _cumulative("cummax", x, axis, method, True)


def cummin(x: da.Array, axis: int,
           method: Literal["sequential", "blelloch"] = "sequential") -> ValuesIndices:
    return _cumulative("cummin", x, axis, method, False)


cummax.__doc__ = _CUM_DOC.format(what="maximum", op="cummax", ufunc="maximum")
cummin.__doc__ = _CUM_DOC.format(what="minimum", op="cummin", ufunc="minimum")


# ------------------------------------------------------------------ nonzero
def _count(block):
    """Nonzero elements of one chunk, on the host: fastops.nonzero's rule (x != 0: -0.0
    is zero, NaN is not)."""
    be, (b,) = g.block_module(block)
    return np.full((1,) * block.ndim, int(be.xp.count_nonzero(b)), dtype=np.int64)


def _fill(block, starts, expect):
    """fastops.nonzero of one chunk, indices made global."""
    idx = fastops.nonzero(block)
    if idx.shape[1] != expect:
        raise RuntimeError(f"nonzero: a chunk has {idx.shape[1]} nonzero elements but "
                           f"{expect} when they were counted: x's graph is not "
                           f"deterministic; persist x before calling fastops.dask.nonzero")
    if any(starts):
        be, _ = g.block_module(idx)
        idx += be.xp.asarray(np.asarray(starts, dtype=np.int64)[:, None])
    return idx


def _row_major(op, x):
    """x rechunked, if needed, so that each chunk covers a contiguous row-major range
    (then the per-chunk results, taken in block order, are in row-major order): every
    axis before the last chunked one must have chunks of 1.  When it does not, the new
    chunks are (1, ..., 1, c, full, ..., full) with about as many bytes as x's largest
    chunk (at least dask's array.chunk-size)."""
    nb = x.numblocks
    chunked = [a for a in range(x.ndim) if nb[a] > 1]
    if not chunked:
        return x
    s = chunked[-1]
    if all(max(x.chunks[a], default=0) <= 1 for a in range(s)):
        return x
    itemsize = max(1, x.dtype.itemsize)
    biggest = max(math.prod(c) for c in itertools.product(*x.chunks)) * itemsize
    limit = dask.utils.parse_bytes(dask.config.get("array.chunk-size", "128MiB"))
    target = max(biggest, limit)
    shape = x.shape
    j = 0
    while j < x.ndim - 1 and math.prod(shape[j + 1:]) * itemsize > target:
        j += 1
    suffix = math.prod(shape[j + 1:]) * itemsize
    cj = max(1, min(shape[j], target // max(1, suffix)))
    new = {a: 1 for a in range(j)}
    new[j] = cj
    new.update({a: -1 for a in range(j + 1, x.ndim)})
    return x.rechunk(new)


def nonzero(x: da.Array) -> da.Array:
    """Indices of the nonzero elements of a dask array, ONNX NonZero layout:
    :func:`fastops.nonzero` on chunked NumPy or CuPy arrays, with known chunk sizes.

    Parameters
    ----------
    x : dask array of a bool, integer, float or complex dtype (any byte order)

    Returns
    -------
    dask array of int64, shape ``(x.ndim, nnz)`` (``(1, nnz)`` for 0-d ``x``), chunked
    along axis 1 with known sizes (one chunk per chunk of ``x`` that has nonzero
    elements).

    Notes
    -----
    ==================  ============================================================
    result              bit for bit ``fastops.nonzero(x.compute())``
                        (``np.array(np.nonzero(x))``, row-major order)
    known chunk sizes   two passes: the call computes the per-chunk counts
                        (``count_nonzero``, one small integer per chunk comes back),
                        then returns the lazy fill (``fastops.nonzero`` per chunk plus
                        the chunk's offsets).  ``x`` is therefore computed twice:
                        persist it first if it is expensive.  ``da.nonzero`` has
                        unknown (NaN) chunk sizes and needs ``compute_chunk_sizes()``,
                        which computes the whole result once more.
    row-major order     per-chunk results are in global row-major order only if each
                        chunk is a contiguous row-major range; otherwise ``x`` is
                        rechunked first to (1, ..., 1, c, full, ..., full) chunks of
                        about the size of its largest chunk (or dask's
                        array.chunk-size), which moves data
    zeros               -0.0 is zero, NaN is nonzero (``x != 0``)
    ==================  ============================================================
    """
    op = "nonzero"
    x = g.as_dask(op, "x", x)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{op}: x has dtype {x.dtype}; expected a bool, integer, float or "
                        f"complex dtype")
    g.need_known_chunks(op, "x", x)
    if x.ndim == 0:
        x = x.reshape(1)
    x = _row_major(op, x)
    counts = x.map_blocks(_count, chunks=(1,) * x.ndim, dtype=np.int64,
                          meta=np.empty((0,) * x.ndim, dtype=np.int64)).compute()
    counts = np.asarray(counts).reshape(x.numblocks)
    tok = g.tokenize(x, g.threads_setting(op))
    name = f"fastops-nonzero-{tok}"
    gr = g.Graph(op, x)
    fill = gr.layer(name)
    starts = [g.offsets(c) for c in x.chunks]
    sizes = []
    blocks = [b for b in itertools.product(*(range(n) for n in x.numblocks))
              if counts[b] > 0]
    if not blocks:
        blocks = [(0,) * x.ndim] if x.size else []
    for j, b in enumerate(blocks):
        st = [starts[a][b[a]] for a in range(x.ndim)]
        gr.task(fill, (name, 0, j), _fill, len(blocks), g.TaskRef((x.name,) + b), st,
                int(counts[b]) if x.size else 0)
        sizes.append(int(counts[b]) if x.size else 0)
    if not blocks:                      # an empty x: one empty chunk
        gr.task(fill, (name, 0, 0), _empty_like_meta, 1, g.meta(x, 2, np.int64),
                (x.ndim, 0))
        sizes = [0]
    return gr.array(name, ((x.ndim,), tuple(sizes)), g.meta(x, 2, np.int64))


def _empty_like_meta(meta_arr, shape):
    return np.empty_like(meta_arr, shape=shape)
