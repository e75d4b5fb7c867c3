"""A stand-in ``cupy`` module whose arrays live in host memory and whose RawModule runs
the real CUDA sources on the CPU (cuda_emu.h + g++).  Test-only.

* ``ndarray`` is a ``numpy.ndarray`` subclass, so a kernel pointer is the host data
  pointer.  Like CuPy it refuses to mix with plain NumPy arrays in NumPy functions and
  ufuncs (TypeError), so a launcher that hands a host array to a device op fails here too.
* CuPy compiles its own kernels with ``-ftz=true``: float32 denormals going into or
  coming out of its ufuncs, arithmetic reductions and casts are flushed to signed zero
  (on an H200, ``x == 0`` and ``x.astype(float64) == 0`` held for x = 1e-45).  The fake
  does the same (``_ftz``), so validation written with CuPy's float32 ops fails here as
  it does on a GPU.  fastops' own kernels (-ftz=false) are not affected.
* ``empty`` fills new memory with 0xA5 bytes (device memory is uninitialized), and
  every array this module allocates has guard bytes before and after its data that are
  checked after each kernel launch (out-of-bounds writes raise ``EmuLaunchError``).
* ``RawModule(code=...)`` compiles the code with ``g++ -std=c++20 -O2 -include
  cuda_emu.h`` (-mfma -ffp-contract=fast: g++ fuses a*b+c at -O2 much as NVRTC's
  default ``--fmad=true`` does, so only the _rn intrinsics keep products unfused) into a
  shared object cached by the hash of the code; ``get_function(name)`` returns a
  callable ``fn(grid, block, args, shared_mem=0)``.  Arguments are converted as CuPy
  does (ndarray -> data pointer, NumPy scalar -> its value, Python int -> int64, float
  -> float64, bool -> bool) and checked against the kernel's parameter types: a count,
  size or kind mismatch raises ``TypeError`` instead of corrupting memory.
"""
import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import types
import weakref

import numpy as _np

__version__ = "0.0.0-emulated"
HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "cuda_emu.h")
_GUARD = 64                 # guard bytes on each side of every allocation
_GUARD_BYTE = 0x5A
_POISON = 0xA5


class EmuLaunchError(RuntimeError):
    """A kernel launch that would be an error (or memory corruption) on a real device."""


# ------------------------------------------------------------------ arrays
_internal = threading.local()


_current_device = [0]        # the device stack of `with Device(i):` blocks


_TINY32 = _np.float32(_np.finfo(_np.float32).tiny)


def _ftz(a):
    """a with its float32 denormals flushed to signed zero (a plain NumPy array or scalar;
    anything else is returned as it is)."""
    if getattr(a, "dtype", None) != _np.float32:
        return a
    arr = _np.asarray(a)
    sub = (arr != 0) & (_np.abs(arr) < _TINY32)
    if not sub.any():
        return a
    flushed = _np.where(sub, _np.copysign(_np.float32(0), arr), arr).astype(_np.float32)
    return flushed if isinstance(a, _np.ndarray) else flushed[()]


def _ftz_result(res):
    if isinstance(res, tuple):
        return tuple(_ftz_result(r) for r in res)
    if isinstance(res, _np.ndarray) and res.dtype == _np.float32 and res.ndim:
        res[...] = _ftz(res.view(_np.ndarray))
        return res
    return _ftz(res)


