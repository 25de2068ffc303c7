"""Compile: variants in, compiled, optimised, validated and reflected blobs out.

Takes a ``Config``, the build's ``Compilers`` (``genspirv.toolchain.chain``:
the pinned glslang and any other behind the same seam, ``genspirv.toolchain.compiler``)
and the variants to compile; gives a ``CompileOutcome``: the ``Compiled`` blobs
(with the files each read and the compiler that built each), the optional
variants no compiler of their chain can build, and the failures. Compiles run
in parallel, in the order given (``longest_first``: the longest last compile
first); ``on_done`` hears of each as it finishes (the build keeps it
then, so an interrupt loses only what was still running). A build with a
remote cache gates each job on its own fetch (``fetch``): a miss queues the
compile, a hit resolves the job, while other fetches are in flight. One failure does
not stop the others (a broken toolchain does). An interrupt (SIGINT, SIGTERM)
kills every compiler process (``genspirv.toolchain.children``) and drops the queued
compiles. Each compile runs on a thread of the build, or, for a chain that ships
to another process and a plan large enough, in a worker process
(``genspirv.buildsys.compile_workers``), which gives the same result or error.
``failure_message`` prints each distinct error once with every
variant it hit (a broken header shared by many sources is one block; the
compiler's follow-on lines only with ``-v``). Shared by build and check;
nothing here writes outside the work folder it is given.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Mapping, Optional, Sequence, Union

from ..toolchain import children
from ..toolchain.compiler import CommandLog, Job, dep_path
from ..toolchain.chain import Compilers
from ..project.config import Config, Variant
from ..errors import CompileError, GenspirvError, ToolchainError, UnavailableError
from ..project.variants import compiler_named
# Compiled and reflect_blob: the rest of the build imports them from here, with compile_all.
from .variant_compile import Compiled, compile_variant, reflect_blob  # noqa: F401
from .compile_workers import CompileWorkers, open_workers

if TYPE_CHECKING:
    from concurrent.futures import Future

Log = Optional[Callable[[str], None]]


Done = Optional[Callable[[Variant, Union[Compiled, UnavailableError, "Fetched"]], None]]


def make_jobs(config: Config, variants: Sequence[Variant], workdir: Path,
              on_command: CommandLog = None, generated_dir: Optional[Path] = None) -> list[Job]:
    """One job per variant, each with a folder of its own under ``workdir`` (removed by the
    worker when the compile is done, so the build's end waits on no tree removal);
    ``generated_dir``: where the generated files are when not in the root."""
    dirs = config.include_dirs
    return [Job(v, config.root, dirs, config.include_directive, workdir / v.name, on_command, generated_dir)
            for v in variants]


def longest_first(variants: Sequence[Variant], seconds: Mapping[str, Optional[float]]) -> list[Variant]:
    """``variants`` in the order to start their compiles: the longest last compile first, so
    no long compile starts last and leaves the other workers idle (the build's serial tail).
    A variant never timed gets the mean of the timed ones; none timed (a first build, check):
    the plan's order. Ties keep the plan's order."""
    known = [t for t in (seconds.get(v.name) for v in variants) if t is not None]
    if not known:
        return list(variants)
    mean = sum(known) / len(known)
    return sorted(variants, key=lambda v: t if (t := seconds.get(v.name)) is not None else mean, reverse=True)


def unavailable_deps(root: Path, exc: UnavailableError, preamble: Optional[str] = None,
                     generated: Collection[str] = ()) -> list[str]:
    """The files an unavailable variant's key covers: the source, its preamble and the files the
    compiler's messages name (where the #extension line is), generated ones among them."""
    deps = [exc.source, *([preamble] if preamble else [])]
    for line in exc.messages.splitlines():
        path = line.split(":", 1)[0]
        if path and (path in generated or (root / path).is_file()):
            deps.append(dep_path(root, path))
    return list(dict.fromkeys(deps))


@dataclass
class CompileOutcome:
    """What one round of compiles gave: blobs, unavailable optional variants, failures, and the
    variants their fetch resolved without a compile."""

    compiled: dict = field(default_factory=dict)       # name -> Compiled
    unavailable: dict = field(default_factory=dict)    # name -> UnavailableError
    failures: dict = field(default_factory=dict)       # name -> GenspirvError
    fetched: dict = field(default_factory=dict)        # name -> Fetched.found


@dataclass(frozen=True)
class Fetched:
    """A variant resolved without its compile (a remote hit): what resolved it, for ``on_done``,
    and its progress line's suffix."""

    found: object
    label: str


Fetch = Optional[Callable[[Variant], Optional["Future[Optional[Fetched]]"]]]
# ^ a variant's fetch, asked as its job is queued: a future of what resolves it (None: a miss,
#   compile it), or None (nothing to ask: compile it now)


def job_count(jobs: Optional[int]) -> int:
    """How many compiles run at once: ``jobs``, else the CPUs."""
    return max(1, jobs or os.cpu_count() or 1)


def compile_all(compilers: Compilers, jobs: Sequence[Job], workers: Optional[int] = None, log: Log = None,
                on_done: Done = None, fetch: Fetch = None, started: Optional[CompileWorkers] = None) -> CompileOutcome:
    """Compile every job, ``workers`` at a time (default: the CPUs); ``on_done`` and then the
    ``[n/N] name`` progress line follow each finished compile, on the calling thread.

    With ``fetch``, each job waits on its own fetch and is queued for a compile only when
    that comes back a miss, so compiles run while other fetches are in flight; a job its
    fetch resolved goes to ``on_done`` (its ``Fetched``) and gets its progress line as it
    returns. N counts every job, fetched or compiled. ``started``: worker processes started
    before the plan (``compile_workers.early_workers``), used when processes are the choice."""
    outcome = CompileOutcome()
    if not jobs:
        return outcome
    workers = job_count(workers)
    finished: "queue.SimpleQueue[tuple[Variant, object]]" = queue.SimpleQueue()
    stopped = threading.Event()         # an interrupt or a broken toolchain: queue no more compiles
    compiles: list[Future] = []        # appended on fetch threads: copied before iterating
    fetches: list[Future] = []
    # Each compile thread runs its variant's pipeline itself, or (a chain that ships, a plan large
    # enough) hands it to a worker process and waits, off the GIL (genspirv.buildsys.compile_workers).
    processes = open_workers(compilers, jobs, workers, started)

    def run(job: Job) -> Compiled:
        if processes is not None and processes.takes(job):
            return processes.compile(job)
        return compile_variant(compilers, job)

    from concurrent.futures import ThreadPoolExecutor      # here: a no-op build starts no thread
    try:
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            def start(job: Job) -> None:
                # On a fetch's thread too: it never raises, and each job puts one item in ``finished``.
                future = None
                if not stopped.is_set():
                    with contextlib.suppress(RuntimeError):     # the pool shut down: interrupted
                        future = pool.submit(run, job)
                if future is None:
                    finished.put((job.variant, None))
                    return
                compiles.append(future)
                future.add_done_callback(lambda f, v=job.variant: finished.put((v, f)))

            def fetched(job: Job, future: Future) -> None:
                try:
                    found = None if future.cancelled() else future.result()
                except BaseException:       # noqa: BLE001 - a fetch that failed is a miss
                    found = None
                if found is None:
                    start(job)
                else:
                    finished.put((job.variant, found))

            for job in jobs:
                asked = fetch(job.variant) if fetch is not None else None
                if asked is None:
                    start(job)
                else:
                    fetches.append(asked)
                    asked.add_done_callback(functools.partial(fetched, job))
            try:
                for n in range(1, len(jobs) + 1):
                    variant, what = finished.get()
                    if what is None:
                        continue                    # never compiled: cancelled
                    if isinstance(what, Fetched):
                        outcome.fetched[variant.name] = what.found
                        if on_done:
                            on_done(variant, what)
                        status = what.label
                    else:
                        status = _collect(outcome, variant, what, compilers, on_done)
                        if status is None:
                            continue
                        if isinstance(outcome.failures.get(variant.name), ToolchainError):
                            stopped.set()           # a compiler that hangs or crashes once will again
                            for other in compiles[:]:
                                other.cancel()
                    if log:
                        log(f"[{n}/{len(jobs)}] {variant.name}{status}")
            except BaseException:
                # Interrupted: drop the queued fetches and compiles and kill the running ones (a
                # worker process with the tools it started), so the pool's exit waits for
                # nothing (what finished is already with on_done).
                stopped.set()
                for other in fetches + compiles[:]:
                    other.cancel()
                children.stop()
                raise
    finally:
        if processes is not None:
            processes.close()       # the idle workers exit; after an interrupt, already killed
        children.resume()
    return outcome


def _collect(outcome: CompileOutcome, variant: Variant, future, compilers: Compilers,
             on_done: Done) -> Optional[str]:
    """File one finished compile in ``outcome``; its progress suffix (None: it never ran)."""
    if future.cancelled():
        return None
    try:
        compiled = future.result()
    except UnavailableError as exc:
        if not variant.optional:
            outcome.failures[variant.name] = exc
            return " FAILED"
        outcome.unavailable[variant.name] = exc
        if on_done:
            on_done(variant, exc)
        return f" unavailable ({compilers.lacks(variant, exc.missing, compiler_named(exc.compiler or None))})"
    except GenspirvError as exc:
        outcome.failures[variant.name] = exc
        return " FAILED"
    outcome.compiled[variant.name] = compiled
    if on_done:
        on_done(variant, compiled)
    return ""


_ERROR_LINE = re.compile(r"^(.+?):(\d+): error: ")
Note = Callable[[str], str]     # a file's path -> a line about it ("" for none): where a generated file came from


def _first_error(exc: CompileError) -> tuple[Optional[str], list[str]]:
    """The compiler's first ``file:line: error: ...`` line, and every other line it printed."""
    lines = exc.messages.splitlines()
    at = next((i for i, line in enumerate(lines) if _ERROR_LINE.match(line)), None)
    if at is None:
        return None, lines
    return lines[at], lines[:at] + lines[at + 1:]


def _header(exc: GenspirvError, sources: Sequence[str]) -> str:
    """The block's first line: what failed, without the variant name the error starts with."""
    first = str(exc).split("\n", 1)[0].split(": ", 1)[-1]
    if len(sources) < 2:
        return first
    if type(exc) is CompileError:
        return f"{len(sources)} sources do not compile:"
    return first.replace(exc.source, f"{exc.source} (and {len(sources) - 1} more sources)", 1)


def failure_message(failures: Mapping[str, GenspirvError], verbose: bool = False, note: Optional[Note] = None) -> str:
    """Each distinct error once, naming every variant it hit.

    Compile errors are told apart by the first ``file:line: error: message`` the compiler
    printed, across sources: a broken header that 46 sources include is one block. The
    compiler's other lines (its follow-on errors) are left out unless ``verbose``; ``note``
    adds a line about the erring file (a generated one: which template it came from)."""
    groups: dict[tuple, list[tuple[str, GenspirvError]]] = {}
    for name, exc in sorted(failures.items()):
        if isinstance(exc, CompileError) and exc.messages:
            first, _ = _first_error(exc)
            key = ("at", type(exc).__name__, first) if first else (type(exc).__name__, exc.source, exc.messages)
        else:
            key = (type(exc).__name__, str(exc).split(": ", 1)[-1])
        groups.setdefault(key, []).append((name, exc))
    parts = []
    for key, hits in groups.items():
        names = [name for name, _ in hits]
        exc = hits[0][1]
        if isinstance(exc, CompileError) and exc.messages:
            parts.append(_compile_block(exc, sorted({e.source for _, e in hits}), verbose, note))
        else:
            parts.append(str(exc))
        hit = f"in {len(names)} variants: {', '.join(names)}" if len(names) > 1 else f"in variant {names[0]}"
        parts[-1] += f"\n  ({hit})"
    return "\n".join(parts)


def _compile_block(exc: CompileError, sources: Sequence[str], verbose: bool, note: Optional[Note]) -> str:
    first, rest = _first_error(exc)
    if first is None:
        return _header(exc, sources) + "\n" + exc.messages
    lines = [_header(exc, sources), first]
    about = note(first.split(":", 1)[0]) if note else ""
    if about:
        lines.append(f"  ({about})")
    if verbose:
        lines += rest
    elif rest:
        lines.append(f"  ({len(rest)} more line{'s' if len(rest) > 1 else ''} from the compiler; "
                     "-v prints them)")
    return "\n".join(lines)


def raise_failures(failures: Mapping[str, GenspirvError], summary: str = "", verbose: bool = False,
                   note: Optional[Note] = None) -> None:
    message = failure_message(failures, verbose, note)
    if summary:
        message += f"\n{summary}"
    # A broken toolchain outranks a broken shader: it is exit 2, not 1.
    errors = list(failures.values())
    worst = next((f for f in errors if isinstance(f, ToolchainError)), errors[0])
    error = (type(worst) if type(worst) is not UnavailableError else CompileError)(message)
    error.failures = dict(failures)         # each variant's own error: for --json and annotations
    raise error


def error_site(exc: GenspirvError) -> tuple[Optional[str], Optional[int], str]:
    """(file, line, message) of a variant's error: the compiler's first ``file:line: error:``
    line where it printed one, else (its source or None, None, the error's first line)."""
    if isinstance(exc, CompileError) and exc.messages:
        first, _ = _first_error(exc)
        m = _ERROR_LINE.match(first) if first else None
        if m:
            return m.group(1), int(m.group(2)), first[m.end():].strip()
    return getattr(exc, "source", "") or None, None, str(exc).split("\n", 1)[0]
