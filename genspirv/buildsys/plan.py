"""The build plan: per variant, what the build does with it, and why.

Takes the variants, what the last build recorded of each (``Record``: the state
file and journal, else the committed manifest's provenance) and ``Lookups``
(the inputs each variant has now, the committed blob's sha256, the blob
cache); gives a ``Plan``, one ``Step`` per variant: up to date, from the
cache, compile, or unavailable (an optional variant the compiler cannot
build), each with a ``Reason`` and a sentence a user acts on
(``Step.explain``, what ``genspirv build --explain`` prints).

A second pass, ``found_elsewhere``, takes blobs another machine compiled (the
remote cache, docs/GUIDE.md "Sharing compiles across machines") for steps
that would compile, and makes them remote hits (``found_step`` one at a time,
as a build that overlaps fetches and compiles gets them; ``replaced`` puts them
in the plan): the plan, not the run, says where every blob comes from.

Pure apart from the ``Lookups`` it is handed, a protocol: the build hands it the
project's files and caches (``genspirv.buildsys.run.ProjectLookups``), the tests
dictionaries. ``genspirv.buildsys.builder`` runs a plan into the project,
``genspirv.buildsys.check`` a forced one into a temporary folder.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Protocol, Sequence

from ..project.variants import CompilerName, Variant
from .keys import KeyInputs, Record, sha256_hex

if TYPE_CHECKING:
    from ..reflect import ShaderInfo


class Action(enum.Enum):
    UP_TO_DATE = "up to date"
    FROM_CACHE = "from cache"
    FROM_REMOTE = "remote hit"          # from the remote cache: another machine compiled it
    COMPILE = "compile"
    UNAVAILABLE = "unavailable"


class Reason(enum.Enum):
    UNCHANGED = "unchanged"
    FORCED = "--force"
    NEW_VARIANT = "new variant"
    SOURCE_CHANGED = "source changed"
    PREAMBLE_CHANGED = "preamble changed"
    INCLUDE_CHANGED = "include changed"
    FILE_GONE = "a file it read is gone"
    DEFINES_CHANGED = "defines changed"
    FLAGS_CHANGED = "flags changed"
    TARGET_ENV_CHANGED = "target env changed"
    OPTIMIZE_CHANGED = "optimisation changed"
    VALIDATE_CHANGED = "validation changed"
    INCLUDE_SETTINGS_CHANGED = "include settings changed"
    COMPILER_CHANGED = "compiler version changed"
    OPTIMIZER_CHANGED = "optimiser version changed"
    INPUTS_CHANGED = "inputs changed"            # only the committed manifest's key to compare with
    BLOB_CHANGED = "committed blob missing or different"
    CACHE_MISSING = "cache entry missing"
    NOW_REQUIRED = "no longer optional"
    NOT_SELECTED = "not selected"               # a build of named variants keeps this one as committed


@dataclass(frozen=True)
class Step:
    variant: Variant
    action: Action
    reason: Reason
    detail: str = ""                    # the sentence: which file, define or version, old -> new
    record: Optional[Record] = None     # what the build keeps (not for COMPILE: known after it)
    blob: Optional[bytes] = None        # FROM_CACHE, FROM_REMOTE: the blob
    info: Optional[ShaderInfo] = field(default=None, compare=False, repr=False)
    # ^ FROM_REMOTE: its reflection, made when the entry was verified (not made twice)

    @property
    def name(self) -> str:
        return self.variant.name

    def explain(self) -> str:
        return f"{self.name}: {self.action.value}: {self.detail}"


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]

    def of(self, action: Action) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action is action)

    @property
    def to_compile(self) -> tuple[Step, ...]:
        return self.of(Action.COMPILE)

    @property
    def from_cache(self) -> tuple[Step, ...]:
        return self.of(Action.FROM_CACHE)

    @property
    def up_to_date(self) -> tuple[Step, ...]:
        return self.of(Action.UP_TO_DATE)

    @property
    def from_remote(self) -> tuple[Step, ...]:
        return self.of(Action.FROM_REMOTE)

    @property
    def unavailable(self) -> tuple[Step, ...]:
        return self.of(Action.UNAVAILABLE)

    def explanations(self) -> list[str]:
        """One line per variant the build compiles or takes from a cache, local or remote."""
        return [s.explain() for s in self.steps if s.action in (Action.COMPILE, Action.FROM_CACHE,
                                                                  Action.FROM_REMOTE)]


class Lookups(Protocol):
    """What the planner may ask of the world: ``genspirv.buildsys.run.ProjectLookups`` asks the
    project's files and caches; a test may answer from dictionaries."""

    def inputs(self, v: Variant, deps: Sequence[str]) -> KeyInputs:
        """The inputs ``v`` has now, given the files it read (``deps``)."""
        ...

    def committed_sha(self, v: Variant) -> Optional[str]:
        """sha256 of ``v``'s committed blob; None: absent."""
        ...

    def cached(self, key: str, sha256: Optional[str]) -> Optional[bytes]:
        """The blob cache's blob for ``key`` (with that sha256, when one is given); None: none."""
        ...

    def blob_path(self, v: Variant) -> str:
        """For messages: ``spirv/<name>.spv``."""
        ...

    def recorded(self, name: str, key: Optional[str]) -> Optional[KeyInputs]:
        """The inputs the last build recorded behind a variant's key, asked only to explain."""
        ...

    def settled(self, rel: str) -> bool:
        """The file at ``rel`` has the digest the last build logged for it, known from its stat()
        alone (a generated file: the settings digest covers its text)."""
        ...


