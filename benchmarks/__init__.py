"""Benchmarks: ``python -m benchmarks SUITE [--json FILE]``.

Takes a suite name and options (repeats, sizes, job counts); gives a table on
stdout and, with ``--json``, every raw run plus the metadata needed to
reproduce it (date, device, genspirv commit, Python, cores).

- ``build``   — ``build_suite``: a synthetic project at several sizes and job
  counts; cold build, no-op, one-header edit and check beside glslangValidator
  alone over the same variants.
- ``build-generator`` — ``build_suite``: the same at a real backend's scale (400,
  1,000, 2,000 variants from a generator file, most optimised): cold build
  beside glslang alone, glslang + spirv-opt, the peer's pipeline (glslc per
  variant, where glslc is installed) and glslang in its library alone, no-op, fresh-clone no-op,
  one-header edit and check (``--quick``: cold, no-op and fresh-clone no-op only);
  ``--remote``: ``remote_suite``, a second machine's cold build from a warm
  remote cache against the first machine's.
- ``reflect`` — ``reflect_suite``: ``reflect()`` against blob size and count,
  beside ``spirv-cross <blob> --reflect`` and the ``genspirv reflect`` command.
- ``runtime`` — ``runtime_suite`` with ``runtime_micro``'s workloads: barrier
  policies, submission, host cost per dispatch, on the device GENSPIRV_DEVICE
  selects.
- ``demo``    — ``runtime_suite``: the decode demo (``examples.llm``) under each
  barrier policy, through the same driver loop as ``python -m examples.llm``.
- ``kernel``  — ``kernel_suite``: ``mul_mat_vec`` GB/s against the bandwidth probes' peak.
- ``push``    — ``runtime_suite`` with ``runtime_micro.run_push_bench``: host CPU per
  dispatch with named push constants against bytes packed by the caller.
- ``compilers`` — ``compiler_suite``: feature-gated variants (coopmat2, integer dot,
  bfloat16, fp8, fp4) that glslang 13.1.1 and slang-glslang each build, and the
  time per variant of each (needs the ``slang-glslang`` extra and a checkout).
- ``build-ab`` — ``ab_suite``: this tree's cold build, no-op, fresh-clone no-op and
  header-edit rebuild beside another revision's (``--baseline REV``), in one run.
- ``c-backend`` — ``c_backend_suite``: host time per recorded dispatch of the worked C
  backend (``examples/c-backend``, ``genspirv/vulkan.h``) beside the Python runtime on the
  same graph and device.
- ``tables`` — ``tables_suite``: a real backend's generated code (2,000 variants, a C++ file
  per source and a header from one template): the render of every output before and after
  (``--baseline REV``), in one process and in N, and the C++ compile of the tables as hex
  arrays beside ``blobs = "files"`` with each compiler here.

``--quick`` gives the smallest honest run of each suite.

The suites and the harness are imported only when a benchmark runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

# build --quick: one small project, one job, two runs (each can still be set explicitly).
QUICK_BUILD = {"sizes": (50,), "jobs": (1,), "repeat": 2}

# suite name -> (module, function)
SUITES = {
    "build": ("build_suite", "bench_build"),
    "build-generator": ("build_suite", "bench_build_generator"),
    "reflect": ("reflect_suite", "bench_reflect_suite"),
    "runtime": ("runtime_suite", "bench_runtime"),
    "demo": ("runtime_suite", "bench_demo"),
    "kernel": ("kernel_suite", "bench_kernel"),
    "push": ("runtime_suite", "bench_push"),
    "compilers": ("compiler_suite", "bench_compilers"),
    "c-backend": ("c_backend_suite", "bench_c_backend"),
    "build-ab": ("ab_suite", "bench_build_ab"),
    "tables": ("tables_suite", "bench_tables"),
}


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, not {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected whole numbers of at least 1, not {text!r}")
    return values


def _bounded(convert, ok, expected: str):
    """An argparse type: ``convert(text)``, which must satisfy ``ok``, else says ``expected``."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, not {text!r}")
        return value
    return parse


