"""Compile every CUDA kernel variant for sm_80 and sm_90 with NVRTC; no GPU needed.

The options are fastops' own (fastops/_gpu/_sources.py NVRTC_OPTIONS: what
fastops/_gpu/_compile.py uses at run time), and each variant's PTX is read back and
checked: no float instruction may carry `.ftz` (flush-to-zero makes a result depend on
denormals where the CPU's does not; CuPy's RawModule would add -ftz=true, which is why
fastops does not compile through it).  CuPy's compile_using_nvrtc asks the device for its
architecture, so this calls the low-level cupy.cuda.nvrtc bindings directly.  Exit
status 1 (and the NVRTC log) if any variant fails.

    python scripts/check_kernels.py
"""
import glob
import importlib
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor

ARCHS = ("sm_80", "sm_90")
FTZ = re.compile(r"^\s*[\w.]*\.ftz[\w.]*\s.*$", re.M)


def compile_variant(family, defines, arch):
    """NVRTC-compile one variant; None if it compiled without .ftz, else what failed."""
    from cupy.cuda import get_cuda_path, nvrtc

    from fastops._gpu import _sources
    include = os.path.join(get_cuda_path() or "", "include")
    prog = nvrtc.createProgram(_sources.source(family, defines), family + ".cu", [], [])
    opts = [f"--gpu-architecture={arch}", *_sources.NVRTC_OPTIONS, f"-I{include}"]
    try:
        nvrtc.compileProgram(prog, opts)
        nvrtc.getCUBIN(prog)
        ptx = nvrtc.getPTX(prog)
        ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
        ftz = FTZ.findall(ptx)
        if ftz:
            return "flush-to-zero instructions:\n" + "\n".join(ftz[:5])
        return None
    except nvrtc.NVRTCError as exc:
        return f"{exc}\n{nvrtc.getProgramLog(prog)}"
    finally:
        nvrtc.destroyProgram(prog)


def main():
    from fastops._gpu import _sources
    jobs = []
    for path in sorted(glob.glob(os.path.join(_sources.KERNEL_DIR, "*.cu"))):
        family = os.path.splitext(os.path.basename(path))[0]
        variants = importlib.import_module("fastops._gpu." + family).VARIANTS
        jobs += [(family, defines, arch) for defines in variants for arch in ARCHS]
    # NVRTC compiles on every core, one program per process: the check is CPU-bound
    # (90 s on one core of the 2-core Zen 1 VM, 49 on both)
    with ProcessPoolExecutor(len(os.sched_getaffinity(0))) as pool:   # the usable cores
        errors = list(pool.map(compile_variant, *zip(*jobs)))
    failures = 0
    for family in sorted({job[0] for job in jobs}):
        mine = [(job, err) for job, err in zip(jobs, errors) if job[0] == family]
        bad = [(job, err) for job, err in mine if err]
        for (_, defines, arch), err in bad:
            print(f"FAIL {family} {arch} {defines}: {err}")
        failures += len(bad)
        print(f"{family}: {len(mine) // len(ARCHS)} variants x {len(ARCHS)} archs: "
              + (f"{len(bad)} FAILED" if bad else "compiled, no .ftz"))
    print(f"kernel check: {len(jobs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