def make_plan(variants: Sequence[Variant], records: Mapping[str, Record], lookups: Lookups,
              force: bool = False, settled: bool = False) -> Plan:
    """A step for each variant, in order. ``settled``: the records were made with the settings
    every variant has now (``keys.settings_digest`` is the one the state recorded)."""
    return Plan(tuple(decide(v, records.get(v.name), lookups, force, settled) for v in variants))


def decide(v: Variant, record: Optional[Record], lookups: Lookups, force: bool = False,
           settled: bool = False) -> Step:
    """What to do with one variant, given what the last build recorded of it.

    As ninja decides an output: when its settings are the ones it was built with (``settled``)
    and every file it read has the stat() the stat log gave it, its content key is its record's,
    and none is made; otherwise the key is made from the files' sha256 (read only where a
    stat() changed) and compared."""
    if force:
        return Step(v, Action.COMPILE, Reason.FORCED, "--force")
    if record is None:
        return Step(v, Action.COMPILE, Reason.NEW_VARIANT, "new variant (no earlier build of it)")
    if settled and record.key is not None and all(map(lookups.settled, record.deps)) and \
            (v.source in record.deps or lookups.settled(v.source)) and (v.preamble is None or lookups.settled(v.preamble)):
        now, key, kept = None, record.key, record
    else:
        now = lookups.inputs(v, record.deps)
        key = now.key
        kept = Record.of(now, record.deps, record.sha256, record.missing, record.compiler, record.seconds)
    if key is not None and key == record.key:
        if record.unavailable:
            if v.optional:
                return Step(v, Action.UNAVAILABLE, Reason.UNCHANGED, f"lacks {', '.join(record.missing)}", kept)
            return Step(v, Action.COMPILE, Reason.NOW_REQUIRED,
                        f"no longer optional (the compiler lacked {', '.join(record.missing)})")
        on_disk = lookups.committed_sha(v)
        if record.sha256 is not None and on_disk == record.sha256:
            return Step(v, Action.UP_TO_DATE, Reason.UNCHANGED, "", kept)
        rel = lookups.blob_path(v)
        # Different: edited by hand, or older than its record (an interrupted build compiled it).
        what = f"{rel} is missing" if on_disk is None else f"{rel} differs from the blob its inputs give"
        blob = lookups.cached(key, record.sha256) if record.sha256 is not None and not v.strip_debug else None
        if blob is not None:
            return Step(v, Action.FROM_CACHE, Reason.BLOB_CHANGED, f"{what}; its blob is in the cache", kept, blob)
        return Step(v, Action.COMPILE, Reason.CACHE_MISSING, f"{what}, and the cache has no blob for it")
    assert now is not None      # a settled record's key is its own
    reason, detail = why_stale(record.inputs or lookups.recorded(v.name, record.key), now)
    # A shared cache may hold what the inputs now give. It keeps blobs only, so which compiler
    # built one is known only for a variant with one compiler in its chain; and a stripped (-g0)
    # blob has lost the names its reflection reads: that variant compiles.
    if key is not None and len(v.chain) == 1 and not v.strip_debug:
        blob = lookups.cached(key, None)
        if blob is not None:
            return Step(v, Action.FROM_CACHE, reason, f"{detail}; its blob for these inputs is in the cache",
                        Record.of(now, record.deps, sha256_hex(blob), compiler=v.chain[0]), blob)
    return Step(v, Action.COMPILE, reason, detail)


