"""Sharing: which Device an object belongs to, and the lock that serialises a Device.

Takes the objects a caller hands a ``Device`` (buffers, views, kernels) and
that Device; gives ``check_owner``, which refuses an object of another Device
or of a closed one with a ``ForeignObjectError`` naming the object and both
devices (Vulkan leaves such use undefined: a wrong result, or a crash in the
driver), and ``serialised`` / ``serialised_context``, which run a public
method of a Device under the Device's ``threading.RLock``, so one Device may
be shared between threads. No Vulkan.

The lock is re-entrant because public methods call each other (``dispatch``
flushes, ``download`` submits); it is held for the whole of a
``dev.record()`` or ``dev.gpu_timer()`` block, so another thread's work
cannot slip into a capture or a timed region.
"""

from __future__ import annotations

import functools

from ..errors import ForeignObjectError


def serialised(method):
    """Run ``method`` (of a Device) holding the Device's lock."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


def serialised_context(generator):
    """The same for the generator of a ``@contextmanager`` method: the lock is held
    from entry to exit of the ``with`` block."""

    @functools.wraps(generator)
    def locked(self, *args, **kwargs):
        with self._lock:
            yield from generator(self, *args, **kwargs)

    return locked


def describe_device(device) -> str:
    """``Device#2 (llvmpipe ...)``; ``the closed Device#2 (...)`` once it is closed."""
    if device is None:
        return "no Device"
    closed = "the closed " if getattr(device, "_closed", False) else ""
    return closed + getattr(device, "label", repr(device))


def check_owner(obj, device, what: str) -> None:
    """Refuse ``obj`` (a buffer, view or kernel) unless it belongs to ``device``.

    Objects without a ``device`` attribute pass: the type checks that follow
    name them better."""
    owner = getattr(obj, "device", device)
    if owner is device:
        return
    name = getattr(obj, "name", None) or type(obj).__name__
    buffer = getattr(obj, "buffer", obj)
    if buffer is not obj:       # a view
        name = f"{buffer.name} [{obj.offset}, {obj.offset + obj.size})"
    kind = "kernel" if hasattr(obj, "pipeline") else "buffer"
    made = "was loaded by" if kind == "kernel" else "belongs to"
    redo = ("load it with this device's dev.kernel()" if kind == "kernel"
            else "make it with this device's dev.buffer()")
    raise ForeignObjectError(f"{what}: {kind} {name} {made} {describe_device(owner)}, not {describe_device(device)}; "
                             f"objects cannot move between devices ({redo})")
