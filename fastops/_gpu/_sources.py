"""CUDA source assembly, free of CuPy so that CI can compile every kernel without a GPU.

A kernel variant is ``(family, defines)``: the source is ``#define``s (element type,
index type, flags), then kernels/common.cuh, then kernels/<family>.cu.  Keying variants
by their preamble (not by C++ template name expressions) keeps CuPy's on-disk cache
effective (cupy/cupy#10173).  Every launcher module lists its variants in ``VARIANTS``;
scripts/check_kernels.py compiles all of them for sm_80 and sm_90 with NVRTC.
"""
import os

# NVRTC options of every fastops kernel (fastops/_gpu/_compile.py and
# scripts/check_kernels.py use these, so CI compiles exactly what runs).  Not CuPy's
# RawModule: it appends -ftz=true, which flushes denormal inputs and results of every
# float32 operation and comparison, so a GPU result would depend on denormals where the
# CPU's does not (topk([0, 1e-45], 1) picked index 0).  -ftz=false, IEEE division and
# square root; FMA contraction stays allowed (kernels that promise CPU bit-identity use
# the explicit round-to-nearest helpers of common.cuh).
NVRTC_OPTIONS = ("-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")

KERNEL_DIR = os.path.join(os.path.dirname(__file__), "kernels")

# C type of each NumPy dtype name inside the kernels (float16 is computed in float32).
CTYPE = {
    "bool": "unsigned char", "uint8": "unsigned char", "int8": "signed char",
    "uint16": "unsigned short", "int16": "short", "uint32": "unsigned int", "int32": "int",
    "uint64": "unsigned long long", "int64": "long long", "float32": "float",
    "float64": "double",
}


def _read(name):
    with open(os.path.join(KERNEL_DIR, name)) as f:
        return f.read()


def source(family, defines):
    """Full CUDA source of one variant; ``defines`` is a mapping or (name, value) pairs."""
    items = sorted(dict(defines).items())
    preamble = "".join(f"#define {k} {v}\n" for k, v in items)
    return (preamble + "#line 1 \"common.cuh\"\n" + _read("common.cuh")
            + f"#line 1 \"{family}.cu\"\n" + _read(family + ".cu"))
