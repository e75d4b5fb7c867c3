"""The real GPU launchers (fastops/_gpu/*.py) and the real CUDA sources, run on the CPU.

tests/cuda_emu compiles kernels/*.cu with g++ against a CUDA shim (one fiber per CUDA
thread, real __syncthreads barriers, atomics) and stands in for CuPy with host arrays.  Each test calls the public function with emulated-CuPy arrays and compares with
the CPU backend under the rules of the real GPU tests: integer outputs and (for the
kernels that promise it) float outputs bit-identical.  Sizes are small: every block is
256 emulated threads.  The fake cupy lives in sys.modules only while this module runs.
"""
import numpy as np
import pytest

import fastops
from tests import cuda_emu
from tests.cuda_emu import host, same
from tests.test_nms import clustered
from tests.test_roi_align import _mmcv_rois, _rng
from tests.test_selection import ALL_REAL, sample

pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")


cp = cuda_emu.cupy_fixture()


# ------------------------------------------------------------------ selection
def _same_topk(cp, x, k, axis=-1, largest=True, sorted_=True):
    """GPU topk of x equals the CPU's: indices, then values, bit for bit."""
    want = fastops.topk(x, k, axis, largest, sorted_)
    got = host(fastops.topk(cp.asarray(x), k, axis, largest, sorted_))
    same(got[1], want[1])
    same(got[0], want[0])


