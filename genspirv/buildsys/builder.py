"""Build: a ``Config`` in, committed blobs, manifest and generated files out.

Under a lock file: makes the plan (``genspirv.buildsys.plan``: per variant up to date,
from the cache, compile or unavailable, and why), asks the remote cache, when
one is set, for the variants the plan would compile (``genspirv.buildsys.remote_fetches``:
each compile waits on its own fetch, so compiles run while other fetches are
in flight; verified entries become remote hits in the plan as they return;
``--explain`` resolves every fetch first), runs it (``genspirv.buildsys.run``,
shared with ``check``: compiles in parallel through the ``Compiler`` seam, each
variant with the first compiler of its chain that can build it, and reflects),
renders the manifest and generated files, then writes what changed.
In read-write mode each blob compiled is handed to the remote cache's
background stores as it finishes; the build waits for them before it returns.
``--force`` asks no cache and stores every blob afresh, over what the local
caches and the remote store held (re-seeding them). What the caches did is
added to the counters ``genspirv cache stats`` shows (``genspirv.cachestats``).
A build of named variants (``only``; ``genspirv.buildsys.selection``) keeps every
other variant as committed. While the compiles run (longest last compile
first), writer threads keep each finished one in the cache, stage its blob
and render its manifest entry, so the end is renames and a join; what changed
is decided from the stat() results the last build logged (``genspirv.buildsys.statlog``).

Nothing is lost: each compile lands in the blob cache and the journal as it
finishes, so a build that fails or is interrupted (SIGINT, SIGTERM) keeps
every variant it compiled, and the next build compiles only the rest. Nothing
committed is half-replaced: every output is first written to a temp file
beside its target (proving the folder writable and the disk not full); only
when all are ready are they renamed into place, blobs first and the manifest
last, with signals held back for those renames. A failure before that
changes no committed file; a no-op build writes no file. ``build()`` returns a
``BuildReport``; tests assert on it, not on timing.

``build()`` opens the compilers and hands them to a ``Builder``, which holds
what one build works with (config, compilers, caches, state, the caller's
options) and runs it phase by phase: load under the lock, a no-op by the stamp
or by the plan, the run (each finished compile kept by ``Writers``), finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NoReturn, Optional, Sequence

from .. import manifest as manifest_mod
from .. import cachestats
from . import noopstamp
from .blob_cache import BlobCache, local_cache_dir
from .report import BuildReport
from ..cachestats import Stat, Tally
from .state import (STATE_DIR, TOOLS_FILE, FileHashes, Journal, OutputsRecord, Record, State, journal_path,
                    load_state, project_lock, sha256_hex, stat_log)
from .committed import CommittedManifest, committed_manifest, early_manifest
from .early import take_early_reads
from .commit import commit, folders_removed_on_failure, save_state, stage_blob
from .compile import Compiled, Fetch, Log, job_count, raise_failures, reflect_blob
from .compile_workers import CompileWorkers, early_workers
from .run import ProjectLookups, Ran, run_plan, unavailable_entries
from ..toolchain.compiler import CommandLog, Compiler
from ..toolchain.chain import Compilers, compilers_for
from ..project.config import Config
from ..errors import GenspirvError
from ..fsutil import StagedFiles
from ..project.generated import origin_note
from .outputs import (committed_manifest_current, entry_text, expected_outputs, orphan_blobs, outputs_current,
                      outputs_key, remove_stale_temp_files, unavailable_names)
from .plan import Reason, Plan, Step, make_plan, replaced
from ..manifest import Unavailable
from .selection import choose, left_out, only as only_chosen
from ..project.variants import CompilerName
from ..remote.cache import RemoteCache
from .remote_fetches import ask_remote, remote_fetch

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from ..reflect import ShaderInfo

PROBES_FILE = "slang-glslang.json"    # what slang-glslang predefines, asked of it once per version
WRITERS = 4     # threads that keep, stage and render finished compiles (mostly waiting on fsync)

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
    or globs to build (``genspirv.buildsys.selection``); the others are kept as committed.
    """
    state_dir = config.root / STATE_DIR
    chosen = choose(config, only) if only else None     # a word that names nothing: before any work
    tally = Tally()
    remote = RemoteCache.for_config(config, tally)     # a bad URL stops the build before it starts
    with compilers_for(config, compiler, jobs=jobs, version_cache=state_dir / TOOLS_FILE,
                       probe_cache=state_dir / PROBES_FILE) as compilers:
        try:
            report = Builder(config, compilers, remote, tally, jobs=jobs, force=force, log=log,
                             on_command=on_command, explain=explain, verbose=verbose, chosen=chosen).build()
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


