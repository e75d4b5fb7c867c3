"""CuPy launchers for kernels/nms.cu (same signatures as fastops._cpu.nms, minus nthreads).

Everything stays on the device: keys, a stable sort per problem (ties -> lower index;
one radix sort of packed keys, see _order), the IoU bitmask and its unwrapping.  A
problem's mask covers its candidates only (boxes whose score passes the threshold; for
batched_nms, the boxes of one class): the host reads the candidate counts first (one
sync, skipped with ``pad=True``, whose masks are then sized by N), and once more the
number of selected boxes (none with ``pad=True``: the output size is known).
"""
import numpy as np

VARIANTS = [{"T": "float", "KEY": "unsigned int", "KEY_BITS": 32},
            {"T": "double", "KEY": "u64", "KEY_BITS": 64}]

# IoU mask bytes per launch group: problems are processed in groups so that B*C large
# problems never need B*C full masks at once.  A problem of n candidates needs
# n*ceil(n/64)*8 B (12.5 MB at n = 10^4, 1.25 GB at n = 10^5).
_MASK_BUDGET = 1 << 29
_SHARED_MAX = 48 * 1024 - 1024     # dynamic shared memory; the static part is small
_MAX_WORDS = 46340                 # mask words per row: a problem's cw*cw tiles < 2**31
_TAB = 6                           # columns of kernels/nms.cu's problem table


def _defines(dtype):
    return VARIANTS[0] if dtype == np.float32 else VARIANTS[1]


def _prepare(boxes3, center, off):
    """Normalized (B, 5, N) boxes; boxes3 is a (B, N, 4) view."""
    import cupy
    from fastops._gpu._compile import kernel, launch, elem_strides
    B, N = boxes3.shape[:2]
    T = boxes3.dtype.type
    buf = cupy.empty(B * 5 * N, dtype=boxes3.dtype)
    sb0, sb1, sb2 = elem_strides(boxes3)
    launch(kernel("nms", "nms_prepare", **_defines(boxes3.dtype)), B * N,
           (boxes3, np.int64(B), np.int64(N), np.int64(sb0), np.int64(sb1), np.int64(sb2),
            np.int32(center), T(off), buf))
    return buf


def _keys(scores3, has_thr, thr):
    import cupy
    from fastops._gpu._compile import kernel, launch, elem_strides
    B, C, N = scores3.shape
    d = _defines(scores3.dtype)
    keys = cupy.empty((B * C, N), dtype=np.uint32 if d["KEY_BITS"] == 32 else np.uint64)
    counts = cupy.zeros(B * C, dtype=np.uint64)
    ss = elem_strides(scores3)
    launch(kernel("nms", "nms_keys", **d), B * C * N,
           (scores3, np.int64(B), np.int64(C), np.int64(N), np.int64(ss[0]), np.int64(ss[1]),
            np.int64(ss[2]), np.int32(has_thr), scores3.dtype.type(thr), keys, counts))
    return keys, counts


def _order(keys):
    """Each row's positions by (key, position): a stable sort per problem.  CuPy sorts a
    2-D array along axis 1 with a segmented merge sort; 32-bit keys are packed under
    their row number into one 64-bit key instead, which one stable radix sort of the
    flat array orders by (row, key, position) (issue 12)."""
    import cupy
    P, N = keys.shape
    if P == 1 or keys.dtype != np.uint32 or P * N >= 1 << 62:
        return cupy.argsort(keys, axis=1)
    rows = cupy.arange(P, dtype=np.uint64)[:, None]
    packed = (rows << np.uint64(32)) | keys.astype(np.uint64)
    flat = cupy.argsort(packed.reshape(-1))
    return flat.reshape(P, N) - cupy.arange(0, P * N, N, dtype=np.int64)[:, None]


