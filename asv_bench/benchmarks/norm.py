"""instance_norm against ONNX Runtime and torch (fastops._bench.norm)."""
from ._suite import make_suite

InstanceNorm, InstanceNormThreads = make_suite("norm")
