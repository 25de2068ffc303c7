"""The runtime suite's workloads: barrier policies, submission and host cost, every arm in one run.

Takes an open ``Device`` (kernels ``fill_f32``, ``scale_f32``, ``add_f32`` of
the shipped library, or any manifest with kernels of the same layouts) and
gives plain dicts of medians and ratios:

- ``run_barrier_bench(dev)``: GPU time (timestamps) and barriers per dispatch
  for the policies smart, always and none on (i) 1024 independent small
  dispatches, (ii) a 200-step read-after-write chain, (iii) a mixed graph.
- ``run_submission_bench(dev)``: host microseconds per dispatch (record +
  submit); time per step of 100 dispatches with 6 small uploads, blocking
  vs staged; 1 vs 2 in-flight slots; replay vs recording again.
- ``run_push_bench(dev)``: host CPU time per dispatch of ``scale_f32`` with
  its push constants named (``push={"n": n, "alpha": a}``) against the same
  values packed into bytes by the caller (``struct.pack``), and the packing
  alone (``struct.pack``, the named packer, and its checked path).
- ``run_host_bench(dev)``: host CPU time (``time.thread_time``) and wall time
  per dispatch of two shapes: ``mixed_graph`` (200 dispatches, one batch, one
  submit) and ``decode_step`` (128 dispatches over 128 buffer views, batches
  of 64: descriptor sets, submits and slot retirement included). On a CPU
  device the device's threads share the cores, so the thread's CPU time is
  the steadier figure.

Arms are paired and their order alternates from one repetition to the next
(``harness.paired_order``); every sample is returned beside the medians.
``python -m benchmarks runtime`` runs all three and records every sample.
"""

from __future__ import annotations

import statistics
import struct
import time
from typing import Callable

import numpy as np

from .harness import paired_order

POLICIES = ("smart", "always", "none")
LOCAL = 256


def _groups(n: int) -> int:
    return (n + LOCAL - 1) // LOCAL


class _Kernels:
    def __init__(self, dev, fill="fill_f32", scale="scale_f32", add="add_f32"):
        self.dev = dev
        self.fill_k, self.scale_k, self.add_k = dev.kernel(fill), dev.kernel(scale), dev.kernel(add)

    def fill(self, y, n, value):
        self.dev.dispatch(self.fill_k, [y], groups=_groups(n), push=struct.pack("<If", n, value))

    def scale(self, x, y, n, alpha):
        self.dev.dispatch(self.scale_k, [x, y], groups=_groups(n), push=struct.pack("<If", n, alpha))

    def add(self, a, b, c, n):
        self.dev.dispatch(self.add_k, [a, b, c], groups=_groups(n), push=struct.pack("<I", n))


# -- workloads (each returns the number of dispatches it recorded) ---------------


def independent(k: _Kernels, bufs, count=1024, n=256) -> int:
    """``count`` fills into disjoint 1 KiB views of one buffer: no hazard at all."""
    big = bufs["independent"]
    for i in range(count):
        k.fill(big.view(i * 4 * n, 4 * n), n, float(i))
    return count


def raw_chain(k: _Kernels, bufs, steps=200, n=1 << 16) -> int:
    """``steps`` scales, each reading what the previous one wrote."""
    a, b = bufs["chain"]
    for i in range(steps):
        src, dst = (a, b) if i % 2 == 0 else (b, a)
        k.scale(src, dst, n, 2.0 if i % 2 == 0 else 0.5)
    return steps


def mixed(k: _Kernels, bufs, layers=40, n=1 << 14) -> int:
    """Per layer: two independent readers of x, a join, a residual add (ping-pong)."""
    x, x2, t1, t2, t3 = bufs["mixed"]
    for i in range(layers):
        src, dst = (x, x2) if i % 2 == 0 else (x2, x)
        k.scale(src, t1, n, 0.5)
        k.scale(src, t2, n, 0.25)
        k.add(t1, t2, t3, n)
        k.add(t3, src, dst, n)
    return 4 * layers


