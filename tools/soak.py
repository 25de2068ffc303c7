"""Soak the runtime: many dispatches with random dependencies, checked against numpy.

Takes a dispatch count, a seed and a barrier policy; gives a ``SoakResult``
(time, counters, RSS samples) or raises ``SoakMismatch`` naming the first
dispatch whose effect the device got wrong.

A few device buffers are mirrored by numpy arrays. Each step picks one of
add / scale / fill / copy (the f32 kernels of the library genspirv ships) over random views of random buffers, runs it on the device and applies the
same operation to the mirror. Views overlap freely between steps, so every
kind of hazard (RAW, WAR, WAW) comes up, next to independent work that needs
no barrier. Uploads and downloads of random views are mixed in, and every
``--check-every`` dispatches all buffers are read back and compared exactly.

Exactness: values are integers below 2**22 in float32, so add and multiply
are exact on every device (fused or not, no denormals, no rounding); a step
whose result would leave that range is replaced by a fill.

    python tools/soak.py --dispatches 100000            # lavapipe or the first GPU
    python tools/soak.py --dispatches 100000 --json out.json
    GENSPIRV_DEVICE=lavapipe python tools/soak.py ...   # pick a device

Exit 0 when every read-back matched, 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from genspirv.runtime import Device  # noqa: E402

BUFFERS = 4
ELEMS = 16384                 # float32 per buffer (64 KiB)
ALIGN = 64                    # views start on 256-byte boundaries: any device's storage offset alignment
LIMIT = float(1 << 22)        # |value| bound that keeps every add and multiply exact
LOCAL_SIZE = 256              # local_size_x of the element-wise kernels
RSS_EVERY = 1000


class SoakMismatch(AssertionError):
    pass


@dataclass
class SoakResult:
    dispatches: int
    seconds: float
    seed: int
    policy: str
    device: str
    stats: dict
    readbacks: int
    ops: dict = field(default_factory=dict)       # how many of each operation ran
    rss_kib: list = field(default_factory=list)   # (dispatches so far, RSS KiB) samples

    def rss_at(self, fraction: float) -> int:
        """The RSS sample nearest ``fraction`` of the run (KiB)."""
        return self.rss_kib[min(len(self.rss_kib) - 1, round(fraction * (len(self.rss_kib) - 1)))][1]

    @property
    def rss_growth_kib(self) -> int:
        """RSS growth after warm-up: the last sample minus the one at 10% of the run."""
        return self.rss_at(1.0) - self.rss_at(0.1)

    @property
    def rss_growth_second_half_kib(self) -> int:
        return self.rss_at(1.0) - self.rss_at(0.5)

    def summary(self) -> dict:
        d = asdict(self)
        d["rss_kib_at"] = {"start": self.rss_at(0.0), "10%": self.rss_at(0.1), "50%": self.rss_at(0.5),
                           "end": self.rss_at(1.0)}
        d["rss_growth_kib"] = self.rss_growth_kib
        d["rss_growth_second_half_kib"] = self.rss_growth_second_half_kib
        d["dispatches_per_s"] = round(self.dispatches / self.seconds, 1) if self.seconds else None
        return d


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


class Soak:
    """One device, its buffers, their numpy mirror and the random op stream."""

    def __init__(self, dev: Device, rng: random.Random):
        self.dev = dev
        self.rng = rng
        self.kernels = {name: dev.kernel(name) for name in ("add_f32", "scale_f32", "fill_f32", "copy_f32")}
        self.buffers = [dev.buffer(ELEMS * 4) for _ in range(BUFFERS)]
        self.mirror = [self.small_ints(ELEMS) for _ in range(BUFFERS)]
        for buf, host in zip(self.buffers, self.mirror):
            dev.upload(buf, host)
        self.readbacks = 0

    # -- random choices -----------------------------------------------------

    def small_ints(self, n: int) -> np.ndarray:
        return np.random.default_rng(self.rng.randrange(1 << 32)).integers(-64, 64, n).astype(np.float32)

    def view(self, n: Optional[int] = None) -> tuple[int, int, int]:
        """(buffer index, first element, element count), the start aligned to ALIGN."""
        b = self.rng.randrange(BUFFERS)
        if n is None:
            # Mostly small views (many independent dispatches), sometimes whole buffers.
            n = self.rng.choice([self.rng.randint(1, 512), self.rng.randint(1, 4096), ELEMS])
        start = self.rng.randrange(0, (ELEMS - n) // ALIGN + 1) * ALIGN
        return b, start, n

    def output_view(self, n: int, inputs: list[tuple[int, int, int]]) -> tuple[int, int, int]:
        """A view to write that overlaps no input, unless it is the very same range.

        A write that partly overlaps a read of the same dispatch is a race inside
        the dispatch, not a hazard between dispatches: its result is undefined.
        """
        for _ in range(20):
            out = self.view(n)
            if all(out == v or not overlap(out, v) for v in inputs):
                return out
        return inputs[0]          # in place: always defined

    # -- the device and the mirror in step ------------------------------------

    def bind(self, v: tuple[int, int, int]):
        b, start, n = v
        return self.buffers[b].view(start * 4, n * 4)

    def host(self, v: tuple[int, int, int]) -> np.ndarray:
        b, start, n = v
        return self.mirror[b][start:start + n]

    def dispatch(self, kernel: str, views, push: bytes, n: int) -> None:
        self.dev.dispatch(self.kernels[kernel], [self.bind(v) for v in views],
                          groups=((n + LOCAL_SIZE - 1) // LOCAL_SIZE, 1, 1), push=push)

    def step(self) -> str:
        op = self.rng.choice(("add", "scale", "fill", "copy"))
        n = self.view()[2]
        x = self.view(n)
        if op == "add":
            b = self.view(n)
            y = self.output_view(n, [x, b])
            result = self.host(x) + self.host(b)
        elif op == "scale":
            y = self.output_view(n, [x])
            alpha = float(self.rng.choice((-2, -1, 0, 1, 2, 3)))
            result = np.float32(alpha) * self.host(x)
        elif op == "copy":
            y = self.output_view(n, [x])
            result = self.host(x).copy()
        if op == "fill" or np.abs(result).max(initial=0) >= LIMIT:
            op, y = "fill", self.view(n)
            value = float(self.rng.randint(-100, 100))
            self.dispatch("fill_f32", [y], push(n, value), n)
            result = np.float32(value)
        elif op == "add":
            self.dispatch("add_f32", [x, b, y], push(n), n)
        elif op == "scale":
            self.dispatch("scale_f32", [x, y], push(n, alpha), n)
        else:
            self.dispatch("copy_f32", [x, y], push(n), n)
        self.host(y)[:] = result
        return op

    def upload_random(self) -> None:
        v = self.view()
        data = self.small_ints(v[2])
        self.dev.upload(self.bind(v), data)
        self.host(v)[:] = data

    def compare(self, v: tuple[int, int, int], at: int) -> None:
        got = self.dev.download(self.bind(v), dtype="float32")
        self.readbacks += 1
        want = self.host(v)
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            b, start, _ = v
            raise SoakMismatch(
                f"after dispatch {at}: buffer {b} elements {start}..{start + v[2]}: {bad.size} differ, "
                f"first at element {start + bad[0]}: device {got[bad[0]]!r}, numpy {want[bad[0]]!r}")

    def compare_all(self, at: int) -> None:
        for b in range(BUFFERS):
            self.compare((b, 0, ELEMS), at)


def push(n: int, value: Optional[float] = None) -> bytes:
    """The element-wise kernels' push block: uint n, then float alpha/value if any."""
    data = np.array([n], np.uint32).tobytes()
    return data if value is None else data + np.array([value], np.float32).tobytes()


