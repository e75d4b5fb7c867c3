"""CuPy launchers for kernels/selection.cu (same signatures as fastops._cpu.selection)."""
import numpy as np

from fastops._gpu._sources import CTYPE

_REAL = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
         "float32", "float64")


def _key_defines(dtype_name):
    wide = np.dtype(dtype_name).itemsize == 8
    kind = {"u": 0, "i": 1, "f": 2}[np.dtype(dtype_name).kind]
    return {"T": CTYPE[dtype_name], "KEY": "u64" if wide else "u32",
            "KEY_BITS": 64 if wide else 32, "KIND": kind}


_WORDS = ("uint8", "uint16", "uint32", "uint64")

# every variant the launchers below can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [_key_defines(d) for d in _REAL] + [{"U": CTYPE[w]} for w in _WORDS]


# Few long rows: topk_rows runs one block per row, so 64 rows leave most of a GPU idle.
# Such rows are split into chunks (about _SPLIT_BLOCKS blocks in all, each chunk at least
# _SPLIT_MIN_LEN long and 4k), k are selected per chunk, then k of the chunk winners: the
# CPU's exact two-stage selection (selection.hpp topk_impl).  The chunk winners come in
# index order (sorted=False), so a tie in the second stage goes to the lower candidate,
# which is the lower index.  Measured on an H200 (scripts/gpu_sweep.py, 2026-12-04), the
# split against one block per row: (1, 16M) k=10 1.4 against 342 ms, (64, 1M) 4.0
# against 22, (200, 256k) 4.3 against 6.0 (k=1000 alike).  torch.topk is still
# 3.9-5.5x faster on these (docs/performance.md, GPU).
_SPLIT_BLOCKS = 1024
_SPLIT_MIN_LEN = 1 << 14


