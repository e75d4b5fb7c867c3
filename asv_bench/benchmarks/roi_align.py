"""roi_align against ONNX Runtime and torchvision (fastops._bench.roi_align)."""
from ._suite import make_suite

RoiAlign, RoiAlignThreads = make_suite("roi_align")
