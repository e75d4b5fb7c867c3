"""CuPy launcher for kernels/roi_align.cu (same signature as fastops._cpu.roi_align)."""
import numpy as np

from fastops._gpu._sources import CTYPE

# every variant the launcher can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [{"T": CTYPE[d]} for d in ("float32", "float64")]


def roi_align(x, boxes, batch, spatial_scale, sampling_ratio, mode, aligned, out):
    """x (N, C, H, W) with H, W >= 1, any element strides; boxes (K, 4) contiguous in
    x's dtype; batch (K,) int64 in [0, N); out (K, C, PH, PW) contiguous, non-empty."""
    from fastops._gpu._compile import kernel, launch
    fn = kernel("roi_align", "roi_align_fwd", T=CTYPE[x.dtype.name])
    _, C, H, W = x.shape
    sN, sC, sH, sW = (s // x.itemsize for s in x.strides)
    K, _, PH, PW = out.shape
    launch(fn, out.size,
           (x, np.int64(C), np.int64(H), np.int64(W), np.int64(sN), np.int64(sC),
            np.int64(sH), np.int64(sW), boxes, batch, np.int64(K), np.int64(PH),
            np.int64(PW), x.dtype.type(spatial_scale), np.int64(sampling_ratio),
            np.int32(mode), np.int32(aligned), out))
