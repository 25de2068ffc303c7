"""What a path is to a build: an input, an output, a blob, or a file in a folder it reads or owns.

Takes a loaded ``Config`` and a path the user names (a report of the command
line: ``--depfile``, ``--json``); gives, in words, what that file is to the
build, or None (``build_file``). Judged by the file the path names, not its
spelling. The config itself refuses outputs that would land on such files
when it is read (``config.check_collisions``).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Optional

from .config import OWNED_FOLDERS, Config, input_files, output_files, owned_folder, resolved_parts


def build_file(config: Config, path: Path | str) -> Optional[str]:
    """What the file ``path`` (relative to the working folder) is to the build, or None: an input,
    an output, a blob, or a file in glsl_dir, spirv_dir (a ``.spv``), ``.git/`` or ``.genspirv/``.
    Judged by the file it names, not its spelling: symlinks resolved, and what exists by device and
    inode too (a hard link, or another case of the name on a case-blind disk)."""
    target = Path(os.path.abspath(path))
    parts = resolved_parts(config, target)
    rel = PurePosixPath(*parts) if parts and parts[0] != target.anchor else None
    files = {**input_files(config),
             **{p: what if p == config.manifest else f"the output {what}" for p, _, what in output_files(config)},
             **{config.blob_relpath(v): f"the blob of variant {v.name}" for v in config.variants}}
    if rel is not None and rel.as_posix() in files:
        return files[rel.as_posix()]
    folders = {**{name: f"{name}/, {what}" for name, what in OWNED_FOLDERS.items()},
               config.glsl_dir: f"{config.glsl_dir}/, which holds the sources and includes the build reads"}
    owned = owned_folder(config, parts)
    if owned is not None:
        return f"a file in {folders[owned]}"
    if target.suffix.casefold() == ".spv":     # a blob no variant has: a build would take it for a stray one
        folders[config.spirv_dir] = f"{config.spirv_dir}/, the blobs' folder"
    for folder, what in folders.items():
        if (rel is not None and rel.is_relative_to(folder)) or \
                any(_same_file(config.path(folder), parent) for parent in target.parents):
            return f"a file in {what}"
    if not target.exists():
        return None
    return next((what for f, what in files.items() if _same_file(config.path(f), target)), None)


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` both exist and are one file or folder (device and inode)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
