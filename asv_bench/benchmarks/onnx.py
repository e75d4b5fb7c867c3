"""fastops.onnx: Loop and exported detectors against onnxruntime and onnx.reference (fastops._bench.onnx)."""
from ._suite import make_suite

Onnx, OnnxThreads = make_suite("onnx")
