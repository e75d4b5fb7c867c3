# Thin typed entry point for the RoIAlign kernel in include/roi_align.hpp.
# Inputs are validated and shaped by fastops.detection.roi_align; this only releases the GIL.
from cython cimport floating
from libc.stdint cimport int64_t
from libcpp cimport bool as cbool

cdef extern from "roi_align.hpp" namespace "fastops" nogil:
    void c_roi_align "fastops::roi_align"[T](
        const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sN, int64_t sC, int64_t sH,
        int64_t sW, const T* boxes, const int64_t* batch, int64_t K, int64_t PH, int64_t PW,
        T scale, int64_t sampling_ratio, int mode, cbool aligned, T* out,
        int nthreads) except +   # std::bad_alloc -> MemoryError (tables of huge RoIs)


def roi_align(const floating[:, :, :, :] x, const floating[:, ::1] boxes,
              const int64_t[::1] batch, double spatial_scale, int64_t sampling_ratio,
              int mode, bint aligned, floating[:, :, :, ::1] out, int nthreads):
    """x (N, C, H, W) with H, W >= 1, any element strides; boxes (K, 4) [x1, y1, x2, y2];
    batch (K,) indices in [0, N); out (K, C, PH, PW) with K, C >= 1.
    mode: 0 avg, 1 max (of interpolated samples), 2 onnx_max."""
    cdef int64_t isz = sizeof(floating)
    cdef floating scale = <floating>spatial_scale
    with nogil:
        c_roi_align(&x[0, 0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.shape[3],
                    x.strides[0] // isz, x.strides[1] // isz, x.strides[2] // isz,
                    x.strides[3] // isz,
                    &boxes[0, 0], &batch[0], boxes.shape[0], out.shape[2], out.shape[3],
                    scale, sampling_ratio, mode, aligned, &out[0, 0, 0, 0], nthreads)
