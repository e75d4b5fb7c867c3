"""CuPy launchers for kernels/norm.cu (same signature as fastops._cpu.norm)."""
import numpy as np

from fastops._gpu._sources import CTYPE

# every variant the launchers can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [{"T": CTYPE[d]} for d in ("float32", "float64")]


def instance_norm(x, scale, bias, epsilon, y):
    """x (N, C, L) with unit stride along L, N*C*L > 0; y (N, C, L) C-contiguous."""
    import cupy
    from fastops._gpu._compile import elem_strides, kernel, launch
    N, C, L = x.shape
    P = N * C
    sN, sC, _ = elem_strides(x)
    d = {"T": CTYPE[x.dtype.name]}
    coef = cupy.empty(4 * P, dtype=x.dtype)
    kernel("norm", "norm_stats", **d)((min(P, 65535 * 8),), (256,),
                                      (x, np.int64(P), np.int64(C), np.int64(L), np.int64(sN),
                                       np.int64(sC), scale, bias, np.float64(epsilon), coef))
    launch(kernel("norm", "norm_apply", **d), P * L,
           (x, np.int64(P), np.int64(C), np.int64(L), np.int64(sN), np.int64(sC), coef, y))