_positive = _bounded(int, lambda v: v >= 1, "a whole number of at least 1")
_share = _bounded(float, lambda v: 0.0 < v <= 1.0, "a share in (0, 1]")
_share_or_more = _bounded(float, lambda v: v >= 1.0, "a number of at least 1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand's arguments (``--root`` comes from the CLI's common options)."""
    parser.add_argument("suite", choices=list(SUITES), help="what to measure")
    parser.add_argument("--json", metavar="FILE", type=Path, default=None,
                        help="write every raw run and the metadata to FILE")
    parser.add_argument("--repeat", type=_positive, metavar="N", default=None,
                        help="runs per measurement (default: per suite, fewer for big sizes)")
    parser.add_argument("--sizes", type=_int_list, metavar="N,N,...", default=None,
                        help="build: variant counts (default 50,200,800,1600); "
                             "reflect: blob counts (default 10,100,400)")
    parser.add_argument("--jobs", type=_int_list, metavar="N,N,...", default=None,
                        help="build: job counts, each measured (default 1 and 2; 1 only up to 200 variants)")
    parser.add_argument("--header-share", type=_share, default=0.25, metavar="F",
                        help="build: share of the sources that include the edited header (default 0.25)")
    parser.add_argument("--per-source", type=_share_or_more, default=None, metavar="F",
                        help="build: variants per copied source (default ~10, llama.cpp's shape)")
    parser.add_argument("--keep", type=Path, metavar="DIR", default=None,
                        help="build: keep the synthetic projects in DIR")
    parser.add_argument("--quick", action="store_true",
                        help="the smallest honest run of any suite (for tests and a first look): "
                             f"build {QUICK_BUILD['sizes'][0]} variants, 1 job; fewer sizes and repeats")
    parser.add_argument("--demo-args", metavar="'ARGS'", default=None,
                        help="demo: model options as `python -m examples.llm` takes them, e.g. '--layers 4 --dim 512'")
    parser.add_argument("--roofline", action="store_true",
                        help="demo: also each time per token over the memory-bandwidth bound (bytes a "
                             "token binds / the device's bandwidth, measured once with the read probe)")
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="build-ab: the git revision whose build is set beside this tree's; tables: the "
                             "revision whose emitters the 'before' render arm runs")
    parser.add_argument("--remote", action="store_true",
                        help="build-generator: a second machine's cold build from a warm remote cache "
                             "(nginx WebDAV on 127.0.0.1) against the first's (default 2,000 variants)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the suite ``args`` names, print its table, write ``--json``; the exit status."""
    import importlib
    import signal
    import sys
    import time

    from .harness import BenchOptions, RunLog, metadata, render_table, write_json

    root = Path(args.root) if getattr(args, "root", None) else _default_root()
    quick_build = QUICK_BUILD if args.quick and args.suite == "build" else {}
    opts = BenchOptions(suite=args.suite, repeat=args.repeat or quick_build.get("repeat"),
                        sizes=args.sizes or quick_build.get("sizes"), jobs=args.jobs or quick_build.get("jobs"),
                        quiet=args.quiet, root=root, header_share=args.header_share,
                        keep=args.keep, quick=args.quick, demo_args=args.demo_args,
                        per_source=args.per_source, roofline=args.roofline, remote=args.remote,
                        baseline=args.baseline)
    module, function = SUITES[args.suite]
    suite = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    rec = RunLog(args.suite)
    t0 = time.monotonic()
    # Taken at the start: the date and commit of the code the suite measures (timed steps run
    # a snapshot of the package taken then), whatever lands in the tree while it runs.
    started = metadata(root, None)
    if args.json is not None:

        def checkpoint(r: RunLog) -> None:
            write_json(args.json, r, opts, dict(started, device=r.device or started["device"]),
                       time.monotonic() - t0, complete=False)
        rec.on_checkpoint = checkpoint
    # SIGTERM (a timeout, a killed job) unwinds like Ctrl-C, so the suite removes its temp projects.
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    try:
        suite(opts, rec)
        seconds = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGTERM, previous)
    meta = dict(started, device=rec.device or started["device"])
    print(render_table(rec))
    print(f"({args.suite} suite: {seconds:.1f} s on {meta['device']}, {meta['date']}, "
          f"genspirv {meta['genspirv_commit'] or 'commit unknown'})")
    if args.json is not None:
        write_json(args.json, rec, opts, meta, seconds)
    return 0


def _default_root() -> Path:
    """The nearest project with [tool.genspirv], as for every other command; else here."""
    from genspirv.errors import GenspirvError

    try:
        from genspirv.project.config import find_root
        return Path(find_root())
    except (ImportError, GenspirvError):
        return Path.cwd()


def main(argv=None) -> int:
    """``python -m benchmarks SUITE [OPTIONS]``: run one suite."""
    import sys

    from genspirv.errors import GenspirvError

    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="genspirv benchmarks")
    parser.add_argument("--root", metavar="DIR", default=None, help="project to take the kernels from")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except GenspirvError as exc:
        print(f"genspirv: error: {exc}", file=sys.stderr)
        return exc.exit_code
