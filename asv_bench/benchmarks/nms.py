"""non_max_suppression, nms, batched_nms against NumPy, ONNX Runtime, OpenCV and torchvision
(fastops._bench.nms)."""
from ._suite import make_suite

Nms, NmsThreads = make_suite("nms")
