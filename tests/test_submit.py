"""Submission on lavapipe under sync validation: slots, batches, staged uploads, drains, replay.

Counters first: values alone cannot tell a batch that waited from one that
did not on a device that runs everything in order.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import GenspirvError, InFlightError  # noqa: E402

from genspirv.runtime import Device  # noqa: E402
from genspirv.runtime.slots import InFlightGuard, SlotState  # noqa: E402
from genspirv.settings import get as setting  # noqa: E402


pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")


def device(**kw) -> Device:
    kw.setdefault("validation", True)
    return Device(manifest=rt.MANIFEST, **kw)


def clean(dev):
    msgs = [f"{m.id}: {m.text[:300]}" for m in dev.validation_messages]
    assert msgs == [], "\n".join(msgs)


def fills(dev, buf, n, count):
    for i in range(count):
        rt.fill(dev, buf, n, float(i))


# -- slots --------------------------------------------------------------------


def test_slot_rotation_and_in_flight_depth():
    with device(inflight=2, batch=4) as dev:
        y = dev.buffer(1024)
        fills(dev, y, 256, 4)                    # fourth dispatch fills the batch: flushed
        assert (dev.stats["submits"], dev.in_flight()) == (1, 1)
        fills(dev, y, 256, 4)
        assert (dev.stats["submits"], dev.in_flight()) == (2, 2)   # both slots in flight, no wait
        fills(dev, y, 256, 1)                    # the next batch retires slot 0 first
        assert dev.in_flight() == 1
        slots = dev.debug.slots
        assert slots[0].state is SlotState.RECORDING and slots[1].state is SlotState.SUBMITTED
        dev.synchronize()
        assert dev.stats["submits"] == 3
        clean(dev)


def test_one_slot_retires_before_every_batch():
    with device(inflight=1, batch=2) as dev:
        y = dev.buffer(1024)
        fills(dev, y, 256, 2)
        assert dev.in_flight() == 1
        fills(dev, y, 256, 1)
        assert dev.in_flight() == 0              # retired (waited if busy) before recording
        dev.synchronize()
        clean(dev)


def test_a_step_split_into_submissions_keeps_every_barrier():
    """A 100-dispatch step (25 layers of scale, scale, add, residual add: 75 read-after-
    write dependencies) recorded in one batch and in batches of 25: the same barriers,
    because pending accesses cross submissions (dispatches after each split read what
    dispatches before it wrote), one submit against four, the same values. The validation layer cannot
    see a hazard between two submissions here (a missing barrier there went unreported
    when tried), so the counters say it."""
    n = 1024

    def step(dev):
        x, x2, t1, t2, t3 = (dev.buffer(4 * n) for _ in range(5))
        dev.upload(x, np.ones(n, np.float32))
        dev.synchronize()
        before = dev.stats
        for i in range(25):
            src, dst = (x, x2) if i % 2 == 0 else (x2, x)
            rt.scale(dev, src, t1, n, 0.5)
            rt.scale(dev, src, t2, n, 0.25)
            rt.add(dev, t1, t2, t3, n)
            rt.add(dev, t3, src, dst, n)
        dev.synchronize()
        after = dev.stats
        return ({k: after[k] - before[k] for k in ("dispatches", "barriers", "submits")},
                dev.download(x2))

    want = np.ones(n, np.float32)
    for _ in range(25):
        want = (np.float32(0.5) * want + np.float32(0.25) * want) + want
    counts = {}
    for batch in (1 << 20, 25):
        with device(batch=batch, inflight=2) as dev:
            counts[batch], got = step(dev)
            np.testing.assert_allclose(got, want, rtol=1e-6)
            clean(dev)
    assert counts[1 << 20] == {"dispatches": 100, "barriers": 75, "submits": 1}
    assert counts[25] == {"dispatches": 100, "barriers": 75, "submits": 4}


def test_submits_and_fence_waits_per_step():
    with device(inflight=2, batch=64) as dev:
        y = dev.buffer(4096)
        per_step = []
        for _ in range(3):
            before = dev.stats
            fills(dev, y, 1024, 100)
            dev.synchronize()
            after = dev.stats
            per_step.append((after["submits"] - before["submits"],
                             after["fence_waits"] - before["fence_waits"]))
        # 100 dispatches at 64 per batch: two submits; the fence rides the last one.
        assert per_step == [(2, 1)] * 3
        clean(dev)


def test_no_empty_submit():
    with device() as dev:
        dev.synchronize()
        dev.flush()
        assert (dev.stats["submits"], dev.stats["fence_waits"]) == (0, 0)
        y = dev.buffer(1024)
        rt.fill(dev, y, 256, 1.0)
        dev.synchronize()
        dev.synchronize()
        dev.flush()
        assert (dev.stats["submits"], dev.stats["fence_waits"]) == (1, 1)
        clean(dev)


def test_pending_accesses_survive_flush_submit_and_fence_wait():
    with device(inflight=2) as dev:
        n = 1024
        y, z, w = dev.buffer(4 * n), dev.buffer(4 * n), dev.buffer(4 * n)
        rt.fill(dev, y, n, 1.0)
        dev.flush()                                   # submit
        rt.scale(dev, y, z, n, 2.0)                   # RAW on y across the submit
        assert dev.stats["barriers"] == 1
        dev.synchronize()                             # submit + fence wait
        rt.fill(dev, z, n, 0.0)                       # WAW on z across both
        assert dev.stats["barriers"] == 2
        dev.synchronize()
        rt.scale(dev, y, w, n, 1.0)                   # only z is pending: no hazard, skipped
        assert dev.stats["barriers_skipped"] == 1
        np.testing.assert_array_equal(dev.download(z), np.zeros(n, np.float32))
        clean(dev)


@pytest.mark.parametrize("inflight, batch", [(1, 3), (2, 4), (3, 5)])
def test_chain_longer_than_slots_times_batch_stays_exact(inflight, batch):
    with device(inflight=inflight, batch=batch) as dev:
        steps = 2 * inflight * batch + 3
        out, ref = rt.raw_chain(dev, 2048, steps)
        np.testing.assert_array_equal(out, ref)
        assert dev.stats["submits"] >= steps // batch
        out, ref = rt.rmw_chain(dev, 1000, steps)
        np.testing.assert_array_equal(out, ref)
        clean(dev)


def test_nothing_a_submitted_batch_references_is_rewritten():
    """Uploads and dispatches in batches that overlap in flight: every slot has
    staging and descriptor pools of its own, and the guard saw no reuse."""
    with device(inflight=2, batch=1) as dev:
        n = 256
        bufs = [dev.buffer(4 * n) for _ in range(6)]
        outs = [dev.buffer(4 * n) for _ in range(6)]
        for i, (b, o) in enumerate(zip(bufs, outs)):
            dev.upload(b, np.full(n, float(i), np.float32))
            rt.scale(dev, b, o, n, 2.0)          # batch=1: every dispatch is its own submit
        chunks = [s.staging_chunks for s in dev.debug.slots]
        pools = [s.descriptor_pools for s in dev.debug.slots]
        assert not chunks[0] & chunks[1] and not pools[0] & pools[1]
        for i, o in enumerate(outs):
            np.testing.assert_array_equal(dev.download(o), np.full(n, 2.0 * i, np.float32))
        clean(dev)


def test_in_flight_guard_refuses_reuse_by_another_slot():
    g = InFlightGuard()
    g.use_staging(1, 0, 256, slot=0)
    g.use_staging(1, 256, 512, slot=1)            # disjoint bytes: fine
    with pytest.raises(InFlightError, match=r"staging bytes \[128, 384\) of chunk 1 .* slot 0"):
        g.use_staging(1, 128, 384, slot=1)
    g.use_pool(7, slot=0)
    with pytest.raises(InFlightError, match="descriptor pool 7 reset by slot 1 while slot"):
        g.reset_pool(7, slot=1)
    g.retire(0)
    g.use_staging(1, 0, 256, slot=1)
    g.reset_pool(7, slot=1)


def test_inflight_setting():
    assert setting("GENSPIRV_INFLIGHT", {}) == 2 and setting("GENSPIRV_INFLIGHT", {"GENSPIRV_INFLIGHT": "3"}) == 3
    for bad in ("0", "5", "two"):
        with pytest.raises(GenspirvError, match="GENSPIRV_INFLIGHT must be 1..4"):
            setting("GENSPIRV_INFLIGHT", {"GENSPIRV_INFLIGHT": bad})


def test_inflight_and_batch_from_environment(monkeypatch):
    monkeypatch.setenv("GENSPIRV_INFLIGHT", "3")
    monkeypatch.setenv("GENSPIRV_BATCH", "2")
    with Device(manifest=rt.MANIFEST) as dev:
        assert len(dev.debug.slots) == 3 and dev.batch_size == 2
        y = dev.buffer(1024)
        fills(dev, y, 256, 6)
        assert dev.stats["submits"] == 3


# -- uploads and downloads ----------------------------------------------------


def _step_with_uploads(dev, n=256):
    xs = [dev.buffer(4 * n) for _ in range(6)]
    acc = dev.buffer(4 * n)
    rt.fill(dev, acc, n, 0.0)
    for i, x in enumerate(xs):
        dev.upload(x, np.full(n, float(i + 1), np.float32))
        tmp = dev.buffer(4 * n)
        rt.add(dev, acc, x, tmp, n)
        dev.copy(tmp, acc)
    return dev.download(acc)


def test_staged_uploads_submit_nothing_of_their_own():
    with device() as dev:
        out = _step_with_uploads(dev)
        np.testing.assert_array_equal(out, np.full(256, 21.0, np.float32))
        s = dev.stats
        assert (s["staged_uploads"], s["blocking_uploads"]) == (6, 0)
        assert (s["submits"], s["fence_waits"]) == (1, 1)      # only the download's
        clean(dev)


def test_blocking_uploads_for_comparison(monkeypatch):
    monkeypatch.setenv("GENSPIRV_UPLOAD", "blocking")
    with device() as dev:
        out = _step_with_uploads(dev)
        np.testing.assert_array_equal(out, np.full(256, 21.0, np.float32))
        s = dev.stats
        assert (s["staged_uploads"], s["blocking_uploads"]) == (0, 6)
        assert (s["submits"], s["fence_waits"]) == (7, 7)
        clean(dev)


def test_download_drains_only_what_it_must():
    with device(inflight=2) as dev:
        n = 256
        a, b = dev.buffer(4 * n), dev.buffer(4 * n)
        rt.fill(dev, a, n, 5.0)
        dev.flush()                                   # a's writer is submitted
        rt.fill(dev, b, n, 6.0)                       # open batch: touches b only
        before = dev.stats
        np.testing.assert_array_equal(dev.download(a), np.full(n, 5.0, np.float32))
        s = dev.stats
        assert s["drains"] == before["drains"]        # the open batch stayed open...
        assert s["submits"] == before["submits"] + 1  # ...and only the copy went out
        assert dev.debug.slots[dev.debug.open_slot].state is SlotState.RECORDING
        np.testing.assert_array_equal(dev.download(b), np.full(n, 6.0, np.float32))
        assert dev.stats["drains"] == before["drains"] + 1   # b was in the open batch
        # A write after the side download must still wait for its read (WAR).
        rt.fill(dev, a, n, 7.0)
        np.testing.assert_array_equal(dev.download(a), np.full(n, 7.0, np.float32))
        clean(dev)


# -- replay -------------------------------------------------------------------


def test_replay_records_nothing_again():
    with device() as dev:
        n = 1000
        y, z = dev.buffer(4 * n), dev.buffer(4 * n)
        dev.upload(y, np.ones(n, np.float32))
        with dev.record() as g:
            for _ in range(3):
                rt.rmw(dev, y, n, 1.0, 1.0)           # y += 1, three times
            rt.scale(dev, y, z, n, 2.0)               # another pipeline reads y
        captured = dev.stats
        assert captured["dispatches"] == 4 and captured["submits"] == 0
        for _ in range(5):
            g.run()
        s = dev.stats
        assert s["dispatches"] == captured["dispatches"]     # nothing recorded again
        assert s["replays"] == 5 and s["submits"] == 5
        np.testing.assert_array_equal(dev.download(y), np.full(n, 16.0, np.float32))
        np.testing.assert_array_equal(dev.download(z), np.full(n, 32.0, np.float32))
        clean(dev)


def test_replay_hazards_at_both_ends():
    with device() as dev:
        n = 512
        x, y = dev.buffer(4 * n), dev.buffer(4 * n)
        with dev.record() as g:
            rt.scale(dev, x, y, n, 3.0)
        for i in range(3):
            dev.upload(x, np.full(n, float(i), np.float32))   # RAW into the graph
            before = dev.stats["barriers"]
            g.run()
            assert dev.stats["barriers"] == before + 1        # the entry barrier
            np.testing.assert_array_equal(dev.download(y), np.full(n, 3.0 * i, np.float32))
        # Work after the graph that reads its output orders itself after it.
        z = dev.buffer(4 * n)
        g.run()
        rt.scale(dev, y, z, n, 0.5)
        np.testing.assert_array_equal(dev.download(z), np.full(n, 3.0, np.float32))
        clean(dev)


def test_replay_runs_back_to_back_without_waiting_for_each_other():
    """The graph's command buffer is simultaneous-use: a second run is submitted
    while the first may still be pending (no fence wait; the layer would report
    VUID-vkQueueSubmit-pCommandBuffers-00071 for a buffer without the flag), and
    the entry barrier orders each run after the one before (RAW and WAR: the
    graph reads and writes y)."""
    with device(inflight=4) as dev:
        n = 1024
        y, z = dev.buffer(4 * n), dev.buffer(4 * n)
        dev.upload(y, np.zeros(n, np.float32))
        with dev.record() as g:
            rt.rmw(dev, y, n, 1.0, 1.0)               # y += 1
            rt.scale(dev, y, z, n, 2.0)               # z = 2 y
        dev.synchronize()
        before = dev.stats
        for _ in range(3):
            g.run()
        s = dev.stats
        assert s["fence_waits"] == before["fence_waits"]      # no run waited for another
        assert s["replays"] - before["replays"] == 3 and s["submits"] - before["submits"] == 3
        # Entry barriers: run 1 after the upload (RAW on y), runs 2 and 3 after the run before.
        assert s["barriers"] - before["barriers"] == 3
        np.testing.assert_array_equal(dev.download(y), np.full(n, 3.0, np.float32))
        np.testing.assert_array_equal(dev.download(z), np.full(n, 6.0, np.float32))
        clean(dev)


def test_replay_refuses_transfers_inside_capture():
    with device() as dev:
        y = dev.buffer(64)
        with pytest.raises(GenspirvError, match="upload inside dev.record"):
            with dev.record():
                dev.upload(y, np.zeros(16, np.float32))
        with pytest.raises(GenspirvError, match="download inside dev.record"):
            with dev.record():
                dev.download(y)


# -- host profiler --------------------------------------------------------------


def test_host_profile_attributes_phases(capsys):
    with device(host_profile=True, batch=8) as dev:
        y = dev.buffer(1024)
        fills(dev, y, 256, 20)
        dev.synchronize()
        table = dev.profile()
        for phase in ("record", "descriptors", "submit", "wait", "bookkeeping"):
            assert table[phase]["count"] > 0, phase
        assert table["submit"]["count"] == 3
    assert "genspirv host profile" in capsys.readouterr().err


def test_host_profile_off_by_default(monkeypatch):
    monkeypatch.delenv("GENSPIRV_HOST_PROFILE", raising=False)
    with device() as dev:
        y = dev.buffer(1024)
        fills(dev, y, 256, 3)
        dev.synchronize()
        assert all(r["count"] == 0 for r in dev.profile().values())


def test_host_profile_from_environment(monkeypatch):
    monkeypatch.setenv("GENSPIRV_HOST_PROFILE", "1")
    with Device(manifest=rt.MANIFEST) as dev:
        assert dev.debug.host_profile


# -- transfer queue -------------------------------------------------------------


def test_transfer_queue_decision():
    from genspirv.runtime.transfers import crossover_bytes, use_transfer_queue
    assert crossover_bytes(20e-6, 25e9) == pytest.approx(500_000)
    assert use_transfer_queue(1 << 20, 500_000, True, True)
    assert not use_transfer_queue(400_000, 500_000, True, True)      # too small to pay
    assert not use_transfer_queue(1 << 20, 500_000, False, True)     # no transfer-only family
    assert not use_transfer_queue(1 << 20, 500_000, True, False)     # destination busy


def test_no_transfer_queue_without_a_transfer_family():
    with device() as dev:
        if dev.transfer_family is not None:
            pytest.skip("this device has a transfer-only family")
        assert dev.transfer_queue is None
        big = dev.buffer(1 << 20)
        dev.upload(big, np.zeros(1 << 18, np.float32))
        assert dev.stats["transfer_queue_copies"] == 0 and dev.copy_crossover_info is None


def test_transfer_queue_path_with_the_compute_queue_standing_in(monkeypatch):
    monkeypatch.setenv("GENSPIRV_COMPUTE_STREAM_COPY_MAX", str(256 << 10))
    with device(transfer_queue="same") as dev:
        n = 1 << 18                                   # 1 MiB: above the crossover
        x = np.arange(n, dtype=np.float32)
        a, b = dev.buffer(4 * n), dev.buffer(4 * n)
        rt.fill(dev, b, n, 1.0)                       # open batch, unrelated to a
        dev.upload(a, x)                              # idle destination: transfer queue
        assert dev.stats["transfer_queue_copies"] == 1 and dev.stats["submits"] == 1
        rt.scale(dev, a, b, n, 2.0)                   # ordered by the semaphore wait
        dev.upload(a, x[: 1 << 15])                   # small: compute stream
        dev.upload(b, x)                              # b is busy in the open batch: compute stream
        assert dev.stats["transfer_queue_copies"] == 1
        np.testing.assert_array_equal(dev.download(b), x)
        dev.synchronize()
        dev.upload(a, 3 * x)                          # idle again after the wait
        rt.scale(dev, a, b, n, 1.0)
        np.testing.assert_array_equal(dev.download(b), 3 * x)
        assert dev.stats["transfer_queue_copies"] == 2
        assert dev.copy_crossover_info["source"] == "GENSPIRV_COMPUTE_STREAM_COPY_MAX"
        clean(dev)


def test_crossover_is_measured_once(monkeypatch):
    monkeypatch.delenv("GENSPIRV_COMPUTE_STREAM_COPY_MAX", raising=False)
    with device(transfer_queue="same") as dev:
        before = dev.stats
        first = dev.copy_crossover()
        assert dev.copy_crossover() == first and dev.stats == before
        info = dev.copy_crossover_info
        assert info["source"] == "measured" and info["overhead_us"] > 0 and info["h2d_gb_per_s"] > 0
        assert first == pytest.approx(info["overhead_us"] * 1e-6 * info["h2d_gb_per_s"] * 1e9)
        clean(dev)


def test_every_batch_carries_its_gpu_timestamps():
    with device(inflight=2, batch=4) as dev:
        y = dev.buffer(4096)
        fills(dev, y, 1024, 10)                      # three batches
        dev.synchronize()
        busy = dev.gpu_busy()
        assert busy["batches"] == 3 and busy["ms"] > 0
        assert dev.gpu_busy() == busy                # nothing new finished
        clean(dev)


def test_batch_timestamps_are_read_a_run_of_pairs_per_call(monkeypatch):
    """Past a wrap of the pair ring, adjacent pairs are read in one call each run, and
    add up to what reading pair by pair gives; so does the fallback when a call says
    not ready (each pair then read alone, waiting). The pairs are read a second time,
    one by one, inside the binding's call."""
    from genspirv.runtime import submission
    from genspirv.runtime._vk import ffi

    real = submission.query_results
    calls, singles = [], []

    def pair_ticks(device, pool, first, count):
        one = ffi.new("uint64_t[2]")
        for k in range(0, count, 2):
            assert real(device, pool, first + k, 2, one)       # retired: every pair is ready
            singles.append(int(one[1]) - int(one[0]))

    def counting(device, pool, first, count, data):
        calls.append(count)
        pair_ticks(device, pool, first, count)
        return real(device, pool, first, count, data)

    def not_ready(device, pool, first, count, data):
        if count == 2:          # a run's call is followed by one call per pair
            pair_ticks(device, pool, first, count)
        return False

    monkeypatch.setattr(submission, "query_results", counting)
    with device(inflight=2, batch=1) as dev:
        ms_per_tick = dev.properties["limits"]["timestamp_period_ns"] / 1e6
        y = dev.buffer(4096)
        pairs = max(submission.BATCH_QUERY_PAIRS, dev.inflight)
        fills(dev, y, 1024, pairs + 5)               # one batch each: the ring wraps
        dev.synchronize()
        assert calls and max(calls) > 2 and len(calls) <= 3     # read as the ring came round
        busy = dev.gpu_busy()
        assert busy["batches"] == pairs + 5
        assert busy["ms"] == pytest.approx(sum(singles) * ms_per_tick) and busy["ms"] > 0
        monkeypatch.setattr(submission, "query_results", not_ready)
        singles.clear()
        fills(dev, y, 1024, 6)
        dev.synchronize()
        later = dev.gpu_busy()
        assert later["batches"] == busy["batches"] + 6 and len(singles) == 6
        assert later["ms"] - busy["ms"] == pytest.approx(sum(singles) * ms_per_tick)
        clean(dev)