@dataclass(frozen=True)
class Found:
    """A blob for a variant the plan would compile, found by asking the remote cache."""

    deps: tuple[str, ...]               # the files it was compiled from (its key covers them here)
    blob: bytes
    info: Optional[ShaderInfo] = None   # its reflection, when already made
    remote: bool = True                 # False: the store's index named a key the local cache holds
    compiler: CompilerName = CompilerName.GLSLANG   # the compiler that built it


def found_elsewhere(plan: Plan, found: Mapping[str, Found], lookups: Lookups) -> Plan:
    """``plan`` with each compile step that ``found`` has a blob for taken from there instead:
    a remote hit, or from the local cache (its reason stays: why it was not up to date)."""
    return Plan(tuple(found_step(step, hit, lookups)
                      if step.action is Action.COMPILE and (hit := found.get(step.name)) is not None else step
                      for step in plan.steps))


def found_step(step: Step, hit: Found, lookups: Lookups) -> Step:
    """The compile ``step`` taken from ``hit`` instead (a build that overlaps its fetches
    with its compiles makes each as its fetch returns)."""
    record = Record.of(lookups.inputs(step.variant, hit.deps), hit.deps, sha256_hex(hit.blob),
                       compiler=hit.compiler)
    if hit.remote:
        return Step(step.variant, Action.FROM_REMOTE, step.reason,
                    f"{step.detail}; the remote cache has its blob", record, hit.blob, hit.info)
    return Step(step.variant, Action.FROM_CACHE, step.reason,
                f"{step.detail}; the remote cache's index names its blob in the cache", record, hit.blob)


def replaced(plan: Plan, steps: Mapping[str, Step]) -> Plan:
    """``plan`` with the steps ``steps`` names in their places."""
    return Plan(tuple(steps.get(s.name, s) for s in plan.steps))


def why_stale(old: Optional[KeyInputs], now: KeyInputs) -> tuple[Reason, str]:
    """The first reason ``now`` differs from the recorded inputs, and a sentence naming every
    difference. Without recorded inputs (a fresh clone: only the committed manifest's key) it
    can say only that they differ."""
    if old is None:
        return Reason.INPUTS_CHANGED, ("its content key changed (which input, nothing in .genspirv/ "
                                       "records: a fresh clone knows only the committed manifest's key)")
    found = differences(old, now)
    if not found:
        return Reason.INPUTS_CHANGED, "its content key changed"
    return found[0][0], "; ".join(text for _, text in found)


