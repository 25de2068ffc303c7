"""Value tests on a real GPU (skipped unless Vulkan offers a non-CPU device).

Lavapipe runs dispatches one after another and hides a missing barrier; a
GPU overlaps them. Under ``smart`` every result here must be exact; under
the test-only policy ``none`` at least one of the same workloads must come
out wrong, or the tests could not tell a barrier from its absence.

Run: ``bash tools/gpu_run.sh`` (writes logs and JSON to $OUT when set).
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.runtime import Device  # noqa: E402

N = 4 << 20          # 4M floats: big enough that dispatches overlap on a GPU


def _gpu_present() -> bool:
    # GENSPIRV_GPU_TESTS_ANY_DEVICE=1 runs them on a CPU device too, to check the tests
    # themselves (the "none" test is then expected to fail: lavapipe hides missing barriers).
    try:
        with Device(manifest=rt.MANIFEST) as d:
            return d.properties["type"] != "cpu" or os.environ.get("GENSPIRV_GPU_TESTS_ANY_DEVICE") == "1"
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _gpu_present(), reason="no GPU Vulkan device")

RESULTS: dict = {}


def _record(name, out, ref, dev):
    wrong = int(np.count_nonzero(out != ref))
    RESULTS[name] = {"wrong": wrong, "of": int(ref.size), "stats": dev.stats,
                     "device": dev.properties["name"], "policy": dev.barrier_policy}
    return wrong


def _workloads(dev):
    """(name, result, reference) for each workload, all on `dev`."""
    yield ("raw_chain", *rt.raw_chain(dev, N, 200))
    yield ("rmw_chain", *rt.rmw_chain(dev, N, 100))
    yield ("diamond", *rt.diamond(dev, N))
    # writers to disjoint halves, then one reader of both
    y, z = dev.buffer(8 * N), dev.buffer(8 * N)
    rt.fill(dev, y.view(0, 4 * N), N, 1.0)
    rt.fill(dev, y.view(4 * N, 4 * N), N, 2.0)
    rt.scale(dev, y, z, 2 * N, 3.0)
    yield "disjoint_views", dev.download(z), np.repeat(rt.f32([3.0, 6.0]), N)
    # overlapping views: the second fill must land after the first
    w = dev.buffer(12 * N)
    rt.fill(dev, w.view(0, 8 * N), 2 * N, 1.0)
    rt.fill(dev, w.view(4 * N, 8 * N), 2 * N, 2.0)
    yield "overlapping_views", dev.download(w), np.repeat(rt.f32([1.0, 2.0, 2.0]), N)


@pytest.mark.parametrize("inflight, batch", [(2, 64), (1, 8), (4, 3)])
def test_values_exact_under_smart(inflight, batch):
    with Device(manifest=rt.MANIFEST, barriers="smart", inflight=inflight, batch=batch) as dev:
        for name, out, ref in _workloads(dev):
            assert _record(f"smart_{inflight}x{batch}_{name}", out, ref, dev) == 0, name


def test_values_exact_under_smart_with_replay():
    with Device(manifest=rt.MANIFEST) as dev:
        y = dev.buffer(4 * N)
        rt.fill(dev, y, N, 0.0)
        with dev.record() as g:
            for _ in range(10):
                rt.rmw(dev, y, N, 1.0, 1.0)
        for _ in range(5):
            g.run()
        out = dev.download(y)
        assert _record("smart_replay", out, np.full(N, 50.0, np.float32), dev) == 0


def test_missing_barriers_give_wrong_values_on_a_gpu():
    with Device(manifest=rt.MANIFEST, barriers="none") as dev:
        wrong = {name: _record(f"none_{name}", out, ref, dev) for name, out, ref in _workloads(dev)}
        assert dev.stats["barriers"] > 0   # only the host-read barriers of the downloads
    assert any(wrong.values()), f"no workload went wrong without barriers: {wrong}"


def test_values_exact_under_sync_validation_if_the_layer_is_present():
    try:
        dev = Device(manifest=rt.MANIFEST, validation=True)
    except Exception as exc:
        pytest.skip(f"no validation layer: {exc}")
    with dev:
        for name, out, ref in _workloads(dev):
            assert _record(f"validated_{name}", out, ref, dev) == 0, name
    hazards = [f"{m.id}: {m.text[:200]}" for m in dev.validation_messages if m.severity == "error"]
    assert hazards == [], "\n".join(hazards)


def test_library_kernels_on_the_gpu():
    with Device() as dev:
        n = N
        a, b, c = dev.buffer(4 * n), dev.buffer(4 * n), dev.buffer(4 * n)
        x = np.arange(n, dtype=np.float32)
        dev.upload(a, x)
        dev.upload(b, x)
        dev.dispatch("add_f32", [a, b, c], groups=(n + 255) // 256, push=struct.pack("<I", n))
        assert _record("library_add_f32", dev.download(c), 2 * x, dev) == 0


def test_large_uploads_through_the_transfer_queue():
    with Device(manifest=rt.MANIFEST) as dev:
        if dev.transfer_family is None:
            pytest.skip("no transfer-only queue family")
        crossover = dev.copy_crossover()
        RESULTS["copy_crossover"] = dev.copy_crossover_info
        n = 16 << 20                                  # 64 MiB per upload
        assert 4 * n > crossover, crossover
        # Small integers, so (x + (x+1)) + (x+2) and 3x + 3 round alike: above 2**24 / 3
        # float32 sums in another order differ in the last bit, which is not a race.
        x = (np.arange(n) % 65536).astype(np.float32)
        bufs = [dev.buffer(4 * n) for _ in range(3)]
        out = dev.buffer(4 * n)
        for i, b in enumerate(bufs):
            dev.upload(b, x + i)                      # idle destinations: transfer queue
        rt.add(dev, bufs[0], bufs[1], out, n)
        rt.add(dev, out, bufs[2], bufs[0], n)
        got = dev.download(bufs[0])
        assert dev.stats["transfer_queue_copies"] == 3
        assert _record("transfer_queue_uploads", got, 3 * x + 3, dev) == 0
        # The small ones stay in the compute stream.
        dev.upload(bufs[1], x[:1024])
        assert dev.stats["transfer_queue_copies"] == 3


def test_many_distinct_bindings_in_one_batch_grow_the_descriptor_pools():
    # 1200 dispatches over distinct views: more sets than one pool holds (a real driver
    # answers VK_ERROR_OUT_OF_POOL_MEMORY, lavapipe never does).
    count, n = 1200, 64
    with Device(manifest=rt.MANIFEST, batch=count) as dev:
        big = dev.buffer(count * 256)
        for i in range(count):
            dev.dispatch("rt_fill", [big.view(i * 256, 256)], groups=1,
                         push=struct.pack("<If", n, float(i)))
        out = dev.download(big).reshape(count, n)[:, 0]
        assert _record("descriptor_pool_growth", out, np.arange(count, dtype=np.float32), dev) == 0


def teardown_module(module):
    out = os.environ.get("OUT")
    if out and RESULTS:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_values.json").write_text(json.dumps(RESULTS, indent=2, sort_keys=True))


def test_many_devices_in_one_process():
    # NVIDIA's driver took a static-TLS block at every load and the 31st
    # vkCreateInstance of a process failed; the runtime now keeps it loaded.
    for i in range(40):
        with Device(manifest=rt.MANIFEST, validation=(i % 2 == 1)) as dev:
            dev.buffer(1 << 20)
