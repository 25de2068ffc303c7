"""The compiler seam: what a build asks of a compiler, and the pinned glslang that answers.

The build (``genspirv.buildsys.compile``, ``genspirv.buildsys.builder``) talks to a compiler only
through the ``Compiler`` protocol below; ``GlslangCompiler`` is the real one
(glslangValidator, then spirv-opt and spirv-val, each a subprocess; in a worker process,
glslang's and spirv-val's libraries: ``glslang_library``, ``validator_library``), and the
tests drive the build with a fake one in memory. Another compiler (an
in-process library, say) implements the same five members:

- ``version``: the compiler's identity in every content key. A different
  string recompiles every variant, so it must change exactly when the bytes
  the compiler makes may change (glslang's is its version, ``13.1.1``).
- ``optimizer_version``: the optimiser's, in the key of optimised variants
  (None when no variant is optimised).
- ``compile(job)``: one variant's SPIR-V bytes, every file the compile read
  (for the next build's content key: the source first, then its preamble when
  it has one, then each include, relative to the project root where inside
  it) and the compiler's messages. A variant's ``preamble`` is a file whose
  text goes before the source's first line; messages name each file's own
  lines (``genspirv.toolchain.preamble`` composes the two and maps lines back).
  A shader it refuses is a ``CompileError`` whose ``messages`` are
  ``file:line: error: ...`` lines; an extension or feature it lacks is an
  ``UnavailableError`` naming it; a broken compiler is a ``ToolchainError``.
- ``optimize(job, blob)``: the optimised bytes. Optimisers validate their
  input; with ``job.variant.validate`` false they must not (the escape hatch
  for a validator older or newer than what a shader uses).
- ``validate(job, blob)``: a ``ValidationError`` when the blob is invalid for
  ``job.variant.target_env``; called only for variants with ``validate``.
- ``strip(job, blob)``: the bytes without debug information (glslang's
  ``-g0``: OpName, OpMemberName, OpSource, OpString, OpLine, OpModuleProcessed);
  called only for variants whose flags hold ``-g0``, after reflection has read
  the names. A compiler is never given ``-g0`` itself (``Variant.compiler_flags``).

Each is called from worker threads, several at once, each job with its own
file names in ``job.workdir``. A compiler finds a file through ``job.file``
(and hands a tool ``job.tool_path``): generated sources are named
``.genspirv/generated/...`` everywhere but, in ``check``, lie in a temporary
folder; ``job.named`` turns what a tool printed back into those names. A compiler that starts processes starts them
through ``genspirv.toolchain.tools`` (``Tool.run``), which an interrupted build
kills; an in-process one is waited for.

A compiler that says ``ships_to_workers`` (a class attribute, True) is a plain
value (tool paths) that pickles and compiles the same in another process: the
build may then run its variants' whole pipelines in worker processes
(``genspirv.buildsys.compile_workers``). One that says nothing (an in-memory fake,
slang-glslang, which has worker processes of its own) runs on threads.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Optional, Protocol, Sequence

from ..project.config import Config, Variant
from ..project.variants import CompilerName
from ..errors import GenspirvError, ToolchainError
from ..project.generated import GENERATED_DIR, is_generated
from .spirv_tools import optimize, strip_debug, tool_version, validate
from .tools import Glslang, Tool, cached_version, compile_glsl, find_glslang, find_tool, uses_include

if TYPE_CHECKING:
    from .glslang_library import GlslangLibrary

CommandLog = Optional[Callable[[Sequence[str]], None]]


@dataclass(frozen=True)
class Job:
    """One variant to compile, and where."""

    variant: Variant
    root: Path                      # the project root: sources and includes are relative to it
    include_dirs: tuple[str, ...]   # folders on the include path, relative to the root
    include_directive: bool         # #include works without GL_GOOGLE_include_directive
    workdir: Path                   # a folder of this build's own; name files after the variant
    on_command: CommandLog = None   # told each command line run (``build -v``)
    generated_dir: Optional[Path] = None    # where GENERATED_DIR's files are when not in the root (check)

    def _moved(self) -> Optional[str]:
        return str(self.generated_dir) if self.generated_dir is not None else None

    def tool_path(self, rel: str) -> str:
        """A root-relative path as a tool running in the root is given it."""
        moved = self._moved()
        return moved + rel[len(GENERATED_DIR):] if moved and is_generated(rel) else rel

    def file(self, rel: str) -> Path:
        """Where a root-relative path (a source, an include folder) is on disk."""
        return self.root / self.tool_path(rel)

    def named(self, text: str) -> str:
        """Text a tool printed (a message, a depfile path) with generated files under their own names."""
        moved = self._moved()
        return text.replace(moved, GENERATED_DIR) if moved else text

    def output(self, blob: bytes, tool_deps: Sequence[str], messages: str) -> "CompilerOutput":
        """A compile's result as the build records it: the source and its preamble, then the
        files the tool read (its depfile, paths as the tool was given them), generated files
        under their own names."""
        v = self.variant
        read = [v.source, *([v.preamble] if v.preamble else [])]
        deps = dict.fromkeys(read + [dep_path(self.root, self.named(d)) for d in tool_deps])
        return CompilerOutput(blob, tuple(deps), self.named(messages))

    def renamed(self, exc: GenspirvError) -> GenspirvError:
        """``exc`` with its text (and messages, source) naming generated files as ``named`` does."""
        if self._moved():
            exc.args = tuple(self.named(a) if isinstance(a, str) else a for a in exc.args)
            for attr in ("messages", "source"):
                if isinstance(getattr(exc, attr, None), str):
                    setattr(exc, attr, self.named(getattr(exc, attr)))
        return exc


@dataclass(frozen=True)
class CompilerOutput:
    blob: bytes
    deps: tuple[str, ...]           # every file read: the source, its preamble, then includes; root-relative
    messages: str = ""              # warnings, in file:line form


class Compiler(Protocol):
    version: str
    optimizer_version: Optional[str]

    def compile(self, job: Job) -> CompilerOutput: ...

    def optimize(self, job: Job, blob: bytes) -> bytes: ...

    def validate(self, job: Job, blob: bytes) -> None: ...

    def strip(self, job: Job, blob: bytes) -> bytes: ...


def dep_path(root: Path, dep: str) -> str:
    """A dependency as the content key names it: posix and relative to ``root`` when inside it."""
    path = Path(os.path.normpath(root / dep))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


@dataclass(frozen=True)
class GlslangCompiler:
    """The pinned glslangValidator, spirv-opt -O (and --strip-debug) and spirv-val, as
    subprocesses (glslang and spirv-val in their libraries in a worker process)."""

    glslang: Glslang
    spirv_val: Tool
    spirv_opt: Optional[Tool] = None            # only when some variant is optimised or stripped
    optimizer_version: Optional[str] = None
    # Tool paths only, and every step a subprocess or a tool's own library: a worker process
    # runs it as this one does.
    ships_to_workers: ClassVar[bool] = True

    @property
    def version(self) -> str:
        return self.glslang.version

    def compile(self, job: Job) -> CompilerOutput:
        from . import glslang_library     # at the first compile: a no-op build loads no library binding
        return self.compile_with(job, glslang_library.for_tool(self.glslang))

    def compile_with(self, job: Job, library: Optional[GlslangLibrary]) -> CompilerOutput:
        """``compile``, glslang's library (None: glslangValidator alone) given."""
        v = job.variant
        out = job.workdir / f"{v.name}.spv"
        try:
            result = compile_glsl(self.glslang, source=job.tool_path(v.source), output=out,
                                  depfile=job.workdir / f"{v.name}.d", cwd=job.root, target_env=v.target_env,
                                  defines=v.defines_dict, include_dirs=tuple(map(job.tool_path, job.include_dirs)),
                                  flags=v.compiler_flags, what=v.name, include_preamble=_include_preamble(job),
                                  on_command=job.on_command, preamble=v.preamble,
                                  library=library)
        except GenspirvError as exc:
            raise job.renamed(exc) from None
        # glslang names dependencies relative to its working directory, the root.
        return job.output(result.blob, result.deps, result.warnings)

    def optimize(self, job: Job, blob: bytes) -> bytes:
        v = job.variant
        if self.spirv_opt is None:
            raise ToolchainError(f"{v.name}: optimize = true but spirv-opt was not looked up")
        given = _blob_file(job, "opt-in", blob)
        return optimize(self.spirv_opt, given, job.workdir / f"{v.name}.opt.spv", v.target_env, v.name,
                        job.on_command, validate=v.validate, spirv_val=self.spirv_val)

    def validate(self, job: Job, blob: bytes) -> None:
        v = job.variant
        validate(self.spirv_val, functools.cache(lambda: _blob_file(job, "val", blob)), blob, v.target_env, v.name,
                 job.on_command)

    def strip(self, job: Job, blob: bytes) -> bytes:
        v = job.variant
        if self.spirv_opt is None:
            raise ToolchainError(f"{v.name}: -g0 but spirv-opt was not looked up")
        return strip_debug(self.spirv_opt, _blob_file(job, "strip-in", blob), job.workdir / f"{v.name}.strip.spv",
                           v.name, job.on_command)


