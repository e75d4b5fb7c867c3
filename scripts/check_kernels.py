"""Compile every CUDA kernel variant for sm_80 and sm_90 with NVRTC; no GPU needed.

CuPy's own compile_using_nvrtc asks the device for its architecture, so this calls the
low-level cupy.cuda.nvrtc bindings directly, with CUDA's include directory from
cupy.cuda.get_cuda_path().  Exit status 1 (and the NVRTC log) if any variant fails.

    python scripts/check_kernels.py
"""
import glob
import importlib
import os
import sys

ARCHS = ("sm_80", "sm_90")


def main():
    from cupy.cuda import get_cuda_path, nvrtc

    from fastops._gpu import _sources
    include = os.path.join(get_cuda_path() or "", "include")
    failures = total = 0
    for path in sorted(glob.glob(os.path.join(_sources.KERNEL_DIR, "*.cu"))):
        family = os.path.splitext(os.path.basename(path))[0]
        variants = importlib.import_module("fastops._gpu." + family).VARIANTS
        for defines in variants:
            code = _sources.source(family, defines)
            for arch in ARCHS:
                total += 1
                prog = nvrtc.createProgram(code, family + ".cu", [], [])
                opts = [f"--gpu-architecture={arch}", "-std=c++17", f"-I{include}"]
                try:
                    nvrtc.compileProgram(prog, opts)
                    nvrtc.getCUBIN(prog)
                except nvrtc.NVRTCError as exc:
                    failures += 1
                    print(f"FAIL {family} {arch} {defines}: {exc}\n{nvrtc.getProgramLog(prog)}")
                finally:
                    nvrtc.destroyProgram(prog)
        print(f"{family}: {len(variants)} variants x {len(ARCHS)} archs compiled")
    print(f"kernel check: {total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
