"""Preprocessing a variant with the pinned glslang, for a compiler that takes text only.

Takes the pinned glslangValidator (a ``toolchain.Tool``), a source path relative
to the project root, defines, include folders and the macros the target compiler
predefines; gives ``Preprocessed``: the text (``glslangValidator -E``, the same
preprocessor and include rules as the default compiler), the files it included
(its ``depends``) and the warnings worth keeping. ``clean_messages`` turns
glslang's ``ERROR: file:line: ...`` lines into ``file:line: error: ...``.

Line numbers stay the source's own: glslang marks every include with
``#line N "file"`` and the rest of its output keeps the source's line breaks;
the one thing that moves lines, the echo of the preamble (defines and the
``#include`` extension), is cut (docs/COMPILERS.md, "Preprocessing").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import CompileError, ToolchainError
from ..toolchain import INCLUDE_PREAMBLE, Tool, unguarded_include_cycle

# What -E writes for the preamble (the -D lines, then the #include extension): one line
# break per preamble line but the last, the extension on that last line, a line break;
# then the source from its first line on.
_PREAMBLE_ECHO = re.compile(r"\n*" + re.escape(INCLUDE_PREAMBLE) + r"\n")
_LINE_DIRECTIVE = re.compile(r'^#line \d+ "([^"\n]+)"$', re.MULTILINE)
_MESSAGE = re.compile(r"^(ERROR|WARNING): (.+?:-?\d+): (.*)$")
_TRAILER = re.compile(r"^(ERROR: \d+ compilation errors?\.|SPIR-V is not generated|.*No code generated\.?$"
                      r"|.*'' : compilation terminated)")
# The pinned preprocessor's view of extensions does not matter: the compiler after it decides.
_PREPROCESSOR_ONLY = re.compile(r"extension not supported: \w+|extension .* is being used")


def clean_messages(text: str, source: str = "") -> str:
    """glslang's messages as ``file:line: error: message`` lines, without its summary trailers."""
    lines = []
    for ln in text.splitlines():
        if not ln.strip() or ln.strip() == source or _TRAILER.match(ln.strip()):
            continue
        m = _MESSAGE.match(ln.strip())
        lines.append(f"{m.group(2)}: {m.group(1).lower()}: {m.group(3).rstrip()}" if m else ln.rstrip())
    return "\n".join(lines)


@dataclass(frozen=True)
class Preprocessed:
    text: bytes
    depends: tuple[str, ...]        # files included (not the source), posix, relative to the root where inside
    warnings: str


def preprocess_args(*, source: str, defines: Mapping[str, str], include_dirs: Sequence[str],
                    include_preamble: bool, predefined: Mapping[str, str], flags: Sequence[str] = ()) -> list[str]:
    """glslangValidator's arguments: the compiler's own macros first, the variant's defines after."""
    args = ["-E"]
    if include_preamble:
        args.append("-P" + INCLUDE_PREAMBLE)
    args += [f"-I{d}" for d in include_dirs]
    args += [f"-D{k}={v}" for k, v in sorted(predefined.items())]
    args += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    args += list(flags)
    args.append(source)
    return args


def included_files(text: str, source: str, root: Path) -> tuple[str, ...]:
    """The files named by the ``#line N "file"`` lines -E writes at each include, once each, in order."""
    found = []
    for name in _LINE_DIRECTIVE.findall(text):
        path = Path(os.path.normpath(root / name))
        if name == source or not path.is_file():
            continue        # back in the source, or a #line the source wrote itself
        try:
            found.append(path.relative_to(root).as_posix())
        except ValueError:
            found.append(path.as_posix())
    return tuple(dict.fromkeys(found))


def strip_preamble_echo(text: str, what: str) -> str:
    m = _PREAMBLE_ECHO.match(text)
    if m is None:
        raise ToolchainError(f"{what}: glslangValidator -E did not start its output with the #include "
                             f"preamble as expected ({text[:60]!r}); line numbers would be wrong")
    return text[m.end():]


def preprocess(tool: Tool, *, source: str, root: Path, defines: Mapping[str, str],
               include_dirs: Sequence[str], include_preamble: bool, predefined: Mapping[str, str],
               flags: Sequence[str] = (), what: str = "") -> Preprocessed:
    """``glslangValidator -E`` of ``source`` (relative to ``root``, where it runs)."""
    what = what or source
    cycle = unguarded_include_cycle(root / source, [root / d for d in include_dirs])
    if cycle is not None:
        chain = " -> ".join(os.path.relpath(p, root) for p in cycle)
        text = (f"{os.path.relpath(cycle[-2], root)}: error: include cycle {chain}: no file in it has an "
                "include guard (#ifndef X / #define X; glslang ignores #pragma once)")
        raise CompileError(f"{what}: {source} does not compile:\n{text}", messages=text, source=source)
    args = preprocess_args(source=source, defines=defines, include_dirs=include_dirs,
                           include_preamble=include_preamble, predefined=predefined, flags=flags)
    proc = tool.run(args, what=f"{what}: glslangValidator -E", cwd=root)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        raise ToolchainError(f"{what}: glslangValidator -E crashed (signal {-proc.returncode}) on {source}")
    if proc.returncode != 0:
        messages = clean_messages(err + "\n" + out, source)
        raise CompileError(f"{what}: {source} does not preprocess:\n{messages}", messages=messages, source=source)
    if include_preamble:
        out = strip_preamble_echo(out, what)
    warnings = "\n".join(ln for ln in clean_messages(err, source).splitlines() if not _PREPROCESSOR_ONLY.search(ln))
    return Preprocessed(out.encode("utf-8"), included_files(out, source, root), warnings)
