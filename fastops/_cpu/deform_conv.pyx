# Typed entry points for the deformable-convolution kernel in include/deform_conv.hpp
# (also fastops.onnx's plain Conv: offset None) and the depthwise one in include/conv.hpp,
# plus the one piece of run-time set-up the first needs: a single-threaded CBLAS GEMM
# (float64 everywhere, float32 in the baseline build: the x86-64-v4 build runs
# include/deform_conv.hpp's gemm_nt_zmm, twice OpenBLAS's Haswell kernel there, and the
# x86-64-v3 build include/conv.hpp's packed AVX2 GEMM).
# Inputs are validated and shaped by fastops.conv and fastops.onnx._nn; the kernel calls
# release the GIL.
#
# Which GEMM.  The kernel calls one GEMM per (tile, group) from inside its OpenMP
# threads, so the BLAS must run single-threaded there: OpenBLAS's own pthread pool under
# OpenMP threads oversubscribes (measured 3-5x slower on the 2-core VM), and OpenBLAS
# serializes concurrent multi-threaded calls behind a lock.  fastops has no BLAS
# dependency, but NumPy's wheels bundle OpenBLAS (ILP64, symbols prefixed "scipy_" and
# suffixed "64_"), already loaded in the process: _find_blas() takes sgemm/dgemm and the
# thread-count functions from that library with ctypes, checks them on a small product,
# and hands the function addresses to the kernel.  While a call runs, OpenBLAS's
# process-wide thread count is 1 (_OneBlasThread, reference-counted across concurrent
# calls, restored afterwards); fastops.set_num_threads governs the OpenMP threads that
# call it.  (OpenBLAS 0.3.31's openblas_set_num_threads_local is process-wide too in
# this pthreads build, checked.)  Without such a library (NumPy built against
# Accelerate, MKL, or from source) the kernel uses its portable builtin GEMM (2.5-3x
# slower overall on 2x64x64x64 -> 64, 3x3).
#
# Options not taken.  scipy.linalg.cython_blas would add a runtime dependency for one op
# (and SciPy is not installed in this project's environment).  Calling numpy.matmul per
# tile from Python alternates OpenMP's and OpenBLAS's thread pools: with 2 OpenBLAS
# threads the GEMM of 2x64x64x64 -> 64 alone took 44-48 ms while the whole op here took
# 32-36 ms in the same (busy) minute; on 1x256x100x136 -> 256, where the GEMM dominates,
# that GEMM alone (271-292 ms) left too little room (the whole op: 311-329 ms) for the
# sampling that such a design adds back, serially.  In quiet minutes the op runs 11-14
# and 155 ms on 2 threads (fastops/_bench/conv.py).
import contextlib
import ctypes
import glob
import os
import threading

import numpy as np

from cython cimport floating
from libc.stdint cimport int64_t, uintptr_t
from libcpp cimport bool as cbool

cimport numpy as cnp

from fastops._cpu._fast cimport plain, small_output
from fastops._threads import get_num_threads

cnp.import_array()

cdef extern from "deform_conv.hpp" namespace "fastops" nogil:
    cdef cppclass DcnGemm "fastops::DcnGemm":
        uintptr_t sgemm, dgemm
        cbool ilp64
    void c_deform_conv2d "fastops::deform_conv2d"[T](
        const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN, int64_t sxC,
        int64_t sxH, int64_t sxW, const T* off, int64_t soN, int64_t soC, int64_t soH,
        int64_t soW, const T* mask, int64_t smN, int64_t smC, int64_t smH, int64_t smW,
        const T* weight, int64_t M, int64_t KH, int64_t KW, int64_t swM, int64_t swC,
        int64_t swH, int64_t swW, const T* bias, int64_t sb, int64_t stride_h,
        int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w,
        int64_t groups, int64_t dgroups, T* out, int64_t OH, int64_t OW, const DcnGemm& gemm,
        int gemm_kind, int nthreads) except +   # std::bad_alloc (scratch) -> MemoryError
    void c_gemm_nt "fastops::dcn_gemm_nt"[T](
        const DcnGemm& g, int kind, int64_t M, int64_t N, int64_t K, const T* A,
        int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc, T* scratch,
        const T* zpacked) except +
    int c_gemm_resolve "fastops::dcn_gemm_resolve"[T](
        const DcnGemm& g, int kind, int64_t M, int64_t N, int64_t K, int64_t ld)

