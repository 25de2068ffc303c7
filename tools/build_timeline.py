"""Where a build's wall time goes: the serial part before the first compile, the compiles, and after.

    python tools/build_timeline.py PROJECT [--jobs N] [--check] [--json FILE]

Runs ``genspirv build --force`` (or ``check``) through the command line's own
``main`` in this process on PROJECT and prints, in seconds from the start: the
imports, the end of each phase of the build (the config loaded, the workers
started, the plan, the writers, the templates' data, the outputs rendered and
committed, the written outputs logged in the stat log), the first tool command started, the last compile finished (its
progress line), and the command returned; with how many tool commands ran and
the command's own CPU. The build's own serial part is what comes before the
first command and after the last progress line. A tool of the build benchmark (docs/BENCHMARKS.md), not of the
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

    import contextlib
    import io
    _mark_phases(mark)
    from genspirv import cli
    from genspirv.console import Progress
    mark("imported")
    # The command as a user runs it (its parser, its imports as they come), -v so that each
    # tool's command line reaches Progress.command, which is timed instead of printed; each
    # compile's [n/N] progress line is timed as it passes.
    Progress.command = lambda self, argv: commands.append(time.perf_counter() - T0)
    real_call = Progress.__call__

    def timed_line(self, line: str) -> None:
        if line.startswith("["):
            progress.append(time.perf_counter() - T0)
        real_call(self, line)
    Progress.__call__ = timed_line
    argv = ["check"] if args.check else ["build", "--force"]
    printed = io.StringIO()
    cpu0 = time.process_time()
    with contextlib.redirect_stdout(printed):
        code = cli.main([*argv, "--root", args.project, "--jobs", str(args.jobs), "-v"])
    what = f"{argv[0]}: exit {code}, " + (printed.getvalue().strip().splitlines() or [""])[-1]
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


# Where each phase of the build ends: these functions are wrapped for the run, not changed. A
# context manager (the early workers) is marked when it is entered.
PHASES = (
    ("genspirv.project.config", "load_config", "config loaded"),
    ("genspirv.buildsys.builder", "Builder._load", "state loaded"),
    ("genspirv.buildsys.compile_workers", "early_workers", "workers asked to start"),
    ("genspirv.buildsys.builder", "Builder._plan", "planned"),
    ("genspirv.buildsys.builder", "Staging.decided", "writers done"),
    ("genspirv.emit", "prepare", "templates' data made"),
    ("genspirv.buildsys.render", "expected_outputs", "outputs rendered"),
    ("genspirv.buildsys.builder", "commit", "committed"),
    ("genspirv.buildsys.builder", "log_written", "written outputs logged"),
    ("genspirv.buildsys.builder", "Builder._run_steps", "compiles returned"),
)
CONTEXTS = {"early_workers"}


def _mark_phases(mark) -> None:
    """Wrap each phase's function when its module is imported (not before: importing the build's
    modules here would move their import cost ahead of what the command does first)."""
    import contextlib
    import functools
    import importlib.abc
    import importlib.util

    def wrap(module, dotted: str, label: str) -> None:
        *path, name = dotted.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part, None)
        real = getattr(owner, name, None)
        if real is None:
            return      # an older tree without this phase: timed without it
        if name in CONTEXTS:
            @contextlib.contextmanager
            def wrapped(*a, _real=real, _label=label, **kw):
                mark(_label)
                with _real(*a, **kw) as value:
                    yield value
        else:
            def wrapped(*a, _real=real, _label=label, **kw):
                try:
                    return _real(*a, **kw)
                finally:
                    mark(_label)
        setattr(owner, name, functools.wraps(real)(wrapped))

    wanted: dict[str, list] = {}
    for module_name, dotted, label in PHASES:
        wanted.setdefault(module_name, []).append((dotted, label))

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname not in wanted:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module, _run=run, _phases=wanted[fullname]):
                _run(module)
                for dotted, label in _phases:
                    wrap(module, dotted, label)
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Finder())


if __name__ == "__main__":
    sys.exit(main())
