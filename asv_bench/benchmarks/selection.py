"""topk, cummax/cummin, nonzero against NumPy, ONNX Runtime and torch (fastops._bench.selection)."""
from ._suite import make_suite

TimeSelection, ThreadsSelection = make_suite("selection")
