"""Workloads for fastops.onnx (issue 11's targets), side by side in one run.

* Loop: the body ``v = v + 1; scan = v * v_prev`` on 16 floats (two compute nodes plus
  the condition pass-through), M = 10 000 and 1 000 iterations.  Per-iteration cost =
  time / M.  Implementations: fastops.onnx.Session ("fastops"), onnxruntime, and
  onnx.reference ("numpy": the NumPy reference runtime; cond is fed, since the
  reference runs 0 iterations and crashes when it is omitted).
* An exported torchvision detector (Faster R-CNN, MobileNetV3-Large 320 FPN, random
  weights made usable by an LSUV-style rescaling, one 320x416 image): plain onnxruntime
  against ``fastops.onnx.ort_session(seed_ops=True)`` and against
  ``fastops.onnx.Session``.  The model is exported with torch.onnx (dynamo=False) on
  first use and cached in the temp directory; without an importable torchvision these
  workloads are skipped.

``export_detector`` is also what tests/test_onnx_models.py exports.
"""
import os
import tempfile

import numpy as np

from fastops._bench import Workload, peers

# ------------------------------------------------------------------ Loop


def loop_model(n_elem=16, cond_input=True, scan=True):
    """The research benchmark's Loop (research/scripts/bench_loop.py): carried ``v``,
    ``v_out = v + one`` and the scan output ``v_out * v``; with ``cond_input`` the
    condition is a graph input, else omitted ("")."""
    from onnx import TensorProto, helper
    one = helper.make_tensor("one", TensorProto.FLOAT, [n_elem], np.ones(n_elem, np.float32))
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Add", ["v_in", "one"], ["v_out"])]
    outs = [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [n_elem])]
    if scan:
        nodes.append(helper.make_node("Mul", ["v_out", "v_in"], ["s_out"]))
        outs.append(helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [n_elem]))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [n_elem])],
        outs, initializer=[one])
    loop = helper.make_node("Loop", ["M", "cond" if cond_input else "", "v0"],
                            ["v_final"] + (["scan"] if scan else []), body=body)
    inputs = [helper.make_tensor_value_info("M", TensorProto.INT64, [])]
    if cond_input:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    inputs.append(helper.make_tensor_value_info("v0", TensorProto.FLOAT, [n_elem]))
    g = helper.make_graph([loop], "loop", inputs,
                          [helper.make_tensor_value_info("v_final", TensorProto.FLOAT, None)] +
                          ([helper.make_tensor_value_info("scan", TensorProto.FLOAT, None)]
                           if scan else []))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return m


def _ort_model_session(model_bytes):
    ort = peers._need("onnxruntime")
    import fastops
    so = ort.SessionOptions()
    so.intra_op_num_threads = fastops.get_num_threads()
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def _loop_workload(M, quick):
    def make():
        return {"M": np.array(M, np.int64), "cond": np.array(True),
                "v0": np.zeros(16, np.float32)}

    def model():
        peers._need("onnx")
        return loop_model(16, cond_input=True)

    def fast(inp):
        from fastops.onnx import Session
        s = Session(model())
        return lambda: s.run(None, inp)

    def ort(inp):
        s = _ort_model_session(model().SerializeToString())
        return lambda: s.run(None, inp)

    def reference(inp):
        peers._need("onnx")
        from onnx.reference import ReferenceEvaluator
        s = ReferenceEvaluator(model())
        return lambda: s.run(None, inp)

    def gpu(inp):
        from fastops.onnx import Session
        g = peers.to_gpu(inp)
        s = Session(model())
        return peers.gpu_call(lambda: s.run(None, g))

    return Workload(name=f"onnx Loop 2-node body 16 float32 M={M}", op="loop", make=make,
                    impls={"fastops": fast, "onnxruntime": ort, "numpy": reference,
                           "fastops-gpu": gpu},
                    quick=quick)


# ------------------------------------------------------------------ detectors
IMAGE_SHAPE = (3, 320, 416)


def detector_image(seed=1):
    rng = np.random.default_rng(seed)
    return rng.random(IMAGE_SHAPE, dtype=np.float32)


def _calibrate(model, x):
    """LSUV-style: rescale every batch norm so its output has unit std on ``x``.  A
    randomly initialized MobileNetV3 otherwise shrinks activations to ~1e-8, every RoI
    gets the same features and every detection the same score."""
    import torch
    from torchvision.ops.misc import FrozenBatchNorm2d
    hooks = []

    def hook(mod, inp, out):
        s = float(out.std())
        if s > 0:
            mod.weight /= s
            mod.bias /= s
            return out / s
    for mod in model.modules():
        if isinstance(mod, (FrozenBatchNorm2d, torch.nn.BatchNorm2d)):
            hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        model([x])
    for h in hooks:
        h.remove()


