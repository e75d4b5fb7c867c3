# Reuse of large host output buffers.
#
# A fresh multi-megabyte NumPy array is a fresh mmap: the first write to each page
# faults and the kernel zeroes it, which costs as much as the op itself for
# memory-bound ops (cummax 4096x4096 float32 writes 192 MB: ~38 ms of which ~20 ms are
# faults + zeroing on the 2-core CI machine).  ONNX Runtime avoids this with its arena;
# this is the same idea for fastops outputs: an output of at least MIN_BYTES (1 MiB) is carved
# from a 2 MiB-aligned block (transparent huge pages requested), and when the last
# array using the block dies the block goes back to a small free list instead of to
# the OS.  At most FASTOPS_POOL_BYTES (default 512 MiB, 0 disables) are kept idle;
# older idle blocks are released first.
import os
import sys

import numpy as np

from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport SIZE_MAX, uint8_t, uintptr_t
from libc.stdlib cimport free
from libc.string cimport strncpy

cimport numpy as cnp
from fastops._cpu._fast cimport kPoolMinBytes

cnp.import_array()

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

cdef extern from "sys/mman.h" nogil:
    int madvise(void* addr, size_t length, int advice)
    int MADV_HUGEPAGE

cdef Py_ssize_t ALIGN = 2 * 1024 * 1024
MIN_BYTES = kPoolMinBytes

def _cap_from_env():
    raw = os.environ.get("FASTOPS_POOL_BYTES")
    if raw is None:
        return 512 * 1024 * 1024
    try:
        cap = int(raw)
    except ValueError:
        cap = -1
    if cap < 0:
        raise ValueError(f"FASTOPS_POOL_BYTES={raw!r} is not a number of bytes: expected a "
                         f"non-negative integer (the idle memory fastops keeps for reuse; "
                         f"0 turns the pool off)")
    return min(cap, 1 << 62)


cdef Py_ssize_t _cap = _cap_from_env()
cdef Py_ssize_t _idle_bytes = 0
cdef list _idle = []          # [(size, address)], oldest first


cdef class Block:
    """Owns one aligned allocation; exposes it as a writable byte buffer."""
    cdef char* ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.size
        view.buf = self.ptr
        view.obj = self
        view.len = self.size
        view.readonly = 0
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        global _idle_bytes
        if self.ptr == NULL:
            return
        if self.size > _cap:
            free(self.ptr)
            return
        while _idle and _idle_bytes + self.size > _cap:
            size, addr = _idle.pop(0)
            _idle_bytes -= size
            free(<void*><uintptr_t>addr)
        _idle.append((self.size, <uintptr_t>self.ptr))
        _idle_bytes += self.size


cdef Block _take(Py_ssize_t nbytes):
    """An idle block of nbytes..2*nbytes (best fit; of equal sizes the one released last),
    else a new one.  The last released is the one still in the caches: taking the oldest
    instead, a loop of calls went round every idle block of its size, each output cold
    (gather_elements of 150 rows of 50 KB, 7.5 MB out, 2 threads: 0.106 ms with one idle
    8 MB block, 0.30 with six, which an earlier batch of six outputs leaves)."""
    global _idle_bytes
    cdef Block b = Block.__new__(Block)
    cdef void* p = NULL
    best = None
    for entry in _idle:             # (oldest first: <= lets the later one win a tie)
        if nbytes <= entry[0] <= 2 * nbytes and (best is None or entry[0] <= best[0]):
            best = entry
    if best is not None:
        # by value, not by position: a release triggered by garbage collection in
        # between may have changed the list (addresses are unique)
        _idle.remove(best)
        size, addr = best
        _idle_bytes -= size
        b.ptr = <char*><uintptr_t>addr
        b.size = size
        return b
    size = (nbytes + ALIGN - 1) // ALIGN * ALIGN
    if posix_memalign(&p, ALIGN, size) != 0:
        raise MemoryError(f"fastops: cannot allocate {size} bytes")
    madvise(p, size, MADV_HUGEPAGE)     # advisory; ignored where THP is off
    b.ptr = <char*>p
    b.size = size
    return b


