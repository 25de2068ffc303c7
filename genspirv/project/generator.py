"""Generator files: a project's own Python that lists variants, each checked for its shape.

Takes the path of a generator file (``[tool.genspirv] generator = "shaders/variants.py"``),
runs its ``variants()`` (and ``files()``, when it has one) and gives a
``GeneratorOutput``: ``GeneratorItem``s (known keys, a valid name, a source
that exists) and ``GeneratedFile``s. ``genspirv.project.config`` resolves each item
into a ``Variant`` (the variant's settings over its source's table over the
top level; flags accumulate).
Each variant is a mapping with ``name`` and ``source`` (relative to ``glsl_dir``)
and optionally ``defines``, ``flags``, ``target_env``, ``optimize``,
``validate``, ``optional``, ``preamble`` (relative to the project root), ``compiler``,
``meta``, ``lint``. A template-driven backend gives the text
instead of a file: with ``source_text``, ``source`` names the generated file
(kept under ``.genspirv/generated/``, ``genspirv.project.generated``) and ``template``
the file or files it was rendered from; ``files()`` returns more generated
files, headers most often, as mappings with ``path``, ``text`` and optionally
``template``; a variant's ``source`` may name one. An unknown key, a bad
value, a missing source or template, two texts for one generated file, or an
exception inside the generator is a ``ConfigError`` naming the generator
file and the variant or file.

The generator runs on every build and check, so it should be quick and pure:
it decides what is built, the sources and defines decide the bytes. It runs in
a child process (``genspirv.project.isolated``), stopped after
``GENSPIRV_GENERATOR_TIMEOUT`` seconds with one line naming the file and the
setting; what it returns comes back as plain data (``plain``).
"""

from __future__ import annotations

import importlib.util
import pickle
import sys
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from . import isolated
from .. import settings
from ..errors import ConfigError
from .generated import GeneratedFile, generated_path

GENERATOR_KEYS = {"name", "source", "defines", "flags", "target_env", "optimize", "validate", "optional", "preamble",
                  "compiler", "meta", "lint", "source_text", "template"}
FILE_KEYS = {"path", "text", "template"}