cdef extern from "conv.hpp" namespace "fastops" nogil:
    void c_depthwise_conv2d "fastops::depthwise_conv2d"[T](
        const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN, int64_t sxC,
        int64_t sxH, int64_t sxW, const T* w, int64_t KH, int64_t KW, int64_t swC,
        int64_t swH, int64_t swW, const T* bias, int64_t sb, int64_t stride_h,
        int64_t stride_w, int64_t pad_t, int64_t pad_l, int64_t dil_h, int64_t dil_w,
        T* out, int64_t OH, int64_t OW, int act, int nthreads) except +
    void c_im2col "fastops::im2col"[T](
        const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN, int64_t sxC,
        int64_t sxH, int64_t sxW, int64_t KH, int64_t KW, int64_t stride_h,
        int64_t stride_w, int64_t pad_t, int64_t pad_l, int64_t dil_h, int64_t dil_w,
        T* cols, int64_t OH, int64_t OW, int nthreads) except +
    cbool kPackedGemm "fastops::kPackedGemm"
    int64_t c_gemm_packed_size "fastops::gemm_packed_size"(int64_t M, int64_t K)
    void c_gemm_pack "fastops::gemm_pack"(
        const float* a, int64_t M, int64_t K, int64_t saM, int64_t saK, float* packed,
        int nthreads) except +
    void c_gemm_packed "fastops::gemm_packed"(
        const float* packed, int64_t M, int64_t K, const float* b, int64_t N, int64_t sbn,
        int64_t ldb, cbool b_trans, int64_t P, const float* row_bias,
        const float* col_bias, int act, float* out, int nthreads) except +
    void c_conv_packed "fastops::conv_packed"(
        const float* packed, int64_t M, const float* x, int64_t N, int64_t C, int64_t H,
        int64_t W, int64_t sxN, int64_t sxC, int64_t sxH, int64_t sxW, int64_t KH,
        int64_t KW, int64_t stride_h, int64_t stride_w, int64_t pad_t, int64_t pad_l,
        int64_t dil_h, int64_t dil_w, const float* row_bias, int act, float* out,
        int64_t OH, int64_t OW, int nthreads) except +

# Does this build have the packed GEMM (x86-64-v3 only; include/conv.hpp)?
PACKED_GEMM = kPackedGemm


cdef DcnGemm _gemm
_blas_info = None           # (library path, get_threads, set_threads) of the BLAS found
# the GEMM asked for, by name; the kernel resolves it per call (include/deform_conv.hpp
# dcn_gemm_resolve): "avx512" falls back to the packed AVX2 GEMM ("avx2") where the build
# has no AVX-512 GEMM, both to the BLAS where the build has neither or the dtype is
# float64, and the BLAS to the builtin GEMM, so the default asks for the best and gets
# the best this build and machine have
_KINDS = {"builtin": 0, "blas": 1, "avx512": 2, "avx2": 3}
_choice = "avx512"
_guard_lock = threading.Lock()
_guard_depth = 0
_guard_saved = 1
_NO_GUARD = contextlib.nullcontext()

# (sgemm, dgemm, ILP64?, get threads, set threads) symbol names, NumPy's wheel spelling first
_SYMBOLS = [
    ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", True,
     "scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("cblas_sgemm64_", "cblas_dgemm64_", True,
     "openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("cblas_sgemm", "cblas_dgemm", False, "openblas_get_num_threads", "openblas_set_num_threads"),
]