def test_buffers_of_a_live_graph_cannot_be_destroyed():
    with device() as dev:
        n = 256
        y = dev.buffer(4 * n, name="state")
        with dev.record() as g:
            rt.rmw(dev, y, n, 1.0, 1.0)
        g.run()
        with pytest.raises(GenspirvError, match="state is bound in a replay graph"):
            y.destroy()
        g.destroy()                                  # waits for its run, then frees
        y.destroy()
        with pytest.raises(GenspirvError, match="destroyed"):
            g.run()
        clean(dev)


def test_a_full_descriptor_pool_grows_another(monkeypatch):
    """Drivers answer a full pool with -1000069000 (VK_ERROR_OUT_OF_POOL_MEMORY; the
    binding's constant has the wrong sign); lavapipe never runs out, so fake the answer."""
    from genspirv.runtime import _vk
    from genspirv.runtime.slots import DescriptorPools

    class FullFirstPool:
        def __init__(self, real):
            self.real, self.calls = real, 0

        def __getattr__(self, name):
            return getattr(self.real, name)

        def vkAllocateDescriptorSets(self, device, info, out):
            self.calls += 1
            if self.calls == 1:
                return -1000069000
            return self.real.vkAllocateDescriptorSets(device, info, out)

    with device() as dev:
        k = dev.kernel("rt_fill").kernel
        fake = FullFirstPool(_vk._lib)
        monkeypatch.setattr(_vk, "_lib", fake)
        pools = DescriptorPools(dev.handle)
        try:
            assert pools.allocate(k.set_layouts[0]) is not None
            assert len(pools.pools) == 2 and fake.calls == 2
        finally:
            monkeypatch.undo()
            pools.destroy()


