"""The build loop: build and check, one loop in the shape of ninja's ``Builder::Build``.

Takes a ``Config`` and the caller's options; ``build`` gives committed blobs,
manifest and generated files (a ``BuildReport``), ``check`` the same outputs
made afresh in a temporary folder and compared with the committed ones (a
``CheckReport``). One ``Builder`` runs either, phase by phase, under the
project's lock (``statedir.project_lock``):

1. **load**: what the last build kept (``state``: its records, else a fresh
   clone's committed manifest) and the planner's view of the project's files
   (``ProjectLookups``, through the stat log: a file whose stat() is as logged
   is not read). Check loads nothing a build kept but each variant's last
   compile time.
2. **plan** (``plan.make_plan``, the one decider): per variant up to date,
   from the cache, compile or unavailable, and why; a build of named variants
   keeps the others (``selection``); the remote cache is asked for the
   compiles (``remote_fetches``). Check's plan is forced.
3. **nothing to do**: no step to run, the outputs as the last build wrote
   them, no orphan blob: the build returns here, having written nothing.
4. **run**: every compile through one runner, ``compile.compile_all`` (threads,
   worker processes, each compile gated on its remote fetch; a test's fake
   compiler behind the same ``Compiler`` seam), the generator's files written
   first.
5. **keep**, the one place a finished result goes, as it finishes while the
   others run: the build's ``Staging`` journals it, caches it, publishes it to
   the remote store, stages its blob and renders its manifest entry (on writer
   threads); check's ``check.Comparing`` compares its blob and renders its entry.
6. **commit** (``commit``): every output rendered, then written all or none,
   the manifest last, orphan blobs removed, the state saved. Check compares
   every output instead (``Comparing.differences``).

Nothing is lost: each compile lands in the blob cache and the journal as it
finishes, so a build that fails or is interrupted (SIGINT, SIGTERM) keeps
every variant it compiled, and the next build compiles only the rest. A
failure before the commit changes no committed file; a no-op build writes no
file. ``--force`` asks no cache and stores every blob afresh. What the caches
did is added to the counters ``genspirv cache stats`` shows.

longer than 500 lines because it is the one loop of build and check, each phase a method, with
the one place a finished result is kept (``Staging``) beside it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NoReturn, Optional, Sequence

from .. import cachestats, settings, statedir
from ..statedir import LARGEST_FILE, Kept
from ..cachestats import Stat, Tally
from ..errors import GenspirvError, OutputError, UnavailableError
from ..fsutil import StagedFiles, read_regular
from ..project.config import Config, Variant
from ..project.generated import origin_note, provenance, write_generated
from ..project.variants import CompilerName, Versions, compiler_named
from ..toolchain.chain import Compilers, compilers_for
from ..toolchain.compiler import CommandLog, Compiler
from .blob_cache import BlobCache, local_cache_dir
from .commit import (WRITERS, SpareBlobs, commit, folders_removed_on_failure, log_written, output_error, owned_blobs,
                     remove_stale_temp_files, save_state, spare_blobs, stage_blob)
from .keys import KeyInputs, OutputsRecord, Record, key_inputs, outputs_current, outputs_key, settings_digest, sha256_hex
from .plan import Plan, Reason, Step, make_plan, replaced
from .report import BuildReport
from .selection import choose, left_out, only as only_chosen
from .state import CommittedManifest, Journal, RecordedInputs, State, committed_manifest, \
    journal_exists, load_state
from .statlog import FileHashes, StatLog

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from ..manifest import Unavailable
    from ..reflect import ShaderInfo
    from ..remote.cache import RemoteCache
    from .check import CheckReport
    from .compile import Fetch, Fetched, Log
    from .compile_workers import CompileWorkers
    from .variant_compile import Compiled

# A no-op build compiles, renders and compares nothing, and asks no remote store it was not
# given: the runner (compile, compile_workers, variant_compile), the rendering (render, manifest),
# the remote cache and check's compare step are imported where they are first used.



class BuildInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the build; ``kept`` of the ``total`` compiles it ran finished
    and wait in the cache. No committed file was written."""

    def __init__(self, kept: int, total: int):
        super().__init__(f"{kept} of {total} compiles finished")
        self.kept, self.total = kept, total