class ndarray(_np.ndarray):
    """Host-memory array standing in for cupy.ndarray; it belongs to the device that was
    current when it was made (two fake devices: kernels refuse arrays of another one)."""

    def __array_finalize__(self, obj):
        self._dev = getattr(obj, "_dev", _current_device[-1])

    @property
    def device(self):
        return Device(self._dev)

    def get(self, stream=None, out=None):
        return _np.array(self.view(_np.ndarray), copy=True)

    def argsort(self, axis=-1, kind=None, order=None):
        return argsort(self, axis, kind)

    def sort(self, axis=-1, kind=None, order=None):
        _stable(kind)
        self.view(_np.ndarray).sort(axis=axis, kind="stable")

    def __array_function__(self, func, types_, args, kwargs):
        # CuPy forwards numpy.<f>(cupy arrays) to cupy.<f> (NEP 18) and refuses plain
        # numpy arrays among the arguments; only functions this module has are allowed.
        if not getattr(_internal, "ok", False):
            if any(t is _np.ndarray for t in types_):
                raise TypeError(f"emulated cupy: numpy.{func.__name__} mixes cupy and "
                                f"numpy arrays")
            if func.__name__ not in _FORWARDED:
                raise TypeError(f"emulated cupy: numpy.{func.__name__} on a cupy array "
                                f"(not emulated; does CuPy have it?)")
        return super().__array_function__(func, types_, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for a in inputs + tuple(kwargs.get("out", ())):
            if isinstance(a, _np.ndarray) and not isinstance(a, ndarray) and a.ndim > 0:
                raise TypeError(f"emulated cupy: {ufunc.__name__} mixes a cupy array with a "
                                f"numpy.ndarray (CuPy raises TypeError)")
        base = [_ftz(a.view(_np.ndarray)) if isinstance(a, ndarray) else _ftz(a)
                for a in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(_np.ndarray) if isinstance(o, ndarray) else o
                                  for o in kwargs["out"])
        res = getattr(ufunc, method)(*base, **kwargs)
        return _wrap(_ftz_result(res))

    def astype(self, dtype, *args, **kwargs):
        # a cast to another dtype is a CuPy kernel: float32 denormals flushed in and out
        # (to the same dtype it is a copy, or nothing with copy=False)
        if _np.dtype(dtype) == self.dtype:
            return super().astype(dtype, *args, **kwargs)
        src = _ftz(self.view(_np.ndarray))
        return _wrap(_ftz_result(src.astype(dtype, *args, **kwargs)))

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        if return_scalar:
            return arr[()]
        return arr.view(ndarray) if isinstance(arr, _np.ndarray) else arr


def _wrap(res):
    if isinstance(res, tuple):
        return tuple(_wrap(r) for r in res)
    if isinstance(res, _np.ndarray) and not isinstance(res, ndarray):
        return res.view(ndarray)
    return res


def _base(a):
    if isinstance(a, ndarray):
        return a.view(_np.ndarray)
    if isinstance(a, (list, tuple)):
        return type(a)(_base(v) for v in a)
    return a


_live = []                   # weakrefs to (raw buffer) of guarded allocations
_live_lock = threading.Lock()


def _alloc(shape, dtype, poison=True):
    dtype = _np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(int(s) for s in shape)
    n = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    raw = _np.empty(n + 2 * _GUARD, dtype=_np.uint8)
    raw[:_GUARD] = _GUARD_BYTE
    raw[_GUARD + n:] = _GUARD_BYTE
    if poison:
        raw[_GUARD:_GUARD + n] = _POISON
    with _live_lock:
        _live.append((weakref.ref(raw), n))
    return raw[_GUARD:_GUARD + n].view(dtype).reshape(shape).view(ndarray)


def check_guards():
    """Raise EmuLaunchError if any live allocation's guard bytes were overwritten."""
    with _live_lock:
        alive = []
        for ref, n in _live:
            raw = ref()
            if raw is None:
                continue
            alive.append((ref, n))
            if (raw[:_GUARD] != _GUARD_BYTE).any() or (raw[_GUARD + n:] != _GUARD_BYTE).any():
                raw[:_GUARD] = _GUARD_BYTE
                raw[_GUARD + n:] = _GUARD_BYTE
                raise EmuLaunchError(f"out-of-bounds write next to a {n}-byte allocation")
        _live[:] = alive


def empty(shape, dtype=float, order="C"):
    return _alloc(shape, dtype)


def zeros(shape, dtype=float, order="C"):
    a = _alloc(shape, dtype, poison=False)
    a.view(_np.ndarray)[...] = 0
    return a


def ones(shape, dtype=float, order="C"):
    a = _alloc(shape, dtype, poison=False)
    a.view(_np.ndarray)[...] = 1
    return a


def full(shape, fill_value, dtype=None, order="C"):
    dtype = _np.asarray(fill_value).dtype if dtype is None else dtype
    a = _alloc(shape, dtype, poison=False)
    a.view(_np.ndarray)[...] = fill_value
    return a


def _copy_in(src, dtype=None):
    if isinstance(src, ndarray) and dtype is not None and _np.dtype(dtype) != src.dtype:
        src = src.astype(dtype)         # a cast on the device (CuPy's flush)
    src = _np.asarray(_base(src), dtype=dtype)
    a = _alloc(src.shape, src.dtype, poison=False)
    a.view(_np.ndarray)[...] = src
    return a


def array(obj, dtype=None, copy=True, order="K", ndmin=0):
    a = _copy_in(obj, dtype)
    while a.ndim < ndmin:
        a = a[None]
    return a


def asarray(obj, dtype=None, order=None):
    if isinstance(obj, ndarray) and (dtype is None or _np.dtype(dtype) == obj.dtype):
        return obj
    return _copy_in(obj, dtype)


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray) and a.flags.c_contiguous and (
            dtype is None or _np.dtype(dtype) == a.dtype):
        return a
    return _copy_in(a, dtype)


