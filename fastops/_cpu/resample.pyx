# Thin typed entry points for the resize kernels in include/resample.hpp (arguments
# validated and shaped by fastops.resample; these only release the GIL), the host plan key
# and the compiled fast path of a planned call.  fastops/_gpu/resample.py exposes the same
# kernel functions for CuPy arrays.
from cython cimport floating
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libcpp cimport bool as cbool

from fastops._cpu._fast cimport plain, small_output
from fastops._cpu._types cimport uword
cimport numpy as cnp
import numpy as np

cnp.import_array()

ctypedef fused rs_t:
    uint8_t
    int8_t
    int32_t
    int64_t
    float
    double

cdef extern from "npy_types.hpp" namespace "fastops" nogil:
    cbool c_is_int64 "fastops::is_npy_type<int64_t>"(int typenum)

# every kernel is `except +`: std::bad_alloc (per-thread scratch) becomes MemoryError
cdef extern from "resample.hpp" namespace "fastops" nogil:
    void c_table "fastops::resize_table"[W](
        int64_t n_in, int64_t n_out, int mode, int ctm, int nearest_mode, double scale,
        double out_width, double roi_start, double roi_end, double cubic_a, cbool antialias,
        cbool exclude_outside, int64_t n_raw, int64_t tap_start, int64_t K, int64_t* first,
        int64_t* count, W* weights, uint8_t* extrap, int nthreads) except +
    cbool c_resize2d_typed "fastops::resize2d_typed"(
        int typenum, cbool wdouble, const void* x, const int64_t* shape,
        const int64_t* strides, const int64_t* fh, const int64_t* ch, const void* wh,
        int64_t Kh, int64_t Ho, const int64_t* fw, const int64_t* cw, const void* ww,
        int64_t Kw, int64_t Wo, cbool v_first, void* out, int nthreads) except +
    void c_nearest2d "fastops::nearest2d_flat"[T](
        const T* x, const int64_t* shape, const int64_t* strides, const int64_t* fh,
        int64_t Ho, const int64_t* fw, int64_t Wo, T* out, int nthreads) except +
    cbool c_nearest2d_words "fastops::nearest2d_words"(
        int itemsize, const void* x, const int64_t* shape, const int64_t* strides,
        const int64_t* fh, int64_t Ho, const int64_t* fw, int64_t Wo, void* out,
        int nthreads) except +
    void c_round_cast "fastops::resize_round_cast"[W, T](
        const W* src, int64_t n, T* dst, int nthreads) except +
    void c_fill "fastops::resize_fill"[T](
        T* out, int64_t B, int64_t m, int64_t C, const uint8_t* mask, int code, T value,
        int nthreads) except +


def axis_table(int64_t n_in, int64_t n_out, int mode, int ctm, int nearest_mode,
               double scale, double out_width, double roi_start, double roi_end,
               double cubic_a, bint antialias, bint exclude_outside, int64_t n_raw,
               int64_t tap_start, int64_t[::1] first, int64_t[::1] count,
               floating[:, ::1] weights, uint8_t[::1] extrap, int nthreads):
    """Fill one axis table (n_out >= 1 rows): first, count, extrap (n_out,), weights
    (n_out, K) with K >= every row's merged tap count."""
    with nogil:
        c_table(n_in, n_out, mode, ctm, nearest_mode, scale, out_width, roi_start, roi_end,
                cubic_a, antialias, exclude_outside, n_raw, tap_start, weights.shape[1],
                &first[0], &count[0], &weights[0, 0], &extrap[0], nthreads)


cdef const int64_t* _index_vector(object a, int64_t n, str name) except NULL:
    """The data of a C-contiguous 1-D int64 ndarray of length n."""
    if type(a) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>a) != 1 \
            or cnp.PyArray_DIMS(<cnp.ndarray>a)[0] != n \
            or not cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>a) \
            or not cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a) \
            or not c_is_int64(cnp.PyArray_TYPE(<cnp.ndarray>a)):
        raise TypeError(f"resize2d: {name} must be a contiguous int64 vector of length {n}")
    return <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>a)


