"""Common standard ONNX ops on NumPy/CuPy: elementwise, shape, indexing, reductions, linear
algebra.  One builder per op (or per family of similar ops); every builder reads its
attributes once and returns a closure over the array module.

Semantics follow the ONNX spec of the node's opset version (attributes that moved to
inputs, changed defaults); where NumPy differs from ONNX the code says so (integer Div
truncates, Pow keeps the base type, Cast from float to int truncates, ...).
"""
import functools

import numpy as np

from fastops import _dispatch, _validate
from fastops._threads import get_num_threads
from fastops.onnx import _packed_gemm
from fastops.onnx._registry import EPILOGUES, Unsupported, blas_guard, host, ints, kernel



def _quiet(fn):
    """Run ``fn`` with NumPy floating-point warnings off: ONNX runtimes give inf/NaN
    silently (division by zero, log of 0, overflow)."""
    @functools.wraps(fn)
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return run


def _np_dtype(elem):
    from onnx import helper
    try:
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except Exception:
        raise Unsupported(f"element type {elem} has no NumPy dtype") from None
    if dt not in _PLAIN:        # bfloat16, float8, int4, strings: onnx.reference's casts
        raise Unsupported(f"element type {elem} ({dt})")
    return dt


_PLAIN = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64",
                                "complex64", "complex128")}


def _axis(ax, rank):
    return ax + rank if ax < 0 else ax


# ------------------------------------------------------------------ elementwise
_UNARY = {
    "Abs": "abs", "Neg": "negative", "Floor": "floor", "Ceil": "ceil", "Sqrt": "sqrt",
    "Exp": "exp", "Log": "log", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "arcsin",
    "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Tanh": "tanh",
    "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Sign": "sign",
    "IsNaN": "isnan", "Not": "logical_not", "BitwiseNot": "invert",
}
_NOISY = {"Sqrt", "Log", "Exp", "Asin", "Acos", "Acosh", "Atanh", "Sinh", "Cosh", "Tan"}


@kernel(*_UNARY)
def _unary(n):
    f = getattr(n.xp, _UNARY[n.op_type])
    return _quiet(f) if n.op_type in _NOISY else f


@kernel("Round")
def _round(n):
    return n.xp.round      # half to even, as ONNX


@kernel("Reciprocal")
def _reciprocal(n):
    xp = n.xp
    return _quiet(lambda x: xp.reciprocal(x) if x.dtype.kind == "f" else
                  (1 / x).astype(x.dtype))


_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Equal": "equal", "Less": "less",
    "Greater": "greater", "LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal",
    "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}


def _legacy_broadcast(n, f):
    """Opset < 7 binary ops: ``broadcast=1`` with ``axis`` aligns B at that axis."""
    if n.version >= 7 or not n.attr("broadcast", 0) or n.attr("axis") is None:
        return f
    axis = n.attr("axis")

    def run(a, b):
        ax = _axis(axis, a.ndim)
        b = b.reshape(b.shape + (1,) * (a.ndim - ax - b.ndim))
        return f(a, b)
    return run


