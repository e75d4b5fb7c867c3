"""The dispatch layer, DLPack round trips, thread control and the CLI."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fastops
from tests.conftest import UTILITIES, peer, public_ops, resolve


class FakeCudaTensor:
    """Claims to live on a CUDA device (DLPack device type 2)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be converted")


def test_import_does_not_import_cupy():
    code = "import sys, fastops, numpy; fastops.topk(numpy.ones(3), 1); print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_lists_are_accepted():
    v, i = fastops.topk([3, 1, 2], 2)
    assert v.tolist() == [3, 2] and i.tolist() == [0, 2]
    assert isinstance(v, np.ndarray)


def test_mixing_devices_names_the_argument():
    from fastops import _dispatch
    with pytest.raises(TypeError, match="argument 'b' is on the GPU but 'a' is on the CPU"):
        _dispatch.prepare("op", a=np.zeros(2), b=FakeCudaTensor())


def test_torch_tensors_round_trip_zero_copy():
    torch = peer("torch")
    t = torch.tensor([[1.0, 5.0, 3.0], [2.0, 2.0, 7.0]])
    v, i = fastops.topk(t, 2)
    assert isinstance(v, torch.Tensor) and isinstance(i, torch.Tensor)
    assert v.tolist() == [[5.0, 3.0], [7.0, 2.0]] and i.tolist() == [[1, 2], [2, 0]]
    idx = fastops.nonzero(torch.tensor([0, 3, 0, 1]))
    assert isinstance(idx, torch.Tensor) and idx.tolist() == [[1, 3]]
    # zero-copy in: the kernel reads the tensor's own memory
    from fastops import _dispatch
    _, (a,) = _dispatch.prepare("op", a=t)
    assert a.ctypes.data == t.data_ptr()


def test_set_num_threads(threads):
    with threads(1):
        assert fastops.get_num_threads() == 1
    with pytest.raises(ValueError, match="set_num_threads: n=0 must be at least 1"):
        fastops.set_num_threads(0)
    with pytest.raises(TypeError, match="n must be an integer"):
        fastops.set_num_threads(1.5)


def test_threadpoolctl_limits_fastops():
    threadpoolctl = peer("threadpoolctl")
    fastops.topk(np.ones(3), 1)      # make sure the OpenMP runtime is loaded
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert fastops.get_num_threads() == 1


def test_omp_num_threads_env():
    code = "import fastops; print(fastops.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.stdout.strip() == "1"


def test_backends_and_info_cli():
    assert fastops.backends()["cpu"] is True
    out = subprocess.run([sys.executable, "-m", "fastops", "info"], capture_output=True,
                         text=True, check=True)
    assert "fastops " + fastops.__version__ in out.stdout
    assert "OpenMP threads" in out.stdout
    assert re.search(r"convolution GEMM: float32 (avx512|avx2|blas:\S+|builtin), "
                     r"float64 (blas:\S+|builtin)\n", out.stdout), out.stdout


def test_output_pool_reuses_blocks_without_aliasing_live_results():
    from fastops._cpu import _pool
    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    a_vals, a_idx = fastops.cummax(x, 1)               # 4 MiB + 8 MiB: pooled outputs
    a_copy = a_vals.copy(), a_idx.copy()
    b_vals, b_idx = fastops.cummin(x, 1)               # must not reuse a's live blocks
    np.testing.assert_array_equal(a_vals, a_copy[0])
    np.testing.assert_array_equal(a_idx, a_copy[1])
    assert not np.shares_memory(a_idx, b_idx) and not np.shares_memory(a_vals, b_vals)
    idle = _pool.idle_bytes()
    del a_vals, a_idx
    assert _pool.idle_bytes() > idle                   # a's blocks went back to the pool
    c_vals, c_idx = fastops.cummax(x, 1)               # ... and are reused, correctly
    np.testing.assert_array_equal(c_idx, a_copy[1])
    assert c_vals.flags.writeable and c_idx.flags.c_contiguous


