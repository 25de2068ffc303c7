"""Probes: what a compiler predefines and which extensions it builds, asked of the compiler itself.

Pure functions: each makes a tiny probe shader's text or reads the answer from
a compile's diagnostics or a preprocessor's output; the caller runs them
(slang_glslang). No table of extensions lives here: candidate macro names come
from the compiler library's own bytes, and a candidate counts only when the
compiler says so (docs/COMPILERS.md, "What the compiler is asked").
"""

from __future__ import annotations

import enum
import re
from typing import Iterable, Mapping, Optional

# Client-API macros glslang defines under Vulkan rules; the -E run of the pinned
# glslang (no -V with -E) defines neither.
CLIENT_MACROS = ("VULKAN", "GL_SPIRV")
_GL_NAME = re.compile(rb"(?<![A-Za-z0-9_])GL_[A-Z0-9]+_[A-Za-z0-9_]+(?![A-Za-z0-9_])")
_VALUES = ("1", "100")      # every predefined macro glslang has is 1 (extensions) or 100 (client API)


def candidate_macros(library_bytes: bytes) -> tuple[str, ...]:
    """Names that could be predefined: every GL_<VENDOR>_<name> string in the library, and the client macros."""
    names = {m.decode("ascii") for m in _GL_NAME.findall(library_bytes)}
    return tuple(sorted(names)) + CLIENT_MACROS


def macro_probe(name: str) -> bytes:
    """A shader whose one ``#error`` says whether ``name`` is defined, and as what."""
    lines = ["#version 450", f"#if !defined({name})", "#error genspirv_undefined"]
    for value in _VALUES:
        lines += [f"#elif {name} == {value}", f"#error genspirv_value_{value}"]
    lines += ["#else", "#error genspirv_value_other", "#endif"]
    return ("\n".join(lines) + "\n").encode("ascii")


_PROBE_ANSWER = re.compile(r"genspirv_(undefined|value_(\w+))")


def macro_probe_answer(diagnostics: str) -> Optional[str]:
    """The macro's value from a ``macro_probe`` compile ('other' when neither 1 nor 100), None if undefined."""
    m = _PROBE_ANSWER.search(diagnostics)
    if m is None:
        raise ValueError(f"no probe answer in {diagnostics[:200]!r}")
    return None if m.group(1) == "undefined" else m.group(2)


def defined_marker_text(names: Iterable[str]) -> str:
    """A file the pinned glslang's -E turns into one ``genspirv_defined_NAME`` line per defined name."""
    lines = ["#version 450"]
    for name in names:
        lines += [f"#if defined({name})", f"genspirv_defined_{name}", "#endif"]
    return "\n".join(lines) + "\n"


def defined_markers(preprocessed: str) -> set[str]:
    return set(re.findall(r"\bgenspirv_defined_(\w+)", preprocessed))


def macros_to_predefine(compiler: Mapping[str, Optional[str]], preprocessor: set[str]) -> dict[str, str]:
    """What the preprocessor must be told (-D) to see the macros the compiler predefines."""
    return {name: value for name, value in sorted(compiler.items())
            if value is not None and value != "other" and name not in preprocessor}


class Support(enum.Enum):
    """Whether the compiler builds an extension at a SPIR-V version."""

    SUPPORTED = "supported"
    NEEDS_NEWER_TARGET = "needs a newer target_env"      # builds only at a higher SPIR-V version
    UNSUPPORTED = "unsupported"


def extension_probe(extension: str) -> bytes:
    """A compute shader that compiles exactly when ``extension`` is supported."""
    return (f"#version 450\n#extension {extension} : require\n"
            "layout(local_size_x = 1) in;\nvoid main() {}\n").encode("ascii")


_TARGET_TOO_OLD = re.compile(r"'(GL_\w+)' : not supported for current targeted SPIR-V version")


def extensions_needing_newer_target(messages: str) -> tuple[str, ...]:
    """Extensions the compiler said need a higher SPIR-V version than the one asked for."""
    return tuple(dict.fromkeys(_TARGET_TOO_OLD.findall(messages)))
