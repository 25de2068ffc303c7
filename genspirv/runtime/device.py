"""The device: the public face of the runtime; everything the host asks of the GPU.

Takes a manifest (default: the kernel library genspirv ships) and settings
from arguments or the environment (genspirv/settings.py); gives kernels,
buffers, transfers and dispatches recorded into in-flight slots, with a
barrier recorded only where the hazard tracker proves one is needed, and
counters (``dev.stats``) that say what the mechanism did.

The work is done elsewhere: context.py opens the Vulkan device,
dispatch_plan.py and memory.py check what a call is given, recorder.py records
every command (into the open batch's slot, or into a replay graph while
``dev.record()`` is open), submission.py owns the slots (slots.py) and every
queue submission, transfers.py the uploads, copies and downloads, hazards.py
the barrier decisions. A method here checks its arguments, takes the lock,
picks the recorder and calls it. ``dev.debug`` is a read-only snapshot of the
mechanism for tests and diagnostics.
"""

from __future__ import annotations

from .extra import missing_extra
if (_missing := missing_extra()) is not None:       # without numpy or vulkan: the one line naming the extra
    raise _missing

import atexit
import itertools
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Sequence

from .. import settings
from ..errors import ArgumentTypeError, GenspirvError
from ..manifest import Manifest, load_manifest
from . import transfers
from .args import count_option, describe_value
from .context import Context, ValidationMessage, choose_physical_device
from .hazards import HazardTracker, check_policy
from .kernel import BoundKernel, Kernel, check_dispatch_args, pack_spec
from .limits import DeviceLimits
from .memory import Buffer, view_arg
from .observe import DeviceDebug, GpuTimer, SlotDebug, snapshot
from .dispatch_plan import DispatchPlan, bound_views, check_groups, make_dispatch_plan, push_bytes
from .profile import HostProfile
from .replay import Graph, submit_run
from .sharing import check_owner, serialised, serialised_context
from .slots import SlotState
from .submission import Submission
from .transfers import UPLOAD_MODES, UploadMode

COUNTERS = ("dispatches", "barriers", "barriers_skipped", "submits", "fence_waits",
            "staged_uploads", "blocking_uploads", "flushes", "drains", "replays",
            "transfer_queue_copies", "descriptor_updates")

# Dispatch plans kept (kernel x bound buffers); past this the cache starts afresh.
MAX_PLANS = 4096
_RECORDING = SlotState.RECORDING

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


