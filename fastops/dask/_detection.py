"""non_max_suppression (pad=True) and roi_align over batch-chunked dask arrays."""
import sys

import numpy as np

import dask.array as da

import fastops
from fastops import _validate
from fastops._typing import Array, FloatScalar, IntScalar, Literal, Optional, Tuple, Union
from fastops.dask import _graph as g
from fastops.detection import _roi_output_size


def _host(a):
    """A host NumPy copy of a concrete array argument (NumPy, CuPy, DLPack, dask)."""
    if isinstance(a, da.Array):
        a = a.compute()
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
        try:
            return np.from_dlpack(a)
        except Exception:
            if hasattr(a, "cpu"):
                return np.asarray(a.cpu())
            raise
    return np.asarray(a)


# ------------------------------------------------------------------ NMS
def _nms_chunk(boxes, scores, b0, kwargs):
    """fastops.non_max_suppression (pad=False) of one batch chunk, batch column global."""
    rows = fastops.non_max_suppression(boxes, scores, pad=False, **kwargs)
    if b0 and rows.shape[0]:
        rows[:, 0] += b0
    return rows


def _concat_rows(*parts):
    be, _ = g.block_module(parts[0])
    return be.xp.concatenate(parts, axis=0)


def _rows_of(selected, r0, rows):
    """The selected rows that land in output rows [r0, r0 + rows) (a view; it runs where
    the gathered rows are, so only this part moves on)."""
    return selected[r0:r0 + rows]


def _pad_rows(part, rows):
    """One output chunk of the padded result: its selected rows, then -1 (fastops'
    pad=True layout: every selected row first, in order, the rest -1)."""
    be, _ = g.block_module(part)
    out = be.xp.full((rows, 3), -1, dtype=np.int64)
    if part.shape[0]:
        out[:part.shape[0]] = part
    return out