def _load(path: Path, rel: str):
    spec = importlib.util.spec_from_file_location(f"genspirv_generator_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"tool.genspirv.generator: {rel}: cannot load it as a Python file")
    module = importlib.util.module_from_spec(spec)
    # The generator may import helpers that sit beside it. No __pycache__ is written beside
    # them: a build leaves nothing in the working tree but its outputs.
    sys.path.insert(0, str(path.parent))
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise ConfigError(_failure(exc, path, rel, "while loading")) from None
    finally:
        sys.dont_write_bytecode = bytecode
        sys.path.remove(str(path.parent))
    return module


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _failure(exc: BaseException, path: Path, rel: str, when: str) -> str:
    """``gen.py:12: variants() failed: KeyError: 'x'``: one line at the generator's innermost frame.

    A SyntaxError points at its own line (no frame of the file ran); an error
    raised in a helper beside the generator names the helper's line too.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    line = next((f.lineno for f in reversed(frames) if Path(f.filename) == path), None)
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == path:
        line, what = exc.lineno, f"SyntaxError: {exc.msg}"
    elif isinstance(exc, SystemExit):
        what = f"it called sys.exit({exc.code!r})"
    else:
        what = _one_line(f"{type(exc).__name__}: {exc}")
    helper = ""
    if frames and Path(frames[-1].filename) != path and Path(frames[-1].filename).is_relative_to(path.parent):
        inner = Path(frames[-1].filename).relative_to(path.parent)
        helper = f" (in {PurePosixPath(rel).parent / inner.as_posix()}:{frames[-1].lineno})"
    return f"{rel}{f':{line}' if line else ''}: the generator failed {when}: {what}{helper}"


def generator_variants(root: Path, rel: str, stage: Callable[[str], None] = lambda _: None
                       ) -> tuple[list[Any], list[Any]]:
    """What the generator's ``variants()`` and ``files()`` returned, as lists (not yet checked);
    ``stage`` hears of each step as it starts."""
    path = root / rel
    if not path.is_file():
        raise ConfigError(f"tool.genspirv.generator: no such file {rel}")
    stage("while loading")
    module = _load(path, rel)
    if not callable(getattr(module, "variants", None)):
        raise ConfigError(f"{rel}: a generator must define variants() returning the variants")
    stage("in files()")
    files = _call(module, "files", path, rel) if hasattr(module, "files") else []
    stage("in variants()")
    return _call(module, "variants", path, rel), files


def run_generator(root: Path, rel: str) -> tuple[list[Any], list[Any]]:
    """``generator_variants`` in a child process, stopped after ``GENSPIRV_GENERATOR_TIMEOUT``
    seconds: a generator that never returns costs one line, not a hung build."""
    timeout = settings.get("GENSPIRV_GENERATOR_TIMEOUT")
    try:
        ok, value = isolated.call_in_child(_isolated, (root, rel), timeout)
    except isolated.Overran as exc:
        raise ConfigError(f"{rel}: the generator did not finish {exc.stage or 'while loading'} within "
                          f"{timeout:g} s and was stopped: make it quicker (it runs on every build and "
                          "check), or raise GENSPIRV_GENERATOR_TIMEOUT") from None
    except isolated.Died as exc:
        raise ConfigError(f"{rel}: the generator's process ended {exc.stage or 'while loading'} without "
                          f"giving its variants ({exc.how})") from None
    except isolated.Raised as exc:
        raise ConfigError(f"{rel}: the generator failed: {exc}") from None
    if not ok:
        raise ConfigError(value)
    return value


def _isolated(stage: Callable[[str], None], root: Path, rel: str) -> tuple[bool, Any]:
    """The child's side of ``run_generator`` (module-level: a fresh interpreter finds it by name)."""
    try:
        return True, plain(generator_variants(root, rel, stage))
    except ConfigError as exc:
        return False, str(exc)


class _Foreign:
    """What stands for a value of a class the generator defined (which cannot be sent back):
    its class's name and its repr, so the checks name it as they would the value itself."""

    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text

    def __reduce__(self):
        return _foreign, (type(self).__name__, self._text)


def _foreign(name: str, text: str) -> _Foreign:
    return type(name, (_Foreign,), {})(text)


_PLAIN = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """``value`` as data another process can read back: mappings as dicts, sequences as lists
    and tuples, a str or number subclass as its plain value, anything else that cannot be
    pickled as a stand-in of the same class name and repr."""
    kind = type(value)
    if kind in _PLAIN:                  # the common case first: what json.loads and literals give
        return value
    if kind is dict:
        return {plain(k): plain(v) for k, v in value.items()}
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value) if type(value) in (list, tuple) else list(map(plain, value))
    if isinstance(value, bool):
        return bool(value)
    for kind, exact in ((str, str.__str__), (int, int.__int__), (float, float.__float__)):
        if isinstance(value, kind):
            return exact(value)         # the value itself, whatever its class's __str__ says
    try:
        pickle.dumps(value)
        return value
    except Exception:      # noqa: BLE001 - any failure to pickle: a class of the generator's own
        return _foreign(type(value).__name__, repr(value))


def _call(module, name: str, path: Path, rel: str) -> list[Any]:
    fn = getattr(module, name)
    if not callable(fn):
        raise ConfigError(f"{rel}: {name} must be a function returning a list of mappings")
    try:
        result = fn()
        if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
            raise ConfigError(f"{rel}: {name}() must return a list of mappings, "
                              f"not {type(result).__name__}")
        return list(result)
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:
        raise ConfigError(_failure(exc, path, rel, f"in {name}()")) from None


@dataclass(frozen=True)
class GeneratorItem:
    """One variant a generator listed, its shape checked: the rest is the config's to resolve."""

    where: str                  # "<generator>: variant '<name>'", for messages
    name: str
    source: str                 # posix: relative to glsl_dir (the file exists), or a generated file's name
    item: Mapping[str, Any]     # the mapping itself (defines and settings still unchecked)
    path: str                   # where the source is, relative to the root
    generated: bool = False     # ``source`` names a generated file (``path`` is under .genspirv/generated)


@dataclass(frozen=True)
class GeneratorOutput:
    items: tuple[GeneratorItem, ...]
    files: tuple[GeneratedFile, ...]        # sorted by path


