"""The include graph of a GLSL source, read textually: include cycles and include guards.

Takes a source path and the include folders; gives the files that include
each other in a loop (``find_include_cycle``) and whether such a loop can
end (``unguarded_include_cycle``: glslang 13 ignores ``#pragma once`` and
recurses without end on a cycle none of whose files has an ``#ifndef``/
``#define`` guard). Used by the toolchain to name a cycle in milliseconds
instead of waiting for glslang to hit a limit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Sequence


_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^">\n]+)[">]', re.MULTILINE)


def find_include_cycle(source: Path, include_dirs: Sequence[Path],
                       preamble: Optional[Path] = None) -> Optional[list[Path]]:
    """Files that include each other in a loop, starting from ``source`` (None if none); with
    a ``preamble``, from the preamble's includes first, resolved from the source's folder as
    the composed text's are (docs/RULES.md, "Preambles").

    Textual: it ignores conditionals, so a loop broken by include guards shows
    too. Used only to explain a compile that never finished.
    """
    def resolve(name: str, folder: Path) -> Optional[Path]:
        for candidate_folder in (folder, *include_dirs):
            candidate = candidate_folder / name
            if candidate.is_file():
                return candidate.resolve()
        return None

    stack: list[Path] = []
    done: set[Path] = set()

    def visit(path: Path, folder: Path) -> Optional[list[Path]]:
        stack.append(path)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        for name in _INCLUDE_RE.findall(text):
            child = resolve(name, folder)
            if child is None or child in done:
                continue
            if child in stack:
                return stack[stack.index(child):] + [child]
            found = visit(child, child.parent)
            if found:
                return found
        stack.pop()
        done.add(path)
        return None

    source = source.resolve()
    if preamble is not None:
        found = visit(preamble.resolve(), source.parent)
        if found:
            return found
        stack.clear()
    return visit(source, source.parent)


_GUARD = re.compile(r"\A(?:\s|//[^\n]*\n|/\*.*?\*/)*#[ \t]*ifndef[ \t]+(\w+)\s*\n[ \t]*#[ \t]*define[ \t]+(\w+)",
                    re.DOTALL)


def has_include_guard(path: Path) -> bool:
    """Does the file open with ``#ifndef X`` / ``#define X``? (glslang ignores #pragma once.)"""
    try:
        m = _GUARD.match(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False
    return m is not None and m.group(1) == m.group(2)


def unguarded_include_cycle(source: Path, include_dirs: Sequence[Path],
                            preamble: Optional[Path] = None) -> Optional[list[Path]]:
    """An include cycle no file of which has a guard: glslang 13 would recurse without end on it."""
    return unguarded(find_include_cycle(source, include_dirs, preamble))


def unguarded(cycle: Optional[list[Path]]) -> Optional[list[Path]]:
    """``cycle`` (``find_include_cycle``'s) when no file of it has a guard, else None."""
    if cycle is None or any(has_include_guard(p) for p in cycle):
        return None
    return cycle


def reached_from(cycle: Sequence[Path], source: Path, include_dirs: Sequence[Path],
                 preamble: Optional[Path], shown: str) -> str:
    """`` (reached from the preamble X)`` when only the preamble's includes lead to ``cycle``."""
    if preamble is None or find_include_cycle(source, include_dirs) is not None:
        return ""
    return f" (reached from the preamble {shown})"


def cycle_text(cycle: Sequence[Path], cwd: Path) -> str:
    """'a.glsl -> b.glsl -> a.glsl', each relative to ``cwd``."""
    return " -> ".join(os.path.relpath(p, cwd) for p in cycle)
