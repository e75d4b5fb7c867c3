"""Instance normalization from the ONNX definition, in float64 (slow, obviously right)."""
import numpy as np


def instance_norm_ref(x, scale, bias, epsilon=1e-5):
    x = np.asarray(x, dtype=np.float64)
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)       # biased
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return ((x - mean) / np.sqrt(var + epsilon) * np.asarray(scale, np.float64).reshape(shape)
            + np.asarray(bias, np.float64).reshape(shape))
