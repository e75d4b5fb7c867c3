"""The SIMD builds of fastops/_cpu/avx2 (x86-64-v3) and fastops/_cpu/avx512 (x86-64-v4):
picked at import where the CPU runs them, and bit-identical to the baseline builds (every
build has -ffp-contract=off).  The other test modules run whichever build this machine
picks; this one runs the workloads below (every family, non-trivial scales and biases,
both float widths: an AVX2 build with FMA contraction changes instance_norm here) under
FASTOPS_SIMD=baseline and under each target this CPU runs, one process each, and
compares the bytes."""
import ast
import importlib
import os
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

from fastops import _dispatch
from fastops._cpu import _runtime

# subpackage of fastops._cpu -> the families built there
BUILT = {subdir: sorted(m.name for m in pkgutil.iter_modules(
             importlib.import_module("fastops._cpu." + subdir).__path__))
         for _, subdir, _ in _dispatch.SIMD_BUILDS}
RUNS = {target: getattr(_runtime, test)() for target, _, test in _dispatch.SIMD_BUILDS}
# Results a build may change within a tolerance, not bits: deform_conv's float32 GEMM is
# fastops' own AVX-512 one in the x86-64-v4 build (include/deform_conv.hpp gemm_nt_zmm),
# the packed AVX2 one in the x86-64-v3 build (include/conv.hpp gemm_packed), NumPy's BLAS
# in the baseline build; a GEMM promises a tolerance (no two BLAS builds agree either).
# The sampling and the float64 results stay bit-identical.
_DCN_F32 = ("deform_conv2d|", "deform_conv2d float32|", "modulated_deform_conv2d float32|")
TOLERANT = {"x86-64-v4": _DCN_F32, "x86-64-v3": _DCN_F32}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def workloads():
    """Calls of every op whose family may have an AVX2 build (tests/test_parallel.py's
    medium inputs, plus parameters that make a*b+c appear: scales, biases, masks)."""
    import fastops
    import fastops.cv as fcv
    from tests.test_parallel import WORKLOADS
    rng = np.random.default_rng(1)
    calls = dict(WORKLOADS)
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((2, 6, 33, 47)).astype(dt)
        grid = rng.uniform(-1.2, 1.2, (2, 21, 25, 2)).astype(dt)
        sc, bi = rng.uniform(0.5, 2, 6).astype(dt), rng.standard_normal(6).astype(dt)
        off = rng.standard_normal((2, 18, 33, 47)).astype(dt)
        msk = rng.uniform(0, 1, (2, 9, 33, 47)).astype(dt)
        w, b = rng.standard_normal((4, 6, 3, 3)).astype(dt), rng.standard_normal(4).astype(dt)
        boxes = np.sort(rng.uniform(0, 300, (500, 4)), axis=1)[:, [0, 2, 1, 3]].astype(dt)
        scores = rng.uniform(size=500).astype(dt)
        n = np.dtype(dt).name
        calls[f"instance_norm {n}"] = lambda x=x, sc=sc, bi=bi: fastops.instance_norm(
            x, sc, bi, epsilon=1e-3)
        for mode in ("bilinear", "nearest", "bicubic"):
            for pad in ("zeros", "border", "reflection"):
                for ac in (False, True):
                    calls[f"grid_sample {n} {mode} {pad} {ac}"] = (
                        lambda x=x, g=grid, m=mode, p=pad, a=ac:
                        fastops.grid_sample(x, g, mode=m, padding_mode=p, align_corners=a))
        # float bilinear zeros with <= 4 channels: the x86-64-v3 and -v4 builds' direct
        # path (grid_sample.hpp linear2_direct, 8 or 16 points at a time); special and edge
        # coordinates, strided views, and a smooth grid whose points are mostly inside (the
        # pair loads of whole vectors of inside points; a random grid rarely has 16 in a row).
        # float32 only: float64 takes the plan path in both builds, where a NaN sample's
        # payload (all NaN alike) differs between the builds' code
        g3 = grid.copy()
        g3.reshape(-1)[::17] = np.nan
        g3.reshape(-1)[5::23] = np.inf
        g3.reshape(-1)[7::29] = -np.inf
        g3.reshape(-1)[3::31] = 1.0
        g3.reshape(-1)[9::37] = -1.0
        g3.reshape(-1)[11::41] = 1e30
        ys, xs = np.meshgrid(np.linspace(-0.95, 0.9, 19), np.linspace(-0.9, 1.0, 45),
                             indexing="ij")
        smooth = np.stack([0.9 * xs - 0.15 * ys, 0.15 * xs + 0.9 * ys], -1)
        smooth = np.broadcast_to(smooth, (2, 19, 45, 2)).astype(dt)
        for ac in (False, True) if dt == np.float32 else ():
            for name, xv in (("C3", x[:, :3]), ("C1 strided", x[:, 1:2, ::2]),
                             ("C4 flipped", x[:, 2:, ::-1, ::-1])):
                calls[f"grid_sample {n} bilinear zeros {ac} {name}"] = (
                    lambda xv=xv, g=g3, a=ac: fastops.grid_sample(
                        xv, g, mode="bilinear", padding_mode="zeros", align_corners=a))
            calls[f"grid_sample {n} bilinear zeros {ac} smooth"] = (
                lambda x3=x[:, :3], g=smooth, a=ac: fastops.grid_sample(
                    x3, g, mode="bilinear", padding_mode="zeros", align_corners=a))
        calls[f"deform_conv2d {n}"] = lambda x=x, o=off, w=w, b=b: fastops.deform_conv2d(
            x, o, w, b, padding=1)
        calls[f"modulated_deform_conv2d {n}"] = (
            lambda x=x, o=off, m=msk, w=w, b=b:
            fastops.modulated_deform_conv2d(x, o, m, w, b, padding=1))
        calls[f"nms {n}"] = lambda bx=boxes, s=scores: fastops.nms(bx, s, 0.4)
        calls[f"batched_nms {n}"] = lambda bx=boxes, s=scores: fastops.batched_nms(
            bx, s, np.arange(500) % 7, 0.4)
        calls[f"non_max_suppression {n}"] = lambda bx=boxes, s=scores: (
            fastops.non_max_suppression(bx[None], np.stack([s, s[::-1]])[None], 50, 0.4, 0.2))
        table = rng.standard_normal((300, 8)).astype(dt)
        rows = rng.integers(0, 300, (900, 1))
        upd = rng.uniform(0.5, 1.5, (900, 8)).astype(dt)
        for red in ("none", "add", "mul", "max", "min"):
            calls[f"scatter_nd {n} {red}"] = (
                lambda t=table, r=rows, u=upd, red=red: fastops.scatter_nd(t, r, u, red))
            calls[f"scatter_elements {n} {red}"] = (
                lambda t=table, u=upd, red=red: fastops.scatter_elements(
                    t, np.asarray(rows[:, 0:1].repeat(8, 1)), u, 0, red))
    # selection: the x86-64-v4 build's 16-lane column step of cummax/cummin (NaNs, ties,
    # signed zeros, a width that leaves a tail, a strided view) and short-row topk
    for dt in (np.float32, np.float64):
        c = rng.integers(-3, 4, (67, 53)).astype(dt)
        c[rng.uniform(size=c.shape) < 0.05] = np.nan
        c[rng.uniform(size=c.shape) < 0.05] = -0.0
        for op in (fastops.cummax, fastops.cummin):
            for name, v in (("", c), (" strided", c[:, 1::2]), (" 3-d", c.reshape(67, 1, 53))):
                calls[f"{op.__name__} {np.dtype(dt).name} axis 0{name}"] = (
                    lambda op=op, v=v: op(v, 0))
        calls[f"topk {np.dtype(dt).name} short rows"] = (
            lambda c=c: fastops.topk(np.nan_to_num(c[:, :20]), 5, axis=1))
        # rows of 1000 (float32: the group threshold's 16-lane compares with 32, 64 and
        # 128 groups; rows with a NaN and the rest of the heap path)
        mid = rng.integers(-40, 40, (30, 1000)).astype(dt) / 4
        mid[::7, ::13] = np.nan
        mid[1::5, 1::3] = -0.0
        for k, largest in ((10, True), (5, False), (16, True), (30, False), (60, True)):
            calls[f"topk {np.dtype(dt).name} mid rows k={k} {largest}"] = (
                lambda m=mid, k=k, la=largest: fastops.topk(m, k, 1, la))
        calls[f"nonzero {np.dtype(dt).name}"] = lambda c=c: fastops.nonzero(c)
    img = rng.integers(0, 256, (131, 157, 3), dtype=np.uint8)
    four = np.concatenate([img, img[..., :1]], axis=2)
    # (a key per source: two sources of one dtype once shared keys, and the 4-channel one
    # overwrote the 3-channel one's results)
    for src in (img, img.astype(np.float32) / 7, img.astype(np.uint16) * 201,
                img[..., 0].astype(np.int16) * -97, np.ascontiguousarray(img[..., :2]) * 3.5,
                four.astype(np.float32) / 3, four.astype(np.uint16) * 77,
                img[..., 1].astype(np.uint16) * 251, img[..., :2].astype(np.uint16) * 3):
        for flag in (fcv.INTER_NEAREST, fcv.INTER_LINEAR, fcv.INTER_CUBIC, fcv.INTER_AREA,
                     fcv.INTER_LINEAR_EXACT, fcv.INTER_NEAREST_EXACT):
            for size in ((61, 47), (300, 211)):
                key = f"cv.resize {src.dtype} {src.shape} {flag} {size}"
                assert key not in calls, key
                calls[key] = (
                    lambda s=src, f=flag, z=size: fcv.resize(s, z, interpolation=f))
    return calls


