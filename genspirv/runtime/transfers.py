"""Transfers: uploads, device-side copies and downloads, and when the transfer queue pays.

Takes the device's ``Submission`` (its slots, their recorders and the hazard
tracker) and views already checked against their Device (``memory.view_arg``);
gives functions: staged uploads and copies recorded through a ``Recorder``
(each a tracked access, so the tracker orders them like dispatches),
downloads that drain only what they must, uploads moved to the transfer queue
when they pay, and the crossover that says when they pay (measured once, or
``GENSPIRV_COMPUTE_STREAM_COPY_MAX``). Also the checks of what the host hands
over or asks for: an upload's data, a download's dtype and shape, both made
before any work is recorded.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

import logging
import math
import statistics
import time
from typing import Callable, Literal, Optional, get_args

import numpy as np

from .. import settings
from ..errors import ArgumentTypeError, BufferRangeError
from . import _vk
from ._vk import call, vk
from .hazards import Access, Barrier, HazardKind, Range, Stage
from .args import describe_value, little_endian, whole_number
from .memory import Buffer, BufferView, StagingChunk
from .recorder import Recorder
from .slots import SlotState, TransferLane
from .submission import Submission, queue_submit

# How uploads go (GENSPIRV_UPLOAD): recorded into the open batch, or each submitted and waited for.
UploadMode = Literal["staged", "blocking"]
UPLOAD_MODES: tuple[str, ...] = get_args(UploadMode)
# Uploads smaller than this never consider the transfer queue (nor trigger its measurement).
TRANSFER_CANDIDATE_MIN = 64 << 10
CROSSOVER_PROBE_BYTES = 16 << 20

_DEVICE = frozenset({Stage.COMPUTE, Stage.TRANSFER})
_TRANSFER = frozenset({Stage.TRANSFER})
_HOST = frozenset({Stage.HOST})
_RAW = frozenset({HazardKind.RAW})
# A download on a side batch runs before the open batch on the queue, so it orders
# itself with barriers of its own: after every device write, and before the host read.
_BEFORE_SIDE_COPY = Barrier(src_stages=_DEVICE, src_writes=_DEVICE, dst_stages=_TRANSFER,
                            dst_reads=_TRANSFER, dst_writes=_TRANSFER, kinds=_RAW)
_AFTER_SIDE_COPY = Barrier(src_stages=_TRANSFER, src_writes=_TRANSFER, dst_stages=_HOST,
                           dst_reads=_HOST, dst_writes=frozenset(), kinds=_RAW)

log = logging.getLogger("genspirv.runtime")


def _name(view: BufferView) -> str:
    """``weights``, or ``weights [256, 512)`` for part of it."""
    if view.offset == 0 and view.size == view.buffer.nbytes:
        return view.buffer.name
    return f"{view.buffer.name} [{view.offset}, {view.offset + view.size})"


# -- what the host hands over or asks for ------------------------------------------


def host_bytes(array, view: BufferView) -> memoryview:
    """``array``'s bytes for an upload into ``view``: a numpy array or a bytes-like
    object, no larger than the view."""
    if isinstance(array, np.ndarray):
        if array.dtype.hasobject:
            raise ArgumentTypeError(f"upload into {_name(view)}: an array of Python objects has no "
                                    f"bytes to copy; pass a numeric numpy array")
        data = memoryview(np.ascontiguousarray(little_endian(array))).cast("B")
    elif isinstance(array, memoryview) and array.format[:1] in ">!":
        # A typed view of big-endian items (of a numpy array of '>f4', say): its values, as for the array.
        data = memoryview(np.ascontiguousarray(little_endian(np.asarray(array)))).cast("B")
    elif isinstance(array, (bytes, bytearray, memoryview)):
        data = memoryview(array).cast("B")
    else:
        raise ArgumentTypeError(f"upload takes a numpy array or bytes, not {describe_value(array)}")
    if data.nbytes > view.size:
        raise BufferRangeError(f"upload of {data.nbytes} bytes into {view.buffer.name} "
                               f"[{view.offset}, {view.offset + view.size}) of {view.size} bytes")
    return data


def download_layout(view: BufferView, dtype, shape) -> tuple[np.dtype, Optional[tuple[int, ...]]]:
    """The dtype and shape a download of ``view`` returns, refused unless its bytes fit."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ArgumentTypeError(f"download of {_name(view)}: {dtype!r} is not a numpy dtype") from None
    if dt.hasobject or dt.itemsize == 0:
        raise ArgumentTypeError(f"download of {_name(view)}: {dt} has no fixed-size items; pass a "
                                f"numeric dtype such as 'float32'")
    if view.size % dt.itemsize:
        raise BufferRangeError(f"download of {view.size} bytes from {view.buffer.name} is not a "
                               f"whole number of {dt} items")
    if shape is None:
        return dt, None
    dims = (shape,) if whole_number(shape) is not None else shape
    try:
        dims = tuple(whole_number(d) for d in dims)
    except TypeError:
        dims = (None,)
    if None in dims:
        raise ArgumentTypeError(f"download of {_name(view)}: shape must be an int or a tuple of ints, "
                                f"not {shape!r}")
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise BufferRangeError(f"download of {_name(view)}: shape {dims} has a negative size "
                               f"(one -1, for 'the rest', is allowed)")
    items, known = view.size // dt.itemsize, math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or items % known:
            raise BufferRangeError(f"download of {view.size} bytes from {_name(view)}: shape {dims} "
                                   f"of {dt} needs a multiple of {known * dt.itemsize} bytes")
    elif known != items:
        raise BufferRangeError(f"download of {view.size} bytes from {_name(view)}: shape {dims} of "
                               f"{dt} is {known * dt.itemsize} bytes; pass a shape of {items} items, "
                               f"or download a view of {known * dt.itemsize} bytes")
    return dt, dims


