"""Detection ops: non_max_suppression, nms, batched_nms (kernels in the "nms" family)
and roi_align (kernels in the "roi_align" family)."""
import numpy as np

from fastops import _dispatch, _validate

# ---------------------------------------------------------------- NMS section

# ----------------------------------------------------------- RoIAlign section
