"""The device: everything the host asks of the GPU goes through here.

Takes a manifest (default: the kernel library genspirv ships) and settings
from arguments or the environment; gives kernels, buffers, transfers and
dispatches recorded into in-flight slots, with a barrier recorded only where
the hazard tracker proves one is needed, and counters (``dev.stats``) that
say what the mechanism did.

Environment: GENSPIRV_DEVICE (index or name substring), GENSPIRV_BARRIERS
(smart|always|none), GENSPIRV_INFLIGHT (1..4), GENSPIRV_BATCH (dispatches per
batch), GENSPIRV_UPLOAD (staged|blocking), GENSPIRV_HOST_PROFILE=1.
"""

from __future__ import annotations

import atexit
import logging
import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import vulkan as vk

from ..errors import (
    BufferRangeError,
    DispatchError,
    GenspirvError,
)
from ..manifest import Manifest, load_manifest
from . import _vk
from ._vk import call, cmd_barrier, ffi
from .hazards import Access, Barrier, HazardTracker, Range, access_of, check_policy
from .kernel import BoundKernel, Kernel, check_dispatch_args, pack_spec
from .memory import Buffer, BufferView, StagingChunk, as_view
from .profile import HostProfile
from .submit import (
    InFlightGuard,
    Slot,
    TransferLane,
    crossover_bytes,
    inflight_from_env,
    use_transfer_queue,
)

COUNTERS = ("dispatches", "barriers", "barriers_skipped", "submits", "fence_waits",
            "staged_uploads", "blocking_uploads", "flushes", "drains", "replays",
            "transfer_queue_copies", "descriptor_updates")

DEFAULT_BATCH = 64
TIMER_QUERIES = 256
# Dispatch plans kept (kernel x bound buffers); past this the cache starts afresh.
MAX_PLANS = 4096
# Uploads smaller than this never consider the transfer queue (nor trigger its measurement).
TRANSFER_CANDIDATE_MIN = 64 << 10
CROSSOVER_PROBE_BYTES = 16 << 20

log = logging.getLogger("genspirv.runtime")

_SYNC_VALIDATION = vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
_DEVICE_TYPE_RANK = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
                     vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
                     vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2,
                     vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
_DEVICE_TYPE_NAME = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete",
                     vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated",
                     vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual",
                     vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu"}
_ALL_DEVICE_STAGES = frozenset({"compute", "transfer"})


@dataclass(frozen=True)
class DispatchPlan:
    """A kernel's bound buffers, checked: what every dispatch over them reuses."""

    views: tuple[BufferView, ...]
    access: Access                  # the dispatch's reads and writes, for the tracker
    descriptor_key: tuple           # (kernel, (buffer uid, offset, size) per binding)
    buffers: tuple[Buffer, ...]     # the distinct buffers bound


@dataclass(frozen=True)
class ValidationMessage:
    severity: str       # "error" or "warning"
    id: str             # e.g. "SYNC-HAZARD-READ-AFTER-WRITE"
    text: str

    @property
    def is_sync_hazard(self) -> bool:
        return self.id.startswith("SYNC-")


def default_manifest_path() -> Path:
    """The kernel library genspirv ships: package data in a wheel, the repo's in a checkout."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "_library" / "manifests" / "shaders.json"
    if shipped.is_file():
        return shipped
    return package.parent / "manifests" / "shaders.json"


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


def _push_bytes(push) -> bytes:
    if type(push) is bytes:
        return push
    if push is None:
        return b""
    if isinstance(push, (bytes, bytearray, memoryview)):
        return bytes(push)
    if isinstance(push, np.ndarray):
        return np.ascontiguousarray(push).tobytes()
    raise DispatchError(f"push data must be bytes or a numpy array, not {type(push).__name__}")


def _host_bytes(array) -> memoryview:
    if isinstance(array, np.ndarray):
        return memoryview(np.ascontiguousarray(array)).cast("B")
    if isinstance(array, (bytes, bytearray, memoryview)):
        return memoryview(array).cast("B")
    raise BufferRangeError(f"upload takes a numpy array or bytes, not {type(array).__name__}")


class GpuTimer:
    """GPU time of a region; ``ns`` waits for the region's work the first time it is read."""

    def __init__(self, device: "Device", first_query: int):
        self._device = device
        self._query = first_query
        self._ns: Optional[float] = None

    @property
    def ns(self) -> float:
        if self._ns is None:
            self._ns = self._device._read_timer(self._query)
        return self._ns


