"""A project's own template: a ``RenderInput`` and a template in, one rendered file out.

``render_template(source, template, output) -> bytes`` renders the jinja2 file
``template`` (a posix path relative to the manifest's root) for ``source``
(``render_input.RenderInput``: the manifest and its verified blobs, shared by
every output of a build) in a sandbox (``jinja2.sandbox.SandboxedEnvironment``)
with ``StrictUndefined``: a misspelt variable is an error naming the template
and line, never an empty string. A template is one file: ``{% include %}`` and
``{% import %}`` are refused, so the template's own bytes are all a build has
to track. The manifest's data is shared by every output, so a template may not
change it (``append`` to a shader's ``bindings``, say: a SecurityError naming
the line); each output gets its own copy of each shader's mapping. Several
threads or processes may render at once: a template's text is compiled once per
process (``_compiled``, keyed by its text), and nothing else is kept.

Variables (the GUIDE's "Project templates" documents them):

- ``manifest``: the manifest as JSON data (``schema``, ``toolchain``, ``shaders``
  and any other top-level field, such as ``unavailable``);
- ``shaders``: the manifest's entries sorted by name, each with ``blob`` (the
  bytes), ``words`` (the 32-bit words) and ``ident`` (``name`` as a C identifier)
  added, and ``meta`` (the variant's meta table, ``{}`` when it has none);
- ``unavailable``: the manifest's ``unavailable`` list, or ``[]``;
- ``compilers``: each compiler the manifest's toolchain names, with its version
  (``compilers``: glslang, slang-glslang where it built a variant, spirv-opt
  where one ran);
- ``blobs``: the ``generate`` entry's ``blobs`` (``"arrays"`` or ``"files"``);
- ``toolchain``, ``banner``, ``output`` and ``template``.

Filters: ``c_string``/``c_escape``, ``c_ident``, ``hex_bytes(per_line=16, suffix="")``
and ``hex_words(per_line=8, suffix="")`` (``ctext``'s, the C table's own escaping),
and ``blob_array(name)`` of a shader: its bytes as ``const unsigned char
name[size]`` with external linkage, an initialiser under ``blobs = "arrays"``,
``.incbin`` or ``#embed`` of its file under ``"files"`` (``cblobs``; the first in
a file brings the prelude that picks the mechanism).

A template is the project's own code, bounded as its generator is
(docs/SECURITY.md): it is compiled and rendered in a child process
(``genspirv.project.isolated``; forked, so the manifest data and blobs every
output shares are the parent's, not copies) stopped after
``GENSPIRV_GENERATOR_TIMEOUT`` seconds, its address space capped at
``GENSPIRV_COMPILER_MEMORY_MB`` past what it starts with, so a runaway
``{% for %}`` or a ``'x' * 10**11`` is one line naming the template, not a hung
build or a traceback. The sandbox is only as good as jinja2: one with known
sandbox escapes (before ``MIN_JINJA2``) is refused.
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import jinja2
import jinja2.sandbox

from ..errors import CodegenError
from ..manifest import Toolchain
from ..project import isolated
from ..project.config import BlobMode
from ..settings import get as setting
from .cblobs import blob_path, byte_array, byte_array_lines, prelude
from .ctext import BANNER, Words, c_escape, c_ident, c_string, hex_bytes, hex_words
from .render_input import RenderInput

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


# The ids of the containers the output being rendered on this thread shares with others.
_SHARED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("genspirv_template_shared",
                                                                          default=frozenset())


class _Rendering:
    """The output being rendered on this thread: its path, its blob mode, and whether its text
    has the files prelude yet (``blob_array`` puts it before the first blob)."""

    def __init__(self, output: str, mode: BlobMode, blob_root: Optional[str]) -> None:
        self.output, self.mode, self.blob_root, self.prelude_written = output, mode, blob_root, False


_RENDERING: contextvars.ContextVar[_Rendering] = contextvars.ContextVar("genspirv_template_rendering")


def blob_array(shader, name: str) -> str:
    """The ``blob_array`` filter: see the module docstring."""
    try:
        blob, spirv, sha256 = shader["blob"], shader["spirv"], shader["sha256"]
    except (TypeError, KeyError):
        raise CodegenError("blob_array: filter a shader of `shaders` (s | blob_array(s.ident ~ '_data'))") from None
    rendering = _RENDERING.get()
    if rendering.mode is BlobMode.ARRAYS:
        return byte_array_lines(name, len(blob), hex_bytes(blob)).rstrip("\n")
    path = blob_path(rendering.output, spirv, rendering.blob_root)
    text = byte_array(name, path, len(blob), sha256)
    if not rendering.prelude_written:
        rendering.prelude_written = True
        text = prelude(path) + text
    return text.rstrip("\n")


class _Sandbox(jinja2.sandbox.SandboxedEnvironment):
    """jinja2's sandbox, which also refuses to change the manifest data every output shares."""

    def is_safe_attribute(self, obj, attr, value) -> bool:
        if id(obj) in _SHARED.get() and jinja2.sandbox.modifies_known_mutable(obj, attr):
            return False
        return super().is_safe_attribute(obj, attr, value)


def _json_value(value):
    """``tojson`` of ``words``: the list of ints it stands for."""
    if isinstance(value, Words):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps(value, **kwargs) -> str:
    return json.dumps(value, default=_json_value, **kwargs)


