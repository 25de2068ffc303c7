"""The memory-bandwidth bound of a decode token, measured rather than assumed.

Takes an open ``Device`` whose manifest has ``bandwidth_probe_read`` (the
library's read-dominated probe: 16-byte loads, grid-stride) and the decode
driver's token plans; gives ``measure_bandwidth(dev)``, the device's read
bandwidth in bytes per second (the best median of the probe at several group
counts over a buffer far larger than a GPU's last-level cache, device
timestamps around each dispatch, after keeping a GPU busy long enough to
leave its idle clock), and ``bytes_per_token(model, ...)``, the
bytes a decode token's dispatches bind (every weight once, the KV prefix the
attention reads, the activations), so that bytes / bandwidth is the least
time a token can take on that device. A time per token over that bound is
the "× roofline" figure of ``python -m benchmarks demo --roofline``.
"""

from __future__ import annotations

import statistics
import struct
import time
from typing import Sequence

from examples.llm.driver import CLOCK_WARM_UP_S   # the same clock ramp as the decode's own warm-up

PROBE = "bandwidth_probe_read"
PROBE_BLOCK = 256
GPU_BYTES = 1 << 30                # twenty times an H200's 50 MiB L2
CPU_BYTES = 64 << 20               # lavapipe: system memory, a loaded machine
GPU_GROUPS = (1024, 4096, 16384, 65535)
CPU_GROUPS = (8, 64, 512)
REPEATS = 5


def measure_bandwidth(dev, nbytes: int | None = None, groups: Sequence[int] | None = None,
                      repeats: int = REPEATS, warm_up_s: float = CLOCK_WARM_UP_S) -> dict:
    """{"bytes_per_s": best median, "by_groups": {groups: median}, "nbytes": n}: the read
    probe over one buffer, GPU time per pass."""
    cpu = dev.properties.get("type") == "cpu"
    if nbytes is None:
        largest_heap = max(dev.debug.memory_heap_bytes)
        nbytes = min(CPU_BYTES if cpu else GPU_BYTES, largest_heap // 8)
    nbytes -= nbytes % 16
    groups = tuple(groups or (CPU_GROUPS if cpu else GPU_GROUPS))
    probe = dev.kernel(PROBE, spec={"BLOCK_SIZE": PROBE_BLOCK})
    data = dev.buffer(nbytes, "roofline probe data")
    sink = dev.buffer(max(groups) * PROBE_BLOCK * 4, "roofline probe sink")
    try:
        # Written once first, so every page exists before the first timed pass.
        n = nbytes // 4
        dev.dispatch("fill_f32", [data], groups=(min(-(-n // 256), 65535), 1, 1),
                     push=struct.pack("<If", n, 1.0))
        push = struct.pack("<I", nbytes // 16)
        if not cpu:
            # A GPU at rest runs at a fraction of its clock (an H200's memory-bound kernels
            # read at 1.7 instead of 4.4 TB/s there): keep it busy first, or the bound
            # would be too loose and every ratio over it would flatter.
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < warm_up_s:
                for _ in range(8):
                    dev.dispatch(probe, [data, sink], groups=(max(groups), 1, 1), push=push)
                dev.synchronize()
        medians = {}
        for g in groups:
            dev.dispatch(probe, [data, sink], groups=(g, 1, 1), push=push)    # warm-up
            seconds = []
            for _ in range(repeats):
                with dev.gpu_timer() as t:
                    dev.dispatch(probe, [data, sink], groups=(g, 1, 1), push=push)
                dev.synchronize()
                seconds.append(t.ns * 1e-9)
            medians[g] = nbytes / statistics.median(seconds)
    finally:
        dev.synchronize()
        data.destroy()
        sink.destroy()
    return {"bytes_per_s": max(medians.values()), "by_groups": medians, "nbytes": nbytes,
            "probe": PROBE}


def plan_bytes(plan) -> int:
    """Bytes the plan's dispatches touch: every range each binds (once per dispatch), or
    its ``touched_bytes`` where it says it reads fewer (the attention's KV prefix)."""
    return sum(sum(a.size for a in d.args) if d.touched_bytes is None else d.touched_bytes for d in plan)


def bytes_per_token(model, prompt: Sequence[int], n_tokens: int) -> float:
    """The mean over the decode steps of ``plan_bytes`` (the KV prefix grows per step)."""
    first = len(prompt) - 1
    return sum(plan_bytes(model.token_plan(first + step, step)) for step in range(n_tokens)) / n_tokens
