"""Type aliases for the public signatures (fastops ships py.typed).

``Array`` is anything the ops accept as an array: a NumPy or CuPy array, a DLPack tensor
(torch, JAX) or a nested sequence of numbers; results come back as the same kind.
``Scalar`` arguments also accept 0-d and 1-element arrays of any of those frameworks.
"""
from typing import Any, Literal, Optional, Sequence, Tuple, Union

Array = Any
IntScalar = Union[int, Any]
FloatScalar = Union[float, Any]
Reduction = Literal["none", "add", "mul", "max", "min"]

__all__ = ["Array", "IntScalar", "FloatScalar", "Reduction", "Literal", "Optional",
           "Sequence", "Tuple", "Union"]