def from_dlpack(obj):
    raise TypeError("emulated cupy: from_dlpack of a non-emulated array")


# forwarded functions whose CuPy kernels do float arithmetic or comparisons (the rest
# move data: take, where, concatenate, ...; sorts and searches run in CUB/Thrust)
_FLUSHING = {"cumsum", "isnan", "isfinite", "floor", "argmax", "argmin", "all", "any",
             "sum", "prod", "minimum", "maximum", "abs", "count_nonzero", "diff",
             "logical_and", "logical_or", "logical_not"}


def _forward(name):
    fn = getattr(_np, name)
    flush = _ftz if name in _FLUSHING else (lambda v: v)

    def f(*args, **kwargs):
        _internal.ok = True
        try:
            res = fn(*[flush(a) for a in _base(args)],
                     **{k: flush(_base(v)) for k, v in kwargs.items()})
            return _wrap(_ftz_result(res) if name in _FLUSHING else res)
        finally:
            _internal.ok = False
    f.__name__ = name
    _FORWARDED.add(name)
    return f


_FORWARDED = set()


for _name in ("cumsum", "concatenate", "stack", "arange", "isnan",
              "isfinite", "floor", "argmax", "argmin", "where", "nonzero", "flatnonzero",
              "all", "any", "sum", "prod", "take", "take_along_axis", "minimum", "maximum",
              "empty_like", "zeros_like", "full_like", "unique", "searchsorted",
              "broadcast_to", "abs", "logical_and", "logical_or", "logical_not",
              "count_nonzero", "diff", "repeat", "tile"):
    globals()[_name] = _forward(_name)

def _stable(kind):
    # CuPy's sort/argsort are always stable (thrust); any other kind is refused
    if kind not in (None, "stable"):
        raise ValueError(f"emulated cupy: kind={kind!r} is not supported (CuPy sorts are "
                         f"stable only)")


def argsort(a, axis=-1, kind=None):
    _stable(kind)
    return _wrap(_np.argsort(_base(a), axis=axis, kind="stable"))


def sort(a, axis=-1, kind=None):
    _stable(kind)
    return _wrap(_np.sort(_base(a), axis=axis, kind="stable"))


_FORWARDED.update(("argsort", "sort"))

for _name in ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
              "uint64", "float16", "float32", "float64", "complex64", "complex128", "dtype",
              "nan", "inf", "newaxis", "intp"):
    globals()[_name] = getattr(_np, _name)


def asnumpy(a, stream=None):
    return _np.array(_base(a), copy=True)


# ------------------------------------------------------------------ cupy.cuda
class _Stream:
    ptr = 0                  # the default stream

    def synchronize(self):
        pass


class Device:
    compute_capability = "90"

    def __init__(self, device=None):
        self.id = _current_device[-1] if device is None else int(device)
        if not 0 <= self.id < runtime.getDeviceCount():
            raise RuntimeError(f"emulated cupy: no device {self.id}")

    def synchronize(self):
        pass

    def __enter__(self):
        _current_device.append(self.id)
        return self

    def __exit__(self, *exc):
        _current_device.pop()
        return False