def test_output_pool_reuses_the_block_released_last():
    """Of several idle blocks that fit, a call takes the one released last (still in the
    caches), so a loop of calls keeps writing one block: taking the oldest, a loop went
    round all of them, every output cold (a 7.5 MB gather 0.106 -> 0.30 ms with six)."""
    from fastops._cpu import _pool
    blocks = [_pool.empty((3 << 20,), np.uint8) for _ in range(4)]
    addr = [b.ctypes.data for b in blocks]
    for k in (2, 0, 3, 1):                      # released in this order: 1 is the last
        blocks[k] = None
    y = _pool.empty((3 << 20,), np.uint8)
    assert y.ctypes.data == addr[1]
    for _ in range(3):                          # a loop of calls stays on that block
        y = None
        y = _pool.empty((3 << 20,), np.uint8)
        assert y.ctypes.data == addr[1]


def test_output_pool_can_be_disabled():
    code = ("import numpy as np, fastops; from fastops._cpu import _pool;"
            "v, i = fastops.cummax(np.ones((1024, 1024), np.float32), 0); del v, i;"
            "print(_pool.idle_bytes())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "FASTOPS_POOL_BYTES": "0"})
    assert out.stdout.strip() == "0"
    # without the pool, an output no process can address is still a MemoryError naming
    # the op (not NumPy's ValueError)
    code = ("import numpy as np; from fastops import _dispatch;"
            "b = _dispatch.Backend('cpu', np, 'someop');"
            "b.empty((np.int64(2**40), 2**40), np.float32, sized_by='k')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "FASTOPS_POOL_BYTES": "0"})
    assert "MemoryError: someop: an output of shape (1099511627776, 1099511627776)" in \
        out.stderr and "more than any process can address" in out.stderr, out.stderr[-500:]


def test_views_with_unaligned_strides_match_their_copies():
    """A field of a packed record array has strides that are not whole elements; every
    op must read it like its contiguous copy (kernels index by element strides)."""
    rng = np.random.default_rng(2)
    rec = np.zeros(30, dtype=[("tag", np.int8), ("v", np.float32, (4,))])
    xy = rng.uniform(0, 50, (30, 2))
    rec["v"] = np.concatenate([xy, xy + rng.uniform(5, 20, (30, 2))], 1)
    view = rec["v"]
    assert view.strides[0] % view.itemsize
    copy = np.ascontiguousarray(view)
    scores = rng.permutation(30).astype(np.float32) / 30
    cases = [
        lambda b: fastops.topk(b, 2, axis=0),
        lambda b: fastops.cummax(b, 0),
        lambda b: fastops.nms(b, scores, 0.3),
        lambda b: fastops.batched_nms(b, scores, np.arange(30) % 3, 0.3),
        lambda b: fastops.non_max_suppression(b[None], scores[None, None], None, 0.3),
        lambda b: fastops.gather_elements(b, np.zeros((3, 4), np.int64)),
        lambda b: fastops.roi_align(b.reshape(1, 1, 10, 12), np.array([[0, 1, 1, 6, 7]],
                                                                      np.float32), 2),
    ]
    for case in cases:
        got, want = case(view), case(copy)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)


def test_output_pool_reused_block_is_not_handed_out_twice():
    """A block taken from the free list must leave it: while a reused output is alive, a
    second output of the same size must get other memory (a free-list bug that kept the
    block listed would alias them)."""
    x = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    first, _ = fastops.cummax(x, 1)          # pooled 4 MiB blocks
    del first, _
    reused, ri = fastops.cummax(x, 1)        # takes the freed blocks
    again, ai = fastops.cummin(x, 1)         # same sizes, reused still alive
    assert not np.shares_memory(reused, again) and not np.shares_memory(ri, ai)
    assert not np.shares_memory(reused, ai) and not np.shares_memory(ri, again)
    want = np.maximum.accumulate(x, 1)
    np.testing.assert_array_equal(reused, want)


def test_set_num_threads_is_process_wide():
    """A Python thread started after set_num_threads (even one whose OpenMP default
    differs, OMP_NUM_THREADS=1 here) sees the fixed count."""
    code = ("import threading, fastops; fastops.set_num_threads(2); out = [];"
            "t = threading.Thread(target=lambda: out.append(fastops.get_num_threads()));"
            "t.start(); t.join(); print(out[0])")
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == "2"


def test_value_index_pairs_are_named_tuples():
    x = np.array([[3.0, 1.0, 2.0]])
    r = fastops.topk(x, 2)
    v, i = r
    assert r.values is v and r.indices is i and i.tolist() == [[0, 2]]
    c = fastops.cummax(x, 1)
    assert c.values.tolist() == [[3, 3, 3]] and c.indices.tolist() == [[0, 0, 0]]
    assert fastops.cummin(x, 1).indices.tolist() == [[0, 1, 1]]
    torch = peer("torch")
    t = fastops.topk(torch.tensor([1.0, 5.0]), 1)
    assert isinstance(t.values, torch.Tensor) and t.indices.tolist() == [1]


def test_scalar_arguments_from_any_framework():
    x = np.array([1.0, 5.0, 3.0])
    for k in (2, np.int64(2), np.array(2), np.array([2])):
        assert fastops.topk(x, k).indices.tolist() == [1, 2]
    torch = peer("torch")
    assert fastops.topk(x, torch.tensor(2)).indices.tolist() == [1, 2]
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11]], np.float32)
    assert fastops.nms(boxes, np.array([0.9, 0.8], np.float32), torch.tensor(0.5),
                       max_num=torch.tensor(1)).tolist() == [0]
    with pytest.raises(TypeError, match="topk: k must be an integer or a 1-element integer"):
        fastops.topk(x, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="topk: k must be an integer"):
        fastops.topk(x, torch.tensor(1.5))


