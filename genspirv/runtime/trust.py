"""Trust: what the runtime proves about a kernel once, before the driver sees it.

Takes a manifest entry, its blob, the spec values of a specialisation
(``SpecData``) and the device's limits (``Context.limits``); gives nothing
but refusals, each a ``GenspirvError`` subclass naming the kernel:

- ``verify_kernel``: the entry's reflected fields (masks, bindings, push
  size, spec constants, workgroup size, shared memory, entry point) are what
  the blob itself reflects to, by the same pure code the build uses
  (``genspirv.reflect.verify.check_entry``; ``ManifestMismatchError``). A hand-edited
  manifest would otherwise drop a barrier silently. Proven once per
  (blob sha256, entry) for the whole process.
- ``check_specialised``: after specialisation the workgroup size is at least
  1 and within ``maxComputeWorkGroupSize`` / ``maxComputeWorkGroupInvocations``,
  and the workgroup (shared) memory the kernel declares, at the spec values
  (``genspirv.reflect.shared_memory_at`` over the manifest's expression), within ``maxComputeSharedMemorySize``
  (``WorkgroupLimitError`` naming the spec constant, the value and the limit).

Both run at kernel load (``Device.kernel``), never per dispatch. No Vulkan.
"""

from __future__ import annotations

import threading
from typing import Mapping

from ..reflect import verify as reflect_verify
from ..errors import WorkgroupLimitError
from ..manifest import ManifestEntry
from ..reflect import shared_memory_at

_proven: set = set()              # (sha256, ShaderInfo) pairs whose blob reflects to the entry
_proven_lock = threading.Lock()


def verify_kernel(entry: ManifestEntry, blob: bytes) -> None:
    """Refuse ``entry`` unless its reflected fields are what ``blob`` reflects to.

    ``blob`` has already been checked against ``entry.sha256``."""
    key = (entry.sha256, entry.info)
    if key in _proven:
        return
    reflect_verify.check_entry(entry.name, entry.info, blob)
    with _proven_lock:
        _proven.add(key)


def _spec_names(entry: ManifestEntry, spec_id, value=None) -> str:
    """``spec constant MAX_CTX = 9 (spec id 1)``; without a value, without ``= ...``."""
    names = sorted({s.name for s in entry.info.spec_constants if s.id == spec_id and s.name})
    shown = "" if value is None else f" = {value}"
    if names:
        return f"spec constant {', '.join(names)}{shown} (spec id {spec_id})"
    return f"spec id {spec_id}{shown}"


def _origin(entry: ManifestEntry, axis: int) -> str:
    spec_id = entry.info.local_size_spec_ids[axis]
    if spec_id is None:
        return f"local_size_{'xyz'[axis]} of the source"
    return _spec_names(entry, spec_id)


def check_specialised(entry: ManifestEntry, blob: bytes, local_size: tuple[int, int, int],
                      values: Mapping[int, object], limits: Mapping[str, object]) -> None:
    """Refuse a specialisation whose workgroup or shared memory the device cannot run.

    ``local_size`` is the workgroup size the pipeline runs with, ``values`` the
    spec id -> value map it is specialised with (``SpecData.values``)."""
    name = entry.name
    max_size = limits["max_compute_work_group_size"]
    for axis, (size, most) in enumerate(zip(local_size, max_size)):
        where = f"kernel {name}: workgroup size {'xyz'[axis]} = {size} (from {_origin(entry, axis)})"
        if size < 1:
            raise WorkgroupLimitError(f"{where}; a workgroup needs at least 1 invocation along each axis")
        if size > most:
            raise WorkgroupLimitError(f"{where}, the device allows at most {most} along "
                                      f"{'xyz'[axis]} (maxComputeWorkGroupSize)")
    invocations = local_size[0] * local_size[1] * local_size[2]
    most = limits["max_compute_work_group_invocations"]
    if invocations > most:
        origins = ", ".join(f"{'xyz'[a]} = {local_size[a]} from {_origin(entry, a)}"
                            for a in range(3) if local_size[a] > 1)
        raise WorkgroupLimitError(f"kernel {name}: workgroup of {local_size[0]} x {local_size[1]} x "
                                  f"{local_size[2]} = {invocations} invocations ({origins}), the "
                                  f"device allows at most {most} (maxComputeWorkGroupInvocations)")
    shared = _shared_memory(entry, blob, values)
    most = limits["max_compute_shared_memory_size"]
    if shared > most:
        given = {sid: v for sid, v in values.items()
                 if any(s.id == sid and s.default != v for s in entry.info.spec_constants)}
        why = ("; ".join(_spec_names(entry, sid, v) for sid, v in sorted(given.items()))
               or "the spec constants' defaults")
        raise WorkgroupLimitError(f"kernel {name}: with {why} the kernel declares {shared} bytes of "
                                  f"shared memory, the device allows at most {most} "
                                  f"(maxComputeSharedMemorySize)")


def _shared_memory(entry: ManifestEntry, blob: bytes, values: Mapping[int, object]) -> int:
    # The manifest's expression, proven against the blob by verify_kernel.
    return shared_memory_at(entry.info, values)
