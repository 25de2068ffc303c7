"""Seconds before a build's first compile with a remote cache: this tree against another one.

    git archive REV | tar -x -C /tmp/genspirv-base
    python tools/remote_fetch_ab.py --baseline /tmp/genspirv-base --baseline-label REV --rounds 4 --json out.json

A first machine's cold build of the ``build-generator`` project (``--variants``,
1,000 by default) in read-write mode against an empty nginx WebDAV store on
127.0.0.1 (``benchmarks.webdav``), stopped at its first compiler command:
what it measures is the wait before any compile starts (planning, and, where
the build asks the store for everything first, every fetch). A third arm,
``no remote cache``, is this tree without a store: the floor. Each sample is a
fresh Python process that imports genspirv from its own tree, on a fresh copy
of the project; rounds alternate the arms' order. Figures are medians of every
sample of an arm (the machine is shared: take them as such).
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
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from benchmarks import synth  # noqa: E402
from benchmarks.webdav import WebdavStore  # noqa: E402

SECRET = "genspirv-bench-secret"
# One sample: the build in this process, from the tree on sys.path[0], until its first command.
PROBE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from genspirv.buildsys.builder import build
from genspirv.project.config import load_config
config = load_config(sys.argv[2])
start, first = time.monotonic(), []
def on_command(argv):
    first.append(time.monotonic() - start)
    raise KeyboardInterrupt
try:
    build(config, jobs=2, on_command=on_command, log=lambda line: None)
except KeyboardInterrupt:
    pass
import genspirv
print(json.dumps([first[0] if first else None, genspirv.__file__]))
"""


def sample(tree: Path, project: Path, url: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENSPIRV_")}
    if url is not None:
        env.update(GENSPIRV_REMOTE_CACHE=url, GENSPIRV_REMOTE_CACHE_MODE="read-write",
                   GENSPIRV_REMOTE_CACHE_SECRET=SECRET)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tree), str(project)], env=env, cwd=project,
                          capture_output=True, text=True, check=True)
    seconds, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    if not Path(imported).resolve().is_relative_to(tree):
        raise SystemExit(f"remote_fetch_ab: the sample imported {imported}, not the tree {tree}")
    if seconds is None:
        raise SystemExit(f"remote_fetch_ab: the build of {project} ran no compile")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--baseline", type=Path, required=True, help="another genspirv tree (git archive REV)")
    ap.add_argument("--baseline-label", default="baseline")
    ap.add_argument("--variants", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    arms = {args.baseline_label: (args.baseline.resolve(), True), "this tree": (HERE, True),
            "no remote cache": (HERE, False)}
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-remote-ab-"))
    samples: dict[str, list[float]] = {arm: [] for arm in arms}
    try:
        gen = synth.generate_generator_project(HERE, scratch / "pristine", args.variants)
        with WebdavStore(scratch / "server") as store:
            for r in range(args.rounds):
                for arm in list(arms) if r % 2 == 0 else list(arms)[::-1]:
                    shutil.rmtree(store.root, ignore_errors=True)       # every first machine: an empty store
                    store.root.mkdir(parents=True)
                    project = scratch / f"round-{r}"
                    shutil.copytree(gen.root, project)
                    tree, remote = arms[arm]
                    samples[arm].append(sample(tree, project, store.url if remote else None))
                    shutil.rmtree(project, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"variants": args.variants, "rounds": args.rounds, "cores": os.cpu_count(),
              "load1": os.getloadavg()[0], "samples_s": samples,
              "median_s": {arm: statistics.median(s) for arm, s in samples.items()}}
    for arm, s in samples.items():
        print(f"{arm:>20}: {statistics.median(s) * 1000:.0f} ms to the first compile "
              f"(min {min(s) * 1000:.0f}, max {max(s) * 1000:.0f}, n={len(s)})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
