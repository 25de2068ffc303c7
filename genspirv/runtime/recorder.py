"""The recorder: the one place work is recorded into a command buffer.

Takes a command buffer, how the barrier before an access is decided (a hazard
tracker's ``access``), the device's counters and host profile, and the
descriptor pools its dispatches draw sets from; gives ``Recorder``, whose
methods record a dispatch, a copy, a barrier or a timestamp. It carries what
a command buffer keeps from one command to the next (the pipeline, descriptor
sets and push bytes bound last) and counts what it records: ``commands`` and
``dispatches`` of its own, and the device's ``dispatches``, ``barriers``,
``barriers_skipped`` and ``descriptor_updates``.

An in-flight slot has one (slots.py) and resets it for each batch; a replay
graph is one (replay.py), deciding with a tracker of its own. ``Device``
picks which and calls it; transfers.py records its copies through one.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from typing import Callable, Optional

from ._vk import (BARRIER_STRUCTS, BIND_POINT_COMPUTE, NULL, STAGE_COMPUTE, barrier_struct,
                  cmd_bind_descriptor_sets, cmd_bind_pipeline, cmd_copy, cmd_dispatch,
                  cmd_pipeline_barrier, cmd_push_constants, cmd_timestamp)
from .hazards import Access, Barrier

# What a recorder asks before an access: (the barrier to record first or None,
# whether one was skipped), as ``HazardTracker.access`` answers.
Decide = Callable[[Access], tuple]


class Recorder:
    """Commands into one command buffer, each access ordered by ``decide``."""

    def __init__(self, command_buffer, decide: Optional[Decide], stats: dict, profile,
                 descriptors=None, on_new_pool: Optional[Callable[[int], None]] = None,
                 serial: int = 0, touched: Optional[dict] = None):
        self.command_buffer = command_buffer
        self.decide = decide
        self.stats = stats
        self.profile = profile
        self.descriptors = descriptors            # slots.DescriptorPools, or None (copies only)
        self.set_cache = descriptors.cache if descriptors is not None else None
        self.on_new_pool = on_new_pool            # told of each pool a new set came from
        # A replay graph's: every buffer its copies touch, by uid (None for a slot, whose
        # buffers carry the batch serial instead); the graph adds its dispatches' itself.
        self.touched = touched
        self.reset(serial)

    def reset(self, serial: int) -> None:
        """A new batch: nothing bound yet, nothing counted."""
        self.serial = serial            # stamped on every buffer a command touches
        self.commands = 0               # any command (dispatch, copy, barrier, timestamp)
        self.dispatches = 0
        self.bound_pipeline = None
        self.bound_sets = None          # the descriptor-set array bound last
        self.bound_push = None          # the push bytes recorded last, and through which layout
        self.push_layout = None

    # -- ordering -----------------------------------------------------------------

    def barrier(self, barrier: Barrier) -> None:
        """Record one global memory barrier (counted in ``barriers``)."""
        made = BARRIER_STRUCTS.get(id(barrier)) or barrier_struct(barrier)
        cmd_pipeline_barrier(self.command_buffer, made[0], made[1], 0, 1, made[2], 0, NULL, 0, NULL)
        self.commands += 1
        self.stats["barriers"] += 1

    def order(self, barrier: Optional[Barrier], skipped: bool) -> None:
        """Act on a tracker's answer: record ``barrier``, or count the one ``skipped``."""
        if barrier is not None:
            self.barrier(barrier)
        elif skipped:
            self.stats["barriers_skipped"] += 1

    def track(self, access: Access) -> None:
        """Decide for ``access`` and record the barrier it needs, before recording it."""
        barrier, skipped = self.decide(access)
        self.order(barrier, skipped)

    # -- commands -----------------------------------------------------------------

    def dispatch(self, bound, plan, push: bytes, x: int, y: int, z: int, t0: int = 0) -> int:
        """Record ``bound`` over ``plan``'s checked views with ``push`` (already its
        size); returns the dispatches in this command buffer so far.

        The runtime's hot path: state already bound is not bound again, and the
        Vulkan calls are the loader's entry points (_vk). ``t0``: the host
        profile's start of this dispatch, 0 when it is off."""
        if t0:
            t0 = self.profile.stop("bookkeeping", t0)
        access, descriptor_key, layout, plan_buffers, push_size = plan.hot
        barrier, skipped = self.decide(access)
        stats = self.stats
        if barrier is not None:
            self.barrier(barrier)
        elif skipped:
            stats["barriers_skipped"] += 1
        if t0:
            t0 = self.profile.stop("record", t0)
        cb = self.command_buffer
        pipeline = bound.pipeline
        if pipeline is not self.bound_pipeline:
            cmd_bind_pipeline(cb, BIND_POINT_COMPUTE, pipeline)
            self.bound_pipeline = pipeline
        if descriptor_key is not None:
            sets = self.set_cache.get(descriptor_key)
            if sets is None:
                sets = self._new_sets(bound.kernel, plan)
            if t0:
                t0 = self.profile.stop("descriptors", t0)
            # The same sets bound last stay bound (they belong to this kernel's
            # layout, so nothing recorded since can have disturbed them).
            if sets is not self.bound_sets:
                cmd_bind_descriptor_sets(cb, BIND_POINT_COMPUTE, layout, 0, len(sets), sets, 0, NULL)
                self.bound_sets = sets
        if push_size and (push is not self.bound_push or layout is not self.push_layout):
            # The same bytes object pushed last through the same layout is still in
            # place (binding a pipeline of that layout keeps push constants).
            # cffi passes a bytes object's own buffer as the const void*: no copy.
            cmd_push_constants(cb, layout, STAGE_COMPUTE, 0, push_size, push)
            self.bound_push = push
            self.push_layout = layout
        cmd_dispatch(cb, x, y, z)
        self.commands += 1
        stats["dispatches"] += 1
        serial = self.serial
        for b in plan_buffers:
            b.last_batch = serial
        if t0:
            self.profile.stop("record", t0)
        n = self.dispatches = self.dispatches + 1
        return n

    def copy(self, access: Optional[Access], src, dst, src_offset: int, dst_offset: int,
             size: int) -> None:
        """Record a copy of ``size`` bytes between two VkBuffers, after the barrier
        ``access`` (its reads and writes) needs; None: the caller orders it itself."""
        if access is not None:
            self.track(access)
        cmd_copy(self.command_buffer, src, dst, src_offset, dst_offset, size)
        self.commands += 1

    def timestamp(self, query_pool, query: int, reset: bool = False) -> None:
        """Write a timestamp into ``query`` (after resetting it and the next, if asked)."""
        cmd_timestamp(self.command_buffer, query_pool, query, reset)
        self.commands += 1

    def touch(self, *buffers) -> None:
        """Mark ``buffers`` as used by this command buffer's work."""
        for b in buffers:
            b.last_batch = self.serial
            if self.touched is not None:
                self.touched[b.uid] = b

    # -- internals ------------------------------------------------------------------

    def _new_sets(self, kernel, plan):
        """Descriptor sets written for a plan met for the first time here."""
        sets, written = self.descriptors.sets_for(kernel, plan, self.on_new_pool)
        if written:
            self.stats["descriptor_updates"] += 1
        return sets