def test_framework_refusals_name_the_op_and_argument():
    torch = peer("torch")
    cases = [(torch.ones(3, requires_grad=True), ".detach()"),
             (torch.ones(3, dtype=torch.bfloat16), "bfloat16"),
             (torch.ones(3, dtype=torch.complex64).conj(), ".resolve_conj()")]
    for t, hint in cases:
        with pytest.raises(TypeError, match=r"topk: argument 'x' .*") as info:
            fastops.topk(t, 1)
        assert hint in str(info.value)
    with pytest.raises(TypeError, match="topk: argument 'x' is a masked array"):
        fastops.topk(np.ma.array([1.0, 2.0], mask=[0, 1]), 1)
    with pytest.warns(PendingDeprecationWarning):
        m = np.matrix([[1.0, 3.0, 2.0]])
    assert fastops.topk(m, 2).indices.tolist() == [[1, 2]]
    assert type(fastops.nonzero(m)) is np.ndarray


def test_integer_boxes_like_opencv():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], np.int32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    for dt in (np.int32, np.int64, np.uint16):
        keep = fastops.nms(boxes.astype(dt), scores, 0.5)
        np.testing.assert_array_equal(keep, fastops.nms(boxes.astype(np.float64), scores, 0.5))
        assert keep.tolist() == [0, 2]
    assert fastops.batched_nms(boxes, scores, np.array([0, 1, 0]), 0.5).tolist() == [0, 1, 2]


