"""fastops.cv.resize against cv2.resize (opencv-python-headless 5.0: bit for bit with IPP
off, the documented tolerances with IPP on) and against a NumPy transcription of OpenCV's
resize.cpp written without fastops code (tests/reference/cv_resize.py, bit for bit), over
many sizes, scales, channel counts and every dtype; cv2's API rules (dst, fx/fy, flags);
hostile input; thread-count and SIMD-path invariance."""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import fastops.cv as fcv
from tests.conftest import GPU, guarded, peer, to_numpy
from tests.reference.cv_resize import cv_resize_ref

FLAGS = {"NEAREST": 0, "LINEAR": 1, "CUBIC": 2, "AREA": 3, "LINEAR_EXACT": 5,
         "NEAREST_EXACT": 6}
DTYPES = ["uint8", "uint16", "int16", "float32", "float64"]

# source shapes (H, W) and sizes (width, height): up, down, mixed, odd, 2x, 3x, one pixel
SHAPES = [(37, 53), (20, 30), (7, 5), (1, 9), (9, 1), (24, 33), (2, 2), (1, 1)]
SIZES = [(70, 41), (26, 18), (13, 9), (3, 2), (1, 1), (100, 3), (16, 12), (10, 15),
         (11, 8), (18, 12), (4, 1), (66, 60), (5, 7)]