def _blob_file(job: Job, step: str, blob: bytes) -> Path:
    """``blob`` in a file of the job's own, for a tool that reads a path: the file glslang or
    spirv-opt wrote when it holds these bytes (the usual case), else a new one."""
    for made in (f"{job.variant.name}.opt.spv", f"{job.variant.name}.spv"):
        try:
            if (job.workdir / made).read_bytes() == blob:
                return job.workdir / made
        except OSError:
            pass
    path = job.workdir / f"{job.variant.name}.{step}.spv"
    try:
        path.write_bytes(blob)
    except OSError as exc:
        raise ToolchainError(f"{job.variant.name}: cannot write {path}: {exc.strerror}") from None
    return path


def _include_preamble(job: Job) -> bool:
    if not job.include_directive:
        return False
    files = [job.variant.source, *([job.variant.preamble] if job.variant.preamble else [])]
    try:
        return any(uses_include(job.file(rel).read_bytes()) for rel in files)
    except OSError:
        return False        # the compile names the missing file


def find_compiler(config: Config, version_cache: Optional[Path] = None) -> GlslangCompiler:
    """The pinned tools the project needs; ``version_cache`` (a JSON file) remembers their
    versions between builds, so a no-op build starts no tool."""
    spirv_opt = version = None
    if any(v.optimize or v.strip_debug for v in config.variants):
        spirv_opt = find_tool("spirv-opt")
        version = cached_version(spirv_opt, tool_version, version_cache)
    return GlslangCompiler(glslang=find_glslang(config.glslang, version_cache), spirv_val=find_tool("spirv-val"),
                           spirv_opt=spirv_opt, optimizer_version=version)
