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
  and source (absolute, one a line), or an error naming what is missing.
- ``python -m genspirv.emit.cmake outputs --root DIR``: every file the
  project's ``generate`` entries write (the C table's two, a template's one),
  one a line as ``<blobs> <absolute path>``; two with one file name are
  refused (the package compiles copies of them side by side). The package runs
  it at configure time, which also proves genspirv importable.
- ``python -m genspirv.emit.cmake probe --dest DIR``: a C and a C++ file that
  put a blob into the program as ``blobs = "files"`` does (``cblobs``), for the
  package's ``try_compile`` of ``.incbin`` and of ``#embed``.
- ``python -m genspirv.emit.cmake stage --root DIR --dest DIR --files-as
  embed|incbin|arrays``: the package's copies of every generated file, each
  written only when its bytes change: an arrays file as committed, a
  ``blobs = "files"`` one rendered for the mechanism the compiler has, with
  absolute blob paths (or as arrays, where it has neither: MSVC).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ..errors import ConfigError, GenspirvError, ManifestError, OutputError
from ..fsutil import atomic_write, write_report
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


def generated_files(config: Config) -> list[tuple[str, str, object]]:
    """(root-relative path, blobs mode, generate entry) of every file the entries write."""
    out = []
    for g in config.generate:
        names = [f"{g.output}.h", f"{g.output}.c"] if g.template is None else [g.output]
        out += [(rel, g.blobs.value, g) for rel in names]
    return out


def _flat_names(config: Config) -> None:
    """The package compiles copies side by side: two files of one name would overwrite."""
    seen: dict[str, str] = {}
    for rel, _, _ in generated_files(config):
        name = PurePosixPath(rel).name
        if name in seen:
            raise ConfigError(f"{config.root / 'pyproject.toml'}: generate writes {seen[name]} and {rel}, which "
                              "have one file name; genspirv_add_shaders compiles copies of them side by side: "
                              "give them different names")
        seen[name] = rel


def stage(config: Config, dest: Path, files_as: str) -> list[Path]:
    """Write the package's copy of every generated file into ``dest`` (see the module
    docstring), each only when its bytes change; returns the copies."""
    from ..manifest import load_manifest
    from ..project.config import BlobMode
    from .ctable import render_c
    from .project import render_template
    from .render_input import prepare
    if files_as not in FILES_AS:
        raise ConfigError(f"--files-as {files_as!r}: not one of {', '.join(FILES_AS)}")
    _flat_names(config)
    source = None
    written = []
    for rel, mode, g in generated_files(config):
        if mode == "arrays":
            try:
                data = config.path(rel).read_bytes()
            except OSError as exc:
                raise OutputError(f"{config.path(rel)}: cannot read it: {exc.strerror}; run genspirv build") from None
        else:
            if source is None:
                source = prepare(load_manifest(config.path(config.manifest), root=config.root))
            mode = BlobMode.ARRAYS if files_as == "arrays" else BlobMode.FILES
            root = None if mode is BlobMode.ARRAYS else config.root.as_posix()
            data = render_template(source, g.template, g.output, mode, root) if g.template is not None \
                else render_c(source, g.output, mode, root)[rel]
        copy = dest / PurePosixPath(rel).name
        try:
            if not copy.is_file() or copy.read_bytes() != data:
                copy.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(copy, data)
        except OSError as exc:
            raise OutputError(f"{copy}: cannot write it: {exc.strerror}") from None
        written.append(copy)
    return written


FILES_AS = ("incbin", "embed", "arrays")

PROBE_MAIN = """
int main(void) { return genspirv_probe_data[0] == 'g' ? 0 : 1; }
"""


def write_probes(dest: Path) -> list[Path]:
    """probe.c and probe.cpp: one blob (``probe.bin``, 8 bytes) put into a program as
    ``blobs = "files"`` does; whether one compiles and links with -DGENSPIRV_BLOBS_EMBED
    or -DGENSPIRV_BLOBS_INCBIN is what the compiler has."""
    from .cblobs import byte_array, prelude
    dest.mkdir(parents=True, exist_ok=True)
    blob = dest / "probe.bin"
    blob.write_bytes(b"genspirv")
    path = blob.as_posix()
    text = prelude(path) + byte_array("genspirv_probe_data", path, 8, "0" * 64) + PROBE_MAIN
    files = [dest / "probe.c", dest / "probe.cpp"]
    for f in files:
        f.write_text(text)
    return files


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
    parser.add_argument("query", choices=["table", "outputs", "probe", "stage"])
    parser.add_argument("--root")
    parser.add_argument("--dest")
    parser.add_argument("--files-as", choices=FILES_AS, default="incbin")
    args = parser.parse_args(argv)
    if args.query in ("table", "outputs", "stage") and not args.root:
        parser.error(f"{args.query} needs --root")
    if args.query in ("probe", "stage") and not args.dest:
        parser.error(f"{args.query} needs --dest")
    try:
        if args.query == "probe":
            lines = [p.as_posix() for p in write_probes(Path(args.dest))]
        elif args.query == "stage":
            stage(load_config(Path(args.root)), Path(args.dest), args.files_as)
            lines = []
        elif args.query == "outputs":
            config = load_config(Path(args.root))
            _flat_names(config)
            lines = [f"{mode} {config.path(rel).as_posix()}" for rel, mode, _ in generated_files(config)]
            if not lines:
                raise ConfigError(f"{config.root / 'pyproject.toml'}: genspirv_add_shaders needs generated code: "
                                  'add generate = [ { target = "c", output = "manifests/shaders" } ] (or a '
                                  "template of the project's own) to [tool.genspirv]")
        else:
            lines = [p.as_posix() for p in c_table(load_config(Path(args.root)))]
    except GenspirvError as exc:
        print(f"genspirv: error: {exc}", file=sys.stderr)
        return exc.exit_code
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