# -- descriptor sets kept from batch to batch ----------------------------------


def _set_handles(sets) -> list[int]:
    from genspirv.runtime._vk import ffi
    return [int(ffi.cast("uintptr_t", sets[i])) for i in range(len(sets))]


def test_descriptor_sets_are_written_once_per_slot_then_reused():
    """A decode step binds the same buffers every token: each slot writes a set
    per binding combination once, and every later batch only binds it."""
    with device(inflight=2, batch=8) as dev:
        n, views, steps = 256, 8, 6
        big = dev.buffer(4 * n * views)
        for step in range(steps):                 # one batch per step, slots alternate
            for i in range(views):
                rt.fill(dev, big.view(4 * n * i, 4 * n), n, float(step * views + i))
        s = dev.stats
        assert (s["dispatches"], s["submits"]) == (steps * views, steps)
        assert s["descriptor_updates"] == 2 * views           # not steps * views
        last = (steps - 1) * views
        np.testing.assert_array_equal(dev.download(big),
                                      np.repeat(np.arange(last, last + views, dtype=np.float32), n))
        clean(dev)


def test_a_cached_descriptor_set_is_never_rewritten_while_its_batch_is_in_flight(monkeypatch):
    """Every write goes to a set allocated just before it, by the slot recording; a
    slot resets its pools (when its cache is full) only after its fence signalled."""
    from genspirv.runtime import _vk, slots
    from genspirv.runtime.slots import DescriptorPools

    monkeypatch.setattr(slots, "CACHED_DESCRIPTOR_SETS", 5)   # resets within the test
    writes, resets = [], []
    real_write, real_reset = _vk.write_buffer_descriptors, DescriptorPools.reset

    with device(inflight=2, batch=3) as dev:
        def in_flight_sets():
            return {h for s in dev.debug.slots if s.state is SlotState.SUBMITTED and not s.signalled
                    for sets in s.descriptor_sets for h in _set_handles(sets)}

        def write(device_, sets, bindings, types, views):
            handles = _set_handles(sets)
            owner = next(s for s in dev.debug.slots if any(v is sets for v in s.descriptor_sets)
                         or s.state is SlotState.RECORDING)
            writes.append((handles, owner.state, bool(set(handles) & in_flight_sets())))
            real_write(device_, sets, bindings, types, views)

        def reset(pools):
            # Called from the slot's retire, after its fence signalled and was reset.
            view = dev.debug
            slot = next(s for s in view.slots if s.descriptor_pools == {id(p) for p in pools.pools})
            resets.append(slot.seq <= view.completed)
            real_reset(pools)

        monkeypatch.setattr(_vk, "write_buffer_descriptors", write)
        monkeypatch.setattr(DescriptorPools, "reset", reset)
        n = 256
        big = dev.buffer(4 * n * 7)
        for step in range(12):
            for i in range(7):                    # 7 combinations over batches of 3
                rt.fill(dev, big.view(4 * n * i, 4 * n), n, float(step + i))
        np.testing.assert_array_equal(dev.download(big),
                                      np.repeat(np.arange(11, 18, dtype=np.float32), n))
        assert writes and resets                   # both paths ran
        assert all(state is SlotState.RECORDING and not hit for _, state, hit in writes)
        assert all(resets)                         # every reset came after the fence
        # (and the layer reports a pool reset or a set update while in use: clean() below)
        assert dev.stats["descriptor_updates"] == len(writes) < dev.stats["dispatches"]
        clean(dev)


