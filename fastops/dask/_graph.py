"""Graph plumbing shared by the fastops.dask wrappers: task construction, array
metadata (NumPy or CuPy chunks), trees, and the OpenMP thread count of a task.

Every task of a fastops.dask graph runs its function through :func:`call`, which sets
the calling thread's OpenMP team size for the duration of the task (see
:func:`task_threads`) and nothing else.  Graphs use dask's task spec (``Task``,
``TaskRef``), never legacy tuples, so no literal argument (a shape, a slice, a table)
can be mistaken for a key or a nested task.
"""
import contextlib
import itertools
import math
import multiprocessing
import threading
import time
import warnings

import numpy as np

import dask
import dask.array as da
from dask._task_spec import DataNode, Task, TaskRef
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from fastops import _dispatch, _threads
from fastops._cpu import _runtime

__all__ = ["DataNode", "Task", "TaskRef", "tokenize", "call", "task_threads",
           "threads_setting", "as_dask", "need_known_chunks", "meta", "native", "Graph",
           "offsets", "block_module", "tree_groups", "split_every_value"]

THREADS_KEY = "fastops.threads"


# ------------------------------------------------------------------ threads
def threads_setting(op):
    """The ``fastops.threads`` dask config value at graph construction: None ("auto",
    the default) or a positive int, which then travels inside every task of the graph
    (so it applies on dask.distributed workers, whose config is their own)."""
    v = dask.config.get(THREADS_KEY, None)
    if v is None or v == "auto":
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{op}: dask config {THREADS_KEY}={v!r} must be 'auto' or a "
                         f"positive integer")
    return int(v)


_HOST_SLOTS = {}            # worker address -> (time measured, task threads on its host)
_HOST_SLOTS_TTL = 30.0      # seconds: workers that join later are counted after this
_lock = threading.Lock()


def _worker():
    try:
        from distributed import get_worker
    except ImportError:
        return None
    try:
        return get_worker()
    except ValueError:      # not inside a dask.distributed task
        return None


def _host_slots(w):
    """Task threads of every worker on this worker's host (asked from the scheduler once
    per worker and _HOST_SLOTS_TTL); this worker's own thread count if that fails."""
    now = time.monotonic()
    with _lock:
        hit = _HOST_SLOTS.get(w.address)
    if hit is not None and now - hit[0] < _HOST_SLOTS_TTL:
        return hit[1]
    own = int(w.state.nthreads)
    try:
        from distributed.comm import get_address_host
        from distributed.utils import sync
        info = sync(w.loop, w.scheduler.identity, callback_timeout=5)
        host = get_address_host(w.address)
        slots = sum(int(v.get("nthreads", 0)) for v in info["workers"].values()
                    if v.get("host") == host)
        slots = max(slots, own)
    except Exception:       # an old scheduler, a closing cluster: the worker alone
        slots = own
    with _lock:
        _HOST_SLOTS[w.address] = (now, slots)
    return slots


def _local_slots():
    """Task slots of the local schedulers: the synchronous scheduler runs tasks in the
    calling (main) thread, one at a time; the threaded one in a pool of ``num_workers``
    (dask config) or CPU_COUNT threads; the multiprocessing one in as many processes."""
    if threading.current_thread() is threading.main_thread() and \
            multiprocessing.parent_process() is None:
        return 1
    pool = dask.config.get("pool", None)
    n = getattr(pool, "_max_workers", None) or dask.config.get("num_workers", None)
    return int(n) if n else dask.system.CPU_COUNT


