"""The thin layer over the PyPI ``vulkan`` binding.

Takes raw binding calls and gives: ``call(fn, *args)`` turning every VkResult
failure into a ``VulkanError`` that names the call, the mapping from a
hazard tracker ``Barrier`` to Vulkan stage/access bits, and the few constants
the binding gets wrong. Everything else in the runtime imports Vulkan only
through here.

Binding pitfalls (docs/RULES.md#vulkan-binding-pitfalls): nested structs and arrays passed inline are
freed before the call reads them, so callers keep them in locals until the
call returns. Other modules take the binding as ``from ._vk import vk``.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

import atexit

from ..errors import AllocationError, ExtraMissingError, VulkanError

try:
    import vulkan as vk
except ImportError:     # the base install: the binding is the runtime extra's
    raise ExtraMissingError.runtime(["vulkan"]) from None
from .hazards import Barrier, Stage

ffi = vk.ffi
NO_TIMEOUT = 0xFFFFFFFFFFFFFFFF

_OUT_OF_MEMORY = (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory)


def _register_promoted_error_codes() -> None:
    # The binding files the error codes promoted from extensions under their
    # positive value (VK_ERROR_OUT_OF_POOL_MEMORY as +1000069000), so a real
    # driver's -1000069000 raises a KeyError inside the binding instead of
    # VkErrorOutOfPoolMemory. Lavapipe never runs out of pool memory; NVIDIA does.
    for code, exc in list(vk.exception_codes.items()):
        if code is not None and code > 0 and issubclass(exc, vk.VkError):
            vk.exception_codes.setdefault(-code, exc)


_register_promoted_error_codes()


_driver_keeper = None


def keep_drivers_loaded() -> None:
    """Hold one bare instance for the life of the process.

    The loader loads the driver libraries at each vkCreateInstance and unloads
    them at the last vkDestroyInstance. NVIDIA's driver takes a static-TLS block
    each time it is loaded and never gives it back, so the 31st Device of a
    process failed with VK_ERROR_INCOMPATIBLE_DRIVER ("cannot allocate memory in
    static TLS block"). One instance that outlives the Devices keeps the
    libraries loaded; it has no layers and owns nothing.
    """
    global _driver_keeper
    if _driver_keeper is not None:
        return
    app = vk.VkApplicationInfo(pApplicationName="genspirv", apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
    info = vk.VkInstanceCreateInfo(pApplicationInfo=app)
    try:
        _driver_keeper = vk.vkCreateInstance(info, None)
    except vk.VkError:
        return      # no driver at all: the Device's own vkCreateInstance says so
    atexit.register(_release_driver_keeper)


def _release_driver_keeper() -> None:
    global _driver_keeper
    if _driver_keeper is not None:
        vk.vkDestroyInstance(_driver_keeper, None)
        _driver_keeper = None


def call(fn, *args):
    """Call a binding function; a failing VkResult becomes a VulkanError naming it."""
    try:
        return fn(*args)
    except _OUT_OF_MEMORY as exc:
        raise AllocationError(f"{fn.__name__} failed: {type(exc).__name__}") from None
    except vk.VkError as exc:
        raise VulkanError(f"{fn.__name__} failed: {type(exc).__name__}") from None
    except vk.VkException as exc:   # positive non-success codes (VkNotReady, VkTimeout, ...)
        raise VulkanError(f"{fn.__name__} returned {type(exc).__name__}") from None


def fence_signalled(device, fence) -> bool:
    result = _lib.vkGetFenceStatus(device, fence)
    if result == vk.VK_SUCCESS:
        return True
    if result == vk.VK_NOT_READY:
        return False
    _raise(result, "vkGetFenceStatus")


_STAGE_BITS = {
    Stage.COMPUTE: vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
    Stage.TRANSFER: vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
    Stage.HOST: vk.VK_PIPELINE_STAGE_HOST_BIT,
}
_READ_BITS = {
    Stage.COMPUTE: vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_UNIFORM_READ_BIT,
    Stage.TRANSFER: vk.VK_ACCESS_TRANSFER_READ_BIT,
    Stage.HOST: vk.VK_ACCESS_HOST_READ_BIT,
}
_WRITE_BITS = {
    Stage.COMPUTE: vk.VK_ACCESS_SHADER_WRITE_BIT,
    Stage.TRANSFER: vk.VK_ACCESS_TRANSFER_WRITE_BIT,
    Stage.HOST: vk.VK_ACCESS_HOST_WRITE_BIT,
}


def _bits(table: dict, stages) -> int:
    out = 0
    for s in stages:
        out |= table[s]
    return out


def barrier_masks(b: Barrier) -> tuple[int, int, int, int]:
    """(srcStageMask, dstStageMask, srcAccessMask, dstAccessMask) for one global barrier."""
    return (_bits(_STAGE_BITS, b.src_stages), _bits(_STAGE_BITS, b.dst_stages),
            _bits(_WRITE_BITS, b.src_writes),
            _bits(_READ_BITS, b.dst_reads) | _bits(_WRITE_BITS, b.dst_writes))


# -- the hot path: raw cffi calls ------------------------------------------------
#
# The binding's wrappers build every struct through a generic converter, which
# costs tens of microseconds per call; dispatch and copy recording go straight
# to the loader's entry points with structs made here.

_lib = __import__("vulkan._vulkan", fromlist=["lib"]).lib
_NULL = ffi.NULL
_COMPUTE = vk.VK_PIPELINE_BIND_POINT_COMPUTE
_COMPUTE_STAGE = vk.VK_SHADER_STAGE_COMPUTE_BIT
# The binding spells VK_ERROR_OUT_OF_POOL_MEMORY with the wrong sign (+1000069000): the
# value a driver returns is negative.
_POOL_FULL = (-abs(vk.VK_ERROR_OUT_OF_POOL_MEMORY), -abs(vk.VK_ERROR_FRAGMENTED_POOL))


def _check(result: int, name: str) -> None:
    if result != vk.VK_SUCCESS:
        _raise(result, name)


def _raise(result: int, name: str) -> None:
    """The error ``call`` raises for the same VkResult, with the same message."""
    exc = vk.exception_codes.get(result)
    what = exc.__name__ if exc is not None else f"VkResult {result}"
    if result in (vk.VK_ERROR_OUT_OF_DEVICE_MEMORY, vk.VK_ERROR_OUT_OF_HOST_MEMORY):
        raise AllocationError(f"{name} failed: {what}")
    if result > 0:
        raise VulkanError(f"{name} returned {what}")
    raise VulkanError(f"{name} failed: {what}")


# Recording copies the barrier struct, so one struct per distinct Barrier serves
# every command buffer; the runtime meets a handful of distinct ones (the tracker
# hands out one object per distinct barrier). Keyed by identity, which costs no
# hash of six frozensets; the entry holds the Barrier, so its id is never reused.
_BARRIER_STRUCTS: dict[int, tuple] = {}
_cmd_pipeline_barrier = _lib.vkCmdPipelineBarrier
# For the recorder, which records a barrier with the loader's entry point itself:
# ``made = BARRIER_STRUCTS.get(id(b)) or barrier_struct(b)``, then
# ``cmd_pipeline_barrier(cb, made[0], made[1], 0, 1, made[2], 0, NULL, 0, NULL)``.
BARRIER_STRUCTS = _BARRIER_STRUCTS
cmd_pipeline_barrier = _cmd_pipeline_barrier


def barrier_struct(b: Barrier) -> tuple:
    """(srcStageMask, dstStageMask, VkMemoryBarrier*, b) for ``b``, made once."""
    made = _BARRIER_STRUCTS.get(id(b))
    if made is None:
        src_stage, dst_stage, src_access, dst_access = barrier_masks(b)
        mb = ffi.new("VkMemoryBarrier*", {"sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                          "srcAccessMask": src_access, "dstAccessMask": dst_access})
        made = _BARRIER_STRUCTS[id(b)] = (src_stage, dst_stage, mb, b)
    return made


def cmd_copy(cb, src, dst, src_offset: int, dst_offset: int, size: int) -> None:
    region = ffi.new("VkBufferCopy*", {"srcOffset": src_offset, "dstOffset": dst_offset, "size": size})
    _lib.vkCmdCopyBuffer(cb, src, dst, 1, region)


# Recording a dispatch (Recorder.dispatch): the loader's entry points themselves,
# called with the pipeline, set array and push bytes the caller keeps: a Python
# function around the four calls cost as much as one of them.
cmd_bind_pipeline = _lib.vkCmdBindPipeline
cmd_bind_descriptor_sets = _lib.vkCmdBindDescriptorSets
cmd_push_constants = _lib.vkCmdPushConstants
cmd_dispatch = _lib.vkCmdDispatch
NULL = _NULL
BIND_POINT_COMPUTE = _COMPUTE
STAGE_COMPUTE = _COMPUTE_STAGE


# -- the per-batch calls: begin, end, submit, fences --------------------------------
#
# Each batch makes a dozen of these; through the binding's wrappers they cost
# more host time than recording the batch's dispatches (tens of microseconds
# each on a loaded 2-core machine, measured).

_BEGIN_ONE_TIME = ffi.new("VkCommandBufferBeginInfo*", {
    "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
    "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT})
_SUBMIT_INFO = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
_ALL_COMMANDS = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
_cmd_write_timestamp = _lib.vkCmdWriteTimestamp
_cmd_reset_query_pool = _lib.vkCmdResetQueryPool


def reset_and_begin(device, pool, cb, query_pool=None, first_query: int = 0) -> None:
    """Reset ``pool`` (so its one command buffer) and begin ``cb`` for one submission;
    with a query pool, reset two of its queries and write the first timestamp."""
    _check(_lib.vkResetCommandPool(device, pool, 0), "vkResetCommandPool")
    _check(_lib.vkBeginCommandBuffer(cb, _BEGIN_ONE_TIME), "vkBeginCommandBuffer")
    if query_pool is not None:
        _cmd_reset_query_pool(cb, query_pool, first_query, 2)
        _cmd_write_timestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query_pool, first_query)


def end(cb, query_pool=None, last_query: int = 0) -> None:
    """End ``cb`` (after writing timestamp ``last_query`` when given a query pool)."""
    if query_pool is not None:
        _cmd_write_timestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, last_query)
    _check(_lib.vkEndCommandBuffer(cb), "vkEndCommandBuffer")


def cmd_timestamp(cb, query_pool, query: int, reset: bool = False) -> None:
    """Write a timestamp into ``query`` when everything before it has finished
    (first resetting it and the query after it, when ``reset``)."""
    if reset:
        _cmd_reset_query_pool(cb, query_pool, query, 2)
    _cmd_write_timestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, query)


def queue_submit_new_info(queue, command_buffers, fence, wait=(), signal=()) -> None:
    """Submit one VkSubmitInfo made for this call (``queue_submit_info`` submits one made
    before): wait on binary semaphores ``wait`` before any command, run
    ``command_buffers``, signal ``signal`` and ``fence``."""
    # Every array stays in a local until vkQueueSubmit returns.
    cbs = ffi.new("VkCommandBuffer[]", list(command_buffers))
    fields = {"sType": _SUBMIT_INFO, "commandBufferCount": len(cbs), "pCommandBuffers": cbs}
    if wait:
        waits = ffi.new("VkSemaphore[]", list(wait))
        stages = ffi.new("VkPipelineStageFlags[]", [_ALL_COMMANDS] * len(waits))
        fields.update(waitSemaphoreCount=len(waits), pWaitSemaphores=waits, pWaitDstStageMask=stages)
    if signal:
        signals = ffi.new("VkSemaphore[]", list(signal))
        fields.update(signalSemaphoreCount=len(signals), pSignalSemaphores=signals)
    info = ffi.new("VkSubmitInfo*", fields)
    _check(_lib.vkQueueSubmit(queue, 1, info, _NULL if fence is None else fence), "vkQueueSubmit")


def submit_info(command_buffers):
    """A VkSubmitInfo running ``command_buffers`` (no semaphores), for ``queue_submit_info``:
    made once and submitted as often as wanted (the struct keeps its array alive)."""
    cbs = ffi.new("VkCommandBuffer[]", list(command_buffers))
    info = ffi.new("VkSubmitInfo*", {"sType": _SUBMIT_INFO, "commandBufferCount": len(cbs),
                                     "pCommandBuffers": cbs})
    return info, cbs


def queue_submit_info(queue, made, fence) -> None:
    """Submit a ``submit_info``."""
    _check(_lib.vkQueueSubmit(queue, 1, made[0], _NULL if fence is None else fence), "vkQueueSubmit")


def fence_array(fence):
    """A one-element VkFence array for wait_fence / reset_fence, made once per fence."""
    return ffi.new("VkFence[1]", [fence])


def wait_fence(device, fences, timeout_ns: int = NO_TIMEOUT) -> None:
    result = _lib.vkWaitForFences(device, 1, fences, vk.VK_TRUE, timeout_ns)
    if result != vk.VK_SUCCESS:
        _raise(result, "vkWaitForFences")


def reset_fence(device, fences) -> None:
    _check(_lib.vkResetFences(device, 1, fences), "vkResetFences")


def query_results(device, pool, first: int, count: int, data) -> bool:
    """64-bit results of ``count`` queries into ``data`` without waiting; False if
    any is not available yet."""
    result = _lib.vkGetQueryPoolResults(device, pool, first, count, 8 * count, data, 8,
                                        vk.VK_QUERY_RESULT_64_BIT)
    if result == vk.VK_NOT_READY:
        return False
    _check(result, "vkGetQueryPoolResults")
    return True


def descriptor_set_allocator(device, layout):
    """``allocate(pool)``: a set of ``layout`` from ``pool``, or None when the pool is
    full. Its structs are made once; one owner calls it at a time."""
    layouts = ffi.new("VkDescriptorSetLayout[1]", [layout])
    info = ffi.new("VkDescriptorSetAllocateInfo*", {
        "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        "descriptorSetCount": 1, "pSetLayouts": layouts})
    out = ffi.new("VkDescriptorSet[1]")

    def allocate(pool):
        info.descriptorPool = pool
        result = _lib.vkAllocateDescriptorSets(device, info, out)
        if result in _POOL_FULL:
            return None
        _check(result, "vkAllocateDescriptorSets")
        return out[0]

    allocate.keep = layouts     # pSetLayouts points into it
    return allocate


def write_buffer_descriptors(device, sets, bindings, types, views) -> None:
    """Point each binding of ``sets`` (indexed by set number) at its view."""
    n = len(views)
    infos = ffi.new("VkDescriptorBufferInfo[]", n)
    writes = ffi.new("VkWriteDescriptorSet[]", n)
    for i, (b, v) in enumerate(zip(bindings, views)):
        info = infos[i]
        info.buffer = v.buffer.handle
        info.offset = v.offset
        info.range = v.size
        w = writes[i]
        w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
        w.dstSet = sets[b.set]
        w.dstBinding = b.binding
        w.descriptorCount = 1
        w.descriptorType = types[i]
        w.pBufferInfo = infos + i
    _lib.vkUpdateDescriptorSets(device, n, writes, 0, _NULL)
