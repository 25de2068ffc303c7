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

A template is the project's own code, bounded as its generator is
(docs/SECURITY.md): it is compiled and rendered in a child process
(``genspirv.project.isolated``) stopped after ``GENSPIRV_GENERATOR_TIMEOUT``
seconds, its address space capped at ``GENSPIRV_COMPILER_MEMORY_MB`` past what
it starts with, so a runaway ``{% for %}`` or a ``'x' * 10**11`` is one line
naming the template, not a hung build or a traceback. The sandbox is only as
good as jinja2: one with known sandbox escapes (before ``MIN_JINJA2``) is refused.
"""

from __future__ import annotations

import re
import traceback
from typing import Any, Callable, Mapping

import jinja2
import jinja2.sandbox

from ..errors import CodegenError
from ..manifest import Manifest, manifest_to_dict
from ..project import isolated
from ..settings import get as setting
from .ctext import BANNER, blob_words, c_escape, c_ident, c_string, hex_bytes, hex_words

# The first jinja2 without a known sandbox escape: 3.1.5 fixed CVE-2024-56201 (code run through a
# template's file name) and CVE-2024-56326 (str.format reached indirectly), 3.1.6 CVE-2025-27516
# (str.format reached through the |attr filter).
MIN_JINJA2 = (3, 1, 6)
JINJA2_ESCAPES = "CVE-2024-56201, CVE-2024-56326, CVE-2025-27516"


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


def jinja2_version() -> str:
    """The installed jinja2's version, from its distribution (its ``__version__`` is on the way out)."""
    from importlib import metadata
    try:
        return metadata.version("jinja2")
    except metadata.PackageNotFoundError:     # a jinja2 copied without its metadata
        return getattr(jinja2, "__version__", "0")


def check_jinja2(template: str) -> None:
    """CodegenError when the jinja2 installed has a known sandbox escape: a project template is
    code genspirv runs, and the sandbox is all that stands between it and the build's process."""
    found = jinja2_version()
    numbers = tuple(int(n) for n in re.findall(r"\d+", found)[:3])
    if numbers < MIN_JINJA2:
        need = ".".join(map(str, MIN_JINJA2))
        raise CodegenError(f"{template}: jinja2 {found} has known sandbox escapes ({JINJA2_ESCAPES}); "
                           f"project templates need jinja2 {need} or later: pip install 'jinja2>={need}'")


def render_template(manifest: Manifest, template: str, output: str, blobs: Mapping[str, bytes]) -> bytes:
    """Render ``template`` (relative to the manifest's root) for ``output``; UTF-8 bytes. In a
    child process, stopped at the generators' deadline (``GENSPIRV_GENERATOR_TIMEOUT``)."""
    if manifest.root is None:
        raise CodegenError(f"{template}: the manifest has no project root to find the template in")
    path = manifest.root / template
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CodegenError(f"generate template {template}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodegenError(f"generate template {template}: cannot read: {exc}") from None
    check_jinja2(template)
    timeout = setting("GENSPIRV_GENERATOR_TIMEOUT")
    memory = setting("GENSPIRV_COMPILER_MEMORY_MB")
    try:
        ok, value = isolated.call_in_child(_isolated, (manifest, template, output, blobs, source, memory),
                                           timeout, memory << 20)
    except isolated.Overran:
        raise CodegenError(f"{template}: the template did not finish rendering within {timeout:g} s and was "
                           "stopped: make it quicker (it renders on every build that changes an output, and "
                           "on check), or raise GENSPIRV_GENERATOR_TIMEOUT") from None
    except isolated.Died as exc:
        raise CodegenError(f"{template}: the template's process ended without rendering it ({exc.how})") from None
    except isolated.Raised as exc:
        raise CodegenError(f"{template}: the template could not be rendered: {exc}") from None
    if not ok:
        raise CodegenError(value)
    return value


def _isolated(stage: Callable[[str], None], manifest: Manifest, template: str, output: str,
              blobs: Mapping[str, bytes], source: str, memory_mb: int) -> tuple[bool, Any]:
    """The child's side of ``render_template`` (module-level: a fresh interpreter finds it by name)."""
    try:
        return True, _render(manifest, template, output, blobs, source, memory_mb)
    except CodegenError as exc:
        return False, str(exc)


def _render(manifest: Manifest, template: str, output: str, blobs: Mapping[str, bytes], source: str,
            memory_mb: int) -> bytes:
    env = _environment(template, source)
    try:
        compiled = env.get_template(template)
    except jinja2.TemplateSyntaxError as exc:
        raise CodegenError(f"{template}:{exc.lineno}: template syntax error: {exc.message}") from None
    try:
        text = compiled.render(context(manifest, template, output, blobs))
    except CodegenError as exc:   # from a filter, e.g. c_string of a bad value
        raise CodegenError(f"{_template_line(exc, template)}: {exc}") from None
    except MemoryError:
        raise CodegenError(f"{template}: the template took more than the {memory_mb} MiB it may "
                           "(GENSPIRV_COMPILER_MEMORY_MB) and was stopped") from None
    except RecursionError as exc:
        raise CodegenError(f"{_template_line(exc, template)}: the template recursed too deeply "
                           "(a macro that calls itself without end?)") from None
    except jinja2.TemplateError as exc:
        # UndefinedError, SecurityError and friends: name the line, keep jinja's words.
        raise CodegenError(f"{_template_line(exc, template)}: {type(exc).__name__}: {exc}") from None
    except Exception as exc:        # noqa: BLE001 - whatever a template's expression raises is the template's
        raise CodegenError(f"{_template_line(exc, template)}: {type(exc).__name__}: {exc}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodegenError(f"{template}: the rendered text is not UTF-8: {exc.reason}") from None
