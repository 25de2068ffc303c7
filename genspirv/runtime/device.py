"""The device: the public face of the runtime; everything the host asks of the GPU.

Takes a manifest (default: the kernel library genspirv ships) and settings
from arguments or the environment (genspirv/settings.py); gives kernels,
buffers, transfers and dispatches recorded into in-flight slots, with a
barrier recorded only where the hazard tracker proves one is needed, and
counters (``dev.stats``) that say what the mechanism did.

The work is done elsewhere: context.py opens the Vulkan device, submission.py
owns the slots and every queue submission, transfers.py the uploads, copies
and downloads, plan.py the checks of a dispatch's arguments, hazards.py the
barrier decisions. ``dev.debug`` is a read-only snapshot of the mechanism for
tests and diagnostics.
"""

from __future__ import annotations

import atexit
import itertools
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Sequence

from .. import settings
from ..errors import DispatchError, GenspirvError
from ..manifest import Manifest, load_manifest
from ._vk import (BARRIER_STRUCTS, BIND_POINT_COMPUTE, NULL, STAGE_COMPUTE, barrier_struct, cmd_barrier,
                  cmd_bind_descriptor_sets, cmd_bind_pipeline, cmd_dispatch, cmd_pipeline_barrier,
                  cmd_push_constants, vk)
from .context import Context, ValidationMessage, choose_physical_device
from .hazards import Access, Barrier, HazardTracker, check_policy
from .kernel import BoundKernel, Kernel, check_dispatch_args, pack_spec
from .memory import Buffer, BufferView
from .observe import DeviceDebug, GpuTimer, SlotDebug, snapshot
from .plan import DispatchPlan, check_groups, make_plan, push_bytes
from .profile import HostProfile
from .replay import Graph, submit_run
from .sharing import check_dispatch_owners, serialised, serialised_context
from .submission import Submission
from .transfers import Transfers

COUNTERS = ("dispatches", "barriers", "barriers_skipped", "submits", "fence_waits",
            "staged_uploads", "blocking_uploads", "flushes", "drains", "replays",
            "transfer_queue_copies", "descriptor_updates")

# Dispatch plans kept (kernel x bound buffers); past this the cache starts afresh.
MAX_PLANS = 4096

_device_numbers = itertools.count(1)

__all__ = ["Device", "GpuTimer", "ValidationMessage", "COUNTERS", "default_manifest_path",
           "choose_physical_device", "pack_spec", "DeviceDebug", "SlotDebug"]


