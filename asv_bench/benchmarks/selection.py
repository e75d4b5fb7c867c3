"""topk, cummax/cummin, nonzero against NumPy, ONNX Runtime and torch (fastops._bench.selection)."""
from ._suite import make_suite

Selection, SelectionThreads = make_suite("selection")