WORKLOADS: dict[str, Callable] = {"independent_1024": independent, "raw_chain_200": raw_chain,
                                  "mixed_graph": mixed}


def _buffers(dev) -> dict:
    return {"independent": dev.buffer(1024 * 1024),
            "chain": (dev.buffer(4 << 16), dev.buffer(4 << 16)),
            "mixed": tuple(dev.buffer(4 << 14) for _ in range(5))}


def run_barrier_bench(dev, reps: int = 7, kernels: dict | None = None) -> dict:
    """GPU ms (median) and barriers per dispatch, per workload and policy."""
    k = _Kernels(dev, **(kernels or {}))
    bufs = _buffers(dev)
    saved_policy, saved_batch = dev.barrier_policy, dev.batch_size
    dev.batch_size = 1 << 20          # one command buffer per arm: time barriers, not submits
    samples = {w: {p: [] for p in POLICIES} for w in WORKLOADS}
    per_dispatch = {w: {} for w in WORKLOADS}
    try:
        for name, work in WORKLOADS.items():
            dev.barrier_policy = "smart"
            work(k, bufs)                 # warm-up: pipelines, descriptor pools, staging
            dev.synchronize()
            for rep in range(reps):
                for policy in paired_order(rep, POLICIES):
                    dev.barrier_policy = policy
                    before = dev.stats
                    with dev.gpu_timer() as t:
                        n = work(k, bufs)
                    gpu_ms = t.ns / 1e6
                    after = dev.stats
                    samples[name][policy].append(gpu_ms)
                    per_dispatch[name][policy] = (after["barriers"] - before["barriers"]) / n
    finally:
        dev.barrier_policy, dev.batch_size = saved_policy, saved_batch
    out = {"device": dev.properties["name"], "reps": reps, "workloads": {}}
    for name in WORKLOADS:
        med = {p: statistics.median(samples[name][p]) for p in POLICIES}
        out["workloads"][name] = {
            "gpu_ms_median": med,
            "gpu_ms_samples": samples[name],
            "barriers_per_dispatch": per_dispatch[name],
            "ratio_always_over_smart": med["always"] / med["smart"] if med["smart"] else None,
            "ratio_none_over_smart": med["none"] / med["smart"] if med["smart"] else None,
        }
    return out


# -- submission -------------------------------------------------------------------


def _step(k: _Kernels, dev, bufs, uploads=True) -> None:
    """One 'decode step': 6 small uploads, then 100 dispatches (a mixed graph), then sync."""
    if uploads:
        for i, b in enumerate(bufs["small"]):
            dev.upload(b, bufs["host"][i])
    mixed(k, bufs, layers=25, n=1 << 14)
    dev.synchronize()


def _paired(arms: dict[str, Callable[[], None]], reps: int, samples: dict | None = None) -> dict[str, float]:
    """Median wall ms per arm; arm order alternates between repetitions.
    ``samples``, if given, receives every run's ms per arm."""
    names = list(arms)
    times = samples if samples is not None else {}
    times.update({n: [] for n in names})
    for rep in range(reps):
        for n in paired_order(rep, names):
            t0 = time.perf_counter()
            arms[n]()
            times[n].append((time.perf_counter() - t0) * 1e3)
    return {n: statistics.median(v) for n, v in times.items()}


