"""Sweep the GPU launchers' size thresholds on a real GPU (run by scripts/gpu_check.sh).

fastops/_gpu/selection.py picks a kernel by thresholds taken from the kernels' structure:
split few long rows into chunks (_SPLIT_BLOCKS, _SPLIT_MIN_LEN, _CUM_SPLIT_MIN_LEN), split
few columns (_COL_SPLIT_THREADS), one warp per short row (_WARP_MAX_N, _WARP_MAX_K), the
winners in shared memory (_SMEM_MAX_P).  For shapes on each side of a threshold this
times the path the launcher picks against the other one (a module constant
patched for that call), checks both give the same bits, and prints torch's
time beside them.  Median of 7 batches of synchronized calls, in ms.

    python scripts/gpu_sweep.py
"""
import time
from unittest import mock

import cupy
import numpy as np

import fastops
from fastops._gpu import selection as sel


def ms(fn, batches=7):
    fn()
    cupy.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    fn()
    cupy.cuda.get_current_stream().synchronize()
    calls = max(1, min(200, int(0.02 / max(time.perf_counter() - t0, 1e-6))))
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        cupy.cuda.get_current_stream().synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return 1e3 * float(np.median(out))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


TORCH = _torch()


def same(a, b):
    return all(bool((x == y).all()) or (x.dtype.kind == "f" and bool(
        ((x == y) | (cupy.isnan(x) & cupy.isnan(y))).all())) for x, y in zip(a, b))


def compare(label, x, call, off, torch_op):
    """call(x): the launcher's own choice; with the module constants ``off`` patched, the
    other path; torch_op(torch, tensor of x) beside them."""
    picked = call(x)
    with mock.patch.multiple(sel, **off):
        other = call(x)
        t_other = ms(lambda: call(x))
    t_picked = ms(lambda: call(x))
    t_torch = float("nan")
    if TORCH is not None:
        tx = TORCH.as_tensor(x, device="cuda")

        def torch_call():
            torch_op(TORCH, tx)
            TORCH.cuda.synchronize()
        t_torch = ms(torch_call)
    print(f"{label:<52}{t_picked:>10.4f}{t_other:>10.4f}{t_picked / t_other:>8.2f}"
          f"{t_torch:>10.4f}   {'same' if same(picked, other) else 'DIFFERENT'}", flush=True)


# the shapes swept (module-level so that a smoke run can shrink them)
TOPK_SPLIT = [(1, 1 << 24), (1, 1 << 20), (8, 1 << 22), (64, 1 << 20), (200, 1 << 18)]
TOPK_SPLIT_K = (10, 1000)
TOPK_WARP = [(200_000, n) for n in (32, 64, 256)]
TOPK_WARP_K = (1, 5, 10, 32)
TOPK_SMEM = (1000, 100_000)
TOPK_SMEM_K = (256, 1024, 2048)
# (shape, the patch that gives the other path): split rows below _SPLIT_BLOCKS // 8
# rows, columns when at least _COL_SPLIT_MIN_N long
SPLIT_OFF, SPLIT_ON = {"_SPLIT_BLOCKS": 0}, {"_SPLIT_BLOCKS": 2048}
COLS_OFF, COLS_ON = {"_COL_SPLIT_THREADS": 0}, {"_COL_SPLIT_MIN_N": 0}
CUM_SPLIT = [((1, 1 << 24), SPLIT_OFF), ((8, 1 << 22), SPLIT_OFF), ((64, 1 << 20), SPLIT_OFF),
             ((100, 1 << 18), SPLIT_OFF), ((150, 1 << 18), SPLIT_ON),
             ((200, 1 << 18), SPLIT_ON)]
CUM_COLS = [((4096, 4096), COLS_OFF), ((1 << 16, 64), COLS_OFF), ((1 << 20, 16), COLS_OFF),
            ((1024, 1024), COLS_ON), ((2048, 2048), COLS_OFF), ((2048, 8192), COLS_OFF)]


def main():
    rng = np.random.default_rng(0)
    print(f"{'shape (the launcher choice vs the other path)':<52}{'chosen':>10}{'other':>10}"
          f"{'ratio':>8}{'torch':>10}")

    def data(shape):
        return cupy.asarray(rng.standard_normal(shape).astype(np.float32))

    def topk_case(shape, k, off):
        compare(f"topk {shape} k={k} vs {off}", data(shape),
                lambda x: fastops.topk(x, k, axis=-1), off,
                lambda torch, t: torch.topk(t, k, dim=-1))

    # few long rows: split into chunks, or one block per row
    for shape in TOPK_SPLIT:
        for k in TOPK_SPLIT_K:
            topk_case(shape, k, {"_SPLIT_BLOCKS": 0})
    # short rows: one warp per row, or topk_rows' block per row
    for shape in TOPK_WARP:
        for k in TOPK_WARP_K:
            topk_case(shape, k, {"_WARP_MAX_N": 0})
    # the winners in shared memory, or global scratch and a device sort
    for k in TOPK_SMEM_K:
        topk_case(TOPK_SMEM, k, {"_SMEM_MAX_P": 0})

    for axis, cases in ((1, CUM_SPLIT), (0, CUM_COLS)):
        for shape, other in cases:
            compare(f"cummax {shape} axis={axis} vs {other}", data(shape),
                    lambda x: fastops.cummax(x, axis=axis), other,
                    lambda torch, t: torch.cummax(t, dim=axis))


if __name__ == "__main__":
    main()
