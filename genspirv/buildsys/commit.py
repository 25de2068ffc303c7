"""Commit: a build's outputs put in place all or none, its state saved, and what it clears away.

Takes the outputs a build rendered (``{path relative to the root: bytes}``),
the blobs it staged as their compiles finished and the records it keeps;
writes every output that changed to a temp file beside its target, then
renames them into place (blobs first, the manifest last) with signals held
back, deletes the orphan blobs and folds the journal into the state file
(``genspirv.buildsys.state``). A failure before the renames changes no committed
file. An OSError becomes one ``OutputError`` line naming the file.

What it may delete is only ever genspirv's own (docs/SECURITY.md): a blob in
``spirv_dir`` that no variant builds is an *orphan*, removed, when a manifest
or state of genspirv's listed it (``spare_blobs``); any other such file is a
*stray*, reported and left where it is; the temp files of an interrupted write
(named as only ``fsutil.StagedFiles`` names them) and its compile folders under
``.genspirv/`` (``stale_temp_files``). Check reports both kinds as a build
would treat them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Mapping, Optional, Sequence, TypeVar

from .. import statedir
from ..errors import OutputError
from ..fsutil import StagedFiles, read_regular, signals_deferred
from ..project.config import Config
from .keys import OutputsRecord, Record
from .state import RecordedInputs, clear_journal, stage_state
from .statlog import RACY_S, StatLog

T = TypeVar("T")
# Threads that keep, stage and render finished compiles, and stage and hash the other outputs at
# the commit (mostly waiting on fsync, or in sha256, outside the interpreter).
WRITERS = 4

if TYPE_CHECKING:
    from .variant_compile import Compiled

Log = Optional[Callable[[str], None]]


def output_error(exc: OSError) -> OutputError:
    where = exc.filename or "an output"
    if exc.errno == errno.ENOSPC:
        return OutputError(f"{where}: cannot write: {exc.strerror or 'No space left on device'}: "
                           "the disk is full; free some space and build again")
    return OutputError(f"{where}: cannot write: {exc.strerror or exc}")


# -- what spirv_dir holds besides the variants' blobs ------------------------------------


@dataclass(frozen=True)
class SpareBlobs:
    """``*.spv`` files in spirv_dir that belong to no variant (or to an unavailable one)."""

    orphans: tuple[str, ...]        # genspirv's own: a manifest or state of its listed them
    strays: tuple[str, ...]         # nobody told genspirv of them: never deleted
    unavailable: frozenset[str] = frozenset()   # the unavailable variants' names, for the reasons

    def __bool__(self) -> bool:
        return bool(self.orphans or self.strays)

    def reason(self, rel: str) -> str:
        """Why an orphan blob goes: its variant is unavailable, or there is none."""
        name = Path(rel).stem
        return f"variant {name} is unavailable" if name in self.unavailable else f"no variant {name} any more"


STRAY_NOTE = "not genspirv's (no manifest or state of genspirv's lists it), so left in place: " \
             "delete it or move it out of {folder}"


def spare_blobs(config: Config, unavailable: Collection[str], owned: Callable[[], Collection[str]]) -> SpareBlobs:
    """The ``*.spv`` files in spirv_dir no available variant builds (relative to the root), each an
    orphan when ``owned()`` (the blob paths genspirv's manifest or state listed; asked only when
    there is such a file) has it, else a stray."""
    known = {f"{v.name}.spv" for v in config.variants if v.name not in unavailable}
    try:
        # scandir: the type comes with the listing, no stat() per blob (a no-op lists 2,000).
        with os.scandir(config.path(config.spirv_dir)) as entries:
            spare = sorted(f"{config.spirv_dir}/{e.name}" for e in entries
                           if e.name.endswith(".spv") and not e.name.startswith(".") and e.name not in known
                           and (e.is_file() or e.is_symlink()))
    except (FileNotFoundError, NotADirectoryError):
        spare = []
    if not spare:
        return SpareBlobs((), (), frozenset(unavailable))
    ours = set(owned())
    return SpareBlobs(tuple(p for p in spare if p in ours), tuple(p for p in spare if p not in ours),
                      frozenset(unavailable))


def owned_blobs(config: Config, names: Collection[str], listed: Collection[str]) -> set[str]:
    """The blob paths genspirv may delete: each ``listed`` one (a committed manifest's ``spirv``
    paths) and the blob of each variant ``names`` (in genspirv's state or manifest) would have."""
    return {*listed, *(f"{config.spirv_dir}/{name}.spv" for name in names)}


# -- what an interrupted build left --------------------------------------------------------

_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def stale_temp_files(config: Config) -> list[Path]:
    """Temp files of atomic writes a killed build left in the output folders.

    ``fsutil.StagedFiles`` names them ``.NAME.XXXXXXXX.tmp`` (tempfile's 8 random
    characters) next to NAME. Only a build holding the lock writes there, so
    under the lock every such file is garbage.
    """
    folders = {config.path(config.spirv_dir), config.path(config.manifest).parent, statedir.state_dir(config.root)}
    folders |= {config.path(g.output).parent for g in config.generate}
    found = []
    for folder in sorted(folders):
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if _TEMP_NAME.match(p.name) and p.is_file())
    return found


