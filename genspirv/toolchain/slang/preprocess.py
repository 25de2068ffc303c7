"""What the preprocessing step is told, and what is kept of its output: pure functions.

Takes a variant's defines, flags and the macros the target compiler predefines;
gives the preamble glslangValidator would build from ``-D``/``-U`` (``preamble``),
the ``-I`` folders (``include_folders``), the preprocessed text with the
preamble's echo cut (``strip_preamble_echo``), ``depends`` in the manifest's
form (``dependency_paths``) and glslang's messages as ``file:line: error: ...``
(``clean_messages``). The preprocessing itself is the pinned glslang's
(``pinned_glslang``), run in a worker.

Line numbers stay the source's own: glslang marks every include with
``#line N "file"`` and keeps the source's line breaks; the one thing that moves
lines, the echo of the preamble, is cut (docs/COMPILERS.md, "Preprocessing").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ...errors import ConfigError, ToolchainError
from ..tools import INCLUDE_PREAMBLE

# Flags with a meaning for the preprocessing step; the compiler library itself takes none.
PREPROCESSOR_FLAGS = ("-D", "-U", "-I")
# What -E writes for the preamble: one line break per preamble line but the last, the
# #include extension on that last line, a line break; then the source from its first line on.
_PREAMBLE_ECHO = re.compile(r"\n*" + re.escape(INCLUDE_PREAMBLE) + r"\n")
_MESSAGE = re.compile(r"^(ERROR|WARNING): (.+?:-?\d+): (.*)$")
_TRAILER = re.compile(r"^(ERROR: \d+ compilation errors?\.|SPIR-V is not generated|.*No code generated\.?$"
                      r"|.*'' : compilation terminated)")


def check_flags(flags: Sequence[str], what: str, compiler: str) -> None:
    for flag in flags:
        if not flag.startswith(PREPROCESSOR_FLAGS) or len(flag) < 3:
            raise ConfigError(f"{what}: flag {flag!r} has no meaning for compiler {compiler} (it takes "
                              f"{', '.join(p + '…' for p in PREPROCESSOR_FLAGS)}); drop it for this variant")


def _define_line(definition: str) -> str:
    # glslangValidator's -DNAME=VALUE: the first '=' becomes a space.
    return "#define " + definition.replace("=", " ", 1) + "\n"


def preamble(*, predefined: Mapping[str, str], defines: Mapping[str, str], flags: Sequence[str],
             include_preamble: bool) -> str:
    """The compiler's own macros, then the variant's defines and flags, then the #include extension."""
    text = "".join(_define_line(f"{k}={v}") for k, v in sorted(predefined.items()))
    text += "".join(_define_line(f"{k}={v}") for k, v in sorted(defines.items()))
    for flag in flags:
        if flag.startswith("-D"):
            text += _define_line(flag[2:])
        elif flag.startswith("-U"):
            text += f"#undef {flag[2:]}\n"
    if include_preamble:
        text += INCLUDE_PREAMBLE + "\n"
    return text


def include_folders(include_dirs: Sequence[str], flags: Sequence[str]) -> tuple[str, ...]:
    return tuple(include_dirs) + tuple(f[2:] for f in flags if f.startswith("-I"))


def strip_preamble_echo(text: str, what: str) -> str:
    m = _PREAMBLE_ECHO.match(text)
    if m is None:
        raise ToolchainError(f"{what}: the pinned glslang's preprocessor did not start its output with the "
                             f"#include preamble as expected ({text[:60]!r}); line numbers would be wrong")
    return text[m.end():]


def dependency_paths(root: Path, names: Iterable[str]) -> tuple[str, ...]:
    """Included files as posix paths relative to ``root`` where inside it, once each, in order."""
    found = []
    for name in names:
        path = Path(os.path.normpath(root / name))
        try:
            found.append(path.relative_to(root).as_posix())
        except ValueError:
            found.append(path.as_posix())
    return tuple(dict.fromkeys(found))


def clean_messages(text: str, source: str = "") -> str:
    """glslang's messages as ``file:line: error: message`` lines, without its summary trailers."""
    lines = []
    for ln in text.splitlines():
        if not ln.strip() or ln.strip() == source or _TRAILER.match(ln.strip()):
            continue
        m = _MESSAGE.match(ln.strip())
        lines.append(f"{m.group(2)}: {m.group(1).lower()}: {m.group(3).rstrip()}" if m else ln.rstrip())
    return "\n".join(lines)