class Device:
    """One Vulkan device with a compute queue; see the module docstring and DESIGN.md."""

    def __init__(self, manifest=None, *, validation: bool = False, device: Optional[str] = None,
                 inflight: Optional[int] = None, batch: Optional[int] = None,
                 barriers: Optional[str] = None, upload: Optional[str] = None,
                 host_profile: Optional[bool] = None, transfer_queue: str = "auto"):
        env = os.environ
        self._closed = True   # until construction completes, close() has nothing to do
        self._manifest_arg = manifest
        self._manifest: Optional[Manifest] = None
        self.validation = validation
        self.validation_messages: list[ValidationMessage] = []
        self.inflight = inflight if inflight is not None else inflight_from_env(env.get("GENSPIRV_INFLIGHT"))
        if not 1 <= self.inflight <= 4:
            raise GenspirvError(f"inflight must be 1..4, not {self.inflight}")
        if batch is None:
            raw = env.get("GENSPIRV_BATCH") or str(DEFAULT_BATCH)
            try:
                batch = int(raw)
            except ValueError:
                raise GenspirvError(f"GENSPIRV_BATCH must be a whole number of dispatches, not {raw!r}") from None
        self.batch_size = batch
        if self.batch_size < 1:
            raise GenspirvError(f"batch size must be at least 1, not {self.batch_size}")
        self.upload_mode = upload or env.get("GENSPIRV_UPLOAD") or "staged"
        if self.upload_mode not in ("staged", "blocking"):
            raise GenspirvError(f"GENSPIRV_UPLOAD must be staged or blocking, not {self.upload_mode!r}")
        self._tracker = HazardTracker(check_policy(barriers or env.get("GENSPIRV_BARRIERS") or "smart"))
        if host_profile is None:
            host_profile = env.get("GENSPIRV_HOST_PROFILE", "") not in ("", "0")
        self._profile = HostProfile(host_profile)
        self._stats = {k: 0 for k in COUNTERS}
        if transfer_queue not in ("auto", "off", "same"):
            raise GenspirvError(f"transfer_queue must be auto, off or same, not {transfer_queue!r}")
        # "same" (tests only) lets the compute queue stand in for a transfer queue, so the
        # semaphore path runs on a device without a transfer-only family.
        self._transfer_mode = transfer_queue
        self._crossover: Optional[float] = None
        self.copy_crossover_info: Optional[dict] = None

        self._create_instance()
        try:
            self._pick_device(device if device is not None else env.get("GENSPIRV_DEVICE"))
            self._create_device()
        except BaseException:
            self._destroy_instance()
            raise
        self._closed = False
        self._guard = InFlightGuard()
        # Queries [0, 2 * inflight) are the slots' batch timestamps; the rest serve gpu_timer().
        self._timer_base = 2 * self.inflight
        pool_info = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                                             queryCount=self._timer_base + TIMER_QUERIES)
        self._query_pool = call(vk.vkCreateQueryPool, self.handle, pool_info, None)
        self._next_query = 0
        self._gpu_busy_ns = 0.0
        self._gpu_batches = 0
        self._slots = [Slot(i, self.handle, self.queue_family, self._mem_props, self._max_allocation,
                            self._families, self._query_pool) for i in range(self.inflight)]
        self._current = 0
        self._serial = 0              # last batch serial handed out (recording order)
        self._submit_seq = 0          # last submission number (queue order)
        self._completed = 0           # every submission numbered <= this has finished
        self._last_submitted: Optional[Slot] = None
        self._kernels: dict[str, Kernel] = {}
        self._bound: dict[tuple, BoundKernel] = {}
        self._by_name: dict[str, BoundKernel] = {}     # dev.kernel(name) without spec values
        self._plans: dict[tuple, DispatchPlan] = {}
        self._buffers: dict[int, Buffer] = {}
        self._graphs: list = []
        self._recording = None        # the replay Graph being captured, if any
        if self._profile.enabled:
            atexit.register(self._print_profile)

    # -- construction ---------------------------------------------------------

    def _create_instance(self) -> None:
        _vk.keep_drivers_loaded()
        app = vk.VkApplicationInfo(pApplicationName="genspirv", applicationVersion=1,
                                   pEngineName="genspirv", engineVersion=1,
                                   apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        layers, extensions = [], []
        next_chain = None
        if self.validation:
            available = {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}
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
        self._instance = call(vk.vkCreateInstance, info, None)
        self._messenger = None
        if self.validation:
            self._debug_callback = self._on_validation_message   # kept alive for the C side
            severities = (vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                          | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
            types = (vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                     | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)
            minfo = vk.VkDebugUtilsMessengerCreateInfoEXT(messageSeverity=severities, messageType=types,
                                                          pfnUserCallback=self._debug_callback)
            create = vk.vkGetInstanceProcAddr(self._instance, "vkCreateDebugUtilsMessengerEXT")
            self._messenger = call(create, self._instance, minfo, None)

    def _on_validation_message(self, severity, types, data, user_data):
        msg_id = ffi.string(data.pMessageIdName).decode() if data.pMessageIdName else ""
        text = ffi.string(data.pMessage).decode(errors="replace") if data.pMessage else ""
        sev = "error" if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT else "warning"
        self.validation_messages.append(ValidationMessage(sev, msg_id, text))
        return vk.VK_FALSE

    def _pick_device(self, wanted: Optional[str]) -> None:
        physical = call(vk.vkEnumeratePhysicalDevices, self._instance)
        props = [vk.vkGetPhysicalDeviceProperties(p) for p in physical]
        index = choose_physical_device([(p.deviceName, p.deviceType) for p in props], wanted)
        self._physical = physical[index]
        p = props[index]
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self._physical)
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
        self._timestamp_bits = families[self.queue_family].timestampValidBits
        limits = p.limits
        maint3 = vk.VkPhysicalDeviceMaintenance3Properties()
        props2 = vk.VkPhysicalDeviceProperties2(pNext=maint3)
        vk.vkGetPhysicalDeviceProperties2(self._physical, props2)
        self._max_allocation = maint3.maxMemoryAllocationSize or (1 << 62)
        self._limits = {
            "max_compute_work_group_count": tuple(limits.maxComputeWorkGroupCount),
            "max_compute_work_group_size": tuple(limits.maxComputeWorkGroupSize),
            "max_compute_work_group_invocations": limits.maxComputeWorkGroupInvocations,
            "max_storage_buffer_range": limits.maxStorageBufferRange,
            "max_uniform_buffer_range": limits.maxUniformBufferRange,
            "min_storage_buffer_offset_alignment": limits.minStorageBufferOffsetAlignment,
            "min_uniform_buffer_offset_alignment": limits.minUniformBufferOffsetAlignment,
            "max_push_constants_size": limits.maxPushConstantsSize,
            "max_memory_allocation_size": self._max_allocation,
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
            "limits": self._limits,
        }
        self._api_version = api
        self._mem_props = vk.vkGetPhysicalDeviceMemoryProperties(self._physical)

    def _create_device(self) -> None:
        f12 = vk.VkPhysicalDeviceVulkan12Features()
        f11 = vk.VkPhysicalDeviceVulkan11Features(pNext=f12)
        feats2 = vk.VkPhysicalDeviceFeatures2(pNext=f11)
        vk.vkGetPhysicalDeviceFeatures2(self._physical, feats2)
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
        }
        # Convenience names used by kernel libraries.
        self.features["has_16bit_storage"] = self.features["storage_buffer_16bit_access"]
        self.features["has_float16"] = self.features["shader_float16"]
        self.features["has_int8"] = self.features["shader_int8"]
        # Enable exactly the features kernels may need (not robustBufferAccess & co).
        e12 = vk.VkPhysicalDeviceVulkan12Features(
            shaderFloat16=f12.shaderFloat16, shaderInt8=f12.shaderInt8,
            storageBuffer8BitAccess=f12.storageBuffer8BitAccess,
            uniformAndStorageBuffer8BitAccess=f12.uniformAndStorageBuffer8BitAccess,
            storagePushConstant8=f12.storagePushConstant8, hostQueryReset=f12.hostQueryReset)
        e11 = vk.VkPhysicalDeviceVulkan11Features(
            pNext=e12, storageBuffer16BitAccess=f11.storageBuffer16BitAccess,
            uniformAndStorageBuffer16BitAccess=f11.uniformAndStorageBuffer16BitAccess,
            storagePushConstant16=f11.storagePushConstant16)
        ebase = vk.VkPhysicalDeviceFeatures(shaderInt16=base.shaderInt16, shaderInt64=base.shaderInt64,
                                            shaderFloat64=base.shaderFloat64)
        enabled = vk.VkPhysicalDeviceFeatures2(pNext=e11, features=ebase)
        priorities = [1.0]
        queue_infos = [vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                                  pQueuePriorities=priorities)]
        use_family = self.transfer_family is not None and self._transfer_mode == "auto"
        if use_family:
            queue_infos.append(vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.transfer_family,
                                                          queueCount=1, pQueuePriorities=priorities))
        info = vk.VkDeviceCreateInfo(pNext=enabled, queueCreateInfoCount=len(queue_infos),
                                     pQueueCreateInfos=queue_infos)
        self.handle = call(vk.vkCreateDevice, self._physical, info, None)
        self.queue = vk.vkGetDeviceQueue(self.handle, self.queue_family, 0)
        self.transfer_queue = None
        self._transfer_lane_family = None
        self._families: tuple[int, ...] = (self.queue_family,)
        if use_family:
            self.transfer_queue = vk.vkGetDeviceQueue(self.handle, self.transfer_family, 0)
            self._transfer_lane_family = self.transfer_family
            # Buffers shared by both families without ownership transfers.
            self._families = (self.queue_family, self.transfer_family)
        elif self._transfer_mode == "same":
            self.transfer_queue = self.queue
            self._transfer_lane_family = self.queue_family

    # -- public: settings and counters ----------------------------------------

    @property
    def stats(self) -> dict[str, int]:
        """A snapshot of the mechanism counters (names in DESIGN.md)."""
        return dict(self._stats)

    def reset_stats(self) -> None:
        for k in self._stats:
            self._stats[k] = 0

    @property
    def barrier_policy(self) -> str:
        return self._tracker.policy

    @barrier_policy.setter
    def barrier_policy(self, policy: str) -> None:
        self._tracker.policy = check_policy(policy)

    def set_barrier_policy(self, policy: str) -> None:
        self.barrier_policy = policy

    @property
    def manifest(self) -> Manifest:
        if self._manifest is None:
            m = self._manifest_arg
            self._manifest = m if isinstance(m, Manifest) else load_manifest(m or default_manifest_path())
        return self._manifest

    def gpu_busy(self) -> dict[str, float]:
        """GPU time of the batches finished so far (each batch's first to last timestamp):
        ``{"batches": n, "ms": total}``. Waits for nothing: batches still in flight count later."""
        for s in self._slots:
            if s.state == "submitted" and (s.seq <= self._completed or s.signalled()):
                self._retire(s)
        return {"batches": self._gpu_batches, "ms": self._gpu_busy_ns / 1e6}

    def profile(self) -> dict[str, dict[str, float]]:
        """Host time per phase of dispatch and flush (all zero unless profiling is on)."""
        return self._profile.table()

    def sync_hazards(self) -> list[ValidationMessage]:
        """Synchronization-validation reports collected so far."""
        return [m for m in self.validation_messages if m.is_sync_hazard]

    def in_flight(self) -> int:
        """Slots holding submitted batches not yet retired."""
        return sum(1 for s in self._slots if s.state == "submitted")

    # -- public: kernels and buffers ------------------------------------------

    def kernel(self, name: str, spec: Optional[dict] = None) -> BoundKernel:
        self._check_open()
        if not spec:
            bound = self._by_name.get(name)
            if bound is not None:
                return bound
        kernel = self._kernels.get(name)
        if kernel is None:
            manifest = self.manifest
            entry = manifest.entry(name)
            kernel = Kernel(self.handle, entry, manifest.read_blob(entry), self.features)
            self._kernels[name] = kernel
        data = pack_spec(kernel.entry, spec)
        key = (name, data.key)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = BoundKernel(kernel, data)
        if not data.key:
            self._by_name[name] = bound
        return bound

    def buffer(self, nbytes: int, name: str = "") -> Buffer:
        """A device-local buffer of ``nbytes`` bytes (contents undefined until written)."""
        self._check_open()
        buf = Buffer(self.handle, self._mem_props, nbytes, self._max_allocation, name, self._families)
        buf._release = self._free_buffer
        self._buffers[buf.uid] = buf
        return buf

    def _free_buffer(self, buf: Buffer) -> None:
        if buf.handle is None:
            return
        if not self._closed and any(g.command_buffer is not None and buf.uid in g.buffers
                                    for g in self._graphs):
            raise GenspirvError(f"{buf.name} is bound in a replay graph; destroy the graph "
                                f"(g.destroy()) before the buffer")
        if not self._closed and (any(s.state != "idle" and s.serial == buf.last_batch
                                     for s in self._slots) or buf.last_batch < 0):
            # Still referenced by recorded or submitted work (or a replay graph): let it finish.
            self.synchronize()
        self._buffers.pop(buf.uid, None)
        self._plans.clear()       # a plan is a promise its buffers are alive
        buf.destroy()

    # -- public: work ---------------------------------------------------------

    def dispatch(self, kernel, buffers: Sequence, groups, push=None) -> None:
        """Record one dispatch of ``kernel`` over ``buffers`` (in binding order)."""
        t0 = self._profile.start()
        if self._closed:
            self._check_open()
        bound = kernel if isinstance(kernel, BoundKernel) else self.kernel(kernel)
        k = bound.kernel
        if isinstance(buffers, (Buffer, BufferView)) or not isinstance(buffers, (list, tuple)):
            raise DispatchError(f"kernel {k.name}: buffers must be a list in binding order, "
                                f"not {type(buffers).__name__}")
        push_data = _push_bytes(push)
        # The checks of the bound buffers depend on nothing but the kernel and the
        # buffers: made once per combination, the plan is looked up after that.
        try:
            key = (k, *buffers)
            plan = self._plans.get(key)
        except TypeError:          # an unhashable item: the plan's checks name it
            key = plan = None
        if plan is None:
            check_dispatch_args(k.entry, len(buffers), len(push_data))
            groups = self._check_groups(k.name, groups)
            plan = self._plan(k, buffers)
            if key is not None:
                if len(self._plans) >= MAX_PLANS:
                    self._plans.clear()
                self._plans[key] = plan
        else:
            if len(push_data) != k.push_constant_size:
                check_dispatch_args(k.entry, len(buffers), len(push_data))
            groups = self._check_groups(k.name, groups)
        rec = self._recorder()
        t0 = self._profile.stop("bookkeeping", t0)
        self._track(rec, plan.access)
        t0 = self._profile.stop("record", t0)
        sets = self._descriptor_sets(rec, k, plan)
        t0 = self._profile.stop("descriptors", t0)
        bind = rec.bound_pipeline is not bound.pipeline
        rec.bound_pipeline = bound.pipeline
        _vk.cmd_dispatch(rec.command_buffer, bound.pipeline, bind, k.pipeline_layout, sets,
                         push_data, groups)
        rec.dispatches += 1
        rec.commands += 1
        self._stats["dispatches"] += 1
        serial = rec.serial
        for b in plan.buffers:
            b.last_batch = serial
        if rec is self._recording:
            rec.buffers.update((b.uid, b) for b in plan.buffers)
        t0 = self._profile.stop("record", t0)
        if rec is not self._recording and rec.dispatches >= self.batch_size:
            self.flush()

    def upload(self, dst, array) -> None:
        """Copy ``array`` into ``dst`` (buffer or view); ``array`` may be reused at once."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("upload inside dev.record(): captured work replays fixed data; "
                                "upload before g.run() instead")
        view = as_view(dst, "upload destination")
        data = _host_bytes(array)
        n = data.nbytes
        if n > view.size:
            raise BufferRangeError(f"upload of {n} bytes into {view.buffer.name} "
                                   f"[{view.offset}, {view.offset + view.size}) of {view.size} bytes")
        if n == 0:
            return
        if (self.transfer_queue is not None and self.upload_mode == "staged"
                and n >= TRANSFER_CANDIDATE_MIN
                and use_transfer_queue(n, self.copy_crossover(), True, self._buffer_idle(view.buffer))):
            self._upload_on_transfer_queue(view, data)
            return
        slot = self._batch()
        chunk, off = slot.staging.alloc(n)
        self._guard.use_staging(chunk.uid, off, off + n, slot.index)
        chunk.write(off, data)
        staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
        self._track(slot, Access("transfer", reads=(staged,),
                                 writes=(Range(view.buffer.uid, view.offset, n),)))
        _vk.cmd_copy(slot.command_buffer, chunk.handle, view.buffer.handle, off, view.offset, n)
        slot.commands += 1
        view.buffer.last_batch = slot.serial
        if self.upload_mode == "blocking":
            self._stats["blocking_uploads"] += 1
            self.flush()
            self._wait_for(slot)
        else:
            self._stats["staged_uploads"] += 1

    def copy(self, src, dst) -> None:
        """Device-side copy of all of ``src`` to the start of ``dst``."""
        self._check_open()
        s = as_view(src, "copy source")
        d = as_view(dst, "copy destination")
        if s.size > d.size:
            raise BufferRangeError(f"copy of {s.size} bytes from {s.buffer.name} into a "
                                   f"{d.size}-byte view of {d.buffer.name}")
        target = Range(d.buffer.uid, d.offset, s.size)
        if s.range.overlaps(target):
            raise BufferRangeError(f"copy within {s.buffer.name}: source [{s.offset}, "
                                   f"{s.offset + s.size}) overlaps destination "
                                   f"[{d.offset}, {d.offset + s.size})")
        rec = self._recorder()
        self._track(rec, Access("transfer", reads=(s.range,), writes=(target,)))
        _vk.cmd_copy(rec.command_buffer, s.buffer.handle, d.buffer.handle, s.offset, d.offset, s.size)
        rec.commands += 1
        s.buffer.last_batch = d.buffer.last_batch = rec.serial
        if rec is self._recording:
            rec.buffers.update({s.buffer.uid: s.buffer, d.buffer.uid: d.buffer})

    def download(self, src, dtype="float32", shape=None) -> np.ndarray:
        """The contents of ``src`` (buffer or view) as a new numpy array.

        Waits only for what it must: when the open batch has not touched the
        buffer, the copy goes out in its own small batch on another slot and
        the open batch stays open (``drains`` counts downloads that had to
        submit the open batch).
        """
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("download inside dev.record(): nothing captured has run yet")
        view = as_view(src, "download source")
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise BufferRangeError(f"download of {view.buffer.name}: {dtype!r} is not a numpy dtype") from None
        if view.size % dtype.itemsize:
            raise BufferRangeError(f"download of {view.size} bytes from {view.buffer.name} is not a "
                                   f"whole number of {dtype} items")
        open_slot = self._slots[self._current]
        touched_open = open_slot.state == "recording" and view.buffer.last_batch == open_slot.serial
        if touched_open or self.inflight == 1:
            raw = self._download_in_batch(view, drain=open_slot.state == "recording"
                                          and open_slot.commands > 0)
        else:
            raw = self._download_on_side(view)
        out = np.frombuffer(raw, dtype=dtype).copy()
        return out.reshape(shape) if shape is not None else out

    def copy_crossover(self) -> float:
        """Bytes above which an upload pays for the transfer queue; measured on first use."""
        if self._crossover is None:
            env = os.environ.get("GENSPIRV_COMPUTE_STREAM_COPY_MAX")
            if env:
                try:
                    self._crossover = float(int(env))
                except ValueError:
                    raise GenspirvError(f"GENSPIRV_COMPUTE_STREAM_COPY_MAX must be a byte count, "
                                        f"not {env!r}") from None
                self.copy_crossover_info = {"crossover_bytes": self._crossover,
                                            "source": "GENSPIRV_COMPUTE_STREAM_COPY_MAX"}
            else:
                self.copy_crossover_info = self._measure_crossover()
                self._crossover = self.copy_crossover_info["crossover_bytes"]
            log.info("%s: uploads above %d bytes go to the transfer queue (%s)",
                     self.properties["name"], self._crossover, self.copy_crossover_info)
        return self._crossover

    def flush(self) -> None:
        """Submit the open batch (if it holds any command) and return without waiting."""
        slot = self._slots[self._current]
        if slot.state == "recording" and slot.commands:
            self._submit(slot)

    def synchronize(self) -> None:
        """Submit what is open and wait until the device has finished all of it."""
        self._check_open()
        self.flush()
        last = self._last_submitted
        if last is not None:
            self._wait_for(last)

    @contextmanager
    def record(self):
        """Capture dispatches and copies for replay: ``with dev.record() as g: ...``; ``g.run()``."""
        from .replay import Graph
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("dev.record() is already capturing")
        graph = Graph(self)
        self._recording = graph
        try:
            yield graph
        except BaseException:
            self._recording = None
            graph.destroy()
            raise
        self._recording = None
        graph.finish()
        self._graphs.append(graph)

    @contextmanager
    def gpu_timer(self):
        """Time a region in GPU nanoseconds: ``with dev.gpu_timer() as t: ...``; then ``t.ns``."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("gpu_timer inside dev.record() is not supported")
        q = self._timer_base + self._next_query
        self._next_query = (self._next_query + 2) % TIMER_QUERIES
        slot = self._batch()
        vk.vkCmdResetQueryPool(slot.command_buffer, self._query_pool, q, 2)
        vk.vkCmdWriteTimestamp(slot.command_buffer, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               self._query_pool, q)
        slot.commands += 1
        timer = GpuTimer(self, q)
        yield timer
        slot = self._batch()
        vk.vkCmdWriteTimestamp(slot.command_buffer, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               self._query_pool, q + 1)
        slot.commands += 1

    def timestamps(self):
        """Alias of ``gpu_timer`` for benchmark code."""
        return self.gpu_timer()

    # -- closing --------------------------------------------------------------

    def close(self) -> None:
        """Wait for all work, free everything; safe to call twice."""
        if self._closed:
            return
        try:
            if self._recording is None:
                self.synchronize()
        finally:
            self._closed = True
            vk.vkDeviceWaitIdle(self.handle)
            for g in self._graphs:
                g.destroy()
            for slot in self._slots:
                slot.destroy()
            for k in self._kernels.values():
                k.destroy()
            for b in list(self._buffers.values()):
                b.destroy()
            self._buffers.clear()
            vk.vkDestroyQueryPool(self.handle, self._query_pool, None)
            vk.vkDestroyDevice(self.handle, None)
            self._destroy_instance()
            if self._profile.enabled:
                atexit.unregister(self._print_profile)
                self._print_profile()

    def _destroy_instance(self) -> None:
        if self._messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self._instance, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self._instance, self._messenger, None)
            self._messenger = None
        vk.vkDestroyInstance(self._instance, None)

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _print_profile(self) -> None:
        print(f"genspirv host profile ({self.properties['name']}):\n{self._profile.report()}",
              file=sys.stderr)

    # -- internals: batches and slots -----------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise GenspirvError("the device is closed")

    def _recorder(self):
        return self._recording if self._recording is not None else self._batch()

    def _batch(self) -> Slot:
        """The slot recording the open batch; opens one (retiring the slot) if needed."""
        slot = self._slots[self._current]
        if slot.state == "recording":
            return slot
        if slot.state == "submitted":
            self._retire(slot)
        self._serial += 1
        slot.begin(self._serial)
        return slot

    def _retire(self, slot: Slot) -> None:
        if not slot.signalled():
            self._wait_for(slot)
            slot.wait()     # returns at once; vkResetFences needs the fence itself signalled
        self._completed = max(self._completed, slot.seq)
        # The fence has signalled, so the batch's timestamps are written: read them
        # without the wait flag, which lavapipe implements as waiting for the whole
        # queue (every later batch too, 2.3 ms a retire in a 128-dispatch step).
        self._gpu_busy_ns += self._query_ns(slot.query_base, wait=False)
        self._gpu_batches += 1
        slot.retire(self._guard)

    def _wait_for(self, slot: Slot) -> None:
        """Block until ``slot``'s submission (and so every earlier one) has finished."""
        if slot.state != "submitted" or slot.seq <= self._completed:
            return
        t0 = self._profile.start()
        slot.wait()
        self._stats["fence_waits"] += 1
        self._profile.stop("wait", t0)
        self._completed = slot.seq

    def _submit(self, slot: Slot, extra_command_buffers: Sequence = ()) -> None:
        t0 = self._profile.start()
        slot.end()
        # The slot's own buffer always goes: it holds the batch's timestamps.
        cbs = [slot.command_buffer, *extra_command_buffers]
        waits = list(slot.transfer.waits) if slot.transfer is not None else []
        stages = [vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT] * len(waits)
        submit = vk.VkSubmitInfo(commandBufferCount=len(cbs), pCommandBuffers=cbs,
                                 waitSemaphoreCount=len(waits), pWaitSemaphores=waits or None,
                                 pWaitDstStageMask=stages or None)
        submits = [submit]
        call(vk.vkQueueSubmit, self.queue, 1, submits, slot.fence)
        if slot.transfer is not None:
            slot.transfer.waits.clear()
        slot.state = "submitted"
        self._submit_seq += 1
        slot.seq = self._submit_seq
        self._last_submitted = slot
        self._stats["submits"] += 1
        self._stats["flushes"] += 1
        self._current = (self._current + 1) % len(self._slots)
        self._profile.stop("submit", t0)

    def _track(self, rec, access: Access) -> None:
        if rec is self._recording:
            barrier, skipped = rec.track(access)
        else:
            barrier, skipped = self._tracker.access(access)
        if barrier is not None:
            self._record_barrier(rec, barrier)
        elif skipped:
            self._stats["barriers_skipped"] += 1

    def _record_barrier(self, rec, barrier: Barrier) -> None:
        cmd_barrier(rec.command_buffer, barrier)
        rec.commands += 1
        self._stats["barriers"] += 1

    def _plan(self, k: Kernel, buffers: Sequence) -> "DispatchPlan":
        """Check ``buffers`` against ``k``'s bindings and the device's limits."""
        views = tuple(as_view(b, f"kernel {k.name}, binding {k.bindings[i].name}")
                      for i, b in enumerate(buffers))
        for i, v in enumerate(views):
            self._check_binding_range(k, i, v)
        distinct = tuple({v.buffer.uid: v.buffer for v in views}.values())
        return DispatchPlan(views=views, access=access_of(k, [v.range for v in views]),
                            descriptor_key=(id(k), tuple((v.buffer.uid, v.offset, v.size) for v in views)),
                            buffers=distinct)

    def _descriptor_sets(self, rec, k: Kernel, plan: "DispatchPlan"):
        """Descriptor sets for this dispatch (a cdata array), or None without bindings.

        A set is written once, when it is allocated, and then only bound: the
        owner (slot or replay graph) keeps it, keyed by kernel and bound ranges,
        until it resets its pools, which a slot does only after its fence."""
        if not plan.views:
            return None
        pools = rec.descriptors
        sets = pools.cache.get(plan.descriptor_key)
        if sets is not None:
            return sets
        sets = ffi.new("VkDescriptorSet[]", len(k.set_layouts))
        for i, layout in enumerate(k.set_layouts):
            sets[i] = pools.allocate(layout)
        if rec is not self._recording:
            for pid in pools.used_ids:
                self._guard.use_pool(pid, rec.index)
        _vk.write_buffer_descriptors(self.handle, sets, k.bindings, k.descriptor_types, plan.views)
        self._stats["descriptor_updates"] += 1
        pools.cache[plan.descriptor_key] = sets
        return sets

    def _check_groups(self, name: str, groups) -> tuple[int, int, int]:
        limit = self._limits["max_compute_work_group_count"]
        if type(groups) is int and 0 < groups <= limit[0]:
            return (groups, 1, 1)
        if type(groups) is tuple and len(groups) == 3:
            x, y, z = groups
            if (type(x) is int and type(y) is int and type(z) is int
                    and 0 < x <= limit[0] and 0 < y <= limit[1] and 0 < z <= limit[2]):
                return groups     # the common case, checked in one pass
        if isinstance(groups, int) and not isinstance(groups, bool):
            groups = (groups, 1, 1)
        try:
            g = tuple(groups)
        except TypeError:
            raise DispatchError(f"kernel {name}: groups must be an int or (x, y, z), not {groups!r}") from None
        g = g + (1,) * (3 - len(g))
        if len(g) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) for x in g):
            raise DispatchError(f"kernel {name}: groups must be up to three integers, not {groups!r}")
        for axis, (x, m) in enumerate(zip(g, limit)):
            if x < 1:
                raise DispatchError(f"kernel {name}: {x} groups along {'xyz'[axis]}; a dispatch "
                                    f"needs at least 1")
            if x > m:
                raise DispatchError(f"kernel {name}: {x} groups along {'xyz'[axis]}, the device "
                                    f"allows at most {m}")
        return g

    def _check_binding_range(self, k: Kernel, i: int, v: BufferView) -> None:
        b = k.bindings[i]
        if b.type == "uniform_buffer":
            align, max_range = (self._limits["min_uniform_buffer_offset_alignment"],
                                self._limits["max_uniform_buffer_range"])
        else:
            align, max_range = (self._limits["min_storage_buffer_offset_alignment"],
                                self._limits["max_storage_buffer_range"])
        if v.offset % align:
            raise BufferRangeError(f"kernel {k.name}, binding {b.name}: view offset {v.offset} of "
                                   f"{v.buffer.name} is not a multiple of the device's {align}-byte "
                                   f"{b.type} offset alignment")
        if v.size > max_range:
            raise BufferRangeError(f"kernel {k.name}, binding {b.name}: view of {v.size} bytes, the "
                                   f"device binds at most {max_range} bytes as a {b.type}")

    # -- internals: downloads -------------------------------------------------

    def _download_in_batch(self, view: BufferView, drain: bool) -> bytes:
        slot = self._batch()
        n = view.size
        chunk, off = slot.staging.alloc(n)
        self._guard.use_staging(chunk.uid, off, off + n, slot.index)
        staged = Range(("staging", chunk.uid, slot.staging.generation), off, n)
        self._track(slot, Access("transfer", reads=(view.range,), writes=(staged,)))
        _vk.cmd_copy(slot.command_buffer, view.buffer.handle, chunk.handle, view.offset, off, n)
        slot.commands += 1
        self._track(slot, Access("host", reads=(staged,)))
        view.buffer.last_batch = slot.serial
        if drain:
            self._stats["drains"] += 1
        self.flush()
        self._wait_for(slot)
        return chunk.read(off, n)

    def _download_on_side(self, view: BufferView) -> bytes:
        """Copy out through the next slot, leaving the open batch (which never touched
        the buffer) open. The copy runs before the open batch on the queue, so it gets
        barriers of its own instead of the tracker's: the tracker's pending sets
        describe the open batch too, and a barrier recorded here would not order it."""
        side = self._slots[(self._current + 1) % len(self._slots)]
        if side.state == "submitted":
            self._retire(side)
        self._serial += 1
        side.begin(self._serial)
        n = view.size
        chunk, off = side.staging.alloc(n)
        self._guard.use_staging(chunk.uid, off, off + n, side.index)
        before = Barrier(src_stages=_ALL_DEVICE_STAGES, src_writes=_ALL_DEVICE_STAGES,
                         dst_stages=frozenset({"transfer"}), dst_reads=frozenset({"transfer"}),
                         dst_writes=frozenset({"transfer"}), kinds=frozenset({"RAW"}))
        after = Barrier(src_stages=frozenset({"transfer"}), src_writes=frozenset({"transfer"}),
                        dst_stages=frozenset({"host"}), dst_reads=frozenset({"host"}),
                        dst_writes=frozenset(), kinds=frozenset({"RAW"}))
        cb = side.command_buffer
        cmd_barrier(cb, before)
        _vk.cmd_copy(cb, view.buffer.handle, chunk.handle, view.offset, off, n)
        cmd_barrier(cb, after)
        side.commands += 3
        self._stats["barriers"] += 2
        # Later writes of this range must wait for the copy's read.
        self._tracker.add_pending(Access("transfer", reads=(view.range,)))
        t0 = self._profile.start()
        side.end()
        cbs = [cb]
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
        submits = [submit]
        call(vk.vkQueueSubmit, self.queue, 1, submits, side.fence)
        side.state = "submitted"
        self._stats["submits"] += 1
        self._profile.stop("submit", t0)
        self._submit_seq += 1
        side.seq = self._submit_seq
        self._last_submitted = side
        self._wait_for(side)
        data = chunk.read(off, n)
        return data

    def _run_graph(self, graph) -> None:
        from .replay import entry_barrier
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("g.run() inside dev.record(): replays cannot nest")
        # The graph's command buffer is not simultaneous-use: its previous run must be done.
        if graph.last_seq is not None and graph.last_seq > self._completed:
            self._wait_for(graph._last_slot)
        slot = self._batch()
        barrier, skipped = entry_barrier(self._tracker, graph)
        if barrier is not None:
            self._record_barrier(slot, barrier)
        elif skipped:
            self._stats["barriers_skipped"] += 1
        for access in graph.tail:
            self._tracker.add_pending(access)
        for buf in graph.buffers.values():
            buf.last_batch = slot.serial
        slot.keep_alive.append(graph)
        self._stats["replays"] += 1
        self._submit(slot, extra_command_buffers=[graph.command_buffer])
        graph._last_slot = slot
        graph.last_seq = slot.seq

    # -- internals: the transfer queue ----------------------------------------

    def _buffer_idle(self, buf: Buffer) -> bool:
        """No recorded or unfinished submitted work touches ``buf`` (nor a replay graph)."""
        if buf.last_batch < 0:
            return False
        for s in self._slots:
            if s.serial == buf.last_batch and (
                    s.state == "recording" or (s.state == "submitted" and s.seq > self._completed)):
                return False
        return True

    def _upload_on_transfer_queue(self, view: BufferView, data) -> None:
        """Copy on the transfer queue now; the open batch waits on its semaphore when it
        is submitted. The semaphore wait orders the copy before every later command, so
        its write is not left pending in the tracker."""
        n = data.nbytes
        slot = self._batch()
        if slot.transfer is None:
            slot.transfer = TransferLane(self.handle, self._transfer_lane_family)
        chunk, off = slot.staging.alloc(n)
        self._guard.use_staging(chunk.uid, off, off + n, slot.index)
        chunk.write(off, data)
        cb, sem = slot.transfer.next()
        _vk.cmd_copy(cb, chunk.handle, view.buffer.handle, off, view.offset, n)
        call(vk.vkEndCommandBuffer, cb)
        cbs, sems = [cb], [sem]
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs,
                                 signalSemaphoreCount=1, pSignalSemaphores=sems)
        submits = [submit]
        call(vk.vkQueueSubmit, self.transfer_queue, 1, submits, None)
        slot.transfer.waits.append(sem)
        slot.commands += 1          # the batch must be submitted to consume the semaphore
        view.buffer.last_batch = slot.serial
        self._stats["staged_uploads"] += 1
        self._stats["transfer_queue_copies"] += 1
        self._stats["submits"] += 1

    def _measure_crossover(self) -> dict:
        """Submit + semaphore overhead on the host clock, H2D bandwidth with GPU timestamps
        around a staged copy in the compute stream. Uses its own command pool, fence and
        memory; nothing open is submitted and no counter moves."""
        dev = self.handle
        pool = call(vk.vkCreateCommandPool, dev, vk.VkCommandPoolCreateInfo(queueFamilyIndex=self.queue_family), None)
        lane = TransferLane(dev, self._transfer_lane_family)
        fence = call(vk.vkCreateFence, dev, vk.VkFenceCreateInfo(), None)
        chunk = StagingChunk(dev, self._mem_props, CROSSOVER_PROBE_BYTES, self._max_allocation, self._families)
        target = Buffer(dev, self._mem_props, CROSSOVER_PROBE_BYTES, self._max_allocation,
                        "crossover probe", self._families)
        fences = [fence]
        try:
            overheads = []
            for _ in range(5):
                cb, sem = lane.next()
                call(vk.vkEndCommandBuffer, cb)
                cbs, sems = [cb], [sem]
                stages = [vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT]
                signal = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs,
                                         signalSemaphoreCount=1, pSignalSemaphores=sems)
                wait = vk.VkSubmitInfo(waitSemaphoreCount=1, pWaitSemaphores=sems, pWaitDstStageMask=stages)
                signals, waits = [signal], [wait]
                t0 = time.perf_counter()
                call(vk.vkQueueSubmit, self.transfer_queue, 1, signals, None)
                call(vk.vkQueueSubmit, self.queue, 1, waits, fence)
                overheads.append(time.perf_counter() - t0)
                call(vk.vkWaitForFences, dev, 1, fences, vk.VK_TRUE, _vk.NO_TIMEOUT)
                call(vk.vkResetFences, dev, 1, fences)
                lane.reset()
            alloc = vk.VkCommandBufferAllocateInfo(commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                   commandBufferCount=1)
            cb = call(vk.vkAllocateCommandBuffers, dev, alloc)[0]
            q = self._timer_base + self._next_query
            self._next_query = (self._next_query + 2) % TIMER_QUERIES
            seconds = []
            for _ in range(3):
                call(vk.vkResetCommandPool, dev, pool, 0)
                call(vk.vkBeginCommandBuffer, cb, vk.VkCommandBufferBeginInfo())
                vk.vkCmdResetQueryPool(cb, self._query_pool, q, 2)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self._query_pool, q)
                _vk.cmd_copy(cb, chunk.handle, target.handle, 0, 0, CROSSOVER_PROBE_BYTES)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self._query_pool, q + 1)
                call(vk.vkEndCommandBuffer, cb)
                cbs = [cb]
                submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
                submits = [submit]
                call(vk.vkQueueSubmit, self.queue, 1, submits, fence)
                call(vk.vkWaitForFences, dev, 1, fences, vk.VK_TRUE, _vk.NO_TIMEOUT)
                call(vk.vkResetFences, dev, 1, fences)
                seconds.append(self._query_ns(q) / 1e9)
        finally:
            call(vk.vkDeviceWaitIdle, dev)
            target.destroy()
            chunk.destroy()
            vk.vkDestroyFence(dev, fence, None)
            lane.destroy()
            vk.vkDestroyCommandPool(dev, pool, None)
        overhead = statistics.median(overheads)
        bandwidth = CROSSOVER_PROBE_BYTES / max(statistics.median(seconds), 1e-9)
        return {"overhead_us": overhead * 1e6, "h2d_gb_per_s": bandwidth / 1e9,
                "crossover_bytes": crossover_bytes(overhead, bandwidth), "source": "measured"}

    def _query_ns(self, first_query: int, wait: bool = True) -> float:
        data = ffi.new("uint64_t[2]")
        if wait or not _vk.query_results(self.handle, self._query_pool, first_query, 2, data):
            call(vk.vkGetQueryPoolResults, self.handle, self._query_pool, first_query, 2, 16, data, 8,
                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        mask = (1 << self._timestamp_bits) - 1 if self._timestamp_bits < 64 else (1 << 64) - 1
        return ((int(data[1]) - int(data[0])) & mask) * self._limits["timestamp_period_ns"]

    def _read_timer(self, first_query: int) -> float:
        self.synchronize()
        return self._query_ns(first_query)