# -- the two entry points -------------------------------------------------------------


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
    chosen = choose(config, only) if only else None     # a word that names nothing: before any work
    tally = Tally()
    remote = _remote_cache(config, tally)       # a bad URL stops the build before it starts
    with compilers_for(config, compiler, jobs=jobs, version_cache=statedir.path(config.root, Kept.TOOLS),
                       probe_cache=statedir.path(config.root, Kept.PROBES)) as compilers:
        builder = Builder(config, compilers, Options(jobs, force, log, on_command, explain, verbose, chosen),
                          remote, tally)
        try:
            report = builder.build()
        except GenspirvError as exc:
            _count(config, tally, getattr(exc, "report", None), force)
            raise
    _count(config, tally, report, force)
    return report


def check(config: Config, jobs: Optional[int] = None, log: Log = None, on_command: CommandLog = None,
          compiler: Optional[Compiler | Compilers] = None, verbose: bool = False) -> CheckReport:
    """Compare every committed output with a fresh build made in a temporary folder."""
    with compilers_for(config, compiler, jobs=jobs) as compilers:
        return Builder(config, compilers, Options(jobs, True, log, on_command, None, verbose, None),
                       None, Tally()).check()


def _remote_cache(config: Config, tally: Tally) -> Optional[RemoteCache]:
    """The remote cache the settings or the config name; None where neither names one, so that a
    build without one loads no HTTP client."""
    if not config.remote_cache and not settings.get("GENSPIRV_REMOTE_CACHE"):
        return None
    from ..remote.cache import RemoteCache
    return RemoteCache.for_config(config, tally)


def _count(config: Config, tally: Tally, report: Optional[BuildReport], force: bool) -> None:
    """Add what this build's caches did to the project's counters (``genspirv cache stats``).
    ``--force`` asks no cache: it counts stores, no hit or miss."""
    if report is not None:
        tally.add(Stat.LOCAL_HITS, len(report.cached))
        if not force:
            tally.add(Stat.LOCAL_MISSES, len(report.compiled) + len(report.failed) + len(report.remote or ()))
    cachestats.record(local_cache_dir(config), tally.counts())


@dataclass(frozen=True)
class Options:
    jobs: Optional[int] = None
    force: bool = False
    log: Log = None
    on_command: CommandLog = None
    explain: Log = None
    verbose: bool = False
    chosen: Optional[frozenset[str]] = None     # a build of named variants (None: all of them)


# -- the planner's view of the project ------------------------------------------------


class ProjectLookups:
    """The planner's ``Lookups`` (``plan.Lookups``) on the project: its files (through ``hashes``:
    each read once, or not at all when its stat() is as the stat log has it), its committed
    blobs, its blob cache (None: check's, which asks none) and the inputs the last build recorded."""

    def __init__(self, config: Config, versions: Versions, hashes: FileHashes, cache: Optional[BlobCache] = None,
                 recorded_inputs: Optional[RecordedInputs] = None):
        self.config = config
        self.versions = versions
        self.hashes = hashes
        self.cache = cache
        self.recorded_inputs = recorded_inputs
        self.include_dirs = config.include_dirs     # looked up on disk once, not per variant

    def inputs(self, v: Variant, deps: Sequence[str]) -> KeyInputs:
        return key_inputs(v, deps, self.hashes.get, self.versions, self.include_dirs, self.config.include_directive)

    def committed_sha(self, v: Variant) -> Optional[str]:
        return self.hashes.on_disk(self.config.blob_relpath(v))

    def cached(self, key: str, sha256: Optional[str]) -> Optional[bytes]:
        return self.cache.get(key, sha256) if self.cache is not None else None

    def blob_path(self, v: Variant) -> str:
        return self.config.blob_relpath(v)

    def recorded(self, name: str, key: Optional[str]) -> Optional[KeyInputs]:
        return self.recorded_inputs.get(name, key) if self.recorded_inputs is not None else None

    def settled(self, rel: str) -> bool:
        return self.hashes.settled(rel)


