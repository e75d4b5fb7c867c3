# Thin typed entry points for the NMS kernels in include/nms.hpp.
# Inputs are validated, cast to one compute dtype (float32/float64) and shaped by
# fastops.detection; these allocate the data-dependent outputs and release the GIL.
from cython cimport floating
from libc.stdint cimport int64_t
from libc.string cimport memcpy
from libcpp cimport bool as cbool

import numpy as np

cimport numpy as cnp

from fastops._cpu._fast cimport plain

cnp.import_array()

# every kernel is `except +`: std::bad_alloc (scratch) becomes MemoryError
cdef extern from "nms.hpp" namespace "fastops" nogil:
    void c_nms_onnx "fastops::nms_onnx"[T](
        const T* boxes, int64_t B, int64_t N, int64_t sb0, int64_t sb1, int64_t sb2,
        const T* scores, int64_t C, int64_t ss0, int64_t ss1, int64_t ss2, int center,
        T off, int64_t max_out, T iou_thr, cbool has_sthr, T sthr, T* buf, int64_t cap,
        int64_t* sel, int64_t* counts, int nthreads) except +
    int64_t c_nms_batched "fastops::nms_batched"[T](
        const T* boxes, int64_t N, int64_t sb1, int64_t sb2, const T* scores, int64_t ss,
        const int64_t* cls, int64_t sc, T iou_thr, T* buf, int64_t* keep, int nthreads) except +


cdef object _select(const floating* boxes, int64_t B, int64_t N, int64_t sb0, int64_t sb1,
                    int64_t sb2, const floating* scores, int64_t C, int64_t ss0, int64_t ss1,
                    int64_t ss2, int center, int offset, int64_t cap, double iou_thr,
                    bint has_sthr, double sthr, pad_out, bint index_only, int nthreads):
    """nms_select on element pointers and strides; index_only: the (K,) box indices of a
    single (batch, class) instead of the (K, 3) rows (fastops.nms).  Arrays through the C
    API, no typed memoryviews: a memoryview costs about 0.3 us to take, and four of them
    and a slice copy were most of a 16-box call (fastops.nms 2.5 us, issue 14)."""
    cdef int64_t P = B * C, width = max(cap, 1)
    cdef cnp.npy_intp d1 = P
    cdef cnp.npy_intp d2[2]
    d2[0], d2[1] = P, width
    counts_arr = cnp.PyArray_ZEROS(1, &d1, cnp.NPY_INT64, 0)
    sel_arr = cnp.PyArray_EMPTY(2, d2, cnp.NPY_INT64, 0)
    d1 = B * 5 * N
    buf_arr = cnp.PyArray_EMPTY(1, &d1, cnp.NPY_FLOAT if floating is float else cnp.NPY_DOUBLE, 0)
    cdef int64_t* counts = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>counts_arr)
    cdef int64_t* sel = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>sel_arr)
    cdef floating* buf = <floating*>cnp.PyArray_DATA(<cnp.ndarray>buf_arr)
    if cap > 0:
        with nogil:
            c_nms_onnx(boxes, B, N, sb0, sb1, sb2, scores, C, ss0, ss1, ss2, center,
                       <floating>offset, cap, <floating>iou_thr, has_sthr, <floating>sthr,
                       buf, cap, sel, counts, nthreads)
    cdef int64_t total = 0, p, i, r = 0
    for p in range(P):
        total += counts[p]
    cdef cnp.ndarray out_arr
    if index_only:
        d1 = total
        out_arr = cnp.PyArray_EMPTY(1, &d1, cnp.NPY_INT64, 0)
        memcpy(cnp.PyArray_DATA(out_arr), sel, total * sizeof(int64_t))
        return out_arr
    if pad_out is None:
        d2[0], d2[1] = total, 3
        out_arr = cnp.PyArray_EMPTY(2, d2, cnp.NPY_INT64, 0)
    else:
        out_arr = pad_out
        if not (cnp.PyArray_NDIM(out_arr) == 2 and cnp.PyArray_DIMS(out_arr)[1] == 3
                and cnp.PyArray_TYPE(out_arr) == cnp.NPY_INT64
                and cnp.PyArray_IS_C_CONTIGUOUS(out_arr) and cnp.PyArray_ISWRITEABLE(out_arr)
                and cnp.PyArray_DIMS(out_arr)[0] >= total):
            raise ValueError("nms_select: pad_out must be a writeable C-contiguous int64 "
                             f"(rows >= {total}, 3) array")
    cdef int64_t* out = <int64_t*>cnp.PyArray_DATA(out_arr)
    cdef int64_t rows = cnp.PyArray_DIMS(out_arr)[0]
    with nogil:
        for p in range(P):
            for i in range(counts[p]):
                out[3 * r] = p // C
                out[3 * r + 1] = p % C
                out[3 * r + 2] = sel[p * width + i]
                r += 1
        for i in range(3 * r, 3 * rows):
            out[i] = -1
    return out_arr


