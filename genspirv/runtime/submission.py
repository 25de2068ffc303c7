"""The submission path: every queue submission of the runtime goes through here.

Takes a ``Context`` (device and queues), the in-flight slot count, the
device's counters and host profile, and the device's hazard tracker; gives
``queue_submit`` (the one place a ``VkSubmitInfo`` is built) and
``Submission``: the ring of in-flight slots (slots.py), whose recorders all
decide through that one tracker (its pending accesses outlive any batch: only
a barrier clears them), the batch serial (recording order), the submission
number (queue order) and the highest number known finished, the query pool of
the batches' GPU timestamps, and the three ways work leaves the host — a batch
(``submit``, or ``flush`` for the open one), a side batch that leaves the open
batch open (``submit_side``), and a copy on the transfer queue
(``submit_transfer``) — each counted in ``dev.stats`` in one place.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from typing import Optional, Sequence

from . import _vk
from ._vk import call, ffi, query_results, vk
from .hazards import HazardTracker
from .slots import InFlightGuard, Slot, SlotState

TIMER_QUERIES = 256
# Timestamp pairs the batches take in turn. A retired batch's pair is read only
# when the ring comes back to it (or gpu_busy() asks): lavapipe answers
# vkGetQueryPoolResults, even without the wait flag, by waiting for the queue,
# which at every retire would stall the host behind the batch in flight.
BATCH_QUERY_PAIRS = 64
# Submit infos kept (one per slot and replayed graph); past this the cache starts afresh.
MAX_SUBMIT_INFOS = 256


def queue_submit(queue, command_buffers: Sequence = (), fence=None, *,
                 wait: Sequence = (), signal: Sequence = ()) -> None:
    """Submit ``command_buffers`` to ``queue``: wait on the binary semaphores ``wait``
    (before any command), signal ``signal`` and ``fence`` when done."""
    _vk.queue_submit_new_info(queue, command_buffers, fence, wait, signal)


class Submission:
    """In-flight slots and the order of the work submitted through them."""

    def __init__(self, ctx, inflight: int, stats: dict, profile, tracker: HazardTracker):
        self.ctx = ctx
        self._handle = ctx.handle
        self.stats = stats
        self._profile = profile
        self.tracker = tracker
        self.guard = InFlightGuard()
        # Queries [0, 2 * BATCH_QUERY_PAIRS) are the batches' timestamps; the rest serve timers.
        self.timer_base = 2 * max(BATCH_QUERY_PAIRS, inflight)
        pool_info = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                                             queryCount=self.timer_base + TIMER_QUERIES)
        self.query_pool = call(vk.vkCreateQueryPool, ctx.handle, pool_info, None)
        self._next_query = 0
        self._next_pair = 0
        self._unread: list[int] = []      # first queries of retired batches, not read yet
        self._gpu_busy_ns = 0.0
        self._gpu_batches = 0
        self.slots = [Slot(i, ctx.handle, ctx.queue_family, ctx.mem_props, ctx.max_allocation,
                           ctx.families, self.query_pool, guard=self.guard, decide=tracker.access,
                           stats=stats, profile=profile) for i in range(inflight)]
        self.open = self.slots[0]     # the slot of the open batch (the dispatch path reads it)
        self.serial = 0               # last batch serial handed out (recording order)
        self.submit_seq = 0           # last submission number (queue order)
        self.completed = 0            # every submission numbered <= this has finished
        self.last_submitted: Optional[Slot] = None
        self._submit_infos: dict[tuple, tuple] = {}

    # -- batches ------------------------------------------------------------------

    def batch(self) -> Slot:
        """The slot recording the open batch; opens one (retiring the slot) if needed."""
        slot = self.open
        if slot.state is SlotState.RECORDING:
            return slot
        self._begin(slot)
        return slot

    def flush(self) -> None:
        """Submit the open batch, if it holds any command."""
        slot = self.open
        if slot.state is SlotState.RECORDING and slot.recorder.commands:
            self.submit(slot)

    def side_batch(self) -> Slot:
        """A batch begun in the slot after the open one, for work that must not wait
        for the open batch (submit it with ``submit_side``)."""
        slot = self.slots[(self.open.index + 1) % len(self.slots)]
        self._begin(slot)
        return slot

    def _begin(self, slot: Slot) -> None:
        if slot.state is SlotState.SUBMITTED:
            self.retire(slot)
        self.serial += 1
        slot.query_base = self._take_pair()
        slot.begin(self.serial)

    def _take_pair(self) -> int:
        """The first query of the next timestamp pair; its earlier batch's are read first."""
        first = 2 * self._next_pair
        self._next_pair = (self._next_pair + 1) % (self.timer_base // 2)
        if first in self._unread:
            self.read_timestamps()
        return first

    def read_timestamps(self) -> None:
        """Add the GPU time of every retired batch not read yet."""
        # Batches retire in ring order, so their pairs are mostly adjacent: each run
        # of adjacent pairs is one vkGetQueryPoolResults (lavapipe waits for its
        # queue on every call, ~50 µs), not one call per pair.
        unread, i, n = self._unread, 0, len(self._unread)
        while i < n:
            j = i + 1
            while j < n and unread[j] == unread[j - 1] + 2:
                j += 1
            self._read_run(unread[i], j - i)
            i = j
        self._gpu_batches += n
        unread.clear()

    def _read_run(self, first: int, pairs: int) -> None:
        """Add the GPU time of ``pairs`` adjacent batch pairs from query ``first``."""
        data = ffi.new("uint64_t[]", 2 * pairs)
        if pairs == 1 or not query_results(self._handle, self.query_pool, first, 2 * pairs, data):
            for k in range(pairs):      # one at a time, waiting for any not available yet
                self._gpu_busy_ns += self.query_ns(first + 2 * k, wait=False)
            return
        bits = self.ctx.timestamp_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        period = self.ctx.limits["timestamp_period_ns"]
        for k in range(0, 2 * pairs, 2):
            self._gpu_busy_ns += ((int(data[k + 1]) - int(data[k])) & mask) * period

    @property
    def gpu_busy_ns(self) -> float:
        self.read_timestamps()
        return self._gpu_busy_ns

    @property
    def gpu_batches(self) -> int:
        return self._gpu_batches + len(self._unread)

    def retire(self, slot: Slot) -> None:
        if not slot.signalled():
            self.wait_for(slot)
            slot.wait()     # returns at once; vkResetFences needs the fence itself signalled
        self.completed = max(self.completed, slot.seq)
        # The fence has signalled, so the batch's timestamps are written; they are
        # read later, without the wait flag (see BATCH_QUERY_PAIRS).
        self._unread.append(slot.query_base)
        slot.retire()

    def retire_finished(self) -> None:
        """Retire every submitted slot whose fence has signalled; waits for nothing."""
        for s in self.slots:
            if s.state is SlotState.SUBMITTED and (s.seq <= self.completed or s.signalled()):
                self.retire(s)

    def wait_for(self, slot) -> None:
        """Block until ``slot``'s submission (and so every earlier one) has finished."""
        if slot.state is not SlotState.SUBMITTED or slot.seq <= self.completed:
            return
        t0 = self._profile.start()
        slot.wait()
        self.stats["fence_waits"] += 1
        self._profile.stop("wait", t0)
        self.completed = slot.seq

    def in_flight(self) -> int:
        return sum(1 for s in self.slots if s.state is SlotState.SUBMITTED)

    def buffer_in_use(self, buf) -> bool:
        """Recorded or submitted (not retired) work references ``buf``."""
        return any(s.state is not SlotState.IDLE and s.serial == buf.last_batch for s in self.slots)

    def buffer_idle(self, buf) -> bool:
        """No recorded or unfinished submitted work touches ``buf`` (nor a replay graph)."""
        if buf.last_batch < 0:
            return False
        for s in self.slots:
            if s.serial == buf.last_batch and (s.state is SlotState.RECORDING or (
                    s.state is SlotState.SUBMITTED and s.seq > self.completed)):
                return False
        return True

    # -- the three submissions ------------------------------------------------------

    def submit(self, slot: Slot, extra_command_buffers: Sequence = ()) -> None:
        """Submit the open batch (and any replayed command buffers after it); the next
        slot becomes the open one."""
        t0 = self._profile.start()
        slot.end()
        waits = slot.transfer.waits if slot.transfer is not None else ()
        # The slot's own buffer always goes: it holds the batch's timestamps.
        if waits:
            queue_submit(self.ctx.queue, [slot.command_buffer, *extra_command_buffers], slot.fence,
                         wait=waits)
            waits.clear()
        else:
            # Without semaphores the submission depends only on the command buffers:
            # its VkSubmitInfo is made once per slot and replayed graph.
            key = (slot.index, *extra_command_buffers)
            made = self._submit_infos.get(key)
            if made is None:
                if len(self._submit_infos) >= MAX_SUBMIT_INFOS:
                    self._submit_infos.clear()
                made = self._submit_infos[key] = _vk.submit_info((slot.command_buffer,
                                                                  *extra_command_buffers))
            _vk.queue_submit_info(self.ctx.queue, made, slot.fence)
        self._submitted(slot)
        self.stats["flushes"] += 1
        self.open = self.slots[(self.open.index + 1) % len(self.slots)]
        self._profile.stop("submit", t0)

    def submit_side(self, slot: Slot) -> None:
        """Submit a side batch; the open batch stays open."""
        t0 = self._profile.start()
        slot.end()
        queue_submit(self.ctx.queue, [slot.command_buffer], slot.fence)
        self._submitted(slot)
        self._profile.stop("submit", t0)

    def submit_transfer(self, slot: Slot, command_buffer, semaphore) -> None:
        """Submit a copy on the transfer queue; ``slot``'s next submission waits on it."""
        _vk.end(command_buffer)
        queue_submit(self.ctx.transfer_queue, [command_buffer], signal=[semaphore])
        slot.transfer.waits.append(semaphore)
        slot.recorder.commands += 1     # the batch must be submitted to consume the semaphore
        self.stats["submits"] += 1

    def _submitted(self, slot: Slot) -> None:
        slot.state = SlotState.SUBMITTED
        self.submit_seq += 1
        slot.seq = self.submit_seq
        self.last_submitted = slot
        self.stats["submits"] += 1

    # -- timestamps -------------------------------------------------------------------

    def timer_queries(self) -> int:
        """The first of two timestamp queries for a timer (the ring reuses them)."""
        q = self.timer_base + self._next_query
        self._next_query = (self._next_query + 2) % TIMER_QUERIES
        return q

    def query_ns(self, first_query: int, wait: bool = True) -> float:
        data = ffi.new("uint64_t[2]")
        if wait or not query_results(self._handle, self.query_pool, first_query, 2, data):
            call(vk.vkGetQueryPoolResults, self._handle, self.query_pool, first_query, 2, 16, data, 8,
                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        bits = self.ctx.timestamp_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        return ((int(data[1]) - int(data[0])) & mask) * self.ctx.limits["timestamp_period_ns"]

    def destroy(self) -> None:
        for slot in self.slots:
            slot.destroy()
        vk.vkDestroyQueryPool(self._handle, self.query_pool, None)
