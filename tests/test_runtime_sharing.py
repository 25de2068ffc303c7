"""Objects know their Device, and one Device may be shared between threads.

A buffer, view or kernel used with another Device, or with a Device that was
closed, is refused with a ``ForeignObjectError`` naming the object and both
devices, before Vulkan sees it (Vulkan leaves such use undefined; a kernel of
a closed Device used to segfault). Every refusal runs under the Khronos
validation layer, which must stay silent, and leaves the counters alone.

Threads: four threads share one Device, each running upload -> read-after-write
chain -> download; values and counters must be exact, no validation message
(sync hazards and the layer's own thread-safety check included), and no two
threads ever inside the Device at once. The negative control runs the same
workload with the Device's lock replaced by a no-op, in a child process (a
race may crash the driver): it must go wrong at least once within its time
budget, or the positive test could not tell the lock from its absence.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import ForeignObjectError, GenspirvError  # noqa: E402
from genspirv.runtime import Device  # noqa: E402
from genspirv.runtime.recorder import Recorder  # noqa: E402
from faults import REPO_ROOT, cli_env  # noqa: E402

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

N = 1024
PUSH = np.array([N], np.uint32)


def silent(*devices):
    msgs = [f"{m.id}: {m.text[:200]}" for d in devices for m in d.validation_messages]
    assert msgs == [], "\n".join(msgs)


def refused(dev, *needles, call):
    return rt.refused(dev, ForeignObjectError, *needles, call=call)


@pytest.fixture
def two():
    with Device(manifest=rt.MANIFEST, validation=True) as a, \
            Device(manifest=rt.MANIFEST, validation=True) as b:
        yield a, b
    silent(a, b)


# -- objects of another Device ------------------------------------------------------


def test_buffer_of_another_device_is_refused(two):
    a, b = two
    x, z = a.buffer(4 * N, name="x"), a.buffer(4 * N, name="z")
    y = b.buffer(4 * N, name="y")
    assert x.device is a and y.device is b and y.view(0, 16).device is b
    a.upload(x, np.ones(N, np.float32))
    k = a.kernel("rt_add")
    msg = refused(a, "kernel rt_add, binding", "buffer y", b.label, a.label,
                  call=lambda: a.dispatch(k, [x, y, z], groups=4, push=PUSH))
    assert msg.index(b.label) < msg.index(a.label), "the owner is named first, then the user"
    refused(a, "kernel rt_add", "buffer y [0, 4096)", b.label,
            call=lambda: a.dispatch(k, [x, x, y.view(0, 4096)], groups=4, push=PUSH))
    refused(a, "upload destination", "buffer y", b.label, a.label,
            call=lambda: a.upload(y, np.zeros(N, np.float32)))
    refused(a, "download source", "buffer y [16, 32)", b.label,
            call=lambda: a.download(y.view(16, 16)))
    refused(a, "copy destination", "buffer y", call=lambda: a.copy(x, y))
    refused(a, "copy source", "buffer y", call=lambda: a.copy(y, x))
    # Negative control: the same calls with a's own buffer go through.
    a.dispatch(k, [x, x, z], groups=4, push=PUSH)
    np.testing.assert_array_equal(a.download(z), np.full(N, 2.0, np.float32))


def test_kernel_of_another_device_is_refused(two):
    a, b = two
    k = a.kernel("rt_fill")
    assert k.device is a
    y = b.buffer(4 * N, name="y")
    refused(b, "dispatch on " + b.label, "kernel rt_fill was loaded by " + a.label,
            call=lambda: b.dispatch(k, [y], groups=4, push=np.array([N, 0], np.uint32)))
    b.dispatch(b.kernel("rt_fill"), [y], groups=4, push=np.array([N, 0], np.uint32))
    assert b.stats["dispatches"] == 1


def test_kernel_and_buffer_of_a_closed_device_are_refused():
    """Used to segfault: the closed Device's pipeline was bound on another."""
    with Device(manifest=rt.MANIFEST, validation=True) as b:
        a = Device(manifest=rt.MANIFEST, validation=True)
        k, x = a.kernel("rt_fill"), a.buffer(4 * N, name="x")
        a.close()
        y = b.buffer(4 * N, name="y")
        push = np.array([N, 0], np.uint32)
        msg = refused(b, "kernel rt_fill was loaded by the closed " + a.label, b.label,
                      call=lambda: b.dispatch(k, [y], groups=4, push=push))
        assert "not the closed" not in msg
        refused(b, "buffer x belongs to the closed " + a.label,
                call=lambda: b.dispatch(b.kernel("rt_fill"), [x], groups=4, push=push))
        refused(b, "upload destination", "buffer x", "closed", call=lambda: b.upload(x, b"\0" * 16))
        refused(b, "download source", "buffer x", "closed", call=lambda: b.download(x))
        refused(b, "copy source", "buffer x", "closed", call=lambda: b.copy(x, y))
        # The closed Device itself refuses everything too.
        with pytest.raises(GenspirvError, match="closed"):
            a.dispatch(k, [x], groups=4, push=push)
        rt.fill(b, y, N, 3.0)
        np.testing.assert_array_equal(b.download(y), np.full(N, 3.0, np.float32))
    silent(a, b)