def _suppress(buf, N, C, order, counts, rows, starts, out_off, iou, off, limit, sel,
              out_counts):
    """Mask + sweep for every problem p: its candidates are order[starts[p]:][:counts[p]]
    (device counts), its mask has rows[p] >= counts[p] rows (host), its kept boxes go to
    sel[out_off[p]:] (at most ``limit``) and their count to out_counts[p].  Problems run
    in launch groups of about _MASK_BUDGET mask bytes."""
    import cupy
    from fastops._gpu._compile import kernel
    d = _defines(buf.dtype)
    T = buf.dtype.type
    rows = np.asarray(rows, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    out_off = np.asarray(out_off, dtype=np.int64)
    cw = (rows + 63) // 64
    if cw.max(initial=0) > _MAX_WORDS:
        raise ValueError(f"nms: {int(rows.max())} candidate boxes in one problem is more "
                         f"than the GPU kernel's limit of {_MAX_WORDS * 64}")
    words, tiles = rows * cw, cw * cw
    start_bytes = np.cumsum(words * 8) - words * 8
    # a group may end one problem over budget; tiles <= mask words / 32, so a group's
    # tiles stay below the grid limit (2**31 - 1) for any mask a GPU can hold
    group_of = start_bytes // _MASK_BUDGET
    mask_fn = kernel("nms", "nms_mask", **d)
    sweep_fn = kernel("nms", "nms_sweep", **d)
    bounds = np.flatnonzero(np.diff(group_of)) + 1
    for p0, p1 in zip([0, *bounds], [*bounds, len(rows)]):
        g = slice(p0, p1)
        z = p1 - p0
        tab = np.empty((z, _TAB), dtype=np.int64)
        tab[:, 0] = starts[g]
        tab[:, 1] = cw[g]
        tab[:, 2] = np.cumsum(words[g]) - words[g]
        tab[:, 3] = np.cumsum(tiles[g]) - tiles[g]
        tab[:, 4] = out_off[g]
        tab[:, 5] = np.cumsum(cw[g]) - cw[g]
        n_tiles = int(tiles[g].sum())
        if n_tiles == 0:                        # no candidates: out_counts stay 0
            continue
        tab_d = cupy.asarray(tab)
        mask = cupy.empty(max(int(words[g].sum()), 1), dtype=np.uint64)
        use_shared = int(cw[g].max()) * 8 <= _SHARED_MAX
        removed = cupy.empty(1 if use_shared else int(cw[g].sum()), dtype=np.uint64)
        mask_fn((n_tiles,), (64,),
                (buf, np.int64(N), np.int64(C), order, counts, np.int64(p0), tab_d,
                 np.int64(z), T(iou), T(off), mask))
        sweep_fn((z,), (256,),
                 (mask, order, counts, np.int64(p0), tab_d, np.int64(limit), sel, out_counts,
                  removed, np.int32(use_shared)),
                 shared_mem=int(cw[g].max()) * 8 if use_shared else 0)


def nms_select(boxes, scores, center, offset, cap, iou_thr, has_sthr, sthr, pad_out):
    """ONNX rows (K, 3); boxes (B, N, 4) and scores (B, C, N) non-empty, one float dtype;
    at most ``cap`` (<= N) boxes per problem; ``pad_out`` None or the preallocated
    (rows, 3) output of pad=True (selected rows first, the rest -1)."""
    import cupy
    from fastops._gpu._compile import kernel, launch
    B, N = boxes.shape[:2]
    C = scores.shape[1]
    P = B * C
    buf = _prepare(boxes, center, offset)
    keys, counts = _keys(scores, has_sthr, sthr)
    order = _order(keys)                        # (score desc, index asc), rest last
    sel = cupy.empty((P, max(cap, 1)), dtype=np.int64)
    out_counts = cupy.zeros(P, dtype=np.int64)
    if cap > 0:
        # masks sized by each problem's candidates (a host sync), or by N with pad=True
        rows = np.full(P, N, np.int64) if pad_out is not None else counts.get()
        _suppress(buf, N, C, order, counts, rows, np.arange(P, dtype=np.int64) * N,
                  np.arange(P, dtype=np.int64) * sel.shape[1], iou_thr, offset, cap, sel,
                  out_counts)
    offsets = cupy.cumsum(out_counts) - out_counts
    if pad_out is not None:
        out = pad_out
        out.fill(-1)
    else:
        out = cupy.empty((int(out_counts.sum()), 3), dtype=np.int64)   # the host sync
    if out.shape[0]:
        launch(kernel("nms", "nms_emit", **_defines(boxes.dtype)), P * sel.shape[1],
               (sel, out_counts, offsets, np.int64(P), np.int64(C), np.int64(sel.shape[1]),
                out))
    return out


def nms_batched(boxes, scores, idxs, iou_thr):
    """Kept indices (score desc, index asc); boxes (N, 4) non-empty, idxs int64.  Each
    class is its own problem: a segment of the (class, score desc, index asc) order,
    whose candidates are its non-NaN scores (NaN sorts last within the class and is
    never kept)."""
    import cupy
    N = boxes.shape[0]
    buf = _prepare(boxes[None], 0, 0)
    keys, _ = _keys(scores[None, None], False, 0.0)
    by_score = cupy.argsort(keys[0])                        # stable; NaN scores last
    idxs = cupy.ascontiguousarray(idxs)
    order = by_score[cupy.argsort(idxs[by_score])]          # (class, score desc, index asc)
    cls = idxs[order]
    first = cupy.empty(N, dtype=bool)
    first[0] = True
    first[1:] = cls[1:] != cls[:-1]
    starts = cupy.flatnonzero(first)                        # a host sync (the class count)
    ends = cupy.concatenate([starts[1:], cupy.full(1, N, dtype=starts.dtype)])
    valid = cupy.cumsum(~cupy.isnan(scores[order]), dtype=np.int64)
    before = cupy.concatenate([cupy.zeros(1, dtype=np.int64), valid])
    counts = before[ends] - before[starts]                  # non-NaN boxes per class
    host = cupy.stack([starts.astype(np.int64), counts]).get()   # a host sync
    G = host.shape[1]
    sel = cupy.empty(N, dtype=np.int64)
    out_counts = cupy.zeros(G, dtype=np.int64)
    _suppress(buf, N, G, order, counts.astype(np.uint64), host[1], host[0], host[0],
              iou_thr, 0, N, sel, out_counts)
    segment = cupy.cumsum(first, dtype=np.int64) - 1        # the class segment of a slot
    slot = cupy.arange(N, dtype=np.int64) - starts[segment]
    kept = sel[slot < out_counts[segment]]                  # a host sync (the kept count)
    rank = cupy.empty(N, dtype=np.int64)
    rank[by_score] = cupy.arange(N, dtype=np.int64)
    return by_score[cupy.sort(rank[kept])]
