"""The device-limit check, pure: a kernel's reflection against a frozen ``DeviceLimits``.

Each limit is exceeded by one and met exactly (the negative control), and the
refusal is one line naming the kernel, the Vulkan limit, the kernel's value and
the device's. No Vulkan: the records are built by hand, the limits are
lavapipe's where a figure is needed.
"""

from __future__ import annotations

import dataclasses

import pytest

from genspirv.errors import DeviceFeatureError, DeviceLimitError, RuntimeCheckError, WorkgroupLimitError
from genspirv.reflect import Binding, ShaderInfo
from genspirv.runtime.limits import (VULKAN_1_2_REQUIRED, DeviceLimits, check_device, excesses,
                                     feature_excesses, layout_excesses, workgroup_excesses)

LAVAPIPE = DeviceLimits(
    max_push_constants_size=128, max_bound_descriptor_sets=8,
    max_per_stage_descriptor_storage_buffers=32, max_per_stage_descriptor_uniform_buffers=15,
    max_per_stage_descriptor_sampled_images=128, max_per_stage_descriptor_storage_images=64,
    max_per_stage_descriptor_samplers=32, max_per_stage_resources=128,
    max_descriptor_set_storage_buffers=256, max_descriptor_set_uniform_buffers=256,
    max_descriptor_set_sampled_images=256, max_descriptor_set_storage_images=256,
    max_descriptor_set_samplers=256, max_compute_shared_memory_size=32768,
    max_compute_work_group_size=(1024, 1024, 1024), max_compute_work_group_invocations=1024,
    subgroup_operations=0xBF, subgroup_stages=0x30,
    features=frozenset({"shader_int64", "shader_float16", "storage_buffer_16bit_access"}),
    extensions=frozenset({"VK_KHR_shader_non_semantic_info"}))


