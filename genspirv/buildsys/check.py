"""Check: are the committed blobs, manifest and generated files what the sources give?

Takes a ``Config``; runs the build's own plan, forced, into a temporary
directory with the build's compilers (no cache, nothing under the project
written, not even the generator's files, which go to the temporary directory
too; slang-glslang is asked what it predefines afresh; of the build's state
only each variant's last compile time, so the longest compiles start first): every
variant compiled, reflected, the manifest and any generated files rendered;
comparing each blob with the committed one as its compile finishes (and
rendering its manifest entry then), so what is left after the last compile
is the manifest's join and compare. Gives
a ``CheckReport`` listing every ``Difference``: a differing file (first
differing byte and word, and a short ``spirv-dis`` or text diff; for a blob,
its cause and the file to blame: its inputs changed since the committed build,
naming the file when this clone's ``.genspirv/`` recorded the inputs behind
the manifest's key, or the blob was edited by hand), a missing file, an
orphan blob, a temp file an interrupted write left.
"""

from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .run import ProjectLookups, run_plan, unavailable_entries
from .state import FileHashes, Record, RecordedInputs, inputs_path, load_state, sha256_hex
from .committed import committed_manifest
from .compile import Log, job_count, raise_failures
from .compile_workers import early_workers
from ..toolchain.compiler import Compiler
from ..toolchain.chain import Compilers, compilers_for
from ..project.config import Config
from ..errors import ToolchainError
from ..project.generated import origin_note
from .outputs import entry_text, expected_outputs, orphan_blobs, orphan_reason, stale_temp_files, unavailable_names
from .plan import make_plan, why_stale
from ..toolchain.spirv_tools import disassemble
from ..toolchain.tools import Tool, find_tool

DIFF_LINES = 10


@dataclass(frozen=True)
class Difference:
    kind: str           # "differs", "missing", "orphan" or "leftover"
    path: str           # posix, relative to the root
    variant: Optional[str]
    detail: str         # first differing offset and a short diff, or why
    cause: str = ""     # a differing blob: its inputs changed since the committed build, or a hand edit
    blame: Optional[str] = None     # the file whose edit made it stale, where CI annotates it (None: path)

    def __str__(self) -> str:
        what = f"{self.path} ({self.variant})" if self.variant else self.path
        head = {"differs": f"{what}: differs from a fresh build",
                "missing": f"{what}: missing",
                "orphan": f"{what}: orphan blob, no variant builds it",
                "leftover": f"{what}: leftover"}[self.kind]
        head += f": {self.cause}" if self.cause else ""
        return head + (f"{'; ' if self.cause else ': '}{self.detail}" if self.detail else "")


@dataclass(frozen=True)
class CheckReport:
    checked: tuple[str, ...]            # every file compared
    differences: tuple[Difference, ...]

    @property
    def ok(self) -> bool:
        return not self.differences


def first_difference(a: bytes, b: bytes) -> int:
    """Offset of the first differing byte (the shorter length if one is a prefix of the other)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def short_diff(old: str, new: str, old_name: str, new_name: str, limit: int = DIFF_LINES) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name,
                                      n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _instructions(disassembly: str) -> str:
    """The instruction lines only: the '; Bound: N' header would differ after any change."""
    return "\n".join(line for line in disassembly.splitlines() if not line.startswith(";"))


def _describe_blob(spirv_dis: Optional[Tool], rel: str, name: str, committed: bytes, fresh: bytes) -> str:
    offset = first_difference(committed, fresh)
    text = (f"first difference at byte {offset} (word {offset // 4}); "
            f"committed {len(committed)} bytes, fresh {len(fresh)} bytes")
    if spirv_dis is not None:
        old = _instructions(disassemble(spirv_dis, committed, name)) or "(committed blob does not disassemble)"
        new = _instructions(disassemble(spirv_dis, fresh, name))
        diff = short_diff(old, new, f"committed/{rel}", f"fresh/{rel}")
        text += "\n" + (diff or "(same disassembly: the difference is in bytes spirv-dis does not show)")
    return text


def _describe_text(rel: str, committed: bytes, fresh: bytes) -> str:
    offset = first_difference(committed, fresh)
    line = committed[:offset].count(b"\n") + 1
    diff = short_diff(committed.decode("utf-8", "replace"), fresh.decode("utf-8", "replace"),
                      f"committed/{rel}", f"fresh/{rel}")
    return f"first difference at byte {offset} (line {line})\n{diff}"


def _blob_cause(rel: str, name: str, source: str, committed: bytes, fresh: Record, made: Optional[Record],
                recorded: RecordedInputs) -> tuple[str, str]:
    """Why the committed blob ``rel`` differs from a fresh build, and the file to blame: the one whose
    edit made it stale (its source where this clone cannot tell which), or the blob when it was edited.
    ``made``: the committed manifest's record of it (inputs key, sha256); ``recorded``: the inputs
    behind such keys that this clone's builds kept."""
    if made is None or made.key is None:
        return "the committed manifest records no inputs for it", source
    by_hand = sha256_hex(committed) != made.sha256
    if made.key != fresh.key:
        old, now = recorded.get(name, made.key), fresh.inputs
        also = "; nor is the blob the one the manifest records (edited by hand?)" if by_hand else ""
        if old is None or now is None:
            return ("its inputs changed since the committed build (its source, an include, a define, a flag or "
                    f"the compiler; this clone's .genspirv/ does not record which){also}"), source
        reason, what = why_stale(old, now)
        edited = [path for path, digest in now.files if dict(old.files).get(path, digest) != digest]
        return f"{reason.value} since the committed build ({what}){also}", edited[0] if edited else source
    if by_hand:
        return ("edited by hand (or left out of the commit that updated the manifest): its bytes are not the "
                "ones the manifest records, and its sources still give the manifest's inputs key"), rel
    return ("its sources give the manifest's inputs key and the blob is the one the manifest records, yet a "
            "fresh compile differs: the manifest's entry was edited with it, or the compile is not "
            "reproducible"), rel