cuda = types.ModuleType("cupy.cuda")
cuda.Device = Device
cuda.get_current_stream = lambda *a: _Stream()
cuda.Stream = _Stream
runtime = types.ModuleType("cupy.cuda.runtime")
runtime.getDeviceCount = lambda: 2
runtime.runtimeGetVersion = lambda: 12000
runtime.getDeviceProperties = lambda dev: {"name": b"cuda_emu (CPU)", "major": 9, "minor": 0,
                                           "totalGlobalMem": 1 << 34,
                                           "multiProcessorCount": 1}
cuda.runtime = runtime


# ------------------------------------------------------------------ RawModule
_CACHE = os.environ.get("FASTOPS_CUDA_EMU_CACHE") or os.path.join(
    tempfile.gettempdir(), f"fastops_cuda_emu_{os.getuid()}")
_build_lock = threading.Lock()
_KERNEL_RE = re.compile(r'extern\s*"C"\s*__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?'
                        r'void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(')
_EXTERN_SHARED_RE = re.compile(
    r"extern\s+__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*)?)([\w\s]+?)\s+(\w+)\s*\[\s*\]\s*;")
# -O1 compiles the suite's kernels in 2/3 of -O2's time (CI compiles them cold: 193 ->
# 139 s for the emulated modules) and runs them as fast; -fexpensive-optimizations keeps
# g++'s FMA contraction (an -O2 pass), which stands in for NVRTC's default --fmad=true.
CXXFLAGS = ["-std=c++20", "-O1", "-fexpensive-optimizations", "-fPIC", "-shared", "-pthread",
            "-fno-strict-aliasing", "-mfma", "-ffp-contract=fast", "-w"]


def _kernel_names(code):
    """``extern "C" __global__`` kernels after preprocessing (macros may generate them)."""
    pre = subprocess.run(["g++", "-std=c++20", "-E", "-P", "-x", "c++", "-"], input=code,
                         capture_output=True, text=True)
    if pre.returncode:
        raise CompileException(pre.stderr)
    return sorted(set(_KERNEL_RE.findall(pre.stdout)))


class CompileException(Exception):
    pass


def _header():
    """The shim, copied into the cache with a precompiled header next to it (built once
    per header version; saves about half of each variant's compile time)."""
    text = open(HEADER).read()
    d = os.path.join(_CACHE, "pch_" + hashlib.sha256((text + " ".join(CXXFLAGS)).encode()
                                                     ).hexdigest()[:16])
    h = os.path.join(d, "cuda_emu.h")
    if not os.path.exists(h + ".gch"):
        os.makedirs(d, exist_ok=True)
        with open(h, "w") as f:
            f.write(text)
        flags = [c for c in CXXFLAGS if c != "-shared"]
        tmp = f"{h}.{os.getpid()}.gch"
        r = subprocess.run(["g++", *flags, "-x", "c++-header", h, "-o", tmp],
                           capture_output=True, text=True)
        if r.returncode == 0:
            os.replace(tmp, h + ".gch")
        elif os.path.exists(tmp):
            os.unlink(tmp)
    return h


def _build(code):
    key = hashlib.sha256((code + open(HEADER).read() + " ".join(CXXFLAGS)).encode()
                         ).hexdigest()[:24]
    so = os.path.join(_CACHE, key + ".so")
    names_file = os.path.join(_CACHE, key + ".names")
    if os.path.exists(so) and os.path.exists(names_file):
        with open(names_file) as f:
            return so, f.read().split()
    names = _kernel_names(code)
    body = _EXTERN_SHARED_RE.sub(
        lambda m: f"{m.group(2)}* {m.group(3)} = "
                  f"reinterpret_cast<{m.group(2)}*>(::emu::dyn_smem);", code)
    tramp = ["\n// ---- emulation trampolines"]
    for n in names:
        tramp.append(
            f'extern "C" int emu_launch_{n}(const unsigned* g, const unsigned* b, '
            f'unsigned long long shmem, void** args, char* err, unsigned long long errlen) '
            f'{{ return ::emu::launch({n}, g, b, shmem, args, err, errlen); }}\n'
            f'extern "C" const char* emu_sig_{n}() {{ static std::string s = '
            f'::emu::signature({n}); return s.c_str(); }}')
    os.makedirs(_CACHE, exist_ok=True)
    with _build_lock:
        header = _header()
        fd, src = tempfile.mkstemp(suffix=".cpp", dir=_CACHE)
        with os.fdopen(fd, "w") as f:
            f.write(body + "\n".join(tramp) + "\n")
        tmp_so = src[:-4] + ".so"
        r = subprocess.run(["g++", *CXXFLAGS, "-include", header, src, "-o", tmp_so],
                           capture_output=True, text=True)
        if r.returncode:
            raise CompileException(f"g++ failed on the emulated kernel source {src}:\n"
                                   f"{r.stderr[-6000:]}")
        os.replace(tmp_so, so)
        os.unlink(src)
        tmp_names = f"{names_file}.{os.getpid()}.tmp"  # processes may share the cache
        with open(tmp_names, "w") as f:
            f.write("\n".join(names))
        os.replace(tmp_names, names_file)
    return so, names


