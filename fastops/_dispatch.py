"""Where does an array live?  NumPy -> fastops._cpu, CuPy -> fastops._gpu, DLPack -> either.

Every public function calls :func:`prepare` once with its array arguments by name.  It
returns a :class:`Backend` and the arguments converted to that backend's array type
(NumPy or CuPy).  The backend's ``run(family, kernel, *args)`` calls
``fastops._cpu.<family>.<kernel>`` (adding the OpenMP thread count) or
``fastops._gpu.<family>.<kernel>``, and ``wrap(result)`` turns results back into the
caller's framework (torch, JAX, ...).

CuPy is imported only when a CuPy array (or a CUDA DLPack tensor) arrives, so
``import fastops`` never pays for it.
"""
import functools
import importlib
import importlib.util
import inspect
import math
import sys

import numpy as np

from fastops._threads import get_num_threads

_DL_CPU = (1, 3)          # kDLCPU, kDLCUDAHost
_DL_CUDA = (2, 13)        # kDLCUDA, kDLCUDAManaged


def _is_cupy(obj):
    # cheap test that never imports cupy: a CuPy array is only possible if cupy is loaded
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(obj, cp.ndarray)


def _dlpack_device(obj):
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack_device__"):
        return None
    return int(obj.__dlpack_device__()[0])


# argument types that are never on a GPU (the decorator's fast path skips them)
_SCALAR_TYPES = frozenset({np.ndarray, int, float, bool, str, type(None)})


def _gpu_id(obj):
    """The CUDA device id of a CuPy array or a CUDA DLPack tensor, else None."""
    if _is_cupy(obj):
        return obj.device.id
    if obj is None or isinstance(obj, (np.ndarray, int, float, str)):
        return None
    if hasattr(obj, "__dlpack_device__") and not isinstance(obj, type):
        kind, dev = obj.__dlpack_device__()
        if int(kind) in _DL_CUDA:
            return int(dev)
    return None


def _any_gpu(values):
    for v in values:
        t = type(v)
        if t in _SCALAR_TYPES:
            continue
        if t is list or t is tuple:        # sequences of arrays (ONNX sequences, *args)
            if _any_gpu(v):
                return True
        elif _gpu_id(v) is not None:
            return True
    return False


def _gpu_arguments(name, v, found):
    """(argument name, device) of every GPU array in ``v``, into ``found``."""
    if type(v) is list or type(v) is tuple:
        for k, item in enumerate(v):
            _gpu_arguments(f"{name}[{k}]", item, found)
        return
    dev = _gpu_id(v)
    if dev is not None:
        found.setdefault(name, dev)


# public namespaces below fastops: their ops are named "<namespace>.<function>"
_NAMESPACES = {"fastops.cv": "cv."}


def public(fn=None, *, fast=None, fast_outputs=()):
    """Decorator of every public op: a call with GPU arguments runs under their device
    (kernels compiled for it, outputs allocated on it, whatever the current device), and
    arguments on two different GPUs raise TypeError naming them, as mixing CPU and GPU
    does.  Arrays inside list/tuple arguments (and ``*args``) count too.  Calls without
    GPU arguments pay one compiled type test (_plain_entry).

    ``fast=(family, name, args)``: the op's compiled fast path (fastops/_cpu/_fast.pxd),
    which the entry offers the call first, through :func:`fast_path`, before the type
    test: ``args`` are the op's parameter names (strings) and constants, in the fast
    path's order.  Fast paths decline (None) anything but plain NumPy calls, GPU arrays
    included, so nothing else changes; the tiny call saves the test and the op's frame
    (cv.resize 8x8: 0.25 us of 1.6, issue 14).  A call the fast path declines is offered
    again with its small array views copied (:func:`fast_path_of_copies`), except the
    parameters named in ``fast_outputs`` (cv.resize's dst), which the op writes."""
    if fn is None:
        return lambda f: public(f, fast=fast, fast_outputs=fast_outputs)
    sig = inspect.signature(fn)
    label = _NAMESPACES.get(fn.__module__, "") + fn.__name__      # "cv.resize"

    def op(*args, **kwargs):
        if not _any_gpu(args) and not _any_gpu(kwargs.values()):
            return fn(*args, **kwargs)
        devices = {}
        for name, v in sig.bind(*args, **kwargs).arguments.items():
            _gpu_arguments(name, v, devices)
        first = next(iter(devices))
        for name, dev in devices.items():
            if dev != devices[first]:
                raise TypeError(f"{label}: argument {name!r} is on GPU {dev} but "
                                f"{first!r} is on GPU {devices[first]}; move them to one "
                                f"device (fastops does not copy between GPUs implicitly)")
        with _cupy().cuda.Device(devices[first]):
            return fn(*args, **kwargs)

    entry = functools.wraps(fn)(_plain_entry(fn, sig, op, fast, fast_outputs))
    entry.__fastops_public__ = True
    return entry


