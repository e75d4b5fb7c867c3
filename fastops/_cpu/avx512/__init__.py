"""The kernel families that pay for AVX-512, built again for x86-64-v4 (AVX-512 F, BW,
CD, DQ, VL; -ffp-contract=off as every build, so the results are the baseline's bits,
except deform_conv's float32 GEMM, which is its own AVX-512 one here and NumPy's BLAS
elsewhere: a tolerance, as any two BLAS builds give).

As in fastops/_cpu/avx2: each module is its family's .pyx included verbatim, compiled
with ``-march=x86-64-v4`` by setup.py, and ``fastops._dispatch.cpu_module`` imports it
when the CPU has x86-64-v4 and ``FASTOPS_SIMD`` allows.  Which families are here, and
why, is in docs/performance.md ("SIMD targets"): only those whose kernels got faster
than their x86-64-v3 build.
"""