def auto_threads(width):
    """OpenMP threads for one task of a layer of ``width`` parallel tasks: this host's
    cores (dask.system.CPU_COUNT: affinity and cgroup limits) divided by the number of
    such tasks that can run on it at once (its task slots, at most ``width``)."""
    w = _worker()
    slots = _host_slots(w) if w is not None else _local_slots()
    return max(1, dask.system.CPU_COUNT // max(1, min(slots, width)))


@contextlib.contextmanager
def task_threads(setting, width):
    """Run a block with the task's OpenMP thread count in this thread only.

    fastops.set_num_threads is process-wide, so a task never calls it: the count is set
    with omp_set_num_threads, which OpenMP keeps per OS thread (a dask worker thread runs
    one task at a time), and restored afterwards.  A process-wide
    fastops.set_num_threads(n) stays an upper bound; the OpenMP default
    (OMP_NUM_THREADS, which dask.distributed's nanny sets to 1 for its workers) does
    not, since the share of cores is the decision here."""
    n = setting if setting is not None else auto_threads(width)
    _threads.get_num_threads()          # apply a process-wide count to this thread first
    if _threads._fixed is not None:
        n = min(n, _threads._fixed)
    before = _runtime.max_threads()
    _runtime.set_max_threads(n)
    try:
        yield n
    finally:
        _runtime.set_max_threads(before)


def _aligned(a):
    """``a`` with every NumPy array in it (also inside tuples, lists and dicts) aligned.
    Arrays that crossed a process boundary (dask.distributed's pickle-5 buffers) may sit
    at any byte offset, and the tasks hand chunks and tables straight to the kernels,
    which load whole elements: copy those few, leave the rest as they are."""
    if isinstance(a, np.ndarray):
        return a if a.flags.aligned else np.require(a, requirements="A")
    if isinstance(a, tuple) and hasattr(a, "_fields"):          # a named tuple
        return type(a)(*(_aligned(v) for v in a))
    if isinstance(a, (tuple, list)):
        return type(a)(_aligned(v) for v in a)
    if isinstance(a, dict):
        return {k: _aligned(v) for k, v in a.items()}
    return a


def call(fn, setting, width, *args):
    """The body of every fastops.dask task: fn(*args) under the task's thread count, on
    aligned arrays."""
    with task_threads(setting, width):
        return fn(*(_aligned(a) for a in args))


def probe_threads():
    """fastops.get_num_threads() as a kernel call inside a task would see it (tests)."""
    return _threads.get_num_threads()


# ------------------------------------------------------------------ arrays
def as_dask(op, name, x):
    """A dask Array from ``x`` (dask arrays pass through; anything else goes through
    da.asarray, one chunk per dask's auto chunking)."""
    if isinstance(x, da.Array):
        return x
    try:
        return da.asarray(x)
    except Exception as exc:
        raise TypeError(f"{op}: {name} must be a dask array (or an array dask can wrap), "
                        f"got {type(x).__name__}: {exc}") from None


def need_known_chunks(op, name, x, axes=None):
    """Raise ValueError if the chunk sizes of ``x`` along ``axes`` (default all) are
    unknown (NaN), as after boolean indexing."""
    axes = range(x.ndim) if axes is None else axes
    for a in axes:
        if any(math.isnan(c) for c in x.chunks[a]):
            raise ValueError(f"{op}: {name} has unknown chunk sizes along axis {a}; call "
                             f"{name}.compute_chunk_sizes() first")


def meta(x, ndim, dtype):
    """An empty array of x's chunk type (NumPy, CuPy) with ``ndim`` and ``dtype``."""
    with warnings.catch_warnings():     # complex -> int64 of an empty array
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return meta_from_array(x._meta, ndim=ndim, dtype=np.dtype(dtype))


def native(dtype):
    """The dtype fastops returns for inputs of ``dtype`` (native byte order)."""
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype


def offsets(chunks):
    """Start of every chunk: [0, c0, c0 + c1, ...] (len(chunks) + 1 values)."""
    return [0, *itertools.accumulate(chunks)]


def block_module(a):
    """(backend, array) of one chunk: fastops' own dispatch, so CuPy chunks (and the test
    suite's emulated CuPy) get their array module."""
    return _dispatch.prepare("fastops.dask", a=a)


class Graph:
    """Layers of one fastops.dask computation: ``layer(name)`` returns a dict to fill with
    Tasks; ``array(...)`` turns a layer whose keys are (name, *block) into an Array."""

    def __init__(self, op, *inputs):
        self.op = op
        self.setting = threads_setting(op)
        self.inputs = inputs
        self.layers = {}
        self.deps = {}

    def layer(self, name, *depends_on):
        """A new layer that depends on the input collections and on ``depends_on``
        (names of layers of this graph)."""
        d = self.layers[name] = {}
        self.deps[name] = set(depends_on)
        return d

    def task(self, layer, key, fn, width, *args):
        """layer[key] = Task running fn(*args) under the task thread count for a layer of
        ``width`` parallel tasks (TaskRef arguments are the dependencies)."""
        layer[key] = Task(key, call, fn, self.setting, int(width), *args)
        return TaskRef(key)

    def graph(self):
        base = HighLevelGraph.merge(*(c.__dask_graph__() for c in self.inputs)) \
            if self.inputs else HighLevelGraph({}, {})
        layers = dict(base.layers)
        deps = dict(base.dependencies)
        in_layers = set()
        for c in self.inputs:
            in_layers.update(c.__dask_layers__())
        for name, dsk in self.layers.items():
            layers[name] = MaterializedLayer(dsk)
            deps[name] = set(self.deps[name]) | in_layers
        return HighLevelGraph(layers, deps)

    def array(self, name, chunks, meta):
        return da.Array(self.graph(), name, chunks, meta=meta)


def tree_groups(items, split_every):
    """Consecutive groups of at most ``split_every`` items (a level of a reduction tree)."""
    return [items[i:i + split_every] for i in range(0, len(items), split_every)]


def split_every_value(op, split_every):
    """split_every: an int >= 2, or None for dask's config value (default 4, as dask's
    own reductions)."""
    if split_every is None:
        split_every = dask.config.get("split_every", None) or 4
        if isinstance(split_every, dict):
            split_every = 4
    if isinstance(split_every, bool) or not isinstance(split_every, (int, np.integer)) \
            or split_every < 2:
        raise ValueError(f"{op}: split_every={split_every!r} must be an integer >= 2")
    return int(split_every)