def nms_select(const floating[:, :, :] boxes, const floating[:, :, :] scores, int center,
               int offset, int64_t cap, double iou_thr, bint has_sthr, double sthr,
               pad_out, int nthreads):
    """ONNX NonMaxSuppression rows (K, 3) [batch, class, box] for non-empty boxes (B, N, 4)
    and scores (B, C, N); at most ``cap`` (0 <= cap <= N) boxes per (batch, class).
    ``pad_out``: None, or the preallocated (rows, 3) int64 output of ``pad=True``
    (rows >= B*C*cap, sized by the caller with exact integers): the selected rows go
    first, the rest is -1."""
    cdef int64_t isz = sizeof(floating)
    return _select(&boxes[0, 0, 0], boxes.shape[0], boxes.shape[1], boxes.strides[0] // isz,
                   boxes.strides[1] // isz, boxes.strides[2] // isz, &scores[0, 0, 0],
                   scores.shape[1], scores.strides[0] // isz, scores.strides[1] // isz,
                   scores.strides[2] // isz, center, offset, cap, iou_thr, has_sthr, sthr,
                   pad_out, False, nthreads)


def nms_batched(const floating[:, :] boxes, const floating[:] scores, const int64_t[:] idxs,
                double iou_thr, int nthreads):
    """Kept indices (score desc, index asc) of class-aware NMS; boxes (N, 4), N > 0."""
    cdef int64_t N = boxes.shape[0]
    cdef int64_t isz = sizeof(floating)
    keep_arr = np.empty(N, dtype=np.int64)
    cdef int64_t[::1] keep = keep_arr
    buf_arr = np.empty(5 * N, dtype=np.float32 if floating is float else np.float64)
    cdef floating[::1] buf = buf_arr
    cdef int64_t n
    with nogil:
        n = c_nms_batched(&boxes[0, 0], N, boxes.strides[0] // isz, boxes.strides[1] // isz,
                          &scores[0], scores.strides[0] // isz, &idxs[0],
                          idxs.strides[0] // sizeof(int64_t), <floating>iou_thr, &buf[0],
                          &keep[0], nthreads)
    return keep_arr[:n].copy()


# ------------------------------------------------ compiled fast paths (_fast.pxd)
cdef inline bint _unit_interval(object v):
    return type(v) is float and 0.0 <= <double>v <= 1.0


cdef inline bint _zero_or_one(object v):
    return type(v) is int and (v == 0 or v == 1)


cdef object _fast(cnp.ndarray b, cnp.ndarray sc, int64_t B, int64_t N, int64_t C,
                  int center, int offset, int64_t cap, double iou, score_threshold,
                  bint index_only):
    """Plain float32/float64 boxes and scores of one dtype (B, N, 4) / (B, C, N), a Python
    float score threshold (not NaN) or None; else None."""
    cdef int typenum = cnp.PyArray_TYPE(b)
    cdef bint has_sthr = score_threshold is not None
    cdef double sthr = 0.0
    if has_sthr:
        if type(score_threshold) is not float or score_threshold != score_threshold:
            return None
        sthr = score_threshold
    if cnp.PyArray_TYPE(sc) != typenum or cap < 1:
        return None
    if typenum == cnp.NPY_FLOAT:
        return _select(<const float*>cnp.PyArray_DATA(b), B, N, 4 * N, 4, 1,
                       <const float*>cnp.PyArray_DATA(sc), C, C * N, N, 1, center, offset,
                       cap, iou, has_sthr, sthr, None, index_only, 1)
    if typenum == cnp.NPY_DOUBLE:
        return _select(<const double*>cnp.PyArray_DATA(b), B, N, 4 * N, 4, 1,
                       <const double*>cnp.PyArray_DATA(sc), C, C * N, N, 1, center, offset,
                       cap, iou, has_sthr, sthr, None, index_only, 1)
    return None


def fast_non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold,
                             score_threshold, center_point_box, offset, pad):
    if not (plain(boxes) and plain(scores)) or not _unit_interval(iou_threshold) \
            or not _zero_or_one(center_point_box) or not _zero_or_one(offset) \
            or pad is not False:
        return None
    cdef cnp.ndarray b = <cnp.ndarray>boxes, sc = <cnp.ndarray>scores
    if cnp.PyArray_NDIM(b) != 3 or cnp.PyArray_NDIM(sc) != 3:
        return None
    cdef cnp.npy_intp* bd = cnp.PyArray_DIMS(b)
    cdef cnp.npy_intp* sd = cnp.PyArray_DIMS(sc)
    if bd[2] != 4 or sd[0] != bd[0] or sd[2] != bd[1]:
        return None
    cdef int64_t cap = bd[1]
    if max_output_boxes_per_class is not None:
        if type(max_output_boxes_per_class) is not int or max_output_boxes_per_class < 0:
            return None
        cap = min(<object>cap, max_output_boxes_per_class)
    return _fast(b, sc, bd[0], bd[1], sd[1], center_point_box, offset, cap, iou_threshold,
                 score_threshold, False)


