"""Memoized kernel getter: one loaded module per (family, defines, device), never per call.

Kernels are compiled by NVRTC with fastops' own options (_sources.NVRTC_OPTIONS, no
-ftz) and loaded with cupy.cuda.function.Module; CuPy's RawModule would force -ftz=true.
The compiled image (a cubin for the device, or PTX where this NVRTC does not know the
device's architecture) is cached on disk under $FASTOPS_KERNEL_CACHE (default
~/.cache/fastops/kernels), keyed by source, options, architecture and NVRTC version, so
only the first process pays the compile (about a second per variant).
"""
import functools
import hashlib
import os

import cupy

from fastops._gpu import _sources


def _cache_dir():
    return os.environ.get("FASTOPS_KERNEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "fastops", "kernels")


@functools.lru_cache(maxsize=None)
def _target(device_id):
    """(NVRTC --gpu-architecture, image kind) for a device: its own SASS when this NVRTC
    supports its compute capability, else PTX of the newest one it knows (the driver
    compiles that)."""
    from cupy.cuda import nvrtc
    cc = int(cupy.cuda.Device(device_id).compute_capability)
    known = sorted(int(a) for a in nvrtc.getSupportedArchs())
    if cc in known:
        return f"sm_{cc}", "cubin"
    older = [a for a in known if a <= cc] or known[:1]
    return f"compute_{older[-1]}", "ptx"


def compile_image(code, arch):
    """NVRTC output for ``arch`` (e.g. "sm_90" -> cubin bytes, "compute_90" -> PTX)."""
    from cupy.cuda import nvrtc
    prog = nvrtc.createProgram(code, "fastops.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", *_sources.NVRTC_OPTIONS])
        except nvrtc.NVRTCError as exc:
            raise RuntimeError(f"fastops: NVRTC failed for {arch}:\n"
                               f"{nvrtc.getProgramLog(prog)}") from exc
        image = nvrtc.getCUBIN(prog) if arch.startswith("sm_") else nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return image if isinstance(image, bytes) else image.encode()


def _image(code, arch):
    from cupy.cuda import nvrtc
    key = hashlib.sha256("\0".join(
        [code, arch, *_sources.NVRTC_OPTIONS, str(nvrtc.getVersion())]).encode()
    ).hexdigest()[:32]
    path = os.path.join(_cache_dir(), key + (".cubin" if arch.startswith("sm_") else ".ptx"))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        pass
    image = compile_image(code, arch)
    try:   # best effort: a read-only home only costs the next process a compile
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(image)
        os.replace(tmp, path)
    except OSError:
        pass
    return image


@functools.lru_cache(maxsize=None)
def _module(family, defines, device_id):
    from cupy.cuda import function
    with cupy.cuda.Device(device_id):
        mod = function.Module()
        mod.load(_image(_sources.source(family, defines), _target(device_id)[0]))
    return mod


def kernel(family, name, **defines):
    """The ``extern "C"`` kernel ``name`` of kernels/<family>.cu built with ``defines``,
    for the current device."""
    key = tuple(sorted((k, str(v)) for k, v in defines.items()))
    return _module(family, key, cupy.cuda.Device().id).get_function(name)


def launch(fn, n_items, args, block=256, shared_mem=0):
    """Launch ``fn`` with one thread per item (grid-stride loops cap the grid)."""
    grid = max(1, min((n_items + block - 1) // block, 65535 * 8))
    fn((grid,), (block,), args, shared_mem=shared_mem)


def elem_strides(a):
    """Strides of ``a`` in elements (the public layer guarantees they divide evenly)."""
    return tuple(s // a.itemsize for s in a.strides)