def test_the_layer_reports_a_set_rewritten_in_flight():
    """Positive control for the test above: the validation layer does watch
    descriptor updates of sets a pending batch uses."""
    from genspirv.runtime import _vk
    with device(inflight=2, batch=1 << 20) as dev:
        n = 256
        y, z = dev.buffer(4 * n), dev.buffer(4 * n)
        rt.fill(dev, y, n, 1.0)
        # Everything is looked up before the flush: dev.debug reads the fences of submitted
        # slots, and a fence seen signalled tells the layer the batch is over.
        slot = dev.debug.open_slot
        (sets,) = dev.debug.slots[slot].descriptor_sets
        k = dev.kernel("rt_fill").kernel
        dev.flush()                                # submitted; its fence not yet looked at
        _vk.write_buffer_descriptors(dev.handle, sets, k.bindings, k.descriptor_types, (z,))
        dev.synchronize()
        assert any(m.id == "VUID-vkUpdateDescriptorSets-None-03047" for m in dev.validation_messages)


# -- push constants ------------------------------------------------------------------


def test_push_constants_are_recorded_again_unless_the_same_bytes_went_through_the_same_layout(monkeypatch):
    """Push constants stay in place for a layout, so the one bytes object pushed last
    through it is not pushed again; other bytes (even equal ones), another layout or
    a new batch push again. A skipped push would leave the previous values: the
    results below tell them apart, and the pushes are counted at the binding."""
    from genspirv.runtime import recorder
    pushed = []
    real = recorder.cmd_push_constants

    def counting(cb, layout, stages, offset, size, data):
        pushed.append((layout, bytes(data)))
        real(cb, layout, stages, offset, size, data)

    monkeypatch.setattr(recorder, "cmd_push_constants", counting)
    with device(batch=1 << 20) as dev:
        n = 256
        x, y, z, w = (dev.buffer(4 * n) for _ in range(4))
        g = rt.groups_for(n)
        fill_layout = dev.kernel("rt_fill").kernel.pipeline_layout
        scale_layout = dev.kernel("rt_scale").kernel.pipeline_layout
        two = struct.pack("<If", n, 2.0)
        dev.dispatch("rt_fill", [x], g, two)                  # x = 2: pushed
        dev.dispatch("rt_fill", [w], g, two)                  # same bytes, same layout: kept
        dev.dispatch("rt_scale", [x, y], g, two)              # y = 4: another layout, pushed
        dev.dispatch("rt_scale", [y, z], g, bytes(bytearray(two)))   # z = 8: equal bytes, another object
        dev.dispatch("rt_scale", [x, y], g, struct.pack("<If", n, 3.0))   # y = 6
        dev.synchronize()
        dev.dispatch("rt_fill", [w], g, two)                  # a new batch: pushed again
        assert [layout for layout, _ in pushed] == [fill_layout, scale_layout, scale_layout,
                                                    scale_layout, fill_layout]
        np.testing.assert_array_equal(dev.download(y), np.full(n, 6.0, np.float32))
        np.testing.assert_array_equal(dev.download(z), np.full(n, 8.0, np.float32))
        np.testing.assert_array_equal(dev.download(w), np.full(n, 2.0, np.float32))
        assert dev.stats["dispatches"] == 6
        clean(dev)


