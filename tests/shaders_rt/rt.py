"""Helpers shared by the runtime tests (lavapipe) and tests/gpu (a real GPU).

The kernels are the test-only ones beside this file (rt_fill, rt_scale,
rt_add, rt_rmw, rt_spec, rt_ubo); push layouts are in their sources. The
folder is a genspirv project of its own: after editing glsl/, run
``python -m genspirv --root tests/shaders_rt build`` and commit the result.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

MANIFEST = Path(__file__).resolve().parent / "manifests" / "shaders.json"

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def device_present() -> bool:
    """A Vulkan device opens here (tests skip, rather than fail, on a machine without one)."""
    from genspirv.runtime import Device
    try:
        with Device(manifest=MANIFEST):
            return True
    except Exception:
        return False


def groups_for(n: int, local: int = 256) -> int:
    return (n + local - 1) // local


def fill(dev, y, n: int, value: float) -> None:
    dev.dispatch("rt_fill", [y], groups=groups_for(n), push=struct.pack("<If", n, value))


def scale(dev, x, y, n: int, alpha: float) -> None:
    dev.dispatch("rt_scale", [x, y], groups=groups_for(n), push=struct.pack("<If", n, alpha))


def add(dev, a, b, c, n: int) -> None:
    dev.dispatch("rt_add", [a, b, c], groups=groups_for(n), push=struct.pack("<I", n))


def rmw(dev, y, n: int, alpha: float, beta: float) -> None:
    dev.dispatch("rt_rmw", [y], groups=groups_for(n), push=struct.pack("<Iff", n, alpha, beta))


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def raw_chain(dev, n: int, steps: int, seed: int = 0):
    """A read-after-write chain: x -> y -> x -> ... with y = 2x, alternating buffers.

    Every step reads what the previous one wrote and overwrites what the one
    before it read (RAW and WAR each step). Returns (result, numpy reference).
    """
    rng = np.random.default_rng(seed)
    x0 = rng.integers(-8, 8, n).astype(np.float32)
    bufs = [dev.buffer(4 * n), dev.buffer(4 * n)]
    dev.upload(bufs[0], x0)
    for i in range(steps):
        # alpha alternates 2 and 0.5 so the values stay exact over any number of steps
        scale(dev, bufs[i % 2], bufs[(i + 1) % 2], n, 2.0 if i % 2 == 0 else 0.5)
    ref = x0 * (2.0 if steps % 2 else 1.0)
    return dev.download(bufs[steps % 2]), ref


def rmw_chain(dev, n: int, steps: int):
    """The same buffer read-modify-written by a fill and then `steps` rmw dispatches."""
    y = dev.buffer(4 * n)
    fill(dev, y, n, 1.0)
    for _ in range(steps):
        rmw(dev, y, n, 1.0, 1.0)
    return dev.download(y), np.full(n, 1.0 + steps, np.float32)


def diamond(dev, n: int):
    """x -> (a = 2x, b = 0.5x) -> c = a + b."""
    x0 = np.arange(n, dtype=np.float32)
    x, a, b, c = (dev.buffer(4 * n) for _ in range(4))
    dev.upload(x, x0)
    scale(dev, x, a, n, 2.0)
    scale(dev, x, b, n, 0.5)
    add(dev, a, b, c, n)
    return dev.download(c), 2.5 * x0


def thread_chains(dev, threads: int = 4, rounds: int = 3, steps: int = 16, n: int = 1024) -> dict:
    """``threads`` threads share ``dev``; each, ``rounds`` times: upload its own data,
    run a read-after-write chain of ``steps`` scale dispatches over two buffers of its
    own, download and compare with numpy.

    Returns ``{"failures": [...], "dispatches": d, "uploads": u, "downloads": r}``:
    a failure is a wrong value or an exception in a thread (named); d, u and r are
    what the threads did, for comparison with ``dev.stats``.
    """
    import threading

    start = threading.Barrier(threads)
    failures: list[str] = []
    done = {"dispatches": 0, "uploads": 0, "downloads": 0}
    tally = threading.Lock()

    def worker(t: int) -> None:
        try:
            x0 = (np.arange(n, dtype=np.float32) % 64) + 100 * t
            bufs = [dev.buffer(4 * n, name=f"t{t}x"), dev.buffer(4 * n, name=f"t{t}y")]
            start.wait()
            for r in range(rounds):
                dev.upload(bufs[0], x0 + r)
                for i in range(steps):
                    scale(dev, bufs[i % 2], bufs[(i + 1) % 2], n, 2.0 if i % 2 == 0 else 0.5)
                out = dev.download(bufs[steps % 2])
                ref = (x0 + r) * (2.0 if steps % 2 else 1.0)
                wrong = int(np.count_nonzero(out != ref))
                with tally:
                    done["uploads"] += 1
                    done["dispatches"] += steps
                    done["downloads"] += 1
                    if wrong:
                        failures.append(f"thread {t}, round {r}: {wrong} of {n} values wrong")
        except Exception as exc:      # noqa: BLE001 (any exception in a thread is a failure)
            with tally:
                failures.append(f"thread {t}: {type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return {"failures": failures, **done}


def refused(dev, exc_type, *needles, call) -> str:
    """Run ``call``: it must raise ``exc_type`` (a GenspirvError) naming every needle,
    and leave ``dev.stats`` as it was. The message, for further checks."""
    import pytest
    from genspirv.errors import GenspirvError
    before = dev.stats
    with pytest.raises(exc_type) as info:
        call()
    assert isinstance(info.value, GenspirvError)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in: {info.value}"
    assert dev.stats == before, "a refused call changed the counters"
    return str(info.value)