# Add, Sub, Mul and Div of float32/float64 arrays of at least _THREADED_MIN output
# elements run on the pool's threads (include/elementwise.hpp; NumPy's ufuncs run on one),
# where the output splits into rows that each operand reads whole or as one value
# (_rows_view).  frcnn, 2 threads, ms a run, NumPy / threads: the residual Add (1, 16,
# 160, 208) 0.30 / 0.18, the squeeze-and-excitation Mul (1, 120, 40, 52) 0.13 / 0.07 and
# (1, 672, 20, 26) 0.20 / 0.11, the input's Div (3, 320, 416) 0.23 / 0.16 (its Sub, the
# run's first parallel loop, pays the workers' wake: 0.22 / 0.39); smaller ones lost to
# this function's Python: (1, 40, 40, 52) Add 0.033 / 0.047.
_THREADED_MIN = 1 << 17
_BINARY_CODES = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _rows_view(out_shape, shape, k):
    """(row stride, element stride) of a C-contiguous operand of ``shape`` (broadcast to
    ``out_shape``) in the output's (rows, row) view split before axis k, or None where it
    is neither whole nor one value along the rows or along the row."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)

    def kind(lo, hi):       # (whole, one value) along out_shape[lo:hi]
        dims = [(s, o) for s, o in zip(shape[lo:hi], out_shape[lo:hi]) if o != 1]
        return all(s == o for s, o in dims), all(s == 1 for s, _ in dims)
    rows_whole, rows_one = kind(0, k)
    cols_whole, cols_one = kind(k, len(out_shape))
    if not (rows_whole or rows_one) or not (cols_whole or cols_one):
        return None
    L = _validate.prod(out_shape[k:])
    if cols_whole:
        return (L if rows_whole else 0), 1
    return (1 if rows_whole and not rows_one else 0), 0


def _threaded_binary(code, a, b):
    """a op b on the pool's threads, or None (dtypes, layouts or a broadcast it does not
    take: NumPy then)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype \
            or a.dtype not in _FLOATS or not (a.flags.c_contiguous and b.flags.c_contiguous
                                              and a.flags.aligned and b.flags.aligned):
        return None
    if a.shape == b.shape:          # (the residual adds: no broadcast to work out)
        out_shape, R, L, va, vb = a.shape, 1, a.size, (0, 1), (0, 1)
    else:
        try:
            out_shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return None
        for k in range(len(out_shape) + 1):
            va, vb = _rows_view(out_shape, a.shape, k), _rows_view(out_shape, b.shape, k)
            if va is not None and vb is not None:
                break
        else:
            return None
        R, L = _validate.prod(out_shape[:k]), _validate.prod(out_shape[k:])
    if R * L < _THREADED_MIN:
        return None
    out = np.empty(out_shape, a.dtype)
    _dispatch.kernel_module("cpu", "norm").binary_rows(
        code, a.reshape(-1), va[0], va[1], b.reshape(-1), vb[0], vb[1], out.reshape(-1), R,
        L, get_num_threads())
    return out


def _threaded(code, f):
    def big(a, b):
        out = _threaded_binary(code, a, b)
        return f(a, b) if out is None else out
    # (the size check in C: norm.pyx SizeSwitch)
    return _dispatch.kernel_module("cpu", "norm").SizeSwitch(f, big, _THREADED_MIN)


@kernel(*_BINARY)
def _binary(n):
    f = getattr(n.xp, _BINARY[n.op_type])
    if n.xp is np and n.op_type in _BINARY_CODES:
        f = _threaded(_BINARY_CODES[n.op_type], f)
    return _legacy_broadcast(n, f)


