# deform_conv built for x86-64-v4 (see __init__.py): the same source, included; its
# float32 GEMM is include/deform_conv.hpp's AVX-512 one (gemm_nt_zmm)
include "../deform_conv.pyx"
