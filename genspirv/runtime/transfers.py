"""Transfers: uploads, device-side copies and downloads, and the transfer-queue choice.

Takes host arrays and buffer views through the ``Device`` these methods are
mixed into; gives staged copies recorded into the open batch (each a tracked
access, so the hazard tracker orders them like dispatches), downloads that
drain only what they must, uploads moved to the transfer queue when they pay,
and the crossover probe that decides when they pay
(``GENSPIRV_COMPUTE_STREAM_COPY_MAX`` overrides it).
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Optional

import numpy as np

from .. import settings
from ..errors import BufferRangeError, GenspirvError
from . import _vk
from ._vk import call, cmd_barrier, vk
from .hazards import Access, Barrier, Range
from .memory import Buffer, BufferView, StagingChunk, as_view
from .sharing import check_owner, serialised
from .submission import queue_submit
from .submit import TransferLane, crossover_bytes, use_transfer_queue

# Uploads smaller than this never consider the transfer queue (nor trigger its measurement).
TRANSFER_CANDIDATE_MIN = 64 << 10
CROSSOVER_PROBE_BYTES = 16 << 20

_ALL_DEVICE_STAGES = frozenset({"compute", "transfer"})
# A download on a side batch runs before the open batch on the queue, so it orders
# itself with barriers of its own: after every device write, and before the host read.
_BEFORE_SIDE_COPY = Barrier(src_stages=_ALL_DEVICE_STAGES, src_writes=_ALL_DEVICE_STAGES,
                            dst_stages=frozenset({"transfer"}), dst_reads=frozenset({"transfer"}),
                            dst_writes=frozenset({"transfer"}), kinds=frozenset({"RAW"}))
_AFTER_SIDE_COPY = Barrier(src_stages=frozenset({"transfer"}), src_writes=frozenset({"transfer"}),
                           dst_stages=frozenset({"host"}), dst_reads=frozenset({"host"}),
                           dst_writes=frozenset(), kinds=frozenset({"RAW"}))

log = logging.getLogger("genspirv.runtime")


def host_bytes(array) -> memoryview:
    if isinstance(array, np.ndarray):
        return memoryview(np.ascontiguousarray(array)).cast("B")
    if isinstance(array, (bytes, bytearray, memoryview)):
        return memoryview(array).cast("B")
    raise BufferRangeError(f"upload takes a numpy array or bytes, not {type(array).__name__}")


class Transfers:
    """The transfer half of ``Device`` (mixed in; see device.py for the state it uses)."""

    _crossover: Optional[float] = None
    copy_crossover_info: Optional[dict] = None

    @serialised
    def upload(self, dst, array) -> None:
        """Copy ``array`` into ``dst`` (buffer or view); ``array`` may be reused at once."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("upload inside dev.record(): captured work replays fixed data; "
                                "upload before g.run() instead")
        check_owner(dst, self, "upload destination")
        view = as_view(dst, "upload destination")
        data = host_bytes(array)
        n = data.nbytes
        if n > view.size:
            raise BufferRangeError(f"upload of {n} bytes into {view.buffer.name} "
                                   f"[{view.offset}, {view.offset + view.size}) of {view.size} bytes")
        if n == 0:
            return
        if (self.transfer_queue is not None and self.upload_mode == "staged"
                and n >= TRANSFER_CANDIDATE_MIN
                and use_transfer_queue(n, self.copy_crossover(), True,
                                       self._submission.buffer_idle(view.buffer))):
            self._upload_on_transfer_queue(view, data)
            return
        slot = self._submission.batch()
        chunk, off = slot.staging.alloc(n)
        self._submission.guard.use_staging(chunk.uid, off, off + n, slot.index)
        chunk.write(off, data)
        staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
        self._track(slot, Access("transfer", reads=(staged,),
                                 writes=(Range(view.buffer.uid, view.offset, n),)))
        _vk.cmd_copy(slot.command_buffer, chunk.handle, view.buffer.handle, off, view.offset, n)
        slot.commands += 1
        view.buffer.last_batch = slot.serial
        if self.upload_mode == "blocking":
            self._stats["blocking_uploads"] += 1
            self.flush()
            self._submission.wait_for(slot)
        else:
            self._stats["staged_uploads"] += 1

    @serialised
    def copy(self, src, dst) -> None:
        """Device-side copy of all of ``src`` to the start of ``dst``."""
        self._check_open()
        check_owner(src, self, "copy source")
        check_owner(dst, self, "copy destination")
        s = as_view(src, "copy source")
        d = as_view(dst, "copy destination")
        if s.size > d.size:
            raise BufferRangeError(f"copy of {s.size} bytes from {s.buffer.name} into a "
                                   f"{d.size}-byte view of {d.buffer.name}")
        target = Range(d.buffer.uid, d.offset, s.size)
        if s.range.overlaps(target):
            raise BufferRangeError(f"copy within {s.buffer.name}: source [{s.offset}, "
                                   f"{s.offset + s.size}) overlaps destination "
                                   f"[{d.offset}, {d.offset + s.size})")
        rec = self._recorder()
        self._track(rec, Access("transfer", reads=(s.range,), writes=(target,)))
        _vk.cmd_copy(rec.command_buffer, s.buffer.handle, d.buffer.handle, s.offset, d.offset, s.size)
        rec.commands += 1
        s.buffer.last_batch = d.buffer.last_batch = rec.serial
        if rec is self._recording:
            rec.buffers.update({s.buffer.uid: s.buffer, d.buffer.uid: d.buffer})

    @serialised
    def download(self, src, dtype="float32", shape=None) -> np.ndarray:
        """The contents of ``src`` (buffer or view) as a new numpy array.

        Waits only for what it must: when the open batch has not touched the
        buffer, the copy goes out in its own small batch on another slot and
        the open batch stays open (``drains`` counts downloads that had to
        submit the open batch).
        """
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("download inside dev.record(): nothing captured has run yet")
        check_owner(src, self, "download source")
        view = as_view(src, "download source")
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise BufferRangeError(f"download of {view.buffer.name}: {dtype!r} is not a numpy dtype") from None
        if view.size % dtype.itemsize:
            raise BufferRangeError(f"download of {view.size} bytes from {view.buffer.name} is not a "
                                   f"whole number of {dtype} items")
        open_slot = self._submission.open_slot()
        touched_open = open_slot.state == "recording" and view.buffer.last_batch == open_slot.serial
        if touched_open or self.inflight == 1:
            raw = self._download_in_batch(view, drain=open_slot.state == "recording"
                                          and open_slot.commands > 0)
        else:
            raw = self._download_on_side(view)
        out = np.frombuffer(raw, dtype=dtype).copy()
        return out.reshape(shape) if shape is not None else out

    @serialised
    def copy_crossover(self) -> float:
        """Bytes above which an upload pays for the transfer queue; measured on first use."""
        if self._crossover is None:
            fixed = settings.get("GENSPIRV_COMPUTE_STREAM_COPY_MAX")
            if fixed is not None:
                self._crossover = float(fixed)
                self.copy_crossover_info = {"crossover_bytes": self._crossover,
                                            "source": "GENSPIRV_COMPUTE_STREAM_COPY_MAX"}
            else:
                self.copy_crossover_info = self._measure_crossover()
                self._crossover = self.copy_crossover_info["crossover_bytes"]
            log.info("%s: uploads above %d bytes go to the transfer queue (%s)",
                     self.properties["name"], self._crossover, self.copy_crossover_info)
        return self._crossover

    # -- downloads ------------------------------------------------------------------

    def _download_in_batch(self, view: BufferView, drain: bool) -> bytes:
        slot = self._submission.batch()
        n = view.size
        chunk, off = slot.staging.alloc(n)
        self._submission.guard.use_staging(chunk.uid, off, off + n, slot.index)
        staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
        self._track(slot, Access("transfer", reads=(view.range,), writes=(staged,)))
        _vk.cmd_copy(slot.command_buffer, view.buffer.handle, chunk.handle, view.offset, off, n)
        slot.commands += 1
        self._track(slot, Access("host", reads=(staged,)))
        view.buffer.last_batch = slot.serial
        if drain:
            self._stats["drains"] += 1
        self.flush()
        self._submission.wait_for(slot)
        return chunk.read(off, n)

    def _download_on_side(self, view: BufferView) -> bytes:
        """Copy out through the next slot, leaving the open batch (which never touched
        the buffer) open. The copy runs before the open batch on the queue, so it gets
        barriers of its own instead of the tracker's: the tracker's pending sets
        describe the open batch too, and a barrier recorded here would not order it."""
        side = self._submission.side_batch()
        n = view.size
        chunk, off = side.staging.alloc(n)
        self._submission.guard.use_staging(chunk.uid, off, off + n, side.index)
        cb = side.command_buffer
        cmd_barrier(cb, _BEFORE_SIDE_COPY)
        _vk.cmd_copy(cb, view.buffer.handle, chunk.handle, view.offset, off, n)
        cmd_barrier(cb, _AFTER_SIDE_COPY)
        side.commands += 3
        self._stats["barriers"] += 2
        # Later writes of this range must wait for the copy's read.
        self._tracker.add_pending(Access("transfer", reads=(view.range,)))
        self._submission.submit_side(side)
        self._submission.wait_for(side)
        return chunk.read(off, n)

    # -- the transfer queue -----------------------------------------------------------

    def _upload_on_transfer_queue(self, view: BufferView, data) -> None:
        """Copy on the transfer queue now; the open batch waits on its semaphore when it
        is submitted. The semaphore wait orders the copy before every later command, so
        its write is not left pending in the tracker."""
        n = data.nbytes
        slot = self._submission.batch()
        if slot.transfer is None:
            slot.transfer = TransferLane(self.handle, self._ctx.transfer_lane_family)
        chunk, off = slot.staging.alloc(n)
        self._submission.guard.use_staging(chunk.uid, off, off + n, slot.index)
        chunk.write(off, data)
        cb, sem = slot.transfer.next()
        _vk.cmd_copy(cb, chunk.handle, view.buffer.handle, off, view.offset, n)
        self._submission.submit_transfer(slot, cb, sem)
        view.buffer.last_batch = slot.serial
        self._stats["staged_uploads"] += 1
        self._stats["transfer_queue_copies"] += 1

    def _measure_crossover(self) -> dict:
        """Submit + semaphore overhead on the host clock, H2D bandwidth with GPU timestamps
        around a staged copy in the compute stream. Uses its own command pool, fence and
        memory; nothing open is submitted and no counter moves."""
        ctx, sub = self._ctx, self._submission
        dev = ctx.handle
        pool_info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=ctx.queue_family)
        pool = call(vk.vkCreateCommandPool, dev, pool_info, None)
        lane = TransferLane(dev, ctx.transfer_lane_family)
        fence = call(vk.vkCreateFence, dev, vk.VkFenceCreateInfo(), None)
        chunk = StagingChunk(dev, ctx.mem_props, CROSSOVER_PROBE_BYTES, ctx.max_allocation, ctx.families)
        target = Buffer(dev, ctx.mem_props, CROSSOVER_PROBE_BYTES, ctx.max_allocation,
                        "crossover probe", ctx.families)
        fences = [fence]
        try:
            overheads = []
            for _ in range(5):
                cb, sem = lane.next()
                call(vk.vkEndCommandBuffer, cb)
                t0 = time.perf_counter()
                queue_submit(ctx.transfer_queue, [cb], signal=[sem])
                queue_submit(ctx.queue, (), fence, wait=[sem])
                overheads.append(time.perf_counter() - t0)
                call(vk.vkWaitForFences, dev, 1, fences, vk.VK_TRUE, _vk.NO_TIMEOUT)
                call(vk.vkResetFences, dev, 1, fences)
                lane.reset()
            alloc = vk.VkCommandBufferAllocateInfo(commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                   commandBufferCount=1)
            cb = call(vk.vkAllocateCommandBuffers, dev, alloc)[0]
            q = sub.timer_queries()
            seconds = []
            for _ in range(3):
                call(vk.vkResetCommandPool, dev, pool, 0)
                call(vk.vkBeginCommandBuffer, cb, vk.VkCommandBufferBeginInfo())
                vk.vkCmdResetQueryPool(cb, sub.query_pool, q, 2)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, sub.query_pool, q)
                _vk.cmd_copy(cb, chunk.handle, target.handle, 0, 0, CROSSOVER_PROBE_BYTES)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, sub.query_pool, q + 1)
                call(vk.vkEndCommandBuffer, cb)
                queue_submit(ctx.queue, [cb], fence)
                call(vk.vkWaitForFences, dev, 1, fences, vk.VK_TRUE, _vk.NO_TIMEOUT)
                call(vk.vkResetFences, dev, 1, fences)
                seconds.append(sub.query_ns(q) / 1e9)
        finally:
            call(vk.vkDeviceWaitIdle, dev)
            target.destroy()
            chunk.destroy()
            vk.vkDestroyFence(dev, fence, None)
            lane.destroy()
            vk.vkDestroyCommandPool(dev, pool, None)
        overhead = statistics.median(overheads)
        bandwidth = CROSSOVER_PROBE_BYTES / max(statistics.median(seconds), 1e-9)
        return {"overhead_us": overhead * 1e6, "h2d_gb_per_s": bandwidth / 1e9,
                "crossover_bytes": crossover_bytes(overhead, bandwidth), "source": "measured"}