@pytest.mark.parametrize("dtype", ALL_REAL)
def test_topk(cp, dtype):
    rng = np.random.default_rng(5)
    x = sample((3, 300), dtype, rng=rng, ties=True, specials=dtype.startswith("float"))
    for k in (1, 7, 300):
        for largest in (True, False):
            _same_topk(cp, x, k, largest=largest)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_topk_narrow_integer_keys(cp, dtype):
    """8- and 16-bit integers select on their own bits (one or two radix passes): the
    extremes, -1/0 and ties, both directions, against the CPU."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(31)
    x = rng.integers(info.min, info.max, (4, 257), endpoint=True).astype(dtype)
    x[:, :6] = [info.min, info.max, 0, info.min, info.max, 1]
    if info.min < 0:
        x[:, 6:10] = -1
    for k in (1, 3, 8, 257):
        for largest in (True, False):
            _same_topk(cp, x, k, largest=largest)


def test_topk_few_long_rows_split(cp, monkeypatch):
    """Few long rows are split into chunks, k per chunk, then k of the winners
    (fastops/_gpu/selection.py): forced with small thresholds, against the CPU, with
    ties across chunk borders, NaN, a shorter last chunk, inner axes and strided views."""
    from fastops._gpu import selection as gsel
    monkeypatch.setattr(gsel, "_SPLIT_BLOCKS", 64)
    monkeypatch.setattr(gsel, "_SPLIT_MIN_LEN", 16)
    rng = np.random.default_rng(16)
    x = sample((3, 1001), "float32", rng=rng, ties=True, specials=True)
    x3 = sample((2, 403, 3), "int16", rng=rng, ties=True)
    for view, axis, ks in ((x, 1, (5, 100)), (x[:, ::-2], 1, (24,)),
                           (x3, 1, (5,)), (x3.transpose(0, 2, 1), 2, (1, 24))):
        for k in ks:
            for largest in (True, False):
                for sorted_ in (True, False):
                    _same_topk(cp, view, k, axis, largest, sorted_)


def _launched(monkeypatch, family):
    """Record the names of the kernels of ``family`` fetched for launches."""
    import fastops._gpu._compile as comp
    names, real = [], comp.kernel

    def kernel(fam, name, **defines):
        if fam == family:
            names.append(name)
        return real(fam, name, **defines)
    monkeypatch.setattr(comp, "kernel", kernel)
    return names


@pytest.mark.parametrize("dtype", ["float32", "int8", "int64"])
def test_topk_short_rows_one_warp_each(cp, dtype, monkeypatch):
    """Rows of at most 256 with k <= 32 take topk_warp (a warp per row, shuffles): row
    lengths around the 32-lane grid, k up to 32, ties, NaN and type extremes, both
    directions, sorted (rank order) and unsorted (ascending index, as the CPU), 11 rows
    (a partial block of 8), an inner axis and a reversed view, against the CPU."""
    names = _launched(monkeypatch, "selection")
    rng = np.random.default_rng(41)
    for n in (1, 31, 33, 64, 256):
        x = sample((11, n), dtype, rng=rng, ties=True, specials=dtype.startswith("float"))
        for k in sorted({1, min(5, n), min(32, n)}):
            for largest in (True, False):
                for sorted_ in (True, False):
                    _same_topk(cp, x, k, 1, largest, sorted_)
    x3 = sample((3, 40, 5), dtype, rng=rng, ties=True)
    for view, axis in ((x3, 1), (x3[:, ::-1], 1), (x3, 2)):
        want = fastops.topk(view, 4, axis, False, False)
        same(host(fastops.topk(cp.asarray(view), 4, axis, False, False))[1], want[1])
    assert "topk_warp" in names and "topk_rows" not in names
    names.clear()
    x = sample((3, 257), dtype, rng=rng, ties=True)         # one past the warp's rows
    same(host(fastops.topk(cp.asarray(x), 3))[1], fastops.topk(x, 3)[1])
    x = sample((3, 100), dtype, rng=rng, ties=True)         # k past one winner a lane
    same(host(fastops.topk(cp.asarray(x), 33))[1], fastops.topk(x, 33)[1])
    assert names.count("topk_rows") == 2 and "topk_warp" not in names


@pytest.mark.parametrize("dtype", ["float32", "int16", "float64", "uint64"])
def test_topk_winners_in_global_memory_sorted_by_a_device_sort(cp, dtype, monkeypatch):
    """Past _SMEM_MAX_P the winners stay in global scratch and a device sort orders
    them (32-bit keys: one packed sort; 64-bit: two stable sorts): forced small, with
    ties, NaN, both directions, an inner axis and the shared-memory path beside, against
    the CPU."""
    from fastops._gpu import selection as gsel
    rng = np.random.default_rng(43)
    x = sample((5, 300), dtype, rng=rng, ties=True, specials=dtype.startswith("float"))
    x3 = sample((2, 300, 3), dtype, rng=rng, ties=True)
    cases = [(x, 1, k) for k in (40, 299)] + [(x3, 1, 40)]
    for limit in (4, 2048):
        monkeypatch.setattr(gsel, "_SMEM_MAX_P", limit)
        for view, axis, k in cases:
            for largest in (True, False):
                for sorted_ in (True, False):
                    _same_topk(cp, view, k, axis, largest, sorted_)


@pytest.mark.parametrize("dtype", ["float32", "uint16"])
def test_cum_few_long_rows_split(cp, dtype, monkeypatch):
    """Few long rows, and few long columns, are scanned in chunks from carries (summaries,
    their scan, then each chunk from its carry: fastops/_gpu/selection.py), forced with
    small thresholds: the CPU's bits, with ties and NaN across chunk borders, a shorter
    last chunk, values at the type's extremes (the first chunk's carry) and strided
    views."""
    from fastops._gpu import selection as gsel
    monkeypatch.setattr(gsel, "_SPLIT_BLOCKS", 64)
    monkeypatch.setattr(gsel, "_CUM_SPLIT_MIN_LEN", 16)
    monkeypatch.setattr(gsel, "_COL_SPLIT_THREADS", 64)
    monkeypatch.setattr(gsel, "_COL_SPLIT_MIN_LEN", 16)
    monkeypatch.setattr(gsel, "_COL_SPLIT_MIN_N", 16)
    rng = np.random.default_rng(17)
    x = sample((3, 1001), dtype, rng=rng, ties=True, specials=dtype == "float32")
    lo = np.iinfo(dtype).min if dtype != "float32" else -np.inf
    hi = np.iinfo(dtype).max if dtype != "float32" else np.inf
    x[0, :30] = hi                              # the first chunk's carry values themselves
    x[1, :40] = lo
    x[2] = np.arange(1001) % 7
    x3 = np.ascontiguousarray(x[:2, :999].reshape(2, 333, 3))
    for fn in ("cummax", "cummin"):            # rows, then columns (inner > 1)
        for view, axis in ((x, 1), (x[:, ::-2], 1), (x.T, 0), (x3[:, ::-3], 1)):
            got = host(getattr(fastops, fn)(cp.asarray(view), axis))
            want = getattr(fastops, fn)(view, axis)
            same(got[1], want[1])
            same(got[0], want[0])


def test_topk_unsorted_axes_noncontiguous(cp):
    rng = np.random.default_rng(6)
    x = sample((1, 700), "float32", rng=rng, ties=True, specials=True)
    for k in (600, 1):          # P = 1024: bitonic pairs > threads per block
        same(host(fastops.topk(cp.asarray(x), k, largest=False))[1],
             fastops.topk(x, k, largest=False)[1])
    for k in (5, 260):          # k > 256: several slots per thread in the ordered pass
        v, i = host(fastops.topk(cp.asarray(x), k, sorted=False))
        wv, wi = fastops.topk(x, k)
        o, wo = np.argsort(i, 1), np.argsort(wi, 1)
        same(np.take_along_axis(i, o, 1), np.take_along_axis(wi, wo, 1))
        same(np.take_along_axis(v, o, 1), np.take_along_axis(wv, wo, 1))
    base = cp.asarray(sample((5, 6, 4), "float64", rng=rng, ties=True))
    hb = base.get()
    for view, hview in ((base, hb), (base[::2, ::-3], hb[::2, ::-3]),
                        (base.transpose(2, 0, 1), hb.transpose(2, 0, 1))):
        for axis in (0, 1, 2):
            for largest in (axis != 1, axis != 2):
                got = host(fastops.topk(view, 2, axis, largest))
                want = fastops.topk(hview, 2, axis, largest)
                same(got[1], want[1])
                same(got[0], want[0])


@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax_cummin(cp, fn):
    rng = np.random.default_rng(7)
    for dtype in ALL_REAL:
        x = sample((3, 5, 9), dtype, rng=rng, ties=True, specials=dtype.startswith("float"))
        for axis in (0, 1, 2):
            got = host(getattr(fastops, fn)(cp.asarray(x), axis))
            want = getattr(fastops, fn)(x, axis)
            same(got[1], want[1])
            same(got[0], want[0])
    one = sample((4, 1, 3), "int16", rng=rng)                 # n = 1
    same(host(getattr(fastops, fn)(cp.asarray(one), 1))[1], getattr(fastops, fn)(one, 1)[1])
    long_rows = sample((3, 700), "float32", rng=rng, ties=True, specials=True)  # 3 tiles
    got = host(getattr(fastops, fn)(cp.asarray(long_rows), 1))
    want = getattr(fastops, fn)(long_rows, 1)
    same(got[1], want[1])
    same(got[0], want[0])
    x = sample((40, 30), "float32", rng=rng, ties=True, specials=True)
    got = host(getattr(fastops, fn)(cp.asarray(x)[::-2, 1::2], 0))
    want = getattr(fastops, fn)(x[::-2, 1::2], 0)
    same(got[1], want[1])
    same(got[0], want[0])


@pytest.mark.parametrize("shape", [(4, 23, 1), (3, 19, 6), (2, 600, 1)])
def test_cumext_carry_and_last_kernels(cp, shape):
    """The chunked scans behind fastops.dask.cummax on the GPU kernels (cumext_from with a
    carry and an offset, cumext_last) equal the CPU kernels bit for bit, on every split:
    rows (inner == 1, the block scan; 600 = three tiles) and columns (inner > 1), NaN,
    signed-zero and tied carries, strided views."""
    from fastops._cpu import selection as kc
    from fastops._gpu import selection as kg
    from tests.test_selection import _hostile_3d
    rng = np.random.default_rng(5)
    outer, n, inner = shape
    for dtype in ("int16", "uint64", "float32", "float64"):
        x = _hostile_3d(dtype, outer, n, inner, rng)
        bits = f"u{x.itemsize}"         # signed zeros and NaN payloads compared too
        for is_max in (True, False):
            wv, wi = fastops.cummax(x, 1) if is_max else fastops.cummin(x, 1)
            for p in sorted({1, n // 2, n - 1}):
                part = x[:, p:, :]
                carries = [(np.ascontiguousarray(wv[:, p - 1, :]),
                            np.ascontiguousarray(wi[:, p - 1, :])),
                           (np.empty((0, 0), x.dtype), np.empty((0, 0), np.int64))]
                for cv, ci in carries:
                    v, i = np.empty(part.shape, x.dtype), np.empty(part.shape, np.int64)
                    kc.cumext_from(part, is_max, cv, ci, p, v, i, 1)
                    gv = cp.empty(part.shape, x.dtype)
                    gi = cp.empty(part.shape, np.int64)
                    kg.cumext_from(cp.asarray(part), is_max, cp.asarray(cv), cp.asarray(ci),
                                   p, gv, gi)
                    same(host(gi), i)
                    same(host(gv).view(bits), v.view(bits))
                lv, li = np.empty((outer, inner), x.dtype), np.empty((outer, inner), np.int64)
                kc.cumext_last(part, is_max, p, lv, li, 1)
                glv, gli = cp.empty((outer, inner), x.dtype), cp.empty((outer, inner), np.int64)
                kg.cumext_last(cp.asarray(x)[:, p:, :], is_max, p, glv, gli)   # a view
                same(host(gli), li)
                same(host(glv).view(bits), lv.view(bits))
    x = cp.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="cumext_from: the carry"):
        kg.cumext_from(x, True, cp.zeros((2, 3), np.float32), cp.zeros((2, 3), np.int64), 0,
                       cp.empty((2, 3, 4), np.float32), cp.empty((2, 3, 4), np.int64))
    with pytest.raises(ValueError, match="cumext_last: the outputs"):
        kg.cumext_last(x, True, 0, cp.empty((2, 3), np.float32), cp.empty((2, 4), np.int64))


@pytest.mark.parametrize("dtype", ALL_REAL + ["bool", "complex64"])
def test_nonzero(cp, dtype):
    rng = np.random.default_rng(8)
    shape = (5, 17, 97)                  # 8245 words: three tiles of 256 x 16
    if dtype == "bool":
        x = rng.random(shape) < 0.3
    elif dtype == "complex64":
        x = (rng.integers(0, 2, shape) + 1j * rng.integers(0, 2, shape)).astype(dtype)
    else:
        x = sample(shape, dtype, rng=rng, ties=True, specials=dtype.startswith("float"))
        if dtype.startswith("float"):
            x.reshape(-1)[::7] = -0.0
    same(host(fastops.nonzero(cp.asarray(x))), fastops.nonzero(x))
    same(host(fastops.nonzero(cp.asarray(x)[:, ::-3, 2:])), fastops.nonzero(x[:, ::-3, 2:]))


def test_nonzero_edges(cp):
    same(host(fastops.nonzero(cp.zeros((4, 4), np.float32))), np.zeros((2, 0), np.int64))
    same(host(fastops.nonzero(cp.asarray(np.float32(3)))), np.zeros((1, 1), np.int64))
    x = np.zeros(4096 * 2 + 1, np.int8)
    x[[0, 4095, 4096, 8191, 8192]] = 1  # tile boundaries
    same(host(fastops.nonzero(cp.asarray(x))), fastops.nonzero(x))


def test_nonzero_wide_loads_and_carried_coordinates(cp):
    """1-byte words at every alignment (8-byte loads where a thread's run is whole and
    aligned, single loads elsewhere) and shapes whose coordinates carry across several
    axes within one thread's 16 words (last axes of 1 and 3)."""
    rng = np.random.default_rng(21)
    flat = rng.random(4096 + 37) < 0.35
    g = cp.asarray(flat)
    for off in range(9):                      # views starting at every byte offset
        same(host(fastops.nonzero(g[off:])), fastops.nonzero(flat[off:]))
        u8 = flat[off:].view(np.uint8) * np.uint8(3)
        same(host(fastops.nonzero(cp.asarray(u8))), fastops.nonzero(u8))
    for shape in [(7, 5, 3), (40, 1), (3, 2, 1, 3, 1), (1, 4099), (4099, 1)]:
        x = rng.random(shape) < 0.5
        same(host(fastops.nonzero(cp.asarray(x))), fastops.nonzero(x))
        same(host(fastops.nonzero(cp.asarray(x.astype(np.float32)))), fastops.nonzero(x))
    ones = np.ones((3, 5, 7, 11), bool)            # every word: each carry taken
    same(host(fastops.nonzero(cp.asarray(ones))), fastops.nonzero(ones))