def info(buffers=0, uniforms=0, sets=1, push=0, caps=("Shader",), exts=(), local=(64, 1, 1),
         shared=0, kind="storage_buffer", count=1) -> ShaderInfo:
    bindings = [Binding(i % sets, i // sets, f"b{i}", kind, count, "read_write", True, True)
                for i in range(buffers)]
    bindings += [Binding(0, 1000 + i, f"u{i}", "uniform_buffer", 1, "read", True, False)
                 for i in range(uniforms)]
    return ShaderInfo(entry_point="main", local_size=local, local_size_spec_ids=(None, None, None),
                      bindings=tuple(sorted(bindings, key=lambda b: (b.set, b.binding))),
                      spec_constants=(), push_constant_size=push, shared_memory=shared,
                      capabilities=tuple(sorted(caps)), extensions=tuple(sorted(exts)))


def refusal(exc_type, kernel_info, limits=LAVAPIPE) -> str:
    with pytest.raises(exc_type) as caught:
        check_device("k", kernel_info, limits)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("kernel k")
    return message


def test_push_constants_past_the_limit_are_refused_and_at_it_accepted():
    assert refusal(DeviceLimitError, info(push=512)) == (
        "kernel k: 512 bytes of push constants, the device allows at most 128 (maxPushConstantsSize)")
    check_device("k", info(push=128), LAVAPIPE)


def test_storage_buffers_per_stage():
    message = refusal(DeviceLimitError, info(buffers=300))
    assert message == ("kernel k: 300 storage buffers in the compute stage, the device allows at "
                       "most 32 (maxPerStageDescriptorStorageBuffers)")
    check_device("k", info(buffers=32), LAVAPIPE)
    # An array of descriptors counts each; a runtime-sized one counts one.
    assert "33 storage buffers" in refusal(DeviceLimitError, info(buffers=1, count=33))
    check_device("k", info(buffers=32, count=0), LAVAPIPE)


def test_descriptors_per_set_and_per_stage_name_each_set():
    assert "(set 0: 17, set 1: 16)" in refusal(DeviceLimitError, info(buffers=33, sets=2))
    # A device whose per-layout total is below its per-stage figure: the total is named.
    tight = dataclasses.replace(LAVAPIPE, max_descriptor_set_storage_buffers=20)
    assert "(maxDescriptorSetStorageBuffers)" in refusal(DeviceLimitError, info(buffers=21), tight)
    check_device("k", info(buffers=20), tight)


def test_uniform_buffers_images_and_resources():
    assert "(maxPerStageDescriptorUniformBuffers)" in refusal(DeviceLimitError, info(uniforms=16))
    check_device("k", info(uniforms=15), LAVAPIPE)
    assert "65 storage images" in refusal(DeviceLimitError, info(buffers=65, kind="storage_image"))
    assert "33 storage images" in refusal(DeviceLimitError, info(buffers=33, kind="storage_texel_buffer"),
                                          dataclasses.replace(LAVAPIPE,
                                                              max_per_stage_descriptor_storage_images=32))
    # Combined image samplers count as sampled images and as samplers.
    assert "(maxPerStageDescriptorSamplers)" in refusal(
        DeviceLimitError, info(buffers=33, kind="combined_image_sampler"))
    many = dataclasses.replace(LAVAPIPE, max_per_stage_resources=40)
    assert refusal(DeviceLimitError, info(buffers=30, uniforms=11), many).endswith(
        "41 descriptors in the compute stage, the device allows at most 40 (maxPerStageResources)")
    check_device("k", info(buffers=30, uniforms=10), many)


def test_descriptor_sets():
    assert refusal(DeviceLimitError, info(buffers=9, sets=9)).startswith(
        "kernel k: descriptor sets 0 to 8 (9 sets), the device allows at most 8 (maxBoundDescriptorSets)")
    check_device("k", info(buffers=8, sets=8), LAVAPIPE)


def test_capabilities_need_what_the_device_enabled():
    check_device("k", info(caps=("Shader", "Int64", "Float16", "StorageBuffer16BitAccess")), LAVAPIPE)
    message = refusal(DeviceFeatureError, info(caps=("Shader", "Int8")))
    assert message == ("kernel k needs device feature shader_int8 (shaderInt8, for OpCapability Int8), "
                       "which this device does not enable")
    for cap, key in [("CooperativeMatrixKHR", "cooperative_matrix"),
                     ("DotProductInput4x8BitPacked", "shader_integer_dot_product"),
                     ("StorageBuffer8BitAccess", "storage_buffer_8bit_access"),
                     ("Float64", "shader_float64")]:
        assert f"device feature {key} " in refusal(DeviceFeatureError, info(caps=("Shader", cap)))
        with_it = dataclasses.replace(LAVAPIPE, features=LAVAPIPE.features | {key})
        check_device("k", info(caps=("Shader", cap)), with_it)


def test_subgroup_operations_need_the_device_bits_and_the_compute_stage():
    check_device("k", info(caps=("GroupNonUniform", "GroupNonUniformArithmetic")), LAVAPIPE)
    message = refusal(DeviceFeatureError, info(caps=("GroupNonUniformClustered",)),
                      dataclasses.replace(LAVAPIPE, subgroup_operations=0x3F))
    assert message == ("kernel k needs subgroup operation VK_SUBGROUP_FEATURE_CLUSTERED_BIT "
                       "(subgroupSupportedOperations, for OpCapability GroupNonUniformClustered), which "
                       "this device lacks")
    assert "needs subgroup operations in the stage VK_SHADER_STAGE_COMPUTE_BIT" in refusal(
        DeviceFeatureError, info(caps=("GroupNonUniform",)), dataclasses.replace(LAVAPIPE, subgroup_stages=0x10))


def test_extensions_need_the_device_extension():
    check_device("k", info(exts=("SPV_KHR_non_semantic_info",)), LAVAPIPE)
    assert refusal(DeviceFeatureError, info(exts=("SPV_KHR_cooperative_matrix",))) == (
        "kernel k needs device extension VK_KHR_cooperative_matrix (for OpExtension "
        "SPV_KHR_cooperative_matrix), which this device does not enable")
    check_device("k", info(exts=("SPV_KHR_16bit_storage",)), LAVAPIPE)    # core in Vulkan 1.2


def test_workgroup_and_shared_memory_at_the_values_given():
    assert workgroup_excesses(info(local=(1024, 1, 1), shared=32768), LAVAPIPE) == []
    limits = [e.limit for e in workgroup_excesses(info(local=(2048, 1, 1), shared=32772), LAVAPIPE)]
    assert limits == ["maxComputeWorkGroupSize", "maxComputeWorkGroupInvocations",
                      "maxComputeSharedMemorySize"]
    # At the spec values the kernel is created with, not its defaults: spec id 3 sizes y, and
    # shared float t[N] with N spec id 0 (default 16) is (mul (len (spec 0 16)) 4) bytes.
    sized = dataclasses.replace(info(local=(64, 1, 1), shared=64), local_size_spec_ids=(None, 3, None),
                                shared_memory_spec=("mul", ("len", ("spec", 0, 16)), 4))
    assert workgroup_excesses(sized, LAVAPIPE) == []
    assert workgroup_excesses(sized, LAVAPIPE, {3: 64})[0].value == 4096
    assert workgroup_excesses(sized, LAVAPIPE, {0: 10000})[0].value == 40000
    assert workgroup_excesses(sized, LAVAPIPE, {0: 8192}) == []          # 32768 bytes: at the limit


def test_vulkan_1_2_minimums_check_limits_not_features():
    found = excesses(info(buffers=5, local=(256, 1, 1), caps=("Shader", "CooperativeMatrixKHR")),
                     VULKAN_1_2_REQUIRED)
    assert [e.limit for e in found] == ["maxPerStageDescriptorStorageBuffers",
                                        "maxComputeWorkGroupSize", "maxComputeWorkGroupInvocations"]
    assert excesses(info(buffers=4, local=(128, 1, 1), push=128, shared=16384), VULKAN_1_2_REQUIRED) == []
    assert feature_excesses(info(caps=("Int8",)), VULKAN_1_2_REQUIRED) == []


def test_from_device_takes_the_runtime_limits_mapping():
    mapping = {f.name: getattr(LAVAPIPE, f.name) for f in dataclasses.fields(LAVAPIPE)
               if f.name.startswith("max_")}
    mapping["timestamp_period_ns"] = 1.0          # other keys of dev.properties["limits"]
    made = DeviceLimits.from_device(mapping, {"shader_int64": True, "shader_int8": False},
                                    {"operations": 0xBF, "stages": 0x30}, ["VK_KHR_shader_non_semantic_info"])
    assert made == dataclasses.replace(LAVAPIPE, features=frozenset({"shader_int64"}))
    assert layout_excesses(info(buffers=33), made)[0].most == 32


def test_the_errors_are_runtime_checks():
    assert issubclass(DeviceLimitError, RuntimeCheckError)
    assert issubclass(WorkgroupLimitError, DeviceLimitError)
