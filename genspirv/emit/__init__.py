"""The emitters: a manifest in, the files other build systems and languages read out.

``render(target, manifest, output, blobs=None, template=None) -> {relative
posix path: bytes}`` gives the files of one ``generate`` entry of
``[tool.genspirv]``; build writes them atomically and check compares them byte
for byte. A build with many outputs makes their common input once,
``prepare(manifest, blobs) -> RenderInput`` (every blob verified once, shared,
never copied), and renders each output from it with ``render_output(source,
target, output, template)``: a pure function of its arguments, safe to call
from several threads at once or in worker processes forked after ``prepare``.
Modules (each imports only the ones listed before it):

- ``ctext``: C source text (escaping, identifiers, initialiser lines at the
  speed of ``bytes.hex()``, a blob's words), pure;
- ``cblobs``: blobs put into the binary from their files (``.incbin``,
  ``#embed``) instead of initialisers: a ``generate`` entry's ``blobs =
  "files"``, pure;
- ``render_input``: what every output of a build is rendered from
  (``prepare``, ``RenderInput``);
- ``ctable``: target ``"c"``, the C/C++ table of blobs and reflection
  (``genspirv/templates/c/``) that ``genspirv/vulkan.h`` builds pipelines from;
- ``project``: a project's own jinja2 template (``template = "tools/x.j2"``),
  sandboxed, into one file;
- ``cmake``: what genspirv's CMake package (``genspirv/cmake/``) asks of
  genspirv: its folder, the depfile of a build, the C table's paths.

This module imports the renderers only when one is asked for, so the CLI's
start-up (which needs ``cmake``'s options) does not load jinja2.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath
from typing import Mapping, Optional, Sequence

from ..project.config import GENERATE_TARGETS as TARGETS   # generate entries with `target = ...`
from ..errors import CodegenError

TEMPLATE_TARGET = "template"   # a generate entry with `template = "...j2"`

Blobs = Optional[Mapping[str, bytes]]


def check_output(output: str) -> str:
    """``output`` must be a relative posix path prefix inside the project."""
    p = PurePosixPath(output)
    if (not output or output.endswith("/") or "\\" in output or p.is_absolute()
            or ".." in p.parts or p.as_posix() != output or p.name in ("", ".")):
        raise CodegenError(f"generate output {output!r} must be a relative posix path such as "
                           "'manifests/shaders' (no '..', no trailing '/')")
    return output


def renderer_files(target: str) -> list[Path]:
    """The emitter modules and a built-in target's templates: what ``renderer_key`` hashes."""
    here = Path(__file__).resolve().parent
    return sorted(here.glob("*.py")) + sorted((here.parent / "templates" / target).glob("*.j2"))


def renderer_key(target: str) -> str:
    """sha256 of what a built-in target's output is a function of besides the manifest:
    the emitter modules and the target's templates. A build whose key changed re-renders
    (a genspirv upgrade with a new table shape rewrites the table; check would see it)."""
    digest = hashlib.sha256(target.encode())
    for f in renderer_files(target):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def prepare(manifest, blobs: Blobs = None):
    """The ``RenderInput`` every output of a build is rendered from (``render_input.prepare``):
    ``blobs`` ({variant name: bytes}) are the fresh blobs of a build not yet written; a
    variant without one is read from the committed files. Either way each is verified once
    against its entry's size and sha256."""
    from .render_input import prepare as make
    return make(manifest, blobs)


def render_output(source, target: str, output: str, template: Optional[str] = None,
                  blob_mode: str = "arrays", blob_root: Optional[str] = None) -> dict[str, bytes]:
    """The files of one ``generate`` entry, {relative posix path: bytes}, from ``source``
    (``prepare``'s). ``template`` (a posix path relative to the manifest's root) renders a
    project's own jinja2 template into the one file ``output``. ``blob_mode`` is the entry's
    ``blobs``: ``"arrays"`` (C initialisers of the bytes) or ``"files"`` (``.incbin`` or
    ``#embed`` of each blob's file, ``cblobs``: paths from the output's folder, or under
    ``blob_root`` for a copy rendered elsewhere, such as CMake's build folder)."""
    from ..project.config import BlobMode
    try:
        mode = BlobMode(blob_mode)
    except ValueError:
        raise CodegenError(f"generate blobs {blob_mode!r}: not one of "
                           f"{', '.join(m.value for m in BlobMode)}") from None
    if template is not None or target == TEMPLATE_TARGET:
        if template is None:
            raise CodegenError("generate target 'template' needs a template path")
        from .project import render_template
        output = check_output(output)
        return {output: render_template(source, template, output, mode, blob_root)}
    if target not in TARGETS:
        raise CodegenError(f"unknown generate target {target!r} (known: {', '.join(sorted(TARGETS))})")
    from .ctable import render_c
    return render_c(source, check_output(output), mode, blob_root)


def render_outputs(source, entries: Sequence, jobs: int, blob_root: Optional[str] = None) -> list[dict[str, bytes]]:
    """``render_output`` of every ``generate`` entry (``project.config.Generate``), in their
    order, ``jobs`` at a time: the project templates' outputs dealt out to at most ``jobs``
    child processes, each rendering its share one after another (``project.render_templates``:
    one fork each, not one an output), the C tables on threads beside them."""
    from ..project.config import BlobMode
    templated = [i for i, g in enumerate(entries) if g.template is not None]
    children = min(len(templated), max(jobs, 1))
    out: list[dict[str, bytes]] = [{} for _ in entries]

    def share(indices: list[int]) -> None:          # one child renders these, one after another
        from .project import TemplateOutput, render_templates
        wanted = [TemplateOutput(entries[i].template, check_output(entries[i].output), BlobMode(entries[i].blobs),
                                 blob_root) for i in indices]
        for i, data in zip(indices, render_templates(source, wanted)):
            out[i] = {entries[i].output: data}

    def table(i: int) -> None:                      # a built-in target, on its thread
        g = entries[i]
        out[i] = render_output(source, g.target, g.output, None, BlobMode(g.blobs).value, blob_root)

    tasks = [(share, templated[k::children]) for k in range(children)]
    tasks += [(table, i) for i, g in enumerate(entries) if g.template is None]
    if len(tasks) == 1:
        tasks[0][0](tasks[0][1])
    elif tasks:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=len(tasks), thread_name_prefix="genspirv-render") as pool:
            list(pool.map(lambda task: task[0](task[1]), tasks))
    return out


def render(target: str, manifest, output: str, blobs: Blobs = None,
           template: Optional[str] = None, blob_mode: str = "arrays") -> dict[str, bytes]:
    """The files of one ``generate`` entry: ``render_output(prepare(manifest, blobs), ...)``."""
    return render_output(prepare(manifest, blobs), target, output, template, blob_mode)
