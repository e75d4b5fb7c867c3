"""resize against ONNX Runtime, torch and cv2 (fastops._bench.resample)."""
from ._suite import make_suite

Resample, ResampleThreads = make_suite("resample")