def _plain_entry(fn, sig, general, fast=None, fast_outputs=()):
    """A wrapper with ``fn``'s own parameters (names, defaults, keyword-only ones) that
    calls ``fn`` directly when every argument's type is in _SCALAR_TYPES (NumPy arrays
    and Python scalars: no GPU array can hide there) or is a tuple of such values, and
    ``general`` otherwise.  Exact parameters instead of ``*args, **kwargs`` (no dict
    packing), and the type tests in one compiled call (_runtime.plain_args: 0.1 us for
    cv.resize's six arguments where the Python tests took 0.31; the fixed cost of a tiny
    call, issue 14).  With ``fast`` (see :func:`public`) the op's fast path is offered
    the call first.  Signatures with ``*args``/``**kwargs`` get ``general`` itself."""
    params = list(sig.parameters.values())
    P = inspect.Parameter
    if any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD, P.POSITIONAL_ONLY) for p in params):
        if fast is not None:
            raise TypeError(f"{fn.__name__}: fast= needs named parameters")
        return general
    from fastops._cpu._runtime import plain_args
    namespace = {"_fn": fn, "_general": general, "_S": _SCALAR_TYPES, "_plain": plain_args,
                 "_dispatch": sys.modules[__name__]}     # (fast_path looked up per call)
    decl, call = [], []
    star = False
    for k, p in enumerate(params):
        if p.kind is P.KEYWORD_ONLY and not star:
            decl.append("*")
            star = True
        if p.default is P.empty:
            decl.append(p.name)
        else:
            namespace[f"_d{k}"] = p.default
            decl.append(f"{p.name}=_d{k}")
        call.append(f"{p.name}={p.name}" if p.kind is P.KEYWORD_ONLY else p.name)
    test = f"_plain(({''.join(p.name + ', ' for p in params)}), _S)"
    src = f"def {fn.__name__}({', '.join(decl)}):\n"
    if fast is not None:
        family, name, args = fast
        names = {p.name for p in params}
        exprs, inputs = [], []
        for k, a in enumerate(args):
            if isinstance(a, str):
                if a not in names:
                    raise TypeError(f"{fn.__name__}: fast= names no parameter {a!r}")
                exprs.append(a)
                if a not in fast_outputs:
                    inputs.append(k)
            else:
                namespace[f"_c{k}"] = a
                exprs.append(f"_c{k}")
        src += (f"    _r = _dispatch.fast_path({family!r}, {name!r}, {', '.join(exprs)})\n"
                f"    if _r is not None:\n"
                f"        return _r\n"
                f"    _r = _dispatch.fast_path_of_copies({family!r}, {name!r}, "
                f"({''.join(e + ', ' for e in exprs)}), {tuple(inputs)!r})\n"
                f"    if _r is not None:\n"
                f"        return _r\n")
    src += (f"    if {test}:\n"
            f"        return _fn({', '.join(call)})\n"
            f"    return _general({', '.join(call)})\n")
    exec(compile(src, f"<fastops.public {fn.__module__}.{fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]


def _from_dlpack_fn(obj):
    """The framework's own ``from_dlpack`` to hand results back (torch.from_dlpack, ...)."""
    root = type(obj).__module__.split(".")[0]
    if root == "jaxlib" or root == "jax":
        return importlib.import_module("jax.numpy").from_dlpack
    mod = sys.modules.get(root)
    fn = getattr(mod, "from_dlpack", None)
    if fn is None:
        raise TypeError(f"cannot return results to a {type(obj).__name__}: "
                        f"module {root!r} has no from_dlpack")
    return fn


# SIMD builds of the CPU kernel families (setup.py), newest first: the target, the
# subpackage of fastops._cpu that holds its families, the _runtime test of the CPU
SIMD_BUILDS = (("x86-64-v4", "avx512", "has_x86_64_v4"),
               ("x86-64-v3", "avx2", "has_x86_64_v3"))
_SIMD_ORDER = ("baseline", "x86-64-v3", "x86-64-v4")


@functools.lru_cache(maxsize=None)
def simd_target():
    """The newest target this CPU runs: "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2, FMA) or
    "baseline"; FASTOPS_SIMD=baseline or =x86-64-v3 caps it (e.g. to compare builds)."""
    from fastops._cpu import _runtime
    wanted = _runtime.simd_cap()    # the kernels' own reading of FASTOPS_SIMD
    for target, _, test in SIMD_BUILDS:
        if _SIMD_ORDER.index(target) <= _SIMD_ORDER.index(wanted) and getattr(_runtime, test)():
            return target
    return "baseline"


def module_for(target, family, built=None):
    """The CPU kernel module of ``family`` under ``target`` ("baseline", "x86-64-v3",
    "x86-64-v4"): the newest SIMD build of it at or below the target that setup.py made
    (fastops._cpu.avx512.<family>, fastops._cpu.avx2.<family>; only the families that
    pay are built), else fastops._cpu.<family>.  Every build gives the same bits.
    ``built(module name)`` says whether a build exists (default: in this installation;
    scripts/checkout_ab.py asks another checkout's files)."""
    if built is None:
        def built(name):
            return importlib.util.find_spec(name) is not None
    allowed = _SIMD_ORDER.index(target)
    for t, subdir, _ in SIMD_BUILDS:
        if _SIMD_ORDER.index(t) <= allowed:
            name = f"fastops._cpu.{subdir}.{family}"
            if built(name):
                return name
    return "fastops._cpu." + family


@functools.lru_cache(maxsize=None)
def cpu_module(family):
    """The CPU kernel module of ``family`` for this machine (module_for simd_target())."""
    return module_for(simd_target(), family)


def simd_families():
    """{subpackage of fastops._cpu: the families setup.py built there} per SIMD build."""
    import pkgutil
    return {subdir: sorted(m.name for m in pkgutil.iter_modules(
                importlib.import_module("fastops._cpu." + subdir).__path__))
            for _, subdir, _ in SIMD_BUILDS}


_KERNEL_MODULES = {}        # (backend name, family) -> kernel module
_KERNELS = {}               # (backend name, family, kernel name) -> kernel function
_FAST = {}                  # fast path name (unique across families) -> its function


def kernel_module(backend, family):
    """The kernel module of one op family: fastops._cpu.<family> (or a SIMD build of it,
    see cpu_module) for "cpu", fastops._gpu.<family> for
    "gpu"; cached (swap_cpu_modules replaces the CPU ones)."""
    mod = _KERNEL_MODULES.get((backend, family))
    if mod is None:
        name = cpu_module(family) if backend == "cpu" else "fastops._gpu." + family
        mod = _KERNEL_MODULES[backend, family] = importlib.import_module(name)
    return mod


def swap_cpu_modules(modules):
    """Run the CPU kernels of ``modules`` ({family: kernel module}) from now on, the compiled
    fast paths included: scripts/simd_ab.py and scripts/checkout_ab.py time builds of
    the same kernels against each other this way, in one process."""
    _KERNEL_MODULES.update({("cpu", family): mod for family, mod in modules.items()})
    _KERNELS.clear()
    _FAST.clear()


def fast_path(family, name, *args):
    """Run the compiled fast path ``name`` of a CPU kernel family (fastops/_cpu/_fast.pxd)
    on ``args``: the op's result for the common small NumPy call, None for anything else,
    after which the public function takes its general path.  A MemoryError also gives
    None: the general path then fails again and raises it naming the op."""
    fn = _FAST.get(name)
    if fn is None:
        fn = _FAST[name] = getattr(kernel_module("cpu", family), name)
    try:
        return fn(*args)
    except MemoryError:
        return None


# Views of at most this many elements are copied for the fast paths (fast_path_of_copies):
# kParallelGrain, the fast paths' own bound on most inputs (common.hpp).
_FAST_COPY_MAX = 1 << 15
_contiguous_views = None    # fastops._cpu._runtime.contiguous_views, imported on first use


def fast_path_of_copies(family, name, args, inputs):
    """:func:`fast_path` on ``args`` with every small NumPy view among ``args[i]``, i in
    ``inputs``, replaced by a C-contiguous copy; None where there is none (or the fast path
    declines the copies too).  A tiny view's general path cost 20-40 us of Python against
    the fast path's 1.5-5 us (topk on a (4, 16) slice 25 us, NumPy's own ufuncs on it
    2.5 us; issue 14); the copy costs well under a microsecond.  Only aligned, native-order
    views are copied: the fast paths decline the others for their dtype anyway."""
    global _contiguous_views
    if _contiguous_views is None:
        from fastops._cpu._runtime import contiguous_views as _contiguous_views
    copies = _contiguous_views(args, inputs, _FAST_COPY_MAX)
    return None if copies is None else fast_path(family, name, *copies)


_host_empty = None          # fastops._cpu._pool.empty, imported on the first CPU output


def _load_host_empty():
    global _host_empty
    from fastops._cpu._pool import empty
    _host_empty = empty
    return empty


# float16 arrays from this many elements convert to float32 on the pool's threads
# (include/half.hpp, built into the runtime module, so every build has it): NumPy's astype
# runs on one at ~1.3 ns an element (2.6 ms of a 6.9 ms 2000x1000 k=10 topk, hot); below
# this the pool's start costs more than it saves.
_HALF_THREADED = 1 << 15


def _nbytes(shape, dtype):
    """Exact byte count of an array (Python integers: no wrap-around)."""
    return np.dtype(dtype).itemsize * math.prod(int(s) for s in shape)


class Backend:
    """One call's backend: ``name`` is "cpu" or "gpu", ``xp`` the array module, ``op``
    the public function it serves (named in allocation errors)."""

    __slots__ = ("name", "xp", "op", "_to_framework")

    def __init__(self, name, xp, op="fastops", to_framework=None):
        self.name = name
        self.xp = xp
        self.op = op
        self._to_framework = to_framework

    def kernels(self, family):
        """The kernel module of one op family on this backend (see kernel_module)."""
        return kernel_module(self.name, family)

    def empty(self, shape, dtype, sized_by=None):
        """An uninitialized output array; large host outputs reuse pooled blocks
        (fastops/_cpu/_pool.pyx), device outputs come from CuPy's memory pool.

        The size is computed with exact integers first: an output that cannot exist, or
        that the allocator refuses, raises MemoryError naming the op, the shape and
        ``sized_by`` (the arguments that set the size, e.g. "output_size=(7, 7)")."""
        try:
            if self.name == "cpu":
                return (_host_empty or _load_host_empty())(shape, dtype)   # checks the size
            if _nbytes(shape, dtype) > sys.maxsize:
                raise MemoryError("more than any process can address")
            return self.xp.empty(tuple(map(int, shape)), dtype=dtype)
        except MemoryError as exc:
            shape = tuple(map(int, shape))
            dtype = np.dtype(dtype)
            nbytes = _nbytes(shape, dtype)
            why = f" (set by {sized_by})" if sized_by else ""
            if nbytes > sys.maxsize:
                raise MemoryError(f"{self.op}: an output of shape {shape} and dtype {dtype}"
                                  f"{why} would need {nbytes} bytes, more than any process "
                                  f"can address") from None
            raise MemoryError(f"{self.op}: cannot allocate an output of shape {shape} and "
                              f"dtype {dtype}{why} ({nbytes} bytes): {exc}") from None

    def element_view(self, a, dtype=None):
        """``a`` in ``dtype`` (no copy when it already is), copied to C order only when a
        stride is not a whole number of elements (e.g. a field of a packed record
        array): the kernels index by element strides.  float16 to float32 of a
        C-contiguous host array runs on the pool's threads (_HALF_THREADED)."""
        if dtype is not None and a.dtype != dtype:
            if (self.name == "cpu" and a.dtype == np.float16 and dtype == np.float32
                    and a.size >= _HALF_THREADED and a.flags.c_contiguous):
                from fastops._cpu import _runtime
                out = self.empty(a.shape, np.float32)
                _runtime.half_to_float32(a.reshape(-1).view(np.uint16), out.reshape(-1),
                                         simd_target() != "baseline", get_num_threads())
                return out
            a = a.astype(dtype)
        if a.flags.c_contiguous:    # (a length-1 axis may have any stride; none is used)
            return a
        if any(s % a.itemsize for s in a.strides):
            a = self.xp.ascontiguousarray(a)
        return a

    def run(self, family, kernel, *args):
        """Call ``kernel`` of ``family`` on this backend; CPU kernels also get the thread count.

        A kernel that runs out of memory (scratch, tables) raises MemoryError naming the op."""
        fn = _KERNELS.get((self.name, family, kernel))
        if fn is None:      # (the lookups are cached: tiny calls are dominated by overhead)
            fn = _KERNELS[self.name, family, kernel] = getattr(self.kernels(family), kernel)
        try:
            if self.name == "cpu":
                return fn(*args, get_num_threads())
            return fn(*args)
        except MemoryError as exc:
            raise MemoryError(f"{self.op}: out of memory for the working space of the "
                              f"{family}.{kernel} kernel ({exc or 'allocation failed'})") from None

    def wrap(self, result):
        """Return ``result`` (an array, a tuple or a named tuple of arrays) in the caller's
        framework; a named tuple keeps its type."""
        if self._to_framework is None:
            return result
        if isinstance(result, tuple):
            items = [self._to_framework(r) for r in result]
            return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
        return self._to_framework(result)


def _cupy():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("a CUDA array was given but CuPy is not installed: "
                           "pip install 'fastops[gpu]'") from exc
    return cupy


_HOST_BACKENDS = {}         # op -> its NumPy Backend (immutable after construction)


def prepare(op, **arrays):
    """Pick the backend for ``op`` from its array arguments and convert them.

    ``None`` values are passed through.  Everything that is neither CuPy nor a DLPack
    producer goes through ``np.asarray`` (lists, scalars, NumPy arrays).  Mixing CPU and
    GPU arguments raises ``TypeError`` naming the argument that disagrees with the first.
    Returns ``(backend, converted)`` where ``converted`` is a tuple in argument order.
    """
    for a in arrays.values():   # the common call: plain native aligned ndarrays (or None)
        if a is not None and (type(a) is not np.ndarray or not a.dtype.isnative
                              or not a.flags.aligned):
            break
    else:
        backend = _HOST_BACKENDS.get(op)
        if backend is None:
            backend = _HOST_BACKENDS[op] = Backend("cpu", np, op)
        return backend, tuple(arrays.values())
    where = {}            # name -> "cpu" | "gpu"
    producer = None       # the first DLPack producer: results go back to its framework
    for name, a in arrays.items():
        if a is None:
            continue
        if isinstance(a, np.ndarray):
            where[name] = "cpu"
        elif _is_cupy(a):
            where[name] = "gpu"
        else:
            dev = _dlpack_device(a)
            if dev in _DL_CUDA:
                where[name] = "gpu"
            else:
                where[name] = "cpu"
            if dev is not None and producer is None:
                producer = a
    devices = set(where.values())
    if len(devices) > 1:
        first = next(iter(where))
        for name, d in where.items():
            if d != where[first]:
                raise TypeError(
                    f"{op}: argument {name!r} is on the {d.upper()} but {first!r} is on the "
                    f"{where[first].upper()}; move them to one device (fastops does not copy "
                    f"between host and GPU implicitly)")
    device = devices.pop() if devices else "cpu"
    framework = None if producer is None else _from_dlpack_fn(producer)
    if device == "gpu":
        cp = _cupy()
        backend = Backend("gpu", cp, op, framework)
        out = tuple(None if a is None else (a if isinstance(a, cp.ndarray) else
                                            _from_dlpack(op, name, a, cp.from_dlpack))
                    for name, a in arrays.items())
    else:
        backend = Backend("cpu", np, op, framework)
        out = tuple(None if a is None else _to_numpy(op, name, a)
                    for name, a in arrays.items())
    return backend, out


def _from_dlpack(op, name, a, from_dlpack):
    """Import a DLPack producer; a framework-side refusal names the op and the argument."""
    try:
        return from_dlpack(a)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        hint = ""
        if getattr(a, "requires_grad", False):
            hint = " (it requires grad: pass .detach())"
        elif hasattr(a, "is_conj") and a.is_conj():
            hint = " (a conjugate view: pass .resolve_conj())"
        raise TypeError(f"{op}: argument {name!r} ({type(a).__module__}.{type(a).__name__} "
                        f"of dtype {getattr(a, 'dtype', '?')}) cannot be read zero-copy through "
                        f"DLPack{hint}: {exc}") from None


def _to_numpy(op, name, a):
    """A plain native-byte-order ndarray for the CPU kernels.

    ndarray subclasses are viewed as ndarray (np.matrix would otherwise change shape
    under indexing); masked arrays are refused, since the kernels cannot honour a mask.
    Non-native byte order ('>f4' on x86) and misaligned data (a field of a packed
    record, a buffer at an odd offset) are converted once here, so every kernel and
    every dtype test downstream sees native, aligned types."""
    if not isinstance(a, np.ndarray):
        if _dlpack_device(a) is not None:
            a = _from_dlpack(op, name, a, np.from_dlpack)
        else:
            try:
                a = np.asarray(a)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{op}: argument {name!r} is not an array or a sequence of "
                                f"numbers: {exc}") from None
    if type(a) is not np.ndarray:
        if isinstance(a, np.ma.MaskedArray):
            raise TypeError(f"{op}: argument {name!r} is a masked array; fastops cannot honour "
                            f"a mask: pass a.filled(value) or a.data")
        a = a.view(np.ndarray)
    if not a.dtype.isnative or not a.flags.aligned:
        # one converted copy: native byte order, and every element at an address and
        # stride aligned for its type (a misaligned load is undefined behaviour in C++)
        a = a.astype(a.dtype.newbyteorder("="), order="K")
    return a