class Builder:
    """One build: what it works with held as fields, one method per phase (``build`` runs them):
    ``_load`` under the lock (then, when every variant will compile, the worker processes
    started), a no-op by the stamp or the plan (``_plan``, ``_noop``), else ``_run`` (each
    finished compile kept by ``Writers``) and ``_finish`` (a failure's state kept, or the
    outputs rendered and committed, and the next no-op stamped)."""

    # Read under the lock by _load: what the last build kept, and the project's files now.
    state: State
    committed: Callable[[], CommittedManifest]      # the committed manifest's facts, read at the first call
    committed_file: Callable[[], CommittedManifest]  # the committed manifest parsed, its reflection with it
    records: dict[str, Record]                      # the last build's, or the committed manifest's
    hashes: FileHashes
    cache: BlobCache
    lookups: ProjectLookups
    started: Optional[CompileWorkers]               # worker processes started before the plan

    def __init__(self, config: Config, compilers: Compilers, remote: RemoteCache, tally: Tally, *,
                 jobs: Optional[int] = None, force: bool = False, log: Log = None, on_command: CommandLog = None,
                 explain: Log = None, verbose: bool = False, chosen: Optional[frozenset[str]] = None):
        self.config = config
        self.compilers = compilers
        self.versions = compilers.versions()
        self.remote = remote
        self.tally = tally
        self.jobs = jobs
        self.force = force
        self.log = log
        self.on_command = on_command
        self.explain = explain
        self.verbose = verbose
        self.chosen = chosen            # a build of named variants (None: all of them)

    def build(self) -> BuildReport:
        """Under the lock: a no-op's report, or the plan run and its outputs committed."""
        # The remote cache's stores finish after the lock is released (they touch no project file).
        with self.remote, project_lock(self.config.root, log=self.log), contextlib.ExitStack() as stack:
            remove_stale_temp_files(self.config, self.log)
            with _collector(enabled=False):
                self._load()
                self.started = stack.enter_context(early_workers(self.compilers, self.config.variants,
                                                                 job_count(self.jobs))) \
                    if self._compiles_everything() else None
                report = self._noop_by_stamp()
                if report is not None:
                    return report
                plan, fetch = self._plan()
                report = self._noop(plan)
                if report is not None:
                    return report
                return self._run(plan, fetch)

    def _load(self) -> None:
        """Read what the last build kept and set up the planner's view of the project's files."""
        config = self.config
        self.state = load_state(config)
        stats = stat_log(config)
        early = take_early_reads(str(config.root))      # a fresh clone's, read while this process loaded
        if early is not None:
            stats.adopt(early["entries"])
        self.hashes = FileHashes.for_config(config, stats)
        # A fresh clone has no state: the committed manifest's provenance stands in for it. It is
        # read only when some variant has no record of its own (a no-op never reads it): the
        # early reads' build facts where they still hold, else the file through the stat log.
        self.committed_file = functools.cache(lambda: committed_manifest(config, stats))
        self.committed = functools.cache(lambda: early_manifest(config, early, stats) or self.committed_file())
        self.records = dict(self.state.records) if all(v.name in self.state.records for v in config.variants) \
            else {**self.committed().records, **self.state.records}
        self.cache = BlobCache.for_config(config, self.tally)
        self.lookups = ProjectLookups(config, self.versions, self.hashes, self.cache, self.state.inputs)

    def _compiles_everything(self) -> bool:
        """Every variant will compile (``--force``, or a first build with nothing cached and no
        remote cache): its worker processes may start before the plan is made."""
        return self.chosen is None and (self.force or (not self.records and not self.remote.enabled
                                                       and self.cache.empty()))

    def _noop_by_stamp(self) -> Optional[BuildReport]:
        """The same no-op as last time, by stat() alone (genspirv.buildsys.noopstamp): no key computed.
        None: plan in full."""
        if self.force or self.chosen is not None or not noopstamp.holds(self.config, self.versions, self.state):
            return None
        unchanged = noopstamp.unchanged_plan(self.config, self.records)
        if unchanged is None or orphan_blobs(self.config, unavailable_names(_records_of(unchanged.unavailable))):
            return None
        self._explain(unchanged)
        return self._report(unchanged, _records_of(unchanged.steps))

    def _plan(self) -> tuple[Plan, Fetch]:
        """The plan of the chosen variants, and each compile's remote fetch (None: none to ask)."""
        config = self.config
        plan = only_chosen(make_plan(config.variants, self.records, self.lookups, self.force), self.chosen,
                           self.records, lambda v: config.path(config.blob_relpath(v)).is_file())
        # --explain, a dry run, resolves every fetch first to print the exact plan; a build gates
        # each compile on its own fetch, so compiles run while other fetches are in flight.
        if self.explain is not None:
            plan, fetch = ask_remote(plan, self.remote, self.records, self.lookups, self.cache), None
        else:
            fetch = remote_fetch(plan, self.remote, self.records, self.lookups, self.cache)
        self._explain(plan)
        return plan, fetch

    def _explain(self, plan: Plan) -> None:
        """``--explain``: a line per variant the plan compiles or takes from a cache, saying why."""
        if self.explain is not None:
            for line in plan.explanations():
                self.explain(f"explain: {line}")

    def _noop(self, plan: Plan) -> Optional[BuildReport]:
        """Nothing changed (ninja-style): no compile, no reflection, no rendering, no write; the
        state saved only when the journal or the stat log has news. None: run the plan."""
        config, state, stats = self.config, self.state, self.hashes.stats
        known = _records_of(plan.up_to_date + plan.unavailable)
        keys = {name: r.key for name, r in known.items()}
        if plan.to_compile or plan.from_cache or plan.from_remote or state.outputs is None \
                or orphan_blobs(config, unavailable_names(known)) \
                or not outputs_current(config, state.outputs, outputs_key(config, self.versions, keys),
                                       self.hashes.on_disk):
            return None
        if journal_path(config).exists() or stats.changed:
            save_state(config, _kept_records(config, self.records, known), state.outputs, state.inputs, stats)
        if not self.force and self.chosen is None:
            noopstamp.save(config, self.versions, stats)
        return self._report(plan, known)

    def _run(self, plan: Plan, fetch: Fetch) -> BuildReport:
        """Run the plan into a work folder, each finished compile kept by ``Writers`` while the
        others run; then ``_finish``."""
        config = self.config
        staged = StagedFiles()
        # A failure or an interrupt before the commit discards every staged file (and any
        # folder staging made).
        with folders_removed_on_failure(config.path(config.spirv_dir)), staged:
            if not (plan.to_compile or plan.from_cache or plan.from_remote):
                # Nothing to compile or keep (a fresh clone's no-op, a re-render): no journal,
                # work folder or thread; the unavailable variants keep their records.
                return self._finish(plan, Ran({}, _records_of(plan.unavailable), {}, ()),
                                    Writers(self, None, staged, None))
            journal = Journal(config)
            for step in plan.from_remote:       # kept as a compile is: the next build needs no network
                self.cache.put(step.record.key, step.blob)
                journal.append(step.name, step.record)
            # An interrupt still waits for the writers: each finished compile is in the cache.
            from concurrent.futures import ThreadPoolExecutor      # here: a no-op build starts no thread
            with _collector(enabled=True), \
                    ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="genspirv-write") as pool:
                writers = Writers(self, journal, staged, pool)
                try:
                    with tempfile.TemporaryDirectory(prefix="compile-", dir=config.root / STATE_DIR) as tmp:
                        ran = run_plan(config, self.compilers, plan, Path(tmp), self.hashes, jobs=self.jobs,
                                       log=self.log, on_command=self.on_command, keep=writers.keep,
                                       seconds={n: r.seconds for n, r in self.records.items()}, fetch=fetch,
                                       started=self.started)
                except KeyboardInterrupt:
                    raise BuildInterrupted(writers.kept, len(plan.to_compile) - writers.hits) from None
                finally:
                    journal.close()
            if fetch is not None:
                self.remote.finish_asking()
                plan = replaced(plan, ran.fetched)
            return self._finish(plan, ran, writers)

    def _finish(self, plan: Plan, ran: Ran, writers: Writers) -> BuildReport:
        """After the compiles: keep the state of a failed build, else render and commit the outputs."""
        config, state = self.config, self.state
        decided = writers.decided()     # a writer's error is raised here, before any state is saved
        records = _kept_records(config, self.records, {**_records_of(plan.up_to_date + plan.unavailable),
                                                       **ran.records})
        if ran.failures:
            self._fail(plan, ran, records)
        keys = {name: r.key for name, r in records.items()}
        unavailable = unavailable_entries(config, records)
        facts = self.compilers.manifest_facts()
        if self._committed_current(plan, ran, records, unavailable, facts):
            # Nothing to render or write: the state takes the committed manifest (the bytes this
            # build checked) as this build's.
            outputs_record = OutputsRecord(outputs_key(config, self.versions, keys),
                                           {config.manifest: self.committed().sha256})
            save_state(config, records, outputs_record, state.inputs, self.hashes.stats)
            return self._report(plan, records)
        compiled = {**ran.compiled, **self._up_to_date(plan)}
        ordered = [compiled[v.name] for v in config.variants if v.name in compiled]
        # Render everything before writing anything, so a codegen failure leaves no mix.
        outputs = expected_outputs(config, ordered, unavailable, keys, self.versions.optimizer, facts, writers.texts)
        blob_shas = {config.blob_relpath(c.variant): records[c.variant.name].sha256 for c in ordered}
        rendered = {rel: sha256_hex(data) for rel, data in outputs.items() if rel not in blob_shas}
        written, removed = commit(config, outputs, records,
                                  OutputsRecord(outputs_key(config, self.versions, keys), rendered), state.inputs,
                                  self.log, writers.staged, decided, self.hashes.stats)
        written_ns = time.time_ns()
        if self.cache.stored:
            self.cache.trim()
        report = self._report(plan, records, ran.compiled_now, tuple(removed), tuple(written))
        return self._stamp_next_noop(report, records, {**blob_shas, **rendered}, written_ns)

    def _stamp_next_noop(self, report: BuildReport, records: Mapping[str, Record], outputs: Mapping[str, str],
                         written_ns: int) -> BuildReport:
        """A build of every variant stamps the no-op that follows it (``noopstamp.save_after_build``)
        and carries that no-op's report (``stamped``), for the CLI to seal with what it prints."""
        stats = self.hashes.stats
        if self.chosen is not None or stats is None:
            return report
        unchanged = noopstamp.unchanged_plan(self.config, records)
        if unchanged is None or not noopstamp.save_after_build(self.config, self.versions, stats, outputs,
                                                               written_ns):
            return report
        return dataclasses.replace(report, stamped=self._report(unchanged, _records_of(unchanged.steps)))

    def _committed_current(self, plan: Plan, ran: Ran, records: Mapping[str, Record],
                           unavailable: Sequence[Unavailable], facts: Mapping[CompilerName, Mapping[str, str]]) -> bool:
        """A fresh clone (no state) whose committed outputs match their inputs, nothing compiled."""
        config = self.config
        fresh = {s.name: records[s.name] for s in plan.up_to_date}
        return not self.state.found and not ran.compiled and not config.generate \
            and not orphan_blobs(config, unavailable_names(records)) \
            and committed_manifest_current(config, self.committed(), fresh, self.versions.optimizer, unavailable,
                                           facts)

    def _fail(self, plan: Plan, ran: Ran, records: Mapping[str, Record]) -> NoReturn:
        """Keep what compiled (state and cache): the next build compiles only what failed or
        changed. Raises the failures' error, its ``report`` set."""
        save_state(self.config, records, self.state.outputs, self.state.inputs, self.hashes.stats)
        report = self._report(plan, records, ran.compiled_now, failed=tuple(sorted(ran.failures)))
        try:
            raise_failures(ran.failures, f"genspirv build: {report.summary()} "
                           "(nothing committed written; the compiled variants wait in the cache)",
                           self.verbose, origin_note(self.config.generated_files, self.config.generator))
        except GenspirvError as exc:
            exc.report = report
            raise

    def _up_to_date(self, plan: Plan) -> dict[str, Compiled]:
        """The up-to-date variants as compiled: each committed blob, with the committed manifest's
        reflection where this build's state wrote that manifest, else reflected again."""
        config = self.config
        trusted = _manifest_trusted(config, self.state)
        compiled = {}
        for step in plan.up_to_date:
            rel = config.blob_relpath(step.variant)
            blob = config.path(rel).read_bytes()
            info = (_manifest_info(self.committed_file(), step.name, step.record.sha256) if trusted else None) \
                or reflect_blob(step.name, rel, blob)
            compiled[step.name] = Compiled(step.variant, blob, step.record.deps, info, step.record.compiler)
        return compiled

    def _report(self, plan: Plan, records: Mapping[str, Record], compiled: tuple[str, ...] = (),
                removed: tuple[str, ...] = (), written: tuple[str, ...] = (),
                failed: tuple[str, ...] = ()) -> BuildReport:
        """What this build did, from its plan and records; ``remote`` None where no remote cache is set."""
        variants = {v.name: v for v in self.config.variants}
        # A variant that failed is not also unavailable (its old record may say it was).
        unavailable = [(n, r) for n, r in sorted(records.items()) if r.unavailable and n not in failed]
        return BuildReport(compiled=compiled, removed=removed, not_selected=left_out(plan, self.config.variants),
                           up_to_date=tuple(s.name for s in plan.up_to_date if s.reason is not Reason.NOT_SELECTED),
                           written=written, cached=tuple(s.name for s in plan.from_cache),
                           compiled_by=tuple((n, records[n].compiler.value) for n in compiled
                                             if records[n].compiler is not CompilerName.GLSLANG),
                           unavailable_because=tuple((n, self.compilers.lacks(variants[n], r.missing, r.compiler))
                                                     for n, r in unavailable),
                           unavailable=tuple((n, r.missing) for n, r in unavailable),
                           failed=failed, plan=plan,
                           remote=tuple(s.name for s in plan.from_remote) if self.remote.enabled else None)


