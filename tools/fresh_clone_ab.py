"""A fresh clone's no-op build: this tree against others, side by side, with the floor beside them.

    git archive REV genspirv | tar -x -C /tmp/genspirv-REV
    python tools/fresh_clone_ab.py PROJECT --baseline /tmp/genspirv-REV --label REV --runs 15 --json F

PROJECT is a built project (``python -m benchmarks build-generator --keep DIR`` keeps
its pristine one: build it once). Each sample copies PROJECT without
``.genspirv/`` (a fresh clone), lets the copy settle for 0.1 s (a clone's files
are not racily new by the time its build starts), then times one arm:
``python -m genspirv build --root COPY -q`` of one tree, run from that tree's
folder (``python -m`` puts the working folder first on ``sys.path``; the tree
is on ``PYTHONPATH`` too), or the fresh-clone floor
(``benchmarks.build_outputs.FRESH_CLONE_FLOOR``: what deciding it must
read, in a Python importing nothing of genspirv). Every build must say it
compiled nothing. Rounds alternate the order of the arms and the first two
are not kept (the CPU clocks up); figures are each arm's median and minimum,
and each tree's median over the floor's, all from the same run. A tool of the
build benchmark (docs/BENCHMARKS.md): it times and decides nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.build_outputs import FRESH_CLONE_FLOOR  # noqa: E402

WARM_ROUNDS = 2
SETTLE_S = 0.1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--baseline", action="append", default=[], type=Path, help="another tree (repeatable)")
    ap.add_argument("--label", action="append", default=[], help="each baseline's name, in order")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    labels = args.label + [str(b) for b in args.baseline[len(args.label):]]
    trees = {**dict(zip(labels, args.baseline)), "this tree": ROOT}
    arms = [*trees, "floor"]
    runs: dict[str, list[float]] = {arm: [] for arm in arms}
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-fresh-clone-"))
    try:
        for i in range(-WARM_ROUNDS, args.runs):
            for arm in (arms if i % 2 == 0 else arms[::-1]):
                seconds = _sample(args.project, scratch / "clone", arm, trees.get(arm))
                if i >= 0:
                    runs[arm].append(round(seconds, 4))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {arm: statistics.median(v) for arm, v in runs.items()}
    doc = {"project": str(args.project), "cpus": os.cpu_count(), "python": sys.version.split()[0],
           "runs_s": runs, "median_s": medians, "min_s": {arm: min(v) for arm, v in runs.items()},
           "over_floor": {arm: round(medians[arm] / medians["floor"], 2) for arm in trees}}
    for arm in arms:
        print(f"{arm:>12}: median {medians[arm] * 1e3:6.0f} ms, min {min(runs[arm]) * 1e3:6.0f} ms"
              + (f", {doc['over_floor'][arm]:.2f}x the floor" if arm in trees else ""))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def _sample(project: Path, clone: Path, arm: str, tree) -> float:
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(project, clone, ignore=shutil.ignore_patterns(".genspirv"), symlinks=True)
    time.sleep(SETTLE_S)
    env, cwd = dict(os.environ), None
    if tree is None:
        cmd = [sys.executable, "-c", FRESH_CLONE_FLOOR, str(clone)]
    else:
        cwd = str(Path(tree).resolve())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [cwd, os.environ.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "genspirv", "build", "--root", str(clone), "-q"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0 or (tree is not None and b" 0 compiled," not in proc.stdout):
        sys.exit(f"fresh_clone_ab: {arm}: exit {proc.returncode}: {(proc.stdout + proc.stderr).decode()[-500:]}")
    return seconds


if __name__ == "__main__":
    sys.exit(main())