def _committed_equals(config: Config, compiled) -> bool:
    """The committed blob of a variant just compiled holds its bytes (False: differs or unreadable)."""
    try:
        return config.path(config.blob_relpath(compiled.variant)).read_bytes() == compiled.blob
    except OSError:
        return False


def _last_seconds(config: Config) -> dict[str, Optional[float]]:
    """Each variant's last compile time, as the last build recorded it: only the order the compiles
    start in (longest first, so none starts last and leaves the other workers idle); nothing
    check compares comes from the build's state. None recorded (a fresh clone): the plan's order."""
    return {name: r.seconds for name, r in load_state(config).records.items()}


def check(config: Config, jobs: Optional[int] = None, log: Log = None, on_command=None,
          compiler: Optional[Compiler | Compilers] = None, verbose: bool = False) -> CheckReport:
    """Compare every committed output with a fresh build made in a temporary directory."""
    hashes = FileHashes.for_config(config)
    with compilers_for(config, compiler, jobs=jobs) as compilers, \
            early_workers(compilers, config.variants, job_count(jobs)) as started:
        versions = compilers.versions()
        # The build's plan, forced and with no cache: every variant compiles.
        plan = make_plan(config.variants, {}, ProjectLookups(config, versions, hashes), force=True)
        same: dict[str, bool] = {}      # blob path -> the committed file holds the fresh bytes
        texts: dict = {}

        def compare(name: str, record, result) -> None:
            if result is not None:
                same[config.blob_relpath(result.variant)] = _committed_equals(config, result)
                texts[name] = entry_text(config, result, record.key)

        with tempfile.TemporaryDirectory(prefix="genspirv-check-") as tmp:
            # The generator's files go to the temporary folder too: check writes nothing in the project.
            ran = run_plan(config, compilers, plan, Path(tmp), hashes, jobs=jobs, log=log, on_command=on_command,
                           generated_dir=Path(tmp) / "generated", keep=compare, seconds=_last_seconds(config),
                           started=started)
        facts = compilers.manifest_facts()
    if ran.failures:
        raise_failures(ran.failures, verbose=verbose, note=origin_note(config.generated_files, config.generator))
    compiled = [ran.compiled[v.name] for v in config.variants if v.name in ran.compiled]
    keys = {name: r.key for name, r in ran.records.items()}
    expected = expected_outputs(config, compiled, unavailable_entries(config, ran.records), keys,
                                versions.optimizer, facts, texts)
    blobs = {config.blob_relpath(c.variant): c.variant.name for c in compiled}
    sources = {c.variant.name: c.variant.source for c in compiled}
    made = None     # the committed manifest's records, read once a blob differs
    recorded = RecordedInputs(inputs_path(config))
    try:
        spirv_dis: Optional[Tool] = find_tool("spirv-dis")
    except ToolchainError:   # the diff is a courtesy; the verdict does not need it
        spirv_dis = None

    differences = []
    for rel, fresh in expected.items():
        variant = blobs.get(rel)
        if same.get(rel):
            continue
        try:
            committed = config.path(rel).read_bytes()
        except FileNotFoundError:
            differences.append(Difference("missing", rel, variant, "run `genspirv build` and commit it"))
            continue
        except OSError as exc:
            differences.append(Difference("missing", rel, variant, f"cannot read: {exc.strerror}"))
            continue
        if committed == fresh:
            continue
        if variant:
            made = made if made is not None else committed_manifest(config).records
            cause, blame = _blob_cause(rel, variant, sources[variant], committed, ran.records[variant],
                                       made.get(variant), recorded)
            detail = _describe_blob(spirv_dis, rel, variant, committed, fresh)
            differences.append(Difference("differs", rel, variant, detail, cause, blame))
            continue
        differences.append(Difference("differs", rel, None, _describe_text(rel, committed, fresh)))
    gone = unavailable_names(ran.records)
    for rel in orphan_blobs(config, gone):
        differences.append(Difference("orphan", rel, None, f"{orphan_reason(rel, gone)}; `genspirv build` removes it"))
    for path in stale_temp_files(config):
        rel = path.relative_to(config.root).as_posix()
        differences.append(Difference("leftover", rel, None, "a temp file an interrupted build left; "
                                      "`genspirv build` removes it"))
    return CheckReport(checked=tuple(expected), differences=tuple(differences))