# ------------------------------------------------------------------ NMS
def _nms_inputs(seed, n, dtype=np.float32):
    rng = np.random.default_rng(seed)
    b = np.stack([clustered(rng, n)[0][:, [1, 0, 3, 2]] for _ in range(2)]).astype(dtype)
    s = (np.round(rng.uniform(0, 1, (2, 3, n)) * 20) / 20).astype(dtype)
    s[0, 0, 5] = np.nan
    return rng, b, s


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_non_max_suppression(cp, dtype):
    rng, b, s = _nms_inputs(9, 150, dtype)     # 150 boxes: 3 mask words per row
    for args in [(None, 0.5, None), (30, 0.3, 0.2), (5, 0.6, None, 0, 1, True),
                 (None, 0.0, None), (2, 1.0, 0.5, 0, 0, True), (0, 0.5)]:
        want = fastops.non_max_suppression(b, s, *args)
        got = host(fastops.non_max_suppression(cp.asarray(b), cp.asarray(s), *args))
        same(got, want)
    c = b.copy()                               # center_point_box=1
    c[..., 2:] = np.abs(c[..., 2:] - c[..., :2])
    want = fastops.non_max_suppression(c, s, 10, 0.4, None, 1)
    same(host(fastops.non_max_suppression(cp.asarray(c), cp.asarray(s), 10, 0.4, None, 1)),
         want)