def run_submission_bench(dev, reps: int = 15, kernels: dict | None = None) -> dict:
    from genspirv.runtime import Device
    k = _Kernels(dev, **(kernels or {}))
    bufs = _buffers(dev)
    bufs["small"] = [dev.buffer(4096) for _ in range(6)]
    bufs["host"] = [np.full(1024, float(i), np.float32) for i in range(6)]
    out: dict = {"device": dev.properties["name"], "reps": reps}

    # Host cost of one dispatch, recording and submitting (the GPU's time excluded: one
    # batch per sample, so no slot has to be waited for inside the timed region).
    _step(k, dev, bufs)
    per = []
    saved_batch = dev.batch_size
    dev.batch_size = 1 << 20
    try:
        for _ in range(reps):
            dev.synchronize()
            t0 = time.perf_counter()
            n = mixed(k, bufs, layers=50, n=1 << 14)
            dev.flush()
            per.append((time.perf_counter() - t0) * 1e6 / n)
            dev.synchronize()
    finally:
        dev.batch_size = saved_batch
    out["host_us_per_dispatch_median"] = statistics.median(per)
    out["host_us_per_dispatch_samples"] = per

    # Blocking vs staged uploads, same device, switched per arm.
    saved = dev.upload_mode

    def arm(mode):
        def go():
            dev.upload_mode = mode
            _step(k, dev, bufs)
        return go
    before = dev.stats
    out["step_ms_upload_samples"] = {}
    step_ms = _paired({"staged": arm("staged"), "blocking": arm("blocking")}, reps,
                      out["step_ms_upload_samples"])
    dev.upload_mode = saved
    after = dev.stats
    out["step_ms_upload"] = step_ms
    out["step_ratio_blocking_over_staged"] = step_ms["blocking"] / step_ms["staged"]
    out["submits_per_step_both_arms"] = (after["submits"] - before["submits"]) / (2 * reps)

    # 1 vs 2 in-flight slots: two devices on the same physical device, batch 16 so a
    # step spans several batches (with one slot, recording waits for the previous batch).
    devs = {f"inflight_{i}": Device(manifest=dev.manifest, inflight=i, batch=16,
                                    device=dev.properties["name"])
            for i in (1, 2)}
    try:
        ks = {name: _Kernels(d, **(kernels or {})) for name, d in devs.items()}
        bs = {}
        for name, d in devs.items():
            b = _buffers(d)
            b["small"] = [d.buffer(4096) for _ in range(6)]
            b["host"] = bufs["host"]
            bs[name] = b
            _step(ks[name], d, b)
        out["step_ms_inflight_samples"] = {}
        out["step_ms_inflight"] = _paired(
            {name: (lambda name=name: _step(ks[name], devs[name], bs[name])) for name in devs}, reps,
            out["step_ms_inflight_samples"])
        out["step_ratio_inflight1_over_inflight2"] = (out["step_ms_inflight"]["inflight_1"]
                                                      / out["step_ms_inflight"]["inflight_2"])
    finally:
        for d in devs.values():
            d.close()

    # Replay vs recording again: the 100 dispatches of a step, captured once.
    with dev.record() as graph:
        mixed(k, bufs, layers=25, n=1 << 14)

    def replay():
        graph.run()
        dev.synchronize()
    out["step_ms_replay_samples"] = {}
    step_ms = _paired({"record": lambda: _step(k, dev, bufs, uploads=False), "replay": replay}, reps,
                      out["step_ms_replay_samples"])
    out["step_ms_replay"] = step_ms
    out["step_ratio_record_over_replay"] = step_ms["record"] / step_ms["replay"]
    return out