SCALES = [(0.5, 0.5), (1 / 3, 0.25), (2.0, 3.0), (0.7, 1.3), (3.0, 1 / 3), (1.01, 0.99)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _rows_before_a_page(img, pad):
    """A copy of image `img` (h, w, C) whose rows lie `pad` bytes further apart than their
    length and whose last row ends just before an unreadable page (tests/conftest.guarded)."""
    h, w, C = img.shape
    size = img.itemsize
    row = w * C * size
    src = guarded(np.zeros((h - 1) * (row + pad) + row, np.uint8), "end")
    x = np.ndarray(img.shape, img.dtype, src, strides=(row + pad, C * size, size))
    x[...] = img
    return x


def _image(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.random(shape) * 300 - 50).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


@contextlib.contextmanager
def _ipp(cv2, on):
    before = cv2.ipp.useIPP()
    cv2.ipp.setUseIPP(on)
    try:
        yield
    finally:
        cv2.ipp.setUseIPP(before)


def _cases(shapes=SHAPES, sizes=SIZES, scales=SCALES):
    for (h, w) in shapes:
        for ds in sizes:
            yield (h, w), ds, 0, 0
        for fx, fy in scales:
            if round(w * fx) >= 1 and round(h * fy) >= 1:
                yield (h, w), None, fx, fy


def _check(got, want, where):
    """Bit for bit (NaN == NaN)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (where, got.shape, want.shape)
    if not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
        bad = np.argwhere(~((got == want) | ((got != got) & (want != want))))
        raise AssertionError(f"{where}: {len(bad)} values differ, first at {bad[0]}: "
                             f"got {got[tuple(bad[0])]!r} want {want[tuple(bad[0])]!r}")


# ------------------------------------------------------------------ reference
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("flag", list(FLAGS))
def test_against_reference(dtype, flag):
    """Every flag, dtype, channel count 1-5, size and scale against the transcription of
    OpenCV's code (no cv2 needed): bit for bit."""
    rng = _rng(1)
    for (h, w), ds, fx, fy in _cases():
        for C in (1, 2, 3, 4, 5):
            img = _image(rng, (h, w, C), dtype)
            if C == 1 and h % 2:
                img = img[:, :, 0]                 # 2-D images too
            want = cv_resize_ref(img, ds, fx, fy, FLAGS[flag])
            got = fcv.resize(img, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
            _check(got, want, (flag, img.shape, ds, fx, fy))


def test_reference_many_random_sizes():
    """uint8, random sizes and scales (both directions, odd, large factors)."""
    rng = _rng(2)
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 60, 2))
        C = int(rng.integers(1, 5))
        img = _image(rng, (h, w, C), "uint8")
        flag = str(rng.choice(list(FLAGS)))
        if rng.random() < 0.5:
            ds = tuple(int(v) for v in rng.integers(1, 90, 2))
            fx = fy = 0
        else:
            ds = None
            fx, fy = (float(v) for v in rng.uniform(0.05, 4.0, 2))
            if round(w * fx) < 1 or round(h * fy) < 1:
                continue
        want = cv_resize_ref(img, ds, fx, fy, FLAGS[flag])
        got = fcv.resize(img, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
        _check(got, want, (flag, img.shape, ds, fx, fy))


# ------------------------------------------------------------------ cv2
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("flag", list(FLAGS))
def test_against_cv2_ipp_off(dtype, flag):
    cv2 = peer("cv2")
    rng = _rng(3)
    with _ipp(cv2, False):
        for (h, w), ds, fx, fy in _cases():
            for C in (1, 2, 3, 4):
                img = _image(rng, (h, w, C), dtype)
                want = cv2.resize(img, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
                got = fcv.resize(img, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
                _check(got, want, (flag, img.shape, ds, fx, fy))


@pytest.mark.parametrize("flag", list(FLAGS))
def test_uint8_against_cv2_default_ipp(flag):
    """cv2's default build path (Intel IPP on): bit-exact except INTER_CUBIC (within 1:
    IPP's own cubic), 1080p frames included."""
    cv2 = peer("cv2")
    rng = _rng(4)
    frame = _image(rng, (1080, 1920, 3), "uint8")
    cases = [((640, 640), 0, 0), ((7, 5), 0, 0), ((960, 540), 0, 0), ((1280, 720), 0, 0),
             (None, 0.5, 0.5), (None, 1 / 3, 1 / 3), (None, 0.3, 0.7), ((2000, 1100), 0, 0)]
    with _ipp(cv2, True):
        for ds, fx, fy in cases:
            want = cv2.resize(frame, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
            got = fcv.resize(frame, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
            assert got.shape == want.shape
            d = np.abs(got.astype(int) - want.astype(int)).max()
            assert d <= (1 if flag == "CUBIC" else 0), (flag, ds, fx, fy, d)


@pytest.mark.parametrize("flag", list(FLAGS))
def test_frame_to_tiny_and_channels(flag):
    """1080p -> 7x5 and other extreme factors, 1 to 4 channels, IPP off: bit-exact."""
    cv2 = peer("cv2")
    rng = _rng(5)
    with _ipp(cv2, False):
        for C in (1, 2, 3, 4):
            frame = _image(rng, (1080, 1920, C), "uint8")
            for ds, fx, fy in [((7, 5), 0, 0), ((1, 1), 0, 0), ((3000, 9), 0, 0),
                               (None, 0.01, 0.02), (None, 1 / 7, 1 / 9)]:
                want = cv2.resize(frame, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
                got = fcv.resize(frame, ds, fx=fx, fy=fy, interpolation=FLAGS[flag])
                _check(got, want, (flag, C, ds, fx, fy))
        tiny = _image(rng, (3, 2, 3), "uint8")
        for ds in [(2000, 3), (5, 1500), (1, 1)]:
            want = cv2.resize(tiny, ds, interpolation=FLAGS[flag])
            _check(fcv.resize(tiny, ds, interpolation=FLAGS[flag]), want, ds)


def test_wide_types_against_cv2_default_ipp():
    """16-bit and float images against cv2's default build, where IPP computes 16-bit and
    float linear / cubic its own way: within 1 (16-bit) and ~1e-5 relative (float)."""
    cv2 = peer("cv2")
    rng = _rng(6)
    for dtype, tol in (("uint16", 1), ("int16", 1), ("float32", 2e-5 * 300),
                       ("float64", 2e-5 * 300)):
        img = _image(rng, (97, 131, 3), dtype)
        with _ipp(cv2, True):
            for flag in FLAGS:
                for ds in [(200, 150), (60, 41), (262, 194), (65, 48)]:
                    want = cv2.resize(img, ds, interpolation=FLAGS[flag])
                    got = fcv.resize(img, ds, interpolation=FLAGS[flag])
                    d = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
                    assert d <= tol, (dtype, flag, ds, d)


@pytest.mark.parametrize("dtype", ["uint16", "int16", "float32"])
def test_2x2_cells_of_wide_rows_take_every_step(dtype):
    """Exact 2x downscales (INTER_AREA, and INTER_LINEAR routed there) of 16-bit and float32
    rows wide enough for the 512-bit steps (16 cells a step for one channel, 5 for three,
    4 for four) and every tail after them: the reference's bytes, extremes, -0.0, NaN and
    infinities included (float32 3-channel cells add their sum to +0.0 as OpenCV does),
    from contiguous images and row views."""
    rng = _rng(31)
    for C in (1, 2, 3, 4):
        for w in (30, 32, 33, 40, 41, 64, 66, 70, 1921):
            img = _image(rng, (6, w, C), dtype)   # an even height: 2x2 cells (5 rows were not)
            flat = img.reshape(-1)
            if dtype == "float32":
                flat[::7], flat[::11], flat[::13] = -0.0, np.nan, np.inf
                img[:2, 8:24] = -0.0                   # whole cells of -0.0 (sum + 0 -> +0)
            else:
                info = np.iinfo(dtype)
                flat[::5], flat[::7] = info.max, info.min
            for x in (img, img[::-1, 1:]):
                h, ww = x.shape[:2]
                for ds in ((ww // 2, h // 2), (-(-ww // 2), -(-h // 2))):
                    want = cv_resize_ref(x, ds, 0, 0, FLAGS["AREA"]).tobytes()
                    exact = ds == (ww / 2, h / 2)        # INTER_LINEAR is routed there too
                    for flag in ("AREA", "LINEAR") if exact else ("AREA",):
                        got = fcv.resize(x, ds, interpolation=FLAGS[flag])
                        assert got.tobytes() == want, (C, w, x.shape, ds, flag)


@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_2x2_cells_from_every_offset_in_a_line(dtype):
    """The x86-64-v4 2x2 steps start where the first row's loads are 32-byte aligned (the
    cells before it one by one): an image at every element offset in a 64-byte line (NumPy's
    large arrays start 16 bytes past one), rows 32-byte multiples apart and not, gives the
    reference's bytes.  So does one whose last row ends just before an unreadable page, its
    rows `pad` bytes further apart than their length (which moves the first cell through
    the line), written into a dst that ends just before one: the last step of a row, masked
    to its cells, reads and writes nothing past them."""
    rng = _rng(37)
    size = np.dtype(dtype).itemsize
    for C in (1, 3, 4):
        for w in (70, 72, 1922):        # 36 cells: the 1-channel vector cells end the row
            for h, ww in ((4, w), (6, w - 1)):
                img = _image(rng, (h, ww, C), dtype)
                want = cv_resize_ref(img, (ww // 2, h // 2), 0, 0, FLAGS["AREA"]).tobytes()
                buf = np.empty(img.nbytes + 128, np.uint8)
                first = -buf.ctypes.data % 64
                for off in range(0, 64, size):
                    x = buf[first + off:first + off + img.nbytes].view(dtype).reshape(img.shape)
                    x[...] = img
                    got = fcv.resize(x, (ww // 2, h // 2), interpolation=FLAGS["AREA"])
                    assert got.tobytes() == want, (C, ww, h, off)
                for pad in range(0, 64, size):
                    x = _rows_before_a_page(img, pad)
                    dst = guarded(np.zeros_like(got), "end")
                    fcv.resize(x, (ww // 2, h // 2), dst=dst, interpolation=FLAGS["AREA"])
                    assert dst.tobytes() == want, (C, ww, h, pad, "guarded")


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "float32", "float64"])
def test_2x2_cells_cut_by_the_border(dtype, nthreads, threads):
    """fx = fy = 0.5 on sizes whose half rounds up (43 * 0.5 = 21.5 -> 22, half to even)
    maps 2x2 cells (1 / fx = 2) onto an output one column (and, for odd heights, one row)
    larger than the full cells: the last column and row average the pixels inside the
    image.  The
    vector steps take a chunk's full rows in one call and leave those cells to the
    general loop; every element must still be written: cv2 (IPP off) and the reference,
    narrow rows and rows wide enough for every vector step, contiguous and flipped."""
    cv2 = peer("cv2")
    rng = _rng(43)
    with threads(nthreads), _ipp(cv2, False):
        for C in (1, 2, 3, 4):
            for h, w in ((7, 43), (8, 43), (11, 1203), (12, 1203), (131, 1203), (3, 19)):
                img = _image(rng, (h, w, C), dtype)
                for x in (img, img[::-1, ::-1]):
                    got = fcv.resize(x, None, fx=0.5, fy=0.5, interpolation=FLAGS["AREA"])
                    want = cv2.resize(x, None, fx=0.5, fy=0.5, interpolation=FLAGS["AREA"])
                    assert got.shape[:2] == (-(-h // 2), -(-w // 2)) == want.shape[:2]
                    np.testing.assert_array_equal(got.reshape(want.shape), want)
                    ref = cv_resize_ref(x, None, 0.5, 0.5, FLAGS["AREA"])
                    assert got.tobytes() == ref.tobytes(), (C, h, w, x.strides)


def test_float_3_channel_2x2_steps_read_inside_the_row():
    """The x86-64-v4 float32 3-channel 2x2 steps of an image that stays in L3 take 8 cells
    (64 floats read) at a time from the first 32-byte aligned cell, and a row's first and
    last 8 cells in one step each (rows of 8 cells or more; masked steps below).  Every even
    width from 10 to 78 pixels (each first-cell alignment of the last row, each count of
    cells after the last 8-cell step), rows 4-byte multiples apart, the last row ending just
    before an unreadable page: the reference's bytes, nothing read past the row."""
    rng = _rng(41)
    for ww in range(10, 80, 2):
        img = _image(rng, (4, ww, 3), np.float32)
        want = cv_resize_ref(img, (ww // 2, 2), 0, 0, FLAGS["AREA"]).tobytes()
        for pad in range(0, 64, 4):
            x = _rows_before_a_page(img, pad)
            got = fcv.resize(x, (ww // 2, 2), interpolation=FLAGS["AREA"])
            assert got.tobytes() == want, (ww, pad)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_integer_cells_after_a_pause_and_back_to_back(threads, dtype):
    """Integer-cell INTER_AREA (resizeAreaFast_) prefetches its rows in a call that
    follows a pause (more than the pool's 1 ms spin without a loop: a 3 ms sleep here)
    and not in a loop of calls.  Both give the reference's bytes: 2x2 cells of 1-5
    channels (the SIMD 2x2 steps and the general cell sums), 3x3 and 2x3 cells, cells
    cut by the border, a row view with an offset and a negative stride, on 1 and 2
    threads; and uint8 images just under and at the 1 MiB output where the fast path
    switches from np.empty to the block pool."""
    import time
    rng = _rng(29)
    cases = []
    for C in (1, 2, 3, 4, 5):
        base = _image(rng, (67, 203, C), dtype)
        for img in (base[:, :200], base[::-1, 3:]):
            for (sx, sy) in ((2, 2), (3, 3), (2, 3)):
                h, w = img.shape[:2]
                cases.append((img, (w // sx, h // sy)))
                cases.append((img, (-(-w // sx), -(-h // sy))))     # border cells
    for rows in (2046, 2048) if dtype == "uint8" else ():           # 1023 or 1024 KiB out
        big = _image(rng, (rows, 2048), "uint8")
        q = big.astype(np.int32)                    # OpenCV's 2x2 rule, (a+b+c+d+2) >> 2
        cells = (q[0::2, 0::2] + q[0::2, 1::2] + q[1::2, 0::2] + q[1::2, 1::2] + 2) >> 2
        cases.append((big, (1024, rows // 2), cells.astype(np.uint8)))
    cases = [c if len(c) == 3 else c + (cv_resize_ref(c[0], c[1], 0, 0, FLAGS["AREA"]),)
             for c in cases]
    for n in (1, 2):
        with threads(n):
            for img, ds, want in cases:
                time.sleep(0.003)
                _check(fcv.resize(img, ds, interpolation=FLAGS["AREA"]), want, (n, img.shape, ds))
                _check(fcv.resize(img, ds, interpolation=FLAGS["AREA"]), want,
                       ("again", n, img.shape, ds))


@pytest.mark.parametrize("dtype", ["uint16", "int16", "float32"])
def test_wide_rows_take_every_vector_step(dtype):
    """Rows wide enough for the x86-64-v4 build's steps: the permute steps of 1 and 2
    channels (16 elements for 16-bit, 8 for float32, taken where a step's taps lie in 128
    bytes: the downscales past about 4x mix them with the window steps; 16 for float32
    linear where every step's taps lie in 128 bytes: upscales and downscales up to about
    1.9x, w - 7, 2w / 3 and w / 2 + 5 here), the four-pixel steps of 3 and 4 channels, and
    16-bit 3-channel rows in steps of 16 output elements (where every step's taps lie in
    64 elements: upscales and downscales up to about 3.8x, the last steps' loads moved
    back to end at the row's end; w / 4 - 2 and past keep the pixel steps), at every
    offset of the row's vector run; IPP off, bit for bit."""
    cv2 = peer("cv2")
    rng = _rng(19)
    with _ipp(cv2, False):
        for C in (1, 2, 3, 4):
            for w in (190, 203):
                img = _image(rng, (9, w, C), dtype)
                for dw in (w * 2 + 5, w - 7, w * 2 // 3, w // 2 + 5, w // 2 + 1, w // 3,
                           w // 4 + 3, w // 4 - 2, w // 5, w // 9):
                    for flag in ("LINEAR", "CUBIC"):
                        want = cv2.resize(img, (dw, 7), interpolation=FLAGS[flag])
                        got = fcv.resize(img, (dw, 7), interpolation=FLAGS[flag])
                        _check(got, want, (flag, img.shape, dw))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16"])
def test_odd_integer_downscales_of_integer_images(dtype):
    """An odd integer downscale (1920 -> 640) gives every column one tap of weight 1 and
    the others 0, so the horizontal sums of an integer image are exact and taken as a
    widening gather (uint8 linear, linear_exact and cubic, 16-bit linear and cubic, 3 and 4
    channels, uint8 linear into an int16 ring; 16-bit one-channel rows in the x86-64-v3
    and -v4 builds: hot_stride_row's 8-column steps, factors 3, 5 and 7, and its tail).
    Wide rows (the paired steps and the scalar tail), factors 3 to 11, row views with an
    offset and a negative stride, a non-integer vertical scale: bit for bit with the
    reference and with cv2 (IPP off)."""
    cv2 = peer("cv2")
    rng = _rng(23)
    with _ipp(cv2, False):
        for C in (1, 3, 4):
            base = _image(rng, (23, 633, C), dtype)
            for img in (base[:, :630], base[::-1, 3:]):
                w = img.shape[1]
                for k in (3, 5, 7, 9, 11):
                    if w % k:
                        continue
                    for dh in (23 // 3 + 1, 10):
                        for flag in ("LINEAR", "CUBIC", "LINEAR_EXACT"):
                            want = cv_resize_ref(img, (w // k, dh), 0, 0, FLAGS[flag])
                            _check(cv2.resize(img, (w // k, dh), interpolation=FLAGS[flag]),
                                   want, ("cv2", flag, img.shape, k, dh))
                            got = fcv.resize(img, (w // k, dh), interpolation=FLAGS[flag])
                            _check(got, want, (flag, img.shape, k, dh))


def test_integer_downscales_of_float_rows():
    """An integer downscale s gives every interior column the same weights and a first tap
    s elements after the last one, which one-channel float32 rows take 4 columns at a time
    from blended loads (const_stride_steps: s = 1, 2, 3, 5, 6, 7 in the x86-64-v3 build,
    s <= 5 in the -v4 one; s = 4 and 8 stay on the window or permute steps).  Factors 1
    to 8, linear and cubic, rows views with an offset and a negative stride, NaN,
    infinities and -0.0 on every phase of the stride (a zero weight's tap makes inf NaN;
    -0.0 keeps or loses its sign by the zero products' signs); widths k dw + 1, whose
    interior columns keep the step k for the whole row with weights that drift (they
    must take the window steps): bit for bit with the reference and cv2 (IPP off)."""
    cv2 = peer("cv2")
    rng = _rng(31)
    base = _image(rng, (13, 843), "float32")
    for j, v in enumerate((np.nan, np.inf, -np.inf, -0.0, 0.0, -5.0)):
        base[2 + j % 9, 37 + 11 * j: 843: 97] = v
    base[9] = -0.0
    base[10, ::2] = 0.0
    with _ipp(cv2, False):
        for img in (base[:, :840], base[::-1, 3:], base[:, :841], base[::-1, 2:]):
            for k in range(1, 9):
                for flag in ("LINEAR", "CUBIC"):
                    ds = (840 // k, 6)
                    with np.errstate(invalid="ignore"):
                        want = cv_resize_ref(img, ds, 0, 0, FLAGS[flag])
                    _check(cv2.resize(img, ds, interpolation=FLAGS[flag]), want,
                           ("cv2", flag, k))
                    _check(fcv.resize(img, ds, interpolation=FLAGS[flag]), want, (flag, k))


@pytest.mark.parametrize("dtype", ["uint16", "int16", "float32"])
def test_exact_2x_upscales(dtype):
    """dw = 2w (linear): the x86-64-v3 and -v4 builds compute the horizontal sums of
    interior pixels from three contiguous windows and interleave them (up2_run), 1-4
    channels; widths around its steps (-v4: 16 / C pixels, -v3: 8 / C, C = 3: 2) and its
    load bounds, views, NaN and infinities in float rows, INTER_AREA's upscale (other
    coefficients: the tables' path): bit for bit with the reference and cv2 (IPP off)."""
    cv2 = peer("cv2")
    rng = _rng(29)
    with _ipp(cv2, False):
        for C in (1, 2, 3, 4):
            for w in (3, 4, 6, 17, 21, 22, 40, 67):
                img = _image(rng, (6, w + 1, C), dtype)
                if dtype == "float32":
                    img[2, w // 2] = [np.nan, np.inf, -np.inf, 0.0][:C]
                for view in (img[:, :w], img[::-1, 1:]):
                    v = view[:, :, 0] if C == 1 else view
                    for flag in ("LINEAR", "AREA"):
                        with np.errstate(invalid="ignore"):     # inf * 0 in the reference
                            want = cv_resize_ref(v, (2 * w, 11), 0, 0, FLAGS[flag])
                        _check(cv2.resize(v, (2 * w, 11), interpolation=FLAGS[flag]), want,
                               ("cv2", flag, v.shape))
                        got = fcv.resize(v, (2 * w, 11), interpolation=FLAGS[flag])
                        _check(got, want, (flag, v.shape))
        # every width up to 3 of the widest steps (-v3 C = 3: 4 pixels, reading 2 pixels
        # back and 6 on), the image between two unreadable pages: nothing read outside it
        for C in (1, 2, 3, 4):
            for w in range(3, 40):
                img = _image(rng, (3, w, C), dtype)
                v = img[:, :, 0] if C == 1 else img
                want = cv_resize_ref(v, (2 * w, 5), 0, 0, FLAGS["LINEAR"])
                for at in ("start", "end"):
                    got = fcv.resize(guarded(v, at), (2 * w, 5), interpolation=FLAGS["LINEAR"])
                    _check(got, want, (C, w, at))


def test_fx_maps_with_one_over_fx():
    """Research finding 2: with dsize None the mapping uses 1 / fx, not W / out_width
    (cv2 and the reference), and the size rounds half to even."""
    cv2 = peer("cv2")
    rng = _rng(7)
    img = _image(rng, (30, 7, 3), "uint8")
    with _ipp(cv2, False):
        for flag in ("LINEAR", "CUBIC", "AREA", "NEAREST"):
            got = fcv.resize(img, None, fx=0.3, fy=0.5, interpolation=FLAGS[flag])
            want = cv2.resize(img, None, fx=0.3, fy=0.5, interpolation=FLAGS[flag])
            assert got.shape == (15, 2, 3)                 # round(2.1) = 2, round(15)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, cv_resize_ref(img, None, 0.3, 0.5,
                                                             FLAGS[flag]))
        by_size = fcv.resize(img, (2, 15))                 # maps with 7 / 2 instead
        assert not np.array_equal(by_size, fcv.resize(img, None, fx=0.3, fy=0.5))
    # round half to even: 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4
    assert fcv.resize(np.zeros((5, 7), np.uint8), None, fx=0.5, fy=0.5).shape == (2, 4)


def test_routing_rules():
    """hal::resize's routing: exact 2x LINEAR is AREA; LINEAR_EXACT on floats is LINEAR;
    LINEAR_EXACT at 2x is AREA except for 2 channels; equal sizes copy."""
    rng = _rng(8)
    img = _image(rng, (40, 60, 3), "uint8")
    np.testing.assert_array_equal(fcv.resize(img, (30, 20)),
                                  fcv.resize(img, (30, 20), interpolation=fcv.INTER_AREA))
    np.testing.assert_array_equal(fcv.resize(img, (30, 20), interpolation=5),
                                  fcv.resize(img, (30, 20), interpolation=fcv.INTER_AREA))
    two = _image(rng, (40, 60, 2), "uint8")
    np.testing.assert_array_equal(fcv.resize(two, (30, 20), interpolation=5),
                                  cv_resize_ref(two, (30, 20), 0, 0, 5))
    f = _image(rng, (40, 60, 3), "float32")
    np.testing.assert_array_equal(fcv.resize(f, (25, 17), interpolation=5),
                                  fcv.resize(f, (25, 17), interpolation=1))
    for flag in FLAGS.values():
        np.testing.assert_array_equal(fcv.resize(img, (60, 40), interpolation=flag), img)
        np.testing.assert_array_equal(fcv.resize(img, None, fx=1.005, fy=0.99,
                                                 interpolation=flag), img)


# ------------------------------------------------------------------ API rules
def test_flag_passed_as_dst_warns_and_is_ignored():
    """cv2.resize(img, (w, h), cv2.INTER_AREA) passes 3 as dst: cv2 ignores it and uses
    INTER_LINEAR; fastops does the same and warns."""
    rng = _rng(9)
    img = _image(rng, (37, 53, 3), "uint8")
    lin = fcv.resize(img, (20, 15))
    for flag in (fcv.INTER_AREA, fcv.INTER_NEAREST, 2.5, np.int64(3), True):
        with pytest.warns(UserWarning, match="third positional argument is dst"):
            got = fcv.resize(img, (20, 15), flag)
        np.testing.assert_array_equal(got, lin)
    cv2 = peer("cv2")
    np.testing.assert_array_equal(cv2.resize(img, (20, 15), cv2.INTER_AREA), lin)


def test_dst_semantics():
    rng = _rng(10)
    img = _image(rng, (37, 53, 3), "uint8")
    want = fcv.resize(img, (20, 15), interpolation=fcv.INTER_CUBIC)
    dst = np.zeros((15, 20, 3), np.uint8)
    assert fcv.resize(img, (20, 15), dst, interpolation=fcv.INTER_CUBIC) is dst
    np.testing.assert_array_equal(dst, want)
    # strided dst: written in place
    big = np.zeros((30, 20, 3), np.uint8)
    view = big[::2]
    assert fcv.resize(img, (20, 15), view, interpolation=fcv.INTER_CUBIC) is view
    np.testing.assert_array_equal(big[::2], want)
    assert not big[1::2].any()
    # wrong shape or dtype: a new array, dst untouched (cv2 reallocates)
    for bad in (np.zeros((10, 20, 3), np.uint8), np.zeros((15, 20, 3), np.float32),
                np.zeros((15, 20), np.uint8)):
        r = fcv.resize(img, (20, 15), bad, interpolation=fcv.INTER_CUBIC)
        assert r is not bad and not bad.any()
        np.testing.assert_array_equal(r, want)
    # dst overlapping img: computed as if img were a separate copy
    buf = _image(rng, (40, 60, 3), "uint8")
    src = buf.copy()
    alias = buf[10:30, 10:40]
    assert fcv.resize(buf, (30, 20), alias, interpolation=fcv.INTER_CUBIC) is alias
    np.testing.assert_array_equal(alias, fcv.resize(src, (30, 20),
                                                    interpolation=fcv.INTER_CUBIC))
    # read-only dst that fits: refused (cv2 too)
    ro = np.zeros((15, 20, 3), np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        fcv.resize(img, (20, 15), ro)
    # one channel: (h, w) and (h, w, 1) destinations both fit
    g = img[:, :, 0]
    for d in (np.zeros((15, 20), np.uint8), np.zeros((15, 20, 1), np.uint8)):
        assert fcv.resize(g, (20, 15), d) is d
        np.testing.assert_array_equal(d.reshape(15, 20), fcv.resize(g, (20, 15)))
    cv2 = peer("cv2")
    for d in (np.zeros((15, 20), np.uint8), np.zeros((15, 20, 1), np.uint8)):
        assert cv2.resize(g, (20, 15), d) is d


def test_dst_non_native_or_misaligned_is_written_back():
    """A dst the backend had to copy (byte-swapped, misaligned) still receives the result;
    a list is not an array to write into."""
    rng = _rng(20)
    img = _image(rng, (19, 23, 3), "uint16")
    want = fcv.resize(img, (7, 5), interpolation=fcv.INTER_CUBIC)
    swapped = np.zeros((5, 7, 3), ">u2")
    assert fcv.resize(img, (7, 5), swapped, interpolation=fcv.INTER_CUBIC) is swapped
    np.testing.assert_array_equal(swapped, want)
    buf = np.zeros(want.nbytes + 1, np.uint8)
    odd = buf[1:].view(np.uint16).reshape(want.shape)
    assert not odd.flags.aligned
    assert fcv.resize(img, (7, 5), odd, interpolation=fcv.INTER_CUBIC) is odd
    np.testing.assert_array_equal(odd, want)
    swapped = np.zeros((5, 7, 3), ">u2")
    swapped.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        fcv.resize(img, (7, 5), swapped)
    with pytest.raises(TypeError, match="cv.resize: dst"):
        fcv.resize(img.astype(np.float64)[:2, :2, 0], (2, 2), [[0.0, 0.0], [0.0, 0.0]])


def test_output_shapes_follow_cv2():
    """(H, W, 1) images come back (h, w) as from cv2; dsize with a zero uses fx/fy."""
    cv2 = peer("cv2")
    rng = _rng(11)
    one = _image(rng, (9, 11, 1), "uint8")
    assert fcv.resize(one, (5, 4)).shape == cv2.resize(one, (5, 4)).shape == (4, 5)
    five = _image(rng, (9, 11, 5), "float32")
    assert fcv.resize(five, (5, 4)).shape == cv2.resize(five, (5, 4)).shape == (4, 5, 5)
    img = _image(rng, (9, 11, 3), "uint8")
    for ds in [(10, 0), (0, 10), (0, 0), None]:
        np.testing.assert_array_equal(fcv.resize(img, ds, fx=0.5, fy=2.0),
                                      cv2.resize(img, ds, fx=0.5, fy=2.0))
    np.testing.assert_array_equal(fcv.resize(img, np.array([7, 5])), fcv.resize(img, (7, 5)))
    # many channels on every path (cv2 supports up to 4 in INTER_AREA's general path)
    many = _image(rng, (13, 17, 9), "uint8")
    for flag in FLAGS.values():
        for ds in [(7, 5), (30, 20), (5, 13)]:
            np.testing.assert_array_equal(fcv.resize(many, ds, interpolation=flag),
                                          cv_resize_ref(many, ds, 0, 0, flag))


def test_float16_computes_in_float32():
    rng = _rng(12)
    img = _image(rng, (20, 30, 3), "float32").astype(np.float16)
    for flag in FLAGS.values():
        got = fcv.resize(img, (17, 11), interpolation=flag)
        assert got.dtype == np.float16
        want = fcv.resize(img.astype(np.float32), (17, 11), interpolation=flag)
        np.testing.assert_array_equal(got, want.astype(np.float16))


def test_errors_name_the_argument():
    img = np.zeros((9, 11, 3), np.uint8)
    with pytest.raises(ValueError, match="cv.resize: interpolation=4.*LANCZOS4"):
        fcv.resize(img, (5, 5), interpolation=4)
    for bad in (7, 8, -1, 17):
        with pytest.raises(ValueError, match=f"cv.resize: interpolation={bad}"):
            fcv.resize(img, (5, 5), interpolation=bad)
    with pytest.raises(TypeError, match="interpolation"):
        fcv.resize(img, (5, 5), interpolation=1.5)
    with pytest.raises(ValueError, match="dsize"):
        fcv.resize(img, (-1, 5))
    with pytest.raises(TypeError, match="dsize"):
        fcv.resize(img, (5.5, 5))
    with pytest.raises(ValueError, match="dsize"):
        fcv.resize(img, (5, 5, 5))
    with pytest.raises(ValueError, match="fx"):
        fcv.resize(img, None)
    with pytest.raises(ValueError, match="fy"):
        fcv.resize(img, None, fx=0.5)
    for v in (-1.0, float("nan"), float("inf"), 0.0):
        with pytest.raises(ValueError, match="fx"):
            fcv.resize(img, None, fx=v, fy=1.0)
    with pytest.raises(ValueError, match="fx=0.01.*empty"):
        fcv.resize(img, None, fx=0.01, fy=1.0)
    for dt in (np.int8, np.int32, np.int64, np.uint32, bool, np.complex64):
        with pytest.raises(TypeError, match="cv.resize: img has dtype"):
            fcv.resize(np.zeros((4, 4), dt), (2, 2))
    for shape in ((4,), (2, 3, 4, 5), ()):
        with pytest.raises(ValueError, match="cv.resize: img must be"):
            fcv.resize(np.zeros(shape, np.uint8), (2, 2))
    with pytest.raises(MemoryError, match="cv.resize.*dsize"):
        fcv.resize(img, (1 << 40, 1 << 40))
    with pytest.raises(MemoryError, match="cv.resize.*fx"):
        fcv.resize(img, None, fx=1e17, fy=1e17)
    for fx in (1e18, 1e300):     # an empty image whose other axis cannot exist
        with pytest.raises(MemoryError, match="cv.resize: .*fx="):
            fcv.resize(np.zeros((0, 5, 3), np.uint8), None, fx=fx, fy=1.0)
    with pytest.raises(ValueError, match="empty image"):
        fcv.resize(np.zeros((0, 5, 3), np.uint8), (3, 3))
    with pytest.raises(TypeError, match="dst"):
        fcv.resize(img, (5, 5), "nope")


def test_empty_images():
    for shape, ds, fx, fy, want in [((0, 5, 3), None, 2.0, 2.0, (0, 10, 3)),
                                     ((4, 0), None, 0.5, 0.5, (2, 0)),
                                     ((4, 6, 0), (3, 2), 0, 0, (2, 3, 0)),
                                     ((4, 6, 0), None, 2.0, 0.5, (2, 12, 0))]:
        for flag in FLAGS.values():
            for dt in ("uint8", "float32"):
                r = fcv.resize(np.zeros(shape, dt), ds, fx=fx, fy=fy, interpolation=flag)
                assert r.shape == want and r.dtype == np.dtype(dt)


# ------------------------------------------------------------------ hostile input
def _views(img):
    yield "reversed", img[::-1, ::-1]
    yield "strided", img[::2, 1::3]
    yield "transposed", img.transpose(1, 0, 2)
    yield "channel-reversed", img[:, :, ::-1]
    yield "zero-stride", np.broadcast_to(img[:1], img.shape)
    yield "fortran", np.asfortranarray(img)
    ro = img.copy()
    ro.flags.writeable = False
    yield "read-only", ro
    if img.dtype.itemsize > 1:
        yield "big-endian", img.astype(img.dtype.newbyteorder(">"))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_views_equal_contiguous_copies_and_inputs_unchanged(dtype):
    rng = _rng(13)
    img = _image(rng, (23, 31, 3), dtype)
    for name, v in _views(img):
        before = np.array(v, copy=True)
        for flag in FLAGS.values():
            for ds in [(13, 9), (50, 40), (11, 46)]:
                got = fcv.resize(v, ds, interpolation=flag)
                want = fcv.resize(np.ascontiguousarray(v), ds, interpolation=flag)
                assert got.dtype == np.dtype(dtype).newbyteorder("=")
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {flag} {ds}")
        np.testing.assert_array_equal(v, before)


@pytest.mark.parametrize("dtype", DTYPES)
def test_images_against_unreadable_pages(dtype):
    """Every flag, 1-4 channels, on images whose last byte lies before an unreadable page
    or whose first byte lies after one (tests/conftest.guarded), and flipped views of
    them: a vector step that loads a window past the image faults.  Rows of 157 and
    1201 pixels take the vector steps; upscales and downscales from 1.5x to 60x (the
    nearest byte permutes' 128-byte windows hold one pixel at 60x); against cv2, IPP off."""
    cv2 = peer("cv2")
    rng = _rng(31)
    sizes = {157: [(500, 20), (104, 7), (52, 5), (21, 3)], 1201: [(800, 4), (400, 2), (20, 2)]}
    with _ipp(cv2, False):
        for (h, w), c in ((hw, c) for hw in ((11, 157), (3, 1201)) for c in (1, 2, 3, 4)):
            img = _image(rng, (h, w, c) if c > 1 else (h, w), dtype)
            sl = (slice(None, None, -1),) * img.ndim
            placed = [guarded(img, "end"), guarded(img, "start"),
                      guarded(img[sl], "end")[sl], guarded(img[sl], "start")[sl]]
            for flag in FLAGS.values():
                for ds in sizes[w]:
                    want = cv2.resize(img, ds, interpolation=flag)
                    for v in placed:
                        _check(fcv.resize(v, ds, interpolation=flag), want,
                               (h, w, c, flag, ds, v.strides))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("flag", list(FLAGS))
def test_nan_and_inf_follow_opencv(flag, dtype):
    """Float images with NaN and +-inf inside and on the border: the reference's (and
    cv2's, IPP off) values bit for bit, NaN where OpenCV's sums give NaN (0 * inf,
    inf - inf)."""
    rng = _rng(14)
    img = _image(rng, (19, 23, 2), dtype)
    img[3, 4, 0] = np.nan
    img[10, 5, 1] = np.inf
    img[6, 17, 0] = -np.inf
    img[18, 11, 1] = np.nan
    img[0, 22, 0] = -np.inf
    img[10, 0, 1] = np.inf
    for ds in [(40, 30), (9, 7), (23, 40), (11, 19), (46, 38)]:
        with np.errstate(invalid="ignore"):
            want = cv_resize_ref(img, ds, 0, 0, FLAGS[flag])
        _check(fcv.resize(img, ds, interpolation=FLAGS[flag]), want, (flag, ds))
    cv2 = peer("cv2")
    with _ipp(cv2, False):
        for ds in [(40, 30), (9, 7)]:
            _check(fcv.resize(img, ds, interpolation=FLAGS[flag]),
                   cv2.resize(img, ds, interpolation=FLAGS[flag]), (flag, ds))


@pytest.mark.parametrize("dtype", ["float32", "float64"])     # (float16: float32's, rounded)
def test_negative_zero_follows_opencv(dtype):
    """-0.0 keeps its sign wherever OpenCV's sums start at their first product (linear,
    cubic, nearest, 2x2 cells) and becomes +0.0 where they start at 0 (resizeArea_'s
    fractional cells): every flag, 1-4 channels, down, up and integer scales, bytes
    against the reference."""
    for C in (1, 2, 3, 4):
        x = np.full((12, 30, C), -0.0, dtype)
        x[5:7, 11:13] = 1.5                         # one cell that is not all -0.0
        for flag in FLAGS.values():
            for ds in ((15, 6), (10, 4), (7, 5), (45, 20), (20, 9), (15, 7)):
                want = cv_resize_ref(x, ds, 0, 0, flag)
                got = fcv.resize(x, ds, interpolation=flag)
                assert got.tobytes() == want.tobytes(), (C, flag, ds)


def test_huge_scales_and_extreme_aspect():
    """Scales far from 1 in both directions stay in bounds and match the reference."""
    rng = _rng(15)
    img = _image(rng, (3, 4000, 2), "uint8")
    for flag in FLAGS.values():
        for ds, fx, fy in [((1, 1), 0, 0), ((2, 700), 0, 0), (None, 1e-3, 300.0)]:
            got = fcv.resize(img, ds, fx=fx, fy=fy, interpolation=flag)
            np.testing.assert_array_equal(got, cv_resize_ref(img, ds, fx, fy, flag))


# ------------------------------------------------------------------ per-thread tables
@pytest.mark.parametrize("dtype", ["uint16", "float32", "float64"])
def test_repeated_geometry_tables_follow_every_change(dtype):
    """The float passes keep each thread's last tables (include/cv_resize.hpp FloatPlan):
    calls that change one thing at a time (source height or width, channels, dsize,
    flag, fx/fy) and back, each against cv2 (IPP off), and two threads resizing
    different geometries at once."""
    cv2 = peer("cv2")
    rng = _rng(41)
    base = dict(h=61, w=97, c=3, ds=(40, 23), flag=1, f=None)
    # dh = round(h * fy) = 23 at h 60 and 61, dw = 40 at w 97 and 98; cubic taps reach
    # the last source row and column there
    scaled = dict(base, ds=None, f=(0.41, 0.38), flag=2)
    # each change runs right after base (or `scaled`) and base right after it; the last
    # ones keep the output size and change only the source height or the scale
    changes = [dict(h=62), dict(w=96), dict(c=4), dict(c=1), dict(ds=(41, 23)),
               dict(ds=(40, 24)), dict(flag=2), dict(flag=3),
               dict(scaled, h=60), dict(scaled, f=(0.41, 0.385)), dict(scaled, f=(0.415, 0.38)),
               dict(scaled, w=98)]
    imgs = {}

    def call(h, w, c, ds, flag, f):
        key = (h, w, c)
        if key not in imgs:
            imgs[key] = _image(rng, (h, w, c) if c > 1 else (h, w), dtype)
        kw = {} if f is None else dict(fx=f[0], fy=f[1])
        got = fcv.resize(imgs[key], ds, interpolation=flag, **kw)
        _check(got, cv2.resize(imgs[key], ds, interpolation=flag, **kw), (h, w, c, ds, flag, f))
        return got

    with _ipp(cv2, False):
        for ch in changes:
            start = scaled if ch.get("f") else base
            for params in (start, {**start, **ch}, start):
                call(**params)
                call(**params)              # the same geometry twice: the kept tables
        import threading
        geoms = [{**base, **ch} for ch in changes] + [base]
        want = [call(**g) for g in geoms]
        errors = []

        def worker(order):
            try:
                for _ in range(5):
                    for i in order:
                        g = geoms[i]
                        kw = {} if g["f"] is None else dict(fx=g["f"][0], fy=g["f"][1])
                        img = imgs[(g["h"], g["w"], g["c"])]
                        got = fcv.resize(img, g["ds"], interpolation=g["flag"], **kw)
                        if not np.array_equal(got, want[i], equal_nan=True):
                            errors.append(g)
            except Exception as exc:         # (reported below, not lost in the thread)
                errors.append(exc)
        ts = [threading.Thread(target=worker, args=(o,))
              for o in (range(len(geoms)), range(len(geoms) - 1, -1, -1))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors[:3]


# ------------------------------------------------------------------ invariance
def _big_results():
    rng = _rng(16)
    out = []
    for C in (1, 3, 4):
        img = _image(rng, (301, 517, C), "uint8")
        f = _image(rng, (301, 517, C), "float32")
        u = _image(rng, (301, 517, C), "uint16")
        for flag in FLAGS.values():
            for ds in [(640, 480), (123, 77), (517, 150), (1200, 301), (47, 43), (1034, 150)]:
                out.append(fcv.resize(img, ds, interpolation=flag))
                out.append(fcv.resize(f, ds, interpolation=flag))
            out.append(fcv.resize(u, (47, 43), interpolation=flag))  # 11x: one-hot columns
    return out


def test_thread_count_invariance(threads):
    with threads(1):
        one = _big_results()
    for n in (2, 3, 7):
        with threads(n):
            for a, b in zip(one, _big_results()):
                np.testing.assert_array_equal(a, b)


def test_sse2_avx2_and_avx512_paths_agree():
    """FASTOPS_SIMD=baseline keeps the SSE2 passes; the bytes must not change."""
    code = ("import hashlib, sys; sys.path.insert(0, %r); from tests.test_cv_resize import "
            "_big_results; print(hashlib.sha256(b''.join(r.tobytes() for r in "
            "_big_results())).hexdigest())" % os.getcwd())
    outs = []
    # SSE2; AVX2 (FASTOPS_SIMD caps the run-time steps too); the best this CPU has
    for env in ({"FASTOPS_SIMD": "baseline"}, {"FASTOPS_SIMD": "x86-64-v3"},
                {"FASTOPS_SIMD": ""}):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, **env}, cwd=os.getcwd())
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.strip())
    assert outs[0] == outs[1] == outs[2]


# ------------------------------------------------------------------ frameworks, devices
def test_dlpack_torch_in_torch_out():
    torch = peer("torch")
    rng = _rng(17)
    img = _image(rng, (21, 34, 3), "uint8")
    t = torch.from_numpy(img)
    r = fcv.resize(t, (17, 9), interpolation=fcv.INTER_CUBIC)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_array_equal(r.numpy(), fcv.resize(img, (17, 9),
                                                        interpolation=fcv.INTER_CUBIC))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_backends_against_reference(xp, dtype):
    """Both backends (the CuPy run needs a GPU) against the reference: integer results
    identical, float within rounding."""
    rng = _rng(18)
    for C in (1, 3, 4):
        img = _image(rng, (29, 41, C), dtype)
        for flag_name, flag in FLAGS.items():
            for ds, fx, fy in [((60, 50), 0, 0), ((13, 7), 0, 0), (None, 0.5, 0.5),
                               (None, 2.5, 1 / 3)]:
                got = to_numpy(fcv.resize(xp.asarray(img), ds, fx=fx, fy=fy,
                                          interpolation=flag))
                want = cv_resize_ref(img, ds, fx, fy, flag)
                _check(got, want, (flag_name, C, ds, fx, fy))


@pytest.mark.gpu
@GPU
def test_gpu_equals_cpu_large():
    import cupy as cp
    rng = _rng(19)
    for C in (1, 3, 4):
        img = _image(rng, (1080, 1920, C), "uint8")
        g = cp.asarray(img)
        for flag in FLAGS.values():
            for ds in [(640, 640), (7, 5), (3840, 2160)]:
                np.testing.assert_array_equal(cp.asnumpy(fcv.resize(g, ds, interpolation=flag)),
                                              fcv.resize(img, ds, interpolation=flag))


def test_public_and_typed():
    import inspect
    assert getattr(fcv.resize, "__fastops_public__", False)
    sig = inspect.signature(fcv.resize)
    assert list(sig.parameters) == ["img", "dsize", "dst", "fx", "fy", "interpolation"]
    assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values())
    assert sig.return_annotation is not inspect.Signature.empty
    cv2 = peer("cv2")
    for name in ("INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA",
                 "INTER_LINEAR_EXACT", "INTER_NEAREST_EXACT"):
        assert getattr(fcv, name) == getattr(cv2, name)


def test_kept_tables_and_rings_do_not_leak_between_calls():
    """uint8 tables and one-thread rings are the calling thread's, reused call after call
    (cv_resize.hpp thread_tables, ring_apply): any order of calls, on any thread, gives
    each call's own result; wide outputs (tables let go) in between too."""
    import threading
    rng = np.random.default_rng(17)
    imgs = [rng.integers(0, 256, s, dtype=np.uint8) for s in
            [(9, 7), (8, 8, 3), (12, 5, 4), (6, 30, 2), (3, 3000)]]
    calls = [(0, (5, 4), fcv.INTER_CUBIC), (1, (5, 4), fcv.INTER_LINEAR),
             (1, (13, 11), fcv.INTER_CUBIC), (2, (3, 7), fcv.INTER_LINEAR_EXACT),
             (3, (17, 3), fcv.INTER_AREA), (4, (4500, 2), fcv.INTER_LINEAR),
             (0, (2, 2), fcv.INTER_LINEAR), (2, (6, 6), fcv.INTER_CUBIC)]
    expect = [cv_resize_ref(imgs[i], size, interpolation=interp) for i, size, interp in calls]
    order = [c for r in range(3) for c in rng.permutation(len(calls))]
    got = {}

    def run(tag):
        got[tag] = [(c, fcv.resize(imgs[calls[c][0]], calls[c][1], interpolation=calls[c][2]))
                    for c in order]
    threads = [threading.Thread(target=run, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    run("main")
    for t in threads:
        t.join()
    for results in got.values():
        for c, out in results:
            np.testing.assert_array_equal(out, expect[c], err_msg=str(calls[c]))
