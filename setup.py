"""Builds the Cython/OpenMP CPU kernels (every fastops/_cpu/*.pyx is one extension).

Flags: -O3 -fopenmp always. -march=native only when FASTOPS_MARCH_NATIVE=1, so a wheel
built here runs on any x86-64 machine.  FASTOPS_EXTENSIONS=selection,scatter limits an
in-place development build (``python setup.py build_ext --inplace``) to those families.
FASTOPS_SANITIZE=1 builds with AddressSanitizer and UBSan (scripts/sanitize.sh).
On x86-64 the families in fastops/_cpu/avx2/ are built again for x86-64-v3 (AVX2) and
those in fastops/_cpu/avx512/ for x86-64-v4 (AVX-512), picked at import by the CPU's
features (fastops._dispatch.cpu_module).
Every extension depends on every header, so editing a .hpp rebuilds without --force.
"""
import glob
import os
import platform
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# -ffp-contract=off: several kernels promise results bit-identical to the ONNX reference,
# ONNX Runtime and their GPU twins; with FMA available (-march=native, aarch64) the
# compiler would otherwise fuse a*b+c and round once instead of twice.  Checked in CI by
# scripts/native_check.sh.
compile_args = ["-O3", "-fopenmp", "-std=c++17", "-ffp-contract=off"]
link_args = ["-fopenmp"]
if os.environ.get("FASTOPS_MARCH_NATIVE") == "1":
    compile_args.append("-march=native")
if sys.platform == "darwin":  # Apple clang has no -fopenmp; libomp via -Xpreprocessor
    compile_args = ["-O3", "-Xpreprocessor", "-fopenmp", "-std=c++17", "-ffp-contract=off"]
    link_args = ["-lomp"]
if os.environ.get("FASTOPS_SANITIZE") == "1":  # scripts/sanitize.sh: ASan + UBSan build
    sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                "-fno-sanitize-recover=undefined"]
    compile_args = [a for a in compile_args if a != "-O3"] + ["-O0", "-g1"] + sanitize  # -O0: the build is most of CI's sanitizer time
    link_args = link_args + sanitize


def extension(path, extra_args=()):
    name = os.path.splitext(path)[0].replace("/", ".")      # fastops._cpu[.avx2].<family>
    return Extension(
        name,
        [path],
        include_dirs=[np.get_include(), "fastops/_cpu/include"],
        language="c++",
        extra_compile_args=compile_args + list(extra_args),
        # a header edit rebuilds every extension (setuptools cannot see #include)
        depends=sorted(glob.glob("fastops/_cpu/include/*.hpp") + glob.glob("fastops/_cpu/*.pxd")
                       + glob.glob("fastops/_cpu/*.pyx")),
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


extensions = [extension(path) for path in sorted(glob.glob("fastops/_cpu/*.pyx"))]
# The families that pay, built again for x86-64-v3 (fastops/_cpu/avx2/__init__.py) and
# x86-64-v4 (fastops/_cpu/avx512/__init__.py); the -march=native build already has what
# the build machine has, and other machines keep the baseline.
SIMD_BUILDS = {"avx2": "x86-64-v3", "avx512": "x86-64-v4"}
X86_64 = platform.machine().lower() in ("x86_64", "amd64") and sys.platform != "darwin"
if X86_64 and os.environ.get("FASTOPS_MARCH_NATIVE") != "1" \
        and os.environ.get("FASTOPS_SANITIZE") != "1":   # (same source as the baseline)
    for subdir, march in SIMD_BUILDS.items():
        extensions += [extension(path, [f"-march={march}"])
                       for path in sorted(glob.glob(f"fastops/_cpu/{subdir}/*.pyx"))]
# setup.cfg's two compile jobs take the extensions in list order: the longest first, or
# the build ends on one of them with the other core idle (2-core Zen 1 VM, -O3: scatter
# 4.5 minutes a build, selection 2.5, grid_sample 1.5, the others about one or less).
LONGEST_FIRST = ("scatter", "selection", "grid_sample")
extensions.sort(key=lambda e: next((i for i, family in enumerate(LONGEST_FIRST)
                                    if e.name.endswith("." + family)), len(LONGEST_FIRST)))
only = os.environ.get("FASTOPS_EXTENSIONS")
if only:    # a family's name selects its SIMD builds too (a stale one would be imported)
    wanted = {name.strip() for name in only.split(",")}
    extensions = [e for e in extensions if e.name.rsplit(".", 1)[1] in wanted]
# Cython's utility code (the memoryview type and its helpers) compiled once, into this
# module, which every extension imports, instead of into each of them (Cython's shared
# utility module): a small family's -O3 compile went from 19 to 12 s on the Zen 1 VM,
# and there are 24 extensions.  Cython writes it in C (it fails on language="c++").
SHARED_UTILITY = "fastops._cpu._cyutility"
extensions.append(Extension(SHARED_UTILITY, sources=[],
                            extra_compile_args=[a for a in compile_args if a != "-std=c++17"],
                            extra_link_args=link_args))

setup(
    ext_modules=cythonize(
        extensions,
        shared_utility_qualified_name=SHARED_UTILITY,
        language_level=3,
        nthreads=int(os.environ.get("FASTOPS_BUILD_JOBS", os.cpu_count() or 1)),
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "nonecheck": False,
        },
    ),
)
