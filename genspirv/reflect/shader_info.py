"""Reflection put together: SPIR-V bytes in, a frozen ``ShaderInfo`` per entry point out.

Parses the module (``genspirv.reflect.spirv``), indexes it (``index``) and asks each
step for its part: ``descriptors``, ``usage`` (what the entry point's code
does with each binding), ``specialization`` (spec constants, workgroup
size), ``push_constants`` (size and members), ``workgroup_memory``, and the
module's capabilities and extensions (``genspirv.reflect.spirv``).  Gives ``reflect``,
``reflect_module``, ``binding_usage`` and ``shared_memory_bytes``, the
functions ``genspirv.reflect`` exports.  Pure: no Vulkan, no subprocess.
"""

from __future__ import annotations

from typing import Optional

from . import spirv as sp
from ..errors import ReflectError
from .descriptors import Descriptor, descriptors
from .index import EntryPoint, Index, index_module
from .model import (Binding, BindingAccess, BindingUsage, DescriptorType, ShaderInfo, SpecConstant,
                    SpecValues)
from .push_constants import push_constant_size, push_constants
from .spec_sizes import SYMBOLIC, maximum
from .specialization import spec_constants, workgroup_size
from .usage import usage
from .workgroup_memory import workgroup_memory_bytes

# Descriptors whose variable is an opaque handle (loading it reads no contents).
_BLOCKS = (DescriptorType.STORAGE_BUFFER, DescriptorType.UNIFORM_BUFFER)


def _merge(a: Binding, b: Binding) -> Binding:
    """Two variables aliasing one (set, binding): one binding that does what both do."""
    if a.type != b.type:
        raise ReflectError(f"set {a.set} binding {a.binding} is declared both as {a.type} "
                           f"({a.name!r}) and {b.type} ({b.name!r})")
    readable = a.readable or b.readable
    writable = a.writable or b.writable
    access = (BindingAccess.READ_WRITE if readable and writable
              else BindingAccess.READ if readable else BindingAccess.WRITE)
    spec = None
    if a.min_size_spec is not None or b.min_size_spec is not None:
        spec = maximum(a.min_size if a.min_size_spec is None else a.min_size_spec,
                       b.min_size if b.min_size_spec is None else b.min_size_spec)
    return Binding(a.set, a.binding, a.name or b.name, a.type, max(a.count, b.count), access,
                   a.accessed or b.accessed, a.written or b.written,
                   max(a.min_size, b.min_size), _finest_stride(a.array_stride, b.array_stride),
                   spec)


def _finest_stride(a: int, b: int) -> int:
    """Aliased views of one runtime array with other element types: the finest stride
    (the unit a view's size must be counted in); 0 means no runtime array."""
    return min(a, b) if a and b else a or b


def _roots(descs: tuple[Descriptor, ...]) -> dict[int, bool]:
    """The variables usage follows, each with whether it is an opaque handle."""
    return {d.variable: d.type not in _BLOCKS for d in descs}


def _info(index: Index, ep: EntryPoint, descs: tuple[Descriptor, ...],
          specs: tuple[SpecConstant, ...], push_size: tuple) -> ShaderInfo:
    use = usage(index, ep.function, _roots(descs))
    merged: dict[tuple[int, int], Binding] = {}
    for d in descs:
        b = Binding(d.set, d.binding, d.name, d.type, d.count, d.access,
                    d.variable in use.accessed, d.variable in use.written,
                    d.min_size, d.array_stride, d.min_size_spec)
        key = (d.set, d.binding)
        merged[key] = _merge(merged[key], b) if key in merged else b
    local_size, spec_ids = workgroup_size(index, ep)
    shared = workgroup_memory_bytes(index, ep, SYMBOLIC) if specs else 0
    return ShaderInfo(entry_point=ep.name, local_size=local_size, local_size_spec_ids=spec_ids,
                      bindings=tuple(merged[k] for k in sorted(merged)),
                      spec_constants=specs, push_constant_size=push_size[0],
                      shared_memory=workgroup_memory_bytes(index, ep),
                      push_constants=push_constants(index, ep),
                      shared_memory_spec=shared if type(shared) is tuple else None,
                      push_constant_size_spec=push_size[1],

                      capabilities=tuple(sorted(sp.capabilities(index.module))),
                      extensions=tuple(sorted(sp.extensions(index.module))))