def run_host_bench(dev, samples: int = 15) -> dict:
    """Host CPU and wall microseconds per dispatch, per workload; every sample."""
    fill, scale, add = dev.kernel("fill_f32"), dev.kernel("scale_f32"), dev.kernel("add_f32")
    n = 1 << 14
    groups = _groups(n)
    x, x2, t1, t2, t3 = (dev.buffer(4 * n) for _ in range(5))
    big = dev.buffer(128 * 1024)
    views = [big.view(i * 1024, 1024) for i in range(128)]

    def mixed_graph() -> int:
        for i in range(50):
            src, dst = (x, x2) if i % 2 == 0 else (x2, x)
            dev.dispatch(scale, [src, t1], groups=groups, push=struct.pack("<If", n, 0.5))
            dev.dispatch(scale, [src, t2], groups=groups, push=struct.pack("<If", n, 0.25))
            dev.dispatch(add, [t1, t2, t3], groups=groups, push=struct.pack("<I", n))
            dev.dispatch(add, [t3, src, dst], groups=groups, push=struct.pack("<I", n))
        dev.flush()
        return 200

    def decode_step() -> int:
        for i, v in enumerate(views):
            dev.dispatch(fill, [v], groups=1, push=struct.pack("<If", 256, float(i)))
        dev.flush()
        return len(views)

    out = {"device": dev.properties["name"], "samples": samples, "workloads": {}}
    saved_batch = dev.batch_size
    try:
        for name, work, batch in (("mixed_graph", mixed_graph, 1 << 20), ("decode_step", decode_step, 64)):
            dev.batch_size = batch
            for _ in range(2):                     # warm-up: pipelines, pools, caches
                work()
                dev.synchronize()
            cpu, wall = [], []
            for _ in range(samples):
                dev.synchronize()                  # the device idle when a sample starts
                t0, c0 = time.perf_counter(), time.thread_time()
                count = work()
                c1, w1 = time.thread_time(), time.perf_counter()
                cpu.append((c1 - c0) * 1e6 / count)
                wall.append((w1 - t0) * 1e6 / count)
            dev.synchronize()
            out["workloads"][name] = {"cpu_us": cpu, "wall_us": wall}
    finally:
        dev.batch_size = saved_batch
    return out


def run_push_bench(dev, samples: int = 15, dispatches: int = 200, calls: int = 20000) -> dict:
    """Host CPU microseconds per dispatch and per packing, named push against bytes; every sample.

    Each dispatch pushes a new value of ``alpha``, so neither arm finds its bytes
    already pushed. One batch per sample; the device is idle when a sample starts."""
    from genspirv.runtime.push import packer_for
    scale = dev.kernel("scale_f32")
    n = 1 << 12
    x, y = dev.buffer(4 * n), dev.buffer(4 * n)
    groups = _groups(n)
    alphas = [1.0 + i / dispatches for i in range(dispatches)]

    def as_bytes() -> None:
        for a in alphas:
            dev.dispatch(scale, [x, y], groups=groups, push=struct.pack("<If", n, a))

    def named() -> None:
        for a in alphas:
            dev.dispatch(scale, [x, y], groups=groups, push={"n": n, "alpha": a})

    packer = packer_for(scale.entry)
    values = {"n": n, "alpha": 0.5}
    pack_arms = {"struct.pack": lambda: struct.pack("<If", n, 0.5),
                 "named": lambda: packer.pack(values),
                 "named, checked path": lambda: packer._checked(values)}
    out: dict = {"device": dev.properties["name"], "samples": samples, "dispatches": dispatches,
                 "calls": calls, "dispatch_cpu_us": {"bytes": [], "named": []},
                 "pack_cpu_us": {arm: [] for arm in pack_arms}}
    saved_batch = dev.batch_size
    dev.batch_size = 1 << 20
    try:
        for work in (as_bytes, named):             # warm-up: pipeline, plan, descriptor set
            work()
            dev.flush()
            dev.synchronize()
        arms = {"bytes": as_bytes, "named": named}
        for rep in range(samples):
            for arm in paired_order(rep, tuple(arms)):
                dev.synchronize()
                c0 = time.thread_time()
                arms[arm]()
                c1 = time.thread_time()
                dev.flush()
                out["dispatch_cpu_us"][arm].append((c1 - c0) * 1e6 / dispatches)
            for arm in paired_order(rep, tuple(pack_arms)):
                call = pack_arms[arm]
                c0 = time.thread_time()
                for _ in range(calls):
                    call()
                out["pack_cpu_us"][arm].append((time.thread_time() - c0) * 1e6 / calls)
        dev.synchronize()
    finally:
        dev.batch_size = saved_batch
    return out
