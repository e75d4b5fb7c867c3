"""topk, cummax, cummin, nonzero against references the kernels did not produce."""
import numpy as np
import pytest

import fastops
from tests.conftest import peer, to_numpy
from tests.onnx_cases import case_names, load_case, run_reference
from tests.reference import selection as ref

ALL_REAL = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
            "float16", "float32", "float64"]
RNG = np.random.default_rng(1234)


def sample(shape, dtype, rng=RNG, ties=False, specials=False):
    """Random values of ``dtype``; ``ties`` draws from few values, ``specials`` adds NaN/inf."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.integers(-3, 4, shape).astype(dt) if ties else rng.standard_normal(shape).astype(dt)
        if specials and x.size:
            flat = x.reshape(-1)
            pick = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
            flat[pick] = rng.choice([np.nan, np.inf, -np.inf, -0.0], size=pick.size)
        return x
    info = np.iinfo(dt)
    if ties:
        return rng.integers(max(info.min, -2), min(info.max, 3), shape, endpoint=True).astype(dt)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dt)


def check_topk(x, k, axis=-1, largest=True, sorted=True, xp=np, ranked=None):
    """fastops.topk against the reference; `ranked`: the reference's topk of every value
    of x (k = n, axis -1) to slice instead of ranking x again."""
    v, i = to_numpy(fastops.topk(xp.asarray(x) if xp is not np else x, k, axis, largest, sorted))
    rv, ri = ref.topk(x, k, axis, largest) if ranked is None else (r[..., :k] for r in ranked)
    if not sorted:   # same set; compare after ordering by index
        order = np.argsort(i, axis=axis, kind="stable")
        v, i = np.take_along_axis(v, order, axis), np.take_along_axis(i, order, axis)
        order = np.argsort(ri, axis=axis, kind="stable")
        rv, ri = np.take_along_axis(rv, order, axis), np.take_along_axis(ri, order, axis)
    assert v.dtype == x.dtype and i.dtype == np.int64
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(v, rv)


# ------------------------------------------------------------------------ topk
@pytest.mark.parametrize("dtype", ALL_REAL)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_every_dtype(xp, dtype, largest):
    x = sample((6, 300), dtype)
    for k in (0, 1, 5, 40, 299, 300):   # k=1 scan, heap, partition, k = n
        check_topk(x, k, -1, largest, xp=xp)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32"])
def test_topk_short_rows_every_k(xp, dtype):
    """Many short rows (per-anchor class scores), every small k across the heap /
    partition switch, random, tied, NaN-laden, ascending and descending rows, contiguous
    and strided."""
    x = np.concatenate([sample((40, 80), dtype), sample((40, 80), dtype, ties=True),
                        sample((40, 80), dtype, ties=True, specials=True),
                        np.sort(sample((4, 80), dtype), axis=1),
                        np.sort(sample((4, 80), dtype), axis=1)[:, ::-1]])
    for k in range(1, 19):      # k=1's reduction, the insertion list (<= 16), partition
        for largest in (True, False):
            check_topk(x, k, -1, largest, xp=xp)
            check_topk(x[:, ::-2], k, -1, largest, xp=xp)
            check_topk(x[:, :k + 1], k, -1, largest, sorted=False, xp=xp)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "uint32", "int32",
                                   "float16", "float32", "int64", "float64"])
def test_topk_rows_up_to_33_every_k(dtype):
    """Rows of up to 32 values of 4 bytes or fewer rank every value at once (selection.hpp
    select_by_rank): every row length around the rank vectors (4, 8 or 16 lanes by the
    build) and the 32 limit, every k, both orders, sorted and in index order, with ties,
    NaN, infinities and -0.0; a strided row."""
    rng = np.random.default_rng(33)
    for m in range(1, 34):
        x = np.concatenate([sample((30, m), dtype, rng), sample((30, m), dtype, rng, ties=True),
                            sample((30, m), dtype, rng, ties=True, specials=True)])
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)     # the reference's Python sort, once
            for k in range(0, m + 1):
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)
        check_topk(x[:, ::-1], m // 2, -1, True)    # a strided row ranks as well


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32", "int32", "float32", "int64",
                                   "uint64", "float64"])
def test_topk_rows_up_to_256_large_k(dtype):
    """Rows of 33-257 values with k > 16 rank every value at once where that pays
    (selection.hpp select_by_rank: 4-byte keys, or 8-byte keys in the x86-64-v3 and v4
    builds): row lengths around the rank vectors (2 to 16 lanes by the build and the key)
    and the limits, k around 16, 32 and up to the whole row, both orders, sorted and in
    index order; random, tied, all-equal rows and ones with NaN, infinities and -0.0,
    the best values in the last, partly padded vector, strided rows."""
    rng = np.random.default_rng(256)
    for m in (33, 47, 48, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256, 257):
        rows = [sample((10, m), dtype, rng), sample((10, m), dtype, rng, ties=True),
                sample((10, m), dtype, rng, ties=True, specials=True),
                np.zeros((1, m), dtype), np.sort(sample((1, m), dtype, rng), axis=1)]
        tail = sample((2, m), dtype, rng, ties=True)
        tail[:, -(m % 16 or 16):] = tail.max() if dtype != "float32" else 1e30
        x = np.concatenate(rows + [tail])
        ks = sorted({k for k in (17, 18, 31, 32, 33, 40, m // 2, m - 1, m) if 17 <= k <= m})
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in ks:
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)
            check_topk(x[:, ::-1], ks[0], -1, largest)


@pytest.mark.parametrize("dtype", ["int32", "float32", "int64", "uint64", "float64"])
def test_topk_sorted_winners(dtype):
    """The partition's k winners sorted (selection.hpp sort_index_ordered): by their
    ranks up to kRankSortMax = 128 (ranked types), past it by (rank key, position)
    sorts, 8-byte types by 64-bit rank keys in the partition too; k around 128 and the
    radix sort's 192, rows long enough for the partition (no whole-row ranks), random,
    tied and NaN / inf / -0.0 rows, both orders, against the reference."""
    rng = np.random.default_rng(128)
    for m, ks in ((600, (17, 64, 127, 128, 129)), (2000, (128, 191, 192, 300))):
        x = np.concatenate([sample((4, m), dtype, rng), sample((4, m), dtype, rng, ties=True),
                            sample((4, m), dtype, rng, ties=True, specials=True)])
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in ks:
                check_topk(x, k, -1, largest, ranked=ranked)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32", "int64", "float64"])
def test_topk_partition_select(dtype):
    """The partition's k-th best key (selection.hpp kth_smallest_key: quickselect on a
    branch-free three-way partition, median-of-three pivots, the last 16 keys by their
    ranks, std::nth_element past 64 rounds): rows ordered to split the pivots badly
    (sorted, reversed, organ pipe, sawtooth, the first pivot's keys the smallest), few distinct
    values, all equal, with k on either side of the last 16 keys and at the row's ends,
    rows too short for the sample (every value a candidate) and long enough for it, both
    orders, against the reference."""
    rng = np.random.default_rng(16)
    for m in (200, 333, 1500):
        base = np.arange(m)
        pivots = [m // 4, m // 2, m - 1 - m // 4]   # the first pivot's keys the smallest
        low = np.empty(m, np.int64)
        low[pivots] = (0, 1, 2)
        low[np.isin(base, pivots, invert=True)] = 3 + rng.permutation(m - 3)
        orders = [base, base[::-1], np.minimum(base, m - 1 - base), base % 17, low,
                  base // 7, np.zeros(m, np.int64), rng.permutation(m)]
        x = np.stack([(o % 200 if dtype == "uint8" else o).astype(dtype) for o in orders])
        x = np.concatenate([x, sample((4, m), dtype, rng, ties=True)])
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in sorted({2, 15, 16, 17, 33, m // 3, m // 2, m - 17, m - 1, m}):
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)


@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32"])
def test_topk_short_rows_lane_minima(dtype):
    """Contiguous rows of 4..128 values of 4 bytes with k <= 16 (k = 1 from 4, k > 1
    above 32) take the lane-minima threshold and a compress of the candidates
    (selection.hpp select_short): row lengths around the 4-lane vectors and their
    overlapping last one, the 32 of the rank step and the 128 limit; every k; random, tied
    (more than 32 candidates: the general paths take over), all-equal, all-NaN rows,
    the best values in the last, partly padded vector, signed zeros and infinities."""
    rng = np.random.default_rng(8)
    for m in (4, 5, 6, 7, 8, 9, 15, 17, 31, 33, 34, 35, 40, 63, 65, 80, 91, 127, 128, 129):
        rows = [sample((20, m), dtype, rng), sample((20, m), dtype, rng, ties=True),
                sample((20, m), dtype, rng, ties=True, specials=True),
                np.zeros((1, m), dtype), np.sort(sample((2, m), dtype, rng), axis=1)]
        if np.dtype(dtype).kind == "f":
            rows.append(np.full((1, m), np.nan, dtype))
            rows.append(np.where(np.arange(m) % 2, -0.0, 0.0).astype(dtype)[None])
        x = np.concatenate(rows)
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in range(1, min(m, 17) + 1):
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)
        v, _ = fastops.topk(x, 1)     # the value's own bits (the -0.0 of the zeros row)
        np.testing.assert_array_equal(v.view(f"u{x.itemsize}"),
                                      ref.topk(x, 1, -1, True)[0].view(f"u{x.itemsize}"))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_topk_mid_rows_group_threshold(dtype):
    """float32 rows of 2G to 16384 values with k <= G / 2 (classifier logits: 1000
    classes, top-5 to top-64) gather the values that reach the k-th best of G = 32, 64
    or 128 group extremes (selection.hpp group_candidates): row lengths around each G's
    limits and its blocks, every k around the limits of each G, both orders, sorted and
    in index order; random, tied (many candidates), all-equal, NaN-laden rows (the heap
    path; one NaN alone anywhere), signed zeros, ascending and descending rows, the best
    values in the row's tail past its last whole block of each G, NaN first (the heap's
    threshold a NaN); float16 through its float32 copy."""
    rng = np.random.default_rng(77)
    for m in (63, 64, 65, 100, 127, 128, 129, 200, 255, 256, 257, 287, 1000, 1001, 4111,
              16384, 16385):
        rows = [sample((6, m), dtype, rng), sample((3, m), dtype, rng, ties=True),
                sample((3, m), dtype, rng, ties=True, specials=True),
                np.zeros((1, m), dtype), np.where(np.arange(m) % 3, -0.0, 0.0).astype(dtype)[None],
                np.sort(sample((1, m), dtype, rng), axis=1),
                np.sort(sample((1, m), dtype, rng), axis=1)[:, ::-1]]
        for g in (32, 64, 128):
            tail = sample((2, m), dtype, rng)
            tail[:, -(m % g or g):] += 100           # the best in the partial last block
            tail[1] *= -1                            # and the worst, for smallest
            rows.append(tail)
        nan_first = sample((1, m), dtype, rng)
        nan_first[:, :70] = np.nan                   # the heap starts from k NaNs
        lone_nan = sample((4, m), dtype, rng)        # one NaN, in any lane of any block
        for r, at in enumerate((m - 1, m // 2 + 33, max(m // 128 * 128 - 1, 0), m * 3 // 4 + 99)):
            lone_nan[r, at % m] = np.nan
        x = np.ascontiguousarray(np.concatenate(rows + [nan_first, lone_nan]))
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in (k for k in (1, 2, 3, 5, 10, 16, 17, 24, 32, 33, 48, 64, 65) if k <= m):
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "uint32", "int32",
                                   "uint64", "int64"])
def test_topk_integer_heap_rows(dtype):
    """Integer rows of the heap path (k * 24 <= m) skip the values below a floor: the
    k-th best of 64 group extremes of the row's first 64 KiB (selection.hpp row_floor),
    and visit a block's values by the bits of one vector compare.  Rows longer than the
    floor's span with the best values after it, the type's extremes (no floor where the
    k-th extreme is the worst value), few distinct values (ties: lower index first),
    sorted rows both ways, k around the 64 groups, both orders, sorted and unsorted."""
    rng = np.random.default_rng(21)
    info = np.iinfo(dtype)
    for m in (1000, 1601, 70001):
        late = sample((2, m), dtype, rng)
        late[:, :m * 9 // 10] = info.min + 1          # the best only past the floor's span
        late[1, :m * 9 // 10] = info.max - 1          # (for smallest, row 1)
        rows = [sample((3, m), dtype, rng), sample((3, m), dtype, rng, ties=True), late,
                np.full((1, m), info.min, dtype), np.full((1, m), info.max, dtype),
                np.where(np.arange(m) % 5, info.min, info.max).astype(dtype)[None],
                np.sort(sample((1, m), dtype, rng), axis=1),
                np.sort(sample((1, m), dtype, rng), axis=1)[:, ::-1]]
        x = np.ascontiguousarray(np.concatenate(rows))
        for largest in (True, False):
            ranked = ref.topk(x, m, -1, largest)
            for k in (k for k in (2, 10, 33, 63, 64, 65) if k * 24 <= m):
                check_topk(x, k, -1, largest, ranked=ranked)
                check_topk(x, k, -1, largest, sorted=False, ranked=ranked)


@pytest.mark.parametrize("dtype", ALL_REAL)
def test_topk_long_rows_partition(xp, dtype):
    """Rows >= 256 with k past the heap's range: the partition over the candidates of a
    strided sample's threshold (and its fallback to every value when the sample lies:
    the sampled positions hold the row's largest values), the candidates' ranks (4-byte
    types, up to 512 candidates that pay) or the packed-key sort of the winners; ties,
    NaN, +-inf and signed zeros, sorted and unsorted."""
    rng = np.random.default_rng(3)
    for m, ks in ((3000, (60, 300, 1500)), (300, (65, 100, 149)), (511, (65, 200))):
        x = np.concatenate([sample((2, m), dtype, rng), sample((2, m), dtype, rng, ties=True),
                            sample((2, m), dtype, rng, ties=True, specials=True)])
        liar = sample((2, m), dtype, rng, ties=True)
        n_sample = max(64, m // 32)
        liar[:, np.arange(n_sample) * m // n_sample] = np.iinfo(liar.dtype).max \
            if liar.dtype.kind in "iu" else 1e4
        liar[1] = liar[0][::-1]
        x = np.concatenate([x, liar])
        for k in ks:
            for largest in (True, False):
                check_topk(x, k, -1, largest, xp=xp)
                check_topk(x, k, -1, largest, sorted=False, xp=xp)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float16", "float64"])
def test_topk_k1_every_row_length(xp, dtype):
    """k=1 on contiguous rows (a vectorized reduction to the best value, then its first
    position) for every length around the reduction's lane count, with NaN, +-inf and
    signed zeros anywhere: the first best wins, a NaN is best for largest, worst for
    smallest."""
    for n in range(1, 42):
        x = np.concatenate([sample((30, n), dtype, ties=True, specials=True),
                            sample((30, n), dtype)])
        if x.dtype.kind == "f":
            x[0] = np.nan
            x[1, n // 2:] = np.nan
            x[2] = -0.0
            x[2, n // 3] = 0.0
        for largest in (True, False):
            check_topk(x, 1, -1, largest, xp=xp)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_nan_inf_ties(xp, dtype, largest):
    x = sample((5, 200), dtype, ties=True, specials=True)
    x[0] = np.nan                              # an all-NaN row
    x[1, ::3] = np.inf
    for k in (1, 3, 17, 150, 200):
        check_topk(x, k, 1, largest, xp=xp)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32"])
def test_topk_ties_lower_index_first(xp, dtype):
    x = sample((4, 500), dtype, ties=True)
    for k in (2, 10, 250):
        check_topk(x, k, -1, True, xp=xp)
        check_topk(x, k, -1, False, xp=xp)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_topk_axes(xp, axis):
    x = sample((7, 9, 11), "float32", ties=True)
    check_topk(x, 4, axis, xp=xp)


def test_topk_unsorted_same_set(xp):
    x = sample((3, 1000), "float32", ties=True, specials=True)
    for k in (1, 7, 100, 600):
        check_topk(x, k, -1, True, sorted=False, xp=xp)
        check_topk(x, k, -1, False, sorted=False, xp=xp)


def test_topk_noncontiguous(xp):
    base = sample((40, 60), "float64", ties=True)
    for x in (base[::2, 5:], base.T, base[::-1, ::-3], np.asfortranarray(base)):
        check_topk(x, 6, -1, xp=xp)
        check_topk(x, 3, 0, False, xp=xp)


@pytest.mark.parametrize("k", [1, 50, 30_000])
def test_topk_single_long_row_split_across_threads(threads, k):
    # one row of 300k: the row is split into per-thread chunks and the winners merged
    x = sample((1, 300_000), "float32", ties=True, specials=True)
    expect = ref.topk(x, k, 1, True)
    for n in (1, 2):
        with threads(n):
            v, i = fastops.topk(x, k)
            np.testing.assert_array_equal(i, expect[1])
            np.testing.assert_array_equal(v, expect[0])


def test_topk_threads_bit_identical(threads):
    x = sample((64, 5000), "float32", ties=True, specials=True)
    with threads(1):
        one = [fastops.topk(x, k) for k in (1, 10, 2000)]
    with threads(2):
        two = [fastops.topk(x, k) for k in (1, 10, 2000)]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_topk_empty(xp):
    v, i = fastops.topk(xp.zeros((0, 5), np.float32), 3)
    assert v.shape == (0, 3) and i.shape == (0, 3) and i.dtype == np.int64
    v, i = fastops.topk(xp.zeros((4, 0), np.int16), 0)
    assert v.shape == (4, 0) and v.dtype == np.int16
    v, i = fastops.topk(xp.ones((4, 6), np.int16), 0, axis=1)
    assert v.shape == (4, 0)


def test_topk_k_as_array_and_input_untouched():
    x = sample((3, 50), "float32")
    before = x.copy()
    v, _ = fastops.topk(x, np.array([4], dtype=np.int64))
    assert v.shape == (3, 4)
    np.testing.assert_array_equal(x, before)


def test_topk_seed_example():
    # ../shared/seeds/000: TopK example, axis=1, k=3
    X = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], dtype=np.float32)
    v, i = fastops.topk(X, np.array([3], dtype=np.int64), axis=1)
    np.testing.assert_array_equal(v, [[3., 2., 1.], [7., 6., 5.], [11., 10., 9.]])
    np.testing.assert_array_equal(i, [[3, 2, 1], [3, 2, 1], [3, 2, 1]])


@pytest.mark.parametrize("name", case_names("test_top_k"))
def test_topk_onnx_node_data(xp, name):
    _, attrs, (x, k), (values, indices) = load_case(name)
    v, i = to_numpy(fastops.topk(xp.asarray(x), k, axis=attrs.get("axis", -1),
                                 largest=attrs.get("largest", 1), sorted=attrs.get("sorted", 1)))
    np.testing.assert_array_equal(v, values)
    np.testing.assert_array_equal(i, indices)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_topk_matches_onnx_reference(dtype):
    x = sample((5, 6, 33), dtype, ties=True)
    for axis, k, largest in ((2, 7, 1), (1, 2, 0), (0, 5, 1)):
        rv, ri = run_reference("TopK", [x, np.array([k], np.int64)],
                               {"axis": axis, "largest": largest}, opset=11, n_outputs=2)
        v, i = fastops.topk(x, k, axis, bool(largest))
        np.testing.assert_array_equal(v, rv)
        np.testing.assert_array_equal(i, ri)


def test_topk_matches_torch_nan_rule():
    torch = peer("torch")
    x = sample((8, 100), "float32", specials=True)
    for largest in (True, False):
        tv, ti = torch.topk(torch.from_numpy(x), 9, dim=1, largest=largest)
        v, i = fastops.topk(x, 9, 1, largest)
        np.testing.assert_array_equal(v, tv.numpy())   # NaN positions and values agree


@pytest.mark.parametrize("bad, exc, match", [
    (dict(k=6), ValueError, r"k=6 is larger than x.shape\[1\]=5"),
    (dict(k=-1), ValueError, "k=-1 must be non-negative"),
    (dict(k=2.0), TypeError, "k must be an integer"),
    (dict(k=np.array([1, 2])), TypeError, "1-element integer array"),
    (dict(k=2, axis=2), ValueError, "axis=2 is out of range"),
    (dict(k=2, axis=1.5), TypeError, "axis must be an integer"),
    (dict(k=2, largest="yes"), TypeError, "largest must be a bool"),
])
def test_topk_bad_input(bad, exc, match):
    with pytest.raises(exc, match=match):
        fastops.topk(np.zeros((3, 5), np.float32), **bad)


def test_topk_bad_dtype_and_rank():
    with pytest.raises(TypeError, match="topk: x has dtype bool"):
        fastops.topk(np.zeros(5, bool), 1)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        fastops.topk(np.float32(3), 1)
    with pytest.raises(TypeError, match="x has dtype complex128"):
        fastops.topk(np.zeros(3, complex), 1)


# --------------------------------------------------------------- cummax/cummin
@pytest.mark.parametrize("dtype", ALL_REAL)
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cum_every_dtype(xp, dtype, fn):
    x = sample((5, 7, 40), dtype, ties=True, specials=np.dtype(dtype).kind == "f")
    for axis in (0, 1, 2, -1):
        v, i = to_numpy(getattr(fastops, fn)(xp.asarray(x), axis))
        rv, ri = ref.cumext(x, axis, fn == "cummax")
        assert v.dtype == x.dtype and i.dtype == np.int64
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_array_equal(v, rv)


@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cum_matches_torch(fn):
    torch = peer("torch")
    for dtype in ("float32", "float64", "int32", "uint8", "int64"):
        x = sample((6, 300), dtype, ties=True, specials=dtype.startswith("float"))
        for axis in (0, 1):
            tv, ti = getattr(torch, fn)(torch.from_numpy(x), dim=axis)
            v, i = getattr(fastops, fn)(x, axis)
            np.testing.assert_array_equal(i, ti.numpy())
            np.testing.assert_array_equal(v, tv.numpy())


def test_cum_noncontiguous_and_empty(xp):
    base = sample((30, 50), "float32", ties=True, specials=True)
    for x in (base[::2, 3:], base.T, base[::-1, ::-2]):
        for axis in (0, 1):
            v, i = to_numpy(fastops.cummin(xp.asarray(x), axis))
            rv, ri = ref.cumext(x, axis, False)
            np.testing.assert_array_equal(i, ri)
            np.testing.assert_array_equal(v, rv)
    v, i = fastops.cummax(xp.zeros((0, 4), np.float32), 1)
    assert v.shape == (0, 4) and i.shape == (0, 4)
    v, i = fastops.cummax(xp.zeros((3, 0), np.int8), 1)
    assert v.shape == (3, 0) and v.dtype == np.int8


def test_cum_threads_bit_identical(threads):
    x = sample((300, 700), "float32", ties=True, specials=True)
    res = {}
    for n in (1, 2):
        with threads(n):
            res[n] = [fastops.cummax(x, a) for a in (0, 1)] + [fastops.cummin(x, a) for a in (0, 1)]
    for a, b in zip(res[1], res[2]):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_cum_column_blocks(threads, dtype):
    """The column scan's split (selection.hpp cumext_scan): one contiguous range of the
    outer * inner columns per thread, cut at slice ends and every kCumColumns (8192)
    columns.  Ranges that start and end inside a slice, and slices wider than a block."""
    for shape, axis in (((3, 5, 20000), 1), ((3, 40, 700), 1), ((9, 16411), 0),
                        ((7, 3, 33), 1)):
        x = sample(shape, dtype, ties=True, specials=dtype == "float32")
        for fn, is_max in (("cummax", True), ("cummin", False)):
            rv, ri = ref.cumext(x, axis, is_max)
            for n in (1, 2):
                with threads(n):
                    v, i = getattr(fastops, fn)(x, axis)
                np.testing.assert_array_equal(i, ri)
                np.testing.assert_array_equal(v, rv)


def test_cum_bad_input():
    with pytest.raises(ValueError, match="cummax: axis=2 is out of range"):
        fastops.cummax(np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="cummin: x must have at least 1 dimension"):
        fastops.cummin(np.float32(1), 0)
    with pytest.raises(TypeError, match="cummax: x has dtype bool"):
        fastops.cummax(np.zeros(3, bool), 0)


# ------------------------------------------------------------------- nonzero
@pytest.mark.parametrize("dtype", ALL_REAL + ["bool", "complex64"])
def test_nonzero_every_dtype(xp, dtype):
    rng = np.random.default_rng(7)
    if dtype == "bool":
        x = rng.random((13, 17, 5)) < 0.3
    elif dtype == "complex64":
        x = (rng.integers(0, 2, (13, 17)) + 1j * rng.integers(0, 2, (13, 17))).astype(dtype)
    else:
        x = sample((13, 17, 5), dtype, ties=True, specials=dtype.startswith("float"))
        if dtype.startswith("float"):
            x.reshape(-1)[::7] = -0.0            # negative zero is zero
    got = to_numpy(fastops.nonzero(xp.asarray(x)))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, ref.nonzero(x))
    np.testing.assert_array_equal(got, np.array(np.nonzero(x)))


def test_nonzero_shapes(xp):
    assert to_numpy(fastops.nonzero(xp.asarray(np.float32(3)))).tolist() == [[0]]
    assert to_numpy(fastops.nonzero(xp.asarray(np.float32(0)))).shape == (1, 0)
    assert to_numpy(fastops.nonzero(xp.zeros((3, 0, 2)))).shape == (3, 0)
    assert to_numpy(fastops.nonzero(xp.zeros((4, 4)))).shape == (2, 0)
    x = sample((5, 6, 7, 2, 3), "int8", ties=True)
    np.testing.assert_array_equal(to_numpy(fastops.nonzero(xp.asarray(x))), np.array(np.nonzero(x)))


def test_nonzero_noncontiguous_large_and_threads(threads):
    rng = np.random.default_rng(3)
    base = (rng.random((700, 900)) < 0.1) * rng.standard_normal((700, 900))
    for x in (base[::-2, 1::3], base.T):
        np.testing.assert_array_equal(fastops.nonzero(x), np.array(np.nonzero(x)))
    with threads(1):
        one = fastops.nonzero(base)
    with threads(2):
        two = fastops.nonzero(base)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, np.array(np.nonzero(base)))
    flat = base.reshape(-1)   # one long row: chunks split inside the row
    np.testing.assert_array_equal(fastops.nonzero(flat), np.array(np.nonzero(flat)))


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64"])
@pytest.mark.parametrize("density", [0.001, 0.02, 0.1, 0.5, 0.98, 1.0])
def test_nonzero_wide_rows(threads, dtype, density):
    """Rows of 64+ elements take the fill's in-row runs (groups of 8 set bits written
    without a test per bit, junk past the word's last bit overwritten by the next word,
    while a word of 64 set bits stays inside the chunk's output range); words that
    straddle rows, the words near a chunk's end and the tail go bit by bit.  1-D to 4-D,
    rows that are and are not a multiple of 64, 1-3 threads, against np.nonzero."""
    rng = np.random.default_rng(int(density * 1000))
    for shape in ((37, 1000), (3, 5, 333), (2, 64), (1, 70001), (70, 128), (2, 3, 4, 192),
                  (9000,)):
        x = (rng.random(shape) < density).astype(dtype)
        if dtype.startswith("float"):
            x *= rng.standard_normal(shape).astype(dtype)
        want = np.array(np.nonzero(x))
        for n in (1, 2, 3):   # 4, 8 and 12 chunks: ends fall in different words
            with threads(n):
                np.testing.assert_array_equal(fastops.nonzero(x), want)


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64"])
def test_nonzero_8_byte_words_by_halves(threads, dtype):
    """8-byte words are tested as two 32-bit halves (SSE2 has no 64-bit compare): a word
    with only its high or only its low half set is nonzero, a float's sign bit alone is
    zero.  Every lane of the 64-word mask, a partial last word, one and two threads."""
    bits = np.zeros(64 * 40 + 37, np.uint64)
    rng = np.random.default_rng(11)
    for value in (1, 1 << 31, 1 << 32, 1 << 63, (1 << 63) | 1, (1 << 64) - 1):
        bits[rng.integers(0, bits.size, 300)] = value
    x = bits.view(dtype).reshape(1, -1)
    want = np.array(np.nonzero(x))
    assert dtype != "float64" or np.count_nonzero(bits == 1 << 63) > 0   # -0.0 present
    for n in (1, 2):
        with threads(n):
            np.testing.assert_array_equal(fastops.nonzero(x), want)
            np.testing.assert_array_equal(fastops.nonzero(x[:, :200]), want[:, want[1] < 200])


def test_nonzero_onnx_node_data(xp):
    _, _, (x,), (y,) = load_case("test_nonzero_example")
    np.testing.assert_array_equal(to_numpy(fastops.nonzero(xp.asarray(x))), y)


def test_nonzero_matches_onnx_reference():
    x = sample((4, 9, 6), "float32", ties=True)
    (y,) = run_reference("NonZero", [x], {}, opset=13)
    np.testing.assert_array_equal(fastops.nonzero(x), y)


def test_nonzero_bad_dtype():
    with pytest.raises(TypeError, match="nonzero: x has dtype <U1"):
        fastops.nonzero(np.array(["a", "b"]))


# -------------------------------------------------------------- GPU == CPU
@pytest.mark.gpu
def test_gpu_equals_cpu_exactly(xp):
    if xp is np:
        pytest.skip("GPU comparison")
    for dtype in ALL_REAL:
        x = sample((33, 1500), dtype, ties=True, specials=dtype.startswith("float"))
        for k in (1, 8, 700):
            for largest in (True, False):
                c = fastops.topk(x, k, largest=largest)
                g = to_numpy(fastops.topk(xp.asarray(x), k, largest=largest))
                np.testing.assert_array_equal(c[1], g[1])
        for axis in (0, 1):
            np.testing.assert_array_equal(fastops.cummax(x, axis)[1],
                                          to_numpy(fastops.cummax(xp.asarray(x), axis))[1])
        np.testing.assert_array_equal(fastops.nonzero(x), to_numpy(fastops.nonzero(xp.asarray(x))))


def test_denormals_rank_like_the_cpu(xp):
    """Denormals are ordinary numbers on every backend (the GPU kernels are compiled
    without flush-to-zero): topk picks the largest denormal and cummax ties follow the bits."""
    x = np.array([[0, 1, 2, 0x80000001, 1, 0]], np.uint32).view(np.float32)  # denormals
    v, i = fastops.topk(xp.asarray(x), 1)
    assert to_numpy(i).tolist() == [[2]]
    for largest in (True, False):
        np.testing.assert_array_equal(to_numpy(fastops.topk(xp.asarray(x), 4, largest=largest)[1]),
                                      fastops.topk(x, 4, largest=largest)[1])
    for fn in (fastops.cummax, fastops.cummin):
        got = to_numpy(fn(xp.asarray(x), 1))
        want = fn(x, 1)
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0].view(np.uint32).tolist() == want[0].view(np.uint32).tolist()


def test_unsorted_topk_is_in_index_order(xp):
    """sorted=False: the same set as sorted=True, in ascending index order on every path
    (heap, partition, chunked long rows) and backend: deterministic."""
    rng = np.random.default_rng(31)
    for shape, k in (((4, 1000), 5), ((4, 1000), 300), ((1, 300000), 40), ((2, 50), 50)):
        x = np.round(rng.standard_normal(shape) * 3).astype(np.float32)   # many ties
        v, i = fastops.topk(xp.asarray(x), k, sorted=False)
        v, i = to_numpy(v), to_numpy(i)
        sv, si = fastops.topk(x, k, sorted=True)
        assert (np.diff(i, axis=1) > 0).all()
        np.testing.assert_array_equal(i, np.sort(si, axis=1))
        np.testing.assert_array_equal(v, np.take_along_axis(x, i, 1))


# ------------------------------------- cumext with a carry-in (fastops.dask's chunk scans)
def _same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":     # NaN payloads may differ from the reference's; signs not
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert np.array_equal(np.signbit(a), np.signbit(b))
        assert np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
    else:
        np.testing.assert_array_equal(a, b)


def _hostile_3d(dtype, outer, n, inner, rng):
    """(outer, n, inner) with ties, NaN/inf/-0.0, an all-NaN lane, signed-zero ties."""
    x = sample((outer, n, inner), dtype, rng=rng, ties=True,
               specials=np.dtype(dtype).kind == "f")
    if x.dtype.kind == "f":
        x[0, :, 0] = np.nan                     # an all-NaN lane
        if outer > 1:
            x[1, :, 0] = -0.0                   # zeros of both signs, tied
            x[1, ::3, 0] = 0.0
        if inner > 1:
            x[-1, :, -1] = 0.0
            x[-1, n // 2:, -1] = -0.0           # a +0 carry, then -0 ties
    return x


@pytest.mark.parametrize("dtype", ALL_REAL)
@pytest.mark.parametrize("shape", [(4, 23, 1), (3, 19, 6), (2, 9, 600)])
def test_cumext_carry_and_last_kernels(dtype, shape):
    """The internal kernels behind fastops.dask.cummax: cumext_from (lanes start from a
    carry, global indices written) and cumext_last (read-only, final pair per lane) on
    every split of the axis equal the whole-array reference, bit for bit for any thread
    count; inner == 1 (rows) and inner > 1 (columns side by side, one block and two)."""
    from fastops._cpu import selection as k
    rng = np.random.default_rng(77)
    outer, n, inner = shape
    x = _hostile_3d(dtype, outer, n, inner, rng)
    xc = x.astype(np.float32) if x.dtype == np.float16 else x   # the compute dtype
    cdt = xc.dtype
    splits = sorted({1, 2, n // 2, n - 1}) if shape[2] < 600 else [n // 2]
    for is_max in (True, False):
        rv, ri = ref.cumext(x, 1, is_max)
        rv = rv.astype(cdt)
        whole_v, whole_i = fastops.cummax(xc, 1) if is_max else fastops.cummin(xc, 1)
        for p in splits:
            part = xc[:, p:, :]
            cv = np.ascontiguousarray(whole_v[:, p - 1, :])
            ci = np.ascontiguousarray(whole_i[:, p - 1, :])
            res = {}
            for nt in (1, 2):
                v = np.empty(part.shape, cdt)
                i = np.empty(part.shape, np.int64)
                k.cumext_from(part, is_max, cv, ci, p, v, i, nt)
                lv = np.empty((outer, inner), cdt)
                li = np.empty((outer, inner), np.int64)
                k.cumext_last(part, is_max, p, lv, li, nt)
                res[nt] = (v, i, lv, li)
            for a, b in zip(res[1], res[2]):
                assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
            v, i, lv, li = res[1]
            _same_bits(v, rv[:, p:, :])
            np.testing.assert_array_equal(i, ri[:, p:, :])
            assert np.array_equal(v.view(f"u{v.itemsize}"),
                                  whole_v[:, p:, :].view(f"u{v.itemsize}"))
            # the summary of the part alone: the reference scan of the part, shifted
            sv, si = ref.cumext(x[:, p:, :], 1, is_max)
            _same_bits(lv, sv[:, -1, :].astype(cdt))
            np.testing.assert_array_equal(li, si[:, -1, :] + p)
        # no carry: the scan from the first element, indices shifted by the offset
        v = np.empty(xc.shape, cdt)
        i = np.empty(xc.shape, np.int64)
        k.cumext_from(xc, is_max, np.empty((0, 0), cdt), np.empty((0, 0), np.int64), 1000,
                      v, i, 2)
        _same_bits(v, rv)
        np.testing.assert_array_equal(i, ri + 1000)


def test_cumext_carry_hostile_carries_and_strided_views():
    """Carries that are NaN, signed zeros, or equal to the chunk's values (ties move the
    index into the chunk), on negative-stride and non-contiguous views."""
    from fastops._cpu import selection as k
    base = np.array([[0.0, -0.0, 1.0, np.nan, 1.0, -np.inf],
                     [-0.0, 0.0, 0.0, -1.0, 2.0, 2.0]], np.float64)
    for x in (base, base[:, ::-1], np.asfortranarray(base), base[::-1, ::2]):
        x3 = x[:, :, None]
        outer, n, _ = x3.shape
        for is_max in (True, False):
            for cval in (np.nan, 0.0, -0.0, 1.0, 2.0, -1.0, -np.inf):
                cv = np.full((outer, 1), cval)
                ci = np.full((outer, 1), 7, np.int64)
                v = np.empty(x3.shape)
                i = np.empty(x3.shape, np.int64)
                k.cumext_from(x3, is_max, cv, ci, 8, v, i, 1)
                # reference: the carry as element 7, the chunk as elements 8.. of one row
                full = np.concatenate([np.full((outer, 1), -5.0), cv, x], axis=1)
                full[:, 0] = cval                               # taken or tied, same end
                rv, ri = ref.cumext(full, 1, is_max)
                _same_bits(v[:, :, 0], rv[:, 2:])
                want = np.where(ri[:, 2:] == 0, 7, ri[:, 2:] + 6)  # 0 and 1 hold the carry
                want = np.where(ri[:, 2:] == 1, 7, want)
                np.testing.assert_array_equal(i[:, :, 0], want)
    # inputs are not modified, and wrong shapes are refused before any write
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="cumext_from: the carry"):
        k.cumext_from(x, True, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int64), 0,
                      np.empty((2, 3, 4), np.float32), np.empty((2, 3, 4), np.int64), 1)
    with pytest.raises(ValueError, match="cumext_from: the outputs"):
        k.cumext_from(x, True, np.zeros((2, 4), np.float32), np.zeros((2, 4), np.int64), 0,
                      np.empty((2, 2, 4), np.float32), np.empty((2, 3, 4), np.int64), 1)
    with pytest.raises(ValueError, match="cumext_last: the outputs"):
        k.cumext_last(x, True, 0, np.empty((2, 3), np.float32), np.empty((2, 4), np.int64), 1)


def test_float16_converts_like_numpy_in_every_build(threads):
    """Ops that compute float16 in float32 convert a C-contiguous float16 input on the
    pool's threads (Backend.element_view -> include/half.hpp in the runtime module: F16C
    where the CPU has it, bit by bit otherwise).  Every one of the 65536 bit patterns
    (subnormals, infinities, quiet and signaling NaNs with their payloads) against
    NumPy's astype, both ways, 1-2 threads, and through element_view; then topk and
    cummax on float16 against their float32 results."""
    from fastops import _dispatch
    from fastops._cpu import _runtime
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    want = bits.view(np.float16).astype(np.float32).view(np.uint32)
    for f16c in (False, True):
        for n in (1, 2):
            got = np.empty(bits.size, np.float32)
            _runtime.half_to_float32(bits, got, f16c, n)
            np.testing.assert_array_equal(got.view(np.uint32), want, err_msg=f"{f16c} {n}")
    with pytest.raises(ValueError, match="65536 elements into 65535"):
        _runtime.half_to_float32(bits, np.empty(bits.size - 1, np.float32), True, 1)
    be = _dispatch.Backend("cpu", np, "test")
    with threads(2):
        got = be.element_view(bits.view(np.float16).reshape(4, -1), np.float32)
    assert got.shape == (4, 1 << 14) and got.flags.c_contiguous
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint32), want)
    x = bits.view(np.float16).reshape(256, 256)
    for n in (1, 2):
        with threads(n):
            v, i = fastops.topk(x, 7, 1)
            v32, i32 = fastops.topk(x.astype(np.float32), 7, 1)
            np.testing.assert_array_equal(i, i32)
            np.testing.assert_array_equal(v.view(np.uint16),
                                          np.take_along_axis(x, i, 1).view(np.uint16))
            c, ci = fastops.cummax(x, 0)
            c32, ci32 = fastops.cummax(x.astype(np.float32), 0)
            np.testing.assert_array_equal(ci, ci32)
            np.testing.assert_array_equal(c.view(np.uint16),
                                          np.take_along_axis(x, ci, 0).view(np.uint16))
