# Thin typed entry points for the GridSample kernels in include/grid_sample.hpp.
# Inputs are validated and shaped by fastops.sampling.grid_sample; these only release the GIL.
# x's element type picks the compute type of the grid: float for float32 and integers of
# up to 16 bits, double for float64 and 32/64-bit integers (other pairings are refused,
# so only those ten template instantiations are compiled).
from cython cimport floating
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)
from libcpp cimport bool as cbool

cimport numpy as cnp

from fastops._cpu._fast cimport plain, prod, small_output
from fastops._cpu._types cimport real

cnp.import_array()

cdef extern from "grid_sample.hpp" namespace "fastops" nogil:
    cdef cppclass GsShape "fastops::gs::Shape":
        int64_t N, C, D, H, W, sN, sC, sD, sH, sW, Do, Ho, Wo, gN, gD, gH, gW, gK
    # std::bad_alloc (the per-thread plans) -> MemoryError
    void c_grid_sample "fastops::grid_sample"[Tin, T](
        const Tin* x, const T* grid, const GsShape& s, int rank, int mode, int padding,
        cbool align, Tin* out, int nthreads) except +


cdef GsShape _shape(int rank, Py_ssize_t* xs, Py_ssize_t* xst, Py_ssize_t xi, Py_ssize_t* gs,
                    Py_ssize_t* gst, Py_ssize_t gi) noexcept:
    """Extents and element strides; a 4-D input is a 5-D one with D = 1 and no D stride."""
    cdef GsShape s
    cdef int d = rank - 2          # 0 (4-D) or 1 (5-D): index shift of the H, W axes
    s.N = xs[0]; s.C = xs[1]; s.H = xs[2 + d]; s.W = xs[3 + d]
    s.sN = xst[0] // xi; s.sC = xst[1] // xi; s.sH = xst[2 + d] // xi; s.sW = xst[3 + d] // xi
    s.Ho = gs[1 + d]; s.Wo = gs[2 + d]
    s.gN = gst[0] // gi; s.gH = gst[1 + d] // gi; s.gW = gst[2 + d] // gi
    s.gK = gst[3 + d] // gi
    if d:
        s.D = xs[2]; s.sD = xst[2] // xi; s.Do = gs[1]; s.gD = gst[1] // gi
    else:
        s.D = 1; s.sD = 0; s.Do = 1; s.gD = 0
    return s


def grid_sample_2d(const real[:, :, :, :] x, const floating[:, :, :, :] grid, int mode,
                   int padding, bint align_corners, real[:, :, :, ::1] out, int nthreads):
    """x (N, C, H, W) with every extent >= 1, any element strides; grid (N, Ho, Wo, 2) in
    the compute type, any element strides; out (N, C, Ho, Wo) non-empty, contiguous.
    mode: 0 bilinear, 1 nearest, 2 bicubic; padding: 0 zeros, 1 border, 2 reflection."""
    cdef GsShape s
    if (floating is float and (real is float or real is uint8_t or real is int8_t or
                               real is uint16_t or real is int16_t)) or \
       (floating is double and (real is double or real is uint32_t or real is int32_t or
                                real is uint64_t or real is int64_t)):
        s = _shape(2, x.shape, x.strides, sizeof(real), grid.shape, grid.strides,
                   sizeof(floating))
        with nogil:
            c_grid_sample(&x[0, 0, 0, 0], &grid[0, 0, 0, 0], s, 2, mode, padding,
                          align_corners, &out[0, 0, 0, 0], nthreads)
    else:
        raise TypeError("grid_sample_2d: grid is not in the compute type of x")


def grid_sample_3d(const real[:, :, :, :, :] x, const floating[:, :, :, :, :] grid, int mode,
                   int padding, bint align_corners, real[:, :, :, :, ::1] out, int nthreads):
    """x (N, C, D, H, W) with every extent >= 1, any element strides; grid
    (N, Do, Ho, Wo, 3) in the compute type; out (N, C, Do, Ho, Wo) non-empty, contiguous.
    mode: 0 bilinear, 1 nearest; padding: 0 zeros, 1 border, 2 reflection."""
    cdef GsShape s
    if (floating is float and (real is float or real is uint8_t or real is int8_t or
                               real is uint16_t or real is int16_t)) or \
       (floating is double and (real is double or real is uint32_t or real is int32_t or
                                real is uint64_t or real is int64_t)):
        s = _shape(3, x.shape, x.strides, sizeof(real), grid.shape, grid.strides,
                   sizeof(floating))
        with nogil:
            c_grid_sample(&x[0, 0, 0, 0, 0], &grid[0, 0, 0, 0, 0], s, 3, mode, padding,
                          align_corners, &out[0, 0, 0, 0, 0], nthreads)
    else:
        raise TypeError("grid_sample_3d: grid is not in the compute type of x")


def fast_grid_sample(x, grid, mode, padding_mode, align_corners, dict modes, dict paddings):
    """grid_sample of a plain 4-D/5-D x and grid (fastops/_cpu/_fast.pxd), both float32 or
    both float64, with mode and padding_mode keys of ``modes`` / ``paddings`` (exact
    spelling) and a bool align_corners; else None."""
    if not (plain(x) and plain(grid)) or type(align_corners) is not bool \
            or type(mode) is not str or type(padding_mode) is not str:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x, g = <cnp.ndarray>grid
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a), r = nd - 2
    cdef int mode_code = modes.get(mode, -1), pad_code = paddings.get(padding_mode, -1)
    if ((nd != 4 and nd != 5) or cnp.PyArray_NDIM(g) != nd or cnp.PyArray_TYPE(g) != typenum
            or not (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            or cnp.PyArray_DIMS(g)[nd - 1] != r or cnp.PyArray_DIMS(g)[0] != cnp.PyArray_DIMS(a)[0]
            or mode_code < 0 or pad_code < 0 or (mode_code == 2 and r == 3)):
        return None
    cdef cnp.npy_intp out_dims[5]
    out_dims[0] = cnp.PyArray_DIMS(a)[0]
    out_dims[1] = cnp.PyArray_DIMS(a)[1]
    for d in range(r):
        out_dims[2 + d] = cnp.PyArray_DIMS(g)[1 + d]
    if not small_output(prod(out_dims, 0, nd)):
        return None
    cdef GsShape s = _shape(r, <Py_ssize_t*>cnp.PyArray_DIMS(a),
                            <Py_ssize_t*>cnp.PyArray_STRIDES(a), cnp.PyArray_ITEMSIZE(a),
                            <Py_ssize_t*>cnp.PyArray_DIMS(g),
                            <Py_ssize_t*>cnp.PyArray_STRIDES(g), cnp.PyArray_ITEMSIZE(g))
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(nd, out_dims, typenum, 0)
    if typenum == cnp.NPY_FLOAT:
        c_grid_sample(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(g), s,
                      r, mode_code, pad_code, align_corners, <float*>cnp.PyArray_DATA(out), 1)
    else:
        c_grid_sample(<const double*>cnp.PyArray_DATA(a), <const double*>cnp.PyArray_DATA(g),
                      s, r, mode_code, pad_code, align_corners,
                      <double*>cnp.PyArray_DATA(out), 1)
    return out