def overlap(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2]


def run_soak(dispatches: int, seed: int = 0, policy: Optional[str] = None, check_every: int = 1000,
             manifest: Optional[Path] = None, validation: bool = False, log=None) -> SoakResult:
    """Run the soak; raises SoakMismatch at the first wrong read-back."""
    rng = random.Random(seed)
    with Device(manifest=None if manifest is None else str(manifest), validation=validation,
                barriers=policy) as dev:
        soak = Soak(dev, rng)
        samples = [(0, rss_kib())]
        ops: dict[str, int] = {}
        start = time.perf_counter()
        for i in range(1, dispatches + 1):
            op = soak.step()
            ops[op] = ops.get(op, 0) + 1
            roll = rng.random()
            if roll < 0.01:
                soak.upload_random()
            elif roll < 0.015:
                soak.compare(soak.view(), i)
            if i % check_every == 0 or i == dispatches:
                soak.compare_all(i)
            if i % RSS_EVERY == 0:
                samples.append((i, rss_kib()))
                if log and i % (RSS_EVERY * 10) == 0:
                    log(f"{i} dispatches, {time.perf_counter() - start:.1f} s, RSS {samples[-1][1]} KiB")
        dev.synchronize()
        seconds = time.perf_counter() - start
        return SoakResult(dispatches=dispatches, seconds=round(seconds, 3), seed=seed,
                          policy=dev.barrier_policy,
                          device=str(dev.properties.get("name", "?")), stats=dict(dev.stats),
                          readbacks=soak.readbacks, ops=ops, rss_kib=samples)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dispatches", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", choices=("smart", "always", "none"), default=None,
                    help="barrier policy (default: GENSPIRV_BARRIERS or smart); 'none' is the negative control")
    ap.add_argument("--check-every", type=int, default=1000)
    ap.add_argument("--validation", action="store_true", help="Khronos validation + sync validation")
    ap.add_argument("--json", type=Path, help="write the result here")
    args = ap.parse_args(argv)
    try:
        result = run_soak(args.dispatches, seed=args.seed, policy=args.policy, check_every=args.check_every,
                          validation=args.validation, log=lambda s: print(s, flush=True))
    except SoakMismatch as exc:
        print(f"soak: MISMATCH {exc}", file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps({"ok": False, "error": str(exc), "seed": args.seed}, indent=1) + "\n")
        return 1
    summary = {"ok": True, **result.summary()}
    print(json.dumps({k: v for k, v in summary.items() if k != "rss_kib"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
