"""The kernel families that pay for AVX2, built a second time for x86-64-v3 (AVX2, FMA,
BMI2; -ffp-contract=off as every build, so the results are the baseline build's bits).

Each module here is its family's .pyx included verbatim (``include "../<family>.pyx"``)
and compiled with ``-march=x86-64-v3`` by setup.py.  ``fastops._dispatch`` imports it
instead of ``fastops._cpu.<family>`` when the CPU has x86-64-v3 and ``FASTOPS_SIMD`` is
not ``baseline``; ``python -m fastops info`` prints which.  Which families are here, and
why, is in docs/performance.md ("SIMD targets"): only those whose kernels got faster.
"""
