"""Where a no-op build's time goes, stage by stage, in a process of its own.

    python tools/noop_stages.py PROJECT [--runs N] [--json FILE]

Each run is a fresh ``python`` that imports the command line, the build and
the generator's runner, then runs ``genspirv build -q --root PROJECT`` through
``genspirv.cli.main`` with the config's loading and the build timed where the
command line calls them: the milliseconds of each stage from the interpreter's
start (``python -c pass`` is measured beside it, the interpreter's own start).
Medians over the runs. The project must be built already (a no-op is timed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

STAGES = ("import cli", "import builder", "import generator", "arguments", "config", "build", "exit")

# One run: the stage marks as JSON on stderr's last line (stdout is the build's summary).
ONE_RUN = r"""
import time; t0 = time.perf_counter()
import json, sys
marks = []
mark = lambda name: marks.append((name, time.perf_counter()))
import genspirv.cli as cli
mark("import cli")
import genspirv.buildsys.builder as builder
mark("import builder")
import genspirv.project.generator
mark("import generator")
config, build = cli._config, builder.build
def timed_config(*a, **k):
    mark("arguments"); value = config(*a, **k); mark("config"); return value
def timed_build(*a, **k):
    value = build(*a, **k); mark("build"); return value
cli._config, builder.build = timed_config, timed_build
code = cli.main(["build", "-q", "--root", sys.argv[1]])
mark("exit")
times, previous = {}, t0
for name, t in marks:
    times[name], previous = (t - previous) * 1e3, t
print(json.dumps(times), file=sys.stderr)
sys.exit(code)
"""


def one(project: str) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", ONE_RUN, project], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"noop_stages: the build failed:\n{proc.stderr}")
    return json.loads(proc.stderr.strip().splitlines()[-1])


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return (time.perf_counter() - t) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args()
    runs, starts, whole = [], [], []
    for _ in range(args.runs):
        starts.append(wall([sys.executable, "-c", "pass"]))
        runs.append(one(args.project))
        whole.append(wall([sys.executable, "-m", "genspirv", "build", "-q", "--root", args.project]))
    medians = {name: statistics.median(r[name] for r in runs) for name in STAGES}
    print(f"{'python -c pass':18s} {statistics.median(starts):6.1f} ms")
    for name in STAGES:
        print(f"{name:18s} {medians[name]:6.1f} ms")
    print(f"{'sum of the stages':18s} {sum(medians.values()):6.1f} ms (from the script's first line)")
    print(f"{'the whole command':18s} {statistics.median(whole):6.1f} ms (python -m genspirv build -q, median)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"project": args.project, "runs": runs, "python_start_ms": starts, "whole_ms": whole,
                       "medians_ms": medians, "python": sys.version}, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