_RUN_WORKLOADS = """
import sys
import numpy as np
import fastops
from fastops import _dispatch
from tests.test_simd import workloads
from tests.test_hostile import _tuple
fastops.set_num_threads(2)
out = {}
for name, fn in workloads().items():
    for i, a in enumerate(_tuple(fn())):
        out[f"{name}|{i}"] = np.asarray(a)
used = sorted({m for m in _dispatch._KERNEL_MODULES.values()} |      # (fast paths too)
              {sys.modules[f.__module__] for f in _dispatch._FAST.values()}, key=str)
print([m.__name__ for m in used])
np.savez(sys.argv[1], **out)
"""


def _run(tmp_path, simd):
    path = tmp_path / f"{simd or 'default'}.npz"
    env = {**os.environ, "FASTOPS_SIMD": simd}
    out = subprocess.run([sys.executable, "-c", _RUN_WORKLOADS, str(path)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    return dict(np.load(path)), ast.literal_eval(out.strip().splitlines()[-1])


def _expected_module(target, family):
    """The build a family should come from under target: the newest one built at or
    below it (the dispatch rule, written out independently)."""
    order = ["x86-64-v4", "x86-64-v3"]
    subdirs = {"x86-64-v4": "avx512", "x86-64-v3": "avx2"}
    for t in order[order.index(target):] if target in order else ():
        if family in BUILT[subdirs[t]]:
            return f"fastops._cpu.{subdirs[t]}.{family}"
    return f"fastops._cpu.{family}"


@pytest.fixture(scope="module")
def baseline_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("simd"), "baseline")


@pytest.mark.parametrize("target,subdir", [(t, d) for t, d, _ in _dispatch.SIMD_BUILDS])
def test_simd_builds_give_the_baseline_bits(tmp_path, baseline_run, target, subdir):
    if not BUILT[subdir] or not RUNS[target]:
        pytest.skip(f"no {target} builds here, or the CPU does not run {target}")
    base, base_mods = baseline_run
    fast, fast_mods = _run(tmp_path, target)
    assert all(m.count(".") == 2 for m in base_mods), base_mods      # fastops._cpu.<family>
    assert sorted(fast_mods) == sorted(_expected_module(target, m.rsplit(".", 1)[1])
                                       for m in base_mods), fast_mods
    assert base.keys() == fast.keys()
    for key in base:
        a, b = base[key], fast[key]
        assert a.dtype == b.dtype and a.shape == b.shape, key
        if key.startswith(TOLERANT.get(target, ())):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-4, err_msg=key)
            continue
        assert a.tobytes() == b.tobytes(), f"{key}: the {target} build changed the result"