def non_max_suppression(boxes: da.Array, scores: da.Array,
                        max_output_boxes_per_class: Optional[IntScalar] = None,
                        iou_threshold: FloatScalar = 0.0,
                        score_threshold: Optional[FloatScalar] = None,
                        center_point_box: int = 0, offset: int = 0, pad: bool = True,
                        split_every: Optional[int] = None) -> da.Array:
    """ONNX / MMCV NonMaxSuppression over a batch-chunked dask array, with the static
    ``pad=True`` output: :func:`fastops.non_max_suppression` per chunk of images.

    Parameters
    ----------
    boxes : dask array (B, N, 4), scores : dask array (B, C, N)
        NumPy or CuPy chunks; chunked along B (other axes are made whole: each image's
        boxes and scores are needed together).  scores is rechunked to boxes' B chunks.
    max_output_boxes_per_class, iou_threshold, score_threshold, center_point_box, offset
        As :func:`fastops.non_max_suppression` (validated the same way, same messages).
    pad : True
        Only the padded (MMCV/TensorRT) layout has a shape known before computing;
        ``pad=False`` raises ValueError (compute the padded result and drop the -1 rows,
        or use ``to_delayed()`` per chunk).
    split_every : int >= 2, optional
        Fan-in of the tree that gathers the selected rows (default 32: every level of
        the tree moves all of them, so it is kept shallow; concatenating is cheap).

    Returns
    -------
    dask array of int64, shape ``(B * C * max_output_boxes_per_class, 3)`` (``B * C * N``
    without a maximum), one chunk per chunk of B (``b * C * max`` rows): bit for bit
    ``fastops.non_max_suppression(boxes.compute(), scores.compute(), ..., pad=True)``.

    Notes
    -----
    ==================  ============================================================
    layout              every selected ``[batch, class, box]`` row first (grouped by
                        batch, then class, each group in decreasing score, ties to the
                        lower box index), then -1 rows, as single-machine fastops; the
                        selected rows of later images can therefore land in earlier
                        output chunks
    graph               per chunk of images ``fastops.non_max_suppression(pad=False)``
                        (batch column made global); a tree of concatenations gathers
                        the selected rows (few: 24 bytes each); each output chunk is
                        its slice of them (cut where the rows are, so each selected
                        row moves once more at most) padded with -1 where it runs
    scale               the selected rows (24 bytes each) meet on one worker: fine for
                        detections (a few per image and class); for hundreds of
                        millions of them use the per-chunk results
                        (``fastops.non_max_suppression`` through ``to_delayed()``)
    ==================  ============================================================
    """
    op = "non_max_suppression"
    boxes = g.as_dask(op, "boxes", boxes)
    scores = g.as_dask(op, "scores", scores)
    pad = _validate.flag(op, "pad", pad)
    if not pad:
        raise ValueError(f"{op}: fastops.dask needs pad=True (an output whose shape is "
                         f"known before computing); drop the -1 rows afterwards")
    g.need_known_chunks(op, "boxes", boxes)
    g.need_known_chunks(op, "scores", scores)
    if boxes.ndim == 3 and scores.ndim == 3 and scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{op}: scores.shape[0]={scores.shape[0]} (batches) does not match "
                         f"boxes.shape[0]={boxes.shape[0]}")
    kwargs = dict(max_output_boxes_per_class=max_output_boxes_per_class,
                  iou_threshold=iou_threshold, score_threshold=score_threshold,
                  center_point_box=center_point_box, offset=offset)
    # every other check, with fastops' own messages: the op on empty stand-ins (B = 0)
    fastops.non_max_suppression(
        np.empty((0,) + tuple(boxes.shape[1:]), dtype=boxes.dtype),
        np.empty((0,) + tuple(scores.shape[1:]), dtype=scores.dtype), pad=True, **kwargs)
    if max_output_boxes_per_class is not None:   # a plain int for the graph
        kwargs["max_output_boxes_per_class"] = _validate.integer(
            op, "max_output_boxes_per_class", max_output_boxes_per_class, lo=0, hi=None)
    for name in ("iou_threshold", "score_threshold"):
        if kwargs[name] is not None:
            kwargs[name] = _validate.number(op, name, kwargs[name])
    N, C = boxes.shape[1], scores.shape[1]
    limit = N if kwargs["max_output_boxes_per_class"] is None else \
        kwargs["max_output_boxes_per_class"]
    boxes = boxes.rechunk({1: -1, 2: -1})
    scores = scores.rechunk({0: boxes.chunks[0], 1: -1, 2: -1})
    se = g.split_every_value(op, 32 if split_every is None else split_every)
    rows = [b * C * limit for b in boxes.chunks[0]]
    for b, r in zip(boxes.chunks[0], rows):
        if 24 * r > sys.maxsize:
            raise MemoryError(f"{op}: an output chunk of {b} image(s) x {C} classes x "
                              f"max_output_boxes_per_class={limit} rows cannot be "
                              f"allocated (rechunk boxes to fewer images per chunk)")

    tok = g.tokenize(boxes, scores, sorted(kwargs.items()), se, g.threads_setting(op))
    gr = g.Graph(op, boxes, scores)
    cname, tname, sname, oname = (f"fastops-nms-{s}-{tok}"
                                  for s in ("chunk", "gather", "split", "out"))
    chunk = gr.layer(cname)
    tree = gr.layer(tname, cname)
    split = gr.layer(sname, tname, cname)
    out = gr.layer(oname, sname)
    nb = boxes.numblocks[0]
    b0 = g.offsets(boxes.chunks[0])
    refs = [gr.task(chunk, (cname, j), _nms_chunk, nb, g.TaskRef((boxes.name, j, 0, 0)),
                    g.TaskRef((scores.name, j, 0, 0)), b0[j], kwargs) for j in range(nb)]
    level = 0
    while len(refs) > 1:
        groups = g.tree_groups(refs, se)
        refs = [gr.task(tree, (tname, level, i), _concat_rows, len(groups), *grp)
                for i, grp in enumerate(groups)]
        level += 1
    r0 = g.offsets(rows)
    for j in range(nb):
        part = gr.task(split, (sname, j), _rows_of, nb, refs[0], r0[j], rows[j])
        gr.task(out, (oname, j, 0), _pad_rows, nb, part, rows[j])
    return gr.array(oname, (tuple(rows), (3,)), g.meta(boxes, 2, np.int64))


# ------------------------------------------------------------------ roi_align
def _roi_piece(x, boxes, batch, kwargs):
    """fastops.roi_align of one image chunk for the RoIs that read it (ONNX layout:
    exact integer batch indices, local to the chunk)."""
    be, _ = g.block_module(x)
    xp = be.xp
    return fastops.roi_align(x, xp.asarray(boxes), batch_indices=xp.asarray(batch),
                             **kwargs)


def _roi_assemble(rows, where, *pieces):
    """An output chunk of ``rows`` RoIs from pieces: piece p goes to rows where[p]."""
    be, _ = g.block_module(pieces[0])
    xp = be.xp
    out = xp.empty((rows,) + tuple(pieces[0].shape[1:]), dtype=pieces[0].dtype)
    for w, p in zip(where, pieces):
        out[xp.asarray(w)] = p
    return out


