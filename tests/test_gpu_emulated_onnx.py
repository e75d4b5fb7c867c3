"""fastops.onnx.Session on CuPy arrays, run on the CPU through tests/cuda_emu (see
tests/test_gpu_emulated.py for the harness): seed-op nodes go to the real GPU launchers
and .cu sources, the common ops to the CuPy namespace, fallback nodes through the host,
Loop bodies keep their values on the device.  Results are compared with the NumPy
Session on the same model (the same rules as the other emulated tests: integer outputs
and the kernels that promise it bit for bit; float kernels within their documented
tolerance).

The fake CuPy has only the functions the launchers use; this module adds, for its own
duration, NumPy-backed versions of the CuPy functions the common-op kernels call (all of
which real CuPy has) and removes them afterwards.
"""
import numpy as np
import pytest

from tests import cuda_emu
from tests.cuda_emu import host
from tests.test_onnx_session import assert_same, load_node_case, run_session

onnx = pytest.importorskip("onnx")
pytestmark = pytest.mark.skipif(not cuda_emu.available(), reason="needs g++ (CUDA emulation)")

# CuPy functions (all in real CuPy) that fastops.onnx's common kernels use (not the ones
# named like Python builtins, max/min/round: fake_cupy's own code calls the builtins)
_EXTRA = ("add", "subtract", "multiply", "true_divide", "floor_divide", "equal", "less",
          "greater", "less_equal", "greater_equal", "logical_xor", "exp", "log", "sqrt",
          "matmul", "squeeze", "transpose", "expand_dims", "reshape", "clip", "power", "mod",
          "fmod", "negative", "ceil", "sign", "mean", "flip",
          "moveaxis", "tensordot", "pad", "isinf", "tanh", "reciprocal")


cp = cuda_emu.cupy_fixture(
    lambda fake: {n: fake._forward(n) for n in _EXTRA if not hasattr(fake, n)})


def _to_gpu(cp, v):
    if isinstance(v, list):
        return [_to_gpu(cp, x) for x in v]
    if v is None:
        return None
    return cp.asarray(v)


CASES = ["test_top_k", "test_top_k_smallest", "test_scatter_elements_with_axis",
         "test_scatter_elements_with_reduction_max", "test_scatternd_add",
         "test_gather_elements_negative_indices", "test_gathernd_example_int32_batch_dim1",
         "test_nonmaxsuppression_two_batches", "test_nonmaxsuppression_center_point_box_format",
         "test_roialign_aligned_true", "test_roialign_mode_max", "test_nonzero_example",
         "test_resize_upsample_scales_linear", "test_resize_downsample_sizes_nearest",
         "test_gridsample_bicubic", "test_instancenorm_epsilon",
         "test_deform_conv_with_mask_bias", "test_loop11", "test_loop13_seq", "test_if",
         "test_scan9_sum"]


@pytest.mark.parametrize("name", CASES)
def test_node_case_on_gpu(cp, name):
    model, feeds, want = load_node_case(name)
    _, cpu = run_session(model, feeds)
    _, gpu = run_session(model, {k: _to_gpu(cp, v) for k, v in feeds.items()})
    got = [host(v) for v in gpu]
    for k, (g, c, w) in enumerate(zip(got, cpu, want)):
        assert_same(g, w, f"{name} output {k} (GPU vs expected)")
        if not isinstance(c, list) and np.asarray(c).dtype.kind in "iub":
            np.testing.assert_array_equal(g, c)          # integer outputs: exact


def test_loop_body_on_gpu(cp):
    """The iteration counter, the carried values and the scan outputs stay on the device."""
    from fastops._bench.onnx import loop_model
    import fastops.onnx as fo
    m = loop_model(4, cond_input=True)
    feeds = {"M": np.array(5, np.int64), "cond": np.array(True),
             "v0": np.arange(4, dtype=np.float32)}
    cpu = fo.Session(m).run(None, feeds)
    gpu = fo.Session(m).run(None, {k: cp.asarray(v) for k, v in feeds.items()})
    for g, c in zip(gpu, cpu):
        np.testing.assert_array_equal(host(g), c)


def test_fallback_goes_through_the_host(cp):
    """An op without a kernel (Erf) runs on onnx.reference: values go to the host and back."""
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Erf", ["x"], ["y"]),
                           helper.make_node("Add", ["y", "y"], ["z"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = np.array([0.1, -0.4, 1.5], np.float32)
    _, (cpu,) = run_session(m, {"x": x})
    _, (gpu,) = run_session(m, {"x": cp.asarray(x)})
    np.testing.assert_array_equal(host(gpu), cpu)


def test_mixed_devices_refused(cp):
    import fastops.onnx as fo
    from fastops._bench.onnx import loop_model
    s = fo.Session(loop_model(4))
    with pytest.raises(TypeError, match="CuPy"):
        s.run(None, {"M": np.array(2, np.int64), "cond": np.array(True),
                     "v0": cp.zeros(4, dtype=np.float32)})


def test_fastops_loop_keeps_device_arrays(cp):
    """fastops.loop: carried values and stacked scan outputs stay CuPy arrays."""
    from fastops.control import loop
    x = cp.asarray(np.arange(3, dtype=np.float32))
    v, s = loop(lambda i, c, a: (True, a + 1, a * 2), 4, True, x)
    assert type(v) is type(x) and type(s) is type(x)
    np.testing.assert_array_equal(s.get(), np.stack([(np.arange(3) + k) * 2 for k in range(4)]))
    _, e = loop(lambda i, c, a: (True, a, a), 0, True, x, scan_outputs=[np.float32])
    assert type(e) is type(x) and e.shape == (0,)
