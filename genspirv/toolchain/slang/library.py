"""The slangpy wheel's glslang library: where it is, which version, one ctypes call.

Takes the installed ``slangpy`` distribution (its file list only: slangpy itself
is never imported, which would load its 80 MB device library for nothing);
gives ``find_library()`` -> ``Library`` (path, the library's own version from its
file name, the wheel's version) and ``compile_text(handle, ...)`` -> ``RawResult``
(exit code, SPIR-V bytes, diagnostics) through the library's C entry point
``glslang_compile_1_2``. The request structure is laid out as the Slang
repository's ``source/slang-glslang/slang-glslang.h`` declares it (docs/COMPILERS.md,
"The library"). Nothing here starts a process or keeps state; worker processes
call it.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Optional

from ...errors import ToolchainError

WHEEL = "slangpy"
PIN = "0.43.1"                  # the exact pin of the `slang-glslang` extra in pyproject.toml
INSTALL_HINT = "pip install 'genspirv[slang-glslang]'"
_FILE_NAME = re.compile(r"^libslang-glslang-(\d+\.\d+(?:\.\d+)?)\.so$")

# Values from slang.h (SlangStage, SlangOptimizationLevel, SlangDebugInfoLevel) and
# slang-glslang.h (the action enum).
STAGE_COMPUTE = 6
ACTION_COMPILE_GLSL_TO_SPIRV = 0
OPTIMIZATION_NONE = 0           # spirv-opt stays the build's own step
DEBUG_INFO_NONE = 0             # debug info would embed file names: bytes must not depend on folders


@dataclass(frozen=True)
class Library:
    path: Path
    version: str                # the library's own version, e.g. '2026.12'
    wheel_version: str          # the slangpy wheel's, e.g. '0.43.1'


def find_library() -> Library:
    """The glslang library of the installed slangpy wheel; ToolchainError naming the fix when none."""
    try:
        dist = metadata.distribution(WHEEL)
    except metadata.PackageNotFoundError:
        raise ToolchainError(f"compiler slang-glslang needs the slangpy wheel: {INSTALL_HINT}") from None
    if dist.version != PIN:
        raise ToolchainError(f"slangpy {dist.version} is installed, not the pinned {PIN} (another version is "
                             f"another compiler and other bytes): {INSTALL_HINT}")
    for f in dist.files or ():
        m = _FILE_NAME.match(f.name)
        if m and len(f.parts) == 2 and f.parts[0] == "slangpy":
            path = Path(dist.locate_file(f)).resolve()
            if path.is_file():
                return Library(path, m.group(1), dist.version)
    raise ToolchainError(f"slangpy {dist.version} holds no libslang-glslang-*.so (this is not a "
                         f"Linux wheel, or a version without it): {INSTALL_HINT}")


_OUTPUT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class _SpirvVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int)]


class _Request(ctypes.Structure):
    """glslang_CompileRequest_1_2: the 1.0 fields, then 1.1's target, then 1.2's entry point."""

    _fields_ = [("sizeInBytes", ctypes.c_size_t),
                ("sourcePath", ctypes.c_char_p),
                ("inputBegin", ctypes.c_void_p),
                ("inputEnd", ctypes.c_void_p),
                ("diagnosticFunc", _OUTPUT),
                ("diagnosticUserData", ctypes.c_void_p),
                ("outputFunc", _OUTPUT),
                ("outputUserData", ctypes.c_void_p),
                ("slangStage", ctypes.c_int),
                ("action", ctypes.c_uint),
                ("optimizationLevel", ctypes.c_uint),
                ("debugInfoType", ctypes.c_uint),
                ("spirvTargetName", ctypes.c_char_p),
                ("spirvVersion", _SpirvVersion),
                ("entryPointName", ctypes.c_char_p)]


def load(path: Path) -> ctypes.CDLL:
    """The library with its entry point typed; ToolchainError when it does not load or lacks it."""
    try:
        lib = ctypes.CDLL(str(path))
        entry = lib.glslang_compile_1_2
    except (OSError, AttributeError) as exc:
        raise ToolchainError(f"cannot load {path}: {exc}") from None
    entry.argtypes = [ctypes.POINTER(_Request)]
    entry.restype = ctypes.c_int
    return lib


@dataclass(frozen=True)
class RawResult:
    code: int                   # 0: compiled
    spirv: bytes
    diagnostics: str


def compile_text(lib: ctypes.CDLL, text: bytes, source_name: str, spirv_version: tuple[int, int],
                 entry_point: Optional[str] = None) -> RawResult:
    """Compile preprocessed GLSL ``text`` (a compute shader) to SPIR-V ``spirv_version``.

    ``source_name`` names the text in diagnostics until a ``#line`` directive names
    another file. No optimisation and no debug info (see DEBUG_INFO_NONE).
    """
    chunks: list[bytes] = []
    diagnostics: list[bytes] = []

    @_OUTPUT
    def on_output(data, size, _user):
        chunks.append(ctypes.string_at(data, size))

    @_OUTPUT
    def on_diagnostic(data, size, _user):
        diagnostics.append(ctypes.string_at(data, size))

    buffer = ctypes.create_string_buffer(text, len(text))
    begin = ctypes.addressof(buffer)
    request = _Request(ctypes.sizeof(_Request), source_name.encode("utf-8"), begin, begin + len(text),
                       on_diagnostic, None, on_output, None, STAGE_COMPUTE, ACTION_COMPILE_GLSL_TO_SPIRV,
                       OPTIMIZATION_NONE, DEBUG_INFO_NONE, None, _SpirvVersion(*spirv_version, 0),
                       (entry_point or "main").encode("utf-8"))
    code = lib.glslang_compile_1_2(ctypes.byref(request))
    return RawResult(code, b"".join(chunks), b"".join(diagnostics).decode("utf-8", "replace"))
