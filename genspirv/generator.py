"""Generator files: a project's own Python that lists variants, each checked for its shape.

Takes the path of a generator file (``[tool.genspirv] generator = "shaders/variants.py"``),
runs its ``variants()`` and gives ``GeneratorItem``s: known keys, a valid name, an
existing source. ``genspirv.config`` resolves each into a ``Variant`` (the
variant's settings over its source's table over the top level; flags accumulate).
Each variant is a mapping with ``name`` and ``source`` (relative to ``glsl_dir``)
and optionally ``defines``, ``flags``, ``target_env``, ``optimize``,
``validate``, ``optional``, ``preamble`` (relative to the project root),
``compiler``. An unknown key, a bad value, a missing source or an
exception inside the generator is a ``ConfigError`` naming the generator file
and the variant.

The generator runs on every build and check, so it should be quick and pure:
it decides what is built, the sources and defines decide the bytes.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ConfigError

GENERATOR_KEYS = {"name", "source", "defines", "flags", "target_env", "optimize", "validate", "optional",
                  "preamble", "compiler"}


def _load(path: Path, rel: str):
    spec = importlib.util.spec_from_file_location(f"genspirv_generator_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"tool.genspirv.generator: {rel}: cannot load it as a Python file")
    module = importlib.util.module_from_spec(spec)
    # The generator may import helpers that sit beside it.
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise ConfigError(_failure(exc, path, rel, "while loading")) from None
    finally:
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


def generator_variants(root: Path, rel: str) -> list[Any]:
    """What the generator's ``variants()`` returned, as a list (not yet checked)."""
    path = root / rel
    if not path.is_file():
        raise ConfigError(f"tool.genspirv.generator: no such file {rel}")
    module = _load(path, rel)
    fn = getattr(module, "variants", None)
    if not callable(fn):
        raise ConfigError(f"{rel}: a generator must define variants() returning the variants")
    try:
        result = fn()
        if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
            raise ConfigError(f"{rel}: variants() must return a list of mappings, "
                              f"not {type(result).__name__}")
        return list(result)
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:
        raise ConfigError(_failure(exc, path, rel, "in variants()")) from None


@dataclass(frozen=True)
class GeneratorItem:
    """One variant a generator listed, its shape checked: the rest is the config's to resolve."""

    where: str                  # "<generator>: variant '<name>'", for messages
    name: str
    source: str                 # posix, relative to glsl_dir; the file exists
    item: Mapping[str, Any]     # the mapping itself (defines and settings still unchecked)


def generator_items(root: Path, rel: str, glsl_dir: str) -> list[GeneratorItem]:
    """The generator's variants, each a mapping with known keys, a valid name and an existing source."""
    from .variant_names import check_name
    out = []
    for i, item in enumerate(generator_variants(root, rel)):
        name = item.get("name") if isinstance(item, Mapping) else None
        where = f"{rel}: variant {name!r}" if isinstance(name, str) else f"{rel}: variant #{i}"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(item).__name__}")
        unknown = sorted((k for k in item if k not in GENERATOR_KEYS), key=repr)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(GENERATOR_KEYS))})")
        for key in ("name", "source"):
            if not isinstance(item.get(key), str):
                raise ConfigError(f"{where}: {key!r} must be a string, got {item.get(key)!r}")
        check_name(name, f"{rel}: variant #{i}: name")
        source = item["source"]
        p = PurePosixPath(source)
        if not source or p.is_absolute() or ".." in p.parts or "\\" in source:
            raise ConfigError(f"{where}: source {source!r} must be a relative posix path inside {glsl_dir}")
        if not (root / glsl_dir / source).is_file():
            raise ConfigError(f"{where}: no such source {glsl_dir}/{source}")
        out.append(GeneratorItem(where, name, p.as_posix(), item))
    return out
