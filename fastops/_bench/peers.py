"""Peer set-up helpers: one-node ONNX Runtime sessions, torch/cupy conversion.

Everything here imports its peer lazily and raises NotImplementedError when the peer
is missing, so a benchmark of a missing peer is skipped, never an error.
"""
import numpy as np

import fastops

# pip name of each peer (the import name differs for OpenCV and CuPy)
PIP_NAMES = {"cv2": "opencv-python-headless", "cupy": "cupy-cuda13x", "torch": "torch",
             "torchvision": "torchvision", "onnxruntime": "onnxruntime", "onnx": "onnx",
             "dask": "dask[array] distributed"}


class PeerMissing(NotImplementedError):
    """The peer library is not installed (or does not import): as opposed to a peer that
    has no such op, which raises plain NotImplementedError."""

    def __init__(self, module):
        super().__init__(f"{module} is not installed")
        self.module = module


def _need(module):
    import importlib
    try:
        return importlib.import_module(module)
    except Exception:   # not installed, or installed but broken (a torchvision/torch mismatch)
        raise PeerMissing(module) from None


def ort_session(op_type, inputs, outputs, attrs=None, opset=18, domain=""):
    """A callable running a one-node ONNX Runtime model.

    inputs: list of (name, numpy array or None for an omitted optional input);
    outputs: list of (name, numpy dtype).  The session uses fastops' thread count
    (intra-op) and one inter-op thread, and is built here, outside any timed region.
    """
    _need("onnx")
    ort = _need("onnxruntime")
    from onnx import helper
    feeds = {n: a for n, a in inputs if a is not None}
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in inputs if a is not None]
    outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
            for n, d in outputs]
    node = helper.make_node(op_type, [n if a is not None else "" for n, a in inputs],
                            [n for n, _ in outputs], domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "bench", vi, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, opset)])
    model.ir_version = min(model.ir_version, 10)
    so = ort.SessionOptions()
    so.intra_op_num_threads = fastops.get_num_threads()
    so.inter_op_num_threads = 1
    # ORT's idle workers spin by default and then steal the cores from whatever runs
    # next (fastops, torch) in an interleaved benchmark: topk 1000x10000 went from 7 to
    # 13-21 ms next to a spinning session.  Without spinning ORT itself is as fast here.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def torch_cpu():
    torch = _need("torch")
    torch.set_num_threads(fastops.get_num_threads())
    return torch


def torch_cuda():
    torch = _need("torch")
    if not torch.cuda.is_available():
        raise NotImplementedError("no CUDA device for torch")
    return torch


def cupy():
    cp = _need("cupy")
    if not fastops.backends()["gpu"]:
        raise NotImplementedError("no CUDA device for CuPy")
    return cp


def gpu_call(fn):
    """Wrap a GPU callable so that each call waits for the device (honest timings)."""
    cp = cupy()

    def run():
        fn()
        cp.cuda.get_current_stream().synchronize()
    return run


def torch_gpu_call(fn):
    torch = torch_cuda()

    def run():
        fn()
        torch.cuda.synchronize()
    return run


def to_gpu(arrays):
    cp = cupy()
    return {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in arrays.items()}
