"""genspirv against wgpu-py: the host cost of the same compute work, in one run.

Takes an open genspirv ``Device`` and, where wgpu-py (0.32 or later, the
``bench`` extra) is installed and offers a Vulkan adapter of the same
physical device, a wgpu device on it; gives plain dicts of samples per arm.
Both arms run the same kernels: the library's ``fill_f32``, ``scale_f32`` and
``add_f32`` for genspirv, their WGSL equivalents below for wgpu (its SPIR-V
front end refuses the ``readonly`` storage blocks of the library's shaders),
with push constants on both sides (wgpu's "immediates").

Workloads (the buffers, views and wgpu bind groups are made before timing,
as a real program makes them once; push data is packed once too; genspirv
records each workload into one batch, as wgpu-py into one command buffer):

- ``record``: 1,024 fills into disjoint 1 KiB views of one buffer, recorded
  and not submitted: host CPU time of the calling thread per dispatch
  (wgpu: one compute pass, ``set_pipeline`` + ``set_bind_group`` +
  ``set_immediates`` + ``dispatch_workgroups`` each).
- ``record_checks`` (genspirv only): the same recording with the Vulkan
  calls of ``Device.dispatch`` left out (``vulkan_calls_left_out``): the
  runtime's own share of ``record`` (its checks, plan lookup, hazard tracker,
  counters); the rest of ``record`` is the binding's and the driver's. The
  batch this leaves behind holds none of those commands, so it is submitted
  empty and nothing is read from it.
- ``step``: 25 layers of a mixed graph (two scales of x, their sum, a
  residual add: 100 dispatches over 16 KiB buffers, 75 read-after-write
  dependencies), recorded, submitted and waited for: wall time per dispatch
  (the device's own time included, the same work in both arms) and the
  calling thread's CPU time per dispatch (on a CPU device such as lavapipe
  the device's threads run the kernels, so this is the host's share).
- ``step_split`` (genspirv only): the same step with a batch of
  ``SPLIT_BATCH`` dispatches (four submissions), so the device starts on the
  first part while the host records the rest: wall and CPU per dispatch.
- ``replay`` (genspirv only): the same step captured once (``dev.record()``)
  and resubmitted, waited for: wall and CPU time per dispatch.
- ``replay_amortised`` (genspirv only): ``REPLAY_RUNS`` runs of that capture
  submitted back to back (no wait between them), then one wait: wall and CPU
  time per dispatch over the whole. The CPU figure still holds every wait the
  host makes: the final one, and any for an in-flight slot to come free once
  the runs outnumber the slots (the GPU is then the bottleneck).

Each arm's results are compared with numpy once before anything is timed,
and each workload runs untimed as often as genspirv has in-flight slots (each
slot writes its descriptor sets once). Arms alternate from one repetition to
the next (``paired_order``).
"""

from __future__ import annotations

import os
import struct
import time
from contextlib import contextmanager
from typing import Optional

import numpy as np

from .harness import BenchError, paired_order

# The entry points Recorder.dispatch records with (genspirv.runtime._vk, bound once).
DISPATCH_CALLS = ("cmd_bind_pipeline", "cmd_bind_descriptor_sets", "cmd_push_constants", "cmd_dispatch",
                  "cmd_pipeline_barrier")

RECORD_DISPATCHES = 1024
FILL_N = 256                      # floats per fill: one 1 KiB view, one workgroup
STEP_LAYERS = 25                  # 4 dispatches a layer: a 100-dispatch step
STEP_N = 4096                     # 16 KiB a buffer: the device's share of a step stays small
REPLAY_RUNS = 10                  # runs submitted back to back in replay_amortised
SPLIT_BATCH = 25                  # dispatches per submission in step_split
LOCAL = 256

WGSL_FILL = """
struct Push { n: u32, value: f32 }
var<immediate> p: Push;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) { y[gid.x] = p.value; }
}
"""
WGSL_SCALE = """
struct Push { n: u32, alpha: f32 }
var<immediate> p: Push;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) { y[gid.x] = p.alpha * x[gid.x]; }
}
"""
WGSL_ADD = """
struct Push { n: u32 }
var<immediate> p: Push;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) { c[gid.x] = a[gid.x] + b[gid.x]; }
}
"""


def _groups(n: int) -> int:
    return (n + LOCAL - 1) // LOCAL


def _fill_pushes() -> list[bytes]:
    return [struct.pack("<If", FILL_N, float(i)) for i in range(RECORD_DISPATCHES)]


def _step_pushes() -> tuple[bytes, bytes, bytes]:
    return struct.pack("<If", STEP_N, 0.5), struct.pack("<If", STEP_N, 0.25), struct.pack("<I", STEP_N)