def _candidate_libraries():
    """OpenBLAS shipped inside the NumPy installation (Linux/Windows wheels: numpy.libs
    beside the package; macOS wheels: numpy/.dylibs)."""
    import numpy
    pkg = os.path.dirname(os.path.abspath(numpy.__file__))
    found = []
    for d in (os.path.join(os.path.dirname(pkg), "numpy.libs"), os.path.join(pkg, ".dylibs")):
        found.extend(sorted(glob.glob(os.path.join(d, "*openblas*"))))
    return found


def _fnptr(lib, name):
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def _selftest():
    """A 5x7x300 product in both precisions against NumPy's matmul (catches an ABI
    mismatch, e.g. an LP64 library taken for ILP64)."""
    import numpy as np
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((5, 300)).astype(dt)
        b = rng.standard_normal((7, 300)).astype(dt)
        c = np.full((5, 9), np.nan, dt)
        _gemm_nt(a, b, c, "blas")
        want = a.astype(np.float64) @ b.astype(np.float64).T
        if not np.allclose(c[:, :7], want, rtol=1e-4, atol=1e-3) or \
                not np.isnan(c[:, 7:]).all():
            return False
    return True


def _find_blas():
    global _blas_info
    for path in _candidate_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for s_name, d_name, ilp64, get_name, set_name in _SYMBOLS:
            s, d = _fnptr(lib, s_name), _fnptr(lib, d_name)
            if not (s and d) or not (_fnptr(lib, get_name) and _fnptr(lib, set_name)):
                continue   # a BLAS whose threads cannot be controlled is not used
            getter = getattr(lib, get_name)
            setter = getattr(lib, set_name)
            getter.restype = ctypes.c_int
            getter.argtypes = []
            setter.restype = None
            setter.argtypes = [ctypes.c_int]
            _gemm.sgemm = s
            _gemm.dgemm = d
            _gemm.ilp64 = ilp64
            _blas_info = (path, getter, setter)
            try:
                ok = _selftest()
            except Exception:
                ok = False
            if ok:
                return
            _blas_info = None
    _gemm.sgemm = 0
    _gemm.dgemm = 0
    _blas_info = None


def gemm_backend(dtype=np.float32):
    """The GEMM a call in dtype (float32 or float64) runs now: "avx512", "avx2",
    "blas:<library path>" or "builtin"."""
    cdef int kind
    if np.dtype(dtype) == np.float32:
        kind = c_gemm_resolve[float](_gemm, _KINDS[_choice], 1, 1, 1, 1)
    else:
        kind = c_gemm_resolve[double](_gemm, _KINDS[_choice], 1, 1, 1, 1)
    return {0: "builtin", 1: f"blas:{_blas_info[0] if _blas_info else ''}", 2: "avx512",
            3: "avx2"}[kind]


def set_gemm(str which):
    """Choose the GEMM ("avx512", "avx2", "blas" or "builtin"; for tests and benchmarks);
    returns the previous choice.  "avx512" where this build has none is "avx2", "avx2"
    where it has none (or in float64) is "blas"; "blas" without a usable library is
    "builtin"."""
    global _choice
    if which not in _KINDS:
        raise ValueError(f"set_gemm: which={which!r} is not 'avx512', 'avx2', 'blas' or "
                         "'builtin'")
    before = _choice
    _choice = which
    return before


class _OneBlasThread:
    """OpenBLAS's thread count is 1 while any kernel call runs (first entrant saves it,
    last leaver restores it)."""

    def __enter__(self):
        global _guard_depth, _guard_saved
        if _blas_info is None:
            return self
        with _guard_lock:
            if _guard_depth == 0:
                _guard_saved = _blas_info[1]()
                if _guard_saved != 1:
                    _blas_info[2](1)
            _guard_depth += 1
        return self

    def __exit__(self, *exc):
        global _guard_depth
        if _blas_info is None:
            return False
        with _guard_lock:
            _guard_depth -= 1
            if _guard_depth == 0 and _guard_saved != 1:
                _blas_info[2](_guard_saved)
        return False


