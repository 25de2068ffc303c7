"""In-flight slots: what one batch of work owns until its fence signals.

Takes the device handle, the compute queue family and the memory settings;
gives ``Slot`` (submission.py keeps a ring of them). Each slot owns what one
batch of recorded work references until its fence signals: a command pool and
command buffer with its ``Recorder``, a fence, descriptor pools, staging
memory, and the command buffers of its copies on the transfer queue
(``TransferLane``). A batch is recorded into one slot and submitted with that
slot's fence; the slot is reused ("retired") only after the fence has
signalled. ``SlotState`` names where a slot is in that cycle.

``InFlightGuard`` keeps that promise checkable: every staging range written
and every descriptor pool reset is registered against its slot, and touching
one that another unretired slot still references raises ``InFlightError``.
A slot layout where two slots shared one staging chunk or descriptor pool is
caught here at once, not by a rare wrong value on a fast GPU.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from enum import Enum
from typing import Optional

from ..errors import InFlightError
from . import _vk
from ._vk import NO_TIMEOUT, call, descriptor_set_allocator, fence_signalled, vk
from .memory import StagingChunk
from .recorder import Decide, Recorder

STAGING_CHUNK = 4 << 20
DESCRIPTOR_SETS_PER_POOL = 256
# A slot keeps its descriptor sets from batch to batch (a decode step binds the
# same buffers every token) until it holds this many; then it resets its pools
# when it next retires.
CACHED_DESCRIPTOR_SETS = 4096
STAGING_ALIGN = 256     # covers optimalBufferCopyOffsetAlignment on common devices


class InFlightGuard:
    """Which slot references which staging bytes and descriptor pools, until retired."""

    def __init__(self) -> None:
        self._staging: dict[int, list[tuple[int, int, int]]] = {}   # chunk uid -> (lo, hi, slot)
        self._pools: dict[int, set[int]] = {}                       # pool id -> slots

    def use_staging(self, chunk_uid: int, lo: int, hi: int, slot: int) -> None:
        for a, b, other in self._staging.get(chunk_uid, ()):
            if other != slot and a < hi and lo < b:
                raise InFlightError(f"staging bytes [{lo}, {hi}) of chunk {chunk_uid} are still "
                                    f"referenced by in-flight slot {other}")
        self._staging.setdefault(chunk_uid, []).append((lo, hi, slot))

    def use_pool(self, pool_id: int, slot: int) -> None:
        self._pools.setdefault(pool_id, set()).add(slot)

    def reset_pool(self, pool_id: int, slot: int) -> None:
        others = self._pools.get(pool_id, set()) - {slot}
        if others:
            raise InFlightError(f"descriptor pool {pool_id} reset by slot {slot} while slot(s) "
                                f"{sorted(others)} still use it")

    def retire(self, slot: int) -> None:
        for uid in list(self._staging):
            kept = [e for e in self._staging[uid] if e[2] != slot]
            if kept:
                self._staging[uid] = kept
            else:
                del self._staging[uid]
        for users in self._pools.values():
            users.discard(slot)


class StagingArena:
    """A slot's staging memory: chunks bump-allocated, all freed at once on retire."""

    def __init__(self, device, mem_props, max_allocation: int, families: tuple[int, ...] = ()):
        self._device = device
        self._mem_props = mem_props
        self._max_allocation = max_allocation
        self._families = families
        self.chunks: list[StagingChunk] = []
        self._current = 0
        self._offset = 0
        # Bumped on every reset: the hazard tracker keys staging by (chunk, generation),
        # since the fence wait that preceded the reset orders the old uses before the new.
        self.generation = 0

    def alloc(self, nbytes: int) -> tuple[StagingChunk, int]:
        while self._current < len(self.chunks):
            chunk = self.chunks[self._current]
            if self._offset + nbytes <= chunk.nbytes:
                offset = self._offset
                self._offset = -(-(offset + nbytes) // STAGING_ALIGN) * STAGING_ALIGN
                return chunk, offset
            self._current += 1
            self._offset = 0
        chunk = StagingChunk(self._device, self._mem_props, max(STAGING_CHUNK, nbytes),
                             self._max_allocation, self._families)
        self.chunks.append(chunk)
        self._current = len(self.chunks) - 1
        self._offset = -(-nbytes // STAGING_ALIGN) * STAGING_ALIGN
        return chunk, 0

    def reset(self) -> None:
        self._current = 0
        self._offset = 0
        self.generation += 1

    def destroy(self) -> None:
        for c in self.chunks:
            c.destroy()
        self.chunks.clear()


class DescriptorPools:
    """Descriptor pools of one owner (a slot or a replay graph); grown on demand."""

    def __init__(self, device):
        self._device = device
        self.pools: list = []
        self._current = 0
        self.allocated = 0          # sets allocated since the last reset
        # Sets already written, by (kernel, bound ranges): a dispatch that binds the
        # same buffers again reuses them instead of writing new ones. A set is
        # written once, right after its allocation, and never rewritten.
        self.cache: dict = {}
        self._allocators: dict = {}      # set layout -> its allocate(pool)

    def _new_pool(self):
        sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                         descriptorCount=DESCRIPTOR_SETS_PER_POOL * 8),
                 vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                                         descriptorCount=DESCRIPTOR_SETS_PER_POOL * 2)]
        info = vk.VkDescriptorPoolCreateInfo(maxSets=DESCRIPTOR_SETS_PER_POOL, poolSizeCount=len(sizes),
                                             pPoolSizes=sizes)
        return call(vk.vkCreateDescriptorPool, self._device, info, None)

    def sets_for(self, kernel, plan, on_new_pool=None):
        """Descriptor sets for a dispatch of ``kernel`` with ``plan`` (a cdata array), and
        whether they were written now (False: cached).

        A set is written once, when it is allocated, and then only bound: this owner
        keeps it, keyed by kernel and bound ranges, until it resets its pools, which a
        slot does only after its fence. ``on_new_pool(pool_id)`` hears of the pool
        each new set came from (the in-flight guard's bookkeeping)."""
        sets = self.cache.get(plan.descriptor_key)
        if sets is not None:
            return sets, False
        sets = _vk.ffi.new("VkDescriptorSet[]", len(kernel.set_layouts))
        for i, layout in enumerate(kernel.set_layouts):
            sets[i] = self.allocate(layout)
            # The pool it came from (sets cached from earlier pools are only bound).
            if on_new_pool is not None:
                on_new_pool(id(self.pools[self._current]))
        _vk.write_buffer_descriptors(self._device, sets, kernel.bindings, kernel.descriptor_types, plan.views)
        self.cache[plan.descriptor_key] = sets
        return sets, True

    def allocate(self, layout):
        while True:
            if self._current == len(self.pools):
                self.pools.append(self._new_pool())
            allocate = self._allocators.get(layout)
            if allocate is None:
                allocate = self._allocators[layout] = descriptor_set_allocator(self._device, layout)
            ds = allocate(self.pools[self._current])
            if ds is not None:
                self.allocated += 1
                return ds
            self._current += 1

    @property
    def used_ids(self) -> list[int]:
        return [id(p) for p in self.pools[:self._current + 1]]

    def reset(self) -> None:
        for p in self.pools[:self._current + 1]:
            call(vk.vkResetDescriptorPool, self._device, p, 0)
        self._current = 0
        self.allocated = 0
        self.cache.clear()

    def destroy(self) -> None:
        for p in self.pools:
            vk.vkDestroyDescriptorPool(self._device, p, None)
        self.pools.clear()


