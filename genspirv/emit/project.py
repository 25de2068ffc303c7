"""A project's own template: a manifest and its blobs in, one rendered file out.

``render_template(manifest, template, output, blobs) -> bytes`` renders the
jinja2 file ``template`` (a posix path relative to the manifest's root) in a
sandbox (``jinja2.sandbox.SandboxedEnvironment``) with ``StrictUndefined``: a
misspelt variable is an error naming the template and line, never an empty
string. A template is one file: ``{% include %}`` and ``{% import %}`` are refused,
so the template's own bytes are all a build has to track.

Variables (the GUIDE's "Project templates" documents them):

- ``manifest``: the manifest as JSON data (``schema``, ``toolchain``, ``shaders``
  and any other top-level field, such as ``unavailable``);
- ``shaders``: the manifest's entries sorted by name, each with ``blob`` (the
  bytes), ``words`` (the 32-bit words) and ``ident`` (``name`` as a C identifier)
  added, and ``meta`` (the variant's meta table, ``{}`` when it has none);
- ``unavailable``: the manifest's ``unavailable`` list, or ``[]``;
- ``toolchain``, ``banner``, ``output`` and ``template``.

Filters: ``c_string``/``c_escape``, ``c_ident``, ``hex_bytes(per_line=16)``
and ``hex_words(per_line=8)`` (``ctext``'s, the C table's own escaping).
"""

from __future__ import annotations

import traceback
from typing import Mapping

import jinja2
import jinja2.sandbox

from ..errors import CodegenError
from ..manifest import Manifest, manifest_to_dict
from .ctext import BANNER, blob_words, c_escape, c_ident, c_string, hex_bytes, hex_words


class _OneFileLoader(jinja2.BaseLoader):
    """Serves the one template; anything it tries to include is an error."""

    def __init__(self, name: str, source: str) -> None:
        self.name, self.source = name, source

    def get_source(self, environment, template):
        if template != self.name:
            raise jinja2.TemplateNotFound(template, f"{template!r} is not available: a genspirv template "
                                                    "is one file (its bytes are what the build tracks)")
        # The file name is the template's path, so a render error's frames name it.
        return self.source, self.name, lambda: True


def _environment(name: str, source: str) -> jinja2.sandbox.SandboxedEnvironment:
    env = jinja2.sandbox.SandboxedEnvironment(
        loader=_OneFileLoader(name, source), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters.update(c_string=c_string, c_escape=c_escape, c_ident=c_ident,
                       hex_bytes=hex_bytes, hex_words=hex_words)
    return env


def _template_line(exc: BaseException, name: str) -> str:
    """The template line a render-time error came from (jinja rewrites frames to it)."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == name:
            return f"{name}:{frame.lineno}"
    return name


def context(manifest: Manifest, template: str, output: str, blobs: Mapping[str, bytes]) -> dict:
    """The variables a project template receives."""
    doc = manifest_to_dict(manifest)
    shaders = []
    for entry in doc["shaders"]:
        blob = blobs[entry["name"]]
        shaders.append({**entry, "meta": entry.get("meta", {}), "blob": blob,
                        "words": list(blob_words(blob, entry["spirv"])), "ident": c_ident(entry["name"])})
    return {"manifest": doc, "shaders": shaders, "unavailable": doc.get("unavailable", []),
            "toolchain": doc["toolchain"], "banner": BANNER, "output": output, "template": template}


def render_template(manifest: Manifest, template: str, output: str, blobs: Mapping[str, bytes]) -> bytes:
    """Render ``template`` (relative to the manifest's root) for ``output``; UTF-8 bytes."""
    if manifest.root is None:
        raise CodegenError(f"{template}: the manifest has no project root to find the template in")
    path = manifest.root / template
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CodegenError(f"generate template {template}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodegenError(f"generate template {template}: cannot read: {exc}") from None
    env = _environment(template, source)
    try:
        compiled = env.get_template(template)
    except jinja2.TemplateSyntaxError as exc:
        raise CodegenError(f"{template}:{exc.lineno}: template syntax error: {exc.message}") from None
    try:
        text = compiled.render(context(manifest, template, output, blobs))
    except CodegenError as exc:   # from a filter, e.g. c_string of a bad value
        raise CodegenError(f"{_template_line(exc, template)}: {exc}") from None
    except jinja2.TemplateError as exc:
        # UndefinedError, SecurityError and friends: name the line, keep jinja's words.
        raise CodegenError(f"{_template_line(exc, template)}: {type(exc).__name__}: {exc}") from None
    except (TypeError, ValueError, KeyError, IndexError, ArithmeticError) as exc:
        raise CodegenError(f"{_template_line(exc, template)}: {type(exc).__name__}: {exc}") from None
    return text.encode("utf-8")
