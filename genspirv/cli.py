"""Command line: ``genspirv <command>`` and ``python -m genspirv <command>``.

Takes argv and gives an exit status. Each command is one ``Command`` row in
``COMMANDS`` (name, help, argument adder, runner); a new command is one small
block plus one row. Every ``GenspirvError`` becomes ``genspirv: error: <message>``
on stderr, paths inside the project written relative to its root, and its
``exit_code``; usage errors exit 2 (argparse). Every ``GENSPIRV_*`` setting that
is set is checked before the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from .console import VARIANT_LINE, Progress, colourise, use_colour as _use_colour
from .errors import GenspirvError, ManifestError, UsageError


def _say(line: str, stream=None) -> None:
    print(line, file=stream or sys.stdout, flush=True)


def _warn(line: str) -> None:
    print(colourise(line) if _use_colour(sys.stderr) else line, file=sys.stderr, flush=True)


def _config(args: argparse.Namespace):
    from .project.config import find_root, load_config
    root = Path(args.root) if getattr(args, "root", None) else find_root()
    return load_config(root)


def _manifest(args: argparse.Namespace, config=None):
    from .manifest import load_manifest
    if getattr(args, "manifest", None):
        return load_manifest(args.manifest)
    config = config or _config(args)
    if not config.path(config.manifest).exists():      # a FIFO or a device there: the reader names it
        raise ManifestError(f"{config.manifest}: no manifest yet; run `genspirv build` to make it")
    return load_manifest(config.path(config.manifest), root=config.root)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_jobs_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=_positive_int, metavar="N", default=None,
                   help="parallel compiles (default: the number of CPUs)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines (the summary and errors still print)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every compiler command line, and every line of a compile error")
    from .commands.results import add_arguments      # --json, --annotations: build and check both
    add_arguments(p)


def _add_manifest_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", metavar="FILE", default=None,
                   help="read this manifest instead of the project's")


# -- build --------------------------------------------------------------------


def _build_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", metavar="NAME_OR_SOURCE", nargs="*",
                   help="build only these variants: names, sources or globs (the others stay as committed)")
    _add_jobs_quiet(p)
    p.add_argument("--force", action="store_true",
                   help="recompile every variant, ask no cache, and store every blob afresh (re-seeds the caches)")
    p.add_argument("--explain", action="store_true",
                   help="say why each variant is compiled or taken from the cache")
    p.add_argument("-d", dest="debug", choices=["explain"], default=None,
                   help="-d explain: the same as --explain (ninja's spelling)")
    from .emit.cmake import add_build_arguments
    add_build_arguments(p)


def _human(args: argparse.Namespace):
    """Where progress and summaries go: stdout, or stderr when --json - takes stdout."""
    return sys.stderr if getattr(args, "json", None) == "-" else sys.stdout


def _emit_results(args: argparse.Namespace, command: str, config, report, code: int, error=None) -> None:
    """--json and --annotations, when asked: the results (``genspirv.commands.results``) are made only then."""
    if not (args.json or args.annotations):
        return
    from .commands import results
    doc = (results.check_result if command == "check" else results.build_result)(config, report, code, error)
    problems = results.error_problems(error, config) if error is not None else \
        results.check_problems(report) if command == "check" else []
    results.emit(args.json, args.annotations, doc, problems, f"genspirv {command}")


def _without_progress(log: Callable[[str], None]) -> Callable[[str], None]:
    """``log`` minus the per-variant ``[n/N] name ...`` lines: what --quiet leaves out."""
    return lambda line: None if VARIANT_LINE.match(line) else log(line)


def _check_output_file(option: str, value) -> None:
    """Refuse, before any work, an output file (--depfile, --json) in a missing folder or on a folder:
    a typo there would otherwise make folders nobody asked for, or fail only after a long run."""
    if value is None:
        return
    path = Path(value)
    if path.is_dir():
        raise UsageError(f"{option} {value}: is a folder; name a file in it")
    if not path.absolute().parent.is_dir():
        raise UsageError(f"{option} {value}: no folder {path.parent}; create it first")


def _check_report_paths(config, reports: dict) -> None:
    """Refuse, before any work, a report file (``{option: path}``, None: not asked) that is one of the
    build's files: an input, an output, or in a folder it reads or owns (``project.build_files.build_file``), as a
    compiler refuses ``-o`` on its input; and two reports on one file."""
    from .project.build_files import build_file
    given = {option: path for option, path in reports.items() if path not in (None, "-")}
    for option, path in given.items():
        what = build_file(config, path)
        if what is not None:
            raise UsageError(f"{option} {path}: that is {what}; a report never goes on a file the build reads "
                             "or writes: name one elsewhere")
    if len(given) == 2 and os.path.realpath(given["--json"]) == os.path.realpath(given["--depfile"]):
        raise UsageError(f"--json and --depfile name one file, {given['--json']}: give each its own")


def _check_settings() -> None:
    """Every GENSPIRV_* variable that is set, read once up front: a bad value is one line, not a failure per variant."""
    from . import settings
    for row in settings.SETTINGS:
        settings.get(row.name)


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM (a CI job cancelled, a `kill`) stops a build as Ctrl-C does: the compilers
    are killed, what finished is kept, nothing committed is written, exit 130."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():
        yield           # only the main thread may set a handler (main() called from a thread)
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_build(args: argparse.Namespace) -> int:
    from .buildsys.builder import BuildInterrupted, build
    from .buildsys.commit import STRAY_NOTE
    from .emit.cmake import write_depfile_from_args
    _check_output_file("--depfile", args.depfile)
    if args.json != "-":
        _check_output_file("--json", args.json)
    config = _config(args)
    _check_report_paths(config, {"--depfile": args.depfile, "--json": args.json})
    out = _human(args)
    progress = Progress(out)
    explain = args.explain or args.debug == "explain"
    report, error = None, None
    try:
        with _sigterm_interrupts():
            report = build(config, jobs=args.jobs, force=args.force,
                           log=_without_progress(progress) if args.quiet else progress,
                           on_command=progress.command if args.verbose else None,
                           explain=progress if explain else None, verbose=args.verbose,
                           only=args.targets or None)
    except BuildInterrupted as exc:
        progress.close()
        _warn(f"genspirv: interrupted: {exc.kept} of {exc.total} compiles finished and are kept; "
              "nothing committed was written; the next build compiles only the rest")
        _emit_results(args, "build", config, None, 130)
        return 130
    except GenspirvError as exc:
        error, report = exc, getattr(exc, "report", None)
    finally:
        progress.close()
    if error is not None:
        _emit_results(args, "build", config, report, error.exit_code, error)
        raise error
    write_depfile_from_args(config, args)
    notes = [*([config.other_stages_note()] if config.other_stages else []),
             *([config.defaults_note()] if config.defaults else [])]
    for rel in report.strays:
        _warn(f"genspirv build: warning: {rel}: {STRAY_NOTE.format(folder=config.spirv_dir + '/')}")
    _say("\n".join(report.lines(notes, verbose=args.verbose)), out)
    _emit_results(args, "build", config, report, 0)
    return 0


# -- check --------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    from .buildsys.builder import check
    # `genspirv --check` has none of check's own options: their defaults.
    args = argparse.Namespace(**{"jobs": None, "quiet": False, "verbose": False, "json": None,
                                 "annotations": None, **vars(args)})
    if args.json not in (None, "-"):
        _check_output_file("--json", args.json)
    config = _config(args)
    _check_report_paths(config, {"--json": args.json})
    out = _human(args)
    progress = Progress(out)
    try:
        with _sigterm_interrupts():
            report = check(config, jobs=args.jobs, log=_without_progress(progress) if args.quiet else progress,
                           on_command=progress.command if args.verbose else None, verbose=args.verbose)
    except GenspirvError as exc:
        progress.close()
        _emit_results(args, "check", config, None, exc.exit_code, exc)
        raise
    finally:
        progress.close()
    code = 0 if report.ok else 1
    if report.ok:
        _say(f"genspirv check: {len(report.checked)} files up to date", out)
    else:
        for d in report.differences:
            _warn(f"genspirv check: {d}")
        _warn(f"genspirv check: {len(report.differences)} of the committed outputs are stale; "
              "run `genspirv build` and commit the result")
    _emit_results(args, "check", config, report, code)
    return code


# -- reflect ------------------------------------------------------------------


def _reflect_args(p: argparse.ArgumentParser) -> None:
    from .commands.reflect import add_arguments
    add_arguments(p)


def cmd_reflect(args: argparse.Namespace) -> int:
    from .commands.reflect import run
    return run(args, _say)


# -- list / show --------------------------------------------------------------


def _list_args(p: argparse.ArgumentParser) -> None:
    _add_manifest_option(p)
    p.add_argument("--unavailable", action="store_true",
                   help="the optional variants no configured compiler can build, and what they lack")


def cmd_list(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    if args.unavailable:
        if not manifest.unavailable:
            _say("genspirv list: no variant is unavailable")
            return 0
        # A compiler column once a second compiler is involved: which one lacks it, or is not installed.
        named = any(u.compiler for u in manifest.unavailable)
        rows = [("name", "lacks", "source") + (("compiler",) if named else ())]
        rows += [(u.name, ", ".join(u.missing), u.source) + ((_lacking_compiler(u),) if named else ())
                 for u in manifest.unavailable]
    else:
        rows = [("name", "local size", "bindings", "push", "source")]
        for e in manifest.shaders:
            i = e.info
            rows.append((e.name, "x".join(str(n) for n in i.local_size), str(i.binding_count),
                         str(i.push_constant_size), e.source))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        _say("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0


def _lacking_compiler(u) -> str:
    compiler = u.compiler or "glslang"
    return f"{compiler} (not installed)" if u.missing == (compiler,) else compiler


def _show_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="a variant name from `genspirv list`")
    _add_manifest_option(p)


def cmd_show(args: argparse.Namespace) -> int:
    from .manifest import entry_to_dict
    manifest = _manifest(args)
    _say(json.dumps(entry_to_dict(manifest.entry(args.name)), indent=2, sort_keys=True))
    return 0


# -- lint ---------------------------------------------------------------------


def _lint_args(p: argparse.ArgumentParser) -> None:
    _add_manifest_option(p)


def cmd_lint(args: argparse.Namespace) -> int:
    from .lint.suppress import lint_project
    # A project's own suppressions need its config; a manifest given alone has only its files' comments.
    config = None if args.manifest else _config(args)
    findings = lint_project(_manifest(args, config), config)
    for f in findings:
        _say(str(f))
    if findings:
        _warn(f"genspirv lint: {len(findings)} finding(s)")
        return 1
    _say("genspirv lint: no findings")
    return 0


# -- init ---------------------------------------------------------------------


def _init_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", metavar="DIR", nargs="?", default=None,
                   help="the new project's folder (default: --root, else the current folder)")


def cmd_init(args: argparse.Namespace) -> int:
    from .scaffold import init
    folder = Path(args.dir or getattr(args, "root", None) or ".")
    for w in init(folder):
        _say(f"genspirv init: {w.what} {folder / w.path}")
    cd = "" if folder.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(folder))} && "
    _say(f"genspirv init: next, `{cd}genspirv build`; commit pyproject.toml, glsl/, spirv/ and manifests/; "
         "`genspirv check` in CI")
    return 0


# -- cmake-dir ----------------------------------------------------------------


def cmd_cmake_dir(args: argparse.Namespace) -> int:
    from .emit.cmake import cmake_dir
    _say(str(cmake_dir()))
    return 0


# -- cache --------------------------------------------------------------------


def _cache_args(p: argparse.ArgumentParser) -> None:
    from .commands.cache import add_arguments
    add_arguments(p)


def cmd_cache(args: argparse.Namespace) -> int:
    from .commands.cache import run
    return run(lambda: _config(args), args, _say)


# -- the table ----------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: tuple[Command, ...] = (
    Command("build", "incremental build of all variants, or of those named (--explain: why each compiles)",
            _build_args, cmd_build),
    Command("check", "verify committed blobs and manifest byte for byte", _add_jobs_quiet, cmd_check),
    Command("cache", "the compile caches: stats (--json, --zero-stats; also -s, -z), clear", _cache_args, cmd_cache),
    Command("reflect", "reflection of any SPIR-V blob", _reflect_args, cmd_reflect),
    Command("list", "the shaders the manifest holds (--unavailable: the variants it could not build)",
            _list_args, cmd_list),
    Command("show", "one manifest entry", _show_args, cmd_show),
    Command("lint", "findings such as a writable binding never written", _lint_args, cmd_lint),
    Command("init", "scaffold a new genspirv project in DIR", _init_args, cmd_init),
    Command("cmake-dir", "the folder of genspirv's CMake package (for -Dgenspirv_DIR=...)",
            lambda p: None, cmd_cmake_dir),
)


ROOT_HELP = ("the project to work on (default: the nearest folder at or above this one whose "
             "pyproject.toml has [tool.genspirv], else this one)")


def make_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The command line; given ``argv``, only the commands it names get their options."""
    parser = argparse.ArgumentParser(prog="genspirv", description=(
        "Reproducible SPIR-V builds, reflection manifests and a dependency-aware Vulkan runtime."))
    parser.add_argument("--root", metavar="DIR", default=None, help=ROOT_HELP)
    parser.add_argument("--check", action="store_true", help="same as `genspirv check`")
    parser.add_argument("--cmakedir", action="store_true", help="same as `genspirv cmake-dir` (pybind11's spelling)")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"genspirv {__version__}")
    # --root after the command too; SUPPRESS keeps it from overwriting the one given before.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=ROOT_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for c in COMMANDS:
        p = sub.add_parser(c.name, help=c.help, description=c.help, parents=[common])
        if argv is None or c.name in argv:
            c.add_arguments(p)
        p.set_defaults(run=c.run, usage_of=p)
    return parser