class TransferLane:
    """A slot's work on the transfer queue: command buffers and the binary semaphores
    the slot's compute submission waits on. Reset with the slot, after its fence."""

    def __init__(self, device, family: int):
        self._device = device
        info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=family,
                                          flags=vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT)
        self.pool = call(vk.vkCreateCommandPool, device, info, None)
        self.command_buffers: list = []
        self.semaphores: list = []
        self.used = 0
        self.waits: list = []          # semaphores signalled since the slot's last submit

    def next(self):
        """A begun command buffer and the semaphore its submission will signal."""
        if self.used == len(self.command_buffers):
            alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.pool,
                                                   level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                   commandBufferCount=1)
            self.command_buffers.append(call(vk.vkAllocateCommandBuffers, self._device, alloc)[0])
            self.semaphores.append(call(vk.vkCreateSemaphore, self._device,
                                        vk.VkSemaphoreCreateInfo(), None))
        cb, sem = self.command_buffers[self.used], self.semaphores[self.used]
        self.used += 1
        info = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        call(vk.vkBeginCommandBuffer, cb, info)
        return cb, sem

    def reset(self) -> None:
        if self.used:
            call(vk.vkResetCommandPool, self._device, self.pool, 0)
        self.used = 0
        self.waits.clear()

    def destroy(self) -> None:
        for sem in self.semaphores:
            vk.vkDestroySemaphore(self._device, sem, None)
        vk.vkDestroyCommandPool(self._device, self.pool, None)


