"""CuPy launchers for kernels/nms.cu (same signatures as fastops._cpu.nms, minus nthreads).

Everything stays on the device: keys, a stable sort per problem (ties -> lower index;
one radix sort of packed keys, see _order), the IoU bitmask and its unwrapping.  The one host sync per call reads the
number of selected boxes (none with ``pad=True``: the output size is known).
"""
import numpy as np

VARIANTS = [{"T": "float", "KEY": "unsigned int", "KEY_BITS": 32},
            {"T": "double", "KEY": "u64", "KEY_BITS": 64}]

# IoU mask bytes per launch group: problems are processed in groups so that B*C large
# problems never need B*C full masks at once.  A single problem needs N*ceil(N/64)*8 B
# (12.5 MB at N = 10^4, 1.25 GB at N = 10^5).
_MASK_BUDGET = 1 << 29
_SHARED_MAX = 48 * 1024 - 1024     # dynamic shared memory; the static part is small


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


def _suppress(buf, C, order, counts, cls, skip, iou, off, limit, cap_out, sel, out_counts):
    """Mask + sweep for every problem (rows of ``order``), in groups under _MASK_BUDGET."""
    import cupy
    from fastops._gpu._compile import kernel
    P, N = order.shape
    d = _defines(buf.dtype)
    T = buf.dtype.type
    cw = (N + 63) // 64
    if cw > 65535:
        raise ValueError(f"nms: {N} boxes in one problem is more than the GPU kernel's "
                         f"limit of {65535 * 64}")
    group = int(max(1, min(P, 65535, _MASK_BUDGET // (N * cw * 8))))
    mask = cupy.empty(group * N * cw, dtype=np.uint64)
    use_shared = cw * 8 <= _SHARED_MAX
    removed = cupy.empty(1 if use_shared else group * cw, dtype=np.uint64)
    dummy = cupy.empty(1, dtype=np.int64)
    cls_arg = dummy if cls is None else cls
    skip_arg = cupy.empty(1, dtype=np.uint8) if skip is None else skip
    mask_fn = kernel("nms", "nms_mask", **d)
    sweep_fn = kernel("nms", "nms_sweep", **d)
    for p0 in range(0, P, group):
        z = min(group, P - p0)
        mask_fn((cw, cw, z), (64,),
                (buf, np.int64(N), np.int64(C), order, counts, np.int64(p0), cls_arg,
                 np.int32(cls is not None), T(iou), T(off), mask, np.int64(cw)))
        sweep_fn((z,), (256,),
                 (mask, np.int64(N), np.int64(cw), order, counts, np.int64(p0), skip_arg,
                  np.int32(skip is not None), np.int64(limit), np.int64(cap_out), sel,
                  out_counts, removed, np.int32(use_shared)),
                 shared_mem=cw * 8 if use_shared else 0)


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
        _suppress(buf, C, order, counts, None, None, iou_thr, offset, cap, sel.shape[1],
                  sel, out_counts)
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
    """Kept indices (score desc, index asc); boxes (N, 4) non-empty, idxs int64."""
    import cupy
    N = boxes.shape[0]
    buf = _prepare(boxes[None], 0, 0)
    keys, _ = _keys(scores[None, None], False, 0.0)
    by_score = cupy.argsort(keys[0])                        # stable; NaN scores last
    idxs = cupy.ascontiguousarray(idxs)
    order = by_score[cupy.argsort(idxs[by_score])]          # (class, score desc, index asc)
    counts = cupy.full(1, N, dtype=np.uint64)
    skip = cupy.isnan(scores).view(np.uint8)
    sel = cupy.empty((1, N), dtype=np.int64)
    out_counts = cupy.zeros(1, dtype=np.int64)
    _suppress(buf, 1, order[None], counts, idxs, cupy.ascontiguousarray(skip), iou_thr, 0, N,
              N, sel, out_counts)
    kept = sel[0, :int(out_counts[0])]                      # the host sync
    rank = cupy.empty(N, dtype=np.int64)
    rank[by_score] = cupy.arange(N, dtype=np.int64)
    return by_score[cupy.sort(rank[kept])]
