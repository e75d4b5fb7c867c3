"""Control flow: ``loop``, ONNX Loop as a Python function.

``fastops.onnx.Session`` runs Loop nodes with its own compiled-body driver (the same
rules, see fastops/onnx/_control.py); this module is the public Python form.
"""
import sys

import numpy as np

from fastops import _dispatch, _validate
from fastops._typing import Any, Optional, Sequence, Union

_OP = "loop"


def _module_of(value):
    """The array module that made ``value``: numpy, cupy, torch, jax.numpy, or None for
    Python scalars and other objects."""
    cp = sys.modules.get("cupy")        # never imported here: only if already loaded
    if cp is not None and isinstance(value, cp.ndarray):
        return cp
    if isinstance(value, (np.ndarray, np.generic)):
        return np
    root = type(value).__module__.split(".")[0]
    if root == "torch":
        return sys.modules.get("torch")
    if root in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return jnp
    return None


def _first_array(values):
    """The first array (depth-first through lists) among ``values``, or None."""
    for v in values:
        if isinstance(v, (list, tuple)):
            found = _first_array(v)
            if found is not None:
                return found
        elif v is not None and _module_of(v) is not None:
            return v
    return None


def _read_cond(value, what):
    """A Python bool from a bool, a NumPy bool or a 1-element bool array of any framework.
    ONNX cond is a bool tensor: numbers are refused rather than read as truthy."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        raise TypeError(f"{_OP}: {what} must be a bool or a 1-element bool array, got "
                        f"{type(value).__name__} {value!r}")
    if str(dtype) not in ("bool", "torch.bool"):
        raise TypeError(f"{_OP}: {what} must be a bool or a 1-element bool array, got an "
                        f"array of dtype {dtype}")
    size = 1
    for s in getattr(value, "shape", ()):
        size *= int(s)
    if size != 1:
        raise ValueError(f"{_OP}: {what} must hold exactly one bool, got an array of shape "
                         f"{tuple(value.shape)}")
    return bool(value.reshape(-1)[0]) if hasattr(value, "reshape") else bool(value)


def _stack(values, index):
    """Stack the per-iteration values of scan output ``index`` along a new axis 0, with
    the module that made them (arrays stay on their device)."""
    first = values[0]
    mod = _module_of(first)
    try:
        if mod is None or mod is np:
            return np.stack([np.asarray(v) for v in values])
        return mod.stack(values)
    except (ValueError, TypeError, RuntimeError) as exc:
        shapes = sorted({tuple(getattr(v, "shape", ())) for v in values})
        raise ValueError(f"{_OP}: scan output {index} cannot be stacked: every iteration "
                         f"must return the same shape and kind of array, got shapes "
                         f"{shapes} ({exc})") from None


def _empty_like_family(ref, dtype):
    """An empty (0,) array of ``dtype`` in the framework (and on the device) of ``ref``."""
    mod = None if ref is None else _module_of(ref)
    if mod is None or mod is np:
        return np.empty((0,), dtype)
    if getattr(mod, "__name__", "") == "torch":
        return mod.from_numpy(np.empty((0,), dtype)).to(ref.device)
    if getattr(mod, "__name__", "") == "cupy":
        with ref.device:
            return mod.empty((0,), dtype)
    return mod.asarray(np.empty((0,), dtype))


def _scan_spec(scan_outputs):
    """None, or the list of dtypes of the scan outputs (used after zero iterations)."""
    if scan_outputs is None:
        return None
    if isinstance(scan_outputs, (int, np.integer)) and not isinstance(scan_outputs, bool):
        n = _validate.integer(_OP, "scan_outputs", scan_outputs, lo=0, hi=1 << 16)
        return [np.dtype(np.float64)] * n
    if isinstance(scan_outputs, (list, tuple)):
        out = []
        for i, d in enumerate(scan_outputs):
            try:
                out.append(np.dtype(d))
            except TypeError:
                raise TypeError(f"{_OP}: scan_outputs[{i}]={d!r} is not a dtype") from None
        return out
    raise TypeError(f"{_OP}: scan_outputs must be None, a count or a sequence of dtypes, "
                    f"got {scan_outputs!r}")


@_dispatch.public
def loop(body: Any, max_trip_count: Optional[Any] = None, cond: Optional[Any] = True,
         *carried: Any, scan_outputs: Union[None, int, Sequence[Any]] = None) -> tuple:
    """ONNX Loop as a function: call ``body`` until ``max_trip_count`` iterations or a
    false condition.

    Parameters
    ----------
    body : callable ``body(i, cond, *carried) -> (cond, *carried, *scan_outputs)``
        ``i`` is the iteration number (a Python int from 0) and ``cond`` the current
        condition (a Python bool, True whenever the body runs).  It returns the next
        condition, the next value of every carried value (same count, in order) and
        any number of scan outputs (the same number at every iteration).
    max_trip_count : int, 1-element integer array or None
        At most this many iterations (0 <= max_trip_count < 2**63).  None: no limit
        (ONNX's omitted ``M``).
    cond : bool, 1-element bool array or None
        The initial condition; the loop stops as soon as the body returns a false
        condition.  None: ONNX's omitted ``cond``: the loop runs exactly
        ``max_trip_count`` times and the condition the body returns is ignored, as the
        ONNX spec says (then ``max_trip_count`` is required).
    *carried : arrays, lists of arrays (ONNX sequences) or None (ONNX optionals)
        The initial loop-carried values, passed to ``body`` and replaced by what it
        returns.  Values are never copied, so arrays stay on their device.
    scan_outputs : None, int or sequence of dtypes, keyword-only
        How many scan outputs ``body`` returns (and their dtypes), needed only to shape
        the result of zero iterations, where the body is never called: each is then an
        empty ``(0,)`` array of that dtype (float64 for a count), on the device and in
        the framework of the first array among ``carried`` (NumPy otherwise).  None
        with zero iterations: no scan outputs are returned.  When given, the body must
        return that many at every iteration.

    Returns
    -------
    tuple ``(*final_carried, *scan_outputs)``: the carried values after the last
    iteration (the initial ones after zero iterations), then each scan output stacked
    along a new axis 0 (rank + 1, also for 0-d values: ``(iterations,)``).

    Raises
    ------
    TypeError
        ``body`` is not callable; ``cond`` (given, or returned by the body) is not a
        bool; the body does not return a tuple or list; a scan output is a list or
        None (carry sequences and optionals as carried values instead).
    ValueError
        ``max_trip_count`` is negative or does not fit int64; both ``max_trip_count``
        and ``cond`` are None (an endless loop); the body returns fewer values than
        ``1 + len(carried)``, or a different number of scan outputs than before or than
        ``scan_outputs``; a scan output changes shape between iterations.

    Notes
    -----
    =================  ==========================================================
    ONNX Loop inputs   ``M`` is ``max_trip_count``, ``cond`` is ``cond`` (None =
                       omitted); ``(M, cond)`` both omitted is refused here
                       (ONNX Runtime would spin forever)
    termination        before each iteration: ``i < M`` (when M is given) and the
                       current condition (when cond is given)
    body cond          read with ``bool()`` every iteration when ``cond`` is given
                       (one device synchronization per iteration for a GPU bool);
                       ignored, never read, when ``cond`` is None
    scan outputs       stacked with the array module that made them (NumPy, CuPy,
                       torch, jax.numpy): ``(iterations, *shape)``; onnx.reference
                       stacks 0-d values to ``(iterations, 1)`` (np.vstack), ONNX
                       Runtime to ``(iterations,)`` as here
    zero iterations    carried values returned as given; scan outputs ``(0,)``
                       (ONNX Runtime gives ``(0, *shape)`` when shape inference knows
                       the shape; the Python body's shape is unknowable here)
    sequences          a carried list is passed through as is (build new lists in
                       the body rather than mutating the one you got)
    =================  ==========================================================

    The per-iteration cost is one Python call of ``body`` plus a few checks: see
    docs/onnx.md for measurements against ONNX Runtime's Loop.  With CuPy arrays among
    the arguments the loop runs under their device, as every public op does.
    """
    if not callable(body):
        raise TypeError(f"{_OP}: body must be callable, got {type(body).__name__}")
    if max_trip_count is None:
        trips = None
    else:
        trips = _validate.integer(_OP, "max_trip_count", max_trip_count, lo=0)
    run_cond = None if cond is None else _read_cond(cond, "cond")
    if trips is None and run_cond is None:
        raise ValueError(f"{_OP}: max_trip_count and cond are both None: the loop would never "
                         f"end (ONNX allows it, but no body could stop it)")
    spec = _scan_spec(scan_outputs)
    n_carried = len(carried)
    need = 1 + n_carried
    state = list(carried)
    scans = None                 # one list per scan output, made at the first iteration
    n_scan = -1
    honour = run_cond is not None
    keep_going = True if run_cond is None else run_cond
    i = 0
    while keep_going and (trips is None or i < trips):
        res = body(i, True, *state)
        if not isinstance(res, (tuple, list)):
            raise TypeError(f"{_OP}: body must return a tuple (cond, *carried, "
                            f"*scan_outputs); at iteration {i} it returned "
                            f"{type(res).__name__}")
        got = len(res)
        if n_scan < 0 or got != need + n_scan:
            if got < need:
                raise ValueError(f"{_OP}: body returned {got} value(s) at iteration {i}; "
                                 f"expected at least {need} (cond and {n_carried} carried "
                                 f"value(s))")
            if n_scan >= 0:
                raise ValueError(f"{_OP}: body returned {got - need} scan output(s) at "
                                 f"iteration {i} but {n_scan} before")
            n_scan = got - need
            if spec is not None and n_scan != len(spec):
                raise ValueError(f"{_OP}: body returned {n_scan} scan output(s) but "
                                 f"scan_outputs says {len(spec)}")
            scans = [[] for _ in range(n_scan)]
        if honour:
            keep_going = _read_cond(res[0], f"the cond returned by body at iteration {i}")
        state[:] = res[1:need]
        for k in range(n_scan):
            v = res[need + k]
            if v is None or isinstance(v, (list, tuple)):
                raise TypeError(f"{_OP}: scan output {k} at iteration {i} is "
                                f"{'None' if v is None else type(v).__name__}; scan outputs "
                                f"must be arrays (carry sequences and optionals as carried "
                                f"values)")
            scans[k].append(v)
        i += 1
    if scans is None:            # zero iterations
        ref = _first_array(carried + (max_trip_count, cond))
        stacked = [_empty_like_family(ref, dt) for dt in (spec or [])]
    else:
        stacked = [_stack(vals, k) for k, vals in enumerate(scans)]
    return tuple(state) + tuple(stacked)


__all__ = ["loop"]