_NP_CODE = {"f": "f", "i": "i", "u": "u", "b": "b"}


def _dtype_code(dt):
    dt = _np.dtype(dt)
    return _NP_CODE.get(dt.kind, "?") + str(dt.itemsize)


def _compatible(param, have):
    """Is a value of type code ``have`` a faithful bit pattern of parameter ``param``?"""
    if param == have:
        return True
    # bool arrays read as unsigned char (CuPy passes bool data as 1-byte values)
    return {param, have} == {"u1", "b1"}


class RawKernel:
    def __init__(self, lib, name, sig):
        self.name = name
        self._launch = getattr(lib, "emu_launch_" + name)
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                 ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.c_char_p, ctypes.c_ulonglong]
        self.params = [p for p in sig.split(",") if p]
        self.launches = 0

    def _convert(self, i, param, a):
        where = f"{self.name}: argument {i}"
        if isinstance(a, ndarray):
            if not param.startswith("p"):
                raise TypeError(f"{where} is an array but the parameter is {param}")
            want = param[1:]
            if want != "v0" and not _compatible(want, _dtype_code(a.dtype)):
                raise TypeError(f"{where}: array of {a.dtype} passed for a pointer to {want}")
            return ctypes.c_void_p(a.__array_interface__["data"][0] if a.size else 0)
        if isinstance(a, _np.ndarray):
            raise TypeError(f"{where} is a numpy.ndarray (host memory); CuPy rejects it")
        if isinstance(a, bool):
            a = _np.bool_(a)
        elif isinstance(a, int):
            a = _np.int64(a)
        elif isinstance(a, float):
            a = _np.float64(a)
        if not isinstance(a, _np.generic):
            raise TypeError(f"{where}: unsupported argument type {type(a).__name__}")
        have = _dtype_code(a.dtype)
        if param.startswith("p"):
            if have not in ("u8", "i8"):
                raise TypeError(f"{where}: scalar {a.dtype} passed for pointer parameter")
            return ctypes.c_uint64(int(a) & (2**64 - 1))
        if not _compatible(param, have):
            raise TypeError(f"{where}: {a.dtype} scalar passed for a {param} parameter "
                            f"(CuPy would pass {a.dtype.itemsize} bytes)")
        return ctypes.create_string_buffer(a.tobytes(), len(a.tobytes()))

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        grid = tuple(int(v) for v in (grid if isinstance(grid, tuple) else (grid,)))
        block = tuple(int(v) for v in (block if isinstance(block, tuple) else (block,)))
        grid = grid + (1,) * (3 - len(grid))
        block = block + (1,) * (3 - len(block))
        if not (0 < block[0] <= 1024 and 0 < block[1] <= 1024 and 0 < block[2] <= 64
                and block[0] * block[1] * block[2] <= 1024):
            raise EmuLaunchError(f"{self.name}: invalid block {block}")
        if not (0 < grid[0] < 2**31 and 0 < grid[1] <= 65535 and 0 < grid[2] <= 65535):
            raise EmuLaunchError(f"{self.name}: invalid grid {grid}")
        if not 0 <= shared_mem <= 48 * 1024:
            raise EmuLaunchError(f"{self.name}: {shared_mem} B of dynamic shared memory "
                                 f"(more than 48 KiB needs an opt-in attribute)")
        args = tuple(args)
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: {len(args)} arguments for "
                            f"{len(self.params)} parameters")
        for i, a in enumerate(args):
            if isinstance(a, ndarray) and a._dev != _current_device[-1]:
                raise EmuLaunchError(f"{self.name}: argument {i} lives on device {a._dev} but "
                                     f"the launch is on device {_current_device[-1]}")
        keep = [self._convert(i, p, a) for i, (p, a) in enumerate(zip(self.params, args))]
        ptrs = (ctypes.c_void_p * max(1, len(keep)))(
            *[ctypes.cast(ctypes.pointer(k) if not isinstance(k, ctypes.Array) else k,
                          ctypes.c_void_p) for k in keep])
        g = (ctypes.c_uint * 3)(*grid)
        b = (ctypes.c_uint * 3)(*block)
        err = ctypes.create_string_buffer(512)
        rc = self._launch(g, b, int(shared_mem), ptrs, err, 512)
        self.launches += 1
        if rc:
            raise EmuLaunchError(f"{self.name}: {err.value.decode()}")
        check_guards()


