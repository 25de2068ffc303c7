"""Kernels: a manifest entry in, a checked Vulkan compute pipeline out.

Takes a ``ManifestEntry`` and its blob; checks the blob against the recorded
sha256 before Vulkan ever sees it, builds the descriptor set layouts from the
entry's bindings, the push-constant range from ``push_constant_size``, and
one pipeline per distinct set of specialisation values (cached by name and
values). ``pack_spec`` (pure) turns ``{name: value}`` into the map entries and
bytes of a ``VkSpecializationInfo``: bool is a 4-byte VkBool32, 64-bit types
take 8 bytes; every constant of one spec id gets one value (the caller's, else
the named constant's default), and ``SpecData.values`` says which, per id.

Before any Vulkan object is made, the entry's layout (push constants,
descriptors, sets) and the capabilities and extensions its blob declares are
checked against the device's limits and what it enabled (limits.py); the
workgroup, shared memory and push constants at the spec values when they are
bound (trust.py, limits.py). A ``BoundKernel`` (one set of spec values)
carries the entry at those values (``specialised_entry``: the sizes a
spec-sized array changes) and a pipeline layout whose push range is its push
size. The hard checks of a dispatch that only need the entry (buffer count,
push size) live here too, so their messages name the kernel and both numbers.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

import dataclasses
import numbers
import struct
from dataclasses import dataclass
from typing import Mapping

from ..errors import (
    ArgumentTypeError,
    BindingCountError,
    DeviceLimitError,
    GenspirvError,
    PushConstantError,
    PushConstantSizeError,
    SpecConstantError,
)
from ..manifest import ManifestEntry, check_blob
from ..reflect.spec_sizes import depends_on_spec, overlapping_members, specialise
from ._vk import call, ffi, vk
from .args import describe_value, whole_number
from .limits import DeviceLimits, check_device, layout_excesses
from .trust import check_specialised, verify_kernel

_SPEC_FORMATS = {
    "bool": "I", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
    "float16": "e", "float32": "f", "float64": "d",
}

# The largest finite value of each float type (IEEE 754 binary16, binary32, binary64).
_FLOAT_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}

_DESCRIPTOR_TYPES = {
    "storage_buffer": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
    "uniform_buffer": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
}

@dataclass(frozen=True)
class SpecData:
    entries: tuple[tuple[int, int, int], ...]   # (constant id, byte offset, byte size)
    data: bytes
    key: tuple                                   # (name, value) pairs, sorted: as given, for messages
    values: tuple[tuple[int, object], ...] = ()  # (id, value) every constant of an id runs with

    @property
    def identity(self) -> tuple:
        """What a pipeline is made from, its cache key: the map entries and their bytes. Not the
        values: 0.0 == -0.0 would share a pipeline, and each float('nan') make one more."""
        return self.entries, self.data


def pack_spec(entry: ManifestEntry, spec: Mapping[str, object] | None) -> SpecData:
    """Validate ``spec`` against the entry's spec constants and pack it.

    Every constant of one specialisation id gets one value: the caller's (by any
    of the id's names), else the id's first named constant's default.  Where the
    constants of an id disagree on their defaults (``local_size_x_id = 0``,
    default 1, beside ``constant_id = 0 ... BLOCK_SIZE = 64``) that default is
    packed, so an unspecialised dispatch runs as the named constant says.
    """
    if spec is not None and not isinstance(spec, Mapping):
        raise ArgumentTypeError(f"kernel {entry.name}: spec must be a dict of spec constant name to "
                                f"value, not {type(spec).__name__} {spec!r:.40}")
    spec = dict(spec or {})
    consts = entry.info.spec_constants
    by_name = {}
    for s in consts:
        if s.name:
            by_name.setdefault(s.name, s)
    not_names = [k for k in spec if not isinstance(k, str)]     # a spec id, say: sorting them with names raised
    if not_names:
        raise ArgumentTypeError(f"kernel {entry.name}: spec is keyed by spec constant name, not "
                                f"{describe_value(not_names[0])} (known: {', '.join(sorted(by_name)) or 'none'})")
    unknown = sorted(set(spec) - set(by_name))
    if unknown:
        known = ", ".join(sorted(by_name)) or "none"
        raise SpecConstantError(f"kernel {entry.name}: unknown spec constant(s) "
                                f"{', '.join(unknown)} (known: {known})")
    given: dict[int, tuple] = {}           # id -> (constant named by the caller, value)
    for name in sorted(spec):
        const = by_name[name]
        _check_value(entry.name, const.name, const.type, spec[name])
        if const.id in given and given[const.id][1] != spec[name]:
            other = given[const.id][0]
            raise SpecConstantError(f"kernel {entry.name}: spec constants {other.name} and {name} "
                                    f"share spec id {const.id} but were given different values "
                                    f"({spec[other.name]!r} and {spec[name]!r})")
        given[const.id] = (const, spec[name])
    to_pack, resolved = {}, {}
    for cid in sorted({c.id for c in consts}):
        same_id = [c for c in consts if c.id == cid]
        named = [c for c in same_id if c.name]
        if cid in given:
            to_pack[cid] = given[cid]
        elif named and len({(type(c.default), c.default) for c in same_id}) > 1:
            to_pack[cid] = (named[0], named[0].default)
        resolved[cid] = to_pack[cid][1] if cid in to_pack else (named or same_id)[0].default
    entries, chunks, offset = [], [], 0
    for cid, (const, value) in to_pack.items():
        sizes = {struct.calcsize("<" + _SPEC_FORMATS[c.type]) for c in consts if c.id == cid}
        if len(sizes) > 1:
            raise SpecConstantError(f"kernel {entry.name}: the constants of spec id {cid} differ "
                                    f"in size ({sorted(sizes)} bytes); one value cannot set them all")
        raw = struct.pack("<" + _SPEC_FORMATS[const.type],
                          _check_value(entry.name, const.name, const.type, value))
        entries.append((cid, offset, len(raw)))
        chunks.append(raw)
        offset += len(raw)
    return SpecData(entries=tuple(entries), data=b"".join(chunks),
                    key=tuple(sorted((n, spec[n]) for n in spec)),
                    values=tuple(resolved.items()))


def specialised_local_size(entry: ManifestEntry, spec: SpecData) -> tuple[int, int, int]:
    """The workgroup size a pipeline built with ``spec`` runs with."""
    values = dict(spec.values)
    info = entry.info
    return tuple(values.get(sid, size) if sid is not None else size
                 for size, sid in zip(info.local_size, info.local_size_spec_ids))


def _check_value(kernel: str, name: str, stype: str, value):
    """``value`` as packed for a spec constant of ``stype``, or a SpecConstantError naming the
    constant, its type and its range. A numpy integer or float counts as one. A float is taken
    while it rounds to a finite value of its type (inf and nan are taken as given: they are values
    of it); one that would round to infinity (1e39 for a float32) is refused, not packed as inf."""
    where = f"kernel {kernel}: spec constant {name} ({stype})"
    if stype == "bool":
        if not isinstance(value, bool):
            raise SpecConstantError(f"{where} needs True or False, not {value!r}")
        return 1 if value else 0
    if stype.startswith(("int", "uint")):
        number = whole_number(value)
        if number is None:
            raise SpecConstantError(f"{where} needs an integer, not {value!r}")
        bits = int(stype.split("int")[1])
        lo, hi = (0, 2 ** bits - 1) if stype.startswith("u") else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
        if not lo <= number <= hi:
            raise SpecConstantError(f"{where}: {number} is outside [{lo}, {hi}]")
        return number
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecConstantError(f"{where} needs a number, not {value!r}")
    try:
        number = float(value)
        struct.pack("<" + _SPEC_FORMATS[stype], number)
    except OverflowError:       # an int past float64, or a float that rounds to infinity in stype
        top = _FLOAT_MAX[stype]
        shown = repr(value) if len(repr(value)) <= 24 else f"{repr(value)[:20]}..."
        raise SpecConstantError(f"{where}: {shown} is outside the {stype} range [{-top!r}, {top!r}]") from None
    return number


def check_dispatch_args(entry: ManifestEntry, nbuffers: int, push_size: int) -> None:
    info = entry.info
    if nbuffers != info.binding_count:
        raise BindingCountError(f"kernel {entry.name}: {nbuffers} buffer(s) bound, the kernel has "
                                f"{info.binding_count} binding(s) "
                                f"({', '.join(b.name for b in info.bindings) or 'none'})")
    if push_size != info.push_constant_size:
        raise PushConstantSizeError(f"kernel {entry.name}: {push_size} byte(s) of push data, the "
                                    f"kernel's push constants are {info.push_constant_size} bytes")


class Kernel:
    """One manifest entry turned into a pipeline layout and cached pipelines."""

    def __init__(self, device, entry: ManifestEntry, blob: bytes, limits: DeviceLimits, owner=None):
        check_blob(entry, blob)   # before vkCreateShaderModule: a corrupt blob never reaches the driver
        verify_kernel(entry, blob)   # and the manifest's reflection is the blob's own
        self.entry = entry
        self.name = entry.name
        self._device = device
        self.device = owner       # the genspirv Device that loaded it (_device is the VkDevice)
        self.blob = blob
        info = entry.info
        # Before any Vulkan object, and before what this runtime cannot bind: a layout past
        # the device's limits is undefined behaviour (300 storage buffers on a device
        # allowing 32 crashed in the first fence wait).
        check_device(entry.name, info, limits)
        self.limits = limits
        for b in info.bindings:
            if b.type not in _DESCRIPTOR_TYPES:
                raise GenspirvError(f"kernel {entry.name}: binding {b.name} is a {b.type}; the runtime "
                                    f"binds storage and uniform buffers only")
            if b.count != 1:
                raise GenspirvError(f"kernel {entry.name}: binding {b.name} is an array of "
                                    f"{b.count or 'runtime size'}; the runtime binds single buffers")
        self.readable_mask = info.readable_mask
        self.writable_mask = info.writable_mask
        self.descriptor_types = [_DESCRIPTOR_TYPES[b.type] for b in info.bindings]
        self.bindings = info.bindings
        self.push_constant_size = info.push_constant_size
        self.set_numbers = sorted({b.set for b in info.bindings})
        self.set_layouts = []
        for set_no in range(max(self.set_numbers, default=-1) + 1):
            layout_bindings = [
                vk.VkDescriptorSetLayoutBinding(binding=b.binding, descriptorType=_DESCRIPTOR_TYPES[b.type],
                                                descriptorCount=1,
                                                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                for b in info.bindings if b.set == set_no]
            cinfo = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(layout_bindings),
                                                       pBindings=layout_bindings or None)
            layout = call(vk.vkCreateDescriptorSetLayout, device, cinfo, None)
            self.set_layouts.append(layout)
        self._layouts: dict[int, object] = {}     # push-constant size -> pipeline layout
        self.pipeline_layout = self.layout_for(self.push_constant_size)
        code = bytes(blob)   # the binding casts it in place: keep it referenced until the call returns
        minfo = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
        self.module = call(vk.vkCreateShaderModule, device, minfo, None)
        self._pipelines: dict[tuple, object] = {}

    def layout_for(self, push_size: int):
        """The pipeline layout with a push range of ``push_size`` bytes (created once): a
        spec-sized push array gives a specialisation its own size."""
        layout = self._layouts.get(push_size)
        if layout is not None:
            return layout
        ranges = []
        if push_size:
            ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                             size=push_size)]
        set_layouts = list(self.set_layouts)
        linfo = vk.VkPipelineLayoutCreateInfo(setLayoutCount=len(set_layouts),
                                              pSetLayouts=set_layouts or None,
                                              pushConstantRangeCount=len(ranges),
                                              pPushConstantRanges=ranges or None)
        layout = self._layouts[push_size] = call(vk.vkCreatePipelineLayout, self._device, linfo, None)
        return layout

    def pipeline(self, spec: SpecData, layout=None):
        """The pipeline for these spec values (created once, then cached), with ``layout``
        (the kernel's default one when None)."""
        pipe = self._pipelines.get(spec.identity)
        if pipe is not None:
            return pipe
        map_entries = [vk.VkSpecializationMapEntry(constantID=cid, offset=off, size=size)
                       for cid, off, size in spec.entries]
        data = ffi.new("char[]", spec.data or b"\0")
        spec_info = None
        if map_entries:
            spec_info = vk.VkSpecializationInfo(mapEntryCount=len(map_entries), pMapEntries=map_entries,
                                                dataSize=len(spec.data), pData=ffi.cast("void*", data))
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                                                   module=self.module, pName=self.entry.info.entry_point,
                                                   pSpecializationInfo=spec_info)
        cinfo = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout or self.pipeline_layout,
                                               basePipelineIndex=-1)
        infos = [cinfo]
        pipe = call(vk.vkCreateComputePipelines, self._device, None, 1, infos, None)[0]
        self._pipelines[spec.identity] = pipe
        return pipe

    def destroy(self) -> None:
        for pipe in self._pipelines.values():
            vk.vkDestroyPipeline(self._device, pipe, None)
        self._pipelines.clear()
        if self.module is not None:
            vk.vkDestroyShaderModule(self._device, self.module, None)
            for layout in self._layouts.values():
                vk.vkDestroyPipelineLayout(self._device, layout, None)
            self._layouts.clear()
            for layout in self.set_layouts:
                vk.vkDestroyDescriptorSetLayout(self._device, layout, None)
            self.module = None


