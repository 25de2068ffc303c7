"""Reflection, proof: a manifest entry's reflected fields and its blob in, the differences out.

``verify_entry(info, blob)`` reflects the blob (the same pure code the build
uses) for the entry's entry point and returns one ``Mismatch`` (field,
manifest value, blob value) per reflected field that differs: entry point,
workgroup size and its spec ids, every field of every binding (access,
accessed, written, min_size, array_stride ...), binding count and the masks,
spec constants, push-constant size, every field of every push-constant member
(a struct's members too), shared memory, with the expressions of the sizes
spec values change, and the capabilities and extensions the module declares.  ``check_entry``
raises ``ManifestMismatchError`` naming the kernel, each field and both
values. A blob whose debug information was stripped (``-g0``, the entry's
``stripped``) has no names to prove: with ``names=False`` every binding, spec
constant and push-constant member is compared without its name, all else as
ever.  No Vulkan: the runtime calls it when it loads a kernel, so a
hand-edited manifest cannot silently drop a barrier.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from ..errors import ManifestMismatchError
from .model import PushMember, ShaderInfo
from .shader_info import reflect_module


class Mismatch(NamedTuple):
    field: str
    manifest: Any
    blob: Any

    def __str__(self) -> str:
        return f"{self.field}: manifest says {self.manifest!r}, the blob {self.blob!r}"


_SCALAR_FIELDS = ("local_size", "local_size_spec_ids", "binding_count", "writable_mask",
                  "readable_mask", "push_constant_size", "shared_memory", "shared_memory_spec",
                  "push_constant_size_spec", "capabilities", "extensions")


def _compare_sequence(field: str, label, manifest: tuple, blob: tuple) -> list[Mismatch]:
    """Field by field where both list the same items in the same places; whole otherwise."""
    if len(manifest) != len(blob) or any(label(a) != label(b) for a, b in zip(manifest, blob)):
        return [Mismatch(field, [label(x) for x in manifest], [label(x) for x in blob])]
    out = []
    for a, b in zip(manifest, blob):
        for f in dataclasses.fields(a):
            va, vb = getattr(a, f.name), getattr(b, f.name)
            where = f"{field}[{label(a)}].{f.name}"
            if isinstance(a, PushMember) and f.name == "members":
                out += _compare_sequence(where, label, va, vb)     # a struct's own members
            elif va != vb or type(va) is not type(vb):
                out.append(Mismatch(where, va, vb))
    return out


def _member_label(m: PushMember) -> str:
    return m.name or f"offset {m.offset}"


def _unnamed_member(m: PushMember) -> PushMember:
    return dataclasses.replace(m, name="", members=tuple(map(_unnamed_member, m.members)))


def unnamed(info: ShaderInfo) -> ShaderInfo:
    """``info`` without the names a stripped blob lacks (bindings, spec constants, push-constant
    members), spec constants in their order without names."""
    specs = sorted((dataclasses.replace(s, name="") for s in info.spec_constants),
                   key=lambda s: (s.id, str(s.type), repr(s.default)))
    return dataclasses.replace(info, bindings=tuple(dataclasses.replace(b, name="") for b in info.bindings),
                               spec_constants=tuple(specs),
                               push_constants=tuple(map(_unnamed_member, info.push_constants)))


def verify_entry(info: ShaderInfo, blob: bytes, names: bool = True) -> list[Mismatch]:
    """Every reflected field of ``info`` that differs from the blob's own reflection
    (``names=False``: the names left out on both sides, see the module docstring)."""
    infos = reflect_module(blob)
    actual = next((i for i in infos if i.entry_point == info.entry_point), None)
    if actual is None:
        return [Mismatch("entry_point", info.entry_point, [i.entry_point for i in infos])]
    if not names:
        info, actual = unnamed(info), unnamed(actual)
    out = []
    for name in _SCALAR_FIELDS:
        expected, got = getattr(info, name), getattr(actual, name)
        if expected != got:
            out.append(Mismatch(name, expected, got))
    out += _compare_sequence("bindings", lambda b: f"set={b.set},binding={b.binding}",
                             info.bindings, actual.bindings)
    out += _compare_sequence("spec_constants", lambda s: f"id={s.id},name={s.name!r}",
                             info.spec_constants, actual.spec_constants)
    out += _compare_sequence("push_constants", _member_label, info.push_constants,
                             actual.push_constants)
    return out


def check_entry(kernel: str, info: ShaderInfo, blob: bytes, names: bool = True) -> None:
    """Raise ``ManifestMismatchError`` naming ``kernel`` and every field that differs."""
    mismatches = verify_entry(info, blob, names)
    if mismatches:
        raise ManifestMismatchError(
            f"kernel {kernel}: the manifest disagrees with its blob ("
            + "; ".join(map(str, mismatches)) + "); rebuild the manifest with genspirv build")
