"""Commit: a build's outputs put in place all or none, and its state saved.

Takes the outputs a build rendered (``{path relative to the root: bytes}``),
the blobs it staged as their compiles finished and the records it keeps;
writes every output that changed to a temp file beside its target, then
renames them into place (blobs first, the manifest last) with signals held
back, deletes the orphan blobs and folds the journal into the state file
(``genspirv.buildsys.state``). A failure before the renames changes no committed
file. An OSError becomes one ``OutputError`` line naming the file.
"""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

from .state import OutputsRecord, Record, RecordedInputs, clear_journal, stage_state
from .compile import Compiled
from ..project.config import Config
from ..errors import OutputError
from ..fsutil import StagedFiles, signals_deferred
from .outputs import orphan_blobs, orphan_reason, unavailable_names
from .statlog import StatLog

Log = Optional[Callable[[str], None]]


def output_error(exc: OSError) -> OutputError:
    where = exc.filename or "an output"
    if exc.errno == errno.ENOSPC:
        return OutputError(f"{where}: cannot write: {exc.strerror or 'No space left on device'}: "
                           "the disk is full; free some space and build again")
    return OutputError(f"{where}: cannot write: {exc.strerror or exc}")


def save_state(config: Config, records: Mapping[str, Record], outputs: Optional[OutputsRecord],
                recorded: RecordedInputs, stats: Optional[StatLog] = None) -> None:
    with StagedFiles() as staged:
        try:
            stage_state(config, staged, records, outputs, recorded, stats)
            staged.commit()
        except OSError as exc:
            raise output_error(exc) from None
    clear_journal(config)


def stage_blob(config: Config, staged: StagedFiles, compiled: Compiled) -> Optional[bool]:
    """Stage a blob just compiled unless its committed file holds these bytes; True: staged,
    False: the same, None: it cannot be staged now (``commit`` tries again and says why,
    after every compile has finished and waits in the cache)."""
    path = config.path(config.blob_relpath(compiled.variant))
    with contextlib.suppress(OSError):
        if path.read_bytes() == compiled.blob:
            return False
    try:
        staged.stage(path, compiled.blob)
    except OSError:
        return None
    return True


def commit(config: Config, outputs: Mapping[str, bytes], records: Mapping[str, Record],
            outputs_record: OutputsRecord, recorded: RecordedInputs, log: Log, staged: StagedFiles,
            decided: Mapping[str, bool], stats: Optional[StatLog] = None) -> tuple[list[str], list[str]]:
    """Write every output that changed, all or none; then delete the orphan blobs and fold the
    journal into the state. ``staged`` holds the blobs staged as their compiles finished
    (``decided``: each one's path, staged or found the same). Returns (written, removed),
    paths relative to the root."""
    written = []
    with staged:
        try:
            for rel, data in outputs.items():      # blobs, generated files, the manifest last
                if rel in decided:
                    if decided[rel]:
                        written.append(rel)
                    continue
                path = config.path(rel)
                with contextlib.suppress(OSError):
                    if path.read_bytes() == data:
                        continue
                staged.stage(path, data)
                written.append(rel)
            stage_state(config, staged, records, outputs_record, recorded, stats)
        except OSError as exc:
            raise output_error(exc) from None      # the with-block removes every temp file
        gone = unavailable_names(records)
        removed = orphan_blobs(config, gone)
        with signals_deferred():
            try:
                staged.commit()
                for rel in removed:
                    config.path(rel).unlink()
            except OSError as exc:
                raise output_error(exc) from None
            clear_journal(config)
    if log:
        for rel in removed:
            log(f"removed {rel} ({orphan_reason(rel, gone)})")
    return written, removed


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
