# Thin typed entry points for the NMS kernels in include/nms.hpp.
# Inputs are validated, cast to one compute dtype (float32/float64) and shaped by
# fastops.detection; these allocate the data-dependent outputs and release the GIL.
from cython cimport floating
from libc.stdint cimport int64_t
from libcpp cimport bool as cbool

import numpy as np

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


def nms_select(const floating[:, :, :] boxes, const floating[:, :, :] scores, int center,
               int offset, int64_t cap, double iou_thr, bint has_sthr, double sthr,
               pad_out, int nthreads):
    """ONNX NonMaxSuppression rows (K, 3) [batch, class, box] for non-empty boxes (B, N, 4)
    and scores (B, C, N); at most ``cap`` (0 <= cap <= N) boxes per (batch, class).
    ``pad_out``: None, or the preallocated (rows, 3) int64 output of ``pad=True``
    (rows >= B*C*cap, sized by the caller with exact integers): the selected rows go
    first, the rest is -1."""
    cdef int64_t B = boxes.shape[0], N = boxes.shape[1], C = scores.shape[1]
    cdef int64_t isz = sizeof(floating)
    cdef int64_t P = B * C
    cdef int64_t[::1] counts = np.zeros(P, dtype=np.int64)
    sel_arr = np.empty((P, max(cap, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] sel = sel_arr
    buf_arr = np.empty(B * 5 * N, dtype=np.float32 if floating is float else np.float64)
    cdef floating[::1] buf = buf_arr
    if cap > 0:
        with nogil:
            c_nms_onnx(&boxes[0, 0, 0], B, N, boxes.strides[0] // isz,
                       boxes.strides[1] // isz, boxes.strides[2] // isz, &scores[0, 0, 0], C,
                       scores.strides[0] // isz, scores.strides[1] // isz,
                       scores.strides[2] // isz, center, <floating>offset, cap,
                       <floating>iou_thr, has_sthr, <floating>sthr, &buf[0], cap, &sel[0, 0],
                       &counts[0], nthreads)
    cdef int64_t total = 0, p, i, r = 0
    for p in range(P):
        total += counts[p]
    out_arr = np.empty((total, 3), dtype=np.int64) if pad_out is None else pad_out
    cdef int64_t[:, ::1] out = out_arr
    cdef int64_t rows = out.shape[0]
    with nogil:
        for p in range(P):
            for i in range(counts[p]):
                out[r, 0] = p // C
                out[r, 1] = p % C
                out[r, 2] = sel[p, i]
                r += 1
        for i in range(r, rows):
            out[i, 0] = -1
            out[i, 1] = -1
            out[i, 2] = -1
    return out_arr


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