def test_peer_skips_installed_but_unusable_modules(tmp_path, monkeypatch):
    (tmp_path / "fastops_broken_peer.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="installed but unusable: RuntimeError"):
        peer("fastops_broken_peer")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        peer("fastops_no_such_peer")


def test_bench_cli_validates_options():
    for args, msg in ((["--ops", "topk,nope"], "unknown op(s) in --ops: nope"),
                      (["--repeat", "0"], "--repeat must be at least 1"),
                      (["--device", "gpu"], "no CUDA device")):
        if args[0] == "--device" and fastops.backends()["gpu"]:
            continue
        out = subprocess.run([sys.executable, "-m", "fastops", "bench", *args],
                             capture_output=True, text=True)
        assert out.returncode == 2 and msg in out.stderr, out.stderr


# The CLI tests run instance_norm: its one quick workload has no slow NumPy peer (cummin's
# two took 10 and 25 s of CI, most of it in np.minimum.accumulate along axis 0).
def test_bench_cli_explains_its_table():
    out = subprocess.run([sys.executable, "-m", "fastops", "bench", "--ops", "instance_norm",
                          "--repeat", "1", "--quick", "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    text = out.stdout
    assert "ratio = fastops / best peer: below 1 fastops is faster" in text
    assert "floor: the memory-bandwidth bound" in text
    rows = [line for line in text.splitlines() if line.startswith("instance_norm")]
    assert rows and len({len(r) for r in rows}) == 1          # aligned columns
    header = [line for line in text.splitlines() if line.startswith("workload (cpu)")][0]
    assert len(header) == len(rows[0])


def test_bench_cli_hot_mode():
    """--hot times each implementation's calls back to back and says so; the OpenMP wait
    settings, which change the peers' back-to-back times, are named where set."""
    import json
    import tempfile
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    env["OMP_WAIT_POLICY"] = "passive"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "hot.json")
        out = subprocess.run([sys.executable, "-m", "fastops", "bench", "--ops",
                              "instance_norm", "--repeat", "2", "--quick", "--device", "cpu",
                              "--hot", "--json", path], capture_output=True, text=True,
                             check=True, env=env)
        first = out.stdout.splitlines()[0]
        assert "back to back (--hot)" in first and first.endswith("OMP_WAIT_POLICY=passive")
        data = json.load(open(path))
    assert data["hot"] is True and data["rows"]
    assert data["thread_env"] == {"OMP_WAIT_POLICY": "passive"}
    assert all(r["ms"]["fastops"] > 0 for r in data["rows"])


def test_bench_hot_mode_interleaves_and_warms_each_timed_call(monkeypatch):
    """--hot: every timed call comes right after warm-up calls of the same impl, and
    the impls take turns (in one block each, a slow spell of the machine lands on one
    impl only)."""
    import fastops.__main__ as cli
    monkeypatch.setattr(cli, "SETTLE_S", 0.0)
    monkeypatch.setattr(cli, "HOT_WARMUP_S", 0.0)
    log = []

    class Two:
        hot_ok = True
        calls = 1

        def prepare(self, impl):
            return lambda: log.append(impl)

    repeats = 4
    res = cli.measure(Two(), ("fastops", "numpy"), repeats, {}, hot=True)
    assert set(res) == {"fastops", "numpy"}
    body = log[2:]                       # after each impl's first (preparing) call
    block = cli.HOT_WARMUP + 1
    assert len(body) == 2 * repeats * block
    blocks = [body[i:i + block] for i in range(0, len(body), block)]
    assert all(len(set(b)) == 1 for b in blocks)              # warm-ups of the timed impl
    firsts = [b[0] for b in blocks]
    assert firsts.count("fastops") == firsts.count("numpy") == repeats
    assert set(firsts[:repeats]) == {"fastops", "numpy"}        # turns, not one block each


def test_bench_quick_times_a_slow_call_once(monkeypatch):
    """bench --quick (once_over_s): an impl whose warm-up call took longer is timed
    once, the others every repeat; without once_over_s every impl is timed every repeat."""
    import time
    import fastops.__main__ as cli
    monkeypatch.setattr(cli, "SETTLE_S", 0.0)
    log = []

    class SlowAndFast:
        hot_ok = True
        calls = 1

        def prepare(self, impl):
            def call():
                log.append(impl)
                if impl == "numpy":
                    time.sleep(0.03)
            return call

    for once_over_s, numpy_calls in ((0.01, 1 + 1), (None, 1 + 3)):
        log.clear()
        res = cli.measure(SlowAndFast(), ("fastops", "numpy"), 3, {},
                          once_over_s=once_over_s)
        assert res["numpy"] >= 0.03 and set(res) == {"fastops", "numpy"}
        assert log.count("numpy") == numpy_calls and log.count("fastops") == 1 + 3


def test_bench_hot_warm_up_lasts_its_time():
    """A warm-up runs at least HOT_WARMUP calls and at least HOT_WARMUP_S: a few calls
    left cv2's resize far from its loop speed."""
    import time
    import fastops.__main__ as cli
    calls = []
    t = time.perf_counter()
    cli._warm_up(lambda: calls.append(time.sleep(0.001)), cli.HOT_WARMUP)
    assert time.perf_counter() - t >= cli.HOT_WARMUP_S
    assert len(calls) >= cli.HOT_WARMUP
    calls.clear()
    cli._warm_up(lambda: calls.append(1), 0)                # paused mode: none
    assert calls == []


def test_bench_measure_skips_a_workload_nobody_can_run():
    """A workload that no installed implementation can prepare (the ONNX model workloads
    need torchvision to export their models) gives no row, not a crash (it divided by
    the number of implementations)."""
    from fastops.__main__ import measure
    from fastops._bench.peers import PeerMissing

    class Nobody:
        hot_ok = True

        def prepare(self, impl):
            if impl == "numpy":
                raise NotImplementedError
            raise PeerMissing("torchvision")

    for hot in (False, True):
        missing = {}
        assert measure(Nobody(), ("fastops", "numpy", "onnxruntime"), 3, missing,
                       hot=hot) == {}
        assert missing == {"fastops": "torchvision", "onnxruntime": "torchvision"}


def test_bench_measure_drops_a_peer_that_refuses_on_its_first_call():
    """A peer that prepares but raises NotImplementedError when called (torch CUDA has no
    uint8 bilinear interpolate) has no such op: no row, and the others are still timed.
    It used to stay in the timed set and crash the run on its next call (the first GPU
    bench, on an H200)."""
    from fastops.__main__ import measure

    class Refusing:
        hot_ok = True
        calls = 1

        def prepare(self, impl):
            if impl == "torch-cuda":
                def refuse():
                    raise NotImplementedError("not implemented for 'Byte'")
                return refuse
            return lambda: None

    for hot in (False, True):
        missing = {}
        got = measure(Refusing(), ("fastops-gpu", "torch-cuda"), 2, missing, hot=hot)
        assert set(got) == {"fastops-gpu"} and missing == {}


def test_public_functions_are_typed():
    """py.typed ships, and every public function annotates its arguments and result, so
    editors and type checkers see the signatures (a new op must too)."""
    import inspect
    import os
    assert os.path.exists(os.path.join(os.path.dirname(fastops.__file__), "py.typed"))
    for name in public_ops() + sorted(UTILITIES):
        sig = inspect.signature(resolve(name))
        untyped = [p for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
        assert not untyped, f"{name}: parameters without annotations: {untyped}"
        assert sig.return_annotation is not inspect.Signature.empty, name


def test_every_public_op_runs_on_its_arguments_device():
    """Every public op goes through _dispatch.public (device of the GPU arguments, and a
    TypeError for arguments on two GPUs); a new op must too."""
    for name in public_ops():
        assert getattr(resolve(name), "__fastops_public__", False), name


def test_arguments_on_two_gpus_are_refused():
    from fastops import _dispatch

    class OnGpu(FakeCudaTensor):
        def __init__(self, dev):
            self.dev = dev

        def __dlpack_device__(self):
            return (2, self.dev)

    with pytest.raises(TypeError, match="gather_elements: argument 'indices' is on GPU 1 "
                                        "but 'data' is on GPU 0"):
        fastops.gather_elements(OnGpu(0), OnGpu(1))
    assert _dispatch._gpu_id(np.zeros(2)) is None and _dispatch._gpu_id(3) is None


def test_public_entry_offers_the_fast_path_first(monkeypatch):
    """@public(fast=...): the entry offers the declared arguments (parameter names in the
    call's values, defaults filled in, constants as given) to _dispatch.fast_path before
    its type test; a declined call goes on to the op; a name that is no parameter is
    refused when the op is defined."""
    from fastops import _dispatch
    seen = []

    def spy(family, name, *args):
        seen.append((family, name, args))
        return "fast" if args[0] == "take" else None
    monkeypatch.setattr(_dispatch, "fast_path", spy)
    marker = object()

    @_dispatch.public(fast=("fam", "fast_op", ("a", "c", marker)))
    def op(a, b=2, *, c=3):
        return ("general", a, b, c)
    assert op("take") == "fast"
    assert op("other", 5, c=7) == ("general", "other", 5, 7)
    assert seen == [("fam", "fast_op", ("take", 3, marker)),
                    ("fam", "fast_op", ("other", 7, marker))]
    with pytest.raises(TypeError, match="names no parameter 'z'"):
        _dispatch.public(fast=("fam", "fast_op", ("z",)))(lambda a: a)