def fast_nms(boxes, scores, iou_threshold, score_threshold, max_num, offset):
    if not (plain(boxes) and plain(scores)) or not _unit_interval(iou_threshold) \
            or not _zero_or_one(offset):
        return None
    cdef cnp.ndarray b = <cnp.ndarray>boxes, sc = <cnp.ndarray>scores
    if cnp.PyArray_NDIM(b) != 2 or cnp.PyArray_NDIM(sc) != 1 \
            or cnp.PyArray_DIMS(b)[1] != 4 or cnp.PyArray_DIMS(sc)[0] != cnp.PyArray_DIMS(b)[0]:
        return None
    cdef int64_t N = cnp.PyArray_DIMS(b)[0], cap = N
    if max_num is not None:
        if type(max_num) is not int:
            return None
        if max_num >= 0:
            cap = min(<object>N, max_num)
    return _fast(b, sc, 1, N, 1, 0, offset, cap, iou_threshold, score_threshold, True)


def fast_batched_nms(boxes, scores, idxs, iou_threshold):
    """batched_nms of plain float32 or float64 boxes (N, 4) and scores (N,) of one dtype,
    int64 idxs (N,) and a Python float iou_threshold in [0, 1], on one thread; else None.
    16 boxes, 4 classes, in the bench: 8.65 -> 1.75 us (cv2.dnn.NMSBoxesBatched 2.8-2.9)."""
    if not (plain(boxes) and plain(scores) and plain(idxs)) or not _unit_interval(iou_threshold):
        return None
    cdef cnp.ndarray b = <cnp.ndarray>boxes, sc = <cnp.ndarray>scores, ix = <cnp.ndarray>idxs
    cdef int typenum = cnp.PyArray_TYPE(b)
    if cnp.PyArray_NDIM(b) != 2 or cnp.PyArray_DIMS(b)[1] != 4 or cnp.PyArray_NDIM(sc) != 1 \
            or cnp.PyArray_NDIM(ix) != 1 or cnp.PyArray_DIMS(sc)[0] != cnp.PyArray_DIMS(b)[0] \
            or cnp.PyArray_DIMS(ix)[0] != cnp.PyArray_DIMS(b)[0] \
            or cnp.PyArray_TYPE(sc) != typenum or not cnp.PyTypeNum_ISSIGNED(cnp.PyArray_TYPE(ix)) \
            or cnp.PyArray_ITEMSIZE(ix) != sizeof(int64_t):
        return None
    cdef cnp.npy_intp N = cnp.PyArray_DIMS(b)[0]
    cdef const int64_t* ip = <const int64_t*>cnp.PyArray_DATA(ix)
    if typenum == cnp.NPY_FLOAT:
        return _batched(<const float*>cnp.PyArray_DATA(b), <const float*>cnp.PyArray_DATA(sc),
                        ip, N, <double>iou_threshold)
    if typenum == cnp.NPY_DOUBLE:
        return _batched(<const double*>cnp.PyArray_DATA(b), <const double*>cnp.PyArray_DATA(sc),
                        ip, N, <double>iou_threshold)
    return None


cdef object _batched(const floating* boxes, const floating* scores, const int64_t* idxs,
                     cnp.npy_intp N, double iou_thr):
    """fast_batched_nms' kernel call: contiguous inputs, one thread, the GIL held."""
    cdef cnp.npy_intp nbuf = 5 * N
    buf_arr = cnp.PyArray_EMPTY(1, &nbuf, cnp.NPY_FLOAT if floating is float else cnp.NPY_DOUBLE,
                                0)
    cdef floating* buf = <floating*>cnp.PyArray_DATA(<cnp.ndarray>buf_arr)
    keep = cnp.PyArray_EMPTY(1, &N, cnp.NPY_INT64, 0)
    cdef int64_t* k = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>keep)
    cdef cnp.npy_intp n = c_nms_batched(boxes, N, 4, 1, scores, 1, idxs, 1, <floating>iou_thr,
                                        buf, k, 1)
    out = cnp.PyArray_EMPTY(1, &n, cnp.NPY_INT64, 0)
    memcpy(cnp.PyArray_DATA(<cnp.ndarray>out), k, n * sizeof(int64_t))
    return out
