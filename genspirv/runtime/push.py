"""Named push constants: a manifest entry and ``{member: value}`` in, the push bytes out.

``pack_push(entry, values)`` packs a dispatch's ``push={"n": n, "alpha": 2.0}``
(any order) by the entry's reflected ``push_constants``: little-endian, each
scalar at its width (a bool as a 32-bit 0 or 1), vectors, matrices and arrays
from nested sequences or numpy arrays of the member's shape, a struct from a
dict, padded with zeros to ``push_constant_size``.  docs/GUIDE.md ("Named
push constants") states the value forms.  A missing or unknown member, a
value of the wrong kind, out of its type's range or of the wrong shape is a
``PushConstantError``: one line naming the kernel, the member and the members
the kernel has.

A ``Packer`` is made once per manifest entry and cached: its precompiled
``struct.Struct`` holds every scalar slot in offset order with the padding
between them, so a push of scalar members costs one list and one ``pack``.
Pure: no Vulkan, no numpy import (numpy arrays are read through ``shape``
and ``tolist``).
"""

from __future__ import annotations

import itertools
import operator
import struct
from typing import Any, Iterator, Mapping, Sequence

from ..errors import PushConstantError
from ..reflect.model import SCALAR_BYTES, STRUCT, PushMember, ScalarType

_FORMATS = {
    ScalarType.BOOL: "I", ScalarType.INT8: "b", ScalarType.UINT8: "B", ScalarType.INT16: "h",
    ScalarType.UINT16: "H", ScalarType.INT32: "i", ScalarType.UINT32: "I", ScalarType.INT64: "q",
    ScalarType.UINT64: "Q", ScalarType.FLOAT16: "e", ScalarType.FLOAT32: "f",
    ScalarType.FLOAT64: "d",
}
_FLOATS = (ScalarType.FLOAT16, ScalarType.FLOAT32, ScalarType.FLOAT64)
# What struct.pack raises for a value it cannot pack at a format.
_PACK_ERRORS = (struct.error, TypeError, OverflowError, ValueError)
_MAX_PACKERS = 4096      # entries cached before the cache starts over (they are tiny)


def _int_range(t: ScalarType) -> tuple[int, int]:
    if t == ScalarType.BOOL:
        return 0, 1
    bits = 8 * SCALAR_BYTES[t]
    return (0, 2 ** bits - 1) if t.startswith("u") else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)


def describe(m: PushMember) -> str:
    """``float32``, ``float32 vec3``, ``float32 3x2 matrix``, ``struct``, with ``[n]`` per dimension."""
    if m.type == STRUCT:
        kind = "struct"
    elif m.columns > 1:
        kind = f"{m.type} {m.columns}x{m.vector} matrix"
    else:
        kind = f"{m.type} vec{m.vector}" if m.vector > 1 else str(m.type)
    return kind + "".join(f"[{n}]" for n in m.array)


def _value_shape(m: PushMember) -> tuple[int, ...]:
    """The shape a value of ``m`` has: arrays outermost first, then columns, then components."""
    return m.array + ((m.columns,) if m.columns > 1 else ()) + ((m.vector,) if m.vector > 1 else ())


