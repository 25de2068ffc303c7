"""Build: a ``Config`` in, committed blobs, manifest and generated files out.

Under a lock file: makes the plan (``genspirv.build.plan``: per variant up to date,
from the cache, compile or unavailable, and why), asks the remote cache, when
one is set, for the variants the plan would compile (``genspirv.build.remote_fetches``:
each compile waits on its own fetch, so compiles run while other fetches are
in flight; verified entries become remote hits in the plan as they return;
``--explain`` resolves every fetch first), runs it (``genspirv.build.run.run_plan``,
shared with ``check``: compiles in parallel through the ``Compiler`` seam, each
variant with the first compiler of its chain that can build it, reflects,
renders the manifest and generated files), then writes what changed.
In read-write mode each blob compiled is handed to the remote cache's
background stores as it finishes; the build waits for them before it returns.
``--force`` asks no cache and stores every blob afresh, over what the local
caches and the remote store held (re-seeding them). What the caches did is
added to the counters ``genspirv cache stats`` shows (``genspirv.cachestats``).
A build of named variants (``only``; ``genspirv.build.selection``) keeps every
other variant as committed. While the compiles run (longest last compile
first), writer threads keep each finished one in the cache, stage its blob
and render its manifest entry, so the end is renames and a join; what changed
is decided from the stat() results the last build logged (``genspirv.build.statlog``).

Nothing is lost: each compile lands in the blob cache and the journal as it
finishes, so a build that fails or is interrupted (SIGINT, SIGTERM) keeps
every variant it compiled, and the next build compiles only the rest. Nothing
committed is half-replaced: every output is first written to a temp file
beside its target (proving the folder writable and the disk not full); only
when all are ready are they renamed into place, blobs first and the manifest
last, with signals held back for those renames. A failure before that
changes no committed file; a no-op build writes no file. ``build()`` returns a
``BuildReport``; tests assert on it, not on timing.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Sequence

from .. import manifest as manifest_mod
from .. import settings
from .. import cachestats
from . import noopstamp
from .blob_cache import BlobCache, local_cache_dir
from .report import BuildReport
from ..cachestats import Stat, Tally
from .state import (STATE_DIR, CommittedManifest, FileHashes, Journal, OutputsRecord, Record, committed_manifest,
                    journal_path, load_state, sha256_hex, stat_log)
from .commit import commit, folders_removed_on_failure, save_state, stage_blob
from .compile import Compiled, Log, raise_failures, reflect_blob
from .run import ProjectLookups, Ran, run_plan, unavailable_entries
from ..toolchain.compiler import CommandLog, Compiler, Versions
from ..toolchain.chain import Compilers, compilers_for
from ..project.config import Config
from ..errors import GenspirvError, LockError, OutputError
from ..fsutil import StagedFiles, try_lock, unlock
from ..project.generated import origin_note
from .outputs import (committed_manifest_current, entry_text, expected_outputs, orphan_blobs, outputs_current,
                      outputs_key, remove_stale_temp_files, unavailable_names)
from .plan import Reason, Plan, make_plan, replaced
from ..reflect import ShaderInfo
from .selection import choose, left_out, only as only_chosen
from .statlog import StatLog
from ..project.variants import CompilerName
from ..remote.cache import RemoteCache
from .remote_fetches import ask_remote, remote_fetch

LOCK_FILE = "lock"
TOOLS_FILE = "tools.json"     # the tools' versions by binary (path, size, mtime)
PROBES_FILE = "slang-glslang.json"    # what slang-glslang predefines, asked of it once per version
WRITERS = 4     # threads that keep, stage and render finished compiles (mostly waiting on fsync)

# -- the lock -----------------------------------------------------------------


@contextlib.contextmanager
def project_lock(root: Path, timeout: Optional[float] = None, log: Log = None) -> Iterator[None]:
    """Hold ``.genspirv/lock`` (``fsutil.try_lock``: flock, or msvcrt on Windows) for the
    duration; LockError after ``timeout``."""
    if timeout is None:
        timeout = settings.get("GENSPIRV_LOCK_TIMEOUT")
    path = root / STATE_DIR / LOCK_FILE
    try:
        _make_state_dir(path.parent)
        lock_file = open(path, "a+b")
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the build lock: {exc.strerror or exc}") from None
    with lock_file as f:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                if try_lock(f):
                    break
            except OSError as exc:
                raise LockError(f"cannot lock {path}: {exc.strerror or exc}") from None
            if not told:
                print(f"genspirv: waiting for {path}: another build of this project is running",
                      file=sys.stderr, flush=True)
                told = True
            if time.monotonic() >= deadline:
                raise LockError(f"{path} is still held by another build after {timeout:g} s "
                                "(set GENSPIRV_LOCK_TIMEOUT to wait longer)")
            time.sleep(0.1)
        try:
            yield
        finally:
            unlock(f)


def _make_state_dir(folder: Path) -> None:
    """``.genspirv/``, with a ``.gitignore`` of ``*`` in it (as pytest's and ruff's caches have):
    git never lists the state, the cache or the generated files, whatever the project ignores."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# genspirv's build state, cache and generated sources\n*\n")