def test_dispatch_follows_the_cpu_and_fastops_simd(monkeypatch):
    """cpu_module() picks the newest build that exists, the CPU runs and FASTOPS_SIMD
    allows; FASTOPS_SIMD=baseline turns them off and a wrong value is named."""
    cases = [("", True, True, "x86-64-v4"), ("", True, False, "x86-64-v3"),
             ("", False, False, "baseline"), ("baseline", True, True, "baseline"),
             ("x86-64-v3", True, True, "x86-64-v3"), ("x86-64-v4", False, False, "baseline"),
             ("X86-64-V4", True, True, "x86-64-v4"), (" x86-64-v3\n", True, True, "x86-64-v3")]
    for env, v3, v4, target in cases:
        monkeypatch.setenv("FASTOPS_SIMD", env)
        monkeypatch.setattr(_runtime, "has_x86_64_v3", lambda v3=v3: v3)
        monkeypatch.setattr(_runtime, "has_x86_64_v4", lambda v4=v4: v4)
        _dispatch.simd_target.cache_clear()
        _dispatch.cpu_module.cache_clear()
        assert _dispatch.simd_target() == target, (env, v3, v4)
        for fam in ("nms", "selection", "scatter", "resample"):
            assert _dispatch.cpu_module(fam) == _expected_module(target, fam), (env, fam)
    monkeypatch.setenv("FASTOPS_SIMD", "avx9")
    _dispatch.simd_target.cache_clear()
    with pytest.raises(ValueError, match="FASTOPS_SIMD='avx9'"):
        _dispatch.simd_target()
    monkeypatch.undo()
    _dispatch.simd_target.cache_clear()
    _dispatch.cpu_module.cache_clear()