def _compute_entry_points(index: Index) -> list[EntryPoint]:
    return [ep for ep in index.entry_points if ep.model == sp.EXECUTION_MODEL_GLCOMPUTE]


def _no_compute_message(index: Index) -> str:
    others = ", ".join(f"{ep.name!r} ({sp.EXECUTION_MODELS.get(ep.model, ep.model)})"
                       for ep in index.entry_points)
    return "module has no GLCompute entry point" + (f" (it has {others})" if others else "")


def _select_entry_point(index: Index, entry_point: Optional[str]) -> EntryPoint:
    eps = _compute_entry_points(index)
    if not eps:
        raise ReflectError(_no_compute_message(index))
    if entry_point is None:
        return eps[0]
    for ep in eps:
        if ep.name == entry_point:
            return ep
    known = ", ".join(repr(e.name) for e in eps)
    raise ReflectError(f"no GLCompute entry point named {entry_point!r} (known: {known})")


def reflect_module(blob: bytes) -> list[ShaderInfo]:
    """A ``ShaderInfo`` per GLCompute entry point, in declaration order."""
    with sp.without_gc():
        return _reflect_module(blob)


def _reflect_module(blob: bytes) -> list[ShaderInfo]:
    index = index_module(sp.parse(blob))
    eps = _compute_entry_points(index)
    if not eps:
        raise ReflectError(_no_compute_message(index))
    descs, specs = descriptors(index), spec_constants(index)
    push = _push_sizes(index, specs)
    return [_info(index, ep, descs, specs, push) for ep in eps]


def _push_sizes(index: Index, specs: tuple[SpecConstant, ...]) -> tuple:
    """(push-constant size at the defaults, its expression over spec ids or None)."""
    spec = push_constant_size(index, SYMBOLIC) if specs else 0
    return push_constant_size(index), spec if type(spec) is tuple else None


def reflect(blob: bytes, entry_point: Optional[str] = None) -> ShaderInfo:
    """Reflect one entry point of a SPIR-V module (the first compute one if None)."""
    with sp.without_gc():
        return _reflect(blob, entry_point)


def _reflect(blob: bytes, entry_point: Optional[str]) -> ShaderInfo:
    index = index_module(sp.parse(blob))
    ep = _select_entry_point(index, entry_point)
    specs = spec_constants(index)
    return _info(index, ep, descriptors(index), specs, _push_sizes(index, specs))


def binding_usage(blob: bytes, entry_point: Optional[str] = None
                  ) -> dict[tuple[int, int], BindingUsage]:
    """What the entry point's code does with each (set, binding): more than the manifest keeps.

    ``OpArrayLength`` and image size queries count as accessed but neither read
    nor written: they need the descriptor bound, not its contents.
    """
    with sp.without_gc():
        index = index_module(sp.parse(blob))
        ep = _select_entry_point(index, entry_point)
        descs = descriptors(index)
        use = usage(index, ep.function, _roots(descs))
    out: dict[tuple[int, int], BindingUsage] = {}
    for d in descs:
        key = (d.set, d.binding)
        prev = out.get(key, BindingUsage(False, False, False))
        out[key] = BindingUsage(prev.accessed or d.variable in use.accessed,
                                prev.read or d.variable in use.read,
                                prev.written or d.variable in use.written)
    return out


def shared_memory_bytes(blob: bytes, spec_values: Optional[SpecValues] = None,
                        entry_point: Optional[str] = None) -> int:
    """Workgroup memory the entry point declares once specialised with ``spec_values``
    (spec id -> value; ids left out keep each constant's default).  Pure: the runtime
    checks the result against ``maxComputeSharedMemorySize``."""
    with sp.without_gc():
        index = index_module(sp.parse(blob))
        return workgroup_memory_bytes(index, _select_entry_point(index, entry_point), spec_values)
