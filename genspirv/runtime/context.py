"""Vulkan context: the instance, the physical device and the logical device.

Takes the validation switch, a device choice (index or name substring) and the
transfer-queue mode; gives a ``Context`` holding the instance (with the
validation messenger when asked), the chosen physical device's properties,
limits, features and memory properties, the logical device with its compute
queue, and the transfer queue when there is one. ``destroy()`` frees the
device and the instance. No batches, buffers or kernels live here.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

from dataclasses import dataclass
from typing import Callable, Literal, Optional, Sequence, Union, get_args

from ..errors import ArgumentTypeError, DeviceFeatureError, GenspirvError
from . import _vk
from ._vk import call, ffi, vk

# Device(transfer_queue=...): a transfer-only queue family when there is one, none,
# or (tests only) the compute queue standing in for one, so the semaphore path runs
# on a device without a transfer-only family.
TransferQueueMode = Literal["auto", "off", "same"]
TRANSFER_QUEUE_MODES: tuple[str, ...] = get_args(TransferQueueMode)
_SYNC_VALIDATION = vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
_DEVICE_TYPE_RANK = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
                     vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
                     vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2,
                     vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
# Device extensions a kernel's SPIR-V may need beyond Vulkan 1.2 (runtime/limits.py maps
# each SPIR-V extension and capability to them), enabled whenever the device has them.
# VK_KHR_cooperative_matrix is not among them: the Khronos validation layers of Vulkan
# 1.3.239 (Debian 12's) do not know its feature struct and report every device created
# with it as invalid, so a kernel that declares CooperativeMatrixKHR is refused at
# dev.kernel (the feature is never enabled) instead of running unvalidated.
_OPTIONAL_EXTENSIONS = ("VK_KHR_shader_non_semantic_info", "VK_KHR_shader_integer_dot_product")
_DEVICE_TYPE_NAME = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete",
                     vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated",
                     vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual",
                     vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu"}


@dataclass(frozen=True)
class ValidationMessage:
    severity: str       # "error" or "warning"
    id: str             # e.g. "SYNC-HAZARD-READ-AFTER-WRITE"
    text: str

    @property
    def is_sync_hazard(self) -> bool:
        return self.id.startswith("SYNC-")


def choose_physical_device(candidates: Sequence[tuple[str, int]], wanted: Optional[str]) -> int:
    """Index into ``candidates`` ((name, vk device type) pairs).

    ``wanted`` (GENSPIRV_DEVICE) is an index or a case-insensitive name
    substring; without it a discrete GPU wins, then integrated, virtual, CPU.
    """
    if not candidates:
        raise GenspirvError("no Vulkan physical device found")
    names = ", ".join(f"{i}: {n}" for i, (n, _) in enumerate(candidates))
    if wanted:
        if wanted.strip().isdigit():
            i = int(wanted)
            if i >= len(candidates):
                raise GenspirvError(f"GENSPIRV_DEVICE={wanted}: no such device (have {names})")
            return i
        hits = [i for i, (n, _) in enumerate(candidates) if wanted.lower() in n.lower()]
        if not hits:
            raise GenspirvError(f"GENSPIRV_DEVICE={wanted!r} matches no device (have {names})")
        return hits[0]
    return min(range(len(candidates)), key=lambda i: (_DEVICE_TYPE_RANK.get(candidates[i][1], 9), i))


class Context:
    """Instance, physical device and logical device of one ``Device``."""

    def __init__(self, *, validation: bool, wanted: Union[str, int, None], transfer_mode: TransferQueueMode,
                 on_message: Callable[[ValidationMessage], None], robust: bool = False):
        if transfer_mode not in TRANSFER_QUEUE_MODES:
            raise GenspirvError(f"transfer_queue must be auto, off or same, not {transfer_mode!r}")
        if wanted is not None:
            if isinstance(wanted, bool) or not isinstance(wanted, (str, int)):
                raise ArgumentTypeError(f"device must be an index or a name substring, not "
                                        f"{type(wanted).__name__} {wanted!r}")
            wanted = str(wanted)
        self.validation = validation
        self.robust = robust
        self._on_message = on_message
        self._transfer_mode = transfer_mode
        self._create_instance()
        try:
            self._pick_device(wanted)
            self._create_device()
        except BaseException:
            self._destroy_instance()
            raise

    # -- the instance and the validation messenger --------------------------------

    def _create_instance(self) -> None:
        _vk.keep_drivers_loaded()
        app = vk.VkApplicationInfo(pApplicationName="genspirv", applicationVersion=1,
                                   pEngineName="genspirv", engineVersion=1,
                                   apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        layers, extensions = [], []
        next_chain = None
        if self.validation:
            available = {p.layerName for p in call(vk.vkEnumerateInstanceLayerProperties)}
            if "VK_LAYER_KHRONOS_validation" not in available:
                raise GenspirvError("validation=True but VK_LAYER_KHRONOS_validation is not installed")
            layers = ["VK_LAYER_KHRONOS_validation"]
            extensions = ["VK_EXT_debug_utils", "VK_EXT_validation_features"]
            enabled = [_SYNC_VALIDATION]
            next_chain = vk.VkValidationFeaturesEXT(enabledValidationFeatureCount=1,
                                                    pEnabledValidationFeatures=enabled)
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app, enabledLayerCount=len(layers),
                                       ppEnabledLayerNames=layers or None,
                                       enabledExtensionCount=len(extensions),
                                       ppEnabledExtensionNames=extensions or None, pNext=next_chain)
        self.instance = call(vk.vkCreateInstance, info, None)
        self._messenger = None
        if self.validation:
            self._debug_callback = self._on_validation_message   # kept alive for the C side
            severities = (vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                          | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
            types = (vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                     | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)
            minfo = vk.VkDebugUtilsMessengerCreateInfoEXT(messageSeverity=severities, messageType=types,
                                                          pfnUserCallback=self._debug_callback)
            create = call(vk.vkGetInstanceProcAddr, self.instance, "vkCreateDebugUtilsMessengerEXT")
            self._messenger = call(create, self.instance, minfo, None)

    def _on_validation_message(self, severity, types, data, user_data):
        msg_id = ffi.string(data.pMessageIdName).decode() if data.pMessageIdName else ""
        text = ffi.string(data.pMessage).decode(errors="replace") if data.pMessage else ""
        sev = "error" if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT else "warning"
        self._on_message(ValidationMessage(sev, msg_id, text))
        return vk.VK_FALSE

    # -- the physical device: queues, limits, properties ----------------------------

    def _pick_device(self, wanted: Optional[str]) -> None:
        physical = call(vk.vkEnumeratePhysicalDevices, self.instance)
        props = [vk.vkGetPhysicalDeviceProperties(p) for p in physical]
        index = choose_physical_device([(p.deviceName, p.deviceType) for p in props], wanted)
        self.physical = physical[index]
        p = props[index]
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise GenspirvError(f"{p.deviceName}: no queue family supports compute")
        # A family with compute and without graphics is often a dedicated compute engine,
        # but the graphics+compute family is the one every driver tunes first.
        self.queue_family = compute[0]
        self.transfer_family = next(
            (i for i, f in enumerate(families)
             if f.queueFlags & vk.VK_QUEUE_TRANSFER_BIT
             and not f.queueFlags & (vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT)), None)
        self.timestamp_bits = families[self.queue_family].timestampValidBits
        limits = p.limits
        subgroup = vk.VkPhysicalDeviceSubgroupProperties()
        maint3 = vk.VkPhysicalDeviceMaintenance3Properties(pNext=subgroup)
        props2 = vk.VkPhysicalDeviceProperties2(pNext=maint3)
        vk.vkGetPhysicalDeviceProperties2(self.physical, props2)
        self.max_allocation = maint3.maxMemoryAllocationSize or (1 << 62)
        # A Vulkan 1.0 driver leaves the struct as it was: no subgroup operations.
        self.subgroup = {"size": subgroup.subgroupSize or 1,
                         "operations": subgroup.supportedOperations,
                         "stages": subgroup.supportedStages}
        self.limits = {
            "max_compute_work_group_count": tuple(limits.maxComputeWorkGroupCount),
            "max_compute_work_group_size": tuple(limits.maxComputeWorkGroupSize),
            "max_compute_work_group_invocations": limits.maxComputeWorkGroupInvocations,
            "max_storage_buffer_range": limits.maxStorageBufferRange,
            "max_uniform_buffer_range": limits.maxUniformBufferRange,
            "min_storage_buffer_offset_alignment": limits.minStorageBufferOffsetAlignment,
            "min_uniform_buffer_offset_alignment": limits.minUniformBufferOffsetAlignment,
            "max_push_constants_size": limits.maxPushConstantsSize,
            "max_compute_shared_memory_size": limits.maxComputeSharedMemorySize,
            "max_bound_descriptor_sets": limits.maxBoundDescriptorSets,
            "max_per_stage_descriptor_storage_buffers": limits.maxPerStageDescriptorStorageBuffers,
            "max_per_stage_descriptor_uniform_buffers": limits.maxPerStageDescriptorUniformBuffers,
            "max_per_stage_descriptor_sampled_images": limits.maxPerStageDescriptorSampledImages,
            "max_per_stage_descriptor_storage_images": limits.maxPerStageDescriptorStorageImages,
            "max_per_stage_descriptor_samplers": limits.maxPerStageDescriptorSamplers,
            "max_per_stage_resources": limits.maxPerStageResources,
            "max_descriptor_set_storage_buffers": limits.maxDescriptorSetStorageBuffers,
            "max_descriptor_set_uniform_buffers": limits.maxDescriptorSetUniformBuffers,
            "max_descriptor_set_sampled_images": limits.maxDescriptorSetSampledImages,
            "max_descriptor_set_storage_images": limits.maxDescriptorSetStorageImages,
            "max_descriptor_set_samplers": limits.maxDescriptorSetSamplers,
            "max_memory_allocation_size": self.max_allocation,
            "timestamp_period_ns": limits.timestampPeriod,
        }
        api = p.apiVersion
        self.properties = {
            "name": p.deviceName,
            "type": _DEVICE_TYPE_NAME.get(p.deviceType, "other"),
            "api_version": f"{vk.VK_VERSION_MAJOR(api)}.{vk.VK_VERSION_MINOR(api)}.{vk.VK_VERSION_PATCH(api)}",
            "vendor_id": p.vendorID,
            "device_id": p.deviceID,
            "queue_family": self.queue_family,
            "transfer_family": self.transfer_family,
            "limits": self.limits,
            "subgroup": self.subgroup,
        }
        self.mem_props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        heaps = self.mem_props
        self.memory_heap_bytes = tuple(heaps.memoryHeaps[i].size for i in range(heaps.memoryHeapCount))

    # -- the logical device and its queues --------------------------------------------

    def _create_device(self) -> None:
        available = {e.extensionName for e in call(vk.vkEnumerateDeviceExtensionProperties,
                                                    self.physical, None)}
        # Device extensions kernels may need, enabled where the device has them; the
        # feature structs of those with features are queried only then (else invalid).
        extensions = [e for e in _OPTIONAL_EXTENSIONS if e in available]
        dot = None
        chain = None
        if "VK_KHR_shader_integer_dot_product" in extensions:
            chain = dot = vk.VkPhysicalDeviceShaderIntegerDotProductFeatures(pNext=chain)
        f12 = vk.VkPhysicalDeviceVulkan12Features(pNext=chain)
        f11 = vk.VkPhysicalDeviceVulkan11Features(pNext=f12)
        feats2 = vk.VkPhysicalDeviceFeatures2(pNext=f11)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, feats2)
        base = feats2.features
        self.features = {
            "storage_buffer_16bit_access": bool(f11.storageBuffer16BitAccess),
            "uniform_and_storage_buffer_16bit_access": bool(f11.uniformAndStorageBuffer16BitAccess),
            "storage_push_constant_16": bool(f11.storagePushConstant16),
            "shader_float16": bool(f12.shaderFloat16),
            "shader_int8": bool(f12.shaderInt8),
            "storage_buffer_8bit_access": bool(f12.storageBuffer8BitAccess),
            "uniform_and_storage_buffer_8bit_access": bool(f12.uniformAndStorageBuffer8BitAccess),
            "storage_push_constant_8": bool(f12.storagePushConstant8),
            "shader_int16": bool(base.shaderInt16),
            "shader_int64": bool(base.shaderInt64),
            "shader_float64": bool(base.shaderFloat64),
            "host_query_reset": bool(f12.hostQueryReset),
            "robust_buffer_access": bool(base.robustBufferAccess),
            "vulkan_memory_model": bool(f12.vulkanMemoryModel),
            "vulkan_memory_model_device_scope": bool(f12.vulkanMemoryModelDeviceScope),
            "shader_buffer_int64_atomics": bool(f12.shaderBufferInt64Atomics),
            "shader_shared_int64_atomics": bool(f12.shaderSharedInt64Atomics),
            "shader_integer_dot_product": bool(dot is not None and dot.shaderIntegerDotProduct),
            "cooperative_matrix": False,    # never enabled: see _OPTIONAL_EXTENSIONS
        }
        self.extensions = frozenset(extensions)
        # Convenience names used by kernel libraries.
        self.features["has_16bit_storage"] = self.features["storage_buffer_16bit_access"]
        self.features["has_float16"] = self.features["shader_float16"]
        self.features["has_int8"] = self.features["shader_int8"]
        # Enable exactly the features kernels may need; robustBufferAccess only when asked
        # (a debugging aid: out-of-range accesses then read zero or in-range values and
        # writes are dropped, at a cost on every access).
        if self.robust and not base.robustBufferAccess:
            raise DeviceFeatureError(f"{self.properties['name']}: robust=True needs the "
                                     f"robustBufferAccess feature, which this device lacks")
        chain = None
        if dot is not None:
            chain = vk.VkPhysicalDeviceShaderIntegerDotProductFeatures(
                pNext=chain, shaderIntegerDotProduct=dot.shaderIntegerDotProduct)
        e12 = vk.VkPhysicalDeviceVulkan12Features(
            pNext=chain, vulkanMemoryModel=f12.vulkanMemoryModel,
            vulkanMemoryModelDeviceScope=f12.vulkanMemoryModelDeviceScope,
            shaderBufferInt64Atomics=f12.shaderBufferInt64Atomics,
            shaderSharedInt64Atomics=f12.shaderSharedInt64Atomics,
            shaderFloat16=f12.shaderFloat16, shaderInt8=f12.shaderInt8,
            storageBuffer8BitAccess=f12.storageBuffer8BitAccess,
            uniformAndStorageBuffer8BitAccess=f12.uniformAndStorageBuffer8BitAccess,
            storagePushConstant8=f12.storagePushConstant8, hostQueryReset=f12.hostQueryReset)
        e11 = vk.VkPhysicalDeviceVulkan11Features(
            pNext=e12, storageBuffer16BitAccess=f11.storageBuffer16BitAccess,
            uniformAndStorageBuffer16BitAccess=f11.uniformAndStorageBuffer16BitAccess,
            storagePushConstant16=f11.storagePushConstant16)
        ebase = vk.VkPhysicalDeviceFeatures(shaderInt16=base.shaderInt16, shaderInt64=base.shaderInt64,
                                            shaderFloat64=base.shaderFloat64,
                                            robustBufferAccess=vk.VK_TRUE if self.robust else vk.VK_FALSE)
        enabled = vk.VkPhysicalDeviceFeatures2(pNext=e11, features=ebase)
        priorities = [1.0]
        queue_infos = [vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                                  pQueuePriorities=priorities)]
        use_family = self.transfer_family is not None and self._transfer_mode == "auto"
        if use_family:
            queue_infos.append(vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.transfer_family,
                                                          queueCount=1, pQueuePriorities=priorities))
        info = vk.VkDeviceCreateInfo(pNext=enabled, queueCreateInfoCount=len(queue_infos),
                                     pQueueCreateInfos=queue_infos,
                                     enabledExtensionCount=len(extensions),
                                     ppEnabledExtensionNames=extensions or None)
        self.handle = call(vk.vkCreateDevice, self.physical, info, None)
        self.queue = vk.vkGetDeviceQueue(self.handle, self.queue_family, 0)
        self.transfer_queue = None
        self.transfer_lane_family = None
        self.families: tuple[int, ...] = (self.queue_family,)
        if use_family:
            self.transfer_queue = vk.vkGetDeviceQueue(self.handle, self.transfer_family, 0)
            self.transfer_lane_family = self.transfer_family
            # Buffers shared by both families without ownership transfers.
            self.families = (self.queue_family, self.transfer_family)
        elif self._transfer_mode == "same":
            # Tests only: the compute queue stands in for a transfer queue.
            self.transfer_queue = self.queue
            self.transfer_lane_family = self.queue_family

    # -- teardown -------------------------------------------------------------------

    def wait_idle(self) -> None:
        call(vk.vkDeviceWaitIdle, self.handle)

    def destroy(self) -> None:
        """Free the logical device and the instance (everything made on them first)."""
        vk.vkDestroyDevice(self.handle, None)
        self._destroy_instance()

    def _destroy_instance(self) -> None:
        if self._messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.instance, self._messenger, None)
            self._messenger = None
        vk.vkDestroyInstance(self.instance, None)