def remove_stale_temp_files(config: Config, log: Log = None) -> None:
    """Delete what interrupted builds left: temp files and compile folders (call under the lock)."""
    for path in stale_temp_files(config):
        with contextlib.suppress(OSError):
            path.unlink()
            if log:
                log(f"removed {path.relative_to(config.root).as_posix()} (left by an interrupted build)")
    for folder in statedir.work_dirs(config.root):
        shutil.rmtree(folder, ignore_errors=True)


# -- the commit ------------------------------------------------------------------------------


def save_state(root: Path, records: Mapping[str, Record], outputs: Optional[OutputsRecord],
               recorded: RecordedInputs, stats: Optional[StatLog] = None, settings: Optional[str] = None) -> None:
    with StagedFiles() as staged:
        try:
            stage_state(root, staged, records, outputs, recorded, stats, settings)
            staged.commit()
        except OSError as exc:
            raise output_error(exc) from None
    clear_journal(root)


def holds(path: Path, data: bytes) -> bool:
    """The regular file at ``path`` holds ``data`` (read no further than its length and one byte:
    a FIFO, a device or a larger file there does not)."""
    try:
        return read_regular(path, len(data)) == data
    except OSError:
        return False


def stage_blob(config: Config, staged: StagedFiles, compiled: Compiled) -> Optional[bool]:
    """Stage a blob just compiled unless its committed file holds these bytes; True: staged,
    False: the same, None: it cannot be staged now (``commit`` tries again and says why,
    after every compile has finished and waits in the cache)."""
    path = config.path(config.blob_relpath(compiled.variant))
    if holds(path, compiled.blob):
        return False
    try:
        staged.stage(path, compiled.blob)
    except OSError:
        return None
    return True


def commit(config: Config, outputs: Mapping[str, bytes], records: Mapping[str, Record],
           outputs_record: OutputsRecord, recorded: RecordedInputs, log: Log, staged: StagedFiles,
           decided: Mapping[str, bool], spare: SpareBlobs, stats: Optional[StatLog] = None,
           settings: Optional[str] = None) -> list[str]:
    """Write every output that changed, all or none; then delete the orphan blobs and fold the
    journal into the state. ``staged`` holds the blobs staged as their compiles finished
    (``decided``: each one's path, staged or found the same). Returns the paths written,
    relative to the root."""
    written = [rel for rel in outputs if decided.get(rel)]
    rest = [rel for rel in outputs if rel not in decided]  # generated files, the manifest last

    def stage(rel: str) -> bool:
        path = config.path(rel)
        if holds(path, outputs[rel]):
            return False
        staged.stage(path, outputs[rel])
        return True
    with staged:
        try:
            # Side by side (each mostly waits on its fsync), but the manifest after every other
            # file: the commit renames them in the order staged.
            changed = dict(zip(rest[:-1], each(stage, rest[:-1])))
            if rest:
                changed[rest[-1]] = stage(rest[-1])
            written += [rel for rel in rest if changed[rel]]
            stage_state(config.root, staged, records, outputs_record, recorded, stats, settings)
        except OSError as exc:
            raise output_error(exc) from None      # the with-block removes every temp file
        with signals_deferred():
            try:
                staged.commit()
                for rel in spare.orphans:
                    config.path(rel).unlink()
            except OSError as exc:
                raise output_error(exc) from None
            clear_journal(config.root)
    if log:
        for rel in spare.orphans:
            log(f"removed {rel} ({spare.reason(rel)})")
    return written


def log_written(stats: StatLog, written: Collection[str]) -> None:
    """Hash the outputs just written into the stat log once their timestamps are no longer racy
    (``statlog.RACY_S`` later), and save it: the no-op after a build then reads none of them.
    What is logged is read back from disk, as the next build would read it; a file whose
    timestamps are coarse stays racy and is read next time. The log is only a cache: a failure
    to save it costs the next build its hashing, no more."""
    if not written or stats.path is None:
        return
    time.sleep(RACY_S)
    for rel in written:     # one thread: threads measured no quicker here (2 cores)
        stats.sha256(rel)
    if stats.changed:
        with StagedFiles() as staged, contextlib.suppress(OSError):
            staged.stage(stats.path, stats.data(), durable=False)
            staged.commit()


def each(fn: Callable[[str], T], items: Sequence[str]) -> list[T]:
    """``fn`` of each item, in order, on ``WRITERS`` threads: file writes, which leave the
    interpreter while the disk works (the 205 outputs of 2,000 variants staged in 0.25 s instead
    of 0.36 s on 2 cores)."""
    if len(items) < 2:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(WRITERS, len(items)), thread_name_prefix="genspirv-commit") as pool:
        return list(pool.map(fn, items))


def missing_folders(folder: Path) -> list[Path]:
    """``folder`` and each of its parents that does not exist yet, deepest first: what staging
    a file in it creates, and what a build that fails removes again."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_empty(folders: list[Path]) -> None:
    """Remove each folder (deepest first) that is empty; a failed build leaves no new folder."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return      # not empty, or already gone: its parents stay too


@contextlib.contextmanager
def folders_removed_on_failure(folder: Path) -> Iterator[None]:
    """The folders that staging in ``folder`` creates are removed again, when empty, if the
    block raises (a failed build leaves no new ``spirv/``)."""
    made = missing_folders(folder)
    try:
        yield
    except BaseException:
        remove_empty(made)
        raise
