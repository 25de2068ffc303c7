"""spirv-val without its process: the pinned SPIRV-Tools validator called in its shared library.

Takes the ``spirv-val`` ``Tool`` (``genspirv.toolchain.tools.find_tool``); gives
``for_tool(tool)`` -> ``ValidatorLibrary`` or None, and ``ValidatorLibrary.check(blob,
target_env)`` -> ``(valid, text)``, the text as spirv-val prints it (``error: line N:
message``; '' when valid). The library is the one the SPIRV-Tools wheel ships beside its
``spirv-val`` (``lib/libSPIRV-Tools-shared.so``): the same sources, built in the same build,
so its verdict is spirv-val's; a tool found anywhere else (PATH, GENSPIRV_SPIRV_VAL) keeps
its process. The C API used (``spvContextCreate``, ``spvValidateWithOptions``, ``spv_diagnostic``)
is ``include/spirv-tools/libspirv.h`` of SPIRV-Tools.

Why: a spirv-val process costs ~2.6 ms of CPU to start for ~0.7 ms of validation; once a
variant, at 2,000 variants on 16 busy cores that is ~2 % of a cold build's wall time.

Only a process that may die for its job uses it (``allow()``: a compile worker,
``genspirv.buildsys.compile_workers``): a crash inside the library takes its process down,
which the build reports as that one variant's loss; the build's own process runs the
spirv-val process, as before.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path
from typing import Optional

from .tools import Tool

SPV_SUCCESS = 0
_LIBRARY_FILE = {"linux": "libSPIRV-Tools-shared.so", "darwin": "libSPIRV-Tools-shared.dylib"}
_allowed = False


class _Binary(ctypes.Structure):           # spv_const_binary_t
    _fields_ = [("code", ctypes.POINTER(ctypes.c_uint32)), ("wordCount", ctypes.c_size_t)]


class _Position(ctypes.Structure):         # spv_position_t
    _fields_ = [("line", ctypes.c_size_t), ("column", ctypes.c_size_t), ("index", ctypes.c_size_t)]


class _Diagnostic(ctypes.Structure):       # spv_diagnostic_t
    _fields_ = [("position", _Position), ("error", ctypes.c_char_p), ("isTextSource", ctypes.c_bool)]


def allow() -> None:
    """Let this process validate in the library (a worker's, whose crash costs one variant)."""
    global _allowed
    _allowed = True


def for_tool(tool: Tool) -> Optional["ValidatorLibrary"]:
    """The library built with ``tool``, when this process may use it and the wheel ships it."""
    if not _allowed or tool.lib_dir is None or not tool.origin.startswith("wheel"):
        return None
    name = _LIBRARY_FILE.get(sys.platform)
    return _load(tool.lib_dir / name) if name else None


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> Optional["ValidatorLibrary"]:
    try:
        return ValidatorLibrary(ctypes.CDLL(str(path)))
    except (OSError, AttributeError):
        return None         # not there, or not the API this reads: the spirv-val process answers


class ValidatorLibrary:
    """One loaded SPIRV-Tools library: a context per target environment, default options (spirv-val's)."""

    def __init__(self, lib: ctypes.CDLL):
        lib.spvParseTargetEnv.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.spvParseTargetEnv.restype = ctypes.c_bool
        lib.spvContextCreate.argtypes = [ctypes.c_int]
        lib.spvContextCreate.restype = ctypes.c_void_p
        lib.spvValidatorOptionsCreate.argtypes = []
        lib.spvValidatorOptionsCreate.restype = ctypes.c_void_p
        lib.spvValidateWithOptions.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Binary),
                                               ctypes.POINTER(ctypes.POINTER(_Diagnostic))]
        lib.spvValidateWithOptions.restype = ctypes.c_int
        lib.spvDiagnosticDestroy.argtypes = [ctypes.POINTER(_Diagnostic)]
        lib.spvDiagnosticDestroy.restype = None
        self._lib = lib
        self._options = lib.spvValidatorOptionsCreate()
        self._contexts: dict[str, Optional[int]] = {}

    def _context(self, target_env: str) -> Optional[int]:
        if target_env not in self._contexts:
            env = ctypes.c_int()
            parsed = self._lib.spvParseTargetEnv(target_env.encode(), ctypes.byref(env))
            self._contexts[target_env] = self._lib.spvContextCreate(env.value) if parsed else None
        return self._contexts[target_env]

    def check(self, blob: bytes, target_env: str) -> Optional[tuple[bool, str]]:
        """spirv-val's verdict on ``blob`` and its text (``error: line N: ...``, as its CLI prints
        it; '' when valid); None for a target environment this library does not name or a blob
        that is no whole number of words (the process then answers, and says so as spirv-val does)."""
        context = self._context(target_env)
        if context is None or not blob or len(blob) % 4:
            return None     # spirv-val's process reads no such file either, and says why
        words = (ctypes.c_uint32 * (len(blob) // 4)).from_buffer_copy(blob, 0)
        binary = _Binary(words, len(words))
        diagnostic = ctypes.POINTER(_Diagnostic)()
        result = self._lib.spvValidateWithOptions(context, self._options, ctypes.byref(binary),
                                                  ctypes.byref(diagnostic))
        try:
            if result == SPV_SUCCESS:
                return True, ""
            if not diagnostic:
                return False, f"error: SPIRV-Tools result {result}, no message"
            d = diagnostic.contents
            message = (d.error or b"").decode("utf-8", "replace")
            return False, f"error: line {d.position.index}: {message}"
        finally:
            if diagnostic:
                self._lib.spvDiagnosticDestroy(diagnostic)