def test_nms_and_batched_nms(cp):
    rng, b, s = _nms_inputs(10, 200)
    boxes, scores = b[0][:, [1, 0, 3, 2]], s[0, 1]
    for kw in ({}, {"max_num": 7}, {"score_threshold": 0.4}, {"offset": 1}):
        same(host(fastops.nms(cp.asarray(boxes), cp.asarray(scores), 0.5, **kw)),
             fastops.nms(boxes, scores, 0.5, **kw))
    for idxs in (rng.integers(0, 6, 200), np.zeros(200, np.int64),
                 rng.integers(-3, 3, 200).astype(np.int32)):
        sc = scores.copy()
        sc[[3, 50]] = np.nan
        same(host(fastops.batched_nms(cp.asarray(boxes), cp.asarray(sc), cp.asarray(idxs), .5)),
             fastops.batched_nms(boxes, sc, idxs, .5))


def test_nms_order_packed_keys(cp):
    """_order's packed radix sort (32-bit keys under their row number) equals a stable
    per-row argsort: ties in position order, the never-kept ~0 keys last."""
    from fastops._gpu.nms import _order
    rng = np.random.default_rng(15)
    for P, N in ((1, 9), (3, 70), (7, 1)):
        keys = rng.integers(0, 6, (P, N)).astype(np.uint32)
        keys[rng.random((P, N)) < 0.2] = np.uint32(0xFFFFFFFF)
        same(host(_order(cp.asarray(keys))), np.argsort(keys, axis=1, kind="stable"))
        wide = keys.astype(np.uint64) << np.uint64(20)          # the 64-bit path
        same(host(_order(cp.asarray(wide))), np.argsort(wide, axis=1, kind="stable"))


def test_nms_sizes_around_mask_words(cp):
    rng = np.random.default_rng(14)
    for n in (1, 2, 63, 64, 65, 129):
        boxes, scores = clustered(rng, n)
        for thr in (0.3, 0.7):
            same(host(fastops.nms(cp.asarray(boxes), cp.asarray(scores), thr)),
                 fastops.nms(boxes, scores, thr))


def test_nms_many_problems_in_groups(cp, monkeypatch):
    """A small mask budget forces several launch groups (p0 > 0) and global `removed`."""
    import fastops._gpu.nms as gnms
    monkeypatch.setattr(gnms, "_MASK_BUDGET", 200 * 4 * 8 * 2)   # two problems per group
    monkeypatch.setattr(gnms, "_SHARED_MAX", 8)                   # removed words in global
    rng, b, s = _nms_inputs(11, 200)
    for args in [(None, 0.5, None), (4, 0.3, 0.1, 0, 0, True)]:
        same(host(fastops.non_max_suppression(cp.asarray(b), cp.asarray(s), *args)),
             fastops.non_max_suppression(b, s, *args))


