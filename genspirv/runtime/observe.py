"""What a Device lets people look at: a read-only snapshot of its mechanism, and GPU timers.

Takes the device's submission state (slots, sequence numbers), its plan cache
size and its context; gives ``DeviceDebug`` (``dev.debug``), a frozen record
for tests and diagnostics that changes nothing it looks at, and ``GpuTimer``
(``dev.gpu_timer()``), the GPU time of a region, read through a function the
device hands it (this module knows nothing of the device).
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from dataclasses import dataclass
from typing import Callable, Optional

from .slots import SlotState


@dataclass(frozen=True)
class SlotDebug:
    """One in-flight slot at the moment of the snapshot."""

    index: int
    state: SlotState
    serial: int                         # its batch's serial (recording order)
    seq: int                            # its submission number (queue order)
    signalled: Optional[bool]           # its fence, when submitted
    staging_chunks: frozenset[int]      # uids of its staging chunks
    descriptor_pools: frozenset[int]    # ids of its descriptor pools (as the guard keys them)
    descriptor_sets: tuple              # its cached descriptor-set arrays, one per (kernel, ranges)


@dataclass(frozen=True)
class DeviceDebug:
    """A read-only snapshot of a Device's mechanism (``dev.debug``)."""

    slots: tuple[SlotDebug, ...]
    open_slot: int                      # index of the slot that records the next batch
    completed: int                      # every submission numbered <= this has finished
    plans: int                          # dispatch plans cached
    max_plans: int
    host_profile: bool
    physical_device: str
    memory_heap_bytes: tuple[int, ...]
    limits: dict
    robust_buffer_access: bool = False  # enabled on the device (Device(robust=True))


class GpuTimer:
    """GPU time of a region; ``ns`` waits for the region's work the first time it is read."""

    def __init__(self, read_ns: Callable[[], float]):
        self._read_ns = read_ns      # waits for the region's work, then reads its timestamps
        self._ns: Optional[float] = None

    @property
    def ns(self) -> float:
        if self._ns is None:
            self._ns = self._read_ns()
        return self._ns


def snapshot(sub, *, plans: int, max_plans: int, host_profile: bool, ctx, limits) -> DeviceDebug:
    """The snapshot of one device: ``sub`` its Submission, ``ctx`` its Context."""
    slots = tuple(SlotDebug(index=s.index, state=s.state, serial=s.serial, seq=s.seq,
                            signalled=s.signalled() if s.state is SlotState.SUBMITTED else None,
                            staging_chunks=frozenset(c.uid for c in s.staging.chunks),
                            descriptor_pools=frozenset(id(p) for p in s.descriptors.pools),
                            descriptor_sets=tuple(s.descriptors.cache.values()))
                  for s in sub.slots)
    return DeviceDebug(slots=slots, open_slot=sub.open.index, completed=sub.completed, plans=plans,
                       max_plans=max_plans, host_profile=host_profile,
                       physical_device=ctx.properties["name"], memory_heap_bytes=ctx.memory_heap_bytes,
                       limits=dict(limits), robust_buffer_access=ctx.robust)
