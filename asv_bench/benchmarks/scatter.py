"""scatter/gather against NumPy, ONNX Runtime and torch (fastops._bench.scatter)."""
from ._suite import make_suite

Scatter, ScatterThreads = make_suite("scatter")
