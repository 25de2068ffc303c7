"""Replay: dispatches and copies captured once, resubmitted without recording again.

``with dev.record() as g: ...`` routes the device's dispatch and copy calls
into a ``Graph``: a ``Recorder`` (recorder.py) over a command buffer of its
own (reusable, not one-time), with its own descriptor pool and its own hazard
tracker, so barriers inside the graph are decided once at capture.
``g.run()`` submits that command buffer again; it is simultaneous-use, so
runs may follow each other without waiting for one another.

Fixed at capture: the buffers and views bound, push data, group counts,
spec values, and every barrier inside the graph. Not allowed inside a
capture: uploads, downloads and GPU timers (their data or results belong to
one moment, not to every replay).

At the ends: before each run the device checks every access of the graph
against its own pending sets and records one barrier at the graph's start if
any conflicts (policy ``always``: if anything is pending); after the run, the
accesses since the graph's last internal barrier become pending in the
device's tracker, so the next command orders itself after the graph.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from typing import Callable, Optional

from ..errors import GenspirvError
from ._vk import call, vk
from .hazards import Access, Barrier, BarrierPolicy, HazardTracker, merge_accesses
from .recorder import Recorder
from .slots import DescriptorPools


class Graph(Recorder):
    """A captured command buffer: a recorder of its own while ``dev.record()`` is open,
    then ``run()`` as often as wanted."""

    def __init__(self, handle, queue_family: int, policy: BarrierPolicy, stats: dict, profile, *,
                 run: Callable[["Graph"], None], wait: Callable[["Graph"], None]):
        self._handle = handle
        self._run, self._wait = run, wait       # the device's: submit a run, wait for the last
        info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=queue_family)
        self._pool = call(vk.vkCreateCommandPool, handle, info, None)
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=self._pool,
                                               level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=1)
        command_buffer = call(vk.vkAllocateCommandBuffers, handle, alloc)[0]
        # Simultaneous-use: a run may be submitted while the previous one is still on
        # the GPU (runs back to back keep the queue fed); nothing in the buffer changes
        # after capture, and the entry barrier of each run orders it after the last.
        call(vk.vkBeginCommandBuffer, command_buffer,
             vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT))
        self.tracker = HazardTracker(policy)
        self.accesses: list[Access] = []
        self.tail: list[Access] = []      # accesses after the last internal barrier
        self.buffers: dict[int, object] = {}
        # serial -1: never a slot's batch serial, so a buffer a graph binds is never idle.
        super().__init__(command_buffer, self._track, stats, profile, DescriptorPools(handle),
                         serial=-1, touched=self.buffers)
        self.finished = False
        self.last_seq: Optional[int] = None   # submission number of the latest run
        self.last_slot = None

    # -- capture --------------------------------------------------------------

    def _track(self, access: Access) -> tuple[Optional[Barrier], bool]:
        """The graph's own tracker decides; every access is kept for the runs' ends."""
        barrier, skipped = self.tracker.access(access)
        if barrier is not None:
            self.tail = []
        self.accesses.append(access)
        self.tail.append(access)
        return barrier, skipped

    def dispatch(self, bound, plan, push: bytes, x: int, y: int, z: int, t0: int = 0) -> int:
        """Record a dispatch (Recorder.dispatch), keeping its buffers alive with the graph."""
        n = super().dispatch(bound, plan, push, x, y, z, t0)
        for b in plan.buffers:
            self.buffers[b.uid] = b
        return n

    def finish(self) -> None:
        call(vk.vkEndCommandBuffer, self.command_buffer)
        # What every run checks against and leaves pending, merged once: a few
        # ranges per buffer instead of one access per captured command.
        self.footprint = merge_accesses(self.accesses)
        self.tail_footprint = merge_accesses(self.tail)
        self.buffer_list = tuple(self.buffers.values())
        self.submitted_command_buffers = (self.command_buffer,)
        self.finished = True

    # -- replay ---------------------------------------------------------------

    def run(self) -> None:
        """Submit the captured work once more (after any work recorded before)."""
        if not self.finished:
            raise GenspirvError("g.run() inside its own dev.record() block")
        if self.command_buffer is None:
            raise GenspirvError("this replay graph was destroyed")
        self._run(self)

    def destroy(self) -> None:
        """Free the graph (waiting for a run still in flight)."""
        if self._pool is not None:
            self._wait(self)
            self.descriptors.destroy()
            vk.vkDestroyCommandPool(self._handle, self._pool, None)
            self._pool = None
            self.command_buffer = None


def submit_run(sub, graph: Graph) -> None:
    """One run of ``graph`` through ``sub`` (the device's Submission; its lock held):
    the entry barrier into the open batch, the graph's tail left pending, then the
    batch and the graph submitted.

    No wait for the graph's previous run: its command buffer is simultaneous-use, and
    the entry barrier orders this run after that one."""
    slot = sub.batch()
    tracker = sub.tracker
    slot.recorder.order(*entry_barrier(tracker, graph))
    for access in graph.tail_footprint:
        tracker.add_pending(access)
    slot.recorder.touch(*graph.buffer_list)
    slot.keep_alive.append(graph)
    sub.stats["replays"] += 1
    sub.submit(slot, extra_command_buffers=graph.submitted_command_buffers)
    graph.last_slot = slot
    graph.last_seq = slot.seq


def entry_barrier(tracker: HazardTracker, graph: Graph) -> tuple[Optional[Barrier], bool]:
    """The barrier to record before a run of ``graph`` (and whether one was skipped)."""
    if not tracker.pending:
        return None, False
    if tracker.policy is BarrierPolicy.ALWAYS or (
            tracker.policy is BarrierPolicy.SMART and any(tracker.hazards(a) for a in graph.footprint)):
        return tracker.barrier_all(), False
    return None, True


__all__ = ["Graph", "entry_barrier", "submit_run"]