def differences(old: KeyInputs, now: KeyInputs) -> list[tuple[Reason, str]]:
    """Each way ``now`` differs from ``old``, most sweeping first."""
    found: list[tuple[Reason, str]] = []

    def changed(reason: Reason, what: str, a: object, b: object) -> None:
        if a != b:
            found.append((reason, f"{what} changed: {a} -> {b}"))

    if compiler_names(old.compiler) != compiler_names(now.compiler):
        found.append((Reason.COMPILER_CHANGED, f"compiler changed: {compiler_label(old.compiler)} -> "
                                               f"{compiler_label(now.compiler)}"))
    else:
        changed(Reason.COMPILER_CHANGED, "compiler version", old.compiler, now.compiler)
    changed(Reason.OPTIMIZE_CHANGED, "optimize", _bool(old.optimize), _bool(now.optimize))
    if old.optimize and now.optimize:
        changed(Reason.OPTIMIZER_CHANGED, "optimiser version", old.optimizer, now.optimizer)
    if old.stripper and now.stripper:
        changed(Reason.OPTIMIZER_CHANGED, "stripping optimiser version", old.stripper, now.stripper)
    if old.defines != now.defines:
        found.append((Reason.DEFINES_CHANGED, "defines changed: " + _define_changes(old.defines, now.defines)))
    changed(Reason.FLAGS_CHANGED, "flags", _words(old.flags), _words(now.flags))
    changed(Reason.TARGET_ENV_CHANGED, "target env", old.target_env, now.target_env)
    changed(Reason.VALIDATE_CHANGED, "validate", _bool(old.validate), _bool(now.validate))
    changed(Reason.INCLUDE_SETTINGS_CHANGED, "include path", _words(old.include_dirs), _words(now.include_dirs))
    changed(Reason.INCLUDE_SETTINGS_CHANGED, "include_directive", _bool(old.include_directive),
            _bool(now.include_directive))
    if old.source != now.source:
        found.append((Reason.SOURCE_CHANGED, f"its source is now {now.source} (was {old.source})"))
    changed(Reason.PREAMBLE_CHANGED, "preamble", old.preamble or "none", now.preamble or "none")
    before = dict(old.files)
    gone = [p for p, digest in now.files if digest is None]
    edited = [p for p, digest in now.files if digest is not None and before.get(p, digest) != digest]
    for path in gone:
        found.append((Reason.FILE_GONE, f"{path}, which it read last time, is gone"))
    if edited:
        reason = Reason.SOURCE_CHANGED if now.source in edited else \
            Reason.PREAMBLE_CHANGED if now.preamble in edited else Reason.INCLUDE_CHANGED
        found.append((reason, " and ".join(edited) + " changed"))
    return found


def compiler_names(key_compiler: str) -> tuple[str, ...]:
    """The compilers a key's ``compiler`` names: the default's version alone, or a chain of
    named compilers ("glslang 13.1.1, else slang-glslang 2026.12 (...)"; toolchain.compiler.Versions.of)."""
    parts = key_compiler.split(", else ")
    names = tuple(part.split(" ", 1)[0] for part in parts)
    if len(parts) == 1 and names[0] not in _NAMES:
        return (CompilerName.GLSLANG.value,)
    return names


def compiler_label(key_compiler: str) -> str:
    """A key's ``compiler`` as a sentence names it: the default's version gets its name."""
    if compiler_names(key_compiler) == (CompilerName.GLSLANG.value,) and \
            not key_compiler.startswith(CompilerName.GLSLANG.value + " "):
        return f"{CompilerName.GLSLANG.value} {key_compiler}"
    return key_compiler


_NAMES = {c.value for c in CompilerName}


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _words(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"


def _define_changes(old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]]) -> str:
    a, b = dict(old), dict(new)
    parts = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            parts.append(f"{name}={a[name]} removed")
        elif name not in a:
            parts.append(f"{name}={b[name]} added")
        elif a[name] != b[name]:
            parts.append(f"{name}={a[name]} -> {name}={b[name]}")
    return ", ".join(parts)