def specialised_entry(entry: ManifestEntry, spec: SpecData) -> ManifestEntry:
    """``entry`` with every size a spec-sized array changes at ``spec``'s values
    (push members and size, min sizes, shared memory); ``entry`` itself when none does.
    A length that is no positive number, or a push member grown into the next one,
    is refused naming the kernel."""
    info = entry.info
    if not depends_on_spec(info):
        return entry
    values = dict(spec.values)
    try:
        special = specialise(info, values)
    except GenspirvError as exc:
        raise SpecConstantError(f"kernel {entry.name}: with spec values {dict(spec.key)}, {exc}") from None
    clash = overlapping_members(special.push_constants)
    if clash is not None:
        a, b = clash
        raise PushConstantError(
            f"kernel {entry.name}: with spec values {dict(spec.key)} push member {a.name!r} "
            f"({a.array[0]} elements, bytes {a.offset}..{a.offset + a.size}) runs into {b.name!r} "
            f"at byte {b.offset} (a block's layout is fixed at the defaults); make the "
            "spec-sized array the block's last member")
    return dataclasses.replace(entry, info=special)


class BoundKernel:
    """A kernel with fixed spec values: what ``dev.kernel(name, spec=...)`` returns.

    ``entry`` is the manifest entry at these spec values (``specialised_entry``): push
    data is packed and checked, and buffers checked against min_size, by it."""

    def __init__(self, kernel: Kernel, spec: SpecData, checked: bool = False):
        """``checked``: refuse spec values the device cannot run (``kernel.limits``)."""
        if checked:
            check_specialised(kernel.entry, specialised_local_size(kernel.entry, spec),
                              dict(spec.values), kernel.limits)
        self.kernel = kernel
        self.spec = spec
        self.name = kernel.name
        self.entry = specialised_entry(kernel.entry, spec)
        info = self.entry.info
        if checked and self.entry is not kernel.entry:
            # A spec-sized push array: the push block at these values against the device.
            for excess in layout_excesses(info, kernel.limits):
                raise DeviceLimitError(excess.message(f"{self.name} (with spec values {dict(spec.key)})"))
        self.device = kernel.device
        self.bindings = info.bindings
        self.readable_mask = kernel.readable_mask
        self.writable_mask = kernel.writable_mask
        self.push_constant_size = info.push_constant_size
        self.pipeline_layout = kernel.layout_for(info.push_constant_size)
        self.pipeline = kernel.pipeline(spec, self.pipeline_layout)

    def __repr__(self) -> str:
        return f"<Kernel {self.name} spec={dict(self.spec.key)}>"
