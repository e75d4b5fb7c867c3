"""fastops.cv.resize against cv2.resize and torch (fastops._bench.cv)."""
from ._suite import make_suite

Cv, CvThreads = make_suite("cv")
