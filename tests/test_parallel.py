"""The CPU kernels' thread pool (fastops/_cpu/include/parallel.hpp) from the outside:
several Python threads calling kernels at once (one owns the pool, the others run alone),
a forked child (the parent's workers do not exist there), and a medium workload of every
family that parallelizes, whose results must equal the one-thread run bit for bit."""
import multiprocessing
import os
import threading

import numpy as np
import pytest

import fastops
import fastops.cv as fcv
from tests.test_hostile import _same, _tuple


def _workloads():
    """Medium inputs (each call well above the serial threshold), one per kernel family."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (360, 480, 3), dtype=np.uint8)
    x4 = rng.standard_normal((2, 8, 96, 96)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (2, 80, 80, 2)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (64, 1)),
                           np.sort(rng.uniform(0, 95, (64, 4)), axis=1)[:, [0, 2, 1, 3]]],
                          axis=1).astype(np.float32)
    offset = rng.standard_normal((2, 18, 96, 96)).astype(np.float32)
    weight = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    boxes = np.sort(rng.uniform(0, 500, (3000, 4)), axis=1)[:, [0, 2, 1, 3]].astype(np.float32)
    scores = rng.uniform(size=3000).astype(np.float32)
    table = rng.standard_normal((4096, 64)).astype(np.float32)
    rows = rng.integers(-4096, 4096, (20000, 1))           # duplicates and negatives
    cols = rng.integers(0, 4096, (512, 64))
    return {
        "resize": lambda: fastops.resize(x4, sizes=[2, 8, 150, 170], mode="linear"),
        "cv.resize": lambda: fcv.resize(img, (300, 200), interpolation=fcv.INTER_CUBIC),
        "cv.resize area": lambda: fcv.resize(img, (160, 120), interpolation=fcv.INTER_AREA),
        "grid_sample": lambda: fastops.grid_sample(x4, grid, mode="bicubic"),
        "roi_align": lambda: fastops.roi_align(x4, rois, 7, sampling_ratio=2),
        "deform_conv2d": lambda: fastops.deform_conv2d(x4, offset, weight, padding=1),
        "instance_norm": lambda: fastops.instance_norm(x4, np.ones(8, np.float32),
                                                        np.zeros(8, np.float32)),
        "topk": lambda: fastops.topk(x4.reshape(16, -1), 50, axis=1),
        "cummax": lambda: fastops.cummax(x4.reshape(16, -1), 1),
        "nms": lambda: fastops.nms(boxes, scores, 0.5),
        "scatter_nd": lambda: fastops.scatter_nd(table, rows, np.ones((20000, 64), np.float32),
                                                 reduction="add"),
        "gather_elements": lambda: fastops.gather_elements(table, cols, axis=0),
        "gather_nd": lambda: fastops.gather_nd(table, rows),
        "nonzero": lambda: fastops.nonzero(table > 0.5),
    }


WORKLOADS = _workloads()


@pytest.fixture
def one_thread_results(threads):
    """The 1-thread results; the test itself runs on 2 threads."""
    with threads(1):
        want = {name: fn() for name, fn in WORKLOADS.items()}
    with threads(2):
        yield want


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_two_threads_match_one(one_thread_results, name):
    """One caller and the pool's worker share the chunks (and per-thread scratch by
    slot): the result equals the 1-thread one, call after call."""
    for _ in range(3):
        _same(WORKLOADS[name](), one_thread_results[name])


def test_concurrent_callers_get_the_serial_results(one_thread_results):
    """Four Python threads call every kernel at once, each call on 2 threads: one call
    owns the pool, the others run alone; every result equals the 1-thread one."""
    errors = []
    start = threading.Barrier(4)

    def caller(seed):
        try:
            names = list(WORKLOADS)
            np.random.default_rng(seed).shuffle(names)
            start.wait()
            for _ in range(3):
                for name in names:
                    _same(WORKLOADS[name](), one_thread_results[name])
        except Exception as exc:          # reported below, with the failing workload
            errors.append(exc)

    ts = [threading.Thread(target=caller, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def _child(name):
    return tuple(np.asarray(v) for v in _tuple(WORKLOADS[name]()))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="no fork() here")
def test_forked_child_runs_kernels(one_thread_results):
    """A child forked after the parent's pool started builds its own (the parent's
    workers do not exist in it) instead of waiting for them forever."""
    for fn in WORKLOADS.values():
        fn()                               # the parent's pool: started, workers asleep
    with multiprocessing.get_context("fork").Pool(1) as pool:
        for name in ("resize", "grid_sample", "instance_norm"):
            got = pool.apply_async(_child, (name,)).get(timeout=120)
            _same(got, one_thread_results[name])


_AFFINITY_PROBE = """
import os, time
import numpy as np
import fastops
# (big enough to use the workers even right after a pause: common.hpp, kWakeWork)
x = np.random.default_rng(0).standard_normal((2, 16, 256, 256)).astype(np.float32)
allowed = {cpus}
os.sched_setaffinity(0, allowed)              # this (the calling) thread only
fastops.instance_norm(x, np.ones(16, np.float32), np.zeros(16, np.float32))
time.sleep(0.05)                              # the workers stop polling and sleep
fastops.instance_norm(x, np.ones(16, np.float32), np.zeros(16, np.float32))
caller = sorted(os.sched_getaffinity(0))
# The worker restores its mask when it runs; the caller may have done every chunk and
# returned before the woken worker was scheduled (a busy CI machine), so wait for that
# (up to 5 s): a worker left pinned for good still fails.
for _ in range(500):
    masks = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{{tid}}/comm") as f:
            if f.read().strip() == "fastops-pool":
                masks.append(sorted(os.sched_getaffinity(int(tid))))
    if all(m == caller for m in masks):
        break
    time.sleep(0.01)
