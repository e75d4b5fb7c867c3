"""CUDA-on-CPU emulation for the test suite (not shipped): cuda_emu.h compiles the real
kernels/*.cu with g++, fake_cupy stands in for CuPy so that the real launchers in
fastops/_gpu run.  The tests/test_gpu_emulated*.py modules take their ``cp`` fixture from
:func:`cupy_fixture` and compare with :func:`host` and :func:`same`."""
import contextlib
import shutil
import sys

import numpy as np
import pytest


def available():
    return shutil.which("g++") is not None


def _forget_gpu_tables():
    """Drop the GPU entries of fastops.resample's table cache (device arrays, keyed by
    device number: the fake's and a real GPU's would share keys)."""
    from fastops import resample
    with resample._CACHE_LOCK:
        for key in [k for k in resample._CACHE if k[0] == "gpu"]:
            del resample._CACHE[key]


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
    _forget_gpu_tables()
    try:
        yield fake_cupy
    finally:
        _dispatch.prepare = orig_prepare
        comp = sys.modules.get("fastops._gpu._compile")
        _forget_gpu_tables()      # fake arrays must not reach a real GPU's calls
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


def cupy_fixture(extend=None):
    """The module-scoped ``cp`` fixture of an emulated-GPU test module: the fake cupy for the
    module's duration, then a check that nothing of it leaks into later modules.
    ``extend(fake)`` may return {name: attribute} that the module needs and the fake lacks
    (say cuBLAS matmul); they are removed again afterwards."""
    @pytest.fixture(scope="module")
    def cp():
        from fastops import _dispatch
        before = sys.modules.get("cupy")
        with emulated_cupy() as fake:
            added = extend(fake) if extend is not None else {}
            for name, value in added.items():
                assert not hasattr(fake, name), f"the fake cupy has {name} now: use it"
                setattr(fake, name, value)
            try:
                yield fake
            finally:
                for name in added:
                    delattr(fake, name)
                    fake._FORWARDED.discard(name)
        assert sys.modules.get("cupy") is before
        assert _dispatch.prepare.__module__ == "fastops._dispatch"
        assert "fastops._gpu._compile" not in sys.modules or \
            sys.modules["fastops._gpu._compile"].cupy is not fake
    return cp


def host(a):
    """A fake-GPU result (or tuple/list of them) on the host; fails on a host array, which
    would mean the op ran on the CPU."""
    if isinstance(a, tuple):        # named tuples too: compared as plain tuples
        return tuple(host(v) for v in a)
    if isinstance(a, list):
        return [host(v) for v in a]
    if a is None:
        return None
    assert type(a).__module__.endswith("fake_cupy"), f"result on the host: {type(a)}"
    return a.get()


def same(got, want):
    """Bit-for-bit equality of one array (NaN payloads aside: NaN == NaN here)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
