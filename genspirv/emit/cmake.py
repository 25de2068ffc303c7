"""What genspirv's CMake package (genspirv/cmake/) asks of genspirv.

- ``cmake_dir()``: the package's folder (``genspirv cmake-dir`` prints it);
  ``include_dir()``: the folder holding ``genspirv/hazards.h`` and
  ``genspirv/vulkan.h``, inside it.
- ``depfile_inputs(config)`` / ``write_depfile(config, path, target)``: every
  file a build read, in Make syntax, for CMake's ``DEPFILE`` (and Ninja's):
  the union of the manifest entries' ``depends`` (the sources and their
  includes, and the templates behind generated ones, which are left out
  themselves; before manifests carried them, every file under ``glsl_dir``),
  the folders under ``glsl_dir`` (so a new source counts), ``pyproject.toml``,
  the generator file, the project's templates and every preamble.
  ``genspirv build --depfile FILE`` writes it after a successful build.
- ``python -m genspirv.emit.cmake table --root DIR``: the C table's header
  and source (absolute, one a line), or an error naming what is missing; the
  package runs it at configure time, which also proves genspirv importable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ..errors import ConfigError, GenspirvError, ManifestError, OutputError
from ..fsutil import write_report
from ..project.generated import is_generated

if TYPE_CHECKING:       # the command line adds the depfile options before the config's module loads
    from ..project.config import Config

PACKAGE = Path(__file__).resolve().parent.parent


def cmake_dir() -> Path:
    return PACKAGE / "cmake"


def include_dir() -> Path:
    """Inside the package's folder: a copy of that folder alone is a whole package (vendored, for
    -DGENSPIRV_COMPILE_SHADERS=OFF on a machine without genspirv)."""
    return cmake_dir() / "include"


# -- depfile ------------------------------------------------------------------


def _manifest_depends(config: Config) -> Optional[set[str]]:
    """The manifest's recorded ``depends`` (posix, relative to the root), or None where it has none."""
    try:
        from ..manifest import read_manifest_json
        doc = read_manifest_json(config.path(config.manifest))
    except ManifestError:
        return None
    shaders = doc.get("shaders") if isinstance(doc, dict) else None
    if not isinstance(shaders, list) or not shaders or \
            not all(isinstance(e, dict) and isinstance(e.get("depends"), list) for e in shaders):
        return None
    return {d for e in shaders for d in e["depends"] if isinstance(d, str)}


def depfile_inputs(config: Config) -> list[Path]:
    """Every file (and source folder) whose change must rerun ``genspirv build``, sorted, absolute."""
    glsl = config.path(config.glsl_dir)
    # A generator that gives every source as text needs no glsl_dir.
    inputs: set[Path] = {glsl, *(p for p in glsl.rglob("*") if p.is_dir())} if glsl.is_dir() else set()
    depends = _manifest_depends(config)
    if depends is None:
        inputs |= {p for p in glsl.rglob("*") if p.is_file()}
    else:
        # Generated files live in .genspirv/ only; depends lists the templates behind them.
        inputs |= {config.path(d) for d in depends if not is_generated(d)}
    inputs.add(config.root / "pyproject.toml")
    generator = getattr(config, "generator", None)
    if generator:
        inputs.add(config.path(str(generator)))
    inputs |= {config.path(g.template) for g in config.generate if getattr(g, "template", None)}
    inputs |= {config.path(v.preamble) for v in config.variants if v.preamble}     # may lie outside glsl_dir
    return sorted(inputs)


def make_escape(path: str) -> str:
    """``path`` as one Make/Ninja depfile word: spaces and '#' backslashed, '$' doubled."""
    if any(ch in path for ch in "\n\r\\"):
        raise OutputError(f"{path!r}: a depfile cannot name a path holding a newline or a backslash")
    return path.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def depfile_text(target: str, inputs: Iterable[Path]) -> str:
    lines = [f"{make_escape(target)}:"] + [f" {make_escape(p.as_posix())}" for p in inputs]
    return " \\\n".join(lines) + "\n"


def write_depfile(config: Config, path: Path, target: Optional[str] = None) -> None:
    """Write the depfile for ``target`` (default: ``path`` without its ``.d``) atomically."""
    path = Path(path).absolute()
    if target is None:
        target = str(path.with_suffix("")) if path.suffix == ".d" else str(path) + ".stamp"
    text = depfile_text(str(Path(target).absolute()), depfile_inputs(config))
    # Whole or not at all: a half-written depfile would drop dependencies.
    try:
        write_report(path, text.encode("utf-8"))
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the depfile: {exc.strerror}") from None


def add_build_arguments(p: argparse.ArgumentParser) -> None:
    """``genspirv build``'s depfile options."""
    p.add_argument("--depfile", metavar="FILE", default=None,
                   help="after the build, write the files it read to FILE (Make syntax, for CMake/Ninja)")
    p.add_argument("--depfile-target", metavar="PATH", default=None,
                   help="the depfile's target (default: FILE without its .d suffix)")


def write_depfile_from_args(config: Config, args: argparse.Namespace) -> None:
    if getattr(args, "depfile", None):
        write_depfile(config, Path(args.depfile), args.depfile_target)


# -- configure-time query ------------------------------------------------------


def c_table(config: Config) -> tuple[Path, Path]:
    """The header and source of the project's ``target = "c"`` generate entry."""
    tables = [g for g in config.generate if g.target == "c"]
    if not tables:
        raise ConfigError(f"{config.root / 'pyproject.toml'}: genspirv_add_shaders needs a C table: add "
                          'generate = [ { target = "c", output = "manifests/shaders" } ] to [tool.genspirv]')
    output = config.path(tables[0].output)
    return output.with_name(output.name + ".h"), output.with_name(output.name + ".c")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..project.config import load_config
    parser = argparse.ArgumentParser(prog="python -m genspirv.emit.cmake")
    parser.add_argument("query", choices=["table"])
    parser.add_argument("--root", required=True)
    args = parser.parse_args(argv)
    try:
        header, source = c_table(load_config(Path(args.root)))
    except GenspirvError as exc:
        print(f"genspirv: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(header.as_posix())
    print(source.as_posix())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