def build_detector(kind):
    """A torchvision detector with random weights (weights=None, weights_backbone=None),
    small enough for CI: "frcnn" (fasterrcnn_mobilenet_v3_large_320_fpn, 20 detections),
    "mask" (Mask R-CNN on a MobileNetV3 FPN, 10 detections), "retina" (RetinaNet on a
    MobileNetV3 FPN, 20 detections), "ssd" (ssdlite320_mobilenet_v3_large, 50).  Three
    classes get a higher prior so that the score thresholds keep some boxes."""
    import torch
    import torchvision
    from torchvision.models.detection import (MaskRCNN, RetinaNet,
                                              fasterrcnn_mobilenet_v3_large_320_fpn,
                                              ssdlite320_mobilenet_v3_large)
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.backbone_utils import mobilenet_backbone
    torch.manual_seed(0)
    if kind == "frcnn":
        m = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                  box_detections_per_img=20)
        with torch.no_grad():
            m.roi_heads.box_predictor.cls_score.bias[1:4] += 4.0
    elif kind == "mask":
        bb = mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True,
                                trainable_layers=6)
        ag = AnchorGenerator(((32, 64, 128, 256, 512),) * 3, ((0.5, 1.0, 2.0),) * 3)
        m = MaskRCNN(bb, num_classes=91, rpn_anchor_generator=ag, min_size=320,
                     max_size=640, rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=150,
                     box_detections_per_img=10)
        with torch.no_grad():
            m.roi_heads.box_predictor.cls_score.bias[1:4] += 4.0
    elif kind == "retina":
        bb = mobilenet_backbone(
            backbone_name="mobilenet_v3_large", weights=None, fpn=True, trainable_layers=6,
            returned_layers=[4, 5],
            extra_blocks=torchvision.ops.feature_pyramid_network.LastLevelP6P7(256, 256))
        sizes = tuple((s, int(s * 2 ** (1 / 3)), int(s * 2 ** (2 / 3)))
                      for s in (32, 64, 128, 256))
        ag = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * 4)
        m = RetinaNet(bb, num_classes=91, anchor_generator=ag, min_size=320, max_size=640,
                      detections_per_img=20)
        with torch.no_grad():
            m.head.classification_head.cls_logits.bias.view(-1, 91)[:, 1:4] = 0.0
    elif kind == "ssd":
        m = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                          detections_per_img=50)
    else:
        raise ValueError(f"unknown detector {kind!r}")
    m.eval()
    _calibrate(m, torch.from_numpy(detector_image()))
    return m


def export_detector(kind, path, opset=17):
    """Export ``build_detector(kind)`` to ``path`` with torch.onnx.export(dynamo=False)
    for one 320x416 image; returns the path."""
    import warnings

    import torch
    m = build_detector(kind)
    x = torch.from_numpy(detector_image())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, ([x],), path, opset_version=opset, dynamo=False,
                          input_names=["image"])
    return path


def _cached_detector(kind):
    peers._need("torch")
    tv = peers._need("torchvision")
    import onnx
    import torch
    tag = f"{kind}-torch{torch.__version__}-tv{tv.__version__}-onnx{onnx.__version__}"
    path = os.path.join(tempfile.gettempdir(), f"fastops-bench-{tag}.onnx")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        export_detector(kind, tmp)
        os.replace(tmp, path)
    return path


def _detector_workload(kind, runner, quick):
    label = {"ort": "ort_session(seed_ops=True)", "session": "Session"}[runner]

    def make():
        return {"image": detector_image(), "path": _cached_detector(kind)}

    def fast(inp):
        import fastops.onnx as fo
        feeds = {"image": inp["image"]}
        if runner == "ort":
            ortm = peers._need("onnxruntime")
            import fastops
            so = ortm.SessionOptions()
            so.intra_op_num_threads = fastops.get_num_threads()
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            s = fo.ort_session(inp["path"], so, seed_ops=True)
        else:
            s = fo.Session(inp["path"])
        return lambda: s.run(None, feeds)

    def ort(inp):
        with open(inp["path"], "rb") as f:
            s = _ort_model_session(f.read())
        feeds = {"image": inp["image"]}
        return lambda: s.run(None, feeds)

    return Workload(name=f"onnx {kind} 320x416 random weights, fastops = {label}",
                    op="onnx", make=make, impls={"fastops": fast, "onnxruntime": ort},
                    quick=quick)


WORKLOADS = [
    _loop_workload(1000, quick=True),
    _loop_workload(10000, quick=False),
    _detector_workload("ssd", "ort", quick=False),
    _detector_workload("ssd", "session", quick=False),
    _detector_workload("frcnn", "ort", quick=False),
    _detector_workload("frcnn", "session", quick=False),
]