@functools.lru_cache(maxsize=16)
def _compiled(name: str, source: str) -> jinja2.Template:
    """The template ``name`` whose text is ``source``, compiled (once per process and text:
    the outputs of one template share it; a jinja2 Template renders on several threads)."""
    env = _Sandbox(loader=_OneFileLoader(name, source), undefined=jinja2.StrictUndefined,
                   keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters.update(c_string=c_string, c_escape=c_escape, c_ident=c_ident,
                       hex_bytes=hex_bytes, hex_words=hex_words, blob_array=blob_array)
    env.policies["json.dumps_function"] = _dumps
    return env.get_template(name)


def _template_line(exc: BaseException, name: str) -> str:
    """The template line a render-time error came from (jinja rewrites frames to it)."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == name:
            return f"{name}:{frame.lineno}"
    return name


def compilers(toolchain: Toolchain) -> list[dict[str, str]]:
    """Each compiler the blobs went through, in the order they ran, as {name, version}: glslang,
    slang-glslang (its library's version and the slangpy wheel's) where it built a variant,
    spirv-opt where it ran on one."""
    out = [("glslang", toolchain.glslang)]
    if toolchain.slang_glslang is not None:
        wheel = f" (slangpy {toolchain.slangpy})" if toolchain.slangpy is not None else ""
        out.append(("slang-glslang", toolchain.slang_glslang + wheel))
    if toolchain.spirv_opt is not None:
        out.append(("spirv-opt", toolchain.spirv_opt))
    return [{"name": name, "version": version} for name, version in out]


def context(source: RenderInput, template: str, output: str, mode: BlobMode = BlobMode.ARRAYS) -> dict:
    """The variables a project template receives (this output's own list and shader mappings;
    what they hold is shared)."""
    doc = source.doc
    return {"manifest": doc, "shaders": [dict(s) for s in source.template_shaders],
            "unavailable": doc.get("unavailable", []), "compilers": compilers(source.manifest.toolchain),
            "blobs": mode.value,
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


def render_template(source: RenderInput, template: str, output: str, mode: BlobMode = BlobMode.ARRAYS,
                    blob_root: Optional[str] = None) -> bytes:
    """Render ``template`` (relative to the manifest's root) for ``output``; UTF-8 bytes
    (``blob_root``: files mode's blob paths under that folder, see ``cblobs.blob_path``). In a
    child process, stopped at the generators' deadline (``GENSPIRV_GENERATOR_TIMEOUT``)."""
    return render_templates(source, [TemplateOutput(template, output, mode, blob_root)])[0]


@dataclass(frozen=True)
class TemplateOutput:
    """One output of a project template: ``render_template``'s arguments."""

    template: str
    output: str
    mode: BlobMode = BlobMode.ARRAYS
    blob_root: Optional[str] = None


def render_templates(source: RenderInput, outputs: Sequence[TemplateOutput]) -> list[bytes]:
    """``render_template`` of each of ``outputs``, one after another in one child process: a
    fork then costs its page faults (the shared manifest data, touched again) once for them
    all, where a child an output cost about 17 ms each. Each output has the whole deadline."""
    root = source.manifest.root
    if root is None:
        raise CodegenError(f"{outputs[0].template}: the manifest has no project root to find the template in")
    texts = {}
    for o in outputs:
        if o.template not in texts:
            texts[o.template] = _template_text(root / o.template, o.template)
            check_jinja2(o.template)
    timeout = setting("GENSPIRV_GENERATOR_TIMEOUT")
    memory = setting("GENSPIRV_COMPILER_MEMORY_MB")
    try:
        ok, value = isolated.call_in_child(_isolated, (source, tuple(outputs), texts, memory),
                                           timeout, memory << 20, per_stage=True)
    except isolated.Overran as exc:
        raise CodegenError(f"{_template_of(outputs, exc.stage)}: the template did not finish rendering within "
                           f"{timeout:g} s and was stopped: make it quicker (it renders on every build that "
                           "changes an output, and on check), or raise GENSPIRV_GENERATOR_TIMEOUT") from None
    except isolated.Died as exc:
        raise CodegenError(f"{_template_of(outputs, exc.stage)}: the template's process ended without rendering "
                           f"it ({exc.how})") from None
    except isolated.Raised as exc:
        raise CodegenError(f"{_template_of(outputs, None)}: the template could not be rendered: {exc}") from None
    if not ok:
        raise CodegenError(value)
    return value


def _template_text(path, template: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CodegenError(f"generate template {template}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodegenError(f"generate template {template}: cannot read: {exc}") from None


def _template_of(outputs: Sequence[TemplateOutput], stage: Optional[str]) -> str:
    """The template of the output the child was rendering (its stage: the output's index)."""
    index = int(stage) if stage is not None and stage.isdigit() and int(stage) < len(outputs) else 0
    return outputs[index].template


def _isolated(stage: Callable[[str], None], source: RenderInput, outputs: Sequence[TemplateOutput],
              texts: dict[str, str], memory_mb: int) -> tuple[bool, Any]:
    """The child's side of ``render_templates`` (module-level: a fresh interpreter finds it by name)."""
    rendered = []
    try:
        for i, o in enumerate(outputs):
            stage(str(i))
            rendered.append(_render(source, o.template, o.output, o.mode, o.blob_root, texts[o.template],
                                    memory_mb))
    except CodegenError as exc:
        return False, str(exc)
    return True, rendered


def _render(source: RenderInput, template: str, output: str, mode: BlobMode, blob_root: Optional[str],
            text: str, memory_mb: int) -> bytes:
    try:
        compiled = _compiled(template, text)
    except jinja2.TemplateSyntaxError as exc:
        raise CodegenError(f"{template}:{exc.lineno}: template syntax error: {exc.message}") from None
    shared = _SHARED.set(source.shared_ids)
    rendering = _RENDERING.set(_Rendering(output, mode, blob_root))
    try:
        rendered = compiled.render(context(source, template, output, mode))
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
    finally:
        _RENDERING.reset(rendering)
        _SHARED.reset(shared)
    try:
        return rendered.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodegenError(f"{template}: the rendered text is not UTF-8: {exc.reason}") from None