def _gemm_nt(const floating[:, ::1] a, const floating[:, ::1] b, floating[:, ::1] c,
             str which):
    """c[:, :b.shape[0]] = a . b^T through the kernel's GEMM entry with the GEMM `which`
    resolves to (tests, self-test)."""
    cdef int64_t M = a.shape[0], N = b.shape[0], K = a.shape[1]
    cdef int64_t ld = max(K, c.shape[1])
    cdef int kind
    cdef floating* scratch = NULL         # the kernel's entry allocates both
    cdef const floating* zpacked = NULL
    if floating is float:
        kind = c_gemm_resolve[float](_gemm, _KINDS[which], M, N, K, ld)
    else:
        kind = c_gemm_resolve[double](_gemm, _KINDS[which], M, N, K, ld)
    with _OneBlasThread():
        with nogil:
            c_gemm_nt(_gemm, kind, M, N, K, &a[0, 0], K, &b[0, 0], b.shape[1], &c[0, 0],
                      c.shape[1], scratch, zpacked)


cdef inline int64_t _s(Py_ssize_t stride, Py_ssize_t item) noexcept nogil:
    return stride // item


def deform_conv2d(const floating[:, :, :, :] x, const floating[:, :, :, :] offset,
                  const floating[:, :, :, :] mask, const floating[:, :, :, :] weight,
                  const floating[:] bias, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                  int64_t pad_w, int64_t dil_h, int64_t dil_w, int64_t groups,
                  int64_t deform_groups, floating[:, :, :, ::1] out, int nthreads):
    """x (N, C, H, W), offset (N, 2*dg*kh*kw, OH, OW) or None (a plain convolution,
    deform_groups 1, no mask: fastops.onnx's Conv), mask (N, dg*kh*kw, OH, OW) or None,
    weight (M, C/groups, kh, kw), bias (M,) or None: any element strides, all in the
    compute type.  out (N, M, OH, OW) contiguous with N, M, OH, OW >= 1; pad_h/pad_w are
    the top/left pads (the bottom/right ones only set OH/OW)."""
    cdef Py_ssize_t isz = sizeof(floating)
    # zero-size axes (C, H or W = 0): the data pointer of the empty view, never read
    cdef const floating* xp = &x[0, 0, 0, 0]
    cdef const floating* wp = &weight[0, 0, 0, 0]
    cdef const floating* op = NULL
    cdef const floating* mp = NULL
    cdef const floating* bp = NULL
    cdef int64_t soN = 0, soC = 0, soH = 0, soW = 0
    cdef int64_t smN = 0, smC = 0, smH = 0, smW = 0, sb = 0
    if offset is not None:
        op = &offset[0, 0, 0, 0]
        soN = _s(offset.strides[0], isz); soC = _s(offset.strides[1], isz)
        soH = _s(offset.strides[2], isz); soW = _s(offset.strides[3], isz)
    if mask is not None:
        mp = &mask[0, 0, 0, 0]
        smN = _s(mask.strides[0], isz); smC = _s(mask.strides[1], isz)
        smH = _s(mask.strides[2], isz); smW = _s(mask.strides[3], isz)
    if bias is not None:
        bp = &bias[0]
        sb = _s(bias.strides[0], isz)
    cdef int kind = _KINDS[_choice]
    with _OneBlasThread():
        with nogil:
            c_deform_conv2d(
                xp, x.shape[0], x.shape[1], x.shape[2], x.shape[3], _s(x.strides[0], isz),
                _s(x.strides[1], isz), _s(x.strides[2], isz), _s(x.strides[3], isz),
                op, soN, soC, soH, soW,
                mp, smN, smC, smH, smW,
                wp, weight.shape[0], weight.shape[2], weight.shape[3],
                _s(weight.strides[0], isz), _s(weight.strides[1], isz),
                _s(weight.strides[2], isz), _s(weight.strides[3], isz),
                bp, sb, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, deform_groups,
                &out[0, 0, 0, 0], out.shape[2], out.shape[3], _gemm, kind, nthreads)