# -- threads -------------------------------------------------------------------------


def _count_occupancy(monkeypatch):
    """Instrument the critical section: every dispatch and copy is recorded by a
    Recorder while the Device's lock is held; count how many threads are inside at
    once (sleep(0) lets another thread run there if nothing stops it)."""
    inside, peak = [0], [0]
    guard = threading.Lock()

    def occupied(original):
        def method(*args, **kwargs):
            with guard:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            try:
                time.sleep(0)
                return original(*args, **kwargs)
            finally:
                with guard:
                    inside[0] -= 1
        return method

    for name in ("dispatch", "copy"):
        monkeypatch.setattr(Recorder, name, occupied(getattr(Recorder, name)))
    return peak


def test_one_device_shared_by_four_threads_is_exact(monkeypatch):
    peak = _count_occupancy(monkeypatch)
    with Device(manifest=rt.MANIFEST, validation=True) as dev:
        before = dev.stats
        done = rt.thread_chains(dev, threads=4, rounds=4, steps=16, n=N)
        after = dev.stats
    assert done["failures"] == []
    assert done["dispatches"] == 4 * 4 * 16 and done["uploads"] == done["downloads"] == 16
    assert after["dispatches"] - before["dispatches"] == done["dispatches"]
    assert after["staged_uploads"] - before["staged_uploads"] == done["uploads"]
    # A chain step reads what the one before wrote: at least one barrier per step of
    # some thread; never more than one per command recorded.
    assert done["dispatches"] // 4 <= after["barriers"] <= done["dispatches"] + 2 * done["uploads"] \
        + 2 * done["downloads"]
    assert peak[0] == 1, f"{peak[0]} threads were inside the device at once"
    silent(dev)


NO_LOCK = textwrap.dedent("""\
    import json, os, sys, time
    sys.path.insert(0, "tests/shaders_rt")
    import rt
    from genspirv.runtime import Device

    class NoLock:                      # the lock, removed
        def __enter__(self): return self
        def __exit__(self, *exc): return False
        def acquire(self): return True
        def release(self): pass

    t0, attempts, failures = time.monotonic(), 0, []
    dev = Device(manifest=rt.MANIFEST)
    dev._lock = NoLock()
    print("started", flush=True)
    while not failures and time.monotonic() - t0 < float(sys.argv[1]):
        attempts += 1
        before = dev.stats["dispatches"]
        done = rt.thread_chains(dev, threads=4, rounds=4, steps=16, n=1024)
        failures = done["failures"]
        counted = dev.stats["dispatches"] - before
        if counted != done["dispatches"]:
            failures.append(f"{counted} dispatches counted, {done['dispatches']} made")
    print(json.dumps({"attempts": attempts, "failures": failures[:8]}), flush=True)
    os._exit(0)      # the raced device may not close cleanly: that is not what is measured
""")


@pytest.mark.slow
def test_without_the_lock_threads_race():
    """The negative control: the same workload with the lock made a no-op goes wrong
    (wrong values, a miscount, an exception in a thread, a crash or a hang) within 10 s."""
    try:
        proc = subprocess.run([sys.executable, "-c", NO_LOCK, "10"], cwd=REPO_ROOT, env=cli_env(),
                              capture_output=True, text=True, timeout=40)
    except subprocess.TimeoutExpired as exc:
        assert "started" in (exc.stdout or b"").decode(), "the child never got going"
        return                    # threads deadlocked in the driver: went wrong
    assert "started" in proc.stdout, proc.stderr[-2000:]
    if proc.returncode != 0:      # a crash in the driver or Python: went wrong
        return
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failures"], (f"{report['attempts']} attempts without the lock never went wrong: "
                                f"the thread test cannot tell the lock from its absence")