print(masks)
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity")
                    or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs")
def test_woken_workers_take_the_callers_affinity_back():
    """A sleeping worker is woken with the caller's CPU taken out of its affinity (on a VM
    the kernel otherwise queues it behind the busy caller: docs/performance.md); once
    awake it takes the caller's whole mask back, never a CPU the caller may not use, and
    is never left pinned off a CPU (a long call would then share one CPU with the caller
    when the caller moves: roi_align 1000 RoIs took 585 ms instead of 182 in the bench)."""
    import ast
    import os
    import subprocess
    import sys
    cpus = set(sorted(os.sched_getaffinity(0))[:2])
    out = subprocess.run([sys.executable, "-c", _AFFINITY_PROBE.format(cpus=cpus)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "2"}).stdout
    masks = ast.literal_eval(out.strip().splitlines()[-1])
    assert len(masks) == 1, masks                 # one worker for two threads
    assert set(masks[0]) == cpus, (masks, cpus)


_COLD_PROBE = """
import os, time
import numpy as np
import fastops.cv as fcv
x = np.zeros((224, 224, 3), np.uint8)       # ~10 us of work: two threads' worth when hot
def workers():
    n = 0
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            n += f.read().strip() == "fastops-pool"
    return n
time.sleep(0.05)
fcv.resize(x, (112, 112))                    # after a pause: on the caller alone
alone = workers()
time.sleep(0.05)                             # 1.2M units of 2x2 cells, 8 to kWakeWork's
fcv.resize(np.zeros((640, 640, 3), np.uint8), (320, 320))
alone += workers()
for _ in range(20):                          # a loop of calls: the pool joins in
    fcv.resize(x, (112, 112))
print(alone, workers())
"""


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task")
                    or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs")
def test_small_call_after_a_pause_wakes_no_worker():
    """A small loop (work < kWakeWork) when every worker sleeps and nothing ran for the
    pool's spin time runs on the caller: waking a worker cost ~25 us more than the whole
    call (cv.resize 224x224x3 halved after a pause: 65-78 us on 2 threads, 38-45 on one),
    and a kernel whose units are cheap counts them so (640x640x3 halved: 1.2M units,
    178 us alone, 226 woken).  Calls in a loop still use the workers."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _COLD_PROBE], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "2"}).stdout
    alone, looped = map(int, out.split())
    assert alone == 0 and looped == 1, out


def _kernel_headers():
    """The CPU kernels' C++ headers (fastops/_cpu/include/*.hpp), for the source scans."""
    import pathlib
    return sorted((pathlib.Path(__file__).resolve().parents[1] / "fastops" / "_cpu" /
                   "include").glob("*.hpp"))


def test_per_thread_scratch_never_shares_cache_lines():
    """Per-thread scratch comes from ThreadScratch (each slot's block on its own 128
    bytes) or std::vector<Padded<X>>: slot offsets into one packed buffer put two threads'
    hot data in one cache line (roi_align's 2 threads ran as slow as 1 that way).  This
    scans the kernels for the packed idiom, so the next kernel cannot bring it back."""
    import re
    # a slot/tid times a size, or a slot/tid/part t added to a buffer's start (scatter_nd's
    # owner counts at counts.data() + t * (nt + 1): "add" ran slower on 2 threads than 1)
    offset = re.compile(r"(\.data\(\)|\.get\(\))\s*\+[^,;()]*\b(tid|slot|t)\b|"
                        r"\b(tid|slot)\s*\*")
    # a vector of one object per thread, or of nt blocks
    per_thread_vector = re.compile(r"std::vector<[^;]*>\s+\w+\(\s*(static_cast<size_t>\(\s*nt"
                                   r"\s*\)|nt|size_mul\([^;]*\bnt\s*\))\s*[,)]")
    bad = []
    for path in _kernel_headers():
        for no, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if "Padded<" in code:
                continue
            if offset.search(code) or per_thread_vector.search(code):
                bad.append(f"{path.name}:{no}: {line.strip()}")
    assert not bad, "per-thread scratch without ThreadScratch/Padded:\n" + "\n".join(bad)


def test_no_scratch_reset_at_the_top_of_a_parallel_body():
    """A parallel_for body runs once per chunk, not once per thread: a fill of the
    thread's scratch before its item loop runs for every chunk, and with chunks of one
    item for every item (depthwise_conv2d zeroed a whole padded plane per plane, most
    of its time on 2 threads).  ThreadScratch zeroes its blocks once, when it is made.
    This scans each parallel_for body's head (up to its first loop) for such fills."""
    import re
    fill = re.compile(r"\b(std::fill|std::fill_n|std::memset|memset|std::uninitialized_fill"
                      r"|std::uninitialized_fill_n)\s*\(")
    loop_re = re.compile(r"\b(for|while)\s*\(")
    bad = []
    for path in _kernel_headers():
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for m in re.finditer(r"\bparallel_for\s*\(", text):
            body = text.find("{", m.end())
            loop = loop_re.search(text, body)
            head = text[body:loop.start() if loop else len(text)]
            if fill.search(head):
                no = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path.name}:{no}")
    assert not bad, "scratch filled at the top of a parallel_for body:\n" + "\n".join(bad)