class Writers:
    """What a build keeps of each compile and remote hit as it finishes (``run_plan``'s ``keep``),
    while the other compiles run: its record in the journal; a compiled blob queued for the
    remote store (read-write mode); and on a writer thread (an fsync each: the collecting thread
    never waits on the disk) each blob kept in the blob cache, staged beside its committed blob
    (renamed into place only when all are ready) and its manifest entry rendered. The build's
    end then renames and joins, and waits on no per-variant work."""

    def __init__(self, builder: Builder, journal: Optional[Journal], staged: StagedFiles,
                 pool: Optional[ThreadPoolExecutor]):
        # journal and pool None: a plan with nothing to keep (``keep`` is never called)
        self.config = builder.config
        self.cache = builder.cache
        self.replace = builder.force        # --force re-seeds the cache: over what it holds
        self.remote = builder.remote
        self.lookups = builder.lookups
        self.journal, self.staged, self.pool = journal, staged, pool
        self.by_name = {v.name: v for v in self.config.variants}
        self.kept = self.hits = 0           # compiles and remote hits kept: for BuildInterrupted
        self.texts: dict = {}               # name -> its manifest entry and text (outputs.entry_text)
        self.staging: dict[str, Future] = {}     # blob path -> staged (True), the same (False), or None

    def keep(self, name: str, record: Record, result: Optional[Compiled], fetched: bool = False) -> None:
        """A compile finished (``result`` None: unavailable), or a remote hit (``fetched``) returned."""
        self.kept, self.hits = self.kept + (not fetched), self.hits + fetched
        # The journal first: an interrupt landing in here must not leave a blob in the cache (the
        # writers are waited for) that the journal does not know, taken next time for another reason.
        self.journal.append(name, record)
        if result is not None and record.key is not None and self.remote.writable and not fetched:
            # queued for the remote cache's pool: the progress loop goes on
            self.remote.publish(record.key, record.deps, result.blob, self.lookups.inputs(self.by_name[name], ()).key,
                                None if record.compiler is CompilerName.GLSLANG else record.compiler.value)
        if result is not None:
            self.staging[self.config.blob_relpath(result.variant)] = self.pool.submit(self._write, name, record,
                                                                                      result)

    def _write(self, name: str, record: Record, result: Compiled) -> Optional[bool]:
        if record.key is not None:
            self.cache.put(record.key, result.blob, replace=self.replace)
        self.texts[name] = entry_text(self.config, result, record.key)
        return stage_blob(self.config, self.staged, result)

    def decided(self) -> dict[str, bool]:
        """Each blob path staged (True) or found the same (False), once every writer is done; one
        that could not be staged then is left to ``commit``, which tries again and says why."""
        return {rel: done for rel, future in self.staging.items() if (done := future.result()) is not None}


@contextlib.contextmanager
def _collector(enabled: bool) -> Iterator[None]:
    """Python's cyclic garbage collector on or off for the block, as it was after. Off while a
    build decides and writes: the records, keys, plan and outputs it makes (hundreds of thousands
    of small objects, no cycles) it would only scan, again and again as they grow (~30 ms of a
    fresh clone's 0.33 s no-op at 2,000 variants); on while compiles run."""
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def _records_of(steps: Sequence[Step]) -> dict[str, Record]:
    """Each step's record, by variant name."""
    return {s.name: s.record for s in steps}


def _kept_records(config: Config, previous: Mapping[str, Record], updates: Mapping[str, Record]) -> dict[str, Record]:
    """The records the state keeps: this build's, else the last one's (a variant that failed
    keeps its old record, so the next build says what changed since)."""
    kept = {}
    for v in config.variants:
        record = updates.get(v.name) or previous.get(v.name)
        if record is not None:
            kept[v.name] = record
    return kept


def _manifest_trusted(config: Config, state: State) -> bool:
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
