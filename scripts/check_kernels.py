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

ARCHS = ("sm_80", "sm_90")
FTZ = re.compile(r"^\s*[\w.]*\.ftz[\w.]*\s.*$", re.M)


def main():
    from cupy.cuda import get_cuda_path, nvrtc

    from fastops._gpu import _sources
    include = os.path.join(get_cuda_path() or "", "include")
    failures = total = 0
    for path in sorted(glob.glob(os.path.join(_sources.KERNEL_DIR, "*.cu"))):
        family = os.path.splitext(os.path.basename(path))[0]
        variants = importlib.import_module("fastops._gpu." + family).VARIANTS
        failed_before = failures
        for defines in variants:
            code = _sources.source(family, defines)
            for arch in ARCHS:
                total += 1
                prog = nvrtc.createProgram(code, family + ".cu", [], [])
                opts = [f"--gpu-architecture={arch}", *_sources.NVRTC_OPTIONS, f"-I{include}"]
                try:
                    nvrtc.compileProgram(prog, opts)
                    nvrtc.getCUBIN(prog)
                    ptx = nvrtc.getPTX(prog)
                    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
                    ftz = FTZ.findall(ptx)
                    if ftz:
                        failures += 1
                        print(f"FAIL {family} {arch} {defines}: flush-to-zero instructions:\n"
                              + "\n".join(ftz[:5]))
                except nvrtc.NVRTCError as exc:
                    failures += 1
                    print(f"FAIL {family} {arch} {defines}: {exc}\n{nvrtc.getProgramLog(prog)}")
                finally:
                    nvrtc.destroyProgram(prog)
        bad = failures - failed_before
        print(f"{family}: {len(variants)} variants x {len(ARCHS)} archs: "
              + (f"{bad} FAILED" if bad else "compiled, no .ftz"))
    print(f"kernel check: {total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