def roi_align(x: da.Array, rois: Array, output_size: Union[int, Tuple[int, int]],
              spatial_scale: FloatScalar = 1.0, sampling_ratio: int = 0,
              mode: Literal["avg", "max", "onnx_max"] = "avg", aligned: bool = True,
              batch_indices: Optional[Array] = None) -> da.Array:
    """RoIAlign of a batch-chunked dask array of feature maps:
    :func:`fastops.roi_align` per chunk of images, for the RoIs of those images.

    Parameters
    ----------
    x : dask array (N, C, H, W), float16/32/64, NumPy or CuPy chunks
        Chunked along N and C as you like; H and W are made whole (rechunked) since a
        RoI may read anywhere in its image.
    rois : array (K, 5) ``[batch, x1, y1, x2, y2]``, or (K, 4) with ``batch_indices``
        A concrete array (NumPy, CuPy, DLPack; a dask array is computed): its batch
        indices decide which chunk of images each RoI reads, when the graph is built.
    output_size, spatial_scale, sampling_ratio, mode, aligned, batch_indices
        As :func:`fastops.roi_align` (validated the same way, same messages).

    Returns
    -------
    dask array (K, C, output_h, output_w) of x's dtype, bit for bit
    ``fastops.roi_align(x.compute(), rois, ...)``; chunked along C like x, and along K
    by image chunk when the batch indices are non-decreasing (the usual layout: the
    RoIs of each image together), else in about as many equal ranges of RoIs.

    Notes
    -----
    Images never move: every task computes the RoIs of one chunk of images (the RoIs it
    needs travel with the task, a few bytes each); only the pooled outputs move to
    their output chunk, which, for sorted batch indices, is the task's own result.
    """
    op = "roi_align"
    x = g.as_dask(op, "x", x)
    _validate.dtype_in(op, "x", x, _validate.FLOATS)
    _validate.ndim_is(op, "x", x, 4)
    g.need_known_chunks(op, "x", x)
    rois_h = _host(rois)
    bi_h = None if batch_indices is None else _host(batch_indices)
    N = x.shape[0]
    oh, ow = _roi_output_size(op, output_size)
    K = rois_h.shape[0] if rois_h.ndim == 2 else 0
    if max(K, 1) * max(max(x.chunks[1], default=0), 1) * oh * ow * x.dtype.itemsize > \
            sys.maxsize:
        raise MemoryError(f"{op}: an output chunk of up to {K} RoIs x "
                          f"{max(x.chunks[1], default=0)} channels at output_size="
                          f"{output_size!r} cannot be allocated")
    # every other check, with fastops' own messages, on a stand-in with no channels
    fastops.roi_align(np.empty((N, 0, 1, 1), dtype=x.dtype), rois_h, output_size,
                      spatial_scale, sampling_ratio, mode, aligned, bi_h)
    kwargs = dict(output_size=(oh, ow),
                  spatial_scale=_validate.number(op, "spatial_scale", spatial_scale),
                  sampling_ratio=_validate.integer(op, "sampling_ratio", sampling_ratio,
                                                   lo=None, hi=None),
                  mode=mode.lower(), aligned=_validate.flag(op, "aligned", aligned))
    cols = 5 if bi_h is None else 4
    boxes = np.ascontiguousarray(rois_h[:, cols - 4:])
    batch = (rois_h[:, 0] if bi_h is None else bi_h).astype(np.int64)
    x = x.rechunk({2: -1, 3: -1})
    nstarts = g.offsets(x.chunks[0])
    # which chunk of images each RoI reads
    owner = np.searchsorted(np.asarray(nstarts[1:], dtype=np.int64), batch, side="right")
    groups = [np.flatnonzero(owner == i) for i in range(x.numblocks[0])]
    nonempty = [i for i in range(x.numblocks[0]) if groups[i].size]
    if K and np.all(batch[1:] >= batch[:-1]):
        bounds = g.offsets([groups[i].size for i in nonempty])
    else:
        m = max(1, len(nonempty))
        bounds = [K * j // m for j in range(m + 1)]
    kchunks = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:])) or (0,)

    tok = g.tokenize(x, boxes, batch, kwargs, g.threads_setting(op))
    gr = g.Graph(op, x)
    pname, oname = f"fastops-roi_align-piece-{tok}", f"fastops-roi_align-{tok}"
    pieces = gr.layer(pname)
    out = gr.layer(oname, pname)
    nc = x.numblocks[1]
    width = max(1, len(nonempty)) * nc
    for m, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        for c in range(nc):
            refs, where = [], []
            for i in nonempty:
                sel = groups[i][(groups[i] >= a) & (groups[i] < b)]
                if not sel.size:
                    continue
                refs.append(gr.task(pieces, (pname, m, i, c), _roi_piece, width,
                                    g.TaskRef((x.name, i, c, 0, 0)), boxes[sel],
                                    batch[sel] - nstarts[i], kwargs))
                where.append(sel - a)
            if len(refs) == 1 and where[0].size == b - a:   # one piece, in order
                gr.task(out, (oname, m, c, 0, 0), _same, 1, refs[0])
            elif refs:
                gr.task(out, (oname, m, c, 0, 0), _roi_assemble, width, b - a, where,
                        *refs)
            else:                       # no RoIs at all: an empty chunk
                gr.task(out, (oname, m, c, 0, 0), _empty_like_meta, 1,
                        g.meta(x, 4, x.dtype), (0, x.chunks[1][c], oh, ow))
    return gr.array(oname, (kchunks, x.chunks[1], (oh,), (ow,)),
                    g.meta(x, 4, g.native(x.dtype)))


def _same(a):
    return a


def _empty_like_meta(meta_arr, shape):
    return np.empty_like(meta_arr, shape=shape)