class RawModule:
    def __init__(self, code=None, path=None, options=(), name_expressions=None, **kw):
        if code is None:
            raise NotImplementedError("emulated RawModule needs code=")
        self.code = code
        self.options = tuple(options)
        so, names = _build(code)
        self._lib = ctypes.CDLL(so)
        self._names = names
        self._kernels = {}

    def get_function(self, name):
        if name not in self._kernels:
            if name not in self._names:
                raise KeyError(f"emulated RawModule: no extern \"C\" kernel named {name!r}")
            sig = getattr(self._lib, "emu_sig_" + name)
            sig.restype = ctypes.c_char_p
            self._kernels[name] = RawKernel(self._lib, name, sig().decode())
        return self._kernels[name]


# --------------------------------------------------- cupy.cuda.nvrtc / cupy.cuda.function
# fastops compiles with NVRTC itself (fastops/_gpu/_compile.py) and loads the image with
# cupy.cuda.function.Module.  Here the "image" is the source, and loading it builds it
# with g++ like RawModule does; the options are recorded so tests can check them.
class NVRTCError(RuntimeError):
    pass


nvrtc = types.ModuleType("cupy.cuda.nvrtc")
nvrtc.NVRTCError = NVRTCError
nvrtc.compiled_options = []
nvrtc.getVersion = lambda: (0, 0)
nvrtc.getSupportedArchs = lambda: (80, 90)
nvrtc.createProgram = lambda code, name, headers, includes: {"code": code}
nvrtc.getProgramLog = lambda prog: ""
nvrtc.destroyProgram = lambda prog: None


def _nvrtc_compile(prog, options):
    nvrtc.compiled_options.append(tuple(options))
    prog["options"] = tuple(options)


nvrtc.compileProgram = _nvrtc_compile
nvrtc.getCUBIN = lambda prog: prog["code"].encode()
nvrtc.getPTX = lambda prog: prog["code"]


class Module:
    def load(self, image):
        self._raw = RawModule(code=image.decode() if isinstance(image, bytes) else image)

    def get_function(self, name):
        return self._raw.get_function(name)


function = types.ModuleType("cupy.cuda.function")
function.Module = Module
cuda.nvrtc = nvrtc
cuda.function = function


# ------------------------------------------------------------------ install/uninstall
def install():
    """Put this module in sys.modules as ``cupy`` (and cupy.cuda*); returns a restore fn."""
    names = [n for n in sys.modules if n == "cupy" or n.startswith("cupy.")]
    saved = {n: sys.modules.pop(n) for n in names}
    me = sys.modules[__name__]
    sys.modules["cupy"] = me
    sys.modules["cupy.cuda"] = cuda
    sys.modules["cupy.cuda.runtime"] = runtime
    sys.modules["cupy.cuda.nvrtc"] = nvrtc
    sys.modules["cupy.cuda.function"] = function

    def restore():
        for n in [n for n in sys.modules if n == "cupy" or n.startswith("cupy.")]:
            del sys.modules[n]
        sys.modules.update(saved)
    return restore