def depthwise_conv2d(const floating[:, :, :, :] x, const floating[:, :, :, :] weight,
                     const floating[:] bias, int64_t stride_h, int64_t stride_w,
                     int64_t pad_t, int64_t pad_l, int64_t dil_h, int64_t dil_w,
                     floating[:, :, :, ::1] out, int act, int nthreads):
    """x (N, C, H, W), weight (C, 1, kh, kw), bias (C,) or None, any element strides;
    out (N, C, OH, OW) contiguous with N, C, OH, OW, kh, kw >= 1; act a ConvAct
    (include/conv.hpp)."""
    cdef Py_ssize_t isz = sizeof(floating)
    cdef const floating* bp = NULL
    cdef int64_t sb = 0
    if bias is not None:
        bp = &bias[0]
        sb = _s(bias.strides[0], isz)
    with nogil:
        c_depthwise_conv2d(
            &x[0, 0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.shape[3],
            _s(x.strides[0], isz), _s(x.strides[1], isz), _s(x.strides[2], isz),
            _s(x.strides[3], isz), &weight[0, 0, 0, 0], weight.shape[2], weight.shape[3],
            _s(weight.strides[0], isz), _s(weight.strides[2], isz),
            _s(weight.strides[3], isz), bp, sb, stride_h, stride_w, pad_t, pad_l, dil_h,
            dil_w, &out[0, 0, 0, 0], out.shape[2], out.shape[3], act, nthreads)


def im2col(const floating[:, :, :, :] x, int64_t kh, int64_t kw, int64_t stride_h,
           int64_t stride_w, int64_t pad_t, int64_t pad_l, int64_t dil_h, int64_t dil_w,
           floating[:, :, ::1] cols, int64_t OH, int64_t OW, int nthreads):
    """cols (N, C * kh * kw, OH * OW) = the im2col matrix of x (N, C, H, W), any
    element strides (include/conv.hpp)."""
    cdef Py_ssize_t isz = sizeof(floating)
    cdef int64_t N = x.shape[0], C = x.shape[1]
    if kh < 1 or kw < 1 or stride_h < 1 or stride_w < 1 or dil_h < 1 or dil_w < 1 or \
            OH < 0 or OW < 0:
        raise ValueError("im2col: kernel, strides and dilations must be >= 1")
    if cols.shape[0] != N or cols.shape[1] != C * kh * kw or cols.shape[2] != OH * OW:
        raise ValueError(f"im2col: cols has shape {(cols.shape[0], cols.shape[1], cols.shape[2])}"
                         f", expected {(N, C * kh * kw, OH * OW)}")
    if cols.size == 0:
        return
    if x.shape[2] == 0 or x.shape[3] == 0:
        cols[:, :, :] = 0
        return
    with nogil:
        c_im2col(&x[0, 0, 0, 0], N, C, x.shape[2], x.shape[3], _s(x.strides[0], isz),
                 _s(x.strides[1], isz), _s(x.strides[2], isz), _s(x.strides[3], isz), kh, kw,
                 stride_h, stride_w, pad_t, pad_l, dil_h, dil_w, &cols[0, 0, 0], OH, OW,
                 nthreads)


def gemm_pack(const float[:, :] a, int nthreads=1):
    """The (M, K) float32 matrix as gemm_packed's panels (include/conv.hpp)."""
    cdef int64_t M = a.shape[0], K = a.shape[1]
    packed = np.empty(c_gemm_packed_size(M, K), dtype=np.float32)
    cdef float[::1] pv = packed
    if packed.size:
        with nogil:
            c_gemm_pack(&a[0, 0], M, K, _s(a.strides[0], 4), _s(a.strides[1], 4), &pv[0],
                        nthreads)
    return packed


def gemm_packed(const float[::1] packed, int64_t M, const float[:, :, :] b,
                const float[::1] row_bias, const float[::1] col_bias, int act,
                float[:, :, ::1] out, int nthreads, cbool b_trans=False):
    """out (N, M, P) = act(A @ B[n] + row_bias[:, None] + col_bias) with A packed by
    gemm_pack; B = b (N, K, P), or b's transpose (b (N, P, K)) with b_trans; b's last
    axis contiguous; biases (M,) / (P,) or None; act a ConvAct.  Only where
    PACKED_GEMM."""
    if not kPackedGemm:
        raise RuntimeError("gemm_packed: this build has no packed GEMM (PACKED_GEMM)")
    cdef int64_t N = b.shape[0]
    cdef int64_t K = b.shape[2] if b_trans else b.shape[1]
    cdef int64_t P = b.shape[1] if b_trans else b.shape[2]
    if packed.shape[0] != c_gemm_packed_size(M, K):
        raise ValueError(f"gemm_packed: packed has {packed.shape[0]} elements, expected "
                         f"{c_gemm_packed_size(M, K)} for a ({M}, {K}) matrix")
    if out.shape[0] != N or out.shape[1] != M or out.shape[2] != P:
        raise ValueError(f"gemm_packed: out has shape "
                         f"{(out.shape[0], out.shape[1], out.shape[2])}, expected {(N, M, P)}")
    if row_bias is not None and row_bias.shape[0] != M:
        raise ValueError(f"gemm_packed: row_bias has {row_bias.shape[0]} elements, "
                         f"expected {M}")
    if col_bias is not None and col_bias.shape[0] != P:
        raise ValueError(f"gemm_packed: col_bias has {col_bias.shape[0]} elements, "
                         f"expected {P}")
    if N == 0 or M == 0 or P == 0:
        return
    if K and (b.strides[2] != 4 or b.strides[1] % 4 or b.strides[0] % 4 or
              b.strides[1] < 0 or b.strides[0] < 0):
        raise ValueError("gemm_packed: b's last axis must be contiguous")
    cdef const float* rp = NULL
    cdef const float* cp = NULL
    cdef const float* pp = NULL
    cdef const float* bp = NULL
    cdef int64_t sbn = 0, ldb = 0
    if row_bias is not None:
        rp = &row_bias[0]
    if col_bias is not None:
        cp = &col_bias[0]
    if K:
        pp = &packed[0]
        bp = &b[0, 0, 0]
        sbn = b.strides[0] // 4
        ldb = b.strides[1] // 4
    with nogil:
        c_gemm_packed(pp, M, K, bp, N, sbn, ldb, b_trans, P, rp, cp, act, &out[0, 0, 0],
                      nthreads)


def conv_packed(const float[::1] packed, const float[:, :, :, :] x, int64_t kh, int64_t kw,
                int64_t stride_h, int64_t stride_w, int64_t pad_t, int64_t pad_l,
                int64_t dil_h, int64_t dil_w, const float[::1] row_bias, int act,
                float[:, :, :, ::1] out, int nthreads):
    """out (N, M, OH, OW) = act(conv(x, A) + row_bias[:, None, None]) with A (M, C * kh *
    kw) packed by gemm_pack: gemm_packed on x's im2col matrix, never materialized; x
    (N, C, H, W) float32 at any element strides; row_bias (M,) or None; act a ConvAct.
    Only where PACKED_GEMM."""
    if not kPackedGemm:
        raise RuntimeError("conv_packed: this build has no packed GEMM (PACKED_GEMM)")
    cdef int64_t N = x.shape[0], C = x.shape[1], M = out.shape[1]
    if kh < 1 or kw < 1 or stride_h < 1 or stride_w < 1 or dil_h < 1 or dil_w < 1:
        raise ValueError("conv_packed: kernel, strides and dilations must be >= 1")
    if pad_t < 0 or pad_l < 0:
        raise ValueError("conv_packed: pads must be >= 0")
    if packed.shape[0] != c_gemm_packed_size(M, C * kh * kw):
        raise ValueError(f"conv_packed: packed has {packed.shape[0]} elements, expected "
                         f"{c_gemm_packed_size(M, C * kh * kw)} for a ({M}, {C * kh * kw}) "
                         f"weight")
    if out.shape[0] != N:
        raise ValueError(f"conv_packed: out has {out.shape[0]} images, x {N}")
    if row_bias is not None and row_bias.shape[0] != M:
        raise ValueError(f"conv_packed: row_bias has {row_bias.shape[0]} elements, "
                         f"expected {M}")
    if x.size == 0:
        raise ValueError("conv_packed: x must not be empty")
    for i in range(4):
        if x.strides[i] % 4:
            raise ValueError("conv_packed: x's strides must be multiples of 4 bytes")
    if out.size == 0:
        return
    cdef const float* rp = NULL
    if row_bias is not None:
        rp = &row_bias[0]
    with nogil:
        c_conv_packed(&packed[0], M, &x[0, 0, 0, 0], N, C, x.shape[2], x.shape[3],
                      _s(x.strides[0], 4), _s(x.strides[1], 4), _s(x.strides[2], 4),
                      _s(x.strides[3], 4), kh, kw, stride_h, stride_w, pad_t, pad_l, dil_h,
                      dil_w, rp, act, &out[0, 0, 0, 0], out.shape[2], out.shape[3],
                      nthreads)



# ------------------------------------------------ compiled fast path (_fast.pxd)
cdef int64_t _small_int(object v, int64_t lo):
    """v when it is a Python int in [lo, 2**31), else -1."""
    if type(v) is not int or v < lo or v >= 2147483648:
        return -1
    return <int64_t>v


cdef bint _small_ints(object v, int64_t lo, int n, int64_t* out):
    """An int (every one of the n values) or a tuple of n such ints into out."""
    cdef int k
    if type(v) is int:
        out[0] = _small_int(v, lo)
        for k in range(1, n):
            out[k] = out[0]
        return out[0] >= 0
    if type(v) is not tuple or len(v) != n:
        return False
    for k in range(n):
        out[k] = _small_int(v[k], lo)
        if out[k] < 0:
            return False
    return True


def fast_deform_conv2d(x, offset, weight, bias, stride, padding, dilation, groups,
                       deform_groups, mask, im2col_step, bint mask_required):
    """deform_conv2d / modulated_deform_conv2d (mask_required) of plain float32 arrays,
    Python ints or tuples of them, shapes that fit, a small output; else None.  The
    general path's validation was 10-12 us of a 26 us call (1x4x8x8 -> 4, 3x3; onnxruntime's
    DeformConv 37 us): 10.4 us with this path."""
    if not (plain(x) and plain(offset) and plain(weight)) \
            or (bias is not None and not plain(bias)) or (mask is not None and not plain(mask)) \
            or (mask is None and mask_required):
        return None
    cdef cnp.ndarray xa = <cnp.ndarray>x, oa = <cnp.ndarray>offset, wa = <cnp.ndarray>weight
    cdef cnp.ndarray ba = <cnp.ndarray>bias if bias is not None else None
    cdef cnp.ndarray ma = <cnp.ndarray>mask if mask is not None else None
    for a in (xa, oa, wa, ba, ma):
        if a is not None and cnp.PyArray_TYPE(<cnp.ndarray>a) != cnp.NPY_FLOAT:
            return None
    cdef int64_t st[2]
    cdef int64_t dil[2]
    cdef int64_t pad[4]
    cdef int64_t g = _small_int(groups, 1), dg = _small_int(deform_groups, 1)
    if g < 0 or dg < 0 or _small_int(im2col_step, 1) < 0 or not _small_ints(stride, 1, 2, st) \
            or not _small_ints(dilation, 1, 2, dil):
        return None
    if not _small_ints(padding, 0, 4, pad):
        if not _small_ints(padding, 0, 2, pad):
            return None
        pad[2], pad[3] = pad[0], pad[1]
    if cnp.PyArray_NDIM(xa) != 4 or cnp.PyArray_NDIM(oa) != 4 or cnp.PyArray_NDIM(wa) != 4 \
            or (ba is not None and cnp.PyArray_NDIM(ba) != 1) \
            or (ma is not None and cnp.PyArray_NDIM(ma) != 4):
        return None
    cdef cnp.npy_intp* xd = cnp.PyArray_DIMS(xa)
    cdef cnp.npy_intp* wd = cnp.PyArray_DIMS(wa)
    cdef int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3]
    cdef int64_t M = wd[0], KH = wd[2], KW = wd[3]
    if C % g or wd[1] * g != C or M % g or C % dg:
        return None
    # (_out_extent: every value below 2**31, so nothing here overflows)
    cdef int64_t span_h = (KH - 1) * dil[0] + 1, span_w = (KW - 1) * dil[1] + 1
    cdef int64_t OH = H + pad[0] + pad[2] - span_h, OW = W + pad[1] + pad[3] - span_w
    if OH < 0 or OW < 0:
        return None
    OH = OH // st[0] + 1
    OW = OW // st[1] + 1
    cdef int64_t taps = dg * KH * KW
    cdef cnp.npy_intp* od = cnp.PyArray_DIMS(oa)
    if od[0] != N or od[1] != 2 * taps or od[2] != OH or od[3] != OW:
        return None
    cdef cnp.npy_intp* md
    if ma is not None:
        md = cnp.PyArray_DIMS(ma)
        if md[0] != N or md[1] != taps or md[2] != OH or md[3] != OW:
            return None
    if ba is not None and cnp.PyArray_DIMS(ba)[0] != M:
        return None
    cdef cnp.npy_intp dims[4]
    dims[0], dims[1], dims[2], dims[3] = N, M, OH, OW
    if not small_output(N * M * OH * OW):
        return None
    out = cnp.PyArray_EMPTY(4, dims, cnp.NPY_FLOAT, 0)
    cdef const float* mp = <const float*>cnp.PyArray_DATA(ma) if ma is not None else NULL
    cdef const float* bp = <const float*>cnp.PyArray_DATA(ba) if ba is not None else NULL
    cdef const float* xp = <const float*>cnp.PyArray_DATA(xa)
    cdef const float* op = <const float*>cnp.PyArray_DATA(oa)
    cdef const float* wp = <const float*>cnp.PyArray_DATA(wa)
    cdef float* outp = <float*>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef int kind = _KINDS[_choice], nt = get_num_threads()
    # OpenBLAS's thread guard where the GEMM may be OpenBLAS's (a build without fastops'
    # own float32 GEMM); the kernel picks its threads by the work, as from the general path
    guard = _OneBlasThread() if c_gemm_resolve[float](_gemm, kind, 1, 1, 1, 1) == 1 else _NO_GUARD
    with guard, nogil:
        c_deform_conv2d(xp, N, C, H, W, C * H * W, H * W, W, 1,
                        op, 2 * taps * OH * OW, OH * OW, OW, 1,
                        mp, taps * OH * OW, OH * OW, OW, 1,
                        wp, M, KH, KW, (C // g) * KH * KW, KH * KW, KW, 1,
                        bp, 1, st[0], st[1], pad[0], pad[1], dil[0], dil[1], g, dg,
                        outp, OH, OW, _gemm, kind, nt)
    return out


_find_blas()
