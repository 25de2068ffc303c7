"""The thin layer over the PyPI ``vulkan`` binding.

Takes raw binding calls and gives: ``call(fn, *args)`` turning every VkResult
failure into a ``VulkanError`` that names the call, the mapping from a
hazard tracker ``Barrier`` to Vulkan stage/access bits, and the few constants
the binding gets wrong. Everything else in the runtime imports Vulkan only
through here.

Binding pitfalls (DESIGN.md): nested structs and arrays passed inline are
freed before the call reads them, so callers keep them in locals until the
call returns; ``VK_WHOLE_SIZE`` overflows, so ``WHOLE_SIZE`` is spelled out.
"""

from __future__ import annotations

import vulkan as vk

from ..errors import AllocationError, VulkanError
from .hazards import Barrier

ffi = vk.ffi
WHOLE_SIZE = 0xFFFFFFFFFFFFFFFF
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
    try:
        vk.vkGetFenceStatus(device, fence)
        return True
    except vk.VkNotReady:
        return False
    except vk.VkError as exc:
        raise VulkanError(f"vkGetFenceStatus failed: {type(exc).__name__}") from None


_STAGE_BITS = {
    "compute": vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
    "transfer": vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
    "host": vk.VK_PIPELINE_STAGE_HOST_BIT,
}
_READ_BITS = {
    "compute": vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_UNIFORM_READ_BIT,
    "transfer": vk.VK_ACCESS_TRANSFER_READ_BIT,
    "host": vk.VK_ACCESS_HOST_READ_BIT,
}
_WRITE_BITS = {
    "compute": vk.VK_ACCESS_SHADER_WRITE_BIT,
    "transfer": vk.VK_ACCESS_TRANSFER_WRITE_BIT,
    "host": vk.VK_ACCESS_HOST_WRITE_BIT,
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


def cmd_barrier(cb, b: Barrier) -> None:
    src_stage, dst_stage, src_access, dst_access = barrier_masks(b)
    mb = vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)
    barriers = [mb]
    vk.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, barriers, 0, None, 0, None)