@dataclass(frozen=True)
class Ran:
    """What running a plan's steps gave."""

    compiled: Mapping[str, Compiled]            # compiled now or taken from a cache
    records: Mapping[str, Record]               # for those, and for every unavailable variant
    failures: Mapping[str, GenspirvError]
    compiled_now: tuple[str, ...]
    fetched: Mapping[str, Step] = field(default_factory=dict)   # the plan steps remote fetches resolved


# -- the loop ---------------------------------------------------------------------------


class Builder:
    """One build or check: what it works with as fields, one method per phase of the loop."""

    state: State
    hashes: FileHashes
    committed: Callable[[], CommittedManifest]      # the committed manifest, read at the first call
    records: dict[str, Record]                      # the last build's, or the committed manifest's
    cache: Optional[BlobCache]
    lookups: ProjectLookups
    started: Optional[CompileWorkers]               # worker processes started before the plan

    def __init__(self, config: Config, compilers: Compilers, options: Options, remote: Optional[RemoteCache],
                 tally: Tally):
        self.config = config
        self.compilers = compilers
        self.versions = compilers.versions()
        self.options = options
        self.remote = remote
        self.tally = tally

    # -- build ----------------------------------------------------------------------

    def build(self) -> BuildReport:
        """Under the lock: load, plan, return a no-op, or run the plan and commit its outputs."""
        root, options = self.config.root, self.options
        # The remote cache's stores finish after the lock is released (they touch no project file).
        with self.remote or contextlib.nullcontext(), statedir.project_lock(root, log=options.log), \
                contextlib.ExitStack() as stack:
            remove_stale_temp_files(self.config, options.log)
            with _collector(enabled=False):
                self._load(StatLog(root, statedir.path(root, Kept.STATS)), load_state(root),
                           BlobCache.for_config(self.config, self.tally))
                self.started = stack.enter_context(self._early_workers()) if self._compiles_everything() else None
                plan, fetch = self._plan()
                spare = self._spare({s.name for s in plan.unavailable})
                outputs = self._nothing_to_do(plan, spare)
                if outputs is not None:
                    return self._noop(plan, spare, outputs)
                return self._run(plan, fetch)

    def _load(self, stats: StatLog, state: State, cache: Optional[BlobCache]) -> None:
        """What the last build kept, and the planner's view of the project's files and ``cache``."""
        config = self.config
        self.state = state
        self.hashes = FileHashes(stats, {f.path: f.data for f in config.generated})
        # A fresh clone has no state: the committed manifest's provenance stands in for it, read
        # only when some variant has no record of its own (a no-op never reads it).
        self.committed = functools.cache(lambda: committed_manifest(config, stats))
        self.records = dict(state.records) if all(v.name in state.records for v in config.variants) \
            else {**self.committed().records, **state.records}
        self.cache = cache
        self.lookups = ProjectLookups(config, self.versions, self.hashes, cache, state.inputs)
        self.settings = settings_digest(config.variants, self.versions, self.lookups.include_dirs,
                                        config.include_directive, self.hashes.generated)

    @property
    def asks_remote(self) -> bool:
        """A remote cache is set (and not turned off): the plan's compiles are asked of it."""
        return self.remote is not None and self.remote.enabled

    def _compiles_everything(self) -> bool:
        """Every variant will compile (``--force``, or a first build with nothing cached and no
        remote cache): its worker processes may start before the plan is made."""
        return self.options.chosen is None and (self.options.force or (
            not self.records and not self.asks_remote and self.cache.empty()))

    def _early_workers(self):
        from .compile import job_count
        from .compile_workers import early_workers
        return early_workers(self.compilers, self.config.variants, job_count(self.options.jobs))

    def _plan(self) -> tuple[Plan, Fetch]:
        """The plan of the chosen variants, and each compile's remote fetch (None: none to ask)."""
        config, options = self.config, self.options
        # The records' keys stand unmade while their settings do (no journal of another build's).
        settled = self.state.settings == self.settings
        plan = only_chosen(make_plan(config.variants, self.records, self.lookups, options.force, settled),
                           options.chosen, self.records, lambda v: config.path(config.blob_relpath(v)).is_file())
        # --explain, a dry run, resolves every fetch first to print the exact plan; a build gates
        # each compile on its own fetch, so compiles run while other fetches are in flight.
        fetch = None
        if self.asks_remote:
            from .remote_fetches import ask_remote, remote_fetch
            if options.explain is not None:
                plan = ask_remote(plan, self.remote, self.records, self.lookups, self.cache)
            else:
                fetch = remote_fetch(plan, self.remote, self.records, self.lookups, self.cache)
        if options.explain is not None:
            for line in plan.explanations():
                options.explain(f"explain: {line}")
        return plan, fetch

    def _spare(self, unavailable: set[str]) -> SpareBlobs:
        """What spirv_dir holds besides the blobs of the available variants (``unavailable``: names)."""
        state = self.state

        def owned() -> set[str]:
            committed = self.committed()
            names = {*state.records, *committed.records, *committed.entries}
            return owned_blobs(self.config, names, committed.blob_paths())
        return spare_blobs(self.config, unavailable, owned)

    def _nothing_to_do(self, plan: Plan, spare: SpareBlobs) -> Optional[OutputsRecord]:
        """Ninja's "no work to do": no step runs, no orphan goes, and the outputs are as the last
        build wrote them from the same inputs (the stat log says so without reading them); in a
        fresh clone, as its committed manifest says a build would write them. Gives the outputs'
        record that shows it (None: there is work)."""
        if plan.to_compile or plan.from_cache or plan.from_remote or spare.orphans:
            return None
        keys = {s.name: s.record.key for s in plan.up_to_date + plan.unavailable}
        key = outputs_key(self.config, self.versions, keys)
        recorded = self.state.outputs
        if recorded is None and not self.state.found:
            from .render import committed_outputs
            committed = self.committed()
            recorded = committed_outputs(self.config, committed.doc, committed.sha256, _records_of(plan.up_to_date),
                                         _unavailable_entries(self.config, _records_of(plan.unavailable)),
                                         key, self.versions.optimizer, self.compilers.manifest_facts())
        return recorded if outputs_current(recorded, key, self.hashes.on_disk) else None

    def _noop(self, plan: Plan, spare: SpareBlobs, outputs: OutputsRecord) -> BuildReport:
        """Nothing changed: no compile, no reflection, no rendering, no write; the state saved
        only when the journal, the stat log or a fresh clone (``outputs`` not yet kept) has news."""
        known = _records_of(plan.up_to_date + plan.unavailable)
        if journal_exists(self.config.root) or self.hashes.stats.changed or outputs != self.state.outputs:
            save_state(self.config.root, _kept_records(self.config, self.records, known), outputs,
                       self.state.inputs, self.hashes.stats, self._settings_kept())
        return self._report(plan, known, spare=spare)

    def _run(self, plan: Plan, fetch: Fetch) -> BuildReport:
        """Run the plan into a work folder, each finished result kept by ``Staging`` while the
        others run; then ``_commit``."""
        config = self.config
        staged = StagedFiles()
        # A failure or an interrupt before the commit discards every staged file (and any
        # folder staging made).
        with folders_removed_on_failure(config.path(config.spirv_dir)), staged:
            if not (plan.to_compile or plan.from_cache or plan.from_remote):
                # Nothing to compile or keep (a re-render): no journal,
                # work folder or thread; the unavailable variants keep their records.
                return self._commit(plan, Ran({}, _records_of(plan.unavailable), {}, ()),
                                    Staging(self, None, staged, None))
            journal = Journal(config.root)
            for step in plan.from_remote:       # kept as a compile is: the next build needs no network
                self.cache.put(step.record.key, step.blob)
                journal.append(step.name, step.record)
            # An interrupt still waits for the writers: each finished compile is in the cache.
            from concurrent.futures import ThreadPoolExecutor      # here: a no-op build starts no thread
            with _collector(enabled=True), \
                    ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="genspirv-write") as pool:
                staging = Staging(self, journal, staged, pool)
                try:
                    statedir.make_state_dir(config.root)
                    with tempfile.TemporaryDirectory(prefix=statedir.WORK_PREFIX,
                                                     dir=statedir.state_dir(config.root)) as tmp:
                        ran = self._run_steps(plan, Path(tmp), staging.keep, fetch)
                except KeyboardInterrupt:
                    raise BuildInterrupted(staging.kept, len(plan.to_compile) - staging.hits) from None
                finally:
                    journal.close()
            if fetch is not None:
                self.remote.finish_asking()
                plan = replaced(plan, ran.fetched)
            return self._commit(plan, ran, staging)

    def _run_steps(self, plan: Plan, workdir: Path, keep: Callable[..., None], fetch: Fetch = None,
                   generated_dir: Optional[Path] = None) -> Ran:
        """Every compile of the plan through the runner (``compile.compile_all``), the generator's
        files written first (into ``.genspirv/generated/``, or check's ``generated_dir``); each
        result told to ``keep(name, record, compiled or None, fetched)`` as it finishes."""
        from .compile import Fetched, compile_all, longest_first, make_jobs, unavailable_deps
        from .variant_compile import Compiled, reflect_blob
        config = self.config
        records: dict[str, Record] = {}
        absent = self.compilers.missing_required([s.variant for s in plan.to_compile])
        if absent is not None:
            raise absent
        folder = generated_dir or statedir.generated_dir(config.root)
        if plan.to_compile and (config.generated or folder.is_dir()):
            try:
                write_generated(config.generated, folder)
            except OSError as exc:
                raise output_error(exc) from None
        got: dict[str, Compiled] = {}

        def done(v: Variant, result: Compiled | UnavailableError | Fetched) -> None:
            if isinstance(result, Fetched):
                step = result.found
                result = Compiled(step.variant, step.blob, step.record.deps,
                                  step.info or reflect_blob(step.name, "cache", step.blob), step.record.compiler)
                got[v.name] = result
                record = step.record
            elif isinstance(result, Compiled):
                record = Record.of(self.lookups.inputs(v, result.deps), result.deps, sha256_hex(result.blob),
                                   compiler=result.compiler, seconds=result.seconds)
            else:
                deps = tuple(unavailable_deps(config.root, result, v.preamble, config.generated_files))
                record = Record.of(self.lookups.inputs(v, deps), deps, missing=result.missing,
                                   compiler=compiler_named(result.compiler or None) or CompilerName.GLSLANG)
            records[v.name] = record
            keep(v.name, record, result if isinstance(result, Compiled) else None, v.name in got)

        order = longest_first([s.variant for s in plan.to_compile], {n: r.seconds for n, r in self.records.items()})
        outcome = compile_all(self.compilers, make_jobs(config, order, workdir, self.options.on_command, generated_dir),
                              self.options.jobs, self.options.log, done, fetch, self.started)
        compiled = {**outcome.compiled, **got}
        for step in plan.from_cache + plan.from_remote:
            compiled[step.name] = Compiled(step.variant, step.blob, step.record.deps,
                                           step.info or reflect_blob(step.name, "cache", step.blob),
                                           step.record.compiler)
            records[step.name] = step.record
        for step in plan.unavailable:
            records[step.name] = step.record
        return Ran(compiled, records, outcome.failures,
                   tuple(s.name for s in plan.to_compile if s.name in outcome.compiled), outcome.fetched)

    def _commit(self, plan: Plan, ran: Ran, staging: Staging) -> BuildReport:
        """After the compiles: keep the state of a failed build, else render and commit the outputs."""
        from .render import expected_outputs
        config, state = self.config, self.state
        decided = staging.decided()     # a writer's error is raised here, before any state is saved
        records = _kept_records(config, self.records, {**_records_of(plan.up_to_date + plan.unavailable),
                                                       **ran.records})
        if ran.failures:
            self._fail(plan, ran, records)
        spare = self._spare({n for n, r in records.items() if r.unavailable})   # a compile may have found one
        keys = {name: r.key for name, r in records.items()}
        compiled = {**ran.compiled, **self._up_to_date(plan)}
        ordered = [compiled[v.name] for v in config.variants if v.name in compiled]
        # Render everything before writing anything, so a codegen failure leaves no mix.
        outputs = expected_outputs(config, ordered, _unavailable_entries(config, records), keys,
                                   self.versions.optimizer, self.compilers.manifest_facts(), staging.texts)
        blob_shas = {config.blob_relpath(c.variant): records[c.variant.name].sha256 for c in ordered}
        rendered = {rel: sha256_hex(data) for rel, data in outputs.items() if rel not in blob_shas}
        written = commit(config, outputs, records, OutputsRecord(outputs_key(config, self.versions, keys), rendered),
                         state.inputs, self.options.log, staging.staged, decided, spare, self.hashes.stats,
                         self._settings_kept())
        if self.cache.stored:
            self.cache.trim()
        log_written(self.hashes.stats, written)
        return self._report(plan, records, ran.compiled_now, spare.orphans, tuple(written), spare=spare)

    def _settings_kept(self) -> Optional[str]:
        """The settings digest the state may keep: this build's, when every record it keeps was
        made or found current under it (not where a build of named variants kept the others'
        as they were: those may be older)."""
        return self.settings if self.options.chosen is None else None

    def _fail(self, plan: Plan, ran: Ran, records: Mapping[str, Record]) -> NoReturn:
        """Keep what compiled (state and cache): the next build compiles only what failed or
        changed. Raises the failures' error, its ``report`` set. No settings digest is kept: a
        variant that failed keeps its old record, made with the settings it had then."""
        from .compile import raise_failures
        save_state(self.config.root, records, self.state.outputs, self.state.inputs, self.hashes.stats)
        report = self._report(plan, records, ran.compiled_now, failed=tuple(sorted(ran.failures)))
        try:
            raise_failures(ran.failures, f"genspirv build: {report.summary()} "
                           "(nothing committed written; the compiled variants wait in the cache)",
                           self.options.verbose, origin_note(self.config.generated_files, self.config.generator))
        except GenspirvError as exc:
            exc.report = report
            raise

    def _up_to_date(self, plan: Plan) -> dict[str, Compiled]:
        """The up-to-date variants as compiled: each committed blob, with the committed manifest's
        reflection where this build's state wrote that manifest (or there is no state: a fresh
        clone), else reflected again."""
        from .variant_compile import Compiled, reflect_blob
        config = self.config
        recorded = self.state.outputs
        trusted = not self.state.found if recorded is None else \
            recorded.files.get(config.manifest) == self.hashes.on_disk(config.manifest)
        compiled = {}
        for step in plan.up_to_date:
            rel = config.blob_relpath(step.variant)
            try:
                blob = read_regular(config.path(rel), LARGEST_FILE)
            except OSError as exc:      # it was there a moment ago, as the stat log saw it
                raise OutputError(f"{rel}: cannot read: {exc.strerror or exc}") from None
            # A stripped blob has no names left to reflect: the manifest's entry for these bytes
            # is all that has them (check recompiles, and so proves them).
            info = (_manifest_info(self.committed(), step.name, step.record.sha256)
                    if trusted or step.variant.strip_debug else None) or reflect_blob(step.name, rel, blob)
            compiled[step.name] = Compiled(step.variant, blob, step.record.deps, info, step.record.compiler)
        return compiled

    def _report(self, plan: Plan, records: Mapping[str, Record], compiled: tuple[str, ...] = (),
                removed: tuple[str, ...] = (), written: tuple[str, ...] = (),
                failed: tuple[str, ...] = (), spare: SpareBlobs = SpareBlobs((), ())) -> BuildReport:
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
                           failed=failed, plan=plan, strays=spare.strays,
                           remote=tuple(s.name for s in plan.from_remote) if self.asks_remote else None)

    # -- check: the same loop, forced, into a temporary folder, compared -------------------

    def check(self) -> CheckReport:
        """Under the lock: every variant compiled afresh, every output compared."""
        from .check import Comparing
        from .compile import raise_failures
        from .render import expected_outputs
        config = self.config
        with statedir.project_lock(config.root, log=self.options.log), self._early_workers() as started:
            self.started = started
            with _collector(enabled=False):
                # Nothing a build kept is trusted: an empty stat log that is never saved; of the
                # state only each variant's last compile time, for the order compiles start in.
                last = load_state(config.root)
                self._load(StatLog(config.root, None), State({}, last.inputs), None)
                self.records = {n: Record(None, (), seconds=r.seconds) for n, r in last.records.items()}
                plan = make_plan(config.variants, {}, self.lookups, force=True)
            comparing = Comparing(config)
            with tempfile.TemporaryDirectory(prefix="genspirv-check-") as tmp:
                # The generator's files go to the temporary folder too: check writes nothing in the project.
                ran = self._run_steps(plan, Path(tmp), comparing.keep, generated_dir=Path(tmp) / "generated")
            if ran.failures:
                raise_failures(ran.failures, verbose=self.options.verbose,
                               note=origin_note(config.generated_files, config.generator))
            compiled = [ran.compiled[v.name] for v in config.variants if v.name in ran.compiled]
            keys = {name: r.key for name, r in ran.records.items()}
            expected = expected_outputs(config, compiled, _unavailable_entries(config, ran.records), keys,
                                        self.versions.optimizer, self.compilers.manifest_facts(), comparing.texts)
            self.state = last      # whose blobs genspirv may remove, as a build would say
            spare = self._spare({n for n, r in ran.records.items() if r.unavailable})
            return comparing.differences(expected, {config.blob_relpath(c.variant): c.variant.name for c in compiled},
                                         spare)