def test_info_names_the_dispatched_build():
    out = subprocess.run([sys.executable, "-m", "fastops", "info"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("CPU kernels:"))
    target = _dispatch.simd_target()
    used = {f for fams in BUILT.values() for f in fams
            if _expected_module(target, f).count(".") == 3}
    if used:
        assert target in line and all(f in line for f in used), line
    else:
        assert "baseline" in line, line


# ------------------------------------------------------------------ process-wide statics
# A function-local static of an inline function in the headers is an STB_GNU_UNIQUE
# symbol: glibc binds it to one object for every fastops module in the process (every
# family, every SIMD build), whatever RTLD_LOCAL says.  That is how the thread pool is one
# per process, and a defect for state whose content depends on the build: cv_resize's
# float plans held the building module's function pointers and tables (hot, perm), so a
# baseline module loaded beside the x86-64-v3 one (scripts/checkout_ab.py, simd_ab.py)
# ran the other build's steps, or, with a table only one build makes, wrote past its
# rows.  Every such symbol must be state that is the same for every build (substring of
# the mangled name -> why); build-specific state takes internal linkage (`static`).
PROCESS_WIDE = {
    "Pool8instance": "the thread pool (parallel.hpp): one per process by design",
    "13last_activity": "the pool's idle clock, as the pool",
    "cpu_has_": "CPU features (resample.hpp), the same for every build",
    "8simd_cap": "FASTOPS_SIMD, read once",
    "18nonzero_fill_chunk": "whether the CPU has POPCNT",
    "18cached_slice_bytes": "the L2 size",
    "14bucket_storage": "scatter's bucket scratch, filled by each call",
    "10ring_apply": "cv_resize's one-thread ring scratch and tags, reset by each call",
    "12select_short": "a constexpr lane count",
    "_Sp_make_shared_tag": "libstdc++'s own",
}


def _unique_symbols(path):
    """Names of the STB_GNU_UNIQUE symbols in an ELF64 little-endian file's .dynsym."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        pytest.skip("not an ELF64 little-endian module")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != 11:       # SHT_DYNSYM
            continue
        stroff = sections[link][4]
        for at in range(off, off + size, entsize):
            st_name, st_info = struct.unpack_from("<IB", data, at)
            if st_info >> 4 == 10:      # STB_GNU_UNIQUE
                end = data.index(b"\0", stroff + st_name)
                names.append(data[stroff + st_name:end].decode())
    return names


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF modules only")
def test_unique_symbols_are_process_wide_state():
    mods = [("fastops._cpu." + m.name) for m in pkgutil.iter_modules(
        importlib.import_module("fastops._cpu").__path__) if not m.ispkg]
    for subdir, fams in BUILT.items():
        mods += [f"fastops._cpu.{subdir}.{fam}" for fam in fams]
    stray = {}
    for name in mods:
        path = importlib.util.find_spec(name).origin
        for sym in _unique_symbols(path):
            if not any(key in sym for key in PROCESS_WIDE):
                stray.setdefault(name, []).append(sym)
    assert not stray, ("function-local statics shared by every module of the process; "
                       f"give build-specific state internal linkage: {stray}")