@kernel("Div")
def _div(n):
    xp = n.xp

    def div(a, b):
        if a.dtype.kind in "iu":
            # ONNX (C) integer division truncates toward zero; NumPy's // floors
            q = xp.floor_divide(a, b)
            if a.dtype.kind == "i":
                r = a - q * b
                q = q + ((r != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
            return q.astype(a.dtype, copy=False)
        return xp.true_divide(a, b)
    if xp is not np:
        return _legacy_broadcast(n, _quiet(div))
    general = _quiet(_threaded(_BINARY_CODES["Div"], div))

    def div_host(a, b):
        # 0-d signed integers (shape arithmetic: twelve a frcnn run) in Python ints: the
        # general path's seven NumPy calls and errstate cost 12 us each between the
        # convolutions.  x / 0 and an overflowing quotient keep the general path.
        if a.ndim == 0 and b.ndim == 0 and a.dtype.kind == "i" and a.dtype == b.dtype:
            x, y = int(a), int(b)
            if y:
                q = abs(x) // abs(y)
                if (x < 0) != (y < 0):
                    q = -q
                if q < 1 << (8 * a.dtype.itemsize - 1):
                    return a.dtype.type(q)
        return general(a, b)
    return _legacy_broadcast(n, div_host)


@kernel("Mod")
def _mod(n):
    xp = n.xp
    if n.attr("fmod", 0):
        return _quiet(xp.fmod)
    return _quiet(xp.mod)


@kernel("Pow")
def _pow(n):
    xp = n.xp

    def power(x, y):
        if x.dtype.kind == "f":
            return xp.power(x, y.astype(x.dtype, copy=False))
        # integer base: the result keeps the base type (computed in float64 as ORT does)
        return xp.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
    return _legacy_broadcast(n, _quiet(power))


@kernel("BitShift")
def _bitshift(n):
    xp = n.xp
    return xp.left_shift if n.attr("direction") == "LEFT" else xp.right_shift


@kernel("Max", "Min", "Sum")
def _variadic(n):
    f = {"Max": n.xp.maximum, "Min": n.xp.minimum, "Sum": n.xp.add}[n.op_type]

    def run(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = f(out, x)
        return out
    return run


@kernel("Mean")
def _mean(n):
    xp = n.xp

    def run(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = xp.add(out, x)
        return (out / len(xs)).astype(xs[0].dtype, copy=False)
    return run


@kernel("Where")
def _where(n):
    return n.xp.where


@kernel("IsInf")
def _isinf(n):
    xp = n.xp
    pos, neg = n.attr("detect_positive", 1), n.attr("detect_negative", 1)

    def run(x):
        if pos and neg:
            return xp.isinf(x)
        if pos:
            return xp.isposinf(x) if hasattr(xp, "isposinf") else (x == np.inf)
        if neg:
            return xp.isneginf(x) if hasattr(xp, "isneginf") else (x == -np.inf)
        return xp.zeros(x.shape, dtype=bool)
    return run


@kernel("Relu")
def _relu(n):
    xp = n.xp
    return lambda x: xp.maximum(x, 0) if x.dtype.kind != "f" else xp.maximum(x, x.dtype.type(0))


@kernel("LeakyRelu")
def _leaky(n):
    xp = n.xp
    alpha = n.attr("alpha", 0.01)
    return lambda x: xp.where(x >= 0, x, x * x.dtype.type(alpha))


@kernel("PRelu")
def _prelu(n):
    xp = n.xp

    def run(x, slope):
        if n.version < 7 and slope.ndim == 1 and x.ndim > 2:   # legacy: per channel
            slope = slope.reshape((1, -1) + (1,) * (x.ndim - 2))
        return xp.where(x >= 0, x, x * slope)
    return run


@kernel("Elu")
def _elu(n):
    xp = n.xp
    alpha = n.attr("alpha", 1.0)
    return _quiet(lambda x: xp.where(x >= 0, x, (alpha * (xp.exp(x) - 1)).astype(x.dtype)))


@kernel("Selu")
def _selu(n):
    xp = n.xp
    alpha = n.attr("alpha", 1.67326319217681884765625)
    gamma = n.attr("gamma", 1.05070102214813232421875)
    return _quiet(lambda x: (gamma * xp.where(x > 0, x, alpha * (xp.exp(x) - 1)))
                  .astype(x.dtype))


@kernel("Celu")
def _celu(n):
    xp = n.xp
    alpha = n.attr("alpha", 1.0)
    return _quiet(lambda x: (xp.maximum(x, 0) + xp.minimum(0, alpha * (xp.exp(x / alpha) - 1)))
                  .astype(x.dtype))


@kernel("ThresholdedRelu")
def _trelu(n):
    xp = n.xp
    alpha = n.attr("alpha", 1.0)
    return lambda x: xp.where(x > alpha, x, 0).astype(x.dtype)


@kernel("Sigmoid")
def _sigmoid(n):
    xp = n.xp
    # 1 / (1 + exp(-x)) without overflow: exp of a non-positive number only
    def run(x):
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
    return run


@kernel("HardSigmoid")
def _hardsigmoid(n):
    xp = n.xp
    alpha, beta = n.attr("alpha", 0.2), n.attr("beta", 0.5)
    return lambda x: xp.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1)


@kernel("HardSwish")
def _hardswish(n):
    xp = n.xp
    # ONNX: x * max(0, min(1, alpha * x + beta)), alpha = 1/6, beta = 0.5
    return lambda x: x * xp.clip(x * x.dtype.type(1 / 6) + x.dtype.type(0.5), 0, 1)


@kernel("Softplus")
def _softplus(n):
    xp = n.xp
    return _quiet(lambda x: xp.logaddexp(x.dtype.type(0), x))


@kernel("Softsign")
def _softsign(n):
    xp = n.xp
    return lambda x: x / (1 + xp.abs(x))


@kernel("Clip")
def _clip(n):
    xp = n.xp
    if n.version < 11:
        lo, hi = n.attr("min"), n.attr("max")

        def legacy(x):
            out = x
            if lo is not None:
                out = xp.maximum(out, x.dtype.type(lo))
            if hi is not None:
                out = xp.minimum(out, x.dtype.type(hi))
            return out
        return legacy

    def run(x, lo=None, hi=None):
        out = x
        if lo is not None:
            out = xp.maximum(out, lo.astype(x.dtype, copy=False))
        if hi is not None:
            out = xp.minimum(out, hi.astype(x.dtype, copy=False))
        return out
    return run


@kernel("Cast")
def _cast(n):
    to = n.attr("to")
    dt = _np_dtype(to)
    if dt.kind in "SUO":
        raise Unsupported("string casts")

    ref = []

    def run(x):
        if x.dtype not in _PLAIN:        # e.g. float8 or string inputs
            if not ref:
                from fastops.onnx._reference import reference_callable
                ref.append(reference_callable(n))
            return ref[0](x)[0]
        return x.astype(dt, copy=False)     # same dtype: the value itself (no 7.5 MB copy
    return _quiet(run)                      # of frcnn's RoIAlign output, 0.6-1 ms a run)


@kernel("CastLike")
def _castlike(n):
    ref = []

    def run(x, like):
        if x.dtype not in _PLAIN or like.dtype not in _PLAIN:
            if not ref:
                from fastops.onnx._reference import reference_callable
                ref.append(reference_callable(n))
            return ref[0](x, like)[0]
        return x.astype(like.dtype)
    return _quiet(run)


# ------------------------------------------------------------------ shape ops
@kernel("Shape")
def _shape(n):
    xp = n.xp
    start, end = n.attr("start", 0), n.attr("end")

    def run(x):
        s = x.shape
        r = len(s)
        a = max(0, min(r, _axis(start, r)))
        b = r if end is None else max(0, min(r, _axis(end, r)))
        return xp.asarray(np.array(s[a:b], dtype=np.int64))
    return run


@kernel("Size")
def _size(n):
    xp = n.xp
    return lambda x: xp.asarray(np.array(int(np.prod(x.shape, dtype=np.int64)), np.int64))


def _reshape_dims(shape, dims, allowzero):
    out = list(dims)
    for k, d in enumerate(out):
        if d == 0 and not allowzero:
            if k >= len(shape):
                raise ValueError(f"Reshape: shape[{k}] = 0 copies a dimension the input "
                                 f"(shape {tuple(shape)}) does not have")
            out[k] = shape[k]
    return out


@kernel("Reshape")
def _reshape(n):
    allowzero = n.attr("allowzero", 0)
    if n.version < 5:
        dims = n.attr("shape", [])
        return lambda x: x.reshape(_reshape_dims(x.shape, dims, False))
    return lambda x, s: x.reshape(_reshape_dims(x.shape, ints(s), allowzero))


@kernel("Flatten")
def _flatten(n):
    axis = n.attr("axis", 1)

    def run(x):
        a = _axis(axis, x.ndim)
        lead = int(np.prod(x.shape[:a], dtype=np.int64))
        return x.reshape(lead, -1) if x.size else x.reshape(
            lead, int(np.prod(x.shape[a:], dtype=np.int64)))
    return run


@kernel("Squeeze")
def _squeeze(n):
    xp = n.xp
    if n.version < 13:
        attr_axes = n.attr("axes")

        def legacy(x):
            if attr_axes is None:
                return xp.squeeze(x)
            return xp.squeeze(x, axis=tuple(_axis(a, x.ndim) for a in attr_axes))
        return legacy

    def run(x, axes=None):
        if axes is None:
            return xp.squeeze(x)
        return xp.squeeze(x, axis=tuple(_axis(a, x.ndim) for a in ints(axes)))
    return run


def _unsqueeze(x, axes):
    r = x.ndim + len(axes)
    axes = sorted(_axis(a, r) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return x.reshape(shape)


@kernel("Unsqueeze")
def _unsqueeze_k(n):
    if n.version < 13:
        axes = n.attr("axes", [])
        return lambda x: _unsqueeze(x, axes)
    return lambda x, axes: _unsqueeze(x, ints(axes))


@kernel("Transpose")
def _transpose(n):
    xp = n.xp
    perm = n.attr("perm")
    if perm is None:
        return lambda x: xp.transpose(x)
    return lambda x: xp.transpose(x, perm)


@kernel("Concat")
def _concat(n):
    xp = n.xp
    axis = n.attr("axis", 1 if n.version < 4 else None)

    def run(*xs):
        xs = [x for x in xs if x is not None]
        ax = _axis(axis, xs[0].ndim)
        return xp.concatenate(xs, axis=ax)
    return run


@kernel("Split", multi=True)
def _split(n):
    axis = n.attr("axis", 0)
    nout = n.n_out
    attr_split = n.attr("split")
    num_outputs = n.attr("num_outputs")

    def parts(x, split):
        ax = _axis(axis, x.ndim)
        dim = x.shape[ax]
        if split is None:
            k = num_outputs if num_outputs is not None else nout
            size = -(-dim // k) if num_outputs is not None else dim // k
            split = [size] * k
            if num_outputs is not None:
                split[-1] = dim - size * (k - 1)
        if sum(split) != dim:
            raise ValueError(f"Split: split sizes {split} do not add up to the axis length {dim}")
        outs = []
        start = 0
        idx = [slice(None)] * x.ndim
        for s in split:
            idx[ax] = slice(start, start + s)
            outs.append(x[tuple(idx)])
            start += s
        return tuple(outs)

    if n.version < 13:
        return lambda x, split=None: parts(x, attr_split if split is None else ints(split))
    return lambda x, split=None: parts(x, None if split is None else ints(split))


@kernel("Slice")
def _slice(n):
    if n.version < 10:
        starts, ends, axes = n.attr("starts"), n.attr("ends"), n.attr("axes")
        return lambda x: _do_slice(x, starts, ends, axes, None)
    return lambda x, s, e, a=None, st=None: _do_slice(
        x, ints(s), ints(e), None if a is None else ints(a), None if st is None else ints(st))


def _do_slice(x, starts, ends, axes, steps):
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            raise ValueError("Slice: a step is 0")
        # Python slicing clamps as ONNX does (huge ends, negative starts, negative steps)
        idx[_axis(a, x.ndim)] = slice(s, e, st)
    return x[tuple(idx)]


@kernel("Gather")
def _gather(n):
    xp = n.xp
    axis = n.attr("axis", 0)

    def run(x, idx):
        ax = _axis(axis, x.ndim)
        dim = x.shape[ax]
        if xp is np and idx.ndim == 0:      # shape arithmetic: 0.8 us instead of 4.5
            i = int(idx)
            if not -dim <= i < dim:
                raise IndexError(f"Gather: index {i} is out of range for axis {ax} of "
                                 f"length {dim}")
            return np.array(x[(slice(None),) * ax + (i if i >= 0 else i + dim,)])
        if idx.size and xp is np:
            lo, hi = int(idx.min()), int(idx.max())
            if lo < -dim or hi >= dim:
                bad = lo if lo < -dim else hi
                raise IndexError(f"Gather: index {bad} is out of range for axis {ax} of "
                                 f"length {dim}")
        return xp.take(x, idx.astype(np.int64, copy=False), axis=ax)
    return run


@kernel("Expand")
def _expand(n):
    xp = n.xp

    def run(x, shape):
        target = np.broadcast_shapes(tuple(x.shape), tuple(ints(shape)))
        return xp.broadcast_to(x, target)
    return run


@kernel("Tile")
def _tile(n):
    xp = n.xp
    return lambda x, reps: xp.tile(x, ints(reps))


@kernel("ConstantOfShape")
def _constant_of_shape(n):
    xp = n.xp
    value = n.attr("value")
    if value is None:
        value = np.zeros(1, np.float32)
    value = np.asarray(value).reshape(-1)
    if value.dtype.kind in "SUO":
        raise Unsupported("string values")

    if not value[:1].view(np.uint8).any():
        # all-zero bits (not -0.0): zeros, which the allocator maps lazily, so a large
        # buffer is written once, by its consumer (frcnn's RoIAlign merge scatters into
        # 7.5 MB of zeros: xp.full wrote them first, 0.7 ms a run)
        return lambda shape: xp.zeros(tuple(ints(shape)), dtype=value.dtype)

    def run(shape):
        return xp.full(tuple(ints(shape)), value[0], dtype=value.dtype)
    return run


@kernel("Range")
def _range(n):
    xp = n.xp

    def run(start, limit, delta):
        dt = start.dtype
        s, lim, d = host(start).item(), host(limit).item(), host(delta).item()
        if d == 0:
            raise ValueError("Range: delta is 0")
        count = max(int(np.ceil((lim - s) / d)), 0)
        if dt.kind in "iu":
            return xp.asarray(s + d * np.arange(count, dtype=np.int64), dtype=dt)
        return (s + d * xp.arange(count, dtype=np.float64)).astype(dt) if dt != np.float64 \
            else s + d * xp.arange(count, dtype=np.float64)
    return run


@kernel("Pad")
def _pad(n):
    xp = n.xp
    mode = n.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise Unsupported(f"Pad mode {mode!r}")
    if n.version < 11:
        pads = n.attr("pads", n.attr("paddings"))
        value = n.attr("value", 0.0)
        return lambda x: _do_pad(xp, x, pads, value, None, mode)

    def run(x, pads, value=None, axes=None):
        v = 0 if value is None or value.size == 0 else host(value).reshape(-1)[0]
        return _do_pad(xp, x, ints(pads), v, None if axes is None else ints(axes), mode)
    return run


def _do_pad(xp, x, pads, value, axes, mode):
    r = x.ndim
    if axes is None:
        axes = list(range(r))
    axes = [_axis(a, r) for a in axes]
    k = len(axes)
    if len(pads) != 2 * k:
        raise ValueError(f"Pad: pads has {len(pads)} values; expected {2 * k}")
    width = [[0, 0] for _ in range(r)]
    for j, a in enumerate(axes):
        width[a] = [pads[j], pads[j + k]]
    # negative pads crop
    idx = tuple(slice(-b if b < 0 else 0, (x.shape[a] + e) if e < 0 else None)
                for a, (b, e) in enumerate(width))
    x = x[idx]
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if not any(b or e for b, e in width):
        return x
    if mode == "constant":
        return xp.pad(x, width, mode="constant", constant_values=x.dtype.type(value))
    return xp.pad(x, width, mode=mode)


@kernel("Identity")
def _identity(n):
    return lambda x: x


@kernel("Dropout", multi=True)
def _dropout(n):
    xp = n.xp
    if n.has_input(2) or (n.version < 7 and not n.attr("is_test", 0)):
        raise Unsupported("training mode")     # random: onnx.reference's generator

    def run(x, ratio=None):
        return x, xp.ones(x.shape, dtype=bool)
    return run


@kernel("EyeLike")
def _eyelike(n):
    xp = n.xp
    k = n.attr("k", 0)
    dt = n.attr("dtype")

    def run(x):
        dtype = x.dtype if dt is None else _np_dtype(dt)
        return xp.eye(x.shape[0], x.shape[1], k=k, dtype=dtype)
    return run


@kernel("Trilu")
def _trilu(n):
    xp = n.xp
    upper = n.attr("upper", 1)

    def run(x, k=None):
        kk = 0 if k is None else ints(k)[0]
        return xp.triu(x, kk) if upper else xp.tril(x, kk)
    return run


@kernel("OneHot")
def _onehot(n):
    xp = n.xp
    axis = n.attr("axis", -1)

    def run(indices, depth, values):
        d = int(host(depth).reshape(-1)[0])
        idx = indices.astype(np.int64)
        idx = xp.where(idx < 0, idx + d, idx)
        r = indices.ndim + 1
        ax = _axis(axis, r)
        hot = xp.expand_dims(idx, ax) == xp.arange(d).reshape(
            [d if k == ax else 1 for k in range(r)])
        return xp.where(hot, values[1], values[0])
    return run


@kernel("DepthToSpace")
def _depth_to_space(n):
    xp = n.xp
    b = n.attr("blocksize")
    mode = n.attr("mode", "DCR")

    def run(x):
        N, C, H, W = x.shape
        if mode == "DCR":
            t = x.reshape(N, b, b, C // (b * b), H, W).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(N, C // (b * b), b, b, H, W).transpose(0, 1, 4, 2, 5, 3)
        return xp.ascontiguousarray(t).reshape(N, C // (b * b), H * b, W * b)
    return run


@kernel("SpaceToDepth")
def _space_to_depth(n):
    xp = n.xp
    b = n.attr("blocksize")

    def run(x):
        N, C, H, W = x.shape
        t = x.reshape(N, C, H // b, b, W // b, b).transpose(0, 3, 5, 1, 2, 4)
        return xp.ascontiguousarray(t).reshape(N, C * b * b, H // b, W // b)
    return run


@kernel("CumSum")
def _cumsum(n):
    xp = n.xp
    exclusive, reverse = n.attr("exclusive", 0), n.attr("reverse", 0)

    def run(x, axis):
        ax = _axis(ints(axis)[0], x.ndim)
        y = xp.flip(x, ax) if reverse else x
        out = xp.cumsum(y, axis=ax, dtype=x.dtype)
        if exclusive:
            out = out - y
        return xp.flip(out, ax) if reverse else out
    return run


@kernel("Einsum")
def _einsum(n):
    xp = n.xp
    eq = n.attr("equation").replace(" ", "")
    return lambda *xs: xp.einsum(eq, *xs)


# ------------------------------------------------------------------ reductions
_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2",
           "ReduceLogSum": "logsum", "ReduceLogSumExp": "logsumexp",
           "ReduceSumSquare": "sumsquare"}
# the version in which `axes` became an input
_AXES_INPUT = {"ReduceSum": 13}


@kernel(*_REDUCE)
def _reduce(n):
    xp = n.xp
    kind = _REDUCE[n.op_type]
    keepdims = bool(n.attr("keepdims", 1))
    noop = n.attr("noop_with_empty_axes", 0)
    as_input = n.version >= _AXES_INPUT.get(n.op_type, 18)
    attr_axes = n.attr("axes")

    def reduce(x, axes):
        if axes is None or len(axes) == 0:
            if noop and as_input:
                return x
            axes = tuple(range(x.ndim))
        else:
            axes = tuple(sorted({_axis(a, x.ndim) for a in axes}))
        dt = x.dtype
        empty = any(x.shape[a] == 0 for a in axes)
        if kind == "sum":
            out = xp.sum(x, axis=axes, keepdims=keepdims, dtype=dt)
        elif kind == "mean":
            out = xp.mean(x, axis=axes, keepdims=keepdims).astype(dt, copy=False)
        elif kind in ("max", "min"):
            if empty:
                if dt.kind == "f":
                    fill = -np.inf if kind == "max" else np.inf
                elif dt.kind == "b":
                    fill = kind == "min"
                else:
                    info = np.iinfo(dt)
                    fill = info.min if kind == "max" else info.max
                shape = [1 if (a in axes) else s for a, s in enumerate(x.shape)]
                if not keepdims:
                    shape = [s for a, s in enumerate(x.shape) if a not in axes]
                return xp.full(shape, fill, dtype=dt)
            f = xp.max if kind == "max" else xp.min
            out = f(x, axis=axes, keepdims=keepdims)
        elif kind == "prod":
            out = xp.prod(x, axis=axes, keepdims=keepdims, dtype=dt)
        elif kind == "l1":
            out = xp.sum(xp.abs(x), axis=axes, keepdims=keepdims, dtype=dt)
        elif kind == "l2":
            out = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=keepdims)).astype(dt, copy=False)
        elif kind == "logsum":
            out = xp.log(xp.sum(x, axis=axes, keepdims=keepdims)).astype(dt, copy=False)
        elif kind == "sumsquare":
            out = xp.sum(x * x, axis=axes, keepdims=keepdims, dtype=dt)
        else:   # logsumexp, shifted by the max for range
            if empty:
                return xp.log(xp.sum(xp.exp(x), axis=axes, keepdims=keepdims)).astype(dt)
            m = xp.max(x, axis=axes, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            s = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
            out = s if keepdims else xp.squeeze(s, axis=axes)
            out = out.astype(dt, copy=False)
        return out

    if as_input:
        return _quiet(lambda x, axes=None: reduce(x, None if axes is None else ints(axes)))
    return _quiet(lambda x: reduce(x, attr_axes))


@kernel("ArgMax", "ArgMin")
def _argmax(n):
    xp = n.xp
    axis = n.attr("axis", 0)
    keepdims = n.attr("keepdims", 1)
    last = n.attr("select_last_index", 0)
    f = xp.argmax if n.op_type == "ArgMax" else xp.argmin

    def run(x):
        ax = _axis(axis, x.ndim)
        if last:
            r = x.shape[ax] - 1 - f(xp.flip(x, ax), axis=ax)
        else:
            r = f(x, axis=ax)
        r = xp.asarray(r, dtype=np.int64)
        return xp.expand_dims(r, ax) if keepdims else r
    return run


@kernel("Softmax", "LogSoftmax", "Hardmax")
def _softmax(n):
    xp = n.xp
    legacy = n.version < 13
    axis = n.attr("axis", 1 if legacy else -1)
    kind = n.op_type

    def along(x, ax):
        if kind == "Hardmax":
            idx = xp.argmax(x, axis=ax)
            return (xp.expand_dims(idx, ax) == xp.arange(x.shape[ax]).reshape(
                [-1 if k == ax else 1 for k in range(x.ndim)])).astype(x.dtype)
        m = xp.max(x, axis=ax, keepdims=True) if x.size else x
        e = xp.exp(x - m)
        s = xp.sum(e, axis=ax, keepdims=True)
        if kind == "Softmax":
            return (e / s).astype(x.dtype, copy=False)
        return (x - m - xp.log(s)).astype(x.dtype, copy=False)

    def run(x):
        ax = _axis(axis, x.ndim)
        if legacy:        # coerced to 2-D at axis
            shape = x.shape
            lead = int(np.prod(shape[:ax], dtype=np.int64))
            return along(x.reshape(lead, -1), 1).reshape(shape)
        return along(x, ax)
    return _quiet(run)


# ------------------------------------------------------------------ linear algebra
def _macs(a, b):
    lead = int(np.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))) \
        if a.ndim > 2 and b.ndim > 2 else int(np.prod(a.shape[:-2] or b.shape[:-2] or (1,)))
    return lead * (a.shape[-2] if a.ndim > 1 else 1) * a.shape[-1] * \
        (b.shape[-1] if b.ndim > 1 else 1)


@kernel("MatMul")
def _matmul(n):
    xp = n.xp

    def run(a, b):
        if a.ndim == 0 or b.ndim == 0:
            return xp.matmul(a, b)
        with blas_guard(xp, _macs(a, b)):
            return xp.matmul(a, b)
    return run


@kernel("Gemm")
def _gemm(n):
    xp = n.xp
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    ta, tb = n.attr("transA", 0), n.attr("transB", 0)
    act = n.epilogue
    # A constant weight (a Linear layer): Y^T = B^T A^T on the packed GEMM, B^T packed
    # once, the bias per row of Y^T and the activation applied in registers
    # (_packed_gemm.py).
    w = n.consts.get(1)
    packed = _packed_gemm.pack(xp, (w if tb else w.T) if alpha == 1.0 and
                        isinstance(w, np.ndarray) and w.ndim == 2 else None)

    def run(a, b, c=None):
        if packed is not None and b is w and a.dtype == np.float32 and a.ndim == 2 and \
                a.shape[0 if ta else 1] == (w.shape[1] if tb else w.shape[0]):
            units = w.shape[0] if tb else w.shape[1]
            no_bias = c is None or beta == 0.0
            if no_bias or (beta == 1.0 and c.dtype == np.float32 and
                           c.shape in ((units,), (1, units))):    # else: the BLAS path
                bias = None if no_bias else c.reshape(units)
                rows = a.shape[1] if ta else a.shape[0]
                yt = np.empty((1, units, rows), np.float32)
                # Y^T's right operand is A^T: A itself with transA, else A's rows
                _packed_gemm.run(packed, units, np.ascontiguousarray(a)[None], bias, act,
                                 yt, b_trans=not ta)
                return np.ascontiguousarray(yt[0].T)
        if ta:
            a = a.T
        if tb:
            b = b.T
        with blas_guard(xp, a.shape[0] * a.shape[1] * b.shape[-1]):
            y = xp.matmul(a, b)
        if alpha != 1.0:
            y = y * y.dtype.type(alpha)
        if c is not None and beta != 0.0:
            y = y + (c if beta == 1.0 else c * c.dtype.type(beta))
        return _packed_gemm.activate(xp, y, act)
    return run


EPILOGUES[("", "Gemm")] = ("Relu",)


@kernel("LayerNormalization", multi=True)
def _layernorm(n):
    xp = n.xp
    axis = n.attr("axis", -1)
    eps = n.attr("epsilon", 1e-5)
    stash = n.attr("stash_type", 1)

    def run(x, scale, bias=None):
        ax = _axis(axis, x.ndim)
        axes = tuple(range(ax, x.ndim))
        ct = np.float32 if stash == 1 and x.dtype != np.float64 else x.dtype
        xc = x.astype(ct, copy=False)
        mean = xc.mean(axis=axes, keepdims=True)
        d = xc - mean
        var = (d * d).mean(axis=axes, keepdims=True)
        inv = 1 / xp.sqrt(var + ct(eps))
        y = (d * inv).astype(x.dtype) * scale
        if bias is not None:
            y = y + bias
        return y, mean, inv
    return run


@kernel("BatchNormalization")
def _batchnorm(n):
    xp = n.xp
    eps = n.attr("epsilon", 1e-5)
    if n.attr("training_mode", 0) or sum(1 for o in n.outputs if o) > 1:
        raise Unsupported("training mode")
    if n.version < 7 and n.attr("spatial", 1) == 0:
        raise Unsupported("spatial=0")

    def run(x, scale, bias, mean, var):
        shape = (1, -1) + (1,) * (x.ndim - 2)
        inv = scale / xp.sqrt(var + var.dtype.type(eps))
        return (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)
    return run


@kernel("Constant")
def _constant(n):       # Constant nodes are folded by the compiler; kept for OPS users
    from fastops.onnx._compile import _constant_value
    value = _constant_value(n.proto)
    return lambda: value