# -- dispatch plans (checks made once per kernel and buffers) -----------------------


def test_checks_still_hold_when_the_buffers_were_seen_before():
    from genspirv.errors import BufferRangeError, DispatchError, PushConstantSizeError
    with device() as dev:
        n = 256
        x, y = dev.buffer(4 * n, name="x"), dev.buffer(4 * n, name="y")
        rt.scale(dev, x, y, n, 1.0)               # the plan for (rt_scale, x, y) is made
        with pytest.raises(PushConstantSizeError, match="kernel rt_scale: 4 byte"):
            dev.dispatch("rt_scale", [x, y], groups=1, push=b"\0" * 4)
        with pytest.raises(DispatchError, match="groups"):
            dev.dispatch("rt_scale", [x, y], groups=0, push=b"\0" * 8)
        x.destroy()
        with pytest.raises(BufferRangeError, match="x was destroyed"):
            rt.scale(dev, x, y, n, 1.0)
        assert dev.stats["dispatches"] == 1
        clean(dev)


def test_dispatch_plans_are_bounded(monkeypatch):
    from genspirv.runtime import device as device_module
    monkeypatch.setattr(device_module, "MAX_PLANS", 4)
    with device() as dev:
        n = 64
        big = dev.buffer(4 * n * 10)
        for i in range(10):
            rt.fill(dev, big.view(4 * n * i, 4 * n), n, float(i))
            assert dev.debug.plans <= 4
        np.testing.assert_array_equal(dev.download(big), np.repeat(np.arange(10, dtype=np.float32), n))
        clean(dev)
