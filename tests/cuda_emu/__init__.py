"""CUDA-on-CPU emulation for the test suite (not shipped): cuda_emu.h compiles the real
kernels/*.cu with g++, fake_cupy stands in for CuPy so that the real launchers in
fastops/_gpu run.  Used by tests/test_gpu_emulated.py via :func:`emulated_cupy`."""
import contextlib
import shutil
import sys


def available():
    return shutil.which("g++") is not None


@contextlib.contextmanager
def emulated_cupy():
    """Install the fake ``cupy`` and route its arrays to fastops' GPU backend; undo all
    of it on exit (sys.modules, fastops._dispatch.prepare, fastops._gpu._compile)."""
    from tests.cuda_emu import fake_cupy
    from fastops import _dispatch
    restore = fake_cupy.install()
    orig_prepare = _dispatch.prepare

    def prepare(op, **arrays):
        # a fake ndarray is a numpy.ndarray subclass: the real prepare() would take it
        # for a host array, so claim it for the GPU backend first
        given = {k: a for k, a in arrays.items() if a is not None}
        fake = [k for k, a in given.items() if isinstance(a, fake_cupy.ndarray)]
        if not fake:
            return orig_prepare(op, **arrays)
        host = [k for k in given if k not in fake]
        if host:
            raise TypeError(f"{op}: argument {host[0]!r} is on the CPU but {fake[0]!r} is "
                            f"on the GPU (emulated)")
        return _dispatch.Backend("gpu", fake_cupy, op), tuple(arrays.values())

    # compiled "images" of the fake NVRTC are sources: keep them out of the user's cache
    import os
    cache_before = os.environ.get("FASTOPS_KERNEL_CACHE")
    os.environ["FASTOPS_KERNEL_CACHE"] = os.path.join(fake_cupy._CACHE, "images")
    compile_before = sys.modules.get("fastops._gpu._compile")
    real_cupy = getattr(compile_before, "cupy", None)
    _dispatch.prepare = prepare
    if compile_before is not None:
        compile_before.cupy = fake_cupy
        compile_before._module.cache_clear()
        compile_before._target.cache_clear()
    try:
        yield fake_cupy
    finally:
        _dispatch.prepare = orig_prepare
        comp = sys.modules.get("fastops._gpu._compile")
        if comp is not None:
            comp._module.cache_clear()
            if compile_before is None:        # imported under the fake: forget it
                del sys.modules["fastops._gpu._compile"]
                import fastops._gpu as gpu_pkg
                gpu_pkg.__dict__.pop("_compile", None)
            else:
                comp.cupy = real_cupy
                comp._target.cache_clear()
        if cache_before is None:
            os.environ.pop("FASTOPS_KERNEL_CACHE", None)
        else:
            os.environ["FASTOPS_KERNEL_CACHE"] = cache_before
        restore()
