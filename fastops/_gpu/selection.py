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


def topk(x, k, largest, sorted, values, indices):
    import cupy
    from fastops._gpu._compile import kernel, elem_strides
    d = _key_defines(x.dtype.name)
    rows = x.shape[0] * x.shape[2]
    P = 1 << max(0, int(k - 1).bit_length())
    key_dtype = np.uint64 if d["KEY"] == "u64" else np.uint32
    skeys = cupy.empty(rows * P, dtype=key_dtype)
    sidx = cupy.empty(rows * P, dtype=np.int64)
    fn = kernel("selection", "topk_rows", **d)
    so, sn, si = elem_strides(x)
    grid = min(rows, 65535)
    fn((grid,), (256,), (x, np.int64(rows), np.int64(x.shape[1]), np.int64(x.shape[2]),
                         np.int64(so), np.int64(sn), np.int64(si), np.int64(k),
                         np.int32(largest), np.int32(sorted), skeys, sidx, np.int64(P),
                         values, indices))


def cumext(x, is_max, values, indices):
    from fastops._gpu._compile import kernel, launch, elem_strides
    so, sn, si = elem_strides(x)
    outer, n, inner = x.shape
    if inner == 1:   # scan along the contiguous axis: a block per row
        fn = kernel("selection", "cumext_rows", **_key_defines(x.dtype.name))
        fn((min(outer, 65535),), (256,), (x, np.int64(outer), np.int64(n), np.int64(so),
                                          np.int64(sn), np.int32(is_max), values, indices))
        return
    fn = kernel("selection", "cumext", **_key_defines(x.dtype.name))
    launch(fn, x.shape[0] * x.shape[2],
           (x, np.int64(x.shape[0]), np.int64(x.shape[1]), np.int64(x.shape[2]), np.int64(so),
            np.int64(sn), np.int64(si), np.int32(is_max), values, indices))


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