def _step_reference(layers: int = STEP_LAYERS) -> np.ndarray:
    """x after ``layers`` of the step from x = 1 (float32, as the kernels compute)."""
    x = np.ones(STEP_N, np.float32)
    for _ in range(layers):
        x = (np.float32(0.5) * x + np.float32(0.25) * x) + x
    return x


# -- genspirv ---------------------------------------------------------------------


class GenspirvArm:
    name = "genspirv"

    def __init__(self, dev):
        self.dev = dev
        # One batch per workload, as wgpu-py records one command buffer: no submit
        # (and no wait for a slot) inside the timed recording.
        self._saved_batch, dev.batch_size = dev.batch_size, 1 << 20
        self.fill, self.scale, self.add = dev.kernel("fill_f32"), dev.kernel("scale_f32"), dev.kernel("add_f32")
        self.big = dev.buffer(RECORD_DISPATCHES * 4 * FILL_N, name="peer.record")
        self.views = [self.big.view(i * 4 * FILL_N, 4 * FILL_N) for i in range(RECORD_DISPATCHES)]
        self.fill_pushes = _fill_pushes()
        self.x, self.x2, self.t1, self.t2, self.t3 = (dev.buffer(4 * STEP_N, name=f"peer.step{i}")
                                                      for i in range(5))
        self.graph = None

    def record(self) -> None:
        dispatch, fill, views, pushes = self.dev.dispatch, self.fill, self.views, self.fill_pushes
        for i in range(RECORD_DISPATCHES):
            dispatch(fill, [views[i]], 1, pushes[i])

    def after_record(self) -> None:
        self.dev.synchronize()

    def record_checks(self) -> None:
        with vulkan_calls_left_out():
            self.record()

    def _step_commands(self) -> None:
        dispatch = self.dev.dispatch
        scale, add, x, x2, t1, t2, t3 = self.scale, self.add, self.x, self.x2, self.t1, self.t2, self.t3
        p5, p25, pa = _step_pushes()
        g = _groups(STEP_N)
        for i in range(STEP_LAYERS):
            src, dst = (x, x2) if i % 2 == 0 else (x2, x)
            dispatch(scale, [src, t1], g, p5)
            dispatch(scale, [src, t2], g, p25)
            dispatch(add, [t1, t2, t3], g, pa)
            dispatch(add, [t3, src, dst], g, pa)

    def step(self) -> None:
        self._step_commands()
        self.dev.synchronize()

    def replay(self) -> None:
        self.graph.run()
        self.dev.synchronize()

    def step_split(self) -> None:
        dev = self.dev
        whole, dev.batch_size = dev.batch_size, SPLIT_BATCH
        try:
            self._step_commands()
            dev.synchronize()
        finally:
            dev.batch_size = whole

    def replay_amortised(self) -> None:
        run = self.graph.run
        for _ in range(REPLAY_RUNS):
            run()
        self.dev.synchronize()

    def capture(self) -> None:
        with self.dev.record() as graph:
            self._step_commands()
        self.graph = graph

    def check(self) -> Optional[str]:
        dev = self.dev
        self.record()
        got = dev.download(self.big, dtype="float32")
        want = np.repeat(np.arange(RECORD_DISPATCHES, dtype=np.float32), FILL_N)
        if not np.array_equal(got, want):
            return "genspirv: the record workload's fills are wrong"
        # The step ends in x2 after an odd number of layers (ping-pong).
        for start in (self.x, self.x2):
            dev.upload(start, np.ones(STEP_N, np.float32))
        self.step()
        out = self.x2 if STEP_LAYERS % 2 else self.x
        if not np.allclose(dev.download(out, dtype="float32"), _step_reference(), rtol=1e-6):
            return "genspirv: the step's result is wrong"
        return None

    def close(self) -> None:
        if self.graph is not None:
            self.dev.synchronize()
            self.graph.destroy()
        for b in (self.big, self.x, self.x2, self.t1, self.t2, self.t3):
            b.destroy()
        self.dev.batch_size = self._saved_batch


@contextmanager
def vulkan_calls_left_out():
    """Within: ``Device.dispatch`` does everything but its Vulkan calls (the recorder's).

    The commands it would have recorded are missing from the open batch, so the
    caller submits that batch (``dev.synchronize()``) before anything real is
    recorded again or read back.
    """
    from genspirv.runtime import recorder

    saved = {name: getattr(recorder, name) for name in DISPATCH_CALLS}
    try:
        for name in DISPATCH_CALLS:
            setattr(recorder, name, _no_call)
        yield
    finally:
        for name, fn in saved.items():
            setattr(recorder, name, fn)