def _dimension_strides(m: PushMember) -> tuple[int, ...]:
    """Bytes per step of each array dimension: the outermost's is array_stride, an inner
    one's is its outer one's divided by its length (reflection refuses strides that do not
    nest so)."""
    strides = [m.array_stride]
    for n in m.array[1:]:
        strides.append(strides[-1] // n)
    return tuple(strides[:len(m.array)])


def _slots(m: PushMember, base: int) -> Iterator[tuple[int, ScalarType]]:
    """(byte offset, scalar type) of each scalar of ``m``, in the order its value flattens."""
    strides = _dimension_strides(m)
    for index in itertools.product(*(range(n) for n in m.array)):
        start = base + m.offset + sum(i * s for i, s in zip(index, strides))
        if m.type == STRUCT:
            for sub in m.members:
                yield from _slots(sub, start)
            continue
        width = SCALAR_BYTES[m.type]
        for c in range(m.columns):       # a matrix value is m[column][row], as GLSL indexes it
            for r in range(m.vector):
                if m.columns == 1:
                    offset = start + r * width
                elif m.row_major:
                    offset = start + r * m.matrix_stride + c * width
                else:
                    offset = start + c * m.matrix_stride + r * width
                yield offset, m.type


class Packer:
    """The push-constant layout of one manifest entry, compiled for packing named values."""

    def __init__(self, kernel: str, members: tuple[PushMember, ...], size: int):
        self.kernel = kernel
        self.members = members
        self.names = tuple(m.name for m in members)
        self.summary = ", ".join(f"{m.name}: {describe(m)}" for m in members) or "none"
        self._refusal = _unpackable(members)
        slots = [s for m in members for s in _slots(m, 0)]
        self.types = tuple(t for _, t in slots)
        order = sorted(range(len(slots)), key=lambda i: slots[i][0])
        fmt, end = "<", 0
        for i in order:
            offset, t = slots[i]
            if offset < end and self._refusal is None:
                self._refusal = f"its push-constant members overlap at byte {offset}"
            fmt += f"{offset - end}x" * (offset > end) + _FORMATS[t]
            end = max(end, offset + SCALAR_BYTES[t])
        if end > size and self._refusal is None:
            self._refusal = f"its push-constant members end at byte {end}, past its {size} bytes"
        self._struct = struct.Struct(fmt + f"{size - end}x" * (size > end))
        # Slots whose offset order is not their value order are put in place by one getter.
        self._reorder = (None if order == sorted(order)
                         else operator.itemgetter(*order) if len(order) > 1 else None)
        simple = all(m.type not in (STRUCT, ScalarType.BOOL) and not _value_shape(m) for m in members)
        # The hot path: every member a plain scalar, the slots already in member order, so
        # one C getter takes the values out of the dict in the order struct.pack wants them.
        self._fast = self._struct.pack if simple and self._reorder is None and not self._refusal else None
        self._count = len(self.names)
        self._get = (operator.itemgetter(*self.names) if len(self.names) > 1
                     else lambda values: tuple(values[n] for n in self.names))

    def pack(self, values: Mapping[str, Any]) -> bytes:
        fast = self._fast
        if fast is not None and values.__class__ is dict and len(values) == self._count:
            try:
                return fast(*self._get(values))
            except (KeyError, *_PACK_ERRORS):
                pass                     # the checked path says what is wrong
        return self._checked(values)

    def _checked(self, values: Mapping[str, Any]) -> bytes:
        if self._refusal is not None:
            self._fail(f"{self._refusal}; pass the push data as bytes or a numpy array")
        unknown = [k for k in values if k not in self.names]
        missing = [n for n in self.names if n not in values]
        if unknown or missing:
            self._fail(", ".join(_listed(what, names) for what, names in
                                 (("unknown", unknown), ("missing", missing)) if names))
        flat: list = []
        for m in self.members:
            self._flatten(m, values[m.name], m.name, flat)
        flat = [self._scalar(item, t) for item, t in zip(flat, self.types)]
        if self._reorder is not None:
            flat = list(self._reorder(flat))
        return self._struct.pack(*flat)

    def _fail(self, what: str):
        raise PushConstantError(f"kernel {self.kernel}: {what} (its members: {self.summary})")

    def _flatten(self, m: PushMember, value: Any, path: str, out: list) -> None:
        shape = _value_shape(m)
        if m.type == STRUCT:
            elements = self._elements(m, value, path, m.array)
            for index, element in elements:
                where = path + "".join(f"[{i}]" for i in index)
                if not isinstance(element, Mapping):
                    self._fail(f"push member {where!r} is a struct: it needs a dict of "
                               f"{', '.join(s.name for s in m.members)}, not {_kind(element)}")
                names = tuple(s.name for s in m.members)
                extra = [k for k in element if k not in names]
                lacking = [n for n in names if n not in element]
                if extra or lacking:
                    self._fail(f"push member {where!r} needs exactly the fields "
                               f"{', '.join(names)} (unknown: {', '.join(map(repr, extra)) or 'none'}; "
                               f"missing: {', '.join(lacking) or 'none'})")
                for sub in m.members:
                    self._flatten(sub, element[sub.name], f"{where}.{sub.name}", out)
            return
        if not shape:
            out.append((value, path))
            return
        for index, scalar in self._elements(m, value, path, shape):
            out.append((scalar, path + "".join(f"[{i}]" for i in index)))

    def _elements(self, m: PushMember, value: Any, path: str, shape: tuple[int, ...]):
        """(index, element) over ``shape`` of ``value``: nested sequences or a numpy array."""
        if not shape:
            return [((), value)]
        array_shape = getattr(value, "shape", None)
        if array_shape is not None and hasattr(value, "tolist") and m.type != STRUCT:
            if tuple(array_shape) != shape:
                self._fail(f"push member {path!r} ({describe(m)}) needs shape {shape}, "
                           f"got an array of shape {tuple(array_shape)}")
            value = value.tolist()
        out = []

        def walk(v, index: tuple, depth: int) -> None:
            if depth == len(shape):
                out.append((index, v))
                return
            if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
                self._fail(f"push member {path + ''.join(f'[{i}]' for i in index)!r} "
                           f"({describe(m)}) needs shape {shape}: a sequence of {shape[depth]} "
                           f"here, not {_kind(v)}")
            if len(v) != shape[depth]:
                self._fail(f"push member {path + ''.join(f'[{i}]' for i in index)!r} "
                           f"({describe(m)}) needs shape {shape}: {shape[depth]} items here, "
                           f"got {len(v)}")
            for i, item in enumerate(v):
                walk(item, index + (i,), depth + 1)
        walk(value, (), 0)
        return out

    def _scalar(self, item: tuple, t: ScalarType):
        """The value of ``item`` (value, path) checked for a slot of type ``t``."""
        value, path = item
        if t in _FLOATS:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
                self._fail(f"push member {path!r} ({t}) needs a number, not {_kind(value)}")
            try:
                struct.pack("<" + _FORMATS[t], value)
            except _PACK_ERRORS:
                self._fail(f"push member {path!r} = {value!r} is out of range for {t}")
            return value
        try:
            number = operator.index(value)
        except TypeError:
            self._fail(f"push member {path!r} ({t}) needs an integer, not {_kind(value)}")
        lo, hi = _int_range(t)
        if not lo <= number <= hi:
            self._fail(f"push member {path!r} = {number} is out of range for {t} [{lo}, {hi}]")
        return number


def _listed(what: str, names: list) -> str:
    """``unknown push member 'x'`` / ``missing push members 'a', 'b'``."""
    return f"{what} push member{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"


def _kind(value: Any) -> str:
    text = repr(value)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({type(value).__name__})"


def _unpackable(members: tuple[PushMember, ...]) -> str | None:
    """Why names cannot address every member (None when they can)."""
    names = [m.name for m in members]
    for m in members:
        if not m.name:
            return f"its push-constant member at offset {m.offset} has no name"
        if names.count(m.name) > 1:
            return f"two of its push-constant members are named {m.name!r}"
        inner = _unpackable(m.members) if m.type == STRUCT else None
        if inner is not None:
            return f"in {m.name!r}: {inner.replace('its ', '', 1)}"
    return None


_packers: dict[int, tuple[object, Packer]] = {}


def packer_for(entry) -> Packer:
    """The cached packer of a manifest entry (keyed by the entry object, which it keeps)."""
    cached = _packers.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    info = entry.info
    packer = Packer(entry.name, info.push_constants, info.push_constant_size)
    if len(_packers) >= _MAX_PACKERS:
        _packers.clear()
    _packers[id(entry)] = (entry, packer)
    return packer


def pack_push(entry, values: Mapping[str, Any]) -> bytes:
    """The push bytes of ``values`` (member name -> value) for a manifest entry."""
    cached = _packers.get(id(entry))      # packer_for, inlined: this runs at every dispatch
    if cached is not None and cached[0] is entry:
        return cached[1].pack(values)
    return packer_for(entry).pack(values)