class SlotState(Enum):
    """Where a slot is in its cycle: idle -> recording -> submitted -> idle (retired)."""

    IDLE = "idle"
    RECORDING = "recording"
    SUBMITTED = "submitted"


class Slot:
    """One in-flight batch's resources, and the recorder its commands go through."""

    def __init__(self, index: int, device, family: int, mem_props, max_allocation: int,
                 families: tuple[int, ...] = (), query_pool=None, *, guard: InFlightGuard,
                 decide: Decide, stats: dict, profile):
        self.index = index
        self._device = device
        self._guard = guard
        pool_info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=family,
                                               flags=vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT)
        self.command_pool = call(vk.vkCreateCommandPool, device, pool_info, None)
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.command_pool,
                                               level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=1)
        self.command_buffer = call(vk.vkAllocateCommandBuffers, device, alloc)[0]
        self.fence = call(vk.vkCreateFence, device, vk.VkFenceCreateInfo(), None)
        self._fences = _vk.fence_array(self.fence)
        self.descriptors = DescriptorPools(device)
        self.staging = StagingArena(device, mem_props, max_allocation, families)
        # Each new descriptor set's pool is registered against this slot until it retires.
        self.recorder = Recorder(self.command_buffer, decide, stats, profile, self.descriptors,
                                 on_new_pool=lambda pool_id: guard.use_pool(pool_id, index))
        self.state = SlotState.IDLE
        self.seq = 0               # its submission number (queue order)
        self.keep_alive: list = []     # objects the batch references (e.g. a replay graph)
        self.transfer: Optional[TransferLane] = None   # created on first use
        # Two timestamps of the device's query pool: the batch's start and end on the GPU.
        self.query_pool = query_pool
        self.query_base = 2 * index

    @property
    def serial(self) -> int:
        """The serial of the batch recorded into this slot (recording order)."""
        return self.recorder.serial

    def begin(self, serial: int) -> None:
        _vk.reset_and_begin(self._device, self.command_pool, self.command_buffer,
                            self.query_pool, self.query_base)
        self.state = SlotState.RECORDING
        self.recorder.reset(serial)

    def stage(self, nbytes: int) -> tuple[StagingChunk, int]:
        """``nbytes`` of this batch's staging memory: (chunk, offset), registered with
        the in-flight guard until the slot retires."""
        chunk, offset = self.staging.alloc(nbytes)
        self._guard.use_staging(chunk.uid, offset, offset + nbytes, self.index)
        return chunk, offset

    def end(self) -> None:
        """Close the command buffer (with the batch's end timestamp)."""
        _vk.end(self.command_buffer, self.query_pool, self.query_base + 1)

    def wait(self, timeout_ns: int = NO_TIMEOUT) -> None:
        _vk.wait_fence(self._device, self._fences, timeout_ns)

    def signalled(self) -> bool:
        return fence_signalled(self._device, self.fence)

    def retire(self) -> None:
        """After the fence signalled: free everything for the next batch."""
        _vk.reset_fence(self._device, self._fences)
        guard = self._guard
        guard.retire(self.index)
        if self.descriptors.allocated >= CACHED_DESCRIPTOR_SETS:
            for pid in self.descriptors.used_ids:
                guard.reset_pool(pid, self.index)
            self.descriptors.reset()
        self.staging.reset()
        self.keep_alive.clear()
        if self.transfer is not None:
            self.transfer.reset()
        self.state = SlotState.IDLE

    def destroy(self) -> None:
        if self.transfer is not None:
            self.transfer.destroy()
        self.descriptors.destroy()
        self.staging.destroy()
        vk.vkDestroyFence(self._device, self.fence, None)
        vk.vkDestroyCommandPool(self._device, self.command_pool, None)
