"""Device limits: a kernel's reflection and a device's limits in, what the device cannot hold out.

Takes a ``ShaderInfo`` (what the manifest records of a kernel: its bindings,
push-constant size, capabilities and extensions, and, at the spec values it
is created with, its workgroup size and shared memory, the latter by
``reflect.shared_memory_at``) and a frozen
``DeviceLimits`` (``VkPhysicalDeviceLimits``, the subgroup properties, the
features and extensions the Device enabled); gives ``Excess`` records, one
per limit the kernel is past, and ``check_device`` raises the first as one
line naming the kernel, the limit, the kernel's value and the device's.

Counted as Vulkan counts them (the spec's "Limits" chapter): per stage and
per pipeline layout (a compute pipeline has one stage, so both totals are
the same numbers): storage buffers, uniform buffers, sampled images
(combined image samplers and uniform texel buffers too), storage images
(storage texel buffers too), samplers (combined image samplers too), and all
of them against ``maxPerStageResources``; a runtime-sized array counts one.
The sets a layout needs run from 0 to the highest set used.

``VULKAN_1_2_REQUIRED`` holds the limits every Vulkan 1.2 device is
guaranteed (the spec's required minimums): ``genspirv lint`` reports a kernel
past them as a portability finding. Pure: no Vulkan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from ..errors import DeviceFeatureError, DeviceLimitError
from ..reflect import DescriptorType, ShaderInfo, SpecValue, shared_memory_at

# VkSubgroupFeatureFlagBits, and the compute stage of VkShaderStageFlagBits.
SUBGROUP_BITS = {
    "GroupNonUniform": (0x1, "BASIC"), "GroupNonUniformVote": (0x2, "VOTE"),
    "GroupNonUniformArithmetic": (0x4, "ARITHMETIC"), "GroupNonUniformBallot": (0x8, "BALLOT"),
    "GroupNonUniformShuffle": (0x10, "SHUFFLE"),
    "GroupNonUniformShuffleRelative": (0x20, "SHUFFLE_RELATIVE"),
    "GroupNonUniformClustered": (0x40, "CLUSTERED"), "GroupNonUniformQuad": (0x80, "QUAD"),
    "GroupNonUniformPartitionedNV": (0x100, "PARTITIONED"),
    "GroupNonUniformRotateKHR": (0x200, "ROTATE"),
}
STAGE_COMPUTE = 0x20

# SPIR-V capability -> (the feature's key in dev.features, its Vulkan name). A device
# feature is enabled only where the Device enables it (runtime/context.py); one this
# runtime never enables is refused as not enabled, not left to the driver.
CAPABILITY_FEATURES = {
    "Float16": ("shader_float16", "shaderFloat16"),
    "Float64": ("shader_float64", "shaderFloat64"),
    "Int8": ("shader_int8", "shaderInt8"),
    "Int16": ("shader_int16", "shaderInt16"),
    "Int64": ("shader_int64", "shaderInt64"),
    "Int64Atomics": ("shader_buffer_int64_atomics", "shaderBufferInt64Atomics"),
    "StorageBuffer16BitAccess": ("storage_buffer_16bit_access", "storageBuffer16BitAccess"),
    "UniformAndStorageBuffer16BitAccess": ("uniform_and_storage_buffer_16bit_access",
                                           "uniformAndStorageBuffer16BitAccess"),
    "StoragePushConstant16": ("storage_push_constant_16", "storagePushConstant16"),
    "StorageBuffer8BitAccess": ("storage_buffer_8bit_access", "storageBuffer8BitAccess"),
    "UniformAndStorageBuffer8BitAccess": ("uniform_and_storage_buffer_8bit_access",
                                          "uniformAndStorageBuffer8BitAccess"),
    "StoragePushConstant8": ("storage_push_constant_8", "storagePushConstant8"),
    "VulkanMemoryModel": ("vulkan_memory_model", "vulkanMemoryModel"),
    "VulkanMemoryModelDeviceScope": ("vulkan_memory_model_device_scope",
                                     "vulkanMemoryModelDeviceScope"),
    "CooperativeMatrixKHR": ("cooperative_matrix", "cooperativeMatrix (VK_KHR_cooperative_matrix)"),
    "DotProduct": ("shader_integer_dot_product", "shaderIntegerDotProduct"),
    "DotProductInputAll": ("shader_integer_dot_product", "shaderIntegerDotProduct"),
    "DotProductInput4x8Bit": ("shader_integer_dot_product", "shaderIntegerDotProduct"),
    "DotProductInput4x8BitPacked": ("shader_integer_dot_product", "shaderIntegerDotProduct"),
    "PhysicalStorageBufferAddresses": ("buffer_device_address", "bufferDeviceAddress"),
    "WorkgroupMemoryExplicitLayoutKHR": ("workgroup_memory_explicit_layout",
                                         "workgroupMemoryExplicitLayout"),
    "AtomicFloat32AddEXT": ("shader_buffer_float32_atomic_add", "shaderBufferFloat32AtomicAdd"),
    "AtomicFloat64AddEXT": ("shader_buffer_float64_atomic_add", "shaderBufferFloat64AtomicAdd"),
    "AtomicFloat16AddEXT": ("shader_buffer_float16_atomic_add", "shaderBufferFloat16AtomicAdd"),
    "AtomicFloat32MinMaxEXT": ("shader_buffer_float32_atomic_min_max",
                               "shaderBufferFloat32AtomicMinMax"),
    "ShaderClockKHR": ("shader_subgroup_clock", "shaderSubgroupClock"),
    "BFloat16TypeKHR": ("shader_bfloat16_type", "shaderBFloat16Type"),
    "RayQueryKHR": ("ray_query", "rayQuery"),
}

# SPIR-V extensions that need a device extension Vulkan 1.2 does not include.
EXTENSION_DEVICE_EXTENSIONS = {
    "SPV_KHR_non_semantic_info": "VK_KHR_shader_non_semantic_info",
    "SPV_KHR_cooperative_matrix": "VK_KHR_cooperative_matrix",
    "SPV_KHR_integer_dot_product": "VK_KHR_shader_integer_dot_product",
    "SPV_KHR_workgroup_memory_explicit_layout": "VK_KHR_workgroup_memory_explicit_layout",
    "SPV_EXT_shader_atomic_float_add": "VK_EXT_shader_atomic_float",
    "SPV_EXT_shader_atomic_float_min_max": "VK_EXT_shader_atomic_float2",
    "SPV_KHR_shader_clock": "VK_KHR_shader_clock",
    "SPV_KHR_ray_query": "VK_KHR_ray_query",
}

# The descriptor types each per-stage limit counts (VkPhysicalDeviceLimits).
_COUNTED = (
    ("storage buffers", "StorageBuffers", "storage_buffers", (DescriptorType.STORAGE_BUFFER,)),
    ("uniform buffers", "UniformBuffers", "uniform_buffers", (DescriptorType.UNIFORM_BUFFER,)),
    ("sampled images", "SampledImages", "sampled_images", (DescriptorType.SAMPLED_IMAGE,
                                                           DescriptorType.COMBINED_IMAGE_SAMPLER,
                                                           DescriptorType.UNIFORM_TEXEL_BUFFER)),
    ("storage images", "StorageImages", "storage_images", (DescriptorType.STORAGE_IMAGE,
                                                           DescriptorType.STORAGE_TEXEL_BUFFER)),
    ("samplers", "Samplers", "samplers", (DescriptorType.SAMPLER,
                                          DescriptorType.COMBINED_IMAGE_SAMPLER)),
)
_RESOURCES = frozenset(t for *_, types in _COUNTED for t in types)


@dataclass(frozen=True)
class DeviceLimits:
    """What a device allows a compute kernel (names as VkPhysicalDeviceLimits, snake case)."""
    max_push_constants_size: int
    max_bound_descriptor_sets: int
    max_per_stage_descriptor_storage_buffers: int
    max_per_stage_descriptor_uniform_buffers: int
    max_per_stage_descriptor_sampled_images: int
    max_per_stage_descriptor_storage_images: int
    max_per_stage_descriptor_samplers: int
    max_per_stage_resources: int
    max_descriptor_set_storage_buffers: int
    max_descriptor_set_uniform_buffers: int
    max_descriptor_set_sampled_images: int
    max_descriptor_set_storage_images: int
    max_descriptor_set_samplers: int
    max_compute_shared_memory_size: int
    max_compute_work_group_size: tuple[int, int, int]
    max_compute_work_group_invocations: int
    subgroup_operations: int = 0        # VkSubgroupFeatureFlags
    subgroup_stages: int = 0            # the stages with subgroup operations
    features: frozenset[str] = frozenset()      # the enabled features, dev.features keys
    extensions: frozenset[str] = frozenset()    # the enabled device extensions
    checks_features: bool = True        # False: limits only (lint's Vulkan 1.2 minimums)

    @classmethod
    def from_device(cls, limits: Mapping[str, object], features: Mapping[str, bool] = None,
                    subgroup: Mapping[str, int] = None, extensions: Iterable[str] = ()) -> "DeviceLimits":
        """From ``dev.properties["limits"]`` (its keys are these fields' names), the enabled
        features, the subgroup properties and the enabled device extensions."""
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in limits.items() if k in names}
        subgroup = subgroup or {}
        return cls(**known, subgroup_operations=subgroup.get("operations", 0),
                   subgroup_stages=subgroup.get("stages", 0),
                   features=frozenset(k for k, on in (features or {}).items() if on),
                   extensions=frozenset(extensions))


# The limits every Vulkan 1.2 device is guaranteed (the spec's "Required Limits").
VULKAN_1_2_REQUIRED = DeviceLimits(
    max_push_constants_size=128, max_bound_descriptor_sets=4,
    max_per_stage_descriptor_storage_buffers=4, max_per_stage_descriptor_uniform_buffers=12,
    max_per_stage_descriptor_sampled_images=16, max_per_stage_descriptor_storage_images=4,
    max_per_stage_descriptor_samplers=16, max_per_stage_resources=128,
    max_descriptor_set_storage_buffers=24, max_descriptor_set_uniform_buffers=72,
    max_descriptor_set_sampled_images=96, max_descriptor_set_storage_images=24,
    max_descriptor_set_samplers=96, max_compute_shared_memory_size=16384,
    max_compute_work_group_size=(128, 128, 64), max_compute_work_group_invocations=128,
    checks_features=False)


@dataclass(frozen=True)
class Excess:
    """One limit a kernel is past: ``what`` it has (its ``value``), the device's ``most``."""
    limit: str          # the Vulkan name: maxPushConstantsSize, shaderInt64, ...
    what: str           # "300 storage buffers in the compute stage"
    value: object
    most: object
    feature: str = ""        # not a number: "device feature", "device extension", "subgroup operation"
    axis: Optional[int] = None    # the workgroup axis of a maxComputeWorkGroupSize excess

    def message(self, kernel: str) -> str:
        if self.feature:
            return f"kernel {kernel} needs {self.feature} {self.limit} ({self.what}), which this device {self.most}"
        return f"kernel {kernel}: {self.what}, the device allows at most {self.most} ({self.limit})"


def layout_excesses(info: ShaderInfo, limits: DeviceLimits) -> list[Excess]:
    """Push constants, descriptors per stage and per layout, and descriptor sets."""
    out = []
    if info.push_constant_size > limits.max_push_constants_size:
        out.append(Excess("maxPushConstantsSize", f"{info.push_constant_size} bytes of push constants",
                          info.push_constant_size, limits.max_push_constants_size))
    counts = info.descriptors()
    for words, suffix, field, types in _COUNTED:
        n = sum(counts.get(t, 0) for t in types)
        stage_most = getattr(limits, f"max_per_stage_descriptor_{field}")
        set_most = getattr(limits, f"max_descriptor_set_{field}")
        if n > stage_most:
            out.append(Excess(f"maxPerStageDescriptor{suffix}", f"{n} {words} in the compute stage"
                              f"{_per_set(info, types)}", n, stage_most))
        elif n > set_most:
            out.append(Excess(f"maxDescriptorSet{suffix}", f"{n} {words} in the pipeline layout"
                              f"{_per_set(info, types)}", n, set_most))
    resources = sum(n for t, n in counts.items() if t in _RESOURCES)
    if resources > limits.max_per_stage_resources:
        out.append(Excess("maxPerStageResources", f"{resources} descriptors in the compute stage",
                          resources, limits.max_per_stage_resources))
    if info.set_count > limits.max_bound_descriptor_sets:
        out.append(Excess("maxBoundDescriptorSets",
                          f"descriptor sets 0 to {info.set_count - 1} ({info.set_count} sets)",
                          info.set_count, limits.max_bound_descriptor_sets))
    return out


def _per_set(info: ShaderInfo, types) -> str:
    if info.set_count < 2:
        return ""
    each = [(s, sum(info.descriptors(s).get(t, 0) for t in types)) for s in range(info.set_count)]
    return " (" + ", ".join(f"set {s}: {n}" for s, n in each if n) + ")"


def workgroup_excesses(info: ShaderInfo, limits: DeviceLimits,
                       values: Optional[Mapping[int, SpecValue]] = None) -> list[Excess]:
    """Workgroup size, invocations and shared memory at the spec ``values`` (spec id ->
    value; ids left out keep their defaults): shared memory by ``reflect.shared_memory_at``."""
    values = values or {}
    size = tuple(values.get(sid, n) if sid is not None else n
                 for n, sid in zip(info.local_size, info.local_size_spec_ids))
    shared = shared_memory_at(info, values)
    out = [Excess("maxComputeWorkGroupSize", f"workgroup size {'xyz'[a]} = {size[a]}", size[a], most, axis=a)
           for a, most in enumerate(limits.max_compute_work_group_size) if size[a] > most]
    invocations = size[0] * size[1] * size[2]
    if invocations > limits.max_compute_work_group_invocations:
        out.append(Excess("maxComputeWorkGroupInvocations",
                          f"workgroup of {size[0]} x {size[1]} x {size[2]} = {invocations} invocations",
                          invocations, limits.max_compute_work_group_invocations))
    if shared > limits.max_compute_shared_memory_size:
        out.append(Excess("maxComputeSharedMemorySize", f"{shared} bytes of shared memory", shared,
                          limits.max_compute_shared_memory_size))
    return out


def feature_excesses(info: ShaderInfo, limits: DeviceLimits) -> list[Excess]:
    """The capabilities and extensions the blob declares that the device did not enable."""
    if not limits.checks_features:
        return []
    out = []
    for cap in info.capabilities:
        if cap in CAPABILITY_FEATURES:
            key, vk_name = CAPABILITY_FEATURES[cap]
            if key not in limits.features:
                out.append(Excess(key, f"{vk_name}, for OpCapability {cap}", True,
                                  "does not enable", feature="device feature"))
        elif cap in SUBGROUP_BITS:
            bit, flag = SUBGROUP_BITS[cap]
            if not limits.subgroup_operations & bit:
                out.append(Excess(f"VK_SUBGROUP_FEATURE_{flag}_BIT",
                                  f"subgroupSupportedOperations, for OpCapability {cap}", True,
                                  "lacks", feature="subgroup operation"))
            elif not limits.subgroup_stages & STAGE_COMPUTE:
                out.append(Excess("VK_SHADER_STAGE_COMPUTE_BIT",
                                  f"subgroupSupportedStages, for OpCapability {cap}", True,
                                  "lacks", feature="subgroup operations in the stage"))
    for ext in info.extensions:
        device_ext = EXTENSION_DEVICE_EXTENSIONS.get(ext)
        if device_ext is not None and device_ext not in limits.extensions:
            out.append(Excess(device_ext, f"for OpExtension {ext}", True,
                              "does not enable", feature="device extension"))
    return out


def excesses(info: ShaderInfo, limits: DeviceLimits,
             values: Optional[Mapping[int, SpecValue]] = None) -> list[Excess]:
    """Every limit, feature and extension the kernel needs past what the device gives, with the
    workgroup and shared memory at the spec ``values`` (the defaults where None)."""
    return (layout_excesses(info, limits) + workgroup_excesses(info, limits, values)
            + feature_excesses(info, limits))


def check_device(kernel: str, info: ShaderInfo, limits: DeviceLimits) -> None:
    """Refuse the kernel's layout and capabilities past the device: ``DeviceLimitError`` or
    ``DeviceFeatureError`` (the workgroup at its spec values: ``workgroup_excesses``, which
    trust.check_specialised words with where each figure comes from)."""
    found = layout_excesses(info, limits) + feature_excesses(info, limits)
    if found:
        first = found[0]
        raise (DeviceFeatureError if first.feature else DeviceLimitError)(first.message(kernel))
