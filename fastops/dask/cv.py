"""OpenCV-compatible front ends on dask arrays: :func:`resize` over a stack of frames."""
import math

import dask.array as da

from fastops import _validate
from fastops import cv as _cv
from fastops._typing import FloatScalar, IntScalar, Optional, Sequence
from fastops.cv import (INTER_AREA, INTER_CUBIC, INTER_LINEAR, INTER_LINEAR_EXACT,
                        INTER_NEAREST, INTER_NEAREST_EXACT)
from fastops.dask import _graph as g

__all__ = ["resize", "INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA",
           "INTER_LINEAR_EXACT", "INTER_NEAREST_EXACT"]

OP = _cv.OP


def _frames(block, dsize, fx, fy, interpolation, fshape, dtype):
    """fastops.cv.resize of every frame of one chunk, written in place into the chunk's
    output (each frame's output is a contiguous slice: cv.resize's dst)."""
    be, (b,) = g.block_module(block)
    out = be.xp.empty((b.shape[0],) + fshape, dtype=dtype)
    for t in range(b.shape[0]):
        dst = out[t]
        got = _cv.resize(b[t], dsize, dst, fx, fy, interpolation)
        if got is not dst:              # (cv.resize did not take dst: copy its result)
            dst[...] = got.reshape(dst.shape)
    return out


def resize(frames: da.Array, dsize: Optional[Sequence[IntScalar]], fx: FloatScalar = 0,
           fy: FloatScalar = 0, interpolation: IntScalar = INTER_LINEAR) -> da.Array:
    """``cv2.resize`` of every frame of a stack: :func:`fastops.cv.resize` per frame, on
    a dask array chunked along the frames.

    Parameters
    ----------
    frames : dask array (T, H, W) or (T, H, W, C), uint8, uint16, int16, float16,
        float32 or float64, NumPy or CuPy chunks.  Chunked along T as you like; H, W
        and C are made whole (rechunked): a frame is resized by one task.
    dsize, fx, fy, interpolation
        As :func:`fastops.cv.resize` (``dsize`` is (width, height); fx / fy when it is
        None).  There is no ``dst``.

    Returns
    -------
    dask array (T, height, width) or (T, height, width, C) of the frames' dtype,
    chunked along T like ``frames``; frame ``t`` is bit for bit
    ``fastops.cv.resize(frames[t].compute(), dsize, None, fx, fy, interpolation)``
    (so (T, H, W, 1) stacks give (T, height, width), as cv2 drops the channel axis).
    """
    frames = g.as_dask(OP, "frames", frames)
    g.need_known_chunks(OP, "frames", frames)
    if frames.ndim not in (3, 4):
        raise ValueError(f"{OP}: frames must be a stack (T, H, W) or (T, H, W, C), got "
                         f"shape {tuple(frames.shape)}")
    _validate.dtype_in(OP, "frames", frames, _cv.DTYPES)
    interp = _cv._interpolation(interpolation)
    h, w = int(frames.shape[1]), int(frames.shape[2])
    C = int(frames.shape[3]) if frames.ndim == 4 else 1
    size = _cv._dsize(dsize)           # (width, height), or None: fx and fy decide
    dsize = size
    dh, dw, _, _ = _cv._geometry(h, w, size, fx, fy)
    fshape = (dh, dw) if frames.ndim == 3 or C == 1 else (dh, dw, C)
    dtype = g.native(frames.dtype)
    if dtype.itemsize * math.prod(fshape) * max(frames.chunks[0], default=0) > \
            _validate.INT64_MAX:
        raise MemoryError(f"{OP}: a chunk of {max(frames.chunks[0])} frames of "
                          f"{fshape} cannot be allocated (rechunk along T)")
    frames = frames.rechunk({a: -1 for a in range(1, frames.ndim)})
    tok = g.tokenize(frames, dsize, fx, fy, interp, g.threads_setting(OP))
    name = f"fastops-cv-resize-{tok}"
    gr = g.Graph(OP, frames)
    lay = gr.layer(name)
    nb = frames.numblocks[0]
    zeros = (0,) * (frames.ndim - 1)
    for j in range(nb):
        gr.task(lay, (name, j) + (0,) * len(fshape), _frames, nb,
                g.TaskRef((frames.name, j) + zeros), dsize, fx, fy, interp, fshape, dtype)
    chunks = (frames.chunks[0],) + tuple((s,) for s in fshape)
    return gr.array(name, chunks, g.meta(frames, 1 + len(fshape), dtype))
