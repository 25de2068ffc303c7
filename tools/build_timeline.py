"""Where a build's wall time goes: the serial part before the first compile, the compiles, and after.

    python tools/build_timeline.py PROJECT [--jobs N] [--check] [--json FILE]

Runs ``genspirv build`` (or ``check``) in this process on PROJECT and prints, in
seconds from the start: the imports, the config loaded, the first tool command
started, the last compile finished (its progress line), and the build
returned; with how many tool commands ran and how busy the ``--jobs`` workers
were between the first command and the last progress line. The build's own
serial part is what comes before the first command and after the last
progress line. A tool of the build benchmark (docs/BENCHMARKS.md), not of the
build: it times one run and decides nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

T0 = time.perf_counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--check", action="store_true", help="time genspirv check instead of a build")
    ap.add_argument("--json", help="write the timeline to this file")
    args = ap.parse_args()

    marks: dict[str, float] = {}
    commands: list[float] = []
    progress: list[float] = []

    def mark(name: str) -> None:
        marks[name] = time.perf_counter() - T0

    from genspirv.project.config import load_config
    from genspirv.build.builder import build
    from genspirv.build.check import check
    mark("imported")
    config = load_config(args.project)
    mark("config loaded")
    on_command = lambda cmd: commands.append(time.perf_counter() - T0)  # noqa: E731
    log = lambda line: progress.append(time.perf_counter() - T0)        # noqa: E731
    cpu0 = time.process_time()
    if args.check:
        report = check(config, jobs=args.jobs, log=log, on_command=on_command)
        what = f"check: {len(report.differences)} differences"
    else:
        report = build(config, jobs=args.jobs, force=True, log=log, on_command=on_command)
        what = f"build: {report.summary()}"
    mark("returned")
    cpu = time.process_time() - cpu0
    if commands:
        marks["first command"] = commands[0]
    if progress:
        marks["last compile done"] = progress[-1]
    out = {"project": args.project, "jobs": args.jobs, "what": what, "commands": len(commands),
           "compiles": len(progress), "main_process_cpu_s": round(cpu, 3),
           "marks_s": {k: round(v, 3) for k, v in sorted(marks.items(), key=lambda kv: kv[1])}}
    if commands and progress:
        busy = progress[-1] - commands[0]
        out["serial_before_s"] = round(commands[0], 3)
        out["serial_after_s"] = round(marks["returned"] - progress[-1], 3)
        out["compiling_s"] = round(busy, 3)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
