"""The pinned glslang in its library: glslangValidator's compile without its process.

Takes the ``Glslang`` found (``genspirv.toolchain.tools.find_glslang``) and one compile
request (a compute source under a root, its target environment, defines, include
folders); gives ``for_tool(glslang)`` -> ``GlslangLibrary`` or None, and
``GlslangLibrary.compile(...)`` -> ``tools.CompileOutput`` (the SPIR-V bytes and the
files included, named as glslangValidator's depfile names them) or None. None means "ask
glslangValidator": the library is not there or not allowed here, the request has a
part this module does not reproduce (``flags``, a target that is not ``vulkan1.x``, a
source that is not ``.comp``; ``tools.compile_glsl`` does not ask it for a source in an
include loop either), or the compile had anything to say (an error, a warning,
a linker or SPIR-V message). So every message a user reads is still glslangValidator's
own; the library answers only the clean successes, which are nearly all of them.

Why: a glslangValidator process spends most of its CPU (~95 ms a variant on a 16-core host)
building glslang's built-in symbol tables before it reads the source, where the compile
itself takes a few ms (docs/BENCHMARKS.md, "glslang in its library"); a process that stays
builds them once.

Same bytes: the library is the one the wheel's executable loads (``lib/libglslang.so.<pin>``
and ``lib/libSPIRV.so.<pin>`` beside ``bin/glslangValidator``; a glslangValidator found
anywhere else keeps its process), asked what ``glslangValidator -V --target-env E -P...
-D...`` asks of it: Vulkan client semantics 100, the target's client and SPIR-V versions,
SPIR-V and Vulkan rules, the same preamble text, glslangValidator's include search
(``Includer``), link, I/O mapping, SPIR-V without debug info. The C interface preprocesses
and then parses the preprocessed text, where glslangValidator parses the source: the bytes
are the same for every shader compared (tests/test_glslang_library.py over this
repository's shaders; ``tools/compare_glslang_library.py`` over any folder of them).

glslang 13.1.1 reads memory it never wrote: a glslangValidator process sees the zeroed
pages a new process gets, a process that stays sees what earlier compiles left (llama.cpp's
``float16_t(0)`` constants came out +Inf or NaN). So the library runs only in a process
started with zeroed allocations (``children.zeroed_heap``, as compile workers and every
tool are) and each compile on a new thread, whose pool of glslang's nodes starts empty.

Only a process that may die for its job uses it (``allow()``: a compile worker,
``genspirv.buildsys.compile_workers``), as ``validator_library``: a crash inside glslang
takes that worker down, which the build reports as that one variant's loss.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from pathlib import Path
from typing import Mapping, Optional, Sequence

from . import children
from .tools import CompileOutput, Glslang

# glslang_c_shader_types.h
SOURCE_GLSL = 1
STAGE_COMPUTE = 5
CLIENT_VULKAN = 1
TARGET_NONE = 0
TARGET_SPV = 1
VULKAN_1_0 = 1 << 22
PROFILE_NONE = 1 << 0
MSG_SPV_RULES = 1 << 3
MSG_VULKAN_RULES = 1 << 4
MSG_ONLY_PREPROCESSOR = 1 << 5
CLIENT_SEMANTICS = 100          # glslangValidator's Vulkan input semantics (VULKAN = 100)
MESSAGES = MSG_SPV_RULES | MSG_VULKAN_RULES     # -V


def _spirv(minor: int) -> int:
    return (1 << 16) | (minor << 8)


# --target-env: (client version, SPIR-V version), as glslangValidator sets them.
TARGETS = {"vulkan1.0": (VULKAN_1_0, _spirv(0)), "vulkan1.1": (VULKAN_1_0 | 1 << 12, _spirv(3)),
           "vulkan1.2": (VULKAN_1_0 | 2 << 12, _spirv(5)), "vulkan1.3": (VULKAN_1_0 | 3 << 12, _spirv(6))}

_allowed = False

_INCLUDE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t)
_FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _IncludeResult(ctypes.Structure):
    _fields_ = [("header_name", ctypes.c_char_p), ("header_data", ctypes.c_char_p),
                ("header_length", ctypes.c_size_t)]


class _Callbacks(ctypes.Structure):
    _fields_ = [("include_system", _INCLUDE), ("include_local", _INCLUDE), ("free_include_result", _FREE)]


class Input(ctypes.Structure):              # glslang_input_t
    _fields_ = [("language", ctypes.c_int), ("stage", ctypes.c_int), ("client", ctypes.c_int),
                ("client_version", ctypes.c_int), ("target_language", ctypes.c_int),
                ("target_language_version", ctypes.c_int), ("code", ctypes.c_char_p),
                ("default_version", ctypes.c_int), ("default_profile", ctypes.c_int),
                ("force_default_version_and_profile", ctypes.c_int), ("forward_compatible", ctypes.c_int),
                ("messages", ctypes.c_int), ("resource", ctypes.c_void_p), ("callbacks", _Callbacks),
                ("callbacks_ctx", ctypes.c_void_p)]


class _SpvOptions(ctypes.Structure):        # glslang_spv_options_t: all false, as glslangValidator -V
    _fields_ = [(name, ctypes.c_bool) for name in (
        "generate_debug_info", "strip_debug_info", "disable_optimizer", "optimize_size", "disassemble",
        "validate", "emit_nonsemantic_shader_debug_info", "emit_nonsemantic_shader_debug_source", "compile_only")]


class Includer:
    """glslangValidator's include search (its ``DirStackFileIncluder``), reading files under ``root``.

    For ``#include "x"``: the folder of the including file, then of each file above it, up to
    the source's own, then the ``-I`` folders in the order given; the name it reports (and
    ``#line`` shows) is ``folder + "/" + x``. ``#include <x>`` finds nothing, as in
    glslangValidator. ``included`` lists every file given, in order."""

    def __init__(self, root: Path, source: str, include_dirs: Sequence[str]):
        self.root = root
        self.source = source
        self.external = len(include_dirs)
        self.stack = list(reversed(include_dirs))     # searched from the end: the first -I first
        self.included: list[str] = []
        self._keep: list[_IncludeResult] = []       # alive until glslang is done with them

    @staticmethod
    def directory(path: str) -> str:
        cut = max(path.rfind("/"), path.rfind("\\"))
        return "." if cut < 0 else path[:cut]

    def find(self, name: str, depth: int) -> Optional[tuple[str, bytes]]:
        del self.stack[depth + self.external:]
        self.stack += [""] * (depth + self.external - len(self.stack))
        if depth == 1:
            self.stack[-1] = self.directory(self.source)
        for folder in reversed(self.stack):
            path = (folder + "/" + name).replace("\\", "/")
            try:
                data = (self.root / path).read_bytes()
            except OSError:
                continue
            self.stack.append(self.directory(path))
            self.included.append(path)
            return path, data
        return None

    def callbacks(self) -> _Callbacks:
        def local(_ctx, name, _includer, depth):
            found = self.find(name.decode("utf-8", "replace"), int(depth))
            if found is None:
                return None
            path, data = found
            result = _IncludeResult(path.encode("utf-8"), data, len(data))
            self._keep.append(result)
            return ctypes.addressof(result)

        def system(_ctx, _name, _includer, _depth):
            return None

        self._functions = (_INCLUDE(system), _INCLUDE(local), _FREE(lambda _ctx, _result: 0))
        return _Callbacks(*self._functions)


class Handle:
    """libglslang (and its default resources), loaded and process-wide initialised once."""

    def __init__(self, glslang: Path, resources: Path):
        self.lib = lib = ctypes.CDLL(str(glslang))
        self._limits = limits = ctypes.CDLL(str(resources))
        limits.glslang_default_resource.restype = ctypes.c_void_p
        self.resource = limits.glslang_default_resource()
        lib.glslang_shader_create.restype = ctypes.c_void_p
        lib.glslang_shader_create.argtypes = [ctypes.POINTER(Input)]
        lib.glslang_shader_set_preamble.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        for name in ("glslang_shader_preprocess", "glslang_shader_parse"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.POINTER(Input)]
        for name in ("glslang_shader_get_preprocessed_code", "glslang_shader_get_info_log"):
            getattr(lib, name).restype = ctypes.c_char_p
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.glslang_shader_delete.argtypes = [ctypes.c_void_p]
        if not lib.glslang_initialize_process():
            raise OSError(f"{glslang}: glslang_initialize_process failed")


def allow() -> None:
    """Let this process compile in the library (a worker's, whose crash costs one variant)."""
    global _allowed
    _allowed = True


def library_files(lib_dir: Path, pin: str) -> tuple[Path, Path, Path]:
    """The glslang wheel's libglslang, its default resources and libSPIRV for ``pin`` (the
    files its glslangValidator loads; Linux names: elsewhere none load, and the process answers)."""
    return (lib_dir / f"libglslang.so.{pin}", lib_dir / f"libglslang-default-resource-limits.so.{pin}",
            lib_dir / f"libSPIRV.so.{pin}")


def for_tool(glslang: Glslang) -> Optional["GlslangLibrary"]:
    """The library the wheel's glslangValidator loads, when this process may use it: allowed,
    and started with a zeroed heap (``children.zeroed_heap``, as a worker is)."""
    tool = glslang.tool
    if not _allowed or not children.heap_zeroed() or tool.lib_dir is None or not tool.origin.startswith("wheel"):
        return None
    return _load(*library_files(tool.lib_dir, glslang.version))


@functools.lru_cache(maxsize=None)
def _load(glslang: Path, resources: Path, spirv: Path) -> Optional["GlslangLibrary"]:
    try:
        return GlslangLibrary(Handle(glslang, resources), ctypes.CDLL(str(spirv)))
    except (OSError, AttributeError):
        return None         # not there, or not the API this reads: glslangValidator answers


def preamble_text(include_preamble: Optional[str], defines: Mapping[str, str]) -> str:
    """What ``-P<include_preamble> -DK=V...`` (defines sorted) puts before the source: each line
    cut at its first newline, each define's first ``=`` a space."""
    def line(text: str) -> str:
        return text.split("\n", 1)[0]
    lines = [line(include_preamble)] if include_preamble is not None else []
    lines += ["#define " + line(f"{k}={v}").replace("=", " ", 1) for k, v in sorted(defines.items())]
    return "".join(f"{ln}\n" for ln in lines)


def _on_a_new_thread(steps, timeout: Optional[float] = None):
    """``steps()`` on a thread of its own. glslang allocates a compile's nodes from a per-thread
    pool whose pages it reuses, uncleared, for the thread's next compile; a new thread's pool
    takes new pages, zeroed as the heap is here, as in a glslangValidator process. Past
    ``timeout`` seconds, TimeoutError: a thread cannot be killed, so the caller stops its build,
    which ends this worker process with it."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, steps()))
        except BaseException as exc:        # raised again on the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="glslang", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise TimeoutError(f"glslang did not finish within {timeout:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class GlslangLibrary:
    """One loaded glslang: compiles a compute source as glslangValidator -V does."""

    def __init__(self, handle: Handle, spirv: ctypes.CDLL):
        self.handle = handle
        lib = handle.lib
        lib.glslang_program_create.restype = ctypes.c_void_p
        lib.glslang_program_add_shader.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.glslang_program_link.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.glslang_program_map_io.argtypes = [ctypes.c_void_p]
        lib.glslang_program_get_info_log.restype = ctypes.c_char_p
        lib.glslang_program_get_info_log.argtypes = [ctypes.c_void_p]
        lib.glslang_program_delete.argtypes = [ctypes.c_void_p]
        spirv.glslang_program_SPIRV_generate_with_options.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                                      ctypes.POINTER(_SpvOptions)]
        spirv.glslang_program_SPIRV_get_size.restype = ctypes.c_size_t
        spirv.glslang_program_SPIRV_get_size.argtypes = [ctypes.c_void_p]
        spirv.glslang_program_SPIRV_get_ptr.restype = ctypes.c_void_p
        spirv.glslang_program_SPIRV_get_ptr.argtypes = [ctypes.c_void_p]
        spirv.glslang_program_SPIRV_get_messages.restype = ctypes.c_char_p
        spirv.glslang_program_SPIRV_get_messages.argtypes = [ctypes.c_void_p]
        self.spirv = spirv

    def compile(self, *, root: Path, source: str, target_env: str, defines: Mapping[str, str],
                include_preamble: Optional[str], include_dirs: Sequence[str],
                flags: Sequence[str] = (), timeout: Optional[float] = None) -> Optional[CompileOutput]:
        """``source`` (relative to ``root``, or absolute) compiled as ``glslangValidator -V
        --target-env target_env -P<include_preamble> -DK=V... -I<dir>...`` compiles it; None
        when glslangValidator must answer (see the module's docstring); TimeoutError past
        ``timeout`` seconds."""
        target = TARGETS.get(target_env)
        # glslangValidator writes little-endian words; on another machine, let it.
        if target is None or flags or not source.endswith(".comp") or sys.byteorder != "little":
            return None
        preamble = preamble_text(include_preamble, defines)
        try:
            text = (root / source).read_bytes()
        except OSError:
            return None         # glslangValidator names the missing file
        includer = Includer(root, source, include_dirs)
        # glslang keeps the preamble's pointer, not a copy: the bytes live until the shaders go.
        preamble_bytes = preamble.encode("utf-8")

        def steps() -> Optional[bytes]:
            expanded = self._preprocess(target, text, preamble_bytes, includer)
            return None if expanded is None else self._parse_to_spirv(target, expanded)

        blob = _on_a_new_thread(steps, timeout)
        if blob is None:
            return None
        # The files included as glslangValidator's depfile lists them: a sorted set.
        return CompileOutput(blob=blob, deps=tuple(sorted(set(includer.included))), warnings="")

    def _request(self, target: tuple[int, int], code: bytes, includer: Optional[Includer]) -> Input:
        callbacks = includer.callbacks() if includer is not None else _Callbacks()
        return Input(SOURCE_GLSL, STAGE_COMPUTE, CLIENT_VULKAN, target[0], TARGET_SPV, target[1], code,
                     CLIENT_SEMANTICS, PROFILE_NONE, 0, 0, MESSAGES, self.handle.resource, callbacks, None)

    def _preprocess(self, target: tuple[int, int], text: bytes, preamble: bytes, includer: Includer) -> Optional[bytes]:
        """The source with every #include and macro expanded (what glslangValidator -E prints),
        the preamble's #extension lines after its #version; None on any message."""
        lib = self.handle.lib
        request = self._request(target, text, includer)
        shader = lib.glslang_shader_create(ctypes.byref(request))
        try:
            if preamble:
                lib.glslang_shader_set_preamble(shader, preamble)
            if not lib.glslang_shader_preprocess(shader, ctypes.byref(request)) or lib.glslang_shader_get_info_log(shader):
                return None
            expanded = lib.glslang_shader_get_preprocessed_code(shader) or b""
        finally:
            lib.glslang_shader_delete(shader)
        # The preamble's #extension lines come back first, before #version: a parse wants
        # #version first, so they go right after it.
        lines = expanded.split(b"\n")
        at = next((i for i, ln in enumerate(lines) if ln.startswith(b"#version")), None)
        if at is None or any(ln and not ln.startswith(b"#extension") for ln in lines[:at]):
            return None
        return b"\n".join([lines[at], *(ln for ln in lines[:at] if ln), *lines[at + 1:]])

    def _parse_to_spirv(self, target: tuple[int, int], expanded: bytes) -> Optional[bytes]:
        """SPIR-V for the expanded source; None on any message."""
        lib, spirv = self.handle.lib, self.spirv
        request = self._request(target, expanded, None)
        shader = lib.glslang_shader_create(ctypes.byref(request))
        program = None
        try:
            # The C interface parses what its own preprocessor gave: both run.
            if not (lib.glslang_shader_preprocess(shader, ctypes.byref(request))
                    and lib.glslang_shader_parse(shader, ctypes.byref(request))):
                return None
            if lib.glslang_shader_get_info_log(shader):
                return None     # a warning: glslangValidator's text is the one shown
            program = lib.glslang_program_create()
            lib.glslang_program_add_shader(program, shader)
            if not (lib.glslang_program_link(program, MESSAGES) and lib.glslang_program_map_io(program)):
                return None
            if lib.glslang_program_get_info_log(program):
                return None
            spirv.glslang_program_SPIRV_generate_with_options(program, STAGE_COMPUTE, ctypes.byref(_SpvOptions()))
            if spirv.glslang_program_SPIRV_get_messages(program):
                return None
            words = spirv.glslang_program_SPIRV_get_size(program)
            blob = ctypes.string_at(spirv.glslang_program_SPIRV_get_ptr(program), words * 4) if words else b""
        finally:
            if program is not None:
                lib.glslang_program_delete(program)
            lib.glslang_shader_delete(shader)
        return blob or None