def topk(x, k, largest, sorted, values, indices):
    outer, n, inner = x.shape
    rows = outer * inner
    chunks = 1
    if rows < _SPLIT_BLOCKS // 4 and k > 0:
        chunks = min(_SPLIT_BLOCKS // rows, n // max(_SPLIT_MIN_LEN, 4 * k))
    if chunks < 2:
        _topk_rows(x, k, largest, sorted, values, indices)
        return
    import cupy
    L = -(-n // chunks)                 # chunk length; the last chunk may be shorter
    full = n // L
    parts = [(x[:, :full * L].transpose(0, 2, 1).reshape(rows * full, L, 1), full, L)]
    if n > full * L:
        parts.append((x[:, full * L:].transpose(0, 2, 1).reshape(rows, n - full * L, 1), 1,
                      n - full * L))
    cand_v, cand_i = [], []
    for c0, (view, m, length) in zip((0, full * L), parts):
        kk = min(k, length)
        v = cupy.empty((view.shape[0], kk, 1), dtype=x.dtype)
        i = cupy.empty((view.shape[0], kk, 1), dtype=np.int64)
        _topk_rows(view, kk, largest, False, v, i)
        # global indices: chunk c of row r starts at c0 + c * L
        i = i.reshape(rows, m, kk) + (c0 + L * cupy.arange(m, dtype=np.int64))[None, :, None]
        cand_v.append(v.reshape(rows, m * kk))
        cand_i.append(i.reshape(rows, m * kk))
    cv = cupy.concatenate(cand_v, axis=1)[:, :, None]
    ci = cupy.concatenate(cand_i, axis=1)
    pick_v = cupy.empty((rows, k, 1), dtype=x.dtype)
    pick = cupy.empty((rows, k, 1), dtype=np.int64)
    _topk_rows(cv, k, largest, sorted, pick_v, pick)
    # (rows, k) back to the (outer, k, inner) outputs
    values[...] = pick_v.reshape(outer, inner, k).transpose(0, 2, 1)
    indices[...] = cupy.take_along_axis(ci, pick[:, :, 0], axis=1).reshape(
        outer, inner, k).transpose(0, 2, 1)


# Short rows: one warp per row (topk_warp) when the row fits kWarpKeys = 8 keys a lane
# and k <= 32 (one winner a lane); 8 rows per 256-thread block.  On an H200, (200k, 64)
# took 0.12 / 0.68 / 2.1 ms for k = 1 / 10 / 32 against topk_rows' 2.8 / 3.3 / 3.5
# (scripts/gpu_sweep.py; its k passes make large k slow: torch takes 0.47-0.76).
_WARP_MAX_N = 32 * 8
_WARP_MAX_K = 32

# Longer rows: topk_rows keeps its P = next power of two >= k winners in shared memory
# up to this P (see _topk_rows); (1000, 100k) with k = 256..2048 took 0.96-0.98 of the
# global-scratch path on an H200.
_SMEM_MAX_P = 2048


def _topk_rows(x, k, largest, sorted, values, indices):
    """One block per row of the (outer, n, inner) view, or one warp per short row."""
    import cupy
    from fastops._gpu._compile import kernel, elem_strides
    d = _key_defines(x.dtype.name)
    rows = x.shape[0] * x.shape[2]
    so, sn, si = elem_strides(x)
    if x.shape[1] <= _WARP_MAX_N and k <= _WARP_MAX_K:
        fn = kernel("selection", "topk_warp", **d)
        fn((min(-(-rows // 8), 65535 * 8),), (256,),
           (x, np.int64(rows), np.int64(x.shape[1]), np.int64(x.shape[2]), np.int64(so),
            np.int64(sn), np.int64(si), np.int64(k), np.int32(largest), np.int32(sorted),
            values, indices))
        return
    P = 1 << max(0, int(k - 1).bit_length())
    key_dtype = np.uint64 if d["KEY"] == "u64" else np.uint32
    # the winners in shared memory up to P = 2048 (32 KiB with 64-bit keys, beside the
    # kernel's ~10 KiB of static shared memory); beyond, in global scratch, and sorted
    # there by one device sort of all rows (a bitonic sort in global memory was the
    # alternative)
    smem = P * (8 + np.dtype(key_dtype).itemsize)
    use_smem = P <= _SMEM_MAX_P
    skeys = cupy.empty(1 if use_smem else rows * P, dtype=key_dtype)
    sidx = cupy.empty(1 if use_smem else rows * P, dtype=np.int64)
    fn = kernel("selection", "topk_rows", **d)
    grid = min(rows, 65535)
    # 256 threads: the bin search of topk_rows' radix passes takes one bin per thread
    fn((grid,), (256,), (x, np.int64(rows), np.int64(x.shape[1]), np.int64(x.shape[2]),
                         np.int64(so), np.int64(sn), np.int64(si), np.int64(k),
                         np.int32(largest), np.int32(sorted and use_smem), skeys, sidx,
                         np.int64(P), np.int32(use_smem), values, indices),
       shared_mem=smem if use_smem else 0)
    if sorted and not use_smem:
        _sort_winners(skeys.reshape(rows, P)[:, :k], x.shape, values, indices)


def _sort_winners(keys, shape, values, indices):
    """Reorder each row's k winners (index order, their rank keys in ``keys``, (rows, k))
    by rank: larger key first, ties in index order.  One stable radix sort of
    (row << 32 | ~key) for 32-bit keys; two stable sorts (by ~key, then by row) for
    64-bit keys."""
    import cupy
    outer, _, inner = shape
    rows, k = keys.shape
    row = cupy.arange(rows, dtype=np.uint64)[:, None]
    if keys.dtype == np.uint32:
        perm = cupy.argsort(((row << np.uint64(32)) | (~keys).astype(np.uint64)).reshape(-1))
    else:
        by_key = cupy.argsort((~keys).reshape(-1))
        perm = by_key[cupy.argsort(cupy.broadcast_to(row, (rows, k)).reshape(-1)[by_key])]
    perm = perm.reshape(rows, k) - cupy.arange(0, rows * k, k, dtype=np.int64)[:, None]
    for out in (values, indices):
        flat = out.transpose(0, 2, 1).reshape(rows, k)        # a copy when inner > 1
        out[...] = cupy.take_along_axis(flat, perm, axis=1).reshape(
            outer, inner, k).transpose(0, 2, 1)


# Few long rows along the contiguous axis: cumext_rows runs one block per row.  Such rows
# are cut into chunks (about _SPLIT_BLOCKS blocks, each chunk at least _SPLIT_MIN_LEN
# long): a summary pass (each chunk's final running pair), a scan of the summaries along
# the chunks (cum_combine is associative: the whole row's scan bit for bit, as
# fastops.dask relies on), then each chunk's scan from its carry.  The first chunk gets a
# carry every element beats (-inf / the integer minimum for max; ties and NaN take the
# new element).  Reads x twice, against once, to use the whole GPU.  Only below
# _SPLIT_BLOCKS // 8 rows: on an H200 (132 SMs; scripts/gpu_sweep.py, 2026-12-04) rows
# of 256k took 1.10 ms split against 1.73 at 100 rows, 1.93 against 1.47 at 150 and
# 1.95-2.17 against 1.86-1.99 at 200; 64 rows of 1M 2.4 against 6.9.
_CUM_SPLIT_MIN_LEN = 1 << 15


# Few columns (an outer axis, inner > 1): the column kernel runs one thread per column,
# so (4096, 4096) along axis 0 starts 4096 threads.  Columns are cut into chunks the same
# way (about _COL_SPLIT_THREADS threads in all, each chunk at least _COL_SPLIT_MIN_LEN
# long), when the columns are at least _COL_SPLIT_MIN_N long: the split's three passes
# and their CuPy glue cost 0.35-0.9 ms whatever the size (the host's speed: two H200
# machines, scripts/gpu_sweep.py, 2026-12-04), and the column kernel 0.2-0.4 us a step.
# Along axis 0, split against not: (1024, 1024) 0.37-0.89 ms against 0.20-0.21,
# (2048, 2048) 0.38-0.49 against 0.83, (4096, 4096) 0.35-0.90 against 1.66-1.69.
_COL_SPLIT_THREADS = 1 << 18
_COL_SPLIT_MIN_LEN = 256
_COL_SPLIT_MIN_N = 2048


def cumext(x, is_max, values, indices):
    """Running max (is_max) or min along axis 1 of a non-empty (outer, n, inner) view."""
    outer, n, inner = x.shape
    chunks = 1
    if inner == 1 and outer < _SPLIT_BLOCKS // 8:
        chunks = min(_SPLIT_BLOCKS // outer, n // _CUM_SPLIT_MIN_LEN)
    elif inner > 1 and outer * inner < _COL_SPLIT_THREADS // 4 and n >= _COL_SPLIT_MIN_N:
        chunks = min(_COL_SPLIT_THREADS // (outer * inner), n // _COL_SPLIT_MIN_LEN)
    if chunks < 2:
        _scan(x, is_max, None, None, 0, False, values, indices)
        return
    _cumext_split(x, is_max, chunks, values, indices)


def _cumext_split(x, is_max, chunks, values, indices):
    import cupy
    outer, n, inner = x.shape
    L = -(-n // chunks)
    full = n // L                    # full chunks; then a shorter tail, if any
    chunked = dict(rows=outer * full, length=L, period=full, clen=L, out_n=n)
    # 1. each full chunk's final running pair (global indices), (outer, full, inner)
    sv = cupy.empty((outer, full, inner), dtype=x.dtype)
    sidx = cupy.empty((outer, full, inner), dtype=np.int64)
    _scan(x, is_max, None, None, 0, True, sv, sidx, **chunked)
    # 2. the running pair before each chunk: an inclusive scan of the summaries, shifted
    #    by one chunk; the first chunk starts from a value every element beats
    run_v = cupy.empty_like(sv)
    run_j = cupy.empty_like(sidx)
    _scan(sv, is_max, None, None, 0, False, run_v, run_j)
    run_i = cupy.take_along_axis(sidx, run_j, axis=1)
    info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
    beaten = -np.inf if x.dtype.kind == "f" and is_max else \
        (np.inf if x.dtype.kind == "f" else (info.min if is_max else info.max))
    carry_v = cupy.concatenate([cupy.full((outer, 1, inner), beaten, dtype=x.dtype), run_v],
                               axis=1)
    carry_i = cupy.concatenate([cupy.zeros((outer, 1, inner), dtype=np.int64), run_i], axis=1)
    # 3. every chunk's scan from its carry; the tail (one chunk per row) from the last one
    _scan(x, is_max, carry_v[:, :full], carry_i[:, :full], 0, False, values, indices,
          **chunked)
    if n > full * L:
        t0 = full * L
        _scan(x[:, t0:], is_max, carry_v[:, full], carry_i[:, full], t0, False,
              values[:, t0:], indices[:, t0:], out_n=n)


def cumext_from(x, is_max, carry_v, carry_i, offset, values, indices):
    """cumext with each lane starting from a carry ((outer, inner) arrays; (0, 0) ones
    for none) and global indices (element 0 at ``offset``): fastops._cpu.selection's
    contract, for fastops.dask."""
    outer, _, inner = x.shape
    if values.shape != x.shape or indices.shape != x.shape:
        raise ValueError("cumext_from: the outputs must have x's shape")
    if carry_v.shape[0] == 0 and carry_i.shape[0] == 0:
        carry_v = carry_i = None
    elif carry_v.shape != (outer, inner) or carry_i.shape != (outer, inner):
        raise ValueError("cumext_from: the carry must have shape (outer, inner)")
    _scan(x, is_max, carry_v, carry_i, offset, False, values, indices)


def cumext_last(x, is_max, offset, last_v, last_i):
    """The final running (value, global index) of each lane into (outer, inner) arrays,
    without writing the scan."""
    if last_v.shape != (x.shape[0], x.shape[2]) or last_i.shape != last_v.shape:
        raise ValueError("cumext_last: the outputs must have shape (outer, inner)")
    _scan(x, is_max, None, None, offset, True, last_v, last_i)


def _scan(x, is_max, carry_v, carry_i, offset, last_only, values, indices, *, rows=None,
          length=None, period=1, clen=None, out_n=None):
    """One cumext_rows (inner == 1) or cumext launch over x (outer, n, inner).  By default
    rows are x's rows; _cumext_split passes chunked rows: `rows` (row, chunk) pairs of
    `length` elements, chunk q = pair % period starting clen * q elements into its row,
    outputs of out_n elements per row (see the kernels)."""
    import cupy
    from fastops._gpu._compile import kernel, launch, elem_strides
    so, sn, si = elem_strides(x)
    outer, n, inner = x.shape
    rows = outer if rows is None else rows
    length = n if length is None else length
    clen = n if clen is None else clen
    out_n = n if out_n is None else out_n
    has_carry = carry_v is not None
    if has_carry:   # C-contiguous, in x's dtype and int64, as the kernels index them
        carry_v = cupy.ascontiguousarray(carry_v, dtype=x.dtype)
        carry_i = cupy.ascontiguousarray(carry_i, dtype=np.int64)
    else:           # (never read: any pointer of the right type)
        carry_v, carry_i = values, indices
    chunks = (np.int64(period), np.int64(clen), np.int64(out_n))
    tail = (np.int32(is_max), carry_v, carry_i, np.int32(has_carry), np.int64(offset),
            np.int32(last_only), values, indices)
    if inner == 1:   # scan along the contiguous axis: a block per row
        fn = kernel("selection", "cumext_rows", **_key_defines(x.dtype.name))
        fn((min(rows, 65535),), (256,), (x, np.int64(rows), np.int64(length), np.int64(so),
                                         np.int64(sn)) + chunks + tail)
        return
    fn = kernel("selection", "cumext", **_key_defines(x.dtype.name))
    launch(fn, rows * inner, (x, np.int64(rows), np.int64(length), np.int64(inner),
                              np.int64(so), np.int64(sn), np.int64(si)) + chunks + tail)


def nonzero(x, mask, shape):
    """One host sync: the total count decides the output shape."""
    import cupy
    from fastops._gpu._compile import kernel
    block, items = 256, 16
    tiles = (x.size + block * items - 1) // (block * items)
    counts = cupy.empty(tiles, dtype=np.int64)
    word = CTYPE[x.dtype.name]
    kernel("selection", "nonzero_count", U=word)((tiles,), (block,),
                                                 (x, np.int64(x.size), mask, counts))
    ends = cupy.cumsum(counts)
    nnz = int(ends[-1])
    out = cupy.empty((len(shape), nnz), dtype=np.int64)
    if nnz:
        offsets = ends - counts
        kernel("selection", "nonzero_fill", U=word)(
            (tiles,), (block,), (x, np.int64(x.size), mask, offsets, ends,
                                 np.int32(len(shape)), cupy.asarray(shape), np.int64(nnz), out))
    return out
