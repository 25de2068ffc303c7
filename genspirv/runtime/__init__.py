"""genspirv.runtime: a small Vulkan compute runtime driven by the manifest.

``Device`` (device.py) is the entry point; kernels come from manifest entries
(kernel.py), buffers and staging from memory.py, barriers from the pure
``HazardTracker`` (hazards.py), submission through in-flight slots
(submit.py), capture and replay from replay.py, host timing from profile.py.
"""

from .device import COUNTERS, Device, GpuTimer, ValidationMessage, default_manifest_path
from .hazards import Access, Barrier, HazardTracker, Range
from .kernel import BoundKernel, pack_spec
from .memory import Buffer, BufferView

__all__ = ["Device", "Buffer", "BufferView", "BoundKernel", "GpuTimer", "ValidationMessage",
           "HazardTracker", "Access", "Barrier", "Range", "COUNTERS", "pack_spec",
           "default_manifest_path"]