def empty(shape, dtype):
    """Like np.empty; large arrays come from (and return to) the block pool.  The size is
    an exact integer product (NumPy integers in ``shape`` cannot wrap around): a size no
    process can address raises MemoryError.  Called for every host output, so cheap."""
    if type(dtype) is not np.dtype:
        dtype = np.dtype(dtype)
    count = 1
    for s in shape:
        count *= int(s)
    nbytes = count * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    if nbytes > sys.maxsize:    # (before np.empty, whose ValueError would not say so)
        raise MemoryError(f"{nbytes} bytes is more than any process can address")
    if _cap <= 0:
        return np.empty(shape, dtype)
    return np.frombuffer(_take(nbytes), dtype=dtype, count=count).reshape(shape)


def idle_bytes():
    """Bytes held in idle blocks (for tests and `python -m fastops info`)."""
    return _idle_bytes


# ------------------------------------------------------------------ Session's arena
# NumPy's data allocator during fastops.onnx.Session.run (include/arena.hpp): freed
# intermediate arrays of 256 KiB and more are kept (at most FASTOPS_POOL_BYTES idle) and
# reused by the next allocation of the same rounded size, so a run does not page-fault
# its way through fresh mmaps.  NumPy keeps the handler in a context variable: only the
# thread (context) that runs the Session allocates from it; an array remembers its
# handler and returns its block here whenever it dies.
cdef extern from "arena.hpp" namespace "fastops" nogil:
    cdef cppclass Arena:
        Arena(size_t cap)
        void* allocate(size_t size, bint zero)
        void release(void* p)
        void* reallocate(void* p, size_t size)
        void trim(size_t keep)
        size_t idle_bytes()

cdef extern from "numpy/ndarraytypes.h":
    ctypedef struct PyDataMemAllocator:
        void* ctx
        void* (*malloc)(void* ctx, size_t size) noexcept nogil
        void* (*calloc)(void* ctx, size_t nelem, size_t elsize) noexcept nogil
        void* (*realloc)(void* ctx, void* ptr, size_t new_size) noexcept nogil
        void (*free)(void* ctx, void* ptr, size_t size) noexcept nogil
    ctypedef struct PyDataMem_Handler:
        char name[127]
        uint8_t version
        PyDataMemAllocator allocator

cdef extern from "numpy/arrayobject.h":
    object PyDataMem_SetHandler(object handler)


cdef Arena* _arena = new Arena(<size_t>max(_cap, 0))


cdef void* _arena_malloc(void* ctx, size_t size) noexcept nogil:
    return (<Arena*>ctx).allocate(size, False)


cdef void* _arena_calloc(void* ctx, size_t nelem, size_t elsize) noexcept nogil:
    if elsize and nelem > SIZE_MAX // elsize:
        return NULL
    return (<Arena*>ctx).allocate(nelem * elsize, True)


cdef void* _arena_realloc(void* ctx, void* ptr, size_t new_size) noexcept nogil:
    return (<Arena*>ctx).reallocate(ptr, new_size)


cdef void _arena_free(void* ctx, void* ptr, size_t size) noexcept nogil:
    (<Arena*>ctx).release(ptr)


cdef PyDataMem_Handler _handler
strncpy(_handler.name, b"fastops_session_arena", 127)
_handler.version = 1
_handler.allocator.ctx = <void*>_arena
_handler.allocator.malloc = _arena_malloc
_handler.allocator.calloc = _arena_calloc
_handler.allocator.realloc = _arena_realloc
_handler.allocator.free = _arena_free
_arena_capsule = PyCapsule_New(&_handler, "mem_handler", NULL)


def use_arena():
    """Make the arena NumPy's allocator in the current context; returns the previous
    handler for ``restore``, or None where FASTOPS_POOL_BYTES is 0 (nothing changed)."""
    if _cap <= 0:
        return None
    return PyDataMem_SetHandler(_arena_capsule)


def restore(previous):
    """Undo ``use_arena`` (previous: its return value)."""
    if previous is not None:
        PyDataMem_SetHandler(previous)


def arena_idle_bytes():
    """Bytes the Session arena holds idle (for tests and `python -m fastops info`)."""
    return _arena.idle_bytes()


def arena_trim():
    """Return the arena's idle blocks to the OS (tests that need it empty)."""
    _arena.trim(0)
