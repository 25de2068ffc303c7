"""Generated sources: GLSL a generator gives as text, and where genspirv keeps it.

A template-driven backend renders its shaders (and the headers they share)
from templates of its own; its generator hands genspirv the rendered text
(``source_text`` on a variant, ``files()`` for headers) instead of writing
it into the working tree. This module holds what the rest of the build
needs to know about those files:

- ``GeneratedFile``: a file's path as every key, message and manifest names
  it (``.genspirv/generated/<path>``, under ``GENERATED_DIR``), its text, and
  the files the generator says it was rendered from (``templates``);
- ``provenance`` / ``compiled_deps``: a variant's ``depends`` as the manifest
  lists it (what it compiled, then the templates behind its generated files
  and the generator) and back (what its content key hashes: the generated
  text itself, never the templates, so a template edit that changes no text
  recompiles nothing);
- ``write_generated(files, folder)``: the files on disk for a compile, in
  ``.genspirv/generated/`` for a build (under its lock) or a temporary folder
  for ``check``; a file the generator no longer gives is deleted, so no
  stale header can be found by an ``#include``.

The working tree is never written: ``.genspirv/`` is genspirv's own
(docs/GUIDE.md, "Template-driven backends").
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Optional, Sequence

from .fsutil import atomic_write

GENERATED_DIR = ".genspirv/generated"     # root-relative; on the include path when there are files


@dataclass(frozen=True)
class GeneratedFile:
    path: str                        # root-relative: GENERATED_DIR/<the generator's path>
    text: str
    templates: tuple[str, ...] = ()  # root-relative files the generator says it rendered it from

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


def generated_path(name: str) -> str:
    """The root-relative path of the generated file the generator calls ``name``."""
    return f"{GENERATED_DIR}/{name}"


def is_generated(path: str) -> bool:
    return PurePosixPath(path).is_relative_to(GENERATED_DIR)


def provenance(deps: Sequence[str], files: Mapping[str, GeneratedFile], generator: Optional[str]) -> tuple[str, ...]:
    """``depends`` as the manifest lists it: the files compiled (``deps``), then, when some are
    generated, the templates they came from and the generator file, sorted (what a build
    system watches: the generated files themselves live only under ``.genspirv/``)."""
    generated = [files[d] for d in deps if d in files]
    if not generated:
        return tuple(deps)
    extra = {t for f in generated for t in f.templates} | ({generator} if generator else set())
    return tuple(deps) + tuple(sorted(extra - set(deps)))


def compiled_deps(depends: Sequence[str], files: Mapping[str, GeneratedFile], generator: Optional[str],
                  glsl_dir: str) -> tuple[str, ...]:
    """The files a variant compiled, from the manifest's ``depends``: ``provenance`` undone.

    A template under ``glsl_dir`` stays (it might also be an include); a wrong guess only
    makes a fresh clone recompile that variant, as its key then differs."""
    generated = [files[d] for d in depends if d in files]
    if not generated:
        return tuple(depends)
    extra = {t for f in generated for t in f.templates} | ({generator} if generator else set())
    return tuple(d for d in depends if d not in extra or PurePosixPath(d).is_relative_to(glsl_dir))


def write_generated(files: Iterable[GeneratedFile], folder: Path) -> None:
    """Put ``files`` in ``folder`` (the place of ``GENERATED_DIR``): a file whose bytes are
    already there is left alone; anything else in the folder is deleted."""
    wanted = {}
    for f in files:
        wanted[folder / PurePosixPath(f.path).relative_to(GENERATED_DIR)] = f.data
    for path, data in wanted.items():
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                continue
        atomic_write(path, data, durable=False)     # regenerated from the config on any loss
    if not folder.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False):
        here = Path(dirpath)
        for name in filenames:
            if here / name not in wanted:
                (here / name).unlink()
        if here != folder and not any(here.iterdir()):
            here.rmdir()