class Device:
    """One Vulkan device with a compute queue; see the module docstring and docs/GUIDE.md."""

    def __init__(self, manifest=None, *, validation: bool = False, device: Optional[str] = None,
                 inflight: Optional[int] = None, batch: Optional[int] = None,
                 barriers: Optional[str] = None, upload: Optional[UploadMode] = None,
                 host_profile: Optional[bool] = None, transfer_queue: str = "auto", robust: bool = False):
        self._closed = True   # until construction completes, close() has nothing to do
        self._lock = threading.RLock()   # every public method holds it: see sharing.py
        if manifest is not None and not isinstance(manifest, (str, os.PathLike, Manifest)):
            raise ArgumentTypeError(f"manifest must be a path to shaders.json or a Manifest, "
                                    f"not {describe_value(manifest)}")
        self._manifest_arg = manifest
        self._manifest: Optional[Manifest] = None
        self.validation = validation
        self.validation_messages: list[ValidationMessage] = []
        self.inflight = count_option(inflight if inflight is not None
                                     else settings.get("GENSPIRV_INFLIGHT"), "inflight", 1, 4)
        self.batch_size = batch if batch is not None else settings.get("GENSPIRV_BATCH")
        self.upload_mode = upload or settings.get("GENSPIRV_UPLOAD")
        if self.upload_mode not in UPLOAD_MODES:
            raise GenspirvError(f"upload must be staged or blocking, not {self.upload_mode!r}")
        self._tracker = HazardTracker(check_policy(barriers or settings.get("GENSPIRV_BARRIERS")))
        if host_profile is None:
            host_profile = settings.get("GENSPIRV_HOST_PROFILE")
        self._profile = HostProfile(host_profile)
        self._profiling = self._profile.enabled      # read at every dispatch
        self._stats = {k: 0 for k in COUNTERS}
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
            self._submission = Submission(ctx, self.inflight, self._stats, self._profile, self._tracker)
        except BaseException:
            ctx.destroy()
            raise
        self._closed = False
        self._kernels: dict[str, Kernel] = {}
        self._bound: dict[tuple, BoundKernel] = {}
        self._by_name: dict[str, BoundKernel] = {}     # dev.kernel(name) without spec values
        self._plans: dict[tuple, DispatchPlan] = {}
        self._buffers: dict[int, Buffer] = {}
        self._graphs: list[Graph] = []
        self._recording: Optional[Graph] = None        # the replay Graph being captured, if any
        self._crossover: Optional[float] = None
        self.copy_crossover_info: Optional[dict] = None
        if self._profile.enabled:
            atexit.register(self._print_profile)

    # -- public: settings, counters, inspection ------------------------------------

    @property
    @serialised
    def stats(self) -> dict[str, int]:
        """A snapshot of the mechanism counters (their names are stable: docs/RULES.md#stable-names)."""
        return dict(self._stats)

    @serialised
    def reset_stats(self) -> None:
        for k in self._stats:
            self._stats[k] = 0

    @property
    def batch_size(self) -> int:
        """Dispatches recorded into one batch before it is submitted (``GENSPIRV_BATCH``)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = count_option(value, "batch size", 1)

    @property
    def barrier_policy(self) -> str:
        return self._tracker.policy

    @barrier_policy.setter
    @serialised
    def barrier_policy(self, policy: str) -> None:
        self._tracker.policy = check_policy(policy)

    @property
    def device_limits(self) -> DeviceLimits:
        """What a kernel is checked against when it is created: the device's limits, subgroup
        operations, and the features (``dev.features``, read now) and extensions it enabled."""
        ctx = self._ctx
        return DeviceLimits.from_device(self._limits, self.features, ctx.subgroup, ctx.extensions)

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
        self._check_open()
        return snapshot(self._submission, plans=len(self._plans), max_plans=MAX_PLANS,
                        host_profile=self._profile.enabled, ctx=self._ctx, limits=self._limits)

    @serialised
    def gpu_busy(self) -> dict[str, float]:
        """GPU time of the batches finished so far (each batch's first to last timestamp):
        ``{"batches": n, "ms": total}``. Waits for nothing: batches still in flight count later."""
        self._check_open()
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
        if not isinstance(name, str):
            raise ArgumentTypeError(f"dev.kernel: the kernel's name must be a str, not {describe_value(name)}")
        if not spec:
            bound = self._by_name.get(name)
            if bound is not None:
                return bound
        kernel = self._kernels.get(name)
        if kernel is None:
            manifest = self.manifest
            entry = manifest.entry(name)
            kernel = Kernel(self.handle, entry, manifest.read_blob(entry), self.device_limits, owner=self)
            self._kernels[name] = kernel
        data = pack_spec(kernel.entry, spec)
        key = (name, data.identity)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = BoundKernel(kernel, data, checked=True)
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
        # cost half as much), every attribute read once into a local; the recorder
        # makes the Vulkan calls.
        lock = self._lock
        lock.acquire()
        try:
            t0 = self._profile.start() if self._profiling else 0
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
            if len(push) != plan.push_size:
                check_dispatch_args(bound.entry, len(buffers), len(push))
            if groups.__class__ is int and groups in self._groups_x:
                x = groups
                y = z = 1
            else:
                x, y, z = check_groups(bound.name, groups, self._limits["max_compute_work_group_count"])
            rec = self._recording
            if rec is not None:
                rec.dispatch(bound, plan, push, x, y, z, t0)
            else:
                slot = self._submission.open
                if slot.state is not _RECORDING:
                    slot = self._submission.batch()
                if slot.recorder.dispatch(bound, plan, push, x, y, z, t0) >= self._batch_size:
                    self.flush()
        finally:
            lock.release()

    def _bound_kernel(self, kernel) -> BoundKernel:
        if isinstance(kernel, BoundKernel):
            return kernel
        if not isinstance(kernel, str):
            raise ArgumentTypeError(f"dispatch: kernel must be a kernel's name or dev.kernel(...), "
                                    f"not {describe_value(kernel)}")
        return self.kernel(kernel)

    def _make_plan(self, bound: BoundKernel, key, buffers, push: bytes) -> DispatchPlan:
        """Check a kernel and buffers met for the first time; cache the plan (when hashable)."""
        k = bound.kernel
        if not isinstance(buffers, (list, tuple)):
            raise ArgumentTypeError(f"kernel {k.name}: buffers must be a list in binding order, "
                                    f"not {describe_value(buffers)}")
        check_owner(bound, self, f"dispatch on {self.label}")
        views = bound_views(k, buffers, self)
        check_dispatch_args(bound.entry, len(views), len(push))
        plan = make_dispatch_plan(bound, views, self._limits)
        if key is not None:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    @serialised
    def upload(self, dst, array) -> None:
        """Copy ``array`` into ``dst`` (buffer or view); ``array`` may be reused at once."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("upload inside dev.record(): captured work replays fixed data; "
                                "upload before g.run() instead")
        view = view_arg(dst, self, "upload destination")
        data = transfers.host_bytes(array, view)
        if data.nbytes:
            transfers.upload(self._submission, view, data, self.upload_mode, self.copy_crossover)

    @serialised
    def copy(self, src, dst) -> None:
        """Device-side copy of all of ``src`` to the start of ``dst``."""
        self._check_open()
        s = view_arg(src, self, "copy source")
        d = view_arg(dst, self, "copy destination")
        transfers.copy(s, d, self._recorder)

    @serialised
    def download(self, src, dtype="float32", shape=None):
        """The contents of ``src`` (buffer or view) as a new numpy array of ``dtype``
        (and ``shape``, if given). Waits only for what it must (see transfers.download)."""
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("download inside dev.record(): nothing captured has run yet")
        view = view_arg(src, self, "download source")
        dtype, shape = transfers.download_layout(view, dtype, shape)
        return transfers.as_array(transfers.download(self._submission, view), dtype, shape)

    @serialised
    def copy_crossover(self) -> float:
        """Bytes above which an upload pays for the transfer queue; measured on first use."""
        self._check_open()
        if self._crossover is None:
            self.copy_crossover_info = transfers.crossover(self._submission)
            self._crossover = self.copy_crossover_info["crossover_bytes"]
        return self._crossover

    @serialised
    def flush(self) -> None:
        """Submit the open batch (if it holds any command) and return without waiting."""
        self._check_open()
        self._submission.flush()

    @serialised
    def synchronize(self) -> None:
        """Submit what is open and wait until the device has finished all of it."""
        self._check_open()
        self._submission.flush()
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
        graph = Graph(self.handle, self.queue_family, self._tracker.policy, self._stats, self._profile,
                      run=self._run_graph, wait=self._wait_for_graph)
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
        sub.batch().recorder.timestamp(sub.query_pool, q, reset=True)
        yield GpuTimer(lambda: self._timer_ns(q))
        sub.batch().recorder.timestamp(sub.query_pool, q + 1)

    @serialised
    def _timer_ns(self, first_query: int) -> float:
        """A timer's GPU time, once everything recorded so far has finished."""
        self.synchronize()
        return self._submission.query_ns(first_query)

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

    def _recorder(self):
        """Where the next command goes: the capture's graph, or the open batch's slot."""
        return self._recording if self._recording is not None else self._submission.batch().recorder

    def _check_open(self) -> None:
        if self._closed:
            raise GenspirvError(f"the device is closed ({self.label}); open a new Device")

    # -- internals: replay (the graph's run and wait) ------------------------------------

    @serialised
    def _run_graph(self, graph: Graph) -> None:
        self._check_open()
        if self._recording is not None:
            raise GenspirvError("g.run() inside dev.record(): replays cannot nest")
        submit_run(self._submission, graph)

    @serialised
    def _wait_for_graph(self, graph: Graph) -> None:
        """Block until ``graph``'s latest run has finished (for its destroy)."""
        if (not self._closed and graph.last_seq is not None
                and graph.last_seq > self._submission.completed):
            self._submission.wait_for(graph.last_slot)