def relative_to_project(message: str, root: Optional[Path]) -> str:
    """``message`` with every path inside ``root`` written relative to it, as messages name files."""
    if root is None or root == Path(root.anchor):
        return message
    for form in {str(root), str(root.resolve())}:
        message = message.replace(form + os.sep, "")
    return message


def _project_root(args: argparse.Namespace) -> Optional[Path]:
    """The project a failed command worked on (None for init, whose paths are the ones typed)."""
    if getattr(args, "command", None) == "init":
        return None
    try:
        from .project.config import find_root
        return Path(args.root).absolute() if getattr(args, "root", None) else find_root()
    except (OSError, GenspirvError):
        return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # The command's own usage, not the top level's: argparse hands a subcommand's
        # unknown arguments up to the main parser, whose usage lists only the commands.
        getattr(args, "usage_of", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.check and args.command not in (None, "check"):
        parser.error("--check is `genspirv check`; it takes no other command")
    if args.cmakedir and (args.command is not None or args.check):
        parser.error("--cmakedir is `genspirv cmake-dir`; it takes no other command")
    run = cmd_check if args.check else cmd_cmake_dir if args.cmakedir else getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        _check_settings()
        return run(args)
    except GenspirvError as exc:
        _warn(f"genspirv: error: {relative_to_project(str(exc), _project_root(args))}")
        return exc.exit_code
    except KeyboardInterrupt:
        _warn("genspirv: interrupted")
        return 130
    except BrokenPipeError:
        # `genspirv list | head`: the reader left; say nothing more, and keep Python's
        # exit-time flush from raising again on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
