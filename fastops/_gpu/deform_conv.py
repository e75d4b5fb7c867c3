"""CuPy launcher for kernels/deform_conv.cu (same signature as fastops._cpu.deform_conv).

Per chunk of images: the im2col kernel writes the column matrix col (nb, C*K, OH*OW)
(K = kh*kw), then one batched cuBLAS GEMM (cupy.matmul) multiplies the weight
(G, M/G, C/G*K) into the output viewed as (nb, G, M/G, OH*OW).  The column buffer is
bounded (_COL_BYTES): images are grouped while their columns fit; an image whose columns
alone exceed it is done in tiles of output pixels, each tile's product copied into its
place.  Everything runs on the current stream; nothing synchronizes the host.
"""
import numpy as np

from fastops._gpu._sources import CTYPE

# every variant the launcher can ask for (compiled by scripts/check_kernels.py)
VARIANTS = [{"T": CTYPE[d]} for d in ("float32", "float64")]

# Column scratch per step: 256 MiB holds one 1x256x100x136 3x3 detector layer (125 MB)
# in one batched GEMM.  Not measured on a device yet.
_COL_BYTES = 256 << 20


def _plan(N, CK, OHW, itemsize, budget=None):
    """(images per chunk, pixels per tile): whole images while they fit, else tiles."""
    budget = _COL_BYTES if budget is None else budget
    per_image = max(1, CK * OHW * itemsize)
    if per_image <= budget:
        return max(1, min(N, budget // per_image)), OHW
    return 1, max(1, min(OHW, budget // max(1, CK * itemsize)))


def deform_conv2d(x, offset, mask, weight, bias, stride_h, stride_w, pad_h, pad_w, dil_h,
                  dil_w, groups, deform_groups, out):
    """x (N, C, H, W), offset (N, 2*dg*kh*kw, OH, OW), mask (N, dg*kh*kw, OH, OW) or None,
    weight (M, C/groups, kh, kw), bias (M,) or None: any element strides, all in the
    compute type; out (N, M, OH, OW) contiguous with N, M, OH, OW >= 1."""
    import cupy

    from fastops._gpu._compile import elem_strides, kernel, launch
    N, C, H, W = (int(s) for s in x.shape)
    M, Cg, KH, KW = (int(s) for s in weight.shape)
    OH, OW = (int(s) for s in out.shape[2:])
    K, OHW, G = KH * KW, OH * OW, int(groups)
    Mg = M // G
    dtype = out.dtype
    wr = cupy.ascontiguousarray(weight).reshape(G, Mg, Cg * K)
    fn = kernel("deform_conv", "deform_im2col", T=CTYPE[dtype.name])
    sx = [np.int64(s) for s in elem_strides(x)]
    so = [np.int64(s) for s in elem_strides(offset)]
    if mask is None:
        mk, sm, has_mask = offset, [np.int64(0)] * 4, 0
    else:
        mk, sm, has_mask = mask, [np.int64(s) for s in elem_strides(mask)], 1
    geom = [np.int64(v) for v in (KH, KW, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                                  C // int(deform_groups), OW)]
    if C == 0:                                    # no input channels: the bias alone
        out.fill(0)
        if bias is not None:
            out += bias.reshape(1, M, 1, 1)
        return out
    nb, P = _plan(N, C * K, OHW, dtype.itemsize)
    col = cupy.empty((nb, C * K, P), dtype)
    for n0 in range(0, N, nb):
        b = min(nb, N - n0)
        for p0 in range(0, OHW, P):
            npix = min(P, OHW - p0)
            cb = col.reshape(-1)[:b * C * K * npix].reshape(b, C * K, npix)   # contiguous
            launch(fn, b * C * npix,
                   (x, np.int64(C), np.int64(H), np.int64(W), *sx, offset, *so, mk, *sm,
                    np.int32(has_mask), *geom, np.int64(n0), np.int64(b), np.int64(p0),
                    np.int64(npix), cb))
            cg = cb.reshape(b, G, Cg * K, npix)
            if npix == OHW:
                cupy.matmul(wr, cg, out=out[n0:n0 + b].reshape(b, G, Mg, OHW))
            else:
                out[n0:n0 + b].reshape(b, G, Mg, OHW)[..., p0:p0 + npix] = cupy.matmul(wr, cg)
        if bias is not None:
            out[n0:n0 + b] += bias.reshape(1, M, 1, 1)
    return out