def _posix(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {what} must be a string, got {value!r}")
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts or "\\" in value or p.as_posix() != value:
        raise ConfigError(f"{where}: {what} {value!r} must be a normalised relative posix path, without '..'")
    return value


def _templates(root: Path, value: Any, where: str) -> tuple[str, ...]:
    """The ``template`` of a variant or file: a path or a list of paths, each an existing file."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)):
        raise ConfigError(f"{where}: 'template' must be a path or a list of paths relative to the project root, "
                          f"got {value!r}")
    out = []
    for t in values:
        _posix(t, where, "template")
        if not (root / t).is_file():
            raise ConfigError(f"{where}: template {t!r}: no such file (paths are relative to the project root)")
        out.append(t)
    return tuple(dict.fromkeys(out))


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key!r} must be a string of GLSL, got {type(value).__name__}")
    return value


def _generated_files(root: Path, rel: str, listed: list[Any], items: list[Any]) -> dict[str, tuple[GeneratedFile, str]]:
    """Every generated file (``files()`` entries and variants' ``source_text``) by its name, with
    where it came from; two different texts for one name are refused."""
    found: dict[str, tuple[GeneratedFile, str]] = {}

    def add(name: str, text: str, templates: tuple[str, ...], where: str) -> None:
        new = GeneratedFile(generated_path(name), text, templates)
        if name in found and found[name][0].text != text:
            raise ConfigError(f"{where}: a different text for the generated file {name!r} than "
                              f"{found[name][1]} gives; name each text's file apart")
        if name in found:
            old = found[name][0]
            new = GeneratedFile(new.path, text, tuple(dict.fromkeys(old.templates + templates)))
        found[name] = (new, found[name][1] if name in found else where)

    for i, f in enumerate(listed):
        where = f"{rel}: files() #{i}"
        if not isinstance(f, Mapping):
            raise ConfigError(f"{where}: expected a mapping with 'path' and 'text', got {type(f).__name__}")
        if isinstance(f.get("path"), str):
            where = f"{rel}: file {f['path']!r}"
        unknown = sorted((k for k in f if k not in FILE_KEYS), key=repr)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(FILE_KEYS))})")
        name = _posix(f.get("path"), where, "'path'")
        add(name, _text(f.get("text"), where, "text"), _templates(root, f.get("template", ()), where), where)
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and "source_text" in item:
            name = item.get("name")
            where = f"{rel}: variant {name!r}" if isinstance(name, str) else f"{rel}: variant #{i}"
            source = _posix(item.get("source"), where, "'source' (the generated file's name)")
            add(source, _text(item["source_text"], where, "source_text"),
                _templates(root, item.get("template", ()), where), where)
    return found


def generator_items(root: Path, rel: str, glsl_dir: str) -> GeneratorOutput:
    """The generator's variants, each a mapping with known keys, a valid name and an existing
    source, and the files it generated."""
    from .variant_names import check_name
    listed, extra = run_generator(root, rel)
    files = _generated_files(root, rel, extra, listed)
    out = []
    sources: dict[str, tuple[str, bool, bool]] = {}     # source -> (posix path, bad, on disk)
    for i, item in enumerate(listed):
        name = item.get("name") if isinstance(item, Mapping) else None
        where = f"{rel}: variant {name!r}" if isinstance(name, str) else f"{rel}: variant #{i}"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(item).__name__}")
        if not GENERATOR_KEYS.issuperset(item):
            unknown = sorted((k for k in item if k not in GENERATOR_KEYS), key=repr)
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(GENERATOR_KEYS))})")
        for key in ("name", "source"):
            if not isinstance(item.get(key), str):
                raise ConfigError(f"{where}: {key!r} must be a string, got {item.get(key)!r}")
        check_name(name, f"{rel}: variant #{i}: name")
        if "template" in item and "source_text" not in item:
            raise ConfigError(f"{where}: 'template' says what a source_text was rendered from; "
                              "this variant has no source_text")
        source = item["source"]
        if source not in sources:       # many variants share a source: look at each one once
            p = PurePosixPath(source)
            bad = not source or p.is_absolute() or ".." in p.parts or "\\" in source
            sources[source] = (p.as_posix(), bad, not bad and (root / glsl_dir / source).is_file())
        posix, bad, on_disk = sources[source]
        if bad:
            raise ConfigError(f"{where}: source {source!r} must be a relative posix path inside {glsl_dir}")
        generated = posix in files
        if generated and on_disk and "source_text" not in item:
            raise ConfigError(f"{where}: source {source!r} is both {glsl_dir}/{source} and a generated file; "
                              "rename one of them")
        if not generated and not on_disk:
            raise ConfigError(f"{where}: no such source {glsl_dir}/{source} (and no generated file of that name)")
        path = generated_path(posix) if generated else f"{glsl_dir}/{posix}"
        out.append(GeneratorItem(where, name, posix, item, path, generated))
    return GeneratorOutput(tuple(out), tuple(sorted((f for f, _ in files.values()), key=lambda f: f.path)))