def default_manifest_path() -> Path:
    """The kernel library genspirv ships: package data in a wheel, the repo's in a checkout."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "_library" / "manifests" / "shaders.json"
    if shipped.is_file():
        return shipped
    return package.parent / "manifests" / "shaders.json"


class Device(Transfers):
    """One Vulkan device with a compute queue; see the module docstring and docs/RULES.md."""

    def __init__(self, manifest=None, *, validation: bool = False, device: Optional[str] = None,
                 inflight: Optional[int] = None, batch: Optional[int] = None,
                 barriers: Optional[str] = None, upload: Optional[str] = None,
                 host_profile: Optional[bool] = None, transfer_queue: str = "auto",
                 robust: bool = False):
        self._closed = True   # until construction completes, close() has nothing to do
        self._lock = threading.RLock()   # every public method holds it: see sharing.py
        self._manifest_arg = manifest
        self._manifest: Optional[Manifest] = None
        self.validation = validation
        self.validation_messages: list[ValidationMessage] = []
        self.inflight = inflight if inflight is not None else settings.get("GENSPIRV_INFLIGHT")
        if not 1 <= self.inflight <= 4:
            raise GenspirvError(f"inflight must be 1..4, not {self.inflight}")
        self.batch_size = batch if batch is not None else settings.get("GENSPIRV_BATCH")
        if self.batch_size < 1:
            raise GenspirvError(f"batch size must be at least 1, not {self.batch_size}")
        self.upload_mode = upload or settings.get("GENSPIRV_UPLOAD")
        if self.upload_mode not in ("staged", "blocking"):
            raise GenspirvError(f"upload must be staged or blocking, not {self.upload_mode!r}")
        self._tracker = HazardTracker(check_policy(barriers or settings.get("GENSPIRV_BARRIERS")))
        if host_profile is None:
            host_profile = settings.get("GENSPIRV_HOST_PROFILE")
        self._profile = HostProfile(host_profile)
        self._profiling = self._profile.enabled      # read at every dispatch
        self._stats = {k: 0 for k in COUNTERS}
        if transfer_queue not in ("auto", "off", "same"):
            raise GenspirvError(f"transfer_queue must be auto, off or same, not {transfer_queue!r}")
        # "same" (tests only) lets the compute queue stand in for a transfer queue, so the
        # semaphore path runs on a device without a transfer-only family.
        self._ctx = ctx = Context(validation=validation,
                                  wanted=device if device is not None else settings.get("GENSPIRV_DEVICE"),
                                  transfer_mode=transfer_queue, on_message=self.validation_messages.append,
                                  robust=robust)
        self.handle, self.queue, self.transfer_queue = ctx.handle, ctx.queue, ctx.transfer_queue
        self.queue_family, self.transfer_family = ctx.queue_family, ctx.transfer_family
        self.properties, self.features, self._limits = ctx.properties, ctx.features, ctx.limits
        # The group counts along x the device allows: ``groups in`` it is one C-level test.
        self._groups_x = range(1, ctx.limits["max_compute_work_group_count"][0] + 1)
        self.label = f"Device#{next(_device_numbers)} ({ctx.properties['name']})"
        try:
            self._submission = Submission(ctx, self.inflight, self._stats, self._profile)
        except BaseException:
            ctx.destroy()
            raise
        self._closed = False
        self._kernels: dict[str, Kernel] = {}
        self._bound: dict[tuple, BoundKernel] = {}
        self._by_name: dict[str, BoundKernel] = {}     # dev.kernel(name) without spec values
        self._plans: dict[tuple, DispatchPlan] = {}
        self._buffers: dict[int, Buffer] = {}
        self._graphs: list = []
        self._recording = None        # the replay Graph being captured, if any
        if self._profile.enabled:
            atexit.register(self._print_profile)

    # -- public: settings, counters, inspection ------------------------------------

    @property
    @serialised
    def stats(self) -> dict[str, int]:
        """A snapshot of the mechanism counters (docs/RULES.md#stable-names)."""
        return dict(self._stats)

    @serialised
    def reset_stats(self) -> None:
        for k in self._stats:
            self._stats[k] = 0

    @property
    def barrier_policy(self) -> str:
        return self._tracker.policy

    @barrier_policy.setter
    @serialised
    def barrier_policy(self, policy: str) -> None:
        self._tracker.policy = check_policy(policy)

    @property
    def subgroup_size(self) -> int:
        """Invocations per subgroup (``VkPhysicalDeviceSubgroupProperties``; 1 when unknown)."""
        return self._ctx.subgroup["size"]

    @property
    def subgroup_operations(self) -> int:
        """``supportedOperations``: VkSubgroupFeatureFlags (0 when unknown)."""
        return self._ctx.subgroup["operations"]

    @property
    def subgroup_stages(self) -> int:
        """``supportedStages``: the shader stages with subgroup operations (0 when unknown)."""
        return self._ctx.subgroup["stages"]

    @property
    @serialised
    def manifest(self) -> Manifest:
        if self._manifest is None:
            m = self._manifest_arg
            self._manifest = m if isinstance(m, Manifest) else load_manifest(m or default_manifest_path())
        return self._manifest

    @property
    @serialised
    def debug(self) -> DeviceDebug:
        """A read-only snapshot of the slots, the plan cache and the physical device."""
        return snapshot(self._submission, plans=len(self._plans), max_plans=MAX_PLANS,
                        host_profile=self._profile.enabled, ctx=self._ctx, limits=self._limits)

    @serialised
    def gpu_busy(self) -> dict[str, float]:
        """GPU time of the batches finished so far (each batch's first to last timestamp):
        ``{"batches": n, "ms": total}``. Waits for nothing: batches still in flight count later."""
        sub = self._submission
        sub.retire_finished()
        return {"batches": sub.gpu_batches, "ms": sub.gpu_busy_ns / 1e6}

    @serialised
    def profile(self) -> dict[str, dict[str, float]]:
        """Host time per phase of dispatch and flush (all zero unless profiling is on)."""
        return self._profile.table()

    @serialised
    def sync_hazards(self) -> list[ValidationMessage]:
        """Synchronization-validation reports collected so far."""
        return [m for m in self.validation_messages if m.is_sync_hazard]

    @serialised
    def in_flight(self) -> int:
        """Slots holding submitted batches not yet retired."""
        return self._submission.in_flight()

    # -- public: kernels and buffers -------------------------------------------------

    @serialised
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
            kernel = Kernel(self.handle, entry, manifest.read_blob(entry), self.features, owner=self)
            self._kernels[name] = kernel
        data = pack_spec(kernel.entry, spec)
        key = (name, data.key)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = BoundKernel(kernel, data, self._limits)
        if not data.key:
            self._by_name[name] = bound
        return bound

    @serialised
    def buffer(self, nbytes: int, name: str = "") -> Buffer:
        """A device-local buffer of ``nbytes`` bytes (contents undefined until written)."""
        self._check_open()
        ctx = self._ctx
        buf = Buffer(self.handle, ctx.mem_props, nbytes, ctx.max_allocation, name, ctx.families,
                     owner=self)
        buf._release = self._free_buffer
        self._buffers[buf.uid] = buf
        return buf

    @serialised
    def _free_buffer(self, buf: Buffer) -> None:
        if buf.handle is None:
            return
        if not self._closed and any(g.command_buffer is not None and buf.uid in g.buffers
                                    for g in self._graphs):
            raise GenspirvError(f"{buf.name} is bound in a replay graph; destroy the graph "
                                f"(g.destroy()) before the buffer")
        if not self._closed and (self._submission.buffer_in_use(buf) or buf.last_batch < 0):
            # Still referenced by recorded or submitted work (or a replay graph): let it finish.
            self.synchronize()
        self._buffers.pop(buf.uid, None)
        self._plans.clear()       # a plan is a promise its buffers are alive
        buf.destroy()

    # -- public: work ------------------------------------------------------------------

    def dispatch(self, kernel, buffers: Sequence, groups, push=None) -> None:
        """Record one dispatch of ``kernel`` over ``buffers`` (in binding order)."""
        # The runtime's hot path: not @serialised, nor a with-statement (the plain calls
        # cost half as much), every attribute read once into a local, and the Vulkan
        # calls made here through the pre-bound entry points of _vk.
        lock = self._lock
        lock.acquire()
        try:
            profiling = self._profiling
            if profiling:
                t0 = self._profile.start()
            if self._closed:
                self._check_open()
            bound = kernel if kernel.__class__ is BoundKernel else self._bound_kernel(kernel)
            # The checks of the bound buffers depend on nothing but the kernel and the
            # buffers: made once per combination, the plan is looked up after that. A
            # hit proves ``buffers`` iterated to a list checked before, all still alive
            # (destroying a buffer drops every plan).
            try:
                key = (bound, *buffers)
                plan = self._plans.get(key)
            except TypeError:          # not iterable, or an unhashable item: the checks name it
                key = plan = None
            if push.__class__ is not bytes:
                push = push_bytes(push, bound.entry)
            if plan is None:
                plan = self._make_plan(bound, key, buffers, push)
            access, descriptor_key, layout, plan_buffers, push_size = plan.hot
            if len(push) != push_size:
                check_dispatch_args(bound.entry, len(buffers), len(push))
            if groups.__class__ is int and groups in self._groups_x:
                x = groups
                y = z = 1
            else:
                x, y, z = check_groups(bound.name, groups, self._limits["max_compute_work_group_count"])
            graph = self._recording
            if graph is None:
                rec = self._submission.open
                if rec.state != "recording":
                    rec = self._submission.batch()
                if profiling:
                    t0 = self._profile.stop("bookkeeping", t0)
                barrier, skipped = self._tracker.access(access)
            else:
                rec = graph
                if profiling:
                    t0 = self._profile.stop("bookkeeping", t0)
                barrier, skipped = graph.track(access)
            stats = self._stats
            cb = rec.command_buffer
            if barrier is not None:
                # _record_barrier, inlined: this is the step's per-dependency cost.
                made = BARRIER_STRUCTS.get(id(barrier)) or barrier_struct(barrier)
                cmd_pipeline_barrier(cb, made[0], made[1], 0, 1, made[2], 0, NULL, 0, NULL)
                rec.commands += 1
                stats["barriers"] += 1
            elif skipped:
                stats["barriers_skipped"] += 1
            if profiling:
                t0 = self._profile.stop("record", t0)
            pipeline = bound.pipeline
            if pipeline is not rec.bound_pipeline:
                cmd_bind_pipeline(cb, BIND_POINT_COMPUTE, pipeline)
                rec.bound_pipeline = pipeline
            if descriptor_key is not None:
                sets = rec.set_cache.get(descriptor_key)
                if sets is None:
                    sets = self._descriptor_sets(rec, bound.kernel, plan)
                if profiling:
                    t0 = self._profile.stop("descriptors", t0)
                # The same sets bound last stay bound (they belong to this kernel's
                # layout, so nothing recorded since can have disturbed them).
                if sets is not rec.bound_sets:
                    cmd_bind_descriptor_sets(cb, BIND_POINT_COMPUTE, layout, 0, len(sets), sets, 0, NULL)
                    rec.bound_sets = sets
            if push_size and (push is not rec.bound_push or layout is not rec.push_layout):
                # The same bytes object pushed last through the same layout is still in
                # place (binding a pipeline of that layout keeps push constants).
                # cffi passes a bytes object's own buffer as the const void*: no copy.
                cmd_push_constants(cb, layout, STAGE_COMPUTE, 0, push_size, push)
                rec.bound_push = push
                rec.push_layout = layout
            cmd_dispatch(cb, x, y, z)
            rec.commands += 1
            stats["dispatches"] += 1
            serial = rec.serial
            for b in plan_buffers:
                b.last_batch = serial
            if graph is not None:
                rec.dispatches += 1
                for b in plan_buffers:
                    graph.buffers[b.uid] = b
            else:
                n = rec.dispatches = rec.dispatches + 1
                if n >= self.batch_size:
                    self.flush()
            if profiling:
                self._profile.stop("record", t0)
        finally:
            lock.release()

    def _bound_kernel(self, kernel) -> BoundKernel:
        if isinstance(kernel, BoundKernel):
            return kernel
        return self.kernel(kernel)

    def _make_plan(self, bound: BoundKernel, key, buffers, push: bytes) -> DispatchPlan:
        """Check a kernel and buffers met for the first time; cache the plan (when hashable)."""
        k = bound.kernel
        if isinstance(buffers, (Buffer, BufferView)) or not isinstance(buffers, (list, tuple)):
            raise DispatchError(f"kernel {k.name}: buffers must be a list in binding order, "
                                f"not {type(buffers).__name__}")
        check_dispatch_owners(bound, buffers, self)
        check_dispatch_args(k.entry, len(buffers), len(push))
        plan = make_plan(k, buffers, self._limits)
        if key is not None:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    @serialised
    def flush(self) -> None:
        """Submit the open batch (if it holds any command) and return without waiting."""
        slot = self._submission.open_slot()
        if slot.state == "recording" and slot.commands:
            self._submission.submit(slot)

    @serialised
    def synchronize(self) -> None:
        """Submit what is open and wait until the device has finished all of it."""
        self._check_open()
        self.flush()
        last = self._submission.last_submitted
        if last is not None:
            self._submission.wait_for(last)

    @contextmanager
    @serialised_context
    def record(self):
        """Capture dispatches and copies for replay: ``with dev.record() as g: ...``; ``g.run()``."""
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
    @serialised_context
    def gpu_timer(self):
        """Time a region in GPU nanoseconds: ``with dev.gpu_timer() as t: ...``; then ``t.ns``."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("gpu_timer inside dev.record() is not supported")
        sub = self._submission
        q = sub.timer_queries()
        slot = sub.batch()
        vk.vkCmdResetQueryPool(slot.command_buffer, sub.query_pool, q, 2)
        vk.vkCmdWriteTimestamp(slot.command_buffer, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               sub.query_pool, q)
        slot.commands += 1
        timer = GpuTimer(self, q)
        yield timer
        slot = sub.batch()
        vk.vkCmdWriteTimestamp(slot.command_buffer, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               sub.query_pool, q + 1)
        slot.commands += 1

    # -- closing -----------------------------------------------------------------------

    @serialised
    def close(self) -> None:
        """Wait for all work, free everything; safe to call twice."""
        if self._closed:
            return
        try:
            if self._recording is None:
                self.synchronize()
        finally:
            self._closed = True
            self._ctx.wait_idle()
            for g in self._graphs:
                g.destroy()
            self._submission.destroy()
            for k in self._kernels.values():
                k.destroy()
            for b in list(self._buffers.values()):
                b.destroy()
            self._buffers.clear()
            self._ctx.destroy()
            if self._profile.enabled:
                atexit.unregister(self._print_profile)
                self._print_profile()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _print_profile(self) -> None:
        print(f"genspirv host profile ({self.properties['name']}):\n{self._profile.report()}",
              file=sys.stderr)

    # -- internals: recording ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise GenspirvError("the device is closed")

    def _recorder(self):
        return self._recording if self._recording is not None else self._submission.batch()

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

    def _descriptor_sets(self, rec, k: Kernel, plan: DispatchPlan):
        """Descriptor sets for this dispatch, or None without bindings (submit.DescriptorPools)."""
        if not plan.views:
            return None
        guard = None if rec is self._recording else (
            lambda pid: self._submission.guard.use_pool(pid, rec.index))
        sets, written = rec.descriptors.sets_for(k, plan, guard)
        if written:
            self._stats["descriptor_updates"] += 1
        return sets

    # -- internals: replay -------------------------------------------------------------

    @serialised
    def _run_graph(self, graph) -> None:
        if self._closed:
            self._check_open()
        if self._recording is not None:
            raise GenspirvError("g.run() inside dev.record(): replays cannot nest")
        submit_run(self, graph)

    @serialised
    def _wait_for_graph(self, graph) -> None:
        """Block until ``graph``'s latest run has finished (for its destroy)."""
        if graph.last_seq is not None and graph.last_seq > self._submission.completed:
            self._submission.wait_for(graph._last_slot)