def _mask_launches(monkeypatch):
    """Record the grid of every nms_mask launch (its tile count)."""
    import fastops._gpu._compile as comp
    grids, real = [], comp.kernel

    def kernel(family, name, **defines):
        fn = real(family, name, **defines)
        if name != "nms_mask":
            return fn

        def launch(grid, block, args, **kw):
            grids.append(grid[0])
            return fn(grid, block, args, **kw)
        return launch
    monkeypatch.setattr(comp, "kernel", kernel)
    return grids


def test_batched_nms_one_problem_per_class(cp, monkeypatch):
    """Each class is its own problem, its mask sized by its non-NaN boxes: classes of 0
    (all NaN), 1, 64, 65 and 130 boxes, ids negative and unsorted, in one launch group,
    in one group per class (tiny budget, removed words in global memory), against the
    CPU; and the mask tiles launched are sum(ceil(n_c / 64)^2), not ceil(N / 64)^2."""
    import fastops._gpu.nms as gnms
    rng = np.random.default_rng(21)
    sizes = {-5: 3, 7: 1, 2: 64, -1: 65, 40: 130}
    idxs = np.concatenate([np.full(n, c) for c, n in sizes.items()] + [np.full(4, 9)])
    perm = rng.permutation(idxs.size)
    idxs = idxs[perm]
    boxes = clustered(rng, idxs.size)[0]
    scores = (np.round(rng.uniform(0, 1, idxs.size) * 10) / 10).astype(np.float32)
    scores[idxs == -5] = np.nan                    # a class with no candidate
    scores[np.flatnonzero(idxs == 40)[:7]] = np.nan
    want = fastops.batched_nms(boxes, scores, idxs, 0.4)
    grids = _mask_launches(monkeypatch)
    same(host(fastops.batched_nms(cp.asarray(boxes), cp.asarray(scores), cp.asarray(idxs),
                                  0.4)), want)
    n = np.array([np.count_nonzero((idxs == c) & ~np.isnan(scores)) for c in np.unique(idxs)])
    assert sum(grids) == int((((n + 63) // 64) ** 2).sum())
    assert sum(grids) < ((idxs.size + 63) // 64) ** 2
    monkeypatch.setattr(gnms, "_MASK_BUDGET", 8)
    monkeypatch.setattr(gnms, "_SHARED_MAX", 8)
    grids.clear()
    same(host(fastops.batched_nms(cp.asarray(boxes), cp.asarray(scores), cp.asarray(idxs),
                                  0.4)), want)
    assert len(grids) == np.count_nonzero(n)     # one launch per class with candidates


def test_nms_masks_sized_by_candidates(cp, monkeypatch):
    """A score threshold leaves few candidates: the masks cover them only (pad=True keeps
    N-sized masks and no host sync), problems with none in the middle of a group, equal
    to the CPU either way."""
    rng, b, s = _nms_inputs(16, 300)
    s[0, 1] = 0.0                                  # (batch 0, class 1): no candidate
    grids = _mask_launches(monkeypatch)
    for args in [(None, 0.5, 0.85), (3, 0.5, 0.85, 0, 0, True), (None, 0.5, 2.0)]:
        grids.clear()
        got = host(fastops.non_max_suppression(cp.asarray(b), cp.asarray(s), *args))
        same(got, fastops.non_max_suppression(b, s, *args))
        thr = args[2]
        n = np.count_nonzero(s > thr, axis=2).reshape(-1)
        rows = np.full_like(n, 300) if len(args) > 5 else n
        assert sum(grids) == int((((rows + 63) // 64) ** 2).sum())


# ------------------------------------------------------------------ RoIAlign
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_roi_align_bitwise(cp, dtype):
    rng = _rng(12)
    x = rng.standard_normal((2, 3, 20, 24)).astype(dtype)
    rois = _mmcv_rois(rng, 2, 12, 80, 96, scale=0.25, dtype=dtype)
    for mode in ("avg", "max", "onnx_max"):
        for aligned in (True, False):
            for sr in (0, 2):
                args = ((3, 5), 0.25, sr, mode, aligned)
                same(host(fastops.roi_align(cp.asarray(x), cp.asarray(rois), *args)),
                     fastops.roi_align(x, rois, *args))
    xs = x.transpose(0, 1, 3, 2)                    # strided input
    same(host(fastops.roi_align(cp.asarray(x).transpose(0, 1, 3, 2), cp.asarray(rois), 2, 0.25)),
         fastops.roi_align(xs, rois, 2, 0.25))


def test_roi_align_tiny_maps(cp):
    rng = _rng(15)
    for shape in ((1, 2, 1, 5), (2, 1, 4, 1), (1, 1, 1, 1)):
        x = rng.standard_normal(shape).astype(np.float32)
        rois = _mmcv_rois(rng, shape[0], 6, shape[2], shape[3], dtype=np.float32)
        for mode, aligned in (("avg", True), ("max", False), ("onnx_max", False)):
            same(host(fastops.roi_align(cp.asarray(x), cp.asarray(rois), (2, 3), 1.0, 0, mode,
                                        aligned)),
                 fastops.roi_align(x, rois, (2, 3), 1.0, 0, mode, aligned))


# ------------------------------------------------------------------ scatter / gather
from tests.test_scatter import DTYPES as SCATTER_DTYPES, _rand  # noqa: E402


def _scatter_same(got, want, dtype, reduction):
    """Every reduction equals the CPU bit for bit: float add/mul/max/min apply duplicates
    in row-major order on the GPU too (integer ones are order-free)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    assert got.view(u).tolist() == want.view(u).tolist(), (dtype, reduction)


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_gather(cp, dtype):
    rng = np.random.default_rng(13)
    data = _rand(rng, (6, 40), dtype)
    dup = rng.integers(-6, 6, (9, 40))                       # many duplicates
    perm = np.argsort(rng.random((6, 40)), axis=0)[:4] - 3   # unique per column
    for reduction in ("none", "add", "mul", "max", "min"):
        idx = perm if reduction == "none" else dup
        upd = _rand(rng, idx.shape, dtype)
        for it in (np.int32, np.int64):
            want = fastops.scatter_elements(data, idx.astype(it), upd, 0, reduction)
            got = host(fastops.scatter_elements(cp.asarray(data), cp.asarray(idx.astype(it)),
                                                cp.asarray(upd), 0, reduction))
            _scatter_same(got, want, dtype, reduction)
        nd = (perm[:, :1] if reduction == "none" else dup[:, :1])[:, :, None]
        upd = _rand(rng, nd.shape[:2] + (40,), dtype)
        want = fastops.scatter_nd(data, nd, upd, reduction)
        got = host(fastops.scatter_nd(cp.asarray(data), cp.asarray(nd), cp.asarray(upd),
                                      reduction))
        _scatter_same(got, want, dtype, reduction)
    for it in (np.int16, np.int32, np.int64):
        g = rng.integers(-6, 6, (8, 40)).astype(it)
        same(host(fastops.gather_elements(cp.asarray(data), cp.asarray(g), 0)),
             fastops.gather_elements(data, g, 0))
        same(host(fastops.gather_elements(cp.asarray(data)[:, ::-3], cp.asarray(g)[:3, :5], 1)),
             fastops.gather_elements(data[:, ::-3], g[:3, :5], 1))
    g2 = np.stack([rng.integers(-6, 6, (5, 3)), rng.integers(-40, 40, (5, 3))], -1)
    same(host(fastops.gather_nd(cp.asarray(data), cp.asarray(g2))), fastops.gather_nd(data, g2))
    same(host(fastops.gather_nd(cp.asarray(data), cp.asarray(g2[..., :1]))),
         fastops.gather_nd(data, g2[..., :1]))


def test_scatter_semantics(cp):
    data = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
    idx = np.array([0, 1, 2, 2, 3])
    upd = np.array([np.nan, 5.0, np.nan, 1.0, -1.0], np.float32)
    for red in ("max", "min"):
        same(host(fastops.scatter_elements(cp.asarray(data), cp.asarray(idx), cp.asarray(upd),
                                           reduction=red)),
             fastops.scatter_elements(data, idx, upd, reduction=red))
    i8 = np.array([120, -128, 100], np.int8)
    for red in ("add", "mul"):
        same(host(fastops.scatter_elements(cp.asarray(i8), cp.asarray([0, 0, 1, 2, 2]),
                                           cp.asarray(np.array([5, 10, -1, 3, 3], np.int8)),
                                           reduction=red)),
             fastops.scatter_elements(i8, np.array([0, 0, 1, 2, 2]),
                                      np.array([5, 10, -1, 3, 3], np.int8), reduction=red))
    d = cp.asarray(np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError, match=r"indices\[2\] = 6"):
        fastops.scatter_elements(d, cp.asarray([1, 2, 6, 7]), cp.ones(4, dtype=np.float32))
    with pytest.raises(IndexError, match=r"indices\[1, 0\] = -7"):
        fastops.scatter_nd(d, cp.asarray([[0], [-7]]), cp.ones(2, dtype=np.float32), "add")
    with pytest.raises(IndexError, match=r"indices\[3\] = 100"):
        fastops.gather_elements(d, cp.asarray(np.array([0, 1, 2, 100], np.int32)))
    same(d.get(), np.arange(6, dtype=np.float32))


def test_scatter_max_min_ties_and_nan_payloads_bitwise(cp):
    """Duplicate +0.0/-0.0 ties and NaN payloads resolve in row-major order on the GPU as
    on the CPU (np.maximum.at / np.minimum.at), bit for bit: arrival order of atomics
    must not show."""
    rng = np.random.default_rng(21)
    for dtype, u, payloads in ((np.float16, np.uint16, [0x7E00, 0x7E01, 0xFE02]),
                               (np.float32, np.uint32, [0x7FC00000, 0x7FC00001, 0xFFC00002]),
                               (np.float64, np.uint64, [0x7FF8000000000000,
                                                        0x7FF8000000000001,
                                                        0xFFF8000000000002])):
        vals = np.array([0.0, -0.0, 1.0, -1.0], dtype)
        nans = np.array(payloads, u).view(dtype)
        for trial in range(6):
            data = rng.choice(np.concatenate([vals, nans[:1]]), 8).astype(dtype)
            idx = rng.integers(0, 8, 48)
            pool = np.concatenate([vals, nans]) if trial % 2 else vals
            upd = rng.choice(pool, 48).astype(dtype)
            for red in ("max", "min"):
                want = fastops.scatter_elements(data, idx, upd, reduction=red)
                got = host(fastops.scatter_elements(cp.asarray(data), cp.asarray(idx),
                                                    cp.asarray(upd), reduction=red))
                assert got.view(u).tolist() == want.view(u).tolist(), (dtype, red, trial)
                want = fastops.scatter_nd(data, idx[:, None], upd, reduction=red)
                got = host(fastops.scatter_nd(cp.asarray(data), cp.asarray(idx[:, None]),
                                              cp.asarray(upd), reduction=red))
                assert got.view(u).tolist() == want.view(u).tolist(), (dtype, red, trial)


def test_roi_align_rois_far_outside_or_huge(cp):
    """Only samples inside the map are visited (bisection per bin): same bits as the CPU
    for RoIs far outside, far larger than, and partly over the map."""
    rng = _rng(16)
    x = rng.standard_normal((1, 2, 9, 11)).astype(np.float32)
    rois = np.array([[0, 3e4, 3e4, 6e4, 6e4], [0, -1e6, -1e6, 1e6, 1e6],
                     [0, -5e5, 2, 5e5, 9], [0, -3, -2, 4, 5], [0, 8, 7, -30, -40]], np.float32)
    for mode in ("avg", "max", "onnx_max"):
        for sr in (0, 3):
            for aligned in (True, False):
                args = ((3, 2), 0.5, sr, mode, aligned)
                got = host(fastops.roi_align(cp.asarray(x), cp.asarray(rois), *args))
                want = fastops.roi_align(x, rois, *args)
                assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


# ------------------------------------------------------------------ harness self-checks
def test_harness_rejects_bad_launches(cp):
    from fastops._gpu._compile import kernel
    fn = kernel("selection", "cumext", **{"T": "float", "KEY": "u32", "KEY_BITS": 32,
                                          "KIND": 2})
    x = cp.zeros((1, 4, 1), np.float32)
    v = cp.empty((1, 4, 1), np.float32)
    i = cp.empty((1, 4, 1), np.int64)
    no_carry = [v, i, np.int32(0), np.int64(0), np.int32(0)]
    good = [x, np.int64(1), np.int64(4), np.int64(1), np.int64(4), np.int64(1), np.int64(1),
            np.int64(1), np.int64(4), np.int64(4), np.int32(1)] + no_carry + [v, i]
    fn((1,), (32,), tuple(good))
    assert i.get().ravel().tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="argument 10"):         # int64 for an int
        fn((1,), (32,), tuple(good[:10] + [np.int64(1)] + good[11:]))
    with pytest.raises(TypeError, match="pointer to i8"):       # int32 array for i64*
        fn((1,), (32,), tuple(good[:-1] + [cp.empty((1, 4, 1), np.int32)]))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        fn((1,), (32,), tuple([np.zeros((1, 4, 1), np.float32)] + good[1:]))
    with pytest.raises(TypeError, match="arguments"):
        fn((1,), (32,), tuple(good[:-1]))
    with pytest.raises(cuda_emu.fake_cupy.EmuLaunchError, match="block"):
        fn((1,), (2048,), tuple(good))
    bad = [x, np.int64(1), np.int64(5), np.int64(1), np.int64(4), np.int64(1), np.int64(1),
           np.int64(1), np.int64(5), np.int64(5),
           np.int32(1)] + no_carry + [v, i]                      # n=5 writes one past the end
    with pytest.raises(cuda_emu.fake_cupy.EmuLaunchError, match="out-of-bounds"):
        fn((1,), (32,), tuple(bad))


def test_harness_detects_divergent_syncthreads(cp):
    code = r'''
extern "C" __global__ void k(int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x;
  if (threadIdx.x < 32) { __syncthreads(); } else { __syncthreads(); }
  out[threadIdx.x] = s[63 - threadIdx.x];
}'''
    fn = cp.RawModule(code=code).get_function("k")
    out = cp.zeros(64, np.int32)
    with pytest.raises(cuda_emu.fake_cupy.EmuLaunchError, match="divergent"):
        fn((1,), (64,), (out,))


def test_harness_shows_a_missing_barrier_and_a_deadlock(cp):
    """The block's fibers run in thread order and in reverse on alternate rounds: a read
    of another thread's shared write with no __syncthreads between them sees the
    undefined (0xA5) shared memory in one direction or the other; threads of one warp
    split between a shuffle and __syncthreads can never proceed (a launch error, where a
    GPU would hang)."""
    code = r'''
extern "C" __global__ void racy(int* out, int n) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x;
  if (n > 0) __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
extern "C" __global__ void stuck(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  else __syncthreads();
  out[threadIdx.x] = v;
}'''
    mod = cp.RawModule(code=code)
    out = cp.zeros(64, np.int32)
    mod.get_function("racy")((1,), (64,), (out, np.int32(1)))
    assert out.get().tolist() == list(range(63, -1, -1))
    mod.get_function("racy")((1,), (64,), (out, np.int32(0)))
    assert out.get().tolist() != list(range(63, -1, -1))
    with pytest.raises(cuda_emu.fake_cupy.EmuLaunchError, match="deadlock"):
        mod.get_function("stuck")((1,), (32,), (out,))



# ------------------------------------------------------------------ instance_norm
def test_instance_norm(cp):
    rng = np.random.default_rng(22)
    for dtype in (np.float16, np.float32, np.float64):
        for shape, offset in (((2, 3, 5, 7), 0.0), ((1, 2, 600), 1e4), ((3, 1, 1), 2.0)):
            x = (offset + rng.standard_normal(shape)).astype(dtype)
            s = rng.uniform(0.5, 2, shape[1]).astype(dtype)
            b = rng.standard_normal(shape[1]).astype(dtype)
            want = fastops.instance_norm(x, s, b)
            got = host(fastops.instance_norm(cp.asarray(x), cp.asarray(s), cp.asarray(b)))
            assert got.dtype == want.dtype and got.shape == want.shape
            tol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-13}[dtype]
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=0, atol=tol * max(1, float(np.abs(want).max())))
    xs = cp.asarray(rng.standard_normal((2, 4, 6, 5)).astype(np.float32))
    view = xs[:, ::-2]                      # strided channels
    np.testing.assert_allclose(host(fastops.instance_norm(view, cp.ones(2, dtype=np.float32),
                                                          cp.zeros(2, dtype=np.float32))),
                               fastops.instance_norm(view.get(), np.ones(2, np.float32),
                                                     np.zeros(2, np.float32)), atol=1e-6)


def test_kernels_are_compiled_without_flush_to_zero(cp, tmp_path, monkeypatch):
    """fastops compiles with NVRTC itself (CuPy's RawModule appends -ftz=true): every
    compile asked for -ftz=false and never for -ftz=true.  An empty image cache and a
    cleared module memo force a compile whatever ran before."""
    import importlib
    compile_mod = importlib.import_module("fastops._gpu._compile")   # (under the fake)
    monkeypatch.setenv("FASTOPS_KERNEL_CACHE", str(tmp_path))
    compile_mod._module.cache_clear()
    del cp.cuda.nvrtc.compiled_options[:]
    fastops.topk(cp.asarray(np.array([0.0, 1e-45], np.float32)), 1)
    seen = cp.cuda.nvrtc.compiled_options
    assert seen and all("-ftz=false" in o and "-ftz=true" not in o for o in seen)
    assert all(any(a.startswith("--gpu-architecture=") for a in o) for o in seen)


def test_topk_and_cummax_on_denormals_match_the_cpu(cp):
    x = np.array([[0, 1, 2, 0x80000001, 1, 0]], np.uint32).view(np.float32)  # denormals
    for largest in (True, False):
        same(host(fastops.topk(cp.asarray(x), 3, largest=largest))[1],
             fastops.topk(x, 3, largest=largest)[1])
    for fn in (fastops.cummax, fastops.cummin):
        got, want = host(fn(cp.asarray(x), 1)), fn(x, 1)
        same(got[1], want[1])
        assert got[0].view(np.uint32).tolist() == want[0].view(np.uint32).tolist()


def test_validation_survives_cupys_flush_to_zero(cp):
    """The fake flushes float32 denormals in CuPy's own ops as CuPy's -ftz=true kernels do
    (fake_cupy._ftz): validation that used them took a 1e-45 batch index for image 0 (on
    an H200 too).  Every backend refuses it."""
    x = np.ones((2, 1, 4, 4), np.float32)
    for b in (1e-45, -1e-45):
        rois = np.array([[0, 0, 0, 2, 2], [b, 0, 0, 2, 2]], np.float32)
        for xp_x, xp_rois in ((x, rois), (cp.asarray(x), cp.asarray(rois))):
            with pytest.raises(ValueError, match="is not an integral batch index"):
                fastops.roi_align(xp_x, xp_rois, 2)


def test_calls_run_on_the_device_of_their_arguments(cp):
    """Arrays on GPU 1 while GPU 0 is current: every kernel launches on GPU 1 (the fake
    refuses a launch with arrays of another device) and outputs live there; arguments on
    two GPUs raise TypeError naming both."""
    rng = np.random.default_rng(23)
    x = rng.standard_normal((4, 50)).astype(np.float32)
    boxes, scores = clustered(rng, 30)
    rois = np.array([[0, 1, 0, 20, 3], [0, 5, 1, 40, 2]], np.float32)
    with cp.cuda.Device(1):
        gx, gb, gs, gr = (cp.asarray(a) for a in (x, boxes, scores, rois))
        gi = cp.asarray(rng.integers(0, 4, (3, 50)))
        ones, zeros = cp.ones(4, dtype=np.float32), cp.zeros(4, dtype=np.float32)
        positive = gx > 0
    assert cp.cuda.Device().id == 0
    results = [fastops.topk(gx, 3), fastops.cummax(gx, 1), fastops.nonzero(positive),
               fastops.scatter_elements(gx, gi, gx[:3], 0, "max"),
               fastops.gather_elements(gx, gi, 0), fastops.nms(gb, gs, 0.5),
               fastops.instance_norm(gx[None], ones, zeros),
               fastops.roi_align(gx.reshape(1, 1, 4, 50), gr, 2)]
    for r in results:
        for a in (r if isinstance(r, tuple) else (r,)):
            assert a.device.id == 1
    same(host(results[0])[1], fastops.topk(x, 3)[1])
    same(host(results[5]), fastops.nms(boxes, scores, 0.5))
    with pytest.raises(TypeError, match="scatter_elements: argument 'indices' is on GPU 0 "
                                        "but 'data' is on GPU 1"):
        fastops.scatter_elements(gx, cp.asarray(np.zeros((1, 50), np.int64)), gx[:1])
