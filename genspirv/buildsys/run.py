"""Running a plan: the part of a build that check shares.

Takes a ``Config``, the build's ``Compilers``, a ``Plan`` (``genspirv.buildsys.plan``)
and the ``FileHashes`` of this run; gives

- ``ProjectLookups``: the planner's ``Lookups`` on the project (its files
  through the hashes, its committed blobs, its blob cache, the inputs the last
  build recorded), which ``make_plan`` decides with;
- ``run_plan``: the plan's stale variants compiled into a work folder through the
  ``Compiler`` seam (``genspirv.buildsys.compile``), its cached and remote ones
  reflected, the generator's files written first; a ``Ran``: what compiled,
  each variant's ``Record``, what failed; ``keep`` hears of each compile as
  it finishes;
- ``unavailable_entries``: the manifest's ``unavailable`` list from the records.

``genspirv.buildsys.builder`` runs a plan into the project (its compiles kept in
the cache, staged and committed); ``genspirv.buildsys.check`` runs a forced one
into a temporary folder and compares. Nothing here writes a committed file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from .blob_cache import BlobCache
from .state import FileHashes, KeyInputs, Record, RecordedInputs, include_dirs, key_inputs, sha256_hex
from .commit import output_error
from .compile import (Compiled, Fetch, Fetched, Log, compile_all, longest_first, make_jobs, reflect_blob,
                      unavailable_deps)
from .compile_workers import CompileWorkers
from ..toolchain.compiler import CommandLog, Versions
from ..toolchain.chain import Compilers
from ..project.config import Config, Variant
from ..errors import GenspirvError, UnavailableError
from ..project.generated import GENERATED_DIR, provenance, write_generated
from ..manifest import Unavailable
from .plan import Plan
from ..project.variants import CompilerName, compiler_named

# Told of each compile as it finishes: its record, and what it compiled (None: unavailable);
# of a remote hit as it returns, with True after them (only a build with a remote cache's fetch).
Keep = Optional[Callable[..., None]]


class ProjectLookups:
    """The planner's ``Lookups`` on the project: its files (through ``hashes``: each read once,
    or not at all when its stat() is as the stat log has it), its committed blobs, its blob
    cache (None: check's, which asks none) and the inputs the last build recorded."""

    def __init__(self, config: Config, versions: Versions, hashes: FileHashes, cache: Optional[BlobCache] = None,
                 recorded_inputs: Optional[RecordedInputs] = None):
        self.config = config
        self.versions = versions
        self.hashes = hashes
        self.cache = cache
        self.recorded_inputs = recorded_inputs
        self.include_dirs = include_dirs(config)    # looked up on disk once, not per variant

    def inputs(self, v: Variant, deps: Sequence[str]) -> KeyInputs:
        return key_inputs(self.config, self.versions, v, deps, self.hashes, self.include_dirs)

    def committed_sha(self, v: Variant) -> Optional[str]:
        return self.hashes.on_disk(self.config.blob_relpath(v))

    def cached(self, key: str, sha256: Optional[str]) -> Optional[bytes]:
        return self.cache.get(key, sha256) if self.cache is not None else None

    def blob_path(self, v: Variant) -> str:
        return self.config.blob_relpath(v)

    def recorded(self, name: str, key: Optional[str]) -> Optional[KeyInputs]:
        return self.recorded_inputs.get(name, key) if self.recorded_inputs is not None else None


@dataclass(frozen=True)
class Ran:
    """What running a plan's compile and cache steps gave."""

    compiled: Mapping[str, Compiled]            # compiled now or taken from the cache
    records: Mapping[str, Record]               # for those, and for every unavailable variant
    failures: Mapping[str, GenspirvError]
    compiled_now: tuple[str, ...]
    fetched: Mapping = field(default_factory=dict)      # name -> the plan step a remote fetch resolved it to


def run_plan(config: Config, compilers: Compilers, plan: Plan, workdir: Path, hashes: FileHashes, *,
             jobs: Optional[int] = None, log: Log = None, on_command: CommandLog = None, keep: Keep = None,
             generated_dir: Optional[Path] = None, seconds: Mapping[str, Optional[float]] = {},
             fetch: Fetch = None, started: Optional[CompileWorkers] = None) -> Ran:
    """Compile the plan's stale variants into ``workdir`` and reflect its cached ones.

    The compiles start longest first (``seconds``: each variant's last compile time).
    ``fetch``: each compile waits on its own remote fetch (``remote_fetch``), a hit resolving
    it (``Ran.fetched``: the plan steps the hits became). ``started``: worker processes started
    before the plan was made (``compile_workers.early_workers``).
    ``keep(name, record, compiled)`` hears of each compile and hit as it finishes (None: unavailable).
    The generator's files are written first, into ``.genspirv/generated/`` or, for check,
    ``generated_dir``."""
    versions = compilers.versions()
    dirs = include_dirs(config)
    records: dict[str, Record] = {}
    absent = compilers.missing_required([s.variant for s in plan.to_compile])
    if absent is not None:
        raise absent
    folder = generated_dir or config.path(GENERATED_DIR)
    if plan.to_compile and (config.generated or folder.is_dir()):
        try:
            write_generated(config.generated, folder)
        except OSError as exc:
            raise output_error(exc) from None

    def done(v: Variant, result: Compiled | UnavailableError | Fetched) -> None:
        if isinstance(result, Fetched):
            step = result.found
            result = Compiled(step.variant, step.blob, step.record.deps,
                              step.info or reflect_blob(step.name, "cache", step.blob), step.record.compiler)
            got[v.name] = result
            record = step.record
        elif isinstance(result, Compiled):
            inputs = key_inputs(config, versions, v, result.deps, hashes, dirs)
            record = Record.of(inputs, result.deps, sha256_hex(result.blob), compiler=result.compiler,
                               seconds=result.seconds)
        else:
            deps = tuple(unavailable_deps(config.root, result, v.preamble, config.generated_files))
            inputs = key_inputs(config, versions, v, deps, hashes, dirs)
            record = Record.of(inputs, deps, missing=result.missing,
                               compiler=compiler_named(result.compiler or None) or CompilerName.GLSLANG)
        records[v.name] = record
        if keep is not None:
            if v.name in got:
                keep(v.name, record, result, True)      # a remote hit: the build publishes it nowhere
            else:
                keep(v.name, record, result if isinstance(result, Compiled) else None)

    got: dict[str, Compiled] = {}
    order = longest_first([s.variant for s in plan.to_compile], seconds)
    outcome = compile_all(compilers, make_jobs(config, order, workdir, on_command, generated_dir), jobs, log, done,
                          fetch, started)
    compiled = {**outcome.compiled, **got}
    for step in plan.from_cache + plan.from_remote:
        compiled[step.name] = Compiled(step.variant, step.blob, step.record.deps,
                                       step.info or reflect_blob(step.name, "cache", step.blob), step.record.compiler)
        records[step.name] = step.record
    for step in plan.unavailable:
        records[step.name] = step.record
    return Ran(compiled, records, outcome.failures,
               tuple(s.name for s in plan.to_compile if s.name in outcome.compiled), outcome.fetched)


def unavailable_entries(config: Config, records: Mapping[str, Record]) -> list[Unavailable]:
    """The manifest's ``unavailable`` list, in variant order."""
    files = config.generated_files
    return [Unavailable(v.name, v.source, r.missing, r.key or "", provenance(r.deps, files, config.generator),
                        None if r.compiler is CompilerName.GLSLANG else r.compiler.value, v.meta_json)
            for v in config.variants if (r := records.get(v.name)) is not None and r.unavailable]