class Staging:
    """What a build keeps of each compile and remote hit as it finishes (the loop's ``keep``),
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
        self.replace = builder.options.force        # --force re-seeds the cache: over what it holds
        self.remote = builder.remote
        self.lookups = builder.lookups
        self.journal, self.staged, self.pool = journal, staged, pool
        self.by_name = {v.name: v for v in self.config.variants}
        self.kept = self.hits = 0           # compiles and remote hits kept: for BuildInterrupted
        self.texts: dict = {}               # name -> its manifest entry and text (render.entry_text)
        self.staging: dict[str, Future] = {}     # blob path -> staged (True), the same (False), or None

    def keep(self, name: str, record: Record, result: Optional[Compiled], fetched: bool = False) -> None:
        """A compile finished (``result`` None: unavailable), or a remote hit (``fetched``) returned."""
        self.kept, self.hits = self.kept + (not fetched), self.hits + fetched
        # The journal first: an interrupt landing in here must not leave a blob in the cache (the
        # writers are waited for) that the journal does not know, taken next time for another reason.
        self.journal.append(name, record)
        if result is not None and record.key is not None and self.remote is not None and self.remote.writable \
                and not fetched:
            # queued for the remote cache's pool: the progress loop goes on
            self.remote.publish(record.key, record.deps, result.blob, self.lookups.inputs(self.by_name[name], ()).key,
                                None if record.compiler is CompilerName.GLSLANG else record.compiler.value)
        if result is not None:
            self.staging[self.config.blob_relpath(result.variant)] = self.pool.submit(self._write, name, record,
                                                                                      result)

    def _write(self, name: str, record: Record, result: Compiled) -> Optional[bool]:
        from .render import entry_text
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
    of small objects, no cycles) it would only scan, again and again as they grow; on while
    compiles run."""
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


def _unavailable_entries(config: Config, records: Mapping[str, Record]) -> list[Unavailable]:
    """The manifest's ``unavailable`` list, in variant order."""
    from ..manifest import Unavailable
    files = config.generated_files
    return [Unavailable(v.name, v.source, r.missing, r.key or "", provenance(r.deps, files, config.generator),
                        None if r.compiler is CompilerName.GLSLANG else r.compiler.value, v.meta_json)
            for v in config.variants if (r := records.get(v.name)) is not None and r.unavailable]


def _manifest_info(committed: CommittedManifest, name: str, blob_sha: Optional[str]) -> Optional[ShaderInfo]:
    """The committed manifest's reflection of an up-to-date variant."""
    entry = committed.entries.get(name)
    if entry is None or entry.get("sha256") != blob_sha:
        return None
    from ..manifest import info_from_dict
    try:
        return info_from_dict(entry, name)
    except GenspirvError:
        return None
