"""Sampling ops: grid_sample (kernels in the "grid_sample" family)."""
import sys

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Array, Union

# Kernels: fastops._cpu.grid_sample / fastops._gpu.grid_sample, both with
#   grid_sample_2d(x (N, C, H, W), grid (N, Ho, Wo, 2), mode, padding, align, out)
#   grid_sample_3d(x (N, C, D, H, W), grid (N, Do, Ho, Wo, 3), mode, padding, align, out)
# x in its own element type (float16 arrives as float32), every extent >= 1, any element
# strides; grid in the compute type; out contiguous, non-empty, of x's element type.

# the torch / MMCV enum values (MMCV's interpolation_mode / padding_mode attributes)
_MODES = {"bilinear": 0, "linear": 0, "nearest": 1, "bicubic": 2, "cubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_X_DTYPES = _validate.NUMERIC
# integers of up to 16 bits are exact in float32; wider ones are computed in float64
_WIDE_INTS = ("int32", "uint32", "int64", "uint64")


def _choice(op, name, value, table, int_names):
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if 0 <= value < len(int_names):   # MMCV's integer attribute
            return int(value)
    elif isinstance(value, str) and value.lower() in table:
        return table[value.lower()]
    accepted = ", ".join(repr(k) for k in table)
    codes = ", ".join(f"{i}={n}" for i, n in enumerate(int_names))
    raise ValueError(f"{op}: {name}={value!r} is not supported; expected one of {accepted} "
                     f"(or MMCV's integer code {codes})")


def _native(dtype):
    return dtype if dtype.isnative else dtype.newbyteorder("=")


@_dispatch.public(fast=("grid_sample", "fast_grid_sample",
                        ("x", "grid", "mode", "padding_mode", "align_corners", _MODES,
                         _PADDINGS)))
def grid_sample(x: Array, grid: Array, mode: Union[str, int] = "bilinear",
                padding_mode: Union[str, int] = "zeros",
                align_corners: bool = False) -> Array:
    """Sample ``x`` at the normalized positions of ``grid`` (spatial transformer sampling).

    ONNX GridSample (opsets 16, 20, 22), MMCV ``grid_sampler`` / ``mmcv::grid_sampler``
    and ``torch.nn.functional.grid_sample`` (forward), on NumPy (OpenMP) and CuPy.

    Parameters
    ----------
    x : array (N, C, H, W) or (N, C, D, H, W)
        uint8/16/32/64, int8/16/32/64, float16, float32 or float64.  Any strides.
    grid : array (N, Ho, Wo, 2) for 4-D ``x``, (N, Do, Ho, Wo, 3) for 5-D ``x``
        float16/32/64.  ``grid[..., 0]`` is the x (width) coordinate, ``grid[..., 1]`` the
        y (height) one, ``grid[..., 2]`` the z (depth) one; -1 and 1 are the edges of
        ``x`` (``align_corners=False``) or the centers of its corner pixels (True).
        Converted to the compute dtype of ``x`` (see the table).
    mode : str or int
        "bilinear" or "linear" (opset 20 name), "nearest", "bicubic" or "cubic" (4-D
        only); also MMCV's ``interpolation_mode`` code 0, 1, 2.  Case-insensitive.
    padding_mode : str or int
        "zeros", "border" or "reflection" (MMCV codes 0, 1, 2).
    align_corners : bool or 0/1

    Returns
    -------
    y : array (N, C, Ho, Wo) or (N, C, Do, Ho, Wo), the dtype of ``x``

    Raises
    ------
    ValueError, TypeError
        Wrong ranks, shapes, dtypes or attributes (the message names the argument),
        bicubic on a 5-D ``x``, border/reflection padding of an ``x`` with an empty
        spatial axis.
    MemoryError
        The output cannot be allocated (its size is checked with exact integers first).

    Notes
    -----
    Results are those of ``torch.nn.functional.grid_sample`` on the CPU: the same
    coordinate arithmetic in the same order, in the compute dtype (4-D: torch's
    vectorized kernel, 5-D: its scalar 3-D kernel).  Measured against torch 2.13 (tests):
    nearest and every 5-D result equal bit for bit; float64 within 2e-14; float32
    bilinear/bicubic within a few ulp of the pixel coordinate times the local pixel
    differences (max 1.6e-5 on a 50 x 60 image with values up to 4.4), because torch's
    AVX2 build contracts some products into FMAs: both are equally far from the exact
    result (test_float32_as_accurate_as_torch).

    =====================  ============================================================
    unnormalize            align_corners=False: ``((g + 1) * size - 1) / 2`` (the edges
                           of ``x`` at -1 and 1); True: ``(g + 1) / 2 * (size - 1)``
                           (corner pixel centers at -1 and 1)
    "bilinear"/"linear"    4 (8 in 5-D) neighbours; a neighbour outside ``x`` counts as
                           exactly 0 with "zeros" padding
    "nearest"              the nearest pixel, ties rounded half to even (torch's
                           ``nearbyint``; ``onnx.reference`` also uses ``rint``)
    "bicubic"/"cubic"      Keys cubic convolution with A = -0.75 on a 4x4 neighbourhood,
                           padding applied to each of the 16 taps (torch, ONNX Runtime);
                           4-D only (ValueError on 5-D, as torch and ONNX Runtime)
    "zeros"                samples outside ``x`` read 0
    "border"               coordinates clamped into ``[0, size - 1]``
    "reflection"           coordinates reflected about the edges (-0.5 and size - 0.5,
                           or 0 and size - 1 with align_corners), then clamped; a size-1
                           axis with align_corners maps everything to 0 (no division by
                           zero; ``onnx.reference`` crashes there)
    NaN / inf in grid      never read out of bounds.  4-D and 5-D follow torch's 4-D
                           rule: border/reflection move a NaN coordinate to 0 (+inf to
                           the last pixel with border); with "zeros" every tap of a NaN
                           or infinite coordinate is outside and its weights are NaN, so
                           bilinear samples are NaN and nearest samples 0; bicubic
                           weights come from the unpadded coordinate, so a NaN or
                           infinite coordinate gives NaN with every padding.  (torch's
                           5-D CPU kernel gives 0 with "zeros" and moves NaN to the last
                           pixel with border/reflection; ONNX Runtime reads arbitrary
                           pixels.)
    compute dtype          float32 for float16, float32 and integers of up to 16 bits;
                           float64 for float64 and 32/64-bit integers; ``grid`` is
                           converted to it (torch requires equal dtypes)
    integer x (ONNX 20+)   computed in the compute dtype, rounded half away from zero and
                           saturated to the dtype's range, NaN -> 0 (API rule;
                           ``onnx.reference`` computes integers with integer weights and
                           truncates, ONNX Runtime has no integer GridSample)
    float16                computed in float32, rounded once at the end
    empty inputs           any zero-size output axis (N, C, or a grid axis) gives an
                           empty result; an empty spatial axis of ``x`` gives zeros with
                           "zeros" padding and ValueError otherwise (torch refuses it)
    =====================  ============================================================

    Peers disagree in a few places; fastops follows torch:

    * ``onnx.reference`` (onnx 1.22), bicubic with border padding, clamps the continuous
      coordinate into the image before interpolating, where torch and ONNX Runtime clamp
      each of the 16 taps and weight them by the unclamped coordinate (results differ by
      up to 0.4 in the tests); and it raises OverflowError on a size-1 axis with
      reflection and align_corners.  fastops agrees with torch and ONNX Runtime there.
    * ONNX Runtime computes unnormalize as ``((g + 1) * size - 1) / 2`` on 4-D inputs
      too, torch as ``(g + 1) * (size / 2) - 0.5``: an ulp apart; fastops uses torch's.

    **Performance.**  CPU: work items are (image, chunk of output points); per chunk a
    plan of every output point's tap offsets (padding folded in), masks and weights is
    computed once and applied to all channels, 4 channels per pass, on OpenMP threads
    (one image uses every core; torch parallelizes over N only, ONNX Runtime over C).
    Points whose taps all lie inside get compact unmasked plan entries; float32 bicubic
    uses SSE2 in the scalar order of operations.  Results are bit-identical for any
thread count.  GPU: one thread per (output point, group
    of channels; all channels in one group unless the batch has too few points to fill
    the device), the CPU's arithmetic with round-to-nearest intrinsics (no FMA
    contraction; compiled without flush-to-zero), so CPU and GPU agree bit for bit; no
    host synchronization.
    """
    op = "grid_sample"
    be, (x, grid) = _dispatch.prepare(op, x=x, grid=grid)
    _validate.dtype_in(op, "x", x, _X_DTYPES)
    _validate.dtype_in(op, "grid", grid, _validate.FLOATS)
    if x.ndim not in (4, 5):
        raise ValueError(f"{op}: x must be 4-D (N, C, H, W) or 5-D (N, C, D, H, W), "
                         f"got shape {tuple(x.shape)}")
    r = x.ndim - 2
    if grid.ndim != x.ndim or grid.shape[-1] != r:
        want = "(N, Ho, Wo, 2)" if r == 2 else "(N, Do, Ho, Wo, 3)"
        raise ValueError(f"{op}: grid must have shape {want} for a {x.ndim}-D x, "
                         f"got {tuple(grid.shape)}")
    if grid.shape[0] != x.shape[0]:
        raise ValueError(f"{op}: grid.shape[0]={grid.shape[0]} does not match "
                         f"x.shape[0]={x.shape[0]} (one grid per image)")
    mode_code = _choice(op, "mode", mode, _MODES, ("bilinear", "nearest", "bicubic"))
    if mode_code == 2 and r == 3:
        raise ValueError(f"{op}: mode={mode!r} (bicubic) supports 4-D x only; 5-D volumes "
                         f"take 'bilinear'/'linear' or 'nearest' (as torch and ONNX Runtime)")
    pad_code = _choice(op, "padding_mode", padding_mode, _PADDINGS,
                       ("zeros", "border", "reflection"))
    align = _validate.flag(op, "align_corners", align_corners)

    dtype = _native(x.dtype)
    out_shape = tuple(int(s) for s in (x.shape[0], x.shape[1]) + tuple(grid.shape[1:-1]))
    nbytes = dtype.itemsize
    for s in out_shape:
        nbytes *= s
    if nbytes > sys.maxsize:
        raise MemoryError(f"{op}: the output of shape {out_shape} ({dtype}) would need "
                          f"{nbytes} bytes, more than any process can address")
    try:
        out = be.empty(out_shape, dtype)
    except MemoryError as exc:
        raise MemoryError(f"{op}: cannot allocate the output of shape {out_shape} "
                          f"({dtype}): {exc}") from None
    if out.size == 0:
        return be.wrap(out)
    if min(x.shape[2:]) == 0:
        if pad_code != 0:
            raise ValueError(f"{op}: x of shape {tuple(x.shape)} has an empty spatial axis; "
                             f"padding_mode={padding_mode!r} needs at least one pixel")
        out[...] = 0            # every sample lies outside an empty image
        return be.wrap(out)

    if dtype.kind == "f":
        ct = np.dtype(np.float64 if dtype == np.float64 else np.float32)
        kt = ct                 # float16 runs as float32
    else:
        ct = np.dtype(np.float64 if dtype.name in _WIDE_INTS else np.float32)
        kt = dtype
    xc = be.element_view(x, kt)
    gc = be.element_view(grid, ct)
    oc = out if out.dtype == kt else be.empty(out_shape, kt)
    be.run("grid_sample", f"grid_sample_{r}d", xc, gc, mode_code, pad_code, align, oc)
    if oc is not out:
        out[...] = oc
    return be.wrap(out)
