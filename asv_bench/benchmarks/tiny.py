"""Tiny inputs for every op: the fixed cost of a call (fastops._bench.tiny)."""
from ._suite import make_suite

Tiny, TinyThreads = make_suite("tiny")
