"""Trust: what the runtime proves about a kernel once, before the driver sees it.

Takes a manifest entry, its blob, the spec values of a specialisation
(``SpecData``) and the device's limits (``limits.DeviceLimits``); gives nothing
but refusals, each a ``GenspirvError`` subclass naming the kernel:

- ``verify_kernel``: the entry's reflected fields (masks, bindings, push
  size, spec constants, workgroup size, shared memory, entry point) are what
  the blob itself reflects to, by the same pure code the build uses
  (``genspirv.reflect.verify.check_entry``; ``ManifestMismatchError``). A hand-edited
  manifest would otherwise drop a barrier silently. A stripped blob (``-g0``)
  has no names: they are taken from the manifest, everything else proven.
  Proven once per (blob sha256, entry) for the whole process.
- ``check_specialised``: after specialisation the workgroup size is at least
  1 and within ``maxComputeWorkGroupSize`` / ``maxComputeWorkGroupInvocations``,
  and the workgroup (shared) memory the kernel declares, at the spec values
  (``genspirv.reflect.shared_memory_at`` over the manifest's expression), within ``maxComputeSharedMemorySize``
  (``WorkgroupLimitError`` naming the spec constant, the value and the limit); the
  comparisons are ``limits.workgroup_excesses``, the ones lint makes too.

Both run at kernel load (``Device.kernel``), never per dispatch. No Vulkan.
"""

from __future__ import annotations

import threading
from typing import Mapping

from ..reflect import verify as reflect_verify
from ..errors import WorkgroupLimitError
from ..manifest import ManifestEntry
from .limits import DeviceLimits, Excess, workgroup_excesses

_proven: set = set()              # (sha256, ShaderInfo, stripped) whose blob reflects to the entry
_proven_lock = threading.Lock()


def verify_kernel(entry: ManifestEntry, blob: bytes) -> None:
    """Refuse ``entry`` unless its reflected fields are what ``blob`` reflects to.

    ``blob`` has already been checked against ``entry.sha256``."""
    key = (entry.sha256, entry.info, entry.stripped)
    if key in _proven:
        return
    reflect_verify.check_entry(entry.name, entry.info, blob, names=not entry.stripped)
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


def check_specialised(entry: ManifestEntry, local_size: tuple[int, int, int],
                      values: Mapping[int, object], limits: DeviceLimits) -> None:
    """Refuse a specialisation whose workgroup or shared memory the device cannot run.

    ``local_size`` is the workgroup size the pipeline runs with, ``values`` the
    spec id -> value map it is specialised with (``SpecData.values``); the
    comparisons are ``limits.workgroup_excesses``'s, the messages name where
    each figure comes from."""
    name = entry.name
    for axis, size in enumerate(local_size):
        if size < 1:
            raise WorkgroupLimitError(f"kernel {name}: workgroup size {'xyz'[axis]} = {size} (from "
                                      f"{_origin(entry, axis)}); a workgroup needs at least 1 "
                                      f"invocation along each axis")
    for excess in workgroup_excesses(entry.info, limits, values):
        raise WorkgroupLimitError(_specialised_message(entry, local_size, values, excess))


def _specialised_message(entry: ManifestEntry, local_size, values: Mapping[int, object],
                         excess: Excess) -> str:
    name, most = entry.name, excess.most
    if excess.limit == "maxComputeWorkGroupSize":
        axis = excess.axis
        return (f"kernel {name}: workgroup size {'xyz'[axis]} = {local_size[axis]} (from "
                f"{_origin(entry, axis)}), the device allows at most {most} along {'xyz'[axis]} "
                f"(maxComputeWorkGroupSize)")
    if excess.limit == "maxComputeWorkGroupInvocations":
        origins = ", ".join(f"{'xyz'[a]} = {local_size[a]} from {_origin(entry, a)}"
                            for a in range(3) if local_size[a] > 1)
        return (f"kernel {name}: workgroup of {local_size[0]} x {local_size[1]} x {local_size[2]} = "
                f"{excess.value} invocations ({origins}), the device allows at most {most} "
                f"(maxComputeWorkGroupInvocations)")
    given = {sid: v for sid, v in values.items()
             if any(s.id == sid and s.default != v for s in entry.info.spec_constants)}
    why = ("; ".join(_spec_names(entry, sid, v) for sid, v in sorted(given.items()))
           or "the spec constants' defaults")
    return (f"kernel {name}: with {why} the kernel declares {excess.value} bytes of shared memory, "
            f"the device allows at most {most} (maxComputeSharedMemorySize)")
