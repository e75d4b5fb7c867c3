"""grid_sample against ONNX Runtime, torch and cv2.remap (fastops._bench.grid_sample)."""
from ._suite import make_suite

GridSample, GridSampleThreads = make_suite("grid_sample")
