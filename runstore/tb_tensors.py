"""The tensors of TensorBoard events turned into numpy, bounded by the bytes each one holds.

A TensorProto claims its shape apart from its values, and TensorFlow fills a shape from a single value
(one `double_val` repeated to every element: `tensor_util.make_ndarray` calls `np.repeat`). So 30 bytes
on disk could claim shape (333333, 3), 8 MB each, hundreds to an event. Here the element count, times its
dtype's size, is checked against the bytes the tensor holds before anything is allocated: values
`tensor_content` or the repeated field hold one each, or one value broadcast to a shape whose decoded size
stays within BROADCAST_RATIO times the tensor's bytes (plus BROADCAST_SLACK). Every decoded tensor is
also charged to one `Budget` per file read (runstore/tb_reads.py), so a file of many small tensors is
read in pieces the sync writes out in between, never all at once. No JAX and no Streamlit here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

MAX_ELEMENTS = 1_000_000  # elements of one tensor: a summary's image, histogram or text holds far fewer
BROADCAST_RATIO = 16  # a value repeated to fill a shape may decode to this many times the tensor's bytes ...
BROADCAST_SLACK = 4096  # ... plus this many bytes (TensorFlow's own writers never broadcast a summary)
READ_BUDGET = 64 * 2**20  # bytes of decoded tensors one file read may hold (runstore/tb_reads.py)
STRING_OVERHEAD = 40  # bytes of one Python bytes object beyond its content
# The repeated field holding each dtype's values (TensorProto's names), and how many numbers make one element.
_FIELDS = {
    "float32": ("float_val", 1), "float64": ("double_val", 1), "float16": ("half_val", 1),
    "bfloat16": ("half_val", 1), "int32": ("int_val", 1), "uint8": ("int_val", 1), "uint16": ("int_val", 1),
    "int16": ("int_val", 1), "int8": ("int_val", 1), "int64": ("int64_val", 1), "bool": ("bool_val", 1),
    "string": ("string_val", 1), "complex64": ("scomplex_val", 2), "complex128": ("dcomplex_val", 2),
}  # fmt: skip
_SIZES = {"float16": 2, "bfloat16": 2, "string": 8}  # numpy's itemsize otherwise


class Budget:
    """The decoded bytes one file read may still take; `spent` once half is used (read on at the next sync)."""

    def __init__(self, limit: int | None = None) -> None:  # noqa: D107 - READ_BUDGET when None
        self.limit, self.used = READ_BUDGET if limit is None else limit, 0

    def take(self, cost: int) -> bool:
        """Charge `cost` bytes; False (nothing charged) when they do not fit in what is left."""
        if self.used + cost > self.limit:
            return False
        self.used += cost
        return True

    @property
    def spent(self) -> bool:
        """True once half the budget is used: the next record waits for the next read, so each starts with half."""
        return self.used * 2 >= self.limit


def elements(tensor: Any) -> int | None:
    """How many elements the tensor's shape claims; None for a negative size or more than MAX_ELEMENTS."""
    count = 1
    for dim in tensor.tensor_shape.dim:
        if dim.size < 0:
            return None
        count *= dim.size
        if count > MAX_ELEMENTS:
            return None
    return count


def decoded_size(tensor: Any) -> int | None:
    """The bytes `tensor` decodes to (strings: their lengths plus their objects), or None if that is more than
    the bytes it holds allow: a content of another length, or a broadcast past BROADCAST_RATIO. Allocates nothing."""
    from tensorboard.compat.tensorflow_stub import dtypes

    count = elements(tensor)
    try:
        name = dtypes.as_dtype(tensor.dtype).name
    except (TypeError, KeyError, ValueError):
        return None
    if count is None or name not in _FIELDS:
        return None
    field, per = _FIELDS[name]
    size = _SIZES.get(name) or np.dtype(name).itemsize
    if tensor.tensor_content:
        return count * size if name != "string" and len(tensor.tensor_content) == count * size else None
    values = getattr(tensor, field)
    held = len(values) // per
    if name == "string":
        if held == count:
            return sum(len(v) for v in values) + count * STRING_OVERHEAD
        cost = count * (len(values[0]) + STRING_OVERHEAD) if held == 1 else None
    else:
        cost = count * size if held in (count, 1) else None
    if cost is None or (held != count and cost > BROADCAST_RATIO * tensor.ByteSize() + BROADCAST_SLACK):
        return None
    return cost


def to_array(tensor: Any, budget: Budget | None = None) -> np.ndarray | None:
    """The tensor as numpy (TensorBoard's `make_ndarray`), or None when its claim is more than its bytes hold
    (`decoded_size`), when it does not fit in `budget`, or when its values do not fit its shape or dtype."""
    from tensorboard.util import tensor_util

    cost = decoded_size(tensor)
    if cost is None or (budget is not None and not budget.take(cost)):
        return None
    try:
        return tensor_util.make_ndarray(tensor)
    except (ValueError, TypeError):
        return None


def text_rows(tensor: Any) -> Iterator[list[bytes]]:
    """The rows of a string tensor (its first axis; a scalar is one row of one cell), read from the values it
    holds without building an array: a caller that stops early (a text cut to its length) allocates no more."""
    count = elements(tensor)
    values = tensor.string_val
    if count is None or tensor.tensor_content or not values or len(values) not in (1, count):
        return
    dims = [d.size for d in tensor.tensor_shape.dim]
    width = 1 if len(dims) < 2 else count // max(dims[0], 1)
    for start in range(0, count, max(width, 1)):
        yield [values[0] if len(values) == 1 else values[i] for i in range(start, start + width)]
