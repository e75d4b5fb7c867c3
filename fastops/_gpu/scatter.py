"""CuPy launchers for kernels/scatter.cu (same signatures as fastops._cpu.scatter).

Each function returns the row-major position of the first out-of-range index (then
nothing was written), or -1.  The index check is the one host sync per call: an
IndexError must be raised before the scatter writes.
"""
import numpy as np

from fastops._gpu._sources import CTYPE

_REAL = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
         "float32", "float64")
_NO_BAD = (1 << 64) - 1


def _defines(dtype_name):
    kind = {"u": 0, "i": 1, "f": 2}[np.dtype(dtype_name).kind]
    return {"T": CTYPE[dtype_name], "KIND": kind}


# every variant the launchers below can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [_defines(d) for d in _REAL]


def _suffix(idx):
    return "_i32" if idx.dtype == np.int32 else "_i64"


def _ptr(table):
    """A kernel pointer argument: the array, or NULL for an absent offset table."""
    return np.uint64(0) if table is None else table


def _first_bad(bad):
    b = int(bad.get()[0])   # the host sync
    return -1 if b == _NO_BAD else b


def _bad_slot():
    import cupy
    return cupy.full(1, _NO_BAD, dtype=np.uint64)


def _ordered_minmax(out, upd, targets, reduction, d):
    """Float max/min with duplicates resolved as the CPU does (row-major order): see
    "float max/min in row-major order" in kernels/scatter.cu.  Scratch: 3 words per
    output element."""
    import cupy
    from fastops._gpu._compile import kernel, launch
    n, count = out.size, upd.size
    best = cupy.empty(n, dtype=np.uint64)
    first = cupy.empty(n, dtype=np.int64)
    last = cupy.empty(n, dtype=np.int64)
    red = np.int32(reduction)
    flat = out.reshape(-1)
    launch(kernel("scatter", "minmax_init", **d), n, (flat, np.int64(n), red, best, first, last))
    launch(kernel("scatter", "minmax_best", **d), count,
           (targets, upd, np.int64(count), red, best))
    launch(kernel("scatter", "minmax_pos", **d), count,
           (targets, upd, np.int64(count), red, best, first, last))
    launch(kernel("scatter", "minmax_finish", **d), n,
           (flat, np.int64(n), upd, red, best, first, last))


def _ordered_reduce(out, upd, targets, reduction, d):
    """Float add/mul applied in row-major order per target (the CPU's order of roundings):
    a stable sort of the update positions by target, then one thread per target run.
    Costs a sort of the updates where atomics cost none; it makes float add/mul with
    duplicates deterministic and bit-identical to the CPU.  max/min have a closed form
    without the sort (_ordered_minmax)."""
    import cupy
    from fastops._gpu._compile import kernel, launch
    if reduction >= 3:
        return _ordered_minmax(out, upd, targets, reduction, d)
    order = cupy.argsort(targets)          # stable: row-major within a target
    launch(kernel("scatter", "segmented_apply", **d), upd.size,
           (out.reshape(-1), upd, order, targets[order], np.int64(upd.size),
            np.int32(reduction)))


def _is_float_reduction(dtype, reduction):
    """Float reductions run in row-major order (deterministic, CPU bits); integer add and
    mul wrap, which atomics compute exactly in any order, and integer max/min ties are
    the same bits; "none" with duplicates may take any of them (API.md)."""
    return np.dtype(dtype).kind == "f" and reduction >= 1


def scatter_elements(data, out, idx, upd, O, m, In, outer_off, inner_off, s_outer, s_inner,
                     s_axis, n_axis, reduction):
    import cupy
    from fastops._gpu._compile import kernel, launch
    d = _defines(out.dtype.name)
    sfx = _suffix(idx)
    count = idx.size
    bad = _bad_slot()
    launch(kernel("scatter", "check_elements" + sfx, **d), count,
           (idx, np.int64(count), np.int64(n_axis), bad))
    first = _first_bad(bad)
    if first >= 0:
        return first
    if data is not None:
        out[...] = data
    layout = (np.int64(m), np.int64(In), _ptr(outer_off), _ptr(inner_off), np.int64(s_outer),
              np.int64(s_inner), np.int64(s_axis), np.int64(n_axis))
    if _is_float_reduction(out.dtype, reduction):
        targets = cupy.empty(count, dtype=np.int64)
        launch(kernel("scatter", "elements_targets" + sfx, **d), count,
               (idx, np.int64(count)) + layout + (targets,))
        _ordered_reduce(out, upd, targets, reduction, d)
        return -1
    launch(kernel("scatter", "scatter_elements" + sfx, **d), count,
           (out, idx, upd, np.int64(count)) + layout + (np.int32(reduction),))
    return -1


def gather_elements(data, idx, O, m, In, outer_off, inner_off, s_outer, s_inner, s_axis,
                    n_axis, out):
    from fastops._gpu._compile import kernel, launch
    d = _defines(out.dtype.name)
    bad = _bad_slot()
    launch(kernel("scatter", "gather_elements" + _suffix(idx), **d), idx.size,
           (data if data is not None else np.uint64(0), idx, np.int64(idx.size), np.int64(m),
            np.int64(In), _ptr(outer_off), _ptr(inner_off), np.int64(s_outer),
            np.int64(s_inner), np.int64(s_axis), np.int64(n_axis), out, bad))
    return _first_bad(bad)


def _nd_rows(idx, N, k, dims, defines):
    import cupy
    from fastops._gpu._compile import kernel, launch
    rows = cupy.empty(max(N, 1), dtype=np.int64)
    bad = _bad_slot()
    launch(kernel("scatter", "nd_rows" + _suffix(idx), **defines), N,
           (idx, np.int64(N), np.int32(k), dims if k else np.uint64(0), rows, bad))
    return rows, _first_bad(bad)


def scatter_nd(data, out, idx, N, k, dims, upd, S, reduction):
    from fastops._gpu._compile import kernel, launch
    d = _defines(out.dtype.name)
    rows, first = _nd_rows(idx, N, k, dims, d)
    if first >= 0:
        return first
    if data is not None:
        out[...] = data.reshape(out.shape)
    if N * S and _is_float_reduction(out.dtype, reduction):
        import cupy
        targets = cupy.empty(N * S, dtype=np.int64)
        launch(kernel("scatter", "nd_targets", **d), N * S,
               (rows, np.int64(N), np.int64(S), targets))
        _ordered_reduce(out, upd, targets, reduction, d)
    elif N * S:
        launch(kernel("scatter", "scatter_nd_apply", **d), N * S,
               (out, upd, rows, np.int64(N), np.int64(S), np.int32(reduction)))
    return -1


def gather_nd(data, idx, N, k, dims, per_batch, batch_rows, S, out):
    from fastops._gpu._compile import kernel, launch
    d = _defines(out.dtype.name)
    rows, first = _nd_rows(idx, N, k, dims, d)
    if first >= 0:
        return first
    if N * S:
        launch(kernel("scatter", "gather_nd_apply", **d), N * S,
               (data, rows, np.int64(N), np.int64(per_batch), np.int64(batch_rows),
                np.int64(S), out))
    return -1
