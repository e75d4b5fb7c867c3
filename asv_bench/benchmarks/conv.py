"""deform_conv2d against ONNX Runtime and torchvision (fastops._bench.conv)."""
from ._suite import make_suite

DeformConv, DeformConvThreads = make_suite("conv")