def resize2d(x, fh, ch, wh, fw, cw, ww, bint v_first, out, int nthreads):
    """Resize axes 1 and 3 of x (B, H, M, Wd, C), any element strides, into out (B, Ho, M,
    Wo, C) C-contiguous of x's dtype (uint8, int8, int32, int64, float32 or float64);
    every extent >= 1, tables (first, count, weights) with Ho / Wo rows, weights
    float32 or float64.  ndarrays checked here without typed memoryviews, whose
    acquisition was most of a tiny resize's kernel call (4.7 -> ~2 us for 1x3x8x8)."""
    if type(x) is not cnp.ndarray or type(out) is not cnp.ndarray \
            or type(wh) is not cnp.ndarray or type(ww) is not cnp.ndarray:
        raise TypeError("resize2d: x, out, wh and ww must be ndarrays")
    cdef cnp.ndarray a = <cnp.ndarray>x, o = <cnp.ndarray>out
    cdef cnp.ndarray th = <cnp.ndarray>wh, tw = <cnp.ndarray>ww
    cdef int t = cnp.PyArray_TYPE(a), wt = cnp.PyArray_TYPE(th)
    cdef int64_t item = cnp.PyArray_ITEMSIZE(a)
    cdef int64_t shape[5]
    cdef int64_t strides[5]
    cdef int i
    if cnp.PyArray_NDIM(a) != 5 or cnp.PyArray_NDIM(o) != 5 \
            or not cnp.PyArray_EquivTypenums(cnp.PyArray_TYPE(o), t) \
            or not cnp.PyArray_ISNOTSWAPPED(a) or not cnp.PyArray_ISALIGNED(a) \
            or not cnp.PyArray_ISCARRAY(o) or not cnp.PyArray_ISNOTSWAPPED(o):
        raise TypeError("resize2d: x and out must be aligned native 5-D arrays of one dtype, "
                        "out C-contiguous and writeable")
    if (wt != cnp.NPY_FLOAT and wt != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(tw) != wt \
            or cnp.PyArray_NDIM(th) != 2 or cnp.PyArray_NDIM(tw) != 2 \
            or not cnp.PyArray_ISCARRAY_RO(th) or not cnp.PyArray_ISCARRAY_RO(tw) \
            or not cnp.PyArray_ISNOTSWAPPED(th) or not cnp.PyArray_ISNOTSWAPPED(tw) \
            or cnp.PyArray_DIMS(th)[0] != cnp.PyArray_DIMS(o)[1] \
            or cnp.PyArray_DIMS(tw)[0] != cnp.PyArray_DIMS(o)[3]:
        raise TypeError("resize2d: wh / ww must be contiguous float32 or float64 tables "
                        "with one row per output row / column")
    for i in range(5):
        shape[i] = cnp.PyArray_DIMS(a)[i]
        strides[i] = cnp.PyArray_STRIDES(a)[i] // item
        if shape[i] < 1 or cnp.PyArray_STRIDES(a)[i] % item \
                or (i != 1 and i != 3 and cnp.PyArray_DIMS(o)[i] != shape[i]) \
                or cnp.PyArray_DIMS(o)[i] < 1:
            raise ValueError("resize2d: x and out must agree on axes 0, 2, 4, every extent "
                             ">= 1, element strides")
    cdef int64_t Ho = cnp.PyArray_DIMS(o)[1], Wo = cnp.PyArray_DIMS(o)[3]
    cdef const int64_t* pfh = _index_vector(fh, Ho, "fh")
    cdef const int64_t* pch = _index_vector(ch, Ho, "ch")
    cdef const int64_t* pfw = _index_vector(fw, Wo, "fw")
    cdef const int64_t* pcw = _index_vector(cw, Wo, "cw")
    cdef const void* px = cnp.PyArray_DATA(a)
    cdef const void* ph = cnp.PyArray_DATA(th)
    cdef const void* pw = cnp.PyArray_DATA(tw)
    cdef void* po = cnp.PyArray_DATA(o)
    cdef bint wdouble = wt == cnp.NPY_DOUBLE, done
    with nogil:
        done = c_resize2d_typed(t, wdouble, px, shape, strides, pfh, pch, ph,
                                cnp.PyArray_DIMS(th)[1], Ho, pfw, pcw, pw,
                                cnp.PyArray_DIMS(tw)[1], Wo, v_first, po, nthreads)
    if not done:
        raise TypeError(f"resize2d: no kernel for dtype {a.dtype}")


def nearest2d(const uword[:, :, :, :, :] x, const int64_t[::1] fh, const int64_t[::1] fw,
              uword[:, :, :, :, ::1] out, int nthreads):
    """out[b, yo, m, xo, c] = x[b, fh[yo], m, fw[xo], c]; every extent >= 1."""
    cdef int64_t shape[5]
    cdef int64_t strides[5]
    cdef int i
    for i in range(5):
        shape[i] = x.shape[i]
        strides[i] = x.strides[i] // <int64_t>sizeof(uword)
    with nogil:
        c_nearest2d(&x[0, 0, 0, 0, 0], shape, strides, &fh[0], fh.shape[0], &fw[0],
                    fw.shape[0], &out[0, 0, 0, 0, 0], nthreads)


def round_cast(const floating[::1] src, rs_t[::1] dst, int nthreads):
    """dst = src rounded half away from zero and saturated (cast for float dst)."""
    with nogil:
        c_round_cast(&src[0], src.shape[0], &dst[0], nthreads)


def fill(uword[:, :, ::1] out, const uint8_t[::1] mask, int code, const uword[::1] value,
         int nthreads):
    """out[b, o, :] = value[0] wherever mask[o] == code (1: tf_crop_and_resize
    extrapolation, 2: nearest with exclude_outside picking outside the axis); value is a
    1-element NumPy array of out's element type."""
    with nogil:
        c_fill(&out[0, 0, 0], out.shape[0], out.shape[1], out.shape[2], &mask[0], code,
               value[0], nthreads)


# ------------------------------------------------ host plans (fastops.resample._PLANS)
_KEY_SCALARS = frozenset({type(None), str, bool, int, float})


def plan_key(x, tuple args):
    """A hashable key of x's shape and dtype and every argument of fastops.resize, with
    each value's type (sizes=[2.0] must not hit the plan of sizes=[2]: validation refuses
    it), or None for arguments that cannot be keyed cheaply: (shape, dtype, the
    arguments' types, their values), where an array is (dtype, shape, bytes) and a list
    or tuple is (its elements' types, its elements).  Compiled: the general path and
    fast_planned_resize both key every call (1.1 us of a 6.5 us tiny resize in Python)."""
    cdef tuple types = tuple(map(type, args))
    cdef list vals = list(args)
    cdef Py_ssize_t i
    for i in range(len(types)):
        t = types[i]
        if t in _KEY_SCALARS:
            continue
        v = args[i]
        if t is cnp.ndarray:
            if v.size > 64 or v.dtype.kind not in "biuf":    # (object arrays hold pointers)
                return None
            vals[i] = (v.dtype, v.shape, v.tobytes())
            continue
        if t is list or t is tuple:
            v = vals[i] = (tuple(map(type, v)), tuple(v))
        try:
            hash(v)
        except TypeError:   # unhashable (nested lists, arrays in a list, other objects)
            return None
    return x.shape, x.dtype, types, tuple(vals)


def args_of(tuple key):
    """The arguments a plan key was made of (arrays rebuilt from its bytes, read-only;
    lists and tuples as tuples, which every argument accepts alike)."""
    args = []
    for t, v in zip(key[2], key[3]):
        if t is cnp.ndarray:                     # (dtype, shape, bytes)
            args.append(np.frombuffer(v[2], dtype=v[0]).reshape(v[1]))
        elif t is list or t is tuple:
            args.append(v[1])
        else:
            args.append(v)
    return args


def fast_planned_resize(x, scales, sizes, mode, coordinate_transformation_mode, nearest_mode,
                cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes,
                keep_aspect_ratio_policy, roi, dict plans):
    """fastops.resize of a plain NumPy array (_fast.pxd) into an output of at most
    kParallelGrain elements, with the arguments of a host plan that the general path
    validated and filed (fastops.resample._PLANS) and that is one pass on the CPU
    (its ``fast`` tuple, see resample._fast_step): that pass on one thread, holding the
    GIL; else None.  A repeated small resize skips the plan's Python layers (tiny resize
    1x3x8x8 x2: ~6.5 us, onnxruntime ~7.6)."""
    if not plain(x):
        return None
    key = plan_key(x, (scales, sizes, mode, coordinate_transformation_mode, nearest_mode,
                       cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes,
                       keep_aspect_ratio_policy, roi))
    if key is None:
        return None
    plan = plans.get(key)
    if plan is None:
        return None
    fast = plan.fast
    if fast is None:
        return None
    cdef tuple in5 = fast[0], out_shape = fast[1]
    cdef cnp.ndarray a = <cnp.ndarray>x, out, th, tw
    cdef cnp.ndarray fh = fast[2], fw = fast[5]
    cdef int nd = len(out_shape), i
    cdef cnp.npy_intp dims[32]
    cdef int64_t n_out = 1
    if nd > 32:
        return None
    for i in range(nd):
        dims[i] = out_shape[i]
        n_out *= dims[i]
    if not small_output(n_out):
        return None
    cdef int typenum = cnp.PyArray_TYPE(a), itemsize = cnp.PyArray_ITEMSIZE(a)
    out = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    cdef int64_t shape[5]
    cdef int64_t strides[5]
    cdef int64_t s = 1
    for i in range(4, -1, -1):      # x is C-contiguous (plain)
        shape[i] = in5[i]
        strides[i] = s
        s *= shape[i]
    cdef const void* px = cnp.PyArray_DATA(a)
    cdef void* po = cnp.PyArray_DATA(out)
    cdef const int64_t* pfh = <const int64_t*>cnp.PyArray_DATA(fh)
    cdef const int64_t* pfw = <const int64_t*>cnp.PyArray_DATA(fw)
    cdef int64_t Ho = cnp.PyArray_DIMS(fh)[0], Wo = cnp.PyArray_DIMS(fw)[0]
    if fast[9]:     # nearest: element bits
        if not c_nearest2d_words(itemsize, px, shape, strides, pfh, Ho, pfw, Wo, po, 1):
            return None
        return out
    th, tw = fast[4], fast[7]
    if not c_resize2d_typed(typenum, cnp.PyArray_TYPE(th) == cnp.NPY_DOUBLE, px, shape,
                            strides, pfh, <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>fast[3]),
                            cnp.PyArray_DATA(th), cnp.PyArray_DIMS(th)[1], Ho, pfw,
                            <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>fast[6]),
                            cnp.PyArray_DATA(tw), cnp.PyArray_DIMS(tw)[1], Wo, fast[8], po, 1):
        return None
    return out