def as_array(raw: bytes, dtype: np.dtype, shape: Optional[tuple[int, ...]]) -> np.ndarray:
    """A download's bytes as a new array (checked by ``download_layout``); a dtype of the other byte
    order gives the device's little-endian values in that order, as ``upload`` takes them."""
    out = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)      # a copy, in the order asked
    return out.reshape(shape) if shape is not None else out


# -- uploads ---------------------------------------------------------------------


def upload(sub: Submission, view: BufferView, data: memoryview, mode: UploadMode,
           crossover: Callable[[], float]) -> None:
    """Copy ``data`` into ``view``: staged into the open batch, on the transfer queue
    when that pays (``crossover()``: the bytes above which it does), or, ``blocking``,
    submitted and waited for at once."""
    n = data.nbytes
    if (sub.ctx.transfer_queue is not None and mode == "staged" and n >= TRANSFER_CANDIDATE_MIN
            and use_transfer_queue(n, crossover(), True, sub.buffer_idle(view.buffer))):
        _upload_on_transfer_queue(sub, view, data)
        return
    slot = sub.batch()
    chunk, off = slot.stage(n)
    chunk.write(off, data)
    staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
    rec = slot.recorder
    rec.copy(Access(Stage.TRANSFER, reads=(staged,), writes=(Range(view.buffer.uid, view.offset, n),)),
             chunk.handle, view.buffer.handle, off, view.offset, n)
    rec.touch(view.buffer)
    if mode == "blocking":
        sub.stats["blocking_uploads"] += 1
        sub.flush()
        sub.wait_for(slot)
    else:
        sub.stats["staged_uploads"] += 1


def _upload_on_transfer_queue(sub: Submission, view: BufferView, data: memoryview) -> None:
    """Copy on the transfer queue now; the open batch waits on its semaphore when it
    is submitted. The semaphore wait orders the copy before every later command, so
    its write is not left pending in the tracker."""
    n = data.nbytes
    slot = sub.batch()
    if slot.transfer is None:
        slot.transfer = TransferLane(sub.ctx.handle, sub.ctx.transfer_lane_family)
    chunk, off = slot.stage(n)
    chunk.write(off, data)
    cb, sem = slot.transfer.next()
    Recorder(cb, None, sub.stats, None).copy(None, chunk.handle, view.buffer.handle, off, view.offset, n)
    sub.submit_transfer(slot, cb, sem)
    slot.recorder.touch(view.buffer)
    sub.stats["staged_uploads"] += 1
    sub.stats["transfer_queue_copies"] += 1


def use_transfer_queue(nbytes: int, crossover: float, has_transfer_queue: bool,
                       buffer_idle: bool) -> bool:
    """Whether a host-to-device copy goes to the transfer queue.

    Only when it pays: the copy must be larger than the crossover (the bytes
    the compute stream moves in the time a submit and a semaphore cost), and
    the destination idle, because the transfer queue is ordered with nothing
    recorded on the compute queue except through the semaphore."""
    return has_transfer_queue and buffer_idle and nbytes > crossover


def crossover_bytes(overhead_s: float, h2d_bytes_per_s: float) -> float:
    """(submit + semaphore overhead) x host-to-device bandwidth."""
    return overhead_s * h2d_bytes_per_s


# -- device-side copies -------------------------------------------------------------


