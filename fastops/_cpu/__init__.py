"""Cython/OpenMP kernels (compiled extensions); called only through fastops._dispatch."""