# -- build --------------------------------------------------------------------


class BuildInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the build; ``kept`` of the ``total`` compiles it ran finished
    and wait in the cache. No committed file was written."""

    def __init__(self, kept: int, total: int):
        super().__init__(f"{kept} of {total} compiles finished")
        self.kept, self.total = kept, total


def build(config: Config, jobs: Optional[int] = None, force: bool = False, log: Log = None,
          on_command: CommandLog = None, explain: Log = None,
          compiler: Optional[Compiler | Compilers] = None, verbose: bool = False,
          only: Optional[Sequence[str]] = None) -> BuildReport:
    """Bring blobs, manifest and generated files up to date with the sources.

    ``explain`` hears one line per variant compiled or taken from the cache, saying why.
    ``verbose``: a compile error keeps every line the compiler printed, not only the first error.
    ``compiler`` replaces the pinned glslang as the default compiler (tests pass a fake), or
    is every compiler of the build (``Compilers``). On failure raises the error
    (CompileError for a shader) with ``.report``: what was compiled and kept in the cache,
    what failed. Interrupted, raises ``BuildInterrupted``. ``only``: the variant names, sources
    or globs to build (``genspirv.build.selection``); the others are kept as committed.
    """
    state_dir = config.root / STATE_DIR
    chosen = choose(config, only) if only else None     # a word that names nothing: before any work
    tally = Tally()
    remote = RemoteCache.for_config(config, tally)     # a bad URL stops the build before it starts
    with compilers_for(config, compiler, jobs=jobs, version_cache=state_dir / TOOLS_FILE,
                       probe_cache=state_dir / PROBES_FILE) as compilers:
        try:
            report = _build(config, compilers, remote, jobs, force, log, on_command, explain, verbose, chosen, tally)
        except GenspirvError as exc:
            _count(config, tally, getattr(exc, "report", None), force)
            raise
    _count(config, tally, report, force)
    return report


def _count(config: Config, tally: Tally, report: Optional[BuildReport], force: bool) -> None:
    """Add what this build's caches did to the project's counters (``genspirv cache stats``).
    ``--force`` asks no cache: it counts stores, no hit or miss."""
    if report is not None:
        tally.add(Stat.LOCAL_HITS, len(report.cached))
        if not force:
            tally.add(Stat.LOCAL_MISSES, len(report.compiled) + len(report.failed) + len(report.remote or ()))
    cachestats.record(local_cache_dir(config), tally.counts())


def _build(config: Config, compilers: Compilers, remote: RemoteCache, jobs: Optional[int], force: bool, log: Log,
           on_command: CommandLog, explain: Log, verbose: bool, chosen: Optional[frozenset[str]] = None,
           tally: Optional[Tally] = None) -> BuildReport:
    versions = compilers.versions()
    optimizer = versions.optimizer
    # The remote cache's stores finish after the lock is released (they touch no project file).
    with remote, project_lock(config.root, log=log):
        remove_stale_temp_files(config, log)
        state = load_state(config)
        # A fresh clone has no state: the committed manifest's provenance stands in for it. It is
        # parsed only when some variant has no record of its own (a no-op never reads it).
        committed = functools.cache(lambda: committed_manifest(config))
        records = dict(state.records) if all(v.name in state.records for v in config.variants) \
            else {**committed().records, **state.records}
        hashes = FileHashes.for_config(config, stat_log(config))
        cache = BlobCache.for_config(config, tally)
        project = ProjectLookups(config, versions, hashes, cache, state.inputs)
        # The same no-op as last time, by stat() alone (genspirv.build.noopstamp): no key computed.
        unchanged = noopstamp.unchanged_plan(config, records) \
            if not force and chosen is None and noopstamp.holds(config, versions, state) else None
        if unchanged is not None and not orphan_blobs(config, unavailable_names(
                {s.name: s.record for s in unchanged.unavailable})):
            if explain is not None:
                for line in unchanged.explanations():
                    explain(f"explain: {line}")
            return _report(config, compilers, unchanged, {s.name: s.record for s in unchanged.steps},
                           remote=() if remote.enabled else None)
        plan = only_chosen(make_plan(config.variants, records, project, force), chosen, records,
                           lambda v: config.path(config.blob_relpath(v)).is_file())
        # --explain, a dry run, resolves every fetch first to print the exact plan; a build gates
        # each compile on its own fetch, so compiles run while other fetches are in flight.
        if explain is not None:
            plan, fetch = ask_remote(plan, remote, records, project, cache), None
        else:
            fetch = remote_fetch(plan, remote, records, project, cache)
        reported = tuple(s.name for s in plan.from_remote) if remote.enabled else None
        if explain is not None:
            for line in plan.explanations():
                explain(f"explain: {line}")
        known = {s.name: s.record for s in plan.up_to_date + plan.unavailable}
        keys = {name: r.key for name, r in known.items()}
        # Nothing changed (ninja-style): no compile, no reflection, no rendering, no write.
        if not plan.to_compile and not plan.from_cache and not plan.from_remote \
                and state.outputs is not None and not orphan_blobs(config, unavailable_names(known)) \
                and outputs_current(config, state.outputs, outputs_key(config, versions, keys), hashes.on_disk):
            if journal_path(config).exists() or hashes.stats.changed:
                save_state(config, _kept_records(config, records, known), state.outputs, state.inputs, hashes.stats)
            if not force and chosen is None:
                noopstamp.save(config, versions, hashes.stats)
            return _report(config, compilers, plan, known, remote=reported)
        journal = Journal(config)
        for step in plan.from_remote:       # kept as a compile is: the next build needs no network
            cache.put(step.record.key, step.blob)
            journal.append(step.name, step.record)
        kept = hits = 0                     # compiles and remote hits kept: for BuildInterrupted
        by_name = {v.name: v for v in config.variants}
        # While the other compiles run, each finished one is kept in the cache, staged beside its
        # committed blob (renamed into place only when all are ready) and its manifest entry
        # rendered, on writer threads (an fsync each: the collecting thread never waits on the
        # disk): the build's end then renames and joins, and waits on no per-variant work.
        staged = StagedFiles()
        texts: dict = {}
        staging: dict[str, Future] = {}     # blob path -> staged (True), the same (False), or None

        def write(name: str, record: Record, result: Compiled) -> Optional[bool]:
            if record.key is not None:
                cache.put(record.key, result.blob, replace=force)
            texts[name] = entry_text(config, result, record.key)
            return stage_blob(config, staged, result)

        def keep(name: str, record: Record, result: Optional[Compiled], fetched: bool = False) -> None:
            nonlocal kept, hits
            kept, hits = kept + (not fetched), hits + fetched
            if result is not None and record.key is not None and remote.writable and not fetched:
                # queued for the remote cache's pool: the progress loop goes on
                remote.publish(record.key, record.deps, result.blob, project.inputs(by_name[name], ()).key,
                               None if record.compiler is CompilerName.GLSLANG else record.compiler.value)
            if result is not None:
                staging[config.blob_relpath(result.variant)] = writers.submit(write, name, record, result)
            journal.append(name, record)

        # A failure or an interrupt before the commit discards every staged file (and any
        # folder staging made).
        with folders_removed_on_failure(config.path(config.spirv_dir)), staged:
            # An interrupt still waits for the writers: each finished compile is in the cache.
            with ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="genspirv-write") as writers:
                try:
                    with tempfile.TemporaryDirectory(prefix="compile-", dir=config.root / STATE_DIR) as tmp:
                        ran = run_plan(config, compilers, plan, Path(tmp), hashes, jobs=jobs, log=log,
                                       on_command=on_command, keep=keep,
                                       seconds={n: r.seconds for n, r in records.items()}, fetch=fetch)
                except KeyboardInterrupt:
                    raise BuildInterrupted(kept, len(plan.to_compile) - hits) from None
                finally:
                    journal.close()
            if fetch is not None:
                remote.finish_asking()
                plan = replaced(plan, ran.fetched)
                reported = tuple(s.name for s in plan.from_remote)
            decided = {rel: done for rel, future in staging.items() if (done := future.result()) is not None}
            return _finish(config, compilers, versions, plan, state, committed, records, known, ran, cache,
                           staged, decided, texts, reported, log, verbose, hashes.stats)


def _finish(config: Config, compilers: Compilers, versions: Versions, plan: Plan, state,
            committed: Callable[[], CommittedManifest],
            records: Mapping[str, Record], known: Mapping[str, Record], ran: Ran, cache: BlobCache,
            staged: StagedFiles, decided: Mapping[str, bool], texts, reported, log: Log, verbose: bool,
            stats: StatLog) -> BuildReport:
    """After the compiles: keep the state of a failed build, else render and commit the outputs."""
    optimizer = versions.optimizer
    records = _kept_records(config, records, {**known, **ran.records})
    if ran.failures:
        # Keep what compiled (state and cache): the next build compiles only what failed or changed.
        save_state(config, records, state.outputs, state.inputs, stats)
        report = _report(config, compilers, plan, records, ran.compiled_now, failed=tuple(sorted(ran.failures)),
                         remote=reported)
        try:
            raise_failures(ran.failures, f"genspirv build: {report.summary()} "
                           "(nothing committed written; the compiled variants wait in the cache)",
                           verbose, origin_note(config.generated_files, config.generator))
        except GenspirvError as exc:
            exc.report = report
            raise
    keys = {name: r.key for name, r in records.items()}
    unavailable = unavailable_entries(config, records)
    fresh = {s.name: records[s.name] for s in plan.up_to_date}
    facts = compilers.manifest_facts()
    if not state.found and not ran.compiled and not config.generate \
            and not orphan_blobs(config, unavailable_names(records)) and committed_manifest_current(
            config, committed(), fresh, optimizer, unavailable, facts):
        # A fresh clone whose committed outputs match their inputs: nothing to render or write.
        manifest_sha = sha256_hex(config.path(config.manifest).read_bytes())
        save_state(config, records, OutputsRecord(outputs_key(config, versions, keys),
                                                   {config.manifest: manifest_sha}), state.inputs, stats)
        return _report(config, compilers, plan, records, remote=reported)
    compiled = dict(ran.compiled)
    trusted = _manifest_trusted(config, state)
    for step in plan.up_to_date:
        rel = config.blob_relpath(step.variant)
        blob = config.path(rel).read_bytes()
        info = (_manifest_info(committed(), step.name, step.record.sha256) if trusted else None) \
            or reflect_blob(step.name, rel, blob)
        compiled[step.name] = Compiled(step.variant, blob, step.record.deps, info, step.record.compiler)
    ordered = [compiled[v.name] for v in config.variants if v.name in compiled]
    # Render everything before writing anything, so a codegen failure leaves no mix.
    outputs = expected_outputs(config, ordered, unavailable, keys, optimizer, facts, texts)
    blobs = {config.blob_relpath(c.variant) for c in ordered}
    rendered = {rel: sha256_hex(data) for rel, data in outputs.items() if rel not in blobs}
    written, removed = commit(config, outputs, records,
                               OutputsRecord(outputs_key(config, versions, keys), rendered), state.inputs, log,
                               staged, decided, stats)
    if cache.stored:
        cache.trim()
    return _report(config, compilers, plan, records, ran.compiled_now, tuple(removed), tuple(written),
               remote=reported)


def _report(config: Config, compilers: Compilers, plan: Plan, records: Mapping[str, Record],
            compiled: tuple[str, ...] = (), removed: tuple[str, ...] = (), written: tuple[str, ...] = (),
            failed: tuple[str, ...] = (), remote: Optional[tuple[str, ...]] = None) -> BuildReport:
    variants = {v.name: v for v in config.variants}
    # A variant that failed is not also unavailable (its old record may say it was).
    unavailable = [(n, r) for n, r in sorted(records.items()) if r.unavailable and n not in failed]
    return BuildReport(compiled=compiled, removed=removed, not_selected=left_out(plan, config.variants),
                       up_to_date=tuple(s.name for s in plan.up_to_date if s.reason is not Reason.NOT_SELECTED),
                       written=written, cached=tuple(s.name for s in plan.from_cache),
                       compiled_by=tuple((n, records[n].compiler.value) for n in compiled
                                         if records[n].compiler is not CompilerName.GLSLANG),
                       unavailable_because=tuple((n, compilers.lacks(variants[n], r.missing, r.compiler))
                                                 for n, r in unavailable),
                       unavailable=tuple((n, r.missing) for n, r in unavailable),
                       failed=failed, plan=plan, remote=remote)


def _kept_records(config: Config, previous: Mapping[str, Record], updates: Mapping[str, Record]) -> dict[str, Record]:
    """The records the state keeps: this build's, else the last one's (a variant that failed
    keeps its old record, so the next build says what changed since)."""
    kept = {}
    for v in config.variants:
        record = updates.get(v.name) or previous.get(v.name)
        if record is not None:
            kept[v.name] = record
    return kept


def _manifest_trusted(config: Config, state) -> bool:
    """This build's state wrote the committed manifest (its bytes are unchanged), or there is
    no state at all (a fresh clone): its reflection may stand in for re-reading the blobs."""
    if state.outputs is None:
        return not state.found
    try:
        return state.outputs.files.get(config.manifest) == sha256_hex(config.path(config.manifest).read_bytes())
    except OSError:
        return False


def _manifest_info(committed: CommittedManifest, name: str, blob_sha: Optional[str]) -> Optional[ShaderInfo]:
    """The committed manifest's reflection of an up-to-date variant."""
    entry = committed.entries.get(name)
    if entry is None or entry.get("sha256") != blob_sha:
        return None
    try:
        return manifest_mod.info_from_dict(entry, name)
    except GenspirvError:
        return None
