"""genspirv.runtime: a small Vulkan compute runtime driven by the manifest.

``Device`` (device.py) is the entry point; the Vulkan instance and device come
from context.py, kernels from manifest entries (kernel.py), buffers and
staging from memory.py, barriers from the pure ``HazardTracker``
(hazards.py), every recorded command from recorder.py, every queue submission
from submission.py (the in-flight slots in slots.py), uploads and downloads
from transfers.py, capture and replay from replay.py, host timing from
profile.py. docs/ARCHITECTURE.md lists the layers.

The public names load on first use, so ``import genspirv.runtime.hazards``
(pure Python) loads neither Vulkan nor numpy. The rest needs both (the
``runtime`` extra): without them, ``from genspirv.runtime import Device``, and
the import of any module that needs them (``import genspirv.runtime.device``),
is one ``ExtraMissingError`` saying which extra to install (extra.py).
"""

from __future__ import annotations

import importlib

from .extra import PURE, missing_extra

_PUBLIC = {
    "Device": "device", "GpuTimer": "device", "ValidationMessage": "context",
    "COUNTERS": "device", "default_manifest_path": "device",
    "HazardTracker": "hazards", "Access": "hazards", "Barrier": "hazards", "Range": "hazards",
    "BoundKernel": "kernel", "pack_spec": "kernel",
    "Buffer": "memory", "BufferView": "memory",
}

__all__ = list(_PUBLIC)


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module not in PURE and (missing := missing_extra()) is not None:
        raise missing       # here, not in a helper: the traceback is the caller's line and this one
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