def copy(src: BufferView, dst: BufferView, recorder: Callable[[], Recorder]) -> None:
    """Copy all of ``src`` to the start of ``dst``, through the recorder ``recorder()``
    gives once the arguments are checked (the open batch's, or a capture's)."""
    if src.size > dst.size:
        raise BufferRangeError(f"copy of {src.size} bytes from {src.buffer.name} into a "
                               f"{dst.size}-byte view of {dst.buffer.name}")
    target = Range(dst.buffer.uid, dst.offset, src.size)
    if src.range.overlaps(target):
        raise BufferRangeError(f"copy within {src.buffer.name}: source [{src.offset}, "
                               f"{src.offset + src.size}) overlaps destination "
                               f"[{dst.offset}, {dst.offset + src.size})")
    rec = recorder()
    rec.copy(Access(Stage.TRANSFER, reads=(src.range,), writes=(target,)),
             src.buffer.handle, dst.buffer.handle, src.offset, dst.offset, src.size)
    rec.touch(src.buffer, dst.buffer)


# -- downloads ----------------------------------------------------------------------


def download(sub: Submission, view: BufferView) -> bytes:
    """The bytes of ``view``, waiting only for what it must.

    When the open batch has not touched the buffer, the copy goes out in its own
    small batch on another slot and the open batch stays open (``drains`` counts
    downloads that had to submit the open batch)."""
    open_slot = sub.open
    recording = open_slot.state is SlotState.RECORDING
    if (recording and view.buffer.last_batch == open_slot.serial) or len(sub.slots) == 1:
        return _download_in_batch(sub, view, drain=recording and open_slot.recorder.commands > 0)
    return _download_on_side(sub, view)


def _download_in_batch(sub: Submission, view: BufferView, drain: bool) -> bytes:
    slot = sub.batch()
    n = view.size
    chunk, off = slot.stage(n)
    staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
    rec = slot.recorder
    rec.copy(Access(Stage.TRANSFER, reads=(view.range,), writes=(staged,)),
             view.buffer.handle, chunk.handle, view.offset, off, n)
    rec.track(Access(Stage.HOST, reads=(staged,)))
    rec.touch(view.buffer)
    if drain:
        sub.stats["drains"] += 1
    sub.flush()
    sub.wait_for(slot)
    return chunk.read(off, n)


def _download_on_side(sub: Submission, view: BufferView) -> bytes:
    """Copy out through the next slot, leaving the open batch (which never touched
    the buffer) open. The copy runs before the open batch on the queue, so it gets
    barriers of its own instead of the tracker's: the tracker's pending sets
    describe the open batch too, and a barrier recorded here would not order it."""
    side = sub.side_batch()
    n = view.size
    chunk, off = side.stage(n)
    rec = side.recorder
    rec.barrier(_BEFORE_SIDE_COPY)
    rec.copy(None, view.buffer.handle, chunk.handle, view.offset, off, n)
    rec.barrier(_AFTER_SIDE_COPY)
    # Later writes of this range must wait for the copy's read.
    sub.tracker.add_pending(Access(Stage.TRANSFER, reads=(view.range,)))
    sub.submit_side(side)
    sub.wait_for(side)
    return chunk.read(off, n)


# -- the crossover --------------------------------------------------------------------


def crossover(sub: Submission) -> dict:
    """When an upload pays for the transfer queue: ``{"crossover_bytes": ..., "source": ...}``,
    from ``GENSPIRV_COMPUTE_STREAM_COPY_MAX`` or measured (``measure_crossover``)."""
    fixed = settings.get("GENSPIRV_COMPUTE_STREAM_COPY_MAX")
    if fixed is not None:
        info = {"crossover_bytes": float(fixed), "source": "GENSPIRV_COMPUTE_STREAM_COPY_MAX"}
    else:
        info = measure_crossover(sub)
    log.info("%s: uploads above %d bytes go to the transfer queue (%s)",
             sub.ctx.properties["name"], info["crossover_bytes"], info)
    return info


def measure_crossover(sub: Submission) -> dict:
    """Submit + semaphore overhead on the host clock, H2D bandwidth with GPU timestamps
    around a staged copy in the compute stream. Uses its own command pool, fence and
    memory; nothing open is submitted and no counter moves."""
    ctx = sub.ctx
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
        probe = Recorder(cb, None, sub.stats, None)
        q = sub.timer_queries()
        seconds = []
        for _ in range(3):
            call(vk.vkResetCommandPool, dev, pool, 0)
            call(vk.vkBeginCommandBuffer, cb, vk.VkCommandBufferBeginInfo())
            probe.timestamp(sub.query_pool, q, reset=True)
            probe.copy(None, chunk.handle, target.handle, 0, 0, CROSSOVER_PROBE_BYTES)
            probe.timestamp(sub.query_pool, q + 1)
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
