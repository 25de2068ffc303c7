"""Host cost per dispatch: this tree against another one, side by side.

    git archive REV | tar -x -C /tmp/genspirv-base
    python tools/host_ab.py --baseline /tmp/genspirv-base --baseline-label REV --rounds 6 --json host_ab.json

Each arm is a fresh Python process that imports genspirv from its own tree
(``PYTHONPATH``) and uses the public runtime API only, so any commit since the
runtime has had ``dev.record()`` can be the baseline. Rounds alternate the
arms (A B, B A, ...); figures are medians of every sample of an arm, with
the ratio baseline / this tree from the same run, and the same for the 10th
percentiles: on a machine whose other core is busy at times, CPU time per
sample comes in two clusters, and the low percentile compares the quiet ones. Per sample, the calling
thread's CPU time (``time.thread_time``) per dispatch, on the device
``GENSPIRV_DEVICE`` selects:

- ``record``: 1,024 fills into disjoint 1 KiB views of one buffer, recorded
  into one batch, not submitted (views and push data made first);
- ``step``: 25 layers of a mixed graph (two scales, their sum, a residual
  add: 100 dispatches, 75 dependencies) over 16 KiB buffers, recorded,
  submitted and waited for;
- ``replay``: the same step captured once and resubmitted, waited for;
- ``replay_amortised``: that capture run 10 times back to back, then one wait.

The same workloads as ``python -m benchmarks runtime``'s peer arm
(``benchmarks.peer``), written out here because a baseline tree may
predate that module.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, statistics, struct, sys, time
from genspirv.runtime import Device

samples = int(sys.argv[1])
with Device() as dev:
    dev.batch_size = 1 << 20
    fill, scale, add = dev.kernel("fill_f32"), dev.kernel("scale_f32"), dev.kernel("add_f32")
    big = dev.buffer(1024 * 1024)
    views = [big.view(i * 1024, 1024) for i in range(1024)]
    pushes = [struct.pack("<If", 256, float(i)) for i in range(1024)]
    n = 4096
    x, x2, t1, t2, t3 = (dev.buffer(4 * n) for _ in range(5))
    p5, p25, pa = struct.pack("<If", n, 0.5), struct.pack("<If", n, 0.25), struct.pack("<I", n)

    def record():
        for i in range(1024):
            dev.dispatch(fill, [views[i]], 1, pushes[i])

    def layers():
        for i in range(25):
            src, dst = (x, x2) if i % 2 == 0 else (x2, x)
            dev.dispatch(scale, [src, t1], 16, p5)
            dev.dispatch(scale, [src, t2], 16, p25)
            dev.dispatch(add, [t1, t2, t3], 16, pa)
            dev.dispatch(add, [t3, src, dst], 16, pa)

    with dev.record() as graph:
        layers()
    work = {"record": (record, 1024), "step": (lambda: (layers(), dev.synchronize()), 100),
            "replay": (lambda: (graph.run(), dev.synchronize()), 100),
            "replay_amortised": (lambda: ([graph.run() for _ in range(10)], dev.synchronize()), 1000)}
    for run, _ in work.values():        # every in-flight slot writes its descriptor sets once
        for _ in range(2):
            run()
            dev.synchronize()
    out = {}
    for name, (run, per) in work.items():
        cpu = []
        for _ in range(samples):
            dev.synchronize()
            t0 = time.thread_time_ns()
            run()
            cpu.append((time.thread_time_ns() - t0) / 1e3 / per)
            dev.synchronize()
        out[name] = cpu
    dev.synchronize()
    graph.destroy()
print(json.dumps(out))
"""


def run_arm(tree: Path, samples: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(samples)], env=env, cwd="/",
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"arm {tree} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _revision(tree: Path) -> str:
    """The tree's commit (short), with ``+changes`` when it has uncommitted ones."""
    def git(*a):
        return subprocess.run(["git", "-C", str(tree), *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the other tree (a checkout or archive)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--samples", type=int, default=5, help="samples per workload and round")
    ap.add_argument("--baseline-label", default=None,
                    help="what the baseline is, for the JSON (default: its folder's name)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    trees = {"baseline": args.baseline.resolve(), "this": ROOT}
    runs: dict = {arm: {} for arm in trees}
    for r in range(args.rounds):
        for arm in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            for name, values in run_arm(trees[arm], args.samples).items():
                runs[arm].setdefault(name, []).extend(values)
    medians = {arm: {name: statistics.median(v) for name, v in w.items()} for arm, w in runs.items()}
    p10 = {arm: {name: statistics.quantiles(v, n=10)[0] for name, v in w.items()} for arm, w in runs.items()}
    print(f"{'workload':<16} {'statistic':<9} {'baseline us':>12} {'this us':>9} {'baseline / this':>16}")
    for name in medians["this"]:
        for stat, table in (("median", medians), ("p10", p10)):
            b, t = table["baseline"][name], table["this"][name]
            print(f"{name:<16} {stat:<9} {b:>12.2f} {t:>9.2f} {b / t:>16.2f}")
    if args.json is not None:
        # The trees by revision, not by local folder.
        labels = {"baseline": args.baseline_label or args.baseline.resolve().name, "this": _revision(ROOT)}
        args.json.write_text(json.dumps({"trees": labels, "device": os.environ.get("GENSPIRV_DEVICE", ""),
                                         "rounds": args.rounds, "samples": args.samples,
                                         "cpu_us_per_dispatch": runs, "medians": medians, "p10": p10,
                                         "ratios_baseline_over_this": {
                                             stat: {n: table["baseline"][n] / table["this"][n]
                                                    for n in table["this"]}
                                             for stat, table in (("median", medians), ("p10", p10))}},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
