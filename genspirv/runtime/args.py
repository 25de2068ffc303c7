"""Arguments: what the runtime's public calls are given, named for a message.

Takes any value a caller passed; gives ``whole_number`` (an int from an int or
a numpy integer, never from a bool), ``count_option`` (a whole number within
bounds, or one line naming the option), ``little_endian`` (a numpy array or
dtype in the byte order the device reads) and ``describe_value`` (``a numpy
array (float32, shape (4,))``, ``str 'c'``) for the messages of
``ArgumentTypeError``. Pure: no Vulkan, no numpy import.
"""

from __future__ import annotations

import operator
from typing import Optional

from ..errors import ArgumentTypeError, GenspirvError


def whole_number(value) -> Optional[int]:
    """``value`` as an int if it is an integer (a numpy one too; not a bool), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def count_option(value, what: str, lo: int, hi: Optional[int] = None) -> int:
    """A whole-number option within [lo, hi] (no upper bound without ``hi``), or one
    line naming it: ``inflight must be 1..4, not 9``."""
    span = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
    n = whole_number(value)
    if n is None:
        raise ArgumentTypeError(f"{what} must be an integer, {span}, not {describe_value(value)}")
    if n < lo or (hi is not None and n > hi):
        raise GenspirvError(f"{what} must be {span}, not {n}")
    return n


def little_endian(array):
    """``array`` (a numpy array) with its items little-endian, the order a Vulkan device reads:
    itself when they are (or have no order: bytes, bools), else a converted copy.

    Converted rather than refused: an array of '>f4' (read from a big-endian file format, say)
    holds the values its caller means, and its raw bytes would upload as other numbers; the
    copy costs only such an array, and every caller would otherwise write the same astype."""
    order = array.dtype.newbyteorder("<")
    return array if order == array.dtype else array.astype(order)


def describe_value(obj) -> str:
    """What a caller passed, for a message: ``a numpy array (float32, shape (4,))``, ``str 'c'``."""
    if obj is None:
        return "None"
    shape, dtype = getattr(obj, "shape", None), getattr(obj, "dtype", None)
    if shape is not None and dtype is not None:
        return f"a {type(obj).__module__.split('.')[0]} array ({dtype}, shape {tuple(shape)})"
    text = repr(obj)
    return f"{type(obj).__name__} {text if len(text) <= 40 else text[:37] + '...'}"
