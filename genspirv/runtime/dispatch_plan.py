"""Dispatch plans: the checks of a dispatch's arguments against the device's limits.

Takes a kernel, the buffers or views bound to it, a group count, the push
data and the device's limits (``Context.limits``); gives a frozen
``DispatchPlan`` (the checked views, the dispatch's ``Access`` from
``access_of``, the descriptor cache key, the distinct buffers, and what
recording needs from the kernel), the group counts as (x, y, z), the push
data as bytes (``push_bytes``: the one place ``push=`` becomes bytes), or an
``ArgumentTypeError`` / ``DispatchError`` / ``BufferRangeError`` naming the
kernel, the binding and the numbers. No Vulkan calls of its own.

A plan is made once per kernel and bound buffers and looked up at every later
dispatch over them, so everything a dispatch can learn from those alone is
worked out here, once: the hot path only checks the push size and group count.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..errors import ArgumentTypeError, BufferRangeError, DispatchError
from .hazards import Access, access_of
from .args import little_endian, whole_number
from .memory import Buffer, BufferView, view_arg
from .push import pack_push


@dataclass(frozen=True)
class DispatchPlan:
    """A kernel's bound buffers, checked: what every dispatch over them reuses."""

    views: tuple[BufferView, ...]
    access: Access                  # the dispatch's reads and writes, for the tracker
    # "kernel id/uid:offset:size,...": a str, so its hash is computed once and the
    # owner's descriptor-set cache is looked up at the cost of an identity check.
    descriptor_key: str
    buffers: tuple[Buffer, ...]     # the distinct buffers bound
    pipeline_layout: object         # the kernel's, for binding sets and pushing constants
    push_size: int                  # the kernel's push-constant size
    # What a dispatch reads from the plan, in one tuple it unpacks at once:
    # (access, descriptor_key or None without bindings, pipeline_layout, buffers, push_size).
    hot: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hot", (self.access, self.descriptor_key if self.views else None,
                                         self.pipeline_layout, self.buffers, self.push_size))


def push_bytes(push, entry) -> bytes:
    """A dispatch's ``push=`` as the bytes recorded: the one place it is normalised
    (``entry``: the kernel's manifest entry; its size is checked by the caller). A dict of
    named members is packed by ``entry``'s push_constants (genspirv/runtime/push.py)."""
    if type(push) is bytes:
        return push
    if push.__class__ is dict:
        return pack_push(entry, push)      # named members: genspirv/runtime/push.py
    if push is None:
        return b""
    if isinstance(push, Mapping):
        return pack_push(entry, push)
    if isinstance(push, (bytes, bytearray, memoryview)):
        return bytes(push)
    if isinstance(push, np.ndarray):
        return np.ascontiguousarray(little_endian(push)).tobytes()
    raise ArgumentTypeError(f"kernel {entry.name}: push data must be a dict of named members, bytes or a numpy array, "
                            f"not {type(push).__name__}")


def bound_views(k, buffers, device) -> tuple[BufferView, ...]:
    """``buffers`` (in binding order) as views, each a live Buffer or BufferView of ``device``."""
    names = [b.name for b in k.bindings]
    return tuple(view_arg(b, device, f"kernel {k.name}, binding {i}"
                                     + (f" ({names[i]})" if i < len(names) else ""))
                 for i, b in enumerate(buffers))


def make_dispatch_plan(k, views: tuple[BufferView, ...], limits: dict) -> DispatchPlan:
    """Check ``views`` (from ``bound_views``) against ``k``'s bindings and the device's limits
    (``k``: a bound kernel, its min sizes and push size at its spec values)."""
    for i, v in enumerate(views):
        check_binding_range(k, i, v, limits)
    distinct = tuple({v.buffer.uid: v.buffer for v in views}.values())
    # Sets bound through one pipeline layout are disturbed by binding through another
    # (a spec-sized push range gives a specialisation its own): the layout is in the key.
    key = f"{id(k.pipeline_layout)}/" + ",".join(f"{v.buffer.uid}:{v.offset}:{v.size}" for v in views)
    return DispatchPlan(views=views, access=access_of(k, [v.range for v in views]),
                        descriptor_key=key, buffers=distinct, pipeline_layout=k.pipeline_layout,
                        push_size=k.push_constant_size)


def check_groups(name: str, groups, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    """``groups`` as (x, y, z), each within 1..the device's ``maxComputeWorkGroupCount``."""
    if type(groups) is int and 0 < groups <= limit[0]:
        return (groups, 1, 1)
    if type(groups) is tuple and len(groups) == 3:
        x, y, z = groups
        if (type(x) is int and type(y) is int and type(z) is int
                and 0 < x <= limit[0] and 0 < y <= limit[1] and 0 < z <= limit[2]):
            return groups     # the common case, checked in one pass
    single = whole_number(groups)
    try:
        g = (single,) if single is not None else tuple(whole_number(x) for x in groups)
    except TypeError:
        raise ArgumentTypeError(f"kernel {name}: groups must be an int or (x, y, z), "
                                f"not {groups!r}") from None
    if not 1 <= len(g) <= 3 or None in g:
        raise ArgumentTypeError(f"kernel {name}: groups must be up to three integers, not {groups!r}")
    g = g + (1,) * (3 - len(g))
    for axis, (x, m) in enumerate(zip(g, limit)):
        if x < 1:
            raise DispatchError(f"kernel {name}: {x} groups along {'xyz'[axis]}; a dispatch "
                                f"needs at least 1")
        if x > m:
            raise DispatchError(f"kernel {name}: {x} groups along {'xyz'[axis]}, the device "
                                f"allows at most {m}")
    return g


def check_binding_range(k, i: int, v: BufferView, limits: dict) -> None:
    b = k.bindings[i]
    if b.type == "uniform_buffer":
        align, max_range = (limits["min_uniform_buffer_offset_alignment"],
                            limits["max_uniform_buffer_range"])
    else:
        align, max_range = (limits["min_storage_buffer_offset_alignment"],
                            limits["max_storage_buffer_range"])
    if v.offset % align:
        raise BufferRangeError(f"kernel {k.name}, binding {b.name}: view offset {v.offset} of "
                               f"{v.buffer.name} is not a multiple of the device's {align}-byte "
                               f"{b.type} offset alignment")
    if v.size < b.min_size:
        raise BufferRangeError(f"kernel {k.name}, binding {b.name}: view of {v.size} bytes of "
                               f"{v.buffer.name}, the shader's block needs at least {b.min_size} "
                               f"bytes (min_size)")
    if v.size > max_range:
        raise BufferRangeError(f"kernel {k.name}, binding {b.name}: view of {v.size} bytes, the "
                               f"device binds at most {max_range} bytes as a {b.type}")
