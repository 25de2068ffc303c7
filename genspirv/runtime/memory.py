"""Memory: device-local buffers, views of them, and host-visible staging chunks.

Takes a device handle and its memory properties; gives ``Buffer`` (one
VkBuffer bound to its own allocation, device-local when the device has such
memory), ``BufferView`` (a byte range of a buffer: what dispatches, copies and
transfers take) and ``StagingChunk`` (host-visible coherent memory, mapped
once for its whole life).

Each buffer and chunk has a ``uid`` the hazard tracker uses as its memory key:
two views overlap only if they share a buffer and their ranges intersect.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

import itertools
from dataclasses import dataclass
from typing import Optional

from ..errors import AllocationError, ArgumentTypeError, BufferRangeError
from ._vk import call, ffi, vk
from .args import describe_value, whole_number
from .hazards import Range
from .sharing import check_owner

_uids = itertools.count(1)

BUFFER_USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
STAGING_USAGE = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


def pick_memory_type(mem_props, type_bits: int, want: int, prefer: int = 0) -> Optional[int]:
    """Index of a memory type allowed by ``type_bits`` having all ``want`` flags
    (and, if any has them, all ``prefer`` flags too); None if none fits."""
    fallback = None
    for i in range(mem_props.memoryTypeCount):
        if not type_bits & (1 << i):
            continue
        flags = mem_props.memoryTypes[i].propertyFlags
        if flags & want != want:
            continue
        if flags & prefer == prefer:
            return i
        if fallback is None:
            fallback = i
    return fallback


def heap_size(mem_props, type_index: int) -> int:
    return mem_props.memoryHeaps[mem_props.memoryTypes[type_index].heapIndex].size


def _allocate(device, mem_props, nbytes: int, usage: int, want: int, prefer: int, what: str,
              max_allocation: int, families: tuple[int, ...] = ()):
    largest_heap = max(mem_props.memoryHeaps[i].size for i in range(mem_props.memoryHeapCount))
    limit = min(largest_heap, max_allocation)
    if nbytes > limit:
        raise AllocationError(f"{what}: {nbytes} bytes asked, the device allows at most "
                              f"{limit} bytes in one allocation")
    if len(families) > 1:
        # Used by the compute and the transfer queue: concurrent sharing spares the
        # queue-family ownership transfers.
        family_list = list(families)
        info = vk.VkBufferCreateInfo(size=nbytes, usage=usage, sharingMode=vk.VK_SHARING_MODE_CONCURRENT,
                                     queueFamilyIndexCount=len(family_list),
                                     pQueueFamilyIndices=family_list)
    else:
        info = vk.VkBufferCreateInfo(size=nbytes, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
    buffer = call(vk.vkCreateBuffer, device, info, None)
    try:
        req = vk.vkGetBufferMemoryRequirements(device, buffer)
        index = pick_memory_type(mem_props, req.memoryTypeBits, want, prefer)
        if index is None:
            raise AllocationError(f"{what}: no memory type with the needed properties")
        limit = min(heap_size(mem_props, index), max_allocation)
        if req.size > limit:
            raise AllocationError(f"{what}: {nbytes} bytes asked, the device allows at most "
                                  f"{limit} bytes in one allocation")
        alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
        try:
            memory = call(vk.vkAllocateMemory, device, alloc, None)
        except AllocationError as exc:
            raise AllocationError(f"{what}: {nbytes} bytes could not be allocated ({exc})") from None
    except BaseException:
        vk.vkDestroyBuffer(device, buffer, None)
        raise
    call(vk.vkBindBufferMemory, device, buffer, memory, 0)
    return buffer, memory, index


class Buffer:
    """A device-local storage buffer of ``nbytes`` bytes."""

    def __init__(self, device, mem_props, nbytes: int, max_allocation: int, name: str = "",
                 families: tuple[int, ...] = (), owner=None):
        size = whole_number(nbytes)
        if size is None:
            raise ArgumentTypeError(f"buffer size must be a positive integer, not {describe_value(nbytes)}")
        if size <= 0:
            raise BufferRangeError(f"buffer size must be a positive integer, not {size}")
        nbytes = size
        self.uid = next(_uids)
        self.nbytes = nbytes
        self.name = str(name) if name else f"buffer#{self.uid}"
        self._device = device
        self.device = owner      # the genspirv Device it belongs to (device is the VkDevice)
        self.handle, self.memory, self.memory_type = _allocate(
            device, mem_props, nbytes, BUFFER_USAGE, 0, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
            self.name, max_allocation, families)
        # Serial of the last batch that recorded an access to this buffer (0: none).
        self.last_batch = 0

    @property
    def buffer(self) -> "Buffer":
        return self

    @property
    def offset(self) -> int:
        return 0

    @property
    def size(self) -> int:
        return self.nbytes

    @property
    def range(self) -> Range:
        return Range(self.uid, 0, self.nbytes)

    def view(self, offset: int, size: int) -> "BufferView":
        return BufferView(self, offset, size)

    def destroy(self) -> None:
        # A device's buffer goes through the device, which first waits for any
        # recorded or submitted work that uses it (destroying it under the GPU's
        # feet is VUID-vkDestroyBuffer-buffer-00922); the device calls back here.
        release, self._release = getattr(self, "_release", None), None
        if release is not None:
            release(self)
            return
        if self.handle is not None:
            vk.vkDestroyBuffer(self._device, self.handle, None)
            vk.vkFreeMemory(self._device, self.memory, None)
            self.handle = self.memory = None

    def __repr__(self) -> str:
        return f"<Buffer {self.name} {self.nbytes} bytes>"


@dataclass(frozen=True)
class BufferView:
    """Bytes ``[offset, offset + size)`` of one buffer."""

    buffer: Buffer
    offset: int
    size: int

    def __post_init__(self):
        if not isinstance(self.buffer, Buffer):
            raise ArgumentTypeError(f"a view needs a Buffer from dev.buffer(...), not "
                                    f"{describe_value(self.buffer)}")
        for what, v in (("offset", self.offset), ("size", self.size)):
            if v.__class__ is not int:          # a numpy integer becomes an int; else refused
                n = whole_number(v)
                if n is None:
                    raise ArgumentTypeError(f"{self.buffer.name}: view {what} must be a non-negative "
                                            f"integer, not {describe_value(v)}")
                object.__setattr__(self, what, n)
                v = n
            if v < 0:
                raise BufferRangeError(f"{self.buffer.name}: view {what} must be a non-negative "
                                       f"integer, not {v}")
        if self.size == 0:
            raise BufferRangeError(f"{self.buffer.name}: a view of 0 bytes at offset {self.offset}")
        if self.offset + self.size > self.buffer.nbytes:
            raise BufferRangeError(
                f"{self.buffer.name}: view [{self.offset}, {self.offset + self.size}) is outside "
                f"the buffer of {self.buffer.nbytes} bytes")
        # A view is part of the key of every dispatch plan lookup: its hash is worked
        # out once (the generated one builds a tuple at each lookup).
        object.__setattr__(self, "_hash", hash((self.buffer, self.offset, self.size)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def range(self) -> Range:
        # Made once: every dispatch plan made over this view asks for it.
        r = self.__dict__.get("_range")
        if r is None:
            r = Range(self.buffer.uid, self.offset, self.size)
            object.__setattr__(self, "_range", r)
        return r

    @property
    def device(self):
        """The genspirv Device its buffer belongs to."""
        return self.buffer.device

    def view(self, offset: int, size: int) -> "BufferView":
        """A view of this view (offset relative to it)."""
        start, n = whole_number(offset), whole_number(size)
        if start is None or n is None:
            raise ArgumentTypeError(f"{self.buffer.name}: sub-view offset and size must be integers, "
                                    f"not {describe_value(offset)} and {describe_value(size)}")
        if start < 0:
            raise BufferRangeError(f"{self.buffer.name}: sub-view offset must be a non-negative "
                                   f"integer, not {start}")
        if start + n > self.size:
            raise BufferRangeError(f"{self.buffer.name}: sub-view [{start}, {start + n}) "
                                   f"is outside the view of {self.size} bytes")
        return BufferView(self.buffer, self.offset + start, n)


def view_arg(obj, device, what: str) -> BufferView:
    """``obj`` as a view, refused unless it is a live Buffer or BufferView of ``device``.

    ``what`` names the argument (``upload destination``, ``kernel k, binding 2 (C)``)."""
    if not isinstance(obj, (Buffer, BufferView)):
        hint = (" (upload the array into one with dev.upload first)"
                if getattr(obj, "shape", None) is not None else "")
        raise ArgumentTypeError(f"{what}: {describe_value(obj)} is not a buffer; pass a Buffer from "
                                f"dev.buffer(...) or a view of one{hint}")
    check_owner(obj, device, what)
    return as_view(obj, what)


def as_view(obj, what: str) -> BufferView:
    if isinstance(obj, BufferView):
        if obj.buffer.handle is None:
            raise BufferRangeError(f"{what}: {obj.buffer.name} was destroyed")
        return obj
    if isinstance(obj, Buffer):
        if obj.handle is None:
            raise BufferRangeError(f"{what}: {obj.name} was destroyed")
        whole = obj.__dict__.get("_whole")
        if whole is None:
            whole = obj._whole = BufferView(obj, 0, obj.nbytes)
        return whole
    raise ArgumentTypeError(f"{what}: expected a Buffer or BufferView, got {describe_value(obj)}")


class StagingChunk:
    """Host-visible coherent memory, mapped once; bump-allocated by its owner."""

    def __init__(self, device, mem_props, nbytes: int, max_allocation: int,
                 families: tuple[int, ...] = ()):
        self.uid = next(_uids)
        self.nbytes = nbytes
        self._device = device
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        # Cached memory makes the host reads of downloads fast where it exists.
        self.handle, self.memory, _ = _allocate(device, mem_props, nbytes, STAGING_USAGE, want,
                                                vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                                f"staging chunk of {nbytes} bytes", max_allocation,
                                                families)
        self.mapping = call(vk.vkMapMemory, device, self.memory, 0, nbytes, 0)
        self.address = ffi.from_buffer(self.mapping)

    def write(self, offset: int, data) -> None:
        ffi.memmove(self.address + offset, data, len(data))

    def read(self, offset: int, nbytes: int) -> bytes:
        return bytes(self.mapping[offset:offset + nbytes])

    def destroy(self) -> None:
        if self.handle is not None:
            vk.vkUnmapMemory(self._device, self.memory)
            vk.vkDestroyBuffer(self._device, self.handle, None)
            vk.vkFreeMemory(self._device, self.memory, None)
            self.handle = self.memory = self.mapping = self.address = None
