"""Check's compare step: what the build loop does in place of staging when it verifies.

``genspirv.buildsys.builder.check`` runs the build's own loop, forced, into a
temporary folder (no cache; nothing under the project written, not even the
generator's files; slang-glslang asked what it predefines afresh; of the
build's state only each variant's last compile time, so the longest compiles
start first). This module is the step that differs: ``Comparing.keep``
compares each blob with the committed one as its compile finishes (and
renders its manifest entry then), and ``Comparing.differences`` compares
every other output and names what lies in spirv_dir besides the variants'
blobs, as a build would treat it. Gives a ``CheckReport`` listing every
``Difference``: a differing file (first differing byte and word, and a short
``spirv-dis`` or text diff; for a blob, its cause and the file to blame: its
inputs changed since the committed build, naming the file when this clone's
``.genspirv/`` recorded the inputs behind the manifest's key, or the blob was
edited by hand), a missing file, an orphan blob (genspirv's own: a
build removes it), a stray one (not genspirv's: left where it is, by build
and check alike), a temp file an interrupted write left.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from typing import Mapping, Optional

from .. import statedir
from ..errors import ToolchainError
from ..fsutil import RefusedRead, read_regular
from ..project.config import Config
from ..statedir import Kept
from ..toolchain.spirv_tools import disassemble
from ..toolchain.tools import Tool, find_tool
from .commit import STRAY_NOTE, SpareBlobs, holds, stale_temp_files
from .keys import Record, sha256_hex
from .plan import why_stale
from .state import RecordedInputs, committed_manifest
from .statlog import StatLog
from .render import entry_text
from .variant_compile import Compiled

DIFF_LINES = 10


class Kind(str, enum.Enum):
    """What is wrong with a committed file (a str: the results' JSON and its readers take the value)."""

    DIFFERS = "differs"
    MISSING = "missing"
    ORPHAN = "orphan"
    STRAY = "stray"
    LEFTOVER = "leftover"


@dataclass(frozen=True)
class Difference:
    kind: Kind
    path: str           # posix, relative to the root
    variant: Optional[str]
    detail: str         # first differing offset and a short diff, or why
    cause: str = ""     # a differing blob: its inputs changed since the committed build, or a hand edit
    blame: Optional[str] = None     # the file whose edit made it stale, where CI annotates it (None: path)

    def __str__(self) -> str:
        what = f"{self.path} ({self.variant})" if self.variant else self.path
        head = {Kind.DIFFERS: f"{what}: differs from a fresh build",
                Kind.MISSING: f"{what}: missing",
                Kind.ORPHAN: f"{what}: orphan blob, no variant builds it",
                Kind.STRAY: f"{what}: stray blob, no variant builds it",
                Kind.LEFTOVER: f"{what}: leftover"}[self.kind]
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


class Comparing:
    """Check's step of the loop: each finished compile compared with its committed blob and its
    manifest entry rendered (``keep``); at the end every output compared (``differences``)."""

    def __init__(self, config: Config):
        self.config = config
        self.same: dict[str, bool] = {}      # blob path -> the committed file holds the fresh bytes
        self.texts: dict = {}                # name -> its manifest entry and text (render.entry_text)
        self.records: dict[str, Record] = {}     # name -> its fresh record: a differing blob's cause
        self.sources: dict[str, str] = {}

    def keep(self, name: str, record: Record, result: Optional[Compiled], fetched: bool = False) -> None:
        if result is not None:
            self.records[name], self.sources[name] = record, result.variant.source
            self.same[self.config.blob_relpath(result.variant)] = self._committed_equals(result)
            self.texts[name] = entry_text(self.config, result, record.key)

    def _committed_equals(self, compiled: Compiled) -> bool:
        """The committed blob of a variant just compiled holds its bytes (False: differs or unreadable)."""
        return holds(self.config.path(self.config.blob_relpath(compiled.variant)), compiled.blob)

    def differences(self, expected: Mapping[str, bytes], blobs: Mapping[str, str],
                    spare: SpareBlobs) -> CheckReport:
        """Every committed output against ``expected`` (``blobs``: blob path -> variant name)."""
        config = self.config
        try:
            spirv_dis: Optional[Tool] = find_tool("spirv-dis")
        except ToolchainError:   # the diff is a courtesy; the verdict does not need it
            spirv_dis = None
        differences = []
        made = None         # the committed manifest's records, read once a blob differs
        recorded = RecordedInputs(statedir.path(config.root, Kept.INPUTS))
        for rel, fresh in expected.items():
            variant = blobs.get(rel)
            if self.same.get(rel):
                continue
            try:
                # No further than the fresh file's length and a byte: a FIFO, a device or a
                # larger file there is named as it is, never read without end.
                committed = read_regular(config.path(rel), len(fresh))
            except FileNotFoundError:
                differences.append(Difference(Kind.MISSING, rel, variant, "run `genspirv build` and commit it"))
                continue
            except RefusedRead as exc:
                differences.append(Difference(Kind.DIFFERS, rel, variant, f"{exc.strerror}; `genspirv build` "
                                              "replaces it"))
                continue
            except OSError as exc:
                differences.append(Difference(Kind.MISSING, rel, variant, f"cannot read: {exc.strerror}"))
                continue
            if committed == fresh:
                continue
            if variant:
                made = made if made is not None else committed_manifest(config, StatLog(config.root, None)).records
                cause, blame = _blob_cause(rel, variant, self.sources[variant], committed, self.records[variant],
                                           made.get(variant), recorded)
                detail = _describe_blob(spirv_dis, rel, variant, committed, fresh)
                differences.append(Difference(Kind.DIFFERS, rel, variant, detail, cause, blame))
                continue
            differences.append(Difference(Kind.DIFFERS, rel, None, _describe_text(rel, committed, fresh)))
        for rel in spare.orphans:
            differences.append(Difference(Kind.ORPHAN, rel, None, f"{spare.reason(rel)}; `genspirv build` removes it"))
        for rel in spare.strays:
            differences.append(Difference(Kind.STRAY, rel, None, STRAY_NOTE.format(folder=config.spirv_dir + "/")))
        for path in stale_temp_files(config):
            rel = path.relative_to(config.root).as_posix()
            differences.append(Difference(Kind.LEFTOVER, rel, None, "a temp file an interrupted build left; "
                                          "`genspirv build` removes it"))
        return CheckReport(checked=tuple(expected), differences=tuple(differences))