def _no_call(*args) -> None:
    return None


# -- wgpu-py ----------------------------------------------------------------------


def wgpu_unavailable(device_name: str) -> Optional[str]:
    """Why the wgpu arm cannot run (a sentence), or None when it can."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")    # wgpu-native warns without one
    try:
        import wgpu
    except ImportError:
        return "wgpu-py is not installed (pip install 'genspirv[bench]')"
    version = tuple(int(p) for p in wgpu.__version__.split(".")[:2] if p.isdigit())
    if version < (0, 32):
        return f"wgpu-py {wgpu.__version__} is older than 0.32 (no set_immediates)"
    try:
        adapter = _wgpu_adapter(wgpu, device_name)
    except Exception as exc:               # wgpu-native's own failures: the peer is skipped
        return f"wgpu-py could not list its adapters: {type(exc).__name__}: {exc}"
    if adapter is None:
        return f"wgpu-py offers no Vulkan adapter named {device_name!r}"
    if "immediates" not in adapter.features:
        return f"wgpu-py's adapter {device_name!r} lacks the 'immediates' feature (push constants)"
    return None


def _wgpu_adapter(wgpu, device_name: str):
    for adapter in wgpu.gpu.enumerate_adapters_sync():
        info = adapter.info
        if info.get("backend_type") == "Vulkan" and info.get("device") == device_name:
            return adapter
    return None


class WgpuArm:
    name = "wgpu-py"

    def __init__(self, device_name: str):
        import wgpu
        self.wgpu = wgpu
        adapter = _wgpu_adapter(wgpu, device_name)
        self.device = d = adapter.request_device_sync(required_features=["immediates"],
                                                      required_limits={"max-immediate-size": 8})
        storage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.fill, fill_layout = self._pipeline(WGSL_FILL, ["storage"], 8)
        self.scale, scale_layout = self._pipeline(WGSL_SCALE, ["read-only-storage", "storage"], 8)
        self.add, add_layout = self._pipeline(WGSL_ADD, ["read-only-storage"] * 2 + ["storage"], 4)
        self.big = d.create_buffer(size=RECORD_DISPATCHES * 4 * FILL_N, usage=storage)
        view = 4 * FILL_N
        self.fill_groups = [self._bind(fill_layout, [(self.big, i * view, view)])
                            for i in range(RECORD_DISPATCHES)]
        self.fill_pushes = _fill_pushes()
        self.x, self.x2, self.t1, self.t2, self.t3 = (d.create_buffer(size=4 * STEP_N, usage=storage)
                                                      for _ in range(5))
        whole = 4 * STEP_N

        def bind(layout, *bufs):
            return self._bind(layout, [(b, 0, whole) for b in bufs])
        self.step_groups = []
        for i in range(2):
            src, dst = (self.x, self.x2) if i == 0 else (self.x2, self.x)
            self.step_groups.append((bind(scale_layout, src, self.t1), bind(scale_layout, src, self.t2),
                                     bind(add_layout, self.t1, self.t2, self.t3),
                                     bind(add_layout, self.t3, src, dst)))

    def _pipeline(self, source: str, kinds: list[str], push_size: int):
        wgpu, d = self.wgpu, self.device
        layout = d.create_bind_group_layout(entries=[
            {"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": k}}
            for i, k in enumerate(kinds)])
        pipeline_layout = d.create_pipeline_layout(bind_group_layouts=[layout], immediate_size=push_size)
        module = d.create_shader_module(code=source)
        pipeline = d.create_compute_pipeline(layout=pipeline_layout,
                                             compute={"module": module, "entry_point": "main"})
        return pipeline, layout

    def _bind(self, layout, buffers):
        return self.device.create_bind_group(layout=layout, entries=[
            {"binding": i, "resource": {"buffer": b, "offset": off, "size": size}}
            for i, (b, off, size) in enumerate(buffers)])

    def _wait(self) -> None:
        # GPUQueue.on_submitted_work_done_sync fails on wgpu-py 0.32 with its bundled
        # wgpu-native (a callback signature mismatch); a blocking device poll waits
        # for every submission just as well.
        self.device._poll_wait()

    def record(self) -> None:
        encoder = self.device.create_command_encoder()
        cp = encoder.begin_compute_pass()
        fill, groups, pushes = self.fill, self.fill_groups, self.fill_pushes
        for i in range(RECORD_DISPATCHES):
            cp.set_pipeline(fill)
            cp.set_bind_group(0, groups[i])
            cp.set_immediates(0, pushes[i], 0, 8)
            cp.dispatch_workgroups(1)
        cp.end()
        self._encoder = encoder

    def after_record(self) -> None:
        self.device.queue.submit([self._encoder.finish()])
        self._encoder = None
        self._wait()

    def step(self) -> None:
        encoder = self.device.create_command_encoder()
        cp = encoder.begin_compute_pass()
        p5, p25, pa = _step_pushes()
        g = _groups(STEP_N)
        scale, add = self.scale, self.add
        for i in range(STEP_LAYERS):
            b_scale1, b_scale2, b_sum, b_residual = self.step_groups[i % 2]
            for pipeline, group, push in ((scale, b_scale1, p5), (scale, b_scale2, p25),
                                          (add, b_sum, pa), (add, b_residual, pa)):
                cp.set_pipeline(pipeline)
                cp.set_bind_group(0, group)
                cp.set_immediates(0, push, 0, len(push))
                cp.dispatch_workgroups(g)
        cp.end()
        self.device.queue.submit([encoder.finish()])
        self._wait()

    def check(self) -> Optional[str]:
        self.record()
        self.after_record()
        got = np.frombuffer(self.device.queue.read_buffer(self.big), np.float32)
        want = np.repeat(np.arange(RECORD_DISPATCHES, dtype=np.float32), FILL_N)
        if not np.array_equal(got, want):
            return "wgpu-py: the record workload's fills are wrong"
        for start in (self.x, self.x2):
            self.device.queue.write_buffer(start, 0, np.ones(STEP_N, np.float32))
        self.step()
        out = self.x2 if STEP_LAYERS % 2 else self.x
        got = np.frombuffer(self.device.queue.read_buffer(out), np.float32)
        if not np.allclose(got, _step_reference(), rtol=1e-6):
            return "wgpu-py: the step's result is wrong"
        return None

    def close(self) -> None:
        self._wait()
        self.device.destroy()


# -- the paired run -----------------------------------------------------------------


def run_peer_bench(dev, reps: int = 11) -> dict:
    """Samples per workload and arm (µs per dispatch), arms alternating; wgpu-py
    joins when ``wgpu_unavailable`` says nothing against it."""
    name = dev.properties["name"]
    arms = [GenspirvArm(dev)]
    skipped = wgpu_unavailable(name)
    try:
        if skipped is None:
            try:
                arms.append(WgpuArm(name))
            except Exception as exc:       # wgpu-native's own failures: the peer is skipped
                skipped = f"wgpu-py could not open {name!r}: {type(exc).__name__}: {exc}"
        for arm in arms:
            problem = arm.check()
            if problem:
                raise BenchError(f"bench runtime: {problem}")
        arms[0].capture()
        # Warm-up: every in-flight slot of genspirv's writes its descriptor sets once
        # (later batches only bind them), wgpu-py's allocators settle.
        for _ in range(max(2, dev.inflight)):
            for arm in arms:
                arm.record()
                arm.after_record()
                arm.step()
            arms[0].step_split()
            arms[0].replay()
            arms[0].replay_amortised()
        samples: dict = {"record": {}, "record_checks": {}, "step": {}, "step_cpu": {}, "step_split": {}, "step_split_cpu": {},
                         "replay": {}, "replay_cpu": {}, "replay_amortised": {}, "replay_amortised_cpu": {}}
        by_name = {a.name: a for a in arms}
        per_step = 4 * STEP_LAYERS

        def timed(case: str, arm_name: str, run, per: int, wall: bool = True) -> None:
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            run()
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            if wall:
                samples[case].setdefault(arm_name, []).append((w1 - w0) / 1e3 / per)
            samples[case + "_cpu" if wall else case].setdefault(arm_name, []).append((c1 - c0) / 1e3 / per)

        for rep in range(reps):
            for arm_name in paired_order(rep, list(by_name)):
                arm = by_name[arm_name]
                timed("record", arm_name, arm.record, RECORD_DISPATCHES, wall=False)
                arm.after_record()
                timed("step", arm_name, arm.step, per_step)
            timed("record_checks", "genspirv", arms[0].record_checks, RECORD_DISPATCHES, wall=False)
            arms[0].after_record()
            timed("step_split", "genspirv", arms[0].step_split, per_step)
            timed("replay", "genspirv", arms[0].replay, per_step)
            timed("replay_amortised", "genspirv", arms[0].replay_amortised, REPLAY_RUNS * per_step)
        return {"device": name, "reps": reps, "replay_runs": REPLAY_RUNS, "split_batch": SPLIT_BATCH, "samples_us_per_dispatch": samples,
                "wgpu": None if skipped else "ran", "wgpu_skipped": skipped}
    finally:
        for arm in arms:
            arm.close()
