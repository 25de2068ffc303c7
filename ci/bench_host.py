"""Host cost per dispatch: this tree against another one, side by side.

Each arm is a fresh Python process that imports genspirv from its tree
(``PYTHONPATH``) and times dispatches on the device ``GENSPIRV_DEVICE``
selects, using the public runtime API only, so any commit can be the
baseline. Rounds alternate the arms (A B, B A, ...); figures are medians of
every sample of an arm, with the ratio baseline / this tree from the same run.

Workloads (the GPU's time is kept out: the device is idle when a sample starts):

- ``mixed_graph``: 200 dispatches of a mixed graph (40 layers of two readers,
  a join, a residual add; 8 distinct binding combinations) in one batch, then
  a submit: recording, barriers, descriptor sets already written this batch.
- ``decode_step``: 128 dispatches over 128 distinct buffer views, batches of
  64 over 2 in-flight slots, a submit per batch: what a decode token does
  with per-layer weights, token after token (descriptor sets from earlier
  batches, submit and slot retirement included).

Per sample: host CPU time of the calling thread (``time.thread_time``: on a
CPU device the "GPU" threads compete for the same cores, and other work on
the machine moves wall time) and wall time, each divided by the dispatches.

    python ci/bench_host.py                          # this tree only
    git worktree add /tmp/genspirv-base HEAD~1       # or: git archive REV | tar -x -C DIR
    python ci/bench_host.py --baseline /tmp/genspirv-base --rounds 8 --json host.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("mixed_graph", "decode_step")


def _child(samples: int) -> dict:
    import struct

    from genspirv.runtime import Device

    out = {}
    with Device() as dev:
        fill, scale, add = dev.kernel("fill_f32"), dev.kernel("scale_f32"), dev.kernel("add_f32")
        n = 1 << 14
        groups = (n + 255) // 256
        x, x2, t1, t2, t3 = (dev.buffer(4 * n) for _ in range(5))

        def mixed_graph() -> int:
            for i in range(50):
                src, dst = (x, x2) if i % 2 == 0 else (x2, x)
                dev.dispatch(scale, [src, t1], groups=groups, push=struct.pack("<If", n, 0.5))
                dev.dispatch(scale, [src, t2], groups=groups, push=struct.pack("<If", n, 0.25))
                dev.dispatch(add, [t1, t2, t3], groups=groups, push=struct.pack("<I", n))
                dev.dispatch(add, [t3, src, dst], groups=groups, push=struct.pack("<I", n))
            dev.flush()
            return 200

        big = dev.buffer(128 * 1024)
        views = [big.view(i * 1024, 1024) for i in range(128)]

        def decode_step() -> int:
            for i, v in enumerate(views):
                dev.dispatch(fill, [v], groups=1, push=struct.pack("<If", 256, float(i)))
            dev.flush()
            return len(views)

        for name, work, batch in (("mixed_graph", mixed_graph, 1 << 20), ("decode_step", decode_step, 64)):
            dev.batch_size = batch
            for _ in range(2):                     # warm-up: pipelines, pools, caches
                work()
                dev.synchronize()
            cpu, wall = [], []
            for _ in range(samples):
                dev.synchronize()
                t0, c0 = time.perf_counter(), time.thread_time()
                count = work()
                c1, t1_ = time.thread_time(), time.perf_counter()
                cpu.append((c1 - c0) * 1e6 / count)
                wall.append((t1_ - t0) * 1e6 / count)
            dev.synchronize()
            out[name] = {"cpu_us": cpu, "wall_us": wall}
        out["device"] = dev.properties["name"]
    return out


def _run_arm(tree: Path, samples: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--samples", str(samples)],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tree)
    if proc.returncode != 0:
        raise SystemExit(f"arm {tree} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _commit(tree: Path) -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, help="another genspirv tree to compare with")
    ap.add_argument("--rounds", type=int, default=6, help="processes per arm")
    ap.add_argument("--samples", type=int, default=5, help="samples per process and workload")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.samples)))
        return 0
    arms = {"this": ROOT}
    if args.baseline:
        arms = {"baseline": args.baseline.resolve(), "this": ROOT}
    names = list(arms)
    runs = {a: [] for a in names}
    for r in range(args.rounds):
        for a in (names if r % 2 == 0 else names[::-1]):
            runs[a].append(_run_arm(arms[a], args.samples))
            print(f"round {r + 1}/{args.rounds}: {a} done", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    table = {}
    for a in names:
        table[a] = {w: {m: statistics.median([s for run in runs[a] for s in run[w][m]])
                        for m in ("cpu_us", "wall_us")} for w in WORKLOADS}
    device = runs[names[0]][0]["device"]
    print(f"host us per dispatch on {device}, medians of {args.rounds} x {args.samples} samples per arm "
          f"(1-min load average at the end: {load:.1f})")
    head = f"{'workload':<13} {'metric':<8}" + "".join(f" {a:>10}" for a in names)
    if "baseline" in arms:
        head += f" {'baseline/this':>14}"
    print(head)
    for w in WORKLOADS:
        for m in ("cpu_us", "wall_us"):
            row = f"{w:<13} {m:<8}" + "".join(f" {table[a][w][m]:>10.1f}" for a in names)
            if "baseline" in arms:
                row += f" {table['baseline'][w][m] / table['this'][w][m]:>14.2f}"
            print(row)
    if args.json:
        meta = {"device": device, "rounds": args.rounds, "samples": args.samples, "load_avg_1min": load,
                "commits": {a: _commit(t) for a, t in arms.items()}, "trees": {a: str(t) for a, t in arms.items()}}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "medians": table, "runs": runs}, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
